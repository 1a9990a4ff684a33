//! [`RefillLimiter::builder`] and [`CycleLimiter::builder`]: Resilience4j's
//! limiters in the crate's one construction grammar, from a [`Rate`].
//!
//! Resilience4j describes a limit as `limit_for_period` permits per
//! `limit_refresh_period`. From a rate, the limit for period is
//! `rate × period`, which must be a whole number of permits: 100/s over the
//! default 1 s period is 100 per second, over 10 ms it is 1 per 10 ms (the
//! same average rate, a smaller burst). The configuration types
//! ([`RefillConfig::builder`], [`CycleConfig::builder`]) take the limit and
//! period directly.

use std::sync::Arc;
use std::time::Duration;

use ratekeeper::bucket::{limit_for_rate, CycleConfig, RefillConfig, DEFAULT_TIMEOUT};

use crate::config::{refused, JavaShape};
use crate::{CycleLimiter, RefillLimiter};
use ratekeeper::ConfigError;
use ratekeeper::Rate;
use ratekeeper::RateSpec;
use ratekeeper::WaitPolicy;
use ratekeeper::{Clock, DefaultClock};

/// The refresh period of a limiter built from a rate when none is given:
/// 1 s, so that the limit for period is the rate (the core's
/// [`DEFAULT_REFRESH_PERIOD`](ratekeeper::config::DEFAULT_REFRESH_PERIOD)).
pub const DEFAULT_RATE_PERIOD: Duration = ratekeeper::config::DEFAULT_REFRESH_PERIOD;

/// The name of a limiter built without one (its events carry it).
pub const DEFAULT_NAME: &str = "default";

/// What both limiters' builders share.
#[derive(Debug, Clone)]
struct Common {
    name: Arc<str>,
    rate: Rate,
    period: Duration,
    timeout: Duration,
    policy: WaitPolicy,
}

impl Common {
    fn new(rate: Rate) -> Common {
        Common {
            name: Arc::from(DEFAULT_NAME),
            rate,
            period: DEFAULT_RATE_PERIOD,
            timeout: DEFAULT_TIMEOUT,
            policy: WaitPolicy::default(),
        }
    }

    /// The limit for period, validated to fit a `u32` as the Rust-native
    /// configuration builders hold it.
    fn limit(&self) -> Result<u32, ConfigError> {
        let limit = limit_for_rate(self.rate, self.period)?;
        u32::try_from(limit).map_err(|_| refused(JavaShape::LimitForPeriodTooLarge(limit)))
    }
}

/// Configures a [`RefillLimiter`] from a rate: `rate × period` permits per
/// period, which must be a whole number of permits.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_resilience4j::{PermitLimiter, RefillLimiter};
/// use ratekeeper::{ManualClock, Rate};
///
/// let limiter = RefillLimiter::builder(Rate::new(100.0)?)
///     .period(Duration::from_millis(100)) // 10 per 100 ms
///     .permit_capacity(20)
///     .timeout(Duration::ZERO)
///     .name("api")
///     .build_with_clock(ManualClock::new(0))?;
/// assert_eq!(limiter.config().limit_for_period(), 10);
/// assert_eq!(limiter.name(), "api");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct RefillLimiterBuilder {
    common: Common,
    capacity: Option<u32>,
    initial: Option<u32>,
}

impl RefillLimiter {
    /// A builder at `rate`: `rate × 1 s` permits per second
    /// ([`DEFAULT_RATE_PERIOD`]), a bucket of one period's permits, full at
    /// creation, Resilience4j's 5 s timeout.
    pub fn builder(rate: Rate) -> RefillLimiterBuilder {
        RefillLimiterBuilder {
            common: Common::new(rate),
            capacity: None,
            initial: None,
        }
    }

    /// A builder at a rate spec's rate (its burst ratio and verb are the
    /// Pacer's and mean nothing here).
    pub fn from_spec(spec: &RateSpec) -> RefillLimiterBuilder {
        RefillLimiter::builder(spec.rate())
    }
}

impl RefillLimiterBuilder {
    /// The limiter's name (default [`DEFAULT_NAME`]).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.common.name = name.into();
        self
    }

    /// The refresh period (default [`DEFAULT_RATE_PERIOD`]); the rate over it
    /// must be a whole number of permits.
    pub fn period(mut self, period: Duration) -> Self {
        self.common.period = period;
        self
    }

    /// How long an acquire may wait (default [`DEFAULT_TIMEOUT`], 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.common.timeout = timeout;
        self
    }

    /// The most permits the bucket holds (default: one period's).
    pub fn permit_capacity(mut self, capacity: u32) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// The permits in the bucket at creation (default: one period's).
    pub fn initial_permits(mut self, initial: u32) -> Self {
        self.initial = Some(initial);
        self
    }

    /// How blocking acquires wait (see [`WaitPolicy`]).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.common.policy = policy;
        self
    }

    /// The validated configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`]: a rate that is not a whole number of permits per
    /// period, or what [`RefillConfig::builder`] refuses.
    pub fn config(&self) -> Result<RefillConfig, ConfigError> {
        let mut b = RefillConfig::builder()
            .limit_for_period(u64::from(self.common.limit()?))
            .limit_refresh_period(self.common.period)
            .timeout(self.common.timeout);
        if let Some(c) = self.capacity {
            b = b.permit_capacity(u64::from(c));
        }
        if let Some(i) = self.initial {
            b = b.initial_permits(u64::from(i));
        }
        b.build()
    }

    /// Builds on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// As [`config`](Self::config).
    pub fn build(&self) -> Result<RefillLimiter, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds on `clock`, created now.
    ///
    /// # Errors
    ///
    /// As [`config`](Self::config).
    pub fn build_with_clock<C: Clock>(&self, clock: C) -> Result<RefillLimiter<C>, ConfigError> {
        let limiter =
            RefillLimiter::new_with_clock(self.common.name.clone(), self.config()?, clock);
        Ok(limiter.with_wait_policy(self.common.policy))
    }
}

/// Configures a [`CycleLimiter`] from a rate: `rate × period` permits per
/// cycle, which must be a whole number of permits.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_resilience4j::{CycleLimiter, PermitLimiter};
/// use ratekeeper::{ManualClock, Rate, RateLimiter};
///
/// let limiter = CycleLimiter::from_spec(&"50".parse()?)
///     .timeout(Duration::ZERO)
///     .build_with_clock(ManualClock::new(0))?;
/// assert_eq!(limiter.config().limit_for_period(), 50);
/// assert_eq!(limiter.effective_rate(), 50.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct CycleLimiterBuilder {
    common: Common,
}

impl CycleLimiter {
    /// A builder at `rate`: `rate × 1 s` permits per 1 s cycle
    /// ([`DEFAULT_RATE_PERIOD`]), Resilience4j's 5 s timeout.
    pub fn builder(rate: Rate) -> CycleLimiterBuilder {
        CycleLimiterBuilder {
            common: Common::new(rate),
        }
    }

    /// A builder at a rate spec's rate.
    pub fn from_spec(spec: &RateSpec) -> CycleLimiterBuilder {
        CycleLimiter::builder(spec.rate())
    }
}

impl CycleLimiterBuilder {
    /// The limiter's name (default [`DEFAULT_NAME`]).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.common.name = name.into();
        self
    }

    /// The cycle length (default [`DEFAULT_RATE_PERIOD`]); the rate over it
    /// must be a whole number of permits.
    pub fn period(mut self, period: Duration) -> Self {
        self.common.period = period;
        self
    }

    /// How long an acquire may wait (default [`DEFAULT_TIMEOUT`], 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.common.timeout = timeout;
        self
    }

    /// How blocking acquires wait (see [`WaitPolicy`]).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.common.policy = policy;
        self
    }

    /// The validated configuration.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`]: a rate that is not a whole number of permits per
    /// cycle, or what [`CycleConfig::builder`] refuses.
    pub fn config(&self) -> Result<CycleConfig, ConfigError> {
        CycleConfig::builder()
            .limit_for_period(u64::from(self.common.limit()?))
            .limit_refresh_period(self.common.period)
            .timeout(self.common.timeout)
            .build()
    }

    /// Builds on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// As [`config`](Self::config).
    pub fn build(&self) -> Result<CycleLimiter, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds on `clock`, its first cycle starting now.
    ///
    /// # Errors
    ///
    /// As [`config`](Self::config).
    pub fn build_with_clock<C: Clock>(&self, clock: C) -> Result<CycleLimiter<C>, ConfigError> {
        let limiter = CycleLimiter::new_with_clock(self.common.name.clone(), self.config()?, clock);
        Ok(limiter.with_wait_policy(self.common.policy))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::test_util::PermitConfigError;
    use crate::PermitLimiter;
    use ratekeeper::ConfigErrorKind;
    use ratekeeper::ManualClock;
    use ratekeeper::RateLimiter;

    fn rate(r: f64) -> Rate {
        Rate::new(r).unwrap()
    }

    #[test]
    fn a_refill_limiter_from_a_rate_is_the_config_it_describes() {
        let clock = ManualClock::new(0);
        let built = RefillLimiter::builder(rate(100.0))
            .period(Duration::from_millis(100))
            .permit_capacity(30)
            .initial_permits(0)
            .timeout(Duration::ZERO)
            .build_with_clock(clock.clone())
            .unwrap();
        let config = RefillConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(Duration::from_millis(100))
            .permit_capacity(30)
            .initial_permits(0)
            .timeout(Duration::ZERO)
            .build()
            .unwrap();
        assert_eq!(built.config(), config);
        assert_eq!(built.name(), DEFAULT_NAME);
        assert!(built.try_acquire().is_err()); // built empty
        clock.advance_nanos(10_000_000);
        assert!(built.try_acquire().is_ok()); // one permit per 10 ms
    }

    #[test]
    fn a_cycle_limiter_from_a_spec_takes_its_rate() {
        let spec = "20,1.5,restart".parse().unwrap();
        let built = CycleLimiter::from_spec(&spec)
            .name("jobs")
            .build_with_clock(ManualClock::new(0))
            .unwrap();
        assert_eq!(built.config().limit_for_period(), 20);
        assert_eq!(built.config().limit_refresh_period(), DEFAULT_RATE_PERIOD);
        assert_eq!(built.config().timeout(), DEFAULT_TIMEOUT);
        assert_eq!(built.name(), "jobs");
    }

    #[test]
    fn a_rate_that_is_no_whole_number_of_permits_is_refused() {
        let err = RefillLimiter::builder(rate(0.5)).build().unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::Rate);
        assert_eq!(err.reason(), ratekeeper::ConfigReason::NotWholePermits);
        assert!(err.to_string().ends_with("(e.g. period 10s)"), "{err}");
        let ok = CycleLimiter::builder(rate(0.5)).period(Duration::from_secs(10));
        assert_eq!(ok.config().unwrap().limit_for_period(), 5);
    }

    #[test]
    fn a_limit_beyond_u32_is_refused_not_truncated() {
        let err = CycleLimiter::builder(rate(1e9))
            .period(Duration::from_secs(10))
            .config()
            .unwrap_err();
        assert_eq!(
            err,
            PermitConfigError::LimitForPeriodTooLarge(10_000_000_000).into()
        );
        assert_eq!(err.kind(), ConfigErrorKind::LimitForPeriod);
    }
}
