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
mod builder;
mod cancel;
pub(crate) mod decision;
mod limiter;
mod params;
mod reconfigure;
mod reserve;
pub mod shard;
mod strictness;

pub use batch::{PacerHandle, DEFAULT_MAX_LEASE, MAX_LEASE_SLOTS};
pub use builder::PacerBuilder;
pub use limiter::Pacer;
pub use shard::{ShardError, ShardHandle, ShardedPacer, MAX_SHARDS};
pub use strictness::{compensation_shift, Strictness, StrictnessError, StrictnessMode};

#[cfg(doc)]
use crate::limiter::{AcquireError, RateLimiter};
#[cfg(doc)]
use crate::wait::WaitPolicy;

#[cfg(all(test, not(loom)))]
mod tests;
