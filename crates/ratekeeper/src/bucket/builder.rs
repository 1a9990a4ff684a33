//! The bucket limiters' builders: [`ConfigBuilder`], every field optional
//! and signed as in Resilience4j (so negative values reach validation), and
//! the typed [`RefillConfigBuilder`] and [`CycleConfigBuilder`] over it.

use std::time::Duration;

use super::config::{
    check_limit, check_period, check_timeout, duration_nanos, full_capacity_nanos,
    nanos_per_permit, Nanos, PermitConfigError, DEFAULT_LIMIT_FOR_PERIOD,
    DEFAULT_LIMIT_REFRESH_PERIOD, DEFAULT_TIMEOUT,
};
use super::{CycleConfig, RefillConfig};
use crate::error::ConfigError;

/// The configuration of a [`RefillLimiter`](super::RefillLimiter) or a
/// [`CycleLimiter`](super::CycleLimiter), before validation.
///
/// Every field is optional; an unset field takes its default when read
/// (`get_*`) or built. Durations can also be given as signed nanoseconds
/// (`*_nanos`), so that a negative value from a configuration file is
/// refused with a typed error instead of being unrepresentable.
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
/// use ratekeeper::bucket::ConfigBuilder;
///
/// let err = ConfigBuilder::new().timeout_nanos(-1).build().unwrap_err();
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
    /// use std::time::Duration;
    /// use ratekeeper::bucket::ConfigBuilder;
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

    /// Validates the fields both limiters share: limit, period, timeout.
    fn common(&self) -> Result<(i64, i64, i64), PermitConfigError> {
        let limit = check_limit(self.get_limit_for_period())?;
        let period = check_period(self.get_limit_refresh_period_nanos())?;
        let timeout = check_timeout(self.get_timeout_nanos())?;
        Ok((limit, period, timeout))
    }

    /// Validates for the [`RefillLimiter`](super::RefillLimiter).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] whose detail is a [`PermitConfigError`], checking the
    /// limit, the period, the timeout, nanoseconds per permit, the capacity,
    /// the initial permits and the full-bucket time, in that order.
    pub fn build(&self) -> Result<RefillConfig, ConfigError> {
        Ok(self.build_refill()?)
    }

    fn build_refill(&self) -> Result<RefillConfig, PermitConfigError> {
        let (limit, period, timeout) = self.common()?;
        let npp = nanos_per_permit(limit, period)?;
        let capacity = match self.permit_capacity {
            None => limit,
            Some(c) if c < limit => {
                return Err(PermitConfigError::CapacityBelowLimit { capacity: c, limit })
            }
            Some(c) => c,
        };
        let initial = self.initial_permits.unwrap_or(limit);
        if !(0..=capacity).contains(&initial) {
            return Err(PermitConfigError::InitialPermitsOutOfRange { initial, capacity });
        }
        full_capacity_nanos(npp, capacity)?;
        Ok(RefillConfig::from_parts(
            limit, period, timeout, capacity, initial,
        ))
    }

    /// Validates for the [`CycleLimiter`](super::CycleLimiter).
    ///
    /// # Errors
    ///
    /// The limit, period and timeout errors of [`build`](Self::build), then
    /// [`PermitConfigError::CapacityNotSupported`] if a capacity or initial
    /// permits were set.
    pub fn build_cycle(&self) -> Result<CycleConfig, ConfigError> {
        Ok(self.validate_cycle()?)
    }

    fn validate_cycle(&self) -> Result<CycleConfig, PermitConfigError> {
        let (limit, period, timeout) = self.common()?;
        if self.permit_capacity.is_some() || self.initial_permits.is_some() {
            return Err(PermitConfigError::CapacityNotSupported);
        }
        Ok(CycleConfig::from_parts(limit, period, timeout))
    }
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

/// Builds a [`RefillConfig`] from `u32` permits and [`Duration`]s; unset
/// fields take the defaults of [`ConfigBuilder`]. See the
/// [module docs](super) for an example.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefillConfigBuilder(ConfigBuilder);

impl RefillConfigBuilder {
    /// Permits per refresh period (Resilience4j `limitForPeriod`).
    pub fn limit_for_period(self, limit: u32) -> Self {
        RefillConfigBuilder(self.0.limit_for_period(i64::from(limit)))
    }

    /// The refresh period (Resilience4j `limitRefreshPeriod`).
    pub fn limit_refresh_period(self, period: Duration) -> Self {
        RefillConfigBuilder(self.0.limit_refresh_period(period))
    }

    /// How long an acquire may wait (Resilience4j `timeoutDuration`).
    pub fn timeout(self, timeout: Duration) -> Self {
        RefillConfigBuilder(self.0.timeout(timeout))
    }

    /// The most permits the bucket holds (at least the limit).
    pub fn permit_capacity(self, capacity: u32) -> Self {
        RefillConfigBuilder(self.0.permit_capacity(i64::from(capacity)))
    }

    /// The permits in the bucket at creation (at most the capacity).
    pub fn initial_permits(self, initial: u32) -> Self {
        RefillConfigBuilder(self.0.initial_permits(i64::from(initial)))
    }

    /// Validates.
    ///
    /// # Errors
    ///
    /// As [`ConfigBuilder::build`].
    pub fn build(&self) -> Result<RefillConfig, ConfigError> {
        self.0.build()
    }
}

/// Builds a [`CycleConfig`] from `u32` permits and [`Duration`]s; unset
/// fields take the defaults of [`ConfigBuilder`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CycleConfigBuilder(ConfigBuilder);

impl CycleConfigBuilder {
    /// Permits per cycle (Resilience4j `limitForPeriod`).
    pub fn limit_for_period(self, limit: u32) -> Self {
        CycleConfigBuilder(self.0.limit_for_period(i64::from(limit)))
    }

    /// The cycle length (Resilience4j `limitRefreshPeriod`).
    pub fn limit_refresh_period(self, period: Duration) -> Self {
        CycleConfigBuilder(self.0.limit_refresh_period(period))
    }

    /// How long an acquire may wait (Resilience4j `timeoutDuration`).
    pub fn timeout(self, timeout: Duration) -> Self {
        CycleConfigBuilder(self.0.timeout(timeout))
    }

    /// Validates.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for a limit of 0, a period of 0 or beyond
    /// `i64::MAX` nanoseconds, or a timeout beyond it.
    pub fn build(&self) -> Result<CycleConfig, ConfigError> {
        self.0.build_cycle()
    }
}

impl RefillConfig {
    /// A builder with Resilience4j's defaults; finish with
    /// [`build`](RefillConfigBuilder::build).
    pub fn builder() -> RefillConfigBuilder {
        RefillConfigBuilder::default()
    }
    /// The same configuration as a builder (every field set).
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder::new()
            .limit_for_period(self.limit)
            .limit_refresh_period_nanos(self.period)
            .timeout_nanos(self.timeout)
            .permit_capacity(self.capacity)
            .initial_permits(self.initial)
    }
}

impl CycleConfig {
    /// A builder with Resilience4j's defaults; finish with
    /// [`build`](CycleConfigBuilder::build).
    pub fn builder() -> CycleConfigBuilder {
        CycleConfigBuilder::default()
    }
    /// The same configuration as a builder (every field set).
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder::new()
            .limit_for_period(self.limit)
            .limit_refresh_period_nanos(self.period)
            .timeout_nanos(self.timeout)
    }
}
