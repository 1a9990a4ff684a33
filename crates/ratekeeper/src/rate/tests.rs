//! Unit tests of `Rate`: validation, the nanosecond slice, the effective rate.

use super::*;

#[test]
fn nanos_per_op_truncates_like_java() {
    assert_eq!(Rate::new(3.0).unwrap().nanos_per_op(), Ok(333_333_333));
    assert_eq!(Rate::new(1e9).unwrap().nanos_per_op(), Ok(1));
    assert_eq!(Rate::new(7e8).unwrap().nanos_per_op(), Ok(1));
    assert_eq!(
        Rate::new(1.5e9).unwrap().nanos_per_op(),
        Err(RateError::TooFast(1.5e9).into())
    );
    assert_eq!(
        Rate::new(1e-10).unwrap().nanos_per_op(),
        Err(RateError::TooSlow(1e-10).into())
    );
    // Between 2^62 and 2^63 ns: representable as i64, but more than a
    // limiter reserves at once, so refused here rather than at acquire.
    assert_eq!(
        Rate::new(1.5e-10).unwrap().nanos_per_op(),
        Err(RateError::TooSlow(1.5e-10).into())
    );
    assert!(Rate::new(2.2e-10).unwrap().nanos_per_op().is_ok());
}

#[test]
fn effective_rate_is_one_second_over_the_whole_slice() {
    let eff = |r: f64| Rate::new(r).unwrap().effective_rate().unwrap();
    assert_eq!(eff(1000.0), 1000.0);
    assert_eq!(eff(1e9), 1e9);
    // floor(1e9 / 3) = 333_333_333 ns: 3.000000003 ops/s.
    assert_eq!(eff(3.0), 1e9 / 333_333_333.0);
    assert!((eff(3.0) - 3.000_000_003).abs() < 1e-15);
    // The worst case: a 1.96 ns slice truncated to 1 ns.
    assert_eq!(eff(5.1e8), 1e9);
    // 7e8: 1.43 ns -> 1 ns; 4e8: 2.5 ns -> 2 ns.
    assert_eq!(eff(7e8), 1e9);
    assert_eq!(eff(4e8), 5e8);
    // Just below a whole slice: 1e9 / 1.5e6 = 666.67 ns -> 666 ns.
    assert_eq!(eff(1.5e6), 1e9 / 666.0);
    assert_eq!(
        Rate::new(1.5e9).unwrap().effective_rate(),
        Err(RateError::TooFast(1.5e9).into())
    );
    assert_eq!(per_second_of_nanos(0), f64::INFINITY);
    assert_eq!(per_second_of_nanos(1 << 62), 1e9 / (1u64 << 62) as f64);
}

#[test]
fn rejects_bad_values() {
    let reason = |r: f64| Rate::new(r).unwrap_err().reason();
    assert_eq!(reason(f64::NAN), crate::ConfigReason::RateNotFinite);
    assert_eq!(reason(f64::INFINITY), crate::ConfigReason::RateNotFinite);
    assert_eq!(Rate::new(-1.0), Err(RateError::NotPositive(-1.0).into()));
    assert_eq!(Rate::new(-0.0), Err(RateError::NotPositive(-0.0).into()));
}
