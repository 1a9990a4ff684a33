//! G2's arithmetic on hand-checked cases.

use super::*;

fn rate(r: f64) -> Rate {
    Rate::new(r).unwrap()
}

/// (returns, active, waiting) after a refill.
fn refill(p: &mut Pools, n: u64) -> (u64, u64, u64) {
    let r = p.refill(n);
    (r, p.active(), p.waiting())
}

#[test]
fn t_p_1_backfill_full_rate_eb() {
    let mut p = Pools::with_pool_size(100, 1.1).unwrap();
    assert_eq!(p.burst_pool(), 10);
    assert_eq!(refill(&mut p, 100), (100, 100, 0));
    assert_eq!(refill(&mut p, 100), (200, 110, 90));
    assert_eq!(refill(&mut p, 10), (210, 110, 100));
    assert_eq!(refill(&mut p, 10), (220, 110, 110));
    assert_eq!(p.take_up_to(100), 100);
    assert_eq!((p.active(), p.waiting()), (10, 110));
}

#[test]
fn t_p_1_backfill_full_rate_nb() {
    let mut p = Pools::new(rate(1e7), 1.1).unwrap();
    assert_eq!(refill(&mut p, 1_000_000), (1_000_000, 1_000_000, 0));
    assert_eq!(refill(&mut p, 100), (1_000_100, 1_000_010, 90));
    // floor(1e-5 * 1e5) must be 1: exactly 1.0 in f64.
    assert_eq!(refill(&mut p, 10), (1_000_110, 1_000_011, 99));
    assert_eq!(refill(&mut p, 10), (1_000_120, 1_000_012, 108));
    assert_eq!(p.take_up_to(100), 100);
}

#[test]
fn t_p_2_take_ranges() {
    for mut p in [
        Pools::with_pool_size(100, 10.0).unwrap(),
        Pools::new(rate(100.0), 10.0).unwrap(),
    ] {
        assert_eq!(p.refill(100), 100);
        assert_eq!(p.take_up_to(99), 99);
        assert_eq!(p.take_up_to(10), 1);
        assert_eq!(p.take_up_to(1), 0);
    }
    assert_eq!(
        Pools::new(rate(100.0), 10.0).unwrap().max_active(),
        20_000_000
    );
}

#[test]
fn t_p_3_changed_parameters_keep_the_pools() {
    let mut p = Pools::new(rate(1000.0), 1.1).unwrap();
    assert_eq!(
        refill(&mut p, 10_000_000),
        (10_000_000, 2_200_000, 7_800_000)
    );
    p.apply(rate(1e6), 1.1).unwrap();
    assert_eq!(p.nanos_per_op(), 1000);
    assert_eq!(p.max_active(), 1_000_000);
    assert_eq!(p.max_over_active(), 1_100_000);
    assert_eq!(p.wait_time(), 10_000_000);
    // The shrink leaves excess that the next refill moves back.
    assert_eq!(
        refill(&mut p, 1_000_000),
        (11_000_000, 1_100_000, 9_900_000)
    );
    assert_eq!(p.try_take_op(), Some(10_999_000));
}

#[test]
fn a_zero_refill_also_moves_the_excess_back() {
    let mut p = Pools::new(rate(1000.0), 1.1).unwrap();
    p.refill(10_000_000);
    p.apply(rate(1e6), 1.1).unwrap();
    assert_eq!(refill(&mut p, 0), (10_000_000, 1_100_000, 8_900_000));
}

#[test]
fn burst_one_never_recovers_the_backlog() {
    let mut p = Pools::new(rate(1000.0), 1.0).unwrap();
    p.refill(11_000_000);
    assert_eq!((p.active(), p.waiting()), (2_000_000, 9_000_000));
    for _ in 0..100 {
        while p.try_take_op().is_some() {}
        p.refill(1_000_000);
        assert_eq!(p.waiting(), 9_000_000);
    }
}

#[test]
fn sizing_rule() {
    let cases = [
        // rate, burst, nanos_per_op, max_active, max_over_active
        (0.1, 1.1, 10_000_000_000, 20_000_000_000, 22_000_000_000),
        (1000.0, 1.0, 1_000_000, 2_000_000, 2_000_000),
        (1e6, 2.0, 1000, 1_000_000, 2_000_000),
        (5e8, 2.0, 2, 1_000_000, 2_000_000),
        (1e9, 1.1, 1, 1_000_000, 1_100_000),
    ];
    for (r, b, npo, max_active, max_over) in cases {
        let p = Pools::new(rate(r), b).unwrap();
        assert_eq!(
            (p.nanos_per_op(), p.max_active(), p.max_over_active()),
            (npo, max_active, max_over),
            "rate {r}, burst {b}"
        );
        assert_eq!(p.burst_pool(), max_over - max_active);
    }
}

#[test]
fn extreme_sizes_saturate_like_java() {
    // The slowest rate: 2^62 ns per op, 2 ops = 2^63 saturates to i64::MAX.
    let slow = rate(1e9 / (1u64 << 62) as f64);
    let p = Pools::new(slow, 1.0).unwrap();
    assert_eq!(p.nanos_per_op(), 1 << 62);
    assert_eq!(p.max_active(), MAX_POOL_NANOS);
    let p = Pools::new(slow, 1e300).unwrap();
    assert_eq!(p.max_over_active(), MAX_POOL_NANOS);
    assert_eq!(p.burst_pool(), 0);
    // A huge burst ratio saturates max_over_active.
    let p = Pools::new(rate(1000.0), f64::MAX).unwrap();
    assert_eq!(p.max_over_active(), MAX_POOL_NANOS);
}

#[test]
fn max_over_active_never_below_max_active() {
    // 2^53 + 1 is not an f64: the product rounds down to 2^53.
    let p = Pools::with_pool_size((1 << 53) + 1, 1.0).unwrap();
    assert_eq!(p.max_over_active(), p.max_active());
    assert_eq!(p.burst_pool(), 0);
    let mut p = Pools::with_pool_size(MAX_POOL_NANOS, 2.0).unwrap();
    assert_eq!(p.max_over_active(), MAX_POOL_NANOS);
    assert_eq!(p.refill(u64::MAX), MAX_POOL_NANOS);
    assert_eq!(p.active(), MAX_POOL_NANOS);
}

#[test]
fn refill_saturates_the_content() {
    let mut p = Pools::new(rate(1000.0), 1.1).unwrap();
    assert_eq!(p.refill(u64::MAX), MAX_POOL_NANOS);
    assert_eq!(p.active(), 2_200_000);
    assert_eq!(p.waiting(), MAX_POOL_NANOS - 2_200_000);
    assert_eq!(p.refill(u64::MAX), MAX_POOL_NANOS);
    assert_eq!(p.take_up_to(u64::MAX), 2_200_000);
    // Room for exactly the tokens taken.
    assert_eq!(p.refill(u64::MAX), MAX_POOL_NANOS);
    assert_eq!(p.active(), 2_200_000);
    assert_eq!(p.restart(), MAX_POOL_NANOS);
    assert_eq!(p.wait_time(), 0);
}

#[test]
fn try_take_changes_nothing_when_short() {
    let mut p = Pools::new(rate(1000.0), 1.1).unwrap();
    p.refill(999_999);
    let before = p.clone();
    assert_eq!(p.try_take_op(), None);
    assert_eq!(p.try_take(u64::MAX), None);
    assert_eq!(p, before);
}

#[test]
fn pool_size_form_takes_zero_per_op() {
    let mut p = Pools::with_pool_size(100, 1.1).unwrap();
    assert!(p.can_take_op());
    assert_eq!(p.try_take_op(), Some(0));
    p.refill(50);
    assert_eq!(p.try_take_op(), Some(50));
}

#[test]
fn bad_burst_ratios_are_errors() {
    for b in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let e = Pools::new(rate(1000.0), b).unwrap_err();
        assert_eq!(e.reason(), crate::ConfigReason::BurstNotFinite, "{b}");
        assert!(Pools::with_pool_size(100, b).is_err());
    }
    for b in [0.999_999, 0.0, -0.0, -1.0] {
        assert_eq!(
            Pools::new(rate(1000.0), b),
            Err(PoolError::BurstBelowOne(b).into())
        );
        assert_eq!(
            Pools::with_pool_size(100, b),
            Err(PoolError::BurstBelowOne(b).into())
        );
    }
    assert_eq!(
        PoolError::BurstNotFinite(f64::NAN).to_string(),
        "burst ratio must be finite, got NaN"
    );
}

#[test]
fn bad_rates_and_sizes_are_errors() {
    assert_eq!(
        Pools::new(rate(2e9), 1.1),
        Err(PoolError::Rate(RateError::TooFast(2e9)).into())
    );
    assert_eq!(
        Pools::new(rate(1e-12), 1.1),
        Err(PoolError::Rate(RateError::TooSlow(1e-12)).into())
    );
    // Transparent: the rate error's own message, naming the value.
    assert_eq!(
        PoolError::from(RateError::TooFast(2e9)).to_string(),
        RateError::TooFast(2e9).to_string()
    );
    assert_eq!(
        Pools::with_pool_size(0, 1.1),
        Err(PoolError::PoolSize(0).into())
    );
    assert_eq!(
        Pools::with_pool_size(u64::MAX, 1.1),
        Err(PoolError::PoolSize(u64::MAX).into())
    );
    assert_eq!(
        PoolError::PoolSize(0).to_string(),
        "pool size must be between 1 and 2^63 - 1 ns, got 0"
    );
}

#[test]
fn a_failed_apply_changes_nothing() {
    let mut p = Pools::new(rate(1000.0), 1.1).unwrap();
    p.refill(3_000_000);
    let before = p.clone();
    assert!(p.apply(rate(1e6), f64::NAN).is_err());
    assert!(p.apply(rate(2e9), 1.1).is_err());
    assert_eq!(p, before);
}
