//! The capped map behind [`Keyed`]: shards of per-key compact states, each
//! decided by its family's [`Rule`].

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::sync::{OnceLock, PoisonError};
use std::time::Duration;

use crate::bucket::{CycleRule, RefillRule};
use crate::clock::{Clock, DefaultClock};
use crate::grant::{AcquireError, Grant};
#[cfg(doc)]
use crate::limiter::RateLimiter;
use crate::limiter::Recovery;
use crate::pacer::decision::{Accumulator, Dual, Spacing};
use crate::smooth::rule::SmoothRule;
use crate::sync::{AtomicU64, Ordering, RwLock};
use crate::wait::saturating_nanos;

use super::config::{self, KeyedBuilder};
use super::shard::{fingerprint, Counters, Shard};
use super::KeyHasher;
use super::Overflow;
use crate::store::Rule;

/// One limit per key, each key's state built on first use, with at most
/// [`max_keys`](KeyedBuilder::max_keys) keys live; see the
/// [module docs](super).
pub struct Keyed<K, C = DefaultClock, S = KeyHasher> {
    pub(super) map: Rules<K, S>,
    pub(super) clock: C,
}

/// The map, by the rule (and so the state) its configuration needs.
pub(crate) enum Rules<K, S> {
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
type Locked<C> = RwLock<Shard<C>>;

/// The keys of one rule: shards of (fingerprint, state), and what a full
/// map does. Keys are not stored: a key is its [`fingerprint`].
pub(crate) struct Map<K, R: Rule, S> {
    shards: Box<[Locked<R::Cell>]>,
    hasher: S,
    rule: R,
    /// The state untracked keys share under [`Overflow::Shared`], started at
    /// its first use so it holds no credit from the map's creation.
    spare: OnceLock<R::Cell>,
    overflow: Overflow,
    max_keys: usize,
    counters: Counters,
    key: PhantomData<fn(&K)>,
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

impl Keyed<()> {
    /// The settings: cap, shards, overflow policy; the key type and the
    /// limit come from the build call.
    pub fn builder() -> KeyedBuilder {
        KeyedBuilder::default()
    }
}

impl<K: Hash + Eq + Clone, C: Clock, S: BuildHasher> Keyed<K, C, S> {
    /// Decides `permits` for `key` as the configuration's limiter's
    /// [`reserve`](RateLimiter::reserve) does, tracking a new key. O(1).
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

    /// [`available`](Self::available) and [`recovery`](Self::recovery)
    /// together, on one clock reading and one lookup: what a caller shows
    /// after a decision (the permits left, when the key is as a new one).
    /// An untracked key is a new one's: its initial permits, fresh.
    ///
    /// ```
    /// use ratekeeper::keyed::Keyed;
    /// use ratekeeper::{ManualClock, Recovery};
    ///
    /// let config = "refill:1,1s,capacity=2,initial=2".parse()?;
    /// let keyed: Keyed<&str, ManualClock> = Keyed::builder().build_with_clock(&config, ManualClock::new(0))?;
    /// assert_eq!(keyed.snapshot(&"a"), (Some(2), Recovery::Fresh));
    /// keyed.try_acquire(&"a")?;
    /// assert_eq!(keyed.snapshot(&"a"), (Some(1), Recovery::Debt { nanos: 1_000_000_000 }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self, key: &K) -> (Option<u64>, Recovery) {
        let now = self.clock.now_nanos();
        each!(&self.map, m => m
            .with_cell(key, |cell| (m.rule.available(cell, now), m.rule.recovery(cell, now)))
            .unwrap_or_else(|| (m.rule.available(&m.rule.fresh(now), now), Recovery::Fresh)))
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

impl<K: Hash, R: Rule, S: BuildHasher> Map<K, R, S> {
    pub(super) fn new(rule: R, settings: &config::Settings, hasher: S) -> Self {
        let (share, rest) = (
            settings.max_keys / settings.shards,
            settings.max_keys % settings.shards,
        );
        let shards = (0..settings.shards)
            .map(|i| RwLock::new(Shard::new(share + usize::from(i < rest), &rule)))
            .collect();
        Map {
            shards,
            hasher,
            spare: OnceLock::new(),
            rule,
            overflow: settings.overflow,
            max_keys: settings.max_keys,
            counters: Counters::default(),
            key: PhantomData,
        }
    }

    #[inline]
    fn shard(&self, fp: u64) -> &Locked<R::Cell> {
        &self.shards[shard_of(fp, self.shards.len())]
    }

    /// `f` of `key`'s state, under its shard's read lock, if tracked.
    fn with_cell<T>(&self, key: &K, f: impl FnOnce(&R::Cell) -> T) -> Option<T> {
        let fp = fingerprint(self.hasher.hash_one(key));
        let read = self
            .shard(fp)
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        read.get(fp).map(f)
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
        let fp = fingerprint(self.hasher.hash_one(key));
        {
            let read = self
                .shard(fp)
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(cell) = read.get(fp) {
                return Ok(decide(&self.rule, cell, permits, max, clock, now)?);
            }
        }
        self.reserve_new(fp, permits, max, clock)
    }

    /// A key not found under the read lock: under the write lock, found
    /// after all, or tracked in room the sweep or the policy makes.
    #[cold]
    fn reserve_new<C: Clock>(
        &self,
        fp: u64,
        permits: u32,
        max: Option<u64>,
        clock: &C,
    ) -> Result<Grant, KeyedError> {
        let mut write = self
            .shard(fp)
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(cell) = write.get(fp) {
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
                    if !write.evict_least_debt(&self.rule, now, &self.counters) {
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
            write.insert(fp, cell, &self.rule);
            // Ordering: Relaxed; a gauge, changed under the shard's write lock.
            self.counters.live.fetch_add(1, Ordering::Relaxed);
        }
        Ok(decided?)
    }
}

/// `rule`'s decision on `cell` now; a refusal is retried once on a fresh
/// reading if the clock moved.
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
