//! Loom models of the Resilience4j limiters' shared state: concurrent
//! reservations, limit changes and drains on the core bucket algorithms,
//! through Resilience4j's interface.
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p ratekeeper-resilience4j --test loom`
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use ratekeeper::{Clock, ManualClock};
use ratekeeper_resilience4j::{CycleLimiter, Permission, PermitLimiter, RefillLimiter};

/// A bucket of `capacity` permits, all stored, `npp` ns each, with
/// `timeout` ns of waiting allowed, on a clock frozen at 0.
fn bucket(limit: i64, npp: i64, capacity: i64, timeout: i64) -> Arc<RefillLimiter<ManualClock>> {
    let config = ratekeeper_resilience4j::compat::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(limit * npp)
        .permit_capacity(capacity)
        .initial_permits(capacity)
        .timeout_nanos(timeout)
        .build()
        .unwrap();
    Arc::new(RefillLimiter::new_with_clock(
        "loom",
        config,
        ManualClock::new(0),
    ))
}

fn cycles(limit: i64, clock: &ManualClock) -> Arc<CycleLimiter<ManualClock>> {
    let config = ratekeeper_resilience4j::compat::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(1_000)
        .timeout_nanos(0)
        .build_cycle()
        .unwrap();
    Arc::new(CycleLimiter::new_with_clock("loom", config, clock.clone()))
}

fn spawn_reserve<L: PermitLimiter + Send + Sync + 'static>(
    l: &Arc<L>,
    permits: u32,
) -> thread::JoinHandle<Permission> {
    let l = Arc::clone(l);
    thread::spawn(move || l.reserve_permission(permits).unwrap())
}

/// Three callers race for two stored permits: exactly two are granted,
/// none twice (each grant is one compare-exchange on the time index).
#[test]
fn refill_concurrent_reservations_never_double_spend() {
    loom::model(|| {
        let l = bucket(2, 1_000, 2, 0);
        let hs: Vec<_> = (0..3).map(|_| spawn_reserve(&l, 1)).collect();
        let got: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let granted = got.iter().filter(|p| **p == Permission::Now).count();
        assert_eq!(granted, 2, "{got:?}");
        assert_eq!(l.metrics().available_permissions, 0);
    });
}

/// A reservation races a limit change (the retire protocol). One stored
/// permit, a request for two with a wait allowed: decided on the old
/// core it waits 1000 ns (one permit at the old rate), on the new core
/// 500 ns; either way exactly one permit is owed afterwards (nothing
/// lost, nothing minted) and the change took effect.
#[test]
fn refill_limit_change_racing_a_reservation_loses_and_mints_nothing() {
    loom::model(|| {
        let l = bucket(2, 1_000, 2, 10_000);
        assert_eq!(l.reserve_permission(1).unwrap(), Permission::Now);
        let a = spawn_reserve(&l, 2);
        let b = {
            let l = Arc::clone(&l);
            thread::spawn(move || l.change_limit_for_period(4).unwrap())
        };
        let p = a.join().unwrap();
        b.join().unwrap();
        let wait = p.nanos_to_wait();
        assert!(wait == 1_000 || wait == 500, "{p:?}");
        assert_eq!(l.metrics().available_permissions, -1, "after {p:?}");
        assert_eq!(
            l.metrics().nanos_to_wait,
            1_000,
            "two permits of 500 ns owed"
        );
        assert_eq!(l.config().limit_for_period(), 4);
    });
}

/// A drain races a reservation: the permits drained plus the permits
/// granted at once never exceed the two stored.
#[test]
fn refill_drain_racing_a_reservation_drains_what_was_not_granted() {
    loom::model(|| {
        let l = bucket(2, 1_000, 2, 10_000);
        let a = spawn_reserve(&l, 1);
        let drained = l.drain_permissions();
        let p = a.join().unwrap();
        let avail = l.metrics().available_permissions;
        match p {
            // Granted from the bucket before the drain.
            Permission::Now => assert_eq!((drained, avail), (1, 0)),
            // Drained first: reserved one permit's time ahead.
            Permission::After(_) => assert_eq!((drained, avail), (2, -1)),
            Permission::Refused => panic!("refused within the timeout"),
        }
    });
}

/// Three callers race for a cycle of two permits: exactly two granted.
#[test]
fn cycle_concurrent_reservations_never_double_spend() {
    loom::model(|| {
        let l = cycles(2, &ManualClock::new(0));
        let hs: Vec<_> = (0..3).map(|_| spawn_reserve(&l, 1)).collect();
        let got: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let granted = got.iter().filter(|p| **p == Permission::Now).count();
        assert_eq!(granted, 2, "{got:?}");
        assert_eq!(l.metrics().available_permissions, 0);
    });
}

/// A reservation races a limit change: the current cycle keeps its count
/// (one of two left after the grant, whichever core it was decided on),
/// and the next cycle has the new limit.
#[test]
fn cycle_limit_change_racing_a_reservation_loses_and_mints_nothing() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let l = cycles(2, &clock);
        let a = spawn_reserve(&l, 1);
        let b = {
            let l = Arc::clone(&l);
            thread::spawn(move || l.change_limit_for_period(5).unwrap())
        };
        assert_eq!(a.join().unwrap(), Permission::Now);
        b.join().unwrap();
        assert_eq!(l.metrics().available_permissions, 1);
        clock.advance_nanos(1_000);
        assert_eq!(clock.now_nanos(), 1_000);
        assert_eq!(l.metrics().available_permissions, 5);
    });
}
