//! The announced policy is derived from the limiter's own configuration,
//! so the two cannot disagree: for every kind a keyed map keeps, the burst
//! `RateLimit-Policy` announces (`rk-burst`) is exactly what a key takes
//! at once after a long idle period, and the announced rate is never above
//! the limiter's.

use std::time::Duration;

use ratekeeper::keyed::Keyed;
use ratekeeper::ManualClock;
use ratekeeper_tower::{ConfigError, CoreKeyed, KeyedLimit, Policy};

/// Permits key 1 takes at once after an hour idle, on the manual clock.
fn measured_burst(limit: &CoreKeyed<u32, ManualClock>, clock: &ManualClock) -> u32 {
    let now = Some(Duration::ZERO);
    limit.reserve(&1, 1, now).unwrap();
    clock.advance(Duration::from_secs(3600));
    let mut n = 0;
    while limit.reserve(&1, 1, now).is_ok() {
        n += 1;
        assert!(n <= 100_000, "no burst bound");
    }
    n
}

fn core_keyed(config: &str) -> (CoreKeyed<u32, ManualClock>, ManualClock) {
    let clock = ManualClock::new(0);
    let limit = CoreKeyed::from_builder_with_clock(
        "p",
        Keyed::builder().max_keys(10),
        &config.parse().unwrap(),
        clock.clone(),
    )
    .unwrap_or_else(|e| panic!("{config}: {e}"));
    (limit, clock)
}

#[test]
fn the_announced_burst_is_what_a_key_takes_at_once() {
    let configs = [
        "refill:2,1s,capacity=5",
        "refill:2,1s,capacity=5,initial=5",
        "refill:10,100ms,capacity=5",
        "refill:1,1s,capacity=1",
        "refill:1000,1s,capacity=1000",
        "refill:100,1s,capacity=250",
        // The library's earlier example announced 5 for this one.
        "bursty:10,0.5",
        "bursty:2,2.5",
        "bursty:3,0.5",
        "bursty:7,1.3",
        "bursty:100,0.01",
        "bursty:1,0.1",
        "pacer:2,1",
        "pacer:2,1.1",
        "pacer:2,2",
        "pacer:500",
        "warmup:2,1s,3",
        "warmup:50,500ms,2",
    ];
    for config in configs {
        let (limit, clock) = core_keyed(config);
        let announced = limit.policy().burst();
        assert_eq!(announced, measured_burst(&limit, &clock), "{config}");
        let rate: ratekeeper::config::LimiterConfig = config.parse().unwrap();
        let p = limit.policy();
        assert!(
            p.quota() as f64 / p.window() as f64 <= rate.kind().rate(),
            "{config}: {p}"
        );
    }
}

#[test]
fn a_limiter_whose_burst_has_no_bound_is_refused_not_misannounced() {
    for config in ["pacer:2,0", "pacer:2,0.5", "pool:10", "cycle:10"] {
        let err = Policy::from_config("p", &config.parse().unwrap()).unwrap_err();
        assert!(
            matches!(err, ConfigError::UnannouncedBurst(_)),
            "{config}: {err:?}"
        );
    }
}

#[test]
fn a_token_bucket_announces_its_rate_and_burst() {
    // (rate, the refill of one permit, burst)
    for (rate, period, burst) in [(2.0, "500ms", 5), (0.5, "2s", 1), (100.0, "10ms", 20)] {
        let clock = ManualClock::new(0);
        let config = format!("refill:{rate},{period},capacity={burst},initial={burst}");
        let same = core_keyed_with(&config, &clock);
        let bucket: CoreKeyed<u32> = CoreKeyed::token_bucket("p", rate, burst, 10).unwrap();
        assert_eq!(bucket.policy(), same.policy(), "{rate} {burst}");
        let want = Policy::from_rate("p", rate)
            .unwrap()
            .with_burst(burst)
            .unwrap();
        assert_eq!(bucket.policy(), &want);
        assert_eq!(measured_burst(&same, &clock), burst);
    }
    assert_eq!(
        CoreKeyed::<u32>::token_bucket("p", 1.0, 0, 10).unwrap_err(),
        ConfigError::ZeroBurst
    );
    for rate in [f64::NAN, 0.0, -1.0, 2e9] {
        assert!(matches!(
            CoreKeyed::<u32>::token_bucket("p", rate, 1, 10),
            Err(ConfigError::Rate(_))
        ));
    }
}

fn core_keyed_with(config: &str, clock: &ManualClock) -> CoreKeyed<u32, ManualClock> {
    CoreKeyed::from_builder_with_clock(
        "p",
        Keyed::builder().max_keys(10),
        &config.parse().unwrap(),
        clock.clone(),
    )
    .unwrap()
}
