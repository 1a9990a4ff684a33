//! A Pacer on the real clock: a loop paced at 20 operations per second,
//! printing when each operation went and how long it waited.
//!
//! Run with `cargo run -p ratekeeper --example basic` (about 0.6 s).

use std::time::{Duration, Instant};

// `RateLimiter` is the trait every limiter implements; `acquire` is on it.
use ratekeeper::{Pacer, Rate, RateLimiter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 20 operations per second: one slot every 50 ms, counted from now.
    // `Pacer::new` keeps the defaults: the real clock, and a burst ratio of
    // 1.1 (a caller that fell behind catches up at 1.1 x the rate).
    let pacer = Pacer::new(Rate::new(20.0)?)?;
    let start = Instant::now();

    for op in 0..12 {
        // Blocks until this operation's slot comes up.
        let grant = pacer.acquire();

        // The wait is measured from the operation's slot on the schedule,
        // not from when we asked: an operation that asks late has waited
        // since its slot. That is the delay a load generator adds to each
        // response time.
        println!(
            "op {op:2} went at {:4} ms, {:5.1} ms after its slot",
            start.elapsed().as_millis(),
            grant.wait().as_secs_f64() * 1e3,
        );

        // Op 4 is slow: 120 ms of work, more than two slots. The ops after
        // it go at once, late, and go faster than every 50 ms (at 1.1 x the
        // rate) until the schedule has caught up; their wait shrinks.
        if op == 4 {
            std::thread::sleep(Duration::from_millis(120));
        }
    }
    Ok(())
}
