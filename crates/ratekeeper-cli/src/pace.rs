//! `ratekeeper pace`: worker threads pacing through one shared rate limiter,
//! a [`Pacer`] (the default), a [`TokenPool`] (`--limiter pool`), one of
//! Guava's smooth limiters ([`SmoothBursty`], `--limiter bursty`;
//! [`SmoothWarmingUp`], `--limiter warmup`) or one of Resilience4j's
//! ([`RefillLimiter`], `--limiter refill`; [`CycleLimiter`], `--limiter
//! cycle`).
//!
//! Each worker loops `limiter.acquire()` (Resilience4j's limiters:
//! `acquire_permission`, which may refuse) and records the op's wait time,
//! measured free of coordinated omission: the shared clock read right after
//! the grant returns, minus the op's *scheduled* time. (The grant's own
//! `wait_nanos()` is a lower bound when the limiter answered from its cached
//! last-seen clock.) With `--batch` each worker goes through a handle of its
//! own: the Pacer's [`PacerHandle`](ratekeeper::PacerHandle), or a
//! [`BatchHandle`] on any other limiter.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use clap::{Args, ValueEnum};
use ratekeeper::pacer::{ShardError, Strictness, StrictnessMode};
use ratekeeper::pool::{Filling, DEFAULT_FILL_INTERVAL};
use ratekeeper::refill::{ConfigBuilder, ConfigError, PermitError, DEFAULT_TIMEOUT};
use ratekeeper::smooth::{Resolution, SmoothError, DEFAULT_COLD_FACTOR, DEFAULT_MAX_BURST_SECONDS};
use ratekeeper::{
    AcquireError, BatchHandle, Clock, CycleLimiter, DefaultClock, Grant, Pacer, PermitLimiter,
    RateLimiter, RateSpec, RefillLimiter, Scope, ShardedPacer, SmoothBursty, SmoothWarmingUp,
    TokenPool, Verb, WaitPolicy,
};
use serde::Serialize;

use crate::arrivals::fmt_duration;
use crate::interrupt::{self, Interrupt, LONG_WAIT, LONG_WAIT_NANOS};
use crate::plot::{self, Buckets, Panel, Plot, PlotPath, Series, Unit, WaitStat};
use crate::progress::{self, Progress, Snapshot};
use crate::report::{
    fmt_effective, fmt_nanos, fmt_rate, process_cpu_nanos, resolution_name, resolution_note,
    thread_cpu_nanos, EffectiveRate, WaitRecorder, WaitSummary,
};
use crate::UsageError;

/// How long `--precise` spins before each op's ready time (after sleeping
/// until then): longer than a sleep's typical overshoot (~85 µs on Linux).
const PRECISE_SPIN: Duration = Duration::from_micros(150);

/// Run length when neither `--duration` nor `--count` is given.
const DEFAULT_DURATION: Duration = Duration::from_secs(5);

/// The most worker threads `--threads` accepts.
const MAX_THREADS: u32 = 4096;

/// How often a token-pool run samples the backlog (the waiting pool) for its
/// maximum.
const BACKLOG_SAMPLE_INTERVAL: Duration = Duration::from_millis(1);

/// Resilience4j's limiters: the refresh period when --refresh-period is not
/// given. The limit for period is the rate times this.
const DEFAULT_REFRESH_PERIOD: Duration = Duration::from_secs(1);

/// `pace --help` text above the options.
pub const LONG_ABOUT: &str = "\
Pace worker threads through one shared rate limiter and report the achieved \
rate, the ops' wait times and the CPU cost per permit.

Each of --threads workers loops: acquire one permit (sleeping until its slot), \
then read the limiter's clock and record the op's wait time, now minus the op's \
scheduled time (when it was due had every op kept the ideal schedule). Waits \
are measured from the scheduled time, so a worker that falls behind shows its \
lateness in every later op instead of hiding it (no coordinated omission). \
There is no work between permits: the report shows the limiter's own precision \
and cost.

Limiters (--limiter):
  pacer   the default: ratekeeper's Pacer, a virtual schedule. The spec's burst \
ratio is its strictness unless --strictness overrides it; --precise sets its \
wait policy; --shards N splits it into N shards with work stealing.
  pool    nosqlbench's token-pool (hybrid) limiter: a pool of nanosecond tokens \
with active, burst and waiting pools. The spec's burst ratio is the pool's \
burst ratio (at least 1.0): a backlog drains at (burst - 1) x rate. --fill \
chooses where its tokens come from: inline (the default; callers refill it \
from the clock when it runs short, no thread) or thread (a filler thread \
refills it every --fill-interval, default 1ms).
  bursty  Guava's RateLimiter.create(rate), SmoothBursty: idle time stores up \
to --max-burst seconds of permits (default 1), which are then granted at once. \
A request waits only for the permits before it and charges its own to the \
next caller.
  warmup  Guava's RateLimiter.create(rate, warmupPeriod), SmoothWarmingUp: a \
limiter idle for --warmup (required) is cold: its permits are spaced \
--cold-factor (default 3) times the stable interval, speeding up to the rate \
over the warm-up period. A fresh limiter starts cold.
  bursty and warmup keep Guava's whole-microsecond arithmetic exactly at or \
below 100000 ops/s per limiter. Above, they keep their schedule in whole \
nanoseconds (JSON resolution \"nanos\"): whole microseconds would charge a \
permit up to half too little, and above 1000000 ops/s nothing at all.
  refill  Resilience4j's interface on a token bucket (refill-rate-limiter's \
RefillLimiter): limit-for-period permits per --refresh-period (default 1s), \
refilled one by one, up to --capacity (default: the limit) stored permits; it \
starts with --initial-permits (default: the limit).
  cycle   Resilience4j's default AtomicRateLimiter (CycleLimiter): \
limit-for-period permits at the start of each --refresh-period cycle \
(default 1s), counted from the limiter's creation; unused permits do not \
carry over.
Each limiter's options are refused with the others: --strictness, \
--precise and --shards (pacer), --fill and --fill-interval (pool), --max-burst (bursty), \
--warmup and --cold-factor (warmup), --refresh-period and --timeout (refill, \
cycle), --capacity and --initial-permits (refill).

--batch, with any limiter, gives each worker a batching handle of its own, \
which takes a block of the shared limiter at once and grants it from the \
worker's own memory: far fewer trips to the shared state at high rates, at \
the cost of the lease slack (what a worker leased and has not used yet is \
nobody else's, and is dropped when the run ends). The pacer's handle \
(Pacer::handle) leases up to 100µs of the schedule with one atomic add and \
grants each slot at its own time; it needs a strictness below 1 (average or \
burst compensation). The other limiters' handle (BatchHandle) leases about \
100µs of the worker's own grants, at most 1024 permits, with one \
reservation, and grants them together, when the limiter readies the lease. \
Refill and cycle acquires stay bounded by --timeout, so there a handle \
leases only permits ready at once and otherwise asks the limiter for its one \
permit. --batch is refused with --shards.

Resilience4j's limiters (refill, cycle) take their rate from --rate: the limit \
for period is rate x refresh period, which must be a whole number of permits, \
at least 1 (--rate 1000 --refresh-period 100ms: 100 permits per 100ms; --rate \
0.5 needs --refresh-period 2s or a multiple). Each acquire may wait up to \
--timeout (default 5s, Resilience4j's): an acquire whose wait would exceed it \
is refused at once. A refused acquire is counted (refused) and is not an op: \
its worker sleeps until a permit could be granted within the timeout and asks \
again.

Guava's and Resilience4j's limiters take only the spec's rate: a burst ratio \
other than the default 1.1 is refused (a spec that spells out 1.1 cannot be \
told from one that gives none, so it is accepted and ignored). They have no \
schedule to be late against: an op's scheduled time is the moment the limiter \
lets it go, so its wait is only how late its worker woke up, and time nobody \
used becomes stored permits (up to what the limiter keeps), never a backlog to \
catch up. Their time starts when they are built, just before the workers are \
started.

The schedule starts when the workers are released, whatever the spec's verb (a \
fresh limiter has no earlier schedule to configure, restart or stop; for \
Guava's limiters see above). A spec \
with the `thread` scope gives every worker its own limiter at the spec's rate, \
so the target rate is rate x threads; otherwise all workers share one limiter \
and the rate is their total.

Run length: --duration DUR (default 5s) or --count N, not both.
  --duration: workers stop once the clock passes the deadline (checked after \
each grant). An op whose grant is ready at or after the deadline is not \
counted; its worker still slept until it, so the run can overrun the deadline \
by up to about threads / rate.
  --count: exactly N ops in total, shared by all workers.
  Ctrl-C ends the run early: each worker stops after its current op (a wait \
for a permit longer than 20ms is cut short and the permit given back; a token \
pool's waiting claim is waited for), the report covers the ops so far, with \
elapsed counted as in count mode, and the exit status is 130.

Before the run, a warning on standard error says when the limiter's integer \
arithmetic gives a rate more than 0.1% off the target (see effective rate \
below). While the run goes on, a progress line on standard error shows the \
elapsed time, the ops so far and the rate over the last second, if standard \
error is a terminal; otherwise nothing else is written to it.

Report:
  target rate     the spec's rate (x threads for the thread scope)
  effective rate  the rate the limiter's integer arithmetic gives, summed over \
limiters: the Pacer and the pool give each op floor(1e9 / rate) whole \
nanoseconds, so they run at 1e9 / that (--rate 510M: 1 ns, 1e9 ops/s; \
--shards N: floor(1e9 x N / rate) per shard); bursty and warmup charge a \
permit whole microseconds (nanoseconds above 100000 ops/s), truncated per \
request (so this is what one-permit requests get; --batch leases of many \
permits lose less); refill refills a permit every floor(refresh period / \
limit) ns; cycle is exact. More than 0.1% off the target, the report says by \
how much and why, and a warning says so before the run
  achieved rate   ops / elapsed
  elapsed         --duration: the duration. --count (or Ctrl-C): from the \
start of the schedule until the last op was granted, plus one slot (1 / target \
rate): N ops on a perfect schedule take N slots, so a perfect run reads exactly \
the target rate
  wall            from the start until every worker had stopped
  wait            p50, p90, p99, p99.9, max and mean of the ops' wait times \
(HdrHistogram, 3 significant digits; max and mean exact)
  backlog         how far the schedule is behind the clock at the end \
(RateLimiter::wait_stats; summed over limiters with the thread scope). For the \
token pool this is its waiting pool: time that arrived while the active pool \
was full and that ops have not caught up yet. For Guava's limiters it is how \
far their next free time is ahead of the clock: what the next op would wait. \
For Resilience4j's it is the time permits are reserved ahead of the clock
  max backlog     token pool only: the largest backlog seen during the run, \
sampled every 1ms (and at the end) by the reporting thread
  total wait      all wait the limiter accumulated during the run (same \
source; not shown for Guava's and Resilience4j's limiters, which keep no total)
  refused         refill, cycle only: acquires refused because their wait \
would exceed --timeout (not counted in ops)
  fills           token pool only: how many times the pool was refilled \
(pre-fills included)
  cpu per op      the process's user + system CPU time during the run, less \
the reporting thread's, divided by ops (a filler thread's CPU time counts, and \
so does the progress line's on a terminal)

Plot (--plot FILE, SVG or PNG by the extension): the upper panel shows the \
ops per time bucket (--bucket) as a rate, against the target rate (dashed); \
the lower panel shows the longest and the mean wait of the ops in each \
bucket, placed by when each op started. Each worker adds its ops to its own \
buckets (a comparison and a few additions per op); without --plot nothing is \
recorded.";

/// Examples, shown by `pace -h` and `pace --help`.
pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper pace --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --rate 2000 --count 200 --json
  ratekeeper pace --rate 1M --strictness 0.5 --threads 2 --duration 500ms --precise
  ratekeeper pace --rate 10M --strictness 0 --batch --threads 2 --duration 2s
  ratekeeper pace --rate 10M --shards 2 --threads 2 --duration 2s
  ratekeeper pace --limiter pool --rate 10M --batch --threads 2 --duration 2s
  ratekeeper pace --limiter pool --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --limiter pool --fill thread --fill-interval 100us --rate 50k,1.5,thread --threads 4
  ratekeeper pace --limiter bursty --max-burst 0.5 --rate 1000 --threads 2 --duration 3s
  ratekeeper pace --limiter warmup --warmup 2s --cold-factor 3 --rate 1000 --duration 3s
  ratekeeper pace --limiter refill --rate 1000 --refresh-period 100ms --capacity 200 --timeout 10ms --threads 4
  ratekeeper pace --limiter cycle --rate 1000 --refresh-period 100ms --timeout 0s --threads 2 --duration 3s
  ratekeeper pace --rate 2000,1.5 --threads 2 --duration 3s --plot pace.svg";

/// `pace --help` text below the options: examples and the JSON schema.
pub const AFTER_LONG_HELP: &str = "\
Examples:
  ratekeeper pace --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --rate 2000 --count 200 --json
  ratekeeper pace --rate 1M --strictness 0.5 --threads 2 --duration 500ms --precise
  ratekeeper pace --rate 10M --strictness 0 --batch --threads 2 --duration 2s
  ratekeeper pace --rate 10M --shards 2 --threads 2 --duration 2s
  ratekeeper pace --limiter pool --rate 10M --batch --threads 2 --duration 2s
  ratekeeper pace --limiter pool --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --limiter pool --fill thread --fill-interval 100us --rate 50k,1.5,thread --threads 4
  ratekeeper pace --limiter bursty --max-burst 0.5 --rate 1000 --threads 2 --duration 3s
  ratekeeper pace --limiter warmup --warmup 2s --cold-factor 3 --rate 1000 --duration 3s
  ratekeeper pace --limiter refill --rate 1000 --refresh-period 100ms --capacity 200 --timeout 10ms --threads 4
  ratekeeper pace --limiter cycle --rate 1000 --refresh-period 100ms --timeout 0s --threads 2 --duration 3s
  ratekeeper pace --rate 2000,1.5 --threads 2 --duration 3s --plot pace.svg

JSON output (--json): one object on one line. Durations are integer \
nanoseconds, rates are ops per second (floating point). Fields marked with \
limiters in parentheses appear only with those limiters (--limiter):
  spec             string   the rate spec in canonical form, rate,burst,verb,scope
  limiter          string   \"pacer\", \"pool\", \"bursty\", \"warmup\", \"refill\" or \"cycle\"
  target_rate      number   ops/s the run aimed at
  effective_rate   number   ops/s the limiters' integer arithmetic gives (see Report above); \
null for a limiter that does not limit at all
  strictness       number   (pacer) the strictness used (--strictness, else the spec's burst ratio)
  strictness_mode  string   (pacer) \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
  wait_policy      string   (pacer) \"default\" or \"precise\"
  access           string   \"exact\" (every acquire goes to the shared limiter, the default), \
\"batched\" (--batch: a handle per worker) or \"sharded\" (pacer with --shards)
  shards           integer  (pacer with --shards) the shard count
  burst_ratio      number   (pool) the pool's burst ratio (the spec's)
  filling          string   (pool) \"inline\" or \"thread\" (the filling in effect)
  fill_interval_ns integer  (pool) the filler thread's interval; null for inline
  max_burst_seconds number  (bursty) seconds of permits idle time may store
  warmup_ns        integer  (warmup) the warm-up period
  cold_factor      number   (warmup) how much slower than the rate a cold limiter is
  resolution       string   (bursty, warmup) the schedule's unit: \"micros\" \
(Guava's, at or below 100000 ops/s per limiter) or \"nanos\" (above)
  limit_for_period integer  (refill, cycle) permits per refresh period: rate x refresh period
  refresh_period_ns integer (refill, cycle) the refresh period
  timeout_ns       integer  (refill, cycle) how long an acquire may wait
  capacity         integer  (refill) the most permits the bucket stores
  initial_permits  integer  (refill) the permits in the bucket when it is built
  threads          integer  worker threads
  pacers           integer  (pacer) 1, or threads for the thread scope
  pools            integer  (pool) 1, or threads for the thread scope
  limiters         integer  (bursty, warmup, refill, cycle) 1, or threads for the thread scope
  mode             string   \"duration\" or \"count\"
  duration_ns      integer  the requested duration (null in count mode)
  count            integer  the requested count (null in duration mode)
  ops              integer  ops counted
  elapsed_ns       integer  see Report above
  wall_ns          integer  see Report above
  achieved_rate    number   ops / elapsed
  wait_ns          object   {\"p50\", \"p90\", \"p99\", \"p999\", \"max\", \"mean\"}, integers
  backlog_ns       integer  the limiter's backlog at the end (the pool: its waiting \
pool; bursty, warmup: how far the next free time is ahead of the clock; refill, \
cycle: the time reserved ahead of the clock)
  max_backlog_ns   integer  (pool) the largest backlog sampled during the run
  total_wait_ns    integer  the limiter's total wait at the end (bursty, warmup, \
refill, cycle: equal to backlog_ns, as they keep no total)
  refused          integer  (refill, cycle) acquires refused by the timeout
  fills            integer  (pool) refills during the run, pre-fills included
  cpu_ns           integer  process CPU time (user + system) during the run, or null
  cpu_ns_per_op    integer  cpu_ns / ops, rounded; null without ops or CPU time
  interrupted      boolean  whether Ctrl-C ended the run (exit status 130)";

/// Which rate limiter `pace` drives (`--limiter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LimiterKind {
    /// ratekeeper's Pacer, a virtual schedule (--strictness and --precise apply)
    Pacer,
    /// nosqlbench's token-pool limiter; the spec's burst ratio is the pool's
    /// (--fill and --fill-interval apply)
    Pool,
    /// Guava's SmoothBursty, RateLimiter.create(rate) (--max-burst applies)
    Bursty,
    /// Guava's SmoothWarmingUp, RateLimiter.create(rate, warmupPeriod)
    /// (--warmup, required, and --cold-factor apply)
    Warmup,
    /// Resilience4j's interface on a token bucket, RefillLimiter
    /// (--refresh-period, --timeout, --capacity and --initial-permits apply)
    Refill,
    /// Resilience4j's default fixed-cycle AtomicRateLimiter, CycleLimiter
    /// (--refresh-period and --timeout apply)
    Cycle,
}

impl LimiterKind {
    /// The name `--limiter` takes and the JSON report gives.
    fn name(self) -> &'static str {
        match self {
            LimiterKind::Pacer => "pacer",
            LimiterKind::Pool => "pool",
            LimiterKind::Bursty => "bursty",
            LimiterKind::Warmup => "warmup",
            LimiterKind::Refill => "refill",
            LimiterKind::Cycle => "cycle",
        }
    }
}

/// Where a token pool's tokens come from (`--fill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FillKind {
    /// callers refill the pool from the clock when it runs short (no thread)
    Inline,
    /// a filler thread refills the pool every --fill-interval
    Thread,
}

/// Options of `ratekeeper pace`.
#[derive(Debug, Clone, Args)]
pub struct PaceArgs {
    /// Rate spec: rate[,burst][,verb][,scope], e.g. 10k, 10k,1.1, 500,1.5,thread.
    #[arg(long, value_name = "SPEC", value_parser = parse_spec)]
    pub rate: RateSpec,

    /// The rate limiter to pace with: the Pacer, nosqlbench's token pool,
    /// Guava's SmoothBursty or SmoothWarmingUp, or Resilience4j's refill or
    /// cycle limiter.
    #[arg(long, value_enum, value_name = "KIND", default_value_t = LimiterKind::Pacer)]
    pub limiter: LimiterKind,

    /// Worker threads (at least 1).
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_threads)]
    pub threads: u32,

    /// Run for this long, e.g. 5s, 500ms, 1m30s [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "count")]
    pub duration: Option<Duration>,

    /// Run exactly this many ops in total, across all threads.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,

    /// Pacer only: override the spec's burst ratio: 0 average, 0<S<1 burst
    /// compensation, 1 strict, >1 burst ratio. Refused with the other
    /// limiters.
    #[arg(long, value_name = "S", value_parser = parse_strictness, allow_negative_numbers = true)]
    pub strictness: Option<f64>,

    /// Pacer only: sleep, then spin the last 150µs before each op's slot, so
    /// no op goes early (costs CPU). Default: the library's default wait
    /// policy (an op goes early only when sleeping to it is impossible, by at
    /// most half a slot and at most the measured sleep resolution, about
    /// 100µs; at high rates a sleep ends up to a grouping delay late, so that
    /// one sleep lets a group of ops go, and their waits say so). Refused
    /// with the other limiters.
    #[arg(long)]
    pub precise: bool,

    /// Give each worker a batching handle on the limiter, which leases a
    /// block of it at once and hands it out locally: far less contention at
    /// high rates, at the cost of the lease slack. The Pacer's handle
    /// (Pacer::handle) leases up to 100µs of the schedule and needs strictness
    /// below 1 (average or burst compensation); the other limiters' handle
    /// (BatchHandle) leases up to 1024 permits. Refused with --shards.
    #[arg(long, conflicts_with = "shards")]
    pub batch: bool,

    /// Pacer only: split the shared pacer into N shards of rate/N, one per
    /// worker round-robin, each worker taking other shards' due slots when
    /// its own would make it wait (1 to 1024). Strict and burst spacing then
    /// holds within a shard only.
    #[arg(long, value_name = "N", value_parser = parse_shards, allow_negative_numbers = true)]
    pub shards: Option<usize>,

    /// Token pool only: where its tokens come from [default: inline].
    #[arg(long, value_enum, value_name = "HOW")]
    pub fill: Option<FillKind>,

    /// Token pool with --fill thread only: how often the filler thread
    /// refills, from 1µs to 1s, e.g. 1ms, 100us [default: 1ms].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub fill_interval: Option<Duration>,

    /// SmoothBursty only: how many seconds of permits idle time may store,
    /// to be granted at once (a number, at least 0) [default: 1].
    #[arg(long, value_name = "SECONDS", value_parser = parse_max_burst, allow_negative_numbers = true)]
    pub max_burst: Option<f64>,

    /// SmoothWarmingUp only, and required with it: the warm-up period, e.g.
    /// 2s, 500ms; 0s means no warm-up. A limiter idle this long is cold.
    #[arg(long, value_name = "DUR", value_parser = parse_warmup)]
    pub warmup: Option<Duration>,

    /// SmoothWarmingUp only: how many times the stable interval a cold
    /// limiter spaces its permits (at least 1) [default: 3].
    #[arg(long, value_name = "F", value_parser = parse_cold_factor, allow_negative_numbers = true)]
    pub cold_factor: Option<f64>,

    /// Resilience4j's limiters (refill, cycle) only: the refresh period, e.g.
    /// 1s, 100ms; the limit for period is rate x this, which must be a whole
    /// number of permits, at least 1 [default: 1s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub refresh_period: Option<Duration>,

    /// Resilience4j's limiters (refill, cycle) only: how long an acquire may
    /// wait for its permit, e.g. 10ms; 0s refuses any wait. A refused acquire
    /// is counted, not an op [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,

    /// RefillLimiter only: the most permits the bucket stores, the burst (at
    /// least the limit for period) [default: the limit for period].
    #[arg(long, value_name = "N", value_parser = parse_permits, allow_negative_numbers = true)]
    pub capacity: Option<i64>,

    /// RefillLimiter only: the permits in the bucket when it is built (0 to
    /// the capacity) [default: the limit for period].
    #[arg(long, value_name = "N", value_parser = parse_permits, allow_negative_numbers = true)]
    pub initial_permits: Option<i64>,

    /// Draw the achieved rate and the waits over time to FILE, an SVG or a
    /// PNG (by its extension).
    #[arg(long, value_name = "FILE", value_parser = plot::parse_plot_path)]
    pub plot: Option<PlotPath>,

    /// The plot's time bucket, e.g. 100ms [default: about a hundredth of the
    /// run, and at least 5 ops at the target rate, rounded to 1, 2 or 5
    /// units].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "plot")]
    pub bucket: Option<Duration>,

    /// Print the report as one JSON object (schema in --help).
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn parse_spec(s: &str) -> Result<RateSpec, String> {
    let spec: RateSpec = s.parse().map_err(|e: ratekeeper::SpecError| {
        if e.kind() == ratekeeper::SpecErrorKind::BurstBelowOne {
            format!(
                "{e}; for a strictness below 1 (average or burst compensation) use \
                 --strictness (Pacer only)"
            )
        } else {
            e.to_string()
        }
    })?;
    // A spec can hold rates no nanosecond schedule can keep (above 1e9/s).
    spec.rate().nanos_per_op().map_err(|e| e.to_string())?;
    Ok(spec)
}

fn parse_shards(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=ratekeeper::pacer::MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number of shards from 1 to {}, got \"{s}\"",
            ratekeeper::pacer::MAX_SHARDS
        )),
    }
}

fn parse_threads(s: &str) -> Result<u32, String> {
    let expected = format!("expected a whole number of threads from 1 to {MAX_THREADS}");
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Ok(0) => Err(format!("at least 1 thread is needed; {expected}")),
        _ => Err(expected),
    }
}

pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of ops, at least 1".to_owned()),
    }
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}; expected a duration such as 5s, 500ms or 1m30s"))?;
    if d.is_zero() {
        return Err("the duration must be greater than zero".to_owned());
    }
    Ok(d)
}

/// A warm-up period: like a duration, but 0 is allowed (no warm-up).
pub(crate) fn parse_warmup(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}; expected a duration such as 2s, 500ms or 1m"))
}

/// `--timeout`: a duration; 0 is allowed (no waiting).
fn parse_timeout(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}; expected a duration such as 5s, 10ms or 0s"))
}

/// `--capacity`, `--initial-permits`: a whole number; the library checks its
/// range when the limiter is built.
fn parse_permits(s: &str) -> Result<i64, String> {
    s.trim()
        .parse()
        .map_err(|_| "expected a whole number of permits, such as 100".to_owned())
}

/// `--max-burst`: a number, checked by the library when the limiter is built.
pub(crate) fn parse_max_burst(s: &str) -> Result<f64, String> {
    s.trim()
        .parse()
        .map_err(|_| "expected a number of seconds, at least 0, such as 1 or 0.5".to_owned())
}

/// `--cold-factor`: a finite number; the library checks that it is at least 1
/// when the limiter is built.
pub(crate) fn parse_cold_factor(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected a number, at least 1, such as 3";
    let v: f64 = s.trim().parse().map_err(|_| EXPECTED.to_owned())?;
    // The library takes +inf, but an infinite cold factor leaves no permits
    // above the warm-up threshold: no warm-up at all, the opposite of what it
    // says (and JSON has no infinity).
    if v.is_infinite() {
        return Err(format!("the cold factor must be finite; {EXPECTED}"));
    }
    Ok(v)
}

const STRICTNESS_EXPECTED: &str = "expected a number: 0 (average), between 0 and 1 \
     (burst compensation), 1 (strict) or above 1 (burst ratio)";

pub(crate) fn parse_strictness(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| STRICTNESS_EXPECTED.to_owned())?;
    Strictness::new(v).map_err(|e| format!("{e}; {STRICTNESS_EXPECTED}"))?;
    Ok(v)
}

/// When the workers stop.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// Run until the shared clock passes this reading.
    Deadline(u64),
    /// Run until the shared countdown is used up.
    Count,
}

/// What the gate hands the workers when the run starts.
#[derive(Debug, Clone, Copy)]
struct Go {
    stop: Stop,
    /// The run's start on the shared clock.
    t0: u64,
    /// With --plot: the width of the time buckets ops are aggregated into.
    bucket: Option<u64>,
}

/// A worker's ops per time bucket, for --plot: a few additions per op, in
/// the worker's own memory.
struct Timeline {
    buckets: Buckets,
    t0: u64,
    /// The last time recorded as itself; later ones (an op granted before the
    /// deadline but measured after it) count in the run's last bucket.
    last: u64,
}

impl Timeline {
    fn new(go: &Go) -> Option<Timeline> {
        go.bucket.map(|width| Timeline {
            buckets: Buckets::new(width),
            t0: go.t0,
            last: match go.stop {
                Stop::Deadline(d) => d.saturating_sub(go.t0).saturating_sub(1),
                Stop::Count => u64::MAX,
            },
        })
    }

    #[inline]
    fn record(&mut self, now: u64, wait: u64) {
        let t = now.saturating_sub(self.t0).min(self.last);
        self.buckets.record(t, wait);
    }
}

/// What one worker measured.
#[derive(Debug)]
struct WorkerResult {
    waits: WaitRecorder,
    /// Clock reading when its last counted op was granted.
    last_start: Option<u64>,
    /// Clock reading when the worker stopped.
    finished: u64,
    /// Resilience4j's limiters: acquires refused by the timeout.
    refused: u64,
    /// Why the worker stopped early, if a limiter refused it a permit for
    /// good.
    error: Option<anyhow::Error>,
    /// Whether it stopped for Ctrl-C.
    interrupted: bool,
    /// With --plot: its ops per time bucket.
    buckets: Option<Buckets>,
}

/// The gate the workers wait at: `None` until the run starts; then the stop
/// rule and start, or `Err` if the run was called off before it started.
type Gate = (Mutex<Option<Result<Go, ()>>>, Condvar);

fn open_gate(gate: &Gate, value: Result<Go, ()>) {
    let (lock, cvar) = gate;
    *lock.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
    cvar.notify_all();
}

fn wait_at_gate(gate: &Gate) -> Result<Go, ()> {
    let (lock, cvar) = gate;
    let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if let Some(v) = *state {
            return v;
        }
        state = cvar.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
}

/// A worker's count of its ops, for the progress line, on a cache line of
/// its own: the worker stores to it after each op, the progress thread reads.
#[derive(Debug, Default)]
#[repr(align(128))]
struct OpCounter(AtomicU64);

/// What a worker is handed besides its limiter.
#[derive(Debug, Clone, Copy)]
struct Ctx<'a> {
    /// The clock every limiter of the run reads.
    clock: &'a DefaultClock,
    gate: &'a Gate,
    /// Count mode: the ops still to hand out.
    remaining: &'a AtomicU64,
    interrupt: &'a Interrupt,
    /// Whether a long wait for a permit is slept on the interrupt first
    /// (not for the token pool, whose waiting callers fill it).
    interruptible: bool,
    /// With a progress line: this worker's op counter.
    progress: Option<&'a OpCounter>,
}

impl Ctx<'_> {
    /// Count mode: takes one op from the countdown, if any is left.
    #[inline]
    fn take_one(&self) -> bool {
        // Ordering: Relaxed; the countdown only hands out a number of ops.
        self.remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Counts one more op for the progress line, if there is one.
    #[inline]
    fn count_op(&self, ops: &mut u64) {
        if let Some(c) = self.progress {
            *ops += 1;
            // Ordering: Relaxed; a gauge for the progress line.
            c.0.store(*ops, Ordering::Relaxed);
        }
    }
}

/// A wait for a permit long enough to sleep on the interrupt first (see
/// [`interrupt::wait_for_grant`]); out of line, off the workers' hot path.
#[cold]
#[inline(never)]
fn long_wait<L: RateLimiter>(limiter: &L, grant: Grant, interrupt: &Interrupt) -> Option<Grant> {
    interrupt::wait_for_grant(limiter, grant, interrupt)
}

/// One worker's loop on `limiter`.
fn worker<L: RateLimiter>(limiter: &L, ctx: &Ctx<'_>) -> WorkerResult {
    let clock = ctx.clock;
    let mut waits = WaitRecorder::new();
    let mut last_start = None;
    let mut timeline = None;
    let mut refusal = None;
    let mut interrupted = false;
    let mut ops = 0u64;
    // One op: `Some(grant)` once it may go, `None` to stop. The checks
    // beyond `acquire`'s are a load and a predictable branch or two; a wait
    // long enough to be cut short by Ctrl-C is taken out of line.
    let mut take = || {
        if ctx.interrupt.is_set() {
            interrupted = true;
            return None;
        }
        limiter.wait_turn();
        match limiter.reserve(1, None) {
            Ok(g) if ctx.interruptible && g.delay_nanos() > LONG_WAIT_NANOS => {
                let g = long_wait(limiter, g, ctx.interrupt);
                interrupted = g.is_none();
                g
            }
            Ok(g) => Some(limiter.wait_for(g)),
            Err(e) => {
                refusal = Some(e);
                None
            }
        }
    };
    if let Ok(go) = wait_at_gate(ctx.gate) {
        timeline = Timeline::new(&go);
        match go.stop {
            Stop::Deadline(deadline) => {
                while let Some(g) = take() {
                    let now = clock.now_nanos();
                    if g.ready_nanos() >= deadline {
                        break;
                    }
                    let wait = now.saturating_sub(g.scheduled_nanos());
                    waits.record(wait);
                    if let Some(t) = &mut timeline {
                        t.record(now, wait);
                    }
                    last_start = Some(now);
                    ctx.count_op(&mut ops);
                    if now >= deadline {
                        break;
                    }
                }
            }
            Stop::Count => {
                while ctx.take_one() {
                    let Some(g) = take() else {
                        break;
                    };
                    let now = clock.now_nanos();
                    let wait = now.saturating_sub(g.scheduled_nanos());
                    waits.record(wait);
                    if let Some(t) = &mut timeline {
                        t.record(now, wait);
                    }
                    last_start = Some(now);
                    ctx.count_op(&mut ops);
                }
            }
        }
    }
    WorkerResult {
        waits,
        last_start,
        finished: clock.now_nanos(),
        refused: 0,
        error: refusal.map(|e| anyhow::Error::new(e).context("the limiter refused a permit")),
        interrupted,
        buckets: timeline.map(|t| t.buckets),
    }
}

/// [`worker`] through a [`BatchHandle`] on `limiter`, made on the worker's
/// own thread (`--batch`, every limiter but the Pacer).
fn batched_worker<L: RateLimiter>(limiter: &L, ctx: &Ctx<'_>) -> WorkerResult {
    worker(&BatchHandle::new(limiter), ctx)
}

/// The worker loop on a shared `L`: through a handle of its own with
/// `--batch`, else on the limiter itself.
fn work_on<L: RateLimiter>(batch: bool) -> fn(&L, &Ctx<'_>) -> WorkerResult {
    if batch {
        batched_worker
    } else {
        worker
    }
}

/// What one acquire of a Resilience4j limiter gave.
enum Attempt {
    /// Granted; the permit could go at this clock reading (the worker has
    /// waited for it).
    Granted(u64),
    /// Refused by the timeout; a permit could be granted within the timeout
    /// in about this many nanoseconds.
    Refused(u64),
    /// Granted, but Ctrl-C came during the wait: given back, not waited for.
    Interrupted,
}

/// One `acquire_permission(1)` on `limiter`, through its pending form so
/// that the ready time is known: blocks until the permit may go if it is
/// granted (unless interrupted), returns at once if it is refused.
fn attempt<L: PermitLimiter + RateLimiter>(
    limiter: &L,
    timeout_nanos: u64,
    ctx: &Ctx<'_>,
) -> Result<Attempt, PermitError> {
    let pending = limiter.begin_acquire_permission(1)?;
    if !pending.is_granted() {
        // Ended already (its FAILED_ACQUIRE event is out). The metrics'
        // wait is for one permit now; beyond the timeout is what to sleep.
        drop(pending);
        let wait = limiter.metrics().nanos_to_wait;
        return Ok(Attempt::Refused(wait.saturating_sub(timeout_nanos)));
    }
    let ready = pending.ready_at_nanos();
    if pending.delay() <= LONG_WAIT {
        pending.wait();
        return Ok(Attempt::Granted(ready));
    }
    // A long wait: slept on the interrupt until 20 ms are left, the rest
    // under the limiter's wait policy (measured from a fresh reading).
    if !interrupt::approach(ctx.interrupt, ctx.clock, ready) {
        pending.cancel();
        return Ok(Attempt::Interrupted);
    }
    pending.wait();
    Ok(Attempt::Granted(ready))
}

/// [`attempt`] through `handle`, a [`BatchHandle`] on a Resilience4j
/// limiter: one permit, its wait bounded by the limiter's timeout as
/// `acquire_permission`'s is. A bounded request takes from the handle's
/// lease, leases only permits ready at once, or else asks the limiter for
/// its one permit (see [`BatchHandle`]'s "Lease size").
fn attempt_batched<L: RateLimiter>(
    handle: &L,
    timeout: Duration,
    ctx: &Ctx<'_>,
) -> Result<Attempt, AcquireError> {
    match handle.reserve(1, Some(timeout)) {
        Ok(grant) => Ok(
            match interrupt::wait_for_grant(handle, grant, ctx.interrupt) {
                Some(done) => Attempt::Granted(done.ready_nanos()),
                None => Attempt::Interrupted,
            },
        ),
        // Refused, as the limiter's own refusal: beyond the timeout is what
        // to sleep.
        Err(AcquireError::WouldWait { wait, .. }) => Ok(Attempt::Refused(
            duration_nanos(wait).saturating_sub(duration_nanos(timeout)),
        )),
        Err(e) => Err(e),
    }
}

/// Sleeps `nanos`, but not past `deadline` on the run's clock (if any), and
/// not past Ctrl-C.
fn back_off(ctx: &Ctx<'_>, nanos: u64, deadline: Option<u64>) {
    let until_deadline = deadline.map_or(u64::MAX, |d| d.saturating_sub(ctx.clock.now_nanos()));
    let nanos = nanos.min(until_deadline);
    if nanos > 0 {
        ctx.interrupt.sleep(Duration::from_nanos(nanos));
    }
}

/// One worker's loop on a Resilience4j limiter, each acquire one `attempt`
/// ([`attempt`] or [`attempt_batched`]): like [`worker`], but an acquire may
/// be refused (its wait would exceed the timeout). A refusal is counted, not
/// an op; the worker then sleeps until a permit could be granted within the
/// timeout and asks again.
fn permit_worker(ctx: &Ctx<'_>, attempt: impl Fn() -> anyhow::Result<Attempt>) -> WorkerResult {
    let clock = ctx.clock;
    let mut waits = WaitRecorder::new();
    let mut last_start = None;
    let mut refused = 0u64;
    let mut error = None;
    let mut interrupted = false;
    let mut timeline = None;
    let mut ops = 0u64;
    if let Ok(go) = wait_at_gate(ctx.gate) {
        timeline = Timeline::new(&go);
        let deadline = match go.stop {
            Stop::Deadline(d) => Some(d),
            Stop::Count => None,
        };
        'ops: while deadline.is_some() || ctx.take_one() {
            // One op: ask until granted (count mode), or until the deadline.
            loop {
                if ctx.interrupt.is_set() {
                    interrupted = true;
                    break 'ops;
                }
                match attempt() {
                    Ok(Attempt::Granted(ready)) => {
                        let now = clock.now_nanos();
                        if deadline.is_some_and(|d| ready >= d) {
                            break 'ops;
                        }
                        let wait = now.saturating_sub(ready);
                        waits.record(wait);
                        if let Some(t) = &mut timeline {
                            t.record(now, wait);
                        }
                        last_start = Some(now);
                        ctx.count_op(&mut ops);
                        if deadline.is_some_and(|d| now >= d) {
                            break 'ops;
                        }
                        break;
                    }
                    Ok(Attempt::Refused(retry_in)) => {
                        refused += 1;
                        back_off(ctx, retry_in, deadline);
                        if deadline.is_some_and(|d| clock.now_nanos() >= d) {
                            break 'ops;
                        }
                    }
                    Ok(Attempt::Interrupted) => {
                        interrupted = true;
                        break 'ops;
                    }
                    Err(e) => {
                        error = Some(e);
                        break 'ops;
                    }
                }
            }
        }
    }
    WorkerResult {
        waits,
        last_start,
        finished: clock.now_nanos(),
        refused,
        error,
        interrupted,
        buckets: timeline.map(|t| t.buckets),
    }
}

/// What [`drive`] measured, whatever the limiter.
#[derive(Debug)]
struct Outcome {
    results: Vec<WorkerResult>,
    /// Clock reading when the schedule started.
    t0: u64,
    /// Clock reading when the last worker stopped.
    t_end: u64,
    /// Process CPU time during the run, less the reporting thread's.
    cpu_ns: Option<u64>,
    /// The largest backlog sampled (0 when not sampled).
    max_backlog_ns: u64,
}

/// How the run is driven, whatever the limiter.
#[derive(Debug, Clone, Copy)]
struct RunPlan<'a> {
    clock: DefaultClock,
    threads: u32,
    duration: Option<Duration>,
    count: Option<u64>,
    /// With --plot: the width of the time buckets workers aggregate ops into.
    bucket: Option<u64>,
    /// The rate the run aims at (for the progress line).
    target_rate: f64,
    interrupt: &'a Interrupt,
    /// Whether workers may sleep a long wait for a permit on the interrupt
    /// (see [`Ctx::interruptible`]).
    interruptible: bool,
}

/// The loop a worker thread runs.
trait Work<L>: Fn(&L, &Ctx<'_>) -> WorkerResult + Sync {}

impl<L, W: Fn(&L, &Ctx<'_>) -> WorkerResult + Sync> Work<L> for W {}

/// Runs `plan.threads` workers over `limiters` (worker `i` uses limiter
/// `i % len`), each running `work`. `start` starts every schedule and
/// returns the run's start time; `backlog`, if given, is sampled every
/// [`BACKLOG_SAMPLE_INTERVAL`] while the workers run, and once more after
/// they stopped. With standard error a terminal, a progress line shows the
/// ops so far while the workers run.
fn drive<L: Sync>(
    limiters: &[L],
    plan: RunPlan<'_>,
    start: impl FnOnce(&[L]) -> u64,
    backlog: Option<fn(&[L]) -> u64>,
    work: impl Work<L>,
) -> anyhow::Result<Outcome> {
    let RunPlan {
        clock,
        threads,
        duration,
        count,
        bucket,
        target_rate,
        interrupt,
        interruptible,
    } = plan;
    let remaining = AtomicU64::new(count.unwrap_or(0));
    let gate: Gate = (Mutex::new(None), Condvar::new());
    // Counters only when there is a line to show them on.
    let counters: Option<Arc<[OpCounter]>> =
        progress::enabled().then(|| (0..threads).map(|_| OpCounter::default()).collect());
    // Every worker holds a sender; the channel disconnects when all are gone
    // (returned or panicked), which ends the sampling without polling.
    let (done_tx, done_rx) = mpsc::channel::<()>();

    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads as usize);
        for i in 0..threads {
            let limiter = &limiters[i as usize % limiters.len()];
            let ctx = Ctx {
                clock: &clock,
                gate: &gate,
                remaining: &remaining,
                interrupt,
                interruptible,
                progress: counters.as_deref().map(|c| &c[i as usize]),
            };
            let work = &work;
            let done = done_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("pace-{i}"))
                .spawn_scoped(scope, move || {
                    let _done = done;
                    work(limiter, &ctx)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    open_gate(&gate, Err(()));
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(anyhow::Error::new(e)
                        .context(format!("starting worker thread {} of {threads}", i + 1)));
                }
            }
        }
        drop(done_tx);
        let t0 = start(limiters);
        let stop = match duration {
            Some(d) => Stop::Deadline(t0.saturating_add(duration_nanos(d))),
            None => Stop::Count,
        };
        let cpu_start = process_cpu_nanos();
        let own_cpu_start = thread_cpu_nanos();
        open_gate(&gate, Ok(Go { stop, t0, bucket }));
        let line = counters.clone().and_then(|c| {
            Progress::start("ops", target_rate, move || Snapshot {
                // Ordering: Relaxed; gauges.
                ops: c.iter().map(|n| n.0.load(Ordering::Relaxed)).sum(),
                detail: String::new(),
            })
        });
        let mut max_backlog_ns = 0;
        if let Some(sample) = backlog {
            while let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(BACKLOG_SAMPLE_INTERVAL)
            {
                max_backlog_ns = max_backlog_ns.max(sample(limiters));
            }
        }
        let mut results = Vec::with_capacity(handles.len());
        let mut panicked = false;
        for h in handles {
            match h.join() {
                Ok(r) => results.push(r),
                Err(_) => panicked = true,
            }
        }
        let cpu_end = process_cpu_nanos();
        let own_cpu_end = thread_cpu_nanos();
        if let Some(line) = line {
            line.finish();
        }
        if panicked {
            anyhow::bail!("a worker thread panicked");
        }
        if let Some(sample) = backlog {
            max_backlog_ns = max_backlog_ns.max(sample(limiters));
        }
        let t_end = results
            .iter()
            .map(|r| r.finished)
            .max()
            .unwrap_or_else(|| clock.now_nanos());
        // The reporting thread's own CPU time (sampling) is not the limiter's.
        let own = match (own_cpu_start, own_cpu_end) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        };
        let cpu_ns = match (cpu_start, cpu_end) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a).saturating_sub(own)),
            _ => None,
        };
        Ok(Outcome {
            results,
            t0,
            t_end,
            cpu_ns,
            max_backlog_ns,
        })
    })
}

/// How `pace`'s workers reach the limiter they share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// The shared limiter's exact path.
    Exact,
    /// A batching handle per worker (`--batch`): a [`PacerHandle`] on a
    /// Pacer, a [`BatchHandle`] on any other limiter.
    ///
    /// [`PacerHandle`]: ratekeeper::PacerHandle
    Batched,
    /// A shard handle per worker on a pacer of this many shards (`--shards`).
    Sharded(usize),
}

impl Access {
    /// The access `args` ask for (`check_limiter_options` leaves `--shards`
    /// to the Pacer).
    fn of(args: &PaceArgs) -> Access {
        match args.shards {
            Some(n) => Access::Sharded(n),
            None if args.batch => Access::Batched,
            None => Access::Exact,
        }
    }

    /// The name the JSON report gives.
    fn name(self) -> &'static str {
        match self {
            Access::Exact => "exact",
            Access::Batched => "batched",
            Access::Sharded(_) => "sharded",
        }
    }
}

/// What the report says about the limiter, per kind.
#[derive(Debug, Clone, Copy)]
enum LimiterInfo {
    Pacer {
        strictness: f64,
        precise: bool,
    },
    Pool {
        burst_ratio: f64,
        /// The filling in effect.
        filling: Filling,
        max_backlog_ns: u64,
        fills: u64,
    },
    Bursty {
        max_burst_seconds: f64,
        resolution: Resolution,
    },
    Warmup {
        warmup: Duration,
        cold_factor: f64,
        resolution: Resolution,
    },
    /// Resilience4j's limiters.
    Permits {
        limit_for_period: i64,
        refresh_period: Duration,
        timeout: Duration,
        /// The refill limiter's capacity and initial permits; `None` for
        /// the cycle limiter.
        bucket: Option<(i64, i64)>,
        refused: u64,
    },
}

/// The result of a `pace` run; `Display` is the text report, `Serialize` the
/// JSON one (schema in [`AFTER_LONG_HELP`]). Fields that apply to one limiter
/// only are `None` for the other and left out of the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct PaceReport {
    spec: String,
    limiter: &'static str,
    target_rate: f64,
    /// What the limiters' integer arithmetic gives (null: no limit).
    effective_rate: Option<f64>,
    /// The text report's note when the effective rate is off the target.
    #[serde(skip)]
    effective_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strictness: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strictness_mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_policy: Option<&'static str>,
    /// How the workers reach the limiter: "exact", "batched" or "sharded".
    access: &'static str,
    /// The sharded pacer's shard count.
    #[serde(skip_serializing_if = "Option::is_none")]
    shards: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filling: Option<&'static str>,
    /// `Some(None)` (JSON null) for a pool filled inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    fill_interval_ns: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_burst_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warmup_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cold_factor: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolution: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit_for_period: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refresh_period_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_permits: Option<i64>,
    threads: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pacers: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pools: Option<u32>,
    /// Guava's and Resilience4j's limiters: how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    limiters: Option<u32>,
    mode: &'static str,
    duration_ns: Option<u64>,
    count: Option<u64>,
    ops: u64,
    elapsed_ns: u64,
    wall_ns: u64,
    achieved_rate: f64,
    wait_ns: WaitSummary,
    backlog_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_backlog_ns: Option<u64>,
    total_wait_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    fills: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<u64>,
    cpu_ns: Option<u64>,
    cpu_ns_per_op: Option<u64>,
    interrupted: bool,
}

impl PaceReport {
    /// Whether Ctrl-C ended the run.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
}

pub(crate) fn strictness_mode_name(s: f64) -> &'static str {
    match Strictness::new(s).map(Strictness::mode) {
        Ok(StrictnessMode::Average) => "average",
        Ok(StrictnessMode::Compensate { .. }) => "burst_compensation",
        Ok(StrictnessMode::Strict) => "strict",
        Ok(StrictnessMode::Burst(_)) => "burst_ratio",
        Err(_) => "invalid",
    }
}

pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Refuses options the chosen limiter does not take, a burst ratio given to
/// a Guava or Resilience4j limiter, and `--limiter warmup` without
/// `--warmup`.
fn check_limiter_options(args: &PaceArgs) -> Result<(), UsageError> {
    use LimiterKind::{Bursty, Cycle, Pacer, Pool, Refill, Warmup};
    let kind = args.limiter;
    let refuse = |msg: &str| Err(UsageError(msg.to_owned()));
    // The messages that say more than "belongs to another limiter".
    match kind {
        Pacer => {
            let strictness = args.strictness.unwrap_or(args.rate.burst_ratio());
            if args.batch && strictness >= 1.0 {
                return Err(UsageError(format!(
                    "--batch needs a strictness below 1 (average or burst compensation), \
                     not {strictness}: in strict and burst-ratio modes every op is spaced \
                     against every other on the pacer's shared timeline, so a handle could \
                     only take the exact path; add --strictness 0 (average) or a value \
                     between 0 and 1 (burst compensation); the other limiters take --batch at \
                     any setting"
                )));
            }
            if args.shards.is_some() && args.rate.scope() == Scope::Thread {
                return refuse(
                    "--shards splits the one pacer the workers share; with the thread scope \
                     every worker already has a pacer of its own (drop \",thread\" from the \
                     spec, or --shards)",
                );
            }
            if args.fill.is_some() {
                return refuse("--fill is a token pool option; add --limiter pool to use it");
            }
            if args.fill_interval.is_some() {
                return refuse(
                    "--fill-interval is a token pool option; add --limiter pool --fill thread \
                     to use it",
                );
            }
        }
        Pool => {
            if args.strictness.is_some() {
                return refuse(
                    "--strictness is a Pacer option and cannot be used with --limiter pool; \
                     the pool's burst ratio is the rate spec's (e.g. --rate 10k,1.5)",
                );
            }
            if args.precise {
                return refuse(
                    "--precise is a Pacer option (its wait policy) and cannot be used with \
                     --limiter pool, whose waiting callers sleep until a fill gives them tokens",
                );
            }
            if args.fill_interval.is_some() && args.fill != Some(FillKind::Thread) {
                return refuse(
                    "--fill-interval needs --fill thread (with the default --fill inline, \
                     callers refill the pool themselves and there is no interval)",
                );
            }
        }
        Cycle => {
            for (flag, given) in [
                ("--capacity", args.capacity.is_some()),
                ("--initial-permits", args.initial_permits.is_some()),
            ] {
                if given {
                    return Err(UsageError(format!(
                        "{flag} is a RefillLimiter option and cannot be used with --limiter \
                         cycle: a cycle starts with its limit for period (rate x refresh \
                         period) and unused permits do not carry over; add --limiter refill \
                         to use it"
                    )));
                }
            }
        }
        Bursty | Warmup | Refill => {}
    }
    // Every limiter's own options, refused with the others.
    const R4J: &[LimiterKind] = &[Refill, Cycle];
    let options: [(&str, bool, &[LimiterKind]); 12] = [
        ("--strictness", args.strictness.is_some(), &[Pacer]),
        ("--precise", args.precise, &[Pacer]),
        ("--shards", args.shards.is_some(), &[Pacer]),
        ("--fill", args.fill.is_some(), &[Pool]),
        ("--fill-interval", args.fill_interval.is_some(), &[Pool]),
        ("--max-burst", args.max_burst.is_some(), &[Bursty]),
        ("--warmup", args.warmup.is_some(), &[Warmup]),
        ("--cold-factor", args.cold_factor.is_some(), &[Warmup]),
        ("--refresh-period", args.refresh_period.is_some(), R4J),
        ("--timeout", args.timeout.is_some(), R4J),
        ("--capacity", args.capacity.is_some(), &[Refill]),
        (
            "--initial-permits",
            args.initial_permits.is_some(),
            &[Refill],
        ),
    ];
    for (flag, given, owners) in options {
        if given && !owners.contains(&kind) {
            let owner_title = match owners {
                [Pacer] => "a Pacer",
                [Pool] => "a token pool",
                [Bursty] => "a SmoothBursty",
                [Warmup] => "a SmoothWarmingUp",
                [Refill] => "a RefillLimiter",
                _ => "a Resilience4j limiter (refill, cycle)",
            };
            let add = owners
                .iter()
                .map(|o| format!("--limiter {}", o.name()))
                .collect::<Vec<_>>()
                .join(" or ");
            return Err(UsageError(format!(
                "{flag} is {owner_title} option and cannot be used with --limiter {}; add \
                 {add} to use it",
                kind.name(),
            )));
        }
    }
    if matches!(kind, Bursty | Warmup | Refill | Cycle) {
        let burst = args.rate.burst_ratio();
        if burst != RateSpec::DEFAULT_BURST_RATIO {
            let (family, hint) = match kind {
                Bursty => (
                    "Guava's",
                    "; the burst it stores while idle is --max-burst SECONDS",
                ),
                Warmup => ("Guava's", ""),
                Refill => (
                    "Resilience4j's",
                    "; the burst the bucket stores is --capacity N",
                ),
                _ => (
                    "Resilience4j's",
                    "; a cycle's burst is its limit for period, rate x --refresh-period",
                ),
            };
            return Err(UsageError(format!(
                "the rate spec's burst ratio {burst} has no meaning for --limiter {}: {family} \
                 limiters take only a rate; give the rate alone (e.g. --rate {}){hint}",
                kind.name(),
                args.rate.rate().get()
            )));
        }
    }
    if kind == Warmup && args.warmup.is_none() {
        return refuse(
            "--limiter warmup needs --warmup DUR, the warm-up period (e.g. --warmup 2s), as \
             Guava's RateLimiter.create(rate, warmupPeriod) does; --warmup 0s means no warm-up",
        );
    }
    Ok(())
}

/// Runs `pace` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] for an option the limiter does not take or a
/// configuration the library refuses; an I/O error if a worker thread cannot
/// be started; an error if a worker panicked.
pub fn run(args: &PaceArgs, interrupt: &Interrupt) -> anyhow::Result<PaceReport> {
    check_limiter_options(args)?;
    let access = Access::of(args);
    let spec = args.rate;
    let threads = args.threads;
    let limiter_count = if spec.scope() == Scope::Thread {
        threads
    } else {
        1
    };
    // clap rejects --duration together with --count.
    let count = args.count;
    let duration = match count {
        Some(_) => None,
        None => Some(args.duration.unwrap_or(DEFAULT_DURATION)),
    };
    let target_rate = spec.rate().get() * f64::from(limiter_count);
    // With --plot: fail before the run if the file cannot be written, and
    // pick the buckets the workers aggregate their ops into.
    let bucket = match &args.plot {
        None => None,
        Some(to) => {
            // The run's length: exact with --duration, expected with --count.
            let span = match (duration, count) {
                (Some(d), _) => duration_nanos(d),
                (None, Some(n)) => (n as f64 * 1e9 / target_rate) as u64,
                (None, None) => 0,
            };
            let width = match args.bucket {
                Some(b) => duration_nanos(b),
                None => plot::auto_bucket(span, target_rate),
            };
            plot::check_bucket(span, width).map_err(UsageError)?;
            to.check_writable()?;
            Some(width)
        }
    };
    // One clock for every limiter, so their readings compare.
    let plan = RunPlan {
        clock: DefaultClock::new(),
        threads,
        duration,
        count,
        bucket,
        target_rate,
        interrupt,
        interruptible: true,
    };

    let (mut outcome, info, backlog_ns, total_wait_ns, effective) = match args.limiter {
        LimiterKind::Pacer => run_pacers(args, plan, limiter_count)?,
        LimiterKind::Pool => run_pools(args, plan, limiter_count)?,
        LimiterKind::Bursty => run_bursty(args, plan, limiter_count)?,
        LimiterKind::Warmup => run_warmup(args, plan, limiter_count)?,
        LimiterKind::Refill | LimiterKind::Cycle => run_permits(args, plan, limiter_count)?,
    };
    if let Some(e) = outcome.results.iter_mut().find_map(|r| r.error.take()) {
        return Err(e);
    }
    let interrupted = outcome.results.iter().any(|r| r.interrupted);

    let mut waits = WaitRecorder::new();
    for r in &outcome.results {
        waits.merge(&r.waits);
    }
    let ops = waits.count();
    let last_start = outcome.results.iter().filter_map(|r| r.last_start).max();
    let t0 = outcome.t0;
    let elapsed_ns = match duration {
        Some(d) if !interrupted => duration_nanos(d),
        _ => {
            // One slot of the target schedule: N ops take N slots.
            let slot = (1e9 / target_rate).round() as u64;
            last_start
                .unwrap_or(t0)
                .saturating_sub(t0)
                .saturating_add(slot)
        }
    };
    let achieved_rate = if elapsed_ns == 0 {
        0.0
    } else {
        ops as f64 * 1e9 / elapsed_ns as f64
    };
    let cpu_ns = outcome.cpu_ns;
    let cpu_ns_per_op = match cpu_ns {
        Some(c) if ops > 0 => Some((c as f64 / ops as f64).round() as u64),
        _ => None,
    };

    let mut report = PaceReport {
        spec: spec.to_string(),
        limiter: args.limiter.name(),
        target_rate,
        effective_rate: effective.json(),
        effective_note: effective.note(target_rate),
        strictness: None,
        strictness_mode: None,
        wait_policy: None,
        access: access.name(),
        shards: match access {
            Access::Sharded(n) => Some(n),
            _ => None,
        },
        burst_ratio: None,
        filling: None,
        fill_interval_ns: None,
        max_burst_seconds: None,
        warmup_ns: None,
        cold_factor: None,
        resolution: None,
        limit_for_period: None,
        refresh_period_ns: None,
        timeout_ns: None,
        capacity: None,
        initial_permits: None,
        threads,
        pacers: None,
        pools: None,
        limiters: None,
        mode: if duration.is_some() {
            "duration"
        } else {
            "count"
        },
        duration_ns: duration.map(duration_nanos),
        count,
        ops,
        elapsed_ns,
        wall_ns: outcome.t_end.saturating_sub(t0),
        achieved_rate,
        wait_ns: waits.summary(),
        backlog_ns,
        max_backlog_ns: None,
        total_wait_ns,
        fills: None,
        refused: None,
        cpu_ns,
        cpu_ns_per_op,
        interrupted,
    };
    match info {
        LimiterInfo::Pacer {
            strictness,
            precise,
        } => {
            report.strictness = Some(strictness);
            report.strictness_mode = Some(strictness_mode_name(strictness));
            report.wait_policy = Some(if precise { "precise" } else { "default" });
            report.pacers = Some(limiter_count);
        }
        LimiterInfo::Pool {
            burst_ratio,
            filling,
            max_backlog_ns,
            fills,
        } => {
            report.burst_ratio = Some(burst_ratio);
            let (name, interval) = match filling {
                Filling::Thread(i) => ("thread", Some(duration_nanos(i))),
                _ => ("inline", None),
            };
            report.filling = Some(name);
            report.fill_interval_ns = Some(interval);
            report.pools = Some(limiter_count);
            report.max_backlog_ns = Some(max_backlog_ns);
            report.fills = Some(fills);
        }
        LimiterInfo::Bursty {
            max_burst_seconds,
            resolution,
        } => {
            report.max_burst_seconds = Some(max_burst_seconds);
            report.resolution = Some(resolution_name(resolution));
            report.limiters = Some(limiter_count);
        }
        LimiterInfo::Warmup {
            warmup,
            cold_factor,
            resolution,
        } => {
            report.warmup_ns = Some(duration_nanos(warmup));
            report.cold_factor = Some(cold_factor);
            report.resolution = Some(resolution_name(resolution));
            report.limiters = Some(limiter_count);
        }
        LimiterInfo::Permits {
            limit_for_period,
            refresh_period,
            timeout,
            bucket,
            refused,
        } => {
            report.limit_for_period = Some(limit_for_period);
            report.refresh_period_ns = Some(duration_nanos(refresh_period));
            report.timeout_ns = Some(duration_nanos(timeout));
            report.capacity = bucket.map(|(capacity, _)| capacity);
            report.initial_permits = bucket.map(|(_, initial)| initial);
            report.refused = Some(refused);
            report.limiters = Some(limiter_count);
        }
    }
    if let (Some(to), Some(width)) = (&args.plot, bucket) {
        let mut buckets = Buckets::new(width);
        for b in outcome.results.iter().filter_map(|r| r.buckets.as_ref()) {
            buckets.merge(b);
        }
        plot::write(to, &pace_plot(&report, &buckets))?;
    }
    Ok(report)
}

/// The `--plot` of a run: the achieved rate per bucket against the target,
/// and the longest and mean wait per bucket.
fn pace_plot(report: &PaceReport, buckets: &Buckets) -> Plot {
    let span = report.elapsed_ns;
    let end_secs = span as f64 / 1e9;
    let run = match (report.duration_ns, report.count) {
        (Some(d), _) => format!("--duration {}", fmt_duration(d)),
        (None, Some(n)) => format!("--count {n}"),
        (None, None) => String::new(),
    };
    let series = |name: &str, color, points| Series {
        name: name.to_owned(),
        color,
        dashed: false,
        width: 2,
        points,
    };
    Plot {
        title: format!(
            "ratekeeper pace --limiter {} --rate {} --threads {} {run}",
            report.limiter, report.spec, report.threads
        ),
        end_secs,
        rate: Panel {
            title: format!(
                "ops per {} bucket, as a rate (target dashed)",
                fmt_duration(buckets.width())
            ),
            quantity: "rate".to_owned(),
            unit: Unit::Rate,
            series: vec![
                series(
                    "achieved",
                    plot::PALETTE[0],
                    plot::rate_points(buckets, span),
                ),
                plot::target_series(
                    format!("target {}", fmt_rate(report.target_rate)),
                    plot::TARGET,
                    report.target_rate,
                    end_secs,
                ),
            ],
        },
        wait: Panel {
            title: "wait (start - scheduled) of the ops in each bucket".to_owned(),
            quantity: "wait".to_owned(),
            unit: Unit::Nanos,
            series: vec![
                series(
                    "longest wait",
                    plot::PALETTE[3],
                    plot::wait_points(buckets, WaitStat::Max),
                ),
                series(
                    "mean wait",
                    plot::PALETTE[0],
                    plot::wait_points(buckets, WaitStat::Mean),
                ),
            ],
        },
    }
}

/// The outcome of a run, what to report about its limiter, the summed
/// backlog and total wait of its limiters at the end, and their effective
/// rate.
type Ran = (Outcome, LimiterInfo, u64, u64, EffectiveRate);

/// Warns on standard error, before the run, when the limiters' effective
/// rate is off the target; returns it for the report.
fn announce(plan: &RunPlan<'_>, kind: LimiterKind, effective: EffectiveRate) -> EffectiveRate {
    effective.warn(
        &format!("--limiter {}", kind.name()),
        plan.target_rate,
        "ops",
    );
    effective
}

/// The summed effective rate of `limiters`.
fn summed_rate<L>(limiters: &[L], rate: impl Fn(&L) -> f64) -> f64 {
    limiters.iter().map(rate).sum()
}

/// The summed [`RateLimiter::wait_stats`] of `limiters`: backlog, total wait.
fn summed_wait_stats<L: RateLimiter>(limiters: &[L]) -> (u64, u64) {
    limiters.iter().fold((0u64, 0u64), |(b, t), l| {
        let s = l.wait_stats();
        (
            b.saturating_add(s.backlog_nanos),
            t.saturating_add(s.total_wait_nanos),
        )
    })
}

/// A run with `count` [`Pacer`]s.
fn run_pacers(args: &PaceArgs, plan: RunPlan<'_>, count: u32) -> anyhow::Result<Ran> {
    let spec = args.rate;
    let strictness = args.strictness.unwrap_or(spec.burst_ratio());
    let policy = if args.precise {
        WaitPolicy::precise(PRECISE_SPIN)
    } else {
        WaitPolicy::default()
    };
    let clock = plan.clock;
    if let Some(shards) = args.shards {
        return run_sharded(args, plan, strictness, policy, shards);
    }
    let pacers = (0..count)
        .map(|_| {
            Pacer::from_spec(&spec)
                .and_then(|b| {
                    b.strictness(strictness)
                        .wait_policy(policy)
                        .build_with_clock(clock)
                })
                .map_err(|e| {
                    anyhow::Error::new(e).context(UsageError(format!(
                        "cannot pace at rate spec \"{spec}\" with strictness {strictness}"
                    )))
                })
        })
        .collect::<anyhow::Result<Vec<Pacer>>>()?;
    let effective = announce(
        &plan,
        LimiterKind::Pacer,
        EffectiveRate::pacer(
            summed_rate(&pacers, Pacer::effective_rate),
            pacers.first().map_or(0, Pacer::nanos_per_op),
            "op",
        ),
    );
    let start = |pacers: &[Pacer]| {
        // Start every schedule now; the run starts at the earliest one.
        for p in pacers {
            p.restart();
        }
        pacers
            .iter()
            .map(Pacer::next_slot_nanos)
            .min()
            .unwrap_or_else(|| clock.now_nanos())
    };
    let outcome = if args.batch {
        // One handle per worker thread, made on that thread.
        drive(&pacers, plan, start, None, |p: &Pacer, ctx: &Ctx<'_>| {
            worker(&p.handle(), ctx)
        })?
    } else {
        drive(&pacers, plan, start, None, worker)?
    };
    let (backlog, total_wait) = summed_wait_stats(&pacers);
    let info = LimiterInfo::Pacer {
        strictness,
        precise: args.precise,
    };
    Ok((outcome, info, backlog, total_wait, effective))
}

/// A run with one [`ShardedPacer`] of `shards` shards shared by every
/// worker, each through its own [`ShardHandle`](ratekeeper::ShardHandle).
fn run_sharded(
    args: &PaceArgs,
    plan: RunPlan<'_>,
    strictness: f64,
    policy: WaitPolicy,
    shards: usize,
) -> anyhow::Result<Ran> {
    let spec = args.rate;
    let clock = plan.clock;
    let pacer = Pacer::from_spec(&spec)
        .map_err(ShardError::from)
        .and_then(|b| {
            b.strictness(strictness)
                .wait_policy(policy)
                .build_sharded_with_clock(shards, clock)
        })
        .map_err(|e| {
            anyhow::Error::new(e).context(UsageError(format!(
                "cannot pace at rate spec \"{spec}\" with strictness {strictness} in {shards} \
                 shards"
            )))
        })?;
    let effective = announce(
        &plan,
        LimiterKind::Pacer,
        EffectiveRate::sharded(pacer.effective_rate(), shards),
    );
    let pacers = [pacer];
    let start = |pacers: &[ShardedPacer]| {
        // Every shard's schedule starts at the restart.
        let t0 = clock.now_nanos();
        for p in pacers {
            p.restart();
        }
        t0
    };
    let outcome = drive(
        &pacers,
        plan,
        start,
        None,
        |p: &ShardedPacer, ctx: &Ctx<'_>| worker(&p.handle(), ctx),
    )?;
    let (backlog, total_wait) = summed_wait_stats(&pacers);
    let info = LimiterInfo::Pacer {
        strictness,
        precise: args.precise,
    };
    Ok((outcome, info, backlog, total_wait, effective))
}

/// The summed backlog (waiting pools) of `pools` now.
fn summed_backlog(pools: &[TokenPool]) -> u64 {
    pools
        .iter()
        .fold(0u64, |sum, p| sum.saturating_add(p.backlog_nanos()))
}

/// A run with `count` [`TokenPool`]s.
fn run_pools(args: &PaceArgs, plan: RunPlan<'_>, count: u32) -> anyhow::Result<Ran> {
    let spec = args.rate;
    let filling = match args.fill.unwrap_or(FillKind::Inline) {
        FillKind::Inline => Filling::Inline,
        FillKind::Thread => Filling::Thread(args.fill_interval.unwrap_or(DEFAULT_FILL_INTERVAL)),
    };
    let clock = plan.clock;
    let pools = (0..count)
        .map(|_| {
            TokenPool::from_spec(&spec)
                .filling(filling)
                // Built idle, so that no filler thread runs while the workers
                // start; `restart` below starts them all.
                .verb(Verb::Configure)
                .build_with_clock(clock)
                .map_err(|e| {
                    anyhow::Error::new(e).context(UsageError(format!(
                        "cannot build a token pool at rate spec \"{spec}\" with filling {filling}"
                    )))
                })
        })
        .collect::<anyhow::Result<Vec<TokenPool>>>()?;
    let effective = announce(
        &plan,
        LimiterKind::Pool,
        EffectiveRate::pool(
            summed_rate(&pools, TokenPool::effective_rate),
            pools.first().map_or(0, TokenPool::nanos_per_op),
            "op",
        ),
    );
    let start = |pools: &[TokenPool]| {
        // Each pool's schedule starts at its restart; the run starts just
        // before the first.
        let t0 = clock.now_nanos();
        for p in pools {
            p.restart();
        }
        t0
    };
    // A waiting claim is filled by its waiter (inline filling): its wait is
    // left to the pool, not slept on the interrupt first.
    let plan = RunPlan {
        interruptible: false,
        ..plan
    };
    let work = work_on::<TokenPool>(args.batch);
    let outcome = drive(&pools, plan, start, Some(summed_backlog), work)?;
    let (backlog_ns, total_wait) = summed_wait_stats(&pools);
    // A pool falls back to inline filling if its filler thread cannot start.
    let in_effect = pools
        .iter()
        .map(TokenPool::filling)
        .find(|f| *f != filling)
        .unwrap_or(filling);
    let fills = pools
        .iter()
        .fold(0u64, |sum, p| sum.saturating_add(p.fills()));
    let info = LimiterInfo::Pool {
        burst_ratio: spec.burst_ratio(),
        filling: in_effect,
        max_backlog_ns: outcome.max_backlog_ns,
        fills,
    };
    Ok((outcome, info, backlog_ns, total_wait, effective))
}

/// A library error building one of Guava's limiters, as a usage error.
fn smooth_error(e: SmoothError, spec: &RateSpec, kind: LimiterKind) -> anyhow::Error {
    anyhow::Error::new(e).context(UsageError(format!(
        "cannot build --limiter {} at rate spec \"{spec}\"",
        kind.name()
    )))
}

/// How `pace` builds a kind of Guava limiter: `build` on a clock, and its
/// `effective_rate`.
struct SmoothKind<B, E> {
    kind: LimiterKind,
    resolution: Resolution,
    build: B,
    effective_rate: E,
}

/// A run with `count` Guava limiters built by `how`.
fn run_smooth<L, B, E>(
    plan: RunPlan<'_>,
    count: u32,
    batch: bool,
    how: SmoothKind<B, E>,
    info: LimiterInfo,
) -> anyhow::Result<Ran>
where
    L: RateLimiter + Sync,
    B: Fn(DefaultClock) -> anyhow::Result<L>,
    E: Fn(&L) -> f64,
{
    let clock = plan.clock;
    let limiters = (0..count)
        .map(|_| (how.build)(clock))
        .collect::<anyhow::Result<Vec<L>>>()?;
    let effective = announce(
        &plan,
        how.kind,
        EffectiveRate::smooth(
            summed_rate(&limiters, &how.effective_rate),
            limiters.first().map_or(0.0, &how.effective_rate),
            how.resolution,
        ),
    );
    // A Guava limiter's time started when it was built; it has no restart.
    let start = |_: &[L]| clock.now_nanos();
    let outcome = drive(&limiters, plan, start, None, work_on::<L>(batch))?;
    let (backlog, total_wait) = summed_wait_stats(&limiters);
    Ok((outcome, info, backlog, total_wait, effective))
}

/// A run with `count` [`SmoothBursty`] limiters.
fn run_bursty(args: &PaceArgs, plan: RunPlan<'_>, count: u32) -> anyhow::Result<Ran> {
    let spec = args.rate;
    let max_burst_seconds = args.max_burst.unwrap_or(DEFAULT_MAX_BURST_SECONDS);
    // Each limiter runs at the spec's rate (per thread in the thread scope).
    let resolution = Resolution::for_rate(spec.rate().get());
    let build = |clock| {
        SmoothBursty::builder(spec.rate().get())
            .max_burst_seconds(max_burst_seconds)
            .resolution(resolution)
            .build_with_clock(clock)
            .map_err(|e| smooth_error(e, &spec, LimiterKind::Bursty))
    };
    let info = LimiterInfo::Bursty {
        max_burst_seconds,
        resolution,
    };
    let how = SmoothKind {
        kind: LimiterKind::Bursty,
        resolution,
        build,
        effective_rate: SmoothBursty::effective_rate,
    };
    run_smooth(plan, count, args.batch, how, info)
}

/// A run with `count` [`SmoothWarmingUp`] limiters.
fn run_warmup(args: &PaceArgs, plan: RunPlan<'_>, count: u32) -> anyhow::Result<Ran> {
    let spec = args.rate;
    // check_limiter_options refuses --limiter warmup without --warmup.
    let warmup = args.warmup.unwrap_or_default();
    let cold_factor = args.cold_factor.unwrap_or(DEFAULT_COLD_FACTOR);
    let resolution = Resolution::for_rate(spec.rate().get());
    let build = |clock| {
        SmoothWarmingUp::builder(spec.rate().get())
            .warmup(warmup)
            .cold_factor(cold_factor)
            .resolution(resolution)
            .build_with_clock(clock)
            .map_err(|e| smooth_error(e, &spec, LimiterKind::Warmup))
    };
    let info = LimiterInfo::Warmup {
        warmup,
        cold_factor,
        resolution,
    };
    let how = SmoothKind {
        kind: LimiterKind::Warmup,
        resolution,
        build,
        effective_rate: SmoothWarmingUp::effective_rate,
    };
    run_smooth(plan, count, args.batch, how, info)
}

/// Resilience4j's limit for period: `rate × period`, which must be a whole
/// number of permits, at least 1. Otherwise `Err` with `rate × period` and a
/// round period (1 ms to 1000 s) that would hold a whole number, if any.
pub(crate) fn whole_limit(rate: f64, period: Duration) -> Result<i64, (f64, Option<Duration>)> {
    let whole = |period: Duration| {
        let exact = rate * period.as_secs_f64();
        let limit = exact.round();
        let ok = (exact - limit).abs() <= 1e-9 * limit.max(1.0)
            && limit >= 1.0
            && limit < i64::MAX as f64;
        (exact, ok.then_some(limit as i64))
    };
    match whole(period) {
        (_, Some(limit)) => Ok(limit),
        (exact, None) => {
            let suggestion = [1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0, 1000.0]
                .into_iter()
                .map(Duration::from_secs_f64)
                .find(|p| whole(*p).1.is_some());
            Err((exact, suggestion))
        }
    }
}

/// [`whole_limit`], with a message in `pace`'s terms.
fn limit_for_period(rate: f64, period: Duration) -> Result<i64, UsageError> {
    match whole_limit(rate, period) {
        Ok(limit) => Ok(limit),
        Err((exact, suggestion)) => {
            let suggestion = suggestion
                .map(|p| format!(" (e.g. --refresh-period {})", humantime::format_duration(p)))
                .unwrap_or_default();
            Err(UsageError(format!(
                "--rate {rate} with --refresh-period {} gives {exact} permits per period; \
                 the limit for period (rate x refresh period) must be a whole number of \
                 permits from 1 to {}: choose a refresh period that holds a whole number of \
                 permits at this rate{suggestion}",
                humantime::format_duration(period),
                i64::MAX
            )))
        }
    }
}

/// A library error configuring one of Resilience4j's limiters, as a usage
/// error.
fn permit_config_error(e: ConfigError, spec: &RateSpec, kind: LimiterKind) -> anyhow::Error {
    anyhow::Error::new(e).context(UsageError(format!(
        "cannot build --limiter {} at rate spec \"{spec}\"",
        kind.name()
    )))
}

/// The worker loop on a shared Resilience4j limiter whose acquires wait up
/// to `timeout`: through a handle of its own with `--batch`, else through
/// the limiter's `acquire_permission`.
fn permit_work<L: PermitLimiter + RateLimiter>(
    batch: bool,
    timeout: Duration,
) -> impl Fn(&L, &Ctx<'_>) -> WorkerResult + Sync {
    let timeout_nanos = duration_nanos(timeout);
    move |limiter: &L, ctx: &Ctx<'_>| {
        if batch {
            let handle = BatchHandle::new(limiter);
            permit_worker(ctx, || {
                attempt_batched(&handle, timeout, ctx).map_err(anyhow::Error::new)
            })
        } else {
            permit_worker(ctx, || {
                attempt(limiter, timeout_nanos, ctx).map_err(anyhow::Error::new)
            })
        }
    }
}

/// A run with `count` of Resilience4j's limiters ([`RefillLimiter`] or
/// [`CycleLimiter`], per `args.limiter`).
fn run_permits(args: &PaceArgs, plan: RunPlan<'_>, count: u32) -> anyhow::Result<Ran> {
    let spec = args.rate;
    let kind = args.limiter;
    let refresh_period = args.refresh_period.unwrap_or(DEFAULT_REFRESH_PERIOD);
    let limit = limit_for_period(spec.rate().get(), refresh_period)?;
    let mut builder = ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period(refresh_period)
        .timeout(args.timeout.unwrap_or(DEFAULT_TIMEOUT));
    if let Some(c) = args.capacity {
        builder = builder.permit_capacity(c);
    }
    if let Some(i) = args.initial_permits {
        builder = builder.initial_permits(i);
    }
    let clock = plan.clock;
    // Their time starts when they are built; they have no restart.
    let now = move || clock.now_nanos();
    let (mut outcome, bucket, timeout, backlog, total_wait, effective) =
        if kind == LimiterKind::Refill {
            let config = builder
                .build()
                .map_err(|e| permit_config_error(e, &spec, kind))?;
            let limiters: Vec<RefillLimiter> = (0..count)
                .map(|_| RefillLimiter::new_with_clock("pace", config, clock))
                .collect();
            let effective = announce(
                &plan,
                kind,
                EffectiveRate::refill(
                    summed_rate(&limiters, RefillLimiter::effective_rate),
                    config.nanos_per_permit(),
                ),
            );
            let timeout = config.timeout();
            let outcome = drive(
                &limiters,
                plan,
                |_| now(),
                None,
                permit_work(args.batch, timeout),
            )?;
            let (backlog, total_wait) = summed_wait_stats(&limiters);
            let bucket = Some((config.capacity(), config.initial_permits()));
            (outcome, bucket, timeout, backlog, total_wait, effective)
        } else {
            let config = builder
                .build_cycle()
                .map_err(|e| permit_config_error(e, &spec, kind))?;
            let limiters: Vec<CycleLimiter> = (0..count)
                .map(|_| CycleLimiter::new_with_clock("pace", config, clock))
                .collect();
            let effective = announce(
                &plan,
                kind,
                EffectiveRate::cycle(summed_rate(&limiters, CycleLimiter::effective_rate)),
            );
            let timeout = config.timeout();
            let outcome = drive(
                &limiters,
                plan,
                |_| now(),
                None,
                permit_work(args.batch, timeout),
            )?;
            let (backlog, total_wait) = summed_wait_stats(&limiters);
            (outcome, None, timeout, backlog, total_wait, effective)
        };
    if let Some(e) = outcome.results.iter_mut().find_map(|r| r.error.take()) {
        return Err(e.context(format!("--limiter {} refused a single permit", kind.name())));
    }
    let refused = outcome.results.iter().map(|r| r.refused).sum();
    let info = LimiterInfo::Permits {
        limit_for_period: limit,
        refresh_period,
        timeout,
        bucket,
        refused,
    };
    Ok((outcome, info, backlog, total_wait, effective))
}

impl fmt::Display for PaceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.wait_ns;
        let run = match (self.duration_ns, self.count) {
            (Some(d), _) => format!("duration {}", fmt_nanos(d)),
            (None, Some(n)) => format!("count {n}"),
            (None, None) => String::new(),
        };
        writeln!(f, "spec            {}", self.spec)?;
        let limiters = match self.limiter {
            "pool" => {
                let burst = self.burst_ratio.unwrap_or_default();
                writeln!(f, "limiter         token pool (burst ratio {burst})")?;
                let filling = match self.fill_interval_ns {
                    Some(Some(i)) => format!(
                        "thread (a filler thread refills every {})",
                        humantime::format_duration(Duration::from_nanos(i))
                    ),
                    _ => "inline (callers refill the pool when it runs short)".to_owned(),
                };
                writeln!(f, "filling         {filling}")?;
                match self.pools {
                    Some(1) | None => "1 shared pool".to_owned(),
                    Some(n) => format!("{n} pools, one per thread"),
                }
            }
            "bursty" | "warmup" => {
                let per_limiter = self.target_rate / f64::from(self.limiters.unwrap_or(1));
                if self.limiter == "bursty" {
                    let burst = self.max_burst_seconds.unwrap_or_default();
                    writeln!(
                        f,
                        "limiter         Guava SmoothBursty (max burst {burst}s: up to {} \
                         permits stored while idle{})",
                        burst * per_limiter,
                        resolution_note(self.resolution)
                    )?;
                } else if self.warmup_ns == Some(0) {
                    writeln!(
                        f,
                        "limiter         Guava SmoothWarmingUp (warm-up 0s: no warm-up, \
                         permits at the rate{})",
                        resolution_note(self.resolution)
                    )?;
                } else {
                    let warmup = Duration::from_nanos(self.warmup_ns.unwrap_or_default());
                    writeln!(
                        f,
                        "limiter         Guava SmoothWarmingUp (warm-up {}, cold factor {}: a \
                         cold limiter runs at {}{})",
                        humantime::format_duration(warmup),
                        self.cold_factor.unwrap_or_default(),
                        fmt_rate(per_limiter / self.cold_factor.unwrap_or(1.0)),
                        resolution_note(self.resolution)
                    )?;
                }
                match self.limiters {
                    Some(1) | None => "1 shared limiter".to_owned(),
                    Some(n) => format!("{n} limiters, one per thread"),
                }
            }
            "refill" | "cycle" => {
                let limit = self.limit_for_period.unwrap_or_default();
                let period = humantime::format_duration(Duration::from_nanos(
                    self.refresh_period_ns.unwrap_or_default(),
                ));
                let timeout = humantime::format_duration(Duration::from_nanos(
                    self.timeout_ns.unwrap_or_default(),
                ));
                if self.limiter == "refill" {
                    writeln!(
                        f,
                        "limiter         Resilience4j RefillLimiter ({limit} permits per {period}, \
                         refilled one by one; capacity {}, {} initial permits; timeout {timeout})",
                        self.capacity.unwrap_or_default(),
                        self.initial_permits.unwrap_or_default(),
                    )?;
                } else {
                    writeln!(
                        f,
                        "limiter         Resilience4j CycleLimiter ({limit} permits at the start \
                         of each {period} cycle; timeout {timeout})"
                    )?;
                }
                match self.limiters {
                    Some(1) | None => "1 shared limiter".to_owned(),
                    Some(n) => format!("{n} limiters, one per thread"),
                }
            }
            _ => {
                let strictness = self.strictness.unwrap_or_default();
                let mode = self.strictness_mode.unwrap_or_default();
                writeln!(
                    f,
                    "strictness      {strictness} ({})",
                    mode.replace('_', " ")
                )?;
                let policy = match self.wait_policy {
                    Some("precise") => "precise (sleep, then spin 150µs)",
                    _ => "default (early only when a sleep cannot reach the op; grouped at high rates)",
                };
                writeln!(f, "wait policy     {policy}")?;
                match self.pacers {
                    Some(1) | None => "1 shared pacer".to_owned(),
                    Some(n) => format!("{n} pacers, one per thread"),
                }
            }
        };
        match (self.access, self.shards) {
            ("batched", _) => {
                // The Pacer's handle leases slots of its schedule.
                let what = if self.limiter == "pacer" {
                    "slots"
                } else {
                    "permits"
                };
                writeln!(
                    f,
                    "access          batched: a handle per thread leases {what}"
                )?;
            }
            ("sharded", Some(n)) => writeln!(
                f,
                "access          sharded: {n} shards of rate/{n}, work stealing"
            )?,
            _ => {}
        }
        writeln!(f, "threads         {} ({limiters}), {run}", self.threads)?;
        writeln!(f, "target rate     {}", fmt_rate(self.target_rate))?;
        writeln!(
            f,
            "effective rate  {}",
            fmt_effective(self.effective_rate, self.effective_note.as_deref(), "ops")
        )?;
        writeln!(f, "achieved rate   {}", fmt_rate(self.achieved_rate))?;
        writeln!(f, "ops             {}", self.ops)?;
        if self.interrupted {
            writeln!(
                f,
                "interrupted     by Ctrl-C: the report covers the ops granted before it"
            )?;
        }
        writeln!(
            f,
            "elapsed         {} (wall {})",
            fmt_nanos(self.elapsed_ns),
            fmt_nanos(self.wall_ns)
        )?;
        writeln!(f, "wait p50        {}", fmt_nanos(w.p50))?;
        writeln!(f, "wait p90        {}", fmt_nanos(w.p90))?;
        writeln!(f, "wait p99        {}", fmt_nanos(w.p99))?;
        writeln!(f, "wait p99.9      {}", fmt_nanos(w.p999))?;
        writeln!(f, "wait max        {}", fmt_nanos(w.max))?;
        writeln!(f, "wait mean       {}", fmt_nanos(w.mean))?;
        if let Some(max) = self.max_backlog_ns {
            writeln!(
                f,
                "backlog         {} (waiting pool at the end)",
                fmt_nanos(self.backlog_ns)
            )?;
            writeln!(
                f,
                "max backlog     {} (sampled every {})",
                fmt_nanos(max),
                humantime::format_duration(BACKLOG_SAMPLE_INTERVAL)
            )?;
        } else if self.refused.is_some() {
            writeln!(
                f,
                "backlog         {} (time reserved ahead of the clock at the end)",
                fmt_nanos(self.backlog_ns)
            )?;
        } else if self.limiters.is_some() {
            writeln!(
                f,
                "backlog         {} (next free time ahead of the clock at the end)",
                fmt_nanos(self.backlog_ns)
            )?;
        } else {
            writeln!(f, "backlog         {}", fmt_nanos(self.backlog_ns))?;
        }
        // Guava's and Resilience4j's limiters keep no wait total (theirs
        // equals the backlog).
        if self.limiters.is_none() {
            writeln!(f, "total wait      {}", fmt_nanos(self.total_wait_ns))?;
        }
        if let Some(refused) = self.refused {
            let timeout = humantime::format_duration(Duration::from_nanos(
                self.timeout_ns.unwrap_or_default(),
            ));
            writeln!(
                f,
                "refused         {refused} (acquires whose wait would exceed the {timeout} \
                 timeout; not counted in ops)"
            )?;
        }
        if let Some(fills) = self.fills {
            writeln!(f, "fills           {fills}")?;
        }
        match (self.cpu_ns_per_op, self.cpu_ns) {
            (Some(per_op), Some(total)) => writeln!(
                f,
                "cpu per op      {} ({} in all)",
                fmt_nanos(per_op),
                fmt_nanos(total)
            ),
            (None, Some(total)) => writeln!(f, "cpu per op      - ({} in all)", fmt_nanos(total)),
            _ => writeln!(f, "cpu per op      unavailable on this platform"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_name_what_they_expect() {
        assert!(parse_spec("abc").unwrap_err().contains("\"abc\""));
        assert!(parse_spec("2B").unwrap_err().contains("1e9"));
        assert!(parse_threads("0").unwrap_err().contains("at least 1"));
        assert_eq!(parse_threads("3"), Ok(3));
        assert!(parse_count("0").is_err());
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s")
            .unwrap_err()
            .contains("greater than zero"));
        assert!(parse_duration("xyz").unwrap_err().contains("5s"));
        assert_eq!(parse_strictness("0.5"), Ok(0.5));
        assert!(parse_strictness("-1").unwrap_err().contains("negative"));
        assert!(parse_strictness("inf").unwrap_err().contains("finite"));
        assert!(parse_strictness("x").unwrap_err().contains("strict"));
        assert_eq!(parse_warmup("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_warmup("2s"), Ok(Duration::from_secs(2)));
        assert!(parse_warmup("soon").unwrap_err().contains("2s"));
        assert_eq!(parse_cold_factor("3"), Ok(3.0));
        // Below 1 is the library's to refuse, with its message.
        assert_eq!(parse_cold_factor("0.5"), Ok(0.5));
        assert!(parse_cold_factor("inf").unwrap_err().contains("finite"));
        assert!(parse_cold_factor("x").unwrap_err().contains("at least 1"));
        assert_eq!(parse_max_burst("-1"), Ok(-1.0));
        assert!(parse_max_burst("x").unwrap_err().contains("seconds"));
        assert_eq!(parse_timeout("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_timeout("10ms"), Ok(Duration::from_millis(10)));
        assert!(parse_timeout("soon").unwrap_err().contains("10ms"));
        // Ranges are the library's to refuse, with its messages.
        assert_eq!(parse_permits("-3"), Ok(-3));
        assert!(parse_permits("1.5").unwrap_err().contains("whole number"));
    }

    #[test]
    fn limit_for_period_is_a_whole_rate_times_period() {
        let ms = Duration::from_millis;
        assert_eq!(limit_for_period(1000.0, ms(100)).map_err(|e| e.0), Ok(100));
        assert_eq!(limit_for_period(3.0, ms(1000)).map_err(|e| e.0), Ok(3));
        assert_eq!(
            limit_for_period(1e9, ms(1000)).map_err(|e| e.0),
            Ok(1_000_000_000)
        );
        // 0.1 x 10 s is 1.0000000000000002 in floating point: still 1.
        assert_eq!(limit_for_period(0.1, ms(10_000)).map_err(|e| e.0), Ok(1));
        let e = limit_for_period(1000.0, Duration::from_micros(1500))
            .unwrap_err()
            .0;
        assert!(e.contains("1.5 permits per period"), "{e}");
        assert!(e.contains("(e.g. --refresh-period 1ms)"), "{e}");
        let e = limit_for_period(0.5, ms(1000)).unwrap_err().0;
        assert!(e.contains("(e.g. --refresh-period 10s)"), "{e}");
        let e = limit_for_period(1000.0, Duration::from_micros(100))
            .unwrap_err()
            .0;
        assert!(e.contains("0.1 permits per period"), "{e}");
        // No suggestion where no round period holds a whole number.
        let e = limit_for_period(1.0 / 3.0, ms(1000)).unwrap_err().0;
        assert!(!e.contains("e.g."), "{e}");
    }

    #[test]
    fn limiter_names_match_the_value_enum() {
        for kind in LimiterKind::value_variants() {
            let name = kind.to_possible_value().map(|v| v.get_name().to_owned());
            assert_eq!(name.as_deref(), Some(kind.name()));
        }
    }

    #[test]
    fn strictness_modes_are_named() {
        assert_eq!(strictness_mode_name(0.0), "average");
        assert_eq!(strictness_mode_name(0.5), "burst_compensation");
        assert_eq!(strictness_mode_name(1.0), "strict");
        assert_eq!(strictness_mode_name(1.1), "burst_ratio");
    }
}
