//! What every subcommand shares for reporting: a wait-time recorder and its
//! percentile summary, human-readable formatting, CPU time, and writing a
//! report to stdout as text or JSON.

use std::fmt::Display;
use std::io::{self, Write};
use std::time::Duration;

use anyhow::Context;
use hdrhistogram::Histogram;
use ratekeeper::smooth::Resolution;
use serde::Serialize;

/// The version of the JSON reports' schema (their `schema` field; see
/// `docs/json.md`): raised when a field is renamed, dropped or changes
/// meaning, not when one is added.
pub const SCHEMA: u32 = 1;

/// The largest wait a recorder tells apart: one hour. Longer waits are
/// recorded as one hour in the histogram (the exact maximum is kept aside).
const HIGHEST_TRACKABLE_NANOS: u64 = 3_600 * 1_000_000_000;

/// Significant decimal digits the histogram keeps: values are exact to 0.1 %.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Wait times of one or more threads' operations, in nanoseconds.
///
/// Each worker thread keeps its own recorder (no sharing on the hot path); the
/// recorders are merged when the run ends.
#[derive(Debug, Clone)]
pub struct WaitRecorder {
    hist: Histogram<u64>,
    max: u64,
    sum: u128,
}

impl WaitRecorder {
    /// An empty recorder.
    pub fn new() -> WaitRecorder {
        WaitRecorder {
            // Cannot fail: the bounds and precision are valid constants.
            hist: Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NANOS, SIGNIFICANT_DIGITS)
                .expect("valid histogram bounds"),
            max: 0,
            sum: 0,
        }
    }

    /// Records one operation's wait.
    #[inline]
    pub fn record(&mut self, wait_nanos: u64) {
        self.hist.saturating_record(wait_nanos);
        self.max = self.max.max(wait_nanos);
        self.sum += u128::from(wait_nanos);
    }

    /// Adds another recorder's operations to this one.
    pub fn merge(&mut self, other: &WaitRecorder) {
        // Cannot fail: both histograms have the same bounds and precision.
        self.hist
            .add(&other.hist)
            .expect("histograms with equal bounds");
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// Operations recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The histogram of what was recorded (for `--hdr-out`).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The `percentile` (0 to 100) of what was recorded, not above the
    /// exact maximum (as [`summary`](Self::summary)'s); 0 when nothing was.
    pub fn percentile(&self, percentile: f64) -> u64 {
        if self.count() == 0 {
            return 0;
        }
        self.hist
            .value_at_quantile(percentile / 100.0)
            .min(self.max)
    }

    /// Percentiles, mean and exact maximum. All zero when nothing was recorded.
    pub fn summary(&self) -> WaitSummary {
        if self.count() == 0 {
            return WaitSummary::default();
        }
        // The histogram reports the highest value equivalent to a bucket, up to
        // 0.1 % above what was recorded; never report a percentile above the
        // exact maximum.
        let q = |quantile: f64| self.hist.value_at_quantile(quantile).min(self.max);
        WaitSummary {
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: self.max,
            mean: u64::try_from(self.sum / u128::from(self.count())).unwrap_or(u64::MAX),
        }
    }
}

impl Default for WaitRecorder {
    fn default() -> Self {
        WaitRecorder::new()
    }
}

/// Wait-time percentiles in nanoseconds (JSON: the `wait_ns` object).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WaitSummary {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// The exact maximum.
    pub max: u64,
    /// The exact mean, rounded down.
    pub mean: u64,
}

/// Formats nanoseconds with three significant digits and a unit:
/// `850ns`, `12.3µs`, `1.23ms`, `5.00s`.
pub fn fmt_nanos(nanos: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs")];
    for (scale, unit) in UNITS {
        // 999_999 ns rounds to 1.00ms, not 1000µs.
        if nanos as f64 >= scale as f64 * 0.9995 {
            let v = nanos as f64 / scale as f64;
            return format!("{}{unit}", three_digits(v));
        }
    }
    format!("{nanos}ns")
}

/// A number with three significant digits (more left of the point if needed).
pub fn three_digits(v: f64) -> String {
    // Round first, so 9.996 prints as 10.0 and not 10.00.
    if v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Formats nanoseconds as one word that a duration flag (and the arrival
/// grammar's duration words) read back: `0s`, `50ms`, `1m30s`, `1s 500ms`
/// written `1s500ms`.
pub fn fmt_duration(nanos: u64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    humantime::format_duration(Duration::from_nanos(nanos))
        .to_string()
        .replace(' ', "")
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (584 years).
pub fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `count` ops over `span_ns` nanoseconds as ops per second; 0 for an empty
/// span.
pub fn per_second(count: u64, span_ns: u64) -> f64 {
    if span_ns == 0 {
        0.0
    } else {
        count as f64 * 1e9 / span_ns as f64
    }
}

/// Formats a rate in operations per second, its whole part in groups of
/// three digits: `10,000 ops/s`, `9,987.3 ops/s`, `0.6667 ops/s`.
pub fn fmt_rate(ops_per_second: f64) -> String {
    let digits = if ops_per_second.fract() == 0.0 && ops_per_second.abs() < 1e15 {
        format!("{ops_per_second:.0}")
    } else if ops_per_second >= 100.0 {
        format!("{ops_per_second:.1}")
    } else {
        format!("{ops_per_second:.4}")
    };
    format!("{} ops/s", group_thousands(&digits))
}

/// A count in groups of three digits: `1,234,567`.
pub fn fmt_count(n: u64) -> String {
    group_thousands(&n.to_string())
}

/// Any number as Rust displays it (integers of any width, or an `f64`,
/// which Rust writes without an exponent), its whole part in groups of
/// three digits: `-1,500`, `2,000`, `0.5`. For settings echoed in a report
/// (permits, capacities), whose values are kept as given.
pub fn fmt_number(n: impl Display) -> String {
    group_thousands(&n.to_string())
}

/// A decimal number (as Rust prints it, no exponent) with its whole part in
/// groups of three digits, separated by commas.
fn group_thousands(digits: &str) -> String {
    let (sign, rest) = match digits.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", digits),
    };
    let (whole, frac) = match rest.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (rest, None),
    };
    if !whole.bytes().all(|b| b.is_ascii_digit()) {
        return digits.to_owned(); // inf, NaN: as they are
    }
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// How far a run's effective rate may be from its target, relatively,
/// before the CLI warns: 0.1 %.
pub const EFFECTIVE_RATE_TOLERANCE: f64 = 1e-3;

/// The rate a run's limiters actually give, by their integer arithmetic
/// (the library's `effective_rate()`, summed over the run's limiters), and
/// how that arithmetic rounds one op, for the warning.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveRate {
    /// Ops per second; `f64::INFINITY` for limiters that do not limit.
    pub rate: f64,
    /// How one op's interval is rounded, e.g. "one op's slot is floor(1e9 /
    /// rate) = 1 ns".
    pub arithmetic: String,
}

impl EffectiveRate {
    /// Pacers at `effective` ops/s in all, whose slot for one `op` (what a
    /// permit counts: "op", "run", "line", "byte") is `slot` ns.
    pub fn pacer(effective: f64, slot: u64, op: &str) -> EffectiveRate {
        EffectiveRate {
            rate: effective,
            arithmetic: format!("one {op}'s slot is floor(1e9 / rate) = {slot} ns"),
        }
    }

    /// A pacer of `shards` shards at `effective` ops/s in all.
    pub fn sharded(effective: f64, shards: usize) -> EffectiveRate {
        // effective = shards × 1e9 / slot, so this is the slot exactly.
        let slot = (1e9 * shards as f64 / effective).round();
        EffectiveRate {
            rate: effective,
            arithmetic: format!("each shard's slot is floor(1e9 x {shards} / rate) = {slot} ns"),
        }
    }

    /// Token pools at `effective` ops/s in all, one `op` taking `tokens`
    /// ns.
    pub fn pool(effective: f64, tokens: u64, op: &str) -> EffectiveRate {
        EffectiveRate {
            rate: effective,
            arithmetic: format!("one {op} takes floor(1e9 / rate) = {tokens} ns of tokens"),
        }
    }

    /// Guava limiters at `effective` ops/s in all, each at `per_limiter`,
    /// keeping their schedule in `res`.
    pub fn smooth(effective: f64, per_limiter: f64, res: Resolution) -> EffectiveRate {
        let (units, unit, whole) = match res {
            Resolution::Micros => (1e6, "µs", "Guava's whole microseconds"),
            Resolution::Nanos => (1e9, "ns", "whole nanoseconds"),
        };
        // per_limiter = units / charge, or +∞ for a charge of 0.
        let charge = if per_limiter.is_finite() {
            (units / per_limiter).round()
        } else {
            0.0
        };
        EffectiveRate {
            rate: effective,
            arithmetic: format!(
                "one permit is charged {whole}, floor({units:e} / rate) = {charge} {unit}"
            ),
        }
    }

    /// Refill limiters at `effective` ops/s in all, refilling a permit
    /// every `npp` ns.
    pub fn refill(effective: f64, npp: u64) -> EffectiveRate {
        EffectiveRate {
            rate: effective,
            arithmetic: format!("one permit refills in floor(refresh period / limit) = {npp} ns"),
        }
    }

    /// Cycle limiters at `effective` ops/s in all (no interval is rounded).
    pub fn cycle(effective: f64) -> EffectiveRate {
        EffectiveRate {
            rate: effective,
            arithmetic: "limit for period / refresh period".to_owned(),
        }
    }

    /// The rate for a JSON report: `None` (null) for limiters that do not
    /// limit at all.
    pub fn json(&self) -> Option<f64> {
        self.rate.is_finite().then_some(self.rate)
    }

    /// Whether the rate differs from `target` by more than
    /// [`EFFECTIVE_RATE_TOLERANCE`] (always, when it is unlimited).
    pub fn is_off(&self, target: f64) -> bool {
        let off = (self.rate / target - 1.0).abs();
        off.is_nan() || off > EFFECTIVE_RATE_TOLERANCE
    }

    /// What a text report says after the rate, when it is off `target`:
    /// `(+96.08 % over the target: ARITHMETIC)`; empty otherwise.
    pub fn note(&self, target: f64) -> Option<String> {
        if !self.is_off(target) {
            None
        } else if self.rate.is_finite() {
            let pct = (self.rate / target - 1.0) * 100.0;
            let side = if pct >= 0.0 { "over" } else { "under" };
            Some(format!(
                "{pct:+.2} % {side} the target: {}",
                self.arithmetic
            ))
        } else {
            Some(format!("no limit at all: {}", self.arithmetic))
        }
    }

    /// The warning line (without `warning: `) for `who` (e.g. `--limiter
    /// pacer`), if the rate is off `target`.
    pub fn warning(&self, who: &str, target: f64, unit: &str) -> Option<String> {
        if !self.is_off(target) {
            None
        } else if self.rate.is_finite() {
            Some(format!(
                "{who} runs at {}, not the target {} ({:+.2} %): {}",
                fmt_unit_rate(self.rate, unit),
                fmt_unit_rate(target, unit),
                (self.rate / target - 1.0) * 100.0,
                self.arithmetic
            ))
        } else {
            Some(format!(
                "{who} does not limit one-permit requests at all (target {}): {}",
                fmt_unit_rate(target, unit),
                self.arithmetic
            ))
        }
    }

    /// Writes the [`warning`](Self::warning), if any, to standard error as
    /// `warning: ...` (before the run, so that it is seen in time).
    pub fn warn(&self, who: &str, target: f64, unit: &str) {
        if let Some(w) = self.warning(who, target, unit) {
            warn(&w);
        }
    }
}

/// The effective rate as a text report shows it: the rate in `unit`s per
/// second (`None`: "unlimited"), then its [`note`](EffectiveRate::note) in
/// parentheses, if any.
pub fn fmt_effective(rate: Option<f64>, note: Option<&str>, unit: &str) -> String {
    let rate = rate.map_or_else(|| "unlimited".to_owned(), |r| fmt_unit_rate(r, unit));
    match note {
        Some(note) => format!("{rate} ({note})"),
        None => rate,
    }
}

/// Writes `warning: MESSAGE` to standard error. A closed standard error
/// leaves nobody to tell, so a failed write is ignored.
pub fn warn(message: &str) {
    let _ = writeln!(io::stderr().lock(), "warning: {message}");
}

/// Writes `wrote PATH` to standard error: where a file a run wrote
/// (`--plot`, `--hdr-out`) went. A failed write is ignored, as
/// [`warn`]'s.
pub fn wrote(path: &std::path::Path) {
    let _ = writeln!(io::stderr().lock(), "wrote {}", path.display());
}

/// A rate in `unit`s per second: `100 lines/s` (`fmt_rate` for "ops").
pub fn fmt_unit_rate(rate: f64, unit: &str) -> String {
    let ops = fmt_rate(rate);
    match unit {
        "ops" => ops,
        _ => ops.replace("ops/s", &format!("{unit}/s")),
    }
}

/// The process's CPU time so far (user + system, all threads), in
/// nanoseconds; `None` where the platform has no per-process CPU clock.
pub fn process_cpu_nanos() -> Option<u64> {
    cpu_clock_nanos(CpuClock::Process)
}

/// The calling thread's CPU time so far (user + system), in nanoseconds;
/// `None` where the platform has no per-thread CPU clock.
pub fn thread_cpu_nanos() -> Option<u64> {
    cpu_clock_nanos(CpuClock::Thread)
}

/// Which CPU-time clock to read.
#[derive(Debug, Clone, Copy)]
enum CpuClock {
    Process,
    Thread,
}

fn cpu_clock_nanos(which: CpuClock) -> Option<u64> {
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "dragonfly"
    ))]
    {
        use rustix::time::{clock_gettime, ClockId};
        let t = clock_gettime(match which {
            CpuClock::Process => ClockId::ProcessCPUTime,
            CpuClock::Thread => ClockId::ThreadCPUTime,
        });
        let secs = u64::try_from(t.tv_sec).ok()?;
        let nanos = u64::try_from(t.tv_nsec).ok()?;
        Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "dragonfly"
    )))]
    {
        let _ = which;
        None
    }
}

/// Writes `report` to stdout: its `Display` text, or one line of JSON.
///
/// # Errors
///
/// An I/O error writing stdout; a closed stdout shows up as
/// [`io::ErrorKind::BrokenPipe`] (see [`is_broken_pipe`]).
pub fn emit<R: Serialize + Display>(report: &R, json: bool) -> anyhow::Result<()> {
    emit_to(&mut io::stdout().lock(), report, json).context("writing the report to stdout")
}

/// Writes `report` to stderr (for a subcommand whose stdout carries data),
/// as [`emit`] does to stdout.
///
/// # Errors
///
/// An I/O error writing stderr.
pub fn emit_stderr<R: Serialize + Display>(report: &R, json: bool) -> anyhow::Result<()> {
    emit_to(&mut io::stderr().lock(), report, json).context("writing the report to stderr")
}

fn emit_to<R: Serialize + Display>(
    out: &mut impl Write,
    report: &R,
    json: bool,
) -> anyhow::Result<()> {
    let text = if json {
        let mut s = serde_json::to_string(report).context("serializing the report")?;
        s.push('\n');
        s
    } else {
        report.to_string()
    };
    out.write_all(text.as_bytes()).and_then(|()| out.flush())?;
    Ok(())
}

/// Whether `err` is, or was caused by, a write to a closed pipe: the reader
/// went away (e.g. `| head -c1`), which is not worth an error message.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The unit of a Guava limiter's schedule, as the JSON reports name it:
/// `"micros"` (Guava's whole microseconds) or `"nanos"`.
///
/// The subcommands build `bursty` and `warmup` limiters with
/// [`Resolution::for_rate`] of each limiter's own rate: Guava's arithmetic at
/// or below 100 000 ops/s, whole nanoseconds above, where whole microseconds
/// would charge a permit up to half too little (and nothing above 1 000 000
/// ops/s, so the limiter would not limit at all).
pub fn resolution_name(res: Resolution) -> &'static str {
    match res {
        Resolution::Micros => "micros",
        Resolution::Nanos => "nanos",
    }
}

/// What a text report adds to a Guava limiter's description for its
/// schedule's unit: nothing for Guava's own microseconds.
pub fn resolution_note(res: Option<&str>) -> &'static str {
    match res {
        Some("nanos") => ", whole-nanosecond schedule",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_grouped_by_thousands() {
        use super::{fmt_count, fmt_rate};
        assert_eq!(fmt_count(0), "0");
        assert_eq!(fmt_count(999), "999");
        assert_eq!(fmt_count(1000), "1,000");
        assert_eq!(fmt_count(1_234_567), "1,234,567");
        assert_eq!(fmt_rate(1e9), "1,000,000,000 ops/s");
        assert_eq!(fmt_rate(9987.25), "9,987.2 ops/s");
        assert_eq!(fmt_rate(2.0 / 3.0), "0.6667 ops/s");
        assert_eq!(fmt_rate(f64::INFINITY), "inf ops/s");
        assert_eq!(super::fmt_number(-1500i64), "-1,500");
        assert_eq!(super::fmt_number(2000.0), "2,000");
        assert_eq!(super::fmt_number(1234.5), "1,234.5");
    }

    use super::*;

    #[test]
    fn nanos_are_formatted_with_three_digits() {
        assert_eq!(fmt_nanos(0), "0ns");
        assert_eq!(fmt_nanos(850), "850ns");
        assert_eq!(fmt_nanos(1_000), "1.00µs");
        assert_eq!(fmt_nanos(12_345), "12.3µs");
        assert_eq!(fmt_nanos(123_456), "123µs");
        assert_eq!(fmt_nanos(999_999), "1.00ms");
        assert_eq!(fmt_nanos(999), "999ns");
        assert_eq!(fmt_nanos(1_234_567), "1.23ms");
        assert_eq!(fmt_nanos(9_996_000), "10.0ms");
        assert_eq!(fmt_nanos(5_000_000_000), "5.00s");
        assert_eq!(fmt_nanos(300_000_000_000), "300s");
    }

    #[test]
    fn rates_are_formatted() {
        assert_eq!(fmt_rate(10_000.0), "10,000 ops/s");
        assert_eq!(fmt_rate(9_987.34), "9,987.3 ops/s");
        assert_eq!(fmt_rate(0.5), "0.5000 ops/s");
    }

    #[test]
    fn effective_rates_warn_beyond_a_tenth_of_a_percent() {
        let truncated = EffectiveRate::pacer(1e9, 1, "op");
        assert!(truncated.is_off(510e6));
        assert_eq!(truncated.json(), Some(1e9));
        assert_eq!(
            truncated.note(510e6).as_deref(),
            Some("+96.08 % over the target: one op's slot is floor(1e9 / rate) = 1 ns")
        );
        assert_eq!(
            truncated.warning("pipe", 510e6, "lines").as_deref(),
            Some(
                "pipe runs at 1,000,000,000 lines/s, not the target 510,000,000 lines/s (+96.08 %): \
                 one op's slot is floor(1e9 / rate) = 1 ns"
            )
        );
        assert_eq!(
            fmt_effective(truncated.json(), truncated.note(510e6).as_deref(), "ops"),
            "1,000,000,000 ops/s (+96.08 % over the target: one op's slot is floor(1e9 / rate) \
             = 1 ns)"
        );
        // 0.1 % exactly is within; just above is not.
        let near = EffectiveRate::cycle(1001.0);
        assert!(!near.is_off(1000.0) && near.note(1000.0).is_none());
        assert!(near.warning("x", 1000.0, "ops").is_none());
        assert!(EffectiveRate::cycle(1001.01).is_off(1000.0));
        // Guava's microseconds charging nothing: no limit, null in JSON.
        let free = EffectiveRate::smooth(f64::INFINITY, f64::INFINITY, Resolution::Micros);
        assert!(free.is_off(2e6));
        assert_eq!(free.json(), None);
        assert_eq!(
            free.warning("--limiter bursty", 2e6, "ops").as_deref(),
            Some(
                "--limiter bursty does not limit one-permit requests at all (target 2,000,000 \
                 ops/s): one permit is charged Guava's whole microseconds, floor(1e6 / rate) \
                 = 0 µs"
            )
        );
        assert_eq!(
            fmt_effective(free.json(), free.note(2e6).as_deref(), "ops"),
            "unlimited (no limit at all: one permit is charged Guava's whole microseconds, \
             floor(1e6 / rate) = 0 µs)"
        );
        // The charge is read back from the rate: 3e5/s in µs is 3 µs.
        let smooth = EffectiveRate::smooth(2e6 / 3.0, 1e6 / 3.0, Resolution::Micros);
        assert!(
            smooth.arithmetic.ends_with("= 3 µs"),
            "{}",
            smooth.arithmetic
        );
        let sharded = EffectiveRate::sharded(4.0 * (1e9 / 7.0), 4);
        assert!(
            sharded.arithmetic.ends_with("= 7 ns"),
            "{}",
            sharded.arithmetic
        );
    }

    #[test]
    fn summary_is_ordered_and_capped_at_the_exact_max() {
        let mut a = WaitRecorder::new();
        let mut b = WaitRecorder::new();
        for v in 0..1_000u64 {
            a.record(v * 1_001);
            b.record(v);
        }
        a.merge(&b);
        let s = a.summary();
        assert_eq!(a.count(), 2_000);
        assert!(s.p50 <= s.p90 && s.p90 <= s.p95 && s.p95 <= s.p99);
        assert!(s.p99 <= s.p999 && s.p999 <= s.max);
        // 2,000 values, half of them 0..1000 and half 0..999,999: the
        // 95th percentile is the 1,900th, 899 x 1,001 (to 0.1 %).
        let want = 899.0 * 1_001.0;
        assert!((s.p95 as f64 - want).abs() <= want * 1e-3, "{}", s.p95);
        assert_eq!(s.max, 999 * 1_001);
        assert_eq!(WaitRecorder::new().summary(), WaitSummary::default());
    }

    #[test]
    fn any_percentile_is_read_from_the_histogram_up_to_the_max() {
        let mut r = WaitRecorder::new();
        assert_eq!(r.percentile(50.0), 0);
        for v in 1..=1_000u64 {
            r.record(v * 1_000);
        }
        let p75 = r.percentile(75.0) as f64;
        assert!((p75 - 750_000.0).abs() <= 750.0, "{p75}");
        assert_eq!(r.percentile(100.0), 1_000_000);
        assert_eq!(r.percentile(0.0), 1_000);
    }

    #[test]
    fn waits_past_the_histogram_range_are_kept_as_max() {
        let mut r = WaitRecorder::new();
        r.record(u64::MAX);
        let s = r.summary();
        assert_eq!(s.max, u64::MAX);
        assert!(s.p50 <= s.max);
    }

    #[test]
    fn broken_pipe_is_recognised_through_context() {
        let e = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe)).context("writing");
        assert!(is_broken_pipe(&e));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
    }
}
