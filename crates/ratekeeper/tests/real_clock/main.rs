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

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// One real-clock test at a time: each measures rates on the real clock,
/// and run side by side on a 2-core machine (ten threads each) they starved
/// one another (a strict-burst run reached 875 of its ~1000 ops).
static ALONE: Mutex<()> = Mutex::new(());

/// [`common::within`], with no other test of this binary running: the time
/// limit counts from when this test's turn comes.
pub fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
    let _turn = ALONE.lock().unwrap_or_else(PoisonError::into_inner);
    common::within(limit, body)
}
