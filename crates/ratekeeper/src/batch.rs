//! Micro-batching for any limiter: a [`BatchHandle`] leases a block of
//! permits with one reservation and hands them out locally.
//!
//! Each grant of a limiter touches shared state (a compare-exchange, often a
//! clock read, an event). A handle, one per thread, reserves `k` permits at
//! once and grants them one by one from thread-local state: one clock read
//! per grant, no shared memory.
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
//! For a [`Pacer`](crate::Pacer) use [`Pacer::handle`](crate::Pacer::handle):
//! a [`PacerHandle`](crate::PacerHandle) grants each leased slot at its own
//! time, where this handle grants a lease's permits together.
//!
//! # Invariants
//!
//! 1. `left ≤ lease.permits()`: a lease's permits are granted at most once.
//! 2. A grant from a lease is ready no earlier than the lease (or than the
//!    end of the lease's own wait, if that came first).
//! 3. The limiter sees a lease before any permit of it is granted.
//!
//! A handle is `Send`, not `Sync`: its lease is in `Cell`s, adding no
//! atomics; the limiter's reservation orders a lease against other grants.
//!
//! The repository's `docs/batching.md` has what a lease changes per
//! limiter, its slack and sizing.

use core::cell::Cell;
use core::fmt;
use std::task::Waker;
use std::time::Duration;

use crate::clock::{elapsed_nanos, Clock};
use crate::limiter::{AcquireError, Grant, RateLimiter, Readiness, WaitStats};
use crate::wait::{self, saturating_nanos, WaitPolicy};

pub use crate::pacer::batch::DEFAULT_MAX_LEASE;

/// The most permits one lease holds: the reservation's cost is amortized
/// while the slack stays small.
pub const MAX_LEASE_PERMITS: u32 = 1024;

/// A per-thread batching handle on any [`RateLimiter`]; see the
/// [module docs](self).
///
/// `L` is the limiter or a reference to it (`&TokenPool`, `Arc<..>`). It
/// implements [`RateLimiter`], so every waiter works on it.
pub struct BatchHandle<L: RateLimiter> {
    limiter: L,
    /// The current lease: the limiter's grant of all its permits.
    lease: Cell<Grant>,
    /// When the lease's permits are ready (earlier if its wait ended early).
    ready: Cell<u64>,
    /// Permits of the lease not granted yet.
    left: Cell<u32>,
    /// Whether the lease's first grant (carrying the limiter's own claim)
    /// is still to be waited for.
    first_out: Cell<bool>,
    /// A clock reading this handle knows of: a lower bound of the present.
    seen: Cell<u64>,
    /// The size of the last lease (0 before the first), and when it was taken.
    size: Cell<u32>,
    leased_at: Cell<u64>,
    /// Whether the last lease asked for was refused (bounded requests).
    refused: Cell<bool>,
    /// The largest lease: the smaller of [`MAX_LEASE_PERMITS`] and the
    /// limiter's largest request.
    cap: Cell<u32>,
    max_lease: u64,
}

impl<L: RateLimiter> BatchHandle<L> {
    /// A batching handle on `limiter`, for one thread.
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

    /// Sets the longest lease, in this handle's time (default
    /// [`DEFAULT_MAX_LEASE`]); forfeits the current lease. Zero makes every
    /// request exact.
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

    /// Forfeits the permits leased and not granted yet; returns how many.
    /// Call it before a thread idles, so its lease is not granted late.
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

    /// Reads the clock, never going backwards.
    #[inline(always)]
    fn read_clock(&self) -> u64 {
        let now = self.limiter.clock().now_nanos().max(self.seen.get());
        self.seen.set(now);
        now
    }

    /// Slow path: lease afresh when the lease is spent, else the exact path.
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

    /// Whether `grant` is the current lease's first (carrying its wait).
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
    /// or takes the exact path.
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

    /// The first grant of a lease waits the limiter's way and then readies
    /// the rest; a grant carrying the limiter's claim waits its way too;
    /// others wait for their ready time under the limiter's policy.
    #[inline(always)]
    fn wait_for(&self, grant: Grant) -> Grant {
        if grant.ready_nanos() <= grant.started_nanos() {
            return grant;
        }
        self.wait_slow(grant)
    }

    /// As [`wait_for`](RateLimiter::wait_for), for async waits.
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

    /// Gives the lease back whole when `grant` is its first grant, still
    /// waiting, and nothing else of it was granted; exact-path grants go
    /// back to the limiter. Otherwise `false`.
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
