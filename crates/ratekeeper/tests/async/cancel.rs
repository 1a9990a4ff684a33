//! Issue 16, finding 4: async acquires abandoned while they wait must not
//! lose their limiter's rate. Tasks loop on `timeout(d, acquire_async())`,
//! half the attempts with a timeout too short to be served; the grants the
//! others complete, on paused time and a `TokioClock`, must come within 5 %
//! of the rate (before the fix: about half of it).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratekeeper::bucket::{CycleConfig, CycleLimiter, RefillConfig, RefillLimiter};
use ratekeeper::tokio::{AsyncRateLimiter, TokioClock};
use ratekeeper::{Pacer, Rate, RateLimiter, SmoothBursty, SmoothWarmingUp};
use tokio::time::{timeout, Instant};

/// 100 permits per second: a 10 ms slot, on whole milliseconds.
const RATE: f64 = 100.0;
const SLOT_MS: u64 = 10;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs `tasks` tasks for `span` on `limiter`; each alternates an attempt
/// with a timeout of `short` (abandoned: the queue is longer) and one with
/// a timeout long enough to be served. Returns when each served grant was
/// let go, in ms from the start.
async fn half_cancelled<L>(
    limiter: Arc<L>,
    tasks: usize,
    short: Duration,
    span: Duration,
) -> Vec<u64>
where
    L: RateLimiter + Send + Sync + 'static,
{
    let start = Instant::now();
    let served = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (limiter, served) = (limiter.clone(), served.clone());
            tokio::spawn(async move {
                let mut attempt = 0u64;
                while start.elapsed() < span {
                    attempt += 1;
                    let d = if attempt % 2 == 1 { short } else { ms(10_000) };
                    if timeout(d, limiter.acquire_async()).await.is_ok() {
                        let at = start.elapsed().as_millis() as u64;
                        served.lock().unwrap().push(at);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    let mut v = served.lock().unwrap().clone();
    v.sort_unstable();
    v
}

/// Grants let go in `[from, to)` ms must be within 5 % of the rate's.
fn assert_rate(name: &str, served: &[u64], from: u64, to: u64) {
    let n = served.iter().filter(|&&t| t >= from && t < to).count() as f64;
    let want = (to - from) as f64 / SLOT_MS as f64;
    let ratio = n / want;
    assert!(
        (0.95..=1.05).contains(&ratio),
        "{name}: {n} grants in {} ms, {:.1} % of the rate",
        to - from,
        ratio * 100.0
    );
}

async fn check<L>(name: &str, limiter: L)
where
    L: RateLimiter + Send + Sync + 'static,
{
    let served = half_cancelled(Arc::new(limiter), 8, ms(35), ms(11_000)).await;
    assert_rate(name, &served, 1_000, 11_000);
}

#[tokio::test(start_paused = true)]
async fn pacer_keeps_its_rate_with_half_the_acquires_cancelled() {
    for strictness in [1.1, 1.0, 0.0, 0.5] {
        let p = Pacer::builder(Rate::new(RATE).unwrap())
            .strictness(strictness)
            .build_with_clock(TokioClock::new())
            .unwrap();
        check(&format!("pacer strictness {strictness}"), p).await;
    }
}

#[tokio::test(start_paused = true)]
async fn smooth_limiters_keep_their_rate_with_half_the_acquires_cancelled() {
    let l = SmoothBursty::builder(RATE)
        .build_with_clock(TokioClock::new())
        .unwrap();
    check("smooth bursty", l).await;
    let l = SmoothWarmingUp::builder(RATE)
        .warmup(ms(200))
        .build_with_clock(TokioClock::new())
        .unwrap();
    check("smooth warming up", l).await;
}

#[tokio::test(start_paused = true)]
async fn refill_limiters_keep_their_rate_with_half_the_acquires_cancelled() {
    let config = RefillConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(ms(SLOT_MS))
        .build()
        .unwrap();
    check(
        "refill",
        RefillLimiter::new_with_clock(config, TokioClock::new()),
    )
    .await;
    let config = CycleConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(ms(SLOT_MS))
        .build()
        .unwrap();
    check(
        "cycle",
        CycleLimiter::new_with_clock(config, TokioClock::new()),
    )
    .await;
}
