//! Ctrl-C (SIGINT), SIGTERM and SIGHUP: end a run cleanly, so that it still
//! prints its report.
//!
//! [`install`] replaces the default action (the process dies at once) with a
//! counter: a handler thread (signal-hook's iterator; `ctrlc` where there are
//! no Unix signals) calls [`Interrupt::raise_signal`], which records the
//! first signal, counts it and wakes every [`Interrupt::sleep`]. Runs check
//! the counter between their steps and sleep through it, so a long wait for
//! a permit ends at once. What each subcommand does with the first and the
//! second signal is in its `--help`; all of them then print their report and
//! exit with [`Interrupt::exit_status`]: 128 + the first signal, as a shell
//! reports a command killed by it (130 for SIGINT, 143 for SIGTERM: `kill`,
//! `timeout`, `docker stop`, a CI cancel; 129 for SIGHUP, a closed
//! terminal).
//!
//! [`install_with_rate_control`] also takes SIGUSR1 and SIGUSR2 as requests
//! to double or halve the rate (`pipe`), counted in
//! [`Interrupt::take_rate_steps`].
//!
//! The handlers are not inherited: a command `exec` runs starts with the
//! default actions (a signal handler is reset by `exec(2)`), in its own
//! process group, so a terminal's Ctrl-C reaches ratekeeper only.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ratekeeper::wait::Stop;
use ratekeeper::{Grant, RateLimiter};

/// SIGINT's number, the signal a run is taken to have ended by where the
/// signal is not known.
pub const SIGINT: i32 = 2;

/// The exit status of a run ended by Ctrl-C: 128 + SIGINT, as a shell
/// reports a command killed by it.
pub const EXIT_STATUS: u8 = 128 + SIGINT as u8;

/// The process's Ctrl-C handler, once [`install`]ed.
static INTERRUPT: Interrupt = Interrupt::new();

/// A count of interrupts, and a condition variable to wake sleepers with.
#[derive(Debug)]
pub struct Interrupt {
    count: AtomicU32,
    /// The first stop signal's number; 0 before one.
    signal: AtomicI32,
    /// Rate doublings (SIGUSR1) less halvings (SIGUSR2) not yet taken.
    rate_steps: AtomicI32,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Interrupt {
    /// No interrupt yet.
    pub const fn new() -> Interrupt {
        Interrupt {
            count: AtomicU32::new(0),
            signal: AtomicI32::new(0),
            rate_steps: AtomicI32::new(0),
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

    /// The exit status of a run this ended: 128 + the first signal
    /// ([`EXIT_STATUS`], SIGINT's, where none was recorded).
    pub fn exit_status(&self) -> u8 {
        // Ordering: Relaxed; read after the run saw `count` (the handler
        // stores the signal first, under no lock, then counts under `lock`).
        match self.signal.load(Ordering::Relaxed) {
            s @ 1..=127 => 128 + s as u8,
            _ => EXIT_STATUS,
        }
    }

    /// Records `signal` if it is the first, then [`raise`](Self::raise)s.
    pub fn raise_signal(&self, signal: i32) {
        // Ordering: Relaxed; the store is ordered before the count by
        // `raise`'s lock, which every reader of the count takes or follows.
        let _ = self
            .signal
            .compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed);
        self.raise();
    }

    /// Asks for the rate to be doubled (`up`) or halved, and wakes every
    /// sleeper so that a long wait ends and the new rate is seen.
    pub fn step_rate(&self, up: bool) {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // Ordering: Relaxed; a request count, read with `swap`.
        self.rate_steps
            .fetch_add(if up { 1 } else { -1 }, Ordering::Relaxed);
        self.wake.notify_all();
    }

    /// The rate steps asked for since the last call: doublings less
    /// halvings.
    pub fn take_rate_steps(&self) -> i32 {
        // Ordering: Relaxed; see `step_rate`.
        self.rate_steps.swap(0, Ordering::Relaxed)
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
    listen(false);
    &INTERRUPT
}

/// [`install`], and SIGUSR1 / SIGUSR2 as requests to double / halve the rate
/// ([`Interrupt::take_rate_steps`]).
pub fn install_with_rate_control() -> &'static Interrupt {
    listen(true);
    &INTERRUPT
}

/// Starts the handler thread, once per process.
#[cfg(unix)]
fn listen(rate_control: bool) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
    use signal_hook::iterator::Signals;
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        // SIGHUP too: a closed terminal ends the run as SIGTERM does (exec's
        // runs, in their own process groups, no longer hear it themselves).
        let mut wanted = vec![SIGINT, SIGTERM, SIGHUP];
        if rate_control {
            wanted.extend([SIGUSR1, SIGUSR2]);
        }
        // Registration fails only for a forbidden signal (SIGKILL, SIGSTOP);
        // then the default actions stay, as before `install`.
        let Ok(mut signals) = Signals::new(&wanted) else {
            return;
        };
        std::thread::spawn(move || {
            for signal in signals.forever() {
                match signal {
                    SIGUSR1 => INTERRUPT.step_rate(true),
                    SIGUSR2 => INTERRUPT.step_rate(false),
                    s => INTERRUPT.raise_signal(s),
                }
            }
        });
    });
}

/// Starts Ctrl-C's handler, where there are no Unix signals.
#[cfg(not(unix))]
fn listen(_rate_control: bool) {
    let _ = ctrlc::try_set_handler(|| INTERRUPT.raise_signal(SIGINT));
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
    fn the_first_signal_sets_the_exit_status() {
        let i = Interrupt::new();
        assert_eq!(i.exit_status(), 130, "SIGINT's where none was recorded");
        i.raise_signal(15);
        i.raise_signal(2);
        assert_eq!((i.exit_status(), i.count()), (143, 2));
    }

    #[test]
    fn rate_steps_are_counted_until_taken() {
        let i = Interrupt::new();
        i.step_rate(true);
        i.step_rate(true);
        i.step_rate(false);
        assert_eq!(i.take_rate_steps(), 1);
        assert_eq!(i.take_rate_steps(), 0);
        assert!(!i.is_set(), "a rate step is not a stop");
    }

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
