//! [`SpecError`]: why a rate spec was refused, and what to write instead.

use core::fmt;

use super::words::Scope;

/// Why a rate spec (or a burst ratio, verb or scope) was rejected.
///
/// It carries the [kind](SpecError::kind) of failure, the 1-based
/// [number of the field](SpecError::field) at fault and that field's
/// [text](SpecError::value). Its message names all three, e.g.
/// `invalid rate spec field 2 (burst ratio) "0.5": burst ratio must be at least 1.0`.
///
/// # Examples
///
/// ```
/// use ratekeeper::{RateSpec, SpecErrorKind};
///
/// let err = "1000,1.5,start,stop".parse::<RateSpec>().unwrap_err();
/// assert_eq!(err.kind(), SpecErrorKind::DuplicateWord);
/// assert_eq!(err.kind().as_str(), "duplicate_word");
/// assert_eq!(err.field(), Some(4));
/// assert_eq!(err.value(), "stop");
/// assert_eq!(
///     err.to_string(),
///     r#"invalid rate spec field 4 (verb) "stop": a second verb; give at most one verb"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", Message(self))]
pub struct SpecError {
    kind: SpecErrorKind,
    field: Option<usize>,
    value: String,
}

impl SpecError {
    pub(super) fn new(
        kind: SpecErrorKind,
        field: Option<usize>,
        value: impl Into<String>,
    ) -> SpecError {
        SpecError {
            kind,
            field,
            value: value.into(),
        }
    }

    pub(super) fn at(kind: SpecErrorKind, field: usize, value: &str) -> SpecError {
        SpecError::new(kind, Some(field), value)
    }

    /// What went wrong.
    pub fn kind(&self) -> SpecErrorKind {
        self.kind
    }

    /// The 1-based number of the offending field of the spec. `None` when the
    /// error did not come from parsing a whole spec
    /// ([`BurstRatio::new`](super::BurstRatio::new),
    /// [`RateSpec::with_burst_ratio`](super::RateSpec::with_burst_ratio), or
    /// parsing a lone [`Verb`](super::Verb) or [`Scope`](super::Scope)).
    pub fn field(&self) -> Option<usize> {
        self.field
    }

    /// The offending text: the whole field as written (empty for an empty
    /// field), or the rejected value.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What the offending text was taken to be, for the message.
    fn subject(&self) -> Option<&'static str> {
        use SpecErrorKind::*;
        match self.kind {
            UnparsableRate | UnknownUnit | RateNotPositive | RateNotFinite => Some("rate"),
            BurstBelowOne | BurstNotFinite => Some("burst ratio"),
            UnknownWord => Some("verb or scope"),
            DuplicateWord if Scope::from_word(&self.value).is_some() => Some("scope"),
            DuplicateWord => Some("verb"),
            TooManyFields | EmptyField => None,
        }
    }

    fn reason(&self) -> &'static str {
        use SpecErrorKind::*;
        match self.kind {
            UnparsableRate if self.value.is_empty() => "the rate is missing",
            UnparsableRate => "not a rate; expected a count such as 1000, 2.5K, 1E6 or 10^3",
            UnknownUnit => {
                "unknown count suffix; expected U, K, M, B, G, T, P or E \
                 (or unit, kilo, mega, billion, giga, tera, peta, exa)"
            }
            RateNotPositive => "rate must be greater than zero",
            RateNotFinite => "rate must be finite",
            BurstBelowOne => "burst ratio must be at least 1.0",
            BurstNotFinite => "burst ratio must be finite",
            UnknownWord => {
                "unknown word; expected a verb (configure, start, restart, stop) \
                 or a scope (activity, thread)"
            }
            DuplicateWord if Scope::from_word(&self.value).is_some() => {
                "a second scope; give at most one scope"
            }
            DuplicateWord => "a second verb; give at most one verb",
            TooManyFields => {
                "too many fields; at most 4 are allowed (rate, burst ratio, verb, scope)"
            }
            EmptyField => "empty field; check for a doubled or trailing separator",
        }
    }
}

/// Formats a [`SpecError`]'s message.
struct Message<'a>(&'a SpecError);

impl fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        match (e.field, e.subject()) {
            (Some(n), Some(subject)) => write!(f, "invalid rate spec field {n} ({subject}) ")?,
            (Some(n), None) => write!(f, "invalid rate spec field {n} ")?,
            (None, Some(subject)) => write!(f, "invalid {subject} ")?,
            (None, None) => f.write_str("invalid rate spec value ")?,
        }
        // Debug quotes the text and escapes control characters and quotes.
        write!(f, "{:?}: {}", e.value, e.reason())
    }
}

/// The kinds of [`SpecError`].
///
/// [`as_str`](SpecErrorKind::as_str) gives each kind's stable snake-case name,
/// the names used by the nosqlbench conformance vectors.
///
/// # Examples
///
/// ```
/// use ratekeeper::{RateSpec, SpecErrorKind};
///
/// // Empty input is an empty (so unparsable) rate field.
/// let err = "".parse::<RateSpec>().unwrap_err();
/// assert_eq!(err.kind(), SpecErrorKind::UnparsableRate);
/// assert_eq!(err.kind().as_str(), "unparsable_rate");
/// assert_eq!(err.field(), Some(1));
///
/// assert_eq!("1e6".parse::<RateSpec>().unwrap_err().kind(), SpecErrorKind::UnknownUnit);
/// assert_eq!("1000,".parse::<RateSpec>().unwrap_err().kind(), SpecErrorKind::EmptyField);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpecErrorKind {
    /// Field 1 is empty (this includes empty input) or is not a count in
    /// nosqlbench's number format (`abc`, `-100`, `.5`, `NaN`, `10^400`).
    UnparsableRate,
    /// The rate number is followed by an unknown suffix (`5x`, `1e6`, `5.`).
    UnknownUnit,
    /// The rate is zero (`0`, `0.0`, `0^3`).
    RateNotPositive,
    /// The rate is infinite (`1E400`).
    RateNotFinite,
    /// The burst ratio is below `1.0`, negative included (`0.999`, `-1.5`).
    BurstBelowOne,
    /// The burst ratio is NaN or infinite (`NaN`, `1e400`).
    BurstNotFinite,
    /// A field after the rate (and burst ratio) is not a verb or scope word
    /// (`co`, `dynamic`, ` thread` with a space, `1.5d`, or a number after a
    /// word).
    UnknownWord,
    /// A second verb or a second scope (`start,restart`).
    DuplicateWord,
    /// More than four fields.
    TooManyFields,
    /// An empty field after the rate, e.g. from a trailing separator (`1000,`).
    EmptyField,
}

impl SpecErrorKind {
    /// The kind's snake-case name: `"unparsable_rate"`, `"unknown_unit"`,
    /// `"rate_not_positive"`, `"rate_not_finite"`, `"burst_below_one"`,
    /// `"burst_not_finite"`, `"unknown_word"`, `"duplicate_word"`,
    /// `"too_many_fields"` or `"empty_field"`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            SpecErrorKind::UnparsableRate => "unparsable_rate",
            SpecErrorKind::UnknownUnit => "unknown_unit",
            SpecErrorKind::RateNotPositive => "rate_not_positive",
            SpecErrorKind::RateNotFinite => "rate_not_finite",
            SpecErrorKind::BurstBelowOne => "burst_below_one",
            SpecErrorKind::BurstNotFinite => "burst_not_finite",
            SpecErrorKind::UnknownWord => "unknown_word",
            SpecErrorKind::DuplicateWord => "duplicate_word",
            SpecErrorKind::TooManyFields => "too_many_fields",
            SpecErrorKind::EmptyField => "empty_field",
        }
    }
}

impl fmt::Display for SpecErrorKind {
    /// The name from [`SpecErrorKind::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
