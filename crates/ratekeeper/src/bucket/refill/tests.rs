use std::time::Duration;

use super::*;
use crate::test_util::ScriptedClock;

/// A bounded request decided on a clock reading older than the bucket's
/// time index (its thread was preempted after reading the clock) reads the
/// clock again before refusing.
#[test]
fn a_stale_reading_is_refreshed_before_a_refusal() {
    // 1 permit a millisecond, capacity 1.
    let config = RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_millis(1))
        .permit_capacity(1)
        .initial_permits(1)
        .timeout(Duration::ZERO)
        .build()
        .unwrap();
    let clock = ScriptedClock::new(&[0]);
    let l = RefillLimiter::new_with_clock(config, &clock);
    l.try_acquire().unwrap();
    // Another thread's grant at 10 ms empties the bucket until 11 ms.
    clock.then(&[10_000_000]);
    l.try_acquire().unwrap();
    // This thread read 10.5 ms, and decides at 20 ms, when the bucket is
    // full again.
    clock.then(&[10_500_000, 20_000_000]);
    l.try_acquire().expect("granted on a fresh reading");
}

#[test]
fn typed_builders_refuse_counts_beyond_i64() {
    use crate::bucket::{CycleConfig, RefillConfig};
    use crate::ConfigReason;
    let err = RefillConfig::builder()
        .limit_for_period(u64::MAX)
        .build()
        .unwrap_err();
    assert_eq!(err.reason(), ConfigReason::LimitForPeriodTooLarge);
    assert_eq!(
        err.to_string(),
        format!(
            "limit for period must be at most {}, got {}",
            i64::MAX,
            u64::MAX
        )
    );
    let err = CycleConfig::builder()
        .limit_for_period(1 << 63)
        .build()
        .unwrap_err();
    assert_eq!(err.reason(), ConfigReason::LimitForPeriodTooLarge);
    let err = RefillConfig::builder()
        .permit_capacity(u64::MAX)
        .build()
        .unwrap_err();
    assert_eq!(err.reason(), ConfigReason::CapacityTooLarge);
    let err = RefillConfig::builder()
        .initial_permits(u64::MAX)
        .build()
        .unwrap_err();
    assert_eq!(err.reason(), ConfigReason::InitialPermitsOutOfRange);
    assert_eq!(
        err.to_string(),
        format!(
            "initial permits must be between 0 and the capacity 50, got {}",
            u64::MAX
        )
    );
    // The largest i64 counts still build, as Resilience4j's signed builder needs.
    let c = RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(std::time::Duration::from_nanos(1))
        .permit_capacity(i64::MAX as u64)
        .initial_permits(0)
        .build()
        .unwrap();
    assert_eq!(c.capacity(), i64::MAX);
}
