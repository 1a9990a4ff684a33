//! The rate a `pace` run aims at: `--rate`'s, summed over the limiters, or
//! with `--stages` their ramp's for each limiter's workers (see
//! [`ramp`](crate::run::ramp): the target over a span is the ops due over
//! it, the integral of the ramp's rate, divided by it).

use std::time::Duration;

use crate::run::ramp::Ramp;

/// The rate a run aims at.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target<'a> {
    /// `--rate`'s rate, summed over the limiters (rate x threads for the
    /// thread scope): where `--stages` start, and what the limiters'
    /// effective rate is checked against.
    pub(super) rate: f64,
    /// How many limiters the workers share (one each for the thread
    /// scope): with `--stages` each follows them.
    pub(super) limiters: u32,
    /// With `--stages`: the ramp the ops of every limiter follow, from
    /// `--rate`'s rate (per limiter) or 0.
    pub(super) ramp: Option<&'a Ramp>,
}

impl<'a> Target<'a> {
    /// The target rate over the first `span_ns` of the run: the rate, or
    /// with `--stages` the ops due over it divided by it, summed over the
    /// limiters (the ramp's rate at the start, for no span).
    pub(super) fn over(&self, span_ns: u64) -> f64 {
        match self.ramp {
            Some(r) => r.target_rate(span_ns) * f64::from(self.limiters),
            None => self.rate,
        }
    }

    /// The rate `at_ns` into the run, summed over the limiters: with
    /// `--stages` the ramp's then, at least its floor (a slot's length
    /// stays finite).
    pub(super) fn at(&self, at_ns: u64) -> f64 {
        match self.ramp {
            Some(r) => r.rate_at_nanos(at_ns).max(r.floor()) * f64::from(self.limiters),
            None => self.rate,
        }
    }

    /// The ops due over the first `span_ns` of the run with `--stages`,
    /// summed over the limiters: the integral of the ramp's rate; `None`
    /// without.
    pub(super) fn ops_due(&self, span_ns: u64) -> Option<f64> {
        self.ramp
            .map(|r| r.ops_due(Duration::from_nanos(span_ns)) * f64::from(self.limiters))
    }

    /// The target, as [`over`](Self::over), for spans that only grow: a
    /// check made often while the run goes on.
    pub(super) fn so_far(&self) -> TargetSoFar<'a> {
        TargetSoFar { target: *self }
    }
}

/// [`Target::over`] for spans that only grow (the integral of a ramp is
/// computed in closed form, a few operations per stage, at every check).
#[derive(Debug, Clone)]
pub(super) struct TargetSoFar<'a> {
    target: Target<'a>,
}

impl TargetSoFar<'_> {
    /// [`Target::over`] the first `span_ns` of the run.
    pub(super) fn over(&mut self, span_ns: u64) -> f64 {
        self.target.over(span_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::ramp::parse_stages_arg;

    #[test]
    fn the_target_is_the_rate_or_the_stages_mean_over_the_limiters() {
        let plain = Target {
            rate: 2000.0,
            limiters: 2,
            ramp: None,
        };
        assert_eq!(plain.over(0), 2000.0);
        assert_eq!(plain.over(5_000_000_000), 2000.0);
        assert_eq!(plain.at(1), 2000.0);
        // 5 up to 40 over 1 s, then 40 for 1 s, on each of 2 limiters:
        // 22.5 + 40 ops due on each.
        let ramp = Ramp {
            arg: parse_stages_arg("1s:40,1s:40").unwrap(),
            start: 5.0,
        };
        let staged = Target {
            rate: 10.0,
            limiters: 2,
            ramp: Some(&ramp),
        };
        let s = 1_000_000_000;
        assert!((staged.over(2 * s) - 2.0 * 31.25).abs() < 1e-9);
        assert!((staged.ops_due(2 * s).unwrap() - 125.0).abs() < 1e-9);
        assert_eq!(plain.ops_due(s), None);
        assert_eq!(staged.over(0), 10.0);
        assert_eq!(staged.at(s + 1), 80.0);
        let mut so_far = staged.so_far();
        for span in [0, 1, s / 3, s, 2 * s] {
            assert_eq!(so_far.over(span), staged.over(span), "{span}");
        }
        assert_eq!(plain.so_far().over(s), 2000.0);
    }
}
