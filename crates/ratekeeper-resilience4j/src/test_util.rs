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

/// The refusals of a bucket configuration, worded as the core and
/// [`crate::config`] word them: the expected values of the unit tests.
/// Converted, each is the [`ConfigError`](ratekeeper::ConfigError) a
/// builder returns (equal when reason and message are).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum PermitConfigError {
    #[error("limit for period must be at least 1, got {0}")]
    InvalidLimitForPeriod(i64),
    #[error("limit refresh period must be at least 1 ns, got {0} ns")]
    InvalidLimitRefreshPeriod(i128),
    #[error("limit refresh period must be at most {max} ns, got {0} ns", max = i64::MAX)]
    LimitRefreshPeriodTooLarge(i128),
    #[error("{limit} permits per {period_nanos} ns is more than one permit per nanosecond")]
    ZeroNanosPerPermit { limit: i64, period_nanos: i64 },
    #[error("timeout must not be negative, got {0} ns")]
    NegativeTimeout(i128),
    #[error("timeout must be at most {max} ns, got {0} ns", max = i64::MAX)]
    TimeoutTooLarge(i128),
    #[error("permit capacity {capacity} is below the limit for period {limit}")]
    CapacityBelowLimit { capacity: i64, limit: i64 },
    #[error("initial permits must be between 0 and the capacity {capacity}, got {initial}")]
    InitialPermitsOutOfRange { initial: i64, capacity: i64 },
    #[error("{capacity} permits of {nanos_per_permit} ns each take longer than {max} ns to refill", max = i64::MAX)]
    NanosPerFullCapacityOverflow {
        nanos_per_permit: i64,
        capacity: i64,
    },
    #[error("the cycle limiter has no permit capacity or initial permits")]
    CapacityNotSupported,
    #[error("limit for period must be at most {max}, got {0}", max = u32::MAX)]
    LimitForPeriodTooLarge(i64),
}

impl From<PermitConfigError> for ratekeeper::ConfigError {
    fn from(e: PermitConfigError) -> Self {
        use ratekeeper::ConfigReason as R;
        use PermitConfigError as E;
        let reason = match e {
            E::InvalidLimitForPeriod(_) => R::InvalidLimitForPeriod,
            E::InvalidLimitRefreshPeriod(_) => R::InvalidLimitRefreshPeriod,
            E::LimitRefreshPeriodTooLarge(_) => R::LimitRefreshPeriodTooLarge,
            E::ZeroNanosPerPermit { .. } => R::ZeroNanosPerPermit,
            E::NegativeTimeout(_) => R::NegativeTimeout,
            E::TimeoutTooLarge(_) => R::TimeoutTooLarge,
            E::CapacityBelowLimit { .. } => R::CapacityBelowLimit,
            E::InitialPermitsOutOfRange { .. } => R::InitialPermitsOutOfRange,
            E::NanosPerFullCapacityOverflow { .. } => R::NanosPerFullCapacityOverflow,
            E::CapacityNotSupported => R::CapacityNotSupported,
            E::LimitForPeriodTooLarge(_) => R::LimitForPeriodTooLarge,
        };
        ratekeeper::ConfigError::with_reason(reason, e)
    }
}
