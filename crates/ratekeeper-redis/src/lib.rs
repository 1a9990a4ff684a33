//! One ratekeeper limit shared by many processes and machines, kept on
//! Redis (or Valkey, which speaks the same protocol).
//!
//! A [`RedisLimiter`] keeps one limit under one key: the Pacer's schedule
//! (nosqlbench's ticks accumulator, in its average, burst-compensation,
//! strict and burst-ratio modes) or the refill bucket (Resilience4j's
//! strict token bucket: rate, capacity, initial permits, a timeout that
//! refuses without changing anything). Each decision is one Lua script run
//! atomically on the server (`EVALSHA`), on the **server's clock** (`TIME`
//! inside the script), so the clocks of the processes sharing the limit
//! never matter. The script does what the in-memory [`Pacer`] and
//! [`RefillLimiter`] do, in the same integer nanoseconds, so a grant
//! carries the same scheduled and ready times and the same exact wait, on
//! the local clock.
//!
//! Failure is a [`FailurePolicy`] chosen per limiter (admit, refuse, or
//! decide locally at a share of the rate); a per-decision deadline (default
//! 20 ms) bounds every decision, reconnects included, and a circuit breaker
//! skips a failing server with one probe at a time. Every [`Decision`] says
//! where it came from ([`Source`]).
//!
//! # Layout
//!
//! * `backend`: the connection (redis-rs's `ConnectionManager`, one
//!   multiplexed connection per [`Backend`]), the scripts, the deadline,
//!   the breaker and the single-flight reload after `NOSCRIPT`;
//! * `limit`: [`SharedLimit`], what a key limits to, from a
//!   [`LimiterConfig`](ratekeeper::config::LimiterConfig);
//! * `limiter`: [`RedisLimiter`], the policy, and the translation of the
//!   server's answers into [`Grant`](ratekeeper::Grant)s;
//! * `blocking`: [`BlockingLimiter`], the same as a
//!   [`RateLimiter`](ratekeeper::RateLimiter) for threads;
//! * `scripts/*.lua`: the two scripts.
//!
//! # The scripts' state and its bounds
//!
//! A key is one string value: its origin (the server clock, whole microseconds, when
//! it was created) and the limiter's time indexes in nanoseconds since
//! then, below 2^53 so that Lua's doubles hold them exactly (the origin
//! moves up after 52 days). The server clock has microsecond resolution: a
//! schedule's times are whole nanoseconds, its clock readings whole
//! microseconds. A key lives until its limit has caught up with the clock
//! plus an idle TTL ([`DEFAULT_IDLE_TTL`]); a key that expired starts again
//! as a new limiter would (a new bucket holds its initial permits and
//! refills from its first request, granted or refused; a new schedule
//! starts at the first request).
//!
//! Unlike the in-memory Pacer, the shared schedule does not excuse the
//! lateness of a process's own wake-ups (it cannot see them): in strict
//! mode, a late op spaces the next one from its late start.
//!
//! # Fewer round trips
//!
//! * **The denial cache** (always on): a refusal from the server bounds
//!   the limit's time index from below, so later requests that could not
//!   wait that long are refused here ([`Source::Cache`]) until the refused
//!   wait has passed. It refuses nothing the server would grant (the
//!   indexes only move forward, whoever writes them), and is keyed by this
//!   limiter's own quota; see the `cache` module.
//!
//! # Leases
//!
//! With [`RedisLimiterBuilder::lease`], a limiter takes permits (the
//! bucket) or slots of the schedule (the Pacer) from the server one lease
//! window (e.g. 1 ms) of its measured rate at a time, in one round trip,
//! and hands them out locally ([`Source::Lease`]); concurrent requests
//! that find the lease empty are coalesced into one refill sized for all
//! of them. The bound: leased Pacer slots keep the schedule's rate exactly
//! (each op goes at its own slot), but a process late to use them may use
//! up to one lease closer together than strict mode spaces them; leased
//! bucket permits admit, over any interval, at most one lease per process
//! beyond the bucket (they were taken when leased), which summed over all
//! processes is at most one window of the whole limit's rate. Unused
//! leases expire one window after they were due.
//!
//! [`Pacer`]: ratekeeper::Pacer
//! [`RefillLimiter`]: ratekeeper::RefillLimiter

mod backend;
mod blocking;
mod breaker;
mod cache;
mod decision;
mod error;
mod lease;
mod limit;
mod limiter;
mod offset;
pub mod sim;

pub use backend::{
    Backend, BackendBuilder, BackendStats, DEFAULT_BREAKER_COOLDOWN, DEFAULT_BREAKER_FAILURES,
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_DEADLINE,
};
pub use blocking::{BlockingBackend, BlockingLimiter};
pub use decision::{Admission, Decision, Source};
pub use error::RedisError;
pub use limit::SharedLimit;
pub use limiter::{
    ClientStats, DecisionStats, FailurePolicy, RedisLimiter, RedisLimiterBuilder, ServerAnswer,
    DEFAULT_IDLE_TTL,
};
