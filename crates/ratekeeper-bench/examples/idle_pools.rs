//! What idle `TokenPool`s with a filler thread cost: CPU while nobody
//! acquires, and the time to create and to drop them.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example idle_pools
//! cargo run --release -p ratekeeper-bench --example idle_pools -- --pools 300 --idle 10
//! ```
//!
//! Builds `--pools` pools (default 1000) at `--rate` ops/s (default 1000)
//! with [`Filling::Thread`] every `--interval-us` µs (default 1000, the
//! default interval), each started and so with its filler thread running.
//! Nobody acquires. After `--settle` seconds (default 0.5: the pools fill up
//! within a few ms), it measures `--idle` seconds (default 5) of idleness:
//! the process's CPU time (`cpu_time::ProcessTime`) and, on Linux, how many
//! times the filler threads woke (their voluntary context switches, summed
//! from `/proc/self/task/*/status`). Then it drops every pool and times that.
//!
//! Issue 16 (finding 7) measured about 0.5 % of a core per idle pool, and
//! 58 s to create and drop 1,000 pools, when each filler woke every
//! interval for ever; `BENCHMARKS.md` ("Issue 16: idle token pools") has the
//! before and after figures.

use std::error::Error;
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use ratekeeper::pool::{Filling, TokenPool, FILLER_THREAD_NAME};
use ratekeeper::Rate;

struct Args {
    pools: usize,
    rate: f64,
    interval: Duration,
    settle: Duration,
    idle: Duration,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut a = Args {
        pools: 1000,
        rate: 1000.0,
        interval: Duration::from_millis(1),
        settle: Duration::from_millis(500),
        idle: Duration::from_secs(5),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--pools" => a.pools = value()?.parse()?,
            "--rate" => a.rate = value()?.parse()?,
            "--interval-us" => a.interval = Duration::from_micros(value()?.parse()?),
            "--settle" => a.settle = Duration::try_from_secs_f64(value()?.parse()?)?,
            "--idle" => a.idle = Duration::try_from_secs_f64(value()?.parse()?)?,
            "-h" | "--help" => {
                println!(
                    "idle_pools [--pools N] [--rate OPS] [--interval-us US] \
                     [--settle SECS] [--idle SECS]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if a.idle.is_zero() {
        return Err("--idle must be above 0".into());
    }
    Ok(a)
}

/// Voluntary context switches of this process's filler threads: each is
/// one time a filler went to sleep, so one wake-up. `None` off Linux.
fn filler_wakeups() -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let mut sum = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path();
        // A task that ended while being listed is skipped.
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        if comm.trim_end() != FILLER_THREAD_NAME {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(path.join("status")) else {
            continue;
        };
        sum += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(sum)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn Error>> {
    let a = parse_args()?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; measure with --release");
    }
    println!(
        "{} pools at {} ops/s, Filling::Thread({:?}), {cores} cores",
        a.pools, a.rate, a.interval
    );
    let rate = Rate::new(a.rate)?;

    let (cpu, t) = (ProcessTime::now(), Instant::now());
    let pools = (0..a.pools)
        .map(|_| {
            TokenPool::builder(rate)
                .filling(Filling::Thread(a.interval))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (created, create_cpu) = (t.elapsed(), cpu.elapsed());
    println!(
        "create:  {:>10.1} ms ({:.1} ms of CPU)",
        ms(created),
        ms(create_cpu)
    );

    std::thread::sleep(a.settle);
    // Counted before the window opens: reading 1,000 tasks' status files
    // costs tens of ms of CPU.
    let woke = filler_wakeups();
    let (cpu, t) = (ProcessTime::now(), Instant::now());
    std::thread::sleep(a.idle);
    let (idle_cpu, wall) = (cpu.elapsed(), t.elapsed());
    let woke = woke.zip(filler_wakeups()).map(|(a, b)| b.saturating_sub(a));
    let share = idle_cpu.as_secs_f64() / wall.as_secs_f64();
    println!(
        "idle:    {:>10.1} ms of CPU in {:.2} s = {:.2} % of one core ({:.4} % per pool)",
        ms(idle_cpu),
        wall.as_secs_f64(),
        share * 100.0,
        share * 100.0 / a.pools.max(1) as f64
    );
    match woke {
        Some(n) => println!(
            "wakeups: {n:>10} filler wake-ups in the idle window ({:.1} per pool per s)",
            n as f64 / a.pools.max(1) as f64 / wall.as_secs_f64()
        ),
        None => println!("wakeups: not counted off Linux"),
    }

    let (cpu, t) = (ProcessTime::now(), Instant::now());
    drop(pools);
    let (dropped, drop_cpu) = (t.elapsed(), cpu.elapsed());
    println!(
        "drop:    {:>10.1} ms ({:.1} ms of CPU)",
        ms(dropped),
        ms(drop_cpu)
    );
    println!("create + drop: {:.2} s", (created + dropped).as_secs_f64());
    Ok(())
}
