//! The slot a worker's running run is listed in, so that the dispatcher can
//! end the runs still running when it stops (a signal, `--max-behind`):
//! SIGTERM to each run's process group, then SIGKILL (`killable`). Where
//! that cannot be done without racing the run's reaping, runs are waited
//! for until they end (`waited`).
//!
//! Each run is started in a process group of its own (the command is its
//! leader, so the group's id is the command's pid): a terminal's Ctrl-C,
//! which goes to the terminal's foreground process group, reaches
//! ratekeeper only, and a signal to the group reaches everything the
//! command started that stayed in it (a shell's children, a pipeline).

/// What ratekeeper has sent a run's process group, in the order it sends
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sent {
    /// Nothing: the run ends on its own.
    #[default]
    Nothing,
    /// SIGTERM, at the stop.
    Term,
    /// SIGKILL, after the grace period or at a further signal.
    Kill,
}

/// A running run, signalled without racing its reaping: its pid is listed
/// from the spawn until the command has exited (as a zombie, whose pid, and
/// so its process group's id, cannot be reused) and is taken off the list
/// before the command is reaped.
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
))]
mod killable {
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, ExitStatus};
    use std::sync::{Mutex, MutexGuard, PoisonError};
    use std::time::Duration;

    use rustix::io::Errno;
    use rustix::process::{kill_process_group, waitid, Pid, Signal, WaitId, WaitIdOptions};

    use super::Sent;

    /// How often a stopped run's leftovers are looked for.
    const SWEEP_POLL: Duration = Duration::from_millis(20);

    /// A worker's slot, shared with the dispatcher.
    #[derive(Debug, Default)]
    struct State {
        /// The running command's pid, which is also its process group's id.
        pid: Option<Pid>,
        /// What every run is sent from now on: raised by the dispatcher at
        /// the stop (`Term`), then after the grace period (`Kill`); a run
        /// spawned after that is sent it at once.
        stop: Sent,
        /// What the running run's group has been sent.
        sent: Sent,
    }

    impl State {
        /// Sends the running run's group `what` unless it already had it;
        /// returns whether it was sent.
        fn send(&mut self, what: Sent) -> bool {
            let (Some(pid), true) = (self.pid, self.sent < what) else {
                return false;
            };
            let signal = if what == Sent::Kill {
                Signal::KILL
            } else {
                Signal::TERM
            };
            // The command is not reaped yet, so the group's id is its own:
            // an error (the group is gone) leaves nothing to end.
            let _ = kill_process_group(pid, signal);
            self.sent = what;
            true
        }
    }

    /// One worker's running run, if any.
    #[derive(Debug, Default)]
    pub struct Slot(Mutex<State>);

    impl Slot {
        /// Makes `command` start in a process group of its own.
        pub fn prepare(command: &mut Command) {
            command.process_group(0);
        }

        /// Waits for `child` (spawned with [`prepare`](Self::prepare)) to
        /// exit, calls `exited` (to read the clock) as soon as it has,
        /// before it is reaped, and reaps it. Returns its status and what
        /// the dispatcher sent it. A run that was sent SIGTERM leaves
        /// nothing behind: what is still running in its group when it exits
        /// is killed before it is reaped (see [`sweep`](Self::sweep)).
        pub fn wait(
            &self,
            child: &mut Child,
            exited: impl FnOnce(),
        ) -> std::io::Result<(ExitStatus, Sent)> {
            let pid = Pid::from_child(child);
            {
                let mut state = self.lock();
                state.pid = Some(pid);
                state.sent = Sent::Nothing;
                // Spawned after the stop: sent what the others were.
                let stop = state.stop;
                state.send(stop);
            }
            // Exited, not reaped (WNOWAIT): the pid stays the child's.
            // Any error but EINTR: `child.wait()` below reports it.
            while let Err(Errno::INTR) = waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {}
            exited();
            if self.lock().sent > Sent::Nothing {
                self.sweep(pid);
            }
            let sent = {
                let mut state = self.lock();
                state.pid = None;
                state.sent
            };
            Ok((child.wait()?, sent))
        }

        /// Ends what a run that was sent SIGTERM left in its process group
        /// when its command exited: on Linux (and Android) it waits while
        /// another live process is in the group, until the dispatcher sends
        /// the group SIGKILL (the grace period is over); elsewhere, where
        /// the group's members cannot be listed, it sends SIGKILL at once.
        /// The exited command, listed and not yet reaped, keeps the group's
        /// id its own meanwhile.
        fn sweep(&self, pid: Pid) {
            while self.lock().sent < Sent::Kill {
                match group_has_others(pid) {
                    Some(false) => return,
                    Some(true) => std::thread::sleep(SWEEP_POLL),
                    None => {
                        // Whatever is left: an error means nothing is.
                        let _ = kill_process_group(pid, Signal::KILL);
                        return;
                    }
                }
            }
        }

        /// From now on, sends every run `what` (SIGTERM or SIGKILL), the
        /// running one at once; returns whether one was running and was
        /// sent it now.
        pub fn signal(&self, what: Sent) -> bool {
            let mut state = self.lock();
            state.stop = state.stop.max(what);
            state.send(what)
        }

        fn lock(&self) -> MutexGuard<'_, State> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// Whether a live process other than its leader is in process group
    /// `group`, from `/proc`; `None` if `/proc` cannot be read.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn group_has_others(group: Pid) -> Option<bool> {
        let group = group.as_raw_nonzero().get();
        let dir = std::fs::read_dir("/proc").ok()?;
        Some(dir.flatten().any(|entry| {
            let pid = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok());
            pid.is_some_and(|p| p != group)
                && std::fs::read_to_string(entry.path().join("stat"))
                    .is_ok_and(|stat| live_member(&stat, group))
        }))
    }

    /// Elsewhere the group's members cannot be listed: `None`.
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn group_has_others(_group: Pid) -> Option<bool> {
        None
    }

    /// Whether a `/proc/PID/stat` line is a live process's (not a zombie's)
    /// in process group `group`: after the command name's closing
    /// parenthesis come the state, the parent's pid and the group.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(in crate::exec) fn live_member(stat: &str, group: i32) -> bool {
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        !matches!(state, None | Some("Z" | "X")) && pgrp == Some(group)
    }
}

/// Where runs cannot be signalled safely: they stay in ratekeeper's process
/// group (a terminal's Ctrl-C reaches them too) and are waited for until
/// they end.
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
)))]
mod waited {
    use std::process::{Child, Command, ExitStatus};

    use super::Sent;

    /// One worker's running run (not tracked here).
    #[derive(Debug, Default)]
    pub struct Slot;

    impl Slot {
        /// Leaves `command` as it is.
        pub fn prepare(_command: &mut Command) {}

        /// Waits for `child`, then calls `exited`.
        pub fn wait(
            &self,
            child: &mut Child,
            exited: impl FnOnce(),
        ) -> std::io::Result<(ExitStatus, Sent)> {
            let status = child.wait();
            exited();
            Ok((status?, Sent::Nothing))
        }

        /// Cannot signal here: returns false.
        pub fn signal(&self, _what: Sent) -> bool {
            false
        }
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
pub(super) use killable::live_member;
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
))]
pub use killable::Slot;
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
)))]
pub use waited::Slot;
