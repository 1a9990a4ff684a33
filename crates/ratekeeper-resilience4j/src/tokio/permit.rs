//! Async `acquire_permission` for the Resilience4j limiters.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{ready, Context, Poll};

use std::time::Duration;

use ::tokio::time::{sleep_until, Instant, Sleep};
use pin_project_lite::pin_project;
use ratekeeper::tokio::timer_nap;
use ratekeeper::RateLimiter;

use crate::{PendingPermission, PermitError, PermitLimiter};

/// A timer slot: boxed, so that the future stays `Unpin`.
type Timer = Option<Pin<Box<Sleep>>>;

/// Arms `timer` to fire `nap` from now (a nap past the timer's range fires
/// in the far future).
fn arm(timer: &mut Timer, nap: Duration) {
    let now = Instant::now();
    let deadline = now
        .checked_add(nap)
        .or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30)))
        .unwrap_or(now);
    match timer {
        Some(t) => t.as_mut().reset(deadline),
        None => *timer = Some(Box::pin(sleep_until(deadline))),
    }
}

pin_project! {
    /// The future of [`AsyncPermitLimiter::acquire_permission_async`].
    ///
    /// Decides on its first poll, as
    /// [`begin_acquire_permission`](PermitLimiter::begin_acquire_permission)
    /// does, and, for a grant with a wait, sleeps on tokio's timer. Events
    /// and [`Metrics::waiting_threads`](crate::Metrics::waiting_threads)
    /// are those of the [`PendingPermission`] it holds: the acquisition
    /// counts as waiting while it sleeps, and publishes `SUCCESSFUL_ACQUIRE`
    /// when it completes (a refusal publishes `FAILED_ACQUIRE` at once).
    ///
    /// Dropped while it waits, the acquisition ends as
    /// [`PendingPermission::cancel`]: `FAILED_ACQUIRE`, no longer waiting,
    /// and its reservation given back as far as the limiter allows.
    #[must_use = "futures do nothing unless polled; an unpolled acquire reserves nothing"]
    pub struct AcquirePermission<'a, L>
    where
        L: PermitLimiter,
        L: RateLimiter,
        L: ?Sized,
    {
        limiter: &'a L,
        permits: u32,
        decided: bool,
        pending: Option<PendingPermission<'a>>,
        timer: Timer,
    }

    impl<'a, L> PinnedDrop for AcquirePermission<'a, L>
    where
        L: PermitLimiter,
        L: RateLimiter,
        L: ?Sized,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(pending) = this.pending.take() {
                // Abandoned while waiting: FAILED_ACQUIRE, no longer
                // waiting, and the reservation given back as far as the
                // limiter allows.
                pending.cancel();
            }
        }
    }
}

impl<L: PermitLimiter + RateLimiter + ?Sized> Future for AcquirePermission<'_, L> {
    type Output = Result<bool, PermitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if !*this.decided {
            *this.decided = true;
            let limiter: &L = this.limiter;
            let pending = limiter.begin_acquire_permission(*this.permits)?;
            if !pending.is_waiting() {
                // Refused (already published) or granted without a wait.
                return Poll::Ready(Ok(pending.finish()));
            }
            let Some(nap) = timer_nap(limiter, pending.ready_at_nanos()) else {
                return Poll::Ready(Ok(pending.finish()));
            };
            arm(this.timer, nap);
            *this.pending = Some(pending);
        }
        if let Some(t) = this.timer {
            ready!(t.as_mut().poll(cx));
        }
        match this.pending.take() {
            Some(pending) => Poll::Ready(Ok(pending.finish())),
            None => panic!("acquire_permission_async polled after it completed"),
        }
    }
}

impl<L: PermitLimiter + RateLimiter + ?Sized> fmt::Debug for AcquirePermission<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquirePermission")
            .field("limiter", &self.limiter.name())
            .field("permits", &self.permits)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

/// Resilience4j's `acquirePermission`, async, for the limiters of
/// this crate ([`RefillLimiter`](crate::RefillLimiter),
/// [`CycleLimiter`](crate::CycleLimiter), and `&L` / `Arc<L>` of them).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
/// use ratekeeper::tokio::TokioClock;
/// use ratekeeper_resilience4j::tokio::AsyncPermitLimiter;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = RefillConfig::builder()
///     .limit_for_period(1)
///     .limit_refresh_period(Duration::from_millis(10))
///     .permit_capacity(2)
///     .timeout(Duration::from_millis(15))
///     .build()?;
/// let limiter = RefillLimiter::new_with_clock("api", config, TokioClock::new());
/// let start = tokio::time::Instant::now();
/// assert!(limiter.acquire_permission_async(1).await?); // the stored permit
/// assert!(limiter.acquire_permission_async(1).await?); // waits 10 ms
/// assert_eq!(start.elapsed(), Duration::from_millis(10));
/// assert!(!limiter.acquire_permission_async(2).await?); // 20 ms > 15 ms: refused at once
/// assert_eq!(start.elapsed(), Duration::from_millis(10));
/// # Ok(()) }
/// ```
pub trait AsyncPermitLimiter: PermitLimiter + RateLimiter {
    /// Takes `permits` if they can go within the limiter's current timeout,
    /// sleeping on tokio's timer until they may go; `Ok(false)` at once,
    /// with nothing reserved, if they cannot.
    ///
    /// # Errors
    ///
    /// As [`PermitLimiter::begin_acquire_permission`]: the request can
    /// never be granted. Nothing is published.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped while it waits, the acquisition ends as
    /// [`PendingPermission::cancel`]: a `FAILED_ACQUIRE` event, no longer
    /// counted as waiting, and, unlike Resilience4j's interrupt, its
    /// reservation given back as far as the limiter allows (see
    /// [Cancel safety](super#cancel-safety)).
    /// Dropped before its first poll, it decided nothing.
    ///
    /// # Panics
    ///
    /// When polled outside a Tokio runtime with the time driver enabled, if
    /// it has to sleep.
    fn acquire_permission_async(&self, permits: u32) -> AcquirePermission<'_, Self> {
        AcquirePermission {
            limiter: self,
            permits,
            decided: false,
            pending: None,
            timer: None,
        }
    }
}

impl<L: PermitLimiter + RateLimiter + ?Sized> AsyncPermitLimiter for L {}
