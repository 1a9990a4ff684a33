//! `ratekeeper simulate`: an arrival pattern run through one or more rate
//! limiters on a virtual clock, instantly.
//!
//! Every limiter gets its own [`ManualClock`], built at time 0, and the same
//! arrivals. The model is **open loop**, a load generator's schedule: each
//! arrival, in time order, sets the clock to its time and reserves one permit
//! ([`RateLimiter::reserve`], which decides without sleeping); the op then
//! goes at the grant's ready time. A waiting op holds up nothing: the next
//! arrival asks at its own time, whether or not earlier ops have gone.
//!
//! The token pool is the exception to "reserve and read the ready time": a
//! pool that is short queues a claim that only its fills complete. Here it is
//! filled by hand (`Filling::Manual`) every fill interval, as nosqlbench's
//! filler thread does with a perfect timer, and a queued op goes at the fill
//! that completes its claim.

mod arrivals;

use std::collections::VecDeque;
use std::fmt;
use std::task::Waker;
use std::time::Duration;

use arrivals::Arrivals;
use clap::Args;
use ratekeeper::config::{Access, AnyLimiter, KindConfig, LimiterConfig};
use ratekeeper::pool::{Filling, TokenPool};
use ratekeeper::{AcquireError, Grant, ManualClock, RateLimiter, Readiness};
use serde::Serialize;

use crate::error::UsageError;
use crate::limiter::{self, strictness_mode_name, LimiterFields};
use crate::plot::{self, Buckets, Panel, Plot, PlotPath, Series, Unit, WaitStat};
use crate::report::{
    duration_nanos, fmt_duration, fmt_effective, fmt_nanos, fmt_rate, resolution_note,
    EffectiveRate, WaitSummary,
};

/// The most fills a simulated token pool may take, so that a pattern with a
/// huge backlog and a short fill interval fails quickly instead of running
/// for minutes.
const MAX_FILLS: u64 = 50_000_000;

/// `simulate --help` text above the options.
pub const LONG_ABOUT: &str = "\
Run an arrival pattern through one or more rate limiters on a virtual clock, \
instantly, and show when each op was granted and how long it waited: a \
timeline per limiter, a summary, and with --plot a picture.

The model is open loop, as a load generator's schedule: every arrival asks \
its limiter for one permit at its own arrival time (RateLimiter::reserve on a \
manual clock set to that time), whether or not earlier ops are still waiting; \
an op that waits holds up nothing. Each limiter gets the same arrivals on its \
own clock, and is built at time 0 (Guava's SmoothWarmingUp therefore starts \
cold; SmoothBursty starts with no stored permits).

Arrivals (--arrivals): steps separated by ';', on a timeline from 0s. A \
cursor starts at 0s:
  burst N [@TIME]     N arrivals at once, at the cursor, or at TIME (which \
moves the cursor there; steps never go back in time)
  every DUR for DUR   one arrival every DUR from the cursor, for DUR; the \
cursor moves to the end
  rate RATE for DUR   RATE arrivals per second (e.g. 100, 2.5k) for DUR; the \
cursor moves to the end
  idle DUR            the cursor moves on by DUR
Durations and times are one word each: 0s, 50ms, 2s, 1m30s. At most 1000000 \
arrivals.

Limiters (--limiter KIND:ARGS, once per limiter to compare, at most 9): ARGS \
are comma-separated fields in the order shown; any field may instead be \
written NAME=VALUE (e.g. warmup:10,2s,cold_factor=4), and named fields come \
last. RATE is operations per second in the rate-spec number format: 10, 2.5k, \
1M.
  pacer:RATE[,STRICTNESS]       ratekeeper's Pacer. STRICTNESS as `pace \
--strictness`: 0 average, between 0 and 1 burst compensation, 1 strict, above \
1 burst ratio [default: 1.1]; fields: rate, strictness
  pool:RATE[,BURST][,FILL]      nosqlbench's token pool with burst ratio BURST \
(at least 1) [1.1], filled every FILL (1us to 1s) [1ms], as by its filler \
thread (`pace --fill thread`) on a perfect timer; fields: rate, burst, fill
  bursty:RATE[,MAX_BURST]       Guava's SmoothBursty: idle time stores up to \
MAX_BURST seconds of permits [1]; fields: rate, max_burst
  warmup:RATE,WARMUP[,COLD]     Guava's SmoothWarmingUp: warm-up period WARMUP \
(required; 0s for none), cold factor COLD (at least 1) [3]; fields: rate, \
warmup, cold_factor
  refill:RATE[,PERIOD][,CAPACITY][,INITIAL][,TIMEOUT]   Resilience4j's \
RefillLimiter: RATE x PERIOD permits per PERIOD [1s] (a whole number), a \
bucket of CAPACITY permits [that limit] holding INITIAL permits at time 0 \
[that limit]; fields: rate, period, capacity, initial, timeout
  cycle:RATE[,PERIOD][,TIMEOUT]  Resilience4j's CycleLimiter: RATE x PERIOD \
permits at the start of each PERIOD cycle [1s]; fields: rate, period, timeout
With refill and cycle an arrival whose wait would exceed TIMEOUT [5s, \
Resilience4j's] is refused at once and gets no permit; the other limiters \
grant every arrival. bursty and warmup keep Guava's whole-microsecond \
arithmetic exactly at or below 100000 ops/s; above, they keep their schedule \
in whole nanoseconds (JSON resolution \"nanos\"): whole microseconds would \
charge a permit up to half too little, and above 1000000 ops/s nothing at all.

Timeline (per limiter, the first --rows ops in arrival order; times in \
seconds from 0):
  arrival     when the op arrived
  scheduled   when the limiter's ideal schedule had it: the Pacer's slot, the \
pool's tokens; Guava's and Resilience4j's limiters keep no schedule, so for \
them it is the grant
  granted     when the limiter let it go, or \"refused\"
  wait        granted - arrival: how long the op waited for its permit
  behind      granted - scheduled: how far behind its own schedule the \
limiter granted it (the library's wait time, which a load generator adds to \
the response time)

Summary (per limiter; durations with 3 significant digits, exact in --json):
  target      the limiter's rate (warmup: the stable rate). Where the \
limiter's integer arithmetic gives a rate more than 0.1% off it (the Pacer \
and the pool give each op floor(1e9 / rate) whole nanoseconds: pacer:510M \
runs at 1e9 ops/s; bursty and warmup charge whole microseconds, nanoseconds \
above 100000 ops/s; refill a permit every floor(period / limit) ns), the \
limiter's line above says \"effective\" with that rate and why, and a warning \
on standard error says so too
  granted     ops granted; refused: ops refused (refill, cycle)
  achieved    granted / (last grant - first grant + one interval), where an \
interval is 1 / target: ops granted exactly one interval apart read as the \
target rate
  max burst   the most ops granted in a row, each less than half an interval \
after the one before: 1 means no two ops closer than half an interval
  wait        p50, p99 and max of the granted ops' waits (exact: nearest rank)
  behind      the most any op was behind the limiter's schedule
  last grant  when the last op went

Plot (--plot FILE, SVG or PNG by the extension): the upper panel shows the \
ops granted per time bucket (--bucket) as a rate, one line per limiter, with \
the arrivals in grey and each target rate dashed; the lower panel shows the \
longest wait of the ops granted in each bucket.";

/// Examples, shown by `simulate -h` and `simulate --help`.
pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper simulate --arrivals 'burst 20 @0s; every 50ms for 3s; idle 2s; burst 10' --limiter pacer:10,1.0 --limiter pacer:10,1.5 --limiter warmup:10,2s
  ratekeeper simulate --arrivals 'every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s' --limiter pacer:25,1 --limiter pacer:25,1.5 --limiter pacer:25,0 --limiter warmup:25,1s --rows 0 --plot compare.svg
  ratekeeper simulate --arrivals 'rate 200 for 1s' --limiter refill:100,100ms,capacity=20,timeout=50ms --limiter cycle:100,100ms,timeout=50ms
  ratekeeper simulate --arrivals 'burst 5; idle 1s; burst 5' --limiter pool:10,1.5 --json";

/// `simulate --help` text below the options: examples and the JSON schema.
pub const AFTER_LONG_HELP: &str = "\
Examples:
  ratekeeper simulate --arrivals 'burst 20 @0s; every 50ms for 3s; idle 2s; burst 10' --limiter pacer:10,1.0 --limiter pacer:10,1.5 --limiter warmup:10,2s
  ratekeeper simulate --arrivals 'every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s' --limiter pacer:25,1 --limiter pacer:25,1.5 --limiter pacer:25,0 --limiter warmup:25,1s --rows 0 --plot compare.svg
  ratekeeper simulate --arrivals 'rate 200 for 1s' --limiter refill:100,100ms,capacity=20,timeout=50ms --limiter cycle:100,100ms,timeout=50ms
  ratekeeper simulate --arrivals 'burst 5; idle 1s; burst 5' --limiter pool:10,1.5 --json

JSON output (--json): one object on one line, the same report as the text. \
Durations and times are integer nanoseconds from 0, rates are ops per second \
(floating point):
  pattern          string   the arrival pattern, canonical
  arrivals         integer  how many arrivals it gives
  end_ns           integer  where it ends: its last arrival, or the end of its \
last every, rate or idle step
  model            string   \"open_loop\"
  rows             integer  timeline rows per limiter (--rows); null for all
  limiters         array    one object per --limiter, in order:
    limiter          string   the --limiter value as given
    kind             string   \"pacer\", \"pool\", \"bursty\", \"warmup\", \"refill\" or \"cycle\"
    target_rate      number   the limiter's rate
    effective_rate   number   the rate its integer arithmetic gives (see \
Summary above); null for a limiter that does not limit at all
    strictness       number   (pacer) its strictness
    strictness_mode  string   (pacer) \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
    burst_ratio      number   (pool) its burst ratio
    fill_interval_ns integer  (pool) how often it is filled
    max_burst_seconds number  (bursty) seconds of permits idle time may store
    warmup_ns        integer  (warmup) the warm-up period
    cold_factor      number   (warmup) the cold factor
    resolution       string   (bursty, warmup) the schedule's unit: \"micros\" \
(Guava's, at or below 100000 ops/s) or \"nanos\" (above)
    limit_for_period integer  (refill, cycle) permits per refresh period
    refresh_period_ns integer (refill, cycle) the refresh period
    timeout_ns       integer  (refill, cycle) the longest wait granted
    capacity         integer  (refill) the most permits the bucket stores
    initial_permits  integer  (refill) the permits in the bucket at time 0
    ops              integer  ops granted
    refused          integer  ops refused (0 but for refill and cycle)
    first_grant_ns   integer  the first grant; null if none
    last_grant_ns    integer  the last grant; null if none
    elapsed_ns       integer  last - first grant + one interval; 0 if none
    achieved_rate    number   ops / elapsed; 0 if none
    max_burst        integer  see Summary above
    wait_ns          object   {\"p50\", \"p90\", \"p99\", \"p999\", \"max\", \"mean\"} of \
granted - arrival over the granted ops: exact, nearest rank; mean rounded down
    behind_ns        object   the same of granted - scheduled
    timeline         array    the first --rows ops in arrival order: {\"op\" \
(1-based), \"arrival_ns\", \"refused\", \"scheduled_ns\", \"granted_ns\", \
\"wait_ns\", \"behind_ns\"}; the last four are null for a refused op
    timeline_omitted integer  ops left out of the timeline";

/// Options of `ratekeeper simulate`.
#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    /// The arrival pattern: steps separated by ';' (see above), e.g.
    /// 'burst 20 @0s; every 50ms for 3s; idle 2s; burst 10'.
    #[arg(long, value_name = "PATTERN", value_parser = parse_arrivals)]
    pub arrivals: Arrivals,

    /// A limiter to run the arrivals through, KIND:ARGS (see above), e.g.
    /// pacer:10,1.5 or warmup:10,2s; repeat to compare limiters.
    #[arg(long = "limiter", value_name = "KIND:ARGS", required = true, value_parser = parse_limiter)]
    pub limiters: Vec<LimiterSpec>,

    /// Timeline rows per limiter: a number, or `all`; 0 prints only the
    /// summary.
    #[arg(long, value_name = "N|all", default_value = "100", value_parser = parse_rows)]
    pub rows: Rows,

    /// Draw the granted rate and the waits over time to FILE, an SVG or a
    /// PNG (by its extension).
    #[arg(long, value_name = "FILE", value_parser = plot::parse_plot_path)]
    pub plot: Option<PlotPath>,

    /// The plot's time bucket, e.g. 100ms [default: about a hundredth of the
    /// timeline, and at least 5 ops at the slowest target rate, rounded to
    /// 1, 2 or 5 units].
    #[arg(long, value_name = "DUR", value_parser = parse_bucket, requires = "plot")]
    pub bucket: Option<Duration>,

    /// Print the report as one JSON object (schema in --help).
    #[arg(long)]
    pub json: bool,
}

/// How many timeline rows to show per limiter (`--rows`): `None` for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows(Option<usize>);

fn parse_rows(s: &str) -> Result<Rows, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("all") {
        return Ok(Rows(None));
    }
    s.parse()
        .map(|n| Rows(Some(n)))
        .map_err(|_| "expected a number of rows, such as 20 or 0, or all".to_owned())
}

fn parse_arrivals(s: &str) -> Result<Arrivals, String> {
    s.parse()
        .map_err(|e: arrivals::ArrivalsError| e.to_string())
}

fn parse_bucket(s: &str) -> Result<Duration, String> {
    match humantime::parse_duration(s.trim()) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the bucket must be greater than zero".to_owned()),
        Err(e) => Err(format!("{e}; expected a duration such as 100ms or 1s")),
    }
}

/// A limiter to simulate, as `--limiter` gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct LimiterSpec {
    /// The value as given (trimmed): the limiter's name in the report.
    label: String,
    config: LimiterConfig,
}

/// An error and its sources, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// `--limiter KIND:ARGS`: the library's grammar (which checks the values by
/// each limiter's builder), for a limiter `simulate` can model.
fn parse_limiter(s: &str) -> Result<LimiterSpec, String> {
    let label = s.trim();
    let config: LimiterConfig = label.parse().map_err(|e| chain(&e))?;
    if config.access() != Access::Exact {
        return Err(
            "simulate runs each limiter from one caller, on the limiter itself: \
                    batch and shards are for pace's worker threads (pace --batch, --shards)"
                .to_owned(),
        );
    }
    if !config.wait_policy().is_default() {
        return Err(
            "simulate never waits (an op goes at its grant's ready time), so a wait \
                    policy would change nothing: drop wait="
                .to_owned(),
        );
    }
    if let KindConfig::Pool { filling, .. } = config.kind() {
        if !matches!(filling, Filling::Thread(_)) {
            return Err(format!(
                "fill {filling}: simulate models the pool filled by its filler thread on a \
                 perfect timer; give fill as an interval, 1us to 1s (e.g. fill=1ms)"
            ));
        }
    }
    Ok(LimiterSpec {
        label: label.to_owned(),
        config,
    })
}

/// What happened to one arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Op {
    arrival: u64,
    /// `(scheduled, granted)`, or `None` if refused.
    grant: Option<(u64, u64)>,
}

/// Runs `arrivals` (in order) through the limiter `spec` describes; the
/// ops, and the limiter's effective rate (warned about, on standard
/// error, when it is off the target).
fn simulate(spec: &LimiterSpec, arrivals: &[u64]) -> anyhow::Result<(Vec<Op>, EffectiveRate)> {
    let clock = ManualClock::new(0);
    // The pool is filled here, every fill interval, as its thread would.
    let (config, fill) = match spec.config.kind() {
        KindConfig::Pool {
            rate,
            burst_ratio,
            filling: Filling::Thread(fill),
        } => {
            let manual = KindConfig::Pool {
                rate,
                burst_ratio,
                filling: Filling::Manual,
            };
            (spec.config.with_kind(manual), Some(fill))
        }
        _ => (spec.config, None),
    };
    let built = config
        .build_with_clock(clock.clone())
        .map_err(|e| UsageError(format!("--limiter {}: {}", spec.label, chain(&e))))?;
    let effective = limiter::effective_rate(&[built.as_ref()], &spec.config, "op");
    effective.warn(
        &format!("--limiter {}", spec.label),
        spec.config.kind().rate(),
        "ops",
    );
    let ops = match (&built, fill) {
        (AnyLimiter::Pool(p), Some(fill)) => fill_pool(p, &clock, arrivals, fill),
        _ => reserve_each(&built, &clock, arrivals, spec.config.kind().max_wait()),
    };
    ops.map(|ops| (ops, effective))
        .map_err(|e| e.context(format!("simulating --limiter {}", spec.label)))
}

/// One reservation per arrival, at its time; a reservation refused because
/// its wait would exceed `max_wait` is a refused op.
fn reserve_each<L: RateLimiter>(
    limiter: &L,
    clock: &ManualClock,
    arrivals: &[u64],
    max_wait: Option<Duration>,
) -> anyhow::Result<Vec<Op>> {
    arrivals
        .iter()
        .map(|&t| {
            clock.set_nanos(t);
            match limiter.reserve(1, max_wait) {
                Ok(g) => Ok(Op {
                    arrival: t,
                    grant: Some((g.scheduled_nanos(), g.ready_nanos().max(t))),
                }),
                Err(AcquireError::WouldWait { .. }) if max_wait.is_some() => Ok(Op {
                    arrival: t,
                    grant: None,
                }),
                Err(e) => Err(anyhow::Error::new(e).context("the limiter refused a single permit")),
            }
        })
        .collect()
}

/// The token pool, filled every `fill` from time 0 as by a filler thread on
/// a perfect timer. An arrival that finds too few tokens queues a claim; it
/// is granted at the fill that completes it: after each fill the queued
/// grants are asked, oldest first, whether they may go
/// ([`RateLimiter::poll_grant`], the protocol every waiter drives; the pool
/// serves claims first come, first served).
fn fill_pool(
    pool: &TokenPool<ManualClock>,
    clock: &ManualClock,
    arrivals: &[u64],
    fill: Duration,
) -> anyhow::Result<Vec<Op>> {
    let fill = duration_nanos(fill);
    let too_many = || {
        anyhow::Error::new(UsageError(format!(
            "the pool would need more than {MAX_FILLS} fills of {} to serve this pattern; use a \
             longer fill interval or fewer arrivals",
            fmt_duration(fill)
        )))
    };
    // Fills are simulated one by one only while ops are queued, and each
    // then hands the queue at least min(fill, max_active) tokens: refuse at
    // once a pattern that could need too many.
    let per_fill = fill.min(pool.pools().max_active()).max(1);
    let owed = (arrivals.len() as u128) * u128::from(pool.nanos_per_op());
    if owed / u128::from(per_fill) + arrivals.len() as u128 > u128::from(MAX_FILLS) {
        return Err(too_many());
    }
    let mut ops: Vec<Op> = arrivals
        .iter()
        .map(|&t| Op {
            arrival: t,
            grant: None,
        })
        .collect();
    // Queued claims, oldest first: (op index, grant).
    let mut queued: VecDeque<(usize, Grant)> = VecDeque::new();
    let mut last_fill = 0u64;
    let mut fills = 0u64;
    // Fills due up to `until` (all of them if `until` is None, until no
    // claim is left).
    let mut fill_until = |until: Option<u64>,
                          queued: &mut VecDeque<(usize, Grant)>,
                          ops: &mut Vec<Op>|
     -> anyhow::Result<()> {
        loop {
            let next = last_fill.saturating_add(fill);
            match until {
                Some(u) if next > u => return Ok(()),
                None if queued.is_empty() => return Ok(()),
                _ => {}
            }
            fills += 1;
            if fills > MAX_FILLS {
                return Err(too_many());
            }
            if queued.is_empty() {
                // Nobody waits: one fill for the ticks up to `until` leaves
                // the pools as those ticks one by one would (the pool's
                // jitter normalisation; checked by a test below), so skip
                // through idle time at once.
                let u = until.unwrap_or(next);
                let to = last_fill + (u - last_fill) / fill * fill;
                clock.set_nanos(to);
                pool.refill(to - last_fill)?;
                last_fill = to;
                continue;
            }
            clock.set_nanos(next);
            pool.refill(fill)?;
            while let Some(&(i, g)) = queued.front() {
                if pool.poll_grant(&g, next, Waker::noop()) != Readiness::Go {
                    break;
                }
                ops[i].grant = Some((g.scheduled_nanos(), next));
                queued.pop_front();
            }
            last_fill = next;
        }
    };
    for (i, &t) in arrivals.iter().enumerate() {
        fill_until(Some(t), &mut queued, &mut ops)?;
        clock.set_nanos(t);
        let before = pool.waiters();
        let g = pool
            .reserve(1, None)
            .map_err(|e| anyhow::Error::new(e).context("the pool refused a single permit"))?;
        if pool.waiters() > before {
            queued.push_back((i, g));
        } else {
            ops[i].grant = Some((g.scheduled_nanos(), g.ready_nanos().max(t)));
        }
    }
    fill_until(None, &mut queued, &mut ops)?;
    Ok(ops)
}

/// Exact percentiles (nearest rank), maximum and mean (rounded down) of
/// `values`; all zero for none.
fn exact_summary(values: &mut [u64]) -> WaitSummary {
    if values.is_empty() {
        return WaitSummary::default();
    }
    values.sort_unstable();
    let n = values.len();
    let rank = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let sum: u128 = values.iter().map(|&v| u128::from(v)).sum();
    WaitSummary {
        p50: rank(0.50),
        p90: rank(0.90),
        p99: rank(0.99),
        p999: rank(0.999),
        max: values[n - 1],
        mean: u64::try_from(sum / n as u128).unwrap_or(u64::MAX),
    }
}

/// The most grants in a row each less than half of `interval_ns` after the
/// one before; `granted` sorted.
fn max_burst(granted: &[u64], interval_ns: f64) -> u64 {
    let mut best = 0u64;
    let mut run = 0u64;
    let mut prev: Option<u64> = None;
    for &g in granted {
        run = match prev {
            Some(p) if ((g - p) as f64) < interval_ns / 2.0 => run + 1,
            _ => 1,
        };
        best = best.max(run);
        prev = Some(g);
    }
    best
}

/// One timeline row (JSON: an element of `timeline`).
#[derive(Debug, Clone, Serialize)]
struct Row {
    op: u64,
    arrival_ns: u64,
    refused: bool,
    scheduled_ns: Option<u64>,
    granted_ns: Option<u64>,
    wait_ns: Option<u64>,
    behind_ns: Option<u64>,
}

/// One limiter's part of the report (JSON: an element of `limiters`).
#[derive(Debug, Clone, Serialize)]
struct LimiterReport {
    limiter: String,
    kind: &'static str,
    /// The text report's one-line description.
    #[serde(skip)]
    description: String,
    target_rate: f64,
    /// What the limiter's integer arithmetic gives (null: no limit).
    effective_rate: Option<f64>,
    /// The kind's own parameters.
    #[serde(flatten)]
    fields: LimiterFields,
    /// The pool's fill interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    fill_interval_ns: Option<u64>,
    ops: u64,
    refused: u64,
    first_grant_ns: Option<u64>,
    last_grant_ns: Option<u64>,
    elapsed_ns: u64,
    achieved_rate: f64,
    max_burst: u64,
    wait_ns: WaitSummary,
    behind_ns: WaitSummary,
    timeline: Vec<Row>,
    timeline_omitted: u64,
}

/// The result of a `simulate` run; `Display` is the text report,
/// `Serialize` the JSON one (schema in [`AFTER_LONG_HELP`]).
#[derive(Debug, Clone, Serialize)]
pub struct SimulateReport {
    pattern: String,
    arrivals: u64,
    end_ns: u64,
    model: &'static str,
    rows: Option<usize>,
    limiters: Vec<LimiterReport>,
}

/// The text report's description of a limiter.
fn describe(config: &LimiterConfig) -> String {
    let kind = config.kind();
    let rate = fmt_rate(kind.rate());
    let d = |d: Duration| fmt_duration(duration_nanos(d));
    let resolution = || resolution_note(LimiterFields::of(config).resolution);
    match kind {
        KindConfig::Pacer { strictness, .. } => format!(
            "ratekeeper Pacer, {rate}, strictness {strictness} ({})",
            strictness_mode_name(strictness).replace('_', " ")
        ),
        KindConfig::Pool {
            burst_ratio,
            filling,
            ..
        } => {
            let fill = match filling {
                Filling::Thread(fill) => format!("filled every {}", d(fill)),
                other => format!("filling {other}"),
            };
            format!("nosqlbench token pool, {rate}, burst ratio {burst_ratio}, {fill}")
        }
        KindConfig::Bursty {
            rate: r,
            max_burst_seconds,
        } => format!(
            "Guava SmoothBursty, {rate}, max burst {max_burst_seconds}s ({} permits stored while \
             idle){}",
            max_burst_seconds * r.get(),
            resolution()
        ),
        KindConfig::WarmingUp { warmup, .. } if warmup.is_zero() => {
            format!("Guava SmoothWarmingUp, {rate}, no warm-up{}", resolution())
        }
        KindConfig::WarmingUp {
            rate: r,
            warmup,
            cold_factor,
        } => format!(
            "Guava SmoothWarmingUp, {rate}, warm-up {}, cold factor {cold_factor} (cold: {}){}",
            d(warmup),
            fmt_rate(r.get() / cold_factor),
            resolution()
        ),
        KindConfig::Refill(c) => format!(
            "Resilience4j RefillLimiter, {} permits per {} ({rate}), capacity {}, {} initial \
             permits, timeout {}",
            c.limit_for_period(),
            d(c.limit_refresh_period()),
            c.capacity(),
            c.initial_permits(),
            d(c.timeout())
        ),
        KindConfig::Cycle(c) => format!(
            "Resilience4j CycleLimiter, {} permits at the start of each {} cycle ({rate}), \
             timeout {}",
            c.limit_for_period(),
            d(c.limit_refresh_period()),
            d(c.timeout())
        ),
        other => format!("{}, {rate}", other.limiter_kind()),
    }
}

/// One limiter's report from its ops and its effective rate.
fn summarize(
    spec: &LimiterSpec,
    ops: &[Op],
    rows: Rows,
    effective: &EffectiveRate,
) -> LimiterReport {
    let config = spec.config;
    let target_rate = config.kind().rate();
    let mut description = describe(&config);
    if let Some(note) = effective.note(target_rate) {
        description.push_str(&format!(
            "; effective {}",
            fmt_effective(effective.json(), Some(&note), "ops")
        ));
    }
    let interval = 1e9 / target_rate;
    let mut granted: Vec<u64> = ops.iter().filter_map(|o| o.grant.map(|g| g.1)).collect();
    let mut waits: Vec<u64> = ops
        .iter()
        .filter_map(|o| o.grant.map(|(_, g)| g - o.arrival))
        .collect();
    let mut behind: Vec<u64> = ops
        .iter()
        .filter_map(|o| o.grant.map(|(s, g)| g.saturating_sub(s)))
        .collect();
    granted.sort_unstable();
    let count = granted.len() as u64;
    let first = granted.first().copied();
    let last = granted.last().copied();
    let elapsed_ns = match (first, last) {
        (Some(f), Some(l)) => (l - f).saturating_add(interval.round() as u64),
        _ => 0,
    };
    let achieved_rate = if elapsed_ns == 0 {
        0.0
    } else {
        count as f64 * 1e9 / elapsed_ns as f64
    };
    let shown = rows.0.unwrap_or(ops.len()).min(ops.len());
    let timeline = ops[..shown]
        .iter()
        .enumerate()
        .map(|(i, o)| Row {
            op: i as u64 + 1,
            arrival_ns: o.arrival,
            refused: o.grant.is_none(),
            scheduled_ns: o.grant.map(|g| g.0),
            granted_ns: o.grant.map(|g| g.1),
            wait_ns: o.grant.map(|g| g.1 - o.arrival),
            behind_ns: o.grant.map(|(s, g)| g.saturating_sub(s)),
        })
        .collect();
    LimiterReport {
        limiter: spec.label.clone(),
        kind: config.kind().limiter_kind().name(),
        description,
        target_rate,
        effective_rate: effective.json(),
        fields: LimiterFields::of(&config),
        fill_interval_ns: match config.kind() {
            KindConfig::Pool {
                filling: Filling::Thread(fill),
                ..
            } => Some(duration_nanos(fill)),
            _ => None,
        },
        ops: count,
        refused: ops.len() as u64 - count,
        first_grant_ns: first,
        last_grant_ns: last,
        elapsed_ns,
        achieved_rate,
        max_burst: max_burst(&granted, interval),
        wait_ns: exact_summary(&mut waits),
        behind_ns: exact_summary(&mut behind),
        timeline,
        timeline_omitted: (ops.len() - shown) as u64,
    }
}

/// Runs `simulate` with `args` and returns its report; writes the plot if
/// asked.
///
/// # Errors
///
/// A [`UsageError`] for more limiters than the plot has colours or a pool
/// pattern too long to fill; a library error (none is expected); an I/O
/// error writing the plot.
pub fn run(args: &SimulateArgs) -> anyhow::Result<SimulateReport> {
    if args.limiters.len() > plot::PALETTE.len() {
        return Err(UsageError(format!(
            "{} --limiter options given; at most {} can be compared at once",
            args.limiters.len(),
            plot::PALETTE.len()
        ))
        .into());
    }
    let times = args.arrivals.times();
    let (results, effective): (Vec<Vec<Op>>, Vec<EffectiveRate>) = args
        .limiters
        .iter()
        .map(|spec| simulate(spec, times))
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    if let Some(to) = &args.plot {
        let plot = make_plot(args, &results)?;
        plot::write(to, &plot)?;
    }
    Ok(SimulateReport {
        pattern: args.arrivals.to_string(),
        arrivals: times.len() as u64,
        end_ns: args.arrivals.end_ns(),
        model: "open_loop",
        rows: args.rows.0,
        limiters: args
            .limiters
            .iter()
            .zip(&results)
            .zip(&effective)
            .map(|((spec, ops), effective)| summarize(spec, ops, args.rows, effective))
            .collect(),
    })
}

/// The plot: granted rate per bucket (with arrivals and targets) and the
/// longest wait per bucket, one series per limiter.
///
/// # Errors
///
/// A [`UsageError`] for a `--bucket` that cuts the timeline into too many
/// buckets.
fn make_plot(args: &SimulateArgs, results: &[Vec<Op>]) -> Result<Plot, UsageError> {
    let last_grant = results
        .iter()
        .flatten()
        .filter_map(|o| o.grant.map(|g| g.1))
        .max()
        .unwrap_or(0);
    let span = last_grant.max(args.arrivals.end_ns()).max(1);
    let slowest = args
        .limiters
        .iter()
        .map(|l| l.config.kind().rate())
        .fold(f64::INFINITY, f64::min);
    let width = args
        .bucket
        .map(duration_nanos)
        .unwrap_or_else(|| plot::auto_bucket(span, slowest));
    plot::check_bucket(span, width).map_err(UsageError)?;
    // Whole buckets, and at least one past the last event.
    let end = (span / width + 1) * width;
    let end_secs = end as f64 / 1e9;

    let mut arrivals = Buckets::new(width);
    for &t in args.arrivals.times() {
        arrivals.record(t, 0);
    }
    let mut rate_series = vec![Series {
        name: "arrivals".to_owned(),
        color: plot::ARRIVALS,
        dashed: false,
        width: 2,
        points: plot::rate_points(&arrivals, end),
    }];
    let count = args.limiters.len() as u32;
    let mut wait_series = Vec::new();
    for (i, (spec, ops)) in args.limiters.iter().zip(results).enumerate() {
        let color = plot::PALETTE[i];
        // The first limiter's line widest: identical behaviours stay visible.
        let stroke = 2 + (count - 1 - i as u32).min(4);
        let mut b = Buckets::new(width);
        for o in ops {
            if let Some((_, g)) = o.grant {
                b.record(g, g - o.arrival);
            }
        }
        rate_series.push(Series {
            name: spec.label.clone(),
            color,
            dashed: false,
            width: stroke,
            points: plot::rate_points(&b, end),
        });
        wait_series.push(Series {
            name: spec.label.clone(),
            color,
            dashed: false,
            width: stroke,
            points: plot::wait_points(&b, WaitStat::Max),
        });
    }
    // Target lines: one if the limiters share a rate, else one per limiter.
    let rates: Vec<f64> = args
        .limiters
        .iter()
        .map(|l| l.config.kind().rate())
        .collect();
    if rates.iter().all(|r| *r == rates[0]) {
        rate_series.push(plot::target_series(
            format!("target {}", fmt_rate(rates[0])),
            plot::TARGET,
            rates[0],
            end_secs,
        ));
    } else {
        for (i, (spec, rate)) in args.limiters.iter().zip(&rates).enumerate() {
            rate_series.push(plot::target_series(
                format!("target of {} ({})", spec.label, fmt_rate(*rate)),
                plot::PALETTE[i],
                *rate,
                end_secs,
            ));
        }
    }
    Ok(Plot {
        title: format!("ratekeeper simulate: {}", args.arrivals),
        end_secs,
        rate: Panel {
            title: format!(
                "ops granted per {} bucket, as a rate (arrivals in grey, target dashed)",
                fmt_duration(width)
            ),
            quantity: "rate".to_owned(),
            unit: Unit::Rate,
            series: rate_series,
        },
        wait: Panel {
            title: "longest wait (granted - arrival) of the ops granted in each bucket".to_owned(),
            quantity: "wait".to_owned(),
            unit: Unit::Nanos,
            series: wait_series,
        },
    })
}

/// Formats nanoseconds as seconds with `decimals` decimals, exactly.
fn fmt_secs(nanos: u64, decimals: usize) -> String {
    let whole = nanos / 1_000_000_000;
    let frac = nanos % 1_000_000_000;
    match decimals {
        6 => format!("{whole}.{:06}", frac / 1_000),
        _ => format!("{whole}.{frac:09}"),
    }
}

/// How the first column of a [`table`] is aligned (the others are aligned
/// right).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}

/// Lays out `rows` under `header`, columns two spaces apart, each line
/// indented by `indent`.
fn table(indent: &str, first: Align, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let parts: Vec<String> = cells
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| {
                if i == 0 && first == Align::Left {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(indent);
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

impl fmt::Display for SimulateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "pattern   {}", self.pattern)?;
        writeln!(
            f,
            "arrivals  {}, until {} (open loop: each arrival asks for its permit at its own \
             time; a waiting op holds up nothing)",
            self.arrivals,
            fmt_duration(self.end_ns)
        )?;
        let label_width = self
            .limiters
            .iter()
            .map(|l| l.limiter.chars().count())
            .max()
            .unwrap_or(0);
        for (i, l) in self.limiters.iter().enumerate() {
            let head = if i == 0 { "limiters" } else { "" };
            writeln!(
                f,
                "{head:<10}{:<label_width$}  {}",
                l.limiter, l.description
            )?;
        }
        for l in &self.limiters {
            if l.timeline.is_empty() {
                continue;
            }
            // Microseconds where every time is whole microseconds.
            let exact_us = l.timeline.iter().all(|r| {
                [Some(r.arrival_ns), r.scheduled_ns, r.granted_ns]
                    .into_iter()
                    .flatten()
                    .all(|t| t % 1_000 == 0)
            });
            let decimals = if exact_us { 6 } else { 9 };
            let secs = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| fmt_secs(v, decimals));
            let rows: Vec<Vec<String>> = l
                .timeline
                .iter()
                .map(|r| {
                    vec![
                        r.op.to_string(),
                        secs(Some(r.arrival_ns)),
                        secs(r.scheduled_ns),
                        if r.refused {
                            "refused".to_owned()
                        } else {
                            secs(r.granted_ns)
                        },
                        secs(r.wait_ns),
                        secs(r.behind_ns),
                    ]
                })
                .collect();
            writeln!(f)?;
            writeln!(f, "timeline of {} (seconds)", l.limiter)?;
            f.write_str(&table(
                "  ",
                Align::Right,
                &["op", "arrival", "scheduled", "granted", "wait", "behind"],
                &rows,
            ))?;
            if l.timeline_omitted > 0 {
                writeln!(
                    f,
                    "  ... {} more ops (--rows all shows every op)",
                    l.timeline_omitted
                )?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "summary (wait = granted - arrival; behind = granted - scheduled)"
        )?;
        let dur = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), fmt_nanos);
        let any = |l: &LimiterReport| l.ops > 0;
        let rows: Vec<Vec<String>> = self
            .limiters
            .iter()
            .map(|l| {
                let when = |v: u64| any(l).then_some(v);
                vec![
                    l.limiter.clone(),
                    fmt_rate(l.target_rate),
                    l.ops.to_string(),
                    l.refused.to_string(),
                    if any(l) {
                        fmt_rate(l.achieved_rate)
                    } else {
                        "-".to_owned()
                    },
                    l.max_burst.to_string(),
                    dur(when(l.wait_ns.p50)),
                    dur(when(l.wait_ns.p99)),
                    dur(when(l.wait_ns.max)),
                    dur(when(l.behind_ns.max)),
                    dur(l.last_grant_ns),
                ]
            })
            .collect();
        f.write_str(&table(
            "",
            Align::Left,
            &[
                "limiter",
                "target",
                "granted",
                "refused",
                "achieved",
                "max burst",
                "wait p50",
                "wait p99",
                "wait max",
                "behind max",
                "last grant",
            ],
            &rows,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn spec(s: &str) -> LimiterSpec {
        parse_limiter(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn run_one(limiter: &str, pattern: &str) -> Vec<Op> {
        let arrivals: Arrivals = pattern.parse().unwrap();
        simulate(&spec(limiter), arrivals.times()).unwrap().0
    }

    fn granted(ops: &[Op]) -> Vec<u64> {
        ops.iter()
            .map(|o| o.grant.map_or(u64::MAX, |g| g.1))
            .collect()
    }

    #[test]
    fn limiter_specs_are_the_library_s_grammar() {
        // The grammar and its messages are the library's (config::tests);
        // here, the label and what simulate cannot model.
        assert_eq!(spec(" Warmup:10,2s ").label, "Warmup:10,2s");
        assert_eq!(spec("pacer:10").config, "pacer:10".parse().unwrap());
        let err = |s: &str| parse_limiter(s).expect_err(s);
        assert!(err("pacer").contains("expected KIND:ARGS"));
        assert!(err("pacer:10,-1").contains("strictness \"-1\""));
        assert!(err("pacer:10,-1").contains("must not be negative"));
        assert!(err("refill:10,capacity=5").contains("permit capacity 5 is below the limit"));
        assert!(err("pacer:10,0,batch=true").contains("batch and shards"));
        assert!(err("pacer:10,shards=2").contains("pace --batch, --shards"));
        assert!(err("cycle:10,wait=precise:1ms").contains("drop wait="));
        assert!(err("pool:10,fill=inline").contains("fill inline"));
    }

    #[test]
    fn strict_pacer_spaces_a_burst_by_the_interval() {
        // 10/s strict: 3 at once go 100 ms apart; the 4th, arriving at 1 s
        // when the schedule is idle again, goes at once.
        let ops = run_one("pacer:10,1", "burst 3; idle 1s; burst 1");
        assert_eq!(granted(&ops), [0, 100 * MS, 200 * MS, 1_000 * MS]);
        // The 4th is 700 ms behind the schedule, which a strict pacer keeps.
        assert_eq!(ops[3].grant, Some((300 * MS, 1_000 * MS)));
    }

    #[test]
    fn average_pacer_spends_idle_time_at_once() {
        // After 1 s idle, 10 slots are unused: a burst of 5 goes at once.
        let ops = run_one("pacer:10,0", "burst 1; idle 1s; burst 5");
        assert_eq!(
            granted(&ops),
            [
                0,
                1_000 * MS,
                1_000 * MS,
                1_000 * MS,
                1_000 * MS,
                1_000 * MS
            ]
        );
        // Burst ratio 2: the backlog is caught up at twice the rate.
        let ops = run_one("pacer:10,2", "burst 1; idle 1s; burst 3");
        assert_eq!(granted(&ops), [0, 1_000 * MS, 1_050 * MS, 1_100 * MS]);
    }

    #[test]
    fn bursty_stores_idle_time_and_warmup_starts_cold() {
        // Guava: after 1 s idle, 10 stored permits go at once; the first of a
        // fresh limiter is free.
        let ops = run_one("bursty:10", "idle 1s; burst 12");
        let g = granted(&ops);
        assert!(g[..11].iter().all(|&t| t == 1_000 * MS), "{g:?}");
        assert_eq!(g[11], 1_100 * MS);
        // A cold SmoothWarmingUp (10/s, warm-up 2 s, cold factor 3) stores
        // 20 permits; those above the threshold of 10 cost from 300 ms (at
        // 20) down to 100 ms (at 10), 20 ms less per permit: the first taken
        // costs the area between 20 and 19, 290 ms, the next 270 ms.
        let ops = run_one("warmup:10,2s", "burst 3");
        assert_eq!(granted(&ops), [0, 290 * MS, 560 * MS]);
    }

    #[test]
    fn resilience4j_limiters_refuse_past_the_timeout() {
        // 10 permits per second, bucket of 10 full at 0: 10 at once, then one
        // per 100 ms; with a 250 ms timeout, the 11th and 12th wait, the rest
        // of a burst of 15 is refused.
        let ops = run_one("refill:10,timeout=250ms", "burst 15");
        let g: Vec<Option<u64>> = ops.iter().map(|o| o.grant.map(|g| g.1)).collect();
        assert!(g[..10].iter().all(|&t| t == Some(0)), "{g:?}");
        assert_eq!(&g[10..], [Some(100 * MS), Some(200 * MS), None, None, None]);
        // The cycle limiter: 5 per 500 ms cycle, from 0.
        let ops = run_one("cycle:10,500ms,timeout=1s", "burst 12");
        let g: Vec<Option<u64>> = ops.iter().map(|o| o.grant.map(|g| g.1)).collect();
        assert!(g[..5].iter().all(|&t| t == Some(0)), "{g:?}");
        assert!(g[5..10].iter().all(|&t| t == Some(500 * MS)), "{g:?}");
        assert_eq!(&g[10..], [Some(1_000 * MS), Some(1_000 * MS)]);
    }

    #[test]
    fn pool_grants_queued_ops_at_fills() {
        // 10/s, 1 ms fills: the start pre-fills one op; later ops wait for
        // 100 ms of fills each, first come first served.
        let ops = run_one("pool:10,1.0", "burst 3");
        assert_eq!(granted(&ops), [0, 100 * MS, 200 * MS]);
        assert_eq!(ops[2].grant.map(|g| g.0), Some(200 * MS));
        // Ops arriving after idle time take banked tokens at once (up to
        // the active pool, 2 ops).
        let ops = run_one("pool:10,1.0", "idle 1s; burst 3");
        assert_eq!(granted(&ops), [1_000 * MS, 1_000 * MS, 1_100 * MS]);
        // A fill interval that does not divide the wait: granted at the
        // first fill at or after the tokens are there.
        let ops = run_one("pool:10,1.0,30ms", "burst 2");
        assert_eq!(granted(&ops), [0, 120 * MS]);
        // 60 ops at 1/s filled every 1 µs would take 6e7 fills: refused at
        // once.
        let arrivals: Arrivals = "burst 60".parse().unwrap();
        let e = simulate(&spec("pool:1,1.0,1us"), arrivals.times()).unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some(), "{e:#}");
        assert!(
            format!("{e:#}").contains("more than 50000000 fills of 1us"),
            "{e:#}"
        );
    }

    #[test]
    fn summaries_are_exact() {
        let mut v = vec![5, 1, 4, 2, 3];
        let s = exact_summary(&mut v);
        assert_eq!((s.p50, s.p90, s.p99, s.max, s.mean), (3, 5, 5, 5, 3));
        assert_eq!(exact_summary(&mut []), WaitSummary::default());
        assert_eq!(max_burst(&[0, 0, 0, 100, 140, 200], 100.0), 3);
        assert_eq!(max_burst(&[0, 100, 200], 100.0), 1);
        assert_eq!(max_burst(&[], 100.0), 0);
        assert_eq!(fmt_secs(1_500_000_000, 6), "1.500000");
        assert_eq!(fmt_secs(333_333_333, 9), "0.333333333");
    }

    #[test]
    fn rows_and_buckets_parse() {
        assert_eq!(parse_rows("all"), Ok(Rows(None)));
        assert_eq!(parse_rows("0"), Ok(Rows(Some(0))));
        assert!(parse_rows("-1").unwrap_err().contains("or all"));
        assert!(parse_bucket("0s")
            .unwrap_err()
            .contains("greater than zero"));
        assert_eq!(parse_bucket("100ms"), Ok(Duration::from_millis(100)));
    }

    #[test]
    fn one_fill_over_idle_time_equals_the_fills_of_each_tick() {
        // `fill_pool` skips through stretches with nobody queued with one
        // fill; that must leave the pools as the ticks one by one would.
        for (rate, burst, ticks, fill) in [
            (10.0, 1.1, 1000, MS),
            (1000.0, 1.5, 777, MS),
            (3.0, 2.0, 10, MS),
            (5000.0, 1.1, 5, MS),
            (100.0, 1.3, 37, 30 * MS),
        ] {
            let pool = || {
                let p = TokenPool::builder(ratekeeper::Rate::new(rate).unwrap())
                    .burst_ratio(burst)
                    .filling(Filling::Manual)
                    .build_with_clock(ManualClock::new(0))
                    .unwrap();
                p.try_acquire().unwrap();
                p
            };
            let (by_tick, at_once) = (pool(), pool());
            for _ in 0..ticks {
                by_tick.refill(fill).unwrap();
            }
            at_once.refill(fill * ticks).unwrap();
            let (a, b) = (by_tick.pools(), at_once.pools());
            assert_eq!(
                (a.active(), a.waiting()),
                (b.active(), b.waiting()),
                "{rate}/s"
            );
        }
    }
}
