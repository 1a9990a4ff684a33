//! Where a counted limit's states are kept: the core's capped keyed store
//! in memory, or Redis through `ratekeeper-redis`, shared by replicas.

use std::time::Duration;

use ratekeeper::config::{KindConfig, LimiterConfig};
use ratekeeper::keyed::Keyed;
use ratekeeper::pacer::Strictness;
use ratekeeper::{Clock, ConfigError, CycleConfig, Rate, Recovery, RefillConfig};
use ratekeeper_redis::{Backend, FailurePolicy as RedisPolicy, RedisLimiter, SharedLimit};

use crate::config::{Algorithm, FailurePolicy, RateLimitConfig};

/// A counted limit's states.
pub(super) enum Store<C> {
    /// One state per key on the core's capped keyed store.
    Memory(Keyed<String, C>),
    /// One key per descriptor value on Redis, `{prefix}{value}` (boxed:
    /// the limiter carries its fallback and statistics).
    Redis(Box<RedisLimiter>),
}

impl<C: Clock> Store<C> {
    pub(super) fn is_shared(&self) -> bool {
        matches!(self, Store::Redis(_))
    }

    /// Permits `key` could take now, where the store can tell without a
    /// round trip.
    pub(super) fn available(&self, key: &String) -> Option<u64> {
        match self {
            Store::Memory(k) => k.available(key),
            Store::Redis(_) => None,
        }
    }

    /// The permits `key` could take now and how long until it is as a new
    /// one, where the store can tell without a round trip (one lookup).
    pub(super) fn snapshot(&self, key: &String) -> (Option<u64>, Duration) {
        match self {
            Store::Memory(k) => match k.snapshot(key) {
                (available, Recovery::Debt { nanos }) => (available, Duration::from_nanos(nanos)),
                (available, _) => (available, Duration::ZERO),
            },
            Store::Redis(_) => (None, Duration::ZERO),
        }
    }

    /// Keys tracked in this process (none for Redis: the server holds them).
    pub(super) fn live_keys(&self) -> u64 {
        match self {
            Store::Memory(k) => k.metrics().live_keys,
            Store::Redis(_) => 0,
        }
    }
}

/// Limits kept on Redis: the server, the key prefix, and the failure
/// policy of a limit that names none.
///
/// Every replica configured with the same server, prefix and limits
/// shares them: each descriptor value is one key, decided on the server's
/// clock in one round trip, within the backend's deadline; when the server
/// fails, the limit's `on_redis_failure` (else this default) decides:
/// `allow` admits, `deny` refuses, `local` decides in this process at its
/// learned share of the rate (one local limit for all of a limit's values
/// together).
#[derive(Debug, Clone)]
pub struct RedisStore {
    backend: Backend,
    prefix: String,
    on_failure: FailurePolicy,
}

impl RedisStore {
    /// Limits on `backend`, keys prefixed `ratekeeper:serve:`, failing
    /// over to `local`.
    pub fn new(backend: Backend) -> RedisStore {
        RedisStore {
            backend,
            prefix: "ratekeeper:serve:".into(),
            on_failure: FailurePolicy::Local,
        }
    }

    /// The prefix of every key (then the domain and the limit's id).
    pub fn prefix(mut self, prefix: impl Into<String>) -> RedisStore {
        self.prefix = prefix.into();
        self
    }

    /// The failure policy of a limit that names none.
    pub fn on_failure(mut self, policy: FailurePolicy) -> RedisStore {
        self.on_failure = policy;
        self
    }

    /// The limiter of one limit: keys `{prefix}{domain}:{id}:{value}`.
    pub(super) fn limiter(
        &self,
        domain: &str,
        id: &str,
        rate: &RateLimitConfig,
    ) -> Result<Box<RedisLimiter>, String> {
        if rate.algorithm == Algorithm::Cycle {
            return Err("algorithm cycle is kept in memory only: with --redis, \
                        write algorithm: refill (the default) or pacer"
                .into());
        }
        let limit = limiter_config(rate)
            .and_then(|c| SharedLimit::from_config(&c))
            .map_err(|e| format!("the limit is refused: {e}"))?;
        let policy = match rate.on_redis_failure.unwrap_or(self.on_failure) {
            FailurePolicy::Allow => RedisPolicy::Open,
            FailurePolicy::Deny => RedisPolicy::Closed,
            FailurePolicy::Local => RedisPolicy::LocalLearned,
        };
        RedisLimiter::builder(
            &self.backend,
            format!("{}{domain}:{id}:", self.prefix),
            limit,
        )
        .failure_policy(policy)
        // A reload that changes the limit takes its keys over (the
        // server's scripts keep what was granted) instead of refusing them
        // as another limit's.
        .adopt(true)
        .build()
        .map(Box::new)
        .map_err(|e| format!("the limit is refused on Redis: {e}"))
    }
}

/// The core's limiter for a rate limit.
pub(super) fn limiter_config(rate: &RateLimitConfig) -> Result<LimiterConfig, ConfigError> {
    let n = u64::from(rate.requests_per_unit);
    let unit = rate.unit.duration();
    let kind = match rate.algorithm {
        Algorithm::Refill => {
            let burst = rate.burst.map_or(n, u64::from);
            let (limit, period) = refill_period(n, unit, burst);
            KindConfig::Refill(
                RefillConfig::builder()
                    .limit_for_period(limit)
                    .limit_refresh_period(period)
                    .permit_capacity(burst)
                    .initial_permits(burst)
                    .build()?,
            )
        }
        Algorithm::Cycle => KindConfig::Cycle(
            CycleConfig::builder()
                .limit_for_period(n)
                .limit_refresh_period(unit)
                .build()?,
        ),
        Algorithm::Pacer => {
            let rate = Rate::new(n as f64 / unit.as_secs_f64())?;
            KindConfig::Pacer {
                rate,
                strictness: Strictness::new(1.0)?,
            }
        }
    };
    Ok(LimiterConfig::new(kind))
}

/// A refill bucket's (limit, period) for `n` per `unit` with a capacity of
/// `burst`: the bucket refills evenly whatever the period, but its limit
/// may not exceed its capacity. `n` per `unit` when the burst holds it;
/// else the largest limit up to the burst whose period is a whole number
/// of nanoseconds (the rate exact); else one permit per `unit / n`,
/// rounded to the nanosecond.
fn refill_period(n: u64, unit: Duration, burst: u64) -> (u64, Duration) {
    if burst >= n {
        return (n, unit);
    }
    let unit_ns = unit.as_nanos() as u64;
    let exact = n / gcd(n, unit_ns);
    if exact <= burst {
        let limit = exact * (burst / exact);
        return (
            limit,
            Duration::from_nanos(unit_ns / n * limit + unit_ns % n * limit / n),
        );
    }
    (1, Duration::from_nanos((unit_ns + n / 2) / n))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
