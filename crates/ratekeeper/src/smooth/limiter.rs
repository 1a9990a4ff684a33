//! [`Smooth`]: the in-memory state both smooth limiters share, one atomic
//! word decided by [`decide_on`] and retired on rate changes and cancels.

use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::decision::{decide_on, long, unpack, with_max_wait, Kind, State};
use super::error::{check_rate, SmoothError};
use super::resolution::Resolution;
use super::rule::SmoothRule;
use crate::clock::Clock;
use crate::internal::cancel::{CancelWindow, Epoch};
use crate::internal::handoff::Handoff;
use crate::limiter::{AcquireError, Grant, Recovery, WaitStats};
use crate::sync::{lock, AtomicU128, Mutex, Ordering, Swap};
use crate::wait::WaitPolicy;

/// The word of a retired [`Core`]: no state packs to it (its permits would
/// be a NaN with an all-ones payload, which no checked input or arithmetic
/// makes).
pub(super) const FROZEN: u128 = u128::MAX;

/// Tag bit: the reservation found no stored permits (see `Smooth::give_back`).
pub(super) const NONE_STORED: u32 = 1;

/// One rate's parameters with the state they apply to. The parameters never
/// change: a rate change freezes the word and publishes a new core, so a
/// reservation commits only to the core whose parameters it used.
#[derive(Debug)]
pub(super) struct Core {
    /// This core's epoch, moved on by two per new core (the low tag bit is
    /// [`NONE_STORED`]).
    pub(super) epoch: Epoch,
    /// `pack(stored_permits, next_free)`, or [`FROZEN`] once retired.
    ///
    /// Ordering: `Acquire` loads, `AcqRel` successful compare-exchanges, so
    /// a state's reader happens after the clock reading it was computed
    /// from; the clock is read after the load. Nothing else is published.
    pub(super) word: CachePadded<AtomicU128>,
    /// `max_permits`, `stable_interval` and the kind (its state fields unused).
    pub(super) params: State,
}

impl Core {
    pub(super) fn new(state: State, epoch: Epoch) -> Core {
        let word = super::decision::pack(state.stored_permits, state.next_free);
        Core {
            epoch,
            word: CachePadded::new(AtomicU128::new(word)),
            params: state,
        }
    }

    /// The tag of a grant committed to this core from `word`.
    #[inline(always)]
    fn tag(&self, word: u128) -> u32 {
        self.epoch.tag() | u32::from((word >> 64) as u64 == 0)
    }

    /// How many cores ago a grant tagged `tag` was committed.
    pub(super) fn age(&self, tag: u32) -> u32 {
        self.epoch.age(tag & !NONE_STORED) / 2
    }

    /// The full state for a (live) word.
    #[inline(always)]
    pub(super) fn state(&self, word: u128) -> State {
        unpack(&self.params, word)
    }
}

/// The shared core of both limiters.
///
/// # Lock-free reservations
///
/// A reservation loads the current [`Core`] and its word and commits
/// Guava's step with [`decide_on`] by compare-exchange, retrying on a newer
/// value. A rate change or a cancel, under the `change` mutex, swaps the
/// word to [`FROZEN`] and publishes a new core (a cancel's holds the state
/// before the reservation: its inverse). A reservation finding its core
/// frozen waits for the mutex and starts over. Grants carry the core's
/// epoch, so none is given back twice.
///
/// Invariants:
///
/// 1. A core's word moves only by a whole reservation computed from exactly
///    that state and core, and never changes once [`FROZEN`]: no
///    reservation is lost, doubled or applied across a rate change.
/// 2. So commits are totally ordered, each Guava's step on its
///    predecessor's state at a later clock reading (a no-op commit takes
///    effect at its load): every run equals Guava's serial run.
/// 3. A refusal changes nothing and is Guava's decision on the loaded state.
pub(super) struct Smooth<C> {
    /// The core built with, inline (no `later` load) until the first rate
    /// change retires it.
    pub(super) first: Core,
    /// The current core once `first` is retired; its load has a cost
    /// (ArcSwap's debt slot) only limiters whose rate changes pay.
    pub(super) later: Swap<Core>,
    /// Serialises rate changes and cancels; guards which grants before the
    /// latest cancel may still be given back.
    pub(super) change: Mutex<CancelWindow<i64>>,
    /// Cancelled grants that could not be given back, for the next callers.
    pub(super) handoff: Handoff,
    created: u64,
    /// The schedule's unit (the state's `res`, kept for clock conversion).
    pub(super) res: Resolution,
    pub(super) clock: C,
    pub(super) policy: WaitPolicy,
}

impl<C> Smooth<C> {
    /// The current state, waiting out a rate change in progress.
    pub(super) fn snapshot(&self) -> State {
        // Ordering: Acquire, see `Core::word`.
        let word = self.first.word.load(Ordering::Acquire);
        if word != FROZEN {
            return self.first.state(word);
        }
        loop {
            let core = self.later.load();
            // Ordering: Acquire, see `Core::word`.
            let word = core.word.load(Ordering::Acquire);
            if word != FROZEN {
                return core.state(word);
            }
            drop(core);
            // The change that froze it holds `change` until its successor
            // is published.
            drop(lock(&self.change));
        }
    }
}

impl<C: Clock> Smooth<C> {
    pub(super) fn new(
        kind: Kind,
        res: Resolution,
        rate: f64,
        clock: C,
        policy: WaitPolicy,
    ) -> Smooth<C> {
        let created = clock.now_nanos();
        let state = State::new(kind, res, rate);
        let placeholder = Core::new(state, Epoch::FIRST);
        // Ordering: Relaxed; nobody else has the limiter yet.
        placeholder.word.store(FROZEN, Ordering::Relaxed);
        Smooth {
            first: Core::new(state, Epoch::FIRST),
            later: Swap::new(placeholder),
            change: Mutex::new(CancelWindow::new(0)),
            handoff: Handoff::new(Epoch::FIRST.tag()),
            created,
            res,
            clock,
            policy,
        }
    }

    /// Clock nanos now, and ticks since creation (wrapping).
    #[inline(always)]
    pub(super) fn read(&self) -> (u64, i64) {
        let now = self.clock.now_nanos();
        (now, self.ticks_since_created(now))
    }

    /// Ticks from creation to `nanos`, saturating at `i64::MAX`; a wrapped
    /// clock (difference under 2^63 ns) carries on, a stepped-back one is 0.
    #[inline(always)]
    pub(super) fn ticks_since_created(&self, nanos: u64) -> i64 {
        let elapsed = nanos.wrapping_sub(self.created);
        if nanos < self.created && elapsed > i64::MAX as u64 {
            return 0; // stepped back before creation
        }
        i64::try_from(self.res.ticks(elapsed)).unwrap_or(i64::MAX)
    }

    /// Guava's `setRate`; see [`State::set_rate`].
    pub(super) fn set_rate(&self, rate: f64) -> Result<(), SmoothError> {
        let rate = check_rate(rate)?;
        let mut window = lock(&self.change);
        // Retire the current core. Ordering: AcqRel; the swap returns the
        // last committed state (Acquire: and its clock reading happened
        // before ours, below). Under `change`, the current core is `first`
        // until it is frozen, then the one `later` holds.
        let retire = |core: &Core| {
            (
                core.state(core.word.swap(FROZEN, Ordering::AcqRel)),
                core.epoch,
            )
        };
        // Ordering: Acquire, see `Core::word`.
        let (mut st, epoch) = if self.first.word.load(Ordering::Acquire) != FROZEN {
            retire(&self.first)
        } else {
            let core = self.later.load();
            retire(&core)
        };
        let (_, now) = self.read();
        st.set_rate(rate, now);
        // Publishing is ordered by the swap cell (Release/Acquire inside
        // ArcSwap): whoever loads the new core sees its parameters and word.
        let epoch = epoch.next().next();
        self.later.store(Core::new(st, epoch));
        // Grants of the old rate are never given back, nor handed on.
        window.reset();
        self.handoff.reset(epoch.tag());
        Ok(())
    }

    /// Permits per second: ticks per second over the stable interval.
    pub(super) fn rate(&self) -> f64 {
        self.res.per_second() / self.snapshot().stable_interval
    }

    /// The rate one-permit calls get with nothing stored: ticks per second
    /// over `long(stable_interval)` ticks (`+∞` if that is 0).
    pub(super) fn effective_rate(&self) -> f64 {
        match long(self.snapshot().stable_interval) {
            ticks if ticks <= 0 => f64::INFINITY,
            ticks => self.res.per_second() / ticks as f64,
        }
    }

    pub(super) fn stored_permits(&self) -> f64 {
        self.snapshot().stored_permits
    }

    /// Guava's `tryAcquire` with a signed timeout in microseconds.
    pub(super) fn try_acquire_micros(
        &self,
        permits: u32,
        timeout_micros: i64,
    ) -> Result<Grant, AcquireError> {
        let micros = timeout_micros.max(0);
        let max_wait = Duration::from_micros(micros as u64);
        self.decide(permits, Some(self.res.micros_ticks(micros)))
            .map_err(|e| with_max_wait(e, max_wait))
    }

    /// A reservation (`timeout` None) or Guava's `tryAcquire` (Some), by the
    /// protocol on [`Smooth`]; O(1) per attempt.
    #[inline(always)]
    fn decide(&self, permits: u32, timeout: Option<i64>) -> Result<Grant, AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        if !self.handoff.is_empty() {
            if let Some(g) = self.take_stashed(permits, timeout) {
                return Ok(g);
            }
        }
        let mut later = None;
        // Ordering: Acquire, see `Core::word`.
        let mut word = self.first.word.load(Ordering::Acquire);
        loop {
            let core = later.as_deref().unwrap_or(&self.first);
            let decided = decide_on(
                &core.word,
                &core.params,
                word,
                permits,
                timeout,
                || self.read(),
                |w| w != FROZEN,
            );
            if let Some(r) = decided {
                return r.map(|(grant, word)| grant.with_claim(core.tag(word)));
            }
            if later.take().is_some() {
                // The change that froze it holds `change` until its
                // successor is published.
                self.wait_out_change();
            }
            let core = self.later.load();
            // Ordering: Acquire, see `Core::word`.
            word = core.word.load(Ordering::Acquire);
            later = Some(core);
        }
    }

    /// A stashed grant of `permits`, ready within `timeout` ticks if given.
    #[cold]
    #[inline(never)]
    fn take_stashed(&self, permits: u32, timeout: Option<i64>) -> Option<Grant> {
        let now = self.clock.now_nanos();
        let max = timeout.map(|t| self.res.nanos(t.max(0) as u64));
        self.handoff.take(permits, max, now)
    }

    /// Waits until the change in progress has published its core.
    #[cold]
    #[inline(never)]
    fn wait_out_change(&self) {
        drop(lock(&self.change));
    }

    #[inline(always)]
    pub(super) fn reserve(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        match max_wait {
            None => self.decide(permits, None),
            Some(max) => self
                .decide(permits, Some(self.res.duration_ticks(max)))
                .map_err(|e| with_max_wait(e, max)),
        }
    }

    /// The backlog: how far `next_free` is ahead of now.
    pub(super) fn wait_stats(&self) -> WaitStats {
        let next_free = self.snapshot().next_free;
        let (_, now) = self.read();
        let backlog = self.res.nanos(next_free.saturating_sub(now).max(0) as u64);
        WaitStats {
            backlog_nanos: backlog,
            total_wait_nanos: backlog,
        }
    }

    /// [`RateLimiter::recovery`](crate::RateLimiter::recovery) now.
    pub(super) fn recovery(&self) -> Recovery {
        let st = self.snapshot();
        let (_, now) = self.read();
        st.recovery(now)
    }

    /// The per-key rule of this limiter's rate.
    pub(super) fn keyed_rule(&self) -> SmoothRule {
        SmoothRule::new(self.snapshot())
    }
}
