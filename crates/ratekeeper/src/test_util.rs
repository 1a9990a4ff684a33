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

/// A clock whose readings are given in advance: each read takes the next
/// one, and the last repeats. For tests of a decision made on a reading
/// older than the limiter's state (a thread preempted between reading the
/// clock and deciding).
#[derive(Debug)]
pub(crate) struct ScriptedClock(std::sync::Mutex<std::collections::VecDeque<u64>>);

impl ScriptedClock {
    pub(crate) fn new(readings: &[u64]) -> ScriptedClock {
        ScriptedClock(std::sync::Mutex::new(readings.iter().copied().collect()))
    }

    /// The readings to come after the current one: the last reading given
    /// (the one repeating) is replaced.
    pub(crate) fn then(&self, readings: &[u64]) {
        let mut q = self.0.lock().unwrap();
        if q.len() == 1 {
            q.clear();
        }
        q.extend(readings.iter().copied());
    }
}

impl crate::clock::Clock for ScriptedClock {
    fn now_nanos(&self) -> u64 {
        let mut q = self.0.lock().unwrap();
        if q.len() > 1 {
            q.pop_front().unwrap()
        } else {
            *q.front().expect("a reading")
        }
    }

    fn sleep_overshoot_nanos(&self) -> u64 {
        0
    }
}
