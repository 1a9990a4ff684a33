//! [`RedisKeyed`]: a per-client limit kept on Redis, shared by every
//! replica of the service (feature `redis`).

use std::fmt::Write as _;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use ratekeeper::{AcquireError, Grant};
use ratekeeper_redis::RedisLimiter;

use crate::limit::{AsyncKeyedLimit, Reservation};
use crate::{ConfigError, Policy};

/// The decision of one request, on its way from the server.
pub type RedisReservation = Pin<Box<dyn Future<Output = Result<Grant, AcquireError>> + Send>>;

/// A limit per client kept on Redis by a [`RedisLimiter`]: each client's
/// limit is the limiter's, under the key `{prefix}{client}`
/// ([`RedisLimiter::reserve_for`]), so every process serving with the
/// same prefix and limit shares it. The layer awaits each decision (one
/// round trip, bounded by the backend's deadline) in the response future;
/// the key is the extractor's, as text (an IP address as `203.0.113.7`;
/// see the `AsyncKeyedLimit` impls for the key types taken).
///
/// * **Failure policy.** The limiter's: by default
///   [`LocalLearned`](ratekeeper_redis::FailurePolicy::LocalLearned), each
///   process deciding alone at the share of the limit it was using while
///   the server fails. A refusal of that policy
///   ([`Closed`](ratekeeper_redis::FailurePolicy::Closed)) is answered 503
///   with `Retry-After: 1`.
/// * **Misconfiguration is never admitted.** A key holding another type or
///   another limit ([`AcquireError::Misconfigured`]) is answered 500 and
///   counted in [`Metrics::config_errors`](crate::Metrics::config_errors);
///   [`RedisLimiter::config_error`] says why.
/// * **Announced policy.** Derived from the limiter's own
///   [`SharedLimit`](ratekeeper_redis::SharedLimit) ([`Policy::from_config`]).
///   The `RateLimit` field's remaining count on admitted responses is 0:
///   other processes draw on the same limit, so nothing more is certain.
///
/// ```no_run
/// # #[cfg(feature = "axum")]
/// # #[allow(dead_code)]
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit};
/// use ratekeeper_tower::{PeerIp, RateLimitLayer, RedisKeyed};
///
/// let backend = Backend::connect("redis://127.0.0.1:6379/").await?;
/// let bucket = SharedLimit::from_config(&"refill:2,500ms,capacity=5,initial=5".parse()?)?;
/// let limiter = RedisLimiter::builder(&backend, "api:per-ip:", bucket).build()?;
/// let limit = RateLimitLayer::builder(RedisKeyed::new("per-ip", limiter)?)
///     .key(PeerIp::connection())
///     .build_per_connection()?;
/// let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
/// axum::serve(listener, limit.make_service(app)).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RedisKeyed {
    limiter: Arc<RedisLimiter>,
    policy: Policy,
}

impl RedisKeyed {
    /// Keyed by `limiter` (its key is the clients' prefix), announced as
    /// the policy `name` of its limit's rate and burst.
    ///
    /// # Errors
    ///
    /// As [`Policy::from_config`] for the limiter's limit (a pacer of
    /// strictness under 1 has no burst to announce).
    pub fn new(name: impl Into<String>, limiter: RedisLimiter) -> Result<RedisKeyed, ConfigError> {
        let config = limiter
            .limit()
            .scaled_config(1.0)
            .map_err(ConfigError::Core)?;
        Ok(RedisKeyed {
            policy: Policy::from_config(name, &config)?,
            limiter: Arc::new(limiter),
        })
    }

    /// The limiter: its [`stats`](RedisLimiter::stats) by source, its
    /// [`config_error`](RedisLimiter::config_error).
    pub fn limiter(&self) -> &RedisLimiter {
        &self.limiter
    }
}

impl RedisKeyed {
    fn reserve_client(
        &self,
        client: String,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Reservation<RedisReservation> {
        let limiter = Arc::clone(&self.limiter);
        Reservation::Later(Box::pin(async move {
            limiter
                .reserve_for(&client, permits, max_wait)
                .await
                .into_result()
        }))
    }
}

/// The client name of a header value: its text, each byte outside visible
/// ASCII and `%` written `%XX`, so that distinct values stay distinct.
fn header_client(value: &HeaderValue) -> String {
    let mut s = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        if b.is_ascii_graphic() && b != b'%' || b == b' ' {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    s
}

/// The keys of the crate's extractors: an IP address ([`PeerIp`],
/// [`RightmostTrusted`]) as `203.0.113.7` (IPv6 by its prefix, `2001:db8::`),
/// a header's value ([`HeaderKey`]) as its text, a [`FnKey`]'s `String` as
/// it is. (One impl per key type: a generic one would collide with the
/// [`KeyedLimit`](crate::KeyedLimit) impls a downstream crate may write.)
///
/// [`PeerIp`]: crate::PeerIp
/// [`RightmostTrusted`]: crate::RightmostTrusted
/// [`HeaderKey`]: crate::HeaderKey
/// [`FnKey`]: crate::FnKey
macro_rules! keyed_by {
    ($($key:ty => $client:expr),* $(,)?) => {$(
        impl AsyncKeyedLimit<$key> for RedisKeyed {
            type Pending = RedisReservation;

            fn reserve_async(
                &self,
                key: &$key,
                permits: u32,
                max_wait: Option<Duration>,
            ) -> Reservation<RedisReservation> {
                #[allow(clippy::redundant_closure_call)]
                self.reserve_client(($client)(key), permits, max_wait)
            }

            fn announced_policy(&self) -> &Policy {
                &self.policy
            }
        }
    )*};
}

keyed_by! {
    IpAddr => |ip: &IpAddr| ip.to_string(),
    String => |s: &String| s.clone(),
    HeaderValue => header_client,
}
