//! The scripts against the in-memory limiters: the same requests at the
//! same clock readings give the same decisions (the server's clock replaced
//! by the test-only `now`, in whole microseconds).

mod common;

use std::time::Duration;

use ratekeeper::bucket::RefillConfig;
use ratekeeper::{AcquireError, ManualClock, Pacer, Rate, RateLimiter, RefillLimiter};
use ratekeeper_redis::{Backend, RedisLimiter, ServerAnswer, SharedLimit};

/// One request: microseconds after the start, permits, maximum wait.
type Step = (u64, u32, Option<Duration>);

/// An answer: granted, scheduled − now, ready − now (ns).
type Answer = (bool, i64, i64);

/// The server's answers and the in-memory Pacer's (scheduled − now,
/// ready − now, granted) for `steps`, at `rate` and `strictness`.
fn pacer_both(
    rt: &tokio::runtime::Runtime,
    backend: &Backend,
    rate: f64,
    strictness: f64,
    steps: &[Step],
) -> (Vec<Answer>, Vec<Answer>) {
    let limit = SharedLimit::pacer(Rate::new(rate).unwrap(), strictness).unwrap();
    let shared = RedisLimiter::builder(backend, common::key("pacer"), limit)
        .build()
        .unwrap();
    // Server times: a base far from 0, as TIME's are.
    let base_us = 1_700_000_000_000_000u64;
    let clock = ManualClock::new(0);
    let mut memory = None;
    let (mut server, mut local) = (Vec::new(), Vec::new());
    for &(at_us, permits, max_wait) in steps {
        clock.set_nanos(at_us * 1000);
        // The in-memory schedule starts at the first request, as a new key.
        let pacer = memory.get_or_insert_with(|| {
            Pacer::builder(Rate::new(rate).unwrap())
                .strictness(strictness)
                .build_with_clock(clock.clone())
                .unwrap()
        });
        let answer = rt
            .block_on(shared.decide_at(permits, max_wait, base_us + at_us))
            .expect("server")
            .expect("valid");
        let ServerAnswer {
            granted,
            scheduled,
            ready,
            ..
        } = answer;
        server.push((granted, scheduled, ready));
        let now = (at_us * 1000) as i64;
        local.push(match pacer.reserve(permits, max_wait) {
            Ok(g) => (
                true,
                g.scheduled_nanos() as i64 - now,
                g.ready_nanos() as i64 - now,
            ),
            Err(AcquireError::WouldWait { wait, .. }) => (false, i64::MIN, wait.as_nanos() as i64),
            Err(e) => panic!("in memory: {e}"),
        });
    }
    // A refusal's scheduled time is not part of the in-memory answer.
    for (s, l) in server.iter_mut().zip(&local) {
        if !l.0 {
            s.1 = i64::MIN;
        }
    }
    (server, local)
}

#[test]
fn the_pacer_script_decides_as_the_pacer_in_every_mode() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let backend = rt.block_on(Backend::connect(&url)).unwrap();
    // Bursts, idle gaps, several permits, and bounded waits.
    let steps: Vec<Step> = vec![
        (0, 1, None),
        (0, 1, None),
        (0, 3, None),
        (100, 1, None),
        (50_000, 1, None),
        (50_000, 2, Some(Duration::from_micros(10))),
        (50_000, 1, Some(Duration::from_millis(5))),
        (50_001, 1, None),
        (1_000_000, 1, None),
        (1_000_250, 4, None),
        (3_000_000, 1, Some(Duration::ZERO)),
        (3_000_000, 1, Some(Duration::ZERO)),
    ];
    for strictness in [0.0, 0.3, 1.0, 1.1, 2.0] {
        for rate in [1000.0, 7.0, 333_333.0] {
            let (server, local) = pacer_both(&rt, &backend, rate, strictness, &steps);
            assert_eq!(server, local, "rate {rate}, strictness {strictness}");
        }
    }
}

#[test]
fn the_refill_script_decides_as_the_refill_limiter() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    let backend = rt.block_on(Backend::connect(&url)).unwrap();
    let config = RefillConfig::builder()
        .limit_for_period(5)
        .limit_refresh_period(Duration::from_millis(50))
        .permit_capacity(8)
        .initial_permits(2)
        .timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let shared =
        RedisLimiter::builder(&backend, common::key("refill"), SharedLimit::Refill(config))
            .build()
            .unwrap();
    let clock = ManualClock::new(0);
    let memory = RefillLimiter::new_with_clock(config, clock.clone());
    let base_us = 1_700_000_000_000_000u64;
    let steps: Vec<Step> = vec![
        (0, 1, Some(Duration::ZERO)),
        (0, 1, Some(Duration::ZERO)),
        (0, 1, Some(Duration::ZERO)),
        (0, 1, Some(Duration::from_millis(50))),
        (0, 5, Some(Duration::from_millis(50))),
        (0, 8, None),
        (0, 9, None),
        (5_000, 2, None),
        (1_000_000, 5, Some(Duration::ZERO)),
        (1_000_000, 1, Some(Duration::ZERO)),
        (1_000_001, 1, Some(Duration::from_millis(10))),
    ];
    for (at_us, permits, max_wait) in steps {
        clock.set_nanos(at_us * 1000);
        let server = rt
            .block_on(shared.decide_at(permits, max_wait, base_us + at_us))
            .unwrap()
            .map(|a| (a.granted, a.ready));
        let local = match memory.reserve(permits, max_wait) {
            Ok(g) => Ok((true, (g.ready_nanos() - at_us * 1000) as i64)),
            Err(AcquireError::WouldWait { wait, .. }) => Ok((false, wait.as_nanos() as i64)),
            Err(e) => Err(e),
        };
        assert_eq!(
            server, local,
            "at {at_us} us, {permits} permits, {max_wait:?}"
        );
    }
}

#[test]
fn a_pacer_request_longer_than_2_pow_52_ns_can_never_be_granted() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // One a second: the scripts compute up to 2^52 ns, 4 503 599 slots
        // (4 503 599 627 370 496 / 10^9, rounded down).
        let limit = SharedLimit::pacer(Rate::new(1.0).unwrap(), 1.0).unwrap();
        let l = RedisLimiter::builder(&backend, common::key("span"), limit)
            .build()
            .unwrap();
        let over = l.reserve(4_503_600, None).await;
        assert_eq!(
            over.result(),
            Err(AcquireError::InsufficientCapacity {
                requested: 4_503_600,
                max: 4_503_599
            }),
            "{over:?}"
        );
        let trips = backend.stats().round_trips;
        assert!(l.reserve(4_503_599, None).await.is_granted());
        assert_eq!(backend.stats().round_trips, trips + 1);
    });
}

#[test]
fn a_bucket_refills_on_the_servers_clock_between_requests() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::connect(&url).await.unwrap();
        // One permit, refilled every 10 ms.
        let limit = SharedLimit::Refill(
            RefillConfig::builder()
                .limit_for_period(1)
                .limit_refresh_period(Duration::from_millis(10))
                .permit_capacity(1)
                .initial_permits(1)
                .timeout(Duration::ZERO)
                .build()
                .unwrap(),
        );
        let l = RedisLimiter::builder(&backend, common::key("refills"), limit)
            .build()
            .unwrap();
        let zero = Some(Duration::ZERO);
        assert!(l.reserve(1, zero).await.is_granted());
        // Ten refills' time later (a generous bound): full again.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let d = l.reserve(1, zero).await;
        assert!(d.is_granted(), "refilled after 100 ms: {d:?}");
    });
}
