//! `exec`'s time figures (wait, service, response): each is recorded in
//! the shared [`WaitRecorder`], whose summary the report prints, and in an
//! HdrHistogram of this module's own, with the same bounds and precision,
//! which `--fail-if` reads any percentile from and `--hdr-out` writes (the
//! shared recorder keeps its histogram to itself).

use hdrhistogram::Histogram;

use crate::report::{WaitRecorder, WaitSummary};

/// The largest time told apart: one hour, as [`WaitRecorder`]'s.
const HIGHEST_TRACKABLE_NANOS: u64 = 3_600 * 1_000_000_000;

/// Significant decimal digits kept, as [`WaitRecorder`]'s: 0.1 %.
const SIGNIFICANT_DIGITS: u8 = 3;

/// One time figure of the runs, in nanoseconds.
#[derive(Debug, Clone)]
pub(super) struct Times {
    recorder: WaitRecorder,
    hist: Histogram<u64>,
}

impl Times {
    /// Nothing recorded.
    pub(super) fn new() -> Times {
        Times {
            recorder: WaitRecorder::new(),
            // Cannot fail: the bounds and precision are valid constants.
            hist: Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NANOS, SIGNIFICANT_DIGITS)
                .expect("valid histogram bounds"),
        }
    }

    /// Records one run's time.
    pub(super) fn record(&mut self, nanos: u64) {
        self.recorder.record(nanos);
        self.hist.saturating_record(nanos);
    }

    /// Runs recorded.
    #[cfg(test)]
    pub(super) fn count(&self) -> u64 {
        self.recorder.count()
    }

    /// Percentiles, mean and exact maximum, as the report prints them.
    pub(super) fn summary(&self) -> WaitSummary {
        self.recorder.summary()
    }

    /// The histogram.
    pub(super) fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }
}

/// The `percentile` (0 to 100) of `hist`, not above the exact maximum
/// `max` (the histogram reports a bucket's highest value, up to 0.1 % above
/// what was recorded); 0 when it is empty.
pub(super) fn percentile(hist: &Histogram<u64>, percentile: f64, max: u64) -> u64 {
    if hist.is_empty() {
        return 0;
    }
    hist.value_at_quantile(percentile / 100.0).min(max)
}
