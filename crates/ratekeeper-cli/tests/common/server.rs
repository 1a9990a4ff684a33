//! A redis-server of a test's own, for the tests that stop, kill or
//! misconfigure it (the server of `REDIS_URL` is shared by every test).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server on a free loopback port, killed (SIGKILL, after a
/// SIGCONT in case the test stopped it) when dropped.
pub struct OwnServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// `--requirepass`, if any.
    password: Option<String>,
}

impl OwnServer {
    /// Starts one, or `None` where redis-server is not installed (skipped
    /// with a message; a failure under CI).
    pub fn start(name: &str) -> Option<OwnServer> {
        OwnServer::start_with(name, None)
    }

    /// [`start`](Self::start), asking clients for `password`
    /// (`--requirepass`) if given.
    pub fn start_with(name: &str, password: Option<&str>) -> Option<OwnServer> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            if std::env::var_os("CI").is_some() {
                panic!("redis-server is not installed under CI");
            }
            super::skipped("redis-server is not installed");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("rk-cli-redis-{name}-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = OwnServer {
            port,
            dir,
            child: None,
            password: password.map(str::to_owned),
        };
        server.restart();
        Some(server)
    }

    /// Its URL, without a password.
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
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir);
        if let Some(p) = &self.password {
            cmd.args(["--requirepass", p]);
        }
        let child = cmd
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

    /// Runs redis-cli with `args` against the server; its output, if it
    /// exited 0.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-p", &self.port.to_string()]);
        if let Some(p) = &self.password {
            cmd.args(["--no-auth-warning", "-a", p]);
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
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
