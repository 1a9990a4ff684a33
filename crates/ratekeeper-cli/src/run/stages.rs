//! `--stages`: a load shape, as k6's ramping stages, applied to a running
//! limiter through its runtime rate change.
//!
//! `--stages 10s:1k,30s:10k,10s:0` is three stages: over 10 s the rate
//! ramps in a straight line from `--rate` to 1 000/s, over the next 30 s to
//! 10 000/s, over the last 10 s down to 0. The run lasts the stages' total.
//! A rate is changed on the running limiter
//! ([`LimiterRef::set_rate`](ratekeeper::config::LimiterRef::set_rate)) at
//! most every [`STEP`], and when the ramp moved it by more than
//! [`MIN_CHANGE`]: no restart, and what the limiter has already granted
//! stands (a Pacer checkpoints its backlog once and never moves its schedule
//! earlier), so no wait is counted twice.
//!
//! A rate of 0 cannot be kept (no schedule has a slot for it), and a slot
//! granted at a very low rate keeps its time when the rate rises again. So
//! the slowest a stage paces at is [`FLOOR_SHARE`] of the highest rate of
//! the run: `10s:0` after `10k` ends at 10/s, whose ops wait at most 100 ms
//! once the next stage ramps up.

use std::time::Duration;

use crate::flags::rate::{parse_rate, Counting};

/// How often the rate follows the ramp.
pub const STEP: Duration = Duration::from_millis(100);

/// The smallest relative change worth a rate change (0.5 %).
pub const MIN_CHANGE: f64 = 0.005;

/// The slowest rate a run is paced at, as a share of its highest.
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
    /// How long the run lasts: the stages' total.
    pub fn total(&self) -> Duration {
        self.0.iter().map(|s| s.duration).sum()
    }

    /// The highest rate of a run starting at `start`.
    pub fn peak(&self, start: f64) -> f64 {
        self.0.iter().map(|s| s.target).fold(start, f64::max)
    }

    /// The ramp's rate `at` into a run starting at `start` per second
    /// (before the floor); the last stage's target after the end.
    pub fn rate_at(&self, start: f64, at: Duration) -> f64 {
        let mut from = start;
        let mut begun = Duration::ZERO;
        for s in &self.0 {
            let end = begun + s.duration;
            if at < end {
                let t = (at - begun).as_secs_f64() / s.duration.as_secs_f64();
                return from + (s.target - from) * t;
            }
            from = s.target;
            begun = end;
        }
        from
    }

    /// The rate to set `at` into the run: the ramp, at least the floor.
    pub fn paced_rate_at(&self, start: f64, at: Duration) -> f64 {
        self.rate_at(start, at).max(self.peak(start) * FLOOR_SHARE)
    }

    /// Follows the ramp until the stages end or `sleep` says to stop:
    /// `set(rate)` whenever the paced rate moved by more than
    /// [`MIN_CHANGE`] since the last one set (the first is always set).
    /// `elapsed` reads the time into the run; `sleep` sleeps up to the
    /// given time and returns whether to stop. Returns the rate changes made.
    pub fn drive(
        &self,
        start: f64,
        elapsed: &dyn Fn() -> Duration,
        sleep: &dyn Fn(Duration) -> bool,
        mut set: impl FnMut(f64),
    ) -> u64 {
        let total = self.total();
        let mut last: Option<f64> = None;
        let mut changes = 0;
        loop {
            let now = elapsed();
            let rate = self.paced_rate_at(start, now.min(total));
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
        // The floor: a thousandth of the peak.
        assert_eq!(st.paced_rate_at(0.0, secs(50.0)), 10.0);
        // From --rate 200: the first ramp starts there.
        assert_eq!(st.rate_at(200.0, secs(5.0)), 600.0);
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
            0.0,
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
            0.0,
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

        /// The ramp never leaves the range of its end points.
        #[test]
        fn ramps_stay_between_their_ends(a in 0.0..1e6f64, b in 0.0..1e6f64, t in 0.0..2.0f64) {
            let st = Stages(vec![Stage { duration: secs(1.0), target: b }]);
            let r = st.rate_at(a, secs(t));
            prop_assert!(r >= a.min(b) - 1e-6 && r <= a.max(b) + 1e-6);
        }
    }
}
