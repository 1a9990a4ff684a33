//! The blocking driver of the completion protocol ([`block_on`]).
//!
//! [`RateLimiter::wait_for_or_stop`](crate::RateLimiter::wait_for_or_stop)
//! sleeps on a [`Stop`] until [`STOP_TAIL`] before the grant, then leaves
//! the tail to the limiter's own wait. The async driver is
//! [`crate::tokio`]'s `Waiter`; limiters with their own blocking wait
//! override [`RateLimiter::wait_for`](crate::RateLimiter::wait_for).

use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::Duration;

use super::WaitPolicy;
use crate::clock::Clock;
use crate::grant::{Grant, Readiness};
use crate::sync::{self, Thread};

/// Wakes a thread parked in [`block_on`].
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Blocks until `grant` may go, asking `poll` (a limiter's
/// [`poll_grant`](crate::RateLimiter::poll_grant)) what to do, and doing it:
///
/// * [`Readiness::Go`]: the op goes.
/// * [`Readiness::SleepUntil`]: [`block_until`](super::block_until) under
///   `policy`, then the op goes.
/// * [`Readiness::Pending`]`(None)`: park until the limiter wakes the given
///   waker, then ask again.
/// * [`Readiness::Pending`]`(Some(at))`: the waiter must act at `at` (an
///   inline-filled pool); sleep on `clock` until then, ask again.
///
/// The first ask uses the grant's decision reading and a no-op waker: a
/// wait for time costs no clock read and no allocation beyond the sleep.
/// Returns the grant with its start time. The default
/// [`RateLimiter::wait_for`](crate::RateLimiter::wait_for) is this, then
/// [`released`](crate::RateLimiter::released). Takes the limiter's parts so
/// that waiting depends on no limiter.
///
/// ```
/// use std::task::Waker;
/// use ratekeeper::{wait, Clock, ManualClock, Pacer, Rate, RateLimiter, Readiness};
///
/// let clock = ManualClock::new(0);
/// let pacer = Pacer::builder(Rate::new(100.0)?).build_with_clock(clock.clone())?;
/// pacer.reserve(1, None)?;
/// let next = pacer.reserve(1, None)?; // due in 10 ms
/// let poll = |g: &_, now, w: &Waker| pacer.poll_grant(g, now, w);
/// let done = wait::block_on(&clock, pacer.wait_policy(), next, poll);
/// assert_eq!(done.started_nanos(), clock.now_nanos());
/// assert!(clock.now_nanos() >= 10_000_000 - pacer.wait_policy().window_nanos(&clock));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn block_on(
    clock: &dyn Clock,
    policy: WaitPolicy,
    grant: Grant,
    mut poll: impl FnMut(&Grant, u64, &Waker) -> Readiness,
) -> Grant {
    let mut now = grant.started_nanos();
    let mut waker: Option<Waker> = None;
    loop {
        let asked_with = waker.as_ref().unwrap_or(Waker::noop());
        match poll(&grant, now, asked_with) {
            Readiness::Go => return grant.started_at(now),
            // The common answer, the grant's own ready time: the plain
            // sleep on the grant, nothing added.
            Readiness::SleepUntil(at)
                if at == grant.ready_nanos() && now == grant.started_nanos() =>
            {
                return super::block_until(clock, grant, policy);
            }
            Readiness::SleepUntil(at) => {
                let due = Grant::new(grant.scheduled_nanos(), at, now, grant.permits());
                let slept = super::block_until(clock, due, policy);
                return grant.started_at(slept.started_nanos());
            }
            Readiness::Pending(at) => {
                if waker.is_none() {
                    // Asked with a no-op waker: ask again with one that can
                    // wake this thread before parking on it.
                    waker = Some(Waker::from(Arc::new(Unpark(sync::current_thread()))));
                    continue;
                }
                match at {
                    None => sync::park(),
                    Some(at) => clock.sleep_nanos(at.saturating_sub(now).max(1)),
                }
                now = clock.now_nanos();
            }
        }
    }
}

/// What may end a blocking wait before its grant may go; see
/// [`RateLimiter::wait_for_or_stop`](crate::RateLimiter::wait_for_or_stop).
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::time::Duration;
/// use ratekeeper::wait::Stop;
///
/// /// Stops once set (a real one would also wake its sleepers).
/// struct Flag(AtomicBool);
///
/// impl Stop for Flag {
///     fn is_stopped(&self) -> bool {
///         self.0.load(Ordering::Relaxed)
///     }
///     fn sleep(&self, nanos: u64) -> bool {
///         std::thread::sleep(Duration::from_nanos(nanos));
///         self.is_stopped()
///     }
/// }
/// ```
pub trait Stop {
    /// Whether the wait must end now.
    fn is_stopped(&self) -> bool;

    /// Sleeps about `nanos` nanoseconds, or less if the wait must end
    /// meanwhile; returns whether it must.
    fn sleep(&self, nanos: u64) -> bool;
}

/// The last part of a wait that a [`Stop`] leaves to the limiter's own wait:
/// short enough not to delay a stop noticeably, long enough for few sleeps.
pub const STOP_TAIL: Duration = Duration::from_millis(20);

/// How long a stoppable wait at `now` sleeps on its [`Stop`] for `due`:
/// until half the tail before it, or `None` within the tail.
///
/// ```
/// use ratekeeper::wait::stop_nap_nanos;
///
/// assert_eq!(stop_nap_nanos(1_000_000_000, 0), Some(990_000_000));
/// assert_eq!(stop_nap_nanos(20_000_000, 0), None); // the tail: not stopped
/// ```
pub fn stop_nap_nanos(due: u64, now: u64) -> Option<u64> {
    let tail = STOP_TAIL.as_nanos() as u64;
    let left = due.saturating_sub(now);
    (left > tail).then(|| left - tail / 2)
}
