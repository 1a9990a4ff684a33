//! The Pacer: nosqlbench's core rate limiter, a lock-free nanosecond schedule.
//!
//! A [`Pacer`] hands out slices of a nanosecond timeline, one slice of
//! `floor(1e9 / rate)` ns per permit, in order (so it runs at
//! `1e9 / floor(1e9 / rate)`, slightly above the rate where the slice is
//! not whole: [`Pacer::effective_rate`]). Each grant says when its op was
//! due (**scheduled**), when the pacer lets it go (**ready**) and, once it went,
//! its **wait time**: what a load generator needs to report response times free
//! of coordinated omission. One knob, [`Strictness`], says what happens to time
//! callers did not use.
//!
//! ```
//! use ratekeeper::{Pacer, RateLimiter};
//!
//! let pacer = Pacer::from_spec(&"10K,1.1".parse()?).build()?;
//! for _ in 0..10 {
//!     let grant = pacer.acquire(); // sleeps until the op's slot
//!     // ... do the op; response time = end - grant.scheduled_nanos()
//!     assert!(grant.ready_nanos() >= grant.scheduled_nanos());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Cancelling a reservation
//!
//! [`cancel`](RateLimiter::cancel) gives back the slots of the pacer's
//! **latest** reservation: the schedule moves back from the grant's end to
//! its start, so the next reservation gets the slots, and the scheduled and
//! ready times, the cancelled one had, as if it had never been made. In
//! strict and burst modes the actual timeline moves back too, unless a later
//! op already built on it (that op keeps its time; the next one is then
//! spaced from the cancelled grant's start, never earlier).
//!
//! An **earlier** reservation's slots cannot move without moving slots
//! already handed out. `cancel` then keeps the grant for the next
//! reservation of the same number of permits (through any
//! [`RateLimiter`] method but [`reserve_nanos`](Pacer::reserve_nanos)),
//! which gets its scheduled and ready times, started at its own clock
//! reading, instead of new slots: the slots are used once, by one caller,
//! at the time the schedule gave them, so nothing is admitted that the
//! schedule did not allow. A kept grant whose ready time passes before
//! anyone takes it is dropped (its slots stay spent: never handed out
//! late). With many async waiters, the one that gives up is rarely the
//! latest; this is what keeps the rate when many do.
//!
//! `cancel` returns `false`, and changes nothing, for a grant
//!
//! * already cancelled (given back or kept), or handed on already;
//! * whose ready time has passed (`ready < now`; a grant ready at the very
//!   reading it is cancelled at can still be given back, as in Go);
//! * reserved before a reset of the schedule (a rate or strictness change,
//!   [`start`](Pacer::start), [`stop`](Pacer::stop),
//!   [`restart`](Pacer::restart)), while the pacer is stopped, or, if it is
//!   not the latest, one whose slots end past the next free slot (not this
//!   pacer's);
//! * from [`reserve_nanos`](Pacer::reserve_nanos) (it does not say its size).
//!
//! A grant from another limiter, or one whose op already went, must not be
//! cancelled: the pacer cannot always tell it from one of its own still
//! waiting, and would hand its slots out again.
//!
//! ```
//! use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter};
//!
//! let clock = ManualClock::new(0);
//! let pacer = Pacer::builder(Rate::new(1000.0)?).strictness(1.0).build_with_clock(clock.clone())?;
//! pacer.reserve(1, None)?; // due now
//! let b = pacer.reserve(1, None)?; // due in 1 ms
//! let c = pacer.reserve(2, None)?; // due in 2 ms
//! assert!(pacer.cancel(&c), "the latest: back to the schedule");
//! assert!(pacer.cancel(&b), "b is the latest now");
//! assert!(!pacer.cancel(&b), "already given back");
//! let again = pacer.reserve(1, None)?;
//! assert_eq!(again.ready_nanos(), b.ready_nanos());
//!
//! // Not the latest: kept for the next caller of its size.
//! let d = pacer.reserve(1, None)?; // due in 2 ms
//! assert!(pacer.cancel(&again));
//! assert!(!pacer.cancel(&again), "kept already");
//! clock.advance_nanos(500_000);
//! let e = pacer.reserve(1, None)?;
//! assert_eq!(e.ready_nanos(), again.ready_nanos(), "again's slot");
//! assert_eq!(e.started_nanos(), 500_000);
//! assert_eq!(pacer.reserve(1, None)?.ready_nanos(), d.ready_nanos() + 1_000_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A cancel takes the configuration lock; the reservations it races stay
//! lock-free.
//!
//! # Batching under contention
//!
//! Every grant is one read-modify-write of one shared atomic; at very high
//! rates from several threads that atomic is the bottleneck. A
//! [`PacerHandle`] ([`Pacer::handle`], one per thread) leases blocks of the
//! schedule with one atomic add each and grants their slots locally, in
//! average and burst compensation modes, with a documented, bounded slack;
//! see [`batch`]. The pacer itself stays the exact path. (The generic
//! [`BatchHandle`](crate::BatchHandle) also works on a pacer, but grants a
//! lease's slots together, as one reservation; the pacer's own handle grants
//! each at its time.)
//!
//! # Waiting
//!
//! A grant's **wait time** (`started − scheduled`) is exact: `started` is a
//! clock reading taken when the op is let go (at the decision when it is
//! due, at the end of the wait otherwise), never a reading cached from
//! before. Every grant reads the clock once; the opt-in [cached
//! clock](PacerBuilder::cached_clock) trades that for a lower bound.
//!
//! Blocking waits follow the pacer's [`WaitPolicy`], sized for its slot
//! (`floor(1e9 / rate)` ns): by default an op goes early only when sleeping
//! to it is impossible (at most `clamp(slot / 2, ρ / 2, ρ)` early, `ρ` the
//! measured sleep resolution, about 100 µs here), and at rates whose slot
//! is shorter than `ρ` a sleep ends up to a grouping delay after the ready
//! time, so that one sleep lets a group of ops go (see
//! [`wait`](crate::wait) for the numbers). Three things keep that cheap and
//! the rate exact:
//!
//! * **One sleeper.** Blocking callers ([`acquire`](RateLimiter::acquire),
//!   [`acquire_n`](RateLimiter::acquire_n), [`wait_for`](RateLimiter::wait_for),
//!   and through [`Pacer::handle`]) share a waiting room: one caller at a
//!   time sleeps on the schedule; others that come while it sleeps park
//!   without taking a slot, and it hands over to one of them when it is let
//!   go (a woken caller that finds no sleeper passes the hand-over on).
//!   So `N` threads cost about one sleep per group, not `N`.
//! * **A late wake is not a late caller** (burst and burst compensation
//!   modes, and strict mode at rates with a grouping delay). The actual
//!   timeline of strict and burst modes starts an op no earlier than the
//!   clock when it is reserved, so a caller that comes back late forfeits
//!   the time in between, and burst compensation forfeits a share of any
//!   gap it sees. When the lateness is the wait's own (a sleep that ended
//!   late, or the grouping delay), the pacer excuses it: until the schedule
//!   has caught up with the clock, reservations are decided as if the clock
//!   read that much earlier (at most the grouping delay plus `max(2ρ, 1
//!   ms)`, an async timer's tick; beyond that, a preemption say, it is the
//!   caller's lateness). The ops caught up go at once, so on scales shorter
//!   than the sleep resolution a burst mode's spacing holds for ready
//!   times, not for the instants ops are let go.
//! * **Strict mode keeps a late wake's lateness** where ops are slept to
//!   one by one (no grouping delay: a slot at least half the sleep
//!   resolution): the next op is
//!   spaced from this one's actual start, so consecutive ops of one caller
//!   start at least `slot − clamp(slot / 2, ρ / 2, ρ)` apart. The rate then
//!   falls short by the sleeps' lateness (strict mode never catches up).
//!
//! Every waiter (blocking, async, the CLI's) reports each grant it let go
//! through [`RateLimiter::released`], which is how the pacer learns of a
//! late wake.
//!
//! # Memory ordering
//!
//! Every reservation is a read-modify-write of the same atomic schedule with
//! acquire-release ordering, so a grant *happens after* every grant reserved
//! before it on the same pacer: data written by one caller before it acquired is
//! visible to a caller that acquired later.
//!
//! # Implementation details
//!
//! State (`ideal` and `actual` share one cache line; `last_seen` and the
//! parameters have a line each):
//!
//! * Every time below is on the pacer's own timeline: nanoseconds since its
//!   **origin**, the clock's reading when it was built (shared by the shards
//!   of a [`ShardedPacer`]). Clock readings enter it as `reading − origin`
//!   (a reading before the origin is no time passing) and grants leave it
//!   as `time + origin`, so where a clock's readings start (past 2^63, or
//!   near the end of its range) changes nothing: the schedule only ends
//!   2^63 ns (292 years) after the origin, or at the clock's last reading,
//!   whichever comes first ([`AcquireError::ScheduleExhausted`] after).
//! * `ideal`: the **ticks accumulator**, the ideal start of the next free slot.
//!   Every grant takes its slot with one `fetch_add` (or, when the caller set a
//!   maximum wait, one successful compare-exchange), so slots are handed out
//!   exactly once and none is lost: the slots granted are a contiguous run of
//!   the timeline.
//! * `last_seen` (only with the opt-in [cached
//!   clock](PacerBuilder::cached_clock), average and compensation modes): the
//!   **shared last-seen clock**, the latest clock reading any caller stored.
//!   It is always a value the clock returned earlier, so it is never later
//!   than the current time on any thread (the clock is monotonic across
//!   CPUs). A caller whose slot is *strictly* earlier than `last_seen` is
//!   known to be due and skips the clock read ("calling-overhead
//!   compensation"); its wait is measured against `last_seen`, a lower bound.
//!   The default exact path neither reads nor writes it: every grant reads
//!   the clock once, and writes only `ideal` (and, off schedule in strict and
//!   burst modes, `actual`).
//! * `actual` (strict and burst modes only): the earliest start of the next op
//!   on the actual timeline (G1.5's `scheduledNanos`). An op goes at
//!   `max(actual, slot, now)` and then moves `actual` to its start plus one
//!   burst slice (`floor(1e9 / (rate × burst))` per permit) with a
//!   compare-exchange. An op that goes exactly at its slot leaves `actual`
//!   alone: the next op's slot is at least a full slice later, so the stale
//!   value can never be the maximum (the single-threaded result is identical to
//!   the serial dual-timeline model, which the conformance vectors check).
//!   After a change from strict or burst mode to a mode without spacing, the
//!   spacing the last op reserved still holds for the next op: the mode
//!   word's `SPACED` bit makes the accumulator paths start no op before
//!   `actual` until the next change.
//! * `accumulated`: wait checkpointed at configuration changes and time
//!   forfeited by compensation, so that the total wait counts each backlog once.
//!   A change (rate, strictness, `stop`, `restart`, `start`) is a **checkpoint
//!   and keep**: one `fetch_max` moves `ideal` (and `actual`) up to the clock,
//!   never back, and what it moved over is the backlog checkpointed. Slots
//!   already handed out stay reserved, so no change re-hands a slot.
//! * `params`: nanos per op, burst nanos per op and a mode word; written only
//!   under the `control` mutex, read with relaxed loads (the mode word with
//!   an acquire load). An acquire that races a configuration change may be
//!   paced by either the old or the new parameters.
//! * The mode word's top half is the **epoch**, which every change of the
//!   schedule and every cancel moves on (under the mutex, with a release
//!   store *after* the read-modify-write of `ideal` that kept or gave back
//!   the schedule). Every grant carries the epoch its reservation loaded as
//!   its tag, before it took its slot. A grant tagged with the current epoch
//!   therefore took its slot after the last reset and after the last cancel,
//!   so its slots were never given back: a cancel that finds `ideal` at the
//!   grant's end may move it back to the grant's start. Older grants may
//!   still be given back newest first (see `window.rs`). The cost on the
//!   fast path is storing the tag in the grant.
//!
//! ## Strict and burst modes under contention
//!
//! Once an op is late, strict mode stays off its slots for good (the
//! lateness is kept), and burst mode until it has caught up at the burst
//! rate; every op then writes `actual`. Such an op costs one clock read and
//! the cache line of `ideal` and `actual`, taken once:
//!
//! * **A fresh clock reading, never `last_seen`.** `now` decides whether the
//!   op is late on the actual timeline (`now > actual`), and while ops are
//!   paced by that timeline `actual` is ahead of every stored reading, so the
//!   cached clock could not skip the read anyway; storing each reading into
//!   the shared `last_seen` only moved one more line between cores per op.
//!   Nor may a stale reading stand in for it: an op with `seen < actual <
//!   now` would go at `actual` and forget its lateness. A strict or burst
//!   op's start is therefore never earlier than a reading of the clock
//!   taken in its own call, less the lateness a wait excused (`lag`, see
//!   [Waiting](self#waiting); the loom model
//!   `dual_start_is_never_before_the_callers_present` checks the rule
//!   without waits).
//! * **Read before the slot is taken,** so that the add on `ideal`, the load
//!   of `actual` and the compare-exchange follow each other: another core
//!   rarely takes the line between them, and the compare-exchange rarely
//!   fails. An earlier reading is still a lower bound of the present when the
//!   op is decided (single-threaded on a manual clock it is the same value).
//! * **One line for both timelines** (and the excused lag). On separate
//!   lines an off-slot op stalled on two transfers (the add, then the load
//!   of `actual`); `BENCHMARKS.md` records what that cost.
//!
//! Invariants: (1) no grant is ready before its slot; (2) in strict and burst
//! modes, grants that are not exactly on their slot are ready at least one burst
//! slice apart; (3) a refused bounded reservation changes nothing, except that
//! under contention in strict or burst mode a slot already taken may be
//! forfeited (a hole in the schedule: fewer grants, never more); (4) a cancel
//! gives back only slots no standing grant holds, and a kept grant goes to
//! at most one later caller at its own times, so (1) to (3) hold for the
//! grants still standing.

pub mod batch;
pub(crate) mod keyed;
pub mod shard;
mod strictness;

pub use batch::{PacerHandle, DEFAULT_MAX_LEASE, MAX_LEASE_SLOTS};
pub use shard::{ShardError, ShardHandle, ShardedPacer, MAX_SHARDS};
pub use strictness::{compensation_shift, Strictness, StrictnessError, StrictnessMode};

use core::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::{elapsed_nanos, Clock, DefaultClock};
use crate::error::ConfigError;
use crate::internal::cancel::CancelWindow;
use crate::internal::handoff::Handoff;
use crate::limiter::{AcquireError, Grant, RateLimiter, Recovery, WaitStats};
use crate::rate::{per_second_of_nanos, Rate, RateError};
use crate::spec::{RateSpec, Verb};
use crate::sync::{lock, AtomicU64, Mutex, Ordering};
use crate::wait::room::Room;
use crate::wait::{saturating_nanos, WaitPolicy};

/// The most schedule one reservation may take: 2^62 ns (146 years). Equal to
/// the longest slice a `Rate` may have, so one permit always fits.
const MAX_SPAN: u64 = crate::rate::MAX_NANOS_PER_OP;
/// The most lateness of a wait excused besides its grouping delay when the
/// sleep resolution is small: an async timer's tick (see `released`).
const MAX_EXCUSED_TICK: u64 = 1_000_000;
/// Slots at or beyond 2^63 ns after the origin are refused, so the
/// timeline cannot wrap.
const SCHEDULE_LIMIT: u64 = 1 << 63;

// Mode word layout: bits 0..=7 compensation shift; bits 8..=9 kind; bit 16 idle;
// bit 17 cached clock enabled; bit 18 spaced (below); bits 32..=62 the cancel
// epoch; bit 63 always set, so that the top half, which every grant carries
// as its tag, is never 0.
const KIND_SHIFT: u32 = 8;
const KIND_AVERAGE: u64 = 0;
const KIND_COMPENSATE: u64 = 1;
const KIND_DUAL: u64 = 2;
const IDLE: u64 = 1 << 16;
const CACHED_CLOCK: u64 = 1 << 17;
/// Set by a change from strict or burst mode to a mode without spacing: the
/// spacing the last strict or burst op reserved on `actual` still applies
/// to the next op, so the accumulator paths also start no op before
/// `actual` (which they never write) until the next change.
const SPACED: u64 = 1 << 18;
const EPOCH_SHIFT: u32 = 32;
/// The epoch: moved on by every reset of the schedule and every cancel (see
/// [Cancelling a reservation](self#cancelling-a-reservation)).
const EPOCH: u64 = 0x7fff_ffff << EPOCH_SHIFT;
const TAGGED: u64 = 1 << 63;

/// The tag a grant reserved under mode word `mode` carries.
#[inline(always)]
fn tag(mode: u64) -> u32 {
    (mode >> EPOCH_SHIFT) as u32
}

/// How many epochs before `mode`'s the grant tagged `tag` was reserved in.
fn age(mode: u64, tag: u32) -> u32 {
    self::tag(mode).wrapping_sub(tag) & 0x7fff_ffff
}

/// `mode` with the epoch moved on by one.
fn next_epoch(mode: u64) -> u64 {
    let epoch = mode.wrapping_add(1 << EPOCH_SHIFT) & EPOCH;
    (mode & !EPOCH) | epoch | TAGGED
}

/// A lock-free pacer on a nanosecond schedule; see the [module docs](self).
///
/// Build one with [`Pacer::builder`], [`Pacer::from_spec`] or [`Pacer::new`],
/// share it by reference or in an `Arc`, and take permits through the
/// [`RateLimiter`] methods.
///
/// # Examples
///
/// Strict pacing on a manual clock: a caller that shows up late keeps its
/// lateness, and the next op is still a full slot later.
///
/// ```
/// use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter};
///
/// let clock = ManualClock::new(0);
/// let pacer = Pacer::builder(Rate::new(1000.0)?)
///     .strictness(1.0)
///     .build_with_clock(clock.clone())?;
///
/// clock.advance_nanos(2_500_000);
/// let a = pacer.acquire();
/// let b = pacer.acquire(); // sleeps (on the manual clock: advances it) 1 ms
/// assert_eq!((a.wait_nanos(), b.wait_nanos()), (2_500_000, 2_500_000));
/// assert_eq!(b.ready_nanos() - a.ready_nanos(), 1_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// `repr(C)` keeps `ideal` and `actual` together at the start of the struct,
// whose alignment (that of `CachePadded`) puts them on one cache line of
// their own; `last_seen` and `params` follow on lines of their own (module
// docs, "State").
#[repr(C)]
pub struct Pacer<C = DefaultClock> {
    ideal: AtomicU64,
    actual: AtomicU64,
    /// How far behind the clock strict and burst reservations may start
    /// without being late: the lateness of a wait that woke late (see
    /// `released`), until the actual timeline catches up with the clock.
    lag: AtomicU64,
    last_seen: CachePadded<AtomicU64>,
    params: CachePadded<Params>,
    accumulated: AtomicU64,
    control: Mutex<Control>,
    /// Cancelled grants the schedule could not take back, for the next
    /// callers (see [Cancelling a reservation](self#cancelling-a-reservation)).
    handoff: Handoff,
    /// Where blocking callers wait their turn (see [Waiting](self#waiting)).
    room: Room,
    clock: C,
    policy: WaitPolicy,
}

struct Params {
    op_nanos: AtomicU64,
    burst_nanos: AtomicU64,
    mode: AtomicU64,
    /// The clock reading the timeline counts from (fixed at build time).
    origin: u64,
    /// The first time on the timeline no slot or strict start may take:
    /// 2^63 ns, or the clock's last reading if that comes first.
    limit: u64,
}

#[derive(Debug, Clone, Copy)]
struct Control {
    rate: Rate,
    strictness: Strictness,
    /// Which grants before the latest cancel may still be given back.
    window: CancelWindow<u64>,
}

/// Why a pacer could not be built or reconfigured, before builders returned
/// [`ConfigError`]: the pacer's refusals are now a [`RateError`] or a
/// [`StrictnessError`] inside a [`ConfigError`].
#[deprecated(
    since = "0.2.0",
    note = "builders and set_* return ConfigError; match on ConfigError::kind(), or downcast to RateError / StrictnessError"
)]
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PacerError {
    /// The rate cannot be kept on a nanosecond schedule.
    #[error("invalid rate")]
    Rate(#[source] RateError),
    /// The strictness is not a valid value.
    #[error("invalid strictness")]
    Strictness(#[source] StrictnessError),
}

#[allow(deprecated)]
impl From<RateError> for PacerError {
    fn from(e: RateError) -> Self {
        PacerError::Rate(e)
    }
}

#[allow(deprecated)]
impl From<StrictnessError> for PacerError {
    fn from(e: StrictnessError) -> Self {
        PacerError::Strictness(e)
    }
}

/// Configures a [`Pacer`]. Setters take any value; [`build`](Self::build)
/// validates them.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Pacer, Rate, WaitPolicy};
///
/// let pacer = Pacer::builder(Rate::new(250.0)?)
///     .strictness(0.0)                // average: backlog may go at once
///     .cached_clock(false)            // read the clock on every acquire
///     .wait_policy(WaitPolicy::precise(Duration::from_micros(150)))
///     .build()?;
/// assert_eq!(pacer.strictness().get(), 0.0);
///
/// let err = Pacer::builder(Rate::new(2e9)?).build().unwrap_err();
/// assert!(err.to_string().contains("rate"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PacerBuilder {
    rate: Rate,
    strictness: f64,
    verb: Verb,
    cached_clock: bool,
    policy: WaitPolicy,
}

impl PacerBuilder {
    /// The strictness (default 1.1, the default burst ratio); see [`Strictness`].
    pub fn strictness(mut self, strictness: f64) -> Self {
        self.strictness = strictness;
        self
    }

    /// The rate in operations per second.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = rate;
        self
    }

    /// Start state: [`Verb::Start`] (the default) and [`Verb::Restart`] start
    /// the schedule at build time; [`Verb::Configure`] and [`Verb::Stop`] leave
    /// the pacer idle until its first acquire or [`Pacer::start`].
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = verb;
        self
    }

    /// Opt-in: callers already behind schedule skip the clock read, as the
    /// seeds' "calling-overhead compensation" does (default `false`: every
    /// grant reads the clock, so every reported wait is exact).
    ///
    /// With the cached clock, a grant whose slot is earlier than the latest
    /// clock reading any caller stored goes at once without reading the
    /// clock, and its **reported wait is a lower bound**, measured against
    /// that stored reading: it can miss a whole stall. A caller that falls
    /// behind, then stalls outside the limiter for 13.7 s, may see its next
    /// grant report the wait it had before the stall (engineblock's pre-#156
    /// bug; the `upstream_expect` values of the `dual_timeline` vectors
    /// describe this mode where G1.5's cached clock is the only
    /// difference). It also writes the stored reading, a second shared
    /// cache line, on every grant that reads the clock. Use it only where
    /// the wait is not reported and one clock read per grant matters.
    ///
    /// Average and compensation modes only: strict and burst modes read the
    /// clock on every reservation either way (see the [module
    /// docs](self#strict-and-burst-modes-under-contention)).
    pub fn cached_clock(mut self, enabled: bool) -> Self {
        self.cached_clock = enabled;
        self
    }

    /// How blocking acquires wait (default: [`WaitPolicy::default`], sized
    /// for the pacer's slot: an op goes early only when sleeping to it is
    /// impossible, and at high rates a sleep serves a group of ops; see
    /// [`wait`](crate::wait)).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Builds a pacer on the default real clock.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) if the rate is
    /// above 1e9/s or so slow that one slice exceeds 2^62 ns;
    /// [`ConfigErrorKind::Strictness`](crate::ConfigErrorKind::Strictness) for
    /// a NaN, negative or infinite strictness.
    pub fn build(self) -> Result<Pacer, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds a pacer on `clock`.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_clock<C: Clock>(self, clock: C) -> Result<Pacer<C>, ConfigError> {
        let origin = clock.now_nanos();
        self.build_with_origin(clock, origin)
    }

    /// Builds a pacer on `clock` whose timeline counts from the reading
    /// `origin` (see [Implementation details](self#implementation-details)).
    pub(crate) fn build_with_origin<C: Clock>(
        self,
        clock: C,
        origin: u64,
    ) -> Result<Pacer<C>, ConfigError> {
        let strictness = Strictness::new(self.strictness)?;
        let (op_nanos, burst_nanos) = slices(self.rate, strictness)?;
        let now = clock.now_nanos().saturating_sub(origin);
        let idle = matches!(self.verb, Verb::Configure | Verb::Stop);
        let mode = mode_word(strictness, self.cached_clock, burst_nanos)
            | if idle { IDLE } else { 0 }
            | TAGGED;
        Ok(Pacer {
            ideal: AtomicU64::new(now),
            actual: AtomicU64::new(now),
            lag: AtomicU64::new(0),
            last_seen: CachePadded::new(AtomicU64::new(now)),
            params: CachePadded::new(Params {
                op_nanos: AtomicU64::new(op_nanos),
                burst_nanos: AtomicU64::new(burst_nanos),
                mode: AtomicU64::new(mode),
                origin,
                // The last reading, u64::MAX, may hold a slot.
                limit: SCHEDULE_LIMIT.min((u64::MAX - origin).saturating_add(1)),
            }),
            accumulated: AtomicU64::new(0),
            control: Mutex::new(Control {
                rate: self.rate,
                strictness,
                window: CancelWindow::new(now),
            }),
            handoff: Handoff::new(tag(mode)),
            room: Room::new(),
            clock,
            policy: self.policy,
        })
    }
}

/// Nanoseconds per op and burst nanoseconds per op for a configuration.
fn slices(rate: Rate, strictness: Strictness) -> Result<(u64, u64), RateError> {
    let op = rate.nanos_per_op()?;
    let burst = match strictness.mode() {
        StrictnessMode::Strict => op,
        // (long)(1e9 / (rate × burst)), as G1.5 computes it.
        StrictnessMode::Burst(b) => (1e9 / (rate.get() * b)) as u64,
        StrictnessMode::Average | StrictnessMode::Compensate { .. } => 0,
    };
    Ok((op, burst))
}

/// The mode word for a configuration. A strict or burst pacer whose burst
/// slice rounds to 0 ns (rates near 1e9/s) has no spacing to keep on the
/// actual timeline, so it runs as the plain accumulator.
fn mode_word(strictness: Strictness, cached_clock: bool, burst_nanos: u64) -> u64 {
    let (kind, shift) = match strictness.mode() {
        StrictnessMode::Average => (KIND_AVERAGE, 0),
        StrictnessMode::Compensate { shift } => (KIND_COMPENSATE, u64::from(shift)),
        StrictnessMode::Strict | StrictnessMode::Burst(_) if burst_nanos > 0 => (KIND_DUAL, 0),
        StrictnessMode::Strict | StrictnessMode::Burst(_) => (KIND_AVERAGE, 0),
    };
    (kind << KIND_SHIFT) | shift | if cached_clock { CACHED_CLOCK } else { 0 }
}

impl Pacer {
    /// A builder for a pacer at `rate`, strictness 1.1, started at build time.
    pub fn builder(rate: Rate) -> PacerBuilder {
        PacerBuilder {
            rate,
            strictness: Strictness::DEFAULT.get(),
            verb: Verb::Start,
            cached_clock: false,
            policy: WaitPolicy::default(),
        }
    }

    /// A builder set from a spec: its rate, its burst ratio as the strictness,
    /// and its verb as the start state.
    ///
    /// # Errors
    ///
    /// Never at present; the `Result` leaves room for spec fields a pacer
    /// cannot honour. Validation of the values happens in `build`.
    pub fn from_spec(spec: &RateSpec) -> PacerBuilder {
        Pacer::builder(spec.rate())
            .strictness(spec.burst_ratio())
            .verb(spec.verb())
    }

    /// A started pacer at `rate` with the default strictness (burst 1.1) on the
    /// real clock.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) if the rate cannot
    /// be kept on a nanosecond schedule.
    pub fn new(rate: Rate) -> Result<Pacer, ConfigError> {
        Pacer::builder(rate).build()
    }
}

impl<C: Clock> Pacer<C> {
    /// The clock's reading on the timeline: nanoseconds since the origin,
    /// 0 for a reading before it (see [Implementation
    /// details](self#implementation-details)).
    #[inline(always)]
    fn now(&self) -> u64 {
        self.on_timeline(self.clock.now_nanos())
    }

    /// A clock reading `t` (a grant's time) on the timeline.
    #[inline(always)]
    fn on_timeline(&self, t: u64) -> u64 {
        t.saturating_sub(self.params.origin)
    }

    /// The clock reading of the timeline's time `t`.
    #[inline(always)]
    fn at(&self, t: u64) -> u64 {
        t.saturating_add(self.params.origin)
    }

    /// A grant of the timeline's `slot`, `ready` and `now`, in clock readings.
    #[inline(always)]
    fn grant(&self, slot: u64, ready: u64, now: u64, permits: u32) -> Grant {
        Grant::new(self.at(slot), self.at(ready), self.at(now), permits)
    }

    /// A grant that has to wait: in the room, then `released`.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait_slow(&self, grant: Grant) -> Grant {
        self.room
            .wait(&self.clock, grant, self.wait_policy(), |g| self.released(g))
    }

    /// A cancelled grant of `permits` from the handoff, if one is ready
    /// within `max_wait` (see [Cancelling a
    /// reservation](self#cancelling-a-reservation)).
    #[cold]
    #[inline(never)]
    fn take_stashed(&self, permits: u32, max_wait: Option<Duration>) -> Option<Grant> {
        let now = self.clock.now_nanos();
        self.handoff
            .take(permits, max_wait.map(saturating_nanos), now)
    }

    /// Reserves `nanos` nanoseconds of schedule directly, instead of whole
    /// permits: for operations whose cost is not a whole number of permits
    /// (nosqlbench's `acquire(nanos)`). In strict and burst modes the burst
    /// spacing is scaled by the same proportion. The grant reports 0 permits.
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
    fn reserve_span(
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
        let kind = (mode >> KIND_SHIFT) & 0b11;
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

    /// Starts an idle pacer for a reservation, and returns the mode word
    /// and the slices to reserve with, read again after starting (a permit
    /// grant's tag must come from a mode word loaded before its slices; a
    /// racing rate change may have changed them).
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
        let span = u64::from(permits).saturating_mul(op);
        if span > MAX_SPAN {
            // A rate change since the caller checked: decided at the new rate.
            return Err(AcquireError::InsufficientCapacity {
                requested: permits,
                max: u32::try_from(MAX_SPAN / op.max(1)).unwrap_or(u32::MAX),
            });
        }
        Ok((mode, span, u64::from(permits).saturating_mul(burst)))
    }

    /// Reads the clock and publishes the reading as the last-seen clock.
    #[inline]
    fn refresh(&self, seen: u64) -> u64 {
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

    /// Average and compensation modes, no maximum wait: one `fetch_add`.
    #[inline(always)]
    fn reserve_accumulator(
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
        // Ordering: AcqRel, so this grant happens-after every grant whose
        // fetch_add came earlier in the accumulator's modification order
        // (the public "Memory ordering" promise).
        let slot = self.ideal.fetch_add(span, Ordering::AcqRel);
        if slot >= self.params.limit {
            return Err(self.undo_exhausted(span));
        }
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
        if (mode >> KIND_SHIFT) & 0b11 == KIND_COMPENSATE {
            self.compensate(slot, span, now, (mode & 0xff) as u32);
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
    fn compensate(&self, slot: u64, span: u64, now: u64, shift: u32) {
        let end = slot.saturating_add(span);
        if now > end {
            // A gap that is only the lateness of a wait is not forfeited
            // (see `present`).
            let now = self.present_for_compensation(now, end);
            let forfeit = elapsed_nanos(end, now) >> shift;
            if forfeit > 0 {
                // Ordering: Relaxed. Moving the accumulator forward only makes
                // later slots later; the grant itself was already published by
                // the AcqRel fetch_add above.
                self.ideal.fetch_add(forfeit, Ordering::Relaxed);
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

    /// The earliest start a strict or burst reservation decided at `now`
    /// may take: `now`, less the lateness of a wait that woke late while
    /// the actual timeline has not caught up with the clock since (see
    /// [Waiting](self#waiting)). Clears that lag once it is caught up.
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
    #[inline]
    fn reserve_dual(
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
        let now = self.now();
        // Ordering: AcqRel, as in `reserve_accumulator`.
        let slot = self.ideal.fetch_add(span, Ordering::AcqRel);
        if slot >= self.params.limit {
            return Err(self.undo_exhausted(span));
        }
        // Ordering: Acquire, pairing with the AcqRel compare-exchange below so
        // the spacing decided by an earlier op is seen before ours is computed.
        let mut actual = self.actual.load(Ordering::Acquire);
        let present = self.present(now);
        loop {
            let start = actual.max(slot).max(present);
            if start == slot {
                // Exactly on schedule: `actual` may stay stale (module docs).
                return Ok(self.grant(slot, start, now, permits).with_claim(tag(mode)));
            }
            if start >= self.params.limit {
                return Err(self.hand_back(slot, span));
            }
            // Ordering: AcqRel on success (publish our spacing, see earlier
            // ones); Acquire on failure to retry with the freshest value. `now`
            // stays a valid lower bound of the present across retries.
            match self.actual.compare_exchange_weak(
                actual,
                start.saturating_add(burst_span),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(self.grant(slot, start, now, permits).with_claim(tag(mode))),
                Err(current) => actual = current,
            }
        }
    }

    /// Average and compensation modes with a maximum wait: compare-exchange,
    /// so a refusal changes nothing.
    fn reserve_accumulator_bounded(
        &self,
        span: u64,
        permits: u32,
        mode: u64,
        cached: bool,
        max_wait: Duration,
    ) -> Result<Grant, AcquireError> {
        let max = saturating_nanos(max_wait);
        // Ordering: Acquire, to start from the latest published schedule.
        let mut slot = self.ideal.load(Ordering::Acquire);
        let mut refreshed = false;
        loop {
            if slot >= self.params.limit {
                return Err(AcquireError::ScheduleExhausted);
            }
            let (seen, now) = if cached {
                // Ordering: Relaxed; see `refresh`.
                let seen = self.last_seen.load(Ordering::Relaxed);
                (
                    seen,
                    if slot < seen {
                        seen
                    } else {
                        self.refresh(seen)
                    },
                )
            } else {
                (0, self.now())
            };
            let ready = self.spaced(mode, slot.max(now));
            if ready - now > max {
                if !refreshed {
                    // The reading may predate grants other threads made
                    // since (this one preempted between reading the clock
                    // and deciding): decide once more on a fresh reading
                    // before refusing. Ordering: Acquire, as above.
                    refreshed = true;
                    slot = self.ideal.load(Ordering::Acquire);
                    continue;
                }
                return Err(would_wait(ready - now, max_wait));
            }
            // Ordering: AcqRel on success as for fetch_add; Acquire on failure
            // to retry against the freshest schedule.
            match self.ideal.compare_exchange_weak(
                slot,
                slot + span,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if (mode >> KIND_SHIFT) & 0b11 == KIND_COMPENSATE && !(cached && slot < seen) {
                        self.compensate(slot, span, now, (mode & 0xff) as u32);
                    }
                    return Ok(self.grant(slot, ready, now, permits).with_claim(tag(mode)));
                }
                Err(current) => slot = current,
            }
        }
    }

    /// Strict and burst modes with a maximum wait.
    fn reserve_dual_bounded(
        &self,
        span: u64,
        burst_span: u64,
        permits: u32,
        mode: u64,
        max_wait: Duration,
    ) -> Result<Grant, AcquireError> {
        let max = saturating_nanos(max_wait);
        let mut refreshed = false;
        loop {
            // A fresh reading, taken first, as in `reserve_dual`.
            let now = self.now();
            // Ordering: Acquire for both, to decide on the latest published state.
            let slot = self.ideal.load(Ordering::Acquire);
            if slot >= self.params.limit {
                return Err(AcquireError::ScheduleExhausted);
            }
            let mut actual = self.actual.load(Ordering::Acquire);
            let present = self.present(now);
            let start = actual.max(slot).max(present);
            if start >= self.params.limit {
                return Err(AcquireError::ScheduleExhausted);
            }
            if start.saturating_sub(now) > max {
                if !refreshed {
                    // As in `reserve_accumulator_bounded`: once more on a
                    // fresh reading (the loop reads the clock again).
                    refreshed = true;
                    continue;
                }
                return Err(would_wait(start - now, max_wait));
            }
            // Ordering: AcqRel on success as for fetch_add; Acquire on failure.
            if self
                .ideal
                .compare_exchange_weak(slot, slot + span, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            // The slot is ours; now the spacing on the actual timeline.
            loop {
                let start = actual.max(slot).max(present);
                if start.saturating_sub(now) > max {
                    // Another op moved `actual` since we looked.
                    self.hand_back(slot, span);
                    return Err(would_wait(start - now, max_wait));
                }
                if start == slot {
                    return Ok(self.grant(slot, start, now, permits).with_claim(tag(mode)));
                }
                if start >= self.params.limit {
                    return Err(self.hand_back(slot, span));
                }
                // Ordering: as in `reserve_dual`.
                match self.actual.compare_exchange_weak(
                    actual,
                    start.saturating_add(burst_span),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        return Ok(self.grant(slot, start, now, permits).with_claim(tag(mode)))
                    }
                    Err(current) => actual = current,
                }
            }
        }
    }

    /// Gives the slot `slot..slot + span` just taken back if nobody
    /// reserved after it, else leaves a hole; for a strict or burst op
    /// whose start the timeline cannot hold.
    #[cold]
    fn hand_back(&self, slot: u64, span: u64) -> AcquireError {
        // Ordering: AcqRel/Relaxed: success publishes the rollback like any
        // reservation; failure needs nothing.
        let _ = self
            .ideal
            .compare_exchange(slot + span, slot, Ordering::AcqRel, Ordering::Relaxed);
        AcquireError::ScheduleExhausted
    }

    #[cold]
    fn undo_exhausted(&self, span: u64) -> AcquireError {
        // Ordering: Relaxed; returning time nobody was granted.
        self.ideal.fetch_sub(span, Ordering::Relaxed);
        AcquireError::ScheduleExhausted
    }

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
        let was_dual = (mode >> KIND_SHIFT) & 0b11 == KIND_DUAL;
        if (new >> KIND_SHIFT) & 0b11 != KIND_DUAL && (was_dual || mode & SPACED != 0) {
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

    /// The ideal start of the next free slot (nosqlbench's ticks accumulator),
    /// as a reading of the pacer's clock.
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

    /// Wait checkpointed at configuration changes and forfeited by burst
    /// compensation since the pacer started or was restarted.
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

    /// The rate the schedule actually keeps, in operations per second:
    /// `1e9 / nanos_per_op()`, one second over the whole-nanosecond slot
    /// `floor(1e9 / rate)` (nosqlbench's arithmetic, pinned by the
    /// conformance vectors), at the current rate (after a
    /// [`set_rate`](Self::set_rate), the new one).
    ///
    /// The truncated slot is never longer than `1e9 / rate`, so this is
    /// never below [`rate`](Self::rate) and above it by less than one part
    /// in the slot's nanoseconds; see [`Rate::effective_rate`]. It is the
    /// long-run rate in every strictness mode: catch-up (burst ratio,
    /// average) only spends schedule time that was already due.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::{ManualClock, Pacer, Rate};
    ///
    /// let pacer = Pacer::builder(Rate::new(3.0)?).build_with_clock(ManualClock::new(0))?;
    /// assert_eq!(pacer.nanos_per_op(), 333_333_333);
    /// assert_eq!(pacer.effective_rate(), 1e9 / 333_333_333.0); // 3.000000003
    ///
    /// // 5.1e8/s is a 1.96 ns slot, truncated to 1 ns: 1e9/s, 96 % too fast.
    /// pacer.set_rate(Rate::new(5.1e8)?)?;
    /// assert_eq!(pacer.effective_rate(), 1e9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn effective_rate(&self) -> f64 {
        per_second_of_nanos(self.nanos_per_op())
    }

    /// The clock this pacer reads.
    pub fn clock_ref(&self) -> &C {
        &self.clock
    }

    /// [`RateLimiter::recovery`]: how the schedule compares with a fresh
    /// pacer's. A fresh pacer starts its schedule at its first request, so
    /// its first op goes at once and the next one a slot later.
    ///
    /// * Idle (never started, or stopped): [`Recovery::Fresh`].
    /// * The next slot, or in strict and burst modes the spacing, after
    ///   now: [`Recovery::Debt`] until then.
    /// * Otherwise, in strict mode, or when the next slot is exactly now:
    ///   [`Recovery::Fresh`]: every request goes when a fresh pacer's would.
    ///   Only the reports differ: a strict pacer behind schedule reports
    ///   its backlog as wait time, a fresh one starts without it.
    /// * Otherwise (average, compensation and burst modes behind
    ///   schedule): [`Recovery::Credit`], the backlog they may still catch
    ///   up faster than the rate.
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
        let busy = ideal.max(actual);
        if busy > now {
            return Recovery::Debt { nanos: busy - now };
        }
        let kind = (mode >> KIND_SHIFT) & 0b11;
        let op = self.params.op_nanos.load(Ordering::Relaxed);
        // Ordering: Relaxed; configuration snapshot, as in `nanos_per_op`.
        let burst = self.params.burst_nanos.load(Ordering::Relaxed);
        if ideal == now || (kind == KIND_DUAL && burst == op) {
            Recovery::Fresh
        } else {
            Recovery::Credit
        }
    }
}

fn would_wait(wait: u64, max_wait: Duration) -> AcquireError {
    AcquireError::WouldWait {
        wait: Duration::from_nanos(wait),
        max_wait,
    }
}

impl<C: Clock> RateLimiter for Pacer<C> {
    fn recovery(&self) -> Recovery {
        self.recovery_now()
    }

    /// Reserves `permits` slices of the schedule.
    ///
    /// Without a maximum wait, the common path is one atomic add (plus, in
    /// strict and burst modes, a clock read and, when off schedule, one
    /// compare-exchange on the same cache line). With a maximum wait, a
    /// compare-exchange loop, so a refusal changes nothing.
    // Always inlined: its common path is a few instructions around one
    // atomic add, and returned in registers only when inlined (LLVM stopped
    // inlining it once a second limiter's reserve shared the budget: 6 ns
    // became 18 ns per acquire).
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
        let span = u64::from(permits).saturating_mul(op);
        if span > MAX_SPAN {
            return Err(AcquireError::InsufficientCapacity {
                requested: permits,
                max: u32::try_from(MAX_SPAN / op.max(1)).unwrap_or(u32::MAX),
            });
        }
        // The common path: a started pacer in average or compensation mode
        // (or a burst slice of zero), no maximum wait: one fetch_add.
        if mode & (IDLE | (KIND_DUAL << KIND_SHIFT)) == 0 && max_wait.is_none() {
            return self.reserve_accumulator(span, permits, mode, mode & CACHED_CLOCK != 0);
        }
        // Ordering: Relaxed; configuration snapshot, read after the mode word.
        let burst =
            u64::from(permits).saturating_mul(self.params.burst_nanos.load(Ordering::Relaxed));
        self.reserve_span(span, burst, permits, max_wait, mode)
    }

    /// Parks while another caller sleeps on the schedule (see
    /// [Waiting](self#waiting)).
    #[inline(always)]
    fn wait_turn(&self) {
        self.room.enter();
    }

    /// Waits for `grant` in the pacer's room (see [Waiting](self#waiting)).
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

    /// Accounts for a wait that let its op go late, in strict and burst
    /// modes; see [Waiting](self#waiting).
    fn released(&self, grant: &Grant) {
        // Ordering: Relaxed for the three: configuration snapshots.
        let mode = self.params.mode.load(Ordering::Relaxed);
        let kind = (mode >> KIND_SHIFT) & 0b11;
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

    /// Gives back the slots of the pacer's latest reservation, or hands an
    /// earlier one to the next caller; see
    /// [Cancelling a reservation](self#cancelling-a-reservation).
    fn cancel(&self, grant: &Grant) -> bool {
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
}

impl<C: Clock> Pacer<C> {
    /// Keeps `grant`, cancelled, for the next caller of its size on this
    /// pacer, without ever moving this pacer's schedule: for a
    /// [`ShardedPacer`](crate::ShardedPacer), whose grants do not say which
    /// shard made them. The slots were issued once (by a sibling shard, on
    /// the same origin and epochs) and are used once, by that next caller.
    /// Refused as [`cancel`](RateLimiter::cancel) refuses: a grant whose
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
    /// reservation](self#cancelling-a-reservation).
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
        if (mode >> KIND_SHIFT) & 0b11 == KIND_DUAL && ready != start {
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

impl<C> Pacer<C> {
    /// The next slot as a clock reading, for display.
    fn next_slot_snapshot(&self) -> u64 {
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

#[cfg(all(test, not(loom)))]
mod tests;
