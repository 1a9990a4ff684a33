//! `--redis` runs against a redis-server of the test's own that the test
//! stops (SIGSTOP), kills or misconfigures: signals during a stalled
//! decision, the failure policies' reports, a key's old schedule, a
//! misconfigured key, and passwords kept out of every output.

mod common;

use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::server::OwnServer;
use common::{ratekeeper_std, wait_with_limit, Watchdog};
use serde_json::Value;

/// A key no other test run uses.
fn key(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("rk-cli-fail:{name}:{}:{nanos}", std::process::id())
}

/// `ratekeeper` with `args`, its stdout and stderr piped.
fn spawn(args: &[&str]) -> Child {
    ratekeeper_std()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ratekeeper")
}

/// Waits up to `limit` for `child`: its exit status, or `None` if it is
/// still running (it is left running).
fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if t.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The child's stdout and stderr, once it has exited (or been killed).
fn outputs(child: Child) -> (String, String) {
    let out = child.wait_with_output().expect("output");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Feeds `child`'s standard input a line every millisecond until it is
/// closed (for `pipe`).
fn feed(child: &mut Child) {
    use std::io::Write;
    let mut stdin = child.stdin.take().expect("piped stdin");
    std::thread::spawn(move || {
        while stdin.write_all(b"line\n").is_ok() {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Sends `signal` ("INT", "TERM") to `child`.
fn send(child: &Child, signal: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// The report of `pace` or `exec` (stdout) or `pipe` (the last line of
/// stderr) with `--json`.
fn json_report(args: &[&str], stdout: &str, stderr: &str) -> Value {
    let text = if args[0] == "pipe" {
        stderr.lines().last().unwrap_or_default()
    } else {
        stdout
    };
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: no JSON report in {text}"))
}

/// Starts `cmd` (pace, exec or pipe) with the `shared` flags on a key of
/// its own under `key` (the commands' limits differ), its input fed (pipe)
/// or closed, under a watchdog.
fn start_on_key(cmd: &[&str], shared: &[&str], key: &str) -> (Child, Watchdog) {
    let key = format!("{key}:{}", cmd[0]);
    let mut args = [cmd, shared].concat();
    args.extend(["--key", &key]);
    if cmd[0] == "exec" {
        args.extend(["--", "true"]);
    }
    let mut child = ratekeeper_std()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let watchdog = Watchdog::new(&child, Duration::from_secs(40));
    if cmd[0] == "pipe" {
        feed(&mut child);
    } else {
        drop(child.stdin.take());
    }
    (child, watchdog)
}

#[test]
fn a_signal_ends_a_run_whose_decision_is_stalled() {
    let Some(server) = OwnServer::start("stall-signal") else {
        return;
    };
    let url = server.url();
    let key = key("stall-signal");
    let shared = ["--redis", &url, "--redis-deadline", "30s", "--json"];
    let pace = ["pace", "--rate", "1000", "--duration", "6s"];
    let exec = [
        "exec",
        "--rate",
        "100",
        "--duration",
        "6s",
        "--discard-stdout",
    ];
    let pipe = ["pipe", "--rate", "1000"];
    for (cmd, signal, status) in [
        (&pace[..], "INT", 130),
        (&pace[..], "TERM", 143),
        (&exec[..], "INT", 130),
        (&pipe[..], "INT", 130),
    ] {
        let (mut child, _watchdog) = start_on_key(cmd, &shared, &key);
        std::thread::sleep(Duration::from_millis(800));
        server.signal("STOP");
        std::thread::sleep(Duration::from_millis(700));
        let signalled = Instant::now();
        send(&child, signal);
        let ended = exit_within(&mut child, Duration::from_secs(3));
        server.signal("CONT");
        let exit = ended.unwrap_or_else(|| wait_with_limit(&mut child, Duration::from_secs(35)));
        let took = signalled.elapsed();
        let (stdout, stderr) = outputs(child);
        assert!(
            ended.is_some(),
            "{cmd:?}: SIG{signal} during a stalled decision did not end the run within 3 s: it \
             ended after the server resumed, {took:?} after the signal, with {exit}\n{stdout}\n\
             {stderr}"
        );
        assert_eq!(exit.code(), Some(status), "{cmd:?} SIG{signal}: {stderr}");
        let report = json_report(cmd, &stdout, &stderr);
        assert_eq!(report["interrupted"], true, "{cmd:?}: {report}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_stalled_run_ends_within_its_duration_and_the_deadline() {
    let Some(server) = OwnServer::start("stall-bound") else {
        return;
    };
    let url = server.url();
    let key = key("stall-bound");
    let started = Instant::now();
    let mut child = spawn(&[
        "pace",
        "--rate",
        "1000",
        "--duration",
        "2s",
        "--redis",
        &url,
        "--key",
        &key,
        "--redis-deadline",
        "3s",
        "--json",
    ]);
    let _watchdog = Watchdog::new(&child, Duration::from_secs(40));
    std::thread::sleep(Duration::from_millis(500));
    server.signal("STOP");
    // --duration 2s and a 3 s deadline: 5 s at most, with slack for a
    // loaded machine (far below the stall, which lasts until the end).
    let ended = exit_within(&mut child, Duration::from_secs(8));
    let took = started.elapsed();
    server.signal("CONT");
    let exit = ended.unwrap_or_else(|| wait_with_limit(&mut child, Duration::from_secs(35)));
    let (stdout, stderr) = outputs(child);
    assert!(
        ended.is_some(),
        "a stalled run outlived --duration 2s and --redis-deadline 3s: {exit} after the \
         server resumed\n{stdout}\n{stderr}"
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_closed_policy_failure_ends_the_run_with_its_report_and_status_4() {
    let Some(mut server) = OwnServer::start("closed") else {
        return;
    };
    let url = server.url();
    let key = key("closed");
    let shared = ["--redis", &url, "--on-redis-failure", "closed"];
    let pace = ["pace", "--rate", "200", "--duration", "6s", "--json"];
    let exec = [
        "exec",
        "--rate",
        "50",
        "--duration",
        "6s",
        "--discard-stdout",
    ];
    let pipe = ["pipe", "--rate", "200", "--report"];
    for cmd in [&pace[..], &exec[..], &pipe[..]] {
        let (mut child, _watchdog) = start_on_key(cmd, &shared, &key);
        std::thread::sleep(Duration::from_millis(1000));
        server.kill();
        let killed = Instant::now();
        let exit = wait_with_limit(&mut child, Duration::from_secs(30));
        let took = killed.elapsed();
        let (stdout, stderr) = outputs(child);
        server.restart();
        assert_eq!(exit.code(), Some(4), "{cmd:?}: {exit}\n{stdout}\n{stderr}");
        // At once, not at the end of --duration.
        assert!(took < Duration::from_secs(3), "{cmd:?}: {took:?}");
        let error = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("{cmd:?}: no error line in {stderr}"));
        assert!(error.contains("the shared limit failed"), "{error}");
        assert!(error.contains("--on-redis-failure closed"), "{error}");
        stopped_with_its_report(cmd[0], &error[7..], &stdout, &stderr);
    }
}

/// Asserts that `command`'s run, stopped by the shared limit for `why`,
/// printed its report with what ran before the failure.
fn stopped_with_its_report(command: &str, why: &str, stdout: &str, stderr: &str) {
    // The report, with what ran before the failure.
    match command {
        "pace" => {
            let r: Value = serde_json::from_str(stdout).expect("the JSON report");
            let ops = r["ops"].as_u64().unwrap();
            assert!((50..=400).contains(&ops), "{r}");
            assert_eq!(r["redis"]["stopped"].as_str(), Some(why), "{r}");
            assert!(
                r["redis"]["decisions"]["fail_closed"].as_u64() >= Some(1),
                "{r}"
            );
            assert_eq!(r["interrupted"], false, "{r}");
        }
        "exec" => {
            assert!(
                stdout.contains("stopped         the shared limit failed"),
                "{stdout}"
            );
            assert!(stdout.contains("runs "), "{stdout}");
        }
        _ => {
            assert!(
                stderr.contains("stopped         the shared limit failed"),
                "{stderr}"
            );
            assert!(
                stdout.lines().count() >= 50,
                "{} lines",
                stdout.lines().count()
            );
        }
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Runs `ratekeeper` with `args` to its end: the exit code, and stdout and
/// stderr together.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let mut child = spawn(args);
    let _watchdog = Watchdog::new(&child, Duration::from_secs(30));
    let exit = wait_with_limit(&mut child, Duration::from_secs(30));
    let (stdout, stderr) = outputs(child);
    (exit.code(), format!("{stdout}{stderr}"))
}

/// Asserts that `out` holds none of `secrets`.
fn keeps_secrets(what: &str, out: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !out.contains(s),
            "{what}: the password {s:?} is shown:\n{out}"
        );
    }
}

#[test]
fn passwords_are_never_shown() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let secrets = ["TopSecretPW", "Top%21Secret", "Top!Secret"];
    // No server on the port: connection refused.
    for url in [
        format!("redis://:TopSecretPW@127.0.0.1:{port}/"),
        format!("redis://user:Top%21Secret@127.0.0.1:{port}/"),
    ] {
        let (code, out) = run(&[
            "pace", "--rate", "100", "--count", "3", "--redis", &url, "--key", "k",
        ]);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("cannot use the server"), "{out}");
        keeps_secrets("no server", &out, &secrets);
    }
    // A URL that does not parse.
    let (code, out) = run(&[
        "pace",
        "--rate",
        "100",
        "--count",
        "3",
        "--redis",
        "redis://:TopSecretPW@127.0.0.1:notaport/",
        "--key",
        "k",
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--redis <URL>"), "{out}");
    keeps_secrets("a URL that does not parse", &out, &secrets);
    // A server that asks for another password.
    let Some(server) = OwnServer::start_with("password", Some("RightPW")) else {
        return;
    };
    let wrong = format!("redis://:TopSecretPW@127.0.0.1:{}/", server.port);
    for cmd in [&["pace", "--count", "3"][..], &["exec", "-n", "1"][..]] {
        let mut args = [cmd, &["--rate", "100", "--redis", &wrong, "--key", "k"][..]].concat();
        if cmd[0] == "exec" {
            args.extend(["--", "true"]);
        }
        let (code, out) = run(&args);
        assert_eq!(code, Some(1), "{out}");
        keeps_secrets("a wrong password", &out, &secrets);
    }
    // The right one: the run's text and JSON reports hide it.
    let right = format!("redis://:RightPW@127.0.0.1:{}/", server.port);
    for json in [false, true] {
        let mut args = vec!["pace", "--rate", "100", "--count", "3", "--redis", &right];
        args.extend(["--key", "k"]);
        if json {
            args.push("--json");
        }
        let (code, out) = run(&args);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains(":***@127.0.0.1"), "{out}");
        keeps_secrets("the report", &out, &["RightPW"]);
    }
}

#[test]
fn a_key_idle_longer_than_its_idle_ttl_starts_afresh() {
    let Some(server) = OwnServer::start("idle") else {
        return;
    };
    let url = server.url();
    // --redis-idle-ttl 500ms, then the default (1s).
    for (ttl, ttl_ns, gap_ms) in [
        (Some("500ms"), 500_000_000u64, 1500),
        (None, 1_000_000_000, 2000),
    ] {
        let key = key("idle");
        let pace = || {
            // 100/s: a round trip an op keeps up even on a loaded machine.
            let mut args = vec!["pace", "--rate", "100", "--duration", "1s", "--redis", &url];
            args.extend(["--key", &key, "--json"]);
            if let Some(ttl) = ttl {
                args.extend(["--redis-idle-ttl", ttl]);
            }
            let mut child = spawn(&args);
            let _watchdog = Watchdog::new(&child, Duration::from_secs(30));
            let exit = wait_with_limit(&mut child, Duration::from_secs(30));
            let (stdout, stderr) = outputs(child);
            assert!(exit.success(), "{exit}: {stderr}");
            serde_json::from_str::<Value>(&stdout).expect("the JSON report")
        };
        let first = pace();
        assert_eq!(first["redis"]["idle_ttl_ns"], ttl_ns, "{first}");
        std::thread::sleep(Duration::from_millis(gap_ms));
        let second = pace();
        // A fresh schedule: no op is measured late against an old one
        // (the key's old schedule made every op late by about the gap).
        let wait = &second["wait_ns"];
        assert!(
            wait["p50"].as_u64().unwrap() < 50_000_000,
            "{ttl:?}: {second}"
        );
        assert!(
            wait["max"].as_u64().unwrap() < 500_000_000,
            "{ttl:?}: {second}"
        );
        let ops = second["ops"].as_u64().unwrap();
        assert!((70..=102).contains(&ops), "{ttl:?}: {second}");
    }
}

#[test]
fn processes_joining_a_key_in_use_share_it() {
    let Some(server) = OwnServer::start("join") else {
        return;
    };
    let url = server.url();
    let key = key("join");
    // Idle TTL 0: the key is dropped as soon as it has caught up, which a
    // key in use never has.
    let children: Vec<Child> = (0..3)
        .map(|_| {
            let c = spawn(&[
                "pace",
                "--rate",
                "300",
                "--duration",
                "2s",
                "--redis",
                &url,
                "--key",
                &key,
                "--redis-idle-ttl",
                "0",
                "--json",
            ]);
            std::thread::sleep(Duration::from_millis(5));
            c
        })
        .collect();
    let ops: Vec<u64> = children
        .into_iter()
        .map(|mut c| {
            let _watchdog = Watchdog::new(&c, Duration::from_secs(30));
            let exit = wait_with_limit(&mut c, Duration::from_secs(30));
            let (stdout, stderr) = outputs(c);
            assert!(exit.success(), "{exit}: {stderr}");
            let r: Value = serde_json::from_str(&stdout).expect("JSON");
            r["ops"].as_u64().unwrap()
        })
        .collect();
    let total: u64 = ops.iter().sum();
    // 300/s in all for 2 s (each alone would take 600).
    assert!((450..=800).contains(&total), "{ops:?}");
    assert!(ops.iter().all(|&n| n > 60), "each took a share: {ops:?}");
}

/// `pace --json` with `args` on `server`, which is killed (SIGKILL) after
/// `kill_after`: the exit code, the report and stderr.
fn pace_killed(
    server: &mut OwnServer,
    args: &[&str],
    kill_after: Duration,
) -> (i32, Value, String) {
    let mut child = spawn(&[&["pace", "--json"][..], args].concat());
    let _watchdog = Watchdog::new(&child, Duration::from_secs(30));
    std::thread::sleep(kill_after);
    server.kill();
    let exit = wait_with_limit(&mut child, Duration::from_secs(30));
    let (stdout, stderr) = outputs(child);
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: no JSON report: {stdout}\n{stderr}"));
    (exit.code().unwrap_or(-1), report, stderr)
}

#[test]
fn a_local_fallback_keeps_the_rate_and_the_report_adds_up() {
    let Some(mut server) = OwnServer::start("local") else {
        return;
    };
    let url = server.url();
    // The default policy (the share learned from the key: this process's
    // grants, the whole rate), then half the rate by --redis-share.
    for (share, local_ops) in [(None, 17..=22), (Some("1/2"), 8..=12)] {
        let key = key("local");
        let mut args = vec![
            "--rate",
            "10",
            "--duration",
            "4s",
            "--redis",
            &url,
            "--key",
            &key,
        ];
        if let Some(s) = share {
            args.extend(["--redis-share", s]);
        }
        let (code, r, stderr) = pace_killed(&mut server, &args, Duration::from_secs(2));
        server.restart();
        assert_eq!(code, 0, "{stderr}");
        let redis = &r["redis"];
        assert_eq!(redis["failure_policy"], "local", "{redis}");
        let local = redis["decisions"]["local"].as_u64().unwrap();
        assert!(local_ops.contains(&local), "{share:?}: {local} local: {r}");
        // Figures that add up: no more than the rate, no op measured late
        // against a schedule the fallback kept from the start.
        let (ops, rate) = (
            r["ops"].as_u64().unwrap(),
            r["achieved_rate"].as_f64().unwrap(),
        );
        assert!(
            rate <= 10.3 && ops <= 41,
            "{share:?}: {ops} ops at {rate}/s: {r}"
        );
        assert!(r["wait_ns"]["max"].as_u64().unwrap() < 300_000_000, "{r}");
        assert!(
            r["behind_ns"].as_u64().unwrap() < 300_000_000 || share.is_some(),
            "{r}"
        );
        // One warning for the one failure, saying what decides.
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("Redis failed"))
            .collect();
        assert_eq!(warnings.len(), 1, "{stderr}");
        let expected = if share.is_some() {
            "at 0.5 of the rate"
        } else {
            "deciding locally at"
        };
        assert!(
            warnings[0].starts_with("warning: ") && warnings[0].contains(expected),
            "{stderr}"
        );
    }
}

#[test]
fn a_key_that_keeps_something_else_stops_the_run_before_any_op() {
    let Some(server) = OwnServer::start("misconfigured") else {
        return;
    };
    let url = server.url();
    let other = key("other-type");
    assert!(server.cli(&["SET", &other, "hello"]).is_some());
    let pace = |key: &str, rate: &str, more: &[&str]| {
        let mut args = vec![
            "pace", "--rate", rate, "--count", "5", "--redis", &url, "--key", key,
        ];
        args.extend_from_slice(more);
        args.push("--json");
        let mut child = spawn(&args);
        let _watchdog = Watchdog::new(&child, Duration::from_secs(30));
        let exit = wait_with_limit(&mut child, Duration::from_secs(30));
        let (stdout, stderr) = outputs(child);
        let r: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{e}: no JSON report: {stdout}\n{stderr}"));
        (exit.code(), r, stderr)
    };
    for policy in ["local", "open", "closed"] {
        let (code, r, stderr) = pace(&other, "100", &["--on-redis-failure", policy]);
        assert_eq!(code, Some(4), "{policy}: {stderr}");
        assert_eq!(r["ops"], 0, "{policy}: nothing admitted: {r}");
        assert_eq!(r["redis"]["permits"], 0, "{r}");
        let error = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_default();
        assert!(
            error.contains(&other) && error.contains("another type"),
            "{stderr}"
        );
    }
    assert_eq!(server.cli(&["GET", &other]).as_deref(), Some("hello\n"));
    // A key that keeps another limit: refused, named, unless adopted.
    let key = key("other-limit");
    let (code, r, stderr) = pace(&key, "100", &[]);
    assert_eq!((code, &r["ops"]), (Some(0), &Value::from(5)), "{stderr}");
    let (code, r, stderr) = pace(&key, "200", &[]);
    assert_eq!(code, Some(4), "{stderr}");
    assert_eq!(r["ops"], 0, "{r}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    assert!(
        error.contains(&key) && error.contains("not this limiter's"),
        "{stderr}"
    );
    let (code, r, stderr) = pace(&key, "200", &["--redis-adopt"]);
    assert_eq!((code, &r["ops"]), (Some(0), &Value::from(5)), "{stderr}");
}
