//! End-to-end tests of `ratekeeper pace --work` (each op's work, and its
//! service and response times) and of pace's overload accounting (how far
//! behind its schedule a run ends, the below-target warning, --max-behind).
//!
//! Real clock, short runs (about a second at most), generous bounds: the
//! tests share a noisy 2-core machine.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{f, ratekeeper, rejects, u, Watchdog, PROCESS_LIMIT};

const MS: u64 = 1_000_000;

/// Runs `ratekeeper ARGS`, expects success; returns the JSON report on
/// stdout and standard error.
fn json_run(args: &[&str]) -> (Value, String) {
    let out = ratekeeper()
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    (v, String::from_utf8(out.stderr).expect("utf-8 stderr"))
}

/// The percentiles of one of the report's time objects, p50 to max.
fn quantiles(v: &Value, key: &str) -> [u64; 5] {
    let o = &v[key];
    ["p50", "p90", "p99", "p999", "max"].map(|q| u(o, q))
}

/// Every op's response is its wait plus its service: so each response
/// percentile is at least the same service and wait percentile, and the
/// mean response is the mean wait plus the mean service (each rounded
/// down).
fn assert_response_is_wait_plus_service(v: &Value) {
    let (wait, service, response) = (
        quantiles(v, "wait_ns"),
        quantiles(v, "service_ns"),
        quantiles(v, "response_ns"),
    );
    for i in 0..5 {
        assert!(response[i] >= service[i], "response below service: {v}");
        assert!(response[i] >= wait[i], "response below wait: {v}");
    }
    let sum = u(&v["wait_ns"], "mean") + u(&v["service_ns"], "mean");
    let mean = u(&v["response_ns"], "mean");
    assert!(
        (sum..=sum + 1).contains(&mean),
        "mean response {mean}, wait + service {sum}"
    );
    assert_eq!(u(v, "completed"), u(v, "ops"), "every op's work ran: {v}");
}

#[test]
fn work_reports_service_and_response_times() {
    let (v, stderr) = json_run(&[
        "pace",
        "--rate",
        "100",
        "--threads",
        "1",
        "--work",
        "5ms",
        "--count",
        "50",
        "--json",
    ]);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(u(&v, "ops"), 50);
    assert_eq!(u(&v, "work_ns"), 5 * MS);
    assert_eq!(u(&v, "work_jitter_ns"), 0);
    assert_eq!(v["work_cpu"], false);
    assert_response_is_wait_plus_service(&v);
    // A sleep of 5 ms takes at least 5 ms.
    let service = quantiles(&v, "service_ns");
    assert!(service[0] >= 5 * MS, "service p50 {}", service[0]);
}

#[test]
fn a_schedule_the_workers_cannot_keep_shows_in_the_response_times() {
    // 1000/s with 5 ms of work per op: the one worker does about 200 ops a
    // second, so op k, due at k ms, starts at about 5k ms. Its response time
    // is measured from k ms (wrk2's coordinated-omission correction): the
    // median grows to hundreds of milliseconds while the service stays 5 ms.
    let args = [
        "pace",
        "--rate",
        "1000",
        "--threads",
        "1",
        "--work",
        "5ms",
        "--duration",
        "1s",
        "--json",
    ];
    let (late, _) = json_run(&args);
    assert_response_is_wait_plus_service(&late);
    let (service, response) = (
        quantiles(&late, "service_ns"),
        quantiles(&late, "response_ns"),
    );
    assert!(
        response[0] >= 100 * MS && response[0] >= 10 * service[0],
        "response p50 {} vs service p50 {}",
        response[0],
        service[0]
    );
    assert!(u(&late, "ops") < 500, "{late}");

    // At 50/s (20 ms slots) the same work keeps up: the response median stays
    // near the service (a busy machine may wake a worker late now and then),
    // far below the late run's.
    let mut keeping = args;
    keeping[2] = "50";
    keeping[8] = "500ms";
    let (ok, _) = json_run(&keeping);
    assert_response_is_wait_plus_service(&ok);
    let (ok_service, ok_response) = (quantiles(&ok, "service_ns"), quantiles(&ok, "response_ns"));
    assert!(
        ok_response[0] < ok_service[0] + 40 * MS && 3 * ok_response[0] < response[0],
        "response p50 {} vs service p50 {} (late: {})",
        ok_response[0],
        ok_service[0],
        response[0]
    );
}

#[test]
fn work_with_jitter_and_on_the_cpu() {
    let (v, _) = json_run(&[
        "pace",
        "--rate",
        "200",
        "--threads",
        "2",
        "--work",
        "4ms~2ms",
        "--count",
        "40",
        "--json",
    ]);
    assert_eq!(u(&v, "work_jitter_ns"), 2 * MS);
    assert_response_is_wait_plus_service(&v);
    let service = quantiles(&v, "service_ns");
    assert!(service[0] >= 2 * MS, "service p50 {}", service[0]);
    assert!(service[4] >= 4 * MS, "some ops drew more than 4 ms: {v}");

    // --work-cpu spins: the work is CPU time (a thread preempted while it
    // spins loses some, hence the margin).
    let (v, _) = json_run(&[
        "pace",
        "--rate",
        "100",
        "--work",
        "4ms",
        "--work-cpu",
        "--count",
        "20",
        "--json",
    ]);
    assert_eq!(v["work_cpu"], true);
    assert_response_is_wait_plus_service(&v);
    assert!(quantiles(&v, "service_ns")[0] >= 4 * MS, "{v}");
    if cfg!(target_os = "linux") {
        let per_op = u(&v, "cpu_ns_per_op");
        assert!(per_op >= MS, "cpu per op {per_op} for 4 ms of spinning");
    }
}

#[test]
fn the_text_report_shows_the_work_and_a_table() {
    let out = ratekeeper()
        .args([
            "pace",
            "--rate",
            "200",
            "--work",
            "1ms~500us",
            "--count",
            "10",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("work            1.00ms ± 500µs per op, sleeping\n"),
        "{text}"
    );
    for row in ["wait  ", "service  ", "response  "] {
        assert!(text.lines().any(|l| l.starts_with(row)), "{row}: {text}");
    }
    assert!(text.contains("p99.9"), "{text}");
    assert!(
        !text.contains("wait p50"),
        "the table replaces them: {text}"
    );
}

#[test]
fn without_work_the_report_has_no_work_fields() {
    let (v, _) = json_run(&["pace", "--rate", "2000", "--count", "20", "--json"]);
    for key in [
        "work_ns",
        "work_jitter_ns",
        "work_cpu",
        "completed",
        "service_ns",
        "response_ns",
    ] {
        assert!(v.get(key).is_none(), "{key} without --work: {v}");
    }
    let out = ratekeeper()
        .args(["pace", "--rate", "2000", "--count", "20"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("wait p50        "), "{text}");
    assert!(
        !text.contains("service") && !text.contains("response"),
        "{text}"
    );
}

#[test]
fn bad_work_values_are_refused_with_our_message() {
    let base = ["pace", "--rate", "100", "--count", "1"];
    for (work, says) in [
        ("0s", "the work must take longer than zero"),
        ("-2ms", "the work cannot be negative"),
        ("2ms~-1ms", "the jitter cannot be negative"),
        ("2ms~3ms", "the jitter (3ms) is larger than the work (2ms)"),
        ("fast", "the work \"fast\" is not a duration"),
        ("2ms~", "the jitter \"\" is not a duration"),
    ] {
        let mut args = base.to_vec();
        args.extend(["--work", work]);
        rejects(&args, &[says, "2ms~500us"]);
    }
    let mut args = base.to_vec();
    args.push("--work-cpu");
    rejects(&args, &["--work-cpu", "needs --work"]);
}

/// Ctrl-C cuts a long --work short: the run ends at once with its report,
/// the op counts in ops and wait, not in service and response.
#[cfg(unix)]
#[test]
fn ctrl_c_cuts_a_long_work_short() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
        .args([
            "pace",
            "--rate",
            "10",
            "--work",
            "60s",
            "--duration",
            "60s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    std::thread::sleep(Duration::from_millis(700));
    let sent = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().expect("wait");
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{status}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(u(&v, "ops"), 1, "{v}");
    assert_eq!(u(&v, "completed"), 0, "{v}");
    assert_eq!(u(&v["service_ns"], "max"), 0, "{v}");
    assert!(f(&v, "achieved_rate") > 0.0);
}

#[test]
fn help_documents_the_work_and_overload_fields() {
    let out = ratekeeper()
        .args(["pace", "--help"])
        .assert()
        .success()
        .get_output()
        .clone();
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--work <DUR[~JITTER]>",
        "--work-cpu",
        "response   end - scheduled = wait + service",
        "work_ns",
        "work_jitter_ns",
        "work_cpu",
        "completed",
        "service_ns",
        "response_ns",
        "ratekeeper pace --rate 1000 --threads 4 --work 2ms~500us",
        "behind          rate span - ops / target rate",
        "behind_ns",
        "below_target",
        "the run fell behind",
    ] {
        assert!(help.contains(needle), "{needle:?} not in pace --help");
    }
}

/// The run's `behind_ns` is what its elapsed time and ops say:
/// elapsed - ops / target rate, at least 0 (to a nanosecond's rounding).
fn assert_behind_is_consistent(v: &Value) {
    let elapsed = u(v, "rate_span_ns") as f64;
    let used = u(v, "ops") as f64 * 1e9 / f(v, "target_rate");
    let behind = u(v, "behind_ns") as f64;
    assert!(
        (behind - (elapsed - used).max(0.0)).abs() <= 1.0,
        "behind {behind}, elapsed {elapsed}, ops' schedule {used}: {v}"
    );
}

#[test]
fn runs_that_keep_up_are_not_behind_and_not_warned() {
    // Duration and count runs, a shared and a per-thread pacer, burst
    // ratios, and limiters that start with a burst (refill's initial
    // permits) or store idle time (bursty).
    for args in [
        &["--rate", "200", "--duration", "500ms"][..],
        &["--rate", "2000", "--count", "200"],
        &[
            "--rate",
            "2000,1.5",
            "--threads",
            "2",
            "--duration",
            "300ms",
        ],
        &[
            "--rate",
            "500,1.1,thread",
            "--threads",
            "2",
            "--duration",
            "300ms",
        ],
        &["--rate", "100", "--work", "2ms", "--duration", "300ms"],
        &[
            "--limiter",
            "refill",
            "--rate",
            "1000",
            "--refresh-period",
            "100ms",
            "--capacity",
            "200",
            "--timeout",
            "10ms",
            "--threads",
            "2",
            "--duration",
            "300ms",
        ],
        &[
            "--limiter",
            "bursty",
            "--rate",
            "1000",
            "--duration",
            "300ms",
        ],
        &[
            "--limiter",
            "pool",
            "--rate",
            "2000,1.1",
            "--duration",
            "300ms",
        ],
    ] {
        let mut all = vec!["pace", "--json"];
        all.extend(args);
        let (v, stderr) = json_run(&all);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
        assert_eq!(v["below_target"], false, "{args:?}: {v}");
        assert!(u(&v, "behind_ns") < 100 * MS, "{args:?}: {v}");
        assert_behind_is_consistent(&v);
    }
}

#[test]
fn a_run_the_workers_cannot_keep_ends_behind_with_a_warning() {
    // 1000/s with 5 ms of work per op: about 200 ops in the second, so the
    // run ends about 800 ms behind its schedule.
    let args = [
        "pace",
        "--rate",
        "1000",
        "--threads",
        "1",
        "--work",
        "5ms",
        "--duration",
        "1s",
    ];
    let mut json = args.to_vec();
    json.push("--json");
    let (v, stderr) = json_run(&json);
    assert_behind_is_consistent(&v);
    let behind = u(&v, "behind_ns");
    assert!((500 * MS..=1_000 * MS).contains(&behind), "{v}");
    assert_eq!(v["below_target"], true, "{v}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("warning: the run fell behind: it achieved ")
            && stderr.contains("% below the target 1,000 ops/s, and ended ")
            && stderr.trim_end().ends_with("behind its schedule"),
        "{stderr}"
    );

    let out = ratekeeper()
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("behind          "))
        .unwrap_or_else(|| panic!("no behind line: {text}"));
    assert!(line
        .ends_with("(rate span - ops / target rate: how far behind its schedule the run ended)"));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .starts_with("warning: the run fell behind"));
}

/// A run Ctrl-C ends early reports its rate over the time it ran: not the
/// whole --duration, and, when a worker was stuck in a long --work, not
/// just until the last op started either.
#[cfg(unix)]
#[test]
fn an_interrupted_run_counts_the_time_it_ran() {
    for (work, ops) in [(None, 10..=90), (Some("60s"), 1..=1)] {
        let mut args = vec!["pace", "--rate", "100", "--duration", "60s", "--json"];
        if let Some(w) = work {
            args.extend(["--work", w]);
        }
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ratekeeper");
        let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
        std::thread::sleep(Duration::from_millis(800));
        let kill = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(kill.success());
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(child.wait().expect("wait").code(), Some(130));
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(v["interrupted"], true);
        assert!(ops.contains(&u(&v, "ops")), "{work:?}: {v}");
        // About the 800 ms it ran (less the process's start): neither the
        // 60 s asked for nor, stuck in its work, one 10 ms slot.
        let elapsed = u(&v, "rate_span_ns");
        assert!((100 * MS..10_000 * MS).contains(&elapsed), "{work:?}: {v}");
        assert_behind_is_consistent(&v);
        let achieved = f(&v, "achieved_rate");
        match work {
            // Kept up: about the target, not 60 s's worth below it.
            None => assert!(achieved > 50.0 && v["below_target"] == false, "{v}"),
            // One op in the time it ran: far below, and behind.
            Some(_) => assert!(achieved < 10.0 && v["below_target"] == true, "{v}"),
        }
    }
}

#[test]
fn a_cold_warm_up_limiter_is_behind_but_not_checked_against_the_target() {
    // Cold, it grants at a third of the rate: behind by design, no warning.
    let (v, stderr) = json_run(&[
        "pace",
        "--limiter",
        "warmup",
        "--warmup",
        "1s",
        "--rate",
        "1000",
        "--duration",
        "300ms",
        "--json",
    ]);
    assert!(stderr.is_empty(), "{stderr}");
    assert!(v["below_target"].is_null(), "{v}");
    assert!(f(&v, "achieved_rate") < 800.0, "{v}");
    assert!(u(&v, "behind_ns") > 20 * MS, "{v}");
    assert_behind_is_consistent(&v);
}

/// Runs `ratekeeper ARGS` and returns its exit code, standard output and
/// standard error, and how long it took.
fn run_any(args: &[&str]) -> (Option<i32>, String, String, Duration) {
    let t = Instant::now();
    let out = ratekeeper().args(args).output().expect("run ratekeeper");
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
        t.elapsed(),
    )
}

#[test]
fn max_behind_ends_a_run_that_falls_that_far_behind_with_status_3() {
    // 1000/s with 5 ms of work per op falls 4 ms behind per op: 100 ms
    // after about 25 ops, long before the 30 s (or 100 000 ops) asked for.
    for stop in [["--duration", "30s"], ["--count", "100000"]] {
        let mut args = vec![
            "pace",
            "--rate",
            "1000",
            "--work",
            "5ms",
            "--max-behind",
            "100ms",
            "--json",
        ];
        args.extend(stop);
        let (code, stdout, stderr, took) = run_any(&args);
        assert_eq!(code, Some(3), "{stop:?}: {stderr}");
        assert!(took < Duration::from_secs(20), "{stop:?}: {took:?}");
        let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert_eq!(v["stopped_by_max_behind"], true, "{v}");
        assert_eq!(v["interrupted"], false, "{v}");
        assert_eq!(u(&v, "max_behind_ns"), 100 * MS);
        assert_behind_is_consistent(&v);
        // It stopped about 100 ms behind (the ops started since the check
        // can only make up a few ms).
        let behind = u(&v, "behind_ns");
        assert!((80 * MS..1_000 * MS).contains(&behind), "{v}");
        assert!((5..500).contains(&u(&v, "ops")), "{v}");
        assert_eq!(stderr.lines().count(), 1, "only the error line: {stderr}");
        assert!(
            stderr.starts_with("error: the run fell ")
                && stderr.contains(" behind its schedule (--max-behind 100ms) and was stopped "),
            "{stderr}"
        );
    }
}

#[test]
fn max_behind_cuts_a_stalled_worker_short() {
    // The first op's work takes 60 s: the run is 100 ms behind 110 ms in,
    // and --max-behind wakes the worker from its work at once.
    let (code, stdout, _, took) = run_any(&[
        "pace",
        "--rate",
        "100",
        "--work",
        "60s",
        "--max-behind",
        "100ms",
        "--duration",
        "60s",
        "--json",
    ]);
    assert_eq!(code, Some(3));
    assert!(took < Duration::from_secs(20), "{took:?}");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(u(&v, "ops"), 1, "{v}");
    assert_eq!(u(&v, "completed"), 0, "{v}");
    // Elapsed runs until the check fired, not one 10 ms slot.
    assert!(u(&v, "rate_span_ns") >= 100 * MS, "{v}");
    assert!(u(&v, "behind_ns") >= 90 * MS, "{v}");
}

#[test]
fn max_behind_leaves_a_run_that_keeps_up_alone() {
    // Keeps up: status 0, the field reported.
    let (v, stderr) = json_run(&[
        "pace",
        "--rate",
        "200",
        "--duration",
        "300ms",
        "--max-behind",
        "50ms",
        "--json",
    ]);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(u(&v, "max_behind_ns"), 50 * MS);
    assert_eq!(v["stopped_by_max_behind"], false);
    // No op is due after the deadline: the last op's work running on past
    // it (here to 400 ms) does not count as falling behind. At the 200 ms
    // deadline the run is 190 ms behind, under the 250 ms limit.
    let (v, stderr) = json_run(&[
        "pace",
        "--rate",
        "100",
        "--work",
        "400ms",
        "--duration",
        "200ms",
        "--max-behind",
        "250ms",
        "--json",
    ]);
    assert_eq!(v["stopped_by_max_behind"], false, "{v}");
    assert_eq!(u(&v, "ops"), 1, "{v}");
    assert!(
        stderr.starts_with("warning: the run fell behind"),
        "{stderr}"
    );
    // Without --max-behind: null.
    let (v, _) = json_run(&["pace", "--rate", "2000", "--count", "5", "--json"]);
    assert!(
        v["max_behind_ns"].is_null() && v["stopped_by_max_behind"] == false,
        "{v}"
    );
}

#[test]
fn bad_max_behind_values_exit_2() {
    for (bad, says) in [
        ("0s", "greater than zero"),
        ("soon", "expected a duration"),
        ("-5ms", "cannot be negative"),
    ] {
        rejects(
            &["pace", "--rate", "100", "--count", "1", "--max-behind", bad],
            &["--max-behind", says],
        );
    }
}
