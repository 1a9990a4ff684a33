//! The hard cap on a prefix's live clients (`max_clients`) against a real
//! server: a flood of new clients stays at the cap, a tracked client keeps
//! its exact limit through it, recovered clients go before any policy, each
//! overflow policy does what it says, and bad settings are refused.

mod common;

use std::time::Duration;

use ratekeeper::bucket::RefillConfig;
use ratekeeper::keyed::{Overflow, MAX_KEYS};
use ratekeeper::{AcquireError, ConfigErrorKind, Rate};
use ratekeeper_redis::{
    Admission, Backend, Decision, FailurePolicy, RedisLimiter, SharedLimit, Source,
};

const ZERO: Option<Duration> = Some(Duration::ZERO);

/// A bucket of 5 permits refilled one per 100 s: a client that took one
/// holds debt for 100 s, longer than any test runs.
fn slow_bucket() -> SharedLimit {
    SharedLimit::Refill(
        RefillConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_secs(100))
            .permit_capacity(5)
            .initial_permits(5)
            .timeout(Duration::ZERO)
            .build()
            .unwrap(),
    )
}

/// A strict Pacer at `rate` a second.
fn pacer(rate: f64) -> SharedLimit {
    SharedLimit::pacer(Rate::new(rate).unwrap(), 1.0).unwrap()
}

async fn backend(url: &str) -> Backend {
    Backend::builder(url)
        .deadline(Duration::from_secs(2))
        .connect()
        .await
        .unwrap()
}

/// A limiter capped at `max` clients under a fresh prefix; failing closed,
/// so that a server failure can never pass for a grant.
fn capped(backend: &Backend, limit: SharedLimit, max: usize, overflow: Overflow) -> RedisLimiter {
    RedisLimiter::builder(backend, format!("{}:", common::key("capped")), limit)
        .failure_policy(FailurePolicy::Closed)
        .max_clients(max)
        .overflow(overflow)
        .build()
        .unwrap()
}

/// The server decided (not the failure policy).
fn decided(d: &Decision) -> &Decision {
    assert_eq!(d.source(), Source::Redis, "{:?}", d.backend_error());
    d
}

fn conn(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

fn zcard(conn: &mut redis::Connection, key: &str) -> u64 {
    redis::cmd("ZCARD").arg(key).query(conn).unwrap()
}

fn exists(conn: &mut redis::Connection, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query::<u64>(conn).unwrap() == 1
}

/// Keys whose names start with the limiter's tagged prefix.
fn client_keys(conn: &mut redis::Connection, l: &RedisLimiter) -> usize {
    let pattern = format!("{}*", l.client_key(""));
    let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query(conn).unwrap();
    keys.len()
}

#[test]
fn a_flood_of_new_clients_stays_at_the_cap_under_every_policy() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let mut conn = conn(&url);
    rt.block_on(async {
        let backend = backend(&url).await;
        for overflow in [
            Overflow::DenyNew,
            Overflow::Shared,
            Overflow::EvictLeastDebt,
        ] {
            let l = capped(&backend, slow_bucket(), 20, overflow);
            let registry = l.client_registry().unwrap().to_owned();
            let mut admissions = Vec::new();
            for i in 0..300 {
                let d = l.reserve_for(&format!("flood-{i}"), 1, ZERO).await;
                admissions.push(decided(&d).admission().unwrap());
                assert!(zcard(&mut conn, &registry) <= 20, "{overflow:?} at {i}");
            }
            assert_eq!(client_keys(&mut conn, &l), 20, "{overflow:?}");
            let count = |a| admissions.iter().filter(|&&x| x == a).count() as u64;
            let stats = l.client_stats().unwrap();
            assert_eq!(stats.live_clients, 20, "{overflow:?}");
            assert_eq!(stats.max_clients, 20);
            assert_eq!(stats.evicted_recovered, 0, "{overflow:?}");
            assert_eq!(count(Admission::Tracked), 20, "{overflow:?}");
            match overflow {
                Overflow::DenyNew => {
                    assert_eq!((count(Admission::DeniedNew), stats.denied_new), (280, 280));
                }
                Overflow::Shared => {
                    assert_eq!((count(Admission::Overflowed), stats.overflowed), (280, 280));
                }
                _ => {
                    assert_eq!(
                        (count(Admission::EvictedDebt), stats.evicted_debt),
                        (280, 280)
                    );
                }
            }
        }
    });
}

#[test]
fn a_tracked_client_keeps_its_exact_limit_through_a_flood() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = backend(&url).await;
        for overflow in [
            Overflow::DenyNew,
            Overflow::Shared,
            Overflow::EvictLeastDebt,
        ] {
            let l = capped(&backend, slow_bucket(), 10, overflow);
            // The steady client empties its bucket: 500 s of debt, more
            // than any flooder's (100 s), so even EvictLeastDebt keeps it.
            for _ in 0..5 {
                let d = l.reserve_for("steady", 1, ZERO).await;
                assert!(decided(&d).is_granted(), "{overflow:?}");
            }
            let mut last_wait = Duration::MAX;
            for round in 0..10 {
                for i in 0..30 {
                    let d = l.reserve_for(&format!("flood-{round}-{i}"), 1, ZERO).await;
                    decided(&d);
                }
                // Forgiven or rebuilt, it would hold permits again: it
                // holds none, and its wait only shrinks with the clock.
                let d = l.reserve_for("steady", 1, ZERO).await;
                assert_eq!(decided(&d).admission(), Some(Admission::Tracked));
                let Err(AcquireError::WouldWait { wait, .. }) = d.result() else {
                    panic!("{overflow:?}: the steady client was granted: {d:?}");
                };
                assert!(
                    wait > Duration::from_secs(90) && wait <= last_wait,
                    "{wait:?}"
                );
                last_wait = wait;
            }
        }
    });
}

#[test]
fn recovered_clients_are_dropped_before_any_policy() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let mut conn = conn(&url);
    rt.block_on(async {
        let backend = backend(&url).await;
        for overflow in [
            Overflow::DenyNew,
            Overflow::Shared,
            Overflow::EvictLeastDebt,
        ] {
            // 1 ms a slot: a client recovers (its key kept an hour more
            // by the idle TTL) a few ms after its grant.
            let l = capped(&backend, pacer(1000.0), 5, overflow);
            for i in 0..5 {
                assert!(decided(&l.reserve_for(&format!("old-{i}"), 1, ZERO).await).is_granted());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            for i in 0..5 {
                // 100 s of debt each: none of them recovers meanwhile.
                let d = l.reserve_for(&format!("new-{i}"), 100_000, None).await;
                assert_eq!(
                    decided(&d).admission(),
                    Some(Admission::Tracked),
                    "{overflow:?}"
                );
                assert!(d.is_granted());
            }
            for i in 0..5 {
                let old = l.client_key(&format!("old-{i}"));
                assert!(!exists(&mut conn, &old), "{old} was not deleted");
            }
            let stats = l.client_stats().unwrap();
            assert_eq!(stats.evicted_recovered, 5, "{overflow:?}: {stats:?}");
            assert_eq!(
                (stats.evicted_debt, stats.denied_new, stats.overflowed),
                (0, 0, 0),
                "{overflow:?}"
            );
            assert_eq!(stats.live_clients, 5);
        }
    });
}

#[test]
fn deny_new_refuses_a_new_client_until_a_place_frees_up() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let mut conn = conn(&url);
    rt.block_on(async {
        let backend = backend(&url).await;
        let l = capped(&backend, slow_bucket(), 3, Overflow::DenyNew);
        for client in ["a", "b", "c"] {
            assert!(decided(&l.reserve_for(client, 1, ZERO).await).is_granted());
        }
        // Refused whatever it would wait, with the time until the first
        // live client recovers (a's bucket is full again in 100 s).
        for max_wait in [ZERO, None] {
            let d = l.reserve_for("d", 1, max_wait).await;
            assert_eq!(decided(&d).admission(), Some(Admission::DeniedNew));
            let Err(AcquireError::WouldWait { wait, .. }) = d.result() else {
                panic!("{d:?}");
            };
            assert!(wait > Duration::from_secs(99) && wait <= Duration::from_secs(101));
        }
        assert!(!exists(&mut conn, &l.client_key("d")), "nothing written");
        // The tracked clients keep deciding on their own limits.
        let d = l.reserve_for("a", 4, ZERO).await;
        assert_eq!(decided(&d).admission(), Some(Admission::Tracked));
        assert!(d.is_granted());
        assert!(!l.reserve_for("a", 1, ZERO).await.is_granted());
        let stats = l.client_stats().unwrap();
        assert_eq!((stats.denied_new, stats.live_clients), (2, 3));
        assert_eq!(l.stats().refused, 3);
    });
}

#[test]
fn shared_overflow_decides_new_clients_on_one_limit() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let mut conn = conn(&url);
    rt.block_on(async {
        let backend = backend(&url).await;
        let l = capped(&backend, slow_bucket(), 2, Overflow::Shared);
        for client in ["a", "b"] {
            assert!(decided(&l.reserve_for(client, 1, ZERO).await).is_granted());
        }
        // d and e share one bucket of 5: 3 + 3 do not fit.
        let d = l.reserve_for("d", 3, ZERO).await;
        assert_eq!(decided(&d).admission(), Some(Admission::Overflowed));
        assert!(d.is_granted());
        let e = l.reserve_for("e", 3, ZERO).await;
        assert_eq!(decided(&e).admission(), Some(Admission::Overflowed));
        assert!(matches!(e.result(), Err(AcquireError::WouldWait { .. })));
        assert!(l.reserve_for("e", 2, ZERO).await.is_granted());
        for client in ["d", "e"] {
            assert!(!exists(&mut conn, &l.client_key(client)), "{client}");
        }
        let stats = l.client_stats().unwrap();
        assert_eq!((stats.overflowed, stats.live_clients), (3, 2));
    });
}

#[test]
fn evict_least_debt_drops_the_client_closest_to_recovering() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let mut conn = conn(&url);
    rt.block_on(async {
        let backend = backend(&url).await;
        // 10 s a slot: a owes 10 s, b 30 s.
        let l = capped(&backend, pacer(0.1), 2, Overflow::EvictLeastDebt);
        assert!(decided(&l.reserve_for("a", 1, None).await).is_granted());
        assert!(decided(&l.reserve_for("b", 3, None).await).is_granted());
        let c = l.reserve_for("c", 1, ZERO).await;
        assert_eq!(decided(&c).admission(), Some(Admission::EvictedDebt));
        assert!(c.is_granted());
        assert!(!exists(&mut conn, &l.client_key("a")), "a dropped");
        assert!(exists(&mut conn, &l.client_key("b")), "b kept");
        // b's debt stands.
        let b = l.reserve_for("b", 1, ZERO).await;
        assert_eq!(decided(&b).admission(), Some(Admission::Tracked));
        assert!(b.result().unwrap_err().retry_after().unwrap() > Duration::from_secs(20));
        // a comes back new, in c's place (c owes less than b): its debt
        // was forgiven, and counted.
        let a = l.reserve_for("a", 1, ZERO).await;
        assert_eq!(decided(&a).admission(), Some(Admission::EvictedDebt));
        assert!(a.is_granted());
        assert!(!exists(&mut conn, &l.client_key("c")), "c dropped");
        let stats = l.client_stats().unwrap();
        assert_eq!((stats.evicted_debt, stats.live_clients), (2, 2));
    });
}

#[test]
fn bad_caps_and_prefixes_are_refused_with_typed_errors() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = backend(&url).await;
        let build = |prefix: &str, max| {
            RedisLimiter::builder(&backend, prefix, pacer(10.0))
                .max_clients(max)
                .build()
                .unwrap_err()
        };
        let e = build("p:", 0);
        assert_eq!(e.kind(), ConfigErrorKind::MaxKeys);
        assert_eq!(e.to_string(), "the cap on live keys must be at least 1");
        let e = build("p:", MAX_KEYS + 1);
        assert_eq!(e.kind(), ConfigErrorKind::MaxKeys);
        assert_eq!(
            e.to_string(),
            format!(
                "the cap on live keys must be at most {MAX_KEYS}, got {}",
                MAX_KEYS + 1
            )
        );
        assert_eq!(build("}p:", 10).kind(), ConfigErrorKind::Backend);
        // A prefix with a tag of its own keeps it.
        let l = RedisLimiter::builder(&backend, "api:{ip}:", pacer(10.0))
            .max_clients(10)
            .build()
            .unwrap();
        assert_eq!(l.client_key("x"), "api:{ip}:x");
        assert_eq!(l.client_registry(), Some("rk:clients:api:{ip}:"));
    });
}

#[test]
fn uncapped_clients_keep_todays_layout() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let mut conn = conn(&url);
    rt.block_on(async {
        let backend = backend(&url).await;
        let prefix = format!("{}:", common::key("uncapped"));
        let l = RedisLimiter::builder(&backend, prefix.clone(), pacer(10.0))
            .build()
            .unwrap();
        let d = l.reserve_for("x", 1, ZERO).await;
        assert!(decided(&d).is_granted());
        assert_eq!(d.admission(), None);
        assert_eq!(l.client_key("x"), format!("{prefix}x"));
        assert!(exists(&mut conn, &format!("{prefix}x")));
        assert!(!exists(&mut conn, &format!("rk:clients:{{{prefix}}}")));
        assert_eq!(l.client_stats(), None);
    });
}
