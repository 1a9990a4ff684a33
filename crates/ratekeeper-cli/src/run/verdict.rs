//! `--fail-if`: conditions on a run's figures that make its exit status
//! non-zero, as k6's thresholds do for CI.
//!
//! A condition is `FIGURE OP VALUE`, e.g. `response.p99>50ms`,
//! `wait.max>=1s`, `rate<990`, `failures>0`:
//!
//! * `FIGURE` is a time figure, `wait`, `service` or `response`, with a
//!   statistic `.p50`, `.p90`, `.p99`, `.p99.9`, `.max` or `.mean` (a time
//!   figure alone is its p99); or `rate` (the achieved rate, per second); or
//!   `failures` (runs that failed);
//! * `OP` is `>`, `>=`, `<` or `<=`;
//! * `VALUE` is a duration for a time figure (`50ms`, `1.5s`, `250us`), a
//!   rate for `rate` (`990`, `1k`, `60k/min`), a whole number for
//!   `failures`.
//!
//! Each condition that holds at the end of the run is printed on standard
//! error with the measured value, and the run exits with [`EXIT_STATUS`].
//! A condition on a figure the run does not measure (`service` without
//! `pace --work`, `failures` on `pace`) is refused before the run starts.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::flags::rate::{parse_rate, Counting};
use crate::report::WaitRecorder;

/// The exit status of a run a `--fail-if` condition failed: 99, as k6 exits
/// when a threshold is crossed.
pub const EXIT_STATUS: u8 = 99;

/// A time figure of a run, per op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFigure {
    /// `start − scheduled`.
    Wait,
    /// `end − start`.
    Service,
    /// `end − scheduled`.
    Response,
}

/// A statistic of a time figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// A percentile, 0 to 100.
    Percentile(f64),
    /// The largest value.
    Max,
    /// The mean.
    Mean,
}

/// What a condition looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    /// A statistic of a time figure, in nanoseconds.
    Time(TimeFigure, Stat),
    /// The achieved rate, per second.
    Rate,
    /// The number of failed runs.
    Failures,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

/// One `--fail-if` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    text: String,
    figure: Figure,
    op: Op,
    /// Nanoseconds, per second or a count, as the figure is.
    value: f64,
}

/// What a run measured, for its conditions.
pub trait Figures {
    /// The statistic of a time figure in nanoseconds, or `None` where the
    /// run does not measure it.
    fn time(&self, figure: TimeFigure, stat: Stat) -> Option<f64>;
    /// The achieved rate per second.
    fn rate(&self) -> f64;
    /// Failed runs, or `None` where the run has no such thing.
    fn failures(&self) -> Option<u64>;
}

/// `--fail-if`'s value parser.
///
/// # Errors
///
/// A message naming what is wrong and what would be accepted.
pub fn parse_condition(s: &str) -> Result<Condition, String> {
    let text = s.trim();
    let at = text
        .find(['<', '>'])
        .ok_or_else(|| format!("\"{text}\" has no comparison; {EXAMPLES}"))?;
    let (figure_text, rest) = text.split_at(at);
    let (op, value_text) = match rest.strip_prefix(">=") {
        Some(v) => (Op::Ge, v),
        None => match rest.strip_prefix("<=") {
            Some(v) => (Op::Le, v),
            None if rest.starts_with('>') => (Op::Gt, &rest[1..]),
            None => (Op::Lt, &rest[1..]),
        },
    };
    let figure = parse_figure(figure_text.trim())?;
    let value = parse_value(figure, value_text.trim())?;
    Ok(Condition {
        text: text.to_owned(),
        figure,
        op,
        value,
    })
}

const EXAMPLES: &str =
    "expected FIGURE OP VALUE, e.g. response.p99>50ms, wait.max>=1s, rate<990, failures>0";

fn parse_figure(s: &str) -> Result<Figure, String> {
    let (name, stat) = match s.split_once('.') {
        Some((name, stat)) => (name, Some(stat)),
        None => (s, None),
    };
    let time = match name {
        "wait" => TimeFigure::Wait,
        "service" => TimeFigure::Service,
        "response" => TimeFigure::Response,
        "rate" | "failures" if stat.is_some() => {
            return Err(format!("\"{s}\": {name} has no statistics; {EXAMPLES}"))
        }
        "rate" => return Ok(Figure::Rate),
        "failures" => return Ok(Figure::Failures),
        _ => {
            return Err(format!(
                "\"{s}\" is not a figure: expected wait, service or response (with .p50, .p90, \
                 .p99, .p99.9, .max or .mean), rate or failures"
            ))
        }
    };
    let stat = match stat {
        None => Stat::Percentile(99.0),
        Some("max") => Stat::Max,
        Some("mean") => Stat::Mean,
        Some(p) => match p.strip_prefix('p').map(str::parse::<f64>) {
            Some(Ok(q)) if (0.0..=100.0).contains(&q) => Stat::Percentile(q),
            _ => {
                return Err(format!(
                    "\"{s}\": \"{p}\" is not a statistic; expected p50, p90, p99, p99.9 (any \
                     pNN from p0 to p100), max or mean"
                ))
            }
        },
    };
    Ok(Figure::Time(time, stat))
}

fn parse_value(figure: Figure, s: &str) -> Result<f64, String> {
    match figure {
        Figure::Time(..) => humantime::parse_duration(s)
            .map(|d| d.as_nanos() as f64)
            .map_err(|e| format!("\"{s}\" is not a duration ({e}); e.g. 50ms, 1.5s, 250us")),
        Figure::Rate => parse_rate(s, Counting::Ops),
        Figure::Failures => s
            .parse::<u64>()
            .map(|n| n as f64)
            .map_err(|_| format!("\"{s}\" is not a whole number of failures, e.g. 0 or 10")),
    }
}

impl Condition {
    /// The condition as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a run that measures `time` figures (its time figures) and has
    /// failures or not can evaluate it; the message says why not.
    ///
    /// # Errors
    ///
    /// A message for a figure the run does not measure.
    pub fn check_measured(&self, times: &[TimeFigure], has_failures: bool) -> Result<(), String> {
        match self.figure {
            Figure::Time(t, _) if !times.contains(&t) => Err(format!(
                "--fail-if \"{}\": this run does not measure {}",
                self.text,
                name(t)
            )),
            Figure::Failures if !has_failures => Err(format!(
                "--fail-if \"{}\": this run has no failures to count",
                self.text
            )),
            _ => Ok(()),
        }
    }

    /// The measured value and whether the condition holds (the run fails).
    pub fn evaluate(&self, figures: &dyn Figures) -> Option<(f64, bool)> {
        let measured = match self.figure {
            Figure::Time(t, stat) => figures.time(t, stat)?,
            Figure::Rate => figures.rate(),
            Figure::Failures => figures.failures()? as f64,
        };
        let holds = match self.op {
            Op::Gt => measured > self.value,
            Op::Ge => measured >= self.value,
            Op::Lt => measured < self.value,
            Op::Le => measured <= self.value,
        };
        Some((measured, holds))
    }

    /// `measured` in the figure's unit, for messages.
    fn fmt_measured(&self, measured: f64) -> String {
        match self.figure {
            Figure::Time(..) => {
                let d = Duration::from_nanos(measured.max(0.0) as u64);
                humantime::format_duration(d).to_string()
            }
            Figure::Rate => format!("{measured:.4}/s"),
            Figure::Failures => format!("{measured}"),
        }
    }
}

fn name(t: TimeFigure) -> &'static str {
    match t {
        TimeFigure::Wait => "wait",
        TimeFigure::Service => "service",
        TimeFigure::Response => "response",
    }
}

/// The statistic `stat` of the times `recorder` holds, in nanoseconds: the
/// same values the reports print (a percentile from the histogram, never
/// above the exact maximum), for [`Figures::time`].
pub fn recorded(recorder: &WaitRecorder, stat: Stat) -> f64 {
    let nanos = match stat {
        Stat::Max => recorder.summary().max,
        Stat::Mean => recorder.summary().mean,
        Stat::Percentile(p) => recorder.percentile(p),
    };
    nanos as f64
}

/// A condition that held, with the value measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The condition as given.
    pub condition: String,
    /// The measured value, in the figure's unit.
    pub measured: String,
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--fail-if {}: failed, measured {}",
            self.condition, self.measured
        )
    }
}

/// The conditions among `conditions` that hold for `figures`.
pub fn failed(conditions: &[Condition], figures: &dyn Figures) -> Vec<Failed> {
    conditions
        .iter()
        .filter_map(|c| {
            let (measured, holds) = c.evaluate(figures)?;
            holds.then(|| Failed {
                condition: c.text.clone(),
                measured: c.fmt_measured(measured),
            })
        })
        .collect()
}

/// A run's `--fail-if` conditions, and those that held after it: what its
/// report says of them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Verdict {
    /// The conditions as given.
    pub fail_if: Vec<String>,
    /// Those that held, as given.
    pub failed_conditions: Vec<String>,
    /// Those that held, with the value measured.
    #[serde(skip)]
    pub failed: Vec<Failed>,
}

impl Verdict {
    /// `conditions` evaluated on `figures`.
    pub fn of(conditions: &[Condition], figures: &dyn Figures) -> Verdict {
        let failed = failed(conditions, figures);
        Verdict {
            fail_if: conditions.iter().map(|c| c.text().to_owned()).collect(),
            failed_conditions: failed.iter().map(|f| f.condition.clone()).collect(),
            failed,
        }
    }

    /// The text report's `fail-if` line, after its label: how many
    /// conditions held, and which; `None` without conditions.
    pub fn report_line(&self) -> Option<String> {
        let n = self.fail_if.len();
        let conditions = if n == 1 { "condition" } else { "conditions" };
        match self.failed_conditions.len() {
            _ if n == 0 => None,
            0 => Some(format!("{n} {conditions}, none held")),
            k => Some(format!(
                "{k} of {n} {conditions} held: {}",
                self.failed_conditions.join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    struct Run;

    impl Figures for Run {
        fn time(&self, figure: TimeFigure, stat: Stat) -> Option<f64> {
            let ms = match (figure, stat) {
                (TimeFigure::Service, _) => return None,
                (TimeFigure::Wait, Stat::Max) => 40.0,
                (TimeFigure::Wait, _) => 2.0,
                (TimeFigure::Response, Stat::Percentile(p)) if p >= 99.0 => 73.0,
                (TimeFigure::Response, _) => 10.0,
            };
            Some(ms * 1e6)
        }
        fn rate(&self) -> f64 {
            985.0
        }
        fn failures(&self) -> Option<u64> {
            Some(0)
        }
    }

    fn failing(texts: &[&str]) -> Vec<String> {
        let conditions: Vec<_> = texts.iter().map(|t| parse_condition(t).unwrap()).collect();
        failed(&conditions, &Run)
            .into_iter()
            .map(|f| f.to_string())
            .collect()
    }

    #[test]
    fn conditions_that_hold_fail_the_run_with_the_measured_value() {
        assert_eq!(
            failing(&[
                "response.p99>50ms",
                "wait.max>=1s",
                "rate<990",
                "failures>0"
            ]),
            [
                "--fail-if response.p99>50ms: failed, measured 73ms",
                "--fail-if rate<990: failed, measured 985.0000/s",
            ]
        );
        assert!(failing(&["response.p50>50ms", "rate<=984", "wait.p99.9<=1ms"]).is_empty());
        // A time figure alone is its p99.
        assert_eq!(failing(&["response>70ms"]).len(), 1);
    }

    #[test]
    fn parsed_as_written() {
        let c = parse_condition(" wait.p99.9 >= 250us ").unwrap();
        assert_eq!(
            c.figure,
            Figure::Time(TimeFigure::Wait, Stat::Percentile(99.9))
        );
        assert_eq!((c.op, c.value), (Op::Ge, 250_000.0));
        assert_eq!(parse_condition("rate<60k/min").unwrap().value, 1000.0);
        assert_eq!(parse_condition("failures>10").unwrap().value, 10.0);
    }

    #[test]
    fn bad_conditions_say_what_would_be_accepted() {
        for (text, says) in [
            ("response.p99", "no comparison"),
            ("latency.p99>5ms", "not a figure"),
            ("response.p999>5ms", "not a statistic"),
            ("response.p101>5ms", "not a statistic"),
            ("response.p99>fast", "not a duration"),
            ("rate.p99>5", "no statistics"),
            ("failures>-1", "whole number"),
            ("rate<1m", "ambiguous"),
        ] {
            let e = parse_condition(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn the_verdict_lists_the_conditions_and_those_that_held() {
        let conditions: Vec<_> = ["rate<990", "wait.max>1s"]
            .iter()
            .map(|t| parse_condition(t).unwrap())
            .collect();
        let v = Verdict::of(&conditions, &Run);
        assert_eq!(v.fail_if, ["rate<990", "wait.max>1s"]);
        assert_eq!(v.failed_conditions, ["rate<990"]);
        assert_eq!(v.failed[0].measured, "985.0000/s");
        assert_eq!(
            v.report_line().as_deref(),
            Some("1 of 2 conditions held: rate<990")
        );
        let none = Verdict::of(&conditions[1..], &Run);
        assert_eq!(
            none.report_line().as_deref(),
            Some("1 condition, none held")
        );
        assert_eq!(Verdict::default().report_line(), None);
    }

    #[test]
    fn figures_the_run_lacks_are_refused_before_it_starts() {
        let c = parse_condition("service.max>1s").unwrap();
        let e = c.check_measured(&[TimeFigure::Wait], false).unwrap_err();
        assert!(e.contains("does not measure service"), "{e}");
        let c = parse_condition("failures>0").unwrap();
        assert!(c.check_measured(&[TimeFigure::Wait], false).is_err());
        assert!(c.check_measured(&[], true).is_ok());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_condition(&s);
        }
    }
}
