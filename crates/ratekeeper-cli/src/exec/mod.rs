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
//! `run` gathers: the dispatcher ([`dispatch`]) hands runs to the workers
//! ([`worker`]) and tallies them as they finish; [`summary`] computes the
//! report from the tally and [`render`] prints it and draws the plot.

mod dispatch;
mod help;
mod render;
mod slot;
mod summary;
#[cfg(test)]
mod tests;
mod worker;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use ratekeeper::config::{Access, LimiterConfig};
use ratekeeper::{Clock, DefaultClock, RateSpec, Scope};

use crate::error::UsageError;
use crate::flags::limiter::LimiterArgs;
use crate::flags::{parse_count, parse_duration, parse_spec};
use crate::limiter;
use crate::plot::{self, PlotPath};
use crate::progress::{self, Progress, Snapshot};
use crate::report::duration_nanos;
use crate::run::interrupt::{self, Interrupt};
use crate::run::{self};

use dispatch::{reserve_run, Counters, Stop, POLL};
pub use help::{AFTER_HELP, AFTER_LONG_HELP, LONG_ABOUT};
pub use render::write_plot;
use slot::Slot;
pub use summary::ExecReport;
use summary::{report, Ran, Tally};
use worker::{work, Finished, Job, Output, Spawner};

/// The most runs `--concurrency` lets run at once.
const MAX_CONCURRENCY: u32 = 1024;

/// Options of `ratekeeper exec`.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// Runs started per second, as a rate spec: rate[,burst][,verb], e.g. 5,
    /// 0.5, 100,1.5.
    #[arg(long, value_name = "SPEC", value_parser = parse_spec)]
    pub rate: RateSpec,

    // The rate limiter that schedules the runs, and its options.
    #[command(flatten)]
    pub limiter: LimiterArgs,

    /// How many runs may run at once (1 to 1024).
    #[arg(long, short = 'c', value_name = "N", default_value = "1", value_parser = parse_concurrency)]
    pub concurrency: u32,

    /// Start exactly this many runs.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_count)]
    pub count: Option<u64>,

    /// Start runs for this long, e.g. 10s, 1m [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "count")]
    pub duration: Option<Duration>,

    /// Append every run's standard output to FILE (created if missing)
    /// [default: ratekeeper's standard output].
    #[arg(long, value_name = "FILE", conflicts_with = "discard_stdout")]
    pub stdout: Option<PathBuf>,

    /// Discard every run's standard output.
    #[arg(long)]
    pub discard_stdout: bool,

    /// Stop starting runs after the first failed one (a non-zero exit, a
    /// signal, or a failed spawn); exit status 1 after the report.
    #[arg(long)]
    pub fail_fast: bool,

    /// Draw the runs started per time bucket and their response and service
    /// times to FILE, an SVG or a PNG (by its extension).
    #[arg(long, value_name = "FILE", value_parser = plot::parse_plot_path)]
    pub plot: Option<PlotPath>,

    /// The plot's time bucket, e.g. 1s [default: about a hundredth of the
    /// run, and at least 5 runs at the target rate].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "plot")]
    pub bucket: Option<Duration>,

    /// Print the report as one JSON object (schema in --help).
    #[arg(long)]
    pub json: bool,

    /// The command to run and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
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
    if args.rate.scope() == Scope::Thread {
        return Err(UsageError(format!(
            "the rate spec \"{}\" has the thread scope, which has no meaning for exec: one \
             dispatcher takes every permit and --concurrency bounds the runs at once; give \
             the rate without it (e.g. --rate {})",
            args.rate,
            args.rate.rate().get()
        ))
        .into());
    }
    args.limiter.config(&args.rate, Access::Exact)
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
    if shown.contains('/') {
        if runnable(path) {
            return Ok(());
        }
        return Err(UsageError(format!(
            "cannot run '{shown}': not an executable file"
        )));
    }
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| runnable(&dir.join(path))));
    if found {
        Ok(())
    } else {
        Err(UsageError(format!(
            "cannot run '{shown}': command not found in PATH"
        )))
    }
}

/// Elsewhere the spawn itself tells (a failed spawn is counted).
#[cfg(not(unix))]
fn check_program(_program: &OsStr) -> Result<(), UsageError> {
    Ok(())
}

/// Where the runs' standard output goes (`--stdout`, `--discard-stdout`).
fn output(args: &ExecArgs) -> anyhow::Result<Output> {
    Ok(match (&args.stdout, args.discard_stdout) {
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

/// Runs `exec` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] for an option the limiter does not take, a command that
/// cannot be found or a configuration the library refuses; an I/O error for
/// a `--stdout` or `--plot` file that cannot be created or a worker thread
/// that cannot be started.
pub fn run(args: &ExecArgs, interrupt: &Interrupt) -> anyhow::Result<ExecReport> {
    let config = limiter_config(args)?;
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| UsageError("expected a command after --".to_owned()))?;
    check_program(program)?;
    let clock = DefaultClock::new();
    let limiter = config.build_with_clock(clock)?;
    let effective = limiter::effective_rate(&[limiter.as_ref()], &config, "run");
    effective.warn(
        &format!("--limiter {}", args.limiter.kind().name()),
        args.rate.rate().get(),
        "ops",
    );
    let spawner = Spawner {
        program: program.clone(),
        args: rest.to_vec(),
        output: output(args)?,
    };
    let target_rate = args.rate.rate().get();
    let count = args.count;
    let duration = run::duration(args.duration, count);
    let bucket = plot::run_buckets(
        args.plot.as_ref(),
        args.bucket,
        duration,
        args.count,
        target_rate,
    )?;
    let max_wait = config.kind().max_wait();
    let mut refused = 0u64;

    let concurrency = args.concurrency as usize;
    let slots: Vec<Slot> = (0..concurrency).map(|_| Slot::default()).collect();
    let (done_tx, done_rx) = mpsc::channel::<Finished>();
    let counters = Arc::new(Counters::default());

    let (tally, launched, stop, killed) = std::thread::scope(|scope| {
        let mut jobs = Vec::with_capacity(concurrency);
        for (i, slot) in slots.iter().enumerate() {
            let (job_tx, job_rx) = mpsc::channel::<Job>();
            let done = done_tx.clone();
            let (spawner, clock) = (&spawner, &clock);
            std::thread::Builder::new()
                .name(format!("exec-{i}"))
                .spawn_scoped(scope, move || work(i, job_rx, done, spawner, clock, slot))
                .with_context(|| format!("starting worker thread {} of {concurrency}", i + 1))?;
            jobs.push(job_tx);
        }
        drop(done_tx);
        let t0 = limiter::start_schedules(&[limiter.as_ref()], &clock);
        let limiter = limiter.as_ref().as_dyn();
        let deadline = duration.map(|d| t0.saturating_add(duration_nanos(d)));
        let line = progress::enabled()
            .then(|| {
                let c = Arc::clone(&counters);
                Progress::start("runs started", target_rate, move || {
                    // Ordering: Relaxed; gauges.
                    let started = c.started.load(Ordering::Relaxed);
                    let finished = c.finished.load(Ordering::Relaxed);
                    Snapshot {
                        ops: started,
                        detail: progress::detail(&[
                            (started.saturating_sub(finished), "running"),
                            (c.failed.load(Ordering::Relaxed), "failed"),
                        ]),
                    }
                })
            })
            .flatten();

        let mut tally = Tally::new(t0, bucket);
        let mut idle: Vec<usize> = (0..concurrency).rev().collect();
        let mut launched = 0u64;
        let finish = |f: Finished, tally: &mut Tally, idle: &mut Vec<usize>| {
            idle.push(f.worker);
            tally.add(&f);
            // Ordering: Relaxed; gauges for the progress line.
            counters.finished.fetch_add(1, Ordering::Relaxed);
            counters.failed.store(tally.failed, Ordering::Relaxed);
        };
        let stop = 'dispatch: loop {
            while let Ok(f) = done_rx.try_recv() {
                finish(f, &mut tally, &mut idle);
            }
            if interrupt.is_set() {
                break Stop::Interrupted;
            }
            if args.fail_fast && tally.failed > 0 {
                break Stop::FailFast;
            }
            if count.is_some_and(|n| launched >= n) {
                break Stop::Done;
            }
            let Some(grant) = reserve_run(limiter, max_wait, deadline, interrupt, &mut refused)?
            else {
                if deadline.is_some_and(|d| clock.now_nanos() >= d) {
                    break Stop::Done;
                }
                continue;
            };
            if deadline.is_some_and(|d| grant.ready_nanos() >= d) {
                limiter.cancel(&grant);
                break Stop::Done;
            }
            // Every limiter's long wait is slept on the interrupt, a token
            // pool's too (the library's stoppable wait asks the pool what it
            // waits for, so an inline pool's waiter still fills it).
            let grant = match interrupt::wait_for_grant(limiter, grant, interrupt) {
                Some(g) => g,
                None => break Stop::Interrupted,
            };
            // A free worker. No run starts after Ctrl-C or, with
            // --fail-fast, after a failure, even one seen just now.
            let worker = loop {
                while let Ok(f) = done_rx.try_recv() {
                    finish(f, &mut tally, &mut idle);
                }
                if interrupt.is_set() {
                    limiter.cancel(&grant);
                    break 'dispatch Stop::Interrupted;
                }
                if args.fail_fast && tally.failed > 0 {
                    limiter.cancel(&grant);
                    break 'dispatch Stop::FailFast;
                }
                if let Some(w) = idle.pop() {
                    break w;
                }
                match done_rx.recv_timeout(POLL) {
                    Ok(f) => finish(f, &mut tally, &mut idle),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => {
                        anyhow::bail!("the worker threads stopped")
                    }
                }
            };
            launched += 1;
            let job = Job {
                number: launched,
                scheduled: grant.scheduled_nanos(),
            };
            if jobs[worker].send(job).is_err() {
                anyhow::bail!("worker thread {} stopped", worker + 1);
            }
            // Ordering: Relaxed; a gauge for the progress line.
            counters.started.store(launched, Ordering::Relaxed);
        };
        // Wait for the running runs; a second Ctrl-C kills them.
        drop(jobs);
        let mut killed = None;
        while idle.len() < concurrency {
            match done_rx.recv_timeout(POLL) {
                Ok(f) => finish(f, &mut tally, &mut idle),
                Err(RecvTimeoutError::Timeout) => {
                    if killed.is_none() && interrupt.count() >= 2 {
                        killed = Some(slots.iter().filter(|s| s.kill()).count() as u64);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        if let Some(line) = line {
            line.finish();
        }
        Ok((tally, launched, stop, killed))
    })?;

    Ok(report(
        args,
        &tally,
        Ran {
            launched,
            stop,
            killed,
            refused,
            config,
            effective,
            duration,
            count,
        },
    ))
}
