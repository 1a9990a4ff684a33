use super::Handoff;
use crate::limiter::Grant;

const TAG: u32 = 1 << 31;

fn grant(at: u64) -> Grant {
    Grant::new(at, at, 0, 1).with_claim(TAG)
}

#[test]
fn a_stashed_grant_goes_once_to_the_next_caller_of_its_size() {
    let h = Handoff::new(TAG);
    assert!(h.is_empty());
    assert!(h.cancel(&grant(20), 5, |_| true, || false));
    assert!(!h.cancel(&grant(20), 5, |_| true, || false), "twice");
    assert!(h.take(2, None, 6).is_none(), "another size");
    assert!(h.take(1, Some(10), 6).is_none(), "too far");
    let g = h.take(1, None, 6).expect("stashed");
    assert_eq!((g.ready_nanos(), g.started_nanos()), (20, 6));
    assert!(h.take(1, None, 6).is_none(), "issued once");
    assert!(
        !h.cancel(&grant(20), 7, |_| true, || false),
        "the first holder again"
    );
    assert!(h.cancel(&g, 7, |_| true, || false), "its new holder");
    assert!(!h.cancel(&g, 7, |_| true, || false));
    assert!(h.take(1, None, 21).is_none(), "expired");
    assert!(h.is_empty());
}

#[test]
fn a_grant_under_an_issued_id_but_another_slot_is_refused() {
    let h = Handoff::new(TAG);
    assert!(h.cancel(&grant(20), 5, |_| true, || false));
    let g = h.take(1, None, 6).expect("stashed");
    let id = g.claim().expect("a handoff id");
    // The id, with one of the two times moved: not the grant issued.
    for (scheduled, ready) in [(20, 21), (19, 20)] {
        let other = Grant::new(scheduled, ready, 6, 1).with_claim(id);
        assert!(!h.cancel(&other, 7, |_| true, || false), "{other:?}");
    }
    assert!(h.cancel(&g, 7, |_| true, || false), "the grant issued");
}

#[test]
fn a_part_of_a_known_grant_is_refused() {
    // A lease of 3 given back, then its first grant of 1 (same times and
    // tag): not kept, it was given back with the lease.
    let h = Handoff::new(TAG);
    let lease = Grant::new(30, 30, 0, 3).with_claim(TAG);
    assert!(h.cancel(&lease, 0, |_| true, || true));
    let part = Grant::new(30, 30, 0, 1).with_claim(TAG);
    assert!(!h.cancel(&part, 0, |_| true, || false));
    assert!(h.is_empty());
    // Kept, then handed on: a part of the issued grant does not put the
    // whole back.
    let lease = Grant::new(40, 40, 0, 3).with_claim(TAG);
    assert!(h.cancel(&lease, 0, |_| true, || false));
    let g = h.take(3, None, 1).expect("kept");
    assert!(!h.cancel(&g.with_permits(1), 2, |_| true, || false));
    assert!(h.is_empty(), "still issued");
    assert!(h.cancel(&g, 2, |_| true, || false));
    assert!(!h.is_empty());
}

#[test]
fn given_back_grants_old_grants_and_resets_are_refused() {
    let h = Handoff::new(TAG | 1);
    let age = |t: u32| u32::from(t == TAG);
    let since = |r: u32| Handoff::issued_since(TAG, r, age);
    assert!(h.cancel(&grant(30), 0, |_| true, || true));
    assert!(h.is_empty(), "given back to the schedule");
    assert!(
        !h.cancel(&grant(30), 0, |_| true, || false),
        "already given back"
    );
    assert!(
        !h.cancel(&grant(40), 0, since, || false),
        "before the reset"
    );
    assert!(h.cancel(&grant(50), 0, |_| true, || false));
    h.reset(TAG | 1);
    assert!(h.is_empty() && h.take(1, None, 0).is_none());
    assert!(
        !h.cancel(&grant(1), 2, |_| true, || true),
        "ready time passed"
    );
    assert!(
        !h.cancel(&Grant::new(9, 9, 0, 1), 0, |_| true, || true),
        "no claim"
    );
}

#[test]
fn ids_wrap_after_two_to_the_31_minus_one_hand_outs() {
    // Ids run 1 ..= 2^31 - 1 and wrap to 1: never 0 (no claim) and
    // never with the top bit set (a limiter's tag). An id handed out
    // again while its first slot is still ahead leaves that slot to
    // expire unused; the new holder can give theirs back all along.
    let h = Handoff::new(TAG);
    let hand_out = |at: u64| {
        assert!(h.cancel(&grant(at), 0, |_| true, || false));
        h.take(1, None, 0).expect("stashed")
    };
    let a = hand_out(100);
    assert_eq!(a.claim(), Some(1));
    h.skip_ids_to(TAG - 1);
    let b = hand_out(200);
    assert_eq!(b.claim(), Some(TAG - 1), "the last id");
    let c = hand_out(300);
    assert_eq!(c.claim(), Some(1), "wrapped, skipping 0 and 2^31");
    assert!(!h.cancel(&a, 50, |_| true, || false), "id 1 is c's now");
    // a's slot expires (at 100) before c's holder gives c back.
    assert!(h.cancel(&c, 150, |_| true, || false), "c's holder");
    let again = h.take(1, None, 160).expect("c stashed again");
    assert_eq!((again.ready_nanos(), again.claim()), (300, Some(2)));
    assert!(h.cancel(&b, 160, |_| true, || false), "b's holder");
    assert!(h.cancel(&again, 170, |_| true, || false));
    assert!(h.take(1, None, 250).is_some_and(|g| g.ready_nanos() == 300));
    assert!(h.take(1, None, 250).is_none(), "b expired at 200");
}

/// The handoff as it was first written (entries in a list, linear
/// scans): the reference the indexed one must answer as.
#[derive(Default)]
struct Model {
    list: Vec<(Grant, Option<u32>)>, // the grant as first cancelled; Some(id) while issued
    stashed: Vec<bool>,
    next_id: u32,
}

impl Model {
    fn expire(&mut self, now: u64) {
        let keep: Vec<bool> = self
            .list
            .iter()
            .map(|(g, _)| g.ready_nanos() >= now)
            .collect();
        let mut k = keep.iter();
        self.list.retain(|_| *k.next().unwrap_or(&true));
        let mut k = keep.iter();
        self.stashed.retain(|_| *k.next().unwrap_or(&true));
    }

    fn knowing(&self, g: &Grant) -> Option<usize> {
        let times = |a: &Grant| (a.scheduled_nanos(), a.ready_nanos());
        self.list.iter().position(|(e, issued)| {
            (times(e) == times(g) && e.claim() == g.claim())
                || (times(e) == times(g)
                    && e.permits() == g.permits()
                    && issued.is_some()
                    && *issued == g.claim())
        })
    }

    fn cancel(&mut self, g: &Grant, now: u64, stashable: bool, give_back: bool) -> bool {
        if g.permits() == 0 || g.ready_nanos() < now {
            return false;
        }
        self.expire(now);
        if let Some(i) = self.knowing(g) {
            if g.claim().is_some() && self.list[i].1 == g.claim() {
                self.list[i].1 = None;
                self.stashed[i] = true;
                return true;
            }
            return false;
        }
        if g.claim().is_none_or(|c| c < TAG) {
            return false;
        }
        if give_back {
            self.list.push((*g, None));
            self.stashed.push(false);
        } else if stashable {
            self.list.push((*g, None));
            self.stashed.push(true);
        } else {
            return false;
        }
        true
    }

    fn take(&mut self, permits: u32, max_wait: Option<u64>, now: u64) -> Option<Grant> {
        if !self.stashed.contains(&true) {
            return None;
        }
        self.expire(now);
        let limit = max_wait.map_or(u64::MAX, |m| now.saturating_add(m));
        let i = (0..self.list.len())
            .filter(|&i| self.stashed[i])
            .filter(|&i| {
                self.list[i].0.permits() == permits && self.list[i].0.ready_nanos() <= limit
            })
            .min_by_key(|&i| self.list[i].0.ready_nanos())?;
        self.next_id += 1;
        self.stashed[i] = false;
        self.list[i].1 = Some(self.next_id);
        Some(self.list[i].0.started_at(now).with_claim(self.next_id))
    }
}

#[derive(Debug, Clone)]
enum Op {
    Cancel {
        pick: usize,
        stashable: bool,
        give_back: bool,
    },
    CancelNew {
        at: u64,
        permits: u32,
        stashable: bool,
        give_back: bool,
    },
    Take {
        permits: u32,
        max_wait: Option<u64>,
    },
    Advance(u64),
    Knows(usize),
    Reset,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<usize>(), any::<bool>(), any::<bool>()).prop_map(|(pick, stashable, give_back)| {
            Op::Cancel {
                pick,
                stashable,
                give_back,
            }
        }),
        (0u64..40, 1u32..4, any::<bool>(), any::<bool>()).prop_map(
            |(at, permits, stashable, give_back)| {
                Op::CancelNew {
                    at,
                    permits,
                    stashable,
                    give_back,
                }
            }
        ),
        (1u32..4, proptest::option::of(0u64..20))
            .prop_map(|(permits, max_wait)| Op::Take { permits, max_wait }),
        (0u64..6).prop_map(Op::Advance),
        any::<usize>().prop_map(Op::Knows),
        Just(Op::Reset),
    ]
}

proptest::proptest! {
    /// Any sequence of cancels (of new grants, of grants seen before,
    /// whole or in part), hand-outs, clock steps and resets: the
    /// indexed handoff answers as the list it replaced.
    #[test]
    fn answers_as_the_list_did(ops in proptest::collection::vec(op(), 1..200)) {
        let (h, mut model, mut now) = (Handoff::new(TAG), Model::default(), 0u64);
        let mut seen: Vec<Grant> = Vec::new();
        for op in ops {
            match op {
                Op::Cancel { pick, stashable, give_back } if !seen.is_empty() => {
                    let mut g = seen[pick % seen.len()];
                    if pick % 3 == 0 && g.permits() > 1 {
                        g = g.with_permits(1); // a part of it
                    }
                    let want = model.cancel(&g, now, stashable, give_back);
                    proptest::prop_assert_eq!(h.cancel(&g, now, |_| stashable, || give_back), want);
                }
                Op::Cancel { .. } => {}
                Op::CancelNew { at, permits, stashable, give_back } => {
                    let g = Grant::new(at, at, 0, permits).with_claim(TAG);
                    seen.push(g);
                    let want = model.cancel(&g, now, stashable, give_back);
                    proptest::prop_assert_eq!(h.cancel(&g, now, |_| stashable, || give_back), want);
                }
                Op::Take { permits, max_wait } => {
                    let want = model.take(permits, max_wait, now);
                    let got = h.take(permits, max_wait, now);
                    proptest::prop_assert_eq!(got, want);
                    seen.extend(got);
                }
                Op::Advance(d) => now += d,
                Op::Knows(pick) if !seen.is_empty() => {
                    let g = seen[pick % seen.len()];
                    proptest::prop_assert_eq!(h.knows(&g), model.knowing(&g).is_some());
                }
                Op::Knows(_) => {}
                Op::Reset => {
                    h.reset(TAG);
                    let next_id = model.next_id;
                    model = Model { next_id, ..Model::default() };
                }
            }
            proptest::prop_assert_eq!(h.is_empty(), !model.stashed.contains(&true));
        }
    }
}
