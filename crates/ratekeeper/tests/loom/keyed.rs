//! Loom models of the keyed limiter's per-key rules (`src/pacer/decision.rs`,
//! `src/resilience4j/keyed.rs`): two threads deciding on one key's compact
//! state at once. The claim: every interleaving ends as some serial order
//! of the same two calls does (each call's result, and the key's state as
//! its recovery tells it), except the burst-ratio rule's documented race,
//! where a bounded refusal may forfeit a slot: fewer grants, never more.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p ratekeeper --test loom keyed::`

use std::sync::Arc;
use std::time::Duration;

use loom::thread;
use ratekeeper::keyed::Keyed;
use ratekeeper::{ManualClock, Recovery};

/// A call: permits and the most it may wait (µs; `None`: any wait).
type Call = (u32, Option<u64>);

/// What a call got: its slot and ready time, or the refusal's text.
type Got = Result<(u64, u64), String>;

fn keyed(text: &str) -> Arc<Keyed<u8, ManualClock>> {
    let keyed = Keyed::builder()
        .max_keys(4)
        .shards(1)
        .build_with_clock(&text.parse().unwrap(), ManualClock::new(0))
        .unwrap();
    // Tracked before the threads start (the insert takes the write lock).
    keyed.reserve(&0, 1, None).unwrap();
    Arc::new(keyed)
}

fn call(keyed: &Keyed<u8, ManualClock>, (permits, max): Call) -> Got {
    keyed
        .reserve(&0, permits, max.map(Duration::from_micros))
        .map(|g| (g.scheduled_nanos(), g.ready_nanos()))
        .map_err(|e| e.to_string())
}

/// The two serial orders' outcomes: results by call, and the state after.
fn serial(text: &str, calls: [Call; 2]) -> Vec<(Vec<Got>, Option<Recovery>)> {
    [[0, 1], [1, 0]]
        .iter()
        .map(|order| {
            let k = keyed(text);
            let mut got = vec![Ok((0, 0)); 2];
            for &i in order {
                got[i] = call(&k, calls[i]);
            }
            (got, k.recovery(&0))
        })
        .collect()
}

/// Both calls at once, on every interleaving.
fn concurrent(
    text: &'static str,
    calls: [Call; 2],
    check: fn(&[Got], Option<Recovery>, &[(Vec<Got>, Option<Recovery>)]),
) {
    loom::model(move || {
        let expected = serial(text, calls);
        let k = keyed(text);
        let handles: Vec<_> = calls
            .iter()
            .map(|&c| {
                let k = Arc::clone(&k);
                thread::spawn(move || call(&k, c))
            })
            .collect();
        let got: Vec<Got> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        check(&got, k.recovery(&0), &expected);
    });
}

fn linearizable(got: &[Got], state: Option<Recovery>, expected: &[(Vec<Got>, Option<Recovery>)]) {
    let outcome = (got.to_vec(), state);
    assert!(
        expected.contains(&outcome),
        "{outcome:?} is no serial order's: {expected:?}"
    );
}

#[test]
fn bucket_calls_are_linearizable() {
    // 1 a millisecond, a bucket of 2 (1 left after tracking the key).
    concurrent(
        "refill:1000,1ms,capacity=2",
        [(1, Some(0)), (1, Some(1000))],
        linearizable,
    );
}

#[test]
fn strict_pacer_calls_are_linearizable() {
    concurrent("pacer:1000,1.0", [(1, None), (1, Some(1000))], linearizable);
}

#[test]
fn average_pacer_calls_are_linearizable() {
    concurrent("pacer:1000,0", [(2, Some(2000)), (1, None)], linearizable);
}

#[test]
fn smooth_calls_are_linearizable() {
    // Guava's bursty limiter, 1000/s storing up to 5 ms: one 128-bit word.
    concurrent(
        "bursty:1000,0.005",
        [(1, Some(500)), (2, None)],
        linearizable,
    );
}

#[test]
fn cycle_calls_are_linearizable() {
    // 2 permits a millisecond (1 left after tracking the key).
    concurrent("cycle:2000,1ms", [(1, Some(0)), (2, None)], linearizable);
}

#[test]
fn burst_ratio_calls_never_grant_more_than_a_serial_order() {
    concurrent(
        "pacer:1000,2",
        [(1, Some(1000)), (1, None)],
        |got, _, expected| {
            let granted = |g: &[Got]| g.iter().filter(|r| r.is_ok()).count();
            let most = expected.iter().map(|(g, _)| granted(g)).max().unwrap();
            assert!(granted(got) <= most, "{got:?} against {expected:?}");
            let slots: Vec<u64> = got.iter().flatten().map(|&(slot, _)| slot).collect();
            assert!(
                slots.len() < 2 || slots[0] != slots[1],
                "one slot twice: {got:?}"
            );
            for &(slot, ready) in got.iter().flatten() {
                assert!(ready >= slot);
            }
        },
    );
}
