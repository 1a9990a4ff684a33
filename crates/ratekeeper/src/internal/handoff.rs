//! Reservations given back that their limiter's schedule cannot take back
//! (not its latest, see each limiter's "Cancelling a reservation"), kept
//! (**stashed**) for the next caller asking for the same number of permits.
//!
//! [`Handoff::take`] hands a stashed grant to the next reservation of its
//! size, which waits for the same ready time. The slot was issued once and
//! is used at most once, so nothing is admitted beyond the schedule; a
//! stashed grant past its ready time is dropped, never handed out late.
//!
//! # Implementation details
//!
//! Entries live under a mutex, indexed by ready time, by times, stashed by
//! size and issued by handoff id: O(log n) per operation. An entry is
//! **stashed** (available to `take`), **issued** under a handoff id (the
//! new grant's claim; ids have the top bit clear, limiter tags set), or
//! **returned** to the schedule. Each remembers the grant as first
//! cancelled, so a second cancel of it or of a part of it is refused while
//! the entry lives (until its ready time). Limiters [`reset`](Handoff::reset)
//! it at each schedule reset and refuse to stash older grants.
//!
//! Lock order: the limiter's own lock, then this one; `take` takes only
//! this one.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::limiter::Grant;
use crate::sync::{lock, AtomicU64, Mutex, Ordering};

/// Handoff ids have this bit clear; limiters' own tags have it set.
const LIMITER_TAG: u32 = 1 << 31;

/// A limiter's stash of reservations given back; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Handoff {
    /// Stashed count: written under `entries`' lock, read without it.
    stashed: AtomicU64,
    entries: Mutex<Entries>,
}

/// An entry's place: its ready time, then the order entries came in.
type Key = (u64, u64);

#[derive(Debug, Default)]
struct Entries {
    /// Every entry, earliest ready first.
    by_ready: BTreeMap<Key, Entry>,
    /// The entries of each (scheduled, ready), as first cancelled.
    by_times: HashMap<(u64, u64), Vec<Key>>,
    /// The stashed entries by size, earliest ready first.
    stashed: BTreeSet<(u32, Key)>,
    /// The issued entries by handoff id.
    issued: HashMap<u32, Key>,
    /// The next entry's order number.
    next_seq: u64,
    /// The next handoff id (1 ..= 2^31 − 1, wrapping).
    next_id: u32,
    /// The limiter's tag at its latest reset; older grants are not stashed.
    reset_tag: u32,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// The grant as first cancelled: its identity.
    grant: Grant,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Stashed,
    Issued(u32),
    Returned,
}

impl Entries {
    /// The entry that knows `grant`: as first cancelled (same times and
    /// limiter tag) or as issued (its handoff id, same slot).
    fn knowing(&self, grant: &Grant) -> Option<Key> {
        let claim = grant.claim();
        let as_cancelled = self
            .by_times
            .get(&(grant.scheduled_nanos(), grant.ready_nanos()))
            .and_then(|keys| {
                keys.iter()
                    .copied()
                    .find(|k| self.by_ready[k].grant.claim() == claim)
            });
        as_cancelled.or_else(|| {
            let key = *self.issued.get(&claim?)?;
            same_slot(&self.by_ready[&key].grant, grant).then_some(key)
        })
    }

    /// Adds an entry for `grant` in `state` (not `Issued`).
    fn insert(&mut self, grant: Grant, state: State) {
        let key = (grant.ready_nanos(), self.next_seq);
        self.next_seq += 1;
        if state == State::Stashed {
            self.stashed.insert((grant.permits(), key));
        }
        self.by_times
            .entry((grant.scheduled_nanos(), grant.ready_nanos()))
            .or_default()
            .push(key);
        self.by_ready.insert(key, Entry { grant, state });
    }

    /// Removes the entry at `key`; whether it was stashed.
    fn remove(&mut self, key: Key) -> bool {
        let Some(entry) = self.by_ready.remove(&key) else {
            return false;
        };
        let times = (entry.grant.scheduled_nanos(), entry.grant.ready_nanos());
        if let Some(keys) = self.by_times.get_mut(&times) {
            keys.retain(|k| *k != key);
            if keys.is_empty() {
                self.by_times.remove(&times);
            }
        }
        match entry.state {
            State::Stashed => self.stashed.remove(&(entry.grant.permits(), key)),
            State::Issued(id) => {
                self.issued.remove(&id);
                false
            }
            State::Returned => false,
        }
    }
}

/// Whether two grants are the same reservation's, claims aside.
fn same_slot(a: &Grant, b: &Grant) -> bool {
    same_times(a, b) && a.permits() == b.permits()
}

/// Whether two grants have the same scheduled and ready times.
fn same_times(a: &Grant, b: &Grant) -> bool {
    a.scheduled_nanos() == b.scheduled_nanos() && a.ready_nanos() == b.ready_nanos()
}

impl Handoff {
    /// An empty handoff for a limiter whose grants are now tagged `tag`.
    pub(crate) fn new(tag: u32) -> Handoff {
        Handoff {
            stashed: AtomicU64::new(0),
            entries: Mutex::new(Entries {
                next_id: 1,
                reset_tag: tag,
                ..Entries::default()
            }),
        }
    }

    /// Whether nothing is stashed: the reservation fast path's one load.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        // Ordering: Relaxed. A stale zero only lets this caller reserve
        // from the schedule (a stashed slot may then expire unused: fewer
        // grants, never more); a stale non-zero only costs a lock. What is
        // handed out is decided under the lock.
        self.stashed.load(Ordering::Relaxed) == 0
    }

    /// The earliest stashed grant for exactly `permits`, ready within
    /// `max_wait` ns of `now`, under a fresh handoff id. One load when empty.
    #[inline]
    pub(crate) fn take(&self, permits: u32, max_wait: Option<u64>, now: u64) -> Option<Grant> {
        if self.is_empty() {
            return None;
        }
        self.take_slow(permits, max_wait, now)
    }

    #[cold]
    #[inline(never)]
    fn take_slow(&self, permits: u32, max_wait: Option<u64>, now: u64) -> Option<Grant> {
        let mut entries = lock(&self.entries);
        self.expire(&mut entries, now);
        let limit = max_wait.map_or(u64::MAX, |m| now.saturating_add(m));
        let &(_, key) = entries
            .stashed
            .range((permits, (0, 0))..=(permits, (limit, u64::MAX)))
            .next()?;
        entries.stashed.remove(&(permits, key));
        let id = entries.next_id;
        entries.next_id = (id % (LIMITER_TAG - 1)) + 1;
        // An id still issued (2^31 − 1 hand-outs ago, its slot not yet
        // ready) is that entry's no more: it can no longer be put back.
        if let Some(old) = entries.issued.insert(id, key) {
            if let Some(e) = entries.by_ready.get_mut(&old) {
                e.state = State::Returned;
            }
        }
        let entry = entries.by_ready.get_mut(&key)?;
        entry.state = State::Issued(id);
        let grant = entry.grant.started_at(now).with_claim(id);
        self.count(-1);
        Some(grant)
    }

    /// A cancel at `now`, under the limiter's lock: refuses a past or known
    /// grant, re-stashes one this handoff issued, else tries `give_back` and
    /// stashes if `stashable(reset_tag)`.
    pub(crate) fn cancel(
        &self,
        grant: &Grant,
        now: u64,
        stashable: impl FnOnce(u32) -> bool,
        give_back: impl FnOnce() -> bool,
    ) -> bool {
        if grant.permits() == 0 || grant.ready_nanos() < now {
            return false;
        }
        let mut entries = lock(&self.entries);
        self.expire(&mut entries, now);
        let claim = grant.claim();
        // A grant with a known entry's limiter tag and times is that
        // reservation or a part of it, whatever its permits: a part of one
        // given back or kept must not be kept again. Only the whole of an
        // issued one goes back to the stash.
        if let Some(key) = entries.knowing(grant) {
            // Its current holder gives an issued slot back; anything else
            // is a grant cancelled already.
            let entry = &entries.by_ready[&key];
            if let Some(id) = claim.filter(|&id| entry.state == State::Issued(id)) {
                let permits = entry.grant.permits();
                entries.issued.remove(&id);
                entries.stashed.insert((permits, key));
                if let Some(e) = entries.by_ready.get_mut(&key) {
                    e.state = State::Stashed;
                }
                self.count(1);
                return true;
            }
            return false;
        }
        let Some(LIMITER_TAG..) = claim else {
            return false; // not a limiter's grant, or an expired handoff's
        };
        let state = if give_back() {
            State::Returned
        } else if stashable(entries.reset_tag) {
            self.count(1);
            State::Stashed
        } else {
            return false;
        };
        entries.insert(*grant, state);
        true
    }

    /// The tag grants carried at the latest reset.
    pub(crate) fn reset_tag(&self) -> u32 {
        lock(&self.entries).reset_tag
    }

    /// Whether a live entry knows `grant` (for a sharded pacer's cancel).
    pub(crate) fn knows(&self, grant: &Grant) -> bool {
        lock(&self.entries).knowing(grant).is_some()
    }

    /// Whether `tag` is no older than `reset_tag`, by `age` in epochs.
    pub(crate) fn issued_since(tag: u32, reset_tag: u32, age: impl Fn(u32) -> u32) -> bool {
        age(tag) <= age(reset_tag)
    }

    /// Forgets everything: the schedule was reset and now tags grants `tag`.
    pub(crate) fn reset(&self, tag: u32) {
        let mut entries = lock(&self.entries);
        let next_id = entries.next_id;
        *entries = Entries {
            next_id,
            reset_tag: tag,
            ..Entries::default()
        };
        // Ordering: Relaxed; see `is_empty`.
        self.stashed.store(0, Ordering::Relaxed);
    }

    /// Test hook: the next hand-out gets handoff id `next_id`.
    #[cfg(all(test, not(loom)))]
    fn skip_ids_to(&self, next_id: u32) {
        lock(&self.entries).next_id = next_id;
    }

    /// Drops the entries whose ready time has passed, earliest first.
    fn expire(&self, entries: &mut Entries, now: u64) {
        let mut dropped = 0;
        while let Some((&key, _)) = entries.by_ready.first_key_value() {
            if key.0 >= now {
                break;
            }
            dropped += u64::from(entries.remove(key));
        }
        if dropped > 0 {
            // Ordering: Relaxed; see `is_empty` (written under the lock).
            self.stashed.fetch_sub(dropped, Ordering::Relaxed);
        }
    }

    /// Moves the stashed count by `delta`, under the lock.
    fn count(&self, delta: i64) {
        // Ordering: Relaxed; see `is_empty` (written under the lock).
        if delta >= 0 {
            self.stashed.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            self.stashed
                .fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
