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
//!
//! # Further reading
//!
//! The repository's `docs/spec.md` details each field (the rate's number
//! format, the burst ratio, verbs, scopes), the printed form and every error.

use core::fmt;
use core::str::FromStr;

use crate::rate::Rate;

mod burst;
mod error;
mod parse;
#[cfg(test)]
mod tests;
mod words;

pub use burst::BurstRatio;

pub use error::{SpecError, SpecErrorKind};
pub use words::{Scope, Verb};

/// The burst ratio of a spec that does not give one: bursts of up to 10 % above
/// the rate while a limiter catches up. [`BurstRatio::DEFAULT`] is this value,
/// validated.
pub const DEFAULT_BURST_RATIO: f64 = 1.1;

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
    burst: BurstRatio,
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
            burst: BurstRatio::DEFAULT,
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
        BurstRatio::new(burst_ratio).map(|burst| self.with_burst(burst))
    }

    /// The same spec with another burst ratio, already validated; cannot
    /// fail.
    ///
    /// ```
    /// use ratekeeper::{BurstRatio, Rate, RateSpec};
    ///
    /// let spec = RateSpec::new(Rate::new(1000.0)?).with_burst(BurstRatio::new(1.5)?);
    /// assert_eq!(spec.burst(), BurstRatio::new(1.5)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn with_burst(self, burst: BurstRatio) -> RateSpec {
        RateSpec { burst, ..self }
    }

    /// The spec whose first field is `rate`, already read, and whose later
    /// fields (burst ratio, verb, scope) are the text `rest`: what parsing
    /// `"RATE,rest"` gives, without writing the rate out as text. For a
    /// front end that reads the rate in a grammar of its own (a command
    /// line's `100/min` or `1MiB`) and leaves the other fields to this one.
    /// O(`rest.len()`).
    ///
    /// # Errors
    ///
    /// As [`str::parse`] for the fields of `rest`, numbered from 2 (the rate
    /// is field 1): [`SpecErrorKind::TooManyFields`],
    /// [`SpecErrorKind::EmptyField`] (an empty `rest` is an empty field 2),
    /// the burst ratio's kinds and the words'.
    ///
    /// ```
    /// use ratekeeper::{Rate, RateSpec, Scope, SpecErrorKind};
    ///
    /// let rate = Rate::new(1e-3)?;
    /// let spec = RateSpec::parse_after_rate(rate, "1.5,thread")?;
    /// assert_eq!(spec, "0.001,1.5,thread".parse()?);
    /// assert_eq!(spec.scope(), Scope::Thread);
    ///
    /// let err = RateSpec::parse_after_rate(rate, "0.5").unwrap_err();
    /// assert_eq!((err.kind(), err.field()), (SpecErrorKind::BurstBelowOne, Some(2)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse_after_rate(rate: Rate, rest: &str) -> Result<RateSpec, SpecError> {
        parse::parse_after_rate(rate, rest)
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
        self.burst.get()
    }

    /// The burst ratio as the validated [`BurstRatio`].
    pub const fn burst(&self) -> BurstRatio {
        self.burst
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
    /// [module documentation](self)). O(`s.len()`).
    fn from_str(s: &str) -> Result<RateSpec, SpecError> {
        parse::parse_spec(s)
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
            self.burst,
            self.verb.as_str(),
            self.scope.as_str()
        )
    }
}

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
