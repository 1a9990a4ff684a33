//! The blocking facade: threads calling `acquire()` on one
//! `BlockingLimiter` are paced by the shared schedule on the server.

mod common;

use std::time::{Duration, Instant};

use ratekeeper::{Rate, RateLimiter};
use ratekeeper_redis::{
    Backend, BlockingBackend, FailurePolicy, RedisLimiter, SharedLimit, Source,
};

#[test]
fn acquire_on_several_threads_follows_the_shared_schedule() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let blocking =
        BlockingBackend::connect(Backend::builder(url).deadline(Duration::from_secs(2))).unwrap();
    // 50/s in strict mode: one grant every 20 ms.
    let slot = Duration::from_millis(20);
    let limit = SharedLimit::pacer(Rate::new(50.0).unwrap(), 1.0).unwrap();
    let limiter = blocking.limiter(
        RedisLimiter::builder(blocking.backend(), common::key("blocking"), limit)
            // A failure would panic in acquire() instead of admitting.
            .failure_policy(FailurePolicy::Closed)
            .build()
            .unwrap(),
    );
    let (threads, each) = (4, 5);
    let start = Instant::now();
    let mut readies: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let limiter = &limiter;
                s.spawn(move || {
                    (0..each)
                        .map(|_| {
                            let grant = limiter.acquire();
                            // acquire() returned once the grant was ready,
                            // never before (no early release on a limit
                            // other processes share).
                            let now = limiter.clock().now_nanos();
                            assert!(
                                now >= grant.ready_nanos(),
                                "{} ns early",
                                grant.ready_nanos() - now
                            );
                            grant.ready_nanos()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a thread panicked"))
            .collect()
    });
    let elapsed = start.elapsed();
    let n = threads * each;
    assert_eq!(limiter.stats().from(Source::Redis), n as u64);
    // The n grants span n - 1 slots of the one schedule (less a little for
    // the network delay in translating each to the local clock).
    readies.sort_unstable();
    let span = Duration::from_nanos(readies[n - 1] - readies[0]);
    let paced = slot * (n as u32 - 1);
    let tolerance = Duration::from_millis(30);
    assert!(
        span + tolerance >= paced,
        "grants span {span:?} < {paced:?}"
    );
    assert!(elapsed + tolerance >= paced, "took {elapsed:?} < {paced:?}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}

#[test]
fn a_batch_handle_over_the_blocking_limiter_leases_from_the_server() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let blocking =
        BlockingBackend::connect(Backend::builder(url).deadline(Duration::from_secs(2))).unwrap();
    // 1 M a second, average mode: the handle's leases are granted at once.
    let limit = SharedLimit::pacer(Rate::new(1_000_000.0).unwrap(), 0.0).unwrap();
    let limiter = blocking.limiter(
        RedisLimiter::builder(blocking.backend(), common::key("batch"), limit)
            .failure_policy(FailurePolicy::Closed)
            .build()
            .unwrap(),
    );
    // The core's batching, on a limiter kept on the server: one
    // reservation per lease of many permits. A lease covers the handle's
    // rate over `max_lease`, which must span a few round trips (the 100 µs
    // default is about one).
    let handle =
        ratekeeper::BatchHandle::new(limiter.clone()).with_max_lease(Duration::from_millis(5));
    for _ in 0..5_000 {
        handle.acquire();
    }
    let trips = blocking.backend().stats().round_trips;
    assert!(trips < 500, "{trips} round trips for 5000 permits");
    assert!(limiter.stats().from(Source::Redis) >= 1);
}

#[test]
fn wait_stats_report_how_far_the_shared_schedule_is_behind_the_clock() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let blocking =
        BlockingBackend::connect(Backend::builder(url).deadline(Duration::from_secs(2))).unwrap();
    // 1000/s: a slot a millisecond.
    let limit = SharedLimit::pacer(Rate::new(1000.0).unwrap(), 1.0).unwrap();
    let limiter = blocking.limiter(
        RedisLimiter::builder(blocking.backend(), common::key("backlog"), limit)
            .failure_policy(FailurePolicy::Closed)
            .build()
            .unwrap(),
    );
    limiter.acquire();
    // Idle for 100 ms: the schedule (its next slot at 1 ms) stays behind.
    std::thread::sleep(Duration::from_millis(100));
    limiter.acquire();
    let stats = limiter.wait_stats();
    // 100 ms less the two slots, and the time the calls took (generous).
    assert!(
        stats.backlog_nanos >= 90_000_000 && stats.backlog_nanos < 10_000_000_000,
        "{stats:?}"
    );
    assert_eq!(stats.total_wait_nanos, stats.backlog_nanos);
}
