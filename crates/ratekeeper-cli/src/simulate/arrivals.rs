//! The arrivals mini-language of `ratekeeper simulate`: when requests show
//! up, as a list of steps on a virtual timeline.
//!
//! ```text
//! pattern = step { ";" step }                  empty steps are ignored
//! step    = "burst" N [ "@" TIME ]             N arrivals at one instant
//!         | "every" DUR "for" DUR              one arrival every DUR
//!         | "rate" RATE "for" DUR              RATE arrivals per second
//!         | "idle" DUR                         nothing for DUR
//! ```
//!
//! A cursor starts at 0s. `burst` puts its arrivals at the cursor (or at the
//! absolute time `@TIME`, which moves the cursor there) and leaves it where it
//! is; `every` and `rate` put their first arrival at the cursor and move it on
//! by their length (arrivals fall at `cursor + k × DUR` while that is before
//! the end); `idle` moves it on. Times and durations are single words such as
//! `0s`, `50ms`, `2s` or `1m30s`; a rate is a number with an optional K/M
//! suffix, as in rate specs (`100`, `2.5k`). Keywords are case-insensitive.
//!
//! `burst 20 @0s; every 50ms for 3s; idle 2s; burst 10` is 20 arrivals at 0s,
//! 60 from 0s to 2.95s, and 10 at 5s.

use std::fmt;

use crate::report::fmt_duration;

/// The most arrivals a pattern may produce.
pub const MAX_ARRIVALS: u64 = 1_000_000;

/// The steps a pattern accepts, for error messages.
const STEPS: &str = "burst N [@TIME], every DUR for DUR, rate RATE for DUR or idle DUR";

/// One step of a pattern, as parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// `burst N [@T]`: `count` arrivals at `at` (absolute) or at the cursor.
    Burst { count: u64, at: Option<u64> },
    /// `every D for T`: arrivals every `every_ns` for `for_ns`.
    Every { every_ns: u64, for_ns: u64 },
    /// `rate R for T`: `rate` arrivals per second for `for_ns`.
    Rate { rate: f64, for_ns: u64 },
    /// `idle T`: the cursor moves on by `for_ns`.
    Idle { for_ns: u64 },
}

/// A parsed arrival pattern: its steps and the arrival times they give.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrivals {
    steps: Vec<Step>,
    /// Arrival times in nanoseconds from 0, in order.
    times: Vec<u64>,
    /// Where the cursor ended: the end of the pattern's timeline.
    end_ns: u64,
}

impl Arrivals {
    /// The arrival times in nanoseconds, in order.
    pub fn times(&self) -> &[u64] {
        &self.times
    }

    /// The end of the pattern: its last arrival or the end of its last
    /// `every`, `rate` or `idle` step, whichever is later.
    pub fn end_ns(&self) -> u64 {
        self.end_ns.max(self.times.last().copied().unwrap_or(0))
    }
}

/// What was wrong with a pattern; `Display` names the offending word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrivalsError {
    /// The 1-based step the error is in (0 for the whole pattern).
    step: usize,
    kind: ErrorKind,
}

/// The kinds of [`ArrivalsError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The pattern has no steps.
    Empty,
    /// A step starts with a word that is not a step.
    UnknownStep(String),
    /// A step ends before a word it needs.
    Missing {
        step: String,
        expected: &'static str,
    },
    /// A word where another was expected.
    Unexpected {
        token: String,
        expected: &'static str,
    },
    /// Not a count of arrivals.
    BadCount(String),
    /// Not a duration or a time.
    BadDuration(String),
    /// A duration that must be greater than zero is zero.
    ZeroDuration(String),
    /// Not a rate.
    BadRate { token: String, reason: String },
    /// An absolute time before the cursor.
    BackInTime { token: String, cursor_ns: u64 },
    /// More than [`MAX_ARRIVALS`] arrivals.
    TooMany,
    /// Times beyond what 64-bit nanoseconds hold (584 years).
    TooLong,
}

impl ArrivalsError {
    /// What went wrong.
    #[cfg(test)]
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl fmt::Display for ArrivalsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.step > 0 {
            write!(f, "step {}: ", self.step)?;
        }
        match &self.kind {
            ErrorKind::Empty => write!(
                f,
                "the pattern has no steps; expected {STEPS}, separated by ';'"
            ),
            ErrorKind::UnknownStep(word) => {
                write!(f, "\"{word}\" is not a step; expected {STEPS}")
            }
            ErrorKind::Missing { step, expected } => {
                write!(f, "\"{step}\" ends too soon: expected {expected} next")
            }
            ErrorKind::Unexpected { token, expected } => {
                write!(f, "unexpected \"{token}\": expected {expected}")
            }
            ErrorKind::BadCount(token) => write!(
                f,
                "\"{token}\" is not a count of arrivals: expected a whole number, at least 1, \
                 e.g. burst 20"
            ),
            ErrorKind::BadDuration(token) => write!(
                f,
                "\"{token}\" is not a duration: expected a number and a unit as one word, e.g. \
                 50ms, 2s or 1m30s"
            ),
            ErrorKind::ZeroDuration(token) => {
                write!(f, "\"{token}\": the duration must be greater than zero")
            }
            ErrorKind::BadRate { token, reason } => write!(
                f,
                "\"{token}\" is not a rate ({reason}): expected arrivals per second, e.g. 100 \
                 or 2.5k"
            ),
            ErrorKind::BackInTime { token, cursor_ns } => write!(
                f,
                "\"{token}\" is before {}, where the steps before it end: steps go forward in \
                 time",
                fmt_duration(*cursor_ns)
            ),
            ErrorKind::TooMany => write!(
                f,
                "the pattern gives more than {MAX_ARRIVALS} arrivals; use fewer or longer steps"
            ),
            ErrorKind::TooLong => write!(f, "the pattern runs past 584 years of nanoseconds"),
        }
    }
}

impl std::error::Error for ArrivalsError {}

/// A duration word: `0s`, `50ms`, `2s`, `1m30s`.
fn parse_duration(token: &str) -> Option<u64> {
    humantime::parse_duration(token)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
}

impl std::str::FromStr for Arrivals {
    type Err = ArrivalsError;

    fn from_str(s: &str) -> Result<Arrivals, ArrivalsError> {
        let mut steps = Vec::new();
        let mut times = Vec::new();
        let mut cursor: u64 = 0;
        let mut n = 0;
        for text in s.split(';') {
            let words: Vec<&str> = text.split_whitespace().collect();
            if words.is_empty() {
                continue;
            }
            n += 1;
            let err = |kind| ArrivalsError { step: n, kind };
            let step = parse_step(&words).map_err(err)?;
            cursor = expand(step, cursor, &mut times).map_err(err)?;
            steps.push(step);
        }
        if steps.is_empty() {
            return Err(ArrivalsError {
                step: 0,
                kind: ErrorKind::Empty,
            });
        }
        Ok(Arrivals {
            steps,
            times,
            end_ns: cursor,
        })
    }
}

/// Parses one step's words (at least one).
fn parse_step(words: &[&str]) -> Result<Step, ErrorKind> {
    let keyword = words[0].to_ascii_lowercase();
    let step_text = words.join(" ");
    let missing = |expected| ErrorKind::Missing {
        step: step_text.clone(),
        expected,
    };
    let duration = |token: &str, nonzero: bool| match parse_duration(token) {
        None => Err(ErrorKind::BadDuration(token.to_owned())),
        Some(0) if nonzero => Err(ErrorKind::ZeroDuration(token.to_owned())),
        Some(d) => Ok(d),
    };
    // `... for DUR` at words[2..], nothing after.
    let for_clause = |expected_word: &'static str| -> Result<u64, ErrorKind> {
        match words.get(2) {
            None => Err(missing(expected_word)),
            Some(w) if w.eq_ignore_ascii_case("for") => {
                let d = words.get(3).ok_or_else(|| missing("a duration"))?;
                let d = duration(d, true)?;
                end_of_step(words, 4)?;
                Ok(d)
            }
            Some(w) => Err(ErrorKind::Unexpected {
                token: (*w).to_owned(),
                expected: expected_word,
            }),
        }
    };
    match keyword.as_str() {
        "burst" => {
            let count = words.get(1).ok_or_else(|| missing("a count"))?;
            let count = match count.parse::<u64>() {
                Ok(c) if c >= 1 => c,
                _ => return Err(ErrorKind::BadCount((*count).to_owned())),
            };
            let at = match words.get(2) {
                None => None,
                Some(w) => {
                    // "@2s", "@ 2s" or "at 2s".
                    let (time, next) =
                        if let Some(t) = w.strip_prefix('@').filter(|t| !t.is_empty()) {
                            (t, 3)
                        } else if *w == "@" || w.eq_ignore_ascii_case("at") {
                            (*words.get(3).ok_or_else(|| missing("a time"))?, 4)
                        } else {
                            return Err(ErrorKind::Unexpected {
                                token: (*w).to_owned(),
                                expected: "@TIME or the end of the step",
                            });
                        };
                    let t = duration(time, false)?;
                    end_of_step(words, next)?;
                    Some(t)
                }
            };
            Ok(Step::Burst { count, at })
        }
        "every" => {
            let every = words.get(1).ok_or_else(|| missing("a duration"))?;
            let every_ns = duration(every, true)?;
            let for_ns = for_clause("\"for DUR\"")?;
            Ok(Step::Every { every_ns, for_ns })
        }
        "rate" => {
            let token = words.get(1).ok_or_else(|| missing("a rate"))?;
            let rate = parse_rate(token)?;
            let for_ns = for_clause("\"for DUR\"")?;
            Ok(Step::Rate { rate, for_ns })
        }
        "idle" => {
            let d = words.get(1).ok_or_else(|| missing("a duration"))?;
            let for_ns = duration(d, true)?;
            end_of_step(words, 2)?;
            Ok(Step::Idle { for_ns })
        }
        _ => Err(ErrorKind::UnknownStep(words[0].to_owned())),
    }
}

/// Refuses words after a complete step.
fn end_of_step(words: &[&str], used: usize) -> Result<(), ErrorKind> {
    match words.get(used) {
        None => Ok(()),
        Some(w) => Err(ErrorKind::Unexpected {
            token: (*w).to_owned(),
            expected: "';' before the next step",
        }),
    }
}

/// A rate in the rate-spec number format (`100`, `2.5k`, `1M`).
fn parse_rate(token: &str) -> Result<f64, ErrorKind> {
    let bad = |reason: String| ErrorKind::BadRate {
        token: token.to_owned(),
        reason,
    };
    // A rate spec's separators would make a multi-field spec of it.
    if token.contains([',', ':']) {
        return Err(bad("a rate alone, without a burst ratio".to_owned()));
    }
    let spec: ratekeeper::RateSpec = token.parse().map_err(|e| bad(format!("{e}")))?;
    Ok(spec.rate().get())
}

/// Adds `step`'s arrivals from `cursor` to `times`; returns the new cursor.
fn expand(step: Step, cursor: u64, times: &mut Vec<u64>) -> Result<u64, ErrorKind> {
    let room = |more: u64| {
        if (times.len() as u64).saturating_add(more) > MAX_ARRIVALS {
            Err(ErrorKind::TooMany)
        } else {
            Ok(())
        }
    };
    match step {
        Step::Burst { count, at } => {
            let t = match at {
                Some(t) if t < cursor => {
                    return Err(ErrorKind::BackInTime {
                        token: format!("@{}", fmt_duration(t)),
                        cursor_ns: cursor,
                    })
                }
                Some(t) => t,
                None => cursor,
            };
            room(count)?;
            times.extend(std::iter::repeat_n(t, count as usize));
            Ok(t)
        }
        Step::Every { every_ns, for_ns } => {
            let end = cursor.checked_add(for_ns).ok_or(ErrorKind::TooLong)?;
            room(for_ns.div_ceil(every_ns))?;
            let mut t = cursor;
            while t < end {
                times.push(t);
                t = t.checked_add(every_ns).ok_or(ErrorKind::TooLong)?;
            }
            Ok(end)
        }
        Step::Rate { rate, for_ns } => {
            let end = cursor.checked_add(for_ns).ok_or(ErrorKind::TooLong)?;
            let interval = 1e9 / rate;
            // Arrivals at cursor + round(k × 1e9 / rate) while before the end.
            let count = (for_ns as f64 / interval).ceil();
            if count > MAX_ARRIVALS as f64 {
                return Err(ErrorKind::TooMany);
            }
            room(count as u64)?;
            for k in 0..=(count as u64) {
                let offset = (k as f64 * interval).round();
                if offset >= for_ns as f64 {
                    break;
                }
                times.push(cursor + offset as u64);
            }
            Ok(end)
        }
        Step::Idle { for_ns } => cursor.checked_add(for_ns).ok_or(ErrorKind::TooLong),
    }
}

impl fmt::Display for Arrivals {
    /// The canonical form: `burst 20 @0s; every 50ms for 3s; idle 2s; burst 10`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match *step {
                Step::Burst { count, at: None } => write!(f, "burst {count}")?,
                Step::Burst { count, at: Some(t) } => {
                    write!(f, "burst {count} @{}", fmt_duration(t))?
                }
                Step::Every { every_ns, for_ns } => write!(
                    f,
                    "every {} for {}",
                    fmt_duration(every_ns),
                    fmt_duration(for_ns)
                )?,
                Step::Rate { rate, for_ns } => {
                    write!(f, "rate {rate} for {}", fmt_duration(for_ns))?
                }
                Step::Idle { for_ns } => write!(f, "idle {}", fmt_duration(for_ns))?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn parse(s: &str) -> Arrivals {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn error(s: &str) -> (ArrivalsError, String) {
        let e = s.parse::<Arrivals>().expect_err(s);
        let msg = e.to_string();
        (e, msg)
    }

    #[test]
    fn the_issue_example_expands_in_order() {
        let a = parse("burst 20 @0s; every 50ms for 3s; idle 2s; burst 10");
        let t = a.times();
        assert_eq!(t.len(), 90);
        assert!(t[..20].iter().all(|&x| x == 0));
        assert_eq!(&t[20..23], &[0, 50 * MS, 100 * MS]);
        assert_eq!(t[79], 2_950 * MS);
        assert!(t[80..].iter().all(|&x| x == 5_000 * MS));
        assert_eq!(a.end_ns(), 5_000 * MS);
        assert_eq!(
            a.to_string(),
            "burst 20 @0s; every 50ms for 3s; idle 2s; burst 10"
        );
    }

    #[test]
    fn steps_move_the_cursor() {
        let a = parse("idle 1s; burst 2; burst 1 @ 1500ms; every 200ms for 500ms; idle 1s");
        assert_eq!(
            a.times(),
            &[
                1_000 * MS,
                1_000 * MS,
                1_500 * MS,
                1_500 * MS,
                1_700 * MS,
                1_900 * MS
            ]
        );
        assert_eq!(a.end_ns(), 3_000 * MS);
        let a = parse("BURST 1 at 2s");
        assert_eq!(a.times(), &[2_000 * MS]);
        // Rates: 3 per second is 0, 333.333333 ms (rounded), 666.666667 ms.
        let a = parse("rate 3 for 1s; rate 2k for 1ms");
        assert_eq!(
            a.times(),
            &[
                0,
                333_333_333,
                666_666_667,
                1_000 * MS,
                1_000 * MS + 500_000
            ]
        );
        // Empty steps are ignored; the canonical form drops them.
        let a = parse(" ; burst 1 ;; idle 1m30s ; ");
        assert_eq!(a.to_string(), "burst 1; idle 1m30s");
        assert_eq!(a.end_ns(), 90_000 * MS);
    }

    #[test]
    fn errors_name_the_step_and_the_word() {
        let (e, msg) = error("burst 20; every 50ms for three");
        assert_eq!(e.kind(), &ErrorKind::BadDuration("three".to_owned()));
        assert!(
            msg.starts_with("step 2: \"three\" is not a duration"),
            "{msg}"
        );
        let (_, msg) = error("sprint 5");
        assert!(
            msg.contains("\"sprint\" is not a step; expected burst N"),
            "{msg}"
        );
        let (_, msg) = error("burst x");
        assert!(msg.contains("\"x\" is not a count"), "{msg}");
        let (_, msg) = error("burst 0");
        assert!(msg.contains("\"0\" is not a count"), "{msg}");
        let (_, msg) = error("every 50ms");
        assert!(
            msg.contains("\"every 50ms\" ends too soon: expected \"for DUR\""),
            "{msg}"
        );
        let (_, msg) = error("every 50ms during 2s");
        assert!(msg.contains("unexpected \"during\""), "{msg}");
        let (_, msg) = error("every 0s for 1s");
        assert!(
            msg.contains("\"0s\": the duration must be greater than zero"),
            "{msg}"
        );
        let (_, msg) = error("idle 2s 3s");
        assert!(msg.contains("unexpected \"3s\": expected ';'"), "{msg}");
        let (_, msg) = error("burst 1 soon");
        assert!(msg.contains("unexpected \"soon\": expected @TIME"), "{msg}");
        let (e, msg) = error("idle 3s; burst 1 @1s");
        assert!(matches!(e.kind(), ErrorKind::BackInTime { .. }));
        assert!(msg.contains("step 2: \"@1s\" is before 3s"), "{msg}");
        let (_, msg) = error("rate fast for 1s");
        assert!(msg.contains("\"fast\" is not a rate"), "{msg}");
        let (_, msg) = error("rate 10,2 for 1s");
        assert!(msg.contains("\"10,2\" is not a rate"), "{msg}");
        let (_, msg) = error(" ; ");
        assert!(msg.contains("no steps"), "{msg}");
        let (e, _) = error("every 1ns for 2ms");
        assert_eq!(e.kind(), &ErrorKind::TooMany);
        let (e, _) = error("burst 600000; burst 600000");
        assert_eq!(e.kind(), &ErrorKind::TooMany);
        let (e, _) = error("rate 1G for 1s");
        assert_eq!(e.kind(), &ErrorKind::TooMany);
        let (e, _) = error("idle 500years; idle 100years");
        assert_eq!(e.kind(), &ErrorKind::TooLong);
    }

    #[test]
    fn durations_print_as_one_word() {
        assert_eq!(fmt_duration(0), "0s");
        assert_eq!(fmt_duration(50 * MS), "50ms");
        assert_eq!(fmt_duration(90_000 * MS), "1m30s");
        assert_eq!(fmt_duration(1_500 * MS), "1s500ms");
        for ns in [1, 50 * MS, 90_000 * MS, 1_500 * MS, 3_723_000_000_007] {
            assert_eq!(parse_duration(&fmt_duration(ns)), Some(ns));
        }
    }
}
