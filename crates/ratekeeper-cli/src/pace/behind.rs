//! Overload accounting: how far behind its target schedule a `pace` run
//! is, and when that is worth a warning.
//!
//! The target schedule gives the run one op every 1 / target rate from its
//! start. A run that has done `ops` ops after `span` of it has used
//! `ops / target rate` of that schedule, so it is
//!
//! ```text
//! behind = span - ops / target rate      (0 when ahead)
//! ```
//!
//! behind it: the time its missing ops would have taken. At the end of a run
//! `span` is its elapsed time, so `achieved / target = 1 - behind /
//! elapsed`; during a run (`--max-behind`) it is the time so far. The
//! measure needs nothing from the limiter, so it means the same for every
//! limiter: the ops a Pacer's schedule holds that the workers have not
//! started yet, and also the ops a Guava or Resilience4j limiter would have
//! granted (those have no schedule of their own to fall behind) or a cold
//! warm-up limiter held back (which is why the warm-up limiter is not
//! checked against the target: [`checks_below_target`]).

use std::time::Duration;

use crate::report::{duration_nanos, fmt_nanos, fmt_rate};

/// How far below the target rate a run may end before it is warned about:
/// 1 %.
pub(super) const BELOW_TARGET_TOLERANCE: f64 = 0.01;

/// How far behind a run must also be to be warned about: a busy machine can
/// keep a thread off the CPU for a scheduler period or two, a few to tens
/// of milliseconds, so a short run (a count run's last op woken late) can be
/// more than 1 % behind without being overloaded.
pub(super) const BEHIND_FLOOR: Duration = Duration::from_millis(20);

/// How far behind the target schedule, in nanoseconds, a run is that did
/// `ops` ops in `span_ns` at `target_rate` ops/s; 0 when it is on or ahead
/// of it.
pub(super) fn behind_nanos(span_ns: u64, ops: u64, target_rate: f64) -> u64 {
    let used = ops as f64 * 1e9 / target_rate;
    // A float-to-integer `as` saturates (NaN, a negative: 0).
    (span_ns as f64 - used).max(0.0) as u64
}

/// Whether a run that achieved `achieved` ops/s against `target` ops/s and
/// ended `behind_ns` behind its schedule is below the target: by more than
/// [`BELOW_TARGET_TOLERANCE`], and at least [`BEHIND_FLOOR`] behind.
pub(super) fn is_below_target(achieved: f64, target: f64, behind_ns: u64) -> bool {
    achieved < target * (1.0 - BELOW_TARGET_TOLERANCE) && behind_ns >= duration_nanos(BEHIND_FLOOR)
}

/// Whether the below-target check applies to `limiter` (`--limiter`): not
/// to `warmup`, which grants below the rate while cold by design (and
/// Guava's cold-start accounting counts a worker's late wake-up as idle
/// time, which cools it further), so its shortfall says little about the
/// workers.
pub(super) fn checks_below_target(limiter: &str) -> bool {
    limiter != "warmup"
}

/// The warning (without `warning: `) for a run below its target.
pub(super) fn below_target_warning(achieved: f64, target: f64, behind_ns: u64) -> String {
    format!(
        "the run fell behind: it achieved {}, {:.2} % below the target {}, and ended {} \
         behind its schedule",
        fmt_rate(achieved),
        (1.0 - achieved / target) * 100.0,
        fmt_rate(target),
        fmt_nanos(behind_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn behind_is_the_schedule_the_missing_ops_would_have_taken() {
        // 1000/s for 1 s: 200 ops leave 800 ms of the schedule unused.
        assert_eq!(behind_nanos(1_000 * MS, 200, 1000.0), 800 * MS);
        // On or ahead of the schedule: 0.
        assert_eq!(behind_nanos(1_000 * MS, 1_000, 1000.0), 0);
        assert_eq!(behind_nanos(1_000 * MS, 1_100, 1000.0), 0);
        assert_eq!(behind_nanos(0, 0, 1000.0), 0);
        // Nothing done: the whole span.
        assert_eq!(behind_nanos(5 * MS, 0, 0.5), 5 * MS);
        assert_eq!(behind_nanos(u64::MAX, 0, 1.0), u64::MAX);
    }

    #[test]
    fn below_target_needs_one_percent_and_the_floor() {
        let floor = duration_nanos(BEHIND_FLOOR);
        // 2 % below, far behind: warned.
        assert!(is_below_target(980.0, 1000.0, 100 * MS));
        // 1 % exactly, or less: not.
        assert!(!is_below_target(990.0, 1000.0, 100 * MS));
        assert!(!is_below_target(995.0, 1000.0, 100 * MS));
        // A short run far below but less than the floor behind: not.
        assert!(!is_below_target(500.0, 1000.0, floor - 1));
        assert!(is_below_target(500.0, 1000.0, floor));
        // Above the target: never.
        assert!(!is_below_target(2000.0, 1000.0, u64::MAX));
    }

    #[test]
    fn the_warning_says_how_far() {
        assert_eq!(
            below_target_warning(185.0, 1000.0, 815 * MS),
            "the run fell behind: it achieved 185 ops/s, 81.50 % below the target 1000 \
             ops/s, and ended 815ms behind its schedule"
        );
        assert!(checks_below_target("pacer") && checks_below_target("bursty"));
        assert!(!checks_below_target("warmup"));
    }
}
