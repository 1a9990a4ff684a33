//! Async waiting on tokio's timer, for every limiter (feature `tokio`).
//!
//! * [`AsyncRateLimiter`]: `acquire_async`, `acquire_n_async`,
//!   `acquire_timeout_async` and `reservation` for every
//!   [`RateLimiter`](crate::RateLimiter).
//! * [`Reservation`]: a reservation as a value (Go's `Reservation`): reserve
//!   now, learn when you may go, then `.await` it, [`wait`](Reservation::wait)
//!   for it on the thread, or [`cancel`](Reservation::cancel) it.
//! * [`Throttled`] ([`ThrottleExt`]): a `Stream` whose items each wait for
//!   their permits.
//! * [`TokioClock`]: a [`Clock`](crate::Clock) that follows tokio's time, so
//!   that tests with paused time drive the limiter too.
//!
//! Every wait sleeps once with [`tokio::time::sleep_until`]: no thread of
//! its own, no spinning, no polling loop.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use ratekeeper::{Pacer, Rate};
//! use ratekeeper::tokio::{AsyncRateLimiter, TokioClock};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // 100 ops/s shared by 4 tasks. The limiter keeps tokio's time (paused
//! // here, as in a `#[tokio::test(start_paused = true)]`), so the waits are
//! // exact.
//! let pacer = Arc::new(Pacer::builder(Rate::new(100.0)?).build_with_clock(TokioClock::new())?);
//! let start = tokio::time::Instant::now();
//! let tasks: Vec<_> = (0..4)
//!     .map(|_| {
//!         let pacer = pacer.clone();
//!         tokio::spawn(async move {
//!             for _ in 0..5 {
//!                 pacer.acquire_async().await;
//!             }
//!         })
//!     })
//!     .collect();
//! for t in tasks {
//!     t.await?;
//! }
//! // 20 permits at 100/s: the last one's slot is at 190 ms.
//! assert_eq!(start.elapsed(), Duration::from_millis(190));
//! # Ok(()) }
//! ```
//!
//! # Contents
//!
//! * [Time](#time)
//! * [Timer ticks and high rates](#timer-ticks-and-high-rates)
//! * [Cancel safety](#cancel-safety)
//! * [The token pool](#the-token-pool)
//!
//! # Time
//!
//! A limiter keeps its schedule on its own [`Clock`](crate::Clock); a wait
//! sleeps on tokio's timer for the time between the clock's now and the
//! grant's ready time. With a [`TokioClock`] the two are the same time, and
//! under paused time (`#[tokio::test(start_paused = true)]`) a wait lasts
//! exactly what the schedule says: tests can assert durations to the
//! nanosecond, instantly, for ready times on whole milliseconds (tokio's
//! timer fires on millisecond ticks, paused or not; keep a paused test's
//! clock on whole milliseconds too, since tokio's auto-advance from between
//! two ticks overshoots the deadline by the fraction). With the default
//! [`MonotonicClock`](crate::MonotonicClock) the limiter keeps real time
//! while the waits use tokio's; that is right in production, but paused
//! time then moves the timer and not the limiter. Governor sleeps on a timer
//! thread of its own (`futures-timer`), which does not see tokio's paused
//! clock, so its async tests cannot be exact.
//!
//! # Timer ticks and high rates
//!
//! Tokio's timer has a 1 ms tick: a sleep ends on the first tick at or
//! after its deadline, so a 100 µs sleep takes about 1.1 ms. A limiter that
//! slept once per operation and measured the next interval from when it
//! woke would lose that lateness every time. Here:
//!
//! * **The schedule is absolute.** Every grant's ready time is fixed when it
//!   is reserved, on the limiter's schedule; a task that wakes late does not
//!   move the schedule, so lateness is not lost (each limiter credits the
//!   time it did not use as its algorithm says: burst catch-up, stored
//!   permits, a bucket).
//! * **Operations within a tick go together.** Sleeping to an operation
//!   less than a tick away is impossible, so one whose ready time is at
//!   most the *early bound* away goes at once, that much early at most
//!   ([`Grant::started_nanos`](crate::Grant::started_nanos) records when).
//!   Under the default [`WaitPolicy`](crate::WaitPolicy) the bound is
//!   `clamp(slot / 2, tick / 2, tick)`, `slot` the limiter's nanoseconds per
//!   permit (half a tick when it has none), so an op never goes more than
//!   half a slot early where slots are longer than a tick; a coalescing
//!   policy ([`WaitPolicy::coalesce`](crate::WaitPolicy::coalesce)) or the
//!   future's [`coalesce`](Acquire::coalesce) sets it, and a precise policy
//!   means zero. At 100 k ops/s a task thus sleeps once per tick and takes
//!   fifty to a hundred permits per wake, rather than sleeping a tick for
//!   each.
//! * **A longer wait wakes on a tick.** It sleeps until the early bound
//!   before the ready time (plus a nanosecond), and tokio's timer ends the
//!   sleep on the first tick after that: at most the bound early, or up to
//!   a tick less the bound late, which the op's wait time reports. Every
//!   waiter tells the limiter when it let its op go
//!   ([`RateLimiter::released`](crate::RateLimiter::released)): a Pacer in a
//!   burst mode then does not count a late wake against the caller (see
//!   its [Waiting](crate::pacer#waiting) section), which at high rates
//!   would lose a large share of the rate. Under paused time, a ready time
//!   on a whole millisecond is woken exactly then.
//!
//! Over any span longer than a tick, the operations released stay within
//! one tick's worth of what the schedule allows, and the long-run rate is
//! the schedule's (the `async_pacing` example of `ratekeeper-bench`
//! measures it). What the timer cannot cover is a runtime that does not
//! run: time the whole process is descheduled is lateness like any other,
//! caught up as the limiter's algorithm allows. A pacer with the default
//! burst ratio 1.1 catches a stall of `L` up over `10 L`, so on a busy
//! machine it runs a little short where strictness 0 (caught up at once)
//! does not; a bucket loses any stall longer than its capacity.
//!
//! # Cancel safety
//!
//! An async acquire decides when first polled and holds its reservation
//! while it sleeps. Dropped before it completes (a `select!` that took
//! another branch, a timeout, an aborted task), it gives the reservation
//! back with [`RateLimiter::cancel`](crate::RateLimiter::cancel) (Go's
//! `Reservation.Cancel`). Dropped before its first poll it has reserved
//! nothing. A [`Reservation`] dropped without being waited for is given
//! back the same way. What is guaranteed:
//!
//! * **Never over-admitted.** A reservation given back either moves the
//!   limiter's schedule back (its latest reservation) or is kept for the
//!   next caller asking for the same number of permits, who goes at the
//!   time the schedule gave it (a token pool's claim is withdrawn and its
//!   tokens go to the claims behind it). Each slot is used once at most;
//!   no window of grants holds more than the limiter allows without
//!   cancellations.
//! * **Little lost.** What cannot be given back stays spent: a kept grant
//!   whose ready time passes before anyone asks for its size, and what a
//!   limiter's `cancel` refuses (see the table). With half of all attempts
//!   under a timeout shorter than a slot, every limiter in this crate
//!   delivers within 5 % of what it delivers when nobody gives up (a
//!   property test on paused time checks it: the `cancel_props` module of
//!   `tests/async`).
//! * **Nothing left behind**: no timer, no queued waker, no claim.
//!
//! What `cancel` gives back is each limiter's to say, in its own
//! documentation ("Cancelling a reservation"):
//!
//! | limiter | what an abandoned async acquire gives back |
//! |---|---|
//! | [`Pacer`](crate::Pacer) | as [`Pacer`'s `cancel`](crate::pacer): the latest reservation to the schedule, an earlier one to the next caller |
//! | [`TokenPool`](crate::TokenPool) | as the pool's `cancel` ([`pool`](crate::pool)): the claim is withdrawn; see also [The token pool](#the-token-pool) |
//! | [`SmoothBursty`](crate::SmoothBursty), [`SmoothWarmingUp`](crate::SmoothWarmingUp) | as their `cancel` ([`smooth`](crate::smooth)), as the Pacer's |
//! | [`RefillLimiter`](crate::RefillLimiter), [`CycleLimiter`](crate::CycleLimiter) | as their `cancel` ([`bucket`](crate::bucket)), as the Pacer's |
//! | [`ShardedPacer`](crate::ShardedPacer) | kept for the next caller on the calling thread's shard, never given back to a schedule ([`pacer::shard`](crate::pacer::shard)) |
//! | [`BatchHandle`](crate::BatchHandle) | a lease whole if none of it was granted; a grant from a lease others were granted from stays spent |
//! | a limiter of your own | what its `cancel` does; the trait's default gives back nothing |
//!
//! # The token pool
//!
//! A [`TokenPool`](crate::TokenPool) with tokens in its active pool grants
//! at once, like any limiter. Short of tokens, its reservation is a *claim*
//! queued behind earlier ones, which the pool's fills complete, first come,
//! first served. An async wait for a claim goes when the claim has its
//! tokens, as a blocking wait does, never at the grant's estimated ready
//! time alone: the waiter asks the pool
//! ([`RateLimiter::poll_grant`](crate::RateLimiter::poll_grant)), and the
//! fill that completes the claim wakes the task, whoever fills:
//!
//! * [`Filling::Thread`](crate::pool::Filling::Thread): the filler thread;
//! * [`Filling::Manual`](crate::pool::Filling::Manual): the
//!   [`refill`](crate::TokenPool::refill) that brings the tokens, however
//!   long after the estimate that is;
//! * [`Filling::Inline`](crate::pool::Filling::Inline) (the default): the
//!   waiters themselves. A blocked thread refills as usual; otherwise each
//!   async waiter that asks fills from the clock and sleeps until the
//!   claim's tokens are due (at least the fill granule, at most half the
//!   active pool after the last fill) before asking again.
//!
//! A wait dropped before its claim completes withdraws the claim (tokens it
//! had received go to the claims behind it), so waits that time out push
//! nobody's tokens later and no group of waits goes at once on stale
//! estimates.
//!
//! Async waits fill an inline pool only when they take permits or ask
//! about their claims, and wake at most once per timer tick (and a little after it on a busy runtime), while
//! the active pool holds 1 ms of tokens from 2000 ops/s up: a fill after a
//! sleep often covers more than the active pool holds. An inline pool gives
//! the claims queued at that moment their tokens first
//! ([Serving waiting callers first](crate::pool#serving-waiting-callers-first)),
//! so no time that the queued claims were waiting for becomes backlog. A
//! fill on a late timer tick can still cover more than the active pool
//! holds beyond those claims (one per waiting task), and the overflow is
//! caught up at the burst ratio, so on a busy machine async pacing at
//! 1 M ops/s runs short, where waits that went at their
//! estimates, ahead of their tokens, had held the rate (and let bursts
//! through). A pool with
//! [`Filling::Thread`](crate::pool::Filling::Thread) keeps nosqlbench's
//! step, whose late fills overflow to the waiting pool.

pub(crate) mod acquire;
mod clock;
mod stream;

pub use acquire::{
    timer_nap, Acquire, AcquireOne, AsyncRateLimiter, Reservation, DEFAULT_TIMER_TICK,
};
pub use clock::TokioClock;
pub use stream::{ThrottleExt, Throttled};
