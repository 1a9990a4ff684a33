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
use std::task::Waker;

use crate::sync::Thread;

/// Someone to wake once the pool's lock is released.
#[derive(Clone)]
pub(super) enum Wake {
    /// A thread parked in a blocking wait, or the filler thread.
    Thread(Thread),
    /// An async wait ([`RateLimiter::poll_grant`](crate::RateLimiter::poll_grant)).
    Task(Waker),
}

impl Wake {
    pub(super) fn wake(self) {
        match self {
            Wake::Thread(t) => t.unpark(),
            Wake::Task(w) => w.wake(),
        }
    }
}

/// Wakes everyone in `wake`, emptying it.
pub(super) fn wake_all(wake: &mut Vec<Wake>) {
    for w in wake.drain(..) {
        w.wake();
    }
}

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
mod tests;
