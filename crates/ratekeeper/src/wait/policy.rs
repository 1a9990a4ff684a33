//! [`WaitPolicy`]: how a blocking wait turns a ready time into sleeps.

use std::time::Duration;

use super::saturating_nanos;
use crate::clock::Clock;

/// How a blocking acquire waits for its ready time.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{ManualClock, MonotonicClock, WaitPolicy};
///
/// let default = WaitPolicy::default(); // early bound, grouping delay
/// let exact = WaitPolicy::coalesce(Duration::ZERO); // sleep every wait
/// let precise = WaitPolicy::precise(Duration::from_micros(200)); // spin the last 200 µs
/// assert_ne!(default, precise);
/// assert_eq!(exact, WaitPolicy::coalesce(Duration::from_nanos(0)));
///
/// // A limiter sizes the default for its slot: 1 µs at 1 M ops/s.
/// let at_1m = WaitPolicy::default().for_slot(1_000);
/// assert_eq!(at_1m.window_nanos(&ManualClock::new(0)), 0, "exact sleeps: nothing early");
/// let real = MonotonicClock::new();
/// assert!(at_1m.window_nanos(&real) <= at_1m.group_delay_nanos(&real));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitPolicy {
    pub(super) kind: Kind,
    /// The limiter's nanoseconds per permit, 0 if it did not say.
    pub(super) slot: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Kind {
    /// The [module docs](super)' early bound and grouping delay.
    #[default]
    ClockDefault,
    /// Coalesce waits within this many nanoseconds.
    Coalesce(u64),
    /// Sleep until `spin` before ready, then spin.
    Precise(u64),
}

/// Ops the default policy aims to release per sleep at high rates, so a
/// sleep's CPU cost is small per op; the price is lateness of up to that
/// many slots, which the wait reports.
pub const GROUP_OPS: u64 = 768;

/// The longest grouping delay, in sleep resolutions (`8 × (ρ − 2 × slot)`).
pub(super) const MAX_DELAY_RESOLUTIONS: u64 = 8;

impl WaitPolicy {
    /// Sleep, releasing ops whose wait is at most `window` at once (up to
    /// `window` early), no grouping delay. `Duration::ZERO`: sleep every wait.
    pub fn coalesce(window: Duration) -> WaitPolicy {
        WaitPolicy {
            kind: Kind::Coalesce(saturating_nanos(window)),
            slot: 0,
        }
    }

    /// Sleep until `spin` before the ready time, then busy-wait: nothing goes
    /// early, at the price of a core while spinning. On a clock whose sleeps
    /// are exact ([`Clock::sleep_overshoot_nanos`] is 0) it never spins.
    pub fn precise(spin: Duration) -> WaitPolicy {
        WaitPolicy {
            kind: Kind::Precise(saturating_nanos(spin)),
            slot: 0,
        }
    }

    /// This policy for a limiter whose permit takes `slot_nanos` of its
    /// schedule: the default's early bound and grouping delay follow it;
    /// other policies ignore it.
    pub fn for_slot(self, slot_nanos: u64) -> WaitPolicy {
        WaitPolicy {
            slot: slot_nanos,
            ..self
        }
    }

    /// Whether this is the default policy (for any slot).
    pub fn is_default(&self) -> bool {
        self.kind == Kind::ClockDefault
    }

    /// The spin of a [`precise`](Self::precise) policy; `None` for the others.
    pub fn precise_spin(&self) -> Option<Duration> {
        match self.kind {
            Kind::Precise(spin) => Some(Duration::from_nanos(spin)),
            _ => None,
        }
    }

    /// The window of a [`coalesce`](Self::coalesce) policy; `None` for the others.
    pub fn coalesce_window(&self) -> Option<Duration> {
        match self.kind {
            Kind::Coalesce(window) => Some(Duration::from_nanos(window)),
            _ => None,
        }
    }

    /// How early this policy lets an op go on `clock`: the default's early
    /// bound `E`, a coalescing window, or zero for a precise policy.
    pub fn window_nanos(&self, clock: &dyn Clock) -> u64 {
        match self.kind {
            Kind::ClockDefault => early_bound(clock.sleep_overshoot_nanos(), self.slot),
            Kind::Coalesce(w) => w,
            Kind::Precise(_) => 0,
        }
    }

    /// The early bound of this policy's slot with a sleep resolution of
    /// `resolution` ns (an async timer's tick).
    #[cfg(feature = "tokio")]
    pub(crate) fn early_nanos_at(&self, resolution: u64) -> u64 {
        early_bound(resolution, self.slot)
    }

    /// The default policy's grouping delay `D` on `clock` (how late an op
    /// goes on purpose so one sleep releases a group); zero for the others.
    pub fn group_delay_nanos(&self, clock: &dyn Clock) -> u64 {
        match self.kind {
            Kind::ClockDefault => group_delay(clock.sleep_overshoot_nanos(), self.slot),
            Kind::Coalesce(_) | Kind::Precise(_) => 0,
        }
    }

    /// The least time a [`TokenPool`](crate::TokenPool) fill covers while
    /// callers wait: a granule on a late-sleeping clock, else 0 or the window.
    pub(crate) fn fill_granule_nanos(&self, clock: &dyn Clock) -> u64 {
        match self.kind {
            Kind::ClockDefault if clock.sleep_overshoot_nanos() == 0 => 0,
            Kind::ClockDefault => POOL_FILL_GRANULE_NANOS,
            Kind::Coalesce(w) => w,
            Kind::Precise(_) => 0,
        }
    }
}

/// The pool fill granule under the default policy on a real clock.
pub(super) const POOL_FILL_GRANULE_NANOS: u64 = 500_000;

/// The default early bound `E = clamp(slot / 2, ρ / 2, ρ)`; `ρ / 2` when
/// the slot is unknown, 0 on a clock whose sleeps are exact.
pub(super) fn early_bound(resolution: u64, slot: u64) -> u64 {
    if slot == 0 {
        return resolution / 2;
    }
    (slot / 2).clamp(resolution / 2, resolution)
}

/// The default grouping delay `D = min(768 × slot, 8 × (ρ − 2 × slot))`,
/// 0 when the slot is unknown or at least half of ρ.
pub(super) fn group_delay(resolution: u64, slot: u64) -> u64 {
    let twice = slot.saturating_mul(2);
    if slot == 0 || twice >= resolution {
        return 0;
    }
    GROUP_OPS
        .saturating_mul(slot)
        .min(MAX_DELAY_RESOLUTIONS.saturating_mul(resolution - twice))
}
