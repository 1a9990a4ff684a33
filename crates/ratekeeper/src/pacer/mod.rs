//! The Pacer: nosqlbench's core rate limiter, a lock-free nanosecond schedule.
//!
//! A [`Pacer`] hands out slices of a nanosecond timeline in order, one of
//! `floor(1e9 / rate)` ns per permit ([`Pacer::effective_rate`]). Each grant
//! says when its op was due (**scheduled**), when it may go (**ready**) and
//! its **wait time**, free of coordinated omission. [`Strictness`] says what
//! happens to time callers did not use. A grant is O(1) and lock-free: one
//! atomic read-modify-write and one clock read (plus, off schedule in strict
//! and burst modes, one compare-exchange).
//!
//! ```
//! use ratekeeper::{Pacer, RateLimiter};
//!
//! let pacer = Pacer::from_spec(&"10K,1.1".parse()?).build()?;
//! for _ in 0..10 {
//!     let grant = pacer.acquire(); // sleeps until the op's slot
//!     assert!(grant.ready_nanos() >= grant.scheduled_nanos());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The arithmetic is in `decision.rs`, its lock-free forms in `reserve.rs`,
//! the fine print in `docs/pacer.md`.
//!
//! # Cancelling a reservation
//!
//! [`cancel`](RateLimiter::cancel) gives back the slots of the **latest**
//! reservation: the schedule moves back to its start, so the next
//! reservation gets its slots and times (in strict and burst modes the
//! actual timeline too, unless a later op built on it). An **earlier**
//! reservation is kept instead for the next reservation of the same size
//! (any [`RateLimiter`] method but [`reserve_nanos`](Pacer::reserve_nanos)),
//! which gets its times: nothing is admitted that the schedule did not
//! allow. A kept grant whose ready time passes unclaimed is dropped.
//!
//! `cancel` returns `false`, changing nothing, for a grant already
//! cancelled, past its ready time, reserved before a reset of the schedule
//! (rate or strictness change, [`start`](Pacer::start), [`stop`](Pacer::stop),
//! [`restart`](Pacer::restart)) or while stopped, or from `reserve_nanos`;
//! the full list is in `docs/pacer.md`. Never cancel another limiter's grant
//! or one whose op went. A cancel takes the configuration lock; the
//! reservations it races stay lock-free.
//!
//! # Waiting
//!
//! A grant's wait time (`started − scheduled`) is exact: `started` is read
//! when the op is let go (a lower bound with the opt-in [cached
//! clock](PacerBuilder::cached_clock)). Blocking callers share a waiting
//! room: one sleeps on the schedule at a time, following the
//! [`WaitPolicy`]. A wait's own lateness, reported through
//! [`RateLimiter::released`], is excused, except in strict mode where ops
//! are slept to one by one.
//!
//! Under contention, [`PacerHandle`] ([`Pacer::handle`]) leases blocks of
//! the schedule with one atomic add each ([`batch`]), and a
//! [`ShardedPacer`] splits the rate into shards ([`shard`]).
//!
//! # Memory ordering
//!
//! Every reservation is an acquire-release read-modify-write of one atomic
//! schedule, so a grant *happens after* every grant reserved before it on
//! the same pacer: what a caller wrote before acquiring is visible to a
//! caller that acquired later.
//!
//! # Differences from the reference
//!
//! nosqlbench's pacer always skips the clock read for callers it knows to
//! be behind, so a reported wait can miss a stall outside the limiter. Here
//! every grant reads the clock and its wait is exact; the reference's
//! behaviour is the opt-in [cached clock](PacerBuilder::cached_clock).
//!
//! # Invariants
//!
//! 1. No grant is ready before its slot; slots are handed out once, as a
//!    contiguous run of the timeline.
//! 2. In strict and burst modes, grants not exactly on their slot are ready
//!    at least one burst slice apart.
//! 3. A refused bounded reservation changes nothing, except that under
//!    contention in strict or burst mode a slot already taken may be
//!    forfeited (fewer grants, never more).
//! 4. A cancel gives back only slots no standing grant holds, and a kept
//!    grant goes to at most one later caller at its own times, so 1 to 3
//!    hold for the grants still standing.

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
pub(crate) use shard::ShardError;
pub use shard::{ShardHandle, ShardedPacer, MAX_SHARDS};
pub(crate) use strictness::StrictnessError;
pub use strictness::{compensation_shift, Strictness, StrictnessMode};

use crossbeam_utils::CachePadded;

use crate::clock::DefaultClock;
use crate::internal::handoff::Handoff;
#[cfg(doc)]
use crate::limiter::RateLimiter;
use crate::sync::{AtomicU64, Mutex};
use crate::wait::room::Room;
use crate::wait::WaitPolicy;
use limiter::Control;
use params::Params;

/// A lock-free pacer on a nanosecond schedule; see the [module docs](self).
///
/// Build one with [`Pacer::builder`], [`Pacer::from_spec`] or [`Pacer::new`]
/// and share it by reference or in an `Arc`. Strict pacing on a manual
/// clock (a late caller keeps its lateness):
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
// Defined here for its path, `ratekeeper::pacer::Pacer`; its code is in
// limiter.rs and beside it. `repr(C)`: `ideal` and `actual` share the first
// cache line, `last_seen` and `params` have one each (docs/pacer.md).
#[repr(C)]
pub struct Pacer<C = DefaultClock> {
    /// The ideal start of the next free slot (the ticks accumulator).
    ideal: AtomicU64,
    /// Strict and burst modes: the earliest start of the next op.
    actual: AtomicU64,
    /// Lateness of a wait that woke late, excused until the actual timeline
    /// catches up with the clock (see `released`).
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

/// The fine print in `docs/pacer.md`, its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/pacer.md")]
struct PacerDocDoctests;

#[cfg(all(test, not(loom)))]
mod tests;
