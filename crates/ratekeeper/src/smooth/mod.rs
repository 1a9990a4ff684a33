//! Guava's `RateLimiter`: [`SmoothBursty`] and [`SmoothWarmingUp`], exact to
//! Guava's own tests.
//!
//! ```
//! use ratekeeper::{RateLimiter, SmoothBursty};
//!
//! let limiter = SmoothBursty::new(100.0)?; // 100 permits per second
//! let grant = limiter.acquire(); // the first permit is free
//! assert_eq!(grant.wait_nanos(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Stored permits and "the next caller pays"
//!
//! A Guava limiter keeps `next_free`, the earliest time the next request may
//! be granted, and `stored_permits`, unused capacity carried forward from idle
//! time. A request waits only until `next_free`, then pushes `next_free` on
//! by the cost of *its own* permits: its size is charged to the caller after
//! it. So `acquire(1000)` on an idle limiter at 1 permit/s goes at once, and
//! the next caller waits 1000 s. Stored permits are spent first:
//!
//! * **SmoothBursty**: up to `max_burst_seconds × rate` permits (1 s worth by
//!   default) accumulate while idle and are free: after an idle second a
//!   burst of `rate` permits goes at once.
//! * **SmoothWarmingUp**: stored permits *cost more*. A limiter idle for the
//!   warm-up period is cold: its first permits are spaced `cold_factor`
//!   (3 by default) times the stable interval, and the spacing falls linearly
//!   to the stable interval as the stored permits are used up.
//!
//! # The warm-up trapezoid
//!
//! The time a permit costs, against the stored permits when it is taken
//! (Guava's diagram). Spending stored permits from right to left costs the
//! area under the line; idle time refills them from left to right, from 0 to
//! `max_permits` in exactly the warm-up period.
//!
//! ```text
//!   cost of one permit
//!          ^
//!   cold   |                                  +
//!   = cf×s |                               /  |
//!          |                            /     |
//!          |                         /        |   area = warm-up period W
//!          |                      /           |   (cold to threshold)
//!          |                   /              |
//!   stable |------------------+               |
//!   = s    |    area = W / 2  |               |
//!          |                  |               |
//!          +------------------+---------------+---> stored permits
//!          0              threshold       max_permits
//!
//!   threshold   = 0.5 × W / s
//!   max_permits = threshold + 2 × W / (s + cf × s)
//! ```
//!
//! Under saturating demand a cold limiter takes W to reach the threshold and
//! another W/2 to use up the rest at the stable rate. Because costs are areas,
//! a request split into parts costs the same as the whole (up to truncation to
//! whole microseconds, or nanoseconds, per call).
//!
//! # Which limiter?
//!
//! | you want | use |
//! |---|---|
//! | Guava's behaviour: a burst after idle time, no lateness reporting | [`SmoothBursty`] |
//! | a cold start: slow after idle time, full rate once warm (caches, connection pools) | [`SmoothWarmingUp`] |
//! | a schedule: every op's wait time, catch-up of lateness, one strictness knob | [`Pacer`](crate::Pacer) |
//! | either of Guava's above 100 000 permits per second | its builder's `.resolution(Resolution::Nanos)` ([`Resolution`]) |
//!
//! Guava limiters have no notion of lateness: time nobody used becomes
//! stored permits (bursty: free; warming-up: costly), never a backlog that is
//! caught up. A load generator that must not hide latency wants the Pacer.
//!
//! # Time and numbers
//!
//! Everything is Guava's arithmetic: times in whole microseconds (`i64`;
//! whole nanoseconds in the [nanosecond mode](#the-nanosecond-mode)),
//! permits in `f64`, Java's truncating `(long)` casts, Java's `Math.min`
//! (NaN wins) and a saturating add for `next_free`. One difference: Guava
//! adds a request's two costs (stored and fresh permits) in a `long` that
//! wraps, so a request costing more than 2^63 ticks was free and let the
//! next one through at once (at 5 permits/s with a huge warm-up,
//! `reserve(u32::MAX)` then `reserve(1)`); here the sum saturates, and such
//! a request takes the rest of the schedule. No vector reaches it.
//! The limiter reads the clock as microseconds (nanoseconds) elapsed since
//! it was created, by wrapping subtraction, so its schedule survives a clock
//! that wraps (Guava's `testTimeWrapping` passes), while a reading before
//! the creation reading by less than 2^63 ns is a clock that stepped back
//! and counts as no time passing (as a reading below an earlier one always
//! does: the schedule never moves back); the elapsed time saturates
//! at `i64::MAX` ticks, which in nanoseconds is 292 years after creation
//! (in microseconds, never). A [`Grant`], though, holds
//! absolute `u64` clock times that saturate: a wait that would end past the
//! clock's last value is reported, and slept, as ending there. (No real
//! clock of this crate gets there: [`MonotonicClock`](crate::MonotonicClock)
//! starts at 0 and wraps after 584 years.) Rates are any `f64 > 0`,
//! including `+∞` (every wait is 0) and `f64::MIN_POSITIVE`-like tiny values
//! (one permit then costs `i64::MAX` µs).
//!
//! **Whole microseconds cap the useful rate.** In the default mode,
//! [`Resolution::Micros`] (Guava's arithmetic, the reference: Guava's tests
//! and the conformance vectors pin it), each reservation is charged
//! `(long)(n × 1e6 / rate)` µs, truncated per call, as in Guava. Above
//! 1 000 000 permits per second a one-permit request therefore costs 0 µs
//! and is never throttled. Below, a single permit is charged up to 1 µs
//! too little: at most 10 % of its cost at rates up to 100 000 per second,
//! up to half of it between 100 000 and 1 000 000 (1.9 µs is charged 1 µs).
//! Requests of many permits at once are charged within 1 µs per call: a
//! [`BatchHandle`](crate::BatchHandle)'s leases of `k` permits at 1e7/s cost
//! `floor(k / 10)` µs, up to 1 µs less than `k` permits' 0.1 µs each, so
//! they run over the rate, more with more threads (`BENCHMARKS.md`,
//! `bench_report`'s `smooth-bursty-batched`). For rates above
//! 100 000 per second use the nanosecond mode, or a limiter with a
//! nanosecond schedule ([`Pacer`](crate::Pacer),
//! [`TokenPool`](crate::TokenPool), [`RefillLimiter`](crate::RefillLimiter)).
//! [`SmoothBursty::effective_rate`] (and [`SmoothWarmingUp`]'s) reports
//! the rate one-permit calls get, `f64::INFINITY` where they are not
//! limited at all.
//!
//! ## The nanosecond mode
//!
//! With [`Resolution::Nanos`] (`.resolution(Resolution::Nanos)` on either
//! builder) a limiter keeps `next_free` and charges every cost in whole
//! nanoseconds, `(long)(n × 1e9 / rate)` ns per call, and is Guava's
//! algorithm otherwise: stored permits, the warm-up trapezoid (its period
//! kept to the nanosecond), `tryAcquire`, rate changes and cancels. A single
//! permit is charged less than 1 ns too little, at most `rate / 1e9` of its
//! cost: 0.01 % at 100 000 per second, 0.1 % at 1 000 000, nothing where
//! the interval is a whole number of nanoseconds (1e7 per second: 100 ns).
//! Above 1e9 per second a permit costs 0 ns and the cap is back.
//! [`Resolution::for_rate`] picks the nanosecond mode above
//! [`Resolution::MICROS_MAX_RATE`] (100 000 per second), as the
//! `ratekeeper` CLI does.
//!
//! ```
//! use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
//! use ratekeeper::smooth::Resolution;
//!
//! let clock = ManualClock::new(0);
//! let limiter = SmoothBursty::builder(1e7)
//!     .resolution(Resolution::Nanos)
//!     .build_with_clock(clock.clone())?;
//! limiter.reserve(1, None)?;
//! assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 100); // Guava's µs: 0
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What it costs: the same arithmetic on the same 128-bit word, in another
//! unit. Its schedule reaches 292 years ahead (`i64::MAX` ns; Guava's,
//! 292 000 years): a reservation beyond that saturates there. At an
//! infinite rate the default mode writes the word once per microsecond (the
//! reservations in between change nothing, see [Concurrency](#concurrency)),
//! the nanosecond mode at every new clock reading, so unthrottled callers on
//! several threads contend for it more.
//!
//! A [`Grant`]'s `delay_nanos()` is exactly Guava's wait (what
//! its `acquire` returns, times 1000; in the nanosecond mode, the same wait
//! in nanoseconds). Its `scheduled` and `ready` times are
//! both the moment Guava lets the request go (`next_free` before this
//! request, or now), so `wait_nanos()` after waiting is only how late the
//! caller was let go: Guava has no schedule to be late against.
//!
//! # Cancelling a reservation
//!
//! Guava has no cancel: a request's cost is charged to the caller after it,
//! so a reservation can be taken back only while no later reservation built
//! on it. [`cancel`](RateLimiter::cancel) gives back the limiter's **latest**
//! reservation **exactly**: the state returns, bit for bit, to what it was
//! before the reservation (`next_free` back to the moment it was let go at,
//! the stored permits it spent back in store), so the next reservation gets
//! the time the cancelled one had and pays what it would have paid.
//! Reservations given back newest first all come back.
//!
//! ```
//! use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
//!
//! let clock = ManualClock::new(0);
//! let limiter = SmoothBursty::builder(10.0).build_with_clock(clock.clone())?;
//! limiter.reserve(1, None)?; // free: the next caller pays
//! let b = limiter.reserve(2, None)?; // waits 100 ms, and charges 200 ms on
//! assert!(limiter.cancel(&b));
//! assert!(!limiter.cancel(&b), "given back already");
//! let c = limiter.reserve(1, None)?;
//! assert_eq!(c.ready_nanos(), b.ready_nanos()); // b's time; the next pays 100 ms
//! assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 200_000_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A reservation with a later one still standing cannot go back to the
//! state (the later one's wait was computed from the `next_free` this one
//! left), nor can a warming-up one that spent the last stored permits.
//! `cancel` then keeps the grant for the next reservation of the same
//! number of permits, which gets its ready time (started at its own clock
//! reading) instead of paying for a new one: the time is used once, by one
//! caller, so nothing is admitted that the state did not allow. A kept
//! grant whose ready time passes first is dropped (with many async
//! waiters, the one that gives up is rarely the latest).
//!
//! `cancel` returns `false`, and changes nothing, for
//!
//! * a grant that could go at once: its reservation may have banked idle
//!   time into stored permits first, and what the state was before that is
//!   not in the grant (it is due in any case);
//! * a grant already cancelled (given back or kept) or handed on, whose
//!   ready time has passed, or reserved before a rate change.
//!
//! A grant from another limiter, or one whose op already went, must not be
//! cancelled: the limiter cannot always tell it from one of its own still
//! waiting, and would hand its time out again.
//!
//! The latest reservation is recognised by value: the state before it,
//! rebuilt from the grant, must give exactly the current state when the
//! reservation is computed again. A reservation that left the state as it
//! found it (a permit costing under 1 µs, in nanoseconds under 1 ns, from an
//! empty store, or a schedule already at its end, 292 000 years out, in
//! nanoseconds 292 years) leaves no trace, so a reservation before it can
//! still be given back; it keeps its time. And where a permit costs 3 µs or
//! less (above about 300 000 permits per second; in nanoseconds 3 ns, above
//! 3e8 per second) and whole units truncate it, a later reservation can
//! leave a state the cancelled one alone could have produced; the cancel
//! then gives back the cancelled reservation's permits and cost from the
//! current state (later reservations keep their times, as in Go), exact up
//! to that truncation.
//!
//! A cancel retires the state the way a rate change does (under the change
//! mutex, one allocation); from the first cancel or rate change on,
//! reservations reach the state through the swappable core, a few
//! nanoseconds more each.
//!
//! # Concurrency
//!
//! Guava holds a mutex around every call. Here a reservation is lock-free:
//! the two numbers it changes (stored permits and `next_free`) are one
//! 128-bit word, read and replaced with one compare-exchange
//! (`cmpxchg16b` on x86_64). A reservation that leaves both as they were
//! writes nothing (at an infinite rate, every reservation after the first
//! in a clock tick), so unthrottled callers share the word's cache line
//! instead of moving it between cores. A rate change, which also changes the
//! parameters, retires the whole state (freezing its word forever) and
//! publishes a new one under a mutex, so no reservation can be computed with
//! one rate and committed under another. Every run therefore equals Guava's
//! serial run, in the order of the commits (the argument is on the
//! implementation's `Smooth` type); `tests/props/smooth.rs` checks
//! concurrent runs against a serial model, and `tests/loom/smooth.rs` rate
//! changes racing reservations. Under contention the compare-exchange
//! outruns a mutex; see `BENCHMARKS.md`.
//!
//! # Differences from Guava
//!
//! * **A warm-up period of 0** makes Guava's cool-down interval 0/0 = NaN:
//!   after any idle time its stored permits become NaN and it never throttles
//!   again (spec §2.10). Here a zero warm-up period is no warm-up: the
//!   limiter spaces permits at the stable interval and stores none, also
//!   across a change to or from an infinite rate.
//! * The cold factor must be a finite number of at least 1.0 (an infinite one
//!   would put the whole warm-up on the first permit) and the burst seconds a
//!   finite number of at least 0 (Guava does not check either; its public
//!   factories fix them at 3.0 and 1.0). A burst of 0 stores nothing, even at
//!   an infinite rate (Guava's 0 × ∞ would be NaN).
//! * Zero permits is [`AcquireError::ZeroPermits`](crate::AcquireError); a
//!   negative count cannot be expressed (`u32`).
//! * **A wait that ends past a clock's wrap.** Guava's `testTimeWrapping`
//!   (the legacy vector) acquires one permit a second on a ticker that wraps
//!   a second in, and sleeps R0.00, R1.00, R1.00, R1.00. The schedule here
//!   carries on across the wrap as Guava's does (elapsed time by wrapping
//!   subtraction, see [Time and numbers](#time-and-numbers): refusals and
//!   the backlog report the true wait), but a [`Grant`] holds absolute `u64`
//!   clock times, which saturate: a grant whose ready time falls past
//!   `u64::MAX` is ready at `u64::MAX`. Once the clock reads `u64::MAX`
//!   such a grant carries no wait, so the same run sleeps R0.00, R1.00,
//!   R0.00, R0.00: those requests go through at once, over the rate, while
//!   the schedule still counts them. Carrying the wait would take grant
//!   times that wrap, which every waiter would have to read that way. No
//!   clock of this crate wraps in practice
//!   ([`MonotonicClock`](crate::MonotonicClock) starts at 0 and wraps after
//!   584 years).

use core::fmt;
use std::time::Duration;

use crate::clock::{Clock, DefaultClock};
use crate::error::{ConfigError, ConfigErrorKind};
use crate::internal::handoff::Handoff;
use crate::limiter::{AcquireError, Grant, RateLimiter, Recovery, WaitStats};
use crate::spec::RateSpec;
use crossbeam_utils::CachePadded;

use crate::internal::cancel::{CancelWindow, Epoch};
use crate::sync::{lock, AtomicU128, Mutex, Ordering, Swap};
use crate::wait::WaitPolicy;

pub mod compat;
pub(crate) mod keyed;

/// Why a smooth limiter could not be built or its rate changed.
///
/// # Examples
///
/// ```
/// use ratekeeper::smooth::{SmoothError, SmoothBursty};
///
/// let err = SmoothBursty::new(0.0).unwrap_err();
/// assert_eq!(err.downcast_ref(), Some(&SmoothError::Rate(0.0)));
/// assert_eq!(SmoothError::Rate(-1.0).to_string(), "rate must be positive, got -1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SmoothError {
    /// The rate is not greater than 0 (zero, negative or NaN).
    #[error("rate must be positive, got {0}")]
    Rate(f64),
    /// A negative warm-up period, in microseconds.
    #[error("warm-up period must not be negative, got {0} µs")]
    WarmupNegative(i64),
    /// A cold factor below 1.0, NaN or infinite.
    #[error("cold factor must be finite and at least 1.0, got {0}")]
    ColdFactor(f64),
    /// Burst seconds that are negative, NaN or infinite.
    #[error("max burst seconds must be finite and at least 0, got {0}")]
    MaxBurstSeconds(f64),
}

impl From<SmoothError> for ConfigError {
    fn from(e: SmoothError) -> Self {
        let kind = match e {
            SmoothError::Rate(_) => ConfigErrorKind::Rate,
            SmoothError::WarmupNegative(_) => ConfigErrorKind::WarmUp,
            SmoothError::ColdFactor(_) => ConfigErrorKind::ColdFactor,
            SmoothError::MaxBurstSeconds(_) => ConfigErrorKind::MaxBurst,
        };
        ConfigError::new(kind, e)
    }
}

fn check_rate(rate: f64) -> Result<f64, SmoothError> {
    // `!(r > 0)`: rejects 0, negatives and NaN; accepts +inf and subnormals.
    if rate > 0.0 {
        Ok(rate)
    } else {
        Err(SmoothError::Rate(rate))
    }
}

/// Java's `Math.min` for doubles: NaN if either is NaN.
fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// Java's `(long)` cast of a double (Rust's `as` does the same: truncation,
/// NaN to 0, saturation).
fn long(x: f64) -> i64 {
    x as i64
}

/// A refusal reporting the caller's own maximum wait.
fn with_max_wait(e: AcquireError, max_wait: Duration) -> AcquireError {
    match e {
        AcquireError::WouldWait { wait, .. } => AcquireError::WouldWait { wait, max_wait },
        e => e,
    }
}

fn duration_micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn duration_nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// How finely a smooth limiter keeps its schedule: the unit of `next_free`
/// and of every cost it charges.
///
/// [`Micros`](Resolution::Micros), the default, is Guava's arithmetic
/// exactly (Guava's tests and the conformance vectors pin it): a
/// reservation of `n` permits costs `(long)(n × 1e6 / rate)` whole
/// microseconds, truncated per call, so above 1 000 000 permits per second
/// a single permit costs nothing and the limiter does not limit, and between
/// 100 000 and 1 000 000 it under-charges by up to half.
/// [`Nanos`](Resolution::Nanos) is the same algorithm in whole nanoseconds:
/// `(long)(n × 1e9 / rate)` ns per call, so a single permit is charged less
/// than 1 ns too little (at most `rate / 1e9` of its cost: 0.01 % at
/// 100 000 per second, 0.1 % at 1 000 000, none where `1e9 / rate` is whole,
/// such as 1e7). [`Resolution::for_rate`] picks one by
/// [`Resolution::MICROS_MAX_RATE`].
///
/// # Examples
///
/// At 2 000 000 permits per second a permit costs 0.5 µs: Guava's
/// microseconds charge it 0 and never throttle, nanoseconds space permits
/// 500 ns apart.
///
/// ```
/// use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
/// use ratekeeper::smooth::Resolution;
///
/// let clock = ManualClock::new(0);
/// let guava = SmoothBursty::builder(2e6).build_with_clock(clock.clone())?;
/// let nanos = SmoothBursty::builder(2e6)
///     .resolution(Resolution::Nanos)
///     .build_with_clock(clock.clone())?;
/// for _ in 0..3 {
///     assert_eq!(guava.reserve(1, None)?.delay_nanos(), 0);
/// }
/// let delays: Vec<u64> = (0..3)
///     .map(|_| nanos.reserve(1, None).map(|g| g.delay_nanos()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(delays, [0, 500, 1000]);
/// assert_eq!(Resolution::for_rate(2e6), Resolution::Nanos);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Resolution {
    /// Guava's whole microseconds: the reference mode, and the default.
    #[default]
    Micros,
    /// Whole nanoseconds: for rates above [`Resolution::MICROS_MAX_RATE`].
    Nanos,
}

impl Resolution {
    /// The highest rate, in permits per second, at which
    /// [`Resolution::for_rate`] keeps Guava's whole microseconds: 100 000,
    /// where one permit costs 10 µs and truncating it to whole microseconds
    /// loses under 1 µs of it (under 10 %; above, up to half of it, and
    /// above 1 000 000 all of it).
    pub const MICROS_MAX_RATE: f64 = 100_000.0;

    /// [`Micros`](Resolution::Micros) at rates up to
    /// [`MICROS_MAX_RATE`](Resolution::MICROS_MAX_RATE) (Guava's arithmetic),
    /// [`Nanos`](Resolution::Nanos) above (and for NaN, which no limiter
    /// accepts anyway).
    ///
    /// ```
    /// use ratekeeper::smooth::Resolution;
    ///
    /// assert_eq!(Resolution::for_rate(100_000.0), Resolution::Micros);
    /// assert_eq!(Resolution::for_rate(100_001.0), Resolution::Nanos);
    /// assert_eq!(Resolution::for_rate(f64::INFINITY), Resolution::Nanos);
    /// ```
    pub fn for_rate(permits_per_second: f64) -> Resolution {
        if permits_per_second <= Resolution::MICROS_MAX_RATE {
            Resolution::Micros
        } else {
            Resolution::Nanos
        }
    }

    /// Ticks (units of the schedule) per second.
    fn per_second(self) -> f64 {
        match self {
            Resolution::Micros => 1e6,
            Resolution::Nanos => 1e9,
        }
    }

    /// Nanoseconds to ticks, truncating.
    #[inline(always)]
    fn ticks(self, nanos: u64) -> u64 {
        match self {
            Resolution::Micros => nanos / 1000,
            Resolution::Nanos => nanos,
        }
    }

    /// Ticks to nanoseconds, saturating.
    #[inline(always)]
    fn nanos(self, ticks: u64) -> u64 {
        match self {
            Resolution::Micros => ticks.saturating_mul(1000),
            Resolution::Nanos => ticks,
        }
    }

    /// Ticks as a duration (exact).
    fn duration(self, ticks: u64) -> Duration {
        match self {
            Resolution::Micros => Duration::from_micros(ticks),
            Resolution::Nanos => Duration::from_nanos(ticks),
        }
    }

    /// A duration in ticks, truncating and saturating.
    fn duration_ticks(self, d: Duration) -> i64 {
        match self {
            Resolution::Micros => duration_micros(d),
            Resolution::Nanos => duration_nanos(d),
        }
    }

    /// Whole microseconds in ticks, saturating.
    fn micros_ticks(self, micros: i64) -> i64 {
        match self {
            Resolution::Micros => micros,
            Resolution::Nanos => micros.saturating_mul(1000),
        }
    }
}

/// The refusal of a try whose wait (`next_free` − `now`, in ticks of `res`)
/// exceeds `timeout`. The caller's own `max_wait` replaces the one given
/// here, which is the timeout in ticks.
#[cold]
fn would_wait(res: Resolution, next_free: i64, now: i64, timeout: i64) -> AcquireError {
    let wait = next_free.saturating_sub(now).max(0) as u64;
    AcquireError::WouldWait {
        wait: res.duration(wait),
        max_wait: res.duration(timeout.max(0) as u64),
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Bursty {
        max_burst_seconds: f64,
    },
    WarmingUp {
        /// The warm-up period in ticks.
        warmup: i64,
        cold_factor: f64,
        threshold: f64,
        slope: f64,
    },
}

/// Guava's `SmoothRateLimiter` state, with times in ticks of `res`
/// (Guava's are microseconds).
#[derive(Debug, Clone, Copy)]
struct State {
    stored_permits: f64,
    max_permits: f64,
    /// Ticks per permit.
    stable_interval: f64,
    /// Ticks since creation.
    next_free: i64,
    kind: Kind,
    res: Resolution,
}

impl State {
    fn new(kind: Kind, res: Resolution) -> State {
        State {
            stored_permits: 0.0,
            max_permits: 0.0,
            stable_interval: 0.0,
            next_free: 0,
            kind,
            res,
        }
    }

    #[inline(always)]
    fn cool_down_interval(&self) -> f64 {
        match self.kind {
            Kind::Bursty { .. } => self.stable_interval,
            // A zero warm-up period is no warm-up (Guava: 0/0 = NaN).
            Kind::WarmingUp { warmup: 0, .. } => self.stable_interval,
            Kind::WarmingUp { warmup, .. } => warmup as f64 / self.max_permits,
        }
    }

    #[inline(always)]
    fn resync(&mut self, now: i64) {
        if now > self.next_free {
            // Java's long subtraction; next_free is never negative (costs
            // are summed saturating), so it cannot wrap.
            let new_permits = now.wrapping_sub(self.next_free) as f64 / self.cool_down_interval();
            self.stored_permits = java_min(self.max_permits, self.stored_permits + new_permits);
            self.next_free = now;
        }
    }

    fn set_rate(&mut self, rate: f64, now: i64) {
        self.resync(now);
        let stable = self.res.per_second() / rate;
        self.stable_interval = stable;
        let old = self.max_permits;
        match &mut self.kind {
            Kind::Bursty { max_burst_seconds } => {
                // No burst stores nothing, even at an infinite rate (0 × ∞
                // would be NaN, and a NaN store never throttles again).
                self.max_permits = if *max_burst_seconds == 0.0 {
                    0.0
                } else {
                    *max_burst_seconds * rate
                };
                self.stored_permits = if old == f64::INFINITY {
                    self.max_permits
                } else if old == 0.0 {
                    0.0
                } else {
                    self.stored_permits * self.max_permits / old
                };
            }
            Kind::WarmingUp {
                warmup,
                cold_factor,
                threshold,
                slope,
            } => {
                let w = *warmup as f64;
                let cold = stable * *cold_factor;
                if *warmup == 0 {
                    // No warm-up: nothing stored, whatever the rate (Guava's
                    // formulas give 0/0 = NaN at an infinite rate).
                    *threshold = 0.0;
                    self.max_permits = 0.0;
                    *slope = 0.0;
                } else {
                    *threshold = 0.5 * w / stable;
                    self.max_permits = *threshold + 2.0 * w / (stable + cold);
                    *slope = (cold - stable) / (self.max_permits - *threshold);
                }
                self.stored_permits = if old == f64::INFINITY {
                    0.0
                } else if old == 0.0 {
                    self.max_permits
                } else {
                    self.stored_permits * self.max_permits / old
                };
            }
        }
    }

    #[inline(always)]
    fn stored_permits_to_wait_time(&self, stored: f64, mut to_take: f64) -> i64 {
        match self.kind {
            Kind::Bursty { .. } => 0,
            Kind::WarmingUp {
                threshold, slope, ..
            } => {
                let s = self.stable_interval;
                let f = |p: f64| s + p * slope;
                let above = stored - threshold;
                let mut ticks = 0i64;
                if above > 0.0 {
                    let t = java_min(above, to_take);
                    ticks = long(t * (f(above) + f(above - t)) / 2.0);
                    to_take -= t;
                }
                // Guava's long sum wraps; saturating, a huge cost stays huge.
                ticks.saturating_add(long(s * to_take))
            }
        }
    }

    /// Guava's `reserveEarliestAvailable`: the moment this request may go.
    #[inline(always)]
    fn reserve(&mut self, permits: u32, now: i64) -> i64 {
        self.resync(now);
        let moment = self.next_free;
        let n = f64::from(permits);
        let spend = java_min(n, self.stored_permits);
        let fresh = n - spend;
        // Guava sums the two costs in a `long` that wraps: a request costing
        // more than 2^63 ticks in all would then be free, and let the next
        // one through at once (issue 16). Saturating, it costs the rest of
        // the schedule.
        let cost = self
            .stored_permits_to_wait_time(self.stored_permits, spend)
            .saturating_add(long(fresh * self.stable_interval));
        self.next_free = self.next_free.saturating_add(cost);
        self.stored_permits -= spend;
        moment
    }
}

/// Guava's step on the state `st` at `now` (ticks): with a `timeout`,
/// `tryAcquire`'s canAcquire first (a refusal changes nothing, and skips
/// the resync); then the reservation. The moment the request may go and
/// the state word after it.
#[inline(always)]
fn step(
    mut st: State,
    permits: u32,
    timeout: Option<i64>,
    now: i64,
) -> Result<(i64, u128), AcquireError> {
    if let Some(timeout) = timeout {
        if st.next_free.saturating_sub(timeout) > now {
            return Err(would_wait(st.res, st.next_free, now, timeout));
        }
    }
    let moment = st.reserve(permits, now);
    Ok((moment, pack(st.stored_permits, st.next_free)))
}

/// The grant of a request due at `moment`, decided at `now` (ticks of
/// `res`; the clock reading `now_nanos`): after the resync `moment >= now`,
/// so scheduled and ready alike, `moment - now` ticks after the reading.
#[inline(always)]
fn grant_at(res: Resolution, now_nanos: u64, now: i64, moment: i64, permits: u32) -> Grant {
    let wait = moment.saturating_sub(now).max(0) as u64;
    let ready = now_nanos.saturating_add(res.nanos(wait));
    Grant::new(ready, ready, now_nanos, permits)
}

/// `params` with the two numbers a reservation changes read from `word`.
#[inline(always)]
fn unpack(params: &State, word: u128) -> State {
    State {
        stored_permits: f64::from_bits((word >> 64) as u64),
        next_free: word as u64 as i64,
        ..*params
    }
}

/// Packs the two words a reservation changes (`stored_permits`, `next_free`)
/// into one 128-bit value.
#[inline(always)]
fn pack(stored_permits: f64, next_free: i64) -> u128 {
    (u128::from(stored_permits.to_bits()) << 64) | u128::from(next_free as u64)
}

/// The word of a retired [`Core`]: no state packs to it, because its stored
/// permits would be a NaN with an all-ones payload, and NaNs that arithmetic
/// makes carry the default payload (no NaN with a payload enters: rates,
/// burst seconds and cold factors are checked not to be NaN).
const FROZEN: u128 = u128::MAX;

/// One rate's parameters together with the state they apply to.
///
/// The parameters never change: a rate change retires the whole core
/// (freezing its word forever) and publishes a new one, so a reservation
/// computed with one core's parameters can only ever commit to that core's
/// word.
#[derive(Debug)]
struct Core {
    /// The epoch of this core: every new core (a rate change, a cancel)
    /// moves it on, in steps of two, so the low bit of a grant's tag is free
    /// for [`NONE_STORED`].
    epoch: Epoch,
    /// `pack(stored_permits, next_free)`, or [`FROZEN`] once retired.
    ///
    /// Ordering: loads are `Acquire` and successful compare-exchanges
    /// `AcqRel`, so a thread that sees a state also sees (happens after) the
    /// clock reading the state was computed from; a reservation reads the
    /// clock *after* loading the state, so it never computes from a state
    /// newer than its own clock reading. The word carries all the state: no
    /// other memory is published through it.
    word: CachePadded<AtomicU128>,
    /// `max_permits`, `stable_interval` and the kind; its own
    /// `stored_permits`/`next_free` fields are unused (the word has them).
    params: State,
}

/// The tag bit saying that the reservation found no stored permits (the
/// state it started from is then known exactly from the grant; see
/// [`Smooth::give_back`]).
const NONE_STORED: u32 = 1;

impl Core {
    fn new(state: State, epoch: Epoch) -> Core {
        Core {
            epoch,
            word: CachePadded::new(AtomicU128::new(pack(state.stored_permits, state.next_free))),
            params: state,
        }
    }

    /// The tag of a grant committed to this core from `word`.
    #[inline(always)]
    fn tag(&self, word: u128) -> u32 {
        self.epoch.tag() | u32::from((word >> 64) as u64 == 0)
    }

    /// How many cores (cancels and rate changes) ago a grant tagged `tag`
    /// was committed.
    fn age(&self, tag: u32) -> u32 {
        self.epoch.age(tag & !NONE_STORED) / 2
    }

    /// The full state for a (live) word.
    #[inline(always)]
    fn state(&self, word: u128) -> State {
        unpack(&self.params, word)
    }
}

/// The shared core of both limiters.
///
/// # Lock-free reservations, and why they equal some serial order
///
/// A reservation loads the current [`Core`] (the inline first one until a
/// rate change retires it) and its word, reads the clock, computes Guava's
/// reservation (or refusal) from that state, and commits with one
/// compare-exchange of the word, retrying (with a new clock reading) from
/// the value it finds if another commit came first; a reservation that
/// leaves the state as it found it writes nothing. A rate change takes the
/// `change` mutex,
/// swaps the current core's word to [`FROZEN`] (getting the latest state and
/// making every later commit to that core fail), computes Guava's `setRate`
/// from it, and publishes a new core. A reservation that finds its core
/// frozen waits for the mutex (the change is publishing) and starts over on
/// the new core.
///
/// A cancel is a change too: under the mutex it compare-exchanges the word
/// the grant's reservation committed (recomputed from the state before it,
/// see [`Smooth::give_back`]) to [`FROZEN`], and publishes a new core holding
/// the state before the reservation. In commit order it is the
/// reservation's inverse, applied right after it; every run with cancels
/// therefore equals Guava's serial run of the reservations that were not
/// cancelled. Each core has its own epoch, which grants carry as their tag:
/// a grant of an earlier core is given back only newest first (see
/// `internal/cancel.rs`), so no grant is given back twice, even if a later
/// reservation committed the very same word again.
///
/// Invariants:
///
/// 1. A core's word only ever goes from one state to the next by a whole
///    reservation computed from exactly that state with exactly that core's
///    parameters (the compare-exchange), and once [`FROZEN`] never changes
///    again: no reservation can be lost, applied twice, or applied across a
///    rate change (no ABA: a retired word is never reused).
/// 2. Commits therefore happen in one total order (the word's modification
///    order, rate changes included), and each is Guava's step applied to the
///    state its predecessor left. Each step reads the clock after loading
///    the state it is computed from, hence no earlier than the readings of
///    the commits before it. A reservation that would leave the word bit
///    for bit unchanged writes nothing: it takes effect at its load, right
///    after the commit it loaded. That needs `now ≤ next_free`, and a step
///    at any time up to `next_free` does the same thing (the resync is a
///    no-op; only the caller's own wait, measured from its own reading,
///    differs), so it too is Guava's step there. (At an infinite rate every
///    reservation but the first in each clock tick is of this kind: they
///    share the cache line read-only, and the word is written once a tick.)
///    So every run equals Guava's serial run, under its lock, in commit
///    order, and no grant reports a wait that only a stale clock reading
///    would give it.
/// 3. A refusal (a try whose wait exceeds its timeout) changes nothing and is
///    Guava's decision on the state it loaded, at a reading taken after that
///    load.
struct Smooth<C> {
    /// The core the limiter was built with, inline: until the first rate
    /// change, a reservation reaches its state without going through `later`.
    /// The first change retires it for good.
    first: Core,
    /// The current core once `first` is retired (until then, a frozen
    /// placeholder). Loading it costs a little (ArcSwap's thread-local debt
    /// slot), so limiters whose rate never changes never pay it.
    later: Swap<Core>,
    /// Serialises rate changes and cancels; reservations only wait on it
    /// while a change is publishing. It guards which grants made before the
    /// latest cancel may still be given back (the cuts are `next_free`
    /// values).
    change: Mutex<CancelWindow<i64>>,
    /// Cancelled grants that could not be given back, for the next callers
    /// (see [Cancelling a reservation](self#cancelling-a-reservation)).
    handoff: Handoff,
    created: u64,
    /// The unit of the schedule (the state's own `res`, kept here too so
    /// that a clock reading is converted before the state is at hand).
    res: Resolution,
    clock: C,
    policy: WaitPolicy,
}

impl<C> Smooth<C> {
    /// Runs `f` on the current core and a live word of it, waiting out a
    /// rate change in progress; `f` returns `None` when it found the core
    /// retired under it, and is then run again on the successor.
    #[inline(always)]
    fn with_core<R>(&self, mut f: impl FnMut(&Core, u128) -> Option<R>) -> R {
        // Ordering: Acquire, see `Core::word`.
        let word = self.first.word.load(Ordering::Acquire);
        if word != FROZEN {
            if let Some(r) = f(&self.first, word) {
                return r;
            }
        }
        self.with_later_core(f)
    }

    /// [`Smooth::with_core`] after the first rate change.
    #[inline(never)]
    fn with_later_core<R>(&self, mut f: impl FnMut(&Core, u128) -> Option<R>) -> R {
        loop {
            let core = self.later.load();
            // Ordering: Acquire, see `Core::word`.
            let word = core.word.load(Ordering::Acquire);
            if word != FROZEN {
                if let Some(r) = f(&core, word) {
                    return r;
                }
            }
            drop(core);
            // The change that froze it holds `change` until its successor
            // is published.
            drop(lock(&self.change));
        }
    }

    /// The current state.
    fn snapshot(&self) -> State {
        self.with_core(|core, word| Some(core.state(word)))
    }
}

impl<C: Clock> Smooth<C> {
    fn new(kind: Kind, res: Resolution, rate: f64, clock: C, policy: WaitPolicy) -> Smooth<C> {
        let created = clock.now_nanos();
        let mut state = State::new(kind, res);
        state.set_rate(rate, 0);
        let placeholder = Core::new(state, Epoch::FIRST);
        // Ordering: Relaxed; nobody else has the limiter yet.
        placeholder.word.store(FROZEN, Ordering::Relaxed);
        Smooth {
            first: Core::new(state, Epoch::FIRST),
            later: Swap::new(placeholder),
            change: Mutex::new(CancelWindow::new(0)),
            handoff: Handoff::new(Epoch::FIRST.tag()),
            created,
            res,
            clock,
            policy,
        }
    }

    /// Clock nanos now, and ticks since creation (wrapping).
    #[inline(always)]
    fn read(&self) -> (u64, i64) {
        let now = self.clock.now_nanos();
        (now, self.ticks_since_created(now))
    }

    /// Ticks from creation to the clock reading `nanos`, saturating at
    /// `i64::MAX` (in nanoseconds, 292 years after creation; in microseconds
    /// never). A reading below the creation reading is either a clock that
    /// wrapped past `u64::MAX` (Guava's `testTimeWrapping`: the schedule
    /// carries on by wrapping subtraction) or one that stepped back, such as
    /// a TSC read on another core: a wrap when the wrapped difference is
    /// under 2^63 ns, else a step back, which is no time passing (0 ticks,
    /// not the ~584 years the unsigned difference would be).
    #[inline(always)]
    fn ticks_since_created(&self, nanos: u64) -> i64 {
        let elapsed = nanos.wrapping_sub(self.created);
        if nanos < self.created && elapsed > i64::MAX as u64 {
            return 0; // stepped back before creation
        }
        i64::try_from(self.res.ticks(elapsed)).unwrap_or(i64::MAX)
    }

    #[inline(always)]
    fn grant(&self, now_nanos: u64, now: i64, moment: i64, permits: u32) -> Grant {
        grant_at(self.res, now_nanos, now, moment, permits)
    }

    fn set_rate(&self, rate: f64) -> Result<(), SmoothError> {
        let rate = check_rate(rate)?;
        let mut window = lock(&self.change);
        // Retire the current core. Ordering: AcqRel; the swap returns the
        // last committed state (Acquire: and its clock reading happened
        // before ours, below). Under `change`, the current core is `first`
        // until it is frozen, then the one `later` holds.
        let retire = |core: &Core| {
            (
                core.state(core.word.swap(FROZEN, Ordering::AcqRel)),
                core.epoch,
            )
        };
        let (mut st, epoch) = if self.first.word.load(Ordering::Acquire) != FROZEN {
            retire(&self.first)
        } else {
            let core = self.later.load();
            retire(&core)
        };
        let (_, now) = self.read();
        st.set_rate(rate, now);
        // Publishing is ordered by the swap cell (Release/Acquire inside
        // ArcSwap): whoever loads the new core sees its parameters and word.
        let epoch = epoch.next().next();
        self.later.store(Core::new(st, epoch));
        // Grants of the old rate are never given back, nor handed on.
        window.reset();
        self.handoff.reset(epoch.tag());
        Ok(())
    }

    /// [`RateLimiter::cancel`]: gives back the latest reservation if the
    /// state it started from is known exactly; see
    /// [Cancelling a reservation](self#cancelling-a-reservation).
    ///
    /// A reservation that waited (`moment > now`) found `next_free` at
    /// `moment` and did not resync, so the state it started from is
    /// `(s0, moment)`, where `s0` is the stored permits it found: `s1 + n`
    /// if it left `s1 > 0` (it spent `n`; exact below 2^53), and 0 if its
    /// tag says it found none. Computing Guava's reservation again from that
    /// state must give exactly the current word and the grant's moment;
    /// then the core is retired and a new one published with the state
    /// before the grant.
    fn give_back(&self, grant: &Grant) -> bool {
        let mut window = lock(&self.change);
        let now = self.clock.now_nanos();
        // Under `change`, the current core is `first` until it is frozen.
        if self.first.word.load(Ordering::Acquire) != FROZEN {
            self.cancel_on(&self.first, grant, now, &mut window)
        } else {
            let core = self.later.load();
            self.cancel_on(&core, grant, now, &mut window)
        }
    }

    /// [`Smooth::give_back`] on the current `core`, under `change`: back to
    /// the state if it is the latest reservation, else to the handoff.
    fn cancel_on(
        &self,
        core: &Core,
        grant: &Grant,
        now: u64,
        window: &mut CancelWindow<i64>,
    ) -> bool {
        // A grant that could go at once is due: nothing to hand on.
        let stashable = |reset_tag| {
            grant.ready_nanos() > grant.started_nanos()
                && grant
                    .claim()
                    .is_some_and(|t| Handoff::issued_since(t, reset_tag, |t| core.age(t)))
        };
        self.handoff.cancel(grant, now, stashable, || {
            let Some(tag) = grant.claim() else {
                return false;
            };
            let (ready, started) = (grant.ready_nanos(), grant.started_nanos());
            // Ready when decided (it may have resynced: the state before it
            // is not in the grant), or a wait that saturated.
            if ready <= started || ready == u64::MAX {
                return false;
            }
            self.give_back_on(core, grant, tag, window)
        })
    }

    fn give_back_on(
        &self,
        core: &Core,
        grant: &Grant,
        tag: u32,
        window: &mut CancelWindow<i64>,
    ) -> bool {
        let (ready, started) = (grant.ready_nanos(), grant.started_nanos());
        let permits = grant.permits();
        // The reservation's clock reading, as `read` made it, and its moment.
        let now = self.ticks_since_created(started);
        let Some(moment) = i64::try_from(self.res.ticks(ready - started))
            .ok()
            .and_then(|wait| now.checked_add(wait))
        else {
            return false;
        };
        // Ordering: Acquire, see `Core::word`.
        let word = core.word.load(Ordering::Acquire);
        if word == FROZEN {
            return false;
        }
        let after = core.state(word);
        let s1 = after.stored_permits;
        let n = f64::from(permits);
        let s0 = if s1 > 0.0 {
            s1 + n
        } else if s1.to_bits() == 0 && tag & NONE_STORED != 0 {
            0.0
        } else {
            return false; // it spent the last stored permits: how many is lost
        };
        if s0 >= 9_007_199_254_740_992.0 {
            return false; // 2^53: `s0 − n` may have rounded
        }
        let before = pack(s0, moment);
        let mut st = core.state(before);
        if st.reserve(permits, now) != moment
            || pack(st.stored_permits, st.next_free) != word
            || st.next_free <= moment
            || !window.allows(core.age(tag), after.next_free)
        {
            // Not the latest reservation (or not this one), or one that
            // cost no time: nothing this grant can give back.
            return false;
        }
        // Retire the core. Ordering: AcqRel on success, as `set_rate`'s
        // swap; Relaxed on failure (a reservation came first: this grant is
        // no longer the latest, and nothing changed).
        if core
            .word
            .compare_exchange(word, FROZEN, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.later
            .store(Core::new(core.state(before), core.epoch.next().next()));
        window.record(moment);
        true
    }

    fn rate(&self) -> f64 {
        self.res.per_second() / self.with_core(|core, _| Some(core.params.stable_interval))
    }

    /// What one-permit calls get once no stored permits are left: each is
    /// charged `long(1 × stable_interval)` whole ticks (the flat part of
    /// `State::reserve`), so `ticks per second / that`, and `+∞` where it
    /// truncates to 0 ticks.
    fn effective_rate(&self) -> f64 {
        let stable = self.with_core(|core, _| Some(core.params.stable_interval));
        match long(stable) {
            ticks if ticks <= 0 => f64::INFINITY,
            ticks => self.res.per_second() / ticks as f64,
        }
    }

    fn stored_permits(&self) -> f64 {
        self.snapshot().stored_permits
    }

    fn try_acquire_micros(&self, permits: u32, timeout_micros: i64) -> Result<Grant, AcquireError> {
        let micros = timeout_micros.max(0);
        let max_wait = Duration::from_micros(micros as u64);
        self.decide(permits, Some(self.res.micros_ticks(micros)))
            .map_err(|e| with_max_wait(e, max_wait))
    }

    /// One reservation (`timeout` None) or Guava's `tryAcquire` (Some), with
    /// the commit protocol described on [`Smooth`].
    ///
    /// Written out, not through [`Smooth::with_core`]'s closure: with one
    /// inlined attempt for every core, the grant comes back in registers
    /// (an out-of-line attempt returned it through the stack, and copying it
    /// back with wider loads cost store-forwarding stalls, ~10 ns).
    #[inline(always)]
    fn decide(&self, permits: u32, timeout: Option<i64>) -> Result<Grant, AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        if !self.handoff.is_empty() {
            if let Some(g) = self.take_stashed(permits, timeout) {
                return Ok(g);
            }
        }
        let mut later = None;
        // Ordering: Acquire, see `Core::word`.
        let mut word = self.first.word.load(Ordering::Acquire);
        loop {
            let core = later.as_deref().unwrap_or(&self.first);
            if word != FROZEN {
                if let Some(r) = self.attempt(core, word, permits, timeout) {
                    return r;
                }
            }
            if later.take().is_some() {
                // The change that froze it holds `change` until its
                // successor is published.
                self.wait_out_change();
            }
            let core = self.later.load();
            // Ordering: Acquire, see `Core::word`.
            word = core.word.load(Ordering::Acquire);
            later = Some(core);
        }
    }

    /// A cancelled grant of `permits` from the handoff, ready within
    /// `timeout` ticks if given (see [Cancelling a
    /// reservation](self#cancelling-a-reservation)).
    #[cold]
    #[inline(never)]
    fn take_stashed(&self, permits: u32, timeout: Option<i64>) -> Option<Grant> {
        let now = self.clock.now_nanos();
        let max = timeout.map(|t| self.res.nanos(t.max(0) as u64));
        self.handoff.take(permits, max, now)
    }

    /// Waits until the rate change or cancel in progress has published its
    /// core.
    #[cold]
    #[inline(never)]
    fn wait_out_change(&self) {
        drop(lock(&self.change));
    }

    /// Reserves (or refuses) on `core`, starting from its `word`; `None`
    /// once the core is found retired.
    ///
    /// The clock is read after each load of the state, so a decision is
    /// never made at a reading older than the commits it builds on (see
    /// invariant 2 on [`Smooth`]).
    #[inline(always)]
    fn attempt(
        &self,
        core: &Core,
        mut word: u128,
        permits: u32,
        timeout: Option<i64>,
    ) -> Option<Result<Grant, AcquireError>> {
        while word != FROZEN {
            let (now_nanos, now) = self.read();
            let (moment, next) = match step(core.state(word), permits, timeout, now) {
                Ok(stepped) => stepped,
                Err(refused) => return Some(Err(refused)),
            };
            // A reservation that changes nothing commits nothing: it took
            // effect at the load (see invariant 2 on [`Smooth`]).
            if next != word {
                // Ordering: AcqRel on success (publishes this state and,
                // through it, this clock reading); Acquire on failure (the
                // state we retry from, as for the load).
                if let Err(actual) =
                    core.word
                        .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
                {
                    word = actual;
                    continue;
                }
            }
            let grant = self.grant(now_nanos, now, moment, permits);
            return Some(Ok(grant.with_claim(core.tag(word))));
        }
        None
    }

    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        match max_wait {
            None => self.decide(permits, None),
            Some(max) => self
                .decide(permits, Some(self.res.duration_ticks(max)))
                .map_err(|e| with_max_wait(e, max)),
        }
    }

    fn wait_stats(&self) -> WaitStats {
        let next_free = self.snapshot().next_free;
        let (_, now) = self.read();
        let backlog = self.res.nanos(next_free.saturating_sub(now).max(0) as u64);
        WaitStats {
            backlog_nanos: backlog,
            total_wait_nanos: backlog,
        }
    }
}

macro_rules! smooth_limiter {
    ($name:ident) => {
        impl<C: Clock> $name<C> {
            /// Changes the rate (Guava's `setRate`). Time before now is
            /// accounted at the old rate; stored permits are rescaled to the
            /// same fraction of the new maximum; a wait already reserved is
            /// still owed.
            ///
            /// # Errors
            ///
            /// [`ConfigErrorKind::Rate`] ([`SmoothError::Rate`]) unless
            /// `permits_per_second > 0`; nothing changes.
            pub fn set_rate(&self, permits_per_second: f64) -> Result<(), ConfigError> {
                Ok(self.core.set_rate(permits_per_second)?)
            }

            /// The rate, Guava's `getRate()`: `1e6 / stable interval`, which
            /// may differ from the rate set in the last bits (7.0 reads back
            /// as 6.999999999999999).
            pub fn rate(&self) -> f64 {
                self.core.rate()
            }

            /// The rate one-permit calls actually get, in permits per second,
            /// at the current rate, once no stored permits are left (a
            /// `SmoothWarmingUp`: once warm): each call is charged its cost in
            /// whole units of the [`Resolution`], truncated as Guava's
            /// `(long)` cast does, so `1e6 / floor(1e6 / rate)` in
            /// [`Resolution::Micros`] (Guava's arithmetic, which its tests
            /// and the conformance vectors pin) and `1e9 / floor(1e9 / rate)`
            /// in [`Resolution::Nanos`].
            ///
            /// **`f64::INFINITY` means no limit**: where one permit costs less
            /// than one unit (above 1 000 000 permits per second in
            /// microseconds, above 1e9 in nanoseconds, and at an infinite
            /// rate) it is charged 0 and one-permit calls are never throttled.
            ///
            /// Otherwise never below [`rate`](Self::rate), and above it by
            /// less than one part in the whole units a permit is charged (in
            /// microseconds: under 10 % up to 100 000 per second; 11 % at
            /// 300 000, where 3.33 µs is charged 3 µs; almost 100 % just
            /// above 500 000, where 1.99 µs is charged 1 µs). A call
            /// for `n` permits is charged `floor(n × interval)` at once, so
            /// larger calls lose less (a [`BatchHandle`](crate::BatchHandle)'s
            /// leases run between this and `rate()`); stored permits only
            /// change short-run rates.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::time::Duration;
            /// use ratekeeper::smooth::Resolution;
            /// use ratekeeper::{SmoothBursty, SmoothWarmingUp};
            ///
            /// // 3 per second: 333 333.3 µs charged 333 333 µs.
            /// let limiter = SmoothBursty::new(3.0)?;
            /// assert_eq!(limiter.effective_rate(), 1e6 / 333_333.0);
            /// // 300 000 per second: 3.33 µs charged 3 µs, 11 % too fast.
            /// limiter.set_rate(3e5)?;
            /// assert_eq!(limiter.effective_rate(), 1e6 / 3.0);
            /// // 2 000 000 per second: 0.5 µs charged 0 µs, no limit at all.
            /// limiter.set_rate(2e6)?;
            /// assert_eq!(limiter.effective_rate(), f64::INFINITY);
            ///
            /// // In whole nanoseconds 0.5 µs is 500 ns: exact.
            /// let nanos = SmoothWarmingUp::builder(2e6)
            ///     .warmup(Duration::from_millis(1))
            ///     .resolution(Resolution::Nanos)
            ///     .build()?;
            /// assert_eq!(nanos.effective_rate(), 2e6);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn effective_rate(&self) -> f64 {
                self.core.effective_rate()
            }

            /// Permits stored now (unused capacity carried forward), as of
            /// the last reservation or rate change.
            pub fn stored_permits(&self) -> f64 {
                self.core.stored_permits()
            }

            /// Guava's `tryAcquire(permits, timeout)` with the timeout in
            /// microseconds (negative means 0): reserves if the wait is at
            /// most the timeout, otherwise refuses and changes nothing.
            ///
            /// # Errors
            ///
            /// [`AcquireError::WouldWait`] when refused,
            /// [`AcquireError::ZeroPermits`] for 0 permits.
            #[deprecated(
                since = "0.2.0",
                note = "use reserve(permits, Some(max_wait)) or acquire_timeout, or compat::GuavaTimeouts::try_acquire_micros for Guava's signed microseconds"
            )]
            pub fn try_acquire_micros(
                &self,
                permits: u32,
                timeout_micros: i64,
            ) -> Result<Grant, AcquireError> {
                self.core.try_acquire_micros(permits, timeout_micros)
            }

            /// The clock this limiter reads.
            pub fn clock_ref(&self) -> &C {
                &self.core.clock
            }
        }

        impl<C: Clock> RateLimiter for $name<C> {
            /// Guava's reservation: waits only for earlier requests' debt and
            /// charges this request's permits to the next caller. With a
            /// maximum wait, Guava's `tryAcquire`: refused without any change
            /// when the wait would exceed it.
            // Always inlined, as the Pacer's: only then does the grant come
            // back in registers (with `#[inline]` LLVM kept it out of line in
            // bench_report's loop).
            #[inline(always)]
            fn reserve(
                &self,
                permits: u32,
                max_wait: Option<Duration>,
            ) -> Result<Grant, AcquireError> {
                self.core.reserve(permits, max_wait)
            }

            fn clock(&self) -> &dyn Clock {
                &self.core.clock
            }

            /// The backlog is how far `next_free` is ahead of now: what the
            /// next caller would wait. Guava keeps no other wait total.
            fn wait_stats(&self) -> WaitStats {
                self.core.wait_stats()
            }

            fn wait_policy(&self) -> WaitPolicy {
                self.core.policy
            }

            /// In debt while a reservation is owed; otherwise fresh if it
            /// stores what a new limiter of its rate does (bursty: nothing;
            /// warming up: its maximum, cold), and credit if not (stored
            /// permits to spend, or a warmer, faster limiter).
            fn recovery(&self) -> Recovery {
                self.core.recovery()
            }

            /// Gives back the latest reservation, exactly; see
            /// [Cancelling a reservation](self#cancelling-a-reservation).
            fn cancel(&self, grant: &Grant) -> bool {
                self.core.give_back(grant)
            }
        }

        impl<C> fmt::Debug for $name<C> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let st = self.core.snapshot();
                let next_free = match st.res {
                    Resolution::Micros => "next_free_micros",
                    Resolution::Nanos => "next_free_nanos",
                };
                f.debug_struct(stringify!($name))
                    .field("rate", &(st.res.per_second() / st.stable_interval))
                    .field("stored_permits", &st.stored_permits)
                    .field("max_permits", &st.max_permits)
                    .field(next_free, &st.next_free)
                    .finish_non_exhaustive()
            }
        }
    };
}

/// Guava's `SmoothBursty`: idle time stores up to `max_burst_seconds × rate`
/// free permits. See the [module documentation](self).
///
/// # Examples
///
/// ```
/// use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
///
/// let clock = ManualClock::new(0);
/// let limiter = SmoothBursty::builder(5.0).build_with_clock(clock.clone())?;
/// assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 0);
/// assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 200_000_000); // 0.2 s
/// clock.advance_nanos(2_000_000_000); // idle 2 s: a full burst is stored
/// for _ in 0..5 {
///     assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 0);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SmoothBursty<C = DefaultClock> {
    core: Smooth<C>,
}

impl<C: Clock> SmoothBursty<C> {
    /// The per-key rule of this (fresh) limiter's configuration.
    pub(crate) fn keyed_rule(&self) -> keyed::SmoothRule {
        self.core.keyed_rule()
    }
}

/// Guava's `SmoothWarmingUp`: idle time makes the limiter cold; permits are
/// spaced up to `cold_factor` times the stable interval and speed up over the
/// warm-up period. See the [module documentation](self).
///
/// # Examples
///
/// Guava's `testWarmUp`: 2 permits/s, a 4 s warm-up, cold factor 3.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{ManualClock, RateLimiter, SmoothWarmingUp};
///
/// let clock = ManualClock::new(0);
/// let limiter = SmoothWarmingUp::builder(2.0)
///     .warmup(Duration::from_secs(4))
///     .build_with_clock(clock.clone())?;
/// let waits: Vec<u64> = (0..8)
///     .map(|_| {
///         let g = limiter.reserve(1, None).unwrap();
///         clock.advance_nanos(g.delay_nanos()); // sleep it
///         g.delay_nanos() / 1000
///     })
///     .collect();
/// assert_eq!(waits, [0, 1_375_000, 1_125_000, 875_000, 625_000, 500_000, 500_000, 500_000]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SmoothWarmingUp<C = DefaultClock> {
    core: Smooth<C>,
}

impl<C: Clock> SmoothWarmingUp<C> {
    /// The per-key rule of this (fresh) limiter's configuration.
    pub(crate) fn keyed_rule(&self) -> keyed::SmoothRule {
        self.core.keyed_rule()
    }
}

smooth_limiter!(SmoothBursty);
smooth_limiter!(SmoothWarmingUp);

/// How many seconds of permits a [`SmoothBursty`] stores while idle unless
/// set: 1, as Guava's `RateLimiter.create(permitsPerSecond)`.
///
/// ```
/// use ratekeeper::smooth::{SmoothBursty, DEFAULT_MAX_BURST_SECONDS};
/// use ratekeeper::{ManualClock, RateLimiter};
///
/// let clock = ManualClock::new(0);
/// let limiter = SmoothBursty::builder(10.0).build_with_clock(clock.clone())?;
/// clock.advance_nanos(5_000_000_000); // idle for 5 s: stores 1 s of permits
/// let stored = (10.0 * DEFAULT_MAX_BURST_SECONDS) as usize;
/// for _ in 0..stored + 1 {
///     // The stored ten, and one more whose cost the next caller pays.
///     assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 0);
/// }
/// assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 100_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_MAX_BURST_SECONDS: f64 = 1.0;

/// How much slower than the stable rate a cold [`SmoothWarmingUp`] is unless
/// set: 3, as Guava's `RateLimiter.create(permitsPerSecond, warmupPeriod)`.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::smooth::{SmoothWarmingUp, DEFAULT_COLD_FACTOR};
/// use ratekeeper::{ManualClock, RateLimiter};
///
/// let limiter = SmoothWarmingUp::builder(10.0)
///     .warmup(Duration::from_secs(2))
///     .build_with_clock(ManualClock::new(0))?;
/// limiter.reserve(1, None)?; // a fresh limiter is cold
/// let cold = limiter.reserve(1, None)?.delay_nanos();
/// assert!(cold > 100_000_000 && cold <= (100_000_000.0 * DEFAULT_COLD_FACTOR) as u64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_COLD_FACTOR: f64 = 3.0;

/// Configures a [`SmoothBursty`].
#[derive(Debug, Clone, Copy)]
pub struct SmoothBurstyBuilder {
    rate: f64,
    max_burst_seconds: f64,
    resolution: Resolution,
    policy: WaitPolicy,
}

impl SmoothBursty {
    /// Guava's `RateLimiter.create(permitsPerSecond)`: bursty, 1 s of burst.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] ([`SmoothError::Rate`]) unless
    /// `permits_per_second > 0` (`+∞` is accepted).
    pub fn new(permits_per_second: f64) -> Result<SmoothBursty, ConfigError> {
        SmoothBursty::builder(permits_per_second).build()
    }

    /// A builder at a rate spec's rate (its burst ratio and verb mean
    /// nothing to Guava's limiters and are ignored).
    ///
    /// ```
    /// use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
    ///
    /// let limiter = SmoothBursty::from_spec(&"5".parse()?).build_with_clock(ManualClock::new(0))?;
    /// assert_eq!(limiter.rate(), 5.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_spec(spec: &RateSpec) -> SmoothBurstyBuilder {
        SmoothBursty::builder(spec.rate().get())
    }

    /// A builder at `permits_per_second` with [`DEFAULT_MAX_BURST_SECONDS`]
    /// (1 s) of burst. The rate is an `f64`, not a [`Rate`](crate::Rate):
    /// Guava accepts any positive rate, `+∞` included.
    pub fn builder(permits_per_second: f64) -> SmoothBurstyBuilder {
        SmoothBurstyBuilder {
            rate: permits_per_second,
            max_burst_seconds: DEFAULT_MAX_BURST_SECONDS,
            resolution: Resolution::Micros,
            policy: WaitPolicy::default(),
        }
    }
}

impl SmoothBurstyBuilder {
    /// How many seconds of permits idle time may store (default
    /// [`DEFAULT_MAX_BURST_SECONDS`], 1.0).
    pub fn max_burst_seconds(mut self, seconds: f64) -> Self {
        self.max_burst_seconds = seconds;
        self
    }

    /// The unit of the schedule (default [`Resolution::Micros`], Guava's).
    /// Use [`Resolution::Nanos`] above 100 000 permits per second (see
    /// [`Resolution`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::{ManualClock, RateLimiter, SmoothBursty};
    /// use ratekeeper::smooth::Resolution;
    ///
    /// let rate = 3e5; // 3.33 µs a permit
    /// let clock = ManualClock::new(0);
    /// let limiter = SmoothBursty::builder(rate)
    ///     .resolution(Resolution::for_rate(rate))
    ///     .build_with_clock(clock.clone())?;
    /// limiter.reserve(1, None)?;
    /// assert_eq!(limiter.reserve(1, None)?.delay_nanos(), 3333); // not 3000
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolution(mut self, resolution: Resolution) -> Self {
        self.resolution = resolution;
        self
    }

    /// How blocking acquires wait (see [`WaitPolicy`]).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Builds on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] or [`ConfigErrorKind::MaxBurst`] (details
    /// [`SmoothError::Rate`], [`SmoothError::MaxBurstSeconds`]).
    pub fn build(self) -> Result<SmoothBursty, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds on `clock`; the limiter's time starts at its current reading.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_clock<C: Clock>(self, clock: C) -> Result<SmoothBursty<C>, ConfigError> {
        let rate = check_rate(self.rate)?;
        let b = self.max_burst_seconds;
        if !(b.is_finite() && b >= 0.0) {
            return Err(SmoothError::MaxBurstSeconds(b).into());
        }
        let kind = Kind::Bursty {
            max_burst_seconds: b,
        };
        Ok(SmoothBursty {
            core: Smooth::new(kind, self.resolution, rate, clock, self.policy),
        })
    }
}

/// Configures a [`SmoothWarmingUp`].
#[derive(Debug, Clone, Copy)]
pub struct SmoothWarmingUpBuilder {
    rate: f64,
    warmup: Warmup,
    cold_factor: f64,
    resolution: Resolution,
    policy: WaitPolicy,
}

/// A warm-up period as it was given to the builder.
#[derive(Debug, Clone, Copy)]
enum Warmup {
    /// Whole microseconds, possibly negative (an error at build).
    Micros(i64),
    /// A duration, truncated to the resolution at build.
    Duration(Duration),
}

impl SmoothWarmingUp {
    /// Guava's `RateLimiter.create(permitsPerSecond, warmupPeriod)`: cold
    /// factor 3.0. The period is truncated to whole microseconds.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] ([`SmoothError::Rate`]) unless
    /// `permits_per_second > 0`.
    pub fn new(permits_per_second: f64, warmup: Duration) -> Result<SmoothWarmingUp, ConfigError> {
        SmoothWarmingUp::builder(permits_per_second)
            .warmup(warmup)
            .build()
    }

    /// A builder at a rate spec's rate, no warm-up period yet (set one).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::{ManualClock, SmoothWarmingUp};
    ///
    /// let limiter = SmoothWarmingUp::from_spec(&"100".parse()?)
    ///     .warmup(Duration::from_secs(2))
    ///     .build_with_clock(ManualClock::new(0))?;
    /// assert_eq!(limiter.rate(), 100.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_spec(spec: &RateSpec) -> SmoothWarmingUpBuilder {
        SmoothWarmingUp::builder(spec.rate().get())
    }

    /// A builder at `permits_per_second` (any positive `f64`, as for
    /// [`SmoothBursty::builder`]), no warm-up period yet (set one), cold
    /// factor [`DEFAULT_COLD_FACTOR`] (3.0).
    pub fn builder(permits_per_second: f64) -> SmoothWarmingUpBuilder {
        SmoothWarmingUpBuilder {
            rate: permits_per_second,
            warmup: Warmup::Micros(0),
            cold_factor: DEFAULT_COLD_FACTOR,
            resolution: Resolution::Micros,
            policy: WaitPolicy::default(),
        }
    }
}

impl SmoothWarmingUpBuilder {
    /// The warm-up period, truncated to whole microseconds (whole
    /// nanoseconds with [`Resolution::Nanos`]), saturating.
    pub fn warmup(mut self, warmup: Duration) -> Self {
        self.warmup = Warmup::Duration(warmup);
        self
    }

    /// The warm-up period in microseconds, as Guava's `unit.toMicros(period)`
    /// gives it; a negative value is an error at build.
    #[deprecated(
        since = "0.2.0",
        note = "use warmup(Duration), or compat::GuavaWarmup::warmup_micros for Guava's signed microseconds"
    )]
    pub fn warmup_micros(self, micros: i64) -> Self {
        self.signed_warmup_micros(micros)
    }

    /// The warm-up period in signed microseconds (Guava's shape, for
    /// [`compat`]).
    pub(crate) fn signed_warmup_micros(mut self, micros: i64) -> Self {
        self.warmup = Warmup::Micros(micros);
        self
    }

    /// The unit of the schedule (default [`Resolution::Micros`], Guava's).
    /// Use [`Resolution::Nanos`] above 100 000 permits per second (see
    /// [`Resolution`]).
    ///
    /// # Examples
    ///
    /// Warm, at 4e6 permits per second: Guava's microseconds charge a
    /// permit 0 µs, nanoseconds 250 ns.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::{ManualClock, RateLimiter, SmoothWarmingUp};
    /// use ratekeeper::smooth::Resolution;
    ///
    /// let clock = ManualClock::new(0);
    /// let limiter = SmoothWarmingUp::builder(4e6)
    ///     .warmup(Duration::from_millis(1))
    ///     .resolution(Resolution::Nanos)
    ///     .build_with_clock(clock.clone())?;
    /// limiter.reserve(limiter.stored_permits().ceil() as u32 + 1, None)?; // spend the cold store
    /// let g = limiter.reserve(1, None)?;
    /// assert_eq!(limiter.reserve(1, None)?.delay_nanos() - g.delay_nanos(), 250);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolution(mut self, resolution: Resolution) -> Self {
        self.resolution = resolution;
        self
    }

    /// How much slower than the stable rate a cold limiter is (default
    /// [`DEFAULT_COLD_FACTOR`], 3.0; at least 1.0).
    pub fn cold_factor(mut self, cold_factor: f64) -> Self {
        self.cold_factor = cold_factor;
        self
    }

    /// How blocking acquires wait (see [`WaitPolicy`]).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Builds on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::WarmUp`] ([`SmoothError::WarmupNegative`], checked
    /// first, as Guava does), then [`ConfigErrorKind::Rate`], then
    /// [`ConfigErrorKind::ColdFactor`].
    pub fn build(self) -> Result<SmoothWarmingUp, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds on `clock`; the limiter's time starts at its current reading.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_clock<C: Clock>(self, clock: C) -> Result<SmoothWarmingUp<C>, ConfigError> {
        let res = self.resolution;
        let warmup = match self.warmup {
            Warmup::Micros(micros) if micros < 0 => {
                return Err(SmoothError::WarmupNegative(micros).into());
            }
            Warmup::Micros(micros) => res.micros_ticks(micros),
            Warmup::Duration(d) => res.duration_ticks(d),
        };
        let rate = check_rate(self.rate)?;
        if !self.cold_factor.is_finite() || self.cold_factor < 1.0 {
            return Err(SmoothError::ColdFactor(self.cold_factor).into());
        }
        let kind = Kind::WarmingUp {
            warmup,
            cold_factor: self.cold_factor,
            threshold: 0.0,
            slope: 0.0,
        };
        Ok(SmoothWarmingUp {
            core: Smooth::new(kind, res, rate, clock, self.policy),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
