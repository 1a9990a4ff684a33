//! The slot a worker's running child is listed in, so that a second Ctrl-C
//! can kill the runs still running: by pid where that cannot race the
//! child's reaping (`killable`), else not at all (`waited`).

/// A running child, killable without racing its reaping: its pid is listed
/// from the spawn until the child has exited (as a zombie, whose pid cannot
/// be reused) and is taken off the list before the child is reaped.
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
))]
mod killable {
    use std::process::{Child, ExitStatus};
    use std::sync::{Mutex, PoisonError};

    use rustix::io::Errno;
    use rustix::process::{kill_process, waitid, Pid, Signal, WaitId, WaitIdOptions};

    /// One worker's running child, if any.
    #[derive(Debug, Default)]
    pub struct Slot(Mutex<Option<Pid>>);

    impl Slot {
        /// Waits for `child` to exit, calls `exited` (to read the clock) as
        /// soon as it has, before it is reaped, and reaps it.
        pub fn wait(
            &self,
            child: &mut Child,
            exited: impl FnOnce(),
        ) -> std::io::Result<ExitStatus> {
            let pid = Pid::from_child(child);
            self.set(Some(pid));
            // Exited, not reaped (WNOWAIT): the pid stays the child's.
            // Any error but EINTR: `child.wait()` below reports it.
            while let Err(Errno::INTR) = waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {}
            exited();
            self.set(None);
            child.wait()
        }

        /// Kills (SIGKILL) the child running in this slot, if any; returns
        /// whether one was killed.
        pub fn kill(&self) -> bool {
            let pid = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            pid.is_some_and(|p| kill_process(p, Signal::KILL).is_ok())
        }

        fn set(&self, pid: Option<Pid>) {
            *self.0.lock().unwrap_or_else(PoisonError::into_inner) = pid;
        }
    }
}

/// Where the runs cannot be killed safely by pid: a run is waited for until
/// it ends.
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
)))]
mod waited {
    use std::process::{Child, ExitStatus};

    /// One worker's running child (not tracked here).
    #[derive(Debug, Default)]
    pub struct Slot;

    impl Slot {
        /// Waits for `child`, then calls `exited`.
        pub fn wait(
            &self,
            child: &mut Child,
            exited: impl FnOnce(),
        ) -> std::io::Result<ExitStatus> {
            let status = child.wait();
            exited();
            status
        }

        /// Cannot kill here: returns false.
        pub fn kill(&self) -> bool {
            false
        }
    }
}

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
