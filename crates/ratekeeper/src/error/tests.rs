use super::*;

#[derive(Debug, thiserror::Error)]
#[error("outer")]
struct Outer(#[source] Inner);

#[derive(Debug, thiserror::Error)]
#[error("inner")]
struct Inner;

#[test]
fn the_chain_names_each_cause_once() {
    let err = ConfigError::new(ConfigErrorKind::Rate, Outer(Inner));
    assert_eq!(err.to_string(), "outer");
    assert_eq!(
        err.source().map(|s| s.to_string()).as_deref(),
        Some("inner")
    );
    assert!(err.downcast_ref::<Outer>().is_some());
    assert!(err.downcast_ref::<Inner>().is_none());
}

#[test]
fn equal_when_kind_and_message_are() {
    let a = ConfigError::new(ConfigErrorKind::Rate, Inner);
    assert_eq!(a, a.clone());
    assert_ne!(a, ConfigError::new(ConfigErrorKind::Timeout, Inner));
    assert_ne!(a, ConfigError::new(ConfigErrorKind::Rate, Outer(Inner)));
}

#[test]
fn small_enough_to_return_by_value() {
    assert!(std::mem::size_of::<ConfigError>() <= 24);
}

/// Every reason, through a match the compiler checks for exhaustiveness.
fn all_reasons() -> Vec<ConfigReason> {
    use ConfigReason as R;
    let all = [
        R::RateNotFinite,
        R::RateNotPositive,
        R::RateTooFast,
        R::RateTooSlow,
        R::PoolSize,
        R::ZeroNanosPerPermit,
        R::NotWholePermits,
        R::StrictnessNan,
        R::StrictnessNegative,
        R::StrictnessNotFinite,
        R::StrictnessAboveOne,
        R::BurstBelowOne,
        R::BurstNotFinite,
        R::FillInterval,
        R::NotManual,
        R::Shards,
        R::WarmUpNegative,
        R::ColdFactor,
        R::MaxBurstSeconds,
        R::InvalidLimitForPeriod,
        R::LimitForPeriodTooLarge,
        R::InvalidLimitRefreshPeriod,
        R::LimitRefreshPeriodTooLarge,
        R::NegativeTimeout,
        R::TimeoutTooLarge,
        R::CapacityBelowLimit,
        R::CapacityTooLarge,
        R::NanosPerFullCapacityOverflow,
        R::CapacityNotSupported,
        R::InitialPermitsOutOfRange,
        R::MaxKeysZero,
        R::MaxKeysTooLarge,
        R::IpPrefix,
        R::Syntax,
        R::Unsupported,
        R::Other,
    ];
    // Adding a reason without listing it above fails to compile here.
    for r in all {
        match r {
            R::RateNotFinite
            | R::RateNotPositive
            | R::RateTooFast
            | R::RateTooSlow
            | R::PoolSize
            | R::ZeroNanosPerPermit
            | R::NotWholePermits
            | R::StrictnessNan
            | R::StrictnessNegative
            | R::StrictnessNotFinite
            | R::StrictnessAboveOne
            | R::BurstBelowOne
            | R::BurstNotFinite
            | R::FillInterval
            | R::NotManual
            | R::Shards
            | R::WarmUpNegative
            | R::ColdFactor
            | R::MaxBurstSeconds
            | R::InvalidLimitForPeriod
            | R::LimitForPeriodTooLarge
            | R::InvalidLimitRefreshPeriod
            | R::LimitRefreshPeriodTooLarge
            | R::NegativeTimeout
            | R::TimeoutTooLarge
            | R::CapacityBelowLimit
            | R::CapacityTooLarge
            | R::NanosPerFullCapacityOverflow
            | R::CapacityNotSupported
            | R::InitialPermitsOutOfRange
            | R::MaxKeysZero
            | R::MaxKeysTooLarge
            | R::IpPrefix
            | R::Syntax
            | R::Unsupported
            | R::Other => {}
        }
    }
    all.to_vec()
}

/// `CamelCase` as `snake_case`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[test]
fn each_reason_is_named_after_itself_once() {
    let all = all_reasons();
    let names: std::collections::HashSet<_> = all.iter().map(|r| r.as_str()).collect();
    assert_eq!(names.len(), all.len());
    for r in all {
        assert_eq!(r.as_str(), snake(&format!("{r:?}")), "{r:?}");
        assert_eq!(r.to_string(), r.as_str());
    }
}

#[test]
fn a_reason_gives_its_kind_to_with_reason() {
    for r in all_reasons() {
        let err = ConfigError::with_reason(r, Inner);
        assert_eq!(err.reason(), r);
        match r.kind() {
            Some(kind) => assert_eq!(err.kind(), kind, "{r:?}"),
            None => assert_eq!(
                (r, err.kind()),
                (ConfigReason::Other, ConfigErrorKind::Syntax)
            ),
        }
    }
    assert_eq!(
        ConfigError::new(ConfigErrorKind::Backend, Inner).reason(),
        ConfigReason::Other
    );
}

#[test]
fn equal_only_when_reasons_are() {
    let a = ConfigError::with_reason(ConfigReason::RateTooFast, Inner);
    let b = ConfigError::because(ConfigErrorKind::Rate, ConfigReason::RateTooSlow, Inner);
    assert_eq!(a.kind(), b.kind());
    assert_ne!(a, b);
}

#[test]
fn each_detail_converts_to_its_own_reason() {
    use crate::bucket::PermitConfigError as P;
    use crate::pacer::StrictnessError as S;
    use crate::pool::{PoolError, TokenPoolError};
    use crate::rate::RateError;
    use crate::smooth::SmoothError;
    use std::time::Duration;
    let reason = |e: ConfigError| e.reason().as_str();
    let permits = [
        P::InvalidLimitForPeriod(0),
        P::LimitForPeriodTooLarge(1 << 40),
        P::InvalidLimitRefreshPeriod(0),
        P::LimitRefreshPeriodTooLarge(1 << 70),
        P::ZeroNanosPerPermit {
            limit: 2,
            period_nanos: 1,
        },
        P::NegativeTimeout(-1),
        P::TimeoutTooLarge(1 << 70),
        P::CapacityBelowLimit {
            capacity: 1,
            limit: 2,
        },
        P::CapacityTooLarge(1 << 70),
        P::InitialPermitsOutOfRange {
            initial: -1,
            capacity: 2,
        },
        P::NanosPerFullCapacityOverflow {
            nanos_per_permit: 2,
            capacity: i64::MAX,
        },
        P::CapacityNotSupported,
    ];
    for e in permits {
        let name = format!("{e:?}");
        let variant = name.split(['(', ' ']).next().unwrap();
        assert_eq!(reason(e.into()), snake(variant), "{e:?}");
    }
    assert_eq!(
        reason(P::LimitAboveI64(1 << 70).into()),
        "limit_for_period_too_large"
    );
    for (e, want) in [
        (S::NaN, "strictness_nan"),
        (S::Negative(-1.0), "strictness_negative"),
        (S::NotFinite(f64::INFINITY), "strictness_not_finite"),
        (S::AboveOne(2.0), "strictness_above_one"),
    ] {
        assert_eq!(reason(e.into()), want);
    }
    for (e, want) in [
        (RateError::NotFinite(f64::NAN), "rate_not_finite"),
        (RateError::NotPositive(0.0), "rate_not_positive"),
        (RateError::TooFast(2e9), "rate_too_fast"),
        (RateError::TooSlow(1e-12), "rate_too_slow"),
    ] {
        assert_eq!(reason(e.into()), want);
        assert_eq!(reason(PoolError::Rate(e).into()), want);
    }
    for (e, want) in [
        (PoolError::BurstNotFinite(f64::NAN), "burst_not_finite"),
        (PoolError::BurstBelowOne(0.5), "burst_below_one"),
        (PoolError::PoolSize(0), "pool_size"),
    ] {
        assert_eq!(reason(e.into()), want);
    }
    let fill = TokenPoolError::FillInterval(Duration::from_secs(2));
    assert_eq!(reason(fill.into()), "fill_interval");
    assert_eq!(reason(TokenPoolError::NotManual.into()), "not_manual");
    for (e, want) in [
        (SmoothError::Rate(0.0), "rate_not_positive"),
        (SmoothError::WarmupNegative(-1), "warm_up_negative"),
        (SmoothError::ColdFactor(0.5), "cold_factor"),
        (SmoothError::MaxBurstSeconds(-1.0), "max_burst_seconds"),
    ] {
        assert_eq!(reason(e.into()), want);
    }
}

#[test]
fn debug_names_kind_reason_and_detail() {
    let err = ConfigError::with_reason(ConfigReason::RateTooFast, Inner);
    assert_eq!(
        format!("{err:?}"),
        "ConfigError { kind: Rate, reason: RateTooFast, detail: Inner }"
    );
}

#[test]
fn durations_read_back_as_one_word() {
    use std::time::Duration;
    assert_eq!(fmt_duration(Duration::ZERO), "0s");
    assert_eq!(fmt_duration(Duration::from_secs(90)), "1m30s");
    assert_eq!(fmt_duration(Duration::from_millis(1500)), "1s500ms");
}
