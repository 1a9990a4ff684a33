//! Issue 19, item 7: leased permits a second from one process, and the
//! over-admission leases cost, against a real server.
//!
//! ```text
//! scripts/with-redis.sh cargo run --release -p ratekeeper-redis --example bench_leases
//! ```
//!
//! Two measurements, each over ROUNDS rounds (default 5; medians and
//! min–max):
//!
//! 1. **Throughput**: TASKS tokio tasks (default 8) of one process take
//!    permits as fast as they can through one `RedisLimiter` with 1 ms
//!    leases, for 1 s, from a Pacer (average mode) and from a refill bucket
//!    whose rates (100 M/s) are far above what one process asks. Permits a
//!    second, round trips per permit.
//! 2. **Over-admission**: PROCS limiters (default 4, standing for processes:
//!    each its own lease) share one bucket of 100 000/s with capacity 1 000
//!    and try-acquire for 0.5 s at twice its rate; the most they admitted
//!    over any interval beyond the bucket's bound (capacity + rate × length),
//!    against the documented bound (one lease per process: 1 ms of the
//!    rate, 100 permits, each).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratekeeper::bucket::RefillConfig;
use ratekeeper::Rate;
use ratekeeper_redis::sim::excess;
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit, Source};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bucket(per_ms: u32, capacity: u32) -> SharedLimit {
    SharedLimit::Refill(
        RefillConfig::builder()
            .limit_for_period(u64::from(per_ms))
            .limit_refresh_period(Duration::from_millis(1))
            .permit_capacity(u64::from(capacity))
            .initial_permits(u64::from(capacity))
            .timeout(Duration::ZERO)
            .build()
            .expect("bucket"),
    )
}

/// Permits a second and round trips per permit over one second.
async fn throughput(backend: &Backend, limit: SharedLimit, tasks: u64, name: &str) -> (f64, f64) {
    let key = format!("bench-leases:{name}:{}", std::process::id());
    let limiter = Arc::new(
        RedisLimiter::builder(backend, key, limit)
            .lease(Duration::from_millis(1))
            .build()
            .expect("limiter"),
    );
    let trips = backend.stats().round_trips;
    let stop = Arc::new(AtomicBool::new(false));
    let granted = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (limiter, stop, granted) = (limiter.clone(), stop.clone(), granted.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                // Ordering: Relaxed; a stop flag and a count read after the joins.
                while !stop.load(Ordering::Relaxed) {
                    if limiter.reserve(1, Some(Duration::ZERO)).await.is_granted() {
                        n += 1;
                    }
                }
                granted.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.await.expect("task");
    }
    let elapsed = start.elapsed().as_secs_f64();
    let granted = granted.load(Ordering::Relaxed) as f64;
    let trips = (backend.stats().round_trips - trips) as f64;
    (granted / elapsed, trips / granted.max(1.0))
}

/// The most `procs` leasing limiters admitted beyond a shared bucket over
/// any interval, and the permits they admitted.
async fn over_admission(backend: &Backend, procs: u64, round: u64) -> (f64, u64, u64) {
    let key = format!("bench-leases:excess:{}:{round}", std::process::id());
    let limit = bucket(100, 1000); // 100 000/s
    let limiters: Vec<_> = (0..procs)
        .map(|_| {
            Arc::new(
                RedisLimiter::builder(backend, key.clone(), limit)
                    .lease(Duration::from_millis(1))
                    .build()
                    .expect("limiter"),
            )
        })
        .collect();
    let start = Instant::now();
    // Each at twice its share of the rate (200 000/s in all): a request
    // every 5 µs × procs.
    let gap = Duration::from_nanos(5_000 * procs);
    let handles: Vec<_> = limiters
        .iter()
        .map(|l| {
            let l = l.clone();
            tokio::spawn(async move {
                let mut at = Vec::new();
                let mut next = Instant::now();
                while start.elapsed() < Duration::from_millis(500) {
                    if let Ok(g) = l.reserve(1, Some(Duration::ZERO)).await.result() {
                        at.push(g.started_nanos());
                    }
                    next += gap;
                    if let Some(d) = next.checked_duration_since(Instant::now()) {
                        tokio::time::sleep(d).await;
                    }
                }
                at
            })
        })
        .collect();
    let mut at = Vec::new();
    for h in handles {
        at.extend(h.await.expect("task"));
    }
    at.sort_unstable();
    let leased: u64 = limiters.iter().map(|l| l.stats().from(Source::Lease)).sum();
    (excess(&at, 100_000.0, 1000.0), at.len() as u64, leased)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("REDIS_URL").ok())
        .unwrap_or_else(|| {
            eprintln!("bench_leases: give a Redis URL (argument or REDIS_URL)");
            std::process::exit(2)
        });
    let (rounds, tasks, procs) = (env("ROUNDS", 5), env("TASKS", 8), env("PROCS", 4));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let backend = Backend::builder(url.as_str())
            .deadline(Duration::from_secs(1))
            .connect()
            .await
            .expect("connect");
        println!("rounds {rounds}, {tasks} tasks, 1 ms leases");
        let (mut pacer, mut refill, mut pt, mut rt_) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            let limit = SharedLimit::pacer(Rate::new(1e8).unwrap(), 0.0).unwrap();
            let (p, t) = throughput(&backend, limit, tasks, "pacer").await;
            pacer.push(p);
            pt.push(t);
            let (r, t) = throughput(&backend, bucket(100_000, 1_000_000), tasks, "refill").await;
            refill.push(r);
            rt_.push(t);
            println!("  pacer {p:>12.0}/s   refill {r:>12.0}/s");
        }
        let range = |v: &[f64]| {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
            format!("{lo:.0}–{hi:.0}")
        };
        println!(
            "leased permits/s, median (min–max): pacer {:.0} ({}), {:.5} round trips/permit; \
             refill {:.0} ({}), {:.5} round trips/permit",
            median(&mut pacer.clone()),
            range(&pacer),
            median(&mut pt),
            median(&mut refill.clone()),
            range(&refill),
            median(&mut rt_)
        );
        println!(
            "over-admission: {procs} leasing limiters on one bucket (100 000/s, capacity 1 000), \
             demand 2x, 0.5 s; bound {} permits (one 1 ms lease each)",
            procs * 100
        );
        let mut excesses = Vec::new();
        for round in 0..rounds {
            let (e, admitted, leased) = over_admission(&backend, procs, round).await;
            println!("  excess {e:>6.0} permits   admitted {admitted}   from leases {leased}");
            excesses.push(e);
        }
        println!(
            "excess median {:.0}, max {:.0}",
            median(&mut excesses.clone()),
            excesses.iter().cloned().fold(0.0, f64::max)
        );
    });
}
