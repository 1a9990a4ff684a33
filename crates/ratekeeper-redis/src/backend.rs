//! [`Backend`]: one connection to the server shared by every limiter on
//! it, the scripts it runs, the per-decision deadline and the circuit
//! breaker.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::breaker::Breaker;
use crate::error::RedisError;

/// The Pacer's script (see `scripts/pacer.lua`).
pub(crate) const PACER_LUA: &str = include_str!("scripts/pacer.lua");
/// The refill bucket's script (see `scripts/refill.lua`).
pub(crate) const REFILL_LUA: &str = include_str!("scripts/refill.lua");
/// The cap on a prefix's live clients, appended to a limit's script (see
/// `scripts/clients.lua` and [`capped`]).
const CLIENTS_LUA: &str = include_str!("scripts/clients.lua");

/// The Pacer's script under a cap on live clients.
static CAPPED_PACER_LUA: LazyLock<String> = LazyLock::new(|| capped(PACER_LUA));
/// The refill bucket's script under a cap on live clients.
static CAPPED_REFILL_LUA: LazyLock<String> = LazyLock::new(|| capped(REFILL_LUA));

/// `limit`'s script as the function `limit(key, now_us)` (its lines that
/// read the key and the clock argument removed, the rest unchanged),
/// followed by the cap's script, which calls it.
fn capped(limit: &str) -> String {
    let body = limit.replacen("local key = KEYS[1]\n", "", 1).replacen(
        "local now_us = tonumber(ARGV[6])\n",
        "",
        1,
    );
    format!("local function limit(key, now_us)\n{body}end\n{CLIENTS_LUA}")
}

/// The default per-decision deadline: 20 ms, as Sentinel's token client.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(20);
/// The default time allowed to connect at start: 2 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Failures in a row before the circuit breaker opens, by default.
pub const DEFAULT_BREAKER_FAILURES: u32 = 3;
/// How long an open circuit breaker skips the server before one probe.
pub const DEFAULT_BREAKER_COOLDOWN: Duration = Duration::from_millis(500);

/// Which script a decision runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lua {
    Pacer,
    Refill,
    /// The Pacer under a cap on live clients.
    CappedPacer,
    /// The bucket under a cap on live clients.
    CappedRefill,
}

impl Lua {
    const ALL: [Lua; 4] = [Lua::Pacer, Lua::Refill, Lua::CappedPacer, Lua::CappedRefill];

    fn source(self) -> &'static str {
        match self {
            Lua::Pacer => PACER_LUA,
            Lua::Refill => REFILL_LUA,
            Lua::CappedPacer => &CAPPED_PACER_LUA,
            Lua::CappedRefill => &CAPPED_REFILL_LUA,
        }
    }

    /// The number of integers its reply holds.
    fn reply_len(self) -> usize {
        match self {
            Lua::Pacer | Lua::Refill => crate::limiter::REPLY,
            Lua::CappedPacer | Lua::CappedRefill => crate::limiter::REPLY + 5,
        }
    }
}

/// A connection to one Redis (or Valkey) server, shared by every limiter
/// built on it: cheap to clone (an [`Arc`]), and safe to use from many
/// tasks at once (requests are pipelined on one multiplexed connection,
/// which reconnects by itself).
///
/// [`connect`](Backend::connect) probes `SCRIPT LOAD` and fails loudly
/// when the server does not run scripts. Each decision then is one
/// `EVALSHA`, bounded by the deadline (which also bounds a reconnect); a
/// `NOSCRIPT` reply (the server restarted, failed over or flushed its
/// scripts) reloads both scripts once, however many requests met it, and
/// retries. After [`DEFAULT_BREAKER_FAILURES`] failures in a row the
/// circuit breaker skips the server for a cool-down, then lets one probe
/// through.
///
/// ```no_run
/// # async fn demo() -> Result<(), ratekeeper_redis::RedisError> {
/// use std::time::Duration;
/// use ratekeeper_redis::Backend;
///
/// let backend = Backend::builder("redis://127.0.0.1:6379/")
///     .deadline(Duration::from_millis(10))
///     .connect()
///     .await?;
/// assert_eq!(backend.stats().round_trips, 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Backend {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Conn,
    /// The SHA1 of each script, indexed as [`Lua::ALL`].
    shas: [String; 4],
    /// Reload generation: bumped by each reload, so that requests that met
    /// `NOSCRIPT` together reload once.
    generation: AtomicU64,
    reload: tokio::sync::Mutex<()>,
    deadline: Duration,
    breaker: Breaker,
    base: Instant,
    stats: Counters,
}

#[derive(Default)]
struct Counters {
    round_trips: AtomicU64,
    failures: AtomicU64,
    deadlines: AtomicU64,
    reloads: AtomicU64,
    skipped: AtomicU64,
}

/// What a [`Backend`] has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BackendStats {
    /// Requests sent to the server (each `EVALSHA` and each reload).
    pub round_trips: u64,
    /// Decisions that failed (errors and deadlines).
    pub failures: u64,
    /// Of those, decisions that ran past the deadline.
    pub deadlines: u64,
    /// Script reloads after `NOSCRIPT`.
    pub reloads: u64,
    /// Decisions not sent because the circuit breaker was open.
    pub skipped: u64,
    /// Whether the circuit breaker is open now.
    pub breaker_open: bool,
}

/// The connection: one server's, or a cluster's (feature `cluster`).
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
}

impl Conn {
    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        match self {
            Conn::Single(c) => cmd.query_async(&mut c.clone()).await,
            #[cfg(feature = "cluster")]
            Conn::Cluster(c) => cmd.query_async(&mut c.clone()).await,
        }
    }
}

/// Settings of a [`Backend`]: [`Backend::builder`]. Its `Debug` shows the
/// URL with its password hidden.
#[derive(Clone)]
#[must_use]
pub struct BackendBuilder {
    url: String,
    /// The cluster's seed nodes, for a cluster backend.
    #[cfg(feature = "cluster")]
    nodes: Option<Vec<String>>,
    deadline: Duration,
    connect_timeout: Duration,
    breaker_failures: u32,
    breaker_cooldown: Duration,
}

impl std::fmt::Debug for BackendBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("BackendBuilder");
        d.field("url", &crate::redact_url(&self.url));
        #[cfg(feature = "cluster")]
        d.field("nodes", &self.nodes.as_deref().map(redacted_nodes));
        d.field("deadline", &self.deadline)
            .field("connect_timeout", &self.connect_timeout)
            .field("breaker_failures", &self.breaker_failures)
            .field("breaker_cooldown", &self.breaker_cooldown)
            .finish()
    }
}

impl BackendBuilder {
    /// The most one decision may take, reconnects and script reloads
    /// included ([`DEFAULT_DEADLINE`]); past it, the limiter's failure
    /// policy decides.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The most [`connect`](Self::connect) may take
    /// ([`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The circuit breaker: `failures` in a row open it (0: never) for
    /// `cooldown`, then one probe at a time goes to the server.
    pub fn breaker(mut self, failures: u32, cooldown: Duration) -> Self {
        self.breaker_failures = failures;
        self.breaker_cooldown = cooldown;
        self
    }

    /// Connects, and loads the scripts (`SCRIPT LOAD`: the Pacer's and the
    /// bucket's, each alone and under a cap on live clients).
    ///
    /// # Errors
    ///
    /// [`RedisError::Url`] for a URL that does not parse;
    /// [`RedisError::Deadline`] if the connect timeout passes first;
    /// [`RedisError::ScriptingUnavailable`] if the server refuses to load
    /// scripts; [`RedisError::Redis`] if it cannot be reached.
    pub async fn connect(self) -> Result<Backend, RedisError> {
        let connect = async {
            let conn = self.open().await?;
            let mut shas: [String; 4] = Default::default();
            for (sha, lua) in shas.iter_mut().zip(Lua::ALL) {
                *sha = load(&conn, lua.source()).await?;
            }
            Ok::<_, RedisError>((conn, shas))
        };
        let (conn, shas) = tokio::time::timeout(self.connect_timeout, connect)
            .await
            .map_err(|_| RedisError::Deadline(self.connect_timeout))??;
        Ok(Backend {
            inner: Arc::new(Inner {
                conn,
                shas,
                generation: AtomicU64::new(0),
                reload: tokio::sync::Mutex::new(()),
                deadline: self.deadline,
                breaker: Breaker::new(self.breaker_failures, self.breaker_cooldown),
                base: Instant::now(),
                stats: Counters::default(),
            }),
        })
    }
}

/// The TCP settings of every connection: Nagle's algorithm off, so that a
/// command goes out as it is written, not held for the server's delayed
/// ACK (up to 40 ms on Linux) behind one still in flight.
fn tcp_settings() -> redis::io::tcp::TcpSettings {
    redis::io::tcp::TcpSettings::default().set_nodelay(true)
}

/// `url`'s connection info with [`tcp_settings`].
fn connection_info(url: &str) -> redis::RedisResult<redis::ConnectionInfo> {
    use redis::IntoConnectionInfo;
    Ok(url.into_connection_info()?.set_tcp_settings(tcp_settings()))
}

impl BackendBuilder {
    /// The connection: a `ConnectionManager` to the URL's server, or a
    /// cluster connection to the seed nodes.
    async fn open(&self) -> Result<Conn, RedisError> {
        #[cfg(feature = "cluster")]
        if let Some(nodes) = &self.nodes {
            let client = redis::cluster::ClusterClient::builder(nodes.iter().map(String::as_str))
                .tcp_settings(tcp_settings())
                .connection_timeout(self.connect_timeout)
                .response_timeout(self.deadline)
                .build()
                .map_err(|source| RedisError::Url {
                    url: redacted_nodes(nodes),
                    source,
                })?;
            let conn = client
                .get_async_connection()
                .await
                .map_err(RedisError::Redis)?;
            return Ok(Conn::Cluster(conn));
        }
        let client = connection_info(&self.url)
            .and_then(redis::Client::open)
            .map_err(|source| RedisError::Url {
                url: crate::redact_url(&self.url),
                source,
            })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.deadline))
            .set_number_of_retries(1);
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|e| {
                if is_auth(&e) {
                    RedisError::Auth(e)
                } else {
                    RedisError::Redis(e)
                }
            })?;
        Ok(Conn::Single(conn))
    }
}

/// `SCRIPT LOAD` of `source` (on every primary of a cluster), returning its
/// SHA1.
async fn load(conn: &Conn, source: &str) -> Result<String, RedisError> {
    conn.query(redis::cmd("SCRIPT").arg("LOAD").arg(source))
        .await
        .map_err(|e| {
            if is_auth(&e) {
                RedisError::Auth(e)
            } else if e.code().is_some() {
                // The server answered with an error: it will not load it.
                RedisError::ScriptingUnavailable(e)
            } else {
                RedisError::Redis(e)
            }
        })
}

impl Backend {
    /// Settings for a backend on the server at `url` (`redis://host:port/`,
    /// `rediss://` for TLS where the client is built with it,
    /// `unix:///path`), with the defaults.
    pub fn builder(url: impl Into<String>) -> BackendBuilder {
        BackendBuilder {
            url: url.into(),
            #[cfg(feature = "cluster")]
            nodes: None,
            deadline: DEFAULT_DEADLINE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            breaker_failures: DEFAULT_BREAKER_FAILURES,
            breaker_cooldown: DEFAULT_BREAKER_COOLDOWN,
        }
    }

    /// Settings for a backend on a Redis Cluster reached through `nodes`
    /// (seed URLs, e.g. `redis://127.0.0.1:7000/`), with the defaults.
    /// Each limiter's key is one slot, so its script runs on that slot's
    /// primary (redirections followed); the scripts are loaded on every
    /// primary, and reloaded on all of them when one answers `NOSCRIPT`
    /// (a failover, a new node).
    #[cfg(feature = "cluster")]
    pub fn cluster_builder<S: Into<String>>(nodes: impl IntoIterator<Item = S>) -> BackendBuilder {
        let nodes: Vec<String> = nodes.into_iter().map(Into::into).collect();
        BackendBuilder {
            nodes: Some(nodes.clone()),
            ..Backend::builder(nodes.join(","))
        }
    }

    /// [`builder`](Self::builder)`(url).connect()`.
    ///
    /// # Errors
    ///
    /// As [`BackendBuilder::connect`].
    pub async fn connect(url: &str) -> Result<Backend, RedisError> {
        Backend::builder(url).connect().await
    }

    /// The per-decision deadline.
    pub fn deadline(&self) -> Duration {
        self.inner.deadline
    }

    /// What the backend has done so far.
    pub fn stats(&self) -> BackendStats {
        let c = &self.inner.stats;
        // Ordering: Relaxed; statistics.
        BackendStats {
            round_trips: c.round_trips.load(Ordering::Relaxed),
            failures: c.failures.load(Ordering::Relaxed),
            deadlines: c.deadlines.load(Ordering::Relaxed),
            reloads: c.reloads.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            breaker_open: self.inner.breaker.is_open(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.inner.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Runs `lua` on `key` with `args`: one `EVALSHA` (a reload and one
    /// retry on `NOSCRIPT`) within the deadline, through the breaker.
    pub(crate) async fn eval(
        &self,
        lua: Lua,
        key: &str,
        args: &[i64],
    ) -> Result<Vec<i64>, RedisError> {
        self.eval_keys(lua, &[key], args).await
    }

    /// [`eval`](Self::eval) on several keys (one slot on a cluster).
    pub(crate) async fn eval_keys(
        &self,
        lua: Lua,
        keys: &[&str],
        args: &[i64],
    ) -> Result<Vec<i64>, RedisError> {
        let inner = &self.inner;
        if inner.breaker.admit(self.now()).is_none() {
            // Ordering: Relaxed; a statistic.
            inner.stats.skipped.fetch_add(1, Ordering::Relaxed);
            return Err(RedisError::BreakerOpen);
        }
        let outcome = match tokio::time::timeout(
            inner.deadline,
            self.eval_reloading(lua, keys, args),
        )
        .await
        {
            // The client's own response timeout is the deadline too, and
            // may fire first: either way the answer missed the deadline.
            Err(_) => Err(RedisError::Deadline(inner.deadline)),
            Ok(Err(RedisError::Redis(e))) if e.is_timeout() => {
                Err(RedisError::Deadline(inner.deadline))
            }
            Ok(r) => r,
        };
        self.account(&outcome);
        outcome
    }

    /// Counts `outcome` and tells the breaker. A wrong type or a bad reply
    /// says nothing of the server's health: the breaker only hears that it
    /// answered.
    fn account(&self, outcome: &Result<Vec<i64>, RedisError>) {
        let inner = &self.inner;
        // Ordering: Relaxed for the counters; statistics.
        match outcome {
            Ok(_)
            | Err(
                RedisError::WrongType { .. }
                | RedisError::LimitMismatch { .. }
                | RedisError::BadReply(_),
            ) => {
                inner.breaker.success();
            }
            Err(e) => {
                if matches!(e, RedisError::Deadline(_)) {
                    inner.stats.deadlines.fetch_add(1, Ordering::Relaxed);
                }
                inner.breaker.failure(self.now());
            }
        }
        if outcome.is_err() {
            inner.stats.failures.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn eval_reloading(
        &self,
        lua: Lua,
        keys: &[&str],
        args: &[i64],
    ) -> Result<Vec<i64>, RedisError> {
        // A wrong type names the keys the script touches.
        let key = keys.join(" or ");
        let key = key.as_str();
        // A request may meet NOSCRIPT again after a reload if the scripts
        // were flushed once more meanwhile (its generation predates the
        // reload it then finds done): it reloads at most this many times,
        // all within the backend's deadline.
        const ATTEMPTS: usize = 3;
        let mut attempt = 1;
        let mut pause = RETRY_PAUSE;
        loop {
            // Ordering: Acquire, pairing with the reload's Release: a
            // request that sees the new generation finds the scripts loaded.
            let generation = self.inner.generation.load(Ordering::Acquire);
            match self.evalsha(lua, keys, args).await {
                Err(e) if e.code() == Some("NOSCRIPT") && attempt < ATTEMPTS => {
                    self.reload(generation).await?;
                    attempt += 1;
                }
                // The connection dropped (a client kill, a reset, a server
                // restarting): the manager reconnects, and the request goes
                // again until the deadline (the caller's timeout) ends it.
                // Sent twice, it may be charged twice: the limit errs toward
                // admitting less.
                Err(e) if retryable(&e) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(RETRY_PAUSE_MAX);
                }
                r => {
                    return r
                        .map_err(|e| RedisError::from_redis(e, key))
                        .and_then(|reply| check_reply(lua, reply))
                }
            }
        }
    }

    async fn evalsha(
        &self,
        lua: Lua,
        keys: &[&str],
        args: &[i64],
    ) -> Result<redis::Value, redis::RedisError> {
        let sha = &self.inner.shas[lua as usize];
        // Ordering: Relaxed; a statistic.
        self.inner.stats.round_trips.fetch_add(1, Ordering::Relaxed);
        self.inner
            .conn
            .query(
                redis::cmd("EVALSHA")
                    .arg(sha)
                    .arg(keys.len())
                    .arg(keys)
                    .arg(args),
            )
            .await
    }

    /// Loads every script again, once for every request that met
    /// `NOSCRIPT` at `generation` (single flight: the others wait for it).
    async fn reload(&self, generation: u64) -> Result<(), RedisError> {
        let _one = self.inner.reload.lock().await;
        // Ordering: Acquire; see `eval_reloading`.
        if self.inner.generation.load(Ordering::Acquire) != generation {
            return Ok(()); // reloaded by another request meanwhile
        }
        for lua in Lua::ALL {
            // Ordering: Relaxed; a statistic.
            self.inner.stats.round_trips.fetch_add(1, Ordering::Relaxed);
            load(&self.inner.conn, lua.source()).await?;
        }
        // Ordering: Relaxed for the statistic; Release for the generation
        // (see `eval_reloading`).
        self.inner.stats.reloads.fetch_add(1, Ordering::Relaxed);
        self.inner.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

/// The first pause before a request is sent again on a dropped
/// connection; it doubles up to [`RETRY_PAUSE_MAX`].
const RETRY_PAUSE: Duration = Duration::from_millis(1);
/// The longest pause between two tries of one request.
const RETRY_PAUSE_MAX: Duration = Duration::from_millis(50);

/// Whether `e` is worth sending the request again for, within the deadline:
/// the connection failed (dropped, reset, refused while the server
/// restarts), or the server is loading its data after a restart.
fn retryable(e: &redis::RedisError) -> bool {
    (e.is_io_error() || e.is_connection_dropped()) && !e.is_timeout()
        || matches!(e.code(), Some("LOADING" | "TRYAGAIN"))
}

/// Whether `e` says the server wants credentials it did not get, or
/// refused the ones it got.
fn is_auth(e: &redis::RedisError) -> bool {
    matches!(e.code(), Some("NOAUTH" | "WRONGPASS"))
        || e.kind() == redis::ErrorKind::AuthenticationFailed
}

/// A cluster's seed nodes as errors show them: each URL's password hidden.
#[cfg(feature = "cluster")]
fn redacted_nodes(nodes: &[String]) -> String {
    nodes
        .iter()
        .map(|n| crate::redact_url(n))
        .collect::<Vec<_>>()
        .join(",")
}

/// The script's reply as integers, if it is the array of integers `lua`
/// returns.
fn check_reply(lua: Lua, reply: redis::Value) -> Result<Vec<i64>, RedisError> {
    let expected = lua.reply_len();
    let bad = |what: &str| RedisError::BadReply(format!("{what} (expected {expected} integers)"));
    let redis::Value::Array(items) = reply else {
        return Err(bad(&format!("{reply:?}")));
    };
    if items.len() != expected {
        return Err(bad(&format!("{} values", items.len())));
    }
    let ints: Vec<i64> = items
        .iter()
        .map(|v| match v {
            redis::Value::Int(i) => Some(*i),
            _ => None,
        })
        .collect::<Option<_>>()
        .ok_or_else(|| bad(&format!("{items:?}")))?;
    if !matches!(ints[0], 0 | 1) {
        return Err(bad(&format!("a verdict of {}", ints[0])));
    }
    Ok(ints)
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("deadline", &self.inner.deadline)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    #[test]
    fn capped_scripts_take_the_key_and_clock_from_the_cap() {
        for (i, lua) in Lua::ALL.into_iter().enumerate() {
            assert_eq!(lua as usize, i, "shas are indexed as Lua::ALL");
        }
        for limit in [PACER_LUA, REFILL_LUA] {
            let capped = capped(limit);
            assert!(capped.ends_with(CLIENTS_LUA));
            // The function: the limit's script, reading neither KEYS[1]
            // nor ARGV[6] itself.
            let function = &capped[..capped.len() - CLIENTS_LUA.len()];
            assert!(function.starts_with("local function limit(key, now_us)\n"));
            assert!(!function.contains("local key = KEYS[1]"));
            assert!(!function.contains("local now_us = tonumber(ARGV[6])"));
            assert!(limit.contains("local now_us = tonumber(ARGV[6])"));
        }
    }

    #[test]
    fn connections_send_without_nagles_delay() {
        let info = connection_info("redis://127.0.0.1:6379/").unwrap();
        assert!(info.tcp_settings().nodelay());
        assert!(connection_info("not a url").is_err());
    }

    #[test]
    fn replies_are_checked() {
        let ok = Value::Array(vec![
            Value::Int(1),
            Value::Int(-5),
            Value::Int(0),
            Value::Int(7),
            Value::Int(1),
            Value::Int(9),
        ]);
        assert_eq!(check_reply(Lua::Refill, ok).unwrap(), [1, -5, 0, 7, 1, 9]);
        for bad in [
            Value::Nil,
            Value::Int(1),
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![Value::Int(2); 6]),
            Value::Array(vec![
                Value::Int(1),
                Value::Nil,
                Value::Int(0),
                Value::Int(0),
                Value::Int(0),
                Value::Int(0),
            ]),
        ] {
            assert!(
                matches!(check_reply(Lua::Refill, bad), Err(RedisError::BadReply(_))),
                "refused"
            );
        }
    }
}
