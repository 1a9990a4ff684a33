//! Property tests of the Resilience4j-style limiters on a manual clock: over
//! any window the refill limiter grants at most `capacity + rate × window`
//! and matches a model of the strict bucket kept as a token credit; the cycle
//! limiter grants at most `limit` per cycle touched (without reservations)
//! and `limit × cycles` in all; refused calls and typed errors change
//! nothing; limit changes keep the token count. A threaded test races
//! grants with limit changes on real threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::{AcquireError, Clock, ManualClock, RateLimiter, WaitPolicy, WaitStats};
use ratekeeper_resilience4j::{compat, Metrics, Permission, PermitError, PermitLimiter};
use ratekeeper_resilience4j::{CycleLimiter, RefillLimiter};

#[derive(Debug, Clone)]
enum Op {
    /// Time passes outside the limiter.
    Advance(u64),
    /// `reserve_permission(n)`.
    Reserve(u32),
    /// `begin_acquire_permission(n)`, finished at once (the caller waits
    /// its own way).
    Begin(u32),
    /// Blocking `acquire_permission(n)` (sleeps advance the manual clock).
    Acquire(u32),
    /// `RateLimiter::reserve(n, Some(max_wait))`.
    Bounded(u32, u64),
    /// `RateLimiter::reserve(n, None)`.
    Unbounded(u32),
    /// `drain_permissions()`.
    Drain,
    /// `change_limit_for_period(limit)`.
    Change(i64),
}

fn ops(step: u64, max_permits: u32, with_changes: bool) -> impl Strategy<Value = Vec<Op>> {
    let change_weight = if with_changes { 1 } else { 0 };
    let op = prop_oneof![
        4 => (0..step * 6).prop_map(Op::Advance),
        3 => (0..=max_permits).prop_map(Op::Reserve),
        2 => (0..=max_permits).prop_map(Op::Begin),
        1 => (1..=max_permits).prop_map(Op::Acquire),
        2 => ((0..=max_permits), 0..step * 4).prop_map(|(n, t)| Op::Bounded(n, t)),
        1 => (1..=max_permits).prop_map(Op::Unbounded),
        1 => Just(Op::Drain),
        change_weight => (-1i64..12).prop_map(Op::Change),
    ];
    prop::collection::vec(op, 1..100)
}

/// What a limiter looks like from outside at one instant: everything a
/// refusal must leave as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    metrics: Metrics,
    stats: WaitStats,
    clock: u64,
}

fn fingerprint<L: PermitLimiter + RateLimiter>(l: &L) -> Fingerprint {
    Fingerprint {
        metrics: l.metrics(),
        stats: l.wait_stats(),
        clock: l.clock().now_nanos(),
    }
}

/// A permit grant: when its permits may go, and how many.
#[derive(Debug, Clone, Copy)]
struct Granted {
    ready: u64,
    permits: u64,
}

/// Runs `ops` on `l`, checking that every refusal and every typed error
/// leaves the limiter's fingerprint unchanged; returns the grants.
fn run<L: PermitLimiter + RateLimiter>(
    l: &L,
    clock: &ManualClock,
    ops: &[Op],
    mut on_change: impl FnMut(&L, i64, Fingerprint),
) -> Result<Vec<Granted>, TestCaseError> {
    let mut grants = Vec::new();
    for op in ops {
        let before = fingerprint(l);
        let now = clock.now_nanos();
        let mut granted = |ready: u64, permits: u32| {
            grants.push(Granted {
                ready,
                permits: u64::from(permits),
            })
        };
        let refused = match *op {
            Op::Advance(n) => {
                clock.advance_nanos(n);
                false
            }
            Op::Reserve(n) => match l.reserve_permission(n) {
                Ok(Permission::Now) => {
                    granted(now, n);
                    false
                }
                Ok(Permission::After(d)) => {
                    granted(now + d.as_nanos() as u64, n);
                    false
                }
                Ok(Permission::Refused) | Err(_) => true,
            },
            Op::Begin(n) => match l.begin_acquire_permission(n) {
                Ok(p) if p.is_granted() => {
                    granted(p.ready_at_nanos(), n);
                    prop_assert!(p.finish());
                    false
                }
                Ok(p) => {
                    prop_assert!(!p.finish());
                    true
                }
                Err(_) => true,
            },
            Op::Acquire(n) => match l.acquire_permission(n) {
                Ok(true) => {
                    // Slept (on the manual clock, exactly) until ready.
                    granted(clock.now_nanos(), n);
                    false
                }
                Ok(false) | Err(_) => true,
            },
            Op::Bounded(n, max) => {
                match RateLimiter::reserve(l, n, Some(Duration::from_nanos(max))) {
                    Ok(g) => {
                        prop_assert!(g.delay_nanos() <= max);
                        granted(g.ready_nanos(), n);
                        false
                    }
                    Err(_) => true,
                }
            }
            Op::Unbounded(n) => match RateLimiter::reserve(l, n, None) {
                Ok(g) => {
                    granted(g.ready_nanos(), n);
                    false
                }
                Err(AcquireError::InsufficientCapacity { .. }) => true,
                Err(e) => return Err(TestCaseError::fail(format!("unbounded reserve: {e}"))),
            },
            Op::Drain => {
                l.drain_permissions();
                false
            }
            Op::Change(limit) => {
                on_change(l, limit, before);
                false
            }
        };
        if refused {
            prop_assert_eq!(
                fingerprint(l),
                before,
                "{:?} was refused but changed the limiter",
                op
            );
        }
        prop_assert_eq!(l.metrics().waiting_threads, 0);
    }
    Ok(grants)
}

/// The most permits granted, counted by ready time, in a window `[a, b]`
/// whose ends are grant times, for every such window: `(a, b, sum)`.
fn windows(grants: &[Granted]) -> Vec<(u64, u64, u64)> {
    let mut g = grants.to_vec();
    g.sort_by_key(|g| g.ready);
    let mut out = Vec::new();
    for i in 0..g.len() {
        let mut sum = 0;
        for j in i..g.len() {
            sum += g[j].permits;
            out.push((g[i].ready, g[j].ready, sum));
        }
    }
    out
}

fn refill_config() -> impl Strategy<Value = (i64, i64, i64, i64, i64)> {
    // (limit, period, capacity, initial, timeout)
    (1i64..8, 1i64..2_000, 0i64..8, 0i64..16, 0i64..3_000).prop_filter_map(
        "at least 1 ns per permit",
        |(limit, period, extra, initial, timeout)| {
            let period = period.max(limit);
            let capacity = limit + extra;
            Some((limit, period, capacity, initial.min(capacity), timeout))
        },
    )
}

fn refill(
    (limit, period, capacity, initial, timeout): (i64, i64, i64, i64, i64),
    start: u64,
) -> (RefillLimiter<ManualClock>, ManualClock) {
    let config = ratekeeper_resilience4j::compat::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(period)
        .permit_capacity(capacity)
        .initial_permits(initial)
        .timeout_nanos(timeout)
        .build()
        .unwrap();
    let clock = ManualClock::new(start);
    let l = RefillLimiter::new_with_clock("prop", config, clock.clone())
        .with_wait_policy(WaitPolicy::coalesce(Duration::ZERO));
    (l, clock)
}

/// The strict bucket kept as a token credit in nanoseconds (the vector
/// file's second model): `credit = min(credit + elapsed, C × npp)`, a grant
/// of `n` subtracts `n × npp` and waits for what the credit lacks.
#[derive(Debug)]
struct Model {
    credit: i128,
    last: u64,
    npp: i128,
    full: i128,
    capacity: u32,
    timeout: i128,
}

impl Model {
    fn refresh(&mut self, now: u64) {
        self.credit = (self.credit + i128::from(now - self.last)).min(self.full);
        self.last = now;
    }

    /// The wait (0 = now) or None (refused), changing the model like the
    /// limiter.
    fn reserve(&mut self, n: u32, max: Option<i128>, now: u64) -> Option<i128> {
        self.refresh(now);
        let need = i128::from(n) * self.npp;
        let wait = (need - self.credit).max(0);
        if max.is_some_and(|m| wait > m) {
            return None;
        }
        self.credit -= need;
        Some(wait)
    }

    fn available(&mut self, now: u64) -> i64 {
        self.refresh(now);
        (self.credit / self.npp) as i64
    }

    fn drain(&mut self, now: u64) -> u64 {
        let drained = self.available(now).max(0) as u64;
        self.credit = self.credit.min(0);
        drained
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Over any window, permits that may go within it are at most
    /// `capacity + window / nanos_per_permit`; refusals change nothing.
    #[test]
    fn refill_grants_at_most_capacity_plus_rate_times_window(
        cfg in refill_config(),
        start in 0u64..1_000_000,
        ops in ops(300, 9, false),
    ) {
        let (l, clock) = refill(cfg, start);
        let npp = l.config().nanos_per_permit();
        let capacity = l.config().capacity() as u64;
        let grants = run(&l, &clock, &ops, |_, _, _| {})?;
        for (a, b, sum) in windows(&grants) {
            prop_assert!(
                sum <= capacity + (b - a) / npp,
                "{} permits in [{}, {}] with capacity {} and {} ns per permit",
                sum, a, b, capacity, npp
            );
        }
    }

    /// The limiter matches the credit model decision for decision.
    #[test]
    fn refill_matches_the_credit_model(
        cfg in refill_config(),
        start in 0u64..1_000_000,
        ops in ops(300, 9, false),
    ) {
        let (l, clock) = refill(cfg, start);
        let c = l.config();
        let npp = i128::from(c.nanos_per_permit() as i64);
        let mut m = Model {
            credit: i128::from(c.initial_permits()) * npp,
            last: start,
            npp,
            full: i128::from(c.capacity()) * npp,
            capacity: c.capacity() as u32,
            timeout: i128::from(cfg.4),
        };
        for op in &ops {
            let now = clock.now_nanos();
            match *op {
                Op::Advance(n) => clock.advance_nanos(n),
                Op::Reserve(n) | Op::Begin(n) | Op::Acquire(n) => {
                    let got = match l.reserve_permission(n) {
                        Ok(p) => Some(i128::from(p.nanos_to_wait())),
                        Err(PermitError::InvalidPermits) => { prop_assert_eq!(n, 0); continue }
                        Err(PermitError::ExceedsCapacity { .. }) => {
                            prop_assert!(n > m.capacity);
                            continue
                        }
                        Err(e) => return Err(TestCaseError::fail(e.to_string())),
                    };
                    let want = m.reserve(n, Some(m.timeout), now).unwrap_or(-1);
                    prop_assert_eq!(got, Some(want), "reserve({}) at {}", n, now);
                }
                Op::Bounded(n, _) | Op::Unbounded(n) if n > 0 => {
                    let max = match *op { Op::Bounded(_, t) => Some(t), _ => None };
                    let got = RateLimiter::reserve(&l, n, max.map(Duration::from_nanos))
                        .map(|g| i128::from(g.delay_nanos()))
                        .ok();
                    let want = if n > m.capacity {
                        None
                    } else {
                        m.reserve(n, max.map(i128::from), now)
                    };
                    prop_assert_eq!(got, want, "reserve({}, {:?}) at {}", n, max, now);
                }
                Op::Bounded(..) | Op::Unbounded(_) => {}
                Op::Drain => prop_assert_eq!(l.drain_permissions(), m.drain(now)),
                Op::Change(_) => {}
            }
            let now = clock.now_nanos();
            prop_assert_eq!(l.metrics().available_permissions, m.available(now));
        }
    }

    /// A limit change keeps the token count: exactly when it is not
    /// negative, and a debt may only round up (by less than one permit).
    #[test]
    fn refill_limit_changes_keep_the_token_count(
        cfg in refill_config(),
        ops in ops(300, 9, true),
    ) {
        let (l, clock) = refill(cfg, 0);
        run(&l, &clock, &ops, |l, limit, before| {
            let was = before.metrics.available_permissions;
            let old = l.config();
            match compat::change_limit_for_period(l, limit) {
                Ok(()) => {
                    let after = l.metrics();
                    let now = after.available_permissions;
                    assert!(now <= was && now >= was - 1, "{was} -> {now}");
                    if was > 0 {
                        assert_eq!(now, was);
                    }
                    // In time: the wait for the next permit scales with the
                    // new rate, rounded up to a whole nanosecond.
                    let new = l.config();
                    let (npp, npp2) = (
                        u128::from(old.nanos_per_permit()),
                        u128::from(new.nanos_per_permit()),
                    );
                    let scaled = u128::from(before.metrics.nanos_to_wait) * npp2;
                    assert_eq!(u128::from(after.nanos_to_wait), scaled.div_ceil(npp));
                    assert_eq!(new.limit_for_period(), limit);
                    assert_eq!(new.capacity(), old.capacity().max(limit));
                    assert_eq!(new.limit_refresh_period(), old.limit_refresh_period());
                }
                Err(_) => {
                    assert_eq!(l.config(), old);
                    assert_eq!(fingerprint(l), before);
                }
            }
        })?;
    }

    /// Cycle limiter: the permits that may go by the end of cycle `c` are
    /// at most `limit × (c + 1)`; refusals change nothing.
    #[test]
    fn cycle_grants_at_most_limit_per_elapsed_cycle(
        (limit, period, timeout) in (1i64..6, 1i64..1_000, 0i64..3_000),
        start in 0u64..1_000_000,
        ops in ops(200, 12, false),
    ) {
        let (l, clock) = cycle(limit, period, timeout, start);
        let grants = run(&l, &clock, &ops, |_, _, _| {})?;
        let mut g = grants.clone();
        g.sort_by_key(|g| g.ready);
        let mut total = 0;
        for x in &g {
            total += x.permits;
            let cycles = (x.ready - start) / period as u64 + 1;
            prop_assert!(
                total <= limit as u64 * cycles,
                "{} permits by {} ({} cycles of {} ns, limit {})",
                total, x.ready, cycles, period, limit
            );
        }
    }

    /// Cycle limiter without reservations (timeout 0, no unbounded
    /// reserves): any window touching k cycles grants at most k × limit.
    #[test]
    fn cycle_without_reservations_grants_at_most_limit_per_cycle_touched(
        (limit, period) in (1i64..6, 1i64..1_000),
        start in 0u64..1_000_000,
        ops in ops(200, 8, false).prop_map(|ops| ops
            .into_iter()
            .map(|op| match op {
                Op::Bounded(n, _) => Op::Bounded(n, 0),
                Op::Unbounded(n) => Op::Reserve(n),
                op => op,
            })
            .collect::<Vec<_>>()),
    ) {
        let (l, clock) = cycle(limit, period, 0, start);
        let grants = run(&l, &clock, &ops, |_, _, _| {})?;
        let p = period as u64;
        for (a, b, sum) in windows(&grants) {
            let touched = (b - start) / p - (a - start) / p + 1;
            prop_assert!(
                sum <= limit as u64 * touched,
                "{} permits in [{}, {}]: {} cycles of {} ns, limit {}",
                sum, a, b, touched, period, limit
            );
        }
    }

    /// Cycle limiter: a limit change keeps the current cycle as it was and
    /// applies from the next one; a refused change changes nothing.
    #[test]
    fn cycle_limit_changes_apply_from_the_next_cycle(
        (limit, period, timeout) in (1i64..6, 1i64..1_000, 0i64..3_000),
        ops in ops(200, 8, true),
    ) {
        let (l, clock) = cycle(limit, period, timeout, 0);
        run(&l, &clock, &ops, |l, new, before| {
            match compat::change_limit_for_period(l, new) {
                Ok(()) => {
                    // The count and cycle are kept; the wait for one more
                    // permit may change (later cycles mint the new limit).
                    let now = l.metrics();
                    assert_eq!(now.available_permissions, before.metrics.available_permissions);
                    assert_eq!(now.cycle, before.metrics.cycle);
                    assert_eq!(l.config().limit_for_period(), new);
                }
                Err(_) => assert_eq!(fingerprint(l), before),
            }
        })?;
    }
}

fn cycle(
    limit: i64,
    period: i64,
    timeout: i64,
    start: u64,
) -> (CycleLimiter<ManualClock>, ManualClock) {
    let config = ratekeeper_resilience4j::compat::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(period)
        .timeout_nanos(timeout)
        .build_cycle()
        .unwrap();
    let clock = ManualClock::new(start);
    let l = CycleLimiter::new_with_clock("prop", config, clock.clone())
        .with_wait_policy(WaitPolicy::coalesce(Duration::ZERO));
    (l, clock)
}

/// Real threads race grants against limit changes on a frozen clock: the
/// token count is kept by every change, so exactly the initial permits are
/// granted, none lost, none minted.
#[test]
fn threads_racing_limit_changes_grant_exactly_the_stored_permits() {
    const INITIAL: i64 = 20_000;
    for round in 0..4 {
        let config = ratekeeper_resilience4j::compat::ConfigBuilder::new()
            .limit_for_period(8)
            .limit_refresh_period_nanos(8 * 1024)
            .permit_capacity(INITIAL)
            .initial_permits(INITIAL)
            .timeout_nanos(0)
            .build()
            .unwrap();
        let limiter = Arc::new(RefillLimiter::new_with_clock(
            "threads",
            config,
            ManualClock::new(0),
        ));
        let granted = Arc::new(AtomicU64::new(0));
        let takers: Vec<_> = (0..3)
            .map(|_| {
                let (l, granted) = (limiter.clone(), granted.clone());
                std::thread::spawn(move || {
                    // The clock never moves: once refused, always refused.
                    while l.reserve_permission(1 + round % 2) == Ok(Permission::Now) {
                        granted.fetch_add(u64::from(1 + round % 2), Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let changer = {
            let l = limiter.clone();
            std::thread::spawn(move || {
                // Limits that divide the period: npp stays a power of two, so
                // a whole number of permits re-bases exactly.
                for i in 0..2_000 {
                    l.change_limit_for_period([8, 16, 32, 64][i % 4]).unwrap();
                }
            })
        };
        for t in takers {
            t.join().unwrap();
        }
        changer.join().unwrap();
        let left = limiter.metrics().available_permissions;
        assert!(
            left <= 1,
            "{left} permits left after the takers were refused"
        );
        assert_eq!(
            granted.load(Ordering::Relaxed) as i64 + left,
            INITIAL,
            "round {round}: granted + left must be the initial permits"
        );
    }
}

/// The same race on the cycle limiter within one cycle: exactly the limit.
#[test]
fn threads_racing_cycle_limit_changes_grant_exactly_the_limit() {
    const LIMIT: i64 = 20_000;
    let (l, _clock) = cycle(LIMIT, 1_000_000, 0, 0);
    let l = Arc::new(l);
    let granted = Arc::new(AtomicU64::new(0));
    let takers: Vec<_> = (0..3)
        .map(|_| {
            let (l, granted) = (l.clone(), granted.clone());
            std::thread::spawn(move || {
                while l.try_acquire().is_ok() {
                    granted.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let changer = {
        let l = l.clone();
        std::thread::spawn(move || {
            for i in 0..2_000 {
                l.change_limit_for_period(1 + i % 50_000).unwrap();
            }
        })
    };
    for t in takers {
        t.join().unwrap();
    }
    changer.join().unwrap();
    assert_eq!(granted.load(Ordering::Relaxed) as i64, LIMIT);
    assert_eq!(l.metrics().available_permissions, 0);
}

/// A step of the cancel properties.
#[derive(Debug, Clone)]
enum CancelOp {
    Advance(u64),
    /// `RateLimiter::reserve(n, None)`, kept.
    Reserve(u32),
    /// Cancel the grant at this index (modulo the grants so far).
    Cancel(usize),
    /// `drain_permissions()`.
    Drain,
}

fn cancel_ops(step: u64, max_permits: u32) -> impl Strategy<Value = Vec<CancelOp>> {
    let op = prop_oneof![
        3 => (0..step * 4).prop_map(CancelOp::Advance),
        5 => (1..=max_permits).prop_map(CancelOp::Reserve),
        3 => any::<usize>().prop_map(CancelOp::Cancel),
        1 => Just(CancelOp::Drain),
    ];
    prop::collection::vec(op, 1..80)
}

/// Runs `ops`, cancelling grants (any of them, in any order, at any time);
/// returns the grants still standing. Checks that every refused cancel
/// changes nothing and no grant is given back twice.
fn run_cancels<L: PermitLimiter + RateLimiter>(
    l: &L,
    clock: &ManualClock,
    ops: &[CancelOp],
) -> Result<Vec<Granted>, TestCaseError> {
    let mut grants: Vec<(ratekeeper::Grant, bool)> = Vec::new();
    for op in ops {
        match *op {
            CancelOp::Advance(n) => clock.advance_nanos(n),
            CancelOp::Reserve(n) => {
                if let Ok(g) = RateLimiter::reserve(l, n, None) {
                    grants.push((g, true));
                }
            }
            CancelOp::Cancel(i) if !grants.is_empty() => {
                let k = i % grants.len();
                let before = fingerprint(l);
                let (g, standing) = grants[k];
                if l.cancel(&g) {
                    prop_assert!(standing, "grant {} given back twice", k);
                    // A grant that went at once is never taken back; one
                    // handed on from a kept grant (the times of one given
                    // back before) may have been handed on at its very
                    // ready time, and its holder may give it back again.
                    let handed_on = grants.iter().any(|(h, standing)| {
                        !standing
                            && (h.scheduled_nanos(), h.ready_nanos(), h.permits())
                                == (g.scheduled_nanos(), g.ready_nanos(), g.permits())
                    });
                    prop_assert!(g.ready_nanos() > g.started_nanos() || handed_on);
                    prop_assert!(g.ready_nanos() >= clock.now_nanos());
                    grants[k].1 = false;
                } else {
                    prop_assert_eq!(
                        fingerprint(l),
                        before,
                        "a refused cancel changed the limiter"
                    );
                }
            }
            CancelOp::Cancel(_) => {}
            CancelOp::Drain => {
                l.drain_permissions();
            }
        }
    }
    Ok(grants
        .into_iter()
        .filter(|&(_, standing)| standing)
        .map(|(g, _)| Granted {
            ready: g.ready_nanos(),
            permits: u64::from(g.permits()),
        })
        .collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Cancelling any grants, in any order, never lets the bucket
    /// over-admit: the grants still standing keep within
    /// `capacity + window / nanos_per_permit` over every window.
    #[test]
    fn refill_cancels_never_over_admit(
        cfg in refill_config(),
        start in 0u64..1_000_000,
        ops in cancel_ops(300, 9),
    ) {
        let (l, clock) = refill(cfg, start);
        let npp = l.config().nanos_per_permit();
        let capacity = l.config().capacity() as u64;
        let grants = run_cancels(&l, &clock, &ops)?;
        for (a, b, sum) in windows(&grants) {
            prop_assert!(
                sum <= capacity + (b - a) / npp,
                "{} permits in [{}, {}] with capacity {} and {} ns per permit",
                sum, a, b, capacity, npp
            );
        }
    }

    /// The same for the cycle limiter: the permits standing that may go by
    /// the end of cycle `c` are at most `(c + 1) × limit`.
    #[test]
    fn cycle_cancels_never_over_admit(
        (limit, period) in (1i64..6, 1i64..1_000),
        start in 0u64..1_000_000,
        ops in cancel_ops(200, 12),
    ) {
        let (l, clock) = cycle(limit, period, 0, start);
        let mut g = run_cancels(&l, &clock, &ops)?;
        g.sort_by_key(|g| g.ready);
        let mut total = 0;
        for x in &g {
            total += x.permits;
            let cycles = (x.ready - start) / period as u64 + 1;
            prop_assert!(total <= limit as u64 * cycles, "{} permits by {}", total, x.ready);
        }
    }

    /// One permit at a time, no cycle ever starts more than `limit`
    /// permits, whatever is cancelled: a cancel never hands a cycle that
    /// later reservations fill to the next callers (issue 16).
    #[test]
    fn cycle_cancels_never_put_more_than_the_limit_in_a_cycle(
        (limit, period) in (1i64..6, 1i64..1_000),
        start in 0u64..1_000_000,
        ops in cancel_ops(200, 1),
    ) {
        let (l, clock) = cycle(limit, period, 0, start);
        let grants = run_cancels(&l, &clock, &ops)?;
        let mut per_cycle = std::collections::BTreeMap::new();
        for g in &grants {
            *per_cycle.entry((g.ready - start) / period as u64).or_insert(0) += g.permits;
        }
        for (c, n) in per_cycle {
            prop_assert!(n <= limit as u64, "{} permits start in cycle {} (limit {})", n, c, limit);
        }
    }

    /// Reserving and at once cancelling leaves either limiter as if the
    /// reservation had never been made, when it had to wait: a twin that
    /// never saw it shows the same state and grants the same times. A grant
    /// that could go at once is not given back (the twin takes it too).
    #[test]
    fn cancelling_at_once_is_as_if_it_never_happened(
        cfg in refill_config(),
        cycle_limiter in any::<bool>(),
        start in 0u64..1_000_000,
        ops in cancel_ops(300, 6),
    ) {
        let (limit, period, ..) = cfg;
        if cycle_limiter {
            let (l, clock) = cycle(limit, period, 0, start);
            let (twin, twin_clock) = cycle(limit, period, 0, start);
            twin_run(&l, &clock, &twin, &twin_clock, &ops)?;
        } else {
            let (l, clock) = refill(cfg, start);
            let (twin, twin_clock) = refill(cfg, start);
            twin_run(&l, &clock, &twin, &twin_clock, &ops)?;
        }
    }
}

/// `Reserve` on both limiters; `Cancel` reserves one permit on the first
/// only and cancels it at once.
fn twin_run<L: PermitLimiter + RateLimiter>(
    l: &L,
    clock: &ManualClock,
    twin: &L,
    twin_clock: &ManualClock,
    ops: &[CancelOp],
) -> Result<(), TestCaseError> {
    let times = |g: ratekeeper::Grant| (g.ready_nanos(), g.started_nanos(), g.permits());
    for op in ops {
        match *op {
            CancelOp::Advance(n) => {
                clock.advance_nanos(n);
                twin_clock.advance_nanos(n);
            }
            CancelOp::Reserve(n) => {
                let a = RateLimiter::reserve(l, n, None).map(times);
                let b = RateLimiter::reserve(twin, n, None).map(times);
                prop_assert_eq!(a, b);
            }
            CancelOp::Cancel(i) => {
                let n = (i % 3) as u32 + 1;
                let before = fingerprint(l);
                let Ok(g) = RateLimiter::reserve(l, n, None) else {
                    continue;
                };
                if g.ready_nanos() > g.started_nanos() {
                    prop_assert!(l.cancel(&g));
                    prop_assert_eq!(fingerprint(l), before);
                } else {
                    prop_assert!(!l.cancel(&g));
                    prop_assert_eq!(RateLimiter::reserve(twin, n, None).map(times), Ok(times(g)));
                }
            }
            CancelOp::Drain => {
                prop_assert_eq!(l.drain_permissions(), twin.drain_permissions());
            }
        }
        prop_assert_eq!(fingerprint(l), fingerprint(twin));
    }
    Ok(())
}
