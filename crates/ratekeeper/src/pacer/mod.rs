//! The Pacer: nosqlbench's core rate limiter, a lock-free nanosecond schedule.
//!
//! A [`Pacer`] hands out slices of a nanosecond timeline, one slice of
//! `floor(1e9 / rate)` ns per permit, in order (so it runs at
//! `1e9 / floor(1e9 / rate)`, slightly above the rate where the slice is
//! not whole: [`Pacer::effective_rate`]). Each grant says when its op was
//! due (**scheduled**), when the pacer lets it go (**ready**) and, once it went,
//! its **wait time**: what a load generator needs to report response times free
//! of coordinated omission. One knob, [`Strictness`], says what happens to time
//! callers did not use. A grant is O(1) and lock-free: one atomic
//! read-modify-write and one clock read (plus, off schedule in strict and
//! burst modes, one compare-exchange).
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
//! The arithmetic lives once, in `decision.rs`; `reserve.rs` holds its
//! specialised lock-free forms, `limiter.rs` the pacer around them, and
//! `docs/pacer.md` the fine print (state layout, waiting, sharding slack).
//!
//! # Cancelling a reservation
//!
//! [`cancel`](RateLimiter::cancel) gives back the slots of the pacer's
//! **latest** reservation: the schedule moves back from the grant's end to
//! its start, so the next reservation gets the slots, and the scheduled and
//! ready times, the cancelled one had. In strict and burst modes the actual
//! timeline moves back too, unless a later op already built on it.
//!
//! An **earlier** reservation's slots cannot move without moving slots
//! already handed out. `cancel` then keeps the grant for the next
//! reservation of the same number of permits (through any [`RateLimiter`]
//! method but [`reserve_nanos`](Pacer::reserve_nanos)), which gets its
//! scheduled and ready times, started at its own clock reading: the slots
//! are used once, at the time the schedule gave them, so nothing is
//! admitted that the schedule did not allow. A kept grant whose ready time
//! passes before anyone takes it is dropped, its slots spent.
//!
//! `cancel` returns `false`, and changes nothing, for a grant
//!
//! * already cancelled (given back or kept), or handed on already;
//! * whose ready time has passed (`ready < now`);
//! * reserved before a reset of the schedule (a rate or strictness change,
//!   [`start`](Pacer::start), [`stop`](Pacer::stop),
//!   [`restart`](Pacer::restart)), while the pacer is stopped, or, if it is
//!   not the latest, one whose slots end past the next free slot;
//! * from [`reserve_nanos`](Pacer::reserve_nanos) (it does not say its size).
//!
//! A grant from another limiter, or one whose op already went, must not be
//! cancelled: the pacer cannot always tell it from one of its own still
//! waiting. A cancel takes the configuration lock; the reservations it
//! races stay lock-free.
//!
//! # Waiting
//!
//! A grant's wait time (`started − scheduled`) is exact: `started` is a
//! clock reading taken when the op is let go, never one cached from before
//! (unless the opt-in [cached clock](PacerBuilder::cached_clock) is on).
//! Blocking callers share a waiting room: one sleeps on the schedule at a
//! time, following the pacer's [`WaitPolicy`], so `N` threads cost about
//! one sleep per group of ops. A wait's own lateness is excused, not
//! charged to the caller, except in strict mode where ops are slept to one
//! by one. Every waiter reports each grant it let go through
//! [`RateLimiter::released`].
//!
//! Under contention, [`PacerHandle`] ([`Pacer::handle`]) leases blocks of
//! the schedule with one atomic add each ([`batch`]), and a
//! [`ShardedPacer`] splits the rate into shards ([`shard`]).
//!
//! # Memory ordering
//!
//! Every reservation is a read-modify-write of the same atomic schedule with
//! acquire-release ordering, so a grant *happens after* every grant reserved
//! before it on the same pacer: data written by one caller before it acquired is
//! visible to a caller that acquired later.
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
pub use limiter::Pacer;
pub use shard::{ShardError, ShardHandle, ShardedPacer, MAX_SHARDS};
pub use strictness::{compensation_shift, Strictness, StrictnessError, StrictnessMode};

#[cfg(doc)]
use crate::limiter::RateLimiter;
#[cfg(doc)]
use crate::wait::WaitPolicy;

/// The fine print in `docs/pacer.md`, its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/pacer.md")]
struct PacerDocDoctests;

#[cfg(all(test, not(loom)))]
mod tests;
