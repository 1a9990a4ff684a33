//! `exec`'s unit tests: flag checks, the tally, the text and JSON reports
//! agreeing, and --fail-if's figures (--stages' target and drive thread
//! are tested in [`crate::run::ramp`]).

use std::collections::BTreeMap;

use super::dispatch::Stop;
use super::lag::{below_target, lag, Lag};
use super::render::signal_label;
use super::slot::Sent;
use super::summary::Tally;
use super::worker::{Ended, Finished};
use super::*;
use crate::error::shell_words;
use crate::report::EffectiveRate;

#[test]
fn concurrency_is_checked() {
    assert_eq!(parse_concurrency("4"), Ok(4));
    assert!(parse_concurrency("0").unwrap_err().contains("at least 1"));
    assert!(parse_concurrency("many").unwrap_err().contains("1 to 1024"));
    assert!(parse_concurrency("2000").is_err());
}

#[test]
fn words_are_quoted_as_a_shell_would_take_them() {
    let w = |v: &[&str]| shell_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        w(&["curl", "-s", "http://127.0.0.1:8080/"]),
        "curl -s http://127.0.0.1:8080/"
    );
    assert_eq!(w(&["sh", "-c", "exit 3"]), "sh -c 'exit 3'");
    assert_eq!(w(&["echo", "it's", ""]), r"echo 'it'\''s' ''");
}

#[test]
fn signals_are_named() {
    assert_eq!(signal_label(9), "9 (SIGKILL)");
    assert_eq!(signal_label(64), "64");
}

#[cfg(unix)]
#[test]
fn programs_are_found_in_path_or_refused() {
    assert!(check_program(OsStr::new("sh")).is_ok());
    assert!(check_program(OsStr::new("/bin/sh")).is_ok());
    let e = check_program(OsStr::new("no-such-command-xyz")).unwrap_err();
    assert!(e.0.contains("'no-such-command-xyz'"), "{e}");
    assert!(e.0.contains("not found in PATH"), "{e}");
    let e = check_program(OsStr::new("/etc/passwd")).unwrap_err();
    assert!(e.0.contains("not an executable file"), "{e}");
    assert!(check_program(OsStr::new("")).is_err());
    let e = check_program(OsStr::new("curl -s 'http://x/'")).unwrap_err();
    assert!(e.0.contains("-- curl -s 'http://x/',"), "{e}");
    assert!(e.0.contains(r"-- sh -c 'curl -s '\''http://x/'\'''"), "{e}");
    let e = check_program(OsStr::new("/bin/echo hi")).unwrap_err();
    assert!(e.0.contains("-- /bin/echo hi,"), "{e}");
}

/// A finished run for the tally.
fn finished(number: u64, scheduled: u64, start: u64, end: u64, ended: Ended) -> Finished {
    Finished {
        worker: 0,
        number,
        scheduled,
        start,
        end,
        ended,
        sent: Sent::Nothing,
        status: None,
    }
}

#[test]
fn the_tally_counts_statuses_and_measures_from_the_schedule() {
    let mut t = Tally::new(1_000, Some(1_000_000));
    t.add(&finished(1, 1_000, 1_500, 11_500, Ended::Exited(0)));
    t.add(&finished(2, 2_000, 12_000, 14_000, Ended::Exited(3)));
    t.add(&finished(
        3,
        3_000,
        14_000,
        14_000,
        Ended::SpawnFailed("boom".to_owned()),
    ));
    t.add(&finished(4, 4_000, 14_100, 20_000, Ended::Signaled(9)));
    assert_eq!(t.exit_codes, BTreeMap::from([(0, 1), (3, 1)]));
    assert_eq!(t.signals, BTreeMap::from([(9, 1)]));
    assert_eq!((t.spawn_failed, t.failed), (1, 3));
    assert_eq!(t.spawn_error.as_deref(), Some("boom"));
    assert_eq!(
        t.first_failure.as_deref(),
        Some("run 2 exited with status 3")
    );
    // The spawn failure has no times.
    assert_eq!(t.response.count(), 3);
    let response = t.response.summary();
    assert_eq!(response.max, 16_000);
    assert_eq!(t.service.summary().max, 10_000);
    assert_eq!(t.wait.summary().max, 10_100);
    assert_eq!((t.last_start, t.last_end), (Some(14_100), Some(20_000)));
}

#[test]
fn a_run_let_go_before_its_schedule_responds_no_faster_than_it_served() {
    // Scheduled at 10 µs, let go at 9.6 µs (early), ran 511 ns: its
    // response is its service time, not 111 ns.
    let mut t = Tally::new(0, None);
    t.add(&finished(1, 10_000, 9_600, 10_111, Ended::Exited(0)));
    assert_eq!(t.wait.summary().max, 0);
    assert_eq!(t.service.summary().max, 511);
    assert_eq!(t.response.summary().max, 511);
}

fn sample_args(extra: &[&str]) -> ExecArgs {
    use clap::Parser;
    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: ExecArgs,
    }
    let mut argv = vec!["exec", "--rate", "10", "-n", "4", "-c", "2"];
    argv.extend(extra);
    argv.extend(["--", "sh", "-c", "exit 3"]);
    Wrap::parse_from(argv).args
}

/// Parses a duration the text report prints back into nanoseconds.
fn text_nanos(s: &str) -> f64 {
    let (number, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("µs") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        panic!("not a duration: {s}")
    };
    number.parse::<f64>().expect("a number") * scale
}

/// The report of four runs of `sh -c 'exit 3'` (as [`sample_args`] gives):
/// one exits 0, two exit 3 and one is killed by SIGKILL.
fn sample_report() -> ExecReport {
    let args = sample_args(&[]);
    let mut t = Tally::new(0, None);
    for (i, (service, ended)) in [
        (5_000_000, Ended::Exited(0)),
        (7_000_000, Ended::Exited(3)),
        (9_000_000, Ended::Exited(3)),
        (250_000_000, Ended::Signaled(9)),
    ]
    .into_iter()
    .enumerate()
    {
        let i = i as u64;
        let scheduled = i * 100_000_000;
        let start = scheduled + 1_000 * (i + 1);
        t.add(&finished(i + 1, scheduled, start, start + service, ended));
    }
    let ran = Ran {
        launched: 4,
        stop: Stop::Done,
        signal: None,
        refused: 0,
        grace: Duration::from_secs(5),
        end: 300_004_000,
        lag: Lag {
            due_not_started: 0,
            behind_ns: 4_000,
        },
        max_behind: None,
        config: "pacer:10".parse().unwrap(),
        effective: EffectiveRate::pacer(10.0, 100_000_000, "run"),
        duration: None,
        count: Some(4),
        ramp: None,
        driven: Default::default(),
        busy: 0,
    };
    report(&args, &t, ran)
}

#[test]
fn text_and_json_reports_say_the_same() {
    let r = sample_report();
    let text = r.to_string();
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    let line = |label: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line in {text}"))[label.len()..]
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(json["runs"], 4);
    assert_eq!(line("runs")[0], "4");
    assert_eq!(json["succeeded"], 1);
    assert_eq!(line("succeeded")[0], "1");
    assert_eq!(json["failed"], 3);
    assert_eq!(line("failed")[0], "3");
    assert_eq!(json["exit_codes"]["3"], 2);
    assert_eq!(line("exit 3"), ["2"]);
    assert_eq!(json["exit_codes"]["0"], 1);
    assert_eq!(line("exit 0"), ["1"]);
    assert_eq!(json["signals"]["9"], 1);
    assert_eq!(line("signal 9"), ["1", "(SIGKILL)"]);
    assert_eq!(json["concurrency"], 2);
    assert_eq!(line("concurrency"), ["2"]);
    assert_eq!(json["command"], serde_json::json!(["sh", "-c", "exit 3"]));
    assert_eq!(line("command").join(" "), "sh -c 'exit 3'");
    // 4 runs, the last started 300 ms + 4 µs in, plus a 100 ms slot.
    assert_eq!(json["rate_span_ns"], 400_004_000u64);
    assert_eq!(line("rate span")[0], "400ms");
    assert_eq!(json["wall_ns"], 550_004_000u64);
    assert_eq!(line("wall clock")[0], "550ms");
    let achieved = json["achieved_rate"].as_f64().unwrap();
    assert!((achieved - 4e9 / 400_004_000.0).abs() < 1e-9);
    for (row, key) in [
        ("wait ", "wait_ns"),
        ("service ", "service_ns"),
        ("response ", "response_ns"),
    ] {
        let cells = line(row);
        assert_eq!(cells.len(), 7, "{row}: {cells:?}");
        for (cell, stat) in cells
            .iter()
            .zip(["p50", "p90", "p95", "p99", "p999", "max", "mean"])
        {
            let exact = json[key][stat].as_u64().unwrap() as f64;
            let shown = text_nanos(cell);
            assert!(
                (shown - exact).abs() <= exact * 0.005 + 0.5,
                "{key}.{stat}: text {cell} vs JSON {exact}"
            );
        }
    }
    // The killed run: scheduled at 300 ms, started 4 µs late, ran 250 ms.
    assert_eq!(json["response_ns"]["max"], 250_004_000u64);
    assert_eq!(json["interrupted"], false);
    assert_eq!(json["interrupted_runs"], 0);
    assert!(json["signal"].is_null());
    assert!(!text.contains("interrupted"), "{text}");
    assert_eq!(json["stopped_by_fail_fast"], false);
    assert_eq!(json["stopped_by_max_behind"], false);
    assert!(json["max_behind_ns"].is_null());
    assert_eq!(json["due_not_started"], 0);
    assert_eq!(line("not started")[0], "0");
    assert_eq!(json["behind_ns"], 4_000);
    assert_eq!(line("behind")[0], "4.00µs");
    // 4 runs over 400 ms at 10/s: on target, no warning.
    assert_eq!(json["below_target"], false);
    assert_eq!(r.below_target_warning(), None);
    assert!(json.get("max_burst_seconds").is_none());
    assert_eq!(json["strictness_mode"], "burst_ratio");
}

#[test]
fn runs_ended_at_a_stop_are_interrupted_not_failed() {
    let mut t = Tally::new(0, None);
    let stopped = |n, ended, sent| Finished {
        sent,
        ..finished(n, 0, 10, 1_000, ended)
    };
    // Sent SIGTERM: killed by it, or exiting 143 from a trap.
    t.add(&stopped(1, Ended::Signaled(15), Sent::Term));
    t.add(&stopped(2, Ended::Exited(143), Sent::Term));
    // Sent SIGKILL after the grace.
    t.add(&stopped(3, Ended::Signaled(9), Sent::Kill));
    // Exited 0 though sent SIGTERM (it was ending anyway, or cleaned up).
    t.add(&stopped(4, Ended::Exited(0), Sent::Term));
    // Not sent anything: a failure as ever.
    t.add(&stopped(5, Ended::Signaled(2), Sent::Nothing));
    assert_eq!((t.terminated, t.killed, t.interrupted), (4, 1, 3));
    assert_eq!(t.failed, 1);
    assert_eq!(t.signals, BTreeMap::from([(2, 1)]));
    assert_eq!(t.exit_codes, BTreeMap::from([(0, 1)]));
    // Only the runs that ran to their end are timed.
    assert_eq!(t.service.count(), 2);
    assert_eq!((t.last_start, t.last_end), (Some(10), Some(1_000)));
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn proc_stat_lines_tell_live_group_members() {
    use super::slot::live_member;
    let line = |state: &str, pgrp: i32| format!("4242 (sh) x) {state} 100 {pgrp} 100 0 -1 4194304");
    assert!(live_member(&line("S", 77), 77));
    assert!(live_member(&line("R", 77), 77));
    assert!(!live_member(&line("Z", 77), 77), "a zombie is not live");
    assert!(!live_member(&line("S", 78), 77), "another group");
    assert!(!live_member("garbage", 77));
}

#[test]
fn lag_counts_the_runs_due_before_the_end() {
    // 20 runs/s: a slot of 50 ms. The next run was due 750 ms before the
    // end: it and the 14 after it (at 800 ms ... 1.45 s) were due.
    let ms = 1_000_000;
    assert_eq!(
        lag(1_000 * ms, Some(250 * ms), 0, 20.0, u64::MAX),
        Lag {
            due_not_started: 15,
            behind_ns: 750 * ms
        }
    );
    // A run due exactly at the end is not due before it; one due 1 ns
    // before is.
    assert_eq!(
        lag(1_000 * ms, Some(950 * ms), 0, 20.0, u64::MAX).due_not_started,
        1
    );
    assert_eq!(
        lag(1_000 * ms, Some(1_000 * ms), 0, 20.0, u64::MAX).due_not_started,
        0
    );
    assert_eq!(
        lag(1_000 * ms, Some(1_000 * ms - 1), 0, 20.0, u64::MAX).due_not_started,
        1
    );
    // Not yet due: not behind.
    assert_eq!(
        lag(1_000 * ms, Some(1_200 * ms), 0, 20.0, u64::MAX),
        Lag::default()
    );
    // --count: at most the runs left; once all started, the last's delay.
    assert_eq!(lag(1_000 * ms, Some(0), 0, 20.0, 3).due_not_started, 3);
    assert_eq!(
        lag(1_000 * ms, None, 600 * ms, 20.0, 0),
        Lag {
            due_not_started: 0,
            behind_ns: 600 * ms
        }
    );
}

#[test]
fn below_target_is_more_than_one_percent_and_a_whole_run() {
    let s = 1_000_000_000;
    assert!(below_target(5, s, 20.0));
    assert!(!below_target(20, s, 20.0));
    // 1 % short of 1000: 10 runs, and more than 1 %.
    assert!(!below_target(990, s, 1000.0));
    assert!(below_target(989, s, 1000.0));
    // 5 runs at 50/s whose last started 1 ms late: 2 % short, but not by
    // a whole run.
    assert!(!below_target(5, 101_000_000, 50.0));
    assert!(!below_target(0, 0, 50.0));
}

#[test]
fn the_warning_says_how_far_below_and_behind() {
    let mut r = sample_report();
    r.achieved_rate = 5.0;
    r.target_rate = 20.0;
    r.below_target = Some(true);
    r.due_not_started = 15;
    r.behind_ns = 750_000_000;
    assert_eq!(
        r.below_target_warning().as_deref(),
        Some(
            "achieved 5 runs/s, 75.0 % below the target 20 runs/s: 15 runs due but not \
             started, behind by 750ms at the end"
        )
    );
    r.due_not_started = 0;
    r.behind_ns = 0;
    let w = r.below_target_warning().unwrap();
    assert!(
        w.ends_with(
            "(none by the limiter's schedule: it warms up, or lets permits not taken in time go)"
        ),
        "{w}"
    );
    r.stopped_by_max_behind = true;
    r.max_behind_ns = Some(2_000_000_000);
    r.behind_ns = 2_010_000_000;
    assert_eq!(
        r.max_behind_failure().as_deref(),
        Some("the run fell 2.01s behind its schedule; stopped by --max-behind 2s")
    );
    assert!(r
        .to_string()
        .contains("stopped         by --max-behind 2s: 2.01s behind the schedule\n"));
}

#[test]
fn fail_if_reads_the_reports_figures() {
    use crate::run::verdict::{parse_condition, Failures, Figures, Stat, TimeFigure};
    let mut r = sample_report();
    // Service times 5, 7, 9 and 250 ms; three runs failed.
    let ms = |v: f64| v * 1e6;
    let service = |stat| r.time(TimeFigure::Service, stat).unwrap();
    assert_eq!(service(Stat::Max), ms(250.0));
    assert_eq!(service(Stat::Percentile(99.0)), r.service_ns.p99 as f64);
    assert_eq!(service(Stat::Percentile(99.9)), r.service_ns.p999 as f64);
    // A percentile the report does not print: from the histogram.
    let p75 = service(Stat::Percentile(75.0));
    assert!((p75 - ms(9.0)).abs() <= ms(9.0) * 0.001, "{p75}");
    assert_eq!(
        r.time(TimeFigure::Wait, Stat::Mean),
        Some(r.wait_ns.mean as f64)
    );
    assert_eq!(
        r.failures(),
        Some(Failures {
            failed: 3,
            finished: 4
        })
    );
    assert_eq!(r.rate(), r.achieved_rate);
    let conditions: Vec<_> = [
        "service.p75>8ms",
        "service.p50>100ms",
        "failures>=3",
        "rate>1k",
    ]
    .iter()
    .map(|c| parse_condition(c).unwrap())
    .collect();
    r.judge(&conditions);
    assert_eq!(r.verdict.fail_if.len(), 4);
    assert_eq!(
        r.verdict.failed_conditions,
        ["service.p75>8ms", "failures>=3"]
    );
    assert_eq!(
        r.failed_conditions()[1].to_string(),
        "--fail-if failures>=3: failed, measured 3"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["failed_conditions"],
        serde_json::json!(["service.p75>8ms", "failures>=3"])
    );
    assert!(r
        .to_string()
        .ends_with("fail-if         2 of 4 conditions held: service.p75>8ms, failures>=3\n"));
}
