//! The Pacer's one knob, validated.

use core::fmt;

use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};

/// How a [`Pacer`](crate::Pacer) treats time callers did not use on
/// schedule: nosqlbench's single "strictness" number.
///
/// | value | mode | after callers fall behind |
/// |---|---|---|
/// | `0.0` | average | the whole backlog may go at once |
/// | `0 < s < 1` | burst compensation | each time the clock is read, `s` (rounded down to 1/2ⁿ) of the open gap is forfeited |
/// | `1.0` | strict | lateness is never caught up: no two ops closer than 1/rate |
/// | `s > 1` | burst ratio | ops go at `s × rate` until the backlog is gone |
///
/// ```text
/// one op per 4 ticks; the caller stalls until tick 16, then is always ready
///
/// ideal      |x---x---x---x---x---x---x---x---x---x---x
/// average    |----------------X---x---x---x---x---x---x   X = 5 ops at once, then on schedule
/// strict     |----------------x---x---x---x---x---x---x   4 slots late, for good
/// burst 2.0  |----------------x-x-x-x-x-x-x-x-x---x---x   twice the rate until caught up
/// ```
///
/// # Examples
///
/// ```
/// use ratekeeper::pacer::{Strictness, StrictnessMode};
///
/// assert_eq!(Strictness::new(0.0)?.mode(), StrictnessMode::Average);
/// assert_eq!(Strictness::new(0.3)?.mode(), StrictnessMode::Compensate { shift: 2 });
/// assert_eq!(Strictness::new(1.0)?.mode(), StrictnessMode::Strict);
/// assert_eq!(Strictness::new(1.1)?.mode(), StrictnessMode::Burst(1.1));
/// assert!(Strictness::new(f64::NAN).is_err());
/// assert!(Strictness::new(-1.0).is_err());
/// # Ok::<(), ratekeeper::ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq)]
pub struct Strictness(f64);

/// The mode a [`Strictness`] value selects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StrictnessMode {
    /// `0.0`: average only; any backlog may be caught up at once.
    Average,
    /// `0 < s < 1`: forfeit `gap >> shift` of the open gap at each clock refresh.
    Compensate {
        /// `1/2^shift` is the share forfeited (see [`compensation_shift`]).
        shift: u32,
    },
    /// `1.0`: ops never closer than one slot; lateness is kept.
    Strict,
    /// `s > 1`: while behind, ops go at `s × rate`.
    Burst(f64),
}

impl Strictness {
    /// The default: nosqlbench's burst ratio 1.1.
    pub const DEFAULT: Strictness = Strictness(1.1);

    /// Validates a strictness value: finite and not negative.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] of kind [`Strictness`](ConfigErrorKind::Strictness),
    /// for the reason [`StrictnessNan`](ConfigReason::StrictnessNan),
    /// [`StrictnessNegative`](ConfigReason::StrictnessNegative) or
    /// [`StrictnessNotFinite`](ConfigReason::StrictnessNotFinite).
    pub fn new(value: f64) -> Result<Strictness, ConfigError> {
        Ok(Strictness::checked(value)?)
    }

    /// [`Strictness::new`] with the crate's detail.
    pub(crate) fn checked(value: f64) -> Result<Strictness, StrictnessError> {
        if value.is_nan() {
            Err(StrictnessError::NaN)
        } else if value < 0.0 {
            Err(StrictnessError::Negative(value))
        } else if value.is_infinite() {
            Err(StrictnessError::NotFinite(value))
        } else {
            Ok(Strictness(value))
        }
    }

    /// The number as given.
    pub fn get(self) -> f64 {
        self.0
    }

    /// The mode this value selects.
    pub fn mode(self) -> StrictnessMode {
        let s = self.0;
        if s == 0.0 {
            StrictnessMode::Average
        } else if s < 1.0 {
            StrictnessMode::Compensate {
                // Cannot fail: 0 < s < 1 here.
                shift: shift_of(s).unwrap_or(63),
            }
        } else if s == 1.0 {
            StrictnessMode::Strict
        } else {
            StrictnessMode::Burst(s)
        }
    }
}

impl Default for Strictness {
    fn default() -> Self {
        Strictness::DEFAULT
    }
}

impl fmt::Debug for Strictness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Strictness({})", self.0)
    }
}

impl fmt::Display for Strictness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// nosqlbench's "limit compensation" shift for a ratio in `[0, 1]`:
/// `min(nlz((long)(ratio × 2^63)), 63)`, so a ratio rounds down to a power
/// of two `1/2^n`: `1.0` is 0 (the whole gap), `0.0` is 63 (nothing).
///
/// ```
/// use ratekeeper::pacer::compensation_shift;
///
/// assert_eq!(compensation_shift(0.75), Ok(1));
/// assert_eq!(compensation_shift(0.1), Ok(4));
/// ```
///
/// # Errors
///
/// A [`ConfigError`] for the reason
/// [`StrictnessAboveOne`](ConfigReason::StrictnessAboveOne) above 1.0; NaN
/// and negative ratios (which nosqlbench maps to 63 and 0) are errors too.
pub fn compensation_shift(ratio: f64) -> Result<u32, ConfigError> {
    Ok(shift_of(ratio)?)
}

/// [`compensation_shift`] with the crate's detail.
pub(crate) fn shift_of(ratio: f64) -> Result<u32, StrictnessError> {
    if ratio.is_nan() {
        return Err(StrictnessError::NaN);
    }
    if ratio > 1.0 {
        return Err(StrictnessError::AboveOne(ratio));
    }
    if ratio < 0.0 {
        return Err(StrictnessError::Negative(ratio));
    }
    if ratio == 1.0 {
        return Ok(0);
    }
    // Java's (long) cast of a double: truncates, saturates; `as` does the same.
    // (double)Long.MAX_VALUE is exactly 2^63.
    let scaled = (ratio * 9_223_372_036_854_775_808.0) as i64;
    Ok(scaled.leading_zeros().min(63))
}

/// Why a strictness value was rejected: the detail of a [`ConfigError`].
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum StrictnessError {
    /// NaN.
    #[error("strictness must be a number, got NaN")]
    NaN,
    /// Below zero.
    #[error("strictness must not be negative, got {0}")]
    Negative(f64),
    /// Infinite.
    #[error("strictness must be finite, got {0}")]
    NotFinite(f64),
    /// Above 1 where only a compensation ratio in `[0, 1]` is allowed.
    #[error("compensation ratio must be at most 1.0, got {0}")]
    AboveOne(f64),
}

impl StrictnessError {
    /// The exact reason, for [`ConfigError::reason`].
    pub(crate) fn reason(self) -> ConfigReason {
        match self {
            StrictnessError::NaN => ConfigReason::StrictnessNan,
            StrictnessError::Negative(_) => ConfigReason::StrictnessNegative,
            StrictnessError::NotFinite(_) => ConfigReason::StrictnessNotFinite,
            StrictnessError::AboveOne(_) => ConfigReason::StrictnessAboveOne,
        }
    }
}

impl From<StrictnessError> for ConfigError {
    fn from(e: StrictnessError) -> Self {
        ConfigError::because(ConfigErrorKind::Strictness, e.reason(), e)
    }
}
