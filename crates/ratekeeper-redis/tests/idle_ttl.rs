//! The idle TTL at its ends: zero (a key dropped as soon as it has caught
//! up) and the largest the builder takes; beyond it, a typed error.

mod common;

use std::time::Duration;

use ratekeeper::{ConfigErrorKind, Rate};
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit, Source, MAX_IDLE_TTL};

/// An average-mode Pacer at 100/s: behind schedule once idle, so nothing
/// is ahead of the clock after a grant.
fn average() -> SharedLimit {
    SharedLimit::pacer(Rate::new(100.0).unwrap(), 0.0).unwrap()
}

#[test]
fn a_zero_idle_ttl_with_nothing_ahead_still_decides_on_the_server() {
    let Some(url) = common::redis_url() else {
        return;
    };
    common::runtime().block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // 1000/s on average; the first request takes 20 slots, so its key
        // is kept 20 ms (of real time: the expiry is the server's own).
        let limit = SharedLimit::pacer(Rate::new(1000.0).unwrap(), 0.0).unwrap();
        let l = RedisLimiter::builder(&backend, common::key("idle-zero"), limit)
            .idle_ttl(Duration::ZERO)
            .build()
            .unwrap();
        let t = 1_000_000_000_000; // server time, whole µs, given
        assert!(l.decide_at(20, None, t).await.unwrap().is_ok());
        // 50 ms on (given), the key still there: the schedule is behind the
        // clock after this grant, nothing is ahead, and the key's expiry
        // must still be a valid one (it was `PX 0`, which Redis refuses).
        let second = l.decide_at(1, None, t + 50_000).await;
        assert!(matches!(second, Ok(Ok(_))), "{second:?}");
    });
}

#[test]
fn the_largest_idle_ttl_is_kept_and_a_larger_one_is_refused() {
    let Some(url) = common::redis_url() else {
        return;
    };
    // The documented bound: 100 years, and no less.
    const YEAR: Duration = Duration::from_secs(365 * 86_400);
    assert!(MAX_IDLE_TTL >= YEAR * 100, "{MAX_IDLE_TTL:?}");
    common::runtime().block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        let l = RedisLimiter::builder(&backend, common::key("idle-max"), average())
            .idle_ttl(MAX_IDLE_TTL)
            .build()
            .unwrap();
        let d = l.reserve(1, None).await;
        assert_eq!(d.source(), Source::Redis, "{d:?}");
        assert!(d.backend_error().is_none(), "{d:?}");
        for ttl in [MAX_IDLE_TTL + Duration::from_millis(1), Duration::MAX] {
            let err = RedisLimiter::builder(&backend, common::key("idle-over"), average())
                .idle_ttl(ttl)
                .build()
                .unwrap_err();
            assert_eq!(err.kind(), ConfigErrorKind::Backend, "{ttl:?}");
        }
    });
}
