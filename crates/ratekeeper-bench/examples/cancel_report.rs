//! What abandoned async acquires cost each limiter, on the real clock.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --features tokio --example cancel_report
//! cargo run --release -p ratekeeper-bench --features tokio --example cancel_report -- --rate 500 --secs 3
//! ```
//!
//! For each limiter, `--tasks` tasks (default 8) on a current-thread tokio
//! runtime loop on `acquire_async` for `--secs` seconds (default 2) at
//! `--rate` permits per second (default 1000), twice: once with every
//! attempt served, once with half the attempts (chosen at random) under a
//! `tokio::time::timeout` of `--short-ms` (default 1 ms, shorter than a
//! slot, so they are abandoned while they wait unless they go at once).
//! It prints the grants of each run as a share of the rate, the share of
//! attempts abandoned, and the busiest 100 ms of each run against the
//! rate's 100 ms.

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratekeeper::tokio::AsyncRateLimiter;
use ratekeeper::{Pacer, Rate, RateLimiter, SmoothBursty, SmoothWarmingUp, TokenPool};
use ratekeeper_resilience4j::{CycleConfig, CycleLimiter, RefillConfig, RefillLimiter};
use tokio::time::{timeout, Instant};

struct Args {
    rate: f64,
    tasks: u64,
    secs: f64,
    short: Duration,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut a = Args {
        rate: 1000.0,
        tasks: 8,
        secs: 2.0,
        short: Duration::from_millis(1),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--rate" => a.rate = value()?.parse()?,
            "--tasks" => a.tasks = value()?.parse()?,
            "--secs" => a.secs = value()?.parse()?,
            "--short-ms" => a.short = Duration::from_millis(value()?.parse()?),
            "-h" | "--help" => {
                println!("cancel_report [--rate R] [--tasks N] [--secs S] [--short-ms MS]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !(a.rate > 0.0 && a.secs > 0.0 && a.tasks > 0) {
        return Err("--rate, --secs and --tasks must be above 0".into());
    }
    Ok(a)
}

type Limiter = Arc<dyn RateLimiter + Send + Sync>;

fn limiters(rate: f64) -> Result<Vec<(&'static str, Limiter)>, Box<dyn Error>> {
    let slot = Duration::from_secs_f64(1.0 / rate);
    let refill = RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(slot)
        .build()?;
    let cycle = CycleConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(slot)
        .build()?;
    Ok(vec![
        ("Pacer (burst 1.1)", Arc::new(Pacer::new(Rate::new(rate)?)?)),
        (
            "Pacer (strict)",
            Arc::new(Pacer::builder(Rate::new(rate)?).strictness(1.0).build()?),
        ),
        (
            "ShardedPacer (2 shards)",
            Arc::new(Pacer::builder(Rate::new(rate)?).build_sharded(2)?),
        ),
        (
            "TokenPool (inline)",
            Arc::new(TokenPool::builder(Rate::new(rate)?).build()?),
        ),
        ("SmoothBursty", Arc::new(SmoothBursty::new(rate)?)),
        (
            "SmoothWarmingUp (200 ms)",
            Arc::new(
                SmoothWarmingUp::builder(rate)
                    .warmup(Duration::from_millis(200))
                    .build()?,
            ),
        ),
        ("RefillLimiter", Arc::new(RefillLimiter::new("r", refill))),
        ("CycleLimiter", Arc::new(CycleLimiter::new("c", cycle))),
    ])
}

/// Grants' start times (µs from the start), abandoned and all attempts.
async fn run(limiter: Limiter, a: &Args, cancel: bool) -> (Vec<u64>, u64, u64) {
    let start = Instant::now();
    let span = Duration::from_secs_f64(a.secs);
    let served = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..a.tasks)
        .map(|task| {
            let (limiter, served, short) = (limiter.clone(), served.clone(), a.short);
            let mut x = (task + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            tokio::spawn(async move {
                let (mut abandoned, mut attempts) = (0, 0);
                while start.elapsed() < span {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let d = if cancel && x % 2 == 0 {
                        short
                    } else {
                        Duration::from_secs(3_600)
                    };
                    attempts += 1;
                    match timeout(d, limiter.acquire_async()).await {
                        Ok(_) => {
                            let at = start.elapsed().as_micros() as u64;
                            served.lock().unwrap().push(at);
                        }
                        Err(_) => abandoned += 1,
                    }
                }
                (abandoned, attempts)
            })
        })
        .collect();
    let (mut abandoned, mut attempts) = (0, 0);
    for h in handles {
        let (x, n) = h.await.expect("a task panicked");
        abandoned += x;
        attempts += n;
    }
    let mut served = std::mem::take(&mut *served.lock().unwrap());
    served.sort_unstable();
    (served, abandoned, attempts)
}

/// The most grants in any `window_us` of `served`.
fn busiest(served: &[u64], window_us: u64) -> usize {
    (0..served.len())
        .map(|k| {
            served[k..]
                .iter()
                .take_while(|&&t| t < served[k] + window_us)
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn Error>> {
    let a = parse_args()?;
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; measure with --release");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let want = a.rate * a.secs;
    println!(
        "{} tasks at {} permits/s for {} s; half the attempts under a {:?} timeout",
        a.tasks, a.rate, a.secs, a.short
    );
    println!(
        "| limiter | all served | half cancelled | abandoned | busiest 100 ms, all served / half cancelled (rate's) |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, _) in limiters(a.rate)? {
        // A fresh limiter for each run: the same start for both.
        let fresh =
            |n: &str| limiters(a.rate).map(|ls| ls.into_iter().find(|(k, _)| *k == n).unwrap().1);
        let (base, _, _) = rt.block_on(run(fresh(name)?, &a, false));
        let (cut, abandoned, attempts) = rt.block_on(run(fresh(name)?, &a, true));
        println!(
            "| {name} | {:.1} % | {:.1} % | {:.0} % | {} / {} ({:.0}) |",
            base.len() as f64 / want * 100.0,
            cut.len() as f64 / want * 100.0,
            abandoned as f64 / attempts.max(1) as f64 * 100.0,
            busiest(&base, 100_000),
            busiest(&cut, 100_000),
            a.rate / 10.0
        );
    }
    Ok(())
}
