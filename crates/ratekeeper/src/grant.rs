//! What a decision returns: the [`Grant`] (with its issuer's opaque
//! [`Ticket`]), a refusal ([`AcquireError`]), wait bookkeeping
//! ([`WaitStats`]) and a waiter's next step ([`Readiness`]). A leaf: it
//! depends on no limiter and no waiting code.

use std::num::NonZeroU32;
use std::time::Duration;

/// A reservation a limiter granted, in nanoseconds of its
/// [`Clock`](crate::Clock):
///
/// * **scheduled**: when the op would start on the ideal schedule;
/// * **ready**: when the limiter lets it go (never before `scheduled`);
/// * **started**: when the caller was let go: after a blocking wait, the
///   clock reading at its end (late by a sleep's lateness, or early by at
///   most the [`WaitPolicy`](crate::WaitPolicy)'s window); else the reading
///   the decision used (possibly a [`Pacer`](crate::Pacer)'s cached clock).
///
/// The **wait time** `started − scheduled` is the scheduling delay a load
/// generator adds to the service time to measure free of coordinated
/// omission; [`response_nanos`](Self::response_nanos) measures it exactly.
///
/// ```
/// use ratekeeper::{ManualClock, Pacer, RateLimiter, Rate};
///
/// let clock = ManualClock::new(0);
/// let pacer = Pacer::builder(Rate::new(1000.0)?).strictness(1.0).build_with_clock(clock.clone())?;
/// clock.advance_nanos(3_000_000); // the caller shows up 3 ms late
/// let g = pacer.acquire();
/// assert_eq!(g.scheduled_nanos(), 0);
/// assert_eq!(g.ready_nanos(), 3_000_000);
/// assert_eq!(g.wait_nanos(), 3_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    scheduled: u64,
    ready: u64,
    started: u64,
    permits: u32,
    /// The issuing limiter's own mark on the reservation (see [`Ticket`]).
    ticket: Option<Ticket>,
}

impl Grant {
    /// Builds a grant; `ready` is raised to `scheduled` if earlier.
    #[inline]
    pub fn new(scheduled: u64, ready: u64, started: u64, permits: u32) -> Grant {
        Grant {
            scheduled,
            ready: ready.max(scheduled),
            started,
            permits,
            ticket: None,
        }
    }

    /// The grant as four words (scheduled, ready, started, and the permits
    /// with the ticket above them), for a slow path's call to return.
    #[inline(always)]
    pub(crate) fn to_words(self) -> [u64; 4] {
        let ticket = self.ticket.map_or(0, |t| t.0.get());
        let tail = u64::from(self.permits) | u64::from(ticket) << 32;
        [self.scheduled, self.ready, self.started, tail]
    }

    /// The grant [`to_words`](Self::to_words) gave. A caller whose paths
    /// merge takes a slow path's grant this way, so that they merge as
    /// values (kept in registers): a `Grant` returned by a call would be
    /// the memory the call wrote, and every path's grant would go through
    /// it.
    #[inline(always)]
    pub(crate) fn from_words(w: [u64; 4]) -> Grant {
        Grant {
            scheduled: w[0],
            ready: w[1],
            started: w[2],
            permits: w[3] as u32,
            ticket: NonZeroU32::new((w[3] >> 32) as u32).map(Ticket),
        }
    }

    /// When the operation was due on the ideal schedule.
    #[inline]
    pub fn scheduled_nanos(&self) -> u64 {
        self.scheduled
    }

    /// When the limiter lets the operation go.
    #[inline]
    pub fn ready_nanos(&self) -> u64 {
        self.ready
    }

    /// When the caller was let go (see the type's documentation).
    #[inline]
    pub fn started_nanos(&self) -> u64 {
        self.started
    }

    /// How many permits this grant holds.
    #[inline]
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The wait time: `started − scheduled`, zero if on time or early.
    #[inline]
    pub fn wait_nanos(&self) -> u64 {
        self.started.saturating_sub(self.scheduled)
    }

    /// [`wait_nanos`](Self::wait_nanos) as a `Duration`.
    #[inline]
    pub fn wait(&self) -> Duration {
        Duration::from_nanos(self.wait_nanos())
    }

    /// The wait left before `ready`, as of `started` (zero: go at once).
    #[inline]
    pub fn delay_nanos(&self) -> u64 {
        self.ready.saturating_sub(self.started)
    }

    /// Response time of an op that ended at `end_nanos`: `end − scheduled`,
    /// wait plus service time.
    #[inline]
    pub fn response_nanos(&self, end_nanos: u64) -> u64 {
        end_nanos.saturating_sub(self.scheduled)
    }

    /// The same grant, started at `started` (used by the waiting layer).
    #[inline]
    pub(crate) fn started_at(self, started: u64) -> Grant {
        Grant { started, ..self }
    }

    /// The same grant, for `permits` permits (a batching handle's first
    /// grant from a lease).
    #[inline]
    pub(crate) fn with_permits(self, permits: u32) -> Grant {
        Grant { permits, ..self }
    }

    /// The same grant, carrying `ticket`, so its limiter recognises it
    /// when it comes back (`cancel`, `poll_grant`, `released`).
    #[inline]
    pub fn with_ticket(self, ticket: Ticket) -> Grant {
        Grant {
            ticket: Some(ticket),
            ..self
        }
    }

    /// The ticket the issuing limiter put on this grant, if any.
    #[inline]
    pub fn ticket(&self) -> Option<Ticket> {
        self.ticket
    }

    /// [`with_ticket`](Self::with_ticket) for the crate's limiters, whose
    /// tickets are never 0; a 0 carries no ticket.
    #[inline]
    pub(crate) fn with_claim(self, id: u32) -> Grant {
        Grant {
            ticket: NonZeroU32::new(id).map(Ticket),
            ..self
        }
    }

    /// The crate's limiters' reading of [`ticket`](Self::ticket).
    #[inline]
    pub(crate) fn claim(&self) -> Option<u32> {
        self.ticket.map(|t| t.0.get())
    }
}

/// A limiter's opaque mark on a [`Grant`], minted and read only by the
/// limiter that issued it (a [`TokenPool`](crate::TokenPool) claim, a Pacer
/// grant's epoch); to anyone else a value to carry and compare. A limiter
/// outside this crate mints its own with [`Ticket::new`].
///
/// ```
/// use std::num::NonZeroU32;
/// use ratekeeper::{Grant, Ticket};
///
/// let id = NonZeroU32::new(7).unwrap();
/// let g = Grant::new(0, 0, 0, 1).with_ticket(Ticket::new(id));
/// assert_eq!(g.ticket().map(Ticket::get), Some(id));
/// assert_eq!(Grant::new(0, 0, 0, 1).ticket(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket(NonZeroU32);

impl Ticket {
    /// A ticket holding `id`, for the limiter that mints it.
    pub fn new(id: NonZeroU32) -> Ticket {
        Ticket(id)
    }

    /// The id the minting limiter put in.
    pub fn get(self) -> NonZeroU32 {
        self.0
    }
}

/// Why a reservation was not granted.
///
/// [`WouldWait`](AcquireError::WouldWait) and
/// [`Unavailable`](AcquireError::Unavailable) are "not now"; the others are
/// "never": retrying the same request cannot succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AcquireError {
    /// The reservation would have had to wait longer than the caller allowed.
    /// Nothing was reserved.
    #[error("would have to wait {wait:?}, longer than the {max_wait:?} allowed")]
    WouldWait {
        /// How long the caller would have had to wait.
        wait: Duration,
        /// How long the caller was willing to wait.
        max_wait: Duration,
    },
    /// Zero permits were asked for.
    #[error("cannot acquire zero permits")]
    ZeroPermits,
    /// More permits were asked for at once than the limiter can ever grant.
    #[error("cannot acquire {requested} permits at once: this limiter grants at most {max}")]
    InsufficientCapacity {
        /// Permits asked for.
        requested: u32,
        /// The most this limiter can grant in one reservation.
        max: u32,
    },
    /// The request needs more schedule than a limiter can hold: over 2^62
    /// ns in one reservation, more than 2^63 ns reserved past the start, or
    /// a wait ending past the clock's last reading (`u64::MAX` ns).
    #[error("the request needs more schedule than the limiter can hold")]
    ScheduleExhausted,
    /// The limiter's shared state (such as `ratekeeper-redis`'s server)
    /// could not be reached in time, and its failure policy refuses.
    /// Nothing was reserved; a later request may succeed.
    #[error("the shared limiter could not be reached, and its failure policy refuses")]
    Unavailable,
    /// The limiter's shared state does not match its configuration (its
    /// key holds another kind of value or another limit). Never an outage:
    /// nothing was reserved, and retrying fails until the configuration
    /// changes.
    #[error("the shared limiter's state does not match its configuration")]
    Misconfigured,
}

impl AcquireError {
    /// For [`WouldWait`](AcquireError::WouldWait), how long the caller would have
    /// had to wait; `None` for errors that no wait can cure.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            AcquireError::WouldWait { wait, .. } => Some(*wait),
            _ => None,
        }
    }
}

/// A limiter's wait bookkeeping, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitStats {
    /// How far the schedule is behind the clock now: the wait the next operation
    /// would start with. Zero when the limiter is on or ahead of schedule.
    pub backlog_nanos: u64,
    /// All wait accumulated since the limiter started (or restarted): the
    /// backlog plus backlog checkpointed at configuration changes or
    /// forfeited by strictness, each counted once.
    pub total_wait_nanos: u64,
}

/// What an async waiter does next for a grant: the answer of
/// [`RateLimiter::poll_grant`](crate::RateLimiter::poll_grant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The op may go now.
    Go,
    /// The op may go at this clock reading, and nothing but time stands in
    /// its way: sleep until then (less the early bound) and go.
    SleepUntil(u64),
    /// The op waits for something other than time (a token pool's fill).
    /// Ask again when the given waker is woken, and at the latest when the
    /// clock reaches the reading, if one is given (the waiter must act
    /// then: an inline-filled pool's waiters fill it).
    Pending(Option<u64>),
}

/// How a limiter's state compares with a fresh limiter's of the same
/// configuration built at the same moment ([`RateLimiter::recovery`](crate::RateLimiter::recovery)).
///
/// Dropping a [`Fresh`](Recovery::Fresh) limiter and building a new one
/// later changes no decision; dropping one with [`Credit`](Recovery::Credit)
/// only forfeits credit; dropping one in [`Debt`](Recovery::Debt) forgives
/// debt, letting its caller through sooner than the limit allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Recovery {
    /// Decides every request exactly as a fresh limiter would.
    Fresh,
    /// Would grant at least as much as a fresh limiter, and sometimes more:
    /// an average-mode pacer's backlog, a bucket fuller than its initial
    /// permits.
    Credit,
    /// Would grant less than a fresh limiter until `nanos` have passed
    /// (without further requests).
    Debt {
        /// Nanoseconds until the limiter is no longer in debt.
        nanos: u64,
    },
    /// The limiter cannot tell.
    Unknown,
}
