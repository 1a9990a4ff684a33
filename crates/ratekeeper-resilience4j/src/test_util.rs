//! Helpers for the crate's unit tests.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// The bound on a unit test that runs on the real clock or blocks real
/// threads: generous, since the test machines are shared and loaded, and far
/// beyond what any of them takes (well under a second each).
pub(crate) const REAL_TIME_LIMIT: Duration = Duration::from_secs(60);

/// Runs `body` on a thread of its own and returns what it returns; fails the
/// test if it takes longer than [`REAL_TIME_LIMIT`], so that a regression
/// that hangs (a lost wake-up, a deadlock, a sleep that never ends) fails
/// instead of blocking the test run. A panic in `body` is re-raised here.
///
/// A body that timed out is left running: the test process ends without it.
/// The same helper as `tests/common/mod.rs`'s `within`, for unit tests.
pub(crate) fn within<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let out = body();
        // The receiver is gone only if the test already timed out.
        let _ = done.send(());
        out
    });
    match finished.recv_timeout(REAL_TIME_LIMIT) {
        Ok(()) => worker.join().expect("the body returned"),
        Err(RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(_) => unreachable!("the body returned without reporting it"),
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(RecvTimeoutError::Timeout) => panic!("timed out after {REAL_TIME_LIMIT:?}"),
    }
}
