//! Many tasks sharing one limiter on a real multi-thread runtime, in real
//! time. The bounds are generous (the machine may be loaded); the exact
//! timings are in the paused-time tests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ratekeeper_resilience4j::tokio::AsyncPermitLimiter;
use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};

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

/// The least time `n` permits at `RATE` can take, less one timer tick of
/// early release.
fn least(n: usize) -> Duration {
    Duration::from_secs_f64((n - 1) as f64 / RATE).saturating_sub(Duration::from_millis(1))
}

#[test]
fn many_tasks_share_a_refill_limiter_with_events() {
    within(LIMIT, || {
        // 5 permits per ms, a bucket of 5 (empty at start), timeout 1 s.
        let config = RefillConfig::builder()
            .limit_for_period(5)
            .limit_refresh_period(Duration::from_millis(1))
            .initial_permits(0)
            .timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let limiter = Arc::new(RefillLimiter::new("shared", config));
        let granted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = granted.clone();
        limiter.events().on_success(move |_| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        let elapsed = runtime().block_on({
            let limiter = limiter.clone();
            async move {
                let start = Instant::now();
                let tasks: Vec<_> = (0..TASKS)
                    .map(|_| {
                        let l = limiter.clone();
                        tokio::spawn(async move {
                            for _ in 0..PER_TASK {
                                assert!(l.acquire_permission_async(1).await.unwrap());
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.unwrap();
                }
                start.elapsed()
            }
        });
        let n = TASKS * PER_TASK;
        assert_eq!(granted.load(std::sync::atomic::Ordering::Relaxed), n);
        assert_eq!(limiter.metrics().waiting_threads, 0);
        // The bucket holds 5 permits (1 ms) more than the schedule.
        assert!(
            elapsed + Duration::from_millis(1) >= least(n),
            "{elapsed:?}"
        );
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    });
}
