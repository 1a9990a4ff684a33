//! `--fail-if`: conditions on a run's figures that make its exit status
//! non-zero, as k6's thresholds do for CI.
//!
//! A condition is `FIGURE OP VALUE`, e.g. `response.p99>50ms`,
//! `wait.max>=1s`, `rate<990`, `failures>0`:
//!
//! * `FIGURE` is a time figure, `wait`, `service` or `response`, with a
//!   statistic `.p50`, `.p90`, `.p95`, `.p99`, `.p99.9`, `.max` or `.mean`
//!   (a time figure alone is its p99); or `rate` (the achieved rate, per
//!   second); or `failures` (runs that failed);
//! * `OP` is `>`, `>=`, `<` or `<=`;
//! * `VALUE` is a duration for a time figure (`50ms`, `1.5s`, `250us`), a
//!   rate for `rate` (`990`, `1k`, `60k/min`), a whole number for
//!   `failures`, or for `failures` only a percentage (`1%`, `0.5%`): the
//!   failed runs as a percentage of the finished ones (see [`Failures`]).
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
    /// The failed runs as a percentage of the finished ones, 0 to 100.
    FailurePercent,
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
    /// Nanoseconds, per second, a count or a percentage, as the figure is.
    value: f64,
}

/// A run's failed runs and its finished ones (those that ran to their end,
/// failed or not: a run ended by ratekeeper at a stop has not), for the
/// `failures` figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failures {
    /// Runs that failed.
    pub failed: u64,
    /// Runs that finished, the failed ones included.
    pub finished: u64,
}

impl Failures {
    /// The failed runs as a percentage of the finished ones; 0 when none
    /// finished (nothing failed).
    pub fn percent(&self) -> f64 {
        if self.finished == 0 {
            0.0
        } else {
            self.failed as f64 * 100.0 / self.finished as f64
        }
    }
}

/// What a run measured, for its conditions.
pub trait Figures {
    /// The statistic of a time figure in nanoseconds, or `None` where the
    /// run does not measure it.
    fn time(&self, figure: TimeFigure, stat: Stat) -> Option<f64>;
    /// The achieved rate per second.
    fn rate(&self) -> f64;
    /// Failed and finished runs, or `None` where the run has no such
    /// thing.
    fn failures(&self) -> Option<Failures>;
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
    let (figure, value) = match value_text.trim().strip_suffix('%') {
        Some(percent) => (
            Figure::FailurePercent,
            parse_percent(figure, percent.trim())?,
        ),
        None => (figure, parse_value(figure, value_text.trim())?),
    };
    Ok(Condition {
        text: text.to_owned(),
        figure,
        op,
        value,
    })
}

const EXAMPLES: &str = "expected FIGURE OP VALUE, e.g. response.p99>50ms, wait.max>=1s, \
     rate<990, failures>0, failures>1%";

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
                 .p95, .p99, .p99.9, .max or .mean), rate or failures"
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
                    "\"{s}\": \"{p}\" is not a statistic; expected p50, p90, p95, p99, p99.9 \
                     (any pNN from p0 to p100), max or mean"
                ))
            }
        },
    };
    Ok(Figure::Time(time, stat))
}

/// A percentage VALUE, `NUMBER%` (given without its `%`): for `failures`
/// only, from 0 to 100.
fn parse_percent(figure: Figure, s: &str) -> Result<f64, String> {
    if figure != Figure::Failures {
        return Err(format!(
            "\"{s}%\": a percentage is for failures only (the failed runs as a percentage of \
             the finished ones, e.g. failures>1%); {EXAMPLES}"
        ));
    }
    match s.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "\"{s}%\" is not a percentage from 0 to 100, e.g. failures>1% or failures>0.5%"
        )),
    }
}

fn parse_value(figure: Figure, s: &str) -> Result<f64, String> {
    match figure {
        Figure::Time(..) => humantime::parse_duration(s)
            .map(|d| d.as_nanos() as f64)
            .map_err(|e| format!("\"{s}\" is not a duration ({e}); e.g. 50ms, 1.5s, 250us")),
        Figure::Rate => parse_rate(s, Counting::Ops),
        Figure::Failures => s.parse::<u64>().map(|n| n as f64).map_err(|_| {
            format!(
                "\"{s}\" is not a whole number of failures, e.g. 0 or 10, nor a percentage \
                     of the finished runs, e.g. 1%"
            )
        }),
        // Parsed by parse_percent.
        Figure::FailurePercent => parse_percent(Figure::Failures, s),
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
            Figure::Failures | Figure::FailurePercent if !has_failures => Err(format!(
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
            Figure::Failures => figures.failures()?.failed as f64,
            Figure::FailurePercent => figures.failures()?.percent(),
        };
        let holds = match self.op {
            Op::Gt => measured > self.value,
            Op::Ge => measured >= self.value,
            Op::Lt => measured < self.value,
            Op::Le => measured <= self.value,
        };
        Some((measured, holds))
    }

    /// `measured` in the figure's unit, for messages: a percentage with
    /// the counts it is of, from `figures`.
    fn fmt_measured(&self, measured: f64, figures: &dyn Figures) -> String {
        match self.figure {
            Figure::Time(..) => {
                let d = Duration::from_nanos(measured.max(0.0) as u64);
                humantime::format_duration(d).to_string()
            }
            Figure::Rate => format!("{measured:.4}/s"),
            Figure::Failures => format!("{measured}"),
            Figure::FailurePercent => {
                let f = figures.failures().unwrap_or(Failures {
                    failed: 0,
                    finished: 0,
                });
                let percent = format!("{measured:.3}");
                let percent = percent.trim_end_matches('0').trim_end_matches('.');
                format!("{percent}% ({} of {} runs)", f.failed, f.finished)
            }
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
                measured: c.fmt_measured(measured, figures),
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
        fn failures(&self) -> Option<Failures> {
            Some(Failures {
                failed: 0,
                finished: 10,
            })
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

    /// A run of 40 finished runs, 1 failed.
    struct Runs;

    impl Figures for Runs {
        fn time(&self, _: TimeFigure, _: Stat) -> Option<f64> {
            None
        }
        fn rate(&self) -> f64 {
            0.0
        }
        fn failures(&self) -> Option<Failures> {
            Some(Failures {
                failed: 1,
                finished: 40,
            })
        }
    }

    #[test]
    fn failures_take_a_percentage_of_the_finished_runs() {
        let held = |texts: &[&str]| -> Vec<String> {
            let conditions: Vec<_> = texts.iter().map(|t| parse_condition(t).unwrap()).collect();
            failed(&conditions, &Runs)
                .into_iter()
                .map(|f| f.to_string())
                .collect()
        };
        // 1 of 40 is 2.5 %.
        assert_eq!(
            held(&[
                "failures>1%",
                "failures>2.5%",
                "failures>=2.5%",
                "failures > 0 %"
            ]),
            [
                "--fail-if failures>1%: failed, measured 2.5% (1 of 40 runs)",
                "--fail-if failures>=2.5%: failed, measured 2.5% (1 of 40 runs)",
                "--fail-if failures > 0 %: failed, measured 2.5% (1 of 40 runs)",
            ]
        );
        assert!(held(&["failures>=3%", "failures<2%"]).is_empty());
        // The count is still a count.
        assert_eq!(
            held(&["failures>0"]),
            ["--fail-if failures>0: failed, measured 1"]
        );
        // No run finished: no failures, 0 %.
        let none = Failures {
            failed: 0,
            finished: 0,
        };
        assert_eq!(none.percent(), 0.0);
        assert_eq!(parse_condition("failures<=100%").unwrap().value, 100.0);
    }

    #[test]
    fn percentages_are_for_failures_only_and_at_most_100() {
        for (text, says) in [
            ("rate<90%", "a percentage is for failures only"),
            ("response.p99>5%", "a percentage is for failures only"),
            ("failures>101%", "from 0 to 100"),
            ("failures>-1%", "from 0 to 100"),
            ("failures>x%", "from 0 to 100"),
            ("failures>NaN%", "from 0 to 100"),
            ("failures>1.5", "whole number of failures"),
        ] {
            let e = parse_condition(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_condition(&s);
        }

        /// Any percentage, for any figure, parses to 0..=100 on failures
        /// or is refused with a message, never a panic.
        #[test]
        fn percentages_parse_or_are_refused(
            figure in prop::sample::select(vec!["failures", "rate", "wait.p95", "x"]),
            op in prop::sample::select(vec![">", ">=", "<", "<="]),
            v in "[-+0-9.eEinfNa]{0,12}",
        ) {
            match parse_condition(&format!("{figure}{op}{v}%")) {
                Ok(c) => {
                    prop_assert_eq!(c.figure, Figure::FailurePercent);
                    prop_assert!((0.0..=100.0).contains(&c.value));
                }
                Err(e) => prop_assert!(!e.is_empty()),
            }
        }
    }
}
