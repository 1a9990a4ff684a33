//! What the subcommands that run on the real clock share (`pace` and `exec`;
//! `pipe` for Ctrl-C): how long a run lasts (`--duration` or `--count`), how
//! its elapsed time is counted in count mode, the back-off of a request that
//! a limiter's timeout refused, and Ctrl-C ([`interrupt`]); and what `pace`
//! and `exec` share of `--stages` ([`stages`], [`ramp`]) and `--fail-if`
//! ([`verdict`]).

pub mod interrupt;
pub mod ramp;
pub mod stages;
pub mod verdict;

use std::time::{Duration, SystemTime};

use ratekeeper::Clock;

use interrupt::Interrupt;

/// The exit status of a run that fell too far behind its schedule (`exec
/// --max-behind`), after its report: apart from a failure (1), a usage
/// error (2) and a signal (128 + the signal).
pub const EXIT_BEHIND: u8 = 3;

/// The exit status of a run stopped by its limit shared through Redis
/// (`--redis`), after the report: Redis failed under `--on-redis-failure
/// closed`, or the key cannot be used (it holds another type, or another
/// limit without `--redis-adopt`). Apart from a failure (1), a usage error (2), a run behind its
/// schedule ([`EXIT_BEHIND`]) and a signal (128 + the signal).
pub const EXIT_SHARED_FAILED: u8 = 4;

/// Run length when neither `--duration` nor `--count` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(5);

/// How long a run of `--duration` and `--count` lasts (clap rejects the two
/// together): `None` in count mode, else the duration, by default
/// [`DEFAULT_DURATION`].
pub fn duration(duration: Option<Duration>, count: Option<u64>) -> Option<Duration> {
    match count {
        Some(_) => None,
        None => Some(duration.unwrap_or(DEFAULT_DURATION)),
    }
}

/// The JSON report's `mode` of a run that lasts `duration` (`None`: count
/// mode).
pub fn mode_name(duration: Option<Duration>) -> &'static str {
    if duration.is_some() {
        "duration"
    } else {
        "count"
    }
}

/// A run's elapsed time when it was not cut at its deadline: from the
/// schedule's start `t0` until the last op started, plus one slot of the
/// target schedule (1 / `target_rate`), so that N ops on a perfect schedule
/// take N slots.
pub fn schedule_span(t0: u64, last_start: Option<u64>, target_rate: f64) -> u64 {
    let slot = (1e9 / target_rate).round() as u64;
    last_start
        .unwrap_or(t0)
        .saturating_sub(t0)
        .saturating_add(slot)
}

/// After a limiter refused a request whose wait `wait` would exceed its
/// timeout `max_wait` (Resilience4j's), sleeps until a permit could be
/// granted within the timeout: `wait - max_wait`, but not past `deadline`
/// on `clock` (if any), and not past Ctrl-C.
pub fn sleep_until_retry(
    interrupt: &Interrupt,
    clock: &dyn Clock,
    wait: Duration,
    max_wait: Duration,
    deadline: Option<u64>,
) {
    let retry_in = wait.saturating_sub(max_wait);
    let until_deadline = deadline.map_or(u64::MAX, |d| d.saturating_sub(clock.now_nanos()));
    let nanos = u64::try_from(retry_in.as_nanos())
        .unwrap_or(u64::MAX)
        .min(until_deadline);
    if nanos > 0 {
        interrupt.sleep(Duration::from_nanos(nanos));
    }
}

/// When a run that started at `t0` on `clock` started, by the system's
/// clock (for `--hdr-out`'s start time).
pub fn started_at(clock: &dyn Clock, t0: u64) -> SystemTime {
    let ago = Duration::from_nanos(clock.now_nanos().saturating_sub(t0));
    let now = SystemTime::now();
    now.checked_sub(ago).unwrap_or(now)
}
