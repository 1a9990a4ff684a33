//! In-process rate-limit decisions: `ratekeeper_serve::Limits::check`
//! against Limitador's library (`limitador::RateLimiter`, its in-memory
//! store), on the same limit, and the memory each spends per live
//! descriptor value beside the core's keyed store alone.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example serve_decide
//! cargo run --release -p ratekeeper-bench --example serve_decide -- \
//!     --keys 1000,100000 --runs 7 --checks 500000 --threads 1,2 \
//!     --mem-keys 100000,1000000
//! ```
//!
//! The limit, on both sides: domain (namespace) `api`, 100 requests per
//! 60 s for each value of `user`. Ours is the YAML
//! `{key: user, rate_limit: {unit: minute, requests_per_unit: 100}}`;
//! Limitador's a `Limit` in namespace `api`, max 100 per 60 s, with the
//! variable `user`.
//!
//! Time: each check starts from the user's value as a precomputed string
//! and builds the request on the spot, so the descriptor-to-key mapping is
//! timed on both sides: ours a `CheckRequest` of domain `api` with one
//! descriptor `(user, value)`; Limitador a `Namespace` and a `Context` of
//! `{user: value}`. Keys are cycled round-robin. Each run builds a fresh
//! limiter, fills it with one check per key (not timed), then times
//! `--checks` checks rounded to whole passes over the keys, at most 90 per
//! key: every check is admitted (refusals are counted and printed). Runs
//! alternate (ours, Limitador, keyed, ours, ...) and the median is
//! printed; `keyed` is the core's keyed store alone (below), checked on the
//! key `Limits` would build from the value, a floor for ours. With
//! two threads, thread `t` takes every other key, starting at `t`, of one
//! shared limiter, and the time per check is the wall time over all checks.
//!
//! Memory: a child process per side and key count (`--child SIDE:KEYS`)
//! reads its resident set (`/proc/self/statm`) after building the empty
//! limiter and the key strings, fills `KEYS` distinct values with one
//! check each, reads it again, and prints the growth per key. Sides: `ours`
//! (`Limits::check`), `limitador`, and `keyed`, the core's
//! `Keyed<String>` alone on the refill bucket `Limits` builds for this
//! limit, keyed by the same strings `Limits` keys its states with. Every
//! store is capped at `max(2 × KEYS, 1 000 000)` keys (Limitador: its cache
//! size), so none evicts.
//!
//! `--only ours` (or `limitador`, `keyed`) times one side alone, for a profiler;
//! `--mem-keys ''` skips the memory table.

#[path = "common/mod.rs"]
mod common;

use common::{median, rss_bytes};
use std::collections::HashMap;
use std::error::Error;
use std::process::Command;
use std::time::{Duration, Instant};

use limitador::limit::{Context, Expression, Limit, Namespace};
use limitador::RateLimiter;
use ratekeeper::config::{KindConfig, LimiterConfig};
use ratekeeper::keyed::Keyed;
use ratekeeper::RefillConfig;
use ratekeeper_serve::config::Config;
use ratekeeper_serve::{CheckRequest, Code, Descriptor, Limits, DEFAULT_MAX_KEYS_PER_LIMIT};

const YAML: &str = "domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100}
";
const MAX: u64 = 100;
/// The timed sides, in the order each run alternates them.
const SIDES: [&str; 3] = ["ours", "limitador", "keyed"];
const SECONDS: u64 = 60;
/// The most timed checks per key in one run: with the fill's one, below
/// the limit of 100.
const MAX_PER_KEY: u64 = 90;

struct Args {
    keys: Vec<usize>,
    runs: usize,
    checks: u64,
    threads: Vec<usize>,
    mem_keys: Vec<usize>,
    only: Option<String>,
    child: Option<(String, usize)>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    fn list(s: &str) -> Result<Vec<usize>, Box<dyn Error>> {
        s.split(',')
            .filter(|v| !v.trim().is_empty())
            .map(|v| Ok(v.trim().parse::<usize>()?))
            .collect()
    }
    let mut args = Args {
        keys: vec![1_000, 100_000],
        runs: 7,
        checks: 500_000,
        threads: vec![1, 2],
        mem_keys: vec![100_000, 1_000_000],
        only: None,
        child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--keys" => args.keys = list(&value)?,
            "--runs" => args.runs = value.parse()?,
            "--checks" => args.checks = value.parse()?,
            "--threads" => args.threads = list(&value)?,
            "--mem-keys" => args.mem_keys = list(&value)?,
            "--only" => args.only = Some(value),
            "--child" => {
                let (side, keys) = value
                    .split_once(':')
                    .ok_or("--child takes SIDE:KEYS, e.g. ours:100000")?;
                args.child = Some((side.to_owned(), keys.parse()?));
            }
            _ => {
                return Err(format!(
                    "unknown flag {flag}: --keys, --runs, --checks, --threads, --mem-keys, --only"
                )
                .into())
            }
        }
    }
    Ok(args)
}

/// The user values: `u` and a zero-padded index, 8 bytes each.
fn users(keys: usize) -> Vec<String> {
    (0..keys).map(|i| format!("u{i:07}")).collect()
}

/// Every store's cap: twice the keys, at least the service's default. A
/// keyed store filled to its exact cap sweeps keys that have recovered
/// (state as good as new) from full shards, so fewer stay live.
fn cap(keys: usize) -> usize {
    (2 * keys).max(DEFAULT_MAX_KEYS_PER_LIMIT)
}

fn ours(keys: usize) -> Result<Limits, Box<dyn Error>> {
    let domain = Config::from_yaml(YAML, "api.yaml")?;
    Ok(Limits::builder().max_keys(cap(keys)).build(&Config {
        domains: vec![domain],
    })?)
}

fn limitador(keys: usize) -> Result<RateLimiter, Box<dyn Error>> {
    let limiter = RateLimiter::new(cap(keys) as u64);
    let limit = Limit::new(
        "api",
        MAX,
        SECONDS,
        Vec::new(),
        vec![Expression::parse("user")?],
    );
    limiter.add_limit(limit);
    Ok(limiter)
}

/// The core's keyed store alone, on the refill bucket `Limits` builds for
/// 100 per minute.
fn keyed_store(keys: usize) -> Result<Keyed<String>, Box<dyn Error>> {
    let refill = RefillConfig::builder()
        .limit_for_period(MAX)
        .limit_refresh_period(Duration::from_secs(SECONDS))
        .permit_capacity(MAX)
        .initial_permits(MAX)
        .build()?;
    let config = LimiterConfig::new(KindConfig::Refill(refill));
    Ok(Keyed::builder().max_keys(cap(keys)).build(&config)?)
}

/// One decision of the keyed store alone, on the key `Limits` would build
/// from the user's value; true when admitted.
fn keyed_check(keyed: &Keyed<String>, user: &str) -> bool {
    keyed.try_acquire(&entries_key(user)).is_ok()
}

/// One decision of ours, from the user's value; true when admitted.
fn ours_check(limits: &Limits, user: &str) -> bool {
    let request = CheckRequest::new("api", vec![Descriptor::new([("user", user)])]);
    limits
        .check(&request)
        .is_ok_and(|r| r.overall_code == Code::Ok)
}

/// One decision of Limitador's, from the user's value; true when admitted.
fn limitador_check(limiter: &RateLimiter, user: &str) -> bool {
    let namespace = Namespace::from("api");
    let ctx = Context::from(HashMap::from([("user".to_owned(), user.to_owned())]));
    limiter
        .check_rate_limited_and_update(&namespace, &ctx, 1)
        .is_ok_and(|r| !r.limited)
}

/// Times `per_key` passes over `users` on `threads` threads sharing
/// `limiter`; returns the wall time and the refusals.
fn timed<L: Sync, F: Fn(&L, &str) -> bool + Sync>(
    limiter: &L,
    users: &[String],
    per_key: u64,
    threads: usize,
    check: F,
) -> (Duration, u64) {
    let start = Instant::now();
    let refused: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let check = &check;
                s.spawn(move || {
                    let mut refused = 0u64;
                    for _ in 0..per_key {
                        for user in users.iter().skip(t).step_by(threads) {
                            refused += u64::from(!check(limiter, user));
                        }
                    }
                    refused
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("worker")).sum()
    });
    (start.elapsed(), refused)
}

/// One run of one side: a fresh limiter, filled (not timed), then timed.
/// Returns ns per check and refusals (fill included).
fn run_side(
    side: &str,
    users: &[String],
    per_key: u64,
    threads: usize,
) -> Result<(f64, u64), Box<dyn Error>> {
    let checks = per_key * users.len() as u64;
    let (elapsed, refused) = match side {
        "ours" => {
            let limits = ours(users.len())?;
            let (_, fill) = timed(&limits, users, 1, 1, ours_check);
            let (t, r) = timed(&limits, users, per_key, threads, ours_check);
            assert_eq!(limits.live_keys(), users.len() as u64, "ours: live keys");
            (t, fill + r)
        }
        "limitador" => {
            let limiter = limitador(users.len())?;
            let (_, fill) = timed(&limiter, users, 1, 1, limitador_check);
            let (t, r) = timed(&limiter, users, per_key, threads, limitador_check);
            (t, fill + r)
        }
        _ => {
            let keyed = keyed_store(users.len())?;
            let (_, fill) = timed(&keyed, users, 1, 1, keyed_check);
            let (t, r) = timed(&keyed, users, per_key, threads, keyed_check);
            assert_eq!(keyed.metrics().live_keys, users.len() as u64, "keyed");
            (t, fill + r)
        }
    };
    Ok((elapsed.as_nanos() as f64 / checks as f64, refused))
}

/// The key `Limits` gives a state of descriptor `[(user, value)]`: each
/// entry's key and value, each behind its length and a colon.
fn entries_key(value: &str) -> String {
    format!("4:user{}:{value}", value.len())
}

/// In a child process: the resident growth per key of filling `keys`
/// distinct values into `side`; prints `SIDE KEYS BYTES_PER_KEY REFUSED`.
fn child(side: &str, keys: usize) -> Result<(), Box<dyn Error>> {
    let users = users(keys);
    let (before, after, refused) = match side {
        "ours" => {
            let limits = ours(keys)?;
            let before = rss_bytes();
            let (_, refused) = timed(&limits, &users, 1, 1, ours_check);
            let after = rss_bytes();
            assert_eq!(limits.live_keys(), keys as u64);
            (before, after, refused)
        }
        "limitador" => {
            let limiter = limitador(keys)?;
            let before = rss_bytes();
            let (_, refused) = timed(&limiter, &users, 1, 1, limitador_check);
            let after = rss_bytes();
            (before, after, refused)
        }
        "keyed" => {
            let keyed = keyed_store(keys)?;
            let strings: Vec<String> = users.iter().map(|u| entries_key(u)).collect();
            let before = rss_bytes();
            let mut refused = 0u64;
            for key in &strings {
                // The store takes its own key, as `Limits` hands it one.
                refused += u64::from(keyed.try_acquire(&key.clone()).is_err());
            }
            let after = rss_bytes();
            assert_eq!(keyed.metrics().live_keys, keys as u64);
            (before, after, refused)
        }
        _ => return Err(format!("unknown side {side}: ours, limitador, keyed").into()),
    };
    let per_key = after.saturating_sub(before) as f64 / keys as f64;
    println!("{side} {keys} {per_key:.1} {refused}");
    Ok(())
}

fn memory(keys: usize) -> Result<[f64; 3], Box<dyn Error>> {
    let exe = std::env::current_exe()?;
    let mut out = [0.0; 3];
    for (i, side) in SIDES.iter().enumerate() {
        let output = Command::new(&exe)
            .args(["--child", &format!("{side}:{keys}")])
            .output()?;
        if !output.status.success() {
            return Err(format!(
                "child {side}:{keys} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let text = String::from_utf8(output.stdout)?;
        let fields: Vec<&str> = text.split_whitespace().collect();
        out[i] = fields.get(2).ok_or("child printed nothing")?.parse()?;
        let refused: u64 = fields.get(3).ok_or("child printed no refusals")?.parse()?;
        if refused > 0 {
            println!("  note: {side} refused {refused} of {keys} fills");
        }
    }
    Ok(out)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    if let Some((side, keys)) = &args.child {
        return child(side, *keys);
    }
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("nproc {nproc}; load average (1, 5, 15 min) at start: {load}");
    if !args.keys.is_empty() {
        println!(
            "time per check (ns), median of {} alternated runs per side; each run a \
             fresh limiter, filled untimed; ratio = limitador / ours",
            args.runs
        );
        println!(
            "{:>8} {:>7} {:>7} {:>8} {:>10} {:>8} {:>9} {:>9} {:>7}",
            "keys",
            "threads",
            "per key",
            "ours",
            "limitador",
            "keyed",
            "ours M/s",
            "lim. M/s",
            "ratio"
        );
    }
    for &keys in &args.keys {
        let users = users(keys);
        let per_key = (args.checks / keys as u64).clamp(1, MAX_PER_KEY);
        for &threads in &args.threads {
            let mut times: [Vec<f64>; 3] = Default::default();
            let mut refused = 0;
            for _ in 0..args.runs {
                for (side, times) in SIDES.iter().zip(times.iter_mut()) {
                    if args.only.as_deref().is_some_and(|o| o != *side) {
                        times.push(f64::NAN);
                        continue;
                    }
                    let (ns, r) = run_side(side, &users, per_key, threads)?;
                    times.push(ns);
                    refused += r;
                }
            }
            let [o, l, k] = times.clone().map(median);
            println!(
                "{keys:>8} {threads:>7} {per_key:>7} {o:>8.1} {l:>10.1} {k:>8.1} \
                 {:>9.2} {:>9.3} {:>6.1}x",
                1e3 / o,
                1e3 / l,
                l / o
            );
            let spread = |v: &[f64]| {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(0.0, f64::max);
                format!("{lo:.1}..{hi:.1}")
            };
            println!(
                "{:>8} runs: ours {}, limitador {}, keyed {}{}",
                "",
                spread(&times[0]),
                spread(&times[1]),
                spread(&times[2]),
                if refused > 0 {
                    format!("; {refused} refused")
                } else {
                    String::new()
                }
            );
        }
    }
    if !args.mem_keys.is_empty() {
        println!();
        println!("resident growth per live key (bytes), one fresh process each");
        println!(
            "{:>8} {:>8} {:>10} {:>8} {:>10} {:>10}",
            "keys", "ours", "limitador", "keyed", "ours/keyed", "lim./keyed"
        );
    }
    for &keys in &args.mem_keys {
        let [o, l, k] = memory(keys)?;
        println!(
            "{keys:>8} {o:>8.1} {l:>10.1} {k:>8.1} {:>10.2} {:>10.2}",
            o / k,
            l / k
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {load}");
    Ok(())
}
