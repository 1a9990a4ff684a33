//! Unit tests of the Resilience4j limiters on a manual clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratekeeper::{AcquireError, Clock, Grant, ManualClock, RateLimiter, WaitPolicy};

use super::*;
use crate::test_util::PermitConfigError;

fn refill(
    limit: i64,
    period: i64,
    timeout: i64,
    capacity: Option<i64>,
    initial: Option<i64>,
) -> (RefillLimiter<ManualClock>, ManualClock) {
    let mut b = ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(period)
        .timeout_nanos(timeout);
    if let Some(c) = capacity {
        b = b.permit_capacity(c);
    }
    if let Some(i) = initial {
        b = b.initial_permits(i);
    }
    let clock = ManualClock::new(0);
    let l = RefillLimiter::new_with_clock("test", b.build().unwrap(), clock.clone())
        .with_wait_policy(WaitPolicy::coalesce(Duration::ZERO));
    (l, clock)
}

fn cycle(limit: i64, period: i64, timeout: i64) -> (CycleLimiter<ManualClock>, ManualClock) {
    cycle_at(limit, period, timeout, 0)
}

fn cycle_at(
    limit: i64,
    period: i64,
    timeout: i64,
    start: u64,
) -> (CycleLimiter<ManualClock>, ManualClock) {
    let config = crate::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(period)
        .timeout_nanos(timeout)
        .build_cycle()
        .unwrap();
    let clock = ManualClock::new(start);
    let l = CycleLimiter::new_with_clock("test", config, clock.clone())
        .with_wait_policy(WaitPolicy::coalesce(Duration::ZERO));
    (l, clock)
}

type Log = Arc<Mutex<Vec<(PermitEventKind, u64)>>>;

fn record(events: &EventPublisher<PermitEvent>) -> Log {
    let log: Log = Arc::default();
    let sink = log.clone();
    events.subscribe(move |e: &PermitEvent| sink.lock().unwrap().push((e.kind(), e.permits())));
    log
}

fn take(log: &Log) -> Vec<(PermitEventKind, u64)> {
    std::mem::take(&mut *log.lock().unwrap())
}

use PermitEventKind::{Drained, FailedAcquire as Failed, SuccessfulAcquire as Success};

fn avail(l: &impl PermitLimiter) -> i64 {
    l.metrics().available_permissions
}

fn nanos(l: &impl PermitLimiter, permits: u32) -> i64 {
    l.reserve_permission(permits).unwrap().nanos_to_wait()
}

// ------------------------------------------------------------------ config

#[test]
fn config_defaults_are_resilience4j_s() {
    let c = RefillConfig::default();
    assert_eq!(c, ConfigBuilder::new().build().unwrap());
    assert_eq!(c.limit_for_period(), 50);
    assert_eq!(c.limit_refresh_period(), Duration::from_nanos(500));
    assert_eq!(c.timeout(), Duration::from_secs(5));
    assert_eq!((c.capacity(), c.initial_permits()), (50, 50));
    assert_eq!(
        (c.nanos_per_permit(), c.nanos_per_full_capacity()),
        (10, 500)
    );
    let c = CycleConfig::default();
    assert_eq!(c, ConfigBuilder::new().build_cycle().unwrap());
    assert_eq!(
        c.view(),
        ConfigView {
            limit_for_period: 50,
            limit_refresh_period: Duration::from_nanos(500),
            timeout: Duration::from_secs(5),
        }
    );
}

#[test]
fn config_capacity_and_initial_default_to_the_limit() {
    let c = ConfigBuilder::new()
        .limit_for_period(50)
        .permit_capacity(60)
        .build()
        .unwrap();
    assert_eq!((c.capacity(), c.initial_permits()), (60, 50));
    assert_eq!(c.view().limit_for_period, 60);
    assert_eq!(c.view().limit_refresh_period, Duration::from_nanos(600));
}

#[test]
fn config_errors_in_order() {
    use PermitConfigError::*;
    let b = ConfigBuilder::new;
    assert_eq!(
        b().limit_for_period(0).build(),
        Err(InvalidLimitForPeriod(0).into())
    );
    assert_eq!(
        b().limit_for_period(-1).build(),
        Err(InvalidLimitForPeriod(-1).into())
    );
    // The limit is checked before the period.
    assert_eq!(
        b().limit_for_period(0)
            .limit_refresh_period_nanos(0)
            .build(),
        Err(InvalidLimitForPeriod(0).into())
    );
    assert_eq!(
        b().limit_refresh_period_nanos(0).build(),
        Err(InvalidLimitRefreshPeriod(0).into())
    );
    assert_eq!(
        b().limit_refresh_period_nanos(-1).build_cycle(),
        Err(InvalidLimitRefreshPeriod(-1).into())
    );
    let secs = Duration::from_secs(i64::MAX as u64);
    assert_eq!(
        b().limit_refresh_period(secs).build(),
        Err(LimitRefreshPeriodTooLarge(secs.as_nanos() as i128).into())
    );
    assert_eq!(
        b().timeout(Duration::MAX).build_cycle(),
        Err(TimeoutTooLarge(Duration::MAX.as_nanos() as i128).into())
    );
    assert_eq!(
        b().timeout_nanos(-1).build(),
        Err(NegativeTimeout(-1).into())
    );
    assert_eq!(
        b().limit_for_period(2)
            .limit_refresh_period_nanos(1)
            .build(),
        Err(ZeroNanosPerPermit {
            limit: 2,
            period_nanos: 1
        }
        .into())
    );
    // The cycle limiter has no nanos-per-permit rule.
    assert!(b()
        .limit_for_period(i32::MAX as i64)
        .limit_refresh_period_nanos(1)
        .build_cycle()
        .is_ok());
    assert_eq!(
        b().limit_for_period(10).permit_capacity(9).build(),
        Err(CapacityBelowLimit {
            capacity: 9,
            limit: 10
        }
        .into())
    );
    assert_eq!(
        b().limit_for_period(10).permit_capacity(0).build(),
        Err(CapacityBelowLimit {
            capacity: 0,
            limit: 10
        }
        .into())
    );
    assert_eq!(
        b().permit_capacity(5)
            .limit_for_period(1)
            .initial_permits(-3)
            .build(),
        Err(InitialPermitsOutOfRange {
            initial: -3,
            capacity: 5
        }
        .into())
    );
    assert_eq!(
        b().limit_for_period(10).initial_permits(11).build(),
        Err(InitialPermitsOutOfRange {
            initial: 11,
            capacity: 10
        }
        .into())
    );
    assert_eq!(
        b().limit_for_period(1)
            .limit_refresh_period_nanos(i64::MAX)
            .permit_capacity(2)
            .build(),
        Err(NanosPerFullCapacityOverflow {
            nanos_per_permit: i64::MAX,
            capacity: 2
        }
        .into())
    );
    assert_eq!(
        b().permit_capacity(50).build_cycle(),
        Err(CapacityNotSupported.into())
    );
    assert_eq!(
        b().initial_permits(0).build_cycle(),
        Err(CapacityNotSupported.into())
    );
}

#[test]
fn config_boundaries_are_accepted() {
    let c = crate::compat::ConfigBuilder::new()
        .limit_for_period(1)
        .limit_refresh_period_nanos(i64::MAX)
        .timeout_nanos(i64::MAX)
        .build()
        .unwrap();
    assert_eq!(c.nanos_per_permit(), i64::MAX as u64);
    assert_eq!(c.timeout(), Duration::from_nanos(i64::MAX as u64));
    let c = crate::compat::ConfigBuilder::new()
        .limit_for_period(1)
        .limit_refresh_period_nanos(1)
        .permit_capacity(i64::MAX)
        .initial_permits(0)
        .build()
        .unwrap();
    assert_eq!(c.nanos_per_full_capacity(), i64::MAX as u64);
}

#[test]
fn config_error_messages_are_short_and_lowercase() {
    let all = [
        PermitConfigError::InvalidLimitForPeriod(0),
        PermitConfigError::InvalidLimitRefreshPeriod(0),
        PermitConfigError::LimitRefreshPeriodTooLarge(1 << 70),
        PermitConfigError::ZeroNanosPerPermit {
            limit: 2,
            period_nanos: 1,
        },
        PermitConfigError::NegativeTimeout(-1),
        PermitConfigError::TimeoutTooLarge(1 << 70),
        PermitConfigError::CapacityBelowLimit {
            capacity: 1,
            limit: 2,
        },
        PermitConfigError::InitialPermitsOutOfRange {
            initial: -1,
            capacity: 2,
        },
        PermitConfigError::NanosPerFullCapacityOverflow {
            nanos_per_permit: 2,
            capacity: i64::MAX,
        },
        PermitConfigError::CapacityNotSupported,
    ];
    for e in all {
        let s = e.to_string();
        assert!(!s.ends_with('.'), "{s}");
        assert!(
            s.chars().next().unwrap().is_lowercase() || s.starts_with(char::is_numeric),
            "{s}"
        );
    }
    assert_eq!(
        PermitError::InvalidPermits.to_string(),
        "permits must be at least 1"
    );
}

#[test]
fn config_builder_merges_and_round_trips() {
    let defaults = ConfigBuilder::new().limit_for_period(10).timeout_nanos(7);
    let one = ConfigBuilder::new()
        .permit_capacity(30)
        .timeout(Duration::from_nanos(9));
    let merged = defaults.overwrite(one);
    assert_eq!(merged.get_limit_for_period(), 10);
    assert_eq!(merged.get_timeout_nanos(), 9);
    assert_eq!(merged.get_permit_capacity(), Some(30));
    assert_eq!(merged.get_initial_permits(), None);
    let seeded = merged.overwrite(ConfigBuilder::new().initial_permits(3));
    assert_eq!(seeded.get_initial_permits(), Some(3));
    assert_eq!(seeded.get_permit_capacity(), Some(30));
    assert_eq!(ConfigBuilder::new().get_limit_refresh_period_nanos(), 500);
    let c = merged.build().unwrap();
    assert_eq!(ConfigBuilder::from(&c).build(), Ok(c));
    assert_eq!(RefillConfig::try_from(ConfigBuilder::from(&c)), Ok(c));
    let cc = ConfigBuilder::new()
        .limit_for_period(3)
        .build_cycle()
        .unwrap();
    assert_eq!(CycleConfig::try_from(ConfigBuilder::from(&cc)), Ok(cc));
    // A refill config with capacity is not a cycle config.
    assert_eq!(
        ConfigBuilder::from(&c).build_cycle(),
        Err(PermitConfigError::CapacityNotSupported.into())
    );
}

// ------------------------------------------------------------------ refill

#[test]
fn refill_never_over_admits_after_long_idle() {
    // Spec §1.6-A: refill-rate-limiter grants 4 + 5 = 9 here.
    let (l, clock) = refill(5, 500, 0, None, Some(5));
    clock.set_nanos(10_000);
    assert_eq!(avail(&l), 5);
    assert!(l.acquire_permission(4).unwrap());
    assert_eq!(avail(&l), 1);
    assert!(!l.acquire_permission(5).unwrap());
    assert!(l.acquire_permission(1).unwrap());
    assert_eq!(avail(&l), 0);
}

#[test]
fn refill_never_grants_twice_the_capacity_at_once() {
    // Spec §1.6-A: upstream grants 5 + 5 on a fresh limiter at t = 500.
    let (l, clock) = refill(5, 500, 0, None, Some(5));
    clock.set_nanos(500);
    assert!(l.acquire_permission(5).unwrap());
    assert!(!l.acquire_permission(5).unwrap());
    assert!(!l.acquire_permission(1).unwrap());
}

#[test]
fn refill_never_over_admits_within_400ns() {
    // Spec §1.6-A: upstream grants 1 + 5 + 3 = 9 in 400 ns; strict: 1 + 5.
    let (l, clock) = refill(5, 500, 0, None, Some(5));
    assert!(l.acquire_permission(1).unwrap());
    clock.set_nanos(400);
    assert_eq!(avail(&l), 5);
    assert!(l.acquire_permission(5).unwrap());
    assert!(!l.acquire_permission(3).unwrap());
    assert!(!l.acquire_permission(1).unwrap());
}

#[test]
fn refill_reserves_within_the_timeout_and_refuses_beyond() {
    let (l, clock) = refill(1, 100, 250, Some(2), Some(2));
    assert_eq!(l.reserve_permission(2).unwrap(), Permission::Now);
    assert_eq!(
        l.reserve_permission(1).unwrap(),
        Permission::After(Duration::from_nanos(100))
    );
    assert_eq!(nanos(&l, 1), 200);
    let before = l.metrics();
    assert_eq!(before.available_permissions, -2);
    assert_eq!(before.nanos_to_wait, 300);
    assert_eq!(l.reserve_permission(1).unwrap(), Permission::Refused);
    assert_eq!(l.metrics(), before, "a refusal changed the limiter");
    clock.set_nanos(200);
    assert_eq!(avail(&l), 0);
    clock.set_nanos(300);
    assert_eq!(avail(&l), 1);
}

#[test]
fn refill_wait_equal_to_the_timeout_is_granted() {
    let (l, _clock) = refill(1, 100, 100, None, Some(1));
    assert_eq!(nanos(&l, 1), 0);
    assert_eq!(nanos(&l, 1), 100);
    assert_eq!(nanos(&l, 1), -1);
}

#[test]
fn refill_typed_errors_change_nothing_and_publish_nothing() {
    let (l, _clock) = refill(5, 500, 1_000, None, None);
    let log = record(l.events());
    let before = l.metrics();
    assert_eq!(l.reserve_permission(0), Err(PermitError::InvalidPermits));
    assert_eq!(l.acquire_permission(0), Err(PermitError::InvalidPermits));
    assert_eq!(
        l.begin_acquire_permission(6).map(|p| p.is_granted()),
        Err(PermitError::ExceedsCapacity {
            requested: 6,
            capacity: 5
        })
    );
    assert_eq!(
        RateLimiter::reserve(&l, 6, None),
        Err(AcquireError::InsufficientCapacity {
            requested: 6,
            max: 5
        })
    );
    assert_eq!(
        RateLimiter::reserve(&l, 0, None),
        Err(AcquireError::ZeroPermits)
    );
    assert_eq!(l.metrics(), before);
    assert!(take(&log).is_empty());
}

#[test]
fn refill_initial_permits_zero_and_partial() {
    let (l, clock) = refill(10, 1_000_000_000, 0, None, Some(0));
    assert_eq!(avail(&l), 0);
    assert_eq!(l.metrics().nanos_to_wait, 100_000_000);
    assert!(!l.acquire_permission(1).unwrap());
    clock.set_nanos(99_999_999);
    assert_eq!(l.metrics().nanos_to_wait, 1);
    clock.set_nanos(350_000_000);
    assert_eq!(avail(&l), 3);
    assert!(l.acquire_permission(3).unwrap());
    assert_eq!(l.metrics().nanos_to_wait, 50_000_000);
    // Initial permits below the capacity: the bucket fills to the capacity.
    let (l, clock) = refill(1, 100, 0, Some(5), Some(2));
    assert_eq!(avail(&l), 2);
    clock.set_nanos(250);
    assert_eq!(avail(&l), 4);
    clock.set_nanos(1_000_000);
    assert_eq!(avail(&l), 5);
}

#[test]
fn refill_truncates_nanos_per_permit() {
    let (l, clock) = refill(3, 1_000_000_000, 0, None, Some(0));
    assert_eq!(l.config().nanos_per_permit(), 333_333_333);
    assert_eq!(
        l.config_view().limit_refresh_period,
        Duration::from_nanos(999_999_999)
    );
    clock.set_nanos(999_999_998);
    assert_eq!(avail(&l), 2);
    clock.set_nanos(999_999_999);
    assert!(l.acquire_permission(3).unwrap());
}

#[test]
fn refill_drain_drops_stored_and_partial_permits_and_keeps_reservations() {
    let (l, clock) = refill(5, 500, 1_000, None, Some(5));
    let log = record(l.events());
    assert!(l.acquire_permission(2).unwrap());
    assert_eq!(l.drain_permissions(), 3);
    assert_eq!(take(&log), [(Success, 2), (Drained, 3)]);
    assert_eq!(avail(&l), 0);
    assert_eq!(l.metrics().nanos_to_wait, 100);
    // The partial permit is dropped too: a full permit's time again.
    clock.set_nanos(50);
    assert_eq!(l.drain_permissions(), 0);
    assert_eq!(l.metrics().nanos_to_wait, 100);
    // Reservations survive a drain.
    assert_eq!(nanos(&l, 2), 200);
    assert_eq!(avail(&l), -2);
    assert_eq!(l.drain_permissions(), 0);
    assert_eq!(avail(&l), -2);
    assert_eq!(take(&log), [(Drained, 0), (Success, 2), (Drained, 0)]);
}

#[test]
fn refill_limit_change_does_not_compound() {
    let (l, _clock) = refill(10, 1_000_000_000, 0, None, None);
    l.change_limit_for_period(20).unwrap();
    l.change_limit_for_period(20).unwrap();
    let c = l.config();
    assert_eq!(c.limit_for_period(), 20);
    assert_eq!(c.nanos_per_permit(), 50_000_000);
    assert_eq!(c.capacity(), 20);
    assert_eq!(
        l.config_view(),
        ConfigView {
            limit_for_period: 20,
            limit_refresh_period: Duration::from_secs(1),
            timeout: Duration::ZERO
        }
    );
    // The 10 stored permits are kept (not 20: nothing minted).
    assert_eq!(avail(&l), 10);
}

#[test]
fn refill_limit_change_keeps_the_token_count() {
    // Debt: one permit owed, kept as one permit at the new rate.
    let (l, clock) = refill(2, 1_000, 1_000, Some(2), Some(2));
    assert!(l.acquire_permission(2).unwrap());
    let pending = l.begin_acquire_permission(1).unwrap();
    assert_eq!(pending.delay(), Duration::from_nanos(500));
    l.change_limit_for_period(4).unwrap();
    assert_eq!(avail(&l), -1);
    assert_eq!(l.metrics().nanos_to_wait, 500);
    assert_eq!(l.metrics().waiting_threads, 1);
    clock.set_nanos(pending.ready_at_nanos());
    assert!(pending.finish());
    assert_eq!(avail(&l), 1);
    // Lowering the rate keeps the earned permits.
    let (l, clock) = refill(10, 1_000_000_000, 0, None, Some(0));
    clock.set_nanos(500_000_000);
    l.change_limit_for_period(5).unwrap();
    assert_eq!(avail(&l), 5);
    assert_eq!(l.config().capacity(), 10);
    assert_eq!(l.config_view().limit_refresh_period, Duration::from_secs(2));
    clock.set_nanos(700_000_000);
    assert_eq!(avail(&l), 6);
    assert!(l.acquire_permission(6).unwrap());
    assert!(!l.acquire_permission(1).unwrap());
}

#[test]
fn refill_limit_change_rounds_debt_toward_more_debt() {
    // 6 ns owed at 5 ns per permit (1.2 permits); at 1 ns per permit the
    // re-based debt rounds to 2 ns (never to fewer).
    let (l, clock) = refill(1, 5, 6, Some(1), Some(0));
    clock.set_nanos(0);
    assert_eq!(nanos(&l, 1), 5);
    assert_eq!(avail(&l), -1);
    clock.set_nanos(4); // E = 5: owed 1 ns = 0.2 permits
    assert_eq!(avail(&l), 0);
    l.change_limit_for_period(5).unwrap(); // 1 ns per permit, capacity 5
    assert_eq!(l.metrics().nanos_to_wait, 2);
}

#[test]
fn refill_failed_limit_changes_leave_the_limiter_unchanged() {
    let (l, clock) = refill(2, 1_000, 0, None, None);
    clock.set_nanos(100);
    let before = (l.config(), l.metrics());
    assert_eq!(
        l.change_limit_for_period(0),
        Err(PermitConfigError::InvalidLimitForPeriod(0).into())
    );
    assert_eq!(
        compat::change_limit_for_period(&l, -3),
        Err(PermitConfigError::InvalidLimitForPeriod(-3).into())
    );
    assert_eq!(
        l.change_limit_for_period(1_001),
        Err(PermitConfigError::ZeroNanosPerPermit {
            limit: 1_001,
            period_nanos: 1_000
        }
        .into())
    );
    assert_eq!((l.config(), l.metrics()), before);
    // Lowering the limit of a huge bucket would overflow its fill time.
    let (l, _) = refill(2, 2, 0, Some(i64::MAX), Some(0));
    assert_eq!(
        l.change_limit_for_period(1),
        Err(PermitConfigError::NanosPerFullCapacityOverflow {
            nanos_per_permit: 2,
            capacity: i64::MAX
        }
        .into())
    );
    assert_eq!(l.config().limit_for_period(), 2);
}

#[test]
fn refill_timeout_changes_apply_to_the_next_call() {
    let (l, _clock) = refill(1, 1_000, 0, None, None);
    assert!(l.acquire_permission(1).unwrap());
    assert_eq!(nanos(&l, 1), -1);
    l.change_timeout(Duration::from_nanos(999)).unwrap();
    assert_eq!(nanos(&l, 1), -1);
    compat::change_timeout_nanos(&l, 1_000).unwrap();
    assert_eq!(nanos(&l, 1), 1_000);
    assert_eq!(
        compat::change_timeout_nanos(&l, -1),
        Err(PermitConfigError::NegativeTimeout(-1).into())
    );
    assert_eq!(
        l.change_timeout(Duration::MAX),
        Err(PermitConfigError::TimeoutTooLarge(Duration::MAX.as_nanos() as i128).into())
    );
    assert_eq!(l.config().timeout(), Duration::from_nanos(1_000));
}

#[test]
fn refill_pending_acquisitions_count_as_waiting_until_they_end() {
    let (l, clock) = refill(1, 1_000, 5_000, Some(1), Some(1));
    let log = record(l.events());
    assert!(l.acquire_permission(1).unwrap());
    let c1 = l.begin_acquire_permission(1).unwrap();
    let c2 = l.begin_acquire_permission(1).unwrap();
    assert!(c1.is_waiting() && c2.is_waiting());
    assert_eq!((c1.permits(), c1.decided_at_nanos()), (1, 0));
    assert_eq!((c1.ready_at_nanos(), c2.ready_at_nanos()), (1_000, 2_000));
    assert_eq!(l.metrics().waiting_threads, 2);
    // Interrupted: false, the reservation stays spent.
    assert!(!c1.abandon());
    assert_eq!(l.metrics().waiting_threads, 1);
    assert_eq!(avail(&l), -2);
    clock.set_nanos(2_000);
    assert!(c2.finish());
    assert_eq!(avail(&l), 0);
    // Dropped: abandoned.
    drop(l.begin_acquire_permission(1).unwrap());
    assert_eq!(l.metrics().waiting_threads, 0);
    assert_eq!(avail(&l), -1);
    assert_eq!(
        take(&log),
        [(Success, 1), (Failed, 1), (Success, 1), (Failed, 1)]
    );
}

#[test]
fn refill_refused_acquisition_fails_fast_and_publishes_at_once() {
    let (l, clock) = refill(1, 1_000, 500, Some(1), Some(0));
    let log = record(l.events());
    let p = l.begin_acquire_permission(1).unwrap();
    assert!(!p.is_granted() && !p.is_waiting());
    assert_eq!(p.delay(), Duration::ZERO);
    assert_eq!(l.metrics().waiting_threads, 0);
    assert_eq!(take(&log), [(Failed, 1)]);
    assert!(!p.wait());
    assert!(take(&log).is_empty(), "a refusal publishes once");
    assert_eq!(clock.now_nanos(), 0, "a refusal never waits");
}

#[test]
fn refill_blocking_acquire_waits_on_the_clock() {
    let (l, clock) = refill(1, 1_000, 1_000, Some(1), Some(1));
    assert!(l.acquire_permission(1).unwrap());
    assert!(l.acquire_permission(1).unwrap()); // sleeps 1000 ns (manual: advances)
    assert_eq!(clock.now_nanos(), 1_000);
    assert!(l.begin_acquire_permission(1).unwrap().wait());
    assert_eq!(clock.now_nanos(), 2_000);
    assert_eq!(l.metrics().waiting_threads, 0);
}

#[test]
fn refill_on_result_drains_only_when_asked() {
    let (l, _clock) = refill(5, 3_600_000_000_000, 0, None, None);
    assert!(l.acquire_permission(1).unwrap());
    let ok: Result<u8, ()> = Ok(1);
    assert_eq!(l.on_result(&ok, |_| false), None);
    assert_eq!(avail(&l), 4);
    assert_eq!(l.on_result(&ok, |r| r.is_ok()), Some(4));
    assert_eq!(avail(&l), 0);
}

#[test]
fn refill_rate_limiter_interface() {
    let (l, clock) = refill(1, 100, 0, Some(2), Some(2));
    let log = record(l.events());
    let g = l.try_acquire_n(2).unwrap();
    assert_eq!(
        (g.scheduled_nanos(), g.ready_nanos(), g.permits()),
        (0, 0, 2)
    );
    assert_eq!(
        l.try_acquire(),
        Err(AcquireError::WouldWait {
            wait: Duration::from_nanos(100),
            max_wait: Duration::ZERO
        })
    );
    // Unbounded: reserved whatever the configured timeout.
    let g = RateLimiter::reserve(&l, 2, None).unwrap();
    assert_eq!((g.ready_nanos(), g.delay_nanos()), (200, 200));
    assert_eq!(l.wait_stats().backlog_nanos, 200);
    let g = l.acquire(); // blocks until 300
    assert_eq!(g.ready_nanos(), 300);
    assert_eq!(clock.now_nanos(), 300);
    assert_eq!(l.wait_stats().backlog_nanos, 0);
    assert_eq!(l.wait_policy(), WaitPolicy::coalesce(Duration::ZERO));
    assert_eq!(l.clock().now_nanos(), 300);
    assert_eq!(
        take(&log),
        [(Success, 2), (Failed, 1), (Success, 2), (Success, 1)]
    );
}

#[test]
fn refill_extreme_values_never_panic() {
    // The longest period, the largest bucket, the largest timeout, a clock at
    // its end: every call answers.
    let configs = [
        (1, i64::MAX, i64::MAX, None, None),
        (1, 1, i64::MAX, Some(i64::MAX), Some(i64::MAX)),
        (i64::MAX, i64::MAX, 0, None, Some(0)),
        (1, 1, 0, None, Some(0)),
    ];
    for (limit, period, timeout, cap, init) in configs {
        let (l, clock) = refill(limit, period, timeout, cap, init);
        for t in [0, 1, i64::MAX as u64, u64::MAX - 1, u64::MAX] {
            clock.set_nanos(t);
            for n in [1, 2, u32::MAX] {
                let _ = l.reserve_permission(n);
                let _ = l
                    .begin_acquire_permission(n)
                    .map(PendingPermission::abandon);
                let _ = RateLimiter::reserve(&l, n, None);
                let _ = RateLimiter::reserve(&l, n, Some(Duration::MAX));
            }
            let m = l.metrics();
            assert!(m.available_permissions <= l.config().capacity());
            l.drain_permissions();
            let _ = compat::change_limit_for_period(&l, limit.saturating_add(1));
            let _ = compat::change_limit_for_period(&l, i64::MAX);
            let _ = l.wait_stats();
            let _ = format!("{l:?}");
        }
    }
}

#[test]
fn refill_reservations_stop_at_the_time_horizon() {
    // 2^62 ns per permit with an unlimited wait: the third reservation would
    // end past 2^63 ns after creation.
    let (l, _clock) = refill(1, 1 << 62, i64::MAX, None, Some(1));
    assert!(RateLimiter::reserve(&l, 1, None).is_ok());
    assert!(RateLimiter::reserve(&l, 1, None).is_ok());
    assert_eq!(
        RateLimiter::reserve(&l, 1, None),
        Err(AcquireError::ScheduleExhausted)
    );
    assert_eq!(l.reserve_permission(1), Ok(Permission::Refused));
    assert_eq!(avail(&l), -1);
    // With a timeout too: never, not "not now" (issue 16); a failed
    // acquire either way.
    let log = record(l.events());
    assert_eq!(
        RateLimiter::reserve(&l, 1, Some(Duration::from_secs(1))),
        Err(AcquireError::ScheduleExhausted)
    );
    assert_eq!(
        RateLimiter::reserve(&l, 1, None),
        Err(AcquireError::ScheduleExhausted)
    );
    assert_eq!(take(&log), [(Failed, 1), (Failed, 1)]);
}

#[test]
fn refill_names_views_and_forwarding() {
    let l = Arc::new(RefillLimiter::of_defaults("svc"));
    assert_eq!(l.name(), "svc");
    assert_eq!(PermitLimiter::name(&&*l), "svc");
    assert_eq!(l.config_view(), RefillConfig::default().view());
    assert!(format!("{:?}", l).contains("svc"));
    let by_ref: &dyn PermitLimiter = &*l;
    assert_eq!(by_ref.metrics().waiting_threads, 0);
    let r = RefillLimiter::new(String::from("owned"), RefillConfig::default());
    assert_eq!(r.name(), "owned");
}

// ------------------------------------------------------------------ events

#[test]
fn events_filtered_subscriptions_and_unsubscribe() {
    let (l, _clock) = refill(1, 1_000, 0, None, None);
    let hits = Arc::new(Mutex::new(Vec::new()));
    let (h1, h2, h3) = (hits.clone(), hits.clone(), hits.clone());
    let s = l
        .events()
        .on_success(move |e| h1.lock().unwrap().push(("ok", e.permits())));
    l.events()
        .on_failure(move |e| h2.lock().unwrap().push(("fail", e.permits())));
    l.events()
        .on_drained(move |e| h3.lock().unwrap().push(("drain", e.permits())));
    assert_eq!(l.events().subscriber_count(), 3);
    assert!(l.acquire_permission(1).unwrap());
    assert!(!l.acquire_permission(1).unwrap());
    assert!(l.events().unsubscribe(s));
    assert!(!l.events().unsubscribe(s));
    l.drain_permissions();
    assert_eq!(
        *hits.lock().unwrap(),
        [("ok", 1), ("fail", 1), ("drain", 0)]
    );
}

#[test]
fn events_carry_name_kind_and_time() {
    let (l, clock) = refill(1, 1_000, 0, None, None);
    let seen = Arc::new(Mutex::new(None));
    let sink = seen.clone();
    l.events()
        .on_event(move |e| *sink.lock().unwrap() = Some(e.clone()));
    clock.set_nanos(42);
    assert!(l.acquire_permission(1).unwrap());
    let e = seen.lock().unwrap().take().unwrap();
    assert_eq!(e.limiter_name(), "test");
    assert_eq!(e.kind(), Success);
    assert_eq!(e.kind().to_string(), "SUCCESSFUL_ACQUIRE");
    assert_eq!((e.permits(), e.clock_nanos()), (1, 42));
    assert!(e.created_at() <= std::time::SystemTime::now());
    assert_eq!(Failed.as_str(), "FAILED_ACQUIRE");
    assert_eq!(Drained.as_str(), "DRAINED");
}

#[test]
fn events_are_not_built_without_subscribers() {
    let p = EventPublisher::<u32>::default();
    assert!(!p.has_subscribers());
    p.publish_with(|| panic!("built an event nobody listens to"));
    let id = p.subscribe(|_| {});
    assert!(p.has_subscribers());
    p.unsubscribe(id);
    p.publish_with(|| panic!("built an event after the last unsubscribe"));
    assert!(format!("{p:?}").contains("subscribers: 0"));
}

#[test]
fn events_subscribers_may_reenter_the_limiter() {
    let (l, _clock) = refill(1, 1_000, 0, None, None);
    let l = Arc::new(l);
    let inner = Arc::downgrade(&l);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    l.events().on_success(move |_| {
        if let Some(l) = inner.upgrade() {
            sink.lock().unwrap().push(l.metrics().available_permissions);
        }
    });
    assert!(l.acquire_permission(1).unwrap());
    assert_eq!(*seen.lock().unwrap(), [0]);
}

// ------------------------------------------------------------------ cycle

#[test]
fn cycle_grants_the_limit_per_cycle() {
    let (l, clock) = cycle(10, 500, 0);
    assert_eq!(avail(&l), 10);
    assert!(l.acquire_permission(5).unwrap());
    assert!(l.acquire_permission(5).unwrap());
    assert!(!l.acquire_permission(1).unwrap());
    clock.set_nanos(500);
    assert_eq!(avail(&l), 10);
    assert_eq!(l.metrics().cycle, Some(1));
    // Unused permits do not carry over.
    clock.set_nanos(5_000);
    assert_eq!(avail(&l), 10);
}

#[test]
fn cycle_drain_after_rollover_empties_the_refreshed_cycle() {
    // Spec §2.9-A: upstream leaves 3 here (drains the stale 7 of 10).
    let (l, clock) = cycle(10, 1_000, 0);
    let log = record(l.events());
    assert!(l.acquire_permission(3).unwrap());
    clock.set_nanos(5_000);
    assert_eq!(l.drain_permissions(), 10);
    assert_eq!(avail(&l), 0);
    assert!(!l.acquire_permission(1).unwrap());
    clock.set_nanos(6_000);
    assert_eq!(avail(&l), 10);
    assert_eq!(take(&log), [(Success, 3), (Drained, 10), (Failed, 1)]);
    // Spec §2.9-A: upstream drains nothing here.
    let (l, clock) = cycle(10, 1_000, 0);
    assert!(l.acquire_permission(10).unwrap());
    clock.set_nanos(1_000);
    assert_eq!(l.drain_permissions(), 10);
    assert!(!l.acquire_permission(10).unwrap());
}

#[test]
fn cycle_drain_keeps_reservations() {
    // Spec §2.9-B: upstream cancels the 2 promised permits.
    let (l, clock) = cycle(10, 1_000, 1_000);
    assert_eq!(nanos(&l, 10), 0);
    assert_eq!(nanos(&l, 2), 1_000);
    assert_eq!(l.drain_permissions(), 0);
    assert_eq!(avail(&l), -2);
    clock.set_nanos(1_000);
    assert_eq!(avail(&l), 8);
}

#[test]
fn cycle_multi_cycle_waits_and_timeout_boundary() {
    let (l, clock) = cycle(2, 1_000, 3_000);
    let p = l.begin_acquire_permission(5).unwrap();
    assert_eq!(p.delay(), Duration::from_nanos(2_000));
    assert_eq!(avail(&l), -3);
    // One more permit: cycle 1 leaves -1, cycle 2 has 1.
    assert_eq!(l.metrics().nanos_to_wait, 2_000);
    assert_eq!(l.wait_stats().backlog_nanos, 2_000);
    clock.set_nanos(1_999);
    assert_eq!(avail(&l), -1);
    clock.set_nanos(2_000);
    assert!(p.finish());
    assert_eq!(avail(&l), 1);
    // wait == timeout is granted, one more nanosecond is not.
    let (l, clock) = cycle(1, 1_000, 600);
    clock.set_nanos(400);
    assert_eq!(nanos(&l, 1), 0);
    assert_eq!(nanos(&l, 1), 600);
    assert_eq!(nanos(&l, 1), -1);
    compat::change_timeout_nanos(&l, 1_599).unwrap();
    assert_eq!(nanos(&l, 1), -1);
    compat::change_timeout_nanos(&l, 1_600).unwrap();
    assert_eq!(nanos(&l, 1), 1_600);
}

#[test]
fn cycle_limit_change_applies_from_the_next_cycle() {
    let (l, clock) = cycle(10, 1_000, 0);
    assert!(l.acquire_permission(2).unwrap());
    l.change_limit_for_period(5).unwrap();
    assert_eq!(l.config().limit_for_period(), 5);
    assert_eq!(avail(&l), 8);
    clock.set_nanos(1_000);
    assert_eq!(avail(&l), 5);
    // After idle cycles the skipped cycles are settled with the old limit:
    // the current cycle keeps a full old-limit count.
    let (l, clock) = cycle(10, 1_000, 0);
    assert!(l.acquire_permission(10).unwrap());
    clock.set_nanos(5_500);
    l.change_limit_for_period(2).unwrap();
    assert_eq!(avail(&l), 10);
    clock.set_nanos(6_000);
    assert_eq!(avail(&l), 2);
    // Reservations are kept across a change.
    let (l, clock) = cycle(1, 250, 250);
    clock.set_nanos(250);
    assert!(l.acquire_permission(1).unwrap());
    let p = l.begin_acquire_permission(1).unwrap();
    l.change_limit_for_period(2).unwrap();
    assert_eq!(avail(&l), -1);
    assert_eq!(l.metrics().nanos_to_wait, 250);
    clock.set_nanos(510);
    assert!(p.finish());
    assert_eq!(avail(&l), 1);
    assert_eq!(
        l.change_limit_for_period(0),
        Err(PermitConfigError::InvalidLimitForPeriod(0).into())
    );
}

#[test]
fn cycle_is_aligned_to_creation() {
    let (l, clock) = cycle_at(1, 250_000_000, 0, 123);
    assert!(l.acquire_permission(1).unwrap());
    clock.set_nanos(250_000_000);
    assert!(!l.acquire_permission(1).unwrap());
    assert_eq!(l.metrics().cycle, Some(0));
    assert_eq!(l.metrics().nanos_to_wait, 123);
    clock.set_nanos(250_000_123);
    assert_eq!(l.metrics().cycle, Some(1));
    assert!(l.acquire_permission(1).unwrap());
}

#[test]
fn cycle_overflow_is_refused_or_saturated_not_wrapped() {
    // Upstream: the 2^63 ns wait wraps negative and 3 permits go at once.
    let (l, _clock) = cycle(1, 1 << 62, 1_000_000_000);
    assert_eq!(l.reserve_permission(3), Ok(Permission::Refused));
    assert_eq!(avail(&l), 1);
    assert_eq!(l.metrics().nanos_to_wait, 0);
    assert_eq!(
        RateLimiter::reserve(&l, 3, None),
        Err(AcquireError::ScheduleExhausted)
    );
    // Upstream: 2^34 cycles × 2^30 wraps to 0 permits refreshed.
    let (l, clock) = cycle(1 << 30, 1, 0);
    assert!(l.acquire_permission(1 << 30).unwrap());
    clock.set_nanos(1 << 34);
    assert_eq!(avail(&l), 1 << 30);
    assert!(l.acquire_permission(1).unwrap());
}

#[test]
fn cycle_invalid_permits_change_nothing() {
    let (l, _clock) = cycle(10, 1_000, 1_000);
    let log = record(l.events());
    assert_eq!(l.reserve_permission(0), Err(PermitError::InvalidPermits));
    assert_eq!(
        l.begin_acquire_permission(0).map(|p| p.finish()),
        Err(PermitError::InvalidPermits)
    );
    assert_eq!(avail(&l), 10);
    assert!(take(&log).is_empty());
}

#[test]
fn cycle_extreme_values_never_panic() {
    for (limit, period, timeout) in [
        (1, i64::MAX, i64::MAX),
        (i64::MAX, 1, i64::MAX),
        (i64::MAX, i64::MAX, 0),
        (1, 1, i64::MAX),
    ] {
        let (l, clock) = cycle(limit, period, timeout);
        for t in [0, 1, i64::MAX as u64, u64::MAX] {
            clock.set_nanos(t);
            for n in [1, u32::MAX] {
                let _ = l.reserve_permission(n);
                let _ = l.reserve_permission(n);
                let _ = l
                    .begin_acquire_permission(n)
                    .map(PendingPermission::abandon);
                let _ = RateLimiter::reserve(&l, n, None);
            }
            let _ = l.metrics();
            l.drain_permissions();
            let _ = compat::change_limit_for_period(&l, i64::MAX);
            let _ = l.change_limit_for_period(1);
            let _ = l.wait_stats();
            let _ = format!("{l:?}");
        }
    }
}

#[test]
fn cycle_rate_limiter_interface_and_names() {
    let (l, clock) = cycle(2, 1_000, 0);
    assert_eq!(l.name(), "test");
    assert!(l.try_acquire_n(2).is_ok());
    let g = RateLimiter::reserve(&l, 3, None).unwrap();
    // 3 more: cycle 1 gives 2, cycle 2 the third: ready at 2000.
    assert_eq!(g.ready_nanos(), 2_000);
    assert_eq!(l.wait_stats().backlog_nanos, 2_000);
    clock.set_nanos(2_000);
    assert_eq!(avail(&l), 1);
    assert_eq!(l.config_view().limit_for_period, 2);
    let d = CycleLimiter::of_defaults("d");
    assert_eq!(d.config(), CycleConfig::default());
    assert!(format!("{d:?}").contains("CycleLimiter"));
}

#[test]
fn permission_helpers() {
    assert!(Permission::Now.is_granted());
    assert!(Permission::After(Duration::from_nanos(1)).is_granted());
    assert!(!Permission::Refused.is_granted());
    assert_eq!(Permission::After(Duration::MAX).nanos_to_wait(), i64::MAX);
}

// ------------------------------------------------------------------ cancel

/// Everything a caller can observe of a limiter's state now.
fn observed<L: PermitLimiter + RateLimiter>(l: &L) -> (Metrics, ratekeeper::WaitStats) {
    (l.metrics(), l.wait_stats())
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
fn refill_cancelling_the_latest_reservation_restores_the_bucket_exactly() {
    let (l, clock) = refill(1, 1_000, 10_000, Some(4), Some(2));
    clock.set_nanos(500);
    RateLimiter::reserve(&l, 3, None).unwrap(); // 2.5 stored, 0.5 owed
    let before = observed(&l);
    let g = RateLimiter::reserve(&l, 2, None).unwrap();
    assert_eq!(g.ready_nanos(), 3_000);
    assert!(l.cancel(&g));
    assert_eq!(observed(&l), before);
    let again = RateLimiter::reserve(&l, 2, None).unwrap();
    assert_eq!(times(&again), times(&g));
}

#[test]
fn refill_later_reservations_keep_their_times_and_bound_the_give_back() {
    // Capacity 4: a's 2 permits come back in full with 1 permit after it.
    let (l, _) = refill(1, 1_000, 10_000, Some(4), Some(0));
    let a = RateLimiter::reserve(&l, 2, None).unwrap();
    let b = RateLimiter::reserve(&l, 1, None).unwrap();
    assert_eq!((a.ready_nanos(), b.ready_nanos()), (2_000, 3_000));
    assert!(l.cancel(&a));
    assert_eq!(l.wait_stats().backlog_nanos, 1_000, "only b's cost is left");
    // The next 2 permits go with b, 3 permits at once: within the capacity.
    assert_eq!(
        RateLimiter::reserve(&l, 2, None).unwrap().ready_nanos(),
        3_000
    );

    // Capacity 2: b alone fills the bucket at its time, so only part of a's
    // cost can come back: b at 3 µs left the bucket at index 3 µs − 2 µs + 1 µs.
    let (l, _) = refill(1, 1_000, 10_000, Some(2), Some(0));
    let a = RateLimiter::reserve(&l, 2, None).unwrap();
    RateLimiter::reserve(&l, 1, None).unwrap();
    assert!(l.cancel(&a));
    assert_eq!(l.wait_stats().backlog_nanos, 2_000);
    // A new permit is due at 3 µs, with b: 2 permits at once, the capacity.
    assert_eq!(
        RateLimiter::reserve(&l, 1, None).unwrap().ready_nanos(),
        3_000
    );

    // Capacity 2 and 2 permits after it: nothing comes back to the
    // bucket; the grant is kept for the next caller of its size (issue 16).
    let (l, _) = refill(1, 1_000, 10_000, Some(2), Some(0));
    let a = RateLimiter::reserve(&l, 1, None).unwrap();
    RateLimiter::reserve(&l, 2, None).unwrap();
    let before = observed(&l);
    assert!(l.cancel(&a));
    assert_eq!(observed(&l), before);
    assert!(!l.cancel(&a), "kept already");
    let next = RateLimiter::reserve(&l, 1, None).unwrap();
    assert_eq!(next.ready_nanos(), a.ready_nanos(), "a's time");
    assert_eq!(observed(&l), before, "charged once, to a");
    assert_eq!(
        RateLimiter::reserve(&l, 1, None).unwrap().ready_nanos(),
        4_000,
        "used once"
    );
}

#[test]
fn refill_reservations_cancelled_newest_first_all_come_back() {
    let (l, clock) = refill(1, 1_000, 10_000, Some(3), Some(1));
    clock.set_nanos(100);
    let before = observed(&l);
    let grants: Vec<Grant> = (1..=3)
        .map(|n| RateLimiter::reserve(&l, n, None).unwrap())
        .collect();
    // The first took the stored permit: ready when made, not given back.
    assert_eq!(grants[0].ready_nanos(), 100);
    assert!(l.cancel(&grants[2]));
    assert!(!l.cancel(&grants[2]), "twice");
    assert!(l.cancel(&grants[1]));
    assert!(!l.cancel(&grants[0]));
    let after_first = {
        let (l2, c2) = refill(1, 1_000, 10_000, Some(3), Some(1));
        c2.set_nanos(100);
        RateLimiter::reserve(&l2, 1, None).unwrap();
        observed(&l2)
    };
    assert_eq!(observed(&l), after_first);
    assert_ne!(observed(&l), before);
}

#[test]
fn refill_refuses_what_it_cannot_give_back_and_changes_nothing() {
    let (l, clock) = refill(1, 1_000, 10_000, Some(4), Some(1));
    let (other, _) = refill(1, 1_000, 10_000, Some(4), Some(0));
    let now = RateLimiter::reserve(&l, 1, None).unwrap(); // the stored permit
    let g = RateLimiter::reserve(&l, 2, None).unwrap(); // ready at 2 µs
    let state = observed(&l);
    // Ready when made.
    assert!(!l.cancel(&now));
    // Not this limiter's: another's latest, of the same epoch, ending past
    // any time index this one reached.
    let foreign = RateLimiter::reserve(&other, 3, None).unwrap();
    assert!(!l.cancel(&foreign));
    // Built by hand: no tag.
    assert!(!l.cancel(&Grant::new(2_000, 2_000, 0, 2)));
    assert_eq!(observed(&l), state);
    // Past its ready time.
    clock.set_nanos(2_001);
    let state = observed(&l);
    assert!(!l.cancel(&g));
    assert_eq!(observed(&l), state);
    // A limit change retires every earlier grant.
    let h = RateLimiter::reserve(&l, 1, None).unwrap();
    l.change_limit_for_period(2).unwrap();
    let state = observed(&l);
    assert!(!l.cancel(&h));
    assert_eq!(observed(&l), state);
}

#[test]
fn refill_a_grant_before_a_partial_give_back_is_kept_for_the_next_caller() {
    let (l, _) = refill(1, 1_000, 10_000, Some(4), Some(0));
    let a = RateLimiter::reserve(&l, 1, None).unwrap();
    let b = RateLimiter::reserve(&l, 1, None).unwrap();
    let c = RateLimiter::reserve(&l, 1, None).unwrap();
    assert!(l.cancel(&b)); // c after it: a partial (here, full) give-back
    let state = observed(&l);
    // Neither can go back to the bucket any more (not the latest, and
    // older than the cancel; the index moved below c's end): both are kept
    // (issue 16), the bucket untouched.
    assert!(l.cancel(&a));
    assert!(l.cancel(&c));
    assert!(!l.cancel(&a) && !l.cancel(&c), "kept already");
    assert_eq!(observed(&l), state);
    // The next callers of their size get their times, earliest first, then
    // the bucket's.
    let ready: Vec<u64> = (0..3)
        .map(|_| RateLimiter::reserve(&l, 1, None).unwrap().ready_nanos())
        .collect();
    assert_eq!(ready, [1_000, 3_000, 3_000]);
}

#[test]
fn refill_a_kept_grant_goes_to_pending_acquisitions_too_and_expires() {
    // Capacity 1: no grant but the latest can go back.
    let (l, clock) = refill(1, 1_000, 10_000, Some(1), Some(0));
    let log = record(l.events());
    let a = l.begin_acquire_permission(1).unwrap(); // 1 µs
    let b = l.begin_acquire_permission(1).unwrap(); // 2 µs
    let c = l.begin_acquire_permission(1).unwrap(); // 3 µs
    assert!(a.cancel() && b.cancel(), "kept");
    assert_eq!(avail(&l), -3, "nothing went back to the bucket");
    // The timeout bounds what a caller takes: within 1.5 µs, only a's.
    compat::change_timeout_nanos(&l, 1_500).unwrap();
    let p = l.begin_acquire_permission(1).unwrap();
    assert_eq!(p.ready_at_nanos(), 1_000);
    assert_eq!(
        l.reserve_permission(1).unwrap(),
        Permission::Refused,
        "b's is 2 µs away, the bucket's 4 µs"
    );
    compat::change_timeout_nanos(&l, 10_000).unwrap();
    // Its new holder may give it back again.
    assert!(p.cancel());
    assert_eq!(
        l.reserve_permission(1).unwrap(),
        Permission::After(Duration::from_nanos(1_000))
    );
    // b's passes unused: dropped, never handed out late.
    clock.set_nanos(2_001);
    let d = l.begin_acquire_permission(1).unwrap();
    assert_eq!(d.ready_at_nanos(), 4_000);
    assert!(d.finish() && c.finish());
    assert_eq!(
        take(&log),
        [
            (Failed, 1),
            (Failed, 1),
            (Failed, 1), // refused
            (Failed, 1),
            (Success, 1), // reserve_permission: at once
            (Success, 1),
            (Success, 1)
        ]
    );
}

#[test]
fn refill_pending_cancel_gives_back_and_abandon_keeps() {
    let (l, _) = refill(1, 1_000, 5_000, Some(1), Some(1));
    let log = record(l.events());
    assert!(l.acquire_permission(1).unwrap());
    let before = observed(&l);
    let p = l.begin_acquire_permission(1).unwrap();
    assert_eq!(l.metrics().waiting_threads, 1);
    let g = p.grant().unwrap();
    assert_eq!((g.ready_nanos(), g.started_nanos()), (1_000, 0));
    assert!(p.cancel());
    assert_eq!(observed(&l), before, "the gauge is down, the permit back");
    // The same through the trait, then the pending value: given back once.
    let p = l.begin_acquire_permission(1).unwrap();
    assert!(l.cancel(&p.grant().unwrap()));
    assert!(!p.cancel());
    assert_eq!(observed(&l), before);
    // Abandoned: the permit stays spent.
    let p = l.begin_acquire_permission(1).unwrap();
    assert!(!p.abandon());
    assert_eq!(avail(&l), -1);
    // Ready at once, or refused: nothing to give back.
    let (l2, _) = refill(1, 1_000, 0, Some(1), Some(1));
    let now = l2.begin_acquire_permission(1).unwrap();
    assert!(!now.is_waiting() && now.grant().is_some());
    assert!(!now.cancel());
    let refused = l2.begin_acquire_permission(1).unwrap();
    assert_eq!(refused.grant(), None);
    assert!(!refused.cancel());
    // A cancelled or abandoned acquisition is a failed one.
    assert_eq!(
        take(&log),
        [(Success, 1), (Failed, 1), (Failed, 1), (Failed, 1)]
    );
}

#[test]
fn cycle_cancel_returns_the_permits_to_the_current_cycle() {
    let (l, _) = cycle(2, 1_000, 10_000);
    RateLimiter::reserve(&l, 2, None).unwrap(); // this cycle's permits
    let before = observed(&l);
    let g = RateLimiter::reserve(&l, 3, None).unwrap(); // cycles 1 and 2
    assert_eq!(g.ready_nanos(), 2_000);
    assert!(l.cancel(&g));
    assert_eq!(observed(&l), before);
    assert_eq!(
        times(&RateLimiter::reserve(&l, 3, None).unwrap()),
        times(&g)
    );
}

#[test]
fn cycle_cancel_never_frees_a_cycle_a_later_reservation_holds() {
    // Issue 16: 10 per 100 ms, reservations for cycles 0, 1 and 2; giving
    // back the middle one let the next reservation into cycle 2 as well,
    // 20 permits in a cycle limited to 10. Its permits stay counted in
    // cycle 1 now, and the grant is kept for the next caller of its size,
    // who goes in cycle 1 in its place (issue 16, finding 4).
    let (l, _) = cycle(10, 100_000_000, i64::MAX);
    let cycles: Vec<Grant> = (0..3)
        .map(|_| RateLimiter::reserve(&l, 10, None).unwrap())
        .collect();
    let ready: Vec<u64> = cycles.iter().map(Grant::ready_nanos).collect();
    assert_eq!(ready, [0, 100_000_000, 200_000_000]);
    let before = observed(&l);
    assert!(
        l.cancel(&cycles[1]),
        "kept: cycle 2's reservation depends on it"
    );
    assert_eq!(observed(&l), before, "the count is untouched");
    let next = RateLimiter::reserve(&l, 10, None).unwrap();
    assert_eq!(next.ready_nanos(), 100_000_000, "cycles[1]'s place");
    assert_eq!(observed(&l), before);
    let next = RateLimiter::reserve(&l, 10, None).unwrap();
    assert_eq!(next.ready_nanos(), 300_000_000);
    // One permit each, the later one in the next cycle: the same.
    let (l, _) = cycle(2, 1_000, 10_000);
    RateLimiter::reserve(&l, 2, None).unwrap();
    let a = RateLimiter::reserve(&l, 2, None).unwrap(); // cycle 1
    let b = RateLimiter::reserve(&l, 1, None).unwrap(); // cycle 2
    assert_eq!((a.ready_nanos(), b.ready_nanos()), (1_000, 2_000));
    assert!(l.cancel(&a), "kept for a caller of 2");
    assert_eq!(avail(&l), -3);
    let later: Vec<u64> = (0..3)
        .map(|_| RateLimiter::reserve(&l, 1, None).unwrap().ready_nanos())
        .collect();
    assert_eq!(later, [2_000, 3_000, 3_000], "at most 2 in any cycle");
}

#[test]
fn cycle_cancel_gives_back_only_the_latest_reservation() {
    // a and b both start in cycle 1 (a spans cycles 0 and 1), b after a.
    // Giving back a would leave b's permit counted in cycle 0 and let two
    // more start with b in cycle 1: a stays spent.
    let (l, _) = cycle(2, 1_000, 10_000);
    RateLimiter::reserve(&l, 1, None).unwrap();
    let a = RateLimiter::reserve(&l, 2, None).unwrap();
    let b = RateLimiter::reserve(&l, 1, None).unwrap();
    assert_eq!((a.ready_nanos(), b.ready_nanos()), (1_000, 1_000));
    assert!(l.cancel(&a), "kept for a caller of 2, its permits counted");
    assert_eq!(avail(&l), -2);
    let later: Vec<Grant> = (0..3)
        .map(|_| RateLimiter::reserve(&l, 1, None).unwrap())
        .collect();
    let ready: Vec<u64> = later.iter().map(Grant::ready_nanos).collect();
    assert_eq!(ready, [2_000, 2_000, 3_000]);
    // The latest comes back whole, then the one before it is the latest.
    assert!(l.cancel(&later[2]));
    assert_eq!(avail(&l), -4);
    // Older than the cancel: not given back, kept.
    assert!(l.cancel(&later[1]));
    assert_eq!(avail(&l), -4);
    // a's place to a caller of 2, later[1]'s and later[2]'s to callers of 1.
    let ready: Vec<u64> = [2, 1, 1, 1]
        .iter()
        .map(|&n| RateLimiter::reserve(&l, n, None).unwrap().ready_nanos())
        .collect();
    assert_eq!(ready, [1_000, 2_000, 3_000, 3_000], "at most 2 a cycle");
    // The newest of several in the last cycle comes back whole.
    let (l, _) = cycle(4, 1_000, 10_000);
    RateLimiter::reserve(&l, 4, None).unwrap();
    RateLimiter::reserve(&l, 1, None).unwrap();
    let c = RateLimiter::reserve(&l, 2, None).unwrap();
    assert!(l.cancel(&c));
    assert_eq!(avail(&l), -1);
}

#[test]
fn cycle_refuses_after_the_cycle_ends_and_what_is_not_its_own() {
    let (l, clock) = cycle(2, 1_000, 10_000);
    let now = RateLimiter::reserve(&l, 2, None).unwrap();
    let g = RateLimiter::reserve(&l, 4, None).unwrap(); // ready at 2 µs
    let state = observed(&l);
    assert!(!l.cancel(&now), "ready when made");
    assert!(!l.cancel(&Grant::new(2_000, 2_000, 0, 4)), "no tag");
    clock.set_nanos(1_000); // cycle 1: the count was refreshed
    let state1 = observed(&l);
    assert!(l.cancel(&g), "not given back: kept for a caller of 4");
    assert_eq!(observed(&l), state1);
    assert_ne!(state, state1);
    // Twice.
    let h = RateLimiter::reserve(&l, 1, None).unwrap();
    assert!(l.cancel(&h));
    let state = observed(&l);
    assert!(!l.cancel(&h));
    assert_eq!(observed(&l), state);
    // After a limit change.
    let h = RateLimiter::reserve(&l, 1, None).unwrap();
    l.change_limit_for_period(3).unwrap();
    assert!(!l.cancel(&h));
    // Past its ready time (within the cycle it was made in).
    let (l, clock) = cycle(1, 1_000, 10_000);
    RateLimiter::reserve(&l, 1, None).unwrap();
    let g = RateLimiter::reserve(&l, 1, None).unwrap();
    clock.set_nanos(999);
    assert!(g.ready_nanos() > clock.now_nanos());
    let pending = l.begin_acquire_permission(1).unwrap();
    assert!(pending.cancel());
    assert!(l.cancel(&g), "made before the cancel: kept");
    clock.set_nanos(1_001);
    assert!(!l.cancel(&g), "past its ready time");
    assert_eq!(
        RateLimiter::reserve(&l, 1, None).unwrap().ready_nanos(),
        2_000,
        "g's place passed unused: dropped"
    );
}

#[test]
fn cycle_kept_grants_never_let_a_cycle_start_more_than_its_limit() {
    // 2 per µs, a cycle-2 reservation behind each kept one: every cycle
    // starts at most 2, kept places included.
    let (l, clock) = cycle(2, 1_000, 10_000);
    let log = record(l.events());
    RateLimiter::reserve(&l, 2, None).unwrap(); // cycle 0
    let a = l.begin_acquire_permission(1).unwrap(); // cycle 1
    let b = l.begin_acquire_permission(1).unwrap(); // cycle 1
    let c = l.begin_acquire_permission(1).unwrap(); // cycle 2
    assert_eq!(
        [a.ready_at_nanos(), b.ready_at_nanos(), c.ready_at_nanos()],
        [1_000, 1_000, 2_000]
    );
    assert!(a.cancel() && b.cancel(), "kept, counted in cycle 1");
    assert_eq!(avail(&l), -3);
    let mut ready = vec![
        l.begin_acquire_permission(1).unwrap(),
        l.begin_acquire_permission(1).unwrap(),
    ];
    assert_eq!(l.reserve_permission(1).unwrap().nanos_to_wait(), 2_000);
    ready.push(l.begin_acquire_permission(1).unwrap());
    let at: Vec<u64> = ready.iter().map(|p| p.ready_at_nanos()).collect();
    assert_eq!(at, [1_000, 1_000, 3_000], "cycle 2 holds c and one more");
    clock.set_nanos(1_000);
    assert!(ready.into_iter().all(|p| p.finish()) && c.finish());
    // Cancelled twice (the kept place handed on), refused without event.
    assert_eq!(
        take(&log),
        [
            (Success, 2),
            (Failed, 1),
            (Failed, 1),
            (Success, 1),
            (Success, 1),
            (Success, 1),
            (Success, 1),
            (Success, 1)
        ]
    );
}

#[test]
fn pending_permissions_stay_send_and_sync() {
    // An async task holds one across an await (the `tokio` feature).
    fn send_sync<T: Send + Sync>() {}
    send_sync::<PendingPermission<'static>>();
}

#[test]
fn refill_effective_rate_is_one_second_over_the_truncated_interval() {
    // 3 per second: 333 333 333 ns per permit, 3.000000003 per second.
    let (l, _) = refill(3, 1_000_000_000, 0, None, None);
    assert_eq!(l.config().nanos_per_permit(), 333_333_333);
    assert_eq!(l.effective_rate(), 1e9 / 333_333_333.0);
    // 3 per 10 ns: 3.33 ns refilled in 3 ns, 11 % fast.
    let (l, _) = refill(3, 10, 0, None, None);
    assert_eq!(l.effective_rate(), 1e9 / 3.0);
    // Resilience4j's defaults, 50 per 500 ns: 10 ns, exact.
    let (l, _) = refill(50, 500, 0, None, None);
    assert_eq!(l.effective_rate(), 1e8);
    // A limit change divides the configured period again.
    l.change_limit_for_period(3).unwrap();
    assert_eq!(l.effective_rate(), 1e9 / 166.0); // 500 / 3 = 166.67 ns
}

#[test]
fn refill_effective_rate_is_what_the_bucket_grants() {
    // 3 per 10 ns, an empty bucket: a permit every 3 ns, not every 3.33.
    let (l, clock) = refill(3, 10, 0, Some(3), Some(0));
    let mut granted = 0u64;
    for _ in 0..3_000 {
        clock.advance_nanos(1);
        while l.try_acquire().is_ok() {
            granted += 1;
        }
    }
    assert_eq!(granted, 1_000);
    assert_eq!(granted as f64 * 1e9 / 3_000.0, l.effective_rate());
}

#[test]
fn cycle_effective_rate_is_exact() {
    let (l, _) = cycle(3, 1_000_000_000, 0);
    assert_eq!(l.effective_rate(), 3.0);
    let (l, _) = cycle(3, 10, 0);
    assert_eq!(l.effective_rate(), 3e8);
    l.change_limit_for_period(7).unwrap();
    assert_eq!(l.effective_rate(), 7e8);
}

#[test]
fn signed_changes_take_their_smallest_valid_values() {
    let limiter = RefillLimiter::of_defaults("edge");
    compat::change_limit_for_period(&limiter, 1).unwrap();
    assert_eq!(limiter.config().limit_for_period(), 1);
    compat::change_timeout_nanos(&limiter, 0).unwrap();
    assert_eq!(limiter.config().timeout(), Duration::ZERO);
}
