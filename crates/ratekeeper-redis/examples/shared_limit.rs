//! A few tasks sharing one limit kept on Redis, with the default failure
//! policy (`LocalLearned`): each asks for permits in turn and prints the
//! decision and where it came from. Run it twice at once and the two
//! processes share the same 5 a second.
//!
//! ```text
//! cargo run -p ratekeeper-redis --example shared_limit -- redis://127.0.0.1:6379/
//! bash scripts/with-redis.sh sh -c 'cargo run -p ratekeeper-redis --example shared_limit -- "$REDIS_URL"'
//! ```
//!
//! The argument is the server's URL (default `REDIS_URL`, else
//! `redis://127.0.0.1:6379/`). Stop the server while it runs to see the
//! local fallback decide (`local`), and restart it to see Redis decide
//! again (`redis`).

use std::time::Duration;

use ratekeeper::Rate;
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".to_owned());
    let backend = Backend::connect(&url).await?;
    // 5 a second, strictly spaced, for everyone using the key.
    let limit = SharedLimit::pacer(Rate::new(5.0)?, 1.0)?;
    let limiter = std::sync::Arc::new(
        RedisLimiter::builder(&backend, "example:shared-limit", limit).build()?,
    );
    println!("failure policy: {:?}", limiter.failure_policy());
    let mut tasks = Vec::new();
    for task in 0..3 {
        let limiter = std::sync::Arc::clone(&limiter);
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
                // Refused unless a slot is free within 300 ms.
                let decision = limiter.reserve(1, Some(Duration::from_millis(300))).await;
                match decision.result() {
                    Ok(grant) => {
                        // Its slot may be ahead: go when it is ready.
                        let delay = Duration::from_nanos(grant.delay_nanos());
                        println!(
                            "task {task}: granted, go in {delay:?}, from {}",
                            decision.source()
                        );
                        tokio::time::sleep(delay).await;
                    }
                    Err(e) => {
                        let retry = e.retry_after().unwrap_or_default();
                        println!(
                            "task {task}: refused ({e}), retry after {retry:?}, from {}",
                            decision.source()
                        );
                        tokio::time::sleep(retry).await;
                    }
                }
                if let Some(error) = decision.backend_error() {
                    println!("task {task}:   (the server failed: {error})");
                }
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let stats = limiter.stats();
    println!(
        "decisions: {} ({} refused); from redis {}, from the local fallback {}",
        stats.total(),
        stats.refused,
        stats.from(ratekeeper_redis::Source::Redis),
        stats.from(ratekeeper_redis::Source::Local),
    );
    Ok(())
}
