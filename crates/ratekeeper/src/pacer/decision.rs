//! The Pacer's arithmetic, written once: the slot a grant takes, when it is
//! ready, what burst compensation forfeits, and the refusals. The in-memory
//! [`Pacer`](super::Pacer) decides through these helpers, adding its cached
//! clock, excused lateness, epochs and hand-off around them;
//! [`Keyed`](crate::keyed::Keyed) through the [`Rule`]s below, the same
//! helpers over one key's cell: one word (average, compensation; strict as
//! its next start, [`Spacing`]) or two (burst ratio: `ideal` bounds the
//! average, `actual` spaces ops a burst slice apart). Each helper is O(1)
//! but for compare-exchange retries, and reads no clock: the bounded loops
//! ([`take_bounded`], [`dual_bounded`]) get their readings from the caller.

use super::params::{KIND_AVERAGE, KIND_COMPENSATE, KIND_DUAL, KIND_SHIFT};
use crate::grant::{AcquireError, Grant};
use crate::limiter::Recovery;
use crate::store::{would_wait, Rule};
use crate::sync::{AtomicU64, Ordering};

/// The most schedule one reservation may take: 2^62 ns, the longest slice
/// a `Rate` may have, so one permit always fits.
pub(super) const MAX_SPAN: u64 = crate::rate::MAX_NANOS_PER_OP;

/// Slots at or beyond 2^63 ns are refused, so the timeline cannot wrap.
pub(super) const SCHEDULE_LIMIT: u64 = 1 << 63;

/// `permits` slices of `op` ns, or the refusal of a request no schedule
/// can hold.
#[inline(always)]
pub(super) fn span_of(permits: u32, op: u64) -> Result<u64, AcquireError> {
    if permits == 0 {
        return Err(AcquireError::ZeroPermits);
    }
    let span = u64::from(permits).saturating_mul(op);
    if span > MAX_SPAN {
        return Err(AcquireError::InsufficientCapacity {
            requested: permits,
            max: u32::try_from(MAX_SPAN / op.max(1)).unwrap_or(u32::MAX),
        });
    }
    Ok(span)
}

/// Burst compensation's forfeit: `gap >> shift` of the gap between the end
/// `end` of a grant's slots and the clock reading `now`.
#[inline(always)]
pub(super) fn forfeit(end: u64, now: u64, shift: u32) -> u64 {
    now.saturating_sub(end) >> shift
}

/// The start of a strict or burst op of `slot`: no earlier than its slot,
/// the spacing `actual` and the present `present`.
#[inline(always)]
pub(super) fn dual_start(actual: u64, slot: u64, present: u64) -> u64 {
    actual.max(slot).max(present)
}

/// Takes `span` ns at the accumulator's end, one `fetch_add`; refuses (and
/// returns the time) a slot at or past `limit`.
#[inline(always)]
pub(super) fn take(ideal: &AtomicU64, span: u64, limit: u64) -> Result<u64, AcquireError> {
    // Ordering: AcqRel, so this grant happens-after every grant whose add
    // came earlier in the accumulator's modification order (the public
    // "Memory ordering" promise).
    let slot = ideal.fetch_add(span, Ordering::AcqRel);
    if slot >= limit {
        return Err(undo(ideal, span));
    }
    Ok(slot)
}

#[cold]
fn undo(ideal: &AtomicU64, span: u64) -> AcquireError {
    // Ordering: Relaxed; returning time nobody was granted.
    ideal.fetch_sub(span, Ordering::Relaxed);
    AcquireError::ScheduleExhausted
}

/// Takes the slot `slot` if it is still the accumulator's end (one
/// compare-exchange, so a refusal decided before it changes nothing);
/// `Err` holds the end another grant moved it to.
#[inline(always)]
pub(super) fn take_at(ideal: &AtomicU64, slot: u64, span: u64) -> Result<u64, u64> {
    // Ordering: AcqRel on success, as `take`; Acquire on failure, to decide
    // again on the winner's schedule.
    ideal.compare_exchange_weak(slot, slot + span, Ordering::AcqRel, Ordering::Acquire)
}

/// Moves the accumulator on by the share of the gap behind `now` that
/// burst compensation forfeits for a grant ending at `end`; returns it.
#[inline]
pub(super) fn forfeit_gap(ideal: &AtomicU64, end: u64, now: u64, shift: u32) -> u64 {
    let forfeit = forfeit(end, now, shift);
    if forfeit > 0 {
        // Ordering: Relaxed. Moving the accumulator on only makes later
        // slots later; the grant was published by the AcqRel write that
        // took its slot.
        ideal.fetch_add(forfeit, Ordering::Relaxed);
    }
    forfeit
}

/// Gives the slot `slot..slot + span` just taken back if nobody reserved
/// after it, else leaves a hole (fewer grants, never more): for a strict or
/// burst op whose start is refused.
#[cold]
pub(super) fn hand_back(ideal: &AtomicU64, slot: u64, span: u64) {
    // Ordering: AcqRel/Relaxed: success publishes the rollback like any
    // reservation; failure (a later slot was taken) needs nothing.
    let _ = ideal.compare_exchange(slot + span, slot, Ordering::AcqRel, Ordering::Relaxed);
}

/// What refuses a reservation with a maximum wait: a slot or start at or
/// past `limit`, a wait over `max` ns. With `retry_on_fresh_reading`, a
/// wait over `max` is decided once more on a fresh clock reading before it
/// is refused (the Pacer; a keyed rule decides on one reading).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bound {
    pub(super) limit: u64,
    pub(super) max: u64,
    pub(super) retry_on_fresh_reading: bool,
}

/// A slot [`take_bounded`] took, the reading it was decided on, and the
/// grant's start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Taken {
    pub(super) slot: u64,
    pub(super) now: u64,
    pub(super) ready: u64,
}

/// A slot [`dual_bounded`] took, the reading and earliest start it was
/// decided on, and the `actual` it saw: what [`space`] needs besides.
#[derive(Debug, Clone, Copy)]
pub(super) struct DualTaken {
    pub(super) slot: u64,
    pub(super) now: u64,
    pub(super) present: u64,
    pub(super) actual: u64,
}

/// Average and compensation modes with a maximum wait: takes `span` ns at
/// the accumulator's end with a compare-exchange, so a refusal changes
/// nothing. `read(slot)` gives the clock reading `now` and the start
/// `ready` of the slot `slot`; the caller applies burst compensation.
#[inline]
pub(super) fn take_bounded(
    ideal: &AtomicU64,
    span: u64,
    bound: Bound,
    mut read: impl FnMut(u64) -> (u64, u64),
) -> Result<Taken, AcquireError> {
    // Ordering: Acquire, to decide on the latest published schedule.
    let mut slot = ideal.load(Ordering::Acquire);
    let mut retry = bound.retry_on_fresh_reading;
    loop {
        if slot >= bound.limit {
            return Err(AcquireError::ScheduleExhausted);
        }
        let (now, ready) = read(slot);
        if ready - now > bound.max {
            if retry {
                // The reading may predate grants other threads made since
                // (this one preempted between reading the clock and
                // deciding): decide once more on a fresh reading before
                // refusing. Ordering: Acquire, as above.
                retry = false;
                slot = ideal.load(Ordering::Acquire);
                continue;
            }
            return Err(would_wait(ready - now, bound.max));
        }
        match take_at(ideal, slot, span) {
            Ok(_) => return Ok(Taken { slot, now, ready }),
            Err(current) => slot = current,
        }
    }
}

/// Strict and burst modes with a maximum wait: takes `span` ns on `ideal`
/// if the op's start, [`dual_start`] of the slot, `actual` and
/// `present(now)`, is within the bound, for `now = read()`; the clock is
/// read before the timelines, `present` after. The caller then spaces the
/// op with [`space`] (another op may have moved `actual` since).
#[inline]
pub(super) fn dual_bounded(
    ideal: &AtomicU64,
    actual_cell: &AtomicU64,
    span: u64,
    bound: Bound,
    mut read: impl FnMut() -> u64,
    mut present: impl FnMut(u64) -> u64,
) -> Result<DualTaken, AcquireError> {
    let mut retry = bound.retry_on_fresh_reading;
    loop {
        let now = read();
        // Ordering: Acquire for both, to decide on the latest published state.
        let slot = ideal.load(Ordering::Acquire);
        if slot >= bound.limit {
            return Err(AcquireError::ScheduleExhausted);
        }
        let actual = actual_cell.load(Ordering::Acquire);
        let present = present(now);
        let start = dual_start(actual, slot, present);
        if start >= bound.limit {
            return Err(AcquireError::ScheduleExhausted);
        }
        if start.saturating_sub(now) > bound.max {
            if retry {
                // As in `take_bounded`: once more on a fresh reading (the
                // loop reads the clock again).
                retry = false;
                continue;
            }
            return Err(would_wait(start - now, bound.max));
        }
        if take_at(ideal, slot, span).is_ok() {
            return Ok(DualTaken {
                slot,
                now,
                present,
                actual,
            });
        }
    }
}

/// A strict or burst reservation whose slot is taken, being spaced.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spaced {
    /// The slot taken on `ideal`, and its length.
    pub(super) slot: u64,
    pub(super) span: u64,
    /// The spacing the op leaves behind it on `actual`.
    pub(super) burst_span: u64,
    /// The clock reading the wait is measured from, and the earliest start
    /// the op may take (`now`, less any lateness the caller excuses).
    pub(super) now: u64,
    pub(super) present: u64,
    /// The longest wait allowed (`None`: any), and the first time refused.
    pub(super) max: Option<u64>,
    pub(super) limit: u64,
}

/// Spaces the op on the actual timeline: it starts at
/// [`dual_start`], and moves `actual` to its start plus `burst_span` with a
/// compare-exchange (an op exactly on its slot leaves `actual` alone: the
/// next op's slot is at least a full slice later). A start past `max` or
/// at `limit` hands the slot back. `actual` is the caller's load of the
/// cell. Returns the start.
#[inline]
pub(super) fn space(
    ideal: &AtomicU64,
    actual_cell: &AtomicU64,
    mut actual: u64,
    op: Spaced,
) -> Result<u64, AcquireError> {
    loop {
        let start = dual_start(actual, op.slot, op.present);
        if let Some(max) = op.max.filter(|&max| start.saturating_sub(op.now) > max) {
            hand_back(ideal, op.slot, op.span);
            return Err(would_wait(start - op.now, max));
        }
        if start == op.slot {
            return Ok(start);
        }
        if start >= op.limit {
            hand_back(ideal, op.slot, op.span);
            return Err(AcquireError::ScheduleExhausted);
        }
        // Ordering: AcqRel on success (publish our spacing, see earlier
        // ones); Acquire on failure to retry with the freshest value. `now`
        // stays a valid lower bound of the present across retries.
        match actual_cell.compare_exchange_weak(
            actual,
            start.saturating_add(op.burst_span),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => return Ok(start),
            Err(current) => actual = current,
        }
    }
}

/// A keyed rule's bound: the schedule's limit, `max` ns, one reading.
#[inline(always)]
fn keyed_bound(max: u64) -> Bound {
    Bound {
        limit: SCHEDULE_LIMIT,
        max,
        retry_on_fresh_reading: false,
    }
}

/// How a schedule compares with a fresh one's at `now`: [`Recovery::Debt`]
/// while its next slot or spacing is ahead, [`Recovery::Fresh`] when it is
/// exactly now or the mode keeps lateness (strict), else
/// [`Recovery::Credit`]: backlog it may still catch up.
#[inline]
pub(super) fn recovery(ideal: u64, actual: u64, now: u64, keeps_lateness: bool) -> Recovery {
    let busy = ideal.max(actual);
    if busy > now {
        Recovery::Debt { nanos: busy - now }
    } else if ideal == now || keeps_lateness {
        Recovery::Fresh
    } else {
        Recovery::Credit
    }
}

/// The rule of a pacer's configuration, by the state it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PacerRule {
    /// Average and compensation modes: one word.
    Accumulator(Accumulator),
    /// Strict: one word.
    Spacing(Spacing),
    /// Burst ratio: two words.
    Dual(Dual),
}

impl PacerRule {
    /// The rule of the mode word `mode` with slices `op` and `burst`.
    pub(super) fn of(mode: u64, op: u64, burst: u64) -> PacerRule {
        let kind = (mode >> KIND_SHIFT) & 0b11;
        match kind {
            KIND_DUAL if burst >= op => PacerRule::Spacing(Spacing { op }),
            KIND_DUAL => PacerRule::Dual(Dual { op, burst }),
            KIND_COMPENSATE => PacerRule::Accumulator(Accumulator {
                op,
                shift: Some((mode & 0xff) as u32),
            }),
            _ => {
                debug_assert_eq!(kind, KIND_AVERAGE);
                PacerRule::Accumulator(Accumulator { op, shift: None })
            }
        }
    }
}

/// Average (`shift: None`) and burst-compensation modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accumulator {
    op: u64,
    shift: Option<u32>,
}

impl Rule for Accumulator {
    type Cell = AtomicU64;

    fn fresh(&self, now: u64) -> AtomicU64 {
        AtomicU64::new(now)
    }

    #[inline(always)]
    fn reserve(
        &self,
        cell: &AtomicU64,
        permits: u32,
        max_wait: Option<u64>,
        now: u64,
    ) -> Result<Grant, AcquireError> {
        let span = span_of(permits, self.op)?;
        let Some(max) = max_wait else {
            let slot = take(cell, span, SCHEDULE_LIMIT)?;
            if let Some(shift) = self.shift {
                forfeit_gap(cell, slot + span, now, shift);
            }
            return Ok(Grant::new(slot, slot.max(now), now, permits));
        };
        let Taken { slot, ready, .. } =
            take_bounded(cell, span, keyed_bound(max), |slot| (now, slot.max(now)))?;
        if let Some(shift) = self.shift {
            forfeit_gap(cell, slot + span, now, shift);
        }
        Ok(Grant::new(slot, ready, now, permits))
    }

    fn recovery(&self, cell: &AtomicU64, now: u64) -> Recovery {
        // Ordering: Acquire; the latest grant's schedule (a snapshot).
        let ideal = cell.load(Ordering::Acquire);
        recovery(ideal, ideal, now, false)
    }
}

/// Strict mode: ops never closer than the slice; one word, the next start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spacing {
    op: u64,
}

impl Rule for Spacing {
    type Cell = AtomicU64;

    fn fresh(&self, now: u64) -> AtomicU64 {
        AtomicU64::new(now)
    }

    #[inline(always)]
    fn reserve(
        &self,
        cell: &AtomicU64,
        permits: u32,
        max_wait: Option<u64>,
        now: u64,
    ) -> Result<Grant, AcquireError> {
        let span = span_of(permits, self.op)?;
        // Ordering: Acquire, to decide on the latest published start.
        let mut next = cell.load(Ordering::Acquire);
        loop {
            let ready = next.max(now);
            if ready >= SCHEDULE_LIMIT {
                return Err(AcquireError::ScheduleExhausted);
            }
            if let Some(max) = max_wait.filter(|&max| ready - now > max) {
                return Err(would_wait(ready - now, max));
            }
            // Ordering: AcqRel on success (publishes this grant's spacing
            // and follows the one it replaces); Acquire on failure.
            match cell.compare_exchange_weak(
                next,
                ready + span,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Grant::new(next, ready, now, permits)),
                Err(current) => next = current,
            }
        }
    }

    fn recovery(&self, cell: &AtomicU64, now: u64) -> Recovery {
        // Ordering: Acquire; a snapshot of the latest grant's spacing.
        let next = cell.load(Ordering::Acquire);
        recovery(next, next, now, true)
    }
}

/// Burst-ratio mode: the ideal timeline bounds the average, the actual one
/// spaces ops at least a burst slice apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dual {
    op: u64,
    burst: u64,
}

/// A burst-ratio key's two timelines.
#[derive(Debug)]
pub(crate) struct Timelines {
    ideal: AtomicU64,
    actual: AtomicU64,
}

impl Dual {
    /// Spaces the slot `slot`, taken on `ideal`, on `actual`.
    #[inline]
    fn space(
        &self,
        t: &Timelines,
        slot: u64,
        span: u64,
        permits: u32,
        max: Option<u64>,
        now: u64,
    ) -> Result<Grant, AcquireError> {
        let op = Spaced {
            slot,
            span,
            burst_span: u64::from(permits).saturating_mul(self.burst),
            now,
            present: now,
            max,
            limit: SCHEDULE_LIMIT,
        };
        // Ordering: Acquire, pairing with the AcqRel exchange in `space`, so
        // an earlier grant's spacing is seen before ours is computed.
        let actual = t.actual.load(Ordering::Acquire);
        let start = space(&t.ideal, &t.actual, actual, op)?;
        Ok(Grant::new(slot, start, now, permits))
    }
}

impl Rule for Dual {
    type Cell = Timelines;

    fn fresh(&self, now: u64) -> Timelines {
        Timelines {
            ideal: AtomicU64::new(now),
            actual: AtomicU64::new(now),
        }
    }

    #[inline(always)]
    fn reserve(
        &self,
        t: &Timelines,
        permits: u32,
        max_wait: Option<u64>,
        now: u64,
    ) -> Result<Grant, AcquireError> {
        let span = span_of(permits, self.op)?;
        let Some(max) = max_wait else {
            let slot = take(&t.ideal, span, SCHEDULE_LIMIT)?;
            return self.space(t, slot, span, permits, None, now);
        };
        let taken = dual_bounded(
            &t.ideal,
            &t.actual,
            span,
            keyed_bound(max),
            || now,
            |now| now,
        )?;
        // Spaced on `actual` loaded again, as an unbounded op.
        self.space(t, taken.slot, span, permits, Some(max), now)
    }

    fn recovery(&self, t: &Timelines, now: u64) -> Recovery {
        // Ordering: Acquire for both; a snapshot of the latest grants.
        let ideal = t.ideal.load(Ordering::Acquire);
        recovery(ideal, t.actual.load(Ordering::Acquire), now, false)
    }
}
