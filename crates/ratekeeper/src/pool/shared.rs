//! [`Shared`]: the token pool's counters, queue and fills, shared with the
//! filler thread.

//! [`TokenPool`]: the pools of [`Pools`] as a thread-safe rate limiter.

use crossbeam_utils::CachePadded;

use super::claims::{wake_all, Claims, Wake};
use super::filler::{Handle, Next};
use super::filling::Filling;
use super::pools::Pools;
use crate::clock::{elapsed_nanos, Clock};
use crate::grant::Grant;
use crate::rate::Rate;
use crate::sync::{lock, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::wait::WaitPolicy;

/// What the pool and its filler thread share.
///
/// Invariants:
///
/// 1. `filled` and `taken` only grow; the active pool is `filled − taken`
///    (signed; negative only for an instant inside `commit`, read as empty).
/// 2. Only a `state` lock holder writes `filled`; `taken` moves by a
///    compare-exchange that never takes more than the active pool holds.
/// 3. After every critical section no claim is queued or the active pool is
///    empty: a lock-free taker finds tokens only when nobody waits (FIFO).
pub(crate) struct Shared<C> {
    /// Tokens taken from the active pool since the pool was built.
    pub(super) taken: CachePadded<AtomicU64>,
    /// Tokens put into the active pool since the pool was built.
    pub(super) filled: CachePadded<AtomicU64>,
    /// The latest clock reading any caller or fill stored.
    pub(super) last_seen: CachePadded<AtomicU64>,
    pub(super) params: CachePadded<Params>,
    pub(super) cached_clock: bool,
    pub(super) policy: WaitPolicy,
    pub(super) state: Mutex<State>,
    pub(super) clock: C,
}

/// Read-mostly values the lock-free path needs, written under the lock.
pub(super) struct Params {
    pub(super) nanos_per_op: AtomicU64,
    /// `scheduled = taken_before + base` (wrapping): the schedule origin
    /// minus the tokens taken before it and withdrawn since.
    pub(super) base: AtomicU64,
    /// The filler thread is parked: a taker that finds it set must wake it.
    /// Written under the lock; see `Shared::try_park`.
    pub(super) idle: AtomicBool,
}

pub(super) struct State {
    pub(super) rate: Rate,
    /// The waiting pool and the sizes; active pool synced at each fill.
    pub(super) pools: Pools,
    /// Claims waiting for tokens, oldest first.
    pub(super) queue: Claims,
    /// Tokens the queued claims still need: exactly the sum of their
    /// `remaining`, never saturated (`reserve_slow` refuses overflow).
    pub(super) owed: u64,
    /// The clock reading of the latest fill.
    pub(super) last_fill: u64,
    pub(super) started: bool,
    /// `Filling::Inline`: a waiter is sleeping to refill for the queue.
    pub(super) filler_busy: bool,
    /// Backlog checkpointed when the pool was stopped.
    pub(super) accumulated: u64,
    pub(super) fills: u64,
    /// The filling in effect (`Inline` if a filler thread could not start).
    pub(super) mode: Filling,
    pub(super) filler: Option<Handle>,
    /// The filler is parked as idle: its time since `last_fill` is backlog
    /// not added yet (see `Shared::catch_up`).
    pub(super) parked: bool,
}

impl State {
    /// Where claim `id` is in the queue, if it is still queued.
    pub(super) fn position(&self, id: u32) -> Option<usize> {
        self.queue.find(id)
    }
}

/// The active pool given `filled` and `taken` (never negative).
#[inline]
pub(super) fn available(filled: u64, taken: u64) -> u64 {
    (filled.wrapping_sub(taken) as i64).max(0) as u64
}

impl<C: Clock> Shared<C> {
    /// A pool's shared state, idle, its schedule starting at `clock`'s reading.
    pub(super) fn new(
        rate: Rate,
        pools: Pools,
        mode: Filling,
        cached_clock: bool,
        policy: WaitPolicy,
        clock: C,
    ) -> Shared<C> {
        let now = clock.now_nanos();
        Shared {
            taken: CachePadded::new(AtomicU64::new(0)),
            filled: CachePadded::new(AtomicU64::new(0)),
            last_seen: CachePadded::new(AtomicU64::new(now)),
            params: CachePadded::new(Params {
                nanos_per_op: AtomicU64::new(pools.nanos_per_op()),
                base: AtomicU64::new(now),
                idle: AtomicBool::new(false),
            }),
            cached_clock,
            policy,
            state: Mutex::new(State {
                rate,
                pools,
                queue: Claims::new(),
                owed: 0,
                last_fill: now,
                started: false,
                filler_busy: false,
                accumulated: 0,
                fills: 0,
                mode,
                filler: None,
                parked: false,
            }),
            clock,
        }
    }

    pub(super) fn clock(&self) -> &C {
        &self.clock
    }

    /// The lock-free path: takes `span` tokens if the active pool holds them;
    /// returns `taken` before the take.
    #[inline(always)]
    pub(super) fn try_take(&self, span: u64) -> Option<u64> {
        // Ordering: Acquire, so the `filled` read below is at least as new as
        // the one the taker that stored this value checked against (it
        // released it with its compare-exchange): `filled − taken` is then
        // never an underestimate of a value that was negative.
        let mut taken = self.taken.load(Ordering::Acquire);
        loop {
            // Ordering: Acquire pairs with the Release store of a fill, so the
            // tokens and everything the filler did before are visible.
            let filled = self.filled.load(Ordering::Acquire);
            if available(filled, taken) < span {
                return None;
            }
            // Ordering: AcqRel on success, so grants are ordered like the
            // Pacer's (each happens after the ones before it on this pool);
            // Acquire on failure, as for the load above.
            match self.taken.compare_exchange_weak(
                taken,
                taken.wrapping_add(span),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(taken),
                Err(current) => taken = current,
            }
        }
    }

    /// The grant for tokens taken at once at `taken`.
    #[inline(always)]
    pub(super) fn grant_now(&self, taken: u64, permits: u32) -> Grant {
        // Ordering: Relaxed for both; `base` changes only at (re)start, stop,
        // and when tokens are withdrawn, and an op racing those may be
        // scheduled against either side of them (documented). `last_seen` is
        // a clock reading and carries no other data.
        let scheduled = taken.wrapping_add(self.params.base.load(Ordering::Relaxed));
        let started = if self.cached_clock {
            let seen = self.last_seen.load(Ordering::Relaxed);
            if scheduled < seen {
                seen
            } else {
                let now = self.clock.now_nanos();
                // A plain store, as the Pacer does: a racing older reading
                // may win, which only makes the cache a little staler.
                if now > seen {
                    self.last_seen.store(now, Ordering::Relaxed);
                }
                now
            }
        } else {
            // Not cached: no shared write on the common path.
            self.clock.now_nanos()
        };
        Grant::new(scheduled.min(started), started, started, permits)
    }

    #[inline]
    pub(super) fn see(&self, now: u64) {
        // Ordering: Relaxed; a clock reading, and `fetch_max` keeps it from
        // going back when readings race.
        if now > self.last_seen.load(Ordering::Relaxed) {
            self.last_seen.fetch_max(now, Ordering::Relaxed);
        }
    }

    pub(super) fn active(&self) -> u64 {
        // Ordering: Acquire, as in `try_take`.
        let taken = self.taken.load(Ordering::Acquire);
        available(self.filled.load(Ordering::Acquire), taken)
    }

    /// Refills with `nanos` tokens and serves queued claims first, as one
    /// step, so no lock-free taker sees tokens owed to claims (see
    /// [Serving waiting callers first](crate::pool#serving-waiting-callers-first)).
    pub(super) fn refill_locked(&self, st: &mut State, nanos: u64, wake: &mut Vec<Wake>) {
        loop {
            // Ordering: Acquire as in `try_take`; Relaxed for `filled`, which
            // only lock holders write.
            let taken = self.taken.load(Ordering::Acquire);
            let filled = self.filled.load(Ordering::Relaxed);
            let before = available(filled, taken);
            let mut pools = st.pools.clone();
            pools.set_active(before);
            // Claims wait only while the active pool is empty (invariant 3),
            // so the direct tokens never bypass tokens the pool holds.
            let demand = if st.mode == Filling::Inline && before == 0 {
                st.owed
            } else {
                0
            };
            let direct = pools.refill_serving(nanos, demand);
            let after = pools.active();
            let to_claims = after.min(st.owed - direct);
            // The direct tokens pass through the counters like tokens a claim
            // takes from the pool: `commit` takes them (with `to_claims`)
            // before it adds them, so no lock-free taker ever sees them.
            if !self.commit(
                taken,
                filled,
                before,
                after.saturating_add(direct),
                to_claims + direct,
            ) {
                continue; // a lock-free taker took in between: recompute
            }
            pools.set_active(after - to_claims);
            st.pools = pools;
            st.fills += 1;
            self.distribute(st, to_claims + direct, wake);
            return;
        }
    }

    /// Moves the active pool from `before` to `after`, `to_claims` tokens to
    /// queued claims: a compare-exchange on `taken` against the snapshot,
    /// then `filled`, so the pool never shows tokens that are not there.
    /// `false` if a lock-free taker moved `taken` since the snapshot.
    pub(super) fn commit(
        &self,
        taken: u64,
        filled: u64,
        before: u64,
        after: u64,
        to_claims: u64,
    ) -> bool {
        let withdrawn = before.saturating_sub(after);
        let out = withdrawn + to_claims;
        if out > 0 {
            // Ordering: AcqRel, like a taker's; Relaxed on failure (we retry
            // from a fresh Acquire load).
            if self
                .taken
                .compare_exchange(
                    taken,
                    taken.wrapping_add(out),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                return false;
            }
        }
        let added = after.saturating_sub(before);
        if added > 0 {
            // Ordering: Release pairs with the takers' Acquire loads.
            self.filled
                .store(filled.wrapping_add(added), Ordering::Release);
        }
        if withdrawn > 0 {
            // Withdrawn tokens (moved back to the waiting pool) are no op's
            // schedule. Ordering: Relaxed; see `grant_now`.
            self.params.base.fetch_sub(withdrawn, Ordering::Relaxed);
        }
        true
    }

    /// Gives `tokens` to queued claims, oldest first, waking completed ones.
    pub(super) fn distribute(&self, st: &mut State, mut tokens: u64, wake: &mut Vec<Wake>) {
        st.owed -= tokens;
        while tokens > 0 {
            let Some(front) = st.queue.front_mut() else {
                break;
            };
            let give = front.remaining.min(tokens);
            front.remaining -= give;
            tokens -= give;
            if front.remaining == 0 {
                if let Some(claim) = st.queue.pop_front() {
                    wake.extend(claim.waiter);
                }
            }
        }
    }

    /// Serves queued claims from the active pool.
    pub(super) fn serve(&self, st: &mut State, wake: &mut Vec<Wake>) {
        while st.owed > 0 {
            let taken = self.taken.load(Ordering::Acquire);
            let filled = self.filled.load(Ordering::Relaxed);
            let active = available(filled, taken);
            if active == 0 {
                return;
            }
            let give = active.min(st.owed);
            if self.commit(taken, filled, active, active, give) {
                st.pools.set_active(active - give);
                self.distribute(st, give, wake);
                return;
            }
        }
    }

    /// Empties the active pool (tokens withdrawn, not taken by ops).
    pub(super) fn withdraw_active(&self, st: &mut State) {
        loop {
            let taken = self.taken.load(Ordering::Acquire);
            let filled = self.filled.load(Ordering::Relaxed);
            let active = available(filled, taken);
            if active == 0 || self.commit(taken, filled, active, 0, 0) {
                st.pools.set_active(0);
                return;
            }
        }
    }

    /// A fill from the clock: the time since the last fill.
    pub(super) fn fill_from_clock(&self, st: &mut State, now: u64, wake: &mut Vec<Wake>) {
        let elapsed = elapsed_nanos(st.last_fill, now);
        st.last_fill = st.last_fill.max(now);
        self.see(now);
        self.refill_locked(st, elapsed, wake);
    }

    /// The least time an inline fill covers while callers wait: the fill
    /// granule, at most half the active pool.
    pub(super) fn fill_granule(&self, st: &State) -> u64 {
        self.policy
            .fill_granule_nanos(&self.clock)
            .min(st.pools.max_active() / 2)
    }

    /// The filler thread's fill; whether the pool is now idle (park).
    pub(super) fn fill_tick(&self, now: u64) -> Next {
        let mut wake = Vec::new();
        let mut st = lock(&self.state);
        let mut next = Next::Fill;
        if st.parked {
            // Woken with nothing to do (a spurious wake-up), or by a take
            // whose waker has not had the lock yet.
            self.catch_up(&mut st, now);
            if self.active() == st.pools.max_over_active() {
                next = Next::Park; // still idle: no take since it parked
            } else {
                self.unpark_state(&mut st);
            }
        }
        if st.started && next == Next::Fill {
            self.fill_from_clock(&mut st, now, &mut wake);
            if self.try_park(&mut st) {
                next = Next::Park;
            }
        }
        drop(st);
        wake_all(&mut wake);
        next
    }

    /// Parks the filler if the pool is idle (nobody queued, active pool
    /// full): later fills could only add to the waiting pool, which
    /// `catch_up` does exactly on wake. Parking is published through
    /// `taken`: `idle` is set, then `taken` is written back unchanged by a
    /// compare-exchange against the full snapshot, failing if any take
    /// came since, so the first take always wakes the filler.
    pub(super) fn try_park(&self, st: &mut State) -> bool {
        if !st.queue.is_empty() || st.filler.is_none() {
            return false;
        }
        // Ordering: Acquire as in `try_take`; Relaxed for `filled`, which
        // only lock holders write.
        let taken = self.taken.load(Ordering::Acquire);
        let filled = self.filled.load(Ordering::Relaxed);
        if available(filled, taken) != st.pools.max_over_active() {
            return false;
        }
        // Ordering: Relaxed; the compare-exchange below publishes it.
        self.params.idle.store(true, Ordering::Relaxed);
        // Ordering: Release. Every write to `taken` is a read-modify-write,
        // so a take that comes after this one in `taken`'s modification
        // order reads from it or from a later one in its release sequence,
        // and its AcqRel compare-exchange synchronises with it: the take's
        // later load of `idle` sees it set (or cleared by a resume since).
        // A take before it made it fail. Relaxed on failure: nothing read.
        if self
            .taken
            .compare_exchange(taken, taken, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            st.parked = true;
            true
        } else {
            // Ordering: Relaxed; a taker that saw it set finds the filler
            // running when it gets the lock.
            self.params.idle.store(false, Ordering::Relaxed);
            false
        }
    }

    /// Adds the parked time since the last fill to the waiting pool. Exact
    /// while the active pool is still full; after a take it is conservative
    /// (that time becomes backlog, never early admission).
    pub(super) fn catch_up(&self, st: &mut State, now: u64) {
        if st.parked {
            let elapsed = elapsed_nanos(st.last_fill, now);
            st.last_fill = st.last_fill.max(now);
            self.see(now);
            st.pools.add_waiting(elapsed);
        }
    }

    /// Marks the filler running (it is awake, or about to be woken).
    pub(super) fn unpark_state(&self, st: &mut State) {
        st.parked = false;
        // Ordering: Relaxed; under the lock, and a taker that still reads it
        // set only takes the lock to find the filler running.
        self.params.idle.store(false, Ordering::Relaxed);
    }

    /// Wakes a parked filler, catching up its parked time first.
    pub(super) fn resume(&self, st: &mut State, now: u64, wake: &mut Vec<Wake>) {
        if st.parked {
            self.catch_up(st, now);
            self.unpark_state(st);
            wake.extend(st.filler.as_ref().map(|h| Wake::Thread(h.thread().clone())));
        }
    }

    /// What a lock-free take does when it finds the filler parked.
    #[cold]
    #[inline(never)]
    pub(super) fn wake_filler(&self) {
        let mut wake = Vec::new();
        let mut st = lock(&self.state);
        let now = self.clock.now_nanos();
        self.resume(&mut st, now, &mut wake);
        drop(st);
        wake_all(&mut wake);
    }

    /// Brings the waiting pool up to date for a reader while parked.
    pub(super) fn settle(&self, st: &mut State) {
        if st.parked {
            self.catch_up(st, self.clock.now_nanos());
        }
    }

    /// How long an inline-refilling waiter for the claim at `pos` waits
    /// before its next fill: until its tokens are due, clamped to
    /// [fill granule, half the active pool].
    pub(super) fn refill_span(&self, st: &State, pos: usize, now: u64) -> u64 {
        let due = st.queue.owed_through(pos);
        let since = elapsed_nanos(st.last_fill, now);
        let granule = self.fill_granule(st);
        let cap = (st.pools.max_active() / 2).saturating_sub(since).max(1);
        due.max(granule.saturating_sub(since)).min(cap).max(1)
    }

    /// In inline mode with nobody refilling, wakes a waiter to refill.
    pub(super) fn hand_over(&self, st: &State, wake: &mut Vec<Wake>) {
        if st.mode == Filling::Inline && !st.filler_busy {
            if let Some(w) = st.queue.iter().find_map(|c| c.waiter.as_ref()) {
                wake.push(w.clone());
            }
        }
    }

    /// Removes the claim at `pos` (given up or cancelled). Tokens it had go
    /// to the claims behind it, then the active pool up to
    /// `max_over_active`, the rest to the waiting pool. Returns the tokens
    /// it still needed.
    pub(super) fn cancel(&self, st: &mut State, pos: usize, wake: &mut Vec<Wake>) -> u64 {
        let Some(claim) = st.queue.remove(pos) else {
            return 0;
        };
        st.owed -= claim.remaining;
        let received = claim.span - claim.remaining;
        let to_claims = received.min(st.owed);
        self.distribute(st, to_claims, wake);
        let back = received - to_claims;
        if back > 0 {
            // Ordering: Relaxed load (only lock holders write `filled`), then
            // Release as in `commit`.
            let filled = self.filled.load(Ordering::Relaxed);
            let room = st.pools.max_over_active().saturating_sub(self.active());
            let to_active = back.min(room);
            if to_active > 0 {
                self.filled
                    .store(filled.wrapping_add(to_active), Ordering::Release);
            }
            st.pools.add_waiting(back - to_active);
            // The returned tokens are no op's: the ops that take them again
            // are scheduled where this claim was. Ordering: Relaxed; see
            // `grant_now`.
            self.params.base.fetch_sub(back, Ordering::Relaxed);
        }
        self.hand_over(st, wake);
        claim.remaining
    }

    /// Stops metering: checkpoints the backlog, empties the pools, returns
    /// the filler thread to stop.
    pub(super) fn halt(&self, st: &mut State, wake: &mut Vec<Wake>) -> Option<Handle> {
        if !st.started {
            return None;
        }
        self.settle(st);
        self.unpark_state(st); // `stop` wakes it
        st.accumulated = st.accumulated.saturating_add(st.pools.waiting());
        self.withdraw_active(st);
        st.pools.restart();
        st.started = false;
        // Waiters start the pool again (as any new acquire would).
        wake.extend(st.queue.iter().filter_map(|c| c.waiter.clone()));
        st.filler.take()
    }
}
