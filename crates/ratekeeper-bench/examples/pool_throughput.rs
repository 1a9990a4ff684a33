//! Throughput and cost of the [`TokenPool`] under contention, with the
//! [`Pacer`] as the same-run peer: nosqlbench's G2 contended perf runs
//! (spec §5.3) on this machine.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example pool_throughput
//! cargo run --release -p ratekeeper-bench --example pool_throughput -- --secs 2 --runs 3
//! cargo run --release -p ratekeeper-bench --example pool_throughput -- --quick
//! cargo run --release -p ratekeeper-bench --example pool_throughput -- --targets 1e7 --threads 1,8
//! ```
//!
//! For each target rate (default 1e7 and 1e8 ops/s), each thread count
//! (default 1, 2, 4 and 8) and each limiter, built with burst ratio 1.1 except where
//! said:
//!
//! * `pool-inline`: [`TokenPool`] with [`Filling::Inline`] (callers refill);
//! * `pool-thread-1ms`: [`TokenPool`] with a filler thread every 1 ms
//!   (nosqlbench's design value);
//! * `pool-thread-0.1ms`: [`TokenPool`] with a filler thread every 0.1 ms
//!   (nosqlbench's later value);
//! * `pacer`: [`Pacer`] with the default strictness (burst 1.1),
//! * `pacer-avg`: [`Pacer`] in average mode (strictness 0), every thread on
//!   the exact path (one shared atomic add per permit),
//! * `pacer-avg-batched`: the same pacer, each thread through its own
//!   batching [`PacerHandle`](ratekeeper::PacerHandle) (one atomic add per
//!   lease of up to 1024 slots; see `ratekeeper::pacer::batch`),
//!
//! N threads are released together by a barrier and each calls `acquire()`
//! in a loop. The limiter is built idle and started just before the barrier
//! opens; the measured window runs from then for `--secs` (default 2).
//!
//! Measured per run:
//!
//! * **achieved**: permits whose `acquire` returned before the end of the
//!   window, all threads together, divided by the window. Each thread reads
//!   the clock after every batch of about 100 µs of its share of the schedule,
//!   and after every permit once the end is less than ten batches away; a
//!   batch that overran the end is not counted at all (an undercount of at
//!   most one batch per thread, for a limiter far slower than its target).
//! * **ratio**: achieved / target. The goal at 1e7 is within 1 %.
//! * **CPU ns/permit**: process CPU time (user + sys, all threads, so the
//!   filler thread counts: `CLOCK_PROCESS_CPUTIME_ID` through the `cpu-time`
//!   crate) from the start to the last thread's end, divided by the permits.
//! * **backlog at end**: the limiter's `wait_stats().backlog_nanos` when the
//!   run ended: for the pool its waiting pool, for the pacer how far its
//!   schedule was behind the clock.
//!
//! Each cell is run `--runs` times (default 3), interleaved with the other
//! cells; the table shows the median with the min–max range. `--quick` is
//! `--secs 0.5 --runs 1`. With the defaults the whole measurement takes about
//! 3.5 minutes.

#[path = "common/mod.rs"]
mod common;
use common::{list, spread};

use std::error::Error;
use std::hint::black_box;
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use ratekeeper::pool::{Filling, TokenPool};
use ratekeeper::{Pacer, Rate, RateLimiter, RateSpec, Verb};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PoolInline,
    PoolThread1ms,
    PoolThread100us,
    Pacer,
    PacerAverage,
    PacerBatched,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::PoolInline,
        Kind::PoolThread1ms,
        Kind::PoolThread100us,
        Kind::Pacer,
        Kind::PacerAverage,
        Kind::PacerBatched,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::PoolInline => "pool-inline",
            Kind::PoolThread1ms => "pool-thread-1ms",
            Kind::PoolThread100us => "pool-thread-0.1ms",
            Kind::Pacer => "pacer",
            Kind::PacerAverage => "pacer-avg",
            Kind::PacerBatched => "pacer-avg-batched",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::PoolInline => "TokenPool, inline filling",
            Kind::PoolThread1ms => "TokenPool, filler thread 1 ms",
            Kind::PoolThread100us => "TokenPool, filler thread 0.1 ms",
            Kind::Pacer => "Pacer, burst 1.1",
            Kind::PacerAverage => "Pacer, average (strictness 0)",
            Kind::PacerBatched => "Pacer, average, one batching handle per thread",
        }
    }

    fn filling(self) -> Option<Filling> {
        match self {
            Kind::PoolInline => Some(Filling::Inline),
            Kind::PoolThread1ms => Some(Filling::Thread(Duration::from_millis(1))),
            Kind::PoolThread100us => Some(Filling::Thread(Duration::from_micros(100))),
            Kind::Pacer | Kind::PacerAverage | Kind::PacerBatched => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Outcome {
    permits: u64,
    run_for: Duration,
    cpu: Duration,
    backlog_nanos: u64,
}

impl Outcome {
    fn achieved(&self) -> f64 {
        self.permits as f64 / self.run_for.as_secs_f64()
    }
    fn ratio(&self, target: f64) -> f64 {
        self.achieved() / target
    }
    fn cpu_ns_per_permit(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.permits.max(1) as f64
    }
    fn backlog_ms(&self) -> f64 {
        self.backlog_nanos as f64 / 1e6
    }
}

/// `threads` threads take permits from `lim` for `run_for`, released
/// together; `start` starts the limiter just before they are released.
/// Returns the permits granted within the window and the process CPU time.
fn measure<L: RateLimiter>(
    make: &(impl Fn() -> L + Sync),
    threads: usize,
    target: f64,
    run_for: Duration,
    start: impl FnOnce(),
) -> (u64, Duration) {
    // About 100 µs of each thread's share of the schedule per clock check.
    let batch = ((target / threads as f64 / 10_000.0) as u64).max(1);
    let batch_time = Duration::from_secs_f64(batch as f64 * threads as f64 / target);
    let barrier = Barrier::new(threads + 1);
    let deadline = OnceLock::<Instant>::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (barrier, deadline) = (&barrier, &deadline);
                s.spawn(move || {
                    let lim = make();
                    barrier.wait();
                    let deadline = *deadline.get().expect("set before the barrier opens");
                    let mut permits = 0u64;
                    loop {
                        let now = Instant::now();
                        if now >= deadline {
                            return permits;
                        }
                        let n = if deadline - now > 10 * batch_time {
                            batch
                        } else {
                            1
                        };
                        for _ in 0..n {
                            black_box(lim.acquire());
                        }
                        if Instant::now() < deadline {
                            permits += n;
                        }
                    }
                })
            })
            .collect();
        let cpu0 = ProcessTime::now();
        start();
        deadline.set(Instant::now() + run_for).expect("set once");
        barrier.wait();
        let permits = handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .sum();
        (permits, cpu0.elapsed())
    })
}

fn run(
    kind: Kind,
    target: f64,
    threads: usize,
    run_for: Duration,
) -> Result<Outcome, Box<dyn Error>> {
    let rate = Rate::new(target)?;
    let (permits, cpu, backlog_nanos) = match kind.filling() {
        Some(filling) => {
            let pool = TokenPool::builder(rate)
                .filling(filling)
                .verb(Verb::Configure)
                .build()?;
            let (permits, cpu) = measure(&|| &pool, threads, target, run_for, || pool.start());
            if pool.filling() != filling {
                return Err(
                    format!("{}: the pool fell back to {}", kind.name(), pool.filling()).into(),
                );
            }
            (permits, cpu, pool.wait_stats().backlog_nanos)
        }
        None => {
            let strictness = if kind == Kind::Pacer { 1.1 } else { 0.0 };
            let pacer = Pacer::builder(rate)
                .strictness(strictness)
                .verb(Verb::Configure)
                .build()?;
            let (permits, cpu) = if kind == Kind::PacerBatched {
                measure(&|| pacer.handle(), threads, target, run_for, || {
                    pacer.restart()
                })
            } else {
                measure(&|| &pacer, threads, target, run_for, || pacer.restart())
            };
            (permits, cpu, pacer.wait_stats().backlog_nanos)
        }
    };
    Ok(Outcome {
        permits,
        run_for,
        cpu,
        backlog_nanos,
    })
}

struct Args {
    secs: f64,
    runs: usize,
    targets: Vec<f64>,
    threads: Vec<usize>,
    kinds: Vec<Kind>,
}

fn parse_target(s: &str) -> Result<f64, Box<dyn Error>> {
    let r = match s.parse::<f64>() {
        Ok(r) => r,
        Err(_) => s.parse::<RateSpec>()?.rate().get(),
    };
    Rate::new(r)?;
    Ok(r)
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        secs: 2.0,
        runs: 3,
        targets: vec![1e7, 1e8],
        threads: vec![1, 2, 4, 8],
        kinds: Kind::ALL.to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--secs" => args.secs = value()?.parse()?,
            "--runs" => args.runs = value()?.parse()?,
            "--quick" => {
                args.secs = 0.5;
                args.runs = 1;
            }
            "--targets" => args.targets = list(&value()?, parse_target)?,
            "--threads" => args.threads = list(&value()?, |x| Ok(x.parse::<usize>()?))?,
            "--limiters" => {
                args.kinds = list(&value()?, |n| {
                    Kind::ALL
                        .into_iter()
                        .find(|k| k.name() == n)
                        .ok_or_else(|| format!("unknown limiter {n}").into())
                })?
            }
            "-h" | "--help" => {
                println!(
                    "pool_throughput [--secs S] [--runs N] [--quick] [--targets 1e7,1e8] \
                     [--threads 1,2,4,8] \
                     [--limiters pool-inline,pool-thread-1ms,pool-thread-0.1ms,pacer,pacer-avg,pacer-avg-batched]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !args.secs.is_finite() || args.secs <= 0.0 || args.runs == 0 {
        return Err("--secs must be > 0 and --runs >= 1".into());
    }
    if args.threads.contains(&0) {
        return Err("--threads: thread counts must be at least 1".into());
    }
    Ok(args)
}

/// Median, min and max of `f` over the runs.
fn stats(os: &[Outcome], f: impl Fn(&Outcome) -> f64) -> (f64, f64, f64) {
    spread(os.iter().map(f).collect())
}

/// Ops/s in millions, e.g. `9.998M`.
fn mops(x: f64) -> String {
    format!("{:.3}M", x / 1e6)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let run_for = Duration::try_from_secs_f64(args.secs)?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let command = std::iter::once(
        "cargo run --release -p ratekeeper-bench --example pool_throughput --".to_string(),
    )
    .chain(std::env::args().skip(1))
    .collect::<Vec<_>>()
    .join(" ");
    let cells = args.targets.len() * args.threads.len() * args.kinds.len();
    eprintln!(
        "{cells} cells x {} runs x {} s: about {:.0} s",
        args.runs,
        args.secs,
        cells as f64 * args.runs as f64 * args.secs * 1.05
    );
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; measure with --release");
    }

    // results[target][threads][kind]: the outcomes of each run.
    let mut results =
        vec![vec![vec![Vec::new(); args.kinds.len()]; args.threads.len()]; args.targets.len()];
    for r in 0..args.runs {
        for (ti, &target) in args.targets.iter().enumerate() {
            for (ni, &threads) in args.threads.iter().enumerate() {
                for (ki, &kind) in args.kinds.iter().enumerate() {
                    let o = run(kind, target, threads, run_for)?;
                    eprintln!(
                        "run {} target {:>5.0e} threads {} {:<17} achieved {:>13.0}/s \
                         ratio {:.4} cpu {:>7.1} ns/permit backlog at end {:.3} ms",
                        r + 1,
                        target,
                        threads,
                        kind.name(),
                        o.achieved(),
                        o.ratio(target),
                        o.cpu_ns_per_permit(),
                        o.backlog_ms()
                    );
                    results[ti][ni][ki].push(o);
                }
            }
        }
    }

    println!();
    println!("Command: `{command}`");
    println!(
        "Machine: {cores} cores ({} {}); {} s per run, median of {} runs (min – max). \
         CPU = process user+sys CPU time (all threads, filler included) / permits. \
         Burst 1.1 except the `pacer-avg*` rows (strictness 0).",
        std::env::consts::OS,
        std::env::consts::ARCH,
        args.secs,
        args.runs
    );
    println!();
    println!(
        "| target (ops/s) | threads | limiter | achieved (ops/s) | min – max | achieved / target \
         | within 1 % | CPU ns/permit (min – max) | backlog at end (ms) |"
    );
    println!("|---:|---:|---|---:|---:|---:|:---:|---:|---:|");
    let mut misses_1e7 = Vec::new();
    for (ti, &target) in args.targets.iter().enumerate() {
        for (ni, &threads) in args.threads.iter().enumerate() {
            for (ki, &kind) in args.kinds.iter().enumerate() {
                let os = &results[ti][ni][ki];
                let (ach, ach_lo, ach_hi) = stats(os, Outcome::achieved);
                let ratio = ach / target;
                let (cpu, cpu_lo, cpu_hi) = stats(os, Outcome::cpu_ns_per_permit);
                let (backlog, _, backlog_hi) = stats(os, Outcome::backlog_ms);
                let within = (ratio - 1.0).abs() <= 0.01;
                if target == 1e7 && !within {
                    misses_1e7.push(format!("{} threads {}", kind.name(), threads));
                }
                println!(
                    "| {:.0e} | {} | {} | {} | {} – {} | {:.4} | {} | {:.1} ({:.1} – {:.1}) | {:.3}{} |",
                    target,
                    threads,
                    kind.label(),
                    mops(ach),
                    mops(ach_lo),
                    mops(ach_hi),
                    ratio,
                    if within { "yes" } else { "no" },
                    cpu,
                    cpu_lo,
                    cpu_hi,
                    backlog,
                    if os.len() > 1 {
                        format!(" (max {backlog_hi:.3})")
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    if args.targets.contains(&1e7) {
        println!();
        if misses_1e7.is_empty() {
            println!("goal: achieved within 1 % of 1e7 ops/s (median): MET in every cell");
        } else {
            println!(
                "goal: achieved within 1 % of 1e7 ops/s (median): MISSED for {}",
                misses_1e7.join(", ")
            );
        }
    }
    Ok(())
}
