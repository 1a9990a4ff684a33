//! What many reservations given back cost a limiter, on a manual clock: n
//! reservations queued on the schedule, all cancelled from the middle
//! outwards (async waiters dropped or timed out: most are not the latest,
//! so their slots are kept for the next callers, see the limiters'
//! "Cancelling a reservation"), then n reservations again, which take the
//! kept slots.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example handoff_queue
//! ```
//!
//! Per limiter and n: the reservations kept (those granted at once, such
//! as a bucket's initial permits, have nothing to keep), and milliseconds
//! for each phase: a cost linear in the slots kept shows as time doubling
//! with n, quadratic as time quadrupling.

#[path = "common/mod.rs"]
mod common;

use common::ms;
use ratekeeper::config::LimiterConfig;
use ratekeeper::{ManualClock, RateLimiter};

fn main() {
    println!(
        "{:<32} {:>7} {:>7} {:>10} {:>10}",
        "limiter", "n", "kept", "cancel ms", "again ms"
    );
    for text in [
        "pacer:100,1.0",
        "bursty:100",
        "refill:100,1s,timeout=1000000s",
        "cycle:100,1s,timeout=1000000s",
    ] {
        let config: LimiterConfig = text.parse().expect("config");
        for n in [10_000usize, 20_000, 40_000, 80_000] {
            let limiter = config
                .build_with_clock(ManualClock::new(0))
                .expect("limiter");
            let grants: Vec<_> = (0..n)
                .map(|_| limiter.reserve(1, None).expect("grant"))
                .collect();
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| i.abs_diff(n / 2));
            let mut kept = 0;
            let cancel = ms(|| {
                kept = order
                    .iter()
                    .filter(|&&i| limiter.cancel(&grants[i]))
                    .count()
            });
            let again = ms(|| {
                for _ in 0..n {
                    std::hint::black_box(limiter.reserve(1, None).expect("grant"));
                }
            });
            println!("{text:<32} {n:>7} {kept:>7} {cancel:>10.1} {again:>10.1}");
        }
    }
}
