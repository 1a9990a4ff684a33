//! A [tower](https://docs.rs/tower) rate-limiting layer over [ratekeeper]'s limiters, for
//! [http](https://docs.rs/http) 1 services (axum, hyper, tonic).
//!
//! * **The common case in one expression.** Per client IP, a rate and a
//!   burst: [`RateLimitLayer::per_ip`] (or [`per_ip_behind`] reverse
//!   proxies), served as the server's make-service:
//!
//!   ```
//!   # #[cfg(feature = "axum")]
//!   # #[allow(dead_code)]
//!   # async fn serve(app: axum::Router, listener: tokio::net::TcpListener) -> Result<(), Box<dyn std::error::Error>> {
//!   axum::serve(listener, ratekeeper_tower::RateLimitLayer::per_ip(2.0, 5)?.make_service(app)).await?;
//!   # Ok(())
//!   # }
//!   ```
//! * **Global or keyed.** One limiter for every request ([`Global`]), or one
//!   per key ([`CoreKeyed`]: the core crate's compact, sharded map with a
//!   hard cap; [`KeyedMap`]: a whole limiter of any kind per key behind one
//!   lock; with the `redis` feature, [`RedisKeyed`]: a limit per client
//!   kept on Redis and shared by every replica; or any [`KeyedLimit`] or
//!   [`AsyncKeyedLimit`]), the key taken by an
//!   explicit extractor: the connection's peer ([`PeerIp`]), the rightmost
//!   untrusted hop of `X-Forwarded-For` / `Forwarded`
//!   ([`RightmostTrusted`]: the left-most entry, which a client can spoof,
//!   is never read), a header ([`HeaderKey`]), or a closure ([`FnKey`]).
//! * **One source for the limit and what it announces.** [`CoreKeyed`]
//!   derives its announced [`Policy`] from the limiter's own
//!   configuration ([`Policy::from_config`]): the rate and the burst are
//!   written once, and a kind whose burst cannot be announced is a typed
//!   error ([`ConfigError::UnannouncedBurst`]).
//! * **Decided in `call()` on shared state.** Every clone of the layer and
//!   its services shares one `Arc`: no `Buffer`, no per-clone windows (the
//!   tower `RateLimit` + `Buffer` trap under axum). A limit that answers
//!   at once (every [`KeyedLimit`]) is decided there, without a future or
//!   an allocation; one that answers later ([`AsyncKeyedLimit`],
//!   [`Reservation::Later`]) is awaited in the response future.
//! * **Standard answers.** A refused request gets 429 with `Retry-After` in
//!   whole seconds rounded up (at least 1, never tower_governor's 0),
//!   draft-ietf-httpapi-ratelimit-headers-11's `RateLimit` and
//!   `RateLimit-Policy` ([`headers`]), and an RFC 9457
//!   `application/problem+json` body whose detail says when to retry;
//!   admitted responses may carry the fields too. Or requests wait, up to
//!   a deadline, instead of being refused. The response body type must be
//!   buildable from a `String` (axum's `Body`, `Full<Bytes>`, `String`).
//! * **Bad input at configuration, not at request time.** Policies,
//!   networks, header names, caps and statuses are checked when built
//!   ([`ConfigError`]). A request without a key gets the configured
//!   [`OnMissingKey`] and is counted ([`Metrics`]).
//! * **A missing peer address is a startup error, not a silent shared
//!   key.** A limit keyed by the connection's peer
//!   ([`PeerIp::connection`], [`RightmostTrusted::with_connection_peer`])
//!   is served per connection ([`Builder::build_per_connection`]): its
//!   [`MakeRateLimit`] is the server's make-service and takes each
//!   connection's address from the accept loop, so no request arrives
//!   without it. Built to go inside a router instead, where nothing would
//!   supply it, it is refused before serving
//!   ([`ConfigError::PeerNotSupplied`]). A key read from an extension the
//!   server is trusted to fill ([`PeerIp::from_fn`], axum's `ConnectInfo`)
//!   cannot be checked at startup: a request without it is answered 500
//!   and counted ([`Metrics::config_errors`]), never limited under one
//!   shared key.
//!
//! # Example
//!
//! The builder, for everything else:
//!
//! ```
//! use ratekeeper_tower::{CoreKeyed, OnMissingKey, RateLimitLayer, RightmostTrusted};
//!
//! // Per client, behind a proxy on 10.0.0.0/8: a bucket of 5 refilled at
//! // 10 per second, announced as such ("per-ip";q=10;w=1;rk-burst=5).
//! let map = CoreKeyed::from_config("per-ip", &"refill:10,100ms,capacity=5".parse()?, 100_000)?;
//! let layer = RateLimitLayer::builder(map)
//!     .key(RightmostTrusted::x_forwarded_for(["10.0.0.0/8"])?)
//!     .on_missing_key(OnMissingKey::Refuse(http::StatusCode::BAD_REQUEST))
//!     .headers_on_admitted(true)
//!     .build()?;
//! // axum: Router::new().route(..).layer(layer)
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Keyed by the connection's peer, served per connection:
//!
//! ```
//! use ratekeeper_tower::{CoreKeyed, RateLimitLayer, RightmostTrusted};
//!
//! let map = CoreKeyed::token_bucket("per-ip", 10.0, 5, 100_000)?;
//! let limit = RateLimitLayer::builder(map)
//!     // The peer, or behind the proxies on 10.0.0.0/8 the client they name.
//!     .key(RightmostTrusted::x_forwarded_for(["10.0.0.0/8"])?.with_connection_peer())
//!     .build_per_connection()?;
//! // axum (feature `axum`): axum::serve(listener, limit.make_service(router))
//! // hyper: per accepted (stream, addr), limit.make_service(app).for_peer(addr)
//! # let _ = limit;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Crate features
//!
//! * `axum`: [`MakeRateLimit`] is a `Service<axum::serve::IncomingStream>`,
//!   what `axum::serve` takes (enables axum's `tokio` and `http1`).
//! * `redis`: [`RedisKeyed`], a per-client limit kept on Redis through
//!   `ratekeeper-redis` (which needs Rust 1.88).
//!
//! [`per_ip_behind`]: RateLimitLayer::per_ip_behind
#![cfg_attr(feature = "redis", doc = "[`RedisKeyed`]: crate::RedisKeyed")]
#![cfg_attr(
    not(feature = "redis"),
    doc = "[`RedisKeyed`]: https://docs.rs/ratekeeper-tower/latest/ratekeeper_tower/struct.RedisKeyed.html"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod connection;
mod core_keyed;
mod error;
mod forwarded;
pub mod headers;
pub mod key;
mod limit;
mod metrics;
mod net;
mod policy;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
mod redis;
mod service;

pub use connection::{MakeRateLimit, PerConnectionLayer};
pub use core_keyed::CoreKeyed;
pub use error::ConfigError;
pub use key::{
    FnKey, GlobalKey, HeaderKey, KeyError, KeyExtractor, PeerAddr, PeerIp, RateLimitKey,
    RightmostTrusted,
};
pub use limit::{
    schedule_remaining, AsyncKeyedLimit, Global, KeyedLimit, KeyedMap, Reservation, MAX_KEYS,
};
pub use metrics::Metrics;
pub use net::IpNet;
pub use policy::Policy;
#[cfg(feature = "redis")]
pub use redis::{RedisKeyed, RedisReservation};
pub use service::{Builder, OnMissingKey, RateLimit, RateLimitLayer, ResponseFuture};
