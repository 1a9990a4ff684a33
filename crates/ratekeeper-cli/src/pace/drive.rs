//! Driving a `pace` run, whatever the limiter: the worker threads behind
//! the start gate, the backlog sampling and the progress line while they
//! run, and the CPU time they took.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Duration;

use anyhow::Context;
use ratekeeper::config::LimiterRef;
use ratekeeper::{Clock, DefaultClock};

use super::behind::MaxBehind;
use super::gate::{open_gate, Gate, Go, Stop};
use super::target::Target;
use super::work::WorkSpec;
use super::worker::{Ctx, OpCounter, WorkerResult};
use crate::progress::{self, Progress, Snapshot};
use crate::report::{duration_nanos, process_cpu_nanos, thread_cpu_nanos};
use crate::run::interrupt::Interrupt;
use crate::run::ramp::{self, Arrivals, Driven};

/// How often a token-pool run samples the backlog (the waiting pool) for its
/// maximum, and a run with --max-behind checks how far behind it is.
pub(super) const BACKLOG_SAMPLE_INTERVAL: Duration = Duration::from_millis(1);

/// What [`drive`] measured, whatever the limiter.
#[derive(Debug)]
pub(super) struct Outcome {
    pub(super) results: Vec<WorkerResult>,
    /// Clock reading when the schedule started.
    pub(super) t0: u64,
    /// Clock reading when the last worker stopped.
    pub(super) t_end: u64,
    /// Process CPU time during the run, less the reporting thread's.
    pub(super) cpu_ns: Option<u64>,
    /// The largest backlog sampled (0 when not sampled).
    pub(super) max_backlog_ns: u64,
    /// With --max-behind: the clock reading at which the run was found that
    /// far behind its schedule and stopped.
    pub(super) halted_at: Option<u64>,
    /// With --stages: the rate changes made.
    pub(super) driven: Driven,
}

/// How the run is driven, whatever the limiter.
#[derive(Debug, Clone, Copy)]
pub(super) struct RunPlan<'a> {
    pub(super) clock: DefaultClock,
    pub(super) threads: u32,
    pub(super) duration: Option<Duration>,
    pub(super) count: Option<u64>,
    /// With --plot: the width of the time buckets workers aggregate ops into.
    pub(super) bucket: Option<u64>,
    /// The rate the run aims at: --rate's, or with --stages the rates they
    /// set (the progress line's, --max-behind's and the report's).
    pub(super) target: Target<'a>,
    pub(super) interrupt: &'a Interrupt,
    /// See [`Ctx::max_wait`].
    pub(super) max_wait: Option<Duration>,
    /// With --work: what each op does after its permit.
    pub(super) work: Option<WorkSpec>,
    /// --max-behind: how far behind its schedule the run may fall, in ns.
    pub(super) max_behind: Option<u64>,
}

impl RunPlan<'_> {
    /// How long the run lasts in ns (0 in count mode).
    pub(super) fn duration_nanos(&self) -> u64 {
        self.duration.map_or(0, duration_nanos)
    }
}

/// The loop a worker thread runs.
pub(super) trait Work<L>: Fn(&L, &Ctx<'_>) -> WorkerResult + Sync {}

impl<L, W: Fn(&L, &Ctx<'_>) -> WorkerResult + Sync> Work<L> for W {}

/// Runs `plan.threads` workers over `limiters` (worker `i` uses limiter
/// `i % len`), each running `work`. `start` starts every schedule and
/// returns the run's start time; `backlog`, if given, is sampled every
/// [`BACKLOG_SAMPLE_INTERVAL`] while the workers run, and once more after
/// they stopped; with --max-behind, how far behind its schedule the run is
/// is checked as often (see [`Watch`]). With --stages a thread of its own
/// changes the rate of every one of `rates` (the limiters) as they ramp,
/// until the workers stopped. With standard error a terminal, a progress
/// line shows the ops so far while the workers run.
pub(super) fn drive<L: Sync, C: Clock + 'static>(
    limiters: &[L],
    rates: &[LimiterRef<'_, C>],
    plan: RunPlan<'_>,
    start: impl FnOnce(&[L]) -> u64,
    backlog: Option<fn(&[L]) -> u64>,
    work: impl Work<L>,
) -> anyhow::Result<Outcome> {
    let remaining = AtomicU64::new(plan.count.unwrap_or(0));
    let gate: Gate = (Mutex::new(None), Condvar::new());
    // Counters only when there is a line to show them on, or ops to count
    // for --max-behind.
    let counters: Option<Arc<[OpCounter]>> = (progress::enabled() || plan.max_behind.is_some())
        .then(|| (0..plan.threads).map(|_| OpCounter::default()).collect());
    let arrivals = arrivals(&plan);
    // Every worker holds a sender; the channel disconnects when all are gone
    // (returned or panicked), which ends the sampling without polling.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let ctx = |i: u32| Ctx {
        clock: &plan.clock,
        gate: &gate,
        remaining: &remaining,
        interrupt: plan.interrupt,
        max_wait: plan.max_wait,
        progress: counters.as_deref().map(|c| &c[i as usize]),
        index: i,
        work: plan.work,
        arrivals: (!arrivals.is_empty()).then(|| &arrivals[i as usize % arrivals.len()]),
    };
    // Set once the workers stopped: the --stages thread stops.
    let ended = AtomicBool::new(false);

    std::thread::scope(|scope| {
        let handles = spawn_workers(scope, limiters, plan.threads, ctx, done_tx, &work)?;
        let go = go(&plan, start(limiters));
        let stages = start_stages(scope, rates, &plan, go.t0, &ended)
            .inspect_err(|_| open_gate(&gate, Err(())))?;
        let cpu = CpuTime::start();
        open_gate(&gate, Ok(go));
        let line = counters
            .clone()
            .and_then(|c| progress_line(c, plan.target.over(plan.duration_nanos())));
        let mut watch = Watch {
            limiters,
            backlog,
            max_behind: max_behind(&plan, &go).zip(counters.as_deref()),
        };
        let (max_backlog_ns, halted_at) = watch.run(&done_rx, &plan);
        let (results, panicked) = join_all(handles);
        let cpu_ns = cpu.stop();
        // Ordering: Relaxed; a stop request that carries no data.
        ended.store(true, Ordering::Relaxed);
        let driven = stages.map_or(Ok(Driven::default()), |h| {
            h.join()
                .map_err(|_| anyhow::anyhow!("the --stages thread panicked"))
        });
        if let Some(line) = line {
            line.finish();
        }
        if panicked {
            anyhow::bail!("a worker thread panicked");
        }
        Ok(Outcome {
            t0: go.t0,
            t_end: last_finished(&results).unwrap_or_else(|| plan.clock.now_nanos()),
            results,
            cpu_ns,
            max_backlog_ns: watch.last_sample(max_backlog_ns),
            halted_at,
            driven: driven?,
        })
    })
}

/// What the gate hands the workers of a run whose schedule started at
/// `t0`.
fn go(plan: &RunPlan<'_>, t0: u64) -> Go {
    Go {
        stop: match plan.duration {
            Some(d) => Stop::Deadline(t0.saturating_add(duration_nanos(d))),
            None => Stop::Count,
        },
        t0,
        bucket: plan.bucket,
    }
}

/// With --stages, the ops of each of the run's limiters (a worker's
/// handle on a shared limiter shares its ops); empty without.
fn arrivals<'a>(plan: &RunPlan<'a>) -> Vec<Arrivals<'a>> {
    plan.target
        .ramp
        .map(|r| {
            (0..plan.target.limiters)
                .map(|_| Arrivals::new(r))
                .collect()
        })
        .unwrap_or_default()
}

/// When the last of the workers' `results` stopped.
fn last_finished(results: &[WorkerResult]) -> Option<u64> {
    results.iter().map(|r| r.finished).max()
}

/// With --stages, starts the thread that ramps the rate of every one of
/// `rates` from `t0` until the stages end, `ended` is set or the interrupt
/// comes (see [`ramp::drive`]).
fn start_stages<'scope, 'env, C: Clock + 'static>(
    scope: &'scope Scope<'scope, 'env>,
    rates: &'env [LimiterRef<'env, C>],
    plan: &'env RunPlan<'env>,
    t0: u64,
    ended: &'env AtomicBool,
) -> anyhow::Result<Option<ScopedJoinHandle<'scope, Driven>>> {
    let Some(r) = plan.target.ramp else {
        return Ok(None);
    };
    ramp::prime(r, rates);
    let handle = std::thread::Builder::new()
        .name("pace-stages".to_owned())
        .spawn_scoped(scope, move || {
            ramp::drive(r, rates, &plan.clock, t0, plan.interrupt, ended)
        })
        .context("starting the --stages thread")?;
    Ok(Some(handle))
}

/// The --max-behind check of a run that `go` started, if it has one.
fn max_behind<'a>(plan: &RunPlan<'a>, go: &Go) -> Option<MaxBehind<'a>> {
    plan.max_behind.map(|limit_ns| MaxBehind {
        limit_ns,
        t0: go.t0,
        target: plan.target.so_far(),
        stop: go.stop,
        count: plan.count,
    })
}

/// What the reporting thread watches while the workers run: the pools'
/// backlog, and with --max-behind how far behind its schedule the run is,
/// from the ops the workers' counters add up to.
struct Watch<'a, L> {
    limiters: &'a [L],
    backlog: Option<fn(&[L]) -> u64>,
    max_behind: Option<(MaxBehind<'a>, &'a [OpCounter])>,
}

impl<L> Watch<'_, L> {
    /// Watches every [`BACKLOG_SAMPLE_INTERVAL`] until every worker is gone
    /// (`done` disconnects), if there is anything to watch. Returns the
    /// largest backlog sampled, and the clock reading at which the run was
    /// found --max-behind behind its schedule, if it was: it is then
    /// stopped.
    fn run(&mut self, done: &Receiver<()>, plan: &RunPlan<'_>) -> (u64, Option<u64>) {
        let (mut max_backlog_ns, mut halted_at) = (0, None);
        if self.backlog.is_none() && self.max_behind.is_none() {
            return (max_backlog_ns, halted_at);
        }
        while let Err(RecvTimeoutError::Timeout) = done.recv_timeout(BACKLOG_SAMPLE_INTERVAL) {
            if let Some(sample) = self.backlog {
                max_backlog_ns = max_backlog_ns.max(sample(self.limiters));
            }
            let Some((max_behind, counters)) = &mut self.max_behind else {
                continue;
            };
            if halted_at.is_some() || plan.interrupt.is_set() {
                continue;
            }
            let now = plan.clock.now_nanos();
            // Ordering: Relaxed; gauges (a count a moment old finds the run
            // behind a moment early, by at most the ops of that moment).
            let ops = counters.iter().map(|n| n.0.load(Ordering::Relaxed)).sum();
            if max_behind.is_exceeded(now, ops) {
                halted_at = Some(now);
                // Stops the workers as Ctrl-C does, and wakes every sleeper
                // (a long wait for a permit, a long --work) at once;
                // `halted_at` tells the two apart. A Ctrl-C after this is
                // not told apart: the run was ending anyway.
                plan.interrupt.raise();
            }
        }
        (max_backlog_ns, halted_at)
    }

    /// The largest backlog, `max_backlog_ns` so far or one more sample
    /// after the workers stopped.
    fn last_sample(&self, max_backlog_ns: u64) -> u64 {
        match self.backlog {
            Some(sample) => max_backlog_ns.max(sample(self.limiters)),
            None => max_backlog_ns,
        }
    }
}

/// Starts `threads` workers in `scope`, worker `i` running `work` on
/// limiter `i % len` with `ctx(i)`; each holds a clone of `done` until it
/// returns. If a thread cannot be started, the gate is called off and the
/// workers already started are joined.
fn spawn_workers<'scope, 'env, L: Sync, W: Work<L>>(
    scope: &'scope Scope<'scope, 'env>,
    limiters: &'env [L],
    threads: u32,
    ctx: impl Fn(u32) -> Ctx<'env>,
    done: Sender<()>,
    work: &'env W,
) -> anyhow::Result<Vec<ScopedJoinHandle<'scope, WorkerResult>>> {
    let mut handles = Vec::with_capacity(threads as usize);
    for i in 0..threads {
        let limiter = &limiters[i as usize % limiters.len()];
        let ctx = ctx(i);
        let done = done.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("pace-{i}"))
            .spawn_scoped(scope, move || {
                let _done = done;
                work(limiter, &ctx)
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                open_gate(ctx.gate, Err(()));
                for h in handles {
                    let _ = h.join();
                }
                return Err(anyhow::Error::new(e)
                    .context(format!("starting worker thread {} of {threads}", i + 1)));
            }
        }
    }
    Ok(handles)
}

/// The progress line on a terminal: the ops the workers' `counters` add up
/// to.
fn progress_line(counters: Arc<[OpCounter]>, target_rate: f64) -> Option<Progress> {
    Progress::start("ops", target_rate, move || Snapshot {
        // Ordering: Relaxed; gauges.
        ops: counters.iter().map(|n| n.0.load(Ordering::Relaxed)).sum(),
        detail: String::new(),
    })
}

/// Joins the workers: their results, and whether any panicked.
fn join_all(handles: Vec<ScopedJoinHandle<'_, WorkerResult>>) -> (Vec<WorkerResult>, bool) {
    let mut results = Vec::with_capacity(handles.len());
    let mut panicked = false;
    for h in handles {
        match h.join() {
            Ok(r) => results.push(r),
            Err(_) => panicked = true,
        }
    }
    (results, panicked)
}

/// The process's CPU time from [`start`](Self::start) to
/// [`stop`](Self::stop), less the reporting thread's own (its sampling is
/// not the limiter's).
struct CpuTime {
    process: Option<u64>,
    own: Option<u64>,
}

impl CpuTime {
    fn start() -> CpuTime {
        CpuTime {
            process: process_cpu_nanos(),
            own: thread_cpu_nanos(),
        }
    }

    /// `None` where the platform has no per-process CPU clock.
    fn stop(self) -> Option<u64> {
        let (process, own) = (process_cpu_nanos(), thread_cpu_nanos());
        // The reporting thread's own CPU time (sampling) is not the limiter's.
        let own = match (self.own, own) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        };
        match (self.process, process) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a).saturating_sub(own)),
            _ => None,
        }
    }
}
