//! A run's limit shared with other processes through Redis (`--redis URL
//! --key NAME`, see [`RedisArgs`]): the connection, the checks of what can
//! be shared, the limiter the runs take permits from ([`SharedLimiter`]:
//! it warns when the failure policy takes over and stops the run when the
//! shared limit fails), and the report's fields (decisions by source, round
//! trips per permit) that `pace`, `exec` and `pipe` print.
//!
//! The limiter is `ratekeeper-redis`'s [`BlockingLimiter`]: every request
//! is one round trip (`EVALSHA`) deciding on the server's clock; its grants
//! are on its own clock, which the run must then read (see
//! [`Shared::clock`]). The server must answer at the start (connect and
//! `SCRIPT LOAD`), whatever the failure policy: the policy decides requests
//! that fail during the run.
//!
//! No message, report or `Debug` output here holds the URL's password:
//! the URL is shown redacted, and every error text from the connection is
//! scrubbed of the password before it is shown.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ratekeeper::config::{Access, LimiterConfig};
use ratekeeper::{
    AcquireError, Clock, DefaultClock, Grant, RateLimiter, Recovery, WaitPolicy, WaitStats,
};
use ratekeeper_redis::{
    redact_url, Backend, BlockingBackend, BlockingLimiter, Decision, FailurePolicy, RedisError,
    RedisLimiter, SharedLimit, Source, DEFAULT_IDLE_TTL,
};
use serde::Serialize;

use crate::error::UsageError;
use crate::flags::redis::RedisArgs;
use crate::report::{duration_nanos, fmt_count, fmt_duration};
use crate::run::interrupt::Interrupt;

/// A limit shared through Redis, connected.
#[derive(Debug)]
pub struct Shared {
    limiter: SharedLimiter,
    /// The URL as the report shows it (a password hidden).
    url: String,
    /// How long the key is kept once its limit has caught up
    /// (`--redis-idle-ttl`).
    idle_ttl: Duration,
}

/// The shared limit `args` ask for, limiting to `config`: `None` without
/// `--redis`.
///
/// # Errors
///
/// A [`UsageError`] for a limiter that cannot be shared (not the Pacer or
/// refill), a way of reaching it or waiting that a shared limit does not
/// have (`--batch`, `--shards`, `--precise`), `--redis-share` without
/// `--on-redis-failure local`, or a URL that does not parse; a runtime
/// error (exit 1) if the server cannot be reached or will not run scripts.
/// No error holds the URL's password.
pub fn connect(args: &RedisArgs, config: &LimiterConfig) -> anyhow::Result<Option<Shared>> {
    let (Some(url), Some(key)) = (&args.redis, &args.key) else {
        return Ok(None);
    };
    let limit = shareable(config)?;
    let policy = args.policy().map_err(UsageError)?;
    let secret = Secret::of(url);
    let shown = redact(url);
    let mut builder = Backend::builder(url.as_str());
    if let Some(d) = args.redis_deadline {
        builder = builder.deadline(d);
    }
    let backend = BlockingBackend::connect(builder).map_err(|e| match e {
        RedisError::Url { source, .. } => anyhow::anyhow!(secret.scrub(&source.to_string()))
            .context(UsageError(format!(
                "invalid value '{shown}' for '--redis <URL>'"
            ))),
        e => anyhow::anyhow!(secret.scrub(&e.to_string()))
            .context(format!("--redis {shown}: cannot use the server")),
    })?;
    let idle_ttl = args.redis_idle_ttl.unwrap_or(DEFAULT_IDLE_TTL);
    let mut limiter = RedisLimiter::builder(backend.backend(), key.as_str(), limit)
        .failure_policy(policy)
        .idle_ttl(idle_ttl)
        .adopt(args.redis_adopt);
    if let Some(window) = args.lease() {
        limiter = limiter.lease(window);
    }
    let limiter = limiter.build().map_err(|e| {
        anyhow::anyhow!(secret.scrub(&e.to_string())).context(UsageError(format!(
            "cannot share the limit under --key {key} on --redis {shown}"
        )))
    })?;
    Ok(Some(Shared {
        limiter: SharedLimiter::new(backend.limiter(limiter), secret),
        url: shown,
        idle_ttl,
    }))
}

/// The limit `config` keeps on the server, if a shared limit can keep it
/// and be reached and waited for as `config` says.
fn shareable(config: &LimiterConfig) -> anyhow::Result<SharedLimit> {
    let refuse = |flag: &str, why: &str| {
        Err(UsageError(format!("{flag} cannot be used with --redis: {why}")).into())
    };
    match config.access() {
        Access::Batched => {
            return refuse(
                "--batch",
                "every request of a shared limit is one round trip to the server, there is \
                 no local lease to batch",
            )
        }
        Access::Sharded(_) => {
            return refuse("--shards", "the shared limit is one schedule on the server")
        }
        _ => {}
    }
    if config.wait_policy().precise_spin().is_some() {
        return refuse(
            "--precise",
            "a shared limit's grants are waited for with the default wait policy",
        );
    }
    SharedLimit::from_config(config).map_err(|e| {
        anyhow::Error::new(e).context(UsageError(format!(
            "--limiter {} cannot be shared with --redis",
            config.kind().limiter_kind().name()
        )))
    })
}

/// `url` with the password of its user part, if any, hidden
/// ([`redact_url`]); a query's `pass=` or `password=` too (redis-rs's unix
/// socket URLs).
pub fn redact(url: &str) -> String {
    Secret::of(url).scrub(&redact_url(url))
}

/// The password a URL holds, to scrub from any text shown.
#[derive(Clone, Default)]
struct Secret(Vec<String>);

impl Secret {
    /// The password of `url`'s user part and of its query's `pass=` or
    /// `password=`, as written and percent-decoded.
    fn of(url: &str) -> Secret {
        let mut found = Vec::new();
        if let Some((_, rest)) = url.split_once("://") {
            let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
            if let Some((user, _)) = before_query.rsplit_once('@') {
                if let Some((_, pass)) = user.split_once(':') {
                    found.push(pass.to_owned());
                }
            }
            for pair in query.split('&') {
                if let Some(("pass" | "password", pass)) = pair.split_once('=') {
                    found.push(pass.to_owned());
                }
            }
        }
        let decoded: Vec<String> = found.iter().map(|p| percent_decode(p)).collect();
        found.extend(decoded);
        found.retain(|p| !p.is_empty());
        found.sort_by_key(|p| std::cmp::Reverse(p.len()));
        found.dedup();
        Secret(found)
    }

    /// `text` with every occurrence of the password replaced by `***`.
    fn scrub(&self, text: &str) -> String {
        self.0
            .iter()
            .fold(text.to_owned(), |t, p| t.replace(p.as_str(), "***"))
    }
}

/// Never shows the password.
impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// `s` with its `%XX` escapes decoded (invalid ones and non-UTF-8 results
/// kept as written).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

impl Shared {
    /// The limiter.
    pub fn limiter(&self) -> &SharedLimiter {
        &self.limiter
    }

    /// The clock its grants are on: the run's clock.
    pub fn clock(&self) -> DefaultClock {
        *self.limiter.inner.limiter().clock()
    }

    /// Runs `run` while a thread waits for `interrupt`: the first signal
    /// closes the limiter ([`BlockingLimiter::close`]), so that a decision
    /// in flight ends at once, however long the server takes, and every
    /// later one is refused (the run then stops as interrupted).
    ///
    /// # Errors
    ///
    /// An I/O error if the thread cannot be started; `run`'s own.
    pub fn closing_on<R>(
        &self,
        interrupt: &Interrupt,
        run: impl FnOnce() -> anyhow::Result<R>,
    ) -> anyhow::Result<R> {
        /// How soon the thread sees that the run ended.
        const STEP: Duration = Duration::from_millis(10);
        let ended = AtomicBool::new(false);
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("redis-interrupt".to_owned())
                .spawn_scoped(scope, || {
                    // Ordering: Relaxed; a stop request that carries no data.
                    while !ended.load(Ordering::Relaxed) {
                        if interrupt.sleep(STEP) {
                            self.limiter.inner.close();
                            return;
                        }
                    }
                })
                .map_err(|e| anyhow::Error::new(e).context("starting the --redis signal thread"))?;
            let r = run();
            ended.store(true, Ordering::Relaxed);
            r
        })
    }

    /// Why the shared limit stopped the run, if it did (see
    /// [`SharedLimiter`]).
    pub fn stopped(&self) -> Option<String> {
        self.limiter.stopped()
    }

    /// The report's fields after a run that was granted `permits`.
    pub fn report(&self, permits: u64) -> RedisReport {
        let l = self.limiter.inner.limiter();
        let stats = l.stats();
        let backend = l.backend().stats();
        let (policy, share, learned) = match l.failure_policy() {
            FailurePolicy::Closed => ("closed", None, None),
            FailurePolicy::Local { share } => ("local", Some(share), None),
            FailurePolicy::Open => ("open", None, None),
            _ => ("local", None, Some(l.learned_share())),
        };
        RedisReport {
            url: self.url.clone(),
            key: l.key().to_owned(),
            failure_policy: policy,
            local_share: share,
            learned_share: learned,
            deadline_ns: duration_nanos(l.backend().deadline()),
            lease_ns: l.lease_window().map(duration_nanos),
            idle_ttl_ns: duration_nanos(self.idle_ttl),
            decisions: Decisions {
                redis: stats.from(Source::Redis),
                cache: stats.from(Source::Cache),
                lease: stats.from(Source::Lease),
                fail_open: stats.from(Source::FailOpen),
                fail_closed: stats.from(Source::FailClosed),
                local: stats.from(Source::Local),
            },
            refused: stats.refused,
            permits,
            round_trips: backend.round_trips,
            round_trips_per_permit: (permits > 0)
                .then(|| backend.round_trips as f64 / permits as f64),
            failures: backend.failures,
            deadlines: backend.deadlines,
            reloads: backend.reloads,
            skipped: backend.skipped,
            stopped: self.stopped(),
        }
    }
}

/// The shared limiter as a run takes permits from it: the
/// [`BlockingLimiter`], watched. When the failure policy starts deciding
/// (Redis failed), it warns on standard error, once per failure (until the
/// server decides again). When the shared limit fails the run (Redis
/// failed under `--on-redis-failure closed`), it records why and closes
/// the limiter, so that every worker's next request is refused at once and
/// the run stops with its report. Clones share all of this.
#[derive(Debug, Clone)]
pub struct SharedLimiter {
    inner: BlockingLimiter,
    watch: Arc<Watch>,
}

/// What a [`SharedLimiter`] saw of its decisions.
#[derive(Debug, Default)]
struct Watch {
    /// Whether the failure policy decided the last decision that was not
    /// the server's own or a lease's: a failure under way, warned of.
    failing: AtomicBool,
    /// Why the shared limit stopped the run, once it did.
    stopped: Mutex<Option<String>>,
    /// The URL's password, scrubbed from the messages.
    secret: Secret,
}

impl SharedLimiter {
    fn new(inner: BlockingLimiter, secret: Secret) -> SharedLimiter {
        SharedLimiter {
            inner,
            watch: Arc::new(Watch {
                secret,
                ..Watch::default()
            }),
        }
    }

    /// Why the shared limit stopped the run, if it did.
    pub fn stopped(&self) -> Option<String> {
        self.watch
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Warns of a failure policy taking over, and stops the run on a
    /// failure of the shared limit.
    fn watch(&self, d: &Decision) {
        match d.source() {
            Source::Redis => {
                // Ordering: Relaxed; a flag for a warning, no data.
                self.watch.failing.store(false, Ordering::Relaxed);
            }
            // The first decision of a failure (the flag was clear).
            Source::FailOpen | Source::Local
                if !self.watch.failing.swap(true, Ordering::Relaxed) =>
            {
                crate::report::warn(&self.taking_over(d));
            }
            Source::FailClosed if !self.inner.is_closed() => {
                let why = self.why(d);
                self.stop(format!(
                    "the shared limit failed ({why}), and --on-redis-failure closed refuses every \
                     request while it does"
                ));
            }
            _ => {}
        }
        if d.result() == Err(AcquireError::Misconfigured) {
            let why = self.inner.limiter().config_error().map_or_else(
                || "the key does not match this limiter".to_owned(),
                |e| self.watch.secret.scrub(&e.to_string()),
            );
            self.stop(format!("the shared limit cannot be used: {why}"));
        }
    }

    /// The server's error behind `d`, scrubbed of the password.
    fn why(&self, d: &Decision) -> String {
        d.backend_error().map_or_else(
            || "Redis did not decide".to_owned(),
            |e| self.watch.secret.scrub(&e.to_string()),
        )
    }

    /// The warning that the failure policy decides `d` and those after it.
    fn taking_over(&self, d: &Decision) -> String {
        let l = self.inner.limiter();
        let what = match (d.source(), l.failure_policy(), l.learned_share()) {
            (Source::Local, FailurePolicy::Local { share }, _) => {
                format!("deciding locally at {share} of the rate (--redis-share)")
            }
            (Source::Local, _, Some(share)) => {
                format!("deciding locally at {share:.3} of the rate (this process's share)")
            }
            (Source::Local, _, None) => {
                "deciding locally at the whole rate (no share learned yet)".to_owned()
            }
            _ => "admitting every request unchecked (--on-redis-failure open)".to_owned(),
        };
        format!(
            "Redis failed ({}): {what} until it answers again",
            self.why(d)
        )
    }

    /// Records why the run stops (the first reason), and closes the
    /// limiter.
    fn stop(&self, why: String) {
        self.watch
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(why);
        self.inner.close();
    }
}

impl RateLimiter for SharedLimiter {
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        let d = self.inner.decide(permits, max_wait);
        self.watch(&d);
        d.into_result()
    }

    fn clock(&self) -> &dyn Clock {
        self.inner.clock()
    }

    fn wait_stats(&self) -> WaitStats {
        self.inner.wait_stats()
    }

    fn wait_policy(&self) -> WaitPolicy {
        self.inner.wait_policy()
    }

    fn recovery(&self) -> Recovery {
        self.inner.recovery()
    }
}

/// Decisions by where they came from (see `ratekeeper_redis::Source`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Decisions {
    pub redis: u64,
    pub cache: u64,
    pub lease: u64,
    pub fail_open: u64,
    pub fail_closed: u64,
    pub local: u64,
}

/// What a report says of a limit shared through Redis: the JSON object
/// `redis`, and the text lines [`fmt_lines`](Self::fmt_lines) writes.
#[derive(Debug, Clone, Serialize)]
pub struct RedisReport {
    pub url: String,
    pub key: String,
    /// `open`, `closed` or `local`.
    pub failure_policy: &'static str,
    /// With `local` and `--redis-share`: the part of the rate kept in
    /// this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_share: Option<f64>,
    /// With `local` and no `--redis-share`: the share of the key's grants
    /// learned at the end (`Some(None)`, JSON null, before a second of
    /// answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned_share: Option<Option<f64>>,
    pub deadline_ns: u64,
    /// The lease window (`--redis-lease`); null without leases.
    pub lease_ns: Option<u64>,
    /// How long the key is kept once its limit has caught up
    /// (`--redis-idle-ttl`).
    pub idle_ttl_ns: u64,
    pub decisions: Decisions,
    /// Of the decisions, the refusals.
    pub refused: u64,
    /// Permits granted to this process.
    pub permits: u64,
    /// Requests sent to the server (each decision's `EVALSHA`, each script
    /// reload).
    pub round_trips: u64,
    /// `round_trips / permits` (null without permits).
    pub round_trips_per_permit: Option<f64>,
    /// Decisions the server failed (errors and deadlines), of those the
    /// deadlines, script reloads, and decisions the circuit breaker skipped.
    pub failures: u64,
    pub deadlines: u64,
    pub reloads: u64,
    pub skipped: u64,
    /// Why the shared limit stopped the run (Redis failed under
    /// `--on-redis-failure closed`); null when it did not.
    pub stopped: Option<String>,
}

impl RedisReport {
    /// The text report's lines.
    pub fn fmt_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let share = match (self.local_share, self.learned_share) {
            (Some(s), _) => format!(" at {s} of the rate"),
            (None, Some(Some(s))) => format!(" at the learned share, {s:.3} of the rate"),
            (None, Some(None)) => " at the learned share, none yet".to_owned(),
            (None, None) => String::new(),
        };
        let lease = self.lease_ns.map_or_else(
            || "no leases".to_owned(),
            |l| format!("leases of {}", fmt_duration(l)),
        );
        writeln!(
            f,
            "shared limit    key {} on {} (on failure: {}{share}; deadline {}; {lease}; idle \
             TTL {})",
            self.key,
            self.url,
            self.failure_policy,
            fmt_duration(self.deadline_ns),
            fmt_duration(self.idle_ttl_ns)
        )?;
        let d = &self.decisions;
        writeln!(
            f,
            "decisions       {} redis, {} cache, {} lease, {} fail_open, {} fail_closed, {} \
             local ({} refused)",
            fmt_count(d.redis),
            fmt_count(d.cache),
            fmt_count(d.lease),
            fmt_count(d.fail_open),
            fmt_count(d.fail_closed),
            fmt_count(d.local),
            fmt_count(self.refused)
        )?;
        let per = self
            .round_trips_per_permit
            .map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"));
        writeln!(
            f,
            "round trips     {} ({per} per permit, {} permits); {} failures, {} deadlines, {} \
             reloads, {} skipped",
            fmt_count(self.round_trips),
            fmt_count(self.permits),
            fmt_count(self.failures),
            fmt_count(self.deadlines),
            fmt_count(self.reloads),
            fmt_count(self.skipped)
        )?;
        if let Some(why) = &self.stopped {
            writeln!(f, "stopped         {why}")?;
        }
        Ok(())
    }
}

/// The requests `limiter` granted so far (a permit each in `pace` and
/// `exec`): its decisions less its refusals.
pub fn granted(limiter: &SharedLimiter) -> u64 {
    let s = limiter.inner.stats();
    s.total().saturating_sub(s.refused)
}

/// The help text's paragraph on `--redis` and the report lines it adds
/// (for each subcommand's Report section; `concat!` takes only literals).
macro_rules! redis_report_help {
    () => {
        "With --redis URL --key NAME the limit is shared with every process that \
names the same key (and the same limiter) on that server, decided on the \
server's clock (a Lua script): a round trip per request, or per lease \
(--redis-lease, 1ms by default: this process takes about that much of its \
own rate of slots or permits at a time and hands them out itself; 0 for a \
round trip per request). The server must answer \
at the start (connect and SCRIPT LOAD; exit status 1 otherwise, 2 for a URL \
that does not parse), and --on-redis-failure decides the requests it fails \
during the run (local, the default: a limiter in this process, built when \
it takes over and owing what the server last said, at --redis-share of the \
rate or, without it, at the share of the key's grants this process had over \
the last second; closed: refused, and the run stops with its report and exit \
status 4; open: admitted unchecked); a warning on standard error says when \
local or open starts deciding, once until the server decides again. A key \
records its limit: a process whose limit differs (another rate or limiter) \
stops at its first request with an error naming both and exit status 4, \
unless --redis-adopt takes the key over (the old limit checkpointed, its \
grants kept); a key that holds another type stops it the same way. No \
failure policy decides these, and nothing is admitted. A signal ends \
the run at once, also while a decision waits on the server, and no decision \
outlasts --redis-deadline. Only the Pacer and the refill limiter are \
shared; --batch, --shards, --precise, --stages, --max-behind and the thread \
scope are refused with it. A key is kept for --redis-idle-ttl (1s by \
default) after its limit has caught up with the clock: a run that starts \
later on the same key starts afresh, while processes that use the key \
meanwhile (starting together, or joining a run) share its schedule as it is. \
The target is the shared rate (all processes together), so pace and exec do \
not warn a process for running below it. No output holds the URL's \
password. The report adds:
  shared limit    the key, the URL (a password hidden), the failure policy \
(with local, --redis-share or the share learned at the end), the \
per-decision deadline (--redis-deadline, 20ms by default), the lease \
window (--redis-lease) and the idle TTL (--redis-idle-ttl)
  decisions       decisions by source: redis (the server decided), cache, \
lease, fail_open, fail_closed, local (the failure policy decided), and the \
refusals among them
  round trips     requests sent to the server (each decision, each script \
reload), per permit granted to this process, and the permits; the server's \
failures (errors and deadlines), deadlines, script reloads, and decisions \
the circuit breaker skipped
  stopped         (when it did) why the shared limit stopped the run"
    };
}
pub(crate) use redis_report_help;

/// The JSON schema's `redis` entry (see [`redis_report_help`]).
macro_rules! redis_json_help {
    () => {
        "
  redis            object   (--redis) {\"url\", \"key\", \"failure_policy\" \
(\"open\", \"closed\" or \"local\"), \"local_share\" (local with \
--redis-share), \"learned_share\" (local without it: the share learned at the \
end, null before one), \
\"deadline_ns\", \"lease_ns\" (null without leases), \"idle_ttl_ns\", \
\"decisions\" {\"redis\", \"cache\", \"lease\", \"fail_open\", \
\"fail_closed\", \"local\"}, \"refused\", \"permits\", \"round_trips\", \
\"round_trips_per_permit\" (null without permits), \"failures\", \
\"deadlines\", \"reloads\", \"skipped\", \"stopped\" (why the shared limit \
stopped the run, exit status 4; null when it did not)}; absent without --redis"
    };
}
pub(crate) use redis_json_help;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            redact("redis://u:secret@h:6379/0"),
            "redis://u:***@h:6379/0"
        );
        assert_eq!(redact("redis://:secret@h/"), "redis://:***@h/");
        assert_eq!(redact("redis://h:6379/"), "redis://h:6379/");
        assert_eq!(redact("redis://user@h/"), "redis://user@h/");
        assert_eq!(
            redact("redis+unix:///tmp/r.sock?db=1&pass=secret"),
            "redis+unix:///tmp/r.sock?db=1&pass=***"
        );
    }

    #[test]
    fn a_password_is_scrubbed_from_any_text_as_written_and_decoded() {
        let s = Secret::of("redis://user:p%40ss%21@h:1/?password=other");
        let text = "p%40ss! and p@ss! and other, user and h";
        assert_eq!(s.scrub(text), "p%40ss! and *** and ***, user and h");
        let s = Secret::of("redis://user:p%40ss%21@h:1/");
        assert_eq!(s.scrub("p%40ss%21 p@ss!"), "*** ***");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        // Nothing to scrub: the text as it is.
        for url in ["redis://h/", "redis://user@h/", "redis://:@h/", "not a url"] {
            assert_eq!(Secret::of(url).scrub("any text"), "any text", "{url}");
        }
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn only_the_pacer_and_refill_are_shared() {
        for (spec, ok) in [
            ("pacer:10K,1", true),
            ("refill:1000,100ms,200,100,5s", true),
            ("pool:10K", false),
            ("bursty:10", false),
            ("pacer:1M,0,batch=true", false),
        ] {
            let config: LimiterConfig = spec.parse().unwrap();
            let r = shareable(&config);
            assert_eq!(r.is_ok(), ok, "{spec}: {r:?}");
            if let Err(e) = r {
                assert!(e.downcast_ref::<UsageError>().is_some(), "{spec}: {e:#}");
                assert!(format!("{e:#}").contains("--redis"), "{spec}: {e:#}");
            }
        }
    }
}
