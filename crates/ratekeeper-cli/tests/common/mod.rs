//! Helpers shared by the CLI's integration tests.
#![allow(dead_code)] // each test binary uses its own share of them

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub mod server;

use assert_cmd::Command;
use serde_json::Value;

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

/// How long a test's `ratekeeper` process may run before it is killed and
/// the test fails as hung: far beyond any run here (the longest take a few
/// seconds), generous for a loaded machine.
pub const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// `ratekeeper` as an `assert_cmd` command, killed (and the test failed)
/// after [`PROCESS_LIMIT`] unless the test sets its own `.timeout(..)`.
pub fn ratekeeper() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratekeeper"));
    cmd.timeout(PROCESS_LIMIT);
    cmd
}

/// `ratekeeper` as a plain `std` command, for tests that drive the child.
pub fn ratekeeper_std() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_ratekeeper"))
}

/// A fresh path in this test binary's scratch folder.
pub fn scratch(dir: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// Bad input exits 2 with a message naming what was wrong, never a panic.
pub fn rejects(args: &[&str], expected: &[&str]) {
    let out = ratekeeper()
        .args(args)
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.stdout.is_empty(), "{args:?}: stdout not empty");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(!stderr.contains("RUST_BACKTRACE"), "{args:?}: {stderr}");
    for e in expected {
        assert!(stderr.contains(e), "{args:?}: {e:?} not in {stderr}");
    }
}

pub fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an integer in {v}"))
}

pub fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Parses one line of JSON.
pub fn json(text: &str) -> Value {
    assert_eq!(text.lines().count(), 1, "one line of JSON: {text}");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Parses a duration the text reports print (`fmt_nanos`: 3 significant
/// digits and a unit) into nanoseconds.
pub fn text_nanos(s: &str) -> f64 {
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

/// The words after `label` on the first line of `text` that starts with it.
pub fn fields(text: &str, label: &str) -> Vec<String> {
    text.lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{text}"))[label.len()..]
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Waits until `cond` holds, up to `limit`.
pub fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The lines of `path` so far (none if it does not exist yet).
pub fn lines_of(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// Sends SIGINT to `child`, as Ctrl-C would (to it alone).
#[cfg(unix)]
pub fn interrupt(child: &Child) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -INT: {status}");
}

/// Waits for `child` to exit, up to `limit`; kills it and fails otherwise.
pub fn wait_with_limit(child: &mut Child, limit: Duration) -> ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills a spawned child that is still running after a limit, so that a
/// test blocked on it (reading its pipes, waiting for it) gets end-of-file
/// or its exit status and fails instead of hanging. Disarmed when dropped:
/// keep it alive until the child has been waited for (the child's pid
/// cannot be reused before that).
pub struct Watchdog {
    disarm: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Arms a watchdog for `child`, killing it after `limit`.
    pub fn new(child: &Child, limit: Duration) -> Watchdog {
        let pid = child.id();
        let (disarm, armed) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = armed.recv_timeout(limit) {
                eprintln!("child {pid} still running after {limit:?}: killing it (hung)");
                kill(pid);
            }
        });
        Watchdog {
            disarm: Some(disarm),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.disarm.take()); // the watchdog sees the channel close
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(unix)]
fn kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

#[cfg(not(unix))]
fn kill(pid: u32) {
    let _ = std::process::Command::new("taskkill")
        .args(["/F", "/PID", &pid.to_string()])
        .status();
}

/// The texts of an SVG's `<text>` elements (the SVG must be well-formed).
pub fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_owned())
        .collect()
}

/// The stroke colours (`#RRGGBB`) of an SVG's polylines.
pub fn svg_line_colors(svg: &str) -> BTreeSet<String> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("stroke"))
        .map(str::to_ascii_uppercase)
        .collect()
}

/// A PNG's size and the colours of its pixels (8-bit RGB or RGBA).
pub fn png_pixels(bytes: &[u8]) -> ((u32, u32), BTreeSet<String>) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut reader = png::Decoder::new(bytes).read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG image data");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected colour type {other:?}"),
    };
    let colors = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| format!("#{:02X}{:02X}{:02X}", p[0], p[1], p[2]))
        .collect();
    ((info.width, info.height), colors)
}
