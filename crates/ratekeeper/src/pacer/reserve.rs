//! The Pacer's reservations: the specialised forms of the
//! [decision](super::decision) for its modes (average and compensation on
//! the accumulator, strict and burst on two timelines), with and without a
//! maximum wait, plus the cached clock and the excuse of a wait's lateness.

use std::time::Duration;

use super::decision::{self, Bound, Spaced, Taken, MAX_SPAN};
use super::params::{
    kind, shift, tag, CACHED_CLOCK, IDLE, KIND_COMPENSATE, KIND_DUAL, NOT_PLAIN, SPACED,
};
use super::Pacer;
use crate::clock::Clock;
use crate::limiter::{AcquireError, Grant, RateLimiter};
use crate::sync::Ordering;
use crate::wait::saturating_nanos;

impl<C: Clock> Pacer<C> {
    /// Reserves `nanos` ns of schedule instead of whole permits (nosqlbench's
    /// `acquire(nanos)`); strict and burst spacing scales alike. The grant
    /// reports 0 permits.
    ///
    /// # Errors
    ///
    /// [`AcquireError::ZeroPermits`] for 0 ns, [`AcquireError::ScheduleExhausted`]
    /// above 2^62 ns, [`AcquireError::WouldWait`] as for
    /// [`reserve`](RateLimiter::reserve).
    pub fn reserve_nanos(
        &self,
        nanos: u64,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        if nanos == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        if nanos > MAX_SPAN {
            return Err(AcquireError::ScheduleExhausted);
        }
        // Ordering: Acquire, as in `reserve`.
        let mode = self.params.mode.load(Ordering::Acquire);
        // Ordering: Relaxed for both; configuration read after the mode word.
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
        let burst_span = (u128::from(nanos) * u128::from(burst) / u128::from(op.max(1))) as u64;
        self.reserve_span(nanos, burst_span, 0, max_wait, mode)
    }

    /// [`reserve_nanos`](Self::reserve_nanos), then a blocking wait.
    ///
    /// # Errors
    ///
    /// As [`reserve_nanos`](Self::reserve_nanos) without a maximum wait.
    pub fn acquire_nanos(&self, nanos: u64) -> Result<Grant, AcquireError> {
        let g = self.reserve_nanos(nanos, None)?;
        Ok(self.wait_for(g))
    }

    /// Reserves under the mode word `mode` the caller loaded (with Acquire)
    /// before reading the slices `span` and `burst_span` were computed from;
    /// starts an idle pacer first.
    #[inline]
    pub(super) fn reserve_span(
        &self,
        span: u64,
        burst_span: u64,
        permits: u32,
        max_wait: Option<Duration>,
        mode: u64,
    ) -> Result<Grant, AcquireError> {
        let (mode, span, burst_span) = if mode & IDLE != 0 {
            self.start_for(span, burst_span, permits)?
        } else {
            (mode, span, burst_span)
        };
        let cached = mode & CACHED_CLOCK != 0;
        let kind = kind(mode);
        let dual = kind == KIND_DUAL && burst_span > 0;
        match (max_wait, dual) {
            (None, false) => self.reserve_accumulator(span, permits, mode, cached),
            (None, true) => self.reserve_dual(span, burst_span, permits, mode),
            (Some(max), false) => {
                self.reserve_accumulator_bounded(span, permits, mode, cached, max)
            }
            (Some(max), true) => self.reserve_dual_bounded(span, burst_span, permits, mode, max),
        }
    }

    /// Starts an idle pacer, then returns the mode word and slices read again
    /// (a grant's tag must come from a mode word loaded before its slices).
    #[cold]
    #[inline(never)]
    fn start_for(
        &self,
        span: u64,
        burst_span: u64,
        permits: u32,
    ) -> Result<(u64, u64, u64), AcquireError> {
        self.start();
        // Ordering: Acquire, as in `reserve`; Relaxed for the slices after
        // it. A stop racing this start may have made the pacer idle again:
        // the reservation goes on the running schedule once more, as one
        // that missed the stop does.
        let mode = self.params.mode.load(Ordering::Acquire) & !IDLE;
        if permits == 0 {
            return Ok((mode, span, burst_span)); // `reserve_nanos`: never cancelled
        }
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
        // A rate change since the caller checked: decided at the new rate.
        let span = decision::span_of(permits, op)?;
        Ok((mode, span, u64::from(permits).saturating_mul(burst)))
    }

    /// Reads the clock and publishes the reading as the last-seen clock.
    #[inline]
    pub(super) fn refresh(&self, seen: u64) -> u64 {
        let now = self.now();
        if now > seen {
            // Ordering: Relaxed. `last_seen` is a hint whose only requirement is
            // that it is a value the clock returned, hence never later than the
            // present; it orders no other memory. A racing store may briefly
            // move it back to an older reading, which is still a valid bound.
            self.last_seen.store(now, Ordering::Relaxed);
        }
        now
    }

    /// Plain average mode ([`NOT_PLAIN`] clear), no maximum wait: one
    /// `fetch_add`, then one clock read. `reserve_accumulator` on that mode
    /// word with its tests folded away: the grant is ready at `now`, kept
    /// as the clock's reading (`at(now())` is `reading()`).
    #[inline(always)]
    pub(super) fn reserve_plain(
        &self,
        span: u64,
        permits: u32,
        mode: u64,
    ) -> Result<Grant, AcquireError> {
        debug_assert_eq!(mode & NOT_PLAIN, 0);
        let slot = decision::take(&self.ideal, span, self.params.limit)?;
        // As in `reserve_accumulator`: read after taking the slot.
        let started = self.reading();
        Ok(Grant::new(self.at_granted(slot), started, started, permits).with_claim(tag(mode)))
    }

    /// Average and compensation modes, no maximum wait: one `fetch_add`.
    #[inline(always)]
    pub(super) fn reserve_accumulator(
        &self,
        span: u64,
        permits: u32,
        mode: u64,
        cached: bool,
    ) -> Result<Grant, AcquireError> {
        // Loaded before the fetch_add, whose lock prefix would otherwise hold
        // this load back: a clock reading stored earlier is still a lower
        // bound of the present after the add. Ordering: Relaxed; see `refresh`.
        let seen = if cached {
            self.last_seen.load(Ordering::Relaxed)
        } else {
            0
        };
        let slot = decision::take(&self.ideal, span, self.params.limit)?;
        if cached && slot < seen {
            // Known due without reading the clock: calling-overhead compensation.
            let ready = self.spaced(mode, seen);
            return Ok(self.grant(slot, ready, seen, permits).with_claim(tag(mode)));
        }
        // The exact path reads the clock after taking its slot and publishes
        // nothing: no second shared line is written per grant.
        let now = if cached {
            self.refresh(seen)
        } else {
            self.now()
        };
        if kind(mode) == KIND_COMPENSATE {
            self.compensate(slot, span, now, shift(mode));
        }
        let ready = self.spaced(mode, now);
        Ok(self.grant(slot, ready, now, permits).with_claim(tag(mode)))
    }

    /// `now`, or the start of the spacing a strict or burst op reserved
    /// before a change to a mode without spacing, if later (see [`SPACED`]).
    #[inline(always)]
    fn spaced(&self, mode: u64, now: u64) -> u64 {
        if mode & SPACED == 0 {
            return now;
        }
        // Ordering: Acquire, pairing with the dual paths' AcqRel writes of
        // `actual` (the spacing they published before the change).
        now.max(self.actual.load(Ordering::Acquire))
    }

    /// Burst compensation: on a clock refresh that finds the schedule behind
    /// by more than this op's own span, forfeit `gap >> shift` of the gap.
    #[inline]
    pub(super) fn compensate(&self, slot: u64, span: u64, now: u64, shift: u32) {
        let end = slot.saturating_add(span);
        if now > end {
            // A gap that is only the lateness of a wait is not forfeited
            // (see `present`).
            let now = self.present_for_compensation(now, end);
            let forfeit = decision::forfeit_gap(&self.ideal, end, now, shift);
            if forfeit > 0 {
                // Ordering: Relaxed; a statistic.
                self.accumulated.fetch_add(forfeit, Ordering::Relaxed);
            }
        }
    }

    /// `now` less the lateness a wait excused (see `released`), for burst
    /// compensation; clears the lag once the schedule has caught up with it.
    #[inline]
    fn present_for_compensation(&self, now: u64, end: u64) -> u64 {
        // Ordering: Relaxed; see `present`.
        let lag = self.lag.load(Ordering::Relaxed);
        if lag == 0 {
            return now;
        }
        let present = now.saturating_sub(lag);
        if present <= end {
            return present;
        }
        // Behind by more than the excused lateness: the excuse is spent.
        // Ordering: Relaxed, as in `present`.
        let _ = self
            .lag
            .compare_exchange(lag, 0, Ordering::Relaxed, Ordering::Relaxed);
        present
    }

    /// The earliest start for a strict or burst reservation at `now`: `now`
    /// less a late wait's excused lateness until the actual timeline catches
    /// up (see [Waiting](super#waiting)), then the lag is cleared.
    #[inline(always)]
    fn present(&self, now: u64) -> u64 {
        // Ordering: Relaxed; on the cache line this reservation just wrote,
        // and a hint: a stale value only forfeits or excuses lateness
        // already bounded by `released`'s cap.
        let lag = self.lag.load(Ordering::Relaxed);
        if lag == 0 {
            return now;
        }
        // Ordering: Relaxed, as above.
        if self.actual.load(Ordering::Relaxed) >= now {
            // Caught up: clear the lag we read (a newer one stays).
            let _ = self
                .lag
                .compare_exchange(lag, 0, Ordering::Relaxed, Ordering::Relaxed);
            return now;
        }
        now.saturating_sub(lag)
    }

    /// Strict and burst modes, no maximum wait: a clock reading, `fetch_add`
    /// for the slot, then (only when not exactly on schedule) a
    /// compare-exchange on `actual`, on the slot's cache line.
    #[inline(always)]
    pub(super) fn reserve_dual(
        &self,
        span: u64,
        burst_span: u64,
        permits: u32,
        mode: u64,
    ) -> Result<Grant, AcquireError> {
        // A fresh reading, never the cached `last_seen`, and taken before the
        // slot: the add on `ideal` and the load and compare-exchange of
        // `actual` then follow each other on one cache line, which another
        // core rarely takes away in between (module docs, "Strict and burst
        // modes under contention"). A reading taken before the add is still
        // a lower bound of the present when the grant is decided.
        let started = self.reading();
        let now = started - self.params.origin;
        let slot = decision::take(&self.ideal, span, self.params.limit)?;
        // Ordering: Acquire, pairing with the AcqRel compare-exchange in
        // `decision::space`, so the spacing decided by an earlier op is seen
        // before ours is computed.
        let actual = self.actual.load(Ordering::Acquire);
        let op = Spaced {
            slot,
            span,
            burst_span,
            now,
            present: self.present(now),
            max: None,
            limit: self.params.limit,
        };
        let start = decision::space(&self.ideal, &self.actual, actual, op)?;
        // `space` returns its slot or a start below the limit.
        let (scheduled, ready) = (self.at_granted(slot), self.at_granted(start));
        Ok(Grant::new(scheduled, ready, started, permits).with_claim(tag(mode)))
    }

    /// Average and compensation modes with a maximum wait: the accumulator
    /// decision's bounded loop ([`decision::take_bounded`]) on the cached or
    /// a fresh clock, once more on a fresh reading before refusing.
    fn reserve_accumulator_bounded(
        &self,
        span: u64,
        permits: u32,
        mode: u64,
        cached: bool,
        max_wait: Duration,
    ) -> Result<Grant, AcquireError> {
        let bound = self.bound(max_wait);
        // The last-seen clock the taken slot was decided on (0 uncached).
        let mut seen = 0;
        let taken = decision::take_bounded(&self.ideal, span, bound, |slot| {
            let now = if cached {
                // Ordering: Relaxed; see `refresh`.
                seen = self.last_seen.load(Ordering::Relaxed);
                if slot < seen {
                    seen
                } else {
                    self.refresh(seen)
                }
            } else {
                self.now()
            };
            (now, self.spaced(mode, slot.max(now)))
        })
        .map_err(|e| with_max_wait(e, max_wait))?;
        let Taken { slot, now, ready } = taken;
        if kind(mode) == KIND_COMPENSATE && !(cached && slot < seen) {
            self.compensate(slot, span, now, shift(mode));
        }
        Ok(self.grant(slot, ready, now, permits).with_claim(tag(mode)))
    }

    /// Strict and burst modes with a maximum wait: the dual decision's
    /// bounded loop ([`decision::dual_bounded`]) on a fresh reading per try
    /// (as in `reserve_dual`), less excused lateness, once more on a fresh
    /// reading before refusing; then the spacing on the actual timeline.
    fn reserve_dual_bounded(
        &self,
        span: u64,
        burst_span: u64,
        permits: u32,
        mode: u64,
        max_wait: Duration,
    ) -> Result<Grant, AcquireError> {
        let bound = self.bound(max_wait);
        let taken = decision::dual_bounded(
            &self.ideal,
            &self.actual,
            span,
            bound,
            || self.now(),
            |now| self.present(now),
        )
        .map_err(|e| with_max_wait(e, max_wait))?;
        // The slot is ours; now the spacing on the actual timeline
        // (another op may have moved `actual` since we looked).
        let op = Spaced {
            slot: taken.slot,
            span,
            burst_span,
            now: taken.now,
            present: taken.present,
            max: Some(bound.max),
            limit: bound.limit,
        };
        let start = decision::space(&self.ideal, &self.actual, taken.actual, op)
            .map_err(|e| with_max_wait(e, max_wait))?;
        Ok(self
            .grant(taken.slot, start, taken.now, permits)
            .with_claim(tag(mode)))
    }

    /// The Pacer's bound: its schedule's limit and `max_wait`, deciding
    /// once more on a fresh reading before refusing.
    #[inline]
    fn bound(&self, max_wait: Duration) -> Bound {
        Bound {
            limit: self.params.limit,
            max: saturating_nanos(max_wait),
            retry_on_fresh_reading: true,
        }
    }
}

pub(super) fn would_wait(wait: u64, max_wait: Duration) -> AcquireError {
    AcquireError::WouldWait {
        wait: Duration::from_nanos(wait),
        max_wait,
    }
}

/// `e` with a refused wait's maximum as the caller gave it.
fn with_max_wait(e: AcquireError, max_wait: Duration) -> AcquireError {
    match e {
        AcquireError::WouldWait { wait, .. } => AcquireError::WouldWait { wait, max_wait },
        e => e,
    }
}
