//! [`Metrics`]: what the layer counts.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared by a layer and every service it made. Admitted requests
/// are not counted (that would put a contended atomic on every request's
/// path); everything else is.
///
/// Every counter is `Relaxed`: they are statistics, and nothing is
/// published through them.
#[derive(Debug, Default)]
pub struct Metrics {
    pub(crate) refused: AtomicU64,
    pub(crate) waited: AtomicU64,
    pub(crate) key_errors: AtomicU64,
    pub(crate) config_errors: AtomicU64,
    pub(crate) unavailable: AtomicU64,
}

impl Metrics {
    /// Requests refused by the limit (429).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
    /// Requests that waited for the limit before going on.
    pub fn waited(&self) -> u64 {
        self.waited.load(Ordering::Relaxed)
    }
    /// Requests whose key could not be extracted (missing or malformed),
    /// answered by the [`OnMissingKey`](crate::OnMissingKey) policy.
    pub fn key_errors(&self) -> u64 {
        self.key_errors.load(Ordering::Relaxed)
    }
    /// Requests answered 500 because the server is misconfigured: no peer
    /// address in the extension the key reads (a setup the startup check
    /// cannot see; see [`PeerIp`](crate::PeerIp)), or a limiter that can
    /// never grant one permit.
    pub fn config_errors(&self) -> u64 {
        self.config_errors.load(Ordering::Relaxed)
    }
    /// Requests answered 503 because the limit could not decide: a full
    /// keyed map refusing a new key, or a shared limiter out of reach.
    pub fn unavailable(&self) -> u64 {
        self.unavailable.load(Ordering::Relaxed)
    }

    pub(crate) fn bump(counter: &AtomicU64) {
        // Ordering: a statistic.
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
