//! Partitioned shards: a [`ShardedPacer`] splits a rate `R` into `N`
//! [`Pacer`]s of rate `R / N`, maps each thread to one of them, and lets a
//! thread that would wait on its own shard take a slot another shard has due
//! now (**work stealing**), so that time the idle shards do not use goes to
//! the busy threads and the total stays `R`.
//!
//! Under heavy contention the pacer's one shared read-modify-write per grant
//! becomes the bottleneck. Micro-batching ([`PacerHandle`](super::PacerHandle))
//! amortizes it over a lease of slots; sharding removes the sharing instead:
//! each shard is a whole pacer on its own cache lines, written by the threads
//! mapped to it. A thread alone on its shard pays an uncontended atomic add
//! per grant, in every strictness mode.
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
//! [`ShardedPacer::handle`] makes a [`ShardHandle`] whose home is one
//! shard, assigned round-robin: make one per thread. The sharded pacer
//! itself also implements [`RateLimiter`]: it maps the calling thread to
//! shard `t mod N`, `t` the thread's number in the order of its first
//! request to any sharded pacer, which spreads evenly only when the threads
//! sharing a pacer were numbered in a row.
//!
//! # Cancelling
//!
//! A grant does not say which shard it came from, so no shard's schedule
//! ever moves back for a cancel. [`RateLimiter::cancel`] keeps the grant
//! (its ready time not passed) for the next caller of its size on the
//! calling thread's shard, as a single [`Pacer`] keeps a reservation that
//! is not its latest (see [Cancelling a
//! reservation](crate::pacer#cancelling-a-reservation)): its slots are used
//! once, so abandoned async waits never admit more. A kept grant nobody
//! takes before its ready time is dropped, its slots spent.
//!
//! # Invariants
//!
//! 1. Each shard is a [`Pacer`], and every grant is a reservation on exactly
//!    one shard through that shard's own decision; a probe of another shard
//!    is a reservation that may not wait, which grants now or changes
//!    nothing (in strict and burst modes under contention it may leave a
//!    hole: fewer grants, never more). So each shard's invariants hold for
//!    its grants, and the bounds above are their sums.
//! 2. The path decisions (is a slot due?) read hints only: a stale read
//!    sends a request to a shard that refuses it, or skips a shard that
//!    could have granted, never to a grant its shard did not decide.
//! 3. All shards have the same strictness and slice, except while a runtime
//!    change is being applied.
//!
//! # Memory ordering
//!
//! A grant happens after every grant reserved before it **on the same
//! shard** (each shard is a pacer; see its memory ordering). Grants on
//! different shards are not ordered with each other: do not hand data off
//! between threads through a sharded pacer.
//!
//! The repository's `docs/pacer.md` has the fine print: work stealing, what
//! each mode allows and its slack, rounding, fairness against micro-batching
//! and runtime changes.

use core::cell::Cell;
use core::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::params::slices;
use super::{Pacer, PacerBuilder, Strictness};
use crate::clock::{Clock, DefaultClock};
use crate::error::{ConfigError, ConfigErrorKind};
use crate::limiter::{AcquireError, Grant, RateLimiter, WaitStats};
use crate::rate::{Rate, RateError};
use crate::sync::{lock, AtomicU64, Mutex, Ordering};
use crate::wait::WaitPolicy;

mod handle;

/// The most shards a [`ShardedPacer`] may have.
pub const MAX_SHARDS: usize = 1024;

/// Why a sharded pacer could not be built: the detail behind a
/// [`ConfigError`] of kind [`ConfigErrorKind::Shards`].
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
        ConfigError::new(ConfigErrorKind::Shards, e)
    }
}

/// A pacer split into shards with work stealing; see the [module
/// docs](self).
///
/// Build one with [`PacerBuilder::build_sharded`] or
/// [`PacerBuilder::build_sharded_with_clock`]; take permits through
/// per-thread [`ShardHandle`]s ([`handle`](Self::handle)) or through the
/// [`RateLimiter`] methods on the sharded pacer itself (the calling thread is
/// mapped to a shard).
///
/// # Examples
///
/// Two strict shards of 1 ms slots on a manual clock: a thread whose shard
/// would make it wait takes the idle shard's slot instead.
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
    /// How many live handles each shard is home to: a balance hint for
    /// moving handles (see [`ShardHandle`]).
    residents: Box<[CachePadded<AtomicU64>]>,
    /// The total rate `R`. Held while a runtime change is applied to every
    /// shard, so that changes never interleave across shards.
    control: Mutex<Rate>,
    /// The wait policy's coalescing window (ns): a request that may wait
    /// stays on its own shard when its op there is due within it.
    window: u64,
}

/// A handle on a [`ShardedPacer`], bound to one shard at a time; see the
/// [module docs](self).
///
/// Make one per thread with [`ShardedPacer::handle`]. It implements
/// [`RateLimiter`], so blocking (and, with the `tokio` feature, async)
/// waiting works on it as on a pacer. It starts on a shard given out
/// round-robin and moves to a shard it took a grant from instead of its
/// own (work stealing, `docs/pacer.md`); a clone starts on
/// the same shard and moves on its own. Like [`PacerHandle`](crate::pacer::PacerHandle)
/// it is `Send` but not `Sync`: one thread's.
pub struct ShardHandle<'a, C: Clock = DefaultClock> {
    pacer: &'a ShardedPacer<C>,
    /// The shard this handle's requests try first.
    home: Cell<usize>,
    /// The shard that decided this handle's last grant.
    last: Cell<usize>,
}

impl PacerBuilder {
    /// Builds a [`ShardedPacer`] of `shards` pacers, each at `rate / shards`
    /// with this builder's strictness, start state, clock caching and wait
    /// policy, on the default real clock.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Shards`] for 0 shards
    /// or more than [`MAX_SHARDS`]; [`ConfigErrorKind::Rate`] or
    /// [`ConfigErrorKind::Strictness`] if the total rate, a shard's rate or
    /// the strictness is invalid (as [`build`](Self::build); the total, like one
    /// Pacer's rate, is at most one op per nanosecond).
    pub fn build_sharded(self, shards: usize) -> Result<ShardedPacer, ConfigError> {
        self.build_sharded_with_clock(shards, DefaultClock::new())
    }

    /// As [`build_sharded`](Self::build_sharded), on `clock`: each shard gets
    /// a clone, and the clones must read the same time (as
    /// [`MonotonicClock`](crate::MonotonicClock) and
    /// [`ManualClock`](crate::ManualClock) clones do), since a request
    /// compares its own shard's reading with other shards' schedules.
    ///
    /// # Errors
    ///
    /// As [`build_sharded`](Self::build_sharded).
    ///
    /// ```
    /// use ratekeeper::{ConfigErrorKind, ManualClock, Pacer, Rate};
    ///
    /// let builder = Pacer::builder(Rate::new(1000.0)?);
    /// let err = builder.build_sharded_with_clock(0, ManualClock::new(0)).unwrap_err();
    /// assert_eq!(err.kind(), ConfigErrorKind::Shards);
    /// assert_eq!(err.to_string(), "shard count 0 is outside 1..=1024");
    /// // 1e-9/s split 10 ways: a shard's slice would exceed 2^62 ns.
    /// let slow = Pacer::builder(Rate::new(1e-9)?);
    /// let err = slow.build_sharded_with_clock(10, ManualClock::new(0)).unwrap_err();
    /// assert_eq!(err.kind(), ConfigErrorKind::Rate);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

/// Where shard `k`'s epochs start: its index in the top bits of the 31-bit
/// epoch, so that twin grants of sibling shards (the same slot of each
/// schedule) carry different tags, and a grant's tag names its shard (for
/// 2^21 resets; after that a cancel may be refused, never misapplied,
/// since shards only keep grants, see [Cancelling](self#cancelling)).
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

/// A shard's rate, `total / shards`, validated. The total is held to what
/// one Pacer accepts (at most one op per nanosecond): sharding spreads the
/// rate over schedules, it does not raise its ceiling.
fn shard_rate(total: Rate, shards: usize) -> Result<Rate, RateError> {
    total.nanos_per_op()?;
    let rate = Rate::new(total.get() / shards as f64)?;
    rate.nanos_per_op()?;
    Ok(rate)
}

/// Process-wide thread numbers for [`ShardedPacer`]'s own [`RateLimiter`]:
/// the next number to give out. A placement hint only (any number is a
/// correct mapping), so it is a plain `std` atomic, outside the loom shim.
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

    /// The total rate, `R` (each shard runs at `R / N`; see
    /// `docs/pacer.md`, "Rounding").
    pub fn rate(&self) -> Rate {
        *lock(&self.control)
    }

    /// The total rate the shards' schedules actually keep, in operations
    /// per second: the sum over the shards of `1e9 / slot`, each shard's
    /// slot `floor(1e9 × N / R)` whole nanoseconds (see
    /// `docs/pacer.md`, "Rounding", and [`Pacer::effective_rate`]), so
    /// `N × 1e9 / floor(1e9 × N / R)` once every shard has the current rate.
    ///
    /// Never below [`rate`](Self::rate), and above it by less than one part
    /// in a shard's slot: splitting a rate into shards makes each slot about
    /// `N` times longer, so its truncation weighs about `N` times less than
    /// one pacer's.
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

    /// Whether the schedule is running (not idle). Shards that were started
    /// or stopped together agree; a probe by a stealing request starts an
    /// idle shard, as any request does.
    pub fn is_started(&self) -> bool {
        self.shards.iter().any(|s| s.is_started())
    }

    /// Changes the total rate: each shard gets `rate / N`, with a pacer's
    /// checkpoint and keep (see [`Pacer::set_rate`]).
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] if the total (at most one op per nanosecond,
    /// as for one Pacer) or a shard's rate cannot be kept; nothing changes.
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

    /// Restarts every shard: backlogs and accumulated waits cleared, each
    /// shard's next slot due now (see [`Pacer::restart`]).
    pub fn restart(&self) {
        let _control = lock(&self.control);
        self.shards.iter().for_each(|s| s.restart());
    }

    /// The shard the calling thread maps to (see [Threads and
    /// shards](self#threads-and-shards)).
    pub fn thread_shard(&self) -> usize {
        (thread_number() % self.shards.len() as u32) as usize
    }

    /// Reserves on shard `home`, or steals; see the [module docs](self).
    /// Returns the shard that decided, with its answer.
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

    /// The own shard's next slot is not known due: read the clock, then the
    /// own shard if due by it, else the first other shard that grants now,
    /// else the shard whose next op may start first, waiting.
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

/// Whether `shard` can grant a request by the clock reading `now`, as far
/// as its next slot (`slot_due`) and its actual timeline (strict and burst
/// modes: `actual`, the earliest start of its next op) tell. A hint that
/// picks the path (invariant 2): the shard's own reservation decides the
/// grant.
#[inline(always)]
fn due<C>(shard: &Pacer<C>, now: u64, slot_due: impl Fn(u64) -> bool) -> bool {
    // Ordering: Relaxed for both: hints. A stale value only sends a request
    // to a shard that makes it wait or refuses it, or skips a shard that
    // could have granted. In average and compensation modes `actual` is
    // written only at resets, to a clock reading `last_seen` then covers,
    // so it never holds these modes' requests back.
    slot_due(shard.ideal.load(Ordering::Relaxed)) && shard.actual.load(Ordering::Relaxed) <= now
}

/// When `shard`'s next op may start, as far as its hints tell: its next
/// slot, or in strict and burst modes the earliest start its spacing allows
/// if later. A hint (invariant 2), as in [`due`].
#[inline]
fn next_start<C>(shard: &Pacer<C>) -> u64 {
    // Ordering: Relaxed for both: hints, see `due`.
    shard
        .ideal
        .load(Ordering::Relaxed)
        .max(shard.actual.load(Ordering::Relaxed))
}

impl<C: Clock> RateLimiter for ShardedPacer<C> {
    /// Reserves on the calling thread's shard, or steals; see the [module
    /// docs](self).
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.reserve_from(self.thread_shard(), permits, max_wait).0
    }

    #[inline]
    fn clock(&self) -> &dyn Clock {
        &self.shards[0].clock
    }

    /// The sum over the shards: backlogs (an idle shard's backlog counts,
    /// though any waiting thread may take it) and accumulated waits.
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

    /// Keeps a cancelled grant for the next caller of its size on the
    /// calling thread's shard (or on the shard that already knows the
    /// grant, which refuses a second cancel); no shard's schedule ever
    /// moves back. See the [module docs](self#cancelling-a-reservation).
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
