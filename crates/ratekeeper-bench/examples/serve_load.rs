//! Service overhead: ratekeeper-serve's decisions per second and latency
//! over gRPC (Envoy's RLS v3 `ShouldRateLimit`) and over HTTP (`POST
//! /json`), each beside a do-nothing floor on the same transport.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example serve_load
//! cargo run --release -p ratekeeper-bench --example serve_load -- \
//!     --secs 2 --rounds 3 --conc 1,4,16,64 --protos grpc,http \
//!     --server-threads 2 --client-threads 2
//! # one side only (to profile it), no summary:
//! cargo run --release -p ratekeeper-bench --example serve_load -- \
//!     --kinds ours --protos grpc --conc 16 --rounds 1 --secs 5
//! ```
//!
//! Four servers, each started in this process on 127.0.0.1:0 on a tokio
//! multi-thread runtime of its own (`--server-threads`, default the
//! available parallelism), fresh for every round:
//!
//! * ours over gRPC: `ratekeeper_serve::grpc::serve_grpc`;
//! * ours over HTTP: `ratekeeper_serve::http::serve_http`, `POST /json`;
//! * the gRPC floor: a tonic server implementing envoy-types'
//!   `RateLimitService` whose handler decides nothing: `overall_code: OK`
//!   and one OK status per descriptor;
//! * the HTTP floor: an axum `POST /json` route that parses the body with
//!   serde_json into a `serde_json::Value` and answers a fixed OK JSON body.
//!   It pays the body parse, not the decision, nor ours' longer answer
//!   (`currentLimit`, `limitRemaining`, `durationUntilReset` and the draft
//!   `RateLimit` header fields).
//!
//! Every server, the floors included, sets `TCP_NODELAY` on the
//! connections it accepts, as ours does; both clients set it too (tonic's
//! `Endpoint` by default).
//!
//! With `--redis URL`, a fifth side, `redis`: ours with the limit kept on
//! that Redis server (`ratekeeper serve --redis URL`), a key prefix of its
//! own each round, a 1 s deadline and the `deny` failure policy, so that a
//! decision the store could not make shows as an `OVER_LIMIT`. It has no
//! target: its summary gives it beside the same floor rounds. Add it with
//! `--kinds floor,ours,redis --redis redis://127.0.0.1:6379/`.
//!
//! The limit: domain `api`, `key: user`, refill, 1,000,000 a second for
//! each value, so every check is admitted; the clients cycle through
//! `--users` distinct users (default 10,000). Any `OVER_LIMIT` (a 429 over
//! HTTP) or error is counted and printed.
//!
//! The load client runs in the same process on a runtime of its own
//! (`--client-threads`): C tasks (`--conc`), each sending one request after
//! another (closed loop) for `--warmup-ms` and then `--secs`. Over gRPC all
//! tasks share one tonic `Channel`: one HTTP/2 connection, the calls
//! multiplexed on it. Over HTTP they share a hyper-util legacy client with
//! keep-alive (`TCP_NODELAY`), whose pool opens one connection per request
//! in flight: C connections. The established connections to the server's
//! port are counted from `/proc/net/tcp` after the warm-up and printed.
//!
//! A round counts the answers that arrive in the timed window: decisions
//! per second, latency p50 and p99 (hdrhistogram, µs, from send to the
//! whole answer read), and CPU time per decision of the server's threads
//! and of the whole process (each thread's `sum_exec_runtime` from
//! `/proc/self/task/TID/schedstat`). Rounds alternate floor and ours
//! (floor, ours, floor, ours, …), `--rounds` of each per protocol and C;
//! the summary gives medians, the ratio ours ÷ floor of the medians, the
//! median of each ours round's ratio to the floor round just before it,
//! and the verdict against the target ours ≥ 0.8 × floor (on the ratio of
//! the medians). Where other programs share the cores, decisions per second
//! follow the CPU this process is given; the ratio floor ÷ ours of the
//! process's CPU per decision is the throughput ratio at equal CPU, and
//! varies less from round to round. The connections column is the most
//! seen in any round: over HTTP the pool may open more than C, as
//! hyper-util's legacy client starts a new connection while a request
//! waits for an idle one.

use std::error::Error;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response as AxumResponse};
use axum::routing::post;
use axum::serve::ListenerExt;
use axum::Router;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::Entry;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    Code as ProtoCode, DescriptorStatus,
};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::{
    RateLimitService, RateLimitServiceServer,
};
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request as HttpRequest, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use ratekeeper_redis::Backend;
use ratekeeper_serve::config::{Config, FailurePolicy};
use ratekeeper_serve::{grpc, http, Limits, RedisStore, Service};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};

#[path = "common/mod.rs"]
mod common;
use common::{list, median};

type Res<T> = Result<T, Box<dyn Error>>;

const LIMITS: &str = "domain: api
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 1000000}
";

/// The HTTP floor's answer: what ours says, less the limit's details.
const FLOOR_BODY: &str = r#"{"overallCode":"OK","statuses":[{"code":"OK"}]}"#;

const SERVER_THREAD: &str = "rk-load-srv";
const CLIENT_THREAD: &str = "rk-load-cli";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proto {
    Grpc,
    Http,
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Proto::Grpc => "grpc",
            Proto::Http => "http",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Floor,
    Ours,
    /// Ours on a Redis store.
    Redis,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Floor => "floor",
            Kind::Ours => "ours",
            Kind::Redis => "redis",
        })
    }
}

#[derive(Debug)]
struct Args {
    secs: f64,
    warmup_ms: u64,
    rounds: usize,
    conc: Vec<usize>,
    protos: Vec<Proto>,
    kinds: Vec<Kind>,
    server_threads: usize,
    client_threads: usize,
    users: usize,
    redis: Option<String>,
}

fn args() -> Res<Args> {
    let nproc = std::thread::available_parallelism().map_or(2, usize::from);
    let mut args = Args {
        secs: 2.0,
        warmup_ms: 300,
        rounds: 3,
        conc: vec![1, 4, 16, 64],
        protos: vec![Proto::Grpc, Proto::Http],
        kinds: vec![Kind::Floor, Kind::Ours],
        server_threads: nproc,
        client_threads: nproc,
        users: 10_000,
        redis: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--secs" => args.secs = value.parse()?,
            "--warmup-ms" => args.warmup_ms = value.parse()?,
            "--rounds" => args.rounds = value.parse()?,
            "--conc" => args.conc = list(&value, |x| Ok(x.parse()?))?,
            "--protos" => {
                args.protos = list(&value, |x| match x {
                    "grpc" => Ok(Proto::Grpc),
                    "http" => Ok(Proto::Http),
                    _ => Err(format!("unknown protocol {x}").into()),
                })?;
            }
            "--server-threads" => args.server_threads = value.parse()?,
            "--client-threads" => args.client_threads = value.parse()?,
            "--kinds" => {
                args.kinds = list(&value, |x| match x {
                    "floor" => Ok(Kind::Floor),
                    "ours" => Ok(Kind::Ours),
                    "redis" => Ok(Kind::Redis),
                    _ => Err(format!("unknown server {x}").into()),
                })?;
            }
            "--users" => args.users = value.parse()?,
            "--redis" => args.redis = Some(value),
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    if args.rounds == 0 || args.users == 0 || args.conc.contains(&0) {
        return Err("--rounds, --users and each of --conc must be at least 1".into());
    }
    if args.kinds.contains(&Kind::Redis) != args.redis.is_some() {
        return Err("the redis side and --redis URL go together".into());
    }
    Ok(args)
}

fn runtime(threads: usize, name: &str) -> Res<Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()?)
}

/// The service on the benchmark's limit: in memory, or on the Redis
/// server of `redis` under a key prefix no other round shares.
async fn service(redis: Option<&str>) -> Res<Service> {
    let config = Config {
        domains: vec![Config::from_yaml(LIMITS, "api.yaml")?],
    };
    let Some(url) = redis else {
        return Ok(Service::new(Limits::new(&config)?));
    };
    // A deadline far above any round trip here: the failure policy (deny,
    // counted as over limit) never stands in for Redis unnoticed.
    let backend = Backend::builder(url)
        .deadline(Duration::from_secs(1))
        .connect()
        .await?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let store = RedisStore::new(backend)
        .prefix(format!(
            "rk-serve-load:{}:{}:",
            std::process::id(),
            nanos.as_nanos()
        ))
        .on_failure(FailurePolicy::Deny);
    Ok(Service::new(Limits::builder().redis(store).build(&config)?))
}

/// The gRPC floor: answers OK to everything, deciding nothing.
#[derive(Debug, Clone, Copy)]
struct FloorRls;

#[tonic::async_trait]
impl RateLimitService for FloorRls {
    async fn should_rate_limit(
        &self,
        request: tonic::Request<RateLimitRequest>,
    ) -> Result<tonic::Response<RateLimitResponse>, tonic::Status> {
        let ok = DescriptorStatus {
            code: ProtoCode::Ok.into(),
            ..DescriptorStatus::default()
        };
        Ok(tonic::Response::new(RateLimitResponse {
            overall_code: ProtoCode::Ok.into(),
            statuses: vec![ok; request.get_ref().descriptors.len()],
            ..RateLimitResponse::default()
        }))
    }
}

/// The HTTP floor's `POST /json`: parses the body, decides nothing.
async fn floor_json(body: Bytes) -> AxumResponse {
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(value) => {
            std::hint::black_box(value);
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                FLOOR_BODY,
            )
                .into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

/// A server running on a runtime of its own.
struct Running {
    port: u16,
    stop: oneshot::Sender<()>,
    done: JoinHandle<Result<(), String>>,
    rt: Runtime,
}

fn start(proto: Proto, kind: Kind, threads: usize, redis: Option<&str>) -> Res<Running> {
    let rt = runtime(threads, SERVER_THREAD)?;
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0"))?;
    let port = listener.local_addr()?.port();
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let done = match (proto, kind) {
        (Proto::Grpc, Kind::Ours | Kind::Redis) => {
            let service = rt.block_on(service(redis.filter(|_| kind == Kind::Redis)))?;
            rt.spawn(async move {
                grpc::serve_grpc(service, listener, shutdown)
                    .await
                    .map_err(|e| e.to_string())
            })
        }
        (Proto::Grpc, Kind::Floor) => rt.spawn(async move {
            Server::builder()
                .serve_with_incoming_shutdown(
                    RateLimitServiceServer::new(FloorRls),
                    TcpIncoming::from(listener).with_nodelay(Some(true)),
                    shutdown,
                )
                .await
                .map_err(|e| e.to_string())
        }),
        (Proto::Http, Kind::Ours | Kind::Redis) => {
            let service = rt.block_on(service(redis.filter(|_| kind == Kind::Redis)))?;
            rt.spawn(async move {
                http::serve_http(service, listener, shutdown)
                    .await
                    .map_err(|e| e.to_string())
            })
        }
        (Proto::Http, Kind::Floor) => rt.spawn(async move {
            let router = Router::new().route("/json", post(floor_json));
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(|e| e.to_string())
        }),
    };
    Ok(Running {
        port,
        stop,
        done,
        rt,
    })
}

impl Running {
    fn stop(self) -> Res<()> {
        let _ = self.stop.send(());
        let joined = self.done;
        let done = self
            .rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), joined).await });
        self.rt.shutdown_timeout(Duration::from_secs(1));
        done.map_err(|_| "the server did not stop within 5 s")??
            .map_err(Into::into)
    }
}

/// One answer, as the client read it.
enum Outcome {
    Ok,
    OverLimit,
    Error,
}

/// What every stream sends: one prebuilt request per user.
#[derive(Clone)]
enum Caller {
    Grpc(RateLimitServiceClient<Channel>, Arc<Vec<RateLimitRequest>>),
    Http(
        Box<HttpClient<HttpConnector, Full<Bytes>>>,
        Uri,
        Arc<Vec<Bytes>>,
    ),
}

impl Caller {
    async fn call(&mut self, user: usize) -> Outcome {
        match self {
            Caller::Grpc(client, requests) => {
                match client.should_rate_limit(requests[user].clone()).await {
                    Ok(r) => match ProtoCode::try_from(r.get_ref().overall_code) {
                        Ok(ProtoCode::Ok) => Outcome::Ok,
                        Ok(ProtoCode::OverLimit) => Outcome::OverLimit,
                        _ => Outcome::Error,
                    },
                    Err(_) => Outcome::Error,
                }
            }
            Caller::Http(client, uri, bodies) => {
                let request = HttpRequest::builder()
                    .method(Method::POST)
                    .uri(uri.clone())
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Full::new(bodies[user].clone()));
                let Ok(request) = request else {
                    return Outcome::Error;
                };
                let Ok(response) = client.request(request).await else {
                    return Outcome::Error;
                };
                let status = response.status();
                if response.into_body().collect().await.is_err() {
                    return Outcome::Error;
                }
                match status {
                    StatusCode::OK => Outcome::Ok,
                    StatusCode::TOO_MANY_REQUESTS => Outcome::OverLimit,
                    _ => Outcome::Error,
                }
            }
        }
    }
}

/// One stream's count.
struct Tally {
    /// Answers in the timed window, and their latencies in nanoseconds.
    timed: u64,
    latency: Histogram<u64>,
    /// Over the whole round, warm-up included.
    over_limit: u64,
    errors: u64,
}

async fn stream(
    mut caller: Caller,
    first: usize,
    users: usize,
    from: Instant,
    until: Instant,
) -> Tally {
    let mut tally = Tally {
        timed: 0,
        latency: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds"),
        over_limit: 0,
        errors: 0,
    };
    let mut user = first % users;
    loop {
        let sent = Instant::now();
        let outcome = caller.call(user).await;
        let done = Instant::now();
        user = if user + 1 == users { 0 } else { user + 1 };
        match outcome {
            Outcome::Ok => {}
            Outcome::OverLimit => tally.over_limit += 1,
            Outcome::Error => tally.errors += 1,
        }
        if done >= until {
            return tally;
        }
        if done >= from {
            tally.timed += 1;
            let ns = u64::try_from((done - sent).as_nanos()).unwrap_or(u64::MAX);
            tally.latency.saturating_record(ns.max(1));
        }
    }
}

/// Nanoseconds of CPU of the server's threads, the client's, and the
/// whole process, from each thread's schedstat.
fn cpu_ns() -> (u64, u64, u64) {
    let mut sums = (0, 0, 0);
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return sums;
    };
    for task in tasks.flatten() {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let ns: u64 = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
            .unwrap_or(0);
        if comm.trim_end() == SERVER_THREAD {
            sums.0 += ns;
        } else if comm.trim_end() == CLIENT_THREAD {
            sums.1 += ns;
        }
        sums.2 += ns;
    }
    sums
}

/// Established TCP connections whose local end is `port` on 127.0.0.1:
/// the server's ends of its connections.
fn connections(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let port = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1).unwrap_or("");
            let state = fields.nth(1).unwrap_or("");
            local.ends_with(&port) && state == "01"
        })
        .count()
}

/// One round's result.
#[derive(Debug, Clone)]
struct Round {
    proto: Proto,
    conc: usize,
    kind: Kind,
    per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    over_limit: u64,
    errors: u64,
    conns: usize,
    server_us: f64,
    process_us: f64,
}

struct Requests {
    grpc: Arc<Vec<RateLimitRequest>>,
    http: Arc<Vec<Bytes>>,
}

fn requests(users: usize) -> Requests {
    let grpc = (0..users)
        .map(|u| RateLimitRequest {
            domain: "api".into(),
            descriptors: vec![RateLimitDescriptor {
                entries: vec![Entry {
                    key: "user".into(),
                    value: format!("u{u}"),
                }],
                ..RateLimitDescriptor::default()
            }],
            ..RateLimitRequest::default()
        })
        .collect();
    let http = (0..users)
        .map(|u| {
            Bytes::from(format!(
                r#"{{"domain":"api","descriptors":[{{"entries":[{{"key":"user","value":"u{u}"}}]}}]}}"#
            ))
        })
        .collect();
    Requests {
        grpc: Arc::new(grpc),
        http: Arc::new(http),
    }
}

async fn drive(
    proto: Proto,
    kind: Kind,
    port: u16,
    conc: usize,
    args: &Args,
    requests: &Requests,
) -> Res<Round> {
    let caller = match proto {
        Proto::Grpc => {
            let channel = Channel::from_shared(format!("http://127.0.0.1:{port}"))?
                .connect()
                .await?;
            Caller::Grpc(
                RateLimitServiceClient::new(channel),
                Arc::clone(&requests.grpc),
            )
        }
        Proto::Http => {
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            let client = HttpClient::builder(TokioExecutor::new()).build(connector);
            let uri: Uri = format!("http://127.0.0.1:{port}/json").parse()?;
            Caller::Http(Box::new(client), uri, Arc::clone(&requests.http))
        }
    };
    let from = Instant::now() + Duration::from_millis(args.warmup_ms);
    let until = from + Duration::from_secs_f64(args.secs);
    let users = args.users;
    let streams: Vec<_> = (0..conc)
        .map(|i| {
            // Streams start spread over the users.
            let first = i * users / conc;
            tokio::spawn(stream(caller.clone(), first, users, from, until))
        })
        .collect();
    drop(caller);
    tokio::time::sleep_until(from.into()).await;
    let cpu_from = cpu_ns();
    let conns = connections(port);
    tokio::time::sleep_until(until.into()).await;
    let cpu_until = cpu_ns();
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let (mut timed, mut over_limit, mut errors) = (0, 0, 0);
    for s in streams {
        let t = s.await?;
        timed += t.timed;
        over_limit += t.over_limit;
        errors += t.errors;
        latency.add(&t.latency)?;
    }
    let per = |a: u64, b: u64| (b.saturating_sub(a)) as f64 / 1e3 / timed.max(1) as f64;
    Ok(Round {
        proto,
        conc,
        kind,
        per_sec: timed as f64 / args.secs,
        p50_us: latency.value_at_quantile(0.50) as f64 / 1e3,
        p99_us: latency.value_at_quantile(0.99) as f64 / 1e3,
        over_limit,
        errors,
        conns,
        server_us: per(cpu_from.0, cpu_until.0),
        process_us: per(cpu_from.2, cpu_until.2),
    })
}

fn round(
    client: &Runtime,
    proto: Proto,
    kind: Kind,
    conc: usize,
    args: &Args,
    requests: &Requests,
) -> Res<Round> {
    let server = start(proto, kind, args.server_threads, args.redis.as_deref())?;
    // The client (its channel, its pool) is dropped at the end of `drive`,
    // before the server is asked to stop.
    let result = client.block_on(drive(proto, kind, server.port, conc, args, requests));
    server.stop()?;
    result
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() -> Res<()> {
    let args = args()?;
    let nproc = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "serve_load: nproc {nproc}, load average {} at start; server threads {}, client threads {}, \
         {} s a round after {} ms warm-up, {} rounds each, {} users",
        loadavg(),
        args.server_threads,
        args.client_threads,
        args.secs,
        args.warmup_ms,
        args.rounds,
        args.users
    );
    let requests = requests(args.users);
    let client = runtime(args.client_threads, CLIENT_THREAD)?;
    let mut rounds = Vec::new();
    println!(
        "{:<5} {:>3} {:<5} {:>2} {:>10} {:>9} {:>9} {:>5} {:>8} {:>6} {:>9} {:>9}",
        "proto",
        "C",
        "kind",
        "r",
        "dec/s",
        "p50 µs",
        "p99 µs",
        "conns",
        "over",
        "errors",
        "srv µs/d",
        "proc µs/d"
    );
    for &proto in &args.protos {
        for &conc in &args.conc {
            for r in 0..args.rounds {
                for &kind in &args.kinds {
                    let x = round(&client, proto, kind, conc, &args, &requests)?;
                    println!(
                        "{:<5} {:>3} {:<5} {:>2} {:>10.0} {:>9.1} {:>9.1} {:>5} {:>8} {:>6} {:>9.2} {:>9.2}",
                        x.proto, x.conc, x.kind, r + 1, x.per_sec, x.p50_us, x.p99_us, x.conns,
                        x.over_limit, x.errors, x.server_us, x.process_us
                    );
                    rounds.push(x);
                }
            }
        }
    }
    println!("load average {} at the end", loadavg());
    if args.kinds.contains(&Kind::Floor) {
        for &side in args.kinds.iter().filter(|&&k| k != Kind::Floor) {
            summary(&args, &rounds, side);
        }
    }
    Ok(())
}

/// The table of `side` against the floor: medians, ratios and, in memory,
/// the verdict against the target (none on Redis).
fn summary(args: &Args, rounds: &[Round], side: Kind) {
    for &proto in &args.protos {
        println!();
        println!(
            "{proto}, {side}: medians of {} rounds; server threads {}, client threads {}",
            args.rounds, args.server_threads, args.client_threads
        );
        println!();
        println!(
            "| C | conns | floor dec/s | {side} dec/s | {side} ÷ floor (of medians; per round) | \
             floor p50 / p99 µs | {side} p50 / p99 µs | server CPU µs/dec floor / {side} | \
             process CPU µs/dec floor / {side} (floor ÷ {side}) | over limit / errors | \
             verdict (≥ 0.8) |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for &conc in &args.conc {
            let of = |kind: Kind| -> Vec<&Round> {
                rounds
                    .iter()
                    .filter(|x| x.proto == proto && x.conc == conc && x.kind == kind)
                    .collect()
            };
            let (floor, ours) = (of(Kind::Floor), of(side));
            let med = |v: &[&Round], f: fn(&Round) -> f64| median(v.iter().map(|x| f(x)).collect());
            let (f_rate, o_rate) = (med(&floor, |x| x.per_sec), med(&ours, |x| x.per_sec));
            let ratio = o_rate / f_rate;
            let paired = median(
                floor
                    .iter()
                    .zip(&ours)
                    .map(|(f, o)| o.per_sec / f.per_sec)
                    .collect(),
            );
            let conns = |v: &[&Round]| v.iter().map(|x| x.conns).max().unwrap_or(0);
            let bad: u64 = floor.iter().chain(&ours).map(|x| x.over_limit).sum();
            let errors: u64 = floor.iter().chain(&ours).map(|x| x.errors).sum();
            println!(
                "| {conc} | {} / {} | {} | {} | {ratio:.3}; {paired:.3} | {:.0} / {:.0} | {:.0} / {:.0} | \
                 {:.2} / {:.2} | {:.2} / {:.2} ({:.3}) | {bad} / {errors} | {} |",
                conns(&floor),
                conns(&ours),
                thousands(f_rate),
                thousands(o_rate),
                med(&floor, |x| x.p50_us),
                med(&floor, |x| x.p99_us),
                med(&ours, |x| x.p50_us),
                med(&ours, |x| x.p99_us),
                med(&floor, |x| x.server_us),
                med(&ours, |x| x.server_us),
                med(&floor, |x| x.process_us),
                med(&ours, |x| x.process_us),
                med(&floor, |x| x.process_us) / med(&ours, |x| x.process_us),
                match side {
                    Kind::Redis => "no target",
                    _ if ratio >= 0.8 => "met",
                    _ => "**missed**",
                }
            );
        }
    }
}

/// `n` rounded, with thousands separators.
fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.round());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
