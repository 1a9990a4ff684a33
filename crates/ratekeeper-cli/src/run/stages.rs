//! `--stages`: a load shape, as k6's ramping stages: the rate at every
//! moment of a run, and the ops that rate has due by then.
//!
//! `--stages 10s:1k,30s:10k,10s:0` is three stages: over 10 s the rate
//! ramps in a straight line from the start rate (`--rate`'s, or 0) to
//! 1 000/s, over the next 30 s to 10 000/s, over the last 10 s down to 0.
//! The run lasts the stages' total. The ops due over a span from the start
//! are the integral of that rate over it ([`Stages::integral`]), and
//! [`Stages::time_of`] is its inverse: when a given number of ops is due
//! (see [`ramp`](super::ramp) for the schedule built on it).
//!
//! A running limiter's rate is changed
//! ([`LimiterRef::set_rate`](ratekeeper::config::LimiterRef::set_rate)) at
//! most every [`STEP`], and when it moved by more than [`MIN_CHANGE`]
//! ([`Stages::drive`]). A rate of 0 cannot be kept (no schedule has a slot
//! for it), so the slowest a limiter is set is [`FLOOR_SHARE`] of the
//! highest rate of the run.

use std::time::Duration;

use crate::flags::rate::{parse_rate, Counting};

/// How often the rate follows the ramp.
pub const STEP: Duration = Duration::from_millis(100);

/// The smallest relative change worth a rate change (0.5 %).
pub const MIN_CHANGE: f64 = 0.005;

/// The slowest rate a limiter is set, as a share of the run's highest.
pub const FLOOR_SHARE: f64 = 1e-3;

/// One stage: ramp to `target` per second over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the ramp takes.
    pub duration: Duration,
    /// The rate at its end, per second.
    pub target: f64,
}

/// The stages of a run, ramping from its starting rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(Vec<Stage>);

/// `--stages`'s value parser: `DUR:RATE[,DUR:RATE...]`.
///
/// # Errors
///
/// A message naming the stage and what would be accepted.
pub fn parse_stages(s: &str) -> Result<Stages, String> {
    let stages = s
        .split(',')
        .map(|stage| parse_stage(stage.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    if stages.iter().all(|s| s.duration.is_zero()) {
        return Err(format!(
            "\"{s}\" lasts no time; give each stage a duration, e.g. 10s:1k"
        ));
    }
    Ok(Stages(stages))
}

fn parse_stage(s: &str) -> Result<Stage, String> {
    const EXPECTED: &str = "expected DURATION:RATE, e.g. 10s:1k or 30s:500/min";
    let (d, r) = s
        .split_once(':')
        .ok_or_else(|| format!("stage \"{s}\": {EXPECTED}"))?;
    let duration = humantime::parse_duration(d.trim())
        .map_err(|e| format!("stage \"{s}\": \"{d}\" is not a duration ({e}); {EXPECTED}"))?;
    if duration > Duration::from_secs(365 * 86_400) {
        return Err(format!("stage \"{s}\": longer than a year; {EXPECTED}"));
    }
    let target = parse_rate(r, Counting::Ops).map_err(|e| format!("stage \"{s}\": {e}"))?;
    if !(target >= 0.0 && target.is_finite()) {
        return Err(format!(
            "stage \"{s}\": the rate must be 0 or more, got {target}; {EXPECTED}"
        ));
    }
    Ok(Stage { duration, target })
}

impl Stages {
    /// The stages, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Stage> {
        self.0.iter()
    }

    /// How long the run lasts: the stages' total.
    pub fn total(&self) -> Duration {
        self.0.iter().map(|s| s.duration).sum()
    }

    /// The highest rate of a run starting at `start`.
    pub fn peak(&self, start: f64) -> f64 {
        self.0.iter().map(|s| s.target).fold(start, f64::max)
    }

    /// The ramp's straight lines from `start`: each stage's rate at its
    /// beginning and end, its beginning and its length, in seconds.
    fn lines(&self, start: f64) -> impl Iterator<Item = Line> + '_ {
        let mut from = start;
        let mut begun = 0.0;
        self.0.iter().map(move |s| {
            let line = Line {
                from,
                to: s.target,
                begun,
                len: s.duration.as_secs_f64(),
            };
            from = s.target;
            begun += line.len;
            line
        })
    }

    /// The ramp's rate `at` into a run starting at `start` per second
    /// (before the floor); the last stage's target after the end.
    pub fn rate_at(&self, start: f64, at: Duration) -> f64 {
        let at = at.as_secs_f64();
        let mut last = start;
        for l in self.lines(start) {
            if at < l.begun + l.len {
                return l.rate((at - l.begun).max(0.0));
            }
            last = l.to;
        }
        last
    }

    /// The ops the ramp from `start` has due over the first `span` of the
    /// run: the integral of its rate from 0 to `span` (to the end of the
    /// stages; none are due after it).
    pub fn integral(&self, start: f64, span: Duration) -> f64 {
        let t = span.as_secs_f64();
        self.lines(start)
            .take_while(|l| l.begun < t)
            .map(|l| l.integral((t - l.begun).min(l.len)))
            .sum()
    }

    /// When the integral of the ramp from `start` reaches `ops`: the
    /// earliest time into the run at which [`integral`](Self::integral)
    /// is `ops`; `None` if it never does before the stages end.
    pub fn time_of(&self, start: f64, ops: f64) -> Option<Duration> {
        if ops <= 0.0 {
            return Some(Duration::ZERO);
        }
        let mut left = ops;
        for l in self.lines(start) {
            let whole = l.integral(l.len);
            if left <= whole && whole > 0.0 {
                let at = l.begun + l.time_of(left).min(l.len);
                return Some(Duration::from_secs_f64(at));
            }
            left -= whole;
        }
        None
    }

    /// The highest rate of the ramp from `start` between `from` and `to`
    /// into the run (a straight line's highest is at one of its ends).
    pub fn max_between(&self, start: f64, from: Duration, to: Duration) -> f64 {
        let (a, b) = (from.as_secs_f64(), to.as_secs_f64());
        let ends = self
            .lines(start)
            .flat_map(|l| [(l.begun, l.from), (l.begun + l.len, l.to)])
            .filter(|&(t, _)| t > a && t < b)
            .map(|(_, r)| r);
        ends.fold(self.rate_at(start, from), f64::max)
            .max(self.rate_at(start, to))
    }

    /// Follows the ramp until the stages end or `sleep` says to stop:
    /// `set(rate(at))` whenever that moved by more than [`MIN_CHANGE`]
    /// since the last one set (the first is always set). `elapsed` reads
    /// the time into the run; `sleep` sleeps up to the given time and
    /// returns whether to stop. Returns the rate changes made.
    pub fn drive(
        &self,
        rate: &dyn Fn(Duration) -> f64,
        elapsed: &dyn Fn() -> Duration,
        sleep: &dyn Fn(Duration) -> bool,
        mut set: impl FnMut(f64),
    ) -> u64 {
        let total = self.total();
        let mut last: Option<f64> = None;
        let mut changes = 0;
        loop {
            let now = elapsed();
            let rate = rate(now.min(total));
            let moved = last.is_none_or(|l| (rate - l).abs() > l * MIN_CHANGE);
            if moved {
                set(rate);
                last = Some(rate);
                changes += 1;
            }
            if now >= total || sleep(STEP.min(total - now)) {
                return changes;
            }
        }
    }
}

/// One stage's straight line, in seconds.
#[derive(Debug, Clone, Copy)]
struct Line {
    /// The rate at its beginning and end, per second.
    from: f64,
    to: f64,
    /// When it begins into the run, and how long it lasts.
    begun: f64,
    len: f64,
}

impl Line {
    /// The rate `t` seconds into the line.
    fn rate(&self, t: f64) -> f64 {
        if self.len > 0.0 {
            self.from + (self.to - self.from) * t / self.len
        } else {
            self.to
        }
    }

    /// Half the line's slope: the integral over its first `t` seconds is
    /// `from * t + half_slope * t * t`.
    fn half_slope(&self) -> f64 {
        if self.len > 0.0 {
            (self.to - self.from) / (2.0 * self.len)
        } else {
            0.0
        }
    }

    /// The ops due over its first `t` seconds.
    fn integral(&self, t: f64) -> f64 {
        if self.len <= 0.0 {
            return 0.0;
        }
        self.from * t + self.half_slope() * t * t
    }

    /// The time into the line at which its integral is `ops` (no more
    /// than the line's whole): the root of `a t^2 + b t = ops` in the form
    /// `2 ops / (b + sqrt(b^2 + 4 a ops))`, which holds for a flat line (a
    /// = 0) and loses no precision for a small slope.
    fn time_of(&self, ops: f64) -> f64 {
        let (a, b) = (self.half_slope(), self.from);
        let root = (b * b + 4.0 * a * ops).max(0.0).sqrt();
        let t = 2.0 * ops / (b + root);
        if t.is_finite() {
            t
        } else {
            self.len
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn ramps_in_straight_lines_from_the_starting_rate() {
        let st = parse_stages("10s:1k,30s:10k,10s:0").unwrap();
        assert_eq!(st.total(), secs(50.0));
        assert_eq!(st.rate_at(0.0, secs(0.0)), 0.0);
        assert_eq!(st.rate_at(0.0, secs(5.0)), 500.0);
        assert_eq!(st.rate_at(0.0, secs(10.0)), 1000.0);
        assert_eq!(st.rate_at(0.0, secs(25.0)), 5500.0);
        assert_eq!(st.rate_at(0.0, secs(45.0)), 5000.0);
        assert_eq!(st.rate_at(0.0, secs(60.0)), 0.0);
        // From --rate 200: the first ramp starts there.
        assert_eq!(st.rate_at(200.0, secs(5.0)), 600.0);
        // The ops due: 5 000 over the first ramp, 165 000 over the second,
        // 50 000 over the last; none after the end.
        assert_eq!(st.integral(0.0, secs(10.0)), 5_000.0);
        assert_eq!(st.integral(0.0, secs(40.0)), 170_000.0);
        assert_eq!(st.integral(0.0, secs(60.0)), 220_000.0);
        assert_eq!(st.time_of(0.0, 5_000.0), Some(secs(10.0)));
        assert_eq!(st.time_of(0.0, 220_001.0), None);
        // The highest rate between two times: a corner inside, or an end.
        assert_eq!(st.max_between(0.0, secs(5.0), secs(45.0)), 10_000.0);
        assert_eq!(st.max_between(0.0, secs(1.0), secs(2.0)), 200.0);
        assert_eq!(st.max_between(0.0, secs(46.0), secs(48.0)), 4_000.0);
    }

    #[test]
    fn a_zero_length_stage_is_a_step() {
        let st = parse_stages("0s:100,1s:100").unwrap();
        assert_eq!(st.rate_at(1.0, secs(0.0)), 100.0);
    }

    #[test]
    fn drive_follows_the_ramp_on_a_virtual_clock() {
        let st = parse_stages("1s:1k,1s:1k").unwrap();
        let now = Cell::new(Duration::ZERO);
        let mut set = Vec::new();
        let changes = st.drive(
            &|at| st.rate_at(0.0, at).max(1.0),
            &|| now.get(),
            &|d| {
                now.set(now.get() + d);
                false
            },
            |r| set.push(r),
        );
        // 0.1 s steps up the first ramp, then flat: no change on the flat.
        assert_eq!(changes as usize, set.len());
        assert_eq!(set.len(), 11, "{set:?}");
        assert_eq!(set[0], 1.0, "the floor, a thousandth of 1k");
        assert!((set[5] - 500.0).abs() < 1e-6, "{set:?}");
        assert_eq!(*set.last().unwrap(), 1000.0);
        assert_eq!(now.get(), secs(2.0));
    }

    #[test]
    fn drive_stops_when_told() {
        let st = parse_stages("10s:1k").unwrap();
        let now = Cell::new(Duration::ZERO);
        let calls = Cell::new(0);
        st.drive(
            &|at| st.rate_at(0.0, at).max(1.0),
            &|| now.get(),
            &|d| {
                now.set(now.get() + d);
                calls.set(calls.get() + 1);
                calls.get() == 3
            },
            |_| {},
        );
        assert_eq!(now.get(), secs(0.3));
    }

    #[test]
    fn bad_stages_say_what_would_be_accepted() {
        for (text, says) in [
            ("10s", "DURATION:RATE"),
            ("ten:1k", "not a duration"),
            ("10s:fast", "not a rate"),
            ("10s:-5", "0 or more"),
            ("0s:5", "lasts no time"),
            ("10s:1m", "ambiguous"),
            ("2y:5", "longer than a year"),
        ] {
            let e = parse_stages(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_stages(&s);
        }

        /// The time the integral reaches a number of ops is its inverse.
        #[test]
        fn time_of_inverts_the_integral(
            start in 0.0..1e4f64,
            rates in proptest::collection::vec(0.0..1e4f64, 1..4),
            share in 0.0..1.0f64,
        ) {
            let st = Stages(rates.iter().map(|&target| Stage { duration: secs(1.5), target }).collect());
            let whole = st.integral(start, st.total());
            let ops = whole * share;
            if let Some(at) = st.time_of(start, ops) {
                let back = st.integral(start, at);
                prop_assert!((back - ops).abs() <= 1e-6 * whole.max(1.0), "{back} vs {ops}");
            } else {
                prop_assert!(whole == 0.0, "{ops} of {whole}");
            }
        }

        /// The ramp never leaves the range of its end points.
        #[test]
        fn ramps_stay_between_their_ends(a in 0.0..1e6f64, b in 0.0..1e6f64, t in 0.0..2.0f64) {
            let st = Stages(vec![Stage { duration: secs(1.0), target: b }]);
            let r = st.rate_at(a, secs(t));
            prop_assert!(r >= a.min(b) - 1e-6 && r <= a.max(b) + 1e-6);
        }
    }
}
