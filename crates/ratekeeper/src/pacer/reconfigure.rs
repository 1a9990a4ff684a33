//! Runtime changes: start, stop, restart and new parameters, each a
//! **checkpoint and keep** of the schedule under the configuration lock.

use super::limiter::Control;
use super::params::{
    kind, mode_word, next_epoch, slices, tag, CACHED_CLOCK, EPOCH, IDLE, KIND_DUAL, SPACED, TAGGED,
};
use super::strictness::Strictness;
use super::Pacer;
use crate::clock::{elapsed_nanos, Clock};
use crate::error::ConfigError;
use crate::rate::Rate;
use crate::spec::{RateSpec, Verb};
use crate::sync::{lock, Ordering};

impl<C: Clock> Pacer<C> {
    /// Starts an idle pacer: its schedule begins now. No effect if started.
    pub fn start(&self) {
        let mut control = lock(&self.control);
        // Ordering: Relaxed; writes to the mode word happen under the lock.
        let mode = self.params.mode.load(Ordering::Relaxed);
        if mode & IDLE != 0 {
            self.keep_timeline(self.now());
            self.publish_reset(&mut control, mode & !IDLE);
        }
    }

    /// Stores the mode word `mode` after a reset of the schedule, with the
    /// epoch moved on, so that no grant reserved before the reset can be
    /// cancelled. Called under the lock, after the reset's swap of `ideal`.
    fn publish_reset(&self, control: &mut Control, mode: u64) {
        control.window.reset();
        self.handoff.reset(tag(next_epoch(mode)));
        // Ordering: Release. A caller that sees the new mode word (its load
        // is Acquire) also sees the fresh timeline and the slices stored
        // before it. And since the reset swapped `ideal` (an AcqRel
        // read-modify-write) before this store, a reservation whose mode
        // load returns this value has its own read-modify-write of `ideal`
        // after that swap: a grant tagged with the new epoch is on the new
        // timeline.
        self.params.mode.store(next_epoch(mode), Ordering::Release);
    }

    /// Re-initialises the schedule as if starting for the first time: the
    /// backlog and the accumulated wait are cleared, and the next op is due
    /// at the later of now and the end of the slots already handed out
    /// (spec verb `restart`). Starts an idle pacer.
    pub fn restart(&self) {
        let mut control = lock(&self.control);
        self.keep_timeline(self.now());
        // Ordering: Relaxed; a statistic.
        self.accumulated.store(0, Ordering::Relaxed);
        // Ordering: Relaxed under the lock.
        let mode = self.params.mode.load(Ordering::Relaxed);
        self.publish_reset(&mut control, mode & !IDLE);
    }

    /// Stops metering: the current backlog is checkpointed into the total wait
    /// and the pacer goes idle; its next acquire (or [`start`](Self::start))
    /// begins a fresh schedule, at the later of then and the end of the
    /// slots already handed out (spec verb `stop`).
    pub fn stop(&self) {
        let mut control = lock(&self.control);
        // Ordering: Relaxed under the lock.
        let mode = self.params.mode.load(Ordering::Relaxed);
        if mode & IDLE == 0 {
            self.checkpoint_and_keep(self.now());
            // Readers that miss the idle bit keep using the running schedule
            // for one more op, which `checkpoint_and_keep` already brought
            // up to date.
            self.publish_reset(&mut control, mode | IDLE);
        }
    }

    /// Changes the rate, with a **checkpoint and keep**: a backlog (the
    /// schedule behind the clock) is checkpointed into the total wait once
    /// and leaves the schedule, so later ops are not charged for it; slots
    /// already handed out ahead of the clock stay reserved, and the new rate
    /// applies after them. A change therefore never admits more ops than
    /// either rate allows. Setting the current rate again changes nothing.
    ///
    /// ```
    /// use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter};
    ///
    /// let clock = ManualClock::new(0);
    /// let p = Pacer::builder(Rate::new(1000.0)?).strictness(1.0).build_with_clock(clock.clone())?;
    /// let held: Vec<_> = (0..10).map(|_| p.reserve(1, None)).collect::<Result<_, _>>()?;
    /// p.set_rate(Rate::new(2000.0)?)?; // callers hold slots 0–9 ms
    /// assert_eq!(p.reserve(1, None)?.ready_nanos(), 10_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) if the rate
    /// cannot be kept; nothing changes.
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        let strictness = lock(&self.control).strictness;
        self.reconfigure(rate, strictness)
    }

    /// Changes the strictness, with the same checkpoint and keep as
    /// [`set_rate`](Self::set_rate).
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Strictness`](crate::ConfigErrorKind::Strictness) for
    /// an invalid value; nothing changes.
    pub fn set_strictness(&self, strictness: f64) -> Result<(), ConfigError> {
        let s = Strictness::new(strictness)?;
        let rate = lock(&self.control).rate;
        self.reconfigure(rate, s)
    }

    /// Changes rate and strictness together, with one checkpoint and keep
    /// (see [`set_rate`](Self::set_rate)). Equal values change nothing.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for an invalid rate or strictness; nothing changes.
    pub fn configure(&self, rate: Rate, strictness: f64) -> Result<(), ConfigError> {
        self.reconfigure(rate, Strictness::new(strictness)?)
    }

    /// Applies a spec: its rate, its burst ratio as the strictness (as
    /// [`set_rate`](Self::set_rate) does), then its verb: `configure` changes
    /// nothing else, `start` starts an idle pacer, `restart` clears the backlog
    /// and accumulated wait, `stop` goes idle.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) if the spec's
    /// rate cannot be kept; nothing changes.
    pub fn apply(&self, spec: &RateSpec) -> Result<(), ConfigError> {
        let s = Strictness::new(spec.burst_ratio())?;
        self.reconfigure(spec.rate(), s)?;
        match spec.verb() {
            Verb::Configure => {}
            Verb::Start => self.start(),
            Verb::Restart => self.restart(),
            Verb::Stop => self.stop(),
        }
        Ok(())
    }

    fn reconfigure(&self, rate: Rate, strictness: Strictness) -> Result<(), ConfigError> {
        let (op, burst) = slices(rate, strictness)?;
        let mut control = lock(&self.control);
        if control.rate == rate && control.strictness == strictness {
            return Ok(());
        }
        // Ordering: Relaxed under the lock (only writer).
        let mode = self.params.mode.load(Ordering::Relaxed);
        let idle = mode & IDLE;
        let cached = mode & CACHED_CLOCK != 0;
        // Ordering: Relaxed; the slices are published by the Release store of
        // the mode word below (an acquire racing the change may still use
        // either value: documented).
        self.params.op_nanos.store(op, Ordering::Relaxed);
        self.params.burst_nanos.store(burst, Ordering::Relaxed);
        if idle == 0 {
            self.checkpoint_and_keep(self.now());
        }
        let mut new = mode_word(strictness, cached, burst) | idle | (mode & (EPOCH | TAGGED));
        let was_dual = kind(mode) == KIND_DUAL;
        if kind(new) != KIND_DUAL && (was_dual || mode & SPACED != 0) {
            new |= SPACED;
        }
        self.publish_reset(&mut control, new);
        control.rate = rate;
        control.strictness = strictness;
        Ok(())
    }

    /// Checkpoints the backlog into the accumulated wait, once, and moves
    /// both timelines up to `now` if they are behind it (checkpoint and
    /// keep): slots already handed out stay reserved. The read-modify-write
    /// makes it exact under concurrency: a reservation either landed before
    /// it (and is in the checkpoint) or after it (on the kept timeline).
    fn checkpoint_and_keep(&self, now: u64) {
        let old = self.keep_timeline(now);
        // Ordering: Relaxed; a statistic.
        self.accumulated
            .fetch_add(elapsed_nanos(old, now), Ordering::Relaxed);
    }

    /// Moves both timelines up to `now`, never back, and returns where the
    /// ideal one was: a backlog leaves the schedule, a slot already handed
    /// out is never handed out again.
    fn keep_timeline(&self, now: u64) -> u64 {
        // Ordering: AcqRel, ordered with reservations like one of them, so
        // reservations after it build on the kept value; a read-modify-write
        // rather than a store so that the epoch published after it tags
        // only reservations made after it (see `publish_reset`).
        let old = self.ideal.fetch_max(now, Ordering::AcqRel);
        // Ordering: AcqRel; pairs with the Acquire loads in the dual paths,
        // and keeps a later spacing an op reserved.
        self.actual.fetch_max(now, Ordering::AcqRel);
        // Ordering: Relaxed; see `refresh`.
        self.last_seen.fetch_max(now, Ordering::Relaxed);
        old
    }
}
