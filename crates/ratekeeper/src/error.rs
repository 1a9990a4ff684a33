//! [`ConfigError`]: the one error every builder, configuration and runtime
//! change returns, shaped like `std::io::Error`: an opaque value with a
//! [`ConfigErrorKind`] (which setting), a [`ConfigReason`] (what exactly was
//! wrong with it) and a message. A leaf: the rooms convert into it; it
//! imports none of them.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Why a limiter could not be built or reconfigured: the
/// [`kind`](Self::kind) of setting refused, the exact
/// [`reason`](Self::reason), and a message that names the refused value and
/// what to write instead. [`source`](Error::source) is the cause, if any;
/// two errors are equal when kind, reason and message are.
///
/// # Examples
///
/// ```
/// use ratekeeper::{ConfigErrorKind, ConfigReason, Pacer, Rate};
///
/// let err = Pacer::builder(Rate::new(100.0)?).strictness(-1.0).build().unwrap_err();
/// assert_eq!(err.kind(), ConfigErrorKind::Strictness);
/// assert_eq!(err.reason(), ConfigReason::StrictnessNegative);
/// assert_eq!(err.to_string(), "strictness must not be negative, got -1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ConfigError {
    kind: ConfigErrorKind,
    reason: ConfigReason,
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

/// What exactly a [`ConfigError`] refused: one reason per check, finer than
/// its [`ConfigErrorKind`]. [`as_str`](Self::as_str) gives each reason's
/// stable snake-case name, as the conformance vectors write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigReason {
    /// The rate is NaN or infinite.
    RateNotFinite,
    /// The rate is zero or negative (for the smooth limiters, also NaN).
    RateNotPositive,
    /// More than one operation per nanosecond: no nanosecond schedule keeps it.
    RateTooFast,
    /// One operation's slice would exceed 2^62 nanoseconds.
    RateTooSlow,
    /// A token pool size of 0 or above [`MAX_POOL_NANOS`](crate::pool::MAX_POOL_NANOS).
    PoolSize,
    /// A bucket's `period / limit` truncates to 0 ns per permit.
    ZeroNanosPerPermit,
    /// A bucket built from a rate: `rate × period` is not a whole number of permits, at least 1.
    NotWholePermits,
    /// The strictness is NaN.
    StrictnessNan,
    /// The strictness is below zero.
    StrictnessNegative,
    /// The strictness is infinite.
    StrictnessNotFinite,
    /// A compensation ratio above 1 where only `[0, 1]` is allowed.
    StrictnessAboveOne,
    /// The burst ratio is below 1.0.
    BurstBelowOne,
    /// The burst ratio is NaN or infinite.
    BurstNotFinite,
    /// A token pool's fill interval outside 1 µs ..= 1 s.
    FillInterval,
    /// A hand refill of a token pool that fills itself.
    NotManual,
    /// A shard count of 0, above the most allowed, or above a keyed limiter's cap.
    Shards,
    /// A negative warm-up period.
    WarmUpNegative,
    /// A cold factor below 1.0, NaN or infinite.
    ColdFactor,
    /// Burst seconds that are negative, NaN or infinite.
    MaxBurstSeconds,
    /// A limit for period below 1.
    InvalidLimitForPeriod,
    /// A limit for period above `u32::MAX`.
    LimitForPeriodTooLarge,
    /// A refresh period shorter than 1 ns.
    InvalidLimitRefreshPeriod,
    /// A refresh period beyond `i64::MAX` nanoseconds.
    LimitRefreshPeriodTooLarge,
    /// A negative timeout.
    NegativeTimeout,
    /// A timeout beyond `i64::MAX` nanoseconds.
    TimeoutTooLarge,
    /// A refill bucket's capacity below its limit for period.
    CapacityBelowLimit,
    /// A refill bucket's capacity above `i64::MAX`.
    CapacityTooLarge,
    /// A refill bucket whose full refill takes beyond `i64::MAX` nanoseconds.
    NanosPerFullCapacityOverflow,
    /// A capacity or initial permits given to the cycle limiter.
    CapacityNotSupported,
    /// Initial permits below 0 or above the capacity.
    InitialPermitsOutOfRange,
    /// A keyed limiter's cap of zero keys.
    MaxKeysZero,
    /// A keyed limiter's cap above [`MAX_KEYS`](crate::keyed::MAX_KEYS).
    MaxKeysTooLarge,
    /// An IP key's prefix length above 128 (IPv6) or 32 (IPv4).
    IpPrefix,
    /// Text that does not parse, or fields that clash.
    Syntax,
    /// A kind or setting the limiter or backend does not keep.
    Unsupported,
    /// A reason another crate gave through [`ConfigError::new`]; its message says more.
    Other,
}

impl ConfigReason {
    /// The reason's stable snake-case name, e.g. `"strictness_negative"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConfigReason::RateNotFinite => "rate_not_finite",
            ConfigReason::RateNotPositive => "rate_not_positive",
            ConfigReason::RateTooFast => "rate_too_fast",
            ConfigReason::RateTooSlow => "rate_too_slow",
            ConfigReason::PoolSize => "pool_size",
            ConfigReason::ZeroNanosPerPermit => "zero_nanos_per_permit",
            ConfigReason::NotWholePermits => "not_whole_permits",
            ConfigReason::StrictnessNan => "strictness_nan",
            ConfigReason::StrictnessNegative => "strictness_negative",
            ConfigReason::StrictnessNotFinite => "strictness_not_finite",
            ConfigReason::StrictnessAboveOne => "strictness_above_one",
            ConfigReason::BurstBelowOne => "burst_below_one",
            ConfigReason::BurstNotFinite => "burst_not_finite",
            ConfigReason::FillInterval => "fill_interval",
            ConfigReason::NotManual => "not_manual",
            ConfigReason::Shards => "shards",
            ConfigReason::WarmUpNegative => "warm_up_negative",
            ConfigReason::ColdFactor => "cold_factor",
            ConfigReason::MaxBurstSeconds => "max_burst_seconds",
            ConfigReason::InvalidLimitForPeriod => "invalid_limit_for_period",
            ConfigReason::LimitForPeriodTooLarge => "limit_for_period_too_large",
            ConfigReason::InvalidLimitRefreshPeriod => "invalid_limit_refresh_period",
            ConfigReason::LimitRefreshPeriodTooLarge => "limit_refresh_period_too_large",
            ConfigReason::NegativeTimeout => "negative_timeout",
            ConfigReason::TimeoutTooLarge => "timeout_too_large",
            ConfigReason::CapacityBelowLimit => "capacity_below_limit",
            ConfigReason::CapacityTooLarge => "capacity_too_large",
            ConfigReason::NanosPerFullCapacityOverflow => "nanos_per_full_capacity_overflow",
            ConfigReason::CapacityNotSupported => "capacity_not_supported",
            ConfigReason::InitialPermitsOutOfRange => "initial_permits_out_of_range",
            ConfigReason::MaxKeysZero => "max_keys_zero",
            ConfigReason::MaxKeysTooLarge => "max_keys_too_large",
            ConfigReason::IpPrefix => "ip_prefix",
            ConfigReason::Syntax => "syntax",
            ConfigReason::Unsupported => "unsupported",
            ConfigReason::Other => "other",
        }
    }

    /// The setting this reason refuses; `None` for [`Other`](Self::Other).
    pub const fn kind(self) -> Option<ConfigErrorKind> {
        use ConfigErrorKind as K;
        use ConfigReason as R;
        Some(match self {
            R::RateNotFinite
            | R::RateNotPositive
            | R::RateTooFast
            | R::RateTooSlow
            | R::PoolSize
            | R::ZeroNanosPerPermit
            | R::NotWholePermits => K::Rate,
            R::StrictnessNan
            | R::StrictnessNegative
            | R::StrictnessNotFinite
            | R::StrictnessAboveOne => K::Strictness,
            R::BurstBelowOne | R::BurstNotFinite => K::BurstRatio,
            R::FillInterval | R::NotManual => K::Filling,
            R::Shards => K::Shards,
            R::WarmUpNegative => K::WarmUp,
            R::ColdFactor => K::ColdFactor,
            R::MaxBurstSeconds => K::MaxBurst,
            R::InvalidLimitForPeriod | R::LimitForPeriodTooLarge => K::LimitForPeriod,
            R::InvalidLimitRefreshPeriod | R::LimitRefreshPeriodTooLarge => K::RefreshPeriod,
            R::NegativeTimeout | R::TimeoutTooLarge => K::Timeout,
            R::CapacityBelowLimit
            | R::CapacityTooLarge
            | R::NanosPerFullCapacityOverflow
            | R::CapacityNotSupported => K::Capacity,
            R::InitialPermitsOutOfRange => K::InitialPermits,
            R::MaxKeysZero | R::MaxKeysTooLarge => K::MaxKeys,
            R::IpPrefix => K::IpPrefix,
            R::Syntax => K::Syntax,
            R::Unsupported => K::Unsupported,
            R::Other => return None,
        })
    }
}

impl fmt::Display for ConfigReason {
    /// The name from [`ConfigReason::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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
        ConfigError::because(kind, ConfigReason::Other, detail)
    }

    /// An error for `reason`, of `reason`'s kind, with `detail` as message
    /// and cause: for crates that refuse what this one would (a wrapper's own
    /// builder).
    ///
    /// ```
    /// use ratekeeper::{ConfigError, ConfigErrorKind, ConfigReason};
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("timeout must not be negative, got -1 ns")]
    /// struct Negative;
    ///
    /// let err = ConfigError::with_reason(ConfigReason::NegativeTimeout, Negative);
    /// assert_eq!(err.kind(), ConfigErrorKind::Timeout);
    /// assert_eq!(err.reason().as_str(), "negative_timeout");
    /// ```
    pub fn with_reason<E: Error + Send + Sync + 'static>(
        reason: ConfigReason,
        detail: E,
    ) -> ConfigError {
        let kind = match reason.kind() {
            Some(kind) => kind,
            None => ConfigErrorKind::Syntax,
        };
        ConfigError::because(kind, reason, detail)
    }

    /// An error of `kind` for `reason`: the rooms' constructor, where a
    /// reason may belong to another kind (a rate that does not parse is a
    /// [`Rate`](ConfigErrorKind::Rate) error for a
    /// [`Syntax`](ConfigReason::Syntax) reason).
    pub(crate) fn because<E: Error + Send + Sync + 'static>(
        kind: ConfigErrorKind,
        reason: ConfigReason,
        detail: E,
    ) -> ConfigError {
        ConfigError {
            kind,
            reason,
            detail: Arc::new(detail),
        }
    }

    /// Which setting was refused.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }

    /// What exactly was wrong with it.
    pub fn reason(&self) -> ConfigReason {
        self.reason
    }

    /// The error behind the message, as a trait object.
    pub fn detail(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.detail
    }

    /// The error behind the message, if it is an `E`: for a detail another
    /// crate gave to [`new`](Self::new) or [`with_reason`](Self::with_reason).
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.detail.downcast_ref::<E>()
    }
}

impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigError")
            .field("kind", &self.kind)
            .field("reason", &self.reason)
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
        self.kind == other.kind
            && self.reason == other.reason
            && self.detail.to_string() == other.detail.to_string()
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
