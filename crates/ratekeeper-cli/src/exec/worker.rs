//! `exec`'s workers: each spawns the runs it is handed, one at a time, and
//! waits for them, reading the clock right before the spawn and right after
//! the exit.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use ratekeeper::{Clock, DefaultClock};

use super::slot::{Sent, Slot};

/// Where the runs' standard output goes.
#[derive(Debug)]
pub(super) enum Output {
    Inherit,
    /// ratekeeper's standard error (with --json, whose standard output is
    /// the report's).
    Stderr,
    Discard,
    /// Appended to this file.
    File(File),
    /// Read by ratekeeper for the status each run prints last
    /// (`--status-from-stdout`).
    Status,
}

/// The longest status a run may print, in bytes: a longer last line is
/// no status.
pub(super) const MAX_STATUS: usize = 32;

/// Spawns runs of the command.
#[derive(Debug)]
pub(super) struct Spawner {
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    pub(super) output: Output,
}

impl Spawner {
    pub(super) fn spawn(&self) -> std::io::Result<Child> {
        let stdout = match &self.output {
            Output::Inherit => Stdio::inherit(),
            Output::Stderr => Stdio::from(std::io::stderr()),
            Output::Discard => Stdio::null(),
            Output::File(f) => Stdio::from(f.try_clone()?),
            Output::Status => Stdio::piped(),
        };
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::inherit());
        // Its own process group, where runs can be signalled.
        Slot::prepare(&mut command);
        command.spawn()
    }
}

/// Reads a run's standard output to its end on a thread of its own (so
/// that the worker waits for the run meanwhile, and the run is never
/// blocked on a full pipe), keeping only its tail; the thread returns the
/// status the run printed (see [`status_of`]).
fn read_status(mut out: ChildStdout) -> std::io::Result<JoinHandle<String>> {
    std::thread::Builder::new()
        .name("exec-status".to_owned())
        .spawn(move || {
            let mut tail: Vec<u8> = Vec::new();
            let mut buf = [0u8; 8192];
            // A read error ends the output as an end of file would.
            while let Ok(n @ 1..) = out.read(&mut buf) {
                tail.extend_from_slice(&buf[..n]);
                // Room for the longest status and the whitespace around it.
                let keep = 4 * MAX_STATUS;
                if tail.len() > 2 * keep {
                    tail.drain(..tail.len() - keep);
                }
            }
            status_of(&tail)
        })
}

/// The status at the end of a run's output: its last line (after the last
/// newline, trailing whitespace and newlines ignored), trimmed, as curl
/// `-w '%{http_code}'` prints it after the body; empty (no status) for no
/// output or a last line over [`MAX_STATUS`] bytes.
pub(super) fn status_of(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let text = text.trim_end();
    let last = text.rsplit('\n').next().unwrap_or("").trim();
    if last.len() > MAX_STATUS {
        String::new()
    } else {
        last.to_owned()
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it (Unix).
    Signaled(i32),
    /// It could not be spawned (or waited for): the error.
    SpawnFailed(String),
}

impl Ended {
    pub(super) fn from_status(status: ExitStatus) -> Ended {
        if let Some(code) = status.code() {
            return Ended::Exited(code);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = status.signal() {
                return Ended::Signaled(sig);
            }
        }
        Ended::SpawnFailed(format!("unknown exit status {status}"))
    }
}

/// A run handed to a worker.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    /// The run's number, from 1.
    pub(super) number: u64,
    pub(super) scheduled: u64,
}

/// A run a worker finished.
#[derive(Debug)]
pub(super) struct Finished {
    pub(super) worker: usize,
    pub(super) number: u64,
    pub(super) scheduled: u64,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) ended: Ended,
    /// What the dispatcher sent it to end it (at a stop).
    pub(super) sent: Sent,
    /// With `--status-from-stdout`, the status it printed ("" for none).
    pub(super) status: Option<String>,
}

/// One worker: runs the jobs it is handed, one at a time.
pub(super) fn work(
    worker: usize,
    jobs: Receiver<Job>,
    done: Sender<Finished>,
    spawner: &Spawner,
    clock: &DefaultClock,
    slot: &Slot,
) {
    for job in jobs {
        let start = clock.now_nanos();
        let mut end = start;
        let mut status = None;
        let (ended, sent) = match spawner.spawn() {
            Err(e) => (Ended::SpawnFailed(e.to_string()), Sent::Nothing),
            Ok(mut child) => {
                let reader = child.stdout.take().map(read_status).transpose();
                let waited = slot.wait(&mut child, || end = clock.now_nanos());
                match reader {
                    Ok(reader) => status = reader.map(|r| r.join().unwrap_or_default()),
                    Err(e) => status = Some(format!("(not read: {e})")),
                }
                match waited {
                    Ok((exit, sent)) => (Ended::from_status(exit), sent),
                    Err(e) => (
                        Ended::SpawnFailed(format!("waiting for the run: {e}")),
                        Sent::Nothing,
                    ),
                }
            }
        };
        let finished = Finished {
            worker,
            number: job.number,
            scheduled: job.scheduled,
            start,
            end,
            ended,
            sent,
            status,
        };
        if done.send(finished).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{status_of, MAX_STATUS};

    #[test]
    fn the_status_is_the_last_line_printed() {
        // curl -w '%{http_code}' after a body, without a newline.
        assert_eq!(status_of(b"<html>\n</html>\n503"), "503");
        assert_eq!(status_of(b"200\n"), "200");
        assert_eq!(status_of(b"body\r\n  204 \r\n\n\n"), "204");
        assert_eq!(
            status_of(b"HTTP/1.1 404 Not Found"),
            "HTTP/1.1 404 Not Found"
        );
        // Nothing printed, only blank lines, or a last line too long to be
        // a status: none.
        assert_eq!(status_of(b""), "");
        assert_eq!(status_of(b"\n \n"), "");
        assert_eq!(status_of("x".repeat(MAX_STATUS + 1).as_bytes()), "");
        assert_eq!(
            status_of("x".repeat(MAX_STATUS).as_bytes()).len(),
            MAX_STATUS
        );
        // Bytes that are not UTF-8 are replaced, not refused.
        assert_eq!(status_of(b"\xff200"), "\u{fffd}200");
    }
}
