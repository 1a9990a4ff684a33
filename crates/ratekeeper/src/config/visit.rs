//! Visiting: the slice of limiters a [`LimiterVisitor`] receives, each a
//! [`SharedLimiter`] that says how a thread takes permits from it.

use super::LimiterRef;
use crate::batch::BatchHandle;
use crate::bucket::{CycleLimiter, RefillLimiter};
use crate::clock::Clock;
use crate::limiter::RateLimiter;
use crate::pacer::{Pacer, PacerHandle, ShardHandle, ShardedPacer};
use crate::pool::TokenPool;
use crate::smooth::{SmoothBursty, SmoothWarmingUp};

/// What [`LimiterConfig::visit_with_clock`](super::LimiterConfig::visit_with_clock) hands its limiters to: a loop
/// written once, compiled for each limiter type.
///
/// # Examples
///
/// Two threads share one limiter, each through what
/// [`SharedLimiter::worker`] gives it (the limiter or a batching handle):
///
/// ```
/// use ratekeeper::config::{LimiterConfig, LimiterVisitor, SharedLimiter};
/// use ratekeeper::{ManualClock, RateLimiter};
///
/// struct TwoThreads;
///
/// impl LimiterVisitor for TwoThreads {
///     type Output = u32;
///
///     fn visit<S: SharedLimiter>(self, limiters: &[S]) -> u32 {
///         let shared = &limiters[0];
///         std::thread::scope(|s| {
///             let workers: Vec<_> = (0..2)
///                 .map(|_| s.spawn(|| (0..5).map(|_| shared.worker().acquire().permits()).sum::<u32>()))
///                 .collect();
///             workers.into_iter().map(|w| w.join().unwrap()).sum()
///         })
///     }
/// }
///
/// for text in ["pacer:1M,0,batch=true", "bursty:1M", "refill:1M", "cycle:1M,batch=true"] {
///     let config: LimiterConfig = text.parse()?;
///     assert_eq!(config.visit_with_clock(ManualClock::new(0), 1, TwoThreads)?, 10);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait LimiterVisitor {
    /// What the visit returns.
    type Output;

    /// Called once, with the limiters built (`n` of them, all of one type).
    fn visit<S: SharedLimiter>(self, limiters: &[S]) -> Self::Output;
}

/// One limiter of a [`LimiterVisitor`]'s slice: the limiter threads share,
/// and how each thread takes permits from it under the configuration's
/// [`Access`](super::Access).
pub trait SharedLimiter: Sync {
    /// The limiter's clock.
    type Clock: Clock + 'static;

    /// What a thread takes permits through: the limiter itself
    /// ([`Access::Exact`](super::Access::Exact)), a batching handle ([`Access::Batched`](super::Access::Batched): a
    /// [`PacerHandle`] or a [`BatchHandle`]), or a [`ShardHandle`]
    /// ([`Access::Sharded`](super::Access::Sharded)).
    type Worker<'a>: RateLimiter
    where
        Self: 'a;

    /// The calling thread's way to the limiter. A handle is the thread's
    /// own: make it on that thread and keep it (dropping it drops what it
    /// leased).
    fn worker(&self) -> Self::Worker<'_>;

    /// The shared limiter itself, for what is not the hot path (its rate,
    /// its kind's own methods).
    fn limiter(&self) -> LimiterRef<'_, Self::Clock>;
}

/// A limiter of one of the kinds: what a batching handle on it is, and the
/// limiter by reference.
pub(super) trait Member: RateLimiter + Sync {
    type Clock: Clock + 'static;
    type Batch<'a>: RateLimiter
    where
        Self: 'a;
    fn batch(&self) -> Self::Batch<'_>;
    fn as_ref(&self) -> LimiterRef<'_, Self::Clock>;
}

/// [`Member`] for the limiters a [`BatchHandle`] batches.
macro_rules! member {
    ($($ty:ident => $variant:ident),*) => {$(
        impl<C: Clock + 'static> Member for $ty<C> {
            type Clock = C;
            type Batch<'a> = BatchHandle<&'a $ty<C>>;
            fn batch(&self) -> Self::Batch<'_> {
                BatchHandle::new(self)
            }
            fn as_ref(&self) -> LimiterRef<'_, C> {
                LimiterRef::$variant(self)
            }
        }
    )*};
}

member!(
    TokenPool => Pool,
    SmoothBursty => Bursty,
    SmoothWarmingUp => WarmingUp,
    RefillLimiter => Refill,
    CycleLimiter => Cycle
);

impl<C: Clock + 'static> Member for Pacer<C> {
    type Clock = C;
    type Batch<'a> = PacerHandle<'a, C>;
    fn batch(&self) -> PacerHandle<'_, C> {
        self.handle()
    }
    fn as_ref(&self) -> LimiterRef<'_, C> {
        LimiterRef::Pacer(self)
    }
}

/// Every thread takes permits from the limiter itself.
pub(super) struct Exact<L>(pub(super) L);

/// Every thread takes permits through a batching handle of its own.
pub(super) struct Batched<L>(pub(super) L);

impl<L: Member> SharedLimiter for Exact<L> {
    type Clock = L::Clock;
    type Worker<'a>
        = &'a L
    where
        L: 'a;
    #[inline]
    fn worker(&self) -> &L {
        &self.0
    }
    fn limiter(&self) -> LimiterRef<'_, L::Clock> {
        self.0.as_ref()
    }
}

impl<L: Member> SharedLimiter for Batched<L> {
    type Clock = L::Clock;
    type Worker<'a>
        = L::Batch<'a>
    where
        L: 'a;
    #[inline]
    fn worker(&self) -> L::Batch<'_> {
        self.0.batch()
    }
    fn limiter(&self) -> LimiterRef<'_, L::Clock> {
        self.0.as_ref()
    }
}

/// Every thread takes permits through a shard handle of its own.
impl<C: Clock + Clone + 'static> SharedLimiter for ShardedPacer<C> {
    type Clock = C;
    type Worker<'a> = ShardHandle<'a, C>;
    #[inline]
    fn worker(&self) -> ShardHandle<'_, C> {
        self.handle()
    }
    fn limiter(&self) -> LimiterRef<'_, C> {
        LimiterRef::ShardedPacer(self)
    }
}
