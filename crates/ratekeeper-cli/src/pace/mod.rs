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

use clap::Args;
use ratekeeper::config::{
    Access, KindConfig, LimiterConfig, LimiterKind, LimiterRef, LimiterVisitor, SharedLimiter,
};
use ratekeeper::pool::Filling;
use ratekeeper::{AcquireError, Clock, DefaultClock, Grant, RateLimiter, RateSpec, Scope};
use serde::Serialize;

use crate::error::UsageError;
use crate::flags::limiter::{AccessArgs, LimiterArgs};
use crate::flags::{parse_count, parse_duration, parse_spec};
use crate::limiter::{self, wait_policy_name, LimiterFields};
use crate::plot::{self, Buckets, Panel, Plot, PlotPath, Series, Unit, WaitStat};
use crate::progress::{self, Progress, Snapshot};
use crate::report::{
    duration_nanos, fmt_duration, fmt_effective, fmt_nanos, fmt_rate, process_cpu_nanos,
    resolution_note, thread_cpu_nanos, EffectiveRate, WaitRecorder, WaitSummary,
};
use crate::run::interrupt::{self, Interrupt, LONG_WAIT_NANOS};
use crate::run::{self, schedule_span, sleep_until_retry};

/// The most worker threads `--threads` accepts.
const MAX_THREADS: u32 = 4096;

/// How often a token-pool run samples the backlog (the waiting pool) for its
/// maximum.
const BACKLOG_SAMPLE_INTERVAL: Duration = Duration::from_millis(1);

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

/// Options of `ratekeeper pace`.
#[derive(Debug, Clone, Args)]
pub struct PaceArgs {
    /// Rate spec: rate[,burst][,verb][,scope], e.g. 10k, 10k,1.1, 500,1.5,thread.
    #[arg(long, value_name = "SPEC", value_parser = parse_spec)]
    pub rate: RateSpec,

    // The limiter and its options.
    #[command(flatten)]
    pub limiter: LimiterArgs,

    // How the workers reach the limiter: batching handles or shards.
    #[command(flatten)]
    pub access: AccessArgs,

    /// Worker threads (at least 1).
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_threads)]
    pub threads: u32,

    /// Run for this long, e.g. 5s, 500ms, 1m30s [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "count")]
    pub duration: Option<Duration>,

    /// Run exactly this many ops in total, across all threads.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,

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

fn parse_threads(s: &str) -> Result<u32, String> {
    let expected = format!("expected a whole number of threads from 1 to {MAX_THREADS}");
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Ok(0) => Err(format!("at least 1 thread is needed; {expected}")),
        _ => Err(expected),
    }
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
    /// The longest a request may wait (Resilience4j's timeout): a request
    /// that would wait longer is refused, counted, and asked again later.
    max_wait: Option<Duration>,
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

/// What a worker counts besides its ops.
#[derive(Debug, Default)]
struct Tally {
    /// Requests refused by the maximum wait (not ops).
    refused: u64,
    /// A refusal for good, which stopped the worker.
    refusal: Option<AcquireError>,
    /// Whether Ctrl-C stopped the worker.
    interrupted: bool,
}

/// One op's permit: `Some(grant)` once it may go, `None` to stop (Ctrl-C, a
/// refusal for good, or the deadline passing while a refused request waits
/// to ask again). The checks beyond `acquire`'s are a load and a
/// predictable branch or two; a wait long enough to be cut short by Ctrl-C,
/// and a refusal, are taken out of line.
#[inline]
fn next_grant<L: RateLimiter>(
    limiter: &L,
    ctx: &Ctx<'_>,
    deadline: Option<u64>,
    tally: &mut Tally,
) -> Option<Grant> {
    loop {
        if ctx.interrupt.is_set() {
            tally.interrupted = true;
            return None;
        }
        limiter.wait_turn();
        match limiter.reserve(1, ctx.max_wait) {
            Ok(g) if g.delay_nanos() > LONG_WAIT_NANOS => {
                let g = long_wait(limiter, g, ctx.interrupt);
                tally.interrupted = g.is_none();
                return g;
            }
            Ok(g) => return Some(limiter.wait_for(g)),
            Err(e) => {
                if !ask_again(e, ctx, deadline, tally) {
                    return None;
                }
            }
        }
    }
}

/// A refused request. Refused by the maximum wait (Resilience4j's
/// timeout), it is counted, and the worker sleeps until a permit could be
/// granted within the timeout, but not past the deadline or Ctrl-C: `true`
/// to ask again, unless the deadline passed. Any other refusal is for good.
#[cold]
#[inline(never)]
fn ask_again(e: AcquireError, ctx: &Ctx<'_>, deadline: Option<u64>, tally: &mut Tally) -> bool {
    match (e, ctx.max_wait) {
        (AcquireError::WouldWait { wait, .. }, Some(max)) => {
            tally.refused += 1;
            sleep_until_retry(ctx.interrupt, ctx.clock, wait, max, deadline);
            deadline.is_none_or(|d| ctx.clock.now_nanos() < d)
        }
        (e, _) => {
            tally.refusal = Some(e);
            false
        }
    }
}

/// One worker's loop on `limiter` (the shared limiter, or the worker's own
/// handle on it), until the run's stop rule, Ctrl-C or a refusal for good.
fn worker<L: RateLimiter>(limiter: &L, ctx: &Ctx<'_>) -> WorkerResult {
    let clock = ctx.clock;
    let mut waits = WaitRecorder::new();
    let mut last_start = None;
    let mut timeline = None;
    let mut tally = Tally::default();
    let mut ops = 0u64;
    if let Ok(go) = wait_at_gate(ctx.gate) {
        timeline = Timeline::new(&go);
        // An op that started at `now`, measured from its scheduled time.
        let mut record = |now: u64, g: &Grant| {
            let wait = now.saturating_sub(g.scheduled_nanos());
            waits.record(wait);
            if let Some(t) = &mut timeline {
                t.record(now, wait);
            }
            last_start = Some(now);
            ctx.count_op(&mut ops);
        };
        match go.stop {
            Stop::Deadline(deadline) => {
                while let Some(g) = next_grant(limiter, ctx, Some(deadline), &mut tally) {
                    let now = clock.now_nanos();
                    if g.ready_nanos() >= deadline {
                        break;
                    }
                    record(now, &g);
                    if now >= deadline {
                        break;
                    }
                }
            }
            Stop::Count => {
                while ctx.take_one() {
                    let Some(g) = next_grant(limiter, ctx, None, &mut tally) else {
                        break;
                    };
                    record(clock.now_nanos(), &g);
                }
            }
        }
    }
    WorkerResult {
        waits,
        last_start,
        finished: clock.now_nanos(),
        refused: tally.refused,
        error: tally
            .refusal
            .map(|e| anyhow::Error::new(e).context("the limiter refused a permit")),
        interrupted: tally.interrupted,
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
    /// See [`Ctx::max_wait`].
    max_wait: Option<Duration>,
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
        max_wait,
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
                max_wait,
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

/// The name the JSON report gives `access`.
fn access_name(access: Access) -> &'static str {
    match access {
        Access::Batched => "batched",
        Access::Sharded(_) => "sharded",
        _ => "exact",
    }
}

/// What a run measured of its limiters besides the workers' results.
#[derive(Debug, Clone, Copy, Default)]
struct LimiterStats {
    /// The summed backlog and total wait at the end.
    backlog_ns: u64,
    total_wait_ns: u64,
    /// Token pools: the largest backlog sampled, the fills during the run
    /// and the filling in effect (a pool falls back to inline filling if its
    /// filler thread cannot start).
    pool: Option<(u64, u64, Filling)>,
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
    /// The limiter's own parameters.
    #[serde(flatten)]
    fields: LimiterFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_policy: Option<&'static str>,
    /// How the workers reach the limiter: "exact", "batched" or "sharded".
    access: &'static str,
    /// The sharded pacer's shard count.
    #[serde(skip_serializing_if = "Option::is_none")]
    shards: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filling: Option<&'static str>,
    /// `Some(None)` (JSON null) for a pool filled inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    fill_interval_ns: Option<Option<u64>>,
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

/// Runs `pace` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] for an option the limiter does not take or a
/// configuration the library refuses; an I/O error if a worker thread cannot
/// be started; an error if a worker panicked.
pub fn run(args: &PaceArgs, interrupt: &Interrupt) -> anyhow::Result<PaceReport> {
    let spec = args.rate;
    let config = args.limiter.config(&spec, args.access.access())?;
    let limiter_count = if spec.scope() == Scope::Thread {
        args.threads
    } else {
        1
    };
    // clap rejects --duration together with --count.
    let count = args.count;
    let duration = run::duration(args.duration, count);
    let target_rate = spec.rate().get() * f64::from(limiter_count);
    // One clock for every limiter, so their readings compare.
    let plan = RunPlan {
        clock: DefaultClock::new(),
        threads: args.threads,
        duration,
        count,
        bucket: plot::run_buckets(
            args.plot.as_ref(),
            args.bucket,
            duration,
            args.count,
            target_rate,
        )?,
        target_rate,
        interrupt,
        max_wait: config.kind().max_wait(),
    };
    let visitor = Pace {
        plan,
        config: &config,
    };
    let (mut outcome, stats, effective) = config
        .visit_with_clock(plan.clock, limiter_count as usize, visitor)
        .map_err(|e| {
            anyhow::Error::new(e).context(UsageError("cannot build the limiter".into()))
        })??;
    if let Some(e) = outcome.results.iter_mut().find_map(|r| r.error.take()) {
        return Err(e.context(format!("--limiter {}", args.limiter.kind().name())));
    }
    let report = summarize(args, &config, &plan, &outcome, stats, &effective);
    if let (Some(to), Some(width)) = (&args.plot, plan.bucket) {
        let mut buckets = Buckets::new(width);
        for b in outcome.results.iter().filter_map(|r| r.buckets.as_ref()) {
            buckets.merge(b);
        }
        plot::write(to, &pace_plot(&report, &buckets))?;
    }
    Ok(report)
}

/// The run's report from what it measured.
fn summarize(
    args: &PaceArgs,
    config: &LimiterConfig,
    plan: &RunPlan<'_>,
    outcome: &Outcome,
    stats: LimiterStats,
    effective: &EffectiveRate,
) -> PaceReport {
    let interrupted = outcome.results.iter().any(|r| r.interrupted);
    let mut waits = WaitRecorder::new();
    for r in &outcome.results {
        waits.merge(&r.waits);
    }
    let ops = waits.count();
    let last_start = outcome.results.iter().filter_map(|r| r.last_start).max();
    let t0 = outcome.t0;
    let target_rate = plan.target_rate;
    let elapsed_ns = match plan.duration {
        Some(d) if !interrupted => duration_nanos(d),
        _ => schedule_span(t0, last_start, target_rate),
    };
    let achieved_rate = if elapsed_ns == 0 {
        0.0
    } else {
        ops as f64 * 1e9 / elapsed_ns as f64
    };
    let cpu_ns = outcome.cpu_ns;
    let kind = config.kind().limiter_kind();
    let limiters = Some(if args.rate.scope() == Scope::Thread {
        args.threads
    } else {
        1
    });
    let (filling, fill_interval_ns, max_backlog_ns, fills) = match stats.pool {
        Some((max_backlog, fills, Filling::Thread(i))) => (
            Some("thread"),
            Some(Some(duration_nanos(i))),
            Some(max_backlog),
            Some(fills),
        ),
        Some((max_backlog, fills, _)) => {
            (Some("inline"), Some(None), Some(max_backlog), Some(fills))
        }
        None => (None, None, None, None),
    };
    PaceReport {
        spec: args.rate.to_string(),
        limiter: kind.name(),
        target_rate,
        effective_rate: effective.json(),
        effective_note: effective.note(target_rate),
        fields: LimiterFields::of(config),
        wait_policy: (kind == LimiterKind::Pacer).then_some(wait_policy_name(config)),
        access: access_name(config.access()),
        shards: match config.access() {
            Access::Sharded(n) => Some(n),
            _ => None,
        },
        filling,
        fill_interval_ns,
        threads: args.threads,
        pacers: limiters.filter(|_| kind == LimiterKind::Pacer),
        pools: limiters.filter(|_| kind == LimiterKind::Pool),
        limiters: limiters.filter(|_| !matches!(kind, LimiterKind::Pacer | LimiterKind::Pool)),
        mode: run::mode_name(plan.duration),
        duration_ns: plan.duration.map(duration_nanos),
        count: plan.count,
        ops,
        elapsed_ns,
        wall_ns: outcome.t_end.saturating_sub(t0),
        achieved_rate,
        wait_ns: waits.summary(),
        backlog_ns: stats.backlog_ns,
        max_backlog_ns,
        total_wait_ns: stats.total_wait_ns,
        fills,
        refused: config
            .kind()
            .max_wait()
            .map(|_| outcome.results.iter().map(|r| r.refused).sum()),
        cpu_ns,
        cpu_ns_per_op: match cpu_ns {
            Some(c) if ops > 0 => Some((c as f64 / ops as f64).round() as u64),
            _ => None,
        },
        interrupted,
    }
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

/// The run on the limiters a [`LimiterConfig`] built: the workers' loop is
/// compiled for each limiter type and the way workers reach it.
struct Pace<'a> {
    plan: RunPlan<'a>,
    config: &'a LimiterConfig,
}

impl LimiterVisitor for Pace<'_> {
    type Output = anyhow::Result<(Outcome, LimiterStats, EffectiveRate)>;

    fn visit<S: SharedLimiter>(self, limiters: &[S]) -> Self::Output {
        let Pace { plan, config } = self;
        let refs: Vec<LimiterRef<'_, S::Clock>> = limiters.iter().map(|l| l.limiter()).collect();
        let effective = limiter::effective_rate(&refs, config, "op");
        effective.warn(
            &format!("--limiter {}", config.kind().limiter_kind().name()),
            plan.target_rate,
            "ops",
        );
        let is_pool = config.kind().limiter_kind() == LimiterKind::Pool;
        // The pools' fills before the run (each started when it was built).
        let mut fills_before = 0;
        let start = |limiters: &[S]| {
            let refs: Vec<_> = limiters.iter().map(|l| l.limiter()).collect();
            fills_before = summed_fills(&refs);
            limiter::start_schedules(&refs, &plan.clock)
        };
        let backlog = is_pool.then_some(summed_backlog::<S> as fn(&[S]) -> u64);
        // Each worker's way to its limiter is made on its own thread.
        let work = |l: &S, ctx: &Ctx<'_>| worker(&l.worker(), ctx);
        let outcome = drive(limiters, plan, start, backlog, work)?;
        let (backlog_ns, total_wait_ns) = refs.iter().fold((0u64, 0u64), |(b, t), l| {
            let s = l.as_dyn().wait_stats();
            (
                b.saturating_add(s.backlog_nanos),
                t.saturating_add(s.total_wait_nanos),
            )
        });
        let pool = is_pool.then(|| {
            let fills = summed_fills(&refs).saturating_sub(fills_before);
            (
                outcome.max_backlog_ns,
                fills,
                filling_in_effect(&refs, config),
            )
        });
        let stats = LimiterStats {
            backlog_ns,
            total_wait_ns,
            pool,
        };
        Ok((outcome, stats, effective))
    }
}

/// The summed backlog (waiting pools) of the token pools among `limiters`.
fn summed_backlog<S: SharedLimiter>(limiters: &[S]) -> u64 {
    limiters.iter().fold(0u64, |sum, l| match l.limiter() {
        LimiterRef::Pool(p) => sum.saturating_add(p.backlog_nanos()),
        _ => sum,
    })
}

/// The summed fills of the token pools among `limiters`.
fn summed_fills<C: Clock + 'static>(limiters: &[LimiterRef<'_, C>]) -> u64 {
    limiters.iter().fold(0u64, |sum, l| match l {
        LimiterRef::Pool(p) => sum.saturating_add(p.fills()),
        _ => sum,
    })
}

/// The pools' filling in effect: the configured one, unless a pool fell
/// back to inline filling because its filler thread could not start.
fn filling_in_effect<C: Clock + 'static>(
    limiters: &[LimiterRef<'_, C>],
    config: &LimiterConfig,
) -> Filling {
    let configured = match config.kind() {
        KindConfig::Pool { filling, .. } => filling,
        _ => Filling::Inline,
    };
    limiters
        .iter()
        .filter_map(|l| match l {
            LimiterRef::Pool(p) => Some(p.filling()),
            _ => None,
        })
        .find(|f| *f != configured)
        .unwrap_or(configured)
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
                let burst = self.fields.burst_ratio.unwrap_or_default();
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
                    let burst = self.fields.max_burst_seconds.unwrap_or_default();
                    writeln!(
                        f,
                        "limiter         Guava SmoothBursty (max burst {burst}s: up to {} \
                         permits stored while idle{})",
                        burst * per_limiter,
                        resolution_note(self.fields.resolution)
                    )?;
                } else if self.fields.warmup_ns == Some(0) {
                    writeln!(
                        f,
                        "limiter         Guava SmoothWarmingUp (warm-up 0s: no warm-up, \
                         permits at the rate{})",
                        resolution_note(self.fields.resolution)
                    )?;
                } else {
                    let warmup = Duration::from_nanos(self.fields.warmup_ns.unwrap_or_default());
                    writeln!(
                        f,
                        "limiter         Guava SmoothWarmingUp (warm-up {}, cold factor {}: a \
                         cold limiter runs at {}{})",
                        humantime::format_duration(warmup),
                        self.fields.cold_factor.unwrap_or_default(),
                        fmt_rate(per_limiter / self.fields.cold_factor.unwrap_or(1.0)),
                        resolution_note(self.fields.resolution)
                    )?;
                }
                match self.limiters {
                    Some(1) | None => "1 shared limiter".to_owned(),
                    Some(n) => format!("{n} limiters, one per thread"),
                }
            }
            "refill" | "cycle" => {
                let limit = self.fields.limit_for_period.unwrap_or_default();
                let period = humantime::format_duration(Duration::from_nanos(
                    self.fields.refresh_period_ns.unwrap_or_default(),
                ));
                let timeout = humantime::format_duration(Duration::from_nanos(
                    self.fields.timeout_ns.unwrap_or_default(),
                ));
                if self.limiter == "refill" {
                    writeln!(
                        f,
                        "limiter         Resilience4j RefillLimiter ({limit} permits per {period}, \
                         refilled one by one; capacity {}, {} initial permits; timeout {timeout})",
                        self.fields.capacity.unwrap_or_default(),
                        self.fields.initial_permits.unwrap_or_default(),
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
                let strictness = self.fields.strictness.unwrap_or_default();
                let mode = self.fields.strictness_mode.unwrap_or_default();
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
                self.fields.timeout_ns.unwrap_or_default(),
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
    fn threads_are_checked() {
        assert!(parse_threads("0").unwrap_err().contains("at least 1"));
        assert_eq!(parse_threads("3"), Ok(3));
    }
}
