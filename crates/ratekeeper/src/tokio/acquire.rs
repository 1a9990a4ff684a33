//! Async acquire and reservations for every [`RateLimiter`].

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{ready, Context, Poll};
use std::time::Duration;

use ::tokio::time::{sleep_until, Instant, Sleep};
use pin_project_lite::pin_project;

use super::clock::add_saturating;
use crate::limiter::{AcquireError, Grant, RateLimiter, Readiness};
use crate::wait::{saturating_nanos, timer_nap_nanos};

/// Tokio's timer tick: the sleep resolution of async waits.
///
/// A sleep shorter than a tick lasts a tick, so under the default
/// [`WaitPolicy`](crate::WaitPolicy) an operation at most `clamp(slot / 2,
/// tick / 2, tick)` away goes at once (the early bound of [`crate::wait`]).
/// See [Timer ticks and high rates](super#timer-ticks-and-high-rates).
pub const DEFAULT_TIMER_TICK: Duration = Duration::from_millis(1);

/// How early `limiter`'s async waits let an op go: the default policy's
/// early bound at the timer tick, else the policy's window.
pub(crate) fn window_nanos<L: RateLimiter + ?Sized>(limiter: &L) -> u64 {
    let policy = limiter.wait_policy();
    if policy.is_default() {
        policy.early_nanos_at(saturating_nanos(DEFAULT_TIMER_TICK))
    } else {
        policy.window_nanos(limiter.clock())
    }
}

/// How long an async wait for a grant ready at `ready_nanos` sleeps on
/// tokio's timer: `None` when it may go now (within the early window of
/// the limiter's [`WaitPolicy`](crate::WaitPolicy)), else a nap ending just
/// inside that window. One clock read.
pub fn timer_nap<L: RateLimiter + ?Sized>(limiter: &L, ready_nanos: u64) -> Option<Duration> {
    let now = limiter.clock().now_nanos();
    let left = ready_nanos.saturating_sub(now);
    let window = window_nanos(limiter);
    (left > window).then(|| Duration::from_nanos(timer_nap_nanos(left, window)))
}

/// A timer slot: boxed, so that the futures and streams holding one stay
/// `Unpin`, and reused (reset) from one wait to the next.
pub(crate) type Timer = Option<Pin<Box<Sleep>>>;

/// Arms `timer` to fire `nanos` from now.
pub(crate) fn arm(timer: &mut Timer, nanos: u64) {
    let deadline = add_saturating(Instant::now(), Duration::from_nanos(nanos));
    match timer {
        Some(t) => t.as_mut().reset(deadline),
        None => *timer = Some(Box::pin(sleep_until(deadline))),
    }
}

#[cold]
#[inline(never)]
pub(crate) fn refused(e: AcquireError) -> ! {
    panic!("a limiter refused a single unbounded permit: {e}")
}

/// Where one wait stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Reserved, not polled yet.
    Fresh,
    /// Sleeping until the grant's ready time: when the timer fires, go.
    Sleeping,
    /// Waiting on the limiter ([`Readiness::Pending`]): ask again at every
    /// wake, the limiter's or the timer's.
    Asking,
    /// Ready, or given back.
    Done,
}

/// The waiting shared by every async face: a grant, held until it is ready
/// and given back ([`RateLimiter::cancel`]) if the wait is abandoned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waiter {
    grant: Grant,
    window: u64,
    stage: Stage,
    /// When a wait the limiter keeps [`Pending`](Readiness::Pending) gives
    /// up (clock nanoseconds); `None`: never.
    deadline: Option<u64>,
}

impl Waiter {
    /// A wait for `grant`, going up to `window` ns early.
    pub(crate) fn new(grant: Grant, window: u64) -> Waiter {
        Waiter {
            grant,
            window,
            stage: Stage::Fresh,
            deadline: None,
        }
    }

    /// Gives the wait up at `deadline` (clock nanoseconds) if the limiter
    /// still keeps it pending then.
    pub(crate) fn with_deadline(mut self, deadline: u64) -> Waiter {
        self.deadline = Some(deadline);
        self
    }

    pub(crate) fn grant(&self) -> Grant {
        self.grant
    }

    pub(crate) fn set_window(&mut self, window: u64) {
        self.window = window;
    }

    /// Whether a reservation is held: not yet ready, not given back.
    pub(crate) fn holds(&self) -> bool {
        self.stage != Stage::Done
    }

    /// Gives a held reservation back; true if the limiter took any back.
    pub(crate) fn abandon<L: RateLimiter + ?Sized>(&mut self, limiter: &L) -> bool {
        let held = self.holds();
        self.stage = Stage::Done;
        held && limiter.cancel(&self.grant)
    }

    /// Takes the grant without waiting (the caller waits its own way).
    pub(crate) fn keep(&mut self) -> Grant {
        self.stage = Stage::Done;
        self.grant
    }

    /// Blocks the thread until ready (the limiter's own blocking wait).
    pub(crate) fn block<L: RateLimiter + ?Sized>(&mut self, limiter: &L) -> Grant {
        let stage = core::mem::replace(&mut self.stage, Stage::Done);
        match stage {
            Stage::Fresh | Stage::Sleeping | Stage::Asking => limiter.wait_for(self.grant),
            Stage::Done => self.grant,
        }
    }

    fn done(&mut self, grant: Grant) -> Poll<Grant> {
        self.stage = Stage::Done;
        Poll::Ready(grant)
    }

    /// Polls a wait without a deadline; see [`poll_until`](Self::poll_until).
    pub(crate) fn poll<L: RateLimiter + ?Sized>(
        &mut self,
        limiter: &L,
        timer: &mut Timer,
        cx: &mut Context<'_>,
    ) -> Poll<Grant> {
        // Without a deadline the wait only ends with the grant; the
        // reservation is the answer either way.
        let grant = self.grant;
        self.poll_until(limiter, timer, cx)
            .map(|g| g.unwrap_or(grant))
    }

    /// Polls the wait: asks the limiter ([`RateLimiter::poll_grant`]) and
    /// sleeps on tokio's timer in `timer` or waits for the limiter's wake.
    /// `Ready(None)`: the deadline passed while the limiter kept the wait
    /// pending, and the reservation was given back.
    pub(crate) fn poll_until<L: RateLimiter + ?Sized>(
        &mut self,
        limiter: &L,
        timer: &mut Timer,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Grant>> {
        if self.stage == Stage::Fresh && self.grant.ready_nanos() <= self.grant.started_nanos() {
            // Ready when decided: no clock read, no timer.
            return self.done(self.grant).map(Some);
        }
        assert!(
            self.stage != Stage::Done,
            "a rate limiter wait was polled after it completed"
        );
        loop {
            if self.stage == Stage::Sleeping {
                if let Some(t) = timer {
                    ready!(t.as_mut().poll(cx));
                }
                return self.release(limiter).map(Some);
            }
            // Fresh or asking: within the early bound (sleeping to it on a
            // timer of 1 ms ticks is impossible) an op goes at once, at most
            // the bound early; `started` records when.
            let now = limiter.clock().now_nanos();
            let horizon = now.saturating_add(self.window);
            match limiter.poll_grant(&self.grant, horizon, cx.waker()) {
                Readiness::Go if self.stage == Stage::Fresh => {
                    return self.done(self.grant.started_at(now)).map(Some);
                }
                Readiness::Go => return self.release(limiter).map(Some),
                Readiness::SleepUntil(at) => {
                    arm(timer, timer_nap_nanos(at.saturating_sub(now), self.window));
                    self.stage = Stage::Sleeping;
                }
                Readiness::Pending(at) => {
                    self.stage = Stage::Asking;
                    let nap = match (at, self.deadline) {
                        (_, Some(d)) if d <= now => {
                            self.abandon(limiter);
                            return Poll::Ready(None);
                        }
                        (Some(at), Some(d)) if at < d => {
                            timer_nap_nanos(at.saturating_sub(now), self.window)
                        }
                        (_, Some(d)) => d - now,
                        (Some(at), None) => timer_nap_nanos(at.saturating_sub(now), self.window),
                        (None, None) => return Poll::Pending,
                    };
                    arm(timer, nap);
                    if let Some(t) = timer {
                        ready!(t.as_mut().poll(cx));
                    }
                    // The time came already: ask again.
                }
            }
        }
    }

    /// Lets the op go after a wait, and tells the limiter when.
    fn release<L: RateLimiter + ?Sized>(&mut self, limiter: &L) -> Poll<Grant> {
        let now = limiter.clock().now_nanos();
        let done = self.grant.started_at(now);
        limiter.released(&done);
        self.done(done)
    }
}

pin_project! {
    /// The future of [`AsyncRateLimiter::acquire_n_async`] and
    /// [`acquire_timeout_async`](AsyncRateLimiter::acquire_timeout_async):
    /// reserves on its first poll, then sleeps until the grant is ready.
    /// Dropped while waiting, it gives its reservation back
    /// ([Cancel safety](super#cancel-safety)).
    #[must_use = "futures do nothing unless polled; an unpolled acquire reserves nothing"]
    pub struct Acquire<'a, L>
    where
        L: RateLimiter,
        L: ?Sized,
    {
        limiter: &'a L,
        permits: u32,
        max_wait: Option<Duration>,
        window: Option<u64>,
        waiter: Option<Waiter>,
        timer: Timer,
    }

    impl<'a, L> PinnedDrop for Acquire<'a, L>
    where
        L: RateLimiter,
        L: ?Sized,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(w) = this.waiter {
                w.abandon(*this.limiter);
            }
        }
    }
}

impl<'a, L: RateLimiter + ?Sized> Acquire<'a, L> {
    fn new(limiter: &'a L, permits: u32, max_wait: Option<Duration>) -> Self {
        Acquire {
            limiter,
            permits,
            max_wait,
            window: None,
            waiter: None,
            timer: None,
        }
    }

    /// Lets this acquire go up to `window` before its ready time instead of
    /// the default ([`DEFAULT_TIMER_TICK`]); `Duration::ZERO` sleeps for
    /// every wait, and a wait still lasts at least a tick.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::{Pacer, Rate};
    /// use ratekeeper::tokio::{AsyncRateLimiter, TokioClock};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = TokioClock::new();
    /// let pacer = Pacer::builder(Rate::new(2000.0)?).build_with_clock(clock)?;
    /// pacer.acquire_async().await;
    /// let g = pacer.acquire_async().await; // due in 0.5 ms: goes at once
    /// assert_eq!((g.ready_nanos(), g.started_nanos()), (500_000, 0));
    /// // With no window it sleeps to the next tick: never early.
    /// let g = pacer.acquire_n_async(1).coalesce(Duration::ZERO).await?;
    /// assert_eq!((g.ready_nanos(), g.started_nanos()), (1_000_000, 1_000_000));
    /// # Ok(()) }
    /// ```
    pub fn coalesce(mut self, window: Duration) -> Self {
        self.window = Some(saturating_nanos(window));
        self
    }
}

impl<L: RateLimiter + ?Sized> Future for Acquire<'_, L> {
    type Output = Result<Grant, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let limiter: &L = this.limiter;
        let waiter = match this.waiter {
            Some(w) => w,
            None => {
                let grant = limiter.reserve(*this.permits, *this.max_wait)?;
                let window = this.window.unwrap_or_else(|| window_nanos(limiter));
                let waiter = Waiter::new(grant, window);
                this.waiter.insert(match *this.max_wait {
                    // The timeout is kept however late a pending wait's
                    // limiter is (as the blocking `acquire_timeout`).
                    Some(max) => waiter
                        .with_deadline(grant.started_nanos().saturating_add(saturating_nanos(max))),
                    None => waiter,
                })
            }
        };
        let grant = waiter.grant();
        let answer = ready!(waiter.poll_until(limiter, this.timer, cx));
        Poll::Ready(answer.ok_or_else(|| {
            let max_wait = this.max_wait.unwrap_or(Duration::MAX);
            let now = limiter.clock().now_nanos();
            let more = grant.ready_nanos().saturating_sub(now).max(1);
            AcquireError::WouldWait {
                wait: max_wait.saturating_add(Duration::from_nanos(more)),
                max_wait,
            }
        }))
    }
}

impl<L: RateLimiter + ?Sized> fmt::Debug for Acquire<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.permits)
            .field("max_wait", &self.max_wait)
            .field("grant", &self.waiter.map(|w| w.grant()))
            .finish_non_exhaustive()
    }
}

pin_project! {
    /// The future of [`AsyncRateLimiter::acquire_async`]: one permit, as
    /// [`Acquire`], returning the [`Grant`] itself.
    #[must_use = "futures do nothing unless polled; an unpolled acquire reserves nothing"]
    pub struct AcquireOne<'a, L>
    where
        L: RateLimiter,
        L: ?Sized,
    {
        #[pin]
        inner: Acquire<'a, L>,
    }
}

impl<L: RateLimiter + ?Sized> AcquireOne<'_, L> {
    /// As [`Acquire::coalesce`].
    pub fn coalesce(self, window: Duration) -> Self {
        AcquireOne {
            inner: self.inner.coalesce(window),
        }
    }
}

impl<L: RateLimiter + ?Sized> Future for AcquireOne<'_, L> {
    type Output = Grant;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Grant> {
        match ready!(self.project().inner.poll(cx)) {
            Ok(g) => Poll::Ready(g),
            Err(e) => refused(e),
        }
    }
}

impl<L: RateLimiter + ?Sized> fmt::Debug for AcquireOne<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AcquireOne").field(&self.inner).finish()
    }
}

pin_project! {
    /// A reservation as a value (Go's `Reservation`): decided when made,
    /// then waited for ([`wait`](Self::wait) or `.await`), kept
    /// ([`into_grant`](Self::into_grant)) or given back
    /// ([`cancel`](Self::cancel)). Dropped unfinished, it is given back.
    /// `L` is `&Limiter` for a borrowed reservation, `Arc<Limiter>` for one
    /// that moves to another task.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ratekeeper::{Clock, Pacer, Rate};
    /// use ratekeeper::tokio::{AsyncRateLimiter, Reservation, TokioClock};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = TokioClock::new();
    /// let pacer = Arc::new(Pacer::builder(Rate::new(100.0)?).build_with_clock(clock)?);
    /// pacer.acquire_async().await; // the first slot, at 0
    ///
    /// let r = Reservation::new(pacer.clone(), 1, None)?;
    /// assert_eq!(r.delay(), Duration::from_millis(10));
    /// let grant = tokio::spawn(r).await?; // awaited on another task
    /// assert_eq!(grant.started_nanos(), 10_000_000);
    /// assert_eq!(clock.now_nanos(), 10_000_000);
    ///
    /// // Decided, then not wanted: given back as far as the limiter allows.
    /// let unwanted = pacer.reservation(1, None)?;
    /// let _given_back: bool = unwanted.cancel();
    /// # Ok(()) }
    /// ```
    #[must_use = "a reservation that is dropped is given back"]
    pub struct Reservation<L>
    where
        L: RateLimiter,
    {
        limiter: L,
        waiter: Waiter,
        timer: Timer,
    }

    impl<L> PinnedDrop for Reservation<L>
    where
        L: RateLimiter,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            this.waiter.abandon(&*this.limiter);
        }
    }
}

impl<L: RateLimiter> Reservation<L> {
    /// Reserves `permits` now; refused, changing nothing, if the wait would
    /// exceed `max_wait` (`None`: any wait).
    ///
    /// # Errors
    ///
    /// As [`RateLimiter::reserve`].
    pub fn new(limiter: L, permits: u32, max_wait: Option<Duration>) -> Result<Self, AcquireError> {
        let grant = limiter.reserve(permits, max_wait)?;
        let window = window_nanos(&limiter);
        Ok(Reservation {
            limiter,
            waiter: Waiter::new(grant, window),
            timer: None,
        })
    }

    /// The grant as decided, with the decision time as its start.
    pub fn grant(&self) -> Grant {
        self.waiter.grant()
    }

    /// When the permits may go, in nanoseconds of the limiter's clock.
    pub fn ready_nanos(&self) -> u64 {
        self.waiter.grant().ready_nanos()
    }

    /// The wait from the decision (Go's `Delay`): zero if it could go at once.
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.waiter.grant().delay_nanos())
    }

    /// The wait left from now (Go's `DelayFrom(now)`). One clock read.
    pub fn remaining(&self) -> Duration {
        let now = self.limiter.clock().now_nanos();
        Duration::from_nanos(self.ready_nanos().saturating_sub(now))
    }

    /// The limiter the reservation was made on.
    pub fn limiter(&self) -> &L {
        &self.limiter
    }

    /// As [`Acquire::coalesce`], for `.await`.
    pub fn coalesce(mut self, window: Duration) -> Self {
        self.waiter.set_window(saturating_nanos(window));
        self
    }

    /// Blocks the thread until the permits may go ([`RateLimiter::wait_for`]).
    /// Do not call it from an async task; `.await` the reservation there.
    pub fn wait(mut self) -> Grant {
        self.waiter.block(&self.limiter)
    }

    /// Gives the reservation back (Go's `Reservation.Cancel`); true if the
    /// limiter took anything back.
    pub fn cancel(mut self) -> bool {
        self.waiter.abandon(&self.limiter)
    }

    /// Keeps the reservation; the caller waits until
    /// [`ready_nanos`](Self::ready_nanos) its own way.
    pub fn into_grant(mut self) -> Grant {
        self.waiter.keep()
    }
}

impl<L: RateLimiter> Future for Reservation<L> {
    type Output = Grant;

    /// Sleeps until the permits may go (up to one window early). Cancel
    /// safe: dropped unfinished, the reservation is given back.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Grant> {
        let this = self.project();
        this.waiter.poll(&*this.limiter, this.timer, cx)
    }
}

impl<L: RateLimiter> fmt::Debug for Reservation<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("grant", &self.waiter.grant())
            .field("held", &self.waiter.holds())
            .finish_non_exhaustive()
    }
}

/// Async waiting for every [`RateLimiter`], on tokio's timer.
///
/// Implemented for every limiter. Each method decides with
/// [`RateLimiter::reserve`] when first polled, then sleeps with
/// [`tokio::time::sleep_until`] until the grant is ready (within one tick:
/// at once). No method spins or uses a thread of its own.
///
/// | call | output | fails when |
/// |---|---|---|
/// | [`acquire_async`](Self::acquire_async) | [`Grant`] | never (panics as [`RateLimiter::acquire`]) |
/// | [`acquire_n_async`](Self::acquire_n_async) | `Result<Grant, _>` | the request can never be granted |
/// | [`acquire_timeout_async`](Self::acquire_timeout_async) | `Result<Grant, _>` | the wait would exceed the timeout: at once, nothing reserved |
/// | [`reservation`](Self::reservation) | [`Reservation`] | as `reserve` |
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Pacer, Rate};
/// use ratekeeper::tokio::{AsyncRateLimiter, TokioClock};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pacer = Pacer::builder(Rate::new(100.0)?).build_with_clock(TokioClock::new())?;
/// let start = tokio::time::Instant::now();
/// for _ in 0..3 {
///     pacer.acquire_async().await;
/// }
/// assert_eq!(start.elapsed(), Duration::from_millis(20)); // slots at 0, 10, 20 ms
///
/// // A wait longer than the timeout is refused at once.
/// let err = pacer.acquire_timeout_async(1, Duration::from_millis(5)).await.unwrap_err();
/// assert_eq!(err.retry_after(), Some(Duration::from_millis(10)));
/// assert_eq!(start.elapsed(), Duration::from_millis(20));
/// # Ok(()) }
/// ```
pub trait AsyncRateLimiter: RateLimiter {
    /// Takes one permit, sleeping on tokio's timer until it may go.
    ///
    /// # Cancel safety
    ///
    /// Dropped unfinished, it gives its reservation back
    /// ([`RateLimiter::cancel`]; see [Cancel safety](super#cancel-safety)).
    ///
    /// # Panics
    ///
    /// If the limiter cannot grant a single permit at all, or when it must
    /// sleep outside a Tokio runtime with the time driver enabled.
    fn acquire_async(&self) -> AcquireOne<'_, Self> {
        AcquireOne {
            inner: Acquire::new(self, 1, None),
        }
    }

    /// Takes `permits`, sleeping on tokio's timer until they may go.
    ///
    /// Cancel safe, and panics outside a runtime, as
    /// [`acquire_async`](Self::acquire_async).
    ///
    /// # Errors
    ///
    /// [`AcquireError::ZeroPermits`], [`AcquireError::InsufficientCapacity`]
    /// or [`AcquireError::ScheduleExhausted`], when first polled.
    fn acquire_n_async(&self, permits: u32) -> Acquire<'_, Self> {
        Acquire::new(self, permits, None)
    }

    /// Takes `permits` if they can go within `timeout`, sleeping until
    /// then; fails at once, with nothing reserved, if they cannot.
    ///
    /// The timeout holds however late the limiter is: a
    /// [`TokenPool`](crate::TokenPool) claim whose fills come late is
    /// withdrawn at the deadline. Cancel safe, and panics outside a
    /// runtime, as [`acquire_async`](Self::acquire_async).
    ///
    /// # Errors
    ///
    /// [`AcquireError::WouldWait`] when the wait would exceed `timeout` (at
    /// once, or at the deadline), or those of
    /// [`acquire_n_async`](Self::acquire_n_async).
    fn acquire_timeout_async(&self, permits: u32, timeout: Duration) -> Acquire<'_, Self> {
        Acquire::new(self, permits, Some(timeout))
    }

    /// Reserves `permits` now as a [`Reservation`].
    ///
    /// # Errors
    ///
    /// As [`RateLimiter::reserve`].
    fn reservation(
        &self,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Reservation<&Self>, AcquireError> {
        Reservation::new(self, permits, max_wait)
    }
}

impl<L: RateLimiter + ?Sized> AsyncRateLimiter for L {}
