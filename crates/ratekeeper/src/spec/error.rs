//! [`SpecError`]: why a rate spec was refused, and what to write instead.

use core::fmt;

use super::words::Scope;

/// Why a rate spec (or a burst ratio, verb or scope) was rejected.
///
/// It carries the [kind](SpecError::kind), the 1-based
/// [field number](SpecError::field) and that field's
/// [text](SpecError::value); its message names all three.
///
/// # Examples
///
/// ```
/// use ratekeeper::{RateSpec, SpecErrorKind};
///
/// let err = "1000,1.5,start,stop".parse::<RateSpec>().unwrap_err();
/// assert_eq!(err.kind(), SpecErrorKind::DuplicateWord);
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

    /// The 1-based number of the offending field; `None` when no whole spec
    /// was parsed (a lone burst ratio, verb or scope).
    pub fn field(&self) -> Option<usize> {
        self.field
    }

    /// The offending field as written, or the rejected value.
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
/// as the conformance vectors use it.
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
    /// (`co`, ` thread` with a space, `1.5d`).
    UnknownWord,
    /// A second verb or a second scope (`start,restart`).
    DuplicateWord,
    /// More than four fields.
    TooManyFields,
    /// An empty field after the rate, e.g. from a trailing separator (`1000,`).
    EmptyField,
}

impl SpecErrorKind {
    /// The kind's stable snake-case name, e.g. `"unparsable_rate"`.
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
