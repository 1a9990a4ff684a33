//! Calls that take a permit first, async: the counterpart of
//! [`crate::decorate`] for futures (Resilience4j's
//! `decorateCompletionStage` / `decorateFuture`).
//!
//! A call first acquires its permits with
//! [`acquire_permission_async`](AsyncPermitLimiter::acquire_permission_async):
//! granted at once, it runs; granted after a wait within the limiter's
//! timeout, it sleeps on tokio's timer and then runs; refused, it returns
//! [`NotPermitted`] **at once, without creating the future**. Requests that
//! can never be granted are [`NotPermitted`] too, with the
//! [`PermitError`](crate::PermitError) as their cause, as in the
//! blocking module.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
//! use ratekeeper_resilience4j::tokio::decorate::{self, AsyncRateLimited};
//! use ratekeeper::tokio::TokioClock;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = RefillConfig::builder()
//!     .limit_for_period(2)
//!     .limit_refresh_period(Duration::from_secs(1))
//!     .timeout(Duration::ZERO)
//!     .build()?;
//! let limiter = RefillLimiter::new_with_clock("backend", config, TokioClock::new());
//!
//! // One call: the future is created only once the permit is granted.
//! assert_eq!(decorate::call(&limiter, 1, || async { 6 * 7 }).await?, 42);
//!
//! // A decorator: every call takes a permit first.
//! let fetch = AsyncRateLimited::new(&limiter);
//! assert_eq!(fetch.call_with(4, |x| async move { x * 2 }).await?, 8);
//! let refused = fetch.call(|| async { unreachable!() }).await.unwrap_err();
//! assert_eq!(refused.to_string(), "RateLimiter 'backend' does not permit further calls");
//! # Ok(()) }
//! ```
//!
//! # Cancel safety
//!
//! Every function here is cancel safe while it waits for permission: the
//! acquisition is abandoned and its reservation given back (see
//! [`acquire_permission_async`](AsyncPermitLimiter::acquire_permission_async)).
//! Once permitted, dropping the call drops the caller's future, whatever
//! that means for it; the permits stay spent.

use core::fmt;
use core::future::Future;

use super::permit::AsyncPermitLimiter;
use crate::decorate::{DrainPolicy, NeverDrain, NotPermitted};
use crate::PermitLimiter;
use ratekeeper::PermitCount;
use ratekeeper::RateLimiter;

/// Acquires `permits` from `limiter`, sleeping on tokio's timer until they
/// may go (Resilience4j `waitForPermission`, async).
///
/// # Errors
///
/// [`NotPermitted`] if the limiter refuses them (at once, nothing
/// reserved) or can never grant them.
///
/// # Cancel safety
///
/// Cancel safe: see [`AsyncPermitLimiter::acquire_permission_async`].
pub async fn wait_for_permission<L>(limiter: &L, permits: u32) -> Result<(), NotPermitted>
where
    L: PermitLimiter + RateLimiter + ?Sized,
{
    match limiter.acquire_permission_async(permits).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(NotPermitted::new(limiter.name())),
        Err(e) => Err(NotPermitted::invalid(limiter.name(), e)),
    }
}

/// Creates and awaits `f()` once `limiter` grants `permits`
/// (Resilience4j `decorateCompletionStage(permits, supplier)`); `f` is not
/// called if it does not.
///
/// # Errors
///
/// [`NotPermitted`] as [`wait_for_permission`]; `f` was not called.
///
/// # Cancel safety
///
/// Cancel safe while waiting for permission (see the
/// [module docs](self#cancel-safety)); afterwards, as `f()`'s future.
pub async fn call<L, T, Fut>(
    limiter: &L,
    permits: u32,
    f: impl FnOnce() -> Fut,
) -> Result<T, NotPermitted>
where
    L: PermitLimiter + RateLimiter + ?Sized,
    Fut: Future<Output = T>,
{
    wait_for_permission(limiter, permits).await?;
    Ok(f().await)
}

/// The async counterpart of [`decorate::RateLimited`](crate::decorate::RateLimited):
/// a limiter with the permits each call takes and when a call's output
/// drains it.
///
/// `L` is a Resilience4j limiter ([`PermitLimiter`] + [`RateLimiter`]) by
/// value, `&L` or `Arc<L>`; `P` the permit count ([`PermitCount`], 1
/// unless set); `D` the drain policy ([`DrainPolicy`], [`NeverDrain`]
/// unless set).
///
/// # Examples
///
/// A client that takes one permit per item of a batch and closes the period
/// when the backend answers 429:
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
/// use ratekeeper_resilience4j::tokio::decorate::AsyncRateLimited;
/// use ratekeeper::tokio::TokioClock;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = RefillConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1))
///     .timeout(Duration::ZERO)
///     .build()?;
/// let limiter = Arc::new(RefillLimiter::new_with_clock("backend", config, TokioClock::new()));
/// let send = AsyncRateLimited::new(limiter.clone())
///     .permits_with(|batch: &Vec<u32>| batch.len() as u32)
///     .drain_when(|status: &Result<(), u16>| matches!(status, Err(429)));
/// let backend = |batch: Vec<u32>| async move { if batch.contains(&0) { Err(429) } else { Ok(()) } };
///
/// assert_eq!(send.call_with(vec![1, 2, 3], backend).await?, Ok(()));
/// assert_eq!(limiter.metrics().available_permissions, 7);
/// assert_eq!(send.call_with(vec![0], backend).await?, Err(429)); // drained
/// assert_eq!(limiter.metrics().available_permissions, 0);
/// assert!(send.call_with(vec![4], backend).await.is_err()); // not called
/// # Ok(()) }
/// ```
pub struct AsyncRateLimited<L, P = u32, D = NeverDrain> {
    limiter: L,
    permits: P,
    drain: D,
}

impl<L: PermitLimiter + RateLimiter> AsyncRateLimited<L> {
    /// Calls guarded by `limiter`, one permit each, never draining.
    pub fn new(limiter: L) -> AsyncRateLimited<L> {
        AsyncRateLimited {
            limiter,
            permits: 1,
            drain: NeverDrain,
        }
    }
}

impl<L, P, D> AsyncRateLimited<L, P, D> {
    /// Every call takes `permits`.
    pub fn permits(self, permits: u32) -> AsyncRateLimited<L, u32, D> {
        AsyncRateLimited {
            limiter: self.limiter,
            permits,
            drain: self.drain,
        }
    }

    /// Every call takes the permits `calculate` computes from its argument
    /// (Resilience4j's `permitsCalculator`). The closure's argument type
    /// must be written out (`|arg: &A| ...`).
    pub fn permits_with<F>(self, calculate: F) -> AsyncRateLimited<L, F, D> {
        AsyncRateLimited {
            limiter: self.limiter,
            permits: calculate,
            drain: self.drain,
        }
    }

    /// After every call, drains the limiter if `drain_when(&output)` is true
    /// (Resilience4j's `drainPermissionsOnResult`).
    pub fn drain_when<F>(self, drain_when: F) -> AsyncRateLimited<L, P, F> {
        AsyncRateLimited {
            limiter: self.limiter,
            permits: self.permits,
            drain: drain_when,
        }
    }

    /// The limiter.
    pub fn limiter(&self) -> &L {
        &self.limiter
    }
}

impl<L: PermitLimiter + RateLimiter, P, D> AsyncRateLimited<L, P, D> {
    /// Creates and awaits `f(arg)` once the limiter grants the permits for
    /// `arg`, then consults the drain policy with its output.
    ///
    /// # Errors
    ///
    /// [`NotPermitted`] if the limiter refuses the permits or can never
    /// grant them; `f` was not called.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe while waiting for permission (see the
    /// [module docs](self#cancel-safety)); afterwards, as `f(arg)`'s
    /// future, and the drain policy is not consulted.
    pub async fn call_with<A, T, Fut>(
        &self,
        arg: A,
        f: impl FnOnce(A) -> Fut,
    ) -> Result<T, NotPermitted>
    where
        P: PermitCount<A>,
        D: DrainPolicy<T>,
        Fut: Future<Output = T>,
    {
        wait_for_permission(&self.limiter, self.permits.permits_for(&arg)).await?;
        let output = f(arg).await;
        if self.drain.should_drain(&output) {
            self.limiter.drain_permissions();
        }
        Ok(output)
    }

    /// Creates and awaits `f()` once the limiter grants the permits, then
    /// consults the drain policy with its output.
    ///
    /// # Errors
    ///
    /// As [`call_with`](Self::call_with).
    ///
    /// # Cancel safety
    ///
    /// As [`call_with`](Self::call_with).
    pub async fn call<T, Fut>(&self, f: impl FnOnce() -> Fut) -> Result<T, NotPermitted>
    where
        P: PermitCount<()>,
        D: DrainPolicy<T>,
        Fut: Future<Output = T>,
    {
        self.call_with((), |()| f()).await
    }
}

impl<L: PermitLimiter, P, D> fmt::Debug for AsyncRateLimited<L, P, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncRateLimited")
            .field("limiter", &self.limiter.name())
            .field("permits", &core::any::type_name::<P>())
            .field("drain", &core::any::type_name::<D>())
            .finish()
    }
}
