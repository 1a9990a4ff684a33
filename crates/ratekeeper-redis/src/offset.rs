//! The server clock's offset from the local clock, for translating the
//! server's times into local ones.
//!
//! Each answer carries the server's reading `S` (whole microseconds) when
//! it decided; the answer arrives at local reading `L`, after the server
//! decided, so `S − L` is at most the true offset (server minus local), by
//! the answer's travel time. The estimate is the largest such sample seen
//! in the last second (a new window starts with whatever sample comes
//! first, so that drift between the two clocks is followed): a lower bound
//! of the true offset, as tight as the fastest answer. Translating a
//! server time `T` to `T − estimate` then never makes a grant ready before
//! the server allowed it, and gives every grant of one window the same
//! translation, so that slots keep their spacing on the local clock.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// How long one estimate stands before a new sample replaces it even if
/// smaller.
const WINDOW_NANOS: u64 = 1_000_000_000;

/// The estimate, and when it was taken (local).
#[derive(Debug, Default)]
pub(crate) struct Offset {
    estimate: AtomicI64,
    /// The local reading of the estimate's sample; 0: none yet.
    taken: AtomicU64,
}

impl Offset {
    /// Notes the sample of an answer stamped `server_ns` by the server and
    /// received at `local_ns`, and returns the estimate to translate it
    /// with.
    pub(crate) fn sample(&self, server_ns: i64, local_ns: u64) -> i64 {
        let sample = server_ns.saturating_sub(i64::try_from(local_ns).unwrap_or(i64::MAX));
        // Ordering: Relaxed for both. Every value either holds is a sample,
        // hence a lower bound of the true offset: a racing update that
        // stores an older or smaller sample only loosens the estimate, and
        // the pair need not be read consistently.
        let estimate = self.estimate.load(Ordering::Relaxed);
        let taken = self.taken.load(Ordering::Relaxed);
        if taken == 0 || sample >= estimate || local_ns.saturating_sub(taken) > WINDOW_NANOS {
            self.estimate.store(sample, Ordering::Relaxed);
            self.taken.store(local_ns.max(1), Ordering::Relaxed);
            return sample;
        }
        estimate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_largest_sample_of_the_window() {
        let o = Offset::default();
        // Server 1000 ahead; answers take 30, 10, 50 to arrive.
        assert_eq!(o.sample(10_000, 10_000 - 1000 + 30), 970);
        assert_eq!(o.sample(20_000, 20_000 - 1000 + 10), 990);
        assert_eq!(o.sample(30_000, 30_000 - 1000 + 50), 990, "a slower answer");
        // A second later a new window starts from its first sample.
        let later = 30_000 + WINDOW_NANOS + 1;
        assert_eq!(o.sample(later as i64 + 1000 - 40, later), 960);
    }
}
