//! Requests per second of an axum hello-world server over loopback HTTP,
//! limited per client by this crate's layer (`CoreKeyed`, keyed by the
//! `x-client-id` header) and by tower_governor 0.8 (the same header, the
//! same rate), against a floor: the same server with no limit layer.
//!
//! A hyper client in the same process sends GETs from `RK_BENCH_CONCURRENCY`
//! tasks (default 32) over keep-alive HTTP/1 connections, each request
//! naming the next of `RK_BENCH_CLIENTS` clients (default 1,000,000),
//! round-robin, from a precomputed list of header values. Each client may
//! send 100 a second with a burst of 10, so every request is admitted in
//! steady state; responses other than 200 are counted, not asserted.
//!
//! Before each limited round, the fresh limit is given one request per
//! client directly (not over HTTP), so that its store holds every client as
//! a live key while the round is timed; that takes a second or two where a
//! million requests over HTTP would take a minute per round, and leaves the
//! same state behind. A second such pass, timed on its own, gives the
//! nanoseconds of a direct check of a live key in a store of that size.
//! Neither is in the round's time.
//!
//! Rounds alternate: floor, ours, tower_governor, floor, ... each case
//! `RK_BENCH_ROUNDS` times (default 5), each on a fresh server and limit,
//! each timed for `RK_BENCH_SECS` seconds (default 3) after a short warm-up
//! of the connections. The server and the client run on two tokio runtimes
//! of their own (`RK_BENCH_SERVER_THREADS` and `RK_BENCH_CLIENT_THREADS`
//! workers, by default each the machine's parallelism), whose threads are
//! named so that their CPU time can be told apart.
//!
//! CPU time is each thread's time on a CPU, in nanoseconds, from the first
//! field of `/proc/self/task/TID/schedstat` (the scheduler's
//! `sum_exec_runtime`), summed over the server's threads, the client's, and
//! every thread of the process; read at the start and end of the timed
//! window. Linux only. `/proc/self/stat`'s utime and stime count in clock
//! ticks (10 ms) and cannot tell the server from the client.
//!
//! ```text
//! cargo bench -p ratekeeper-tower --features axum --bench http
//! ```
//!
//! `RK_BENCH_CASE` (`floor`, `ours`, `governor`) runs only the cases whose
//! name contains it.
#![allow(missing_docs)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ratekeeper_tower::{CoreKeyed, HeaderKey, RateLimitLayer};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;
use tower_governor::{GovernorError, GovernorLayer};

/// The header naming the client.
const HEADER: &str = "x-client-id";
/// Each client's rate, per second, and burst.
const RATE: u32 = 100;
const BURST: u32 = 10;
/// The untimed warm-up of each round's connections.
const WARM_UP: Duration = Duration::from_millis(300);

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// tower_governor's extractor for the same key as ours: the header's value.
#[derive(Clone)]
struct ClientId;

impl KeyExtractor for ClientId {
    type Key = HeaderValue;
    fn extract<T>(&self, req: &Request<T>) -> Result<HeaderValue, GovernorError> {
        match req.headers().get(HEADER) {
            Some(v) if !v.is_empty() => Ok(v.clone()),
            _ => Err(GovernorError::UnableToExtractKey),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Case {
    Floor,
    Ours,
    Governor,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Floor => "floor",
            Case::Ours => "ours",
            Case::Governor => "governor",
        }
    }
}

fn hello() -> Router {
    Router::new().route("/", get(|| async { "Hello, World!" }))
}

/// The case's router, its limit given one request per client; how many
/// keys the limit holds after that; and the nanoseconds a direct check of
/// a live key took, over a second pass of one request per client (a
/// second permit of each client's burst: still admitted).
fn app(case: Case, clients: &[HeaderValue]) -> (Router, usize, f64) {
    match case {
        Case::Floor => (hello(), 0, 0.0),
        Case::Ours => {
            // A cap with room to spare: a shard's share of an exact cap
            // could fill before the others and sweep its fresh keys.
            let cap = clients.len() + clients.len() / 4;
            let limit: CoreKeyed<HeaderValue> =
                CoreKeyed::token_bucket("per-client", f64::from(RATE), BURST, cap).unwrap();
            for c in clients {
                limit.keyed().try_acquire(c).unwrap();
            }
            let start = Instant::now();
            for c in clients {
                limit.keyed().try_acquire(c).unwrap();
            }
            let check_ns = start.elapsed().as_nanos() as f64 / clients.len() as f64;
            let live = limit.metrics().live_keys as usize;
            let layer = RateLimitLayer::builder(limit)
                .key(HeaderKey::new(HEADER).unwrap())
                .build()
                .unwrap();
            (hello().layer(layer), live, check_ns)
        }
        Case::Governor => {
            let config = GovernorConfigBuilder::default()
                .per_millisecond(u64::from(1000 / RATE))
                .burst_size(BURST)
                .key_extractor(ClientId)
                .finish()
                .unwrap();
            for c in clients {
                config.limiter().check_key(c).unwrap();
            }
            let start = Instant::now();
            for c in clients {
                config.limiter().check_key(c).unwrap();
            }
            let check_ns = start.elapsed().as_nanos() as f64 / clients.len() as f64;
            let live = config.limiter().len();
            (hello().layer(GovernorLayer::new(config)), live, check_ns)
        }
    }
}

/// Nanoseconds on a CPU of this process's threads whose name starts with
/// `prefix` (all of them for ""), from the scheduler's accounting.
fn cpu_ns(prefix: &str) -> u64 {
    let mut sum = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let path = task.path();
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue; // the thread ended meanwhile
        };
        if !comm.starts_with(prefix) {
            continue;
        }
        if let Ok(stat) = std::fs::read_to_string(path.join("schedstat")) {
            sum += stat
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    sum
}

#[derive(Clone, Copy)]
struct Cpu {
    server: u64,
    client: u64,
    process: u64,
}

fn cpu() -> Cpu {
    Cpu {
        server: cpu_ns("rk-srv"),
        client: cpu_ns("rk-cli"),
        process: cpu_ns(""),
    }
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

struct Round {
    rps: f64,
    /// CPU microseconds a request: server threads, client threads, process.
    server_us: f64,
    client_us: f64,
    process_us: f64,
    refused: u64,
    errors: u64,
    live_keys: usize,
    /// Seconds to build the limit and give it two requests per client.
    prewarm_s: f64,
    check_ns: f64,
    rss_mib: f64,
}

#[derive(Default)]
struct Counters {
    done: AtomicU64,
    refused: AtomicU64,
    errors: AtomicU64,
}

fn round(
    case: Case,
    server_rt: &tokio::runtime::Runtime,
    client_rt: &tokio::runtime::Runtime,
    clients: &Arc<Vec<HeaderValue>>,
) -> Round {
    let start = Instant::now();
    let (router, live_keys, check_ns) = app(case, clients);
    let prewarm_s = start.elapsed().as_secs_f64();
    let rss = rss_mib();
    let listener = server_rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let server = server_rt.spawn(async move { axum::serve(listener, router).await });
    let uri: Uri = format!("http://{addr}/").parse().unwrap();
    let concurrency = knob("RK_BENCH_CONCURRENCY", 32);
    let secs = knob("RK_BENCH_SECS", 3) as f64;

    let r = client_rt.block_on(async {
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(0));
        let counters = Arc::new(Counters::default());
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let (client, stop, next, counters, clients, uri) = (
                    client.clone(),
                    Arc::clone(&stop),
                    Arc::clone(&next),
                    Arc::clone(&counters),
                    Arc::clone(clients),
                    uri.clone(),
                );
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed) % clients.len();
                        let req = Request::get(uri.clone())
                            .header(HEADER, clients[i].clone())
                            .body(Empty::new())
                            .unwrap();
                        match client.request(req).await {
                            Ok(resp) => {
                                let ok = resp.status() == 200;
                                if resp.into_body().collect().await.is_err() {
                                    counters.errors.fetch_add(1, Ordering::Relaxed);
                                } else if !ok {
                                    counters.refused.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Err(_) => {
                                counters.errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        counters.done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        tokio::time::sleep(WARM_UP).await;
        let snap = |c: &Counters| {
            (
                c.done.load(Ordering::Relaxed),
                c.refused.load(Ordering::Relaxed),
                c.errors.load(Ordering::Relaxed),
            )
        };
        let (d0, r0, e0) = snap(&counters);
        let (c0, t0) = (cpu(), Instant::now());
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        let (d1, r1, e1) = snap(&counters);
        let (c1, t1) = (cpu(), Instant::now());
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.unwrap();
        }
        let n = (d1 - d0).max(1) as f64;
        let us = |a: u64, b: u64| (b - a) as f64 / 1e3 / n;
        Round {
            rps: n / (t1 - t0).as_secs_f64(),
            server_us: us(c0.server, c1.server),
            client_us: us(c0.client, c1.client),
            process_us: us(c0.process, c1.process),
            refused: r1 - r0,
            errors: e1 - e0,
            live_keys,
            prewarm_s,
            check_ns,
            rss_mib: rss,
        }
    });
    // The client is dropped: its connections close, and their tasks end.
    server.abort();
    std::thread::sleep(Duration::from_millis(100));
    r
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn runtime(name: &str, threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()
        .unwrap()
}

fn main() {
    let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n_clients = knob("RK_BENCH_CLIENTS", 1_000_000).max(1);
    let rounds = knob("RK_BENCH_ROUNDS", 5).max(1);
    let server_threads = knob("RK_BENCH_SERVER_THREADS", nproc).max(1);
    let client_threads = knob("RK_BENCH_CLIENT_THREADS", nproc).max(1);
    println!(
        "nproc {nproc}; {n_clients} clients, {RATE}/s burst {BURST} each; {} in flight; \
         server {server_threads} threads, client {client_threads}; {rounds} rounds of {} s",
        knob("RK_BENCH_CONCURRENCY", 32),
        knob("RK_BENCH_SECS", 3),
    );
    let clients: Arc<Vec<HeaderValue>> = Arc::new(
        (0..n_clients)
            .map(|i| HeaderValue::from_str(&format!("client-{i}")).unwrap())
            .collect(),
    );
    let server_rt = runtime("rk-srv", server_threads);
    let client_rt = runtime("rk-cli", client_threads);

    let filter = std::env::var("RK_BENCH_CASE").ok();
    let cases: Vec<Case> = [Case::Floor, Case::Ours, Case::Governor]
        .into_iter()
        .filter(|c| filter.as_deref().is_none_or(|f| c.name().contains(f)))
        .collect();
    let mut results: Vec<Vec<Round>> = cases.iter().map(|_| Vec::new()).collect();
    for r in 0..rounds {
        for (i, &case) in cases.iter().enumerate() {
            let x = round(case, &server_rt, &client_rt, &clients);
            println!(
                "round {r} {:8}: {:9.0} req/s; CPU µs/req server {:6.2} client {:6.2} \
                 process {:6.2}; refused {} errors {}; live keys {} (pre-warm {:.1} s, {:.0} ns a direct check); RSS {:.0} MiB",
                case.name(),
                x.rps,
                x.server_us,
                x.client_us,
                x.process_us,
                x.refused,
                x.errors,
                x.live_keys,
                x.prewarm_s,
                x.check_ns,
                x.rss_mib,
            );
            results[i].push(x);
        }
    }

    println!();
    println!(
        "| case | req/s (median) | server CPU µs/req | process CPU µs/req | refused | errors |"
    );
    println!("|---|---|---|---|---|---|");
    let mut med = Vec::new();
    for (case, rs) in cases.iter().zip(&results) {
        let m = |f: fn(&Round) -> f64| median(rs.iter().map(f).collect());
        let (rps, srv, proc_) = (m(|x| x.rps), m(|x| x.server_us), m(|x| x.process_us));
        let refused: u64 = rs.iter().map(|x| x.refused).sum();
        let errors: u64 = rs.iter().map(|x| x.errors).sum();
        println!(
            "| {} | {rps:.0} | {srv:.2} | {proc_:.2} | {refused} | {errors} |",
            case.name()
        );
        med.push((*case, rps, srv, proc_, rs));
    }
    let find = |c: Case| med.iter().find(|m| m.0 == c);
    if let (Some(ours), Some(gov)) = (find(Case::Ours), find(Case::Governor)) {
        let per_round: Vec<f64> = ours
            .4
            .iter()
            .zip(gov.4)
            .map(|(a, b)| a.rps / b.rps)
            .collect();
        println!(
            "ours / governor: {:.3} (ratio of medians), {:.3} (median of per-round ratios)",
            ours.1 / gov.1,
            median(per_round)
        );
    }
    if let Some(floor) = find(Case::Floor) {
        for c in [Case::Ours, Case::Governor] {
            if let Some(l) = find(c) {
                // Also paired: each round against the floor round just
                // before it, which saw the same state of the machine.
                let paired = |f: fn(&Round) -> f64| {
                    let v = l.4.iter().zip(floor.4).map(|(a, b)| (f(a) - f(b)) / f(a));
                    100.0 * median(v.collect())
                };
                println!(
                    "{}: limit's share of CPU per request: server threads {:.1} %, process {:.1} % \
                     (of medians); {:.1} %, {:.1} % (median of per-round pairs)",
                    c.name(),
                    100.0 * (l.2 - floor.2) / l.2,
                    100.0 * (l.3 - floor.3) / l.3,
                    paired(|x| x.server_us),
                    paired(|x| x.process_us),
                );
            }
        }
    }
}
