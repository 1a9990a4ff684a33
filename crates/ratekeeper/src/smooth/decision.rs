//! Guava's step over a compact state: the only copy of the smooth
//! limiters' arithmetic.
//!
//! A [`State`] is the rate's parameters (interval, maximum, the warm-up
//! trapezoid) plus the two numbers a reservation changes, `stored_permits`
//! and `next_free`, which [`pack`] puts in one 128-bit word. [`step`] is
//! Guava's `tryAcquire`/`reserve` on that word at a clock reading, and
//! [`decide_on`] commits it to an atomic word by compare-exchange. Both the
//! in-memory limiters ([`Smooth`](super::limiter::Smooth)) and the keyed
//! rule ([`SmoothRule`](super::rule::SmoothRule)) decide through it; they
//! differ only in where the word lives and how a clock reading becomes
//! ticks. Times are ticks of the state's [`Resolution`]; every function
//! here is O(1), with no clock read and no allocation.

use super::resolution::Resolution;
use crate::grant::{AcquireError, Grant};
use crate::limiter::Recovery;
use crate::sync::{AtomicU128, Ordering};
use std::time::Duration;

/// Java's `Math.min` for doubles: NaN if either is NaN.
fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// Java's `(long)` cast of a double (Rust's `as` does the same: truncation,
/// NaN to 0, saturation).
pub(super) fn long(x: f64) -> i64 {
    x as i64
}

/// A refusal reporting the caller's own maximum wait.
pub(super) fn with_max_wait(e: AcquireError, max_wait: Duration) -> AcquireError {
    match e {
        AcquireError::WouldWait { wait, .. } => AcquireError::WouldWait { wait, max_wait },
        e => e,
    }
}

/// The refusal of a try whose wait (`next_free` − `now`, in ticks of `res`)
/// exceeds `timeout`. The caller's own `max_wait` replaces the one given
/// here, which is the timeout in ticks.
#[cold]
fn would_wait(res: Resolution, next_free: i64, now: i64, timeout: i64) -> AcquireError {
    let wait = next_free.saturating_sub(now).max(0) as u64;
    AcquireError::WouldWait {
        wait: res.duration(wait),
        max_wait: res.duration(timeout.max(0) as u64),
    }
}

/// Which of Guava's two limiters, with its own parameters.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Bursty {
        max_burst_seconds: f64,
    },
    WarmingUp {
        /// The warm-up period in ticks.
        warmup: i64,
        cold_factor: f64,
        threshold: f64,
        slope: f64,
    },
}

/// Guava's `SmoothRateLimiter` state, with times in ticks of `res`
/// (Guava's are microseconds).
#[derive(Debug, Clone, Copy)]
pub(super) struct State {
    pub(super) stored_permits: f64,
    pub(super) max_permits: f64,
    /// Ticks per permit.
    pub(super) stable_interval: f64,
    /// Ticks on the owner's timeline; never negative.
    pub(super) next_free: i64,
    pub(super) kind: Kind,
    pub(super) res: Resolution,
}

impl State {
    /// A state of `kind` at `rate`, at time 0 (Guava's constructor and
    /// first `setRate`).
    pub(super) fn new(kind: Kind, res: Resolution, rate: f64) -> State {
        let mut st = State {
            stored_permits: 0.0,
            max_permits: 0.0,
            stable_interval: 0.0,
            next_free: 0,
            kind,
            res,
        };
        st.set_rate(rate, 0);
        st
    }

    #[inline(always)]
    fn cool_down_interval(&self) -> f64 {
        match self.kind {
            Kind::Bursty { .. } => self.stable_interval,
            // A zero warm-up period is no warm-up (Guava: 0/0 = NaN).
            Kind::WarmingUp { warmup: 0, .. } => self.stable_interval,
            Kind::WarmingUp { warmup, .. } => warmup as f64 / self.max_permits,
        }
    }

    /// Guava's `resync`: idle time up to `now` becomes stored permits.
    #[inline(always)]
    pub(super) fn resync(&mut self, now: i64) {
        if now > self.next_free {
            // Java's long subtraction; next_free is never negative (costs
            // are summed saturating), so it cannot wrap.
            let new_permits = now.wrapping_sub(self.next_free) as f64 / self.cool_down_interval();
            self.stored_permits = java_min(self.max_permits, self.stored_permits + new_permits);
            self.next_free = now;
        }
    }

    /// Guava's `setRate` at `now`: time before now counts at the old rate,
    /// and stored permits keep their fraction of the maximum.
    pub(super) fn set_rate(&mut self, rate: f64, now: i64) {
        self.resync(now);
        let stable = self.res.per_second() / rate;
        self.stable_interval = stable;
        let old = self.max_permits;
        match &mut self.kind {
            Kind::Bursty { max_burst_seconds } => {
                // No burst stores nothing, even at an infinite rate (0 × ∞
                // would be NaN, and a NaN store never throttles again).
                self.max_permits = if *max_burst_seconds == 0.0 {
                    0.0
                } else {
                    *max_burst_seconds * rate
                };
                self.stored_permits = if old == f64::INFINITY {
                    self.max_permits
                } else if old == 0.0 {
                    0.0
                } else {
                    self.stored_permits * self.max_permits / old
                };
            }
            Kind::WarmingUp {
                warmup,
                cold_factor,
                threshold,
                slope,
            } => {
                let w = *warmup as f64;
                let cold = stable * *cold_factor;
                if *warmup == 0 {
                    // No warm-up: nothing stored, whatever the rate (Guava's
                    // formulas give 0/0 = NaN at an infinite rate).
                    *threshold = 0.0;
                    self.max_permits = 0.0;
                    *slope = 0.0;
                } else {
                    *threshold = 0.5 * w / stable;
                    self.max_permits = *threshold + 2.0 * w / (stable + cold);
                    *slope = (cold - stable) / (self.max_permits - *threshold);
                }
                self.stored_permits = if old == f64::INFINITY {
                    0.0
                } else if old == 0.0 {
                    self.max_permits
                } else {
                    self.stored_permits * self.max_permits / old
                };
            }
        }
    }

    /// Guava's `storedPermitsToWaitTime`: the area under the cost line.
    #[inline(always)]
    fn stored_permits_to_wait_time(&self, stored: f64, mut to_take: f64) -> i64 {
        match self.kind {
            Kind::Bursty { .. } => 0,
            Kind::WarmingUp {
                threshold, slope, ..
            } => {
                let s = self.stable_interval;
                let f = |p: f64| s + p * slope;
                let above = stored - threshold;
                let mut ticks = 0i64;
                if above > 0.0 {
                    let t = java_min(above, to_take);
                    ticks = long(t * (f(above) + f(above - t)) / 2.0);
                    to_take -= t;
                }
                // Guava's long sum wraps; saturating, a huge cost stays huge.
                ticks.saturating_add(long(s * to_take))
            }
        }
    }

    /// Guava's `reserveEarliestAvailable`: the moment this request may go.
    #[inline(always)]
    pub(super) fn reserve(&mut self, permits: u32, now: i64) -> i64 {
        self.resync(now);
        let moment = self.next_free;
        let n = f64::from(permits);
        let spend = java_min(n, self.stored_permits);
        let fresh = n - spend;
        // Guava sums the two costs in a `long` that wraps; saturating, a
        // request costing more than 2^63 ticks takes the rest of the schedule.
        let cost = self
            .stored_permits_to_wait_time(self.stored_permits, spend)
            .saturating_add(long(fresh * self.stable_interval));
        self.next_free = self.next_free.saturating_add(cost);
        self.stored_permits -= spend;
        moment
    }

    /// What a new limiter of this rate stores: nothing (bursty), or all it
    /// can (warming up: Guava starts it cold).
    pub(super) fn fresh_stored(&self) -> f64 {
        match self.kind {
            Kind::Bursty { .. } => 0.0,
            Kind::WarmingUp { .. } => self.max_permits,
        }
    }

    /// How this state compares at `now` with a new limiter's of its rate:
    /// in debt while a reservation is owed; else, once resynced, fresh if
    /// it stores what a new one does, and credit otherwise.
    pub(super) fn recovery(mut self, now: i64) -> Recovery {
        if self.next_free > now {
            let ticks = (self.next_free - now) as u64;
            return Recovery::Debt {
                nanos: self.res.nanos(ticks).max(1),
            };
        }
        self.resync(now);
        if self.stored_permits.to_bits() == self.fresh_stored().to_bits() {
            Recovery::Fresh
        } else {
            Recovery::Credit
        }
    }
}

/// Guava's step on the state `st` at `now` (ticks): with a `timeout`,
/// `tryAcquire`'s canAcquire first (a refusal changes nothing, and skips
/// the resync); then the reservation. The moment the request may go and
/// the state word after it.
#[inline(always)]
pub(super) fn step(
    mut st: State,
    permits: u32,
    timeout: Option<i64>,
    now: i64,
) -> Result<(i64, u128), AcquireError> {
    if let Some(timeout) = timeout {
        if st.next_free.saturating_sub(timeout) > now {
            return Err(would_wait(st.res, st.next_free, now, timeout));
        }
    }
    let moment = st.reserve(permits, now);
    Ok((moment, pack(st.stored_permits, st.next_free)))
}

/// The grant of a request due at `moment`, decided at `now` (ticks of
/// `res`; the clock reading `now_nanos`): after the resync `moment >= now`,
/// so scheduled and ready alike, `moment - now` ticks after the reading.
#[inline(always)]
pub(super) fn grant_at(
    res: Resolution,
    now_nanos: u64,
    now: i64,
    moment: i64,
    permits: u32,
) -> Grant {
    let wait = moment.saturating_sub(now).max(0) as u64;
    let ready = now_nanos.saturating_add(res.nanos(wait));
    Grant::new(ready, ready, now_nanos, permits)
}

/// `params` with the two numbers a reservation changes read from `word`.
#[inline(always)]
pub(super) fn unpack(params: &State, word: u128) -> State {
    State {
        stored_permits: f64::from_bits((word >> 64) as u64),
        next_free: word as u64 as i64,
        ..*params
    }
}

/// Packs the two numbers a reservation changes (`stored_permits`,
/// `next_free`) into one 128-bit value.
#[inline(always)]
pub(super) fn pack(stored_permits: f64, next_free: i64) -> u128 {
    (u128::from(stored_permits.to_bits()) << 64) | u128::from(next_free as u64)
}

/// Decides `permits` on the state in `cell` (with `params`' rate), starting
/// from its value `word`, and commits the step by compare-exchange: the
/// grant and the word it was decided from. `read` gives the clock reading
/// (nanoseconds, ticks) and is called after each load of the word, so no
/// decision uses a reading older than the state it builds on. A step that
/// leaves the word as it was writes nothing. `None` as soon as `live` says
/// the word is retired. Lock-free; one compare-exchange per attempt.
#[inline(always)]
pub(super) fn decide_on(
    cell: &AtomicU128,
    params: &State,
    mut word: u128,
    permits: u32,
    timeout: Option<i64>,
    mut read: impl FnMut() -> (u64, i64),
    live: impl Fn(u128) -> bool,
) -> Option<Result<(Grant, u128), AcquireError>> {
    while live(word) {
        let (now_nanos, now) = read();
        let (moment, next) = match step(unpack(params, word), permits, timeout, now) {
            Ok(stepped) => stepped,
            Err(refused) => return Some(Err(refused)),
        };
        if next != word {
            // Ordering: AcqRel on success (publishes this state and, through
            // it, this clock reading; follows the commit it replaces);
            // Acquire on failure (the state we retry from, as for a load).
            if let Err(actual) =
                cell.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                word = actual;
                continue;
            }
        }
        let grant = grant_at(params.res, now_nanos, now, moment, permits);
        return Some(Ok((grant, word)));
    }
    None
}
