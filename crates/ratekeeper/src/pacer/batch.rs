//! Micro-batching: a [`PacerHandle`] leases a block of the pacer's schedule
//! with one atomic add and hands its slots out locally.
//!
//! Under heavy contention the pacer's one shared read-modify-write per grant
//! is the bottleneck. A handle, one per thread, takes `k` slots with one
//! `fetch_add` and grants them one by one, touching shared memory only to
//! read the pacer's read-mostly mode word.
//!
//! ```
//! use ratekeeper::{Pacer, Rate, RateLimiter};
//!
//! let pacer = Pacer::builder(Rate::new(1e8)?).strictness(0.0).build()?;
//! std::thread::scope(|s| {
//!     for _ in 0..2 {
//!         s.spawn(|| {
//!             let handle = pacer.handle(); // one per thread
//!             for _ in 0..1000 {
//!                 let grant = handle.acquire();
//!                 assert!(grant.ready_nanos() >= grant.scheduled_nanos());
//!             }
//!         });
//!     }
//! });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What a lease changes, and the slack
//!
//! Leases are taken in average and burst compensation modes; in strict and
//! burst modes a handle takes the pacer's exact path. Every slot a handle
//! grants is a slot of the pacer's schedule, taken once and ready at
//! `max(slot, now)`, so the pacer's guarantees hold. A lease changes only
//! **who** gets a slot: slots are in order within a handle, and grants may
//! fall short of the exact path's by `handles × max_lease × rate`
//! ([`max_lease`](PacerHandle::with_max_lease), default [`DEFAULT_MAX_LEASE`]).
//!
//! Unused slots go back on [`release`](PacerHandle::release), on drop, or
//! when a request does not fit, if the schedule has not moved on; else they
//! are forfeited (fewer grants, never more). A reset or cancel expires every
//! lease. A lease holds about what the handle granted in the last
//! `max_lease`, at most [`MAX_LEASE_SLOTS`]. A handle's grants cannot be
//! cancelled. `docs/pacer.md` has the details.
//!
//! # Invariants
//!
//! 1. `[next, end)` is a run of the pacer's schedule taken by one `fetch_add`
//!    under epoch `tag` and handed to no one else: slots in it are granted
//!    once, by this handle, or given back once (then the lease is empty).
//! 2. A slot is granted from the lease only while the pacer's epoch is still
//!    `tag`, so never across a reset of the schedule.
//! 3. Leased schedule not yet granted is at most `max_lease` (one lease).
//!
//! # Memory ordering
//!
//! Taking a lease is the same acquire-release read-modify-write as an exact
//! grant, so a grant from a lease happens after every grant (and lease)
//! reserved before that lease. Grants from one lease add no ordering across
//! threads.

use core::cell::Cell;
use core::fmt;
use std::time::Duration;

use super::decision::{self, MAX_SPAN};
use super::params::{kind, shift, tag, CACHED_CLOCK, IDLE, KIND_COMPENSATE, KIND_DUAL, SPACED};
use super::Pacer;
use crate::clock::{elapsed_nanos, Clock, DefaultClock};
use crate::limiter::{AcquireError, Grant, RateLimiter, WaitStats};
use crate::sync::{lock, Ordering};
use crate::wait::{saturating_nanos, WaitPolicy};

/// The default longest lease: 100 µs of schedule per handle.
pub const DEFAULT_MAX_LEASE: Duration = Duration::from_micros(100);

/// The most slots one lease holds: its atomic add is one per 1024 grants,
/// and the slack stays small at very high rates.
pub const MAX_LEASE_SLOTS: u64 = 1024;

/// A per-thread batching handle on a [`Pacer`]; see the [module docs](self).
///
/// `Send` but not `Sync`: make one per thread with [`Pacer::handle`]. It is
/// a [`RateLimiter`], so blocking and async waiting work on it.
pub struct PacerHandle<'a, C: Clock = DefaultClock> {
    pacer: &'a Pacer<C>,
    /// The next slot of the lease.
    next: Cell<u64>,
    /// The end of the lease (`next == end`: no lease).
    end: Cell<u64>,
    /// The epoch tag the lease was taken under.
    tag: Cell<u32>,
    /// Whether the pacer skips clock reads for callers known due.
    cached: Cell<bool>,
    /// Nanos per op at lease time.
    op: Cell<u64>,
    /// A clock reading this handle knows of: a lower bound of the present.
    seen: Cell<u64>,
    /// The size of the last lease, in slots, and when it was taken.
    slots: Cell<u64>,
    leased_at: Cell<u64>,
    max_lease: u64,
}

impl<C: Clock> Pacer<C> {
    /// A batching handle on this pacer, for one thread. With an
    /// `Arc<Pacer>`, move a clone into the thread and make the handle there.
    pub fn handle(&self) -> PacerHandle<'_, C> {
        // Ordering: Relaxed; a starting hint, the first lease reads the clock.
        let seen = self.last_seen.load(Ordering::Relaxed);
        PacerHandle {
            pacer: self,
            next: Cell::new(0),
            end: Cell::new(0),
            tag: Cell::new(0),
            cached: Cell::new(true),
            op: Cell::new(1),
            seen: Cell::new(seen),
            slots: Cell::new(1),
            leased_at: Cell::new(seen),
            max_lease: saturating_nanos(DEFAULT_MAX_LEASE),
        }
    }
}

impl<'a, C: Clock> PacerHandle<'a, C> {
    /// Sets the longest lease, in schedule time (the bound of the slack);
    /// releases the current lease first.
    pub fn with_max_lease(mut self, max_lease: Duration) -> Self {
        self.release();
        self.max_lease = saturating_nanos(max_lease);
        self
    }

    /// The pacer this handle leases from.
    pub fn pacer(&self) -> &'a Pacer<C> {
        self.pacer
    }

    /// Slots leased and not granted yet (at the lease's rate).
    pub fn leased_slots(&self) -> u64 {
        (self.end.get() - self.next.get()) / self.op.get().max(1)
    }

    /// Gives back the slots leased and not granted, or forfeits them if the
    /// schedule moved on; `true` if slots went back.
    pub fn release(&self) -> bool {
        let (next, end) = (self.next.get(), self.end.get());
        self.end.set(next);
        if next == end {
            return false;
        }
        // Under the configuration lock, so no reset or cancel runs between
        // the epoch check and the compare-exchange (they take the lock).
        let _control = lock(&self.pacer.control);
        // Ordering: Relaxed; the mode word is written only under the lock.
        let mode = self.pacer.params.mode.load(Ordering::Relaxed);
        if tag(mode) != self.tag.get() {
            return false; // the schedule was reset or cancelled into: forfeit
        }
        // Ordering: AcqRel on success, ordered with reservations like one of
        // them (a reservation that takes the slots again happens after this);
        // Relaxed on failure, which reads nothing we use. Slots that were never
        // granted go back: no standing grant's tag or window is affected.
        self.pacer
            .ideal
            .compare_exchange(end, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// The clock reading a grant of `slot` is made against: a fresh reading,
    /// or with the opt-in cached clock a lower bound of the present (the
    /// handle's reading, else the pacer's last-seen, if it shows `slot` due;
    /// else a fresh reading, published).
    #[inline(always)]
    fn now_for(&self, slot: u64, cached: bool) -> u64 {
        if !cached {
            return self.pacer.now();
        }
        let seen = self.seen.get();
        if slot < seen {
            return seen;
        }
        self.refresh_cached(slot)
    }

    #[inline(never)]
    fn refresh_cached(&self, slot: u64) -> u64 {
        // Ordering: Relaxed; see `Pacer::refresh`.
        let shared = self.pacer.last_seen.load(Ordering::Relaxed);
        let seen = self.seen.get().max(shared);
        let now = if slot < seen {
            seen
        } else {
            self.pacer.refresh(seen).max(seen)
        };
        self.seen.set(now);
        now
    }

    /// Grants `permits` (`span` ns) from the lease if it still holds them on
    /// the current schedule; `None` to go the slow way.
    #[inline(always)]
    fn reserve_local(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Option<Result<Grant, AcquireError>> {
        // Ordering: Acquire; the pacer's mode word, read-mostly. Pairs with
        // the Release store that moves the epoch on after a reset: a lease
        // whose tag is still current is on the current schedule.
        let mode = self.pacer.params.mode.load(Ordering::Acquire);
        if tag(mode) != self.tag.get() {
            return None;
        }
        let slot = self.next.get();
        let span = u64::from(permits).checked_mul(self.op.get())?;
        if permits == 0 || span > self.end.get() - slot {
            return None;
        }
        // Leases are taken in average and compensation modes only, whose
        // grants need nothing but the slot and a clock bound.
        let now = self.now_for(slot, self.cached.get());
        let ready = slot.max(now);
        if let Some(max) = max_wait {
            if ready - now > saturating_nanos(max) {
                // Nothing taken: the slot stays in the lease.
                return Some(Err(super::reserve::would_wait(ready - now, max)));
            }
        }
        self.next.set(slot + span);
        Some(Ok(self.pacer.grant(slot, ready, now, permits)))
    }

    /// No lease holds the request: give back what is left and lease afresh
    /// (unbounded requests), or take the exact path (bounded ones, requests
    /// larger than a lease, rates too low to batch).
    #[cold]
    #[inline(never)]
    fn reserve_slow(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        if max_wait.is_some() {
            // Keeps the lease: a refusal changes nothing.
            return self.pacer.reserve(permits, max_wait);
        }
        self.release();
        // Ordering: Acquire, as in `Pacer::reserve`: the tag must come from a
        // mode word loaded before the slices and before the lease's add.
        let mut mode = self.pacer.params.mode.load(Ordering::Acquire);
        if mode & IDLE != 0 {
            self.pacer.start();
            // Ordering: Acquire, as above.
            mode = self.pacer.params.mode.load(Ordering::Acquire) & !IDLE;
        }
        // Ordering: Relaxed; configuration read after the mode word.
        let op = self.pacer.params.op_nanos.load(Ordering::Relaxed).max(1);
        let cap = (self.max_lease / op).min(MAX_LEASE_SLOTS);
        // A pending spacing (a change from strict or burst mode) is kept
        // by the exact path only.
        let dual = kind(mode) == KIND_DUAL || mode & SPACED != 0;
        if dual || cap < 2 || u64::from(permits) > cap {
            return self.pacer.reserve(permits, max_wait);
        }
        // The lease size: the slots this handle granted in the last
        // `max_lease` of its time, at most twice the last lease and `cap`.
        let now = if mode & CACHED_CLOCK != 0 {
            self.pacer.refresh(self.seen.get()).max(self.seen.get())
        } else {
            self.pacer.now().max(self.seen.get())
        };
        self.seen.set(now);
        let elapsed = elapsed_nanos(self.leased_at.get(), now).max(1);
        let last = self.slots.get();
        let observed = u128::from(last) * u128::from(self.max_lease) / u128::from(elapsed);
        let slots = (observed.min(u128::from(2 * last)) as u64)
            .clamp(1, cap)
            .max(u64::from(permits));
        let span = slots * op;
        if span > MAX_SPAN {
            return self.pacer.reserve(permits, None);
        }
        // The lease happens-after every grant and lease reserved before it:
        // it takes its slots with an exact grant's add.
        let slot = decision::take(&self.pacer.ideal, span, self.pacer.params.limit)?;
        if kind(mode) == KIND_COMPENSATE {
            self.pacer.compensate(slot, span, now, shift(mode));
        }
        self.next.set(slot);
        self.end.set(slot + span);
        self.tag.set(tag(mode));
        self.cached.set(mode & CACHED_CLOCK != 0);
        self.op.set(op);
        self.slots.set(slots);
        self.leased_at.set(now);
        match self.reserve_local(permits, None) {
            Some(result) => result,
            // A reset since the lease was taken: the lease expired at once.
            None => self.pacer.reserve(permits, None),
        }
    }
}

impl<C: Clock> RateLimiter for PacerHandle<'_, C> {
    /// Grants from the lease when it holds the request, else leases afresh;
    /// see the [module docs](self).
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        match self.reserve_local(permits, max_wait) {
            Some(result) => result,
            None => self.reserve_slow(permits, max_wait),
        }
    }

    /// Parks while another caller sleeps on the schedule (see
    /// [Waiting](super#waiting)).
    #[inline(always)]
    fn wait_turn(&self) {
        self.pacer.room.enter();
    }

    /// Waits in the pacer's room, as the pacer does.
    #[inline(always)]
    fn wait_for(&self, grant: Grant) -> Grant {
        self.pacer.wait_for(grant)
    }

    #[inline]
    fn clock(&self) -> &dyn Clock {
        &self.pacer.clock
    }

    fn wait_stats(&self) -> WaitStats {
        self.pacer.wait_stats()
    }

    #[inline]
    fn wait_policy(&self) -> WaitPolicy {
        self.pacer.wait_policy()
    }

    /// The pacer's (strict and burst modes take the pacer's exact path).
    fn released(&self, grant: &Grant) {
        self.pacer.released(grant)
    }
}

impl<C: Clock> Drop for PacerHandle<'_, C> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<C: Clock> fmt::Debug for PacerHandle<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacerHandle")
            .field("next", &self.next.get())
            .field("end", &self.end.get())
            .field("lease_slots", &self.slots.get())
            .field("max_lease_nanos", &self.max_lease)
            .finish_non_exhaustive()
    }
}
