//! How late `std::thread::sleep(d)` returns on this machine.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example sleep_overshoot
//! cargo run --release -p ratekeeper-bench --example sleep_overshoot -- --samples 1000
//! ```
//!
//! For d = 1 µs, 10 µs, 50 µs, 100 µs and 1 ms it sleeps `--samples` times
//! (default 200), measures each sleep with `Instant` and prints the overshoot
//! (time slept − d) at the 50th, 90th and 99th percentiles, plus the minimum
//! and maximum, and the thread's CPU time per sleep (`cpu_time::ThreadTime`).
//! Then what a park and unpark hand-over costs: a thread that sleeps 400 µs
//! and unparks a second, parked thread each time, against the sleep alone
//! (process CPU time per round).
//!
//! The default wait policy follows the median overshoot, the sleep
//! resolution ρ (it starts at
//! [`ratekeeper::clock::DEFAULT_SLEEP_OVERSHOOT_NANOS`], then measures its
//! own sleeps), and the CPU cost of a sleep is why it lets one sleep serve a
//! group of ops at high rates and one thread sleep at a time.

use std::error::Error;
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    // Nearest-rank percentile.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_nanos() as f64 / 1e3)
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut samples = 200usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--samples" => samples = args.next().ok_or("--samples needs a value")?.parse()?,
            "-h" | "--help" => {
                println!("sleep_overshoot [--samples N]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if samples == 0 {
        return Err("--samples must be >= 1".into());
    }

    let requests = [
        Duration::from_micros(1),
        Duration::from_micros(10),
        Duration::from_micros(50),
        Duration::from_micros(100),
        Duration::from_millis(1),
    ];
    println!(
        "overshoot of std::thread::sleep(d) = time slept - d, in µs; {samples} samples each, nearest-rank percentiles\n"
    );
    println!("| d | p50 | p90 | p99 | min | max | CPU per sleep µs |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for d in requests {
        let cpu = cpu_time::ThreadTime::now();
        let mut late: Vec<Duration> = (0..samples)
            .map(|_| {
                let t = Instant::now();
                std::thread::sleep(d);
                t.elapsed().saturating_sub(d)
            })
            .collect();
        let cpu = cpu.elapsed() / samples as u32;
        late.sort();
        println!(
            "| {} µs | {} | {} | {} | {} | {} | {} |",
            us(d),
            us(percentile(&late, 50.0)),
            us(percentile(&late, 90.0)),
            us(percentile(&late, 99.0)),
            us(late[0]),
            us(late[late.len() - 1]),
            us(cpu)
        );
    }
    hand_over(samples)
}

/// Process CPU per round: a 400 µs sleep, with and without unparking a
/// second, parked thread after it.
fn hand_over(rounds: usize) -> Result<(), Box<dyn Error>> {
    let round = Duration::from_micros(400);
    let alone = {
        let cpu = cpu_time::ProcessTime::now();
        for _ in 0..rounds {
            std::thread::sleep(round);
        }
        cpu.elapsed() / rounds as u32
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let parked = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::park();
            }
        })
    };
    let cpu = cpu_time::ProcessTime::now();
    for _ in 0..rounds {
        std::thread::sleep(round);
        parked.thread().unpark();
    }
    let with = cpu.elapsed() / rounds as u32;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    parked.thread().unpark();
    parked.join().map_err(|_| "the parked thread panicked")?;
    println!(
        "\nprocess CPU per 400 µs sleep: {} µs alone, {} µs with an unpark and re-park of a second thread",
        us(alone),
        us(with)
    );
    Ok(())
}
