//! The async layer (feature `tokio`), one module per area, in one test
//! binary (`cargo test -p ratekeeper --features tokio --test async`; a
//! module alone with a filter, e.g. `--test async limiters::`).
//!
//! `adapters`, `cancel`, `cancel_props` and `limiters` run on paused tokio
//! time with a `TokioClock`, so their durations are exact; `runtime` shares
//! limiters between tasks on a real multi-thread runtime, in real time, with
//! generous bounds; `send` checks that the futures can be spawned.
//!
//! `cancel_props`'s saved failing cases are in
//! `tests/proptest-regressions/cancel_props.txt` (see `tests/props/main.rs`).
#![cfg(feature = "tokio")]

#[path = "../common/mod.rs"]
mod common;

mod adapters;
mod cancel;
mod cancel_props;
mod limiters;
mod runtime;
mod send;
