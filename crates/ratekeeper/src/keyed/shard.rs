//! One shard of a keyed limiter: an open-addressing table of fingerprints
//! and their compact states, its share of the cap, and the sweep that drops
//! recovered keys.
//!
//! # Layout
//!
//! Buckets of four slots, each bucket aligned to a cache line; a slot is a
//! key's fingerprint and its state side by side, so a check on a key whose
//! state is one `AtomicU64` reads one line (the bucket) and exchanges a word
//! in it. A key is probed for from its home bucket onwards, wrapping, and
//! the probe stops at the first bucket with a never-used slot. A removed key
//! leaves a tombstone (a never-used slot if its bucket still has one), which
//! inserts reuse and rebuilds drop.
//!
//! # Concurrency
//!
//! The shard sits behind its lock (`Map`'s): lookups hold the read lock and
//! read fingerprints as plain integers, deciding on the found state with the
//! rule's atomics; every change of a fingerprint (insert, removal, rebuild)
//! needs `&mut Shard`, so the write lock. A slot therefore never changes
//! keys under a reader, and a decision is always on its key's state.

use std::fmt;

use crate::limiter::Recovery;
use crate::store::Rule;
use crate::sync::{AtomicU64, Ordering};

#[cfg(all(test, not(loom)))]
mod tests;

/// The fingerprint of a slot never used since its table was built.
pub(super) const EMPTY: u64 = 0;
/// The fingerprint of a slot whose key was removed.
pub(super) const TOMBSTONE: u64 = 1;
/// Slots per bucket: four of (`u64`, `AtomicU64`) fill a 64-byte line.
const SLOTS: usize = 4;

/// A key's identity in the map: its 64-bit hash, moved off the two reserved
/// values. Keys whose fingerprints are equal are one key.
#[inline]
pub(super) fn fingerprint(hash: u64) -> u64 {
    if hash <= TOMBSTONE {
        hash + 2
    } else {
        hash
    }
}

/// At most this many of `slots` hold live keys (3/4), so that a probe for a
/// key finds a never-used slot soon.
fn max_live(slots: usize) -> usize {
    slots - slots / 4
}

/// At most this many of `slots` are live or tombstones: always fewer than
/// `slots`, so every probe meets a never-used slot.
fn max_used(slots: usize) -> usize {
    slots - (slots / 8).max(1)
}

struct Slot<C> {
    /// [`EMPTY`], [`TOMBSTONE`], or a live key's fingerprint. Written only
    /// under the shard's write lock.
    fp: u64,
    /// The key's state while `fp` is a key's; otherwise a filler (a fresh
    /// state, or a removed key's last one) that nothing reads.
    cell: C,
}

#[repr(align(64))]
struct Bucket<C>([Slot<C>; SLOTS]);

impl<C> Bucket<C> {
    fn vacant<R: Rule<Cell = C>>(rule: &R) -> Self {
        Bucket(std::array::from_fn(|_| Slot {
            fp: EMPTY,
            cell: rule.fresh(0),
        }))
    }

    fn has_empty(&self) -> bool {
        self.0.iter().any(|s| s.fp == EMPTY)
    }

    /// Bit `i` set where slot `i`'s fingerprint is `fp`. Every slot is
    /// compared, without a branch per slot: where in its bucket a key sits
    /// is random, and a branch on it would be mispredicted half the time.
    #[inline(always)]
    fn matches(&self, fp: u64) -> u32 {
        self.0
            .iter()
            .enumerate()
            .fold(0, |m, (i, slot)| m | u32::from(slot.fp == fp) << i)
    }
}

/// A shard's keys. Read under the shard's read lock (lookups), changed
/// under its write lock (inserts, sweeps, evictions, rebuilds).
pub(super) struct Shard<C> {
    /// The table. Invariants: a live fingerprint is in at most one slot; a
    /// live key's slot is reached from its home bucket without passing a
    /// bucket that has an [`EMPTY`] slot; at least one slot is [`EMPTY`].
    buckets: Box<[Bucket<C>]>,
    /// The most buckets this shard grows to: enough that `cap` keys fill at
    /// most 3/4 of the slots.
    max_buckets: usize,
    /// Slots holding a live key: `live ≤ cap` and `live ≤ max_live(slots)`.
    live: usize,
    /// Slots live or tombstones: `live ≤ used ≤ max_used(slots) < slots`.
    used: usize,
    /// This shard's share of the cap.
    cap: usize,
    /// No key here can recover before this clock reading: set by a sweep
    /// that left the shard full, so a flood of new keys into a shard whose
    /// keys all hold debt does not sweep on every request.
    quiet_until: u64,
    /// [`Overflow::EvictLeastDebt`](super::Overflow::EvictLeastDebt):
    /// fingerprints in order of debt at the latest ranking, the least last
    /// (some may have left since).
    candidates: Vec<u64>,
}

impl<C> Shard<C> {
    /// An empty shard for at most `cap` keys: a few buckets, grown by
    /// doubling up to the size for `cap`.
    pub(super) fn new<R: Rule<Cell = C>>(cap: usize, rule: &R) -> Self {
        let max_buckets = cap.div_ceil(3).max(1);
        let buckets = max_buckets.min(4);
        Shard {
            buckets: (0..buckets).map(|_| Bucket::vacant(rule)).collect(),
            max_buckets,
            live: 0,
            used: 0,
            cap,
            quiet_until: 0,
            candidates: Vec::new(),
        }
    }

    fn slots(&self) -> usize {
        self.buckets.len() * SLOTS
    }

    /// The bucket a fingerprint's probe starts at: from its low half (the
    /// shard is chosen by its high bits).
    #[inline]
    fn home(&self, fp: u64) -> usize {
        ((u128::from(fp.rotate_left(32)) * self.buckets.len() as u128) >> 64) as usize
    }

    /// The slot holding `fp`, as (bucket, slot). At most one probe of the
    /// whole shard; in practice a bucket or two.
    #[inline]
    fn find(&self, fp: u64) -> Option<(usize, usize)> {
        let n = self.buckets.len();
        let mut b = self.home(fp);
        for _ in 0..n {
            let bucket = &self.buckets[b];
            let hits = bucket.matches(fp);
            if hits != 0 {
                return Some((b, hits.trailing_zeros() as usize));
            }
            if bucket.matches(EMPTY) != 0 {
                return None;
            }
            b = if b + 1 == n { 0 } else { b + 1 };
        }
        None
    }

    /// The state of the key whose fingerprint is `fp`, if it is live.
    #[inline]
    pub(super) fn get(&self, fp: u64) -> Option<&C> {
        self.find(fp).map(|(b, s)| &self.buckets[b].0[s].cell)
    }

    /// Live keys.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.live
    }

    pub(super) fn is_full(&self) -> bool {
        self.live >= self.cap
    }

    /// Where an absent `fp` goes: the first tombstone of its probe, or else
    /// the first never-used slot, which ends the probe.
    fn vacancy(&self, fp: u64) -> (usize, usize) {
        let n = self.buckets.len();
        let (mut b, mut tomb) = (self.home(fp), None);
        for _ in 0..n {
            let bucket = &self.buckets[b].0;
            if tomb.is_none() {
                tomb = bucket
                    .iter()
                    .position(|s| s.fp == TOMBSTONE)
                    .map(|s| (b, s));
            }
            if let Some(s) = bucket.iter().position(|s| s.fp == EMPTY) {
                return tomb.unwrap_or((b, s));
            }
            b = if b + 1 == n { 0 } else { b + 1 };
        }
        tomb.expect("a table keeps a never-used slot: used < slots")
    }

    /// Inserts `fp` (absent; the shard not full) with its state, growing or
    /// rebuilding the table first where its load needs it: amortised O(1),
    /// a rebuild moving every live slot once per doubling or once per
    /// eighth of the slots turned into tombstones.
    pub(super) fn insert<R: Rule<Cell = C>>(&mut self, fp: u64, cell: C, rule: &R) {
        debug_assert!(fp > TOMBSTONE && !self.is_full() && self.find(fp).is_none());
        if self.live + 1 > max_live(self.slots()) && self.buckets.len() < self.max_buckets {
            let grown = (self.buckets.len() * 2).min(self.max_buckets);
            self.rebuild(grown, rule);
        }
        let (mut b, mut s) = self.vacancy(fp);
        if self.buckets[b].0[s].fp == EMPTY {
            if self.used + 1 > max_used(self.slots()) {
                self.rebuild(self.buckets.len(), rule);
                (b, s) = self.vacancy(fp);
            }
            self.used += 1;
        }
        self.buckets[b].0[s] = Slot { fp, cell };
        self.live += 1;
    }

    /// The table rebuilt with `n` buckets and no tombstones.
    fn rebuild<R: Rule<Cell = C>>(&mut self, n: usize, rule: &R) {
        let fresh = (0..n).map(|_| Bucket::vacant(rule)).collect();
        let old = std::mem::replace(&mut self.buckets, fresh);
        (self.live, self.used) = (0, 0);
        for slot in old.into_vec().into_iter().flat_map(|b| b.0) {
            if slot.fp > TOMBSTONE {
                let (b, s) = self.vacancy(slot.fp);
                self.buckets[b].0[s] = slot;
                self.live += 1;
                self.used += 1;
            }
        }
    }

    /// Removes the key in (bucket, slot): a tombstone, or a never-used slot
    /// where its bucket already ends every probe.
    fn remove_at(&mut self, b: usize, s: usize) {
        let open = self.buckets[b].has_empty();
        self.buckets[b].0[s].fp = if open { EMPTY } else { TOMBSTONE };
        self.live -= 1;
        if open {
            self.used -= 1;
        }
    }

    /// Removes the key whose fingerprint is `fp`; `false` if it is not live.
    pub(super) fn remove(&mut self, fp: u64) -> bool {
        self.find(fp).map(|(b, s)| self.remove_at(b, s)).is_some()
    }

    /// Drops every key whose state is fresh again or holds only credit, if
    /// the shard is full and one may have recovered since the last sweep.
    /// Costs one [`recovery`](Rule::recovery) per key, at most once per
    /// shard-full of inserts, or once per recovery time.
    pub(super) fn sweep<R: Rule<Cell = C>>(&mut self, rule: &R, now: u64, counters: &Counters) {
        if !self.is_full() || now < self.quiet_until {
            return;
        }
        let (mut fresh, mut credit, mut next) = (0u64, 0u64, u64::MAX);
        for b in 0..self.buckets.len() {
            for s in 0..SLOTS {
                let slot = &self.buckets[b].0[s];
                if slot.fp <= TOMBSTONE {
                    continue;
                }
                match rule.recovery(&slot.cell, now) {
                    Recovery::Fresh => fresh += 1,
                    Recovery::Credit => credit += 1,
                    Recovery::Debt { nanos } => {
                        next = next.min(nanos);
                        continue;
                    }
                    _ => continue,
                }
                self.remove_at(b, s);
            }
        }
        self.quiet_until = if self.is_full() {
            now.saturating_add(next)
        } else {
            0
        };
        counters.removed(fresh, credit);
    }

    /// Drops the key closest to recovering, as of the latest ranking, and
    /// counts its forgiven debt; `false` if there is none to drop.
    pub(super) fn evict_least_debt<R: Rule<Cell = C>>(
        &mut self,
        rule: &R,
        now: u64,
        counters: &Counters,
    ) -> bool {
        if self.candidates.is_empty() {
            self.rank(rule, now);
        }
        while let Some(fp) = self.candidates.pop() {
            if self.remove(fp) {
                // Ordering: Relaxed; a counter.
                counters.evicted_debt.fetch_add(1, Ordering::Relaxed);
                // Ordering: Relaxed; a gauge, changed under the shard's write lock.
                counters.live.fetch_sub(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// Ranks the least indebted sixteenth of the shard (at least one key)
    /// for [`evict_least_debt`](Self::evict_least_debt): an amortised
    /// O(16) state reads per eviction.
    fn rank<R: Rule<Cell = C>>(&mut self, rule: &R, now: u64) {
        let slots = self.buckets.iter().flat_map(|b| &b.0);
        let mut debts: Vec<(u64, u64)> = slots
            .filter(|slot| slot.fp > TOMBSTONE)
            .filter_map(|slot| match rule.recovery(&slot.cell, now) {
                Recovery::Debt { nanos } => Some((nanos, slot.fp)),
                Recovery::Fresh | Recovery::Credit => Some((0, slot.fp)),
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
        self.candidates = debts.into_iter().map(|(_, fp)| fp).collect();
    }

    /// Every live fingerprint, for the tests' model checks.
    #[cfg(test)]
    pub(super) fn fingerprints(&self) -> Vec<u64> {
        let slots = self.buckets.iter().flat_map(|b| &b.0);
        slots.map(|s| s.fp).filter(|&fp| fp > TOMBSTONE).collect()
    }

    /// The table's bytes (its buckets), for the tests' memory checks.
    #[cfg(test)]
    pub(super) fn table_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
    }
}

impl<C> fmt::Debug for Shard<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shard")
            .field("live", &self.live)
            .field("used", &self.used)
            .field("slots", &self.slots())
            .field("cap", &self.cap)
            .finish_non_exhaustive()
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
