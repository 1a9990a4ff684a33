//! The denial cache: what a refusal from the server proves about later
//! requests, so that requests the server would refuse anyway are refused
//! here, without a round trip.
//!
//! Both scripts' time indexes only move forward (the Pacer's next slot and
//! spacing, the bucket's empty instant), whoever writes them and with
//! whatever limit. A refusal of `n` permits whose wait was `w` therefore
//! bounds the index from below: `floor = sent + w − n × unit`, where
//! `unit` is the bucket's nanoseconds per permit (0 for the Pacer, whose
//! next slot does not depend on the size of the request) and `sent` the
//! local reading before the request went out (the server decided after
//! it). A later request of `n'` permits at `t` waits at least
//! `floor + n' × unit − t`; if that exceeds its maximum wait, the server
//! would refuse it too, and it is refused here. So the cache refuses
//! nothing the server would grant, and needs no invalidation when the
//! limit changes (it is keyed by this limiter's own quota: `unit`).
//!
//! The one exception is a key the server loses (a restart without
//! persistence, an eviction): then the server starts a new limiter, which
//! may grant what the cache refuses. The cache is used only until the
//! latest refusal's own wait has passed (`sent + w`), so that such a loss
//! is seen by then at the latest.

use std::sync::atomic::{AtomicU64, Ordering};

/// A lower bound of the limit's time index, on the local clock.
#[derive(Debug)]
pub(crate) struct DenialCache {
    /// Nanoseconds the index moves per permit (0: the Pacer).
    unit: u64,
    /// The floor (local clock); 0: nothing known.
    floor: AtomicU64,
    /// Until when the cache is used: the latest refusal's ready time.
    until: AtomicU64,
}

impl DenialCache {
    pub(crate) fn new(unit: u64) -> DenialCache {
        DenialCache {
            unit,
            floor: AtomicU64::new(0),
            until: AtomicU64::new(0),
        }
    }

    /// Notes the server's refusal of `permits` sent at `sent`, whose wait
    /// was `wait` ns.
    pub(crate) fn refused(&self, sent: u64, permits: u32, wait: u64) {
        let floor = sent
            .saturating_add(wait)
            .saturating_sub(u64::from(permits).saturating_mul(self.unit));
        // Ordering: Relaxed; the floor is a bound on its own, guarding no
        // other memory, and fetch_max keeps the largest one noted.
        self.floor.fetch_max(floor, Ordering::Relaxed);
        self.until
            .fetch_max(sent.saturating_add(wait), Ordering::Relaxed);
    }

    /// The wait a request of `permits` at `now` has at least, if the cache
    /// knows one and it exceeds `max_wait` ns: then the server would refuse
    /// the request.
    pub(crate) fn refuses(&self, now: u64, permits: u32, max_wait: u64) -> Option<u64> {
        // Ordering: Relaxed; see `refused`.
        if now >= self.until.load(Ordering::Relaxed) {
            return None;
        }
        let floor = self.floor.load(Ordering::Relaxed);
        let wait = floor
            .saturating_add(u64::from(permits).saturating_mul(self.unit))
            .saturating_sub(now);
        (wait > max_wait).then_some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pacer_refusal_refuses_what_cannot_fit_before_the_floor() {
        let c = DenialCache::new(0);
        assert_eq!(c.refuses(0, 1, 0), None, "nothing known");
        // Sent at 100, refused with a wait of 50: the next slot is at 150 or
        // later.
        c.refused(100, 3, 50);
        assert_eq!(c.refuses(120, 1, 10), Some(30));
        assert_eq!(c.refuses(120, 1, 30), None, "a wait of 30 may be granted");
        assert_eq!(
            c.refuses(150, 1, 0),
            None,
            "past the refused wait: ask the server"
        );
        // An older refusal does not lower the floor.
        c.refused(90, 1, 10);
        assert_eq!(c.refuses(120, 1, 10), Some(30));
    }

    #[test]
    fn a_bucket_refusal_counts_the_permits_asked() {
        // 10 ns a permit; refused 2 permits at 100 with a wait of 40: the
        // empty instant is at 100 + 40 − 20 = 120 at least.
        let c = DenialCache::new(10);
        c.refused(100, 2, 40);
        assert_eq!(c.refuses(110, 1, 15), Some(20));
        assert_eq!(c.refuses(110, 1, 20), None);
        assert_eq!(c.refuses(110, 3, 35), Some(40));
        assert_eq!(c.refuses(139, 5, 0), Some(31));
        assert_eq!(c.refuses(140, 5, 0), None, "past the refused wait");
    }
}
