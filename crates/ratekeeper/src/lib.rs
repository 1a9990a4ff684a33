//! Rate limiters that keep a nanosecond schedule and report every operation's
//! wait time.
//!
//! ratekeeper implements, behind one small trait, the limiters of well-known
//! designs, exact to their reference implementations:
//!
//! * [`Pacer`]: nosqlbench's core rate limiter. A lock-free nanosecond schedule
//!   (one atomic add and one clock read per grant, so every grant's wait is
//!   exact), and one [strictness](pacer::Strictness) knob: average, burst
//!   compensation, strict, or burst ratio.
//! * [`TokenPool`]: nosqlbench's hybrid limiter. Active, burst and waiting
//!   pools of nanosecond tokens refilled from measured time (inline by the
//!   callers, or by a thread), a lock-free take, first-come-first-served
//!   waiting woken by the fills, and the backlog reported apart from each
//!   op's own wait.
//! * [`SmoothBursty`] and [`SmoothWarmingUp`]: Guava's `RateLimiter`, exact to
//!   Guava's own tests: stored permits from idle time (free, or costly while
//!   warming up), and "the next caller pays". In Guava's whole microseconds
//!   by default, which under-charge above 100 000 permits per second and do
//!   not limit above 1 000 000; in whole nanoseconds with
//!   [`smooth::Resolution::Nanos`].
//! * [`RefillLimiter`] and [`CycleLimiter`]: Resilience4j's two algorithms
//!   ([`bucket`]): a strict token bucket with nanosecond-gradual refill, a
//!   burst capacity and initial permits (refill-rate-limiter, without its
//!   over-admission), and Resilience4j's own fixed cycles
//!   (`AtomicRateLimiter`, its drain fixed). Resilience4j's interface over
//!   them (timeouts, names, events, a registry, decorators) is the
//!   `ratekeeper-resilience4j` crate.
//!
//! # Contents
//!
//! * [Which limiter should I use?](#which-limiter-should-i-use)
//! * [Time is the currency](#time-is-the-currency)
//! * [API themes](#api-themes)
//! * [Crate features](#crate-features)
//!
//! # Which limiter should I use?
//!
//! | you want | use |
//! |---|---|
//! | to pace a load generator and report latency free of coordinated omission | [`Pacer`] (burst 1.1, the default) |
//! | ops never closer than 1/rate, lateness kept | [`Pacer`] with strictness `1.0` |
//! | only the long-run average to hold, any catch-up burst allowed | [`Pacer`] with strictness `0.0` |
//! | nosqlbench's token pool: a small bank of idle time, a backlog caught up at `burst × rate`, the backlog as a gauge | [`TokenPool`] |
//! | Guava's behaviour: up to 1 s of permits stored while idle, spent at once | [`SmoothBursty`] |
//! | a cold start after idle time, full rate once warm | [`SmoothWarmingUp`] |
//! | either of Guava's above 100 000 permits per second | it, with [`.resolution(Resolution::Nanos)`](smooth::Resolution) |
//! | a token bucket with a burst capacity and initial permits (reserve, drain, runtime changes) | [`RefillLimiter`] |
//! | Resilience4j's default limiter (fixed windows from creation), e.g. while migrating from it | [`CycleLimiter`] |
//! | Resilience4j's interface (timeouts, events, a registry, decorators) | the `ratekeeper-resilience4j` crate |
//!
//! # Time is the currency
//!
//! A rate R gives each permit `floor(1e9 / R)` ns of a timeline. For each
//! request a limiter decides when it may go: its **scheduled** time (when it
//! would start if every request had kept the ideal schedule) and its **ready**
//! time (when the limiter lets it go). When the op actually starts minus its
//! scheduled time is its **wait time**; response time = wait time + service
//! time. Every [`Grant`] carries all three.
//!
//! # API themes
//!
//! * **Decide, then wait.** [`RateLimiter::reserve`] decides and never sleeps.
//!   `try_acquire*` never waits, `acquire*` blocks the thread,
//!   `acquire_timeout` waits at most a timeout and refuses at once, changing
//!   nothing, when that would not be enough.
//! * **Not now versus never.** [`AcquireError::WouldWait`] says how long the
//!   wait would be; [`AcquireError::ZeroPermits`] and
//!   [`AcquireError::InsufficientCapacity`] can never succeed.
//! * **Injectable clocks.** Limiters are generic over a [`Clock`]:
//!   [`DefaultClock`] (the TSC where the kernel trusts it, else
//!   `std::time::Instant`), [`ManualClock`] for exact, instant tests
//!   (`*_with_clock` constructors).
//! * **No spinning.** Blocking waits sleep and wake about on time; an op goes
//!   early only when sleeping to it is impossible (at most half a slot), and
//!   at high rates one sleep lets a group of ops go, a little late, their
//!   waits saying so ([`WaitPolicy`]); the Pacer lets one waiting thread
//!   sleep at a time. Spinning is opt-in.
//! * **Batching under contention.** From several threads at very high rates a
//!   limiter's shared state is the bottleneck. A [`BatchHandle`] (one per
//!   thread, over any limiter) takes up to 1024 permits with one reservation
//!   and grants them locally; [`Pacer::handle`] does the same for the Pacer's
//!   schedule, slot by slot, and [`PacerBuilder::build_sharded`] splits a
//!   Pacer into shards. Each documents its slack.
//! * **Specs as strings.** [`RateSpec`] parses nosqlbench's `rate[,burst][,verb]`
//!   grammar, e.g. `"12000,1.1,restart"`.
//! * **Limiters as data.** A [`LimiterConfig`](config::LimiterConfig) names any
//!   limiter with its parameters (`"pacer:10,1.5"`, `"refill:100,100ms,capacity=20"`),
//!   how threads reach it (batching handles, shards) and how they wait, and
//!   builds it on any clock: as one value, or as `n` of one concrete type for
//!   a [`LimiterVisitor`](config::LimiterVisitor) whose loop stays
//!   monomorphised.
//!
//! # Crate features
//!
//! * `quanta` (default): the default clock, `TscClock`, reads the CPU's
//!   time-stamp counter through quanta where the kernel keeps its monotonic
//!   clock on it (a fraction of the cost of an `Instant` read).
//!   Without it, [`DefaultClock`] is [`MonotonicClock`].
//! * `serde`: `Serialize`/`Deserialize` for [`RateSpec`] and
//!   [`LimiterConfig`](config::LimiterConfig) (as their string forms) and
//!   `Serialize` for [`Rate`].
//! * `tokio`: async waiting on tokio's timer for every limiter, cancel safe
//!   (the `tokio` module: async acquire, reservations as values, a
//!   `Stream` throttle, and a clock on tokio's time for
//!   exact tests with paused time).
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
pub use error::{ConfigError, ConfigErrorKind};
pub use grant::{AcquireError, Grant, Readiness, Ticket, WaitStats};
pub use limiter::{PermitCount, RateLimiter, Recovery};
pub use pacer::{Pacer, PacerBuilder, PacerHandle, ShardHandle, ShardedPacer};
pub use pool::{Pools, TokenPool};
pub use rate::{Rate, RateError};
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
