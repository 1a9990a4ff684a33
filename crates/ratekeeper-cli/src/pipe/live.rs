//! `pipe`'s live progress line on standard error, like pv's: elapsed time,
//! what was written (lines, or bytes in binary units), the rate over the
//! last second and the rate asked for (which SIGUSR1/SIGUSR2 change):
//!
//! ```text
//! 0:00:05  12.5 MiB  2.50 MiB/s  (rate 2.00 MiB/s)
//! ```
//!
//! A thread of its own redraws it every [`REFRESH`] (5 times a second) from
//! the [`Gauges`] the copy keeps, writing `\r` and the line (padded over
//! the last one) to standard error; standard output, the data, is never
//! touched. The copy only stores its totals after each write to standard
//! output. When the copy ends the line is drawn a last time and ended with
//! a newline, as pv leaves it. Warnings during the copy go through the same
//! [`Screen`], which clears the line first.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::progress::{RateMeter, REFRESH};
use crate::report::{fmt_unit_rate, three_digits};

/// What the copy has written so far and the rate it runs at, for the line.
#[derive(Debug, Default)]
pub(super) struct Gauges {
    /// Lines and bytes written to standard output.
    lines: AtomicU64,
    bytes: AtomicU64,
    /// The rate now (units per second), as `f64` bits.
    rate: AtomicU64,
}

impl Gauges {
    /// Gauges at `rate` units per second, nothing written.
    pub(super) fn new(rate: f64) -> Gauges {
        let g = Gauges::default();
        g.set_rate(rate);
        g
    }

    /// Records the totals written so far.
    pub(super) fn set_written(&self, lines: u64, bytes: u64) {
        // Ordering: Relaxed; gauges read by the drawing thread, which needs
        // no other data to be visible with them.
        self.lines.store(lines, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    /// Records a new rate.
    pub(super) fn set_rate(&self, rate: f64) {
        // Ordering: Relaxed; a gauge, as above.
        self.rate.store(rate.to_bits(), Ordering::Relaxed);
    }

    fn read(&self) -> (u64, u64, f64) {
        // Ordering: Relaxed; gauges (a line may pair totals from two
        // successive writes: it is redrawn a fifth of a second later).
        (
            self.lines.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            f64::from_bits(self.rate.load(Ordering::Relaxed)),
        )
    }
}

/// Standard error as the line and the warnings share it: how wide the line
/// on it is now (0: none is shown).
#[derive(Debug, Default)]
pub(super) struct Screen {
    shown: Mutex<usize>,
}

impl Screen {
    /// Writes `warning: MESSAGE` on a line of its own, clearing the
    /// progress line first if one is shown (it is redrawn at the next
    /// refresh). A closed standard error is ignored.
    pub(super) fn warn(&self, message: &str) {
        let mut shown = self.shown.lock().unwrap_or_else(PoisonError::into_inner);
        let clear = blank(*shown);
        let _ = writeln!(io::stderr().lock(), "{clear}warning: {message}");
        *shown = 0;
    }

    /// Draws `line` over the one shown, and ends it with a newline if
    /// `last`.
    fn draw(&self, line: &str, last: bool) {
        let mut shown = self.shown.lock().unwrap_or_else(PoisonError::into_inner);
        let width = line.chars().count();
        let pad = " ".repeat(shown.saturating_sub(width));
        let end = if last { "\n" } else { "" };
        let mut err = io::stderr().lock();
        let _ = write!(err, "\r{line}{pad}{end}").and_then(|()| err.flush());
        *shown = if last { 0 } else { width };
    }
}

/// `\r`, `width` spaces and `\r`: a line of that width blanked out; empty
/// for none.
fn blank(width: usize) -> String {
    if width == 0 {
        String::new()
    } else {
        format!("\r{}\r", " ".repeat(width))
    }
}

/// The progress line's thread; [`finish`](Self::finish) (or dropping it)
/// draws the last line and stops it.
#[derive(Debug)]
pub(super) struct LiveLine {
    /// Closed or sent the copy's average rate: the thread draws the last
    /// line and ends.
    stop: Option<mpsc::Sender<f64>>,
    thread: Option<JoinHandle<()>>,
}

impl LiveLine {
    /// Starts drawing the line of a copy in `unit`s (`lines` or `bytes`)
    /// from `gauges` on `screen`. `None` if the thread cannot be started
    /// (the copy goes on without it).
    pub(super) fn start(
        unit: &'static str,
        gauges: Arc<Gauges>,
        screen: Arc<Screen>,
    ) -> Option<LiveLine> {
        let (stop, stopped) = mpsc::channel::<f64>();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("progress".to_owned())
            .spawn(move || {
                let read = || {
                    let (lines, bytes, rate) = gauges.read();
                    (if unit == "bytes" { bytes } else { lines }, rate)
                };
                let mut meter = RateMeter::default();
                let last = loop {
                    let (count, rate) = read();
                    let recent = meter.sample(Instant::now(), count);
                    screen.draw(
                        &fmt_line(started.elapsed(), count, recent, rate, unit),
                        false,
                    );
                    match stopped.recv_timeout(REFRESH) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(average) => break Some(average),
                        Err(RecvTimeoutError::Disconnected) => break recent,
                    }
                };
                let (count, rate) = read();
                screen.draw(&fmt_line(started.elapsed(), count, last, rate, unit), true);
            })
            .ok()?;
        Some(LiveLine {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Draws the line a last time, with the copy's `average` rate (the
    /// report's achieved rate), ends it with a newline and stops the
    /// thread.
    pub(super) fn finish(mut self, average: f64) {
        if let Some(stop) = &self.stop {
            let _ = stop.send(average);
        }
        self.stop_now();
    }

    fn stop_now(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LiveLine {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// The progress line: `elapsed`, `count` units written, the `recent` rate
/// (`-` before there is one) and the `rate` asked for.
pub(super) fn fmt_line(
    elapsed: Duration,
    count: u64,
    recent: Option<f64>,
    rate: f64,
    unit: &str,
) -> String {
    let secs = elapsed.as_secs();
    let clock = format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    let (done, recent, rate) = if unit == "bytes" {
        (
            fmt_bytes(count as f64),
            recent.map_or_else(|| "-".to_owned(), |r| format!("{}/s", fmt_bytes(r))),
            format!("{}/s", fmt_bytes(rate)),
        )
    } else {
        (
            format!("{count} {unit}"),
            recent.map_or_else(
                || "-".to_owned(),
                |r| format!("{} {unit}/s", three_digits(r)),
            ),
            fmt_unit_rate(rate, unit),
        )
    };
    format!("{clock}  {done}  {recent}  (rate {rate})")
}

/// Bytes in binary units with three significant digits: `512 B`,
/// `1.50 KiB`, `12.5 MiB`, `1.00 GiB`.
pub(super) fn fmt_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1023.5 {
        return format!("{bytes:.0} B");
    }
    let mut v = bytes / 1024.0;
    for unit in &UNITS[..UNITS.len() - 1] {
        // 1023.9 KiB shows as 1.00 MiB, not 1024 KiB.
        if v < 1023.5 {
            return format!("{} {unit}", three_digits(v));
        }
        v /= 1024.0;
    }
    format!("{} {}", three_digits(v), UNITS[UNITS.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_in_binary_units() {
        assert_eq!(fmt_bytes(0.0), "0 B");
        assert_eq!(fmt_bytes(512.0), "512 B");
        assert_eq!(fmt_bytes(1536.0), "1.50 KiB");
        assert_eq!(fmt_bytes(12.5 * 1048576.0), "12.5 MiB");
        assert_eq!(fmt_bytes(100.0 * 1048576.0), "100 MiB");
        assert_eq!(fmt_bytes(1023.9 * 1024.0), "1.00 MiB");
        assert_eq!(fmt_bytes(1073741824.0), "1.00 GiB");
    }

    #[test]
    fn the_line_shows_elapsed_count_and_rates() {
        let mib = 1048576.0;
        assert_eq!(
            fmt_line(
                Duration::from_millis(5_300),
                12 * 1048576 + 524288,
                Some(2.5 * mib),
                2.0 * mib,
                "bytes"
            ),
            "0:00:05  12.5 MiB  2.50 MiB/s  (rate 2.00 MiB/s)"
        );
        assert_eq!(
            fmt_line(Duration::from_secs(3725), 1234, Some(99.84), 100.0, "lines"),
            "1:02:05  1234 lines  99.8 lines/s  (rate 100 lines/s)"
        );
        assert_eq!(
            fmt_line(Duration::ZERO, 0, None, 2.5, "lines"),
            "0:00:00  0 lines  -  (rate 2.5000 lines/s)"
        );
    }

    #[test]
    fn a_warning_clears_the_line_first() {
        assert_eq!(blank(0), "");
        assert_eq!(blank(3), "\r   \r");
    }
}
