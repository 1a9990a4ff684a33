//! Property tests of the G2 token pool arithmetic ([`Pools`]): tokens are
//! conserved by every sequence of refills, takes and re-sizings; the active
//! pool stays within `max_over_active` except just after a shrinking apply;
//! every refill matches a wide-integer model of nosqlbench's formula; and no
//! input, however extreme, panics (invalid configurations are errors).

use proptest::prelude::*;
use ratekeeper::pool::{PoolError, MAX_POOL_NANOS};
use ratekeeper::{Pools, Rate, RateError};

#[derive(Debug, Clone)]
enum Step {
    Refill(u64),
    TakeUpTo(u64),
    TryTake(u64),
    TryTakeOp,
    /// Re-size for a rate and burst ratio (valid ones).
    Apply(f64, f64),
    Restart,
}

/// Rates whose op slice is between 1 ns and 2^62 ns, spread over 18 decades,
/// plus the usual round ones.
fn valid_rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-9.6f64..9.0).prop_map(|e| 10f64.powf(e)),
        prop::sample::select(vec![0.1, 1.0, 100.0, 1000.0, 2000.0, 1e6, 1e7, 5e8, 1e9]),
    ]
}

fn valid_burst() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![1.0, 1.1, 1.5, 2.0, 10.0]),
        1.0f64..4.0,
    ]
}

/// Ops with amounts small enough (< 2^44) that 200 refills never reach the
/// content bound, so conservation must hold exactly.
fn ops(max: u64) -> impl Strategy<Value = Vec<Step>> {
    let amount = prop_oneof![
        3 => 0..max,
        1 => 0..1_000u64,
        1 => prop::sample::select(vec![0, 1, 100, 1_000_000, 2_000_000]),
    ];
    let op = prop_oneof![
        6 => amount.clone().prop_map(Step::Refill),
        2 => amount.clone().prop_map(Step::TakeUpTo),
        2 => amount.prop_map(Step::TryTake),
        4 => Just(Step::TryTakeOp),
        1 => (valid_rate(), valid_burst()).prop_map(|(r, b)| Step::Apply(r, b)),
        1 => Just(Step::Restart),
    ];
    prop::collection::vec(op, 1..200)
}

fn pools(rate: f64, burst: f64) -> Pools {
    Pools::new(Rate::new(rate).unwrap(), burst).unwrap()
}

/// nosqlbench's refill written out from the vector text in i128, so that no
/// step can overflow: (active, waiting) after `refill(new)`.
fn model_refill(p: &Pools, new: u64) -> (u64, u64) {
    let max_active = i128::from(p.max_active());
    let max_over = i128::from(p.max_over_active());
    let burst_pool = max_over - max_active;
    let (mut active, mut waiting) = (i128::from(p.active()), i128::from(p.waiting()));
    let new = i128::from(new);
    let needed = (max_active - active).max(0);
    let to_active = new.min(needed);
    active += to_active;
    waiting += new - to_active;
    let factor = (new as f64 / max_active as f64).min(1.0);
    let allowed = (max_over - active).min((factor * burst_pool as f64) as i64 as i128);
    let fill = allowed.min(waiting);
    waiting -= fill;
    active += fill;
    (active as u64, waiting as u64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (1) At every step: refilled = active + waiting + taken (a restart's
    /// return counts as taken). (2) After every refill active <=
    /// max_over_active; in between, active exceeds it only after an apply
    /// that shrank the pools, until the next refill. Every refill matches the
    /// model exactly, and returns the content.
    #[test]
    fn tokens_are_conserved_and_active_bounded(
        rate in valid_rate(),
        burst in valid_burst(),
        ops in prop::sample::select(vec![1_000u64, 3_000_000, 1 << 30, 1 << 44])
            .prop_flat_map(ops),
    ) {
        let mut p = pools(rate, burst);
        let (mut refilled, mut taken) = (0u128, 0u128);
        let mut shrunk_since_refill = false;
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Step::Refill(n) => {
                    let want = model_refill(&p, n);
                    let returns = p.refill(n);
                    refilled += u128::from(n);
                    prop_assert_eq!((p.active(), p.waiting()), want, "step {}: {:?}", i, op);
                    prop_assert_eq!(returns, p.wait_time());
                    prop_assert!(p.active() <= p.max_over_active(), "step {}: {:?}", i, op);
                    shrunk_since_refill = false;
                }
                Step::TakeUpTo(n) => {
                    let before = p.active();
                    let t = p.take_up_to(n);
                    prop_assert_eq!(t, n.min(before));
                    taken += u128::from(t);
                }
                Step::TryTake(n) => {
                    let before = p.clone();
                    match p.try_take(n) {
                        Some(left) => {
                            prop_assert!(n <= before.active());
                            prop_assert_eq!(left, p.wait_time());
                            taken += u128::from(n);
                        }
                        None => {
                            prop_assert!(n > before.active());
                            prop_assert_eq!(&p, &before);
                        }
                    }
                }
                Step::TryTakeOp => {
                    let can = p.can_take_op();
                    let npo = p.nanos_per_op();
                    let r = p.try_take_op();
                    prop_assert_eq!(r.is_some(), can);
                    if r.is_some() {
                        taken += u128::from(npo);
                    }
                }
                Step::Apply(r, b) => {
                    let (a, w) = (p.active(), p.waiting());
                    p.apply(Rate::new(r).unwrap(), b).unwrap();
                    prop_assert_eq!((p.active(), p.waiting()), (a, w), "apply keeps the pools");
                    if p.active() > p.max_over_active() {
                        shrunk_since_refill = true;
                    }
                }
                Step::Restart => {
                    let held = p.wait_time();
                    prop_assert_eq!(p.restart(), held);
                    prop_assert_eq!(p.wait_time(), 0);
                    taken += u128::from(held);
                }
            }
            prop_assert_eq!(
                refilled,
                u128::from(p.active()) + u128::from(p.waiting()) + taken,
                "step {}: {:?}: tokens not conserved", i, op
            );
            prop_assert_eq!(p.wait_time(), p.active() + p.waiting());
            prop_assert!(
                p.active() <= p.max_over_active() || shrunk_since_refill,
                "step {}: {:?}: active {} above max_over_active {}",
                i, op, p.active(), p.max_over_active()
            );
            prop_assert!(p.max_active() <= p.max_over_active());
            prop_assert_eq!(p.burst_pool(), p.max_over_active() - p.max_active());
        }
    }

    /// (3) Arbitrary rates and burst ratios, including NaN, infinities,
    /// negatives and subnormals: either a typed error naming the problem, or
    /// pools that survive arbitrary amounts (u64::MAX included) without a
    /// panic, with the content saturating at MAX_POOL_NANOS and conserved
    /// below it.
    #[test]
    fn no_panic_on_any_input(
        rate in prop_oneof![any::<f64>(), valid_rate()],
        burst in prop_oneof![any::<f64>(), valid_burst(), Just(f64::MAX)],
        size in prop_oneof![any::<u64>(), Just(0u64), Just(MAX_POOL_NANOS), 1..1_000_000u64],
        use_size in any::<bool>(),
        amounts in prop::collection::vec(
            prop_oneof![any::<u64>(), Just(u64::MAX), Just(MAX_POOL_NANOS), Just(0u64)],
            1..40,
        ),
        resize in (any::<f64>(), any::<f64>()),
    ) {
        let built = if use_size {
            Pools::with_pool_size(size, burst)
        } else {
            Rate::new(rate).map_err(PoolError::from).and_then(|r| Pools::new(r, burst))
        };
        let mut p = match built {
            Err(e) => {
                // The error names the problem, which was really there.
                let _ = e.to_string();
                match e {
                    PoolError::BurstNotFinite(b) => prop_assert!(!b.is_finite()),
                    PoolError::BurstBelowOne(b) => prop_assert!(b < 1.0),
                    PoolError::PoolSize(s) => {
                        prop_assert!(use_size && (s == 0 || s > MAX_POOL_NANOS));
                    }
                    PoolError::Rate(RateError::NotFinite(r)) => prop_assert!(!r.is_finite()),
                    PoolError::Rate(RateError::NotPositive(r)) => prop_assert!(r <= 0.0),
                    PoolError::Rate(RateError::TooFast(r)) => prop_assert!(r > 1e9),
                    PoolError::Rate(RateError::TooSlow(r)) => prop_assert!(r < 1e-9),
                    other => prop_assert!(false, "unexpected error {:?}", other),
                }
                return Ok(());
            }
            Ok(p) => p,
        };
        prop_assert!(burst.is_finite() && burst >= 1.0);
        for (i, &n) in amounts.iter().enumerate() {
            let before = u128::from(p.wait_time());
            let returns = p.refill(n);
            let want = (before + u128::from(n)).min(u128::from(MAX_POOL_NANOS));
            prop_assert_eq!(u128::from(returns), want, "refill {}", i);
            prop_assert!(p.active() <= p.max_over_active());
            match i % 4 {
                0 => { p.take_up_to(n); }
                1 => { p.try_take(n); }
                2 => { p.try_take_op(); }
                _ => {
                    // Re-sizing with arbitrary values fails cleanly or works.
                    let before = p.clone();
                    let r = Rate::new(resize.0)
                        .map_err(PoolError::from)
                        .and_then(|r| p.apply(r, resize.1));
                    if r.is_err() {
                        prop_assert_eq!(&p, &before);
                    }
                }
            }
            prop_assert!(p.wait_time() <= MAX_POOL_NANOS);
            prop_assert_eq!(u128::from(p.wait_time()), u128::from(p.active()) + u128::from(p.waiting()));
        }
        let held = p.wait_time();
        prop_assert_eq!(p.restart(), held);
    }
}

/// Spec D-1 (nosqlbench.md §4.6): rate 1000, burst 1.1, 1 ms fills; after the
/// filler's pre-fill the consumer is away for 1 s, then always ready. It gets
/// 1101 ops in the first second back, 1100 in each of the next 9 (the backlog
/// drains at (burst - 1) × wall time), then 1000 a second. The waiting pool
/// values are those the vectors' findings report for the upstream pools.
#[test]
fn d_1_backlog_drains_at_burst_minus_one() {
    let mut p = pools(1000.0, 1.1);
    p.refill(p.nanos_per_op()); // the filler's start() pre-fill
    for _ in 0..1000 {
        p.refill(1_000_000);
    }
    // The vectors' findings: 0.9988 s right after the stall, and 0.9998 s at
    // the peak: the first fill after it finds the active pool still full.
    assert_eq!(p.waiting(), 998_800_000);
    let mut peak = p.waiting();
    let mut per_second = Vec::new();
    for _ in 0..13 {
        let mut ops = 0;
        for _ in 0..1000 {
            p.refill(1_000_000);
            while p.try_take_op().is_some() {
                ops += 1;
            }
            peak = peak.max(p.waiting());
        }
        per_second.push(ops);
    }
    assert_eq!(peak, 999_800_000);
    assert_eq!(
        per_second,
        [1101, 1100, 1100, 1100, 1100, 1100, 1100, 1100, 1100, 1100, 1000, 1000, 1000]
    );
    assert_eq!(p.waiting(), 0);
}
