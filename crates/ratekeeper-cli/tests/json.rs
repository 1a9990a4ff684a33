//! The JSON reports as a contract: `exec --json`'s standard output is the
//! report alone, every report names its schema version, every field path of
//! the pace, exec, pipe and simulate reports is the one `docs/json.md`
//! documents (a renamed, added or dropped field fails here), and a name
//! means one thing in every report.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::server::OwnServer;
use common::*;
use serde_json::Value;

/// The schema version the reports carry (`schema`).
const SCHEMA: u64 = 1;

/// Objects whose keys are data (exit statuses, signal numbers, printed
/// statuses), not field names: their keys are written `*` in a path.
const KEYED_BY_DATA: [&str; 3] = ["exit_codes", "signals", "stdout_statuses"];

/// Runs `ratekeeper ARGS` with `stdin`, expects exit status 0, and returns
/// the JSON report: from stdout, or for `pipe` from stderr (its stdout
/// carries the copy).
fn report(args: &[&str], stdin: &str) -> Value {
    json(&report_text(args, stdin))
}

/// The JSON report's line, as [`report`] finds it.
fn report_text(args: &[&str], stdin: &str) -> String {
    let out = ratekeeper()
        .args(args)
        .write_stdin(stdin.to_owned())
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stream = if args[0] == "pipe" {
        &out.stderr
    } else {
        &out.stdout
    };
    let text = String::from_utf8_lossy(stream);
    // pipe's stderr may carry warnings before the report: its last line.
    let last = text.lines().last();
    last.unwrap_or_else(|| panic!("{args:?}: no report"))
        .to_owned()
}

/// The field paths of `v` under `prefix`: `a.b` for an object's field,
/// `a[].b` for the fields of an array's objects, `a.*` for the keys of an
/// object keyed by data.
fn paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(fields) => {
            let by_data = KEYED_BY_DATA.contains(&prefix);
            for (k, x) in fields {
                let key = if by_data { "*" } else { k.as_str() };
                let path = if prefix.is_empty() {
                    key.to_owned()
                } else {
                    format!("{prefix}.{key}")
                };
                out.insert(path.clone());
                paths(x, &path, out);
            }
        }
        Value::Array(items) => {
            for x in items {
                paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The field paths `docs/json.md` documents, by report: the first
/// backquoted word of each table row, under `## pace`, `## exec`, `## pipe`,
/// `## simulate`; the `## redis` section's paths are under `redis.` in
/// pace, exec and pipe.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json.md"))
        .expect("docs/json.md");
    let mut by_section: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = h.split_whitespace().next().unwrap_or("").to_owned();
        } else if let Some(row) = line.strip_prefix("| `") {
            let path = row.split('`').next().unwrap_or("").to_owned();
            by_section.entry(section.clone()).or_default().insert(path);
        }
    }
    let redis = by_section.remove("redis").expect("a ## redis section");
    for report in ["pace", "exec", "pipe"] {
        let fields = by_section.entry(report.to_owned()).or_default();
        fields.insert("redis".to_owned());
        fields.extend(redis.iter().map(|p| format!("redis.{p}")));
    }
    // The other sections' tables (names, renames) are not schemas.
    by_section.retain(|name, _| ["pace", "exec", "pipe", "simulate"].contains(&name.as_str()));
    by_section
}

/// Runs of ratekeeper to read reports from: `(subcommand, argv, stdin)`.
#[derive(Default)]
struct Runs(Vec<(&'static str, Vec<String>, String)>);

impl Runs {
    /// `ratekeeper REPORT --json ARGS`, fed `stdin`.
    fn add(&mut self, report: &'static str, args: &[&str], stdin: &str) {
        let mut all = vec![report.to_owned(), "--json".to_owned()];
        all.extend(args.iter().map(|a| a.to_string()));
        self.0.push((report, all, stdin.to_owned()));
    }
}

/// Twenty lines for pipe.
fn lines() -> String {
    (1..=20).map(|i| format!("line {i}\n")).collect()
}

/// The runs whose reports, together, carry every field each report can
/// have (each limiter's, --work's, --stages', --stdout's, --redis'...).
fn runs(redis: Option<&str>) -> Runs {
    let mut runs = Runs::default();
    let limiters: [&[&str]; 6] = [
        &[],
        &["--limiter", "pool", "--fill", "thread"],
        &["--limiter", "bursty"],
        &["--limiter", "warmup", "--warmup", "10ms"],
        &["--limiter", "refill", "--refresh-period", "10ms"],
        &["--limiter", "cycle", "--refresh-period", "10ms"],
    ];
    for limiter in limiters {
        let mut pace = vec!["--rate", "1000", "--count", "20"];
        pace.extend(limiter);
        runs.add("pace", &pace, "");
        let mut exec = vec!["--rate", "200", "-n", "3", "--discard-stdout"];
        exec.extend(limiter);
        exec.extend(["--", "true"]);
        runs.add("exec", &exec, "");
    }
    options(&mut runs);
    pipe_and_simulate(&mut runs);
    if let Some(url) = redis {
        shared(&mut runs, url);
    }
    runs
}

/// The runs of pace's and exec's options that add fields.
fn options(runs: &mut Runs) {
    runs.add(
        "pace",
        &["--rate", "1000", "--count", "20", "--shards", "2"],
        "",
    );
    runs.add(
        "pace",
        &[
            "--rate",
            "1000",
            "--count",
            "20",
            "--work",
            "1ms",
            "--fail-if",
            "wait.p99>1h",
        ],
        "",
    );
    runs.add(
        "pace",
        &[
            "--rate",
            "500",
            "--stages",
            "100ms:1000",
            "--max-behind",
            "10s",
        ],
        "",
    );
    let log = scratch("json", "runs.log");
    let log = log.to_str().unwrap();
    runs.add(
        "exec",
        &[
            "--rate", "200", "-n", "3", "--stdout", log, "--", "echo", "hi",
        ],
        "",
    );
    runs.add(
        "exec",
        &[
            "--rate",
            "100",
            "--stages",
            "50ms:200",
            "--max-behind",
            "10s",
            "--fail-if",
            "failures>1%",
            "--discard-stdout",
            "--",
            "true",
        ],
        "",
    );
    runs.add(
        "exec",
        &[
            "--rate",
            "200",
            "-n",
            "3",
            "--status-from-stdout",
            "--",
            "sh",
            "-c",
            "echo 200",
        ],
        "",
    );
    // A run killed by a signal, for signals.*.
    runs.add(
        "exec",
        &["--rate", "200", "-n", "1", "--", "sh", "-c", "kill -9 $$"],
        "",
    );
}

/// The runs of pipe and simulate, whose reports have fields of their own.
fn pipe_and_simulate(runs: &mut Runs) {
    runs.add("pipe", &["--rate", "10000", "--report"], &lines());
    let arrivals = [
        "--arrivals",
        "burst 5; every 50ms for 200ms",
        "--rows",
        "all",
    ];
    let mut simulate = arrivals.to_vec();
    for l in [
        "pacer:10",
        "pool:10,1.5",
        "bursty:10",
        "warmup:10,1s",
        "refill:10,1s",
        "cycle:10,1s",
    ] {
        simulate.extend(["--limiter", l]);
    }
    runs.add("simulate", &simulate, "");
    runs.add(
        "simulate",
        &[
            "--client",
            "a=burst 3",
            "--client",
            "b=every 50ms for 100ms",
            "--limiter",
            "pacer:10",
            "--keyed",
            "--max-keys",
            "1",
        ],
        "",
    );
}

/// The words of `v`, borrowed.
fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The runs on a limit shared through the Redis server at `url`, with and
/// without --redis-share (each its own key: each keeps its own limit).
fn shared(runs: &mut Runs, url: &str) {
    for (i, share) in [&[][..], &["--redis-share", "0.5"][..]].iter().enumerate() {
        let with = |args: &[&str], report: &str| -> Vec<String> {
            let key = format!("rk-json-doc-{report}-{i}");
            let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            v.extend([
                "--redis".to_owned(),
                url.to_owned(),
                "--key".to_owned(),
                key,
            ]);
            v.extend(share.iter().map(|s| s.to_string()));
            v
        };
        let pace = with(&["--rate", "1000", "--count", "5"], "pace");
        let mut exec = with(&["--rate", "200", "-n", "2", "--discard-stdout"], "exec");
        exec.extend(["--".to_owned(), "true".to_owned()]);
        let pipe = with(&["--rate", "10000", "--report"], "pipe");
        runs.add("pace", &refs(&pace), "");
        runs.add("exec", &refs(&exec), "");
        runs.add("pipe", &refs(&pipe), &lines());
    }
}

#[test]
fn every_field_path_is_the_one_docs_json_md_documents() {
    let server = OwnServer::start("json-doc");
    let url = server.as_ref().map(OwnServer::url);
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, args, stdin) in runs(url.as_deref()).0 {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let v = report(&args, &stdin);
        paths(&v, "", seen.entry(name.to_owned()).or_default());
    }
    let documented = documented();
    let mut wrong = Vec::new();
    for (name, fields) in &seen {
        let doc = documented.get(name).cloned().unwrap_or_default();
        for p in fields.difference(&doc) {
            wrong.push(format!(
                "{name}: {p} is in the report but not in docs/json.md"
            ));
        }
        for p in doc.difference(fields) {
            // Without a server, the redis fields cannot be seen.
            if url.is_some() || !p.starts_with("redis") {
                wrong.push(format!(
                    "{name}: {p} is in docs/json.md but no report has it"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        ["exec", "pace", "pipe", "simulate"]
    );
}

#[test]
fn every_report_names_its_schema_version() {
    let lines = "a\nb\n";
    for (args, stdin) in [
        (
            &["pace", "--rate", "1000", "--count", "5", "--json"][..],
            "",
        ),
        (
            &["exec", "--rate", "100", "-n", "2", "--json", "--", "true"][..],
            "",
        ),
        (&["pipe", "--rate", "1000", "--json"][..], lines),
        (
            &[
                "simulate",
                "--arrivals",
                "burst 2",
                "--limiter",
                "pacer:10",
                "--json",
            ][..],
            "",
        ),
    ] {
        let text = report_text(args, stdin);
        assert_eq!(json(&text)["schema"], SCHEMA, "{args:?}: {text}");
        // First, so that the head of the line tells a reader which it is.
        let head = format!("{{\"schema\":{SCHEMA},");
        assert!(text.starts_with(&head), "{args:?}: {text}");
    }
}

/// `exec --json -- CMD` with no --stdout or --discard-stdout: standard
/// output is the JSON alone (the runs' output goes to standard error), so
/// that `| jq` reads it.
#[test]
fn exec_json_stdout_is_the_report_alone() {
    let out = ratekeeper()
        .args(["exec", "--rate", "100", "-n", "3", "--json", "--"])
        .args(["sh", "-c", "echo body; echo 200"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let v = json(&stdout);
    assert_eq!(u(&v, "runs"), 3);
    assert_eq!(v["stdout"], "stderr");
    assert_eq!(stderr.matches("body\n200\n").count(), 3, "{stderr}");
    // Without --json the runs' output stays on standard output, ahead of
    // the text report.
    let out = ratekeeper()
        .args(["exec", "--rate", "100", "-n", "2", "--", "echo", "hi"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("hi\nhi\n"), "{stdout}");
    assert!(stdout.contains("stdout          ratekeeper's"), "{stdout}");
}

/// The span the achieved rate is over is `rate_span_ns` in every report,
/// the wall clock `wall_ns`, and --max-behind's stop
/// `stopped_by_max_behind`: the achieved rate is the count over the span.
#[test]
fn one_name_means_one_thing_across_pace_exec_and_pipe() {
    let lines: String = (1..=50).map(|i| format!("{i}\n")).collect();
    for (args, stdin, count) in [
        (
            &["pace", "--rate", "1000", "--count", "50", "--json"][..],
            "",
            "ops",
        ),
        (
            &["exec", "--rate", "200", "-n", "5", "--json", "--", "true"][..],
            "",
            "runs",
        ),
        (
            &["pipe", "--rate", "5000", "--json"][..],
            lines.as_str(),
            "lines",
        ),
    ] {
        let v = report(args, stdin);
        let span = f(&v, "rate_span_ns");
        let achieved = f(&v, "achieved_rate");
        let n = f(&v, count);
        assert!(
            (achieved * span / 1e9 - n).abs() < 1e-6 * n,
            "{args:?}: {achieved} x {span} ns != {n} {count}"
        );
        for old in ["elapsed_ns", "launch_span_ns", "stopped_behind"] {
            assert!(v.get(old).is_none(), "{args:?}: {old} in {v}");
        }
        if args[0] != "pipe" {
            assert!(u(&v, "wall_ns") > 0, "{args:?}: {v}");
            assert_eq!(v["stopped_by_max_behind"], false, "{args:?}: {v}");
        }
    }
}

/// Each subcommand's --help names every field its report carries, as
/// docs/json.md does: the two schemas say the same.
#[test]
fn help_names_every_documented_field() {
    let mut missing = Vec::new();
    for (name, fields) in documented() {
        let out = ratekeeper()
            .args([name.as_str(), "--help"])
            .assert()
            .success();
        let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        let words: BTreeSet<&str> = help
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .collect();
        for path in &fields {
            // A field's own name: the last part of its path; data keys (*)
            // have none.
            let last = path.rsplit(['.', ']']).next().unwrap_or(path);
            if !last.is_empty() && last != "*" && !words.contains(last) {
                missing.push(format!("{name} --help does not name {path}"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
