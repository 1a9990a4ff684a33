//! `exec`'s dispatcher: it starts the workers, takes each run's permit from
//! the limiter, hands the run to a free worker and tallies the runs as they
//! finish; after the last run is started it waits for the running ones.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Duration;

use anyhow::Context;
use ratekeeper::config::LimiterRef;
use ratekeeper::{AcquireError, Clock, DefaultClock, Grant, RateLimiter};

use super::lag::{lag, staged_lag, Lag};
use super::shutdown::Shutdown;
use super::slot::Slot;
use super::summary::Tally;
use super::worker::{work, Finished, Job, Spawner};
use crate::limiter;
use crate::progress::{self, Progress, Snapshot};
use crate::report::duration_nanos;
use crate::run::interrupt::{self, Interrupt};
use crate::run::ramp::{self, Driven, Ramp};
use crate::run::sleep_until_retry;

/// How often the dispatcher, waiting for a run to end, checks for a signal
/// (and, at a stop, whether the grace period is over).
pub(super) const POLL: Duration = Duration::from_millis(20);

/// What the progress line reads.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) started: AtomicU64,
    pub(super) finished: AtomicU64,
    pub(super) failed: AtomicU64,
}

/// What a request for the next run's permit gave.
#[derive(Debug)]
pub(super) enum Reserved {
    /// The permit.
    Granted(Grant),
    /// None now: refused because its wait would exceed the maximum wait
    /// (Resilience4j's timeout), or after a signal (which the dispatcher
    /// then sees).
    AskAgain,
    /// The limit shared through Redis failed the run, or cannot be used
    /// (it says why).
    LimitFailed,
}

/// The next run's permit. A request the limiter refused because its wait
/// would exceed `max_wait` (Resilience4j's timeout) is counted, and the
/// dispatcher sleeps until a permit could be granted within the timeout
/// (not past `deadline` nor Ctrl-C), to ask again.
pub(super) fn reserve_run(
    limiter: &dyn RateLimiter,
    max_wait: Option<Duration>,
    deadline: Option<u64>,
    interrupt: &Interrupt,
    refused: &mut u64,
) -> anyhow::Result<Reserved> {
    match limiter.reserve(1, max_wait) {
        Ok(grant) => Ok(Reserved::Granted(grant)),
        Err(AcquireError::WouldWait {
            wait,
            max_wait: max,
        }) if max_wait.is_some() => {
            *refused += 1;
            sleep_until_retry(interrupt, limiter.clock(), wait, max, deadline);
            Ok(Reserved::AskAgain)
        }
        // A signal closes a shared limiter: its refusal is the signal's.
        Err(_) if interrupt.is_set() => Ok(Reserved::AskAgain),
        Err(AcquireError::Unavailable | AcquireError::Misconfigured) => Ok(Reserved::LimitFailed),
        Err(e) => Err(anyhow::Error::new(e).context("the limiter refused a permit")),
    }
}

/// Why the dispatcher stopped starting runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The count was reached or the deadline passed.
    Done,
    /// SIGINT (Ctrl-C) or SIGTERM.
    Interrupted,
    /// A run failed, with --fail-fast.
    FailFast,
    /// The schedule fell --max-behind behind.
    MaxBehind,
    /// The limit shared through Redis failed (`--on-redis-failure
    /// closed`), or its key cannot be used (another type, another limit).
    LimitFailed,
}

/// How the runs are dispatched, whatever the limiter.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan<'a> {
    /// The clock the limiter and the workers read.
    pub(super) clock: DefaultClock,
    /// How many runs may run at once: one worker thread each.
    pub(super) concurrency: usize,
    /// Duration mode: how long runs are started for.
    pub(super) duration: Option<Duration>,
    /// Count mode: how many runs are started.
    pub(super) count: Option<u64>,
    /// With --plot: the width of the time buckets runs are tallied into.
    pub(super) bucket: Option<u64>,
    /// The rate the run aims at: --rate's, or with --stages their mean over
    /// the run (for the progress line).
    pub(super) target_rate: f64,
    /// With --stages: the rate the run follows, changed on the running
    /// limiter by a thread of its own.
    pub(super) ramp: Option<&'a Ramp>,
    /// The longest a permit may wait (Resilience4j's timeout).
    pub(super) max_wait: Option<Duration>,
    /// How long the runs still running at a stop have between SIGTERM and
    /// SIGKILL (`--grace`).
    pub(super) grace: Duration,
    /// `--max-behind`, in nanoseconds: how far behind its schedule the
    /// dispatch may fall before it stops.
    pub(super) max_behind: Option<u64>,
    pub(super) fail_fast: bool,
    pub(super) interrupt: &'a Interrupt,
}

/// What the dispatch did: the tally of the finished runs, and how it went.
#[derive(Debug)]
pub(super) struct Dispatched {
    pub(super) tally: Tally,
    /// Runs started.
    pub(super) launched: u64,
    pub(super) stop: Stop,
    /// Whether a signal (SIGINT, SIGTERM) arrived, before the stop or while
    /// the runs still running were waited for.
    pub(super) interrupted: bool,
    /// Permits refused by the limiter's timeout (each asked for again).
    pub(super) refused: u64,
    /// When the dispatch stopped starting runs (see [`lag`](super::lag)).
    pub(super) end: u64,
    /// How far behind its schedule it was then.
    pub(super) lag: Lag,
    /// With --stages: the rate changes made.
    pub(super) driven: Driven,
    /// With --stages: the runs due while every slot was busy.
    pub(super) busy: u64,
}

/// The limiter runs are dispatched on: one built in memory (its schedule
/// started at the start and, with --stages, its rate ramped), or a limit
/// shared through Redis (`--redis`: neither).
#[derive(Clone, Copy)]
pub(super) enum Limiter<'a> {
    Local(LimiterRef<'a, DefaultClock>),
    Shared(&'a dyn RateLimiter),
}

/// Starts `plan.concurrency` workers running `spawner`'s command, then the
/// limiter's schedule, and dispatches runs until the count, the deadline,
/// a signal or (with --fail-fast) a failure; then waits for the running
/// runs, ending them at a signal (see [`Shutdown`]).
///
/// # Errors
///
/// A worker thread that cannot be started or stopped early, or a permit
/// the limiter refused for good.
pub(super) fn dispatch(
    limiter: Limiter<'_>,
    spawner: &Spawner,
    plan: &Plan<'_>,
) -> anyhow::Result<Dispatched> {
    let slots: Vec<Slot> = (0..plan.concurrency).map(|_| Slot::default()).collect();
    let (done_tx, done_rx) = mpsc::channel::<Finished>();
    let counters = Arc::new(Counters::default());
    // Set when the dispatcher stops starting runs: the drive thread stops.
    let ended = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let jobs = start_workers(scope, &slots, done_tx, spawner, &plan.clock)?;
        let (t0, driver) = match limiter {
            Limiter::Local(l) => {
                let t0 = limiter::start_schedules(&[l], &plan.clock);
                (t0, start_ramp(scope, l, plan, t0, &ended)?)
            }
            // A shared schedule has no restart, and no --stages.
            Limiter::Shared(_) => (plan.clock.now_nanos(), None),
        };
        let deadline = plan.duration.map(|d| t0.saturating_add(duration_nanos(d)));
        let line = progress_line(&counters, plan.target_rate);
        let mut d = Dispatcher {
            limiter: match limiter {
                Limiter::Local(l) => l.as_dyn(),
                Limiter::Shared(l) => l,
            },
            plan,
            deadline,
            jobs,
            done: done_rx,
            counters: &counters,
            tally: Tally::new(t0, plan.bucket),
            idle: (0..plan.concurrency).rev().collect(),
            launched: 0,
            refused: 0,
            last: None,
            end: t0,
            next_due: None,
            busy: 0,
        };
        let stop = d.dispatch();
        // Ordering: Relaxed; a stop request that carries no data.
        ended.store(true, Ordering::Relaxed);
        let stop = stop?;
        d.wait_for_running(&slots, stop);
        if let Some(line) = line {
            line.finish();
        }
        let lag = d.lag();
        let driven = match driver {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("the --stages thread panicked"))?,
            None => Driven::default(),
        };
        Ok(Dispatched {
            tally: d.tally,
            launched: d.launched,
            stop,
            interrupted: plan.interrupt.is_set(),
            refused: d.refused,
            end: d.end,
            lag,
            driven,
            busy: d.busy,
        })
    })
}

/// With --stages, starts the thread that ramps `limiter`'s rate from `t0`
/// until `ended` is set (see [`ramp::drive`]).
fn start_ramp<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    limiter: LimiterRef<'env, DefaultClock>,
    plan: &'env Plan<'env>,
    t0: u64,
    ended: &'env AtomicBool,
) -> anyhow::Result<Option<ScopedJoinHandle<'scope, Driven>>> {
    let Some(r) = plan.ramp else {
        return Ok(None);
    };
    ramp::prime(r, &[limiter]);
    let handle = std::thread::Builder::new()
        .name("exec-stages".to_owned())
        .spawn_scoped(scope, move || {
            ramp::drive(r, &[limiter], &plan.clock, t0, plan.interrupt, ended)
        })
        .context("starting the --stages thread")?;
    Ok(Some(handle))
}

/// Starts a worker per slot, each reporting its finished runs to `done`;
/// returns the channels that hand each its jobs.
fn start_workers<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    slots: &'env [Slot],
    done: Sender<Finished>,
    spawner: &'env Spawner,
    clock: &'env DefaultClock,
) -> anyhow::Result<Vec<Sender<Job>>> {
    let concurrency = slots.len();
    let mut jobs = Vec::with_capacity(concurrency);
    for (i, slot) in slots.iter().enumerate() {
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let done = done.clone();
        std::thread::Builder::new()
            .name(format!("exec-{i}"))
            .spawn_scoped(scope, move || work(i, job_rx, done, spawner, clock, slot))
            .with_context(|| format!("starting worker thread {} of {concurrency}", i + 1))?;
        jobs.push(job_tx);
    }
    Ok(jobs)
}

/// The progress line on a terminal: runs started, running and failed.
fn progress_line(counters: &Arc<Counters>, target_rate: f64) -> Option<Progress> {
    progress::enabled()
        .then(|| {
            let c = Arc::clone(counters);
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
        .flatten()
}

/// The dispatcher's state while it starts runs.
struct Dispatcher<'a> {
    limiter: &'a dyn RateLimiter,
    plan: &'a Plan<'a>,
    /// Duration mode: the clock reading after which no run starts.
    deadline: Option<u64>,
    /// Each worker's job channel.
    jobs: Vec<Sender<Job>>,
    /// The workers' finished runs.
    done: Receiver<Finished>,
    counters: &'a Counters,
    tally: Tally,
    /// The workers without a run, the next to use last.
    idle: Vec<usize>,
    launched: u64,
    refused: u64,
    /// The last run started: its scheduled time, and when it was handed to
    /// its worker.
    last: Option<(u64, u64)>,
    /// When the dispatch stopped starting runs (see [`lag`](super::lag)).
    end: u64,
    /// The scheduled time of the first run not started; `None` when every
    /// run of --count (or of the stages) was started.
    next_due: Option<u64>,
    /// With --stages: the runs due while every slot was busy.
    busy: u64,
}

impl Dispatcher<'_> {
    /// Starts runs until a stop rule says otherwise; returns which.
    fn dispatch(&mut self) -> anyhow::Result<Stop> {
        let interrupt = self.plan.interrupt;
        loop {
            self.take_finished();
            if let Some(stop) = self.stop_early() {
                return Ok(self.stop(stop, None));
            }
            if self.plan.count.is_some_and(|n| self.launched >= n) {
                return Ok(self.stop(Stop::Done, None));
            }
            let staged = match self.wait_until_due() {
                Ok(due) => due,
                Err(stop) => return Ok(self.stop(stop, None)),
            };
            let reserved = reserve_run(
                self.limiter,
                self.plan.max_wait,
                self.deadline,
                interrupt,
                &mut self.refused,
            )?;
            let grant = match reserved {
                Reserved::Granted(grant) => grant,
                Reserved::LimitFailed => return Ok(self.stop(Stop::LimitFailed, None)),
                Reserved::AskAgain if self.past_deadline() => {
                    return Ok(self.stop(Stop::Done, None))
                }
                Reserved::AskAgain => continue,
            };
            // With --stages a run is scheduled when it is due.
            let due = staged.unwrap_or(grant.scheduled_nanos());
            let stop = if self.deadline.is_some_and(|d| grant.ready_nanos() >= d) {
                Some(Stop::Done)
            } else {
                self.too_far_behind(due).then_some(Stop::MaxBehind)
            };
            if let Some(stop) = stop {
                self.limiter.cancel(&grant);
                return Ok(self.stop(stop, Some(due)));
            }
            // Every limiter's long wait is slept on the interrupt, a token
            // pool's too (the library's stoppable wait asks the pool what it
            // waits for, so an inline pool's waiter still fills it). A
            // grant not waited for to the end is given back.
            let Some(grant) = interrupt::wait_for_grant(self.limiter, grant, interrupt) else {
                return Ok(self.stop(Stop::Interrupted, Some(due)));
            };
            match self.free_worker(due)? {
                Ok(worker) => self.launch(worker, due)?,
                Err(stop) => {
                    self.limiter.cancel(&grant);
                    return Ok(self.stop(stop, Some(due)));
                }
            }
        }
    }

    /// Records where the dispatch stood at `stop`: its end, and the
    /// scheduled time of the next run due, `held` if the dispatcher held
    /// that run's permit (see [`lag`](super::lag)).
    fn stop(&mut self, stop: Stop, held: Option<u64>) -> Stop {
        self.end = match (stop, self.deadline) {
            (Stop::Done, Some(deadline)) => deadline,
            _ => self.plan.clock.now_nanos(),
        };
        self.next_due = match held {
            Some(due) => Some(due),
            None if self.plan.count.is_some_and(|n| self.launched >= n) => None,
            None => match self.plan.ramp {
                Some(r) => r.due_nanos(self.launched).map(|d| self.tally.t0 + d),
                None => Some(self.last.map_or(self.tally.t0, |(due, _)| {
                    let slot = (1e9 / self.plan.target_rate).round() as u64;
                    due.saturating_add(slot)
                })),
            },
        };
        stop
    }

    /// With --stages: waits until the next run is due, tallying the runs
    /// that finish meanwhile, and returns when that is (counting it in
    /// `busy` if every slot is busy then); `None` without --stages. Or why
    /// no run may start: no run is due before the stages end, or a signal.
    fn wait_until_due(&mut self) -> Result<Option<u64>, Stop> {
        let Some(ramp) = self.plan.ramp else {
            return Ok(None);
        };
        let due = ramp
            .due_nanos(self.launched)
            .map(|d| self.tally.t0.saturating_add(d))
            .filter(|&due| self.deadline.is_none_or(|end| due < end))
            .ok_or(Stop::Done)?;
        loop {
            self.take_finished();
            if let Some(stop) = self.stop_early() {
                return Err(stop);
            }
            let left = due.saturating_sub(self.plan.clock.now_nanos());
            if left == 0 {
                break;
            }
            let nap = Duration::from_nanos(left).min(POLL);
            if left > interrupt::LONG_WAIT_NANOS {
                self.plan.interrupt.sleep(nap);
            } else {
                std::thread::sleep(nap);
            }
        }
        if self.idle.is_empty() {
            self.busy += 1;
        }
        Ok(Some(due))
    }

    /// How far behind its schedule the dispatch was at its end.
    fn lag(&self) -> Lag {
        let last_late = self.last.map_or(0, |(due, at)| at.saturating_sub(due));
        let left = self
            .plan
            .count
            .map_or(u64::MAX, |n| n.saturating_sub(self.launched));
        match self.plan.ramp {
            // The runs the stages had due before the end.
            Some(r) => {
                let span = Duration::from_nanos(self.end.saturating_sub(self.tally.t0));
                let due = r.ops_due(span).ceil() as u64;
                let left = left.min(due.saturating_sub(self.launched));
                staged_lag(self.end, self.next_due, last_late, left)
            }
            None => lag(
                self.end,
                self.next_due,
                last_late,
                self.plan.target_rate,
                left,
            ),
        }
    }

    /// With --max-behind: whether the run due at `due` is that late now.
    fn too_far_behind(&self, due: u64) -> bool {
        self.plan
            .max_behind
            .is_some_and(|max| self.plan.clock.now_nanos().saturating_sub(due) >= max)
    }

    /// Duration mode: whether the deadline has passed.
    fn past_deadline(&self) -> bool {
        self.deadline
            .is_some_and(|d| self.plan.clock.now_nanos() >= d)
    }

    /// A signal, or with --fail-fast a failure, stops the dispatch.
    fn stop_early(&self) -> Option<Stop> {
        if self.plan.interrupt.is_set() {
            Some(Stop::Interrupted)
        } else if self.plan.fail_fast && self.tally.failed > 0 {
            Some(Stop::FailFast)
        } else {
            None
        }
    }

    /// A free worker for the run due at `due`, waited for; or why no run
    /// may start any more: no run starts after a signal or, with
    /// --fail-fast, after a failure, even one seen just now; with
    /// --max-behind, once the run is that late; in duration mode, after
    /// the deadline (the run was due, but is not started).
    fn free_worker(&mut self, due: u64) -> anyhow::Result<Result<usize, Stop>> {
        loop {
            self.take_finished();
            if let Some(stop) = self.stop_early() {
                return Ok(Err(stop));
            }
            if self.too_far_behind(due) {
                return Ok(Err(Stop::MaxBehind));
            }
            if let Some(w) = self.idle.pop() {
                return Ok(Ok(w));
            }
            if self.past_deadline() {
                return Ok(Err(Stop::Done));
            }
            match self.done.recv_timeout(POLL) {
                Ok(f) => self.finish(f),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    anyhow::bail!("the worker threads stopped")
                }
            }
        }
    }

    /// Hands the next run, due at `scheduled`, to `worker`.
    fn launch(&mut self, worker: usize, scheduled: u64) -> anyhow::Result<()> {
        self.launched += 1;
        let job = Job {
            number: self.launched,
            scheduled,
        };
        if self.jobs[worker].send(job).is_err() {
            anyhow::bail!("worker thread {} stopped", worker + 1);
        }
        self.last = Some((scheduled, self.plan.clock.now_nanos()));
        // Ordering: Relaxed; a gauge for the progress line.
        self.counters
            .started
            .store(self.launched, Ordering::Relaxed);
        Ok(())
    }

    /// Tallies the runs finished so far, without waiting.
    fn take_finished(&mut self) {
        while let Ok(f) = self.done.try_recv() {
            self.finish(f);
        }
    }

    /// Tallies a finished run; its worker is free again.
    fn finish(&mut self, f: Finished) {
        self.idle.push(f.worker);
        self.tally.add(&f);
        // Ordering: Relaxed; gauges for the progress line.
        self.counters.finished.fetch_add(1, Ordering::Relaxed);
        self.counters
            .failed
            .store(self.tally.failed, Ordering::Relaxed);
    }

    /// Waits for the running runs, with no more to start. After a signal
    /// (the stop's, or one that arrives meanwhile) or --max-behind they are
    /// ended: SIGTERM to their process groups, SIGKILL after the grace
    /// period or at a further signal.
    fn wait_for_running(&mut self, slots: &[Slot], stop: Stop) {
        // The workers stop once their job channels close.
        self.jobs.clear();
        let mut shutdown = Shutdown::new(slots, self.plan.grace, self.plan.interrupt);
        if matches!(stop, Stop::Interrupted | Stop::MaxBehind) {
            shutdown.terminate();
        }
        while self.idle.len() < self.plan.concurrency {
            match self.done.recv_timeout(POLL) {
                Ok(f) => self.finish(f),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            shutdown.tick();
        }
    }
}
