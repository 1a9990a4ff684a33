//! End-to-end tests of the `ratekeeper` binary.
//!
//! Runs are short (at most a few hundred milliseconds each) and real-clock
//! assertions are generous: the tests share a noisy 2-core machine.

use std::io::{Read, Write};
use std::process::Stdio;

use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{f, ratekeeper, rejects, u, Watchdog, PROCESS_LIMIT};

/// Runs `ratekeeper ARGS`, expects success, and parses stdout as one JSON object.
fn json_run(args: &[&str]) -> Value {
    let out = ratekeeper()
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    assert_eq!(stdout.lines().count(), 1, "one line of JSON: {stdout}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn count_run_reports_consistent_json() {
    let v = json_run(&["pace", "--rate", "2000", "--count", "200", "--json"]);
    assert_eq!(u(&v, "ops"), 200);
    assert_eq!(u(&v, "count"), 200);
    assert_eq!(u(&v, "threads"), 1);
    assert_eq!(u(&v, "pacers"), 1);
    assert_eq!(v["mode"], "count");
    assert!(v["duration_ns"].is_null());
    assert_eq!(v["spec"], "2000,1.1,start,activity");
    assert_eq!(f(&v, "target_rate"), 2000.0);
    assert_eq!(f(&v, "strictness"), 1.1);
    assert_eq!(v["strictness_mode"], "burst_ratio");
    assert_eq!(v["wait_policy"], "default");
    assert_eq!(v["limiter"], "pacer");
    for pool_only in ["burst_ratio", "filling", "pools", "max_backlog_ns", "fills"] {
        assert!(
            v.get(pool_only).is_none(),
            "{pool_only} in a pacer report: {v}"
        );
    }

    let achieved = f(&v, "achieved_rate");
    assert!((1000.0..4000.0).contains(&achieved), "achieved {achieved}");
    // 200 ops at 2000/s take about 100 ms.
    let elapsed = u(&v, "rate_span_ns");
    assert!(
        (50_000_000..2_000_000_000).contains(&elapsed),
        "elapsed {elapsed}"
    );
    let recomputed = 200.0 * 1e9 / elapsed as f64;
    assert!((recomputed - achieved).abs() < 1e-6 * achieved);

    let w = &v["wait_ns"];
    let (p50, p90, p99, p999, max) = (
        u(w, "p50"),
        u(w, "p90"),
        u(w, "p99"),
        u(w, "p999"),
        u(w, "max"),
    );
    assert!(
        p50 <= p90 && p90 <= p99 && p99 <= p999 && p999 <= max,
        "{w}"
    );
    assert!(u(w, "mean") <= max);

    assert!(u(&v, "total_wait_ns") >= u(&v, "backlog_ns"));
    if cfg!(target_os = "linux") {
        let cpu = u(&v, "cpu_ns");
        let per_op = u(&v, "cpu_ns_per_op");
        assert!(per_op > 0 && per_op <= cpu, "cpu {cpu}, per op {per_op}");
    }
}

#[test]
fn text_report_shows_every_figure() {
    ratekeeper()
        .args(["pace", "--rate", "2000", "--count", "100", "--threads", "2"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("target rate")
                .and(predicate::str::contains("achieved rate"))
                .and(predicate::str::contains("ops             100"))
                .and(predicate::str::contains("threads         2"))
                .and(predicate::str::contains("rate span"))
                .and(predicate::str::contains("wait p95"))
                .and(predicate::str::contains("wait p50"))
                .and(predicate::str::contains("wait p90"))
                .and(predicate::str::contains("wait p99 "))
                .and(predicate::str::contains("wait p99.9"))
                .and(predicate::str::contains("wait max"))
                .and(predicate::str::contains("backlog"))
                .and(predicate::str::contains("limiter wait"))
                .and(predicate::str::contains("cpu per op")),
        )
        .stderr(predicate::str::is_empty());
}

#[test]
fn duration_run_stops_at_the_deadline() {
    let v = json_run(&[
        "pace",
        "--rate",
        "1000",
        "--threads",
        "2",
        "--duration",
        "300ms",
        "--json",
    ]);
    assert_eq!(v["mode"], "duration");
    assert_eq!(u(&v, "duration_ns"), 300_000_000);
    assert_eq!(u(&v, "rate_span_ns"), 300_000_000);
    assert!(v["count"].is_null());
    assert_eq!(u(&v, "threads"), 2);
    // About 300 ops; the pacer cannot grant more than its schedule holds.
    let ops = u(&v, "ops");
    assert!((100..=301).contains(&ops), "ops {ops}");
    assert!(u(&v, "wall_ns") >= 300_000_000);
    let achieved = f(&v, "achieved_rate");
    assert!((300.0..=1004.0).contains(&achieved), "achieved {achieved}");
}

#[test]
fn strictness_below_one_and_precise_waits_run() {
    let v = json_run(&[
        "pace",
        "--rate",
        "2000,1",
        "--strictness",
        "0.5",
        "--precise",
        "--count",
        "40",
        "--json",
    ]);
    assert_eq!(u(&v, "ops"), 40);
    assert_eq!(f(&v, "strictness"), 0.5);
    assert_eq!(v["strictness_mode"], "burst_compensation");
    assert_eq!(v["wait_policy"], "precise");

    let v = json_run(&[
        "pace",
        "--rate",
        "2000",
        "--strictness",
        "0",
        "--count",
        "20",
        "--json",
    ]);
    assert_eq!(v["strictness_mode"], "average");
}

#[test]
fn batched_handles_pace_and_say_so() {
    let v = json_run(&[
        "pace",
        "--rate",
        "20k",
        "--strictness",
        "0",
        "--batch",
        "--threads",
        "2",
        "--count",
        "2000",
        "--json",
    ]);
    assert_eq!(u(&v, "ops"), 2000);
    assert_eq!(v["access"], "batched");
    assert_eq!(v["strictness_mode"], "average");
    // 2000 ops at 20k/s: about 100 ms, never much faster (leases are slots of
    // the schedule, granted no earlier than the exact path would).
    let achieved = f(&v, "achieved_rate");
    assert!(
        (5_000.0..=26_000.0).contains(&achieved),
        "achieved {achieved}"
    );

    let v = json_run(&["pace", "--rate", "2000", "--count", "10", "--json"]);
    assert_eq!(v["access"], "exact");

    let text = ratekeeper()
        .args([
            "pace",
            "--rate",
            "20k",
            "--strictness",
            "0.5",
            "--batch",
            "--count",
            "100",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("access          batched"), "{text}");

    // Strict and burst-ratio modes space every op on the shared timeline.
    for strictness in [None, Some("1"), Some("2")] {
        let mut args = vec!["pace", "--rate", "1000", "--batch"];
        if let Some(s) = strictness {
            args.extend(["--strictness", s]);
        }
        rejects(
            &args,
            &[
                "--batch needs a strictness below 1",
                "--strictness 0",
                "the other limiters take --batch at any setting",
            ],
        );
    }
}

/// Runs `pace --batch --threads 2` for 300 ms at 500k/s with `limiter_args`,
/// checks that it says so and keeps to the rate, and returns the report.
fn batched_run(limiter_args: &[&str]) -> Value {
    let mut args = vec!["pace"];
    args.extend(limiter_args);
    args.extend([
        "--rate",
        "500k",
        "--batch",
        "--threads",
        "2",
        "--duration",
        "300ms",
        "--json",
    ]);
    let v = json_run(&args);
    assert_eq!(v["access"], "batched", "{v}");
    assert_eq!(u(&v, "threads"), 2);
    assert!(v.get("shards").is_none(), "{v}");
    // About 150k ops. A lease is an ordinary reservation, so the handles
    // grant no more than the limiter does (the pool's burst ratio, 1.1, and
    // a refill bucket's first period are all it has beyond the rate); the
    // lower bound leaves room for a loaded machine.
    let achieved = f(&v, "achieved_rate");
    assert!(
        (125_000.0..=650_000.0).contains(&achieved),
        "achieved {achieved}: {v}"
    );
    v
}

/// The text report of `pace ARGS` (expected to succeed).
fn text_run(args: &[&str]) -> String {
    let out = ratekeeper()
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

#[test]
fn batched_pool_paces_at_a_high_rate() {
    let v = batched_run(&["--limiter", "pool"]);
    assert_eq!(v["limiter"], "pool");
    assert_eq!(u(&v, "pools"), 1);
    assert!(u(&v, "fills") >= 1, "{v}");

    let text = text_run(&[
        "pace",
        "--limiter",
        "pool",
        "--rate",
        "20k",
        "--batch",
        "--count",
        "100",
    ]);
    assert!(
        text.contains("access          batched: a handle per thread leases permits"),
        "{text}"
    );
}

#[test]
fn batched_resilience4j_limiters_pace_at_a_high_rate() {
    // 500 permits per 1 ms; the default 5 s timeout: bounded acquires lease
    // what is ready at once and otherwise wait for one permit, never long
    // enough to be refused.
    for kind in ["refill", "cycle"] {
        let v = batched_run(&["--limiter", kind, "--refresh-period", "1ms"]);
        assert_eq!(v["limiter"], kind);
        assert_eq!(u(&v, "limit_for_period"), 500);
        assert_eq!(u(&v, "limiters"), 1);
        assert_eq!(u(&v, "refused"), 0, "{v}");
    }

    // With no waiting allowed, what is not ready at once is refused, as
    // without --batch; count mode retries until the count is reached.
    let v = json_run(&[
        "pace",
        "--limiter",
        "cycle",
        "--rate",
        "1000",
        "--refresh-period",
        "50ms",
        "--timeout",
        "0s",
        "--batch",
        "--threads",
        "2",
        "--count",
        "120",
        "--json",
    ]);
    assert_eq!(v["access"], "batched");
    assert_eq!(u(&v, "ops"), 120);
    assert!(u(&v, "refused") >= 1, "{v}");
}

#[test]
fn batched_guava_limiters_pace_and_say_so() {
    let v = batched_run(&["--limiter", "bursty"]);
    assert_eq!(v["limiter"], "bursty");
    let v = batched_run(&["--limiter", "warmup", "--warmup", "0s"]);
    assert_eq!(v["limiter"], "warmup");

    // With the thread scope each worker's handle leases from its own limiter.
    let v = json_run(&[
        "pace",
        "--limiter",
        "bursty",
        "--rate",
        "20k,thread",
        "--batch",
        "--threads",
        "2",
        "--count",
        "1000",
        "--json",
    ]);
    assert_eq!(v["access"], "batched");
    assert_eq!(u(&v, "limiters"), 2);
    assert_eq!(u(&v, "ops"), 1000);
}

#[test]
fn batch_with_shards_is_refused_for_every_limiter() {
    for limiter in ["pacer", "pool", "bursty", "refill", "cycle"] {
        rejects(
            &[
                "pace",
                "--limiter",
                limiter,
                "--rate",
                "1000",
                "--batch",
                "--shards",
                "2",
            ],
            &["'--batch' cannot be used with '--shards <N>'"],
        );
    }
}

#[test]
fn sharded_pacer_paces_and_says_so() {
    let v = json_run(&[
        "pace",
        "--rate",
        "20k",
        "--shards",
        "3",
        "--threads",
        "2",
        "--count",
        "2000",
        "--json",
    ]);
    assert_eq!(u(&v, "ops"), 2000);
    assert_eq!(v["access"], "sharded");
    assert_eq!(u(&v, "shards"), 3);
    assert_eq!(u(&v, "pacers"), 1);
    // 2000 ops at 20k/s: about 100 ms; the shard slack is 2 ops.
    let achieved = f(&v, "achieved_rate");
    assert!(
        (5_000.0..=26_000.0).contains(&achieved),
        "achieved {achieved}"
    );

    let v = json_run(&["pace", "--rate", "2000", "--count", "10", "--json"]);
    assert!(v.get("shards").is_none(), "{v}");

    let text = ratekeeper()
        .args(["pace", "--rate", "20k", "--shards", "2", "--count", "100"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("access          sharded: 2 shards"), "{text}");

    for bad in ["0", "1025", "-1", "two"] {
        rejects(
            &["pace", "--rate", "1000", "--shards", bad],
            &["expected a whole number of shards from 1 to 1024"],
        );
    }
    rejects(
        &["pace", "--rate", "1000,thread", "--shards", "2"],
        &["--shards splits the one pacer the workers share"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--shards",
            "2",
            "--strictness",
            "0",
            "--batch",
        ],
        &["cannot be used with"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "bursty",
            "--shards",
            "2",
        ],
        &["--shards is a Pacer option"],
    );
}

#[test]
fn thread_scope_gives_each_worker_its_own_pacer() {
    let v = json_run(&[
        "pace",
        "--rate",
        "1000,thread",
        "--threads",
        "2",
        "--count",
        "100",
        "--json",
    ]);
    assert_eq!(u(&v, "pacers"), 2);
    assert_eq!(f(&v, "target_rate"), 2000.0);
    assert_eq!(u(&v, "ops"), 100);
    let achieved = f(&v, "achieved_rate");
    assert!((1000.0..4000.0).contains(&achieved), "achieved {achieved}");
}

#[test]
fn pool_run_reports_the_backlog() {
    let v = json_run(&[
        "pace",
        "--limiter",
        "pool",
        "--rate",
        "2000,1.2",
        "--threads",
        "2",
        "--duration",
        "300ms",
        "--json",
    ]);
    assert_eq!(v["limiter"], "pool");
    assert_eq!(f(&v, "burst_ratio"), 1.2);
    assert_eq!(v["filling"], "inline");
    assert!(v["fill_interval_ns"].is_null());
    assert_eq!(u(&v, "pools"), 1);
    assert_eq!(f(&v, "target_rate"), 2000.0);
    assert_eq!(v["access"], "exact");
    for pacer_only in ["strictness", "strictness_mode", "wait_policy", "pacers"] {
        assert!(
            v.get(pacer_only).is_none(),
            "{pacer_only} in a pool report: {v}"
        );
    }
    // About 600 ops; a pool cannot grant much beyond what 300 ms fill.
    let ops = u(&v, "ops");
    assert!((200..=700).contains(&ops), "ops {ops}");
    let backlog = u(&v, "backlog_ns");
    assert!(u(&v, "max_backlog_ns") >= backlog, "{v}");
    assert!(u(&v, "total_wait_ns") >= backlog, "{v}");
    assert!(u(&v, "fills") >= 1, "{v}");
    let w = &v["wait_ns"];
    assert!(
        u(w, "p50") <= u(w, "p99") && u(w, "p99") <= u(w, "max"),
        "{w}"
    );
}

#[test]
fn pool_text_report_shows_limiter_and_backlog() {
    ratekeeper()
        .args([
            "pace",
            "--limiter",
            "pool",
            "--rate",
            "2000",
            "--count",
            "100",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("limiter         token pool (burst ratio 1.1)")
                .and(predicate::str::contains("filling         inline"))
                .and(predicate::str::contains("1 shared pool"))
                .and(predicate::str::contains("ops             100"))
                .and(predicate::str::contains("wait p99.9"))
                .and(predicate::str::contains("backlog "))
                .and(predicate::str::contains("max backlog"))
                .and(predicate::str::contains("limiter wait"))
                .and(predicate::str::contains("fills"))
                .and(predicate::str::contains("strictness").not()),
        )
        .stderr(predicate::str::is_empty());
}

#[test]
fn pool_filled_by_a_thread_with_thread_scope() {
    let v = json_run(&[
        "pace",
        "--limiter",
        "pool",
        "--fill",
        "thread",
        "--fill-interval",
        "100us",
        "--rate",
        "1000,thread",
        "--threads",
        "2",
        "--count",
        "200",
        "--json",
    ]);
    assert_eq!(v["filling"], "thread");
    assert_eq!(u(&v, "fill_interval_ns"), 100_000);
    assert_eq!(u(&v, "pools"), 2);
    assert_eq!(f(&v, "target_rate"), 2000.0);
    assert_eq!(u(&v, "ops"), 200);
    let achieved = f(&v, "achieved_rate");
    assert!((1000.0..4000.0).contains(&achieved), "achieved {achieved}");
    assert!(u(&v, "max_backlog_ns") >= u(&v, "backlog_ns"));
}

/// Fields that only some limiters report.
const LIMITER_FIELDS: [&str; 22] = [
    "strictness",
    "strictness_mode",
    "wait_policy",
    "shards",
    "pacers",
    "burst_ratio",
    "filling",
    "fill_interval_ns",
    "pools",
    "max_backlog_ns",
    "fills",
    "max_burst_seconds",
    "warmup_ns",
    "cold_factor",
    "resolution",
    "limiters",
    "limit_for_period",
    "refresh_period_ns",
    "timeout_ns",
    "capacity",
    "initial_permits",
    "refused",
];

/// Checks that `v` has exactly `own` of [`LIMITER_FIELDS`] (plus the rest,
/// `access` among them: every limiter's workers may batch).
fn only_limiter_fields(v: &Value, own: &[&str]) {
    assert!(v["access"].is_string(), "no access in {v}");
    for field in LIMITER_FIELDS {
        assert_eq!(
            v.get(field).is_some(),
            own.contains(&field),
            "{field} in a {} report: {v}",
            v["limiter"]
        );
    }
}

#[test]
fn bursty_run_reports_its_parameters() {
    let v = json_run(&[
        "pace",
        "--limiter",
        "bursty",
        "--max-burst",
        "0.5",
        "--rate",
        "2000",
        "--threads",
        "2",
        "--duration",
        "300ms",
        "--json",
    ]);
    assert_eq!(v["limiter"], "bursty");
    assert_eq!(f(&v, "max_burst_seconds"), 0.5);
    assert_eq!(u(&v, "limiters"), 1);
    assert_eq!(f(&v, "target_rate"), 2000.0);
    only_limiter_fields(&v, &["max_burst_seconds", "resolution", "limiters"]);
    assert_eq!(v["resolution"], "micros", "Guava's arithmetic at 2000/s");
    // About 600 ops: the first permit is free, then one per 500 µs; the
    // limiter stores permits only while nobody asks, which the workers never
    // let happen for long.
    let ops = u(&v, "ops");
    assert!((200..=700).contains(&ops), "ops {ops}");
    // Guava keeps no wait total: its backlog is the only figure.
    assert_eq!(u(&v, "total_wait_ns"), u(&v, "backlog_ns"));
    // Two workers on one limiter: the next free time is at most a couple of
    // intervals ahead (and a late wake-up cannot make it more).
    assert!(u(&v, "backlog_ns") <= 50_000_000, "{v}");
    let w = &v["wait_ns"];
    assert!(
        u(w, "p50") <= u(w, "p99") && u(w, "p99") <= u(w, "max"),
        "{w}"
    );
}

#[test]
fn bursty_above_1e5_per_second_keeps_a_nanosecond_schedule() {
    // 2e6 ops/s: 500 ns a permit, which Guava's whole microseconds charge
    // 0 µs (the limiter would not limit at all). In whole nanoseconds one
    // worker gets at most 2e6/s (plus the ops the wait policy lets go early,
    // at most the sleep resolution, ~100 µs, and the first, free, permit).
    let v = json_run(&[
        "pace",
        "--limiter",
        "bursty",
        "--max-burst",
        "0",
        "--rate",
        "2M",
        "--duration",
        "200ms",
        "--json",
    ]);
    assert_eq!(v["resolution"], "nanos", "{v}");
    only_limiter_fields(&v, &["max_burst_seconds", "resolution", "limiters"]);
    let ops = u(&v, "ops");
    assert!(ops <= 400_000 + 1_000 + 1, "ops {ops}: {v}");
    // Per limiter: 1e5/s per thread in the thread scope is Guava's again.
    let v = json_run(&[
        "pace",
        "--limiter",
        "warmup",
        "--warmup",
        "1ms",
        "--rate",
        "100k,thread",
        "--threads",
        "2",
        "--duration",
        "50ms",
        "--json",
    ]);
    assert_eq!(v["resolution"], "micros", "{v}");
}

#[test]
fn warmup_run_starts_cold() {
    // 1,000 ops/s per thread, a 1 s warm-up, cold factor 4: a fresh limiter is
    // cold, its permits 4 ms apart at first and still about 3.2 ms apart
    // after 0.4 s (Guava's trapezoid: 400 permits above the threshold cost
    // 1 s in all), so two limiters grant about 225 ops in 0.4 s, not the 800
    // of warm ones.
    let v = json_run(&[
        "pace",
        "--limiter",
        "warmup",
        "--warmup",
        "1s",
        "--cold-factor",
        "4",
        "--rate",
        "1000,thread",
        "--threads",
        "2",
        "--duration",
        "400ms",
        "--json",
    ]);
    assert_eq!(v["limiter"], "warmup");
    assert_eq!(u(&v, "warmup_ns"), 1_000_000_000);
    assert_eq!(f(&v, "cold_factor"), 4.0);
    assert_eq!(u(&v, "limiters"), 2);
    assert_eq!(f(&v, "target_rate"), 2000.0);
    only_limiter_fields(&v, &["warmup_ns", "cold_factor", "resolution", "limiters"]);
    assert_eq!(v["resolution"], "micros");
    let ops = u(&v, "ops");
    assert!((40..=500).contains(&ops), "ops {ops}");
    assert!(f(&v, "achieved_rate") < 1300.0, "{v}");
    assert_eq!(u(&v, "total_wait_ns"), u(&v, "backlog_ns"));

    // The default cold factor is Guava's, 3.
    let v = json_run(&[
        "pace",
        "--limiter",
        "warmup",
        "--warmup",
        "200ms",
        "--rate",
        "500",
        "--count",
        "20",
        "--json",
    ]);
    assert_eq!(f(&v, "cold_factor"), 3.0);
    assert_eq!(u(&v, "ops"), 20);
}

#[test]
fn guava_text_report_shows_limiter_and_backlog() {
    ratekeeper()
        .args([
            "pace",
            "--limiter",
            "warmup",
            "--warmup",
            "500ms",
            "--rate",
            "2000",
            "--count",
            "50",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(
                "limiter         Guava SmoothWarmingUp (warm-up 500ms, cold factor 3",
            )
            .and(predicate::str::contains("1 shared limiter"))
            .and(predicate::str::contains("ops             50"))
            .and(predicate::str::contains("wait p99.9"))
            .and(predicate::str::contains("backlog "))
            .and(predicate::str::contains("cpu per op"))
            .and(predicate::str::contains("limiter wait").not())
            .and(predicate::str::contains("strictness").not()),
        )
        .stderr(predicate::str::is_empty());
    ratekeeper()
        .args([
            "pace",
            "--limiter",
            "bursty",
            "--rate",
            "1000,thread",
            "--threads",
            "2",
            "--count",
            "20",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(
                "limiter         Guava SmoothBursty (max burst 1s: up to 1,000 permits",
            )
            .and(predicate::str::contains("2 limiters, one per thread")),
        );
}

#[test]
fn refill_run_reports_its_parameters() {
    // 1000/s as 100 permits per 100 ms, a bucket of 200 starting with 100:
    // in 300 ms the stored permits (at most 200, however long the workers
    // took to start) plus about 300 refilled.
    let v = json_run(&[
        "pace",
        "--limiter",
        "refill",
        "--rate",
        "1000",
        "--refresh-period",
        "100ms",
        "--capacity",
        "200",
        "--initial-permits",
        "100",
        "--timeout",
        "50ms",
        "--threads",
        "2",
        "--duration",
        "300ms",
        "--json",
    ]);
    assert_eq!(v["limiter"], "refill");
    assert_eq!(u(&v, "limit_for_period"), 100);
    assert_eq!(u(&v, "refresh_period_ns"), 100_000_000);
    assert_eq!(u(&v, "timeout_ns"), 50_000_000);
    assert_eq!(u(&v, "capacity"), 200);
    assert_eq!(u(&v, "initial_permits"), 100);
    assert_eq!(u(&v, "limiters"), 1);
    assert_eq!(f(&v, "target_rate"), 1000.0);
    only_limiter_fields(
        &v,
        &[
            "limit_for_period",
            "refresh_period_ns",
            "timeout_ns",
            "capacity",
            "initial_permits",
            "refused",
            "limiters",
        ],
    );
    let ops = u(&v, "ops");
    assert!((150..=501).contains(&ops), "ops {ops}");
    // Each worker holds at most one reservation, so no wait exceeds 2 ms
    // (two permits), however loaded the machine: none is refused.
    assert_eq!(u(&v, "refused"), 0, "{v}");
    assert_eq!(u(&v, "total_wait_ns"), u(&v, "backlog_ns"));
    let w = &v["wait_ns"];
    assert!(
        u(w, "p50") <= u(w, "p99") && u(w, "p99") <= u(w, "max"),
        "{w}"
    );

    // The defaults: a 1 s refresh period, a bucket of one period's permits,
    // full at the start, Resilience4j's 5 s timeout.
    let v = json_run(&[
        "pace",
        "--limiter",
        "refill",
        "--rate",
        "50",
        "--count",
        "20",
        "--json",
    ]);
    assert_eq!(u(&v, "limit_for_period"), 50);
    assert_eq!(u(&v, "refresh_period_ns"), 1_000_000_000);
    assert_eq!(u(&v, "timeout_ns"), 5_000_000_000);
    assert_eq!(u(&v, "capacity"), 50);
    assert_eq!(u(&v, "initial_permits"), 50);
    assert_eq!(u(&v, "ops"), 20);
    assert_eq!(u(&v, "refused"), 0);
    // 20 of the 50 stored permits: no wait for any.
    assert!(u(&v, "rate_span_ns") < 500_000_000, "{v}");
}

#[test]
fn cycle_run_counts_refused_acquires() {
    // 100 permits at the start of each 100 ms cycle and no waiting: the
    // workers take a cycle's permits at once, then every acquire until the
    // next cycle is refused (counted, not an op).
    let v = json_run(&[
        "pace",
        "--limiter",
        "cycle",
        "--rate",
        "1000",
        "--refresh-period",
        "100ms",
        "--timeout",
        "0s",
        "--threads",
        "2",
        "--duration",
        "350ms",
        "--json",
    ]);
    assert_eq!(v["limiter"], "cycle");
    assert_eq!(u(&v, "limit_for_period"), 100);
    assert_eq!(u(&v, "refresh_period_ns"), 100_000_000);
    assert_eq!(u(&v, "timeout_ns"), 0);
    assert_eq!(u(&v, "limiters"), 1);
    only_limiter_fields(
        &v,
        &[
            "limit_for_period",
            "refresh_period_ns",
            "timeout_ns",
            "refused",
            "limiters",
        ],
    );
    // Cycles 0 to 3 start within 350 ms of the workers' start (one or two
    // more if the workers were slow to start: cycles count from the
    // limiter's creation); never more than their permits.
    let ops = u(&v, "ops");
    assert!((200..=600).contains(&ops), "ops {ops}");
    assert!(u(&v, "refused") >= 1, "{v}");

    // Count mode: a refused acquire is retried, so the count is reached.
    let v = json_run(&[
        "pace",
        "--limiter",
        "cycle",
        "--rate",
        "1000",
        "--refresh-period",
        "50ms",
        "--timeout",
        "0s",
        "--count",
        "120",
        "--json",
    ]);
    // 120 ops need three cycles of 50: the refusals in between were
    // retried, not counted.
    assert_eq!(u(&v, "ops"), 120);
    assert_eq!(u(&v, "count"), 120);
    assert!(u(&v, "refused") >= 1, "{v}");
}

#[test]
fn resilience4j_limiters_with_thread_scope() {
    let v = json_run(&[
        "pace",
        "--limiter",
        "refill",
        "--rate",
        "500,thread",
        "--refresh-period",
        "10ms",
        "--threads",
        "2",
        "--count",
        "40",
        "--json",
    ]);
    assert_eq!(u(&v, "limiters"), 2);
    assert_eq!(u(&v, "limit_for_period"), 5);
    assert_eq!(u(&v, "capacity"), 5);
    assert_eq!(f(&v, "target_rate"), 1000.0);
    assert_eq!(u(&v, "ops"), 40);
}

#[test]
fn resilience4j_text_report_shows_limiter_and_refusals() {
    ratekeeper()
        .args([
            "pace",
            "--limiter",
            "refill",
            "--rate",
            "1000",
            "--refresh-period",
            "100ms",
            "--capacity",
            "200",
            "--count",
            "50",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(
                "limiter         Resilience4j RefillLimiter (100 permits per 100ms, refilled \
                 one by one; capacity 200, 100 initial permits; timeout 5s)",
            )
            .and(predicate::str::contains("1 shared limiter"))
            .and(predicate::str::contains("ops             50"))
            .and(predicate::str::contains(
                "backlog         0ns (time reserved ahead of the clock at the end)",
            ))
            .and(predicate::str::contains(
                "refused         0 (acquires whose wait would exceed the 5s timeout",
            ))
            .and(predicate::str::contains("limiter wait").not())
            .and(predicate::str::contains("strictness").not()),
        )
        .stderr(predicate::str::is_empty());
    ratekeeper()
        .args([
            "pace",
            "--limiter",
            "cycle",
            "--rate",
            "1000,thread",
            "--refresh-period",
            "20ms",
            "--timeout",
            "0s",
            "--threads",
            "2",
            "--count",
            "60",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(
                "limiter         Resilience4j CycleLimiter (20 permits at the start of each \
                 20ms cycle; timeout 0s)",
            )
            .and(predicate::str::contains("2 limiters, one per thread"))
            .and(predicate::str::contains("refused         "))
            .and(predicate::str::contains("capacity").not()),
        );
}

/// `base` followed by `more`.
fn with(base: &[&'static str], more: &[&'static str]) -> Vec<&'static str> {
    base.iter().chain(more).copied().collect()
}

const REFILL: [&str; 5] = ["pace", "--rate", "1000", "--limiter", "refill"];
const CYCLE: [&str; 5] = ["pace", "--rate", "1000", "--limiter", "cycle"];

#[test]
fn resilience4j_limiter_values_are_checked() {
    let (refill, cycle) = (REFILL, CYCLE);
    // The limit for period must be a whole number of permits.
    rejects(
        &with(&refill, &["--refresh-period", "1500us"]),
        &["--rate 1000", "1.5 permits per period", "whole number"],
    );
    rejects(
        &["pace", "--rate", "0.5", "--limiter", "cycle"],
        &[
            "--rate 0.5",
            "0.5 permits per period",
            "--refresh-period 10s",
        ],
    );
    // The library's messages, naming the value.
    rejects(
        &with(&refill, &["--capacity", "5"]),
        &["permit capacity 5 is below the limit for period 1000"],
    );
    rejects(
        &with(&refill, &["--capacity", "-5"]),
        &["permit capacity -5 is below the limit for period 1000"],
    );
    rejects(
        &with(&refill, &["--initial-permits", "2000"]),
        &["initial permits", "capacity 1000", "got 2000"],
    );
    rejects(
        &with(&refill, &["--initial-permits", "-1"]),
        &["initial permits", "got -1"],
    );
    // Values the parsers refuse.
    rejects(
        &with(&refill, &["--capacity", "lots"]),
        &["'lots'", "--capacity", "whole number of permits"],
    );
    rejects(
        &with(&cycle, &["--timeout", "soon"]),
        &["'soon'", "--timeout", "10ms"],
    );
    rejects(
        &with(&cycle, &["--refresh-period", "0s"]),
        &["'0s'", "--refresh-period", "greater than zero"],
    );
}

#[test]
fn resilience4j_limiter_options_belong_to_their_limiters() {
    let (refill, cycle) = (REFILL, CYCLE);
    // The cycle limiter has no bucket.
    for flag in ["--capacity", "--initial-permits"] {
        rejects(
            &with(&cycle, &[flag, "10"]),
            &[
                flag,
                "RefillLimiter option",
                "--limiter cycle",
                "--limiter refill",
            ],
        );
    }
    // Their options are refused with the other limiters, and the others'
    // with them.
    rejects(
        &["pace", "--rate", "1000", "--timeout", "1s"],
        &[
            "--timeout",
            "Resilience4j limiter",
            "--limiter pacer",
            "--limiter refill or --limiter cycle",
        ],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "pool",
            "--refresh-period",
            "1s",
        ],
        &["--refresh-period", "--limiter pool"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "bursty",
            "--capacity",
            "10",
        ],
        &["--capacity", "RefillLimiter option", "--limiter bursty"],
    );
    for (flag, value, owner) in [
        ("--strictness", Some("1"), "Pacer option"),
        ("--precise", None, "Pacer option"),
        ("--fill", Some("thread"), "token pool option"),
        ("--max-burst", Some("1"), "SmoothBursty option"),
        ("--warmup", Some("1s"), "SmoothWarmingUp option"),
    ] {
        for base in [&refill, &cycle] {
            let mut args = base.to_vec();
            args.push(flag);
            args.extend(value);
            rejects(&args, &[flag, owner, &format!("--limiter {}", base[4])]);
        }
    }
    // No burst ratio: the burst is the capacity (refill) or the limit (cycle).
    rejects(
        &["pace", "--rate", "1000,1.5", "--limiter", "refill"],
        &["burst ratio 1.5", "--limiter refill", "--capacity"],
    );
    rejects(
        &["pace", "--rate", "1000,1.5", "--limiter", "cycle"],
        &["burst ratio 1.5", "--limiter cycle", "--refresh-period"],
    );
}

#[test]
fn guava_limiter_values_are_checked() {
    rejects(
        &["pace", "--rate", "1000", "--limiter", "warmup"],
        &["--limiter warmup needs --warmup", "--warmup 2s"],
    );
    // The library's message.
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "warmup",
            "--warmup",
            "1s",
            "--cold-factor",
            "0.5",
        ],
        &["cold factor must be finite and at least 1.0, got 0.5"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "warmup",
            "--warmup",
            "1s",
            "--cold-factor",
            "inf",
        ],
        &["'inf'", "finite"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "bursty",
            "--max-burst",
            "-1",
        ],
        &["max burst seconds must be finite and at least 0, got -1"],
    );
}

#[test]
fn guava_limiter_options_belong_to_their_limiters() {
    rejects(
        &["pace", "--rate", "1000", "--warmup", "1s"],
        &["--warmup", "SmoothWarmingUp option", "--limiter pacer"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "pacer",
            "--warmup",
            "1s",
        ],
        &["--warmup", "--limiter pacer", "--limiter warmup"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "pool",
            "--cold-factor",
            "2",
        ],
        &["--cold-factor", "--limiter pool"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "warmup",
            "--warmup",
            "1s",
            "--max-burst",
            "2",
        ],
        &["--max-burst", "SmoothBursty option", "--limiter warmup"],
    );
    for (flag, value, owner) in [
        ("--strictness", Some("1"), "Pacer option"),
        ("--precise", None, "Pacer option"),
        ("--fill", Some("thread"), "token pool option"),
        ("--fill-interval", Some("1ms"), "token pool option"),
        ("--warmup", Some("1s"), "SmoothWarmingUp option"),
        ("--cold-factor", Some("2"), "SmoothWarmingUp option"),
    ] {
        let mut args = vec!["pace", "--rate", "1000", "--limiter", "bursty", flag];
        args.extend(value);
        rejects(&args, &[flag, owner, "--limiter bursty"]);
    }
    // Guava's limiters take no burst ratio; the default one is accepted.
    rejects(
        &["pace", "--rate", "1000,1.5", "--limiter", "bursty"],
        &["burst ratio 1.5", "--limiter bursty", "--max-burst"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000,1.0",
            "--limiter",
            "warmup",
            "--warmup",
            "1s",
        ],
        &["burst ratio 1", "--limiter warmup"],
    );
}

#[test]
fn bad_rate_specs_exit_2() {
    rejects(
        &["pace", "--rate", "abc"],
        &["'abc'", "--rate", "not a rate"],
    );
    rejects(&["pace", "--rate", "0"], &["'0'", "greater than zero"]);
    rejects(
        &["pace", "--rate", "10,0.5"],
        &["'10,0.5'", "\"0.5\"", "at least 1.0", "--strictness"],
    );
    rejects(&["pace", "--rate", "2B"], &["'2B'", "2G"]);
    rejects(&["pace", "--rate", "2G"], &["'2G'", "1e9"]);
    rejects(&["pace"], &["--rate"]);
    // The traps of nosqlbench's suffixes, each with what to write.
    rejects(&["pace", "--rate", "1m"], &["'1m'", "1M", "1/m"]);
    rejects(&["pace", "--rate", "1e"], &["'1e'", "unknown suffix \"e\""]);
    rejects(&["pace", "--rate", "5/week"], &["not a unit of time"]);
    // Negative values reach our own message, not clap's "unexpected argument".
    rejects(&["pace", "--rate", "-5"], &["'-5'", "greater than zero"]);
    rejects(
        &["exec", "--rate", "-5", "--", "true"],
        &["'-5'", "greater than zero"],
    );
    // Durations beyond what a nanosecond clock counts are refused, not cut.
    rejects(
        &["pace", "--rate", "10", "--duration", "1000y"],
        &["'1000y'", "584 years"],
    );
}

#[test]
fn rates_are_read_as_people_type_them() {
    // 1e3, 1E3, 1k and 60k/min are the same rate; the spec prints it plainly.
    for rate in ["1e3", "1E3", "1k", "60k/min", "3.6M/h"] {
        let (stdout, _) = run_both(&["pace", "--rate", rate, "--count", "3", "--json"]);
        let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("json");
        assert_eq!(v["target_rate"], 1000.0, "{rate}: {v}");
    }
}

#[test]
fn bad_options_exit_2() {
    rejects(
        &["pace", "--rate", "100", "--threads", "0"],
        &["'0'", "--threads", "at least 1"],
    );
    rejects(
        &["pace", "--rate", "100", "--threads", "two"],
        &["'two'", "--threads"],
    );
    rejects(
        &["pace", "--rate", "100", "--duration", "xyz"],
        &["'xyz'", "--duration", "500ms"],
    );
    rejects(
        &["pace", "--rate", "100", "--duration", "0s"],
        &["'0s'", "greater than zero"],
    );
    rejects(
        &["pace", "--rate", "100", "--count", "0"],
        &["'0'", "--count"],
    );
    rejects(
        &["pace", "--rate", "100", "--duration", "1s", "--count", "5"],
        &["--duration", "--count"],
    );
    rejects(
        &["pace", "--rate", "100", "--strictness", "-1"],
        &["'-1'", "negative"],
    );
    rejects(
        &["pace", "--rate", "100", "--strictness", "fast"],
        &["'fast'", "--strictness"],
    );
    rejects(&["pace", "--rate", "100", "--bogus"], &["'--bogus'"]);
    rejects(&["frobnicate"], &["'frobnicate'"]);
}

#[test]
fn limiter_options_are_checked() {
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "pool",
            "--fill-interval",
            "1ms",
        ],
        &["--fill-interval needs --fill thread"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "pool",
            "--fill",
            "inline",
            "--fill-interval",
            "1ms",
        ],
        &["--fill-interval needs --fill thread"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "pool",
            "--strictness",
            "1",
        ],
        &["--strictness", "Pacer option", "--limiter pool"],
    );
    rejects(
        &["pace", "--rate", "1000", "--limiter", "pool", "--precise"],
        &["--precise", "Pacer option"],
    );
    rejects(
        &["pace", "--rate", "1000", "--fill", "thread"],
        &["--fill", "--limiter pool"],
    );
    rejects(
        &["pace", "--rate", "1000", "--limiter", "bucket"],
        &["'bucket'", "pacer, pool"],
    );
    // The library's messages: a burst ratio below 1.0, a fill interval out of range.
    rejects(
        &["pace", "--rate", "1000,0.5", "--limiter", "pool"],
        &["'1000,0.5'", "burst ratio must be at least 1.0"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "1000",
            "--limiter",
            "pool",
            "--fill",
            "thread",
            "--fill-interval",
            "500ns",
        ],
        &["fill interval must be between 1 µs and 1 s"],
    );
}

#[test]
fn help_shows_examples_and_the_json_schema() {
    for flag in ["-h", "--help"] {
        ratekeeper().args(["pace", flag]).assert().success().stdout(
            predicate::str::contains("Examples:")
                .and(predicate::str::contains("ratekeeper pace --rate 10k,1.1")),
        );
    }
    ratekeeper()
        .args(["pace", "--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("wait_ns")
                .and(predicate::str::contains("cpu_ns_per_op"))
                .and(predicate::str::contains("max_backlog_ns"))
                .and(predicate::str::contains("--limiter <KIND>"))
                .and(predicate::str::contains("--fill-interval <DUR>"))
                .and(predicate::str::contains("--warmup <DUR>"))
                .and(predicate::str::contains("--cold-factor <F>"))
                .and(predicate::str::contains("--max-burst <SECONDS>"))
                .and(predicate::str::contains(
                    "ratekeeper pace --limiter warmup --warmup 2s",
                ))
                .and(predicate::str::contains("warmup_ns"))
                .and(predicate::str::contains("max_burst_seconds"))
                .and(predicate::str::contains("--refresh-period <DUR>"))
                .and(predicate::str::contains("--timeout <DUR>"))
                .and(predicate::str::contains("--capacity <N>"))
                .and(predicate::str::contains("--initial-permits <N>"))
                .and(predicate::str::contains(
                    "ratekeeper pace --limiter refill --rate 1000 --refresh-period 100ms",
                ))
                .and(predicate::str::contains("rate x refresh period"))
                .and(predicate::str::contains("limit_for_period"))
                .and(predicate::str::contains("refresh_period_ns"))
                .and(predicate::str::contains("timeout_ns"))
                .and(predicate::str::contains("initial_permits"))
                .and(predicate::str::contains("refused"))
                .and(predicate::str::contains("achieved_rate"))
                .and(predicate::str::contains("effective_rate"))
                .and(predicate::str::contains(
                    "effective rate  the rate the limiter's",
                )),
        );
    ratekeeper()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("pace").and(predicate::str::contains("Examples:")));
}

#[test]
fn closed_stdout_is_not_an_error() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
        .args(["pace", "--rate", "2000", "--count", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    // Close the read end before the report (written after ~25 ms) goes out.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    assert!(status.success(), "status {status}, stderr {stderr}");
    assert!(stderr.is_empty(), "stderr: {stderr}");
}

/// Ctrl-C ends a token pool's long wait too (it used to be left to the
/// pool's own wait, so a run at 0.2 ops/s went on for up to 5 s): the
/// library's stoppable wait asks the pool what it waits for, so an inline
/// pool's waiter still fills it.
#[cfg(unix)]
#[test]
fn ctrl_c_ends_a_pool_wait_at_once() {
    for fill in ["inline", "thread"] {
        let args = [
            "pace",
            "--limiter",
            "pool",
            "--fill",
            fill,
            "--rate",
            "0.2",
            "--duration",
            "60s",
            "--json",
        ];
        let child = spawn_pace(&args);
        let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
        // The first op goes at once (pre-filled); the second waits 5 s.
        std::thread::sleep(std::time::Duration::from_millis(700));
        let (status, out, took) = ctrl_c(child);
        assert!(
            took < std::time::Duration::from_millis(2500),
            "{fill}: {took:?} after Ctrl-C"
        );
        assert_eq!(status.code(), Some(130), "{fill}: {status}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(v["interrupted"], true, "{fill}");
        assert_eq!(u(&v, "ops"), 1, "{fill}: {v}");
    }
}

/// Starts `ratekeeper` with `args`, standard output and error piped.
#[cfg(unix)]
fn spawn_pace(args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper")
}

/// Sends `child` SIGINT, as Ctrl-C does, and returns its exit status, its
/// standard output and how long it took to end after the signal.
#[cfg(unix)]
fn ctrl_c(child: std::process::Child) -> (std::process::ExitStatus, String, std::time::Duration) {
    signal(child, "INT")
}

/// Sends `child` the signal `name` (as `kill -NAME`) and returns its exit
/// status, its standard output and how long it took to end after the signal.
#[cfg(unix)]
fn signal(
    mut child: std::process::Child,
    name: &str,
) -> (std::process::ExitStatus, String, std::time::Duration) {
    let sent = std::time::Instant::now();
    let kill = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
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
    (status, out, sent.elapsed())
}

/// SIGTERM (`kill`, `timeout`, `docker stop`) ends a run as Ctrl-C does,
/// with its report, and exit status 143 (128 + SIGTERM), for pace and pipe;
/// SIGHUP with 129.
#[cfg(unix)]
#[test]
fn sigterm_ends_the_run_with_its_report_and_status_143() {
    let child = spawn_pace(&["pace", "--rate", "0.5", "--duration", "60s", "--json"]);
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (status, out, took) = signal(child, "TERM");
    assert_eq!(status.code(), Some(143), "{status}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["ops"], 1, "{v}");

    // SIGHUP, a closed terminal: the same, with 129.
    let child = spawn_pace(&["pace", "--rate", "0.5", "--duration", "60s", "--json"]);
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (status, out, _) = signal(child, "HUP");
    assert_eq!(status.code(), Some(129), "{status}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["interrupted"], true);

    let mut pipe = std::process::Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
        .args(["pipe", "--rate", "0.5", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper pipe");
    let _watchdog = Watchdog::new(&pipe, PROCESS_LIMIT);
    let mut stdin = pipe.stdin.take().unwrap();
    stdin.write_all(b"one\ntwo\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (status, out, _) = signal(pipe, "TERM");
    drop(stdin);
    assert_eq!(status.code(), Some(143), "{status}");
    assert_eq!(out, "one\n", "the first line went, the second waited");
}

/// Ctrl-C ends a run cleanly: the report for the ops so far, exit status 130.
#[cfg(unix)]
#[test]
fn ctrl_c_ends_the_run_with_its_report() {
    let plot = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pace-ctrl-c.svg");
    let _ = std::fs::remove_file(&plot);
    // One op per 2 s: the second op's wait is cut short by Ctrl-C.
    let child = spawn_pace(&[
        "pace",
        "--rate",
        "0.5",
        "--duration",
        "60s",
        "--json",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    // The plot file is created before the run starts, after the Ctrl-C
    // handler is installed.
    let t = std::time::Instant::now();
    while !plot.exists() {
        assert!(t.elapsed().as_secs() < 20, "the run did not start");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (status, out, took) = ctrl_c(child);
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert_eq!(status.code(), Some(130), "{status}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["interrupted"], true);
    assert_eq!(u(&v, "ops"), 1, "the first op goes at once: {v}");
    // Count-mode elapsed: the op's grant plus one slot (2 s).
    let elapsed = u(&v, "rate_span_ns");
    assert!(
        (2_000_000_000..3_000_000_000).contains(&elapsed),
        "elapsed {elapsed}"
    );
    let svg = std::fs::read_to_string(&plot).expect("the plot was written");
    assert!(svg.contains("achieved"), "the plot has its series");

    // Without Ctrl-C, the report says so.
    let v = json_run(&["pace", "--rate", "2000", "--count", "10", "--json"]);
    assert_eq!(v["interrupted"], false);
}

/// Runs `ratekeeper ARGS`, expects success; returns stdout and stderr.
fn run_both(args: &[&str]) -> (String, String) {
    let out = ratekeeper()
        .args(args)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .clone();
    (
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}

#[test]
fn a_truncated_slot_is_reported_and_warned_about() {
    // 5.1e8 ops/s is a 1.96 ns slot, which the Pacer's arithmetic (nosqlbench's
    // floor(1e9 / rate)) truncates to 1 ns: 1e9 ops/s, 96 % over the target.
    let warning = "warning: --limiter pacer runs at 1,000,000,000 ops/s, not the target \
                   510,000,000 ops/s (+96.08 %): one op's slot is floor(1e9 / rate) = 1 ns\n";
    let (stdout, stderr) = run_both(&["pace", "--rate", "510M", "--count", "1000", "--json"]);
    assert_eq!(stderr, warning);
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(f(&v, "target_rate"), 510e6);
    assert_eq!(f(&v, "effective_rate"), 1e9);

    let (text, stderr) = run_both(&["pace", "--rate", "510M", "--count", "1000"]);
    assert_eq!(stderr, warning);
    assert!(
        text.contains(
            "effective rate  1,000,000,000 ops/s (+96.08 % over the target: one op's slot is \
             floor(1e9 / rate) = 1 ns)\n"
        ),
        "{text}"
    );
}

#[test]
fn an_exact_or_nearly_exact_rate_is_reported_without_a_warning() {
    // 2,000 ops/s: a 500 µs slot, exact.
    let (stdout, stderr) = run_both(&["pace", "--rate", "2000", "--count", "20", "--json"]);
    assert!(stderr.is_empty(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(f(&v, "effective_rate"), 2000.0);
    // 3 ops/s: 333 333 333 ns, 3.000000003 ops/s, within 0.1 %.
    let (stdout, stderr) = run_both(&["pace", "--rate", "3", "--count", "1", "--json"]);
    assert!(stderr.is_empty(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(f(&v, "effective_rate"), 1e9 / 333_333_333.0);
    let (text, stderr) = run_both(&["pace", "--rate", "3", "--count", "1"]);
    assert!(stderr.is_empty(), "{stderr}");
    assert!(text.contains("effective rate  3.0000 ops/s\n"), "{text}");
}

#[test]
fn every_limiter_reports_its_effective_rate() {
    // (limiter arguments, effective rate, the warning's explanation; None:
    // no warning).
    let cases: [(&[&str], f64, Option<&str>); 8] = [
        (
            &["--limiter", "pool", "--rate", "510M"],
            1e9,
            Some("one op takes floor(1e9 / rate) = 1 ns of tokens"),
        ),
        // 4 shards of 1.275e8: 7.84 ns truncated to 7 ns.
        (
            &["--rate", "510M", "--shards", "4"],
            4.0 * (1e9 / 7.0),
            Some("each shard's slot is floor(1e9 x 4 / rate) = 7 ns"),
        ),
        // Every worker's own pacer: twice the truncated rate.
        (
            &["--rate", "510M,1.1,thread", "--threads", "2"],
            2e9,
            Some("one op's slot is floor(1e9 / rate) = 1 ns"),
        ),
        // Guava's whole microseconds: 10.53 µs charged 10 µs.
        (
            &["--limiter", "bursty", "--rate", "95k"],
            1e5,
            Some("one permit is charged Guava's whole microseconds, floor(1e6 / rate) = 10 µs"),
        ),
        // Above 1e5 ops/s the CLI keeps whole nanoseconds: 2 µs exact.
        (
            &["--limiter", "warmup", "--warmup", "0s", "--rate", "500k"],
            5e5,
            None,
        ),
        (
            &["--limiter", "refill", "--rate", "510M"],
            1e9,
            Some("one permit refills in floor(refresh period / limit) = 1 ns"),
        ),
        // 3 per second: 333 333 333 ns per permit, within 0.1 %.
        (
            &["--limiter", "refill", "--rate", "3"],
            1e9 / 333_333_333.0,
            None,
        ),
        // A cycle rounds no interval.
        (&["--limiter", "cycle", "--rate", "510M"], 510e6, None),
    ];
    for (limiter, effective, why) in cases {
        let mut args = vec!["pace", "--count", "3", "--json"];
        args.extend(limiter);
        let (stdout, stderr) = run_both(&args);
        let v: Value = serde_json::from_str(&stdout).expect("JSON");
        let shown = f(&v, "effective_rate");
        assert!(
            (shown - effective).abs() <= 1e-12 * effective,
            "{limiter:?}: {shown} vs {effective}"
        );
        match why {
            Some(why) => {
                assert!(
                    stderr.starts_with("warning: --limiter "),
                    "{limiter:?}: {stderr}"
                );
                assert!(stderr.trim_end().ends_with(why), "{limiter:?}: {stderr}");
                assert_eq!(stderr.lines().count(), 1, "{limiter:?}: {stderr}");
            }
            None => assert!(stderr.is_empty(), "{limiter:?}: {stderr}"),
        }
    }
}
