//! `ratekeeper pace`: worker threads pacing through one shared rate limiter,
//! a [`Pacer`](ratekeeper::Pacer) (the default), a
//! [`TokenPool`](ratekeeper::TokenPool) (`--limiter pool`), one of Guava's
//! smooth limiters ([`SmoothBursty`](ratekeeper::SmoothBursty), `--limiter
//! bursty`; [`SmoothWarmingUp`](ratekeeper::SmoothWarmingUp), `--limiter
//! warmup`) or one of Resilience4j's
//! ([`RefillLimiter`](ratekeeper::RefillLimiter), `--limiter refill`;
//! [`CycleLimiter`](ratekeeper::CycleLimiter), `--limiter cycle`).
//!
//! Each worker loops `limiter.acquire()` (Resilience4j's limiters:
//! `acquire_permission`, which may refuse) and records the op's wait time,
//! measured free of coordinated omission: the shared clock read right after
//! the grant returns, minus the op's *scheduled* time. (The grant's own
//! `wait_nanos()` is a lower bound when the limiter answered from its cached
//! last-seen clock.) With `--batch` each worker goes through a handle of its
//! own: the Pacer's [`PacerHandle`](ratekeeper::PacerHandle), or a
//! [`BatchHandle`](ratekeeper::BatchHandle) on any other limiter.
//!
//! `run` gathers: [`visit`] builds the workers' loop for the limiter type,
//! [`drive`](mod@drive) starts the workers ([`worker`]) behind a start
//! [`gate`] (with `--stages`, and a thread that ramps the limiters' rate)
//! and collects what they measured; [`summary`] computes the report against
//! the [`target`] and [`render`] prints it and draws the plot.

mod behind;
mod drive;
mod gate;
mod help;
mod on_redis;
mod render;
mod summary;
mod target;
mod visit;
mod work;
mod worker;

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use ratekeeper::{DefaultClock, RateSpec, Scope};

use crate::error::UsageError;
use crate::flags::limiter::{AccessArgs, LimiterArgs};
use crate::flags::redis::RedisArgs;
use crate::flags::{parse_count, parse_duration, parse_spec};
use crate::plot::{self, PlotPath};
use crate::report;
use crate::run::interrupt::Interrupt;
use crate::run::ramp::{self, Ramp, StagesArg};
use crate::run::verdict::{parse_condition, Condition, TimeFigure};
use crate::shared;
// The module only (`{self}`), not main.rs's `fn run` beside it.
use crate::run::{self};

use behind::parse_max_behind;
use drive::RunPlan;
pub use help::{AFTER_HELP, AFTER_LONG_HELP, LONG_ABOUT};
use render::{write_hdr_log, write_plot};
use summary::summarize;
pub use summary::PaceReport;
use target::Target;
use visit::Pace;
use work::{parse_work, WorkSpec};

/// The most worker threads `--threads` accepts.
const MAX_THREADS: u32 = 4096;

/// Options of `ratekeeper pace`.
#[derive(Debug, Clone, Args)]
pub struct PaceArgs {
    /// Rate spec: rate[,burst][,verb][,scope], e.g. 10k, 10k,1.1, 500,1.5,thread
    /// (with --stages, where they start; without it they start at 0).
    #[arg(
        long,
        value_name = "SPEC",
        value_parser = parse_spec,
        allow_hyphen_values = true,
        required_unless_present = "stages"
    )]
    pub rate: Option<RateSpec>,

    // The limiter and its options.
    #[command(flatten)]
    pub limiter: LimiterArgs,

    // How the workers reach the limiter: batching handles or shards.
    #[command(flatten)]
    pub access: AccessArgs,

    // A limit shared with other processes through Redis.
    #[command(flatten)]
    pub redis: RedisArgs,

    /// Worker threads (at least 1).
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_threads, display_order = 100)]
    pub threads: u32,

    /// Run for this long, e.g. 5s, 500ms, 1m30s [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "count")]
    pub duration: Option<Duration>,

    /// Run exactly this many ops in total, across all threads.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,

    /// Ramp the rate through stages, as k6 does: DUR:RATE,... ramps in a
    /// straight line from --rate's rate (or 0) to each RATE over its DUR,
    /// e.g. 10s:1k,30s:10k,10s:0; the ops due by any time are the integral
    /// of that rate; the run lasts the stages' total.
    #[arg(
        long,
        value_name = "STAGES",
        value_parser = ramp::parse_stages_arg,
        conflicts_with_all = ["duration", "count"]
    )]
    pub stages: Option<StagesArg>,

    /// Draw the achieved rate and the waits over time to FILE, an SVG or a
    /// PNG (by its extension).
    #[arg(long, value_name = "FILE", value_parser = plot::parse_plot_path, display_order = 104)]
    pub plot: Option<PlotPath>,

    /// The plot's time bucket, e.g. 100ms [default: about a hundredth of the
    /// run, and at least 5 ops at the target rate, rounded to 1, 2 or 5
    /// units].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "plot", display_order = 105)]
    pub bucket: Option<Duration>,

    /// What each op does after its permit: DUR, or DUR~JITTER for DUR ±
    /// up to JITTER (uniform), e.g. 2ms or 2ms~500us. A sleep (I/O), or a
    /// spin with --work-cpu; the report adds service and response times.
    #[arg(long, value_name = "DUR[~JITTER]", value_parser = parse_work, allow_hyphen_values = true, display_order = 101)]
    pub work: Option<WorkSpec>,

    /// Spin on the clock for --work instead of sleeping (compute, not I/O).
    #[arg(long, display_order = 102)]
    pub work_cpu: bool,

    /// End the run, after its report, with exit status 3 once it falls this
    /// far behind its schedule (elapsed - ops / target rate), e.g. 100ms.
    #[arg(long, value_name = "DUR", value_parser = parse_max_behind, allow_hyphen_values = true, display_order = 108)]
    pub max_behind: Option<Duration>,

    /// Exit with status 99 after the report if COND holds, e.g.
    /// 'wait.p99>1ms', 'rate<990', with --work 'response.p99>50ms'
    /// (repeatable; see Fail-if in --help).
    #[arg(long, value_name = "COND", value_parser = parse_condition, display_order = 107)]
    pub fail_if: Vec<Condition>,

    /// Write the ops' wait times (with --work, and their service and
    /// response times) to FILE as HdrHistogram's interval log (one
    /// interval, the whole run; tags wait, service, response; nanoseconds).
    #[arg(long, value_name = "FILE", display_order = 106)]
    pub hdr_out: Option<PathBuf>,

    /// Print the report as one JSON object (schema in --help).
    #[arg(long, display_order = 103)]
    pub json: bool,
}

impl PaceArgs {
    /// The rate spec: `--rate`'s, or without it (with `--stages`, ramping
    /// from 0) one at the stages' highest rate with the defaults, which the
    /// limiter is built with before the stages set its rate.
    pub(crate) fn spec(&self) -> RateSpec {
        ramp::spec_of(self.rate, self.stages.as_ref())
    }

    /// `--work`, spinning with `--work-cpu`.
    ///
    /// # Errors
    ///
    /// A [`UsageError`] for `--work-cpu` without `--work`.
    fn work(&self) -> Result<Option<WorkSpec>, UsageError> {
        match (self.work, self.work_cpu) {
            (None, true) => Err(UsageError(
                "--work-cpu spins for each op's --work, so it needs --work DUR \
                 (e.g. --work 2ms --work-cpu)"
                    .into(),
            )),
            (work, cpu) => Ok(work.map(|w| WorkSpec { cpu, ..w })),
        }
    }
}

/// Refuses a `--fail-if` condition on a figure the run does not measure:
/// pace measures the ops' wait, with --work (`work`) their service and
/// response times too, and has no failures.
fn check_conditions(conditions: &[Condition], work: bool) -> Result<(), UsageError> {
    const WAIT: [TimeFigure; 1] = [TimeFigure::Wait];
    const WORK: [TimeFigure; 3] = [TimeFigure::Wait, TimeFigure::Service, TimeFigure::Response];
    let measured: &[TimeFigure] = if work { &WORK } else { &WAIT };
    for c in conditions {
        c.check_measured(measured, false).map_err(|e| {
            let hint = match work {
                false if e.contains("does not measure") => " (service and response need --work)",
                _ => "",
            };
            UsageError(format!("{e}{hint}"))
        })?;
    }
    Ok(())
}

fn parse_threads(s: &str) -> Result<u32, String> {
    let expected = format!("expected a whole number of threads from 1 to {MAX_THREADS}");
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Ok(0) => Err(format!("at least 1 thread is needed; {expected}")),
        _ => Err(expected),
    }
}

/// How the run `args` asks for is driven, aiming at `target`; the limiter
/// refuses requests that would wait longer than `max_wait`.
///
/// # Errors
///
/// A `--plot` file that cannot be created, or a `--bucket` the run cannot
/// be drawn with.
fn run_plan<'a>(
    args: &PaceArgs,
    target: Target<'a>,
    max_wait: Option<Duration>,
    work: Option<WorkSpec>,
    interrupt: &'a Interrupt,
) -> anyhow::Result<RunPlan<'a>> {
    // clap rejects --duration, --count and --stages together.
    let count = args.count;
    let duration = match &args.stages {
        Some(arg) => Some(arg.stages.total()),
        None => run::duration(args.duration, count),
    };
    let whole_run = duration.map_or(0, report::duration_nanos);
    let bucket = plot::run_buckets(
        args.plot.as_ref(),
        args.bucket,
        duration,
        count,
        target.over(whole_run),
    )?;
    Ok(RunPlan {
        // One clock for every limiter, so their readings compare.
        clock: DefaultClock::new(),
        threads: args.threads,
        duration,
        count,
        bucket,
        target,
        interrupt,
        max_wait,
        work,
        max_behind: args.max_behind.map(report::duration_nanos),
    })
}

/// Runs `pace` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] for an option the limiter does not take, a
/// configuration the library refuses, `--work-cpu` without `--work` or a
/// `--fail-if` condition on a figure the run does not measure; an
/// I/O error if a worker thread cannot be started, or for a `--plot` or
/// `--hdr-out` file that cannot be created or written; an error if a worker
/// panicked.
pub fn run(args: &PaceArgs, interrupt: &Interrupt) -> anyhow::Result<PaceReport> {
    let spec = args.spec();
    let work = args.work()?;
    check_conditions(&args.fail_if, work.is_some())?;
    on_redis::check(args)?;
    let config = args.limiter.config(&spec, args.access.access())?;
    let shared = shared::connect(&args.redis, &config)?;
    let limiter_count = if spec.scope() == Scope::Thread {
        args.threads
    } else {
        1
    };
    let ramp = args
        .stages
        .as_ref()
        .map(|arg| Ramp::new(arg, ramp::start_rate(args.rate)))
        .transpose()
        .map_err(UsageError)?;
    let target = Target {
        rate: spec.rate().get() * f64::from(limiter_count),
        limiters: limiter_count,
        ramp: ramp.as_ref(),
    };
    let mut plan = run_plan(args, target, config.kind().max_wait(), work, interrupt)?;
    if let Some(path) = &args.hdr_out {
        File::create(path)
            .with_context(|| format!("cannot create the --hdr-out file {}", path.display()))?;
    }
    let (mut outcome, stats, effective) = match &shared {
        Some(shared) => {
            // The shared limiter's grants are on its own clock.
            plan.clock = shared.clock();
            shared.closing_on(interrupt, || on_redis::run(shared, &config, plan))?
        }
        None => visit(&config, plan, limiter_count)?,
    };
    if shared.as_ref().is_some_and(|s| s.stopped().is_some()) {
        // The workers' refusals are the shared limit's stop, which the
        // report says.
        outcome.results.iter_mut().for_each(|r| r.error = None);
    }
    if let Some(e) = outcome.results.iter_mut().find_map(|r| r.error.take()) {
        return Err(e.context(format!("--limiter {}", args.limiter.kind().name())));
    }
    let mut report = summarize(args, &config, &plan, &outcome, stats, &effective);
    if let Some(shared) = &shared {
        report.share(shared.report(shared::granted(shared.limiter())));
    }
    report.judge(&args.fail_if);
    // A run --max-behind ended says so in its error line instead.
    if let (Some(w), None) = (report.below_target_warning(), report.stopped_behind()) {
        report::warn(&w);
    }
    if let (Some(to), Some(width)) = (&args.plot, plan.bucket) {
        write_plot(to, &report, &outcome.results, width)?;
    }
    if let Some(path) = &args.hdr_out {
        write_hdr_log(path, &report, run::started_at(&plan.clock, outcome.t0))?;
    }
    Ok(report)
}

/// Runs `plan` on `limiter_count` limiters `config` builds.
fn visit(
    config: &ratekeeper::config::LimiterConfig,
    plan: RunPlan<'_>,
    limiter_count: u32,
) -> anyhow::Result<(drive::Outcome, visit::LimiterStats, report::EffectiveRate)> {
    let visitor = Pace { plan, config };
    config
        .visit_with_clock(plan.clock, limiter_count as usize, visitor)
        .map_err(|e| anyhow::Error::new(e).context(UsageError("cannot build the limiter".into())))?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words after `label` on the first line of `text` starting with it.
    fn fields(text: &str, label: &str) -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} line in:\n{text}"))[label.len()..]
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// One real run (20 ops at 2000/s, with work), rendered both ways: the
    /// text and the JSON of the same report carry the same numbers.
    #[test]
    fn text_and_json_reports_say_the_same() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: PaceArgs,
        }
        let argv = ["pace", "--rate", "2000", "--count", "20", "--work", "100us"];
        let args = Wrap::parse_from(argv).args;
        let report = run(&args, &Interrupt::new()).unwrap();
        let text = report.to_string();
        let json = serde_json::to_value(&report).unwrap();
        let num = |key: &str| {
            json[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{key}: {json}"))
        };
        assert_eq!(
            fields(&text, "ops")[0],
            crate::report::fmt_count(num("ops") as u64)
        );
        assert_eq!(fields(&text, "ops")[0], "20");
        let rate = |label: &str, key: &str| {
            let shown = fields(&text, label)[0].replace(',', "");
            let shown: f64 = shown.parse().unwrap();
            // The text rounds to 4 decimals below 100/s, 1 above.
            assert!(
                (shown - num(key)).abs() <= 0.05 + 1e-4 * num(key),
                "{label}: {text}"
            );
        };
        rate("target rate", "target_rate");
        rate("achieved rate", "achieved_rate");
        rate("effective rate", "effective_rate");
        let nanos = |label: &str, key: &str| {
            let shown = crate::report::fmt_nanos(num(key) as u64);
            assert_eq!(fields(&text, label)[0], shown, "{label}: {text}");
        };
        nanos("rate span", "rate_span_ns");
        nanos("wall clock", "wall_ns");
        nanos("behind", "behind_ns");
        nanos("backlog", "backlog_ns");
        nanos("limiter wait", "total_wait_ns");
        // The wait/service/response table, p50 to max and mean.
        for (row, key) in [
            ("wait", "wait_ns"),
            ("service", "service_ns"),
            ("response", "response_ns"),
        ] {
            let shown: Vec<String> = text
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|w| w.len() == 8 && w[0] == row)
                .unwrap_or_else(|| panic!("no {row} row in:\n{text}"))[1..]
                .iter()
                .map(|w| w.to_string())
                .collect();
            let stats = &json[key];
            let want: Vec<String> = ["p50", "p90", "p95", "p99", "p999", "max", "mean"]
                .iter()
                .map(|s| {
                    crate::report::fmt_nanos(
                        stats[s]
                            .as_u64()
                            .unwrap_or_else(|| panic!("{key}.{s}: {stats}")),
                    )
                })
                .collect();
            assert_eq!(shown, want, "{row}: {text}");
        }
    }

    #[test]
    fn fail_if_takes_only_the_figures_the_run_measures() {
        let c = |t: &str| parse_condition(t).unwrap();
        assert!(check_conditions(&[c("wait.p99>1ms"), c("rate<10")], false).is_ok());
        let e = check_conditions(&[c("service.p99>1ms")], false).unwrap_err();
        assert!(e.0.contains("does not measure service"), "{e}");
        assert!(e.0.contains("need --work"), "{e}");
        assert!(check_conditions(&[c("response>1ms"), c("service.max>1s")], true).is_ok());
        let e = check_conditions(&[c("failures>0")], true).unwrap_err();
        assert!(e.0.contains("no failures"), "{e}");
        assert!(!e.0.contains("--work"), "{e}");
    }

    #[test]
    fn threads_are_checked() {
        assert!(parse_threads("0").unwrap_err().contains("at least 1"));
        assert_eq!(parse_threads("3"), Ok(3));
    }
}
