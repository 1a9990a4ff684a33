//! [`LimiterConfigError`]: why a limiter's description was refused.

use std::time::Duration;

use super::grammar::{fmt_duration, KINDS};
use super::{Field, LimiterKind};
#[allow(deprecated)]
use crate::bucket::PermitConfigError as RefillError;
use crate::error::{ConfigError, ConfigErrorKind};
#[allow(deprecated)]
use crate::pacer::PacerError;
use crate::pacer::{ShardError, StrictnessError};
use crate::pool::TokenPoolError;
use crate::rate::RateError;
use crate::smooth::SmoothError;
use crate::spec::SpecError;

/// Why the text of a [`LimiterConfig`](super::LimiterConfig), or its
/// combination of fields, was refused: the detail of a [`ConfigError`] (a
/// value the limiter's builder refuses comes as that builder's own detail).
///
/// Every message names the value. None is a panic: user input never panics.
///
/// # Examples
///
/// ```
/// use ratekeeper::config::{LimiterConfig, LimiterConfigError, LimiterKind};
/// use ratekeeper::ConfigErrorKind;
///
/// let err = "bucket:10".parse::<LimiterConfig>().unwrap_err();
/// assert_eq!(err.kind(), ConfigErrorKind::Syntax);
/// let detail = err.downcast_ref::<LimiterConfigError>();
/// assert_eq!(detail, Some(&LimiterConfigError::UnknownKind { name: "bucket".into() }));
/// assert!(err.to_string().starts_with("\"bucket\" is not a limiter kind"));
///
/// let err = "warmup:10".parse::<LimiterConfig>().unwrap_err();
/// assert!(matches!(
///     err.downcast_ref(),
///     Some(LimiterConfigError::MissingField { kind: LimiterKind::WarmingUp, .. })
/// ));
///
/// let err = "pool:10,0.5".parse::<LimiterConfig>().unwrap_err();
/// assert_eq!(err.to_string(), "burst ratio must be at least 1.0, got 0.5");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
#[allow(deprecated)]
pub enum LimiterConfigError {
    /// No `KIND:` before the fields.
    #[error("expected KIND:ARGS with KIND one of {KINDS}, e.g. pacer:10,1.5 or warmup:10,2s")]
    NoKind,
    /// The kind is none of [`LimiterKind::ALL`].
    #[error("\"{name}\" is not a limiter kind; expected one of {KINDS}")]
    UnknownKind {
        /// The name given (lowercase).
        name: String,
    },
    /// Two commas in a row, or one at an end.
    #[error("an empty field in \"{args}\"; expected {}", kind.usage())]
    EmptyField {
        /// The kind.
        kind: LimiterKind,
        /// The fields as given.
        args: String,
    },
    /// `NAME=VALUE` with a name the kind does not take.
    #[error("\"{name}\" is not a field of {kind}; its fields are {}", field_names(*kind))]
    UnknownField {
        /// The kind.
        kind: LimiterKind,
        /// The name given.
        name: String,
    },
    /// The same field given twice.
    #[error("{field} is given twice in \"{args}\"")]
    RepeatedField {
        /// The field.
        field: Field,
        /// The fields as given.
        args: String,
    },
    /// A positional field after a named one.
    #[error(
        "\"{value}\" follows a NAME=VALUE field: after one, write every field as NAME=VALUE \
         ({kind} takes {})",
        field_names(*kind)
    )]
    PositionalAfterNamed {
        /// The kind.
        kind: LimiterKind,
        /// The positional field.
        value: String,
    },
    /// More positional fields than the kind has.
    #[error(
        "unexpected \"{value}\": {kind} takes at most {} fields, {}",
        kind.fields().len(),
        kind.usage()
    )]
    TooManyFields {
        /// The kind.
        kind: LimiterKind,
        /// The first field too many.
        value: String,
    },
    /// A field the kind needs is missing: the rate, or a warm-up period.
    #[error("{kind} needs {}: {}", needs(*field), kind.usage())]
    MissingField {
        /// The kind.
        kind: LimiterKind,
        /// The missing field.
        field: Field,
    },
    /// A field's value is not what it should be (`problem` says what).
    #[error("{field} \"{value}\" {problem}")]
    InvalidValue {
        /// The field.
        field: Field,
        /// The value given.
        value: String,
        /// What is wrong with it and what was expected.
        problem: &'static str,
    },
    /// The rate is not a rate-spec number.
    #[error("rate \"{value}\"")]
    InvalidRate {
        /// The value given.
        value: String,
        /// Why the rate-spec grammar refused it.
        #[source]
        source: SpecError,
    },
    /// The rate is one no nanosecond schedule can keep.
    #[error("rate \"{value}\"")]
    RateOutOfRange {
        /// The value given.
        value: String,
        /// Why.
        #[source]
        source: RateError,
    },
    /// The strictness is not a valid strictness.
    #[error(
        "strictness \"{value}\": expected 0 (average), between 0 and 1 (burst compensation), 1 \
         (strict) or above 1 (burst ratio)"
    )]
    InvalidStrictness {
        /// The value given.
        value: String,
        /// Why.
        #[source]
        source: StrictnessError,
    },
    /// A Resilience4j limiter's `rate × period` is not a whole number of
    /// permits, at least 1. No longer returned: see
    /// [`PermitConfigError::NotWholePermits`](crate::bucket::PermitConfigError::NotWholePermits).
    #[deprecated(
        since = "0.2.0",
        note = "returned as a PermitConfigError inside ConfigError"
    )]
    #[error(
        "rate {rate} x period {} is {permits} permits per period; the limit for period must be \
         a whole number of permits, at least 1: choose a period that holds a whole number at \
         this rate{}",
        fmt_duration(*period),
        suggestion.map(|p| format!(" (e.g. period {})", fmt_duration(p))).unwrap_or_default()
    )]
    NotWholePermits {
        /// The rate.
        rate: f64,
        /// The period.
        period: Duration,
        /// `rate × period`.
        permits: f64,
        /// A round period (1 ms to 1000 s) that holds a whole number of
        /// permits at this rate, if any.
        suggestion: Option<Duration>,
    },
    /// Shards of a limiter other than the pacer.
    #[error("shards split a pacer; {kind} has none")]
    ShardsNeedPacer {
        /// The kind.
        kind: LimiterKind,
    },
    /// Both batching handles and shards.
    #[error("batch and shards exclude each other: a sharded pacer's threads have shard handles")]
    BatchAndShards,
    /// The pacer's builder refused it. No longer returned: builders' own
    /// errors come as the detail of the [`ConfigError`].
    #[deprecated(
        since = "0.2.0",
        note = "the builder's error is the ConfigError's detail"
    )]
    #[error(transparent)]
    Pacer(PacerError),
    /// The sharded pacer's builder refused it. No longer returned.
    #[deprecated(
        since = "0.2.0",
        note = "the builder's error is the ConfigError's detail"
    )]
    #[error(transparent)]
    Shards(ShardError),
    /// The token pool's builder refused it. No longer returned.
    #[deprecated(
        since = "0.2.0",
        note = "the builder's error is the ConfigError's detail"
    )]
    #[error(transparent)]
    Pool(TokenPoolError),
    /// A Guava limiter's builder refused it. No longer returned.
    #[deprecated(
        since = "0.2.0",
        note = "the builder's error is the ConfigError's detail"
    )]
    #[error(transparent)]
    Smooth(SmoothError),
    /// A Resilience4j limiter's configuration builder refused it. No longer
    /// returned.
    #[deprecated(
        since = "0.2.0",
        note = "the builder's error is the ConfigError's detail"
    )]
    #[error(transparent)]
    Refill(RefillError),
}

impl From<LimiterConfigError> for ConfigError {
    #[allow(deprecated)]
    fn from(e: LimiterConfigError) -> Self {
        use LimiterConfigError as E;
        let kind = match &e {
            E::InvalidValue { field, .. } => field_kind(*field),
            E::InvalidRate { .. } | E::RateOutOfRange { .. } | E::NotWholePermits { .. } => {
                ConfigErrorKind::Rate
            }
            E::InvalidStrictness { .. } => ConfigErrorKind::Strictness,
            E::Pacer(PacerError::Rate(e)) => return ConfigError::from(*e),
            E::Pacer(PacerError::Strictness(e)) => return ConfigError::from(*e),
            E::Shards(e) => return ConfigError::from(*e),
            E::Pool(e) => return ConfigError::from(*e),
            E::Smooth(e) => return ConfigError::from(*e),
            E::Refill(e) => return ConfigError::from(*e),
            _ => ConfigErrorKind::Syntax,
        };
        ConfigError::new(kind, e)
    }
}

/// Which setting a field's value sets.
fn field_kind(field: Field) -> ConfigErrorKind {
    match field {
        Field::Rate => ConfigErrorKind::Rate,
        Field::Strictness => ConfigErrorKind::Strictness,
        Field::Burst => ConfigErrorKind::BurstRatio,
        Field::Fill => ConfigErrorKind::Filling,
        Field::MaxBurst => ConfigErrorKind::MaxBurst,
        Field::Warmup => ConfigErrorKind::WarmUp,
        Field::ColdFactor => ConfigErrorKind::ColdFactor,
        Field::Period => ConfigErrorKind::RefreshPeriod,
        Field::Capacity => ConfigErrorKind::Capacity,
        Field::Initial => ConfigErrorKind::InitialPermits,
        Field::Timeout => ConfigErrorKind::Timeout,
        Field::Shards => ConfigErrorKind::Shards,
        Field::Batch | Field::Wait => ConfigErrorKind::Syntax,
    }
}

/// What a kind takes, for messages: its own fields and the common ones.
fn field_names(kind: LimiterKind) -> String {
    let mut names: Vec<&str> = kind.fields().iter().map(|f| f.name()).collect();
    if kind == LimiterKind::Pacer {
        names.push(Field::Shards.name());
    }
    names.extend([Field::Batch.name(), Field::Wait.name()]);
    names.join(", ")
}

/// What a missing field is, for messages.
fn needs(field: Field) -> &'static str {
    match field {
        Field::Warmup => "a warm-up period (0s for none)",
        _ => "a rate",
    }
}
