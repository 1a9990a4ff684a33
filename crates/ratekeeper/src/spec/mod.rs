//! Rate specs: the one-line form of a rate limit, as written in nosqlbench's
//! `cyclerate` and `striderate` parameters.
//!
//! A [`RateSpec`] bundles a [rate](Rate) in operations per second, a burst
//! ratio, a [`Verb`] (what applying it does to a limiter) and a [`Scope`]
//! (who shares the limit). Parse with [`str::parse`], print with `Display`:
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
//! rate  = a count, e.g. 1000, 2.5K, 1E6, 10^3    see docs/spec.md
//! burst = a decimal number >= 1.0, e.g. 1.1      field 2 only
//! word  = verb | scope                           any order, each at most once
//! verb  = "configure" | "start" | "restart" | "stop"
//! scope = "activity" | "thread"
//! ```
//!
//! Every field must be non-empty (`"1000,"` is an error). The rate and burst
//! tolerate spaces around their numbers; words are not trimmed.
//!
//! ## Differences from nosqlbench
//!
//! nosqlbench 5's `SimRateSpec` grammar, made stricter: zero or infinite
//! rates, burst ratios below `1.0` or not finite, Java-only number forms,
//! repeated verbs or scopes, more than four fields and empty fields are
//! errors; count suffixes match ASCII case-insensitively.
//!
//! The repository's `docs/spec.md` details each field, the printed form,
//! examples and every error.

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

/// The burst ratio of a spec that gives none: up to 10 % above the rate
/// while catching up ([`BurstRatio::DEFAULT`], validated).
pub const DEFAULT_BURST_RATIO: f64 = 1.1;

/// A parsed rate limit: rate, burst ratio, [`Verb`] and [`Scope`].
///
/// Build with [`RateSpec::new`] and the `with_*` methods, or parse the
/// [grammar](self). `Display` writes `rate,burst,verb,scope`, which parses
/// back to an equal spec.
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
    /// Same as the module-level [`DEFAULT_BURST_RATIO`].
    pub const DEFAULT_BURST_RATIO: f64 = DEFAULT_BURST_RATIO;

    /// A spec with the given rate and the defaults: burst ratio
    /// [`DEFAULT_BURST_RATIO`], [`Verb::Start`] and [`Scope::Activity`].
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
    /// [`SpecErrorKind::BurstNotFinite`] for NaN or an infinity,
    /// [`SpecErrorKind::BurstBelowOne`] below `1.0`; no
    /// [field number](SpecError::field).
    pub fn with_burst_ratio(self, burst_ratio: f64) -> Result<RateSpec, SpecError> {
        BurstRatio::new(burst_ratio).map(|burst| self.with_burst(burst))
    }

    /// The same spec with another, already validated, burst ratio.
    pub const fn with_burst(self, burst: BurstRatio) -> RateSpec {
        RateSpec { burst, ..self }
    }

    /// What parsing `"RATE,rest"` gives, `rate` already read: for a front end
    /// with its own rate grammar (`100/min`). O(`rest.len()`).
    ///
    /// # Errors
    ///
    /// As [`str::parse`], fields numbered from 2; an empty `rest` is an
    /// empty field 2 ([`SpecErrorKind::EmptyField`]).
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

    /// The same spec with another verb (no other `with_*` resets it).
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

    /// The burst ratio (finite, `>= 1.0`): a limiter behind schedule may run
    /// at up to `rate × burst_ratio` while it catches up.
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

    /// Parses the [grammar](self). O(`s.len()`).
    fn from_str(s: &str) -> Result<RateSpec, SpecError> {
        parse::parse_spec(s)
    }
}

impl fmt::Display for RateSpec {
    /// `rate,burst,verb,scope`, each number in the shortest form that parses
    /// back to it, without an exponent.
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
