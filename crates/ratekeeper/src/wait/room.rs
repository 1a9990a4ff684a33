//! The waiting room: one thread at a time sleeps on a limiter's schedule.
//!
//! With the default policy a thread ahead of schedule sleeps once per group
//! of ops ([module docs](super)); `N` threads sleeping on their own would
//! wake `N` times per group. The room lets one thread do it:
//!
//! * **One sleeper.** A thread whose grant must wait becomes the sleeper if
//!   there is none (a rare race may add a second sleep).
//! * **Park without a slot.** A thread arriving while the sleeper sleeps
//!   parks before it reserves, holding nothing.
//! * **Hand over.** The released sleeper unparks the first parked thread,
//!   which reserves and goes or becomes the next sleeper; one finding no
//!   sleeper passes the hand-over on. About one sleep and one hand-over per
//!   group, whatever `N`.
//!
//! Parked threads also look again every [`PARK_LIMIT`], a safety net
//! against a hand-over never made.
//!
//! # Memory ordering
//!
//! The room orders nothing for its callers: the limiter's reservation
//! does. Its state word is a relaxed hint; every decision to park or hand
//! over is taken under the queue's mutex.

use std::collections::VecDeque;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::WaitPolicy;
use crate::clock::Clock;
use crate::grant::Grant;
use crate::sync::{self, lock, AtomicU64, Mutex, Ordering, Thread};

/// A thread sleeps on the schedule.
const SLEEPER: u64 = 1;
/// One parked thread, in the count held in the upper bits.
const PARKED_ONE: u64 = 1 << 8;

/// The longest a parked caller waits before it looks again: a safety net.
pub const PARK_LIMIT: Duration = Duration::from_millis(50);

/// What the hot path reads: written about twice per sleep.
#[derive(Debug)]
struct Hints {
    /// [`SLEEPER`] and the parked count; written under the queue's lock,
    /// except [`SLEEPER`]'s set.
    state: AtomicU64,
}

/// One limiter's waiting room; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Room {
    /// The words every acquire reads, on one read-mostly cache line.
    hints: CachePadded<Hints>,
    /// Parked threads, first come first.
    parked: Mutex<VecDeque<Thread>>,
}

impl Room {
    /// An empty room.
    pub(crate) fn new() -> Room {
        Room {
            hints: CachePadded::new(Hints {
                state: AtomicU64::new(0),
            }),
            parked: Mutex::new(VecDeque::new()),
        }
    }

    /// Before reserving: parks while a sleeper sleeps on the schedule.
    /// Returns at once, after one relaxed load, when there is none.
    #[inline(always)]
    pub(crate) fn enter(&self) {
        // Ordering: Relaxed; a hint. A stale "no sleeper" costs a slot
        // ahead and a sleep of its own; a stale "sleeper" is checked again
        // under the lock.
        if self.hints.state.load(Ordering::Relaxed) & SLEEPER != 0 {
            self.park_while_asleep();
        }
    }

    #[cold]
    #[inline(never)]
    fn park_while_asleep(&self) {
        let me = sync::current_thread();
        let mut queue = lock(&self.parked);
        // Ordering: Relaxed under the lock: SLEEPER is cleared only under
        // it, so a sleeper seen here hands over to this thread when it
        // leaves.
        if self.hints.state.load(Ordering::Relaxed) & SLEEPER == 0 {
            return;
        }
        queue.push_back(me.clone());
        // Ordering: Relaxed; the count is a hint outside the lock.
        self.hints.state.fetch_add(PARKED_ONE, Ordering::Relaxed);
        drop(queue);
        loop {
            sync::park_timeout(PARK_LIMIT);
            let mut queue = lock(&self.parked);
            match queue.iter().position(|t| t.id() == me.id()) {
                // Unparked by a hand-over, which took us off the queue. If
                // no sleeper took over meanwhile, pass the hand-over on, so
                // that no caller stays parked while nobody sleeps on the
                // schedule (the others would wait for the limit).
                None => {
                    // Ordering: Relaxed under the lock.
                    if self.hints.state.load(Ordering::Relaxed) & SLEEPER == 0 {
                        self.wake_one(&mut queue);
                    }
                    return;
                }
                // Still queued: a spurious wake, or the limit.
                Some(at) => {
                    // Ordering: Relaxed under the lock.
                    if self.hints.state.load(Ordering::Relaxed) & SLEEPER != 0 {
                        continue;
                    }
                    queue.remove(at);
                    // Ordering: Relaxed under the lock.
                    self.hints.state.fetch_sub(PARKED_ONE, Ordering::Relaxed);
                    return;
                }
            }
        }
    }

    /// Waits for `grant` (see [`block_until`](super::block_until)), as the
    /// sleeper if there is none; once let go calls `released`, then hands
    /// over, so whoever it wakes reserves after `released` took effect.
    pub(crate) fn wait(
        &self,
        clock: &dyn Clock,
        grant: Grant,
        policy: WaitPolicy,
        released: impl FnOnce(&Grant),
    ) -> Grant {
        // Ordering: Relaxed; the role is a hint (see `enter`); its
        // hand-over is decided under the lock.
        let sleeper = self.hints.state.fetch_or(SLEEPER, Ordering::Relaxed) & SLEEPER == 0;
        let done = super::block_until(clock, grant, policy);
        released(&done);
        if sleeper {
            self.leave();
        }
        done
    }

    /// The sleeper was let go: clears the role, hands over.
    fn leave(&self) {
        let mut queue = lock(&self.parked);
        // Ordering: Relaxed under the lock (see `park_while_asleep`).
        self.hints.state.fetch_and(!SLEEPER, Ordering::Relaxed);
        self.wake_one(&mut queue);
    }

    /// Unparks the first parked thread, under the lock.
    fn wake_one(&self, queue: &mut VecDeque<Thread>) {
        if let Some(t) = queue.pop_front() {
            // Ordering: Relaxed under the lock.
            self.hints.state.fetch_sub(PARKED_ONE, Ordering::Relaxed);
            t.unpark();
        }
    }
}
