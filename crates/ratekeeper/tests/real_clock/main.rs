//! Tests in real time on the real clock, one module per limiter
//! (`cargo test -p ratekeeper --test real_clock`). Their bounds are generous
//! for a loaded machine, and each test runs under `common::within`'s time
//! limit so that one that hangs fails.
//!
//! `tests/pool_threads.rs` stays a binary of its own: it counts the
//! process's filler threads by name, which any other test starting a
//! `TokenPool` filler in the same process would disturb.

#[path = "../common/mod.rs"]
mod common;

mod pool;
