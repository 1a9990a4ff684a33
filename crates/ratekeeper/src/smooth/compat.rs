//! Guava's shapes: signed microseconds where the Rust API takes a
//! [`Duration`](std::time::Duration).
//!
//! Guava's `tryAcquire(permits, timeout, unit)` and
//! `create(rate, warmupPeriod, unit)` convert their arguments with
//! `unit.toMicros(...)`, a signed `long`: a negative timeout means "do not
//! wait", a negative warm-up period is an `IllegalArgumentException`. A
//! [`Duration`](std::time::Duration) cannot be negative, so the Rust-native
//! API ([`RateLimiter::reserve`](crate::RateLimiter::reserve) with a maximum
//! wait, [`RateLimiter::acquire_timeout`](crate::RateLimiter::acquire_timeout),
//! [`SmoothWarmingUpBuilder::warmup`]) never meets those values. Code that
//! replays Guava's own tests, or reads Guava-shaped settings, uses these
//! extension traits to pass them through unchanged.
//!
//! # Examples
//!
//! ```
//! use ratekeeper::smooth::compat::{GuavaTimeouts, GuavaWarmup};
//! use ratekeeper::smooth::SmoothWarmingUp;
//! use ratekeeper::{ConfigReason, ManualClock, SmoothBursty};
//!
//! let limiter = SmoothBursty::builder(1.0).build_with_clock(ManualClock::new(0))?;
//! GuavaTimeouts::try_acquire_micros(&limiter, 1, -5)?; // negative: no wait allowed, and none needed
//! assert!(GuavaTimeouts::try_acquire_micros(&limiter, 1, -5).is_err());
//! assert!(GuavaTimeouts::try_acquire_micros(&limiter, 1, 1_000_000).is_ok());
//!
//! let builder = GuavaWarmup::warmup_micros(SmoothWarmingUp::builder(1.0), -1);
//! let err = builder.build().unwrap_err();
//! assert_eq!(err.reason(), ConfigReason::WarmUpNegative);
//! assert_eq!(err.to_string(), "warm-up period must not be negative, got -1 µs");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{SmoothBursty, SmoothWarmingUp, SmoothWarmingUpBuilder};
use crate::clock::Clock;
use crate::limiter::{AcquireError, Grant};

/// Guava's `tryAcquire(permits, timeout, MICROSECONDS)`.
pub trait GuavaTimeouts {
    /// Reserves `permits` if the wait is at most `timeout_micros` (negative
    /// means 0), otherwise refuses and changes nothing.
    ///
    /// # Errors
    ///
    /// [`AcquireError::WouldWait`] when refused,
    /// [`AcquireError::ZeroPermits`] for 0 permits.
    fn try_acquire_micros(&self, permits: u32, timeout_micros: i64) -> Result<Grant, AcquireError>;
}

impl<C: Clock> GuavaTimeouts for SmoothBursty<C> {
    fn try_acquire_micros(&self, permits: u32, timeout_micros: i64) -> Result<Grant, AcquireError> {
        self.core.try_acquire_micros(permits, timeout_micros)
    }
}

impl<C: Clock> GuavaTimeouts for SmoothWarmingUp<C> {
    fn try_acquire_micros(&self, permits: u32, timeout_micros: i64) -> Result<Grant, AcquireError> {
        self.core.try_acquire_micros(permits, timeout_micros)
    }
}

/// Guava's `create(rate, warmupPeriod, MICROSECONDS)`.
pub trait GuavaWarmup {
    /// The warm-up period in signed microseconds, as Guava's
    /// `unit.toMicros(period)` gives it; a negative value is refused at build
    /// with [`WarmUpNegative`](crate::ConfigReason::WarmUpNegative).
    fn warmup_micros(self, micros: i64) -> Self;
}

impl GuavaWarmup for SmoothWarmingUpBuilder {
    fn warmup_micros(self, micros: i64) -> Self {
        self.signed_warmup_micros(micros)
    }
}
