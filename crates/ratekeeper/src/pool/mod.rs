//! nosqlbench's hybrid rate limiter (its "G2" design): a token pool of
//! nanoseconds, with active, burst and waiting pools.
//!
//! One token is one nanosecond of schedule time: a filler adds the
//! nanoseconds since its last fill, and an op takes `floor(1e9 / rate)` of
//! them. Idle time is banked up to a small bound; time nobody used becomes
//! a *backlog*, caught up at a limited burst rate.
//!
//! * [`TokenPool`], the limiter: lock-free when tokens are there (one
//!   compare-exchange), first come first served when they are not.
//! * [`Pools`], G2's state and arithmetic alone (no thread, clock or
//!   waiting), O(1) per operation; every fill of the limiter goes through it.
//!
//! ```
//! use ratekeeper::{RateLimiter, Rate, TokenPool};
//!
//! // 1000 ops/s; a backlog is caught up at up to 1100 ops/s.
//! let pool = TokenPool::from_spec(&"1000,1.1".parse()?).build()?;
//! let grant = pool.acquire(); // the start pre-filled one op: no wait
//! assert_eq!(pool.wait_stats().backlog_nanos, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The repository's `docs/pool.md` has the long reference (the pools drawn,
//! the queue, wait time, verbs, G3).
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
//! It meters `1e9 / floor(1e9 / R)` ops per second
//! ([`TokenPool::effective_rate`]).
//!
//! # The refill step
//!
//! [`Pools::refill`] adds the nanoseconds since the last fill to the active
//! pool up to `max_active`, the overflow to the waiting pool, then moves
//! from waiting to active a burst fill proportional to the time covered
//! (`min(new / max_active, 1) × burst_pool`, capped at `max_over_active`).
//! A backlog drains at `(B - 1) ×` elapsed time, so ops catch up at `B × R`;
//! with B = 1.0 it never drains.
//!
//! # Serving waiting callers first
//!
//! With [`Filling::Inline`], a fill gives queued claims the tokens it
//! measured **before** G2's step sees the rest, so a late fill turns no time
//! owed to waiting callers into backlog. The other fillings apply G2's step.
//!
//! # Choosing the filling
//!
//! [`Filling::Inline`] (default): callers fill from the clock, one waiter at
//! a time; no thread. [`Filling::Thread`]: a filler thread every interval
//! (1 ms by default). [`Filling::Manual`]: only [`TokenPool::refill`].
//!
//! # Idle pools
//!
//! With nobody queued and the active pool full, a [`Filling::Thread`]
//! filler parks ([`TokenPool::is_filler_parked`]); the parked time reaches
//! the waiting pool in one step when it wakes or the backlog is read.
//!
//! # Cancelling a reservation
//!
//! [`cancel`](crate::RateLimiter::cancel) withdraws a **queued claim** no
//! thread is blocked on: its tokens go to the claims behind it, then the
//! active pool, then the waiting pool (tokens are conserved), and the next
//! ops are scheduled where it was. Anything else returns `false` and
//! changes nothing. O(1) amortised, under the pool's lock.
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
//! happens after the fill that put its tokens there and every earlier take.
//! A waiter registers under the lock before parking and fills unpark after
//! completing claims under the lock, so no wake-up is lost (loom-checked;
//! invariants in `docs/pool.md`).
//!
//! # Overflow
//!
//! The content, `active + waiting`, is bounded by [`MAX_POOL_NANOS`]: a
//! refill adds only what fits, so nothing overflows or panics. A claim whose
//! tokens, with those owed ahead of it, would pass `u64::MAX` is refused with
//! [`AcquireError::ScheduleExhausted`](crate::AcquireError::ScheduleExhausted).
//!
//! # Differences from the reference
//!
//! From nosqlbench's G2 (in full in `docs/pool.md`): [`Pools`] is only the
//! arithmetic, non-blocking; waiters are served in order and keep partial
//! tokens, so a request larger than the pool completes; inline filling
//! serves queued callers first; the filler is optional, parks when idle and
//! stops on drop; `restart` pre-fills one op; each op's own wait is
//! reported; invalid configurations are errors; the content saturates
//! instead of wrapping.

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
pub(crate) use filling::TokenPoolError;
pub use filling::{Filling, DEFAULT_FILL_INTERVAL, MAX_FILL_INTERVAL, MIN_FILL_INTERVAL};
pub use limiter::TokenPool;
pub(crate) use pools::PoolError;
pub use pools::{Pools, MAX_POOL_NANOS, MIN_ACTIVE_NANOS, MIN_CONCURRENT_OPS};

/// The fine print's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/pool.md")]
struct PoolDocDoctests;

#[cfg(all(test, not(loom)))]
mod tests;
