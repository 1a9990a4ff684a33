//! The benchmark report of issue 8 (item 5): every ratekeeper limiter and
//! mode against governor, ratelimit and leaky-bucket, in one run, at 1, 2, 4
//! and 8 threads, printed as Markdown tables with the machine and the command.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example bench_report
//! cargo run --release -p ratekeeper-bench --example bench_report -- --quick
//! cargo run --release -p ratekeeper-bench --example bench_report -- --secs 2 --runs 5
//! cargo run --release -p ratekeeper-bench --example bench_report -- --threads 1,2 --limiters pacer-burst-1.1,governor
//! ```
//!
//! Two measurements per limiter, run count and thread count, interleaved
//! (every run goes over all thread counts and limiters before the next run
//! starts, so ratios between limiters compare the same run):
//!
//! * **unthrottled**: each limiter is configured so that it never makes a
//!   caller wait (as `benches/single_threaded.rs` does: the pacers and pools
//!   at 1e9 ops/s, Guava's limiters at an infinite rate, the refill and cycle
//!   limiters and the peers with buckets far larger than the run can empty).
//!   N threads, released together by a barrier, take permits in batches of
//!   256 until `--secs / 2` has passed; **grants/s** is all their permits over
//!   the time from the release to the last thread's end. A grant that had to
//!   wait anyway (a ratekeeper grant ready later than it started, a peer's
//!   first try denied) is counted and shown; it should be 0.
//! * **throttled**: each limiter is configured for the target (default 1e7
//!   ops/s) and started just before the threads are released; N threads take
//!   permits one at a time, blocking (or retrying) until granted, for
//!   `--secs` (default 1 s, so each run is one 1 s window).
//!   * **achieved**: the permits whose call returned before the end of the
//!     window, over the window; **rate error**: achieved / target − 1.
//!   * **CPU/permit**: process CPU time (user + sys, all threads, filler
//!     threads included; `CLOCK_PROCESS_CPUTIME_ID` through `cpu-time`)
//!     from the start to the last thread's end, over the permits. It includes
//!     the harness's two `quanta::Instant::now()` reads and one histogram
//!     record per permit (together about 25–30 ns on the reference machine).
//!   * **call p99**: the 99th percentile of the time each permit spent in the
//!     limiter's call, the same definition for every limiter: from just
//!     before the op first asked (`acquire()`, the first `check()` or
//!     `try_wait()`, `acquire_one()`) to just after it was granted, retries
//!     and sleeps between tries included.
//!   * **grant wait p99** (ratekeeper only): the 99th percentile of
//!     `Grant::wait_nanos()`, i.e. `started − scheduled`: how late the op
//!     started against the limiter's schedule (nosqlbench's wait, which
//!     exposes coordinated omission). Peers have no schedule to report.
//!
//!   Per-thread HdrHistograms (2 significant digits) are merged per run.
//!
//! Each cell is measured `--runs` times (default 3); the tables give the
//! median of the runs with the min–max range. `--quick` is `--secs 0.3
//! --runs 1`. A full run with the defaults measures 32 configurations × 4
//! thread counts × 3 runs × 1.5 s (at commit ea9758c, with 27
//! configurations: 487 s on the 2-core reference VM). The report prints its
//! own estimate first.
//!
//! Configurations at the target rate `r` (1e7 unless `--target`):
//!
//! * ratekeeper `Pacer`: strictness 0 (average), 1.1 (the default burst)
//!   and 1.0 (strict), with their defaults (the clock read on every grant);
//!   average mode also with the opt-in cached clock (`…-cached`: callers
//!   behind schedule skip the read; strict and burst modes read it
//!   anyway);
//! * ratekeeper `Pacer` through per-thread batching handles (strictness 0
//!   and 0.5), and split into shards (`ShardedPacer`, one handle per
//!   thread, work stealing) with one shard per thread and with 2 shards,
//!   strictness 0 and 1.1;
//! * ratekeeper `TokenPool`: burst ratio 1.1, filled inline (callers refill)
//!   and by a filler thread every 1 ms;
//! * Guava's `SmoothBursty` (1 s of burst, Guava's default) and
//!   `SmoothWarmingUp` (10 ms warm-up, cold factor 3, primed past its
//!   warm-up for 20 ms on the main thread before the window so that the
//!   window sees the stable rate), in Guava's whole microseconds (their
//!   default) and in whole nanoseconds (`Resolution::Nanos`, keys
//!   `…-nanos`); `SmoothBursty` also on `MonotonicClock`
//!   (`smooth-bursty-instant`: `std::time::Instant`, 33 ns a read against
//!   the default TSC clock's 13 ns), to show the clock's share of a grant;
//! * Resilience4j-style `RefillLimiter` and `CycleLimiter`: `r × 100 µs`
//!   permits per 100 µs period, no timeout (`acquire()` waits as long as
//!   needed);
//! * each of the `TokenPool`s, Guava's and the Resilience4j-style limiters
//!   above also through per-thread batching handles (keys `…-batched`):
//!   the same limiter, configured and started as for its exact entry, each
//!   worker thread making one `BatchHandle::new(&limiter)` and acquiring
//!   through it (it leases up to 1024 permits with one reservation and
//!   grants them from thread-local state). These, the Pacer's batched
//!   handles and the shards are the report's batched configurations;
//! * the floor to beat, no limiter at all (`sleep-loop`): each thread keeps
//!   its own absolute schedule at `r / threads` and sleeps until each op's
//!   time with `std::thread::sleep` (unthrottled, it never sleeps);
//! * beside the unthrottled table, the 1-thread floor of a grant: one
//!   read of the default (TSC) clock and one `fetch_add`, no limiter, once
//!   per run, with the default Pacer's ratio to it and the target ratios to
//!   governor (`examples/grant_profile.rs` counts their instructions);
//! * governor 0.10: `Quota::with_period(1/r)` with a burst of `r × 10 µs`
//!   (governor's default `per_second` burst would be 1 s of permits, handed
//!   out at once); a denied `check()` retries;
//! * ratelimit 0.10: `r × 1 µs` tokens every 1 µs, at most `r × 10 µs`
//!   stored, none at start; a denied `try_wait()` retries;
//! * leaky-bucket 1.1, fair (its default): `r × 1 ms` tokens
//!   every 1 ms (its smallest interval), at most its default of 10 refills
//!   stored, none at start. Throttled, each thread runs `acquire_one().await` through its
//!   own current-thread tokio runtime (`block_on` per permit, whose own cost
//!   is in the figures); unthrottled, its sync `try_acquire(1)`.
//!
//! leaky-bucket's unfair mode is not in the table: at 2 threads it never
//! finishes a cell, here and also with one shared multi-thread runtime
//! driving the timers. This matches leaky-bucket's open issue #39 (udoprog/
//! leaky-bucket, "fair(false) permanently wedging try_acquire"): a stale
//! state written back under contention loses the bucket's `available`
//! bit, after which it never refills.
//!
//! A try-based peer (governor, ratelimit) whose try is denied sleeps for the
//! wait it was told when that is at least 50 µs, and otherwise calls
//! `std::thread::yield_now()` and tries again.

#[path = "common/mod.rs"]
mod common;
use common::spread;

use std::error::Error;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use hdrhistogram::Histogram;
use ratekeeper::pool::Filling;
use ratekeeper::smooth::Resolution;
use ratekeeper::{
    BatchHandle, Clock, DefaultClock, MonotonicClock, Pacer, PacerHandle, Rate, RateLimiter,
    ShardHandle, ShardedPacer, SmoothBursty, SmoothWarmingUp, TokenPool, Verb,
};
use ratekeeper_resilience4j::CycleConfig;
use ratekeeper_resilience4j::{CycleLimiter, RefillLimiter};

type Res<T> = Result<T, Box<dyn Error>>;

/// The rate of the unthrottled pacers and pools: one 1 ns slice per permit,
/// which no thread can outrun.
const UNTHROTTLED_RATE: f64 = 1e9;

/// Permits between two clock reads in an unthrottled run.
const BATCH: u64 = 256;

/// A retrying peer sleeps for its reported wait from this long; below it
/// yields.
const SLEEP_FROM: Duration = Duration::from_micros(50);

/// What a limiter is measured under.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Load {
    /// Configured never to make a caller wait.
    Unthrottled,
    /// Configured for this many permits per second.
    Target(f64),
}

/// One permit taken.
#[derive(Debug, Clone, Copy)]
struct Taken {
    /// The grant's `started − scheduled`, where the limiter reports one.
    sched_wait: Option<u64>,
    /// The permit was not granted at once (a wait or a retry).
    waited: bool,
}

/// A shared limiter as the harness drives it.
trait Subject: Sync {
    /// Per-thread state (a tokio runtime for the async peer).
    type Local;
    /// Builds a thread's state, before the threads are released.
    fn local(&self) -> Res<Self::Local>;
    /// Starts the schedule, just before the threads are released.
    fn start(&self) {}
    /// Takes one permit, waiting or retrying as long as it takes.
    fn take(&self, local: &mut Self::Local) -> Taken;
}

/// A ratekeeper limiter, through the crate's `RateLimiter::acquire`.
struct Rk<L> {
    lim: L,
    start: fn(&L),
}

impl<L: RateLimiter + Sync> Subject for Rk<L> {
    type Local = ();
    fn local(&self) -> Res<()> {
        Ok(())
    }
    fn start(&self) {
        (self.start)(&self.lim)
    }
    #[inline(always)]
    fn take(&self, _: &mut ()) -> Taken {
        let g = self.lim.acquire();
        Taken {
            sched_wait: Some(g.wait_nanos()),
            waited: g.ready_nanos() > g.started_nanos(),
        }
    }
}

/// A limiter taken through per-thread handles, which borrow it: the Pacer's
/// batching handles (`Pacer::handle`, issue 8's micro-batching: each
/// thread leases blocks of the schedule with one `fetch_add` and hands them
/// out locally), the sharded pacer's shard handles (`ShardedPacer`,
/// issue 8's partitioned slices: each thread is bound to a shard,
/// round-robin, and steals due slots from the others when its own would
/// make it wait), and any other ratekeeper limiter's `BatchHandle`s
/// (`BatchHandle::new(&limiter)`: each thread leases up to 1024 permits
/// with one reservation and grants them from thread-local state).
trait HandOut<'a>: Sync {
    type Handle: RateLimiter;
    /// A thread's handle, made on the thread before the threads are released.
    fn hand_out(&'a self) -> Self::Handle;
    /// Starts the schedule, just before the threads are released.
    fn start_run(&self);
}

impl<'a> HandOut<'a> for Pacer {
    type Handle = PacerHandle<'a, DefaultClock>;
    fn hand_out(&'a self) -> Self::Handle {
        self.handle()
    }
    fn start_run(&self) {
        if !self.is_started() {
            self.restart()
        }
    }
}

impl<'a> HandOut<'a> for ShardedPacer {
    type Handle = ShardHandle<'a, DefaultClock>;
    fn hand_out(&'a self) -> Self::Handle {
        self.handle()
    }
    fn start_run(&self) {
        if !self.is_started() {
            self.restart()
        }
    }
}

/// A limiter configured and started as its `acquire()` entry has it,
/// taken through one `BatchHandle` per thread.
impl<'a, L: RateLimiter + Sync + 'a> HandOut<'a> for Rk<L> {
    type Handle = BatchHandle<&'a L>;
    fn hand_out(&'a self) -> Self::Handle {
        BatchHandle::new(&self.lim)
    }
    fn start_run(&self) {
        Subject::start(self)
    }
}

/// A [`HandOut`] limiter, borrowed for the cell, so that a thread's handle,
/// which borrows it, can be the thread's state.
struct Handles<'a, P> {
    lim: &'a P,
}

impl<'a, P: HandOut<'a>> Subject for Handles<'a, P> {
    type Local = P::Handle;
    fn local(&self) -> Res<Self::Local> {
        Ok(self.lim.hand_out())
    }
    fn start(&self) {
        self.lim.start_run()
    }
    #[inline(always)]
    fn take(&self, handle: &mut Self::Local) -> Taken {
        let g = handle.acquire();
        Taken {
            sched_wait: Some(g.wait_nanos()),
            waited: g.ready_nanos() > g.started_nanos(),
        }
    }
}

/// How a ratekeeper limiter other than the Pacer is taken.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// `acquire()` on the shared limiter.
    Exact,
    /// `acquire()` on one `BatchHandle` per thread.
    Batched,
}

/// Measures `rk` on `path`.
fn measure_rk<L: RateLimiter + Sync>(
    rk: &Rk<L>,
    path: Path,
    threads: usize,
    load: Load,
    run_for: Duration,
) -> Res<Run> {
    match path {
        Path::Exact => measure(rk, threads, load, run_for),
        Path::Batched => measure(&Handles { lim: rk }, threads, load, run_for),
    }
}

fn run_pacer_batched(load: Load, threads: usize, run_for: Duration, s: f64) -> Res<Run> {
    let lim = pacer(load, s, false)?.lim;
    measure(&Handles { lim: &lim }, threads, load, run_for)
}

/// A sharded pacer of `shards` shards (`None`: one per thread), configured
/// as `pacer` configures the exact one.
fn run_pacer_sharded(
    load: Load,
    threads: usize,
    run_for: Duration,
    s: f64,
    shards: Option<usize>,
) -> Res<Run> {
    let lim = Pacer::builder(rate_of(load)?)
        .strictness(s)
        .verb(match load {
            Load::Unthrottled => Verb::Start,
            Load::Target(_) => Verb::Configure,
        })
        .build_sharded(shards.unwrap_or(threads))?;
    measure(&Handles { lim: &lim }, threads, load, run_for)
}

/// Sleeps for `wait` when it is long enough to sleep, otherwise yields.
#[inline]
fn back_off(wait: Duration) {
    if wait >= SLEEP_FROM {
        std::thread::sleep(wait);
    } else {
        std::thread::yield_now();
    }
}

/// A try-based peer's take: `try_once` until it passes, backing off for
/// the wait each refusal names.
#[inline(always)]
fn retry<E>(mut try_once: impl FnMut() -> Result<(), E>, wait_of: impl Fn(E) -> Duration) -> Taken {
    let mut waited = false;
    loop {
        match try_once() {
            Ok(()) => {
                return Taken {
                    sched_wait: None,
                    waited,
                }
            }
            Err(e) => {
                waited = true;
                back_off(wait_of(e));
            }
        }
    }
}

/// governor's direct limiter, `check()` retried until it passes.
struct Governor(governor::DefaultDirectRateLimiter);

impl Subject for Governor {
    type Local = ();
    fn local(&self) -> Res<()> {
        Ok(())
    }
    #[inline(always)]
    fn take(&self, _: &mut ()) -> Taken {
        use governor::clock::Clock as _;
        retry(
            || self.0.check(),
            |not_until| not_until.wait_time_from(self.0.clock().now()),
        )
    }
}

/// The floor to beat (issue 15): no limiter at all. Each thread keeps its
/// own absolute schedule at `rate / threads` and sleeps until each op's
/// time with `std::thread::sleep`; an op whose time has passed goes at
/// once. Unthrottled, it never sleeps.
struct SleepLoop {
    /// Nanoseconds between one thread's ops (0: unthrottled).
    period: f64,
    /// When the schedules start, set just before the threads are released.
    t0: OnceLock<Instant>,
}

impl Subject for SleepLoop {
    /// Ops this thread has taken.
    type Local = u64;
    fn local(&self) -> Res<u64> {
        Ok(0)
    }
    fn start(&self) {
        let _ = self.t0.set(Instant::now());
    }
    #[inline(always)]
    fn take(&self, k: &mut u64) -> Taken {
        if self.period == 0.0 {
            return Taken {
                sched_wait: None,
                waited: false,
            };
        }
        let t0 = *self.t0.get().expect("started before the threads");
        let due = t0 + Duration::from_nanos((*k as f64 * self.period) as u64);
        *k += 1;
        let now = Instant::now();
        let waited = due > now;
        if waited {
            std::thread::sleep(due - now);
        }
        Taken {
            sched_wait: Some(Instant::now().saturating_duration_since(due).as_nanos() as u64),
            waited,
        }
    }
}

/// The floor of an unthrottled grant: one read of the clock the
/// limiters read by default and one `fetch_add`, no limiter; what a Pacer
/// grant (one clock read, one atomic add) is measured against.
struct Floor {
    clock: DefaultClock,
    next: AtomicU64,
}

impl Subject for Floor {
    type Local = ();
    fn local(&self) -> Res<()> {
        Ok(())
    }
    #[inline(always)]
    fn take(&self, _: &mut ()) -> Taken {
        let now = self.clock.now_nanos();
        // Ordering: AcqRel, as the Pacer's add on its schedule.
        let slot = self.next.fetch_add(1, Ordering::AcqRel);
        Taken {
            sched_wait: Some(now.wrapping_sub(slot)),
            waited: false,
        }
    }
}

/// The floor on one thread, unthrottled.
fn run_floor(run_for: Duration) -> Res<Run> {
    let floor = Floor {
        clock: DefaultClock::new(),
        next: AtomicU64::new(0),
    };
    measure(&floor, 1, Load::Unthrottled, run_for)
}

fn run_sleep_loop(load: Load, threads: usize, run_for: Duration) -> Res<Run> {
    let period = match load {
        Load::Unthrottled => 0.0,
        Load::Target(r) => 1e9 * threads as f64 / r,
    };
    let s = SleepLoop {
        period,
        t0: OnceLock::new(),
    };
    measure(&s, threads, load, run_for)
}

/// ratelimit's token bucket, `try_wait()` retried until it passes.
struct Ratelimit(ratelimit::Ratelimiter);

impl Subject for Ratelimit {
    type Local = ();
    fn local(&self) -> Res<()> {
        Ok(())
    }
    #[inline(always)]
    fn take(&self, _: &mut ()) -> Taken {
        retry(|| self.0.try_wait(), |wait| wait)
    }
}

/// leaky-bucket: `acquire_one().await` on a per-thread current-thread
/// runtime when throttled, `try_acquire(1)` when not.
struct LeakyBucket {
    lim: leaky_bucket::RateLimiter,
    throttled: bool,
}

impl Subject for LeakyBucket {
    type Local = tokio::runtime::Runtime;
    fn local(&self) -> Res<tokio::runtime::Runtime> {
        Ok(tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?)
    }
    #[inline(always)]
    fn take(&self, rt: &mut tokio::runtime::Runtime) -> Taken {
        let waited = if self.throttled {
            rt.block_on(self.lim.acquire_one());
            false
        } else if self.lim.try_acquire(1) {
            false
        } else {
            rt.block_on(self.lim.acquire_one());
            true
        };
        Taken {
            sched_wait: None,
            waited,
        }
    }
}

/// One run of one cell.
#[derive(Debug, Clone)]
struct Run {
    permits: u64,
    window: Duration,
    cpu: Duration,
    /// Permits not granted at once.
    waited: u64,
    /// Time in the call per permit (throttled only).
    call: Option<Histogram<u64>>,
    /// `Grant::wait_nanos()` per permit (throttled ratekeeper only).
    sched: Option<Histogram<u64>>,
}

impl Run {
    fn rate(&self) -> f64 {
        self.permits as f64 / self.window.as_secs_f64()
    }
    fn cpu_per_permit(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.permits.max(1) as f64
    }
}

fn histogram() -> Res<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, 100_000_000_000, 2)?)
}

/// What one thread brings back.
struct ThreadResult {
    permits: u64,
    waited: u64,
    end: Instant,
    call: Histogram<u64>,
    sched: Histogram<u64>,
    has_sched: bool,
}

/// One thread's loop: unthrottled, batches of permits between clock reads;
/// throttled, each permit timed and counted only if granted in the window.
fn thread_loop<S: Subject>(
    s: &S,
    local: &mut S::Local,
    throttled: bool,
    deadline: Instant,
    mut out: ThreadResult,
) -> ThreadResult {
    if !throttled {
        loop {
            for _ in 0..BATCH {
                let t = black_box(s.take(local));
                out.waited += u64::from(t.waited);
            }
            out.permits += BATCH;
            out.end = Instant::now();
            if out.end >= deadline {
                return out;
            }
        }
    }
    let q_deadline = quanta::Instant::now() + deadline.saturating_duration_since(Instant::now());
    loop {
        let t0 = quanta::Instant::now();
        let t = black_box(s.take(local));
        let t1 = quanta::Instant::now();
        if t1 >= q_deadline {
            out.end = Instant::now();
            return out;
        }
        out.permits += 1;
        out.waited += u64::from(t.waited);
        out.call.saturating_record((t1 - t0).as_nanos() as u64);
        if let Some(w) = t.sched_wait {
            out.has_sched = true;
            out.sched.saturating_record(w);
        }
    }
}

/// `threads` threads take permits from `s` for `run_for`, released together.
fn measure<S: Subject>(s: &S, threads: usize, load: Load, run_for: Duration) -> Res<Run> {
    let throttled = matches!(load, Load::Target(_));
    let barrier = Barrier::new(threads + 1);
    let deadline = OnceLock::<Instant>::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (barrier, deadline) = (&barrier, &deadline);
                scope.spawn(move || -> Result<ThreadResult, String> {
                    let local = s.local().map_err(|e| e.to_string());
                    let out = ThreadResult {
                        permits: 0,
                        waited: 0,
                        end: Instant::now(),
                        call: histogram().map_err(|e| e.to_string())?,
                        sched: histogram().map_err(|e| e.to_string())?,
                        has_sched: false,
                    };
                    barrier.wait();
                    let mut local = local?;
                    let deadline = *deadline.get().expect("set before the barrier opens");
                    Ok(thread_loop(s, &mut local, throttled, deadline, out))
                })
            })
            .collect();
        s.start();
        let cpu0 = ProcessTime::now();
        let t0 = Instant::now();
        deadline.set(t0 + run_for).expect("set once");
        barrier.wait();
        let mut run = Run {
            permits: 0,
            window: run_for,
            cpu: Duration::ZERO,
            waited: 0,
            call: None,
            sched: None,
        };
        let mut last_end = t0;
        for h in handles {
            let r = h.join().expect("worker panicked")?;
            run.permits += r.permits;
            run.waited += r.waited;
            last_end = last_end.max(r.end);
            if throttled {
                run.call.get_or_insert(histogram()?).add(&r.call)?;
                if r.has_sched {
                    run.sched.get_or_insert(histogram()?).add(&r.sched)?;
                }
            }
        }
        run.cpu = cpu0.elapsed();
        if !throttled {
            run.window = last_end - t0;
        }
        Ok(run)
    })
}

// ---------------------------------------------------------------------------
// The limiters. Adding one is one `Entry` in `ENTRIES` plus, where its
// construction is more than a line, a builder function here.
// ---------------------------------------------------------------------------

fn rate_of(load: Load) -> Res<Rate> {
    Ok(Rate::new(match load {
        Load::Unthrottled => UNTHROTTLED_RATE,
        Load::Target(r) => r,
    })?)
}

/// A pacer: started at once when unthrottled, idle until `start` otherwise.
fn pacer(load: Load, strictness: f64, cached: bool) -> Res<Rk<Pacer>> {
    let lim = Pacer::builder(rate_of(load)?)
        .strictness(strictness)
        .cached_clock(cached)
        .verb(match load {
            Load::Unthrottled => Verb::Start,
            Load::Target(_) => Verb::Configure,
        })
        .build()?;
    Ok(Rk {
        lim,
        start: |p: &Pacer| {
            if !p.is_started() {
                p.restart()
            }
        },
    })
}

fn run_pacer(load: Load, threads: usize, run_for: Duration, s: f64, cached: bool) -> Res<Run> {
    measure(&pacer(load, s, cached)?, threads, load, run_for)
}

/// A token pool, burst ratio 1.1 (its default); checks afterwards that it did
/// not fall back to another filling.
fn run_pool(
    load: Load,
    threads: usize,
    run_for: Duration,
    filling: Filling,
    path: Path,
) -> Res<Run> {
    let lim = TokenPool::builder(rate_of(load)?)
        .burst_ratio(1.1)
        .filling(filling)
        .verb(Verb::Configure)
        .build()?;
    let rk = Rk {
        lim,
        start: |p: &TokenPool| p.start(),
    };
    let run = measure_rk(&rk, path, threads, load, run_for)?;
    if rk.lim.filling() != filling {
        return Err(format!("the pool fell back to {} from {filling}", rk.lim.filling()).into());
    }
    Ok(run)
}

/// Guava's whole microseconds (the smooth limiters' default).
const MICROS: Resolution = Resolution::Micros;
/// The smooth limiters' nanosecond mode.
const NANOS: Resolution = Resolution::Nanos;

/// The clock a smooth entry's limiter reads.
#[derive(Debug, Clone, Copy)]
enum SmoothClock {
    /// `build()`: `DefaultClock` (the TSC where the kernel keeps its clock
    /// on it).
    Default,
    /// `build_with_clock(MonotonicClock::new())`: `std::time::Instant`.
    Instant,
}

fn run_smooth_bursty(
    load: Load,
    threads: usize,
    run_for: Duration,
    path: Path,
    clock: SmoothClock,
    res: Resolution,
) -> Res<Run> {
    let rate = match load {
        Load::Unthrottled => f64::INFINITY,
        Load::Target(r) => r,
    };
    let builder = SmoothBursty::builder(rate).resolution(res);
    match clock {
        SmoothClock::Default => {
            let lim = builder.build()?;
            measure_rk(&Rk { lim, start: |_| {} }, path, threads, load, run_for)
        }
        SmoothClock::Instant => {
            let lim = builder.build_with_clock(MonotonicClock::new())?;
            measure_rk(&Rk { lim, start: |_| {} }, path, threads, load, run_for)
        }
    }
}

fn run_smooth_warming_up(
    load: Load,
    threads: usize,
    run_for: Duration,
    path: Path,
    res: Resolution,
) -> Res<Run> {
    const WARMUP: Duration = Duration::from_millis(10);
    let rate = match load {
        Load::Unthrottled => f64::INFINITY,
        Load::Target(r) => r,
    };
    let rk = Rk {
        lim: SmoothWarmingUp::builder(rate)
            .warmup(WARMUP)
            .cold_factor(3.0)
            .resolution(res)
            .build()?,
        // Primed past the cold start: the window measures the stable rate.
        start: |l: &SmoothWarmingUp| {
            let end = Instant::now() + 2 * WARMUP;
            while Instant::now() < end {
                for _ in 0..64 {
                    black_box(l.acquire());
                }
            }
        },
    };
    measure_rk(&rk, path, threads, load, run_for)
}

/// `(permits per period, period)` of the Resilience4j-style limiters.
fn refill_period(load: Load) -> (i64, Duration) {
    match load {
        Load::Unthrottled => (1_000_000_000, Duration::from_secs(1)),
        Load::Target(r) => (
            ((r * 1e-4).round() as i64).max(1),
            Duration::from_micros(100),
        ),
    }
}

fn run_refill(load: Load, threads: usize, run_for: Duration, path: Path) -> Res<Run> {
    let (limit, period) = refill_period(load);
    let config = ratekeeper_resilience4j::compat::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period(period)
        .timeout(Duration::ZERO)
        .build()?;
    let rk = Rk {
        lim: RefillLimiter::new("bench", config),
        start: |_| {},
    };
    measure_rk(&rk, path, threads, load, run_for)
}

fn run_cycle(load: Load, threads: usize, run_for: Duration, path: Path) -> Res<Run> {
    let (limit, period) = refill_period(load);
    let config: CycleConfig = ratekeeper_resilience4j::compat::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period(period)
        .timeout(Duration::ZERO)
        .build_cycle()?;
    let rk = Rk {
        lim: CycleLimiter::new("bench", config),
        start: |_| {},
    };
    measure_rk(&rk, path, threads, load, run_for)
}

fn nonzero(n: f64) -> Res<NonZeroU32> {
    NonZeroU32::new(n.round().clamp(1.0, f64::from(u32::MAX)) as u32).ok_or_else(|| "zero".into())
}

fn run_governor(load: Load, threads: usize, run_for: Duration) -> Res<Run> {
    use governor::Quota;
    let quota = match load {
        Load::Unthrottled => Quota::per_second(NonZeroU32::MAX),
        Load::Target(r) => Quota::with_period(Duration::try_from_secs_f64(1.0 / r)?)
            .ok_or("zero period")?
            .allow_burst(nonzero(r * 10e-6)?),
    };
    measure(
        &Governor(governor::RateLimiter::direct(quota)),
        threads,
        load,
        run_for,
    )
}

fn run_ratelimit(load: Load, threads: usize, run_for: Duration) -> Res<Run> {
    let lim = match load {
        Load::Unthrottled => ratelimit::Ratelimiter::builder(1 << 40, Duration::from_millis(1))
            .max_tokens(1 << 60)
            .initial_available(1 << 60)
            .build(),
        Load::Target(r) => {
            let per_us = ((r * 1e-6).round() as u64).max(1);
            ratelimit::Ratelimiter::builder(per_us, Duration::from_micros(1))
                .max_tokens(((r * 10e-6).round() as u64).max(per_us))
                .initial_available(0)
                .build()
        }
    }
    .map_err(|e| format!("ratelimit: {e:?}"))?;
    measure(&Ratelimit(lim), threads, load, run_for)
}

fn run_leaky_bucket(load: Load, threads: usize, run_for: Duration, fair: bool) -> Res<Run> {
    // Far more than a run can take (1e12 permits), far from its overflow.
    const PLENTY: usize = 1 << 40;
    let mut b = leaky_bucket::RateLimiter::builder();
    b.fair(fair);
    match load {
        Load::Unthrottled => {
            b.initial(PLENTY).max(PLENTY).refill(PLENTY);
        }
        Load::Target(r) => {
            // Its default maximum (10 refills) keeps the refills that a late
            // timer wake-up would otherwise lose.
            let per_ms = ((r * 1e-3).round() as usize).max(1);
            b.initial(0)
                .refill(per_ms)
                .interval(Duration::from_millis(1));
        }
    }
    let lb = LeakyBucket {
        lim: b.build(),
        throttled: matches!(load, Load::Target(_)),
    };
    measure(&lb, threads, load, run_for)
}

/// One limiter configuration of the report.
struct Entry {
    /// Its name on the command line.
    name: &'static str,
    /// Its row label.
    label: &'static str,
    /// Counts for the target "exact mode ≥ 2× governor's aggregate at 2
    /// threads".
    exact: bool,
    /// Counts for the target "batched mode ≥ 100 M grants/s on 2 threads,
    /// rate error ≤ 0.1 %".
    batched: bool,
    run: fn(Load, usize, Duration) -> Res<Run>,
}

const ENTRIES: &[Entry] = &[
    Entry {
        name: "pacer-average-0",
        label: "Pacer, strictness 0 (average)",
        exact: true,
        batched: false,
        run: |l, n, d| run_pacer(l, n, d, 0.0, false),
    },
    Entry {
        name: "pacer-burst-1.1",
        label: "Pacer, strictness 1.1 (default)",
        exact: true,
        batched: false,
        run: |l, n, d| run_pacer(l, n, d, 1.1, false),
    },
    Entry {
        name: "pacer-strict-1.0",
        label: "Pacer, strictness 1.0 (strict)",
        exact: true,
        batched: false,
        run: |l, n, d| run_pacer(l, n, d, 1.0, false),
    },
    Entry {
        name: "pacer-average-0-cached",
        label: "Pacer, strictness 0, cached clock (opt-in)",
        exact: true,
        batched: false,
        run: |l, n, d| run_pacer(l, n, d, 0.0, true),
    },
    // The batched Pacer modes: per-thread leasing handles, and shards (one
    // per thread, or 2) with work stealing.
    Entry {
        name: "pacer-average-0-batched",
        label: "Pacer, strictness 0, batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_pacer_batched(l, n, d, 0.0),
    },
    Entry {
        name: "pacer-compensate-0.5-batched",
        label: "Pacer, strictness 0.5, batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_pacer_batched(l, n, d, 0.5),
    },
    Entry {
        name: "pacer-average-0-sharded",
        label: "Pacer, strictness 0, sharded (N = threads)",
        exact: false,
        batched: true,
        run: |l, n, d| run_pacer_sharded(l, n, d, 0.0, None),
    },
    Entry {
        name: "pacer-average-0-sharded-2",
        label: "Pacer, strictness 0, sharded (N = 2)",
        exact: false,
        batched: true,
        run: |l, n, d| run_pacer_sharded(l, n, d, 0.0, Some(2)),
    },
    Entry {
        name: "pacer-burst-1.1-sharded",
        label: "Pacer, strictness 1.1, sharded (N = threads)",
        exact: false,
        batched: true,
        run: |l, n, d| run_pacer_sharded(l, n, d, 1.1, None),
    },
    Entry {
        name: "pacer-burst-1.1-sharded-2",
        label: "Pacer, strictness 1.1, sharded (N = 2)",
        exact: false,
        batched: true,
        run: |l, n, d| run_pacer_sharded(l, n, d, 1.1, Some(2)),
    },
    // Every other ratekeeper limiter, each exactly and, configured the same,
    // through one `BatchHandle` per thread.
    Entry {
        name: "pool-inline",
        label: "TokenPool, inline filling",
        exact: false,
        batched: false,
        run: |l, n, d| run_pool(l, n, d, Filling::Inline, Path::Exact),
    },
    Entry {
        name: "pool-inline-batched",
        label: "TokenPool, inline filling, batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_pool(l, n, d, Filling::Inline, Path::Batched),
    },
    Entry {
        name: "pool-thread-1ms",
        label: "TokenPool, filler thread 1 ms",
        exact: false,
        batched: false,
        run: |l, n, d| {
            run_pool(
                l,
                n,
                d,
                Filling::Thread(Duration::from_millis(1)),
                Path::Exact,
            )
        },
    },
    Entry {
        name: "pool-thread-1ms-batched",
        label: "TokenPool, filler thread 1 ms, batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| {
            run_pool(
                l,
                n,
                d,
                Filling::Thread(Duration::from_millis(1)),
                Path::Batched,
            )
        },
    },
    Entry {
        name: "smooth-bursty",
        label: "SmoothBursty (1 s burst)",
        exact: false,
        batched: false,
        run: |l, n, d| run_smooth_bursty(l, n, d, Path::Exact, SmoothClock::Default, MICROS),
    },
    Entry {
        name: "smooth-bursty-instant",
        label: "SmoothBursty (1 s burst), Instant clock",
        exact: false,
        batched: false,
        run: |l, n, d| run_smooth_bursty(l, n, d, Path::Exact, SmoothClock::Instant, MICROS),
    },
    Entry {
        name: "smooth-bursty-batched",
        label: "SmoothBursty (1 s burst), batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_smooth_bursty(l, n, d, Path::Batched, SmoothClock::Default, MICROS),
    },
    Entry {
        name: "smooth-warming-up",
        label: "SmoothWarmingUp (10 ms warm-up)",
        exact: false,
        batched: false,
        run: |l, n, d| run_smooth_warming_up(l, n, d, Path::Exact, MICROS),
    },
    Entry {
        name: "smooth-warming-up-batched",
        label: "SmoothWarmingUp (10 ms warm-up), batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_smooth_warming_up(l, n, d, Path::Batched, MICROS),
    },
    Entry {
        name: "smooth-bursty-nanos",
        label: "SmoothBursty (1 s burst), nanoseconds",
        exact: false,
        batched: false,
        run: |l, n, d| run_smooth_bursty(l, n, d, Path::Exact, SmoothClock::Default, NANOS),
    },
    Entry {
        name: "smooth-bursty-nanos-batched",
        label: "SmoothBursty (1 s burst), nanoseconds, batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_smooth_bursty(l, n, d, Path::Batched, SmoothClock::Default, NANOS),
    },
    Entry {
        name: "smooth-warming-up-nanos",
        label: "SmoothWarmingUp (10 ms warm-up), nanoseconds",
        exact: false,
        batched: false,
        run: |l, n, d| run_smooth_warming_up(l, n, d, Path::Exact, NANOS),
    },
    Entry {
        name: "smooth-warming-up-nanos-batched",
        label: "SmoothWarmingUp (10 ms warm-up), nanoseconds, batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_smooth_warming_up(l, n, d, Path::Batched, NANOS),
    },
    Entry {
        name: "refill",
        label: "RefillLimiter (100 µs period)",
        exact: false,
        batched: false,
        run: |l, n, d| run_refill(l, n, d, Path::Exact),
    },
    Entry {
        name: "refill-batched",
        label: "RefillLimiter (100 µs period), batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_refill(l, n, d, Path::Batched),
    },
    Entry {
        name: "cycle",
        label: "CycleLimiter (100 µs cycle)",
        exact: false,
        batched: false,
        run: |l, n, d| run_cycle(l, n, d, Path::Exact),
    },
    Entry {
        name: "cycle-batched",
        label: "CycleLimiter (100 µs cycle), batched handles",
        exact: false,
        batched: true,
        run: |l, n, d| run_cycle(l, n, d, Path::Batched),
    },
    Entry {
        name: "governor",
        label: "governor (check + retry)",
        exact: false,
        batched: false,
        run: run_governor,
    },
    Entry {
        name: "sleep-loop",
        label: "no limiter: per-thread absolute schedule, thread::sleep",
        exact: false,
        batched: false,
        run: run_sleep_loop,
    },
    Entry {
        name: "ratelimit",
        label: "ratelimit (try_wait + retry)",
        exact: false,
        batched: false,
        run: run_ratelimit,
    },
    Entry {
        name: "leaky-bucket",
        label: "leaky-bucket, fair (acquire_one)",
        exact: false,
        batched: false,
        run: |l, n, d| run_leaky_bucket(l, n, d, true),
    },
];

// ---------------------------------------------------------------------------
// Arguments, statistics, the report.
// ---------------------------------------------------------------------------

struct Args {
    secs: f64,
    runs: usize,
    target: f64,
    threads: Vec<usize>,
    entries: Vec<&'static Entry>,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        secs: 1.0,
        runs: 3,
        target: 1e7,
        threads: vec![1, 2, 4, 8],
        entries: ENTRIES.iter().collect(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--secs" => args.secs = value()?.parse()?,
            "--runs" => args.runs = value()?.parse()?,
            "--target" => args.target = value()?.parse()?,
            "--quick" => {
                args.secs = 0.3;
                args.runs = 1;
            }
            "--threads" => {
                args.threads = value()?
                    .split(',')
                    .map(|x| x.trim().parse::<usize>())
                    .collect::<Result<_, _>>()?
            }
            "--limiters" => {
                args.entries = value()?
                    .split(',')
                    .map(|n| {
                        ENTRIES
                            .iter()
                            .find(|e| e.name == n.trim())
                            .ok_or_else(|| format!("unknown limiter {n}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "-h" | "--help" => {
                println!(
                    "bench_report [--quick] [--secs S] [--runs N] [--target OPS] \
                     [--threads 1,2,4,8] [--limiters NAME,...]\nlimiters: {}",
                    ENTRIES
                        .iter()
                        .map(|e| e.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !args.secs.is_finite() || args.secs <= 0.0 || args.runs == 0 {
        return Err("--secs must be > 0 and --runs >= 1".into());
    }
    if args.threads.is_empty() || args.threads.contains(&0) {
        return Err("--threads: thread counts must be at least 1".into());
    }
    Rate::new(args.target)?;
    Ok(args)
}

/// Median, min and max over the runs.
#[derive(Debug, Clone, Copy)]
struct Stat {
    med: f64,
    lo: f64,
    hi: f64,
}

fn stat(v: Vec<f64>) -> Stat {
    let (med, lo, hi) = spread(v);
    Stat { med, lo, hi }
}

fn over(runs: &[Run], f: impl Fn(&Run) -> f64) -> Stat {
    stat(runs.iter().map(f).collect())
}

/// `12.34 (11.90–12.80)`, or just the value for one run.
fn show(s: Stat, f: impl Fn(f64) -> String) -> String {
    if s.lo == s.hi {
        f(s.med)
    } else {
        format!("{} ({}–{})", f(s.med), f(s.lo), f(s.hi))
    }
}

fn millions(x: f64) -> String {
    format!("{:.2}", x / 1e6)
}

/// Nanoseconds, as ns below 10 µs and µs above.
fn nanos(x: f64) -> String {
    if x < 10_000.0 {
        format!("{x:.0} ns")
    } else {
        format!("{:.1} µs", x / 1e3)
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn cpu_model() -> String {
    read("/proc/cpuinfo")
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn loadavg() -> String {
    read("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

fn rustc_version() -> String {
    std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// `results[entry][threads]`: (unthrottled runs, throttled runs).
type Results = Vec<Vec<(Vec<Run>, Vec<Run>)>>;

fn main() -> Res<()> {
    let args = parse_args()?;
    let run_for = Duration::try_from_secs_f64(args.secs)?;
    let unthrottled_for = run_for / 2;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let command = std::iter::once(
        "cargo run --release -p ratekeeper-bench --example bench_report --".to_string(),
    )
    .chain(std::env::args().skip(1))
    .collect::<Vec<_>>()
    .join(" ");
    let cells = args.entries.len() * args.threads.len();
    eprintln!(
        "{cells} cells x {} runs x {:.2} s: about {:.0} s",
        args.runs,
        args.secs * 1.5,
        cells as f64 * args.runs as f64 * (args.secs * 1.5 + 0.03)
    );
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; measure with --release");
    }
    // quanta calibrates its clock on first use: not inside a measurement.
    black_box(quanta::Instant::now());
    let load_before = loadavg();
    let started = Instant::now();

    // A limiter that never wakes its waiters would hang the report: give up
    // after a minute without progress.
    let progress = Arc::new(AtomicU64::new(0));
    {
        let progress = Arc::clone(&progress);
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            loop {
                std::thread::sleep(Duration::from_secs(60) + 3 * run_for);
                let now = progress.load(Ordering::Relaxed);
                if now == last {
                    eprintln!("error: no measurement finished for a minute; giving up");
                    std::process::exit(2);
                }
                last = now;
            }
        });
    }
    let mut results: Results =
        vec![vec![(Vec::new(), Vec::new()); args.threads.len()]; args.entries.len()];
    let mut floor = Vec::new();
    for r in 0..args.runs {
        let f = run_floor(unthrottled_for)?;
        eprintln!(
            "run {} floor (1 thread, clock read + fetch_add) {:>8.2} M/s",
            r + 1,
            f.rate() / 1e6
        );
        floor.push(f);
        for (ni, &threads) in args.threads.iter().enumerate() {
            for (ei, e) in args.entries.iter().enumerate() {
                let u = (e.run)(Load::Unthrottled, threads, unthrottled_for)
                    .map_err(|err| format!("{} unthrottled, {threads} threads: {err}", e.name))?;
                let t = (e.run)(Load::Target(args.target), threads, run_for)
                    .map_err(|err| format!("{} throttled, {threads} threads: {err}", e.name))?;
                eprintln!(
                    "run {} threads {} {:<26} unthrottled {:>8.2} M/s (waited {}) | \
                     throttled {:>7.3} M/s err {:+.4} % cpu {:>6.1} ns/permit p99 call {}",
                    r + 1,
                    threads,
                    e.name,
                    u.rate() / 1e6,
                    u.waited,
                    t.rate() / 1e6,
                    (t.rate() / args.target - 1.0) * 100.0,
                    t.cpu_per_permit(),
                    t.call.as_ref().map_or(0, |h| h.value_at_quantile(0.99))
                );
                progress.fetch_add(1, Ordering::Relaxed);
                results[ei][ni].0.push(u);
                results[ei][ni].1.push(t);
            }
        }
    }
    let elapsed = started.elapsed();
    let load_after = loadavg();

    report(
        &args,
        &results,
        &floor,
        &command,
        cores,
        elapsed,
        &load_before,
        &load_after,
    );
    Ok(())
}

#[allow(clippy::too_many_arguments)] // the run's parts, each printed once
fn report(
    args: &Args,
    results: &Results,
    floor: &[Run],
    command: &str,
    cores: usize,
    elapsed: Duration,
    load_before: &str,
    load_after: &str,
) {
    let thread_cols: Vec<String> = args.threads.iter().map(|n| format!("{n} thr")).collect();
    println!();
    println!("### Machine and command");
    println!();
    println!("| | |");
    println!("|---|---|");
    println!("| command | `{command}` |");
    println!(
        "| cores (`available_parallelism`) | {cores}{} |",
        if args.threads.iter().any(|&n| n > cores) {
            format!(
                "; thread counts above {cores} oversubscribe the cores: their threads take \
                 turns, so their figures measure time-slicing as much as the limiter"
            )
        } else {
            String::new()
        }
    );
    println!("| CPU (`/proc/cpuinfo`) | {} |", cpu_model());
    println!(
        "| kernel | {} |",
        read("/proc/sys/kernel/osrelease")
            .map_or_else(|| "unknown".to_string(), |s| s.trim().to_string())
    );
    println!("| toolchain | {} |", rustc_version());
    println!("| load average (1/5/15 min) before / after | {load_before} / {load_after} |");
    println!(
        "| runs | {} per cell, interleaved; median (min–max); unthrottled {:.2} s, throttled \
         {:.2} s per run; whole measurement {:.0} s |",
        args.runs,
        args.secs / 2.0,
        args.secs,
        elapsed.as_secs_f64()
    );

    // Unthrottled.
    println!();
    println!("### Unthrottled: aggregate grants/s (millions)");
    println!();
    println!(
        "| limiter | {} | grants not at once | more threads ≥ 1 thread |",
        thread_cols.join(" | ")
    );
    println!("|---|{}---:|:---:|", "---:|".repeat(args.threads.len()));
    let one = args.threads.iter().position(|&n| n == 1);
    let mut scale_unthrottled = Vec::new();
    for (ei, e) in args.entries.iter().enumerate() {
        let stats: Vec<Stat> = results[ei]
            .iter()
            .map(|(u, _)| over(u, Run::rate))
            .collect();
        let waited: u64 = results[ei]
            .iter()
            .flat_map(|(u, _)| u.iter().map(|r| r.waited))
            .sum();
        let verdict = scaling(&args.threads, &stats, one, 0.0);
        scale_unthrottled.push((e.name, verdict.clone()));
        println!(
            "| {} | {} | {} | {} |",
            e.label,
            stats
                .iter()
                .map(|&s| show(s, millions))
                .collect::<Vec<_>>()
                .join(" | "),
            waited,
            verdict
        );
    }

    print_floor(args, results, floor, one);

    // Throttled.
    println!();
    println!(
        "### Under a {:.0e} ops/s target: achieved, error, CPU and waits",
        args.target
    );
    println!();
    println!(
        "| limiter | threads | achieved (M/s) | rate error % | CPU ns/permit | call p50 | \
         call p99 | grant wait p99 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (ei, e) in args.entries.iter().enumerate() {
        for (ni, &threads) in args.threads.iter().enumerate() {
            let t = &results[ei][ni].1;
            let q = |h: &Option<Histogram<u64>>, p: f64| {
                h.as_ref().map(|h| h.value_at_quantile(p) as f64)
            };
            let p99: Vec<f64> = t.iter().filter_map(|r| q(&r.call, 0.99)).collect();
            let p50: Vec<f64> = t.iter().filter_map(|r| q(&r.call, 0.50)).collect();
            let sched: Vec<f64> = t.iter().filter_map(|r| q(&r.sched, 0.99)).collect();
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                e.label,
                threads,
                show(over(t, Run::rate), millions),
                show(over(t, |r| (r.rate() / args.target - 1.0) * 100.0), |x| {
                    format!("{x:+.3}")
                }),
                show(over(t, Run::cpu_per_permit), |x| format!("{x:.0}")),
                show(stat(p50), nanos),
                show(stat(p99), nanos),
                if sched.is_empty() {
                    "–".to_string()
                } else {
                    show(stat(sched), nanos)
                }
            );
        }
    }

    // Targets.
    print_issue15_targets(args, results, one);
    println!();
    println!("### Issue 8 targets (same run)");
    println!();
    let gov = args.entries.iter().position(|e| e.name == "governor");
    let two = args.threads.iter().position(|&n| n == 2);
    match (gov, two) {
        (Some(g), Some(two)) => {
            println!(
                "Exact mode ≥ 2× governor's aggregate grants/s at 2 threads (unthrottled; the \
                 ratio is taken per run, then the median):"
            );
            println!();
            let mut any = false;
            for (ei, e) in args.entries.iter().enumerate().filter(|(_, e)| e.exact) {
                any = true;
                let ratios = stat(
                    results[ei][two]
                        .0
                        .iter()
                        .zip(&results[g][two].0)
                        .map(|(a, b)| a.rate() / b.rate())
                        .collect(),
                );
                println!(
                    "* {}: {}× — {}",
                    e.label,
                    show(ratios, |x| format!("{x:.2}")),
                    if ratios.med >= 2.0 { "PASS" } else { "MISS" }
                );
            }
            if !any {
                println!("* no exact-mode limiter selected");
            }
        }
        _ => println!("Exact mode vs governor: needs `governor` and 2 threads in the run."),
    }
    println!();
    let batched: Vec<_> = args
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.batched)
        .collect();
    if batched.is_empty() {
        println!(
            "Batched mode ≥ 100 M grants/s at 2 threads with rate error ≤ 0.1 %: no batched \
             limiter in this run's table."
        );
    } else if let Some(two) = two {
        println!("Batched mode ≥ 100 M grants/s at 2 threads with rate error ≤ 0.1 %:");
        println!();
        for (ei, e) in batched {
            let (u, t) = &results[ei][two];
            let rate = over(u, Run::rate);
            let err = over(t, |r| ((r.rate() / args.target - 1.0) * 100.0).abs());
            println!(
                "* {}: {} M/s, |rate error| {} % — {}",
                e.label,
                show(rate, millions),
                show(err, |x| format!("{x:.3}")),
                if rate.med >= 1e8 && err.hi <= 0.1 {
                    "PASS"
                } else {
                    "MISS"
                }
            );
        }
    }
    println!();
    println!("Under the target, achieved rate with more threads ≥ its 1-thread figure less 0.1 %:");
    println!();
    let mut scale_throttled = Vec::new();
    for (ei, e) in args.entries.iter().enumerate() {
        let stats: Vec<Stat> = results[ei]
            .iter()
            .map(|(_, t)| over(t, Run::rate))
            .collect();
        scale_throttled.push((e.name, scaling(&args.threads, &stats, one, 0.001)));
    }
    summarize(&scale_throttled);
    println!();
    println!(
        "No configuration slower than its 1-thread figure when threads are added (unthrottled \
         grants/s, medians; the last column of the first table):"
    );
    println!();
    summarize(&scale_unthrottled);
}

/// The 1-thread floor beside the unthrottled table, and the hot-path targets
/// for the entries of this run that they name (ratios per run, then the
/// median).
fn print_floor(args: &Args, results: &Results, floor: &[Run], one: Option<usize>) {
    let find = |name: &str| args.entries.iter().position(|e| e.name == name);
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    println!();
    println!(
        "Floor, 1 thread, no limiter: one `DefaultClock` read + one `fetch_add` a grant: {} M/s",
        show(over(floor, Run::rate), millions)
    );
    let ratio =
        |a: &[Run], b: &[Run]| stat(a.iter().zip(b).map(|(a, b)| a.rate() / b.rate()).collect());
    if let (Some(d), Some(one)) = (find("pacer-burst-1.1"), one) {
        let r = ratio(floor, &results[d][one].0);
        println!(
            "* pacer-burst-1.1 at 1 thread within 1.3× of the floor (floor / pacer): {}× — {}",
            show(r, |x| format!("{x:.2}")),
            verdict(r.med <= 1.3)
        );
    }
    let Some(g) = find("governor") else {
        return;
    };
    for (name, n, factor) in [
        ("pacer-burst-1.1", 1, 1.0),
        ("pacer-burst-1.1", 2, 1.5),
        ("pacer-strict-1.0", 1, 1.0),
        ("pacer-strict-1.0", 2, 1.0),
    ] {
        let (Some(e), Some(ti)) = (find(name), args.threads.iter().position(|&t| t == n)) else {
            continue;
        };
        let r = ratio(&results[e][ti].0, &results[g][ti].0);
        println!(
            "* {name} ≥ {factor}× governor at {n} thread(s), unthrottled: {}× — {}",
            show(r, |x| format!("{x:.2}")),
            verdict(r.med >= factor)
        );
    }
}

/// Issue 15's targets, for the entries of this run that they name.
fn print_issue15_targets(args: &Args, results: &[Vec<(Vec<Run>, Vec<Run>)>], one: Option<usize>) {
    let find = |name: &str| args.entries.iter().position(|e| e.name == name);
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    println!();
    println!("### Issue 15 targets (same run)");
    println!();
    if let Some(d) = find("pacer-burst-1.1") {
        println!(
            "The default Pacer (strictness 1.1) holds the {} ops/s target within 0.1 % (median \
             of the runs):",
            args.target
        );
        println!();
        for (ti, n) in args.threads.iter().enumerate() {
            let err = over(&results[d][ti].1, |r| {
                (r.rate() / args.target - 1.0) * 100.0
            });
            println!(
                "* {n} threads: {} % — {}",
                show(err, |x| format!("{x:+.3}")),
                verdict(err.med.abs() <= 0.1)
            );
        }
        println!();
    }
    if let Some(g) = find("governor") {
        for (name, factor, only_two) in [
            ("pacer-burst-1.1", 1.5, false),
            ("pacer-strict-1.0", 1.2, true),
        ] {
            let Some(e) = find(name) else { continue };
            println!(
                "{} ≥ {factor}× governor's unthrottled grants/s{} (ratio per run, then the median):",
                args.entries[e].label,
                if only_two { " at 2 threads" } else { " at every thread count" }
            );
            println!();
            for (ti, n) in args.threads.iter().enumerate() {
                if only_two && *n != 2 {
                    continue;
                }
                let ratios = stat(
                    results[e][ti]
                        .0
                        .iter()
                        .zip(&results[g][ti].0)
                        .map(|(a, b)| a.rate() / b.rate())
                        .collect(),
                );
                println!(
                    "* {n} threads: {}× — {}",
                    show(ratios, |x| format!("{x:.2}")),
                    verdict(ratios.med >= factor)
                );
            }
            println!();
        }
    }
    let Some(one) = one else {
        return;
    };
    println!(
        "CPU per permit under the target with N threads within 2× its 1-thread figure (medians):"
    );
    println!();
    for (ei, e) in args.entries.iter().enumerate() {
        let base = over(&results[ei][one].1, Run::cpu_per_permit).med;
        let worst = args
            .threads
            .iter()
            .enumerate()
            .map(|(ti, _)| over(&results[ei][ti].1, Run::cpu_per_permit).med / base)
            .fold(0.0, f64::max);
        println!(
            "* {}: {base:.0} ns at 1 thread, at most {worst:.2}× that — {}",
            e.name,
            verdict(worst <= 2.0)
        );
    }
}

/// Prints how many configurations PASS, and each MISS.
fn summarize(verdicts: &[(&str, String)]) {
    let pass = verdicts.iter().filter(|(_, v)| v == "PASS").count();
    println!("* {pass} of {} configurations PASS", verdicts.len());
    for (name, v) in verdicts.iter().filter(|(_, v)| v != "PASS") {
        println!("* {name}: {v}");
    }
}

/// PASS when every thread count's median is at least the 1-thread median
/// (less `slack`, a fraction); MISS with the thread counts below it.
fn scaling(threads: &[usize], stats: &[Stat], one: Option<usize>, slack: f64) -> String {
    let Some(one) = one else {
        return "– (no 1-thread point)".into();
    };
    let base = stats[one].med * (1.0 - slack);
    let below: Vec<String> = threads
        .iter()
        .zip(stats)
        .filter(|(&n, s)| n > 1 && s.med < base)
        .map(|(n, s)| format!("{n}: {:.2}×", s.med / stats[one].med))
        .collect();
    if below.is_empty() {
        "PASS".into()
    } else {
        format!("MISS at {}", below.join(", "))
    }
}
