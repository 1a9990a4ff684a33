//! `ratekeeper pipe`: copy standard input to standard output at a rate, by
//! lines or by bytes, like `pv -L`.
//!
//! A reader thread reads standard input in blocks and hands them over a
//! small channel; the main thread cuts them into lines (or chunks of bytes),
//! takes a permit for each from a [`Pacer`], and writes. Output is batched
//! while permits are ready at once and written out (flushed) before any
//! wait, for a permit or for input, so nothing sits in a buffer while the
//! pipe is idle. Reading on a thread of its own also lets Ctrl-C end the
//! copy while standard input has nothing to read.
//!
//! `run` gathers: it checks the options, builds the Pacer, starts the reader
//! ([`input`]) and copies through [`output`]; [`summary`] holds the report
//! and [`render`] prints it.

mod help;
mod input;
mod output;
mod render;
mod summary;

use std::sync::mpsc::{self, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use ratekeeper::{DefaultClock, Pacer, RateLimiter, RateSpec, Scope};

use crate::error::UsageError;
use crate::flags::{parse_spec, parse_strictness};
use crate::limiter::strictness_mode_name;
use crate::report::EffectiveRate;
use crate::run::interrupt::{self, Interrupt};

pub use help::{AFTER_HELP, AFTER_LONG_HELP, LONG_ABOUT};
use input::{next_item, read_input, wait_for_input, Input, Next, READ_AHEAD};
use output::{Output, MAX_BATCH};
pub use summary::PipeReport;

/// The strictness when --strictness is not given: never faster than the rate.
const DEFAULT_STRICTNESS: f64 = 1.0;

/// The most bytes one permit request (one write) covers in `--bytes` mode.
const MAX_CHUNK: u64 = 64 * 1024;

/// Options of `ratekeeper pipe`.
#[derive(Debug, Clone, Args)]
pub struct PipeArgs {
    /// Lines per second (with --bytes, bytes per second), e.g. 100, 2.5k, 1M.
    #[arg(long, value_name = "RATE", value_parser = parse_spec)]
    pub rate: RateSpec,

    /// Limit bytes per second instead of lines.
    #[arg(long)]
    pub bytes: bool,

    /// How the output catches up after the input stalled: 1 never faster
    /// than the rate, 0 at once, >1 at that multiple of the rate [default: 1].
    #[arg(long, value_name = "S", value_parser = parse_strictness, allow_negative_numbers = true)]
    pub strictness: Option<f64>,

    /// The longest line held whole, in bytes: a longer line goes out in
    /// pieces of this size, each taking a permit (without it, memory grows
    /// with the longest line). Lines mode only.
    #[arg(long, value_name = "BYTES", value_parser = parse_max_line)]
    pub max_line: Option<usize>,
    /// Print a report to standard error at the end.
    #[arg(long)]
    pub report: bool,

    /// Print the report to standard error as one JSON object (schema in
    /// --help).
    #[arg(long)]
    pub json: bool,
}

fn check_options(args: &PipeArgs) -> Result<(), UsageError> {
    let spec = args.rate;
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
    Ok(())
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

/// Bytes per write in `--bytes` mode at `rate` bytes per second: a
/// hundredth of a second's worth, from 1 byte to [`MAX_CHUNK`].
fn chunk_size(rate: f64) -> usize {
    (rate / 100.0).floor().clamp(1.0, MAX_CHUNK as f64) as usize
}

/// Runs `pipe` with `args` and returns its report.
///
/// # Errors
///
/// A [`UsageError`] for a rate spec pipe does not take; an I/O error reading
/// standard input or writing standard output (other than a closed pipe).
pub fn run(args: &PipeArgs, interrupt: &Interrupt) -> anyhow::Result<PipeReport> {
    check_options(args)?;
    let rate = args.rate.rate().get();
    let strictness = args.strictness.unwrap_or(DEFAULT_STRICTNESS);
    let clock = DefaultClock::new();
    let pacer = Pacer::builder(args.rate.rate())
        .strictness(strictness)
        .build_with_clock(clock)
        .map_err(|e| {
            anyhow::Error::new(e).context(UsageError(format!(
                "cannot pace at rate {rate} with strictness {strictness}"
            )))
        })?;
    let unit = if args.bytes { "bytes" } else { "lines" };
    let effective = EffectiveRate::pacer(
        pacer.effective_rate(),
        pacer.nanos_per_op(),
        unit.trim_end_matches('s'),
    );
    effective.warn("pipe", rate, unit);
    let chunk = args.bytes.then(|| chunk_size(rate));

    let (tx, blocks) = mpsc::sync_channel(READ_AHEAD);
    std::thread::Builder::new()
        .name("stdin".to_owned())
        .spawn(move || read_input(tx))
        .context("starting the thread that reads standard input")?;

    let mut output = Output::new();
    let mut input: Vec<u8> = Vec::new();
    let mut pos = 0usize;
    // Bytes from `pos` known to hold no newline.
    let mut scanned = 0usize;
    let mut eof = false;
    let mut t0 = None;
    let mut units = 0u64;
    let mut last_start = 0u64;
    let mut last_permits = 0u32;
    let mut rate_wait = Duration::ZERO;
    let mut input_wait = Duration::ZERO;
    let mut interrupted = false;

    while !output.closed {
        let len = match next_item(&input[pos..], scanned, chunk, args.max_line, eof) {
            Next::Item(len) => len,
            Next::More { scanned: known } => {
                scanned = known;
                if eof {
                    break;
                }
                input.drain(..pos);
                pos = 0;
                let next = match blocks.try_recv() {
                    Ok(block) => Input::Block(block.context("reading standard input")?),
                    Err(TryRecvError::Disconnected) => Input::Eof,
                    Err(TryRecvError::Empty) => {
                        // Nothing to read now: out with what was let through.
                        output.flush()?;
                        let waited = Instant::now();
                        let next = wait_for_input(&blocks, interrupt)?;
                        if t0.is_some() {
                            input_wait += waited.elapsed();
                        }
                        next
                    }
                };
                match next {
                    Input::Block(block) => input.extend_from_slice(&block),
                    Input::Eof => eof = true,
                    Input::Interrupted => {
                        interrupted = true;
                        break;
                    }
                }
                continue;
            }
        };
        if interrupt.is_set() {
            interrupted = true;
            break;
        }
        if t0.is_none() {
            // The schedule starts with the first input.
            pacer.restart();
            t0 = Some(pacer.next_slot_nanos());
        }
        let permits = match chunk {
            // At most MAX_CHUNK bytes.
            Some(_) => u32::try_from(len).unwrap_or(u32::MAX),
            None => 1,
        };
        let grant = pacer
            .reserve(permits, None)
            .context("the pacer refused a permit")?;
        let grant = if grant.delay_nanos() > 0 {
            output.flush()?;
            let waited = Instant::now();
            let g = interrupt::wait_for_grant(&pacer, grant, interrupt);
            rate_wait += waited.elapsed();
            match g {
                Some(g) => g,
                None => {
                    interrupted = true;
                    break;
                }
            }
        } else {
            grant
        };
        output.push(&input[pos..pos + len]);
        pos += len;
        scanned = 0;
        units += u64::from(permits);
        last_start = grant.started_nanos().max(grant.ready_nanos());
        last_permits = permits;
        if output.batch.len() >= MAX_BATCH {
            output.flush()?;
        }
    }
    output.flush()?;

    let elapsed_ns = match t0 {
        None => 0,
        Some(t0) => {
            // The last write's share of the schedule: its permits' slots.
            let share = (f64::from(last_permits) * 1e9 / rate).round() as u64;
            last_start.saturating_sub(t0).saturating_add(share)
        }
    };
    let achieved_rate = if elapsed_ns == 0 {
        0.0
    } else {
        units as f64 * 1e9 / elapsed_ns as f64
    };
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Ok(PipeReport {
        spec: args.rate.to_string(),
        unit,
        strictness,
        strictness_mode: strictness_mode_name(strictness),
        target_rate: rate,
        effective_rate: effective.json(),
        effective_note: effective.note(rate),
        lines: output.lines(),
        bytes: output.bytes,
        writes: output.writes,
        elapsed_ns,
        achieved_rate,
        rate_wait_ns: nanos(rate_wait),
        input_wait_ns: nanos(input_wait),
        output_closed: output.closed,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
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
    fn rates_are_in_the_unit() {
        assert_eq!(fmt_unit_rate(100.0, "lines"), "100 lines/s");
        assert_eq!(fmt_unit_rate(1e6, "bytes"), "1000000 bytes/s");
    }
}
