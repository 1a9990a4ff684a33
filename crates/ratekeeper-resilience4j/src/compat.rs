//! Resilience4j's shapes: signed `i64` counts and nanoseconds where the
//! Rust-native API takes `u32` and [`Duration`].
//!
//! Resilience4j configures a limiter with a Java `int` limit and signed
//! `Duration`s. A negative or oversized value is a configuration error
//! there, and the conformance vectors replay such values. This room keeps
//! Java's shapes: [`ConfigBuilder`] (every field optional and signed, with
//! [`overwrite`](ConfigBuilder::overwrite) for the [`Registry`](crate::Registry)),
//! and the signed forms of the runtime changes.

use std::time::Duration;

use ratekeeper::ConfigError;

use crate::config::{refused, JavaShape};
use crate::PermitLimiter;

pub use crate::config::ConfigBuilder;

/// Resilience4j's `changeLimitForPeriod(int)` with a signed limit: below 1
/// and above `u32::MAX` are refused, the rest goes to
/// [`PermitLimiter::change_limit_for_period`].
///
/// # Errors
///
/// [`InvalidLimitForPeriod`](ratekeeper::ConfigReason::InvalidLimitForPeriod)
/// below 1, [`LimitForPeriodTooLarge`](ratekeeper::ConfigReason::LimitForPeriodTooLarge)
/// above `u32::MAX`, or what the limiter refuses; the limiter is then
/// unchanged.
///
/// ```
/// use ratekeeper::ConfigReason;
/// use ratekeeper_resilience4j::{compat, RefillLimiter};
///
/// let limiter = RefillLimiter::of_defaults("api");
/// let err = compat::change_limit_for_period(&limiter, -1).unwrap_err();
/// assert_eq!(err.reason(), ConfigReason::InvalidLimitForPeriod);
/// assert_eq!(err.to_string(), "limit for period must be at least 1, got -1");
/// compat::change_limit_for_period(&limiter, 20)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn change_limit_for_period<L: PermitLimiter + ?Sized>(
    limiter: &L,
    limit: i64,
) -> Result<(), ConfigError> {
    if limit < 1 {
        return Err(refused(JavaShape::InvalidLimitForPeriod(limit)));
    }
    let limit =
        u32::try_from(limit).map_err(|_| refused(JavaShape::LimitForPeriodTooLarge(limit)))?;
    limiter.change_limit_for_period(limit)
}

/// [`PermitLimiter::change_timeout`] from signed nanoseconds, as a
/// Resilience4j configuration may carry them.
///
/// # Errors
///
/// [`NegativeTimeout`](ratekeeper::ConfigReason::NegativeTimeout) below 0;
/// the limiter is then unchanged.
pub fn change_timeout_nanos<L: PermitLimiter + ?Sized>(
    limiter: &L,
    nanos: i64,
) -> Result<(), ConfigError> {
    if nanos < 0 {
        return Err(refused(JavaShape::NegativeTimeout(i128::from(nanos))));
    }
    limiter.change_timeout(Duration::from_nanos(nanos as u64))
}
