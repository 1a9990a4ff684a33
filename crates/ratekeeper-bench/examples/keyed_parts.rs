//! Keyed limiters (issue 20), single thread, no contention: what a keyed
//! check costs and what it is made of, against governor's keyed limiter
//! with the same hash (foldhash on both sides), so the difference is the
//! check itself, and against two floors no check built on them can beat.
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
//!
//! The floors, walked the same way: a clock read and a compare-exchange of
//! the key's word in a plain array of 16 bytes a key (what any in-memory
//! map must at least do: read the time, reach the key's state, update it),
//! and the same through hashbrown tables (the table under dashmap, so
//! under governor's keyed map, and under ours) split 64 ways as both maps
//! split them, with no lock. Beside them, half of governor's check with its
//! default hash: what a check must cost to be twice as fast as it.

#[path = "common/mod.rs"]
mod common;

use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use common::median;
use crossbeam_utils::sync::ShardedLock;
use governor::{Quota, RateLimiter as Governor};
use hashbrown::HashTable;
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

/// Mean ns a check over 5 M checks of keys in `0..keys` walked by
/// xorshift, each scaled to the range by a multiply (no division).
fn walk(keys: u64, check: &dyn Fn(u64) -> bool) -> f64 {
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    per_call(5_000_000, |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        u64::from(check(((u128::from(x) * u128::from(keys)) >> 64) as u64))
    })
}

/// Median ns a check, over 9 runs of 5 M checks: governor with foldhash,
/// keyed refill, keyed pacer, governor with its default hash.
fn checks(keys: u64) -> [f64; 4] {
    let quota = Quota::per_second(NonZeroU32::new(100_000_000).expect("non-zero"));
    let g = Governor::dashmap_with_hasher(quota, foldhash::fast::RandomState::default());
    let sip = Governor::<u64, _, _, _>::dashmap(quota);
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
            sip.check_key(&k),
            refill.try_acquire(&k),
            pacer.try_acquire(&k),
        );
    }
    let mut runs: [Vec<f64>; 4] = Default::default();
    for _ in 0..9 {
        runs[0].push(walk(keys, &|k| g.check_key(&k).is_ok()));
        runs[1].push(walk(keys, &|k| refill.try_acquire(&k).is_ok()));
        runs[2].push(walk(keys, &|k| pacer.try_acquire(&k).is_ok()));
        runs[3].push(walk(keys, &|k| sip.check_key(&k).is_ok()));
    }
    runs.map(median)
}

/// A clock read and an uncontended update of `word`: the floors' work
/// once the key's state is reached.
#[inline(always)]
fn bump(word: &AtomicU64, now: u64) -> bool {
    let seen = word.load(Ordering::Acquire);
    word.compare_exchange(seen, seen.max(now) + 1, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// Median ns a check (9 runs of 5 M) of the two floors: a plain array of
/// (key, word), and hashbrown tables split 64 ways, no lock.
fn floors(keys: u64) -> [f64; 2] {
    let clock = DefaultClock::new();
    let hasher = foldhash::fast::RandomState::default();
    let array: Vec<(u64, AtomicU64)> = (0..keys).map(|k| (k, AtomicU64::new(0))).collect();
    let mut tables: Vec<HashTable<(u64, AtomicU64)>> = (0..64).map(|_| HashTable::new()).collect();
    let table_of = |hash: u64| ((u128::from(hash) * 64) >> 64) as usize;
    for k in 0..keys {
        let hash = hasher.hash_one(k);
        tables[table_of(hash)]
            .insert_unique(hash, (k, AtomicU64::new(0)), |e| hasher.hash_one(e.0));
    }
    let mut runs: [Vec<f64>; 2] = Default::default();
    for _ in 0..9 {
        runs[0].push(walk(keys, &|k| {
            let now = clock.now_nanos();
            bump(&array[k as usize].1, now)
        }));
        runs[1].push(walk(keys, &|k| {
            let now = clock.now_nanos();
            let hash = hasher.hash_one(k);
            let found = tables[table_of(hash)].find(hash, |e| e.0 == k);
            found.is_some_and(|e| bump(&e.1, now))
        }));
    }
    runs.map(median)
}

fn main() {
    parts();
    println!("\nchecks, median ns a check (9 runs of 5 M), foldhash on both sides:");
    println!(
        "{:>9} {:>9} {:>13} {:>12} {:>8} {:>8}",
        "keys", "governor", "keyed refill", "keyed pacer", "refill÷", "pacer÷"
    );
    let mut defaults = Vec::new();
    for keys in [1, 1000, 1_000_000] {
        let [g, r, p, sip] = checks(keys);
        defaults.push((keys, sip));
        println!(
            "{keys:>9} {g:>9.2} {r:>13.2} {p:>12.2} {:>8.2} {:>8.2}",
            r / g,
            p / g
        );
    }
    println!("\nfloors, median ns a check (9 runs of 5 M), beside governor with its default hash:");
    println!(
        "{:>9} {:>10} {:>13} {:>11} {:>13}",
        "keys", "governor", "half of it", "array", "hashbrown"
    );
    for (keys, sip) in defaults {
        let [array, table] = floors(keys);
        println!(
            "{keys:>9} {sip:>10.2} {:>13.2} {array:>11.2} {table:>13.2}",
            sip / 2.0
        );
    }
}
