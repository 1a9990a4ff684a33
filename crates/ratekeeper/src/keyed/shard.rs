//! One shard of a keyed limiter: a hash table of keys and their compact
//! states, its share of the cap, and the sweep that drops recovered keys.

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;

use crate::limiter::Recovery;
use crate::store::Rule;
use crate::sync::{AtomicU64, Ordering};

/// A shard's keys. Read under the shard's read lock (lookups), changed
/// under its write lock (inserts, sweeps, evictions).
#[derive(Debug)]
pub(super) struct Shard<K, V> {
    table: HashTable<(K, V)>,
    /// This shard's share of the cap: `len ≤ cap` always.
    cap: usize,
    /// No key here can recover before this clock reading: set by a sweep
    /// that left the shard full, so a flood of new keys into a shard whose
    /// keys all hold debt does not sweep on every request.
    quiet_until: u64,
    /// [`Overflow::EvictLeastDebt`](super::Overflow::EvictLeastDebt): keys
    /// in order of debt at the latest ranking, the least last.
    candidates: Vec<K>,
}

impl<K: Hash + Eq + Clone, V> Shard<K, V> {
    pub(super) fn new(cap: usize) -> Self {
        Shard {
            table: HashTable::new(),
            cap,
            quiet_until: 0,
            candidates: Vec::new(),
        }
    }

    #[inline]
    pub(super) fn get(&self, hash: u64, key: &K) -> Option<&V> {
        self.table.find(hash, |(k, _)| k == key).map(|(_, v)| v)
    }

    pub(super) fn is_full(&self) -> bool {
        self.table.len() >= self.cap
    }

    /// Inserts `key` (not present; the shard not full).
    pub(super) fn insert<S: BuildHasher>(&mut self, hash: u64, key: K, cell: V, hasher: &S) {
        debug_assert!(!self.is_full());
        self.table
            .insert_unique(hash, (key, cell), |(k, _)| hasher.hash_one(k));
    }

    /// Drops every key whose state is fresh again or holds only credit, if
    /// the shard is full and one may have recovered since the last sweep.
    /// Costs one [`recovery`](Rule::recovery) per key, at most once per
    /// shard-full of inserts, or once per recovery time.
    pub(super) fn sweep<R: Rule<Cell = V>>(&mut self, rule: &R, now: u64, counters: &Counters) {
        if !self.is_full() || now < self.quiet_until {
            return;
        }
        let (mut fresh, mut credit, mut next) = (0u64, 0u64, u64::MAX);
        self.table
            .retain(|(_, cell)| match rule.recovery(cell, now) {
                Recovery::Fresh => {
                    fresh += 1;
                    false
                }
                Recovery::Credit => {
                    credit += 1;
                    false
                }
                Recovery::Debt { nanos } => {
                    next = next.min(nanos);
                    true
                }
                _ => true,
            });
        self.quiet_until = if self.is_full() {
            now.saturating_add(next)
        } else {
            0
        };
        counters.removed(fresh, credit);
    }

    /// Drops the key closest to recovering, as of the latest ranking, and
    /// counts its forgiven debt; `false` if there is none to drop.
    pub(super) fn evict_least_debt<R: Rule<Cell = V>, S: BuildHasher>(
        &mut self,
        rule: &R,
        now: u64,
        hasher: &S,
        counters: &Counters,
    ) -> bool {
        if self.candidates.is_empty() {
            self.rank(rule, now);
        }
        while let Some(key) = self.candidates.pop() {
            let hash = hasher.hash_one(&key);
            if let Ok(entry) = self.table.find_entry(hash, |(k, _)| *k == key) {
                entry.remove();
                // Ordering: Relaxed; counters.
                counters.evicted_debt.fetch_add(1, Ordering::Relaxed);
                counters.live.fetch_sub(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// Ranks the least indebted sixteenth of the shard (at least one key)
    /// for [`evict_least_debt`](Self::evict_least_debt): an amortised
    /// O(16) state reads per eviction.
    fn rank<R: Rule<Cell = V>>(&mut self, rule: &R, now: u64) {
        let mut debts: Vec<(u64, &K)> = self
            .table
            .iter()
            .filter_map(|(k, cell)| match rule.recovery(cell, now) {
                Recovery::Debt { nanos } => Some((nanos, k)),
                Recovery::Fresh | Recovery::Credit => Some((0, k)),
                _ => None,
            })
            .collect();
        let take = (debts.len() / 16).max(1).min(debts.len());
        if take == 0 {
            return;
        }
        debts.select_nth_unstable_by_key(take - 1, |d| d.0);
        debts.truncate(take);
        debts.sort_unstable_by_key(|d| std::cmp::Reverse(d.0));
        self.candidates = debts.into_iter().map(|(_, k)| k.clone()).collect();
    }
}

/// The counters behind [`KeyedMetrics`](super::KeyedMetrics); each is Relaxed (statistics,
/// ordering no other memory).
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) live: AtomicU64,
    pub(super) evicted_fresh: AtomicU64,
    pub(super) evicted_credit: AtomicU64,
    pub(super) evicted_debt: AtomicU64,
    pub(super) denied_new: AtomicU64,
    pub(super) overflowed: AtomicU64,
}

impl Counters {
    pub(super) fn removed(&self, fresh: u64, credit: u64) {
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

    pub(super) fn bump(counter: &AtomicU64) {
        // Ordering: Relaxed; a counter.
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
