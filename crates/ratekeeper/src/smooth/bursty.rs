//! [`SmoothBursty`]: Guava's `SmoothBursty`, and its builder.

use super::decision::Kind;
use super::error::{check_rate, SmoothError};
use super::limiter::Smooth;
use super::resolution::Resolution;
use super::SmoothBursty;
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::spec::RateSpec;
use crate::wait::WaitPolicy;

/// How many seconds of permits a [`SmoothBursty`] stores while idle unless
/// set: 1, as Guava's `RateLimiter.create(permitsPerSecond)`.
pub const DEFAULT_MAX_BURST_SECONDS: f64 = 1.0;

/// Configures a [`SmoothBursty`].
#[derive(Debug, Clone, Copy)]
pub struct SmoothBurstyBuilder {
    rate: f64,
    max_burst_seconds: f64,
    resolution: Resolution,
    policy: WaitPolicy,
}

impl SmoothBursty {
    /// Guava's `RateLimiter.create(permitsPerSecond)`: bursty, 1 s of burst.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate)
    /// ([`RateNotPositive`](crate::ConfigReason::RateNotPositive)) unless `permits_per_second > 0` (`+∞` is
    /// accepted).
    pub fn new(permits_per_second: f64) -> Result<SmoothBursty, ConfigError> {
        SmoothBursty::builder(permits_per_second).build()
    }

    /// A builder at a rate spec's rate (its burst ratio and verb mean
    /// nothing to Guava's limiters and are ignored).
    pub fn from_spec(spec: &RateSpec) -> SmoothBurstyBuilder {
        SmoothBursty::builder(spec.rate().get())
    }

    /// A builder at `permits_per_second` with [`DEFAULT_MAX_BURST_SECONDS`]
    /// (1 s) of burst. The rate is an `f64`, not a [`Rate`](crate::Rate):
    /// Guava accepts any positive rate, `+∞` included.
    pub fn builder(permits_per_second: f64) -> SmoothBurstyBuilder {
        SmoothBurstyBuilder {
            rate: permits_per_second,
            max_burst_seconds: DEFAULT_MAX_BURST_SECONDS,
            resolution: Resolution::Micros,
            policy: WaitPolicy::default(),
        }
    }
}

impl SmoothBurstyBuilder {
    /// How many seconds of permits idle time may store (default
    /// [`DEFAULT_MAX_BURST_SECONDS`], 1.0).
    pub fn max_burst_seconds(mut self, seconds: f64) -> Self {
        self.max_burst_seconds = seconds;
        self
    }

    /// The unit of the schedule (default [`Resolution::Micros`], Guava's).
    /// Use [`Resolution::Nanos`] above 100 000 permits per second.
    pub fn resolution(mut self, resolution: Resolution) -> Self {
        self.resolution = resolution;
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
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) or
    /// [`ConfigErrorKind::MaxBurst`](crate::ConfigErrorKind::MaxBurst)
    /// (details [`RateNotPositive`](crate::ConfigReason::RateNotPositive), [`MaxBurstSeconds`](crate::ConfigReason::MaxBurstSeconds)).
    pub fn build(self) -> Result<SmoothBursty, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds on `clock`; the limiter's time starts at its current reading.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_clock<C: Clock>(self, clock: C) -> Result<SmoothBursty<C>, ConfigError> {
        let rate = check_rate(self.rate)?;
        let b = self.max_burst_seconds;
        if !(b.is_finite() && b >= 0.0) {
            return Err(SmoothError::MaxBurstSeconds(b).into());
        }
        let kind = Kind::Bursty {
            max_burst_seconds: b,
        };
        Ok(SmoothBursty {
            core: Smooth::new(kind, self.resolution, rate, clock, self.policy),
        })
    }
}
