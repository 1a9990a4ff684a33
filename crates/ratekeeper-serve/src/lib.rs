//! A rate-limit service over ratekeeper's limiters.
//!
//! `ratekeeper serve` answers Envoy's RLS v3 gRPC API and an HTTP/JSON API
//! from limits written in envoyproxy/ratelimit's YAML shape ([`config`]),
//! decided by [`Limits`]: each descriptor against the limit it matches, on
//! a capped keyed store, a refused request taking nothing.

mod check;
pub mod config;
pub mod grpc;
pub mod http;
mod limits;
mod metrics;
pub mod server;
mod service;

pub use check::{
    CheckError, CheckRequest, CheckResponse, Code, CurrentLimit, Descriptor, DescriptorStatus,
    MatchedLimit, MAX_DESCRIPTORS, MAX_ENTRIES, MAX_TEXT_BYTES,
};
pub use limits::{Limits, LimitsBuilder, LimitsError, RedisStore, DEFAULT_MAX_KEYS_PER_LIMIT};
pub use service::Service;

/// The README's example, compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
