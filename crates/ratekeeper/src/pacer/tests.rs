use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::decision::{MAX_SPAN, SCHEDULE_LIMIT};
use super::*;
use crate::clock::Clock;
use crate::clock::ManualClock;
use crate::limiter::{AcquireError, Grant, RateLimiter, WaitStats};
use crate::rate::{Rate, RateError};
use crate::sync::AtomicU64;
use crate::wait::WaitPolicy;

const MS: u64 = 1_000_000;

fn pacer(spec: &str, clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::from_spec(&spec.parse().unwrap())
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
    assert_eq!(
        p.set_rate(Rate::new(2e9).unwrap()),
        Err(RateError::TooFast(2e9).into())
    );
    assert_eq!(p.set_strictness(f64::NAN), Err(StrictnessError::NaN.into()));
    assert_eq!(
        p.set_strictness(-0.5),
        Err(StrictnessError::Negative(-0.5).into())
    );
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
fn the_schedule_ends_at_the_clocks_last_reading() {
    // Built 10 ms before the end of the clock's range: strict slots at
    // 0, 1, ... 10 ms before it, the last at u64::MAX itself; then typed
    // refusals, never a grant past the end nor two closer than a slot.
    for spec in [1.0, 3.0, 0.5, 0.0] {
        let clock = ManualClock::new(u64::MAX - 10 * MS);
        let p = Pacer::builder(Rate::new(1000.0).unwrap())
            .strictness(spec)
            .build_with_clock(clock.clone())
            .unwrap();
        let mut readies = Vec::new();
        for _ in 0..20 {
            match p.acquire_n(1) {
                Ok(g) => readies.push(g.ready_nanos()),
                Err(e) => assert_eq!(e, AcquireError::ScheduleExhausted, "{spec}"),
            }
        }
        let expected: Vec<u64> = (0..=10).map(|k| u64::MAX - (10 - k) * MS).collect();
        assert_eq!(readies, expected, "{spec}");
        assert_eq!(clock.now_nanos(), u64::MAX);
        for max_wait in [None, Some(Duration::ZERO), Some(Duration::MAX)] {
            assert_eq!(
                p.reserve(1, max_wait),
                Err(AcquireError::ScheduleExhausted),
                "{spec}"
            );
        }
    }
}

#[test]
fn a_strict_start_past_the_end_of_the_clock_is_refused() {
    // A burst op near the end spaces the next one past the clock's last
    // reading: the next op is refused, its slot given back.
    let clock = ManualClock::new(u64::MAX - 10 * MS);
    let p = pacer("100,1.0", &clock); // 10 ms slots
    clock.advance_nanos(5 * MS);
    let g = p.try_acquire_n(1).unwrap();
    assert_eq!(g.ready_nanos(), u64::MAX - 5 * MS);
    let next = p.next_slot_nanos();
    assert_eq!(p.reserve(1, None), Err(AcquireError::ScheduleExhausted));
    assert_eq!(
        p.reserve(1, Some(Duration::MAX)),
        Err(AcquireError::ScheduleExhausted)
    );
    assert_eq!(p.next_slot_nanos(), next, "the refused slot went back");
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

/// A pacer at 1000/s with any strictness (specs refuse burst ratios below 1).
fn pacer_s(strictness: f64, clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::builder(Rate::new(1000.0).unwrap())
        .strictness(strictness)
        .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
        .build_with_clock(clock.clone())
        .unwrap()
}

/// A grant's times and size, without the pacer's tag.
fn times(g: &Grant) -> (u64, u64, u64, u32) {
    (
        g.scheduled_nanos(),
        g.ready_nanos(),
        g.started_nanos(),
        g.permits(),
    )
}

/// Everything a caller can observe of a pacer's schedule.
fn observed(p: &Pacer<ManualClock>) -> (u64, WaitStats, u64) {
    (
        p.next_slot_nanos(),
        p.wait_stats(),
        p.accumulated_wait_nanos(),
    )
}

#[test]
fn cancelling_the_latest_grant_gives_its_slots_back_exactly() {
    for spec in [0.0, 0.5, 1.0, 1.5, 3.0] {
        for late in [0, 3 * MS + 250_000] {
            let clock = ManualClock::new(0);
            let p = pacer_s(spec, &clock);
            clock.advance_nanos(late);
            p.reserve(2, None).unwrap();
            let before = observed(&p);
            let g = p.reserve(3, None).unwrap();
            assert!(p.cancel(&g), "{spec}, late {late}");
            assert_eq!(observed(&p), before, "{spec}, late {late}");
            let again = p.reserve(3, None).unwrap();
            assert_eq!(times(&again), times(&g), "{spec}, late {late}");
            // And the op after it is spaced exactly as it would have been.
            let next = p.reserve(1, None).unwrap();
            let reference = pacer_s(spec, &ManualClock::new(0));
            let c = reference.clock_ref();
            c.advance_nanos(late);
            reference.reserve(2, None).unwrap();
            reference.reserve(3, None).unwrap();
            assert_eq!(times(&next), times(&reference.reserve(1, None).unwrap()));
        }
    }
}

#[test]
fn cancelling_newest_first_gives_every_grant_back() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.5", &clock);
    clock.advance_nanos(5 * MS); // behind: the actual timeline is in use
    let before = observed(&p);
    let grants: Vec<Grant> = (0..4).map(|_| p.reserve(1, None).unwrap()).collect();
    for g in grants.iter().rev() {
        assert!(p.cancel(g));
    }
    assert_eq!(observed(&p), before);
    for g in &grants {
        assert!(!p.cancel(g), "each one only once");
        assert_eq!(times(&p.reserve(1, None).unwrap()), times(g));
    }
}

#[test]
fn a_grant_with_a_later_reservation_goes_to_the_next_caller() {
    // Issue 16: an earlier grant's slots cannot move back (b stands on
    // them), so `cancel` hands them to the next reservation of its size
    // instead of losing them (it returned false before).
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.0", &clock);
    let a = p.reserve(1, None).unwrap();
    let b = p.reserve(1, None).unwrap();
    let before = observed(&p);
    assert!(p.cancel(&a));
    assert_eq!(observed(&p), before, "the schedule is untouched");
    assert!(!p.cancel(&a), "stashed already");
    assert!(p.cancel(&b), "the latest: back to the schedule");
    let next = p.reserve(1, None).unwrap();
    assert_eq!(times(&next), times(&a), "a's slot, from the stash");
    assert_eq!(times(&p.reserve(1, None).unwrap()), times(&b));
    assert!(!p.cancel(&a), "the first holder, after the hand-over");
    assert!(p.cancel(&next), "the new holder");
}

#[test]
fn cancelling_twice_or_a_foreign_grant_is_refused_and_changes_nothing() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.1", &clock);
    let other = pacer("1000,1.1", &clock);
    p.reserve(1, None).unwrap();
    let g = p.reserve(1, None).unwrap();
    assert!(p.cancel(&g));
    let state = observed(&p);
    assert!(!p.cancel(&g));
    assert_eq!(observed(&p), state);
    // The same slots taken again: equal times, but not the same grant.
    let again = p.reserve(1, None).unwrap();
    assert_eq!(times(&again), times(&g));
    let state = observed(&p);
    assert!(!p.cancel(&g), "the cancelled grant, not the new one");
    assert_eq!(observed(&p), state);
    // Another pacer's grant (its own latest, at other slots).
    other.reserve(1, None).unwrap();
    let foreign = other.reserve(3, None).unwrap();
    assert!(!p.cancel(&foreign));
    assert_eq!(observed(&p), state);
    // A grant built by hand carries no tag.
    assert!(!p.cancel(&Grant::new(
        again.scheduled_nanos(),
        again.ready_nanos(),
        0,
        1
    )));
    assert!(p.cancel(&again));
}

#[test]
fn a_grant_whose_ready_time_passed_is_not_given_back() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.0", &clock);
    p.reserve(1, None).unwrap();
    let g = p.reserve(1, None).unwrap(); // ready at 1 ms
    clock.advance_nanos(MS + 1);
    let state = observed(&p);
    assert!(!p.cancel(&g));
    assert_eq!(observed(&p), state);
    // Ready exactly now: still given back (Go's `timeToAct < now` rule).
    let h = p.reserve(1, None).unwrap();
    clock.set_nanos(h.ready_nanos());
    assert!(p.cancel(&h));
}

#[test]
fn grants_from_before_a_reset_are_not_given_back() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.0", &clock);
    let g = p.reserve(1, None).unwrap();
    p.set_rate(Rate::new(500.0).unwrap()).unwrap();
    assert!(!p.cancel(&g));
    let g = p.reserve(1, None).unwrap();
    p.restart();
    assert!(!p.cancel(&g));
    let g = p.reserve(1, None).unwrap();
    p.stop();
    assert!(!p.cancel(&g), "stopped");
    p.start();
    assert!(!p.cancel(&g));
    // A configuration that changes nothing keeps the epoch.
    let g = p.reserve(1, None).unwrap();
    p.apply(&"500,1.0".parse().unwrap()).unwrap();
    assert!(p.cancel(&g));
}

#[test]
fn the_first_grant_of_an_idle_pacer_can_be_given_back() {
    let clock = ManualClock::new(0);
    let p = pacer("1000,1.0,configure", &clock);
    clock.advance_nanos(7 * MS);
    let g = p.reserve(2, None).unwrap();
    assert!(p.cancel(&g));
    assert_eq!(p.next_slot_nanos(), 7 * MS);
}

#[test]
fn bounded_grants_are_given_back_like_any_other() {
    for spec in [0.0, 1.2] {
        let clock = ManualClock::new(0);
        let p = pacer_s(spec, &clock);
        p.reserve(1, None).unwrap();
        let before = observed(&p);
        let g = p.reserve(1, Some(Duration::from_millis(5))).unwrap();
        assert!(p.cancel(&g), "{spec}");
        assert_eq!(observed(&p), before);
        let again = p.reserve(1, Some(Duration::from_millis(5))).unwrap();
        assert_eq!(times(&again), times(&g));
    }
}

#[test]
fn what_the_pacer_cannot_size_or_reach_is_not_given_back() {
    let clock = ManualClock::new(0);
    // reserve_nanos: the grant reports 0 permits.
    let p = pacer("1000,1.0", &clock);
    let g = p.reserve_nanos(3 * MS, None).unwrap();
    assert_eq!(g.permits(), 0);
    assert!(!p.cancel(&g));
    // Burst compensation that forfeited backlog moved the schedule past the
    // grant's end.
    let p = Pacer::builder(Rate::new(1000.0).unwrap())
        .strictness(0.5)
        .cached_clock(false)
        .build_with_clock(clock.clone())
        .unwrap();
    clock.advance_nanos(9 * MS);
    let g = p.reserve(1, None).unwrap();
    assert!(p.accumulated_wait_nanos() > 0);
    // Not back to the schedule, but to the next caller (issue 16: was
    // refused).
    let state = observed(&p);
    assert!(p.cancel(&g));
    assert_eq!(observed(&p), state);
    assert_eq!(times(&p.reserve(1, None).unwrap()), times(&g));
    // Without a forfeit (on schedule) it is given back.
    p.restart();
    p.reserve(1, None).unwrap();
    let g = p.reserve(1, None).unwrap();
    assert!(p.cancel(&g));
}

/// `ideal` and `actual` share one cache line (an off-slot strict or burst
/// grant takes it once); `last_seen` and the parameters are on other lines.
#[test]
fn both_timelines_share_one_cache_line() {
    use core::mem::{align_of, offset_of, size_of};
    let line = align_of::<CachePadded<AtomicU64>>();
    assert_eq!(align_of::<Pacer>() % line, 0);
    assert_eq!(
        offset_of!(Pacer, ideal) / line,
        offset_of!(Pacer, actual) / line
    );
    assert_eq!(
        offset_of!(Pacer, ideal) / line,
        offset_of!(Pacer, lag) / line
    );
    assert!(offset_of!(Pacer, lag) + size_of::<AtomicU64>() <= line);
    assert!(offset_of!(Pacer, last_seen) >= line);
    assert!(offset_of!(Pacer, params) >= line);
}

// ------------------------------------------------- issue 15: defects pinned

/// A pacer with every default but the rate and strictness, on a manual clock.
fn default_pacer(rate: f64, strictness: f64, clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::builder(Rate::new(rate).unwrap())
        .strictness(strictness)
        .build_with_clock(clock.clone())
        .unwrap()
}

#[test]
fn a_stall_outside_the_limiter_is_reported_in_every_mode() {
    // Rate 3.5/s: a slot is 285 714 285 ns. The caller falls 2 s behind (its
    // op there reads the clock), then stalls 13.7 s outside the limiter: its
    // next op's wait counts the whole stall.
    for strictness in [0.0, 0.3, 1.0, 1.1, 2.0] {
        let clock = ManualClock::new(0);
        let p = default_pacer(3.5, strictness, &clock);
        p.acquire();
        clock.advance_nanos(2_000_000_000);
        p.acquire();
        clock.advance_nanos(13_700_000_000);
        let g = p.acquire();
        assert_eq!(g.started_nanos(), 15_700_000_000, "s = {strictness}");
        assert_eq!(
            g.wait_nanos(),
            15_700_000_000 - g.scheduled_nanos(),
            "s = {strictness}"
        );
        assert!(g.wait_nanos() > 13_700_000_000, "s = {strictness}");
    }
}

#[test]
fn a_stall_is_reported_by_a_handle_and_by_shards() {
    let clock = ManualClock::new(0);
    let p = default_pacer(1e6, 0.0, &clock);
    let h = p.handle();
    for _ in 0..100 {
        h.acquire();
    }
    clock.advance_nanos(5 * MS); // behind: the next grant reads the clock
    h.acquire();
    clock.advance_nanos(5 * MS); // a stall outside the limiter
    let now = clock.now_nanos();
    let g = h.acquire();
    assert_eq!(g.started_nanos(), now);
    assert_eq!(g.wait_nanos(), now - g.scheduled_nanos());

    let clock = ManualClock::new(0);
    let s = Pacer::builder(Rate::new(1e6).unwrap())
        .strictness(0.0)
        .build_sharded_with_clock(2, clock.clone())
        .unwrap();
    let h = s.handle();
    for _ in 0..100 {
        h.acquire();
    }
    clock.advance_nanos(5 * MS); // behind: the next grant reads the clock
    h.acquire();
    clock.advance_nanos(5 * MS); // a stall outside the limiter
    let now = clock.now_nanos();
    let g = h.acquire();
    assert_eq!(g.started_nanos(), now);
    assert_eq!(g.wait_nanos(), now - g.scheduled_nanos());
}

/// Ten reservations of a strict 1000/s pacer waiting on slots 0–9 ms.
fn ten_waiting(clock: &ManualClock) -> (Pacer<ManualClock>, Vec<Grant>) {
    let p = default_pacer(1000.0, 1.0, clock);
    let held = (0..10).map(|_| p.reserve(1, None).unwrap()).collect();
    (p, held)
}

#[test]
fn a_change_never_hands_out_a_slot_already_held() {
    type Change = fn(&Pacer<ManualClock>);
    let changes: [(&str, Change); 5] = [
        ("set_rate", |p| {
            p.set_rate(Rate::new(2000.0).unwrap()).unwrap()
        }),
        ("set_strictness", |p| p.set_strictness(1.5).unwrap()),
        ("configure", |p| {
            p.configure(Rate::new(500.0).unwrap(), 0.0).unwrap()
        }),
        ("restart", |p| p.restart()),
        ("stop", |p| p.stop()),
    ];
    for (name, change) in changes {
        let clock = ManualClock::new(0);
        let (p, held) = ten_waiting(&clock);
        assert_eq!(held[9].ready_nanos(), 9 * MS);
        change(&p);
        // The next op is due at the later of now and the end of the slots
        // handed out: 10 ms, not now (0).
        let next = p.reserve(1, None).unwrap();
        assert!(
            next.ready_nanos() >= 10 * MS,
            "{name}: the next op is ready at {} ns, inside the held slots",
            next.ready_nanos()
        );
        assert_eq!(
            p.wait_stats().total_wait_nanos,
            0,
            "{name}: nothing was late"
        );
    }
}

#[test]
fn a_change_while_behind_checkpoints_the_backlog_once() {
    let clock = ManualClock::new(0);
    let p = default_pacer(1000.0, 1.0, &clock);
    p.acquire();
    clock.advance_nanos(5 * MS); // next slot at 1 ms: 4 ms behind
    p.set_rate(Rate::new(2000.0).unwrap()).unwrap();
    assert_eq!(p.accumulated_wait_nanos(), 4 * MS);
    assert_eq!(
        p.next_slot_nanos(),
        5 * MS,
        "the backlog leaves the schedule"
    );
    let g = p.acquire();
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (5 * MS, 0));
    p.restart();
    assert_eq!(p.accumulated_wait_nanos(), 0);
    assert_eq!(
        p.next_slot_nanos(),
        5_500_000,
        "a held slot is kept on restart"
    );
}

#[test]
fn many_callers_through_the_room_each_get_their_own_slots() {
    crate::test_util::within(|| {
        // Eight threads, one manual clock: sleepers advance it, others park
        // while one sleeps and are handed over to. Every acquire completes and
        // the slots tile the schedule.
        for strictness in [0.0, 1.0, 1.1] {
            let clock = ManualClock::new(0);
            let p = default_pacer(10_000.0, strictness, &clock);
            let mut slots: Vec<u64> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..8)
                    .map(|_| {
                        s.spawn(|| {
                            (0..200)
                                .map(|_| p.acquire().scheduled_nanos())
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
            });
            slots.sort_unstable();
            let expected: Vec<u64> = (0..1600).map(|i| i * 100_000).collect();
            assert_eq!(slots, expected, "s = {strictness}");
        }
    });
}

#[test]
fn the_room_lets_real_threads_through_at_the_rate() {
    crate::test_util::within(|| {
        // The real clock: 4 threads, 20 000/s, 2 000 ops. Parked callers must
        // be handed over to (a lost hand-over would cost 50 ms each).
        let p = Pacer::builder(Rate::new(20_000.0).unwrap())
            .strictness(1.1)
            .build()
            .unwrap();
        let t = std::time::Instant::now();
        let n: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..500)
                            .map(|_| p.acquire().permits() as usize)
                            .sum::<usize>()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(n, 2000);
        // 100 ms of schedule; generous for a shared machine.
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    });
}

/// A manual clock whose sleeps end `late` ns late and that reports that as
/// its sleep resolution, as a real clock's sleeps end ~100 µs late.
struct LateClock {
    inner: ManualClock,
    late: u64,
}

impl Clock for LateClock {
    fn now_nanos(&self) -> u64 {
        self.inner.now_nanos()
    }
    fn sleep_nanos(&self, nanos: u64) {
        self.inner.advance_nanos(nanos + self.late);
    }
    fn sleep_overshoot_nanos(&self) -> u64 {
        self.late
    }
}

#[test]
fn at_1k_per_second_a_strict_op_goes_at_most_the_early_bound_early() {
    // Resolution 100 µs, slot 1 ms: the early bound is clamp(500, 50, 100)
    // µs = 100 µs. The fixed 500 µs window let an op due in 450 µs go at
    // once, 450 µs (almost half a slot) early.
    let clock = ManualClock::new(0);
    let late = LateClock {
        inner: clock.clone(),
        late: 100_000,
    };
    let p = Pacer::builder(Rate::new(1000.0).unwrap())
        .strictness(1.0)
        .build_with_clock(late)
        .unwrap();
    p.acquire();
    clock.advance_nanos(550_000); // the next op is due in 450 µs
    let g = p.acquire();
    assert_eq!(g.ready_nanos(), MS);
    assert!(
        g.started_nanos() + 100_000 >= g.ready_nanos(),
        "went {} ns early",
        g.ready_nanos() - g.started_nanos()
    );
    // Due within the bound: goes at once, at most 100 µs early.
    clock.set_nanos(g.ready_nanos() + MS - 80_000);
    let h = p.acquire();
    assert_eq!(h.ready_nanos(), 2 * MS);
    assert_eq!(h.started_nanos(), 2 * MS - 80_000);
}

#[test]
fn a_wait_that_wakes_late_on_purpose_is_not_forfeited_by_compensation() {
    // 1e6/s, strictness 0.5 (forfeit half of any gap seen), sleeps 100 µs
    // late: the grouping delay is 768 µs. The op that sleeps goes 768 µs
    // late on purpose; the next reservation must not forfeit that.
    let clock = ManualClock::new(0);
    let late = LateClock {
        inner: clock.clone(),
        late: 100_000,
    };
    let p = Pacer::builder(Rate::new(1e6).unwrap())
        .strictness(0.5)
        .build_with_clock(late)
        .unwrap();
    for _ in 0..60 {
        p.reserve(1, None).unwrap(); // the schedule 60 µs ahead
    }
    let g = p.acquire();
    assert_eq!(g.scheduled_nanos(), 60_000);
    assert!(g.wait_nanos() >= 768_000, "{g:?}");
    let next = p.acquire();
    assert_eq!(next.scheduled_nanos(), 61_000);
    assert_eq!(
        p.accumulated_wait_nanos(),
        0,
        "the grouping delay was forfeited"
    );
    assert_eq!(p.next_slot_nanos(), 62_000);
}

#[test]
fn effective_rate_is_one_second_over_the_truncated_slot() {
    let clock = ManualClock::new(0);
    let p = pacer("3,1.0", &clock);
    assert_eq!(p.nanos_per_op(), 333_333_333);
    assert_eq!(p.effective_rate(), 1e9 / 333_333_333.0);
    assert!((p.effective_rate() - 3.000_000_003).abs() < 1e-15);
    // Whole slots are exact.
    p.set_rate(Rate::new(1000.0).unwrap()).unwrap();
    assert_eq!(p.effective_rate(), 1000.0);
    // The worst of the range: 1.96 ns truncated to 1 ns.
    p.set_rate(Rate::new(5.1e8).unwrap()).unwrap();
    assert_eq!((p.nanos_per_op(), p.effective_rate()), (1, 1e9));
    p.set_rate(Rate::new(4e8).unwrap()).unwrap();
    assert_eq!((p.nanos_per_op(), p.effective_rate()), (2, 5e8));
    // A refused rate changes nothing.
    assert!(p.set_rate(Rate::new(2e9).unwrap()).is_err());
    assert_eq!(p.effective_rate(), 5e8);
}

#[test]
fn effective_rate_is_what_a_strict_schedule_delivers() {
    // 5.1e8/s strict: ops are ready 1 ns apart, 1e9/s, as reported.
    let clock = ManualClock::new(0);
    let p = pacer("510M,1.0", &clock);
    let ready: Vec<u64> = (0..1001)
        .map(|_| p.reserve(1, None).unwrap().ready_nanos())
        .collect();
    let span = ready[1000] - ready[0];
    assert_eq!(span, 1000);
    assert_eq!(1000.0 * 1e9 / span as f64, p.effective_rate());
}

/// A bounded request decided on a clock reading older than the schedule
/// (its thread was preempted after reading the clock, while another
/// thread's grant moved the spacing past that reading) reads the clock
/// again before refusing: at a rate far below its slot it is granted.
#[test]
fn a_stale_reading_is_refreshed_before_a_refusal() {
    use crate::test_util::ScriptedClock;
    for strictness in [1.0, 0.0] {
        // 1 000 a second: 1 ms slots.
        let clock = ScriptedClock::new(&[0]);
        let p = Pacer::builder(Rate::new(1000.0).unwrap())
            .strictness(strictness)
            .build_with_clock(&clock)
            .unwrap();
        p.try_acquire().unwrap();
        // Another thread's op at 10 ms (its slot and spacing to 11 ms).
        clock.then(&[10 * MS]);
        p.try_acquire().unwrap();
        // This thread read 9.5 ms before that op, and decides now, at 20 ms.
        clock.then(&[9 * MS + MS / 2, 20 * MS]);
        let g = p
            .try_acquire()
            .unwrap_or_else(|e| panic!("strictness {strictness}: {e}"));
        assert!(g.ready_nanos() <= 20 * MS, "{g:?}");
    }
}

/// The longest span a request may take is granted, one nanosecond more is
/// refused: the capacity check is `span > MAX_SPAN`, not `>=`.
#[test]
fn a_span_of_exactly_the_longest_slice_is_granted() {
    use super::decision::span_of;
    assert_eq!(span_of(1, MAX_SPAN), Ok(MAX_SPAN));
    assert_eq!(span_of(2, MAX_SPAN / 2), Ok(MAX_SPAN));
    assert_eq!(
        span_of(2, MAX_SPAN / 2 + 1),
        Err(AcquireError::InsufficientCapacity {
            requested: 2,
            max: 1
        })
    );
}
