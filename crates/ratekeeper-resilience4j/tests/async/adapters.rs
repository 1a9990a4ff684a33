//! The async decorators under paused tokio time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratekeeper::tokio::TokioClock;
use ratekeeper::Clock;
use ratekeeper_resilience4j::decorate::NotPermitted;
use ratekeeper_resilience4j::tokio::decorate::{self, AsyncRateLimited};
use ratekeeper_resilience4j::{PermitError, PermitEventKind, PermitLimiter, RefillLimiter};
use tokio::time::timeout;

const MS: u64 = 1_000_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// 1 permit per 10 ms, a bucket of `capacity`, `initial` stored, a timeout.
fn bucket(
    clock: TokioClock,
    capacity: i64,
    initial: i64,
    timeout_ms: u64,
) -> RefillLimiter<TokioClock> {
    let config = ratekeeper_resilience4j::compat::ConfigBuilder::new()
        .limit_for_period(1)
        .limit_refresh_period(ms(10))
        .permit_capacity(capacity)
        .initial_permits(initial)
        .timeout(ms(timeout_ms))
        .build()
        .unwrap();
    RefillLimiter::new_with_clock("backend", config, clock)
}

// ---------------------------------------------------------------- decorators

fn event_log(l: &impl PermitLimiter) -> Arc<Mutex<Vec<PermitEventKind>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    l.events()
        .subscribe(move |e| sink.lock().unwrap().push(e.kind()));
    log
}

#[tokio::test(start_paused = true)]
async fn refused_calls_are_not_created() {
    let b = bucket(TokioClock::new(), 1, 1, 0);
    let created = AtomicUsize::new(0);
    let make = || {
        created.fetch_add(1, Ordering::Relaxed);
        async { "ran" }
    };
    assert_eq!(decorate::call(&b, 1, make).await, Ok("ran"));
    let err = decorate::call(&b, 1, make).await.unwrap_err();
    assert_eq!(err, NotPermitted::new("backend"));
    assert_eq!(created.load(Ordering::Relaxed), 1);
    // Never grantable: typed, nothing created, no event.
    let log = event_log(&b);
    let err = decorate::call(&b, 2, make).await.unwrap_err();
    assert_eq!(
        err.permit_error(),
        Some(PermitError::ExceedsCapacity {
            requested: 2,
            capacity: 1
        })
    );
    assert_eq!(
        decorate::wait_for_permission(&b, 0)
            .await
            .unwrap_err()
            .permit_error(),
        Some(PermitError::InvalidPermits)
    );
    assert_eq!(created.load(Ordering::Relaxed), 1);
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_call_within_the_timeout_waits_then_runs() {
    let clock = TokioClock::new();
    let b = bucket(clock, 1, 1, 10);
    let guarded = AsyncRateLimited::new(&b);
    let seen = Mutex::new(Vec::new());
    for _ in 0..3 {
        guarded
            .call(|| async { seen.lock().unwrap().push(clock.now_nanos()) })
            .await
            .unwrap();
    }
    assert_eq!(*seen.lock().unwrap(), [0, 10 * MS, 20 * MS]);
    // One permit reserved ahead: the next call would wait 20 ms > 10 ms.
    b.reserve_permission(1).unwrap();
    assert!(guarded.call(|| async {}).await.is_err());
    assert_eq!(clock.now_nanos(), 20 * MS);
}

#[tokio::test(start_paused = true)]
async fn permits_from_the_argument_and_the_drain_policy() {
    let b = bucket(TokioClock::new(), 10, 10, 0);
    let log = event_log(&b);
    let send = AsyncRateLimited::new(&b)
        .permits_with(|batch: &Vec<u8>| batch.len() as u32)
        .drain_when(|r: &Result<(), u16>| matches!(r, Err(429)));
    let backend = |batch: Vec<u8>| async move {
        if batch.is_empty() {
            Err(429)
        } else {
            Ok(())
        }
    };
    assert_eq!(send.call_with(vec![1, 2, 3], backend).await, Ok(Ok(())));
    assert_eq!(b.metrics().available_permissions, 7);
    // An empty batch takes zero permits: never grantable.
    assert_eq!(
        send.call_with(vec![], backend)
            .await
            .unwrap_err()
            .permit_error(),
        Some(PermitError::InvalidPermits)
    );
    let fixed = AsyncRateLimited::new(&b)
        .permits(2)
        .drain_when(|r: &Result<(), u16>| matches!(r, Err(429)));
    assert_eq!(fixed.call(|| async { Err(429) }).await, Ok(Err(429)));
    assert_eq!(b.metrics().available_permissions, 0);
    use PermitEventKind::*;
    assert_eq!(
        *log.lock().unwrap(),
        [SuccessfulAcquire, SuccessfulAcquire, Drained]
    );
    assert!(format!("{fixed:?}").contains("\"backend\""));
    assert_eq!(fixed.limiter().name(), "backend");
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_waiting_is_abandoned_and_not_run() {
    let clock = TokioClock::new();
    let b = Arc::new(bucket(clock, 1, 1, 100));
    let log = event_log(&*b);
    let guarded = AsyncRateLimited::new(b.clone());
    guarded.call(|| async {}).await.unwrap();
    let ran = AtomicUsize::new(0);
    let waiting = guarded.call(|| async {
        ran.fetch_add(1, Ordering::Relaxed);
    });
    assert!(timeout(ms(5), waiting).await.is_err());
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    assert_eq!(b.metrics().waiting_threads, 0);
    use PermitEventKind::*;
    assert_eq!(*log.lock().unwrap(), [SuccessfulAcquire, FailedAcquire]);
}
