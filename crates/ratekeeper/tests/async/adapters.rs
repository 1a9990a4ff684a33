//! The `Stream` throttle under paused tokio time.

use std::time::Duration;

use futures_util::{Stream, StreamExt};
use ratekeeper::bucket::RefillLimiter;
use ratekeeper::tokio::{ThrottleExt, Throttled, TokioClock};
use ratekeeper::{Clock, Pacer, Rate, RateLimiter};
use tokio::time::{timeout, Instant};

const MS: u64 = 1_000_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn strict(clock: TokioClock, rate: f64) -> Pacer<TokioClock> {
    Pacer::builder(Rate::new(rate).unwrap())
        .strictness(1.0)
        .build_with_clock(clock)
        .unwrap()
}

/// 1 permit per 10 ms, a bucket of `capacity`, `initial` stored, a timeout.
fn bucket(
    clock: TokioClock,
    capacity: u64,
    initial: u64,
    timeout_ms: u64,
) -> RefillLimiter<TokioClock> {
    let config = ratekeeper::bucket::RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(ms(10))
        .permit_capacity(capacity)
        .initial_permits(initial)
        .timeout(ms(timeout_ms))
        .build()
        .unwrap();
    RefillLimiter::new_with_clock(config, clock)
}

// ---------------------------------------------------------------- Stream

#[tokio::test(start_paused = true)]
async fn stream_items_leave_on_the_schedule() {
    let clock = TokioClock::new();
    let p = strict(clock, 100.0);
    let start = Instant::now();
    let times: Vec<_> = futures_util::stream::iter(0..5)
        .throttled(&p)
        .map(|i| (i, start.elapsed()))
        .collect()
        .await;
    let expected: Vec<_> = (0..5).map(|i| (i, ms(10 * i))).collect();
    assert_eq!(times, expected);
}

#[tokio::test(start_paused = true)]
async fn stream_weights_and_free_items() {
    let clock = TokioClock::new();
    let p = strict(clock, 100.0);
    let start = Instant::now();
    // Each item takes its value in permits; 0 is free.
    let times: Vec<_> = futures_util::stream::iter([2u32, 0, 3, 1])
        .throttled_by(&p, |n: &u32| *n)
        .map(|n| (n, start.elapsed()))
        .collect()
        .await;
    assert_eq!(times, [(2, ms(0)), (0, ms(0)), (3, ms(20)), (1, ms(50))]);
}

#[tokio::test(start_paused = true)]
async fn stream_item_heavier_than_the_capacity_is_charged_in_pieces() {
    let clock = TokioClock::new();
    // Capacity 2, one stored: 5 permits are taken 2 + 2 + 1, the last
    // going when the bucket has refilled 4 (at 40 ms).
    let b = bucket(clock, 2, 1, 0);
    let start = Instant::now();
    let s = Throttled::new(futures_util::stream::iter([5u32, 1]), &b, |n: &u32| *n);
    let times: Vec<_> = s.map(|n| (n, start.elapsed())).collect().await;
    assert_eq!(times, [(5, ms(40)), (1, ms(50))]);
    assert_eq!(b.available_permits(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_gives_the_waiting_item_back() {
    let clock = TokioClock::new();
    let twin = strict(clock, 100.0);
    twin.try_acquire().unwrap();
    let r = twin.reserve(1, None).unwrap();
    let gives_back = twin.cancel(&r);

    let p = strict(clock, 100.0);
    let mut s = futures_util::stream::iter(0..3).throttled(&p);
    assert_eq!(s.next().await, Some(0));
    // The second item waits for 10 ms; the stream is dropped at 5 ms.
    assert!(timeout(ms(5), s.next()).await.is_err());
    drop(s);
    let next = p.reserve(1, None).unwrap().ready_nanos();
    assert_eq!(next, if gives_back { 10 * MS } else { 20 * MS });
}

#[tokio::test(start_paused = true)]
async fn a_dropped_next_keeps_the_item_and_its_reservation() {
    let clock = TokioClock::new();
    let p = strict(clock, 100.0);
    let mut s = futures_util::stream::iter(0..3)
        .throttled(&p)
        .coalesce(Duration::ZERO);
    assert_eq!(s.next().await, Some(0));
    assert!(timeout(ms(5), s.next()).await.is_err());
    assert_eq!(s.size_hint(), (2, Some(2)));
    // Still item 1, still its slot at 10 ms.
    assert_eq!(s.next().await, Some(1));
    assert_eq!(clock.now_nanos(), 10 * MS);
    assert_eq!(s.next().await, Some(2));
    assert_eq!(clock.now_nanos(), 20 * MS);
    assert_eq!(s.next().await, None);
}
