//! Loom models of the Pacer's lock-free paths and its waiting room, and of
//! the token pool's waiting: lock-free takers racing fills that serve
//! queued claims, waiters parked until a fill completes their claim, and
//! the filler thread parking while its pool is idle; in `smooth`, of
//! Guava's smooth limiters; in `keyed`, of the keyed limiter's per-key
//! rules.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p ratekeeper --test loom`
//! (add a filter such as `smooth::` to run some of them).
#![cfg(loom)]

mod keyed;
mod smooth;

use std::sync::Arc;
use std::time::Duration;

use loom::thread;
use ratekeeper::pool::{Filling, TokenPool};
use ratekeeper::{Clock, Grant, ManualClock, Pacer, Rate, RateLimiter, WaitPolicy};

const OP: u64 = 1_000_000; // 1000 ops/s

fn pacer(strictness: f64, clock: &ManualClock) -> Arc<Pacer<ManualClock>> {
    Arc::new(
        Pacer::builder(Rate::new(1000.0).unwrap())
            .strictness(strictness)
            .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
            .build_with_clock(clock.clone())
            .unwrap(),
    )
}

/// Slots handed out concurrently are unique and contiguous, none lost, and no
/// grant is ready before its slot; the last-seen clock is exercised because a
/// third thread moves time forward.
fn slots_are_unique(strictness: f64, threads: usize) {
    loom::model(move || {
        let clock = ManualClock::new(0);
        let p = pacer(strictness, &clock);
        let mut handles = Vec::new();
        for _ in 0..threads {
            let p = p.clone();
            handles.push(thread::spawn(move || p.reserve(1, None).unwrap()));
        }
        let ticker = {
            let clock = clock.clone();
            thread::spawn(move || clock.advance_nanos(3 * OP))
        };
        let mut grants: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        ticker.join().unwrap();
        grants.sort_by_key(|g| g.scheduled_nanos());
        for (i, g) in grants.iter().enumerate() {
            assert_eq!(
                g.scheduled_nanos(),
                i as u64 * OP,
                "slot handed out twice or lost"
            );
            assert!(g.ready_nanos() >= g.scheduled_nanos());
            assert!(
                g.started_nanos() <= clock.now_nanos(),
                "a start later than the present"
            );
        }
        assert_eq!(p.next_slot_nanos(), threads as u64 * OP);
        if strictness >= 1.0 {
            // Grants off their slot are a burst slice apart on the actual timeline.
            let burst = if strictness == 1.0 {
                OP
            } else {
                (1e9 / (1000.0 * strictness)) as u64
            };
            let mut off: Vec<u64> = grants
                .iter()
                .filter(|g| g.ready_nanos() > g.scheduled_nanos())
                .map(|g| g.ready_nanos())
                .collect();
            off.sort_unstable();
            for w in off.windows(2) {
                assert!(
                    w[1] - w[0] >= burst,
                    "{} and {} closer than {burst}",
                    w[0],
                    w[1]
                );
            }
        }
    });
}

#[test]
fn average_two_threads() {
    slots_are_unique(0.0, 2);
}

#[test]
fn average_three_threads() {
    slots_are_unique(0.0, 3);
}

#[test]
fn strict_two_threads() {
    slots_are_unique(1.0, 2);
}

#[test]
fn burst_two_threads() {
    slots_are_unique(1.5, 2);
}

/// Strict and burst modes read the clock on every reservation: an op's start
/// is never earlier than the present its caller saw before calling, even when
/// a racing op has stored a later reading than both timelines in the shared
/// last-seen clock (which a cached shortcut would take as the present), or
/// when `actual` is ahead of that stored reading but behind the present (where
/// the stale reading would let the op go at `actual`, forgetting its
/// lateness).
#[test]
fn dual_start_is_never_before_the_callers_present() {
    for strictness in [1.0, 1.5] {
        loom::model(move || {
            let clock = ManualClock::new(0);
            let p = pacer(strictness, &clock);
            let other = {
                let p = p.clone();
                thread::spawn(move || p.reserve(1, None).unwrap())
            };
            clock.advance_nanos(2 * OP);
            clock.advance_nanos(2 * OP);
            let present = clock.now_nanos();
            let g = p.reserve(1, None).unwrap();
            assert!(
                g.ready_nanos() >= present,
                "started at {} before the caller's present {present}",
                g.ready_nanos()
            );
            let o = other.join().unwrap();
            assert!(o.ready_nanos() >= o.scheduled_nanos());
        });
    }
}

/// The waiting room: a caller whose grant has to wait becomes the sleeper;
/// one that comes meanwhile parks without a slot and is handed over to when
/// the sleeper is let go. No interleaving loses the hand-over (loom's park
/// has no timeout, so a lost one would deadlock the model), and every
/// grant gets its own slot.
#[test]
fn room_hands_over_to_a_parked_caller() {
    for strictness in [0.0, 1.0] {
        loom::model(move || {
            let clock = ManualClock::new(0);
            let p = pacer(strictness, &clock);
            let other = {
                let p = p.clone();
                thread::spawn(move || p.acquire().scheduled_nanos())
            };
            let a = p.acquire().scheduled_nanos();
            let b = p.acquire().scheduled_nanos();
            let c = other.join().unwrap();
            let mut slots = [a, b, c];
            slots.sort_unstable();
            assert_eq!(slots, [0, OP, 2 * OP], "a slot lost or handed out twice");
            assert_eq!(p.next_slot_nanos(), 3 * OP);
        });
    }
}

/// Bounded reservations racing a plain one: a refused try leaves the schedule
/// as it was, a granted one takes exactly one slot.
#[test]
fn bounded_refusals_change_nothing() {
    for strictness in [0.0, 1.5] {
        loom::model(move || {
            let clock = ManualClock::new(0);
            let p = pacer(strictness, &clock);
            let a = {
                let p = p.clone();
                thread::spawn(move || p.reserve(1, None).unwrap())
            };
            let b = {
                let p = p.clone();
                thread::spawn(move || p.try_acquire())
            };
            let ga = a.join().unwrap();
            let gb = b.join().unwrap();
            let taken = 1 + u64::from(gb.is_ok());
            assert_eq!(p.next_slot_nanos(), taken * OP);
            if let Ok(gb) = gb {
                assert_ne!(ga.scheduled_nanos(), gb.scheduled_nanos());
                assert_eq!(gb.ready_nanos(), gb.started_nanos(), "a try that must wait");
            }
        });
    }
}

/// A rate change racing a reservation: the grant lands on the old timeline
/// (and is in the checkpoint) or on the new one, never lost or doubled; the
/// backlog is counted once.
#[test]
fn rate_change_races_a_reservation() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pacer(0.0, &clock);
        clock.advance_nanos(5 * OP); // 5 slots behind
        let a = {
            let p = p.clone();
            thread::spawn(move || p.reserve(1, None).unwrap())
        };
        let b = {
            let p = p.clone();
            thread::spawn(move || p.set_rate(Rate::new(2000.0).unwrap()).unwrap())
        };
        let g = a.join().unwrap();
        b.join().unwrap();
        let next = p.next_slot_nanos();
        if g.scheduled_nanos() == 0 {
            // Old timeline: the change checkpointed the 5 slots minus the one
            // this grant took (sized at either rate: it may have read the new
            // slice before the swap), and restarted the schedule at now.
            let span = 5 * OP - p.accumulated_wait_nanos();
            assert!(span == OP || span == OP / 2, "span {span}");
            assert_eq!(next, 5 * OP);
        } else {
            // New timeline, restarted at the change: the whole backlog was
            // checkpointed, and this grant took the first new slot (at either
            // rate: an acquire racing a change may use either).
            assert_eq!(g.scheduled_nanos(), 5 * OP);
            assert_eq!(p.accumulated_wait_nanos(), 5 * OP);
            assert!(next == 5 * OP + OP || next == 5 * OP + OP / 2);
        }
    });
}

fn pool(filling: Filling, clock: &ManualClock) -> Arc<TokenPool<ManualClock>> {
    Arc::new(
        TokenPool::builder(Rate::new(1000.0).unwrap())
            .burst_ratio(1.1)
            .filling(filling)
            .build_with_clock(clock.clone())
            .unwrap(),
    )
}

/// Blocks in `acquire` on a loom thread. The call goes through
/// `TokenPool`'s own implementation: the blanket `RateLimiter for Arc<L>`
/// does not forward `wait_for`.
fn spawn_acquire(p: &Arc<TokenPool<ManualClock>>) -> thread::JoinHandle<ratekeeper::Grant> {
    let p = Arc::clone(p);
    thread::spawn(move || (*p).acquire())
}

/// Tokens are conserved: the pre-fills and refills are in the pools or were
/// taken by `ops` granted ops (no claim is left partly served).
fn assert_conserved(p: &TokenPool<ManualClock>, refilled: u64, ops: u64) {
    assert_eq!(p.waiters(), 0, "a claim left waiting");
    let pools = p.pools();
    assert_eq!(
        pools.active() + pools.waiting() + ops * OP,
        refilled,
        "tokens not conserved: active {}, waiting {}, {ops} ops",
        pools.active(),
        pools.waiting()
    );
}

/// A caller blocked in `acquire` while another thread refills one op's
/// tokens: whether the refill comes before the caller queues, between its
/// queueing and its parking, or after it parked, the caller gets the tokens
/// (no lost wake-up: loom reports a deadlock if it stays parked) and no
/// token is lost or doubled.
#[test]
fn pool_waiter_is_woken_by_a_refill() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pool(Filling::Manual, &clock);
        p.try_acquire().unwrap(); // the pre-filled op
        clock.advance_nanos(5 * OP);
        let w = spawn_acquire(&p);
        p.refill(OP).unwrap();
        let g = w.join().unwrap();
        assert_eq!(g.scheduled_nanos(), OP);
        assert_eq!(g.started_nanos(), 5 * OP);
        assert_conserved(&p, 2 * OP, 2);
    });
}

/// Two blocked callers and two refills racing them: both are served, once
/// each, in the order they queued (distinct slots), and no token is lost.
#[test]
fn pool_two_waiters_and_two_refills() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pool(Filling::Manual, &clock);
        p.try_acquire().unwrap();
        clock.advance_nanos(5 * OP);
        let a = spawn_acquire(&p);
        let b = spawn_acquire(&p);
        p.refill(OP).unwrap();
        p.refill(OP).unwrap();
        let mut slots = [a.join().unwrap(), b.join().unwrap()].map(|g| g.scheduled_nanos());
        slots.sort_unstable();
        assert_eq!(slots, [OP, 2 * OP], "a slot handed out twice or lost");
        assert_conserved(&p, 3 * OP, 3);
    });
}

/// A lock-free `try_acquire` racing a refill that serves a queued claim:
/// the claim is served first, the try gets only what is left over, and no
/// token is spent twice (conservation in u64 also rules out a negative
/// active pool). With exactly one op refilled, all of it is the claim's and
/// the try is always refused; with two, the try may get the second.
#[test]
fn pool_try_acquire_races_a_refill_serving_a_claim() {
    for refill in [OP, 2 * OP] {
        loom::model(move || {
            let clock = ManualClock::new(0);
            let p = pool(Filling::Manual, &clock);
            p.try_acquire().unwrap();
            // A queued claim nobody waits for (no thread to park).
            p.reserve(1, None).unwrap();
            assert_eq!(p.waiters(), 1);
            let t = {
                let p = Arc::clone(&p);
                thread::spawn(move || p.try_acquire().is_ok())
            };
            let f = {
                let p = Arc::clone(&p);
                thread::spawn(move || p.refill(refill).unwrap())
            };
            let got = t.join().unwrap();
            f.join().unwrap();
            if refill == OP {
                assert!(!got, "the try took the claim's tokens");
            }
            assert_conserved(&p, OP + refill, 2 + u64::from(got));
        });
    }
}

/// Two lock-free tries racing a refill of two ops of which one is owed to
/// a queued claim: at most one try gets the op left over.
#[test]
fn pool_two_tries_race_a_refill_serving_a_claim() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pool(Filling::Manual, &clock);
        p.try_acquire().unwrap();
        p.reserve(1, None).unwrap();
        let tries: Vec<_> = (0..2)
            .map(|_| {
                let p = Arc::clone(&p);
                thread::spawn(move || p.try_acquire().is_ok())
            })
            .collect();
        p.refill(2 * OP).unwrap();
        let got = tries
            .into_iter()
            .map(|t| u64::from(t.join().unwrap()))
            .sum::<u64>();
        assert!(got <= 1, "{got} tries granted one op's tokens");
        assert_conserved(&p, 3 * OP, 2 + got);
    });
}

/// Inline filling: two blocked callers with nobody else refilling. One
/// sleeps on the (manual) clock and refills while the other parks; when the
/// sleeper's claim is done it hands the refilling over. Both complete
/// (loom reports a deadlock on a lost hand-over), the clock moves exactly
/// two ops, and no backlog appears.
#[test]
fn pool_inline_waiters_hand_over_the_refilling() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pool(Filling::Inline, &clock);
        p.try_acquire().unwrap();
        let a = spawn_acquire(&p);
        let b = spawn_acquire(&p);
        let mut slots = [a.join().unwrap(), b.join().unwrap()].map(|g| g.scheduled_nanos());
        slots.sort_unstable();
        assert_eq!(slots, [OP, 2 * OP]);
        assert_eq!(clock.now_nanos(), 2 * OP);
        assert_eq!(p.backlog_nanos(), 0);
        assert_conserved(&p, 3 * OP, 3);
    });
}

/// `stop` racing a blocked caller: stopping wakes the waiters, and the
/// caller starts the pool afresh, its pre-fill being the caller's op;
/// whether it queued before the stop or came after it, it completes.
#[test]
fn pool_stop_wakes_a_waiter() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pool(Filling::Manual, &clock);
        p.try_acquire().unwrap();
        let w = spawn_acquire(&p);
        p.stop();
        w.join().unwrap();
        assert!(p.is_started(), "the caller restarted the pool");
        assert_eq!(p.waiters(), 0);
        assert_eq!(p.pools().wait_time(), 0, "the pre-fill went to the caller");
    });
}

/// A pool filled by a filler thread every 1 ms. Under loom the filler is a
/// loom thread and its timed sleeps are plain parks: it fills only when
/// the clock has passed its due time when it looks, and sleeps until the
/// pool wakes it otherwise.
fn threaded(clock: &ManualClock) -> Arc<TokenPool<ManualClock>> {
    pool(Filling::Thread(Duration::from_millis(1)), clock)
}

/// The filler parks once a fill leaves the pool full (2.2 ms) with nobody
/// waiting, racing a lock-free take from that full pool: whether the take
/// comes before the fill, between the fill and the parking, or after it,
/// the filler is never left parked with the pool not full (the take wakes
/// it, or the parking fails), and dropping the pool wakes and joins a
/// parked filler (loom reports a deadlock otherwise).
#[test]
fn pool_a_take_races_the_filler_parking() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = threaded(&clock); // one op pre-filled; the filler due at 1 ms
        clock.advance_nanos(5 * OP); // a 5 ms fill fills the pool
        p.try_acquire().unwrap();
        let parked = p.is_filler_parked();
        let active = p.active_nanos();
        assert!(
            !parked || active == 2_200_000,
            "the filler is parked with {active} ns in the active pool"
        );
        drop(p);
    });
}

/// A caller that must queue (10 ops, more than the pool can hold) racing
/// the filler's parking: once the claim is queued, the filler is not
/// parked, so its fills will serve the claim.
#[test]
fn pool_a_claim_races_the_filler_parking() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = threaded(&clock);
        clock.advance_nanos(5 * OP);
        let claim = p.reserve(10, None).unwrap(); // more than 5 ms of fills give
        assert!(!p.is_filler_parked(), "parked with a claim queued");
        assert!(p.cancel(&claim));
        drop(p);
    });
}

// ------------------------------------------------------------------- cancel

/// A cancel races a reservation on a strict pacer running late, so both the
/// ticks accumulator and the actual timeline are in play. The cancel gives
/// back the latest grant's slot if the reservation has not taken the slot
/// after it, and otherwise keeps the grant for the next caller (issue 16):
/// whichever wins, every slot is held by one grant at most, the grants a
/// slot apart on the actual timeline, and the cancelled grant is never
/// given back twice, not even when the reservation took the very same slot
/// with the epoch from before the cancel.
#[test]
fn pacer_cancel_races_a_reservation() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pacer(1.0, &clock);
        clock.advance_nanos(5 * OP); // late: grants go at now, a slot apart
        let f = p.reserve(1, None).unwrap();
        let g = p.reserve(1, None).unwrap();
        assert_eq!((f.ready_nanos(), g.ready_nanos()), (5 * OP, 6 * OP));
        let b = {
            let p = p.clone();
            thread::spawn(move || p.reserve(1, None).unwrap())
        };
        let cancelled = p.cancel(&g);
        let b = b.join().unwrap();
        assert!(!p.cancel(&g), "given back twice");
        // The next caller takes g's slot: back on the schedule, or kept.
        let c = p.reserve(1, None).unwrap();
        let mut held = vec![f, b, c];
        if !cancelled {
            held.push(g);
        }
        let mut slots: Vec<u64> = held.iter().map(|x| x.scheduled_nanos()).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), held.len(), "a slot held twice: {held:?}");
        let n = held.len() as u64;
        assert_eq!(
            slots,
            (0..n).map(|i| i * OP).collect::<Vec<_>>(),
            "{held:?}"
        );
        assert_eq!(p.next_slot_nanos(), n * OP);
        // Strict spacing holds between every two grants standing.
        held.sort_by_key(|x| x.ready_nanos());
        assert!(
            held.windows(2)
                .all(|w| w[1].ready_nanos() >= w[0].ready_nanos() + OP),
            "{held:?}"
        );
    });
}

/// Two cancels race each other and a reservation on the accumulator: each
/// grant is given back at most once, to the schedule (the latest) or kept
/// for the next caller, and no slot is ever held by two grants, however
/// the next callers are served.
#[test]
fn pacer_cancels_race_each_other_and_a_reservation() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pacer(0.0, &clock);
        let f = p.reserve(1, None).unwrap();
        let g = p.reserve(1, None).unwrap();
        let c1 = {
            let p = p.clone();
            thread::spawn(move || p.cancel(&g))
        };
        let b = {
            let p = p.clone();
            thread::spawn(move || p.reserve(1, None).unwrap())
        };
        let c2 = p.cancel(&f);
        let (c1, b) = (c1.join().unwrap(), b.join().unwrap());
        assert!(!p.cancel(&f) && !p.cancel(&g), "given back twice");
        // Two more callers: they take what was given back first.
        let d = p.reserve(1, None).unwrap();
        let e = p.reserve(1, None).unwrap();
        let held: Vec<Grant> = [(f, !c2), (g, !c1), (b, true), (d, true), (e, true)]
            .iter()
            .filter(|(_, s)| *s)
            .map(|(x, _)| *x)
            .collect();
        let mut slots: Vec<u64> = held.iter().map(|x| x.scheduled_nanos()).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), held.len(), "a slot held twice: {held:?}");
        assert!(p.next_slot_nanos() > *slots.last().unwrap(), "{held:?}");
    });
}

/// A cancel races a reservation on the refill bucket (the retire protocol:
/// the cancel freezes the core the reservation may be deciding on). Two
/// permits of capacity, one held as `g` (ready at 1 µs): whichever wins,
/// the bucket never grants more than it allows, and `g` goes back once.
#[test]
fn refill_cancel_races_a_reservation() {
    use ratekeeper::RefillLimiter;
    loom::model(|| {
        let config = ratekeeper::bucket::RefillConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(std::time::Duration::from_nanos((1_000) as u64))
            .permit_capacity(2)
            .initial_permits(0)
            .build()
            .unwrap();
        let l = Arc::new(RefillLimiter::new_with_clock(config, ManualClock::new(0)));
        let g = l.reserve(1, None).unwrap();
        assert_eq!(g.ready_nanos(), 1_000);
        let b = {
            let l = Arc::clone(&l);
            thread::spawn(move || l.reserve(1, None).unwrap())
        };
        let cancelled = l.cancel(&g);
        let b = b.join().unwrap();
        assert!(!l.cancel(&g), "given back twice");
        // Given back before b (b takes g's time) or after it (b keeps 2 µs,
        // and with a capacity of 2 all of g's permit comes back: the bucket
        // then owes b's alone). Either way it is given back.
        assert!(cancelled);
        let next = l.reserve(1, None).unwrap().ready_nanos();
        match b.ready_nanos() {
            1_000 => assert_eq!(next, 2_000),
            2_000 => assert_eq!(next, 2_000, "two permits at once: the capacity"),
            r => panic!("b ready at {r}"),
        }
    });
}

/// A claim withdrawn by `cancel` while a lock-free `try_acquire` and a
/// refill race it: the op the claim had received goes back to the active
/// pool (or to the refill's claim-free pool), the try gets at most what is
/// there, and no token is lost or doubled.
#[test]
fn pool_cancel_races_a_try_and_a_refill() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = pool(Filling::Manual, &clock);
        p.try_acquire().unwrap(); // the pre-filled op
        clock.advance_nanos(5 * OP);
        let claim = p.reserve(2, None).unwrap();
        p.refill(OP).unwrap(); // half of the claim
        assert_eq!((p.waiters(), p.active_nanos()), (1, 0));
        let t = {
            let p = Arc::clone(&p);
            thread::spawn(move || p.try_acquire().is_ok())
        };
        let r = {
            let p = Arc::clone(&p);
            thread::spawn(move || p.refill(OP).unwrap())
        };
        let cancelled = p.cancel(&claim);
        let took = t.join().unwrap();
        r.join().unwrap();
        // The refill may complete the claim first; then it is not withdrawn.
        let ops = 1 + u64::from(took) + if cancelled { 0 } else { 2 };
        assert!(cancelled || p.waiters() == 0);
        assert!(!p.cancel(&claim));
        assert_eq!(p.waiters(), 0, "a claim left waiting");
        let pools = p.pools();
        assert_eq!(
            pools.active() + pools.waiting() + ops * OP,
            3 * OP,
            "tokens not conserved: active {}, waiting {}, {ops} ops",
            pools.active(),
            pools.waiting()
        );
    });
}

/// A batching handle leases a block of the schedule (one `fetch_add`),
/// hands a slot out locally and gives the rest back, racing the exact path
/// on another thread: no slot is granted twice, the give-back succeeds only
/// if nothing was reserved after the lease (else the remainder is a hole:
/// fewer grants, never more), and never moves the schedule under the exact
/// grant.
#[test]
fn pacer_handle_lease_and_return_race_the_exact_path() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = Arc::new(
            Pacer::builder(Rate::new(1e6).unwrap())
                .strictness(0.0)
                .build_with_clock(clock.clone())
                .unwrap(),
        );
        let batched = {
            let p = p.clone();
            thread::spawn(move || {
                let h = p.handle();
                // The first lease holds 2 slots (1 µs each): one left over.
                let g = h.reserve(1, None).unwrap();
                let left = h.leased_slots();
                (g, left, h.release())
            })
        };
        let exact = {
            let p = p.clone();
            thread::spawn(move || p.reserve(1, None).unwrap())
        };
        let (a, left, returned) = batched.join().unwrap();
        let e = exact.join().unwrap();
        assert_eq!(left, 1);
        let (a, e) = (a.scheduled_nanos(), e.scheduled_nanos());
        assert_ne!(a, e, "a slot granted twice");
        let next = p.next_slot_nanos();
        if returned {
            // The exact grant came first, or took the returned slot: tiled.
            assert_eq!(next, 2_000);
            assert_eq!(a.max(e), 1_000);
        } else {
            // The exact grant came after the lease: its remainder is a hole.
            assert_eq!((a, e, next), (0, 2_000, 3_000));
        }
    });
}

/// A reset (rate change) racing a handle's lease and its give-back: the
/// give-back never moves the new timeline back, and the handle's grant is
/// on one timeline or the other.
#[test]
fn pacer_handle_lease_races_a_reset() {
    loom::model(|| {
        let clock = ManualClock::new(0);
        let p = Arc::new(
            Pacer::builder(Rate::new(1e6).unwrap())
                .strictness(0.0)
                .build_with_clock(clock.clone())
                .unwrap(),
        );
        let batched = {
            let p = p.clone();
            thread::spawn(move || {
                let h = p.handle();
                let g = h.reserve(1, None).unwrap(); // a lease of 2: one left
                h.release();
                g
            })
        };
        let changer = {
            let (p, clock) = (p.clone(), clock.clone());
            thread::spawn(move || {
                clock.advance_nanos(10_000);
                p.set_rate(Rate::new(5e5).unwrap()).unwrap(); // restarts at 10 µs
            })
        };
        let g = batched.join().unwrap();
        changer.join().unwrap();
        let next = p.next_slot_nanos();
        let s = g.scheduled_nanos();
        if s < 10_000 {
            // Leased on the old timeline; its remainder never goes back onto
            // the new one.
            assert_eq!(s, 0);
            assert_eq!(next, 10_000, "schedule moved by an old lease");
        } else {
            // On the new timeline, with its 2 µs slots: from a lease (its
            // remainder given back, or forfeited when the lease's tag was
            // the old epoch's: a hole of one slot), or from the exact path
            // after a lease taken across the reset expired at once (a hole
            // behind it: at most the lease's 2 slots). After the grant, at
            // most its lease's remainder.
            assert!(s <= 14_000 && (s - 10_000) % 2_000 == 0, "{s}");
            assert!(next == s + 2_000 || next == s + 4_000, "{s} {next}");
        }
    });
}
