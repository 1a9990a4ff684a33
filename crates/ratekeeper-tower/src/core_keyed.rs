//! [`CoreKeyed`]: the core crate's bounded, evicting
//! [`Keyed`](ratekeeper::keyed::Keyed) map as the layer's [`KeyedLimit`].

use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use ratekeeper::keyed::{KeyHasher, Keyed, KeyedError, KeyedMetrics};
use ratekeeper::{AcquireError, Clock, DefaultClock, Grant};

use ratekeeper::config::LimiterConfig;

use crate::limit::KeyedLimit;
use crate::policy::Policy;
use crate::ConfigError;

/// A [`Keyed`] map of per-key limits (a hard cap on live keys, exact
/// eviction of recovered keys, an explicit overflow policy) with the quota
/// its headers describe. For a refill bucket's configuration, the
/// `RateLimit` header's remaining count on admitted responses is the
/// key's exact available permits; for a pacer's, the schedule's lower
/// bound ([`schedule_remaining`](crate::schedule_remaining)). A key the map cannot track now (a full map whose
/// keys all hold debt, under [`Overflow::DenyNew`](ratekeeper::keyed::Overflow::DenyNew))
/// is refused with [`AcquireError::Unavailable`] (503 at the layer); its
/// metrics stay the map's ([`CoreKeyed::keyed`]).
///
/// ```
/// use ratekeeper::keyed::Keyed;
/// use ratekeeper_tower::{CoreKeyed, HeaderKey, KeyedLimit, Policy, RateLimitLayer};
///
/// let keyed = Keyed::builder()
///     .max_keys(100_000)
///     .build(&"refill:10,100ms,capacity=5,timeout=0s".parse()?)?;
/// let limit = CoreKeyed::new(keyed, Policy::from_rate("per-key", 10.0)?.with_burst(5)?);
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
    /// debt), on the default clock, described by `policy`.
    ///
    /// ```
    /// use ratekeeper_tower::{CoreKeyed, KeyedLimit, Policy};
    ///
    /// let policy = Policy::from_rate("per-ip", 10.0)?.with_burst(5)?;
    /// let limit: CoreKeyed<u32> = CoreKeyed::from_config(&"refill:10,100ms,capacity=5".parse()?, policy, 100_000)?;
    /// assert!(limit.reserve(&7, 1, Some(std::time::Duration::ZERO)).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::Core`] for what the core crate refuses: a cap of 0 or
    /// above [`MAX_KEYS`](ratekeeper::keyed::MAX_KEYS), a kind that cannot
    /// be kept per key (a token pool, a cycle limiter).
    pub fn from_config(
        config: &LimiterConfig,
        policy: Policy,
        max_keys: usize,
    ) -> Result<CoreKeyed<K>, ConfigError> {
        let keyed = Keyed::builder()
            .max_keys(max_keys)
            .build(config)
            .map_err(ConfigError::Core)?;
        Ok(CoreKeyed::new(keyed, policy))
    }
}

impl<K, C, S> CoreKeyed<K, C, S> {
    /// `keyed`, described by `policy` in the headers.
    pub fn new(keyed: Keyed<K, C, S>, policy: Policy) -> Self {
        CoreKeyed { keyed, policy }
    }

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
