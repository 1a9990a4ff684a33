//! Resilience4j's two limiters over one key's compact state, for
//! [`Keyed`](crate::keyed::Keyed):
//!
//! * [`Bucket`]: the time index `E` of
//!   [`RefillLimiter`](super::RefillLimiter) (the instant the bucket would
//!   be empty), one word per key, decided by the same [`Params`];
//! * [`Cycles`]: the `(cycle, permits)` word of
//!   [`CycleLimiter`](super::CycleLimiter), decided by the same cycle
//!   arithmetic. A key's cycles are counted from the clock's origin, not
//!   from its first request: its first cycle may be shorter than a period
//!   (a limiter created at the key's first request starts a whole one).
//!
//! Times are the keyed limiter's clock readings as `i64` (a reading past
//! 2^63 ns, 292 years, is refused as the limiters refuse a time past their
//! horizon).

use super::bucket::{Decision, Params};
use super::cycle;
use crate::grant::{AcquireError, Grant};
use crate::limiter::Recovery;
use crate::store::{would_wait, Rule};
use crate::sync::{AtomicU128, AtomicU64, Ordering};

/// A refill bucket per key: its parameters and the permits a new key's
/// bucket holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bucket {
    params: Params,
    initial: i64,
}

impl Bucket {
    pub(super) fn new(params: Params, initial: i64) -> Bucket {
        Bucket { params, initial }
    }
}

/// A clock reading as the signed time the arithmetic takes.
#[inline]
fn signed(now: u64) -> i64 {
    i64::try_from(now).unwrap_or(i64::MAX)
}

impl Rule for Bucket {
    /// `E`, the bits of an `i64`.
    type Cell = AtomicU64;

    fn fresh(&self, now: u64) -> AtomicU64 {
        // `initial` permits stored at `now`: E = now − initial × npp, which
        // fits (initial × npp ≤ full ≤ i64::MAX and now ≥ 0).
        AtomicU64::new((signed(now) - self.initial * self.params.npp) as u64)
    }

    #[inline(always)]
    fn reserve(
        &self,
        cell: &AtomicU64,
        permits: u32,
        max_wait: Option<u64>,
        now: u64,
    ) -> Result<Grant, AcquireError> {
        let rel = signed(now);
        // Ordering: Acquire, so this decision follows the grant that wrote
        // the index (the limiter's chain of grants).
        let mut cur = cell.load(Ordering::Acquire);
        loop {
            match self.params.decide(cur as i64, permits, max_wait, rel) {
                Decision::Grant { index, wait } => {
                    // Ordering: AcqRel on success (publishes this grant,
                    // follows the one it replaces); Acquire on failure, to
                    // decide again on the winner's index.
                    match cell.compare_exchange_weak(
                        cur,
                        index as u64,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            let ready = now.saturating_add(wait);
                            return Ok(Grant::new(ready, ready, now, permits));
                        }
                        Err(actual) => cur = actual,
                    }
                }
                Decision::Refuse { wait } => {
                    return Err(would_wait(wait, max_wait.unwrap_or(u64::MAX)))
                }
                Decision::Exhausted => return Err(AcquireError::ScheduleExhausted),
                Decision::Invalid(e) => return Err(e.into()),
            }
        }
    }

    fn recovery(&self, cell: &AtomicU64, now: u64) -> Recovery {
        let now = signed(now);
        // Ordering: Acquire; the latest grant's index (a snapshot).
        let index = cell.load(Ordering::Acquire) as i64;
        let base = self.params.base(index, now);
        let fresh = i128::from(now) - i128::from(self.initial) * i128::from(self.params.npp);
        match base.cmp(&fresh) {
            std::cmp::Ordering::Equal => Recovery::Fresh,
            std::cmp::Ordering::Less => Recovery::Credit,
            std::cmp::Ordering::Greater => Recovery::Debt {
                nanos: u64::try_from(base - fresh).unwrap_or(u64::MAX).max(1),
            },
        }
    }

    fn available(&self, cell: &AtomicU64, now: u64) -> Option<u64> {
        // Ordering: Acquire, as in `recovery`.
        let index = cell.load(Ordering::Acquire) as i64;
        Some(self.params.available(index, signed(now)).max(0) as u64)
    }
}

/// A cycle limiter per key: its period and limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cycles {
    params: cycle::Params,
}

impl Cycles {
    pub(super) fn new(params: cycle::Params) -> Cycles {
        Cycles { params }
    }
}

impl Rule for Cycles {
    /// `(cycle, permits)` packed.
    type Cell = AtomicU128;

    fn fresh(&self, now: u64) -> AtomicU128 {
        let state = cycle::State {
            cycle: (signed(now) / self.params.period) as u64,
            permits: self.params.limit,
        };
        AtomicU128::new(state.pack())
    }

    #[inline(always)]
    fn reserve(
        &self,
        cell: &AtomicU128,
        permits: u32,
        max_wait: Option<u64>,
        now: u64,
    ) -> Result<Grant, AcquireError> {
        let rel = signed(now);
        // Ordering: Acquire, so this decision follows the grant that wrote
        // the state (the limiter's chain of grants).
        let mut word = cell.load(Ordering::Acquire);
        loop {
            match self.params.decide(word, permits, max_wait, rel) {
                cycle::Decision::Grant { state, ready } => {
                    // Ordering: AcqRel on success (publishes this grant,
                    // follows the one it replaces); Acquire on failure, to
                    // decide again on the winner's state.
                    match cell.compare_exchange_weak(
                        word,
                        state.pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            let ready = (ready.max(0) as u64).max(now);
                            return Ok(Grant::new(ready, ready, now, permits));
                        }
                        Err(actual) => word = actual,
                    }
                }
                cycle::Decision::Refuse { wait } => {
                    return Err(would_wait(wait, max_wait.unwrap_or(u64::MAX)))
                }
                cycle::Decision::Exhausted => return Err(AcquireError::ScheduleExhausted),
                cycle::Decision::Invalid(e) => return Err(e.into()),
            }
        }
    }

    fn recovery(&self, cell: &AtomicU128, now: u64) -> Recovery {
        // Ordering: Acquire; the latest grant's state (a snapshot).
        let state = cycle::State::unpack(cell.load(Ordering::Acquire));
        self.params.recovery(state, signed(now))
    }

    fn available(&self, cell: &AtomicU128, now: u64) -> Option<u64> {
        // Ordering: Acquire, as in `recovery`.
        let word = cell.load(Ordering::Acquire);
        let (s, _) = self.params.refresh(cycle::State::unpack(word), signed(now));
        Some(s.permits.max(0) as u64)
    }
}
