//! Fault injection (issue 16): every limiter, built with its default
//! builder, driven through random sequences of acquires, tries, timeouts,
//! reservations, cancels, async acquires (awaited, or dropped while they
//! wait; with feature `tokio`, on paused tokio time that moves with the
//! clock), rate and strictness changes, restarts, stops and drains, on a
//! clock that the test also moves by jumps: backwards, far forwards, and to
//! the end of its range. Clocks start at 0, a little later, or past 2^63
//! ns.
//!
//! After every step:
//!
//! * nothing panicked, and the case finished (each case runs on its own
//!   thread under a timeout, so a call that hangs fails the test);
//! * a refusal that asks the caller to wait asks for more than nothing;
//! * the permits granted (less those given back) stay within the
//!   limiter's allowance: its burst, plus its fastest rate times the time
//!   that passed, plus how far ahead of the clock it has reserved. Time
//!   passed is what the clock moved forward (waits, advances, forward
//!   jumps); a step back adds none, so a limiter that took a step back for
//!   time passing (a wrapped subtraction) over-admits here.
//! * a batch handle grants no more than its limiter granted it (leases
//!   and exact-path requests, less those given back), to the permit; the
//!   limiter's own grants are held to its allowance, with its largest
//!   request (a lease) as its burst. A case's ops ask for far fewer
//!   permits than a full lease, so the limiter's allowance alone could not
//!   see a lease granted twice.
//!   A smooth limiter's burst is a request's permits: its stored permits
//!   were earned by time passed, already in the allowance.
//!
//! And at the end of a case whose clock stayed well inside its range, after
//! the clock moves on by what was granted (at the slowest rate), every
//! backward step and a margin, a limiter grants again at once (a stopped
//! one, once a first call has started it again): no fault leaves it
//! locked.
//!
//! `RATEKEEPER_FAULT_CASES` sets the number of cases (default 256, about
//! a second in a debug build), `RATEKEEPER_FAULT_KINDS` the limiters
//! (`Pool,Cycle`: names as in `Kind`), `RATEKEEPER_FAULT_TRACE` prints each
//! step; a long run is
//! `RATEKEEPER_FAULT_CASES=100000 cargo test --release --test fault_injection`.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::task::Waker;
use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::{
    AcquireError, BatchHandle, Clock, CycleLimiter, Grant, Pacer, Rate, RateLimiter, Readiness,
    Recovery, RefillLimiter, ShardedPacer, SmoothBursty, SmoothWarmingUp, TokenPool, WaitPolicy,
    WaitStats,
};

const SEC: u64 = 1_000_000_000;
/// The most permits one request takes.
const MAX_PERMITS: u32 = 4;
/// How long one case may run before it counts as hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(30);

/// A clock the test sets anywhere, backwards included. Sleeping advances
/// it (saturating), so blocking waits never block; sleeps are exact.
#[derive(Debug, Clone, Default)]
struct FaultClock(Arc<AtomicU64>);

impl FaultClock {
    fn set(&self, nanos: u64) {
        // Ordering: Relaxed; one thread drives a case, and the limiter's
        // own atomics order what it publishes.
        self.0.store(nanos, Ordering::Relaxed);
    }
}

impl Clock for FaultClock {
    fn now_nanos(&self) -> u64 {
        // Ordering: Relaxed, as in `set`.
        self.0.load(Ordering::Relaxed)
    }
    fn sleep_nanos(&self, nanos: u64) {
        // Ordering: Relaxed, as in `set`; the update saturates.
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(nanos))
            });
    }
    fn sleep_overshoot_nanos(&self) -> u64 {
        0
    }
}

/// What a limiter granted through [`Counted`]: permits, less those given
/// back, and its largest request.
#[derive(Debug, Default)]
struct Tally {
    granted: AtomicI64,
    largest: AtomicU32,
}

/// A limiter that counts what it grants, under a batch handle: every call
/// goes to the limiter unchanged.
struct Counted<L> {
    inner: L,
    tally: Arc<Tally>,
}

impl<L: RateLimiter> Counted<L> {
    fn count(&self, r: Result<Grant, AcquireError>) -> Result<Grant, AcquireError> {
        if let Ok(g) = &r {
            // Ordering: Relaxed; one thread drives a case.
            self.tally
                .granted
                .fetch_add(i64::from(g.permits()), Ordering::Relaxed);
            self.tally.largest.fetch_max(g.permits(), Ordering::Relaxed);
        }
        r
    }
}

impl<L: RateLimiter> RateLimiter for Counted<L> {
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.count(self.inner.reserve(permits, max_wait))
    }
    fn clock(&self) -> &dyn Clock {
        self.inner.clock()
    }
    fn wait_stats(&self) -> WaitStats {
        self.inner.wait_stats()
    }
    fn wait_policy(&self) -> WaitPolicy {
        self.inner.wait_policy()
    }
    fn recovery(&self) -> Recovery {
        self.inner.recovery()
    }
    fn cancel(&self, grant: &Grant) -> bool {
        let taken = self.inner.cancel(grant);
        if taken {
            // Ordering: Relaxed, as in `count`.
            self.tally
                .granted
                .fetch_sub(i64::from(grant.permits()), Ordering::Relaxed);
        }
        taken
    }
    fn released(&self, grant: &Grant) {
        self.inner.released(grant)
    }
    fn poll_grant(&self, grant: &Grant, now: u64, waker: &Waker) -> Readiness {
        self.inner.poll_grant(grant, now, waker)
    }
    fn wait_for(&self, grant: Grant) -> Grant {
        self.inner.wait_for(grant)
    }
    fn wait_turn(&self) {
        self.inner.wait_turn()
    }
    fn acquire_timeout(&self, permits: u32, timeout: Duration) -> Result<Grant, AcquireError> {
        self.count(self.inner.acquire_timeout(permits, timeout))
    }
}

/// The limiters under test.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Pacer,
    PacerBatched,
    Sharded,
    Pool,
    Bursty,
    WarmingUp,
    Refill,
    Cycle,
}

/// One step of a case.
#[derive(Debug, Clone)]
enum Op {
    Acquire(u32),
    Try(u32),
    Timeout(u32, u64),
    /// A reservation held (and maybe cancelled later).
    Reserve(u32),
    /// Cancel the held reservation at this index (modulo those held).
    Cancel(usize),
    /// A new rate, as a factor of the initial one.
    SetRate(f64),
    SetStrictness(f64),
    Restart,
    Stop,
    Drain,
    Advance(u64),
    Back(u64),
    Forward(u64),
    /// To `u64::MAX − n`.
    NearEnd(u64),
    /// `acquire_n_async`, driven to the end on paused tokio time that
    /// moves with the clock (feature `tokio`).
    AsyncAcquire(u32),
    /// `acquire_n_async` polled once, then dropped while it waits.
    AsyncDrop(u32),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let permits = 1..=MAX_PERMITS;
    let op = prop_oneof![
        4 => permits.clone().prop_map(Op::Acquire),
        4 => permits.clone().prop_map(Op::Try),
        2 => (permits.clone(), 0..SEC / 10).prop_map(|(n, t)| Op::Timeout(n, t)),
        3 => permits.prop_map(Op::Reserve),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => prop_oneof![Just(0.5), Just(2.0), 0.25f64..4.0].prop_map(Op::SetRate),
        1 => prop_oneof![Just(0.0), Just(0.5), Just(1.0), Just(1.1), Just(3.0)]
            .prop_map(Op::SetStrictness),
        1 => Just(Op::Restart),
        1 => Just(Op::Stop),
        1 => Just(Op::Drain),
        4 => (0..SEC / 10).prop_map(Op::Advance),
        2 => prop_oneof![1..1_000u64, 1..10 * SEC].prop_map(Op::Back),
        1 => prop_oneof![1..3_600 * SEC, Just(1 << 62)].prop_map(Op::Forward),
        1 => prop_oneof![Just(0u64), 1..SEC].prop_map(Op::NearEnd),
        3 => (1..=MAX_PERMITS).prop_map(Op::AsyncAcquire),
        3 => (1..=MAX_PERMITS).prop_map(Op::AsyncDrop),
    ];
    prop::collection::vec(op, 1..40)
}

/// A limiter under test and what its allowance needs.
struct Subject {
    kind: Kind,
    limiter: Box<dyn RateLimiter>,
    clock: FaultClock,
    /// Set the rate to `factor × initial`; false if refused.
    set_rate: Box<dyn Fn(f64) -> bool>,
    control: Box<dyn Fn(&Op)>,
    /// Permits per second at the initial rate.
    rate: f64,
    /// Permits the limiter may grant beyond its rate (its burst), in
    /// permits, at the initial rate.
    burst: f64,
    /// Under a batch handle: what the limiter granted the handle.
    tally: Option<Arc<Tally>>,
}

/// A subject's limiter, rate setter, other controls and burst.
type Parts = (
    Box<dyn RateLimiter>,
    Box<dyn Fn(f64) -> bool>,
    Box<dyn Fn(&Op)>,
    f64,
);

fn subject(kind: Kind, rate: f64, start: u64) -> Subject {
    let clock = FaultClock::default();
    clock.set(start);
    let r = move |f: f64| Rate::new(rate * f).unwrap();
    let mut tally = None;
    let (limiter, set_rate, control, burst): Parts = match kind {
        Kind::Pacer | Kind::PacerBatched => {
            let p = Arc::new(
                Pacer::builder(r(1.0))
                    .build_with_clock(clock.clone())
                    .unwrap(),
            );
            let (a, b) = (p.clone(), p.clone());
            let limiter: Box<dyn RateLimiter> = match kind {
                Kind::Pacer => Box::new(p.clone()),
                _ => {
                    let t = Arc::new(Tally::default());
                    tally = Some(t.clone());
                    Box::new(BatchHandle::new(Counted {
                        inner: p.clone(),
                        tally: t,
                    }))
                }
            };
            (
                limiter,
                Box::new(move |f| a.set_rate(r(f)).is_ok()),
                Box::new(move |op| match op {
                    Op::SetStrictness(s) => drop(b.set_strictness(*s)),
                    Op::Restart => b.restart(),
                    Op::Stop => b.stop(),
                    _ => {}
                }),
                // A request's permits are all due at its first slot; a
                // batch handle's lease at the lease's: the burst under a
                // handle is its largest request, from its tally.
                f64::from(MAX_PERMITS),
            )
        }
        Kind::Sharded => {
            let p: Arc<ShardedPacer<FaultClock>> = Arc::new(
                Pacer::builder(r(1.0))
                    .build_sharded_with_clock(2, clock.clone())
                    .unwrap(),
            );
            let (a, b) = (p.clone(), p.clone());
            (
                Box::new(p),
                Box::new(move |f| a.set_rate(r(f)).is_ok()),
                Box::new(move |op| match op {
                    Op::Restart => b.restart(),
                    Op::Stop => b.stop(),
                    _ => {}
                }),
                2.0 * f64::from(MAX_PERMITS + 1),
            )
        }
        Kind::Pool => {
            let p = Arc::new(
                TokenPool::builder(r(1.0))
                    .build_with_clock(clock.clone())
                    .unwrap(),
            );
            let (a, b) = (p.clone(), p.clone());
            (
                Box::new(p),
                Box::new(move |f| a.configure(r(f), a.burst_ratio()).is_ok()),
                Box::new(move |op| match op {
                    Op::Restart => b.restart(),
                    Op::Stop => b.stop(),
                    _ => {}
                }),
                // One op pre-filled, and the active pool: max(1 ms, 2 ops).
                f64::from(MAX_PERMITS) + (rate * 1e-3).max(2.0),
            )
        }
        Kind::Bursty => {
            let l = Arc::new(
                SmoothBursty::builder(rate)
                    .build_with_clock(clock.clone())
                    .unwrap(),
            );
            let a = l.clone();
            (
                Box::new(l),
                Box::new(move |f| a.set_rate(rate * f).is_ok()),
                Box::new(|_| {}),
                // Stored permits come from time passed (in the allowance's
                // rate term); a request goes at once and its cost is paid
                // after it; each is charged whole microseconds, truncated.
                // (up to 1 µs short each, under 40 requests a case).
                f64::from(MAX_PERMITS) + rate * 40e-6,
            )
        }
        Kind::WarmingUp => {
            let l = Arc::new(
                SmoothWarmingUp::builder(rate)
                    .warmup(Duration::from_secs(1))
                    .build_with_clock(clock.clone())
                    .unwrap(),
            );
            let a = l.clone();
            (
                Box::new(l),
                Box::new(move |f| a.set_rate(rate * f).is_ok()),
                Box::new(|_| {}),
                // Stored permits cost at least the stable interval each; a
                // request goes at once and its cost is paid after it; each
                // is charged whole microseconds, truncated.
                // (up to 1 µs short each, under 40 requests a case).
                f64::from(MAX_PERMITS) + rate * 40e-6,
            )
        }
        Kind::Refill => {
            // `rate` permits per second as 1 per slot; a 10-permit bucket.
            let period = (SEC as f64 / rate) as i64;
            let config = ratekeeper::bucket::RefillConfig::builder()
                .limit_for_period(1)
                .limit_refresh_period(std::time::Duration::from_nanos((period) as u64))
                .permit_capacity(10)
                .build()
                .unwrap();
            let l = Arc::new(RefillLimiter::new_with_clock(config, clock.clone()));
            let (a, b) = (l.clone(), l.clone());
            (
                Box::new(l),
                Box::new(move |f| set_limit(&*a, f.ceil() as i64)),
                Box::new(move |op| {
                    if let Op::Drain = op {
                        b.drain();
                    }
                }),
                10.0 + f64::from(MAX_PERMITS),
            )
        }
        Kind::Cycle => {
            // 10 permits per 10 slots.
            let period = (10.0 * SEC as f64 / rate) as i64;
            let config = ratekeeper::bucket::CycleConfig::builder()
                .limit_for_period(10)
                .limit_refresh_period(std::time::Duration::from_nanos((period) as u64))
                .build()
                .unwrap();
            let l = Arc::new(CycleLimiter::new_with_clock(config, clock.clone()));
            let (a, b) = (l.clone(), l.clone());
            (
                Box::new(l),
                Box::new(move |f| set_limit(&*a, (10.0 * f).ceil() as i64)),
                Box::new(move |op| {
                    if let Op::Drain = op {
                        b.drain();
                    }
                }),
                // The cycle begun, and one more's worth of reservations.
                20.0 + f64::from(MAX_PERMITS),
            )
        }
    };
    Subject {
        kind,
        limiter,
        clock,
        set_rate,
        control,
        rate,
        burst,
        tally,
    }
}

/// What a case has seen so far.
#[derive(Debug, Default)]
struct Seen {
    /// Permits granted and not given back.
    granted: f64,
    /// The latest clock reading and grant ready time.
    latest: u64,
    /// The time that passed: the clock's forward moves, in nanoseconds.
    passed: u64,
    /// The furthest a grant was ready after the clock when it was made.
    ahead: u64,
    /// The fastest and slowest rate factors set.
    fastest: f64,
    slowest: f64,
    /// Changes, restarts and stops: each may start a schedule afresh.
    resets: u32,
    /// Backward steps, in nanoseconds.
    back: u64,
    /// Whether the clock went near the end of its range.
    near_end: bool,
}

fn run_case(kind: Kind, rate: f64, start: u64, ops: &[Op]) -> Result<(), String> {
    let s = subject(kind, rate, start);
    let l = &*s.limiter;
    let mut seen = Seen {
        latest: start,
        fastest: 1.0,
        slowest: 1.0,
        ..Seen::default()
    };
    let mut held: Vec<Grant> = Vec::new();
    let trace = std::env::var_os("RATEKEEPER_FAULT_TRACE").is_some();
    for (step, op) in ops.iter().enumerate() {
        if trace {
            eprintln!("step {step} {op:?} at {}", s.clock.now_nanos());
        }
        let before = s.clock.now_nanos();
        let outcome = match *op {
            Op::Acquire(n) => Some(l.acquire_n(n)),
            Op::Try(n) => Some(l.reserve(n, Some(Duration::ZERO))),
            Op::Timeout(n, t) => Some(l.acquire_timeout(n, Duration::from_nanos(t))),
            Op::Reserve(n) => {
                let r = l.reserve(n, None);
                if let Ok(g) = r {
                    held.push(g);
                }
                Some(r)
            }
            Op::Cancel(i) if !held.is_empty() => {
                let g = held.swap_remove(i % held.len());
                if l.cancel(&g) {
                    seen.granted -= f64::from(g.permits());
                }
                None
            }
            Op::SetRate(f) => {
                if (s.set_rate)(f) {
                    seen.fastest = seen.fastest.max(f.ceil().max(f));
                    seen.slowest = seen.slowest.min(f);
                    seen.resets += 1;
                }
                None
            }
            Op::Advance(d) => {
                s.clock.sleep_nanos(d);
                None
            }
            Op::Back(d) => {
                let now = s.clock.now_nanos();
                seen.back = seen.back.saturating_add(d.min(now));
                s.clock.set(now.saturating_sub(d));
                None
            }
            Op::Forward(d) => {
                s.clock.sleep_nanos(d);
                None
            }
            Op::NearEnd(d) => {
                seen.near_end = true;
                s.clock.set(u64::MAX - d);
                None
            }
            Op::AsyncAcquire(n) => Some(async_acquire(&s, n)?),
            Op::AsyncDrop(n) => async_drop(&s, n),
            Op::Cancel(_) => None,
            ref other => {
                (s.control)(other);
                seen.resets += 1;
                None
            }
        };
        let now = s.clock.now_nanos();
        seen.latest = seen.latest.max(now);
        seen.passed = seen.passed.saturating_add(now.saturating_sub(before));
        match outcome {
            Some(Ok(g)) => {
                seen.granted += f64::from(g.permits());
                seen.latest = seen.latest.max(g.ready_nanos());
                seen.ahead = seen.ahead.max(g.ready_nanos().saturating_sub(now));
            }
            Some(Err(AcquireError::WouldWait { wait, .. })) if wait.is_zero() => {
                return Err(format!("step {step} {op:?}: refused with a wait of 0"));
            }
            _ => {}
        }
        let span = seen.passed.saturating_add(seen.ahead) as f64 / SEC as f64;
        // Under a batch handle: the handle grants no more than the limiter
        // granted it, and the limiter's own grants are held to the
        // allowance, with its largest request (a lease) as its burst.
        let (granted, burst) = match &s.tally {
            Some(t) => {
                // Ordering: Relaxed; this thread made every call.
                let leased = t.granted.load(Ordering::Relaxed) as f64;
                if seen.granted > leased {
                    return Err(format!(
                        "step {step} {op:?}: the handle granted {} permits, \
                         its limiter granted it {leased} ({seen:?})",
                        seen.granted
                    ));
                }
                let largest = t.largest.load(Ordering::Relaxed);
                (leased, s.burst.max(f64::from(largest)))
            }
            None => (seen.granted, s.burst),
        };
        let allowance = (burst * (1.0 + f64::from(seen.resets))) * seen.fastest.max(1.0)
            + s.rate * seen.fastest * span * (1.0 + 1e-6)
            + 1.0;
        if granted > allowance {
            return Err(format!(
                "step {step} {op:?}: {granted} permits granted in {span:.6} s, \
                 allowance {allowance:.1} ({seen:?})",
            ));
        }
    }
    recovers(&s, l, &seen, start)
}

/// A current-thread runtime on paused time, for the async steps.
#[cfg(feature = "tokio")]
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// The most 1 ms steps an async acquire may take (100 s of clock time).
#[cfg(feature = "tokio")]
const ASYNC_STEPS: u32 = 100_000;

/// `acquire_n_async(n)` to the end: polled, and while it waits, the clock
/// and tokio's paused time move on together by 1 ms a step. An acquire
/// still waiting after [`ASYNC_STEPS`] fails the case (it would hang).
#[cfg(feature = "tokio")]
fn async_acquire(s: &Subject, n: u32) -> Result<Result<Grant, AcquireError>, String> {
    use ratekeeper::tokio::AsyncRateLimiter;
    use std::future::Future;
    use std::task::Poll;
    let l = &*s.limiter;
    runtime().block_on(async {
        let mut fut = std::pin::pin!(l.acquire_n_async(n));
        for _ in 0..ASYNC_STEPS {
            let polled = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
            if let Poll::Ready(r) = polled {
                return Ok(r);
            }
            s.clock.sleep_nanos(1_000_000);
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        Err(format!(
            "an async acquire of {n} still waits after {ASYNC_STEPS} ms"
        ))
    })
}

/// `acquire_n_async(n)` polled once and dropped if it must wait: the
/// grant if it went at once.
#[cfg(feature = "tokio")]
fn async_drop(s: &Subject, n: u32) -> Option<Result<Grant, AcquireError>> {
    use ratekeeper::tokio::AsyncRateLimiter;
    use std::future::Future;
    use std::task::Poll;
    let l = &*s.limiter;
    runtime().block_on(async {
        let mut fut = std::pin::pin!(l.acquire_n_async(n));
        match std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await {
            Poll::Ready(r) => Some(r),
            Poll::Pending => None, // dropped here, waiting: cancelled
        }
    })
}

#[cfg(not(feature = "tokio"))]
fn async_acquire(s: &Subject, n: u32) -> Result<Result<Grant, AcquireError>, String> {
    Ok(s.limiter.acquire_n(n))
}

#[cfg(not(feature = "tokio"))]
fn async_drop(s: &Subject, n: u32) -> Option<Result<Grant, AcquireError>> {
    Some(s.limiter.reserve(n, Some(Duration::ZERO)))
}

/// At the end of a case whose clock stayed well inside its range: after the
/// clock moves on by what was granted at the slowest rate, every backward
/// step and a margin, the limiter grants at once.
fn recovers(s: &Subject, l: &dyn RateLimiter, seen: &Seen, start: u64) -> Result<(), String> {
    if seen.near_end || seen.latest - start >= 1 << 61 {
        return Ok(());
    }
    let owed = seen.granted.max(0.0) / (s.rate * seen.slowest);
    let catch_up = (owed * SEC as f64) as u64 + seen.back + (seen.latest - start) + 10 * SEC;
    // A stopped limiter starts again at its next call, on a fresh schedule
    // behind the reservations still queued: one call first, then the time.
    let _ = l.reserve(1, Some(Duration::ZERO));
    s.clock.sleep_nanos(catch_up);
    match l.reserve(1, Some(Duration::ZERO)) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "{:?}: still refusing {catch_up} ns after the last step: {e} ({seen:?})",
            s.kind
        )),
    }
}

/// Runs a case on its own thread, failing it if it does not finish.
fn with_timeout(kind: Kind, rate: f64, start: u64, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let (tx, rx) = mpsc::channel();
    // Kept for the report: a hung case's thread cannot be stopped, and
    // shrinking leaves one spinning per attempt, so say at once what hung.
    let case = format!("{kind:?} at {rate}/s from {start}: {ops:?}");
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(|| run_case(kind, rate, start, &ops));
        let _ = tx.send(result.unwrap_or_else(|_| Err("panicked".to_string())));
    });
    match rx.recv_timeout(CASE_TIMEOUT) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(TestCaseError::fail(format!("{kind:?} at {rate}/s: {e}"))),
        Err(_) => {
            eprintln!("hung: {case}");
            Err(TestCaseError::fail(format!(
                "no answer within {CASE_TIMEOUT:?} (hung): {case}"
            )))
        }
    }
}

fn cases() -> u32 {
    std::env::var("RATEKEEPER_FAULT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Every kind, or only those whose name `RATEKEEPER_FAULT_KINDS` lists
/// (comma separated, as `Debug` prints them), to chase one limiter's fault.
fn kind() -> impl Strategy<Value = Kind> {
    let all = [
        Kind::Pacer,
        Kind::PacerBatched,
        Kind::Sharded,
        Kind::Pool,
        Kind::Bursty,
        Kind::WarmingUp,
        Kind::Refill,
        Kind::Cycle,
    ];
    let only = std::env::var("RATEKEEPER_FAULT_KINDS").unwrap_or_default();
    let chosen: Vec<Kind> = all
        .into_iter()
        .filter(|k| only.is_empty() || only.split(',').any(|n| n.trim() == format!("{k:?}")))
        .collect();
    assert!(
        !chosen.is_empty(),
        "RATEKEEPER_FAULT_KINDS={only} names no kind"
    );
    prop::sample::select(chosen)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn no_fault_panics_hangs_or_over_admits(
        kind in kind(),
        rate in prop_oneof![Just(10.0), Just(1000.0), 10.0f64..100_000.0],
        // Clocks that start at 0, a little later, or past 2^63 ns.
        start in prop_oneof![
            2 => Just(0u64),
            2 => 0..1_000 * SEC,
            1 => (1u64 << 63)..(1u64 << 63) + 1_000 * SEC,
        ],
        ops in ops(),
    ) {
        with_timeout(kind, rate, start, ops)?;
    }
}

/// A limit change from a signed limit, as Resilience4j's
/// `changeLimitForPeriod(int)`: below 1 and above `u32::MAX` are refused.
fn set_limit<L: SetLimit + ?Sized>(limiter: &L, limit: i64) -> bool {
    u32::try_from(limit)
        .ok()
        .is_some_and(|limit| limiter.set_limit(limit))
}

/// The bucket limiters' runtime limit change.
trait SetLimit {
    fn set_limit(&self, limit: u32) -> bool;
}

impl<C: ratekeeper::Clock> SetLimit for RefillLimiter<C> {
    fn set_limit(&self, limit: u32) -> bool {
        self.set_limit_for_period(limit).is_ok()
    }
}

impl<C: ratekeeper::Clock> SetLimit for CycleLimiter<C> {
    fn set_limit(&self, limit: u32) -> bool {
        self.set_limit_for_period(limit).is_ok()
    }
}
