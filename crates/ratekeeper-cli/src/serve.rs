//! `ratekeeper serve`: the rate-limit service of `ratekeeper-serve`, with
//! its signals: SIGHUP reloads, SIGTERM and SIGINT stop gracefully.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use ratekeeper_serve::config::FailurePolicy;
use ratekeeper_serve::server::{self, Options, ServeError};

use crate::error::UsageError;

pub const LONG_ABOUT: &str = "\
Serve rate limits to other services: Envoy's RLS v3 gRPC API \
(envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) and an HTTP/JSON \
API (POST /json as envoyproxy/ratelimit's, POST /v1/check, GET /healthz, GET \
/metrics), from limits written in envoyproxy/ratelimit's YAML shape. Limits are \
kept in memory, one state per descriptor value on a capped store (or on Redis \
with --redis, shared by replicas); the default \
algorithm is a rolling refill bucket (no boundary burst), and a refused request \
takes nothing.

The config is reloaded when its files change and on SIGHUP: an unchanged limit \
keeps its state, a changed one what each key was granted (a raised quota admits \
the difference at once, a lowered one never re-hands what was granted); an \
invalid config is logged and counted, and the one in force \
stays. SIGTERM or SIGINT stops the service after answering the requests in \
flight (exit status 0). Logs go to stderr (RUST_LOG sets the level; default \
info).";

pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper serve --config limits.yaml
  ratekeeper serve --config /etc/ratelimit/config --grpc 0.0.0.0:8081 --http 0.0.0.0:8080
  curl -s localhost:8080/v1/check -d '{\"domain\":\"api\",\"key\":\"user\",\"value\":\"alice\"}'";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A config file in envoyproxy/ratelimit's YAML shape, or a folder of
    /// them (one domain each).
    #[arg(long, value_name = "PATH")]
    pub config: PathBuf,
    /// The gRPC API's address.
    #[arg(long, value_name = "ADDR", default_value = server::DEFAULT_GRPC_ADDR)]
    pub grpc: SocketAddr,
    /// The HTTP API's address.
    #[arg(long, value_name = "ADDR", default_value = server::DEFAULT_HTTP_ADDR)]
    pub http: SocketAddr,
    /// The most live keys (descriptor values) each limit keeps.
    #[arg(long, value_name = "N", default_value_t = ratekeeper_serve::DEFAULT_MAX_KEYS_PER_LIMIT)]
    pub max_keys: usize,
    /// How often the config's files are looked at for a change ("off": only
    /// SIGHUP reloads).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_watch)]
    pub watch: WatchEvery,
    /// Keep every counted limit on this Redis server, shared by every
    /// replica given the same URL and config (refill and pacer limits).
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// What a limit without its own on_redis_failure does while Redis
    /// fails: allow (admit), deny (refuse) or local (decide in this process
    /// at its learned share of the rate); open and closed, as the other
    /// commands name them, are taken for allow and deny.
    #[arg(long, value_name = "POLICY", default_value = "local", value_parser = parse_policy)]
    pub on_redis_failure: FailurePolicy,
}

fn parse_policy(s: &str) -> Result<FailurePolicy, String> {
    match s {
        "allow" | "open" => Ok(FailurePolicy::Allow),
        "deny" | "closed" => Ok(FailurePolicy::Deny),
        "local" => Ok(FailurePolicy::Local),
        _ => Err("write allow, deny or local".into()),
    }
}

#[derive(Debug, Clone, Copy)]
pub struct WatchEvery(Option<Duration>);

fn parse_watch(s: &str) -> Result<WatchEvery, String> {
    if s == "off" {
        return Ok(WatchEvery(None));
    }
    match humantime::parse_duration(s) {
        Ok(d) if !d.is_zero() => Ok(WatchEvery(Some(d))),
        Ok(_) => Err("a zero interval: write a duration such as 1s, or off".into()),
        Err(e) => Err(format!("{e}: write a duration such as 1s, or off")),
    }
}

/// Serves until SIGTERM or SIGINT.
pub fn run(args: &ServeArgs) -> anyhow::Result<()> {
    init_logs();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(serve(args))
}

async fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    let options = Options {
        config: args.config.clone(),
        grpc: args.grpc,
        http: args.http,
        max_keys: args.max_keys,
        watch: args.watch.0,
        redis: args.redis.clone(),
        on_redis_failure: args.on_redis_failure,
    };
    let signals = Signals::new()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = server::start(options, async {
        let _ = stopped.await;
    })
    .await
    .map_err(|e| match e {
        // A config the service cannot use is the caller's input.
        ServeError::Config(_) | ServeError::Limits(_) => {
            anyhow::Error::new(UsageError(e.to_string()))
        }
        e => anyhow::Error::new(e),
    })?;
    let service = started.service.clone();
    let config = args.config.clone();
    let signalled = tokio::spawn(signals.run(service, config, stop));
    started.serving.await?;
    signalled.abort();
    Ok(())
}

/// SIGHUP, SIGTERM and SIGINT, installed before the service starts.
#[cfg(unix)]
struct Signals {
    hangup: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn new() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        let install = |kind: SignalKind| signal(kind).context("cannot install a signal handler");
        Ok(Signals {
            hangup: install(SignalKind::hangup())?,
            terminate: install(SignalKind::terminate())?,
            interrupt: install(SignalKind::interrupt())?,
        })
    }

    /// Reloads on SIGHUP; on SIGTERM or SIGINT, sends `stop` and returns.
    async fn run(
        mut self,
        service: ratekeeper_serve::Service,
        config: PathBuf,
        stop: tokio::sync::oneshot::Sender<()>,
    ) {
        loop {
            tokio::select! {
                _ = self.hangup.recv() => {
                    tracing::info!("SIGHUP: reloading the config");
                    server::reload_from(&service, &config);
                }
                _ = self.terminate.recv() => break,
                _ = self.interrupt.recv() => break,
            }
        }
        let _ = stop.send(());
    }
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

/// Ctrl-C, where there are no Unix signals (and no SIGHUP reload).
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> anyhow::Result<Signals> {
        Ok(Signals)
    }

    async fn run(
        self,
        _service: ratekeeper_serve::Service,
        _config: PathBuf,
        stop: tokio::sync::oneshot::Sender<()>,
    ) {
        let _ = tokio::signal::ctrl_c().await;
        let _ = stop.send(());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ratekeeper_serve::config::FailurePolicy;

    use super::{parse_policy, parse_watch};

    #[test]
    fn each_failure_policy_parses_to_its_own() {
        assert_eq!(parse_policy("allow"), Ok(FailurePolicy::Allow));
        assert_eq!(parse_policy("deny"), Ok(FailurePolicy::Deny));
        assert_eq!(parse_policy("local"), Ok(FailurePolicy::Local));
        // The other commands' names for the first two.
        assert_eq!(parse_policy("open"), Ok(FailurePolicy::Allow));
        assert_eq!(parse_policy("closed"), Ok(FailurePolicy::Deny));
        assert_eq!(
            parse_policy("shut"),
            Err("write allow, deny or local".into())
        );
    }

    #[test]
    fn watch_takes_a_nonzero_duration_or_off() {
        assert_eq!(parse_watch("off").unwrap().0, None);
        assert_eq!(
            parse_watch("250ms").unwrap().0,
            Some(Duration::from_millis(250))
        );
        assert!(parse_watch("0s").unwrap_err().contains("zero interval"));
        assert!(parse_watch("soon")
            .unwrap_err()
            .contains("write a duration"));
    }
}
