//! [`start`]: the whole service as `ratekeeper serve` runs it: the config
//! loaded, both APIs served, reloads on a change or SIGHUP, a graceful stop.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::{Config, ConfigFileError, FailurePolicy};
use crate::limits::{Limits, LimitsError, RedisStore, DEFAULT_MAX_KEYS_PER_LIMIT};
use crate::service::Service;

/// envoyproxy/ratelimit's gRPC address.
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:8081";
/// envoyproxy/ratelimit's HTTP address.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8080";
/// How often the config's files are looked at for a change.
pub const DEFAULT_WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// What [`start`] serves, and where.
#[derive(Debug, Clone)]
pub struct Options {
    /// A config file, or a folder of them.
    pub config: PathBuf,
    /// The gRPC API's address.
    pub grpc: SocketAddr,
    /// The HTTP API's address.
    pub http: SocketAddr,
    /// The cap on each limit's live keys.
    pub max_keys: usize,
    /// How often the config is looked at for a change; `None`: only on
    /// SIGHUP.
    pub watch: Option<Duration>,
    /// A Redis URL: every counted limit is kept there, shared by the
    /// replicas given the same URL and config; `None`: in memory.
    pub redis: Option<String>,
    /// What a limit that names no `on_redis_failure` does while Redis
    /// fails.
    pub on_redis_failure: FailurePolicy,
}

impl Options {
    /// `config` served on the default addresses, cap and watch interval.
    pub fn new(config: impl Into<PathBuf>) -> Options {
        Options {
            config: config.into(),
            grpc: DEFAULT_GRPC_ADDR.parse().expect("a valid address"),
            http: DEFAULT_HTTP_ADDR.parse().expect("a valid address"),
            max_keys: DEFAULT_MAX_KEYS_PER_LIMIT,
            watch: Some(DEFAULT_WATCH_INTERVAL),
            redis: None,
            on_redis_failure: FailurePolicy::Local,
        }
    }
}

/// Why the service could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The config could not be read or is invalid.
    #[error(transparent)]
    Config(#[from] ConfigFileError),
    /// A limit of the config could not be built.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// The Redis server could not be reached at start-up.
    #[error("cannot connect to Redis")]
    Redis(#[source] ratekeeper_redis::RedisError),
    /// An address could not be bound, or a server failed.
    #[error("{what}")]
    Io {
        /// What failed.
        what: String,
        /// The I/O error.
        source: io::Error,
    },
}

/// A started service: its addresses, and the future that serves until
/// `shutdown` completes (then answers what is in flight and returns).
pub struct Started<F> {
    /// The service, to reload or inspect.
    pub service: Service,
    /// The gRPC API's bound address.
    pub grpc: SocketAddr,
    /// The HTTP API's bound address.
    pub http: SocketAddr,
    /// Serves; resolves once both servers have stopped.
    pub serving: F,
}

impl<F> std::fmt::Debug for Started<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("grpc", &self.grpc)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

/// Loads the config, binds both addresses and returns the serving future:
/// errors in the config, in reaching Redis or an address in use are
/// reported before anything is served.
///
/// While serving, the config's files are looked at every
/// [`Options::watch`] and reloaded on a change ([`reload_from`]); a config
/// that cannot be used is logged and counted, and the limits in force
/// stay.
///
/// # Errors
///
/// A [`ServeError`] for the config, Redis or an address.
pub async fn start(
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Started<impl Future<Output = Result<(), ServeError>>>, ServeError> {
    let service = Service::new(limits(&options).await?);
    let grpc_listener = bind(options.grpc, "gRPC").await?;
    let http_listener = bind(options.http, "HTTP").await?;
    let (grpc, http) = (
        local_addr(&grpc_listener, "gRPC")?,
        local_addr(&http_listener, "HTTP")?,
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let watcher = options
        .watch
        .map(|every| tokio::spawn(watch_config(service.clone(), options.config.clone(), every)));
    let http_server = crate::http::serve_http(service.clone(), http_listener, stopped());
    let grpc_server = crate::grpc::serve_grpc(service.clone(), grpc_listener, stopped());
    let serving = async move {
        let trigger = async move {
            shutdown.await;
            tracing::info!("shutting down: answering the requests in flight");
            let _ = stop_tx.send(true);
        };
        let (_, h, g) = tokio::join!(trigger, http_server, grpc_server);
        if let Some(w) = watcher {
            w.abort();
        }
        h.map_err(|source| ServeError::Io {
            what: "the HTTP server".into(),
            source,
        })?;
        g.map_err(|e| ServeError::Io {
            what: "the gRPC server".into(),
            source: io::Error::other(e),
        })
    };
    tracing::info!(%grpc, %http, config = %options.config.display(), "serving");
    Ok(Started {
        service,
        grpc,
        http,
        serving,
    })
}

/// The config's limits, in memory or on the Redis server named.
async fn limits(options: &Options) -> Result<Limits, ServeError> {
    let config = Config::load(&options.config)?;
    let mut builder = Limits::builder().max_keys(options.max_keys);
    if let Some(url) = &options.redis {
        let backend = ratekeeper_redis::Backend::builder(url.as_str())
            .connect()
            .await
            .map_err(ServeError::Redis)?;
        builder = builder.redis(RedisStore::new(backend).on_failure(options.on_redis_failure));
    }
    Ok(builder.build(&config)?)
}

async fn bind(addr: SocketAddr, what: &str) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Io {
            what: format!("cannot listen for {what} on {addr}"),
            source,
        })
}

fn local_addr(listener: &TcpListener, what: &str) -> Result<SocketAddr, ServeError> {
    listener.local_addr().map_err(|source| ServeError::Io {
        what: format!("the {what} listener's address"),
        source,
    })
}

/// Reloads `path` into `service`, logging and counting a failure (the
/// limits in force then stay). Returns whether the new config is in force.
pub fn reload_from(service: &Service, path: &Path) -> bool {
    let config = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "reload refused: the config in force stays");
            service.reload_failed();
            return false;
        }
    };
    match service.reload(&config) {
        Ok(()) => {
            tracing::info!(domains = config.domains.len(), "config reloaded");
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "reload refused: the config in force stays");
            false
        }
    }
}

/// Looks at the config's files every `every`, reloading on a change of
/// their names, sizes or modification times.
async fn watch_config(service: Service, path: PathBuf, every: Duration) {
    let mut seen = stamp(&path);
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let now = stamp(&path);
        if now != seen {
            seen = now;
            reload_from(&service, &path);
        }
    }
}

/// The names, sizes and modification times of `path` (a file, or a
/// folder's entries); an unreadable path stamps as empty.
fn stamp(path: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let one = |p: PathBuf| {
        // Following links, as a Kubernetes ConfigMap's are.
        std::fs::metadata(&p).map(|m| (p, m.len(), m.modified().ok()))
    };
    let mut out: Vec<_> = match std::fs::read_dir(path) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|e| one(e.path()).ok())
            .collect(),
        Err(_) => one(path.to_owned()).into_iter().collect(),
    };
    out.sort();
    out
}
