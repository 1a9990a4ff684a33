//! Resilience4j's limiters under paused tokio time, on a `TokioClock`:
//! exact waits, events and the waiting gauge, and cancellation by dropping
//! a pending acquire (what the limiter gives back is its `cancel`'s to
//! decide; a twin limiter built and driven the same way says what to
//! expect).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratekeeper::tokio::{AsyncRateLimiter, TokioClock};
use ratekeeper::{Clock, Grant, RateLimiter};
use ratekeeper_resilience4j::tokio::AsyncPermitLimiter;
use ratekeeper_resilience4j::{
    CycleConfig, CycleLimiter, PermitEventKind, PermitLimiter, RefillConfig, RefillLimiter,
};
use tokio::time::timeout;

const MS: u64 = 1_000_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Polls `fut` once (registering its timer) and drops it: an acquire
/// abandoned while it waits.
async fn poll_once_then_drop<F: Future>(fut: F) {
    let mut fut = std::pin::pin!(fut);
    let polled =
        std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx).is_ready()));
    assert!(!polled.await, "the acquire was expected to wait");
}

// ---------------------------------------------------------------- Refill / cycle

fn refill_limiter(clock: TokioClock, timeout_ms: u64) -> RefillLimiter<TokioClock> {
    let config = RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(ms(10))
        .permit_capacity(2)
        .timeout(ms(timeout_ms))
        .build()
        .unwrap();
    RefillLimiter::new_with_clock("backend", config, clock)
}

fn event_log(l: &impl PermitLimiter) -> Arc<Mutex<Vec<(PermitEventKind, u64)>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    l.events()
        .subscribe(move |e| sink.lock().unwrap().push((e.kind(), e.clock_nanos())));
    log
}

#[tokio::test(start_paused = true)]
async fn refill_acquire_permission_async_waits_then_publishes() {
    let clock = TokioClock::new();
    let l = Arc::new(refill_limiter(clock, 25));
    let log = event_log(&*l);
    // One stored permit (initial = limit), then one every 10 ms.
    assert!(l.acquire_permission_async(1).await.unwrap());
    let waiting = l.acquire_permission_async(2);
    let observe = async {
        tokio::task::yield_now().await;
        // Decided at 0 (20 ms <= 25 ms), waiting, counted in the gauge.
        assert_eq!(l.metrics().waiting_threads, 1);
        assert_eq!(l.metrics().available_permissions, -2);
    };
    let (granted, ()) = tokio::join!(waiting, observe);
    assert!(granted.unwrap());
    assert_eq!(clock.now_nanos(), 20 * MS);
    assert_eq!(l.metrics().waiting_threads, 0);
    use PermitEventKind::*;
    assert_eq!(
        *log.lock().unwrap(),
        [(SuccessfulAcquire, 0), (SuccessfulAcquire, 20 * MS)]
    );
    // With two permits reserved ahead (20 ms), one more would wait 30 ms,
    // beyond the timeout: refused at once, nothing reserved.
    assert_eq!(
        l.reserve_permission(2).unwrap().nanos_to_wait(),
        20 * MS as i64
    );
    assert!(!l.acquire_permission_async(1).await.unwrap());
    assert_eq!(clock.now_nanos(), 20 * MS);
    assert_eq!(log.lock().unwrap().last(), Some(&(FailedAcquire, 20 * MS)));
    assert_eq!(l.metrics().available_permissions, -2);
    assert_eq!(l.metrics().waiting_threads, 0);
    // More than the capacity can never be granted: an error, no event.
    let events = log.lock().unwrap().len();
    assert!(l.acquire_permission_async(3).await.is_err());
    assert_eq!(log.lock().unwrap().len(), events);
}

#[tokio::test(start_paused = true)]
async fn refill_dropped_permission_is_abandoned_and_given_back() {
    let clock = TokioClock::new();
    let twin = refill_limiter(clock, 50);
    twin.try_acquire().unwrap();
    let r = twin.reserve(1, None).unwrap();
    let gives_back = twin.cancel(&r);

    let l = refill_limiter(clock, 50);
    let log = event_log(&l);
    assert!(l.acquire_permission_async(1).await.unwrap());
    assert!(timeout(ms(4), l.acquire_permission_async(1)).await.is_err());
    // Abandoned: a failure event, no longer waiting.
    assert_eq!(l.metrics().waiting_threads, 0);
    assert_eq!(
        log.lock().unwrap().last(),
        Some(&(PermitEventKind::FailedAcquire, 4 * MS))
    );
    // The permit is owed or not as `cancel` says.
    let next = l.reserve(1, None).unwrap().ready_nanos();
    assert_eq!(next, if gives_back { 10 * MS } else { 20 * MS });
}

#[tokio::test(start_paused = true)]
async fn refill_rate_limiter_face_waits_and_cancels() {
    let clock = TokioClock::new();
    let twin = refill_limiter(clock, 0);
    twin.try_acquire().unwrap();
    let r = twin.reserve(1, None).unwrap();
    let gives_back = twin.cancel(&r);

    let l = refill_limiter(clock, 0);
    l.acquire_async().await;
    let g = l.acquire_async().await;
    assert_eq!(g.started_nanos(), 10 * MS);
    // The limiter's own timeout does not apply to this face: the caller's does.
    let err = l.acquire_timeout_async(1, ms(9)).await.unwrap_err();
    assert_eq!(err.retry_after(), Some(ms(10)));
    poll_once_then_drop(l.acquire_async()).await;
    let next = l.reserve(1, None).unwrap().ready_nanos();
    assert_eq!(next, if gives_back { 20 * MS } else { 30 * MS });
}

#[tokio::test(start_paused = true)]
async fn cycle_limiter_waits_for_the_next_cycle() {
    let clock = TokioClock::new();
    let config = CycleConfig::builder()
        .limit_for_period(2)
        .limit_refresh_period(ms(10))
        .timeout(ms(25))
        .build()
        .unwrap();
    let l = CycleLimiter::new_with_clock("jobs", config, clock);
    let mut starts = Vec::new();
    for _ in 0..5 {
        assert!(l.acquire_permission_async(1).await.unwrap());
        starts.push(clock.now_nanos());
    }
    assert_eq!(starts, [0, 0, 10 * MS, 10 * MS, 20 * MS]);
    // Next: a permit of the cycle at 20 ms is left; 3 more need the cycles
    // at 30 ms: 10 ms away, within the timeout; 5 more: 40 ms, refused.
    assert!(l.acquire_permission_async(1).await.unwrap());
    assert!(!l.acquire_permission_async(5).await.unwrap());
    assert_eq!(clock.now_nanos(), 20 * MS);
    let g = l.acquire_n_async(2).await.unwrap();
    assert_eq!(g.started_nanos(), 30 * MS);
}

#[tokio::test(start_paused = true)]
async fn cycle_dropped_acquire_is_cancelled() {
    let clock = TokioClock::new();
    let config = CycleConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(ms(10))
        .timeout(ms(100))
        .build()
        .unwrap();
    let twin = CycleLimiter::new_with_clock("twin", config, clock);
    twin.try_acquire().unwrap();
    let r = twin.reserve(1, None).unwrap();
    let gives_back = twin.cancel(&r);

    let l = CycleLimiter::new_with_clock("jobs", config, clock);
    l.acquire_async().await;
    assert!(timeout(ms(3), l.acquire_async()).await.is_err());
    let g: Grant = l.acquire_async().await;
    let expected = if gives_back { 10 * MS } else { 20 * MS };
    assert_eq!(g.started_nanos(), expected);
}
