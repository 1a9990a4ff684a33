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
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn precise_on_an_exact_clock_sleeps_instead_of_spinning() {
        // Issue 16: the spin phase waited for a ManualClock that only moves
        // when slept on, forever. A clock whose sleeps are exact needs no
        // spin. Run on a thread, so that a regression fails, not hangs.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let clock = ManualClock::new(0);
            let g = Grant::new(10_000_000, 10_000_000, 0, 1);
            let g = block_until(&clock, g, WaitPolicy::precise(Duration::from_millis(1)));
            tx.send((clock.now_nanos(), g.started_nanos())).unwrap();
        });
        let got = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(got, Ok((10_000_000, 10_000_000)));
    }

    #[test]
    fn a_grant_waited_for_later_sleeps_only_what_is_left() {
        // Reserved at 0, ready at 10 ms; the caller comes back at 4 ms.
        for policy in [
            WaitPolicy::coalesce(Duration::ZERO),
            WaitPolicy::default(),
            WaitPolicy::precise(Duration::ZERO),
        ] {
            let clock = ManualClock::new(0);
            let g = Grant::new(10_000_000, 10_000_000, 0, 1);
            clock.advance_nanos(4_000_000);
            let g = block_until(&clock, g, policy);
            assert_eq!(clock.now_nanos(), 10_000_000, "{policy:?}");
            assert_eq!(g.started_nanos(), 10_000_000, "{policy:?}");
        }
    }

    #[test]
    fn exact_policy_on_manual_clock_lands_on_ready() {
        let clock = ManualClock::new(100);
        let g = Grant::new(50, 1_000, 100, 1);
        let g = block_until(&clock, g, WaitPolicy::coalesce(Duration::ZERO));
        assert_eq!(g.started_nanos(), 1_000);
        assert_eq!(clock.now_nanos(), 1_000);
        assert_eq!(g.wait_nanos(), 950);
    }

    #[test]
    fn oversleep_counts_as_wait() {
        let clock = ManualClock::new(0);
        clock.set_sleep_overshoot_nanos(250);
        let g = block_until(
            &clock,
            Grant::new(1_000, 1_000, 0, 1),
            WaitPolicy::coalesce(Duration::ZERO),
        );
        assert_eq!(g.started_nanos(), 1_250);
        assert_eq!(g.wait_nanos(), 250);
    }

    #[test]
    fn short_waits_are_coalesced_without_touching_the_clock() {
        let clock = ManualClock::new(0);
        let g = block_until(
            &clock,
            Grant::new(900, 900, 0, 1),
            WaitPolicy::coalesce(Duration::from_nanos(1_000)),
        );
        assert_eq!(g.started_nanos(), 0);
        assert_eq!(clock.now_nanos(), 0);
    }

    #[test]
    fn long_waits_sleep_until_due_on_an_exact_clock() {
        let clock = ManualClock::new(0);
        let g = block_until(
            &clock,
            Grant::new(10_000, 10_000, 0, 1),
            WaitPolicy::coalesce(Duration::from_nanos(1_000)),
        );
        // The manual clock's sleeps are exact (lead 0): it wakes on time.
        assert_eq!(g.started_nanos(), 10_000);
    }

    /// A clock whose sleeps end 100 ns late, as real ones end ~100 µs late.
    struct Late(ManualClock);
    impl Clock for Late {
        fn now_nanos(&self) -> u64 {
            self.0.now_nanos()
        }
        fn sleep_nanos(&self, nanos: u64) {
            self.0.advance_nanos(nanos + 100);
        }
        fn sleep_overshoot_nanos(&self) -> u64 {
            100
        }
    }

    #[test]
    fn sleeps_lead_by_the_clock_overshoot() {
        let clock = Late(ManualClock::new(0));
        let g = block_until(
            &clock,
            Grant::new(10_000, 10_000, 0, 1),
            WaitPolicy::coalesce(Duration::from_nanos(50)),
        );
        // Aims at the middle of the 50 ns window: asked for 9 875 ns, slept
        // 9 975, 25 ns early, one sleep.
        assert_eq!(g.started_nanos(), 9_975);
    }

    #[test]
    fn the_default_early_bound_and_delay_follow_resolution_and_slot() {
        let clock = Late(ManualClock::new(0)); // resolution 100 ns
        let at = |slot| {
            let p = WaitPolicy::default().for_slot(slot);
            (p.window_nanos(&clock), p.group_delay_nanos(&clock))
        };
        assert_eq!(at(0), (50, 0), "unknown slot: half a resolution, no delay");
        assert_eq!(at(1), (50, 768), "tiny slots: 768 of them");
        assert_eq!(at(10), (50, 640), "capped: 768 slots > 8 x (100 - 2 x 10)");
        assert_eq!(at(49), (50, 16), "just under half a resolution");
        assert_eq!(at(50), (50, 0), "half a resolution: ops one by one");
        assert_eq!(at(150), (75, 0), "half a slot");
        assert_eq!(at(1_000), (100, 0), "at most one resolution early");
        assert_eq!(at(1), at(1), "deterministic");
        let exact = ManualClock::new(0);
        let p = WaitPolicy::default().for_slot(1);
        assert_eq!(
            (p.window_nanos(&exact), p.group_delay_nanos(&exact)),
            (0, 0)
        );
        // The other policies ignore the slot.
        let c = WaitPolicy::coalesce(Duration::from_nanos(7)).for_slot(1);
        assert_eq!(
            (c.window_nanos(&clock), c.group_delay_nanos(&clock)),
            (7, 0)
        );
    }

    #[test]
    fn a_default_wait_goes_late_by_the_delay_never_early_by_more_than_the_bound() {
        // Resolution 100 ns, slot 10 ns: early bound 50, delay 640.
        let clock = Late(ManualClock::new(0));
        let policy = WaitPolicy::default().for_slot(10);
        // 40 ns away: sleeping to it is impossible, it goes at once.
        let g = block_until(&clock, Grant::new(40, 40, 0, 1), policy);
        assert_eq!((g.started_nanos(), clock.now_nanos()), (0, 0));
        // 1 000 ns away: one sleep, woken 640 ns after the ready time.
        let g = block_until(&clock, Grant::new(1_000, 1_000, 0, 1), policy);
        assert_eq!(g.started_nanos(), 1_640);
        assert_eq!(g.wait_nanos(), 640, "the lateness is reported");
    }

    #[test]
    fn zero_window_on_a_late_clock_still_waits_until_due() {
        let clock = Late(ManualClock::new(0));
        let g = block_until(
            &clock,
            Grant::new(50, 50, 0, 1),
            WaitPolicy::coalesce(Duration::ZERO),
        );
        assert!(g.started_nanos() >= 50);
    }

    #[test]
    fn precise_never_releases_early() {
        let clock = ManualClock::new(0);
        let g = block_until(
            &clock,
            Grant::new(10_000, 10_000, 0, 1),
            WaitPolicy::precise(Duration::from_nanos(0)),
        );
        assert_eq!(g.started_nanos(), 10_000);
    }

    #[test]
    fn default_policy_uses_the_clock_resolution() {
        crate::test_util::within(|| {
            // The estimate is process-wide and other tests' sleeps move it:
            // check the relation within its bounds.
            let real = crate::clock::MonotonicClock::new();
            let window = WaitPolicy::default().window_nanos(&real);
            assert!((MIN_RESOLUTION / 2..=MAX_RESOLUTION / 2).contains(&window));
            assert_eq!(WaitPolicy::default().window_nanos(&ManualClock::new(0)), 0);
        });
    }

    #[test]
    fn the_resolution_estimate_follows_the_median_and_stays_bounded() {
        // Sleeps alternating 80 and 120 µs late, one in 10 preempted 5 ms:
        // the estimate settles between the two, unmoved by the outliers.
        let mut est = DEFAULT_SLEEP_OVERSHOOT_NANOS;
        for i in 0..2_000u64 {
            let observed = match i % 10 {
                0 => 5_000_000,
                k if k % 2 == 0 => 80_000,
                _ => 120_000,
            };
            est = next_estimate(est, observed);
        }
        assert!((80_000..=125_000).contains(&est), "{est}");
        let low = (0..1_000).fold(est, |e, _| next_estimate(e, 0));
        assert_eq!(low, MIN_RESOLUTION);
        let high = (0..1_000).fold(est, |e, _| next_estimate(e, u64::MAX));
        assert_eq!(high, MAX_RESOLUTION);
    }
}
