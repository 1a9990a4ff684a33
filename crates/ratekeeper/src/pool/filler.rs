//! The background filler thread of [`Filling::Thread`](super::Filling::Thread):
//! nosqlbench's `TokenFiller`, with a way to stop it.
//!
//! One thread per started pool. It wakes every interval, reads the clock and
//! refills the pool with the time it *measured* since the last fill (never a
//! fixed step), which also wakes the waiters whose claims that fill completed.
//! The pool owns the [`Handle`]: stopping or dropping the pool sets the stop
//! flag, unparks the thread and joins it, so no thread outlives its pool
//! (nosqlbench's filler was never stopped, §5.2 of the spec).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::limiter::Shared;
use crate::clock::Clock;

/// The name filler threads carry (visible in `top -H`, debuggers, and
/// `/proc/<pid>/task/*/comm` on Linux).
pub const FILLER_THREAD_NAME: &str = "rk-pool-filler";

/// A running filler thread.
#[derive(Debug)]
pub(super) struct Handle {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Handle {
    /// Starts a filler refilling `shared` every `interval` nanoseconds.
    pub(super) fn spawn<C: Clock + 'static>(
        shared: Arc<Shared<C>>,
        interval: u64,
    ) -> io::Result<Handle> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(FILLER_THREAD_NAME.into())
            .spawn(move || run(&shared, interval, &flag))?;
        Ok(Handle { stop, thread })
    }

    /// Stops the thread and waits for it to end. Must not be called with the
    /// pool's state locked: the thread may be waiting for that lock.
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

fn run<C: Clock + 'static>(shared: &Shared<C>, interval: u64, stop: &AtomicBool) {
    let clock = shared.clock();
    let mut last = clock.now_nanos();
    loop {
        let next = last.saturating_add(interval);
        let now = loop {
            // Ordering: Acquire; see `Handle::stop`.
            if stop.load(Ordering::Acquire) {
                return;
            }
            let now = clock.now_nanos();
            if now >= next {
                break now;
            }
            // Parks in real time; `Handle::stop` unparks it at once. A
            // spurious return just measures again.
            std::thread::park_timeout(Duration::from_nanos(next - now));
        };
        shared.fill_tick(now);
        last = now;
    }
}
