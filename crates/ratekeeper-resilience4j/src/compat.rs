//! Resilience4j's shapes: signed `i64` counts and nanoseconds where the
//! Rust-native API takes `u32` and [`Duration`].
//!
//! Resilience4j configures a limiter with a Java `int` limit and signed
//! `Duration`s. A negative or oversized value is a configuration error
//! there, and the conformance vectors replay such values. This room keeps
//! Java's shapes: [`ConfigBuilder`] (every field optional and signed, with
//! [`overwrite`](ConfigBuilder::overwrite) for the [`Registry`](crate::Registry);
//! it is the core's `ratekeeper::bucket::ConfigBuilder`), and the signed
//! forms of the runtime changes.

use std::time::Duration;

use ratekeeper::bucket::PermitConfigError;
use ratekeeper::ConfigError;

use crate::PermitLimiter;

pub use ratekeeper::bucket::ConfigBuilder;

/// Resilience4j's `changeLimitForPeriod(int)` with a signed limit: below 1
/// and above `u32::MAX` are refused, the rest goes to
/// [`PermitLimiter::change_limit_for_period`].
///
/// # Errors
///
/// [`PermitConfigError::InvalidLimitForPeriod`] below 1,
/// [`PermitConfigError::LimitForPeriodTooLarge`] above `u32::MAX`, or what
/// the limiter refuses; the limiter is then unchanged.
///
/// ```
/// use ratekeeper::bucket::PermitConfigError;
/// use ratekeeper_resilience4j::{compat, RefillLimiter};
///
/// let limiter = RefillLimiter::of_defaults("api");
/// let err = compat::change_limit_for_period(&limiter, -1).unwrap_err();
/// assert_eq!(err.downcast_ref(), Some(&PermitConfigError::InvalidLimitForPeriod(-1)));
/// compat::change_limit_for_period(&limiter, 20)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn change_limit_for_period<L: PermitLimiter + ?Sized>(
    limiter: &L,
    limit: i64,
) -> Result<(), ConfigError> {
    if limit < 1 {
        return Err(PermitConfigError::InvalidLimitForPeriod(limit).into());
    }
    let limit =
        u32::try_from(limit).map_err(|_| PermitConfigError::LimitForPeriodTooLarge(limit))?;
    limiter.change_limit_for_period(limit)
}

/// [`PermitLimiter::change_timeout`] from signed nanoseconds, as a
/// Resilience4j configuration may carry them.
///
/// # Errors
///
/// [`PermitConfigError::NegativeTimeout`] below 0; the limiter is then
/// unchanged.
pub fn change_timeout_nanos<L: PermitLimiter + ?Sized>(
    limiter: &L,
    nanos: i64,
) -> Result<(), ConfigError> {
    if nanos < 0 {
        return Err(PermitConfigError::NegativeTimeout(i128::from(nanos)).into());
    }
    limiter.change_timeout(Duration::from_nanos(nanos as u64))
}
