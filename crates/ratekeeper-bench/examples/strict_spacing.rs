//! How far apart a strict Pacer's ops actually start, on the real clock
//! (issue 15, item 4).
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example strict_spacing
//! cargo run --release -p ratekeeper-bench --example strict_spacing -- --ops 4000 --rates 1000,10000
//! ```
//!
//! For each rate, one thread acquires `--ops` permits (default 2000) from a
//! strict pacer (strictness 1.0) and records, for every op, when the pacer
//! let it go (`Grant::started_nanos`, a clock reading at the release) and
//! the clock reading right after `acquire` returned: the op's actual start
//! as its caller sees it (later by anything that delayed the thread after
//! the release, a preemption say). It prints the gaps between consecutive
//! actual starts against the slot
//! (`1e9 / rate` ns) and against the bound the default wait policy
//! promises, `slot − E` with `E = clamp(slot / 2, ρ / 2, ρ)` (`ρ` the
//! largest sleep resolution the process estimated during the run), plus
//! the achieved rate. The same run repeats with the old policy, a fixed 500 µs
//! coalescing window, for comparison.

use std::error::Error;
use std::time::Duration;

use ratekeeper::{Clock, DefaultClock, Pacer, Rate, RateLimiter, WaitPolicy};

struct Run {
    /// Gaps between consecutive releases (`started_nanos`).
    released: Vec<u64>,
    /// Gaps between consecutive starts seen by the caller.
    seen: Vec<u64>,
    achieved: f64,
    /// The largest sleep resolution the process estimated during the run.
    rho: u64,
}

fn run(rate: f64, ops: usize, policy: Option<WaitPolicy>) -> Result<Run, Box<dyn Error>> {
    let clock = DefaultClock::new();
    let mut builder = Pacer::builder(Rate::new(rate)?).strictness(1.0);
    if let Some(p) = policy {
        builder = builder.wait_policy(p);
    }
    let pacer = builder.build_with_clock(clock)?;
    let (mut released, mut seen) = (Vec::with_capacity(ops), Vec::with_capacity(ops));
    let mut rho = ratekeeper::wait::sleep_resolution_nanos();
    for _ in 0..ops {
        let g = pacer.acquire();
        seen.push(clock.now_nanos());
        released.push(g.started_nanos());
        rho = rho.max(ratekeeper::wait::sleep_resolution_nanos());
    }
    let gaps = |v: &[u64]| -> Vec<u64> {
        let mut g: Vec<u64> = v.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
        g.sort_unstable();
        g
    };
    let span = (seen[ops - 1] - seen[0]) as f64 / 1e9;
    Ok(Run {
        released: gaps(&released),
        seen: gaps(&seen),
        achieved: (ops - 1) as f64 / span,
        rho,
    })
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut ops = 2000usize;
    let mut rates = vec![1_000.0, 2_000.0, 5_000.0, 10_000.0];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ops" => ops = args.next().ok_or("--ops needs a value")?.parse()?,
            "--rates" => {
                rates = args
                    .next()
                    .ok_or("--rates needs a value")?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "-h" | "--help" => {
                println!("strict_spacing [--ops N] [--rates R1,R2,...]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if ops < 3 {
        return Err("--ops must be at least 3".into());
    }
    println!(
        "| rate | policy | slot µs | bound µs | released: min gap µs | p0.1 | p1 | p50 | below bound \
         | caller: min gap µs | p0.1 | below bound | achieved /s |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &rate in &rates {
        let slot = Rate::new(rate)?.nanos_per_op()?;
        let old = WaitPolicy::coalesce(Duration::from_micros(500));
        for (name, policy) in [("default", None), ("fixed 500 µs window", Some(old))] {
            let r = run(rate, ops, policy)?;
            let rho = r.rho;
            let early = match policy {
                None => (slot / 2).clamp(rho / 2, rho),
                Some(_) => 500_000,
            };
            let bound = slot.saturating_sub(early);
            let below = |g: &[u64]| g.iter().filter(|&&x| x < bound).count();
            let (rel, seen) = (&r.released, &r.seen);
            println!(
                "| {rate} | {name} | {} | {} | {} | {} | {} | {} | {} of {} | {} | {} | {} | {:.1} |",
                us(slot),
                us(bound),
                us(rel[0]),
                us(pct(rel, 0.1)),
                us(pct(rel, 1.0)),
                us(pct(rel, 50.0)),
                below(rel),
                rel.len(),
                us(seen[0]),
                us(pct(seen, 0.1)),
                below(seen),
                r.achieved
            );
        }
    }
    println!(
        "\nsleep resolution ρ at the end: {} µs",
        us(ratekeeper::wait::sleep_resolution_nanos())
    );
    Ok(())
}
