//! [`BurstRatio`]: a rate spec's second field, validated.

use core::fmt;

use super::error::{SpecError, SpecErrorKind};
use super::DEFAULT_BURST_RATIO;

/// A validated burst ratio: finite and at least `1.0`.
///
/// A limiter that has fallen behind its schedule may run at up to
/// `rate × ratio` while it catches up; `1.0` means "use it or lose it". It
/// is a [`RateSpec`](super::RateSpec)'s second field and a
/// [`TokenPool`](crate::TokenPool)'s burst, and every burst ratio is also a
/// valid Pacer [`Strictness`](crate::pacer::Strictness) (the burst-ratio
/// mode, or strict at `1.0`). Validating once here lets a configuration
/// carry it without checking it again.
///
/// # Examples
///
/// ```
/// use ratekeeper::{BurstRatio, SpecErrorKind};
///
/// let b = BurstRatio::new(1.5)?;
/// assert_eq!(b.get(), 1.5);
/// assert_eq!(b.to_string(), "1.5");
/// assert_eq!(BurstRatio::default(), BurstRatio::DEFAULT);
/// assert_eq!(BurstRatio::DEFAULT.get(), 1.1);
///
/// let err = BurstRatio::new(0.5).unwrap_err();
/// assert_eq!(err.kind(), SpecErrorKind::BurstBelowOne);
/// assert_eq!(err.to_string(), r#"invalid burst ratio "0.5": burst ratio must be at least 1.0"#);
/// assert_eq!(BurstRatio::new(f64::NAN).unwrap_err().kind(), SpecErrorKind::BurstNotFinite);
/// # Ok::<(), ratekeeper::SpecError>(())
/// ```
#[derive(Clone, Copy, PartialEq, PartialOrd)]
pub struct BurstRatio(f64);

impl BurstRatio {
    /// [`DEFAULT_BURST_RATIO`], 1.1: bursts of up to 10 % above the rate.
    pub const DEFAULT: BurstRatio = BurstRatio(DEFAULT_BURST_RATIO);

    /// 1.0: no faster than the rate, ever.
    pub const ONE: BurstRatio = BurstRatio(1.0);

    /// Validates `ratio`. O(1).
    ///
    /// # Errors
    ///
    /// A [`SpecError`] without a field number: [`SpecErrorKind::BurstNotFinite`]
    /// for NaN or an infinity, [`SpecErrorKind::BurstBelowOne`] below `1.0`.
    pub fn new(ratio: f64) -> Result<BurstRatio, SpecError> {
        check(ratio)
            .map(|()| BurstRatio(ratio))
            .map_err(|kind| SpecError::new(kind, None, ratio.to_string()))
    }

    /// The ratio: finite and at least `1.0`.
    pub const fn get(self) -> f64 {
        self.0
    }
}

/// The rule: finite, then at least 1.0.
fn check(ratio: f64) -> Result<(), SpecErrorKind> {
    if !ratio.is_finite() {
        Err(SpecErrorKind::BurstNotFinite)
    } else if ratio < 1.0 {
        Err(SpecErrorKind::BurstBelowOne)
    } else {
        Ok(())
    }
}

impl Default for BurstRatio {
    /// [`BurstRatio::DEFAULT`].
    fn default() -> Self {
        BurstRatio::DEFAULT
    }
}

impl fmt::Debug for BurstRatio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BurstRatio({})", self.0)
    }
}

impl fmt::Display for BurstRatio {
    /// The shortest form that reads back to the same value, e.g. `1.1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
