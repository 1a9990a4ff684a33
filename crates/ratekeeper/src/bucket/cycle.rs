//! [`CycleLimiter`]: Resilience4j's `AtomicRateLimiter`, with its drain,
//! overflow and limit-change defects fixed.
//!
//! # Implementation details
//!
//! The state is `(cycle, permits)`: the cycle the count was last refreshed
//! in (cycles of `period` ns counted from the limiter's creation) and the
//! permits left in it, negative while permits are reserved in later cycles.
//! Both live in one `AtomicU128`: `cycle` in the high 64 bits (a `u64`),
//! `permits` in the low 64 (an `i64`). Time since creation is clamped to
//! `i64::MAX`, so `cycle <= i64::MAX` and the all-ones word is free for the
//! `FROZEN` sentinel of a retired core.
//!
//! * **refresh(now)**: in cycle `c = now / period > cycle`,
//!   `permits = min(permits + (c − cycle) × limit, limit)` (in `i128`, no
//!   wrap-around), `cycle = c`. A clock reading older than the state's cycle
//!   (another caller refreshed first) is taken as the start of that cycle.
//! * **wait(n)**: 0 if `permits >= n`; otherwise the time to the next cycle
//!   plus whole cycles for what the next cycle's `permits + limit` does not
//!   cover: `ceil((n − permits − limit) / limit) × period`.
//! * **grant**: if the wait is within the maximum, `permits −= n`; a wait
//!   ending past `i64::MAX` ns or a count below `i64::MIN` is refused as
//!   [`AcquireError::ScheduleExhausted`] ("never"), whatever the timeout.
//! * **drain**: refresh, then `permits = min(permits, 0)`: the cycle's
//!   permits are dropped, reservations kept (kept reservations in the
//!   handoff too: their permits are counted already).
//! * **cancel**: the latest reservation's permits are added back (on a new
//!   core); any other is kept in the handoff (`crate::internal::handoff`), its
//!   permits still counted, for the next caller of its size.
//! * A refused request writes nothing (Resilience4j commits the refresh;
//!   refreshing is idempotent, so no one can tell).
//!
//! Every write is a compare-exchange from the word the decision was computed
//! on: grants are linearizable in compare-exchange order.

use core::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::config::{CycleConfig, PermitConfigError};
use super::decision::{
    clamp_u64, elapsed, BucketState, CycleDecision as Decision, CycleParams as Params, CycleRule,
    CycleState as State, CYCLE_FROZEN as FROZEN,
};
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::internal::cancel::Epoch;
use crate::internal::handoff::Handoff;
use crate::limiter::{AcquireError, Grant, RateLimiter, Recovery, WaitStats};
use crate::rate::NANOS_PER_SECOND;
use crate::sync::{lock, AtomicU128, Mutex, Ordering, Swap};
use crate::wait::{saturating_nanos, WaitPolicy};

/// The claim a grant carries (never 0): the top bit, the low 15 bits of
/// its core's epoch tag, and the low 16 bits of the count it left (which
/// recognises the latest reservation, see [`CycleLimiter::give_back`]). A
/// grant held across a multiple of 32 768 cancels and limit changes in one
/// cycle could be taken for one of the current core.
#[inline]
fn claim_tag(epoch_tag: u32, left: i64) -> u32 {
    (1 << 31) | ((epoch_tag & 0x7fff) << 16) | u32::from(left as u16)
}

/// Whether `tag` was made on the core whose epoch tag is `epoch_tag`.
#[inline]
fn claim_is_of(tag: u32, epoch_tag: u32) -> bool {
    claim_age(tag, epoch_tag) == 0
}

/// How many epochs before the core whose epoch tag is `epoch_tag` the
/// claim `tag` was made, modulo 2^15 (a claim keeps 15 bits of epoch).
#[inline]
fn claim_age(tag: u32, epoch_tag: u32) -> u32 {
    (epoch_tag & 0x7fff).wrapping_sub((tag >> 16) & 0x7fff) & 0x7fff
}

/// The largest limit for which a claim's 16 bits of count are exact.
const CLAIM_EXACT_LIMIT: i64 = 1 << 16;

/// The cycle the last reserved permit of `s` is in: `s.cycle` while the
/// count is not negative, else the cycle its deficit reaches.
#[inline]
fn last_cycle(s: State, limit: i64) -> u64 {
    if s.permits >= 0 || limit <= 0 {
        return s.cycle;
    }
    let owed = -i128::from(s.permits);
    let cycles = (owed + i128::from(limit) - 1) / i128::from(limit);
    s.cycle
        .saturating_add(u64::try_from(cycles).unwrap_or(u64::MAX))
}

/// Parameters and state word, replaced together on a limit change or a
/// cancel.
struct Core {
    /// [`State::pack`], or [`FROZEN`] once retired.
    state: CachePadded<AtomicU128>,
    params: Params,
    /// Moved on with every new core; grants committed to this core carry
    /// it as their tag.
    epoch: Epoch,
}

enum Step<R> {
    Keep(R),
    Write(State, R),
}

/// Resilience4j's default rate limiter (`AtomicRateLimiter`): at most
/// `limit_for_period` permits per cycle of `limit_refresh_period`, cycles
/// counted from the limiter's creation; see the [module docs](super) (its
/// differences from Resilience4j included). Every request first takes a
/// grant kept from a [cancel](super#cancelling-a-reservation), if one of its
/// size is ready within its maximum wait.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::bucket::{CycleConfig, CycleLimiter};
/// use ratekeeper::{ManualClock, RateLimiter};
///
/// let clock = ManualClock::new(0);
/// let config = CycleConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1))
///     .build()?;
/// let limiter = CycleLimiter::new_with_clock(config, clock.clone());
///
/// // 25 permits: this cycle's 10, the next two cycles' 10 and 5.
/// let grant = limiter.reserve(25, Some(Duration::from_secs(10)))?;
/// assert_eq!(grant.delay_nanos(), 2_000_000_000);
/// assert_eq!(limiter.available_permits(), -15);
/// clock.set_nanos(2_000_000_000);
/// assert_eq!(limiter.available_permits(), 5);
/// assert_eq!(limiter.cycle(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CycleLimiter<C = DefaultClock> {
    core: Swap<Core>,
    /// Serializes limit changes and cancels; held from retiring a core until
    /// its successor is published.
    change: Mutex<()>,
    /// Cancelled grants that could not be given back, for the next callers.
    /// Its tags are claims ([`claim_tag`]).
    handoff: Handoff,
    policy: WaitPolicy,
    /// The configured timeout in nanoseconds (the maximum wait is each call's).
    timeout: i64,
    clock: C,
    /// The clock reading at creation: the start of cycle 0.
    origin: u64,
}

impl CycleLimiter {
    /// A limiter on the real clock.
    pub fn new(config: CycleConfig) -> CycleLimiter {
        CycleLimiter::new_with_clock(config, DefaultClock::new())
    }
}

impl<C: Clock> CycleLimiter<C> {
    /// A limiter on `clock`: cycle 0 starts now, with `limit_for_period`
    /// permits.
    pub fn new_with_clock(config: CycleConfig, clock: C) -> CycleLimiter<C> {
        let limit = config.limit_for_period();
        let origin = clock.now_nanos();
        let core = Core {
            state: CachePadded::new(AtomicU128::new(
                State {
                    cycle: 0,
                    permits: limit,
                }
                .pack(),
            )),
            params: Params {
                period: config.limit_refresh_period().as_nanos() as i64,
                limit,
            },
            epoch: Epoch::FIRST,
        };
        CycleLimiter {
            core: Swap::new(core),
            change: Mutex::new(()),
            handoff: Handoff::new(claim_tag(Epoch::FIRST.tag(), 0)),
            policy: WaitPolicy::default(),
            timeout: config.timeout().as_nanos() as i64,
            clock,
            origin,
        }
    }

    /// This limiter with blocking waits done under `policy`.
    pub fn with_wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The current configuration (the limit as last changed).
    pub fn config(&self) -> CycleConfig {
        let p = self.core.load().params;
        CycleConfig::from_parts(p.limit, p.period, self.timeout)
    }

    /// The long-run rate in permits per second, `limit_for_period × 1e9 /
    /// limit_refresh_period` (no per-permit rounding), at the limit as last
    /// changed. A window may see up to twice the limit across a cycle
    /// boundary (see [the cycle limiter](super#the-cycle-limiter)).
    pub fn effective_rate(&self) -> f64 {
        let p = self.core.load().params;
        p.limit as f64 * NANOS_PER_SECOND as f64 / p.period as f64
    }

    /// The limiter's clock.
    pub fn clock_ref(&self) -> &C {
        &self.clock
    }

    #[inline]
    fn now(&self) -> (u64, i64) {
        let now = self.clock.now_nanos();
        (now, elapsed(now, self.origin))
    }

    /// The per-key rule of this limiter's current configuration.
    pub(crate) fn keyed_rule(&self) -> CycleRule {
        CycleRule::new(self.core.load().params)
    }

    /// Absolute clock nanoseconds of an instant since creation.
    #[inline]
    fn absolute(&self, rel: i64) -> u64 {
        self.origin.saturating_add(rel.max(0) as u64)
    }

    #[cold]
    fn await_change(&self) {
        drop(lock(&self.change));
    }

    /// The one compare-exchange loop (as the refill limiter's), returning
    /// the tag of the core it decided on.
    #[inline]
    fn update<R>(&self, mut decide: impl FnMut(&Params, u128) -> Step<R>) -> (R, u32) {
        loop {
            let core = self.core.load();
            // Ordering: Acquire, so this decision happens after the grant
            // that wrote the word.
            let mut cur = core.state.load(Ordering::Acquire);
            while cur != FROZEN {
                match decide(&core.params, cur) {
                    Step::Keep(r) => return (r, core.epoch.tag()),
                    Step::Write(next, r) => {
                        // Ordering: AcqRel on success (publish this grant,
                        // follow the one replaced); Acquire on failure (the
                        // decision is retaken on the winner's word).
                        match core.state.compare_exchange_weak(
                            cur,
                            next.pack(),
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => return (r, core.epoch.tag()),
                            Err(actual) => cur = actual,
                        }
                    }
                }
            }
            drop(core);
            self.await_change();
        }
    }

    /// Decides on `permits` and commits a grant; returns the decision and,
    /// for a grant, the claim it carries (see [`claim_tag`]).
    #[inline]
    fn decide(&self, permits: u32, max_wait: Option<u64>, now: i64) -> (Decision, u32) {
        let (decision, epoch) =
            self.update(|p, word| match p.decide(word, permits, max_wait, now) {
                d @ Decision::Grant { state, .. } => Step::Write(state, d),
                d => Step::Keep(d),
            });
        let claim = match decision {
            Decision::Grant { state, .. } => claim_tag(epoch, state.permits),
            _ => claim_tag(epoch, 0),
        };
        (decision, claim)
    }

    /// Parameters and the state refreshed to `now` (nothing written), and
    /// the instant it is taken at.
    fn refreshed(&self, now: i64) -> (Params, State, i64) {
        self.update(|p, word| {
            let (s, at) = p.refresh(State::unpack(word), now);
            Step::Keep((*p, s, at))
        })
        .0
    }

    /// [`RateLimiter::cancel`]: back to the count if it is the latest
    /// reservation, else to the handoff.
    fn cancel_grant(&self, grant: &Grant) -> bool {
        let _changing = lock(&self.change);
        let (now_abs, now) = self.now();
        // Under `change`, nobody else replaces the core.
        let core = self.core.load();
        // A grant that could go at once took this cycle's permits and is
        // due: nothing to hand on. One that waited is kept if it was made
        // since the latest limit change (15 bits of epoch: see `claim_tag`)
        // and is ready in a cycle the count still reaches. Its permits stay
        // counted in that cycle: whoever gets it goes then, in their place.
        let stashable = |reset_tag| {
            let p = core.params;
            // Ordering: Acquire, as in `update` (never FROZEN under
            // `change`; a stale count only refuses).
            let (s, _) = p.refresh(State::unpack(core.state.load(Ordering::Acquire)), now);
            let ready = (elapsed(grant.ready_nanos(), self.origin) / p.period) as u64;
            grant.ready_nanos() > grant.started_nanos()
                && ready <= last_cycle(s, p.limit)
                && grant.claim().is_some_and(|t| {
                    Handoff::issued_since(t, reset_tag, |t| claim_age(t, core.epoch.tag()))
                })
        };
        self.handoff.cancel(grant, now_abs, stashable, || {
            self.give_back(&core, grant, now)
        })
    }

    /// Gives `grant` back to the count of `core` (the current one) if it is
    /// the latest reservation, under `change`, at `now` (since creation).
    fn give_back(&self, core: &Core, grant: &Grant, now: i64) -> bool {
        let Some(tag) = grant.claim() else {
            return false;
        };
        let permits = i64::from(grant.permits());
        // Ready when decided: it took this cycle's permits, and is due.
        if grant.ready_nanos() <= grant.started_nanos() || permits == 0 {
            return false;
        }
        let p = core.params;
        // Only a grant of this core: no cancel or limit change since it was
        // committed (so it was never given back, and its permits are still
        // counted in the state).
        if !claim_is_of(tag, core.epoch.tag()) || p.limit > CLAIM_EXACT_LIMIT {
            return false;
        }
        // The cycle it was decided in: that of its clock reading (or later, if
        // another caller had refreshed first; then this is refused); and the
        // cycle it is ready in.
        let decided = elapsed(grant.started_nanos(), self.origin) / p.period;
        let ready = (elapsed(grant.ready_nanos(), self.origin) / p.period) as u64;
        // Ordering: Acquire, as in `update`.
        let mut cur = core.state.load(Ordering::Acquire);
        loop {
            if cur == FROZEN {
                return false;
            }
            let (s, _) = p.refresh(State::unpack(cur), now);
            if s.cycle != decided as u64 {
                // A new cycle: the permits it took were repaid or are owed
                // to cycles already refreshed.
                return false;
            }
            // Only the latest reservation: the count is the one it left.
            // A count is a position in the queue of permits, so giving back
            // an earlier one would hand the positions of those after it to
            // the next callers, and let them start in a cycle the later
            // ones already fill. Everything after it is ready in the last
            // cycle the count reaches; with that cycle its own, they took
            // fewer than `limit` permits, so 16 bits of the count tell
            // (`limit` is at most 2^16).
            if s.permits as u16 != tag as u16 || last_cycle(s, p.limit) != ready {
                return false;
            }
            // It waited, so it borrowed from later cycles and the count is
            // negative (a drain changes nothing then): adding its permits
            // back restores the count from before it.
            let Some(permits) = s.permits.checked_add(permits) else {
                return false;
            };
            let next = State {
                cycle: s.cycle,
                permits,
            };
            // Retire this core and publish the count on a new one, as the
            // refill limiter does. Ordering: AcqRel on success (every grant
            // committed to this core happens before the new one); Acquire on
            // failure, to decide again on the reservation that won.
            match core
                .state
                .compare_exchange(cur, FROZEN, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.core.store(Core {
                        state: CachePadded::new(AtomicU128::new(next.pack())),
                        params: p,
                        epoch: core.epoch.next(),
                    });
                    return true;
                }
                Err(actual) => cur = actual,
            }
        }
    }
}

impl<C: Clock> CycleLimiter<C> {
    /// [`reserve`](RateLimiter::reserve), with the clock reading it decided
    /// at. O(1).
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
        let (decision, tag) = self.decide(permits, max, rel);
        let outcome = match decision {
            Decision::Grant { ready, .. } => {
                let ready = self.absolute(ready).max(now);
                Ok(Grant::new(ready, ready, now, permits).with_claim(tag))
            }
            Decision::Refuse { wait } => Err(AcquireError::WouldWait {
                wait: Duration::from_nanos(wait),
                max_wait: max_wait.unwrap_or(Duration::MAX),
            }),
            Decision::Exhausted => Err(AcquireError::ScheduleExhausted),
            Decision::Invalid(e) => Err(e),
        };
        (now, outcome)
    }

    /// Drops the permits left in the current cycle (refreshed to now), keeps
    /// reservations, and returns how many were dropped. O(1).
    pub fn drain(&self) -> u64 {
        self.drain_at().1
    }

    /// [`drain`](Self::drain), with the clock reading it was taken at.
    pub fn drain_at(&self) -> (u64, u64) {
        let (now, rel) = self.now();
        let (drained, _) = self.update(|p, word| {
            let old = State::unpack(word);
            let (s, _) = p.refresh(old, rel);
            let drained = s.permits.max(0) as u64;
            let next = State {
                cycle: s.cycle,
                permits: s.permits.min(0),
            };
            if next == old {
                Step::Keep(drained)
            } else {
                Step::Write(next, drained)
            }
        });
        (now, drained)
    }

    /// Sets the permits per cycle from the **next** cycle on; the current
    /// cycle keeps its permits and reservations. Kept grants are dropped.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for a limit of 0.
    pub fn set_limit_for_period(&self, limit: u32) -> Result<(), ConfigError> {
        let limit = i64::from(limit);
        if limit < 1 {
            return Err(PermitConfigError::InvalidLimitForPeriod(limit.into()).into());
        }
        let _changing = lock(&self.change);
        let core = self.core.load();
        // Retire the old core. Ordering: AcqRel, as in the refill limiter:
        // the swap returns the latest word (every grant committed to the old
        // core), and FROZEN is never replaced.
        let word = core.state.swap(FROZEN, Ordering::AcqRel);
        let (_, now) = self.now();
        let (settled, _) = core.params.refresh(State::unpack(word), now);
        let epoch = core.epoch.next();
        self.core.store(Core {
            state: CachePadded::new(AtomicU128::new(settled.pack())),
            params: Params {
                period: core.params.period,
                limit,
            },
            epoch,
        });
        // Grants of the old limit are never given back, nor handed on.
        self.handoff.reset(claim_tag(epoch.tag(), 0));
        Ok(())
    }

    /// Permits left in the current cycle (refreshed to now): negative while
    /// permits are reserved in later cycles.
    pub fn available_permits(&self) -> i64 {
        self.state().available_permits
    }

    /// How long one permit would have to wait now, in nanoseconds (0 if one
    /// is available).
    pub fn nanos_to_wait(&self) -> u64 {
        self.state().nanos_to_wait
    }

    /// The current cycle, counted from the limiter's creation.
    pub fn cycle(&self) -> u64 {
        self.state().cycle.unwrap_or(0)
    }

    /// [`available_permits`](Self::available_permits),
    /// [`nanos_to_wait`](Self::nanos_to_wait) and the current cycle from
    /// one reading of the state and one of the clock. Changes nothing.
    pub fn state(&self) -> BucketState {
        let (_, now) = self.now();
        let (p, s, at) = self.refreshed(now);
        BucketState {
            available_permits: s.permits,
            nanos_to_wait: clamp_u64(p.wait(s, 1, at)),
            cycle: Some(s.cycle),
        }
    }
}

/// A grant's `scheduled` and `ready` times are both when its permits may go
/// (the start of the cycle that covers it).
impl<C: Clock> RateLimiter for CycleLimiter<C> {
    /// Fresh once the current cycle's whole limit is left (as a new
    /// limiter's); in debt while permits of this cycle or later ones are
    /// taken; never credit.
    fn recovery(&self) -> Recovery {
        let (_, rel) = self.now();
        let core = self.core.load();
        // Ordering: Acquire, as in `reserve`: the latest grant's state.
        let word = core.state.load(Ordering::Acquire);
        if word == FROZEN {
            return Recovery::Unknown; // a limit change in flight
        }
        core.params.recovery(State::unpack(word), rel)
    }

    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.reserve_at(permits, max_wait).1
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    /// The backlog (and the total) is the time until the reservations on
    /// later cycles are repaid.
    fn wait_stats(&self) -> WaitStats {
        let (_, now) = self.now();
        let (p, s, at) = self.refreshed(now);
        let backlog = clamp_u64(p.wait(s, 0, at));
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

impl<C> fmt::Debug for CycleLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.core.load().params;
        f.debug_struct("CycleLimiter")
            .field("limit_for_period", &p.limit)
            .field("limit_refresh_period_nanos", &p.period)
            .field("timeout_nanos", &self.timeout)
            .field("wait_policy", &self.policy)
            .finish_non_exhaustive()
    }
}
