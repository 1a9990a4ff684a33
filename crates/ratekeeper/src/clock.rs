//! Clocks: monotonic `u64` nanoseconds, real or manual.
//!
//! Every limiter in this crate keeps its schedule in nanoseconds of a [`Clock`].
//! The real clock is [`MonotonicClock`]; tests use [`ManualClock`], whose time
//! moves only when told to, so time-dependent behaviour can be checked exactly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sync::{AtomicU64, Ordering};

/// A source of monotonic time in nanoseconds, and the way to sleep on it.
///
/// `now_nanos` counts from a fixed, arbitrary origin and must never go
/// backwards, on any thread. Limiters treat a reading that appears to go
/// backwards as no time passing (their subtractions saturate at zero), but a
/// clock that jumps back can still delay callers, so implementations should be
/// monotonic across CPUs.
///
/// # Examples
///
/// A clock that is always at the same instant (sleeping on it would never end,
/// so limiters built on it only make non-blocking decisions):
///
/// ```
/// use ratekeeper::Clock;
///
/// struct Frozen(u64);
/// impl Clock for Frozen {
///     fn now_nanos(&self) -> u64 { self.0 }
/// }
/// assert_eq!(Frozen(7).now_nanos(), 7);
/// ```
pub trait Clock: Send + Sync {
    /// Nanoseconds since this clock's origin.
    fn now_nanos(&self) -> u64;

    /// Blocks the calling thread for about `nanos` nanoseconds.
    ///
    /// The default sleeps with [`std::thread::sleep`]. A test clock may instead
    /// advance itself (see [`ManualClock`]).
    fn sleep_nanos(&self, nanos: u64) {
        std::thread::sleep(Duration::from_nanos(nanos));
    }

    /// How late a sleep on this clock typically ends, in nanoseconds.
    ///
    /// Blocking waits sleep this much less than they need, so they wake about
    /// on time (see [`WaitPolicy`](crate::WaitPolicy)); a clock that returns 0
    /// (sleeps are exact) also gets no coalescing by default. The default is
    /// [`DEFAULT_SLEEP_OVERSHOOT_NANOS`].
    fn sleep_overshoot_nanos(&self) -> u64 {
        DEFAULT_SLEEP_OVERSHOOT_NANOS
    }
}

/// Typical lateness of a real sleep: 100 µs.
///
/// Measured on the project's 2-core AMD EPYC KVM machine (Linux, `tsc`
/// clocksource) with `cargo run --release -p ratekeeper --example
/// sleep_overshoot`: `thread::sleep(1 µs)` ended 86 µs late at the median,
/// 94 µs at p90 and 116 µs at p99; sleeps of 10 µs to 1 ms, 95–118 µs late at
/// the median. Blocking waits sleep this much less than the wait so that they
/// wake about on time.
pub const DEFAULT_SLEEP_OVERSHOOT_NANOS: u64 = 100_000;

impl<C: Clock + ?Sized> Clock for &C {
    fn now_nanos(&self) -> u64 {
        (**self).now_nanos()
    }
    fn sleep_nanos(&self, nanos: u64) {
        (**self).sleep_nanos(nanos)
    }
    fn sleep_overshoot_nanos(&self) -> u64 {
        (**self).sleep_overshoot_nanos()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_nanos(&self) -> u64 {
        (**self).now_nanos()
    }
    fn sleep_nanos(&self, nanos: u64) {
        (**self).sleep_nanos(nanos)
    }
    fn sleep_overshoot_nanos(&self) -> u64 {
        (**self).sleep_overshoot_nanos()
    }
}

/// The real clock: [`std::time::Instant`], as nanoseconds since the clock was
/// created.
///
/// # Why `Instant`
///
/// On Linux `Instant` reads `CLOCK_MONOTONIC` through the vDSO. The kernel keeps
/// that clock monotonic across CPUs: it uses the TSC only after checking that
/// the TSCs are synchronized, and falls back to another clocksource otherwise.
/// A raw TSC reader (quanta, which governor uses by default) does not promise
/// this, and governor issue #299 shows what happens when a thread moves between
/// cores whose TSCs disagree: time goes backwards and waits become huge.
///
/// The price, measured with criterion on the project's 2-core AMD EPYC KVM
/// machine (`tsc` clocksource), median of three runs of
/// `cargo bench -p ratekeeper --bench ratekeeper` (the `clock` group; the
/// table in BENCHMARKS.md):
///
/// | read | ns per call |
/// |---|---|
/// | `std::time::Instant::now()` | 29.3 |
/// | `MonotonicClock::now_nanos()` (the above plus conversion to `u64`) | 34.1 |
/// | `quanta::Clock::now()` (TSC, scaled) | 11.5 |
/// | `quanta::Clock::raw()` (TSC, unscaled) | 11.5 |
///
/// About 22 ns per read more than quanta. The [`Pacer`](crate::Pacer) skips
/// the clock read entirely for callers already behind schedule (its shared
/// last-seen clock), so the difference shows mainly where callers are ahead of
/// schedule and about to wait anyway. A clock that can go backwards between
/// cores costs far more than 22 ns when it does, so correctness wins; a caller
/// who trusts their TSCs can implement [`Clock`] over quanta in a few lines.
///
/// # Examples
///
/// ```
/// use ratekeeper::{Clock, MonotonicClock};
///
/// let clock = MonotonicClock::new();
/// let a = clock.now_nanos();
/// let b = clock.now_nanos();
/// assert!(b >= a);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            origin: Instant::now(),
        }
    }

    /// The instant this clock counts from.
    pub fn origin(&self) -> Instant {
        self.origin
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        // `Instant` never goes backwards; the subtraction saturates regardless.
        // u64 nanoseconds last 584 years from the origin.
        let d = Instant::now().saturating_duration_since(self.origin);
        d.as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(d.subsec_nanos()))
    }
}

/// The clock a limiter uses when none is given.
pub type DefaultClock = MonotonicClock;

/// A clock that moves only when told to: for deterministic tests.
///
/// Clones share the same time, so a test can keep one clone and hand another to
/// a limiter, also across threads. Sleeping on a `ManualClock` does not block:
/// it advances the clock by the requested time (plus any configured overshoot),
/// so a blocking acquire returns at exactly the instant it was scheduled for.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// let seen_by_limiter = clock.clone();
/// clock.advance(Duration::from_micros(5));
/// assert_eq!(seen_by_limiter.now_nanos(), 6_000);
///
/// seen_by_limiter.sleep_nanos(500); // advances instead of blocking
/// assert_eq!(clock.now_nanos(), 6_500);
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Debug)]
struct ManualInner {
    nanos: AtomicU64,
    overshoot: AtomicU64,
}

impl Default for ManualClock {
    /// A manual clock reading zero.
    fn default() -> Self {
        ManualClock::new(0)
    }
}

impl ManualClock {
    /// A manual clock reading `start_nanos`.
    pub fn new(start_nanos: u64) -> ManualClock {
        ManualClock {
            inner: Arc::new(ManualInner {
                nanos: AtomicU64::new(start_nanos),
                overshoot: AtomicU64::new(0),
            }),
        }
    }

    /// Moves the clock forward by `by` (saturating at `u64::MAX` nanoseconds).
    pub fn advance(&self, by: Duration) {
        self.advance_nanos(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Moves the clock forward by `nanos` (saturating).
    pub fn advance_nanos(&self, nanos: u64) {
        // Ordering: Relaxed. The clock value is the only datum; a reader that
        // needs to see other memory written before an advance synchronizes
        // through that memory, not through the clock.
        let mut cur = self.inner.nanos.load(Ordering::Relaxed);
        loop {
            let next = cur.saturating_add(nanos);
            match self.inner.nanos.compare_exchange_weak(
                cur,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Sets the clock to `nanos`, or leaves it where it is if that is later:
    /// the clock never goes backwards.
    pub fn set_nanos(&self, nanos: u64) {
        // Ordering: Relaxed, as in `advance_nanos`; fetch_max keeps it monotonic.
        self.inner.nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// Makes every later sleep on this clock end `nanos` later than asked,
    /// to simulate a real timer's lateness. Zero (the default) makes sleeps exact.
    pub fn set_sleep_overshoot_nanos(&self, nanos: u64) {
        // Ordering: Relaxed; a test setting, read by the sleeping thread.
        self.inner.overshoot.store(nanos, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        // Ordering: Relaxed; see `advance_nanos`.
        self.inner.nanos.load(Ordering::Relaxed)
    }

    fn sleep_nanos(&self, nanos: u64) {
        // Ordering: Relaxed; a test setting.
        let extra = self.inner.overshoot.load(Ordering::Relaxed);
        self.advance_nanos(nanos.saturating_add(extra));
    }

    /// Sleeps on a manual clock are exact: nothing to coalesce.
    fn sleep_overshoot_nanos(&self) -> u64 {
        0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_never_goes_backwards() {
        let c = ManualClock::new(100);
        c.set_nanos(50);
        assert_eq!(c.now_nanos(), 100);
        c.advance_nanos(u64::MAX);
        assert_eq!(c.now_nanos(), u64::MAX);
    }

    #[test]
    fn manual_clock_is_shared_across_threads() {
        let c = ManualClock::new(0);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.advance_nanos(1);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(c.now_nanos(), 4000);
    }

    #[test]
    fn manual_sleep_applies_overshoot() {
        let c = ManualClock::new(0);
        c.set_sleep_overshoot_nanos(250);
        c.sleep_nanos(1000);
        assert_eq!(c.now_nanos(), 1250);
    }

    #[test]
    fn monotonic_clock_moves_forward_on_every_thread() {
        let clock = MonotonicClock::new();
        let handles: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut last = 0;
                    for _ in 0..100_000 {
                        let now = clock.now_nanos();
                        assert!(now >= last);
                        last = now;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
