//! Property tests of the G2 token pool arithmetic ([`Pools`]): tokens are
//! conserved by every sequence of refills, takes and re-sizings; the active
//! pool stays within `max_over_active` except just after a shrinking apply;
//! every refill matches a wide-integer model of nosqlbench's formula; and no
//! input, however extreme, panics (invalid configurations are errors).
//!
//! And of the [`TokenPool`] limiter on a manual clock: with manual filling it
//! matches the arithmetic, conserves tokens and never grants ahead of the
//! tokens refilled; with inline filling no run starts more ops by any time
//! than the pre-fill and the elapsed time pay for. The tokens owed to queued
//! claims stay exact through any reservations, cancels and refills, even at
//! rates where they would pass `u64::MAX`.

use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::pool::{Filling, TokenPool, MAX_POOL_NANOS};
use ratekeeper::{
    AcquireError, Clock, ConfigReason, ManualClock, Pools, Rate, RateLimiter, WaitStats,
};

#[derive(Debug, Clone)]
enum Step {
    Refill(u64),
    TakeUpTo(u64),
    TryTake(u64),
    TryTakeOp,
    /// Re-size for a rate and burst ratio (valid ones).
    Apply(f64, f64),
    Restart,
}

/// Rates whose op slice is between 1 ns and 2^62 ns, spread over 18 decades,
/// plus the usual round ones.
fn valid_rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-9.6f64..9.0).prop_map(|e| 10f64.powf(e)),
        prop::sample::select(vec![0.1, 1.0, 100.0, 1000.0, 2000.0, 1e6, 1e7, 5e8, 1e9]),
    ]
}

fn valid_burst() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![1.0, 1.1, 1.5, 2.0, 10.0]),
        1.0f64..4.0,
    ]
}

/// Ops with amounts small enough (< 2^44) that 200 refills never reach the
/// content bound, so conservation must hold exactly.
fn ops(max: u64) -> impl Strategy<Value = Vec<Step>> {
    let amount = prop_oneof![
        3 => 0..max,
        1 => 0..1_000u64,
        1 => prop::sample::select(vec![0, 1, 100, 1_000_000, 2_000_000]),
    ];
    let op = prop_oneof![
        6 => amount.clone().prop_map(Step::Refill),
        2 => amount.clone().prop_map(Step::TakeUpTo),
        2 => amount.prop_map(Step::TryTake),
        4 => Just(Step::TryTakeOp),
        1 => (valid_rate(), valid_burst()).prop_map(|(r, b)| Step::Apply(r, b)),
        1 => Just(Step::Restart),
    ];
    prop::collection::vec(op, 1..200)
}

fn pools(rate: f64, burst: f64) -> Pools {
    Pools::new(Rate::new(rate).unwrap(), burst).unwrap()
}

/// nosqlbench's refill written out from the vector text in i128, so that no
/// step can overflow: (active, waiting) after `refill(new)`.
fn model_refill(p: &Pools, new: u64) -> (u64, u64) {
    let max_active = i128::from(p.max_active());
    let max_over = i128::from(p.max_over_active());
    let burst_pool = max_over - max_active;
    let (mut active, mut waiting) = (i128::from(p.active()), i128::from(p.waiting()));
    let new = i128::from(new);
    let needed = (max_active - active).max(0);
    let to_active = new.min(needed);
    active += to_active;
    waiting += new - to_active;
    let factor = (new as f64 / max_active as f64).min(1.0);
    let allowed = (max_over - active).min((factor * burst_pool as f64) as i64 as i128);
    let fill = allowed.min(waiting);
    waiting -= fill;
    active += fill;
    (active as u64, waiting as u64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (1) At every step: refilled = active + waiting + taken (a restart's
    /// return counts as taken). (2) After every refill active <=
    /// max_over_active; in between, active exceeds it only after an apply
    /// that shrank the pools, until the next refill. Every refill matches the
    /// model exactly, and returns the content.
    #[test]
    fn tokens_are_conserved_and_active_bounded(
        rate in valid_rate(),
        burst in valid_burst(),
        ops in prop::sample::select(vec![1_000u64, 3_000_000, 1 << 30, 1 << 44])
            .prop_flat_map(ops),
    ) {
        let mut p = pools(rate, burst);
        let (mut refilled, mut taken) = (0u128, 0u128);
        let mut shrunk_since_refill = false;
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Step::Refill(n) => {
                    let want = model_refill(&p, n);
                    let returns = p.refill(n);
                    refilled += u128::from(n);
                    prop_assert_eq!((p.active(), p.waiting()), want, "step {}: {:?}", i, op);
                    prop_assert_eq!(returns, p.wait_time());
                    prop_assert!(p.active() <= p.max_over_active(), "step {}: {:?}", i, op);
                    shrunk_since_refill = false;
                }
                Step::TakeUpTo(n) => {
                    let before = p.active();
                    let t = p.take_up_to(n);
                    prop_assert_eq!(t, n.min(before));
                    taken += u128::from(t);
                }
                Step::TryTake(n) => {
                    let before = p.clone();
                    match p.try_take(n) {
                        Some(left) => {
                            prop_assert!(n <= before.active());
                            prop_assert_eq!(left, p.wait_time());
                            taken += u128::from(n);
                        }
                        None => {
                            prop_assert!(n > before.active());
                            prop_assert_eq!(&p, &before);
                        }
                    }
                }
                Step::TryTakeOp => {
                    let can = p.can_take_op();
                    let npo = p.nanos_per_op();
                    let r = p.try_take_op();
                    prop_assert_eq!(r.is_some(), can);
                    if r.is_some() {
                        taken += u128::from(npo);
                    }
                }
                Step::Apply(r, b) => {
                    let (a, w) = (p.active(), p.waiting());
                    p.apply(Rate::new(r).unwrap(), b).unwrap();
                    prop_assert_eq!((p.active(), p.waiting()), (a, w), "apply keeps the pools");
                    if p.active() > p.max_over_active() {
                        shrunk_since_refill = true;
                    }
                }
                Step::Restart => {
                    let held = p.wait_time();
                    prop_assert_eq!(p.restart(), held);
                    prop_assert_eq!(p.wait_time(), 0);
                    taken += u128::from(held);
                }
            }
            prop_assert_eq!(
                refilled,
                u128::from(p.active()) + u128::from(p.waiting()) + taken,
                "step {}: {:?}: tokens not conserved", i, op
            );
            prop_assert_eq!(p.wait_time(), p.active() + p.waiting());
            prop_assert!(
                p.active() <= p.max_over_active() || shrunk_since_refill,
                "step {}: {:?}: active {} above max_over_active {}",
                i, op, p.active(), p.max_over_active()
            );
            prop_assert!(p.max_active() <= p.max_over_active());
            prop_assert_eq!(p.burst_pool(), p.max_over_active() - p.max_active());
        }
    }

    /// (3) Arbitrary rates and burst ratios, including NaN, infinities,
    /// negatives and subnormals: either a typed error naming the problem, or
    /// pools that survive arbitrary amounts (u64::MAX included) without a
    /// panic, with the content saturating at MAX_POOL_NANOS and conserved
    /// below it.
    #[test]
    fn no_panic_on_any_input(
        rate in prop_oneof![any::<f64>(), valid_rate()],
        burst in prop_oneof![any::<f64>(), valid_burst(), Just(f64::MAX)],
        size in prop_oneof![any::<u64>(), Just(0u64), Just(MAX_POOL_NANOS), 1..1_000_000u64],
        use_size in any::<bool>(),
        amounts in prop::collection::vec(
            prop_oneof![any::<u64>(), Just(u64::MAX), Just(MAX_POOL_NANOS), Just(0u64)],
            1..40,
        ),
        resize in (any::<f64>(), any::<f64>()),
    ) {
        let built = if use_size {
            Pools::with_pool_size(size, burst)
        } else {
            Rate::new(rate).and_then(|r| Pools::new(r, burst))
        };
        let mut p = match built {
            Err(e) => {
                // The error names the problem, which was really there.
                let _ = e.to_string();
                match e.reason() {
                    ConfigReason::BurstNotFinite => prop_assert!(!burst.is_finite()),
                    ConfigReason::BurstBelowOne => prop_assert!(burst < 1.0),
                    ConfigReason::PoolSize => {
                        prop_assert!(use_size && (size == 0 || size > MAX_POOL_NANOS));
                    }
                    ConfigReason::RateNotFinite => prop_assert!(!use_size && !rate.is_finite()),
                    ConfigReason::RateNotPositive => prop_assert!(!use_size && rate <= 0.0),
                    ConfigReason::RateTooFast => prop_assert!(!use_size && rate > 1e9),
                    ConfigReason::RateTooSlow => prop_assert!(!use_size && rate < 1e-9),
                    other => prop_assert!(false, "unexpected error {:?}", other),
                }
                return Ok(());
            }
            Ok(p) => p,
        };
        prop_assert!(burst.is_finite() && burst >= 1.0);
        for (i, &n) in amounts.iter().enumerate() {
            let before = u128::from(p.wait_time());
            let returns = p.refill(n);
            let want = (before + u128::from(n)).min(u128::from(MAX_POOL_NANOS));
            prop_assert_eq!(u128::from(returns), want, "refill {}", i);
            prop_assert!(p.active() <= p.max_over_active());
            match i % 4 {
                0 => { p.take_up_to(n); }
                1 => { p.try_take(n); }
                2 => { p.try_take_op(); }
                _ => {
                    // Re-sizing with arbitrary values fails cleanly or works.
                    let before = p.clone();
                    let r = Rate::new(resize.0).and_then(|r| p.apply(r, resize.1));
                    if r.is_err() {
                        prop_assert_eq!(&p, &before);
                    }
                }
            }
            prop_assert!(p.wait_time() <= MAX_POOL_NANOS);
            prop_assert_eq!(u128::from(p.wait_time()), u128::from(p.active()) + u128::from(p.waiting()));
        }
        let held = p.wait_time();
        prop_assert_eq!(p.restart(), held);
    }
}

/// Spec D-1 (nosqlbench.md §4.6): rate 1000, burst 1.1, 1 ms fills; after the
/// filler's pre-fill the consumer is away for 1 s, then always ready. It gets
/// 1101 ops in the first second back, 1100 in each of the next 9 (the backlog
/// drains at (burst - 1) × wall time), then 1000 a second. The waiting pool
/// values are those the vectors' findings report for the upstream pools.
#[test]
fn d_1_backlog_drains_at_burst_minus_one() {
    let mut p = pools(1000.0, 1.1);
    p.refill(p.nanos_per_op()); // the filler's start() pre-fill
    for _ in 0..1000 {
        p.refill(1_000_000);
    }
    // The vectors' findings: 0.9988 s right after the stall, and 0.9998 s at
    // the peak: the first fill after it finds the active pool still full.
    assert_eq!(p.waiting(), 998_800_000);
    let mut peak = p.waiting();
    let mut per_second = Vec::new();
    for _ in 0..13 {
        let mut ops = 0;
        for _ in 0..1000 {
            p.refill(1_000_000);
            while p.try_take_op().is_some() {
                ops += 1;
            }
            peak = peak.max(p.waiting());
        }
        per_second.push(ops);
    }
    assert_eq!(peak, 999_800_000);
    assert_eq!(
        per_second,
        [1101, 1100, 1100, 1100, 1100, 1100, 1100, 1100, 1100, 1100, 1000, 1000, 1000]
    );
    assert_eq!(p.waiting(), 0);
}

/// A step of a [`TokenPool`] run on a manual clock.
#[derive(Debug, Clone)]
enum PoolStep {
    /// `refill(n)` (manual filling only).
    Refill(u64),
    /// `try_acquire_n(n)`.
    Try(u32),
    /// `acquire_n(n)` (inline filling only: it naps on the manual clock).
    Acquire(u32),
    /// `acquire_timeout(1, t)` (inline filling only).
    Timeout(u64),
    /// Time passes outside the pool.
    Advance(u64),
}

/// Rates with op slices from 1 µs to 10 ms, round and not.
fn pool_rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![100.0, 1000.0, 1500.0, 7777.0, 1e5, 1e6]),
        100.0f64..1e6,
    ]
}

fn manual_steps(npo: u64) -> impl Strategy<Value = Vec<PoolStep>> {
    let step = prop_oneof![
        4 => prop_oneof![0..npo * 2, 0..npo * 40, Just(npo)].prop_map(PoolStep::Refill),
        4 => (1u32..5).prop_map(PoolStep::Try),
        2 => (0..npo * 10).prop_map(PoolStep::Advance),
    ];
    prop::collection::vec(step, 1..150)
}

/// What a refused try could change.
fn snapshot(pool: &TokenPool<ManualClock>) -> (Pools, u64, usize, WaitStats) {
    (
        pool.pools(),
        pool.fills(),
        pool.waiters(),
        pool.wait_stats(),
    )
}

fn inline_steps(npo: u64) -> impl Strategy<Value = Vec<PoolStep>> {
    let step = prop_oneof![
        5 => (1u32..4).prop_map(PoolStep::Acquire),
        2 => (1u32..4).prop_map(PoolStep::Try),
        1 => (0..npo * 3).prop_map(PoolStep::Timeout),
        2 => prop_oneof![3 => 0..npo * 3, 1 => 0..npo * 200].prop_map(PoolStep::Advance),
    ];
    prop::collection::vec(step, 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Manual filling: at every step the pool's active and waiting pools are
    /// those of [`Pools`] given the same refills and takes; tokens are
    /// conserved (pre-fill + refills = active + waiting + granted ops'
    /// tokens), so the ops granted never exceed what was refilled; a try is
    /// granted exactly when the active pool holds its tokens, and a refused
    /// one changes nothing; every grant is scheduled at the start plus the
    /// tokens taken before it, and never after it started.
    #[test]
    fn manual_pool_conserves_tokens_and_never_grants_ahead(
        rate in pool_rate(),
        burst in prop::sample::select(vec![1.0, 1.1, 1.5, 3.0]),
        cached in any::<bool>(),
        start in 0u64..1 << 40,
        steps in pool_rate()
            .prop_flat_map(|r| manual_steps(Rate::new(r).unwrap().nanos_per_op().unwrap()))
    ) {
        let clock = ManualClock::new(start);
        let pool = TokenPool::builder(Rate::new(rate).unwrap())
            .burst_ratio(burst)
            .filling(Filling::Manual)
            .cached_clock(cached)
            .build_with_clock(clock.clone())
            .unwrap();
        let npo = pool.nanos_per_op();
        let mut model = Pools::new(Rate::new(rate).unwrap(), burst).unwrap();
        model.refill(npo); // the start's pre-fill
        let mut refilled = u128::from(npo);
        let mut granted = 0u64; // permits
        for (i, step) in steps.iter().enumerate() {
            match *step {
                PoolStep::Refill(n) => {
                    prop_assert_eq!(pool.refill(n).unwrap(), model.refill(n));
                    refilled += u128::from(n);
                }
                PoolStep::Try(k) => {
                    let span = u64::from(k) * npo;
                    let before = snapshot(&pool);
                    match pool.try_acquire_n(k) {
                        Ok(g) => {
                            prop_assert!(model.active() >= span, "step {}: no tokens", i);
                            model.take_up_to(span);
                            let now = clock.now_nanos();
                            prop_assert_eq!(g.permits(), k);
                            prop_assert!(g.started_nanos() <= now);
                            if !cached {
                                prop_assert_eq!(g.started_nanos(), now);
                            }
                            let (scheduled, started) = (g.scheduled_nanos(), g.started_nanos());
                            prop_assert!(scheduled <= started, "step {}: {:?}", i, g);
                            let due = start + granted * npo;
                            prop_assert_eq!(scheduled, due.min(started), "step {}", i);
                            granted += u64::from(k);
                        }
                        Err(e) => {
                            prop_assert!(model.active() < span, "step {}: refused with tokens", i);
                            prop_assert_eq!(e, AcquireError::WouldWait {
                                wait: Duration::from_nanos(span - model.active()),
                                max_wait: Duration::ZERO,
                            });
                            prop_assert_eq!(snapshot(&pool), before, "step {}: changed", i);
                        }
                    }
                }
                PoolStep::Advance(d) => clock.advance_nanos(d),
                PoolStep::Acquire(_) | PoolStep::Timeout(_) => unreachable!(),
            }
            let p = pool.pools();
            let want = (model.active(), model.waiting());
            prop_assert_eq!((p.active(), p.waiting()), want, "step {}", i);
            prop_assert_eq!(pool.waiters(), 0);
            let ops_tokens = u128::from(granted) * u128::from(npo);
            prop_assert!(ops_tokens <= refilled, "step {}: granted ahead of the refills", i);
            prop_assert_eq!(
                refilled,
                u128::from(p.active()) + u128::from(p.waiting()) + ops_tokens,
                "step {}: tokens not conserved", i
            );
        }
    }

    /// Inline filling, driven by blocking acquires (which nap on the manual
    /// clock), tries, timeouts and stalls: the tokens of the ops started by
    /// any time t never exceed the pre-fill plus the time elapsed, so the ops
    /// started in [0, t] are at most 1 + t / nanos_per_op (tighter than
    /// 1 + t/npo + max_over_active/npo, the rate plus the bank of credit).
    /// Every grant is scheduled at the start plus the tokens taken before it
    /// (never after it started); while no stall happened, the callers keep up,
    /// so no backlog appears and each op starts as soon as its last permit's
    /// tokens are due.
    #[test]
    fn inline_pool_never_exceeds_the_rate(
        rate in pool_rate(),
        burst in prop::sample::select(vec![1.0, 1.1, 1.5, 3.0]),
        start in 0u64..1 << 40,
        steps in pool_rate()
            .prop_flat_map(|r| inline_steps(Rate::new(r).unwrap().nanos_per_op().unwrap()))
    ) {
        let clock = ManualClock::new(start);
        let pool = TokenPool::builder(Rate::new(rate).unwrap())
            .burst_ratio(burst)
            .cached_clock(false)
            .build_with_clock(clock.clone())
            .unwrap();
        let npo = pool.nanos_per_op();
        let mut granted = 0u64; // permits, in the order granted
        let mut stalled = false;
        for (i, step) in steps.iter().enumerate() {
            let grant = match *step {
                PoolStep::Acquire(k) => Some(pool.acquire_n(k).unwrap()),
                PoolStep::Try(k) => pool.try_acquire_n(k).ok(),
                PoolStep::Timeout(t) => {
                    let r = pool.acquire_timeout(1, Duration::from_nanos(t));
                    if let Err(e) = r {
                        let refused = matches!(e, AcquireError::WouldWait { .. });
                        prop_assert!(refused, "step {}: {:?}", i, e);
                    }
                    prop_assert_eq!(pool.waiters(), 0, "step {}: a claim left behind", i);
                    r.ok()
                }
                PoolStep::Advance(d) => {
                    stalled |= d > 0;
                    clock.advance_nanos(d);
                    None
                }
                PoolStep::Refill(_) => unreachable!(),
            };
            if let Some(g) = grant {
                let now = clock.now_nanos();
                prop_assert_eq!(g.started_nanos(), now, "step {}", i);
                let due = start + granted * npo;
                prop_assert_eq!(g.scheduled_nanos(), due.min(now), "step {}: {:?}", i, g);
                granted += u64::from(g.permits());
                // All the tokens there are by now: the pre-fill and the time.
                let t = now - start;
                prop_assert!(
                    u128::from(granted) * u128::from(npo) <= u128::from(npo) + u128::from(t),
                    "step {}: {} ops started by t = {} ns at {} ns per op", i, granted, t, npo
                );
                if !stalled {
                    let last_due = due + (u64::from(g.permits()) - 1) * npo;
                    prop_assert_eq!(now, last_due.max(start), "step {}: {:?}", i, g);
                }
            }
            if !stalled {
                prop_assert_eq!(pool.backlog_nanos(), 0, "step {}: backlog without a stall", i);
            }
            let p = pool.pools();
            prop_assert!(p.active() <= p.max_over_active());
        }
    }
}

/// A step of the cancel property: both pools do it, except `Cancelled`.
#[derive(Debug, Clone)]
enum CancelStep {
    Refill(u64),
    Try(u32),
    Advance(u64),
    /// `reserve(k, None)` on the first pool only, cancelled at once.
    Cancelled(u32),
}

fn cancel_steps(npo: u64) -> impl Strategy<Value = Vec<CancelStep>> {
    let step = prop_oneof![
        4 => prop_oneof![0..npo * 2, 0..npo * 40, Just(npo)].prop_map(CancelStep::Refill),
        3 => (1u32..5).prop_map(CancelStep::Try),
        2 => (0..npo * 10).prop_map(CancelStep::Advance),
        3 => (1u32..8).prop_map(CancelStep::Cancelled),
    ];
    prop::collection::vec(step, 1..150)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A claim queued and withdrawn at once leaves the pool as it was (the
    /// tokens it was handed come back to the active pool; claims larger than
    /// the pool included): a twin pool that never saw it shows the same
    /// pools and gives every later op the same grant. A reservation that
    /// took its tokens at once is not given back (the twin takes them too).
    #[test]
    fn withdrawing_a_queued_claim_is_as_if_it_never_happened(
        rate in pool_rate(),
        burst in prop::sample::select(vec![1.0, 1.1, 1.5, 3.0]),
        start in 0u64..1 << 40,
        steps in pool_rate()
            .prop_flat_map(|r| cancel_steps(Rate::new(r).unwrap().nanos_per_op().unwrap()))
    ) {
        let clock = ManualClock::new(start);
        let build = || {
            TokenPool::builder(Rate::new(rate).unwrap())
                .burst_ratio(burst)
                .filling(Filling::Manual)
                .build_with_clock(clock.clone())
                .unwrap()
        };
        let (pool, twin) = (build(), build());
        let times = |g: &ratekeeper::Grant| {
            (g.scheduled_nanos(), g.ready_nanos(), g.started_nanos(), g.permits())
        };
        for (i, step) in steps.iter().enumerate() {
            match *step {
                CancelStep::Refill(n) => {
                    prop_assert_eq!(pool.refill(n).unwrap(), twin.refill(n).unwrap());
                }
                CancelStep::Try(k) => {
                    let (a, b) = (pool.try_acquire_n(k), twin.try_acquire_n(k));
                    prop_assert_eq!(a.map(|g| times(&g)), b.map(|g| times(&g)), "step {}", i);
                }
                CancelStep::Advance(d) => clock.advance_nanos(d),
                CancelStep::Cancelled(k) => {
                    let before = snapshot(&pool);
                    let g = pool.reserve(k, None).unwrap();
                    if pool.waiters() == 1 {
                        prop_assert!(pool.cancel(&g), "step {}", i);
                        prop_assert!(!pool.cancel(&g), "step {}: twice", i);
                        prop_assert_eq!(snapshot(&pool), before, "step {}", i);
                    } else {
                        prop_assert!(!pool.cancel(&g), "step {}: took its tokens", i);
                        let t = twin.reserve(k, None).unwrap();
                        prop_assert_eq!(times(&t), times(&g), "step {}", i);
                    }
                }
            }
            prop_assert_eq!(snapshot(&pool), snapshot(&twin), "step {}", i);
        }
    }
}

/// A step of the owed-tokens property.
#[derive(Debug, Clone)]
enum OwedStep {
    /// `reserve(k, None)`.
    Reserve(u32),
    /// `try_acquire_n(k)`.
    Try(u32),
    /// `cancel` the queued claim at this index (modulo the queue length), or
    /// of a grant already served or withdrawn if none is queued.
    Cancel(usize),
    /// `refill(n)`, within the run's budget.
    Refill(u64),
    /// Time passes outside the pool.
    Advance(u64),
}

/// Rates of about one op per century down to one per year (op slices from
/// just under 2^62 ns to about 2^55 ns, so a few claims' tokens pass
/// `u64::MAX`), and the usual ones.
fn owed_rate() -> impl Strategy<Value = f64> {
    let slowest = 1e9 / (1u64 << 62) as f64 * 1.0001;
    prop_oneof![
        3 => (0.0f64..2.0).prop_map(move |e| slowest * 10f64.powf(e)),
        1 => pool_rate(),
    ]
}

fn owed_steps(npo: u64) -> impl Strategy<Value = Vec<OwedStep>> {
    let step = prop_oneof![
        5 => (1u32..8).prop_map(OwedStep::Reserve),
        2 => (1u32..4).prop_map(OwedStep::Try),
        3 => any::<usize>().prop_map(OwedStep::Cancel),
        3 => prop_oneof![0..npo.saturating_mul(3), Just(npo)].prop_map(OwedStep::Refill),
        1 => (0..npo / 4).prop_map(OwedStep::Advance),
    ];
    prop::collection::vec(step, 1..150)
}

/// The queue a [`TokenPool`] should hold: each claim's grant, span and
/// remaining tokens, oldest first, and where the tokens went.
#[derive(Default)]
struct OwedModel {
    queue: std::collections::VecDeque<(ratekeeper::Grant, u64, u64)>,
    /// Claims served or withdrawn: cancelling them again is refused.
    dead: Vec<ratekeeper::Grant>,
    /// The pre-fill and every refill.
    refilled: u128,
    /// Tokens taken at once by tries and reservations.
    ops_tokens: u128,
    /// Tokens of completed claims.
    completed: u128,
}

impl OwedModel {
    fn owed(&self) -> u128 {
        self.queue.iter().map(|c| u128::from(c.2)).sum()
    }

    fn held(&self) -> u128 {
        self.queue.iter().map(|c| u128::from(c.1 - c.2)).sum()
    }

    /// Gives the queue, oldest first, the tokens that left the pools since
    /// the last sync and went to no op: what the pool gave its claims.
    /// Returns what was left over (the pool gave more than was owed).
    fn sync(&mut self, pool: &TokenPool<ManualClock>) -> i128 {
        let p = pool.pools();
        let content = u128::from(p.active()) + u128::from(p.waiting());
        let mut given = self.refilled as i128
            - content as i128
            - self.ops_tokens as i128
            - self.completed as i128
            - self.held() as i128;
        if given < 0 {
            return given;
        }
        while given > 0 {
            let Some(front) = self.queue.front_mut() else {
                break;
            };
            let give = (front.2 as i128).min(given) as u64;
            front.2 -= give;
            given -= i128::from(give);
            if front.2 == 0 {
                let (g, span, _) = self.queue.pop_front().unwrap();
                self.completed += u128::from(span);
                self.dead.push(g);
            }
        }
        given
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Issue 16, finding 6: the tokens a pool owes its queued claims are
    /// kept exactly, even where they would pass `u64::MAX`. Through any
    /// sequence of reservations, tries, cancels, refills and time passing,
    /// at rates down to one op per century and from clock reading 0: nothing
    /// panics; the pool's queue is the model's (claims served first come,
    /// first served by the refills, withdrawn tokens handed to the claims
    /// behind); a reservation is refused with `ScheduleExhausted` exactly
    /// when the tokens owed with it would pass `u64::MAX` or the time it
    /// would wait passes the clock's end; each queued claim's ready estimate
    /// is now plus the tokens then owed; and cancelling every claim empties
    /// the queue.
    #[test]
    fn owed_tokens_stay_exact_through_reserve_cancel_and_refill(
        start in prop::sample::select(vec![0u64, 0, 1, 1_000_000]),
        // Half the runs keep the clock where it started: at reading 0 the
        // clock's end is furthest, so only the owed total can refuse.
        frozen in any::<bool>(),
        (rate, steps) in owed_rate().prop_flat_map(|r| {
            let npo = Rate::new(r).unwrap().nanos_per_op().unwrap();
            (Just(r), owed_steps(npo))
        })
    ) {
        let clock = ManualClock::new(start);
        let pool = TokenPool::builder(Rate::new(rate).unwrap())
            .filling(Filling::Manual)
            .build_with_clock(clock.clone())
            .unwrap();
        let npo = pool.nanos_per_op();
        // Refills stay within 2^62 ns in all, so the content never reaches
        // its bound and tokens are conserved exactly.
        let mut budget = 1u64 << 62;
        let mut m = OwedModel { refilled: u128::from(npo), ..OwedModel::default() };
        for (i, step) in steps.iter().enumerate() {
            match *step {
                OwedStep::Reserve(k) | OwedStep::Try(k) => {
                    let try_only = matches!(step, OwedStep::Try(_));
                    let span = u128::from(k) * u128::from(npo);
                    let active = u128::from(pool.active_nanos());
                    let now = clock.now_nanos();
                    let waiters = pool.waiters();
                    let r = if try_only {
                        pool.try_acquire_n(k)
                    } else {
                        pool.reserve(k, None)
                    };
                    let owed = m.owed() + span;
                    let wait = owed.saturating_sub(active);
                    if span > 1 << 62 {
                        let capacity = matches!(r, Err(AcquireError::InsufficientCapacity { .. }));
                        prop_assert!(capacity, "step {}: {:?}", i, r);
                    } else if m.queue.is_empty() && active >= span {
                        r.unwrap();
                        prop_assert_eq!(pool.waiters(), waiters, "step {}: queued", i);
                        m.ops_tokens += span;
                    } else if owed > u128::from(u64::MAX)
                        || u128::from(now) + wait > u128::from(u64::MAX)
                    {
                        prop_assert_eq!(r, Err(AcquireError::ScheduleExhausted), "step {}", i);
                        prop_assert_eq!(pool.waiters(), waiters, "step {}: queued", i);
                    } else if try_only {
                        prop_assert_eq!(
                            r,
                            Err(AcquireError::WouldWait {
                                wait: Duration::from_nanos(wait as u64),
                                max_wait: Duration::ZERO,
                            }),
                            "step {}", i
                        );
                    } else {
                        let g = r.unwrap();
                        // Queued: it cannot be complete, the pool held less.
                        prop_assert_eq!(pool.waiters(), waiters + 1, "step {}", i);
                        m.queue.push_back((g, span as u64, span as u64));
                        let left = m.sync(&pool);
                        prop_assert_eq!(left, 0, "step {}: tokens given past the owed", i);
                        // The ready estimate: the tokens owed then, from now.
                        let owed_after = m.owed() as u64;
                        if m.queue.iter().any(|c| c.0 == g) {
                            let ready = (now + owed_after).max(g.scheduled_nanos());
                            prop_assert_eq!(g.ready_nanos(), ready, "step {}", i);
                        }
                    }
                }
                OwedStep::Cancel(at) => {
                    if m.queue.is_empty() {
                        if let Some(g) = m.dead.get(at % m.dead.len().max(1)) {
                            prop_assert!(!pool.cancel(g), "step {}: not queued", i);
                        }
                    } else {
                        let (g, _, _) = m.queue.remove(at % m.queue.len()).unwrap();
                        prop_assert!(pool.cancel(&g), "step {}", i);
                        m.dead.push(g);
                    }
                }
                OwedStep::Refill(n) => {
                    let n = n.min(budget);
                    budget -= n;
                    pool.refill(n).unwrap();
                    m.refilled += u128::from(n);
                }
                OwedStep::Advance(d) => {
                    if !frozen {
                        clock.advance_nanos(d);
                    }
                }
            }
            let left = m.sync(&pool);
            prop_assert_eq!(left, 0, "step {}: tokens not conserved", i);
            prop_assert_eq!(pool.waiters(), m.queue.len(), "step {}", i);
            prop_assert!(m.owed() <= u128::from(u64::MAX), "step {}", i);
        }
        // Withdrawing every claim empties the queue, and their tokens are
        // back in the pools.
        while let Some((g, _, _)) = m.queue.pop_back() {
            prop_assert!(pool.cancel(&g));
        }
        prop_assert_eq!(pool.waiters(), 0);
        prop_assert_eq!(m.sync(&pool), 0);
    }
}
