//! [`PermitLimiter`], Resilience4j's rate limiter interface, and the values
//! it answers with.

use std::sync::Arc;
use std::time::Duration;

use ratekeeper::bucket::{CycleConfig, RefillConfig};
use ratekeeper::{AcquireError, ConfigError, Grant};

use crate::events::{EventPublisher, PermitEvent};
use crate::pending::PendingPermission;

/// The answer to a reservation ([`PermitLimiter::reserve_permission`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_resilience4j::Permission;
///
/// assert_eq!(Permission::Now.nanos_to_wait(), 0);
/// assert_eq!(Permission::After(Duration::from_nanos(250)).nanos_to_wait(), 250);
/// assert_eq!(Permission::Refused.nanos_to_wait(), -1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Granted: the permits may be used now.
    Now,
    /// Reserved: the permits may be used after this wait (at most the
    /// limiter's timeout).
    After(Duration),
    /// Refused: the wait would exceed the timeout. Nothing was reserved.
    Refused,
}

impl Permission {
    /// Resilience4j's `reservePermission` value: `0` (now), the wait in
    /// nanoseconds (reserved), or `-1` (refused).
    pub fn nanos_to_wait(&self) -> i64 {
        match self {
            Permission::Now => 0,
            // A reservation's wait is within a timeout of at most i64::MAX ns.
            Permission::After(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Permission::Refused => -1,
        }
    }

    /// Whether the permits were granted (now or after a wait).
    pub fn is_granted(&self) -> bool {
        !matches!(self, Permission::Refused)
    }
}

/// A request that can never be granted as asked.
///
/// # Examples
///
/// ```
/// use ratekeeper::ManualClock;
/// use ratekeeper_resilience4j::{PermitError, PermitLimiter, RefillConfig, RefillLimiter};
///
/// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
/// assert_eq!(limiter.reserve_permission(0), Err(PermitError::InvalidPermits));
/// assert_eq!(
///     limiter.acquire_permission(51),
///     Err(PermitError::ExceedsCapacity { requested: 51, capacity: 50 })
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermitError {
    /// Zero permits were asked for.
    #[error("permits must be at least 1")]
    InvalidPermits,
    /// More permits than the bucket can ever hold (refill limiter).
    #[error("cannot take {requested} permits at once: the capacity is {capacity}")]
    ExceedsCapacity {
        /// Permits asked for.
        requested: u32,
        /// The bucket's capacity.
        capacity: i64,
    },
}

impl From<PermitError> for AcquireError {
    fn from(e: PermitError) -> AcquireError {
        match e {
            PermitError::InvalidPermits => AcquireError::ZeroPermits,
            PermitError::ExceedsCapacity {
                requested,
                capacity,
            } => AcquireError::InsufficientCapacity {
                requested,
                max: u32::try_from(capacity).unwrap_or(u32::MAX),
            },
        }
    }
}

/// A snapshot of a limiter's state: Resilience4j's (detailed) metrics.
///
/// All are estimates as of the moment they were read; none changes the
/// limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Permits available now; negative while permits are reserved ahead.
    pub available_permissions: i64,
    /// Acquisitions currently waiting for a reservation (live
    /// [`PendingPermission`]s that have a wait).
    pub waiting_threads: u64,
    /// How long one permit would have to wait now (0 if available).
    pub nanos_to_wait: u64,
    /// Cycle limiter: the current cycle since creation. `None` for the
    /// refill limiter.
    pub cycle: Option<u64>,
}

/// The Resilience4j rate limiter interface, implemented by [`RefillLimiter`](crate::RefillLimiter)
/// and [`CycleLimiter`](crate::CycleLimiter) (and forwarded by `&L` and `Arc<L>`).
///
/// Every method takes `&self`; a limiter is shared by reference or in an
/// `Arc`. See the [crate docs](crate) for the mapping to Resilience4j.
pub trait PermitLimiter {
    /// The limiter's name.
    fn name(&self) -> &str;

    /// Resilience4j's `getRateLimiterConfig()` view, as of now.
    fn config_view(&self) -> ConfigView;

    /// Decides at once whether `permits` are granted within the current
    /// timeout and returns the decision as a [`PendingPermission`], without
    /// blocking. A refusal is final (and its `FAILED_ACQUIRE` event is
    /// published now); a grant with a wait counts as a waiting thread until
    /// the pending value is finished, waited on or abandoned.
    ///
    /// # Errors
    ///
    /// [`PermitError::InvalidPermits`] for zero,
    /// [`PermitError::ExceedsCapacity`] above a refill limiter's capacity.
    /// Nothing is published.
    fn begin_acquire_permission(&self, permits: u32) -> Result<PendingPermission<'_>, PermitError>;

    /// Resilience4j's `reservePermission`: decides at once, reserving the
    /// permits if they can go within the timeout, and never waits. Publishes
    /// `SUCCESSFUL_ACQUIRE` for [`Permission::Now`] and
    /// [`Permission::After`], `FAILED_ACQUIRE` for [`Permission::Refused`].
    ///
    /// # Errors
    ///
    /// As [`begin_acquire_permission`](Self::begin_acquire_permission).
    fn reserve_permission(&self, permits: u32) -> Result<Permission, PermitError>;

    /// Drops the permits available now (keeping reservations) and returns how
    /// many were dropped; publishes `DRAINED` with that count.
    fn drain_permissions(&self) -> u64;

    /// Sets the limit for period, from the next call on, keeping the permits
    /// available or owed (see each limiter).
    ///
    /// # Errors
    ///
    /// [`InvalidLimitForPeriod`](ratekeeper::ConfigReason::InvalidLimitForPeriod)
    /// for 0; for the refill limiter also
    /// [`ZeroNanosPerPermit`](ratekeeper::ConfigReason::ZeroNanosPerPermit) and
    /// [`NanosPerFullCapacityOverflow`](ratekeeper::ConfigReason::NanosPerFullCapacityOverflow).
    /// The limiter is then unchanged. (A signed limit, as Resilience4j takes it, goes
    /// through [`compat::change_limit_for_period`](crate::compat::change_limit_for_period).)
    fn change_limit_for_period(&self, limit: u32) -> Result<(), ConfigError>;

    /// Sets the timeout for calls made from now on; callers already waiting
    /// keep their deadlines.
    ///
    /// # Errors
    ///
    /// [`TimeoutTooLarge`](ratekeeper::ConfigReason::TimeoutTooLarge) beyond
    /// `i64::MAX` ns.
    fn change_timeout(&self, timeout: Duration) -> Result<(), ConfigError>;

    /// The limiter's metrics now.
    fn metrics(&self) -> Metrics;

    /// The limiter's event publisher.
    fn events(&self) -> &EventPublisher<PermitEvent>;

    /// Resilience4j's `acquirePermission`: takes `permits` if they can go
    /// within the current timeout, blocking the thread until they may go;
    /// returns `Ok(false)` at once, with nothing reserved, if they cannot.
    ///
    /// Blocks the calling thread: do not call it from an async task (use
    /// [`begin_acquire_permission`](Self::begin_acquire_permission) and the
    /// runtime's timer).
    ///
    /// # Errors
    ///
    /// As [`begin_acquire_permission`](Self::begin_acquire_permission).
    fn acquire_permission(&self, permits: u32) -> Result<bool, PermitError> {
        Ok(self.begin_acquire_permission(permits)?.wait())
    }

    /// A call guarded by this limiter finished with `result`: drains the
    /// limiter if `drain_when(result)` says so (Resilience4j's
    /// `drainPermissionsOnResult`, consulted by `onResult` / `onError`), and
    /// returns the permits drained.
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// let too_many: Result<(), u16> = Err(429);
    /// let drained = limiter.on_result(&too_many, |r| matches!(r, Err(429)));
    /// assert_eq!(drained, Some(50));
    /// assert_eq!(limiter.metrics().available_permissions, 0);
    /// ```
    fn on_result<T, E>(
        &self,
        result: &Result<T, E>,
        drain_when: impl FnOnce(&Result<T, E>) -> bool,
    ) -> Option<u64>
    where
        Self: Sized,
    {
        drain_when(result).then(|| self.drain_permissions())
    }
}

macro_rules! forward_permit_limiter {
    ($($ty:ty),*) => {$(
        impl<L: PermitLimiter + ?Sized> PermitLimiter for $ty {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn config_view(&self) -> ConfigView {
                (**self).config_view()
            }
            fn begin_acquire_permission(&self, permits: u32) -> Result<PendingPermission<'_>, PermitError> {
                (**self).begin_acquire_permission(permits)
            }
            fn reserve_permission(&self, permits: u32) -> Result<Permission, PermitError> {
                (**self).reserve_permission(permits)
            }
            fn drain_permissions(&self) -> u64 {
                (**self).drain_permissions()
            }
            fn change_limit_for_period(&self, limit: u32) -> Result<(), ConfigError> {
                (**self).change_limit_for_period(limit)
            }
            fn change_timeout(&self, timeout: Duration) -> Result<(), ConfigError> {
                (**self).change_timeout(timeout)
            }
            fn metrics(&self) -> Metrics {
                (**self).metrics()
            }
            fn events(&self) -> &EventPublisher<PermitEvent> {
                (**self).events()
            }
            fn acquire_permission(&self, permits: u32) -> Result<bool, PermitError> {
                (**self).acquire_permission(permits)
            }
        }
    )*};
}

forward_permit_limiter!(&L, Arc<L>);

/// What Resilience4j's `getRateLimiterConfig()` reports: limit for period,
/// refresh period and timeout.
///
/// For a [`RefillLimiter`](crate::RefillLimiter) this is refill-rate-limiter's
/// view: the *capacity* per the time it takes to refill it
/// (`nanos_per_permit × capacity`), the same rate expressed as the burst.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::bucket::RefillConfig;
/// use ratekeeper_resilience4j::View;
///
/// let view = RefillConfig::builder()
///     .limit_for_period(50)
///     .limit_refresh_period(Duration::from_nanos(500))
///     .permit_capacity(60)
///     .build()?
///     .view();
/// assert_eq!(view.limit_for_period, 60);
/// assert_eq!(view.limit_refresh_period, Duration::from_nanos(600));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigView {
    /// Permits per refresh period.
    pub limit_for_period: i64,
    /// The refresh period.
    pub limit_refresh_period: Duration,
    /// How long an acquire may wait.
    pub timeout: Duration,
}

/// A bucket configuration as Resilience4j reports it ([`ConfigView`]).
pub trait View {
    /// The Resilience4j view of this configuration.
    fn view(&self) -> ConfigView;
}

impl View for RefillConfig {
    fn view(&self) -> ConfigView {
        ConfigView {
            limit_for_period: self.capacity(),
            limit_refresh_period: Duration::from_nanos(self.nanos_per_full_capacity()),
            timeout: self.timeout(),
        }
    }
}

impl View for CycleConfig {
    fn view(&self) -> ConfigView {
        ConfigView {
            limit_for_period: self.limit_for_period(),
            limit_refresh_period: self.limit_refresh_period(),
            timeout: self.timeout(),
        }
    }
}

/// The answer of a core limiter's reservation as Resilience4j's: the grant,
/// `None` for a refusal (a wait beyond the timeout, or past the limiter's
/// horizon), or the error of a request that can never be granted.
pub(crate) fn permission_of(
    outcome: Result<Grant, AcquireError>,
) -> Result<Option<Grant>, PermitError> {
    match outcome {
        Ok(g) => Ok(Some(g)),
        Err(AcquireError::ZeroPermits) => Err(PermitError::InvalidPermits),
        Err(AcquireError::InsufficientCapacity { requested, max }) => {
            Err(PermitError::ExceedsCapacity {
                requested,
                capacity: i64::from(max),
            })
        }
        Err(_) => Ok(None),
    }
}
