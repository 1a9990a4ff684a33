//! [`Keyed`]: one limiter per key (a client, an IP prefix, an API key),
//! with a hard cap on live keys and exact, automatic eviction.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::keyed::{IpKeyer, Keyed, KeyedError};
//! use ratekeeper::{AcquireError, ManualClock};
//!
//! let clock = ManualClock::new(0);
//! let keyed = Keyed::builder()
//!     .max_keys(10_000)
//!     .build_with_clock(&"pacer:10,1.0".parse()?, clock.clone())?; // 10/s each, strict
//! let keyer = IpKeyer::default(); // IPv6 by /64
//! let a = keyer.key("2001:db8::1".parse()?);
//! let b = keyer.key("2001:db8::2".parse()?); // the same /64
//! assert!(keyed.try_acquire(&a).is_ok());
//! assert!(matches!(keyed.try_acquire(&b), Err(KeyedError::Limiter(AcquireError::WouldWait { .. }))));
//! clock.advance(Duration::from_millis(100));
//! assert!(keyed.try_acquire(&b).is_ok());
//! assert_eq!(keyed.metrics().live_keys, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Eviction
//!
//! A key's limiter says, through [`RateLimiter::recovery`], how its state
//! compares with a fresh limiter's. When a new key finds its shard full,
//! the shard drops every key that is [`Fresh`](Recovery::Fresh) (dropping it
//! changes no decision: exact and free) or holds only
//! [`Credit`](Recovery::Credit) (dropping it forfeits credit: the key's next
//! limiter is stricter, never looser), counting each kind. No sweeper
//! thread: the sweep runs on the insert that needs room, at most once per
//! shard-full of inserts or once per earliest recovery time.
//!
//! | limiter | fresh | credit |
//! |---|---|---|
//! | [`Pacer`](crate::Pacer), strict (`1.0`) | next slot and spacing at or before now | never |
//! | [`Pacer`](crate::Pacer), average, compensation, burst | next slot exactly now, or idle | behind schedule: a backlog it may catch up |
//! | [`RefillLimiter`](crate::RefillLimiter) | `max(E, now − full) = now − initial × npp` (with initial = capacity: full again) | more permits stored than the initial ones |
//! | others | [`KeyedConfigError::Unsupported`] at build | |
//!
//! If every key of the shard holds debt, the [`Overflow`] policy decides:
//! refuse the new key ([`KeyedError::Full`]), share one overflow limiter,
//! or forgive the least debt (counted). Nothing is admitted untracked.
//!
//! # Memory ordering
//!
//! A grant synchronizes as the key's limiter's does; the map itself is a
//! lock per shard (a read lock for known keys).

use std::fmt;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::error::ConfigError;
use crate::grant::{AcquireError, Grant};
use crate::limiter::RateLimiter;
#[cfg(doc)]
use crate::limiter::Recovery;
use crate::sync::{AtomicU64, Ordering};

mod config;
mod ip;
mod shard;
#[cfg(all(test, not(loom)))]
mod tests;

pub use config::{
    KeyedBuilder, KeyedConfigError, Overflow, DEFAULT_MAX_KEYS, DEFAULT_SHARDS, MAX_KEYS,
    MAX_SHARDS,
};
pub use ip::{IpKey, IpKeyer, IpPrefixError, DEFAULT_IPV6_PREFIX};
use shard::Shard;

/// A shard behind its lock, on a cache line of its own.
type Locked<K, L> = CachePadded<RwLock<Shard<K, L>>>;

/// One limiter per key, built on first use, with at most
/// [`max_keys`](KeyedBuilder::max_keys) keys live; see the
/// [module docs](self).
pub struct Keyed<K, L, S = RandomState> {
    shards: Box<[Locked<K, L>]>,
    hasher: S,
    make: config::Make<L>,
    /// A fresh limiter built at configuration: the clock's reader, and the
    /// limiter every untracked key shares under [`Overflow::Shared`].
    spare: L,
    overflow: Overflow,
    max_keys: usize,
    counters: Counters,
}

/// Why a keyed limiter refused a request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyedError {
    /// The key's limiter refused (or, under [`Overflow::Shared`], the
    /// shared one).
    #[error(transparent)]
    Limiter(#[from] AcquireError),
    /// The key is not tracked, its shard is full of keys that hold debt,
    /// and the policy is [`Overflow::DenyNew`]. Nothing was reserved.
    #[error("too many keys hold debt to track a new one")]
    Full,
    /// The key's limiter could not be built.
    #[error("could not build the key's limiter")]
    Build(#[source] ConfigError),
}

impl KeyedError {
    /// For a [`WouldWait`](AcquireError::WouldWait), how long to wait.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            KeyedError::Limiter(e) => e.retry_after(),
            _ => None,
        }
    }
}

/// A snapshot of a keyed limiter's keys and evictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct KeyedMetrics {
    /// Keys tracked now.
    pub live_keys: u64,
    /// The cap on them.
    pub max_keys: u64,
    /// Keys dropped in a fresh state (no decision changed).
    pub evicted_fresh: u64,
    /// Keys dropped holding only credit (forfeited; stricter after).
    pub evicted_credit: u64,
    /// Keys dropped in debt by [`Overflow::EvictLeastDebt`] (forgiven).
    pub evicted_debt: u64,
    /// New keys refused by [`Overflow::DenyNew`].
    pub denied_new: u64,
    /// Requests of untracked keys decided by the shared limiter
    /// ([`Overflow::Shared`]).
    pub overflowed: u64,
}

/// The counters behind [`KeyedMetrics`]; each is Relaxed (statistics,
/// ordering no other memory).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    live: AtomicU64,
    evicted_fresh: AtomicU64,
    evicted_credit: AtomicU64,
    evicted_debt: AtomicU64,
    denied_new: AtomicU64,
    overflowed: AtomicU64,
}

impl Counters {
    fn removed(&self, fresh: u64, credit: u64) {
        if fresh + credit == 0 {
            return;
        }
        // Ordering: Relaxed; counters.
        self.evicted_fresh.fetch_add(fresh, Ordering::Relaxed);
        // Ordering: Relaxed; counters.
        self.evicted_credit.fetch_add(credit, Ordering::Relaxed);
        // Ordering: Relaxed; a gauge, changed under the shard's write lock.
        self.live.fetch_sub(fresh + credit, Ordering::Relaxed);
    }
}

impl Keyed<(), ()> {
    /// The settings: cap, shards, overflow policy; the key and limiter
    /// types come from the build call.
    pub fn builder() -> KeyedBuilder {
        KeyedBuilder::default()
    }
}

impl<K: Hash + Eq + Clone, L: RateLimiter, S: BuildHasher> Keyed<K, L, S> {
    fn new(
        max_keys: usize,
        shards: usize,
        overflow: Overflow,
        make: config::Make<L>,
        spare: L,
        hasher: S,
    ) -> Self {
        let (share, rest) = (max_keys / shards, max_keys % shards);
        let shards = (0..shards)
            .map(|i| CachePadded::new(RwLock::new(Shard::new(share + usize::from(i < rest)))))
            .collect();
        Keyed {
            shards,
            hasher,
            make,
            spare,
            overflow,
            max_keys,
            counters: Counters::default(),
        }
    }

    /// Decides `permits` for `key` as its limiter's
    /// [`reserve`](RateLimiter::reserve) does, building the key's limiter
    /// if it is new.
    ///
    /// # Errors
    ///
    /// The limiter's [`AcquireError`] as [`KeyedError::Limiter`];
    /// [`KeyedError::Full`] for a new key the map has no room for under
    /// [`Overflow::DenyNew`].
    #[inline]
    pub fn reserve(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, KeyedError> {
        let hash = self.hasher.hash_one(key);
        let shard = &self.shards[shard_of(hash, self.shards.len())];
        {
            let read = shard.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(limiter) = read.get(hash, key) {
                return Ok(limiter.reserve(permits, max_wait)?);
            }
        }
        self.reserve_new(shard, hash, key, permits, max_wait)
    }

    /// Takes one permit for `key` if it is available now.
    ///
    /// # Errors
    ///
    /// As [`reserve`](Self::reserve) with a zero wait.
    #[inline]
    pub fn try_acquire(&self, key: &K) -> Result<Grant, KeyedError> {
        self.reserve(key, 1, Some(Duration::ZERO))
    }

    /// Takes `permits` for `key` if they are available now.
    ///
    /// # Errors
    ///
    /// As [`reserve`](Self::reserve) with a zero wait.
    pub fn try_acquire_n(&self, key: &K, permits: u32) -> Result<Grant, KeyedError> {
        self.reserve(key, permits, Some(Duration::ZERO))
    }

    /// A key not found under the read lock: under the write lock, found
    /// after all, or built in room the sweep or the policy makes.
    #[cold]
    fn reserve_new(
        &self,
        shard: &RwLock<Shard<K, L>>,
        hash: u64,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, KeyedError> {
        let mut write = shard.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(limiter) = write.get(hash, key) {
            return Ok(limiter.reserve(permits, max_wait)?);
        }
        if write.is_full() {
            write.sweep(self.spare.clock().now_nanos(), &self.counters);
        }
        if write.is_full() {
            match self.overflow {
                Overflow::DenyNew => {
                    // Ordering: Relaxed; a counter.
                    self.counters.denied_new.fetch_add(1, Ordering::Relaxed);
                    return Err(KeyedError::Full);
                }
                Overflow::Shared => {
                    // Ordering: Relaxed; a counter.
                    self.counters.overflowed.fetch_add(1, Ordering::Relaxed);
                    return Ok(self.spare.reserve(permits, max_wait)?);
                }
                Overflow::EvictLeastDebt => {
                    if !write.evict_least_debt(&self.hasher, &self.counters) {
                        return Err(KeyedError::Full);
                    }
                }
            }
        }
        // Decided on a fresh limiter before it is kept: a refusal changes
        // nothing, so a flood of refused requests takes no room.
        let limiter = (self.make)()?;
        let grant = limiter.reserve(permits, max_wait)?;
        write.insert(hash, key.clone(), limiter, &self.hasher);
        // Ordering: Relaxed; a gauge, changed under the shard's write lock.
        self.counters.live.fetch_add(1, Ordering::Relaxed);
        Ok(grant)
    }

    /// The key's limiter, if the key is tracked, passed to `f` (under the
    /// shard's read lock: do not call back into this keyed limiter's
    /// inserts from `f`).
    pub fn with_limiter<T>(&self, key: &K, f: impl FnOnce(&L) -> T) -> Option<T> {
        let hash = self.hasher.hash_one(key);
        let shard = &self.shards[shard_of(hash, self.shards.len())];
        let read = shard.read().unwrap_or_else(PoisonError::into_inner);
        read.get(hash, key).map(f)
    }

    /// The live keys and the evictions so far.
    pub fn metrics(&self) -> KeyedMetrics {
        let c = &self.counters;
        // Ordering: Relaxed throughout; a snapshot of counters.
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        KeyedMetrics {
            live_keys: get(&c.live),
            max_keys: self.max_keys as u64,
            evicted_fresh: get(&c.evicted_fresh),
            evicted_credit: get(&c.evicted_credit),
            evicted_debt: get(&c.evicted_debt),
            denied_new: get(&c.denied_new),
            overflowed: get(&c.overflowed),
        }
    }

    /// The cap on live keys.
    pub fn max_keys(&self) -> usize {
        self.max_keys
    }
}

/// The shard of a hash: its high bits scaled to `n` (any `n`, no modulo).
#[inline]
fn shard_of(hash: u64, n: usize) -> usize {
    ((u128::from(hash) * n as u128) >> 64) as usize
}

impl<K, L, S> fmt::Debug for Keyed<K, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("max_keys", &self.max_keys)
            .field("shards", &self.shards.len())
            .field("overflow", &self.overflow)
            .finish_non_exhaustive()
    }
}
