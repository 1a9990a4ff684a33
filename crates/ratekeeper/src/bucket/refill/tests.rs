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
