//! Unit tests of the grammar and the builders: the vectors
//! `ratekeeper simulate --limiter` has always taken parse as they did.

use std::time::Duration;

use super::*;
use crate::bucket::{limit_for_rate, Fields, PermitConfigError};

/// The fields of a bucket of `rate × period` permits per `period`, as the
/// textual configuration builds it.
fn bucket_fields(rate: Rate, period: Duration) -> Result<Fields, ConfigError> {
    let limit = limit_for_rate(rate, period)?;
    Ok(Fields::new()
        .limit_for_period(limit)
        .limit_refresh_period(period))
}
use crate::clock::ManualClock;
use crate::error::{ConfigError, ConfigErrorKind};
use crate::limiter::RateLimiter;

fn parse(s: &str) -> LimiterConfig {
    s.parse().unwrap_or_else(|e| panic!("{s}: {}", chain(&e)))
}

/// The error and its sources, as one line (as the CLI prints it).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

fn err(s: &str) -> String {
    chain(&s.parse::<LimiterConfig>().expect_err(s))
}

fn rate(r: f64) -> Rate {
    Rate::new(r).unwrap()
}

fn strictness(s: f64) -> Strictness {
    Strictness::new(s).unwrap()
}

fn burst(b: f64) -> BurstRatio {
    BurstRatio::new(b).unwrap()
}

#[test]
fn simulate_vectors_parse_positionally_and_by_name() {
    assert_eq!(
        parse("pacer:10").kind(),
        KindConfig::Pacer {
            rate: rate(10.0),
            strictness: strictness(1.1)
        }
    );
    assert_eq!(
        parse("pacer:2.5k,0").kind(),
        KindConfig::Pacer {
            rate: rate(2500.0),
            strictness: strictness(0.0)
        }
    );
    assert_eq!(
        parse(" Warmup:10,cold_factor=4,warmup=2s").kind(),
        KindConfig::WarmingUp {
            rate: rate(10.0),
            warmup: Duration::from_secs(2),
            cold_factor: 4.0
        }
    );
    let KindConfig::Refill(c) = parse("refill:100,100ms,capacity=20,timeout=50ms").kind() else {
        panic!("not refill");
    };
    assert_eq!(
        (c.limit_for_period(), c.capacity(), c.initial_permits()),
        (10, 20, 10)
    );
    assert_eq!(c.timeout(), Duration::from_millis(50));
    assert_eq!(
        parse("pool:1k,1.5,fill=100us").kind(),
        KindConfig::Pool {
            rate: rate(1000.0),
            burst_ratio: burst(1.5),
            filling: Filling::Thread(Duration::from_micros(100))
        }
    );
    // The defaults: Guava's, Resilience4j's timeout, a period of 1 s, and
    // simulate's model of the pool (its filler thread every 1 ms).
    assert_eq!(
        parse("pool:10").kind(),
        KindConfig::Pool {
            rate: rate(10.0),
            burst_ratio: BurstRatio::DEFAULT,
            filling: Filling::thread()
        }
    );
    assert_eq!(
        parse("bursty:10").kind(),
        KindConfig::Bursty {
            rate: rate(10.0),
            max_burst_seconds: crate::smooth::DEFAULT_MAX_BURST_SECONDS
        }
    );
    let KindConfig::Cycle(c) = parse("cycle:10,500ms,timeout=1s").kind() else {
        panic!("not cycle");
    };
    assert_eq!(
        (c.limit_for_period(), c.timeout()),
        (5, Duration::from_secs(1))
    );
    let KindConfig::Refill(c) = parse("refill:10,100ms,2,1,150ms").kind() else {
        panic!("not refill");
    };
    assert_eq!(
        (c.limit_for_period(), c.capacity(), c.initial_permits()),
        (1, 2, 1)
    );
    let KindConfig::Refill(c) = parse("refill:10").kind() else {
        panic!("not refill");
    };
    assert_eq!(c.limit_refresh_period(), DEFAULT_REFRESH_PERIOD);
    assert_eq!(c.timeout(), crate::bucket::DEFAULT_TIMEOUT);
    for config in [parse("pacer:10"), parse("cycle:10")] {
        assert_eq!(config.access(), Access::Exact);
        assert!(config.wait_policy().is_default());
    }
}

#[test]
fn bad_vectors_name_the_value() {
    assert!(err("pacer").contains("expected KIND:ARGS"));
    assert!(err("bucket:10").contains("\"bucket\" is not a limiter kind"));
    assert!(err("bucket:10").contains(super::grammar::KINDS));
    assert!(err("pacer:abc").contains("\"abc\""));
    assert!(err("pacer:2B").contains("1e9"));
    assert!(err("pacer:10:2").contains("rate \"10:2\""));
    assert!(err("pacer:10,x").contains("strictness \"x\" is not a number"));
    assert!(err("pacer:10,x").contains("1 (strict)"));
    assert!(err("pacer:10,-1").contains("must not be negative"));
    assert!(err("pacer:10,1,2").contains("unexpected \"2\""));
    assert!(err("pacer:10,1,2").contains("pacer:RATE[,STRICTNESS]"));
    assert!(err("pacer:10,,1").contains("an empty field"));
    assert!(err("pacer:").contains("an empty field"));
    assert!(err("pacer:10,speed=2").contains("\"speed\" is not a field of pacer"));
    assert!(err("warmup:10,cold_factor=2,1s").contains("follows a NAME=VALUE field"));
    assert!(err("warmup:10").contains("warmup needs a warm-up period"));
    assert!(
        err("warmup:10,2s,0.5").contains("cold factor must be finite and at least 1.0, got 0.5")
    );
    assert!(err("warmup:10,2s,inf").contains("the cold factor must be finite"));
    assert!(err("warmup:10,soon").contains("warmup \"soon\" is not a duration"));
    assert!(err("bursty:10,-1").contains("max burst seconds must be finite and at least 0"));
    assert!(err("pool:10,0.5").contains("burst ratio must be at least 1.0, got 0.5"));
    assert!(err("pool:10,1.1,2s").contains("between 1us and 1s"));
    assert!(err("pool:10,1.1,0s").contains("greater than zero"));
    assert!(err("refill:1000,1500us").contains("1.5 permits per period"));
    assert!(err("refill:1000,1500us").contains("(e.g. period 1ms)"));
    assert!(err("refill:0.5").contains("(e.g. period 10s)"));
    assert!(err("refill:10,capacity=5").contains("permit capacity 5 is below the limit"));
    assert!(err("refill:10,initial=x").contains("initial \"x\" is not a whole number"));
    assert!(err("cycle:10,period=0s").contains("greater than zero"));
    assert!(err("cycle:10,capacity=20").contains("\"capacity\" is not a field of cycle"));
    assert!(err("cycle:10,initial=1").contains("\"initial\" is not a field of cycle"));
    assert!(err("pacer:10,strictness=1,strictness=2").contains("given twice"));
    assert!(err("pool:10,shards=2").contains("\"shards\" is not a field of pool"));
    assert!(err("pacer:10,shards=0").contains("from 1 to 1024"));
    assert!(err("pacer:10,batch=yes").contains("true or false"));
    assert!(err("pacer:10,batch=true,shards=2").contains("exclude each other"));
    assert!(err("pacer:10,wait=spin").contains("precise:DUR"));
    assert!(err("pacer:10,wait=precise:soon").contains("precise:DUR"));
}

#[test]
fn the_kinds_in_messages_are_every_kind() {
    let names: Vec<&str> = LimiterKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(names.join(", "), super::grammar::KINDS);
    for kind in LimiterKind::ALL {
        assert_eq!(kind.name().parse::<LimiterKind>(), Ok(kind));
        assert!(kind.usage().starts_with(&format!("{kind}:RATE")));
        assert!(kind.fields().iter().all(|f| kind.takes(*f)));
    }
}

#[test]
fn display_writes_every_field_and_parses_back() {
    for (text, shown) in [
        ("pacer:10", "pacer:10,1.1"),
        ("pacer:2.5k,0,shards=2", "pacer:2500,0,shards=2"),
        (
            "pool:1k,fill=inline,batch=true",
            "pool:1000,1.1,inline,batch=true",
        ),
        ("pool:10", "pool:10,1.1,1ms"),
        ("bursty:95k", "bursty:95000,1"),
        ("warmup:10,1500ms", "warmup:10,1s500ms,3"),
        (
            "refill:100,100ms,capacity=20,timeout=50ms",
            "refill:100,100ms,20,10,50ms",
        ),
        ("cycle:0.5,2s,timeout=0s", "cycle:0.5,2s,0s"),
        (
            "cycle:10,wait=coalesce:1ms",
            "cycle:10,1s,5s,wait=coalesce:1ms",
        ),
        ("pacer:1,wait=default", "pacer:1,1.1"),
        (
            "bursty:10,wait=PRECISE:150us",
            "bursty:10,1,wait=precise:150us",
        ),
    ] {
        let config = parse(text);
        assert_eq!(config.to_string(), shown, "{text}");
        assert_eq!(parse(shown), config, "{text}");
    }
}

/// What a visitor's slice is: the limiter type each thread takes permits
/// through, and how many limiters there are.
struct Types;

impl LimiterVisitor for Types {
    type Output = (&'static str, usize);

    fn visit<S: SharedLimiter>(self, limiters: &[S]) -> (&'static str, usize) {
        (std::any::type_name::<S::Worker<'_>>(), limiters.len())
    }
}

#[test]
fn each_access_gives_threads_their_own_way_in() {
    let visit = |s: &str| {
        parse(s)
            .visit_with_clock(ManualClock::new(0), 2, Types)
            .unwrap()
    };
    assert!(visit("pacer:10")
        .0
        .starts_with("&ratekeeper::pacer::Pacer<"));
    assert!(visit("pacer:10,0,batch=true").0.contains("PacerHandle<"));
    assert!(visit("pacer:10,0,shards=2").0.contains("ShardHandle<"));
    assert!(visit("pool:10,fill=inline,batch=true")
        .0
        .contains("BatchHandle<&ratekeeper::pool"));
    assert!(visit("cycle:10,batch=true")
        .0
        .contains("BatchHandle<&ratekeeper::bucket"));
    assert!(visit("warmup:10,1s")
        .0
        .starts_with("&ratekeeper::smooth::SmoothWarmingUp<"));
    assert_eq!(visit("refill:10").1, 2);
}

#[test]
fn built_limiters_keep_the_configuration() {
    let clock = ManualClock::new(0);
    let spin = Duration::from_micros(150);
    let config = parse("pacer:1000,1.0,wait=precise:150us");
    let AnyLimiter::Pacer(p) = config.build_with_clock(clock.clone()).unwrap() else {
        panic!("not a pacer");
    };
    assert_eq!(p.wait_policy().precise_spin(), Some(spin));
    assert_eq!(p.strictness().get(), 1.0);
    let AnyLimiter::Refill(r) = parse("refill:100,100ms,20,5,0s")
        .build_with_clock(clock.clone())
        .unwrap()
    else {
        panic!("not a refill limiter");
    };
    let c = r.config();
    assert_eq!(
        (c.limit_for_period(), c.capacity(), c.initial_permits()),
        (10, 20, 5)
    );
    let pool = parse("pool:1000,1.5,manual")
        .build_with_clock(clock.clone())
        .unwrap();
    let LimiterRef::Pool(p) = pool.as_ref() else {
        panic!("not a pool");
    };
    assert_eq!((p.filling(), p.burst_ratio()), (Filling::Manual, 1.5));
    assert!(
        pool.try_acquire().is_ok(),
        "started: the start pre-fills one op"
    );
    assert_eq!(pool.as_ref().kind(), LimiterKind::Pool);
}

#[test]
fn configurations_from_code_are_checked_too() {
    let pacer = KindConfig::Pacer {
        rate: rate(10.0),
        strictness: strictness(1.0),
    };
    let pool = KindConfig::Pool {
        rate: rate(10.0),
        burst_ratio: burst(1.1),
        filling: Filling::Thread(Duration::from_secs(2)),
    };
    assert_eq!(
        LimiterConfig::new(pool).validate(),
        Err(crate::pool::TokenPoolError::FillInterval(Duration::from_secs(2)).into())
    );
    let cycle = KindConfig::Cycle(crate::bucket::CycleConfig::default());
    assert_eq!(
        LimiterConfig::new(cycle)
            .with_access(Access::Sharded(2))
            .build_with_clock(ManualClock::new(0))
            .unwrap_err(),
        ConfigError::from(LimiterConfigError::ShardsNeedPacer {
            kind: LimiterKind::Cycle
        })
    );
    let err = LimiterConfig::new(pacer)
        .with_access(Access::Sharded(0))
        .validate()
        .unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::Shards, "{err}");
    let slow = LimiterConfig::new(KindConfig::Pacer {
        rate: rate(2e9),
        strictness: strictness(1.0),
    });
    assert_eq!(slow.validate().unwrap_err().kind(), ConfigErrorKind::Rate);
    assert_eq!(
        bucket_fields(rate(10.0), Duration::from_millis(200))
            .unwrap()
            .build_cycle()
            .map(|c| c.limit_for_period()),
        Ok(2)
    );
    assert_eq!(
        bucket_fields(rate(1e9), Duration::from_secs(1))
            .unwrap()
            .permit_capacity(1)
            .build()
            .unwrap_err(),
        ConfigError::from(PermitConfigError::CapacityBelowLimit {
            capacity: 1,
            limit: 1_000_000_000
        })
    );
}

#[test]
fn the_limit_for_period_is_a_whole_rate_times_period() {
    let ms = Duration::from_millis;
    let limit = |r: f64, p| limit_for_rate(rate(r), p);
    assert_eq!(limit(1000.0, ms(100)), Ok(100));
    assert_eq!(limit(1e9, ms(1000)), Ok(1_000_000_000));
    // 0.1 x 10 s is 1.0000000000000002 in floating point: still 1.
    assert_eq!(limit(0.1, ms(10_000)), Ok(1));
    let err = limit(1000.0, Duration::from_micros(1500)).unwrap_err();
    let Some(PermitConfigError::NotWholePermits {
        permits,
        suggestion,
        ..
    }) = err.downcast_ref().copied()
    else {
        panic!("not refused");
    };
    assert_eq!((permits, suggestion), (1.5, Some(ms(1))));
    // No suggestion where no round period holds a whole number.
    let err = limit(1.0 / 3.0, ms(1000)).unwrap_err();
    let Some(PermitConfigError::NotWholePermits { suggestion, .. }) = err.downcast_ref().copied()
    else {
        panic!("not refused");
    };
    assert_eq!(suggestion, None);
}

#[cfg(feature = "serde")]
#[test]
fn serde_writes_the_string() {
    let config = parse("refill:100,100ms,capacity=20");
    let json = serde_json::to_string(&config).unwrap();
    assert_eq!(json, r#""refill:100,100ms,20,10,5s""#);
    assert_eq!(
        serde_json::from_str::<LimiterConfig>(&json).unwrap(),
        config
    );
    let e = serde_json::from_str::<LimiterConfig>(r#""pool:10,0.5""#).unwrap_err();
    assert!(e.to_string().contains("burst ratio"), "{e}");
}

#[test]
fn a_refused_rate_change_leaves_the_limiter_as_it_was() {
    // (A cycle limiter takes 2e9 a second: a cycle holds any whole count.)
    for text in ["pacer:10", "pacer:10,shards=2", "pool:10", "refill:10"] {
        let limiter = parse(text).build_with_clock(ManualClock::new(0)).unwrap();
        let err = limiter.as_ref().set_rate(rate(2e9)).expect_err(text);
        assert_eq!(err.kind(), ConfigErrorKind::Rate, "{text}: {err}");
        assert_eq!(limiter.as_ref().rate(), 10.0, "{text}");
    }
    // A Resilience4j rate is whole permits per period: 12.4/s over 1 s is 12.
    let refill = parse("refill:10")
        .build_with_clock(ManualClock::new(0))
        .unwrap();
    refill.as_ref().set_rate(rate(12.4)).unwrap();
    assert_eq!(refill.as_ref().rate(), 12.0);
}
