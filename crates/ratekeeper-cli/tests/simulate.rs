//! End-to-end tests of `ratekeeper simulate` and of the plots (`--plot`) of
//! `simulate` and `pace`.
//!
//! `simulate` runs on a virtual clock, so its output is exact and the same on
//! every run; `pace` runs are short and only their plot files are checked.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::Stdio;

use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{ratekeeper, rejects, u, Watchdog, PROCESS_LIMIT};

/// Runs `ratekeeper ARGS`, expects success and no stderr (with `--plot
/// FILE`, `wrote FILE` alone), returns stdout.
fn stdout_of(args: &[&str]) -> String {
    let stderr = match args.iter().position(|a| *a == "--plot") {
        Some(i) => format!("wrote {}\n", args[i + 1]),
        None => String::new(),
    };
    let out = ratekeeper()
        .args(args)
        .assert()
        .success()
        .stderr(stderr)
        .get_output()
        .clone();
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Runs `ratekeeper ARGS --json` and parses the one line of JSON.
fn json_of(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let stdout = stdout_of(&args);
    assert_eq!(stdout.lines().count(), 1, "one line of JSON: {stdout}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// A fresh path in the integration tests' scratch folder.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("simulate-tests");
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// The small pattern checked exactly: three at once, a second of nothing,
/// two at once, through four limiters at 10 ops/s (one op per 100 ms).
const SMALL: [&str; 11] = [
    "simulate",
    "--arrivals",
    "burst 3; idle 1s; burst 2",
    "--limiter",
    "pacer:10,1",
    "--limiter",
    "pacer:10,0",
    "--limiter",
    "bursty:10",
    "--limiter",
    "refill:10,100ms,2,1,150ms",
];

/// Why each number is what it is:
///
/// * Strict pacer: the three at 0 s get slots 0, 100 and 200 ms. At 1 s its
///   next slots are 300 and 400 ms; strict keeps the lateness, so they go
///   at 1.0 s and 1.1 s, 700 ms behind their slots. Achieved: 5 ops over
///   1.1 s plus one 100 ms interval.
/// * Average pacer: the same, but the unused slots may go at once: both at
///   1.0 s (700 and 600 ms behind); two grants together, max burst 2.
/// * SmoothBursty: the first permit is free and the next caller pays, so
///   0, 100, 200 ms; idle time from 300 ms stores 7 permits, and both go at
///   1.0 s. Guava keeps no schedule: nothing is behind.
/// * RefillLimiter, one permit per 100 ms, a bucket of 2 holding 1 at 0 s:
///   the first goes at once, the second waits 100 ms (within the 150 ms
///   timeout), the third would wait 200 ms and is refused. By 1.0 s the
///   bucket is full again: both go at once.
const SMALL_EXPECTED: &str = "\
pattern   burst 3; idle 1s; burst 2
arrivals  5, until 1s (open loop: each arrival asks for its permit at its own time; a waiting op holds up nothing)
limiters  pacer:10,1                 ratekeeper Pacer, 10 ops/s, strictness 1 (strict)
          pacer:10,0                 ratekeeper Pacer, 10 ops/s, strictness 0 (average)
          bursty:10                  Guava SmoothBursty, 10 ops/s, max burst 1s (10 permits stored while idle)
          refill:10,100ms,2,1,150ms  Resilience4j RefillLimiter, 1 permits per 100ms (10 ops/s), capacity 2, 1 initial permits, timeout 150ms

timeline of pacer:10,1 (seconds)
  op   arrival  scheduled   granted      wait    behind
   1  0.000000   0.000000  0.000000  0.000000  0.000000
   2  0.000000   0.100000  0.100000  0.100000  0.000000
   3  0.000000   0.200000  0.200000  0.200000  0.000000
   4  1.000000   0.300000  1.000000  0.000000  0.700000
   5  1.000000   0.400000  1.100000  0.100000  0.700000

timeline of pacer:10,0 (seconds)
  op   arrival  scheduled   granted      wait    behind
   1  0.000000   0.000000  0.000000  0.000000  0.000000
   2  0.000000   0.100000  0.100000  0.100000  0.000000
   3  0.000000   0.200000  0.200000  0.200000  0.000000
   4  1.000000   0.300000  1.000000  0.000000  0.700000
   5  1.000000   0.400000  1.000000  0.000000  0.600000

timeline of bursty:10 (seconds)
  op   arrival  scheduled   granted      wait    behind
   1  0.000000   0.000000  0.000000  0.000000  0.000000
   2  0.000000   0.100000  0.100000  0.100000  0.000000
   3  0.000000   0.200000  0.200000  0.200000  0.000000
   4  1.000000   1.000000  1.000000  0.000000  0.000000
   5  1.000000   1.000000  1.000000  0.000000  0.000000

timeline of refill:10,100ms,2,1,150ms (seconds)
  op   arrival  scheduled   granted      wait    behind
   1  0.000000   0.000000  0.000000  0.000000  0.000000
   2  0.000000   0.100000  0.100000  0.100000  0.000000
   3  0.000000          -   refused         -         -
   4  1.000000   1.000000  1.000000  0.000000  0.000000
   5  1.000000   1.000000  1.000000  0.000000  0.000000

summary (wait = granted - arrival; behind = granted - scheduled)
limiter                      target  granted  refused      achieved  max burst  wait p50  wait p99  wait max  behind max  last grant
pacer:10,1                 10 ops/s        5        0  4.1667 ops/s          1     100ms     200ms     200ms       700ms       1.10s
pacer:10,0                 10 ops/s        5        0  4.5455 ops/s          2       0ns     200ms     200ms       700ms       1.00s
bursty:10                  10 ops/s        5        0  4.5455 ops/s          2       0ns     200ms     200ms         0ns       1.00s
refill:10,100ms,2,1,150ms  10 ops/s        4        1  3.6364 ops/s          2       0ns     100ms     100ms         0ns       1.00s
";

#[test]
fn small_pattern_output_is_exact() {
    let first = stdout_of(&SMALL);
    assert_eq!(first, SMALL_EXPECTED);
    // Deterministic: the same again, and the same JSON twice.
    assert_eq!(stdout_of(&SMALL), first);
    assert_eq!(json_of(&SMALL), json_of(&SMALL));
}

#[test]
fn small_pattern_json_is_exact() {
    let v = json_of(&SMALL);
    assert_eq!(v["pattern"], "burst 3; idle 1s; burst 2");
    assert_eq!(u(&v, "arrivals"), 5);
    assert_eq!(u(&v, "end_ns"), 1_000_000_000);
    assert_eq!(v["model"], "open_loop");
    assert_eq!(u(&v, "rows"), 100);
    let limiters = v["limiters"].as_array().expect("limiters");
    assert_eq!(limiters.len(), 4);
    let granted = |l: &Value| -> Vec<Option<u64>> {
        l["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .map(|r| r["granted_ns"].as_u64())
            .collect()
    };
    const MS: u64 = 1_000_000;
    let strict = &limiters[0];
    assert_eq!(strict["kind"], "pacer");
    assert_eq!(strict["strictness_mode"], "strict");
    assert_eq!(
        granted(strict),
        [
            Some(0),
            Some(100 * MS),
            Some(200 * MS),
            Some(1_000 * MS),
            Some(1_100 * MS)
        ]
    );
    assert_eq!(u(&strict["behind_ns"], "max"), 700 * MS);
    assert_eq!(u(strict, "rate_span_ns"), 1_200 * MS);
    assert_eq!(limiters[1]["strictness_mode"], "average");
    assert_eq!(u(&limiters[1], "max_burst"), 2);
    assert_eq!(limiters[2]["kind"], "bursty");
    assert_eq!(limiters[2]["max_burst_seconds"], 1.0);
    let refill = &limiters[3];
    assert_eq!(refill["kind"], "refill");
    assert_eq!(
        (
            u(refill, "ops"),
            u(refill, "refused"),
            u(refill, "capacity")
        ),
        (4, 1, 2)
    );
    assert_eq!(
        granted(refill),
        [
            Some(0),
            Some(100 * MS),
            None,
            Some(1_000 * MS),
            Some(1_000 * MS)
        ]
    );
    let refused = &refill["timeline"][2];
    assert_eq!(refused["refused"], true);
    assert!(refused["wait_ns"].is_null() && refused["scheduled_ns"].is_null());
    // Fields of other kinds are left out.
    assert!(strict.get("capacity").is_none());
    assert!(refill.get("strictness").is_none());
}

/// Parses a duration the text report prints (`fmt_nanos`: 3 significant
/// digits and a unit) into nanoseconds.
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

/// Checks a text duration against exact nanoseconds (3 significant digits).
fn agrees(text: &str, exact: u64) {
    let t = text_nanos(text);
    let e = exact as f64;
    assert!(
        (t - e).abs() <= e * 0.005 + 0.5,
        "text {text} vs JSON {exact}"
    );
}

#[test]
fn json_numbers_agree_with_the_text_report() {
    let args = [
        "simulate",
        "--arrivals",
        "burst 20 @0s; every 50ms for 3s; idle 2s; burst 10",
        "--limiter",
        "pacer:10,1.0",
        "--limiter",
        "pacer:10,1.5",
        "--limiter",
        "warmup:10,2s",
        "--limiter",
        "pool:30,1.2",
        "--limiter",
        "cycle:20,500ms,timeout=500ms",
        "--rows",
        "all",
    ];
    let text = stdout_of(&args);
    let v = json_of(&args);
    let arrivals = u(&v, "arrivals");
    assert_eq!(arrivals, 90);
    let limiters = v["limiters"].as_array().expect("limiters");
    summary_agrees_with_the_json(&text, limiters, arrivals);
    timelines_agree_with_the_json(&text, limiters);
    // The cycle limiter (10 permits per 500 ms cycle, waits up to 500 ms) is
    // offered 20 ops at 0 s: 10 go at once, 10 at 500 ms, the rest would wait
    // longer and are refused; the other limiters refuse none.
    assert!(u(&limiters[4], "refused") > 0, "{}", limiters[4]);
    assert!(limiters[..4].iter().all(|l| u(l, "refused") == 0));
}

/// The summary table of `text`: one line per limiter after its header, each
/// cell as in the JSON `limiters` (of `arrivals` arrivals), and the JSON
/// consistent with itself.
fn summary_agrees_with_the_json(text: &str, limiters: &[Value], arrivals: u64) {
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("limiter "))
        .skip(1)
        .collect();
    assert_eq!(summary.len(), limiters.len(), "{text}");
    for (line, l) in summary.iter().zip(limiters) {
        let cells: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(cells[0], l["limiter"].as_str().unwrap(), "{line}");
        let count = |cell: &str| cell.replace(',', "").parse::<u64>().unwrap();
        assert_eq!(count(cells[2]), u(l, "ops"), "{line}");
        assert_eq!(count(cells[3]), u(l, "refused"), "{line}");
        assert_eq!(u(l, "ops") + u(l, "refused"), arrivals);
        let achieved: f64 = cells[4]
            .trim_end_matches(" ops/s")
            .replace(',', "")
            .parse()
            .unwrap();
        let exact = l["achieved_rate"].as_f64().unwrap();
        assert!((achieved - exact).abs() <= 1e-4 * exact.max(1.0), "{line}");
        assert_eq!(count(cells[5]), u(l, "max_burst"), "{line}");
        agrees(cells[6], u(&l["wait_ns"], "p50"));
        agrees(cells[7], u(&l["wait_ns"], "p99"));
        agrees(cells[8], u(&l["wait_ns"], "max"));
        agrees(cells[9], u(&l["behind_ns"], "max"));
        agrees(cells[10], u(l, "last_grant_ns"));
        // The JSON is consistent with itself.
        let elapsed = u(l, "rate_span_ns");
        let interval = (1e9 / l["target_rate"].as_f64().unwrap()).round() as u64;
        assert_eq!(
            elapsed,
            u(l, "last_grant_ns") - u(l, "first_grant_ns") + interval
        );
        assert!((exact - u(l, "ops") as f64 * 1e9 / elapsed as f64).abs() < 1e-9 * exact);
        let w = &l["wait_ns"];
        assert!(u(w, "p50") <= u(w, "p90") && u(w, "p90") <= u(w, "p99"));
        assert!(u(w, "p99") <= u(w, "p999") && u(w, "p999") <= u(w, "max"));
    }
}

/// Every timeline row of `text`, exact in both it (seconds with 6 or 9
/// decimals) and the JSON `limiters`.
fn timelines_agree_with_the_json(text: &str, limiters: &[Value]) {
    for l in limiters {
        let name = l["limiter"].as_str().unwrap();
        let rows: Vec<&str> = text
            .lines()
            .skip_while(|line| *line != format!("timeline of {name} (seconds)"))
            .skip(2)
            .take_while(|line| !line.is_empty())
            .collect();
        let json_rows = l["timeline"].as_array().unwrap();
        assert_eq!(rows.len(), json_rows.len(), "{name}");
        assert_eq!(u(l, "timeline_omitted"), 0);
        let secs = |s: &str| -> Option<u64> {
            let (whole, frac) = s.split_once('.')?;
            let frac = format!("{frac:0<9}");
            Some(whole.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?)
        };
        for (line, r) in rows.iter().zip(json_rows) {
            let cells: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(cells[0].parse::<u64>().unwrap(), u(r, "op"));
            assert_eq!(secs(cells[1]), r["arrival_ns"].as_u64(), "{name}: {line}");
            assert_eq!(secs(cells[2]), r["scheduled_ns"].as_u64(), "{name}: {line}");
            assert_eq!(secs(cells[3]), r["granted_ns"].as_u64(), "{name}: {line}");
            assert_eq!(secs(cells[4]), r["wait_ns"].as_u64(), "{name}: {line}");
            assert_eq!(secs(cells[5]), r["behind_ns"].as_u64(), "{name}: {line}");
            assert_eq!(cells[3] == "refused", r["refused"] == true);
        }
    }
}

#[test]
fn rows_limit_the_timeline() {
    let args = [
        "simulate",
        "--arrivals",
        "every 10ms for 1s",
        "--limiter",
        "pacer:50",
        "--rows",
        "3",
    ];
    let text = stdout_of(&args);
    assert!(
        text.contains("  ... 97 more ops (--rows all shows every op)"),
        "{text}"
    );
    let v = json_of(&args);
    let l = &v["limiters"][0];
    assert_eq!(l["timeline"].as_array().unwrap().len(), 3);
    assert_eq!(u(l, "timeline_omitted"), 97);
    assert_eq!(u(l, "ops"), 100);
    let text = stdout_of(&[
        "simulate",
        "--arrivals",
        "every 10ms for 1s",
        "--limiter",
        "pacer:50",
        "--rows",
        "0",
    ]);
    assert!(!text.contains("timeline of"), "{text}");
    assert!(text.contains("summary"), "{text}");
    assert!(json_of(&[
        "simulate",
        "--arrivals",
        "burst 1",
        "--limiter",
        "pacer:50",
        "--rows",
        "all"
    ])["rows"]
        .is_null());
}

#[test]
fn bad_arrival_patterns_exit_2() {
    let with = |pattern: &'static str| ["simulate", "--arrivals", pattern, "--limiter", "pacer:10"];
    rejects(
        &with("burst 20; every 50ms for three"),
        &[
            "--arrivals",
            "step 2",
            "\"three\" is not a duration",
            "50ms",
        ],
    );
    rejects(&with("sprint 5"), &["\"sprint\" is not a step", "burst N"]);
    rejects(&with("burst lots"), &["\"lots\" is not a count"]);
    rejects(
        &with("every 50ms"),
        &["\"every 50ms\" ends too soon", "for DUR"],
    );
    rejects(
        &with("idle 3s; burst 1 @1s"),
        &["step 2", "\"@1s\" is before 3s"],
    );
    rejects(&with("every 0s for 1s"), &["\"0s\"", "greater than zero"]);
    rejects(&with("rate fast for 1s"), &["\"fast\" is not a rate"]);
    rejects(&with("every 1us for 10s"), &["more than 1000000 arrivals"]);
    rejects(&with(";"), &["no steps"]);
}

#[test]
fn bad_limiter_specs_exit_2() {
    let with = |limiter: &'static str| ["simulate", "--arrivals", "burst 1", "--limiter", limiter];
    rejects(
        &with("pacer"),
        &["'pacer'", "--limiter", "expected KIND:ARGS"],
    );
    rejects(
        &with("bucket:10"),
        &["\"bucket\" is not a limiter kind", "pacer, pool"],
    );
    rejects(
        &with("pacer:fast"),
        &["'pacer:fast'", "\"fast\"", "not a rate"],
    );
    rejects(
        &with("pacer:10,x"),
        &["strictness \"x\" is not a number", "1 (strict)"],
    );
    rejects(
        &with("pacer:10,-1"),
        &["strictness \"-1\"", "must not be negative"],
    );
    rejects(
        &with("warmup:10"),
        &["warmup needs a warm-up period", "warmup:RATE,WARMUP"],
    );
    rejects(
        &with("warmup:10,2s,0.5"),
        &["cold factor must be finite and at least 1.0, got 0.5"],
    );
    rejects(
        &with("pool:10,0.5"),
        &["burst ratio must be at least 1.0, got 0.5"],
    );
    rejects(
        &with("pool:10,1.1,5s"),
        &["fill \"5s\"", "between 1us and 1s"],
    );
    rejects(
        &with("refill:1000,1500us"),
        &[
            "1.5 permits per period",
            "whole number",
            "(e.g. period 1ms)",
        ],
    );
    rejects(
        &with("refill:10,capacity=5"),
        &["permit capacity 5 is below the limit for period 10"],
    );
    rejects(
        &with("cycle:10,initial=1"),
        &["\"initial\" is not a field of cycle"],
    );
    rejects(
        &with("pacer:10,1,2"),
        &["unexpected \"2\"", "pacer:RATE[,STRICTNESS]"],
    );
    rejects(
        &with("pacer:10,strictness=1,2"),
        &["\"2\" follows a NAME=VALUE field"],
    );
    // A simulated pool that would need too many fills is refused at once.
    rejects(
        &[
            "simulate",
            "--arrivals",
            "burst 60",
            "--limiter",
            "pool:1,1.0,1us",
        ],
        &[
            "--limiter pool:1,1.0,1us",
            "more than 50000000 fills of 1us",
        ],
    );
}

#[test]
fn bad_options_exit_2() {
    rejects(
        &["simulate", "--arrivals", "burst 1"],
        &["--limiter <KIND:ARGS>"],
    );
    rejects(
        &["simulate", "--limiter", "pacer:10"],
        &["--arrivals <PATTERN>"],
    );
    let base = ["simulate", "--arrivals", "burst 1", "--limiter", "pacer:10"];
    let with =
        |more: &[&'static str]| -> Vec<&'static str> { base.iter().chain(more).copied().collect() };
    rejects(&with(&["--rows", "many"]), &["'many'", "--rows", "or all"]);
    rejects(
        &with(&["--plot", "out.jpg"]),
        &["'out.jpg'", ".svg or .png"],
    );
    rejects(&with(&["--bucket", "1s"]), &["--bucket", "--plot"]);
    rejects(
        &with(&["--plot", "x.svg", "--bucket", "0s"]),
        &["'0s'", "greater than zero"],
    );
    let tiny = scratch("tiny-bucket.svg");
    rejects(
        &[
            "simulate",
            "--arrivals",
            "every 1s for 10s",
            "--limiter",
            "pacer:1",
            "--plot",
            tiny.to_str().unwrap(),
            "--bucket",
            "100us",
        ],
        &["--bucket 100us", "buckets; at most 10000"],
    );
    assert!(!tiny.exists(), "no plot written");
    let mut ten = vec!["simulate", "--arrivals", "burst 1"];
    for _ in 0..10 {
        ten.extend(["--limiter", "pacer:10"]);
    }
    rejects(&ten, &["10 --limiter options given; at most 9"]);
}

#[test]
fn help_shows_examples_grammar_and_schema() {
    for flag in ["-h", "--help"] {
        ratekeeper()
            .args(["simulate", flag])
            .assert()
            .success()
            .stdout(
                predicate::str::contains("Examples:").and(predicate::str::contains(
                    "ratekeeper simulate --arrivals 'burst 20 @0s; every 50ms for 3s; idle 2s; \
                     burst 10' --limiter pacer:10,1.0",
                )),
            );
    }
    ratekeeper()
        .args(["simulate", "--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("every DUR for DUR")
                .and(predicate::str::contains("open loop"))
                .and(predicate::str::contains("pacer:RATE[,STRICTNESS]"))
                .and(predicate::str::contains("warmup:RATE,WARMUP[,COLD]"))
                .and(predicate::str::contains("refill:RATE[,PERIOD]"))
                .and(predicate::str::contains("timeline_omitted"))
                .and(predicate::str::contains("behind_ns"))
                .and(predicate::str::contains("--plot <FILE>"))
                .and(predicate::str::contains("--client <NAME=PATTERN>"))
                .and(predicate::str::contains("--overflow <POLICY>"))
                .and(predicate::str::contains("ratekeeper simulate --client"))
                .and(predicate::str::contains("\"evicted_debt\"")),
        );
    ratekeeper().arg("--help").assert().success().stdout(
        predicate::str::contains("simulate")
            .and(predicate::str::contains("ratekeeper simulate --arrivals")),
    );
}

#[test]
fn closed_stdout_is_not_an_error() {
    // Far more output than a pipe holds, so the writer is still writing
    // when the reader goes away after the first line.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
        .args([
            "simulate",
            "--arrivals",
            "every 1ms for 5s",
            "--limiter",
            "pacer:500,1",
            "--limiter",
            "pacer:500,0",
            "--rows",
            "all",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper");
    let _watchdog = Watchdog::new(&child, PROCESS_LIMIT);
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read the first line");
    assert!(first.starts_with("pattern "), "{first}");
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

/// The colours (`#RRGGBB`) of the polylines in an SVG, and its size.
fn svg_lines(svg: &str) -> (BTreeSet<String>, (u32, u32)) {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let size = |attr: &str| {
        root.attribute(attr)
            .and_then(|v| v.parse().ok())
            .expect(attr)
    };
    let colors = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("stroke"))
        .map(str::to_ascii_uppercase)
        .collect();
    (colors, (size("width"), size("height")))
}

/// The texts of an SVG's `<text>` elements.
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_owned())
        .collect()
}

/// A PNG's size and the colours of its pixels (8-bit RGB or RGBA).
fn png_pixels(bytes: &[u8]) -> ((u32, u32), BTreeSet<String>) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut reader = png::Decoder::new(bytes).read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG image data");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected colour type {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let colors = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| format!("#{:02X}{:02X}{:02X}", p[0], p[1], p[2]))
        .collect();
    ((info.width, info.height), colors)
}

const PLOT_ARGS: [&str; 10] = [
    "simulate",
    "--arrivals",
    "every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s",
    "--limiter",
    "pacer:25,1",
    "--limiter",
    "pacer:25,0",
    "--limiter",
    "warmup:25,1s",
    "--rows",
];

#[test]
fn simulate_plots_one_series_per_limiter_in_svg_and_png() {
    let svg_path = scratch("simulate.svg");
    let png_path = scratch("simulate.png");
    let mut args = PLOT_ARGS.to_vec();
    args.push("0");
    let text = {
        let mut a = args.clone();
        a.extend(["--plot", svg_path.to_str().unwrap()]);
        stdout_of(&a)
    };
    // The report is the same with or without a plot.
    assert_eq!(text, stdout_of(&args));
    let svg = std::fs::read_to_string(&svg_path).expect("the SVG was written");
    let (colors, size) = svg_lines(&svg);
    let texts = svg_texts(&svg);
    // Each limiter in both panels' legends; arrivals and the target once.
    for label in ["pacer:25,1", "pacer:25,0", "warmup:25,1s"] {
        assert_eq!(
            texts.iter().filter(|t| *t == label).count(),
            2,
            "{label}: {texts:?}"
        );
    }
    assert_eq!(texts.iter().filter(|t| *t == "arrivals").count(), 1);
    assert!(texts.iter().any(|t| t == "target 25 ops/s"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "rate (ops/s)"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "wait (s)"), "{texts:?}");
    // A line colour per limiter, the arrivals' and the target's.
    assert!(colors.len() >= 5, "{colors:?}");

    let mut a = args.clone();
    a.extend(["--plot", png_path.to_str().unwrap()]);
    stdout_of(&a);
    let png = std::fs::read(&png_path).expect("the PNG was written");
    let (png_size, pixels) = png_pixels(&png);
    assert_eq!(png_size, size, "PNG and SVG have the same size");
    // Every line colour of the SVG is drawn in the PNG too.
    for c in &colors {
        assert!(pixels.contains(c), "{c} not among the PNG's pixels");
    }
    // And the PNG has text: DejaVu's anti-aliased glyphs give grey levels
    // that no line colour has.
    let greys = pixels
        .iter()
        .filter(|c| c[1..3] == c[3..5] && c[3..5] == c[5..7])
        .count();
    assert!(greys > 20, "{greys} grey levels");
}

/// Runs `ratekeeper pace ARGS` with `--plot FILE`, expects success and
/// `wrote FILE` alone on standard error; returns stdout.
fn pace_stdout_of(args: &[&str]) -> String {
    let plot = args[args.iter().position(|a| *a == "--plot").expect("--plot") + 1];
    let out = ratekeeper()
        .args(args)
        .assert()
        .success()
        .stderr(format!("wrote {plot}\n"))
        .get_output()
        .clone();
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

#[test]
fn pace_plots_the_achieved_rate_and_the_waits() {
    let svg_path = scratch("pace.svg");
    let out = pace_stdout_of(&[
        "pace",
        "--rate",
        "2000",
        "--count",
        "200",
        "--plot",
        svg_path.to_str().unwrap(),
        "--json",
    ]);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(u(&v, "ops"), 200);
    let svg = std::fs::read_to_string(&svg_path).expect("the SVG was written");
    let texts = svg_texts(&svg);
    for label in [
        "achieved",
        "target 2,000 ops/s",
        "longest wait",
        "mean wait",
    ] {
        assert!(texts.iter().any(|t| t == label), "{label}: {texts:?}");
    }
    let (colors, _) = svg_lines(&svg);
    assert!(colors.len() >= 3, "{colors:?}");

    let png_path = scratch("pace.png");
    pace_stdout_of(&[
        "pace",
        "--limiter",
        "refill",
        "--rate",
        "1000",
        "--refresh-period",
        "10ms",
        "--threads",
        "2",
        "--duration",
        "200ms",
        "--plot",
        png_path.to_str().unwrap(),
        "--bucket",
        "20ms",
    ]);
    let (size, pixels) = png_pixels(&std::fs::read(&png_path).expect("the PNG was written"));
    assert_eq!(size, svg_lines(&svg).1);
    assert!(colors.iter().all(|c| pixels.contains(c)), "{colors:?}");
}

#[test]
fn pace_plot_options_are_checked() {
    rejects(
        &["pace", "--rate", "100", "--plot", "rate.gif"],
        &["'rate.gif'", ".svg or .png"],
    );
    rejects(
        &["pace", "--rate", "100", "--bucket", "10ms"],
        &["--bucket", "--plot"],
    );
    // Checked before the run: this would otherwise pace for 5 s.
    rejects(
        &[
            "pace", "--rate", "100", "--plot", "rate.svg", "--bucket", "100us",
        ],
        &["--bucket 100us cuts the plot's 5s into 50000 buckets"],
    );
    // A file that cannot be created fails before the run (exit 1).
    let missing = scratch("no-such-folder").join("rate.svg");
    ratekeeper()
        .args([
            "pace",
            "--rate",
            "100",
            "--duration",
            "10s",
            "--plot",
            missing.to_str().unwrap(),
        ])
        .timeout(std::time::Duration::from_secs(5))
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(
            predicate::str::contains("cannot create the plot file")
                .and(predicate::str::contains("no-such-folder")),
        );
}

/// The CLI reference (`docs/cli.md`) shows `docs/simulate.svg`, the command
/// that drew it and that command's summary: the committed plot is what the
/// command draws now, and the summary is what it prints.
#[test]
fn cli_reference_plot_and_summary_are_what_the_command_gives() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/cli.md")).expect("docs/cli.md");
    for shown in [
        "--arrivals 'every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s'",
        "--limiter pacer:25,1 --limiter pacer:25,1.5 --limiter pacer:25,0 --limiter warmup:25,1s",
        "--rows 0 --plot docs/simulate.svg",
        "](simulate.svg)",
    ] {
        assert!(doc.contains(shown), "docs/cli.md no longer shows {shown}");
    }
    let svg = scratch("readme.svg");
    let text = stdout_of(&[
        "simulate",
        "--arrivals",
        "every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s",
        "--limiter",
        "pacer:25,1",
        "--limiter",
        "pacer:25,1.5",
        "--limiter",
        "pacer:25,0",
        "--limiter",
        "warmup:25,1s",
        "--rows",
        "0",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("limiter "))
        .collect();
    assert_eq!(summary.len(), 5, "{text}");
    for line in summary {
        assert!(doc.contains(line), "docs/cli.md's summary lacks: {line}");
    }
    let drawn = std::fs::read(&svg).expect("the SVG was written");
    let committed = std::fs::read(root.join("docs/simulate.svg")).expect("docs/simulate.svg");
    assert!(
        drawn == committed,
        "docs/simulate.svg is out of date: run docs/cli.md's simulate command again"
    );
}

#[test]
fn guava_limiters_above_1e5_per_second_keep_a_nanosecond_schedule() {
    // Four arrivals at once. At 2e6 ops/s a permit costs 500 ns, which
    // Guava's whole microseconds charge 0 µs: all four would go at once.
    // The CLI keeps these limiters in whole nanoseconds above 1e5 ops/s:
    // 500 ns apart; the warm-up limiter (4 µs, cold factor 3) is Guava's
    // testWarmUp a million times faster (1.375 µs, 1.125 µs, 0.875 µs). At
    // 1e5 ops/s (10 µs a permit) it is Guava's arithmetic.
    let v = json_of(&[
        "simulate",
        "--arrivals",
        "burst 4",
        "--limiter",
        "bursty:2M,0",
        "--limiter",
        "warmup:2M,4us",
        "--limiter",
        "bursty:100k,0",
    ]);
    let limiters = v["limiters"].as_array().expect("limiters");
    let granted = |l: &Value| -> Vec<u64> {
        l["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .map(|r| r["granted_ns"].as_u64().expect("granted"))
            .collect()
    };
    let res: Vec<&str> = limiters
        .iter()
        .map(|l| l["resolution"].as_str().expect("resolution"))
        .collect();
    assert_eq!(res, ["nanos", "nanos", "micros"]);
    assert_eq!(granted(&limiters[0]), [0, 500, 1_000, 1_500]);
    assert_eq!(granted(&limiters[1]), [0, 1_375, 2_500, 3_375]);
    assert_eq!(granted(&limiters[2]), [0, 10_000, 20_000, 30_000]);
    let text = stdout_of(&[
        "simulate",
        "--arrivals",
        "burst 1",
        "--limiter",
        "bursty:2M",
    ]);
    assert!(text.contains("whole-nanosecond schedule"), "{text}");
}

#[test]
fn effective_rates_are_reported_and_truncated_ones_warned_about() {
    // pacer:510M: a 1.96 ns slot truncated to 1 ns; pacer:500M: 2 ns, exact;
    // bursty:95k: 10.53 µs charged 10 µs (Guava's whole microseconds).
    let args = [
        "simulate",
        "--arrivals",
        "burst 3",
        "--limiter",
        "pacer:510M",
        "--limiter",
        "pacer:500M",
        "--limiter",
        "bursty:95k",
        "--rows",
        "0",
    ];
    let out = ratekeeper()
        .args(args)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        "warning: --limiter pacer:510M runs at 1,000,000,000 ops/s, not the target 510,000,000 \
         ops/s (+96.08 %): one op's slot is floor(1e9 / rate) = 1 ns\n\
         warning: --limiter bursty:95k runs at 100,000 ops/s, not the target 95,000 ops/s \
         (+5.26 %): one permit is charged Guava's whole microseconds, floor(1e6 / rate) = \
         10 µs\n"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let effective: Vec<f64> = v["limiters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["effective_rate"].as_f64().unwrap())
        .collect();
    assert_eq!(effective, [1e9, 5e8, 1e5]);

    let out = ratekeeper()
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |label: &str| {
        text.lines()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no {label} in {text}"))
            .to_owned()
    };
    assert!(
        line("pacer:510M ").ends_with(
            "; effective 1,000,000,000 ops/s (+96.08 % over the target: one op's slot is \
             floor(1e9 / rate) = 1 ns)"
        ),
        "{text}"
    );
    assert!(!line("pacer:500M ").contains("effective"), "{text}");
    assert!(
        line("bursty:95k ").contains("; effective 100,000 ops/s (+5.26 %"),
        "{text}"
    );
}

/// Two clients for the keyed tests: `a` 20 ops, one every 50 ms (twice a
/// 10 ops/s limit); `b` 15 ops, 5 at once and then one every 100 ms.
const CLIENTS: [&str; 4] = [
    "--client",
    "a=every 50ms for 1s",
    "--client",
    "b=burst 5; every 100ms for 1s",
];

/// `simulate` with `CLIENTS`, `limiter` and `more`, no timeline.
fn with_clients<'a>(limiter: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["simulate", "--limiter", limiter, "--rows", "0"];
    args.extend(CLIENTS);
    args.extend(more);
    args
}

/// Each client's `(granted, refused)` in a limiter's JSON `clients`.
fn client_counts(limiter: &Value) -> Vec<(String, u64, u64)> {
    limiter["clients"]
        .as_array()
        .expect("clients")
        .iter()
        .map(|c| {
            (
                c["client"].as_str().unwrap().to_owned(),
                u(c, "ops"),
                u(c, "refused"),
            )
        })
        .collect()
}

#[test]
fn keyed_clients_each_get_their_own_limit_exactly() {
    const MS: u64 = 1_000_000;
    // A refill bucket of 10 permits, 10 at 0 s and one more every 100 ms,
    // refusing any wait: by 950 ms a bucket has given at most 10 + 9 = 19.
    let refill = "refill:10,1s,timeout=0s";
    let keyed = json_of(&with_clients(refill, &["--keyed"]));
    let counts = client_counts(&keyed["limiters"][0]);
    assert_eq!(counts, [("a".into(), 19, 1), ("b".into(), 15, 0)]);
    // Shared: the two clients together get one bucket's 19.
    let shared = json_of(&with_clients(refill, &[]));
    let l = &shared["limiters"][0];
    assert_eq!(client_counts(l), [("a".into(), 12, 8), ("b".into(), 7, 8)]);
    assert_eq!(u(l, "ops"), 19);
    assert!(l.get("keyed").is_none() && shared.get("keyed").is_none());
    // A strict pacer grants every op, one per 100 ms per client: `a`'s 20
    // end at 1.9 s, `b`'s 15 at 1.4 s, each at exactly 10 ops/s.
    let v = json_of(&with_clients("pacer:10,1", &["--keyed"]));
    let clients = v["limiters"][0]["clients"].as_array().unwrap();
    assert_eq!(u(&clients[0], "last_grant_ns"), 1_900 * MS);
    assert_eq!(u(&clients[1], "last_grant_ns"), 1_400 * MS);
    for c in clients {
        assert_eq!(c["achieved_rate"].as_f64(), Some(10.0), "{c}");
    }
    let k = &v["limiters"][0]["keyed"];
    assert_eq!((u(k, "live_keys"), u(k, "max_keys")), (2, 100_000));
    assert_eq!(v["keyed"]["overflow"], "deny");
    assert!(v["pattern"].is_null());
    assert_eq!(u(&v, "arrivals"), 35);
    assert_eq!(v["clients"][1]["pattern"], "burst 5; every 100ms for 1s");
}

#[test]
fn overflow_policies_differ_with_one_key() {
    const MS: u64 = 1_000_000;
    let run = |policy: &str| {
        let args = with_clients(
            "pacer:10,1",
            &["--keyed", "--max-keys", "1", "--overflow", policy],
        );
        json_of(&args)["limiters"][0].clone()
    };
    // `a` arrives first and holds debt (its next slot is in the future)
    // whenever `b` arrives, so `b` is never tracked.
    let deny = run("deny");
    assert_eq!(
        client_counts(&deny),
        [("a".into(), 20, 0), ("b".into(), 0, 15)]
    );
    let k = &deny["keyed"];
    assert_eq!(
        (u(k, "denied_new"), u(k, "overflowed"), u(k, "live_keys")),
        (15, 0, 1)
    );
    // Shared: `b` gets the one overflow limiter, a client's limit of its own.
    let shared = run("shared");
    assert_eq!(
        client_counts(&shared),
        [("a".into(), 20, 0), ("b".into(), 15, 0)]
    );
    assert_eq!(u(&shared["clients"][1], "last_grant_ns"), 1_400 * MS);
    let k = &shared["keyed"];
    assert_eq!((u(k, "denied_new"), u(k, "overflowed")), (0, 15));
    // Evict: each client evicts the other's debt, so neither is held to
    // the limit: `a` goes about as it arrives.
    let evict = run("evict");
    assert_eq!(
        client_counts(&evict),
        [("a".into(), 20, 0), ("b".into(), 15, 0)]
    );
    let k = &evict["keyed"];
    assert!(u(k, "evicted_debt") > 0, "{k}");
    assert_eq!((u(k, "denied_new"), u(k, "overflowed")), (0, 0));
    assert!(u(&evict["clients"][0], "last_grant_ns") < 1_000 * MS);
    assert_eq!(u(&deny["clients"][0], "last_grant_ns"), 1_900 * MS);
}

#[test]
fn client_json_agrees_with_the_text_report() {
    for more in [
        &["--keyed", "--max-keys", "1"][..],
        &["--keyed", "--overflow", "evict", "--max-keys", "1"],
        &[],
    ] {
        let args = with_clients("refill:10,1s,timeout=0s", more);
        let text = stdout_of(&args);
        let v = json_of(&args);
        let l = &v["limiters"][0];
        let rows: Vec<Vec<String>> = text
            .lines()
            .skip_while(|line| !line.starts_with("client "))
            .skip(1)
            .take_while(|line| !line.starts_with("keyed:") && !line.is_empty())
            .map(|line| {
                line.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect()
            })
            .collect();
        let clients = l["clients"].as_array().unwrap();
        assert_eq!(rows.len(), clients.len(), "{text}");
        for (row, c) in rows.iter().zip(clients) {
            assert_eq!(row[0], c["client"].as_str().unwrap());
            let n = |i: usize| row[i].replace(',', "").parse::<u64>().unwrap();
            assert_eq!(
                (n(1), n(2), n(3)),
                (u(c, "arrivals"), u(c, "ops"), u(c, "refused"))
            );
            match c["last_grant_ns"].as_u64() {
                Some(last) => agrees(&row[7], last),
                None => assert_eq!((row[7].as_str(), u(c, "ops")), ("-", 0)),
            }
        }
        match l.get("keyed") {
            Some(k) => {
                let line = format!(
                    "keyed: {} live of at most {} clients; evicted {} fresh, {} with credit, {} in \
                     debt; {} ops of new clients denied; {} ops overflowed to the shared limiter",
                    u(k, "live_keys"),
                    u(k, "max_keys"),
                    u(k, "evicted_fresh"),
                    u(k, "evicted_credit"),
                    u(k, "evicted_debt"),
                    u(k, "denied_new"),
                    u(k, "overflowed")
                );
                assert!(text.contains(&line), "{line} not in {text}");
            }
            None => assert!(!text.contains("keyed:"), "{text}"),
        }
    }
}

#[test]
fn client_timeline_names_each_ops_client() {
    let args = [
        "simulate",
        "--client",
        "a=burst 2",
        "--client",
        "b=burst 1",
        "--limiter",
        "pacer:10",
        "--keyed",
    ];
    let text = stdout_of(&args);
    assert!(
        text.contains("  op  client   arrival  scheduled   granted      wait    behind\n"),
        "{text}"
    );
    assert!(
        text.contains("   3       b  0.000000   0.000000  0.000000  0.000000  0.000000\n"),
        "{text}"
    );
    let v = json_of(&args);
    let clients: Vec<&str> = v["limiters"][0]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients, ["a", "a", "b"]);
}

#[test]
fn keyed_plot_draws_each_client() {
    let path = scratch("keyed.svg");
    let p = path.to_str().unwrap();
    stdout_of(&with_clients(
        "pacer:10,1",
        &[
            "--keyed",
            "--max-keys",
            "1",
            "--overflow",
            "shared",
            "--plot",
            p,
        ],
    ));
    let svg = std::fs::read_to_string(&path).expect("the plot");
    let texts = svg_texts(&svg);
    for name in ["a", "b", "a arrivals", "b arrivals", "target 10 ops/s"] {
        assert!(texts.iter().any(|t| t == name), "{name} not in {texts:?}");
    }
    assert!(
        texts
            .iter()
            .any(|t| t.contains("2 clients, one limiter each")),
        "{texts:?}"
    );
}

#[test]
fn bad_client_values_exit_2() {
    let keyed = |more: &[&'static str]| {
        let mut args = vec![
            "simulate",
            "--client",
            "a=burst 1",
            "--limiter",
            "pacer:10",
            "--keyed",
        ];
        args.extend(more);
        args
    };
    rejects(
        &[
            "simulate",
            "--client",
            "a=burst 1",
            "--client",
            "a=burst 2",
            "--limiter",
            "pacer:10",
        ],
        &["--client a=burst 2", "the client a is given twice"],
    );
    rejects(
        &["simulate", "--client", "a=", "--limiter", "pacer:10"],
        &["'a='", "--client", "client a: the pattern has no steps"],
    );
    rejects(
        &["simulate", "--client", "burst 1", "--limiter", "pacer:10"],
        &["'burst 1'", "--client", "NAME=PATTERN"],
    );
    rejects(
        &["simulate", "--client", " =burst 1", "--limiter", "pacer:10"],
        &["--client", "name is empty"],
    );
    rejects(
        &keyed(&["--max-keys", "0"]),
        &["'0'", "--max-keys", "from 1"],
    );
    rejects(
        &keyed(&["--overflow", "drop"]),
        &["'drop'", "--overflow", "deny, shared, evict"],
    );
}

#[test]
fn client_options_that_cannot_go_together_exit_2() {
    rejects(
        &[
            "simulate",
            "--client",
            "a=burst 1",
            "--limiter",
            "pool:10",
            "--keyed",
        ],
        &["--limiter pool:10 with --keyed"],
    );
    rejects(
        &[
            "simulate",
            "--arrivals",
            "burst 1",
            "--limiter",
            "pacer:10",
            "--keyed",
        ],
        &["--keyed", "--client NAME=PATTERN"],
    );
    rejects(
        &[
            "simulate",
            "--client",
            "a=burst 1",
            "--limiter",
            "pacer:10",
            "--overflow",
            "deny",
        ],
        &["--keyed"],
    );
    rejects(
        &[
            "simulate",
            "--arrivals",
            "burst 1",
            "--client",
            "a=burst 1",
            "--limiter",
            "pacer:10",
        ],
        &["--arrivals", "--client"],
    );
    rejects(
        &[
            "simulate",
            "--client",
            "a=burst 1",
            "--limiter",
            "pacer:10",
            "--limiter",
            "pacer:20",
            "--plot",
            "x.svg",
        ],
        &["--plot with --client draws one limiter's clients"],
    );
}
