//! The shard's table against a model: a `HashMap` from fingerprint to
//! state, driven by the same rule over random inserts, checks, removals,
//! sweeps, evictions and clock advances.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;

use proptest::prelude::*;

use super::*;
use crate::config::{AnyLimiter, LimiterConfig};
use crate::grant::{AcquireError, Grant};
use crate::pacer::decision::PacerRule;
use crate::ManualClock;

/// A step of a script, over keys `0..KEYS`.
#[derive(Debug, Clone)]
enum Op {
    /// Track the key with a fresh state if absent and there is room.
    Insert(u64),
    /// Decide permits for the key (if tracked), waiting at most µs.
    Check(u64, u32, Option<u64>),
    /// Drop the key (a tombstone).
    Remove(u64),
    Sweep,
    Evict,
    Advance(u64),
}

const KEYS: u64 = 96;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..KEYS).prop_map(Op::Insert),
        4 => (0..KEYS, 1u32..3, prop::option::of(prop::sample::select(vec![0u64, 500, 5_000])))
            .prop_map(|(k, p, m)| Op::Check(k, p, m)),
        2 => (0..KEYS).prop_map(Op::Remove),
        1 => Just(Op::Sweep),
        1 => Just(Op::Evict),
        2 => (0u64..3_000).prop_map(Op::Advance),
    ]
}

/// A key's fingerprint under one of the hashers: a seeded hash, every key
/// in one home bucket (and one shard), or keys in two home buckets.
fn fp_of(hasher: u8, key: u64) -> u64 {
    let seeded = foldhash::fast::FixedState::with_seed(7);
    match hasher {
        0 => fingerprint(seeded.hash_one(key)),
        1 => fingerprint((key + 2) << 32),
        _ => fingerprint(((key + 2) << 32) | ((key & 1) << 31)),
    }
}

fn refill_rule() -> impl Rule<Cell = AtomicU64> {
    let config: LimiterConfig = "refill:1000,1ms,capacity=3".parse().unwrap();
    match config.build_with_clock(ManualClock::new(0)).unwrap() {
        AnyLimiter::Refill(r) => r.keyed_rule(),
        other => panic!("not a bucket: {other:?}"),
    }
}

fn spacing_rule() -> impl Rule<Cell = AtomicU64> {
    let config: LimiterConfig = "pacer:1000,1.0".parse().unwrap();
    match config.build_with_clock(ManualClock::new(0)).unwrap() {
        AnyLimiter::Pacer(p) => match p.keyed_rule() {
            PacerRule::Spacing(r) => r,
            other => panic!("not a strict pacer: {other:?}"),
        },
        other => panic!("not a pacer: {other:?}"),
    }
}

/// The model's decision: the rule on a copy of the state, kept.
fn decide_model<R: Rule<Cell = AtomicU64>>(
    rule: &R,
    state: &mut u64,
    permits: u32,
    max: Option<u64>,
    now: u64,
) -> Result<Grant, AcquireError> {
    let cell = AtomicU64::new(*state);
    let got = rule.reserve(&cell, permits, max, now);
    // Ordering: Relaxed; one thread, the cell is local.
    *state = cell.load(Ordering::Relaxed);
    got
}

/// The model's sweep, as the shard's contract states it.
fn sweep_model<R: Rule<Cell = AtomicU64>>(
    rule: &R,
    model: &mut HashMap<u64, u64>,
    quiet: &mut u64,
    cap: usize,
    now: u64,
) {
    if model.len() < cap || now < *quiet {
        return;
    }
    let mut next = u64::MAX;
    model.retain(|_, s| match rule.recovery(&AtomicU64::new(*s), now) {
        Recovery::Fresh | Recovery::Credit => false,
        Recovery::Debt { nanos } => {
            next = next.min(nanos);
            true
        }
        _ => true,
    });
    *quiet = if model.len() >= cap {
        now.saturating_add(next)
    } else {
        0
    };
}

/// The table and the model agree: the same live fingerprints, each once
/// and found by a lookup, with the same states; live ≤ cap.
fn agree<C>(shard: &Shard<C>, model: &HashMap<u64, u64>, cap: usize, state: impl Fn(&C) -> u64) {
    let fps = shard.fingerprints();
    let unique: HashSet<u64> = fps.iter().copied().collect();
    assert_eq!(unique.len(), fps.len(), "a fingerprint twice: {fps:?}");
    assert_eq!(unique, model.keys().copied().collect::<HashSet<_>>());
    assert_eq!(shard.len(), model.len());
    assert!(shard.len() <= cap);
    for (&fp, &s) in model {
        let cell = shard.get(fp).expect("a live key is found");
        assert_eq!(state(cell), s, "state of {fp:#x}");
    }
}

/// Runs `ops` on a shard of `cap` and on the model.
fn run<R: Rule<Cell = AtomicU64>>(rule: &R, cap: usize, hasher: u8, ops: &[Op]) {
    let mut shard = Shard::new(cap, rule);
    let counters = Counters::default();
    let mut model: HashMap<u64, u64> = HashMap::new();
    let (mut now, mut quiet) = (0u64, 0u64);
    // Ordering: Relaxed; one thread owns the shard and the cells.
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    for op in ops {
        match *op {
            Op::Insert(k) => {
                let fp = fp_of(hasher, k);
                if shard.get(fp).is_none() && !shard.is_full() {
                    shard.insert(fp, rule.fresh(now), rule);
                    model.insert(fp, load(&rule.fresh(now)));
                }
            }
            Op::Check(k, permits, max) => {
                let fp = fp_of(hasher, k);
                let max = max.map(|us| us * 1_000);
                let got = shard.get(fp).map(|c| rule.reserve(c, permits, max, now));
                let want = model
                    .get_mut(&fp)
                    .map(|s| decide_model(rule, s, permits, max, now));
                assert_eq!(got, want, "decision on {fp:#x} at {now}");
            }
            Op::Remove(k) => {
                let fp = fp_of(hasher, k);
                assert_eq!(shard.remove(fp), model.remove(&fp).is_some());
            }
            Op::Sweep => {
                shard.sweep(rule, now, &counters);
                sweep_model(rule, &mut model, &mut quiet, cap, now);
            }
            Op::Evict => {
                let before: HashSet<u64> = shard.fingerprints().into_iter().collect();
                let evicted = shard.evict_least_debt(rule, now, &counters);
                let after: HashSet<u64> = shard.fingerprints().into_iter().collect();
                let gone: Vec<u64> = before.difference(&after).copied().collect();
                assert_eq!(gone.len(), usize::from(evicted), "one key per eviction");
                for fp in gone {
                    assert!(model.remove(&fp).is_some());
                }
            }
            Op::Advance(us) => now += us * 1_000,
        }
        agree(&shard, &model, cap, load);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A bucket's and a strict pacer's keys, under a seeded hash and under
    /// hashes that pile every key into one or two home buckets.
    #[test]
    fn the_table_is_the_model(
        cap in 1usize..80,
        hasher in 0u8..3,
        pacer in any::<bool>(),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        if pacer {
            run(&spacing_rule(), cap, hasher, &ops);
        } else {
            run(&refill_rule(), cap, hasher, &ops);
        }
    }
}

/// Churn through tombstones in one home bucket: every live key is still
/// found, and the table never grows past the size for its cap.
#[test]
fn churn_in_one_home_bucket_keeps_every_key_and_the_size() {
    let rule = refill_rule();
    let cap = 50;
    let mut shard = Shard::new(cap, &rule);
    let mut model = HashMap::new();
    // Ordering: Relaxed; one thread owns the shard and the cells.
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    for round in 0..2_000u64 {
        let key = round % 70;
        let fp = fp_of(1, key);
        if shard.remove(fp) {
            model.remove(&fp);
        } else if !shard.is_full() {
            shard.insert(fp, rule.fresh(0), &rule);
            model.insert(fp, load(&rule.fresh(0)));
        }
        agree(&shard, &model, cap, load);
    }
    assert!(shard.table_bytes() <= cap.div_ceil(3) * 64);
}

/// At its cap a table of one-word states costs at most 24 bytes a key
/// (buckets of 64 bytes, at most 3/4 full).
#[test]
fn a_full_table_costs_at_most_24_bytes_a_key() {
    let rule = refill_rule();
    for cap in [1usize, 2, 3, 7, 100, 1_000, 4_097, 100_000] {
        let mut shard = Shard::new(cap, &rule);
        for key in 0..cap as u64 {
            shard.insert(fp_of(0, key), rule.fresh(0), &rule);
        }
        assert_eq!(shard.len(), cap);
        let per_key = shard.table_bytes() as f64 / cap as f64;
        assert!(cap < 100 || per_key <= 24.0, "{cap}: {per_key} bytes a key");
    }
    assert_eq!(std::mem::size_of::<Bucket<AtomicU64>>(), 64);
    // Wider states, as docs/keyed.md states: 128-byte buckets.
    assert_eq!(std::mem::size_of::<Bucket<crate::sync::AtomicU128>>(), 128);
    assert_eq!(
        std::mem::size_of::<Bucket<crate::pacer::decision::Timelines>>(),
        128
    );
}

#[test]
fn the_reserved_fingerprints_move_and_the_rest_stay() {
    assert_eq!(fingerprint(EMPTY), 2);
    assert_eq!(fingerprint(TOMBSTONE), 3);
    for hash in [2, 3, 5, u64::MAX] {
        assert_eq!(fingerprint(hash), hash);
    }
}

#[test]
fn a_table_keeps_a_quarter_of_its_slots_free_of_keys_and_an_eighth_unused() {
    for (slots, live, used) in [(4, 3, 3), (8, 6, 7), (16, 12, 14), (64, 48, 56)] {
        assert_eq!(
            (max_live(slots), max_used(slots)),
            (live, used),
            "{slots} slots"
        );
    }
}
