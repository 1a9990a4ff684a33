//! One `pace` worker's loop: take a permit, record the op's wait, do its
//! work (with --work) and record its service and response times, until the
//! stop rule, Ctrl-C or a refusal for good. With --stages each op is first
//! taken from the run's [`Arrivals`] and waited for until it is due.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ratekeeper::{AcquireError, Clock, DefaultClock, Grant, RateLimiter};

use super::gate::{wait_at_gate, Gate, Go, Stop};
use super::work::{WorkLoad, WorkSpec};
use crate::plot::Buckets;
use crate::report::WaitRecorder;
use crate::run::interrupt::{self, Interrupt, LONG_WAIT_NANOS};
use crate::run::ramp::Arrivals;
use crate::run::sleep_until_retry;

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
pub(super) struct WorkerResult {
    pub(super) waits: WaitRecorder,
    /// Clock reading when its last counted op was granted.
    pub(super) last_start: Option<u64>,
    /// Clock reading when the worker stopped.
    pub(super) finished: u64,
    /// Resilience4j's limiters: acquires refused by the timeout.
    pub(super) refused: u64,
    /// Why the worker stopped early, if a limiter refused it a permit for
    /// good.
    pub(super) error: Option<anyhow::Error>,
    /// Whether it stopped for Ctrl-C.
    pub(super) interrupted: bool,
    /// With --plot: its ops per time bucket.
    pub(super) buckets: Option<Buckets>,
    /// With --work: its work, with the service and response times of its
    /// ops whose work ran to the end.
    pub(super) work: Option<WorkLoad>,
    /// With --stages: its ops taken after they were due (every worker was
    /// busy then).
    pub(super) busy: u64,
}

/// A worker's count of its ops, for the progress line, on a cache line of
/// its own: the worker stores to it after each op, the progress thread reads.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct OpCounter(pub(super) AtomicU64);

/// What a worker is handed besides its limiter.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ctx<'a> {
    /// The clock every limiter of the run reads.
    pub(super) clock: &'a DefaultClock,
    pub(super) gate: &'a Gate,
    /// Count mode: the ops still to hand out.
    pub(super) remaining: &'a AtomicU64,
    pub(super) interrupt: &'a Interrupt,
    /// The longest a request may wait (Resilience4j's timeout): a request
    /// that would wait longer is refused, counted, and asked again later.
    pub(super) max_wait: Option<Duration>,
    /// With a progress line or --max-behind: this worker's op counter.
    pub(super) progress: Option<&'a OpCounter>,
    /// The worker's index (0 to threads - 1), which seeds its --work jitter.
    pub(super) index: u32,
    /// With --work: what each op does after its permit.
    pub(super) work: Option<WorkSpec>,
    /// With --stages: the ops of this worker's limiter, in order, each
    /// with its due time.
    pub(super) arrivals: Option<&'a Arrivals<'a>>,
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
/// to ask again, unless the deadline passed. After a signal, any refusal
/// stops the worker as interrupted. Any other refusal is for good.
#[cold]
#[inline(never)]
fn ask_again(e: AcquireError, ctx: &Ctx<'_>, deadline: Option<u64>, tally: &mut Tally) -> bool {
    if ctx.interrupt.is_set() {
        // A refusal after a signal is the signal's (a shared limiter is
        // closed by it, ending a stalled decision).
        tally.interrupted = true;
        return false;
    }
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

/// What a worker measures of its ops as they go.
struct Measures {
    waits: WaitRecorder,
    last_start: Option<u64>,
    timeline: Option<Timeline>,
    /// With --work: the work, and the service and response times.
    work: Option<WorkLoad>,
    /// Ops so far, kept only for the progress line and --max-behind.
    ops: u64,
}

impl Measures {
    /// One op that started at `now`, measured from its `scheduled` time
    /// (its grant's, or with --stages its due time): records its wait,
    /// then does its work (with --work), which records its service and
    /// response times. Returns the clock reading when the op ended: `now`
    /// without work, or when the interrupt (Ctrl-C, --max-behind) cut the
    /// work short.
    #[inline]
    fn op(&mut self, now: u64, scheduled: u64, ctx: &Ctx<'_>) -> u64 {
        let wait = now.saturating_sub(scheduled);
        self.waits.record(wait);
        if let Some(t) = &mut self.timeline {
            t.record(now, wait);
        }
        self.last_start = Some(now);
        ctx.count_op(&mut self.ops);
        match &mut self.work {
            Some(w) => w
                .run(scheduled, now, ctx.clock, ctx.interrupt)
                .unwrap_or(now),
            None => now,
        }
    }
}

/// One worker's loop on `limiter` (the shared limiter, or the worker's own
/// handle on it), until the run's stop rule, Ctrl-C or a refusal for good.
pub(super) fn worker<L: RateLimiter>(limiter: &L, ctx: &Ctx<'_>) -> WorkerResult {
    let clock = ctx.clock;
    let mut m = Measures {
        waits: WaitRecorder::new(),
        last_start: None,
        timeline: None,
        work: ctx.work.map(|spec| WorkLoad::new(spec, ctx.index)),
        ops: 0,
    };
    let mut tally = Tally::default();
    let mut busy = 0;
    if let Ok(go) = wait_at_gate(ctx.gate) {
        m.timeline = Timeline::new(&go);
        match (go.stop, ctx.arrivals) {
            (Stop::Deadline(deadline), Some(arrivals)) => {
                let run = Staged {
                    arrivals,
                    t0: go.t0,
                    deadline,
                };
                busy = run.work(limiter, ctx, &mut m, &mut tally);
            }
            (Stop::Deadline(deadline), None) => {
                while let Some(g) = next_grant(limiter, ctx, Some(deadline), &mut tally) {
                    let now = clock.now_nanos();
                    if g.ready_nanos() >= deadline {
                        break;
                    }
                    // An op that ends past the deadline (its own start, or
                    // its work) is the worker's last.
                    if m.op(now, g.scheduled_nanos(), ctx) >= deadline {
                        break;
                    }
                }
            }
            (Stop::Count, _) => {
                while ctx.take_one() {
                    let Some(g) = next_grant(limiter, ctx, None, &mut tally) else {
                        break;
                    };
                    m.op(clock.now_nanos(), g.scheduled_nanos(), ctx);
                }
            }
        }
    }
    WorkerResult {
        waits: m.waits,
        last_start: m.last_start,
        finished: clock.now_nanos(),
        refused: tally.refused,
        error: tally
            .refusal
            .map(|e| anyhow::Error::new(e).context("the limiter refused a permit")),
        interrupted: tally.interrupted,
        buckets: m.timeline.map(|t| t.buckets),
        work: m.work,
        busy,
    }
}

/// A worker's part of a staged run (--stages): the ops its limiter's
/// [`Arrivals`] hand out, until the deadline.
struct Staged<'a> {
    arrivals: &'a Arrivals<'a>,
    /// The run's start and deadline on the shared clock.
    t0: u64,
    deadline: u64,
}

impl Staged<'_> {
    /// Takes the next op and waits until it is due, then for its permit;
    /// the op is measured from its due time. Stops once no op is due
    /// before the deadline, as the plain loop does (an op whose permit or
    /// end is at or past the deadline is the last), at Ctrl-C or at a
    /// refusal for good. Returns the ops that found every worker busy (see
    /// [`Busy`]).
    fn work<L: RateLimiter>(
        &self,
        limiter: &L,
        ctx: &Ctx<'_>,
        m: &mut Measures,
        tally: &mut Tally,
    ) -> u64 {
        let mut busy = Busy::default();
        while let Some(due) = self.arrivals.take() {
            let due = self.t0.saturating_add(due);
            if due >= self.deadline {
                break;
            }
            let taken = ctx.clock.now_nanos();
            if taken <= due && !sleep_until(ctx, due) {
                tally.interrupted = true;
                break;
            }
            let Some(g) = next_grant(limiter, ctx, Some(self.deadline), tally) else {
                break;
            };
            busy.op(due, taken, m.last_start, g.ready_nanos());
            let now = ctx.clock.now_nanos();
            if g.ready_nanos() >= self.deadline || m.op(now, due, ctx) >= self.deadline {
                break;
            }
        }
        busy.ops
    }
}

/// A worker's count of the ops of a staged run that found every worker
/// busy: taken after they were due because this worker was still busy
/// with an earlier op (its work, or its start), not waiting for that op's
/// permit. An op is so if its worker's last op had started by the time it
/// was due, or if the last op was itself so and its permit did not keep it
/// waiting (the lateness carried over from op to op).
#[derive(Debug, Default)]
struct Busy {
    ops: u64,
    /// Whether the last op was late for a busy worker, not for its permit.
    carried: bool,
}

impl Busy {
    /// How long a permit may keep an op waiting, past when it was due or
    /// taken, and still count as not holding it back: the time to ask for
    /// it.
    const HELD_NANOS: u64 = 1_000_000;

    /// An op due at `due`, taken at `taken` by a worker whose last op
    /// started at `last_start`, its permit ready at `ready`.
    fn op(&mut self, due: u64, taken: u64, last_start: Option<u64>, ready: u64) {
        let late = taken > due;
        let busy = late && (self.carried || last_start.is_some_and(|s| s <= due));
        let held = ready > taken.max(due).saturating_add(Self::HELD_NANOS);
        self.ops += u64::from(busy);
        self.carried = busy && !held;
    }
}

/// Sleeps until clock reading `due`: on the interrupt while it is far off,
/// then on the thread. Returns `false` if Ctrl-C (or --max-behind) came
/// first.
fn sleep_until(ctx: &Ctx<'_>, due: u64) -> bool {
    loop {
        if ctx.interrupt.is_set() {
            return false;
        }
        let left = due.saturating_sub(ctx.clock.now_nanos());
        if left == 0 {
            return true;
        }
        if left > LONG_WAIT_NANOS {
            ctx.interrupt
                .sleep(Duration::from_nanos(left - LONG_WAIT_NANOS / 2));
        } else {
            std::thread::sleep(Duration::from_nanos(left));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Busy;

    #[test]
    fn busy_counts_ops_late_for_a_busy_worker_not_for_a_permit() {
        let ms = 1_000_000;
        let mut b = Busy::default();
        // On time: not busy.
        b.op(0, 0, None, 0);
        // Due at 10 ms, taken at 50 ms after an op that started at 0 (its
        // work ran long): busy; the next, due at 20 ms, taken at 100 ms
        // after the op that started at 50 ms: busy too (carried).
        b.op(10 * ms, 50 * ms, Some(0), 50 * ms);
        b.op(20 * ms, 100 * ms, Some(50 * ms), 100 * ms);
        assert_eq!(b.ops, 2);
        // A permit that kept an op waiting ends the carry: the next op,
        // late because the worker waited for that permit, is not busy.
        b.op(30 * ms, 150 * ms, Some(100 * ms), 400 * ms);
        assert_eq!(b.ops, 3);
        b.op(40 * ms, 400 * ms, Some(400 * ms), 400 * ms);
        assert_eq!(b.ops, 3);
    }
}
