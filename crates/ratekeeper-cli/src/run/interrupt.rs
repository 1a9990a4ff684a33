//! Ctrl-C (SIGINT): ends a run cleanly, so that it still prints its report.
//!
//! [`install`] replaces the default action (the process dies at once) with a
//! counter: the `ctrlc` crate's handler thread calls [`Interrupt::raise`],
//! which counts the interrupt and wakes every [`Interrupt::sleep`]. Runs
//! check the counter between their steps and sleep through it, so a long
//! wait for a permit ends at once. What each subcommand does with the first
//! and the second Ctrl-C is in its `--help`; all of them then print their
//! report and exit with status [`EXIT_STATUS`].
//!
//! The handler is not inherited: a command `exec` runs starts with SIGINT's
//! default action (a signal handler is reset by `exec(2)`). Where Ctrl-C is
//! typed at a terminal, the commands receive it themselves, as members of the
//! terminal's foreground process group.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ratekeeper::wait::Stop;
use ratekeeper::{Grant, RateLimiter};

/// The exit status of a run ended by Ctrl-C: 128 + SIGINT, as a shell
/// reports a command killed by it.
pub const EXIT_STATUS: u8 = 130;

/// The process's Ctrl-C handler, once [`install`]ed.
static INTERRUPT: Interrupt = Interrupt::new();

/// A count of interrupts, and a condition variable to wake sleepers with.
#[derive(Debug)]
pub struct Interrupt {
    count: AtomicU32,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Interrupt {
    /// No interrupt yet.
    pub const fn new() -> Interrupt {
        Interrupt {
            count: AtomicU32::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// How many interrupts have arrived.
    #[inline]
    pub fn count(&self) -> u32 {
        // Ordering: Relaxed; a stop request carries no data, and every
        // sleeper rereads it under `lock`, which `raise` holds while adding.
        self.count.load(Ordering::Relaxed)
    }

    /// Whether an interrupt has arrived.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.count() > 0
    }

    /// Counts one interrupt and wakes every sleeper.
    pub fn raise(&self) {
        // The lock orders the add before any sleeper's check-then-wait, so a
        // sleeper cannot miss the wake-up between the two.
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // Ordering: Relaxed; see `count`.
        self.count.fetch_add(1, Ordering::Relaxed);
        self.wake.notify_all();
    }

    /// Sleeps for `d`, or until the interrupt count exceeds `seen` (at once
    /// if it already does). Returns whether it woke for an interrupt.
    pub fn sleep_unless(&self, seen: u32, d: Duration) -> bool {
        let deadline = Instant::now().checked_add(d);
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.count() > seen {
                return true;
            }
            let now = Instant::now();
            let left = match deadline {
                Some(end) if end <= now => return false,
                Some(end) => end - now,
                // Further than an Instant can reach: wait in long steps.
                None => Duration::from_secs(3600),
            };
            guard = self
                .wake
                .wait_timeout(guard, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Sleeps for `d`, or until the first interrupt. Returns whether it woke
    /// for an interrupt.
    pub fn sleep(&self, d: Duration) -> bool {
        self.sleep_unless(0, d)
    }
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt::new()
    }
}

/// Makes Ctrl-C (SIGINT; on Windows, the console's Ctrl-C) raise the
/// process's [`Interrupt`] instead of ending the process, and returns it.
///
/// Where SIGINT already has a disposition other than the default, the
/// handler is not installed and that disposition stays: above all a SIGINT
/// that is ignored (as a non-interactive shell does for the jobs it starts
/// with `&`) stays ignored, as the convention goes. The interrupt returned
/// is then never raised. So is it if the handler cannot be installed.
pub fn install() -> &'static Interrupt {
    let _ = ctrlc::try_set_handler(|| INTERRUPT.raise());
    &INTERRUPT
}

/// A wait for a permit longer than this many nanoseconds (20 ms, the
/// library's [`STOP_TAIL`](ratekeeper::wait::STOP_TAIL)) is first slept on
/// the interrupt, so that Ctrl-C ends it at once; the last part of it is the
/// limiter's own wait (its wait policy: coalescing, or a precise spin).
pub const LONG_WAIT_NANOS: u64 = ratekeeper::wait::STOP_TAIL.as_nanos() as u64;

/// Ctrl-C ends a limiter's stoppable wait
/// ([`RateLimiter::wait_for_or_stop`]).
impl Stop for Interrupt {
    fn is_stopped(&self) -> bool {
        self.is_set()
    }

    fn sleep(&self, nanos: u64) -> bool {
        Interrupt::sleep(self, Duration::from_nanos(nanos))
    }
}

/// The library's stoppable wait with the interrupt as its stop
/// ([`RateLimiter::wait_for_or_stop`]): a grant that is ready within 20 ms
/// goes straight to `wait_for` (no clock read and no lock are added to a
/// short wait); a longer one is slept on the interrupt, asking the limiter
/// after each sleep what it waits for (so an inline-filled token pool's
/// waiter still fills it), and the last 20 ms are the limiter's own wait.
#[inline]
pub fn wait_for_grant<L: RateLimiter + ?Sized>(
    limiter: &L,
    grant: Grant,
    interrupt: &Interrupt,
) -> Option<Grant> {
    if grant.delay_nanos() <= LONG_WAIT_NANOS {
        return Some(limiter.wait_for(grant));
    }
    limiter.wait_for_or_stop(grant, interrupt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_runs_its_course_without_an_interrupt() {
        crate::test_util::within(|| {
            let i = Interrupt::new();
            let t = Instant::now();
            assert!(!i.sleep(Duration::from_millis(20)));
            assert!(t.elapsed() >= Duration::from_millis(20));
            assert_eq!(i.count(), 0);
        });
    }

    #[test]
    fn raise_wakes_a_sleeper_at_once() {
        crate::test_util::within(|| {
            let i = Interrupt::new();
            let t = Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    i.raise();
                });
                assert!(i.sleep(Duration::from_secs(60)));
            });
            assert!(t.elapsed() < Duration::from_secs(30));
            assert!(i.is_set());
            // Already interrupted: returns at once.
            assert!(i.sleep(Duration::from_secs(60)));
            // A sleep for the second interrupt waits for it.
            assert!(!i.sleep_unless(1, Duration::from_millis(5)));
            i.raise();
            assert!(i.sleep_unless(1, Duration::from_secs(60)));
            assert_eq!(i.count(), 2);
        });
    }

    #[test]
    fn a_long_wait_for_a_grant_ends_on_time() {
        crate::test_util::within(|| {
            use ratekeeper::{Clock, DefaultClock, Pacer, Rate};
            let clock = DefaultClock::new();
            // One permit every 60 ms: the second is slept on the interrupt for
            // 50 ms, and the last 10 ms by the pacer.
            let pacer = Pacer::builder(Rate::new(1e9 / 60e6).unwrap())
                .strictness(1.0)
                .build_with_clock(clock)
                .unwrap();
            let i = Interrupt::new();
            let first = wait_for_grant(&pacer, pacer.reserve(1, None).unwrap(), &i).unwrap();
            let second = pacer.reserve(1, None).unwrap();
            assert!(second.delay_nanos() > LONG_WAIT_NANOS);
            let g = wait_for_grant(&pacer, second, &i).unwrap();
            let now = clock.now_nanos();
            assert!(now >= g.ready_nanos() - 1_000_000, "not early (coalescing)");
            // Not a second sleep of the whole delay (which would end 110 ms in).
            assert!(
                now < first.ready_nanos() + 100_000_000,
                "{} ms after the first",
                (now - first.ready_nanos()) / 1_000_000
            );
        });
    }

    #[test]
    fn a_long_wait_for_a_grant_ends_with_the_interrupt_and_gives_it_back() {
        crate::test_util::within(|| {
            use ratekeeper::{Pacer, Rate};
            // One permit every 10 s: the second waits 10 s unless interrupted.
            let pacer = Pacer::builder(Rate::new(0.1).unwrap())
                .strictness(1.0)
                .build()
                .unwrap();
            let i = Interrupt::new();
            let first = pacer.reserve(1, None).unwrap();
            assert!(wait_for_grant(&pacer, first, &i).is_some());
            let second = pacer.reserve(1, None).unwrap();
            let t = Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(30));
                    i.raise();
                });
                assert_eq!(wait_for_grant(&pacer, second, &i), None);
            });
            assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
            // Given back: the next reservation gets the second's slot.
            assert!(second.ready_nanos() > first.ready_nanos() + 9_000_000_000);
            let again = pacer.reserve(1, None).unwrap();
            assert_eq!(again.scheduled_nanos(), second.scheduled_nanos());
            // A grant that is ready at once is returned even when interrupted.
            let now = Pacer::builder(Rate::new(1000.0).unwrap()).build().unwrap();
            let g = now.reserve(1, None).unwrap();
            assert!(wait_for_grant(&now, g, &i).is_some());
        });
    }
}
