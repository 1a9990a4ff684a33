//! `--redis URL --key NAME` on pace, exec and pipe: the flags, the errors,
//! and runs on a limit shared through the Redis server of `REDIS_URL`
//! (scripts/with-redis.sh starts one). Without `REDIS_URL` the tests that
//! need a server are skipped with a message; under CI (`CI` set) they fail.

mod common;

use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{ratekeeper, ratekeeper_std, rejects};
use serde_json::Value;

/// The server of `REDIS_URL`, or `None` (skipped, with a message).
fn redis_url() -> Option<String> {
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("REDIS_URL is not set under CI: run the tests through scripts/with-redis.sh")
        }
        _ => {
            common::skipped("no REDIS_URL (run through scripts/with-redis.sh)");
            None
        }
    }
}

/// A key no other test run uses.
fn key(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("rk-cli-test:{name}:{}:{nanos}", std::process::id())
}

/// A URL on a loopback port nothing listens on.
fn closed_port_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The listener is dropped: the port is closed.
    format!("redis://127.0.0.1:{port}/")
}

#[test]
fn redis_flags_are_checked_before_any_connection() {
    let url = "redis://127.0.0.1:1/";
    rejects(
        &["pace", "--rate", "10", "--redis", url, "--count", "1"],
        &["--key <NAME>"],
    );
    rejects(
        &["pace", "--rate", "10", "--key", "k", "--count", "1"],
        &["--redis <URL>"],
    );
    rejects(
        &["pace", "--rate", "10", "--redis", url, "--key", ""],
        &["the key is empty"],
    );
    rejects(
        &["pace", "--rate", "10", "--on-redis-failure", "closed"],
        &["--redis <URL>"],
    );
    rejects(
        &[
            "exec",
            "--rate",
            "10",
            "--redis",
            url,
            "--key",
            "k",
            "--on-redis-failure",
            "maybe",
            "--",
            "true",
        ],
        &["maybe", "--on-redis-failure"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "10",
            "--redis",
            url,
            "--key",
            "k",
            "--redis-share",
            "2",
        ],
        &["'2'", "--redis-share"],
    );
    rejects(
        &[
            "pace",
            "--rate",
            "10",
            "--redis",
            url,
            "--key",
            "k",
            "--on-redis-failure",
            "closed",
            "--redis-share",
            "0.5",
        ],
        &["--redis-share 0.5", "--on-redis-failure local"],
    );
}

#[test]
fn what_a_shared_limit_cannot_do_is_refused() {
    let url = "redis://127.0.0.1:1/";
    for (args, expected) in [
        (
            &["--limiter", "pool"][..],
            "--limiter pool cannot be shared with --redis",
        ),
        (
            &["--limiter", "bursty"][..],
            "--limiter bursty cannot be shared",
        ),
        (
            &["--strictness", "0", "--batch"][..],
            "--batch cannot be used with --redis",
        ),
        (
            &["--shards", "2"][..],
            "--shards cannot be used with --redis",
        ),
        (&["--precise"][..], "--precise cannot be used with --redis"),
        (
            &["--stages", "1s:20"][..],
            "--stages cannot be used with --redis",
        ),
        (
            &["--max-behind", "1s"][..],
            "--max-behind cannot be used with --redis",
        ),
    ] {
        let mut argv = vec!["pace", "--rate", "10", "--redis", url, "--key", "k"];
        argv.extend_from_slice(args);
        rejects(&argv, &[expected]);
    }
    rejects(
        &["pace", "--rate", "10,thread", "--redis", url, "--key", "k"],
        &["thread scope cannot be used with --redis"],
    );
    rejects(
        &["pace", "--rate", "10", "--redis", "not a url", "--key", "k"],
        &["--redis takes a URL", "redis://HOST:PORT/"],
    );
    rejects(
        &[
            "exec", "--rate", "10", "--redis", url, "--key", "k", "--stages", "1s:5", "--", "true",
        ],
        &["--stages cannot be used with --redis"],
    );
    rejects(
        &[
            "pipe", "--bytes", "--rate", "4GiB", "--redis", url, "--key", "k",
        ],
        &["--rate 4GiB with --bytes cannot be shared with --redis"],
    );
}

#[test]
fn an_unreachable_server_fails_fast_with_the_url() {
    let url = closed_port_url();
    let started = Instant::now();
    let out = ratekeeper()
        .args(["pace", "--rate", "100", "--count", "5", "--redis", &url])
        .args(["--key", "k", "--on-redis-failure", "closed"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("error: --redis {url}: cannot use the server")),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());
    // Connection refused: no waiting for the connect timeout.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// `pace --json` with `args`, on the shared limit: its report.
fn pace_json(args: &[&str]) -> Value {
    let out = ratekeeper()
        .arg("pace")
        .args(args)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .clone();
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[test]
fn pace_reports_decisions_by_source_and_round_trips() {
    let Some(url) = redis_url() else { return };
    let key = key("pace");
    let r = pace_json(&[
        "--rate", "500", "--count", "50", "--redis", &url, "--key", &key,
    ]);
    assert_eq!(r["ops"], 50);
    let redis = &r["redis"];
    assert_eq!(redis["key"], key.as_str());
    // The default policy: local, at the share learned from the key (none
    // yet after 0.1 s: null).
    assert_eq!(redis["failure_policy"], "local");
    assert_eq!(redis.get("learned_share"), Some(&Value::Null), "{redis}");
    assert_eq!(redis.get("local_share"), None, "{redis}");
    assert_eq!(
        redis["idle_ttl_ns"], 1_000_000_000u64,
        "the default: {redis}"
    );
    assert_eq!(redis["decisions"]["redis"], 50, "{redis}");
    for other in ["cache", "lease", "fail_open", "fail_closed", "local"] {
        assert_eq!(redis["decisions"][other], 0, "{other}: {redis}");
    }
    assert_eq!(redis["permits"], 50);
    assert_eq!(redis["round_trips"], 50);
    assert_eq!(redis["round_trips_per_permit"], 1.0);
    assert_eq!(redis["failures"], 0);
    assert_eq!(r["below_target"], Value::Null);
    // The text report says the same.
    let out = ratekeeper()
        .args(["pace", "--rate", "500", "--count", "10", "--redis", &url])
        .args([
            "--key",
            &format!("{key}:text"),
            "--on-redis-failure",
            "local",
        ])
        .args(["--redis-share", "1/4"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(on failure: local at 0.25 of the rate;"),
        "{text}"
    );
    assert!(text.contains("decisions       10 redis, 0 cache"), "{text}");
    assert!(
        text.contains("round trips     10 (1.000 per permit, 10 permits)"),
        "{text}"
    );
}

#[test]
fn exec_and_pipe_run_on_the_shared_limit() {
    let Some(url) = redis_url() else { return };
    let out = ratekeeper()
        .args([
            "exec",
            "--rate",
            "100",
            "-n",
            "5",
            "--discard-stdout",
            "--json",
        ])
        .args(["--redis", &url, "--key", &key("exec"), "--", "true"])
        .assert()
        .success()
        .get_output()
        .clone();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["redis"]["decisions"]["redis"], 5, "{r}");
    let out = ratekeeper()
        .args(["pipe", "--rate", "1000", "--json"])
        .args(["--redis", &url, "--key", &key("pipe")])
        .write_stdin("a\nb\nc\n")
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(out.stdout, b"a\nb\nc\n");
    let r: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(r["redis"]["permits"], 3, "{r}");
    assert_eq!(r["redis"]["round_trips"], 3, "{r}");
    // --bytes: a permit per byte, a round trip per chunk.
    let out = ratekeeper()
        .args(["pipe", "--bytes", "--rate", "1MiB", "--json"])
        .args(["--redis", &url, "--key", &key("pipe-bytes")])
        .write_stdin(vec![b'x'; 30_000])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(out.stdout.len(), 30_000);
    let r: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(r["redis"]["permits"], 30_000, "{r}");
    assert_eq!(r["redis"]["round_trips"], r["writes"], "{r}");
}

#[test]
fn two_processes_on_one_key_share_the_rate() {
    let Some(url) = redis_url() else { return };
    let key = key("two");
    let spawn = || {
        ratekeeper_std()
            .args(["pace", "--rate", "200", "--duration", "2s", "--json"])
            .args(["--redis", &url, "--key", &key])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let ops: Vec<f64> = [a, b]
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success());
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            r["ops"].as_f64().unwrap()
        })
        .collect();
    let total = (ops[0] + ops[1]) / 2.0;
    // 200/s in all over 2 s (with start skew and a loaded machine: generous
    // bounds); each alone would run at 200/s, together 400/s.
    assert!(
        (150.0..=250.0).contains(&total),
        "{ops:?}: {total}/s in all"
    );
    assert!(ops.iter().all(|&n| n > 40.0), "both took a share: {ops:?}");
}

#[test]
fn leases_cut_round_trips_and_zero_turns_them_off() {
    let Some(url) = redis_url() else { return };
    // 100 000/s: a 1 ms lease (the default) holds up to 100 slots.
    let leased = pace_json(&[
        "--rate",
        "100k",
        "--count",
        "5000",
        "--redis",
        &url,
        "--key",
        &key("lease"),
    ]);
    let redis = &leased["redis"];
    assert_eq!(leased["ops"], 5000);
    assert_eq!(redis["lease_ns"], 1_000_000, "{redis}");
    assert!(
        redis["decisions"]["lease"].as_u64().unwrap() > 2500,
        "{redis}"
    );
    assert!(
        redis["round_trips_per_permit"].as_f64().unwrap() < 0.5,
        "{redis}"
    );
    let exact = pace_json(&[
        "--rate",
        "100k",
        "--count",
        "500",
        "--redis",
        &url,
        "--key",
        &key("no-lease"),
        "--redis-lease",
        "0",
    ]);
    let redis = &exact["redis"];
    assert_eq!(redis["lease_ns"], Value::Null, "{redis}");
    assert_eq!(redis["decisions"]["redis"], 500, "{redis}");
    assert_eq!(redis["round_trips_per_permit"], 1.0);
}
