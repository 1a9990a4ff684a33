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

use std::fmt;
use std::io::{self, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use ratekeeper::{DefaultClock, Pacer, RateLimiter, RateSpec, Scope};
use serde::Serialize;

use crate::error::UsageError;
use crate::flags::{parse_spec, parse_strictness};
use crate::limiter::strictness_mode_name;
use crate::report::{fmt_effective, fmt_nanos, fmt_unit_rate, EffectiveRate};
use crate::run::interrupt::{self, Interrupt};

/// How much the reader thread reads at a time.
const READ_BLOCK: usize = 64 * 1024;

/// Blocks the reader may be ahead of the writer.
const READ_AHEAD: usize = 4;

/// The most bytes one permit request (one write) covers in `--bytes` mode.
const MAX_CHUNK: u64 = 64 * 1024;

/// Output batched while permits are ready at once is written out at this
/// size at the latest.
const MAX_BATCH: usize = 64 * 1024;

/// How often a wait for input checks for Ctrl-C.
const POLL: Duration = Duration::from_millis(20);

/// The strictness when --strictness is not given: never faster than the rate.
const DEFAULT_STRICTNESS: f64 = 1.0;

/// `pipe --help` text above the options.
pub const LONG_ABOUT: &str = "\
Copy standard input to standard output at a rate: lines per second (the \
default) or, with --bytes, bytes per second, like pv -L.

Each line (or chunk of bytes) takes its permits from a Pacer and is written \
when they are ready. Output is written out before every wait, for a permit \
or for more input, so nothing is held back while the pipe is idle; lines \
that may go at once are written together. A last line without a newline is \
copied as it is. Line ends are found in time linear in the input; memory \
holds the longest line, or with --max-line BYTES at most that much of one \
(a longer line goes out in pieces of BYTES, each taking a permit).

--bytes: the rate is in bytes per second (e.g. --rate 1M); each write takes \
as many permits as it has bytes, at most a hundredth of a second's worth \
(at least 1 byte, at most 64 KiB), so the output flows evenly.

The rate spec's burst ratio is not used (give the rate alone); how the output \
catches up after the input stalled is --strictness: 1, the default, never \
goes faster than the rate (time without input is not made up), 0 lets the \
unused time go at once, a value above 1 catches up at that multiple of the \
rate. The schedule starts with the first input.

A closed standard output (the reader went away, e.g. | head -1) ends the copy \
quietly with exit status 0. Ctrl-C ends it too, writing what was let through, \
with exit status 130.

Report (--report, or --json for one JSON object; both go to standard error, \
as standard output carries the data):
  target rate     the rate, in lines/s or bytes/s
  effective rate  the rate the Pacer's whole-nanosecond slots give: each line \
(byte) is floor(1e9 / rate) ns of the schedule, so the copy runs at 1e9 / that \
(--rate 510M: 1 ns, 1e9/s). More than 0.1% off the target, the report says by \
how much and why, and a warning on standard error says so before the copy \
(whether or not --report is given)
  achieved rate   lines (or bytes) / elapsed
  elapsed         from the first input until the last write, plus the last \
write's share of the schedule (its permits / rate): N lines on a perfect \
schedule take N slots
  lines, bytes    what was written (a last line without a newline counts; \
what the reader did not take when it closed the pipe does not)
  writes          permit requests written: one per line, or per chunk with \
--bytes
  waited for rate time spent waiting for permits
  waited for input time spent waiting for standard input, after the first \
input";

/// Examples, shown by `pipe -h` and `pipe --help`.
pub const AFTER_HELP: &str = "\
Examples:
  seq 1000 | ratekeeper pipe --rate 100
  tail -f app.log | ratekeeper pipe --rate 20 | ./slow-consumer
  cat big.bin | ratekeeper pipe --bytes --rate 1M --report > copy.bin
  yes | ratekeeper pipe --rate 10 --json | head -5";

/// `pipe --help` text below the options: examples and the JSON schema.
pub const AFTER_LONG_HELP: &str = "\
Examples:
  seq 1000 | ratekeeper pipe --rate 100
  tail -f app.log | ratekeeper pipe --rate 20 | ./slow-consumer
  cat big.bin | ratekeeper pipe --bytes --rate 1M --report > copy.bin
  yes | ratekeeper pipe --rate 10 --json | head -5

JSON report (--json, on standard error): one object on one line. Durations \
are integer nanoseconds, rates per second (floating point):
  spec             string   the rate spec in canonical form
  unit             string   \"lines\" or \"bytes\": what the rate counts
  strictness       number   the Pacer's strictness (--strictness, default 1)
  strictness_mode  string   \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
  target_rate      number   units per second
  effective_rate   number   units per second the Pacer's slots give (see Report above)
  lines            integer  lines written
  bytes            integer  bytes written
  writes           integer  permit requests (lines, or chunks with --bytes)
  elapsed_ns       integer  see Report above
  achieved_rate    number   units / elapsed
  rate_wait_ns     integer  time spent waiting for permits
  input_wait_ns    integer  time spent waiting for input after the first
  output_closed    boolean  whether standard output was closed by its reader
  interrupted      boolean  whether Ctrl-C ended the copy (exit status 130)";

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

/// The result of a `pipe` run; `Display` is the text report, `Serialize`
/// the JSON one (schema in [`AFTER_LONG_HELP`]).
#[derive(Debug, Clone, Serialize)]
pub struct PipeReport {
    spec: String,
    unit: &'static str,
    strictness: f64,
    strictness_mode: &'static str,
    target_rate: f64,
    /// What the Pacer's whole-nanosecond slots give (see `pace`).
    effective_rate: Option<f64>,
    /// The text report's note when the effective rate is off the target.
    #[serde(skip)]
    effective_note: Option<String>,
    lines: u64,
    bytes: u64,
    writes: u64,
    elapsed_ns: u64,
    achieved_rate: f64,
    rate_wait_ns: u64,
    input_wait_ns: u64,
    output_closed: bool,
    interrupted: bool,
}

impl PipeReport {
    /// Whether Ctrl-C ended the copy.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
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

/// Reads standard input in blocks into `blocks` until end of file, an
/// error, or the receiver hangs up.
fn read_input(blocks: mpsc::SyncSender<io::Result<Vec<u8>>>) {
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    loop {
        let mut buf = vec![0; READ_BLOCK];
        match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                if blocks.send(Ok(buf)).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = blocks.send(Err(e));
                return;
            }
        }
    }
}

/// What comes next in the buffer of unwritten input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A unit of this many bytes: a line, a piece of a line at the
    /// `--max-line` cap, or a chunk of `--bytes`.
    Item(usize),
    /// No whole unit yet; the first `scanned` bytes hold no newline, so the
    /// next search starts after them (each byte is searched once: linear
    /// time however long the line).
    More { scanned: usize },
}

/// What the next unit of `input` is. `scanned`: bytes at its start already
/// known to hold no newline; `chunk`: `--bytes` mode's chunk size;
/// `max_line`: the longest unit a line may be before it goes out in
/// pieces; `eof`: no more input will come.
fn next_item(
    input: &[u8],
    scanned: usize,
    chunk: Option<usize>,
    max_line: Option<usize>,
    eof: bool,
) -> Next {
    if let Some(chunk) = chunk {
        return match input.len() {
            0 => Next::More { scanned: 0 },
            n => Next::Item(n.min(chunk)),
        };
    }
    let cap = max_line.unwrap_or(usize::MAX);
    let end = input.len().min(cap);
    let from = scanned.min(end);
    match memchr::memchr(b'\n', &input[from..end]) {
        Some(i) => Next::Item(from + i + 1),
        // A line at the cap goes out as it is, the rest after it.
        None if end == cap => Next::Item(cap),
        // A last line without a newline.
        None if eof && end > 0 => Next::Item(end),
        None => Next::More { scanned: end },
    }
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

/// Standard output, with what was let through but not yet written.
struct Output {
    out: io::Stdout,
    batch: Vec<u8>,
    /// Permit requests (writes) in the batch.
    batch_writes: u64,
    closed: bool,
    /// What was written.
    lines: u64,
    bytes: u64,
    writes: u64,
    /// Whether the last byte written was a newline (or nothing was written).
    ends_line: bool,
}

impl Output {
    fn new() -> Output {
        Output {
            out: io::stdout(),
            batch: Vec::with_capacity(MAX_BATCH),
            batch_writes: 0,
            closed: false,
            lines: 0,
            bytes: 0,
            writes: 0,
            ends_line: true,
        }
    }

    /// Adds one permit request's bytes to the batch.
    fn push(&mut self, item: &[u8]) {
        self.batch.extend_from_slice(item);
        self.batch_writes += 1;
    }

    /// Writes out the batch and counts it. A closed output (EPIPE) is
    /// remembered, not an error; what was in the batch then is not counted.
    fn flush(&mut self) -> anyhow::Result<()> {
        if self.closed || self.batch.is_empty() {
            self.batch.clear();
            self.batch_writes = 0;
            return Ok(());
        }
        let mut out = self.out.lock();
        let written = out.write_all(&self.batch).and_then(|()| out.flush());
        drop(out);
        if written.is_ok() {
            self.lines += memchr::memchr_iter(b'\n', &self.batch).count() as u64;
            self.bytes += self.batch.len() as u64;
            self.writes += self.batch_writes;
            self.ends_line = self.batch.last() == Some(&b'\n');
        }
        self.batch.clear();
        self.batch_writes = 0;
        match written {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
        }
    }

    /// Lines written; a last line without a newline counts.
    fn lines(&self) -> u64 {
        self.lines + u64::from(!self.ends_line)
    }
}

/// What a wait for input gave.
enum Input {
    Block(Vec<u8>),
    Eof,
    Interrupted,
}

/// Waits for the next block of input, checking for Ctrl-C meanwhile.
fn wait_for_input(
    blocks: &Receiver<io::Result<Vec<u8>>>,
    interrupt: &Interrupt,
) -> anyhow::Result<Input> {
    loop {
        match blocks.recv_timeout(POLL) {
            Ok(block) => return Ok(Input::Block(block.context("reading standard input")?)),
            Err(RecvTimeoutError::Disconnected) => return Ok(Input::Eof),
            Err(RecvTimeoutError::Timeout) => {
                if interrupt.is_set() {
                    return Ok(Input::Interrupted);
                }
            }
        }
    }
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

impl fmt::Display for PipeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "spec            {}", self.spec)?;
        writeln!(
            f,
            "strictness      {} ({})",
            self.strictness,
            self.strictness_mode.replace('_', " ")
        )?;
        writeln!(
            f,
            "target rate     {}",
            fmt_unit_rate(self.target_rate, self.unit)
        )?;
        writeln!(
            f,
            "effective rate  {}",
            fmt_effective(
                self.effective_rate,
                self.effective_note.as_deref(),
                self.unit
            )
        )?;
        writeln!(
            f,
            "achieved rate   {}",
            fmt_unit_rate(self.achieved_rate, self.unit)
        )?;
        writeln!(f, "lines           {}", self.lines)?;
        writeln!(f, "bytes           {}", self.bytes)?;
        writeln!(f, "writes          {}", self.writes)?;
        writeln!(f, "elapsed         {}", fmt_nanos(self.elapsed_ns))?;
        writeln!(f, "waited for rate {}", fmt_nanos(self.rate_wait_ns))?;
        writeln!(f, "waited for input {}", fmt_nanos(self.input_wait_ns))?;
        if self.output_closed {
            writeln!(f, "output closed   by its reader: the copy stopped there")?;
        }
        if self.interrupted {
            writeln!(f, "interrupted     by Ctrl-C: the copy stopped there")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
