//! [`SmoothRule`]: the store adapter of Guava's decision, one word per key for
//! [`Keyed`](crate::keyed::Keyed).
//!
//! A key's cell is the 128-bit word the in-memory limiters keep
//! (`stored_permits`, `next_free`), decided by the same
//! [`decide_on`](super::decision::decide_on); the rate's parameters are the
//! map's. A key counts ticks from the clock's origin, where an in-memory
//! limiter counts them from its creation, so the microsecond grid's phase
//! may differ by under 1 µs from that of a limiter created at the key's
//! first request.

use std::time::Duration;

use super::decision::{decide_on, pack, unpack, with_max_wait, State};
use crate::grant::{AcquireError, Grant};
use crate::limiter::Recovery;
use crate::store::Rule;
use crate::sync::{AtomicU128, Ordering};

/// A smooth limiter per key: its parameters, and what a new key stores.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SmoothRule {
    params: State,
}

impl SmoothRule {
    /// The rule of `params`' rate (their stored permits and time unused).
    pub(super) fn new(params: State) -> SmoothRule {
        SmoothRule { params }
    }

    /// Ticks of the clock reading `nanos`, from the clock's origin.
    #[inline]
    fn ticks(&self, nanos: u64) -> i64 {
        i64::try_from(self.params.res.ticks(nanos)).unwrap_or(i64::MAX)
    }
}

impl Rule for SmoothRule {
    /// `pack(stored_permits, next_free)`.
    type Cell = AtomicU128;

    fn fresh(&self, now: u64) -> AtomicU128 {
        AtomicU128::new(pack(self.params.fresh_stored(), self.ticks(now)))
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
        let now = self.ticks(now_nanos);
        let max = max_wait.map(Duration::from_nanos);
        let timeout = max.map(|d| self.params.res.duration_ticks(d));
        // Ordering: Acquire, so this decision follows the grant that wrote
        // the state (the limiter's chain of grants).
        let word = cell.load(Ordering::Acquire);
        // A key's word is never retired: every word is live.
        let decided = decide_on(
            cell,
            &self.params,
            word,
            permits,
            timeout,
            || (now_nanos, now),
            |_| true,
        );
        match decided {
            Some(Ok((grant, _))) => Ok(grant),
            Some(Err(e)) => Err(max.map_or(e, |max| with_max_wait(e, max))),
            None => unreachable!("every word is live"),
        }
    }

    fn recovery(&self, cell: &AtomicU128, now_nanos: u64) -> Recovery {
        // Ordering: Acquire; the latest grant's state (a snapshot).
        let st = unpack(&self.params, cell.load(Ordering::Acquire));
        st.recovery(self.ticks(now_nanos))
    }
}
