//! [`CoreKeyed`]: the core crate's bounded, evicting
//! [`Keyed`](ratekeeper::keyed::Keyed) map as the layer's [`KeyedLimit`].

use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use ratekeeper::keyed::{Keyed, KeyedError, KeyedMetrics};
use ratekeeper::{AcquireError, Grant, RateLimiter};

use crate::limit::KeyedLimit;
use crate::policy::Policy;

/// A [`Keyed`] map of per-key limiters (a hard cap on live keys, exact
/// eviction of recovered keys, an explicit overflow policy) with the quota
/// its headers describe. A key the map cannot track now (a full map whose
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
pub struct CoreKeyed<K, L, S = std::collections::hash_map::RandomState> {
    keyed: Keyed<K, L, S>,
    policy: Policy,
}

impl<K, L, S> CoreKeyed<K, L, S> {
    /// `keyed`, described by `policy` in the headers.
    pub fn new(keyed: Keyed<K, L, S>, policy: Policy) -> Self {
        CoreKeyed { keyed, policy }
    }

    /// The map (its [`metrics`](Keyed::metrics): live keys, evictions by
    /// kind, keys denied, requests overflowed).
    pub fn keyed(&self) -> &Keyed<K, L, S> {
        &self.keyed
    }
}

impl<K, L, S> CoreKeyed<K, L, S>
where
    K: Hash + Eq + Clone,
    L: RateLimiter,
    S: BuildHasher,
{
    /// The map's metrics.
    pub fn metrics(&self) -> KeyedMetrics {
        self.keyed.metrics()
    }
}

impl<K, L, S> KeyedLimit<K> for CoreKeyed<K, L, S>
where
    K: Hash + Eq + Clone + Send + Sync,
    L: RateLimiter + Send + Sync,
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
                // Not tracked now, or its limiter could not be built: not
                // this request's fault, and not its rate.
                _ => AcquireError::Unavailable,
            })
    }

    fn policy(&self) -> &Policy {
        &self.policy
    }
}
