//! Async pacing accuracy and CPU per permit on tokio, with governor's
//! `until_ready` as the same-run peer.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --features tokio --example async_pacing
//! cargo run --release -p ratekeeper-bench --features tokio --example async_pacing -- --secs 2 --runs 3
//! cargo run --release -p ratekeeper-bench --features tokio --example async_pacing -- --quick
//! cargo run --release -p ratekeeper-bench --features tokio --example async_pacing -- \
//!     --targets 1e5 --runtimes current --limiters pacer,governor --tasks 8
//! ```
//!
//! For each target rate (default 1 k, 10 k, 100 k and 1 M ops/s), each
//! runtime (a current-thread runtime, and a multi-thread runtime with one
//! worker per core) and each limiter, `--tasks` tasks (default 8) share one
//! limiter and acquire one permit at a time in a loop:
//!
//! * `pacer`: [`Pacer`], burst 1.1 (the default), `acquire_async`;
//! * `pacer-average`: [`Pacer`], strictness 0 (average: lateness is caught
//!   up at once rather than at 1.1 × the rate), `acquire_async`;
//! * `pool`: [`TokenPool`], inline filling, burst 1.1, `acquire_async`;
//! * `bursty`: [`SmoothBursty`] (Guava, 1 s of stored permits at most: none
//!   are stored in a run that never idles), `acquire_async`;
//! * `refill`: [`RefillLimiter`], `k = R / 1000` permits (at least 1) per
//!   `k / R` s: the rate `R` with a bucket of one timer tick's worth
//!   (`--burst-ticks N`: N ticks' worth), starting empty, `acquire_async`;
//! * `governor`: governor's direct limiter, `until_ready()`, with a burst of
//!   one timer tick's worth (`R / 1000`, at least 1: the same allowance as
//!   the async waits' 1 ms coalescing window; governor's default burst of
//!   one second's worth would let `R` permits go at once), or N ticks' worth
//!   with `--burst-ticks N`.
//!
//! The two buckets (`refill`, `governor`) lose the time of any stall longer
//! than their burst, as token buckets do: with one tick's worth, a whole
//! process descheduled for 2 ms on a busy machine loses 1 ms of permits.
//! `--burst-ticks 2` sizes both to ride out such stalls.
//!
//! All ratekeeper limiters run on their default real clock
//! ([`DefaultClock`](ratekeeper::DefaultClock)) and default wait policy
//! (async window: one 1 ms timer tick).
//!
//! Measured per run (`--secs`, default 2):
//!
//! * **achieved**: permits whose acquire completed before the end of the
//!   window, all tasks together, divided by the window. Each task reads the
//!   clock after every batch of about 100 µs of its share of the schedule,
//!   and after every permit once the end is less than ten batches away; a
//!   batch that overran the end is not counted at all.
//! * **error**: achieved / target − 1, in percent. The goal: |error| ≤ 0.1 %
//!   at every rate.
//! * **CPU ns/permit**: process CPU time (user + sys, every thread: the
//!   runtime's workers and governor's timer thread alike) over the run,
//!   divided by the permits. The goal: at most governor's.
//!
//! Each cell runs `--runs` times (default 3), interleaved with the other
//! cells; the table shows the median and the min – max range. `--quick` is
//! `--secs 0.5 --runs 1`.

#[path = "common/mod.rs"]
mod common;
use common::{list, spread};

use std::error::Error;
use std::future::Future;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use governor::{DefaultDirectRateLimiter, Quota};
use ratekeeper::pool::TokenPool;
use ratekeeper::tokio::AsyncRateLimiter;
use ratekeeper::{Pacer, Rate, RateLimiter, SmoothBursty};
use ratekeeper_resilience4j::{RefillConfig, RefillLimiter};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pacer,
    PacerAverage,
    Pool,
    Bursty,
    Refill,
    Governor,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Pacer,
        Kind::PacerAverage,
        Kind::Pool,
        Kind::Bursty,
        Kind::Refill,
        Kind::Governor,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Pacer => "pacer",
            Kind::PacerAverage => "pacer-average",
            Kind::Pool => "pool",
            Kind::Bursty => "bursty",
            Kind::Refill => "refill",
            Kind::Governor => "governor",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Pacer => "Pacer `acquire_async`",
            Kind::PacerAverage => "Pacer, strictness 0, `acquire_async`",
            Kind::Pool => "TokenPool (inline) `acquire_async`",
            Kind::Bursty => "SmoothBursty `acquire_async`",
            Kind::Refill => "RefillLimiter `acquire_async`",
            Kind::Governor => "governor `until_ready`",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Current,
    Multi,
}

impl Flavor {
    const ALL: [Flavor; 2] = [Flavor::Current, Flavor::Multi];

    fn name(self) -> &'static str {
        match self {
            Flavor::Current => "current",
            Flavor::Multi => "multi",
        }
    }

    fn runtime(self, workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            Flavor::Current => tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build(),
            Flavor::Multi => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_time()
                .build(),
        }
    }
}

/// One permit, awaited: the operation every task repeats.
trait AcquireOne: Send + Sync + 'static {
    fn acquire_one(&self) -> impl Future<Output = ()> + Send;
}

/// Every ratekeeper limiter through the async extension.
struct Ours<L>(L);

impl<L: RateLimiter + Send + Sync + 'static> AcquireOne for Ours<L> {
    async fn acquire_one(&self) {
        black_box(self.0.acquire_async().await);
    }
}

struct Governor(DefaultDirectRateLimiter);

impl AcquireOne for Governor {
    async fn acquire_one(&self) {
        self.0.until_ready().await;
    }
}

/// Takes permits until `deadline`; returns those that completed before it.
async fn task<L: AcquireOne>(
    lim: Arc<L>,
    deadline: Instant,
    batch: u64,
    batch_time: Duration,
) -> u64 {
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
            lim.acquire_one().await;
        }
        if Instant::now() < deadline {
            permits += n;
        }
    }
}

/// Runs `tasks` tasks on `lim` (built by `make` inside the runtime, just
/// before the window starts) for `run_for`.
fn measure<L: AcquireOne>(
    flavor: Flavor,
    workers: usize,
    tasks: usize,
    target: f64,
    run_for: Duration,
    make: impl FnOnce() -> Result<L, Box<dyn Error>>,
) -> Result<Outcome, Box<dyn Error>> {
    let rt = flavor.runtime(workers)?;
    // About 100 µs of each task's share of the schedule per clock check.
    let batch = ((target / tasks as f64 / 10_000.0) as u64).max(1);
    let batch_time = Duration::from_secs_f64(batch as f64 * tasks as f64 / target);
    let cpu0 = ProcessTime::now();
    let permits = rt.block_on(async move {
        let lim = Arc::new(make()?);
        let deadline = Instant::now() + run_for;
        let handles: Vec<_> = (0..tasks)
            .map(|_| tokio::spawn(task(lim.clone(), deadline, batch, batch_time)))
            .collect();
        let mut permits = 0;
        for h in handles {
            permits += h.await?;
        }
        Ok::<u64, Box<dyn Error>>(permits)
    })?;
    let cpu = cpu0.elapsed();
    drop(rt);
    Ok(Outcome {
        permits,
        run_for,
        cpu,
    })
}

/// Permits in one timer tick (1 ms) at `target`, at least 1.
fn tick_permits(target: f64) -> u32 {
    ((target / 1000.0) as u32).max(1)
}

fn run(
    kind: Kind,
    flavor: Flavor,
    workers: usize,
    tasks: usize,
    target: f64,
    run_for: Duration,
    burst_ticks: u32,
) -> Result<Outcome, Box<dyn Error>> {
    let rate = Rate::new(target)?;
    match kind {
        Kind::Pacer => measure(flavor, workers, tasks, target, run_for, || {
            Ok(Ours(Pacer::new(rate)?))
        }),
        Kind::PacerAverage => measure(flavor, workers, tasks, target, run_for, || {
            Ok(Ours(Pacer::builder(rate).strictness(0.0).build()?))
        }),
        Kind::Pool => measure(flavor, workers, tasks, target, run_for, || {
            Ok(Ours(TokenPool::new(rate)?))
        }),
        Kind::Bursty => measure(flavor, workers, tasks, target, run_for, || {
            Ok(Ours(SmoothBursty::new(target)?))
        }),
        Kind::Refill => measure(flavor, workers, tasks, target, run_for, || {
            // One tick's permits per `k / R` seconds (1 ms from 1000 ops/s
            // up): the rate R, a bucket of `burst_ticks` ticks.
            let k = tick_permits(target);
            let config = RefillConfig::builder()
                .limit_for_period(u64::from(k))
                .limit_refresh_period(Duration::from_secs_f64(f64::from(k) / target))
                .permit_capacity(u64::from(
                    k.checked_mul(burst_ticks).ok_or("bucket too large")?,
                ))
                .initial_permits(0)
                .build()?;
            Ok(Ours(RefillLimiter::new("bench", config)))
        }),
        Kind::Governor => measure(flavor, workers, tasks, target, run_for, || {
            let per_second = NonZeroU32::new(target as u32).ok_or("rate below 1")?;
            let burst = NonZeroU32::new(tick_permits(target).saturating_mul(burst_ticks))
                .ok_or("burst 0")?;
            let quota = Quota::per_second(per_second).allow_burst(burst);
            Ok(Governor(governor::RateLimiter::direct(quota)))
        }),
    }
}

#[derive(Debug, Clone, Copy)]
struct Outcome {
    permits: u64,
    run_for: Duration,
    cpu: Duration,
}

impl Outcome {
    fn achieved(&self) -> f64 {
        self.permits as f64 / self.run_for.as_secs_f64()
    }
    fn cpu_ns_per_permit(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.permits.max(1) as f64
    }
}

struct Args {
    secs: f64,
    runs: usize,
    tasks: usize,
    burst_ticks: u32,
    targets: Vec<f64>,
    flavors: Vec<Flavor>,
    kinds: Vec<Kind>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        secs: 2.0,
        runs: 3,
        tasks: 8,
        burst_ticks: 1,
        targets: vec![1e3, 1e4, 1e5, 1e6],
        flavors: Flavor::ALL.to_vec(),
        kinds: Kind::ALL.to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--secs" => args.secs = value()?.parse()?,
            "--runs" => args.runs = value()?.parse()?,
            "--tasks" => args.tasks = value()?.parse()?,
            "--burst-ticks" => args.burst_ticks = value()?.parse()?,
            "--quick" => {
                args.secs = 0.5;
                args.runs = 1;
            }
            "--targets" => {
                args.targets = list(&value()?, |x| {
                    let r: f64 = x.parse()?;
                    Rate::new(r)?;
                    Ok(r)
                })?
            }
            "--runtimes" => {
                args.flavors = list(&value()?, |n| {
                    Flavor::ALL
                        .into_iter()
                        .find(|f| f.name() == n)
                        .ok_or_else(|| format!("unknown runtime {n} (current, multi)").into())
                })?
            }
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
                    "async_pacing [--secs S] [--runs N] [--tasks T] [--burst-ticks N] [--quick] \
                     [--targets 1e3,1e4,1e5,1e6] [--runtimes current,multi] \
                     [--limiters pacer,pacer-average,pool,bursty,refill,governor]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !args.secs.is_finite()
        || args.secs <= 0.0
        || args.runs == 0
        || args.tasks == 0
        || args.burst_ticks == 0
    {
        return Err("--secs must be > 0, --runs, --tasks and --burst-ticks >= 1".into());
    }
    if args
        .targets
        .iter()
        .any(|&t| t < 1.0 || t > f64::from(u32::MAX))
    {
        return Err("--targets: rates between 1 and 2^32 - 1 ops/s".into());
    }
    Ok(args)
}

/// Median, min and max of `f` over the runs.
fn stats(os: &[Outcome], f: impl Fn(&Outcome) -> f64) -> (f64, f64, f64) {
    spread(os.iter().map(f).collect())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let run_for = Duration::try_from_secs_f64(args.secs)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let command = std::iter::once(
        "cargo run --release -p ratekeeper-bench --features tokio --example async_pacing --"
            .to_string(),
    )
    .chain(std::env::args().skip(1))
    .collect::<Vec<_>>()
    .join(" ");
    let cells = args.targets.len() * args.flavors.len() * args.kinds.len();
    eprintln!(
        "{cells} cells x {} runs x {} s: about {:.0} s",
        args.runs,
        args.secs,
        cells as f64 * args.runs as f64 * args.secs * 1.05
    );
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; measure with --release");
    }

    // results[target][flavor][kind]: the outcomes of each run.
    let mut results =
        vec![vec![vec![Vec::new(); args.kinds.len()]; args.flavors.len()]; args.targets.len()];
    for r in 0..args.runs {
        for (ti, &target) in args.targets.iter().enumerate() {
            for (fi, &flavor) in args.flavors.iter().enumerate() {
                for (ki, &kind) in args.kinds.iter().enumerate() {
                    let o = run(
                        kind,
                        flavor,
                        cores,
                        args.tasks,
                        target,
                        run_for,
                        args.burst_ticks,
                    )?;
                    eprintln!(
                        "run {} target {:>5.0e} {:<7} {:<8} achieved {:>11.1}/s error {:>+8.4} % \
                         cpu {:>8.1} ns/permit",
                        r + 1,
                        target,
                        flavor.name(),
                        kind.name(),
                        o.achieved(),
                        (o.achieved() / target - 1.0) * 100.0,
                        o.cpu_ns_per_permit(),
                    );
                    results[ti][fi][ki].push(o);
                }
            }
        }
    }

    println!();
    println!("Command: `{command}`");
    println!(
        "Machine: {cores} cores ({} {}); {} tasks sharing one limiter; multi-thread runtime \
         with {cores} workers; buckets (refill, governor) of {} timer tick(s); {} s per run, \
         median of {} runs (min – max). CPU = process user+sys CPU time (all threads) / permits.",
        std::env::consts::OS,
        std::env::consts::ARCH,
        args.tasks,
        args.burst_ticks,
        args.secs,
        args.runs
    );
    println!();
    println!(
        "| target (ops/s) | runtime | limiter | achieved (ops/s) | error % (min – max) \
         | CPU ns/permit (min – max) |"
    );
    println!("|---:|---|---|---:|---:|---:|");
    let mut goals = Vec::new();
    for (ti, &target) in args.targets.iter().enumerate() {
        for (fi, &flavor) in args.flavors.iter().enumerate() {
            let governor_cpu = args
                .kinds
                .iter()
                .position(|&k| k == Kind::Governor)
                .map(|gi| stats(&results[ti][fi][gi], Outcome::cpu_ns_per_permit).0);
            for (ki, &kind) in args.kinds.iter().enumerate() {
                let os = &results[ti][fi][ki];
                let (ach, _, _) = stats(os, Outcome::achieved);
                let err = |o: &Outcome| (o.achieved() / target - 1.0) * 100.0;
                let (e, e_lo, e_hi) = stats(os, err);
                let (cpu, cpu_lo, cpu_hi) = stats(os, Outcome::cpu_ns_per_permit);
                println!(
                    "| {:.0e} | {} | {} | {:.1} | {:+.4} ({:+.4} – {:+.4}) | {:.1} ({:.1} – {:.1}) |",
                    target,
                    flavor.name(),
                    kind.label(),
                    ach,
                    e,
                    e_lo,
                    e_hi,
                    cpu,
                    cpu_lo,
                    cpu_hi,
                );
                if kind != Kind::Governor {
                    let accurate = e.abs() <= 0.1;
                    let cheaper = governor_cpu.is_none_or(|g| cpu <= g);
                    if !accurate || !cheaper {
                        goals.push(format!(
                            "{} {:.0e} {}: {}{}",
                            kind.name(),
                            target,
                            flavor.name(),
                            if accurate { "" } else { "|error| > 0.1 % " },
                            if cheaper { "" } else { "CPU above governor's" }
                        ));
                    }
                }
            }
        }
    }
    println!();
    if goals.is_empty() {
        println!("goals (|error| <= 0.1 %, CPU <= governor's; medians): MET in every cell");
    } else {
        println!(
            "goals (|error| <= 0.1 %, CPU <= governor's; medians): MISSED for {}",
            goals.join("; ")
        );
    }
    Ok(())
}
