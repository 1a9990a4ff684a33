//! Property tests: random request sequences give the same decisions from
//! the scripts (at the test-only server time `now_us`) as from the
//! in-memory Pacer, in every strictness mode, and RefillLimiter. The
//! approach of tests/conformance.rs, over generated tables instead of
//! fixed ones.

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use ratekeeper::bucket::RefillConfig;
use ratekeeper::{AcquireError, ManualClock, Pacer, Rate, RateLimiter, RefillLimiter};
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit};

/// One request: microseconds after the previous one, permits, maximum wait.
type Step = (u64, u32, Option<Duration>);

/// An answer: granted, scheduled − now (refusals: none), ready − now or
/// the wait (ns); or why the request can never be granted.
type Answer = Result<(bool, Option<i64>, i64), AcquireError>;

/// Server times: a base far from 0, as TIME's are.
const BASE_US: u64 = 1_700_000_000_000_000;

/// The runtime and backend every case shares, or `None` without a server.
fn shared() -> Option<&'static (tokio::runtime::Runtime, Backend)> {
    static SHARED: OnceLock<Option<(tokio::runtime::Runtime, Backend)>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let url = common::redis_url()?;
            let rt = common::runtime();
            // A generous deadline: a slow round trip must not read as a
            // different decision.
            let backend = rt
                .block_on(
                    Backend::builder(url)
                        .deadline(Duration::from_secs(5))
                        .connect(),
                )
                .expect("connect");
            Some((rt, backend))
        })
        .as_ref()
}

/// Gaps between requests: mostly within a few slots of the rates below,
/// sometimes idle for seconds.
fn gap() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        3 => 0u64..200,
        4 => 0u64..5_000,
        2 => 0u64..200_000,
        1 => 0u64..3_000_000,
    ]
}

fn max_wait() -> impl Strategy<Value = Option<Duration>> {
    prop_oneof![
        3 => Just(None),
        2 => Just(Some(Duration::ZERO)),
        1 => Just(Some(Duration::from_nanos(1))),
        1 => Just(Some(Duration::from_micros(10))),
        2 => Just(Some(Duration::from_millis(1))),
        1 => Just(Some(Duration::from_millis(5))),
        1 => Just(Some(Duration::from_millis(50))),
        1 => (0u64..20_000_000).prop_map(|n| Some(Duration::from_nanos(n))),
    ]
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec((gap(), 1u32..5, max_wait()), 1..40)
}

/// The in-memory limiter's answer to `reserve(permits, max_wait)` at
/// `now_ns`.
fn in_memory<L: RateLimiter>(
    limiter: &L,
    permits: u32,
    max_wait: Option<Duration>,
    now_ns: u64,
) -> Answer {
    let now = now_ns as i64;
    match limiter.reserve(permits, max_wait) {
        Ok(g) => Ok((
            true,
            Some(g.scheduled_nanos() as i64 - now),
            g.ready_nanos() as i64 - now,
        )),
        Err(AcquireError::WouldWait { wait, .. }) => Ok((false, None, wait.as_nanos() as i64)),
        Err(e) => Err(e),
    }
}

/// Replays `steps` on a new key of `limit` and on the in-memory limiter
/// `build` makes (at the first request's time, as a new key starts), and
/// compares each answer. `scheduled` says whether the server's scheduled
/// time is compared too (the Pacer's; the bucket has only its wait).
fn replay<L: RateLimiter>(
    limit: SharedLimit,
    steps: &[Step],
    build: impl Fn(ManualClock) -> L,
    scheduled: bool,
) -> Result<(), TestCaseError> {
    let Some((rt, backend)) = shared() else {
        return Ok(());
    };
    let shared = RedisLimiter::builder(backend, common::key("prop"), limit)
        .build()
        .unwrap();
    let clock = ManualClock::new(0);
    let mut memory = None;
    let mut at_us = 0;
    for (n, &(gap, permits, max_wait)) in steps.iter().enumerate() {
        at_us += gap;
        clock.set_nanos(at_us * 1000);
        // The in-memory limiter starts at the first request that reaches
        // the server, as a new key does; one that can never be granted
        // (more than the bucket holds) does not.
        let throwaway;
        let memory = if memory.is_none() && permits > limit.max_permits() {
            throwaway = build(clock.clone());
            &throwaway
        } else {
            memory.get_or_insert_with(|| build(clock.clone()))
        };
        let server = rt
            .block_on(shared.decide_at(permits, max_wait, BASE_US + at_us))
            .map_err(|e| TestCaseError::fail(format!("server: {e}")))?
            .map(|a| {
                let sched = (a.granted && scheduled).then_some(a.scheduled);
                (a.granted, sched, a.ready)
            });
        let mut local = in_memory(memory, permits, max_wait, at_us * 1000);
        if !scheduled {
            if let Ok((_, s, _)) = &mut local {
                *s = None;
            }
        }
        prop_assert_eq!(
            server,
            local,
            "step {} at {} us: {} permits, max wait {:?}",
            n,
            at_us,
            permits,
            max_wait
        );
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        // Each case is up to 40 round trips; a few hundred cases in all.
        cases: 48,
        // Shrunk failures are kept beside this file (properties.regressions)
        // and replayed first on every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_pacer_script_decides_as_the_pacer(
        rate in prop::sample::select(vec![7.0, 1000.0, 3_333.0, 50_000.0, 333_333.0]),
        strictness in prop::sample::select(vec![0.0, 0.3, 1.0, 1.5, 3.0]),
        steps in steps(),
    ) {
        let limit = SharedLimit::pacer(Rate::new(rate).unwrap(), strictness).unwrap();
        replay(limit, &steps, |clock| {
            Pacer::builder(Rate::new(rate).unwrap())
                .strictness(strictness)
                .build_with_clock(clock)
                .unwrap()
        }, true)?;
    }

    #[test]
    fn the_refill_script_decides_as_the_refill_limiter(
        (limit_for_period, period_us, capacity, initial) in prop::sample::select(vec![
            (5u32, 50_000u64, 8u32, 2u32),
            (1, 1_000, 1, 0),
            (1, 1_000, 3, 3),
            (100, 1_000_000, 100, 100),
            (3, 7_000, 10, 0),
            (3, 3_000, 4, 4),
        ]),
        timeout_us in prop::sample::select(vec![0u64, 1_000, 50_000]),
        steps in steps(),
    ) {
        let config = RefillConfig::builder()
            .limit_for_period(u64::from(limit_for_period))
            .limit_refresh_period(Duration::from_micros(period_us))
            .permit_capacity(u64::from(capacity))
            .initial_permits(u64::from(initial))
            .timeout(Duration::from_micros(timeout_us))
            .build()
            .unwrap();
        replay(SharedLimit::Refill(config), &steps, |clock| {
            RefillLimiter::new_with_clock(config, clock)
        }, false)?;
    }
}

/// A new bucket that refuses its first request still starts then: its
/// refill counts from that request, as the in-memory limiter's from its
/// creation. (Found by the property above: the script wrote nothing on a
/// refusal, so a new key stayed new, and a bucket with fewer initial
/// permits than a request needs refused every try-acquire forever.)
#[test]
fn a_new_bucket_refill_starts_at_its_first_request_even_refused() {
    let config = RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_millis(1))
        .permit_capacity(1)
        .initial_permits(0)
        .timeout(Duration::ZERO)
        .build()
        .unwrap();
    // Try-acquires every 400 us: the first permit is there after 1 ms.
    let steps: Vec<Step> = (0..10).map(|_| (400, 1, Some(Duration::ZERO))).collect();
    replay(
        SharedLimit::Refill(config),
        &steps,
        |clock| RefillLimiter::new_with_clock(config, clock),
        false,
    )
    .unwrap();
}
