//! Turning a reservation into a wait, written once for every limiter.
//!
//! Blocking waits sleep; they never spin unless asked to. Two facts about
//! sleeping shape the default (the `sleep_overshoot` measurement program
//! of `ratekeeper-bench` shows them on a given machine):
//!
//! * **A sleep ends late**, by the clock's *sleep resolution* ρ (tens to
//!   hundreds of microseconds, even for a 1 µs sleep). Waits sleep
//!   `ρ` less than they need, so that they wake about on time, and the
//!   estimate of ρ follows the sleeps the process actually makes (see
//!   [`sleep_resolution_nanos`]).
//! * **A sleep costs CPU**: a sleep and its wake take tens of microseconds
//!   of the thread's CPU time, whatever its length. At high rates a sleep
//!   per op would cost far more than the op.
//!
//! # The default policy
//!
//! An op whose ready time is `left` ns away when its caller asks:
//!
//! * **goes at once, early, only when sleeping to it is impossible**: when
//!   `left` is at most the *early bound* `E = clamp(slot / 2, ρ / 2, ρ)`,
//!   `slot` being the limiter's nanoseconds per permit. A sleep that short
//!   would overshoot the op by more than it goes early. Where a slot is
//!   longer than ρ (rates below `1e9 / ρ` per second), `E` is at
//!   most half a slot; the op goes at most `E` early, so a strict pacer's
//!   consecutive ops start at least `slot − E` apart.
//! * **otherwise sleeps**: where there is no grouping delay (below), aiming
//!   at the middle of the early bound (`E / 2` before the ready time), so
//!   that a sleep a little longer or shorter than usual still lets the op
//!   go at most `E` early and rarely late; and at high rates **later than
//!   its ready time by
//!   a grouping delay** `D = min(768 × slot, 8 × (ρ − 2 × slot))` (0 where
//!   the slot is at least half of ρ), so that one sleep releases a group of
//!   about 800 ops, all due, instead of waking for each: at 1 M ops/s (`ρ`
//!   = 100 µs) `D` is 768 µs and a sleep costs under 50 ns per op. The ops
//!   of a group go late, never early, and each reports its lateness in its
//!   wait time (`started − scheduled`): nothing is hidden. `D` falls to 0
//!   as the slot grows to half of ρ; from there ops are slept to one by
//!   one.
//!
//! | rate (ρ = 100 µs) | slot | early bound `E` | grouping delay `D` |
//! |---:|---:|---:|---:|
//! | 10 M/s | 100 ns | 50 µs | 76.8 µs |
//! | 1 M/s | 1 µs | 50 µs | 768 µs |
//! | 100 k/s | 10 µs | 50 µs | 640 µs |
//! | 20 k/s | 50 µs | 50 µs | 0 |
//! | 10 k/s | 100 µs | 50 µs | 0 |
//! | 1 k/s | 1 ms | 100 µs | 0 |
//!
//! The schedule itself is absolute (every grant's ready time was fixed when
//! it was reserved), so neither the early bound nor the grouping delay adds
//! up: the long-run rate is the schedule's.
//!
//! ```text
//! schedule  |--x--x--x--x--x--x--x--x--x--x--x--x--|    (x = ready times)
//! sleeps         [----- D -----]     [----- D -----]
//! released  |-------------xxxxxx----------------xxxxxx   (groups: late by <= D,
//!                                                          early by <= E)
//! ```
//!
//! A clock whose sleeps are exact ([`ManualClock`](crate::ManualClock):
//! `ρ = 0`) gets neither: every op goes exactly at its ready time.
//!
//! Other policies: [`WaitPolicy::coalesce`] lets ops due within a fixed
//! window go at once (up to that window early, no grouping delay; zero
//! sleeps for every wait), and [`WaitPolicy::precise`] sleeps until shortly
//! before the ready time and spins the rest, so no op goes early or late by
//! more than a clock read; it costs a core while spinning.

use std::time::Duration;

use crate::clock::Clock;
#[cfg(test)]
use crate::clock::DEFAULT_SLEEP_OVERSHOOT_NANOS;
use crate::grant::Grant;

mod blocking;
pub(crate) mod room;
pub use blocking::{block_on, stop_nap_nanos, Stop, STOP_TAIL};
pub use room::PARK_LIMIT;

/// How a blocking acquire waits for its ready time.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{ManualClock, MonotonicClock, WaitPolicy};
///
/// let default = WaitPolicy::default();          // early bound and grouping delay from the clock
/// let exact = WaitPolicy::coalesce(Duration::ZERO); // sleep for every wait, however short
/// let precise = WaitPolicy::precise(Duration::from_micros(200)); // sleep, then spin the last 200 µs
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
    kind: Kind,
    /// The limiter's nanoseconds per permit, 0 if it did not say.
    slot: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    /// The early bound and grouping delay of the [module docs](self), from
    /// the clock's sleep resolution and the slot.
    #[default]
    ClockDefault,
    /// Coalesce waits within this many nanoseconds.
    Coalesce(u64),
    /// Sleep until `spin` before ready, then spin.
    Precise(u64),
}

/// How many ops the default policy aims to release per sleep at high rates
/// (the `768` of the grouping delay; see the [module docs](self)). A sleep
/// costs tens of microseconds of CPU, so several hundred ops per sleep
/// spend well under 100 ns of an op's CPU on it. Fewer ops per sleep cost
/// more CPU; more make ops later. The price is lateness: at 1 M ops/s an op
/// goes up to `768` slots (0.8 ms) late, and its wait says so.
pub const GROUP_OPS: u64 = 768;

/// The longest grouping delay, in sleep resolutions (`8 × (ρ − 2 × slot)`).
const MAX_DELAY_RESOLUTIONS: u64 = 8;

impl WaitPolicy {
    /// Sleep, releasing operations whose wait is at most `window` at once
    /// (up to `window` early), with no grouping delay. `Duration::ZERO`
    /// sleeps for every wait.
    pub fn coalesce(window: Duration) -> WaitPolicy {
        WaitPolicy {
            kind: Kind::Coalesce(saturating_nanos(window)),
            slot: 0,
        }
    }

    /// Sleep until `spin` before the ready time, then busy-wait until it: no
    /// operation goes early, at the price of a core while spinning. A `spin`
    /// of at least the clock's sleep resolution keeps
    /// operations from going late because of sleep lateness. On a clock
    /// whose sleeps are exact ([`Clock::sleep_overshoot_nanos`] is 0, as on
    /// a [`ManualClock`](crate::ManualClock)) it never spins: it sleeps to
    /// the ready time.
    pub fn precise(spin: Duration) -> WaitPolicy {
        WaitPolicy {
            kind: Kind::Precise(saturating_nanos(spin)),
            slot: 0,
        }
    }

    /// This policy for a limiter that gives each permit `slot_nanos` of its
    /// schedule: the default policy's early bound and grouping delay follow
    /// the slot (see the [module docs](self)). Limiters call it in their
    /// [`wait_policy`](crate::RateLimiter::wait_policy); the other policies
    /// ignore the slot.
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

    /// The spin of a [`precise`](Self::precise) policy; `None` for the
    /// others.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::WaitPolicy;
    ///
    /// let spin = Duration::from_micros(150);
    /// assert_eq!(WaitPolicy::precise(spin).precise_spin(), Some(spin));
    /// assert_eq!(WaitPolicy::default().precise_spin(), None);
    /// ```
    pub fn precise_spin(&self) -> Option<Duration> {
        match self.kind {
            Kind::Precise(spin) => Some(Duration::from_nanos(spin)),
            _ => None,
        }
    }

    /// The window of a [`coalesce`](Self::coalesce) policy; `None` for the
    /// others.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::WaitPolicy;
    ///
    /// let window = Duration::from_millis(1);
    /// assert_eq!(WaitPolicy::coalesce(window).coalesce_window(), Some(window));
    /// assert_eq!(WaitPolicy::default().coalesce_window(), None);
    /// ```
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

    /// How late the default policy lets a waiting op go on purpose, so that
    /// one sleep releases a group (the grouping delay `D`); zero for the
    /// other policies.
    pub fn group_delay_nanos(&self, clock: &dyn Clock) -> u64 {
        match self.kind {
            Kind::ClockDefault => group_delay(clock.sleep_overshoot_nanos(), self.slot),
            Kind::Coalesce(_) | Kind::Precise(_) => 0,
        }
    }

    /// The least time a fill of a [`TokenPool`](crate::TokenPool) covers
    /// while callers wait: 500 µs on a clock whose sleeps end late, zero on
    /// an exact one, or the window of a coalescing policy.
    pub(crate) fn fill_granule_nanos(&self, clock: &dyn Clock) -> u64 {
        match self.kind {
            Kind::ClockDefault if clock.sleep_overshoot_nanos() == 0 => 0,
            Kind::ClockDefault => POOL_FILL_GRANULE_NANOS,
            Kind::Coalesce(w) => w,
            Kind::Precise(_) => 0,
        }
    }
}

/// The least time a token pool's fill covers while callers wait under the
/// default policy on a real clock (see `TokenPool`'s waiting).
const POOL_FILL_GRANULE_NANOS: u64 = 500_000;

/// The default early bound `E = clamp(slot / 2, ρ / 2, ρ)`; `ρ / 2` when
/// the slot is unknown, 0 on a clock whose sleeps are exact.
fn early_bound(resolution: u64, slot: u64) -> u64 {
    if slot == 0 {
        return resolution / 2;
    }
    (slot / 2).clamp(resolution / 2, resolution)
}

/// The default grouping delay `D = min(768 × slot, 8 × (ρ − 2 × slot))`,
/// 0 when the slot is unknown or at least half of ρ.
fn group_delay(resolution: u64, slot: u64) -> u64 {
    let twice = slot.saturating_mul(2);
    if slot == 0 || twice >= resolution {
        return 0;
    }
    GROUP_OPS
        .saturating_mul(slot)
        .min(MAX_DELAY_RESOLUTIONS.saturating_mul(resolution - twice))
}

/// A duration in whole nanoseconds, `u64::MAX` if longer (584 years).
pub(crate) fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

pub use crate::clock::sleep_resolution_nanos;
use crate::clock::RESOLUTION;

const MIN_RESOLUTION: u64 = 1_000;
const MAX_RESOLUTION: u64 = 10_000_000;

/// Moves the estimate towards one sleep's overshoot.
fn observe_overshoot(overshoot: u64) {
    use core::sync::atomic::Ordering;
    // Ordering: Relaxed for both: a statistic; a racing update is lost,
    // which only slows the estimate down.
    let est = RESOLUTION.load(Ordering::Relaxed);
    RESOLUTION.store(next_estimate(est, overshoot), Ordering::Relaxed);
}

/// One step of the streaming median estimate: 1/32 of itself towards the
/// observation, within [`MIN_RESOLUTION`] and [`MAX_RESOLUTION`].
fn next_estimate(est: u64, overshoot: u64) -> u64 {
    let step = (est / 32).max(1);
    let next = if overshoot > est {
        est.saturating_add(step)
    } else {
        est.saturating_sub(step)
    };
    next.clamp(MIN_RESOLUTION, MAX_RESOLUTION)
}

/// Blocks the thread until `grant` is ready on `clock` (per `policy`) and
/// returns it with its start time filled in: the clock reading when the
/// caller was let go. A grant that was ready when decided returns at once,
/// without reading the clock again.
///
/// This is the wait every blocking `acquire*` uses; call it (or
/// [`RateLimiter::wait_for`](crate::RateLimiter::wait_for)) to decide first
/// with [`reserve`](crate::RateLimiter::reserve) and wait later.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Clock, ManualClock, Pacer, Rate, RateLimiter, WaitPolicy, wait};
///
/// let clock = ManualClock::new(0);
/// let pacer = Pacer::builder(Rate::new(100.0)?).build_with_clock(clock.clone())?;
/// let first = pacer.reserve(1, None)?;
/// let second = pacer.reserve(1, None)?;
/// assert_eq!(second.delay_nanos(), 10_000_000); // due in 10 ms
/// let second = wait::block_until(&clock, second, WaitPolicy::coalesce(Duration::ZERO));
/// assert_eq!(clock.now_nanos(), 10_000_000);
/// assert_eq!((first.wait_nanos(), second.wait_nanos()), (0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn block_until(clock: &dyn Clock, grant: Grant, policy: WaitPolicy) -> Grant {
    let ready = grant.ready_nanos();
    let now = grant.started_nanos();
    if ready <= now {
        return grant;
    }
    match policy.kind {
        Kind::Precise(spin) => spin_until(clock, grant, spin),
        Kind::Coalesce(window) => sleep_until(clock, grant, window, 0),
        Kind::ClockDefault => {
            let resolution = clock.sleep_overshoot_nanos();
            sleep_until(
                clock,
                grant,
                early_bound(resolution, policy.slot),
                group_delay(resolution, policy.slot),
            )
        }
    }
}

/// How long to sleep for a wait of `left` ns under a coalescing `window`
/// (`left >= window`): until one window before the ready time, plus a
/// nanosecond. Tokio's timer ends a sleep on the first tick at or after its
/// deadline, so the wake comes within one tick after that deadline: when
/// the window is the tick, at most a nanosecond after the ready time, and
/// the operation then goes (at most a window early). Sleeping until the
/// ready time itself would wake up to a tick late each time, which limiters
/// that do not catch lateness up at once (a strict or burst-ratio pacer, a
/// small bucket) would lose, a large share of the rate at high rates.
/// Under paused time, a ready time on a whole tick is woken exactly then.
#[cfg(feature = "tokio")]
pub(crate) fn timer_nap_nanos(left: u64, window: u64) -> u64 {
    if window == 0 {
        left
    } else {
        left.saturating_sub(window).saturating_add(1)
    }
}

/// How long an inline-filled pool's refilling waiter sleeps (on the
/// pool's clock) for a fill due in `span` ns: the span shortened by the
/// clock's typical lateness `lead`, so that the sleep ends about on time,
/// but at least half of whichever of the two is smaller, and at least
/// 1 ns.
pub(crate) fn refill_nap_nanos(span: u64, lead: u64) -> u64 {
    span.saturating_sub(lead).max(span.min(lead) / 2).max(1)
}

/// Sleeps until `delay` after the grant's ready time, waking about on
/// time (the clock's resolution early), and lets it go once it is at most
/// `early` ns before its ready time.
fn sleep_until(clock: &dyn Clock, grant: Grant, early: u64, delay: u64) -> Grant {
    let ready = grant.ready_nanos();
    let mut now = grant.started_nanos();
    let resolution = clock.sleep_overshoot_nanos();
    let mut fresh = false;
    loop {
        if ready.saturating_sub(now) <= early {
            // At most `early` early; `started` records when.
            return grant.started_at(now);
        }
        if !fresh {
            // `started` may be old (a grant reserved now and waited for
            // later): read the clock once before sleeping, so the sleep is
            // measured from now. An op within the early bound never gets
            // here, so such ops read no clock.
            now = clock.now_nanos();
            fresh = true;
            continue;
        }
        // Wake about `delay` after the ready time or, without one, in the
        // middle of the early bound, so that a wake a little late or a
        // little early still lets the op go at most `early` early and
        // rarely late: a sleep ends about the resolution late. When less
        // than that is left, sleep anyway (a nap of 1 ns lasts about one
        // resolution).
        let target = if delay > 0 {
            ready.saturating_add(delay)
        } else if resolution > 0 {
            ready.saturating_sub(early / 2)
        } else {
            ready // exact sleeps: wake on time
        };
        let nap = target.saturating_sub(now).saturating_sub(resolution).max(1);
        clock.sleep_nanos(nap);
        let woke = clock.now_nanos();
        if resolution > 0 {
            observe_overshoot(woke.saturating_sub(now).saturating_sub(nap));
        }
        now = woke;
    }
}

/// Sleeps until `spin` before the ready time, then spins until it. On a
/// clock whose sleeps are exact (`sleep_overshoot_nanos() == 0`, such as
/// [`ManualClock`](crate::ManualClock), which moves only when slept on)
/// there is nothing to spin for: it sleeps to the ready time.
fn spin_until(clock: &dyn Clock, grant: Grant, spin: u64) -> Grant {
    let spin = if clock.sleep_overshoot_nanos() == 0 {
        0
    } else {
        spin
    };
    let ready = grant.ready_nanos();
    // Measured from a fresh reading: `started` may be old (a grant reserved
    // now and waited for later).
    let mut now = grant.started_nanos().max(clock.now_nanos());
    loop {
        let left = ready.saturating_sub(now);
        if left == 0 {
            return grant.started_at(now);
        }
        if left > spin {
            clock.sleep_nanos(left - spin);
        } else {
            std::hint::spin_loop();
        }
        now = clock.now_nanos();
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
