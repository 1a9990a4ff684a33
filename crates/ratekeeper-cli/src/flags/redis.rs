//! The flags that share a run's limit with other processes through Redis
//! (`--redis URL --key NAME`), which `pace`, `exec` and `pipe` take
//! ([`RedisArgs`]); [`crate::shared`] connects and reports.

use std::time::Duration;

use clap::{Args, ValueEnum};
use ratekeeper_redis::FailurePolicy;

use super::parse_duration;

/// What a shared limiter does when Redis cannot decide in time
/// (`--on-redis-failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailureArg {
    /// admit every request unchecked while Redis fails (no limit at all);
    /// also `allow`, as `serve` names it
    #[value(alias = "allow")]
    Open,
    /// refuse it: the run stops with its report and exit status 4; also
    /// `deny`, as `serve` names it
    #[value(alias = "deny")]
    Closed,
    /// decide in this process, on a limiter of the same kind at this
    /// process's share of the rate: --redis-share, or without it the share
    /// of the key's grants it had over the last second (the default)
    Local,
}

impl FailureArg {
    /// The name the flag and the report give it.
    pub fn name(self) -> &'static str {
        match self {
            FailureArg::Open => "open",
            FailureArg::Closed => "closed",
            FailureArg::Local => "local",
        }
    }
}

/// `--redis`, `--key` and the options of a limit shared through Redis. Its
/// `Debug` shows the URL with its password hidden.
#[derive(Clone, Args)]
pub struct RedisArgs {
    /// Share the limit through the Redis (or Valkey) server at URL, e.g.
    /// redis://127.0.0.1:6379/, with every process that names the same
    /// --key and the same limiter: the limit is the total of them all,
    /// decided on the server's clock (a round trip per request, or per
    /// lease: --redis-lease). Needs
    /// --key; the limiter must be the Pacer or refill.
    #[arg(long, value_name = "URL", requires = "key", value_parser = UrlParser, help_heading = "Redis options")]
    pub redis: Option<String>,

    /// With --redis: the key the shared limit is kept under, e.g.
    /// api:global (processes naming the same key share one limit).
    #[arg(long, value_name = "NAME", requires = "redis", value_parser = parse_key, help_heading = "Redis options")]
    pub key: Option<String>,

    /// With --redis: what a request does when Redis cannot decide within
    /// --redis-deadline (an error, a timeout, the circuit breaker open):
    /// decided by a limiter in this process at its share of the rate
    /// (--redis-share, or the share of the key's grants it had over the
    /// last second), refused (the run stops with its report and exit
    /// status 4), or admitted unchecked [default: local].
    #[arg(
        long,
        value_enum,
        value_name = "POLICY",
        requires = "redis",
        help_heading = "Redis options",
        hide_short_help = true
    )]
    pub on_redis_failure: Option<FailureArg>,

    /// With --on-redis-failure local (the default): the part of the rate
    /// this process keeps alone while Redis fails, a fraction in (0, 1] or
    /// 1/N for N processes, e.g. 0.25 or 1/4 [default: learned, this
    /// process's share of the key's grants over the last second].
    #[arg(long, value_name = "F", value_parser = parse_share, help_heading = "Redis options", hide_short_help = true)]
    pub redis_share: Option<f64>,

    /// With --redis: the most one decision may take, reconnecting
    /// included, before the failure policy decides, e.g. 50ms [default:
    /// 20ms].
    #[arg(long, value_name = "DUR", requires = "redis", value_parser = parse_duration, help_heading = "Redis options", hide_short_help = true)]
    pub redis_deadline: Option<Duration>,

    /// With --redis: lease slots (the Pacer) or permits (refill) from the
    /// server one DUR of this process's rate at a time, and hand them out
    /// here: fewer round trips per permit. Leased Pacer slots keep the
    /// shared schedule's rate; leased refill permits can exceed the bucket
    /// over an interval by one lease per process (see ratekeeper-redis's
    /// docs). 0 asks the server for every request [default: 1ms].
    #[arg(long, value_name = "DUR", requires = "redis", value_parser = parse_lease, help_heading = "Redis options", hide_short_help = true)]
    pub redis_lease: Option<Duration>,

    /// With --redis: how long the key is kept after its limit has caught
    /// up with the clock, e.g. 5s; a key unused for longer starts afresh
    /// at its next request, so a later run does not inherit an earlier
    /// run's schedule. Processes that use the key meanwhile share it as it
    /// is. 0 drops it as soon as it has caught up [default: 1s].
    #[arg(long, value_name = "DUR", requires = "redis", value_parser = parse_idle_ttl, help_heading = "Redis options", hide_short_help = true)]
    pub redis_idle_ttl: Option<Duration>,

    /// With --redis: take the key over if it keeps another limit (another
    /// rate or limiter, set by a process with other flags). Without it,
    /// such a key stops the run at its first request with an error naming
    /// both limits (exit status 4). Adopted, the key keeps this run's
    /// limit from its next grant: the old limit is checkpointed and the
    /// grants it made stand; processes still on the old limit then meet
    /// the mismatch themselves.
    #[arg(
        long,
        requires = "redis",
        help_heading = "Redis options",
        hide_short_help = true
    )]
    pub redis_adopt: bool,
}

/// The URL with its password hidden: a password must never reach an
/// output, a log or an error.
impl std::fmt::Debug for RedisArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisArgs")
            .field("redis", &self.redis.as_deref().map(crate::shared::redact))
            .field("key", &self.key)
            .field("on_redis_failure", &self.on_redis_failure)
            .field("redis_share", &self.redis_share)
            .field("redis_deadline", &self.redis_deadline)
            .field("redis_lease", &self.redis_lease)
            .field("redis_idle_ttl", &self.redis_idle_ttl)
            .field("redis_adopt", &self.redis_adopt)
            .finish()
    }
}

/// The lease window when --redis-lease is not given.
pub const DEFAULT_LEASE: Duration = Duration::from_millis(1);

impl RedisArgs {
    /// The lease window, `None` for no leases (`--redis-lease 0`).
    pub fn lease(&self) -> Option<Duration> {
        Some(self.redis_lease.unwrap_or(DEFAULT_LEASE)).filter(|d| !d.is_zero())
    }

    /// The failure policy these flags ask for.
    ///
    /// # Errors
    ///
    /// A message for `--redis-share` without `--on-redis-failure local`.
    pub fn policy(&self) -> Result<FailurePolicy, String> {
        let arg = self.on_redis_failure.unwrap_or(FailureArg::Local);
        match (arg, self.redis_share) {
            (FailureArg::Local, Some(share)) => Ok(FailurePolicy::Local { share }),
            (FailureArg::Local, None) => Ok(FailurePolicy::LocalLearned),
            (other, Some(share)) => Err(format!(
                "--redis-share {share} applies to --on-redis-failure local (the part of the \
                 rate kept in this process while Redis fails), not to --on-redis-failure {}",
                other.name()
            )),
            (FailureArg::Open, None) => Ok(FailurePolicy::Open),
            (FailureArg::Closed, None) => Ok(FailurePolicy::Closed),
        }
    }
}

/// The URL schemes redis-rs connects by.
const SCHEMES: [&str; 7] = [
    "redis",
    "rediss",
    "valkey",
    "valkeys",
    "unix",
    "redis+unix",
    "valkey+unix",
];

/// `--redis`: a URL whose scheme redis-rs takes; the rest is redis-rs's to
/// parse when it connects. A refusal is clap's error in full, one line that
/// says what to write, with any password hidden (clap's own "invalid value"
/// error would repeat the value as typed).
#[derive(Debug, Clone, Copy)]
struct UrlParser;

impl clap::builder::TypedValueParser for UrlParser {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let refuse = |why: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("--redis takes a URL: {why}\n"),
            )
        };
        let Some(url) = value.to_str() else {
            return Err(refuse("this one is not UTF-8".to_owned()));
        };
        match scheme_hint(url) {
            None => Ok(url.to_owned()),
            Some(hint) => Err(refuse(hint)),
        }
    }
}

/// What to write instead of `url`, when its scheme is not one redis-rs
/// takes: `redis://` before the host (and the port), the password hidden.
fn scheme_hint(url: &str) -> Option<String> {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        // `unix:/path` has no `//`.
        None => match url.split_once(':') {
            Some((scheme, _)) if SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) => {
                return None
            }
            _ => (None, url),
        },
    };
    if scheme.is_some_and(|s| SCHEMES.contains(&s.to_ascii_lowercase().as_str())) {
        return None;
    }
    let rest = rest.trim();
    let instead = if rest.is_empty() || rest.contains(char::is_whitespace) {
        "redis://HOST:PORT/".to_owned()
    } else {
        crate::shared::redact(&format!("redis://{rest}"))
    };
    Some(match scheme {
        None => format!(
            "write redis:// before the host, --redis {instead} (rediss:// for TLS, \
             unix:///PATH for a socket)"
        ),
        Some(s) => format!(
            "\"{}://\" is not a Redis scheme; write --redis {instead} (or rediss://, \
             valkey://, unix:///PATH)",
            crate::shared::redact(s)
        ),
    })
}

/// `--redis-lease`: a duration; 0 turns leases off.
fn parse_lease(s: &str) -> Result<Duration, String> {
    super::parse_timeout(s)
        .map_err(|_| "expected a duration such as 1ms or 500us, or 0 for no leases".to_owned())
}

/// `--redis-idle-ttl`: a duration, 0 included, of at most the library's
/// [`MAX_IDLE_TTL`](ratekeeper_redis::MAX_IDLE_TTL).
fn parse_idle_ttl(s: &str) -> Result<Duration, String> {
    let d = super::parse_timeout(s)
        .map_err(|_| "expected a duration such as 1s or 500ms, or 0".to_owned())?;
    if d > ratekeeper_redis::MAX_IDLE_TTL {
        return Err("the idle TTL is at most 100 years".to_owned());
    }
    Ok(d)
}

/// `--key`: a name that is not empty.
fn parse_key(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("the key is empty: name the shared limit, e.g. --key api:global".to_owned());
    }
    Ok(s.to_owned())
}

/// `--redis-share`: a fraction in (0, 1], or `1/N`.
fn parse_share(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected a fraction of the rate in (0, 1] or 1/N, e.g. 0.25 or 1/4";
    let t = s.trim();
    let v = match t.split_once('/') {
        Some((one, n)) if one.trim() == "1" => match n.trim().parse::<u32>() {
            Ok(n) if n >= 1 => 1.0 / f64::from(n),
            _ => return Err(EXPECTED.to_owned()),
        },
        Some(_) => return Err(EXPECTED.to_owned()),
        None => t.parse::<f64>().map_err(|_| EXPECTED.to_owned())?,
    };
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(EXPECTED.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        redis: RedisArgs,
    }

    fn parse(flags: &[&str]) -> Result<RedisArgs, String> {
        Flags::try_parse_from(std::iter::once("t").chain(flags.iter().copied()))
            .map(|f| f.redis)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn urls_need_a_redis_scheme() {
        for ok in [
            "redis://h/",
            "rediss://u:p@h:6380/0",
            "REDIS://h",
            "valkey://h",
            "unix:///tmp/r.sock",
            "unix:/tmp/r.sock",
            "redis+unix:///tmp/r.sock",
        ] {
            assert_eq!(scheme_hint(ok), None, "{ok}");
        }
        let hint = scheme_hint("127.0.0.1:16399").unwrap();
        assert!(hint.contains("--redis redis://127.0.0.1:16399 "), "{hint}");
        let hint = scheme_hint("not a url").unwrap();
        assert!(hint.contains("--redis redis://HOST:PORT/ "), "{hint}");
        let hint = scheme_hint("localhost:6379").unwrap();
        assert!(hint.contains("--redis redis://localhost:6379 "), "{hint}");
        let hint = scheme_hint("u:TopSecret@h:6379").unwrap();
        assert!(hint.contains("redis://u:***@h:6379"), "{hint}");
        assert!(!hint.contains("TopSecret"), "{hint}");
        let hint = scheme_hint("http://:TopSecret@h/").unwrap();
        assert!(hint.contains("\"http://\""), "{hint}");
        assert!(hint.contains("redis://:***@h/"), "{hint}");
        assert!(!hint.contains("TopSecret"), "{hint}");
        let e = parse(&["--redis", "h:1", "--key", "k"]).unwrap_err();
        assert!(e.starts_with("error: --redis takes a URL: "), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn shares_are_fractions_or_one_over_n() {
        assert_eq!(parse_share("0.25"), Ok(0.25));
        assert_eq!(parse_share("1/4"), Ok(0.25));
        assert_eq!(parse_share("1"), Ok(1.0));
        for bad in ["0", "1.5", "-1", "2/3", "1/0", "x", "nan"] {
            assert!(parse_share(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lease_and_idle_ttl_parse_durations_within_their_bounds() {
        assert_eq!(parse_lease("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_lease("0"), Ok(Duration::ZERO));
        assert!(parse_lease("soon")
            .unwrap_err()
            .contains("or 0 for no leases"));
        let max = ratekeeper_redis::MAX_IDLE_TTL.as_secs();
        assert_eq!(
            parse_idle_ttl(&format!("{max}s")),
            Ok(ratekeeper_redis::MAX_IDLE_TTL)
        );
        assert!(parse_idle_ttl(&format!("{}s", max + 1))
            .unwrap_err()
            .contains("at most 100 years"));
    }

    #[test]
    fn key_and_redis_go_together() {
        let e = parse(&["--redis", "redis://h/"]).unwrap_err();
        assert!(e.contains("--key <NAME>"), "{e}");
        let e = parse(&["--key", "k"]).unwrap_err();
        assert!(e.contains("--redis <URL>"), "{e}");
        let e = parse(&["--redis", "redis://h/", "--key", ""]).unwrap_err();
        assert!(e.contains("the key is empty"), "{e}");
        let e = parse(&["--on-redis-failure", "closed"]).unwrap_err();
        assert!(e.contains("--redis <URL>"), "{e}");
    }

    #[test]
    fn debug_hides_the_password() {
        let args = parse(&["--redis", "redis://u:TopSecret@h/", "--key", "k"]).unwrap();
        let shown = format!("{args:?}");
        assert!(!shown.contains("TopSecret"), "{shown}");
        assert!(shown.contains("redis://u:***@h/"), "{shown}");
    }

    #[test]
    fn idle_ttls_are_durations_zero_included() {
        let base = ["--redis", "redis://h/", "--key", "k", "--redis-idle-ttl"];
        let ttl = |v: &str| parse(&[&base[..], &[v]].concat()).map(|a| a.redis_idle_ttl);
        assert_eq!(ttl("0"), Ok(Some(Duration::ZERO)));
        assert_eq!(ttl("1500ms"), Ok(Some(Duration::from_millis(1500))));
        assert!(ttl("soon").unwrap_err().contains("expected a duration"));
        assert!(ttl("200years").unwrap_err().contains("at most 100 years"));
        let e = parse(&["--redis-idle-ttl", "1s"]).unwrap_err();
        assert!(e.contains("--redis <URL>"), "{e}");
    }

    #[test]
    fn policies_follow_the_flags() {
        let base = ["--redis", "redis://h/", "--key", "k"];
        let with = |more: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(more);
            parse(&v).unwrap().policy()
        };
        assert_eq!(with(&[]), Ok(FailurePolicy::LocalLearned));
        assert_eq!(
            with(&["--on-redis-failure", "open"]),
            Ok(FailurePolicy::Open)
        );
        assert_eq!(
            with(&["--on-redis-failure", "closed"]),
            Ok(FailurePolicy::Closed)
        );
        // serve's names for the first two.
        assert_eq!(
            with(&["--on-redis-failure", "allow"]),
            Ok(FailurePolicy::Open)
        );
        assert_eq!(
            with(&["--on-redis-failure", "deny"]),
            Ok(FailurePolicy::Closed)
        );
        assert_eq!(
            with(&["--on-redis-failure", "local"]),
            Ok(FailurePolicy::LocalLearned)
        );
        assert_eq!(
            with(&["--redis-share", "1/2"]),
            Ok(FailurePolicy::Local { share: 0.5 })
        );
        assert_eq!(
            with(&["--on-redis-failure", "local", "--redis-share", "1/4"]),
            Ok(FailurePolicy::Local { share: 0.25 })
        );
        let e = with(&["--on-redis-failure", "open", "--redis-share", "0.5"]).unwrap_err();
        assert!(e.contains("--on-redis-failure local"), "{e}");
        assert!(e.ends_with("not to --on-redis-failure open"), "{e}");
        // An alias is named by the policy's own name.
        let e = with(&["--on-redis-failure", "deny", "--redis-share", "0.5"]).unwrap_err();
        assert!(e.ends_with("not to --on-redis-failure closed"), "{e}");
    }
}
