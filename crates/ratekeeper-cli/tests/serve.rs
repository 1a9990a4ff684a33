//! `ratekeeper serve` as a real process: start-up errors, answers over HTTP
//! to curl, reloads on SIGHUP and on a file change (a raised quota admits
//! at once, a bad file leaves the old config in force), and SIGTERM
//! answering a held request before exit status 0; two replicas sharing
//! their limits on Redis (needs `REDIS_URL`: scripts/with-redis.sh).
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

const LIMITS: &str = "\
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: job
    algorithm: pacer
    max_wait: 2s
    rate_limit: {unit: second, requests_per_unit: 1}
";

struct Serve {
    child: Child,
    http: String,
    lines: mpsc::Receiver<String>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(config: &Path, extra: &[&str]) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
        .args([
            "serve",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(config)
        .args(extra)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratekeeper serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut serve = Serve {
        child,
        http: String::new(),
        lines,
    };
    let line = serve.wait_for("serving");
    let http = line
        .split("http=")
        .nth(1)
        .expect("the http address is logged");
    serve.http = http.split_whitespace().next().unwrap().to_owned();
    serve
}

impl Serve {
    /// The first stderr line containing `text`, within 20 s.
    fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(e) => panic!("no line with {text:?} on stderr: {e}"),
            }
        }
    }

    fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// curl's status code and body for a POST of `body` to `path`.
    fn post(&self, path: &str, body: &str) -> (u16, Value) {
        let out = Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", "-d", body])
            .arg(format!("http://{}{path}", self.http))
            .output()
            .expect("curl runs");
        let text = String::from_utf8(out.stdout).unwrap();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (
            code.parse().unwrap(),
            serde_json::from_str(body).unwrap_or(Value::Null),
        )
    }

    fn user(&self, name: &str) -> u16 {
        let body = format!(r#"{{"domain":"api","key":"user","value":"{name}"}}"#);
        self.post("/v1/check", &body).0
    }

    fn metrics(&self) -> String {
        let out = Command::new("curl")
            .args(["-s", &format!("http://{}/metrics", self.http)])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }
}

fn config_file(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.path().join("limits.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_bad_config_stops_the_start_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(&dir, "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: minutes, requests_per_unit: 2}\n");
    let out = Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
        .args([
            "serve",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("limits.yaml:4:"), "{err}");
    assert!(err.contains("minutes"), "{err}");
}

#[test]
fn an_unreachable_redis_or_a_busy_address_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(&dir, LIMITS);
    let start = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
            .args(["serve", "--config"])
            .arg(&path)
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let redis = format!("redis://127.0.0.1:{port}/");
    let (code, err) = start(&[
        "--grpc",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--redis",
        &redis,
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("cannot connect to Redis"), "{err}");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let (code, err) = start(&["--grpc", &addr, "--http", "127.0.0.1:0"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("cannot listen for gRPC on {addr}")),
        "{err}"
    );
    assert_eq!(err.matches("in use").count(), 1, "said once: {err}");
}

#[test]
fn sighup_reloads_a_raised_quota_at_once_and_keeps_the_old_on_a_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(&dir, LIMITS);
    let mut serve = spawn(&path, &["--watch", "off"]);
    assert_eq!(
        [serve.user("a"), serve.user("a"), serve.user("a")],
        [200, 200, 429]
    );
    std::fs::write(
        &path,
        LIMITS.replace("requests_per_unit: 2}", "requests_per_unit: 5}"),
    )
    .unwrap();
    serve.signal("HUP");
    serve.wait_for("config reloaded");
    assert_eq!(serve.user("a"), 200, "the raised quota admits at once");
    std::fs::write(&path, "domain: api\ndescriptors: [").unwrap();
    serve.signal("HUP");
    serve.wait_for("reload refused");
    let (code, _) = serve.post("/v1/check", r#"{"domain":"api","key":"user","value":"b"}"#);
    assert_eq!(code, 200, "the config in force stays");
    let metrics = serve.metrics();
    assert!(
        metrics.contains(r#"ratekeeper_reloads_total{result="ok"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"ratekeeper_reloads_total{result="error"} 1"#),
        "{metrics}"
    );
}

#[test]
fn a_changed_file_is_reloaded_without_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(&dir, LIMITS);
    let mut serve = spawn(&path, &["--watch", "100ms"]);
    assert_eq!(
        [serve.user("a"), serve.user("a"), serve.user("a")],
        [200, 200, 429]
    );
    std::fs::write(&path, LIMITS.replace("key: user", "key: account")).unwrap();
    serve.wait_for("config reloaded");
    let (code, body) = serve.post("/v1/check", r#"{"domain":"api","key":"user","value":"a"}"#);
    assert_eq!(
        (code, &body["statuses"][0]["limit"]),
        (200, &Value::Null),
        "{body}"
    );
}

#[test]
fn sigterm_answers_the_request_held_then_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(&dir, LIMITS);
    let mut serve = spawn(&path, &["--watch", "off"]);
    let job = r#"{"domain":"api","descriptors":[{"entries":[{"key":"job","value":"j"}]}]}"#;
    assert_eq!(serve.post("/json", job).0, 200);
    // The next slot is 1 s away: /json holds the call until then.
    let http = serve.http.clone();
    let held = std::thread::spawn(move || {
        let started = Instant::now();
        let out = Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", "-d", job])
            .arg(format!("http://{http}/json"))
            .output()
            .unwrap();
        (String::from_utf8(out.stdout).unwrap(), started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    serve.signal("TERM");
    serve.wait_for("shutting down");
    let (answer, took) = held.join().unwrap();
    assert!(answer.ends_with("\n200"), "{answer}");
    assert!(answer.contains(r#""overallCode":"OK""#), "{answer}");
    assert!(took >= Duration::from_millis(600), "{took:?}");
    let status = serve.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn two_replicas_on_one_redis_never_admit_more_than_burst_plus_rate_times_t() {
    let url = match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => url,
        _ if std::env::var_os("CI").is_some() => panic!("REDIS_URL is not set under CI"),
        _ => return common::skipped("no REDIS_URL (run through scripts/with-redis.sh)"),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(
        &dir,
        "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 10}\n",
    );
    let extra = ["--watch", "off", "--redis", url.as_str()];
    let replicas = [spawn(&path, &extra), spawn(&path, &extra)];
    // A value no other run shares (the keys live on a shared server).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let body = format!(
        r#"{{"domain":"api","key":"user","value":"{}-{nanos}"}}"#,
        std::process::id()
    );
    let started = Instant::now();
    let mut admitted = Vec::new();
    let mut asked = 0;
    while started.elapsed() < Duration::from_millis(2_000) {
        let replica = &replicas[asked % 2];
        asked += 1;
        let sent = started.elapsed();
        let (code, answer) = replica.post("/v1/check", &body);
        assert!(code == 200 || code == 429, "{code} {answer}");
        if code == 200 {
            admitted.push((sent, started.elapsed()));
        }
    }
    // Each grant was decided between its request's sending and its answer.
    // In any span from one request's sending to another's answer, the
    // grants surely decided inside it are at most the burst (10) plus 10 a
    // second, plus one for the server's clock running between readings.
    for &(start, _) in &admitted {
        for &(_, end) in admitted.iter().filter(|&&(_, end)| end >= start) {
            let inside = admitted
                .iter()
                .filter(|&&(s, e)| s >= start && e <= end)
                .count();
            let span = (end - start).as_secs_f64();
            assert!(inside as f64 <= 11.0 + 10.0 * span, "{inside} in {span} s");
        }
    }
    assert!(
        admitted.len() > 10,
        "{} admitted of {asked}",
        admitted.len()
    );
    assert!(asked > admitted.len(), "some refused: {asked}");
}
