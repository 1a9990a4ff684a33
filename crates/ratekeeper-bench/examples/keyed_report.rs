//! Keyed limiters (issue 20): check-and-grant throughput of
//! `ratekeeper::keyed::Keyed` against governor's keyed limiter
//! (`DefaultKeyedRateLimiter`, a dashmap) in the same run, and the bytes
//! each spends per live key.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example keyed_report
//! cargo run --release -p ratekeeper-bench --example keyed_report -- \
//!     --threads 1,2,4,8,16 --keys 1,1000,1000000 --millis 1000
//! ```
//!
//! Every limiter allows 100 M permits a second per key, so nearly every
//! check is granted and the figure is the map plus the decision. Keys are
//! `u64`. Three tables (`--hashers default,std,fold` picks): each crate's
//! default hash (governor: std's `RandomState`, SipHash-1-3; ratekeeper:
//! `KeyHasher`, a seeded foldhash), then the same hash on both sides: std's
//! `RandomState`, then foldhash. Each thread walks the key space in a
//! pseudo-random order. All keys are inserted before
//! the timing (the cap is twice the key count: no eviction while timed).
//! Memory: the resident-set growth of a child process that inserts
//! `--mem-keys` keys (default 1 M) into one structure, divided by the key
//! count. Flood: as many unique keys, sent as fast as two threads can, into
//! a keyed limit with the default cap (100 000 keys) while a steady client
//! asks every millisecond: the cap, the memory and the client's limit
//! under the flood.

#[path = "common/mod.rs"]
mod common;

use common::rss_bytes;
use std::error::Error;
use std::num::NonZeroU32;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::hash::{BuildHasher, RandomState};

use governor::clock::DefaultClock as GovernorClock;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter as Governor};
use ratekeeper::config::LimiterConfig;
use ratekeeper::keyed::{KeyHasher, Keyed};
use ratekeeper::DefaultClock;

const RATE: u32 = 100_000_000;
const LIMITERS: [(&str, &str); 2] = [("pacer", "pacer:100M,0"), ("refill", "refill:100M")];

struct Args {
    threads: Vec<usize>,
    keys: Vec<u64>,
    millis: u64,
    mem_keys: u64,
    hashers: Vec<String>,
    child: Option<String>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let list = |s: &str| -> Result<Vec<u64>, Box<dyn Error>> {
        s.split(',').map(|v| Ok(v.trim().parse::<u64>()?)).collect()
    };
    let mut args = Args {
        threads: vec![1, 2],
        keys: vec![1, 1000, 1_000_000],
        millis: 500,
        mem_keys: 1_000_000,
        hashers: ["default", "std", "fold"].map(str::to_owned).to_vec(),
        child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--threads" => args.threads = list(&value)?.into_iter().map(|t| t as usize).collect(),
            "--keys" => args.keys = list(&value)?,
            "--millis" => args.millis = value.parse()?,
            "--mem-keys" => args.mem_keys = value.parse()?,
            "--hashers" => args.hashers = value.split(',').map(str::to_owned).collect(),
            "--child-mem" => args.child = Some(value),
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    Ok(args)
}

type GovernorKeyed<S> = Governor<u64, DashMapStateStore<u64, S>, GovernorClock, NoOpMiddleware>;

fn governor<S: BuildHasher + Clone + Default>() -> GovernorKeyed<S> {
    let quota = Quota::per_second(NonZeroU32::new(RATE).expect("non-zero"));
    Governor::dashmap_with_hasher(quota, S::default())
}

fn keyed<S: BuildHasher + Default>(
    config: &str,
    keys: u64,
) -> Result<Keyed<u64, DefaultClock, S>, Box<dyn Error>> {
    keyed_capped(config, keys.max(64) * 2)
}

/// A keyed limiter of `config` capped at `cap` keys.
fn keyed_capped<S: BuildHasher + Default>(
    config: &str,
    cap: u64,
) -> Result<Keyed<u64, DefaultClock, S>, Box<dyn Error>> {
    let config: LimiterConfig = config.parse()?;
    let cap = usize::try_from(cap)?;
    let builder = Keyed::builder().max_keys(cap);
    Ok(builder.build_with_hasher(&config, DefaultClock::new(), S::default())?)
}

/// A cheap pseudo-random walk over `0..keys`: xorshift, scaled into the
/// range by a multiply (Lemire's reduction). A `%` by the run-time key
/// count compiled to a 64-bit division, 10 ns or more a check on this VM,
/// on both sides: a third of a check, pulling every ratio toward 1.
#[inline]
fn next_key(state: &mut u64, keys: u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    ((u128::from(*state) * u128::from(keys)) >> 64) as u64
}

/// Grants per second of `check` from `threads` threads for `millis`.
fn throughput(threads: usize, keys: u64, millis: u64, check: &(dyn Fn(u64) -> bool + Sync)) -> f64 {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let granted: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || {
                    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (t as u64 + 1);
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..1024 {
                            n += u64::from(check(next_key(&mut state, keys)));
                        }
                    }
                    n
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(millis));
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().expect("worker")).sum()
    });
    granted as f64 / start.elapsed().as_secs_f64()
}

/// In a child process: a flood of `keys` unique keys, as fast as
/// [`FLOOD_THREADS`] threads can send them, into a strict 100/s per key limit capped at
/// 100 000 keys (the default), while a steady client asks every
/// millisecond on its own thread; prints the resident growth, the live
/// keys at most, the evictions, and the steady client's grants against
/// what its limit allows over the same span.
/// The flood's sending threads.
const FLOOD_THREADS: u64 = 2;

fn child_flood(keys: u64) -> Result<(), Box<dyn Error>> {
    let config: LimiterConfig = "pacer:100,1.0".parse()?;
    let before = rss_bytes();
    let k: Keyed<u64> = Keyed::builder().build(&config)?;
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let live_max = AtomicU64::new(0);
    let steady = std::thread::scope(|s| {
        let steady = s.spawn(|| {
            let mut granted = 0u64;
            while !stop.load(Ordering::Relaxed) {
                granted += u64::from(k.try_acquire(&u64::MAX).is_ok());
                std::thread::sleep(Duration::from_millis(1));
            }
            granted
        });
        let flooders: Vec<_> = (0..FLOOD_THREADS)
            .map(|t| {
                let (k, live_max) = (&k, &live_max);
                s.spawn(move || {
                    // Thread t sends keys t, t + FLOOD_THREADS, ...
                    for key in (t..keys).step_by(FLOOD_THREADS as usize) {
                        let _ = k.try_acquire(&key);
                        if key % 4096 == t {
                            // Relaxed: a statistic, read after the joins.
                            live_max.fetch_max(k.metrics().live_keys, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        flooders
            .into_iter()
            .for_each(|f| f.join().expect("flooder"));
        stop.store(true, Ordering::Relaxed);
        steady.join().expect("steady client")
    });
    let live_max = live_max.into_inner();
    let elapsed = start.elapsed().as_secs_f64();
    let m = k.metrics();
    println!(
        "  {keys} unique keys from {FLOOD_THREADS} threads in {elapsed:.2} s into a cap of {}: live at most {live_max}, \
         resident growth {:.1} MB; evicted fresh {}, with credit {}, in debt {}; \
         new keys denied {}",
        m.max_keys,
        (rss_bytes() - before) as f64 / 1e6,
        m.evicted_fresh,
        m.evicted_credit,
        m.evicted_debt,
        m.denied_new
    );
    println!(
        "  steady client (100/s): {steady} grants, its limit allows at most {} in {elapsed:.2} s",
        1 + (elapsed * 100.0) as u64
    );
    Ok(())
}

/// In a child process: the resident growth per key of one structure.
fn child_mem(which: &str, keys: u64) -> Result<(), Box<dyn Error>> {
    if which == "flood" {
        return child_flood(keys);
    }
    let before = rss_bytes();
    let kept: Box<dyn std::any::Any> = match which {
        "governor" => {
            let g = governor::<RandomState>();
            (0..keys).for_each(|k| drop(g.check_key(&k)));
            Box::new(g)
        }
        name => {
            // `NAME@cap`: capped at the key count, so the keys fill it.
            let (name, cap) = match name.strip_suffix("@cap") {
                Some(name) => (name, keys),
                None => (name, keys.max(64) * 2),
            };
            let (_, config) = LIMITERS.iter().find(|(n, _)| *n == name).ok_or("limiter")?;
            let k = keyed_capped::<KeyHasher>(config, cap)?;
            (0..keys).for_each(|key| drop(k.try_acquire(&key)));
            Box::new(k)
        }
    };
    let after = rss_bytes();
    println!("{}", (after - before) as f64 / keys as f64);
    drop(kept);
    Ok(())
}

fn mem_per_key(which: &str, keys: u64) -> Result<f64, Box<dyn Error>> {
    let out = Command::new(std::env::current_exe()?)
        .args(["--child-mem", which, "--mem-keys", &keys.to_string()])
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    if let Some(which) = &args.child {
        return child_mem(which, args.mem_keys);
    }
    println!(
        "bytes per live key ({} keys, resident-set growth):",
        args.mem_keys
    );
    let gov_mem = mem_per_key("governor", args.mem_keys)?;
    println!("  governor keyed   {gov_mem:>8.1}");
    for (name, _) in LIMITERS {
        println!(
            "  keyed {name:<10} {:>8.1}   (cap twice the keys; at the cap: {:.1})",
            mem_per_key(name, args.mem_keys)?,
            mem_per_key(&format!("{name}@cap"), args.mem_keys)?
        );
    }
    println!("\nflood (strict pacer:100,1.0 per key, the default cap):");
    let out = Command::new(std::env::current_exe()?)
        .args([
            "--child-mem",
            "flood",
            "--mem-keys",
            &args.mem_keys.to_string(),
        ])
        .output()?;
    print!("{}", String::from_utf8(out.stdout)?);
    for hasher in &args.hashers {
        match hasher.as_str() {
            "default" => table::<RandomState, KeyHasher>(
                "each crate's default (governor: SipHash-1-3; ratekeeper: KeyHasher, foldhash)",
                &args,
            )?,
            "std" => table::<RandomState, RandomState>("SipHash-1-3 on both sides", &args)?,
            "fold" => {
                table::<foldhash::fast::RandomState, KeyHasher>("foldhash on both sides", &args)?
            }
            other => return Err(format!("unknown hasher {other} (default, std, fold)").into()),
        }
    }
    Ok(())
}

/// The throughput table, governor hashing keys with `G`, ratekeeper with `S`.
fn table<G, S>(name: &str, args: &Args) -> Result<(), Box<dyn Error>>
where
    G: BuildHasher + Clone + Default + Send + Sync,
    S: BuildHasher + Default + Send + Sync,
{
    println!(
        "\ncheck-and-grant throughput, M grants/s ({} ms each), keys hashed by {name}:",
        args.millis
    );
    println!(
        "{:>7} {:>8} {:>10} {:>12} {:>12} {:>8} {:>8}",
        "threads", "keys", "governor", "keyed pacer", "keyed refill", "pacer×", "refill×"
    );
    for &keys in &args.keys {
        let g = governor::<G>();
        (0..keys).for_each(|k| drop(g.check_key(&k)));
        let pacer = keyed::<S>(LIMITERS[0].1, keys)?;
        let refill = keyed::<S>(LIMITERS[1].1, keys)?;
        (0..keys).for_each(|k| drop((pacer.try_acquire(&k), refill.try_acquire(&k))));
        for &threads in &args.threads {
            let gov = throughput(threads, keys, args.millis, &|k| g.check_key(&k).is_ok());
            let p = throughput(threads, keys, args.millis, &|k| {
                pacer.try_acquire(&k).is_ok()
            });
            let r = throughput(threads, keys, args.millis, &|k| {
                refill.try_acquire(&k).is_ok()
            });
            println!(
                "{threads:>7} {keys:>8} {:>10.2} {:>12.2} {:>12.2} {:>8.2} {:>8.2}",
                gov / 1e6,
                p / 1e6,
                r / 1e6,
                p / gov,
                r / gov
            );
        }
    }
    Ok(())
}
