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
//! Failure is a [`FailurePolicy`] chosen per limiter: by default, decide
//! locally at the share of the key this process was using; or at a share
//! given; or refuse; or, asked for by name, admit unchecked. A
//! per-decision deadline (default 20 ms) bounds every decision, reconnects
//! included (a dropped connection is retried on the new one within it),
//! and a circuit breaker skips a failing server with one probe at a time.
//! Every [`Decision`] says where it came from ([`Source`]).
//!
//! # Failure policies and their bounds
//!
//! | policy | while the server fails, this process admits at most |
//! |---|---|
//! | [`LocalLearned`](FailurePolicy::LocalLearned) (default) | its learned share of the rate (the processes' shares add up to about one) |
//! | [`Local { share }`](FailurePolicy::Local) | `share` of the rate |
//! | [`Closed`](FailurePolicy::Closed) | nothing |
//! | [`Open`](FailurePolicy::Open) | everything asked (no bound) |
//!
//! A local fallback starts when it takes over, owing what the server last
//! said, never with credit gathered before. The fault-injection suite
//! (`tests/faults.rs`) checks each bound under a killed, paused and
//! restarted server, killed connections, `maxmemory`, flushed scripts, a
//! key of another type and a mismatched limit; BENCHMARKS.md has its
//! figures.
//!
//! **Misconfiguration is not an outage.** A key that holds a value of
//! another type ([`RedisError::WrongType`]), or keeps another limit than
//! this limiter's ([`RedisError::LimitMismatch`]: another rate, another
//! strictness, a bucket where this is a Pacer), refuses every request with
//! [`AcquireError::Misconfigured`](ratekeeper::AcquireError::Misconfigured)
//! under every policy, and [`RedisLimiter::config_error`] says why. A
//! process that means to change the key's limit takes it over with
//! [`adopt`](RedisLimiterBuilder::adopt).
//!
//! **Secrets.** No error, `Debug` output or report of this crate holds the
//! URL's password: [`redact_url`] hides it.
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
//! * `limiter/clients`: the cap on [`reserve_for`](RedisLimiter::reserve_for)'s
//!   live clients;
//! * `scripts/*.lua`: the Pacer's and the bucket's scripts, and the cap's,
//!   which runs either of them as a function.
//!
//! # The scripts' state and its bounds
//!
//! A key is one string value: its origin (the server clock, whole microseconds, when
//! it was created) and the limiter's time indexes in nanoseconds since
//! then, below 2^53 so that Lua's doubles hold them exactly (the origin
//! moves up after 52 days); the permits it has granted; and the limit it
//! keeps (checked at every request). The server clock has microsecond resolution: a
//! schedule's times are whole nanoseconds, its clock readings whole
//! microseconds. A key lives until its limit has caught up with the clock
//! plus an idle TTL ([`DEFAULT_IDLE_TTL`], a second: a run that starts
//! after another on the same key has ended starts afresh, while processes
//! using it at the same time share it as it is); a key that expired starts again
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
//! # Capped clients
//!
//! [`reserve_for`](RedisLimiter::reserve_for) keeps one limit per client
//! under the limiter's key as a prefix. Uncapped, each client's key expires
//! once its limit has recovered (exact and free), but nothing bounds how
//! many clients owe time at once: a flood of client names grows the
//! server's memory without bound. [`RedisLimiterBuilder::max_clients`] sets
//! a hard cap, enforced atomically in the same round trip:
//!
//! * a registry of the prefix's live clients (a sorted set of their keys,
//!   scored by when each has recovered) lives beside them;
//! * each call drops up to 4 recovered clients from it and deletes their
//!   keys (the earliest first), and a new client that finds it full drops
//!   up to 4 more: recovered state equals a new limiter's, or holds only
//!   credit, so this admits nothing more (exact, free, no sweeper);
//! * only when every live client holds debt does the
//!   [`Overflow`](ratekeeper::keyed::Overflow) policy decide, as in the
//!   in-memory [`Keyed`](ratekeeper::keyed::Keyed): refuse the new client
//!   (`DenyNew`, the default: a [`WouldWait`](ratekeeper::AcquireError::WouldWait)
//!   until the first live client recovers, nothing written), decide it on
//!   one overflow limit every such client shares (`Shared`), or drop the
//!   client closest to recovering and forgive its debt (`EvictLeastDebt`).
//!
//! Every decision says what happened ([`Decision::admission`]), and
//! [`RedisLimiter::client_stats`] counts it: live clients, evictions of
//! recovered and indebted clients, new clients denied, requests overflowed.
//! A call costs O(log N) for N live clients (a few sorted-set operations
//! beside the limit's own `GET` and `SET`); the registry costs about one
//! key name and a score per live client beside the client's key.
//!
//! **Keys.** A capped prefix takes a hash tag: clients are kept under
//! `{prefix}client`, the registry under `rk:clients:{prefix}` and the
//! overflow limit under `rk:overflow:{prefix}` (a prefix that holds a tag,
//! such as `api:{ip}:`, keeps it and is used as it is). So on a Redis
//! Cluster one capped prefix lives on one node (its slot's primary); spread
//! load over several prefixes. Uncapped, `reserve_for` keeps today's
//! layout (`prefixclient`, any slot) and cost: one script on one key.
//! Turning the cap on (or off) moves a prefix's clients to new keys: they
//! start afresh once. Every process sharing a prefix should give it the
//! same cap and policy (each call enforces its own).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use ratekeeper::keyed::Overflow;
//! use ratekeeper::Rate;
//! use ratekeeper_redis::{Admission, Backend, RedisLimiter, SharedLimit};
//!
//! let backend = Backend::connect("redis://127.0.0.1:6379/").await?;
//! let per_ip = SharedLimit::pacer(Rate::new(10.0)?, 1.0)?;
//! let limiter = RedisLimiter::builder(&backend, "api:per-ip:", per_ip)
//!     .max_clients(100_000)
//!     .overflow(Overflow::DenyNew)
//!     .build()?;
//! let decision = limiter.reserve_for("203.0.113.7", 1, None).await;
//! if decision.admission() == Some(Admission::DeniedNew) {
//!     // Too many clients owe time: answer 429, retrying after the
//!     // refusal's wait.
//!     let retry = decision.result().err().and_then(|e| e.retry_after());
//!     # let _ = retry;
//! }
//! let stats = limiter.client_stats().expect("capped");
//! assert!(stats.live_clients <= 100_000);
//! # Ok(()) }
//! ```
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
pub use error::{redact_url, RedisError};
pub use limit::SharedLimit;
pub use limiter::{
    ClientStats, DecisionStats, FailurePolicy, RedisLimiter, RedisLimiterBuilder, ServerAnswer,
    DEFAULT_IDLE_TTL, MAX_IDLE_TTL, MIN_LEARNED_SHARE,
};
