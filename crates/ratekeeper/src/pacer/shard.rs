//! Partitioned shards: a [`ShardedPacer`] splits a rate `R` into `N`
//! [`Pacer`]s of rate `R / N` on their own cache lines, maps each thread to
//! one, and lets a thread that would wait on its shard take a slot another
//! shard has due now (**work stealing**), so the total stays `R`. A thread
//! alone on its shard pays one uncontended atomic add per grant.
//!
//! ```
//! use ratekeeper::{Pacer, Rate, RateLimiter};
//!
//! // 1e6/s split into 2 shards of 5e5/s (2 µs slots each).
//! let pacer = Pacer::builder(Rate::new(1e6)?).strictness(0.0).build_sharded(2)?;
//! assert_eq!((pacer.shards(), pacer.rate().get()), (2, 1e6));
//! std::thread::scope(|s| {
//!     for _ in 0..2 {
//!         s.spawn(|| {
//!             let handle = pacer.handle(); // one per thread: shards 0, 1
//!             for _ in 0..1000 {
//!                 let grant = handle.acquire();
//!                 assert!(grant.ready_nanos() >= grant.scheduled_nanos());
//!             }
//!         });
//!     }
//! });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Threads and shards
//!
//! [`ShardedPacer::handle`] makes a [`ShardHandle`] homed on one shard,
//! round-robin: make one per thread. The sharded pacer's own
//! [`RateLimiter`] impl maps a thread to shard `t mod N`, `t` the thread's
//! number in the order of its first request to any sharded pacer.
//!
//! # Cancelling a reservation
//!
//! No shard's schedule moves back: [`RateLimiter::cancel`] keeps the grant
//! (ready time not passed) for the next caller of its size on the calling
//! thread's shard, as a [`Pacer`] keeps a reservation that is not its
//! latest. Its slots are used once; kept and untaken by its ready time, they
//! are spent.
//!
//! # Invariants
//!
//! 1. Every grant is a reservation on exactly one shard through that shard's
//!    own decision; a probe of another shard grants now or changes nothing
//!    (in strict and burst modes it may leave a hole: fewer grants, never
//!    more). Each shard's invariants hold; the totals are their sums.
//! 2. Path decisions (is a slot due?) read hints only: a stale read misroutes
//!    a request, never grants what its shard did not decide.
//! 3. All shards share strictness and slice, except during a runtime change.
//!
//! # Memory ordering
//!
//! A grant happens after every grant reserved before it on the same shard.
//! Grants on different shards are not ordered: do not hand data off between
//! threads through a sharded pacer.
//!
//! Work stealing, per-mode slack, rounding and runtime changes:
//! `docs/pacer.md`.

use core::cell::Cell;
use core::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::params::slices;
use super::{Pacer, PacerBuilder, Strictness};
use crate::clock::{Clock, DefaultClock};
use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};
use crate::limiter::{AcquireError, Grant, RateLimiter, WaitStats};
use crate::rate::{Rate, RateError};
use crate::sync::{lock, AtomicU64, Mutex, Ordering};
use crate::wait::WaitPolicy;

mod handle;

/// The most shards a [`ShardedPacer`] may have.
pub const MAX_SHARDS: usize = 1024;

/// Detail of a [`ConfigErrorKind::Shards`] error.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum ShardError {
    /// The shard count is 0 or above [`MAX_SHARDS`].
    #[error("shard count {requested} is outside 1..={max}")]
    Shards {
        /// The shard count asked for.
        requested: usize,
        /// The most shards a sharded pacer may have.
        max: usize,
    },
}

impl From<ShardError> for ConfigError {
    fn from(e: ShardError) -> Self {
        ConfigError::because(ConfigErrorKind::Shards, ConfigReason::Shards, e)
    }
}

/// A pacer split into shards with work stealing; see the [module
/// docs](self). Built by [`PacerBuilder::build_sharded`]; take permits
/// through per-thread [`ShardHandle`]s or its own [`RateLimiter`] methods.
///
/// # Examples
///
/// Two strict shards of 1 ms slots: a request its shard would delay takes
/// the idle shard's slot.
///
/// ```
/// use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter};
///
/// let clock = ManualClock::new(0);
/// let pacer = Pacer::builder(Rate::new(2000.0)?)
///     .strictness(1.0)
///     .build_sharded_with_clock(2, clock.clone())?;
/// let (a, b) = (pacer.handle(), pacer.handle());
/// assert_eq!((a.shard(), b.shard()), (0, 1));
/// assert_eq!(a.try_acquire()?.ready_nanos(), 0); // shard 0, slot 0
/// assert_eq!(a.try_acquire()?.ready_nanos(), 0); // stolen: shard 1, slot 0
/// assert!(b.try_acquire().is_err(), "both shards' next slots are at 1 ms");
/// clock.advance_nanos(1_000_000);
/// assert_eq!(b.try_acquire()?.scheduled_nanos(), 1_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShardedPacer<C = DefaultClock> {
    /// The shards, each a whole pacer at `R / N` on its own cache lines.
    shards: Box<[CachePadded<Pacer<C>>]>,
    /// The next handle's shard, before reduction mod `N`.
    next_handle: AtomicU64,
    /// Live handles homed on each shard: a balance hint.
    residents: Box<[CachePadded<AtomicU64>]>,
    /// The total rate `R`; held while a runtime change is applied to every
    /// shard, so changes never interleave.
    control: Mutex<Rate>,
    /// Coalescing window (ns): a waiting request due within it stays home.
    window: u64,
}

/// A per-thread [`RateLimiter`] on a [`ShardedPacer`], bound to one shard
/// at a time (made by [`ShardedPacer::handle`]). It moves to a shard it
/// stole a grant from; a clone starts on the same shard. `Send`, not `Sync`.
pub struct ShardHandle<'a, C: Clock = DefaultClock> {
    pacer: &'a ShardedPacer<C>,
    /// The shard this handle's requests try first.
    home: Cell<usize>,
    /// The shard that decided this handle's last grant.
    last: Cell<usize>,
}

impl PacerBuilder {
    /// Builds a [`ShardedPacer`] of `shards` pacers, each at `rate / shards`
    /// with this builder's other settings, on the default clock.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Shards`] for 0 or more than [`MAX_SHARDS`] shards;
    /// [`ConfigErrorKind::Rate`] or [`ConfigErrorKind::Strictness`] as for
    /// [`build`](Self::build), for the total (at most one op per nanosecond)
    /// or a shard's rate.
    pub fn build_sharded(self, shards: usize) -> Result<ShardedPacer, ConfigError> {
        self.build_sharded_with_clock(shards, DefaultClock::new())
    }

    /// As [`build_sharded`](Self::build_sharded), on `clock`. Each shard gets
    /// a clone; clones must read the same time (as
    /// [`ManualClock`](crate::ManualClock) clones do).
    ///
    /// # Errors
    ///
    /// As [`build_sharded`](Self::build_sharded).
    pub fn build_sharded_with_clock<C: Clock + Clone>(
        self,
        shards: usize,
        clock: C,
    ) -> Result<ShardedPacer<C>, ConfigError> {
        if shards == 0 || shards > MAX_SHARDS {
            return Err(ShardError::Shards {
                requested: shards,
                max: MAX_SHARDS,
            }
            .into());
        }
        let total = self.rate;
        let per_shard = self.rate(shard_rate(total, shards)?);
        // One origin for all: a request compares its own shard's clock
        // readings with other shards' timelines.
        let origin = clock.now_nanos();
        let shards = (0..shards)
            .map(|k| {
                let mut shard = per_shard.build_with_origin(clock.clone(), origin)?;
                shard.set_epoch_base(epoch_base(k));
                Ok(CachePadded::new(shard))
            })
            .collect::<Result<Vec<_>, ConfigError>>()?;
        let window = shards[0].wait_policy().window_nanos(&shards[0].clock);
        let n = shards.len();
        Ok(ShardedPacer {
            shards: shards.into_boxed_slice(),
            next_handle: AtomicU64::new(0),
            residents: (0..n)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            control: Mutex::new(total),
            window,
        })
    }
}

/// Shard `k`'s epoch base: its index in the epoch's top bits, so sibling
/// shards' grants carry distinct tags naming their shard.
fn epoch_base(k: usize) -> u32 {
    (k as u32) << EPOCH_BASE_SHIFT
}

/// The shard index's place in a grant's tag (`MAX_SHARDS` = 2^10 fits).
const EPOCH_BASE_SHIFT: u32 = 21;

/// The shard a grant's tag names, if any.
fn issuing_shard(grant: &Grant, shards: usize) -> Option<usize> {
    let tag = grant.claim().filter(|t| t & (1 << 31) != 0)?;
    let k = ((tag & 0x7fff_ffff) >> EPOCH_BASE_SHIFT) as usize;
    (k < shards).then_some(k)
}

/// `total / shards`, validated; the total is held to one Pacer's ceiling.
fn shard_rate(total: Rate, shards: usize) -> Result<Rate, RateError> {
    total.slice()?;
    let rate = Rate::checked(total.get() / shards as f64)?;
    rate.slice()?;
    Ok(rate)
}

/// The next thread number for [`ShardedPacer`]'s own [`RateLimiter`]; a
/// placement hint only, so a plain `std` atomic outside the loom shim.
static NEXT_THREAD: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// No number yet.
const UNNUMBERED: u32 = u32::MAX;

std::thread_local! {
    /// This thread's number, taken from [`NEXT_THREAD`] on first use.
    static THREAD_NUMBER: Cell<u32> = const { Cell::new(UNNUMBERED) };
}

/// The calling thread's number (see [`NEXT_THREAD`]); 0 while its
/// thread-locals are being destroyed.
#[inline]
fn thread_number() -> u32 {
    THREAD_NUMBER
        .try_with(|n| {
            let number = n.get();
            if number != UNNUMBERED {
                return number;
            }
            // Ordering: Relaxed; only the value matters (a round-robin
            // counter), no memory is handed over through it.
            let number =
                NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & (UNNUMBERED >> 1);
            n.set(number);
            number
        })
        .unwrap_or(0)
}

impl<C: Clock> ShardedPacer<C> {
    /// A handle bound to the next shard, round-robin; see [`ShardHandle`].
    pub fn handle(&self) -> ShardHandle<'_, C> {
        // Ordering: Relaxed; a round-robin counter whose value is all that
        // matters, ordering no other memory.
        let n = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.home_at((n % self.shards.len() as u64) as usize)
    }

    /// A handle whose home is `shard`, counted there.
    fn home_at(&self, shard: usize) -> ShardHandle<'_, C> {
        // Ordering: Relaxed; a count used as a hint (which shard is less
        // crowded), ordering no other memory.
        self.residents[shard].fetch_add(1, Ordering::Relaxed);
        ShardHandle {
            pacer: self,
            home: Cell::new(shard),
            last: Cell::new(shard),
        }
    }

    /// The number of shards, `N`.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The total rate, `R` (each shard runs at `R / N`).
    pub fn rate(&self) -> Rate {
        *lock(&self.control)
    }

    /// The total rate the shards' schedules keep (ops/s): the sum of each
    /// shard's [`Pacer::effective_rate`]. Never below [`rate`](Self::rate);
    /// slots are `N` times longer, so truncation weighs `N` times less.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::{ManualClock, Pacer, Rate};
    ///
    /// // One pacer at 4e8/s: 2.5 ns truncated to 2 ns, 5e8/s.
    /// let one = Pacer::builder(Rate::new(4e8)?).build_with_clock(ManualClock::new(0))?;
    /// assert_eq!(one.effective_rate(), 5e8);
    /// // 4 shards of 1e8/s: 10 ns each, exact.
    /// let sharded = Pacer::builder(Rate::new(4e8)?)
    ///     .build_sharded_with_clock(4, ManualClock::new(0))?;
    /// assert_eq!(sharded.effective_rate(), 4e8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn effective_rate(&self) -> f64 {
        self.shards.iter().map(|s| s.effective_rate()).sum()
    }

    /// The strictness every shard runs with.
    pub fn strictness(&self) -> Strictness {
        self.shards[0].strictness()
    }

    /// Whether any shard is running (a stealing probe starts an idle shard).
    pub fn is_started(&self) -> bool {
        self.shards.iter().any(|s| s.is_started())
    }

    /// Changes the total rate: each shard gets `rate / N`, with a pacer's
    /// checkpoint and keep (see [`Pacer::set_rate`]).
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] as for
    /// [`build_sharded`](PacerBuilder::build_sharded); nothing changes.
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        let per_shard = shard_rate(rate, self.shards.len())?;
        let mut total = lock(&self.control);
        // Validated with the current strictness, the only other input: once
        // the first shard accepts, the others (same values) do too.
        slices(per_shard, self.shards[0].strictness())?;
        for shard in self.shards.iter() {
            shard.set_rate(per_shard)?;
        }
        *total = rate;
        Ok(())
    }

    /// Changes every shard's strictness (see [`Pacer::set_strictness`]).
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Strictness`] for an invalid value; nothing changes.
    pub fn set_strictness(&self, strictness: f64) -> Result<(), ConfigError> {
        Strictness::new(strictness)?;
        let _control = lock(&self.control);
        for shard in self.shards.iter() {
            shard.set_strictness(strictness)?;
        }
        Ok(())
    }

    /// Starts every idle shard (see [`Pacer::start`]).
    pub fn start(&self) {
        let _control = lock(&self.control);
        self.shards.iter().for_each(|s| s.start());
    }

    /// Stops every shard (see [`Pacer::stop`]).
    pub fn stop(&self) {
        let _control = lock(&self.control);
        self.shards.iter().for_each(|s| s.stop());
    }

    /// Restarts every shard (see [`Pacer::restart`]).
    pub fn restart(&self) {
        let _control = lock(&self.control);
        self.shards.iter().for_each(|s| s.restart());
    }

    /// The shard the calling thread maps to ([more](self#threads-and-shards)).
    pub fn thread_shard(&self) -> usize {
        (thread_number() % self.shards.len() as u32) as usize
    }

    /// Reserves on shard `home`, or steals; returns the deciding shard too.
    #[inline(always)]
    fn reserve_from(
        &self,
        home: usize,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> (Result<Grant, AcquireError>, usize) {
        let own = &self.shards[home];
        // Ordering: Relaxed; a clock reading, a lower bound of the present
        // (see `Pacer::refresh`).
        let seen = own.last_seen.load(Ordering::Relaxed);
        // A request that may wait needs no other shard when its own op is
        // due within the coalescing window: the wait releases it at once.
        let horizon = match max_wait {
            None => seen.saturating_add(self.window),
            Some(_) => seen,
        };
        if self.shards.len() == 1 || due(own, horizon, |next| next < horizon) {
            return (own.reserve(permits, max_wait), home);
        }
        self.reserve_stealing(home, seen, permits, max_wait)
    }

    /// Slow path: own shard if due now, else the first shard that grants
    /// now, else wait on the shard whose next op may start first.
    #[inline(never)]
    fn reserve_stealing(
        &self,
        home: usize,
        seen: u64,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> (Result<Grant, AcquireError>, usize) {
        let own = &self.shards[home];
        if permits == 0 {
            return (Err(AcquireError::ZeroPermits), home);
        }
        // A grant cancelled on this thread's shard and kept for the next
        // caller of its size goes first, whichever shard would decide (the
        // own shard's `reserve` above takes it on the direct path).
        if !own.handoff.is_empty() {
            if let Some(g) = own.take_stashed(permits, max_wait) {
                return (Ok(g), home);
            }
        }
        let now = own.refresh(seen).max(seen);
        let horizon = match max_wait {
            None => now.saturating_add(self.window),
            Some(_) => now,
        };
        if due(own, horizon, |next| next <= horizon) {
            return (own.reserve(permits, max_wait), home);
        }
        let n = self.shards.len();
        // The shard to wait on if none grants now: the one whose next op
        // may start first, the own shard on ties.
        let (mut earliest, mut wait_on) = (next_start(own), home);
        let mut at = home;
        for _ in 1..n {
            at = if at + 1 == n { 0 } else { at + 1 };
            let other = &self.shards[at];
            // A filter: a shard that cannot grant by `now` is skipped
            // without a write (or a clock read).
            if !due(other, now, |next| next <= now) {
                let start = next_start(other);
                if start < earliest {
                    (earliest, wait_on) = (start, at);
                }
                continue;
            }
            // Grants now or changes nothing (invariant 1).
            if let Ok(grant) = other.reserve(permits, Some(Duration::ZERO)) {
                return (Ok(grant), at);
            }
        }
        // Its errors are that shard's: it decides what the caller gets.
        (self.shards[wait_on].reserve(permits, max_wait), wait_on)
    }
}

/// Whether `shard`'s hints say it can grant by `now` (invariant 2).
#[inline(always)]
fn due<C>(shard: &Pacer<C>, now: u64, slot_due: impl Fn(u64) -> bool) -> bool {
    // Ordering: Relaxed for both: hints. A stale value only sends a request
    // to a shard that makes it wait or refuses it, or skips a shard that
    // could have granted. In average and compensation modes `actual` is
    // written only at resets, to a clock reading `last_seen` then covers,
    // so it never holds these modes' requests back.
    slot_due(shard.ideal.load(Ordering::Relaxed)) && shard.actual.load(Ordering::Relaxed) <= now
}

/// When `shard`'s next op may start, by its hints (invariant 2).
#[inline]
fn next_start<C>(shard: &Pacer<C>) -> u64 {
    // Ordering: Relaxed for both: hints, see `due`.
    shard
        .ideal
        .load(Ordering::Relaxed)
        .max(shard.actual.load(Ordering::Relaxed))
}

impl<C: Clock> RateLimiter for ShardedPacer<C> {
    /// Reserves on the calling thread's shard, or steals.
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.reserve_from(self.thread_shard(), permits, max_wait).0
    }

    #[inline]
    fn clock(&self) -> &dyn Clock {
        &self.shards[0].clock
    }

    /// The sum over the shards.
    fn wait_stats(&self) -> WaitStats {
        self.shards
            .iter()
            .map(|s| s.wait_stats())
            .fold(WaitStats::default(), |sum, s| WaitStats {
                backlog_nanos: sum.backlog_nanos.saturating_add(s.backlog_nanos),
                total_wait_nanos: sum.total_wait_nanos.saturating_add(s.total_wait_nanos),
            })
    }

    #[inline]
    fn wait_policy(&self) -> WaitPolicy {
        self.shards[0].wait_policy()
    }

    /// Keeps the grant for the next caller of its size on the calling
    /// thread's shard; see [Cancelling](self#cancelling-a-reservation).
    fn cancel(&self, grant: &Grant) -> bool {
        // A shard's grant: made since its shard's latest reset? (A grant
        // handed on from a kept one carries a handoff id instead; only the
        // shard keeping it knows it.)
        let fresh = issuing_shard(grant, self.shards.len())
            .is_some_and(|k| self.shards[k].issued_since_reset(grant));
        let keeper = self
            .shards
            .iter()
            .position(|s| s.keeps(grant))
            .unwrap_or_else(|| self.thread_shard());
        self.shards[keeper].keep_for_next(grant, fresh)
    }
}

impl<C> fmt::Debug for ShardedPacer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedPacer")
            .field("rate", &*lock(&self.control))
            .field("shards", &self.shards.len())
            .field(
                "next_slots_nanos",
                &self
                    .shards
                    .iter()
                    .map(|s| s.next_slot_snapshot())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
