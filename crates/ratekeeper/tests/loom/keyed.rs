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
use ratekeeper::keyed::{Keyed, Overflow};
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

/// A hash that sends every `u8` key to one shard and one home bucket, so
/// that keys share buckets and a removed key's slot is the next key's.
#[derive(Debug, Clone, Copy, Default)]
struct Pile;

#[derive(Debug, Default)]
struct PileHasher(u64);

impl std::hash::Hasher for PileHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)) + (2 << 32);
        }
    }
    fn write_u8(&mut self, key: u8) {
        self.0 = (u64::from(key) + 2) << 32;
    }
}

impl std::hash::BuildHasher for Pile {
    type Hasher = PileHasher;
    fn build_hasher(&self) -> PileHasher {
        PileHasher::default()
    }
}

/// A call on a key.
type KeyCall = (u8, Call);

/// A piled map of `cap` keys in one shard, with `tracked` keys granted one
/// permit each before the calls.
fn piled(
    text: &str,
    cap: usize,
    overflow: Overflow,
    tracked: &[u8],
) -> Keyed<u8, ManualClock, Pile> {
    let keyed = Keyed::builder()
        .max_keys(cap)
        .shards(1)
        .overflow(overflow)
        .build_with_hasher(&text.parse().unwrap(), ManualClock::new(0), Pile)
        .unwrap();
    for key in tracked {
        keyed.reserve(key, 1, None).unwrap();
    }
    keyed
}

fn call_on(keyed: &Keyed<u8, ManualClock, Pile>, (key, (permits, max)): KeyCall) -> Got {
    keyed
        .reserve(&key, permits, max.map(Duration::from_micros))
        .map(|g| (g.scheduled_nanos(), g.ready_nanos()))
        .map_err(|e| e.to_string())
}

/// Results by call, then each key's (tracked, recovery), then live keys.
type Outcome = (Vec<Got>, Vec<Option<Recovery>>, u64);

fn outcome(keyed: &Keyed<u8, ManualClock, Pile>, got: Vec<Got>, keys: &[u8]) -> Outcome {
    let states = keys.iter().map(|k| keyed.recovery(k)).collect();
    (got, states, keyed.metrics().live_keys)
}

/// Two calls on keys of a piled map at once: every interleaving ends as a
/// serial order does, and live keys are the keys found.
fn piled_race(
    text: &'static str,
    cap: usize,
    overflow: Overflow,
    tracked: &'static [u8],
    calls: [KeyCall; 2],
) {
    loom::model(move || {
        let mut keys: Vec<u8> = tracked
            .iter()
            .copied()
            .chain(calls.iter().map(|c| c.0))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let expected: Vec<Outcome> = [[0, 1], [1, 0]]
            .iter()
            .map(|order| {
                let k = piled(text, cap, overflow, tracked);
                let mut got = vec![Ok((0, 0)); 2];
                for &i in order {
                    got[i] = call_on(&k, calls[i]);
                }
                outcome(&k, got, &keys)
            })
            .collect();
        let k = Arc::new(piled(text, cap, overflow, tracked));
        let handles: Vec<_> = calls
            .iter()
            .map(|&c| {
                let k = Arc::clone(&k);
                thread::spawn(move || call_on(&k, c))
            })
            .collect();
        let got: Vec<Got> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let seen = outcome(&k, got, &keys);
        let found = seen.1.iter().filter(|r| r.is_some()).count() as u64;
        assert_eq!(seen.2, found, "live keys are the keys found");
        assert!(
            expected.contains(&seen),
            "{seen:?} is no serial order's: {expected:?}"
        );
    });
}

#[test]
fn a_new_key_inserted_and_checked_at_once_is_one_key() {
    // A bucket of one permit: of two first requests exactly one is granted,
    // and the key is tracked once.
    piled_race(
        "refill:1000,1ms,capacity=1",
        4,
        Overflow::DenyNew,
        &[],
        [(0, (1, Some(0))), (0, (1, Some(0)))],
    );
}

#[test]
fn a_check_racing_an_eviction_never_advances_the_next_key() {
    // Key 0 holds debt and fills the map; key 1 evicts it and takes its
    // slot. A check of key 0 is decided on key 0's state or, once it is
    // gone, as a new key: key 1's state only ever holds key 1's grant.
    piled_race(
        "pacer:1000,1.0",
        1,
        Overflow::EvictLeastDebt,
        &[0],
        [(0, (1, None)), (1, (1, None))],
    );
}
