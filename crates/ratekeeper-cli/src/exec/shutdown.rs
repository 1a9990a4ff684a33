//! Ending the runs still running when `exec` stops early (a signal,
//! `--max-behind`): SIGTERM to each run's process group at the stop, then
//! SIGKILL to the groups of the runs still going after the grace period
//! (`--grace`), or at once at a further signal. The workers count what
//! their runs were sent (see [`Sent`](super::slot::Sent)); this only
//! decides when.

use std::time::{Duration, Instant};

use super::slot::{Sent, Slot};
use crate::run::interrupt::Interrupt;

/// The dispatcher's side of the stop, while it waits for the runs.
#[derive(Debug)]
pub(super) struct Shutdown<'a> {
    slots: &'a [Slot],
    grace: Duration,
    interrupt: &'a Interrupt,
    /// When SIGTERM was sent, and how many signals had arrived by then.
    terminated: Option<(Instant, u32)>,
    /// Whether SIGKILL was sent.
    killed: bool,
}

impl<'a> Shutdown<'a> {
    /// Nothing sent yet.
    pub(super) fn new(slots: &'a [Slot], grace: Duration, interrupt: &'a Interrupt) -> Self {
        Shutdown {
            slots,
            grace,
            interrupt,
            terminated: None,
            killed: false,
        }
    }

    /// Sends SIGTERM to every run still running, and to any run a worker
    /// starts from now on (one it was handed before the stop); once only.
    pub(super) fn terminate(&mut self) {
        if self.terminated.is_some() {
            return;
        }
        self.terminated = Some((Instant::now(), self.interrupt.count()));
        for slot in self.slots {
            slot.signal(Sent::Term);
        }
    }

    /// Called while the dispatcher waits for the runs: a signal ends them
    /// (SIGTERM) if nothing did yet; once they were sent SIGTERM, SIGKILL
    /// follows when the grace period is over or at a further signal.
    pub(super) fn tick(&mut self) {
        if self.interrupt.is_set() {
            self.terminate();
        }
        let Some((at, seen)) = self.terminated else {
            return;
        };
        if !self.killed && (at.elapsed() >= self.grace || self.interrupt.count() > seen) {
            self.killed = true;
            for slot in self.slots {
                slot.signal(Sent::Kill);
            }
        }
    }
}
