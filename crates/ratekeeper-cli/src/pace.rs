//! `ratekeeper pace`: worker threads pacing through one shared [`Pacer`].
//!
//! Each worker loops `pacer.acquire()` and records the op's wait time, measured
//! free of coordinated omission: the pacer's clock read right after the grant
//! returns, minus the op's *scheduled* time. (The grant's own `wait_nanos()` is
//! a lower bound when the pacer answered from its cached last-seen clock.)

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use ratekeeper::pacer::{Strictness, StrictnessMode};
use ratekeeper::{Clock, MonotonicClock, Pacer, RateLimiter, RateSpec, Scope, WaitPolicy};
use serde::Serialize;

use crate::report::{fmt_nanos, fmt_rate, process_cpu_nanos, WaitRecorder, WaitSummary};
use crate::UsageError;

/// How long `--precise` spins before each op's ready time (after sleeping
/// until then): longer than a sleep's typical overshoot (~85 µs on Linux).
const PRECISE_SPIN: Duration = Duration::from_micros(150);

/// Run length when neither `--duration` nor `--count` is given.
const DEFAULT_DURATION: Duration = Duration::from_secs(5);

/// The most worker threads `--threads` accepts.
const MAX_THREADS: u32 = 4096;

/// `pace --help` text above the options.
pub const LONG_ABOUT: &str = "\
Pace worker threads through one shared Pacer and report the achieved rate, \
the ops' wait times and the CPU cost per permit.

Each of --threads workers loops: acquire one permit (sleeping until its slot), \
then read the pacer's clock and record the op's wait time, now minus the op's \
scheduled time (when it was due had every op kept the ideal schedule). Waits \
are measured from the scheduled time, so a worker that falls behind shows its \
lateness in every later op instead of hiding it (no coordinated omission). \
There is no work between permits: the report shows the pacer's own precision \
and cost.

The schedule starts when the workers are released, whatever the spec's verb (a \
fresh pacer has no earlier schedule to configure, restart or stop). A spec with \
the `thread` scope gives every worker its own pacer at the spec's rate, so the \
target rate is rate x threads; otherwise all workers share one pacer and the \
rate is their total.

Run length: --duration DUR (default 5s) or --count N, not both.
  --duration: workers stop once the clock passes the deadline (checked after \
each grant). An op whose grant is ready at or after the deadline is not \
counted; its worker still slept until it, so the run can overrun the deadline \
by up to about threads / rate.
  --count: exactly N ops in total, shared by all workers.

Report:
  target rate     the spec's rate (x threads for the thread scope)
  achieved rate   ops / elapsed
  elapsed         --duration: the duration. --count: from the start of the \
schedule until the last op was granted, plus one slot (1 / target rate): N ops \
on a perfect schedule take N slots, so a perfect run reads exactly the target \
rate
  wall            from the start until every worker had stopped
  wait            p50, p90, p99, p99.9, max and mean of the ops' wait times \
(HdrHistogram, 3 significant digits; max and mean exact)
  backlog         how far the schedule is behind the clock at the end \
(RateLimiter::wait_stats; summed over pacers with the thread scope)
  total wait      all wait the pacer accumulated during the run (same source)
  cpu per op      the process's user + system CPU time during the run \
divided by ops";

/// Examples, shown by `pace -h` and `pace --help`.
pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper pace --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --rate 2000 --count 200 --json
  ratekeeper pace --rate 1M --strictness 0.5 --threads 2 --duration 500ms --precise";

/// `pace --help` text below the options: examples and the JSON schema.
pub const AFTER_LONG_HELP: &str = "\
Examples:
  ratekeeper pace --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --rate 2000 --count 200 --json
  ratekeeper pace --rate 1M --strictness 0.5 --threads 2 --duration 500ms --precise

JSON output (--json): one object on one line. Durations are integer \
nanoseconds, rates are ops per second (floating point):
  spec            string   the rate spec in canonical form, rate,burst,verb,scope
  target_rate     number   ops/s the run aimed at
  strictness      number   the strictness used (--strictness, else the spec's burst ratio)
  strictness_mode string   \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
  wait_policy     string   \"coalesce\" (default) or \"precise\"
  threads         integer  worker threads
  pacers          integer  1, or threads for the thread scope
  mode            string   \"duration\" or \"count\"
  duration_ns     integer  the requested duration (null in count mode)
  count           integer  the requested count (null in duration mode)
  ops             integer  ops counted
  elapsed_ns      integer  see Report above
  wall_ns         integer  see Report above
  achieved_rate   number   ops / elapsed
  wait_ns         object   {\"p50\", \"p90\", \"p99\", \"p999\", \"max\", \"mean\"}, integers
  backlog_ns      integer  the pacer's backlog at the end
  total_wait_ns   integer  the pacer's total wait at the end
  cpu_ns          integer  process CPU time (user + system) during the run, or null
  cpu_ns_per_op   integer  cpu_ns / ops, rounded; null without ops or CPU time";

/// Options of `ratekeeper pace`.
#[derive(Debug, Clone, Args)]
pub struct PaceArgs {
    /// Rate spec: rate[,burst][,verb][,scope], e.g. 10k, 10k,1.1, 500,1.5,thread.
    #[arg(long, value_name = "SPEC", value_parser = parse_spec)]
    pub rate: RateSpec,

    /// Worker threads (at least 1).
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_threads)]
    pub threads: u32,

    /// Run for this long, e.g. 5s, 500ms, 1m30s [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "count")]
    pub duration: Option<Duration>,

    /// Run exactly this many ops in total, across all threads.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,

    /// Override the spec's burst ratio: 0 average, 0<S<1 burst compensation,
    /// 1 strict, >1 burst ratio.
    #[arg(long, value_name = "S", value_parser = parse_strictness, allow_negative_numbers = true)]
    pub strictness: Option<f64>,

    /// Sleep, then spin the last 150µs before each op's slot, so no op goes
    /// early (costs CPU). Default: coalesce waits within the library's 500µs
    /// window (ops closer together than that go in groups, up to 500µs early).
    #[arg(long)]
    pub precise: bool,

    /// Print the report as one JSON object (schema in --help).
    #[arg(long)]
    pub json: bool,
}

fn parse_spec(s: &str) -> Result<RateSpec, String> {
    let spec: RateSpec = s.parse().map_err(|e: ratekeeper::SpecError| {
        if e.kind() == ratekeeper::SpecErrorKind::BurstBelowOne {
            format!(
                "{e}; for a strictness below 1 (average or burst compensation) use --strictness"
            )
        } else {
            e.to_string()
        }
    })?;
    // A spec can hold rates no nanosecond schedule can keep (above 1e9/s).
    spec.rate().nanos_per_op().map_err(|e| e.to_string())?;
    Ok(spec)
}

fn parse_threads(s: &str) -> Result<u32, String> {
    let expected = format!("expected a whole number of threads from 1 to {MAX_THREADS}");
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Ok(0) => Err(format!("at least 1 thread is needed; {expected}")),
        _ => Err(expected),
    }
}

fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of ops, at least 1".to_owned()),
    }
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}; expected a duration such as 5s, 500ms or 1m30s"))?;
    if d.is_zero() {
        return Err("the duration must be greater than zero".to_owned());
    }
    Ok(d)
}

const STRICTNESS_EXPECTED: &str = "expected a number: 0 (average), between 0 and 1 \
     (burst compensation), 1 (strict) or above 1 (burst ratio)";

fn parse_strictness(s: &str) -> Result<f64, String> {
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
    /// Run until the pacer clock passes this reading.
    Deadline(u64),
    /// Run until the shared countdown is used up.
    Count,
}

/// What one worker measured.
#[derive(Debug)]
struct WorkerResult {
    waits: WaitRecorder,
    /// Clock reading when its last counted op was granted.
    last_start: Option<u64>,
}

/// The gate the workers wait at: `None` until the run starts; then the stop
/// rule, or `Err` if the run was called off before it started.
type Gate = (Mutex<Option<Result<Stop, ()>>>, Condvar);

fn open_gate(gate: &Gate, value: Result<Stop, ()>) {
    let (lock, cvar) = gate;
    *lock.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
    cvar.notify_all();
}

fn wait_at_gate(gate: &Gate) -> Result<Stop, ()> {
    let (lock, cvar) = gate;
    let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if let Some(v) = *state {
            return v;
        }
        state = cvar.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
}

fn worker(pacer: &Pacer, gate: &Gate, remaining: &AtomicU64) -> WorkerResult {
    let mut result = WorkerResult {
        waits: WaitRecorder::new(),
        last_start: None,
    };
    let Ok(stop) = wait_at_gate(gate) else {
        return result;
    };
    let clock = pacer.clock_ref();
    match stop {
        Stop::Deadline(deadline) => loop {
            let g = pacer.acquire();
            let now = clock.now_nanos();
            if g.ready_nanos() >= deadline {
                break;
            }
            result.waits.record(now.saturating_sub(g.scheduled_nanos()));
            result.last_start = Some(now);
            if now >= deadline {
                break;
            }
        },
        Stop::Count => {
            // Ordering: Relaxed; the countdown only hands out a number of ops.
            while remaining
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                let g = pacer.acquire();
                let now = clock.now_nanos();
                result.waits.record(now.saturating_sub(g.scheduled_nanos()));
                result.last_start = Some(now);
            }
        }
    }
    result
}

/// The result of a `pace` run; `Display` is the text report, `Serialize` the
/// JSON one (schema in [`AFTER_LONG_HELP`]).
#[derive(Debug, Clone, Serialize)]
pub struct PaceReport {
    spec: String,
    target_rate: f64,
    strictness: f64,
    strictness_mode: &'static str,
    wait_policy: &'static str,
    threads: u32,
    pacers: u32,
    mode: &'static str,
    duration_ns: Option<u64>,
    count: Option<u64>,
    ops: u64,
    elapsed_ns: u64,
    wall_ns: u64,
    achieved_rate: f64,
    wait_ns: WaitSummary,
    backlog_ns: u64,
    total_wait_ns: u64,
    cpu_ns: Option<u64>,
    cpu_ns_per_op: Option<u64>,
}

fn strictness_mode_name(s: f64) -> &'static str {
    match Strictness::new(s).map(Strictness::mode) {
        Ok(StrictnessMode::Average) => "average",
        Ok(StrictnessMode::Compensate { .. }) => "burst_compensation",
        Ok(StrictnessMode::Strict) => "strict",
        Ok(StrictnessMode::Burst(_)) => "burst_ratio",
        Err(_) => "invalid",
    }
}

fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs `pace` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] if the library refuses the configuration; an I/O error if
/// a worker thread cannot be started; an error if a worker panicked.
pub fn run(args: &PaceArgs) -> anyhow::Result<PaceReport> {
    let spec = args.rate;
    let strictness = args.strictness.unwrap_or(spec.burst_ratio());
    let policy = if args.precise {
        WaitPolicy::precise(PRECISE_SPIN)
    } else {
        WaitPolicy::default()
    };
    let threads = args.threads;
    let pacer_count = if spec.scope() == Scope::Thread {
        threads
    } else {
        1
    };
    // One clock for every pacer, so their readings compare.
    let clock = MonotonicClock::new();
    let pacers = (0..pacer_count)
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
    let target_rate = spec.rate().get() * f64::from(pacer_count);

    // clap rejects --duration together with --count.
    let count = args.count;
    let duration = match count {
        Some(_) => None,
        None => Some(args.duration.unwrap_or(DEFAULT_DURATION)),
    };
    let remaining = AtomicU64::new(count.unwrap_or(0));
    let gate: Gate = (Mutex::new(None), Condvar::new());

    let (results, t0, cpu_start, t_end, cpu_end) = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads as usize);
        for i in 0..threads {
            let pacer = &pacers[i as usize % pacers.len()];
            let (worker_gate, worker_remaining) = (&gate, &remaining);
            let spawned = std::thread::Builder::new()
                .name(format!("pace-{i}"))
                .spawn_scoped(scope, move || worker(pacer, worker_gate, worker_remaining));
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
        // Start every schedule now; the run starts at the earliest one.
        for p in &pacers {
            p.restart();
        }
        let t0 = pacers
            .iter()
            .map(Pacer::next_slot_nanos)
            .min()
            .unwrap_or_else(|| clock.now_nanos());
        let stop = match duration {
            Some(d) => Stop::Deadline(t0.saturating_add(duration_nanos(d))),
            None => Stop::Count,
        };
        let cpu_start = process_cpu_nanos();
        open_gate(&gate, Ok(stop));
        let mut results = Vec::with_capacity(handles.len());
        let mut panicked = false;
        for h in handles {
            match h.join() {
                Ok(r) => results.push(r),
                Err(_) => panicked = true,
            }
        }
        let t_end = clock.now_nanos();
        let cpu_end = process_cpu_nanos();
        if panicked {
            anyhow::bail!("a worker thread panicked");
        }
        Ok((results, t0, cpu_start, t_end, cpu_end))
    })?;

    let mut waits = WaitRecorder::new();
    for r in &results {
        waits.merge(&r.waits);
    }
    let ops = waits.count();
    let last_start = results.iter().filter_map(|r| r.last_start).max();
    let elapsed_ns = match duration {
        Some(d) => duration_nanos(d),
        None => {
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
    let (backlog_ns, total_wait_ns) = pacers.iter().fold((0u64, 0u64), |(b, t), p| {
        let s = RateLimiter::wait_stats(p);
        (
            b.saturating_add(s.backlog_nanos),
            t.saturating_add(s.total_wait_nanos),
        )
    });
    let cpu_ns = match (cpu_start, cpu_end) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let cpu_ns_per_op = match cpu_ns {
        Some(c) if ops > 0 => Some((c as f64 / ops as f64).round() as u64),
        _ => None,
    };

    Ok(PaceReport {
        spec: spec.to_string(),
        target_rate,
        strictness,
        strictness_mode: strictness_mode_name(strictness),
        wait_policy: if args.precise { "precise" } else { "coalesce" },
        threads,
        pacers: pacer_count,
        mode: if duration.is_some() {
            "duration"
        } else {
            "count"
        },
        duration_ns: duration.map(duration_nanos),
        count,
        ops,
        elapsed_ns,
        wall_ns: t_end.saturating_sub(t0),
        achieved_rate,
        wait_ns: waits.summary(),
        backlog_ns,
        total_wait_ns,
        cpu_ns,
        cpu_ns_per_op,
    })
}

impl fmt::Display for PaceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.wait_ns;
        let policy = match self.wait_policy {
            "precise" => "precise (sleep, then spin 150µs)",
            _ => "coalesce (waits within 500µs are not slept)",
        };
        let pacers = if self.pacers == 1 {
            "1 shared pacer".to_owned()
        } else {
            format!("{} pacers, one per thread", self.pacers)
        };
        let run = match (self.duration_ns, self.count) {
            (Some(d), _) => format!("duration {}", fmt_nanos(d)),
            (None, Some(n)) => format!("count {n}"),
            (None, None) => String::new(),
        };
        writeln!(f, "spec            {}", self.spec)?;
        writeln!(
            f,
            "strictness      {} ({})",
            self.strictness,
            self.strictness_mode.replace('_', " ")
        )?;
        writeln!(f, "wait policy     {policy}")?;
        writeln!(f, "threads         {} ({pacers}), {run}", self.threads)?;
        writeln!(f, "target rate     {}", fmt_rate(self.target_rate))?;
        writeln!(f, "achieved rate   {}", fmt_rate(self.achieved_rate))?;
        writeln!(f, "ops             {}", self.ops)?;
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
        writeln!(f, "backlog         {}", fmt_nanos(self.backlog_ns))?;
        writeln!(f, "total wait      {}", fmt_nanos(self.total_wait_ns))?;
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
    }

    #[test]
    fn strictness_modes_are_named() {
        assert_eq!(strictness_mode_name(0.0), "average");
        assert_eq!(strictness_mode_name(0.5), "burst_compensation");
        assert_eq!(strictness_mode_name(1.0), "strict");
        assert_eq!(strictness_mode_name(1.1), "burst_ratio");
    }
}
