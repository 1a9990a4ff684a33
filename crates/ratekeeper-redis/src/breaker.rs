//! The circuit breaker: after repeated failures the server is skipped for a
//! cool-down, then one request at a time probes it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// What [`Breaker::admit`] lets a request do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// The breaker is closed: go to the server.
    Go,
    /// The breaker is half open and this request is its one probe.
    Probe,
}

/// Consecutive failures, and when the server may be tried again. Times are
/// nanoseconds on the caller's clock (a monotonic one).
#[derive(Debug)]
pub(crate) struct Breaker {
    /// Failures in a row before the breaker opens; 0 never opens.
    threshold: u32,
    cooldown: Duration,
    failures: AtomicU32,
    /// The clock reading until which the breaker stays open.
    open_until: AtomicU64,
    /// Whether a probe is under way.
    probing: AtomicBool,
}

impl Breaker {
    pub(crate) fn new(threshold: u32, cooldown: Duration) -> Breaker {
        Breaker {
            threshold,
            cooldown,
            failures: AtomicU32::new(0),
            open_until: AtomicU64::new(0),
            probing: AtomicBool::new(false),
        }
    }

    /// Whether a request may go to the server now: always while closed;
    /// after the cool-down, one probe at a time; otherwise not.
    pub(crate) fn admit(&self, now: u64) -> Option<Admit> {
        // Ordering: Relaxed for all three: the breaker guards no other
        // memory, and a stale value only lets one more request through or
        // skips one more (each is a hint, corrected by the next outcome).
        if self.threshold == 0 || self.failures.load(Ordering::Relaxed) < self.threshold {
            return Some(Admit::Go);
        }
        if now < self.open_until.load(Ordering::Relaxed) {
            return None;
        }
        // Ordering: Relaxed; the flag elects one prober and orders nothing.
        self.probing
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
            .then_some(Admit::Probe)
    }

    /// The server answered: the breaker closes.
    pub(crate) fn success(&self) {
        // Ordering: Relaxed; see `admit`.
        self.failures.store(0, Ordering::Relaxed);
        self.probing.store(false, Ordering::Relaxed);
    }

    /// The server failed (an error or the deadline): counted; at the
    /// threshold (or when a probe fails) the breaker opens for the
    /// cool-down.
    pub(crate) fn failure(&self, now: u64) {
        // Ordering: Relaxed; see `admit`.
        let failures = self
            .failures
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        if self.threshold > 0 && failures >= self.threshold {
            let cooldown = u64::try_from(self.cooldown.as_nanos()).unwrap_or(u64::MAX);
            let until = now.saturating_add(cooldown);
            self.open_until.store(until, Ordering::Relaxed);
            self.probing.store(false, Ordering::Relaxed);
        }
    }

    /// Whether the breaker is open now (requests skip the server).
    pub(crate) fn is_open(&self) -> bool {
        // Ordering: Relaxed; a statistic.
        self.threshold > 0 && self.failures.load(Ordering::Relaxed) >= self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn opens_at_the_threshold_and_lets_one_probe_through_after_the_cooldown() {
        let b = Breaker::new(2, Duration::from_millis(30));
        assert_eq!(b.admit(0), Some(Admit::Go));
        b.failure(0);
        assert_eq!(b.admit(0), Some(Admit::Go), "one failure is not enough");
        b.failure(MS);
        assert!(b.is_open());
        assert_eq!(b.admit(30 * MS), None, "open for the cool-down");
        assert_eq!(b.admit(31 * MS), Some(Admit::Probe));
        assert_eq!(b.admit(31 * MS), None, "one probe at a time");
        b.failure(32 * MS);
        assert_eq!(b.admit(61 * MS), None, "a failed probe opens it again");
        assert_eq!(b.admit(62 * MS), Some(Admit::Probe));
        b.success();
        assert!(!b.is_open());
        assert_eq!(b.admit(62 * MS), Some(Admit::Go));
    }

    #[test]
    fn a_zero_threshold_never_opens() {
        let b = Breaker::new(0, Duration::from_secs(1));
        for t in 0..10 {
            b.failure(t);
        }
        assert_eq!(b.admit(10), Some(Admit::Go));
    }
}
