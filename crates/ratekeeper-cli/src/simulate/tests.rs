//! `simulate`'s unit tests: limiter specs, the simulated limiters' grants,
//! exact summaries and the text helpers.

use ratekeeper::pool::TokenPool;
use ratekeeper::{ManualClock, RateLimiter};

use super::model::{simulate, Op};
use super::render::fmt_secs;
use super::summary::{exact_summary, max_burst};
use super::*;
use crate::report::WaitSummary;

const MS: u64 = 1_000_000;

fn spec(s: &str) -> LimiterSpec {
    parse_limiter(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn run_one(limiter: &str, pattern: &str) -> Vec<Op> {
    let arrivals: Arrivals = pattern.parse().unwrap();
    simulate(&spec(limiter), arrivals.times()).unwrap().0
}

fn granted(ops: &[Op]) -> Vec<u64> {
    ops.iter()
        .map(|o| o.grant.map_or(u64::MAX, |g| g.1))
        .collect()
}

#[test]
fn limiter_specs_are_the_library_s_grammar() {
    // The grammar and its messages are the library's (config::tests);
    // here, the label and what simulate cannot model.
    assert_eq!(spec(" Warmup:10,2s ").label, "Warmup:10,2s");
    assert_eq!(spec("pacer:10").config, "pacer:10".parse().unwrap());
    let err = |s: &str| parse_limiter(s).expect_err(s);
    assert!(err("pacer").contains("expected KIND:ARGS"));
    assert!(err("pacer:10,-1").contains("strictness \"-1\""));
    assert!(err("pacer:10,-1").contains("must not be negative"));
    assert!(err("refill:10,capacity=5").contains("permit capacity 5 is below the limit"));
    assert!(err("pacer:10,0,batch=true").contains("batch and shards"));
    assert!(err("pacer:10,shards=2").contains("pace --batch, --shards"));
    assert!(err("cycle:10,wait=precise:1ms").contains("drop wait="));
    assert!(err("pool:10,fill=inline").contains("fill inline"));
}

#[test]
fn strict_pacer_spaces_a_burst_by_the_interval() {
    // 10/s strict: 3 at once go 100 ms apart; the 4th, arriving at 1 s
    // when the schedule is idle again, goes at once.
    let ops = run_one("pacer:10,1", "burst 3; idle 1s; burst 1");
    assert_eq!(granted(&ops), [0, 100 * MS, 200 * MS, 1_000 * MS]);
    // The 4th is 700 ms behind the schedule, which a strict pacer keeps.
    assert_eq!(ops[3].grant, Some((300 * MS, 1_000 * MS)));
}

#[test]
fn average_pacer_spends_idle_time_at_once() {
    // After 1 s idle, 10 slots are unused: a burst of 5 goes at once.
    let ops = run_one("pacer:10,0", "burst 1; idle 1s; burst 5");
    assert_eq!(
        granted(&ops),
        [
            0,
            1_000 * MS,
            1_000 * MS,
            1_000 * MS,
            1_000 * MS,
            1_000 * MS
        ]
    );
    // Burst ratio 2: the backlog is caught up at twice the rate.
    let ops = run_one("pacer:10,2", "burst 1; idle 1s; burst 3");
    assert_eq!(granted(&ops), [0, 1_000 * MS, 1_050 * MS, 1_100 * MS]);
}

#[test]
fn bursty_stores_idle_time_and_warmup_starts_cold() {
    // Guava: after 1 s idle, 10 stored permits go at once; the first of a
    // fresh limiter is free.
    let ops = run_one("bursty:10", "idle 1s; burst 12");
    let g = granted(&ops);
    assert!(g[..11].iter().all(|&t| t == 1_000 * MS), "{g:?}");
    assert_eq!(g[11], 1_100 * MS);
    // A cold SmoothWarmingUp (10/s, warm-up 2 s, cold factor 3) stores
    // 20 permits; those above the threshold of 10 cost from 300 ms (at
    // 20) down to 100 ms (at 10), 20 ms less per permit: the first taken
    // costs the area between 20 and 19, 290 ms, the next 270 ms.
    let ops = run_one("warmup:10,2s", "burst 3");
    assert_eq!(granted(&ops), [0, 290 * MS, 560 * MS]);
}

#[test]
fn resilience4j_limiters_refuse_past_the_timeout() {
    // 10 permits per second, bucket of 10 full at 0: 10 at once, then one
    // per 100 ms; with a 250 ms timeout, the 11th and 12th wait, the rest
    // of a burst of 15 is refused.
    let ops = run_one("refill:10,timeout=250ms", "burst 15");
    let g: Vec<Option<u64>> = ops.iter().map(|o| o.grant.map(|g| g.1)).collect();
    assert!(g[..10].iter().all(|&t| t == Some(0)), "{g:?}");
    assert_eq!(&g[10..], [Some(100 * MS), Some(200 * MS), None, None, None]);
    // The cycle limiter: 5 per 500 ms cycle, from 0.
    let ops = run_one("cycle:10,500ms,timeout=1s", "burst 12");
    let g: Vec<Option<u64>> = ops.iter().map(|o| o.grant.map(|g| g.1)).collect();
    assert!(g[..5].iter().all(|&t| t == Some(0)), "{g:?}");
    assert!(g[5..10].iter().all(|&t| t == Some(500 * MS)), "{g:?}");
    assert_eq!(&g[10..], [Some(1_000 * MS), Some(1_000 * MS)]);
}

#[test]
fn pool_grants_queued_ops_at_fills() {
    // 10/s, 1 ms fills: the start pre-fills one op; later ops wait for
    // 100 ms of fills each, first come first served.
    let ops = run_one("pool:10,1.0", "burst 3");
    assert_eq!(granted(&ops), [0, 100 * MS, 200 * MS]);
    assert_eq!(ops[2].grant.map(|g| g.0), Some(200 * MS));
    // Ops arriving after idle time take banked tokens at once (up to
    // the active pool, 2 ops).
    let ops = run_one("pool:10,1.0", "idle 1s; burst 3");
    assert_eq!(granted(&ops), [1_000 * MS, 1_000 * MS, 1_100 * MS]);
    // A fill interval that does not divide the wait: granted at the
    // first fill at or after the tokens are there.
    let ops = run_one("pool:10,1.0,30ms", "burst 2");
    assert_eq!(granted(&ops), [0, 120 * MS]);
    // 60 ops at 1/s filled every 1 µs would take 6e7 fills: refused at
    // once.
    let arrivals: Arrivals = "burst 60".parse().unwrap();
    let e = simulate(&spec("pool:1,1.0,1us"), arrivals.times()).unwrap_err();
    assert!(e.downcast_ref::<UsageError>().is_some(), "{e:#}");
    assert!(
        format!("{e:#}").contains("more than 50000000 fills of 1us"),
        "{e:#}"
    );
}

#[test]
fn summaries_are_exact() {
    let mut v = vec![5, 1, 4, 2, 3];
    let s = exact_summary(&mut v);
    assert_eq!((s.p50, s.p90, s.p99, s.max, s.mean), (3, 5, 5, 5, 3));
    assert_eq!(exact_summary(&mut []), WaitSummary::default());
    assert_eq!(max_burst(&[0, 0, 0, 100, 140, 200], 100.0), 3);
    assert_eq!(max_burst(&[0, 100, 200], 100.0), 1);
    assert_eq!(max_burst(&[], 100.0), 0);
    assert_eq!(fmt_secs(1_500_000_000, 6), "1.500000");
    assert_eq!(fmt_secs(333_333_333, 9), "0.333333333");
}

#[test]
fn rows_and_buckets_parse() {
    assert_eq!(parse_rows("all"), Ok(Rows(None)));
    assert_eq!(parse_rows("0"), Ok(Rows(Some(0))));
    assert!(parse_rows("-1").unwrap_err().contains("or all"));
    assert!(parse_bucket("0s")
        .unwrap_err()
        .contains("greater than zero"));
    assert_eq!(parse_bucket("100ms"), Ok(Duration::from_millis(100)));
}

#[test]
fn one_fill_over_idle_time_equals_the_fills_of_each_tick() {
    // `fill_pool` skips through stretches with nobody queued with one
    // fill; that must leave the pools as the ticks one by one would.
    for (rate, burst, ticks, fill) in [
        (10.0, 1.1, 1000, MS),
        (1000.0, 1.5, 777, MS),
        (3.0, 2.0, 10, MS),
        (5000.0, 1.1, 5, MS),
        (100.0, 1.3, 37, 30 * MS),
    ] {
        let pool = || {
            let p = TokenPool::builder(ratekeeper::Rate::new(rate).unwrap())
                .burst_ratio(burst)
                .filling(Filling::Manual)
                .build_with_clock(ManualClock::new(0))
                .unwrap();
            p.try_acquire().unwrap();
            p
        };
        let (by_tick, at_once) = (pool(), pool());
        for _ in 0..ticks {
            by_tick.refill(fill).unwrap();
        }
        at_once.refill(fill * ticks).unwrap();
        let (a, b) = (by_tick.pools(), at_once.pools());
        assert_eq!(
            (a.active(), a.waiting()),
            (b.active(), b.waiting()),
            "{rate}/s"
        );
    }
}
