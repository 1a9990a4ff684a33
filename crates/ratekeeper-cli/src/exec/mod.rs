//! `ratekeeper exec`: run a command repeatedly at a rate, at most
//! `--concurrency` runs at once, and report each run's service time and its
//! response time measured from when it was *scheduled* (free of coordinated
//! omission, as wrk2 measures), with counts by exit status.
//!
//! The main thread dispatches: it takes a permit from the limiter (the
//! [`Grant`] says when the run was due), waits until the permit is ready and
//! a worker is free, and hands the run to that worker. Each of the
//! `--concurrency` worker threads spawns its runs and waits for them, reading
//! the clock right before the spawn and right after the exit. A run's
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

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use ratekeeper::config::{Access, KindConfig, LimiterConfig, LimiterKind};
use ratekeeper::pool::Filling;
use ratekeeper::{AcquireError, Clock, DefaultClock, Grant, RateLimiter, RateSpec, Scope};
use serde::Serialize;

use crate::error::UsageError;
use crate::flags::limiter::LimiterArgs;
use crate::flags::{parse_count, parse_duration, parse_spec};
use crate::limiter::{self, wait_policy_name, LimiterFields};
use crate::plot::{self, Buckets, Panel, Plot, PlotPath, Series, Unit, WaitStat};
use crate::progress::{self, Progress, Snapshot};
use crate::report::{
    duration_nanos, fmt_duration, fmt_effective, fmt_nanos, fmt_rate, resolution_note,
    EffectiveRate, WaitRecorder, WaitSummary,
};
use crate::run::interrupt::{self, Interrupt};
use crate::run::{self, schedule_span, sleep_until_retry};

/// The most runs `--concurrency` lets run at once.
const MAX_CONCURRENCY: u32 = 1024;

/// The most characters of a plot's title (its width, in the title's font).
const TITLE_CHARS: usize = 95;

/// How often the dispatcher, waiting for a run to end, checks for Ctrl-C.
const POLL: Duration = Duration::from_millis(20);

/// `exec --help` text above the options.
pub const LONG_ABOUT: &str = "\
Run a command repeatedly at a rate, at most --concurrency runs at once, and \
report each run's service time and response time, with counts by exit status.

Each run takes a permit from the rate limiter, which says when the run was \
scheduled: when it was due had every run kept the ideal schedule. The run \
starts once its permit is ready and one of the --concurrency slots is free. \
For every run:
  wait       start - scheduled: how late it started (for the limiter or for a \
free slot)
  service    end - start: how long the command ran, its spawn included
  response   end - scheduled = wait + service: what a user arriving on \
schedule would have seen
Response times are measured from the schedule, as wrk2 does: a run held up \
because every slot was busy keeps its scheduled time, so the delay shows in \
its response time instead of silently stretching the schedule (no \
coordinated omission).

The command is run directly (not through a shell: write sh -c '...' for one), \
after --, with its standard input empty (/dev/null) and its standard error \
shared with ratekeeper's. Its standard output is ratekeeper's (before the \
report) unless --stdout FILE appends every run's output to FILE or \
--discard-stdout discards it. With --json, use one of them to keep standard \
output to the one line of JSON. A command that cannot be found is refused \
before the run (exit status 2).

A run that exits with a status other than 0, is killed by a signal, or cannot \
be started (spawned) has failed: it is counted, and the run goes on, unless \
--fail-fast: then no run is started after the first failure is seen, the \
runs still running are waited for, the report is printed and the exit status \
is 1.

Limiters (--limiter), with the same options as pace's: pacer (the default; \
ratekeeper's Pacer, the spec's burst ratio is its strictness unless \
--strictness overrides it; --precise), pool (nosqlbench's token pool, filled \
inline, or with --fill thread by a filler thread every --fill-interval), \
bursty (Guava's SmoothBursty, --max-burst), warmup (Guava's SmoothWarmingUp, \
--warmup required, --cold-factor), refill (Resilience4j's RefillLimiter: \
rate x --refresh-period permits per period, a bucket of --capacity holding \
--initial-permits at the start) and cycle (Resilience4j's CycleLimiter: that \
many permits at the start of each period). Above 100000 runs/s bursty and \
warmup keep their schedule in whole nanoseconds (JSON resolution \"nanos\"), \
where Guava's whole microseconds would charge a run up to half too little \
(above 1000000 runs/s, nothing: no limit at all); at or below, they are \
Guava's arithmetic exactly. With refill and cycle a permit whose wait would \
exceed --timeout (default 5s) is refused: the refusal is counted (refused) \
and the dispatcher sleeps until a permit could be granted within the \
timeout and asks again, so no run is dropped. Each limiter's options are \
refused with the others. The schedule starts when the run does; the spec's \
verb has no effect, and its scope must be the default (activity): one \
dispatcher takes every permit.

Run length: --duration DUR (default 5s) or --count N, not both. With \
--duration, runs are started while their permits are ready before the \
deadline; runs still running then are waited for.

Ctrl-C: the first stops starting runs (a permit being waited for is given \
back; with --limiter pool it is waited for) and waits for the running ones; a \
second kills them (SIGKILL; on Linux, Android, macOS and FreeBSD). \
Typed at a terminal, Ctrl-C also reaches the running commands themselves. \
The report covers every run started, and the exit status is 130.

Report:
  runs            runs started (a run that could not be spawned included)
  effective rate  the rate the limiter's integer arithmetic gives: the Pacer \
and the pool give each run floor(1e9 / rate) whole nanoseconds (--rate 510M: \
1 ns, 1e9 runs/s); bursty and warmup charge a run whole microseconds \
(nanoseconds above 100000 runs/s), truncated; refill refills a permit every \
floor(refresh period / limit) ns; cycle is exact. More than 0.1% off the target, \
the report says by how much and why, and a warning on standard error says so \
before the first run
  achieved rate   runs / launch span. The launch span is --duration, or, with \
--count or after Ctrl-C, from the start of the schedule until the last run \
started, plus one slot (1 / target rate)
  elapsed         from the start of the schedule until the last run ended
  refused         refill, cycle only: permits refused because their wait would \
exceed --timeout (the dispatcher waited and asked again)
  exit N          runs that exited with status N
  signal N        runs killed by signal N (Unix)
  spawn failed    runs that could not be started, with the first error
  killed          runs killed by a second Ctrl-C
  wait, service, response: p50, p90, p99, p99.9, max and mean over the runs \
that started (HdrHistogram, 3 significant digits; max and mean exact)

While the run goes on, a progress line on standard error shows the elapsed \
time, the runs started, running and failed, and the rate over the last \
second, if standard error is a terminal; otherwise ratekeeper writes nothing \
to it but that warning.

Plot (--plot FILE, SVG or PNG by the extension): the upper panel shows the \
runs started per time bucket (--bucket) as a rate, against the target rate \
(dashed); the lower panel shows the longest and the mean response time and \
the mean service time of the runs started in each bucket.";

/// Examples, shown by `exec -h` and `exec --help`.
pub const AFTER_HELP: &str = "\
Examples:
  ratekeeper exec --rate 5 --concurrency 2 -n 20 -- curl -s http://127.0.0.1:8080/
  ratekeeper exec --rate 100 --concurrency 8 --duration 10s --discard-stdout --json -- ./probe.sh
  ratekeeper exec --rate 2 -n 10 --stdout runs.log --fail-fast -- sh -c 'date; ./check'
  ratekeeper exec --limiter warmup --warmup 5s --rate 50 --concurrency 4 --duration 20s --plot exec.svg -- ./client
  ratekeeper exec --limiter refill --rate 10 --capacity 20 --timeout 0s -n 50 -- ./probe.sh";

/// `exec --help` text below the options: examples and the JSON schema.
pub const AFTER_LONG_HELP: &str = "\
Examples:
  ratekeeper exec --rate 5 --concurrency 2 -n 20 -- curl -s http://127.0.0.1:8080/
  ratekeeper exec --rate 100 --concurrency 8 --duration 10s --discard-stdout --json -- ./probe.sh
  ratekeeper exec --rate 2 -n 10 --stdout runs.log --fail-fast -- sh -c 'date; ./check'
  ratekeeper exec --limiter warmup --warmup 5s --rate 50 --concurrency 4 --duration 20s --plot exec.svg -- ./client
  ratekeeper exec --limiter refill --rate 10 --capacity 20 --timeout 0s -n 50 -- ./probe.sh

JSON output (--json): one object on one line, after anything the runs wrote \
to standard output. Durations are integer nanoseconds, rates are runs per \
second (floating point). Fields marked with limiters in parentheses appear \
only with those limiters:
  command          array    the command and its arguments (lossy UTF-8)
  spec             string   the rate spec in canonical form
  limiter          string   \"pacer\", \"pool\", \"bursty\", \"warmup\", \"refill\" or \"cycle\"
  strictness       number   (pacer) the strictness used
  strictness_mode  string   (pacer) \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
  wait_policy      string   (pacer) \"default\" or \"precise\"
  burst_ratio      number   (pool) the pool's burst ratio
  filling          string   (pool) \"inline\" or \"thread\"
  fill_interval_ns integer  (pool) the filler thread's interval; null for inline
  max_burst_seconds number  (bursty) seconds of permits idle time may store
  warmup_ns        integer  (warmup) the warm-up period
  cold_factor      number   (warmup) how much slower a cold limiter is
  resolution       string   (bursty, warmup) the schedule's unit: \"micros\" \
(Guava's, at or below 100000 runs/s) or \"nanos\" (above)
  limit_for_period integer  (refill, cycle) permits per refresh period: rate x refresh period
  refresh_period_ns integer (refill, cycle) the refresh period
  timeout_ns       integer  (refill, cycle) how long a permit may wait
  capacity         integer  (refill) the most permits the bucket stores
  initial_permits  integer  (refill) the permits in the bucket at the start
  target_rate      number   runs/s the schedule aims at
  effective_rate   number   runs/s the limiter's integer arithmetic gives (see \
Report above); null for a limiter that does not limit at all
  concurrency      integer  the most runs at once
  mode             string   \"duration\" or \"count\"
  duration_ns      integer  the requested duration (null in count mode)
  count            integer  the requested count (null in duration mode)
  stdout           string   \"inherit\", \"file\" or \"discard\": where the runs' output went
  stdout_file      string   (--stdout) the file
  runs             integer  runs started, spawn failures included
  succeeded        integer  runs that exited with status 0
  failed           integer  runs - succeeded
  exit_codes       object   {\"STATUS\": runs}, e.g. {\"0\": 18, \"3\": 2}
  signals          object   {\"SIGNAL\": runs} by signal number, e.g. {\"9\": 1}
  spawn_failed     integer  runs that could not be started
  spawn_error      string   the first spawn error, or null
  killed           integer  runs killed by a second Ctrl-C
  launch_span_ns   integer  see Report above
  achieved_rate    number   runs / launch span
  elapsed_ns       integer  from the start of the schedule to the end of the last run
  wait_ns          object   {\"p50\", \"p90\", \"p99\", \"p999\", \"max\", \"mean\"}: start - scheduled
  service_ns       object   the same percentiles of end - start
  response_ns      object   the same percentiles of end - scheduled
  refused          integer  (refill, cycle) permits refused by the timeout (each run asked again)
  interrupted      boolean  whether Ctrl-C stopped the run (exit status 130)
  fail_fast        boolean  whether --fail-fast was given
  stopped_by_fail_fast boolean  whether a failure stopped the run (exit status 1)";

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

/// Where the runs' standard output goes.
#[derive(Debug)]
enum Output {
    Inherit,
    Discard,
    /// Appended to this file.
    File(File),
}

/// Spawns runs of the command.
#[derive(Debug)]
struct Spawner {
    program: OsString,
    args: Vec<OsString>,
    output: Output,
}

impl Spawner {
    fn spawn(&self) -> std::io::Result<Child> {
        let stdout = match &self.output {
            Output::Inherit => Stdio::inherit(),
            Output::Discard => Stdio::null(),
            Output::File(f) => Stdio::from(f.try_clone()?),
        };
        Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::inherit())
            .spawn()
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it (Unix).
    Signaled(i32),
    /// It could not be spawned (or waited for): the error.
    SpawnFailed(String),
}

impl Ended {
    fn from_status(status: ExitStatus) -> Ended {
        if let Some(code) = status.code() {
            return Ended::Exited(code);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = status.signal() {
                return Ended::Signaled(sig);
            }
        }
        Ended::SpawnFailed(format!("unknown exit status {status}"))
    }
}

/// A run handed to a worker.
#[derive(Debug, Clone, Copy)]
struct Job {
    /// The run's number, from 1.
    number: u64,
    scheduled: u64,
}

/// A run a worker finished.
#[derive(Debug)]
struct Finished {
    worker: usize,
    number: u64,
    scheduled: u64,
    start: u64,
    end: u64,
    ended: Ended,
}

/// A running child, killable without racing its reaping: its pid is listed
/// from the spawn until the child has exited (as a zombie, whose pid cannot
/// be reused) and is taken off the list before the child is reaped.
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
))]
mod slot {
    use std::process::{Child, ExitStatus};
    use std::sync::{Mutex, PoisonError};

    use rustix::io::Errno;
    use rustix::process::{kill_process, waitid, Pid, Signal, WaitId, WaitIdOptions};

    /// One worker's running child, if any.
    #[derive(Debug, Default)]
    pub struct Slot(Mutex<Option<Pid>>);

    impl Slot {
        /// Waits for `child` to exit, calls `exited` (to read the clock) as
        /// soon as it has, before it is reaped, and reaps it.
        pub fn wait(
            &self,
            child: &mut Child,
            exited: impl FnOnce(),
        ) -> std::io::Result<ExitStatus> {
            let pid = Pid::from_child(child);
            self.set(Some(pid));
            // Exited, not reaped (WNOWAIT): the pid stays the child's.
            // Any error but EINTR: `child.wait()` below reports it.
            while let Err(Errno::INTR) = waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {}
            exited();
            self.set(None);
            child.wait()
        }

        /// Kills (SIGKILL) the child running in this slot, if any; returns
        /// whether one was killed.
        pub fn kill(&self) -> bool {
            let pid = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            pid.is_some_and(|p| kill_process(p, Signal::KILL).is_ok())
        }

        fn set(&self, pid: Option<Pid>) {
            *self.0.lock().unwrap_or_else(PoisonError::into_inner) = pid;
        }
    }
}

/// Where the runs cannot be killed safely by pid: a run is waited for until
/// it ends.
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
)))]
mod slot {
    use std::process::{Child, ExitStatus};

    /// One worker's running child (not tracked here).
    #[derive(Debug, Default)]
    pub struct Slot;

    impl Slot {
        /// Waits for `child`, then calls `exited`.
        pub fn wait(
            &self,
            child: &mut Child,
            exited: impl FnOnce(),
        ) -> std::io::Result<ExitStatus> {
            let status = child.wait();
            exited();
            status
        }

        /// Cannot kill here: returns false.
        pub fn kill(&self) -> bool {
            false
        }
    }
}

use slot::Slot;

/// One worker: runs the jobs it is handed, one at a time.
fn work(
    worker: usize,
    jobs: Receiver<Job>,
    done: Sender<Finished>,
    spawner: &Spawner,
    clock: &DefaultClock,
    slot: &Slot,
) {
    for job in jobs {
        let start = clock.now_nanos();
        let mut end = start;
        let ended = match spawner.spawn() {
            Err(e) => Ended::SpawnFailed(e.to_string()),
            Ok(mut child) => match slot.wait(&mut child, || end = clock.now_nanos()) {
                Ok(status) => Ended::from_status(status),
                Err(e) => Ended::SpawnFailed(format!("waiting for the run: {e}")),
            },
        };
        let finished = Finished {
            worker,
            number: job.number,
            scheduled: job.scheduled,
            start,
            end,
            ended,
        };
        if done.send(finished).is_err() {
            return;
        }
    }
}

/// What the dispatcher has seen of the finished runs.
#[derive(Debug)]
struct Tally {
    t0: u64,
    wait: WaitRecorder,
    service: WaitRecorder,
    response: WaitRecorder,
    exit_codes: BTreeMap<i32, u64>,
    signals: BTreeMap<i32, u64>,
    spawn_failed: u64,
    spawn_error: Option<String>,
    failed: u64,
    /// The first failure seen, for --fail-fast's message.
    first_failure: Option<String>,
    last_start: Option<u64>,
    last_end: Option<u64>,
    /// With --plot: response and service times by start time.
    plot: Option<(Buckets, Buckets)>,
}

impl Tally {
    fn new(t0: u64, bucket: Option<u64>) -> Tally {
        Tally {
            t0,
            wait: WaitRecorder::new(),
            service: WaitRecorder::new(),
            response: WaitRecorder::new(),
            exit_codes: BTreeMap::new(),
            signals: BTreeMap::new(),
            spawn_failed: 0,
            spawn_error: None,
            failed: 0,
            first_failure: None,
            last_start: None,
            last_end: None,
            plot: bucket.map(|w| (Buckets::new(w), Buckets::new(w))),
        }
    }

    fn add(&mut self, f: &Finished) {
        self.last_start = self.last_start.max(Some(f.start));
        let failure = match &f.ended {
            Ended::Exited(code) => {
                *self.exit_codes.entry(*code).or_default() += 1;
                (*code != 0).then(|| format!("exited with status {code}"))
            }
            Ended::Signaled(sig) => {
                *self.signals.entry(*sig).or_default() += 1;
                Some(format!("was killed by signal {}", signal_label(*sig)))
            }
            Ended::SpawnFailed(e) => {
                self.spawn_failed += 1;
                self.spawn_error.get_or_insert_with(|| e.clone());
                Some(format!("could not be started: {e}"))
            }
        };
        if let Some(why) = failure {
            self.failed += 1;
            self.first_failure
                .get_or_insert_with(|| format!("run {} {why}", f.number));
        }
        if matches!(f.ended, Ended::SpawnFailed(_)) {
            return;
        }
        // response = wait + service, also for a run let go before its
        // scheduled time (wait 0): never below its own service time.
        let wait = f.start.saturating_sub(f.scheduled);
        let service = f.end.saturating_sub(f.start);
        let response = wait.saturating_add(service);
        self.wait.record(wait);
        self.service.record(service);
        self.response.record(response);
        self.last_end = self.last_end.max(Some(f.end));
        if let Some((resp, serv)) = &mut self.plot {
            let t = f.start.saturating_sub(self.t0);
            resp.record(t, response);
            serv.record(t, service);
        }
    }
}

/// What the progress line reads.
#[derive(Debug, Default)]
struct Counters {
    started: AtomicU64,
    finished: AtomicU64,
    failed: AtomicU64,
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

/// The next run's permit: `Some(grant)`, or `None` when the limiter refused
/// it because its wait would exceed `max_wait` (Resilience4j's timeout):
/// then the refusal is counted and the dispatcher sleeps until a permit
/// could be granted within the timeout (not past `deadline` nor Ctrl-C),
/// to ask again.
fn reserve_run(
    limiter: &dyn RateLimiter,
    max_wait: Option<Duration>,
    deadline: Option<u64>,
    interrupt: &Interrupt,
    refused: &mut u64,
) -> anyhow::Result<Option<Grant>> {
    match limiter.reserve(1, max_wait) {
        Ok(grant) => Ok(Some(grant)),
        Err(AcquireError::WouldWait {
            wait,
            max_wait: max,
        }) if max_wait.is_some() => {
            *refused += 1;
            sleep_until_retry(interrupt, limiter.clock(), wait, max, deadline);
            Ok(None)
        }
        Err(e) => Err(anyhow::Error::new(e).context("the limiter refused a permit")),
    }
}

/// Why the dispatcher stopped starting runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The count was reached or the deadline passed.
    Done,
    /// Ctrl-C.
    Interrupted,
    /// A run failed, with --fail-fast.
    FailFast,
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

/// How the dispatch went, besides the tally.
#[derive(Debug, Clone)]
struct Ran {
    launched: u64,
    stop: Stop,
    /// Runs killed by a second Ctrl-C; `None` if no kill was sent.
    killed: Option<u64>,
    /// Permits refused by the limiter's timeout (each asked for again).
    refused: u64,
    config: LimiterConfig,
    effective: EffectiveRate,
    duration: Option<Duration>,
    count: Option<u64>,
}

/// The result of an `exec` run; `Display` is the text report, `Serialize`
/// the JSON one (schema in [`AFTER_LONG_HELP`]).
#[derive(Debug, Clone, Serialize)]
pub struct ExecReport {
    command: Vec<String>,
    spec: String,
    limiter: &'static str,
    /// The limiter's own parameters.
    #[serde(flatten)]
    fields: LimiterFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_policy: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filling: Option<&'static str>,
    /// `Some(None)` (JSON null) for a pool filled inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    fill_interval_ns: Option<Option<u64>>,
    target_rate: f64,
    /// What the limiter's integer arithmetic gives (null: no limit).
    effective_rate: Option<f64>,
    /// The text report's note when the effective rate is off the target.
    #[serde(skip)]
    effective_note: Option<String>,
    concurrency: u32,
    mode: &'static str,
    duration_ns: Option<u64>,
    count: Option<u64>,
    stdout: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stdout_file: Option<String>,
    runs: u64,
    succeeded: u64,
    failed: u64,
    exit_codes: BTreeMap<i32, u64>,
    signals: BTreeMap<i32, u64>,
    spawn_failed: u64,
    spawn_error: Option<String>,
    killed: u64,
    launch_span_ns: u64,
    achieved_rate: f64,
    elapsed_ns: u64,
    wait_ns: WaitSummary,
    service_ns: WaitSummary,
    response_ns: WaitSummary,
    /// Resilience4j's limiters: permits refused by the timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<u64>,
    interrupted: bool,
    fail_fast: bool,
    stopped_by_fail_fast: bool,
    /// The first failure, for --fail-fast's message (not in the JSON, which
    /// has the counts).
    #[serde(skip)]
    first_failure: Option<String>,
    /// With --plot: runs started, and their response and service times, per
    /// time bucket.
    #[serde(skip)]
    buckets: Option<(Buckets, Buckets)>,
}

impl ExecReport {
    /// Whether Ctrl-C stopped the run.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// With --fail-fast, the failure that stopped the run, if one did.
    pub fn fail_fast_failure(&self) -> Option<String> {
        if !self.stopped_by_fail_fast {
            return None;
        }
        let why = self
            .first_failure
            .clone()
            .unwrap_or_else(|| "a run failed".to_owned());
        Some(format!("{why}; stopped by --fail-fast"))
    }
}

fn report(args: &ExecArgs, tally: &Tally, ran: Ran) -> ExecReport {
    let target_rate = args.rate.rate().get();
    let kind = ran.config.kind().limiter_kind();
    let (filling, fill_interval_ns) = match ran.config.kind() {
        KindConfig::Pool {
            filling: Filling::Thread(i),
            ..
        } => (Some("thread"), Some(Some(duration_nanos(i)))),
        KindConfig::Pool { .. } => (Some("inline"), Some(None)),
        _ => (None, None),
    };
    let interrupted = ran.stop == Stop::Interrupted || ran.killed.is_some();
    let launch_span_ns = match ran.duration {
        Some(d) if ran.stop == Stop::Done => duration_nanos(d),
        _ => schedule_span(tally.t0, tally.last_start, target_rate),
    };
    let achieved_rate = if launch_span_ns == 0 {
        0.0
    } else {
        ran.launched as f64 * 1e9 / launch_span_ns as f64
    };
    let (stdout, stdout_file) = match (&args.stdout, args.discard_stdout) {
        (Some(p), _) => ("file", Some(p.display().to_string())),
        (None, true) => ("discard", None),
        (None, false) => ("inherit", None),
    };
    let succeeded = tally.exit_codes.get(&0).copied().unwrap_or(0);
    ExecReport {
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        spec: args.rate.to_string(),
        limiter: kind.name(),
        fields: LimiterFields::of(&ran.config),
        wait_policy: (kind == LimiterKind::Pacer).then(|| wait_policy_name(&ran.config)),
        filling,
        fill_interval_ns,
        target_rate,
        effective_rate: ran.effective.json(),
        effective_note: ran.effective.note(target_rate),
        concurrency: args.concurrency,
        mode: run::mode_name(ran.duration),
        duration_ns: ran.duration.map(duration_nanos),
        count: ran.count,
        stdout,
        stdout_file,
        runs: ran.launched,
        succeeded,
        failed: ran.launched.saturating_sub(succeeded),
        exit_codes: tally.exit_codes.clone(),
        signals: tally.signals.clone(),
        spawn_failed: tally.spawn_failed,
        spawn_error: tally.spawn_error.clone(),
        killed: ran.killed.unwrap_or(0),
        launch_span_ns,
        achieved_rate,
        elapsed_ns: tally
            .last_end
            .max(tally.last_start)
            .unwrap_or(tally.t0)
            .saturating_sub(tally.t0),
        wait_ns: tally.wait.summary(),
        service_ns: tally.service.summary(),
        response_ns: tally.response.summary(),
        refused: ran.config.kind().max_wait().map(|_| ran.refused),
        interrupted,
        fail_fast: args.fail_fast,
        stopped_by_fail_fast: ran.stop == Stop::FailFast,
        first_failure: tally.first_failure.clone(),
        buckets: tally.plot.clone(),
    }
}

/// Writes the `--plot` of `report` to `to`.
///
/// # Errors
///
/// A drawing error or the I/O error writing the file.
pub fn write_plot(to: &PlotPath, report: &ExecReport) -> anyhow::Result<()> {
    let Some((response, service)) = &report.buckets else {
        return Ok(());
    };
    let span = report.launch_span_ns;
    let end_secs = span as f64 / 1e9;
    let run = match (report.duration_ns, report.count) {
        (Some(d), _) => format!("--duration {}", fmt_duration(d)),
        (None, Some(n)) => format!("-n {n}"),
        (None, None) => String::new(),
    };
    let series = |name: &str, color, width, points| Series {
        name: name.to_owned(),
        color,
        dashed: false,
        width,
        points,
    };
    let head = format!(
        "ratekeeper exec --limiter {} --rate {} --concurrency {} {run} -- ",
        report.limiter, report.spec, report.concurrency
    );
    // The title fits the plot's width: a long command is cut short.
    let command = shell_words(&report.command);
    let room = TITLE_CHARS.saturating_sub(head.chars().count()).max(12);
    let command = if command.chars().count() > room {
        let cut: String = command.chars().take(room - 1).collect();
        format!("{cut}…")
    } else {
        command
    };
    let p = Plot {
        title: format!("{head}{command}"),
        end_secs,
        rate: Panel {
            title: format!(
                "runs started per {} bucket, as a rate (target dashed)",
                fmt_duration(response.width())
            ),
            quantity: "rate".to_owned(),
            unit: Unit::Rate,
            series: vec![
                series(
                    "started",
                    plot::PALETTE[0],
                    2,
                    plot::rate_points(response, span),
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
            title: "response (end - scheduled) and service (end - start) times of the runs \
                    started in each bucket"
                .to_owned(),
            quantity: "time".to_owned(),
            unit: Unit::Nanos,
            series: vec![
                series(
                    "longest response",
                    plot::PALETTE[3],
                    3,
                    plot::wait_points(response, WaitStat::Max),
                ),
                series(
                    "mean response",
                    plot::PALETTE[0],
                    2,
                    plot::wait_points(response, WaitStat::Mean),
                ),
                series(
                    "mean service",
                    plot::PALETTE[2],
                    1,
                    plot::wait_points(service, WaitStat::Mean),
                ),
            ],
        },
    };
    plot::write(to, &p)
}

/// A conventional name for signal `sig` (Unix numbering shared by Linux, the
/// BSDs and macOS for these), or `None`.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// `9 (SIGKILL)`, or just the number.
fn signal_label(sig: i32) -> String {
    match signal_name(sig) {
        Some(name) => format!("{sig} ({name})"),
        None => sig.to_string(),
    }
}

/// The command as a shell would take it: words with anything but
/// `[A-Za-z0-9_./:=@%+,-]` in single quotes.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl fmt::Display for ExecReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "command         {}", shell_words(&self.command))?;
        writeln!(f, "spec            {}", self.spec)?;
        let fields = &self.fields;
        let d = |nanos: Option<u64>| fmt_duration(nanos.unwrap_or_default());
        let limiter = match self.limiter {
            "pool" => {
                let filling = match self.fill_interval_ns {
                    Some(Some(i)) => format!(", filled by a thread every {}", fmt_duration(i)),
                    _ => String::new(),
                };
                format!(
                    "token pool (burst ratio {}{filling})",
                    fields.burst_ratio.unwrap_or_default()
                )
            }
            "bursty" => format!(
                "Guava SmoothBursty (max burst {}s{})",
                fields.max_burst_seconds.unwrap_or_default(),
                resolution_note(fields.resolution)
            ),
            "warmup" => format!(
                "Guava SmoothWarmingUp (warm-up {}, cold factor {}{})",
                d(fields.warmup_ns),
                fields.cold_factor.unwrap_or_default(),
                resolution_note(fields.resolution)
            ),
            "refill" => format!(
                "Resilience4j RefillLimiter ({} permits per {}, refilled one by one; capacity \
                 {}, {} initial permits; timeout {})",
                fields.limit_for_period.unwrap_or_default(),
                d(fields.refresh_period_ns),
                fields.capacity.unwrap_or_default(),
                fields.initial_permits.unwrap_or_default(),
                d(fields.timeout_ns)
            ),
            "cycle" => format!(
                "Resilience4j CycleLimiter ({} permits at the start of each {} cycle; timeout \
                 {})",
                fields.limit_for_period.unwrap_or_default(),
                d(fields.refresh_period_ns),
                d(fields.timeout_ns)
            ),
            _ => format!(
                "pacer (strictness {}, {}{})",
                fields.strictness.unwrap_or_default(),
                fields.strictness_mode.unwrap_or_default().replace('_', " "),
                if self.wait_policy == Some("precise") {
                    "; precise: sleep, then spin 150µs"
                } else {
                    ""
                }
            ),
        };
        writeln!(f, "limiter         {limiter}")?;
        writeln!(f, "concurrency     {}", self.concurrency)?;
        let run = match (self.duration_ns, self.count) {
            (Some(d), _) => format!("duration {}", fmt_duration(d)),
            (None, Some(n)) => format!("count {n}"),
            (None, None) => String::new(),
        };
        let output = match (self.stdout, &self.stdout_file) {
            (_, Some(file)) => format!("appended to {file}"),
            ("discard", _) => "discarded".to_owned(),
            _ => "ratekeeper's".to_owned(),
        };
        writeln!(f, "runs            {} ({run}; stdout {output})", self.runs)?;
        if self.interrupted {
            writeln!(
                f,
                "interrupted     by Ctrl-C: no run was started after it{}",
                if self.killed > 0 {
                    format!("; {} running runs killed", self.killed)
                } else {
                    String::new()
                }
            )?;
        }
        if self.stopped_by_fail_fast {
            writeln!(
                f,
                "stopped         by --fail-fast: {}",
                self.first_failure.as_deref().unwrap_or("a run failed")
            )?;
        }
        writeln!(f, "target rate     {}", fmt_rate(self.target_rate))?;
        writeln!(
            f,
            "effective rate  {}",
            fmt_effective(self.effective_rate, self.effective_note.as_deref(), "ops")
        )?;
        writeln!(
            f,
            "achieved rate   {} (runs over {})",
            fmt_rate(self.achieved_rate),
            fmt_nanos(self.launch_span_ns)
        )?;
        writeln!(
            f,
            "elapsed         {} (until the last run ended)",
            fmt_nanos(self.elapsed_ns)
        )?;
        if let Some(refused) = self.refused {
            writeln!(
                f,
                "refused         {refused} (permits whose wait would exceed the {} timeout; the \
                 run waited and asked again)",
                fmt_duration(self.fields.timeout_ns.unwrap_or_default())
            )?;
        }
        writeln!(f, "succeeded       {} (exit status 0)", self.succeeded)?;
        writeln!(f, "failed          {}", self.failed)?;
        for (code, n) in &self.exit_codes {
            writeln!(f, "{:<16}{n}", format!("exit {code}"))?;
        }
        for (sig, n) in &self.signals {
            let name = signal_name(*sig)
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            writeln!(f, "{:<16}{n}{name}", format!("signal {sig}"))?;
        }
        if self.spawn_failed > 0 {
            writeln!(
                f,
                "spawn failed    {} ({})",
                self.spawn_failed,
                self.spawn_error.as_deref().unwrap_or("")
            )?;
        }
        writeln!(
            f,
            "{:<10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
            "", "p50", "p90", "p99", "p99.9", "max", "mean"
        )?;
        for (name, s) in [
            ("wait", &self.wait_ns),
            ("service", &self.service_ns),
            ("response", &self.response_ns),
        ] {
            writeln!(
                f,
                "{name:<10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
                fmt_nanos(s.p50),
                fmt_nanos(s.p90),
                fmt_nanos(s.p99),
                fmt_nanos(s.p999),
                fmt_nanos(s.max),
                fmt_nanos(s.mean)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_is_checked() {
        assert_eq!(parse_concurrency("4"), Ok(4));
        assert!(parse_concurrency("0").unwrap_err().contains("at least 1"));
        assert!(parse_concurrency("many").unwrap_err().contains("1 to 1024"));
        assert!(parse_concurrency("2000").is_err());
    }

    #[test]
    fn words_are_quoted_as_a_shell_would_take_them() {
        let w = |v: &[&str]| shell_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            w(&["curl", "-s", "http://127.0.0.1:8080/"]),
            "curl -s http://127.0.0.1:8080/"
        );
        assert_eq!(w(&["sh", "-c", "exit 3"]), "sh -c 'exit 3'");
        assert_eq!(w(&["echo", "it's", ""]), r"echo 'it'\''s' ''");
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_label(9), "9 (SIGKILL)");
        assert_eq!(signal_label(64), "64");
    }

    #[cfg(unix)]
    #[test]
    fn programs_are_found_in_path_or_refused() {
        assert!(check_program(OsStr::new("sh")).is_ok());
        assert!(check_program(OsStr::new("/bin/sh")).is_ok());
        let e = check_program(OsStr::new("no-such-command-xyz")).unwrap_err();
        assert!(e.0.contains("'no-such-command-xyz'"), "{e}");
        assert!(e.0.contains("not found in PATH"), "{e}");
        let e = check_program(OsStr::new("/etc/passwd")).unwrap_err();
        assert!(e.0.contains("not an executable file"), "{e}");
        assert!(check_program(OsStr::new("")).is_err());
    }

    /// A finished run for the tally.
    fn finished(number: u64, scheduled: u64, start: u64, end: u64, ended: Ended) -> Finished {
        Finished {
            worker: 0,
            number,
            scheduled,
            start,
            end,
            ended,
        }
    }

    #[test]
    fn the_tally_counts_statuses_and_measures_from_the_schedule() {
        let mut t = Tally::new(1_000, Some(1_000_000));
        t.add(&finished(1, 1_000, 1_500, 11_500, Ended::Exited(0)));
        t.add(&finished(2, 2_000, 12_000, 14_000, Ended::Exited(3)));
        t.add(&finished(
            3,
            3_000,
            14_000,
            14_000,
            Ended::SpawnFailed("boom".to_owned()),
        ));
        t.add(&finished(4, 4_000, 14_100, 20_000, Ended::Signaled(9)));
        assert_eq!(t.exit_codes, BTreeMap::from([(0, 1), (3, 1)]));
        assert_eq!(t.signals, BTreeMap::from([(9, 1)]));
        assert_eq!((t.spawn_failed, t.failed), (1, 3));
        assert_eq!(t.spawn_error.as_deref(), Some("boom"));
        assert_eq!(
            t.first_failure.as_deref(),
            Some("run 2 exited with status 3")
        );
        // The spawn failure has no times.
        assert_eq!(t.response.count(), 3);
        let response = t.response.summary();
        assert_eq!(response.max, 16_000);
        assert_eq!(t.service.summary().max, 10_000);
        assert_eq!(t.wait.summary().max, 10_100);
        assert_eq!((t.last_start, t.last_end), (Some(14_100), Some(20_000)));
    }

    #[test]
    fn a_run_let_go_before_its_schedule_responds_no_faster_than_it_served() {
        // Scheduled at 10 µs, let go at 9.6 µs (early), ran 511 ns: its
        // response is its service time, not 111 ns.
        let mut t = Tally::new(0, None);
        t.add(&finished(1, 10_000, 9_600, 10_111, Ended::Exited(0)));
        assert_eq!(t.wait.summary().max, 0);
        assert_eq!(t.service.summary().max, 511);
        assert_eq!(t.response.summary().max, 511);
    }

    fn sample_args(extra: &[&str]) -> ExecArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: ExecArgs,
        }
        let mut argv = vec!["exec", "--rate", "10", "-n", "4", "-c", "2"];
        argv.extend(extra);
        argv.extend(["--", "sh", "-c", "exit 3"]);
        Wrap::parse_from(argv).args
    }

    /// Parses a duration the text report prints back into nanoseconds.
    fn text_nanos(s: &str) -> f64 {
        let (number, scale) = if let Some(n) = s.strip_suffix("ns") {
            (n, 1.0)
        } else if let Some(n) = s.strip_suffix("µs") {
            (n, 1e3)
        } else if let Some(n) = s.strip_suffix("ms") {
            (n, 1e6)
        } else if let Some(n) = s.strip_suffix('s') {
            (n, 1e9)
        } else {
            panic!("not a duration: {s}")
        };
        number.parse::<f64>().expect("a number") * scale
    }

    #[test]
    fn text_and_json_reports_say_the_same() {
        let args = sample_args(&[]);
        let mut t = Tally::new(0, None);
        for (i, (service, ended)) in [
            (5_000_000, Ended::Exited(0)),
            (7_000_000, Ended::Exited(3)),
            (9_000_000, Ended::Exited(3)),
            (250_000_000, Ended::Signaled(9)),
        ]
        .into_iter()
        .enumerate()
        {
            let i = i as u64;
            let scheduled = i * 100_000_000;
            let start = scheduled + 1_000 * (i + 1);
            t.add(&finished(i + 1, scheduled, start, start + service, ended));
        }
        let ran = Ran {
            launched: 4,
            stop: Stop::Done,
            killed: None,
            refused: 0,
            config: "pacer:10".parse().unwrap(),
            effective: EffectiveRate::pacer(10.0, 100_000_000, "run"),
            duration: None,
            count: Some(4),
        };
        let r = report(&args, &t, ran);
        let text = r.to_string();
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        let line = |label: &str| -> Vec<String> {
            text.lines()
                .find(|l| l.starts_with(label))
                .unwrap_or_else(|| panic!("no {label} line in {text}"))[label.len()..]
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(json["runs"], 4);
        assert_eq!(line("runs")[0], "4");
        assert_eq!(json["succeeded"], 1);
        assert_eq!(line("succeeded")[0], "1");
        assert_eq!(json["failed"], 3);
        assert_eq!(line("failed")[0], "3");
        assert_eq!(json["exit_codes"]["3"], 2);
        assert_eq!(line("exit 3"), ["2"]);
        assert_eq!(json["exit_codes"]["0"], 1);
        assert_eq!(line("exit 0"), ["1"]);
        assert_eq!(json["signals"]["9"], 1);
        assert_eq!(line("signal 9"), ["1", "(SIGKILL)"]);
        assert_eq!(json["concurrency"], 2);
        assert_eq!(line("concurrency"), ["2"]);
        assert_eq!(json["command"], serde_json::json!(["sh", "-c", "exit 3"]));
        assert_eq!(line("command").join(" "), "sh -c 'exit 3'");
        // 4 runs, the last started 300 ms + 4 µs in, plus a 100 ms slot.
        assert_eq!(json["launch_span_ns"], 400_004_000u64);
        assert_eq!(json["elapsed_ns"], 550_004_000u64);
        let achieved = json["achieved_rate"].as_f64().unwrap();
        assert!((achieved - 4e9 / 400_004_000.0).abs() < 1e-9);
        for (row, key) in [
            ("wait ", "wait_ns"),
            ("service ", "service_ns"),
            ("response ", "response_ns"),
        ] {
            let cells = line(row);
            assert_eq!(cells.len(), 6, "{row}: {cells:?}");
            for (cell, stat) in cells
                .iter()
                .zip(["p50", "p90", "p99", "p999", "max", "mean"])
            {
                let exact = json[key][stat].as_u64().unwrap() as f64;
                let shown = text_nanos(cell);
                assert!(
                    (shown - exact).abs() <= exact * 0.005 + 0.5,
                    "{key}.{stat}: text {cell} vs JSON {exact}"
                );
            }
        }
        // The killed run: scheduled at 300 ms, started 4 µs late, ran 250 ms.
        assert_eq!(json["response_ns"]["max"], 250_004_000u64);
        assert_eq!(json["interrupted"], false);
        assert_eq!(json["stopped_by_fail_fast"], false);
        assert!(json.get("max_burst_seconds").is_none());
        assert_eq!(json["strictness_mode"], "burst_ratio");
    }
}
