//! Unit tests of the token-pool limiter on a manual clock.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::error::ConfigError;
use crate::limiter::{AcquireError, Grant, RateLimiter, WaitStats};
use crate::rate::Rate;
use crate::spec::Verb;

const MS: u64 = 1_000_000;

fn manual(rate: f64, burst: f64) -> (ManualClock, TokenPool<ManualClock>) {
    let clock = ManualClock::new(0);
    let pool = TokenPool::builder(Rate::new(rate).unwrap())
        .burst_ratio(burst)
        .filling(Filling::Manual)
        .build_with_clock(clock.clone())
        .unwrap();
    (clock, pool)
}

fn inline(rate: f64, burst: f64) -> (ManualClock, TokenPool<ManualClock>) {
    let clock = ManualClock::new(0);
    let pool = TokenPool::builder(Rate::new(rate).unwrap())
        .burst_ratio(burst)
        .build_with_clock(clock.clone())
        .unwrap();
    (clock, pool)
}

/// Blocks in `acquire_n(permits)` on another thread, queued behind the
/// claims already waiting: returns once this caller's claim is queued.
///
/// The call goes through `&TokenPool`'s own implementation (`(**p)`): the
/// blanket `RateLimiter for Arc<L>` does not forward `wait_for`, so an
/// `Arc`'s `acquire` would not wait for the claim's tokens.
fn spawn_acquire(
    pool: &Arc<TokenPool<ManualClock>>,
    permits: u32,
) -> JoinHandle<Result<Grant, AcquireError>> {
    let before = pool.waiters();
    let p = Arc::clone(pool);
    let h = std::thread::spawn(move || (*p).acquire_n(permits));
    await_waiters(pool, before + 1);
    h
}

/// As [`spawn_acquire`], with a timeout.
fn spawn_acquire_timeout(
    pool: &Arc<TokenPool<ManualClock>>,
    timeout: Duration,
) -> JoinHandle<Result<Grant, AcquireError>> {
    let before = pool.waiters();
    let p = Arc::clone(pool);
    let h = std::thread::spawn(move || (*p).acquire_timeout(1, timeout));
    await_waiters(pool, before + 1);
    h
}

/// Polls until exactly `n` callers are queued.
fn await_waiters<C: Clock + 'static>(pool: &TokenPool<C>, n: usize) {
    while pool.waiters() != n {
        std::thread::yield_now();
    }
}

/// Takes ops with `try_acquire` until refused; returns how many it took.
fn take_all<C: Clock + 'static>(pool: &TokenPool<C>) -> u32 {
    let mut n = 0;
    while pool.try_acquire().is_ok() {
        n += 1;
    }
    n
}

#[test]
fn the_start_prefills_one_op() {
    let (_, pool) = manual(1000.0, 1.1);
    assert!(pool.is_started());
    assert_eq!(pool.active_nanos(), MS);
    let g = pool.try_acquire().unwrap();
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (0, 0));
    assert_eq!(
        pool.try_acquire(),
        Err(AcquireError::WouldWait {
            wait: Duration::from_millis(1),
            max_wait: Duration::ZERO
        })
    );
    assert_eq!(pool.waiters(), 0, "a refused try queues nothing");
}

#[test]
fn inline_filling_paces_exactly_on_a_manual_clock() {
    let (clock, pool) = inline(1000.0, 1.1);
    for k in 0..5u64 {
        let g = pool.acquire();
        assert_eq!(g.scheduled_nanos(), k * MS, "op {k}");
        assert_eq!(g.started_nanos(), k * MS, "op {k}");
        assert_eq!(g.wait_nanos(), 0);
    }
    assert_eq!(clock.now_nanos(), 4 * MS);
    assert_eq!(pool.waiters(), 0);
}

#[test]
fn an_op_reports_its_own_wait_not_the_backlog() {
    let (clock, pool) = inline(1000.0, 1.1);
    pool.acquire(); // op 0 at 0
    clock.advance_nanos(10 * MS);
    let g = pool.acquire();
    assert_eq!(g.scheduled_nanos(), MS);
    assert_eq!(g.wait_nanos(), 9 * MS);
    // Active 2.2 ms (minus this op), waiting 10 - 2.2 = 7.8 ms.
    assert_eq!(pool.backlog_nanos(), 7_800_000);
    assert_eq!(pool.wait_stats().backlog_nanos, 7_800_000);
}

#[test]
fn waiters_are_served_first_come_first_served_by_refills() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.0);
        let pool = Arc::new(pool);
        pool.try_acquire().unwrap();
        let handles: Vec<_> = (0..3).map(|_| spawn_acquire(&pool, 1)).collect();
        // Half an op: nobody completes.
        clock.advance_nanos(MS / 2);
        pool.refill(MS / 2).unwrap();
        assert_eq!(pool.waiters(), 3);
        assert!(handles.iter().all(|h| !h.is_finished()));
        clock.advance_nanos(MS / 2);
        pool.refill(MS / 2).unwrap();
        await_waiters(&pool, 2);
        // The first waiter reads the clock when it wakes: let it finish first.
        while !handles[0].is_finished() {
            std::thread::yield_now();
        }
        clock.advance_nanos(2 * MS);
        pool.refill(2 * MS).unwrap();
        let mut grants: Vec<(u64, u64)> = handles
            .into_iter()
            .map(|h| {
                let g = h.join().unwrap().unwrap();
                (g.scheduled_nanos(), g.started_nanos())
            })
            .collect();
        grants.sort_unstable();
        // Each waiter starts when the fill that completed its claim came.
        assert_eq!(grants, vec![(MS, MS), (2 * MS, 3 * MS), (3 * MS, 3 * MS)]);
        assert_eq!(pool.waiters(), 0);
        assert_eq!(pool.active_nanos(), 0);
    });
}

#[test]
fn stall_catch_up_runs_at_burst_then_at_rate() {
    let (clock, pool) = inline(1000.0, 1.1);
    pool.acquire();
    clock.advance_nanos(1_000 * MS); // a 1 s stall
    let start = clock.now_nanos();
    // Count ops in successive 100 ms windows while acquiring back to back.
    let mut windows = [0u32; 30];
    loop {
        let g = pool.acquire();
        let w = ((g.started_nanos() - start) / (100 * MS)) as usize;
        if w >= windows.len() {
            break;
        }
        windows[w] += 1;
    }
    // Catch-up at ~1100 ops/s for ~1 s / 0.1 = 10 s is beyond 3 s; all windows
    // here are catch-up windows.
    for (i, &n) in windows.iter().enumerate().skip(1) {
        assert!((108..=112).contains(&n), "window {i}: {n}");
    }
}

// ---- restart, stop, start, verbs ----

#[test]
fn restart_zeroes_the_pools_the_backlog_and_the_accumulated_wait() {
    let (clock, pool) = manual(1000.0, 1.1);
    pool.refill(10 * MS).unwrap(); // active 2.2 ms, waiting 8.8 ms
    pool.stop(); // 8.8 ms checkpointed
    pool.start();
    pool.refill(5 * MS).unwrap(); // active 2.2 ms, waiting 3.8 ms
    assert_eq!(
        pool.wait_stats(),
        WaitStats {
            backlog_nanos: 3_800_000,
            total_wait_nanos: 12_600_000
        }
    );
    clock.set_nanos(20 * MS);
    let fills = pool.fills();
    pool.restart();
    assert!(pool.is_started());
    assert_eq!(pool.backlog_nanos(), 0);
    assert_eq!(pool.accumulated_wait_nanos(), 0);
    assert_eq!(pool.wait_stats(), WaitStats::default());
    assert_eq!((pool.pools().active(), pool.pools().waiting()), (MS, 0));
    assert_eq!(pool.fills(), fills + 1, "one pre-fill");
    // The schedule begins at the restart, with one op ready.
    let g = pool.try_acquire().unwrap();
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (20 * MS, 0));
    assert!(pool.try_acquire().is_err());

    // Restarting an idle pool starts it, also clearing what its stop saved.
    pool.refill(10 * MS).unwrap();
    pool.stop();
    assert!(pool.accumulated_wait_nanos() > 0);
    pool.restart();
    assert!(pool.is_started());
    assert_eq!(pool.wait_stats(), WaitStats::default());
    assert_eq!(pool.active_nanos(), MS);
}

#[test]
fn stop_checkpoints_the_backlog_and_the_next_acquire_starts_afresh() {
    let (clock, pool) = manual(1000.0, 1.1);
    pool.refill(10 * MS).unwrap();
    assert_eq!(pool.backlog_nanos(), 8_800_000);
    pool.stop();
    assert!(!pool.is_started());
    assert_eq!((pool.active_nanos(), pool.backlog_nanos()), (0, 0));
    assert_eq!(pool.pools().wait_time(), 0);
    assert_eq!(
        pool.wait_stats(),
        WaitStats {
            backlog_nanos: 0,
            total_wait_nanos: 8_800_000
        }
    );
    pool.stop(); // stopping an idle pool changes nothing
    assert_eq!(pool.accumulated_wait_nanos(), 8_800_000);

    clock.set_nanos(50 * MS);
    let g = pool.try_acquire().unwrap();
    assert!(pool.is_started());
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (50 * MS, 0));
    assert_eq!(pool.active_nanos(), 0, "only one op was pre-filled");
    assert!(pool.try_acquire().is_err());
    assert_eq!(pool.wait_stats().total_wait_nanos, 8_800_000);

    // A second stop adds the new backlog to the checkpoint.
    pool.refill(10 * MS).unwrap(); // active 2.2 ms, waiting 7.8 ms
    pool.stop();
    assert_eq!(pool.wait_stats().total_wait_nanos, 8_800_000 + 7_800_000);
}

#[test]
fn stop_wakes_waiters_who_start_the_pool_afresh() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.0);
        let pool = Arc::new(pool);
        pool.try_acquire().unwrap();
        let h = spawn_acquire(&pool, 1);
        clock.set_nanos(7 * MS);
        pool.stop();
        // The woken waiter restarts the pool, whose pre-fill is its op.
        let g = h.join().unwrap().unwrap();
        assert_eq!(g.started_nanos(), 7 * MS);
        assert!(pool.is_started());
        assert_eq!((pool.waiters(), pool.active_nanos()), (0, 0));
    });
}

#[test]
fn configure_and_stop_verbs_build_the_pool_idle() {
    for verb in [Verb::Configure, Verb::Stop] {
        let clock = ManualClock::new(5 * MS);
        let pool = TokenPool::builder(Rate::new(1000.0).unwrap())
            .verb(verb)
            .filling(Filling::Manual)
            .build_with_clock(clock.clone())
            .unwrap();
        assert!(!pool.is_started(), "{verb:?}");
        assert_eq!((pool.active_nanos(), pool.fills()), (0, 0), "{verb:?}");
        clock.set_nanos(7 * MS);
        // The first acquire starts it: its schedule begins then.
        let g = pool.try_acquire().unwrap();
        assert_eq!(
            (g.scheduled_nanos(), g.wait_nanos()),
            (7 * MS, 0),
            "{verb:?}"
        );
        assert!(pool.is_started(), "{verb:?}");
        assert_eq!(pool.fills(), 1, "{verb:?}");

        // Inline filling: the first blocking acquire starts it too.
        let clock = ManualClock::new(5 * MS);
        let pool = TokenPool::builder(Rate::new(1000.0).unwrap())
            .verb(verb)
            .build_with_clock(clock.clone())
            .unwrap();
        assert!(!pool.is_started());
        clock.set_nanos(7 * MS);
        assert_eq!(pool.acquire().scheduled_nanos(), 7 * MS);
        assert_eq!(pool.acquire().started_nanos(), 8 * MS);
    }
    for verb in [Verb::Start, Verb::Restart] {
        let pool = TokenPool::builder(Rate::new(1000.0).unwrap())
            .verb(verb)
            .filling(Filling::Manual)
            .build_with_clock(ManualClock::new(0))
            .unwrap();
        assert!(pool.is_started(), "{verb:?}");
        assert_eq!((pool.active_nanos(), pool.fills()), (MS, 1), "{verb:?}");
    }
}

#[test]
fn apply_with_each_verb() {
    let (clock, pool) = manual(1000.0, 1.1);
    pool.refill(10 * MS).unwrap(); // content 11 ms: active 2.2, waiting 8.8

    // configure: rate and burst change, the pools and the state do not.
    let fills = pool.fills();
    pool.apply(&"2000,1.2,configure".parse().unwrap()).unwrap();
    assert_eq!(pool.rate().get(), 2000.0);
    assert_eq!(pool.burst_ratio(), 1.2);
    assert_eq!(pool.nanos_per_op(), 500_000);
    assert!(pool.is_started());
    let p = pool.pools();
    assert_eq!(
        (p.active(), p.waiting(), p.max_active()),
        (2_200_000, 8_800_000, MS)
    );
    assert_eq!(pool.fills(), fills);

    // start on a started pool: nothing changes.
    pool.apply(&"2000,1.2,start".parse().unwrap()).unwrap();
    assert_eq!(pool.pools().wait_time(), 11 * MS);
    assert_eq!(pool.fills(), fills);

    // stop: the backlog is checkpointed, the pools emptied.
    pool.apply(&"2000,1.2,stop".parse().unwrap()).unwrap();
    assert!(!pool.is_started());
    assert_eq!(pool.pools().wait_time(), 0);
    assert_eq!(pool.accumulated_wait_nanos(), 8_800_000);

    // configure on an idle pool leaves it idle.
    pool.apply(&"4000,1.2,configure".parse().unwrap()).unwrap();
    assert!(!pool.is_started());
    assert_eq!(pool.nanos_per_op(), 250_000);

    // start on an idle pool: one op at the new rate is pre-filled.
    clock.set_nanos(30 * MS);
    pool.apply(&"2000,1.2,start".parse().unwrap()).unwrap();
    assert!(pool.is_started());
    assert_eq!(pool.active_nanos(), 500_000);
    assert_eq!(pool.try_acquire().unwrap().scheduled_nanos(), 30 * MS);
    assert_eq!(pool.accumulated_wait_nanos(), 8_800_000);

    // restart: everything is cleared, one op pre-filled.
    pool.refill(10 * MS).unwrap();
    assert!(pool.backlog_nanos() > 0);
    pool.apply(&"1000,1.1,restart".parse().unwrap()).unwrap();
    assert!(pool.is_started());
    assert_eq!(pool.wait_stats(), WaitStats::default());
    assert_eq!((pool.active_nanos(), pool.backlog_nanos()), (MS, 0));
    assert_eq!(pool.nanos_per_op(), MS);
}

// ---- configure ----

/// nosqlbench T-P-3: at 1000 ops/s, 10 ms of refill, then 1e6 ops/s: the
/// pools are kept, and the next fill moves the active pool's excess back to
/// the waiting pool.
#[test]
fn configure_keeps_the_pools_t_p_3() {
    let (clock, pool) = manual(1000.0, 1.1);
    assert_eq!(pool.refill(10 * MS).unwrap(), 11 * MS); // with the pre-fill
    let p = pool.pools();
    assert_eq!((p.active(), p.waiting()), (2_200_000, 8_800_000));

    pool.configure(Rate::new(1e6).unwrap(), 1.1).unwrap();
    let p = pool.pools();
    assert_eq!(p.nanos_per_op(), 1_000);
    assert_eq!((p.max_active(), p.max_over_active()), (MS, 1_100_000));
    assert_eq!((p.active(), p.waiting()), (2_200_000, 8_800_000), "kept");
    assert_eq!(pool.backlog_nanos(), 8_800_000);

    // The next fill moves the excess back: active <= max_over_active.
    assert_eq!(pool.refill(1_000).unwrap(), 11 * MS + 1_000);
    let p = pool.pools();
    assert_eq!((p.active(), p.waiting()), (1_100_000, 9_901_000));
    assert!(p.active() <= p.max_over_active());

    // The withdrawn tokens are no op's: the schedule goes on from 0.
    clock.set_nanos(11 * MS);
    let g = pool.try_acquire().unwrap();
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (0, 11 * MS));
    assert_eq!(pool.try_acquire().unwrap().scheduled_nanos(), 1_000);
    assert_eq!(take_all(&pool), 1_098);
}

/// Until the next fill, takers may use the excess a shrinking configure
/// left in the active pool (G2 does the same); nothing more.
#[test]
fn the_excess_a_shrink_left_is_usable_until_the_next_fill() {
    let (_, pool) = manual(1000.0, 1.1);
    pool.refill(10 * MS).unwrap();
    pool.configure(Rate::new(1e6).unwrap(), 1.1).unwrap();
    assert_eq!(take_all(&pool), 2_200);
    assert_eq!(pool.active_nanos(), 0);
    assert_eq!(pool.backlog_nanos(), 8_800_000);
}

// ---- the burst ratio ----

#[test]
fn burst_one_never_recovers_a_backlog() {
    let (_, pool) = manual(1000.0, 1.0);
    pool.refill(10 * MS).unwrap(); // active 2 ms, waiting 9 ms
    assert_eq!(take_all(&pool), 2);
    for step in 0..100 {
        pool.refill(MS).unwrap();
        assert_eq!(take_all(&pool), 1, "step {step}");
        assert_eq!(pool.backlog_nanos(), 9 * MS, "step {step}");
    }
}

#[test]
fn burst_one_and_a_half_drains_a_backlog_at_half_the_rate() {
    let (_, pool) = manual(1000.0, 1.5);
    pool.refill(10 * MS).unwrap(); // active 3 ms (2 + 1 of burst), waiting 8 ms
    assert_eq!(pool.backlog_nanos(), 8 * MS);
    assert_eq!(take_all(&pool), 3);
    let mut ops = 0;
    for step in 0..16u64 {
        pool.refill(MS).unwrap();
        assert_eq!(
            pool.backlog_nanos(),
            8 * MS - (step + 1) * MS / 2,
            "step {step}"
        );
        ops += take_all(&pool);
    }
    assert_eq!(ops, 24, "16 ms at 1.5x the rate");
    for step in 0..10 {
        pool.refill(MS).unwrap();
        assert_eq!(take_all(&pool), 1, "step {step}: back at the rate");
        assert_eq!(pool.backlog_nanos(), 0);
    }
}

// ---- refusals and timeouts ----

/// What a refusal could have changed.
fn snapshot<C: Clock + 'static>(pool: &TokenPool<C>) -> (Pools, u64, usize, WaitStats, bool) {
    (
        pool.pools(),
        pool.fills(),
        pool.waiters(),
        pool.wait_stats(),
        pool.is_started(),
    )
}

#[test]
fn a_refused_try_acquire_changes_nothing() {
    let (clock, pool) = manual(1000.0, 1.1);
    pool.try_acquire().unwrap();
    pool.refill(MS / 2).unwrap();
    let before = snapshot(&pool);
    clock.advance_nanos(3 * MS);
    assert_eq!(
        pool.try_acquire(),
        Err(AcquireError::WouldWait {
            wait: Duration::from_micros(500),
            max_wait: Duration::ZERO
        })
    );
    assert_eq!(
        pool.try_acquire_n(3).unwrap_err().retry_after(),
        Some(Duration::from_micros(2_500))
    );
    // A timeout shorter than the tokens missing: refused at once, unqueued.
    assert_eq!(
        pool.acquire_timeout(1, Duration::from_micros(100)),
        Err(AcquireError::WouldWait {
            wait: Duration::from_micros(500),
            max_wait: Duration::from_micros(100)
        })
    );
    assert_eq!(snapshot(&pool), before);
    // The schedule did not move either.
    pool.refill(MS / 2).unwrap();
    assert_eq!(pool.try_acquire().unwrap().scheduled_nanos(), MS);

    // Behind a queued claim, a try is refused even with tokens coming.
    let g = pool.reserve(1, None).unwrap();
    assert!(g.claim().is_some());
    let before = snapshot(&pool);
    assert!(pool.try_acquire().is_err());
    assert_eq!(snapshot(&pool), before);
}

#[test]
fn acquire_timeout_times_out_in_manual_mode_and_withdraws_its_claim() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.0);
        let pool = Arc::new(pool);
        pool.try_acquire().unwrap();
        // The waiter parks for at most the 2 ms left (real time), then sees the
        // clock past its deadline.
        let h = spawn_acquire_timeout(&pool, Duration::from_millis(2));
        clock.advance_nanos(3 * MS);
        assert_eq!(
            h.join().unwrap(),
            Err(AcquireError::WouldWait {
                wait: Duration::from_millis(3), // the timeout + the 1 ms missing
                max_wait: Duration::from_millis(2)
            })
        );
        assert_eq!((pool.waiters(), pool.active_nanos()), (0, 0));
        // Nothing is owed to the withdrawn claim: the next op is the one due at
        // 1 ms, and a refill's tokens are all for it.
        pool.refill(MS).unwrap();
        let g = pool.try_acquire().unwrap();
        assert_eq!((g.scheduled_nanos(), g.started_nanos()), (MS, 3 * MS));
    });
}

#[test]
fn a_timed_out_claims_tokens_go_to_the_claim_behind_it() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.0);
        let pool = Arc::new(pool);
        pool.try_acquire().unwrap();
        let a = spawn_acquire_timeout(&pool, Duration::from_millis(2));
        let b = spawn_acquire(&pool, 1);
        pool.refill(MS / 2).unwrap(); // to the claim in front: a's
        clock.advance_nanos(3 * MS);
        assert_eq!(
            a.join().unwrap().unwrap_err().retry_after(),
            Some(Duration::from_micros(2_500)) // the timeout + the 0.5 ms missing
        );
        await_waiters(&pool, 1);
        assert_eq!(
            pool.active_nanos(),
            0,
            "a's half op went to b, not the pool"
        );
        assert!(!b.is_finished());
        pool.refill(MS / 2).unwrap(); // b's other half
        let g = b.join().unwrap().unwrap();
        assert_eq!(g.started_nanos(), 3 * MS);
        // Conserved: 1 ms pre-filled + 1 ms refilled = two ops.
        assert_eq!(
            (pool.waiters(), pool.active_nanos(), pool.backlog_nanos()),
            (0, 0, 0)
        );
    });
}

#[test]
fn a_timed_out_claims_tokens_go_back_to_the_active_pool() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.0);
        let pool = Arc::new(pool);
        pool.try_acquire().unwrap();
        let a = spawn_acquire_timeout(&pool, Duration::from_millis(2));
        pool.refill(MS / 4).unwrap();
        assert_eq!(pool.active_nanos(), 0, "a quarter op, for the claim");
        clock.advance_nanos(3 * MS);
        assert!(a.join().unwrap().is_err());
        assert_eq!((pool.waiters(), pool.active_nanos()), (0, MS / 4));
        pool.refill(3 * MS / 4).unwrap();
        // The returned tokens are the next op's, scheduled where a's was.
        let g = pool.try_acquire().unwrap();
        assert_eq!(g.scheduled_nanos(), MS);
        assert_eq!(pool.active_nanos(), 0);
        pool.refill(MS).unwrap();
        assert_eq!(pool.try_acquire().unwrap().scheduled_nanos(), 2 * MS);
    });
}

// ---- multi-permit and orphan claims ----

#[test]
fn a_multi_permit_acquire_completes_through_incremental_claims() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.1);
        let pool = Arc::new(pool);
        // 5 ops = 5 ms, more than the 2.2 ms the active pool can ever hold; the
        // pre-filled 1 ms goes to the claim at once.
        assert_eq!(pool.pools().max_over_active(), 2_200_000);
        let h = spawn_acquire(&pool, 5);
        assert_eq!(pool.active_nanos(), 0);
        for ms in 1..4 {
            clock.advance_nanos(MS);
            pool.refill(MS).unwrap();
            assert_eq!(pool.waiters(), 1, "{ms} ms");
            assert_eq!(
                (pool.active_nanos(), pool.backlog_nanos()),
                (0, 0),
                "{ms} ms"
            );
        }
        clock.advance_nanos(MS);
        pool.refill(MS).unwrap();
        let g = h.join().unwrap().unwrap();
        assert_eq!(g.permits(), 5);
        assert_eq!((g.scheduled_nanos(), g.started_nanos()), (0, 4 * MS));
        assert_eq!((pool.active_nanos(), pool.backlog_nanos()), (0, 0));
        clock.advance_nanos(MS);
        pool.refill(MS).unwrap();
        assert_eq!(pool.try_acquire().unwrap().scheduled_nanos(), 5 * MS);
    });
}

/// Inline filling naps at most an active pool's worth at a time, so a claim
/// larger than the pool fills it without overflowing its tokens into the
/// waiting pool as a backlog nobody incurred.
#[test]
fn inline_multi_permit_acquire_makes_no_backlog() {
    let (clock, pool) = inline(1000.0, 1.1);
    let g = pool.acquire_n(5).unwrap();
    assert_eq!((g.scheduled_nanos(), g.started_nanos()), (0, 4 * MS));
    assert_eq!(clock.now_nanos(), 4 * MS);
    assert_eq!((pool.active_nanos(), pool.backlog_nanos()), (0, 0));
    let g = pool.acquire();
    assert_eq!((g.scheduled_nanos(), g.started_nanos()), (5 * MS, 5 * MS));
}

/// An inline fill that comes late while claims wait (an async caller that
/// slept past a 1 ms timer tick, a preempted thread) gives the claims every
/// token it measured: time someone was waiting for is not backlog. G2's step
/// alone would have put the 0.5 ms beyond the active pool (1 ms) into the
/// waiting pool and handed back only 0.1 ms of it at burst 1.1.
#[test]
fn a_late_inline_fill_serves_waiting_claims_before_the_pools() {
    let (clock, pool) = inline(10_000.0, 1.1); // 100 µs per op, 1 ms active pool
    pool.try_acquire().unwrap(); // the pre-filled op
    let first = pool.reserve(20, None).unwrap(); // 2 ms of tokens, nobody fills
    assert_eq!(pool.waiters(), 1);
    clock.advance_nanos(1_500_000);
    // The next caller fills for the 1.5 ms that passed: all of it is owed.
    let second = pool.reserve(1, None).unwrap();
    assert!(second.claim().is_some());
    assert_eq!(pool.backlog_nanos(), 0, "owed time counted as backlog");
    assert_eq!(pool.active_nanos(), 0);
    // The first claim lacks 0.5 ms; the second's 0.1 ms comes after it.
    assert_eq!(second.scheduled_nanos(), 2_100_000);
    assert_eq!(second.ready_nanos(), 1_500_000 + 600_000);
    clock.advance_nanos(600_000);
    let third = pool.reserve(1, None).unwrap();
    assert_eq!(pool.waiters(), 1, "both earlier claims completed");
    assert_eq!(third.scheduled_nanos(), 2_200_000);
    assert_eq!((pool.backlog_nanos(), pool.active_nanos()), (0, 0));
    // Waiting for a completed claim returns at once.
    assert_eq!(pool.wait_for(first).started_nanos(), 2_100_000);
    // Time nobody waits for still overflows as G2's: idle 3 ms with only the
    // third claim (0.1 ms) owed.
    // 0.1 ms to the claim; of the 2.9 ms left, 1 ms fills the active pool
    // and 1.9 ms overflows; the burst fill moves 0.1 ms back; the caller's
    // op takes 0.1 ms.
    clock.advance_nanos(3 * MS);
    pool.reserve(1, None).unwrap();
    assert_eq!(pool.active_nanos(), MS);
    assert_eq!(pool.backlog_nanos(), 1_800_000);
}

#[test]
fn an_orphan_claim_is_served_and_does_not_block_later_callers() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.0);
        let pool = Arc::new(pool);
        pool.try_acquire().unwrap();
        // A reservation nobody waits for.
        let orphan = pool.reserve(1, None).unwrap();
        assert!(orphan.claim().is_some());
        assert_eq!(orphan.scheduled_nanos(), MS);
        assert_eq!(pool.waiters(), 1);
        let h = spawn_acquire(&pool, 1);
        clock.advance_nanos(MS);
        pool.refill(MS).unwrap(); // the orphan's, first come first served
        await_waiters(&pool, 1);
        assert!(!h.is_finished());
        clock.advance_nanos(MS);
        pool.refill(MS).unwrap();
        let g = h.join().unwrap().unwrap();
        assert_eq!((g.scheduled_nanos(), g.started_nanos()), (2 * MS, 2 * MS));
        assert_eq!((pool.waiters(), pool.active_nanos()), (0, 0));
        // Waiting for the orphan later returns at once: its tokens came.
        let late = (*pool).wait_for(orphan);
        assert_eq!((late.scheduled_nanos(), late.started_nanos()), (MS, 2 * MS));

        // Inline: the next caller's nap covers the orphan's tokens too.
        let (clock, pool) = inline(1000.0, 1.1);
        pool.acquire();
        let orphan = pool.reserve(1, None).unwrap();
        assert!(orphan.claim().is_some());
        let g = pool.acquire();
        assert_eq!((g.scheduled_nanos(), g.started_nanos()), (2 * MS, 2 * MS));
        assert_eq!(clock.now_nanos(), 2 * MS);
        assert_eq!((pool.waiters(), pool.backlog_nanos()), (0, 0));
    });
}

// ---- errors ----

#[test]
fn zero_permits_and_spans_over_2_62_ns_are_errors() {
    let (_, pool) = manual(1000.0, 1.1);
    let before = snapshot(&pool);
    assert_eq!(pool.reserve(0, None), Err(AcquireError::ZeroPermits));
    assert_eq!(pool.try_acquire_n(0), Err(AcquireError::ZeroPermits));
    assert_eq!(pool.acquire_n(0), Err(AcquireError::ZeroPermits));
    assert_eq!(
        pool.acquire_timeout(0, Duration::from_secs(1)),
        Err(AcquireError::ZeroPermits)
    );
    assert_eq!(snapshot(&pool), before);

    // 0.1 ops/s: 1e10 ns per op; 2^62 ns hold 461 168 601 ops.
    let (_, pool) = manual(0.1, 1.1);
    let before = snapshot(&pool);
    let over = AcquireError::InsufficientCapacity {
        requested: 461_168_602,
        max: 461_168_601,
    };
    assert_eq!(pool.acquire_n(461_168_602), Err(over));
    assert_eq!(pool.reserve(461_168_602, None), Err(over));
    assert_eq!(
        pool.try_acquire_n(u32::MAX),
        Err(AcquireError::InsufficientCapacity {
            requested: u32::MAX,
            max: 461_168_601
        })
    );
    assert_eq!(snapshot(&pool), before);
    // The largest span is only "not now".
    assert!(matches!(
        pool.try_acquire_n(461_168_601),
        Err(AcquireError::WouldWait { .. })
    ));
    assert_eq!(snapshot(&pool), before);
}

#[test]
fn bad_burst_ratios_and_fill_intervals_are_errors_at_build() {
    let build = |burst: f64, filling: Filling| {
        TokenPool::builder(Rate::new(1000.0).unwrap())
            .burst_ratio(burst)
            .filling(filling)
            .verb(Verb::Configure) // no filler thread for the valid ones
            .build_with_clock(ManualClock::new(0))
    };
    assert_eq!(
        build(0.9, Filling::Manual).unwrap_err(),
        ConfigError::from(PoolError::BurstBelowOne(0.9))
    );
    let err = build(f64::NAN, Filling::Manual).unwrap_err();
    assert!(matches!(err.downcast_ref(), Some(PoolError::BurstNotFinite(b)) if b.is_nan()));
    for b in [f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(
            build(b, Filling::Inline).unwrap_err(),
            ConfigError::from(PoolError::BurstNotFinite(b))
        );
    }
    for bad in [
        Duration::ZERO,
        Duration::from_nanos(999),
        Duration::from_secs(2),
        Duration::from_nanos(1_000_000_001),
    ] {
        assert_eq!(
            build(1.1, Filling::Thread(bad)).unwrap_err(),
            ConfigError::from(TokenPoolError::FillInterval(bad))
        );
    }
    for good in [MIN_FILL_INTERVAL, MAX_FILL_INTERVAL] {
        assert_eq!(
            build(1.1, Filling::Thread(good)).unwrap().filling(),
            Filling::Thread(good)
        );
    }
    assert!(build(1.0, Filling::Manual).is_ok());
}

#[test]
fn a_failed_configure_changes_nothing() {
    let (_, pool) = manual(1000.0, 1.1);
    pool.refill(10 * MS).unwrap();
    let before = (
        pool.rate(),
        pool.burst_ratio(),
        pool.nanos_per_op(),
        snapshot(&pool),
    );
    let rate = Rate::new(1e6).unwrap();
    assert_eq!(
        pool.configure(rate, 0.9),
        Err(PoolError::BurstBelowOne(0.9).into())
    );
    assert!(pool.configure(rate, f64::NAN).is_err());
    assert_eq!(
        pool.configure(rate, f64::INFINITY),
        Err(PoolError::BurstNotFinite(f64::INFINITY).into())
    );
    // A rate whose op slice is under 1 ns.
    let err = pool.configure(Rate::new(2e9).unwrap(), 1.1).unwrap_err();
    assert_eq!(err.kind(), crate::ConfigErrorKind::Rate);
    assert!(pool
        .apply(&"2000000000,1.1,restart".parse().unwrap())
        .is_err());
    let after = (
        pool.rate(),
        pool.burst_ratio(),
        pool.nanos_per_op(),
        snapshot(&pool),
    );
    assert_eq!(after, before);
}

#[test]
fn refill_needs_manual_filling() {
    let (_, pool) = inline(1000.0, 1.1);
    let before = snapshot(&pool);
    assert_eq!(pool.refill(MS), Err(TokenPoolError::NotManual.into()));
    assert_eq!(snapshot(&pool), before);

    let pool = TokenPool::builder(Rate::new(1000.0).unwrap())
        .filling(Filling::Thread(Duration::from_millis(1)))
        .build_with_clock(ManualClock::new(0))
        .unwrap();
    assert_eq!(pool.refill(MS), Err(TokenPoolError::NotManual.into()));
    assert_eq!(pool.active_nanos(), MS);
    pool.stop(); // joins the filler
}

// ---- conservation ----

/// A claim of the model below: its span and the tokens it still needs.
struct ModelClaim {
    span: u64,
    remaining: u64,
    permits: u32,
}

/// In Manual mode, over a long pseudo-random sequence of refills, tries,
/// orphan reservations and clock moves, the pool matches a model built on
/// [`Pools`] (same active and waiting pools, same queue), and tokens are
/// conserved: pre-fill + refills = active + waiting + tokens of the ops
/// granted + tokens held by partly served claims.
#[test]
fn tokens_are_conserved_in_manual_mode() {
    for burst in [1.0, 1.1, 2.0] {
        let (clock, pool) = manual(1000.0, burst);
        let npo = pool.nanos_per_op();
        let mut model = pool.pools(); // after the pre-fill
        let mut claims: VecDeque<ModelClaim> = VecDeque::new();
        let mut refilled = npo; // the pre-fill
        let mut granted = 0u64; // permits, taken at once or by completed claims
        let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ burst.to_bits();
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        // Gives the model's active pool to its claims, oldest first.
        let serve = |model: &mut Pools, claims: &mut VecDeque<ModelClaim>, granted: &mut u64| {
            let owed: u64 = claims.iter().map(|c| c.remaining).sum();
            let mut give = model.take_up_to(owed);
            while give > 0 {
                let front = claims.front_mut().unwrap();
                let g = give.min(front.remaining);
                front.remaining -= g;
                give -= g;
                if front.remaining == 0 {
                    *granted += u64::from(claims.pop_front().unwrap().permits);
                }
            }
        };
        for step in 0..2_000 {
            match next(4) {
                0 => {
                    let n = match next(3) {
                        0 => next(MS),
                        1 => next(5 * MS),
                        _ => next(20 * MS),
                    };
                    pool.refill(n).unwrap();
                    model.refill(n);
                    refilled += n;
                    serve(&mut model, &mut claims, &mut granted);
                }
                1 => {
                    let k = 1 + next(3) as u32;
                    let span = u64::from(k) * npo;
                    let r = pool.try_acquire_n(k);
                    let can = claims.is_empty() && model.active() >= span;
                    assert_eq!(r.is_ok(), can, "step {step}: try {k}");
                    if can {
                        model.take_up_to(span);
                        granted += u64::from(k);
                    }
                }
                2 => {
                    let k = 1 + next(4) as u32;
                    let span = u64::from(k) * npo;
                    let g = pool.reserve(k, None).unwrap();
                    if claims.is_empty() && model.active() >= span {
                        assert!(g.claim().is_none(), "step {step}");
                        model.take_up_to(span);
                        granted += u64::from(k);
                    } else {
                        assert!(g.claim().is_some(), "step {step}");
                        claims.push_back(ModelClaim {
                            span,
                            remaining: span,
                            permits: k,
                        });
                        serve(&mut model, &mut claims, &mut granted);
                    }
                }
                _ => clock.advance_nanos(next(3 * MS)),
            }
            let p = pool.pools();
            assert_eq!(
                (p.active(), p.waiting()),
                (model.active(), model.waiting()),
                "step {step}"
            );
            assert_eq!(pool.waiters(), claims.len(), "step {step}");
            let held: u64 = claims.iter().map(|c| c.span - c.remaining).sum();
            assert_eq!(
                refilled,
                pool.active_nanos() + pool.backlog_nanos() + granted * npo + held,
                "step {step}: tokens not conserved"
            );
        }
        assert!(
            granted > 100 && refilled > 100 * MS,
            "burst {burst}: a real run"
        );
    }
}

// ---- inline filling with several threads ----

/// Three threads acquiring back to back on an inline pool and a manual
/// clock: the clock moves only by the waiters' naps, every op starts no
/// earlier than its tokens existed, none is lost or doubled, no wake-up is
/// lost (the test would hang), and no backlog appears.
#[test]
fn inline_waiters_take_turns_refilling() {
    crate::test_util::within(|| {
        let (clock, pool) = inline(1000.0, 1.1);
        let pool = Arc::new(pool);
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let p = Arc::clone(&pool);
                std::thread::spawn(move || (0..20).map(|_| (*p).acquire()).collect::<Vec<_>>())
            })
            .collect();
        let mut grants: Vec<Grant> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        grants.sort_by_key(|g| g.scheduled_nanos());
        for (k, g) in grants.iter().enumerate() {
            assert_eq!(g.scheduled_nanos(), k as u64 * MS, "op {k}");
            assert!(g.started_nanos() >= g.scheduled_nanos(), "op {k} early");
        }
        // 60 ops: the pre-fill and 59 ms of naps, all of it for the ops.
        assert_eq!(clock.now_nanos(), 59 * MS);
        assert_eq!(
            (pool.waiters(), pool.active_nanos(), pool.backlog_nanos()),
            (0, 0, 0)
        );
    });
}

#[test]
fn an_op_after_a_caller_stall_reports_the_stall_by_default() {
    // Tokens banked before the stall are still in the active pool afterwards;
    // the op that takes them must measure its wait against the clock now, not
    // against the last reading before the stall.
    let clock = ManualClock::new(0);
    let build = |cached: bool| {
        TokenPool::builder(Rate::new(1000.0).unwrap())
            .filling(Filling::Manual)
            .cached_clock(cached)
            .build_with_clock(clock.clone())
            .unwrap()
    };
    let pool = build(false);
    let start = clock.now_nanos();
    pool.refill(MS).unwrap(); // two ops banked
    clock.advance_nanos(2 * MS);
    assert_eq!(pool.try_acquire().unwrap().wait_nanos(), 2 * MS);
    clock.advance_nanos(1_000 * MS); // the caller stalls; no fill meanwhile
    let g = pool.try_acquire().unwrap();
    assert_eq!(g.scheduled_nanos(), start + MS);
    assert_eq!(g.wait_nanos(), 1_001 * MS);

    // With the cached clock the same op reports only the stale reading's lag.
    let pool = build(true);
    let start = clock.now_nanos();
    pool.refill(MS).unwrap();
    clock.advance_nanos(2 * MS);
    pool.try_acquire().unwrap(); // reads the clock: start + 2 ms
    clock.advance_nanos(1_000 * MS);
    let g = pool.try_acquire().unwrap();
    assert_eq!(g.scheduled_nanos(), start + MS);
    assert_eq!(g.wait_nanos(), MS, "the reading from before the stall");
}

#[test]
fn a_1_s_stall_at_burst_1_1_is_caught_up_at_1100_per_s_then_the_rate_is_1000() {
    // The scenario, exactly, on a manual clock: 1000 ops/s, burst
    // 1.1, a caller that stalls 1 s and then acquires back to back.
    let (clock, pool) = inline(1000.0, 1.1);
    pool.acquire();
    clock.advance_nanos(1_000 * MS);
    let start = clock.now_nanos();
    let mut per_second = [0u32; 14];
    let mut backlog_gone_at = None;
    loop {
        let g = pool.acquire();
        let s = ((g.started_nanos() - start) / (1_000 * MS)) as usize;
        if s >= per_second.len() {
            break;
        }
        per_second[s] += 1;
        if backlog_gone_at.is_none() && pool.backlog_nanos() == 0 {
            backlog_gone_at = Some(g.started_nanos() - start);
        }
    }
    // The backlog (1 s minus the 2.2 ms banked in the active pool) drains at
    // 0.1 ms per ms: gone after ~10 s.
    let gone = backlog_gone_at.expect("the backlog drains");
    assert!((9_900 * MS..=10_000 * MS).contains(&gone), "gone at {gone}");
    for (s, &n) in per_second.iter().enumerate() {
        match s {
            // Second 0 also has the ops banked in the active pool.
            0 => assert!((1100..=1103).contains(&n), "second {s}: {n}"),
            1..=8 => assert!((1099..=1101).contains(&n), "second {s}: {n}"),
            9 => assert!((1000..=1101).contains(&n), "second {s}: {n}"),
            _ => assert!((999..=1001).contains(&n), "second {s}: {n}"),
        }
    }
}

// ---- cancel ----

#[test]
fn cancelling_a_queued_claim_leaves_the_pool_as_it_was() {
    let (clock, pool) = manual(1000.0, 1.1);
    pool.try_acquire().unwrap();
    clock.advance_nanos(MS / 4);
    pool.refill(MS / 4).unwrap();
    let before = snapshot(&pool);
    let claim = pool.reserve(2, None).unwrap();
    assert!(claim.claim().is_some());
    assert_eq!(pool.waiters(), 1);
    assert_eq!(pool.active_nanos(), 0, "the quarter op went to the claim");
    assert!(pool.cancel(&claim));
    assert_eq!(snapshot(&pool), before, "its quarter op is back");
    // The next reservation is the one the cancelled claim was.
    let again = pool.reserve(2, None).unwrap();
    assert_eq!(
        (
            again.scheduled_nanos(),
            again.ready_nanos(),
            again.started_nanos()
        ),
        (
            claim.scheduled_nanos(),
            claim.ready_nanos(),
            claim.started_nanos()
        )
    );
}

#[test]
fn cancelling_twice_a_served_claim_or_a_foreign_grant_is_refused() {
    let (clock, pool) = manual(1000.0, 1.0);
    let (_, other) = manual(1000.0, 1.0);
    pool.try_acquire().unwrap();
    let claim = pool.reserve(1, None).unwrap();
    assert!(pool.cancel(&claim));
    let before = snapshot(&pool);
    assert!(!pool.cancel(&claim), "withdrawn already");
    assert_eq!(snapshot(&pool), before);

    // Another pool's claim with the same id, for another number of permits.
    other.try_acquire().unwrap();
    other.reserve(1, None).unwrap();
    let foreign = other.reserve(2, None).unwrap();
    let mine = pool.reserve(1, None).unwrap();
    assert_eq!(foreign.claim(), mine.claim());
    let before = snapshot(&pool);
    assert!(!pool.cancel(&foreign));
    assert_eq!(snapshot(&pool), before);
    // A grant built by hand with this pool's times has no claim.
    assert!(!pool.cancel(&Grant::new(
        mine.scheduled_nanos(),
        mine.ready_nanos(),
        mine.started_nanos(),
        1
    )));

    // Completed by a fill: its tokens are spent, it is due.
    clock.advance_nanos(MS);
    pool.refill(MS).unwrap();
    assert_eq!(pool.waiters(), 0);
    let before = snapshot(&pool);
    assert!(!pool.cancel(&mine));
    assert_eq!(snapshot(&pool), before);
}

#[test]
fn a_grant_that_took_its_tokens_is_not_given_back() {
    let (clock, pool) = manual(1000.0, 1.1);
    clock.advance_nanos(2 * MS);
    pool.refill(2 * MS).unwrap();
    let g = pool.try_acquire().unwrap();
    assert!(g.claim().is_none());
    let before = snapshot(&pool);
    assert!(!pool.cancel(&g), "tokens are past time: the op is due");
    assert_eq!(snapshot(&pool), before);
}

#[test]
fn a_claim_a_thread_waits_on_is_not_withdrawn() {
    crate::test_util::within(|| {
        let (clock, pool) = manual(1000.0, 1.0);
        let pool = Arc::new(pool);
        pool.try_acquire().unwrap();
        let claim = pool.reserve(1, None).unwrap();
        let p = Arc::clone(&pool);
        let h = std::thread::spawn(move || (*p).wait_for(claim));
        // Wait until the waiter has registered on the claim.
        while !pool.claim_is_held(claim.claim().unwrap()) {
            std::thread::yield_now();
        }
        assert!(!pool.cancel(&claim), "the waiting thread owns it");
        assert_eq!(pool.waiters(), 1);
        clock.advance_nanos(MS);
        pool.refill(MS).unwrap();
        let g = h.join().unwrap();
        assert_eq!((g.scheduled_nanos(), g.started_nanos()), (MS, MS));
    });
}

#[test]
fn a_claim_with_later_claims_is_withdrawn_and_they_keep_their_times() {
    let (clock, pool) = manual(1000.0, 1.0);
    pool.try_acquire().unwrap();
    let a = pool.reserve(1, None).unwrap();
    let b = pool.reserve(1, None).unwrap();
    assert_eq!((a.scheduled_nanos(), b.scheduled_nanos()), (MS, 2 * MS));
    clock.advance_nanos(MS / 2);
    pool.refill(MS / 2).unwrap(); // half of a's tokens
    assert!(pool.cancel(&a));
    assert_eq!(pool.waiters(), 1);
    assert_eq!(pool.active_nanos(), 0, "a's half op went to b");
    clock.advance_nanos(MS / 2);
    pool.refill(MS / 2).unwrap(); // b is complete: a's tokens came first
    assert_eq!(pool.waiters(), 0);
    let done = pool.wait_for(b);
    assert_eq!(
        b.ready_nanos(),
        2 * MS,
        "b's estimate stands, now conservative"
    );
    assert_eq!(done.started_nanos(), MS);
    // Both cancelled: the later one first, then the earlier.
    let c = pool.reserve(1, None).unwrap();
    let d = pool.reserve(1, None).unwrap();
    assert!(pool.cancel(&d) && pool.cancel(&c));
    assert_eq!(pool.waiters(), 0);
}

#[test]
fn a_withdrawn_claims_tokens_fill_the_active_pool_and_overflow_to_waiting() {
    let (clock, pool) = manual(1000.0, 1.1); // max_over_active 2.2 ms
    pool.try_acquire().unwrap();
    let big = pool.reserve(5, None).unwrap();
    for _ in 0..3 {
        clock.advance_nanos(MS);
        pool.refill(MS).unwrap();
    }
    assert_eq!((pool.active_nanos(), pool.backlog_nanos()), (0, 0));
    // The estimate (5 ms) passes; the claim is still short of 2 ms of tokens.
    clock.advance_nanos(3 * MS);
    assert!(big.ready_nanos() < clock.now_nanos());
    assert!(pool.cancel(&big));
    assert_eq!(pool.active_nanos(), 2_200_000, "up to max_over_active");
    assert_eq!(pool.backlog_nanos(), 800_000, "the rest, as backlog");
    // Conserved: 1 ms pre-filled + 3 ms refilled = the op taken + 3 ms.
    let pools = pool.pools();
    assert_eq!(pools.active() + pools.waiting() + MS, 4 * MS);
    // The returned tokens are taken by ops scheduled where the claim was.
    assert_eq!(pool.try_acquire().unwrap().scheduled_nanos(), MS);
}

#[test]
fn effective_rate_is_one_second_over_the_truncated_tokens_per_op() {
    let (_, pool) = manual(3.0, 1.1);
    assert_eq!(pool.nanos_per_op(), 333_333_333);
    assert_eq!(pool.effective_rate(), 1e9 / 333_333_333.0);
    pool.configure(Rate::new(1000.0).unwrap(), 1.1).unwrap();
    assert_eq!(pool.effective_rate(), 1000.0);
    pool.configure(Rate::new(5.1e8).unwrap(), 1.1).unwrap();
    assert_eq!((pool.nanos_per_op(), pool.effective_rate()), (1, 1e9));
}

#[test]
fn effective_rate_is_what_the_fills_meter() {
    // 5.1e8/s: each op takes 1 ns of tokens, so 1 µs of fills meters
    // 1000 ops, 1e9/s, as reported (not 510).
    let (_, pool) = manual(5.1e8, 1.0);
    while pool.try_acquire().is_ok() {} // whatever the start pre-filled
    pool.refill(1_000).unwrap();
    let mut ops = 0u64;
    while pool.try_acquire().is_ok() {
        ops += 1;
    }
    assert_eq!(ops, 1000);
    assert_eq!(ops as f64 * 1e9 / 1_000.0, pool.effective_rate());
}

#[test]
fn a_claim_the_clock_cannot_count_to_is_refused_not_waited_for() {
    // Issue 16: at the end of the clock's range (or behind a fill made
    // there) a claim's tokens are time that never passes: a blocking
    // acquire spun for ever. It is now refused as the Pacer refuses a
    // schedule past its horizon. Run on a thread so a regression fails
    // instead of hanging the suite.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let clock = ManualClock::new(u64::MAX - 10 * MS);
        let pool = TokenPool::builder(Rate::new(10.0).unwrap())
            .build_with_clock(clock.clone())
            .unwrap();
        pool.try_acquire().unwrap(); // the prefilled op
        let at_end = pool.acquire_n(1);
        let timed = pool.acquire_timeout(1, Duration::from_secs(1));
        // Behind the latest fill: that time is not counted again.
        clock.set_nanos(u64::MAX - 200 * MS);
        let behind = pool.acquire_n(1);
        let _ = tx.send((at_end, timed, behind, pool.waiters()));
    });
    let (at_end, timed, behind, waiters) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("an acquire at the end of the clock hung");
    assert_eq!(at_end, Err(AcquireError::ScheduleExhausted));
    assert_eq!(timed, Err(AcquireError::ScheduleExhausted));
    assert_eq!(behind, Err(AcquireError::ScheduleExhausted));
    assert_eq!(waiters, 0, "a refused claim stays out of the queue");
}

#[test]
fn claims_past_u64_max_tokens_are_refused_and_cancelling_them_never_underflows() {
    // Issue 16, finding 6: the tokens owed to queued claims were added with
    // saturation but subtracted exactly. At about one op per century, a few
    // claims' spans sum past `u64::MAX`; at clock reading 0 the wait check
    // let them all queue, and cancelling them subtracted more than had been
    // added (a panic in debug builds, a wrapped total in release). Run on a
    // thread so a regression that hangs fails instead.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (clock, pool) = manual(1e9 / (1u64 << 61) as f64, 1.1);
        let npo = pool.nanos_per_op();
        assert!(npo >= 1 << 60, "{npo}");
        pool.try_acquire().unwrap(); // the prefilled op
                                     // Enough one-op claims that their spans sum past u64::MAX.
        let fits = usize::try_from(u64::MAX / npo).unwrap();
        let results: Vec<_> = (0..=fits).map(|_| pool.reserve(1, None)).collect();
        let queued = pool.waiters();
        let estimates: Vec<_> = results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(Grant::ready_nanos)
            .collect();
        // Cancel the later half first, then the rest: every cancel must
        // find the owed total at least the claim's remaining tokens.
        let grants: Vec<_> = results.iter().filter_map(|r| r.ok()).collect();
        let (early, late) = grants.split_at(grants.len() / 2);
        let cancelled = late.iter().chain(early).all(|g| pool.cancel(g));
        let after_cancel = pool.waiters();
        // Nothing is owed: the pool refuses until time passes, then grants
        // from the start of the queue again.
        let refused = pool.try_acquire().is_err();
        clock.advance_nanos(npo);
        pool.refill(npo).unwrap();
        let granted = pool.try_acquire();
        let _ = tx.send((
            npo,
            fits,
            results,
            queued,
            estimates,
            cancelled,
            after_cancel,
            refused,
            granted,
        ));
    });
    let (npo, fits, results, queued, estimates, cancelled, after_cancel, refused, granted) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the worker panicked or hung");
    // The claims whose tokens fit in a u64 queue, with exact estimates.
    for (i, r) in results.iter().take(fits).enumerate() {
        let g = r.as_ref().expect("a claim that fits is queued");
        assert!(g.claim().is_some());
        assert_eq!(g.ready_nanos(), (i as u64 + 1) * npo);
    }
    assert_eq!(estimates.len(), fits);
    // The one that would overflow the owed total is refused: its tokens
    // come after more time than the clock can count.
    assert_eq!(results[fits], Err(AcquireError::ScheduleExhausted));
    assert_eq!(queued, fits, "a refused claim stays out of the queue");
    assert!(cancelled, "every queued claim is withdrawn");
    assert_eq!(after_cancel, 0);
    assert!(refused, "no tokens until time passes");
    let g = granted.expect("one op's time has passed");
    assert_eq!(
        g.scheduled_nanos(),
        npo,
        "where the first cancelled claim was"
    );
}
