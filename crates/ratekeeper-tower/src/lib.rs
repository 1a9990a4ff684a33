//! A [tower](https://docs.rs/tower) rate-limiting layer over [ratekeeper]'s limiters, for
//! [http](https://docs.rs/http) 1 services (axum, hyper, tonic).
//!
//! * **Global or keyed.** One limiter for every request ([`Global`]), or one
//!   per key ([`CoreKeyed`]: the core crate's compact, sharded map with a
//!   hard cap; [`KeyedMap`]: a whole limiter of any kind per key behind one
//!   lock; or any [`KeyedLimit`]), the key taken by an
//!   explicit extractor: the connection's peer ([`PeerIp`]), the rightmost
//!   untrusted hop of `X-Forwarded-For` / `Forwarded`
//!   ([`RightmostTrusted`]: the left-most entry, which a client can spoof,
//!   is never read), a header ([`HeaderKey`]), or a closure ([`FnKey`]).
//! * **Decided in `call()` on shared state.** Every clone of the layer and
//!   its services shares one `Arc`: no `Buffer`, no per-clone windows (the
//!   tower `RateLimit` + `Buffer` trap under axum).
//! * **Standard answers.** A refused request gets 429 with `Retry-After` in
//!   whole seconds rounded up (at least 1, never tower_governor's 0) and
//!   draft-ietf-httpapi-ratelimit-headers-11's `RateLimit` and
//!   `RateLimit-Policy` ([`headers`]); admitted responses may carry them
//!   too. Or requests wait, up to a deadline, instead of being refused.
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
//! ```
//! use ratekeeper_tower::{CoreKeyed, OnMissingKey, Policy, RateLimitLayer, RightmostTrusted};
//!
//! // 10 requests per second per client, bursts of 5, behind a proxy on 10.0.0.0/8.
//! let policy = Policy::from_rate("per-ip", 10.0)?.with_burst(5)?;
//! let map = CoreKeyed::from_config(&"bursty:10,0.5".parse()?, policy, 100_000)?;
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
//! use ratekeeper_tower::{CoreKeyed, Policy, RateLimitLayer, RightmostTrusted};
//!
//! let policy = Policy::from_rate("per-ip", 10.0)?.with_burst(5)?;
//! let map = CoreKeyed::from_config(&"bursty:10,0.5".parse()?, policy, 100_000)?;
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
mod service;

pub use connection::{MakeRateLimit, PerConnectionLayer};
pub use core_keyed::CoreKeyed;
pub use error::ConfigError;
pub use key::{
    FnKey, GlobalKey, HeaderKey, KeyError, KeyExtractor, PeerAddr, PeerIp, RightmostTrusted,
};
pub use limit::{schedule_remaining, Global, KeyedLimit, KeyedMap, MAX_KEYS};
pub use metrics::Metrics;
pub use net::IpNet;
pub use policy::Policy;
pub use service::{Builder, OnMissingKey, RateLimit, RateLimitLayer, ResponseFuture};
