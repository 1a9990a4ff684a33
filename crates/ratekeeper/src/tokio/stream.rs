//! [`Throttled`]: a `Stream` whose items each wait for their permits.

use core::fmt;
use core::pin::Pin;
use core::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use pin_project_lite::pin_project;

use super::acquire::{refused, window_nanos, Timer, Waiter};
use crate::limiter::PermitCount;
use crate::limiter::{AcquireError, RateLimiter};
use crate::wait::saturating_nanos;

pin_project! {
    /// A stream that lets each item of `S` through once `L` grants its
    /// permits (a fixed count or [`PermitCount`] from the item). Build with
    /// [`ThrottleExt::throttled`], [`ThrottleExt::throttled_by`] or
    /// [`new`](Self::new). Waits are on tokio's timer; zero permits go at
    /// once; more than the limiter grants at once are charged in its
    /// largest pieces, in turn. Share a limiter with `&L` or `Arc<L>`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the stream while an item waits cancels its reservation
    /// ([`RateLimiter::cancel`]) and drops the item; a dropped `next()`
    /// future leaves both in the stream, still waiting.
    ///
    /// # Panics
    ///
    /// Polling panics outside a Tokio runtime with the time driver when an
    /// item must wait, and if the limiter refuses a single permit.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures_util::StreamExt;
    /// use ratekeeper::{Pacer, Rate};
    /// use ratekeeper::tokio::{ThrottleExt, TokioClock};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let pacer = Pacer::builder(Rate::new(100.0)?).strictness(1.0).build_with_clock(TokioClock::new())?;
    /// let start = tokio::time::Instant::now();
    /// // Each batch takes one permit per element.
    /// let batches = futures_util::stream::iter([vec![1], vec![2, 3], vec![4]])
    ///     .throttled_by(&pacer, |b: &Vec<u32>| b.len() as u32);
    /// let seen: Vec<_> = batches.map(|b| (b, start.elapsed())).collect().await;
    /// assert_eq!(seen[1], (vec![2, 3], Duration::from_millis(10)));
    /// assert_eq!(seen[2], (vec![4], Duration::from_millis(30)));
    /// # Ok(()) }
    /// ```
    #[must_use = "streams do nothing unless polled"]
    pub struct Throttled<S, L, P>
    where
        S: Stream,
        L: RateLimiter,
    {
        #[pin]
        stream: S,
        limiter: L,
        permits: P,
        window: Option<u64>,
        item: Option<S::Item>,
        // Permits still to reserve for `item`.
        owed: u32,
        // The most one reservation may take (learned from the limiter).
        piece: u32,
        waiter: Option<Waiter>,
        timer: Timer,
    }

    impl<S, L, P> PinnedDrop for Throttled<S, L, P>
    where
        S: Stream,
        L: RateLimiter,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(w) = this.waiter {
                w.abandon(&*this.limiter);
            }
        }
    }
}

impl<S: Stream, L: RateLimiter, P> Throttled<S, L, P> {
    /// `stream`, each item taking `permits` of `limiter`: a `u32` or a
    /// closure `|item: &T| -> u32` (argument type written out).
    pub fn new(stream: S, limiter: L, permits: P) -> Self {
        Throttled {
            stream,
            limiter,
            permits,
            window: None,
            item: None,
            owed: 0,
            piece: u32::MAX,
            waiter: None,
            timer: None,
        }
    }

    /// As [`Acquire::coalesce`](super::Acquire::coalesce), for every item.
    pub fn coalesce(mut self, window: Duration) -> Self {
        self.window = Some(saturating_nanos(window));
        self
    }

    /// The limiter.
    pub fn limiter(&self) -> &L {
        &self.limiter
    }

    /// The inner stream.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }
}

impl<S, L, P> Stream for Throttled<S, L, P>
where
    S: Stream,
    L: RateLimiter,
    P: PermitCount<S::Item>,
{
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let mut this = self.project();
        loop {
            if let Some(w) = this.waiter.as_mut() {
                ready!(w.poll(&*this.limiter, this.timer, cx));
                *this.waiter = None;
            }
            if this.item.is_some() {
                if *this.owed == 0 {
                    return Poll::Ready(this.item.take());
                }
                let n = (*this.owed).min(*this.piece);
                match this.limiter.reserve(n, None) {
                    Ok(grant) => {
                        *this.owed -= n;
                        let window = this.window.unwrap_or_else(|| window_nanos(&*this.limiter));
                        *this.waiter = Some(Waiter::new(grant, window));
                    }
                    Err(AcquireError::InsufficientCapacity { max, .. }) if max > 0 && max < n => {
                        *this.piece = max;
                    }
                    Err(e) => refused(e),
                }
                continue;
            }
            match ready!(this.stream.as_mut().poll_next(cx)) {
                None => return Poll::Ready(None),
                Some(item) => {
                    *this.owed = this.permits.permits_for(&item);
                    *this.item = Some(item);
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let held = usize::from(self.item.is_some());
        let (lo, hi) = self.stream.size_hint();
        (
            lo.saturating_add(held),
            hi.and_then(|h| h.checked_add(held)),
        )
    }
}

impl<S, L, P> fmt::Debug for Throttled<S, L, P>
where
    S: Stream + fmt::Debug,
    L: RateLimiter,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttled")
            .field("stream", &self.stream)
            .field("waiting", &self.waiter.map(|w| w.grant()))
            .field("owed", &self.owed)
            .finish_non_exhaustive()
    }
}

/// [`Throttled`] as a method of every `Stream`.
pub trait ThrottleExt: Stream + Sized {
    /// This stream, one permit of `limiter` per item; see [`Throttled`].
    fn throttled<L: RateLimiter>(self, limiter: L) -> Throttled<Self, L, u32> {
        Throttled::new(self, limiter, 1)
    }

    /// This stream, each item taking `permits` of `limiter`: a `u32`, or a
    /// closure `Fn(&Self::Item) -> u32`; see [`Throttled`].
    fn throttled_by<L: RateLimiter, P: PermitCount<Self::Item>>(
        self,
        limiter: L,
        permits: P,
    ) -> Throttled<Self, L, P> {
        Throttled::new(self, limiter, permits)
    }
}

impl<S: Stream> ThrottleExt for S {}
