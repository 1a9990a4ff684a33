//! [`SmoothWarmingUp`]: Guava's `SmoothWarmingUp`, and its builder.

use std::time::Duration;

use super::decision::Kind;
use super::error::{check_rate, SmoothError};
use super::limiter::Smooth;
use super::resolution::Resolution;
use super::SmoothWarmingUp;
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::spec::RateSpec;
use crate::wait::WaitPolicy;

/// How much slower than the stable rate a cold [`SmoothWarmingUp`] is unless
/// set: 3, as Guava's `RateLimiter.create(permitsPerSecond, warmupPeriod)`.
pub const DEFAULT_COLD_FACTOR: f64 = 3.0;

/// Configures a [`SmoothWarmingUp`].
#[derive(Debug, Clone, Copy)]
pub struct SmoothWarmingUpBuilder {
    rate: f64,
    warmup: Warmup,
    cold_factor: f64,
    resolution: Resolution,
    policy: WaitPolicy,
}

/// A warm-up period as it was given to the builder.
#[derive(Debug, Clone, Copy)]
enum Warmup {
    /// Whole microseconds, possibly negative (an error at build).
    Micros(i64),
    /// A duration, truncated to the resolution at build.
    Duration(Duration),
}

impl SmoothWarmingUp {
    /// Guava's `RateLimiter.create(permitsPerSecond, warmupPeriod)`: cold
    /// factor 3.0. The period is truncated to whole microseconds.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate)
    /// ([`RateNotPositive`](crate::ConfigReason::RateNotPositive)) unless `permits_per_second > 0`.
    pub fn new(permits_per_second: f64, warmup: Duration) -> Result<SmoothWarmingUp, ConfigError> {
        SmoothWarmingUp::builder(permits_per_second)
            .warmup(warmup)
            .build()
    }

    /// A builder at a rate spec's rate, no warm-up period yet (set one).
    pub fn from_spec(spec: &RateSpec) -> SmoothWarmingUpBuilder {
        SmoothWarmingUp::builder(spec.rate().get())
    }

    /// A builder at `permits_per_second` (any positive `f64`, as for
    /// [`SmoothBursty::builder`](super::SmoothBursty::builder)), no warm-up
    /// period yet (set one), cold factor [`DEFAULT_COLD_FACTOR`] (3.0).
    pub fn builder(permits_per_second: f64) -> SmoothWarmingUpBuilder {
        SmoothWarmingUpBuilder {
            rate: permits_per_second,
            warmup: Warmup::Micros(0),
            cold_factor: DEFAULT_COLD_FACTOR,
            resolution: Resolution::Micros,
            policy: WaitPolicy::default(),
        }
    }
}

impl SmoothWarmingUpBuilder {
    /// The warm-up period, truncated to whole microseconds (whole
    /// nanoseconds with [`Resolution::Nanos`]), saturating.
    pub fn warmup(mut self, warmup: Duration) -> Self {
        self.warmup = Warmup::Duration(warmup);
        self
    }

    /// The warm-up period in signed microseconds (Guava's shape, for
    /// [`compat`](super::compat)).
    pub(super) fn signed_warmup_micros(mut self, micros: i64) -> Self {
        self.warmup = Warmup::Micros(micros);
        self
    }

    /// The unit of the schedule (default [`Resolution::Micros`], Guava's).
    /// Use [`Resolution::Nanos`] above 100 000 permits per second.
    pub fn resolution(mut self, resolution: Resolution) -> Self {
        self.resolution = resolution;
        self
    }

    /// How much slower than the stable rate a cold limiter is (default
    /// [`DEFAULT_COLD_FACTOR`], 3.0; at least 1.0).
    pub fn cold_factor(mut self, cold_factor: f64) -> Self {
        self.cold_factor = cold_factor;
        self
    }

    /// How blocking acquires wait (see [`WaitPolicy`]).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Builds on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::WarmUp`](crate::ConfigErrorKind::WarmUp)
    /// ([`WarmUpNegative`](crate::ConfigReason::WarmUpNegative), checked first, as Guava does), then
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate), then
    /// [`ConfigErrorKind::ColdFactor`](crate::ConfigErrorKind::ColdFactor).
    pub fn build(self) -> Result<SmoothWarmingUp, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds on `clock`; the limiter's time starts at its current reading.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_clock<C: Clock>(self, clock: C) -> Result<SmoothWarmingUp<C>, ConfigError> {
        let res = self.resolution;
        let warmup = match self.warmup {
            Warmup::Micros(micros) if micros < 0 => {
                return Err(SmoothError::WarmupNegative(micros).into());
            }
            Warmup::Micros(micros) => res.micros_ticks(micros),
            Warmup::Duration(d) => res.duration_ticks(d),
        };
        let rate = check_rate(self.rate)?;
        if !self.cold_factor.is_finite() || self.cold_factor < 1.0 {
            return Err(SmoothError::ColdFactor(self.cold_factor).into());
        }
        let kind = Kind::WarmingUp {
            warmup,
            cold_factor: self.cold_factor,
            threshold: 0.0,
            slope: 0.0,
        };
        Ok(SmoothWarmingUp {
            core: Smooth::new(kind, res, rate, clock, self.policy),
        })
    }
}
