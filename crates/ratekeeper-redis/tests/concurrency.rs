//! Many callers on one key: tasks through one backend, and processes each
//! with its own, never take more than the limit gives over the run.

mod common;

use std::time::{Duration, Instant};

use ratekeeper::refill::RefillConfig;
use ratekeeper_redis::{Backend, FailurePolicy, RedisLimiter, SharedLimit, Source};

/// Try-acquires on a bucket that starts empty are granted once it has
/// refilled (on the server's clock): a refused first request starts the
/// bucket too.
#[test]
fn try_acquire_on_an_empty_new_bucket_is_granted_once_it_refills() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::builder(url)
            .deadline(Duration::from_secs(2))
            .connect()
            .await
            .unwrap();
        // One permit a millisecond, none at the start.
        let config = RefillConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_millis(1))
            .permit_capacity(1)
            .initial_permits(0)
            .timeout(Duration::ZERO)
            .build()
            .unwrap();
        let limiter =
            RedisLimiter::builder(&backend, common::key("empty"), SharedLimit::Refill(config))
                .failure_policy(FailurePolicy::Closed)
                .build()
                .unwrap();
        let start = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            let d = limiter.reserve(1, Some(Duration::ZERO)).await;
            assert_eq!(d.source(), Source::Redis, "{:?}", d.backend_error());
            if d.is_granted() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(1),
                "no grant in 1 s ({tries} tries) at a permit a millisecond"
            );
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
    });
}
