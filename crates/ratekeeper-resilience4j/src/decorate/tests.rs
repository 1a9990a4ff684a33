//! Unit tests of the decorators on a manual clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::{CycleLimiter, PermitEventKind, RefillConfig, RefillLimiter};
use ratekeeper::{Clock, ManualClock};

/// `limit` permits per µs, capacity `limit`, timeout `timeout` ns.
fn refill(limit: i64, timeout: i64) -> (RefillLimiter<ManualClock>, ManualClock) {
    let config = crate::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(1_000)
        .timeout_nanos(timeout)
        .build()
        .unwrap();
    let clock = ManualClock::new(0);
    (
        RefillLimiter::new_with_clock("backend", config, clock.clone()),
        clock,
    )
}

fn events(l: &impl PermitLimiter) -> Arc<Mutex<Vec<(PermitEventKind, u64)>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    l.events()
        .subscribe(move |e| sink.lock().unwrap().push((e.kind(), e.permits())));
    log
}

#[test]
fn refused_calls_are_not_run() {
    let (l, _) = refill(1, 0);
    let calls = AtomicUsize::new(0);
    let f = RateLimited::new(&l).decorate(|x: u32| {
        calls.fetch_add(1, Ordering::Relaxed);
        x + 1
    });
    assert_eq!(f(1), Ok(2));
    let log = events(&l);
    let err = f(2).unwrap_err();
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert_eq!(err, NotPermitted::new("backend"));
    assert_eq!(err.limiter_name(), "backend");
    assert_eq!(err.permit_error(), None);
    assert!(std::error::Error::source(&err).is_none());
    assert_eq!(
        err.to_string(),
        "RateLimiter 'backend' does not permit further calls"
    );
    assert_eq!(*log.lock().unwrap(), [(PermitEventKind::FailedAcquire, 1)]);
    // Nothing was reserved by the refusal.
    assert_eq!(l.metrics().available_permissions, 0);
    assert_eq!(l.metrics().nanos_to_wait, 1_000);
}

#[test]
fn a_call_within_the_timeout_waits_then_runs() {
    // 1 permit per µs, timeout 1 µs: the second call waits 1 µs (the
    // manual clock advances while "sleeping") and runs at t = 1 µs.
    let (l, clock) = refill(1, 1_000);
    let seen = Mutex::new(Vec::new());
    let f = RateLimited::new(&l).decorate(|()| seen.lock().unwrap().push(clock.now_nanos()));
    f(()).unwrap();
    f(()).unwrap();
    assert_eq!(*seen.lock().unwrap(), [0, 1_000]);
    // With one more permit reserved ahead, the next call would wait
    // 2 µs: refused at once, not run, the clock untouched.
    assert_eq!(l.reserve_permission(1).unwrap().nanos_to_wait(), 1_000);
    assert!(f(()).is_err());
    assert_eq!(clock.now_nanos(), 1_000);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn permit_errors_are_typed_and_the_call_is_not_run() {
    let (l, _) = refill(5, 0);
    let log = events(&l);
    let f = RateLimited::new(&l)
        .permits_with(|n: &u32| *n)
        .decorate(|_: u32| unreachable!("never granted"));
    let zero = f(0).unwrap_err();
    assert_eq!(zero.permit_error(), Some(PermitError::InvalidPermits));
    assert_eq!(
        zero.to_string(),
        "RateLimiter 'backend' can never grant the permits asked for"
    );
    let too_many = f(6).unwrap_err();
    assert_eq!(
        too_many.permit_error(),
        Some(PermitError::ExceedsCapacity {
            requested: 6,
            capacity: 5
        })
    );
    let source = std::error::Error::source(&too_many).map(|s| s.to_string());
    assert_eq!(source, too_many.permit_error().map(|e| e.to_string()));
    // Typed errors publish nothing and take nothing.
    assert!(log.lock().unwrap().is_empty());
    assert_eq!(l.metrics().available_permissions, 5);
    assert_eq!(
        wait_for_permission(&l, 0).unwrap_err().permit_error(),
        Some(PermitError::InvalidPermits)
    );
}

#[test]
fn permits_are_computed_from_the_argument_before_the_call() {
    let (l, _) = refill(10, 0);
    let sizes = Mutex::new(Vec::new());
    let mut f = RateLimited::new(&l)
        .permits_with(|batch: &Vec<u8>| batch.len() as u32)
        .decorate_mut(|batch: Vec<u8>| sizes.lock().unwrap().push(batch.len()));
    f(vec![0; 4]).unwrap();
    assert_eq!(l.metrics().available_permissions, 6);
    f(vec![0; 6]).unwrap();
    assert!(f(vec![0; 1]).is_err());
    drop(f);
    assert_eq!(*sizes.lock().unwrap(), [4, 6]);
}

#[test]
fn drain_policy_is_consulted_with_every_output() {
    let (l, _) = refill(10, 0);
    let log = events(&l);
    let consulted = Mutex::new(Vec::new());
    let f = RateLimited::new(&l)
        .drain_when(|r: &Result<u32, u16>| {
            consulted.lock().unwrap().push(*r);
            matches!(r, Err(429))
        })
        .decorate(|status: u16| if status == 200 { Ok(7) } else { Err(status) });
    assert_eq!(f(200), Ok(Ok(7)));
    assert_eq!(f(500), Ok(Err(500))); // an error that does not drain
    assert_eq!(l.metrics().available_permissions, 8);
    assert_eq!(f(429), Ok(Err(429)));
    assert_eq!(l.metrics().available_permissions, 0);
    // The refused call is not run, so the policy is not consulted.
    assert!(f(200).is_err());
    assert_eq!(*consulted.lock().unwrap(), [Ok(7), Err(500), Err(429)]);
    use PermitEventKind::*;
    assert_eq!(
        *log.lock().unwrap(),
        [
            (SuccessfulAcquire, 1),
            (SuccessfulAcquire, 1),
            (SuccessfulAcquire, 1),
            (Drained, 7),
            (FailedAcquire, 1)
        ]
    );
}

#[test]
fn once_mut_and_fn_decorators_on_a_cycle_limiter() {
    let config = crate::ConfigBuilder::new()
        .limit_for_period(3)
        .limit_refresh_period_nanos(1_000)
        .timeout_nanos(0)
        .build_cycle()
        .unwrap();
    let clock = ManualClock::new(0);
    let l = Arc::new(CycleLimiter::new_with_clock("jobs", config, clock.clone()));
    let owned = String::from("x");
    let once = RateLimited::new(l.clone()).decorate_once(move |n: usize| owned.repeat(n));
    assert_eq!(once(3).unwrap(), "xxx");
    let mut total = 0;
    let mut add = RateLimited::new(l.clone()).decorate_mut(|n: i32| {
        total += n;
        total
    });
    assert_eq!(add(2), Ok(2));
    assert_eq!(add(3), Ok(5));
    assert_eq!(add(4).unwrap_err().limiter_name(), "jobs");
    drop(add);
    assert_eq!(total, 5);
    // The next cycle has permits again.
    clock.advance_nanos(1_000);
    let id = RateLimited::new(&*l).decorate(|x: u8| x);
    assert_eq!(id(9), Ok(9));
}

#[test]
fn a_decorated_function_is_shared_by_threads() {
    // 100 permits, no refill within the test (1 per 10 s), timeout 0:
    // exactly 100 of the 400 calls run.
    let config = RefillConfig::builder()
        .limit_for_period(100)
        .limit_refresh_period(Duration::from_secs(1_000))
        .timeout(Duration::ZERO)
        .build()
        .unwrap();
    let l = Arc::new(RefillLimiter::new_with_clock(
        "shared",
        config,
        ManualClock::new(0),
    ));
    let runs = AtomicUsize::new(0);
    let f = RateLimited::new(l.clone()).decorate(|()| {
        runs.fetch_add(1, Ordering::Relaxed);
    });
    let refused = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..100 {
                    if f(()).is_err() {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(runs.load(Ordering::Relaxed), 100);
    assert_eq!(refused.load(Ordering::Relaxed), 300);
}

#[test]
fn call_and_wait_for_permission_take_permits() {
    let (l, _) = refill(4, 0);
    assert_eq!(call(&l, 3, || "ran"), Ok("ran"));
    assert!(wait_for_permission(&l, 1).is_ok());
    assert_eq!(
        wait_for_permission(&l, 1),
        Err(NotPermitted::new("backend"))
    );
    let debug = format!("{:?}", RateLimited::new(&l).permits(2));
    assert!(debug.contains("\"backend\""), "{debug}");
}
