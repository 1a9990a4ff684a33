//! [`RedisError`]: why a decision could not be made on the server.

use std::time::Duration;

use crate::limit::Script;

/// Why the server could not decide: a value, never a panic. Whether the
/// limiter then admits, refuses or decides locally is its
/// [`FailurePolicy`](crate::FailurePolicy).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RedisError {
    /// The URL does not parse as a Redis URL (`redis://host:port/db`,
    /// `rediss://…`, `unix://…`).
    #[error("{url:?} is not a Redis URL: {source}")]
    Url {
        /// The URL given.
        url: String,
        /// What the client said of it.
        source: redis::RedisError,
    },
    /// No answer within the deadline (the server stalled, or a reconnect
    /// took longer).
    #[error("no answer from Redis within the {0:?} deadline")]
    Deadline(Duration),
    /// The server refused `SCRIPT LOAD`: scripting is disabled (Valkey 9.1
    /// can run without Lua) or the user may not load scripts (ACL).
    #[error(
        "Redis refused SCRIPT LOAD ({0}); ratekeeper-redis needs server-side Lua \
         (EVALSHA): enable scripting for this user"
    )]
    ScriptingUnavailable(redis::RedisError),
    /// The server wants credentials it did not get (`NOAUTH`), or refused
    /// the ones it got (`WRONGPASS`).
    #[error(
        "Redis authentication required or refused ({0}): give the user and password in the \
         URL, redis://USER:PASSWORD@HOST:PORT/"
    )]
    Auth(redis::RedisError),
    /// The limiter's key holds a value of another type (another program
    /// uses the same key name). A configuration error: no failure policy
    /// decides it ([`AcquireError::Misconfigured`](ratekeeper::AcquireError::Misconfigured)).
    #[error("the key {key:?} holds a value of another type ({source}): choose another key")]
    WrongType {
        /// The key.
        key: String,
        /// The server's error.
        source: redis::RedisError,
    },
    /// The limiter's key keeps another limit than this limiter's (another
    /// process shares the key with other settings). A configuration error:
    /// no failure policy decides it
    /// ([`AcquireError::Misconfigured`](ratekeeper::AcquireError::Misconfigured));
    /// [`adopt`](crate::RedisLimiterBuilder::adopt) takes the key over.
    #[error(
        "the key {key:?} keeps {theirs}, not this limiter's {ours}: give every process the \
         same limit, or take the key over (adopt)"
    )]
    LimitMismatch {
        /// The key.
        key: String,
        /// The limit the key keeps.
        theirs: String,
        /// This limiter's.
        ours: String,
    },
    /// The script answered something it never returns (another script under
    /// the same SHA1, or a proxy in between).
    #[error("the limiter script's reply is not one it returns: {0}")]
    BadReply(String),
    /// The circuit breaker is open: the last requests failed, and a probe
    /// is under way or due later.
    #[error("Redis is skipped for now: the circuit breaker opened after repeated failures")]
    BreakerOpen,
    /// Any other error from the client or the server (connection refused
    /// or reset, an I/O error, a server error reply).
    #[error("Redis: {0}")]
    Redis(redis::RedisError),
}

impl RedisError {
    /// The error for `e`, met while deciding on `key`.
    pub(crate) fn from_redis(e: redis::RedisError, key: &str) -> RedisError {
        match e.code() {
            Some("WRONGTYPE") => RedisError::WrongType {
                key: key.to_owned(),
                source: e,
            },
            Some("RKLIMIT") => RedisError::LimitMismatch {
                key: key.to_owned(),
                theirs: Script::parse_stored(e.detail().unwrap_or_default())
                    .map_or_else(|| "another limit".to_owned(), |s| s.to_string()),
                // Filled in by the limiter, which knows its own.
                ours: String::new(),
            },
            Some("NOAUTH" | "WRONGPASS") => RedisError::Auth(e),
            _ => RedisError::Redis(e),
        }
    }

    /// Whether this is a configuration error (the key holds something else
    /// or another limit): the caller's to fix, never a failure policy's to
    /// decide.
    pub fn is_misconfiguration(&self) -> bool {
        matches!(
            self,
            RedisError::WrongType { .. } | RedisError::LimitMismatch { .. }
        )
    }
}

/// `url` with the password of its user part, if any, hidden (`***`), for
/// anything shown to a person: reports, logs, errors. A URL with no user
/// part is returned as it is; text that does not parse as a URL loses
/// whatever stands between a ':' and the last '@'.
///
/// ```
/// use ratekeeper_redis::redact_url;
///
/// assert_eq!(redact_url("redis://:s3cret@h:6379/0"), "redis://:***@h:6379/0");
/// assert_eq!(redact_url("redis://app:s3cret@h/"), "redis://app:***@h/");
/// assert_eq!(redact_url("rediss://h:6380/"), "rediss://h:6380/");
/// assert_eq!(redact_url("redis://app@h/"), "redis://app@h/");
/// assert_eq!(redact_url("redis://:p@ss/w:rd@h/"), "redis://:***@h/");
/// assert_eq!(redact_url("not a url :pw@h"), "not a url :***@h");
/// ```
pub fn redact_url(url: &str) -> String {
    // The user part runs from the scheme's "://" (or the start, for text
    // that has none) to the last '@'; its password, after its first ':'.
    let start = url.find("://").map_or(0, |i| i + 3);
    let Some(at) = url[start..].rfind('@').map(|i| start + i) else {
        return url.to_owned();
    };
    match url[start..at].find(':') {
        Some(colon) => format!("{}:***{}", &url[..start + colon], &url[at..]),
        None => url.to_owned(),
    }
}
