//! The live progress line of `pace` and `exec`, on standard error when it is
//! a terminal: elapsed time, ops so far and the current rate.
//!
//! A thread of its own reads the run's counters every
//! [`REFRESH`] and redraws the line (indicatif); the run's threads only keep
//! their counters. The line is cleared when the run ends, before the report.
//! When standard error is not a terminal there is no thread and no output.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::fmt_rate;

/// How often the line is redrawn.
pub const REFRESH: Duration = Duration::from_millis(200);

/// The current rate is measured over about this much of the recent past.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// Whether a progress line would be shown: standard error is a terminal.
pub fn enabled() -> bool {
    std::io::stderr().is_terminal()
}

/// What the run has done so far, as its progress line shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Ops (or runs started) so far; the current rate is measured on it.
    pub ops: u64,
    /// More to show after the rate, e.g. `2 running, 1 failed`.
    pub detail: String,
}

/// The current rate from samples of a growing count over time (also
/// `pipe`'s own progress line).
#[derive(Debug, Default)]
pub struct RateMeter {
    samples: VecDeque<(Instant, u64)>,
}

impl RateMeter {
    /// Adds a sample and returns the rate over the samples of the last
    /// [`RATE_WINDOW`] (ops per second); `None` until two samples span time.
    pub fn sample(&mut self, at: Instant, ops: u64) -> Option<f64> {
        self.samples.push_back((at, ops));
        while self.samples.len() > 2
            && self
                .samples
                .get(1)
                .is_some_and(|&(t, _)| at.duration_since(t) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        let &(t0, n0) = self.samples.front()?;
        let span = at.duration_since(t0).as_secs_f64();
        (span > 0.0).then(|| ops.saturating_sub(n0) as f64 / span)
    }
}

/// The line of a run in progress; dropping it (or [`finish`](Self::finish))
/// stops the drawing thread and clears the line.
#[derive(Debug)]
pub struct Progress {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a progress line if standard error is a terminal: every
    /// [`REFRESH`], `read` is called for the run's counters. `what` names the
    /// ops (`ops`, `runs`) and `target` is the rate aimed at. `None` (and no
    /// thread) when standard error is not a terminal, or the thread cannot
    /// be started.
    pub fn start(
        what: &'static str,
        target: f64,
        read: impl Fn() -> Snapshot + Send + 'static,
    ) -> Option<Progress> {
        if !enabled() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        // Cannot fail: the template is a valid constant.
        if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} {msg}") {
            bar.set_style(style);
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("progress".to_owned())
            .spawn(move || {
                let mut meter = RateMeter::default();
                loop {
                    let s = read();
                    let now = match meter.sample(Instant::now(), s.ops) {
                        Some(r) => fmt_rate(r),
                        None => "-".to_owned(),
                    };
                    let detail = if s.detail.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", s.detail)
                    };
                    bar.set_message(format!(
                        "{} {what}{detail}, now {now} (target {})",
                        s.ops,
                        fmt_rate(target)
                    ));
                    match stopped.recv_timeout(REFRESH) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => break,
                    }
                }
                bar.finish_and_clear();
            })
            .ok()?;
        Some(Progress {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the line and clears it.
    pub fn finish(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Formats the progress line's detail from `(count, label)` pairs, leaving
/// out zero counts: `2 running, 1 failed`.
pub fn detail(parts: &[(u64, &str)]) -> String {
    parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, label)| format!("{n} {label}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_measured_over_the_last_second() {
        let mut m = RateMeter::default();
        let t = Instant::now();
        assert_eq!(m.sample(t, 0), None);
        assert_eq!(m.sample(t + Duration::from_millis(500), 50), Some(100.0));
        assert_eq!(m.sample(t + Duration::from_secs(1), 100), Some(100.0));
        // The first samples age out: only the last second counts.
        assert_eq!(m.sample(t + Duration::from_millis(1500), 100), Some(50.0));
        assert_eq!(m.sample(t + Duration::from_millis(2500), 100), Some(0.0));
        assert!(m.samples.len() <= 3);
    }

    #[test]
    fn detail_leaves_out_zero_counts() {
        assert_eq!(detail(&[(2, "running"), (0, "failed")]), "2 running");
        assert_eq!(detail(&[(0, "running")]), "");
    }
}
