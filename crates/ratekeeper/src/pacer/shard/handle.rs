//! [`ShardHandle`]'s code: a per-thread handle on a [`ShardedPacer`], with
//! a home shard it moves when it steals from a less crowded one.

use core::fmt;
use std::time::Duration;

use super::{ShardHandle, ShardedPacer};
use crate::clock::Clock;
use crate::limiter::{AcquireError, Grant, RateLimiter, WaitStats};
use crate::sync::Ordering;
use crate::wait::WaitPolicy;

impl<'a, C: Clock> ShardHandle<'a, C> {
    /// The shard this handle's next request tries first: the one it was
    /// given, or the last one it took a grant from instead.
    pub fn shard(&self) -> usize {
        self.home.get()
    }

    /// The sharded pacer this handle is on.
    pub fn pacer(&self) -> &'a ShardedPacer<C> {
        self.pacer
    }
}

impl<C: Clock> RateLimiter for ShardHandle<'_, C> {
    /// Reserves on this handle's shard, or steals; see the [module
    /// docs](super).
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        let home = self.home.get();
        let (grant, at) = self.pacer.reserve_from(home, permits, max_wait);
        self.last.set(at);
        if at != home && grant.is_ok() {
            self.move_to(home, at);
        }
        grant
    }

    #[inline]
    /// As the sharded pacer's: kept for the next caller of its size.
    fn cancel(&self, grant: &Grant) -> bool {
        self.pacer.cancel(grant)
    }

    fn clock(&self) -> &dyn Clock {
        self.pacer.clock()
    }

    /// The sharded pacer's: the sum over the shards.
    fn wait_stats(&self) -> WaitStats {
        self.pacer.wait_stats()
    }

    #[inline]
    fn wait_policy(&self) -> WaitPolicy {
        self.pacer.wait_policy()
    }

    /// The shard that decided the grant (this handle's last).
    fn released(&self, grant: &Grant) {
        self.pacer.shards[self.last.get()].released(grant)
    }
}

impl<C: Clock> ShardHandle<'_, C> {
    /// Its own shard `from` would have made it wait and shard `to` did
    /// not as long: the handle makes `to` its home if fewer handles live
    /// there than on `from`, so that handles spread over idle shards but
    /// never crowd onto one.
    #[cold]
    fn move_to(&self, from: usize, to: usize) {
        let residents = &self.pacer.residents;
        // Ordering: Relaxed for all four; the counts are hints (see
        // `home_at`). Racing moves may leave the spread uneven for a
        // while, never a request without a shard.
        if residents[to].load(Ordering::Relaxed) < residents[from].load(Ordering::Relaxed) {
            residents[from].fetch_sub(1, Ordering::Relaxed);
            residents[to].fetch_add(1, Ordering::Relaxed);
            self.home.set(to);
        }
    }
}

impl<C: Clock> Clone for ShardHandle<'_, C> {
    fn clone(&self) -> Self {
        self.pacer.home_at(self.home.get())
    }
}

impl<C: Clock> Drop for ShardHandle<'_, C> {
    fn drop(&mut self) {
        // Ordering: Relaxed; see `home_at`.
        self.pacer.residents[self.home.get()].fetch_sub(1, Ordering::Relaxed);
    }
}

impl<C: Clock> fmt::Debug for ShardHandle<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardHandle")
            .field("shard", &self.home.get())
            .field("shards", &self.pacer.shards.len())
            .finish()
    }
}
