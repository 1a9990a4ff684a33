//! The [`TokenPool`]'s filler threads: no leak, exactly one per started pool.
//!
//! nosqlbench G2 never stopped its `TokenFiller` (one leaked thread per
//! limiter), and from 2019-01 to 2022-09 its `start()` fell through and
//! started one filler per call (spec §5.2). Here:
//!
//! * dropping a pool stops and joins its filler;
//! * `stop()` stops and joins it, and `start()` starts exactly one again;
//! * `start()` called many times from many threads starts exactly one;
//! * inline and manual pools never start a thread.
//!
//! Threads are counted two ways: by name, reading `/proc/self/task/*/comm`
//! (Linux only; the kernel keeps 15 bytes of a name and
//! [`FILLER_THREAD_NAME`] has 14), and by the distinct filler threads that
//! read a tracking clock. The tests in this file share a lock so that each
//! sees only its own pools' threads.
#![cfg(target_os = "linux")]

use std::collections::HashSet;
use std::sync::{Arc, Barrier, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use ratekeeper::pool::{Filling, TokenPool, FILLER_THREAD_NAME};
use ratekeeper::{Clock, MonotonicClock, Rate, RateLimiter, Verb};

mod common;
use common::within;

/// Every test here runs under this limit (each takes well under a second
/// alone; they wait for one another's lock), so that one that hangs fails
/// instead of blocking the run.
const LIMIT: Duration = Duration::from_secs(60);

/// Serialises the tests of this file (they count the process's threads).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Threads of this process named [`FILLER_THREAD_NAME`], from
/// `/proc/self/task/*/comm`. A task that ends while being listed is skipped.
fn filler_threads() -> usize {
    assert!(FILLER_THREAD_NAME.len() <= 15, "comm keeps 15 bytes");
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end_matches('\n') == FILLER_THREAD_NAME)
        .count()
}

/// Polls [`filler_threads`] until it equals `expected` or `within` passed;
/// returns the last count and how long it took.
///
/// Polling is needed both ways. A new thread takes its name from inside
/// itself, just after it starts. And `join` returns as soon as the kernel has
/// released the thread's memory, a few microseconds before the thread leaves
/// `/proc` (a not-joined filler never leaves: it loops for ever).
fn settle(expected: usize, within: Duration) -> (usize, Duration) {
    let t = Instant::now();
    loop {
        let n = filler_threads();
        if n == expected || t.elapsed() >= within {
            return (n, t.elapsed());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A real clock that records which filler threads read it, and whose last
/// clone's drop (when the pool's shared state is freed) can be observed.
#[derive(Debug, Clone)]
struct Tracking {
    inner: MonotonicClock,
    fillers: Arc<Mutex<HashSet<ThreadId>>>,
    reads: Arc<std::sync::atomic::AtomicU64>,
}

impl Tracking {
    fn new() -> Tracking {
        Tracking {
            inner: MonotonicClock::new(),
            fillers: Arc::default(),
            reads: Arc::default(),
        }
    }

    /// Distinct filler threads that have read this clock (or a clone).
    fn distinct_fillers(&self) -> usize {
        self.fillers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Clock reads made by filler threads.
    fn filler_reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many pools still hold a clone (the test holds one).
    fn holders(&self) -> usize {
        Arc::strong_count(&self.fillers)
    }
}

impl Clock for Tracking {
    fn now_nanos(&self) -> u64 {
        let me = std::thread::current();
        if me.name() == Some(FILLER_THREAD_NAME) {
            self.reads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.fillers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(me.id());
        }
        self.inner.now_nanos()
    }
}

fn pool(rate: f64, filling: Filling, verb: Verb, clock: &Tracking) -> TokenPool<Tracking> {
    TokenPool::builder(Rate::new(rate).unwrap())
        .filling(filling)
        .verb(verb)
        .build_with_clock(clock.clone())
        .unwrap()
}

const SETTLE: Duration = Duration::from_secs(2);

#[test]
fn dropping_pools_joins_their_fillers() {
    within(LIMIT, dropping_pools_joins_their_fillers_run);
}

fn dropping_pools_joins_their_fillers_run() {
    let _serial = serial();
    assert_eq!(filler_threads(), 0, "filler threads before any pool");
    let clock = Tracking::new();
    let pools: Vec<_> = (0..50)
        .map(|_| pool(1e6, Filling::thread(), Verb::Start, &clock))
        .collect();
    for p in &pools {
        for _ in 0..10 {
            p.acquire();
        }
        assert_eq!(p.filling(), Filling::thread());
    }
    let (n, _) = settle(50, SETTLE);
    assert_eq!(n, 50, "one filler per started pool");

    drop(pools);
    // Every pool's shared state is freed, so every filler thread has let go
    // of it: its function returned before the drops did.
    assert_eq!(clock.holders(), 1, "a filler still holds its pool");
    let at_once = filler_threads();
    let (n, took) = settle(0, Duration::from_millis(500));
    println!(
        "50 pools dropped: {at_once} filler threads listed at once, {n} after {took:?}; \
         {} distinct fillers read the clock",
        clock.distinct_fillers()
    );
    assert_eq!(n, 0, "filler threads left after dropping their pools");
    assert_eq!(clock.distinct_fillers(), 50, "fillers that ran");
    // Nothing reads the clock any more.
    let reads = clock.filler_reads();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(clock.filler_reads(), reads, "a filler still runs");
}

#[test]
fn stop_joins_the_filler_and_start_starts_exactly_one() {
    within(
        LIMIT,
        stop_joins_the_filler_and_start_starts_exactly_one_run,
    );
}

fn stop_joins_the_filler_and_start_starts_exactly_one_run() {
    let _serial = serial();
    assert_eq!(filler_threads(), 0, "filler threads before any pool");
    let clock = Tracking::new();
    let pool = pool(1e6, Filling::thread(), Verb::Start, &clock);
    pool.acquire();
    assert_eq!(settle(1, SETTLE).0, 1, "the started pool's filler");

    for cycle in 1..=5 {
        pool.stop();
        assert!(!pool.is_started());
        // Stopped: it reads the clock no more.
        let reads = clock.filler_reads();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            clock.filler_reads(),
            reads,
            "cycle {cycle}: a filler runs after stop()"
        );
        assert_eq!(
            settle(0, Duration::from_millis(500)).0,
            0,
            "cycle {cycle}: filler threads after stop()"
        );
        // A second stop is a no-op.
        pool.stop();

        if cycle % 2 == 1 {
            pool.start();
        } else {
            pool.acquire(); // an acquire starts a stopped pool too
        }
        assert!(pool.is_started());
        pool.start(); // no effect on a started pool
        pool.restart(); // keeps the running filler
        assert_eq!(
            settle(1, SETTLE).0,
            1,
            "cycle {cycle}: fillers after start()"
        );
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(filler_threads(), 1, "cycle {cycle}: fillers after start()");
        assert_eq!(
            clock.distinct_fillers(),
            cycle + 1,
            "cycle {cycle}: one new filler per start"
        );
    }
    drop(pool);
    assert_eq!(clock.holders(), 1);
    assert_eq!(settle(0, Duration::from_millis(500)).0, 0);
}

#[test]
fn concurrent_starts_start_one_filler() {
    within(LIMIT, concurrent_starts_start_one_filler_run);
}

fn concurrent_starts_start_one_filler_run() {
    let _serial = serial();
    assert_eq!(filler_threads(), 0, "filler threads before any pool");
    let clock = Tracking::new();
    let pool = pool(1e6, Filling::thread(), Verb::Configure, &clock);
    assert!(!pool.is_started());
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(filler_threads(), 0, "an idle pool has no filler");

    let mut started = 0;
    for round in 0..4 {
        // 8 threads released together; rounds 1 and 3 also acquire and
        // restart while the others start.
        let barrier = Barrier::new(8);
        std::thread::scope(|s| {
            for t in 0..8 {
                let (pool, barrier) = (&pool, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..200 {
                        match (round % 2, (t + i) % 3) {
                            (1, 1) => drop(pool.acquire()),
                            (1, 2) if i % 50 == 0 => pool.restart(),
                            _ => pool.start(),
                        }
                    }
                });
            }
        });
        started += 1;
        assert_eq!(settle(1, SETTLE).0, 1, "round {round}: fillers");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(filler_threads(), 1, "round {round}: fillers");
        assert_eq!(
            clock.distinct_fillers(),
            started,
            "round {round}: filler threads that ever ran"
        );
        pool.stop();
        assert_eq!(settle(0, Duration::from_millis(500)).0, 0, "round {round}");
    }
    drop(pool);
    assert_eq!(clock.holders(), 1);
}

#[test]
fn inline_and_manual_pools_never_start_a_thread() {
    within(LIMIT, inline_and_manual_pools_never_start_a_thread_run);
}

fn inline_and_manual_pools_never_start_a_thread_run() {
    let _serial = serial();
    assert_eq!(filler_threads(), 0, "filler threads before any pool");
    let clock = Tracking::new();
    let inline: Vec<_> = (0..10)
        .map(|i| {
            let verb = if i % 2 == 0 {
                Verb::Start
            } else {
                Verb::Configure
            };
            pool(2000.0, Filling::Inline, verb, &clock)
        })
        .collect();
    let manual = pool(1000.0, Filling::Manual, Verb::Configure, &clock);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for p in &inline {
                    // Waiting callers fill inline (2000 ops/s: 0.5 ms apart).
                    for _ in 0..3 {
                        p.acquire();
                    }
                }
            });
        }
    });
    for p in &inline {
        p.stop();
        p.start();
        p.restart();
        p.acquire();
        assert_eq!(p.filling(), Filling::Inline);
    }
    manual.refill(5_000_000).unwrap();
    manual.acquire();
    manual.stop();
    manual.start();
    assert_eq!(manual.filling(), Filling::Manual);

    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        filler_threads(),
        0,
        "filler threads of inline and manual pools"
    );
    assert_eq!(clock.distinct_fillers(), 0);
    assert_eq!(clock.holders(), 12);
}

/// Waits (up to 5 s) until filler threads have not read `clock` for 50 ms:
/// their pools are full and nobody waits, so they parked. Returns how long
/// that took.
fn until_parked(clock: &Tracking) -> Duration {
    let t = Instant::now();
    loop {
        let reads = clock.filler_reads();
        std::thread::sleep(Duration::from_millis(50));
        if clock.filler_reads() == reads {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "idle fillers still read the clock after {:?} ({} reads)",
            t.elapsed(),
            clock.filler_reads()
        );
    }
}

/// Issue 16, finding 7: an idle pool's filler woke every millisecond for
/// ever. It now parks once the pool is full and nobody waits, and an
/// acquire wakes it.
#[test]
fn an_idle_pools_filler_parks_and_an_acquire_wakes_it() {
    within(LIMIT, || {
        let _serial = serial();
        let clock = Tracking::new();
        let pool = pool(1000.0, Filling::thread(), Verb::Start, &clock);
        let first = until_parked(&clock);
        let reads = clock.filler_reads();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(clock.filler_reads(), reads, "the parked filler woke");

        for _ in 0..5 {
            pool.acquire(); // the 2.2 ops banked, then waits for fills
        }
        assert!(clock.filler_reads() > reads, "the filler filled again");
        let again = until_parked(&clock);
        println!("parked {first:?} after the start, {again:?} after 5 acquires");
        let t = Instant::now();
        drop(pool);
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "drop took {:?}",
            t.elapsed()
        );
    });
}

/// Issue 16, finding 7: 300 idle pools used 67 % of two cores, and
/// creating and dropping 1,000 took 58 s. Two hundred idle pools now cost
/// (next to) no CPU, and dropping them returns promptly.
#[test]
fn two_hundred_idle_pools_cost_no_cpu_and_drop_promptly() {
    within(LIMIT, || {
        let _serial = serial();
        assert_eq!(filler_threads(), 0, "filler threads before any pool");
        let clock = Tracking::new();
        let t = Instant::now();
        let pools: Vec<_> = (0..200)
            .map(|_| pool(1000.0, Filling::thread(), Verb::Start, &clock))
            .collect();
        let created = t.elapsed();
        let parked = until_parked(&clock);
        let cpu = cpu_time::ProcessTime::now();
        std::thread::sleep(Duration::from_millis(500));
        let idle_cpu = cpu.elapsed();
        let t = Instant::now();
        drop(pools);
        let dropped = t.elapsed();
        println!(
            "200 pools: created in {created:?}, parked {parked:?} later; \
             {idle_cpu:?} of CPU in 500 ms idle; dropped in {dropped:?}"
        );
        // Generous: a parked filler costs nothing at all.
        assert!(
            idle_cpu < Duration::from_millis(50),
            "200 idle pools used {idle_cpu:?} of CPU in 500 ms"
        );
        assert!(
            dropped < Duration::from_secs(5),
            "dropping took {dropped:?}"
        );
        assert_eq!(settle(0, SETTLE).0, 0, "filler threads after the drop");
    });
}
