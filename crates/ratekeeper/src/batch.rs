//! Micro-batching for any limiter: a [`BatchHandle`] leases a block of
//! permits with one reservation and hands them out locally.
//!
//! Every limiter decides each grant on shared state: one compare-exchange
//! (the [`TokenPool`](crate::TokenPool), the smooth limiters, the
//! Resilience4j limiters), often a clock read, and for the Resilience4j
//! limiters an event. From several threads at a high rate that shared state
//! is the bottleneck. A handle, one per thread, asks its limiter for `k`
//! permits at once (one [`reserve`](RateLimiter::reserve) of `k`) and grants
//! them one by one from thread-local state, without touching shared memory:
//! one clock read per grant, so that each grant's wait is exact.
//!
//! ```
//! use ratekeeper::{BatchHandle, RateLimiter, RefillLimiter, RefillConfig};
//! use std::time::Duration;
//!
//! let config = RefillConfig::builder()
//!     .limit_for_period(100_000)
//!     .limit_refresh_period(Duration::from_millis(1))
//!     .build()?;
//! let limiter = RefillLimiter::new(config);
//! std::thread::scope(|s| {
//!     for _ in 0..2 {
//!         s.spawn(|| {
//!             let handle = BatchHandle::new(&limiter); // one per thread
//!             for _ in 0..1000 {
//!                 handle.acquire();
//!             }
//!         });
//!     }
//! });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! For a [`Pacer`](crate::Pacer) use [`Pacer::handle`](crate::Pacer::handle)
//! instead: a [`PacerHandle`](crate::PacerHandle) leases schedule and grants
//! each slot at its own time, where this handle grants a lease's permits as
//! the limiter granted the lease, together.
//!
//! # Invariants
//!
//! 1. `left ≤ lease.permits()`; the permits of a lease are granted once: at
//!    most `lease.permits()` grants (counting permits) come from one lease.
//! 2. A grant from a lease is ready no earlier than the lease: `ready` is
//!    the lease's ready time, or the time its own wait ended, when the
//!    limiter's wait for it ended earlier than its estimate.
//! 3. The limiter sees a lease before any permit of it is granted.
//!
//! A handle is `Send` but not `Sync`: its lease is thread-local state
//! (`Cell`s), so it adds no atomics and needs no memory ordering of its own;
//! the limiter's reservation orders a lease against other grants.
//!
//! The repository's `docs/batching.md` says what a lease changes for each
//! limiter, the slack it adds, and how a lease is sized.

use core::cell::Cell;
use core::fmt;
use std::task::Waker;
use std::time::Duration;

use crate::clock::{elapsed_nanos, Clock};
use crate::limiter::{AcquireError, Grant, RateLimiter, Readiness, WaitStats};
use crate::wait::{self, saturating_nanos, WaitPolicy};

pub use crate::pacer::batch::DEFAULT_MAX_LEASE;

/// The most permits one lease holds: one reservation per 1024 grants makes
/// its cost negligible, and keeps a lease (the slack, and a handle's burst)
/// small.
pub const MAX_LEASE_PERMITS: u32 = 1024;

/// A per-thread batching handle on any [`RateLimiter`]; see the
/// [module docs](self).
///
/// `L` is the limiter or a reference to it (`&TokenPool`,
/// `Arc<RefillLimiter>`, ...). The handle implements [`RateLimiter`], so
/// blocking and async waiting, the decorators and the stream throttle work
/// on it as on its limiter.
pub struct BatchHandle<L: RateLimiter> {
    limiter: L,
    /// The current lease: the limiter's grant of all its permits.
    lease: Cell<Grant>,
    /// When the lease's permits are ready: the lease's ready time, or when
    /// the wait for its first grant ended, if earlier.
    ready: Cell<u64>,
    /// Permits of the lease not granted yet.
    left: Cell<u32>,
    /// Whether the lease's first grant, which carries the limiter's own
    /// handle on the lease (a pool's claim), is still to be waited for.
    first_out: Cell<bool>,
    /// A clock reading this handle knows of: a lower bound of the present.
    seen: Cell<u64>,
    /// The size of the last lease (0 before the first), and when it was
    /// taken.
    size: Cell<u32>,
    leased_at: Cell<u64>,
    /// Whether the last lease asked for was refused (bounded requests).
    refused: Cell<bool>,
    /// The largest lease: [`MAX_LEASE_PERMITS`] or the limiter's largest
    /// request, whichever is smaller.
    cap: Cell<u32>,
    max_lease: u64,
}

impl<L: RateLimiter> BatchHandle<L> {
    /// A batching handle on `limiter`, for one thread.
    ///
    /// ```
    /// use ratekeeper::{BatchHandle, RateLimiter, TokenPool};
    /// use std::sync::Arc;
    ///
    /// let pool = Arc::new(TokenPool::from_spec(&"1000000".parse()?).build()?);
    /// let worker = std::thread::spawn({
    ///     let pool = Arc::clone(&pool);
    ///     move || {
    ///         let handle = BatchHandle::new(pool);
    ///         (0..100).map(|_| handle.acquire().permits()).sum::<u32>()
    ///     }
    /// });
    /// assert_eq!(worker.join().unwrap(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(limiter: L) -> Self {
        let now = limiter.clock().now_nanos();
        BatchHandle {
            limiter,
            lease: Cell::new(Grant::new(0, 0, 0, 0)),
            ready: Cell::new(0),
            left: Cell::new(0),
            first_out: Cell::new(false),
            seen: Cell::new(now),
            size: Cell::new(0),
            leased_at: Cell::new(now),
            refused: Cell::new(false),
            cap: Cell::new(MAX_LEASE_PERMITS),
            max_lease: saturating_nanos(DEFAULT_MAX_LEASE),
        }
    }

    /// Sets the longest lease, in this handle's own time (default
    /// [`DEFAULT_MAX_LEASE`]): each lease holds about the permits the handle
    /// grants in that long. Forfeits the current lease first. A zero
    /// duration makes every lease one request: the exact path.
    pub fn with_max_lease(self, max_lease: Duration) -> Self {
        self.release();
        BatchHandle {
            max_lease: saturating_nanos(max_lease),
            ..self
        }
    }

    /// The limiter this handle leases from.
    pub fn limiter(&self) -> &L {
        &self.limiter
    }

    /// Permits leased and not granted yet.
    pub fn leased_permits(&self) -> u32 {
        self.left.get()
    }

    /// Forfeits the permits leased and not granted yet (see the [module
    /// docs](self); `docs/batching.md` has the slack) and returns how many
    /// there were. Call it before a thread idles, so that its lease is not
    /// granted late, in one burst, when it comes back.
    pub fn release(&self) -> u32 {
        self.left.replace(0)
    }

    /// Grants `permits` from the lease; `None` when it does not hold them.
    #[inline(always)]
    fn reserve_local(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Option<Result<Grant, AcquireError>> {
        let left = self.left.get();
        if permits == 0 || permits > left {
            return None;
        }
        let ready = self.ready.get();
        // Every grant is made against a fresh reading, so that its wait is
        // exact: the reading is its start when it is ready at once.
        let now = self.read_clock();
        if let Some(max) = max_wait {
            let wait = ready.saturating_sub(now);
            if wait > saturating_nanos(max) {
                // Nothing taken: the permits stay in the lease.
                return Some(Err(AcquireError::WouldWait {
                    wait: Duration::from_nanos(wait),
                    max_wait: max,
                }));
            }
        }
        self.left.set(left - permits);
        let scheduled = self.lease.get().scheduled_nanos().min(ready);
        Some(Ok(Grant::new(scheduled, ready, now, permits)))
    }

    /// Reads the clock and keeps the reading as the known present (a
    /// reading that appears to go backwards counts as no time passing).
    #[inline(always)]
    fn read_clock(&self) -> u64 {
        let now = self.limiter.clock().now_nanos().max(self.seen.get());
        self.seen.set(now);
        now
    }

    /// The lease does not hold the request: lease afresh when the lease is
    /// spent, or take the exact path.
    #[cold]
    #[inline(never)]
    fn reserve_slow(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        if self.left.get() > 0 {
            // A request larger than the rest of the lease: the lease is kept.
            return self.limiter.reserve(permits, max_wait);
        }
        // The lease size: the permits this handle granted in the last
        // `max_lease` of its time, at most twice the last lease and `cap`.
        let now = self.read_clock();
        let elapsed = elapsed_nanos(self.leased_at.get(), now).max(1);
        let last = self.size.get();
        let observed = u128::from(last) * u128::from(self.max_lease) / u128::from(elapsed);
        // A fresh handle (`last == 0`) has observed nothing: one permit.
        // Right after a refused lease, no growth: the limiter is short.
        let growth = if self.refused.get() { 1 } else { 2 };
        let size = observed.min(growth * u128::from(last)).max(1) as u32;
        let size = size.min(self.cap.get()).max(permits);
        // Bounded requests lease only permits ready at once; a lease of just
        // the request is the request, with its own bound.
        let lease_wait = if size > permits {
            max_wait.map(|_| Duration::ZERO)
        } else {
            max_wait
        };
        let lease = match self.limiter.reserve(size, lease_wait) {
            Ok(lease) => lease,
            Err(AcquireError::InsufficientCapacity { max, .. }) if size > permits => {
                // The limiter grants at most `max` at once: lease no more.
                self.cap.set(max.max(1));
                return self.limiter.reserve(permits, max_wait);
            }
            Err(AcquireError::WouldWait { .. }) if size > permits => {
                self.refused.set(true);
                self.size.set((size / 2).max(1));
                self.leased_at.set(now);
                return self.limiter.reserve(permits, max_wait);
            }
            Err(e) => return Err(e),
        };
        self.refused.set(false);
        self.size.set(size);
        self.leased_at.set(now);
        // The limiter's own reading, taken after ours, is the newer lower
        // bound of the present: a lease ready when decided then grants its
        // permits as ready, without a wait.
        if lease.started_nanos() > now {
            self.seen.set(lease.started_nanos());
        }
        self.lease.set(lease);
        self.ready.set(lease.ready_nanos());
        self.left.set(size - permits);
        self.first_out
            .set(lease.ready_nanos() > lease.started_nanos() || lease.claim().is_some());
        Ok(lease.with_permits(permits))
    }

    /// Whether `grant` is the first grant of the current lease (the one that
    /// carries the lease's own wait).
    fn is_first(&self, grant: &Grant) -> bool {
        let lease = self.lease.get();
        self.first_out.get()
            && grant.claim() == lease.claim()
            && grant.scheduled_nanos() == lease.scheduled_nanos()
            && grant.ready_nanos() == lease.ready_nanos()
            && grant.started_nanos() == lease.started_nanos()
    }
}

impl<L: RateLimiter> RateLimiter for BatchHandle<L> {
    /// Grants from the lease when it holds the request, else leases afresh
    /// or takes the limiter's exact path; see the [module docs](self).
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        match self.reserve_local(permits, max_wait) {
            Some(result) => result,
            None => self.reserve_slow(permits, max_wait),
        }
    }

    #[inline]
    fn clock(&self) -> &dyn Clock {
        self.limiter.clock()
    }

    /// The limiter's.
    fn wait_stats(&self) -> WaitStats {
        self.limiter.wait_stats()
    }

    /// The limiter's.
    #[inline]
    fn wait_policy(&self) -> WaitPolicy {
        self.limiter.wait_policy()
    }

    /// The limiter's, when the next request leases afresh.
    #[inline(always)]
    fn wait_turn(&self) {
        if self.left.get() == 0 {
            self.limiter.wait_turn()
        }
    }

    /// The first grant of a lease waits the limiter's own way (a pool's
    /// claim waits for its tokens) and readies the rest of the lease when it
    /// ends; other grants that carry a claim of the limiter's (a pool's,
    /// from the exact path) wait the limiter's way too; every other grant
    /// waits for its ready time under the limiter's wait policy, as a
    /// limiter's default wait does.
    #[inline(always)]
    fn wait_for(&self, grant: Grant) -> Grant {
        if grant.ready_nanos() <= grant.started_nanos() {
            return grant;
        }
        self.wait_slow(grant)
    }

    /// As [`wait_for`](RateLimiter::wait_for) decides, for async waits: the
    /// lease's first grant asks the limiter about the lease (a pool's claim
    /// goes when its tokens come) and readies the rest of the lease when it
    /// may go; a grant that carries a claim of the limiter's asks the
    /// limiter; other grants go at their ready time.
    fn poll_grant(&self, grant: &Grant, now: u64, waker: &Waker) -> Readiness {
        if self.is_first(grant) {
            let answer = self.limiter.poll_grant(&self.lease.get(), now, waker);
            if answer == Readiness::Go {
                self.first_out.set(false);
                let now = self.limiter.clock().now_nanos();
                self.ready.set(self.ready.get().min(now));
            }
            answer
        } else if grant.claim().is_some() {
            self.limiter.poll_grant(grant, now, waker)
        } else if grant.ready_nanos() <= now {
            Readiness::Go
        } else {
            Readiness::SleepUntil(grant.ready_nanos())
        }
    }

    /// Gives back the lease whole when `grant` is its first grant, still
    /// waiting, and no other permit of the lease was granted; the exact
    /// path's grants go back to the limiter. Grants from a lease that others
    /// were granted from cannot be given back (returns `false`).
    fn cancel(&self, grant: &Grant) -> bool {
        if self.is_first(grant) {
            let lease = self.lease.get();
            if self.left.get() + grant.permits() != lease.permits() {
                return false;
            }
            if self.limiter.cancel(&lease) {
                self.left.set(0);
                self.first_out.set(false);
                return true;
            }
            return false;
        }
        if self.is_local(grant) {
            return false;
        }
        self.limiter.cancel(grant)
    }
}

impl<L: RateLimiter> BatchHandle<L> {
    #[cold]
    #[inline(never)]
    fn wait_slow(&self, grant: Grant) -> Grant {
        let done = if self.is_first(&grant) {
            self.first_out.set(false);
            let done = self.limiter.wait_for(self.lease.get());
            // The rest of the lease is ready when its wait ended (a pool's
            // tokens may come before its estimate).
            self.ready.set(self.ready.get().min(done.started_nanos()));
            done.with_permits(grant.permits())
        } else if grant.claim().is_some() {
            self.limiter.wait_for(grant)
        } else {
            // A lease's other grants, which carry no claim of the limiter's,
            // wait for their ready time.
            wait::block_until(self.limiter.clock(), grant, self.limiter.wait_policy())
        };
        if done.started_nanos() > self.seen.get() {
            self.seen.set(done.started_nanos());
        }
        done
    }

    /// Whether `grant` may be one granted from the current lease.
    fn is_local(&self, grant: &Grant) -> bool {
        let lease = self.lease.get();
        grant.claim().is_none()
            && (grant.ready_nanos() == lease.ready_nanos()
                || grant.ready_nanos() == self.ready.get())
            && grant.scheduled_nanos() <= lease.scheduled_nanos()
    }
}

impl<L: RateLimiter + fmt::Debug> fmt::Debug for BatchHandle<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchHandle")
            .field("limiter", &self.limiter)
            .field("leased_permits", &self.left.get())
            .field("lease_size", &self.size.get())
            .field("max_lease_nanos", &self.max_lease)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
