//! [`Pacer`]: the in-memory limiter around the [decision](super::decision):
//! the timelines, the configuration it reads lock-free, the waiting room
//! and the cancel hand-off.

use core::fmt;
use std::time::Duration;

use super::decision::{self, PacerRule};
use super::params::{
    kind, CACHED_CLOCK, IDLE, KIND_AVERAGE, KIND_DUAL, KIND_MASK, KIND_SHIFT, NOT_PLAIN,
};
use super::strictness::Strictness;
use super::Pacer;
use crate::clock::Clock;
use crate::internal::cancel::CancelWindow;
use crate::limiter::{refused, AcquireError, Grant, RateLimiter, Recovery, WaitStats};
use crate::rate::{per_second_of_nanos, Rate};
use crate::sync::{lock, Ordering};
use crate::wait::{saturating_nanos, WaitPolicy};

/// The lateness excused besides the grouping delay at a small sleep
/// resolution (an async timer's tick).
const MAX_EXCUSED_TICK: u64 = 1_000_000;

#[derive(Debug, Clone, Copy)]
pub(super) struct Control {
    pub(super) rate: Rate,
    pub(super) strictness: Strictness,
    /// Which grants before the latest cancel may still be given back.
    pub(super) window: CancelWindow<u64>,
}

impl<C: Clock> Pacer<C> {
    /// A clock reading on the timeline: ns since the origin, 0 before it.
    #[inline(always)]
    pub(super) fn now(&self) -> u64 {
        self.on_timeline(self.clock.now_nanos())
    }

    /// A clock reading no earlier than the origin: `at(now())` without the
    /// round trip (`at(on_timeline(t))` is `t.max(origin)`), so a grant's
    /// `started` costs no arithmetic. `reading() − origin` is `now()`.
    #[inline(always)]
    pub(super) fn reading(&self) -> u64 {
        self.clock.now_nanos().max(self.params.origin)
    }

    /// The clock reading of a slot or start `t` the schedule handed out:
    /// `at(t)` without the saturation, which never applies to them (they
    /// are below `limit`, at most `u64::MAX − origin + 1`).
    #[inline(always)]
    pub(super) fn at_granted(&self, t: u64) -> u64 {
        debug_assert!(t < self.params.limit);
        t.wrapping_add(self.params.origin)
    }

    /// A clock reading `t` (a grant's time) on the timeline.
    #[inline(always)]
    pub(super) fn on_timeline(&self, t: u64) -> u64 {
        t.saturating_sub(self.params.origin)
    }

    /// The clock reading of the timeline's time `t`.
    #[inline(always)]
    pub(super) fn at(&self, t: u64) -> u64 {
        t.saturating_add(self.params.origin)
    }

    /// A grant of the timeline's `slot`, `ready` and `now`, in clock readings.
    #[inline(always)]
    pub(super) fn grant(&self, slot: u64, ready: u64, now: u64, permits: u32) -> Grant {
        Grant::new(self.at(slot), self.at(ready), self.at(now), permits)
    }

    /// A grant that has to wait: in the room, then `released`.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait_slow(&self, grant: Grant) -> Grant {
        self.room
            .wait(&self.clock, grant, self.wait_policy(), |g| self.released(g))
    }

    /// `acquire` on the plain, strict and burst paths: its turn, then the
    /// decision and, if ready when decided, the grant; `None` (having done
    /// nothing) on the other paths.
    #[inline(always)]
    fn acquire_fast(&self) -> Option<Grant> {
        self.room.enter();
        // Ordering: as in `reserve`.
        let mode = self.params.mode.load(Ordering::Acquire);
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        if !self.handoff.is_empty() {
            return None;
        }
        let dual = mode & (IDLE | KIND_MASK) == KIND_DUAL << KIND_SHIFT;
        if mode & NOT_PLAIN != 0 && !dual {
            return None;
        }
        let span = match decision::span_of(1, op) {
            Ok(span) => span,
            Err(e) => refused(e),
        };
        let reserved = if dual {
            // Ordering: Relaxed; configuration snapshot, read after the mode
            // word (as in `reserve`).
            let burst = self.params.burst_nanos.load(Ordering::Relaxed);
            if burst == 0 {
                return None;
            }
            self.reserve_dual(span, burst, 1, mode)
        } else {
            self.reserve_plain(span, 1, mode)
        };
        let grant = match reserved {
            Ok(g) => g,
            Err(e) => refused(e),
        };
        if grant.ready_nanos() <= grant.started_nanos() {
            // Ready when decided: no clock read.
            return Some(grant);
        }
        Some(Grant::from_words(self.wait_for_cold(grant.to_words())))
    }

    /// `acquire` past its turn, on the paths `acquire_fast` does not take:
    /// `reserve(1, None)`, then `wait_for`.
    /// Returns words ([`Grant::to_words`]), as `wait_for_cold` does, so
    /// that `acquire`'s paths merge as values.
    #[cold]
    #[inline(never)]
    fn acquire_general(&self) -> [u64; 4] {
        match self.reserve(1, None) {
            Ok(g) => self.wait_for(g).to_words(),
            Err(e) => refused(e),
        }
    }

    /// `wait_for` a grant not ready when decided, out of line; it comes
    /// as words, so that the grant is not written to memory before the
    /// test that it has to wait.
    #[cold]
    #[inline(never)]
    fn wait_for_cold(&self, [scheduled, ready, started, tail]: [u64; 4]) -> [u64; 4] {
        let grant = Grant::from_words([scheduled, ready, started, tail]);
        self.wait_for(grant).to_words()
    }

    /// A stashed grant of `permits` ready within `max_wait`, if any.
    #[cold]
    #[inline(never)]
    pub(super) fn take_stashed(&self, permits: u32, max_wait: Option<Duration>) -> Option<Grant> {
        let now = self.clock.now_nanos();
        self.handoff
            .take(permits, max_wait.map(saturating_nanos), now)
    }
}

impl<C: Clock> Pacer<C> {
    /// The ideal start of the next free slot, as a clock reading.
    pub fn next_slot_nanos(&self) -> u64 {
        // Ordering: Acquire, to observe the latest reservation.
        self.at(self.ideal.load(Ordering::Acquire))
    }

    /// `now − next slot`: positive when behind schedule, negative when ahead
    /// (nosqlbench's `getRateSchedulingDelay`).
    pub fn schedule_delay_nanos(&self) -> i64 {
        let now = i128::from(self.now());
        // Ordering: Acquire, as in `next_slot_nanos`.
        let next = i128::from(self.ideal.load(Ordering::Acquire));
        (now - next).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// Wait checkpointed at changes and forfeited by compensation since
    /// the last start or restart.
    pub fn accumulated_wait_nanos(&self) -> u64 {
        // Ordering: Relaxed; a statistic.
        self.accumulated.load(Ordering::Relaxed)
    }

    /// The current rate.
    pub fn rate(&self) -> Rate {
        lock(&self.control).rate
    }

    /// The current strictness.
    pub fn strictness(&self) -> Strictness {
        lock(&self.control).strictness
    }

    /// Whether the schedule is running (not idle).
    pub fn is_started(&self) -> bool {
        // Ordering: Relaxed; a snapshot.
        self.params.mode.load(Ordering::Relaxed) & IDLE == 0
    }

    /// Nanoseconds of schedule per permit at the current rate.
    pub fn nanos_per_op(&self) -> u64 {
        // Ordering: Relaxed; configuration snapshot.
        self.params.op_nanos.load(Ordering::Relaxed)
    }

    /// The rate the schedule keeps (ops/s): `1e9 / nanos_per_op()`, as
    /// [`Rate::effective_rate`]; the long-run rate in every mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::{ManualClock, Pacer, Rate};
    ///
    /// let pacer = Pacer::builder(Rate::new(3.0)?).build_with_clock(ManualClock::new(0))?;
    /// assert_eq!(pacer.nanos_per_op(), 333_333_333);
    /// assert_eq!(pacer.effective_rate(), 1e9 / 333_333_333.0); // 3.000000003
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn effective_rate(&self) -> f64 {
        per_second_of_nanos(self.nanos_per_op())
    }

    /// The clock this pacer reads.
    pub fn clock_ref(&self) -> &C {
        &self.clock
    }

    /// [`RateLimiter::recovery`]: idle is [`Recovery::Fresh`], otherwise
    /// [`decision::recovery`].
    fn recovery_now(&self) -> Recovery {
        // Ordering: Acquire, as in `reserve`: the timelines read below are
        // at least those of the mode word's configuration.
        let mode = self.params.mode.load(Ordering::Acquire);
        if mode & IDLE != 0 {
            return Recovery::Fresh;
        }
        let now = self.now();
        // Ordering: Acquire, to observe the latest reservation on each
        // timeline (a snapshot: a racing grant makes the answer stale, as
        // any answer about a shared limiter is).
        let ideal = self.ideal.load(Ordering::Acquire);
        // Ordering: Acquire, as above; stale in average mode (never above
        // `ideal` there once caught up), which can only report debt.
        let actual = self.actual.load(Ordering::Acquire);
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        // Ordering: Relaxed; configuration snapshot, as in `nanos_per_op`.
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
        let strict = kind(mode) == KIND_DUAL && burst == op;
        decision::recovery(ideal, actual, now, strict)
    }

    /// The per-key rule of this pacer's current configuration.
    pub(crate) fn keyed_rule(&self) -> PacerRule {
        // Ordering: Relaxed for the three; a configuration snapshot of a
        // pacer that is not shared yet.
        let mode = self.params.mode.load(Ordering::Relaxed);
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
        PacerRule::of(mode, op, burst)
    }
}

impl<C: Clock> RateLimiter for Pacer<C> {
    fn recovery(&self) -> Recovery {
        self.recovery_now()
    }

    /// Reserves `permits` slices of the schedule. Unbounded: one atomic add
    /// (strict and burst modes: plus a clock read and, off schedule, a
    /// compare-exchange on the same line). Bounded: a compare-exchange loop,
    /// so a refusal changes nothing.
    // Always inlined: its common path is a few instructions around one
    // atomic add, and its result is returned in registers only when inlined.
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        // Ordering: Acquire for the mode word, Relaxed for the slice. Both are
        // configuration snapshots (an acquire racing a change may use either
        // value, as documented); the Acquire pairs with the Release store that
        // moves the epoch on after a change, so a grant tagged with the new
        // epoch was sized with the new slices (the tag is what `cancel` trusts;
        // on x86 an Acquire load is the same instruction).
        let mode = self.params.mode.load(Ordering::Acquire);
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        if !self.handoff.is_empty() {
            if let Some(g) = self.take_stashed(permits, max_wait) {
                return Ok(g);
            }
        }
        let span = decision::span_of(permits, op)?;
        // The common path: a started pacer in average mode (or a burst
        // slice of zero) on the exact clock, no maximum wait: one fetch_add
        // and one clock read, after one test of the mode word.
        if mode & NOT_PLAIN == 0 && max_wait.is_none() {
            return self.reserve_plain(span, permits, mode);
        }
        // Average or compensation mode otherwise: one fetch_add.
        if mode & (IDLE | (KIND_DUAL << KIND_SHIFT)) == 0 && max_wait.is_none() {
            return self.reserve_accumulator(span, permits, mode, mode & CACHED_CLOCK != 0);
        }
        // Ordering: Relaxed; configuration snapshot, read after the mode word.
        let burst =
            u64::from(permits).saturating_mul(self.params.burst_nanos.load(Ordering::Relaxed));
        self.reserve_span(span, burst, permits, max_wait, mode)
    }

    /// [`RateLimiter::acquire`]'s steps (`wait_turn`, `reserve(1, None)`,
    /// `wait_for`), with the plain and the strict and burst paths taken
    /// straight from the mode word. Their grant stays in registers: the
    /// paths merge as the grant's fields, never as a `Result` or as the
    /// memory a slow path's call returned into (which went through the
    /// stack, some 20 instructions a grant).
    #[inline(always)]
    fn acquire(&self) -> Grant {
        match self.acquire_fast() {
            Some(g) => g,
            None => Grant::from_words(self.acquire_general()),
        }
    }

    /// Parks while another caller sleeps on the schedule (see
    /// [Waiting](super#waiting)).
    #[inline(always)]
    fn wait_turn(&self) {
        self.room.enter();
    }

    /// Waits for `grant` in the pacer's room (see [Waiting](super#waiting)).
    #[inline(always)]
    fn wait_for(&self, grant: Grant) -> Grant {
        let (ready, started) = (grant.ready_nanos(), grant.started_nanos());
        if ready <= started {
            // Ready when decided: no clock read.
            return grant;
        }
        if ready - started <= self.wait_policy().window_nanos(&self.clock) {
            // Within the early bound: goes at once, as the wait would,
            // without the room and without a clock read.
            return grant;
        }
        self.wait_slow(grant)
    }

    #[inline]
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn wait_stats(&self) -> WaitStats {
        let backlog = self.schedule_delay_nanos().max(0) as u64;
        WaitStats {
            backlog_nanos: backlog,
            total_wait_nanos: backlog.saturating_add(self.accumulated_wait_nanos()),
        }
    }

    /// Accounts for a late wait in strict and burst modes ([Waiting](super#waiting)).
    fn released(&self, grant: &Grant) {
        // Ordering: Relaxed for the three: configuration snapshots.
        let mode = self.params.mode.load(Ordering::Relaxed);
        let kind = kind(mode);
        if kind == KIND_AVERAGE || grant.started_nanos() <= grant.ready_nanos() {
            return;
        }
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
        let late = grant.started_nanos() - grant.ready_nanos();
        let resolution = self.clock.sleep_overshoot_nanos();
        let delay = self.wait_policy().group_delay_nanos(&self.clock);
        if kind == KIND_DUAL && burst == op && delay == 0 {
            // Strict, with ops slept to one by one: the lateness is kept,
            // the next op is spaced from this one's actual start.
            let span = u64::from(grant.permits().max(1)).saturating_mul(burst);
            // Ordering: AcqRel, as the dual paths' writes of `actual`.
            let started = self.on_timeline(grant.started_nanos());
            self.actual
                .fetch_max(started.saturating_add(span), Ordering::AcqRel);
        } else {
            // The wait's own lateness is not the caller's: excuse it, up to
            // the grouping delay plus what a wait may end late without
            // anything amiss (two sleep resolutions, or an async timer's
            // 1 ms tick). Beyond that (a preemption), it is lateness.
            let cap = delay.saturating_add(resolution.saturating_mul(2).max(MAX_EXCUSED_TICK));
            // Ordering: Relaxed; see `present`.
            self.lag.fetch_max(late.min(cap), Ordering::Relaxed);
        }
    }

    /// The pacer's policy, sized for its slot (see [`WaitPolicy::for_slot`]).
    #[inline]
    fn wait_policy(&self) -> WaitPolicy {
        // Ordering: Relaxed; configuration snapshot.
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        self.policy.for_slot(op)
    }

    /// Gives back the latest reservation's slots, or hands an earlier one on
    /// ([Cancelling a reservation](super#cancelling-a-reservation)).
    fn cancel(&self, grant: &Grant) -> bool {
        self.cancel_grant(grant)
    }
}

impl<C> Pacer<C> {
    /// The next slot as a clock reading, for display.
    pub(super) fn next_slot_snapshot(&self) -> u64 {
        // Ordering: Relaxed; a snapshot.
        let next = self.ideal.load(Ordering::Relaxed);
        next.saturating_add(self.params.origin)
    }
}

impl<C> fmt::Debug for Pacer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let control = *lock(&self.control);
        f.debug_struct("Pacer")
            .field("rate", &control.rate)
            .field("strictness", &control.strictness)
            .field("next_slot_nanos", &self.next_slot_snapshot())
            .field(
                "accumulated_wait_nanos",
                &self.accumulated.load(Ordering::Relaxed),
            )
            .field("wait_policy", &self.policy)
            .finish_non_exhaustive()
    }
}
