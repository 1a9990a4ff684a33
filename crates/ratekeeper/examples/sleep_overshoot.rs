//! How late `std::thread::sleep(d)` returns on this machine.
//!
//! ```text
//! cargo run --release -p ratekeeper --example sleep_overshoot
//! cargo run --release -p ratekeeper --example sleep_overshoot -- --samples 1000
//! ```
//!
//! For d = 1 µs, 10 µs, 50 µs, 100 µs and 1 ms it sleeps `--samples` times
//! (default 200), measures each sleep with `Instant` and prints the overshoot
//! (time slept − d) at the 50th, 90th and 99th percentiles, plus the minimum
//! and maximum. The blocking waits of ratekeeper coalesce waits shorter than
//! the typical overshoot ([`ratekeeper::clock::DEFAULT_SLEEP_OVERSHOOT_NANOS`]);
//! this is the measurement that constant is based on.

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
    println!("| d | p50 | p90 | p99 | min | max |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for d in requests {
        let mut late: Vec<Duration> = (0..samples)
            .map(|_| {
                let t = Instant::now();
                std::thread::sleep(d);
                t.elapsed().saturating_sub(d)
            })
            .collect();
        late.sort();
        println!(
            "| {} µs | {} | {} | {} | {} | {} |",
            us(d),
            us(percentile(&late, 50.0)),
            us(percentile(&late, 90.0)),
            us(percentile(&late, 99.0)),
            us(late[0]),
            us(late[late.len() - 1])
        );
    }
    Ok(())
}
