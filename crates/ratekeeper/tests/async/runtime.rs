//! Many tasks sharing one limiter on a real multi-thread runtime, in real
//! time: the schedule is handed out once per permit, the rate holds, and
//! abandoned acquires leave nothing behind. The bounds are generous (the
//! machine may be loaded); the exact timings are in the paused-time tests.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratekeeper::pool::TokenPool;
use ratekeeper::tokio::AsyncRateLimiter;
use ratekeeper::{Pacer, Rate, RateLimiter};

use crate::common::within;

/// What each real-clock test here may take before it fails as hung: far
/// beyond its run time, generous for a loaded machine.
const LIMIT: Duration = Duration::from_secs(60);

const TASKS: usize = 64;
const PER_TASK: usize = 10;
const RATE: f64 = 5_000.0;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap()
}

/// Runs `TASKS` tasks of `PER_TASK` acquires each on the limiter `make`
/// builds; returns the limiter, every grant's scheduled time, and the wall
/// time from just before the limiter was built.
fn run_shared<L>(make: impl FnOnce() -> L) -> (Arc<L>, Vec<u64>, Duration)
where
    L: RateLimiter + Send + Sync + 'static,
{
    let rt = runtime();
    let start = Instant::now();
    let limiter = Arc::new(make());
    let l = limiter.clone();
    let (scheduled, elapsed) = rt.block_on(async move {
        let limiter = l;
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let l = limiter.clone();
                tokio::spawn(async move {
                    let mut scheduled = Vec::with_capacity(PER_TASK);
                    for _ in 0..PER_TASK {
                        scheduled.push(l.acquire_async().await.scheduled_nanos());
                    }
                    scheduled
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        (all, start.elapsed())
    });
    (limiter, scheduled, elapsed)
}

/// The least time `n` permits at `RATE` can take, less one timer tick of
/// early release.
fn least(n: usize) -> Duration {
    Duration::from_secs_f64((n - 1) as f64 / RATE).saturating_sub(Duration::from_millis(1))
}

#[test]
fn many_tasks_share_a_pacer() {
    within(LIMIT, || {
        let (_, scheduled, elapsed) = run_shared(|| Pacer::new(Rate::new(RATE).unwrap()).unwrap());
        let n = TASKS * PER_TASK;
        // Every slot handed out once: 640 distinct slots, 200 µs apart.
        let distinct: HashSet<_> = scheduled.iter().collect();
        assert_eq!(distinct.len(), n);
        let (lo, hi) = (
            scheduled.iter().min().unwrap(),
            scheduled.iter().max().unwrap(),
        );
        assert_eq!(hi - lo, (n as u64 - 1) * 200_000);
        assert!(elapsed >= least(n), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    });
}

#[test]
fn many_tasks_share_a_token_pool() {
    within(LIMIT, || {
        let (pool, scheduled, elapsed) =
            run_shared(|| TokenPool::new(Rate::new(RATE).unwrap()).unwrap());
        let n = TASKS * PER_TASK;
        assert_eq!(scheduled.len(), n);
        // Tokens are measured time: n ops cannot go faster than the rate
        // allows, less the pool's banked idle time (its active pool).
        let banked = Duration::from_nanos(pool.pools().max_over_active());
        assert!(elapsed + banked >= least(n), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    });
}

#[test]
fn abandoned_acquires_under_contention_leave_the_schedule_consistent() {
    within(LIMIT, || {
        // Half the tasks give up after 1 ms on every acquire; the other half
        // acquire normally. Whatever was given back, no slot is handed out
        // twice, and the pacer's schedule stays within what was reserved.
        let pacer = Arc::new(Pacer::new(Rate::new(RATE).unwrap()).unwrap());
        let origin = pacer.next_slot_nanos();
        let scheduled = runtime().block_on({
            let pacer = pacer.clone();
            async move {
                let tasks: Vec<_> = (0..TASKS)
                    .map(|i| {
                        let p = pacer.clone();
                        tokio::spawn(async move {
                            let mut got = Vec::new();
                            for _ in 0..PER_TASK {
                                if i % 2 == 0 {
                                    let r = tokio::time::timeout(
                                        Duration::from_millis(1),
                                        p.acquire_async(),
                                    )
                                    .await;
                                    if let Ok(g) = r {
                                        got.push(g.scheduled_nanos());
                                    }
                                } else {
                                    got.push(p.acquire_async().await.scheduled_nanos());
                                }
                            }
                            got
                        })
                    })
                    .collect();
                let mut all = Vec::new();
                for t in tasks {
                    all.extend(t.await.unwrap());
                }
                all
            }
        });
        let distinct: HashSet<_> = scheduled.iter().collect();
        assert_eq!(
            distinct.len(),
            scheduled.len(),
            "a slot was handed out twice"
        );
        assert!(scheduled.len() >= TASKS / 2 * PER_TASK);
        // The next free slot is no later than every reservation ever made,
        // and no earlier than the ones that went.
        let made = (TASKS * PER_TASK) as u64;
        let next = pacer.next_slot_nanos() - origin;
        assert!(next <= made * 200_000, "{next}");
        assert!(next >= scheduled.len() as u64 * 200_000, "{next}");
    });
}
