//! Turning a reservation into a wait, written once for every limiter.
//!
//! Blocking waits sleep; they never spin unless asked to. A sleep on Linux ends
//! about 85–120 µs later than asked (measured here: `cargo run --release -p
//! ratekeeper --example sleep_overshoot`), and one sleep and wake costs
//! 23–34 µs of CPU on this project's VMs (the 1k ops/s rows of
//! `cargo run --release -p ratekeeper --example pacing_accuracy`). Two consequences shape the default:
//!
//! * **Wake early.** A wait is slept as `wait − lead`, where the lead is the
//!   clock's typical sleep lateness
//!   ([`Clock::sleep_overshoot_nanos`], 100 µs for real clocks), so the thread wakes about when the op is due
//!   instead of 100 µs after.
//! * **Coalesce short waits.** An op whose ready time is within the
//!   *coalescing window* goes at once, up to one window early. Operations
//!   closer together than the window therefore leave in groups, one sleep per
//!   group instead of one per op: at 1 M ops/s with the default 500 µs window,
//!   one sleep per ~500 µs of schedule rather than one per ~90 µs sleep
//!   overshoot (nosqlbench's "op bulking").
//!   Operations further apart than the window are paced one by one.
//!
//! The schedule itself is absolute (every grant's ready time was fixed when it
//! was reserved), so releasing early never adds up: over any span longer than
//! the window, the ops released stay within one window's worth of what the
//! schedule allows, and the long-run rate is exact.
//!
//! ```text
//! schedule  |--x--x--x--x--x--x--x--x--x--x--x--x--|    (x = ready times)
//! window        [=========]         [=========]
//! released  |--xxxx--------------xxxx---------------|    (groups, each <= window early)
//! ```
//!
//! Where each op must keep its own time, choose a smaller window
//! ([`WaitPolicy::coalesce`]), down to zero (sleep for every wait), or
//! [`WaitPolicy::precise`]: sleep until shortly before the ready time, then
//! spin the rest, so no op goes early; it costs a core while spinning.

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
    /// The default window for the clock: [`DEFAULT_COALESCE_WINDOW_NANOS`], or
    /// zero on a clock whose sleeps are exact.
    #[default]
    ClockDefault,
    /// Coalesce waits within this many nanoseconds.
    Coalesce(u64),
    /// Sleep until `spin` before ready, then spin.
    Precise(u64),
}

/// The default coalescing window on real clocks: 500 µs.
///
/// Chosen by measurement (`cargo run --release -p ratekeeper --example
/// pacing_accuracy`, see BENCHMARKS.md): it keeps the CPU cost of a blocking
/// acquire at 1 M ops/s under 150 ns per permit on this project's 2-core VMs
/// (120.7 ns measured), where the earlier policy (a 100 µs window, sleeping
/// `wait − window`) measured 351.5 ns.
pub const DEFAULT_COALESCE_WINDOW_NANOS: u64 = 500_000;

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
            Kind::ClockDefault if clock.sleep_overshoot_nanos() == 0 => 0,
            Kind::ClockDefault => DEFAULT_COALESCE_WINDOW_NANOS.max(clock.sleep_overshoot_nanos()),
            Kind::Coalesce(w) => w,
            Kind::Precise(_) => 0,
        }
    }
}

/// A duration in whole nanoseconds, `u64::MAX` if longer (584 years).
pub(crate) fn saturating_nanos(d: Duration) -> u64 {
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
        Kind::Precise(spin) => {
            // Measured from a fresh reading: `started` may be old (a grant
            // reserved now and waited for later).
            now = now.max(clock.now_nanos());
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
        Kind::ClockDefault | Kind::Coalesce(_) => {
            let window = policy.window_nanos(clock);
            let lead = clock.sleep_overshoot_nanos();
            let mut fresh = false;
            loop {
                let left = ready.saturating_sub(now);
                if left <= window {
                    // Released up to `window` early; `started` records when.
                    return grant.started_at(now);
                }
                if !fresh {
                    // `started` may be old (a grant reserved now and waited
                    // for later): read the clock once before sleeping, so the
                    // sleep is measured from now. A wait within the window
                    // never gets here, so coalesced ops read no clock.
                    now = clock.now_nanos();
                    fresh = true;
                    continue;
                }
                // Wake about when due: a sleep ends about `lead` late. When the
                // wait is shorter than the lead, sleep it anyway (a window
                // smaller than the lead asked for that).
                clock.sleep_nanos(left.saturating_sub(lead).max(left.min(lead) / 2).max(1));
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
            WaitPolicy::coalesce(Duration::from_nanos(500)),
        );
        // Asked for 9 900 ns, slept 10 000: on time, one sleep.
        assert_eq!(g.started_nanos(), 10_000);
        // The default window on a late clock is the crate default.
        assert_eq!(
            WaitPolicy::default().window_nanos(&clock),
            DEFAULT_COALESCE_WINDOW_NANOS
        );
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
    fn default_policy_uses_the_clock_window() {
        assert_eq!(
            WaitPolicy::default().window_nanos(&crate::clock::MonotonicClock::new()),
            DEFAULT_COALESCE_WINDOW_NANOS
        );
        assert_eq!(WaitPolicy::default().window_nanos(&ManualClock::new(0)), 0);
    }
}
