use super::*;
use crate::clock::ManualClock;

const MS: u64 = 1_000_000;

fn sharded(rate: f64, s: f64, n: usize, clock: &ManualClock) -> ShardedPacer<ManualClock> {
    Pacer::builder(Rate::new(rate).unwrap())
        .strictness(s)
        .wait_policy(WaitPolicy::coalesce(Duration::ZERO))
        .build_sharded_with_clock(n, clock.clone())
        .unwrap()
}

#[test]
fn a_grant_from_before_a_restart_is_not_kept_for_the_next_caller() {
    let clock = ManualClock::new(0);
    let p = sharded(100.0, 1.1, 2, &clock);
    let gs: Vec<Grant> = (0..6).map(|_| p.reserve(1, None).unwrap()).collect();
    clock.advance_nanos(MS);
    p.restart();
    // Every slot reserved before the restart belongs to a schedule
    // that is gone: none is kept to be handed on.
    for g in &gs {
        assert!(!p.cancel(g), "{g:?}");
    }
}

#[test]
fn a_cancelled_grant_is_kept_for_the_next_caller_and_never_twice() {
    // Issue 16: the sharded pacer's cancel gave nothing back, so with
    // half the async acquires abandoned it delivered half its rate.
    let clock = ManualClock::new(0);
    let p = sharded(100.0, 1.1, 2, &clock);
    let gs: Vec<Grant> = (0..6).map(|_| p.reserve(1, None).unwrap()).collect();
    clock.advance_nanos(1_000_000);
    let late = gs
        .iter()
        .rposition(|g| g.ready_nanos() > 1_000_000)
        .unwrap();
    let kept = gs[late];
    assert!(p.cancel(&kept), "kept for the next caller");
    assert!(!p.cancel(&kept), "cancelled twice");
    let next = p.reserve(1, None).unwrap();
    assert_eq!(
        (
            next.scheduled_nanos(),
            next.ready_nanos(),
            next.started_nanos()
        ),
        (kept.scheduled_nanos(), kept.ready_nanos(), 1_000_000)
    );
    // Its twin on the sibling shard (the same slot) is another grant,
    // with its shard's tag: kept too, and handed on.
    let twin = gs
        .iter()
        .find(|g| g.scheduled_nanos() == kept.scheduled_nanos() && **g != kept)
        .expect("two shards in lockstep");
    assert!(p.cancel(twin));
    assert_eq!(
        p.reserve(1, None).unwrap().ready_nanos(),
        twin.ready_nanos()
    );
    // The next caller may give it back again; then another takes it.
    assert!(p.cancel(&next));
    let again = p.reserve(1, None).unwrap();
    assert_eq!(again.ready_nanos(), kept.ready_nanos());
    // Nothing kept is left: a new reservation gets new slots.
    let fresh = p.reserve(1, None).unwrap();
    assert!(fresh.scheduled_nanos() > kept.scheduled_nanos());
}

fn next_slots<C: Clock>(p: &ShardedPacer<C>) -> Vec<u64> {
    p.shards.iter().map(|s| s.next_slot_nanos()).collect()
}

#[test]
fn a_total_above_one_op_per_nanosecond_is_refused_as_for_one_pacer() {
    // Issue 16: 2e9/s split two ways was accepted (1e9/s a shard) and
    // delivered 2e9/s, a rate a single Pacer refuses.
    let clock = ManualClock::new(0);
    let builder = Pacer::builder(Rate::new(2e9).unwrap());
    let single = builder.build_with_clock(clock.clone()).unwrap_err();
    let err = builder
        .build_sharded_with_clock(2, clock.clone())
        .unwrap_err();
    assert_eq!(err, single);
    let p = sharded(1e9, 0.0, 2, &clock);
    assert_eq!(p.set_rate(Rate::new(2e9).unwrap()), Err(single));
    assert_eq!(p.rate(), Rate::new(1e9).unwrap());
}

#[test]
fn effective_rate_sums_the_shards_truncated_slots() {
    let clock = ManualClock::new(0);
    // 3 per second in 2 shards: floor(2e9 / 3) = 666 666 666 ns each.
    let p = sharded(3.0, 1.0, 2, &clock);
    assert_eq!(p.effective_rate(), 2.0 * (1e9 / 666_666_666.0));
    // 5.1e8 in 4 shards: 7.84 ns truncated to 7 ns (+12 %, where one
    // pacer's 1.96 ns truncated to 1 ns is +96 %).
    let p = sharded(5.1e8, 1.0, 4, &clock);
    let seven = 1e9 / 7.0;
    assert_eq!(p.effective_rate(), seven + seven + seven + seven);
    assert!((p.effective_rate() / 5.1e8 - 1.0 - 0.120_448).abs() < 1e-6);
    p.set_rate(Rate::new(4e8).unwrap()).unwrap();
    assert_eq!(p.effective_rate(), 4e8);
}

#[test]
fn handles_are_assigned_round_robin() {
    let clock = ManualClock::new(0);
    let p = sharded(3000.0, 0.0, 3, &clock);
    let shards: Vec<_> = (0..5).map(|_| p.handle().shard()).collect();
    assert_eq!(shards, [0, 1, 2, 0, 1]);
    assert_eq!(
        p.thread_shard(),
        p.thread_shard(),
        "a thread keeps its shard"
    );
    assert!(p.thread_shard() < 3);
}

#[test]
fn a_request_that_must_wait_waits_on_the_shard_free_first() {
    // 2000/s in 2 strict shards of 1 ms slots; one handle, on shard 0.
    let clock = ManualClock::new(0);
    let p = sharded(2000.0, 1.0, 2, &clock);
    let h = p.handle();
    let at = |g: Grant| (g.scheduled_nanos() / MS, g.ready_nanos() / MS);
    assert_eq!(at(h.reserve(1, None).unwrap()), (0, 0)); // own, slot 0
    assert_eq!(h.shard(), 0);
    assert_eq!(at(h.reserve(1, None).unwrap()), (0, 0)); // stolen: shard 1
    assert_eq!(h.shard(), 1, "the handle moves to the shard it took from");
    assert_eq!(next_slots(&p), [MS, MS]);
    assert_eq!(at(h.reserve(1, None).unwrap()), (1, 1)); // a tie: its shard
    assert_eq!((h.shard(), next_slots(&p)), (1, vec![MS, 2 * MS]));
    // Nothing is due now; shard 0 is free a slot before shard 1.
    assert_eq!(at(h.reserve(1, None).unwrap()), (1, 1));
    assert_eq!((h.shard(), next_slots(&p)), (0, vec![2 * MS, 2 * MS]));
    // A refusal moves nothing.
    assert!(h.try_acquire().is_err());
    assert_eq!(h.shard(), 0);
}

#[test]
fn an_op_due_within_the_coalescing_window_stays_on_its_own_shard() {
    // 2000/s in 2 strict shards of 1 ms slots; one handle on shard 0.
    // At 0.7 ms its own next op is due at 1 ms, 0.3 ms away; shard 1's
    // slot 0 is due now.
    let scheduled = |window: u64, max_wait: Option<Duration>| {
        let clock = ManualClock::new(0);
        let p = Pacer::builder(Rate::new(2000.0).unwrap())
            .strictness(1.0)
            .wait_policy(WaitPolicy::coalesce(Duration::from_nanos(window)))
            .build_sharded_with_clock(2, clock.clone())
            .unwrap();
        let h = p.handle();
        assert_eq!(h.reserve(1, None).unwrap().scheduled_nanos(), 0);
        clock.advance_nanos(700_000);
        h.reserve(1, max_wait).unwrap().scheduled_nanos()
    };
    // A 500 µs window would release the own op at once: no stealing.
    assert_eq!(scheduled(500_000, None), MS);
    // Without a window, or for a request that may not wait that long,
    // shard 1's due slot is taken.
    assert_eq!(scheduled(0, None), 0);
    assert_eq!(scheduled(500_000, Some(Duration::from_micros(100))), 0);
}

#[test]
fn a_handle_moves_only_to_a_less_crowded_shard() {
    // 2000/s in 2 strict shards of 1 ms slots.
    let clock = ManualClock::new(0);
    let p = sharded(2000.0, 1.0, 2, &clock);
    let (a, b) = (p.handle(), p.handle());
    assert_eq!((a.shard(), b.shard()), (0, 1));
    a.reserve(1, None).unwrap(); // shard 0, slot 0
    let stolen = a.reserve(1, None).unwrap(); // shard 1's slot 0
    assert_eq!(stolen.scheduled_nanos(), 0);
    assert_eq!(a.shard(), 0, "shard 1 is b's home: a stays");
    // With b gone, shard 1 is the less crowded: a's next steal moves it.
    drop(b);
    clock.advance_nanos(MS);
    a.reserve(1, None).unwrap(); // its own slot at 1 ms
    a.reserve(1, None).unwrap(); // shard 1's slot at 1 ms
    assert_eq!(a.shard(), 1);
    // A clone starts where the handle is, and counts there.
    let c = a.clone();
    assert_eq!(c.shard(), 1);
    let residents: Vec<u64> = p
        .residents
        .iter()
        .map(|r| r.load(Ordering::Relaxed))
        .collect();
    assert_eq!(residents, [0, 2]);
    drop((a, c));
    assert!(p.residents.iter().all(|r| r.load(Ordering::Relaxed) == 0));
}

#[test]
fn a_lone_thread_steals_an_idle_shards_slots_and_keeps_the_total_rate() {
    // 2000/s in 2 shards: 1 ms slots each; one handle, the other shard idle.
    let clock = ManualClock::new(0);
    let p = sharded(2000.0, 0.0, 2, &clock);
    let h = p.handle();
    let ready: Vec<u64> = (0..10).map(|_| h.acquire().ready_nanos() / MS).collect();
    assert_eq!(
        ready,
        [0, 0, 1, 1, 2, 2, 3, 3, 4, 4],
        "2 grants per ms: R, not R/2"
    );
    assert_eq!(next_slots(&p), [5 * MS, 5 * MS], "both shards used in turn");
}

#[test]
fn the_total_stays_at_the_rate_with_half_the_shards_idle() {
    // 4000/s in 4 shards (1 ms slots); 2 handles alternate for 100 ms.
    let clock = ManualClock::new(0);
    let p = sharded(4000.0, 0.0, 4, &clock);
    let (a, b) = (p.handle(), p.handle());
    let mut ready = Vec::new();
    while clock.now_nanos() < 100 * MS {
        ready.push(a.acquire().ready_nanos());
        ready.push(b.acquire().ready_nanos());
    }
    let by_100ms = ready.iter().filter(|&&r| r < 100 * MS).count();
    assert_eq!(by_100ms, 400, "4 shards × 100 slots, all taken");
    // Each shard served its own slots in order: none is behind or ahead.
    assert!(next_slots(&p)
        .iter()
        .all(|&n| n == 100 * MS || n == 101 * MS));
}

#[test]
fn an_idle_shards_backlog_is_stolen_at_once_in_average_mode() {
    let clock = ManualClock::new(0);
    let p = sharded(2000.0, 0.0, 2, &clock);
    let h = p.handle();
    clock.advance_nanos(10 * MS);
    // Own shard first (11 slots due: 0..=10 ms), then shard 1's 11.
    let at_once = (0..30)
        .map(|_| h.try_acquire())
        .take_while(Result::is_ok)
        .count();
    assert_eq!(
        at_once, 22,
        "the mode's allowance over both shards: 2 × (10 + 1)"
    );
    assert_eq!(next_slots(&p), [11 * MS, 11 * MS]);
}

#[test]
fn strict_shards_space_their_own_ops_only() {
    let clock = ManualClock::new(0);
    let p = sharded(2000.0, 1.0, 2, &clock);
    let h = p.handle();
    clock.advance_nanos(10 * MS);
    // Strict: no backlog goes at once, but each shard grants one now.
    assert!(h.try_acquire().is_ok());
    assert!(h.try_acquire().is_ok(), "stolen from the other shard");
    let err = h.try_acquire().unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_millis(1)));
    clock.advance_nanos(MS);
    assert!(h.try_acquire().is_ok() && h.try_acquire().is_ok());
    assert!(h.try_acquire().is_err());
}

#[test]
fn a_refused_request_changes_nothing() {
    let clock = ManualClock::new(0);
    let p = sharded(3000.0, 1.1, 3, &clock);
    let hs: Vec<_> = (0..3).map(|_| p.handle()).collect();
    for h in &hs {
        h.acquire();
    }
    let before = next_slots(&p);
    for h in &hs {
        assert!(matches!(
            h.try_acquire(),
            Err(AcquireError::WouldWait { .. })
        ));
        assert!(h.acquire_timeout(1, Duration::from_micros(10)).is_err());
    }
    assert_eq!(next_slots(&p), before);
    assert_eq!(hs[0].reserve(0, None), Err(AcquireError::ZeroPermits));
}

#[test]
fn the_pacer_itself_maps_the_thread_to_its_shard() {
    let clock = ManualClock::new(0);
    let p = sharded(4000.0, 0.0, 4, &clock);
    let own = p.thread_shard();
    let g = p.acquire();
    assert_eq!(g.scheduled_nanos(), 0);
    let slots = next_slots(&p);
    for (i, &n) in slots.iter().enumerate() {
        assert_eq!(n, if i == own { MS } else { 0 }, "{slots:?}");
    }
    // From another thread: same pacer, a shard of that thread.
    std::thread::scope(|s| {
        s.spawn(|| assert!(p.try_acquire().is_ok()));
    });
}

#[test]
fn bad_configurations_are_errors() {
    let clock = ManualClock::new(0);
    let b = Pacer::builder(Rate::new(1000.0).unwrap());
    for n in [0, MAX_SHARDS + 1] {
        assert_eq!(
            b.build_sharded_with_clock(n, clock.clone()).unwrap_err(),
            ConfigError::from(ShardError::Shards {
                requested: n,
                max: MAX_SHARDS
            })
        );
    }
    assert!(b
        .build_sharded_with_clock(MAX_SHARDS, clock.clone())
        .is_ok());
    let slow = Pacer::builder(Rate::new(1e-9).unwrap());
    let err = slow
        .build_sharded_with_clock(10, clock.clone())
        .unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::Rate);
    let err = b
        .strictness(-1.0)
        .build_sharded_with_clock(2, clock.clone());
    assert_eq!(err.unwrap_err().kind(), ConfigErrorKind::Strictness);
    let err = b.build_sharded_with_clock(0, clock.clone()).unwrap_err();
    assert_eq!(err.to_string(), "shard count 0 is outside 1..=1024");
}

#[test]
fn runtime_changes_apply_to_every_shard() {
    let clock = ManualClock::new(0);
    let p = sharded(3000.0, 0.0, 3, &clock);
    assert_eq!(p.rate().get(), 3000.0);
    assert!(p.shards.iter().all(|s| s.nanos_per_op() == MS));
    clock.advance_nanos(5 * MS);
    p.set_rate(Rate::new(6000.0).unwrap()).unwrap();
    assert_eq!(p.rate().get(), 6000.0);
    assert!(p.shards.iter().all(|s| s.nanos_per_op() == MS / 2));
    assert_eq!(
        next_slots(&p),
        [5 * MS; 3],
        "each backlog leaves its schedule"
    );
    assert_eq!(
        p.wait_stats().total_wait_nanos,
        3 * 5 * MS,
        "backlogs checkpointed"
    );

    // A rate valid in total but not per shard: nothing changes.
    let slow = Rate::new(3e-10).unwrap();
    assert!(slow.nanos_per_op().is_ok());
    assert!(p.set_rate(slow).is_err());
    assert_eq!(p.rate().get(), 6000.0);
    assert!(p.set_strictness(f64::NAN).is_err());
    p.set_strictness(1.0).unwrap();
    assert!(p.shards.iter().all(|s| s.strictness().get() == 1.0));
    assert_eq!(p.strictness().get(), 1.0);

    p.stop();
    assert!(!p.is_started());
    assert!(p.shards.iter().all(|s| !s.is_started()));
    clock.advance_nanos(10 * MS);
    p.start();
    assert!(p.shards.iter().all(|s| s.is_started()));
    assert_eq!(next_slots(&p), [15 * MS; 3]);
    clock.advance_nanos(MS);
    p.restart();
    assert_eq!(p.wait_stats(), WaitStats::default());
    assert_eq!(next_slots(&p), [16 * MS; 3]);
}

#[test]
fn slices_round_per_shard() {
    let clock = ManualClock::new(0);
    // 3e8/s: one pacer's slice is 3 ns (+11 %); 3 shards' is 10 ns (exact).
    let p = sharded(3e8, 0.0, 3, &clock);
    assert!(p.shards.iter().all(|s| s.nanos_per_op() == 10));
    let p = sharded(3e8, 0.0, 2, &clock);
    assert!(p.shards.iter().all(|s| s.nanos_per_op() == 6));
}

#[test]
fn wait_stats_sum_over_the_shards() {
    let clock = ManualClock::new(0);
    let p = sharded(2000.0, 1.0, 2, &clock);
    clock.advance_nanos(4 * MS);
    assert_eq!(p.wait_stats().backlog_nanos, 8 * MS);
    assert_eq!(p.handle().wait_stats(), p.wait_stats());
}
