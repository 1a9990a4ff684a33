//! Guava's smooth limiters over one key's compact state, for
//! [`Keyed`](crate::keyed::Keyed): the two numbers a reservation changes
//! (`storedPermits`, `nextFreeTicketMicros`) in one 128-bit word, as the
//! in-memory limiters keep them, decided by the same [`State`] arithmetic
//! and the same try rule. The rate's parameters (interval, maximum, the
//! warm-up slope) are the map's.
//!
//! Times are ticks of the map's clock reading (whole microseconds at
//! Guava's resolution), counted from the clock's origin: where the
//! in-memory limiter counts whole microseconds from its own creation, a
//! key counts them from the clock's, so the microsecond grid's phase may
//! differ by under 1 µs from that of a limiter created at the key's first
//! request.

use std::time::Duration;

use super::{grant_at, pack, step, unpack, with_max_wait, Kind, Smooth, State};
use crate::clock::Clock;
use crate::grant::{AcquireError, Grant};
use crate::limiter::Recovery;
use crate::store::Rule;
use crate::sync::{AtomicU128, Ordering};

/// A smooth limiter per key: its parameters, and what a new key stores.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SmoothRule {
    params: State,
    /// A new limiter's stored permits: none (bursty), or all of them
    /// (warming up: it starts cold).
    fresh_stored: f64,
}

impl<C: Clock> Smooth<C> {
    /// The per-key rule of this limiter's rate.
    pub(super) fn keyed_rule(&self) -> SmoothRule {
        let params = self.snapshot();
        SmoothRule {
            params,
            fresh_stored: fresh_stored(&params),
        }
    }

    /// [`RateLimiter::recovery`](crate::RateLimiter::recovery) of the
    /// limiter: [`recovery_of`] its state now.
    pub(super) fn recovery(&self) -> Recovery {
        let st = self.snapshot();
        let (_, now) = self.read();
        recovery_of(st, now)
    }
}

/// What a new limiter of `st`'s rate stores: nothing (bursty), or all it
/// can (warming up: Guava starts it cold).
fn fresh_stored(st: &State) -> f64 {
    match st.kind {
        Kind::Bursty { .. } => 0.0,
        Kind::WarmingUp { .. } => st.max_permits,
    }
}

/// How the state `st` compares at `now` (ticks on its timeline) with a new
/// limiter's of its rate: in debt while a reservation is owed; else, once
/// resynced, fresh if it stores what a new one does, and credit otherwise
/// (a bursty limiter's stored permits go at once; a warming-up one stored
/// below its maximum is warmer, so faster, than a new cold one).
fn recovery_of(mut st: State, now: i64) -> Recovery {
    if st.next_free > now {
        let ticks = (st.next_free - now) as u64;
        return Recovery::Debt {
            nanos: st.res.nanos(ticks).max(1),
        };
    }
    st.resync(now);
    if st.stored_permits.to_bits() == fresh_stored(&st).to_bits() {
        Recovery::Fresh
    } else {
        Recovery::Credit
    }
}

impl SmoothRule {
    /// Ticks of the clock reading `nanos`, from the clock's origin.
    #[inline]
    fn ticks(&self, nanos: u64) -> i64 {
        i64::try_from(self.params.res.ticks(nanos)).unwrap_or(i64::MAX)
    }

    #[inline]
    fn state(&self, word: u128) -> State {
        unpack(&self.params, word)
    }
}

impl Rule for SmoothRule {
    /// `pack(stored_permits, next_free)`.
    type Cell = AtomicU128;

    fn fresh(&self, now: u64) -> AtomicU128 {
        AtomicU128::new(pack(self.fresh_stored, self.ticks(now)))
    }

    #[inline(always)]
    fn reserve(
        &self,
        cell: &AtomicU128,
        permits: u32,
        max_wait: Option<u64>,
        now_nanos: u64,
    ) -> Result<Grant, AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        let res = self.params.res;
        let now = self.ticks(now_nanos);
        let max = max_wait.map(Duration::from_nanos);
        let timeout = max.map(|d| res.duration_ticks(d));
        // Ordering: Acquire, so this decision follows the grant that wrote
        // the state (the limiter's chain of grants).
        let mut word = cell.load(Ordering::Acquire);
        loop {
            let (moment, next) = step(self.state(word), permits, timeout, now)
                .map_err(|e| max.map_or(e, |max| with_max_wait(e, max)))?;
            if next != word {
                // Ordering: AcqRel on success (publishes this grant, follows
                // the one it replaces); Acquire on failure, to decide again
                // on the winner's state.
                if let Err(actual) =
                    cell.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
                {
                    word = actual;
                    continue;
                }
            }
            return Ok(grant_at(res, now_nanos, now, moment, permits));
        }
    }

    fn recovery(&self, cell: &AtomicU128, now_nanos: u64) -> Recovery {
        // Ordering: Acquire; the latest grant's state (a snapshot).
        let st = self.state(cell.load(Ordering::Acquire));
        recovery_of(st, self.ticks(now_nanos))
    }
}
