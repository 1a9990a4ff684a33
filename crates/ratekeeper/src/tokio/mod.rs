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
//! # Guarantees
//!
//! * **Exact under paused time.** With a [`TokioClock`] the limiter and the
//!   timer keep one time, so a wait lasts what the schedule says, to the
//!   nanosecond, for ready times on whole milliseconds.
//! * **The schedule is absolute.** A task that wakes late does not move the
//!   schedule; ops due within the policy's early bound of each other go
//!   together, so one wake serves many ops at high rates, and every grant's
//!   wait reports its lateness.
//! * **Cancel safe.** A future dropped before it completes, or a
//!   [`Reservation`] dropped unwaited, gives its reservation back with
//!   [`RateLimiter::cancel`](crate::RateLimiter::cancel): back to the
//!   schedule, or kept for the next caller of its size; never used twice,
//!   and nothing (timer, waker, claim) left behind.
//! * **Token pools are waited for by their claims**: a wait goes when the
//!   pool's fill completes its claim, never on an estimate alone.
//!
//! A wait costs one `reserve`, one timer registration and one wake, O(1).
//! The repository's `docs/async.md` has the fine print: timer ticks and high
//! rates, what each limiter's `cancel` gives back, and the token pool's
//! fills.

pub(crate) mod acquire;
mod clock;
mod stream;

pub use acquire::{
    timer_nap, Acquire, AcquireOne, AsyncRateLimiter, Reservation, DEFAULT_TIMER_TICK,
};
pub use clock::TokioClock;
pub use stream::{ThrottleExt, Throttled};
