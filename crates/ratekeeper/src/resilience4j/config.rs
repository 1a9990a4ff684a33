//! Configuration of the Resilience4j-style limiters: one builder, validated
//! into a [`RefillConfig`] (token bucket) or a [`CycleConfig`] (fixed cycles).

use std::time::Duration;

/// Resilience4j's default `limitForPeriod`: 50 permits per refresh period.
pub const DEFAULT_LIMIT_FOR_PERIOD: i64 = 50;
/// Resilience4j's default `limitRefreshPeriod`: 500 ns.
pub const DEFAULT_LIMIT_REFRESH_PERIOD: Duration = Duration::from_nanos(500);
/// Resilience4j's default `timeoutDuration`: 5 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a configuration, or a change of a running limiter, was refused.
///
/// Every variant is a value the caller supplied; no configuration ever
/// panics. The names follow the conformance vectors' `error_kinds`.
///
/// # Examples
///
/// ```
/// use ratekeeper::refill::{ConfigError, RefillConfig};
///
/// let err = RefillConfig::builder().limit_for_period(0).build().unwrap_err();
/// assert_eq!(err, ConfigError::InvalidLimitForPeriod(0));
/// assert_eq!(err.to_string(), "limit for period must be at least 1, got 0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `limit_for_period` below 1.
    #[error("limit for period must be at least 1, got {0}")]
    InvalidLimitForPeriod(i64),
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
        capacity: i64,
        /// The limit for period.
        limit: i64,
    },
    /// Refill limiter: initial permits below 0 or above the capacity.
    #[error("initial permits must be between 0 and the capacity {capacity}, got {initial}")]
    InitialPermitsOutOfRange {
        /// The initial permits asked for.
        initial: i64,
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
    /// Cycle limiter: a permit capacity or initial permits were set. The
    /// cycle limiter always starts a cycle with `limit_for_period` permits
    /// and banks no more (Resilience4j's `AtomicRateLimiter` has neither
    /// setting).
    #[error("the cycle limiter has no permit capacity or initial permits")]
    CapacityNotSupported,
}

/// A duration in signed nanoseconds, wide enough for any `Duration` and any
/// `i64`, so that negative and oversized values reach validation intact.
type Nanos = i128;

fn duration_nanos(d: Duration) -> Nanos {
    // `as_nanos` is at most ~1.8e28, far inside i128.
    d.as_nanos() as Nanos
}

fn check_period(p: Nanos) -> Result<i64, ConfigError> {
    if p < 1 {
        return Err(ConfigError::InvalidLimitRefreshPeriod(p));
    }
    i64::try_from(p).map_err(|_| ConfigError::LimitRefreshPeriodTooLarge(p))
}

/// Validates a timeout in signed nanoseconds: `0 ..= i64::MAX`.
pub(crate) fn check_timeout(t: Nanos) -> Result<i64, ConfigError> {
    if t < 0 {
        return Err(ConfigError::NegativeTimeout(t));
    }
    i64::try_from(t).map_err(|_| ConfigError::TimeoutTooLarge(t))
}

/// Validates a timeout given as a `Duration`.
pub(crate) fn check_timeout_duration(t: Duration) -> Result<i64, ConfigError> {
    check_timeout(duration_nanos(t))
}

fn check_limit(l: i64) -> Result<i64, ConfigError> {
    if l < 1 {
        Err(ConfigError::InvalidLimitForPeriod(l))
    } else {
        Ok(l)
    }
}

/// The configuration of a [`RefillLimiter`](super::RefillLimiter) or a
/// [`CycleLimiter`](super::CycleLimiter), before validation.
///
/// Every field is optional; an unset field takes Resilience4j's default when
/// read (`get_*`) or built. Setters take values by value and return the
/// builder. Durations can be given as [`Duration`]s or, like Java's signed
/// `Duration`, as signed nanoseconds (`*_nanos`), so that a negative value
/// from a configuration file reaches validation and is refused with a typed
/// error instead of being unrepresentable.
///
/// | field | default | refill limiter | cycle limiter |
/// |---|---|---|---|
/// | `limit_for_period` | 50 (R4J) | `>= 1`; permits per period | `>= 1`; permits per cycle |
/// | `limit_refresh_period` | 500 ns (R4J) | `1 ns ..= i64::MAX ns`; `period / limit >= 1 ns` | `1 ns ..= i64::MAX ns` |
/// | `timeout` | 5 s (R4J) | `0 ..= i64::MAX ns` | `0 ..= i64::MAX ns` |
/// | `permit_capacity` | `limit_for_period` (RRL) | `>= limit_for_period` | must be unset |
/// | `initial_permits` | `limit_for_period` (RRL; not the capacity) | `0 ..= capacity` | must be unset |
///
/// [`build`](ConfigBuilder::build) validates for the refill limiter,
/// [`build_cycle`](ConfigBuilder::build_cycle) for the cycle limiter;
/// [`overwrite`](ConfigBuilder::overwrite) merges a per-instance
/// configuration over shared defaults.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::refill::RefillConfig;
///
/// let config = RefillConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1))
///     .permit_capacity(20)
///     .timeout(Duration::ZERO)
///     .build()?;
/// assert_eq!(config.nanos_per_permit(), 100_000_000);
/// assert_eq!(config.capacity(), 20);
/// assert_eq!(config.initial_permits(), 10); // defaults to the limit
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConfigBuilder {
    limit_for_period: Option<i64>,
    limit_refresh_period: Option<Nanos>,
    timeout: Option<Nanos>,
    permit_capacity: Option<i64>,
    initial_permits: Option<i64>,
}

impl ConfigBuilder {
    /// A builder with every field unset (Resilience4j's defaults).
    pub fn new() -> ConfigBuilder {
        ConfigBuilder::default()
    }

    /// Permits per refresh period (Resilience4j `limitForPeriod`).
    pub fn limit_for_period(mut self, limit: i64) -> Self {
        self.limit_for_period = Some(limit);
        self
    }

    /// The refresh period (Resilience4j `limitRefreshPeriod`).
    pub fn limit_refresh_period(mut self, period: Duration) -> Self {
        self.limit_refresh_period = Some(duration_nanos(period));
        self
    }

    /// The refresh period in signed nanoseconds.
    pub fn limit_refresh_period_nanos(mut self, nanos: i64) -> Self {
        self.limit_refresh_period = Some(Nanos::from(nanos));
        self
    }

    /// How long an acquire may wait (Resilience4j `timeoutDuration`).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(duration_nanos(timeout));
        self
    }

    /// The timeout in signed nanoseconds.
    pub fn timeout_nanos(mut self, nanos: i64) -> Self {
        self.timeout = Some(Nanos::from(nanos));
        self
    }

    /// Refill limiter: the most permits the bucket holds (refill-rate-limiter
    /// `permitCapacity`).
    pub fn permit_capacity(mut self, capacity: i64) -> Self {
        self.permit_capacity = Some(capacity);
        self
    }

    /// Refill limiter: the permits in the bucket when the limiter is created
    /// (refill-rate-limiter `initialPermits`).
    pub fn initial_permits(mut self, initial: i64) -> Self {
        self.initial_permits = Some(initial);
        self
    }

    /// The limit for period, or its default (50).
    pub fn get_limit_for_period(&self) -> i64 {
        self.limit_for_period.unwrap_or(DEFAULT_LIMIT_FOR_PERIOD)
    }

    /// The refresh period in nanoseconds, or its default (500).
    pub fn get_limit_refresh_period_nanos(&self) -> i128 {
        self.limit_refresh_period
            .unwrap_or(duration_nanos(DEFAULT_LIMIT_REFRESH_PERIOD))
    }

    /// The timeout in nanoseconds, or its default (5 s).
    pub fn get_timeout_nanos(&self) -> i128 {
        self.timeout.unwrap_or(duration_nanos(DEFAULT_TIMEOUT))
    }

    /// The permit capacity, if set (unset: the limit for period).
    pub fn get_permit_capacity(&self) -> Option<i64> {
        self.permit_capacity
    }

    /// The initial permits, if set (unset: the limit for period).
    pub fn get_initial_permits(&self) -> Option<i64> {
        self.initial_permits
    }

    /// This builder with every field that `other` sets taken from `other`:
    /// shared defaults overwritten by one instance's settings.
    ///
    /// ```
    /// use ratekeeper::refill::ConfigBuilder;
    ///
    /// let defaults = ConfigBuilder::new().limit_for_period(10).timeout_nanos(0);
    /// let merged = defaults.overwrite(ConfigBuilder::new().limit_for_period(20));
    /// assert_eq!(merged.get_limit_for_period(), 20);
    /// assert_eq!(merged.get_timeout_nanos(), 0);
    /// ```
    pub fn overwrite(self, other: ConfigBuilder) -> ConfigBuilder {
        ConfigBuilder {
            limit_for_period: other.limit_for_period.or(self.limit_for_period),
            limit_refresh_period: other.limit_refresh_period.or(self.limit_refresh_period),
            timeout: other.timeout.or(self.timeout),
            permit_capacity: other.permit_capacity.or(self.permit_capacity),
            initial_permits: other.initial_permits.or(self.initial_permits),
        }
    }

    /// Validates the fields both limiters share: limit, period, timeout.
    fn common(&self) -> Result<(i64, i64, i64), ConfigError> {
        let limit = check_limit(self.get_limit_for_period())?;
        let period = check_period(self.get_limit_refresh_period_nanos())?;
        let timeout = check_timeout(self.get_timeout_nanos())?;
        Ok((limit, period, timeout))
    }

    /// Validates for the [`RefillLimiter`](super::RefillLimiter).
    ///
    /// # Errors
    ///
    /// In this order: [`ConfigError::InvalidLimitForPeriod`],
    /// [`InvalidLimitRefreshPeriod`](ConfigError::InvalidLimitRefreshPeriod) /
    /// [`LimitRefreshPeriodTooLarge`](ConfigError::LimitRefreshPeriodTooLarge),
    /// [`NegativeTimeout`](ConfigError::NegativeTimeout) /
    /// [`TimeoutTooLarge`](ConfigError::TimeoutTooLarge),
    /// [`ZeroNanosPerPermit`](ConfigError::ZeroNanosPerPermit),
    /// [`CapacityBelowLimit`](ConfigError::CapacityBelowLimit),
    /// [`InitialPermitsOutOfRange`](ConfigError::InitialPermitsOutOfRange),
    /// [`NanosPerFullCapacityOverflow`](ConfigError::NanosPerFullCapacityOverflow).
    pub fn build(&self) -> Result<RefillConfig, ConfigError> {
        let (limit, period, timeout) = self.common()?;
        let npp = nanos_per_permit(limit, period)?;
        let capacity = match self.permit_capacity {
            None => limit,
            Some(c) if c < limit => {
                return Err(ConfigError::CapacityBelowLimit { capacity: c, limit })
            }
            Some(c) => c,
        };
        let initial = self.initial_permits.unwrap_or(limit);
        if !(0..=capacity).contains(&initial) {
            return Err(ConfigError::InitialPermitsOutOfRange { initial, capacity });
        }
        full_capacity_nanos(npp, capacity)?;
        Ok(RefillConfig {
            limit,
            period,
            timeout,
            capacity,
            initial,
        })
    }

    /// Validates for the [`CycleLimiter`](super::CycleLimiter).
    ///
    /// # Errors
    ///
    /// The limit, period and timeout errors of [`build`](Self::build), then
    /// [`ConfigError::CapacityNotSupported`] if a permit capacity or initial
    /// permits were set.
    pub fn build_cycle(&self) -> Result<CycleConfig, ConfigError> {
        let (limit, period, timeout) = self.common()?;
        if self.permit_capacity.is_some() || self.initial_permits.is_some() {
            return Err(ConfigError::CapacityNotSupported);
        }
        Ok(CycleConfig {
            limit,
            period,
            timeout,
        })
    }
}

/// `period / limit`, truncating; at least 1 ns.
pub(crate) fn nanos_per_permit(limit: i64, period: i64) -> Result<i64, ConfigError> {
    match period / limit {
        0 => Err(ConfigError::ZeroNanosPerPermit {
            limit,
            period_nanos: period,
        }),
        npp => Ok(npp),
    }
}

/// `npp × capacity`, if it fits in `i64`.
pub(crate) fn full_capacity_nanos(npp: i64, capacity: i64) -> Result<i64, ConfigError> {
    npp.checked_mul(capacity)
        .ok_or(ConfigError::NanosPerFullCapacityOverflow {
            nanos_per_permit: npp,
            capacity,
        })
}

impl TryFrom<ConfigBuilder> for RefillConfig {
    type Error = ConfigError;
    fn try_from(b: ConfigBuilder) -> Result<RefillConfig, ConfigError> {
        b.build()
    }
}

impl TryFrom<ConfigBuilder> for CycleConfig {
    type Error = ConfigError;
    fn try_from(b: ConfigBuilder) -> Result<CycleConfig, ConfigError> {
        b.build_cycle()
    }
}

/// What Resilience4j's `getRateLimiterConfig()` reports: limit for period,
/// refresh period and timeout.
///
/// For a [`RefillLimiter`](super::RefillLimiter) this is refill-rate-limiter's
/// view: the *capacity* per the time it takes to refill it
/// (`nanos_per_permit × capacity`), the same rate expressed as the burst.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::refill::RefillConfig;
///
/// let view = RefillConfig::builder()
///     .limit_for_period(50)
///     .limit_refresh_period_nanos(500)
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

fn nanos(n: i64) -> Duration {
    // Validated values are never negative.
    Duration::from_nanos(n.max(0) as u64)
}

/// A validated configuration of a [`RefillLimiter`](super::RefillLimiter):
/// a token bucket refilled at `limit_for_period` per `limit_refresh_period`,
/// holding at most `capacity` permits, starting with `initial_permits`.
///
/// Build it with [`RefillConfig::builder`]; [`RefillConfig::default`] is
/// Resilience4j's defaults: 50 permits per 500 ns (10 ns per permit), capacity
/// 50, 50 initial permits, a 5 s timeout.
///
/// # Examples
///
/// ```
/// use ratekeeper::refill::RefillConfig;
///
/// let c = RefillConfig::default();
/// assert_eq!((c.limit_for_period(), c.nanos_per_permit(), c.capacity()), (50, 10, 50));
/// assert_eq!(c.nanos_per_full_capacity(), 500);
///
/// // 3 per second truncates to 333 333 333 ns per permit.
/// let c = RefillConfig::builder()
///     .limit_for_period(3)
///     .limit_refresh_period_nanos(1_000_000_000)
///     .build()?;
/// assert_eq!(c.nanos_per_permit(), 333_333_333);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefillConfig {
    limit: i64,
    period: i64,
    timeout: i64,
    capacity: i64,
    initial: i64,
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
    /// A builder with every field unset; finish with
    /// [`build`](ConfigBuilder::build).
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::new()
    }

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

    /// How long an acquire may wait.
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

    /// `limit_refresh_period / limit_for_period` in whole nanoseconds
    /// (truncating, as refill-rate-limiter): the time one permit takes to
    /// refill.
    pub fn nanos_per_permit(&self) -> u64 {
        (self.period / self.limit) as u64
    }

    /// `nanos_per_permit × capacity`: the time an empty bucket takes to fill.
    pub fn nanos_per_full_capacity(&self) -> u64 {
        self.nanos_per_permit() * self.capacity as u64
    }

    /// The Resilience4j view (refill-rate-limiter's `rateLimiterConfig()`):
    /// `capacity` permits per `nanos_per_full_capacity`.
    pub fn view(&self) -> ConfigView {
        ConfigView {
            limit_for_period: self.capacity,
            limit_refresh_period: Duration::from_nanos(self.nanos_per_full_capacity()),
            timeout: nanos(self.timeout),
        }
    }

    /// The same configuration as a builder (every field set), e.g. to
    /// derive a variant.
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder::new()
            .limit_for_period(self.limit)
            .limit_refresh_period_nanos(self.period)
            .timeout_nanos(self.timeout)
            .permit_capacity(self.capacity)
            .initial_permits(self.initial)
    }
}

/// A validated configuration of a [`CycleLimiter`](super::CycleLimiter):
/// `limit_for_period` permits every `limit_refresh_period`, counted in cycles
/// from the limiter's creation, and a timeout. Resilience4j's
/// `RateLimiterConfig`; [`CycleConfig::default`] is its defaults (50 per
/// 500 ns, timeout 5 s).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::refill::CycleConfig;
///
/// let c = CycleConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1))
///     .build_cycle()?;
/// assert_eq!(c.view().limit_for_period, 10);
/// assert_eq!(c.timeout(), Duration::from_secs(5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleConfig {
    limit: i64,
    period: i64,
    timeout: i64,
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
    /// A builder with every field unset; finish with
    /// [`build_cycle`](ConfigBuilder::build_cycle).
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::new()
    }

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

    /// How long an acquire may wait.
    pub fn timeout(&self) -> Duration {
        nanos(self.timeout)
    }

    /// The Resilience4j view: the configuration itself.
    pub fn view(&self) -> ConfigView {
        ConfigView {
            limit_for_period: self.limit,
            limit_refresh_period: nanos(self.period),
            timeout: nanos(self.timeout),
        }
    }

    /// The same configuration as a builder (every field set).
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder::new()
            .limit_for_period(self.limit)
            .limit_refresh_period_nanos(self.period)
            .timeout_nanos(self.timeout)
    }
}
