//! Helpers shared by the real-clock test files.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// Runs `body` on a thread of its own and returns what it returns; fails the
/// test if it takes longer than `limit`, so that a regression that hangs
/// (a filler never woken, a join that never returns) fails instead of
/// blocking the test run. A panic in `body` is re-raised here.
///
/// A body that timed out is left running: the test process ends without it.
pub fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let out = body();
        // The receiver is gone only if the test already timed out.
        let _ = done.send(());
        out
    });
    match finished.recv_timeout(limit) {
        Ok(()) => worker.join().expect("the body returned"),
        Err(RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(_) => unreachable!("the body returned without reporting it"),
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(RecvTimeoutError::Timeout) => panic!("timed out after {limit:?}"),
    }
}
