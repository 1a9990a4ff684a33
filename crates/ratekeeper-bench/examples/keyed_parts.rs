//! Keyed limiters (issue 20), single thread, no contention: what a keyed
//! check costs and what it is made of, against governor's keyed limiter
//! with the same hash (foldhash on both sides), so the difference is the
//! check itself.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example keyed_parts
//! ```
//!
//! The parts: a `u64` hashed by std's `RandomState` (SipHash-1-3) and by
//! foldhash, a read of the default (TSC) clock, a `ShardedLock` read, an
//! uncontended compare-exchange; 20 M calls each, the mean. The checks:
//! `Keyed::try_acquire` over `refill:100M` and `pacer:100M,0` and
//! governor's `check_key`, 5 M checks a run, keys walked by xorshift scaled
//! by a multiply, 9 runs a side alternated; the median ns a check and its
//! ratio to governor's, with 1, 1,000 and 1 M keys.

use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_utils::sync::ShardedLock;
use governor::{Quota, RateLimiter as Governor};
use ratekeeper::keyed::Keyed;
use ratekeeper::{Clock, DefaultClock};

/// Mean ns a call of `f` over `n` calls (its results summed, so kept).
fn per_call(n: u64, mut f: impl FnMut(u64) -> u64) -> f64 {
    let start = Instant::now();
    let mut sink = 0u64;
    for i in 0..n {
        sink = sink.wrapping_add(f(i));
    }
    std::hint::black_box(sink);
    start.elapsed().as_nanos() as f64 / n as f64
}

fn parts() {
    let n = 20_000_000;
    let (sip, fold) = (RandomState::new(), foldhash::fast::RandomState::default());
    let clock = DefaultClock::new();
    let lock = ShardedLock::new(5u64);
    let word = AtomicU64::new(0);
    println!("parts, mean ns a call ({n} calls):");
    let rows: [(&str, f64); 5] = [
        ("SipHash-1-3 of a u64", per_call(n, |i| sip.hash_one(i))),
        ("foldhash of a u64", per_call(n, |i| fold.hash_one(i))),
        ("TSC clock read", per_call(n, |_| clock.now_nanos())),
        (
            "ShardedLock read",
            per_call(n, |_| *lock.read().expect("lock")),
        ),
        (
            "compare-exchange",
            per_call(n, |i| {
                let ok = word.compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Acquire);
                u64::from(ok.is_ok())
            }),
        ),
    ];
    for (name, ns) in rows {
        println!("  {name:<22} {ns:>6.2}");
    }
}

/// Median ns a check, over 9 runs of 5 M checks: governor, keyed refill,
/// keyed pacer.
fn checks(keys: u64) -> [f64; 3] {
    let quota = Quota::per_second(NonZeroU32::new(100_000_000).expect("non-zero"));
    let g = Governor::dashmap_with_hasher(quota, foldhash::fast::RandomState::default());
    let build = |text: &str| -> Keyed<u64> {
        let config = text.parse().expect("config");
        Keyed::builder()
            .max_keys(1 << 21)
            .build(&config)
            .expect("keyed")
    };
    let (refill, pacer) = (build("refill:100M"), build("pacer:100M,0"));
    for k in 0..keys {
        let _ = (
            g.check_key(&k),
            refill.try_acquire(&k),
            pacer.try_acquire(&k),
        );
    }
    let walk = |n: u64, check: &dyn Fn(u64) -> bool| {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        per_call(n, |_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            u64::from(check(((u128::from(x) * u128::from(keys)) >> 64) as u64))
        })
    };
    let mut runs: [Vec<f64>; 3] = Default::default();
    for _ in 0..9 {
        runs[0].push(walk(5_000_000, &|k| g.check_key(&k).is_ok()));
        runs[1].push(walk(5_000_000, &|k| refill.try_acquire(&k).is_ok()));
        runs[2].push(walk(5_000_000, &|k| pacer.try_acquire(&k).is_ok()));
    }
    runs.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    })
}

fn main() {
    parts();
    println!("\nchecks, median ns a check (9 runs of 5 M), foldhash on both sides:");
    println!(
        "{:>9} {:>9} {:>13} {:>12} {:>8} {:>8}",
        "keys", "governor", "keyed refill", "keyed pacer", "refill÷", "pacer÷"
    );
    for keys in [1, 1000, 1_000_000] {
        let [g, r, p] = checks(keys);
        println!(
            "{keys:>9} {g:>9.2} {r:>13.2} {p:>12.2} {:>8.2} {:>8.2}",
            r / g,
            p / g
        );
    }
}
