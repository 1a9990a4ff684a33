//! Guava's hand-checked sequences (spec `guava_go.md` §4) and the edge cases
//! of §2.10, on a [`ManualClock`]. Guava's test "sleeps" the limiter's wait on
//! a fake stopwatch; here that is advancing the clock by the grant's
//! `delay_nanos()`, which is exactly Guava's wait in µs × 1000.

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::Duration;

use super::compat::{GuavaTimeouts, GuavaWarmup};
use super::limiter::Smooth;
use super::*;
use crate::clock::{Clock, ManualClock};
use crate::limiter::{AcquireError, Grant, RateLimiter, WaitStats};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

fn bursty(rate: f64, clock: &ManualClock) -> SmoothBursty<ManualClock> {
    SmoothBursty::builder(rate)
        .build_with_clock(clock.clone())
        .unwrap()
}

/// A warming-up builder with Guava's signed microseconds.
fn micros_builder(rate: f64, warmup_micros: i64) -> SmoothWarmingUpBuilder {
    GuavaWarmup::warmup_micros(SmoothWarmingUp::builder(rate), warmup_micros)
}

fn warming(
    rate: f64,
    warmup_micros: i64,
    cold: f64,
    clock: &ManualClock,
) -> SmoothWarmingUp<ManualClock> {
    micros_builder(rate, warmup_micros)
        .cold_factor(cold)
        .build_with_clock(clock.clone())
        .unwrap()
}

/// Guava's `acquire(n)` on the fake stopwatch: reserve, sleep the wait;
/// returns the wait in µs.
fn acquire<C: Clock>(l: &impl RateLimiter, clock: &C, n: u32) -> u64 {
    let g = l.reserve(n, None).unwrap();
    assert_eq!(g.delay_nanos() % 1000, 0, "{g:?}");
    clock.sleep_nanos(g.delay_nanos());
    g.delay_nanos() / 1000
}

/// `acquire(1)` `k` times.
fn acquire_times<C: Clock>(l: &impl RateLimiter, clock: &C, k: usize) -> Vec<u64> {
    (0..k).map(|_| acquire(l, clock, 1)).collect()
}

fn acquire_each<C: Clock>(l: &impl RateLimiter, clock: &C, ns: &[u32]) -> Vec<u64> {
    ns.iter().map(|&n| acquire(l, clock, n)).collect()
}

fn sleep_ms(clock: &ManualClock, ms: u64) {
    clock.advance_nanos(ms * MS);
}

fn would_wait(wait_micros: u64, max_wait_micros: u64) -> AcquireError {
    AcquireError::WouldWait {
        wait: Duration::from_micros(wait_micros),
        max_wait: Duration::from_micros(max_wait_micros),
    }
}

// ---------------------------------------------------------------- bursty ---

#[test]
fn bursty_simple() {
    let clock = ManualClock::new(0);
    let l = bursty(5.0, &clock);
    assert_eq!(acquire_times(&l, &clock, 3), [0, 200_000, 200_000]);
}

#[test]
fn bursty_simple_with_wait() {
    let clock = ManualClock::new(0);
    let l = bursty(5.0, &clock);
    assert_eq!(acquire(&l, &clock, 1), 0);
    sleep_ms(&clock, 200);
    assert_eq!(acquire_times(&l, &clock, 2), [0, 200_000]);
}

#[test]
fn bursty_simple_weights_next_caller_pays() {
    // §4: each request waits for the previous request's size.
    let clock = ManualClock::new(0);
    let l = bursty(1.0, &clock);
    assert_eq!(
        acquire_each(&l, &clock, &[1, 1, 2, 4, 8, 1]),
        [0, 1_000_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000]
    );
}

#[test]
fn bursty_idle_time_stores_one_burst_and_no_more() {
    let clock = ManualClock::new(0);
    let l = bursty(5.0, &clock);
    assert_eq!(acquire(&l, &clock, 1), 0);
    sleep_ms(&clock, 10_000); // 10 s idle, but at most 1 s (5 permits) is stored
    assert_eq!(l.stored_permits(), 0.0, "as of the last reservation");
    assert_eq!(acquire(&l, &clock, 1), 0);
    assert_eq!(l.stored_permits(), 4.0);
    // 5 stored permits are free, the 6th is fresh but paid by the 7th.
    assert_eq!(
        acquire_times(&l, &clock, 7),
        [0, 0, 0, 0, 0, 200_000, 200_000]
    );
    assert_eq!(l.stored_permits(), 0.0);

    // A partial refill: 0.4 s stores 2 permits.
    sleep_ms(&clock, 200); // repay the last acquire
    sleep_ms(&clock, 400);
    assert_eq!(l.stored_permits(), 0.0, "only a reservation resyncs");
    assert_eq!(acquire_times(&l, &clock, 4), [0, 0, 0, 200_000]);
}

#[test]
fn bursty_max_burst_seconds_scales_the_burst() {
    let clock = ManualClock::new(0);
    let l = SmoothBursty::builder(5.0)
        .max_burst_seconds(2.0)
        .build_with_clock(clock.clone())
        .unwrap();
    sleep_ms(&clock, 5_000);
    let waits = acquire_times(&l, &clock, 13);
    assert_eq!(waits[..11], [0; 11]);
    assert_eq!(waits[11..], [200_000, 200_000]);
}

#[test]
fn bursty_and_update_keeps_the_old_debt() {
    // testBurstyAndUpdate: the R1.00 after setRate(2) is the old rate's debt.
    let clock = ManualClock::new(0);
    let l = bursty(1.0, &clock);
    assert_eq!(acquire_times(&l, &clock, 2), [0, 1_000_000]);
    l.set_rate(2.0).unwrap();
    assert_eq!(
        acquire_each(&l, &clock, &[1, 2, 4, 1]),
        [1_000_000, 500_000, 1_000_000, 2_000_000]
    );
}

#[test]
fn next_caller_pays_for_a_huge_acquire() {
    // Guava: acquire(Integer.MAX_VALUE) at 1/s goes at once, the next caller
    // waits 2147483647 s.
    let clock = ManualClock::new(0);
    let l = bursty(1.0, &clock);
    let g = l.reserve(i32::MAX as u32, None).unwrap();
    assert_eq!(g.delay_nanos(), 0);
    assert_eq!(g.permits(), i32::MAX as u32);
    let g = l.reserve(1, None).unwrap();
    assert_eq!(g.delay_nanos(), 2_147_483_647 * SEC);

    // u32::MAX, our largest request, is no different.
    let clock = ManualClock::new(0);
    let l = bursty(1.0, &clock);
    assert_eq!(l.reserve(u32::MAX, None).unwrap().delay_nanos(), 0);
    assert_eq!(
        l.reserve(1, None).unwrap().delay_nanos(),
        u64::from(u32::MAX) * SEC
    );
    // The warming-up limiter charges it the same way (cold trapezoid first).
    let clock = ManualClock::new(0);
    let l = warming(1.0, 0, 3.0, &clock);
    assert_eq!(l.reserve(i32::MAX as u32, None).unwrap().delay_nanos(), 0);
    assert_eq!(
        l.reserve(1, None).unwrap().delay_nanos(),
        2_147_483_647 * SEC
    );
}

// ----------------------------------------------------------- warming up ---

#[test]
fn warm_up() {
    // testWarmUp: rate 2, W = 4 s, cold factor 3.
    let clock = ManualClock::new(0);
    let l = warming(2.0, 4_000_000, 3.0, &clock);
    let cold = [
        0, 1_375_000, 1_125_000, 875_000, 625_000, 500_000, 500_000, 500_000,
    ];
    assert_eq!(l.stored_permits(), 8.0, "starts cold: max permits");
    assert_eq!(acquire_times(&l, &clock, 8), cold);
    sleep_ms(&clock, 500); // repay the last acquire
    sleep_ms(&clock, 4_000); // cold again
    assert_eq!(acquire_times(&l, &clock, 8), cold);
    sleep_ms(&clock, 500);
    sleep_ms(&clock, 2_000); // not cold: 4 permits, all at or below the threshold
    assert_eq!(
        acquire_times(&l, &clock, 8),
        [0, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000]
    );
}

#[test]
fn warm_up_and_update() {
    // testWarmUpAndUpdate: the areas (times) stay the same when the rate doubles.
    let clock = ManualClock::new(0);
    let l = warming(2.0, 4_000_000, 3.0, &clock);
    acquire_times(&l, &clock, 8);
    sleep_ms(&clock, 4_500); // cold again (warm-up period + the last acquire's debt)
    assert_eq!(acquire_times(&l, &clock, 3), [0, 1_375_000, 1_125_000]);
    assert_eq!(l.stored_permits(), 5.0);
    l.set_rate(4.0).unwrap();
    assert_eq!(l.stored_permits(), 10.0, "5 of 8 rescaled to 10 of 16");
    assert_eq!(acquire(&l, &clock, 1), 875_000, "the old rate's debt");
    assert_eq!(
        acquire_times(&l, &clock, 4),
        [343_750, 281_250, 250_000, 250_000]
    );
    sleep_ms(&clock, 4_250);
    assert_eq!(
        acquire_times(&l, &clock, 11),
        [
            0, 718_750, 656_250, 593_750, 531_250, 468_750, 406_250, 343_750, 281_250, 250_000,
            250_000
        ]
    );
}

#[test]
fn warm_up_with_cold_factor() {
    // testWarmUpWithColdFactor: rate 5, W = 4 s, cold factor 10.
    let clock = ManualClock::new(0);
    let l = warming(5.0, 4_000_000, 10.0, &clock);
    let cold = [
        0, 1_752_500, 1_257_500, 762_500, 300_227, 200_000, 200_000, 200_000,
    ];
    assert_eq!(acquire_times(&l, &clock, 8), cold);
    sleep_ms(&clock, 200);
    sleep_ms(&clock, 4_000); // cold again
    assert_eq!(acquire_times(&l, &clock, 8), cold);
    sleep_ms(&clock, 200);
    sleep_ms(&clock, 1_000); // still warm: 5.64 + 3.41 permits, below the threshold of 10
    assert_eq!(
        acquire_times(&l, &clock, 8),
        [0, 200_000, 200_000, 200_000, 200_000, 200_000, 200_000, 200_000]
    );
}

#[test]
fn warm_up_with_cold_factor_1_is_a_stable_limiter() {
    // testWarmUpWithColdFactor1, then a long idle time: never a burst, never slower.
    let clock = ManualClock::new(0);
    let l = warming(5.0, 4_000_000, 1.0, &clock);
    let stable = [
        0, 200_000, 200_000, 200_000, 200_000, 200_000, 200_000, 200_000,
    ];
    assert_eq!(acquire_times(&l, &clock, 8), stable);
    sleep_ms(&clock, 340);
    assert_eq!(acquire_times(&l, &clock, 8), stable);
    sleep_ms(&clock, 60_000);
    assert_eq!(acquire_times(&l, &clock, 8), stable);
    assert_eq!(
        l.stored_permits(),
        22.0,
        "30 stored, 8 spent at the stable cost"
    );
}

#[test]
fn warm_up_costs_are_areas_so_splits_cost_the_same() {
    // From cold, 4 permits at once cost W (the trapezoid down to the
    // threshold), like 4 single permits; the next 4 cost W/2.
    for split in [&[4u32][..], &[1, 1, 1, 1], &[2, 2], &[3, 1]] {
        let clock = ManualClock::new(0);
        let l = warming(2.0, 4_000_000, 3.0, &clock);
        let mut spent = 0;
        for &n in split {
            spent += acquire(&l, &clock, n);
        }
        // What the split cost is what the next caller waits.
        spent += acquire(&l, &clock, 4);
        assert_eq!(spent, 4_000_000, "{split:?}");
        assert_eq!(acquire(&l, &clock, 1), 2_000_000, "{split:?}");
    }
}

#[test]
fn warm_up_refills_from_empty_to_cold_in_the_warm_up_period() {
    let clock = ManualClock::new(0);
    let l = warming(5.0, 4_000_000, 10.0, &clock);
    acquire(&l, &clock, 14); // spend all 13.6 stored permits and some
    clock.advance_nanos(l.wait_stats().backlog_nanos);
    sleep_ms(&clock, 2_000); // half the warm-up period: half the permits
    acquire(&l, &clock, 1);
    let half = (13.636_363_636_363_637_f64 / 2.0) - 1.0;
    assert!(
        (l.stored_permits() - half).abs() < 1e-9,
        "{}",
        l.stored_permits()
    );
    sleep_ms(&clock, 4_000);
    acquire(&l, &clock, 1);
    assert!((l.stored_permits() - 12.636_363_636_363_637).abs() < 1e-9);
}

#[test]
fn zero_warm_up_period_is_no_warm_up() {
    // Our documented fix: Guava's cool-down interval would be 0/0 = NaN and,
    // after any idle time, stored permits NaN and no throttling ever again.
    for cold in [1.0, 3.0, 10.0] {
        for l in [
            warming(5.0, 0, cold, &ManualClock::new(0)),
            SmoothWarmingUp::builder(5.0)
                .warmup(Duration::from_nanos(999)) // truncates to 0 µs
                .cold_factor(cold)
                .build_with_clock(ManualClock::new(0))
                .unwrap(),
        ] {
            let clock = l.clock_ref().clone();
            assert_eq!(l.stored_permits(), 0.0);
            assert_eq!(acquire_times(&l, &clock, 3), [0, 200_000, 200_000]);
            sleep_ms(&clock, 10_000);
            assert_eq!(acquire_times(&l, &clock, 3), [0, 200_000, 200_000]);
            let stored = l.stored_permits();
            assert_eq!(stored, 0.0, "cold factor {cold}: stored {stored}");
            l.set_rate(10.0).unwrap();
            sleep_ms(&clock, 1_000);
            assert_eq!(acquire_times(&l, &clock, 3), [0, 100_000, 100_000]);
            assert_eq!(l.stored_permits(), 0.0);
        }
    }
}

// ------------------------------------------------------------ tryAcquire ---

#[test]
fn try_acquire_refusal_changes_nothing() {
    let clock = ManualClock::new(0);
    let b = bursty(1.0, &clock);
    let w = warming(2.0, 4_000_000, 3.0, &clock);
    b.reserve(1, None).unwrap();
    w.reserve(1, None).unwrap();
    let (b0, w0) = (format!("{b:?}"), format!("{w:?}"));
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&b, 1, 999_999),
        Err(would_wait(1_000_000, 999_999))
    );
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&w, 3, 1_374_999),
        Err(would_wait(1_375_000, 1_374_999))
    );
    assert_eq!(b.try_acquire(), Err(would_wait(1_000_000, 0)));
    assert_eq!(
        w.reserve(1, Some(Duration::from_nanos(1_374_999_999))),
        Err(AcquireError::WouldWait {
            wait: Duration::from_micros(1_375_000),
            max_wait: Duration::from_nanos(1_374_999_999),
        })
    );
    clock.advance_nanos(500 * MS);
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&b, 1, 499_999),
        Err(would_wait(500_000, 499_999))
    );
    assert_eq!((format!("{b:?}"), format!("{w:?}")), (b0, w0));
    // What follows is what it would have been with no refusals in between.
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&b, 1, 500_000)
            .unwrap()
            .delay_nanos(),
        500 * MS
    );
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&w, 1, 875_000)
            .unwrap()
            .delay_nanos(),
        875 * MS
    );
    assert_eq!(b.reserve(1, None).unwrap().delay_nanos(), 1_500 * MS);
    assert_eq!(w.reserve(1, None).unwrap().delay_nanos(), 2_000 * MS);
}

#[test]
fn try_acquire_timeout_clamps_and_saturates() {
    let clock = ManualClock::new(0);
    let l = bursty(1.0, &clock);
    // A negative timeout means 0: free now, so granted.
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, -5)
            .unwrap()
            .delay_nanos(),
        0
    );
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, i64::MIN),
        Err(would_wait(1_000_000, 0))
    );
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, -1),
        Err(would_wait(1_000_000, 0))
    );
    // Long.MAX_VALUE does not overflow (testTryAcquire_overflow).
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, i64::MAX)
            .unwrap()
            .delay_nanos(),
        SEC
    );
    assert_eq!(
        l.reserve(1, Some(Duration::MAX)).unwrap().delay_nanos(),
        2 * SEC
    );
    // Exactly the wait is enough.
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, 3_000_000)
            .unwrap()
            .delay_nanos(),
        3 * SEC
    );
    assert_eq!(
        l.reserve(1, Some(Duration::from_secs(4)))
            .unwrap()
            .delay_nanos(),
        4 * SEC
    );
}

#[test]
fn try_acquire_does_not_resync() {
    // A stale next_free in the past only makes success more likely; a
    // success then resyncs as a reservation does.
    let clock = ManualClock::new(0);
    let l = bursty(5.0, &clock);
    sleep_ms(&clock, 1_000);
    assert_eq!(l.stored_permits(), 0.0);
    assert_eq!(l.try_acquire().unwrap().delay_nanos(), 0);
    assert_eq!(l.stored_permits(), 4.0, "refilled to 5, one spent");
}

#[test]
fn zero_permits_is_an_error_and_changes_nothing() {
    let clock = ManualClock::new(0);
    let b = bursty(1.0, &clock);
    let w = warming(1.0, 1_000_000, 3.0, &clock);
    b.reserve(1, None).unwrap();
    let (b0, w0) = (format!("{b:?}"), format!("{w:?}"));
    for l in [&b as &dyn RateLimiter, &w as &dyn RateLimiter] {
        assert_eq!(l.reserve(0, None), Err(AcquireError::ZeroPermits));
        assert_eq!(
            l.reserve(0, Some(Duration::ZERO)),
            Err(AcquireError::ZeroPermits)
        );
        assert_eq!(
            l.reserve(0, Some(Duration::MAX)),
            Err(AcquireError::ZeroPermits)
        );
        assert_eq!(l.try_acquire_n(0), Err(AcquireError::ZeroPermits));
        assert_eq!(l.acquire_n(0), Err(AcquireError::ZeroPermits));
    }
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&b, 0, i64::MAX),
        Err(AcquireError::ZeroPermits)
    );
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&w, 0, -1),
        Err(AcquireError::ZeroPermits)
    );
    assert_eq!((format!("{b:?}"), format!("{w:?}")), (b0, w0));
}

// --------------------------------------------------------------- setRate ---

#[test]
fn set_rate_rescales_stored_permits_bursty() {
    let clock = ManualClock::new(0);
    let l = bursty(5.0, &clock);
    sleep_ms(&clock, 400);
    l.set_rate(10.0).unwrap(); // resyncs at the old rate first: 2 of 5 stored
    assert_eq!(l.stored_permits(), 4.0, "2 of 5 becomes 4 of 10");
    assert_eq!(acquire_times(&l, &clock, 6), [0, 0, 0, 0, 0, 100_000]);
    sleep_ms(&clock, 2_000);
    l.set_rate(2.5).unwrap();
    assert_eq!(l.stored_permits(), 2.5, "a full burst stays full");
}

#[test]
fn set_rate_rescales_stored_permits_warming_up() {
    let clock = ManualClock::new(0);
    let l = warming(2.0, 4_000_000, 3.0, &clock);
    assert_eq!(l.stored_permits(), 8.0);
    l.set_rate(4.0).unwrap();
    assert_eq!(l.stored_permits(), 16.0, "cold stays cold");
    acquire_times(&l, &clock, 12); // 4 left of 16: a quarter
    l.set_rate(1.0).unwrap();
    assert_eq!(l.stored_permits(), 1.0, "a quarter of 4");
    l.set_rate(1.0).unwrap();
    assert_eq!(l.stored_permits(), 1.0);
}

#[test]
fn set_rate_keeps_a_reserved_wait() {
    let clock = ManualClock::new(0);
    let l = bursty(1.0, &clock);
    l.reserve(10, None).unwrap();
    l.set_rate(1000.0).unwrap();
    assert_eq!(l.reserve(1, None).unwrap().delay_nanos(), 10 * SEC);
    assert_eq!(l.reserve(1, None).unwrap().delay_nanos(), 10 * SEC + MS);
    assert_eq!(l.wait_stats().backlog_nanos, 10 * SEC + 2 * MS);
}

#[test]
fn set_rate_accounts_time_before_it_at_the_old_rate() {
    // 0.5 s idle at 2/s stores 1 permit; had it been resynced at 10/s it
    // would have stored a full burst.
    let clock = ManualClock::new(0);
    let l = bursty(2.0, &clock);
    sleep_ms(&clock, 500);
    l.set_rate(10.0).unwrap();
    assert_eq!(l.stored_permits(), 5.0, "1 of 2 becomes 5 of 10");
}

// -------------------------------------------------- rates at the extremes ---

#[test]
fn infinity_bursty() {
    // Modern testInfinity_Bursty.
    let clock = ManualClock::new(0);
    let l = bursty(f64::INFINITY, &clock);
    let huge = i32::MAX as u32;
    assert_eq!(
        acquire_each(&l, &clock, &[huge / 4, huge / 2, huge]),
        [0, 0, 0]
    );
    assert_eq!(l.rate(), f64::INFINITY);
    l.set_rate(2.0).unwrap(); // leaving infinity: a full 1 s burst
    assert_eq!(l.stored_permits(), 2.0);
    assert_eq!(acquire_times(&l, &clock, 5), [0, 0, 0, 500_000, 500_000]);
    l.set_rate(f64::INFINITY).unwrap();
    // The last request's 0.5 s is repaid, then back to infinity.
    assert_eq!(acquire_times(&l, &clock, 3), [500_000, 0, 0]);
    assert_eq!(acquire(&l, &clock, u32::MAX), 0);
}

#[test]
fn infinity_bursty_time_elapsed_issue_1791() {
    let clock = ManualClock::new(0);
    let l = bursty(f64::INFINITY, &clock);
    clock.advance_nanos(MS); // idle at infinity
    l.set_rate(2.0).unwrap();
    assert_eq!(l.stored_permits(), 2.0, "not NaN");
    assert_eq!(acquire_times(&l, &clock, 5), [0, 0, 0, 500_000, 500_000]);
}

#[test]
fn infinity_warm_up() {
    // testInfinity_WarmUp: leaving infinity restarts warm (stored 0).
    let clock = ManualClock::new(0);
    let l = warming(f64::INFINITY, 10_000_000, 3.0, &clock);
    let huge = i32::MAX as u32;
    assert_eq!(
        acquire_each(&l, &clock, &[huge / 4, huge / 2, huge]),
        [0, 0, 0]
    );
    l.set_rate(1.0).unwrap();
    assert_eq!(l.stored_permits(), 0.0);
    assert_eq!(acquire_times(&l, &clock, 3), [0, 1_000_000, 1_000_000]);
    l.set_rate(f64::INFINITY).unwrap();
    assert_eq!(acquire_times(&l, &clock, 3), [1_000_000, 0, 0]);
}

#[test]
fn infinity_warm_up_time_elapsed() {
    let clock = ManualClock::new(0);
    let l = warming(f64::INFINITY, 10_000_000, 3.0, &clock);
    clock.advance_nanos(MS);
    l.set_rate(1.0).unwrap();
    assert_eq!(l.stored_permits(), 0.0, "warm, not NaN");
    assert_eq!(
        acquire_times(&l, &clock, 5),
        [0, 1_000_000, 1_000_000, 1_000_000, 1_000_000]
    );
}

#[test]
fn entering_infinity_waits_stay_zero() {
    // Finite to infinite can make stored permits NaN (0 × ∞); waits stay 0.
    let clock = ManualClock::new(0);
    let l = bursty(2.0, &clock);
    acquire_times(&l, &clock, 3);
    l.set_rate(f64::INFINITY).unwrap();
    sleep_ms(&clock, 3_000);
    assert_eq!(acquire_each(&l, &clock, &[1, u32::MAX, 7]), [0, 0, 0]);
    let w = warming(2.0, 4_000_000, 3.0, &clock);
    acquire_times(&w, &clock, 10);
    w.set_rate(f64::INFINITY).unwrap();
    assert_eq!(
        acquire_each(&w, &clock, &[1, 1, u32::MAX, 7]),
        [500_000, 0, 0, 0]
    );
}

#[test]
fn very_small_rate() {
    // testVerySmallDoubleValues: Double.MIN_VALUE.
    let tiny = f64::from_bits(1);
    assert_eq!(tiny, 5e-324);
    let clock = ManualClock::new(0);
    let l = bursty(tiny, &clock);
    assert_eq!(l.rate(), 0.0);
    assert_eq!(
        l.try_acquire().unwrap().delay_nanos(),
        0,
        "the first permit is free"
    );
    assert!(l.try_acquire().is_err());
    sleep_ms(&clock, 5_000);
    assert!(l.try_acquire().is_err(), "not even after sleeping");
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, 0),
        Err(would_wait(i64::MAX as u64 - 5_000_000, 0))
    );
    // Only a timeout of Long.MAX_VALUE succeeds, and waits ~292k years
    // (saturated to what a u64 nanosecond clock can hold).
    let g = GuavaTimeouts::try_acquire_micros(&l, 1, i64::MAX).unwrap();
    assert_eq!(g.delay_nanos(), u64::MAX - 5 * SEC);
    assert_eq!(l.wait_stats().backlog_nanos, u64::MAX);
}

#[test]
fn rate_reads_back_through_the_stable_interval() {
    let clock = ManualClock::new(0);
    let l = bursty(7.0, &clock);
    assert_eq!(l.rate(), 6.999_999_999_999_999);
    l.set_rate(5.0).unwrap();
    assert_eq!(l.rate(), 5.0);
    let w = warming(7.0, 1_000_000, 3.0, &clock);
    assert_eq!(w.rate(), 6.999_999_999_999_999);
    w.set_rate(f64::INFINITY).unwrap();
    assert_eq!(w.rate(), f64::INFINITY);
}

// ----------------------------------------------------------- validation ---

#[test]
fn invalid_rates_are_rejected() {
    let clock = ManualClock::new(0);
    for bad in [0.0, -0.0, -1.0, f64::NEG_INFINITY] {
        assert_eq!(
            SmoothBursty::new(bad).unwrap_err(),
            SmoothError::Rate(bad).into()
        );
        assert_eq!(
            SmoothWarmingUp::new(bad, Duration::from_secs(1)).unwrap_err(),
            SmoothError::Rate(bad).into()
        );
    }
    let e = SmoothBursty::builder(f64::NAN)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert!(matches!(e.downcast_ref(), Some(SmoothError::Rate(r)) if r.is_nan()));
    let e = SmoothWarmingUp::builder(f64::NAN)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert!(matches!(e.downcast_ref(), Some(SmoothError::Rate(r)) if r.is_nan()));
    assert_eq!(
        SmoothError::Rate(-1.0).to_string(),
        "rate must be positive, got -1"
    );
}

#[test]
fn set_rate_errors_change_nothing() {
    let clock = ManualClock::new(0);
    let b = bursty(3.0, &clock);
    let w = warming(3.0, 2_000_000, 3.0, &clock);
    b.reserve(2, None).unwrap();
    w.reserve(2, None).unwrap();
    clock.advance_nanos(5 * SEC); // a successful set_rate would resync
    let (b0, w0) = (format!("{b:?}"), format!("{w:?}"));
    for bad in [0.0, -1.0, f64::NAN] {
        let e = b.set_rate(bad).unwrap_err();
        assert!(
            matches!(e.downcast_ref(), Some(SmoothError::Rate(r)) if r.to_bits() == bad.to_bits()),
            "{e:?}"
        );
        let e = w.set_rate(bad).unwrap_err();
        assert!(
            matches!(e.downcast_ref(), Some(SmoothError::Rate(r)) if r.to_bits() == bad.to_bits()),
            "{e:?}"
        );
    }
    assert_eq!((format!("{b:?}"), format!("{w:?}")), (b0, w0));
    assert_eq!(b.rate(), 3.0);
}

#[test]
fn warm_up_builder_validation_order() {
    let clock = ManualClock::new(0);
    // Guava checks the warm-up period before the rate.
    let e = micros_builder(0.0, -1)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert_eq!(e, SmoothError::WarmupNegative(-1).into());
    let e = micros_builder(f64::NAN, i64::MIN)
        .cold_factor(0.5)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert_eq!(e, SmoothError::WarmupNegative(i64::MIN).into());
    // Then the rate, then the cold factor.
    let e = SmoothWarmingUp::builder(-1.0)
        .cold_factor(0.5)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert_eq!(e, SmoothError::Rate(-1.0).into());
    let e = SmoothWarmingUp::builder(1.0)
        .cold_factor(0.5)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert_eq!(e, SmoothError::ColdFactor(0.5).into());
    let e = SmoothWarmingUp::builder(1.0)
        .cold_factor(f64::NAN)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert!(
        matches!(e.downcast_ref(), Some(SmoothError::ColdFactor(c)) if c.is_nan()),
        "{e:?}"
    );
    // An infinite cold factor would put the whole warm-up on the first permit.
    let e = SmoothWarmingUp::builder(1.0)
        .cold_factor(f64::INFINITY)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert_eq!(e, SmoothError::ColdFactor(f64::INFINITY).into());
    // Accepted: cold factor exactly 1, warm-up 0, the largest warm-up.
    for (w, cf) in [(0, 1.0), (i64::MAX, 3.0), (1, 1e9)] {
        micros_builder(1.0, w)
            .cold_factor(cf)
            .build_with_clock(clock.clone())
            .unwrap();
    }
    let huge = SmoothWarmingUp::builder(1.0)
        .warmup(Duration::MAX)
        .build_with_clock(clock.clone())
        .unwrap();
    assert_eq!(huge.rate(), 1.0);
}

#[test]
fn bursty_builder_validation() {
    let clock = ManualClock::new(0);
    for bad in [-1.0, f64::INFINITY, f64::NEG_INFINITY, -f64::MIN_POSITIVE] {
        let e = SmoothBursty::builder(1.0)
            .max_burst_seconds(bad)
            .build_with_clock(clock.clone())
            .unwrap_err();
        assert_eq!(e, SmoothError::MaxBurstSeconds(bad).into());
    }
    let e = SmoothBursty::builder(1.0)
        .max_burst_seconds(f64::NAN)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert!(
        matches!(e.downcast_ref(), Some(SmoothError::MaxBurstSeconds(b)) if b.is_nan()),
        "{e:?}"
    );
    // The rate is checked first.
    let e = SmoothBursty::builder(0.0)
        .max_burst_seconds(-1.0)
        .build_with_clock(clock.clone())
        .unwrap_err();
    assert_eq!(e, SmoothError::Rate(0.0).into());
    // Zero burst seconds: no stored permits, stable spacing.
    let l = SmoothBursty::builder(5.0)
        .max_burst_seconds(0.0)
        .build_with_clock(clock.clone())
        .unwrap();
    sleep_ms(&clock, 10_000);
    assert_eq!(acquire_times(&l, &clock, 3), [0, 200_000, 200_000]);
    assert_eq!(l.stored_permits(), 0.0);
}

// ------------------------------------------------- grants, stats, clocks ---

#[test]
fn grant_fields() {
    let clock = ManualClock::new(7_500);
    let l = bursty(5.0, &clock);
    let g = l.reserve(1, None).unwrap();
    assert_eq!(
        (
            g.scheduled_nanos(),
            g.ready_nanos(),
            g.started_nanos(),
            g.permits()
        ),
        (7_500, 7_500, 7_500, 1)
    );
    clock.advance_nanos(999); // less than a microsecond of the limiter's time
    let g = l.reserve(3, None).unwrap();
    let due = 8_499 + 200 * MS;
    assert_eq!(
        (
            g.scheduled_nanos(),
            g.ready_nanos(),
            g.started_nanos(),
            g.permits()
        ),
        (due, due, 8_499, 3)
    );
    assert_eq!((g.delay_nanos(), g.wait_nanos()), (200 * MS, 0));
    // Blocking acquire on the manual clock sleeps exactly the wait.
    let g = l.acquire();
    assert_eq!(clock.now_nanos(), 8_499 + 800 * MS);
    assert_eq!((g.started_nanos(), g.wait_nanos()), (8_499 + 800 * MS, 0));
    assert_eq!(format!("{:?}", l.clock_ref()), format!("{clock:?}"));
}

#[test]
fn wait_stats_backlog_is_how_far_next_free_is_ahead() {
    let clock = ManualClock::new(0);
    let l = bursty(1.0, &clock);
    let w = warming(2.0, 4_000_000, 3.0, &clock);
    let zero = WaitStats::default();
    assert_eq!((l.wait_stats(), w.wait_stats()), (zero, zero));
    l.reserve(1, None).unwrap();
    w.reserve(1, None).unwrap();
    assert_eq!(l.wait_stats().backlog_nanos, SEC);
    assert_eq!(w.wait_stats().backlog_nanos, 1_375 * MS);
    clock.advance_nanos(300 * MS + 999);
    let s = l.wait_stats();
    assert_eq!((s.backlog_nanos, s.total_wait_nanos), (700 * MS, 700 * MS));
    assert_eq!(w.wait_stats().backlog_nanos, 1_075 * MS);
    clock.advance_nanos(2 * SEC);
    assert_eq!((l.wait_stats(), w.wait_stats()), (zero, zero));
}

#[test]
fn debug_shows_the_state() {
    let clock = ManualClock::new(0);
    let l = bursty(2.0, &clock);
    l.reserve(3, None).unwrap();
    assert_eq!(
        format!("{l:?}"),
        "SmoothBursty { rate: 2.0, stored_permits: 0.0, max_permits: 2.0, next_free_micros: 1500000, .. }"
    );
    let w = warming(2.0, 4_000_000, 3.0, &clock);
    assert_eq!(
        format!("{w:?}"),
        "SmoothWarmingUp { rate: 2.0, stored_permits: 8.0, max_permits: 8.0, next_free_micros: 0, .. }"
    );
}

/// A clock that wraps around `u64::MAX` when it sleeps (a `ManualClock`
/// saturates there instead, and never goes backwards).
#[derive(Debug, Clone)]
struct WrappingClock(Arc<AtomicU64>);

impl WrappingClock {
    fn new(start: u64) -> WrappingClock {
        WrappingClock(Arc::new(AtomicU64::new(start)))
    }
}

impl Clock for WrappingClock {
    fn now_nanos(&self) -> u64 {
        self.0.load(AtomicOrdering::Relaxed)
    }
    fn sleep_nanos(&self, nanos: u64) {
        self.0.fetch_add(nanos, AtomicOrdering::Relaxed); // wraps
    }
    fn sleep_overshoot_nanos(&self) -> u64 {
        0
    }
}

#[test]
fn clock_wrap_keeps_the_schedule() {
    // legacy:testTimeWrapping: the clock starts 1 s before it wraps. The
    // limiter reads elapsed time by wrapping subtraction, so its schedule
    // (what a refusal reports, the backlog) is unaffected by the wrap.
    let clock = WrappingClock::new(u64::MAX - SEC);
    let l = SmoothBursty::builder(1.0)
        .build_with_clock(clock.clone())
        .unwrap();
    assert_eq!(l.try_acquire().unwrap().delay_nanos(), 0);
    for k in 1..=4u64 {
        // The next permit is 1 s ahead of now, whichever side of the wrap.
        assert_eq!(
            GuavaTimeouts::try_acquire_micros(&l, 1, 999_999),
            Err(would_wait(1_000_000, 999_999))
        );
        assert_eq!(l.wait_stats().backlog_nanos, SEC);
        clock.sleep_nanos(SEC);
        assert_eq!(clock.now_nanos(), (u64::MAX - SEC).wrapping_add(k * SEC));
        assert_eq!(l.try_acquire().unwrap().delay_nanos(), 0, "step {k}");
    }
    // Idle time across the wrap is idle time: a full burst.
    let clock = WrappingClock::new(u64::MAX - 500 * MS);
    let l = SmoothBursty::builder(4.0)
        .build_with_clock(clock.clone())
        .unwrap();
    clock.sleep_nanos(2 * SEC);
    assert!(clock.now_nanos() < 2 * SEC);
    for _ in 0..5 {
        assert_eq!(l.try_acquire().unwrap().delay_nanos(), 0);
    }
    assert_eq!(l.try_acquire(), Err(would_wait(250_000, 0)));
}

#[test]
fn clock_wrap_grants_saturate_at_the_clocks_last_reading() {
    // legacy:testTimeWrapping with blocking acquires: Guava sleeps R0.00,
    // R1.00, R1.00, R1.00. Here (see "Differences from Guava") a grant holds
    // absolute clock times that saturate: one ready past the wrap is ready
    // at u64::MAX, so at that reading it carries no wait (R0.00), while the
    // schedule keeps every wait and carries on across the wrap.
    let clock = WrappingClock::new(u64::MAX - SEC);
    let l = SmoothBursty::builder(1.0)
        .build_with_clock(clock.clone())
        .unwrap();
    assert_eq!(acquire_times(&l, &clock, 2), [0, 1_000_000]);
    assert_eq!(clock.now_nanos(), u64::MAX);
    for k in 1..=2u64 {
        let g = l.reserve(1, None).unwrap();
        assert_eq!(
            (g.started_nanos(), g.ready_nanos(), g.delay_nanos()),
            (u64::MAX, u64::MAX, 0),
            "grant {k} past the wrap"
        );
        // Due k seconds past the wrap: the schedule has it, 1 s apart.
        assert_eq!(l.wait_stats().backlog_nanos, (k + 1) * SEC);
    }
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, 0),
        Err(would_wait(3_000_000, 0))
    );
    // Across the wrap the schedule goes on: 3 s later the next permit is
    // free, and the one after it 1 s ahead.
    clock.sleep_nanos(3 * SEC);
    assert!(clock.now_nanos() < 3 * SEC, "wrapped");
    assert_eq!(l.try_acquire().unwrap().delay_nanos(), 0);
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, 0),
        Err(would_wait(1_000_000, 0))
    );
}

#[test]
fn manual_clock_near_its_end_paces_until_it_saturates() {
    // A ManualClock cannot wrap (it saturates at u64::MAX); the limiter's
    // elapsed-time reading works however late the clock starts.
    let clock = ManualClock::new(u64::MAX - 3 * SEC);
    let l = bursty(2.0, &clock);
    assert_eq!(
        acquire_times(&l, &clock, 6),
        [0, 500_000, 500_000, 500_000, 500_000, 500_000]
    );
    assert_eq!(clock.now_nanos(), u64::MAX - SEC / 2);
}

// ------------------------------------------ no NaN through infinity ---

#[test]
fn zero_warm_up_through_infinity_still_throttles() {
    // "A zero warm-up period is no warm-up ... also across a change to or
    // from an infinite rate" (Guava: 0/0 = NaN stored permits, and no
    // throttling ever again).
    let clock = ManualClock::new(0);
    let l = warming(f64::INFINITY, 0, 3.0, &clock);
    sleep_ms(&clock, 1_000);
    assert_eq!(acquire_times(&l, &clock, 3), [0, 0, 0]);
    assert_eq!(l.stored_permits(), 0.0);
    l.set_rate(1.0).unwrap();
    assert_eq!(acquire_times(&l, &clock, 3), [0, 1_000_000, 1_000_000]);
    assert_eq!(l.stored_permits(), 0.0);

    // Through a finite rate, then infinity (with idle time), then back.
    let l = warming(1.0, 0, 3.0, &clock);
    l.set_rate(f64::INFINITY).unwrap();
    sleep_ms(&clock, 1_000);
    assert_eq!(acquire(&l, &clock, 1), 0);
    l.set_rate(1.0).unwrap();
    assert_eq!(l.stored_permits(), 0.0);
    assert_eq!(acquire_times(&l, &clock, 3), [0, 1_000_000, 1_000_000]);
}

#[test]
fn zero_burst_through_infinity_still_throttles() {
    // Guava's 0 × ∞ would make max permits, then stored permits, NaN.
    let clock = ManualClock::new(0);
    let l = SmoothBursty::builder(f64::INFINITY)
        .max_burst_seconds(0.0)
        .build_with_clock(clock.clone())
        .unwrap();
    sleep_ms(&clock, 1_000);
    assert_eq!(acquire_times(&l, &clock, 2), [0, 0]);
    l.set_rate(2.0).unwrap();
    assert_eq!(l.stored_permits(), 0.0);
    assert_eq!(acquire_times(&l, &clock, 3), [0, 500_000, 500_000]);
    l.set_rate(f64::INFINITY).unwrap();
    sleep_ms(&clock, 1_000);
    l.set_rate(2.0).unwrap();
    assert_eq!(l.stored_permits(), 0.0);
    assert_eq!(acquire_times(&l, &clock, 3), [0, 500_000, 500_000]);
}

// ---- cancel ----

/// The whole state, bit for bit: stored permits, `next_free`, the rate.
fn state_bits<C: Clock>(core: &Smooth<C>) -> (u64, i64, u64) {
    let st = core.snapshot();
    (
        st.stored_permits.to_bits(),
        st.next_free,
        st.stable_interval.to_bits(),
    )
}

fn times(g: &Grant) -> (u64, u64, u64, u32) {
    (
        g.scheduled_nanos(),
        g.ready_nanos(),
        g.started_nanos(),
        g.permits(),
    )
}

#[test]
fn bursty_cancel_restores_the_state_exactly() {
    let clock = ManualClock::new(0);
    let l = bursty(5.0, &clock);
    l.reserve(1, None).unwrap();
    clock.advance_nanos(50 * MS);
    let before = state_bits(&l.core);
    let g = l.reserve(3, None).unwrap();
    assert_eq!(g.delay_nanos(), 150 * MS);
    assert!(l.cancel(&g));
    assert_eq!(state_bits(&l.core), before);
    let again = l.reserve(3, None).unwrap();
    assert_eq!(times(&again), times(&g));
    // Guava goes on as if the cancelled reservation had never been made.
    assert_eq!(acquire(&l, &clock, 1), 150_000 + 600_000);
}

#[test]
fn warming_up_cancel_restores_the_stored_permits_it_spent() {
    let clock = ManualClock::new(0);
    let l = warming(2.0, 4_000_000, 3.0, &clock); // cold: 4 permits stored
    l.reserve(1, None).unwrap(); // at once: costs 1.375 s
    let before = state_bits(&l.core);
    let g = l.reserve(1, None).unwrap();
    assert_eq!(g.delay_nanos(), 1_375 * MS);
    assert!(l.stored_permits() > 0.0, "it spent one of the stored ones");
    assert!(l.cancel(&g));
    assert_eq!(state_bits(&l.core), before);
    assert_eq!(times(&l.reserve(1, None).unwrap()), times(&g));
    // Guava's testWarmUp goes on unchanged: 1.125 s for the next permit
    // (after the 1.375 s not slept).
    assert_eq!(acquire(&l, &clock, 1), 1_375_000 + 1_125_000);
}

#[test]
fn warming_up_cancel_when_warm_and_refusal_for_the_last_stored_permits() {
    let clock = ManualClock::new(0);
    let l = warming(2.0, 4_000_000, 3.0, &clock);
    // Warm it up: use every stored permit.
    for _ in 0..8 {
        acquire(&l, &clock, 1);
    }
    assert_eq!(l.stored_permits(), 0.0);
    let before = state_bits(&l.core);
    let g = l.reserve(1, None).unwrap();
    let h = l.reserve(1, None).unwrap();
    assert!(
        l.cancel(&h) && l.cancel(&g),
        "warm: no stored permits, exact"
    );
    assert_eq!(state_bits(&l.core), before);

    // 0.5 stored permits, spent by a 2-permit reservation that waits: how
    // many it spent is not in its grant.
    let l = warming(2.0, 4_000_000, 3.0, &clock);
    for _ in 0..8 {
        acquire(&l, &clock, 1);
    }
    // Idle 1.25 s past `next_free`: 2.5 permits stored again (one per 0.5 s).
    clock.advance_nanos(1_750 * MS);
    acquire(&l, &clock, 1); // at once
    let stored = l.stored_permits();
    assert!(stored > 0.0 && stored < 2.0, "{stored}");
    let g = l.reserve(2, None).unwrap();
    assert!(g.delay_nanos() > 0);
    assert_eq!(l.stored_permits(), 0.0);
    let state = state_bits(&l.core);
    // Not back to the state, but to the next caller of its size (issue 16:
    // was refused).
    assert!(l.cancel(&g));
    assert_eq!(state_bits(&l.core), state);
    assert_eq!(l.reserve(2, None).unwrap().ready_nanos(), g.ready_nanos());
}

#[test]
fn smooth_cancel_newest_first_and_later_reservations() {
    let clock = ManualClock::new(0);
    let l = bursty(10.0, &clock);
    l.reserve(1, None).unwrap();
    let before = state_bits(&l.core);
    let a = l.reserve(2, None).unwrap();
    let b = l.reserve(1, None).unwrap();
    let mid = state_bits(&l.core);
    // b built on a: a is kept for the next caller of its size (issue 16:
    // it was refused), the state untouched.
    assert!(l.cancel(&a));
    assert_eq!(state_bits(&l.core), mid);
    assert!(l.cancel(&b), "the latest: back to the state");
    assert!(!l.cancel(&a) && !l.cancel(&b));
    assert_ne!(state_bits(&l.core), before, "a's reservation stands");
    let next = l.reserve(2, None).unwrap();
    assert_eq!(
        next.ready_nanos(),
        a.ready_nanos(),
        "a's time, from the stash"
    );
}

#[test]
fn smooth_refuses_twice_foreign_passed_immediate_and_after_a_rate_change() {
    let clock = ManualClock::new(0);
    let l = bursty(10.0, &clock);
    let other = bursty(10.0, &clock);
    let first = l.reserve(1, None).unwrap();
    assert!(!l.cancel(&first), "ready when made");
    let g = l.reserve(1, None).unwrap();
    assert!(l.cancel(&g));
    let state = state_bits(&l.core);
    assert!(!l.cancel(&g), "twice");
    // Taken again: the very same word committed again, but a new grant.
    let again = l.reserve(1, None).unwrap();
    assert_eq!(times(&again), times(&g));
    let state_again = state_bits(&l.core);
    assert!(
        !l.cancel(&g),
        "the cancelled grant cannot take the new one back"
    );
    assert_eq!(state_bits(&l.core), state_again);
    // Another limiter's (different debts).
    other.reserve(1, None).unwrap();
    let foreign = other.reserve(3, None).unwrap();
    // Another limiter's grant is a caller error: it may be kept for the
    // next caller of its size (issue 16), but the state is untouched.
    let _ = l.cancel(&foreign);
    assert!(!l.cancel(&Grant::new(again.ready_nanos(), again.ready_nanos(), 0, 1)));
    assert_eq!(state_bits(&l.core), state_again);
    assert!(l.cancel(&again));
    assert_eq!(state_bits(&l.core), state);
    // Past its ready time.
    let g = l.reserve(1, None).unwrap();
    clock.set_nanos(g.ready_nanos() + 1);
    let state = state_bits(&l.core);
    assert!(!l.cancel(&g));
    assert_eq!(state_bits(&l.core), state);
    // Ready exactly now: still given back.
    let g = l.reserve(1, None).unwrap();
    clock.set_nanos(g.ready_nanos());
    assert!(l.cancel(&g));
    // Before a rate change.
    let g = l.reserve(1, None).unwrap();
    l.set_rate(20.0).unwrap();
    assert!(!l.cancel(&g));
    let g = l.reserve(1, None).unwrap();
    assert!(l.cancel(&g), "on the new rate");
}

#[test]
fn above_300k_per_second_a_later_free_reservation_can_hide_behind_the_cancelled_one() {
    // 3e6 permits/s from stored permits at the stable price: a permit costs
    // 1/3 µs, truncated per reservation. A 5-permit reservation costs 1 µs;
    // the 1-permit one after it costs 0 but spends a stored permit. The state
    // they leave is one the 5-permit reservation alone gives from one permit
    // fewer: the cancel gives its permits and cost back from there, and the
    // 1-permit reservation keeps its (later) time, as in Go.
    let run = |with_five: bool| {
        let clock = ManualClock::new(0);
        let l = warming(3e6, 4_000_000, 1.0, &clock);
        for _ in 0..10 {
            l.reserve(3, None).unwrap(); // 1 µs each: the next ones wait
        }
        let five = with_five.then(|| l.reserve(5, None).unwrap());
        let one = l.reserve(1, None).unwrap();
        (l, five, one)
    };
    let (l, five, one) = run(true);
    let (twin, _, twin_one) = run(false);
    assert!(one.delay_nanos() > twin_one.delay_nanos());
    assert!(l.cancel(&five.unwrap()));
    assert_eq!(state_bits(&l.core), state_bits(&twin.core));
}

#[test]
fn whole_microseconds_leave_single_permits_above_a_million_per_second_free() {
    use crate::{BatchHandle, ManualClock, RateLimiter, SmoothBursty};
    // Guava's per-call truncation, as documented under "Time and numbers":
    // at 1e7/s one permit costs (long)0.1 = 0 µs, and 1000 of them no time;
    // leases of many permits are charged within 1 µs per lease.
    let clock = ManualClock::new(0);
    let limiter = SmoothBursty::builder(1e7)
        .max_burst_seconds(0.0)
        .build_with_clock(clock.clone())
        .unwrap();
    for _ in 0..1000 {
        limiter.acquire();
    }
    assert_eq!(clock.now_nanos(), 0);
    let handle = BatchHandle::new(&limiter);
    for _ in 0..1_000_000 {
        handle.acquire();
    }
    // 1e6 permits cost 100 ms at 0.1 µs each; leases lose < 1 µs each.
    let took = clock.now_nanos();
    assert!((99_000_000..=100_000_000).contains(&took), "{took} ns");
}

// ------------------------------------------------- the nanosecond mode ---

fn bursty_nanos(rate: f64, clock: &ManualClock) -> SmoothBursty<ManualClock> {
    SmoothBursty::builder(rate)
        .resolution(Resolution::Nanos)
        .build_with_clock(clock.clone())
        .unwrap()
}

/// `acquire(1)` `k` times on the manual clock, sleeping each wait; returns
/// each wait in nanoseconds.
fn acquire_nanos(l: &impl RateLimiter, clock: &ManualClock, k: usize) -> Vec<u64> {
    (0..k)
        .map(|_| {
            let g = l.reserve(1, None).unwrap();
            clock.advance_nanos(g.delay_nanos());
            g.delay_nanos()
        })
        .collect()
}

#[test]
fn above_a_million_per_second_only_nanoseconds_throttle() {
    // 2e6 permits/s: 0.5 µs a permit. Guava's whole microseconds charge it
    // (long)0.5 = 0 and let every permit go at once; nanoseconds space them
    // 500 ns apart.
    let clock = ManualClock::new(0);
    let micros = bursty(2e6, &clock);
    assert_eq!(acquire_nanos(&micros, &clock, 5), [0; 5]);
    assert_eq!(clock.now_nanos(), 0, "never throttled");
    let nanos = bursty_nanos(2e6, &clock);
    assert_eq!(acquire_nanos(&nanos, &clock, 5), [0, 500, 500, 500, 500]);
    assert_eq!(clock.now_nanos(), 2_000);
}

#[test]
fn between_1e5_and_1e6_per_second_nanoseconds_charge_the_full_interval() {
    // 3e5 permits/s: 3.33 µs a permit. Whole microseconds charge 3 µs (10 %
    // too little: 1000 permits take 3 ms, not 3.33 ms); whole nanoseconds
    // charge 3333 ns, within 0.01 %.
    let took = |l: &dyn RateLimiter, clock: &ManualClock| {
        let start = clock.now_nanos();
        acquire_nanos(&l, clock, 1001); // the first is free
        clock.now_nanos() - start
    };
    let clock = ManualClock::new(0);
    assert_eq!(took(&bursty(3e5, &clock), &clock), 3_000_000);
    let clock = ManualClock::new(0);
    assert_eq!(took(&bursty_nanos(3e5, &clock), &clock), 3_333_000);
}

#[test]
fn nanoseconds_hold_1e7_per_second_exactly() {
    // 1e7 permits/s: 100 ns a permit, whole, so nothing is truncated: a
    // million single permits take 100 ms, and requests of 1024 permits (a
    // full BatchHandle lease) 102.4 µs each. (Guava's microseconds charge a
    // single permit 0 µs, and 1024 of them 102 µs.)
    let clock = ManualClock::new(0);
    let l = SmoothBursty::builder(1e7)
        .max_burst_seconds(0.0)
        .resolution(Resolution::Nanos)
        .build_with_clock(clock.clone())
        .unwrap();
    acquire_nanos(&l, &clock, 1_000_001);
    assert_eq!(clock.now_nanos(), 100_000_000);
    for _ in 0..1000 {
        // Each request waits for the cost of the one before.
        let waits: Vec<u64> = [1024, 1]
            .map(|n| {
                let g = l.reserve(n, None).unwrap();
                clock.advance_nanos(g.delay_nanos());
                g.delay_nanos()
            })
            .into();
        assert_eq!(waits, [100, 102_400]);
    }
    assert_eq!(clock.now_nanos(), 100_000_000 + 1000 * 102_500);
}

#[test]
fn warm_up_in_nanoseconds_is_guava_s_warm_up_a_thousand_times_faster() {
    // Guava's testWarmUp (2 permits/s, 4 s warm-up, cold factor 3), with
    // every time divided by 1000: 2000 permits/s and a 4 ms warm-up give
    // the same waits in nanoseconds as in microseconds; 2e6 permits/s and a
    // 4 µs warm-up give them in nanoseconds only (Guava's microseconds
    // charge every permit 0 µs).
    let want = [0, 1_375, 1_125, 875, 625, 500, 500, 500];
    let warm = |rate: f64, warmup: Duration, res: Resolution, clock: &ManualClock| {
        SmoothWarmingUp::builder(rate)
            .warmup(warmup)
            .resolution(res)
            .build_with_clock(clock.clone())
            .unwrap()
    };
    let clock = ManualClock::new(0);
    let l = warm(2e3, Duration::from_millis(4), Resolution::Micros, &clock);
    let waits = acquire_nanos(&l, &clock, 8);
    assert_eq!(waits, want.map(|w| w * 1000));
    let clock = ManualClock::new(0);
    let l = warm(2e6, Duration::from_micros(4), Resolution::Nanos, &clock);
    assert_eq!(acquire_nanos(&l, &clock, 8), want);
    // Guava's microseconds truncate each cost: 1.375 and 1.125 µs to 1 µs,
    // the rest to 0.
    let clock = ManualClock::new(0);
    let l = warm(2e6, Duration::from_micros(4), Resolution::Micros, &clock);
    let truncated = [0, 1_000, 1_000, 0, 0, 0, 0, 0];
    assert_eq!(acquire_nanos(&l, &clock, 8), truncated);
    // A warm-up period under a microsecond: kept whole in nanoseconds.
    let clock = ManualClock::new(0);
    let l = warm(2e9, Duration::from_nanos(4), Resolution::Nanos, &clock);
    assert_eq!(l.stored_permits(), 8.0);
}

#[test]
fn nanoseconds_keep_tries_rates_stats_and_cancels() {
    let clock = ManualClock::new(0);
    let l = bursty_nanos(2e6, &clock);
    assert_eq!(l.rate(), 2e6);
    l.reserve(1, None).unwrap();
    let refused = AcquireError::WouldWait {
        wait: Duration::from_nanos(500),
        max_wait: Duration::ZERO,
    };
    assert_eq!(l.try_acquire(), Err(refused));
    assert_eq!(l.wait_stats().backlog_nanos, 500);
    assert!(format!("{l:?}").contains("next_free_nanos: 500"), "{l:?}");
    // A timeout in microseconds is a thousand nanoseconds each.
    let g = GuavaTimeouts::try_acquire_micros(&l, 3, 1).unwrap();
    assert_eq!(g.delay_nanos(), 500);
    assert_eq!(
        GuavaTimeouts::try_acquire_micros(&l, 1, 1),
        Err(AcquireError::WouldWait {
            wait: Duration::from_nanos(2_000),
            max_wait: Duration::from_micros(1),
        })
    );
    // The latest reservation comes back exactly, nanoseconds and all.
    let before = state_bits(&l.core);
    let g = l.reserve(2, None).unwrap();
    assert_eq!(g.delay_nanos(), 2_000);
    assert!(l.cancel(&g));
    assert_eq!(state_bits(&l.core), before);
    // A rate change accounts the time before it at the old rate, in
    // nanoseconds: 2 µs of debt stays owed.
    l.set_rate(1e3).unwrap();
    assert_eq!(l.rate(), 1e3);
    assert_eq!(l.reserve(1, None).unwrap().delay_nanos(), 2_000);
    assert_eq!(l.reserve(1, None).unwrap().delay_nanos(), 1_002_000);
}

#[test]
fn a_reading_before_creation_is_no_time_passing() {
    // Issue 16: a reading 1 ns before the creation reading (a TSC read on
    // another core) wrapped to ~584 years of elapsed time, after which the
    // limiter refused for centuries. It must count as no time passing.
    for res in [Resolution::Micros, Resolution::Nanos] {
        let start = 1_000 * SEC;
        let clock = WrappingClock::new(start);
        let bursty = SmoothBursty::builder(1.0)
            .resolution(res)
            .build_with_clock(clock.clone())
            .unwrap();
        let warming = micros_builder(1.0, 2_000_000)
            .resolution(res)
            .build_with_clock(clock.clone())
            .unwrap();
        let limiters: [&dyn RateLimiter; 2] = [&bursty, &warming];
        for l in limiters {
            clock.0.store(start - 1, AtomicOrdering::Relaxed);
            assert_eq!(l.try_acquire().unwrap().delay_nanos(), 0, "{res:?}");
            clock.0.store(start, AtomicOrdering::Relaxed);
            assert!(l.try_acquire().is_err(), "{res:?}: one permit a second");
            clock.0.store(start + 10 * SEC, AtomicOrdering::Relaxed);
            assert!(
                l.try_acquire().is_ok(),
                "{res:?}: locked after a backwards read"
            );
        }
    }
}

#[test]
fn a_request_costing_more_than_the_schedule_is_not_free() {
    // Issue 16: Guava sums a request's stored and fresh costs in a wrapping
    // `long`; past 2^63 ticks the sum wrapped negative and the request was
    // free, letting the next one through at once.
    let clock = ManualClock::new(0);
    let l = micros_builder(5.12, i64::MAX)
        .cold_factor(86.0)
        .resolution(Resolution::Nanos)
        .build_with_clock(clock.clone())
        .unwrap();
    assert_eq!(l.reserve(u32::MAX, None).unwrap().delay_nanos(), 0);
    match l.reserve(1, Some(Duration::from_millis(1))) {
        Err(AcquireError::WouldWait { wait, .. }) => assert!(wait > Duration::from_secs(1 << 32)),
        other => panic!("the next request went: {other:?}"),
    }
}

#[test]
fn effective_rate_is_what_whole_units_per_permit_give() {
    let clock = ManualClock::new(0);
    let eff = |rate: f64, res: Resolution| {
        SmoothBursty::builder(rate)
            .resolution(res)
            .build_with_clock(clock.clone())
            .unwrap()
            .effective_rate()
    };
    use Resolution::{Micros, Nanos};
    // Whole microseconds: exact, truncated, and nothing at all.
    assert_eq!(eff(1e5, Micros), 1e5); // 10 µs
    assert_eq!(eff(3.0, Micros), 1e6 / 333_333.0); // 333 333.3 µs
    assert_eq!(eff(7.0, Micros), 1e6 / 142_857.0); // 142 857.14 µs
    assert_eq!(eff(3e5, Micros), 1e6 / 3.0); // 3.33 µs charged 3: +11 %
    assert_eq!(eff(5.1e5, Micros), 1e6); // 1.96 µs charged 1: +96 %
    assert_eq!(eff(1e6, Micros), 1e6); // 1 µs
    assert_eq!(eff(2e6, Micros), f64::INFINITY); // 0.5 µs charged 0
    assert_eq!(eff(f64::INFINITY, Micros), f64::INFINITY);
    // Whole nanoseconds.
    assert_eq!(eff(2e6, Nanos), 2e6); // 500 ns
    assert_eq!(eff(3.0, Nanos), 1e9 / 333_333_333.0);
    assert_eq!(eff(5.1e8, Nanos), 1e9); // 1.96 ns charged 1
    assert_eq!(eff(2e9, Nanos), f64::INFINITY); // 0.5 ns charged 0
                                                // A tiny rate saturates the charge at i64::MAX units.
    assert_eq!(eff(1e-300, Micros), 1e6 / i64::MAX as f64);
}

#[test]
fn effective_rate_follows_rate_changes_and_the_warm_rate() {
    let clock = ManualClock::new(0);
    let w = warming(3e5, 1_000, 3.0, &clock);
    // The warm rate: the stable interval, 3.33 µs charged 3 µs.
    assert_eq!(w.effective_rate(), 1e6 / 3.0);
    w.set_rate(1e5).unwrap();
    assert_eq!(w.effective_rate(), 1e5);
    let b = bursty(3e5, &clock);
    b.set_rate(2e6).unwrap();
    assert_eq!(b.effective_rate(), f64::INFINITY);
    b.set_rate(3e5).unwrap();
    assert_eq!(b.effective_rate(), 1e6 / 3.0);
}

#[test]
fn effective_rate_is_what_one_permit_calls_get() {
    // 3e5/s in whole microseconds: each call pushes the next one 3 µs on
    // (Guava charges 3.33 µs as 3), 333 333 per second, not 300 000.
    let clock = ManualClock::new(0);
    let b = bursty(3e5, &clock);
    let delays: Vec<u64> = (0..1001)
        .map(|_| b.reserve(1, None).unwrap().delay_nanos())
        .collect();
    assert_eq!(delays[1000], 3_000_000);
    assert_eq!(1000.0 * 1e9 / delays[1000] as f64, b.effective_rate());
    // 2e6/s: once the debt above is paid, every call is free.
    b.set_rate(2e6).unwrap();
    clock.advance_nanos(SEC);
    assert!((0..100).all(|_| b.reserve(1, None).unwrap().delay_nanos() == 0));
    assert_eq!(b.effective_rate(), f64::INFINITY);
}
