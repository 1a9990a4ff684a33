//! End-to-end tests of `ratekeeper pipe`: lines and bytes at a rate, the
//! report, a closed output, Ctrl-C, rate changes by signal, the progress
//! line and bad input.
//!
//! Real-clock bounds are generous: the tests share a noisy 2-core machine.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use predicates::prelude::*;

/// Runs `ratekeeper pipe ARGS` with `input` on standard input; expects
/// success and returns stdout, stderr and how long it took.
fn pipe_run(args: &[&str], input: &[u8]) -> (Vec<u8>, String, Duration) {
    let mut all = vec!["pipe"];
    all.extend(args);
    let t = Instant::now();
    let out = ratekeeper()
        .args(&all)
        .write_stdin(input.to_vec())
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .clone();
    let took = t.elapsed();
    (
        out.stdout,
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
        took,
    )
}

fn numbered_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn lines_are_copied_at_the_rate() {
    let input = numbered_lines(20);
    // 20 lines at 100 lines/s: the first at once, the last 190 ms later.
    let (out, stderr, took) = pipe_run(&["--rate", "100"], input.as_bytes());
    assert_eq!(String::from_utf8(out).unwrap(), input);
    assert!(stderr.is_empty(), "no report unless asked: {stderr}");
    assert!(took >= Duration::from_millis(150), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn json_report_on_stderr_agrees_with_the_text_one() {
    let input = numbered_lines(20);
    let (out, stderr, _) = pipe_run(&["--rate", "100", "--json"], input.as_bytes());
    assert_eq!(out, input.as_bytes(), "the data is untouched");
    let v = json(&stderr);
    assert_eq!(v["unit"], "lines");
    assert_eq!(u(&v, "lines"), 20);
    assert_eq!(u(&v, "bytes"), input.len() as u64);
    assert_eq!(u(&v, "writes"), 20);
    assert_eq!(f(&v, "target_rate"), 100.0);
    assert_eq!(f(&v, "strictness"), 1.0);
    assert_eq!(v["strictness_mode"], "strict");
    assert_eq!(v["output_closed"], false);
    assert_eq!(v["interrupted"], false);
    // 20 slots of 10 ms, the first at once.
    let elapsed = u(&v, "rate_span_ns");
    assert!(
        (190_000_000..2_000_000_000).contains(&elapsed),
        "elapsed {elapsed}"
    );
    let achieved = f(&v, "achieved_rate");
    assert!((20e9 / elapsed as f64 - achieved).abs() < 1e-6 * achieved);
    assert!((10.0..=101.0).contains(&achieved), "achieved {achieved}");
    assert!(u(&v, "rate_wait_ns") >= 100_000_000, "{v}");

    let (_, text, _) = pipe_run(&["--rate", "100", "--report"], input.as_bytes());
    assert_eq!(fields(&text, "lines"), ["20"]);
    assert_eq!(fields(&text, "bytes"), [input.len().to_string()]);
    assert_eq!(fields(&text, "writes"), ["20"]);
    assert_eq!(fields(&text, "target rate"), ["100", "lines/s"]);
    assert_eq!(fields(&text, "strictness"), ["1", "(strict)"]);
    let shown = text_nanos(&fields(&text, "rate span")[0]);
    assert!((190e6..2e9).contains(&shown), "{text}");
    assert!(!text.contains("interrupted"), "{text}");
}

/// `n` in groups of three digits, as the text reports print counts.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate as the text report prints it (`12,345.6 lines/s`), in units per
/// second.
fn text_rate(cells: &[String], unit: &str) -> f64 {
    assert_eq!(cells[1], format!("{unit}/s"), "{cells:?}");
    cells[0].replace(',', "").parse().expect("a rate")
}

/// The same fixed input, copied once with `--report` and once with
/// `--json` (one run cannot print both): every figure of the text report
/// is the JSON's, exactly where the copy decides it (counts, rates, spec)
/// and to the text's rounding where the clock does (each report's elapsed
/// time and achieved rate agree with each other and with the schedule).
#[test]
fn text_report_carries_the_json_numbers() {
    // 3,000 lines (28,893 bytes) at 50,000 lines/s: 60 ms of slots.
    let input = numbered_lines(3_000);
    let args = ["--rate", "50k", "--strictness", "1"];
    let (_, stderr, _) = pipe_run(&[&args[..], &["--json"]].concat(), input.as_bytes());
    let v = json(&stderr);
    let (_, text, _) = pipe_run(&[&args[..], &["--report"]].concat(), input.as_bytes());
    assert_eq!(fields(&text, "spec"), [v["spec"].as_str().unwrap()]);
    assert_eq!(fields(&text, "strictness"), ["1", "(strict)"]);
    assert_eq!(v["strictness_mode"], "strict");
    for (label, key) in [("lines", "lines"), ("bytes", "bytes"), ("writes", "writes")] {
        assert_eq!(fields(&text, label), [grouped(u(&v, key))], "{text}");
    }
    assert_eq!(fields(&text, "bytes"), ["28,893"]);
    for (label, key) in [
        ("target rate", "target_rate"),
        ("effective rate", "effective_rate"),
        ("final rate", "final_rate"),
    ] {
        assert_eq!(
            text_rate(&fields(&text, label), "lines"),
            f(&v, key),
            "{text}"
        );
    }
    assert_eq!(
        fields(&text, "rate changes"),
        [u(&v, "rate_changes").to_string()]
    );
    // Timed figures: the slots' 60 ms at least, and each report's achieved
    // rate is its lines over its elapsed time.
    let elapsed_text = text_nanos(&fields(&text, "rate span")[0]);
    let elapsed_json = u(&v, "rate_span_ns") as f64;
    for elapsed in [elapsed_text, elapsed_json] {
        assert!((59.5e6..30e9).contains(&elapsed), "{elapsed}: {text}\n{v}");
    }
    let achieved = text_rate(&fields(&text, "achieved rate"), "lines");
    assert!(
        (achieved - 3e12 / elapsed_text).abs() <= 0.005 * achieved,
        "{achieved} vs 3,000 lines / {elapsed_text} ns: {text}"
    );
    assert!((f(&v, "achieved_rate") - 3e12 / elapsed_json).abs() < 1e-6 * achieved);
    for (label, key) in [
        ("rate wait", "rate_wait_ns"),
        ("input wait", "input_wait_ns"),
    ] {
        let shown = text_nanos(&fields(&text, label)[0]);
        assert!(shown <= elapsed_text * 1.01, "{label}: {text}");
        assert!(u(&v, key) as f64 <= elapsed_json * 1.01, "{key}: {v}");
    }
}

#[test]
fn bytes_are_copied_in_chunks_at_the_rate() {
    // 30 kB at 100 kB/s: 30 writes of 1000 bytes (a hundredth of a second
    // each), about 0.3 s.
    let input: Vec<u8> = (0..30_000u32).map(|i| (i % 251) as u8).collect();
    let (out, stderr, took) = pipe_run(&["--bytes", "--rate", "100kB", "--json"], &input);
    assert!(out == input, "the bytes are copied as they are");
    let v = json(&stderr);
    assert_eq!(v["unit"], "bytes");
    assert_eq!(u(&v, "bytes"), 30_000);
    // At most 1000 bytes a write; fewer where a read from the pipe ended.
    let writes = u(&v, "writes");
    assert!((30..=60).contains(&writes), "writes {writes}");
    let achieved = f(&v, "achieved_rate");
    assert!((10_000.0..=101_000.0).contains(&achieved), "{achieved}");
    assert!(took >= Duration::from_millis(250), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");

    // A mebibyte at 1 MiB/s (pv -L 1M) takes about a second, not a permit
    // per byte.
    let big = vec![b'x'; 1 << 20];
    let (out, stderr, took) = pipe_run(&["--bytes", "--rate", "1MiB", "--json"], &big);
    assert_eq!(out.len(), big.len());
    let v = json(&stderr);
    let writes = u(&v, "writes");
    assert!((105..=400).contains(&writes), "writes {writes}");
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_last_line_without_a_newline_is_copied_and_counted() {
    let (out, stderr, _) = pipe_run(&["--rate", "1000", "--json"], b"a\nb\nc");
    assert_eq!(out, b"a\nb\nc");
    let v = json(&stderr);
    assert_eq!(u(&v, "lines"), 3);
    assert_eq!(u(&v, "writes"), 3);
    // Nothing in, nothing out.
    let (out, stderr, _) = pipe_run(&["--rate", "1000", "--json"], b"");
    assert!(out.is_empty());
    let v = json(&stderr);
    assert_eq!((u(&v, "lines"), u(&v, "rate_span_ns")), (0, 0));
}

#[test]
fn lines_are_flushed_as_they_go() {
    // A slow producer: each line must come out before the next goes in.
    let mut child = ratekeeper_std()
        .args(["pipe", "--rate", "1000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    for i in 0..3 {
        writeln!(input, "line {i}").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        assert_eq!(line, format!("line {i}\n"));
    }
    drop(input);
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    assert!(status.success(), "{status}");
}

#[test]
fn a_closed_output_ends_the_copy_quietly() {
    // An endless input; the reader takes one line and goes away.
    let mut yes = std::process::Command::new("yes")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn yes");
    let mut child = ratekeeper_std()
        .args(["pipe", "--rate", "200", "--json"])
        .stdin(yes.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "y\n");
    // The reader is gone (dropped above).
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    let _ = yes.kill();
    let _ = yes.wait();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{status}: {stderr}");
    let v = json(&stderr);
    assert_eq!(v["output_closed"], true);
    assert!(u(&v, "lines") >= 1, "{v}");

    // Without a report, nothing at all on stderr.
    let mut yes = std::process::Command::new("yes")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn yes");
    let mut child = ratekeeper_std()
        .args(["pipe", "--bytes", "--rate", "10kB"])
        .stdin(yes.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let mut some = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut some).unwrap();
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    let _ = yes.kill();
    let _ = yes.wait();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.is_empty(), "stderr: {stderr}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_ends_the_copy_with_its_report() {
    // The input stays open with nothing more to read: Ctrl-C must still end
    // the copy.
    let mut child = ratekeeper_std()
        .args(["pipe", "--rate", "1000", "--report"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let mut input = child.stdin.take().unwrap();
    input.write_all(b"one\ntwo\n").unwrap();
    input.flush().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert_eq!(line, "one\n");
    line.clear();
    output.read_line(&mut line).unwrap();
    assert_eq!(line, "two\n");
    let sent = Instant::now();
    interrupt(&child);
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    drop(input);
    let mut report = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut report)
        .unwrap();
    assert!(report.contains("interrupted     by Ctrl-C"), "{report}");
    assert_eq!(fields(&report, "lines"), ["2"]);

    // During a long wait for a permit (one line per 10 s).
    let mut child = ratekeeper_std()
        .args(["pipe", "--rate", "0.1", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let mut input = child.stdin.take().unwrap();
    input.write_all(b"one\ntwo\n").unwrap();
    input.flush().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert_eq!(line, "one\n");
    interrupt(&child);
    let status = wait_with_limit(&mut child, Duration::from_secs(8));
    assert_eq!(status.code(), Some(130), "{status}");
    drop(input);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let v = json(&stderr);
    assert_eq!(v["interrupted"], true);
    assert_eq!(u(&v, "lines"), 1, "the second line was not let through");
}

#[test]
fn a_line_longer_than_max_line_goes_in_pieces_and_stays_one_line() {
    let input = b"abcdefghij\nxy\n";
    let (out, stderr, _) = pipe_run(&["--rate", "1000", "--max-line", "4", "--json"], input);
    assert_eq!(out, input);
    let v = json(&stderr);
    // abcd, efgh, ij\n, xy\n: four permits, two lines.
    assert_eq!((u(&v, "lines"), u(&v, "writes")), (2, 4));
    // A newline-free input of 4 MiB in 64 KiB pieces: linear time, and the
    // same bytes out.
    let big = vec![b'x'; 4 << 20];
    let (out, stderr, took) = pipe_run(&["--rate", "1M", "--max-line", "65536", "--json"], &big);
    assert_eq!(out.len(), big.len());
    let v = json(&stderr);
    assert_eq!((u(&v, "lines"), u(&v, "writes")), (1, 64));
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn bad_input_exits_2_naming_the_value() {
    // Bytes need a unit that says decimal or binary; bare suffixes are
    // ambiguous there.
    rejects(
        &["pipe", "--bytes", "--rate", "1M"],
        &["'1M'", "--rate", "1MB", "1MiB"],
    );
    rejects(
        &["pipe", "--bytes", "--rate", "5XB"],
        &["unknown byte unit"],
    );
    // Lines take count suffixes, not byte units: a byte rate needs --bytes.
    rejects(&["pipe", "--rate", "1MiB"], &["add --bytes"]);
    // A negative rate reaches our own message, not clap's.
    rejects(&["pipe", "--rate", "-5"], &["'-5'", "greater than zero"]);
    rejects(&["pipe", "--rate", "abc"], &["'abc'", "--rate"]);
    rejects(&["pipe", "--rate", "0"], &["'0'", "greater than zero"]);
    rejects(&["pipe", "--rate", "2G"], &["'2G'", "1e9"]);
    rejects(&["pipe", "--rate", "2B"], &["'2B'", "2G"]);
    rejects(
        &["pipe", "--rate", "100,1.5"],
        &["burst ratio 1.5", "--strictness 1.5", "--rate 100"],
    );
    rejects(&["pipe", "--rate", "100,thread"], &["thread scope"]);
    rejects(
        &["pipe", "--rate", "100", "--strictness", "-1"],
        &["'-1'", "negative"],
    );
    rejects(&["pipe"], &["--rate"]);
    rejects(&["pipe", "--rate", "10", "--lines"], &["'--lines'"]);
    rejects(
        &["pipe", "--rate", "10", "--max-line", "0"],
        &["\"0\"", "--max-line", "at least 1"],
    );
    rejects(
        &["pipe", "--rate", "10", "--bytes", "--max-line", "10"],
        &["--max-line 10", "--bytes"],
    );
}

#[test]
fn help_has_examples_and_the_json_schema() {
    for flag in ["-h", "--help"] {
        ratekeeper().args(["pipe", flag]).assert().success().stdout(
            predicate::str::contains("Examples:")
                .and(predicate::str::contains(
                    "seq 1000 | ratekeeper pipe --rate 100",
                ))
                .and(predicate::str::contains(
                    "ratekeeper pipe --bytes --rate 1MiB",
                )),
        );
    }
    ratekeeper()
        .args(["pipe", "--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("output_closed")
                .and(predicate::str::contains("rate_wait_ns"))
                .and(predicate::str::contains("pv -L"))
                .and(predicate::str::contains("final_rate"))
                .and(predicate::str::contains("rate_changes_refused"))
                .and(predicate::str::contains("SIGUSR1 doubles"))
                .and(predicate::str::contains("--no-progress"))
                .and(predicate::str::contains("--rate max")),
        );
}

#[test]
fn the_effective_rate_is_reported_and_a_truncated_slot_warned_about() {
    let input = numbered_lines(3);
    // 510M lines/s: a 1.96 ns slot truncated to 1 ns, 1e9 lines/s. The
    // warning comes whether or not a report is asked for, before it.
    let warning = "warning: pipe runs at 1,000,000,000 lines/s, not the target 510,000,000 \
                   lines/s (+96.08 %): one line's slot is floor(1e9 / rate) = 1 ns\n";
    let (out, stderr, _) = pipe_run(&["--rate", "510M"], input.as_bytes());
    assert_eq!(out, input.as_bytes());
    assert_eq!(stderr, warning);
    let (_, stderr, _) = pipe_run(&["--rate", "510M", "--json"], input.as_bytes());
    let (first, report) = stderr.split_at(warning.len());
    assert_eq!(first, warning);
    assert_eq!(f(&json(report), "effective_rate"), 1e9);
    let (_, stderr, _) = pipe_run(&["--rate", "510M", "--report"], input.as_bytes());
    assert!(
        stderr.contains(
            "effective rate  1,000,000,000 lines/s (+96.08 % over the target: one line's slot \
             is floor(1e9 / rate) = 1 ns)\n"
        ),
        "{stderr}"
    );
    // 1 MB/s: 1000 ns a byte, exact: the report's line, no warning.
    let (_, stderr, _) = pipe_run(&["--bytes", "--rate", "1MB", "--report"], input.as_bytes());
    assert!(!stderr.contains("warning"), "{stderr}");
    assert_eq!(fields(&stderr, "effective rate"), ["1,000,000", "bytes/s"]);
}

#[test]
fn bytes_are_reserved_in_exact_nanoseconds_even_past_1e9_a_second() {
    // 100 MiB/s: a whole-nanosecond slot per byte (9 ns) would run 6 %
    // fast. Now exact: no warning, and never faster than the rate.
    let big = vec![b'x'; 20 << 20];
    let (out, stderr, took) = pipe_run(&["--bytes", "--rate", "100MiB", "--json"], &big);
    assert_eq!(out.len(), big.len());
    let v = json(&stderr);
    assert_eq!(f(&v, "effective_rate"), 104_857_600.0);
    let achieved = f(&v, "achieved_rate");
    assert!(
        (52e6..=104_857_600.0 * 1.0001).contains(&achieved),
        "{achieved}"
    );
    assert!(took >= Duration::from_millis(190), "{took:?}");
    // --rate max: 64 KiB a nanosecond, in effect no limit.
    let (out, stderr, _) = pipe_run(&["--bytes", "--rate", "max", "--json"], &big);
    assert_eq!(out.len(), big.len());
    let v = json(&stderr);
    assert_eq!(f(&v, "target_rate"), 65_536e9);
    assert_eq!(u(&v, "bytes"), big.len() as u64);
    let (_, stderr, _) = pipe_run(&["--bytes", "--rate", "4GiB", "--report"], b"abc");
    assert_eq!(fields(&stderr, "target rate"), ["4,294,967,296", "bytes/s"]);
    assert_eq!(
        fields(&stderr, "effective rate"),
        ["4,294,967,296", "bytes/s"]
    );
    let (_, stderr, _) = pipe_run(&["--rate", "max", "--json"], b"a\nb\n");
    assert_eq!(f(&json(&stderr), "target_rate"), 1e9);
    rejects(
        &["pipe", "--bytes", "--rate", "100000GB"],
        &["'100000GB'", "--rate max"],
    );
}

#[test]
fn a_forced_progress_line_goes_to_stderr_only() {
    let input = numbered_lines(5);
    // 5 lines at 20 lines/s: drawn at once, then 5 times a second.
    let (out, stderr, _) = pipe_run(&["--rate", "20", "--progress"], input.as_bytes());
    assert_eq!(out, input.as_bytes(), "the data is untouched");
    // The first line comes at once (before the first input or just
    // after), without a recent rate.
    assert!(
        stderr.starts_with("\r0:00:00  ") && stderr.contains(" lines  -  (rate 20 lines/s)\r"),
        "{stderr:?}"
    );
    // The last line: everything written, at the achieved rate (20 lines/s,
    // less on a loaded machine), and a newline, as pv leaves it.
    let last = stderr.rsplit('\r').next().unwrap();
    let achieved: f64 = last
        .split("  5 lines  ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("{stderr:?}"));
    assert!((5.0..=20.05).contains(&achieved), "{stderr:?}");
    assert!(
        last.starts_with("0:00:0") && last.ends_with(" lines/s  (rate 20 lines/s)\n"),
        "{stderr:?}"
    );
    // A JSON report follows on a line of its own.
    let (_, stderr, _) = pipe_run(
        &["--rate", "1000", "--progress", "--json"],
        input.as_bytes(),
    );
    let (progress, report) = stderr.trim_end().rsplit_once('\n').unwrap();
    assert!(progress.starts_with('\r'), "{stderr:?}");
    assert_eq!(u(&json(report), "lines"), 5);
    // Bytes in binary units.
    let (_, stderr, _) = pipe_run(
        &["--bytes", "--rate", "1MiB", "--progress"],
        &vec![b'x'; 300_000],
    );
    let last = stderr.rsplit('\r').next().unwrap();
    assert!(
        last.contains("  293 KiB  ") && last.ends_with("(rate 1.00 MiB/s)\n"),
        "{stderr:?}"
    );
    // The last of --progress and --no-progress wins.
    let (_, stderr, _) = pipe_run(
        &["--rate", "1000", "--progress", "--no-progress"],
        input.as_bytes(),
    );
    assert!(stderr.is_empty(), "{stderr:?}");
    let (_, stderr, _) = pipe_run(
        &["--rate", "1000", "--no-progress", "--progress"],
        input.as_bytes(),
    );
    assert!(stderr.contains("5 lines"), "{stderr:?}");
}

/// Sends `signal` (e.g. `USR1`) to `child`.
#[cfg(unix)]
fn signal(child: &Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal}: {status}");
}

/// A running `pipe`'s output lines as they arrive, and its standard error
/// so far.
#[cfg(unix)]
struct Watched {
    arrivals: Receiver<Instant>,
    stderr: Arc<Mutex<String>>,
}

#[cfg(unix)]
impl Watched {
    /// Watches `child`'s standard output and error on threads of their own.
    fn new(child: &mut Child) -> Watched {
        let (tx, arrivals) = mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for _ in out.lines().map_while(Result::ok) {
                let _ = tx.send(Instant::now());
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut buf) {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Watched { arrivals, stderr }
    }

    /// The rate the progress line shows last, e.g. `40 lines/s`.
    fn shown_rate(&self) -> String {
        let err = self.stderr.lock().unwrap();
        err.rsplit_once("(rate ")
            .and_then(|(_, r)| r.split_once(')'))
            .map_or_else(String::new, |(r, _)| r.to_owned())
    }

    /// Waits until the progress line shows `rate`.
    fn wait_for_rate(&self, rate: &str) {
        wait_until(Duration::from_secs(20), rate, || self.shown_rate() == rate);
    }

    /// Drops the lines that arrived so far and `skip` more, then returns
    /// the rate of the next `n` lines (lines a second).
    fn rate_of_next(&self, skip: usize, n: usize) -> f64 {
        let next = || {
            self.arrivals
                .recv_timeout(Duration::from_secs(20))
                .expect("a line")
        };
        while self.arrivals.try_recv().is_ok() {}
        for _ in 0..skip {
            next();
        }
        let first = next();
        let last = (1..n).fold(first, |_, _| next());
        (n - 1) as f64 / (last - first).as_secs_f64()
    }
}

#[cfg(unix)]
#[test]
fn sigusr1_doubles_and_sigusr2_halves_a_running_copy() {
    let mut child = ratekeeper_std()
        .args(["pipe", "--rate", "20", "--json", "--progress"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    // 2000 short lines (under a pipe's 64 KiB), and the input left open.
    let mut input = child.stdin.take().unwrap();
    input.write_all(numbered_lines(2000).as_bytes()).unwrap();
    input.flush().unwrap();
    let watched = Watched::new(&mut child);
    let r1 = watched.rate_of_next(2, 8);
    // One signal at a time: Unix may merge two of a kind sent at once.
    signal(&child, "USR1");
    watched.wait_for_rate("40 lines/s");
    signal(&child, "USR1");
    watched.wait_for_rate("80 lines/s");
    let r2 = watched.rate_of_next(1, 24);
    signal(&child, "USR2");
    watched.wait_for_rate("40 lines/s");
    let r3 = watched.rate_of_next(1, 12);
    interrupt(&child);
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{status}");
    drop(input);
    let report = wait_for_report(&watched);
    let v = json(&report);
    assert_eq!(f(&v, "target_rate"), 20.0);
    assert_eq!(f(&v, "final_rate"), 40.0);
    assert_eq!(
        (u(&v, "rate_changes"), u(&v, "rate_changes_refused")),
        (3, 0)
    );
    // Never faster than the rate (the strict default), and faster after
    // the doublings: generous bounds for a loaded machine.
    assert!(r1 <= 30.0, "at 20 lines/s: {r1}");
    assert!(
        r2 > 1.5 * r1 && r2 <= 100.0,
        "at 80 lines/s: {r2} (before: {r1})"
    );
    assert!(r3 <= 55.0, "at 40 lines/s: {r3} (before: {r2})");
}

/// The JSON report: the last line of standard error, once it is there.
#[cfg(unix)]
fn wait_for_report(watched: &Watched) -> String {
    let last_line = || {
        let err = watched.stderr.lock().unwrap();
        err.trim_end()
            .rsplit('\n')
            .next()
            .filter(|l| l.starts_with('{') && l.ends_with('}'))
            .map(str::to_owned)
    };
    wait_until(Duration::from_secs(20), "the report", || {
        last_line().is_some()
    });
    last_line().unwrap()
}

#[cfg(unix)]
#[test]
fn a_step_past_the_fastest_rate_is_refused_and_the_copy_goes_on() {
    let mut child = ratekeeper_std()
        .args(["pipe", "--rate", "max", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    input.write_all(b"a\n").unwrap();
    output.read_line(&mut line).unwrap();
    signal(&child, "USR1");
    // Seen before the next line, once the handler thread has counted it.
    std::thread::sleep(Duration::from_millis(300));
    input.write_all(b"b\n").unwrap();
    output.read_line(&mut line).unwrap();
    assert_eq!(line, "a\nb\n");
    interrupt(&child);
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{status}");
    drop(input);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let (warning, report) = stderr.trim_end().split_once('\n').expect("two lines");
    assert_eq!(
        warning,
        "warning: SIGUSR1 ignored: 2,000,000,000 lines/s would be above the most pipe paces, \
         1,000,000,000 lines/s; the rate stays 1,000,000,000 lines/s"
    );
    let v = json(report);
    assert_eq!(f(&v, "final_rate"), 1e9);
    assert_eq!(
        (u(&v, "rate_changes"), u(&v, "rate_changes_refused")),
        (0, 1)
    );
    assert_eq!(u(&v, "lines"), 2);
}
