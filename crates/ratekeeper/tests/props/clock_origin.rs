//! Where a clock's readings start does not matter (issue 16, item 3): every
//! limiter built on a clock reading `B` behaves exactly as one built on a
//! clock reading 0, its grant times shifted by `B`, for `B` at 2^62, at
//! and beyond 2^63, and near the end of the clock's range. Random
//! sequences of acquires (the infallible `acquire()` included), tries,
//! timeouts, reservations, cancels, rate changes and time passing are
//! replayed on both and compared step by step.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::{
    Clock, CycleLimiter, Grant, ManualClock, Pacer, Rate, RateLimiter, RefillLimiter, SmoothBursty,
    SmoothWarmingUp, TokenPool,
};

const SEC: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Pacer,
    PacerHandle,
    Sharded,
    Pool,
    Bursty,
    WarmingUp,
    Refill,
    Cycle,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Advance(u64),
    /// The infallible `acquire()`.
    AcquireOne,
    Acquire(u32),
    Try(u32),
    Timeout(u32, u64),
    /// Reserve, hold the grant.
    Reserve(u32),
    /// Cancel the held grant with this index (modulo their number).
    Cancel(usize),
    /// Rate × this factor.
    SetRate(f64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let n = 1u32..4;
    let op = prop_oneof![
        3 => (0..SEC / 10).prop_map(Op::Advance),
        3 => Just(Op::AcquireOne),
        2 => n.clone().prop_map(Op::Acquire),
        2 => n.clone().prop_map(Op::Try),
        2 => (n.clone(), 0..SEC / 10).prop_map(|(n, t)| Op::Timeout(n, t)),
        2 => n.prop_map(Op::Reserve),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => prop_oneof![Just(0.5), Just(1.0), Just(2.0)].prop_map(Op::SetRate),
    ];
    prop::collection::vec(op, 1..60)
}

/// A limiter, and a way to set its rate to `factor ×` the initial one.
type Subject = (Box<dyn RateLimiter>, Box<dyn Fn(f64) -> bool>);

fn subject(kind: Kind, rate: f64, clock: &ManualClock) -> Subject {
    let r = move |f: f64| Rate::new(rate * f).unwrap();
    let clock = clock.clone();
    match kind {
        Kind::Pacer | Kind::PacerHandle => {
            let p = Arc::new(Pacer::builder(r(1.0)).build_with_clock(clock).unwrap());
            let a = p.clone();
            let set = Box::new(move |f| a.set_rate(r(f)).is_ok());
            match kind {
                Kind::Pacer => (Box::new(p), set),
                _ => (Box::new(ratekeeper::BatchHandle::new(p)), set),
            }
        }
        Kind::Sharded => {
            let p = Arc::new(
                Pacer::builder(r(1.0))
                    .build_sharded_with_clock(2, clock)
                    .unwrap(),
            );
            let a = p.clone();
            (Box::new(p), Box::new(move |f| a.set_rate(r(f)).is_ok()))
        }
        Kind::Pool => {
            let p = Arc::new(TokenPool::builder(r(1.0)).build_with_clock(clock).unwrap());
            let a = p.clone();
            (
                Box::new(p),
                Box::new(move |f| a.configure(r(f), a.burst_ratio()).is_ok()),
            )
        }
        Kind::Bursty => {
            let l = Arc::new(SmoothBursty::builder(rate).build_with_clock(clock).unwrap());
            let a = l.clone();
            (Box::new(l), Box::new(move |f| a.set_rate(rate * f).is_ok()))
        }
        Kind::WarmingUp => {
            let l = Arc::new(
                SmoothWarmingUp::builder(rate)
                    .warmup(Duration::from_secs(1))
                    .build_with_clock(clock)
                    .unwrap(),
            );
            let a = l.clone();
            (Box::new(l), Box::new(move |f| a.set_rate(rate * f).is_ok()))
        }
        Kind::Refill => {
            let config = ratekeeper::bucket::RefillConfig::builder()
                .limit_for_period(1)
                .limit_refresh_period(std::time::Duration::from_nanos(
                    ((SEC as f64 / rate) as i64) as u64,
                ))
                .permit_capacity(10)
                .build()
                .unwrap();
            let l = Arc::new(RefillLimiter::new_with_clock(config, clock));
            let a = l.clone();
            (
                Box::new(l),
                Box::new(move |f| set_limit(&*a, f.ceil() as i64)),
            )
        }
        Kind::Cycle => {
            let config = ratekeeper::bucket::CycleConfig::builder()
                .limit_for_period(10)
                .limit_refresh_period(std::time::Duration::from_nanos(
                    ((10.0 * SEC as f64 / rate) as i64) as u64,
                ))
                .build()
                .unwrap();
            let l = Arc::new(CycleLimiter::new_with_clock(config, clock));
            let a = l.clone();
            (
                Box::new(l),
                Box::new(move |f| set_limit(&*a, (10.0 * f).ceil() as i64)),
            )
        }
    }
}

/// One step's outcome, with times relative to the clock's first reading.
#[derive(Debug, PartialEq)]
enum Outcome {
    Granted(u64, u64, u64, u32),
    Refused(String),
    Cancelled(bool),
    RateSet(bool),
    Clock(u64),
}

fn granted(g: &Grant, base: u64) -> Outcome {
    // Wrapping: a limiter that reports a time before its first reading
    // shows up as a huge value, and as a difference between the runs.
    let at = |t: u64| t.wrapping_sub(base);
    Outcome::Granted(
        at(g.scheduled_nanos()),
        at(g.ready_nanos()),
        at(g.started_nanos()),
        g.permits(),
    )
}

/// Runs `ops` on a `kind` limiter built on a clock reading `base`.
fn run(kind: Kind, rate: f64, base: u64, ops: &[Op]) -> Vec<Outcome> {
    let clock = ManualClock::new(base);
    let (l, set_rate) = subject(kind, rate, &clock);
    let mut held: Vec<Grant> = Vec::new();
    let mut out = Vec::new();
    for &op in ops {
        let result = match op {
            Op::Advance(d) => {
                clock.advance_nanos(d);
                Ok(None)
            }
            Op::AcquireOne => Ok(Some(l.acquire())),
            Op::Acquire(n) => l.acquire_n(n).map(Some),
            Op::Try(n) => l.try_acquire_n(n).map(Some),
            Op::Timeout(n, t) => l.acquire_timeout(n, Duration::from_nanos(t)).map(Some),
            Op::Reserve(n) => l.reserve(n, None).map(|g| {
                held.push(g);
                Some(g)
            }),
            Op::Cancel(i) => {
                if !held.is_empty() {
                    let g = held.swap_remove(i % held.len());
                    out.push(Outcome::Cancelled(l.cancel(&g)));
                }
                Ok(None)
            }
            Op::SetRate(f) => {
                out.push(Outcome::RateSet(set_rate(f)));
                Ok(None)
            }
        };
        match result {
            Ok(Some(g)) => out.push(granted(&g, base)),
            Ok(None) => {}
            Err(e) => out.push(Outcome::Refused(format!("{e:?}"))),
        }
        out.push(Outcome::Clock(clock.now_nanos().wrapping_sub(base)));
    }
    out
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Pacer),
        Just(Kind::PacerHandle),
        Just(Kind::Sharded),
        Just(Kind::Pool),
        Just(Kind::Bursty),
        Just(Kind::WarmingUp),
        Just(Kind::Refill),
        Just(Kind::Cycle),
    ]
}

/// Clock origins far from 0: a case's time stays below 2^40 ns, so each
/// leaves it room before the end of the clock's range.
fn base() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1 << 62),
        Just(1 << 63),
        Just((1 << 63) + 1),
        (1u64 << 63)..(u64::MAX - (1 << 41)),
        Just(u64::MAX - (1 << 41)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_limiter_behaves_the_same_wherever_its_clock_starts(
        kind in kind(),
        rate in prop_oneof![Just(10.0), Just(1000.0), 1.0f64..5000.0],
        base in base(),
        ops in ops(),
    ) {
        let at_zero = run(kind, rate, 0, &ops);
        let shifted = run(kind, rate, base, &ops);
        prop_assert_eq!(at_zero, shifted);
    }
}

/// The case the issue names: a pacer on a clock past 2^63 ns grants
/// through its infallible `acquire()` as one on a clock at 0 does.
#[test]
fn a_pacer_past_two_to_the_sixty_third_acquires() {
    let clock = ManualClock::new((1 << 63) + 5);
    let p = Pacer::builder(Rate::new(1000.0).unwrap())
        .strictness(1.0)
        .build_with_clock(clock.clone())
        .unwrap();
    let a = p.acquire();
    let b = p.acquire();
    assert_eq!(a.ready_nanos(), (1 << 63) + 5);
    assert_eq!(b.ready_nanos() - a.ready_nanos(), 1_000_000);
    assert_eq!(p.next_slot_nanos(), (1 << 63) + 5 + 2_000_000);
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
