//! What a caller asks and what it is answered, whatever the protocol: the
//! shapes of Envoy's `RateLimitRequest` and `RateLimitResponse`, checked.

use std::sync::Arc;
use std::time::Duration;

use ratekeeper_tower::headers::{ratelimit_item, retry_after_secs};
use ratekeeper_tower::Policy;

use crate::config::Unit;

/// At most this many descriptors in one request.
pub const MAX_DESCRIPTORS: usize = 64;
/// At most this many entries in one descriptor.
pub const MAX_ENTRIES: usize = 32;
/// At most this many bytes in a domain, an entry's key or its value.
pub const MAX_TEXT_BYTES: usize = 4_096;

/// One question: may these descriptors of `domain` take their hits?
///
/// ```
/// use ratekeeper_serve::{CheckRequest, Descriptor};
///
/// let request = CheckRequest::new("api", vec![Descriptor::new([("user", "alice")])]);
/// assert_eq!(request.hits_addend, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRequest {
    /// The domain whose limits apply.
    pub domain: String,
    /// The descriptors, each decided against the limit it matches.
    pub descriptors: Vec<Descriptor>,
    /// The hits each descriptor takes unless it says its own; Envoy's 0
    /// (not set) means 1.
    pub hits_addend: u32,
    /// The longest the caller accepts to wait for an admission, at most
    /// each limit's own `max_wait`; `None`: the limit's.
    pub max_wait: Option<Duration>,
}

impl CheckRequest {
    /// `descriptors` of `domain`, one hit each.
    pub fn new(domain: impl Into<String>, descriptors: Vec<Descriptor>) -> CheckRequest {
        CheckRequest {
            domain: domain.into(),
            descriptors,
            hits_addend: 1,
            max_wait: None,
        }
    }

    /// Checks the sizes and the text a request may hold.
    ///
    /// # Errors
    ///
    /// The first [`CheckError`] found, in the request's order.
    pub fn validate(&self) -> Result<(), CheckError> {
        if self.domain.is_empty() {
            return Err(CheckError::EmptyDomain);
        }
        check_text("domain", &self.domain)?;
        if self.descriptors.is_empty() {
            return Err(CheckError::NoDescriptors);
        }
        if self.descriptors.len() > MAX_DESCRIPTORS {
            return Err(CheckError::TooManyDescriptors(self.descriptors.len()));
        }
        for (i, d) in self.descriptors.iter().enumerate() {
            if d.entries.is_empty() {
                return Err(CheckError::NoEntries { descriptor: i });
            }
            if d.entries.len() > MAX_ENTRIES {
                return Err(CheckError::TooManyEntries {
                    descriptor: i,
                    entries: d.entries.len(),
                });
            }
            for (key, value) in &d.entries {
                if key.is_empty() {
                    return Err(CheckError::EmptyKey { descriptor: i });
                }
                check_text("entry key", key)?;
                check_text("entry value", value)?;
            }
        }
        Ok(())
    }

    /// The hits descriptor `d` takes: its own, else the request's (0
    /// meaning 1). A descriptor's own 0 asks without taking.
    pub fn hits_of(&self, d: &Descriptor) -> u64 {
        d.hits_addend
            .unwrap_or_else(|| u64::from(self.hits_addend.max(1)))
    }
}

fn check_text(what: &'static str, text: &str) -> Result<(), CheckError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(CheckError::TooLong {
            what,
            bytes: text.len(),
        });
    }
    Ok(())
}

/// One descriptor: ordered (key, value) entries, and optionally its own
/// hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// The entries, outermost first.
    pub entries: Vec<(String, String)>,
    /// This descriptor's hits, overriding the request's; 0 asks without
    /// taking.
    pub hits_addend: Option<u64>,
}

impl Descriptor {
    /// A descriptor of `entries`, taking the request's hits.
    pub fn new<K: Into<String>, V: Into<String>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Descriptor {
        Descriptor {
            entries: entries
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            hits_addend: None,
        }
    }
}

/// A request found unanswerable; nothing was taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The domain is empty.
    #[error("the domain is empty: name one of the configured domains")]
    EmptyDomain,
    /// No domain of that name is configured.
    #[error("unknown domain {0:?}: no config file declares it")]
    UnknownDomain(String),
    /// The request has no descriptors.
    #[error("the request has no descriptors: send at least one")]
    NoDescriptors,
    /// More than [`MAX_DESCRIPTORS`] descriptors.
    #[error("{0} descriptors in one request: at most {MAX_DESCRIPTORS} are answered")]
    TooManyDescriptors(usize),
    /// A descriptor without entries.
    #[error("descriptor {descriptor} has no entries: send at least one key and value")]
    NoEntries {
        /// Its index in the request.
        descriptor: usize,
    },
    /// More than [`MAX_ENTRIES`] entries in a descriptor.
    #[error("descriptor {descriptor} has {entries} entries: at most {MAX_ENTRIES} are matched")]
    TooManyEntries {
        /// Its index in the request.
        descriptor: usize,
        /// How many it has.
        entries: usize,
    },
    /// An entry with an empty key.
    #[error("descriptor {descriptor} has an entry with an empty key")]
    EmptyKey {
        /// Its index in the request.
        descriptor: usize,
    },
    /// A descriptor matched a limit kept on Redis, which
    /// [`Limits::check`](crate::Limits::check) does not decide (use
    /// [`check_async`](crate::Limits::check_async)).
    #[error("the limit {0:?} is kept on Redis: decide it with check_async")]
    SharedStore(String),
    /// A domain, key or value longer than [`MAX_TEXT_BYTES`].
    #[error("a {what} of {bytes} bytes: at most {MAX_TEXT_BYTES} are accepted")]
    TooLong {
        /// Which text.
        what: &'static str,
        /// Its length.
        bytes: usize,
    },
}

/// A descriptor's or a request's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// Admitted (or no limit applies).
    Ok,
    /// Refused: over the limit.
    OverLimit,
}

/// The limit a descriptor matched, as Envoy's `RateLimit` message shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentLimit {
    /// The limit's name, if the config gives one.
    pub name: Option<String>,
    /// Permits per unit.
    pub requests_per_unit: u32,
    /// The unit.
    pub unit: Unit,
}

/// The counted limit a descriptor matched: what Envoy's `RateLimit`
/// message shows of it ([`current`](Self::current)) and the policy the
/// draft RateLimit fields announce ([`policy`](Self::policy)).
///
/// Cloning it counts a reference. The limits hand out clones of several
/// copies, one per group of threads, so that threads deciding on the same
/// limit at once do not count on one shared counter; two copies of one
/// limit compare equal.
///
/// ```
/// use ratekeeper_serve::config::Unit;
/// use ratekeeper_serve::{CurrentLimit, MatchedLimit};
/// use ratekeeper_tower::Policy;
///
/// let current = CurrentLimit { name: None, requests_per_unit: 10, unit: Unit::Minute };
/// let limit = MatchedLimit::new(current, Policy::new("api/user", 10, 60)?);
/// assert_eq!(limit.id(), "api/user");
/// assert_eq!(limit.current().requests_per_unit, 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct MatchedLimit(Arc<Shown>);

/// A limit's shown parts, on cache lines of their own: the reference
/// count at its head is written by every clone and drop, and must not
/// share a line with another copy's.
#[derive(Debug, PartialEq, Eq)]
#[repr(align(128))]
struct Shown {
    current: CurrentLimit,
    policy: Policy,
}

impl MatchedLimit {
    /// The limit `current` announced by `policy`.
    pub fn new(current: CurrentLimit, policy: Policy) -> MatchedLimit {
        MatchedLimit(Arc::new(Shown { current, policy }))
    }

    /// The limit as Envoy's `RateLimit` message shows it.
    pub fn current(&self) -> &CurrentLimit {
        &self.0.current
    }

    /// The policy the draft `RateLimit-Policy` field announces.
    pub fn policy(&self) -> &Policy {
        &self.0.policy
    }

    /// The limit's name in metrics and `RateLimit-Policy`: its configured
    /// name, else the domain and the keys of its place in the tree
    /// (`api/user/path`).
    pub fn id(&self) -> &str {
        self.0.policy.name()
    }
}

impl std::fmt::Debug for MatchedLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchedLimit")
            .field("current", &self.0.current)
            .field("policy", &self.0.policy)
            .finish()
    }
}

/// One descriptor's answer, in the request's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorStatus {
    /// The verdict (always [`Code::Ok`] in shadow mode).
    pub code: Code,
    /// The counted limit matched; `None` when none (or an unlimited one)
    /// did.
    pub limit: Option<MatchedLimit>,
    /// Permits left for this descriptor's key after the decision;
    /// `u32::MAX` for an unlimited one.
    pub limit_remaining: u32,
    /// Until the key's state is as a fresh one's: a bucket full again, a
    /// window over.
    pub duration_until_reset: Duration,
    /// For a refusal, when a retry could be admitted, if known.
    pub retry_after: Option<Duration>,
    /// Whether a shadow-mode limit would have refused.
    pub shadow_over_limit: bool,
    /// Whether the shared store (Redis) failed and the limit's failure
    /// policy decided instead.
    pub store_error: bool,
}

impl DescriptorStatus {
    /// The matched limit as Envoy's `RateLimit` message shows it; `None`
    /// when no counted limit matched.
    pub fn current_limit(&self) -> Option<&CurrentLimit> {
        self.limit.as_ref().map(MatchedLimit::current)
    }

    /// The matched limit's [`id`](MatchedLimit::id); `None` when no
    /// counted limit matched.
    pub fn limit_id(&self) -> Option<&str> {
        self.limit.as_ref().map(MatchedLimit::id)
    }
}

/// The answer to a [`CheckRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResponse {
    /// [`Code::OverLimit`] if any descriptor is.
    pub overall_code: Code,
    /// One status per descriptor, in the request's order.
    pub statuses: Vec<DescriptorStatus>,
    /// How long the caller must be held before an admission is due (zero
    /// unless a limit's `max_wait` allowed a wait).
    pub wait: Duration,
}

impl CheckResponse {
    /// The draft `RateLimit-Policy` and `RateLimit` fields for the
    /// caller's response, one list member per descriptor that matched a
    /// counted limit, and `Retry-After` (whole seconds, rounded up, at
    /// least 1) on a refusal; lower-case names. Built on each call, from
    /// the statuses: a caller that sends no fields pays nothing for them.
    ///
    /// ```
    /// use ratekeeper_serve::CheckResponse;
    ///
    /// # fn show(response: &CheckResponse) {
    /// for (name, value) in response.response_headers() {
    ///     println!("{name}: {value}");
    /// }
    /// # }
    /// ```
    pub fn response_headers(&self) -> Vec<(String, String)> {
        let counted = || {
            self.statuses
                .iter()
                .filter_map(|s| s.limit.as_ref().map(|l| (s, l.policy())))
        };
        if counted().next().is_none() {
            return Vec::new();
        }
        let policies: Vec<String> = counted().map(|(_, p)| p.to_string()).collect();
        let limits: Vec<String> = counted()
            .map(|(s, p)| {
                let reset = s.duration_until_reset;
                let reset_secs = reset.as_secs() + u64::from(reset.subsec_nanos() > 0);
                ratelimit_item(p, u64::from(s.limit_remaining), reset_secs)
            })
            .collect();
        let mut fields = vec![
            ("ratelimit-policy".to_owned(), policies.join(", ")),
            ("ratelimit".to_owned(), limits.join(", ")),
        ];
        let retry = counted()
            .filter(|(s, _)| s.code == Code::OverLimit)
            .map(|(s, _)| s.retry_after.unwrap_or(s.duration_until_reset))
            .max();
        if let (Code::OverLimit, Some(retry)) = (self.overall_code, retry) {
            fields.push((
                "retry-after".to_owned(),
                retry_after_secs(retry).to_string(),
            ));
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(descriptors: usize, entries: usize, text: usize) -> CheckRequest {
        let value = "v".repeat(text);
        let entries: Vec<_> = (0..entries)
            .map(|i| (format!("k{i}"), value.clone()))
            .collect();
        CheckRequest::new("d", vec![Descriptor::new(entries); descriptors])
    }

    #[test]
    fn each_bound_admits_its_maximum_and_refuses_one_more() {
        assert_eq!(ask(MAX_DESCRIPTORS, 1, 1).validate(), Ok(()));
        assert_eq!(
            ask(MAX_DESCRIPTORS + 1, 1, 1).validate(),
            Err(CheckError::TooManyDescriptors(MAX_DESCRIPTORS + 1))
        );
        assert_eq!(ask(1, MAX_ENTRIES, 1).validate(), Ok(()));
        assert_eq!(
            ask(1, MAX_ENTRIES + 1, 1).validate(),
            Err(CheckError::TooManyEntries {
                descriptor: 0,
                entries: MAX_ENTRIES + 1
            })
        );
        assert_eq!(ask(1, 1, MAX_TEXT_BYTES).validate(), Ok(()));
        assert_eq!(
            ask(1, 1, MAX_TEXT_BYTES + 1).validate(),
            Err(CheckError::TooLong {
                what: "entry value",
                bytes: MAX_TEXT_BYTES + 1
            })
        );
    }

    #[test]
    fn the_reset_is_whole_seconds_rounded_up() {
        let current = CurrentLimit {
            name: None,
            requests_per_unit: 10,
            unit: crate::config::Unit::Minute,
        };
        let limit = MatchedLimit::new(current, Policy::new("p", 10, 60).unwrap());
        let field = |reset: Duration| {
            let status = DescriptorStatus {
                code: Code::Ok,
                limit: Some(limit.clone()),
                limit_remaining: 3,
                duration_until_reset: reset,
                retry_after: None,
                shadow_over_limit: false,
                store_error: false,
            };
            let response = CheckResponse {
                overall_code: Code::Ok,
                statuses: vec![status],
                wait: Duration::ZERO,
            };
            response.response_headers()[1].1.clone()
        };
        assert_eq!(field(Duration::from_secs(2)), r#""p";r=3;t=2"#);
        assert_eq!(field(Duration::from_millis(1_001)), r#""p";r=3;t=2"#);
        assert_eq!(field(Duration::ZERO), r#""p";r=3;t=0"#);
    }
}
