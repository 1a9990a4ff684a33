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

use super::gate::Stop;
use super::target::TargetSoFar;
use crate::report::{duration_nanos, fmt_nanos, fmt_rate};

/// How far below the target rate a run may end before it is warned about:
/// 1 %.
pub(super) const BELOW_TARGET_TOLERANCE: f64 = 0.01;

/// How far behind a run must also be to be warned about: a busy machine can
/// keep a thread off the CPU for tens of milliseconds at a time, so a short
/// run can be far more than 1 % behind once without being overloaded. Runs
/// of 10 s and more are held to the 1 % alone.
pub(super) const BEHIND_FLOOR: Duration = Duration::from_millis(100);

/// How far behind the target schedule, in nanoseconds, a run is that did
/// `ops` ops in `span_ns` at `target_rate` ops/s; 0 when it is on or ahead
/// of it.
pub(super) fn behind_nanos(span_ns: u64, ops: u64, target_rate: f64) -> u64 {
    let used = ops as f64 * 1e9 / target_rate;
    // A float-to-integer `as` saturates (NaN, a negative: 0).
    (span_ns as f64 - used).max(0.0) as u64
}

/// `--max-behind DUR`: a duration greater than zero; a negative one is
/// refused with our message (not taken for a flag).
pub(super) fn parse_max_behind(s: &str) -> Result<Duration, String> {
    if s.trim().starts_with('-') {
        return Err(format!(
            "how far behind its schedule a run may fall cannot be negative, got \"{}\"; \
             expected a duration such as 100ms or 1s",
            s.trim()
        ));
    }
    crate::flags::parse_duration(s)
}

/// `--max-behind`: the check the reporting thread makes while the workers
/// run.
#[derive(Debug, Clone)]
pub(super) struct MaxBehind<'a> {
    /// How far behind its schedule the run may fall, in ns.
    pub(super) limit_ns: u64,
    /// The run's start on the shared clock.
    pub(super) t0: u64,
    /// The target over the time so far (with --stages, their mean).
    pub(super) target: TargetSoFar<'a>,
    /// The run's stop rule: no op is due after the deadline, and none is
    /// left once `count` have started.
    pub(super) stop: Stop,
    pub(super) count: Option<u64>,
}

impl MaxBehind<'_> {
    /// Whether a run with `ops` started at clock reading `now` has fallen
    /// the limit behind its schedule while ops are still due: not after its
    /// deadline, nor once all its count has started (a last op's long
    /// --work keeps no later op waiting). `now` only grows from call to
    /// call (the target so far is summed as it does).
    pub(super) fn is_exceeded(&mut self, now: u64, ops: u64) -> bool {
        let due = match self.stop {
            Stop::Deadline(d) => now < d,
            Stop::Count => self.count.is_none_or(|n| ops < n),
        };
        let span = now.saturating_sub(self.t0);
        due && behind_nanos(span, ops, self.target.over(span)) >= self.limit_ns
    }
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
    use crate::pace::target::Target;

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
    fn max_behind_values_are_checked() {
        assert_eq!(parse_max_behind("100ms"), Ok(Duration::from_millis(100)));
        assert!(parse_max_behind("-5ms")
            .unwrap_err()
            .contains("cannot be negative"));
        assert!(parse_max_behind("0s")
            .unwrap_err()
            .contains("greater than zero"));
        assert!(parse_max_behind("soon").unwrap_err().contains("500ms"));
    }

    #[test]
    fn max_behind_is_checked_while_ops_are_due() {
        // 1000/s from t0 = 1 s, at most 100 ms behind.
        let target = Target {
            rate: 1000.0,
            limiters: 1,
            ramp: None,
        };
        let check = |stop, count| MaxBehind {
            limit_ns: 100 * MS,
            t0: 1_000 * MS,
            target: target.so_far(),
            stop,
            count,
        };
        let mut timed = check(Stop::Deadline(2_000 * MS), None);
        // 500 ms in with 450 ops: 50 ms behind; with 400: 100 ms.
        assert!(!timed.is_exceeded(1_500 * MS, 450));
        assert!(timed.is_exceeded(1_500 * MS, 400));
        // Before the start (a reading taken early): not behind.
        assert!(!timed.is_exceeded(0, 0));
        // After the deadline no op is due any more.
        assert!(!timed.is_exceeded(2_000 * MS, 0));
        let mut counted = check(Stop::Count, Some(500));
        assert!(counted.is_exceeded(1_800 * MS, 499));
        assert!(!counted.is_exceeded(60_000 * MS, 500), "all started");
    }

    #[test]
    fn a_staged_run_is_behind_the_rates_its_stages_set() {
        // From 100/s up to 1000/s over 1 s: 500 ms in, the rates set every
        // 100 ms (100, 190, 280, 370, 460) had 140 ops due.
        let ramp = crate::run::ramp::Ramp {
            arg: crate::run::ramp::parse_stages_arg("1s:1000").unwrap(),
            start: 100.0,
        };
        let target = Target {
            rate: 100.0,
            limiters: 1,
            ramp: Some(&ramp),
        };
        let mut check = MaxBehind {
            limit_ns: 100 * MS,
            t0: 0,
            target: target.so_far(),
            stop: Stop::Deadline(1_000 * MS),
            count: None,
        };
        assert!(!check.is_exceeded(500 * MS, 140));
        // 100 ops: 140 - 100 = 40 ops of the mean 280/s, 143 ms, behind;
        // against --rate's 100/s they would be on time.
        assert!(check.is_exceeded(500 * MS, 100));
        assert!(!check.is_exceeded(510 * MS, 145));
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
            "the run fell behind: it achieved 185 ops/s, 81.50 % below the target 1,000 \
             ops/s, and ended 815ms behind its schedule"
        );
        assert!(checks_below_target("pacer") && checks_below_target("bursty"));
        assert!(!checks_below_target("warmup"));
    }
}
