//! [`CoreKeyed`]: the core crate's bounded, evicting
//! [`Keyed`](ratekeeper::keyed::Keyed) map as the layer's [`KeyedLimit`].

use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use ratekeeper::bucket::RefillConfig;
use ratekeeper::config::{KindConfig, LimiterConfig};
use ratekeeper::keyed::{KeyHasher, Keyed, KeyedBuilder, KeyedError, KeyedMetrics};
use ratekeeper::{AcquireError, Clock, DefaultClock, Grant};

use crate::limit::KeyedLimit;
use crate::policy::Policy;
use crate::ConfigError;

/// A [`Keyed`] map of per-key limits (a hard cap on live keys, exact
/// eviction of recovered keys, an explicit overflow policy) with the quota
/// its headers describe, derived from the same configuration
/// ([`Policy::from_config`]), so the limit and what it announces cannot
/// disagree. For a refill bucket's configuration, the
/// `RateLimit` header's remaining count on admitted responses is the
/// key's exact available permits; for a pacer's, the schedule's lower
/// bound ([`schedule_remaining`](crate::schedule_remaining)). A key the map cannot track now (a full map whose
/// keys all hold debt, under [`Overflow::DenyNew`](ratekeeper::keyed::Overflow::DenyNew))
/// is refused with [`AcquireError::Unavailable`] (503 at the layer); its
/// metrics stay the map's ([`CoreKeyed::keyed`]).
///
/// ```
/// use ratekeeper::keyed::{Keyed, Overflow};
/// use ratekeeper_tower::{CoreKeyed, HeaderKey, KeyedLimit, RateLimitLayer};
///
/// let settings = Keyed::builder().max_keys(100_000).overflow(Overflow::EvictLeastDebt);
/// let limit = CoreKeyed::from_builder("per-key", settings, &"refill:10,100ms,capacity=5".parse()?)?;
/// assert_eq!(limit.policy().to_string(), r#""per-key";q=10;w=1;rk-burst=5"#);
/// let key = http::HeaderValue::from_static("a"); // HeaderKey's key type
/// assert!(limit.reserve(&key, 1, None).is_ok());
/// let layer = RateLimitLayer::builder(limit).key(HeaderKey::new("x-api-key")?).build()?;
/// # let _ = layer;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CoreKeyed<K, C = DefaultClock, S = KeyHasher> {
    keyed: Keyed<K, C, S>,
    policy: Policy,
}

impl<K: Hash + Eq + Clone> CoreKeyed<K> {
    /// A [`Keyed`] map of `config` with at most `max_keys` keys live (the
    /// default overflow policy: refuse new keys while every key holds
    /// debt), on the default clock, announced as the policy `name` of
    /// `config`'s rate and burst ([`Policy::from_config`]).
    ///
    /// ```
    /// use ratekeeper_tower::{CoreKeyed, KeyedLimit};
    ///
    /// let limit: CoreKeyed<u32> = CoreKeyed::from_config("per-ip", &"refill:10,100ms,capacity=5".parse()?, 100_000)?;
    /// assert_eq!(limit.policy().burst(), 5);
    /// assert!(limit.reserve(&7, 1, Some(std::time::Duration::ZERO)).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Policy::from_config`]; [`ConfigError::Core`] for what the core
    /// crate refuses: a cap of 0 or above
    /// [`MAX_KEYS`](ratekeeper::keyed::MAX_KEYS), a kind that cannot be
    /// kept per key (a token pool, a cycle limiter).
    pub fn from_config(
        name: impl Into<String>,
        config: &LimiterConfig,
        max_keys: usize,
    ) -> Result<CoreKeyed<K>, ConfigError> {
        CoreKeyed::from_builder(name, Keyed::builder().max_keys(max_keys), config)
    }

    /// A token bucket per key: up to `burst` requests at once, refilled at
    /// `rate` a second (a `refill` configuration of capacity `burst`, one
    /// permit every `1 / rate` seconds, each new key full), at most
    /// `max_keys` keys live.
    ///
    /// ```
    /// use ratekeeper_tower::{CoreKeyed, KeyedLimit};
    ///
    /// let limit: CoreKeyed<u32> = CoreKeyed::token_bucket("per-key", 2.0, 5, 100_000)?;
    /// assert_eq!(limit.policy().to_string(), r#""per-key";q=6;w=3;rk-burst=5"#);
    /// let now = Some(std::time::Duration::ZERO);
    /// assert!((0..5).all(|_| limit.reserve(&7, 1, now).is_ok()));
    /// assert!(limit.reserve(&7, 1, now).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::Rate`] for a rate that is not positive and finite, or
    /// above 10^9 (a refill of less than a nanosecond);
    /// [`ConfigError::ZeroBurst`]; as [`from_config`](CoreKeyed::from_config).
    pub fn token_bucket(
        name: impl Into<String>,
        rate: f64,
        burst: u32,
        max_keys: usize,
    ) -> Result<CoreKeyed<K>, ConfigError> {
        CoreKeyed::from_config(name, &bucket_config(rate, burst)?, max_keys)
    }

    /// A [`Keyed`] map of `config` with the settings of `builder` (cap,
    /// shards, overflow policy), on the default clock, announced as
    /// [`from_config`](CoreKeyed::from_config) does.
    ///
    /// # Errors
    ///
    /// As [`from_config`](CoreKeyed::from_config).
    pub fn from_builder(
        name: impl Into<String>,
        builder: KeyedBuilder,
        config: &LimiterConfig,
    ) -> Result<CoreKeyed<K>, ConfigError> {
        CoreKeyed::from_builder_with_clock(name, builder, config, DefaultClock::new())
    }
}

/// The refill configuration of a token bucket of `burst` at `rate`.
pub(crate) fn bucket_config(rate: f64, burst: u32) -> Result<LimiterConfig, ConfigError> {
    if burst == 0 {
        return Err(ConfigError::ZeroBurst);
    }
    if !(rate.is_finite() && rate > 0.0 && rate <= 1e9) {
        return Err(ConfigError::Rate(rate));
    }
    // One permit every 1/rate s, to the nanosecond (at most ~2^64 ns).
    let nanos = (1e9 / rate).round().min(u64::MAX as f64) as u64;
    let refill = RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_nanos(nanos.max(1)))
        .permit_capacity(u64::from(burst))
        .initial_permits(u64::from(burst))
        .build()
        .map_err(ConfigError::Core)?;
    Ok(LimiterConfig::new(KindConfig::Refill(refill)))
}

impl<K: Hash + Eq + Clone, C: Clock + Clone + Send + Sync + 'static> CoreKeyed<K, C> {
    /// [`from_builder`](CoreKeyed::from_builder) on `clock`.
    ///
    /// # Errors
    ///
    /// As [`from_config`](CoreKeyed::from_config).
    pub fn from_builder_with_clock(
        name: impl Into<String>,
        builder: KeyedBuilder,
        config: &LimiterConfig,
        clock: C,
    ) -> Result<CoreKeyed<K, C>, ConfigError> {
        let policy = Policy::from_config(name, config)?;
        let keyed = builder
            .build_with_clock(config, clock)
            .map_err(ConfigError::Core)?;
        Ok(CoreKeyed { keyed, policy })
    }
}

impl<K, C, S> CoreKeyed<K, C, S> {
    /// The map (its [`metrics`](Keyed::metrics): live keys, evictions by
    /// kind, keys denied, requests overflowed).
    pub fn keyed(&self) -> &Keyed<K, C, S> {
        &self.keyed
    }
}

impl<K, C, S> CoreKeyed<K, C, S>
where
    K: Hash + Eq + Clone,
    C: Clock,
    S: BuildHasher,
{
    /// The map's metrics.
    pub fn metrics(&self) -> KeyedMetrics {
        self.keyed.metrics()
    }
}

impl<K, C, S> KeyedLimit<K> for CoreKeyed<K, C, S>
where
    K: Hash + Eq + Clone + Send + Sync,
    C: Clock + Send + Sync,
    S: BuildHasher + Send + Sync,
{
    fn reserve(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        self.keyed
            .reserve(key, permits, max_wait)
            .map_err(|e| match e {
                KeyedError::Limiter(e) => e,
                // Not tracked now: not this request's fault, and not its
                // rate.
                _ => AcquireError::Unavailable,
            })
    }

    fn remaining(&self, key: &K, grant: &Grant) -> u64 {
        match self.keyed.available(key) {
            // Read after the grant: exact but for requests racing it.
            Some(available) => available.min(u64::from(self.policy.burst())),
            None => crate::schedule_remaining(&self.policy, grant),
        }
    }

    fn policy(&self) -> &Policy {
        &self.policy
    }
}
