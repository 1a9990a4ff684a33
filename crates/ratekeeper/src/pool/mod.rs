//! nosqlbench's hybrid rate limiter (its "G2" design): a token pool of
//! nanoseconds, with active, burst and waiting pools.
//!
//! One token is one nanosecond of schedule time: a filler adds the
//! nanoseconds it measured since its last fill, and every operation takes
//! `floor(1e9 / rate)` of them. Idle time is banked, up to a small bound, and
//! time nobody used in time becomes a *backlog* that is caught up at a
//! limited burst rate. Two types:
//!
//! * [`TokenPool`], the rate limiter: thread-safe, lock-free when tokens are
//!   there (one compare-exchange), first come first served when they are not,
//!   with per-op wait time.
//! * [`Pools`], the pool's state and arithmetic alone, exactly as G2 computes
//!   it, with no thread, clock or waiting: you pass it elapsed time, it tells
//!   you what an operation may take. Every fill of the limiter is computed by
//!   it; each of its operations is O(1).
//!
//! ```
//! use ratekeeper::{RateLimiter, Rate, TokenPool};
//!
//! // 1000 ops/s; a backlog is caught up at up to 1100 ops/s.
//! let pool = TokenPool::from_spec(&"1000,1.1".parse()?).build()?;
//! let grant = pool.acquire(); // the start pre-filled one op: no wait
//! // ... do the op; response time = end - grant.scheduled_nanos()
//! assert_eq!(pool.wait_stats().backlog_nanos, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The long reference (the three pools drawn, the limiter's queue, wait
//! time, verbs, G3's changes) is `docs/pool.md`.
//!
//! # Sizing
//!
//! For a rate R and a burst ratio B (at least 1.0):
//!
//! ```text
//! nanos_per_op    = floor(1e9 / R)
//! max_active      = max(1_000_000, floor(nanos_per_op * 2.0))   // max(1 ms, 2 ops)
//! max_over_active = floor(max_active * B)
//! burst_pool      = max_over_active - max_active
//! ```
//!
//! The pool meters `1e9 / floor(1e9 / R)` ops per second
//! ([`TokenPool::effective_rate`]). Two ops of room absorb the jitter of a
//! caller running at the filler's pace; 1 ms of room holds one fill, so
//! above 2000 ops/s ops may start together right after a fill.
//!
//! # The refill step
//!
//! [`Pools::refill`] adds `new` tokens, the nanoseconds elapsed since the last
//! fill:
//!
//! ```text
//! to_active    = min(new, max(max_active - active, 0))
//! active      += to_active
//! waiting     += new - to_active                          // the overflow
//! factor       = min(new / max_active, 1.0)               // in f64
//! allowed      = min(max_over_active - active, floor(factor * burst_pool))
//! fill         = min(allowed, waiting)
//! waiting     -= fill
//! active      += fill
//! ```
//!
//! The burst fill is proportional to the time a fill covers, so one fill or
//! many smaller ones move the same tokens: a backlog drains at
//! `(B - 1) × elapsed time` and ops catch up at `B × R`. With B = 1.0 a
//! backlog is never recovered. After every refill `active <= max_over_active`.
//!
//! # Serving waiting callers first
//!
//! With [`Filling::Inline`] (the default), a fill that finds claims queued
//! gives them the tokens it measured **before** G2's step sees the rest, so a
//! late fill turns no time owed to waiting callers into backlog. Time that
//! passes while nobody waits overflows as in G2. [`Filling::Thread`] and
//! [`Filling::Manual`] apply G2's step as it is.
//!
//! # Choosing the filling
//!
//! [`Filling::Inline`]: callers fill from the clock, and one waiting caller
//! at a time sleeps until its tokens are due and fills; no thread, and
//! nothing runs while the pool is idle. [`Filling::Thread`]: nosqlbench's
//! filler thread, every interval (1 ms by default), costing one fill per
//! interval whatever the callers do. [`Filling::Manual`]: only
//! [`TokenPool::refill`] adds tokens.
//!
//! # Idle pools
//!
//! A pool is *idle* when nobody is queued and its active pool is full: every
//! token a fill measures would go to the waiting pool. A
//! [`Filling::Thread`] filler then parks ([`TokenPool::is_filler_parked`]),
//! costing no CPU; the time it was parked is added to the waiting pool in one
//! step when it is woken (by the first take, a queued caller, a rate change
//! or a restart) or when the backlog is read.
//!
//! # Cancelling a reservation
//!
//! [`cancel`](crate::RateLimiter::cancel) withdraws a **queued claim** that
//! no thread is blocked on. Tokens it had received go to the claims behind
//! it, then back to the active pool up to `max_over_active`, and the rest to
//! the waiting pool: tokens are conserved. Ops that take the returned tokens
//! are scheduled where the claim was. A grant that took its tokens, a claim
//! a thread waits on, one already withdrawn or another pool's returns
//! `false` and changes nothing. O(1) amortised, under the pool's lock.
//!
//! ```
//! use ratekeeper::pool::{Filling, TokenPool};
//! use ratekeeper::{ManualClock, Rate, RateLimiter};
//!
//! let clock = ManualClock::new(0);
//! let pool = TokenPool::builder(Rate::new(1000.0)?)
//!     .filling(Filling::Manual)
//!     .build_with_clock(clock.clone())?;
//! pool.try_acquire()?; // the pre-filled op
//! let claim = pool.reserve(1, None)?; // queued: 1 ms of tokens missing
//! assert_eq!(pool.waiters(), 1);
//! assert!(pool.cancel(&claim));
//! assert_eq!(pool.waiters(), 0);
//! assert!(!pool.cancel(&claim), "withdrawn already");
//! clock.advance_nanos(1_000_000);
//! pool.refill(1_000_000)?; // the 1 ms the claim would have taken
//! assert_eq!(pool.try_acquire()?.scheduled_nanos(), claim.scheduled_nanos());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Memory ordering
//!
//! A lock-free take is a compare-exchange (`AcqRel`) on `taken` after an
//! `Acquire` load of `filled`, which fills store with `Release`: a grant
//! happens after the fill that put its tokens there and after every take
//! before it on this pool. A waiter registers in its claim under the lock
//! before parking and fills unpark after completing claims under the lock,
//! so no wake-up is lost. The invariants behind this are listed in
//! `docs/pool.md` and on `Shared` (`shared.rs`), and checked by the loom
//! models.
//!
//! # Overflow
//!
//! The content, `active + waiting`, is bounded by [`MAX_POOL_NANOS`]
//! (2^63 - 1 ns): a refill adds only what fits, so nothing overflows or
//! panics. A reservation whose tokens, with those owed to the claims ahead
//! of it, would pass `u64::MAX` is refused with
//! [`AcquireError::ScheduleExhausted`](crate::AcquireError::ScheduleExhausted).
//!
//! # Differences from the reference
//!
//! From nosqlbench's G2 (`TokenPool` / `ThreadDrivenTokenPool`):
//!
//! * [`Pools`] is only the arithmetic; G2's blocking `blockAndTake` becomes
//!   the non-blocking [`Pools::try_take_op`].
//! * Waiters are served first come, first served (G2's `notifyAll` let any
//!   of them win), and a waiter keeps the tokens it has received, so a
//!   request larger than the pool completes (G2 would block forever).
//! * Inline filling serves queued callers first (see above); the filler
//!   thread is optional, parks while the pool is idle, and is stopped and
//!   joined by `stop` and on drop.
//! * `restart` pre-fills one op, as a first start does.
//! * Each op's own wait (scheduled start to actual start) is reported; G2's
//!   `active + waiting` after each take is still what [`Pools::try_take`]
//!   returns.
//! * Invalid configurations are errors: a NaN or infinite burst ratio, a
//!   rate whose op slice is not between 1 ns and 2^62 ns, a pool size of 0,
//!   a fill interval outside 1 µs ..= 1 s.
//! * The content saturates at [`MAX_POOL_NANOS`] instead of wrapping, and
//!   `max_over_active` is never below `max_active`.

mod builder;
mod claims;
mod filler;
mod filling;
mod limiter;
mod pools;
mod shared;
mod wait;

pub use builder::TokenPoolBuilder;
pub use filler::FILLER_THREAD_NAME;
pub use filling::{
    Filling, TokenPoolError, DEFAULT_FILL_INTERVAL, MAX_FILL_INTERVAL, MIN_FILL_INTERVAL,
};
pub use limiter::TokenPool;
pub use pools::{PoolError, Pools, MAX_POOL_NANOS, MIN_ACTIVE_NANOS, MIN_CONCURRENT_OPS};

/// The fine print's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/pool.md")]
struct PoolDocDoctests;

#[cfg(all(test, not(loom)))]
mod tests;
