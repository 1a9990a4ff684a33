//! The service's limits, in envoyproxy/ratelimit's YAML shape.
//!
//! One file holds one domain:
//!
//! ```yaml
//! domain: api
//! descriptors:
//!   # Each value of `user` gets its own limit: 100 per minute, rolling.
//!   - key: user
//!     rate_limit:
//!       unit: minute
//!       requests_per_unit: 100
//!   # One limit for the value `admin`, held up to 50 ms instead of refused.
//!   - key: user
//!     value: admin
//!     rate_limit: { unit: second, requests_per_unit: 1000 }
//!     max_wait: 50ms
//!   - key: path
//!     value: /health
//!     rate_limit: { unlimited: true }
//! ```
//!
//! envoyproxy/ratelimit's fields: `domain`; `descriptors`, nested, each with
//! `key`, an optional `value`, an optional `rate_limit` (`unit`,
//! `requests_per_unit`, `unlimited`, `name`), `shadow_mode` and nested
//! `descriptors`. ratekeeper's own, per descriptor: `algorithm` (`refill`,
//! the default, `cycle` or `pacer`), `burst` (the refill bucket's
//! capacity), `max_wait` and `on_redis_failure`.
//!
//! # Loading
//!
//! [`Config::load`] reads a file, or every `*.yaml` and `*.yml` file of a
//! folder in the order of their names, one domain per file. A folder is not
//! searched recursively: subfolders and hidden files (names starting with
//! `.`, as the `..data` links of a Kubernetes ConfigMap) are skipped, and a
//! folder without a YAML file is an error. [`Config::from_yaml`] reads one
//! file's text.
//!
//! The fields follow envoyproxy/ratelimit's, with these rules:
//!
//! - `domain` and each descriptor's `key` are required and not empty; two
//!   files with the same `domain` are refused, and so are two sibling
//!   descriptors with the same `key` and `value`.
//! - `unit` is case-insensitive (`second` or `SECOND`); `requests_per_unit`
//!   is a whole number from 1 to 4,294,967,295 (envoyproxy/ratelimit's `0`,
//!   refusing everything, has no counterpart here). `unlimited: true` takes
//!   neither `unit` nor `requests_per_unit`.
//! - `algorithm`, `burst`, `max_wait` (a duration such as `50ms` or `1s`, or
//!   `0`) and `on_redis_failure` need a counted `rate_limit` on the same
//!   descriptor; `burst` (at least 1) needs `algorithm: refill`.
//! - `detailed_metric` and `value_to_metric` only shape envoyproxy/ratelimit's
//!   metrics: they are checked to be booleans, then ignored.
//! - `share_threshold` and `rate_limit.replaces` are refused as not supported
//!   by `ratekeeper serve`: every limit that matches a request applies.
//! - Any other field is an error that names it and lists the allowed ones.
//! - Scalars are taken as written: `value: 010` is the string `010`.
//!
//! # Errors
//!
//! Every error is a [`ConfigFileError`]: the file, the 1-based line of the
//! item at fault, and a message that says what is wrong and what to write
//! instead, displayed as `FILE:LINE: MESSAGE`:
//!
//! ```text
//! api.yaml:4: unit "minutes" is not a unit: write one of second, minute, hour, day, week, month, year
//! ```
//!
//! A file or folder that cannot be read has line 0, displays as
//! `PATH: MESSAGE`, and carries the I/O error as its
//! [`source`](std::error::Error::source). [`ConfigErrorKind`] tells the kinds
//! apart.

use std::time::Duration;

/// Every domain the service answers for, from one file or a folder.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// The domains, one per file, in the order the files were read.
    pub domains: Vec<DomainConfig>,
}

/// One file's domain and its descriptor tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainConfig {
    /// The domain a request names.
    pub domain: String,
    /// The top level of the descriptor tree.
    pub descriptors: Vec<DescriptorConfig>,
    /// The file it came from (for errors and logs).
    pub source: String,
}

/// One node of a domain's descriptor tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DescriptorConfig {
    /// The entry key this node matches.
    pub key: String,
    /// The entry value it matches; `None` matches any value and limits each
    /// value separately.
    pub value: Option<String>,
    /// The limit of a request whose entries end at this node.
    pub limit: Option<LimitConfig>,
    /// Count and report, but never refuse.
    pub shadow_mode: bool,
    /// Deeper entries.
    pub descriptors: Vec<DescriptorConfig>,
    /// The line of the node's `key` in its file (1-based).
    pub line: usize,
}

/// A node's `rate_limit` with ratekeeper's additions.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitConfig {
    /// `unlimited: true`: always admitted, nothing counted.
    Unlimited {
        /// The limit's `name`, if given.
        name: Option<String>,
    },
    /// A counted limit.
    Limited(RateLimitConfig),
}

/// `requests_per_unit` per `unit`, by an algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitConfig {
    /// The limit's `name`, if given (envoyproxy/ratelimit's, for
    /// `RateLimit-Policy` and metrics).
    pub name: Option<String>,
    /// The unit of time.
    pub unit: Unit,
    /// Permits per unit; at least 1.
    pub requests_per_unit: u32,
    /// How the permits are handed out.
    pub algorithm: Algorithm,
    /// The refill bucket's capacity (`requests_per_unit` when not given);
    /// only with [`Algorithm::Refill`].
    pub burst: Option<u32>,
    /// How long a request may be held instead of refused (zero: refused at
    /// once, as envoyproxy/ratelimit).
    pub max_wait: Duration,
    /// What to answer when the Redis store fails; `None`: the command
    /// line's default.
    pub on_redis_failure: Option<FailurePolicy>,
}

impl DescriptorConfig {
    /// A node matching `key` with any value, with no limit, no children and
    /// no source line (0): the start of a tree built in code, the other
    /// fields set by struct update.
    ///
    /// ```
    /// use ratekeeper_serve::config::{DescriptorConfig, RateLimitConfig, Unit};
    ///
    /// // Each value of `user`: 100 a minute, rolling.
    /// let per_user = DescriptorConfig {
    ///     limit: Some(RateLimitConfig::new(100, Unit::Minute).into()),
    ///     ..DescriptorConfig::new("user")
    /// };
    /// assert_eq!(per_user.value, None);
    /// ```
    pub fn new(key: impl Into<String>) -> DescriptorConfig {
        DescriptorConfig {
            key: key.into(),
            value: None,
            limit: None,
            shadow_mode: false,
            descriptors: Vec::new(),
            line: 0,
        }
    }
}

impl RateLimitConfig {
    /// `requests_per_unit` per `unit` with the YAML's defaults: no name,
    /// [`Algorithm::Refill`] holding one unit's worth, refused at once (no
    /// `max_wait`), the command line's failure policy.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper_serve::config::{Algorithm, RateLimitConfig, Unit};
    ///
    /// let spaced = RateLimitConfig {
    ///     algorithm: Algorithm::Pacer,
    ///     max_wait: Duration::from_millis(50),
    ///     ..RateLimitConfig::new(10, Unit::Second)
    /// };
    /// assert_eq!(spaced.burst, None);
    /// ```
    pub fn new(requests_per_unit: u32, unit: Unit) -> RateLimitConfig {
        RateLimitConfig {
            name: None,
            unit,
            requests_per_unit,
            algorithm: Algorithm::Refill,
            burst: None,
            max_wait: Duration::ZERO,
            on_redis_failure: None,
        }
    }
}

impl From<RateLimitConfig> for LimitConfig {
    fn from(rate: RateLimitConfig) -> LimitConfig {
        LimitConfig::Limited(rate)
    }
}

/// envoyproxy/ratelimit's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// 1 s.
    Second,
    /// 60 s.
    Minute,
    /// 3,600 s.
    Hour,
    /// 86,400 s.
    Day,
    /// 7 days.
    Week,
    /// 30 days, as envoyproxy/ratelimit counts a month.
    Month,
    /// 365 days.
    Year,
}

impl Unit {
    /// The unit's length.
    pub fn duration(self) -> Duration {
        const DAY: u64 = 86_400;
        Duration::from_secs(match self {
            Unit::Second => 1,
            Unit::Minute => 60,
            Unit::Hour => 3_600,
            Unit::Day => DAY,
            Unit::Week => 7 * DAY,
            Unit::Month => 30 * DAY,
            Unit::Year => 365 * DAY,
        })
    }

    /// The name envoyproxy/ratelimit's YAML and Envoy's protos use, upper
    /// case (`SECOND`).
    pub fn as_proto_name(self) -> &'static str {
        match self {
            Unit::Second => "SECOND",
            Unit::Minute => "MINUTE",
            Unit::Hour => "HOUR",
            Unit::Day => "DAY",
            Unit::Week => "WEEK",
            Unit::Month => "MONTH",
            Unit::Year => "YEAR",
        }
    }
}

/// The algorithm a limit runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// A rolling refill bucket: `burst` permits, refilled evenly over the
    /// unit at `requests_per_unit` per unit. No boundary burst.
    #[default]
    Refill,
    /// Fixed windows of one unit, `requests_per_unit` each, as
    /// envoyproxy/ratelimit and Limitador count: a client may take twice the
    /// limit across a window's boundary.
    Cycle,
    /// The Pacer in strict mode: requests spaced evenly, one per
    /// `unit / requests_per_unit`.
    Pacer,
}

/// What a limit on a failed Redis store answers: `allow`, `deny` or
/// `local` in the YAML (`open` and `closed` are taken for the first two,
/// as the CLI's `--on-redis-failure` of the other commands names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailurePolicy {
    /// Admit (fail open, as Envoy's filter by default).
    Allow,
    /// Refuse (fail closed).
    Deny,
    /// Decide on this process's own in-memory limit meanwhile.
    Local,
}

mod load;
mod parse;

pub use load::{ConfigErrorKind, ConfigFileError};

#[cfg(test)]
mod tests {
    use super::Unit;

    #[test]
    fn units_last_as_envoyproxy_ratelimit_counts_them() {
        let day = 86_400;
        let units = [
            (Unit::Second, 1, "SECOND"),
            (Unit::Minute, 60, "MINUTE"),
            (Unit::Hour, 3_600, "HOUR"),
            (Unit::Day, day, "DAY"),
            (Unit::Week, 7 * day, "WEEK"),
            (Unit::Month, 30 * day, "MONTH"),
            (Unit::Year, 365 * day, "YEAR"),
        ];
        for (unit, secs, name) in units {
            assert_eq!(unit.duration().as_secs(), secs, "{name}");
            assert_eq!(unit.as_proto_name(), name);
        }
    }
}
