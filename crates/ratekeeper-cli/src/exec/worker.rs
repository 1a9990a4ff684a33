//! `exec`'s workers: each spawns the runs it is handed, one at a time, and
//! waits for them, reading the clock right before the spawn and right after
//! the exit.

use std::ffi::OsString;
use std::fs::File;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, Sender};

use ratekeeper::{Clock, DefaultClock};

use super::slot::{Sent, Slot};

/// Where the runs' standard output goes.
#[derive(Debug)]
pub(super) enum Output {
    Inherit,
    Discard,
    /// Appended to this file.
    File(File),
}

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
            Output::Discard => Stdio::null(),
            Output::File(f) => Stdio::from(f.try_clone()?),
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
        let (ended, sent) = match spawner.spawn() {
            Err(e) => (Ended::SpawnFailed(e.to_string()), Sent::Nothing),
            Ok(mut child) => match slot.wait(&mut child, || end = clock.now_nanos()) {
                Ok((status, sent)) => (Ended::from_status(status), sent),
                Err(e) => (
                    Ended::SpawnFailed(format!("waiting for the run: {e}")),
                    Sent::Nothing,
                ),
            },
        };
        let finished = Finished {
            worker,
            number: job.number,
            scheduled: job.scheduled,
            start,
            end,
            ended,
            sent,
        };
        if done.send(finished).is_err() {
            return;
        }
    }
}
