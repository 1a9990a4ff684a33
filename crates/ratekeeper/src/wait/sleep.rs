//! Sleeping to a ready time: the blocking wait every limiter uses, the
//! naps of the async and refill waits, and the process's estimate of how
//! late a sleep ends.

use super::policy::{early_bound, group_delay, Kind, WaitPolicy};
use crate::clock::Clock;
use crate::grant::Grant;

use crate::clock::RESOLUTION;

pub(super) const MIN_RESOLUTION: u64 = 1_000;
pub(super) const MAX_RESOLUTION: u64 = 10_000_000;

/// Moves the estimate towards one sleep's overshoot.
pub(super) fn observe_overshoot(overshoot: u64) {
    use core::sync::atomic::Ordering;
    // Ordering: Relaxed for both: a statistic; a racing update is lost,
    // which only slows the estimate down.
    let est = RESOLUTION.load(Ordering::Relaxed);
    RESOLUTION.store(next_estimate(est, overshoot), Ordering::Relaxed);
}

/// One step of the streaming median estimate: 1/32 of itself towards the
/// observation, within [`MIN_RESOLUTION`] and [`MAX_RESOLUTION`].
pub(super) fn next_estimate(est: u64, overshoot: u64) -> u64 {
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
pub(super) fn sleep_until(clock: &dyn Clock, grant: Grant, early: u64, delay: u64) -> Grant {
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
pub(super) fn spin_until(clock: &dyn Clock, grant: Grant, spin: u64) -> Grant {
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
