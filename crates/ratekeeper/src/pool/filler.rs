//! The background filler thread of [`Filling::Thread`](super::Filling::Thread):
//! nosqlbench's `TokenFiller`, with a way to stop it, and parked while its
//! pool is idle.
//!
//! One thread per started pool. It wakes every interval, reads the clock and
//! refills the pool with the time it *measured* since the last fill (never a
//! fixed step), which also wakes the waiters whose claims that fill completed.
//! The pool owns the [`Handle`]: stopping or dropping the pool sets the stop
//! flag, unparks the thread and joins it, so no thread outlives its pool
//! (nosqlbench's filler was never stopped, §5.2 of the spec).
//!
//! The thread knows no pool: it is given a clock reading and a fill, as
//! closures (tokio's timer driver likewise only fires a waker and knows
//! nothing of its owner), so this module imports nothing from the pool.
//!
//! After a fill that leaves the pool idle (full, nobody waiting: see the
//! pool's `Shared::try_park`), the fill says [`Next::Park`], and the
//! thread parks with no timeout: it costs nothing until the pool unparks it
//! (a take from the full pool, a queued claim, a new rate, a restart) or the
//! pool stops it. Woken, it fills at once and goes on every interval. A
//! spurious wake-up only makes that fill, which finds the pool still idle
//! and parks again.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::sync::{self, AtomicBool, JoinHandle, Ordering, Thread, ThreadBuilder};

/// The name filler threads carry (visible in `top -H`, debuggers, and
/// `/proc/<pid>/task/*/comm` on Linux).
pub const FILLER_THREAD_NAME: &str = "rk-pool-filler";

/// What the filler does after a fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Fill again one interval later.
    Fill,
    /// The pool is idle: park until the pool unparks the thread.
    Park,
}

/// A running filler thread.
#[derive(Debug)]
pub(super) struct Handle {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Handle {
    /// Starts a filler that calls `fill` with a clock reading (`now`)
    /// every `interval` nanoseconds, the first time one interval after
    /// `start` (the clock reading of the fill the pool started with).
    pub(super) fn spawn(
        now: impl Fn() -> u64 + Send + 'static,
        fill: impl FnMut(u64) -> Next + Send + 'static,
        start: u64,
        interval: u64,
    ) -> io::Result<Handle> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = ThreadBuilder::new()
            .name(FILLER_THREAD_NAME.into())
            .spawn(move || run(now, fill, start, interval, &flag))?;
        Ok(Handle { stop, thread })
    }

    /// The thread, for the pool to unpark it when it has work again.
    pub(super) fn thread(&self) -> &Thread {
        self.thread.thread()
    }

    /// Stops the thread and waits for it to end; a parked thread is woken at
    /// once. Must not be called with the pool's state locked: the thread may
    /// be waiting for that lock.
    pub(super) fn stop(self) {
        // Ordering: Release pairs with the filler's Acquire load, so nothing
        // the pool did before stopping is missed; the flag carries no data.
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        // The thread only returns; a panic in it (none is possible short of a
        // bug) would already have been reported on stderr.
        let _ = self.thread.join();
    }
}

fn run(
    now: impl Fn() -> u64,
    mut fill: impl FnMut(u64) -> Next,
    start: u64,
    interval: u64,
    stop: &AtomicBool,
) {
    let mut due = start.saturating_add(interval);
    while let Some(now) = wait_until(&now, due, stop) {
        due = match fill(now) {
            Next::Fill => now.saturating_add(interval),
            Next::Park => {
                // Until the pool has work or stops; an unpark that came
                // first makes this return at once.
                sync::park();
                0 // fill at once
            }
        };
    }
}

/// Waits until the clock reads `due` or later and returns the reading, or
/// `None` once the pool stops the thread.
fn wait_until(clock: impl Fn() -> u64, due: u64, stop: &AtomicBool) -> Option<u64> {
    loop {
        // Ordering: Acquire; see `Handle::stop`.
        if stop.load(Ordering::Acquire) {
            return None;
        }
        let now = clock();
        if now >= due {
            return Some(now);
        }
        // Parks in real time; `Handle::stop` unparks it at once. A spurious
        // return just measures again.
        sync::park_timeout(Duration::from_nanos(due - now));
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
