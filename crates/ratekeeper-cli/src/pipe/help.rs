//! `pipe`'s help: the text above and below its options, with the JSON
//! schema.

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

The options follow; after them, rates, --bytes, what the report says, and \
the JSON schema.";

/// `pipe -h` text below the options: examples, and where the rest is.
pub const AFTER_HELP: &str = "\
Examples:
  seq 1000 | ratekeeper pipe --rate 100
  tail -f app.log | ratekeeper pipe --rate 20 | ./slow-consumer
  cat big.bin | ratekeeper pipe --bytes --rate 1MiB --report > copy.bin
  cat big.bin | ratekeeper pipe --bytes --rate max --progress > copy.bin
  kill -USR1 $(pgrep -n ratekeeper)   # double a running pipe's rate
  yes | ratekeeper pipe --rate 10 --json | head -5

The Redis options, the report's fields and the JSON schema: ratekeeper \
pipe --help";

/// `pipe --help` text below the options: the details, examples and the
/// JSON schema.
pub const AFTER_LONG_HELP: &str = concat!(
    "\
Rates: a number (100, 2.5, 1e6), with k, M or G (2.5k), or per another unit \
of time (600/min, 36k/h), up to 1e9 lines/s. With --bytes the rate is in \
bytes per second, in byte units: decimal kB, MB, GB or binary KiB, MiB, GiB \
(--rate 1MiB is pv -L 1M); a bare 1M is refused as ambiguous there. --rate \
max is the fastest rate: 1e9 lines/s, or with --bytes 65536000000000 \
bytes/s (64 KiB a nanosecond), which in effect copies without a limit (as pv \
without -L) while still measuring and reporting.

--bytes: each write is at most a hundredth of a second's worth (at least 1 \
byte, at most 64 KiB), so the output flows evenly, and reserves exactly the \
time its bytes take at the rate, ceil(bytes x 1e9 / rate) ns counted from \
the start (or the last rate change), the fraction of a nanosecond carried \
to the next write: the copy never runs ahead of the rate nor falls more than \
1 ns behind it, at any rate (no whole-nanosecond slot per byte: 100MiB is \
104857600 bytes/s, not the 111111111 a 9 ns byte would give), and rates \
above 1e9 bytes/s can be paced.

Changing the rate while running: SIGUSR1 doubles the rate, SIGUSR2 halves \
it (kill -USR1 PID), as often as wanted. A change applies from the next \
line or chunk: one already waiting for its permit keeps its time (the Pacer \
never moves a slot it handed out). A step past the fastest rate (see max) \
or below one unit every 2^62 ns is refused with a warning on standard \
error, and the rate stays. Signals of one kind sent faster than pipe takes \
them may arrive as one (Unix does not queue them): send them a moment \
apart. The progress line shows the rate now, the report the final rate and \
how many changes were made.

Progress: on a terminal, a line on standard error shows the elapsed time, \
what was written (lines, or bytes in KiB, MiB, GiB), the rate over the last \
second and the rate asked for, redrawn 5 times a second with a carriage \
return, as pv does:
  0:00:05  12.5 MiB  2.50 MiB/s  (rate 2.00 MiB/s)
When the copy ends it is drawn a last time with the achieved rate (as in \
the report) and left there, ended by a newline; a report (--report, \
--json) follows it on a line of its own. --progress shows it even when \
standard error is not a terminal (as pv -f), --no-progress never (the last \
of the two given wins). Standard output carries only the data.

The rate spec's burst ratio is not used (give the rate alone); how the output \
catches up after the input stalled is --strictness: 1, the default, never \
goes faster than the rate (time without input is not made up), 0 lets the \
unused time go at once, a value above 1 catches up at that multiple of the \
rate. The schedule starts with the first input. On a busy machine a wait for \
a permit can end milliseconds late; strict mode (1) does not make that time \
up either (the next write is spaced from when this one went), so the copy \
falls behind the rate by what the scheduler took: --strictness 0, or a ratio \
such as 1.5, makes it up and holds the average rate (scripts/bench-pipe.sh \
measures both; BENCHMARKS.md has the figures).

A closed standard output (the reader went away, e.g. | head -1) ends the copy \
quietly with exit status 0. Ctrl-C ends it too, writing what was let through, \
with exit status 130 (143 for SIGTERM, 129 for SIGHUP), also while a --redis \
decision is waiting on the server. With --redis, a failure of Redis under \
--on-redis-failure closed, or a key that keeps another type or limit, ends it \
with exit status 4, after writing what was let through (and the report, \
with --report or --json), and an error line saying why.

Report (--report, or --json for one JSON object; both go to standard error, \
as standard output carries the data):
  target rate     the rate given, in lines/s or bytes/s
  effective rate  the rate the Pacer's whole-nanosecond slots give at the \
target rate: each line is floor(1e9 / rate) ns of the schedule, so the copy \
runs at 1e9 / that (--rate 510M: 1 ns, 1e9/s). More than 0.1% off the target, \
the report says by how much and why, and a warning on standard error says so \
before the copy (whether or not --report is given); so does a rate change to \
such a rate. With --bytes it is the target rate (see --bytes above)
  final rate      the rate at the end, after the changes SIGUSR1 and SIGUSR2 \
made
  rate changes    doublings and halvings made; those refused (beyond the \
fastest rate, or slower than one unit every 2^62 ns) are counted apart
  achieved rate   lines (or bytes) / rate span, over the whole copy (at \
whatever rates it ran)
  rate span       the span the achieved rate is over: from the first input \
until the last write, plus the last \
write's share of the schedule (its slot, or with --bytes its nanoseconds): \
N lines on a perfect schedule take N slots
  lines, bytes    what was written (a last line without a newline counts; \
what the reader did not take when it closed the pipe does not)
  writes          permit requests written: one per line, or per chunk with \
--bytes
  rate wait       time spent waiting for permits
  input wait      time spent waiting for standard input, after the first \
input\n\nIn pipe, with --redis a permit is a line, or with --bytes a byte (the shared Pacer's slot is floor(1e9 / rate) ns a byte, so --bytes is shared up to 1e9 bytes/s), and each write is one request (one round trip, unless leased: --redis-lease); SIGUSR1 and SIGUSR2 are ignored with a warning (the rate is every process's). ",
    crate::shared::redis_report_help!(),
    "\n\n\
Examples:
  seq 1000 | ratekeeper pipe --rate 100
  tail -f app.log | ratekeeper pipe --rate 20 | ./slow-consumer
  cat big.bin | ratekeeper pipe --bytes --rate 1MiB --report > copy.bin
  cat big.bin | ratekeeper pipe --bytes --rate max --progress > copy.bin
  kill -USR1 $(pgrep -n ratekeeper)   # double a running pipe's rate
  yes | ratekeeper pipe --rate 10 --json | head -5

JSON report (--json, on standard error): one object on one line. Durations \
are integer nanoseconds, rates per second (floating point):
  schema           integer  the schema's version, 1: raised when a field is \
renamed, dropped or changes meaning (not when one is added)
  spec             string   the rate spec in canonical form
  unit             string   \"lines\" or \"bytes\": what the rate counts
  strictness       number   the Pacer's strictness (--strictness, default 1)
  strictness_mode  string   \"average\", \"burst_compensation\", \"strict\" or \"burst_ratio\"
  target_rate      number   units per second, as given
  final_rate       number   units per second at the end (SIGUSR1/SIGUSR2 change it)
  rate_changes     integer  doublings and halvings made
  rate_changes_refused integer  doublings and halvings refused (out of range)
  effective_rate   number   units per second the Pacer's slots give (see Report above)
  lines            integer  lines written
  bytes            integer  bytes written
  writes           integer  permit requests (lines, or chunks with --bytes)
  rate_span_ns     integer  the span the achieved rate is over (see Report above)
  achieved_rate    number   units / rate span
  rate_wait_ns     integer  time spent waiting for permits
  input_wait_ns    integer  time spent waiting for input after the first
  output_closed    boolean  whether standard output was closed by its reader
  interrupted      boolean  whether Ctrl-C ended the copy (exit status 130)",
    crate::shared::redis_json_help!()
);
