//! End-to-end tests of `ratekeeper pace --stages` (the rate ramped on the
//! running limiters, and the target that sets), `--fail-if` (conditions on
//! the report's figures, exit status 99) and `--hdr-out` (the histograms as
//! HdrHistogram's log), with the `wrote FILE` lines of it and `--plot`.
//!
//! Real clock, short runs (2 s at most), generous bounds: the tests share a
//! noisy 2-core machine.

use serde_json::Value;

mod common;
use common::{f, fields, json, ratekeeper, rejects, scratch, svg_texts, u};

/// Runs `ratekeeper pace ARGS`, expects exit status `code`; returns stdout
/// and stderr.
fn pace(args: &[&str], code: i32) -> (String, String) {
    let out = ratekeeper()
        .arg("pace")
        .args(args)
        .assert()
        .code(code)
        .get_output()
        .clone();
    (
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}

/// Runs `ratekeeper pace ARGS --json`, expects success; the report.
fn pace_json(args: &[&str]) -> Value {
    let mut with = args.to_vec();
    with.push("--json");
    json(&pace(&with, 0).0)
}

#[test]
fn stages_ramp_the_rate_of_the_running_limiter() {
    // From 50 ops/s up to 400/s over 1 s, then 400/s for 1 s: 625 ops due
    // (the integral of the rate), where --rate 50 alone would do 100.
    let v = pace_json(&["--rate", "50", "--stages", "1s:400,1s:400"]);
    let ops = u(&v, "ops");
    assert!((350..=800).contains(&ops), "{ops} ops: {v}");
    assert!(u(&v, "rate_changes") >= 5, "{v}");
    assert_eq!(u(&v, "rate_changes_refused"), 0, "{v}");
    assert_eq!(v["stages"], "1s:400,1s:400");
    assert_eq!(f(&v, "start_rate"), 50.0);
    assert_eq!(v["mode"], "duration");
    assert_eq!(u(&v, "duration_ns"), 2_000_000_000);
    assert_eq!(u(&v, "rate_span_ns"), 2_000_000_000);
    // The target is the stages' mean over the run, not --rate; behind and
    // the achieved rate are measured against it.
    let target = f(&v, "target_rate");
    assert!((target - 312.5).abs() < 1e-9, "{v}");
    assert!((f(&v, "ops_due") - 625.0).abs() < 1e-9, "{v}");
    let behind = 2e9 - ops as f64 * 1e9 / target;
    assert!(
        (u(&v, "behind_ns") as f64 - behind.max(0.0)).abs() <= 1.0,
        "{v}"
    );
    // The effective rate is --rate's, where the stages start.
    assert_eq!(f(&v, "effective_rate"), 50.0);
    // Without --stages: null.
    let v = pace_json(&["--rate", "2000", "--count", "10"]);
    for key in [
        "stages",
        "rate_changes",
        "rate_changes_refused",
        "start_rate",
        "ops_due",
        "ops_found_workers_busy",
    ] {
        assert!(v[key].is_null(), "{key}: {v}");
    }
}

#[test]
fn with_the_thread_scope_every_limiter_follows_the_stages() {
    // Two pacers, each from 20/s to 200/s over 300 ms: the target is the
    // pair's.
    let svg = scratch("pace-stages", "thread.svg");
    let (text, stderr) = pace(
        &[
            "--rate",
            "20,1.1,thread",
            "--threads",
            "2",
            "--stages",
            "300ms:200",
            "--plot",
            svg.to_str().unwrap(),
        ],
        0,
    );
    let stages = fields(&text, "stages");
    assert_eq!(
        stages[..6],
        ["300ms:200", "(from", "20", "ops/s", "on", "each"],
        "{text}"
    );
    assert!(text.contains("rate changes)"), "{text}");
    // 33 ops due per pacer (the integral of 20 up to 200/s over 300 ms),
    // over 300 ms: 110/s each.
    let target = fields(&text, "target rate");
    assert_eq!(target[..2], ["220", "ops/s"], "{text}");
    assert!(text.contains("(the stages' mean over the run)"), "{text}");
    // The effective rate is --rate's, and says so beside the stages' mean.
    assert!(
        text.contains("(at --rate, where the stages start)"),
        "{text}"
    );
    // The plot's target line is the ramp; standard error says where it
    // went.
    assert!(
        stderr
            .lines()
            .any(|l| l == format!("wrote {}", svg.display())),
        "{stderr}"
    );
    let texts = svg_texts(&std::fs::read_to_string(&svg).expect("the plot was written"));
    for label in ["target: --stages 300ms:200", "achieved"] {
        assert!(texts.iter().any(|t| t == label), "{label}: {texts:?}");
    }
    assert!(
        texts
            .iter()
            .any(|t| t.ends_with("--threads 2 --stages 300ms:200")),
        "the title: {texts:?}"
    );
}

#[test]
fn bad_stages_exit_2_with_the_parsers_message() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["pace", "--rate", "50"];
        v.extend(extra);
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
        &with(&["--stages", "1s:5", "--count", "3"]),
        &["--stages", "--count"],
    );
}

#[test]
fn help_documents_the_stages_fail_if_and_their_fields() {
    let out = ratekeeper()
        .args(["pace", "--help"])
        .assert()
        .success()
        .get_output()
        .clone();
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--stages <STAGES>",
        "Stages (--stages DUR:RATE,...)",
        "stages          --stages only",
        "rate_changes",
        "rate_changes_refused",
        "start_rate",
        "ratekeeper pace --rate 100 --stages 5s:2k,10s:2k,5s:0",
        "--fail-if <COND>",
        "Fail-if (--fail-if COND, repeatable)",
        "Exit status:",
        "failed_conditions",
        "--hdr-out <FILE>",
        "HdrHistogram log (--hdr-out FILE)",
    ] {
        assert!(help.contains(needle), "{needle:?} not in pace --help");
    }
}

/// The lines of `stderr` that tell an error (not a below-target warning a
/// busy machine may add).
fn errors(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("error:")).collect()
}

#[test]
fn a_fail_if_condition_that_holds_exits_99_after_the_report() {
    // Ops of 20 ms: a service p50 over 1 ms; no wait is an hour long.
    let args = [
        "--rate",
        "100",
        "--threads",
        "4",
        "--count",
        "8",
        "--work",
        "20ms",
        "--fail-if",
        "service.p50>1ms",
        "--fail-if",
        "wait.max>1h",
    ];
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let (stdout, stderr) = pace(&with_json, 99);
    let v = json(&stdout);
    assert_eq!(u(&v, "ops"), 8);
    assert_eq!(
        v["fail_if"],
        serde_json::json!(["service.p50>1ms", "wait.max>1h"])
    );
    assert_eq!(
        v["failed_conditions"],
        serde_json::json!(["service.p50>1ms"])
    );
    let told = errors(&stderr);
    assert_eq!(told.len(), 1, "{stderr}");
    assert!(
        told[0].starts_with("error: --fail-if service.p50>1ms: failed, measured "),
        "{stderr}"
    );
    // The text report says it too, as its last line.
    let (text, _) = pace(&args, 99);
    assert_eq!(
        text.lines().last(),
        Some("fail-if         1 of 2 conditions held: service.p50>1ms"),
        "{text}"
    );
}

#[test]
fn fail_if_conditions_that_do_not_hold_change_nothing() {
    let (stdout, stderr) = pace(
        &[
            "--rate",
            "2000",
            "--count",
            "10",
            "--fail-if",
            "wait.p75>1h",
            "--fail-if",
            "rate<1",
            "--json",
        ],
        0,
    );
    let v = json(&stdout);
    assert_eq!(v["fail_if"], serde_json::json!(["wait.p75>1h", "rate<1"]));
    assert_eq!(v["failed_conditions"], serde_json::json!([]));
    assert!(errors(&stderr).is_empty(), "{stderr}");
    // Without --fail-if: empty lists.
    let v = pace_json(&["--rate", "2000", "--count", "10"]);
    assert_eq!(v["fail_if"], serde_json::json!([]));
    assert_eq!(v["failed_conditions"], serde_json::json!([]));
}

#[test]
fn max_behind_exits_3_before_a_condition_that_held() {
    // One worker, 5 ms of work per op at 1,000 ops/s: far behind at once.
    let (_, stderr) = pace(
        &[
            "--rate",
            "1000",
            "--work",
            "5ms",
            "--max-behind",
            "50ms",
            "--fail-if",
            "service.p50>1ms",
        ],
        3,
    );
    let told = errors(&stderr);
    assert_eq!(told.len(), 2, "{stderr}");
    assert!(told[0].starts_with("error: --fail-if service.p50>1ms: failed"));
    assert!(told[1].contains("--max-behind 50ms"), "{stderr}");
}

#[test]
fn fail_if_on_a_figure_pace_does_not_measure_exits_2() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["pace", "--rate", "50", "--count", "1"];
        v.extend(extra);
        v
    };
    rejects(
        &with(&["--fail-if", "failures>0"]),
        &["--fail-if \"failures>0\"", "no failures"],
    );
    rejects(
        &with(&["--fail-if", "service.p99>1ms"]),
        &["does not measure service", "need --work"],
    );
    rejects(
        &with(&["--fail-if", "response>1ms"]),
        &["does not measure response"],
    );
    rejects(
        &with(&["--fail-if", "failures>0", "--work", "1ms"]),
        &["no failures"],
    );
    rejects(
        &with(&["--fail-if", "latency>5ms"]),
        &["'latency>5ms'", "--fail-if", "not a figure"],
    );
}

#[test]
fn hdr_out_writes_the_times_as_an_hdrhistogram_log() {
    let path = scratch("pace-stages", "ops.hlog");
    let hdr_out = path.to_str().unwrap();
    let with_work = [
        "--rate",
        "1000",
        "--threads",
        "2",
        "--count",
        "20",
        "--work",
        "1ms",
        "--hdr-out",
        hdr_out,
    ];
    let (stdout, stderr) = pace(&with_work, 0);
    assert!(
        stderr.lines().any(|l| l == format!("wrote {hdr_out}")),
        "{stderr}"
    );
    assert_eq!(fields(&stdout, "ops"), ["20"], "{stdout}");
    let tags = |log: &str, tag: &str| log.lines().filter(|l| l.starts_with(tag)).count();
    let log = std::fs::read_to_string(&path).expect("the log was written");
    assert!(log.contains("#[StartTime: "), "{log}");
    for tag in ["Tag=wait,", "Tag=service,", "Tag=response,"] {
        assert_eq!(tags(&log, tag), 1, "{tag}: {log}");
    }
    // Without --work: the waits only.
    pace(&["--rate", "1000", "--count", "5", "--hdr-out", hdr_out], 0);
    let log = std::fs::read_to_string(&path).expect("the log was written");
    assert_eq!(tags(&log, "Tag=wait,"), 1, "{log}");
    assert_eq!(tags(&log, "Tag="), 1, "{log}");
    // A file that cannot be created is refused before the run (exit 1).
    let (stdout, stderr) = pace(
        &[
            "--rate",
            "1",
            "--count",
            "100",
            "--hdr-out",
            "/no/such/dir/x.hlog",
        ],
        1,
    );
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("cannot create the --hdr-out file /no/such/dir/x.hlog"),
        "{stderr}"
    );
}
