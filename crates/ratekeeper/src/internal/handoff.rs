//! Reservations given back that their limiter's schedule cannot take back:
//! kept for the next caller who asks for the same number of permits.
//!
//! The Pacer, the smooth limiters and the cycle limiter can move their
//! schedule back only for their *latest* reservation, and the refill
//! bucket an earlier one only as far as the reservations after it leave
//! room (see their "Cancelling a reservation" sections): the slots of an
//! earlier one have later reservations built on them. With many async waiters, the one that
//! gives up is rarely the latest, and its slot used to be lost: with half
//! the acquires cancelled, a limiter delivered about half its rate.
//!
//! A [`Handoff`] keeps such a grant (**stashed**) until its ready time and
//! hands it to the next reservation of the same size ([`Handoff::take`]),
//! which waits for the same ready time the cancelled one would have. The
//! slot was issued once and is used at most once, so nothing is admitted
//! that the schedule did not already allow; a stashed grant whose ready
//! time has passed is dropped, never handed out late (a late slot could
//! break a strict limiter's spacing).
//!
//! # Implementation details
//!
//! The entries live in a `Vec` under a mutex, each with its state:
//!
//! * **stashed**: available to [`take`](Handoff::take);
//! * **issued** under a handoff id: handed to a new caller, whose grant
//!   carries that id as its claim (ids have the top bit clear; every
//!   limiter's own tags have it set, so the two never collide). That caller
//!   may give it back again ([`cancel`](Handoff::cancel) stashes it again);
//! * **returned**: given back to the schedule by the limiter.
//!
//! Every entry remembers the grant as first cancelled, so a second cancel
//! of the same grant, or of a part of it (the same times and limiter tag,
//! fewer permits: a batching handle's first grant from a lease), while the
//! entry lives, is recognised and refused, whatever became of the slot. An entry lives until its ready time has
//! passed; after that every limiter refuses to cancel the grant anyway.
//! Limiters reset the handoff ([`reset`](Handoff::reset)) at every reset of
//! their schedule, and refuse to stash grants reserved before it.
//!
//! Lock order: the limiter's own lock (configuration or cancel lock), then
//! this one. [`take`](Handoff::take) takes only this one.

use crate::limiter::Grant;
use crate::sync::{lock, AtomicU64, Mutex, Ordering};

/// Handoff ids have this bit clear; limiters' own tags have it set.
const LIMITER_TAG: u32 = 1 << 31;

/// A limiter's stash of reservations given back; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Handoff {
    /// How many entries are stashed: written only under `entries`' lock,
    /// read without it by the reservation fast path.
    stashed: AtomicU64,
    entries: Mutex<Entries>,
}

#[derive(Debug)]
struct Entries {
    list: Vec<Entry>,
    /// The next handoff id (1 ..= 2^31 − 1, wrapping).
    next_id: u32,
    /// The limiter's tag at its latest reset: a grant older than that is
    /// never stashed.
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

impl Entry {
    /// Whether `grant` is this entry's reservation (or a part of it), as
    /// first cancelled or as handed on.
    fn knows(&self, grant: &Grant) -> bool {
        let claim = grant.claim();
        (same_times(&self.grant, grant) && self.grant.claim() == claim)
            || (same_slot(&self.grant, grant) && self.state == State::Issued(claim.unwrap_or(0)))
    }
}

/// Whether two grants are the same reservation's, claims aside.
fn same_slot(a: &Grant, b: &Grant) -> bool {
    same_times(a, b) && a.permits() == b.permits()
}

/// Whether two grants have the same times: with the same limiter tag, the
/// same reservation's or a part of it (a batching handle's first grant
/// from a lease carries the lease's times and tag, and fewer permits).
fn same_times(a: &Grant, b: &Grant) -> bool {
    a.scheduled_nanos() == b.scheduled_nanos() && a.ready_nanos() == b.ready_nanos()
}

impl Handoff {
    /// An empty handoff for a limiter whose grants are now tagged `tag`.
    pub(crate) fn new(tag: u32) -> Handoff {
        Handoff {
            stashed: AtomicU64::new(0),
            entries: Mutex::new(Entries {
                list: Vec::new(),
                next_id: 1,
                reset_tag: tag,
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

    /// Hands out the earliest stashed grant for exactly `permits` that is
    /// ready at or after `now` and within `max_wait` ns of it, started at
    /// `now` and carrying a fresh handoff id; `None` if there is none.
    /// Costs one load while nothing is stashed.
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
        let index = entries
            .list
            .iter()
            .enumerate()
            .filter(|(_, e)| e.state == State::Stashed)
            .filter(|(_, e)| e.grant.permits() == permits && e.grant.ready_nanos() <= limit)
            .min_by_key(|(_, e)| e.grant.ready_nanos())
            .map(|(i, _)| i)?;
        let id = entries.next_id;
        entries.next_id = (id % (LIMITER_TAG - 1)) + 1;
        let entry = &mut entries.list[index];
        entry.state = State::Issued(id);
        let grant = entry.grant.started_at(now).with_claim(id);
        self.count(-1);
        Some(grant)
    }

    /// A cancel, under the limiter's lock, at the clock reading `now`:
    /// refuses a grant whose ready time has passed; stashes again a grant
    /// this handoff issued; refuses one it already knows; otherwise tries
    /// `give_back` (the limiter's own, to its schedule) and, if that fails,
    /// stashes the grant if `stashable` says, given the tag grants carried
    /// at the latest reset, that it could be one the limiter issued since
    /// (see [`Handoff::issued_since`]).
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
        if let Some(entry) = entries.list.iter_mut().find(|e| e.knows(grant)) {
            // Its current holder gives an issued slot back; anything else
            // is a grant cancelled already.
            if claim.is_some_and(|id| entry.state == State::Issued(id)) {
                entry.state = State::Stashed;
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
        entries.list.push(Entry {
            grant: *grant,
            state,
        });
        true
    }

    /// The tag grants carried at the latest reset.
    pub(crate) fn reset_tag(&self) -> u32 {
        lock(&self.entries).reset_tag
    }

    /// Whether this handoff has an entry for `grant` (given back, kept or
    /// handed on, and not expired): a sharded pacer asks its shards which
    /// one knows a grant before choosing where to keep it.
    pub(crate) fn knows(&self, grant: &Grant) -> bool {
        lock(&self.entries).list.iter().any(|e| e.knows(grant))
    }

    /// Whether a grant tagged `tag` was made at or after the reset that
    /// tagged grants `reset_tag`, given `age`: how many epochs before the
    /// limiter's current one a tag was made in.
    pub(crate) fn issued_since(tag: u32, reset_tag: u32, age: impl Fn(u32) -> u32) -> bool {
        age(tag) <= age(reset_tag)
    }

    /// Forgets everything: the limiter reset its schedule, under its lock,
    /// and now tags grants `tag`.
    pub(crate) fn reset(&self, tag: u32) {
        let mut entries = lock(&self.entries);
        entries.list.clear();
        entries.reset_tag = tag;
        // Ordering: Relaxed; see `is_empty`.
        self.stashed.store(0, Ordering::Relaxed);
    }

    /// Drops the entries whose ready time has passed.
    fn expire(&self, entries: &mut Entries, now: u64) {
        let before = entries.list.len();
        let mut dropped = 0;
        entries.list.retain(|e| {
            let live = e.grant.ready_nanos() >= now;
            dropped += u64::from(!live && e.state == State::Stashed);
            live
        });
        if entries.list.len() != before && dropped > 0 {
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
mod tests {
    use super::Handoff;
    use crate::limiter::Grant;

    const TAG: u32 = 1 << 31;

    fn grant(at: u64) -> Grant {
        Grant::new(at, at, 0, 1).with_claim(TAG)
    }

    #[test]
    fn a_stashed_grant_goes_once_to_the_next_caller_of_its_size() {
        let h = Handoff::new(TAG);
        assert!(h.is_empty());
        assert!(h.cancel(&grant(20), 5, |_| true, || false));
        assert!(!h.cancel(&grant(20), 5, |_| true, || false), "twice");
        assert!(h.take(2, None, 6).is_none(), "another size");
        assert!(h.take(1, Some(10), 6).is_none(), "too far");
        let g = h.take(1, None, 6).expect("stashed");
        assert_eq!((g.ready_nanos(), g.started_nanos()), (20, 6));
        assert!(h.take(1, None, 6).is_none(), "issued once");
        assert!(
            !h.cancel(&grant(20), 7, |_| true, || false),
            "the first holder again"
        );
        assert!(h.cancel(&g, 7, |_| true, || false), "its new holder");
        assert!(!h.cancel(&g, 7, |_| true, || false));
        assert!(h.take(1, None, 21).is_none(), "expired");
        assert!(h.is_empty());
    }

    #[test]
    fn a_part_of_a_known_grant_is_refused() {
        // A lease of 3 given back, then its first grant of 1 (same times and
        // tag): not kept, it was given back with the lease.
        let h = Handoff::new(TAG);
        let lease = Grant::new(30, 30, 0, 3).with_claim(TAG);
        assert!(h.cancel(&lease, 0, |_| true, || true));
        let part = Grant::new(30, 30, 0, 1).with_claim(TAG);
        assert!(!h.cancel(&part, 0, |_| true, || false));
        assert!(h.is_empty());
        // Kept, then handed on: a part of the issued grant does not put the
        // whole back.
        let lease = Grant::new(40, 40, 0, 3).with_claim(TAG);
        assert!(h.cancel(&lease, 0, |_| true, || false));
        let g = h.take(3, None, 1).expect("kept");
        assert!(!h.cancel(&g.with_permits(1), 2, |_| true, || false));
        assert!(h.is_empty(), "still issued");
        assert!(h.cancel(&g, 2, |_| true, || false));
        assert!(!h.is_empty());
    }

    #[test]
    fn given_back_grants_old_grants_and_resets_are_refused() {
        let h = Handoff::new(TAG | 1);
        let age = |t: u32| u32::from(t == TAG);
        let since = |r: u32| Handoff::issued_since(TAG, r, age);
        assert!(h.cancel(&grant(30), 0, |_| true, || true));
        assert!(h.is_empty(), "given back to the schedule");
        assert!(
            !h.cancel(&grant(30), 0, |_| true, || false),
            "already given back"
        );
        assert!(
            !h.cancel(&grant(40), 0, since, || false),
            "before the reset"
        );
        assert!(h.cancel(&grant(50), 0, |_| true, || false));
        h.reset(TAG | 1);
        assert!(h.is_empty() && h.take(1, None, 0).is_none());
        assert!(
            !h.cancel(&grant(1), 2, |_| true, || true),
            "ready time passed"
        );
        assert!(
            !h.cancel(&Grant::new(9, 9, 0, 1), 0, |_| true, || true),
            "no claim"
        );
    }
}
