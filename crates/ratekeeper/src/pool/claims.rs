//! [`Claims`]: the token pool's queue of claims (callers waiting for
//! tokens), oldest first, found by the id their [`Grant`](crate::Grant)
//! carries in O(log n) and cancelled anywhere in O(1) amortised.
//!
//! Each claim has a sequence number, increasing along the queue; its id is
//! the number's low 32 bits (never 0), so a grant stays 32 bytes. A claim
//! cancelled behind the front leaves a tombstone, so that the claims after
//! it do not move; tombstones leave with the front, or all at once when
//! they outnumber the live claims.

use std::collections::VecDeque;

use super::limiter::Wake;

/// A caller waiting for tokens.
pub(super) struct Claim {
    /// Its place in the order of claims: increasing along the queue.
    seq: u64,
    /// Cancelled: a tombstone, which no lookup finds.
    gone: bool,
    /// The tokens it asked for.
    pub(super) span: u64,
    /// The tokens it still needs (0 for a tombstone).
    pub(super) remaining: u64,
    /// Who to wake when the claim completes (or must fill, or restart
    /// the pool): a blocked thread, or an async task's waker.
    pub(super) waiter: Option<Wake>,
    /// A caller is blocked in `wait_claim` on this claim: it is theirs, and
    /// `cancel` leaves it alone.
    pub(super) held: bool,
    /// The grant it was returned in (scheduled, started, permits), so that
    /// `cancel` withdraws it only for that grant.
    pub(super) grant: (u64, u64, u32),
}

/// The 32 bits of `seq` a claim's id carries.
#[inline]
fn claim_id(seq: u64) -> u32 {
    seq as u32
}

/// Ids name one entry each while the queue spans fewer sequence numbers
/// than ids can tell apart.
const ID_SPAN: u64 = 1 << 32;

/// The claims, oldest first. Positions index the entries (tombstones
/// included) and hold until the queue next changes.
pub(super) struct Claims {
    entries: VecDeque<Claim>,
    /// Entries that are not tombstones.
    live: usize,
    /// The next claim's sequence number.
    next: u64,
}

impl Claims {
    pub(super) fn new() -> Claims {
        Claims {
            entries: VecDeque::new(),
            live: 0,
            next: 1,
        }
    }

    /// Queues a claim for `span` tokens, returned in `grant`; its id.
    pub(super) fn push(&mut self, span: u64, grant: (u64, u64, u32)) -> u32 {
        let seq = self.next_seq();
        self.entries.push_back(Claim {
            seq,
            gone: false,
            span,
            remaining: span,
            waiter: None,
            held: false,
            grant,
        });
        self.live += 1;
        claim_id(seq)
    }

    /// The next sequence number: its id non-zero and, once the queue spans
    /// 2^32 sequence numbers, not one still queued.
    fn next_seq(&mut self) -> u64 {
        loop {
            let seq = self.next;
            // 2^64 claims: centuries at a billion a second.
            self.next = seq.wrapping_add(1);
            if claim_id(seq) == 0 {
                continue;
            }
            let spans_ids = self.entries.front().is_some_and(|f| seq - f.seq >= ID_SPAN);
            if spans_ids && self.find(claim_id(seq)).is_some() {
                continue;
            }
            return seq;
        }
    }

    /// Where claim `id` is, if it is still queued: a binary search by
    /// sequence number. While the queue spans fewer than 2^32 sequence
    /// numbers (past that takes four billion claims queued behind one that
    /// waits all along), `id` names one of them; past that, a linear
    /// search.
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        let (front, back) = (self.entries.front()?.seq, self.entries.back()?.seq);
        let pos = if back - front < ID_SPAN {
            let seq = front + u64::from(id.wrapping_sub(claim_id(front)));
            self.entries.binary_search_by_key(&seq, |c| c.seq).ok()?
        } else {
            self.entries
                .iter()
                .position(|c| !c.gone && claim_id(c.seq) == id)?
        };
        (!self.entries[pos].gone).then_some(pos)
    }

    /// The oldest claim (never a tombstone).
    pub(super) fn front_mut(&mut self) -> Option<&mut Claim> {
        self.entries.front_mut()
    }

    /// Takes the oldest claim off the queue.
    pub(super) fn pop_front(&mut self) -> Option<Claim> {
        let claim = self.entries.pop_front()?;
        self.live -= 1;
        self.drop_front_tombstones();
        Some(claim)
    }

    /// Takes the claim at `pos` (from [`find`](Self::find)) off the queue,
    /// leaving a tombstone if claims queued before it are still there.
    pub(super) fn remove(&mut self, pos: usize) -> Option<Claim> {
        if pos == 0 {
            return self.pop_front();
        }
        let entry = self.entries.get_mut(pos).filter(|c| !c.gone)?;
        let tombstone = Claim {
            seq: entry.seq,
            gone: true,
            span: 0,
            remaining: 0,
            waiter: None,
            held: false,
            grant: (0, 0, 0),
        };
        let claim = std::mem::replace(entry, tombstone);
        self.live -= 1;
        if self.entries.len() - self.live > self.live + 16 {
            self.entries.retain(|c| !c.gone);
        }
        Some(claim)
    }

    fn drop_front_tombstones(&mut self) {
        while self.entries.front().is_some_and(|c| c.gone) {
            self.entries.pop_front();
        }
    }

    /// Claims queued.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// Whether no claim is queued.
    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The queued claims, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Claim> {
        self.entries.iter().filter(|c| !c.gone)
    }

    /// Tokens owed to the claims up to and including the one at `pos`: a
    /// prefix of the sum the pool's `owed` holds, so it never overflows
    /// (saturating only as a guard).
    pub(super) fn owed_through(&self, pos: usize) -> u64 {
        self.entries
            .iter()
            .take(pos + 1)
            .fold(0u64, |sum, c| sum.saturating_add(c.remaining))
    }
}

/// The claim at a position from [`Claims::find`].
impl std::ops::Index<usize> for Claims {
    type Output = Claim;
    fn index(&self, pos: usize) -> &Claim {
        &self.entries[pos]
    }
}

impl std::ops::IndexMut<usize> for Claims {
    fn index_mut(&mut self, pos: usize) -> &mut Claim {
        &mut self.entries[pos]
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn starting_at(next: u64) -> Claims {
        Claims {
            next,
            ..Claims::new()
        }
    }

    /// Every queued claim is found by its id, ids are unique, and the
    /// count is right; `ids` are the claims the caller believes queued.
    fn check(claims: &Claims, ids: &[u32]) {
        assert_eq!(claims.len(), ids.len());
        for &id in ids {
            let pos = claims.find(id).unwrap_or_else(|| panic!("{id} lost"));
            assert_eq!(claim_id(claims[pos].seq), id);
        }
        let seen: Vec<u32> = claims.iter().map(|c| claim_id(c.seq)).collect();
        assert_eq!(seen, ids);
    }

    #[test]
    fn ids_wrap_past_u32_max_skipping_zero() {
        let mut claims = starting_at(ID_SPAN - 2);
        let ids: Vec<u32> = (0..4).map(|_| claims.push(1, (0, 0, 1))).collect();
        assert_eq!(ids, [u32::MAX - 1, u32::MAX, 1, 2]);
        check(&claims, &ids);
        let removed = claims.remove(claims.find(u32::MAX).unwrap()).unwrap();
        assert_eq!(claim_id(removed.seq), u32::MAX);
        check(&claims, &[u32::MAX - 1, 1, 2]);
        assert_eq!(claims.find(u32::MAX), None, "a tombstone is not found");
        assert_eq!(claims.find(0), None);
        assert_eq!(claims.find(3), None);
    }

    #[test]
    fn past_a_span_of_two_to_the_32_ids_still_queued_are_skipped() {
        let mut claims = starting_at(5);
        assert_eq!(claims.push(1, (0, 0, 1)), 5);
        // Four billion claims later, the first still waits.
        claims.next = 5 + ID_SPAN;
        assert_eq!(claims.push(1, (0, 0, 1)), 6, "5 is still queued");
        assert_eq!(claims.push(1, (0, 0, 1)), 7);
        check(&claims, &[5, 6, 7]);
        claims.remove(claims.find(6).unwrap());
        check(&claims, &[5, 7]);
        claims.pop_front();
        check(&claims, &[7]);
    }

    #[test]
    fn tombstones_leave_with_the_front_or_when_they_outnumber_claims() {
        let mut claims = Claims::new();
        let ids: Vec<u32> = (0..100).map(|_| claims.push(1, (0, 0, 1))).collect();
        for &id in &ids[1..50] {
            claims.remove(claims.find(id).unwrap());
        }
        check(&claims, &[&ids[..1], &ids[50..]].concat());
        // 49 tombstones against 51 claims: none compacted.
        assert_eq!(claims.entries.len(), 100);
        claims.pop_front();
        assert_eq!(
            claims.entries.len(),
            50,
            "the tombstones behind it left too"
        );
        for &id in &ids[51..99] {
            claims.remove(claims.find(id).unwrap());
        }
        check(&claims, &[ids[50], ids[99]]);
        // The 34th cancel made 34 tombstones against 16 claims: compacted;
        // 14 tombstones since, against 2.
        assert_eq!(claims.entries.len(), 2 + 14, "compacted once");
    }

    /// Tombstones queued behind the front.
    fn tombstones(claims: &Claims) -> usize {
        claims.entries.len() - claims.len()
    }

    proptest! {
        /// Claims joining (one or a burst at a time), served from the front
        /// and cancelled anywhere, from any start: each queued claim is found
        /// by its id, in order. Cancels outweigh the rest, so tombstones pile
        /// up behind the front and past the compaction threshold: a cancel
        /// leaves a tombstone while tombstones are at most 16 more than the
        /// claims, and clears them all at once on the one that would make
        /// them more.
        #[test]
        fn every_queued_claim_is_found_by_its_id(
            start in prop_oneof![0u64..10, (ID_SPAN - 8)..(ID_SPAN + 8), any::<u32>().prop_map(u64::from)],
            ops in prop::collection::vec((0u8..8, any::<prop::sample::Index>()), 1..300),
        ) {
            let mut claims = starting_at(start);
            let mut ids: Vec<u32> = Vec::new();
            for (op, at) in ops {
                match op {
                    0 => ids.push(claims.push(1, (0, 0, 1))),
                    1 => {
                        for _ in 0..=at.index(40) {
                            ids.push(claims.push(1, (0, 0, 1)));
                        }
                    }
                    2 => {
                        let popped = claims.pop_front().map(|c| claim_id(c.seq));
                        prop_assert_eq!(popped, (!ids.is_empty()).then(|| ids.remove(0)));
                    }
                    _ if !ids.is_empty() => {
                        let i = at.index(ids.len());
                        let id = ids.remove(i);
                        let (before, held) = (tombstones(&claims), claims.entries.len());
                        let pos = claims.find(id);
                        prop_assert!(pos.is_some());
                        prop_assert!(claims.remove(pos.unwrap()).is_some());
                        prop_assert_eq!(claims.find(id), None);
                        if i > 0 {
                            // Behind the front: at most 16 tombstones over
                            // the claims left, and compacted only to keep
                            // to that, all at once.
                            prop_assert!(tombstones(&claims) <= claims.len() + 16);
                            if claims.entries.len() != held {
                                prop_assert_eq!(tombstones(&claims), 0, "all at once");
                                prop_assert!(before + 1 > claims.len() + 16, "compacted early");
                            }
                        }
                    }
                    _ => {}
                }
                check(&claims, &ids);
                prop_assert!(!claims.entries.front().is_some_and(|c| c.gone), "a tombstone in front");
            }
        }
    }
}
