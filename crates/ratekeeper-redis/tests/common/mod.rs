//! Shared by the tests that need a Redis server: the one named by
//! `REDIS_URL` (scripts/with-redis.sh starts one), or a server of the
//! test's own, started from `redis-server` on a free loopback port, for
//! tests that stop, kill or restart it.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server of `REDIS_URL`, or `None` (the test is skipped, reported by
/// [`skipped`]) where there is none. Under CI (`CI` set) a missing server
/// fails the test, so that the Redis tests cannot silently stop running.
pub fn redis_url() -> Option<String> {
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("REDIS_URL is not set under CI: run the tests through scripts/with-redis.sh")
        }
        _ => {
            skipped("no REDIS_URL (run through scripts/with-redis.sh)");
            None
        }
    }
}

/// Reports that the running test skips, for `why`, where the skip cannot
/// pass for a success: a line on the process's stderr written past the
/// test harness's capture (which takes only `print!`/`eprint!`), so that
/// `cargo test` shows it next to the test's "ok" whether the test passes
/// or not; and, where `RATEKEEPER_SKIP_LOG` names a file (scripts/
/// test-all.sh sets it), the same line appended there, for the summary
/// the script prints at its end.
pub fn skipped(why: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let line = format!(
        "skipped: {} --test {} {}: {why}\n",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_CRATE_NAME"),
        thread.name().unwrap_or("?")
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("RATEKEEPER_SKIP_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        // One write per line, so that test binaries running at once do not
        // interleave within a line.
        let _ = file.and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// A unique key for one test run.
pub fn key(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("rk-test:{name}:{}:{nanos}", std::process::id())
}

/// A runtime for a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A redis-server of the test's own, stopped (SIGKILL) when dropped.
pub struct OwnServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// Options given to redis-server beside the port and persistence.
    extra: Vec<String>,
}

impl OwnServer {
    /// Starts one on a free port, or `None` where redis-server is not
    /// installed (skipped; a failure under CI).
    pub fn start(name: &str) -> Option<OwnServer> {
        OwnServer::start_with(name, &[])
    }

    /// [`start`](Self::start) with more redis-server options, e.g.
    /// `["--requirepass", "pw"]` (redis-cli then needs `-a pw`: see
    /// [`answers`](Self::answers)).
    pub fn start_with(name: &str, extra: &[&str]) -> Option<OwnServer> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            if std::env::var_os("CI").is_some() {
                panic!("redis-server is not installed under CI");
            }
            skipped("redis-server is not installed");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("rk-redis-{name}-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = OwnServer {
            port,
            dir,
            child: None,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        server.restart();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Starts the server (again) on the same port, and waits until it
    /// answers.
    pub fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let start = Instant::now();
        while !self.answers() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether `redis-cli ping` gets PONG.
    pub fn answers(&self) -> bool {
        self.cli(&["ping"]).is_some_and(|o| o.trim() == "PONG")
    }

    /// Runs redis-cli with `args` against the server.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-p", &self.port.to_string()]);
        if let Some(i) = self.extra.iter().position(|a| a == "--requirepass") {
            cmd.args(["--no-auth-warning", "-a", &self.extra[i + 1]]);
        }
        let out = cmd.args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Sends `signal` (e.g. "STOP", "CONT") to the server.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Kills the server (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A stopped server must run again to die of SIGKILL? No: SIGKILL
            // ends a stopped process too. CONT anyway, for tidiness.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
