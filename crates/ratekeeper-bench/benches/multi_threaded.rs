//! `contended` group: aggregate grants per second of 1 and 2 threads sharing
//! one limiter that never makes them wait (the limiters of
//! `single_threaded.rs`; of Guava's, `SmoothBursty` only; the
//! Resilience4j-style ones through [`RateLimiter::acquire`]).
//!
//! Each sample starts its threads once (`std::thread::scope`), releases them
//! together with a barrier, and lets each take its share of the sample's
//! grants; the sample's time is from the first thread's start to the last
//! thread's end. The throughput reported is grants per second, all threads
//! together. `pacer_handle_acquire` is the pacer through one batching
//! [`PacerHandle`](ratekeeper::PacerHandle) per thread.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use governor::DefaultDirectRateLimiter;
use ratekeeper::{DefaultClock, Pacer, RateLimiter};

use crate::single_threaded::{
    assert_governor_never_denies, assert_never_waits, cycle_unthrottled, governor_unthrottled,
    pacer, pool_unthrottled, refill_unthrottled, smooth_bursty_unthrottled, UNTHROTTLED,
};

/// Runs `grant` `iters` times in total, split over `threads` threads, and
/// returns the wall time from the first start to the last end.
fn run_split<F>(threads: u64, iters: u64, grant: F) -> Duration
where
    F: Fn() + Sync,
{
    let barrier = Barrier::new(threads as usize);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let n = iters / threads + u64::from(t < iters % threads);
                let barrier = &barrier;
                let grant = &grant;
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..n {
                        grant();
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread panicked"))
            .collect()
    });
    let first = spans.iter().map(|s| s.0).min().expect("one thread");
    let last = spans.iter().map(|s| s.1).max().expect("one thread");
    last - first
}

/// As [`run_split`], each thread granting through its own batching handle
/// on `pacer` (made before the barrier opens).
fn run_split_handles(threads: u64, iters: u64, pacer: &Pacer<DefaultClock>) -> Duration {
    let barrier = Barrier::new(threads as usize);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let n = iters / threads + u64::from(t < iters % threads);
                let barrier = &barrier;
                s.spawn(move || {
                    let handle = pacer.handle();
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..n {
                        black_box(black_box(&handle).acquire());
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread panicked"))
            .collect()
    });
    let first = spans.iter().map(|s| s.0).min().expect("one thread");
    let last = spans.iter().map(|s| s.1).max().expect("one thread");
    last - first
}

/// Checks from `threads` threads, each with its own handle, that the
/// pacer's batching handles never make a caller wait.
fn assert_handles_never_wait(p: &Pacer<DefaultClock>, threads: u64, n: u64) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| assert_never_waits(&p.handle(), n));
        }
    });
}

/// Checks from `threads` threads at once that the limiter never makes a
/// caller wait.
fn assert_never_waits_shared<L: RateLimiter + Sync>(p: &L, threads: u64, n: u64) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| assert_never_waits(p, n));
        }
    });
}

fn assert_never_denies_shared(gov: &DefaultDirectRateLimiter, threads: u64, n: u64) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| assert_governor_never_denies(gov, n));
        }
    });
}

/// Measures `acquire()` from `threads` threads sharing `limiter`, between
/// two never-waits checks.
#[inline(never)]
fn bench_shared<L: RateLimiter + Sync>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    threads: u64,
    limiter: &L,
    check: u64,
) {
    assert_never_waits_shared(limiter, threads, check);
    g.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
        b.iter_custom(|iters| {
            run_split(threads, iters, || {
                black_box(black_box(limiter).acquire());
            })
        })
    });
    assert_never_waits_shared(limiter, threads, check);
}

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("contended");
    g.throughput(Throughput::Elements(1));
    const CHECK: u64 = 1_000_000;

    for threads in [1u64, 2] {
        for (name, strictness) in [
            ("pacer_acquire/burst_1.1", 1.1),
            ("pacer_acquire/average_0", 0.0),
        ] {
            let p = pacer(UNTHROTTLED, strictness, true);
            assert_never_waits_shared(&p, threads, CHECK);
            g.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
                b.iter_custom(|iters| {
                    run_split(threads, iters, || {
                        black_box(black_box(&p).acquire());
                    })
                })
            });
            assert_never_waits_shared(&p, threads, CHECK);
        }

        // Micro-batching: each thread grants through its own handle, one
        // atomic add per lease of up to 1024 slots (`pacer::batch`).
        for (name, strictness) in [
            ("pacer_handle_acquire/burst_1.1", 1.1),
            ("pacer_handle_acquire/average_0", 0.0),
            ("pacer_handle_acquire/compensate_0.5", 0.5),
        ] {
            let p = pacer(UNTHROTTLED, strictness, true);
            assert_handles_never_wait(&p, threads, CHECK);
            g.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
                b.iter_custom(|iters| run_split_handles(threads, iters, &p))
            });
            assert_handles_never_wait(&p, threads, CHECK);
        }

        // The token pool at 1e9 ops/s, filled inline. Under contention a
        // caller may rarely find the pool short and queue for a moment, so
        // no never-waits check here.
        for (name, cached) in [
            ("pool_acquire/inline", false),
            ("pool_acquire/inline_cached_clock", true),
        ] {
            let pool = pool_unthrottled(cached);
            g.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
                b.iter_custom(|iters| {
                    run_split(threads, iters, || {
                        black_box(black_box(&pool).acquire());
                    })
                })
            });
        }

        // Guava's SmoothBursty at an infinite rate: a 128-bit load per grant,
        // and a 128-bit CAS only for the first grant of each microsecond (the
        // others leave the state as they found it and write nothing).
        let bursty = smooth_bursty_unthrottled();
        assert_never_waits_shared(&bursty, threads, CHECK);
        g.bench_with_input(
            BenchmarkId::new("smooth_bursty_acquire/infinite_rate", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    run_split(threads, iters, || {
                        black_box(black_box(&bursty).acquire());
                    })
                })
            },
        );
        assert_never_waits_shared(&bursty, threads, CHECK);

        // The refill (bucket) and cycle limiters at 1e9 permits/s: one
        // compare-exchange per grant.
        bench_shared(
            &mut g,
            "refill_acquire",
            threads,
            &refill_unthrottled(),
            CHECK,
        );
        bench_shared(
            &mut g,
            "cycle_acquire",
            threads,
            &cycle_unthrottled(),
            CHECK,
        );

        let gov = governor_unthrottled();
        assert_never_denies_shared(&gov, threads, CHECK);
        g.bench_with_input(
            BenchmarkId::new("governor_check", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    run_split(threads, iters, || {
                        let _ = black_box(black_box(&gov).check());
                    })
                })
            },
        );
        assert_never_denies_shared(&gov, threads, CHECK);

        // The floor: the one shared read-modify-write a grant makes.
        let floor = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
        g.bench_with_input(
            BenchmarkId::new("floor_atomic_fetch_add", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    run_split(threads, iters, || {
                        black_box(black_box(&floor).fetch_add(1, Ordering::AcqRel));
                    })
                })
            },
        );
    }

    g.finish();
}
