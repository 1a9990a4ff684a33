//! The bucket limiters' builders: `Fields`, every field optional
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

/// The fields of a bucket configuration before validation, every one
/// optional and held signed and wide (so that the typed builders and the
/// textual configuration share one validation, and a negative value from a
/// text reaches it intact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    limit_for_period: Option<i128>,
    limit_refresh_period: Option<Nanos>,
    timeout: Option<Nanos>,
    permit_capacity: Option<i128>,
    initial_permits: Option<i128>,
}

impl Fields {
    /// Every field unset (Resilience4j's defaults).
    pub(crate) fn new() -> Fields {
        Fields::default()
    }

    /// Permits per refresh period (Resilience4j `limitForPeriod`).
    pub(crate) fn limit_for_period(mut self, limit: impl Into<i128>) -> Self {
        self.limit_for_period = Some(limit.into());
        self
    }

    /// The refresh period (Resilience4j `limitRefreshPeriod`).
    pub(crate) fn limit_refresh_period(mut self, period: Duration) -> Self {
        self.limit_refresh_period = Some(duration_nanos(period));
        self
    }

    /// How long an acquire may wait (Resilience4j `timeoutDuration`).
    pub(crate) fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(duration_nanos(timeout));
        self
    }

    /// Refill limiter: the most permits the bucket holds.
    pub(crate) fn permit_capacity(mut self, capacity: impl Into<i128>) -> Self {
        self.permit_capacity = Some(capacity.into());
        self
    }

    /// Refill limiter: the permits in the bucket at creation.
    pub(crate) fn initial_permits(mut self, initial: impl Into<i128>) -> Self {
        self.initial_permits = Some(initial.into());
        self
    }

    /// The limit for period, or its default (50).
    fn get_limit_for_period(&self) -> i128 {
        self.limit_for_period
            .unwrap_or(i128::from(DEFAULT_LIMIT_FOR_PERIOD))
    }

    /// The refresh period in nanoseconds, or its default (500).
    fn get_limit_refresh_period_nanos(&self) -> i128 {
        self.limit_refresh_period
            .unwrap_or(duration_nanos(DEFAULT_LIMIT_REFRESH_PERIOD))
    }

    /// The timeout in nanoseconds, or its default (5 s).
    fn get_timeout_nanos(&self) -> i128 {
        self.timeout.unwrap_or(duration_nanos(DEFAULT_TIMEOUT))
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
    /// A [`ConfigError`], checking the
    /// limit, the period, the timeout, nanoseconds per permit, the capacity,
    /// the initial permits and the full-bucket time, in that order.
    pub(crate) fn build(&self) -> Result<RefillConfig, ConfigError> {
        Ok(self.build_refill()?)
    }

    fn build_refill(&self) -> Result<RefillConfig, PermitConfigError> {
        let (limit, period, timeout) = self.common()?;
        let npp = nanos_per_permit(limit, period)?;
        let capacity = match self.permit_capacity {
            None => limit,
            Some(c) if c < i128::from(limit) => {
                return Err(PermitConfigError::CapacityBelowLimit { capacity: c, limit })
            }
            Some(c) => i64::try_from(c).map_err(|_| PermitConfigError::CapacityTooLarge(c))?,
        };
        let initial = self.initial_permits.unwrap_or(i128::from(limit));
        if !(0..=i128::from(capacity)).contains(&initial) {
            return Err(PermitConfigError::InitialPermitsOutOfRange { initial, capacity });
        }
        // In 0 ..= capacity, an i64.
        let initial = initial as i64;
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
    /// [`CapacityNotSupported`](crate::ConfigReason::CapacityNotSupported) if a capacity or initial
    /// permits were set.
    pub(crate) fn build_cycle(&self) -> Result<CycleConfig, ConfigError> {
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

/// Builds a [`RefillConfig`] from `u64` permits and [`Duration`]s; unset
/// fields take Resilience4j's defaults. See the
/// [module docs](super) for an example.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefillConfigBuilder(Fields);

impl RefillConfigBuilder {
    /// Permits per refresh period (Resilience4j `limitForPeriod`).
    pub fn limit_for_period(self, limit: u64) -> Self {
        RefillConfigBuilder(self.0.limit_for_period(limit))
    }

    /// The refresh period (Resilience4j `limitRefreshPeriod`).
    pub fn limit_refresh_period(self, period: Duration) -> Self {
        RefillConfigBuilder(self.0.limit_refresh_period(period))
    }

    /// How long an acquire may wait (Resilience4j `timeoutDuration`).
    pub fn timeout(self, timeout: Duration) -> Self {
        RefillConfigBuilder(self.0.timeout(timeout))
    }

    /// The most permits the bucket holds (at least the limit, at most
    /// `i64::MAX`).
    pub fn permit_capacity(self, capacity: u64) -> Self {
        RefillConfigBuilder(self.0.permit_capacity(capacity))
    }

    /// The permits in the bucket at creation (at most the capacity).
    pub fn initial_permits(self, initial: u64) -> Self {
        RefillConfigBuilder(self.0.initial_permits(initial))
    }

    /// Validates.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for the first refused field, checking the limit,
    /// the period, the timeout, nanoseconds per permit, the capacity, the
    /// initial permits and the full-bucket time, in that order.
    pub fn build(&self) -> Result<RefillConfig, ConfigError> {
        self.0.build()
    }
}

/// Builds a [`CycleConfig`] from `u64` permits and [`Duration`]s; unset
/// fields take Resilience4j's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CycleConfigBuilder(Fields);

impl CycleConfigBuilder {
    /// Permits per cycle (Resilience4j `limitForPeriod`).
    pub fn limit_for_period(self, limit: u64) -> Self {
        CycleConfigBuilder(self.0.limit_for_period(limit))
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
}

impl CycleConfig {
    /// A builder with Resilience4j's defaults; finish with
    /// [`build`](CycleConfigBuilder::build).
    pub fn builder() -> CycleConfigBuilder {
        CycleConfigBuilder::default()
    }
}
