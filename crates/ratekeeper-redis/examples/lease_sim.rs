//! Issue 19, item 8: many processes sharing one bucket through leases, on
//! a virtual clock (see `ratekeeper_redis::sim`). Prints, for 10 to 10,000
//! processes and lease windows from none to 10 ms: the admission error
//! (the most admitted over any interval beyond the bucket's bound, in
//! permits and in milliseconds of the rate), round trips per permit, and
//! the utilisation (admitted over the bucket's bound for the run).
//!
//! ```text
//! cargo run --release -p ratekeeper-redis --example lease_sim
//! cargo run --release -p ratekeeper-redis --example lease_sim -- 2.0 100000 1000
//! ```
//!
//! Arguments: demand (multiple of the rate, default 2), rate (permits a
//! second, default 100 000), capacity (default 1 000).

use std::time::Duration;

use ratekeeper_redis::sim::{simulate, LeaseSim};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: f64| {
        args.get(i).map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("lease_sim: {a:?} is not a number (usage: lease_sim [DEMAND [RATE [CAPACITY]]])");
                std::process::exit(2)
            })
        })
    };
    let demand = arg(0, 2.0);
    if !(demand.is_finite() && demand > 0.0) {
        eprintln!("lease_sim: the demand must be a positive multiple of the rate, not {demand}");
        std::process::exit(2);
    }
    let whole = |name: &str, v: f64| {
        if !(1.0..=f64::from(u32::MAX)).contains(&v) || v.fract() != 0.0 {
            eprintln!(
                "lease_sim: the {name} must be a whole number from 1 to {}, not {v}",
                u32::MAX
            );
            std::process::exit(2);
        }
        v as u32
    };
    let rate = whole("rate", arg(1, 100_000.0));
    let capacity = whole("capacity", arg(2, 1000.0));
    println!(
        "bucket {rate}/s, capacity {capacity}, demand {demand}x the rate, 1 s virtual, \
         100 us round trips, try-acquire requests"
    );
    println!(
        "{:>9} {:>8} | {:>12} {:>12} {:>12} {:>12} {:>10}",
        "processes", "window", "admitted", "excess", "excess (ms)", "trips/permit", "utilised"
    );
    let windows = [
        None,
        Some(Duration::from_micros(100)),
        Some(Duration::from_millis(1)),
        Some(Duration::from_millis(10)),
    ];
    for processes in [10, 100, 1_000, 10_000] {
        for window in windows {
            let r = simulate(&LeaseSim {
                processes,
                rate,
                capacity,
                demand,
                window,
                ..LeaseSim::default()
            });
            println!(
                "{:>9} {:>8} | {:>12} {:>12.0} {:>12.3} {:>12.4} {:>9.1}%",
                processes,
                window.map_or("none".to_owned(), |w| format!("{w:?}")),
                r.admitted,
                r.excess,
                r.excess / f64::from(rate) * 1e3,
                r.round_trips_per_permit,
                r.utilisation * 100.0
            );
        }
    }
}
