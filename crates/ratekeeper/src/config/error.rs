//! Why a limiter's description was refused: the detail behind its
//! [`ConfigError`].

use super::grammar::KINDS;
use super::{Field, LimiterKind};
use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};
use crate::pacer::StrictnessError;
use crate::rate::RateError;
use crate::spec::SpecError;

/// Why the text of a [`LimiterConfig`](super::LimiterConfig), or its
/// combination of fields, was refused: the detail of a [`ConfigError`],
/// whose message it is (a value the limiter's builder refuses comes with
/// that builder's message).
///
/// Every message names the value. None is a panic: user input never panics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum LimiterConfigError {
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
    /// Shards of a limiter other than the pacer.
    #[error("shards split a pacer; {kind} has none")]
    ShardsNeedPacer {
        /// The kind.
        kind: LimiterKind,
    },
    /// Both batching handles and shards.
    #[error("batch and shards exclude each other: a sharded pacer's threads have shard handles")]
    BatchAndShards,
}

impl From<LimiterConfigError> for ConfigError {
    fn from(e: LimiterConfigError) -> Self {
        use LimiterConfigError as E;
        let (kind, reason) = match &e {
            E::InvalidValue { field, .. } => (field_kind(*field), ConfigReason::Syntax),
            E::InvalidRate { .. } => (ConfigErrorKind::Rate, ConfigReason::Syntax),
            E::RateOutOfRange { source, .. } => (ConfigErrorKind::Rate, source.reason()),
            E::InvalidStrictness { source, .. } => (ConfigErrorKind::Strictness, source.reason()),
            _ => (ConfigErrorKind::Syntax, ConfigReason::Syntax),
        };
        ConfigError::because(kind, reason, e)
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
