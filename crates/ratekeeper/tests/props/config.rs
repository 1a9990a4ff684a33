//! Property tests for `LimiterConfig`'s `KIND:ARGS` grammar: parsing never
//! panics, whatever it accepts prints and parses back to an equal
//! configuration, and so does every valid configuration built in code.

use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::bucket::{CycleConfig, RefillConfig};
use ratekeeper::config::{Access, KindConfig, LimiterConfig};
use ratekeeper::pacer::Strictness;
use ratekeeper::pool::Filling;
use ratekeeper::{BurstRatio, Rate, WaitPolicy};

/// Pieces of the grammar's alphabet, weighted towards the tricky ones.
fn grammar_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(vec![
            "pacer:", "pool:", "bursty:", "warmup:", "refill:", "cycle:", "Pacer:", "x:", ":",
            ",", "=", "0", "1", "2", "10", "1.5", "0.5", "-1", "2.5k", "1M", "2B", "1e400",
            "inf", "NaN", "1ms", "0s", "2s", "1m30s", "100us", "500ns", "1h", "soon", " ",
        ])
        .prop_map(str::to_owned),
        3 => proptest::sample::select(vec![
            "rate=", "strictness=", "burst=", "fill=", "max_burst=", "max-burst=", "warmup=",
            "cold_factor=", "period=", "capacity=", "initial=", "timeout=", "batch=", "shards=",
            "wait=", "inline", "manual", "true", "false", "precise:", "coalesce:", "default",
            "1024", "1025", "99999999999999999999", "18446744073709551615s",
        ])
        .prop_map(str::to_owned),
        1 => any::<char>().prop_map(String::from),
    ]
}

/// Strings built from the grammar's alphabet.
fn grammar_string() -> impl Strategy<Value = String> {
    proptest::collection::vec(grammar_piece(), 0..14).prop_map(|parts| parts.concat())
}

/// A field's value, mostly one some field takes.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(vec![
            "0", "1", "1.0", "1.1", "1.5", "2", "3", "10", "20", "100", "0.5", "2.5k", "1M", "0s",
            "1us", "100us", "1ms", "100ms", "150ms", "1s", "2s", "10s", "1m30s", "inline",
            "manual", "true", "false", "default", "precise:150us", "coalesce:1ms", "-1", "1e3",
        ])
        .prop_map(str::to_owned),
        1 => grammar_piece(),
    ]
}

/// `KIND:ARGS` with plausible fields, positional and named.
fn structured_string() -> impl Strategy<Value = String> {
    let kind = proptest::sample::select(vec![
        "pacer", "pool", "bursty", "warmup", "refill", "cycle", "Warmup",
    ]);
    let name = proptest::sample::select(vec![
        "strictness",
        "burst",
        "fill",
        "max_burst",
        "warmup",
        "cold_factor",
        "period",
        "capacity",
        "initial",
        "timeout",
        "batch",
        "shards",
        "wait",
        "rate",
    ]);
    let field = prop_oneof![
        2 => value(),
        1 => (name, value()).prop_map(|(n, v)| format!("{n}={v}")),
    ];
    let rate = proptest::sample::select(vec!["1", "10", "0.5", "100", "2.5k", "1M", "3"]);
    (kind, rate, proptest::collection::vec(field, 0..5)).prop_map(|(kind, rate, fields)| {
        let fields: String = fields.iter().map(|f| format!(",{f}")).collect();
        format!("{kind}:{rate}{fields}")
    })
}

/// Rates from 1e-3 to 1e9 per second, whole and fractional.
fn rate() -> impl Strategy<Value = Rate> {
    prop_oneof![
        (1u32..=10_000_000).prop_map(f64::from),
        (-3.0f64..9.0).prop_map(|e| 10f64.powf(e)),
    ]
    .prop_map(|r| Rate::new(r).expect("positive and finite"))
}

fn nanos(max: u64) -> impl Strategy<Value = Duration> {
    (0..=max).prop_map(Duration::from_nanos)
}

fn filling() -> impl Strategy<Value = Filling> {
    prop_oneof![
        Just(Filling::Inline),
        Just(Filling::Manual),
        (1_000u64..=1_000_000_000).prop_map(|n| Filling::Thread(Duration::from_nanos(n))),
    ]
}

/// A refill configuration: `limit` permits per `period`, a bucket of up to
/// 1000 more, some of it full at creation.
fn refill() -> impl Strategy<Value = Option<RefillConfig>> {
    (
        1i64..=1_000_000,
        1_000_000u64..=100_000_000_000,
        0i64..=1000,
        0.0f64..=1.0,
        nanos(10_000_000_000),
    )
        .prop_map(|(limit, period, extra, full, timeout)| {
            let capacity = limit + extra;
            ratekeeper::bucket::RefillConfig::builder()
                .limit_for_period(limit as u64)
                .limit_refresh_period(Duration::from_nanos(period))
                .permit_capacity(capacity as u64)
                .initial_permits((capacity as f64 * full) as u64)
                .timeout(timeout)
                .build()
                .ok()
        })
}

/// A cycle configuration: `limit` permits per `period`.
fn cycle() -> impl Strategy<Value = Option<CycleConfig>> {
    (
        1i64..=1_000_000,
        1_000_000u64..=100_000_000_000,
        nanos(10_000_000_000),
    )
        .prop_map(|(limit, period, timeout)| {
            ratekeeper::bucket::CycleConfig::builder()
                .limit_for_period(limit as u64)
                .limit_refresh_period(Duration::from_nanos(period))
                .timeout(timeout)
                .build()
                .ok()
        })
}

fn kind() -> impl Strategy<Value = Option<KindConfig>> {
    prop_oneof![
        (rate(), 0.0f64..10.0).prop_map(|(rate, strictness)| Some(KindConfig::Pacer {
            rate,
            strictness: Strictness::new(strictness).ok()?
        })),
        (rate(), 1.0f64..10.0, filling()).prop_map(|(rate, burst_ratio, filling)| Some(
            KindConfig::Pool {
                rate,
                burst_ratio: BurstRatio::new(burst_ratio).ok()?,
                filling
            }
        )),
        (rate(), 0.0f64..100.0).prop_map(|(rate, max_burst_seconds)| Some(KindConfig::Bursty {
            rate,
            max_burst_seconds
        })),
        (rate(), nanos(100_000_000_000), 1.0f64..10.0).prop_map(|(rate, warmup, cold_factor)| {
            Some(KindConfig::WarmingUp {
                rate,
                warmup,
                cold_factor,
            })
        }),
        refill().prop_map(|c| c.map(KindConfig::Refill)),
        cycle().prop_map(|c| c.map(KindConfig::Cycle)),
    ]
}

fn config() -> impl Strategy<Value = Option<LimiterConfig>> {
    let access = prop_oneof![
        Just(Access::Exact),
        Just(Access::Batched),
        (1usize..=8).prop_map(Access::Sharded)
    ];
    let wait = prop_oneof![
        Just(WaitPolicy::default()),
        nanos(1_000_000).prop_map(WaitPolicy::precise),
        nanos(1_000_000).prop_map(WaitPolicy::coalesce),
    ];
    (kind(), access, wait).prop_map(|(kind, access, wait)| {
        let config = LimiterConfig::new(kind?)
            .with_access(access)
            .with_wait_policy(wait);
        config.validate().is_ok().then_some(config)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// No input panics; whatever parses prints back to an equal
    /// configuration, and that print is a fixed point.
    #[test]
    fn parsing_never_panics_and_round_trips(
        s in prop_oneof![grammar_string(), structured_string()]
    ) {
        if let Ok(config) = s.parse::<LimiterConfig>() {
            let shown = config.to_string();
            prop_assert_eq!(shown.parse::<LimiterConfig>(), Ok(config), "{} -> {}", s, shown);
            prop_assert_eq!(shown.parse::<LimiterConfig>().map(|c| c.to_string()), Ok(shown));
        }
    }

    /// Arbitrary text never panics either.
    #[test]
    fn any_text_never_panics(s in any::<String>()) {
        let _ = s.parse::<LimiterConfig>();
    }

    /// Every valid configuration built in code the grammar can express
    /// prints and parses back to itself.
    #[test]
    fn valid_configurations_round_trip(config in config()) {
        if let Some(config) = config {
            let shown = config.to_string();
            prop_assert_eq!(shown.parse::<LimiterConfig>(), Ok(config), "{}", shown);
        }
    }
}

/// Any f64 a caller might put in a Guava field: in range, out of range,
/// NaN and the infinities.
fn any_factor() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -2.0f64..5.0,
        1 => proptest::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0]),
    ]
}

/// Rates a `Rate` holds, including ones no nanosecond schedule keeps.
fn any_rate() -> impl Strategy<Value = Rate> {
    (-12.0f64..11.0).prop_map(|e| Rate::new(10f64.powf(e)).expect("positive and finite"))
}

/// Configurations the types allow, valid or not, that build without a
/// thread (a pool fills inline or by hand).
fn any_config() -> impl Strategy<Value = LimiterConfig> {
    let kind = prop_oneof![
        (any_rate(), 0.0f64..10.0).prop_map(|(rate, s)| KindConfig::Pacer {
            rate,
            strictness: Strictness::new(s).expect("finite, not negative"),
        }),
        (any_rate(), 1.0f64..10.0, any::<bool>()).prop_map(|(rate, b, inline)| {
            KindConfig::Pool {
                rate,
                burst_ratio: BurstRatio::new(b).expect("at least 1"),
                filling: if inline {
                    Filling::Inline
                } else {
                    Filling::Manual
                },
            }
        }),
        (any_rate(), any_factor()).prop_map(|(rate, max_burst_seconds)| KindConfig::Bursty {
            rate,
            max_burst_seconds,
        }),
        (any_rate(), nanos(10_000_000_000), any_factor()).prop_map(
            |(rate, warmup, cold_factor)| KindConfig::WarmingUp {
                rate,
                warmup,
                cold_factor,
            }
        ),
    ];
    let access = prop_oneof![
        Just(Access::Exact),
        Just(Access::Batched),
        (0usize..=1100).prop_map(Access::Sharded),
    ];
    (kind, access).prop_map(|(kind, access)| LimiterConfig::new(kind).with_access(access))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `validate` checks the values without building anything; it refuses
    /// exactly what building refuses, with the same error.
    #[test]
    fn validate_agrees_with_build(config in any_config()) {
        let built = config
            .build_with_clock(ratekeeper::ManualClock::new(0))
            .map(drop);
        prop_assert_eq!(config.validate(), built, "{:?}", config);
    }
}
