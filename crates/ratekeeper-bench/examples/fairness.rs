//! Fairness and accuracy of the Pacer's three multi-thread paths (issue 8,
//! item 2): the exact pacer, batched handles (`Pacer::handle`, micro-
//! batching) and partitioned shards (`ShardedPacer`, work stealing), under
//! a target rate, at 2, 3 and 4 threads, plus shards left idle; and, with
//! `--limiter refill` or `--limiter pool`, the same for a `RefillLimiter`
//! or a `TokenPool`: the exact limiter against `BatchHandle`s on it.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example fairness
//! cargo run --release -p ratekeeper-bench --example fairness -- --quick
//! cargo run --release -p ratekeeper-bench --example fairness -- --secs 2 --runs 3 --strictness 1.1
//! cargo run --release -p ratekeeper-bench --example fairness -- --limiter refill
//! ```
//!
//! Each cell: `threads` threads, released together by a barrier just after
//! the limiter's schedule is (re)started, call `acquire()` (blocking, the
//! default wait policy) for `--secs` (default 1 s). A grant counts if its
//! call returned before the end of the window. Reported:
//!
//! * **achieved**: all threads' grants over the window; **error**:
//!   achieved / target − 1 (target `--target`, default 1e7/s);
//! * **min/max**: the smallest per-thread count over the largest (1 = equal
//!   shares);
//! * **Jain**: Jain's fairness index of the per-thread counts,
//!   `(Σx)² / (n · Σx²)`: 1 for equal shares, `1/n` when one thread gets
//!   everything.
//!
//! Rows: the exact pacer (every thread on one schedule); batched handles
//! (one per thread); sharded with one shard per thread (`N = threads`);
//! sharded with 2 shards (threads share shards unevenly at 3 threads); and
//! **idle shards**: more shards than threads (4 shards, 2 threads; 8
//! shards, 4 threads), where the total should stay at the target because
//! waiting threads steal the idle shards' due slots.
//!
//! `--strictness` (default 0, average) applies to every Pacer row; batched
//! handles lease only in average and compensation modes (below 1) and are
//! the exact path otherwise. `--quick` is `--secs 0.3`. Each cell is run
//! `--runs` times (default 1); the table gives medians.
//!
//! `--limiter` (default `pacer`) picks the limiter. `refill`: a
//! `RefillLimiter` of `target × 100 µs` permits per 100 µs period, no
//! timeout; `pool`: a `TokenPool`, burst ratio 1.1, filled inline, started
//! just before the threads are released (both as `bench_report` configures
//! them). Their rows are the exact limiter (every thread calls `acquire()`
//! on it) and batched handles (each thread makes one
//! `BatchHandle::new(&limiter)` and acquires through it, leasing up to 1024
//! permits per reservation); they have no shards.

#[path = "common/mod.rs"]
mod common;
use common::{list, median};

use std::error::Error;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use ratekeeper::pool::Filling;
use ratekeeper::{BatchHandle, Pacer, PacerBuilder, Rate, RateLimiter, TokenPool, Verb};
use ratekeeper_resilience4j::RefillConfig;
use ratekeeper_resilience4j::RefillLimiter;

type Res<T> = Result<T, Box<dyn Error>>;

/// The limiter measured.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Limiter {
    Pacer,
    Refill,
    Pool,
}

/// Which path the threads take.
#[derive(Debug, Clone, Copy)]
enum Path {
    Exact,
    Batched,
    /// Sharded with this many shards (0: one per thread).
    Sharded(usize),
}

struct Args {
    secs: f64,
    runs: usize,
    target: f64,
    strictness: f64,
    threads: Vec<usize>,
    limiter: Limiter,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        secs: 1.0,
        runs: 1,
        target: 1e7,
        strictness: 0.0,
        threads: vec![2, 3, 4],
        limiter: Limiter::Pacer,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--secs" => args.secs = value()?.parse()?,
            "--runs" => args.runs = value()?.parse()?,
            "--target" => args.target = value()?.parse()?,
            "--strictness" => args.strictness = value()?.parse()?,
            "--threads" => args.threads = list(&value()?, |x| Ok(x.parse()?))?,
            "--limiter" => {
                args.limiter = match value()?.as_str() {
                    "pacer" => Limiter::Pacer,
                    "refill" => Limiter::Refill,
                    "pool" => Limiter::Pool,
                    other => return Err(format!("unknown limiter {other}").into()),
                }
            }
            "--quick" => args.secs = 0.3,
            "-h" | "--help" => {
                println!(
                    "fairness [--quick] [--secs S] [--runs N] [--target OPS] \
                     [--strictness S] [--threads 2,3,4] [--limiter pacer|refill|pool]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !args.secs.is_finite() || args.secs <= 0.0 || args.runs == 0 {
        return Err("--secs must be > 0 and --runs >= 1".into());
    }
    if args.threads.is_empty() || args.threads.contains(&0) {
        return Err("--threads: thread counts must be at least 1".into());
    }
    Rate::new(args.target)?;
    Ok(args)
}

/// Each thread's grants in one window.
fn run(args: &Args, path: Path, threads: usize, window: Duration) -> Res<Vec<u64>> {
    match args.limiter {
        Limiter::Pacer => {
            let builder = Pacer::builder(Rate::new(args.target)?).strictness(args.strictness);
            run_pacer(builder, path, threads, window)
        }
        Limiter::Refill => {
            let config = RefillConfig::builder()
                .limit_for_period(((args.target * 1e-4).round() as u64).max(1))
                .limit_refresh_period(Duration::from_micros(100))
                .timeout(Duration::ZERO)
                .build()?;
            let limiter = RefillLimiter::new("fairness", config);
            run_limiter(&limiter, || {}, path, threads, window)
        }
        Limiter::Pool => {
            let pool = TokenPool::builder(Rate::new(args.target)?)
                .burst_ratio(1.1)
                .filling(Filling::Inline)
                .verb(Verb::Configure)
                .build()?;
            run_limiter(&pool, || pool.start(), path, threads, window)
        }
    }
}

/// The Pacer's grants per thread in one window.
fn run_pacer(builder: PacerBuilder, path: Path, threads: usize, window: Duration) -> Res<Vec<u64>> {
    let builder = builder.verb(Verb::Configure);
    match path {
        Path::Exact => {
            let pacer = builder.build()?;
            Ok(drive(threads, window, || pacer.restart(), |_| &pacer))
        }
        Path::Batched => {
            let pacer = builder.build()?;
            Ok(drive(
                threads,
                window,
                || pacer.restart(),
                |_| pacer.handle(),
            ))
        }
        Path::Sharded(shards) => {
            let shards = if shards == 0 { threads } else { shards };
            let pacer = builder.build_sharded(shards)?;
            Ok(drive(
                threads,
                window,
                || pacer.restart(),
                |_| pacer.handle(),
            ))
        }
    }
}

/// A limiter other than the Pacer: shared (exact) or through one
/// `BatchHandle` per thread (batched).
fn run_limiter<L: RateLimiter + Sync>(
    limiter: &L,
    start: impl Fn(),
    path: Path,
    threads: usize,
    window: Duration,
) -> Res<Vec<u64>> {
    match path {
        Path::Exact => Ok(drive(threads, window, start, |_| limiter)),
        Path::Batched => Ok(drive(threads, window, start, |_| BatchHandle::new(limiter))),
        Path::Sharded(_) => Err("only the Pacer has shards".into()),
    }
}

/// `threads` threads, each with the limiter `make` gives it (made on the
/// thread), take permits for `window` after `start`; returns their counts.
fn drive<L: RateLimiter>(
    threads: usize,
    window: Duration,
    start: impl Fn(),
    make: impl Fn(usize) -> L + Sync,
) -> Vec<u64> {
    let barrier = Barrier::new(threads + 1);
    let deadline = std::sync::OnceLock::<Instant>::new();
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let (barrier, deadline, make) = (&barrier, &deadline, &make);
                s.spawn(move || {
                    let limiter = make(i);
                    barrier.wait();
                    let deadline = *deadline.get().expect("set before the barrier opens");
                    let mut n = 0u64;
                    loop {
                        limiter.acquire();
                        if Instant::now() >= deadline {
                            return n;
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        start();
        deadline.set(Instant::now() + window).expect("set once");
        barrier.wait();
        hs.into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    })
}

/// Jain's fairness index of `x`.
fn jain(x: &[u64]) -> f64 {
    let sum: f64 = x.iter().map(|&v| v as f64).sum();
    let squares: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (x.len() as f64 * squares)
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let window = Duration::try_from_secs_f64(args.secs)?;
    let (paths, limiter) = match args.limiter {
        Limiter::Pacer => (
            "exact, batched, sharded",
            format!("Pacer, strictness {}", args.strictness),
        ),
        Limiter::Refill => ("exact, batched", "RefillLimiter, 100 µs period".to_string()),
        Limiter::Pool => (
            "exact, batched",
            "TokenPool, burst ratio 1.1, inline filling".to_string(),
        ),
    };
    println!(
        "# Fairness and accuracy: {paths}\n\n\
         {limiter}, target {:.3e}/s, {} s per cell, median of {} run(s), {} CPUs\n\
         command: cargo run --release -p ratekeeper-bench --example fairness -- {}\n",
        args.target,
        args.secs,
        args.runs,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::args().skip(1).collect::<Vec<_>>().join(" "),
    );
    println!(
        "| path | threads | shards | achieved (M/s) | error | min/max | Jain | per thread (k) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---|");
    let mut cells: Vec<(&str, Path, usize)> = Vec::new();
    for &t in &args.threads {
        cells.push(("exact", Path::Exact, t));
        cells.push(("batched", Path::Batched, t));
        if args.limiter == Limiter::Pacer {
            cells.push(("sharded", Path::Sharded(0), t));
            cells.push(("sharded", Path::Sharded(2), t));
        }
    }
    if args.limiter == Limiter::Pacer {
        cells.push(("sharded, idle shards", Path::Sharded(4), 2));
        cells.push(("sharded, idle shards", Path::Sharded(8), 4));
    }
    for (name, path, threads) in cells {
        let mut achieved = Vec::new();
        let mut ratio = Vec::new();
        let mut index = Vec::new();
        let mut last = Vec::new();
        for _ in 0..args.runs {
            let counts = run(&args, path, threads, window)?;
            let total: u64 = counts.iter().sum();
            let (lo, hi) = (counts.iter().min(), counts.iter().max());
            achieved.push(total as f64 / args.secs);
            ratio.push(
                lo.zip(hi)
                    .map_or(1.0, |(&lo, &hi)| lo as f64 / hi.max(1) as f64),
            );
            index.push(jain(&counts));
            last = counts;
        }
        let achieved = median(achieved);
        let shards = match path {
            Path::Sharded(0) => threads.to_string(),
            Path::Sharded(n) => n.to_string(),
            _ => "-".into(),
        };
        println!(
            "| {name} | {threads} | {shards} | {:.3} | {:+.2} % | {:.3} | {:.4} | {} |",
            achieved / 1e6,
            (achieved / args.target - 1.0) * 100.0,
            median(ratio),
            median(index),
            last.iter()
                .map(|c| format!("{:.0}", *c as f64 / 1e3))
                .collect::<Vec<_>>()
                .join(" / "),
        );
    }
    Ok(())
}
