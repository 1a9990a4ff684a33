//! Rate limiters that keep a nanosecond schedule and report every operation's
//! wait time, exact to the reference implementations they follow.
//!
//! ```
//! use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter};
//!
//! let clock = ManualClock::new(0);
//! let pacer = Pacer::builder(Rate::new(1000.0)?).strictness(1.0).build_with_clock(clock.clone())?;
//! let first = pacer.acquire();
//! let second = pacer.acquire(); // one slot (1 ms) later; the manual clock moved
//! assert_eq!(second.ready_nanos() - first.ready_nanos(), 1_000_000);
//! assert!(pacer.try_acquire().is_err()); // the next slot is not due
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The limiters
//!
//! Each family is one algorithm, written once as a decision over a compact
//! state that the in-memory limiter and the [`keyed`] map both use.
//!
//! * [`Pacer`] ([`pacer`]): nosqlbench's lock-free nanosecond schedule, one
//!   atomic add and one clock read per grant, and one
//!   [strictness](pacer::Strictness) knob.
//! * [`TokenPool`] ([`pool`]): nosqlbench's active, burst and waiting pools,
//!   first-come-first-served waiting.
//! * [`SmoothBursty`], [`SmoothWarmingUp`] ([`smooth`]): Guava's
//!   `RateLimiter`, in Guava's microseconds or in nanoseconds.
//! * [`RefillLimiter`], [`CycleLimiter`] ([`bucket`]): a strict token bucket
//!   refilled nanosecond by nanosecond, and Resilience4j's fixed cycles.
//!   Resilience4j's interface over them (names, events, a registry,
//!   decorators) is the `ratekeeper-resilience4j` crate.
//!
//! # Around them
//!
//! * **Deciding and waiting:** [`RateLimiter`] (the decision, `reserve`, and
//!   the completion protocol every waiter drives), [`Grant`],
//!   [`AcquireError`]; blocking waits in [`wait`], async ones in `tokio`
//!   (feature `tokio`).
//! * **Time:** [`Clock`], [`DefaultClock`], [`ManualClock`] for exact tests.
//! * **Contention:** [`BatchHandle`] ([`batch`]), [`Pacer::handle`],
//!   [`ShardedPacer`].
//! * **Per key:** [`keyed::Keyed`], a capped map of compact states.
//! * **Limiters as data:** [`config::LimiterConfig`] (`"pacer:10,1.5"`),
//!   [`RateSpec`] (nosqlbench's `rate[,burst][,verb]`), [`Rate`].
//! * **Errors:** [`ConfigError`] for every builder and configuration,
//!   [`AcquireError`] for a refused request, [`SpecError`] for a spec's
//!   text.
//!
//! A rate `R` gives each permit `floor(1e9 / R)` ns of a timeline. A grant
//! carries its **scheduled** time (the ideal schedule's), its **ready** time
//! (when it may go) and when it was decided; the op's wait time is when it
//! actually started minus its scheduled time, free of coordinated omission.
//!
//! # Crate features
//!
//! * `quanta` (default): [`DefaultClock`] reads the CPU's time-stamp counter
//!   where the kernel keeps its monotonic clock on it; without it, it is
//!   [`MonotonicClock`].
//! * `serde`: [`RateSpec`] and [`LimiterConfig`](config::LimiterConfig) as
//!   their string forms, and `Serialize` for [`Rate`].
//! * `tokio`: async waits on tokio's timer for every limiter, cancel safe.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod batch;
pub mod bucket;
pub mod clock;
pub mod config;
pub mod error;
pub mod grant;
mod internal;
pub mod keyed;
pub mod limiter;
pub mod pacer;
pub mod pool;
pub mod rate;
pub mod smooth;
pub mod spec;
mod store;
mod sync;
#[cfg(all(test, not(loom)))]
mod test_util;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;
pub mod wait;

pub use batch::BatchHandle;
pub use bucket::{CycleConfig, CycleLimiter, RefillConfig, RefillLimiter};
#[cfg(feature = "quanta")]
pub use clock::TscClock;
pub use clock::{Clock, DefaultClock, ManualClock, MonotonicClock};
pub use error::{ConfigError, ConfigErrorKind, ConfigReason};
pub use grant::{AcquireError, Grant, Readiness, Ticket, WaitStats};
pub use limiter::{PermitCount, RateLimiter, Recovery};
pub use pacer::{Pacer, PacerBuilder, PacerHandle, ShardHandle, ShardedPacer};
pub use pool::{Pools, TokenPool};
pub use rate::Rate;
pub use smooth::{SmoothBursty, SmoothWarmingUp};
pub use spec::{BurstRatio, RateSpec, Scope, SpecError, SpecErrorKind, Verb};
pub use wait::WaitPolicy;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The examples of `docs/limiters.md`, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/limiters.md")]
struct LimitersDoctests;
