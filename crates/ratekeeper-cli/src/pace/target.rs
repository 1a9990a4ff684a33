//! The rate a `pace` run aims at: `--rate`'s, summed over the limiters, or
//! with `--stages` the rates they set on each limiter over the run (see
//! [`ramp`](crate::run::ramp): the target over a span is the mean rate the
//! limiters were asked for over it).

use std::time::Duration;

use crate::run::ramp::{DueSoFar, Ramp};

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
    /// With `--stages`: the ramp every limiter follows, from `--rate`'s
    /// rate (per limiter).
    pub(super) ramp: Option<&'a Ramp>,
}

impl<'a> Target<'a> {
    /// The target rate over the first `span_ns` of the run: the rate, or
    /// with `--stages` the mean rate they set over it, summed over the
    /// limiters (the rate they set at the start, for no span).
    pub(super) fn over(&self, span_ns: u64) -> f64 {
        match self.ramp {
            Some(r) => r.target_rate(span_ns) * f64::from(self.limiters),
            None => self.rate,
        }
    }

    /// The rate `at_ns` into the run, summed over the limiters: with
    /// `--stages` the one set then.
    pub(super) fn at(&self, at_ns: u64) -> f64 {
        match self.ramp {
            Some(r) => r.rate_at_nanos(at_ns) * f64::from(self.limiters),
            None => self.rate,
        }
    }

    /// The target, as [`over`](Self::over), for spans that only grow: a
    /// check made often while the run goes on.
    pub(super) fn so_far(&self) -> TargetSoFar<'a> {
        TargetSoFar {
            target: *self,
            due: self.ramp.map(DueSoFar::new),
        }
    }
}

/// [`Target::over`] for spans that only grow: with `--stages` the ops due
/// are summed a step at a time as the span grows ([`DueSoFar`]), not from
/// the start at every check.
#[derive(Debug, Clone)]
pub(super) struct TargetSoFar<'a> {
    target: Target<'a>,
    due: Option<DueSoFar<'a>>,
}

impl TargetSoFar<'_> {
    /// [`Target::over`] the first `span_ns` of the run.
    pub(super) fn over(&mut self, span_ns: u64) -> f64 {
        match &mut self.due {
            Some(due) if span_ns > 0 => {
                let ops = due.runs_due(Duration::from_nanos(span_ns));
                ops * 1e9 / span_ns as f64 * f64::from(self.target.limiters)
            }
            _ => self.target.over(span_ns),
        }
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
        // 5 up to 40 over 1 s, then 40 for 1 s, on each of 2 limiters.
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
        assert!((staged.over(2 * s) - 2.0 * 30.375).abs() < 1e-9);
        assert_eq!(staged.over(0), 10.0);
        assert_eq!(staged.at(s + 1), 80.0);
        let mut so_far = staged.so_far();
        for span in [0, 1, s / 3, s, 2 * s] {
            assert_eq!(so_far.over(span), staged.over(span), "{span}");
        }
        assert_eq!(plain.so_far().over(s), 2000.0);
    }
}
