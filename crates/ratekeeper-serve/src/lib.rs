//! A rate-limit service over ratekeeper's limiters.
//!
//! `ratekeeper serve` answers Envoy's RLS v3 gRPC API and an HTTP/JSON API
//! from limits written in envoyproxy/ratelimit's YAML shape ([`config`]).

pub mod config;
