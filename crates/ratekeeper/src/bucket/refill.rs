//! [`RefillLimiter`]: a strict token bucket kept as one time index.
//!
//! # Implementation details
//!
//! The state word is `E`, the **time index** (the instant the bucket would be
//! empty), in nanoseconds since the limiter's creation, stored as the bits
//! of an `i64` in an `AtomicU64`. With `npp` nanoseconds per permit and
//! capacity `C` (`full = C × npp ≤ i64::MAX`, checked by the config):
//!
//! * tokens(now) = `min(C, (now − E) / npp)`, negative while reservations are
//!   outstanding;
//! * a grant of `n` moves `E` to `max(E, now − full) + n × npp` and waits
//!   `E' − now` if positive; a refusal writes nothing;
//! * a drain moves `E` to `max(E, now)` (kept reservations, in the
//!   limiter's handoff, stay: they are charged to `E` already);
//! * a cancel moves `E` back (on a new core) or, failing that, keeps the
//!   grant in the handoff (`crate::internal::handoff`) without touching `E`;
//! * `E ≥ −full > i64::MIN` always (it starts at `−initial × npp` and only
//!   grows, or is re-based to at least `now − full'`), so `i64::MIN` is free
//!   for the `FROZEN` sentinel of a retired core; a grant whose `E'` would
//!   pass `i64::MAX` (292 years after creation) is refused.
//!
//! Every write is a compare-exchange from the value the decision was
//! computed on, so grants are linearizable: each one is charged to the time
//! index exactly once, in the compare-exchange order, and `E` never moves
//! back. All arithmetic is in `i128`.

use core::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::config::{full_capacity_nanos, nanos_per_permit, PermitConfigError, RefillConfig};
use super::decision::{
    clamp_u64, elapsed, BucketState, RefillDecision as Decision, RefillParams as Params,
    RefillRule, REFILL_FROZEN as FROZEN,
};
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::internal::cancel::{CancelWindow, Epoch};
use crate::internal::handoff::Handoff;
use crate::limiter::{AcquireError, Grant, RateLimiter, Recovery, WaitStats};
use crate::rate::per_second_of_nanos;
use crate::sync::{lock, AtomicU64, Mutex, Ordering, Swap};
use crate::wait::{saturating_nanos, WaitPolicy};

/// A limiter's parameters and its state word, replaced together on a limit
/// change or a cancel (see the implementation details above).
struct Core {
    /// `E` as `i64` bits, or [`FROZEN`] once this core is retired.
    index: CachePadded<AtomicU64>,
    params: Params,
    /// The limit for period these parameters were derived from.
    limit: i64,
    /// Moved on with every new core; grants committed to this core carry
    /// it as their tag (see [`Epoch`]).
    epoch: Epoch,
}

/// What cancels keep, under the limiter's `change` lock.
#[derive(Debug)]
struct Cancels {
    /// Which grants made before the latest cancel may still be given back.
    window: CancelWindow<i64>,
    /// The highest time index a cancel moved back from since the latest
    /// limit change (`i64::MIN`: none): every grant made since ends at or
    /// before the larger of this and the current index.
    high: i64,
}

impl Cancels {
    const fn new() -> Cancels {
        Cancels {
            window: CancelWindow::new(0),
            high: i64::MIN,
        }
    }

    /// A limit change: no earlier grant may be given back.
    fn reset(&mut self) {
        self.window.reset();
        self.high = i64::MIN;
    }
}

/// What an update closure asks of the compare-exchange loop.
enum Step<R> {
    /// Return `r` without writing.
    Keep(R),
    /// Write this time index, then return `r`.
    Write(i64, R),
}

/// A strict token bucket with nanosecond-gradual refill, a burst capacity
/// and initial permits; see the [module docs](super).
///
/// Built from a [`RefillConfig`]; shared by reference or in an `Arc`; used
/// through [`RateLimiter`]. Every request first takes a grant kept from a
/// [cancel](super#cancelling-a-reservation), if one of its size is ready
/// within its maximum wait.
///
/// # Examples
///
/// A full bucket of 5 grants 5 at one instant, later permits at the refill
/// rate (100 ns each here).
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::bucket::{RefillConfig, RefillLimiter};
/// use ratekeeper::{ManualClock, RateLimiter};
///
/// let clock = ManualClock::new(0);
/// let config = RefillConfig::builder()
///     .limit_for_period(5)
///     .limit_refresh_period(Duration::from_nanos(500))
///     .build()?;
/// let limiter = RefillLimiter::new_with_clock(config, clock.clone());
///
/// clock.set_nanos(10_000); // idle: the bucket is full (5, not more)
/// assert!(limiter.try_acquire_n(4).is_ok());
/// assert!(limiter.try_acquire_n(5).is_err()); // refill-rate-limiter grants this too
/// assert!(limiter.try_acquire_n(1).is_ok());
/// assert!(limiter.try_acquire().is_err()); // next permit in 100 ns
/// clock.advance_nanos(100);
/// assert!(limiter.try_acquire().is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RefillLimiter<C = DefaultClock> {
    core: Swap<Core>,
    /// Serializes limit changes and cancels; held from retiring a core until
    /// its successor is published (a caller that found its core retired
    /// waits on it). Guards which earlier grants may still be given back.
    change: Mutex<Cancels>,
    /// Cancelled grants that could not be given back, for the next callers.
    handoff: Handoff,
    policy: WaitPolicy,
    /// The configured timeout in nanoseconds (the maximum wait is each call's).
    timeout: i64,
    clock: C,
    /// The clock reading at creation: time index 0.
    origin: u64,
    /// The configured refresh period in nanoseconds (limit changes divide it).
    period: i64,
    initial: i64,
}

impl RefillLimiter {
    /// A limiter on the real clock.
    pub fn new(config: RefillConfig) -> RefillLimiter {
        RefillLimiter::new_with_clock(config, DefaultClock::new())
    }
}

impl<C: Clock> RefillLimiter<C> {
    /// A limiter on `clock`, holding `config.initial_permits()` now.
    pub fn new_with_clock(config: RefillConfig, clock: C) -> RefillLimiter<C> {
        let npp = config.nanos_per_permit() as i64;
        let capacity = config.capacity();
        let origin = clock.now_nanos();
        let core = Core {
            // E = creation − initial × npp: `initial` permits stored. At
            // least −full (initial ≤ capacity), never FROZEN.
            index: CachePadded::new(AtomicU64::new((-config.initial_permits() * npp) as u64)),
            params: Params {
                npp,
                capacity,
                full: config.nanos_per_full_capacity() as i64,
            },
            limit: config.limit_for_period(),
            epoch: Epoch::FIRST,
        };
        RefillLimiter {
            core: Swap::new(core),
            change: Mutex::new(Cancels::new()),
            handoff: Handoff::new(Epoch::FIRST.tag()),
            policy: WaitPolicy::default(),
            timeout: config.timeout().as_nanos() as i64,
            clock,
            origin,
            period: config.limit_refresh_period().as_nanos() as i64,
            initial: config.initial_permits(),
        }
    }

    /// This limiter with blocking waits done under `policy` (default: the
    /// clock's coalescing window).
    pub fn with_wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The current configuration (limit and capacity as last changed).
    pub fn config(&self) -> RefillConfig {
        let core = self.core.load();
        RefillConfig::from_parts(
            core.limit,
            self.period,
            self.timeout,
            core.params.capacity,
            self.initial,
        )
    }

    /// The rate the bucket refills at, in permits per second, at the current
    /// limit: `1e9 / nanos_per_permit`, with `nanos_per_permit =
    /// limit_refresh_period / limit_for_period` truncated to whole
    /// nanoseconds (as refill-rate-limiter does): 3 per second refills at
    /// 3.000000003. Never below the configured rate, above it by less than
    /// one part in `nanos_per_permit`.
    pub fn effective_rate(&self) -> f64 {
        // `npp >= 1` (validated).
        per_second_of_nanos(self.core.load().params.npp as u64)
    }

    /// The limiter's clock.
    pub fn clock_ref(&self) -> &C {
        &self.clock
    }

    /// The per-key rule of this limiter's current configuration.
    pub(crate) fn keyed_rule(&self) -> RefillRule {
        RefillRule::new(self.core.load().params, self.initial)
    }

    /// Reads the clock: absolute nanoseconds and nanoseconds since creation.
    #[inline]
    fn now(&self) -> (u64, i64) {
        let now = self.clock.now_nanos();
        (now, elapsed(now, self.origin))
    }

    /// Blocks until the limit change that retired a core has published its
    /// successor (the changer holds `change` throughout).
    #[cold]
    fn await_change(&self) {
        drop(lock(&self.change));
    }

    /// The one compare-exchange loop: `decide` maps (parameters, time index)
    /// to a step, retaken on the value that won a race; with the core's tag.
    #[inline]
    fn update<R>(&self, mut decide: impl FnMut(&Params, i64) -> Step<R>) -> (R, u32) {
        loop {
            let core = self.core.load();
            // Ordering: Acquire, so this decision happens after the grant
            // that wrote the value (the chain of grants the public
            // `# Memory ordering` promises).
            let mut cur = core.index.load(Ordering::Acquire);
            while cur != FROZEN {
                match decide(&core.params, cur as i64) {
                    Step::Keep(r) => return (r, core.epoch.tag()),
                    Step::Write(next, r) => {
                        // Ordering: AcqRel on success: Release publishes this
                        // grant to later callers, Acquire orders it after the
                        // grant it replaces. Acquire on failure: the decision
                        // is retaken on the winner's value.
                        match core.index.compare_exchange_weak(
                            cur,
                            next as u64,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => return (r, core.epoch.tag()),
                            Err(actual) => cur = actual,
                        }
                    }
                }
            }
            // Retired by a limit change: never written again. Wait for the
            // new core, then decide again on it.
            drop(core);
            self.await_change();
        }
    }

    /// Decides a request for `permits` that may wait up to `max_wait` ns
    /// (`None`: any wait), committing a grant; with the grant's tag.
    #[inline]
    fn decide(&self, permits: u32, max_wait: Option<u64>, now: i64) -> (Decision, u32) {
        self.update(|p, index| match p.decide(index, permits, max_wait, now) {
            d @ Decision::Grant { index, .. } => Step::Write(index, d),
            d => Step::Keep(d),
        })
    }

    /// A consistent snapshot: parameters and time index of the current core.
    fn snapshot(&self) -> (Params, i64) {
        self.update(|p, index| Step::Keep((*p, index))).0
    }

    /// [`RateLimiter::cancel`]: back to the bucket as far as it can go,
    /// else to the handoff.
    fn cancel_grant(&self, grant: &Grant) -> bool {
        let mut cancels = lock(&self.change);
        let now = self.clock.now_nanos();
        // Under `change`, nobody else replaces the core.
        let core = self.core.load();
        let high = cancels.high;
        // A grant that could go at once is due: nothing to hand on. One
        // that waited is kept if it was made since the latest limit change,
        // and ends at a time index the bucket has reached since.
        let stashable = |reset_tag| {
            // Ordering: Acquire, as in `update`; a stale (lower) value
            // only refuses.
            let index = core.index.load(Ordering::Acquire) as i64;
            let end = grant
                .ready_nanos()
                .checked_sub(self.origin)
                .and_then(|e| i64::try_from(e).ok());
            grant.ready_nanos() > grant.started_nanos()
                && end.is_some_and(|end| end <= index.max(high))
                && grant
                    .claim()
                    .is_some_and(|t| Handoff::issued_since(t, reset_tag, |t| core.epoch.age(t)))
        };
        self.handoff.cancel(grant, now, stashable, || {
            self.give_back(&core, grant, &mut cancels)
        })
    }

    /// Moves the time index of `core` (the current one) back over `grant`
    /// as far as the reservations after it allow, under `change`.
    fn give_back(&self, core: &Core, grant: &Grant, cancels: &mut Cancels) -> bool {
        let Some(tag) = grant.claim() else {
            return false;
        };
        let permits = grant.permits();
        // Ready when decided: its index is not in the grant (and it is due).
        if grant.ready_nanos() <= grant.started_nanos() || permits == 0 {
            return false;
        }
        // A grant that waited was ready at the time index it left.
        let Some(end) = grant
            .ready_nanos()
            .checked_sub(self.origin)
            .and_then(|e| i64::try_from(e).ok())
        else {
            return false;
        };
        let p = core.params;
        let age = core.epoch.age(tag);
        if i64::from(permits) > p.capacity || !cancels.window.allows(age, end) {
            return false;
        }
        // Where the index stood before the grant (`max(E, now − full)` at
        // its decision), and the index it must never go below: its end
        // minus its own charge.
        let start = end - i64::from(permits) * p.npp;
        // Ordering: Acquire, as in `update`.
        let mut cur = core.index.load(Ordering::Acquire);
        loop {
            // Under `change`, nobody else retires this core.
            if cur == FROZEN {
                return false;
            }
            let index = cur as i64;
            if index < end || (age > 0 && index != end) {
                return false;
            }
            // `index − end` was charged after this grant, to reservations
            // that waited (they came before its ready time) and keep their
            // times. Keep what a bucket that never saw this grant would
            // hold after granting them at those times: the latest of them,
            // ready at `index`, found at most a full bucket, so the index
            // must stay at least `index − full` plus what they were charged.
            let later = i128::from(index - end);
            let next = i128::from(start).max(i128::from(index) - i128::from(p.full)) + later;
            if next >= i128::from(index) {
                return false; // the later reservations leave nothing to give back
            }
            // Between `start` (≥ −full) and `index`: an i64.
            let next = next as i64;
            // Retire this core and publish the index moved back on a new one,
            // so no grant of this core, this one included, is given back
            // twice. Ordering: AcqRel on success, as a limit change's swap
            // (every grant committed to this core happens before the new
            // core); Acquire on failure, to decide again on the reservation
            // that won.
            match core
                .index
                .compare_exchange(cur, FROZEN, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.core.store(Core {
                        index: CachePadded::new(AtomicU64::new(next as u64)),
                        params: p,
                        limit: core.limit,
                        epoch: core.epoch.next(),
                    });
                    cancels.high = cancels.high.max(index);
                    if later == 0 {
                        // Given back in full: the index is at the grant's
                        // start, below its end, and the grant before it may
                        // follow (newest first).
                        cancels.window.record(next);
                    } else {
                        // In part: the index is no grant's start (it may even
                        // be this grant's end), so no grant made before this
                        // cancel may be given back after it.
                        cancels.window.reset();
                    }
                    return true;
                }
                Err(actual) => cur = actual,
            }
        }
    }
}

impl<C: Clock> RefillLimiter<C> {
    /// [`reserve`](RateLimiter::reserve) decided on **one** clock reading,
    /// returned with the outcome (`reserve` decides once more on a fresh
    /// reading before refusing). O(1).
    ///
    /// # Errors
    ///
    /// As [`reserve`](RateLimiter::reserve).
    pub fn reserve_once(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> (u64, Result<Grant, AcquireError>) {
        let (now, rel) = self.now();
        let max = max_wait.map(saturating_nanos);
        if let Some(g) = self.handoff.take(permits, max, now) {
            return (now, Ok(g));
        }
        let (decision, tag) = self.decide(permits, max, rel);
        (now, self.outcome(decision, tag, now, permits, max_wait))
    }

    /// [`reserve`](RateLimiter::reserve), with the clock reading it decided at.
    ///
    /// # Errors
    ///
    /// As [`reserve`](RateLimiter::reserve).
    pub fn reserve_at(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> (u64, Result<Grant, AcquireError>) {
        let (now, rel) = self.now();
        let max = max_wait.map(saturating_nanos);
        if let Some(g) = self.handoff.take(permits, max, now) {
            return (now, Ok(g));
        }
        let (mut decision, mut tag) = self.decide(permits, max, rel);
        let mut now = now;
        if let Decision::Refuse { .. } = decision {
            // The reading may predate grants other threads made since (this
            // one preempted between reading the clock and deciding): decide
            // once more on a fresh reading before refusing.
            let (fresh, fresh_rel) = self.now();
            if fresh_rel > rel {
                (decision, tag) = self.decide(permits, max, fresh_rel);
                now = fresh;
            }
        }
        (now, self.outcome(decision, tag, now, permits, max_wait))
    }

    /// A decision taken at `now` as the crate's result.
    fn outcome(
        &self,
        decision: Decision,
        tag: u32,
        now: u64,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        match decision {
            Decision::Grant { wait, .. } => {
                let ready = now.saturating_add(wait);
                Ok(Grant::new(ready, ready, now, permits).with_claim(tag))
            }
            Decision::Refuse { wait } => Err(AcquireError::WouldWait {
                wait: Duration::from_nanos(wait),
                max_wait: max_wait.unwrap_or(Duration::MAX),
            }),
            Decision::Exhausted => Err(AcquireError::ScheduleExhausted),
            Decision::Invalid(e) => Err(e),
        }
    }

    /// Empties the bucket (stored permits and the partial one); reservations
    /// and kept grants stay. Returns the whole permits drained. O(1).
    pub fn drain(&self) -> u64 {
        self.drain_at().1
    }

    /// [`drain`](Self::drain), with the clock reading it was taken at.
    pub fn drain_at(&self) -> (u64, u64) {
        let (now, rel) = self.now();
        let (drained, _) = self.update(|p, index| {
            let (drained, next) = p.drain(index, rel);
            if next == index {
                Step::Keep(drained)
            } else {
                Step::Write(next, drained)
            }
        });
        (now, drained)
    }

    /// Sets `limit` permits per the **configured** refresh period (calls do
    /// not compound) and the capacity to `max(capacity, limit)`, keeping the
    /// current token count, stored or owed (rounded down). Callers already
    /// waiting keep their deadlines; kept grants are dropped.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for a limit of 0, or one that gives under 1 ns per
    /// permit or overflows the full-bucket time.
    pub fn set_limit_for_period(&self, limit: u32) -> Result<(), ConfigError> {
        let limit = i64::from(limit);
        if limit < 1 {
            return Err(PermitConfigError::InvalidLimitForPeriod(limit.into()).into());
        }
        let npp = nanos_per_permit(limit, self.period)?;
        let mut cancels = lock(&self.change);
        let core = self.core.load();
        let old = core.params;
        let capacity = old.capacity.max(limit);
        let full = full_capacity_nanos(npp, capacity)?;
        // Retire the old core. Ordering: AcqRel. The swap reads the latest
        // value in the word's modification order, so every grant committed
        // to the old core is in `index`; Acquire makes those grants happen
        // before the new core (and every grant on it), Release pairs with
        // callers that read FROZEN. FROZEN is never replaced, so no caller
        // can commit to the old core from now on.
        let index = core.index.swap(FROZEN, Ordering::AcqRel) as i64;
        let (_, now) = self.now();
        // Keep the capped token count d / npp (positive or negative) at the
        // new rate: E' = now − floor(d × npp' / npp).
        let d = i128::from(now) - old.base(index, now);
        let kept = (d * i128::from(npp)).div_euclid(i128::from(old.npp));
        // d ≤ full, so E' ≥ now − capacity × npp' ≥ −full' > i64::MIN; a debt
        // reaching past i64::MAX (292 years) saturates there.
        let next = (i128::from(now) - kept).min(i128::from(i64::MAX)) as i64;
        let epoch = core.epoch.next();
        self.core.store(Core {
            index: CachePadded::new(AtomicU64::new(next as u64)),
            params: Params {
                npp,
                capacity,
                full,
            },
            limit,
            epoch,
        });
        // Grants of the old parameters are never given back, nor handed on.
        cancels.reset();
        self.handoff.reset(epoch.tag());
        Ok(())
    }

    /// Permits available now, truncated toward zero: negative while permits
    /// are reserved ahead.
    pub fn available_permits(&self) -> i64 {
        self.state().available_permits
    }

    /// How long one permit would have to wait now, in nanoseconds (0 if one
    /// is available).
    pub fn nanos_to_wait(&self) -> u64 {
        self.state().nanos_to_wait
    }

    /// [`available_permits`](Self::available_permits) and
    /// [`nanos_to_wait`](Self::nanos_to_wait) from one reading of the state
    /// and one of the clock. Changes nothing.
    pub fn state(&self) -> BucketState {
        let (params, index) = self.snapshot();
        let (_, now) = self.now();
        BucketState {
            available_permits: params.available(index, now),
            nanos_to_wait: params.nanos_to_wait(index, now),
            cycle: None,
        }
    }
}

/// A grant's `scheduled` and `ready` times are both when its permits may go.
impl<C: Clock> RateLimiter for RefillLimiter<C> {
    /// [`Recovery::Fresh`] when the bucket holds what a new one starts with,
    /// [`Recovery::Credit`] when it holds more, [`Recovery::Debt`] by the
    /// time until it holds that much.
    fn recovery(&self) -> Recovery {
        let (_, now) = self.now();
        let core = self.core.load();
        // Ordering: Acquire, as in `reserve`: the latest grant's index.
        let index = core.index.load(Ordering::Acquire);
        if index == FROZEN {
            return Recovery::Unknown; // a limit change in flight
        }
        let p = &core.params;
        let base = p.base(index as i64, now);
        let fresh = i128::from(now) - i128::from(self.initial) * i128::from(p.npp);
        match base.cmp(&fresh) {
            std::cmp::Ordering::Equal => Recovery::Fresh,
            std::cmp::Ordering::Less => Recovery::Credit,
            std::cmp::Ordering::Greater => Recovery::Debt {
                nanos: clamp_u64(base - fresh).max(1),
            },
        }
    }

    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.reserve_at(permits, max_wait).1
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    /// The backlog (and the total) is the time reserved ahead of now.
    fn wait_stats(&self) -> WaitStats {
        let (_, index) = self.snapshot();
        let (_, now) = self.now();
        let backlog = clamp_u64(i128::from(index) - i128::from(now));
        WaitStats {
            backlog_nanos: backlog,
            total_wait_nanos: backlog,
        }
    }

    fn wait_policy(&self) -> WaitPolicy {
        self.policy
    }

    /// See [Cancelling a reservation](super#cancelling-a-reservation).
    fn cancel(&self, grant: &Grant) -> bool {
        self.cancel_grant(grant)
    }
}

impl<C> fmt::Debug for RefillLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = self.core.load();
        f.debug_struct("RefillLimiter")
            .field("limit_for_period", &core.limit)
            .field("limit_refresh_period_nanos", &self.period)
            .field("nanos_per_permit", &core.params.npp)
            .field("capacity", &core.params.capacity)
            .field("initial_permits", &self.initial)
            .field("timeout_nanos", &self.timeout)
            .field("wait_policy", &self.policy)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
