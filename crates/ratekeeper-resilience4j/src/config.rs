//! [`ConfigBuilder`]: Resilience4j's layered configuration, every field
//! optional and signed as in Java, validated into the core's
//! [`RefillConfig`] and [`CycleConfig`].
//!
//! A negative count or duration is representable here, so that a value
//! from a configuration file is refused with a typed error; what is left
//! after the signs is handed to the core's typed builders, which check the
//! rest. The checks run in Java's order: the limit, the period, the
//! timeout, nanoseconds per permit, the capacity, the initial permits, the
//! full-bucket time.

use std::time::Duration;

use ratekeeper::bucket::{
    CycleConfig, RefillConfig, RefillConfigBuilder, DEFAULT_LIMIT_FOR_PERIOD,
    DEFAULT_LIMIT_REFRESH_PERIOD, DEFAULT_TIMEOUT,
};
use ratekeeper::{ConfigError, ConfigReason};

/// A duration in signed nanoseconds, wide enough for any `Duration` and any
/// `i64`, so that negative values reach validation intact.
type Nanos = i128;

/// The configuration of a [`RefillLimiter`](crate::RefillLimiter) or a
/// [`CycleLimiter`](crate::CycleLimiter), before validation.
///
/// Every field is optional; an unset field takes its default when read
/// (`get_*`) or built, and [`overwrite`](Self::overwrite) layers one
/// builder over another as the [`Registry`](crate::Registry) does.
/// Durations can also be given as signed nanoseconds (`*_nanos`).
///
/// | field | default | refill limiter | cycle limiter |
/// |---|---|---|---|
/// | `limit_for_period` | 50 (R4J) | `>= 1`; permits per period | `>= 1`; permits per cycle |
/// | `limit_refresh_period` | 500 ns (R4J) | `1 ns ..= i64::MAX ns`; `period / limit >= 1 ns` | `1 ns ..= i64::MAX ns` |
/// | `timeout` | 5 s (R4J) | `0 ..= i64::MAX ns` | `0 ..= i64::MAX ns` |
/// | `permit_capacity` | `limit_for_period` (RRL) | `>= limit_for_period` | must be unset |
/// | `initial_permits` | `limit_for_period` (RRL; not the capacity) | `0 ..= capacity` | must be unset |
///
/// # Examples
///
/// ```
/// use ratekeeper::ConfigReason;
/// use ratekeeper_resilience4j::ConfigBuilder;
///
/// let err = ConfigBuilder::new().timeout_nanos(-1).build().unwrap_err();
/// assert_eq!(err.reason(), ConfigReason::NegativeTimeout);
/// assert_eq!(err.to_string(), "timeout must not be negative, got -1 ns");
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
        self.limit_refresh_period = Some(period.as_nanos() as Nanos);
        self
    }

    /// The refresh period in signed nanoseconds.
    pub fn limit_refresh_period_nanos(mut self, nanos: i64) -> Self {
        self.limit_refresh_period = Some(Nanos::from(nanos));
        self
    }

    /// How long an acquire may wait (Resilience4j `timeoutDuration`).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout.as_nanos() as Nanos);
        self
    }

    /// The timeout in signed nanoseconds.
    pub fn timeout_nanos(mut self, nanos: i64) -> Self {
        self.timeout = Some(Nanos::from(nanos));
        self
    }

    /// Refill limiter: the most permits the bucket holds.
    pub fn permit_capacity(mut self, capacity: i64) -> Self {
        self.permit_capacity = Some(capacity);
        self
    }

    /// Refill limiter: the permits in the bucket at creation.
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
            .unwrap_or(DEFAULT_LIMIT_REFRESH_PERIOD.as_nanos() as Nanos)
    }

    /// The timeout in nanoseconds, or its default (5 s).
    pub fn get_timeout_nanos(&self) -> i128 {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT.as_nanos() as Nanos)
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
    /// use std::time::Duration;
    /// use ratekeeper_resilience4j::ConfigBuilder;
    ///
    /// let defaults = ConfigBuilder::new().limit_for_period(10).timeout(Duration::ZERO);
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

    /// Validates for the [`RefillLimiter`](crate::RefillLimiter).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for the first refused field, checking the limit,
    /// the period, the timeout, nanoseconds per permit, the capacity, the
    /// initial permits and the full-bucket time, in that order.
    pub fn build(&self) -> Result<RefillConfig, ConfigError> {
        let (limit, period, timeout) = self.common()?;
        // A later field's refusal here first lets the core report an
        // earlier one (`with_capacity`, `with_initial`).
        let mut core = RefillConfig::builder()
            .limit_for_period(limit)
            .limit_refresh_period(period)
            .timeout(timeout);
        let capacity = match self.permit_capacity {
            None => limit as i64,
            Some(c) => {
                core = with_capacity(core, c, limit)?;
                c
            }
        };
        if let Some(initial) = self.initial_permits {
            core = with_initial(core, initial, capacity)?;
        }
        core.build()
    }

    /// Validates for the [`CycleLimiter`](crate::CycleLimiter).
    ///
    /// # Errors
    ///
    /// The limit, period and timeout errors of [`build`](Self::build), then
    /// [`CapacityNotSupported`](ConfigReason::CapacityNotSupported) if a
    /// capacity or initial permits were set.
    pub fn build_cycle(&self) -> Result<CycleConfig, ConfigError> {
        let (limit, period, timeout) = self.common()?;
        let config = CycleConfig::builder()
            .limit_for_period(limit)
            .limit_refresh_period(period)
            .timeout(timeout)
            .build()?;
        if self.permit_capacity.is_some() || self.initial_permits.is_some() {
            return Err(refused(JavaShape::CapacityNotSupported));
        }
        Ok(config)
    }

    /// The limit, the period and the timeout, as far as the core's typed
    /// builders cannot check them (the core refuses a timeout too large).
    fn common(&self) -> Result<(u64, Duration, Duration), ConfigError> {
        let limit = self.get_limit_for_period();
        // At least 1: a u64.
        let limit =
            u64::try_from(limit).map_err(|_| refused(JavaShape::InvalidLimitForPeriod(limit)))?;
        if limit == 0 {
            return Err(refused(JavaShape::InvalidLimitForPeriod(0)));
        }
        let period = self.get_limit_refresh_period_nanos();
        if period < 1 {
            return Err(refused(JavaShape::InvalidLimitRefreshPeriod(period)));
        }
        if period > Nanos::from(i64::MAX) {
            return Err(refused(JavaShape::LimitRefreshPeriodTooLarge(period)));
        }
        let timeout = self.get_timeout_nanos();
        if timeout < 0 {
            return Err(refused(JavaShape::NegativeTimeout(timeout)));
        }
        Ok((limit, duration(period), duration(timeout)))
    }
}

/// `core` with the capacity `c`, or the refusal of `c` after the core's own
/// checks of the fields before it.
fn with_capacity(
    core: RefillConfigBuilder,
    c: i64,
    limit: u64,
) -> Result<RefillConfigBuilder, ConfigError> {
    match u64::try_from(c) {
        Ok(c) => Ok(core.permit_capacity(c)),
        Err(_) => {
            core.build()?;
            Err(refused(JavaShape::CapacityBelowLimit {
                capacity: c,
                // At most the i64 it came from.
                limit: limit as i64,
            }))
        }
    }
}

/// `core` with `initial` permits, or the refusal of a negative count after
/// the core's own checks of the fields before it (a count above the
/// capacity is the core's to refuse).
fn with_initial(
    core: RefillConfigBuilder,
    initial: i64,
    capacity: i64,
) -> Result<RefillConfigBuilder, ConfigError> {
    match u64::try_from(initial) {
        Ok(i) => Ok(core.initial_permits(i)),
        Err(_) => {
            core.build()?;
            Err(refused(JavaShape::InitialPermitsOutOfRange {
                initial,
                capacity,
            }))
        }
    }
}

/// A validated duration in nanoseconds: at least 0, at most `Duration::MAX`
/// (every field came from an `i64` or a `Duration`).
fn duration(nanos: Nanos) -> Duration {
    let secs = (nanos / 1_000_000_000) as u64;
    Duration::new(secs, (nanos % 1_000_000_000) as u32)
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

impl From<&RefillConfig> for ConfigBuilder {
    /// The same configuration as a builder, every field set: building it
    /// gives `config` back.
    fn from(config: &RefillConfig) -> ConfigBuilder {
        ConfigBuilder::new()
            .limit_for_period(config.limit_for_period())
            .limit_refresh_period(config.limit_refresh_period())
            .timeout(config.timeout())
            .permit_capacity(config.capacity())
            .initial_permits(config.initial_permits())
    }
}

impl From<&CycleConfig> for ConfigBuilder {
    /// The same configuration as a builder, every field set.
    fn from(config: &CycleConfig) -> ConfigBuilder {
        ConfigBuilder::new()
            .limit_for_period(config.limit_for_period())
            .limit_refresh_period(config.limit_refresh_period())
            .timeout(config.timeout())
    }
}

/// What Java's shapes allow and the core's typed builders cannot hold: the
/// detail of a [`ConfigError`], worded as the core words the same reason.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum JavaShape {
    #[error("limit for period must be at least 1, got {0}")]
    InvalidLimitForPeriod(i64),
    #[error("limit for period must be at most {max}, got {0}", max = u32::MAX)]
    LimitForPeriodTooLarge(i64),
    #[error("limit refresh period must be at least 1 ns, got {0} ns")]
    InvalidLimitRefreshPeriod(i128),
    #[error("limit refresh period must be at most {max} ns, got {0} ns", max = i64::MAX)]
    LimitRefreshPeriodTooLarge(i128),
    #[error("timeout must not be negative, got {0} ns")]
    NegativeTimeout(i128),
    #[error("timeout must be at most {max} ns, got {0} ns", max = i64::MAX)]
    TimeoutTooLarge(i128),
    #[error("permit capacity {capacity} is below the limit for period {limit}")]
    CapacityBelowLimit { capacity: i64, limit: i64 },
    #[error("initial permits must be between 0 and the capacity {capacity}, got {initial}")]
    InitialPermitsOutOfRange { initial: i64, capacity: i64 },
    #[error("the cycle limiter has no permit capacity or initial permits")]
    CapacityNotSupported,
}

/// `detail` as a [`ConfigError`] of its reason.
pub(crate) fn refused(detail: JavaShape) -> ConfigError {
    use ConfigReason as R;
    use JavaShape as J;
    let reason = match detail {
        J::InvalidLimitForPeriod(_) => R::InvalidLimitForPeriod,
        J::LimitForPeriodTooLarge(_) => R::LimitForPeriodTooLarge,
        J::InvalidLimitRefreshPeriod(_) => R::InvalidLimitRefreshPeriod,
        J::LimitRefreshPeriodTooLarge(_) => R::LimitRefreshPeriodTooLarge,
        J::NegativeTimeout(_) => R::NegativeTimeout,
        J::TimeoutTooLarge(_) => R::TimeoutTooLarge,
        J::CapacityBelowLimit { .. } => R::CapacityBelowLimit,
        J::InitialPermitsOutOfRange { .. } => R::InitialPermitsOutOfRange,
        J::CapacityNotSupported => R::CapacityNotSupported,
    };
    ConfigError::with_reason(reason, detail)
}
