//! The denial cache, leases and coalescing against a real server: fewer
//! round trips, and no more granted than the limit and the lease bound
//! allow.

mod common;

use std::sync::Arc;
use std::time::Duration;

use ratekeeper::bucket::RefillConfig;
use ratekeeper::{AcquireError, Rate};
use ratekeeper_redis::sim::excess;
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit, Source};

fn refill(limit: u32, period: Duration, capacity: u32) -> SharedLimit {
    SharedLimit::Refill(
        RefillConfig::builder()
            .limit_for_period(u64::from(limit))
            .limit_refresh_period(period)
            .permit_capacity(u64::from(capacity))
            .initial_permits(u64::from(capacity))
            .timeout(Duration::ZERO)
            .build()
            .unwrap(),
    )
}

#[test]
fn a_refusal_is_cached_until_its_wait_has_passed() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // 2 permits, one a second.
        let limit = refill(1, Duration::from_secs(1), 2);
        let l = RedisLimiter::builder(&backend, common::key("cache"), limit)
            .build()
            .unwrap();
        let zero = Some(Duration::ZERO);
        assert!(l.reserve(1, zero).await.is_granted());
        assert!(l.reserve(1, zero).await.is_granted());
        let refused = l.reserve(1, zero).await;
        assert_eq!(refused.source(), Source::Redis);
        assert!(matches!(
            refused.result(),
            Err(AcquireError::WouldWait { .. })
        ));
        let trips = backend.stats().round_trips;
        // The server would refuse these too: no round trip.
        for _ in 0..100 {
            let d = l.reserve(1, zero).await;
            assert_eq!(d.source(), Source::Cache);
            let Err(AcquireError::WouldWait { wait, .. }) = d.result() else {
                panic!("refused: {d:?}")
            };
            assert!(wait > Duration::from_millis(500), "{wait:?}");
        }
        assert_eq!(backend.stats().round_trips, trips);
        // A request that may wait long enough goes to the server.
        let d = l.reserve(1, Some(Duration::from_secs(2))).await;
        assert_eq!(d.source(), Source::Redis);
        assert!(d.is_granted());
        assert_eq!(l.stats().from(Source::Cache), 100);
    });
}

#[test]
fn a_pacer_lease_serves_many_requests_per_round_trip_and_keeps_the_schedule() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // 200 000 a second: a 5 µs slot; a 1 ms lease holds up to 200.
        let limit = SharedLimit::pacer(Rate::new(200_000.0).unwrap(), 1.0).unwrap();
        let l = Arc::new(
            RedisLimiter::builder(&backend, common::key("lease"), limit)
                .lease(Duration::from_millis(1))
                .build()
                .unwrap(),
        );
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let l = Arc::clone(&l);
            tasks.push(tokio::spawn(async move {
                let mut slots = Vec::new();
                for _ in 0..500 {
                    let d = l.acquire(1).await;
                    slots.push(d.result().unwrap().scheduled_nanos());
                }
                slots
            }));
        }
        let mut slots = Vec::new();
        for t in tasks {
            slots.extend(t.await.unwrap());
        }
        slots.sort_unstable();
        // Every grant its own slot of the shared schedule: 4000 slots of
        // 5 µs span 20 ms. (On the local clock, slots keep their spacing
        // within one offset estimate; when a faster answer tightens the
        // estimate, later slots move earlier by the difference, tens of µs,
        // so some neighbours come closer than a slot there.)
        let span = slots[slots.len() - 1] - slots[0];
        // Less the offset estimate's tightening over the run (under 1 ms).
        assert!(span >= 19_000_000, "4000 slots over {span} ns");
        // On the server, the schedule advanced by one slot per grant (never
        // less: no slot was handed out twice), plus the leased slots left
        // unused: the last lease's, and any a lease dropped as stale (time
        // not used, as in strict mode), which a loaded machine makes more.
        let mut conn = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        // The key holds "origin ideal actual".
        let state: String = redis::cmd("GET")
            .arg(l.key())
            .query_async(&mut conn)
            .await
            .unwrap();
        let ideal: i64 = state.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(
            (4000 * 5_000..=8000 * 5_000).contains(&ideal),
            "the schedule advanced {ideal} ns for 4000 grants of 5 µs"
        );
        let stats = l.stats();
        assert_eq!(stats.total(), 4000);
        assert!(stats.from(Source::Lease) > 2000, "{stats:?}");
        let trips = backend.stats().round_trips;
        assert!(trips < 1000, "{trips} round trips for 4000 permits");
    });
}

#[test]
fn concurrent_requests_are_coalesced_into_one_round_trip() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        let limit = SharedLimit::pacer(Rate::new(1_000_000.0).unwrap(), 0.0).unwrap();
        let l = Arc::new(
            RedisLimiter::builder(&backend, common::key("coalesce"), limit)
                .lease(Duration::from_millis(1))
                .build()
                .unwrap(),
        );
        let tasks: Vec<_> = (0..200)
            .map(|_| {
                let l = Arc::clone(&l);
                tokio::spawn(async move { l.reserve(1, None).await })
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap().is_granted());
        }
        let trips = backend.stats().round_trips;
        // 200 requests at once: a handful of refills, not 200 round trips.
        assert!(
            trips <= 40,
            "{trips} round trips for 200 concurrent requests"
        );
    });
}

#[test]
fn a_bucket_lease_admits_at_most_one_lease_beyond_the_bucket_over_any_interval() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // 10 000 a second, capacity 100; 2 ms leases (up to 20 permits).
        let limit = refill(10, Duration::from_millis(1), 100);
        let key = common::key("bucket-lease");
        let limiters: Vec<_> = (0..4)
            .map(|_| {
                Arc::new(
                    RedisLimiter::builder(&backend, key.clone(), limit)
                        .lease(Duration::from_millis(2))
                        .build()
                        .unwrap(),
                )
            })
            .collect();
        let start = std::time::Instant::now();
        let tasks: Vec<_> = limiters
            .iter()
            .map(|l| {
                let l = Arc::clone(l);
                tokio::spawn(async move {
                    let mut granted_at = Vec::new();
                    while start.elapsed() < Duration::from_millis(300) {
                        match l.reserve(1, Some(Duration::ZERO)).await.result() {
                            Ok(g) => granted_at.push(g.started_nanos()),
                            Err(_) => tokio::task::yield_now().await,
                        }
                    }
                    granted_at
                })
            })
            .collect();
        let mut granted_at = Vec::new();
        for t in tasks {
            granted_at.extend(t.await.unwrap());
        }
        granted_at.sort_unstable();
        // Over any interval: the bucket's bound (100 + 10 000/s × its
        // length), plus one lease per limiter (20 each), plus one request
        // in flight per limiter (debited before the interval, admitted in
        // it).
        let excess = excess(&granted_at, 10_000.0, 100.0);
        assert!(excess <= 4.0 * 20.0 + 4.0, "{excess} beyond the bucket");
        let leased: u64 = limiters.iter().map(|l| l.stats().from(Source::Lease)).sum();
        assert!(leased > 0, "leases were used");
    });
}

#[test]
fn clients_under_a_prefix_are_limited_apart_and_expire_when_recovered() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // Each client: 2 permits, one a second; kept 0 ms after recovering.
        let prefix = format!("{}:", common::key("per-client"));
        let l = RedisLimiter::builder(
            &backend,
            prefix.clone(),
            refill(1, Duration::from_secs(1), 2),
        )
        .idle_ttl(Duration::ZERO)
        .build()
        .unwrap();
        let zero = Some(Duration::ZERO);
        for client in ["a", "b"] {
            assert!(
                l.reserve_for(client, 2, zero).await.is_granted(),
                "{client}"
            );
            assert!(
                !l.reserve_for(client, 1, zero).await.is_granted(),
                "{client}"
            );
        }
        let mut conn = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("{prefix}a"))
            .query_async(&mut conn)
            .await
            .unwrap();
        // Full again (equal to a new bucket) in 2 s: the key expires then.
        assert!((1_000..=2_001).contains(&ttl), "PTTL {ttl}");
    });
}

#[test]
fn a_lone_request_is_leased_no_more_than_it_asked() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // 1000 a second, 10 s leases: no rate is measured for 40 s, so a
        // lease is sized by the requests queued alone, here none.
        let limit = SharedLimit::pacer(Rate::new(1000.0).unwrap(), 1.0).unwrap();
        let l = RedisLimiter::builder(&backend, common::key("lone"), limit)
            .lease(Duration::from_secs(10))
            .build()
            .unwrap();
        for i in 0..3 {
            let d = l.reserve(1, None).await;
            assert!(d.is_granted(), "{d:?}");
            assert_eq!(d.source(), Source::Redis, "request {i}: {d:?}");
        }
        assert_eq!(l.stats().from(Source::Lease), 0);
    });
}

#[test]
fn a_bucket_request_alone_waits_on_the_server_in_one_round_trip() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // Empty at the start, one permit every 100 ms; 10 s leases (up to
        // the capacity, 2).
        let limit = SharedLimit::Refill(
            RefillConfig::builder()
                .limit_for_period(1)
                .limit_refresh_period(Duration::from_millis(100))
                .permit_capacity(2)
                .initial_permits(0)
                .timeout(Duration::ZERO)
                .build()
                .unwrap(),
        );
        // The script is loaded on the server first.
        let warm = RedisLimiter::builder(&backend, common::key("alone-warm"), limit)
            .build()
            .unwrap();
        warm.reserve(1, None).await;
        let l = RedisLimiter::builder(&backend, common::key("alone"), limit)
            .lease(Duration::from_secs(10))
            .build()
            .unwrap();
        let trips = backend.stats().round_trips;
        let d = l.reserve(1, Some(Duration::from_secs(1))).await;
        let Ok(grant) = d.result() else {
            panic!("granted with a wait: {d:?}")
        };
        assert_eq!(d.source(), Source::Redis);
        assert!(grant.ready_nanos() > grant.started_nanos(), "{grant:?}");
        assert_eq!(
            backend.stats().round_trips - trips,
            1,
            "one round trip for a request alone"
        );
    });
}

#[test]
fn refusals_and_misconfigurations_do_not_size_the_lease() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        let key = common::key("misconfigured");
        let mut con = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        redis::cmd("SET")
            .arg(&key)
            .arg("not a schedule")
            .query_async::<()>(&mut con)
            .await
            .unwrap();
        // 100 000 a second, 10 ms leases (up to 1000 slots), sized from
        // the rate granted over each 40 ms or more.
        let limit = SharedLimit::pacer(Rate::new(100_000.0).unwrap(), 1.0).unwrap();
        let l = RedisLimiter::builder(&backend, key.clone(), limit)
            .lease(Duration::from_millis(10))
            .build()
            .unwrap();
        let start = std::time::Instant::now();
        let mut refused = 0;
        while start.elapsed() < Duration::from_millis(150) {
            let d = l.reserve(1, None).await;
            assert_eq!(d.result(), Err(AcquireError::Misconfigured), "{d:?}");
            refused += 1;
        }
        redis::cmd("DEL")
            .arg(&key)
            .query_async::<()>(&mut con)
            .await
            .unwrap();
        // Nothing was granted: requests alone are not leased more.
        for i in 0..2 {
            let d = l.reserve(1, None).await;
            assert!(d.is_granted(), "{d:?}");
            assert_eq!(
                d.source(),
                Source::Redis,
                "request {i} after {refused} refusals: {d:?}"
            );
        }
    });
}
