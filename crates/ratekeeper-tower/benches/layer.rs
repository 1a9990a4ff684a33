//! Requests per second through this crate's layer and through
//! tower_governor 0.8, each wrapping the same trivial service, called in
//! process (no network) from 1 and 2 threads, in the same run. Keyed by
//! peer IP, ours twice: the crate's `KeyedMap` (a limiter per key behind a
//! mutex) and `CoreKeyed` (the core's compact `Keyed` map).
//!
//! Both limits are set far above what the loop can reach, so every request
//! is admitted: this measures the admitted path (key extraction, the
//! decision, the response future). Each thread drives a clone of the
//! service on a current-thread tokio runtime of its own.
//!
//! ```text
//! cargo bench -p ratekeeper-tower --bench layer
//! ```
//!
//! A short run of one case, e.g. to count instructions under valgrind
//! (deterministic where a loaded machine's wall clock is not):
//!
//! ```text
//! RK_BENCH_REQUESTS=20000 RK_BENCH_CASE=KeyedMap RK_BENCH_THREADS=1 \
//!   valgrind --tool=callgrind target/release/deps/layer-HASH
//! ```
#![allow(missing_docs)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use http::{Request, Response};
use ratekeeper::config::LimiterConfig;
use ratekeeper_tower::{CoreKeyed, KeyedMap, PeerIp, Policy, RateLimitLayer};
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, PeerIpKeyExtractor};
use tower_governor::GovernorLayer;

type Svc = BoxCloneSyncService<Request<()>, Response<Body>, Infallible>;

const REQUESTS: u64 = 400_000;
const ROUNDS: usize = 5;

/// Requests per thread and round: `REQUESTS`, or `RK_BENCH_REQUESTS` (a
/// short run, e.g. under valgrind's instruction count).
fn requests() -> u64 {
    std::env::var("RK_BENCH_REQUESTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(REQUESTS)
}

/// Whether to run the case `name` (all, or those whose name contains
/// `RK_BENCH_CASE`) on `threads` (1 and 2, or `RK_BENCH_THREADS`).
fn selected(name: &str, threads: usize) -> bool {
    let case = std::env::var("RK_BENCH_CASE").map_or(true, |c| name.contains(c.as_str()));
    let t = std::env::var("RK_BENCH_THREADS").map_or(true, |t| t == threads.to_string());
    case && t
}
/// Requests not admitted (counted, not asserted: see BENCHMARKS.md).
static REFUSED: AtomicU64 = AtomicU64::new(0);
const BIG_BUCKET: &str = "refill:1000000000,1ms,capacity=1000000,initial=1000000";

fn trivial(
) -> impl Service<Request<()>, Response = Response<Body>, Error = Infallible, Future: Send>
       + Clone
       + Send
       + Sync
       + 'static {
    tower::service_fn(|_req: Request<()>| async { Ok(Response::new(Body::empty())) })
}

fn ours_global() -> Svc {
    // A bucket of a million permits refilled at 1e9/s, as governor's below:
    // concurrent requests in the same nanosecond are admitted, not refused.
    let limiter = BIG_BUCKET
        .parse::<LimiterConfig>()
        .unwrap()
        .build()
        .unwrap();
    let layer = RateLimitLayer::global(limiter, Policy::from_rate("all", 1e9).unwrap()).unwrap();
    Svc::new(layer.layer(trivial()))
}

fn ours_peer() -> Svc {
    let map = KeyedMap::from_config(
        &BIG_BUCKET.parse().unwrap(),
        Policy::from_rate("ip", 1e9).unwrap(),
        1000,
    )
    .unwrap();
    let layer = RateLimitLayer::builder(map)
        .key(PeerIp::socket_addr())
        .build()
        .unwrap();
    Svc::new(layer.layer(trivial()))
}

fn ours_peer_core() -> Svc {
    let limit = CoreKeyed::from_config("ip", &BIG_BUCKET.parse().unwrap(), 1000).unwrap();
    let layer = RateLimitLayer::builder(limit)
        .key(PeerIp::socket_addr())
        .build()
        .unwrap();
    Svc::new(layer.layer(trivial()))
}

fn governor_global() -> Svc {
    let config = GovernorConfigBuilder::default()
        .per_nanosecond(1)
        .burst_size(1_000_000)
        .key_extractor(GlobalKeyExtractor)
        .finish()
        .unwrap();
    Svc::new(GovernorLayer::new(config).layer(trivial()))
}

fn governor_peer() -> Svc {
    let config = GovernorConfigBuilder::default()
        .per_nanosecond(1)
        .burst_size(1_000_000)
        .key_extractor(PeerIpKeyExtractor)
        .finish()
        .unwrap();
    Svc::new(GovernorLayer::new(config).layer(trivial()))
}

/// Requests per second over all `threads`, each sending `REQUESTS`.
fn measure(svc: &Svc, threads: usize) -> f64 {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let mut svc = svc.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                let peer: SocketAddr = format!("192.0.2.{}:4000", t + 1).parse().unwrap();
                barrier.wait();
                rt.block_on(async {
                    for _ in 0..requests() {
                        let mut req = Request::new(());
                        // Ours reads the SocketAddr, tower_governor's peer
                        // extractor axum's ConnectInfo: both get both.
                        req.extensions_mut().insert(peer);
                        req.extensions_mut().insert(ConnectInfo(peer));
                        let resp = svc.ready().await.unwrap().call(req).await.unwrap();
                        if resp.status() != 200 {
                            REFUSED.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for h in handles {
        h.join().unwrap();
    }
    (requests() * threads as u64) as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    type Make = fn() -> Svc;
    let cases: [(&str, Make, Make); 3] = [
        ("global", ours_global, governor_global),
        ("per peer IP, KeyedMap", ours_peer, governor_peer),
        ("per peer IP, CoreKeyed", ours_peer_core, governor_peer),
    ];
    println!("| key | threads | ratekeeper-tower req/s | tower_governor req/s | ratio | not admitted (both) |");
    println!("|---|---|---|---|---|---|");
    for (name, ours, theirs) in cases {
        for threads in [1, 2] {
            if !selected(name, threads) {
                continue;
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            // Alternate, each round on fresh layers, and take the medians.
            for _ in 0..ROUNDS {
                a.push(measure(&ours(), threads));
                b.push(measure(&theirs(), threads));
                std::thread::sleep(Duration::from_millis(50));
            }
            let (a, b) = (median(a), median(b));
            let refused = REFUSED.swap(0, Ordering::Relaxed);
            println!(
                "| {name} | {threads} | {:.2} M | {:.2} M | {:.2} | {refused} |",
                a / 1e6,
                b / 1e6,
                a / b
            );
        }
    }
}
