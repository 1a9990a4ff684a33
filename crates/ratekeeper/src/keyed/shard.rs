//! One shard of a keyed limiter: a hash table of keys and their limiters,
//! its share of the cap, and the sweep that drops recovered keys.

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;

use super::Counters;
use crate::limiter::{RateLimiter, Recovery};
use crate::sync::Ordering;

/// A shard's keys. Read under the shard's read lock (lookups), changed
/// under its write lock (inserts, sweeps, evictions).
#[derive(Debug)]
pub(super) struct Shard<K, L> {
    pub(super) table: HashTable<(K, L)>,
    /// This shard's share of the cap: `len ≤ cap` always.
    cap: usize,
    /// No key here can recover before this clock reading: set by a sweep
    /// that left the shard full, so a flood of new keys into a shard whose
    /// keys all hold debt does not sweep on every request. (A cancel may
    /// make a key recover sooner; the next sweep then finds it.)
    quiet_until: u64,
    /// [`Overflow::EvictLeastDebt`](super::Overflow::EvictLeastDebt): keys
    /// in order of debt at the latest sweep, the least last.
    candidates: Vec<K>,
}

impl<K: Hash + Eq + Clone, L: RateLimiter> Shard<K, L> {
    pub(super) fn new(cap: usize) -> Self {
        Shard {
            table: HashTable::new(),
            cap,
            quiet_until: 0,
            candidates: Vec::new(),
        }
    }

    pub(super) fn get(&self, hash: u64, key: &K) -> Option<&L> {
        self.table.find(hash, |(k, _)| k == key).map(|(_, l)| l)
    }

    pub(super) fn is_full(&self) -> bool {
        self.table.len() >= self.cap
    }

    /// Inserts `key` (not present; the shard not full).
    pub(super) fn insert<S: BuildHasher>(
        &mut self,
        hash: u64,
        key: K,
        limiter: L,
        hasher: &S,
    ) -> &L {
        debug_assert!(!self.is_full());
        let entry = self
            .table
            .insert_unique(hash, (key, limiter), |(k, _)| hasher.hash_one(k));
        &entry.into_mut().1
    }

    /// Drops every key whose limiter is fresh again or holds only credit,
    /// if the shard is full and one may have recovered since the last
    /// sweep. Costs one [`recovery`](RateLimiter::recovery) per key, at
    /// most once per shard-full of inserts, or once per recovery time.
    pub(super) fn sweep(&mut self, now: u64, counters: &Counters) {
        if !self.is_full() || now < self.quiet_until {
            return;
        }
        let (mut fresh, mut credit, mut next) = (0u64, 0u64, u64::MAX);
        self.table.retain(|(_, l)| match l.recovery() {
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

    /// Drops the key closest to recovering, as of the latest sweep, and
    /// counts its forgiven debt; `false` if there is none to drop.
    pub(super) fn evict_least_debt<S: BuildHasher>(
        &mut self,
        hasher: &S,
        counters: &Counters,
    ) -> bool {
        if self.candidates.is_empty() {
            self.rank();
        }
        while let Some(key) = self.candidates.pop() {
            let hash = hasher.hash_one(&key);
            if let Ok(entry) = self.table.find_entry(hash, |(k, _)| *k == key) {
                entry.remove();
                // Ordering: Relaxed; a counter.
                counters.evicted_debt.fetch_add(1, Ordering::Relaxed);
                counters.live.fetch_sub(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// Ranks the least indebted sixteenth of the shard (at least one key)
    /// for [`evict_least_debt`](Self::evict_least_debt): an amortised
    /// O(16) limiter reads per eviction.
    fn rank(&mut self) {
        let mut debts: Vec<(u64, &K)> = self
            .table
            .iter()
            .filter_map(|(k, l)| match l.recovery() {
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
