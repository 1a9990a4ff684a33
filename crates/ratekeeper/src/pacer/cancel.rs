//! Cancelling a reservation: giving the latest one's slots back to the
//! schedule, or keeping an earlier one for the next caller of its size (see
//! [Cancelling a reservation](super#cancelling-a-reservation)).

use super::limiter::Control;
use super::params::{age, kind, next_epoch, tag, EPOCH, EPOCH_SHIFT, IDLE, KIND_DUAL, TAGGED};
use super::Pacer;
use crate::clock::Clock;
use crate::internal::handoff::Handoff;
use crate::limiter::Grant;
use crate::sync::{lock, Ordering};

impl<C: Clock> Pacer<C> {
    /// [`RateLimiter::cancel`](crate::RateLimiter::cancel): gives back the slots of the pacer's latest
    /// reservation, or keeps an earlier one for the next caller of its
    /// size. Takes the configuration lock; O(1) plus the hand-off's scan.
    pub(super) fn cancel_grant(&self, grant: &Grant) -> bool {
        let mut control = lock(&self.control);
        // Ordering: Relaxed: written only under the lock we hold.
        let mode = self.params.mode.load(Ordering::Relaxed);
        if mode & IDLE != 0 {
            return false;
        }
        let now = self.clock.now_nanos();
        // Ordering: Relaxed: written only under the lock we hold.
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        let stashable = |reset_tag| {
            // One of this pacer's, made since its latest reset, on slots it
            // handed out (before the next free one). Ordering: Acquire, as
            // `next_slot_nanos`; a stale (lower) value only refuses.
            let next = self.ideal.load(Ordering::Acquire);
            let end = u64::from(grant.permits())
                .checked_mul(op)
                .and_then(|span| self.on_timeline(grant.scheduled_nanos()).checked_add(span));
            grant.claim().is_some_and(|t| {
                Handoff::issued_since(t, reset_tag, |t| age(mode, t))
                    && end.is_some_and(|end| end <= next)
            })
        };
        self.handoff.cancel(grant, now, stashable, || {
            self.give_back(&mut control, mode, grant)
        })
    }

    /// Keeps `grant`, cancelled, for the next caller of its size on this
    /// pacer, without ever moving this pacer's schedule: for a
    /// [`ShardedPacer`](crate::ShardedPacer), whose grants do not say which
    /// shard made them. The slots were issued once (by a sibling shard, on
    /// the same origin and epochs) and are used once, by that next caller.
    /// Refused as [`cancel`](crate::RateLimiter::cancel) refuses: a grant whose
    /// ready time has passed, one already cancelled or handed on, one from
    /// before the latest reset (as far as this pacer's epochs tell), and
    /// while the pacer is stopped.
    ///
    /// `fresh`: whether the shard that made the grant says it was made
    /// since its latest reset ([`issued_since_reset`](Self::issued_since_reset)).
    pub(crate) fn keep_for_next(&self, grant: &Grant, fresh: bool) -> bool {
        let _control = lock(&self.control);
        // Ordering: Relaxed: written only under the lock we hold.
        let mode = self.params.mode.load(Ordering::Relaxed);
        if mode & IDLE != 0 {
            return false;
        }
        let now = self.clock.now_nanos();
        self.handoff.cancel(grant, now, |_| fresh, || false)
    }

    /// Whether `grant` carries this pacer's tag from since its latest reset.
    pub(crate) fn issued_since_reset(&self, grant: &Grant) -> bool {
        // Ordering: Relaxed; a snapshot (a reset racing this only makes a
        // slot issued before it usable once, by one caller).
        let mode = self.params.mode.load(Ordering::Relaxed);
        let reset_tag = self.handoff.reset_tag();
        grant
            .claim()
            .is_some_and(|t| Handoff::issued_since(t, reset_tag, |t| age(mode, t)))
    }

    /// Starts this (fresh) pacer's epochs at `base`, so that its grants'
    /// tags differ from those of sibling shards built with other bases.
    pub(crate) fn set_epoch_base(&mut self, base: u32) {
        // Ordering: Relaxed for both; the pacer is ours alone (`&mut`), not
        // shared yet. (Not `get_mut`: loom's atomics lack it.)
        let mode = self.params.mode.load(Ordering::Relaxed);
        let mode = (mode & !EPOCH) | ((u64::from(base) << EPOCH_SHIFT) & EPOCH) | TAGGED;
        self.params.mode.store(mode, Ordering::Relaxed);
        self.handoff = Handoff::new(tag(mode));
    }

    /// Whether this pacer's handoff knows `grant` (see `keep_for_next`).
    pub(crate) fn keeps(&self, grant: &Grant) -> bool {
        self.handoff.knows(grant)
    }

    /// Moves the schedule back over `grant` if it is the latest
    /// reservation, under the lock (`control`) and the mode word `mode`
    /// read under it; see [Cancelling a
    /// reservation](super#cancelling-a-reservation).
    fn give_back(&self, control: &mut Control, mode: u64, grant: &Grant) -> bool {
        let Some(tag) = grant.claim() else {
            return false;
        };
        // Ordering: Relaxed for both: written only under the lock we hold.
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
        let start = self.on_timeline(grant.scheduled_nanos());
        let Some(end) = u64::from(grant.permits())
            .checked_mul(op)
            .and_then(|span| start.checked_add(span))
        else {
            return false;
        };
        if !control.window.allows(age(mode, tag), end) {
            return false;
        }
        // The grant is the latest: nothing was reserved after it. Ordering:
        // AcqRel on success, ordered with reservations like one of them (a
        // reservation that takes the slots again happens after this);
        // Relaxed on failure, which reads nothing we use.
        if self
            .ideal
            .compare_exchange(end, start, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        let ready = self.on_timeline(grant.ready_nanos());
        if kind(mode) == KIND_DUAL && ready != start {
            // Off its slot, the grant moved `actual` to its start plus its
            // burst spacing. Move it back to the start if no later op moved
            // it since (one that did built on it; it stays). A later op sets
            // `actual` past this value, never back to it, so this cannot undo
            // anyone else's spacing. Ordering: AcqRel/Relaxed, as for `ideal`.
            let spaced = ready.saturating_add(u64::from(grant.permits()).saturating_mul(burst));
            let _ =
                self.actual
                    .compare_exchange(spaced, ready, Ordering::AcqRel, Ordering::Relaxed);
        }
        control.window.record(start);
        // Ordering: Release, as in `publish_reset`: a grant tagged with the
        // new epoch took its slot after the give-back.
        self.params.mode.store(next_epoch(mode), Ordering::Release);
        true
    }
}
