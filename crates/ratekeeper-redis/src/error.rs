//! [`RedisError`]: why a decision could not be made on the server.

use std::time::Duration;

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
    /// The limiter's key holds a value of another type (another program
    /// uses the same key name).
    #[error("the key {key:?} holds a value of another type ({source}): choose another key")]
    WrongType {
        /// The key.
        key: String,
        /// The server's error.
        source: redis::RedisError,
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
        if e.code() == Some("WRONGTYPE") {
            return RedisError::WrongType {
                key: key.to_owned(),
                source: e,
            };
        }
        RedisError::Redis(e)
    }
}
