//! Rate-limit decisions kept on Redis: `ratekeeper_serve::Limits::check_async`
//! with a `RedisStore` against Limitador's library
//! (`limitador::AsyncRateLimiter`) on its `AsyncRedisStorage`, both on the
//! same Redis server, and, apart, Limitador's `CachedRedisStorage`, which
//! decides from a local cache and writes to Redis in batches (not exact:
//! replicas see each other's hits only after a flush).
//!
//! ```text
//! M=crates/ratekeeper-bench/peers/limitador-redis/Cargo.toml
//! bash scripts/with-redis.sh cargo run --release --manifest-path $M
//! bash scripts/with-redis.sh cargo run --release --manifest-path $M -- \
//!     --keys 1000 --checks 2000 --runs 2 --concurrency 1 --sides ours,limitador,cached
//! ```
//!
//! A package of its own, outside the workspace: Limitador 0.14.0's
//! `redis_storage` does not compile without its `disk_storage`, which
//! builds RocksDB (a C++ build; bindgen needs libclang). With
//! `--no-default-features` only ours is measured.
//!
//! Needs `REDIS_URL` (`scripts/with-redis.sh` starts a throwaway server and
//! sets it); refuses to run without it. Nothing is flushed: every run and
//! round writes under keys of its own, so a shared server is safe. Ours
//! takes the prefix `rk-bench:serve-redis:{pid}:{nanos}:{round}:{side}:`;
//! Limitador has no key prefix, so its limit gets an id of the same form
//! (`Limit::with_id`), which its stores put in every key they write. Both
//! use the database named in `REDIS_URL`.
//!
//! The limit, on every side: domain (namespace) `api`, 100 requests per
//! 60 s for each value of `user`, as in `serve_decide`. Each check builds
//! its request from the user's value (a precomputed string): ours a
//! `CheckRequest` of domain `api` with one descriptor `(user, value)`;
//! Limitador a `Namespace` and a `Context` of `{user: value}`.
//!
//! Each round of one side, at one concurrency `C`: a fresh tokio
//! multi-thread runtime (default worker count, one per CPU), a fresh limiter
//! and connection, one check per key (the fill, not timed), then `C` tasks,
//! task `t` taking every `C`-th key from `t`, over `--checks` checks
//! rounded to whole passes over the keys, at most 90 per key: every check is
//! admitted (refusals, and for ours decisions the store failed to make, are
//! counted and printed). The runtime is dropped after the round, which ends
//! the flusher task `CachedRedisStorage` spawns. Decisions/s are the timed
//! checks over the wall time; the latency of each check (from building the
//! request to its answer, queueing on the runtime included) goes into one
//! histogram per round, whose p50 and p99 are reported. Rounds alternate
//! the sides (ours, limitador, cached, ours, ...); the table gives each
//! figure's median over the rounds.
//!
//! What a check costs on the wire: ours one `EVALSHA` (one round trip) per
//! decision; Limitador's `AsyncRedisStorage` two (a script reading the
//! counters' values and TTLs, then, when admitted, a pipeline of update
//! scripts), not atomic between them; `CachedRedisStorage` none on the
//! check path (a miss is taken as a fresh counter), its writes batched in
//! the background.
//!
//! `cached` is measured only when named in `--sides`: in this program's
//! rounds it can stall (the program waits, using no CPU, until killed),
//! always so at 20 checks per key; give it few checks, e.g. `--checks`
//! twice `--keys`, one concurrency, and a `timeout`.

// Medians as the workspace's measuring examples take them.
#[path = "../../../examples/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use common::median;

use hdrhistogram::Histogram;
#[cfg(feature = "limitador-redis")]
use limitador::limit::{Context, Expression, Limit, Namespace};
#[cfg(feature = "limitador-redis")]
use limitador::storage::redis::{AsyncRedisStorage, CachedRedisStorageBuilder};
#[cfg(feature = "limitador-redis")]
use limitador::AsyncRateLimiter;
use ratekeeper_redis::Backend;
use ratekeeper_serve::config::{Config, FailurePolicy};
use ratekeeper_serve::{CheckRequest, Code, Descriptor, Limits, RedisStore};

const YAML: &str = "domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100}
";
#[cfg(feature = "limitador-redis")]
const MAX: u64 = 100;
#[cfg(feature = "limitador-redis")]
const SECONDS: u64 = 60;
/// The most timed checks per key in one round: with the fill's one, below
/// the limit of 100.
const MAX_PER_KEY: u64 = 90;
/// Every side, in the order rounds alternate them.
const SIDES: [&str; 3] = ["ours", "limitador", "cached"];

struct Args {
    keys: usize,
    runs: usize,
    checks: u64,
    concurrency: Vec<usize>,
    sides: Vec<String>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        keys: 1_000,
        runs: 5,
        checks: 20_000,
        concurrency: vec![1, 16],
        // Without the feature, ours alone; `cached` only when asked (it
        // can stall, see above).
        sides: SIDES
            .iter()
            .take(if cfg!(feature = "limitador-redis") {
                2
            } else {
                1
            })
            .map(|s| (*s).to_owned())
            .collect(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--keys" => args.keys = value.parse()?,
            "--runs" => args.runs = value.parse()?,
            "--checks" => args.checks = value.parse()?,
            "--concurrency" => {
                args.concurrency = value
                    .split(',')
                    .map(|v| v.trim().parse::<usize>())
                    .collect::<Result<_, _>>()?;
            }
            "--sides" => {
                args.sides = value.split(',').map(|s| s.trim().to_owned()).collect();
                if let Some(bad) = args.sides.iter().find(|s| !SIDES.contains(&s.as_str())) {
                    return Err(format!("unknown side {bad}: ours, limitador, cached").into());
                }
            }
            _ => {
                return Err(format!(
                    "unknown flag {flag}: --keys, --runs, --checks, --concurrency, --sides"
                )
                .into())
            }
        }
    }
    if args.keys == 0 || args.runs == 0 || args.concurrency.contains(&0) {
        return Err("--keys, --runs and each --concurrency must be at least 1".into());
    }
    Ok(args)
}

/// The user values: `u` and a zero-padded index, 8 bytes each.
fn users(keys: usize) -> Vec<String> {
    (0..keys).map(|i| format!("u{i:07}")).collect()
}

/// One limiter of one side, on Redis.
#[derive(Clone)]
enum Side {
    Ours(Arc<Limits>),
    #[cfg(feature = "limitador-redis")]
    Limitador(Arc<AsyncRateLimiter>),
}

/// What one check came to.
#[derive(Clone, Copy, Default)]
struct Tally {
    refused: u64,
    /// Ours only: decisions the store could not make (deadline or error),
    /// refused by the `deny` failure policy.
    store_errors: u64,
}

impl Side {
    async fn build(side: &str, url: &str, tag: &str) -> Result<Side, Box<dyn Error>> {
        #[cfg(feature = "limitador-redis")]
        let limit = || {
            Limit::with_id(
                tag,
                "api",
                MAX,
                SECONDS,
                Vec::new(),
                vec![Expression::parse("user").expect("a variable")],
            )
        };
        Ok(match side {
            "ours" => {
                // A deadline far above any round trip here, so the failure
                // policy (deny, counted) never stands in for Redis.
                let backend = Backend::builder(url)
                    .deadline(Duration::from_secs(1))
                    .connect()
                    .await?;
                let store = RedisStore::new(backend)
                    .prefix(tag)
                    .on_failure(FailurePolicy::Deny);
                let domain = Config::from_yaml(YAML, "api.yaml")?;
                let limits = Limits::builder().redis(store).build(&Config {
                    domains: vec![domain],
                })?;
                Side::Ours(Arc::new(limits))
            }
            #[cfg(not(feature = "limitador-redis"))]
            _ => {
                return Err(format!(
                    "side {side} needs the limitador-redis feature \
                     (cargo run ... --features limitador-redis)"
                )
                .into())
            }
            #[cfg(feature = "limitador-redis")]
            "limitador" => {
                let storage = AsyncRedisStorage::new(url).await?;
                let limiter = AsyncRateLimiter::new_with_storage(Box::new(storage));
                limiter.add_limit(limit());
                Side::Limitador(Arc::new(limiter))
            }
            #[cfg(feature = "limitador-redis")]
            _ => {
                // Its defaults: batches of 100, flushed every second, 10 000
                // cached counters (above the keys measured).
                let storage = CachedRedisStorageBuilder::new(url).build().await?;
                let limiter = AsyncRateLimiter::new_with_storage(Box::new(storage));
                limiter.add_limit(limit());
                Side::Limitador(Arc::new(limiter))
            }
        })
    }

    /// One decision from the user's value.
    async fn check(&self, user: &str) -> Result<Tally, Box<dyn Error + Send + Sync>> {
        match self {
            Side::Ours(limits) => {
                let request = CheckRequest::new("api", vec![Descriptor::new([("user", user)])]);
                let response = limits.check_async(&request).await?;
                Ok(Tally {
                    refused: u64::from(response.overall_code != Code::Ok),
                    store_errors: u64::from(response.statuses.iter().any(|s| s.store_error)),
                })
            }
            #[cfg(feature = "limitador-redis")]
            Side::Limitador(limiter) => {
                let namespace = Namespace::from("api");
                let ctx = Context::from(HashMap::from([("user".to_owned(), user.to_owned())]));
                let result = limiter
                    .check_rate_limited_and_update(&namespace, &ctx, 1)
                    .await
                    .map_err(|e| format!("limitador: {e:?}"))?;
                Ok(Tally {
                    refused: u64::from(result.limited),
                    store_errors: 0,
                })
            }
        }
    }
}

/// One round's figures.
struct Round {
    per_s: f64,
    p50_us: f64,
    p99_us: f64,
    tally: Tally,
}

/// One round of `side` at concurrency `c` on a runtime of its own.
fn round(
    side: &str,
    url: &str,
    tag: &str,
    users: &Arc<Vec<String>>,
    per_key: u64,
    c: usize,
) -> Result<Round, Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let limiter = Side::build(side, url, tag).await?;
        let mut tally = Tally::default();
        for user in users.iter() {
            let t = limiter.check(user).await.map_err(|e| e.to_string())?;
            tally.refused += t.refused;
            tally.store_errors += t.store_errors;
        }
        let start = Instant::now();
        let tasks: Vec<_> = (0..c)
            .map(|t| {
                let limiter = limiter.clone();
                let users = Arc::clone(users);
                tokio::spawn(async move {
                    let mut hist = Histogram::<u64>::new(3).expect("histogram");
                    let mut tally = Tally::default();
                    for _ in 0..per_key {
                        for user in users.iter().skip(t).step_by(c) {
                            let began = Instant::now();
                            let r = limiter.check(user).await?;
                            let ns = began.elapsed().as_nanos() as u64;
                            hist.record(ns.max(1)).expect("in range");
                            tally.refused += r.refused;
                            tally.store_errors += r.store_errors;
                        }
                    }
                    Ok::<_, Box<dyn Error + Send + Sync>>((hist, tally))
                })
            })
            .collect();
        let mut hist = Histogram::<u64>::new(3)?;
        for task in tasks {
            let (h, t) = task.await?.map_err(|e| e.to_string())?;
            hist.add(h)?;
            tally.refused += t.refused;
            tally.store_errors += t.store_errors;
        }
        let elapsed = start.elapsed();
        let checks = per_key * users.len() as u64;
        Ok::<_, Box<dyn Error>>(Round {
            per_s: checks as f64 / elapsed.as_secs_f64(),
            p50_us: hist.value_at_quantile(0.5) as f64 / 1e3,
            p99_us: hist.value_at_quantile(0.99) as f64 / 1e3,
            tally,
        })
    });
    // Ends the tasks a store left behind (the cached store's flusher).
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let url = match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            return Err(
                "REDIS_URL is not set: run through scripts/with-redis.sh, e.g. \
                 bash scripts/with-redis.sh cargo run --release -p ratekeeper-bench \
                 --example serve_redis"
                    .into(),
            )
        }
    };
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let run = format!("rk-bench:serve-redis:{}:{nanos}", std::process::id());
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("nproc {nproc}; load average (1, 5, 15 min) at start: {load}");
    println!("keys under {run}:*");
    let users = Arc::new(users(args.keys));
    let per_key = (args.checks / args.keys as u64).clamp(1, MAX_PER_KEY);
    println!(
        "{} keys, {per_key} timed checks per key per round ({} checks), median of {} \
         alternated rounds; latency per check in µs",
        args.keys,
        per_key * args.keys as u64,
        args.runs
    );
    println!(
        "{:>3} {:>10} {:>10} {:>8} {:>8} {:>18} {:>9} {:>7}",
        "C", "side", "checks/s", "p50 µs", "p99 µs", "checks/s min..max", "refused", "errors"
    );
    let sides: Vec<&str> = SIDES
        .iter()
        .copied()
        .filter(|s| args.sides.iter().any(|a| a == s))
        .collect();
    let mut medians: HashMap<(usize, &str), f64> = HashMap::new();
    let mut seq = 0u64;
    for &c in &args.concurrency {
        let mut rounds: Vec<Vec<Round>> = sides.iter().map(|_| Vec::new()).collect();
        for r in 0..args.runs {
            for (side, rounds) in sides.iter().zip(rounds.iter_mut()) {
                seq += 1;
                let tag = format!("{run}:{seq}:{r}:{side}:");
                rounds.push(round(side, &url, &tag, &users, per_key, c)?);
            }
        }
        for (side, rounds) in sides.iter().zip(&rounds) {
            let rate: Vec<f64> = rounds.iter().map(|r| r.per_s).collect();
            let lo = rate.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = rate.iter().copied().fold(0.0, f64::max);
            let m = median(rate);
            medians.insert((c, side), m);
            let refused: u64 = rounds.iter().map(|r| r.tally.refused).sum();
            let errors: u64 = rounds.iter().map(|r| r.tally.store_errors).sum();
            println!(
                "{c:>3} {side:>10} {m:>10.0} {:>8.1} {:>8.1} {:>18} {refused:>9} {errors:>7}",
                median(rounds.iter().map(|r| r.p50_us).collect()),
                median(rounds.iter().map(|r| r.p99_us).collect()),
                format!("{lo:.0}..{hi:.0}"),
            );
        }
    }
    println!();
    for &c in &args.concurrency {
        if let (Some(o), Some(l)) = (medians.get(&(c, "ours")), medians.get(&(c, "limitador"))) {
            println!(
                "C={c}: ours / limitador (AsyncRedisStorage) = {:.2}x (target >= 1.0x: {})",
                o / l,
                if o / l >= 1.0 { "met" } else { "MISSED" }
            );
        }
        if let (Some(o), Some(k)) = (medians.get(&(c, "ours")), medians.get(&(c, "cached"))) {
            println!(
                "C={c}: ours / limitador cached (CachedRedisStorage, batched, not exact) = {:.2}x",
                o / k
            );
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {load}");
    Ok(())
}
