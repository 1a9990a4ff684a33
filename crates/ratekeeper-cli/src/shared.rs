//! A run's limit shared with other processes through Redis (`--redis URL
//! --key NAME`, see [`RedisArgs`]): the connection, the checks of what can
//! be shared, and the report's fields (decisions by source, round trips per
//! permit) that `pace`, `exec` and `pipe` print.
//!
//! The limiter is `ratekeeper-redis`'s [`BlockingLimiter`]: every request
//! is one round trip (`EVALSHA`) deciding on the server's clock; its grants
//! are on its own clock, which the run must then read (see
//! [`Shared::clock`]). The server must answer at the start (connect and
//! `SCRIPT LOAD`), whatever the failure policy: the policy decides requests
//! that fail during the run.

use std::fmt;

use ratekeeper::config::{Access, LimiterConfig};
use ratekeeper::DefaultClock;
use ratekeeper_redis::{
    Backend, BlockingBackend, BlockingLimiter, FailurePolicy, RedisError, RedisLimiter,
    SharedLimit, Source,
};
use serde::Serialize;

use crate::error::UsageError;
use crate::flags::redis::RedisArgs;
use crate::report::{duration_nanos, fmt_count, fmt_duration};

/// A limit shared through Redis, connected.
#[derive(Debug)]
pub struct Shared {
    limiter: BlockingLimiter,
    /// The URL as the report shows it (a password hidden).
    url: String,
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
pub fn connect(args: &RedisArgs, config: &LimiterConfig) -> anyhow::Result<Option<Shared>> {
    let (Some(url), Some(key)) = (&args.redis, &args.key) else {
        return Ok(None);
    };
    let limit = shareable(config)?;
    let policy = args.policy().map_err(UsageError)?;
    let mut builder = Backend::builder(url.as_str());
    if let Some(d) = args.redis_deadline {
        builder = builder.deadline(d);
    }
    let backend = BlockingBackend::connect(builder).map_err(|e| match e {
        RedisError::Url { .. } => anyhow::Error::new(e).context(UsageError(format!(
            "invalid value '{url}' for '--redis <URL>'"
        ))),
        e => anyhow::Error::new(e).context(format!("--redis {url}: cannot use the server")),
    })?;
    let mut limiter =
        RedisLimiter::builder(backend.backend(), key.as_str(), limit).failure_policy(policy);
    if let Some(window) = args.lease() {
        limiter = limiter.lease(window);
    }
    let limiter = limiter.build().map_err(|e| {
        anyhow::Error::new(e).context(UsageError(format!(
            "cannot share the limit under --key {key} on --redis {url}"
        )))
    })?;
    Ok(Some(Shared {
        limiter: backend.limiter(limiter),
        url: hide_password(url),
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

/// `url` with the password of its user part, if any, hidden.
fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or_default();
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

impl Shared {
    /// The limiter.
    pub fn limiter(&self) -> &BlockingLimiter {
        &self.limiter
    }

    /// The clock its grants are on: the run's clock.
    pub fn clock(&self) -> DefaultClock {
        *self.limiter.limiter().clock()
    }

    /// The report's fields after a run that was granted `permits`.
    pub fn report(&self, permits: u64) -> RedisReport {
        let l = self.limiter.limiter();
        let stats = l.stats();
        let backend = l.backend().stats();
        let (policy, share) = match l.failure_policy() {
            FailurePolicy::Closed => ("closed", None),
            FailurePolicy::Local { share } => ("local", Some(share)),
            _ => ("open", None),
        };
        RedisReport {
            url: self.url.clone(),
            key: l.key().to_owned(),
            failure_policy: policy,
            local_share: share,
            deadline_ns: duration_nanos(l.backend().deadline()),
            lease_ns: l.lease_window().map(duration_nanos),
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
        }
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
    /// With `local`: the part of the rate kept in this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_share: Option<f64>,
    pub deadline_ns: u64,
    /// The lease window (`--redis-lease`); null without leases.
    pub lease_ns: Option<u64>,
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
}

impl RedisReport {
    /// The text report's lines.
    pub fn fmt_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let share = self
            .local_share
            .map(|s| format!(" at {s} of the rate"))
            .unwrap_or_default();
        let lease = self.lease_ns.map_or_else(
            || "no leases".to_owned(),
            |l| format!("leases of {}", fmt_duration(l)),
        );
        writeln!(
            f,
            "shared limit    key {} on {} (on failure: {}{share}; deadline {}; {lease})",
            self.key,
            self.url,
            self.failure_policy,
            fmt_duration(self.deadline_ns)
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
        )
    }
}

/// The requests `limiter` granted so far (a permit each in `pace` and
/// `exec`): its decisions less its refusals.
pub fn granted(limiter: &BlockingLimiter) -> u64 {
    let s = limiter.stats();
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
during the run (open: admitted; closed: refused, the run stops with an \
error; local: a limiter in this process at --redis-share of the rate, 1 by \
default). Only the Pacer and the refill limiter are shared; --batch, \
--shards, --precise, --stages, --max-behind and the thread scope are refused \
with it. A key keeps its schedule for an hour after it caught up: a later run \
on the same key with a burst ratio above 1 (or average mode) catches up the \
time an earlier run left behind, so use a new key per run for measurements. \
The target is the shared rate (all processes together), so pace and exec do \
not warn a process for running below it. The report adds:
  shared limit    the key, the URL (a password hidden), the failure policy, \
the per-decision deadline (--redis-deadline, 20ms by default) and the lease \
window (--redis-lease)
  decisions       decisions by source: redis (the server decided), cache, \
lease, fail_open, fail_closed, local (the failure policy decided), and the \
refusals among them
  round trips     requests sent to the server (each decision, each script \
reload), per permit granted to this process, and the permits; the server's \
failures (errors and deadlines), deadlines, script reloads, and decisions \
the circuit breaker skipped"
    };
}
pub(crate) use redis_report_help;

/// The JSON schema's `redis` entry (see [`redis_report_help`]).
macro_rules! redis_json_help {
    () => {
        "
  redis            object   (--redis) {\"url\", \"key\", \"failure_policy\" \
(\"open\", \"closed\" or \"local\"), \"local_share\" (local only), \
\"deadline_ns\", \"decisions\" {\"redis\", \"cache\", \"lease\", \"fail_open\", \
\"fail_closed\", \"local\"}, \"refused\", \"permits\", \"round_trips\", \
\"round_trips_per_permit\" (null without permits), \"failures\", \
\"deadlines\", \"reloads\", \"skipped\"}; absent without --redis"
    };
}
pub(crate) use redis_json_help;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            hide_password("redis://u:secret@h:6379/0"),
            "redis://u:***@h:6379/0"
        );
        assert_eq!(hide_password("redis://:secret@h/"), "redis://:***@h/");
        assert_eq!(hide_password("redis://h:6379/"), "redis://h:6379/");
        assert_eq!(hide_password("redis://user@h/"), "redis://user@h/");
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
