//! Loom models of the Pacer's lock-free paths.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p ratekeeper --test loom`
#![cfg(loom)]

use std::sync::Arc;
use std::time::Duration;

use loom::thread;
use ratekeeper::{Clock, ManualClock, Pacer, Rate, RateLimiter, WaitPolicy};

const OP: u64 = 1_000_000; // 1000 ops/s

fn pacer(strictness: f64, clock: &ManualClock) -> Arc<Pacer<ManualClock>> {
    Arc::new(
        Pacer::builder(Rate::new(1000.0).unwrap())
            .strictness(strictness)
            .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
            .build_with_clock(clock.clone())
            .unwrap(),
    )
}

/// Slots handed out concurrently are unique and contiguous, none lost, and no
/// grant is ready before its slot; the last-seen clock is exercised because a
/// third thread moves time forward.
fn slots_are_unique(strictness: f64, threads: usize) {
    loom::model(move || {
        let clock = ManualClock::new(0);
        let p = pacer(strictness, &clock);
        let mut handles = Vec::new();
        for _ in 0..threads {
            let p = p.clone();
            handles.push(thread::spawn(move || p.reserve(1, None).unwrap()));
        }
        let ticker = {
            let clock = clock.clone();
            thread::spawn(move || clock.advance_nanos(3 * OP))
        };
        let mut grants: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        ticker.join().unwrap();
        grants.sort_by_key(|g| g.scheduled_nanos());
        for (i, g) in grants.iter().enumerate() {
            assert_eq!(
                g.scheduled_nanos(),
                i as u64 * OP,
                "slot handed out twice or lost"
            );
            assert!(g.ready_nanos() >= g.scheduled_nanos());
            assert!(
                g.started_nanos() <= clock.now_nanos(),
                "a start later than the present"
            );
        }
        assert_eq!(p.next_slot_nanos(), threads as u64 * OP);
        if strictness >= 1.0 {
            // Grants off their slot are a burst slice apart on the actual timeline.
            let burst = if strictness == 1.0 {
                OP
            } else {
                (1e9 / (1000.0 * strictness)) as u64
            };
            let mut off: Vec<u64> = grants
                .iter()
                .filter(|g| g.ready_nanos() > g.scheduled_nanos())
                .map(|g| g.ready_nanos())
                .collect();
            off.sort_unstable();
            for w in off.windows(2) {
                assert!(
                    w[1] - w[0] >= burst,
                    "{} and {} closer than {burst}",
                    w[0],
                    w[1]
                );
            }
        }
    });
}

#[test]
fn average_two_threads() {
    slots_are_unique(0.0, 2);
}

#[test]
fn average_three_threads() {
    slots_are_unique(0.0, 3);
}

#[test]
fn strict_two_threads() {
    slots_are_unique(1.0, 2);
}

#[test]
fn burst_two_threads() {
    slots_are_unique(1.5, 2);
}

/// Bounded reservations racing a plain one: a refused try leaves the schedule
/// as it was, a granted one takes exactly one slot.
#[test]
fn bounded_refusals_change_nothing() {
    for strictness in [0.0, 1.5] {
        loom::model(move || {
            let clock = ManualClock::new(0);
            let p = pacer(strictness, &clock);
            let a = {
                let p = p.clone();
                thread::spawn(move || p.reserve(1, None).unwrap())
            };
            let b = {
                let p = p.clone();
                thread::spawn(move || p.try_acquire())
            };
            let ga = a.join().unwrap();
            let gb = b.join().unwrap();
            let taken = 1 + u64::from(gb.is_ok());
            assert_eq!(p.next_slot_nanos(), taken * OP);
            if let Ok(gb) = gb {
                assert_ne!(ga.scheduled_nanos(), gb.scheduled_nanos());
                assert_eq!(gb.ready_nanos(), gb.started_nanos(), "a try that must wait");
            }
        });
    }
}

/// A rate change racing a reservation: the grant lands on the old timeline
/// (and is in the checkpoint) or on the new one, never lost or doubled; the
/// backlog is counted once.
#[test]
fn rate_change_races_a_reservation() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pacer(0.0, &clock);
        clock.advance_nanos(5 * OP); // 5 slots behind
        let a = {
            let p = p.clone();
            thread::spawn(move || p.reserve(1, None).unwrap())
        };
        let b = {
            let p = p.clone();
            thread::spawn(move || p.set_rate(Rate::new(2000.0).unwrap()).unwrap())
        };
        let g = a.join().unwrap();
        b.join().unwrap();
        let next = p.next_slot_nanos();
        if g.scheduled_nanos() == 0 {
            // Old timeline: the change checkpointed the 5 slots minus the one
            // this grant took (sized at either rate: it may have read the new
            // slice before the swap), and restarted the schedule at now.
            let span = 5 * OP - p.accumulated_wait_nanos();
            assert!(span == OP || span == OP / 2, "span {span}");
            assert_eq!(next, 5 * OP);
        } else {
            // New timeline, restarted at the change: the whole backlog was
            // checkpointed, and this grant took the first new slot (at either
            // rate: an acquire racing a change may use either).
            assert_eq!(g.scheduled_nanos(), 5 * OP);
            assert_eq!(p.accumulated_wait_nanos(), 5 * OP);
            assert!(next == 5 * OP + OP || next == 5 * OP + OP / 2);
        }
    });
}
