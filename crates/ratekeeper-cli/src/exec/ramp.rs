//! `exec --stages`: the run's rate follows ramping stages ([`Stages`], as
//! k6's), changed on the running limiter by a thread of its own
//! ([`drive`]), and the target those stages set for the report.
//!
//! # The target of a staged run
//!
//! The drive thread sets the ramp's rate (at least its floor, see
//! [`Stages::paced_rate_at`]) when the run starts and then every
//! [`STEP`] while it moves by more than 0.5 %, so the limiter is asked for a
//! staircase that follows the ramp from below on the way up and from above
//! on the way down. The runs the stages had **due** over a span from the
//! start are the integral of that staircase: the sum, over each step, of
//! the rate at its start times its length ([`Ramp::runs_due`]). The staged
//! run's **target rate** over a span is those runs divided by the span:
//! the mean rate the limiter was asked for. The report's target, the
//! achieved rate's "below target" warning and the runs due but not started
//! are measured against it, not against `--rate` (where the ramp starts).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratekeeper::config::LimiterRef;
use ratekeeper::{Clock, DefaultClock, Rate};

use super::dispatch::POLL;
use crate::report::{fmt_rate, warn};
use crate::run::interrupt::Interrupt;
use crate::run::stages::{parse_stages, Stages, STEP};

/// The most steps [`Ramp::runs_due`] sums: a longer span takes longer
/// steps (a year of stages, 32 s steps).
const MAX_STEPS: u32 = 1_000_000;

/// `--stages` as given, and parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct StagesArg {
    /// The stages as given (trimmed), for the report.
    pub text: String,
    pub stages: Stages,
}

/// `--stages`' value parser: [`parse_stages`], keeping the text.
///
/// # Errors
///
/// The parser's message.
pub(super) fn parse_stages_arg(s: &str) -> Result<StagesArg, String> {
    Ok(StagesArg {
        text: s.trim().to_owned(),
        stages: parse_stages(s)?,
    })
}

/// A staged run's rate: the stages, from `--rate`'s rate.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ramp {
    pub(super) arg: StagesArg,
    /// `--rate`'s rate, where the first stage's ramp starts.
    pub(super) start: f64,
}

impl Ramp {
    /// The rate the drive thread sets `at` into the run.
    pub(super) fn rate_at(&self, at: Duration) -> f64 {
        self.arg.stages.paced_rate_at(self.start, at)
    }

    /// [`rate_at`](Self::rate_at) `at` nanoseconds into the run.
    pub(super) fn rate_at_nanos(&self, at: u64) -> f64 {
        self.rate_at(Duration::from_nanos(at))
    }

    /// The runs the stages had due over the first `span` of the run: the
    /// sum, over each [`STEP`] from the start, of the rate at its start
    /// times its length (see the [module](self) doc).
    pub(super) fn runs_due(&self, span: Duration) -> f64 {
        let step = STEP.max(span / MAX_STEPS);
        let mut at = Duration::ZERO;
        let mut runs = 0.0;
        while at < span {
            let len = step.min(span - at);
            runs += self.rate_at(at) * len.as_secs_f64();
            at += step;
        }
        runs
    }

    /// The mean rate the stages asked for between `from` and `to`
    /// nanoseconds into the run; the rate at `from` if that is no span.
    pub(super) fn rate_between(&self, from: u64, to: u64) -> f64 {
        if to <= from {
            return self.rate_at_nanos(from);
        }
        let due = |at: u64| self.runs_due(Duration::from_nanos(at));
        (due(to) - due(from)) * 1e9 / (to - from) as f64
    }

    /// The target rate over the first `span_ns` of the run.
    pub(super) fn target_rate(&self, span_ns: u64) -> f64 {
        self.rate_between(0, span_ns)
    }

    /// The rate the drive thread sets, as `(seconds, rate)` points every
    /// [`STEP`] (or a thousandth of the run) until `span_ns`, for the plot's
    /// target line: a staircase.
    pub(super) fn points(&self, span_ns: u64) -> Vec<(f64, f64)> {
        let span = Duration::from_nanos(span_ns);
        let step = STEP.max(span / 1_000);
        let mut points = Vec::new();
        let mut at = Duration::ZERO;
        while at < span {
            let rate = self.rate_at(at);
            let next = (at + step).min(span);
            points.push((at.as_secs_f64(), rate));
            points.push((next.as_secs_f64(), rate));
            at = next;
        }
        points
    }
}

/// What the drive thread did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Driven {
    /// Rates set on the running limiter, the first (at the start) included.
    pub(super) changes: u64,
    /// Rate changes the limiter refused (the first is warned about).
    pub(super) refused: u64,
}

/// Follows `ramp` on the running `limiter` from `t0` on `clock` until the
/// stages end, `ended` is set (the dispatcher stopped starting runs) or a
/// signal arrives. A rate the limiter refuses is warned about once, on
/// standard error, and the run goes on at the rate it had.
pub(super) fn drive(
    ramp: &Ramp,
    limiter: LimiterRef<'_, DefaultClock>,
    clock: &DefaultClock,
    t0: u64,
    interrupt: &Interrupt,
    ended: &AtomicBool,
) -> Driven {
    let elapsed = || Duration::from_nanos(clock.now_nanos().saturating_sub(t0));
    let sleep = |d: Duration| sleep_unless_ended(d, interrupt, ended);
    let mut driven = Driven::default();
    ramp.arg.stages.drive(ramp.start, &elapsed, &sleep, |rate| {
        match set_rate(limiter, rate) {
            Ok(()) => driven.changes += 1,
            Err(e) => {
                driven.refused += 1;
                if driven.refused == 1 {
                    warn(&format!(
                        "--stages: the limiter refused the rate {}: {e}; it keeps {} until \
                             a rate it takes, and the run goes on (further refusals are \
                             counted in the report, not told)",
                        fmt_rate(rate),
                        fmt_rate(limiter.rate())
                    ));
                }
            }
        }
    });
    driven
}

/// Sets `rate` on `limiter`.
fn set_rate(limiter: LimiterRef<'_, DefaultClock>, rate: f64) -> anyhow::Result<()> {
    limiter.set_rate(Rate::new(rate)?)?;
    Ok(())
}

/// Sleeps for `d`, waking every [`POLL`] to see whether `ended` was set;
/// returns whether to stop: `ended` is set or a signal arrived.
fn sleep_unless_ended(d: Duration, interrupt: &Interrupt, ended: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    loop {
        // Ordering: Relaxed; a stop request that carries no data.
        if ended.load(Ordering::Relaxed) {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        if interrupt.sleep(left.min(POLL)) {
            return true;
        }
    }
}
