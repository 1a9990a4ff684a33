//! `--stages` on a run (`exec`, `pace`): the run's rate follows ramping
//! stages ([`Stages`], as k6's), changed on the running limiters by a
//! thread of its own ([`drive`]), and the target those stages set for the
//! report ([`Staged`]).
//!
//! # The target of a staged run
//!
//! The drive thread sets the ramp's rate (at least its floor, see
//! [`Stages::paced_rate_at`]) when the run starts and then every
//! [`STEP`] while it moves by more than 0.5 %, so the limiter is asked for a
//! staircase that follows the ramp from below on the way up and from above
//! on the way down. The runs (or ops) the stages had **due** over a span
//! from the start are the integral of that staircase: the sum, over each
//! step, of the rate at its start times its length ([`Ramp::runs_due`]).
//! The staged run's **target rate** over a span is those runs divided by
//! the span: the mean rate the limiter was asked for. A report's target and
//! what it measures against it (the achieved rate's "below target" warning,
//! how far behind the run is) use it, not `--rate` (where the ramp starts).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratekeeper::config::LimiterRef;
use ratekeeper::{Clock, Rate};
use serde::Serialize;

use super::interrupt::Interrupt;
use super::stages::{parse_stages, Stages, STEP};
use crate::report::{fmt_rate, warn};

/// How often the drive thread, asleep until its next step, looks whether
/// the run has ended.
pub const POLL: Duration = Duration::from_millis(20);

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
pub fn parse_stages_arg(s: &str) -> Result<StagesArg, String> {
    Ok(StagesArg {
        text: s.trim().to_owned(),
        stages: parse_stages(s)?,
    })
}

/// A staged run's rate: the stages, from `--rate`'s rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Ramp {
    /// The stages.
    pub arg: StagesArg,
    /// `--rate`'s rate, where the first stage's ramp starts.
    pub start: f64,
}

impl Ramp {
    /// The rate the drive thread sets `at` into the run.
    pub fn rate_at(&self, at: Duration) -> f64 {
        self.arg.stages.paced_rate_at(self.start, at)
    }

    /// [`rate_at`](Self::rate_at) `at` nanoseconds into the run.
    pub fn rate_at_nanos(&self, at: u64) -> f64 {
        self.rate_at(Duration::from_nanos(at))
    }

    /// The runs the stages had due over the first `span` of the run: the
    /// sum, over each [`STEP`] from the start, of the rate at its start
    /// times its length (see the [module](self) doc).
    pub fn runs_due(&self, span: Duration) -> f64 {
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
    pub fn rate_between(&self, from: u64, to: u64) -> f64 {
        if to <= from {
            return self.rate_at_nanos(from);
        }
        let due = |at: u64| self.runs_due(Duration::from_nanos(at));
        (due(to) - due(from)) * 1e9 / (to - from) as f64
    }

    /// The target rate over the first `span_ns` of the run.
    pub fn target_rate(&self, span_ns: u64) -> f64 {
        self.rate_between(0, span_ns)
    }

    /// The rate the drive thread sets, as `(seconds, rate)` points every
    /// [`STEP`] (or a thousandth of the run) until `span_ns`, for the plot's
    /// target line: a staircase.
    pub fn points(&self, span_ns: u64) -> Vec<(f64, f64)> {
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

/// The runs due over a span that only grows, for a check made often while
/// the run goes on: [`Ramp::runs_due`], summed a step at a time as the span
/// grows instead of from the start at every check (the same sum, term by
/// term).
#[derive(Debug, Clone)]
pub struct DueSoFar<'a> {
    ramp: &'a Ramp,
    /// The end of the whole steps summed so far.
    at: Duration,
    /// The runs due over them.
    runs: f64,
}

impl<'a> DueSoFar<'a> {
    /// Nothing summed yet.
    pub fn new(ramp: &'a Ramp) -> DueSoFar<'a> {
        DueSoFar {
            ramp,
            at: Duration::ZERO,
            runs: 0.0,
        }
    }

    /// [`Ramp::runs_due`] over the first `span` of the run.
    pub fn runs_due(&mut self, span: Duration) -> f64 {
        // A span shorter than the last (a reading taken early), or long
        // enough for `runs_due` to take longer steps: summed from the start.
        if span < self.at || span / MAX_STEPS > STEP {
            return self.ramp.runs_due(span);
        }
        while self.at + STEP <= span {
            self.runs += self.ramp.rate_at(self.at) * STEP.as_secs_f64();
            self.at += STEP;
        }
        self.runs + self.ramp.rate_at(self.at) * (span - self.at).as_secs_f64()
    }
}

/// With --stages: what a report says of them (JSON null without).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Staged {
    /// The stages as given.
    pub stages: Option<String>,
    /// Rates set on the running limiters, the first (at the start)
    /// included.
    pub rate_changes: Option<u64>,
    /// Rate changes a limiter refused.
    pub rate_changes_refused: Option<u64>,
    /// `--rate`'s rate, where the ramp started.
    pub start_rate: Option<f64>,
    /// The rate the drive thread set, for the plot's target line.
    #[serde(skip)]
    pub ramp: Option<Ramp>,
}

impl Staged {
    /// What a run that followed `ramp` (if any) says of it, with what its
    /// drive thread did.
    pub fn of(ramp: Option<&Ramp>, driven: Driven) -> Staged {
        let Some(ramp) = ramp else {
            return Staged::default();
        };
        Staged {
            stages: Some(ramp.arg.text.clone()),
            rate_changes: Some(driven.changes),
            rate_changes_refused: Some(driven.refused),
            start_rate: Some(ramp.start),
            ramp: Some(ramp.clone()),
        }
    }
}

/// What the drive thread did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Driven {
    /// Rates set on the running limiters, the first (at the start)
    /// included.
    pub changes: u64,
    /// Rate changes a limiter refused (the first is warned about).
    pub refused: u64,
}

/// Follows `ramp` on the running `limiters` (each is set the ramp's rate)
/// from `t0` on `clock` until the stages end, `ended` is set (the run
/// stopped) or a signal arrives. A rate a limiter refuses is warned about
/// once, on standard error, and the run goes on at the rate it had.
pub fn drive<C: Clock + 'static>(
    ramp: &Ramp,
    limiters: &[LimiterRef<'_, C>],
    clock: &dyn Clock,
    t0: u64,
    interrupt: &Interrupt,
    ended: &AtomicBool,
) -> Driven {
    let elapsed = || Duration::from_nanos(clock.now_nanos().saturating_sub(t0));
    let sleep = |d: Duration| sleep_unless_ended(d, interrupt, ended);
    let mut driven = Driven::default();
    ramp.arg.stages.drive(ramp.start, &elapsed, &sleep, |rate| {
        match set_rate(limiters, rate) {
            Ok(()) => driven.changes += 1,
            Err(e) => {
                driven.refused += 1;
                if driven.refused == 1 {
                    let kept = limiters.first().map_or(rate, |l| l.rate());
                    warn(&format!(
                        "--stages: the limiter refused the rate {}: {e}; it keeps {} until \
                             a rate it takes, and the run goes on (further refusals are \
                             counted in the report, not told)",
                        fmt_rate(rate),
                        fmt_rate(kept)
                    ));
                }
            }
        }
    });
    driven
}

/// Sets `rate` on every one of `limiters`; the first error, after trying
/// them all.
fn set_rate<C: Clock + 'static>(limiters: &[LimiterRef<'_, C>], rate: f64) -> anyhow::Result<()> {
    let rate = Rate::new(rate)?;
    let mut first = Ok(());
    for l in limiters {
        if let Err(e) = l.set_rate(rate) {
            first = first.and(Err(e));
        }
    }
    Ok(first?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use ratekeeper::config::LimiterConfig;
    use ratekeeper::DefaultClock;

    fn ramp(text: &str, start: f64) -> Ramp {
        Ramp {
            arg: parse_stages_arg(text).unwrap(),
            start,
        }
    }

    #[test]
    fn the_runs_due_of_stages_sum_the_rates_set_every_step() {
        let r = ramp(" 1s:40,1s:40 ", 5.0);
        assert_eq!(r.arg.text, "1s:40,1s:40");
        // Up: 5, 8.5, ..., 36.5 for 100 ms each (20.75 runs), then 40/s for 1 s.
        let secs = Duration::from_secs;
        assert!((r.runs_due(secs(1)) - 20.75).abs() < 1e-9);
        assert!((r.runs_due(secs(2)) - 60.75).abs() < 1e-9);
        assert!((r.target_rate(2_000_000_000) - 30.375).abs() < 1e-9);
        // The flat second: 40/s; no span: the rate then.
        let s = 1_000_000_000;
        assert!((r.rate_between(s, 2 * s) - 40.0).abs() < 1e-9);
        assert_eq!(r.rate_between(0, 0), 5.0);
        // A ramp down to 0 paces at a thousandth of the peak at the end.
        assert_eq!(ramp("1s:0", 100.0).rate_at(secs(1)), 0.1);
        // The plot's staircase: two points a step.
        let points = r.points(2 * s);
        assert_eq!(points.len(), 40);
        assert_eq!(points[..2], [(0.0, 5.0), (0.1, 5.0)]);
        assert_eq!(*points.last().unwrap(), (2.0, 40.0));
    }

    #[test]
    fn the_runs_due_so_far_are_the_runs_due() {
        let r = ramp("1s:40,500ms:40,1s:0", 5.0);
        let mut so_far = DueSoFar::new(&r);
        // Growing spans, on and between the steps, and one going back.
        for ms in [
            0, 1, 99, 100, 101, 250, 1_000, 1_337, 2_499, 2_500, 9_000, 40,
        ] {
            let span = Duration::from_millis(ms);
            assert_eq!(so_far.runs_due(span), r.runs_due(span), "{ms} ms");
        }
        // Spans long enough for longer steps: the same too.
        let long = Duration::from_secs(200_000);
        assert_eq!(so_far.runs_due(long), r.runs_due(long));
    }

    #[test]
    fn the_drive_thread_sets_the_rate_until_the_stages_end_or_it_is_told() {
        let clock = DefaultClock::new();
        let config: LimiterConfig = "pacer:10".parse().unwrap();
        let (a, b) = (
            config.build_with_clock(clock).unwrap(),
            config.build_with_clock(clock).unwrap(),
        );
        let limiters = [a.as_ref(), b.as_ref()];
        let interrupt = Interrupt::new();
        let not_ended = AtomicBool::new(false);
        // 10 to 40 over 200 ms: at 0, 100 and 200 ms, on both limiters.
        let r = ramp("200ms:40", 10.0);
        let t0 = clock.now_nanos();
        let d = drive(&r, &limiters, &clock, t0, &interrupt, &not_ended);
        // (Two if a sleep overran a whole step on a loaded machine.)
        assert!((2..=3).contains(&d.changes) && d.refused == 0, "{d:?}");
        assert!(limiters.iter().all(|l| l.rate() == 40.0));
        // Ended (the run stopped), or a signal: the first rate only.
        let long = ramp("1h:40", 10.0);
        let ended = AtomicBool::new(true);
        let d = drive(&long, &limiters, &clock, t0, &interrupt, &ended);
        assert_eq!(d.changes, 1);
        interrupt.raise();
        let d = drive(&long, &limiters, &clock, t0, &interrupt, &not_ended);
        assert_eq!(d.changes, 1);
        assert!(limiters.iter().all(|l| (l.rate() - 10.0).abs() < 0.01));
    }

    #[test]
    fn a_refused_rate_is_counted_and_the_rate_kept() {
        let clock = DefaultClock::new();
        // A refill limiter counts whole permits per period, fewer than 2^32.
        let config: LimiterConfig = "refill:10,1s".parse().unwrap();
        let limiter = config.build_with_clock(clock).unwrap();
        let r = ramp("0s:5G,100ms:5G", 10.0);
        let (interrupt, not_ended) = (Interrupt::new(), AtomicBool::new(false));
        let t0 = clock.now_nanos();
        let d = drive(&r, &[limiter.as_ref()], &clock, t0, &interrupt, &not_ended);
        assert_eq!((d.changes, d.refused), (0, 1), "{d:?}");
        assert_eq!(limiter.as_ref().rate(), 10.0);
        // What a report says of the stages; nothing without them.
        let staged = Staged::of(Some(&r), d);
        assert_eq!(staged.rate_changes_refused, Some(d.refused));
        assert_eq!(staged.start_rate, Some(10.0));
        let json = serde_json::to_value(Staged::of(None, d)).unwrap();
        assert!(json["stages"].is_null() && json["rate_changes"].is_null());
    }
}
