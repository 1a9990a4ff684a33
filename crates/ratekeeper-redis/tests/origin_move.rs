//! The scripts' origin move: a key's times are nanoseconds since its origin,
//! kept below 2^53 so that Lua's doubles hold them exactly, and the origin
//! moves up (keeping a day) once 2^52 ns (52 days) have passed. A schedule
//! or bucket that spans the move keeps its absolute times: the next slot,
//! or the next permit, is due when it was due before the move.
//!
//! Driven through `decide_at` (server time given), on limits slow enough
//! (one permit per 40 days) for a key to live across the move.

mod common;

use std::time::Duration;

use ratekeeper::bucket::RefillConfig;
use ratekeeper::Rate;
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit};

const DAY_US: u64 = 86_400_000_000;
const DAY_NS: i64 = 86_400_000_000_000;
/// Server time of the first request, whole µs.
const T0: u64 = 1_700_000_000_000_000;

/// One permit per 40 days (under 2^52 ns, so one request fits).
const PERIOD: Duration = Duration::from_secs(40 * 86_400);

async fn limiter(url: &str, name: &str, limit: SharedLimit) -> RedisLimiter {
    let backend = Backend::builder(url)
        .deadline(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    RedisLimiter::builder(&backend, common::key(name), limit)
        .idle_ttl(Duration::from_secs(60))
        .build()
        .unwrap()
}

#[test]
fn a_pacer_schedule_keeps_its_slots_across_the_origin_move() {
    let Some(url) = common::redis_url() else {
        return;
    };
    common::runtime().block_on(async {
        let rate = Rate::new(1.0 / PERIOD.as_secs_f64()).unwrap();
        let limit = SharedLimit::pacer(rate, 1.0).unwrap();
        let l = limiter(&url, "origin-pacer", limit).await;
        // The first slot is now; the accumulator moves one slot on.
        let first = l.decide_at(1, None, T0).await.unwrap().unwrap();
        assert!(first.granted && first.scheduled == 0, "{first:?}");
        let op = first.extra;
        assert!(op > 39 * DAY_NS && op < 41 * DAY_NS, "{op}");
        // A day on: the second slot, one slot after the first.
        let second = l.decide_at(1, None, T0 + DAY_US).await.unwrap().unwrap();
        assert!(second.granted, "{second:?}");
        assert_eq!(second.scheduled, op - DAY_NS);
        // 53 days after the origin (past 2^52 ns): the origin moves. The
        // third slot is still two slots after the first, 27 days ahead.
        let now = T0 + 53 * DAY_US;
        let third = l.decide_at(1, None, now).await.unwrap().unwrap();
        assert!(third.granted, "{third:?}");
        assert_eq!(third.scheduled, 2 * op - 53 * DAY_NS, "{third:?}");
        assert_eq!(third.ready, third.scheduled, "strict: ready at its slot");
        // And after it, one slot more: the moved state was stored.
        let fourth = l.decide_at(1, None, now).await.unwrap().unwrap();
        assert_eq!(fourth.scheduled, 3 * op - 53 * DAY_NS, "{fourth:?}");
    });
}

#[test]
fn a_bucket_keeps_its_next_permit_across_the_origin_move() {
    let Some(url) = common::redis_url() else {
        return;
    };
    common::runtime().block_on(async {
        let config = RefillConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(PERIOD)
            .permit_capacity(2)
            .initial_permits(0)
            .timeout(Duration::ZERO)
            .build()
            .unwrap();
        let l = limiter(&url, "origin-bucket", SharedLimit::Refill(config)).await;
        // An empty new bucket: the first permit comes one period on.
        let first = l.decide_at(1, None, T0).await.unwrap().unwrap();
        assert!(first.granted, "{first:?}");
        let npp = first.ready;
        assert!(npp > 39 * DAY_NS && npp < 41 * DAY_NS, "{npp}");
        // 53 days on (past 2^52 ns since the origin): the next permit is
        // still due two periods after the first request, 27 days ahead.
        let now = T0 + 53 * DAY_US;
        let refused = l
            .decide_at(1, Some(Duration::ZERO), now)
            .await
            .unwrap()
            .unwrap();
        assert!(!refused.granted, "{refused:?}");
        assert_eq!(refused.ready, 2 * npp - 53 * DAY_NS, "{refused:?}");
        // Taken with a wait, it is granted then, and the moved state kept.
        let taken = l.decide_at(1, None, now).await.unwrap().unwrap();
        assert!(taken.granted, "{taken:?}");
        assert_eq!(taken.ready, 2 * npp - 53 * DAY_NS, "{taken:?}");
        let after = l
            .decide_at(1, Some(Duration::ZERO), now)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after.ready, 3 * npp - 53 * DAY_NS, "{after:?}");
    });
}
