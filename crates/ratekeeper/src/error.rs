//! [`ConfigError`]: the one error every builder, configuration and runtime
//! change returns, shaped like `std::io::Error` (an opaque value with a
//! [`ConfigErrorKind`] and a detail other crates can set and downcast). A
//! leaf: the rooms convert into it; it imports none of them.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Why a limiter could not be built or reconfigured: a [`kind`](Self::kind)
/// to match on and the room's typed detail. `Display` is the detail's
/// message, [`source`](Error::source) its source; equal when kinds and
/// messages are.
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
    /// The rate: not finite and positive, or one the schedule cannot keep.
    Rate,
    /// The pacer's strictness.
    Strictness,
    /// The token pool's burst ratio.
    BurstRatio,
    /// The token pool's fill interval, or a hand fill of a self-filling pool.
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
    /// A textual configuration that does not parse, or clashing fields.
    Syntax,
    /// A kind or setting the backend does not keep (a token pool on
    /// `ratekeeper-redis`).
    Unsupported,
    /// A backend's own setting (`ratekeeper-redis`: a share, a deadline, a key).
    Backend,
    /// A keyed limiter's key cap: zero or above [`MAX_KEYS`](crate::keyed::MAX_KEYS).
    MaxKeys,
    /// An IP key's prefix length: above 128 for IPv6 or 32 for IPv4.
    IpPrefix,
}

impl ConfigError {
    /// An error of `kind` with `detail` as message and cause, for rooms
    /// outside this crate too.
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

/// A duration as one humantime word that parses back exactly (`1m30s`).
pub(crate) fn fmt_duration(d: std::time::Duration) -> String {
    if d.is_zero() {
        return "0s".to_owned();
    }
    humantime::format_duration(d).to_string().replace(' ', "")
}

#[cfg(all(test, not(loom)))]
mod tests;
