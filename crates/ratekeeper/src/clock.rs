//! Clocks: monotonic `u64` nanoseconds, real or manual.
//!
//! Limiters keep their schedules in nanoseconds of a [`Clock`]: the real
//! [`DefaultClock`], or in tests a [`ManualClock`] that moves only when told.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sync::{AtomicU64, Ordering};

/// The time from the reading `earlier` to the reading `later` of one clock,
/// in nanoseconds: the one rule the crate measures elapsed time by. A
/// `later` before `earlier` (a clock stepped back) is 0, never the wrapped
/// difference. (The smooth limiters keep Guava's exception: a clock that
/// wraps past `u64::MAX` carries on; see [`crate::smooth`].)
///
/// ```
/// use ratekeeper::clock::elapsed_nanos;
///
/// assert_eq!(elapsed_nanos(1_000, 1_500), 500);
/// assert_eq!(elapsed_nanos(1_500, 1_000), 0); // a step back: no time passed
/// ```
#[inline(always)]
pub fn elapsed_nanos(earlier: u64, later: u64) -> u64 {
    later.saturating_sub(earlier)
}

/// A source of monotonic time in nanoseconds, and the way to sleep on it.
///
/// `now_nanos` counts from a fixed, arbitrary origin and must never go
/// backwards, on any thread. A reading that does counts as no time passing
/// ([`elapsed_nanos`]), so a step back never lifts a limit, though it can
/// delay callers until the clock catches up. Where readings start does not
/// matter; near the end of the range, requests that could never be ready
/// are refused with
/// [`AcquireError::ScheduleExhausted`](crate::AcquireError::ScheduleExhausted).
///
/// # Examples
///
/// A frozen clock (sleeping on it would never end, so limiters on it only
/// make non-blocking decisions):
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

    /// Blocks the calling thread for about `nanos` nanoseconds; the default
    /// is [`std::thread::sleep`]. A test clock may advance itself instead.
    fn sleep_nanos(&self, nanos: u64) {
        std::thread::sleep(Duration::from_nanos(nanos));
    }

    /// How late a sleep on this clock typically ends, in nanoseconds: its
    /// sleep resolution. Blocking waits sleep this much less than they need
    /// and size their early bound from it (see
    /// [`WaitPolicy`](crate::WaitPolicy)); 0 means exact sleeps. The default
    /// is the process's estimate, [`sleep_resolution_nanos`].
    fn sleep_overshoot_nanos(&self) -> u64 {
        sleep_resolution_nanos()
    }
}

/// Typical lateness of a real sleep before any was measured: 100 µs.
pub const DEFAULT_SLEEP_OVERSHOOT_NANOS: u64 = 100_000;

/// The process's estimate of how late a sleep ends: the sleep resolution ρ
/// of the [default wait policy](crate::wait) for every real clock. It starts
/// at [`DEFAULT_SLEEP_OVERSHOOT_NANOS`], and each blocking sleep moves it
/// 1/32 of the way towards what it measured (a streaming median, so one
/// preempted sleep moves it 3 %), within 1 µs and 10 ms. One relaxed load.
///
/// ```
/// let rho = ratekeeper::wait::sleep_resolution_nanos();
/// assert!((1_000..=10_000_000).contains(&rho));
/// ```
pub fn sleep_resolution_nanos() -> u64 {
    // Ordering: Relaxed; a statistic read on its own.
    RESOLUTION.load(core::sync::atomic::Ordering::Relaxed)
}

/// The estimate behind [`sleep_resolution_nanos`]. A process-wide static,
/// so a `core` atomic rather than `crate::sync`'s (loom's atomics cannot be
/// statics; no model depends on this statistic).
pub(crate) static RESOLUTION: core::sync::atomic::AtomicU64 =
    core::sync::atomic::AtomicU64::new(DEFAULT_SLEEP_OVERSHOOT_NANOS);

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

/// A real clock on [`std::time::Instant`], as nanoseconds since the clock
/// was created: the default clock without the `quanta` feature, and
/// `TscClock`'s fallback. On Linux it reads `CLOCK_MONOTONIC` through the
/// vDSO, ordered after every earlier instruction: a reading taken after
/// observing another thread's write is never earlier than one that thread
/// took before writing. One vDSO `clock_gettime` per reading.
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

/// The clock a limiter uses when none is given: [`TscClock`] with the
/// default `quanta` feature, else [`MonotonicClock`].
#[cfg(feature = "quanta")]
pub type DefaultClock = TscClock;

/// The clock a limiter uses when none is given: `TscClock` with the
/// default `quanta` feature, else [`MonotonicClock`].
#[cfg(not(feature = "quanta"))]
pub type DefaultClock = MonotonicClock;

/// The default real clock: the CPU's time-stamp counter, read through
/// [quanta](https://docs.rs/quanta), where the kernel keeps its monotonic
/// clock on the TSC; [`std::time::Instant`] everywhere else.
///
/// Every grant reads the clock once, and a TSC read costs a fraction of a
/// vDSO `clock_gettime`. It reads the TSC only when the kernel's current
/// clocksource is `tsc` (checked once per process), so its readings are as
/// monotonic across cores as `Instant`'s. Unlike `Instant` the read is not
/// fenced: a reading taken right after observing another core's write can
/// be earlier than one that core took before writing, by up to a cache-line
/// transfer. A slot is never early, but use [`MonotonicClock`] where a
/// reading must be ordered with memory. The repository's `docs/clocks.md`
/// has the fine print.
///
/// ```
/// use ratekeeper::{Clock, TscClock};
///
/// let clock = TscClock::new();
/// let a = clock.now_nanos();
/// std::thread::sleep(std::time::Duration::from_millis(1));
/// let b = clock.now_nanos();
/// assert!(b - a >= 900_000, "{a} then {b}");
/// ```
#[cfg(feature = "quanta")]
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    source: Source,
}

#[cfg(feature = "quanta")]
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The TSC, scaled by the process's quanta clock, counted from `origin`
    /// (a raw reading).
    Tsc {
        clock: &'static quanta::Clock,
        origin: u64,
    },
    /// The OS's monotonic clock.
    Os(MonotonicClock),
}

#[cfg(feature = "quanta")]
impl TscClock {
    /// A clock whose origin is now.
    pub fn new() -> TscClock {
        let source = match tsc_clock() {
            Some(clock) => Source::Tsc {
                origin: clock.raw(),
                clock,
            },
            None => Source::Os(MonotonicClock::new()),
        };
        TscClock { source }
    }

    /// Whether this clock reads the TSC (`false`: `std::time::Instant`).
    pub fn reads_tsc(&self) -> bool {
        matches!(self.source, Source::Tsc { .. })
    }
}

/// quanta's clock, once per process, if the kernel keeps its monotonic
/// clock on the TSC.
#[cfg(feature = "quanta")]
fn tsc_clock() -> Option<&'static quanta::Clock> {
    static CLOCK: std::sync::OnceLock<Option<quanta::Clock>> = std::sync::OnceLock::new();
    CLOCK
        .get_or_init(|| kernel_clock_is_tsc().then(quanta::Clock::new))
        .as_ref()
}

/// Whether the kernel's current clocksource is the TSC (Linux on x86).
#[cfg(feature = "quanta")]
fn kernel_clock_is_tsc() -> bool {
    cfg!(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "x86")
    )) && std::fs::read_to_string(
        "/sys/devices/system/clocksource/clocksource0/current_clocksource",
    )
    .is_ok_and(|s| s.trim() == "tsc")
}

#[cfg(feature = "quanta")]
impl Default for TscClock {
    fn default() -> Self {
        TscClock::new()
    }
}

#[cfg(feature = "quanta")]
impl Clock for TscClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        match &self.source {
            Source::Tsc { clock, origin } => {
                let raw = clock.raw();
                if raw <= *origin {
                    return 0; // backwards, or no time: no time passing
                }
                clock.delta_as_nanos(*origin, raw)
            }
            Source::Os(clock) => clock.now_nanos(),
        }
    }
}

/// A clock that moves only when told to: for deterministic tests.
///
/// Clones share one time, across threads. Sleeping on it advances it by the
/// time asked (plus any set overshoot) instead of blocking, so a blocking
/// acquire returns at exactly its scheduled instant.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// let seen_by_limiter = clock.clone();
/// clock.advance(Duration::from_micros(5));
/// assert_eq!(seen_by_limiter.now_nanos(), 6_000);
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
mod tests;
