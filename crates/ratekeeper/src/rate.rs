//! Validated rates: operations per second as a finite, positive `f64`.

use core::fmt;

use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};

/// Nanoseconds in one second, the unit every schedule in this crate is kept in.
pub const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// The longest slice a rate may give one operation: 2^62 ns (146 years).
pub const MAX_NANOS_PER_OP: u64 = 1 << 62;

/// A validated rate in operations per second: finite and greater than zero.
///
/// Fractional rates are allowed (`0.5`: one operation every two seconds).
/// Whether a limiter can keep it is [`Rate::nanos_per_op`]'s question.
///
/// # Examples
///
/// ```
/// use ratekeeper::Rate;
///
/// let r = Rate::new(0.5)?;
/// assert_eq!(r.get(), 0.5);
/// assert_eq!(r.nanos_per_op()?, 2_000_000_000);
///
/// assert!(Rate::new(0.0).is_err());
/// assert!(Rate::new(f64::NAN).is_err());
/// # Ok::<(), ratekeeper::ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(f64);

/// Serializes as the number of operations per second.
#[cfg(feature = "serde")]
impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

impl Rate {
    /// Validates `ops_per_second`. O(1).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] of kind [`Rate`](ConfigErrorKind::Rate):
    /// [`RateNotFinite`](ConfigReason::RateNotFinite) for NaN or an infinity,
    /// [`RateNotPositive`](ConfigReason::RateNotPositive) for zero or a
    /// negative value.
    pub fn new(ops_per_second: f64) -> Result<Rate, ConfigError> {
        Ok(Rate::checked(ops_per_second)?)
    }

    /// [`Rate::new`] with the crate's detail.
    pub(crate) fn checked(ops_per_second: f64) -> Result<Rate, RateError> {
        if !ops_per_second.is_finite() {
            Err(RateError::NotFinite(ops_per_second))
        } else if ops_per_second <= 0.0 {
            Err(RateError::NotPositive(ops_per_second))
        } else {
            Ok(Rate(ops_per_second))
        }
    }

    /// A whole number of operations per second; cannot fail. `const`.
    pub const fn per_second(ops: core::num::NonZeroU32) -> Rate {
        Rate(ops.get() as f64)
    }

    /// The rate in operations per second.
    pub const fn get(self) -> f64 {
        self.0
    }

    /// One operation's slice: `floor(1e9 / rate)` ns, as nosqlbench computes
    /// it. O(1).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] of kind [`Rate`](ConfigErrorKind::Rate):
    /// [`RateTooFast`](ConfigReason::RateTooFast) above one operation per
    /// nanosecond, [`RateTooSlow`](ConfigReason::RateTooSlow) when the slice
    /// exceeds 2^62 ns.
    pub fn nanos_per_op(self) -> Result<u64, ConfigError> {
        Ok(self.slice()?)
    }

    /// [`Rate::nanos_per_op`] with the crate's detail.
    pub(crate) fn slice(self) -> Result<u64, RateError> {
        let nanos = NANOS_PER_SECOND as f64 / self.0;
        if nanos < 1.0 {
            Err(RateError::TooFast(self.0))
        } else if nanos > MAX_NANOS_PER_OP as f64 {
            Err(RateError::TooSlow(self.0))
        } else {
            // Truncation toward zero is the reference's rounding.
            Ok(nanos as u64)
        }
    }

    /// The rate a whole-nanosecond schedule keeps: `1e9 / floor(1e9 /
    /// rate)` ops/s, what a [`Pacer`](crate::Pacer) or
    /// [`TokenPool`](crate::TokenPool) runs at. Never below the rate, above
    /// it by less than one part in the slice's nanoseconds (so up to +96 %
    /// for 1–2 ns slices).
    ///
    /// # Errors
    ///
    /// As [`nanos_per_op`](Self::nanos_per_op).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::Rate;
    ///
    /// assert_eq!(Rate::new(1000.0)?.effective_rate()?, 1000.0);
    /// assert_eq!(Rate::new(3.0)?.effective_rate()?, 1e9 / 333_333_333.0);
    /// // floor(1e9 / 5.1e8) = 1 ns: 96 % too fast.
    /// assert_eq!(Rate::new(5.1e8)?.effective_rate()?, 1e9);
    /// # Ok::<(), ratekeeper::ConfigError>(())
    /// ```
    pub fn effective_rate(self) -> Result<f64, ConfigError> {
        self.nanos_per_op().map(per_second_of_nanos)
    }
}

/// Ops/s of a schedule of `nanos_per_op` whole ns (`+∞` for 0).
pub(crate) fn per_second_of_nanos(nanos_per_op: u64) -> f64 {
    if nanos_per_op == 0 {
        f64::INFINITY
    } else {
        NANOS_PER_SECOND as f64 / nanos_per_op as f64
    }
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rate({}/s)", self.0)
    }
}

impl fmt::Display for Rate {
    /// Shortest form that parses back to the same value, e.g. `12000` or `0.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a rate was rejected: the detail of a [`ConfigError`] of kind
/// [`Rate`](ConfigErrorKind::Rate).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum RateError {
    /// NaN or an infinity.
    #[error("rate must be finite, got {0}")]
    NotFinite(f64),
    /// Zero or negative.
    #[error("rate must be greater than zero, got {0}")]
    NotPositive(f64),
    /// More than one operation per nanosecond: a nanosecond schedule cannot hold it.
    #[error("rate {0}/s is above one operation per nanosecond (1e9/s), the finest schedule a limiter can keep")]
    TooFast(f64),
    /// One operation's slice exceeds 2^62 nanoseconds.
    #[error("rate {0}/s is too slow: one operation's slice would exceed 2^62 ns (146 years)")]
    TooSlow(f64),
}

impl RateError {
    /// The exact reason, for [`ConfigError::reason`].
    pub(crate) fn reason(self) -> ConfigReason {
        match self {
            RateError::NotFinite(_) => ConfigReason::RateNotFinite,
            RateError::NotPositive(_) => ConfigReason::RateNotPositive,
            RateError::TooFast(_) => ConfigReason::RateTooFast,
            RateError::TooSlow(_) => ConfigReason::RateTooSlow,
        }
    }
}

impl From<RateError> for ConfigError {
    fn from(e: RateError) -> Self {
        ConfigError::because(ConfigErrorKind::Rate, e.reason(), e)
    }
}

#[cfg(test)]
mod tests;
