//! Guava's `RateLimiter`: [`SmoothBursty`] and [`SmoothWarmingUp`], exact to
//! Guava's own tests.
//!
//! ```
//! use ratekeeper::{RateLimiter, SmoothBursty};
//!
//! let limiter = SmoothBursty::new(100.0)?; // 100 permits per second
//! let grant = limiter.acquire(); // the first permit is free
//! assert_eq!(grant.wait_nanos(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Stored permits and "the next caller pays"
//!
//! A Guava limiter keeps `next_free`, the earliest time the next request may
//! go, and `stored_permits` carried forward from idle time. A request waits
//! only until `next_free` and charges its own cost to the caller after it.
//! [`SmoothBursty`]'s stored permits are free; [`SmoothWarmingUp`]'s cost up
//! to `cold_factor` times the stable interval, so an idle limiter is cold.
//! Unused time is never a backlog to catch up (that is the
//! [`Pacer`](crate::Pacer)).
//!
//! # Time and numbers
//!
//! Guava's arithmetic: whole microseconds, permits in `f64`, Java's
//! truncating casts, so above 1 000 000 permits per second a single permit
//! costs nothing. [`Resolution::Nanos`] runs the same algorithm in whole
//! nanoseconds. Every call is O(1): one clock read and one 128-bit
//! compare-exchange; rate changes and cancels take a mutex and allocate once.
//!
//! # Cancelling a reservation
//!
//! Guava has no cancel. [`cancel`](crate::RateLimiter::cancel) gives back
//! the **latest** reservation **exactly** (the state returns bit for bit, so
//! the next reservation gets its time and pays what it would have paid);
//! reservations given back newest first all come back. Another waiting
//! grant is kept for the next reservation of the same size. A grant that
//! could go at once, already cancelled, or from before a rate change
//! returns `false`; never cancel another limiter's grant.
//!
//! ```
//! use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
//!
//! let clock = ManualClock::new(0);
//! let limiter = SmoothBursty::builder(10.0).build_with_clock(clock.clone())?;
//! limiter.reserve(1, None)?; // free: the next caller pays
//! let b = limiter.reserve(2, None)?; // waits 100 ms, and charges 200 ms on
//! assert!(limiter.cancel(&b));
//! assert!(!limiter.cancel(&b), "given back already");
//! let c = limiter.reserve(1, None)?;
//! assert_eq!(c.ready_nanos(), b.ready_nanos()); // b's time; the next pays 100 ms
//! assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 200_000_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Memory ordering
//!
//! A reservation that changes the state commits it with one `AcqRel`
//! compare-exchange, and every reservation loads it with `Acquire`: a grant
//! happens after the commit it was decided on. One that changes nothing (at
//! an infinite rate, most) releases nothing: do not hand data between
//! threads through it. Every run equals Guava's serial run in commit order.
//!
//! # Differences from the reference
//!
//! * A warm-up period of 0 is no warm-up (Guava's 0/0 = NaN never throttles
//!   again).
//! * The cold factor must be finite and at least 1.0, the burst seconds
//!   finite and at least 0 (a burst of 0 stores nothing, even at an infinite
//!   rate).
//! * A request's two costs saturate (Guava's `long` wraps past 2^63 ticks).
//! * Zero permits is [`AcquireError::ZeroPermits`](crate::AcquireError).
//! * Grant times saturate at `u64::MAX` on a clock that wraps.
//!
//! The fine print (the trapezoid, the nanosecond mode, cancels, concurrency)
//! is in `docs/smooth.md`.

mod bursty;
mod cancel;
mod common;
pub mod compat;
mod decision;
mod error;
mod limiter;
mod resolution;
pub(crate) mod rule;
mod warming_up;

pub use bursty::{SmoothBurstyBuilder, DEFAULT_MAX_BURST_SECONDS};
pub(crate) use error::SmoothError;
pub use resolution::Resolution;
pub use warming_up::{SmoothWarmingUpBuilder, DEFAULT_COLD_FACTOR};

use crate::clock::DefaultClock;
use limiter::Smooth;

/// Guava's `SmoothBursty`: idle time stores up to `max_burst_seconds × rate`
/// free permits. See the [module documentation](self).
///
///
/// ```
/// use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
///
/// let clock = ManualClock::new(0);
/// let limiter = SmoothBursty::builder(5.0).build_with_clock(clock.clone())?;
/// assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 0);
/// assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 200_000_000); // 0.2 s
/// clock.advance_nanos(2_000_000_000); // idle 2 s: a full burst is stored
/// for _ in 0..5 {
///     assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 0);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SmoothBursty<C = DefaultClock> {
    core: Smooth<C>,
}

/// Guava's `SmoothWarmingUp`: idle time makes the limiter cold; permits are
/// spaced up to `cold_factor` times the stable interval and speed up over the
/// warm-up period. Guava's `testWarmUp` (2 permits/s, a 4 s warm-up, cold
/// factor 3):
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{ManualClock, RateLimiter, SmoothWarmingUp};
///
/// let clock = ManualClock::new(0);
/// let limiter = SmoothWarmingUp::builder(2.0)
///     .warmup(Duration::from_secs(4))
///     .build_with_clock(clock.clone())?;
/// let waits: Vec<u64> = (0..8)
///     .map(|_| {
///         let g = limiter.reserve(1, None).unwrap();
///         clock.advance_nanos(g.delay_nanos()); // sleep it
///         g.delay_nanos() / 1000
///     })
///     .collect();
/// assert_eq!(waits, [0, 1_375_000, 1_125_000, 875_000, 625_000, 500_000, 500_000, 500_000]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SmoothWarmingUp<C = DefaultClock> {
    core: Smooth<C>,
}

/// The fine print's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/smooth.md")]
struct SmoothDocDoctests;

#[cfg(all(test, not(loom)))]
mod tests;
