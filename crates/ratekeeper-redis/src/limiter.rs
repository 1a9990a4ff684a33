//! [`RedisLimiter`]: one limit on the server, its failure policy, and the
//! translation of the server's answers into grants on the local clock.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use ratekeeper::keyed::Overflow;
use ratekeeper::{
    AcquireError, Clock, ConfigError, ConfigErrorKind, DefaultClock, Grant, RateLimiter,
};

use crate::backend::{Backend, Lua};
use crate::cache::DenialCache;
use crate::decision::{Decision, Source};
use crate::error::RedisError;
use crate::lease::{Lease, Take};
use crate::limit::{Script, SharedLimit};
use crate::offset::Offset;

mod clients;
mod fallback;

pub use clients::ClientStats;
use clients::Clients;
pub use fallback::MIN_LEARNED_SHARE;
use fallback::{Fallback, Said};

/// How long a key whose limit has caught up with the clock is kept, by
/// default: a second. A key idle for longer starts again as a new one, so
/// a run that starts after another on the same key has ended never
/// inherits its schedule, while processes that share the key at the same
/// time share it as it is.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(1);

/// The longest idle TTL a limiter takes: 100 years (a key's expiry goes to
/// Redis in whole milliseconds, and Redis reads a script's number as an
/// integer only below 10^14).
pub const MAX_IDLE_TTL: Duration = Duration::from_secs(100 * 365 * 86_400);

/// The largest span of schedule (ns) or wait one request may carry: the
/// scripts compute in Lua numbers (doubles), exact below 2^53.
const MAX_LUA_NANOS: u64 = 1 << 52;

/// The number of arguments a limit's script takes.
pub(crate) const ARGS: usize = 12;
/// The number of integers a limit's script replies with.
pub(crate) const REPLY: usize = 6;

/// What a limiter does when the server cannot decide in time (an error, the
/// deadline, the circuit breaker open). Chosen per limiter; every decision
/// it makes says so in its [`Source`].
///
/// A key that holds something else (another type, another limit) is not a
/// failure: no policy decides it
/// ([`AcquireError::Misconfigured`]).
///
/// A request that ran past the deadline may still reach the server and be
/// granted there after the policy decided: its permits are then spent
/// without being used (the limit errs toward admitting less, never more).
///
/// The local policies' limiter is built when it takes over, starting from
/// what the server last said (the Pacer's next slot, the bucket's permits
/// or debt), never from credit gathered while nobody used it; a new outage
/// after the server answered again builds a new one.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Decide in this process, on an in-memory limiter of the same kind at
    /// this process's share of the key's use, learned from the key's
    /// answers over the last second (at least [`MIN_LEARNED_SHARE`]; the
    /// whole rate before a second of answers) ([`Source::Local`]): the
    /// default.
    ///
    /// Bound: this process admits at most its learned share of the rate
    /// (the processes' shares add up to about one, so together about the
    /// rate).
    #[default]
    LocalLearned,
    /// Decide in this process, on an in-memory limiter of the same kind at
    /// `share` of the rate ([`Source::Local`]); `share` is typically one
    /// over the number of processes sharing the limit.
    ///
    /// Bound: this process admits at most `share` of the rate.
    Local {
        /// The part of the rate this process keeps alone, in (0, 1].
        share: f64,
    },
    /// Admit the request unchecked ([`Source::FailOpen`]), as Envoy, Kong
    /// and Stripe's limiters do; only for limits whose outage must never
    /// refuse anything.
    ///
    /// Bound: none (every request is admitted while the server fails).
    Open,
    /// Refuse it ([`AcquireError::Unavailable`], [`Source::FailClosed`]):
    /// for abuse-sensitive limits (logins, payments).
    ///
    /// Bound: nothing is admitted while the server fails.
    Closed,
}

/// Decisions a [`RedisLimiter`] made, by source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DecisionStats {
    /// Decisions by [`Source`], indexed as [`Source::ALL`].
    pub by_source: [u64; 6],
    /// Of all decisions, the refusals.
    pub refused: u64,
}

impl DecisionStats {
    /// Decisions from `source`.
    pub fn from(&self, source: Source) -> u64 {
        self.by_source[source.index()]
    }

    /// All decisions.
    pub fn total(&self) -> u64 {
        self.by_source.iter().sum()
    }
}

/// Settings of a [`RedisLimiter`]: [`RedisLimiter::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisLimiterBuilder {
    backend: Backend,
    key: String,
    limit: SharedLimit,
    policy: FailurePolicy,
    idle_ttl: Duration,
    lease: Option<Duration>,
    max_clients: Option<usize>,
    overflow: Overflow,
    adopt: bool,
}

impl RedisLimiterBuilder {
    /// What to do when the server cannot decide ([`FailurePolicy::Open`]).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Take over a key that keeps another limit (off by default: such a
    /// key is a [`RedisError::LimitMismatch`] and every request an
    /// [`AcquireError::Misconfigured`]). Adopted, the key keeps this
    /// limiter's limit from the next grant on: the old limit is
    /// checkpointed and its grants stand (the Pacer's schedule goes on
    /// from its next slot at the new spacing; the bucket keeps the permits
    /// it holds or owes, at most the new capacity). Processes that still
    /// keep the old limit then meet the mismatch themselves.
    pub fn adopt(mut self, adopt: bool) -> Self {
        self.adopt = adopt;
        self
    }

    /// Leases of `window` (e.g. 1 ms): permits or slots taken from the
    /// server one window of this process's rate at a time and handed out
    /// here, and concurrent requests coalesced into one round trip; see
    /// [Leases](crate#leases) for what they cost and their bound. Off by
    /// default (every decision is the server's).
    pub fn lease(mut self, window: Duration) -> Self {
        self.lease = Some(window);
        self
    }

    /// How long a caught-up key is kept ([`DEFAULT_IDLE_TTL`]; zero drops
    /// it once caught up, within Redis's millisecond; at most
    /// [`MAX_IDLE_TTL`], checked by [`build`](Self::build)).
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.idle_ttl = ttl;
        self
    }

    /// A hard cap on the live clients of
    /// [`reserve_for`](RedisLimiter::reserve_for) (none by default: each
    /// client's key lives until it has recovered, however many there
    /// are). Capped, the server keeps a registry of the prefix's live
    /// clients beside their keys, drops recovered clients from it for free
    /// inside the calls, and applies the [`overflow`](Self::overflow)
    /// policy when every live client holds debt; see
    /// [Capped clients](crate#capped-clients) for the keys (a hash tag:
    /// `{prefix}client`) and the cost.
    ///
    /// ```
    /// use ratekeeper::{ConfigErrorKind, Rate};
    /// use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit};
    ///
    /// # async fn demo(backend: Backend) {
    /// let limit = SharedLimit::pacer(Rate::new(10.0).unwrap(), 1.0).unwrap();
    /// let err = RedisLimiter::builder(&backend, "api:per-ip:", limit)
    ///     .max_clients(0)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), ConfigErrorKind::MaxKeys);
    /// # }
    /// ```
    pub fn max_clients(mut self, max: usize) -> Self {
        self.max_clients = Some(max);
        self
    }

    /// What a capped limiter does with a new client when every live one
    /// holds debt ([`Overflow::DenyNew`], as the in-memory
    /// [`Keyed`](ratekeeper::keyed::Keyed)): refuse it
    /// ([`Admission::DeniedNew`](crate::Admission::DeniedNew)), decide it on one
    /// overflow limit all such clients share, or drop the client closest
    /// to recovering (its debt forgiven, counted). Only with
    /// [`max_clients`](Self::max_clients).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// The limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Backend`] for an empty key, a local share
    /// outside (0, 1], a zero lease window, an idle TTL above
    /// [`MAX_IDLE_TTL`], or a capped prefix that starts with `}` and holds
    /// no hash tag;
    /// [`ConfigErrorKind::MaxKeys`] for a cap on clients of 0 or above
    /// [`MAX_KEYS`](ratekeeper::keyed::MAX_KEYS), as
    /// [`check_max_keys`](ratekeeper::keyed::check_max_keys) says; the
    /// in-memory limiter's error if the local fallback cannot keep `share`
    /// of the rate.
    pub fn build(self) -> Result<RedisLimiter, ConfigError> {
        if self.lease == Some(Duration::ZERO) {
            return Err(ConfigError::new(
                ConfigErrorKind::Backend,
                Invalid("a lease window of 0 leases nothing: give e.g. 1ms, or no lease".into()),
            ));
        }
        if self.idle_ttl > MAX_IDLE_TTL {
            return Err(ConfigError::new(
                ConfigErrorKind::Backend,
                Invalid(format!(
                    "an idle TTL of {:?} is over the {}-year maximum (MAX_IDLE_TTL)",
                    self.idle_ttl,
                    MAX_IDLE_TTL.as_secs() / (365 * 86_400)
                )),
            ));
        }
        if self.key.is_empty() {
            return Err(ConfigError::new(
                ConfigErrorKind::Backend,
                Invalid("the key is empty: name the limit (e.g. \"api:global\")".into()),
            ));
        }
        match self.policy {
            FailurePolicy::Local { share } if !(share > 0.0 && share <= 1.0) => {
                return Err(ConfigError::new(
                    ConfigErrorKind::Backend,
                    Invalid(format!(
                        "a local share of {share} is not in (0, 1]: give the part of the \
                         rate one process keeps alone (e.g. 0.25 for four processes)"
                    )),
                ));
            }
            // The fallback is built when it takes over; its settings are
            // checked now.
            FailurePolicy::Local { share } => self.limit.scaled_config(share)?.validate()?,
            FailurePolicy::LocalLearned => self.limit.scaled_config(1.0)?.validate()?,
            FailurePolicy::Open | FailurePolicy::Closed => {}
        }
        let clients = Clients::new(&self.key, self.max_clients, self.overflow)?;
        let script = self.limit.script();
        let clock = DefaultClock::new();
        let (unit, cap) = match script {
            Script::Pacer { op, .. } => (op, u64::from(u32::MAX)),
            Script::Refill { npp, capacity, .. } => (npp, capacity),
        };
        let leases = self.lease.map(|window| {
            // One window of the whole limit at most.
            let max = (window.as_nanos() / u128::from(unit.max(1))).clamp(1, u128::from(cap));
            let step = if matches!(script, Script::Pacer { .. }) {
                unit
            } else {
                0
            };
            Leases {
                lease: tokio::sync::Mutex::new(Lease::new(
                    window,
                    step,
                    u32::try_from(max).unwrap_or(u32::MAX),
                    clock.now_nanos(),
                )),
                waiting: AtomicU32::new(0),
            }
        });
        Ok(RedisLimiter {
            cache: DenialCache::new(if matches!(script, Script::Pacer { .. }) {
                0
            } else {
                unit
            }),
            leases,
            lease_window: self.lease,
            offset: Offset::default(),
            script,
            backend: self.backend,
            key: self.key,
            limit: self.limit,
            policy: self.policy,
            adopt: self.adopt,
            fallback: Fallback::new(),
            config_error: Mutex::new(None),
            clock,
            idle_ms: i64::try_from(self.idle_ttl.as_millis()).unwrap_or(i64::MAX),
            by_source: Default::default(),
            refused: AtomicU64::new(0),
            backlog: AtomicI64::new(0),
            clients,
        })
    }
}

/// A setting a [`RedisLimiterBuilder`] refuses.
#[derive(Debug)]
struct Invalid(String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// One limit kept on the server under one key, shared by every process
/// that names the same key and limit, decided on the server's clock.
///
/// [`reserve`](Self::reserve) asks the server for permits (one `EVALSHA`)
/// and returns a [`Decision`]: the grant, with its scheduled and ready
/// times and its exact wait as the in-memory limiter would give them,
/// translated to this process's clock, or the refusal; and where it came
/// from. When the server cannot decide in time, the
/// [`FailurePolicy`] does, and says so.
///
/// Grants are translated to the local clock by an estimate of the server
/// clock's offset: the largest "server reading minus arrival" of the last
/// second, a lower bound of the true offset. So a grant is never ready
/// before the server allowed it (at most the fastest answer's travel time
/// later), grants keep their spacing, and `ready − scheduled` is the
/// server's exact wait, unless the answer arrived after the slot (then the
/// grant is ready on arrival, as an op that asks late is in memory).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use ratekeeper::Rate;
/// use ratekeeper_redis::{Backend, FailurePolicy, RedisLimiter, SharedLimit, Source};
///
/// let backend = Backend::connect("redis://127.0.0.1:6379/").await?;
/// let limit = SharedLimit::pacer(Rate::new(1000.0)?, 1.0)?;
/// let limiter = RedisLimiter::builder(&backend, "load:target-a", limit)
///     .failure_policy(FailurePolicy::Local { share: 0.25 })
///     .build()?;
/// let decision = limiter.acquire(1).await; // waits for its slot
/// let grant = decision.result()?;
/// assert!(grant.ready_nanos() >= grant.scheduled_nanos());
/// assert!(matches!(decision.source(), Source::Redis | Source::Local));
/// # Ok(()) }
/// ```
pub struct RedisLimiter {
    backend: Backend,
    key: String,
    limit: SharedLimit,
    script: Script,
    policy: FailurePolicy,
    /// Whether to take over a key that keeps another limit.
    adopt: bool,
    /// The local policies' limiter, built when it takes over.
    fallback: Fallback,
    /// The last misconfiguration the server reported (a key of another
    /// type or limit).
    config_error: Mutex<Option<RedisError>>,
    clock: DefaultClock,
    idle_ms: i64,
    by_source: [AtomicU64; 6],
    refused: AtomicU64,
    /// The server's schedule ahead of (or behind) its clock at the last
    /// answer, ns (the Pacer's backlog, for `wait_stats`).
    backlog: AtomicI64,
    cache: DenialCache,
    leases: Option<Leases>,
    lease_window: Option<Duration>,
    offset: Offset,
    /// The cap on `reserve_for`'s clients, if any.
    clients: Option<Clients>,
}

/// The lease, and the requests waiting for its refill.
#[derive(Debug)]
struct Leases {
    lease: tokio::sync::Mutex<Lease>,
    waiting: AtomicU32,
}

/// The server's answer in its own terms, for tests that replay the scripts
/// against the in-memory limiters (see [`RedisLimiter::decide_at`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerAnswer {
    /// Whether the request was granted.
    pub granted: bool,
    /// Pacer: scheduled − now (ns). Refill: the wait (ns).
    pub scheduled: i64,
    /// Pacer: ready − now (ns). Refill: the wait (ns).
    pub ready: i64,
    /// Pacer: the accumulator − now (ns). Refill: permits available.
    pub extra: i64,
}

impl RedisLimiter {
    /// Settings for the limit `limit` kept under `key` on `backend`.
    pub fn builder(
        backend: &Backend,
        key: impl Into<String>,
        limit: SharedLimit,
    ) -> RedisLimiterBuilder {
        RedisLimiterBuilder {
            backend: backend.clone(),
            key: key.into(),
            limit,
            policy: FailurePolicy::default(),
            idle_ttl: DEFAULT_IDLE_TTL,
            lease: None,
            max_clients: None,
            overflow: Overflow::DenyNew,
            adopt: false,
        }
    }

    /// The key on the server.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The limit.
    pub fn limit(&self) -> &SharedLimit {
        &self.limit
    }

    /// The failure policy.
    pub fn failure_policy(&self) -> FailurePolicy {
        self.policy
    }

    /// The lease window, if leases are on.
    pub fn lease_window(&self) -> Option<Duration> {
        self.lease_window
    }

    /// The backend (its statistics: round trips, failures).
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The clock grants are on.
    pub fn clock(&self) -> &DefaultClock {
        &self.clock
    }

    /// Decisions so far, by source.
    pub fn stats(&self) -> DecisionStats {
        // Ordering: Relaxed; statistics.
        DecisionStats {
            by_source: std::array::from_fn(|i| self.by_source[i].load(Ordering::Relaxed)),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// This process's share of the key's grants over the last whole second
    /// of answers (see [`FailurePolicy::LocalLearned`]); `None` before one.
    pub fn learned_share(&self) -> Option<f64> {
        self.fallback.learned_share()
    }

    /// The last configuration error the server reported: the key holds a
    /// value of another type ([`RedisError::WrongType`]) or another limit
    /// ([`RedisError::LimitMismatch`]). Every request then fails with
    /// [`AcquireError::Misconfigured`] until the configuration changes;
    /// this says why.
    pub fn config_error(&self) -> Option<RedisError> {
        self.config_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Asks for `permits`, refusing if the wait would pass `max_wait`
    /// (`None`: any wait; nothing is reserved on a refusal). Does not wait
    /// itself: see [`acquire`](Self::acquire).
    pub async fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Decision {
        let decision = self.decide(permits, max_wait).await;
        self.count(&decision);
        decision
    }

    async fn decide(&self, permits: u32, max_wait: Option<Duration>) -> Decision {
        if let Err(e) = self.args(permits, max_wait) {
            return Decision {
                result: Err(e),
                source: Source::Redis,
                error: None,
                admission: None,
            };
        }
        if let Some(max) = max_wait {
            let max_ns = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
            if let Some(wait) = self.cache.refuses(self.clock.now_nanos(), permits, max_ns) {
                return Decision {
                    result: Err(would_wait(wait, max_wait)),
                    source: Source::Cache,
                    error: None,
                    admission: None,
                };
            }
        }
        match &self.leases {
            Some(leases) => self.via_lease(leases, permits, max_wait).await,
            None => self.remote(permits, max_wait).await,
        }
    }

    /// One round trip for `permits`; a refusal is noted in the cache; the
    /// failure policy decides if the server cannot.
    async fn remote(&self, permits: u32, max_wait: Option<Duration>) -> Decision {
        match self.server(permits, max_wait).await {
            Ok(decision) => decision,
            Err(e) => self.on_failure(e, permits, max_wait),
        }
    }

    /// The server's decision on `permits` (one round trip), the refusal
    /// noted in the cache; or why the server could not decide.
    async fn server(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Decision, RedisError> {
        self.server_at_least(permits, permits, max_wait).await
    }

    /// [`server`](Self::server), granting (the bucket) as many of `permits`
    /// as fit `max_wait` if that is at least `least`: the grant's permits
    /// say how many.
    async fn server_at_least(
        &self,
        permits: u32,
        least: u32,
        max_wait: Option<Duration>,
    ) -> Result<Decision, RedisError> {
        let mut args = match self.args(permits, max_wait) {
            Ok(args) => args,
            Err(e) => {
                return Ok(Decision {
                    result: Err(e),
                    source: Source::Redis,
                    error: None,
                    admission: None,
                })
            }
        };
        if matches!(self.script, Script::Refill { .. }) {
            args[7] = i64::from(least.min(permits));
        }
        // What a local fallback granted since the server last decided,
        // charged to the key with this request (given back if it fails).
        let charge = self.fallback.take_charge();
        args[ARGS - 1] = i64::try_from(charge).unwrap_or(i64::MAX);
        let sent = self.clock.now_nanos();
        let reply = match self.backend.eval(self.lua(), &self.key, &args).await {
            Ok(reply) => reply,
            Err(e) => {
                self.fallback.give_back_charge(charge);
                return Err(e);
            }
        };
        let decision = self.translate(&reply, permits, max_wait);
        self.note(&reply, &decision, charge);
        if let Err(AcquireError::WouldWait { wait, .. }) = decision.result {
            let wait = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
            self.cache.refused(sent, least.min(permits), wait);
        }
        Ok(decision)
    }

    /// `permits` from the lease, or from a refill of it sized for this
    /// request and those queued behind it (one round trip for all).
    async fn via_lease(
        &self,
        leases: &Leases,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision {
        let max_ns = max_wait.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        // Ordering: Relaxed for `waiting`; a count for sizing, no data.
        leases.waiting.fetch_add(1, Ordering::Relaxed);
        let mut lease = leases.lease.lock().await;
        let waiting = leases.waiting.fetch_sub(1, Ordering::Relaxed) - 1;
        match lease.take(permits, self.clock.now_nanos(), max_ns) {
            Take::Granted(grant) => return self.leased(Ok(grant)),
            Take::TooLate(wait) => return self.leased(Err(would_wait(wait, max_wait))),
            Take::Empty => {}
        }
        let size = lease.size(self.clock.now_nanos(), permits, waiting);
        // The bucket leases only what it holds now; the Pacer leases slots
        // from its next one, which the request may wait for.
        let bucket = matches!(self.script, Script::Refill { .. });
        let lease_wait = if bucket {
            Some(Duration::ZERO)
        } else {
            max_wait
        };
        if size <= permits || self.args(size, lease_wait).is_err() {
            let decision = self.remote(permits, max_wait).await;
            if decision.source == Source::Redis && decision.result.is_ok() {
                lease.count(permits);
            }
            return decision;
        }
        let block = match self.server_at_least(size, permits, lease_wait).await {
            Ok(block) => block,
            // The policy decides for the request's own permits, not a lease.
            Err(e) => return self.on_failure(e, permits, max_wait),
        };
        match block.result {
            Ok(grant) => {
                // The bucket may have granted fewer than asked, never
                // fewer than the request's.
                let leased = grant.permits();
                if leased < permits {
                    // The script never grants fewer than asked at least: a
                    // reply that says so is not its own.
                    let e = RedisError::BadReply(format!(
                        "{leased} permits granted where at least {permits} were asked"
                    ));
                    return self.on_failure(e, permits, max_wait);
                }
                let grant = lease.fill(&grant, leased, permits, self.clock.now_nanos());
                Decision {
                    result: Ok(grant),
                    ..block
                }
            }
            // The bucket holds fewer than a lease: the request alone.
            Err(_) if bucket => self.remote(permits, max_wait).await,
            // The Pacer's next slot is later than the request may wait: a
            // request alone would be refused too.
            Err(_) => block,
        }
    }

    fn leased(&self, result: Result<Grant, AcquireError>) -> Decision {
        Decision {
            result,
            source: Source::Lease,
            error: None,
            admission: None,
        }
    }

    /// [`reserve`](Self::reserve) on the limit of one client among many:
    /// the same limit kept under the key `{this limiter's key}{client}`
    /// (the limiter's key is the prefix, e.g. `api:per-ip:`), one per
    /// client. Each client's key expires on the server once its limit has
    /// caught up (plus the idle TTL), when it equals a new one, so the
    /// server holds only clients that still owe time (about 112 bytes a
    /// key, shared_limits_2026 §5). This limiter's denial cache and leases
    /// are its own key's and are not used here: each decision is one round
    /// trip, or the failure policy (a `Local` fallback is one limiter for
    /// all clients together).
    ///
    /// With [`max_clients`](RedisLimiterBuilder::max_clients), the key is
    /// `{prefix}client` instead (one hash tag for the prefix), and the
    /// same round trip keeps the registry of live clients: the decision's
    /// [`admission`](Decision::admission) says whether the client was
    /// tracked, refused as new, overflowed or tracked in the place of the
    /// least indebted one; see [Capped clients](crate#capped-clients).
    pub async fn reserve_for(
        &self,
        client: &str,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision {
        if let Some(clients) = &self.clients {
            let decision = self
                .reserve_capped(clients, client, permits, max_wait)
                .await;
            self.count(&decision);
            return decision;
        }
        let decision = match self.args(permits, max_wait) {
            Err(e) => Decision {
                result: Err(e),
                source: Source::Redis,
                error: None,
                admission: None,
            },
            Ok(args) => {
                let key = format!("{}{client}", self.key);
                match self.backend.eval(self.lua(), &key, &args).await {
                    Ok(reply) => self.translate(&reply, permits, max_wait),
                    Err(e) => self.on_failure(e, permits, max_wait),
                }
            }
        };
        self.count(&decision);
        decision
    }

    /// [`reserve`](Self::reserve) with the limit's own maximum wait (the
    /// refill bucket's timeout; any wait for the Pacer), then sleeps until
    /// the grant is ready.
    pub async fn acquire(&self, permits: u32) -> Decision {
        let decision = self.reserve(permits, self.limit.max_wait()).await;
        if let Ok(grant) = decision.result {
            let now = self.clock.now_nanos();
            if grant.ready_nanos() > now {
                tokio::time::sleep(Duration::from_nanos(grant.ready_nanos() - now)).await;
            }
        }
        decision
    }

    /// The script's answer at the server time `now_us` (whole microseconds
    /// on the server's clock) instead of `TIME`: for tests that replay the
    /// scripts against the in-memory limiters. Not for production: every
    /// client of a key must use the same clock.
    #[doc(hidden)]
    pub async fn decide_at(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
        now_us: u64,
    ) -> Result<Result<ServerAnswer, AcquireError>, RedisError> {
        let mut args = match self.args(permits, max_wait) {
            Ok(args) => args,
            Err(e) => return Ok(Err(e)),
        };
        args[5] = i64::try_from(now_us).unwrap_or(i64::MAX);
        // Not `note`d: a test's clock is not the server's.
        let r = self.backend.eval(self.lua(), &self.key, &args).await?;
        let (scheduled, ready, extra) = match self.script {
            Script::Pacer { .. } => (r[1], r[2], r[3]),
            Script::Refill { .. } => (r[1], r[1], r[2]),
        };
        Ok(Ok(ServerAnswer {
            granted: r[0] == 1,
            scheduled,
            ready,
            extra,
        }))
    }

    fn lua(&self) -> Lua {
        match self.script {
            Script::Pacer { .. } => Lua::Pacer,
            Script::Refill { .. } => Lua::Refill,
        }
    }

    /// The script's arguments for a request, or why it can never be
    /// granted.
    fn args(&self, permits: u32, max_wait: Option<Duration>) -> Result<[i64; ARGS], AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        let max_wait = max_wait.map_or(-1, |d| d.as_nanos().min(u128::from(MAX_LUA_NANOS)) as i64);
        let lua = |v: u64| v.min(MAX_LUA_NANOS) as i64;
        Ok(match self.script {
            Script::Pacer {
                kind,
                op,
                burst,
                shift,
            } => {
                let span = u64::from(permits) * op;
                if span > MAX_LUA_NANOS {
                    return Err(AcquireError::InsufficientCapacity {
                        requested: permits,
                        max: u32::try_from(MAX_LUA_NANOS / op).unwrap_or(u32::MAX),
                    });
                }
                let burst_span = u64::from(permits).saturating_mul(burst);
                [
                    i64::from(kind),
                    span as i64,
                    lua(burst_span),
                    i64::from(shift),
                    max_wait,
                    -1,
                    self.idle_ms,
                    i64::from(permits),
                    i64::from(self.adopt),
                    lua(op),
                    lua(burst),
                    0,
                ]
            }
            Script::Refill {
                npp,
                capacity,
                initial,
            } => {
                if u64::from(permits) > capacity {
                    return Err(AcquireError::InsufficientCapacity {
                        requested: permits,
                        max: u32::try_from(capacity).unwrap_or(u32::MAX),
                    });
                }
                [
                    lua(npp),
                    capacity as i64,
                    initial as i64,
                    i64::from(permits),
                    max_wait,
                    -1,
                    self.idle_ms,
                    i64::from(permits),
                    i64::from(self.adopt),
                    0,
                    0,
                    0,
                ]
            }
        })
    }

    /// The server's reply as a decision on the local clock.
    fn translate(&self, reply: &[i64], permits: u32, max_wait: Option<Duration>) -> Decision {
        let now = self.clock.now_nanos();
        // The server's reading, translated to the local clock by the
        // offset estimate (see the `offset` module): `at(delta)` is the
        // local time of the server's reading plus `delta`.
        let (server_us, permits) = match self.script {
            Script::Pacer { .. } => (reply[4], permits),
            // The bucket says how many it granted (fewer, for a lease).
            Script::Refill { .. } => (
                reply[3],
                u32::try_from(reply[4]).unwrap_or(permits).clamp(1, permits),
            ),
        };
        let server_ns = server_us.saturating_mul(1000);
        let offset = self.offset.sample(server_ns, now);
        let at = |delta: i64| {
            u64::try_from(server_ns.saturating_add(delta).saturating_sub(offset)).unwrap_or(0)
        };
        let (scheduled, ready, wait) = match self.script {
            Script::Pacer { .. } => {
                // Ordering: Relaxed; a statistic.
                self.backlog.store(reply[3], Ordering::Relaxed);
                (at(reply[1]), at(reply[2]), reply[2])
            }
            Script::Refill { .. } => (at(reply[1]), at(reply[1]), reply[1]),
        };
        let result = if reply[0] == 1 {
            // Never ready before the answer came (as in memory: a late op
            // is ready when it asks).
            Ok(Grant::new(scheduled, ready.max(now), now, permits))
        } else {
            Err(would_wait(u64::try_from(wait).unwrap_or(0), max_wait))
        };
        Decision {
            result,
            source: Source::Redis,
            error: None,
            admission: None,
        }
    }

    /// Notes what the server said on this limiter's own key: the
    /// fallback's starting point and the share meter.
    fn note(&self, reply: &[i64], decision: &Decision, charged: u64) {
        let (said, granted) = match self.script {
            Script::Pacer { .. } => (
                Said::Ahead(reply[3]),
                decision.result.map_or(0, |g| u64::from(g.permits())),
            ),
            Script::Refill { .. } => (
                Said::Available(reply[2]),
                u64::try_from(reply[4]).unwrap_or(0),
            ),
        };
        let key = u64::try_from(reply[REPLY - 1]).unwrap_or(0);
        self.fallback
            .note(self.clock.now_nanos(), said, granted + charged, key);
    }

    /// The failure policy's decision after `error`; a misconfiguration's
    /// refusal, which no policy decides.
    fn on_failure(&self, error: RedisError, permits: u32, max_wait: Option<Duration>) -> Decision {
        if error.is_misconfiguration() {
            return self.misconfigured(error);
        }
        let (result, source) = match self.policy {
            FailurePolicy::Local { share } => self.local(share, permits, max_wait),
            FailurePolicy::LocalLearned => {
                let share = self.fallback.learned_share().unwrap_or(1.0);
                self.local(share, permits, max_wait)
            }
            FailurePolicy::Closed => (Err(AcquireError::Unavailable), Source::FailClosed),
            FailurePolicy::Open => {
                let now = self.clock.now_nanos();
                (Ok(Grant::new(now, now, now, permits)), Source::FailOpen)
            }
        };
        Decision {
            result,
            source,
            error: Some(error),
            admission: None,
        }
    }

    /// The local fallback's decision at `share` of the rate; a refusal if
    /// no in-memory limiter can keep that share.
    fn local(
        &self,
        share: f64,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> (Result<Grant, AcquireError>, Source) {
        match self.fallback.limiter(&self.limit, share, self.clock) {
            Ok(local) => {
                let result = local.reserve(permits, max_wait);
                if result.is_ok() {
                    self.fallback.charge(permits);
                }
                (result, Source::Local)
            }
            Err(_) => (Err(AcquireError::Unavailable), Source::FailClosed),
        }
    }

    /// The refusal of a request on a key that holds another type or
    /// limit: kept for [`config_error`](Self::config_error).
    fn misconfigured(&self, mut error: RedisError) -> Decision {
        if let RedisError::LimitMismatch { ours, .. } = &mut error {
            *ours = self.script.to_string();
        }
        *self
            .config_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(error.clone());
        Decision {
            result: Err(AcquireError::Misconfigured),
            source: Source::Redis,
            error: Some(error),
            admission: None,
        }
    }

    fn count(&self, decision: &Decision) {
        // Ordering: Relaxed; statistics.
        self.by_source[decision.source.index()].fetch_add(1, Ordering::Relaxed);
        if decision.result.is_err() {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The server's schedule ahead of its clock at the last answer (ns;
    /// negative when behind: a backlog).
    pub(crate) fn last_backlog(&self) -> i64 {
        // Ordering: Relaxed; a statistic.
        self.backlog.load(Ordering::Relaxed)
    }
}

/// A refusal for a wait of `wait` ns.
fn would_wait(wait: u64, max_wait: Option<Duration>) -> AcquireError {
    AcquireError::WouldWait {
        wait: Duration::from_nanos(wait),
        max_wait: max_wait.unwrap_or(Duration::MAX),
    }
}

impl std::fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("key", &self.key)
            .field("limit", &self.limit)
            .field("policy", &self.policy)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ratekeeper::bucket::RefillConfig;
    use ratekeeper::Rate;

    use super::*;

    /// The server of `REDIS_URL` (scripts/with-redis.sh), or `None`: the
    /// test is skipped, said past the harness's capture (a failure under
    /// CI).
    fn redis_url() -> Option<String> {
        use std::io::Write;
        match std::env::var("REDIS_URL") {
            Ok(url) if !url.is_empty() => Some(url),
            _ => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "REDIS_URL is not set under CI"
                );
                let thread = std::thread::current();
                let line = format!(
                    "skipped: ratekeeper-redis --lib {}: no REDIS_URL\n",
                    thread.name().unwrap_or("?")
                );
                let _ = std::io::stderr().write_all(line.as_bytes());
                None
            }
        }
    }

    fn key(name: &str) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        format!("rk-test:lib:{name}:{}:{nanos}", std::process::id())
    }

    /// A bucket of `capacity` holding `initial`, a permit every `every`,
    /// leased in windows of 10 s (no rate is measured for 40 s: a lease
    /// is sized by the requests queued for it).
    fn bucket(
        backend: &Backend,
        name: &str,
        capacity: u32,
        initial: u32,
        every: Duration,
    ) -> Arc<RedisLimiter> {
        let limit = SharedLimit::Refill(
            RefillConfig::builder()
                .limit_for_period(1)
                .limit_refresh_period(every)
                .permit_capacity(u64::from(capacity))
                .initial_permits(u64::from(initial))
                .timeout(Duration::ZERO)
                .build()
                .unwrap(),
        );
        Arc::new(
            RedisLimiter::builder(backend, key(name), limit)
                .failure_policy(FailurePolicy::Closed)
                .lease(Duration::from_secs(10))
                .build()
                .unwrap(),
        )
    }

    /// `n` requests of one permit each, all queued on the lease before
    /// the first takes it (so they are coalesced into one refill), in the
    /// order they queued: their decisions, in that order.
    async fn coalesced(l: &Arc<RedisLimiter>, n: u32, max_wait: Option<Duration>) -> Vec<Decision> {
        let leases = l.leases.as_ref().expect("leases on");
        let held = leases.lease.lock().await;
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let l = Arc::clone(l);
                tokio::spawn(async move { l.reserve(1, max_wait).await })
            })
            .collect();
        // The runtime has one thread: the tasks run, in order, when this
        // one yields.
        while leases.waiting.load(Ordering::Relaxed) < n {
            tokio::task::yield_now().await;
        }
        drop(held);
        let mut decisions = Vec::new();
        for t in tasks {
            decisions.push(t.await.unwrap());
        }
        decisions
    }

    #[tokio::test]
    async fn coalesced_requests_share_one_block_and_each_grant_holds_its_own_permits() {
        let Some(url) = redis_url() else { return };
        let backend = Backend::connect(&url).await.unwrap();
        let l = bucket(&backend, "block", 2, 2, Duration::from_secs(1));
        let d = coalesced(&l, 2, Some(Duration::ZERO)).await;
        assert_eq!(d[0].source, Source::Redis, "{d:?}");
        assert_eq!(d[0].result.map(|g| g.permits()), Ok(1), "{d:?}");
        assert_eq!(d[1].source, Source::Lease, "{d:?}");
        assert_eq!(d[1].result.map(|g| g.permits()), Ok(1), "{d:?}");
    }

    #[tokio::test]
    async fn a_block_the_bucket_grants_only_in_part_serves_the_first_request() {
        let Some(url) = redis_url() else { return };
        let backend = Backend::connect(&url).await.unwrap();
        // One permit held, a block of 2 asked: the server grants the 1.
        let l = bucket(&backend, "part", 2, 1, Duration::from_secs(1));
        let d = coalesced(&l, 2, Some(Duration::ZERO)).await;
        assert_eq!(d[0].source, Source::Redis, "{d:?}");
        assert_eq!(d[0].result.map(|g| g.permits()), Ok(1), "{d:?}");
        assert!(d[0].error.is_none(), "{d:?}");
        // Nothing left: the next is the server's refusal.
        assert_eq!(d[1].source, Source::Redis, "{d:?}");
        assert!(
            matches!(d[1].result, Err(AcquireError::WouldWait { .. })),
            "{d:?}"
        );
    }

    #[tokio::test]
    async fn a_bucket_too_empty_for_a_block_still_grants_a_request_that_may_wait() {
        let Some(url) = redis_url() else { return };
        let backend = Backend::connect(&url).await.unwrap();
        // Empty, a permit every 100 ms; each request may wait 1 s.
        let l = bucket(&backend, "empty", 2, 0, Duration::from_millis(100));
        let d = coalesced(&l, 2, Some(Duration::from_secs(1))).await;
        for (i, d) in d.iter().enumerate() {
            assert_eq!(d.source, Source::Redis, "request {i}: {d:?}");
            let grant = d.result.unwrap_or_else(|e| panic!("request {i}: {e:?}"));
            assert!(grant.ready_nanos() > grant.started_nanos(), "{grant:?}");
        }
    }

    #[tokio::test]
    async fn a_pacer_block_refused_for_its_wait_is_the_first_requests_refusal() {
        let Some(url) = redis_url() else { return };
        let backend = Backend::connect(&url).await.unwrap();
        // 10/s: a slot every 100 ms; 10 s leases (up to 100 slots).
        let limit = SharedLimit::pacer(Rate::new(10.0).unwrap(), 1.0).unwrap();
        let l = Arc::new(
            RedisLimiter::builder(&backend, key("pacer-refused"), limit)
                .failure_policy(FailurePolicy::Closed)
                .lease(Duration::from_secs(10))
                .build()
                .unwrap(),
        );
        // The next slot 100 ms away.
        assert!(l.reserve(1, None).await.is_granted());
        let trips = backend.stats().round_trips;
        let d = coalesced(&l, 2, Some(Duration::ZERO)).await;
        for (i, d) in d.iter().enumerate() {
            assert_eq!(d.source, Source::Redis, "request {i}: {d:?}");
            assert!(
                matches!(d.result, Err(AcquireError::WouldWait { .. })),
                "request {i}: {d:?}"
            );
        }
        // The block's refusal (the first), then the second's own.
        assert_eq!(backend.stats().round_trips - trips, 2);
    }

    #[tokio::test]
    async fn a_lease_holds_at_most_one_window_of_the_whole_limit() {
        let Some(url) = redis_url() else { return };
        let backend = Backend::connect(&url).await.unwrap();
        // 2000/s: a 500 µs slot; 100 ms leases hold up to 200 slots.
        let limit = SharedLimit::pacer(Rate::new(2000.0).unwrap(), 1.0).unwrap();
        let l = Arc::new(
            RedisLimiter::builder(&backend, key("window"), limit)
                .failure_policy(FailurePolicy::Closed)
                .lease(Duration::from_millis(100))
                .build()
                .unwrap(),
        );
        let d = coalesced(&l, 300, None).await;
        assert!(d.iter().all(Decision::is_granted));
        // 300 queued: a block of 200, then one of the 100 left.
        assert_eq!(l.stats().from(Source::Redis), 2, "{:?}", l.stats());
        assert_eq!(l.stats().from(Source::Lease), 298, "{:?}", l.stats());
    }
}
