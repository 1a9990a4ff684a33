//! `ratekeeper pipe`: copy standard input to standard output at a rate, by
//! lines or by bytes, like `pv -L`.
//!
//! One thread reads standard input in blocks (see [`input`]: after a
//! `poll`, so that Ctrl-C still ends a copy whose input has nothing to
//! read), cuts them into lines (or chunks of bytes), takes a permit for
//! each from a [`Pacer`], and writes. Output is batched while permits are
//! ready at once and written out (flushed) before any wait, for a permit or
//! for input, so nothing sits in a buffer while the pipe is idle.
//!
//! `run` gathers: it checks the options, builds the Pacer, opens the input
//! ([`input`]) and the progress line ([`live`]) and runs the [`copy`] loop,
//! which reserves through the [`schedule`] (which also makes the rate
//! changes SIGUSR1 and SIGUSR2 ask for) and writes through [`output`];
//! [`summary`] computes the report from what the copy measured and
//! [`render`] prints it.

mod copy;
mod help;
mod input;
mod live;
mod output;
mod render;
mod schedule;
mod summary;

use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use ratekeeper::config::{KindConfig, LimiterConfig};
use ratekeeper::pacer::Strictness;
use ratekeeper::{BurstRatio, DefaultClock, Pacer, Rate, RateSpec, Scope};

use crate::error::UsageError;
use crate::flags::parse_strictness;
use crate::flags::rate::{parse_rate, parse_rate_spec, spec_after_rate, Counting};
use crate::flags::redis::RedisArgs;
use crate::run::interrupt::Interrupt;
use crate::shared::{self, Shared};

use crate::report::EffectiveRate;
use copy::{Copy, Limit};
pub use help::{AFTER_HELP, AFTER_LONG_HELP, LONG_ABOUT};
use input::InputBuf;
use live::{Gauges, LiveLine, Screen};
use schedule::{Schedule, MAX_BYTES_RATE, MAX_LINES_RATE};
pub use summary::PipeReport;

/// The strictness when --strictness is not given: never faster than the rate.
fn default_strictness() -> Strictness {
    BurstRatio::ONE.into()
}

/// Options of `ratekeeper pipe`.
#[derive(Debug, Clone, Args)]
pub struct PipeArgs {
    /// Lines per second, e.g. 100, 2.5k, 1e6, 600/min; with --bytes, bytes
    /// per second in byte units, e.g. 512KiB, 1MiB (as pv -L 1M), 10MB;
    /// `max` for the fastest the Pacer keeps (in effect no limit).
    /// SIGUSR1 doubles it while running, SIGUSR2 halves it.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub rate: String,

    /// Limit bytes per second instead of lines.
    #[arg(long)]
    pub bytes: bool,

    /// How the output catches up after the input stalled: 1 never faster
    /// than the rate, 0 at once, >1 at that multiple of the rate [default: 1].
    #[arg(long, value_name = "S", value_parser = parse_strictness, allow_negative_numbers = true, display_order = 104)]
    pub strictness: Option<Strictness>,

    /// The longest line held whole, in bytes: a longer line goes out in
    /// pieces of this size, each taking a permit (without it, memory grows
    /// with the longest line). Lines mode only.
    #[arg(long, value_name = "BYTES", value_parser = parse_max_line, display_order = 105)]
    pub max_line: Option<usize>,
    /// Print a report to standard error at the end.
    #[arg(long, display_order = 100)]
    pub report: bool,

    /// Print the report to standard error as one JSON object (schema in
    /// --help).
    #[arg(long, display_order = 101)]
    pub json: bool,

    /// Show the progress line on standard error (elapsed, lines or bytes,
    /// rate) even when it is not a terminal, as pv -f; the default shows it
    /// on a terminal only.
    #[arg(long, overrides_with = "no_progress", display_order = 102)]
    pub progress: bool,

    /// Never show the progress line.
    #[arg(long, overrides_with = "progress", display_order = 103)]
    pub no_progress: bool,

    // A limit shared with other processes through Redis.
    #[command(flatten)]
    pub redis: RedisArgs,
}

impl PipeArgs {
    /// The rate spec, its rate read in lines or, with `--bytes`, in byte
    /// units (see [`crate::flags::rate`]); `max` is the fastest rate.
    ///
    /// # Errors
    ///
    /// A [`UsageError`] worded as clap words a refused value.
    pub fn spec(&self) -> Result<RateSpec, UsageError> {
        let spec = with_max(&self.rate, self.bytes);
        let parsed = if self.bytes {
            bytes_spec(&spec)
        } else {
            parse_rate_spec(&spec, Counting::Ops)
        };
        parsed.map_err(|e| {
            UsageError(format!(
                "invalid value '{}' for '--rate <RATE>': {e}",
                self.rate
            ))
        })
    }

    /// Whether the progress line is shown: `--progress`, `--no-progress`,
    /// or by default when standard error is a terminal.
    pub fn shows_progress(&self) -> bool {
        !self.no_progress && (self.progress || crate::progress::enabled())
    }
}

/// `spec` with a first field of `max` replaced by the fastest rate (lines,
/// or with `bytes` bytes).
fn with_max(spec: &str, bytes: bool) -> String {
    let (first, rest) = spec.split_once(',').unwrap_or((spec, ""));
    if !first.trim().eq_ignore_ascii_case("max") {
        return spec.to_owned();
    }
    let max = if bytes {
        MAX_BYTES_RATE
    } else {
        MAX_LINES_RATE
    };
    match rest {
        "" if !spec.contains(',') => max.to_string(),
        _ => format!("{max},{rest}"),
    }
}

/// `--rate` with `--bytes`: the rate in byte units, up to
/// [`MAX_BYTES_RATE`] (past the 1e9/s a permit per byte would allow: the
/// [`schedule`] reserves nanoseconds), the other fields as for any rate.
fn bytes_spec(s: &str) -> Result<RateSpec, String> {
    let (first, rest) = match s.split_once(',') {
        Some((first, rest)) => (first, Some(rest)),
        None => (s, None),
    };
    let per_second = parse_rate(first, Counting::Bytes)?;
    let rate = Rate::new(per_second).map_err(|e| format!("{e} (from \"{}\")", first.trim()))?;
    if per_second > MAX_BYTES_RATE {
        return Err(format!(
            "{per_second} bytes/s is above the most pipe --bytes paces, {MAX_BYTES_RATE} \
             bytes/s (64 KiB a nanosecond; --rate max)"
        ));
    }
    Schedule::bytes(per_second)
        .pacer_rate(per_second)
        .map_err(|e| e.to_string())?;
    // The other fields as any rate spec has them.
    spec_after_rate(rate, rest)
}

/// The spec, if pipe takes it with the other options.
fn check_options(args: &PipeArgs) -> Result<RateSpec, UsageError> {
    let spec = args.spec()?;
    let rate = spec.rate().get();
    if spec.burst_ratio() != RateSpec::DEFAULT_BURST_RATIO {
        return Err(UsageError(format!(
            "pipe does not use the rate spec's burst ratio {}: give the rate alone (e.g. \
             --rate {rate}); how the output catches up after the input stalled is \
             --strictness (e.g. --strictness {})",
            spec.burst_ratio(),
            spec.burst_ratio()
        )));
    }
    if let (true, Some(n)) = (args.bytes, args.max_line) {
        return Err(UsageError(format!(
            "--max-line {n} applies to lines; with --bytes each write is already at most \
             64 KiB: give one or the other"
        )));
    }
    if spec.scope() == Scope::Thread {
        return Err(UsageError(format!(
            "the rate spec \"{spec}\" has the thread scope, which has no meaning for pipe (one \
             writer); give the rate alone (e.g. --rate {rate})"
        )));
    }
    Ok(spec)
}

/// With `--redis`: the shared limit, a Pacer at `rate` lines (or bytes)
/// per second, a permit a line (or a byte) at `strictness`.
///
/// # Errors
///
/// A [`UsageError`] for a `--bytes` rate above 1e9 bytes/s, which a permit
/// per byte cannot keep; as [`shared::connect`].
fn connect(args: &PipeArgs, rate: Rate, strictness: Strictness) -> anyhow::Result<Option<Shared>> {
    if args.redis.redis.is_none() {
        return Ok(None);
    }
    if args.bytes && rate.get() > 1e9 {
        return Err(UsageError(format!(
            "--rate {} with --bytes cannot be shared with --redis: a shared limit takes a \
             permit per byte, at most 1e9 bytes/s (about 953 MiB/s)",
            args.rate
        ))
        .into());
    }
    let config = LimiterConfig::new(KindConfig::Pacer { rate, strictness });
    shared::connect(&args.redis, &config)
}

/// `--max-line`: a whole number of bytes, at least 1.
fn parse_max_line(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "\"{s}\" is not a line length: give a whole number of bytes, at least 1 (e.g. \
             --max-line 1048576)"
        )),
    }
}

/// Runs `pipe` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] for a rate spec pipe does not take; an I/O error reading
/// standard input or writing standard output (other than a closed pipe).
pub fn run(args: &PipeArgs, interrupt: &Interrupt) -> anyhow::Result<PipeReport> {
    let spec = check_options(args)?;
    let rate = spec.rate().get();
    let strictness = args.strictness.unwrap_or_else(default_strictness);
    let (schedule, unit) = if args.bytes {
        (Schedule::bytes(rate), "bytes")
    } else {
        (Schedule::lines(rate), "lines")
    };
    let cannot = || {
        UsageError(format!(
            "cannot pace at rate {rate} with strictness {strictness}"
        ))
    };
    let pacer_rate = schedule
        .pacer_rate(rate)
        .map_err(|e| anyhow::Error::new(e).context(cannot()))?;
    let pacer = Pacer::builder(pacer_rate)
        .strictness(strictness.get())
        .build_with_clock(DefaultClock::new())
        .map_err(|e| anyhow::Error::new(e).context(cannot()))?;
    let shared = connect(args, spec.rate(), strictness)?;
    let (limit, effective) = match &shared {
        Some(s) if args.bytes => (
            Limit::Shared(s.limiter()),
            EffectiveRate::pacer(pacer.effective_rate(), pacer.nanos_per_op(), "byte"),
        ),
        Some(s) => (Limit::Shared(s.limiter()), schedule.effective(&pacer)),
        None => (Limit::Pacer(&pacer), schedule.effective(&pacer)),
    };
    effective.warn("pipe", rate, unit);

    let input = InputBuf::new().context("opening standard input")?;
    let gauges = Arc::new(Gauges::new(rate));
    let screen = Arc::new(Screen::default());
    let live = args
        .shows_progress()
        .then(|| LiveLine::start(unit, Arc::clone(&gauges), Arc::clone(&screen)))
        .flatten();
    let mut copy = Copy::new(input, schedule, args.max_line, unit, gauges, screen);
    let copied = match &shared {
        Some(s) => s.closing_on(interrupt, || Ok(copy.run(limit, interrupt)))?,
        None => copy.run(limit, interrupt),
    };
    let mut report = summary::report(&spec, unit, strictness, &effective, &copy);
    report.redis = shared.map(|s| s.report(copy.units));
    if let Some(live) = live {
        live.finish(report.achieved_rate);
    }
    copied?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::input::{next_item, Next};
    use super::schedule::chunk_size;
    use super::*;
    use crate::report::fmt_unit_rate;

    #[test]
    fn items_are_lines_or_chunks() {
        use Next::{Item, More};
        assert_eq!(next_item(b"ab\ncd\n", 0, None, None, false), Item(3));
        assert_eq!(next_item(b"abc", 0, None, None, false), More { scanned: 3 });
        assert_eq!(next_item(b"abc", 0, None, None, true), Item(3));
        assert_eq!(next_item(b"", 0, None, None, true), More { scanned: 0 });
        assert_eq!(next_item(b"abcdef", 0, Some(4), None, false), Item(4));
        assert_eq!(next_item(b"ab", 0, Some(4), None, false), Item(2));
        assert_eq!(next_item(b"", 0, Some(4), None, false), More { scanned: 0 });
    }

    #[test]
    fn a_search_starts_after_what_was_scanned() {
        use Next::{Item, More};
        // The newline is found after the scanned prefix.
        assert_eq!(next_item(b"abcd\nx", 4, None, None, false), Item(5));
        // A prefix claimed newline-free is not searched again.
        assert_eq!(
            next_item(b"a\ncd", 3, None, None, false),
            More { scanned: 4 }
        );
    }

    #[test]
    fn lines_longer_than_the_cap_go_in_pieces() {
        use Next::{Item, More};
        assert_eq!(next_item(b"abcdef\n", 0, None, Some(4), false), Item(4));
        assert_eq!(next_item(b"ab\ncdef", 0, None, Some(4), false), Item(3));
        assert_eq!(
            next_item(b"abc", 0, None, Some(4), false),
            More { scanned: 3 }
        );
        assert_eq!(next_item(b"abcd", 3, None, Some(4), false), Item(4));
        assert!(parse_max_line("0").is_err());
        assert!(parse_max_line("-1").is_err());
        assert_eq!(parse_max_line("4096"), Ok(4096));
    }

    #[test]
    fn chunks_are_a_hundredth_of_a_second() {
        assert_eq!(chunk_size(1e6), 10_000);
        assert_eq!(chunk_size(50.0), 1);
        assert_eq!(chunk_size(1e9), 65_536);
    }

    #[test]
    fn max_is_the_fastest_rate() {
        assert_eq!(with_max("max", false), "1000000000");
        assert_eq!(with_max(" MAX ", true), "65536000000000");
        assert_eq!(with_max("max,1.5", false), "1000000000,1.5");
        assert_eq!(with_max("100", true), "100");
        assert_eq!(with_max("maxi", false), "maxi");
    }

    #[test]
    fn bytes_rates_go_past_1e9_and_keep_the_other_fields() {
        let spec = bytes_spec("4GiB,start").unwrap();
        assert_eq!(spec.rate().get(), 4_294_967_296.0);
        assert_eq!(spec.to_string(), "4294967296,1.1,start,activity");
        assert_eq!(bytes_spec("1MB,1.5").unwrap().burst_ratio(), 1.5);
        assert_eq!(
            bytes_spec("100MiB").unwrap(),
            parse_rate_spec("100MiB", Counting::Bytes).unwrap(),
            "the same spec as any rate below 1e9"
        );
        assert!(bytes_spec("100000GB").unwrap_err().contains("--rate max"));
        assert!(bytes_spec("-5").unwrap_err().contains("greater than zero"));
        assert!(bytes_spec("1M").unwrap_err().contains("1MiB"));
        assert!(bytes_spec("1MB,bogus").unwrap_err().contains("bogus"));
    }

    #[test]
    fn rates_are_in_the_unit() {
        assert_eq!(fmt_unit_rate(100.0, "lines"), "100 lines/s");
        assert_eq!(fmt_unit_rate(1e6, "bytes"), "1,000,000 bytes/s");
    }
}
