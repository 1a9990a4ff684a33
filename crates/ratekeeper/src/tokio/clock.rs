//! [`TokioClock`]: the crate's [`Clock`] on tokio's time.

use std::time::Duration;

use ::tokio::time::Instant;

use crate::clock::Clock;

/// A [`Clock`] that reads [`tokio::time::Instant`], as nanoseconds since the
/// clock was created.
///
/// Tokio's time is the real monotonic clock, except in tests that pause it
/// (`#[tokio::test(start_paused = true)]`, `tokio::time::pause`): then it
/// moves only when the test advances it or when every task is idle and the
/// runtime jumps to the next timer. A limiter built on a `TokioClock` keeps
/// its schedule in that time, so under paused time its async waits last
/// exactly as long as the schedule says, and a test can assert them to the
/// nanosecond without waiting in real time.
///
/// Outside a runtime, `now_nanos` reads the real clock, as
/// [`tokio::time::Instant::now`] does.
///
/// # Blocking waits
///
/// [`sleep_nanos`](Clock::sleep_nanos) sleeps the thread in real time (the
/// trait's default). That is right while tokio's clock runs, but a paused
/// clock does not move while a thread sleeps, so the blocking `acquire*`
/// methods would wait forever on a limiter whose clock is paused: use the
/// async methods of [`AsyncRateLimiter`](super::AsyncRateLimiter) there.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::Clock;
/// use ratekeeper::tokio::TokioClock;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// // In a test with paused time:
/// let clock = TokioClock::new();
/// assert_eq!(clock.now_nanos(), 0);
/// tokio::time::advance(Duration::from_millis(3)).await;
/// assert_eq!(clock.now_nanos(), 3_000_000);
/// assert_eq!(clock.instant_at(3_000_000), tokio::time::Instant::now());
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokioClock {
    origin: Instant,
}

impl TokioClock {
    /// A clock whose origin is tokio's now.
    pub fn new() -> TokioClock {
        TokioClock {
            origin: Instant::now(),
        }
    }

    /// A clock counting from `origin`; instants before it read as zero.
    pub fn with_origin(origin: Instant) -> TokioClock {
        TokioClock { origin }
    }

    /// The instant this clock counts from.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// The tokio instant `nanos` nanoseconds after the origin (saturating
    /// at the furthest instant tokio can represent).
    pub fn instant_at(&self, nanos: u64) -> Instant {
        add_saturating(self.origin, Duration::from_nanos(nanos))
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        // Tokio's Instant never goes backwards; the subtraction saturates
        // regardless. u64 nanoseconds last 584 years from the origin.
        let d = Instant::now().saturating_duration_since(self.origin);
        d.as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(d.subsec_nanos()))
    }
}

/// About 30 years: how far tokio itself puts a timer that never fires.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `at + by`, or `at` plus 30 years where that cannot be represented.
pub(crate) fn add_saturating(at: Instant, by: Duration) -> Instant {
    at.checked_add(by)
        .or_else(|| at.checked_add(FAR_FUTURE))
        .unwrap_or(at)
}
