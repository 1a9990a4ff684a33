//! [`AnyLimiter`] and [`LimiterRef`]: a built limiter whichever its kind,
//! owned or by reference.

use core::fmt;
use std::task::Waker;
use std::time::Duration;

use super::LimiterKind;
use crate::bucket::{CycleLimiter, PermitConfigError, RefillLimiter};
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::limiter::{AcquireError, Grant, RateLimiter, Readiness, Recovery, WaitStats};
use crate::pacer::{Pacer, ShardedPacer};
use crate::pool::TokenPool;
use crate::rate::Rate;
use crate::smooth::{SmoothBursty, SmoothWarmingUp};
use crate::wait::WaitPolicy;

/// A limiter built from a [`LimiterConfig`](super::LimiterConfig), whichever its kind.
///
/// A [`RateLimiter`] that matches on the kind and forwards; match it for the
/// limiter itself. [`Access::Batched`](super::Access::Batched) does not show
/// here: make a [`BatchHandle`](crate::BatchHandle) or
/// [`PacerHandle`](crate::PacerHandle) per thread, or use
/// [`LimiterConfig::visit_with_clock`](super::LimiterConfig::visit_with_clock).
///
/// # Examples
///
/// ```
/// use ratekeeper::config::{AnyLimiter, LimiterConfig};
/// use ratekeeper::{ManualClock, RateLimiter};
///
/// let config: LimiterConfig = "pacer:10M,0,shards=2".parse()?;
/// let limiter = config.build_with_clock(ManualClock::new(0))?;
/// assert!(matches!(&limiter, AnyLimiter::ShardedPacer(p) if p.shards() == 2));
/// assert_eq!(limiter.as_ref().effective_rate(), 1e7);
/// assert!(limiter.try_acquire().is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per limiter, built once; boxing would cost every caller a pointer chase"
)]
pub enum AnyLimiter<C: Clock = DefaultClock> {
    /// A [`Pacer`].
    Pacer(Pacer<C>),
    /// A [`ShardedPacer`] ([`Access::Sharded`](super::Access::Sharded)).
    ShardedPacer(ShardedPacer<C>),
    /// A [`TokenPool`].
    Pool(TokenPool<C>),
    /// A [`SmoothBursty`].
    Bursty(SmoothBursty<C>),
    /// A [`SmoothWarmingUp`].
    WarmingUp(SmoothWarmingUp<C>),
    /// A [`RefillLimiter`].
    Refill(RefillLimiter<C>),
    /// A [`CycleLimiter`].
    Cycle(CycleLimiter<C>),
}

/// A limiter built from a [`LimiterConfig`](super::LimiterConfig), by reference, whichever its
/// kind: what [`SharedLimiter::limiter`](super::SharedLimiter::limiter) and [`AnyLimiter::as_ref`] give.
///
///
/// ```
/// use ratekeeper::config::{LimiterConfig, LimiterKind, LimiterRef};
/// use ratekeeper::{ManualClock, RateLimiter};
///
/// let pool = "pool:1000".parse::<LimiterConfig>()?.build_with_clock(ManualClock::new(0))?;
/// let LimiterRef::Pool(p) = pool.as_ref() else { unreachable!() };
/// assert_eq!(p.nanos_per_op(), 1_000_000);
/// assert_eq!(pool.as_ref().kind(), LimiterKind::Pool);
///
/// let sharded = "pacer:1000,shards=2".parse::<LimiterConfig>()?.build_with_clock(ManualClock::new(0))?;
/// assert_eq!(sharded.as_ref().kind(), LimiterKind::Pacer); // a sharded pacer is a pacer
/// let pacer = "pacer:3".parse::<LimiterConfig>()?.build_with_clock(ManualClock::new(0))?;
/// assert_eq!(pacer.as_ref().rate(), 3.0);
/// assert_eq!(pacer.as_ref().effective_rate(), 1e9 / 333_333_333.0); // slot: floor(1e9 / 3) ns
///
/// let cycle = "cycle:2,timeout=0s".parse::<LimiterConfig>()?.build_with_clock(ManualClock::new(0))?;
/// let limiter: &dyn RateLimiter = cycle.as_ref().as_dyn();
/// assert!(limiter.try_acquire_n(2).is_ok());
/// assert!(limiter.try_acquire().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[non_exhaustive]
pub enum LimiterRef<'a, C: Clock = DefaultClock> {
    /// A [`Pacer`].
    Pacer(&'a Pacer<C>),
    /// A [`ShardedPacer`].
    ShardedPacer(&'a ShardedPacer<C>),
    /// A [`TokenPool`].
    Pool(&'a TokenPool<C>),
    /// A [`SmoothBursty`].
    Bursty(&'a SmoothBursty<C>),
    /// A [`SmoothWarmingUp`].
    WarmingUp(&'a SmoothWarmingUp<C>),
    /// A [`RefillLimiter`].
    Refill(&'a RefillLimiter<C>),
    /// A [`CycleLimiter`].
    Cycle(&'a CycleLimiter<C>),
}

impl<C: Clock> Clone for LimiterRef<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: Clock> Copy for LimiterRef<'_, C> {}

impl<'a, C: Clock + 'static> LimiterRef<'a, C> {
    /// Which kind of limiter it is (a sharded pacer is a pacer).
    pub fn kind(self) -> LimiterKind {
        match self {
            LimiterRef::Pacer(_) | LimiterRef::ShardedPacer(_) => LimiterKind::Pacer,
            LimiterRef::Pool(_) => LimiterKind::Pool,
            LimiterRef::Bursty(_) => LimiterKind::Bursty,
            LimiterRef::WarmingUp(_) => LimiterKind::WarmingUp,
            LimiterRef::Refill(_) => LimiterKind::Refill,
            LimiterRef::Cycle(_) => LimiterKind::Cycle,
        }
    }

    /// The rate its integer arithmetic gives, in permits per second (each
    /// limiter's `effective_rate`).
    pub fn effective_rate(self) -> f64 {
        match self {
            LimiterRef::Pacer(l) => l.effective_rate(),
            LimiterRef::ShardedPacer(l) => l.effective_rate(),
            LimiterRef::Pool(l) => l.effective_rate(),
            LimiterRef::Bursty(l) => l.effective_rate(),
            LimiterRef::WarmingUp(l) => l.effective_rate(),
            LimiterRef::Refill(l) => l.effective_rate(),
            LimiterRef::Cycle(l) => l.effective_rate(),
        }
    }

    /// The rate it was configured for (or last changed to), in permits per
    /// second.
    pub fn rate(self) -> f64 {
        let per_period = |limit: i64, period: Duration| limit as f64 / period.as_secs_f64();
        match self {
            LimiterRef::Pacer(l) => l.rate().get(),
            LimiterRef::ShardedPacer(l) => l.rate().get(),
            LimiterRef::Pool(l) => l.rate().get(),
            LimiterRef::Bursty(l) => l.rate(),
            LimiterRef::WarmingUp(l) => l.rate(),
            LimiterRef::Refill(l) => {
                let c = l.config();
                per_period(c.limit_for_period(), c.limit_refresh_period())
            }
            LimiterRef::Cycle(l) => {
                let c = l.config();
                per_period(c.limit_for_period(), c.limit_refresh_period())
            }
        }
    }

    /// Changes the rate while callers keep going, through each kind's own
    /// runtime change ([`Pacer::set_rate`], [`TokenPool::configure`], the
    /// smooth limiters' `set_rate`, Resilience4j's
    /// [`set_limit_for_period`](crate::bucket::RefillLimiter::set_limit_for_period)
    /// with `rate × period` rounded to whole permits, at least 1). Each keeps
    /// what it has already granted.
    ///
    /// # Errors
    ///
    /// The kind's [`ConfigError`] (a rate its schedule cannot keep); the
    /// limiter is then unchanged.
    ///
    /// ```
    /// use ratekeeper::config::LimiterConfig;
    /// use ratekeeper::{ManualClock, Rate};
    ///
    /// for text in ["pacer:10", "pool:10", "bursty:10", "refill:10", "cycle:10,100ms"] {
    ///     let limiter = text.parse::<LimiterConfig>()?.build_with_clock(ManualClock::new(0))?;
    ///     limiter.as_ref().set_rate(Rate::new(40.0)?)?;
    ///     assert_eq!(limiter.as_ref().rate(), 40.0, "{text}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(self, rate: Rate) -> Result<(), ConfigError> {
        let whole = |period: Duration| {
            let limit = (rate.get() * period.as_secs_f64()).round().max(1.0);
            if limit > f64::from(u32::MAX) {
                Err(PermitConfigError::LimitForPeriodTooLarge(limit as i64))
            } else {
                Ok(limit as u32)
            }
        };
        match self {
            LimiterRef::Pacer(l) => l.set_rate(rate),
            LimiterRef::ShardedPacer(l) => l.set_rate(rate),
            LimiterRef::Pool(l) => l.configure(rate, l.burst_ratio()),
            LimiterRef::Bursty(l) => l.set_rate(rate.get()),
            LimiterRef::WarmingUp(l) => l.set_rate(rate.get()),
            LimiterRef::Refill(l) => {
                l.set_limit_for_period(whole(l.config().limit_refresh_period())?)
            }
            LimiterRef::Cycle(l) => {
                l.set_limit_for_period(whole(l.config().limit_refresh_period())?)
            }
        }
    }

    /// The limiter as a trait object.
    pub fn as_dyn(self) -> &'a dyn RateLimiter {
        match self {
            LimiterRef::Pacer(l) => l,
            LimiterRef::ShardedPacer(l) => l,
            LimiterRef::Pool(l) => l,
            LimiterRef::Bursty(l) => l,
            LimiterRef::WarmingUp(l) => l,
            LimiterRef::Refill(l) => l,
            LimiterRef::Cycle(l) => l,
        }
    }
}

impl<C: Clock> fmt::Debug for LimiterRef<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimiterRef::Pacer(l) => l.fmt(f),
            LimiterRef::ShardedPacer(l) => l.fmt(f),
            LimiterRef::Pool(l) => l.fmt(f),
            LimiterRef::Bursty(l) => l.fmt(f),
            LimiterRef::WarmingUp(l) => l.fmt(f),
            LimiterRef::Refill(l) => l.fmt(f),
            LimiterRef::Cycle(l) => l.fmt(f),
        }
    }
}

impl<C: Clock + 'static> AnyLimiter<C> {
    /// The limiter by reference.
    pub fn as_ref(&self) -> LimiterRef<'_, C> {
        match self {
            AnyLimiter::Pacer(l) => LimiterRef::Pacer(l),
            AnyLimiter::ShardedPacer(l) => LimiterRef::ShardedPacer(l),
            AnyLimiter::Pool(l) => LimiterRef::Pool(l),
            AnyLimiter::Bursty(l) => LimiterRef::Bursty(l),
            AnyLimiter::WarmingUp(l) => LimiterRef::WarmingUp(l),
            AnyLimiter::Refill(l) => LimiterRef::Refill(l),
            AnyLimiter::Cycle(l) => LimiterRef::Cycle(l),
        }
    }
}

impl<C: Clock> fmt::Debug for AnyLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyLimiter::Pacer(l) => l.fmt(f),
            AnyLimiter::ShardedPacer(l) => l.fmt(f),
            AnyLimiter::Pool(l) => l.fmt(f),
            AnyLimiter::Bursty(l) => l.fmt(f),
            AnyLimiter::WarmingUp(l) => l.fmt(f),
            AnyLimiter::Refill(l) => l.fmt(f),
            AnyLimiter::Cycle(l) => l.fmt(f),
        }
    }
}

/// Forwards every method a limiter may override to the limiter itself.
impl<C: Clock + 'static> RateLimiter for AnyLimiter<C> {
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.as_ref().as_dyn().reserve(permits, max_wait)
    }
    fn clock(&self) -> &dyn Clock {
        self.as_ref().as_dyn().clock()
    }
    fn wait_stats(&self) -> WaitStats {
        self.as_ref().as_dyn().wait_stats()
    }
    fn wait_policy(&self) -> WaitPolicy {
        self.as_ref().as_dyn().wait_policy()
    }
    fn recovery(&self) -> Recovery {
        self.as_ref().as_dyn().recovery()
    }
    fn cancel(&self, grant: &Grant) -> bool {
        self.as_ref().as_dyn().cancel(grant)
    }
    fn released(&self, grant: &Grant) {
        self.as_ref().as_dyn().released(grant)
    }
    fn poll_grant(&self, grant: &Grant, now: u64, waker: &Waker) -> Readiness {
        self.as_ref().as_dyn().poll_grant(grant, now, waker)
    }
    fn wait_for(&self, grant: Grant) -> Grant {
        self.as_ref().as_dyn().wait_for(grant)
    }
    fn wait_turn(&self) {
        self.as_ref().as_dyn().wait_turn()
    }
    fn acquire_timeout(&self, permits: u32, timeout: Duration) -> Result<Grant, AcquireError> {
        self.as_ref().as_dyn().acquire_timeout(permits, timeout)
    }
}
