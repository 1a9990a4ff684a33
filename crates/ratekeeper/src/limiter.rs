//! The trait family every limiter implements, and what a decision returns.
//!
//! A limiter's one required decision is [`RateLimiter::reserve`]: it
//! reserves time on the schedule and returns a [`Grant`] saying when the
//! caller may go, or refuses without changing anything. It never sleeps;
//! waiting is written once, in the provided `acquire*` methods.

use std::task::Waker;
use std::time::Duration;

use crate::clock::Clock;
pub use crate::grant::{AcquireError, Grant, Readiness, Recovery, Ticket, WaitStats};
use crate::wait::{self, WaitPolicy};

/// A rate limiter: a decision that never sleeps, plus the waiting built on it.
///
/// Implementors provide [`reserve`](RateLimiter::reserve),
/// [`clock`](RateLimiter::clock) and [`wait_stats`](RateLimiter::wait_stats);
/// the rest is provided (the non-blocking paths `#[inline(always)]`, since an
/// out-of-line call returning a [`Grant`] through memory costs more than the
/// grant):
///
/// | call | waits? | fails when |
/// |---|---|---|
/// | [`try_acquire`](RateLimiter::try_acquire), [`try_acquire_n`](RateLimiter::try_acquire_n) | never | the permits are not available now |
/// | [`acquire`](RateLimiter::acquire), [`acquire_n`](RateLimiter::acquire_n) | until ready | `acquire_n`: the request can never be granted |
/// | [`acquire_timeout`](RateLimiter::acquire_timeout) | up to the timeout | the wait would exceed the timeout (returns at once, nothing reserved) |
///
/// Blocking calls sleep the thread (see [`WaitPolicy`]); do not call them
/// from an async task. `&L` and `Arc<L>` implement it, forwarding every
/// method a limiter may override.
pub trait RateLimiter {
    /// Decides, without sleeping, whether and when `permits` may go.
    ///
    /// With `max_wait: None` a valid request is always reserved and the
    /// grant says how long to wait; with `Some(max)`, one that would wait
    /// longer than `max` is refused with [`AcquireError::WouldWait`] and
    /// changes nothing.
    ///
    /// # Errors
    ///
    /// [`AcquireError::ZeroPermits`], [`AcquireError::InsufficientCapacity`],
    /// or [`AcquireError::WouldWait`] as above.
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError>;

    /// The clock the limiter's schedule is kept in.
    fn clock(&self) -> &dyn Clock;

    /// The limiter's current backlog and accumulated wait.
    fn wait_stats(&self) -> WaitStats;

    /// How blocking calls wait; defaults to the clock's coalescing window.
    fn wait_policy(&self) -> WaitPolicy {
        WaitPolicy::default()
    }

    /// How the limiter's state compares with a fresh limiter of the same
    /// configuration built now: what [`Keyed`](crate::keyed::Keyed) needs to
    /// drop a key without changing any decision. The default is
    /// [`Recovery::Unknown`].
    /// ```
    /// use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter, Recovery};
    ///
    /// let clock = ManualClock::new(0);
    /// let pacer = Pacer::builder(Rate::new(1000.0)?).strictness(1.0).build_with_clock(clock.clone())?;
    /// assert_eq!(pacer.recovery(), Recovery::Fresh);
    /// pacer.try_acquire()?;
    /// assert_eq!(pacer.recovery(), Recovery::Debt { nanos: 1_000_000 });
    /// clock.advance_nanos(1_000_000);
    /// assert_eq!(pacer.recovery(), Recovery::Fresh);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn recovery(&self) -> Recovery {
        Recovery::Unknown
    }

    /// Gives back a reservation its caller will not use (Go's
    /// `Reservation.Cancel`), as far as the algorithm allows: the permits
    /// become available again except for what later reservations depend on.
    /// `false` if nothing was taken back (also for a grant already
    /// cancelled, past its ready time, or not this limiter's). Each limiter
    /// documents what it gives back; the default gives back nothing.
    fn cancel(&self, grant: &Grant) -> bool {
        let _ = grant;
        false
    }

    /// Waits until it is this caller's turn to reserve, before a
    /// reservation this thread will wait for. A limiter with a waiting room
    /// (the [`Pacer`](crate::Pacer)) parks the caller here, holding nothing,
    /// for up to [`PARK_LIMIT`](crate::wait::PARK_LIMIT) at a time; the
    /// default returns at once. `acquire` and `acquire_n` call it; call it
    /// yourself before [`reserve`](RateLimiter::reserve) and
    /// [`wait_for`](RateLimiter::wait_for) on one thread.
    #[inline(always)]
    fn wait_turn(&self) {}

    /// Tells the limiter that a waiter let a grant that had to wait go at
    /// `grant.started_nanos()` (sleeps end late; ops may go a little early).
    /// Every waiter calls it once per grant it waited for. A limiter that
    /// keeps an actual timeline (the [`Pacer`](crate::Pacer)'s strict and
    /// burst modes) accounts for it; the default does nothing.
    fn released(&self, grant: &Grant) {
        let _ = grant;
    }

    /// What an async waiter does next for `grant`, not ready when decided,
    /// at the clock reading `now` (its early bound already added). Async
    /// waits ask when first polled and whenever [`Readiness::Pending`] told
    /// them to.
    ///
    /// The default: [`Readiness::Go`] once `now` reaches the ready time,
    /// else [`Readiness::SleepUntil`] it. A [`TokenPool`](crate::TokenPool)
    /// claim waits for tokens: [`Readiness::Pending`], and `waker` is woken
    /// by the fill that completes it.
    ///
    ///
    /// ```
    /// use std::task::Waker;
    /// use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter, Readiness};
    ///
    /// let pacer = Pacer::builder(Rate::new(1000.0)?).build_with_clock(ManualClock::new(0))?;
    /// pacer.reserve(1, None)?;
    /// let next = pacer.reserve(1, None)?; // ready at 1 ms
    /// let waker = Waker::noop();
    /// assert_eq!(pacer.poll_grant(&next, 0, waker), Readiness::SleepUntil(1_000_000));
    /// assert_eq!(pacer.poll_grant(&next, 1_000_000, waker), Readiness::Go);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn poll_grant(&self, grant: &Grant, now: u64, waker: &Waker) -> Readiness {
        let _ = waker;
        if grant.ready_nanos() <= now {
            Readiness::Go
        } else {
            Readiness::SleepUntil(grant.ready_nanos())
        }
    }

    /// Blocks until a grant from [`reserve`](RateLimiter::reserve) may go and
    /// returns it with its start time: the blocking driver of
    /// [`poll_grant`](RateLimiter::poll_grant), sleeping under the
    /// [`WaitPolicy`].
    #[inline(always)]
    fn wait_for(&self, grant: Grant) -> Grant {
        if grant.ready_nanos() <= grant.started_nanos() {
            // Ready when decided: no clock read, no call.
            return grant;
        }
        let poll = |g: &Grant, now, w: &Waker| self.poll_grant(g, now, w);
        let done = wait::block_on(self.clock(), self.wait_policy(), grant, poll);
        self.released(&done);
        done
    }

    /// [`wait_for`](RateLimiter::wait_for), unless `stop` ends the wait
    /// first: then the grant is given back ([`cancel`](RateLimiter::cancel))
    /// and `None` returned. The last [`STOP_TAIL`](wait::STOP_TAIL) of a
    /// wait is not stopped, so a short wait costs no extra clock read.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use ratekeeper::wait::Stop;
    /// use ratekeeper::{Clock, ManualClock, Pacer, Rate, RateLimiter};
    ///
    /// /// Stops after `n` sleeps; sleeping moves the manual clock.
    /// struct After(ManualClock, Cell<u32>);
    /// impl Stop for After {
    ///     fn is_stopped(&self) -> bool { self.1.get() == 0 }
    ///     fn sleep(&self, nanos: u64) -> bool {
    ///         self.0.advance_nanos(nanos);
    ///         self.1.set(self.1.get().saturating_sub(1));
    ///         self.is_stopped()
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new(0);
    /// let pacer = Pacer::builder(Rate::new(1.0)?).strictness(1.0).build_with_clock(clock.clone())?;
    /// pacer.acquire();
    /// let second = pacer.reserve(1, None)?; // due in 1 s
    /// assert_eq!(pacer.wait_for_or_stop(second, &After(clock.clone(), Cell::new(0))), None);
    /// // Given back: the next reservation takes the same slot, and waits for it.
    /// let again = pacer.reserve(1, None)?;
    /// assert_eq!(again.scheduled_nanos(), second.scheduled_nanos());
    /// let done = pacer.wait_for_or_stop(again, &After(clock.clone(), Cell::new(9))).unwrap();
    /// assert_eq!(done.started_nanos(), 1_000_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn wait_for_or_stop(&self, grant: Grant, stop: &dyn wait::Stop) -> Option<Grant> {
        let clock = self.clock();
        let mut now = grant.started_nanos();
        loop {
            let due = match self.poll_grant(&grant, now, Waker::noop()) {
                Readiness::Go => return Some(self.wait_for(grant)),
                Readiness::SleepUntil(at) | Readiness::Pending(Some(at)) => at,
                // Woken by the limiter, not by time: its estimate.
                Readiness::Pending(None) => grant.ready_nanos(),
            };
            let Some(nap) = wait::stop_nap_nanos(due, now) else {
                return Some(self.wait_for(grant));
            };
            if stop.is_stopped() || stop.sleep(nap) {
                self.cancel(&grant);
                return None;
            }
            now = clock.now_nanos();
        }
    }

    /// Takes one permit if it is available now.
    ///
    /// # Errors
    ///
    /// [`AcquireError::WouldWait`] if the permit is not available now.
    #[inline(always)]
    fn try_acquire(&self) -> Result<Grant, AcquireError> {
        self.try_acquire_n(1)
    }

    /// Takes `permits` if they are available now.
    ///
    /// # Errors
    ///
    /// As [`reserve`](RateLimiter::reserve) with a zero wait.
    #[inline(always)]
    fn try_acquire_n(&self, permits: u32) -> Result<Grant, AcquireError> {
        self.reserve(permits, Some(Duration::ZERO))
    }

    /// Takes one permit, blocking the thread until it may go.
    ///
    /// # Panics
    ///
    /// Only if the limiter cannot grant a single permit at all
    /// ([`AcquireError::ScheduleExhausted`]): the permit would be due after
    /// the clock's last reading (`u64::MAX` ns), or a
    /// [`Pacer`](crate::Pacer) has more than 2^63 ns of schedule reserved
    /// ahead (where the clock's readings start does not matter). Use
    /// [`acquire_n`](RateLimiter::acquire_n) to get the error.
    #[inline(always)]
    fn acquire(&self) -> Grant {
        // A match, not `?` through `acquire_n`: moving the `Result` through
        // `?` made LLVM spill the grant to the stack and reload it with
        // wider loads (a store-forwarding stall, 6 ns became 17 ns).
        self.wait_turn();
        match self.reserve(1, None) {
            Ok(g) => self.wait_for(g),
            Err(e) => refused(e),
        }
    }

    /// Takes `permits`, blocking the thread until they may go.
    ///
    /// # Errors
    ///
    /// [`AcquireError::ZeroPermits`] or [`AcquireError::InsufficientCapacity`].
    #[inline(always)]
    fn acquire_n(&self, permits: u32) -> Result<Grant, AcquireError> {
        self.wait_turn();
        match self.reserve(permits, None) {
            Ok(g) => Ok(self.wait_for(g)),
            Err(e) => Err(e),
        }
    }

    /// Takes `permits` if they can go within `timeout`, blocking until then;
    /// returns at once, with nothing reserved, if they cannot.
    ///
    /// # Errors
    ///
    /// [`AcquireError::WouldWait`] when the wait would exceed `timeout`, or the
    /// errors of [`acquire_n`](RateLimiter::acquire_n).
    #[inline]
    fn acquire_timeout(&self, permits: u32, timeout: Duration) -> Result<Grant, AcquireError> {
        match self.reserve(permits, Some(timeout)) {
            Ok(g) => Ok(self.wait_for(g)),
            Err(e) => Err(e),
        }
    }
}

#[cold]
#[inline(never)]
pub(crate) fn refused(e: AcquireError) -> ! {
    panic!("a limiter refused a single unbounded permit: {e}")
}

/// Implements [`RateLimiter`] for a pointer type by forwarding every method
/// a limiter may override to the limiter it points to, so a wrapper never
/// loses an override (a pool's `acquire_timeout`, a pacer's `released`).
macro_rules! forward_rate_limiter {
    ($($ptr:ty),+) => {$(
        impl<L: RateLimiter + ?Sized> RateLimiter for $ptr {
            fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
                (**self).reserve(permits, max_wait)
            }
            fn clock(&self) -> &dyn Clock {
                (**self).clock()
            }
            fn wait_stats(&self) -> WaitStats {
                (**self).wait_stats()
            }
            fn wait_policy(&self) -> WaitPolicy {
                (**self).wait_policy()
            }
            fn recovery(&self) -> Recovery {
                (**self).recovery()
            }
            fn cancel(&self, grant: &Grant) -> bool {
                (**self).cancel(grant)
            }
            fn released(&self, grant: &Grant) {
                (**self).released(grant)
            }
            fn poll_grant(&self, grant: &Grant, now: u64, waker: &Waker) -> Readiness {
                (**self).poll_grant(grant, now, waker)
            }
            fn wait_for(&self, grant: Grant) -> Grant {
                (**self).wait_for(grant)
            }
            fn wait_turn(&self) {
                (**self).wait_turn()
            }
            fn acquire_timeout(&self, permits: u32, timeout: Duration) -> Result<Grant, AcquireError> {
                (**self).acquire_timeout(permits, timeout)
            }
        }
    )+};
}

forward_rate_limiter!(&L, std::sync::Arc<L>);

/// How many permits a call, or a stream item, takes: a fixed `u32`, or a
/// closure of the argument (e.g. one permit per item of a batch).
///
/// ```
/// use ratekeeper::PermitCount;
///
/// assert_eq!(3u32.permits_for(&"anything"), 3);
/// let by_len = |batch: &Vec<u8>| batch.len() as u32;
/// assert_eq!(by_len.permits_for(&vec![1, 2]), 2);
/// ```
pub trait PermitCount<A: ?Sized> {
    /// The permits a call with `arg` takes.
    fn permits_for(&self, arg: &A) -> u32;
}

impl<A: ?Sized> PermitCount<A> for u32 {
    fn permits_for(&self, _: &A) -> u32 {
        *self
    }
}

impl<A: ?Sized, F: Fn(&A) -> u32> PermitCount<A> for F {
    fn permits_for(&self, arg: &A) -> u32 {
        self(arg)
    }
}
