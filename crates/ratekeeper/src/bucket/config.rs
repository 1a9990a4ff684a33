//! The validated configurations, [`RefillConfig`] and [`CycleConfig`], and
//! their errors.

use std::time::Duration;

use crate::error::{ConfigError, ConfigReason};
use crate::rate::Rate;

/// Resilience4j's default `limitForPeriod`: 50 permits per refresh period.
pub const DEFAULT_LIMIT_FOR_PERIOD: i64 = 50;
/// Resilience4j's default `limitRefreshPeriod`: 500 ns.
pub const DEFAULT_LIMIT_REFRESH_PERIOD: Duration = Duration::from_nanos(500);
/// Resilience4j's default `timeoutDuration`: 5 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a configuration, or a change of a running limiter, was refused: the
/// detail of a [`ConfigError`], one variant per [`ConfigReason`] of the
/// same name.
///
/// ```
/// use ratekeeper::bucket::RefillConfig;
/// use ratekeeper::{ConfigErrorKind, ConfigReason};
///
/// let err = RefillConfig::builder().limit_for_period(0).build().unwrap_err();
/// assert_eq!(err.kind(), ConfigErrorKind::LimitForPeriod);
/// assert_eq!(err.reason(), ConfigReason::InvalidLimitForPeriod);
/// assert_eq!(err.to_string(), "limit for period must be at least 1, got 0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum PermitConfigError {
    /// `limit_for_period` below 1.
    #[error("limit for period must be at least 1, got {0}")]
    InvalidLimitForPeriod(i128),
    /// A refresh period shorter than 1 ns (zero or negative), in nanoseconds.
    #[error("limit refresh period must be at least 1 ns, got {0} ns")]
    InvalidLimitRefreshPeriod(i128),
    /// A refresh period that does not fit in `i64` nanoseconds (292 years).
    #[error("limit refresh period must be at most {max} ns, got {0} ns", max = i64::MAX)]
    LimitRefreshPeriodTooLarge(i128),
    /// Refill limiter: `period / limit` truncates to 0 ns per permit (more
    /// than one permit per nanosecond).
    #[error("{limit} permits per {period_nanos} ns is more than one permit per nanosecond")]
    ZeroNanosPerPermit {
        /// The limit for period.
        limit: i64,
        /// The refresh period, in nanoseconds.
        period_nanos: i64,
    },
    /// A negative timeout, in nanoseconds.
    #[error("timeout must not be negative, got {0} ns")]
    NegativeTimeout(i128),
    /// A timeout that does not fit in `i64` nanoseconds (292 years).
    #[error("timeout must be at most {max} ns, got {0} ns", max = i64::MAX)]
    TimeoutTooLarge(i128),
    /// Refill limiter: an explicit permit capacity below the limit for period.
    #[error("permit capacity {capacity} is below the limit for period {limit}")]
    CapacityBelowLimit {
        /// The capacity asked for.
        capacity: i128,
        /// The limit for period.
        limit: i64,
    },
    /// Refill limiter: a permit capacity above `i64::MAX`.
    #[error("permit capacity must be at most {max}, got {0}", max = i64::MAX)]
    CapacityTooLarge(i128),
    /// Refill limiter: initial permits below 0 or above the capacity.
    #[error("initial permits must be between 0 and the capacity {capacity}, got {initial}")]
    InitialPermitsOutOfRange {
        /// The initial permits asked for.
        initial: i128,
        /// The bucket's capacity.
        capacity: i64,
    },
    /// Refill limiter: the time to fill the whole bucket
    /// (`nanos_per_permit × capacity`) does not fit in `i64` nanoseconds.
    #[error("{capacity} permits of {nanos_per_permit} ns each take longer than {max} ns to refill", max = i64::MAX)]
    NanosPerFullCapacityOverflow {
        /// Nanoseconds per permit.
        nanos_per_permit: i64,
        /// The bucket's capacity.
        capacity: i64,
    },
    /// Cycle limiter: a permit capacity or initial permits were set (each
    /// cycle starts with `limit_for_period` permits and banks no more).
    #[error("the cycle limiter has no permit capacity or initial permits")]
    CapacityNotSupported,
    /// A limit for period above `u32::MAX` where the Rust-native API holds it
    /// in a `u32` (Resilience4j's own limit is a Java `int`).
    #[error("limit for period must be at most {max}, got {0}", max = u32::MAX)]
    LimitForPeriodTooLarge(i64),
    /// A limit for period above `i64::MAX`.
    #[error("limit for period must be at most {max}, got {0}", max = i64::MAX)]
    LimitAboveI64(i128),
    /// A limiter built from a rate: `rate × period` is not a whole number of
    /// permits, at least 1.
    #[error(
        "rate {rate} x period {} is {permits} permits per period; the limit for period must be \
         a whole number of permits, at least 1: choose a period that holds a whole number at \
         this rate{}",
        crate::error::fmt_duration(*period),
        suggestion.map(|p| format!(" (e.g. period {})", crate::error::fmt_duration(p))).unwrap_or_default()
    )]
    NotWholePermits {
        /// The rate.
        rate: f64,
        /// The period.
        period: Duration,
        /// `rate × period`.
        permits: f64,
        /// A round period (1 ms to 1000 s) that holds a whole number of
        /// permits at this rate, if any.
        suggestion: Option<Duration>,
    },
}

impl From<PermitConfigError> for crate::error::ConfigError {
    fn from(e: PermitConfigError) -> Self {
        use ConfigReason as R;
        use PermitConfigError as E;
        let reason = match e {
            E::InvalidLimitForPeriod(_) => R::InvalidLimitForPeriod,
            E::LimitForPeriodTooLarge(_) | E::LimitAboveI64(_) => R::LimitForPeriodTooLarge,
            E::InvalidLimitRefreshPeriod(_) => R::InvalidLimitRefreshPeriod,
            E::LimitRefreshPeriodTooLarge(_) => R::LimitRefreshPeriodTooLarge,
            E::ZeroNanosPerPermit { .. } => R::ZeroNanosPerPermit,
            E::NotWholePermits { .. } => R::NotWholePermits,
            E::NegativeTimeout(_) => R::NegativeTimeout,
            E::TimeoutTooLarge(_) => R::TimeoutTooLarge,
            E::CapacityBelowLimit { .. } => R::CapacityBelowLimit,
            E::CapacityTooLarge(_) => R::CapacityTooLarge,
            E::NanosPerFullCapacityOverflow { .. } => R::NanosPerFullCapacityOverflow,
            E::CapacityNotSupported => R::CapacityNotSupported,
            E::InitialPermitsOutOfRange { .. } => R::InitialPermitsOutOfRange,
        };
        ConfigError::with_reason(reason, e)
    }
}

/// A duration in signed nanoseconds, wide enough for any `Duration` and any
/// `i64`, so that negative and oversized values reach validation intact.
pub(super) type Nanos = i128;

pub(super) fn duration_nanos(d: Duration) -> Nanos {
    // `as_nanos` is at most ~1.8e28, far inside i128.
    d.as_nanos() as Nanos
}

pub(super) fn check_period(p: Nanos) -> Result<i64, PermitConfigError> {
    if p < 1 {
        return Err(PermitConfigError::InvalidLimitRefreshPeriod(p));
    }
    i64::try_from(p).map_err(|_| PermitConfigError::LimitRefreshPeriodTooLarge(p))
}

/// Validates a timeout in signed nanoseconds: `0 ..= i64::MAX`.
pub(crate) fn check_timeout(t: Nanos) -> Result<i64, PermitConfigError> {
    if t < 0 {
        return Err(PermitConfigError::NegativeTimeout(t));
    }
    i64::try_from(t).map_err(|_| PermitConfigError::TimeoutTooLarge(t))
}

/// Validates a timeout given as a `Duration`.
pub(crate) fn check_timeout_duration(t: Duration) -> Result<i64, PermitConfigError> {
    check_timeout(duration_nanos(t))
}

pub(super) fn check_limit(l: i128) -> Result<i64, PermitConfigError> {
    if l < 1 {
        return Err(PermitConfigError::InvalidLimitForPeriod(l));
    }
    i64::try_from(l).map_err(|_| PermitConfigError::LimitAboveI64(l))
}

/// `period / limit`, truncating; at least 1 ns.
pub(crate) fn nanos_per_permit(limit: i64, period: i64) -> Result<i64, PermitConfigError> {
    match period / limit {
        0 => Err(PermitConfigError::ZeroNanosPerPermit {
            limit,
            period_nanos: period,
        }),
        npp => Ok(npp),
    }
}

/// `npp × capacity`, if it fits in `i64`.
pub(crate) fn full_capacity_nanos(npp: i64, capacity: i64) -> Result<i64, PermitConfigError> {
    npp.checked_mul(capacity)
        .ok_or(PermitConfigError::NanosPerFullCapacityOverflow {
            nanos_per_permit: npp,
            capacity,
        })
}

fn nanos(n: i64) -> Duration {
    // Validated values are never negative.
    Duration::from_nanos(n.max(0) as u64)
}

/// A validated configuration of a [`RefillLimiter`](super::RefillLimiter):
/// `limit_for_period` per `limit_refresh_period`, at most `capacity`
/// permits, `initial_permits` at creation. Build it with
/// [`RefillConfig::builder`]; the default is Resilience4j's.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::bucket::RefillConfig;
///
/// let c = RefillConfig::default();
/// assert_eq!((c.limit_for_period(), c.nanos_per_permit(), c.capacity()), (50, 10, 50));
/// assert_eq!(c.nanos_per_full_capacity(), 500);
///
/// // 3 per second truncates to 333 333 333 ns per permit.
/// let c = RefillConfig::builder()
///     .limit_for_period(3)
///     .limit_refresh_period(Duration::from_nanos(1_000_000_000))
///     .build()?;
/// assert_eq!(c.nanos_per_permit(), 333_333_333);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefillConfig {
    pub(super) limit: i64,
    pub(super) period: i64,
    pub(super) timeout: i64,
    pub(super) capacity: i64,
    pub(super) initial: i64,
}

impl Default for RefillConfig {
    fn default() -> Self {
        RefillConfig {
            limit: DEFAULT_LIMIT_FOR_PERIOD,
            period: DEFAULT_LIMIT_REFRESH_PERIOD.as_nanos() as i64,
            timeout: DEFAULT_TIMEOUT.as_nanos() as i64,
            capacity: DEFAULT_LIMIT_FOR_PERIOD,
            initial: DEFAULT_LIMIT_FOR_PERIOD,
        }
    }
}

impl RefillConfig {
    /// Crate-internal: a config from already validated parts.
    pub(crate) fn from_parts(
        limit: i64,
        period: i64,
        timeout: i64,
        capacity: i64,
        initial: i64,
    ) -> RefillConfig {
        RefillConfig {
            limit,
            period,
            timeout,
            capacity,
            initial,
        }
    }

    /// Permits per refresh period, as configured (or last changed).
    pub fn limit_for_period(&self) -> i64 {
        self.limit
    }

    /// The refresh period, as configured.
    pub fn limit_refresh_period(&self) -> Duration {
        nanos(self.period)
    }

    /// How long an acquire may wait in Resilience4j's interface; the core
    /// limiters take their maximum wait per call.
    pub fn timeout(&self) -> Duration {
        nanos(self.timeout)
    }

    /// The most permits the bucket holds.
    pub fn capacity(&self) -> i64 {
        self.capacity
    }

    /// The permits in the bucket when the limiter is created.
    pub fn initial_permits(&self) -> i64 {
        self.initial
    }

    /// The time one permit takes to refill: `limit_refresh_period /
    /// limit_for_period`, truncated to whole nanoseconds.
    pub fn nanos_per_permit(&self) -> u64 {
        (self.period / self.limit) as u64
    }

    /// `nanos_per_permit × capacity`: the time an empty bucket takes to fill.
    pub fn nanos_per_full_capacity(&self) -> u64 {
        self.nanos_per_permit() * self.capacity as u64
    }

    /// This configuration with `timeout` instead of its own.
    ///
    /// # Errors
    ///
    /// [`TimeoutTooLarge`](crate::ConfigReason::TimeoutTooLarge) above `i64::MAX` ns.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ConfigError> {
        self.timeout = check_timeout_duration(timeout)?;
        Ok(self)
    }
}

/// A validated configuration of a [`CycleLimiter`](super::CycleLimiter)
/// (Resilience4j's `RateLimiterConfig`): `limit_for_period` permits per
/// cycle of `limit_refresh_period`, and a timeout. The default is
/// Resilience4j's.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::bucket::CycleConfig;
///
/// let c = CycleConfig::default();
/// assert_eq!((c.limit_for_period(), c.timeout()), (50, Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleConfig {
    pub(super) limit: i64,
    pub(super) period: i64,
    pub(super) timeout: i64,
}

impl Default for CycleConfig {
    fn default() -> Self {
        CycleConfig {
            limit: DEFAULT_LIMIT_FOR_PERIOD,
            period: DEFAULT_LIMIT_REFRESH_PERIOD.as_nanos() as i64,
            timeout: DEFAULT_TIMEOUT.as_nanos() as i64,
        }
    }
}

impl CycleConfig {
    /// Crate-internal: a config from already validated parts.
    pub(crate) fn from_parts(limit: i64, period: i64, timeout: i64) -> CycleConfig {
        CycleConfig {
            limit,
            period,
            timeout,
        }
    }

    /// Permits per cycle, as configured (or last changed).
    pub fn limit_for_period(&self) -> i64 {
        self.limit
    }

    /// The cycle length.
    pub fn limit_refresh_period(&self) -> Duration {
        nanos(self.period)
    }

    /// As [`RefillConfig::timeout`].
    pub fn timeout(&self) -> Duration {
        nanos(self.timeout)
    }

    /// This configuration with `timeout` instead of its own.
    ///
    /// # Errors
    ///
    /// [`TimeoutTooLarge`](crate::ConfigReason::TimeoutTooLarge) above `i64::MAX` ns.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ConfigError> {
        self.timeout = check_timeout_duration(timeout)?;
        Ok(self)
    }
}

/// The limit for period a rate gives over `period`: `rate × period`, which
/// must be a whole number of permits (within 1e-9 relative), at least 1.
///
/// # Errors
///
/// [`NotWholePermits`](crate::ConfigReason::NotWholePermits), whose message
/// names the [`whole_period`] for this rate, if there is one.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::bucket::{limit_for_rate, whole_period};
/// use ratekeeper::{ConfigReason, Rate};
///
/// assert_eq!(limit_for_rate(Rate::new(1000.0)?, Duration::from_millis(100))?, 100);
/// let err = limit_for_rate(Rate::new(0.5)?, Duration::from_secs(1)).unwrap_err();
/// assert_eq!(err.reason(), ConfigReason::NotWholePermits);
/// assert_eq!(whole_period(Rate::new(0.5)?), Some(Duration::from_secs(10)));
/// # Ok::<(), ratekeeper::ConfigError>(())
/// ```
pub fn limit_for_rate(rate: Rate, period: Duration) -> Result<i64, ConfigError> {
    match whole_permits(rate, period) {
        (_, Some(limit)) => Ok(limit),
        (permits, None) => Err(PermitConfigError::NotWholePermits {
            rate: rate.get(),
            period,
            permits,
            suggestion: whole_period(rate),
        }
        .into()),
    }
}

/// The first round period (1 ms, 10 ms, ... 1000 s) that holds a whole
/// number of permits, at least 1, at `rate`; `None` if none does.
pub fn whole_period(rate: Rate) -> Option<Duration> {
    [1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0, 1000.0]
        .into_iter()
        .map(Duration::from_secs_f64)
        .find(|p| whole_permits(rate, *p).1.is_some())
}

/// `rate × period`, and that as a whole number of permits if it is one.
fn whole_permits(rate: Rate, period: Duration) -> (f64, Option<i64>) {
    let exact = rate.get() * period.as_secs_f64();
    let limit = exact.round();
    let ok =
        (exact - limit).abs() <= 1e-9 * limit.max(1.0) && limit >= 1.0 && limit < i64::MAX as f64;
    (exact, ok.then_some(limit as i64))
}
