//! `SmoothError`: why a smooth limiter could not be built or its rate
//! changed.

use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};

/// Why a smooth limiter could not be built or its rate changed: the detail
/// of a [`ConfigError`].
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum SmoothError {
    /// The rate is not greater than 0 (zero, negative or NaN).
    #[error("rate must be positive, got {0}")]
    Rate(f64),
    /// A negative warm-up period, in microseconds.
    #[error("warm-up period must not be negative, got {0} µs")]
    WarmupNegative(i64),
    /// A cold factor below 1.0, NaN or infinite.
    #[error("cold factor must be finite and at least 1.0, got {0}")]
    ColdFactor(f64),
    /// Burst seconds that are negative, NaN or infinite.
    #[error("max burst seconds must be finite and at least 0, got {0}")]
    MaxBurstSeconds(f64),
}

impl From<SmoothError> for ConfigError {
    fn from(e: SmoothError) -> Self {
        let (kind, reason) = match e {
            SmoothError::Rate(_) => (ConfigErrorKind::Rate, ConfigReason::RateNotPositive),
            SmoothError::WarmupNegative(_) => {
                (ConfigErrorKind::WarmUp, ConfigReason::WarmUpNegative)
            }
            SmoothError::ColdFactor(_) => (ConfigErrorKind::ColdFactor, ConfigReason::ColdFactor),
            SmoothError::MaxBurstSeconds(_) => {
                (ConfigErrorKind::MaxBurst, ConfigReason::MaxBurstSeconds)
            }
        };
        ConfigError::because(kind, reason, e)
    }
}

/// `rate` if it is greater than 0 (`+∞` and subnormals included).
pub(super) fn check_rate(rate: f64) -> Result<f64, SmoothError> {
    // `!(r > 0)`: rejects 0, negatives and NaN; accepts +inf and subnormals.
    if rate > 0.0 {
        Ok(rate)
    } else {
        Err(SmoothError::Rate(rate))
    }
}
