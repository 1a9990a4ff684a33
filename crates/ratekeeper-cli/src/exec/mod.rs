//! `ratekeeper exec`: run a command repeatedly at a rate, at most
//! `--concurrency` runs at once, and report each run's service time and its
//! response time measured from when it was *scheduled* (free of coordinated
//! omission, as wrk2 measures), with counts by exit status.
//!
//! The main thread dispatches: it takes a permit from the limiter (the
//! [`Grant`](ratekeeper::Grant) says when the run was due), waits until the
//! permit is ready and a worker is free, and hands the run to that worker.
//! Each of the `--concurrency` worker threads spawns its runs and waits for
//! them, reading the clock right before the spawn and right after the exit.
//! A run's
//!
//! * **wait** is `start − scheduled`: how late it started, for the limiter or
//!   for a free worker;
//! * **service time** is `end − start`: how long the command ran (its spawn
//!   included);
//! * **response time** is `end − scheduled`, wait plus service: what a user
//!   arriving on schedule would have seen.
//!
//! A run that could not start in time because every worker was busy keeps
//! its scheduled time, so the delay shows in its response time instead of
//! stretching the schedule (coordinated omission).
//!
//! `run` gathers: the dispatcher ([`dispatch`](mod@dispatch)) hands runs to
//! the workers ([`worker`]) and tallies them as they finish; [`summary`]
//! computes the report from the tally and [`render`] prints it and draws the
//! plot. With `--stages`, [`ramp`](crate::run::ramp) changes the running
//! limiter's rate from a thread of its own and says what target that sets.

mod dispatch;
mod help;
mod lag;
mod render;
mod shutdown;
mod slot;
mod summary;
#[cfg(test)]
mod tests;
mod worker;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use ratekeeper::config::{Access, LimiterConfig, LimiterRef};
use ratekeeper::{DefaultClock, RateSpec, Scope};

use crate::error::UsageError;
use crate::flags::limiter::LimiterArgs;
use crate::flags::redis::RedisArgs;
use crate::flags::{parse_count, parse_duration, parse_spec, parse_timeout};
use crate::limiter;
use crate::plot;
use crate::report::duration_nanos;
use crate::run::interrupt::Interrupt;
use crate::run::ramp::{self, Ramp, StagesArg};
use crate::run::verdict::{parse_condition, Condition, TimeFigure};
use crate::shared::{self, Shared};
// The module only (`{self}`), not main.rs's `fn run` beside it.
use crate::run::{self};

use dispatch::{dispatch, Limiter, Plan};
pub use help::{AFTER_HELP, AFTER_LONG_HELP, LONG_ABOUT};
pub use render::write_plot;
use render::{write_hdr_log, PlotArg};
pub use summary::ExecReport;
use summary::{report, Ran};
use worker::{Output, Spawner};

/// The most runs `--concurrency` lets run at once.
const MAX_CONCURRENCY: u32 = 1024;

/// Options of `ratekeeper exec`.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// Runs started per second, as a rate spec: rate[,burst][,verb], e.g. 5,
    /// 0.5, 100,1.5 (with --stages, where they start; without it they start
    /// at 0).
    #[arg(
        long,
        value_name = "SPEC",
        value_parser = parse_spec,
        allow_hyphen_values = true,
        required_unless_present = "stages"
    )]
    pub rate: Option<RateSpec>,

    // The rate limiter that schedules the runs, and its options.
    #[command(flatten)]
    pub limiter: LimiterArgs,

    // A limit shared with other processes through Redis.
    #[command(flatten)]
    pub redis: RedisArgs,

    /// How many runs may run at once (1 to 1024).
    #[arg(long, short = 'c', value_name = "N", default_value = "1", value_parser = parse_concurrency, display_order = 100)]
    pub concurrency: u32,

    /// Start exactly this many runs.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,

    /// Start runs for this long, e.g. 10s, 1m [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "count")]
    pub duration: Option<Duration>,

    /// Ramp the rate through stages, as k6 does: DUR:RATE,... ramps in a
    /// straight line from --rate's rate to each RATE over its DUR, e.g.
    /// 10s:1k,30s:10k,10s:0; the run lasts the stages' total.
    #[arg(
        long,
        value_name = "STAGES",
        value_parser = ramp::parse_stages_arg,
        conflicts_with_all = ["duration", "count"]
    )]
    pub stages: Option<StagesArg>,

    /// Append every run's standard output to FILE (created if missing)
    /// [default: ratekeeper's standard output; with --json, its standard
    /// error].
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "discard_stdout",
        display_order = 105
    )]
    pub stdout: Option<PathBuf>,

    /// Discard every run's standard output.
    #[arg(long, display_order = 106)]
    pub discard_stdout: bool,

    /// Read every run's standard output and count the runs by the status
    /// each prints on its last line, e.g. curl -w '%{http_code}' (see
    /// Statuses in --help).
    #[arg(long, conflicts_with_all = ["stdout", "discard_stdout"], display_order = 107)]
    pub status_from_stdout: bool,

    /// Stop starting runs after the first failed one (a non-zero exit, a
    /// signal, or a failed spawn); exit status 1 after the report.
    #[arg(long, display_order = 108)]
    pub fail_fast: bool,

    /// At a stop (SIGINT, SIGTERM, --max-behind), how long the runs still
    /// running have to end after SIGTERM before their process groups get
    /// SIGKILL, e.g. 500ms; 0s kills them at once.
    #[arg(long, value_name = "DUR", default_value = "5s", value_parser = parse_timeout, display_order = 111)]
    pub grace: Duration,

    /// End the run once it falls this far behind its schedule, e.g. 2s:
    /// stop starting runs, end the running ones as at a signal, print the
    /// report and exit with status 3.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, display_order = 110)]
    pub max_behind: Option<Duration>,

    /// Draw the runs started per time bucket and their response and service
    /// times to FILE, an SVG or a PNG (by its extension).
    #[arg(long, value_name = "FILE", value_parser = render::parse_plot_arg, display_order = 102)]
    pub plot: Option<PlotArg>,

    /// The plot's time bucket, e.g. 1s [default: about a hundredth of the
    /// run, and at least 5 runs at the target rate].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "plot", display_order = 103)]
    pub bucket: Option<Duration>,

    /// Exit with status 99 after the report if COND holds, e.g.
    /// 'response.p99>50ms', 'wait.max>=1s', 'rate<990', 'failures>0'
    /// (repeatable; see Fail-if in --help).
    #[arg(long, value_name = "COND", value_parser = parse_condition, display_order = 109)]
    pub fail_if: Vec<Condition>,

    /// Write the runs' wait, service and response times to FILE as
    /// HdrHistogram's interval log (one interval, the whole run; tags wait,
    /// service, response; nanoseconds).
    #[arg(long, value_name = "FILE", display_order = 104)]
    pub hdr_out: Option<PathBuf>,

    /// Print the report as one JSON object (schema in --help).
    #[arg(long, display_order = 101)]
    pub json: bool,

    /// The command to run and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl ExecArgs {
    /// The rate spec: `--rate`'s, or without it (with `--stages`, ramping
    /// from 0) one at the stages' highest rate (see [`ramp::spec_of`]).
    pub(crate) fn spec(&self) -> RateSpec {
        ramp::spec_of(self.rate, self.stages.as_ref())
    }
}

fn parse_concurrency(s: &str) -> Result<u32, String> {
    let expected = format!("expected a whole number of runs at once, from 1 to {MAX_CONCURRENCY}");
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        Ok(0) => Err(format!("at least 1 run at once is needed; {expected}")),
        _ => Err(expected),
    }
}

/// The limiter's configuration: the shared limiter flags (see
/// [`LimiterArgs::config`]), from a spec without the thread scope (one
/// dispatcher takes every permit).
fn limiter_config(args: &ExecArgs) -> anyhow::Result<LimiterConfig> {
    let spec = args.spec();
    if spec.scope() == Scope::Thread {
        return Err(UsageError(format!(
            "the rate spec \"{}\" has the thread scope, which has no meaning for exec: one \
             dispatcher takes every permit and --concurrency bounds the runs at once; give \
             the rate without it (e.g. --rate {})",
            spec,
            spec.rate().get()
        ))
        .into());
    }
    if args.redis.redis.is_some() {
        let refuse = |flag: &str, why: &str| {
            Err(UsageError(format!("{flag} cannot be used with --redis: {why}")).into())
        };
        if args.stages.is_some() {
            return refuse(
                "--stages",
                "the shared limit's rate is every process's, set by the --rate each one gives",
            );
        }
        if args.max_behind.is_some() {
            return refuse(
                "--max-behind",
                "this process's share of the shared rate is not known, so neither is its \
                 schedule",
            );
        }
    }
    args.limiter.config(&spec, Access::Exact)
}

/// Finds `program` as `Command::new` would (a path, or a name looked up in
/// `PATH`), so that a misspelt command is refused before the run instead of
/// failing every run.
#[cfg(unix)]
fn check_program(program: &OsStr) -> Result<(), UsageError> {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let shown = program.to_string_lossy();
    if program.is_empty() {
        return Err(UsageError(
            "the command to run is empty; expected a command after --, e.g. -- curl -s URL"
                .to_owned(),
        ));
    }
    let path = Path::new(program);
    // A name with a slash is a path; a bare name is looked up in PATH.
    let (found, why) = if shown.contains('/') {
        (runnable(path), "not an executable file")
    } else {
        let found = std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| runnable(&dir.join(path)))
        });
        (found, "command not found in PATH")
    };
    match (found, words_in_one(&shown)) {
        (true, _) => Ok(()),
        (false, Some((split, sh))) => Err(UsageError(format!(
            "cannot run '{shown}': that is a whole command line in one word; give its words \
             apart, -- {split}, or run it through a shell, -- sh -c {sh}"
        ))),
        (false, None) => Err(UsageError(format!("cannot run '{shown}': {why}"))),
    }
}

/// For a program name with spaces in it (a command line quoted as one
/// word), the words apart and the line quoted for `sh -c`.
fn words_in_one(program: &str) -> Option<(String, String)> {
    let words: Vec<&str> = program.split_whitespace().collect();
    if words.len() < 2 {
        return None;
    }
    let sh = format!("'{}'", program.trim().replace('\'', r"'\''"));
    Some((words.join(" "), sh))
}

/// Elsewhere the spawn itself tells (a failed spawn is counted).
#[cfg(not(unix))]
fn check_program(_program: &OsStr) -> Result<(), UsageError> {
    Ok(())
}

/// Where the runs' standard output goes (`--stdout`, `--discard-stdout`,
/// `--status-from-stdout`; with `--json`, whose report standard output
/// carries alone, standard error by default).
fn output(args: &ExecArgs) -> anyhow::Result<Output> {
    Ok(match (&args.stdout, args.discard_stdout) {
        (None, false) if args.status_from_stdout => Output::Status,
        (None, false) if args.json => Output::Stderr,
        (Some(path), _) => {
            let file = File::options()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the --stdout file {}", path.display()))?;
            Output::File(file)
        }
        (None, true) => Output::Discard,
        (None, false) => Output::Inherit,
    })
}

/// The command's spawner: the command after `--`, found before the run,
/// and where its output goes.
fn spawner(args: &ExecArgs) -> anyhow::Result<Spawner> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| UsageError("expected a command after --".to_owned()))?;
    check_program(program)?;
    Ok(Spawner {
        program: program.clone(),
        args: rest.to_vec(),
        output: output(args)?,
    })
}

/// Refuses a `--fail-if` condition on a figure exec does not measure (it
/// measures wait, service and response times, and has failed runs).
fn check_conditions(conditions: &[Condition]) -> Result<(), UsageError> {
    const MEASURED: [TimeFigure; 3] = [TimeFigure::Wait, TimeFigure::Service, TimeFigure::Response];
    for c in conditions {
        c.check_measured(&MEASURED, true).map_err(UsageError)?;
    }
    Ok(())
}

/// Dispatches the runs on the limit `shared` through Redis (a signal
/// closing it, so that a decision waiting on the server ends at once), or
/// without `--redis` on `local`.
fn dispatch_on(
    shared: Option<&Shared>,
    local: LimiterRef<'_, DefaultClock>,
    spawner: &Spawner,
    plan: &Plan<'_>,
) -> anyhow::Result<dispatch::Dispatched> {
    match shared {
        Some(s) => s.closing_on(plan.interrupt, || {
            dispatch(Limiter::Shared(s.limiter()), spawner, plan)
        }),
        None => dispatch(Limiter::Local(local), spawner, plan),
    }
}

/// With `--stages`, the rate they ramp from `--rate`'s; how long the run
/// lasts (`None`: count mode); and the rate it aims at (with `--stages`,
/// their mean over the run: the progress line's target and the plot's
/// bucket's).
///
/// # Errors
///
/// A [`UsageError`] for stages that never rise above 0 from 0.
fn ramp_and_length(args: &ExecArgs) -> anyhow::Result<(Option<Ramp>, Option<Duration>, f64)> {
    let start = ramp::start_rate(args.rate);
    Ok(match &args.stages {
        Some(arg) => {
            let ramp = Ramp::new(arg, start).map_err(UsageError)?;
            let total = arg.stages.total();
            let target = ramp.target_rate(duration_nanos(total));
            (Some(ramp), Some(total), target)
        }
        None => (None, run::duration(args.duration, args.count), start),
    })
}

/// Runs `exec` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] for an option the limiter does not take, a command that
/// cannot be found, a `--fail-if` condition on a figure exec does not
/// measure or a configuration the library refuses; an I/O error for a
/// `--stdout`, `--plot` or `--hdr-out` file that cannot be created or
/// written, or a worker thread that cannot be started.
pub fn run(args: &ExecArgs, interrupt: &Interrupt) -> anyhow::Result<ExecReport> {
    let config = limiter_config(args)?;
    check_conditions(&args.fail_if)?;
    let spawner = spawner(args)?;
    let shared = shared::connect(&args.redis, &config)?;
    // A shared limiter's grants are on its own clock.
    let clock = shared
        .as_ref()
        .map_or_else(DefaultClock::new, Shared::clock);
    let limiter = config.build_with_clock(clock)?;
    let effective = limiter::effective_rate(&[limiter.as_ref()], &config, "run");
    effective.warn(
        &format!("--limiter {}", args.limiter.kind().name()),
        args.spec().rate().get(),
        "ops",
    );
    let (ramp, duration, target_rate) = ramp_and_length(args)?;
    let count = args.count;
    let bucket = plot::run_buckets(
        args.plot.as_ref().map(|p| &p.to),
        args.bucket,
        duration,
        count,
        target_rate,
    )?;
    let plan = Plan {
        clock,
        concurrency: args.concurrency as usize,
        duration,
        count,
        bucket,
        target_rate,
        ramp: ramp.as_ref(),
        max_wait: config.kind().max_wait(),
        grace: args.grace,
        max_behind: args.max_behind.map(duration_nanos),
        fail_fast: args.fail_fast,
        interrupt,
    };
    if let Some(path) = &args.hdr_out {
        File::create(path)
            .with_context(|| format!("cannot create the --hdr-out file {}", path.display()))?;
    }
    let d = dispatch_on(shared.as_ref(), limiter.as_ref(), &spawner, &plan)?;
    let started = run::started_at(&clock, d.tally.t0);
    let ran = Ran {
        launched: d.launched,
        stop: d.stop,
        signal: d
            .interrupted
            .then(|| i32::from(interrupt.exit_status()) - 128),
        refused: d.refused,
        grace: args.grace,
        end: d.end,
        lag: d.lag,
        max_behind: args.max_behind,
        config,
        effective,
        duration,
        count,
        ramp,
        driven: d.driven,
        busy: d.busy,
    };
    let mut report = report(args, &d.tally, ran);
    if let Some(s) = &shared {
        report.share(s.report(shared::granted(s.limiter())));
    }
    report.judge(&args.fail_if);
    if let Some(warning) = report.below_target_warning() {
        crate::report::warn(&warning);
    }
    if let Some(path) = &args.hdr_out {
        write_hdr_log(path, &report, started)?;
    }
    Ok(report)
}
