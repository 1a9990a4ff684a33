//! The one copy of each bucket algorithm's arithmetic: a pure decision over
//! a compact state, with no clock reads and no I/O.
//!
//! * [`RefillParams::decide`]: the refill bucket over its time index `E`
//!   (the instant the bucket would be empty);
//! * [`CycleParams::decide`]: the cycle limiter over its `(cycle, permits)`
//!   word.
//!
//! The in-memory limiters ([`RefillLimiter`](super::RefillLimiter),
//! [`CycleLimiter`](super::CycleLimiter)) commit these decisions to one
//! state word and add cancels, hand-offs and limit changes around them;
//! [`Keyed`](crate::keyed::Keyed) commits them to one word per key through
//! [`RefillRule`] and [`CycleRule`]. A key's cycles are counted from the
//! clock's origin, not from its first request: its first cycle may be
//! shorter than a period (a limiter created at the key's first request
//! starts a whole one). Times given to a rule are the keyed limiter's clock
//! readings as `i64` (a reading past 2^63 ns, 292 years, is refused as the
//! limiters refuse a time past their horizon).

use crate::clock::elapsed_nanos;
use crate::grant::{AcquireError, Grant};
use crate::limiter::Recovery;
use crate::store::{would_wait, Rule};
use crate::sync::{AtomicU128, AtomicU64, Ordering};

/// A bucket limiter's state as of one reading of its state and its clock
/// ([`RefillLimiter::state`](super::RefillLimiter::state),
/// [`CycleLimiter::state`](super::CycleLimiter::state)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BucketState {
    /// Permits available now; negative while permits are reserved ahead.
    pub available_permits: i64,
    /// How long one permit would have to wait now, in nanoseconds (0 if
    /// one is available).
    pub nanos_to_wait: u64,
    /// The cycle limiter's current cycle since its creation; `None` for the
    /// refill bucket.
    pub cycle: Option<u64>,
}

/// Nanoseconds of a clock reading `now` since `origin`, clamped to
/// `0 ..= i64::MAX` (a reading before the origin counts as the origin;
/// after 292 years time stops).
#[inline]
pub(crate) fn elapsed(now: u64, origin: u64) -> i64 {
    elapsed_nanos(origin, now).min(i64::MAX as u64) as i64
}

/// The state word of a retired core: never a valid time index.
pub(crate) const REFILL_FROZEN: u64 = i64::MIN as u64;

/// The bucket's parameters: fixed for the life of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefillParams {
    /// Nanoseconds per permit, `>= 1`.
    pub(crate) npp: i64,
    /// Permits the bucket holds, `>= 1`.
    pub(crate) capacity: i64,
    /// `npp × capacity`, `<= i64::MAX`.
    pub(crate) full: i64,
}

/// What a request decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefillDecision {
    /// Granted: the new time index and the wait (0: go now).
    Grant { index: i64, wait: u64 },
    /// Refused: the wait would exceed the caller's maximum.
    Refuse { wait: u64 },
    /// The time index would pass `i64::MAX`.
    Exhausted,
    /// Never grantable.
    Invalid(AcquireError),
}

impl RefillParams {
    /// `max(E, now − full)`: the time index with credit beyond a full bucket
    /// dropped.
    #[inline]
    pub(crate) fn base(&self, index: i64, now: i64) -> i128 {
        i128::from(index).max(i128::from(now) - i128::from(self.full))
    }

    #[inline]
    pub(crate) fn decide(
        &self,
        index: i64,
        permits: u32,
        max_wait: Option<u64>,
        now: i64,
    ) -> RefillDecision {
        if permits == 0 {
            return RefillDecision::Invalid(AcquireError::ZeroPermits);
        }
        if i64::from(permits) > self.capacity {
            return RefillDecision::Invalid(AcquireError::InsufficientCapacity {
                requested: permits,
                max: u32::try_from(self.capacity).unwrap_or(u32::MAX),
            });
        }
        let next = self.base(index, now) + i128::from(permits) * i128::from(self.npp);
        let wait = next - i128::from(now);
        // Past the time horizon first: no timeout can cure that ("never"),
        // so it is not reported as a wait ("not now").
        let Ok(index) = i64::try_from(next) else {
            return RefillDecision::Exhausted;
        };
        if max_wait.is_some_and(|max| wait > i128::from(max)) {
            return RefillDecision::Refuse {
                wait: clamp_u64(wait),
            };
        }
        RefillDecision::Grant {
            index,
            wait: clamp_u64(wait),
        }
    }

    /// `min(C, trunc((now − E) / npp))`.
    #[inline]
    pub(crate) fn available(&self, index: i64, now: i64) -> i64 {
        let tokens = (i128::from(now) - i128::from(index)) / i128::from(self.npp);
        // Between −(2^64 / npp) and C: fits in i64 once capped at C (the
        // lower end is at least −2^63 because E ≤ i64::MAX and now ≥ 0).
        tokens.min(i128::from(self.capacity)) as i64
    }

    /// `max(0, max(E, now − full) + npp − now)`: the wait for one permit.
    #[inline]
    pub(crate) fn nanos_to_wait(&self, index: i64, now: i64) -> u64 {
        clamp_u64(self.base(index, now) + i128::from(self.npp) - i128::from(now))
    }

    /// The drained count and the new time index: stored permits and the
    /// partial one dropped, reservations kept.
    #[inline]
    pub(crate) fn drain(&self, index: i64, now: i64) -> (u64, i64) {
        (self.available(index, now).max(0) as u64, index.max(now))
    }
}

/// `v` clamped to `0 ..= u64::MAX`.
#[inline]
pub(crate) fn clamp_u64(v: i128) -> u64 {
    v.clamp(0, i128::from(u64::MAX)) as u64
}

/// The state word of a retired core: cycle `u64::MAX` is never reached.
pub(crate) const CYCLE_FROZEN: u128 = u128::MAX;

/// `(cycle, permits)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CycleState {
    pub(crate) cycle: u64,
    pub(crate) permits: i64,
}

impl CycleState {
    #[inline]
    pub(crate) fn pack(self) -> u128 {
        (u128::from(self.cycle) << 64) | u128::from(self.permits as u64)
    }

    #[inline]
    pub(crate) fn unpack(word: u128) -> CycleState {
        CycleState {
            cycle: (word >> 64) as u64,
            permits: word as u64 as i64,
        }
    }
}

/// The cycle parameters: fixed for the life of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CycleParams {
    /// Cycle length in nanoseconds, `1 ..= i64::MAX`.
    pub(crate) period: i64,
    /// Permits per cycle, `>= 1`.
    pub(crate) limit: i64,
}

/// What a request decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CycleDecision {
    /// Granted: the new state, and when the permits may go (nanoseconds
    /// since creation).
    Grant { state: CycleState, ready: i64 },
    /// Refused: the wait would exceed the caller's maximum.
    Refuse { wait: u64 },
    /// The wait or the count would leave 64 bits.
    Exhausted,
    /// Never grantable.
    Invalid(AcquireError),
}

impl CycleParams {
    /// The state refreshed to `now`, and the instant the decision is taken
    /// at: `now`, or the start of the state's cycle if the reading is older.
    #[inline]
    pub(crate) fn refresh(&self, s: CycleState, now: i64) -> (CycleState, i64) {
        let current = (now / self.period) as u64;
        if current > s.cycle {
            let minted = i128::from(current - s.cycle) * i128::from(self.limit);
            let permits = (i128::from(s.permits) + minted).min(i128::from(self.limit)) as i64;
            (
                CycleState {
                    cycle: current,
                    permits,
                },
                now,
            )
        } else {
            // s.cycle × period is a clock reading some caller made: ≤ i64::MAX.
            let start = (i128::from(s.cycle) * i128::from(self.period)) as i64;
            (s, now.max(start))
        }
    }

    /// The wait for `n` permits in refreshed state `s` at `now`.
    #[inline]
    pub(crate) fn wait(&self, s: CycleState, n: i128, now: i64) -> i128 {
        let permits = i128::from(s.permits);
        if permits >= n {
            return 0;
        }
        let period = i128::from(self.period);
        let limit = i128::from(self.limit);
        let to_next = (i128::from(s.cycle) + 1) * period - i128::from(now);
        let short = n - (permits + limit);
        let full_cycles = if short > 0 {
            (short + limit - 1) / limit
        } else {
            0
        };
        full_cycles * period + to_next
    }

    /// How state `s` compares at `now` with a new limiter's: fresh once
    /// the count is back to the limit (a new limiter's, in the same
    /// cycle); in debt until then (a cycle never holds more: no credit).
    pub(crate) fn recovery(&self, s: CycleState, now: i64) -> Recovery {
        let (s, at) = self.refresh(s, now);
        let (period, limit) = (i128::from(self.period), i128::from(self.limit));
        let short = limit - i128::from(s.permits);
        if short <= 0 {
            return Recovery::Fresh;
        }
        // Full again at the start of the cycle that mints the last of it.
        let cycles = (short + limit - 1) / limit;
        let full_at = (i128::from(s.cycle) + cycles) * period;
        Recovery::Debt {
            nanos: clamp_u64(full_at - i128::from(at)).max(1),
        }
    }

    #[inline]
    pub(crate) fn decide(
        &self,
        word: u128,
        permits: u32,
        max_wait: Option<u64>,
        now: i64,
    ) -> CycleDecision {
        if permits == 0 {
            return CycleDecision::Invalid(AcquireError::ZeroPermits);
        }
        let (s, at) = self.refresh(CycleState::unpack(word), now);
        let wait = self.wait(s, i128::from(permits), at);
        // Past the time horizon (or the count's range) first: no timeout
        // can cure that ("never"), so it is not reported as a wait.
        let (Ok(ready), Some(left)) = (
            i64::try_from(i128::from(at) + wait),
            s.permits.checked_sub(i64::from(permits)),
        ) else {
            return CycleDecision::Exhausted;
        };
        if max_wait.is_some_and(|max| wait > i128::from(max)) {
            return CycleDecision::Refuse {
                wait: clamp_u64(wait),
            };
        }
        CycleDecision::Grant {
            state: CycleState {
                cycle: s.cycle,
                permits: left,
            },
            ready,
        }
    }
}

/// A refill bucket per key: its parameters and the permits a new key's
/// bucket holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefillRule {
    params: RefillParams,
    initial: i64,
}

impl RefillRule {
    pub(crate) fn new(params: RefillParams, initial: i64) -> RefillRule {
        RefillRule { params, initial }
    }
}

/// A clock reading as the signed time the arithmetic takes.
#[inline]
fn signed(now: u64) -> i64 {
    i64::try_from(now).unwrap_or(i64::MAX)
}

impl Rule for RefillRule {
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
                RefillDecision::Grant { index, wait } => {
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
                RefillDecision::Refuse { wait } => {
                    return Err(would_wait(wait, max_wait.unwrap_or(u64::MAX)))
                }
                RefillDecision::Exhausted => return Err(AcquireError::ScheduleExhausted),
                RefillDecision::Invalid(e) => return Err(e),
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
pub(crate) struct CycleRule {
    params: CycleParams,
}

impl CycleRule {
    pub(crate) fn new(params: CycleParams) -> CycleRule {
        CycleRule { params }
    }
}

impl Rule for CycleRule {
    /// `(cycle, permits)` packed.
    type Cell = AtomicU128;

    fn fresh(&self, now: u64) -> AtomicU128 {
        let state = CycleState {
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
                CycleDecision::Grant { state, ready } => {
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
                CycleDecision::Refuse { wait } => {
                    return Err(would_wait(wait, max_wait.unwrap_or(u64::MAX)))
                }
                CycleDecision::Exhausted => return Err(AcquireError::ScheduleExhausted),
                CycleDecision::Invalid(e) => return Err(e),
            }
        }
    }

    fn recovery(&self, cell: &AtomicU128, now: u64) -> Recovery {
        // Ordering: Acquire; the latest grant's state (a snapshot).
        let state = CycleState::unpack(cell.load(Ordering::Acquire));
        self.params.recovery(state, signed(now))
    }

    fn available(&self, cell: &AtomicU128, now: u64) -> Option<u64> {
        // Ordering: Acquire, as in `recovery`.
        let word = cell.load(Ordering::Acquire);
        let (s, _) = self.params.refresh(CycleState::unpack(word), signed(now));
        Some(s.permits.max(0) as u64)
    }
}

#[cfg(all(test, not(loom)))]
mod refill_tests {
    use super::*;

    const R: RefillParams = RefillParams {
        npp: 100,
        capacity: 5,
        full: 500,
    };

    #[test]
    fn decide_is_the_strict_algorithm() {
        // Full bucket long ago: credit beyond 5 permits is lost.
        assert_eq!(
            R.decide(-500, 5, Some(0), 10_000),
            RefillDecision::Grant {
                index: 10_000,
                wait: 0
            }
        );
        // Partial: 4 stored, one more needs 100 ns.
        assert_eq!(
            R.decide(-400, 5, Some(99), 0),
            RefillDecision::Refuse { wait: 100 }
        );
        assert_eq!(
            R.decide(-400, 5, Some(100), 0),
            RefillDecision::Grant {
                index: 100,
                wait: 100
            }
        );
        assert_eq!(
            R.decide(0, 6, None, 0),
            RefillDecision::Invalid(AcquireError::InsufficientCapacity {
                requested: 6,
                max: 5
            })
        );
        assert_eq!(
            R.decide(0, 0, None, 0),
            RefillDecision::Invalid(AcquireError::ZeroPermits)
        );
        assert_eq!(
            R.decide(i64::MAX - 50, 1, None, 0),
            RefillDecision::Exhausted
        );
    }

    #[test]
    fn metrics_truncate_toward_zero() {
        assert_eq!(R.available(150, 0), -1); // -1.5 permits
        assert_eq!(R.available(50, 0), 0); // -0.5
        assert_eq!(R.available(-1_000_000, 0), 5); // capped
        assert_eq!(R.nanos_to_wait(-1_000_000, 0), 0);
        assert_eq!(R.nanos_to_wait(-50, 0), 50);
        assert_eq!(R.drain(-250, 0), (2, 0));
        assert_eq!(R.drain(300, 0), (0, 300));
    }
}

#[cfg(all(test, not(loom)))]
mod cycle_tests {
    use super::*;

    const P: CycleParams = CycleParams {
        period: 1_000,
        limit: 10,
    };

    fn st(cycle: u64, permits: i64) -> CycleState {
        CycleState { cycle, permits }
    }

    #[test]
    fn pack_round_trips_and_frozen_is_unreachable() {
        for s in [
            st(0, 0),
            st(5, -3),
            st(i64::MAX as u64, i64::MIN),
            st(1, i64::MAX),
        ] {
            assert_eq!(CycleState::unpack(s.pack()), s);
            assert_ne!(s.pack(), CYCLE_FROZEN);
        }
    }

    #[test]
    fn refresh_caps_at_the_limit_and_never_goes_back() {
        assert_eq!(P.refresh(st(0, 3), 5_500), (st(5, 10), 5_500));
        assert_eq!(P.refresh(st(0, -25), 2_000), (st(2, -5), 2_000));
        // A reading older than the state's cycle: taken at that cycle's start.
        assert_eq!(P.refresh(st(3, 1), 2_500), (st(3, 1), 3_000));
        // Saturation instead of wrap-around.
        let huge = CycleParams {
            period: 1,
            limit: 1 << 30,
        };
        assert_eq!(huge.refresh(st(0, 0), 1 << 34).0.permits, 1 << 30);
    }

    #[test]
    fn wait_is_resilience4j_arithmetic_without_wrapping() {
        assert_eq!(P.wait(st(0, 10), 10, 0), 0);
        assert_eq!(P.wait(st(0, 5), 12, 400), 600); // the next cycle covers it
        assert_eq!(P.wait(st(0, 10), 25, 0), 2_000); // two cycles
        let p = CycleParams {
            period: 1 << 62,
            limit: 1,
        };
        assert_eq!(p.wait(st(0, 1), 3, 0), 1 << 63);
        assert_eq!(
            p.decide(st(0, 1).pack(), 3, None, 0),
            CycleDecision::Exhausted
        );
        // Never, not "not now": a longer timeout cannot help (issue 16).
        assert_eq!(
            p.decide(st(0, 1).pack(), 3, Some(1_000), 0),
            CycleDecision::Exhausted
        );
    }
}
