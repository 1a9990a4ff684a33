//! How far `exec` fell behind its schedule: the runs that were due but
//! never started, how late the schedule was when the dispatcher stopped
//! starting runs, and whether the achieved rate fell short of the target.
//!
//! * The **end** is when the dispatcher stopped starting runs: the
//!   deadline, for a `--duration` run that reached it; else the clock at
//!   the stop (a signal, `--fail-fast`, `--max-behind`, the count).
//! * The **next run due** is the first run that was not started: the one
//!   whose permit the dispatcher held when it stopped (it was waiting for
//!   the permit or for a free slot, and gave the permit back), else the one
//!   after the last run started, one slot (1 / target rate) after that
//!   run's scheduled time.
//! * **Behind** is `end − scheduled time of the next run due` (0 if that is
//!   not past). With `--count`, once every run was started there is no next
//!   run: behind is then how late the last run started (`start −
//!   scheduled`).
//! * **Due but not started** are the runs whose scheduled times passed
//!   before the end but that never started: the next run due and those
//!   after it, one slot apart (the schedule continued at the target rate),
//!   before the end; with `--count`, at most the runs left to start. With
//!   `--stages` the runs are due when the stages have them due (see
//!   [`ramp`](crate::run::ramp)), and the next run due after the last
//!   started is the next of those.

/// How far the dispatch fell behind by its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Lag {
    /// Runs due before the end that never started.
    pub(super) due_not_started: u64,
    /// How late the schedule was at the end, in nanoseconds.
    pub(super) behind_ns: u64,
}

/// The lag of a dispatch that ended at `end`, whose next run was due at
/// `next_due` (`None`: every run of `--count` was started, the last
/// `last_late` ns after its scheduled time), at `rate` runs/s, with at most
/// `left` runs left to start.
pub(super) fn lag(end: u64, next_due: Option<u64>, last_late: u64, rate: f64, left: u64) -> Lag {
    let Some(next) = next_due else {
        return Lag {
            due_not_started: 0,
            behind_ns: last_late,
        };
    };
    let behind = end.saturating_sub(next);
    // The runs at next, next + 1/rate, ... strictly before the end.
    let due = if behind == 0 {
        0
    } else {
        (behind as f64 * rate / 1e9).ceil() as u64
    };
    Lag {
        due_not_started: due.min(left),
        behind_ns: behind,
    }
}

/// The lag of a staged dispatch (`--stages`) that ended at `end`, whose
/// next run was due at `next_due` (`None`: none was due before the stages
/// end, the last run started `last_late` ns after it was due), with
/// `due_not_started` runs due before the end that never started (their
/// due times come from the stages, not one slot apart).
pub(super) fn staged_lag(
    end: u64,
    next_due: Option<u64>,
    last_late: u64,
    due_not_started: u64,
) -> Lag {
    match next_due {
        Some(next) => Lag {
            due_not_started,
            behind_ns: end.saturating_sub(next),
        },
        None => Lag {
            due_not_started: 0,
            behind_ns: last_late,
        },
    }
}

/// How far below the target an achieved rate may be before `exec` warns:
/// 1 %.
pub(super) const BELOW_TARGET_TOLERANCE: f64 = 0.01;

/// Whether `runs` started over `span_ns` fell short of `target` runs/s: by
/// more than [`BELOW_TARGET_TOLERANCE`], and by at least one whole run (a
/// count run whose last start was a few microseconds late is not short).
pub(super) fn below_target(runs: u64, span_ns: u64, target: f64) -> bool {
    let expected = target * span_ns as f64 / 1e9;
    let achieved = runs as f64;
    achieved < expected * (1.0 - BELOW_TARGET_TOLERANCE) && expected - achieved >= 1.0
}
