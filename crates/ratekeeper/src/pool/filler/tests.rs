//! The filler thread on a manual clock: it sleeps in real time and fills
//! when it finds that the clock moved, so each test moves the clock and
//! waits (in real time, bounded) for the fill it expects. Every test runs
//! under [`within`], so that a filler that is never woken fails the test
//! instead of hanging it.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::ManualClock;
use crate::limiter::RateLimiter;
use crate::pool::{Filling, TokenPool};
use crate::rate::Rate;

const MS: u64 = 1_000_000;

/// What each test may take (they take well under a second).
const LIMIT: Duration = Duration::from_secs(30);

/// A pool at 1000 ops/s, burst 1.1 (`max_active` 2 ms, `max_over_active`
/// 2.2 ms), filled by a thread every 1 ms on a manual clock at 0. The start
/// pre-filled one op.
fn threaded() -> (ManualClock, Arc<TokenPool<ManualClock>>) {
    let clock = ManualClock::new(0);
    let pool = TokenPool::builder(Rate::new(1000.0).unwrap())
        .burst_ratio(1.1)
        .filling(Filling::Thread(Duration::from_millis(1)))
        .build_with_clock(clock.clone())
        .unwrap();
    (clock, Arc::new(pool))
}

/// Runs `body` on its own thread; fails if it takes longer than [`LIMIT`].
fn within(body: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(LIMIT) {
        Ok(()) => worker.join().unwrap(),
        Err(RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(worker.join().unwrap_err())
        }
        Err(RecvTimeoutError::Timeout) => panic!("timed out after {LIMIT:?}"),
    }
}

/// Polls `done` until it holds; panics after 10 s of real time.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(10), "never: {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Moves the clock 1 ms and waits for the filler's fill of it.
fn tick(clock: &ManualClock, pool: &TokenPool<ManualClock>) {
    let before = pool.fills();
    clock.advance_nanos(MS);
    eventually("a fill after the clock moved", || pool.fills() > before);
}

/// Three fills of 1 ms after the start's pre-fill: the active pool is full
/// (2 ms, then 0.1 ms of burst per fill from the overflow), 1.8 ms is backlog.
fn fill_up(clock: &ManualClock, pool: &TokenPool<ManualClock>) {
    for _ in 0..3 {
        tick(clock, pool);
    }
    assert_eq!(pool.active_nanos(), 2_200_000, "full: max_over_active");
    assert_eq!(pool.backlog_nanos(), 1_800_000);
}

/// Issue 16, finding 7: an idle pool's filler woke every interval for ever.
/// Once the pools are full and nobody waits, a fill can only add to the
/// backlog, so the filler parks; the time it was parked is still counted,
/// as the fills it skipped would have counted it.
#[test]
fn an_idle_filler_stops_filling_once_the_pools_are_full() {
    within(|| {
        let (clock, pool) = threaded();
        fill_up(&clock, &pool);
        let fills = pool.fills();
        for _ in 0..50 {
            clock.advance_nanos(MS);
            std::thread::sleep(Duration::from_millis(4));
        }
        assert_eq!(pool.fills(), fills, "the idle filler kept filling");
        // Nothing lost: 50 fills of a full pool would have overflowed it all.
        assert_eq!(pool.backlog_nanos(), 1_800_000 + 50 * MS);
        assert_eq!(pool.active_nanos(), 2_200_000);
        assert_eq!(pool.wait_stats().total_wait_nanos, 1_800_000 + 50 * MS);
    });
}

/// A lock-free take from a parked pool's full active pool wakes the filler;
/// the idle time before the take is backlog, and the fills after it refill
/// the active pool as they would have if the filler had never parked.
#[test]
fn a_take_wakes_a_parked_filler() {
    within(|| {
        let (clock, pool) = threaded();
        fill_up(&clock, &pool);
        clock.advance_nanos(10 * MS); // idle: parked
        let fills = pool.fills();
        let g = pool.try_acquire().unwrap(); // no lock, no fill
        assert_eq!(g.started_nanos(), 13 * MS);
        // The filler wakes and fills at once: the clock has not moved since
        // the take, so that fill is empty.
        eventually("the filler woke", || pool.fills() > fills);
        assert_eq!(pool.backlog_nanos(), 11_800_000, "idle time is backlog");
        tick(&clock, &pool);
        // 1.2 ms left + 0.8 ms to max_active + 0.1 ms of burst; 0.2 ms
        // overflowed.
        assert_eq!(pool.active_nanos(), 2_100_000);
        assert_eq!(pool.backlog_nanos(), 11_800_000 + 200_000 - 100_000);
        tick(&clock, &pool);
        assert_eq!(pool.active_nanos(), 2_200_000, "full again");
    });
}

/// A caller that must queue (3 ops, more than the full pool's 2.2) wakes a
/// parked filler, whose fills then complete its claim.
#[test]
fn a_queued_claim_wakes_a_parked_filler() {
    within(|| {
        let (clock, pool) = threaded();
        fill_up(&clock, &pool);
        clock.advance_nanos(10 * MS);
        let fills = pool.fills();
        let p = Arc::clone(&pool);
        let caller = std::thread::spawn(move || (*p).acquire_n(3).unwrap());
        eventually("the claim took the active pool", || {
            pool.active_nanos() == 0
        });
        // The woken filler's first fill is empty: the clock has not moved.
        eventually("the filler woke", || pool.fills() > fills);
        while pool.waiters() > 0 {
            tick(&clock, &pool);
        }
        let g = caller.join().unwrap();
        assert_eq!(g.started_nanos(), 14 * MS, "0.8 ms came with the next fill");
    });
}

/// A new rate changes the pools' sizes: a parked filler wakes and fills the
/// larger active pool.
#[test]
fn configure_wakes_a_parked_filler() {
    within(|| {
        let (clock, pool) = threaded();
        fill_up(&clock, &pool);
        clock.advance_nanos(10 * MS);
        let fills = pool.fills();
        // 500 ops/s: max_active 4 ms, max_over_active 4.4 ms.
        pool.configure(Rate::new(500.0).unwrap(), 1.1).unwrap();
        eventually("the filler woke", || pool.fills() > fills);
        tick(&clock, &pool);
        // 2.2 ms + 1 ms to the active pool + 0.25 × 0.4 ms of burst.
        assert_eq!(pool.active_nanos(), 3_300_000);
        assert_eq!(pool.backlog_nanos(), 11_800_000 - 100_000);
    });
}

/// Stopping a parked pool checkpoints the backlog its idle time made and
/// joins the filler at once; a restart wakes it; a drop joins it at once.
#[test]
fn stop_restart_and_drop_of_a_parked_pool() {
    within(|| {
        let (clock, pool) = threaded();
        fill_up(&clock, &pool);
        clock.advance_nanos(10 * MS);
        let t = Instant::now();
        pool.stop();
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "stop took {:?}",
            t.elapsed()
        );
        assert_eq!(pool.accumulated_wait_nanos(), 11_800_000);

        pool.start();
        fill_up(&clock, &pool); // parked again
        clock.advance_nanos(5 * MS);
        let fills = pool.fills();
        pool.restart(); // pools cleared, one op pre-filled (a fill)
        assert_eq!(pool.active_nanos(), MS);
        assert_eq!(pool.wait_stats().total_wait_nanos, 0);
        eventually("the filler woke", || pool.fills() > fills + 1);
        tick(&clock, &pool);
        assert_eq!(pool.active_nanos(), 2 * MS, "the filler fills again");
        tick(&clock, &pool);
        tick(&clock, &pool);
        assert_eq!(pool.active_nanos(), 2_200_000, "full: parked again");

        let pool = Arc::try_unwrap(pool).unwrap();
        let t = Instant::now();
        drop(pool);
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "drop took {:?}",
            t.elapsed()
        );
    });
}
