//! The async layer of the Resilience4j limiters (feature `tokio`), one
//! module per area, in one test binary
//! (`cargo test -p ratekeeper-resilience4j --features tokio --test async`).
//!
//! `adapters` and `limiters` run on paused tokio time with a `TokioClock`,
//! so their durations are exact; `runtime` shares a limiter between tasks
//! on a real multi-thread runtime, in real time, with generous bounds;
//! `send` checks that the futures can be spawned.
#![cfg(feature = "tokio")]

#[path = "../common/mod.rs"]
mod common;

mod adapters;
mod limiters;
mod runtime;
mod send;
