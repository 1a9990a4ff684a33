//! The blocking driver of the completion protocol: a thread waits for a
//! grant by asking [`RateLimiter::poll_grant`] what to do, and doing it.
//!
//! * [`Readiness::Go`]: the op goes.
//! * [`Readiness::SleepUntil`]: only time stands in the way; the wait is
//!   [`block_until`](super::block_until) under the limiter's
//!   [`WaitPolicy`](super::WaitPolicy) (its coalescing, its early bound),
//!   and the op goes.
//! * [`Readiness::Pending`]`(None)`: the limiter waits for something other
//!   than time; the thread parks until the limiter wakes the waker it was
//!   given, then asks again.
//! * [`Readiness::Pending`]`(Some(at))`: the waiter itself must act at
//!   `at` (an inline-filled pool's waiter fills it); the thread sleeps on
//!   the limiter's clock until then, or until woken, and asks again.
//!
//! The first question is asked with the reading the grant was decided
//! against and a no-op waker, so a grant that only waits for time costs no
//! clock read and no allocation beyond the plain sleep; a thread waker is
//! made only once a limiter answers `Pending`.
//!
//! The async driver is [`crate::tokio`]'s `Waiter`. Limiters with a
//! specialised blocking wait (the Pacer's room, the token pool's queue)
//! override [`RateLimiter::wait_for`] and answer `poll_grant` the same way.

use std::sync::Arc;
use std::task::{Wake, Waker};

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

/// Blocks the thread until `grant` may go, asking `poll` (a limiter's
/// [`poll_grant`](crate::RateLimiter::poll_grant)) what to do (see the
/// [module docs](self)); sleeps on `clock` under `policy`. Returns the
/// grant with its start time filled in. The default
/// [`RateLimiter::wait_for`](crate::RateLimiter::wait_for) is this driver
/// followed by [`released`](crate::RateLimiter::released).
///
/// It takes the limiter's parts rather than the limiter, so that the
/// waiting module depends on no limiter.
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
