//! `smooth_sync` group: does a lock-free state beat Guava's mutex?
//!
//! Issue 4 asks to try a lock-free state for the smooth limiters and keep it
//! only if it measures better. Guava's state is two 64-bit words (stored
//! permits, next free micros), so a compare-and-swap over the whole state
//! needs 128 bits: `portable_atomic::AtomicU128` (`cmpxchg16b` on x86_64).
//! Two minimal SmoothBursty reservations with identical arithmetic (resync,
//! spend stored permits, charge fresh ones; no rate changes) differ only in
//! how the state is synchronised:
//!
//! * `mutex`: `std::sync::Mutex<(f64, i64)>`, the clock read under the lock
//!   as Guava does;
//! * `cas128`: the state packed in one `AtomicU128`, the clock read before a
//!   compare-exchange loop (what `ratekeeper::SmoothBursty` did when this
//!   was measured; it has since moved the clock read after the load and
//!   writes nothing when a reservation leaves the state unchanged, see the
//!   `smooth` module's "Concurrency").
//!
//! Both run at 1e9 permits/s (1 ns per permit: 1 thread never waits) and read
//! the real clock once per reservation. The prototype is kept as the
//! measurement behind the library's choice.

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use criterion::{BenchmarkId, Criterion, Throughput};
use crossbeam_utils::CachePadded;
use portable_atomic::AtomicU128;
use ratekeeper::{Clock, DefaultClock};

const RATE: f64 = 1e9;

fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// One bursty reservation of 1 permit on `(stored, next_free)` at `now`;
/// returns the wait in micros.
#[inline(always)]
fn reserve(stable: f64, max: f64, stored: &mut f64, next_free: &mut i64, now: i64) -> i64 {
    if now > *next_free {
        *stored = java_min(max, *stored + (now - *next_free) as f64 / stable);
        *next_free = now;
    }
    let moment = *next_free;
    let spend = java_min(1.0, *stored);
    *next_free = next_free.saturating_add(((1.0 - spend) * stable) as i64);
    *stored -= spend;
    (moment - now).max(0)
}

struct MutexBursty {
    state: CachePadded<Mutex<(f64, i64)>>,
    stable: f64,
    max: f64,
    clock: DefaultClock,
}

impl MutexBursty {
    fn new() -> Self {
        MutexBursty {
            state: CachePadded::new(Mutex::new((0.0, 0))),
            stable: 1e6 / RATE,
            max: RATE,
            clock: DefaultClock::new(),
        }
    }

    #[inline(never)]
    fn acquire(&self) -> i64 {
        let mut st = self.state.lock().expect("not poisoned");
        let now = (self.clock.now_nanos() / 1000) as i64;
        let (stored, next_free) = &mut *st;
        reserve(self.stable, self.max, stored, next_free, now)
    }
}

struct CasBursty {
    state: CachePadded<AtomicU128>,
    stable: f64,
    max: f64,
    clock: DefaultClock,
}

fn pack(stored: f64, next_free: i64) -> u128 {
    (u128::from(stored.to_bits()) << 64) | u128::from(next_free as u64)
}

fn unpack(s: u128) -> (f64, i64) {
    (f64::from_bits((s >> 64) as u64), s as u64 as i64)
}

impl CasBursty {
    fn new() -> Self {
        CasBursty {
            state: CachePadded::new(AtomicU128::new(pack(0.0, 0))),
            stable: 1e6 / RATE,
            max: RATE,
            clock: DefaultClock::new(),
        }
    }

    #[inline(never)]
    fn acquire(&self) -> i64 {
        let now = (self.clock.now_nanos() / 1000) as i64;
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            let (mut stored, mut next_free) = unpack(cur);
            let wait = reserve(self.stable, self.max, &mut stored, &mut next_free, now);
            match self.state.compare_exchange_weak(
                cur,
                pack(stored, next_free),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return wait,
                Err(actual) => cur = actual,
            }
        }
    }
}

fn run_split<F: Fn() + Sync>(threads: u64, iters: u64, f: F) -> std::time::Duration {
    let barrier = std::sync::Barrier::new(threads as usize);
    let spans: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let n = iters / threads + u64::from(t < iters % threads);
                let (barrier, f) = (&barrier, &f);
                s.spawn(move || {
                    barrier.wait();
                    let start = std::time::Instant::now();
                    for _ in 0..n {
                        f();
                    }
                    (start, std::time::Instant::now())
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect()
    });
    let first = spans.iter().map(|s| s.0).min().expect("one thread");
    let last = spans.iter().map(|s| s.1).max().expect("one thread");
    last - first
}

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("smooth_sync");
    g.throughput(Throughput::Elements(1));
    assert!(
        portable_atomic::AtomicU128::is_lock_free(),
        "AtomicU128 must be a real 128-bit CAS for this comparison"
    );
    for threads in [1u64, 2] {
        let m = MutexBursty::new();
        g.bench_with_input(BenchmarkId::new("mutex", threads), &threads, |b, &t| {
            b.iter_custom(|iters| {
                run_split(t, iters, || {
                    black_box(black_box(&m).acquire());
                })
            })
        });
        let c = CasBursty::new();
        g.bench_with_input(BenchmarkId::new("cas128", threads), &threads, |b, &t| {
            b.iter_custom(|iters| {
                run_split(t, iters, || {
                    black_box(black_box(&c).acquire());
                })
            })
        });
    }
    g.finish();
}
