//! Property tests of the Pacer on a manual clock: for random arrival patterns
//! and every strictness mode, grants never exceed what the mode allows, no slot
//! is handed out twice or lost, refusals change nothing, and the strict and
//! burst modes match a serial model of the dual timeline exactly.

use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::{AcquireError, Clock, ManualClock, Pacer, Rate, RateLimiter, WaitPolicy};

#[derive(Debug, Clone)]
enum Op {
    /// Time passes outside the limiter.
    Advance(u64),
    /// Blocking acquire of n permits.
    Acquire(u32),
    /// Non-blocking try.
    Try(u32),
    /// Acquire with a timeout (in nanoseconds).
    Timeout(u32, u64),
}

fn ops(op_nanos: u64) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0..op_nanos * 6).prop_map(Op::Advance),
        4 => (1u32..4).prop_map(Op::Acquire),
        2 => (1u32..4).prop_map(Op::Try),
        2 => ((1u32..4), 0..op_nanos * 4).prop_map(|(n, t)| Op::Timeout(n, t)),
    ];
    prop::collection::vec(op, 1..120)
}

/// Strictness values covering every mode.
fn strictness() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(0.5),
        Just(0.1),
        Just(1.0),
        Just(1.1),
        Just(1.5),
        Just(3.0),
        (1.0f64..4.0),
    ]
}

#[derive(Debug, Clone, Copy)]
struct Granted {
    scheduled: u64,
    ready: u64,
    started: u64,
    permits: u32,
}

fn run(
    rate: f64,
    s: f64,
    cached: bool,
    start: u64,
    ops: &[Op],
) -> (Pacer<ManualClock>, ManualClock, Vec<Granted>) {
    let clock = ManualClock::new(start);
    let pacer = Pacer::builder(Rate::new(rate).unwrap())
        .strictness(s)
        .cached_clock(cached)
        .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
        .build_with_clock(clock.clone())
        .unwrap();
    let mut grants = Vec::new();
    for op in ops {
        let before = (pacer.next_slot_nanos(), pacer.accumulated_wait_nanos());
        let result = match *op {
            Op::Advance(n) => {
                clock.advance_nanos(n);
                continue;
            }
            Op::Acquire(n) => pacer.acquire_n(n),
            Op::Try(n) => pacer.try_acquire_n(n),
            Op::Timeout(n, t) => pacer.acquire_timeout(n, Duration::from_nanos(t)),
        };
        match result {
            Ok(g) => grants.push(Granted {
                scheduled: g.scheduled_nanos(),
                ready: g.ready_nanos(),
                started: g.started_nanos(),
                permits: g.permits(),
            }),
            Err(AcquireError::WouldWait { wait, max_wait }) => {
                assert!(
                    wait > max_wait,
                    "refused a wait {wait:?} within {max_wait:?}"
                );
                assert_eq!(
                    (pacer.next_slot_nanos(), pacer.accumulated_wait_nanos()),
                    before,
                    "a refusal changed the schedule"
                );
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    (pacer, clock, grants)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn grants_never_exceed_what_the_mode_allows(
        rate in prop_oneof![Just(1000.0), Just(3.0), (1.0f64..1e6)],
        s in strictness(),
        cached in any::<bool>(),
        start in 0u64..1_000_000_000,
        seed_ops in ops(1_000_000),
    ) {
        let op = Rate::new(rate).unwrap().nanos_per_op().unwrap();
        // Scale the arrival pattern to this rate's slice.
        let ops: Vec<Op> = seed_ops.iter().map(|o| match *o {
            Op::Advance(n) => Op::Advance(n * op / 1_000_000),
            Op::Timeout(k, t) => Op::Timeout(k, t * op / 1_000_000),
            ref other => other.clone(),
        }).collect();
        let (pacer, _clock, grants) = run(rate, s, cached, start, &ops);
        let burst = if s == 1.0 {
            op
        } else if s > 1.0 {
            (1e9 / (rate * s)) as u64
        } else {
            0
        };
        let compensating = s > 0.0 && s < 1.0;

        let mut next = start;
        let mut forfeited = 0;
        for (i, g) in grants.iter().enumerate() {
            // No grant goes before its slot.
            prop_assert!(g.ready >= g.scheduled, "grant {i} ready before its slot");
            // Slots tile the timeline: none handed out twice, none lost
            // (compensation may skip forward: that time is forfeited).
            if compensating {
                prop_assert!(g.scheduled >= next, "grant {i}: slot {} reused (next free {next})", g.scheduled);
                forfeited += g.scheduled - next;
            } else {
                prop_assert_eq!(g.scheduled, next, "grant {} slot", i);
            }
            next = g.scheduled + u64::from(g.permits) * op;
            // Strict and burst: consecutive grants are a burst slice apart.
            if i > 0 && burst > 0 {
                let p = grants[i - 1];
                prop_assert!(
                    g.ready >= p.ready + u64::from(p.permits) * burst,
                    "grant {i} at {} closer than {} after {}", g.ready, u64::from(p.permits) * burst, p.ready
                );
            }
        }
        // Over any horizon, grants ready by T never exceed the slots due by T.
        for g in &grants {
            let due_slots = (g.ready - start) / op + 1;
            let permits_by_t: u64 = grants.iter().filter(|h| h.ready <= g.ready).map(|h| u64::from(h.permits)).sum();
            prop_assert!(permits_by_t <= due_slots + 3, "{permits_by_t} permits by {} > {due_slots} slots", g.ready);
        }
        if compensating {
            // Every forfeited nanosecond is accounted in the total wait.
            prop_assert!(pacer.next_slot_nanos() >= next);
            prop_assert_eq!(pacer.accumulated_wait_nanos(), forfeited + (pacer.next_slot_nanos() - next));
        } else {
            prop_assert_eq!(pacer.next_slot_nanos(), next);
            prop_assert_eq!(pacer.accumulated_wait_nanos(), 0);
        }
    }

    /// Strict and burst modes against a serial model of the dual timeline
    /// (G1.5's arithmetic with a fresh clock read per acquire).
    #[test]
    fn dual_modes_match_the_serial_model(
        rate in prop_oneof![Just(1000.0), (1.0f64..1e6)],
        s in prop_oneof![Just(1.0), Just(1.1), (1.0f64..4.0)],
        cached in any::<bool>(),
        start in 0u64..1_000_000_000,
        arrivals in prop::collection::vec((0u64..4_000_000, 1u32..3), 1..80),
    ) {
        let op = Rate::new(rate).unwrap().nanos_per_op().unwrap();
        let ops: Vec<Op> = arrivals.iter().flat_map(|&(gap, n)| [Op::Advance(gap * op / 1_000_000), Op::Acquire(n)]).collect();
        let (_, _, grants) = run(rate, s, cached, start, &ops);
        let burst = if s == 1.0 { op } else { (1e9 / (rate * s)) as u64 };
        // The model.
        let (mut clock, mut ideal, mut scheduled) = (start, start, start);
        let mut k = 0;
        for o in &ops {
            match *o {
                Op::Advance(n) => clock += n,
                Op::Acquire(n) => {
                    let op_ideal = ideal;
                    ideal += u64::from(n) * op;
                    let st = scheduled.max(op_ideal).max(clock);
                    scheduled = st + u64::from(n) * burst;
                    clock = clock.max(st);
                    let g = grants[k];
                    k += 1;
                    prop_assert_eq!((g.scheduled, g.ready, g.started), (op_ideal, st, st));
                }
                _ => unreachable!(),
            }
        }
    }

    /// Average mode with the clock read on every acquire matches G1d exactly:
    /// every op goes at max(slot, now) and reports now - slot when late.
    #[test]
    fn average_mode_matches_the_accumulator(
        start in 0u64..1_000_000_000,
        arrivals in prop::collection::vec((0u64..5_000_000, 1u32..4), 1..80),
    ) {
        let ops: Vec<Op> = arrivals.iter().flat_map(|&(gap, n)| [Op::Advance(gap), Op::Acquire(n)]).collect();
        let (_, _, grants) = run(1000.0, 0.0, false, start, &ops);
        let (mut clock, mut ticks) = (start, start);
        let mut k = 0;
        for o in &ops {
            match *o {
                Op::Advance(n) => clock += n,
                Op::Acquire(n) => {
                    let slot = ticks;
                    ticks += u64::from(n) * 1_000_000;
                    clock = clock.max(slot);
                    let g = grants[k];
                    k += 1;
                    prop_assert_eq!((g.scheduled, g.started, g.started - g.scheduled), (slot, clock, clock - slot));
                }
                _ => unreachable!(),
            }
        }
    }
}

/// The opt-in cached last-seen clock never lets an op go before its slot,
/// and its wait is a lower bound of the true wait.
#[test]
fn cached_clock_wait_is_a_lower_bound() {
    let clock = ManualClock::new(0);
    let pacer = Pacer::builder(Rate::new(1000.0).unwrap())
        .strictness(0.0)
        .cached_clock(true)
        .build_with_clock(clock.clone())
        .unwrap();
    clock.advance_nanos(10_000_000);
    let first = pacer.acquire(); // reads the clock: 10 ms late
    assert_eq!(first.wait_nanos(), 10_000_000);
    clock.advance_nanos(1_000_000);
    let second = pacer.acquire(); // slot 1 ms < last seen 10 ms: no clock read
    assert_eq!(second.scheduled_nanos(), 1_000_000);
    assert_eq!(second.started_nanos(), 10_000_000);
    let true_wait = clock.now_nanos() - second.scheduled_nanos();
    assert!(second.wait_nanos() <= true_wait);
    assert_eq!(second.response_nanos(clock.now_nanos()), true_wait);
}

/// What the cancel property does at one step.
#[derive(Debug, Clone)]
enum Step {
    Advance(u64),
    /// `reserve(n, max_wait)` on both pacers.
    Reserve(u32, Option<u64>),
    /// `reserve(n, max_wait)` on the first pacer only, cancelled at once.
    Cancelled(u32, Option<u64>),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let max_wait = prop_oneof![Just(None), (0u64..4_000_000).prop_map(Some)];
    let step = prop_oneof![
        3 => (0u64..6_000_000).prop_map(Step::Advance),
        4 => ((1u32..4), max_wait.clone()).prop_map(|(n, w)| Step::Reserve(n, w)),
        3 => ((1u32..4), max_wait).prop_map(|(n, w)| Step::Cancelled(n, w)),
    ];
    prop::collection::vec(step, 1..80)
}

fn observed(p: &Pacer<ManualClock>) -> (u64, ratekeeper::WaitStats, u64) {
    (
        p.next_slot_nanos(),
        p.wait_stats(),
        p.accumulated_wait_nanos(),
    )
}

fn times(g: &ratekeeper::Grant) -> (u64, u64, u64, u32) {
    (
        g.scheduled_nanos(),
        g.ready_nanos(),
        g.started_nanos(),
        g.permits(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Reserving and at once cancelling the latest grant leaves the pacer as
    /// if the reservation had never been made: a twin pacer that never saw
    /// it gives every later grant the same times and shows the same state.
    /// (With the clock read on every acquire: the cached last-seen clock is
    /// a hint whose freshness a cancelled reservation may change.) Where the
    /// cancel is refused (a compensation forfeit), the twin reserves too.
    #[test]
    fn cancelling_the_latest_grant_is_as_if_it_never_happened(
        s in strictness(),
        start in 0u64..1_000_000_000,
        steps in steps(),
    ) {
        let clock = ManualClock::new(start);
        let twin_clock = ManualClock::new(start);
        let build = |c: &ManualClock| {
            Pacer::builder(Rate::new(1000.0).unwrap())
                .strictness(s)
                .cached_clock(false)
                .build_with_clock(c.clone())
                .unwrap()
        };
        let (p, twin) = (build(&clock), build(&twin_clock));
        for step in &steps {
            match *step {
                Step::Advance(n) => {
                    clock.advance_nanos(n);
                    twin_clock.advance_nanos(n);
                }
                Step::Reserve(n, w) => {
                    let w = w.map(Duration::from_nanos);
                    let (a, b) = (p.reserve(n, w), twin.reserve(n, w));
                    prop_assert_eq!(a.map(|g| times(&g)), b.map(|g| times(&g)));
                }
                Step::Cancelled(n, w) => {
                    let before = observed(&p);
                    let Ok(g) = p.reserve(n, w.map(Duration::from_nanos)) else {
                        prop_assert_eq!(observed(&p), before);
                        continue;
                    };
                    if p.cancel(&g) && observed(&p) == before {
                        prop_assert!(!p.cancel(&g), "cancelled twice");
                    } else if observed(&p) != before {
                        // A compensation forfeit moved the schedule past
                        // the grant: it is kept for the next caller of its
                        // size (issue 16: it was refused), who takes it
                        // here, as the twin reserves.
                        prop_assert!(s > 0.0 && s < 1.0, "kept: {:?}", g);
                        prop_assert!(!p.cancel(&g), "cancelled twice");
                        let again = p.reserve(n, None).unwrap();
                        prop_assert_eq!(times(&again), times(&g));
                        let t = twin.reserve(n, w.map(Duration::from_nanos)).unwrap();
                        prop_assert_eq!(times(&t), times(&g));
                    } else {
                        // Only a forfeit of compensation mode refuses.
                        prop_assert!(s > 0.0 && s < 1.0, "refused: {:?}", g);
                        let t = twin.reserve(n, w.map(Duration::from_nanos)).unwrap();
                        prop_assert_eq!(times(&t), times(&g));
                    }
                }
            }
            prop_assert_eq!(observed(&p), observed(&twin));
        }
        // Grants made before any cancel are given back newest first, the
        // latest only: a fresh reservation, then an older one goes back to
        // the schedule once it is the latest.
        let a = p.reserve(1, None).unwrap();
        let b = p.reserve(2, None).unwrap();
        let slot = p.next_slot_nanos();
        // (A compensation forfeit may keep b for the next caller instead.)
        if p.cancel(&b) && p.next_slot_nanos() != slot {
            prop_assert_eq!(p.next_slot_nanos(), slot - 2_000_000);
            prop_assert!(p.cancel(&a) || (s > 0.0 && s < 1.0));
        }
        // Out of order, the older one is kept for the next caller of its
        // size instead (issue 16: it was refused), the schedule untouched.
        let a = p.reserve(1, None).unwrap();
        let b = p.reserve(2, None).unwrap();
        let state = observed(&p);
        // (b may be a kept grant taken again, a then the latest.)
        if p.cancel(&a) && observed(&p) == state {
            prop_assert!(!p.cancel(&a), "kept twice");
            let next = p.reserve(1, None).unwrap();
            prop_assert_eq!(next.ready_nanos(), a.ready_nanos());
        }
        let _ = b;
    }
}

/// What the reconfiguration property does at one step.
#[derive(Debug, Clone)]
enum Change {
    Advance(u64),
    /// A caller reserves and holds its grant, waiting (the clock does not
    /// move): later steps run while it waits.
    Hold(u32),
    /// A caller acquires and sleeps until its grant is ready.
    Acquire(u32),
    /// `set_rate` to the first (false) or the second (true) rate.
    SetRate(bool),
    SetStrictness(f64),
    Restart,
    Stop,
    Start,
}

fn changes() -> impl Strategy<Value = Vec<Change>> {
    let step = prop_oneof![
        3 => (0u64..8_000_000).prop_map(Change::Advance),
        4 => (1u32..4).prop_map(Change::Hold),
        3 => (1u32..4).prop_map(Change::Acquire),
        2 => any::<bool>().prop_map(Change::SetRate),
        1 => prop_oneof![Just(0.0), Just(1.0), Just(1.1), Just(2.0)].prop_map(Change::SetStrictness),
        1 => Just(Change::Restart),
        1 => Just(Change::Stop),
        1 => Just(Change::Start),
    ];
    prop::collection::vec(step, 1..100)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Callers hold future slots while the rate (between two rates), the
    /// strictness, `restart`, `stop` and `start` change: no slot is ever
    /// handed out twice, no grant is ready before its slot, and while the
    /// pacer is strict, consecutive grants are at least the earlier one's
    /// slice apart, so no window holds more grants than the faster of the
    /// two rates allows (the old checkpoint-then-reset let a window hold
    /// both the held slots and as many again).
    #[test]
    fn changes_never_re_hand_a_held_slot(
        r1 in prop_oneof![Just(1000.0), 100.0f64..5e4],
        r2 in prop_oneof![Just(2000.0), 100.0f64..5e4],
        strict_only in any::<bool>(),
        start in 0u64..1_000_000_000,
        steps in changes(),
    ) {
        let clock = ManualClock::new(start);
        let p = Pacer::builder(Rate::new(r1).unwrap())
            .strictness(1.0)
            .build_with_clock(clock.clone())
            .unwrap();
        let slice = |r: f64| Rate::new(r).unwrap().nanos_per_op().unwrap();
        // (scheduled, span, ready, strict when reserved, slice when reserved)
        let mut grants: Vec<(u64, u64, u64, bool, u64)> = Vec::new();
        for step in &steps {
            let reserved = match *step {
                Change::Advance(n) => { clock.advance_nanos(n); None }
                Change::Hold(n) => Some(p.reserve(n, None).unwrap()),
                Change::Acquire(n) => Some(p.acquire_n(n).unwrap()),
                Change::SetRate(second) => {
                    p.set_rate(Rate::new(if second { r2 } else { r1 }).unwrap()).unwrap();
                    None
                }
                Change::SetStrictness(s) => {
                    if !strict_only { p.set_strictness(s).unwrap(); }
                    None
                }
                Change::Restart => { p.restart(); None }
                Change::Stop => { p.stop(); None }
                Change::Start => { p.start(); None }
            };
            if let Some(g) = reserved {
                let op = p.nanos_per_op();
                let strict = p.strictness().get() == 1.0;
                grants.push((g.scheduled_nanos(), u64::from(g.permits()) * op, g.ready_nanos(), strict, op));
                prop_assert!(g.ready_nanos() >= g.scheduled_nanos());
            }
        }
        // No slot handed out twice: the slots, in reservation order, never
        // start before the end of an earlier one.
        let mut end = 0;
        for (i, &(at, span, ..)) in grants.iter().enumerate() {
            prop_assert!(at >= end, "grant {} got slot {} inside slots held up to {}", i, at, end);
            end = end.max(at + span);
        }
        // Strict spacing between consecutive grants made while strict.
        for w in grants.windows(2) {
            let ((_, span_a, ready_a, strict_a, _), (_, _, ready_b, strict_b, _)) = (w[0], w[1]);
            if strict_a && strict_b {
                prop_assert!(ready_b >= ready_a + span_a, "{} then {} closer than {}", ready_a, ready_b, span_a);
            }
        }
        // The window bound, with the faster rate: permits ready in
        // [t, t + W) among grants made while strict.
        if strict_only {
            let fast = slice(r1).min(slice(r2));
            let mut ready: Vec<(u64, u64)> = grants.iter().map(|g| (g.2, g.1 / g.4)).collect();
            ready.sort_unstable();
            for (i, &(t, _)) in ready.iter().enumerate() {
                for window in [fast, 3 * fast, 10 * fast] {
                    let permits: u64 = ready[i..].iter().take_while(|g| g.0 < t + window).map(|g| g.1).sum();
                    let allowed = window.div_ceil(fast) + 3; // a grant holds up to 3 permits
                    prop_assert!(permits <= allowed, "{} permits in [{}, +{}) > {}", permits, t, window, allowed);
                }
            }
        }
    }
}
