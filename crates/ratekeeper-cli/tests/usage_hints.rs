//! The common mistakes on the command line each get one line saying what to
//! write instead, and exit status 2, never a panic.

use std::time::Duration;

mod common;
use common::ratekeeper;

/// Runs `ratekeeper ARGS`, expects exit status 2, nothing on stdout and one
/// line on stderr, and returns that line.
fn one_line_refusal(args: &[&str]) -> String {
    let out = ratekeeper()
        .args(args)
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(out.stdout.is_empty(), "{args:?}: stdout not empty");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: not one line:\n{stderr}");
    assert!(lines[0].starts_with("error: "), "{args:?}: {stderr}");
    lines[0].to_owned()
}

fn says(line: &str, words: &[&str]) {
    for w in words {
        assert!(line.contains(w), "{w:?} not in: {line}");
    }
}

#[test]
fn a_pace_only_flag_on_exec_says_it_is_pace_only() {
    let line = one_line_refusal(&["exec", "--batch", "--rate", "5", "--", "true"]);
    says(&line, &["--batch", "pace"]);
    assert!(!line.contains("as a value"), "{line}");
    // The counterpart a user means.
    let line = one_line_refusal(&["exec", "--threads", "4", "--rate", "5", "--", "true"]);
    says(&line, &["--threads", "pace", "--concurrency"]);
    let line = one_line_refusal(&["pace", "--concurrency", "4", "--rate", "5"]);
    says(&line, &["--concurrency", "exec", "--threads"]);
    // A flag of no subcommand keeps clap's own error.
    ratekeeper()
        .args(["exec", "--no-such-flag", "--rate", "5", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "unexpected argument '--no-such-flag'",
        ));
}

#[test]
fn a_command_before_the_dashes_says_to_put_it_after_them() {
    let line = one_line_refusal(&["exec", "--rate", "5", "curl", "-s", "http://127.0.0.1:1/"]);
    says(
        &line,
        &[
            "after --",
            "ratekeeper exec --rate 5 -- curl -s http://127.0.0.1:1/",
        ],
    );
    let line = one_line_refusal(&["exec", "-n", "2", "--rate", "5", "echo", "a b"]);
    says(&line, &["ratekeeper exec -n 2 --rate 5 -- echo 'a b'"]);
}

#[test]
fn a_command_line_in_one_word_says_to_split_it_or_use_sh() {
    let line = one_line_refusal(&["exec", "--rate", "5", "-n", "1", "--", "curl -s http://x/"]);
    says(
        &line,
        &["-- curl -s http://x/", "sh -c 'curl -s http://x/'"],
    );
    let line = one_line_refusal(&["exec", "--rate", "5", "-n", "1", "--", "/bin/echo hi"]);
    says(&line, &["-- /bin/echo hi", "sh -c '/bin/echo hi'"]);
    // A missing command with no spaces keeps its plain message.
    let line = one_line_refusal(&["exec", "--rate", "5", "-n", "1", "--", "no-such-cmd-xyz"]);
    says(&line, &["not found in PATH"]);
    assert!(!line.contains("sh -c"), "{line}");
}

#[test]
fn a_redis_address_without_its_scheme_says_to_write_redis_url() {
    let line = one_line_refusal(&[
        "pace",
        "--rate",
        "5",
        "--count",
        "1",
        "--redis",
        "127.0.0.1:16399",
        "--key",
        "k",
    ]);
    says(&line, &["redis://127.0.0.1:16399"]);
    assert!(!line.contains("InvalidClientConfig"), "{line}");
    // A password never shows, with or without a scheme.
    for url in [
        "app:s3cret@10.0.0.1:6379",
        "http://app:s3cret@10.0.0.1:6379/",
    ] {
        let line = one_line_refusal(&["pipe", "--rate", "5", "--redis", url, "--key", "k"]);
        says(&line, &["redis://app:***@10.0.0.1:6379"]);
        assert!(!line.contains("s3cret"), "{line}");
    }
}

#[test]
fn simulates_limiter_form_on_pace_says_what_flags_to_write() {
    let line = one_line_refusal(&["pace", "--rate", "5", "--limiter", "refill:1000,100ms"]);
    says(
        &line,
        &[
            "simulate",
            "--limiter refill --rate 1000 --refresh-period 100ms",
        ],
    );
    let line = one_line_refusal(&[
        "exec",
        "--rate",
        "5",
        "--limiter",
        "warmup:10,2s,cold_factor=4",
        "--",
        "true",
    ]);
    says(
        &line,
        &["--limiter warmup --rate 10 --warmup 2s --cold-factor 4"],
    );
    let line = one_line_refusal(&["pace", "--rate", "5", "--limiter", "pool:10,1.5,1ms"]);
    says(
        &line,
        &["--limiter pool --rate 10,1.5 --fill thread --fill-interval 1ms"],
    );
    // A kind that is not one keeps clap's list of values.
    ratekeeper()
        .args(["pace", "--rate", "5", "--limiter", "gcra"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("possible values"));
}

#[test]
fn a_byte_rate_on_pipe_says_to_add_bytes() {
    let line = one_line_refusal(&["pipe", "--rate", "1MB"]);
    says(&line, &["--bytes", "pipe --bytes --rate 1MB"]);
    let line = one_line_refusal(&["pipe", "--rate", "512KiB,1.5"]);
    says(&line, &["--bytes"]);
}
