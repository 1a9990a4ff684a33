//! The Pacer's arithmetic over one key's compact state, for
//! [`Keyed`](crate::keyed::Keyed): the same decisions as a [`Pacer`] of the
//! same configuration (the slot, the ready time, refusals), without the
//! parts a per-key limiter has no use for (cancels, the waiting room, rate
//! changes, the cached clock, the excuse of a wait's lateness).
//!
//! * Average and compensation modes keep one word, the accumulator
//!   (`ideal`): a grant of `span` takes the slot `ideal` and moves it to
//!   `ideal + span`; burst compensation then forfeits `gap >> shift` of a
//!   gap behind the clock.
//! * Strict mode (a burst slice equal to the slice) keeps one word too: the
//!   next start `max(actual, ideal)` of the [`Pacer`]'s two timelines, which
//!   is all its decisions depend on (a grant goes at `max(next, now)` and
//!   moves `next` to that plus its span). A grant reports that slot as its
//!   scheduled time: the in-memory Pacer reports its ideal timeline, which
//!   lags it by every late arrival's lateness.
//! * Burst-ratio mode (a burst slice below the slice) needs both timelines:
//!   two words, decided as the Pacer's `reserve_dual` does.
//!
//! Times are the keyed limiter's clock readings; a slot at or past 2^63 ns
//! is [`AcquireError::ScheduleExhausted`].

use super::{Pacer, KIND_AVERAGE, KIND_COMPENSATE, KIND_DUAL, KIND_SHIFT, MAX_SPAN};
use crate::clock::Clock;
use crate::grant::{AcquireError, Grant};
use crate::limiter::Recovery;
use crate::store::{would_wait, Rule};
use crate::sync::{AtomicU64, Ordering};

/// The last clock reading a slot may take.
const LIMIT: u64 = 1 << 63;

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

impl<C: Clock> Pacer<C> {
    /// The per-key rule of this pacer's current configuration.
    pub(crate) fn keyed_rule(&self) -> PacerRule {
        // Ordering: Relaxed for the three; a configuration snapshot of a
        // pacer that is not shared yet.
        let mode = self.params.mode.load(Ordering::Relaxed);
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
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

/// `permits` slices of `op` ns, or the Pacer's refusal of a span too long.
#[inline]
fn span_of(permits: u32, op: u64) -> Result<u64, AcquireError> {
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

/// Average (`shift: None`) and burst-compensation modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accumulator {
    op: u64,
    shift: Option<u32>,
}

impl Accumulator {
    /// Burst compensation: a grant that finds the schedule behind the clock
    /// by more than its own span forfeits `gap >> shift` of the gap.
    #[inline]
    fn compensate(&self, cell: &AtomicU64, slot: u64, span: u64, now: u64) {
        let Some(shift) = self.shift else { return };
        let end = slot + span;
        if now > end {
            let forfeit = (now - end) >> shift;
            if forfeit > 0 {
                // Ordering: Relaxed, as the Pacer's: moving the schedule on
                // only makes later slots later; the grant was published by
                // the AcqRel write that took the slot.
                cell.fetch_add(forfeit, Ordering::Relaxed);
            }
        }
    }
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
            // Ordering: AcqRel, so this grant happens after every grant
            // whose add came earlier on this key (the Pacer's promise).
            let slot = cell.fetch_add(span, Ordering::AcqRel);
            if slot >= LIMIT {
                // Ordering: Relaxed; returning time nobody was granted.
                cell.fetch_sub(span, Ordering::Relaxed);
                return Err(AcquireError::ScheduleExhausted);
            }
            self.compensate(cell, slot, span, now);
            return Ok(Grant::new(slot, slot.max(now), now, permits));
        };
        // Ordering: Acquire, to decide on the latest published schedule.
        let mut slot = cell.load(Ordering::Acquire);
        loop {
            if slot >= LIMIT {
                return Err(AcquireError::ScheduleExhausted);
            }
            let ready = slot.max(now);
            if ready - now > max {
                return Err(would_wait(ready - now, max));
            }
            // Ordering: AcqRel on success, as the add above; Acquire on
            // failure, to decide again on the winner's schedule.
            match cell.compare_exchange_weak(slot, slot + span, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.compensate(cell, slot, span, now);
                    return Ok(Grant::new(slot, ready, now, permits));
                }
                Err(current) => slot = current,
            }
        }
    }

    fn recovery(&self, cell: &AtomicU64, now: u64) -> Recovery {
        // Ordering: Acquire; the latest grant's schedule (a snapshot).
        let ideal = cell.load(Ordering::Acquire);
        match ideal.cmp(&now) {
            std::cmp::Ordering::Greater => Recovery::Debt { nanos: ideal - now },
            std::cmp::Ordering::Equal => Recovery::Fresh,
            std::cmp::Ordering::Less => Recovery::Credit,
        }
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
            if ready >= LIMIT {
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
        if next > now {
            Recovery::Debt { nanos: next - now }
        } else {
            Recovery::Fresh
        }
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
    /// Takes the slot `slot` (already added to `ideal`) and spaces it on
    /// `actual`; refuses past `max` by handing the slot back (if no later
    /// slot was taken since; if one was, the slot is forfeited: fewer
    /// grants, never more, as the Pacer's documented race).
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
        let burst_span = u64::from(permits).saturating_mul(self.burst);
        // Ordering: Acquire, pairing with the AcqRel exchange below, so an
        // earlier grant's spacing is seen before ours is computed.
        let mut actual = t.actual.load(Ordering::Acquire);
        loop {
            let start = actual.max(slot).max(now);
            if let Some(max) = max.filter(|&max| start - now > max) {
                hand_back(t, slot, span);
                return Err(would_wait(start - now, max));
            }
            if start == slot {
                // Exactly on schedule: `actual` may stay behind (the Pacer's).
                return Ok(Grant::new(slot, start, now, permits));
            }
            if start >= LIMIT {
                hand_back(t, slot, span);
                return Err(AcquireError::ScheduleExhausted);
            }
            // Ordering: AcqRel on success (publish our spacing, see earlier
            // ones); Acquire on failure, to retry on the freshest value.
            match t.actual.compare_exchange_weak(
                actual,
                start.saturating_add(burst_span),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Grant::new(slot, start, now, permits)),
                Err(current) => actual = current,
            }
        }
    }
}

/// Moves `ideal` back over a slot that was taken and not granted, if it is
/// still the latest.
fn hand_back(t: &Timelines, slot: u64, span: u64) {
    // Ordering: AcqRel/Relaxed: success publishes the rollback like a
    // reservation; failure (a later slot was taken) needs nothing.
    let _ = t
        .ideal
        .compare_exchange(slot + span, slot, Ordering::AcqRel, Ordering::Relaxed);
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
            // Ordering: AcqRel, as the accumulator's add.
            let slot = t.ideal.fetch_add(span, Ordering::AcqRel);
            if slot >= LIMIT {
                // Ordering: Relaxed; returning time nobody was granted.
                t.ideal.fetch_sub(span, Ordering::Relaxed);
                return Err(AcquireError::ScheduleExhausted);
            }
            return self.space(t, slot, span, permits, None, now);
        };
        loop {
            // Ordering: Acquire for both, to decide on the latest state.
            let slot = t.ideal.load(Ordering::Acquire);
            let actual = t.actual.load(Ordering::Acquire);
            let start = actual.max(slot).max(now);
            if slot >= LIMIT || start >= LIMIT {
                return Err(AcquireError::ScheduleExhausted);
            }
            if start - now > max {
                return Err(would_wait(start - now, max));
            }
            // Ordering: AcqRel on success, as the add; Acquire on failure.
            if t.ideal
                .compare_exchange_weak(slot, slot + span, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return self.space(t, slot, span, permits, Some(max), now);
            }
        }
    }

    fn recovery(&self, t: &Timelines, now: u64) -> Recovery {
        // Ordering: Acquire for both; a snapshot of the latest grants.
        let ideal = t.ideal.load(Ordering::Acquire);
        let busy = ideal.max(t.actual.load(Ordering::Acquire));
        if busy > now {
            Recovery::Debt { nanos: busy - now }
        } else if ideal == now {
            Recovery::Fresh
        } else {
            Recovery::Credit
        }
    }
}
