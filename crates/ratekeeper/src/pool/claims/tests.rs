//! The claim queue's ids and tombstones.

use super::*;
use proptest::prelude::*;

fn starting_at(next: u64) -> Claims {
    Claims {
        next,
        ..Claims::new()
    }
}

/// Every queued claim is found by its id, ids are unique, and the
/// count is right; `ids` are the claims the caller believes queued.
fn check(claims: &Claims, ids: &[u32]) {
    assert_eq!(claims.len(), ids.len());
    for &id in ids {
        let pos = claims.find(id).unwrap_or_else(|| panic!("{id} lost"));
        assert_eq!(claim_id(claims[pos].seq), id);
    }
    let seen: Vec<u32> = claims.iter().map(|c| claim_id(c.seq)).collect();
    assert_eq!(seen, ids);
}

#[test]
fn ids_wrap_past_u32_max_skipping_zero() {
    let mut claims = starting_at(ID_SPAN - 2);
    let ids: Vec<u32> = (0..4).map(|_| claims.push(1, (0, 0, 1))).collect();
    assert_eq!(ids, [u32::MAX - 1, u32::MAX, 1, 2]);
    check(&claims, &ids);
    let removed = claims.remove(claims.find(u32::MAX).unwrap()).unwrap();
    assert_eq!(claim_id(removed.seq), u32::MAX);
    check(&claims, &[u32::MAX - 1, 1, 2]);
    assert_eq!(claims.find(u32::MAX), None, "a tombstone is not found");
    assert_eq!(claims.find(0), None);
    assert_eq!(claims.find(3), None);
}

#[test]
fn past_a_span_of_two_to_the_32_ids_still_queued_are_skipped() {
    let mut claims = starting_at(5);
    assert_eq!(claims.push(1, (0, 0, 1)), 5);
    // Four billion claims later, the first still waits.
    claims.next = 5 + ID_SPAN;
    assert_eq!(claims.push(1, (0, 0, 1)), 6, "5 is still queued");
    assert_eq!(claims.push(1, (0, 0, 1)), 7);
    check(&claims, &[5, 6, 7]);
    claims.remove(claims.find(6).unwrap());
    check(&claims, &[5, 7]);
    claims.pop_front();
    check(&claims, &[7]);
}

#[test]
fn tombstones_leave_with_the_front_or_when_they_outnumber_claims() {
    let mut claims = Claims::new();
    let ids: Vec<u32> = (0..100).map(|_| claims.push(1, (0, 0, 1))).collect();
    for &id in &ids[1..50] {
        claims.remove(claims.find(id).unwrap());
    }
    check(&claims, &[&ids[..1], &ids[50..]].concat());
    // 49 tombstones against 51 claims: none compacted.
    assert_eq!(claims.entries.len(), 100);
    claims.pop_front();
    assert_eq!(
        claims.entries.len(),
        50,
        "the tombstones behind it left too"
    );
    for &id in &ids[51..99] {
        claims.remove(claims.find(id).unwrap());
    }
    check(&claims, &[ids[50], ids[99]]);
    // The 34th cancel made 34 tombstones against 16 claims: compacted;
    // 14 tombstones since, against 2.
    assert_eq!(claims.entries.len(), 2 + 14, "compacted once");
}

/// Tombstones queued behind the front.
fn tombstones(claims: &Claims) -> usize {
    claims.entries.len() - claims.len()
}

proptest! {
    /// Claims joining (one or a burst at a time), served from the front
    /// and cancelled anywhere, from any start: each queued claim is found
    /// by its id, in order. Cancels outweigh the rest, so tombstones pile
    /// up behind the front and past the compaction threshold: a cancel
    /// leaves a tombstone while tombstones are at most 16 more than the
    /// claims, and clears them all at once on the one that would make
    /// them more.
    #[test]
    fn every_queued_claim_is_found_by_its_id(
        start in prop_oneof![0u64..10, (ID_SPAN - 8)..(ID_SPAN + 8), any::<u32>().prop_map(u64::from)],
        ops in prop::collection::vec((0u8..8, any::<prop::sample::Index>()), 1..300),
    ) {
        let mut claims = starting_at(start);
        let mut ids: Vec<u32> = Vec::new();
        for (op, at) in ops {
            match op {
                0 => ids.push(claims.push(1, (0, 0, 1))),
                1 => {
                    for _ in 0..=at.index(40) {
                        ids.push(claims.push(1, (0, 0, 1)));
                    }
                }
                2 => {
                    let popped = claims.pop_front().map(|c| claim_id(c.seq));
                    prop_assert_eq!(popped, (!ids.is_empty()).then(|| ids.remove(0)));
                }
                _ if !ids.is_empty() => {
                    let i = at.index(ids.len());
                    let id = ids.remove(i);
                    let (before, held) = (tombstones(&claims), claims.entries.len());
                    let pos = claims.find(id);
                    prop_assert!(pos.is_some());
                    prop_assert!(claims.remove(pos.unwrap()).is_some());
                    prop_assert_eq!(claims.find(id), None);
                    if i > 0 {
                        // Behind the front: at most 16 tombstones over
                        // the claims left, and compacted only to keep
                        // to that, all at once.
                        prop_assert!(tombstones(&claims) <= claims.len() + 16);
                        if claims.entries.len() != held {
                            prop_assert_eq!(tombstones(&claims), 0, "all at once");
                            prop_assert!(before + 1 > claims.len() + 16, "compacted early");
                        }
                    }
                }
                _ => {}
            }
            check(&claims, &ids);
            prop_assert!(!claims.entries.front().is_some_and(|c| c.gone), "a tombstone in front");
        }
    }
}
