use std::time::Duration;

use super::*;
use crate::clock::ManualClock;

const MS: u64 = 1_000_000;

fn pacer(spec: &str, clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::from_spec(&spec.parse().unwrap())
        .unwrap()
        .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
        .build_with_clock(clock.clone())
        .unwrap()
}

#[test]
fn configure_leaves_the_pacer_idle_until_first_acquire() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.0,configure", &clock);
    assert!(!p.is_started());
    clock.advance_nanos(50 * MS);
    // Idle time is not a backlog: the schedule starts at the first acquire.
    let g = p.acquire();
    assert!(p.is_started());
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (50 * MS, 0));
}

#[test]
fn restart_clears_backlog_and_accumulated_wait() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.0", &clock);
    clock.advance_nanos(10 * MS);
    p.set_rate(Rate::new(500.0).unwrap()).unwrap(); // checkpoints 10 ms
    clock.advance_nanos(4 * MS);
    assert_eq!(
        p.wait_stats(),
        WaitStats {
            backlog_nanos: 4 * MS,
            total_wait_nanos: 14 * MS
        }
    );
    p.apply(&"500,1.0,restart".parse().unwrap()).unwrap();
    assert_eq!(p.wait_stats(), WaitStats::default());
    assert_eq!(p.acquire().wait_nanos(), 0);
}

#[test]
fn stop_checkpoints_and_goes_idle() {
    let clock = ManualClock::new(0);
    let p = pacer("1000", &clock);
    clock.advance_nanos(3 * MS);
    p.stop();
    assert!(!p.is_started());
    assert_eq!(p.accumulated_wait_nanos(), 3 * MS);
    clock.advance_nanos(100 * MS);
    p.start();
    let g = p.acquire();
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (103 * MS, 0));
    assert_eq!(p.wait_stats().total_wait_nanos, 3 * MS);
}

#[test]
fn same_configuration_is_a_no_op() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.1", &clock);
    clock.advance_nanos(5 * MS);
    p.apply(&"1000,1.1".parse().unwrap()).unwrap();
    assert_eq!(p.next_slot_nanos(), 0, "an equal spec must not reset");
    assert_eq!(p.accumulated_wait_nanos(), 0);
}

#[test]
fn invalid_changes_change_nothing() {
    let clock = ManualClock::new(0);
    let p = pacer("1000", &clock);
    assert!(matches!(
        p.set_rate(Rate::new(2e9).unwrap()),
        Err(PacerError::Rate(RateError::TooFast(_)))
    ));
    assert!(matches!(
        p.set_strictness(f64::NAN),
        Err(PacerError::Strictness(StrictnessError::NaN))
    ));
    assert!(matches!(
        p.set_strictness(-0.5),
        Err(PacerError::Strictness(StrictnessError::Negative(_)))
    ));
    assert_eq!(p.rate().get(), 1000.0);
    assert_eq!(p.strictness().get(), 1.1);
    assert!(Pacer::builder(Rate::new(1.0).unwrap())
        .strictness(f64::INFINITY)
        .build()
        .is_err());
}

#[test]
fn bad_permit_counts_are_typed_errors() {
    let clock = ManualClock::new(0);
    let p = pacer("0.25", &clock); // 4 s per op: 2^62 ns holds ~1.15e9 ops
    assert_eq!(p.reserve(0, None), Err(AcquireError::ZeroPermits));
    assert_eq!(p.acquire_n(0), Err(AcquireError::ZeroPermits));
    match p.reserve(u32::MAX, None) {
        Err(AcquireError::InsufficientCapacity { requested, max }) => {
            assert_eq!(requested, u32::MAX);
            assert_eq!(u64::from(max), MAX_SPAN / 4_000_000_000);
        }
        other => panic!("expected InsufficientCapacity, got {other:?}"),
    }
    assert_eq!(p.reserve_nanos(0, None), Err(AcquireError::ZeroPermits));
    assert_eq!(
        p.reserve_nanos(MAX_SPAN + 1, None),
        Err(AcquireError::ScheduleExhausted)
    );
    assert_eq!(p.next_slot_nanos(), 0, "errors reserve nothing");
}

#[test]
fn the_schedule_cannot_wrap() {
    let clock = ManualClock::new(0);
    let p = pacer("0.25", &clock);
    let mut exhausted = false;
    for _ in 0..10 {
        match p.reserve_nanos(MAX_SPAN, None) {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e, AcquireError::ScheduleExhausted);
                exhausted = true;
                break;
            }
        }
    }
    assert!(exhausted);
    assert!(p.next_slot_nanos() <= SCHEDULE_LIMIT);
}

#[test]
fn timeout_refuses_at_once_and_grants_within_it() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.0", &clock);
    p.acquire();
    let err = p
        .acquire_timeout(1, Duration::from_micros(500))
        .unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_millis(1)));
    assert_eq!(clock.now_nanos(), 0, "a refusal does not wait");
    let g = p.acquire_timeout(1, Duration::from_millis(1)).unwrap();
    assert_eq!(g.started_nanos(), MS);
    assert_eq!(clock.now_nanos(), MS);
}

#[test]
fn burst_compensation_forfeits_a_power_of_two_share() {
    let clock = ManualClock::new(0);
    let p = Pacer::builder(Rate::new(1000.0).unwrap())
        .strictness(0.5) // shift 1: half the gap
        .cached_clock(false)
        .build_with_clock(clock.clone())
        .unwrap();
    clock.advance_nanos(9 * MS);
    let g = p.acquire();
    // gap beyond this op's own slot: 9 ms - 1 ms = 8 ms; half is forfeited.
    assert_eq!(g.wait_nanos(), 9 * MS);
    assert_eq!(p.next_slot_nanos(), MS + 4 * MS);
    assert_eq!(p.accumulated_wait_nanos(), 4 * MS);
    assert_eq!(p.wait_stats().total_wait_nanos, 4 * MS + 4 * MS);
}

#[test]
fn weighted_reservations_scale_the_burst_spacing() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,2.0", &clock); // burst slice 500 µs per 1 ms op
    clock.advance_nanos(10 * MS);
    let a = p.acquire_nanos(2 * MS).unwrap();
    let b = p.acquire();
    assert_eq!(a.ready_nanos(), 10 * MS);
    assert_eq!(
        b.ready_nanos(),
        11 * MS,
        "2 ms of schedule is 1 ms of burst spacing"
    );
}

#[test]
fn debug_shows_the_configuration() {
    let p = pacer("1000", &ManualClock::new(0));
    let s = format!("{p:?}");
    assert!(s.contains("Pacer") && s.contains("1000"));
}

/// A clock that goes backwards on every other read.
struct Backwards(crate::sync::AtomicU64);

impl Clock for Backwards {
    fn now_nanos(&self) -> u64 {
        // Ordering: Relaxed; a test counter.
        let n = self.0.fetch_add(1, crate::sync::Ordering::Relaxed);
        if n % 2 == 0 {
            10 * MS + n * MS
        } else {
            MS
        }
    }
    fn sleep_nanos(&self, _nanos: u64) {}
}

#[test]
fn time_going_backwards_is_no_time_passing() {
    for strictness in [0.0, 0.5, 1.0, 1.1] {
        let p = Pacer::builder(Rate::new(1000.0).unwrap())
            .strictness(strictness)
            .cached_clock(false)
            .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
            .build_with_clock(Backwards(crate::sync::AtomicU64::new(0)))
            .unwrap();
        let mut last_slot = None;
        for _ in 0..50 {
            let g = p.acquire();
            assert!(g.ready_nanos() >= g.scheduled_nanos());
            if let Some(prev) = last_slot {
                assert!(g.scheduled_nanos() > prev, "slots move forward");
            }
            last_slot = Some(g.scheduled_nanos());
            let _ = p.try_acquire();
            let _ = p.acquire_timeout(1, Duration::from_millis(2));
            let stats = p.wait_stats();
            assert!(stats.total_wait_nanos >= stats.backlog_nanos);
            let _ = p.schedule_delay_nanos();
        }
        p.set_rate(Rate::new(10.0).unwrap()).unwrap();
        p.stop();
        p.restart();
        let stats = p.wait_stats();
        assert_eq!(stats.total_wait_nanos, stats.backlog_nanos);
    }
}
