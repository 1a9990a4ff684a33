//! The two bucket algorithms of Resilience4j, Rust-shaped: [`RefillLimiter`],
//! a strict token bucket with gradual refill, and [`CycleLimiter`],
//! Resilience4j's default fixed-cycle limiter. Both implement
//! [`RateLimiter`](crate::RateLimiter): reserve with a maximum wait, cancel,
//! change the limit at runtime, drain, read the permits available.
//! Resilience4j's own interface over them (names, events, a timeout, a
//! registry, decorators) is the `ratekeeper-resilience4j` crate.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::bucket::{RefillConfig, RefillLimiter};
//! use ratekeeper::RateLimiter;
//!
//! let config = RefillConfig::builder()
//!     .limit_for_period(10)                          // 10 permits ...
//!     .limit_refresh_period(Duration::from_secs(1))  // ... per second, refilled gradually
//!     .permit_capacity(20)                           // bursts of up to 20
//!     .build()?;
//! let limiter = RefillLimiter::new(config);
//! assert!(limiter.try_acquire().is_ok()); // the bucket starts with 10
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each algorithm's arithmetic is written once, as a pure decision over a
//! compact state (`decision.rs`): the limiters commit it to one state word,
//! and [`Keyed`](crate::keyed::Keyed) to one word per key. A decision is O(1):
//! one clock read and one compare-exchange, retried under contention. The
//! repository's `docs/bucket.md` has the derivations, the fine print of
//! cancelling, worked examples and the implementation notes.
//!
//! # The bucket
//!
//! A [`RefillLimiter`] refills one permit every `limit_refresh_period /
//! limit_for_period` whole nanoseconds (see
//! [`effective_rate`](RefillLimiter::effective_rate)), holds at most
//! `capacity` permits (the burst; `limit_for_period` unless set) and starts
//! with `initial_permits` (`limit_for_period` unless set). A request that must
//! wait is granted if the wait is within the caller's maximum (a
//! *reservation*: the available count goes negative until then) and refused,
//! changing nothing, if not. Over any window the permits granted are at most
//! `capacity + window / nanos_per_permit`.
//!
//! # The cycle limiter
//!
//! A [`CycleLimiter`] cuts time into cycles of `limit_refresh_period` from its
//! creation; each cycle starts with `limit_for_period` permits (unused ones do
//! not carry over), and reservations are repaid by later cycles. It is a fixed
//! window: up to `2 × limit_for_period` permits can go within nanoseconds
//! across a cycle boundary.
//!
//! # Cancelling a reservation
//!
//! [`RateLimiter::cancel`](crate::RateLimiter::cancel) gives back a
//! reservation that **had to wait**, before its ready time, as Go's
//! `Reservation.Cancel` does (Resilience4j cannot): [`RefillLimiter`] moves
//! its time index back by as much as the reservations made after it leave, so
//! no window gets more than the bucket allows; [`CycleLimiter`] gives back
//! only the latest reservation, while its cycle is the current one. A
//! reservation that cannot go back is **kept** (`cancel` returns `true`, the
//! state is untouched): the next reservation of the same number of permits
//! gets its ready time, if within its maximum wait, so its permits go once,
//! and nothing is admitted that the limiter did not already allow. A kept
//! reservation is dropped when its ready time passes or the limit changes; a
//! drain keeps it.
//!
//! `cancel` returns `false`, changing nothing, for a grant already cancelled
//! or handed on, one whose ready time has passed, one that was ready when
//! made, and one made before a limit change. A grant from another limiter, or
//! one whose permits already went, must not be cancelled: the limiter cannot
//! always tell it from one of its own still waiting. A cancel takes the
//! limiter's change mutex; a give-back costs one allocation.
//!
//! # Differences from refill-rate-limiter and Resilience4j
//!
//! * **No over-admission.** refill-rate-limiter serves stored permits without
//!   moving its time index, so it grants up to twice its capacity at one
//!   instant; here every grant is charged to the time index.
//! * **A limit change sets `n` per the configured period.**
//!   refill-rate-limiter divides its *current* nanos per permit by `n`, so
//!   calls compound. Here the capacity becomes `max(capacity, n)` and the
//!   token count, stored or owed, is kept. The cycle limiter applies the new
//!   limit from the next cycle, as Resilience4j documents (its code applies it
//!   to skipped cycles too).
//! * **A refused acquire returns at once**, not after the whole timeout.
//! * **Drain** empties the refreshed count, keeps reservations and reports the
//!   permits drained. Resilience4j drains the count from before the cycle
//!   refresh; both references cancel reservations and report 0.
//! * **Validation.** Permits or limits below 1 (negative permits *add* permits
//!   in both references), periods below 1 ns, negative timeouts, a capacity
//!   below the limit, initial permits outside `0..=capacity` and values that
//!   overflow 64-bit nanoseconds are typed errors
//!   ([`ConfigError`](crate::ConfigError),
//!   [`AcquireError`](crate::AcquireError)). More permits than the capacity is
//!   [`AcquireError::InsufficientCapacity`](crate::AcquireError::InsufficientCapacity)
//!   for the bucket; the cycle limiter waits several cycles, as Resilience4j.
//! * **No wrapping arithmetic.** Resilience4j's cycle arithmetic wraps (a
//!   period of 2^62 ns turns a 2-cycle wait negative); here products saturate
//!   or the request is refused.
//! * **Time** is the limiter's [`Clock`](crate::Clock) for decisions and waits
//!   alike (refill-rate-limiter parks in real time).
//!
//! # Memory ordering
//!
//! Every grant is an acquire-release compare-exchange on the limiter's one
//! state word, so a grant *happens after* every earlier grant on the same
//! limiter: data written by one caller before it was granted is visible to a
//! caller granted later. A limit change happens after every grant it kept and
//! before every grant on the new parameters.

mod builder;
mod config;
mod cycle;
mod decision;
mod refill;

pub(crate) use builder::Fields;
pub use builder::{CycleConfigBuilder, RefillConfigBuilder};
pub(crate) use config::PermitConfigError;
pub use config::{
    limit_for_rate, whole_period, CycleConfig, RefillConfig, DEFAULT_LIMIT_FOR_PERIOD,
    DEFAULT_LIMIT_REFRESH_PERIOD, DEFAULT_TIMEOUT,
};
pub use cycle::CycleLimiter;
pub use decision::BucketState;
pub(crate) use decision::{CycleRule, RefillRule};
pub use refill::RefillLimiter;

/// The examples of docs/bucket.md, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/bucket.md")]
struct BucketDocDoctests;
