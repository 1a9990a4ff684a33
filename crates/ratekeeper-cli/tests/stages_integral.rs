//! End-to-end tests of `--stages` as an arrival schedule (`pace` and
//! `exec`): by any time the ops due are the integral of the ramp's rate, a
//! ramp from a low rate (or from 0, without `--rate`) is not held back by
//! its first slot, the report sets the count against that integral, and a
//! run short of workers says so.
//!
//! Real clock, short runs, generous bounds: the tests share a noisy 2-core
//! machine.

use serde_json::Value;

mod common;
use common::{f, json, ratekeeper, u};

/// Runs `ratekeeper SUB ARGS --json`, expects exit status 0; the report and
/// standard error.
fn run_json(sub: &str, args: &[&str]) -> (Value, String) {
    let out = ratekeeper()
        .args([sub, "--json"])
        .args(args)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    (json(&stdout), String::from_utf8(out.stderr).expect("utf-8"))
}

#[test]
fn a_pace_ramp_from_a_low_rate_does_the_integral_of_its_rate() {
    // From 1 op/s to 1000/s over 2 s: the integral is 1 001 ops; the
    // first op's slot at 1/s used to hold everything back (69-126 ops).
    let (v, _) = run_json(
        "pace",
        &["--rate", "1", "--stages", "2s:1000", "--threads", "1"],
    );
    let ops = u(&v, "ops");
    assert!((900..=1_002).contains(&ops), "{ops} ops: {v}");
    assert!((f(&v, "ops_due") - 1_001.0).abs() < 1e-6, "{v}");
    assert!((f(&v, "target_rate") - 500.5).abs() < 1e-6, "{v}");
}

#[test]
fn an_exec_ramp_from_a_tenth_of_a_run_a_second_starts_its_integral() {
    // 0.1/s up to 10/s over 1 s: 5.05 runs due (the first at the start,
    // then one whenever the integral reaches a whole run): 6 runs, where
    // the first run's 10 s slot used to let 1 start.
    let (v, _) = run_json(
        "exec",
        &[
            "--rate", "0.1", "--stages", "1s:10", "-c", "4", "--", "true",
        ],
    );
    let runs = u(&v, "runs");
    assert!((5..=6).contains(&runs), "{runs} runs: {v}");
    assert!((f(&v, "runs_due") - 5.05).abs() < 1e-6, "{v}");
}

#[test]
fn an_exec_ramp_that_keeps_up_is_not_behind() {
    // 1/s up to 20/s over 3 s, then 20/s for 2 s: 71.5 runs due.
    let (v, stderr) = run_json(
        "exec",
        &[
            "--rate",
            "1",
            "--stages",
            "3s:20,2s:20",
            "-c",
            "4",
            "--",
            "true",
        ],
    );
    let runs = u(&v, "runs");
    assert!((68..=72).contains(&runs), "{runs} runs: {v}");
    assert!((f(&v, "runs_due") - 71.5).abs() < 1e-6, "{v}");
    assert_eq!(v["below_target"], false, "{v}\n{stderr}");
}

#[test]
fn stages_without_rate_ramp_from_zero() {
    // From 0 up to 400/s over 1 s: 200 ops due, the first at the start.
    let (v, _) = run_json("pace", &["--stages", "1s:400"]);
    assert!((f(&v, "ops_due") - 200.0).abs() < 1e-6, "{v}");
    let ops = u(&v, "ops");
    assert!((180..=201).contains(&ops), "{ops} ops: {v}");
    assert_eq!(f(&v, "start_rate"), 0.0, "{v}");
    let (v, _) = run_json("exec", &["--stages", "1s:20", "-c", "2", "--", "true"]);
    assert!((f(&v, "runs_due") - 10.0).abs() < 1e-6, "{v}");
    assert!((9..=11).contains(&u(&v, "runs")), "{v}");
}

#[test]
fn a_run_short_of_threads_says_so() {
    // 100 ops/s of 50 ms each need 5 workers; one cannot keep up.
    let (v, stderr) = run_json(
        "pace",
        &["--rate", "100", "--stages", "1s:100", "--work", "50ms"],
    );
    assert_eq!(v["below_target"], true, "{v}");
    assert!(u(&v, "ops_found_workers_busy") > 10, "{v}");
    assert!(
        stderr.contains("every worker was busy") && stderr.contains("--threads"),
        "{stderr}"
    );
    // exec: runs of 200 ms at 20/s need 4 at once; -c 1 cannot keep up.
    let (v, stderr) = run_json(
        "exec",
        &["--rate", "20", "--stages", "1s:20", "--", "sleep", "0.2"],
    );
    // One every 200 ms: all but the first found the slot busy.
    assert!(
        u(&v, "runs") <= 6 && u(&v, "runs_found_slots_busy") >= 3,
        "{v}"
    );
    assert!(
        stderr.contains("every slot was busy") && stderr.contains("--concurrency"),
        "{stderr}"
    );
}
