//! One unthrottled grant path on one thread, for a profiler: the calls
//! `bench_report` makes for an unthrottled cell (`acquire()` and the two
//! reads of the grant it checks; governor's `check()`), N times in a loop
//! that does nothing else, beside the floor no grant can beat: one read of
//! the default (TSC) clock and one `fetch_add` on an `AtomicU64`.
//!
//! ```text
//! cargo build --release -p ratekeeper-bench --example grant_profile
//! T=$CARGO_TARGET_DIR/release/examples/grant_profile
//! $T all                      # ns per grant of each path (wall clock)
//! # Instructions per grant: the loop is its own function, `grant_loop`;
//! # count only inside it and divide by N (printed as `grants`).
//! valgrind --tool=callgrind --toggle-collect='grant_profile::grant_loop*' \
//!     --callgrind-out-file=cg.pacer $T pacer-burst-1.1 1000000
//! callgrind_annotate cg.pacer
//! perf record -e cpu-clock -g $T pacer-strict-1.0 100000000
//! ```
//!
//! The paths (the names `bench_report` gives them):
//!
//! * `floor`: `TscClock::now_nanos()` and `fetch_add(1, AcqRel)`;
//! * `governor`: governor 0.10's direct limiter at `u32::MAX` per second,
//!   `check()` (as `bench_report` unthrottled: it never refuses);
//! * `pacer-burst-1.1`, `pacer-strict-1.0`, `pacer-average-0`: a started
//!   `Pacer` at 1e9 ops/s (`bench_report`'s unthrottled rate);
//! * `pool-inline`: a started `TokenPool` at 1e9 ops/s, burst ratio 1.1,
//!   filled inline. Under valgrind the program runs some 50× slower, so
//!   its callers find the pool fuller than at full speed: the lock-free
//!   take is what is counted, not the refills a full-speed run makes.

use std::error::Error;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ratekeeper::pool::Filling;
use ratekeeper::{Clock, DefaultClock, Pacer, Rate, RateLimiter, TokenPool, Verb};

type Res<T> = Result<T, Box<dyn Error>>;

/// `bench_report`'s unthrottled rate: one 1 ns slice per permit.
const UNTHROTTLED_RATE: f64 = 1e9;

/// Grants per path unless the command line says.
const DEFAULT_N: u64 = 20_000_000;

const PATHS: &[&str] = &[
    "floor",
    "governor",
    "pacer-burst-1.1",
    "pacer-strict-1.0",
    "pacer-average-0",
    "pool-inline",
];

/// What one grant gives back for the loop to keep: `bench_report` reads
/// the grant's wait and whether it waited.
type Kept = (u64, bool);

/// The profiled loop: `n` calls of `take`, nothing else. Never inlined, so
/// a profiler can count inside it alone (`--toggle-collect`).
#[inline(never)]
fn grant_loop(n: u64, mut take: impl FnMut() -> Kept) -> u64 {
    let mut waited = 0;
    for _ in 0..n {
        let (_, w) = black_box(take());
        waited += u64::from(w);
    }
    waited
}

/// The floor: one clock read and one atomic add.
fn floor(n: u64) -> u64 {
    let clock = DefaultClock::new();
    let next = AtomicU64::new(0);
    grant_loop(n, || {
        let now = clock.now_nanos();
        // Ordering: AcqRel, as the Pacer's `fetch_add` on its schedule.
        let slot = next.fetch_add(1, Ordering::AcqRel);
        (now.wrapping_sub(slot), false)
    })
}

fn governor(n: u64) -> u64 {
    let lim = governor::RateLimiter::direct(governor::Quota::per_second(NonZeroU32::MAX));
    grant_loop(n, || (0, lim.check().is_err()))
}

/// `bench_report`'s `Rk::take`.
#[inline(always)]
fn take<L: RateLimiter>(lim: &L) -> Kept {
    let g = lim.acquire();
    (g.wait_nanos(), g.ready_nanos() > g.started_nanos())
}

fn pacer(n: u64, strictness: f64) -> Res<u64> {
    let lim = Pacer::builder(Rate::new(UNTHROTTLED_RATE)?)
        .strictness(strictness)
        .verb(Verb::Start)
        .build()?;
    Ok(grant_loop(n, || take(&lim)))
}

fn pool(n: u64) -> Res<u64> {
    let lim = TokenPool::builder(Rate::new(UNTHROTTLED_RATE)?)
        .burst_ratio(1.1)
        .filling(Filling::Inline)
        .verb(Verb::Configure)
        .build()?;
    lim.start();
    Ok(grant_loop(n, || take(&lim)))
}

fn run(path: &str, n: u64) -> Res<u64> {
    Ok(match path {
        "floor" => floor(n),
        "governor" => governor(n),
        "pacer-burst-1.1" => pacer(n, 1.1)?,
        "pacer-strict-1.0" => pacer(n, 1.0)?,
        "pacer-average-0" => pacer(n, 0.0)?,
        "pool-inline" => pool(n)?,
        _ => return Err(format!("unknown path {path:?}; one of {PATHS:?} or all").into()),
    })
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "all".into());
    let n = match args.next() {
        Some(n) => n.parse()?,
        None => DEFAULT_N,
    };
    let paths: Vec<&str> = if which == "all" {
        PATHS.to_vec()
    } else {
        which.split(',').collect()
    };
    for path in paths {
        let t0 = Instant::now();
        let waited = run(path, n)?;
        let ns = t0.elapsed().as_secs_f64() * 1e9 / n as f64;
        println!("{path:<18} grants {n:>10}  {ns:6.2} ns/grant (wall)  waited {waited}");
    }
    Ok(())
}
