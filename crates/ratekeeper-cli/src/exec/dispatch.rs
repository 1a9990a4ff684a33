//! `exec`'s dispatcher: it takes each run's permit from the limiter and
//! hands the run to a free worker.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use ratekeeper::{AcquireError, Grant, RateLimiter};

use crate::run::interrupt::Interrupt;
use crate::run::sleep_until_retry;

/// How often the dispatcher, waiting for a run to end, checks for Ctrl-C.
pub(super) const POLL: Duration = Duration::from_millis(20);

/// What the progress line reads.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) started: AtomicU64,
    pub(super) finished: AtomicU64,
    pub(super) failed: AtomicU64,
}

/// The next run's permit: `Some(grant)`, or `None` when the limiter refused
/// it because its wait would exceed `max_wait` (Resilience4j's timeout):
/// then the refusal is counted and the dispatcher sleeps until a permit
/// could be granted within the timeout (not past `deadline` nor Ctrl-C),
/// to ask again.
pub(super) fn reserve_run(
    limiter: &dyn RateLimiter,
    max_wait: Option<Duration>,
    deadline: Option<u64>,
    interrupt: &Interrupt,
    refused: &mut u64,
) -> anyhow::Result<Option<Grant>> {
    match limiter.reserve(1, max_wait) {
        Ok(grant) => Ok(Some(grant)),
        Err(AcquireError::WouldWait {
            wait,
            max_wait: max,
        }) if max_wait.is_some() => {
            *refused += 1;
            sleep_until_retry(interrupt, limiter.clock(), wait, max, deadline);
            Ok(None)
        }
        Err(e) => Err(anyhow::Error::new(e).context("the limiter refused a permit")),
    }
}

/// Why the dispatcher stopped starting runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The count was reached or the deadline passed.
    Done,
    /// Ctrl-C.
    Interrupted,
    /// A run failed, with --fail-fast.
    FailFast,
}
