//! Every grant's reported wait is exact (issue 15, item 1): for random
//! arrivals and stalls outside the limiter, on a manual clock, a blocking
//! acquire returns a grant whose start is the clock when the caller was
//! released, and whose wait is that start minus its scheduled time. For the
//! Pacer at every strictness, its batching handles, its shards, and
//! `BatchHandle` over every limiter, each built with its defaults.

use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::bucket::{CycleConfig, RefillConfig};
use ratekeeper::{
    BatchHandle, Clock, CycleLimiter, ManualClock, Pacer, Rate, RateLimiter, RefillLimiter,
    SmoothBursty, SmoothWarmingUp, TokenPool,
};

#[derive(Debug, Clone, Copy)]
enum Op {
    /// The caller is busy outside the limiter (a stall when long).
    Outside(u64),
    /// A blocking acquire of n permits.
    Acquire(u32),
}

/// Arrivals in units of 1/1000 of a slot, with occasional long stalls.
fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0u64..3_000).prop_map(Op::Outside),
        1 => (10_000u64..5_000_000).prop_map(Op::Outside),
        6 => (1u32..4).prop_map(Op::Acquire),
    ];
    prop::collection::vec(op, 1..150)
}

/// Replays `ops` (times scaled to `slot` ns) and checks every grant.
fn check<L: RateLimiter>(
    name: &str,
    limiter: &L,
    clock: &ManualClock,
    slot: u64,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Outside(units) => clock.advance_nanos(units * slot / 1000),
            Op::Acquire(n) => {
                let g = limiter.acquire_n(n).unwrap();
                let released = clock.now_nanos();
                prop_assert_eq!(g.started_nanos(), released, "{} op {}: {:?}", name, i, g);
                prop_assert_eq!(
                    g.wait_nanos(),
                    released.saturating_sub(g.scheduled_nanos()),
                    "{} op {}",
                    name,
                    i
                );
            }
        }
    }
    Ok(())
}

fn pacer(rate: f64, s: f64, clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::builder(Rate::new(rate).unwrap())
        .strictness(s)
        .build_with_clock(clock.clone())
        .unwrap()
}

/// The permits a 1 ms period holds at `rate`: `rate / 1000`, at least 4.
fn limit_per_ms(rate: f64) -> u64 {
    ((rate / 1000.0) as u64).max(4)
}

/// A refill bucket of [`limit_per_ms`] permits per 1 ms.
fn refill_config(rate: f64) -> RefillConfig {
    RefillConfig::builder()
        .limit_for_period(limit_per_ms(rate))
        .limit_refresh_period(Duration::from_millis(1))
        .build()
        .unwrap()
}

/// A cycle of [`limit_per_ms`] permits per 1 ms.
fn cycle_config(rate: f64) -> CycleConfig {
    CycleConfig::builder()
        .limit_for_period(limit_per_ms(rate))
        .limit_refresh_period(Duration::from_millis(1))
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn pacers_report_the_exact_wait(
        rate in prop_oneof![Just(3.5), Just(1000.0), 10.0f64..2e6],
        s in prop_oneof![Just(0.0), Just(0.3), Just(1.0), Just(1.1), 1.0f64..3.0],
        start in 0u64..1_000_000_000,
        ops in ops(),
    ) {
        let slot = Rate::new(rate).unwrap().nanos_per_op().unwrap();
        let clock = ManualClock::new(start);
        check("pacer", &pacer(rate, s, &clock), &clock, slot, &ops)?;

        let clock = ManualClock::new(start);
        let p = pacer(rate, s, &clock);
        check("pacer handle", &p.handle(), &clock, slot, &ops)?;

        let clock = ManualClock::new(start);
        let p = pacer(rate, s, &clock);
        check("batch handle on a pacer", &BatchHandle::new(&p), &clock, slot, &ops)?;

        let clock = ManualClock::new(start);
        let sharded = Pacer::builder(Rate::new(rate).unwrap())
            .strictness(s)
            .build_sharded_with_clock(2, clock.clone())
            .unwrap();
        check("shard handle", &sharded.handle(), &clock, slot, &ops)?;
    }

    #[test]
    fn batch_handles_on_every_limiter_report_the_exact_wait(
        rate in prop_oneof![Just(1000.0), 1000.0f64..2e6],
        start in 0u64..1_000_000_000,
        ops in ops(),
    ) {
        let slot = Rate::new(rate).unwrap().nanos_per_op().unwrap();

        let clock = ManualClock::new(start);
        let l = RefillLimiter::new_with_clock(refill_config(rate), clock.clone());
        check("refill", &l, &clock, slot, &ops)?;
        check("batch handle on refill", &BatchHandle::new(&l), &clock, slot, &ops)?;

        let clock = ManualClock::new(start);
        let l = CycleLimiter::new_with_clock(cycle_config(rate), clock.clone());
        check("cycle", &l, &clock, slot, &ops)?;
        check("batch handle on cycle", &BatchHandle::new(&l), &clock, slot, &ops)?;

        let clock = ManualClock::new(start);
        let l = TokenPool::builder(Rate::new(rate).unwrap()).build_with_clock(clock.clone()).unwrap();
        check("pool", &l, &clock, slot, &ops)?;
        check("batch handle on pool", &BatchHandle::new(&l), &clock, slot, &ops)?;

        let clock = ManualClock::new(start);
        let l = SmoothBursty::builder(rate).build_with_clock(clock.clone()).unwrap();
        check("bursty", &l, &clock, slot, &ops)?;
        check("batch handle on bursty", &BatchHandle::new(&l), &clock, slot, &ops)?;

        let clock = ManualClock::new(start);
        let l = SmoothWarmingUp::builder(rate)
            .warmup(Duration::from_millis(10))
            .build_with_clock(clock.clone())
            .unwrap();
        check("batch handle on warming-up", &BatchHandle::new(&l), &clock, slot, &ops)?;
    }
}
