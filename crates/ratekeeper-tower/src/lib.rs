//! A [tower](https://docs.rs/tower) rate-limiting layer over [ratekeeper]'s limiters, for
//! [http](https://docs.rs/http) 1 services (axum, hyper, tonic).
//!
//! * **Global or keyed.** One limiter for every request ([`Global`]), or one
//!   per key ([`KeyedMap`], or any [`KeyedLimit`]), the key taken by an
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
//!   [`OnMissingKey`] and is counted ([`Metrics`]); a server that does not
//!   provide the peer address is answered 500 and counted as a
//!   configuration error, never limited under one shared key.
//!
//! # Example
//!
//! ```
//! use ratekeeper_tower::{KeyedMap, OnMissingKey, Policy, RateLimitLayer, RightmostTrusted};
//!
//! // 10 requests per second per client, bursts of 5, behind a proxy on 10.0.0.0/8.
//! let policy = Policy::from_rate("per-ip", 10.0)?.with_burst(5)?;
//! let map = KeyedMap::from_config(&"bursty:10,0.5".parse()?, policy, 100_000)?;
//! let layer = RateLimitLayer::builder(map)
//!     .key(RightmostTrusted::x_forwarded_for(["10.0.0.0/8"])?)
//!     .on_missing_key(OnMissingKey::Refuse(http::StatusCode::BAD_REQUEST))
//!     .headers_on_admitted(true)
//!     .build()?;
//! // axum: Router::new().route(..).layer(layer)
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod connection;
mod core_keyed;
mod error;
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
