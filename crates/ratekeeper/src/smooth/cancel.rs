//! Giving back a smooth limiter's latest reservation: the inverse of its
//! step, committed as a new core (see
//! [Cancelling a reservation](super#cancelling-a-reservation)).

use super::decision::pack;
use super::limiter::{Core, Smooth, FROZEN, NONE_STORED};
use crate::clock::Clock;
use crate::internal::cancel::CancelWindow;
use crate::internal::handoff::Handoff;
use crate::limiter::Grant;
use crate::sync::{lock, Ordering};

impl<C: Clock> Smooth<C> {
    /// [`RateLimiter::cancel`](crate::RateLimiter::cancel): gives back the
    /// latest reservation if the state it started from is known exactly,
    /// else keeps the grant for the next caller. O(1) under the change
    /// mutex, plus one allocation when it gives back.
    ///
    /// A reservation that waited (`moment > now`) found `next_free` at
    /// `moment` and did not resync, so the state it started from is
    /// `(s0, moment)`, where `s0` is the stored permits it found: `s1 + n`
    /// if it left `s1 > 0` (it spent `n`; exact below 2^53), and 0 if its
    /// tag says it found none. Computing Guava's reservation again from that
    /// state must give exactly the current word and the grant's moment;
    /// then the core is retired and a new one published with the state
    /// before the grant.
    pub(super) fn give_back(&self, grant: &Grant) -> bool {
        let mut window = lock(&self.change);
        let now = self.clock.now_nanos();
        // Under `change`, the current core is `first` until it is frozen.
        // Ordering: Acquire, see `Core::word`.
        if self.first.word.load(Ordering::Acquire) != FROZEN {
            self.cancel_on(&self.first, grant, now, &mut window)
        } else {
            let core = self.later.load();
            self.cancel_on(&core, grant, now, &mut window)
        }
    }

    /// [`Smooth::give_back`] on the current `core`, under `change`: back to
    /// the state if it is the latest reservation, else to the handoff.
    fn cancel_on(
        &self,
        core: &Core,
        grant: &Grant,
        now: u64,
        window: &mut CancelWindow<i64>,
    ) -> bool {
        // A grant that could go at once is due: nothing to hand on.
        let stashable = |reset_tag| {
            grant.ready_nanos() > grant.started_nanos()
                && grant
                    .claim()
                    .is_some_and(|t| Handoff::issued_since(t, reset_tag, |t| core.age(t)))
        };
        self.handoff.cancel(grant, now, stashable, || {
            let Some(tag) = grant.claim() else {
                return false;
            };
            let (ready, started) = (grant.ready_nanos(), grant.started_nanos());
            // Ready when decided (it may have resynced: the state before it
            // is not in the grant), or a wait that saturated.
            if ready <= started || ready == u64::MAX {
                return false;
            }
            self.give_back_on(core, grant, tag, window)
        })
    }

    fn give_back_on(
        &self,
        core: &Core,
        grant: &Grant,
        tag: u32,
        window: &mut CancelWindow<i64>,
    ) -> bool {
        let (ready, started) = (grant.ready_nanos(), grant.started_nanos());
        let permits = grant.permits();
        // The reservation's clock reading, as `read` made it, and its moment.
        let now = self.ticks_since_created(started);
        let Some(moment) = i64::try_from(self.res.ticks(ready - started))
            .ok()
            .and_then(|wait| now.checked_add(wait))
        else {
            return false;
        };
        // Ordering: Acquire, see `Core::word`.
        let word = core.word.load(Ordering::Acquire);
        if word == FROZEN {
            return false;
        }
        let after = core.state(word);
        let Some(s0) = stored_before(after.stored_permits, permits, tag) else {
            return false;
        };
        let before = pack(s0, moment);
        let mut st = core.state(before);
        if st.reserve(permits, now) != moment
            || pack(st.stored_permits, st.next_free) != word
            || st.next_free <= moment
            || !window.allows(core.age(tag), after.next_free)
        {
            // Not the latest reservation (or not this one), or one that
            // cost no time: nothing this grant can give back.
            return false;
        }
        // Retire the core. Ordering: AcqRel on success, as `set_rate`'s
        // swap; Relaxed on failure (a reservation came first: this grant is
        // no longer the latest, and nothing changed).
        if core
            .word
            .compare_exchange(word, FROZEN, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.later
            .store(Core::new(core.state(before), core.epoch.next().next()));
        window.record(moment);
        true
    }
}

/// The stored permits a reservation of `permits` found, from the `s1` it
/// left and its grant's tag: `s1 + permits` if it left some (exact below
/// 2^53), 0 if the tag says it found none, and `None` where that is lost
/// (it spent the last stored permits) or may have rounded.
fn stored_before(s1: f64, permits: u32, tag: u32) -> Option<f64> {
    let s0 = if s1 > 0.0 {
        s1 + f64::from(permits)
    } else if s1.to_bits() == 0 && tag & NONE_STORED != 0 {
        0.0
    } else {
        return None; // it spent the last stored permits: how many is lost
    };
    // 2^53: `s0 − n` may have rounded.
    (s0 < 9_007_199_254_740_992.0).then_some(s0)
}
