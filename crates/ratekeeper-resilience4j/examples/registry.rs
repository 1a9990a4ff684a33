//! Resilience4j's `RateLimiterRegistry`: named limiters, created on first
//! use from a shared default configuration or a named one.
//!
//! Run with `cargo run -p ratekeeper-resilience4j --example registry`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ratekeeper_resilience4j::registry::Registry;
use ratekeeper_resilience4j::{ConfigBuilder, PermitLimiter, RefillLimiter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::<RefillLimiter>::builder()
        // Every limiter: 10 permits per 100 ms, starting with 10; a call
        // waits at most 50 ms for a permit and is refused otherwise.
        .defaults(
            ConfigBuilder::new()
                .limit_for_period(10)
                .limit_refresh_period(Duration::from_millis(100))
                .timeout(Duration::from_millis(50)),
        )
        // A named configuration that overrides one field: 1 per 100 ms.
        .configuration_overrides("slow", ConfigBuilder::new().limit_for_period(1))
        .build()?;

    // The registry announces each limiter it creates.
    registry
        .events()
        .on_added(|l| println!("created limiter {:?}", l.name()));

    let api = registry.limiter("api"); // created, from the defaults
    let reports = registry.limiter_from_configuration("reports", "slow")?;
    // Asking again for a name gives the same limiter, shared as an `Arc`.
    assert!(Arc::ptr_eq(&api, &registry.limiter("api")));

    calls(&api, 12); // 10 at once, then 2 that wait for the refill
    calls(&reports, 3); // 1 at once; the next is 100 ms away: refused
    Ok(())
}

/// Makes `n` calls on `limiter` back to back, printing what each got.
fn calls(limiter: &RefillLimiter, n: u32) {
    for i in 1..=n {
        let asked = Instant::now();
        // Waits for a permit up to the timeout; `false` if refused.
        let permitted = limiter.acquire_permission(1).expect("1 permit fits");
        let verdict = if permitted { "permitted" } else { "refused" };
        let waited = asked.elapsed().as_secs_f64() * 1e3;
        println!(
            "{} call {i:2}: {verdict} after {waited:.1} ms",
            limiter.name()
        );
    }
    let left = limiter.metrics().available_permissions;
    println!("{}: {left} permits left", limiter.name());
}
