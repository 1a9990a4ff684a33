//! [`ConfigError`]: the one error every builder and configuration returns.
//!
//! Every builder, configuration and runtime change in the crate returns
//! this one type, so code that builds several kinds of limiter (the CLI, a
//! registry, a configuration file) handles one error and matches on a
//! [`ConfigErrorKind`]. Its message says what was refused and what to write
//! instead. The shape is `std::io::Error`'s: an opaque value with a kind,
//! whose detail a crate built on this one (a Redis backend) can set and
//! downcast.
//!
//! This module is a leaf: the rooms convert into it; it imports none of them.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Why a limiter could not be built or reconfigured: a [`kind`](Self::kind)
/// to match on, and the room's typed detail behind it.
///
/// `Display` is the detail's message; [`source`](Error::source) is the
/// detail's source, so a report walking the chain sees each cause once.
/// Two errors are equal when their kinds and messages are.
///
/// # Examples
///
/// ```
/// use ratekeeper::pacer::StrictnessError;
/// use ratekeeper::{ConfigErrorKind, Pacer, Rate};
///
/// let err = Pacer::builder(Rate::new(100.0)?).strictness(-1.0).build().unwrap_err();
/// assert_eq!(err.kind(), ConfigErrorKind::Strictness);
/// assert_eq!(err.downcast_ref(), Some(&StrictnessError::Negative(-1.0)));
/// assert_eq!(err.to_string(), "strictness must not be negative, got -1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ConfigError {
    kind: ConfigErrorKind,
    detail: Arc<dyn Error + Send + Sync + 'static>,
}

/// What a [`ConfigError`] is about: which setting was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The rate: not a finite positive number, or one the limiter's schedule
    /// cannot keep (above one permit per nanosecond, a slice above 2^62 ns, a
    /// Resilience4j period that holds no whole permit).
    Rate,
    /// The pacer's strictness.
    Strictness,
    /// The token pool's burst ratio.
    BurstRatio,
    /// The token pool's fill interval, or filling it by hand where it fills
    /// itself.
    Filling,
    /// The shard count of a sharded pacer.
    Shards,
    /// SmoothWarmingUp's warm-up period.
    WarmUp,
    /// SmoothWarmingUp's cold factor.
    ColdFactor,
    /// SmoothBursty's maximum burst seconds.
    MaxBurst,
    /// A Resilience4j limit for period.
    LimitForPeriod,
    /// A Resilience4j refresh period.
    RefreshPeriod,
    /// A timeout (a Resilience4j limiter's maximum wait).
    Timeout,
    /// A Resilience4j refill limiter's permit capacity.
    Capacity,
    /// A Resilience4j refill limiter's initial permits.
    InitialPermits,
    /// A textual configuration that does not parse (`KIND:ARGS`), or fields
    /// that do not go together.
    Syntax,
    /// A limiter kind or setting the chosen backend does not keep (for
    /// example a token pool on `ratekeeper-redis`, which keeps the Pacer's
    /// schedule and the refill bucket).
    Unsupported,
    /// A setting of a backend rather than of the limit itself: a failure
    /// policy's share, a deadline, a key (`ratekeeper-redis`).
    Backend,
    /// A keyed limiter's cap on live keys: zero, or above
    /// [`MAX_KEYS`](crate::keyed::MAX_KEYS).
    MaxKeys,
    /// An IP key's prefix length: above 128 for IPv6 or 32 for IPv4.
    IpPrefix,
}

impl ConfigError {
    /// A configuration error of `kind` with `detail` as its message and
    /// cause. Rooms outside this crate (a Redis backend, a keyed limiter)
    /// use it to report their own settings the same way.
    ///
    /// ```
    /// use ratekeeper::{ConfigError, ConfigErrorKind};
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("key prefix must not be empty")]
    /// struct EmptyPrefix;
    ///
    /// let err = ConfigError::new(ConfigErrorKind::Syntax, EmptyPrefix);
    /// assert_eq!(err.to_string(), "key prefix must not be empty");
    /// assert!(err.downcast_ref::<EmptyPrefix>().is_some());
    /// ```
    pub fn new<E: Error + Send + Sync + 'static>(kind: ConfigErrorKind, detail: E) -> ConfigError {
        ConfigError {
            kind,
            detail: Arc::new(detail),
        }
    }

    /// Which setting was refused.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }

    /// The room's own error, as a trait object.
    pub fn detail(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.detail
    }

    /// The room's own error, if it is an `E`: the exact refused value.
    ///
    /// ```
    /// use ratekeeper::smooth::{SmoothBursty, SmoothError};
    ///
    /// let err = SmoothBursty::builder(0.0).build().unwrap_err();
    /// assert_eq!(err.downcast_ref::<SmoothError>(), Some(&SmoothError::Rate(0.0)));
    /// ```
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.detail.downcast_ref::<E>()
    }
}

impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigError")
            .field("kind", &self.kind)
            .field("detail", &self.detail)
            .finish()
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.detail, f)
    }
}

impl Error for ConfigError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.detail.source()
    }
}

impl PartialEq for ConfigError {
    fn eq(&self, other: &ConfigError) -> bool {
        self.kind == other.kind && self.detail.to_string() == other.detail.to_string()
    }
}

/// A duration as one word that humantime parses back exactly: `0s`, `50ms`,
/// `1m30s`, `1ms500us` (for messages and configurations printed back).
pub(crate) fn fmt_duration(d: std::time::Duration) -> String {
    if d.is_zero() {
        return "0s".to_owned();
    }
    humantime::format_duration(d).to_string().replace(' ', "")
}

#[cfg(all(test, not(loom)))]
mod tests;
