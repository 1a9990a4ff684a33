//! Property tests, one module per area, in one test binary
//! (`cargo test -p ratekeeper --test props`; a module alone with a filter,
//! e.g. `--test props smooth::`).
//!
//! Most run on a manual clock. `batch`, `batch_handle` and `shard` also hold
//! stress tests on real threads and the real clock (under `common::within`'s
//! time limit); `smooth` races real threads on a manual clock (the
//! Resilience4j limiters' property tests are in `ratekeeper-resilience4j`).
//!
//! Failing cases proptest found are saved and replayed first on every run.
//! For a test binary with a `main.rs`, proptest's default
//! (`FileFailurePersistence::SourceParallel`) keeps them in a folder beside
//! this one: `tests/proptest-regressions/<module>.txt` (so `pacer.rs` reads
//! `tests/proptest-regressions/pacer.txt`).

#[path = "../common/mod.rs"]
mod common;

mod batch;
mod batch_handle;
mod blocking;
mod clock_origin;
mod config;
mod effective_rate;
mod pacer;
mod pacer_decision;
mod pacer_families;
mod pool;
mod shard;
mod smooth;
mod spec;
mod wait_exact;
