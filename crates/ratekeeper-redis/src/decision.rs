//! [`Decision`]: a grant or a refusal, and where it came from.

use ratekeeper::{AcquireError, Grant};

use crate::error::RedisError;

/// Where a [`Decision`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Source {
    /// The server decided (one round trip).
    Redis,
    /// The denial cache: the server refused this limit until a known time,
    /// and that time has not come (no round trip).
    Cache,
    /// Permits leased from the server earlier (no round trip).
    Lease,
    /// The server failed and the policy is
    /// [`Open`](crate::FailurePolicy::Open): admitted unchecked.
    FailOpen,
    /// The server failed and the policy is
    /// [`Closed`](crate::FailurePolicy::Closed): refused.
    FailClosed,
    /// The server failed and the policy is
    /// [`Local`](crate::FailurePolicy::Local): the in-process fallback
    /// limiter decided.
    Local,
}

impl Source {
    /// Every source, in a fixed order (for reports).
    pub const ALL: [Source; 6] = [
        Source::Redis,
        Source::Cache,
        Source::Lease,
        Source::FailOpen,
        Source::FailClosed,
        Source::Local,
    ];

    /// A short name: `redis`, `cache`, `lease`, `fail_open`, `fail_closed`,
    /// `local`.
    pub const fn name(self) -> &'static str {
        match self {
            Source::Redis => "redis",
            Source::Cache => "cache",
            Source::Lease => "lease",
            Source::FailOpen => "fail_open",
            Source::FailClosed => "fail_closed",
            Source::Local => "local",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a limiter capped on live clients
/// ([`max_clients`](crate::RedisLimiterBuilder::max_clients)) did with the
/// client of a [`reserve_for`](crate::RedisLimiter::reserve_for), decided
/// on the server with the request: [`Decision::admission`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Admission {
    /// The client is tracked (it was, or there was room, if need be after
    /// dropping recovered clients): its own limit decided.
    Tracked,
    /// The client was new, the registry full of clients in debt, and the
    /// policy [`Overflow::DenyNew`](ratekeeper::keyed::Overflow::DenyNew):
    /// refused with nothing reserved, as a
    /// [`WouldWait`](AcquireError::WouldWait) whose wait is when the first
    /// live client recovers (the soonest a place may free up), whatever
    /// the maximum wait.
    DeniedNew,
    /// The client was new, the registry full of clients in debt, and the
    /// policy [`Overflow::Shared`](ratekeeper::keyed::Overflow::Shared):
    /// the one overflow limit every such client shares decided.
    Overflowed,
    /// The client was new, the registry full of clients in debt, and the
    /// policy
    /// [`Overflow::EvictLeastDebt`](ratekeeper::keyed::Overflow::EvictLeastDebt):
    /// the client closest to recovering was dropped (its debt forgiven,
    /// counted) and this one is tracked; its own limit decided.
    EvictedDebt,
}

impl Admission {
    /// The outcome the cap's script replies with, if it is one.
    pub(crate) fn from_reply(outcome: i64) -> Option<Admission> {
        Some(match outcome {
            0 => Admission::Tracked,
            1 => Admission::DeniedNew,
            2 => Admission::Overflowed,
            3 => Admission::EvictedDebt,
            _ => return None,
        })
    }
}

/// A shared limiter's answer to one request: the grant (its times on the
/// local clock) or why not, where the answer came from, and the server's
/// error when the failure policy decided.
#[derive(Debug, Clone)]
pub struct Decision {
    pub(crate) result: Result<Grant, AcquireError>,
    pub(crate) source: Source,
    pub(crate) error: Option<RedisError>,
    pub(crate) admission: Option<Admission>,
}

impl Decision {
    /// The grant, or why there is none.
    pub fn result(&self) -> Result<Grant, AcquireError> {
        self.result
    }

    /// Whether the request was granted.
    pub fn is_granted(&self) -> bool {
        self.result.is_ok()
    }

    /// Where the decision came from.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The server's error, when the failure policy decided instead.
    pub fn backend_error(&self) -> Option<&RedisError> {
        self.error.as_ref()
    }

    /// For a client of a limiter capped on live clients, what the server
    /// did with the client ([`Admission::DeniedNew`]: a new client
    /// refused); `None` elsewhere, and when the failure policy decided.
    pub fn admission(&self) -> Option<Admission> {
        self.admission
    }

    /// The grant or the refusal, dropping the rest.
    pub fn into_result(self) -> Result<Grant, AcquireError> {
        self.result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_shows_its_documented_name_in_its_place() {
        let shown: Vec<String> = Source::ALL.iter().map(Source::to_string).collect();
        assert_eq!(
            shown,
            [
                "redis",
                "cache",
                "lease",
                "fail_open",
                "fail_closed",
                "local"
            ]
        );
        for (i, source) in Source::ALL.into_iter().enumerate() {
            assert_eq!(source.to_string(), source.name());
            assert_eq!(source.index(), i);
        }
    }
}
