//! [`Keyed`]: one limit per key (a client, an IP prefix, an API key), each
//! key a word or two of state, with a hard cap on live keys and exact,
//! automatic eviction.
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
//! A key's state says, as [`RateLimiter::recovery`] does for a whole
//! limiter, how it compares with a fresh limiter's. When a new key finds its shard full,
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
//! | [`SmoothBursty`](crate::SmoothBursty) | nothing stored, nothing owed | permits stored |
//! | [`SmoothWarmingUp`](crate::SmoothWarmingUp) | cold again (its maximum stored), nothing owed | warmer than cold |
//! | [`CycleLimiter`](crate::CycleLimiter) | the cycle's whole limit left | never |
//! | token pools, sharded pacers | [`KeyedConfigError::Unsupported`] at build | |
//!
//! If every key of the shard holds debt, the [`Overflow`] policy decides:
//! refuse the new key ([`KeyedError::Full`]), share one overflow limiter,
//! or forgive the least debt (counted). Nothing is admitted untracked.
//!
//! # Memory
//!
//! A key costs its own size, one word of state (two for a pacer with a
//! burst ratio above 1; a 16-byte aligned 128-bit word for Guava's smooth
//! limiters) and a byte of the hash table's control, over the table's
//! load: with `u64` keys, 16 bytes an entry for a bucket or a pacer. A map
//! also holds, per shard, the read slots of its lock (eight padded slots,
//! 1 KiB): 8 KiB with the default shards on two CPUs, 64 KiB on sixteen. Each key is decided by
//! its limiter's own arithmetic on that state, as a limiter of the
//! configuration would decide it (the same slots, ready times and
//! refusals), without what a per-key limiter has no use for: cancels, rate
//! changes, a waiting room, events. Grants wait with the caller's own
//! means (sleep until [`Grant::ready_nanos`] on the limiter's clock).
//!
//! A strict pacer's key keeps one timeline, the next start (the in-memory
//! [`Pacer`](crate::Pacer)'s `max(actual, ideal)`, all its decisions depend
//! on); its grants report that start as their scheduled time, where the
//! in-memory pacer reports its ideal timeline (earlier by every late
//! arrival's lateness).
//!
//! # Speed
//!
//! A check on a tracked key is a clock read, a hash ([`KeyHasher`] by
//! default, a seeded foldhash), a read lock, a table lookup and one
//! compare-exchange (or two words' worth). Single-threaded on a 2-core AMD
//! EPYC VM, three runs: 25–43 ns with 1 and 1,000 keys, 172–277 ns with
//! 1 M keys (cache and TLB misses). governor 0.10's keyed limiter took
//! 1.2–1.9× as long with its default hash (SipHash); with the same hash on
//! both sides, a check here took 0.77–1.19× governor's time:
//! `cargo run --release -p ratekeeper-bench --example keyed_parts`; more
//! in the repository's BENCHMARKS.md ("Issue 20: keyed limiters").
//!
//! # Memory ordering
//!
//! A grant on a key happens after every earlier grant on that key (each
//! is one atomic read-modify-write of the key's state, `AcqRel`), as the
//! limiter's grants do. The map is a lock per shard: a read lock for known
//! keys, sharded by thread ([`ShardedLock`]) so that readers on different
//! threads do not write one lock word; a write lock to insert or drop keys.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::{OnceLock, PoisonError};
use std::time::Duration;

use crossbeam_utils::sync::ShardedLock;

use crate::bucket::{CycleRule, RefillRule};
use crate::clock::{Clock, DefaultClock};
use crate::grant::{AcquireError, Grant};
#[cfg(doc)]
use crate::limiter::RateLimiter;
use crate::limiter::Recovery;
use crate::pacer::keyed::{Accumulator, Dual, Spacing};
use crate::smooth::keyed::SmoothRule;
use crate::sync::{AtomicU64, Ordering};
use crate::wait::saturating_nanos;

mod config;
mod hasher;
mod ip;
pub(crate) mod rule;
mod shard;
#[cfg(all(test, not(loom)))]
mod tests;

pub use config::{
    default_shards, KeyedBuilder, KeyedConfigError, Overflow, DEFAULT_MAX_KEYS, DEFAULT_SHARDS_MAX,
    MAX_KEYS, MAX_SHARDS,
};
pub use hasher::KeyHasher;
pub use ip::{IpKey, IpKeyer, IpPrefixError, DEFAULT_IPV6_PREFIX};
use rule::Rule;
use shard::Shard;

/// One limit per key, each key's state built on first use, with at most
/// [`max_keys`](KeyedBuilder::max_keys) keys live; see the
/// [module docs](self).
pub struct Keyed<K, C = DefaultClock, S = KeyHasher> {
    map: Rules<K, S>,
    clock: C,
}

/// The map, by the rule (and so the state) its configuration needs.
enum Rules<K, S> {
    Accumulator(Map<K, Accumulator, S>),
    Spacing(Map<K, Spacing, S>),
    Dual(Map<K, Dual, S>),
    Bucket(Map<K, RefillRule, S>),
    Smooth(Map<K, SmoothRule, S>),
    Cycles(Map<K, CycleRule, S>),
}

/// Runs `$body` on the map whichever its rule, as `$m`.
macro_rules! each {
    ($rules:expr, $m:ident => $body:expr) => {
        match $rules {
            Rules::Accumulator($m) => $body,
            Rules::Spacing($m) => $body,
            Rules::Dual($m) => $body,
            Rules::Bucket($m) => $body,
            Rules::Smooth($m) => $body,
            Rules::Cycles($m) => $body,
        }
    };
}

/// A shard behind its lock: a read slot per thread, one writer.
type Locked<K, V> = ShardedLock<Shard<K, V>>;

/// The keys of one rule: shards of (key, state), and what a full map does.
struct Map<K, R: Rule, S> {
    shards: Box<[Locked<K, R::Cell>]>,
    hasher: S,
    rule: R,
    /// The state every untracked key shares under [`Overflow::Shared`],
    /// started at its first use (as an idle limiter's schedule is), so an
    /// idle spare holds no credit from the map's creation.
    spare: OnceLock<R::Cell>,
    overflow: Overflow,
    max_keys: usize,
    counters: Counters,
}

/// Why a keyed limiter refused a request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyedError {
    /// The key's limit refused (or, under [`Overflow::Shared`], the
    /// shared one).
    #[error(transparent)]
    Limiter(#[from] AcquireError),
    /// The key is not tracked, its shard is full of keys that hold debt,
    /// and the policy is [`Overflow::DenyNew`]. Nothing was reserved.
    #[error("too many keys hold debt to track a new one")]
    Full,
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
    /// Requests of untracked keys decided by the shared limit
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

    fn bump(counter: &AtomicU64) {
        // Ordering: Relaxed; a counter.
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Keyed<()> {
    /// The settings: cap, shards, overflow policy; the key type and the
    /// limit come from the build call.
    pub fn builder() -> KeyedBuilder {
        KeyedBuilder::default()
    }
}

impl<K: Hash + Eq + Clone, C: Clock, S: BuildHasher> Keyed<K, C, S> {
    /// Decides `permits` for `key` as a limiter of the configuration's
    /// [`reserve`](RateLimiter::reserve) does, tracking the key if it is
    /// new.
    ///
    /// # Errors
    ///
    /// The limit's [`AcquireError`] as [`KeyedError::Limiter`];
    /// [`KeyedError::Full`] for a new key the map has no room for under
    /// [`Overflow::DenyNew`].
    #[inline(always)]
    pub fn reserve(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, KeyedError> {
        let max = max_wait.map(saturating_nanos);
        each!(&self.map, m => m.reserve(key, permits, max, &self.clock))
    }

    /// Takes one permit for `key` if it is available now.
    ///
    /// # Errors
    ///
    /// As [`reserve`](Self::reserve) with a zero wait.
    #[inline(always)]
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

    /// How `key`'s state compares with a fresh limiter's now, if the key is
    /// tracked (an untracked key is [`Recovery::Fresh`] by definition).
    pub fn recovery(&self, key: &K) -> Option<Recovery> {
        let now = self.clock.now_nanos();
        each!(&self.map, m => m.with_cell(key, |cell| m.rule.recovery(cell, now)))
    }

    /// The permits `key` could take now without waiting, for a bucket's
    /// configuration (a new key's initial permits if it is not tracked);
    /// `None` for a pacer's schedule, which does not count permits.
    pub fn available(&self, key: &K) -> Option<u64> {
        let now = self.clock.now_nanos();
        each!(&self.map, m => m
            .with_cell(key, |cell| m.rule.available(cell, now))
            .unwrap_or_else(|| m.rule.available(&m.rule.fresh(now), now)))
    }

    /// Whether `key` is tracked now.
    pub fn contains(&self, key: &K) -> bool {
        each!(&self.map, m => m.with_cell(key, |_| ()).is_some())
    }

    /// The live keys and the evictions so far.
    pub fn metrics(&self) -> KeyedMetrics {
        let (c, max_keys) = each!(&self.map, m => (&m.counters, m.max_keys));
        // Ordering: Relaxed throughout; a snapshot of counters.
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        KeyedMetrics {
            live_keys: get(&c.live),
            max_keys: max_keys as u64,
            evicted_fresh: get(&c.evicted_fresh),
            evicted_credit: get(&c.evicted_credit),
            evicted_debt: get(&c.evicted_debt),
            denied_new: get(&c.denied_new),
            overflowed: get(&c.overflowed),
        }
    }

    /// The cap on live keys.
    pub fn max_keys(&self) -> usize {
        each!(&self.map, m => m.max_keys)
    }

    /// The clock the keys' limits are kept on.
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<K: Hash + Eq + Clone, R: Rule, S: BuildHasher> Map<K, R, S> {
    fn new(rule: R, settings: &config::Settings, hasher: S) -> Self {
        let (share, rest) = (
            settings.max_keys / settings.shards,
            settings.max_keys % settings.shards,
        );
        let shards = (0..settings.shards)
            .map(|i| ShardedLock::new(Shard::new(share + usize::from(i < rest))))
            .collect();
        Map {
            shards,
            hasher,
            spare: OnceLock::new(),
            rule,
            overflow: settings.overflow,
            max_keys: settings.max_keys,
            counters: Counters::default(),
        }
    }

    #[inline]
    fn shard(&self, hash: u64) -> &Locked<K, R::Cell> {
        &self.shards[shard_of(hash, self.shards.len())]
    }

    /// `f` of `key`'s state, under its shard's read lock, if tracked.
    fn with_cell<T>(&self, key: &K, f: impl FnOnce(&R::Cell) -> T) -> Option<T> {
        let hash = self.hasher.hash_one(key);
        let read = self
            .shard(hash)
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        read.get(hash, key).map(f)
    }

    #[inline(always)]
    fn reserve<C: Clock>(
        &self,
        key: &K,
        permits: u32,
        max: Option<u64>,
        clock: &C,
    ) -> Result<Grant, KeyedError> {
        // The clock first: its reading overlaps the hash and the lookup,
        // and a reading taken before them is still a lower bound of the
        // present when the key's state is decided on.
        let now = clock.now_nanos();
        let hash = self.hasher.hash_one(key);
        {
            let read = self
                .shard(hash)
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(cell) = read.get(hash, key) {
                return Ok(decide(&self.rule, cell, permits, max, clock, now)?);
            }
        }
        self.reserve_new(hash, key, permits, max, clock)
    }

    /// A key not found under the read lock: under the write lock, found
    /// after all, or tracked in room the sweep or the policy makes.
    #[cold]
    fn reserve_new<C: Clock>(
        &self,
        hash: u64,
        key: &K,
        permits: u32,
        max: Option<u64>,
        clock: &C,
    ) -> Result<Grant, KeyedError> {
        let mut write = self
            .shard(hash)
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(cell) = write.get(hash, key) {
            return Ok(decide(
                &self.rule,
                cell,
                permits,
                max,
                clock,
                clock.now_nanos(),
            )?);
        }
        let now = clock.now_nanos();
        if write.is_full() {
            write.sweep(&self.rule, now, &self.counters);
        }
        if write.is_full() {
            match self.overflow {
                Overflow::DenyNew => {
                    Counters::bump(&self.counters.denied_new);
                    return Err(KeyedError::Full);
                }
                Overflow::Shared => {
                    Counters::bump(&self.counters.overflowed);
                    let spare = self.spare.get_or_init(|| self.rule.fresh(now));
                    return Ok(decide(&self.rule, spare, permits, max, clock, now)?);
                }
                Overflow::EvictLeastDebt => {
                    if !write.evict_least_debt(&self.rule, now, &self.hasher, &self.counters) {
                        return Err(KeyedError::Full);
                    }
                }
            }
        }
        // Decided on a fresh state, kept if granted or refused for a wait:
        // a bucket that starts with fewer permits than it holds refills
        // from its first request, as a limiter created then would. A
        // request no wait could grant (zero permits, above the capacity)
        // keeps nothing.
        let cell = self.rule.fresh(now);
        let decided = self.rule.reserve(&cell, permits, max, now);
        if matches!(decided, Ok(_) | Err(AcquireError::WouldWait { .. })) {
            write.insert(hash, key.clone(), cell, &self.hasher);
            // Ordering: Relaxed; a gauge, changed under the shard's write lock.
            self.counters.live.fetch_add(1, Ordering::Relaxed);
        }
        Ok(decided?)
    }
}

/// `rule`'s decision on `cell` now; a refusal is decided once more on a
/// fresh reading if the clock moved since the first (the reading may
/// predate grants other threads made meanwhile, as the limiters do).
#[inline(always)]
fn decide<R: Rule, C: Clock>(
    rule: &R,
    cell: &R::Cell,
    permits: u32,
    max: Option<u64>,
    clock: &C,
    now: u64,
) -> Result<Grant, AcquireError> {
    match rule.reserve(cell, permits, max, now) {
        Err(e @ AcquireError::WouldWait { .. }) => retry(rule, cell, permits, max, clock, now, e),
        decided => decided,
    }
}

#[cold]
fn retry<R: Rule, C: Clock>(
    rule: &R,
    cell: &R::Cell,
    permits: u32,
    max: Option<u64>,
    clock: &C,
    then: u64,
    refusal: AcquireError,
) -> Result<Grant, AcquireError> {
    let now = clock.now_nanos();
    if now <= then {
        return Err(refusal);
    }
    rule.reserve(cell, permits, max, now)
}

/// The shard of a hash: its high bits scaled to `n` (any `n`, no modulo).
#[inline]
fn shard_of(hash: u64, n: usize) -> usize {
    ((u128::from(hash) * n as u128) >> 64) as usize
}

impl<K, C, S> fmt::Debug for Keyed<K, C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rule, max_keys, shards, overflow): (&dyn fmt::Debug, _, _, _) = each!(
            &self.map,
            m => (&m.rule, m.max_keys, m.shards.len(), m.overflow)
        );
        f.debug_struct("Keyed")
            .field("rule", rule)
            .field("max_keys", &max_keys)
            .field("shards", &shards)
            .field("overflow", &overflow)
            .finish_non_exhaustive()
    }
}
