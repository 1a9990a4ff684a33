//! Property tests of [`BatchHandle`] over the token pool, the smooth and the
//! Resilience4j limiters, on a manual clock, and a stress test on real
//! threads.
//!
//! Every reservation the handles make goes through a recorder, so the
//! limiter's own grants are known. Over any run of requests, from any number
//! of handles:
//!
//! * **conservation**: permits granted by the handles, plus those still
//!   leased, plus those forfeited, equal the permits the limiter granted;
//! * **never sooner**: by any time `T`, each handle granted (or forfeited)
//!   no more permits than the limiter readied for it by `T`: no permit of a
//!   lease goes before the lease;
//! * **the window bound**: over any window `[a, b]`, the handles granted at
//!   most what the limiter readied in `[a, b]` plus what they held leased
//!   just before `a` (the documented lease slack);
//! * **the lease bound**: a handle never holds more than
//!   [`MAX_LEASE_PERMITS`] leased.
//!
//! A grant counts at `max(the time it was asked for, ready)`: when its
//! caller may go.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use ratekeeper::batch::MAX_LEASE_PERMITS;
use ratekeeper::pool::Filling;
use ratekeeper::{
    AcquireError, BatchHandle, Clock, CycleConfig, CycleLimiter, Grant, ManualClock, Rate,
    RateLimiter, RefillConfig, RefillLimiter, SmoothBursty, SmoothWarmingUp, TokenPool, WaitPolicy,
    WaitStats,
};

use crate::common::within;

/// What each real-clock test here may take before it fails as hung: far
/// beyond its run time, generous for a loaded machine.
const LIMIT: Duration = Duration::from_secs(60);

/// One grant the limiter made: for which handle, when its caller may go
/// (lowered to when its wait ended, if earlier), and how many permits.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: (u64, u64, u64, u32),
    handle: usize,
    time: u64,
    permits: u32,
}

/// Forwards to a limiter and records each grant it makes.
struct Recorder<L> {
    inner: L,
    log: RefCell<Vec<Entry>>,
    /// The handle whose call is under way.
    current: Cell<usize>,
}

fn key(g: &Grant) -> (u64, u64, u64, u32) {
    (
        g.scheduled_nanos(),
        g.ready_nanos(),
        g.started_nanos(),
        g.permits(),
    )
}

impl<L: RateLimiter> RateLimiter for Recorder<L> {
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        let asked = self.inner.clock().now_nanos();
        let g = self.inner.reserve(permits, max_wait)?;
        self.log.borrow_mut().push(Entry {
            key: key(&g),
            handle: self.current.get(),
            time: asked.max(g.ready_nanos()),
            permits: g.permits(),
        });
        Ok(g)
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
    fn cancel(&self, grant: &Grant) -> bool {
        self.inner.cancel(grant)
    }
    fn wait_for(&self, grant: Grant) -> Grant {
        let done = self.inner.wait_for(grant);
        // A pool's claim may get its tokens before its estimate.
        let mut log = self.log.borrow_mut();
        if let Some(e) = log.iter_mut().rev().find(|e| e.key == key(&grant)) {
            e.time = e.time.min(done.started_nanos());
        }
        done
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Time passes.
    Advance(u64),
    /// Handle `h` reserves `n` permits without waiting for them.
    Reserve(usize, u32),
    /// Handle `h` reserves `n` permits with a maximum wait.
    Bounded(usize, u32, u64),
    /// Handle `h` acquires one permit, blocking (the manual clock's sleeps
    /// advance it).
    Acquire(usize),
    /// Handle `h` forfeits its lease.
    Release(usize),
}

fn ops(handles: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0u64..20_000).prop_map(Op::Advance),
        6 => (0..handles, 1u32..4).prop_map(|(h, n)| Op::Reserve(h, n)),
        2 => (0..handles, 1u32..4, 0u64..20_000).prop_map(|(h, n, w)| Op::Bounded(h, n, w)),
        3 => (0..handles).prop_map(Op::Acquire),
        1 => (0..handles).prop_map(Op::Release),
    ];
    prop::collection::vec(op, 1..300)
}

/// Runs `ops` on handles over `limiter` and checks the properties.
fn check<L: RateLimiter>(limiter: L, clock: &ManualClock, handles: usize, ops: &[Op]) {
    let rec = Recorder {
        inner: limiter,
        log: RefCell::new(Vec::new()),
        current: Cell::new(0),
    };
    let hs: Vec<_> = (0..handles)
        .map(|_| BatchHandle::new(&rec).with_max_lease(Duration::from_micros(50)))
        .collect();
    // The handles' grants: when their callers may go, and how many permits,
    // and each handle's grants and forfeits.
    let mut granted: Vec<(u64, u32)> = Vec::new();
    let mut own: Vec<Vec<(u64, u32)>> = vec![Vec::new(); handles];
    // (time, permits held leased by all handles) after each step.
    let mut held: Vec<(u64, u64)> = Vec::new();
    let mut forfeited = 0u64;
    for op in ops {
        let before = granted.len();
        let h = match *op {
            Op::Reserve(h, _) | Op::Bounded(h, ..) | Op::Acquire(h) | Op::Release(h) => h,
            Op::Advance(_) => 0,
        };
        rec.current.set(h);
        match *op {
            Op::Advance(ns) => clock.advance_nanos(ns),
            Op::Reserve(h, n) => {
                let asked = clock.now_nanos();
                if let Ok(g) = hs[h].reserve(n, None) {
                    granted.push((asked.max(g.ready_nanos()), g.permits()));
                }
            }
            Op::Bounded(h, n, w) => {
                let asked = clock.now_nanos();
                let before = hs[h].leased_permits();
                match hs[h].reserve(n, Some(Duration::from_nanos(w))) {
                    Ok(g) => {
                        assert!(
                            g.ready_nanos().saturating_sub(asked) <= w,
                            "{g:?} at {asked}"
                        );
                        granted.push((asked.max(g.ready_nanos()), g.permits()));
                    }
                    Err(AcquireError::WouldWait { .. }) => {
                        assert_eq!(hs[h].leased_permits(), before, "a refusal takes nothing");
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            Op::Acquire(h) => {
                let g = hs[h].acquire();
                assert!(g.started_nanos() >= g.ready_nanos(), "{g:?}");
                granted.push((clock.now_nanos(), g.permits()));
            }
            Op::Release(h) => {
                let n = hs[h].release();
                forfeited += u64::from(n);
                // The forfeited permits are of the handle's lease, which
                // may be ready later than now: count them once the
                // handle's reservations so far are all ready.
                let latest = rec
                    .log
                    .borrow()
                    .iter()
                    .filter(|e| e.handle == h)
                    .map(|e| e.time)
                    .max()
                    .unwrap_or(0);
                own[h].push((clock.now_nanos().max(latest), n));
            }
        }
        own[h].extend_from_slice(&granted[before..]);
        let mut total = 0;
        for h in &hs {
            assert!(h.leased_permits() <= MAX_LEASE_PERMITS);
            total += u64::from(h.leased_permits());
        }
        held.push((clock.now_nanos(), total));
    }
    let leased_now: u64 = hs.iter().map(|h| u64::from(h.leased_permits())).sum();
    drop(hs);
    let entries = rec.log.into_inner();
    let log: Vec<(u64, u32)> = entries.iter().map(|e| (e.time, e.permits)).collect();
    let by_limiter: u64 = log.iter().map(|&(_, n)| u64::from(n)).sum();
    let by_handles: u64 = granted.iter().map(|&(_, n)| u64::from(n)).sum();
    assert_eq!(
        by_handles + leased_now + forfeited,
        by_limiter,
        "conservation"
    );

    let count = |v: &[(u64, u32)], a: u64, b: u64| -> u64 {
        v.iter()
            .filter(|&&(t, _)| a <= t && t <= b)
            .map(|&(_, n)| u64::from(n))
            .sum()
    };
    for (h, own) in own.iter().enumerate() {
        let leases: Vec<(u64, u32)> = entries
            .iter()
            .filter(|e| e.handle == h)
            .map(|e| (e.time, e.permits))
            .collect();
        for &(b, _) in own {
            assert!(
                count(own, 0, b) <= count(&leases, 0, b),
                "never sooner, handle {h} by {b}: {own:?} against {leases:?}"
            );
        }
    }
    let mut times: Vec<u64> = granted.iter().map(|&(t, _)| t).collect();
    times.sort_unstable();
    times.dedup();
    for (i, &a) in times.iter().enumerate() {
        // Held just before `a`: after the last step that ended before it.
        let slack = held
            .iter()
            .take_while(|&&(t, _)| t < a)
            .last()
            .map_or(0, |&(_, h)| h);
        for &b in &times[i..] {
            let handed = count(&granted, a, b);
            let limit = count(&log, a, b) + slack;
            assert!(
                handed <= limit,
                "window [{a}, {b}]: {handed} granted, limiter readied {} + {slack} held",
                count(&log, a, b)
            );
        }
    }
}

fn refill(clock: &ManualClock) -> RefillLimiter<ManualClock> {
    let config = RefillConfig::builder()
        .limit_for_period(40)
        .limit_refresh_period(Duration::from_micros(100))
        .permit_capacity(60)
        .build()
        .unwrap();
    RefillLimiter::new_with_clock(config, clock.clone())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn refill_limiter(handles in 1usize..4, ops in ops(3)) {
        let clock = ManualClock::new(1_000);
        let ops: Vec<Op> = ops.into_iter().map(|o| clamp(o, handles)).collect();
        check(refill(&clock), &clock, handles, &ops);
    }

    #[test]
    fn cycle_limiter(handles in 1usize..4, ops in ops(3)) {
        let clock = ManualClock::new(1_000);
        let config = CycleConfig::builder()
            .limit_for_period(30)
            .limit_refresh_period(Duration::from_micros(50))
            .timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let limiter = CycleLimiter::new_with_clock(config, clock.clone());
        let ops: Vec<Op> = ops.into_iter().map(|o| clamp(o, handles)).collect();
        check(limiter, &clock, handles, &ops);
    }

    #[test]
    fn smooth_bursty(handles in 1usize..4, ops in ops(3)) {
        let clock = ManualClock::new(1_000);
        let limiter = SmoothBursty::builder(200_000.0)
            .max_burst_seconds(0.0002)
            .build_with_clock(clock.clone())
            .unwrap();
        let ops: Vec<Op> = ops.into_iter().map(|o| clamp(o, handles)).collect();
        check(limiter, &clock, handles, &ops);
    }

    #[test]
    fn smooth_warming_up(handles in 1usize..4, ops in ops(3)) {
        let clock = ManualClock::new(1_000);
        let limiter = SmoothWarmingUp::builder(200_000.0)
            .warmup(Duration::from_micros(300))
            .build_with_clock(clock.clone())
            .unwrap();
        let ops: Vec<Op> = ops.into_iter().map(|o| clamp(o, handles)).collect();
        check(limiter, &clock, handles, &ops);
    }

    #[test]
    fn token_pool(handles in 1usize..4, ops in ops(3), burst in 1.0f64..2.0) {
        let clock = ManualClock::new(1_000);
        let pool = TokenPool::builder(Rate::new(300_000.0).unwrap())
            .burst_ratio(burst)
            .filling(Filling::Inline)
            .build_with_clock(clock.clone())
            .unwrap();
        let ops: Vec<Op> = ops.into_iter().map(|o| clamp(o, handles)).collect();
        check(&pool, &clock, handles, &ops);
    }
}

/// Maps an op's handle index into `0..handles`.
fn clamp(op: Op, handles: usize) -> Op {
    match op {
        Op::Reserve(h, n) => Op::Reserve(h % handles, n),
        Op::Bounded(h, n, w) => Op::Bounded(h % handles, n, w),
        Op::Acquire(h) => Op::Acquire(h % handles),
        Op::Release(h) => Op::Release(h % handles),
        other => other,
    }
}

/// Real threads, each with a handle over one refill limiter: over the whole
/// run the handles grant at most what the bucket allows plus one lease per
/// handle, and, busy all along, at least most of it.
#[test]
fn threads_never_exceed_the_bucket_plus_the_lease_slack() {
    within(LIMIT, || {
        const THREADS: u64 = 4;
        const RATE: u64 = 2_000_000; // 2000 per ms
        let config = RefillConfig::builder()
            .limit_for_period(2000)
            .limit_refresh_period(Duration::from_millis(1))
            .build()
            .unwrap();
        let limiter = RefillLimiter::new(config);
        let granted = AtomicU64::new(0);
        let run = Duration::from_millis(300);
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    let handle = BatchHandle::new(&limiter);
                    let mut n = 0;
                    while start.elapsed() < run {
                        n += u64::from(handle.acquire().permits());
                    }
                    granted.fetch_add(n, Ordering::Relaxed);
                });
            }
        });
        let elapsed = start.elapsed().as_nanos() as u64;
        let granted = granted.into_inner();
        // The bucket starts full (2000) and refills 2 per µs; each thread may
        // also have been granted one more lease whose wait ended after the run.
        let allowed =
            2000 + RATE * elapsed / 1_000_000_000 + THREADS * u64::from(MAX_LEASE_PERMITS);
        assert!(
            granted <= allowed,
            "{granted} granted in {elapsed} ns, at most {allowed} allowed"
        );
        let expected = RATE * run.as_nanos() as u64 / 1_000_000_000;
        assert!(
            granted >= expected / 2,
            "{granted} granted in {elapsed} ns, expected about {expected}"
        );
    });
}
