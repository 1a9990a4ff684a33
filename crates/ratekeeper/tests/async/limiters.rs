//! Async waiting under paused tokio time: exact durations, timed acquires
//! refused at once, and cancellation by dropping a pending future, for every
//! limiter, on a `TokioClock`.
//!
//! Where a test drops a pending acquire, what the limiter gives back is its
//! `cancel`'s to decide (each limiter documents it). The tests ask a twin
//! limiter, built the same way and driven the same way, whether `cancel`
//! gives that reservation back, and expect the state that follows: the
//! assertions hold whatever `cancel` does, as long as the async layer calls
//! it (a layer that did not would fail wherever `cancel` gives back).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratekeeper::pool::{Filling, TokenPool};
use ratekeeper::tokio::{AsyncRateLimiter, Reservation, TokioClock};
use ratekeeper::{
    AcquireError, Clock, Pacer, Rate, RateLimiter, SmoothBursty, SmoothWarmingUp, WaitPolicy,
};
use tokio::time::{advance, timeout, Instant};

const MS: u64 = 1_000_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn pacer(clock: TokioClock, rate: f64, strictness: f64) -> Pacer<TokioClock> {
    Pacer::builder(Rate::new(rate).unwrap())
        .strictness(strictness)
        .build_with_clock(clock)
        .unwrap()
}

/// Polls `fut` once (registering its timer) and drops it: an acquire
/// abandoned while it waits.
async fn poll_once_then_drop<F: Future>(fut: F) {
    let mut fut = std::pin::pin!(fut);
    let polled =
        std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx).is_ready()));
    assert!(!polled.await, "the acquire was expected to wait");
}

// ---------------------------------------------------------------- Pacer

#[tokio::test(start_paused = true)]
async fn pacer_waits_are_exact() {
    let clock = TokioClock::new();
    let p = pacer(clock, 100.0, 1.1);
    let start = Instant::now();
    let mut starts = Vec::new();
    for _ in 0..4 {
        starts.push(p.acquire_async().await.started_nanos());
    }
    assert_eq!(starts, [0, 10 * MS, 20 * MS, 30 * MS]);
    assert_eq!(start.elapsed(), ms(30));
    // Three permits take three slots: the next one is 30 ms later.
    let g = p.acquire_n_async(3).await.unwrap();
    assert_eq!(g.ready_nanos(), 40 * MS);
    assert_eq!(p.acquire_async().await.started_nanos(), 70 * MS);
    assert_eq!(clock.now_nanos(), 70 * MS);
    // Each op started on its schedule: no wait time.
    assert_eq!(g.wait_nanos(), 0);
}

#[tokio::test(start_paused = true)]
async fn pacer_errors_come_from_the_first_poll() {
    let p = pacer(TokioClock::new(), 100.0, 1.1);
    assert_eq!(p.acquire_n_async(0).await, Err(AcquireError::ZeroPermits));
    // An unpolled future reserves nothing.
    let unpolled = p.acquire_n_async(5);
    drop(unpolled);
    assert_eq!(p.acquire_async().await.ready_nanos(), 0);
    assert_eq!(p.acquire_async().await.ready_nanos(), 10 * MS);
}

#[tokio::test(start_paused = true)]
async fn pacer_timed_acquire_refuses_at_once_and_changes_nothing() {
    let p = pacer(TokioClock::new(), 100.0, 1.0);
    p.acquire_async().await;
    let start = Instant::now();
    let err = p.acquire_timeout_async(1, ms(5)).await.unwrap_err();
    assert_eq!(
        err,
        AcquireError::WouldWait {
            wait: ms(10),
            max_wait: ms(5)
        }
    );
    assert_eq!(start.elapsed(), Duration::ZERO);
    // Within the timeout it waits, for the slot the refusal left free.
    let g = p.acquire_timeout_async(1, ms(10)).await.unwrap();
    assert_eq!((g.ready_nanos(), g.started_nanos()), (10 * MS, 10 * MS));
    assert_eq!(start.elapsed(), ms(10));
}

/// A pacer and its twin, each with a first permit taken at 0 and a second
/// reserved: whether `cancel` gives the second back.
fn pacer_gives_back_the_latest(clock: TokioClock) -> bool {
    let twin = pacer(clock, 100.0, 1.1);
    twin.try_acquire().unwrap();
    let second = twin.reserve(1, None).unwrap();
    twin.cancel(&second)
}

#[tokio::test(start_paused = true)]
async fn pacer_dropped_acquire_gives_its_slot_back() {
    let clock = TokioClock::new();
    let gives_back = pacer_gives_back_the_latest(clock);
    let p = pacer(clock, 100.0, 1.1);
    p.acquire_async().await;
    // The second acquire (slot at 10 ms) is abandoned at 5 ms.
    assert!(timeout(ms(5), p.acquire_async()).await.is_err());
    assert_eq!(clock.now_nanos(), 5 * MS);
    let next = p.acquire_async().await;
    let expected = if gives_back { 10 * MS } else { 20 * MS };
    assert_eq!(next.ready_nanos(), expected);
    assert_eq!(clock.now_nanos(), expected);
}

#[tokio::test(start_paused = true)]
async fn pacer_dropped_after_a_poll_cancels_as_a_reservation_does() {
    // The same through a reservation value: both give back identically.
    let clock = TokioClock::new();
    let a = pacer(clock, 100.0, 1.1);
    let b = pacer(clock, 100.0, 1.1);
    a.acquire_async().await;
    b.acquire_async().await;
    poll_once_then_drop(a.acquire_async()).await;
    let given = b.reservation(1, None).unwrap().cancel();
    assert_eq!(given, pacer_gives_back_the_latest(clock));
    let (ga, gb) = (a.reserve(1, None).unwrap(), b.reserve(1, None).unwrap());
    assert_eq!(
        (ga.scheduled_nanos(), ga.ready_nanos()),
        (gb.scheduled_nanos(), gb.ready_nanos())
    );
}

#[tokio::test(start_paused = true)]
async fn ops_within_half_a_timer_tick_go_together() {
    // 10 000 ops/s, a 100 µs slot: the early bound is
    // clamp(slot / 2, tick / 2, tick) = 0.5 ms. The ops due within 0.5 ms
    // go at once; the op due at 0.6 ms sleeps to the next 1 ms tick and
    // reports the 0.4 ms it went late.
    let clock = TokioClock::new();
    let p = pacer(clock, 10_000.0, 1.1);
    for k in 0..6u64 {
        let g = p.acquire_async().await;
        assert_eq!((g.ready_nanos(), g.started_nanos()), (k * 100_000, 0));
    }
    let g = p.acquire_async().await;
    assert_eq!((g.ready_nanos(), g.started_nanos()), (600_000, MS));
    assert_eq!(g.wait_nanos(), 400_000);
    // No op goes more than 0.5 ms early, and 1000 ops take the schedule's
    // 100 ms (the op due at 99.6 ms waits for the tick at 100 ms).
    for _ in 7..1000 {
        let g = p.acquire_async().await;
        assert!(g.started_nanos() + MS / 2 >= g.ready_nanos(), "{g:?}");
    }
    assert_eq!(clock.now_nanos(), 100 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_zero_window_sleeps_for_every_wait() {
    let clock = TokioClock::new();
    let p = pacer(clock, 10_000.0, 1.1);
    p.acquire_async().await;
    // Due in 0.1 ms: with no window it sleeps, and tokio's timer ends the
    // sleep on its next 1 ms tick.
    let g = p.acquire_async().coalesce(Duration::ZERO).await;
    assert_eq!(g.ready_nanos(), 100_000);
    assert_eq!(g.started_nanos(), MS);
    assert_eq!(g.wait_nanos(), 900_000);
    // The limiter's policy sets the window too.
    let exact = Pacer::builder(Rate::new(10_000.0).unwrap())
        .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
        .build_with_clock(clock)
        .unwrap();
    exact.acquire_async().await;
    let g = exact.acquire_async().await;
    assert!(g.started_nanos() >= g.ready_nanos());
}

// ---------------------------------------------------------------- Reservation

#[tokio::test(start_paused = true)]
async fn reservation_is_a_value_to_await_keep_or_cancel() {
    let clock = TokioClock::new();
    let p = Arc::new(pacer(clock, 100.0, 1.0));
    let first = p.reservation(1, None).unwrap();
    assert_eq!(first.delay(), Duration::ZERO);
    assert_eq!(first.into_grant().ready_nanos(), 0);

    let second = Reservation::new(p.clone(), 1, None).unwrap();
    assert_eq!(second.delay(), ms(10));
    assert_eq!(second.ready_nanos(), 10 * MS);
    advance(ms(4)).await;
    assert_eq!(second.remaining(), ms(6));
    // Moved to another task and awaited there.
    let g = tokio::spawn(second).await.unwrap();
    assert_eq!(g.started_nanos(), 10 * MS);
    assert_eq!(clock.now_nanos(), 10 * MS);

    // Refused with a maximum wait: nothing reserved.
    let err = Reservation::new(p.clone(), 1, Some(ms(1))).unwrap_err();
    assert_eq!(err.retry_after(), Some(ms(10)));
}

#[tokio::test(start_paused = true)]
async fn dropped_reservations_cancel_like_cancel() {
    let clock = TokioClock::new();
    let gives_back = pacer_gives_back_the_latest(clock);
    let p = pacer(clock, 100.0, 1.1);
    p.acquire_async().await;
    let r = p.reservation(1, None).unwrap();
    assert_eq!(r.ready_nanos(), 10 * MS);
    drop(r);
    let expected = if gives_back { 10 * MS } else { 20 * MS };
    assert_eq!(p.reserve(1, None).unwrap().ready_nanos(), expected);
}

#[test]
fn reservation_blocking_wait_on_a_manual_clock() {
    // A reservation can be waited for by a thread: the limiter's own
    // blocking wait (the manual clock advances instead of sleeping).
    let clock = ratekeeper::ManualClock::new(0);
    let p = Pacer::builder(Rate::new(100.0).unwrap())
        .build_with_clock(clock.clone())
        .unwrap();
    p.try_acquire().unwrap();
    let r = p.reservation(2, None).unwrap();
    assert_eq!(r.delay(), ms(10));
    let g = r.wait();
    assert_eq!((g.started_nanos(), clock.now_nanos()), (10 * MS, 10 * MS));
    assert_eq!(p.reserve(1, None).unwrap().ready_nanos(), 30 * MS);
}

// ---------------------------------------------------------------- TokenPool

fn manual_pool(clock: TokioClock) -> TokenPool<TokioClock> {
    TokenPool::builder(Rate::new(1000.0).unwrap())
        .filling(Filling::Manual)
        .build_with_clock(clock)
        .unwrap()
}

/// Whether a pool gives back a claim queued while it is short of tokens.
fn pool_gives_back_a_claim(clock: TokioClock) -> bool {
    let twin = manual_pool(clock);
    twin.try_acquire().unwrap();
    let claim = twin.reserve(1, None).unwrap();
    assert_eq!(twin.waiters(), 1);
    twin.cancel(&claim)
}

#[tokio::test(start_paused = true)]
async fn pool_takes_tokens_that_are_there_at_once() {
    let clock = TokioClock::new();
    let pool = manual_pool(clock);
    let g = pool.acquire_async().await; // the op pre-filled at start
    assert_eq!((g.started_nanos(), clock.now_nanos()), (0, 0));
    pool.refill(3 * MS).unwrap();
    let g = pool.acquire_n_async(2).await.unwrap();
    assert_eq!(g.started_nanos(), 0);
    assert_eq!(pool.waiters(), 0);
}

#[tokio::test(start_paused = true)]
async fn pool_short_of_tokens_goes_when_they_come() {
    // 100 ops/s: one op is 10 ms of tokens.
    let clock = TokioClock::new();
    let pool = Arc::new(
        TokenPool::builder(Rate::new(100.0).unwrap())
            .filling(Filling::Manual)
            .build_with_clock(clock)
            .unwrap(),
    );
    pool.acquire_async().await;
    let waiting = tokio::spawn({
        let pool = pool.clone();
        async move { pool.acquire_async().await }
    });
    tokio::task::yield_now().await; // decided at 0: due at 10 ms
                                    // The filler brings the op's tokens before they are due, and the fill
                                    // wakes the wait: it goes then, as a blocking wait does. (Paused time
                                    // stays on whole milliseconds: tokio's auto-advance overshoots by up to
                                    // a tick when a sleep starts between ticks.)
    advance(ms(5)).await;
    pool.refill(10 * MS).unwrap();
    let g = waiting.await.unwrap();
    assert_eq!(g.started_nanos(), 5 * MS);
    assert_eq!(clock.now_nanos(), 5 * MS);
    assert_eq!(g.scheduled_nanos(), 10 * MS);
    assert_eq!(g.wait_nanos(), 0);
    assert_eq!(pool.waiters(), 0);
    assert_eq!(pool.active_nanos(), 0);
}

#[tokio::test(start_paused = true)]
async fn manual_pool_async_wait_waits_for_the_refill() {
    // Issue 16: an async wait went at the claim's estimate (1 ms) without
    // its tokens, which a manual pool only gets from `refill`.
    let clock = TokioClock::new();
    let pool = Arc::new(manual_pool(clock));
    pool.acquire_async().await;
    let waiting = tokio::spawn({
        let pool = pool.clone();
        async move { pool.acquire_async().await }
    });
    advance(ms(50)).await;
    assert!(!waiting.is_finished(), "went 50 ms on with no refill");
    assert_eq!(pool.waiters(), 1);
    // The refill that completes the claim wakes the task.
    pool.refill(MS).unwrap();
    let g = waiting.await.unwrap();
    assert_eq!(g.started_nanos(), 50 * MS);
    assert_eq!((pool.waiters(), pool.active_nanos()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn async_pool_timeout_is_kept_however_late_the_fills_are() {
    // A claim queued within its timeout waits for fills; with none coming,
    // the blocking `acquire_timeout` gives up at the deadline, and so must
    // the async one: it used to wait for ever.
    let clock = TokioClock::new();
    let pool = Arc::new(manual_pool(clock));
    pool.acquire_async().await;
    let waiting = tokio::spawn({
        let pool = pool.clone();
        async move { pool.acquire_timeout_async(1, ms(10)).await }
    });
    advance(ms(9)).await;
    assert!(!waiting.is_finished(), "gave up before its deadline");
    advance(ms(2)).await;
    let result = tokio::time::timeout(ms(1000), waiting)
        .await
        .expect("still waiting 1 s after its 10 ms deadline")
        .unwrap();
    match result {
        Err(AcquireError::WouldWait { wait, max_wait }) => {
            assert_eq!(max_wait, ms(10));
            assert!(wait > max_wait, "{wait:?}");
        }
        other => panic!("expected WouldWait, got {other:?}"),
    }
    // The claim was withdrawn: a refill goes to the pool, not to it.
    assert_eq!(pool.waiters(), 0);
    pool.refill(MS).unwrap();
    assert!(pool.try_acquire().is_ok());
}

/// Issue 16: at 2000/s, with half the acquires timing out after 1 ms, the
/// waits that stayed went at their claims' estimates, which the timed-out
/// claims (withdrawn) had pushed late: 51 grants started within one
/// millisecond. Now each goes with its tokens.
#[tokio::test(start_paused = true)]
async fn pool_async_grants_keep_the_rate_when_half_the_waits_time_out() {
    let clock = TokioClock::new();
    let pool = Arc::new(
        TokenPool::builder(Rate::new(2000.0).unwrap())
            .build_with_clock(clock)
            .unwrap(),
    );
    let starts = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let (pool, starts) = (pool.clone(), starts.clone());
            tokio::spawn(async move {
                for j in 0..40 {
                    let acquire = pool.acquire_async();
                    if (i + j) % 2 == 0 {
                        let _ = tokio::time::timeout(ms(1), acquire).await;
                    } else {
                        let g = acquire.await;
                        starts.lock().unwrap().push(g.started_nanos());
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let mut starts = std::mem::take(&mut *starts.lock().unwrap());
    starts.sort_unstable();
    // In any 1 ms: 2 ops of rate, the active pool (max(1 ms, 2 ops) = 2
    // ops at burst 1.1: 2.2), and one for the window's edges.
    let most = starts
        .iter()
        .enumerate()
        .map(|(k, &t)| starts[k..].iter().take_while(|&&u| u < t + MS).count())
        .max()
        .unwrap();
    assert!(most <= 6, "{most} grants started within 1 ms at 2000/s");
    let span = (starts[starts.len() - 1] - starts[0]) as f64 / 1e9;
    let rate = (starts.len() - 1) as f64 / span;
    assert!(rate <= 2000.0 * 1.1 + 1.0, "{rate:.0}/s over {span:.3} s");
}

#[tokio::test(start_paused = true)]
async fn pool_inline_on_the_tokio_clock_paces_exactly() {
    let clock = TokioClock::new();
    let pool = TokenPool::builder(Rate::new(1000.0).unwrap())
        .build_with_clock(clock)
        .unwrap();
    let mut starts = Vec::new();
    for _ in 0..5 {
        starts.push(pool.acquire_async().await.started_nanos());
    }
    assert_eq!(starts, [0, MS, 2 * MS, 3 * MS, 4 * MS]);
    assert_eq!(pool.wait_stats().backlog_nanos, 0);
}

/// Tasks that wake once per 1 ms timer tick, on a runtime that is busy and
/// wakes them late (200 µs of stall every 64 ops of each task), fill an
/// inline pool late: a fill then covers more than the 1 ms the active pool
/// holds while their claims wait. The pool serves waiting claims before its
/// bound applies, so the rate holds and no backlog builds. (G2's step alone,
/// with the overflow going to the waiting pool, gave 81 927 ops here: 18 %
/// short.)
#[tokio::test(start_paused = true)]
async fn pool_inline_holds_a_high_rate_under_timer_ticks() {
    let clock = TokioClock::new();
    let pool = Arc::new(
        TokenPool::builder(Rate::new(100_000.0).unwrap())
            .build_with_clock(clock)
            .unwrap(),
    );
    let end = Instant::now() + Duration::from_secs(1);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while pool.acquire_async().await.started_nanos() < 1_000 * MS {
                    n += 1;
                    if n % 64 == 0 {
                        // The runtime is busy and wakes late: 200 µs pass.
                        advance(Duration::from_micros(200)).await;
                    }
                }
                n
            })
        })
        .collect();
    let mut granted = 0;
    for t in tasks {
        granted += t.await.unwrap();
    }
    assert!(Instant::now() >= end);
    // 1 s at 100 k/s within 0.1 %.
    assert!(
        (99_900..=100_100).contains(&granted),
        "{granted} ops in 1 s at 100 k/s"
    );
    assert_eq!(pool.wait_stats().backlog_nanos, 0);
}

#[tokio::test(start_paused = true)]
async fn pool_timed_acquire_refuses_at_once() {
    let clock = TokioClock::new();
    let pool = manual_pool(clock);
    pool.acquire_async().await;
    let err = pool
        .acquire_timeout_async(1, Duration::from_micros(500))
        .await
        .unwrap_err();
    assert_eq!(err.retry_after(), Some(ms(1)));
    assert_eq!(clock.now_nanos(), 0);
    assert_eq!(pool.waiters(), 0);
}

#[tokio::test(start_paused = true)]
async fn pool_dropped_acquire_leaves_no_claim_it_could_give_back() {
    let clock = TokioClock::new();
    let gives_back = pool_gives_back_a_claim(clock);
    let pool = manual_pool(clock);
    pool.acquire_async().await;
    poll_once_then_drop(pool.acquire_async()).await;
    // A claim the pool can give back is gone; one it cannot stays queued,
    // to be served by the next fill.
    assert_eq!(pool.waiters(), usize::from(!gives_back));
    pool.refill(MS).unwrap();
    assert_eq!(pool.waiters(), 0);
    let next = pool.try_acquire();
    assert_eq!(next.is_ok(), gives_back);
}

// ---------------------------------------------------------------- Smooth

#[tokio::test(start_paused = true)]
async fn smooth_bursty_next_caller_pays() {
    let clock = TokioClock::new();
    let l = SmoothBursty::builder(10.0).build_with_clock(clock).unwrap();
    let start = Instant::now();
    // Guava's testSimpleWeights, at 10/s: 1, 1, 2, 4 permits wait 0, 100,
    // 100, 200 ms, each paying for the request before it.
    let mut waited = Vec::new();
    for n in [1, 1, 2, 4] {
        let before = start.elapsed();
        l.acquire_n_async(n).await.unwrap();
        waited.push(start.elapsed() - before);
    }
    assert_eq!(waited, [ms(0), ms(100), ms(100), ms(200)]);
    // The last request's 4 permits are owed: 400 ms.
    let err = l.acquire_timeout_async(1, ms(399)).await.unwrap_err();
    assert_eq!(err.retry_after(), Some(ms(400)));
    assert_eq!(start.elapsed(), ms(400));
    let g = l.acquire_timeout_async(1, ms(400)).await.unwrap();
    assert_eq!(g.started_nanos(), 800 * MS);
}

#[tokio::test(start_paused = true)]
async fn smooth_bursty_stored_permits_are_free() {
    let clock = TokioClock::new();
    let l = SmoothBursty::builder(10.0).build_with_clock(clock).unwrap();
    l.acquire_async().await;
    // The first permit's cost ends at 100 ms; then 1 s idle stores 10
    // permits (the burst of 1 s).
    advance(ms(1100)).await;
    let start = Instant::now();
    for _ in 0..11 {
        l.acquire_async().await;
    }
    // All ten stored permits and one more go at once; the next caller pays.
    assert_eq!(start.elapsed(), Duration::ZERO);
    l.acquire_async().await;
    assert_eq!(start.elapsed(), ms(100));
}

#[tokio::test(start_paused = true)]
async fn smooth_bursty_dropped_acquire_is_cancelled() {
    let clock = TokioClock::new();
    let twin = SmoothBursty::builder(10.0).build_with_clock(clock).unwrap();
    twin.try_acquire().unwrap();
    let r = twin.reserve(1, None).unwrap();
    let gives_back = twin.cancel(&r);

    let l = SmoothBursty::builder(10.0).build_with_clock(clock).unwrap();
    l.acquire_async().await;
    assert!(timeout(ms(50), l.acquire_async()).await.is_err());
    // Whether the abandoned permit is still owed is what `cancel` said.
    let g = l.reserve(1, None).unwrap();
    let expected = if gives_back { 100 * MS } else { 200 * MS };
    assert_eq!(g.ready_nanos(), expected);
}

#[tokio::test(start_paused = true)]
async fn smooth_warming_up_ramps_exactly() {
    // Guava's testWarmUp: rate 2, 4 s warm-up, cold factor 3. Each call
    // pays the previous one's cost: 0, 1.375, 1.125, 0.875, 0.625, 0.5 s.
    let clock = TokioClock::new();
    let l = SmoothWarmingUp::builder(2.0)
        .warmup(Duration::from_secs(4))
        .cold_factor(3.0)
        .build_with_clock(clock)
        .unwrap();
    let mut starts = Vec::new();
    for _ in 0..7 {
        starts.push(l.acquire_async().await.started_nanos() / 1_000);
    }
    assert_eq!(
        starts,
        [0, 1_375_000, 2_500_000, 3_375_000, 4_000_000, 4_500_000, 5_000_000]
    );
    let err = l.acquire_timeout_async(1, ms(100)).await.unwrap_err();
    assert_eq!(err.retry_after(), Some(ms(500)));
}
