//! How a [`TokenPool`] caller that finds too few tokens queues a claim and
//! waits for it.

//! [`TokenPool`]: the pools of [`Pools`] as a thread-safe rate limiter.

use std::task::Waker;
use std::time::Duration;

use super::claims::{wake_all, Wake};
use super::filling::Filling;
use super::limiter::TokenPool;
use super::shared::State;
use crate::clock::{elapsed_nanos, Clock};
use crate::limiter::{AcquireError, Grant, Readiness};
use crate::sync::{self, lock, Ordering};
use crate::wait::{self, saturating_nanos};

impl<C: Clock + 'static> TokenPool<C> {
    #[inline(never)]
    pub(super) fn reserve_slow(
        &self,
        span: u64,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        let sh = &*self.shared;
        self.locked(|st, wake| {
            let now = sh.clock.now_nanos();
            sh.see(now);
            // A caller the full pool cannot serve at once: the filler must
            // run (a refused try costs it a fill or two before it parks
            // again).
            sh.resume(st, now, wake);
            if !st.started {
                self.begin(st, now, false, wake);
            }
            // Fill from the clock, but when the caller will wait anyway, only
            // once a fill's worth of time has passed: callers that outrun the
            // rate find the pool empty on almost every op, and filling a few
            // ns of tokens each time would put every op through this lock.
            // A caller with a maximum wait fills whatever has passed, so that
            // its answer is exact.
            if st.mode == Filling::Inline
                && (max_wait.is_some() || elapsed_nanos(st.last_fill, now) >= sh.fill_granule(st))
            {
                sh.fill_from_clock(st, now, wake);
            }
            if st.queue.is_empty() {
                if let Some(taken) = sh.try_take(span) {
                    // Ordering: Relaxed; see `grant_now`.
                    let scheduled = taken.wrapping_add(sh.params.base.load(Ordering::Relaxed));
                    return Ok(Grant::new(scheduled.min(now), now, now, permits));
                }
            }
            self.queue_claim(st, wake, span, permits, max_wait, now)
        })
    }

    /// Queues a claim for `span` tokens behind the claims already queued,
    /// unless its wait exceeds `max_wait` or its tokens are time the clock
    /// cannot count: its grant, scheduled after the tokens owed to the
    /// claims ahead. O(1) amortised, under the pool's lock.
    fn queue_claim(
        &self,
        st: &mut State,
        wake: &mut Vec<Wake>,
        span: u64,
        permits: u32,
        max_wait: Option<Duration>,
        now: u64,
    ) -> Result<Grant, AcquireError> {
        let sh = &*self.shared;
        // The tokens owed once this claim is queued, exactly: `owed` is
        // the sum of the queued claims' `remaining`, which `distribute`
        // and `cancel` subtract exactly, so it must never saturate. A
        // total past `u64::MAX` tokens is more clock time than a `u64`
        // can count: the claim would never fill.
        let Some(owed) = st.owed.checked_add(span) else {
            return Err(AcquireError::ScheduleExhausted);
        };
        let active = sh.active();
        let wait = owed.saturating_sub(active);
        if st.last_fill.max(now).checked_add(wait).is_none() {
            // Its tokens are clock time counted from the latest fill (a
            // reading behind it is no time passing), time the clock
            // cannot count any more near `u64::MAX`: it would never
            // fill.
            return Err(AcquireError::ScheduleExhausted);
        }
        if let Some(max) = max_wait {
            if wait > saturating_nanos(max) {
                return Err(AcquireError::WouldWait {
                    wait: Duration::from_nanos(wait),
                    max_wait: max,
                });
            }
        }
        // Its tokens come after those still owed to the claims ahead.
        let taken = sh.taken.load(Ordering::Acquire);
        let scheduled = taken
            .wrapping_add(st.owed)
            .wrapping_add(sh.params.base.load(Ordering::Relaxed));
        let id = st.queue.push(span, (scheduled, now, permits));
        st.owed = owed;
        sh.serve(st, wake);
        let ready = now.saturating_add(st.owed);
        let grant = Grant::new(scheduled, ready, now, permits).with_claim(id);
        // `Grant::new` may raise `ready`, never `scheduled`: the identity
        // recorded is the grant's.
        debug_assert_eq!(grant.scheduled_nanos(), scheduled);
        Ok(grant)
    }

    /// [`RateLimiter::poll_grant`] for claim `id` of `grant`.
    pub(super) fn poll_claim(&self, grant: &Grant, id: u32, waker: &Waker) -> Readiness {
        let sh = &*self.shared;
        let own = (
            grant.scheduled_nanos(),
            grant.started_nanos(),
            grant.permits(),
        );
        let queued = |st: &State| st.position(id).filter(|&pos| st.queue[pos].grant == own);
        self.locked(|st, wake| {
            if queued(st).is_none() {
                // Completed (its id is gone, or another claim's now).
                return Readiness::Go;
            }
            let now = sh.clock.now_nanos();
            sh.see(now);
            if !st.started {
                self.begin(st, now, false, wake);
            }
            let refilling = st.mode == Filling::Inline && !st.filler_busy;
            if refilling {
                sh.fill_from_clock(st, now, wake);
            }
            let Some(pos) = queued(st) else {
                return Readiness::Go;
            };
            let claim = &mut st.queue[pos];
            if !matches!(&claim.waiter, Some(Wake::Task(w)) if w.will_wake(waker)) {
                claim.waiter = Some(Wake::Task(waker.clone()));
            }
            if refilling {
                let span = sh.refill_span(st, pos, now);
                Readiness::Pending(Some(now.saturating_add(span)))
            } else {
                Readiness::Pending(None)
            }
        })
    }

    #[inline(never)]
    pub(super) fn wait_for_claim(&self, grant: Grant, id: u32) -> Grant {
        match self.wait_claim(grant, id, None) {
            Ok(g) => g,
            // Without a deadline the wait only ends with the tokens.
            Err(_) => grant,
        }
    }

    /// Waits until claim `id` has its tokens, or until `deadline` (clock
    /// nanoseconds). On a deadline the claim is withdrawn and the tokens it
    /// still needed are returned as the error.
    pub(super) fn wait_claim(
        &self,
        grant: Grant,
        id: u32,
        deadline: Option<u64>,
    ) -> Result<Grant, u64> {
        let sh = &*self.shared;
        let mut wake = Vec::new();
        let mut st = lock(&sh.state);
        loop {
            let Some(pos) = st.position(id) else {
                drop(st);
                wake_all(&mut wake);
                let now = sh.clock.now_nanos();
                sh.see(now);
                let scheduled = grant.scheduled_nanos().min(now);
                return Ok(Grant::new(scheduled, now, now, grant.permits()));
            };
            st.queue[pos].held = true;
            let now = sh.clock.now_nanos();
            if !st.started {
                self.begin(&mut st, now, false, &mut wake);
                continue;
            }
            if let Some(d) = deadline {
                if now >= d {
                    let left = sh.cancel(&mut st, pos, &mut wake);
                    drop(st);
                    wake_all(&mut wake);
                    return Err(left);
                }
            }
            if st.mode == Filling::Inline && !st.filler_busy {
                // Refill for the queue: sleep until this claim's tokens are
                // due, then fill from the clock. Counted from the last fill,
                // each fill covers
                //
                // * at least the fill granule (500 µs on real clocks,
                //   0 on exact ones): at high rates one fill then serves a
                //   group of ops instead of one sleep per op;
                // * at most half the active pool, so that a filler whose
                //   claim is behind claims nobody blocks on (reservations,
                //   async waits) completes those as their tokens come, in
                //   groups no larger than half the pool, instead of all at
                //   the end of its own sleep. The loop naps again for the
                //   rest.
                //
                // The sleep is shortened by the clock's typical lateness (the
                // lead) so that it ends about on time.
                st.filler_busy = true;
                let span = sh.refill_span(&st, pos, now);
                let lead = sh.clock.sleep_overshoot_nanos();
                let mut nap = wait::refill_nap_nanos(span, lead);
                if let Some(d) = deadline {
                    nap = nap.min(d - now);
                }
                drop(st);
                wake_all(&mut wake);
                sh.clock.sleep_nanos(nap);
                st = lock(&sh.state);
                st.filler_busy = false;
                if st.started {
                    let now = sh.clock.now_nanos();
                    sh.fill_from_clock(&mut st, now, &mut wake);
                }
                if st.position(id).is_none() {
                    // Done: another waiter takes over the refilling.
                    sh.hand_over(&st, &mut wake);
                }
                continue;
            }
            st.queue[pos].waiter = Some(Wake::Thread(sync::current_thread()));
            drop(st);
            wake_all(&mut wake);
            match deadline {
                None => sync::park(),
                Some(d) => sync::park_timeout(Duration::from_nanos(d.saturating_sub(now))),
            }
            st = lock(&sh.state);
        }
    }
}
