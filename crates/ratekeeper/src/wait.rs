//! Turning a reservation into a wait, written once for every limiter.
//!
//! Blocking waits sleep; they never spin unless asked to. A sleep on Linux ends
//! about 85 µs later than asked (median, measured here), so a limiter whose
//! operations are closer together than that cannot be paced one sleep per
//! operation: each sleep would fall further behind. Instead, waits shorter than
//! a *coalescing window* are not slept at all; the operation goes at once, up
//! to one window early. The schedule itself is absolute (every grant's ready
//! time was fixed when it was reserved), so releasing a little early never adds
//! up: over any span longer than the window, the number of operations released
//! stays within one window's worth of what the schedule allows. This is
//! nosqlbench's "op bulking": at 1 M ops/s with a 100 µs window, operations
//! leave in groups of up to 100, and the rate holds.
//!
//! ```text
//! schedule  |--x--x--x--x--x--x--x--x--x--x--x--x--|    (x = ready times)
//! window        [=========]         [=========]
//! released  |--xxxx--------------xxxx---------------|    (groups, each <= window early)
//! ```
//!
//! [`WaitPolicy::precise`] is the opt-in alternative: sleep until shortly before
//! the ready time, then spin the rest, so no operation goes early; it costs a
//! core while spinning.

use std::time::Duration;

use crate::clock::Clock;
use crate::limiter::Grant;

/// How a blocking acquire waits for its ready time.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::WaitPolicy;
///
/// let default = WaitPolicy::default();          // the clock's window (100 µs for real clocks)
/// let exact = WaitPolicy::coalesce(Duration::ZERO); // sleep for every wait, however short
/// let precise = WaitPolicy::precise(Duration::from_micros(200)); // sleep, then spin the last 200 µs
/// assert_ne!(default, precise);
/// assert_eq!(exact, WaitPolicy::coalesce(Duration::from_nanos(0)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitPolicy {
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    /// Coalesce waits within the clock's own sleep overshoot.
    #[default]
    ClockDefault,
    /// Coalesce waits within this many nanoseconds.
    Coalesce(u64),
    /// Sleep until `spin` before ready, then spin.
    Precise(u64),
}

impl WaitPolicy {
    /// Sleep, releasing operations whose wait is at most `window` at once
    /// (up to `window` early). `Duration::ZERO` sleeps for every wait.
    pub fn coalesce(window: Duration) -> WaitPolicy {
        WaitPolicy {
            kind: Kind::Coalesce(saturating_nanos(window)),
        }
    }

    /// Sleep until `spin` before the ready time, then busy-wait until it: no
    /// operation goes early, at the price of a core while spinning. A `spin`
    /// of at least the clock's sleep overshoot (100 µs here) keeps operations
    /// from going late because of sleep lateness.
    pub fn precise(spin: Duration) -> WaitPolicy {
        WaitPolicy {
            kind: Kind::Precise(saturating_nanos(spin)),
        }
    }

    /// The coalescing window this policy uses on `clock` (zero for precise).
    pub fn window_nanos(&self, clock: &dyn Clock) -> u64 {
        match self.kind {
            Kind::ClockDefault => clock.sleep_overshoot_nanos(),
            Kind::Coalesce(w) => w,
            Kind::Precise(_) => 0,
        }
    }
}

fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Blocks the thread until `grant` is ready on `clock` (per `policy`) and
/// returns it with its start time filled in. A grant that was ready when
/// decided returns at once, without reading the clock again.
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
    let mut now = grant.started_nanos();
    if ready <= now {
        return grant;
    }
    match policy.kind {
        Kind::Precise(spin) => loop {
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
        },
        Kind::ClockDefault | Kind::Coalesce(_) => {
            let window = policy.window_nanos(clock);
            loop {
                let left = ready.saturating_sub(now);
                if left <= window {
                    // Released up to `window` early; `started` records when.
                    return grant.started_at(now);
                }
                // Aim to wake `window` early: a sleep ends about that much late.
                clock.sleep_nanos(left - window);
                now = clock.now_nanos();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

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
    fn long_waits_sleep_until_one_window_early() {
        let clock = ManualClock::new(0);
        let g = block_until(
            &clock,
            Grant::new(10_000, 10_000, 0, 1),
            WaitPolicy::coalesce(Duration::from_nanos(1_000)),
        );
        assert_eq!(g.started_nanos(), 9_000);
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
    fn default_policy_uses_the_clock_window() {
        assert_eq!(
            WaitPolicy::default().window_nanos(&crate::clock::MonotonicClock::new()),
            crate::clock::DEFAULT_SLEEP_OVERSHOOT_NANOS
        );
        assert_eq!(WaitPolicy::default().window_nanos(&ManualClock::new(0)), 0);
    }
}
