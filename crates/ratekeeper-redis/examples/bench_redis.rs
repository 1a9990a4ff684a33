//! Decisions on Redis (issue 19, item 7): how close one process gets to the
//! server's raw `EVALSHA` rate through [`RedisLimiter::reserve`].
//!
//! In one run, in alternating rounds (each round runs every phase, starting
//! one phase later than the round before), against one server:
//!
//! * `limiter pacer`: [`RedisLimiter::reserve`] on a Pacer limit of 1e9/s
//!   in average mode, any wait: every request is granted, so the script
//!   runs its write path (`HMGET`, `HSET`, `PEXPIRE`);
//! * `limiter refill`: the same on a refill bucket of 1e9/s (1 ns a
//!   permit, capacity 1e6, timeout 0): granted, write path;
//! * `raw trivial`: `EVALSHA` of `return 1` with the same key and seven
//!   arguments as the Pacer's, on its own `ConnectionManager` configured as
//!   the backend's: the round trip with no limiter and no script work;
//! * `raw pacer`: `EVALSHA` of the Pacer's script with the limiter's
//!   arguments on such a connection: the script's cost without the
//!   limiter's client side (the deadline, the breaker, the translation).
//!
//! each with 50 requests in flight (tasks on one runtime, one multiplexed
//! connection) and with 1. It reports decisions/s and p50/p99 latency
//! (medians over the rounds, min–max), the ratios `limiter pacer / raw
//! trivial` and `limiter pacer / raw pacer` (per round, same round), and
//! the server's own cost (`INFO commandstats`, `usec_per_call` of
//! `EVALSHA`, reset before each phase: it needs `CONFIG RESETSTAT`, so use
//! a throwaway server, e.g. `scripts/bench-redis.sh`).
//!
//! ```sh
//! scripts/with-redis.sh cargo run --release -p ratekeeper-redis --example bench_redis
//! cargo run --release -p ratekeeper-redis --example bench_redis -- redis://127.0.0.1:6390/ \
//!     --rounds 5 --requests 100000 --single 10000 --threads 0
//! ```
//!
//! `--threads 0` (the default) runs the client on a current-thread tokio
//! runtime (one core, as a pinned client); `--threads N`, on N workers.
//! Request counts are bounded at 200,000 a phase; loopback servers only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ratekeeper::bucket::RefillConfig;
use ratekeeper::Rate;
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit, Source};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

const PACER_LUA: &str = include_str!("../src/scripts/pacer.lua");
const MAX_REQUESTS: usize = 200_000;
/// Generous, so that no decision fails over to the policy on a loaded VM
/// (each phase checks that every decision came from the server).
const DEADLINE: Duration = Duration::from_secs(2);
const IDLE_MS: i64 = 3_600_000;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

struct Args {
    url: String,
    rounds: usize,
    requests: usize,
    single: usize,
    in_flight: usize,
    threads: usize,
    /// Only the phases whose name contains this (for profiling).
    only: String,
}

fn parse_args() -> Result<Args, BoxError> {
    let mut args = Args {
        url: std::env::var("REDIS_URL").unwrap_or_default(),
        rounds: 5,
        requests: 100_000,
        single: 10_000,
        in_flight: 50,
        threads: 0,
        only: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> Result<usize, BoxError> {
            let v = it.next().ok_or_else(|| format!("{name} needs a value"))?;
            Ok(v.parse().map_err(|e| format!("{name} {v}: {e}"))?)
        };
        match a.as_str() {
            "--rounds" => args.rounds = num("--rounds")?,
            "--requests" => args.requests = num("--requests")?,
            "--single" => args.single = num("--single")?,
            "--in-flight" => args.in_flight = num("--in-flight")?,
            "--threads" => args.threads = num("--threads")?,
            "--only" => args.only = it.next().ok_or("--only needs a value")?,
            "-h" | "--help" => {
                println!(
                    "usage: bench_redis [URL] [--rounds N] [--requests N] [--single N] \
                     [--in-flight N] [--threads N] [--only PHASE]\n(URL defaults to $REDIS_URL)"
                );
                std::process::exit(0);
            }
            url if !url.starts_with('-') => args.url = url.to_string(),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if args.url.is_empty() {
        return Err("no server: give a URL or set REDIS_URL (scripts/bench-redis.sh)".into());
    }
    let host = args
        .url
        .split("://")
        .nth(1)
        .unwrap_or("")
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "") {
        return Err(format!("{}: loopback servers only", args.url).into());
    }
    if args.requests > MAX_REQUESTS || args.single > MAX_REQUESTS {
        return Err(format!("at most {MAX_REQUESTS} requests a phase").into());
    }
    if args.rounds == 0 || args.in_flight == 0 || args.requests < args.in_flight {
        return Err("need rounds ≥ 1, in-flight ≥ 1 and requests ≥ in-flight".into());
    }
    Ok(args)
}

/// What one request runs.
#[derive(Clone)]
enum Target {
    Limiter {
        limiter: Arc<RedisLimiter>,
        max_wait: Option<Duration>,
    },
    Raw {
        conn: ConnectionManager,
        sha: Arc<str>,
        key: Arc<str>,
        args: Arc<[i64]>,
        /// Whether the reply is the Pacer's grant (`[1, ..]`) or `1`.
        pacer: bool,
    },
}

impl Target {
    /// One request; `Err` if it was not a grant from the server.
    async fn once(&mut self) -> Result<(), String> {
        match self {
            Target::Limiter { limiter, max_wait } => {
                let d = limiter.reserve(1, *max_wait).await;
                match (d.result(), d.source()) {
                    (Ok(_), Source::Redis) => Ok(()),
                    (r, s) => Err(format!("{s}: {r:?} {:?}", d.backend_error())),
                }
            }
            Target::Raw {
                conn,
                sha,
                key,
                args,
                pacer,
            } => {
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(&**sha).arg(1).arg(&**key).arg(&**args);
                if *pacer {
                    let r: Vec<i64> = cmd.query_async(conn).await.map_err(|e| e.to_string())?;
                    (r.first() == Some(&1))
                        .then_some(())
                        .ok_or(format!("{r:?}"))
                } else {
                    let r: i64 = cmd.query_async(conn).await.map_err(|e| e.to_string())?;
                    (r == 1).then_some(()).ok_or(format!("{r}"))
                }
            }
        }
    }
}

struct Phase {
    name: &'static str,
    target: Target,
    in_flight: usize,
    requests: usize,
}

/// One phase's figures in one round.
#[derive(Clone)]
struct Run {
    per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    /// This process's CPU time (all threads) per request, µs.
    client_us: f64,
    /// `INFO commandstats`: (command, usec_per_call), scripts' inner
    /// commands included.
    server: Vec<(String, f64)>,
}

impl Run {
    fn server_us(&self, command: &str) -> Option<f64> {
        self.server
            .iter()
            .find_map(|(c, us)| (c == command).then_some(*us))
    }
}

async fn run_phase(phase: &Phase, admin: &mut ConnectionManager) -> Result<Run, BoxError> {
    let _: Result<(), _> = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(admin)
        .await;
    let per_task = phase.requests / phase.in_flight;
    let cpu = process_cpu_nanos();
    let start = Instant::now();
    let tasks: Vec<_> = (0..phase.in_flight)
        .map(|_| {
            let mut target = phase.target.clone();
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per_task);
                for _ in 0..per_task {
                    let t = Instant::now();
                    target.once().await?;
                    lat.push(t.elapsed().as_nanos() as u64);
                }
                Ok::<_, String>(lat)
            })
        })
        .collect();
    let mut lat = Vec::with_capacity(per_task * phase.in_flight);
    for t in tasks {
        lat.extend(t.await?.map_err(|e| format!("{}: {e}", phase.name))?);
    }
    let elapsed = start.elapsed();
    let cpu = process_cpu_nanos().saturating_sub(cpu);
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(admin)
        .await?;
    lat.sort_unstable();
    let q = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize] as f64 / 1e3;
    Ok(Run {
        per_sec: lat.len() as f64 / elapsed.as_secs_f64(),
        p50_us: q(0.50),
        p99_us: q(0.99),
        client_us: cpu as f64 / 1e3 / lat.len() as f64,
        server: usec_per_call(&info),
    })
}

/// This process's time on a CPU so far, ns: the sum over its threads of
/// `/proc/self/task/*/schedstat`'s first field (0 where there is none).
fn process_cpu_nanos() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Every command's `usec_per_call` in `INFO commandstats` (without
/// `config` and `info`, the benchmark's own).
fn usec_per_call(info: &str) -> Vec<(String, f64)> {
    info.lines()
        .filter_map(|l| {
            let (command, fields) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let us = fields
                .split(',')
                .find_map(|f| f.strip_prefix("usec_per_call="))?
                .parse()
                .ok()?;
            Some((command.to_string(), us))
        })
        .filter(|(c, _)| !c.starts_with("config") && !c.starts_with("info"))
        .collect()
}

async fn connection(url: &str) -> Result<ConnectionManager, BoxError> {
    // As the backend's own (see BackendBuilder::connect).
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(DEADLINE))
        .set_number_of_retries(1);
    Ok(ConnectionManager::new_with_config(redis::Client::open(url)?, config).await?)
}

async fn script_load(conn: &mut ConnectionManager, source: &str) -> Result<Arc<str>, BoxError> {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query_async(conn)
        .await?;
    Ok(sha.into())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `median (min–max)` of `v`, with `digits` decimals.
fn summary(v: &[f64], digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{:.d$} ({:.d$}–{:.d$})",
        median(v.to_vec()),
        min,
        max,
        d = digits
    )
}

fn command_line(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The machine's CPUs (`processor` lines of `/proc/cpuinfo`), whatever
/// this process's affinity.
fn cpu_count() -> usize {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

async fn bench(args: Args) -> Result<(), BoxError> {
    let mut admin = connection(&args.url).await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut admin)
        .await?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or("unknown")
            .trim()
            .to_string()
    };
    let dirty = !command_line("git", &["status", "--porcelain", "--untracked-files=no"])
        .trim()
        .is_empty();
    println!(
        "machine: {} ({} CPUs; this process may run on {})",
        cpu_model(),
        cpu_count(),
        num_cpus()
    );
    println!("kernel: {}", command_line("uname", &["-r"]));
    println!(
        "server: redis {} (pid {}) at {}",
        field("redis_version"),
        field("process_id"),
        args.url
    );
    println!(
        "commit: {}{}",
        command_line("git", &["rev-parse", "--short", "HEAD"]),
        if dirty {
            " (with uncommitted changes)"
        } else {
            ""
        }
    );
    println!(
        "client: {}; {} rounds; {} requests a phase with {} in flight, {} with 1",
        if args.threads == 0 {
            "tokio current-thread runtime".to_string()
        } else {
            format!("tokio multi-thread runtime, {} workers", args.threads)
        },
        args.rounds,
        args.requests,
        args.in_flight,
        args.single
    );
    println!("load average at start: {}", load_average());

    let id = std::process::id();
    let backend = Backend::builder(args.url.as_str())
        .deadline(DEADLINE)
        .connect()
        .await?;
    let pacer_key: Arc<str> = format!("rk-bench:{id}:pacer").into();
    let limit = SharedLimit::pacer(Rate::new(1e9)?, 0.0)?;
    let pacer = Arc::new(RedisLimiter::builder(&backend, &*pacer_key, limit).build()?);
    let refill = RefillConfig::builder()
        .limit_for_period(1_000_000)
        .limit_refresh_period(Duration::from_millis(1))
        .permit_capacity(1_000_000)
        .initial_permits(1_000_000)
        .timeout(Duration::ZERO)
        .build()?;
    let refill = Arc::new(
        RedisLimiter::builder(
            &backend,
            format!("rk-bench:{id}:refill"),
            SharedLimit::Refill(refill),
        )
        .build()?,
    );
    let mut raw_conn = connection(&args.url).await?;
    let trivial_sha = script_load(&mut raw_conn, "return 1").await?;
    let pacer_sha = script_load(&mut raw_conn, PACER_LUA).await?;
    // The limiter's arguments for one permit (see pacer.lua's header):
    // average, 1 ns, no burst, no shift, any wait, the server's TIME.
    let pacer_args: Arc<[i64]> = Arc::new([0, 1, 0, 0, -1, -1, IDLE_MS]);
    let raw = |sha: &Arc<str>, key: String, pacer: bool| Target::Raw {
        conn: raw_conn.clone(),
        sha: sha.clone(),
        key: key.into(),
        args: pacer_args.clone(),
        pacer,
    };
    let targets = [
        (
            "limiter pacer",
            Target::Limiter {
                limiter: pacer.clone(),
                max_wait: None,
            },
        ),
        (
            "raw trivial",
            raw(&trivial_sha, format!("rk-bench:{id}:t"), false),
        ),
        (
            "raw pacer",
            raw(&pacer_sha, format!("rk-bench:{id}:raw-pacer"), true),
        ),
        (
            "limiter refill",
            Target::Limiter {
                limiter: refill.clone(),
                max_wait: Some(Duration::ZERO),
            },
        ),
    ];
    let mut phases = Vec::new();
    for (name, target) in &targets {
        if !name.contains(args.only.as_str()) {
            continue;
        }
        for (in_flight, requests) in [(args.in_flight, args.requests), (1, args.single)] {
            phases.push(Phase {
                name,
                target: target.clone(),
                in_flight,
                requests,
            });
        }
    }
    // Warm-up: connections, scripts, the allocator.
    for p in &phases {
        let warm = Phase {
            name: p.name,
            target: p.target.clone(),
            in_flight: p.in_flight,
            requests: (p.requests / 20).max(p.in_flight),
        };
        run_phase(&warm, &mut admin).await?;
    }
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); phases.len()];
    for round in 0..args.rounds {
        let mut line = format!("round {}:", round + 1);
        for k in 0..phases.len() {
            let i = (round + k) % phases.len();
            let r = run_phase(&phases[i], &mut admin).await?;
            line += &format!(
                " [{} @{}: {:.0}/s]",
                phases[i].name, phases[i].in_flight, r.per_sec
            );
            runs[i].push(r);
        }
        println!("{line}");
    }
    println!("load average at end: {}", load_average());

    println!();
    println!(
        "| phase | in flight | decisions/s | p50 µs | p99 µs | client CPU µs/decision | server µs/call |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (p, r) in phases.iter().zip(&runs) {
        let col = |f: fn(&Run) -> f64, d| summary(&r.iter().map(f).collect::<Vec<_>>(), d);
        let server: Vec<f64> = r.iter().filter_map(|r| r.server_us("evalsha")).collect();
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.name,
            p.in_flight,
            col(|r| r.per_sec, 0),
            col(|r| r.p50_us, 1),
            col(|r| r.p99_us, 1),
            col(|r| r.client_us, 2),
            if server.is_empty() {
                "n/a".into()
            } else {
                summary(&server, 2)
            }
        );
    }
    let ratio = |a: usize, b: usize| {
        let v: Vec<f64> = runs[a]
            .iter()
            .zip(&runs[b])
            .map(|(a, b)| a.per_sec / b.per_sec)
            .collect();
        summary(&v, 3)
    };
    let n = args.in_flight;
    if !args.only.is_empty() {
        return Ok(());
    }
    let at = |name: &str, in_flight: usize| {
        phases
            .iter()
            .position(|p| p.name == name && p.in_flight == in_flight)
            .expect("a phase")
    };
    println!();
    println!("per-round ratios, median (min–max):");
    println!(
        "  limiter pacer / raw trivial, {n} in flight: {} (target ≥ 0.9)",
        ratio(at("limiter pacer", n), at("raw trivial", n))
    );
    println!(
        "  limiter pacer / raw pacer,   {n} in flight: {} (the limiter's client side)",
        ratio(at("limiter pacer", n), at("raw pacer", n))
    );
    println!(
        "  raw pacer / raw trivial,     {n} in flight: {} (the script's work)",
        ratio(at("raw pacer", n), at("raw trivial", n))
    );
    println!(
        "  limiter refill / raw trivial, {n} in flight: {}",
        ratio(at("limiter refill", n), at("raw trivial", n))
    );
    println!(
        "  limiter pacer / raw trivial, 1 in flight: {}",
        ratio(at("limiter pacer", 1), at("raw trivial", 1))
    );
    println!();
    println!("inside the server, {n} in flight: µs per call, median over the rounds");
    for (p, r) in phases.iter().zip(&runs) {
        if p.in_flight != n {
            continue;
        }
        let mut commands: Vec<&str> = r[0].server.iter().map(|(c, _)| c.as_str()).collect();
        commands.sort_unstable();
        let parts: Vec<String> = commands
            .iter()
            .map(|c| {
                let v: Vec<f64> = r.iter().filter_map(|r| r.server_us(c)).collect();
                format!("{c} {:.2}", median(v))
            })
            .collect();
        println!("  {}: {}", p.name, parts.join(", "));
    }
    let stats = backend.stats();
    println!(
        "backend: {} round trips, {} failures, {} reloads",
        stats.round_trips, stats.failures, stats.reloads
    );
    Ok(())
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    let rt = if args.threads == 0 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()?
    };
    rt.block_on(bench(args))
}
