//! Rate specs: the one-line form of a rate limit, as written in nosqlbench's
//! `cyclerate` and `striderate` parameters.
//!
//! A [`RateSpec`] bundles four things: a [rate](Rate) in operations per second,
//! a burst ratio, a [`Verb`] that says what applying the spec does to a limiter,
//! and a [`Scope`] that says who shares the limit. Specs are usually parsed from
//! text with [`str::parse`] and printed back with [`Display`](fmt::Display):
//!
//! ```
//! use ratekeeper::{RateSpec, Scope, Verb};
//!
//! let spec: RateSpec = "1000,1.05,restart".parse()?;
//! assert_eq!(spec.rate().get(), 1000.0);
//! assert_eq!(spec.burst_ratio(), 1.05);
//! assert_eq!(spec.verb(), Verb::Restart);
//! assert_eq!(spec.scope(), Scope::Activity);
//! assert_eq!(spec.to_string(), "1000,1.05,restart,activity");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Grammar
//!
//! ```text
//! spec  = rate [ SEP burst ] { SEP word }        at most 4 fields in all
//! SEP   = "," | ":" | ";"                        may be mixed
//! rate  = a count, e.g. 1000, 2.5K, 1E6, 10^3    see "The rate" below
//! burst = a decimal number >= 1.0, e.g. 1.1      field 2 only
//! word  = verb | scope                           any order, each at most once
//! verb  = "configure" | "start" | "restart" | "stop"
//! scope = "activity" | "thread"
//! ```
//!
//! The spec is split on every `,`, `:` and `;`. Every field must be non-empty:
//! `"1000,"` and `"1000,,start"` are errors. Nothing is trimmed as a whole, but
//! the rate and the burst ratio tolerate spaces around their numbers, so
//! `"1000, 1.5"` is fine. Words are not trimmed: `"1000, thread"` is an error.
//!
//! | Spec                      | Rate (ops/s) | Burst | Verb      | Scope    |
//! |---------------------------|--------------|-------|-----------|----------|
//! | `200`                     | 200          | 1.1   | start     | activity |
//! | `3.6,2`                   | 3.6          | 2     | start     | activity |
//! | `12345,1.4,configure`     | 12345        | 1.4   | configure | activity |
//! | `12345,thread`            | 12345        | 1.1   | start     | thread   |
//! | `12345,configure,activity`| 12345        | 1.1   | configure | activity |
//! | `100:1.1;start,thread`    | 100          | 1.1   | start     | thread   |
//! | `5K,Restart`              | 5000         | 1.1   | restart   | activity |
//!
//! ## The rate
//!
//! Field 1 is a count in nosqlbench's number format:
//!
//! * A plain number: digits, optionally `.` and digits, optionally an upper-case
//!   `E` and exponent digits: `12000`, `0.5`, `1E6`, `2.5E3`. There is no sign,
//!   no leading `.` (`.5`), no trailing `.` (`5.`) and no negative or lower-case
//!   exponent (`1e6` reads as `1` with the unknown suffix `e6`).
//! * An optional count suffix after the number, case-insensitive, as a letter or
//!   a word:
//!
//!   | Suffix          | Multiplier |
//!   |-----------------|------------|
//!   | `U`, `unit`     | 1          |
//!   | `K`, `kilo`     | 1e3        |
//!   | `M`, `mega`     | 1e6        |
//!   | `B`, `billion`  | 1e9        |
//!   | `G`, `giga`     | 1e9        |
//!   | `T`, `tera`     | 1e12       |
//!   | `P`, `peta`     | 1e15       |
//!   | `E`, `exa`      | 1e18       |
//!
//!   The number is multiplied by the suffix in `f64`, exactly as nosqlbench
//!   does, so `2.01K` is `2009.9999999999998`. A bare `E` after a number is the
//!   exa suffix: `2E` is `2e18`, while `2E3` is `2000`.
//! * Spaces (U+0020 only) may surround the number and the suffix: `" 3 mega "`.
//! * A power form `base^exp` anywhere in the field is evaluated first
//!   (`base` = digits with an optional fraction, `exp` = digits):
//!   `10^3` is `1000`, `1.5^2` is `2.25`, `10^3K` is `1e6`. As in nosqlbench the
//!   result is printed the way Java prints a `double` and parsed again, so a
//!   result below `1e-3` (`0.5^10`, printed `9.765625E-4`) is an unknown-unit
//!   error, and an overflow (`10^400`, printed `Infinity`) is unparsable.
//!
//! The rate must be finite and greater than zero: `0`, `0^3` and `1E400` are
//! errors. Fractional rates are fine: `0.5` is one operation every two seconds.
//!
//! ## The burst ratio
//!
//! Field 2 is the burst ratio if it is a decimal number (after trimming spaces
//! and control characters): an optional sign, digits with an optional `.` (or a
//! leading `.`), and an optional exponent in either case, e.g. `1.5`, `2`,
//! `1e1`, `+1.25`. Otherwise field 2 is read as a word. The ratio must be finite
//! and at least `1.0`. A limiter that has fallen behind its schedule may run at
//! up to `rate × burst` operations per second while it catches up: `1000,1.5`
//! allows bursts of 1500 ops/s, and `1000,1.0` means "use it or lose it". The
//! default, [`DEFAULT_BURST_RATIO`], is `1.1`.
//!
//! ## Verbs
//!
//! A verb says what applying the spec does to a limiter that already exists
//! (every verb configures the rate and burst ratio first, creating the limiter
//! if needed):
//!
//! * [`configure`](Verb::Configure): apply the parameters without changing the
//!   run state. An idle limiter stays idle; a running one keeps its schedule.
//! * [`start`](Verb::Start) (the default): start metering now. The start time is
//!   the origin of the average rate and of the accumulated wait time.
//! * [`restart`](Verb::Restart): clear the backlog and the accumulated wait
//!   time, as if the limiter were started afresh now. Use it when stepping
//!   through independent target rates.
//! * [`stop`](Verb::Stop): return to idle. The backlog is checkpointed into the
//!   total wait time; the next acquire or start begins a fresh schedule.
//!
//! Verb words are matched ASCII case-insensitively (`Restart` works).
//!
//! ## Scopes
//!
//! * [`activity`](Scope::Activity) (the default): one limiter shared by all
//!   threads of the activity; the rate is the total.
//! * [`thread`](Scope::Thread): every thread gets its own limiter at this rate,
//!   so the total is `rate × threads`.
//!
//! Verbs and scopes may appear in either order, after the rate or after the
//! burst ratio; each may be given at most once.
//!
//! ## Printed form
//!
//! [`RateSpec`]'s `Display` always writes all four fields, comma-separated:
//! `rate,burst,verb,scope`, with both numbers in the shortest form that reads
//! back to the same `f64` and without exponents (for example
//! `2009.9999999999998,1.1,start,activity`). Parsing the printed form gives back
//! an equal spec.
//!
//! ## Errors
//!
//! A malformed spec is rejected with a [`SpecError`] naming the field and its
//! text. Checks run in this order and the first failure is reported: more than
//! four fields, an empty rate field (including empty input), an empty later
//! field, the rate's syntax and suffix, the rate's range, the burst ratio, and
//! finally the words, left to right. See [`SpecErrorKind`] for the kinds.
//!
//! ## Differences from nosqlbench
//!
//! The grammar is nosqlbench's (the `SimRateSpec` of nosqlbench 5, which takes
//! words in any order), made stricter where nosqlbench accepts nonsense:
//!
//! * A rate of zero or infinity (`0`, `1E400`) is rejected.
//! * A burst ratio below `1.0` is rejected, as in nosqlbench 4 (nosqlbench 5
//!   dropped the check); so is a NaN or infinite one.
//! * Field 2 is a burst ratio only if it is a plain decimal number. Java-only
//!   forms such as `1.5d` or `0x1.8p0` are unknown words.
//! * A second verb or a second scope is an error instead of silently winning.
//! * More than four fields are an error (nosqlbench 5 has no limit).
//! * An empty field is an error, including a trailing separator (`1000,`),
//!   which Java's `split` silently drops.
//! * Count suffixes are matched ASCII case-insensitively; Java's Unicode
//!   lower-casing also accepts the Kelvin sign (U+212A) as `K`.
//! * nosqlbench 1's `co` flag and the old limiter type words (`dynamic`, ...)
//!   are unknown words, as in every later nosqlbench.

use core::fmt;
use core::str::FromStr;
use std::borrow::Cow;

use crate::rate::{Rate, RateError};

/// The burst ratio of a spec that does not give one: bursts of up to 10 % above
/// the rate while a limiter catches up.
pub const DEFAULT_BURST_RATIO: f64 = 1.1;

/// The most fields a spec may have: rate, burst ratio, verb and scope.
const MAX_FIELDS: usize = 4;

/// The field separators.
const SEPARATORS: [char; 3] = [',', ':', ';'];

/// A parsed rate limit: rate, burst ratio, [`Verb`] and [`Scope`].
///
/// Build one with [`RateSpec::new`] and the `with_*` methods, or parse one from
/// nosqlbench's string form (see the [module documentation](self) for the
/// grammar). `Display` writes the canonical form `rate,burst,verb,scope`, which
/// parses back to an equal spec.
///
/// # Examples
///
/// ```
/// use ratekeeper::{Rate, RateSpec, Scope, Verb};
///
/// let parsed: RateSpec = "2.5K:1.5;thread".parse()?;
/// assert_eq!(parsed.rate().get(), 2500.0);
/// assert_eq!(parsed.burst_ratio(), 1.5);
/// assert_eq!(parsed.verb(), Verb::Start);
/// assert_eq!(parsed.scope(), Scope::Thread);
///
/// let built = RateSpec::new(Rate::new(2500.0)?)
///     .with_burst_ratio(1.5)?
///     .with_scope(Scope::Thread);
/// assert_eq!(parsed, built);
/// assert_eq!(built.to_string(), "2500,1.5,start,thread");
/// assert_eq!(built.to_string().parse::<RateSpec>()?, built);
///
/// let err = "1000,0.5".parse::<RateSpec>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"invalid rate spec field 2 (burst ratio) "0.5": burst ratio must be at least 1.0"#
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSpec {
    rate: Rate,
    burst_ratio: f64,
    verb: Verb,
    scope: Scope,
}

impl RateSpec {
    /// The burst ratio of a spec that does not give one (`1.1`); the same value
    /// as the module-level [`DEFAULT_BURST_RATIO`].
    pub const DEFAULT_BURST_RATIO: f64 = DEFAULT_BURST_RATIO;

    /// A spec with the given rate and the defaults: burst ratio
    /// [`DEFAULT_BURST_RATIO`], [`Verb::Start`] and [`Scope::Activity`].
    ///
    /// ```
    /// use ratekeeper::{Rate, RateSpec, Scope, Verb};
    ///
    /// let spec = RateSpec::new(Rate::new(200.0)?);
    /// assert_eq!(spec.burst_ratio(), 1.1);
    /// assert_eq!(spec.verb(), Verb::Start);
    /// assert_eq!(spec.scope(), Scope::Activity);
    /// assert_eq!(spec, "200".parse()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn new(rate: Rate) -> RateSpec {
        RateSpec {
            rate,
            burst_ratio: DEFAULT_BURST_RATIO,
            verb: Verb::Start,
            scope: Scope::Activity,
        }
    }

    /// The same spec with another burst ratio.
    ///
    /// # Errors
    ///
    /// [`SpecErrorKind::BurstNotFinite`] for NaN or an infinity and
    /// [`SpecErrorKind::BurstBelowOne`] for a ratio below `1.0`. The error has no
    /// [field number](SpecError::field); its [value](SpecError::value) is the
    /// ratio as printed by Rust.
    ///
    /// ```
    /// use ratekeeper::{Rate, RateSpec, SpecErrorKind};
    ///
    /// let spec = RateSpec::new(Rate::new(1000.0)?).with_burst_ratio(1.0)?;
    /// assert_eq!(spec.burst_ratio(), 1.0);
    /// assert_eq!(
    ///     spec.with_burst_ratio(0.9).unwrap_err().kind(),
    ///     SpecErrorKind::BurstBelowOne
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_burst_ratio(self, burst_ratio: f64) -> Result<RateSpec, SpecError> {
        match check_burst(burst_ratio) {
            Ok(()) => Ok(RateSpec {
                burst_ratio,
                ..self
            }),
            Err(kind) => Err(SpecError::new(kind, None, burst_ratio.to_string())),
        }
    }

    /// The same spec with another verb. Unlike nosqlbench 4's `with*` helpers,
    /// the other `with_*` methods never reset the verb.
    pub const fn with_verb(self, verb: Verb) -> RateSpec {
        RateSpec { verb, ..self }
    }

    /// The same spec with another scope.
    pub const fn with_scope(self, scope: Scope) -> RateSpec {
        RateSpec { scope, ..self }
    }

    /// The rate in operations per second.
    pub const fn rate(&self) -> Rate {
        self.rate
    }

    /// The burst ratio: finite and at least `1.0`. A limiter that is behind its
    /// schedule may run at up to `rate × burst_ratio` while it catches up.
    pub const fn burst_ratio(&self) -> f64 {
        self.burst_ratio
    }

    /// What applying this spec does to a limiter's run state.
    pub const fn verb(&self) -> Verb {
        self.verb
    }

    /// Whether the limit is shared by the activity or applies to each thread.
    pub const fn scope(&self) -> Scope {
        self.scope
    }
}

impl FromStr for RateSpec {
    type Err = SpecError;

    /// Parses nosqlbench's rate spec grammar (see the
    /// [module documentation](self)).
    fn from_str(s: &str) -> Result<RateSpec, SpecError> {
        parse_spec(s)
    }
}

impl fmt::Display for RateSpec {
    /// The canonical form `rate,burst,verb,scope`, e.g. `1000,1.1,start,activity`.
    /// Both numbers are written in the shortest form that parses back to the
    /// same value, without an exponent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{},{},{}",
            self.rate.get(),
            self.burst_ratio,
            self.verb.as_str(),
            self.scope.as_str()
        )
    }
}

/// What applying a [`RateSpec`] does to a limiter's run state.
///
/// Every verb first applies the spec's rate and burst ratio (creating the
/// limiter if needed). Words are matched ASCII case-insensitively when parsed.
///
/// # Examples
///
/// ```
/// use ratekeeper::Verb;
///
/// assert_eq!("Restart".parse::<Verb>()?, Verb::Restart);
/// assert_eq!(Verb::default(), Verb::Start);
/// assert_eq!(Verb::Configure.to_string(), "configure");
/// assert!("begin".parse::<Verb>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Verb {
    /// Apply the parameters without changing the run state: an idle limiter
    /// stays idle and a running one keeps its schedule.
    Configure,
    /// Start metering now (the default). The start time is the origin of the
    /// average rate and of the accumulated wait time.
    #[default]
    Start,
    /// Clear the backlog and the accumulated wait time, as if the limiter were
    /// started afresh now.
    Restart,
    /// Return to idle. The backlog is checkpointed into the total wait time; the
    /// next acquire or start begins a fresh schedule.
    Stop,
}

impl Verb {
    /// Every verb, in declaration order.
    pub const ALL: [Verb; 4] = [Verb::Configure, Verb::Start, Verb::Restart, Verb::Stop];

    /// The word for this verb: `"configure"`, `"start"`, `"restart"` or `"stop"`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Verb::Configure => "configure",
            Verb::Start => "start",
            Verb::Restart => "restart",
            Verb::Stop => "stop",
        }
    }

    /// The verb named by `word`, ASCII case-insensitively, without trimming.
    fn from_word(word: &str) -> Option<Verb> {
        Verb::ALL
            .into_iter()
            .find(|v| word.eq_ignore_ascii_case(v.as_str()))
    }
}

impl fmt::Display for Verb {
    /// The word from [`Verb::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Verb {
    type Err = SpecError;

    /// Reads a verb word, ASCII case-insensitively and without trimming. Fails
    /// with [`SpecErrorKind::UnknownWord`] (and no field number) otherwise.
    fn from_str(s: &str) -> Result<Verb, SpecError> {
        Verb::from_word(s).ok_or_else(|| SpecError::new(SpecErrorKind::UnknownWord, None, s))
    }
}

/// Who shares the limit of a [`RateSpec`].
///
/// # Examples
///
/// ```
/// use ratekeeper::Scope;
///
/// assert_eq!("THREAD".parse::<Scope>()?, Scope::Thread);
/// assert_eq!(Scope::default(), Scope::Activity);
/// assert_eq!(Scope::Activity.to_string(), "activity");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scope {
    /// One limiter shared by all threads of the activity; the rate is the total
    /// (the default).
    #[default]
    Activity,
    /// Every thread gets its own limiter at this rate, so the total is
    /// `rate × threads`.
    Thread,
}

impl Scope {
    /// Every scope, in declaration order.
    pub const ALL: [Scope; 2] = [Scope::Activity, Scope::Thread];

    /// The word for this scope: `"activity"` or `"thread"`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Scope::Activity => "activity",
            Scope::Thread => "thread",
        }
    }

    /// The scope named by `word`, ASCII case-insensitively, without trimming.
    fn from_word(word: &str) -> Option<Scope> {
        Scope::ALL
            .into_iter()
            .find(|s| word.eq_ignore_ascii_case(s.as_str()))
    }
}

impl fmt::Display for Scope {
    /// The word from [`Scope::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = SpecError;

    /// Reads a scope word, ASCII case-insensitively and without trimming. Fails
    /// with [`SpecErrorKind::UnknownWord`] (and no field number) otherwise.
    fn from_str(s: &str) -> Result<Scope, SpecError> {
        Scope::from_word(s).ok_or_else(|| SpecError::new(SpecErrorKind::UnknownWord, None, s))
    }
}

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
    fn new(kind: SpecErrorKind, field: Option<usize>, value: impl Into<String>) -> SpecError {
        SpecError {
            kind,
            field,
            value: value.into(),
        }
    }

    fn at(kind: SpecErrorKind, field: usize, value: &str) -> SpecError {
        SpecError::new(kind, Some(field), value)
    }

    /// What went wrong.
    pub fn kind(&self) -> SpecErrorKind {
        self.kind
    }

    /// The 1-based number of the offending field of the spec. `None` when the
    /// error did not come from parsing a whole spec
    /// ([`RateSpec::with_burst_ratio`], [`Verb::from_str`], [`Scope::from_str`]).
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

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

fn parse_spec(s: &str) -> Result<RateSpec, SpecError> {
    // Split, checking the field count before anything else.
    let mut fields = [""; MAX_FIELDS];
    let mut count = 0;
    for (i, field) in s.split(SEPARATORS).enumerate() {
        if i == MAX_FIELDS {
            return Err(SpecError::at(SpecErrorKind::TooManyFields, i + 1, field));
        }
        fields[i] = field;
        count = i + 1;
    }
    let fields = &fields[..count];

    // Empty fields: the rate first (this covers empty input), then the rest.
    if fields[0].is_empty() {
        return Err(SpecError::at(SpecErrorKind::UnparsableRate, 1, ""));
    }
    if let Some(i) = fields.iter().position(|f| f.is_empty()) {
        return Err(SpecError::at(SpecErrorKind::EmptyField, i + 1, ""));
    }

    // Field 1: the rate.
    let value = parse_rate_number(fields[0]).map_err(|kind| SpecError::at(kind, 1, fields[0]))?;
    let rate = Rate::new(value).map_err(|e| {
        let kind = match e {
            RateError::NotFinite(_) => SpecErrorKind::RateNotFinite,
            _ => SpecErrorKind::RateNotPositive,
        };
        SpecError::at(kind, 1, fields[0])
    })?;
    let mut spec = RateSpec::new(rate);

    // Field 2: the burst ratio, if it looks like a number.
    let mut first_word = 1;
    if let Some(field) = fields.get(1) {
        if let Some(burst) = parse_burst_number(field) {
            check_burst(burst).map_err(|kind| SpecError::at(kind, 2, field))?;
            spec.burst_ratio = burst;
            first_word = 2;
        }
    }

    // The remaining fields: verb and scope words, in any order, once each.
    let (mut verb, mut scope) = (None, None);
    for (i, word) in fields.iter().enumerate().skip(first_word) {
        let duplicate = if let Some(v) = Verb::from_word(word) {
            verb.replace(v).is_some()
        } else if let Some(s) = Scope::from_word(word) {
            scope.replace(s).is_some()
        } else {
            return Err(SpecError::at(SpecErrorKind::UnknownWord, i + 1, word));
        };
        if duplicate {
            return Err(SpecError::at(SpecErrorKind::DuplicateWord, i + 1, word));
        }
    }
    spec.verb = verb.unwrap_or_default();
    spec.scope = scope.unwrap_or_default();
    Ok(spec)
}

fn check_burst(burst: f64) -> Result<(), SpecErrorKind> {
    if !burst.is_finite() {
        Err(SpecErrorKind::BurstNotFinite)
    } else if burst < 1.0 {
        Err(SpecErrorKind::BurstBelowOne)
    } else {
        Ok(())
    }
}

/// Field 2 as a burst ratio: after trimming characters <= U+0020 (Java's
/// `String.trim`), `[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?` parsed correctly
/// rounded, or `[+-]?(NaN|Infinity)`. `None` if the field is not a number (it is
/// then a word).
fn parse_burst_number(field: &str) -> Option<f64> {
    let t = field.trim_matches(|c: char| c <= ' ');
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    match unsigned {
        "NaN" => return Some(f64::NAN),
        "Infinity" => return Some(f64::INFINITY),
        _ => {}
    }
    let b = unsigned.as_bytes();
    let mut i = digits_end(b, 0);
    let int_digits = i;
    if b.get(i) == Some(&b'.') {
        i = digits_end(b, i + 1);
    }
    // At least one digit before the exponent: `\d+\.?\d*` or `\.\d+`.
    if int_digits == 0 && i < 2 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let end = digits_end(b, j);
        if end == j {
            return None;
        }
        i = end;
    }
    if i != b.len() {
        return None;
    }
    // The text is now known to be in Rust's float grammar as well.
    t.parse().ok()
}

/// The end of the run of ASCII digits in `b` that starts at `start`.
fn digits_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// nosqlbench's `Unit.doubleCountFor`: power form first, then the count.
fn parse_rate_number(field: &str) -> Result<f64, SpecErrorKind> {
    parse_count(&expand_power(field))
}

/// Java regex line terminators, which `.` does not match.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The power form of nosqlbench's `numberExponentPattern`,
/// ` *(?<pre>.*?)?(?<number>([0-9]+)(\.[0-9]+)?+)\^(?<exponent>[0-9]+)(?<post>.*?)?`:
/// if the whole field matches, it becomes `pre + Double.toString(pow) + post`.
/// The leading spaces are kept in `pre`, which makes no difference to the
/// count grammar that follows.
fn expand_power(field: &str) -> Cow<'_, str> {
    // Java's `.` does not match line terminators, so `pre` and `post` cannot
    // hold one and the pattern does not match at all.
    if field.chars().any(is_line_terminator) {
        return Cow::Borrowed(field);
    }
    let b = field.as_bytes();
    // The shortest `pre`: the first start position whose digits (all of the
    // run, since a shorter run would be followed by a digit, not `.` or `^`),
    // optional fraction, `^` and exponent digits match.
    let mut start = 0;
    while start < b.len() {
        if !b[start].is_ascii_digit() {
            start += 1;
            continue;
        }
        let mut i = digits_end(b, start);
        let run_end = i;
        if b.get(i) == Some(&b'.') {
            let frac_end = digits_end(b, i + 1);
            if frac_end > i + 1 {
                i = frac_end;
            }
        }
        if b.get(i) == Some(&b'^') {
            let exp_start = i + 1;
            let exp_end = digits_end(b, exp_start);
            if exp_end > exp_start {
                // All indices sit next to ASCII bytes, so they are char boundaries.
                let value = java_pow(&field[start..i], &field[exp_start..exp_end]);
                let mut out = String::with_capacity(field.len() + 24);
                out.push_str(&field[..start]);
                push_java_double(&mut out, value);
                out.push_str(&field[exp_end..]);
                return Cow::Owned(out);
            }
        }
        // Positions inside this digit run end at the same place and fail the
        // same way.
        start = run_end;
    }
    Cow::Borrowed(field)
}

/// `Math.pow(Double.valueOf(base), Double.valueOf(exponent))` for digit strings.
fn java_pow(base: &str, exponent: &str) -> f64 {
    // Both are ASCII digit strings (with at most one '.'), which always parse.
    let base: f64 = base.parse().unwrap_or(f64::NAN);
    let exponent: f64 = exponent.parse().unwrap_or(f64::NAN);
    // Java: |base| == 1 with an infinite exponent is NaN; C's pow gives 1.
    if base == 1.0 && exponent.is_infinite() {
        return f64::NAN;
    }
    base.powf(exponent)
}

/// Appends Java's `Double.toString(v)` (same value; the digits are Rust's
/// shortest, as in Java 19 and later): `NaN`, `Infinity`, a plain decimal with
/// at least one fraction digit for 1e-3 <= |v| < 1e7, otherwise `d.dddE<n>`.
fn push_java_double(out: &mut String, v: f64) {
    use fmt::Write;
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
    } else if (1e-3..1e7).contains(&v.abs()) {
        let start = out.len();
        let _ = write!(out, "{v}");
        if !out[start..].contains('.') {
            out.push_str(".0");
        }
    } else {
        let s = format!("{v:E}");
        match s.split_once('E') {
            Some((mantissa, exp)) if !mantissa.contains('.') => {
                let _ = write!(out, "{mantissa}.0E{exp}");
            }
            _ => out.push_str(&s),
        }
    }
}

/// nosqlbench's `numberFmtPattern`,
/// ` *(?<number>[0-9]+(\.[0-9]+)?(E[0-9]+)?) *(?<unit>[^ ]+?)? *`, then the
/// count suffix.
fn parse_count(s: &str) -> Result<f64, SpecErrorKind> {
    let b = s.as_bytes();
    let skip_spaces = |mut i: usize| {
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
        i
    };

    let num_start = skip_spaces(0);
    let mut i = digits_end(b, num_start);
    if i == num_start {
        return Err(SpecErrorKind::UnparsableRate);
    }
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits_end(b, i + 1);
    }
    if b.get(i) == Some(&b'E') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits_end(b, i + 1);
    }
    let num_end = i;

    // The unit is one run of non-spaces; only spaces may follow it. (A shorter
    // number cannot help: it only lengthens the first run.)
    let unit_start = skip_spaces(num_end);
    let mut unit_end = unit_start;
    while b.get(unit_end).is_some_and(|&c| c != b' ') {
        unit_end += 1;
    }
    if skip_spaces(unit_end) != b.len() {
        return Err(SpecErrorKind::UnparsableRate);
    }

    // Digits, optional fraction, optional unsigned exponent: valid for Rust.
    let number: f64 = s[num_start..num_end]
        .parse()
        .map_err(|_| SpecErrorKind::UnparsableRate)?;
    // `unit_start` and `unit_end` sit next to spaces or the ends of the string.
    let unit = &s[unit_start..unit_end];
    if unit.is_empty() {
        return Ok(number);
    }
    count_multiplier(unit)
        .map(|m| number * m)
        .ok_or(SpecErrorKind::UnknownUnit)
}

/// nosqlbench's `Unit.Count` suffixes: label, name or enum name, any case.
fn count_multiplier(unit: &str) -> Option<f64> {
    const COUNTS: [(&str, &str, f64); 8] = [
        ("u", "unit", 1.0),
        ("k", "kilo", 1e3),
        ("m", "mega", 1e6),
        ("b", "billion", 1e9),
        ("g", "giga", 1e9),
        ("t", "tera", 1e12),
        ("p", "peta", 1e15),
        ("e", "exa", 1e18),
    ];
    COUNTS
        .iter()
        .find(|(label, name, _)| {
            unit.eq_ignore_ascii_case(label) || unit.eq_ignore_ascii_case(name)
        })
        .map(|&(_, _, multiplier)| multiplier)
}

// ---------------------------------------------------------------------------
// Serde
// ---------------------------------------------------------------------------

#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl serde::Serialize for RateSpec {
    /// Serializes as the canonical string, e.g. `"1000,1.1,start,activity"`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> serde::Deserialize<'de> for RateSpec {
    /// Deserializes from a spec string in the grammar of [`RateSpec::from_str`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<RateSpec, D::Error> {
        struct SpecVisitor;

        impl serde::de::Visitor<'_> for SpecVisitor {
            type Value = RateSpec;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rate spec string such as \"1000,1.1,start\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RateSpec, E> {
                v.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(SpecVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<RateSpec, SpecError> {
        s.parse()
    }

    fn ok(s: &str) -> RateSpec {
        parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn rate(s: &str) -> f64 {
        ok(s).rate().get()
    }

    fn err(s: &str) -> SpecError {
        match parse(s) {
            Ok(spec) => panic!("{s:?} should fail, got {spec:?}"),
            Err(e) => e,
        }
    }

    fn kind(s: &str) -> SpecErrorKind {
        err(s).kind()
    }

    fn spec(rate: f64, burst: f64, verb: Verb, scope: Scope) -> RateSpec {
        RateSpec::new(Rate::new(rate).unwrap())
            .with_burst_ratio(burst)
            .unwrap()
            .with_verb(verb)
            .with_scope(scope)
    }

    #[test]
    fn defaults() {
        assert_eq!(ok("523"), spec(523.0, 1.1, Verb::Start, Scope::Activity));
        assert_eq!(RateSpec::DEFAULT_BURST_RATIO, 1.1);
        assert_eq!(DEFAULT_BURST_RATIO, 1.1);
    }

    #[test]
    fn fields_and_words() {
        use Scope::*;
        use Verb::*;
        assert_eq!(ok("12345,1.3"), spec(12345.0, 1.3, Start, Activity));
        assert_eq!(
            ok("12345,1.4,configure"),
            spec(12345.0, 1.4, Configure, Activity)
        );
        assert_eq!(
            ok("12345,configure"),
            spec(12345.0, 1.1, Configure, Activity)
        );
        assert_eq!(ok("12345,thread"), spec(12345.0, 1.1, Start, Thread));
        assert_eq!(
            ok("12345,configure,activity"),
            spec(12345.0, 1.1, Configure, Activity)
        );
        assert_eq!(ok("100,1.1,start,thread"), spec(100.0, 1.1, Start, Thread));
        assert_eq!(
            ok("1000,1.5,thread,restart"),
            spec(1000.0, 1.5, Restart, Thread)
        );
        assert_eq!(ok("1000,1.5,STOP,Thread"), spec(1000.0, 1.5, Stop, Thread));
        assert_eq!(
            ok("1000:1.5;restart,thread"),
            spec(1000.0, 1.5, Restart, Thread)
        );
        assert_eq!(ok("1000, 1.5"), spec(1000.0, 1.5, Start, Activity));
        assert_eq!(ok("1000,\t1.5 "), spec(1000.0, 1.5, Start, Activity));
    }

    #[test]
    fn burst_numbers() {
        let burst = |s: &str| ok(s).burst_ratio();
        assert_eq!(burst("1000,1.0"), 1.0);
        assert_eq!(burst("1000,1"), 1.0);
        assert_eq!(burst("1000,1e1"), 10.0);
        assert_eq!(burst("1000,1E+1"), 10.0);
        assert_eq!(burst("1000,+1.25"), 1.25);
        assert_eq!(burst("1000,2."), 2.0);
        assert_eq!(burst("1000,15e-1"), 1.5);
        assert_eq!(burst("1000,.15e1"), 1.5);
        assert_eq!(kind("1000,."), SpecErrorKind::UnknownWord);
        assert_eq!(kind("1000,1e"), SpecErrorKind::UnknownWord);
        assert_eq!(kind("1000,e1"), SpecErrorKind::UnknownWord);
        assert_eq!(kind("1000,inf"), SpecErrorKind::UnknownWord);
    }

    #[test]
    fn rate_numbers() {
        assert_eq!(rate("1E6"), 1e6);
        assert_eq!(rate("1.5^2"), 2.25);
        assert_eq!(rate("10^3K"), 1e6);
        assert_eq!(rate("10^7"), 1e7);
        assert_eq!(rate("1kilo"), 1e3);
        assert_eq!(rate("3 mega"), 3e6);
        assert_eq!(rate("  3  MEGA  "), 3e6);
        assert_eq!(rate("2KILO"), 2e3);
        assert_eq!(rate("5k"), 5e3);
        assert_eq!(rate("2billion"), 2e9);
        assert_eq!(rate("1B"), 1e9);
        assert_eq!(rate("1giga"), 1e9);
        assert_eq!(rate("1T"), 1e12);
        assert_eq!(rate("1P"), 1e15);
        assert_eq!(rate("1exa"), 1e18);
        assert_eq!(rate("2E"), 2e18);
        assert_eq!(rate("5 unit"), 5.0);
        assert_eq!(rate("5u"), 5.0);
        assert_eq!(rate("1E3K"), 1e6);
        assert_eq!(rate("2.01K"), 2009.9999999999998);
        assert_eq!(rate("16.1K"), 16100.000000000002);
        assert_eq!(rate("0.5"), 0.5);
        assert_eq!(rate("2^10"), 1024.0);
        assert_eq!(rate(" 2^10 "), 1024.0);
        assert_eq!(rate("0.5^2"), 0.25);
        assert_eq!(rate("0.1^3"), 0.1f64.powf(3.0));
        // The power's result is printed in Java's E form and read again.
        assert_eq!(rate("10^20"), 1e20);
        assert_eq!(rate("1.5^60"), 1.5f64.powf(60.0));
        assert_eq!(rate("3^0"), 1.0);
    }

    #[test]
    fn java_double_strings() {
        let java = |v: f64| {
            let mut s = String::new();
            push_java_double(&mut s, v);
            s
        };
        assert_eq!(java(1000.0), "1000.0");
        assert_eq!(java(2.25), "2.25");
        assert_eq!(java(1e-3), "0.001");
        assert_eq!(java(9.765625e-4), "9.765625E-4");
        assert_eq!(java(1e7), "1.0E7");
        assert_eq!(java(1.5e7), "1.5E7");
        assert_eq!(java(9999999.0), "9999999.0");
        assert_eq!(java(0.0), "0.0");
        assert_eq!(java(f64::INFINITY), "Infinity");
        assert_eq!(java(f64::NAN), "NaN");
    }

    #[test]
    fn power_form_quirks() {
        use SpecErrorKind::*;
        assert_eq!(kind("10^400"), UnparsableRate);
        assert_eq!(kind("10^-3"), UnknownUnit);
        assert_eq!(kind("0.5^10"), UnknownUnit);
        // Java prints 9.765625E-4: a number, then two space-separated runs.
        assert_eq!(kind("0.5^10 K"), UnparsableRate);
        assert_eq!(kind("0^3"), RateNotPositive);
        // Math.pow(1, Infinity) is NaN in Java.
        let huge_exponent = format!("1^{}", "9".repeat(400));
        assert_eq!(kind(&huge_exponent), UnparsableRate);
        let huge_exponent = format!("2^{}", "9".repeat(400));
        assert_eq!(kind(&huge_exponent), UnparsableRate);
        // The shortest prefix wins, and the prefix must still fit the count.
        assert_eq!(kind("x10^3"), UnparsableRate);
        assert_eq!(kind("5 10^3"), UnknownUnit);
        assert_eq!(kind("1.5.3^2"), UnknownUnit);
        assert_eq!(kind("1.^2"), UnknownUnit);
        // A line terminator stops the power form (Java's `.`).
        assert_eq!(kind("10^400\n"), UnknownUnit);
        assert_eq!(kind("10^3\u{2028}"), UnknownUnit);
    }

    #[test]
    fn error_unparsable_rate() {
        for s in [
            "", ",1.5", "-100", "NaN", "abc", ".5", " ", "1 K M", "\t5", "１０",
        ] {
            let e = err(s);
            assert_eq!(e.kind(), SpecErrorKind::UnparsableRate, "{s:?}");
            assert_eq!(e.field(), Some(1), "{s:?}");
        }
        let e = err("abc,1.5");
        assert_eq!(e.value(), "abc");
        assert_eq!(
            e.to_string(),
            r#"invalid rate spec field 1 (rate) "abc": not a rate; expected a count such as 1000, 2.5K, 1E6 or 10^3"#
        );
        assert_eq!(
            err("").to_string(),
            r#"invalid rate spec field 1 (rate) "": the rate is missing"#
        );
    }

    #[test]
    fn error_unknown_unit() {
        for s in ["5.", "1e6", "5x", "5 kilos", "1.E3", "5\u{212A}"] {
            assert_eq!(kind(s), SpecErrorKind::UnknownUnit, "{s:?}");
        }
        let e = err("5x,2");
        assert_eq!((e.field(), e.value()), (Some(1), "5x"));
        let msg = e.to_string();
        assert!(
            msg.starts_with(r#"invalid rate spec field 1 (rate) "5x": unknown count suffix"#),
            "{msg}"
        );
    }

    #[test]
    fn error_rate_range() {
        for s in ["0", "0.0", "0^3", "0K", "0E400"] {
            assert_eq!(kind(s), SpecErrorKind::RateNotPositive, "{s:?}");
        }
        for s in ["1E400", "1E308K", "1E309"] {
            assert_eq!(kind(s), SpecErrorKind::RateNotFinite, "{s:?}");
        }
        assert_eq!(
            err("0,1.5").to_string(),
            r#"invalid rate spec field 1 (rate) "0": rate must be greater than zero"#
        );
        assert_eq!(
            err("1E400").to_string(),
            r#"invalid rate spec field 1 (rate) "1E400": rate must be finite"#
        );
        // Tiny but positive rates are valid.
        assert_eq!(rate("0.000001"), 1e-6);
    }

    #[test]
    fn error_burst() {
        use SpecErrorKind::*;
        for s in [
            "1000,0.0",
            "1000,0.999",
            "1000,-1.5",
            "1,000",
            "1000,-0",
            "1000,1e-400",
        ] {
            let e = err(s);
            assert_eq!(e.kind(), BurstBelowOne, "{s:?}");
            assert_eq!(e.field(), Some(2), "{s:?}");
        }
        for s in [
            "1000,1e400",
            "1000,NaN",
            "1000,-Infinity",
            "1000, Infinity ",
        ] {
            assert_eq!(kind(s), BurstNotFinite, "{s:?}");
        }
        assert_eq!(
            err("1000,0.5").to_string(),
            r#"invalid rate spec field 2 (burst ratio) "0.5": burst ratio must be at least 1.0"#
        );
        assert_eq!(
            err("1000,NaN,start").to_string(),
            r#"invalid rate spec field 2 (burst ratio) "NaN": burst ratio must be finite"#
        );
    }

    #[test]
    fn error_unknown_word() {
        for s in [
            "1000,1.5d",
            "1000,0x1.8p0",
            "12345,1.3,co",
            "1000,1.5,dynamic",
            "1000, thread",
            "1000,start,1.5",
            "1000,nan",
            "1000,1.5,STARt ",
        ] {
            assert_eq!(kind(s), SpecErrorKind::UnknownWord, "{s:?}");
        }
        let e = err("1000,1.5,start,co");
        assert_eq!((e.field(), e.value()), (Some(4), "co"));
        let msg = e.to_string();
        assert!(
            msg.starts_with(r#"invalid rate spec field 4 (verb or scope) "co": unknown word"#),
            "{msg}"
        );
    }

    #[test]
    fn error_duplicate_word() {
        let e = err("1000,start,restart");
        assert_eq!(e.kind(), SpecErrorKind::DuplicateWord);
        assert_eq!((e.field(), e.value()), (Some(3), "restart"));
        assert_eq!(
            e.to_string(),
            r#"invalid rate spec field 3 (verb) "restart": a second verb; give at most one verb"#
        );
        let e = err("1000,1.5,thread,Activity");
        assert_eq!(
            (e.kind(), e.field()),
            (SpecErrorKind::DuplicateWord, Some(4))
        );
        assert_eq!(
            e.to_string(),
            r#"invalid rate spec field 4 (scope) "Activity": a second scope; give at most one scope"#
        );
        assert_eq!(kind("1000,start,start"), SpecErrorKind::DuplicateWord);
    }

    #[test]
    fn error_too_many_fields() {
        let e = err("1000,1.5,start,thread,x");
        assert_eq!(e.kind(), SpecErrorKind::TooManyFields);
        assert_eq!((e.field(), e.value()), (Some(5), "x"));
        assert_eq!(
            e.to_string(),
            r#"invalid rate spec field 5 "x": too many fields; at most 4 are allowed (rate, burst ratio, verb, scope)"#
        );
        // Checked before anything else.
        assert_eq!(kind(",,,,"), SpecErrorKind::TooManyFields);
        assert_eq!(kind("abc,0.5,x,y,z,w"), SpecErrorKind::TooManyFields);
    }

    #[test]
    fn error_empty_field() {
        let e = err("1000,1.5;");
        assert_eq!(e.kind(), SpecErrorKind::EmptyField);
        assert_eq!((e.field(), e.value()), (Some(3), ""));
        assert_eq!(
            e.to_string(),
            r#"invalid rate spec field 3 "": empty field; check for a doubled or trailing separator"#
        );
        assert_eq!(kind("1000,"), SpecErrorKind::EmptyField);
        assert_eq!(kind("1000,,start"), SpecErrorKind::EmptyField);
        // Before the rate's own checks.
        assert_eq!(kind("abc,"), SpecErrorKind::EmptyField);
        // An empty rate field wins over a later empty field.
        assert_eq!(kind(",1.5,"), SpecErrorKind::UnparsableRate);
    }

    #[test]
    fn check_order() {
        use SpecErrorKind::*;
        assert_eq!(kind("0,0.5"), RateNotPositive);
        assert_eq!(kind("5x,0.5"), UnknownUnit);
        assert_eq!(kind("1000,0.5,co"), BurstBelowOne);
        assert_eq!(kind("1000,co,start,start"), UnknownWord);
        assert_eq!(kind("1000,start,start,co"), DuplicateWord);
    }

    #[test]
    fn error_messages_escape_the_value() {
        let msg = err("5\"\n").to_string();
        assert_eq!(
            msg,
            r#"invalid rate spec field 1 (rate) "5\"\n": unknown count suffix; expected U, K, M, B, G, T, P or E (or unit, kilo, mega, billion, giga, tera, peta, exa)"#
        );
    }

    #[test]
    fn builder() {
        let base = RateSpec::new(Rate::new(10.0).unwrap());
        let e = base.with_burst_ratio(0.5).unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.value()),
            (SpecErrorKind::BurstBelowOne, None, "0.5")
        );
        assert_eq!(
            e.to_string(),
            r#"invalid burst ratio "0.5": burst ratio must be at least 1.0"#
        );
        let e = base.with_burst_ratio(f64::NAN).unwrap_err();
        assert_eq!(e.kind(), SpecErrorKind::BurstNotFinite);
        assert_eq!(
            e.to_string(),
            r#"invalid burst ratio "NaN": burst ratio must be finite"#
        );
        assert_eq!(
            base.with_burst_ratio(f64::INFINITY).unwrap_err().kind(),
            SpecErrorKind::BurstNotFinite
        );
        let s = base
            .with_verb(Verb::Stop)
            .with_scope(Scope::Thread)
            .with_burst_ratio(2.0)
            .unwrap();
        assert_eq!(
            (s.verb(), s.scope(), s.burst_ratio()),
            (Verb::Stop, Scope::Thread, 2.0)
        );
    }

    #[test]
    fn verb_and_scope_words() {
        for v in Verb::ALL {
            assert_eq!(v.as_str().parse::<Verb>(), Ok(v));
            assert_eq!(v.as_str().to_ascii_uppercase().parse::<Verb>(), Ok(v));
            assert_eq!(v.to_string(), v.as_str());
        }
        for s in Scope::ALL {
            assert_eq!(s.as_str().parse::<Scope>(), Ok(s));
            assert_eq!(s.to_string(), s.as_str());
        }
        let e = "thread".parse::<Verb>().unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.value()),
            (SpecErrorKind::UnknownWord, None, "thread")
        );
        assert!(e
            .to_string()
            .starts_with(r#"invalid verb or scope "thread": unknown word"#));
        assert!(" thread".parse::<Scope>().is_err());
    }

    #[test]
    fn kind_names() {
        use SpecErrorKind::*;
        let all = [
            (UnparsableRate, "unparsable_rate"),
            (UnknownUnit, "unknown_unit"),
            (RateNotPositive, "rate_not_positive"),
            (RateNotFinite, "rate_not_finite"),
            (BurstBelowOne, "burst_below_one"),
            (BurstNotFinite, "burst_not_finite"),
            (UnknownWord, "unknown_word"),
            (DuplicateWord, "duplicate_word"),
            (TooManyFields, "too_many_fields"),
            (EmptyField, "empty_field"),
        ];
        for (kind, name) in all {
            assert_eq!(kind.as_str(), name);
            assert_eq!(kind.to_string(), name);
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "523",
            "2.01K",
            "1E300,1E300,stop,thread",
            "0.000001,1.000001,configure",
            "1.5^60,restart",
        ] {
            let spec = ok(s);
            let printed = spec.to_string();
            assert_eq!(parse(&printed), Ok(spec), "{s:?} printed as {printed:?}");
        }
        assert_eq!(
            ok("2.01K").to_string(),
            "2009.9999999999998,1.1,start,activity"
        );
        assert_eq!(
            ok("12345,1.4,configure").to_string(),
            "12345,1.4,configure,activity"
        );
        let tiny = RateSpec::new(Rate::new(f64::from_bits(1)).unwrap());
        assert_eq!(parse(&tiny.to_string()), Ok(tiny));
        let huge = RateSpec::new(Rate::new(f64::MAX).unwrap());
        assert_eq!(parse(&huge.to_string()), Ok(huge));
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "é", "^", "^^", "1^", "^1", "1.^", "1^é", "é1^2", "1^2é", "\u{0}", "1\u{0}", "1,\u{0}",
            "𝟙", "1 𝟙", "9^9^9", "1E", "1E+3", "1.5E3.5", ",", ";;", "::::",
        ] {
            let _ = parse(s);
        }
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_as_string() {
        let spec = ok("2.5K,1.5,restart,thread");
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, r#""2500,1.5,restart,thread""#);
        assert_eq!(serde_json::from_str::<RateSpec>(&json).unwrap(), spec);
        assert_eq!(
            serde_json::from_str::<RateSpec>(r#""1000""#).unwrap(),
            ok("1000")
        );
        let e = serde_json::from_str::<RateSpec>(r#""1000,0.5""#).unwrap_err();
        assert!(
            e.to_string().contains("burst ratio must be at least 1.0"),
            "{e}"
        );
        assert!(serde_json::from_str::<RateSpec>("1000").is_err());
    }
}
