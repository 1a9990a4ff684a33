//! End-to-end tests of `ratekeeper exec`: counts by exit status, response
//! and service times, --fail-fast, where the runs' output goes, plots,
//! --stages, --fail-if, --hdr-out, Ctrl-C, the progress line and bad input.
//!
//! The commands are `sh` one-liners and `sleep`; runs are short and timing
//! bounds generous, for a noisy 2-core machine.

mod common;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use predicates::prelude::*;
use serde_json::Value;

/// Runs `ratekeeper exec ARGS`, expects exit status `code`, and returns
/// stdout and stderr.
fn exec_run(args: &[&str], code: i32) -> (String, String) {
    let mut all = vec!["exec"];
    all.extend(args);
    let out = ratekeeper()
        .args(&all)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(code)
        .get_output()
        .clone();
    (
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}

/// Runs `ratekeeper exec ARGS --json` (exit status 0, nothing on stderr
/// but the achieved rate's warning) and parses the report.
fn exec_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.insert(0, "--json");
    let (stdout, stderr) = exec_run(&all, 0);
    assert!(quiet(&stderr).is_empty(), "stderr: {stderr}");
    json(&stdout)
}

/// Standard error without the achieved rate's warning, which a loaded
/// machine can earn any short run: a last run that started a slot late
/// (20 ms at 50 runs/s) leaves the rate a whole run short.
fn quiet(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("warning: achieved "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `{"STATUS": runs}` object of a report as pairs.
fn counts(v: &Value, key: &str) -> Vec<(String, u64)> {
    v[key]
        .as_object()
        .unwrap_or_else(|| panic!("{key} is not an object in {v}"))
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().expect("a count")))
        .collect()
}

fn pair(k: &str, n: u64) -> (String, u64) {
    (k.to_owned(), n)
}

#[test]
fn failed_runs_are_counted_by_exit_status_not_fatal() {
    let v = exec_json(&[
        "--rate", "50", "-c", "2", "-n", "6", "--", "sh", "-c", "exit 3",
    ]);
    assert_eq!(u(&v, "runs"), 6);
    assert_eq!(u(&v, "succeeded"), 0);
    assert_eq!(u(&v, "failed"), 6);
    assert_eq!(counts(&v, "exit_codes"), [pair("3", 6)]);
    assert_eq!(counts(&v, "signals"), []);
    assert_eq!(u(&v, "spawn_failed"), 0);
    assert!(v["spawn_error"].is_null());
    assert_eq!(v["command"], serde_json::json!(["sh", "-c", "exit 3"]));
    assert_eq!(v["mode"], "count");
    assert_eq!(u(&v, "count"), 6);
    assert_eq!(u(&v, "concurrency"), 2);
    assert_eq!(v["limiter"], "pacer");
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["stopped_by_fail_fast"], false);

    let v = exec_json(&["--rate", "50", "-n", "4", "--", "true"]);
    assert_eq!((u(&v, "succeeded"), u(&v, "failed")), (4, 0));
    assert_eq!(counts(&v, "exit_codes"), [pair("0", 4)]);
    let v = exec_json(&["--rate", "50", "-n", "3", "--", "false"]);
    assert_eq!(counts(&v, "exit_codes"), [pair("1", 3)]);
}

#[test]
fn mixed_exit_statuses_and_signals_are_told_apart() {
    // Run k (one at a time) exits with k % 3: statuses 1, 2, 0, 1, 2, 0.
    let counter = scratch("exec-tests", "counter");
    let v = exec_json(&[
        "--rate",
        "50",
        "-n",
        "6",
        "--",
        "sh",
        "-c",
        r#"n=$(( $(cat "$0" 2>/dev/null || echo 0) + 1 )); echo $n > "$0"; exit $((n % 3))"#,
        counter.to_str().unwrap(),
    ]);
    assert_eq!(
        counts(&v, "exit_codes"),
        [pair("0", 2), pair("1", 2), pair("2", 2)]
    );
    assert_eq!((u(&v, "succeeded"), u(&v, "failed")), (2, 4));

    let v = exec_json(&["--rate", "50", "-n", "2", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(counts(&v, "signals"), [pair("9", 2)]);
    assert_eq!(counts(&v, "exit_codes"), []);
    assert_eq!(u(&v, "failed"), 2);
}

#[test]
fn response_time_is_measured_from_the_schedule() {
    // One run at a time, each taking 200 ms, scheduled every 50 ms: run k
    // (from 0) cannot start before k x 200 ms, though it was due at k x 50 ms.
    // Its response time counts that delay: for the fifth, at least 600 ms of
    // wait plus 200 ms of service.
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--rate",
            "20",
            "-c",
            "1",
            "-n",
            "5",
            "--discard-stdout",
            "--",
            "sleep",
            "0.2",
        ],
        0,
    );
    let v = json(&stdout);
    assert_eq!(u(&v, "succeeded"), 5);
    // Every run started, late: none is due but not started, and the last
    // started at least 600 ms behind its schedule; the rate is short.
    assert_eq!(u(&v, "due_not_started"), 0);
    assert!(u(&v, "behind_ns") >= 600_000_000, "{v}");
    assert_eq!(v["below_target"], true);
    assert!(stderr.contains("0 runs due but not started"), "{stderr}");
    let (w, s, r) = (&v["wait_ns"], &v["service_ns"], &v["response_ns"]);
    for stat in ["p50", "p90", "p99", "p999", "max", "mean"] {
        // Response = wait + service for every run, so for every statistic.
        assert!(u(r, stat) >= u(s, stat), "{stat}: {r} vs {s}");
        assert!(u(r, stat) >= u(w, stat), "{stat}: {r} vs {w}");
    }
    assert!(u(s, "p50") >= 200_000_000, "service {s}");
    assert!(u(s, "max") < 5_000_000_000, "service {s}");
    assert!(u(w, "max") >= 600_000_000, "wait {w}");
    assert!(u(r, "max") >= 800_000_000, "response {r}");
    // The mean of a sum is the sum of the means (each rounded down).
    let sum = u(w, "mean") + u(s, "mean");
    assert!(u(r, "mean").abs_diff(sum) <= 2, "{r} vs {w} + {s}");
    // The slowest response is the last run's: it ended last.
    assert!(u(&v, "wall_ns") >= u(r, "max"));

    // With room for every run, each starts on time: the waits are small.
    let v = exec_json(&["--rate", "20", "-c", "8", "-n", "5", "--", "sleep", "0.2"]);
    assert!(u(&v["wait_ns"], "max") < 150_000_000, "{v}");
    let achieved = f(&v, "achieved_rate");
    assert!((10.0..=20.5).contains(&achieved), "achieved {achieved}");
}

#[test]
fn text_report_agrees_with_json() {
    let args = [
        "--rate", "50", "-c", "2", "-n", "6", "--", "sh", "-c", "exit 3",
    ];
    let (text, stderr) = exec_run(&args, 0);
    assert!(quiet(&stderr).is_empty(), "stderr: {stderr}");
    let v = exec_json(&args);
    assert_eq!(fields(&text, "command").join(" "), "sh -c 'exit 3'");
    assert_eq!(fields(&text, "spec"), [v["spec"].as_str().unwrap()]);
    assert_eq!(fields(&text, "concurrency"), ["2"]);
    assert_eq!(fields(&text, "runs")[0], u(&v, "runs").to_string());
    assert_eq!(fields(&text, "succeeded")[0], "0");
    assert_eq!(fields(&text, "failed"), ["6"]);
    assert_eq!(fields(&text, "exit 3"), ["6"]);
    assert_eq!(fields(&text, "target rate"), ["50", "runs/s"]);
    // Every percentile row has the seven statistics, as durations.
    for row in ["wait ", "service ", "response "] {
        let cells = fields(&text, row);
        assert_eq!(cells.len(), 7, "{row}: {cells:?}");
        let values: Vec<f64> = cells.iter().map(|c| text_nanos(c)).collect();
        assert!(values[..6].windows(2).all(|w| w[0] <= w[1]), "{values:?}");
    }
    assert!(!text.contains("interrupted"), "{text}");
}

#[test]
fn fail_fast_stops_at_the_first_failure() {
    let (stdout, stderr) = exec_run(
        &[
            "--rate",
            "20",
            "-n",
            "40",
            "--fail-fast",
            "--json",
            "--",
            "false",
        ],
        1,
    );
    let v = json(&stdout);
    assert_eq!(v["stopped_by_fail_fast"], true);
    assert_eq!(v["fail_fast"], true);
    // The first failure is seen long before the 40th run is due (2 s).
    let runs = u(&v, "runs");
    assert!((1..=10).contains(&runs), "runs {runs}");
    assert_eq!(u(&v, "failed"), runs);
    assert!(
        stderr.contains("run 1 exited with status 1; stopped by --fail-fast"),
        "{stderr}"
    );
    // Without a failure --fail-fast changes nothing.
    let v = exec_json(&["--rate", "50", "-n", "3", "--fail-fast", "--", "true"]);
    assert_eq!(u(&v, "runs"), 3);
    assert_eq!(v["stopped_by_fail_fast"], false);
}

#[test]
fn standard_output_goes_through_to_a_file_or_nowhere() {
    // By default, the runs write to ratekeeper's standard output, before
    // the report.
    let (text, _) = exec_run(&["--rate", "50", "-n", "3", "--", "echo", "hello"], 0);
    assert!(text.starts_with("hello\nhello\nhello\ncommand "), "{text}");
    assert!(text.contains("stdout          ratekeeper's"), "{text}");

    let (text, _) = exec_run(
        &[
            "--rate",
            "50",
            "-n",
            "3",
            "--discard-stdout",
            "--",
            "echo",
            "hello",
        ],
        0,
    );
    assert!(text.starts_with("command         echo hello\n"), "{text}");
    assert_eq!(text.matches("hello").count(), 1, "{text}");
    assert!(text.contains("stdout          discarded"), "{text}");

    // --stdout appends every run's output to the file.
    let file = scratch("exec-tests", "runs.log");
    let path = file.to_str().unwrap();
    for round in 1..=2 {
        let v = exec_json(&[
            "--rate", "50", "-c", "2", "-n", "3", "--stdout", path, "--", "echo", "hello",
        ]);
        assert_eq!(v["stdout"], "file");
        assert_eq!(v["stdout_file"], path);
        let log = std::fs::read_to_string(&file).expect("the runs' output");
        assert_eq!(log, "hello\n".repeat(3 * round));
    }
}

#[test]
fn limiters_and_their_options() {
    let v = exec_json(&[
        "--limiter",
        "bursty",
        "--max-burst",
        "0.5",
        "--rate",
        "40",
        "-n",
        "4",
        "--",
        "true",
    ]);
    assert_eq!(v["limiter"], "bursty");
    assert_eq!(f(&v, "max_burst_seconds"), 0.5);
    assert_eq!(v["resolution"], "micros");
    assert!(v.get("strictness").is_none());
    // Warming up, the limiter starts runs at a third of the rate: below
    // the target, and said so, though no run was held up.
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--limiter",
            "warmup",
            "--warmup",
            "200ms",
            "--rate",
            "40",
            "-n",
            "4",
            "--",
            "true",
        ],
        0,
    );
    let v = json(&stdout);
    assert_eq!(v["below_target"], true, "{v}");
    assert_eq!(u(&v, "due_not_started"), 0, "{v}");
    assert!(
        stderr.starts_with("warning: achieved ") && stderr.contains("below the target 40 runs/s"),
        "{stderr}"
    );
    assert_eq!(v["limiter"], "warmup");
    assert_eq!(u(&v, "warmup_ns"), 200_000_000);
    assert_eq!(f(&v, "cold_factor"), 3.0);
    assert_eq!(v["resolution"], "micros");
    let v = exec_json(&[
        "--limiter",
        "pool",
        "--rate",
        "40,1.5",
        "-n",
        "4",
        "--",
        "true",
    ]);
    assert_eq!(v["limiter"], "pool");
    assert_eq!(f(&v, "burst_ratio"), 1.5);
    assert_eq!(u(&v, "succeeded"), 4);
    let v = exec_json(&["--rate", "40", "--strictness", "1", "-n", "4", "--", "true"]);
    assert_eq!(v["strictness_mode"], "strict");
}

#[test]
fn refill_limiter_schedules_runs_and_counts_refusals() {
    // 2 permits per 100 ms: a bucket of 2, full at the start, refilled
    // every 50 ms; no waiting (timeout 0s): the third permit is refused,
    // counted, and asked for again once the bucket holds one. Every run
    // runs.
    let v = exec_json(&[
        "--limiter",
        "refill",
        "--rate",
        "20",
        "--refresh-period",
        "100ms",
        "--capacity",
        "2",
        "--initial-permits",
        "2",
        "--timeout",
        "0s",
        "-n",
        "5",
        "--",
        "true",
    ]);
    assert_eq!(v["limiter"], "refill");
    assert_eq!(
        (u(&v, "runs"), u(&v, "succeeded")),
        (5, 5),
        "every run ran: {v}"
    );
    assert_eq!(u(&v, "limit_for_period"), 2);
    assert_eq!(u(&v, "refresh_period_ns"), 100_000_000);
    assert_eq!(u(&v, "timeout_ns"), 0);
    assert_eq!((u(&v, "capacity"), u(&v, "initial_permits")), (2, 2));
    assert!(u(&v, "refused") >= 1, "refused: {v}");
    assert_eq!(f(&v, "effective_rate"), 20.0);
    assert!(v.get("strictness").is_none() && v.get("filling").is_none());
    // Three permits refilled 50 ms apart after the first two.
    let span = u(&v, "rate_span_ns");
    assert!(span >= 140_000_000, "rate span {span}");
}

#[test]
fn cycle_limiter_schedules_runs_a_permit_per_cycle() {
    // One permit at the start of each 100 ms cycle; runs wait for theirs.
    let v = exec_json(&[
        "--limiter",
        "cycle",
        "--rate",
        "10",
        "--refresh-period",
        "100ms",
        "-n",
        "3",
        "--",
        "true",
    ]);
    assert_eq!(v["limiter"], "cycle");
    assert_eq!(u(&v, "runs"), 3);
    assert_eq!(u(&v, "limit_for_period"), 1);
    assert_eq!(u(&v, "timeout_ns"), 5_000_000_000);
    assert_eq!(u(&v, "refused"), 0);
    assert!(v.get("capacity").is_none());
    assert!(u(&v, "rate_span_ns") >= 190_000_000, "{v}");

    let (text, _) = exec_run(
        &[
            "--limiter",
            "cycle",
            "--rate",
            "100",
            "--refresh-period",
            "10ms",
            "--timeout",
            "0s",
            "-n",
            "3",
            "--",
            "true",
        ],
        0,
    );
    assert!(
        text.contains(
            "limiter         Resilience4j CycleLimiter (1 permits at the start of each 10ms \
             cycle; timeout 0s)"
        ),
        "{text}"
    );
    assert_eq!(fields(&text, "refused")[1..3], ["(permits", "whose"]);
}

#[test]
fn every_limiter_option_of_pace_is_taken() {
    let v = exec_json(&[
        "--limiter",
        "pool",
        "--fill",
        "thread",
        "--fill-interval",
        "200us",
        "--rate",
        "40",
        "-n",
        "3",
        "--",
        "true",
    ]);
    assert_eq!(
        (v["filling"].as_str(), u(&v, "fill_interval_ns")),
        (Some("thread"), 200_000)
    );
    let v = exec_json(&["--rate", "40", "--precise", "-n", "2", "--", "true"]);
    assert_eq!(v["wait_policy"], "precise");
    assert!(v.get("refused").is_none());
    let cmd = ["--", "true"];
    let with = |args: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["exec"];
        v.extend(args);
        v.extend(cmd);
        v
    };
    rejects(
        &with(&["--rate", "5", "--limiter", "cycle", "--capacity", "3"]),
        &["--capacity", "RefillLimiter option", "--limiter refill"],
    );
    rejects(
        &with(&["--rate", "0.5", "--limiter", "refill"]),
        &["0.5 permits per period", "--refresh-period 10s"],
    );
    rejects(
        &with(&["--rate", "5", "--limiter", "bursty", "--timeout", "1s"]),
        &["--timeout", "Resilience4j limiter", "--limiter bursty"],
    );
    rejects(&with(&["--rate", "5", "--batch"]), &["flag of pace only"]);
}

#[test]
fn duration_runs_stop_starting_at_the_deadline() {
    let v = exec_json(&[
        "--rate",
        "20",
        "-c",
        "2",
        "--duration",
        "300ms",
        "--",
        "true",
    ]);
    assert_eq!(v["mode"], "duration");
    assert_eq!(u(&v, "duration_ns"), 300_000_000);
    assert!(v["count"].is_null());
    assert_eq!(u(&v, "rate_span_ns"), 300_000_000);
    let runs = u(&v, "runs");
    assert!((2..=7).contains(&runs), "runs {runs}");
}

#[test]
fn runs_due_but_not_started_are_counted_and_warned_about() {
    // 20 runs a second for 1 s, one at a time, each taking 200 ms: about 5
    // start; the other runs due before the deadline never do.
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--rate",
            "20",
            "-c",
            "1",
            "--duration",
            "1s",
            "--discard-stdout",
            "--",
            "sleep",
            "0.2",
        ],
        0,
    );
    let v = json(&stdout);
    let (runs, not_started) = (u(&v, "runs"), u(&v, "due_not_started"));
    assert!((2..=6).contains(&runs), "{v}");
    assert!(not_started >= 5, "{v}");
    // The schedule continued at the target rate: every run due in the
    // second either started or is counted.
    assert!((19..=21).contains(&(runs + not_started)), "{v}");
    // The next run due (the 6th, due at 250 ms, or later) was at least
    // 500 ms late at the deadline.
    assert!(u(&v, "behind_ns") >= 500_000_000, "{v}");
    assert_eq!(v["below_target"], true);
    assert_eq!(u(&v, "rate_span_ns"), 1_000_000_000);
    let warning = format!(
        " % below the target 20 runs/s: {not_started} runs due but not started, behind by "
    );
    assert!(stderr.starts_with("warning: achieved "), "{stderr}");
    assert!(stderr.contains(&warning), "{stderr}");
    assert!(stderr.ends_with(" at the end\n"), "{stderr}");

    // Room for every run: none is due but not started, and no warning.
    let v = exec_json(&[
        "--rate",
        "20",
        "-c",
        "8",
        "--duration",
        "500ms",
        "--",
        "sleep",
        "0.2",
    ]);
    assert_eq!(u(&v, "due_not_started"), 0, "{v}");
    assert_eq!(v["below_target"], false, "{v}");
}

#[test]
fn the_text_report_says_how_far_behind() {
    let args = [
        "--rate",
        "20",
        "-c",
        "1",
        "-n",
        "3",
        "--discard-stdout",
        "--",
        "sleep",
        "0.1",
    ];
    let (text, stderr) = exec_run(&args, 0);
    assert_eq!(fields(&text, "not started")[0], "0", "{text}");
    // Run 3, due at 100 ms, cannot start before 200 ms.
    let behind = text_nanos(&fields(&text, "behind")[0]);
    assert!(behind >= 90e6, "{text}");
    assert!(stderr.contains("below the target 20 runs/s"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn an_interrupted_runs_rate_is_over_the_time_it_ran() {
    // One run at a time, stalled for 30 s, interrupted after about 1 s:
    // 1 run over the second it ran, not over one slot.
    let log = scratch("exec-tests", "stalled.log");
    let mut child = ratekeeper_std()
        .args(["exec", "--rate", "5", "--duration", "60s", "--json"])
        .args(["--stdout", log.to_str().unwrap()])
        .args(["--", "sh", "-c", "echo started; exec sleep 30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    wait_until(Duration::from_secs(20), "the first run", || {
        lines_of(&log) >= 1
    });
    std::thread::sleep(Duration::from_millis(1000));
    interrupt(&child);
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{status}");
    let v = json(&read_all(child.stdout.take()));
    assert_eq!((u(&v, "runs"), u(&v, "interrupted_runs")), (1, 1), "{v}");
    assert!(u(&v, "rate_span_ns") >= 1_000_000_000, "{v}");
    assert!(f(&v, "achieved_rate") <= 1.0, "{v}");
    // Due at 200 ms, 400 ms, ... before the signal.
    assert!(u(&v, "due_not_started") >= 4, "{v}");
    assert!(u(&v, "behind_ns") >= 800_000_000, "{v}");
    assert_eq!(v["below_target"], true);
    let stderr = read_all(child.stderr.take());
    assert!(stderr.contains("runs due but not started"), "{stderr}");
}

#[test]
fn max_behind_ends_the_run_with_status_3() {
    let t = Instant::now();
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--rate",
            "20",
            "-c",
            "1",
            "--duration",
            "30s",
            "--max-behind",
            "300ms",
            "--discard-stdout",
            "--",
            "sleep",
            "0.2",
        ],
        3,
    );
    // Runs take 200 ms against 50 ms slots: 300 ms behind well within 2 s.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let v = json(&stdout);
    assert_eq!(v["stopped_by_max_behind"], true, "{v}");
    assert_eq!(u(&v, "max_behind_ns"), 300_000_000);
    assert!(u(&v, "behind_ns") >= 300_000_000, "{v}");
    assert_eq!(v["interrupted"], false);
    // The run still running was sent SIGTERM: interrupted, not failed.
    assert_eq!(u(&v, "failed"), 0, "{v}");
    assert_eq!(
        u(&v, "succeeded") + u(&v, "interrupted_runs"),
        u(&v, "runs"),
        "{v}"
    );
    assert!(
        stderr.contains("error: the run fell ")
            && stderr.contains("behind its schedule; stopped by --max-behind 300ms"),
        "{stderr}"
    );
    // Kept up with: --max-behind changes nothing.
    let v = exec_json(&[
        "--rate",
        "50",
        "-n",
        "3",
        "--max-behind",
        "1s",
        "--",
        "true",
    ]);
    assert_eq!(v["stopped_by_max_behind"], false);
    assert_eq!(u(&v, "runs"), 3);
}

#[test]
fn bad_input_exits_2_naming_the_value() {
    let cmd = ["--", "true"];
    let with = |args: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["exec"];
        v.extend(args);
        v.extend(cmd);
        v
    };
    rejects(&with(&["--rate", "abc"]), &["'abc'", "--rate"]);
    rejects(&with(&["--rate", "0"]), &["'0'", "greater than zero"]);
    rejects(
        &with(&["--rate", "5", "--concurrency", "0"]),
        &["'0'", "--concurrency", "at least 1"],
    );
    rejects(
        &with(&["--rate", "5", "-c", "lots"]),
        &["'lots'", "1 to 1024"],
    );
    rejects(&with(&["--rate", "5", "-n", "0"]), &["'0'", "--count"]);
    rejects(
        &with(&["--rate", "5", "--duration", "soon"]),
        &["'soon'", "--duration", "500ms"],
    );
    rejects(
        &with(&["--rate", "5", "--max-behind", "0s"]),
        &["'0s'", "--max-behind", "greater than zero"],
    );
    rejects(
        &with(&["--rate", "5", "--grace", "soon"]),
        &["'soon'", "--grace"],
    );
    rejects(
        &with(&["--rate", "5", "--duration", "1s", "-n", "3"]),
        &["--duration", "--count"],
    );
    rejects(
        &with(&["--rate", "5", "--limiter", "bucket"]),
        &["'bucket'", "pacer, pool, bursty, warmup"],
    );
    rejects(
        &with(&["--rate", "5", "--limiter", "bursty", "--strictness", "1"]),
        &["--strictness is a Pacer option", "--limiter pacer"],
    );
    rejects(
        &with(&["--rate", "5", "--warmup", "1s"]),
        &["--warmup", "--limiter warmup"],
    );
    rejects(
        &with(&["--rate", "5", "--limiter", "warmup"]),
        &["--limiter warmup needs --warmup"],
    );
    rejects(
        &with(&["--rate", "5,1.5", "--limiter", "bursty"]),
        &["burst ratio 1.5", "--rate 5"],
    );
    rejects(
        &with(&["--rate", "5,thread"]),
        &["thread scope", "--concurrency"],
    );
    rejects(
        &with(&["--rate", "5", "--stdout", "x.log", "--discard-stdout"]),
        &["--stdout", "--discard-stdout"],
    );
    rejects(
        &with(&["--rate", "5", "--plot", "runs.gif"]),
        &["'runs.gif'", ".svg or .png"],
    );
    rejects(&["exec", "--rate", "5"], &["COMMAND"]);
    rejects(&["exec", "--rate", "5", "true"], &["run after --"]);
    rejects(
        &["exec", "--rate", "5", "--", "no-such-command-xyz", "-v"],
        &["'no-such-command-xyz'", "not found in PATH"],
    );
    rejects(
        &["exec", "--rate", "5", "--", "./no/such/script.sh"],
        &["'./no/such/script.sh'", "not an executable file"],
    );
}

#[test]
fn plots_the_runs_started_and_their_times_in_svg_and_png() {
    let svg_path = scratch("exec-tests", "exec.svg");
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--rate",
            "20",
            "-c",
            "2",
            "-n",
            "10",
            "--plot",
            svg_path.to_str().unwrap(),
            "--",
            "sleep",
            "0.05",
        ],
        0,
    );
    // Where the plot went, and nothing else.
    assert_eq!(
        quiet(&stderr),
        format!("wrote {}", svg_path.display()),
        "{stderr}"
    );
    let v = json(&stdout);
    assert_eq!(u(&v, "runs"), 10);
    let svg = std::fs::read_to_string(&svg_path).expect("the SVG was written");
    let texts = svg_texts(&svg);
    for label in [
        "started",
        "target 20 ops/s",
        "longest response",
        "mean response",
        "mean service",
        "rate (ops/s)",
    ] {
        assert!(texts.iter().any(|t| t == label), "{label}: {texts:?}");
    }
    // The started rate, the target and three time series, apart by colour.
    let colors = svg_line_colors(&svg);
    assert!(colors.len() >= 4, "{colors:?}");

    let png_path = scratch("exec-tests", "exec.png");
    exec_run(
        &[
            "--rate",
            "20",
            "-n",
            "6",
            "--plot",
            png_path.to_str().unwrap(),
            "--bucket",
            "50ms",
            "--",
            "true",
        ],
        0,
    );
    let (size, pixels) = png_pixels(&std::fs::read(&png_path).expect("the PNG was written"));
    assert_eq!(size, (1000, 760));
    let drawn = colors.iter().filter(|c| pixels.contains(*c)).count();
    assert!(drawn >= 3, "{drawn} of {colors:?} drawn in the PNG");
}

#[test]
fn no_progress_line_without_a_terminal() {
    let (_, stderr) = exec_run(&["--rate", "50", "-n", "3", "--", "true"], 0);
    assert!(quiet(&stderr).is_empty(), "stderr: {stderr}");
}

/// `script` runs the command on a pseudo-terminal: standard error is then a
/// terminal and the progress line appears, cleared at the end.
#[cfg(target_os = "linux")]
#[test]
fn progress_line_on_a_terminal() {
    let child = std::process::Command::new("script")
        .args([
            "-qec",
            &format!(
                "'{}' exec --rate 20 -n 10 --discard-stdout -- sleep 0.01 >/dev/null",
                env!("CARGO_BIN_EXE_ratekeeper")
            ),
            "/dev/null",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux's script(1) runs the command on a terminal");
    let watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let out = child.wait_with_output().expect("script's output");
    drop(watchdog);
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("runs started"), "{shown}");
    assert!(shown.contains("(target 20 ops/s)"), "{shown}");
    // Cleared before the report: the last thing drawn erases the line
    // (before the achieved rate's warning, if a loaded machine earned it).
    let drawn = shown.trim_end();
    let drawn = drawn
        .rfind("warning: achieved ")
        .map_or(drawn, |w| &drawn[..w]);
    assert!(drawn.trim_end().ends_with("\x1b[2K"), "{shown:?}");
}

#[test]
fn closed_stdout_is_not_an_error() {
    let mut child = ratekeeper_std()
        .args(["exec", "--rate", "50", "-n", "3", "--", "true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = wait_with_limit(&mut child, Duration::from_secs(30));
    assert!(status.success(), "status {status}, stderr {stderr}");
    assert!(quiet(&stderr).is_empty(), "stderr: {stderr}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_starting_runs_and_reports_what_ran() {
    let log = scratch("exec-tests", "ctrl-c.log");
    let mut child = ratekeeper_std()
        .args([
            "exec",
            "--rate",
            "10",
            "--duration",
            "60s",
            "--stdout",
            log.to_str().unwrap(),
            "--json",
            "--",
            "sh",
            "-c",
            "echo started; sleep 0.05",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    // Runs have started: the handler is installed.
    wait_until(Duration::from_secs(20), "the first run", || {
        lines_of(&log) >= 2
    });
    let sent = Instant::now();
    interrupt(&child);
    let status = wait_with_limit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{status}");
    // A run takes 50 ms; the permit being waited for is given back at once.
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    let v = json(&read_all(child.stdout.take()));
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["signal"], "SIGINT");
    assert_eq!(u(&v, "killed"), 0);
    let runs = u(&v, "runs");
    assert!((2..600).contains(&runs), "runs {runs}");
    // A run still running at the signal was sent SIGTERM: interrupted.
    let interrupted = u(&v, "interrupted_runs");
    assert!(interrupted <= 1, "{v}");
    assert_eq!(u(&v, "succeeded") + interrupted, runs, "{v}");
    assert_eq!(u(&v, "failed"), 0, "{v}");
    let echoed = lines_of(&log) as u64;
    assert!(echoed == runs || echoed + 1 == runs, "{echoed} of {runs}");
}

/// Reads what a child wrote to a pipe, to its end.
fn read_all(pipe: Option<impl Read>) -> String {
    let mut text = String::new();
    pipe.expect("a piped stream")
        .read_to_string(&mut text)
        .expect("read the child's output");
    text
}

/// Signals sent to `ratekeeper exec` and what becomes of its runs: each
/// run is a tree of processes (a shell and its children) in a process group
/// of its own, which records its group's id (the shell's pid, `$$`) to a
/// file as it starts.
#[cfg(any(target_os = "linux", target_os = "macos", target_os = "freebsd"))]
mod signals {
    use std::path::{Path, PathBuf};
    use std::process::{Child, Stdio};
    use std::time::{Duration, Instant};

    use rustix::process::{kill_process, kill_process_group, Pid, Signal};
    use serde_json::Value;

    use super::common::*;
    use super::read_all;

    /// A running `ratekeeper exec --json` whose runs are `sh -c 'echo $$ >>
    /// PIDS; SCRIPT' PIDS MARKS`: the script finds the marks file as `$1`.
    struct Tree {
        child: Child,
        pids: PathBuf,
        marks: PathBuf,
        _watchdog: Watchdog,
    }

    impl Tree {
        /// Starts 20 runs a second for 60 s, two at a time, with `extra`
        /// options; with `own_group`, ratekeeper leads a process group of
        /// its own, as a shell's job does on a terminal.
        fn start(name: &str, extra: &[&str], script: &str, own_group: bool) -> Tree {
            let pids = scratch("exec-signals", &format!("{name}.pids"));
            let marks = scratch("exec-signals", &format!("{name}.marks"));
            let mut command = ratekeeper_std();
            command
                .args(["exec", "--rate", "20", "-c", "2", "--duration", "60s"])
                .args(["--json", "--discard-stdout"])
                .args(extra)
                .args(["--", "sh", "-c", &format!("echo $$ >> \"$0\"; {script}")])
                .args([&pids, &marks])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if own_group {
                use std::os::unix::process::CommandExt;
                command.process_group(0);
            }
            let child = command.spawn().expect("spawn ratekeeper");
            let watchdog = Watchdog::new(&child, PROCESS_LIMIT);
            Tree {
                child,
                pids,
                marks,
                _watchdog: watchdog,
            }
        }

        /// Waits for both runs to have started; returns their groups' ids.
        fn running(&self) -> Vec<i32> {
            wait_until(Duration::from_secs(20), "two runs", || {
                groups(&self.pids).len() >= 2
            });
            // The shell's children have started too.
            std::thread::sleep(Duration::from_millis(200));
            let groups = groups(&self.pids);
            assert_eq!(groups.len(), 2, "-c 2: {groups:?}");
            groups
        }

        /// Waits for ratekeeper's exit: its status and its JSON report.
        fn finish(mut self) -> (Option<i32>, Value, String) {
            let status = wait_with_limit(&mut self.child, Duration::from_secs(30));
            let report = json(&read_all(self.child.stdout.take()));
            let marks = std::fs::read_to_string(&self.marks).unwrap_or_default();
            (status.code(), report, marks)
        }

        fn pid(&self) -> Pid {
            Pid::from_raw(self.child.id() as i32).expect("a pid")
        }
    }

    /// A failed test leaves nothing running: ratekeeper and its runs'
    /// groups are killed (the watchdog, disarmed as the test unwinds, would
    /// not).
    impl Drop for Tree {
        fn drop(&mut self) {
            if !std::thread::panicking() {
                return;
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
            for g in groups(&self.pids) {
                if let Some(pid) = Pid::from_raw(g) {
                    let _ = kill_process_group(pid, Signal::KILL);
                }
            }
        }
    }

    /// The process groups' ids the runs wrote to `pids`.
    fn groups(pids: &Path) -> Vec<i32> {
        std::fs::read_to_string(pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// The live processes (not zombies) in process group `group`, from
    /// `/proc`.
    #[cfg(target_os = "linux")]
    fn group_members(group: i32) -> Vec<i32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let Some((_, rest)) = stat.rsplit_once(')') else {
                    return false;
                };
                let f: Vec<&str> = rest.split_whitespace().take(3).collect();
                f.len() == 3 && f[0] != "Z" && f[0] != "X" && f[2] == group.to_string()
            })
            .collect()
    }

    /// Elsewhere: the group's leader, if a signal can reach the group.
    #[cfg(not(target_os = "linux"))]
    fn group_members(group: i32) -> Vec<i32> {
        let pid = Pid::from_raw(group).expect("a pid");
        match rustix::process::test_kill_process_group(pid) {
            Ok(()) => vec![group],
            Err(_) => Vec::new(),
        }
    }

    /// Every run led its own group, with its children in it, while it ran.
    fn assert_trees(groups: &[i32], own: i32) {
        for &g in groups {
            assert_ne!(g, own, "a run in ratekeeper's group");
            let members = group_members(g);
            assert!(members.contains(&g), "{g} leads its group: {members:?}");
            #[cfg(target_os = "linux")]
            assert!(
                members.len() >= 2,
                "{g}: the shell and its children: {members:?}"
            );
        }
    }

    /// No process of any run is left.
    fn assert_gone(groups: &[i32]) {
        for &g in groups {
            let t = Instant::now();
            while !group_members(g).is_empty() {
                assert!(
                    t.elapsed() < Duration::from_secs(5),
                    "process group {g} is left: {:?}",
                    group_members(g)
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Interrupted runs: sent SIGTERM, not failed, not counted by status.
    fn assert_interrupted(v: &Value, signal: &str, killed: u64) {
        assert_eq!(v["interrupted"], true, "{v}");
        assert_eq!(v["signal"], signal, "{v}");
        assert_eq!(u(v, "runs"), 2, "{v}");
        assert_eq!(u(v, "interrupted_runs"), 2, "{v}");
        assert_eq!(u(v, "terminated"), 2, "{v}");
        assert_eq!(u(v, "killed"), killed, "{v}");
        assert_eq!((u(v, "succeeded"), u(v, "failed")), (0, 0), "{v}");
        assert_eq!(v["signals"], serde_json::json!({}), "{v}");
        assert_eq!(v["exit_codes"], serde_json::json!({}), "{v}");
    }

    /// `signal` to ratekeeper ends it with `status`, and its runs, trees of
    /// three processes, with SIGTERM: none is left.
    fn a_tree_of_runs_ends_with(signal: Signal, name: &str, status: i32) {
        let tree = Tree::start(name, &[], "sleep 300 & sleep 300; wait", false);
        let groups = tree.running();
        assert_trees(&groups, tree.child.id() as i32);
        let sent = Instant::now();
        kill_process(tree.pid(), signal).expect("signal ratekeeper");
        let (code, v, _) = tree.finish();
        assert_eq!(code, Some(status), "{v}");
        // SIGTERM ends the runs at once: no wait for the 5 s grace.
        assert!(
            sent.elapsed() < Duration::from_secs(4),
            "{:?}",
            sent.elapsed()
        );
        assert_interrupted(&v, name, 0);
        assert_eq!(u(&v, "grace_ns"), 5_000_000_000);
        assert_gone(&groups);
    }

    #[test]
    fn sigint_ends_the_runs_process_trees_with_sigterm() {
        a_tree_of_runs_ends_with(Signal::INT, "SIGINT", 130);
    }

    #[test]
    fn sigterm_ends_the_runs_process_trees_with_sigterm() {
        a_tree_of_runs_ends_with(Signal::TERM, "SIGTERM", 143);
    }

    #[test]
    fn a_run_ignoring_sigterm_is_killed_after_the_grace() {
        // The ignored SIGTERM is inherited by sleep: the whole tree stays.
        let script = "trap '' TERM; sleep 300 & sleep 300; wait";
        let tree = Tree::start("SIGKILL", &["--grace", "300ms"], script, false);
        let groups = tree.running();
        let sent = Instant::now();
        kill_process(tree.pid(), Signal::TERM).expect("signal ratekeeper");
        let (code, v, _) = tree.finish();
        assert_eq!(code, Some(143), "{v}");
        let took = sent.elapsed();
        assert!(
            took >= Duration::from_millis(300),
            "before the grace: {took:?}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
        assert_interrupted(&v, "SIGTERM", 2);
        assert_eq!(u(&v, "grace_ns"), 300_000_000);
        assert_gone(&groups);
    }

    #[test]
    fn what_a_run_leaves_in_its_group_is_killed_after_the_grace() {
        // The shell dies of SIGTERM; its child, which ignores it, stays in
        // the group until the grace is over.
        let script = "(trap '' TERM; exec sleep 300) & wait";
        let tree = Tree::start("leftover", &["--grace", "300ms"], script, false);
        let groups = tree.running();
        let sent = Instant::now();
        kill_process(tree.pid(), Signal::TERM).expect("signal ratekeeper");
        let (code, v, _) = tree.finish();
        assert_eq!(code, Some(143), "{v}");
        let took = sent.elapsed();
        // Where the group's members can be listed, the leftover gets the
        // grace; elsewhere it is killed as soon as the shell is gone.
        #[cfg(target_os = "linux")]
        assert!(
            took >= Duration::from_millis(300),
            "before the grace: {took:?}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
        #[cfg(target_os = "linux")]
        assert_interrupted(&v, "SIGTERM", 2);
        assert_gone(&groups);
    }

    #[test]
    fn a_second_signal_kills_the_runs_at_once() {
        let script = "trap '' TERM; sleep 300";
        let tree = Tree::start("twice", &[], script, false);
        let groups = tree.running();
        kill_process(tree.pid(), Signal::INT).expect("signal ratekeeper");
        // SIGTERM is ignored, and the grace is 5 s: still running.
        std::thread::sleep(Duration::from_millis(300));
        let mut tree = tree;
        assert!(tree.child.try_wait().unwrap().is_none(), "waiting for runs");
        let sent = Instant::now();
        kill_process(tree.pid(), Signal::INT).expect("signal ratekeeper");
        let (code, v, _) = tree.finish();
        assert_eq!(code, Some(130), "{v}");
        assert!(
            sent.elapsed() < Duration::from_secs(4),
            "{:?}",
            sent.elapsed()
        );
        assert_interrupted(&v, "SIGINT", 2);
        assert_gone(&groups);
    }

    #[test]
    fn a_terminals_ctrl_c_reaches_ratekeeper_only() {
        // Each run notes the signals it gets; SIGINT must not be one.
        let script = "trap 'echo INT >> \"$1\"; exit 130' INT; \
                      trap 'echo TERM >> \"$1\"; exit 143' TERM; sleep 300 & wait";
        let tree = Tree::start("terminal", &[], script, true);
        let groups = tree.running();
        // As a terminal does: SIGINT to ratekeeper's (foreground) group.
        kill_process_group(tree.pid(), Signal::INT).expect("signal the group");
        let (code, v, marks) = tree.finish();
        assert_eq!(code, Some(130), "{v}");
        assert_eq!(
            marks, "TERM\nTERM\n",
            "only ratekeeper's SIGTERM reached the runs"
        );
        // Ended by our SIGTERM (exit 143 from the trap): interrupted, not a
        // "signal 2" failure.
        assert_interrupted(&v, "SIGINT", 0);
        assert_gone(&groups);
    }
}

#[test]
fn help_has_examples_and_the_json_schema() {
    for flag in ["-h", "--help"] {
        ratekeeper().args(["exec", flag]).assert().success().stdout(
            predicate::str::contains("Examples:").and(predicate::str::contains(
                "ratekeeper exec --rate 5 --concurrency 2 -n 20 -- curl -s http://127.0.0.1:8080/",
            )),
        );
    }
    ratekeeper()
        .args(["exec", "--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("response_ns")
                .and(predicate::str::contains("exit_codes"))
                .and(predicate::str::contains("stopped_by_fail_fast"))
                .and(predicate::str::contains("coordinated omission"))
                .and(predicate::str::contains("--concurrency <N>"))
                .and(predicate::str::contains("--fail-fast"))
                .and(predicate::str::contains("Ctrl-C"))
                .and(predicate::str::contains("--grace <DUR>"))
                .and(predicate::str::contains("--max-behind <DUR>"))
                .and(predicate::str::contains("interrupted_runs"))
                .and(predicate::str::contains("due_not_started"))
                .and(predicate::str::contains("stopped_by_max_behind"))
                .and(predicate::str::contains("process group"))
                .and(predicate::str::contains("--stages <STAGES>"))
                .and(predicate::str::contains("rate_changes"))
                .and(predicate::str::contains("--fail-if <COND>"))
                .and(predicate::str::contains("--hdr-out <FILE>"))
                .and(predicate::str::contains("failed_conditions"))
                .and(predicate::str::contains("99")),
        );
    ratekeeper()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("exec").and(predicate::str::contains("pipe")));
}

#[test]
fn the_effective_rate_is_reported_and_a_truncated_slot_warned_about() {
    // 510M runs/s: a 1.96 ns slot truncated to 1 ns, 1e9 runs/s.
    let (stdout, stderr) = exec_run(&["--json", "--rate", "510M", "-n", "2", "--", "true"], 0);
    assert!(
        stderr.starts_with(
            "warning: --limiter pacer runs at 1,000,000,000 ops/s, not the target 510,000,000 ops/s \
             (+96.08 %): one run's slot is floor(1e9 / rate) = 1 ns\n"
        ),
        "{stderr}"
    );
    // Two spawns take far longer than 2 ns: the achieved rate's warning.
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(
        stderr.contains("below the target 510,000,000 runs/s"),
        "{stderr}"
    );
    let v = json(&stdout);
    assert_eq!(f(&v, "effective_rate"), 1e9);
    // 50 runs/s: 20 ms, exact; no warning (exec_json checks stderr).
    let v = exec_json(&["--rate", "50", "-n", "1", "--", "true"]);
    assert_eq!(f(&v, "effective_rate"), 50.0);
    let (text, stderr) = exec_run(&["--rate", "50", "-n", "1", "--", "true"], 0);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(fields(&text, "effective rate"), ["50", "runs/s"]);
}

#[test]
fn stages_ramp_the_rate_of_the_running_limiter() {
    // From 5 runs/s up to 40/s over 1 s, then 40/s for 1 s: 62.5 runs due
    // (the integral of the rate), where --rate 5 alone would start 10.
    let t = Instant::now();
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--rate",
            "5",
            "--stages",
            "1s:40,1s:40",
            "--discard-stdout",
            "--",
            "true",
        ],
        0,
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(quiet(&stderr).is_empty(), "stderr: {stderr}");
    let v = json(&stdout);
    let runs = u(&v, "runs");
    assert!((35..=90).contains(&runs), "{runs} runs: {v}");
    assert!(u(&v, "rate_changes") >= 5, "{v}");
    assert_eq!(u(&v, "rate_changes_refused"), 0, "{v}");
    assert_eq!(v["stages"], "1s:40,1s:40");
    assert_eq!(f(&v, "start_rate"), 5.0);
    assert_eq!(v["mode"], "duration");
    assert_eq!(u(&v, "duration_ns"), 2_000_000_000);
    // The target is the stages' mean over the run, not --rate.
    let target = f(&v, "target_rate");
    assert!((target - 31.25).abs() < 1e-9, "{v}");
    assert!((f(&v, "runs_due") - 62.5).abs() < 1e-9, "{v}");
    // The text report says the same.
    let (text, _) = exec_run(&["--rate", "20", "--stages", "300ms:40", "--", "true"], 0);
    let stages = fields(&text, "stages");
    assert_eq!(stages[..3], ["300ms:40", "(from", "20"], "{text}");
    assert!(text.contains("rate changes)"), "{text}");
    assert!(
        text.contains("(the stages' mean over the rate span)"),
        "{text}"
    );
    assert!(
        text.contains("(at --rate, where the stages start)"),
        "{text}"
    );
    // Without --stages: null.
    let v = exec_json(&["--rate", "50", "-n", "1", "--", "true"]);
    assert!(v["stages"].is_null() && v["rate_changes"].is_null(), "{v}");
}

#[test]
fn a_rate_the_limiter_refuses_is_warned_about_once_and_the_run_goes_on() {
    // Refill counts whole permits per period in 32 bits: 100 s at more
    // than 43M/s is too many. The limiter's rate covers the ramp 200 ms
    // ahead: 10/s is taken at first, more than 43M/s refused from 300 ms.
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--limiter",
            "refill",
            "--rate",
            "10",
            "--refresh-period",
            "100s",
            "--stages",
            "300ms:10,300ms:100M",
            "--discard-stdout",
            "--",
            "true",
        ],
        0,
    );
    let v = json(&stdout);
    assert!(u(&v, "rate_changes_refused") >= 1, "{v}");
    assert!(u(&v, "rate_changes") >= 1, "{v}");
    assert!(u(&v, "runs") >= 1, "{v}");
    let refusals: Vec<_> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: --stages: the limiter refused the rate"))
        .collect();
    assert_eq!(refusals.len(), 1, "{stderr}");
    assert!(refusals[0].contains("the run goes on"), "{stderr}");
}

#[test]
fn bad_stages_exit_2_with_the_parsers_message() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["exec", "--rate", "5"];
        v.extend(extra);
        v.extend(["--", "true"]);
        v
    };
    rejects(
        &with(&["--stages", "10s:fast"]),
        &["'10s:fast'", "--stages", "not a rate"],
    );
    rejects(
        &with(&["--stages", "10s"]),
        &["--stages", "expected DURATION:RATE"],
    );
    rejects(&with(&["--stages", "0s:5"]), &["lasts no time"]);
    rejects(
        &with(&["--stages", "1s:5", "--duration", "1s"]),
        &["--stages", "--duration"],
    );
    rejects(
        &with(&["--stages", "1s:5", "-n", "3"]),
        &["--stages", "--count"],
    );
}

#[test]
fn a_fail_if_condition_that_holds_exits_99_after_the_report() {
    // Runs of 50 ms: a service p99 over 1 ms.
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--rate",
            "20",
            "-n",
            "5",
            "--fail-if",
            "service.p99>1ms",
            "--fail-if",
            "failures>0",
            "--",
            "sleep",
            "0.05",
        ],
        99,
    );
    let v = json(&stdout);
    assert_eq!(u(&v, "runs"), 5);
    assert_eq!(
        v["fail_if"],
        serde_json::json!(["service.p99>1ms", "failures>0"])
    );
    assert_eq!(
        v["failed_conditions"],
        serde_json::json!(["service.p99>1ms"])
    );
    let told: Vec<_> = quiet(&stderr).lines().map(str::to_owned).collect();
    assert_eq!(told.len(), 1, "{stderr}");
    assert!(
        told[0].starts_with("error: --fail-if service.p99>1ms: failed, measured "),
        "{stderr}"
    );
    // The text report says it too.
    let (text, _) = exec_run(
        &[
            "--rate",
            "20",
            "-n",
            "2",
            "--fail-if",
            "service>1ms",
            "--",
            "sleep",
            "0.05",
        ],
        99,
    );
    assert!(
        text.contains("fail-if         1 of 1 condition held: service>1ms\n"),
        "{text}"
    );
}

#[test]
fn fail_if_conditions_that_do_not_hold_change_nothing() {
    let v = exec_json(&[
        "--rate",
        "50",
        "-n",
        "3",
        "--fail-if",
        "failures>0",
        "--fail-if",
        "response.max>30s",
        "--fail-if",
        "rate<0.5",
        "--",
        "true",
    ]);
    assert_eq!(v["failed_conditions"], serde_json::json!([]));
    assert_eq!(v["fail_if"].as_array().map(Vec::len), Some(3));
    // Without --fail-if: empty.
    let v = exec_json(&["--rate", "50", "-n", "1", "--", "true"]);
    assert_eq!(v["fail_if"], serde_json::json!([]));
    assert_eq!(v["failed_conditions"], serde_json::json!([]));
}

#[test]
fn failed_runs_fail_a_failures_condition_and_a_stop_wins_over_99() {
    let (_, stderr) = exec_run(
        &[
            "--rate",
            "50",
            "-n",
            "2",
            "--fail-if",
            "failures>=2",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
        99,
    );
    assert!(
        stderr.contains("error: --fail-if failures>=2: failed, measured 2\n"),
        "{stderr}"
    );
    // --fail-fast's 1 comes first; the condition is told all the same.
    let (_, stderr) = exec_run(
        &[
            "--rate",
            "50",
            "-n",
            "3",
            "--fail-fast",
            "--fail-if",
            "failures>0",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
        1,
    );
    assert!(stderr.contains("error: --fail-if failures>0"), "{stderr}");
    assert!(stderr.contains("stopped by --fail-fast"), "{stderr}");
    // So does --max-behind's 3.
    let (_, stderr) = exec_run(
        &[
            "--rate",
            "20",
            "--duration",
            "30s",
            "--max-behind",
            "300ms",
            "--fail-if",
            "failures>=0",
            "--discard-stdout",
            "--",
            "sleep",
            "0.2",
        ],
        3,
    );
    assert!(stderr.contains("error: --fail-if failures>=0"), "{stderr}");
    assert!(stderr.contains("stopped by --max-behind"), "{stderr}");
}

#[test]
fn bad_fail_if_conditions_exit_2_before_the_run() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["exec", "--rate", "5", "-n", "1"];
        v.extend(extra);
        v.extend(["--", "true"]);
        v
    };
    rejects(
        &with(&["--fail-if", "latency>5ms"]),
        &["'latency>5ms'", "--fail-if", "not a figure"],
    );
    rejects(
        &with(&["--fail-if", "response.p99"]),
        &["--fail-if", "no comparison"],
    );
    rejects(
        &with(&["--fail-if", "rate<fast"]),
        &["--fail-if", "not a rate"],
    );
}

#[test]
fn hdr_out_writes_the_times_as_an_hdrhistogram_log() {
    let path = scratch("exec-tests", "runs.hlog");
    let (stdout, stderr) = exec_run(
        &[
            "--json",
            "--rate",
            "50",
            "-n",
            "4",
            "--hdr-out",
            path.to_str().unwrap(),
            "--",
            "true",
        ],
        0,
    );
    assert_eq!(
        quiet(&stderr),
        format!("wrote {}", path.display()),
        "{stderr}"
    );
    assert_eq!(u(&json(&stdout), "runs"), 4);
    let log = std::fs::read_to_string(&path).expect("the log was written");
    assert!(log.contains("#[StartTime: "), "{log}");
    for tag in ["Tag=wait,", "Tag=service,", "Tag=response,"] {
        let lines = log.lines().filter(|l| l.starts_with(tag)).count();
        assert_eq!(lines, 1, "{tag}: {log}");
    }
    // A file that cannot be created is refused before the run.
    let out = ratekeeper()
        .args([
            "exec",
            "--rate",
            "50",
            "-n",
            "1",
            "--hdr-out",
            "/no/such/dir/x.hlog",
        ])
        .args(["--", "true"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot create the --hdr-out file /no/such/dir/x.hlog"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// A command that fails on its first run only, and succeeds after (the
/// runs are one at a time): `MARK` tells them apart.
fn fails_first(mark: &std::path::Path, first: &str, then: &str) -> String {
    format!(
        "[ -e '{m}' ] || {{ touch '{m}'; {first}; }}; {then}",
        m = mark.display()
    )
}

#[test]
fn fail_if_takes_failures_as_a_percentage_of_finished_runs() {
    // All four runs fail: 100 % of the finished runs.
    let (_, stderr) = exec_run(
        &[
            "--rate",
            "100",
            "-n",
            "4",
            "--fail-if",
            "failures>1%",
            "--",
            "false",
        ],
        99,
    );
    assert!(
        stderr.contains("error: --fail-if failures>1%: failed, measured 100% (4 of 4 runs)\n"),
        "{stderr}"
    );
    // One of four: 25 %, which is not above 25 % but is at least 25 %.
    for (cond, code) in [
        ("failures>25%", 0),
        ("failures>=25%", 99),
        ("failures>0.5%", 99),
    ] {
        let mark = scratch("exec-fail-share", &format!("{code}-{cond}"));
        let script = fails_first(&mark, "exit 1", "exit 0");
        let (stdout, stderr) = exec_run(
            &[
                "--rate",
                "100",
                "-n",
                "4",
                "--json",
                "--fail-if",
                cond,
                "--",
                "sh",
                "-c",
                &script,
            ],
            code,
        );
        let v = json(&stdout);
        assert_eq!((u(&v, "failed"), u(&v, "succeeded")), (1, 3), "{cond}: {v}");
        if code == 99 {
            assert!(
                stderr.contains(&format!(
                    "error: --fail-if {cond}: failed, measured 25% (1 of 4 runs)\n"
                )),
                "{cond}: {stderr}"
            );
            assert_eq!(v["failed_conditions"], serde_json::json!([cond]));
        }
    }
    // A percentage is for failures only, and at most 100 %.
    rejects(
        &["exec", "--rate", "5", "--fail-if", "rate<90%", "--", "true"],
        &["--fail-if", "percentage", "failures"],
    );
    rejects(
        &[
            "exec",
            "--rate",
            "5",
            "--fail-if",
            "failures>101%",
            "--",
            "true",
        ],
        &["--fail-if", "0 to 100"],
    );
}

#[test]
fn p95_is_reported_beside_p90_and_p99() {
    let (stdout, _) = exec_run(&["--rate", "200", "-n", "20", "--", "true"], 0);
    let header: Vec<&str> = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("p50"))
        .unwrap_or_else(|| panic!("no table in {stdout}"))
        .split_whitespace()
        .collect();
    assert_eq!(header, ["p50", "p90", "p95", "p99", "p99.9", "max", "mean"]);
    let v = exec_json(&[
        "--rate",
        "200",
        "-n",
        "20",
        "--fail-if",
        "response.p95>1h",
        "--",
        "true",
    ]);
    for key in ["wait_ns", "service_ns", "response_ns"] {
        let s = &v[key];
        let p = |q: &str| s[q].as_u64().unwrap_or_else(|| panic!("{key}.{q}: {s}"));
        assert!(p("p90") <= p("p95") && p("p95") <= p("p99"), "{key}: {s}");
    }
}

#[test]
fn runs_are_counted_by_the_status_they_print() {
    // As curl -w '%{http_code}' prints it: after the body, no newline.
    let v = exec_json(&[
        "--rate",
        "100",
        "-n",
        "3",
        "--status-from-stdout",
        "--",
        "sh",
        "-c",
        "printf '<p>hi</p>\\n503'",
    ]);
    assert_eq!(counts(&v, "stdout_statuses"), [pair("503", 3)]);
    assert_eq!(counts(&v, "exit_codes"), [pair("0", 3)]);
    assert_eq!(v["stdout"], "status");
    // With curl --fail, an HTTP error also exits 22: a failed run, for
    // --fail-if failures; the status it printed is counted all the same.
    let mark = scratch("exec-status", "first");
    let script = fails_first(&mark, "echo 503; exit 22", "echo 200");
    let (stdout, stderr) = exec_run(
        &[
            "--rate",
            "100",
            "-n",
            "4",
            "--status-from-stdout",
            "--",
            "sh",
            "-c",
            &script,
        ],
        0,
    );
    assert!(stderr.is_empty() || !stderr.contains("200"), "{stderr}");
    assert!(
        stdout.contains("stdout          read for the status"),
        "{stdout}"
    );
    assert_eq!(fields(&stdout, "status 200"), ["3"], "{stdout}");
    assert_eq!(fields(&stdout, "status 503"), ["1"], "{stdout}");
    assert_eq!(fields(&stdout, "exit 22"), ["1"], "{stdout}");
    assert_eq!(fields(&stdout, "failed"), ["1"], "{stdout}");
    // A run that prints nothing has no status.
    let v = exec_json(&[
        "--rate",
        "100",
        "-n",
        "2",
        "--status-from-stdout",
        "--",
        "true",
    ]);
    assert_eq!(counts(&v, "stdout_statuses"), [pair("", 2)]);
    // Its output is read, so it cannot also go elsewhere.
    for other in [&["--discard-stdout"][..], &["--stdout", "x.log"][..]] {
        let mut args = vec!["exec", "--rate", "5", "--status-from-stdout"];
        args.extend(other);
        args.extend(["--", "true"]);
        rejects(&args, &["--status-from-stdout", other[0]]);
    }
}
