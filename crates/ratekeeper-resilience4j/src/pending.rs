//! [`PendingPermission`]: an acquisition decided but not yet over, and the
//! state both limiters keep beside their bucket (name, events, the waiting
//! gauge, the timeout and the wait policy).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ratekeeper::wait::{self, WaitPolicy};
use ratekeeper::{Clock, ConfigError, Grant, Ticket};

use crate::config::{refused, JavaShape};
use crate::events::{EventPublisher, PermitEvent, PermitEventKind};

/// What both limiters share besides their algorithm: name, events, the
/// waiting gauge, the timeout and the wait policy.
pub(crate) struct Hub {
    name: Arc<str>,
    events: EventPublisher<PermitEvent>,
    /// Live pending acquisitions that have a wait.
    waiting: AtomicU64,
    /// The timeout in nanoseconds, `0 ..= i64::MAX`.
    timeout: AtomicU64,
    policy: WaitPolicy,
}

impl Hub {
    pub(crate) fn new(name: Arc<str>, timeout_nanos: i64) -> Hub {
        Hub {
            name,
            events: EventPublisher::new(),
            waiting: AtomicU64::new(0),
            timeout: AtomicU64::new(timeout_nanos.max(0) as u64),
            policy: WaitPolicy::default(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn events(&self) -> &EventPublisher<PermitEvent> {
        &self.events
    }

    pub(crate) fn policy(&self) -> WaitPolicy {
        self.policy
    }

    pub(crate) fn set_policy(&mut self, policy: WaitPolicy) {
        self.policy = policy;
    }

    #[inline]
    pub(crate) fn timeout_nanos(&self) -> u64 {
        // Ordering: Relaxed. The timeout is a plain parameter; a call ordered
        // after `set_timeout` (same thread, or synchronized with it) sees the
        // new value by coherence, and no other data is published through it.
        self.timeout.load(Ordering::Relaxed)
    }

    pub(crate) fn set_timeout(&self, timeout: Duration) -> Result<(), ConfigError> {
        let t = i64::try_from(timeout.as_nanos())
            .map_err(|_| refused(JavaShape::TimeoutTooLarge(timeout.as_nanos() as i128)))?;
        // Ordering: Relaxed; see `timeout_nanos`.
        self.timeout.store(t as u64, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn waiting(&self) -> u64 {
        // Ordering: Relaxed; a gauge.
        self.waiting.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn publish(&self, kind: PermitEventKind, permits: u64, clock_nanos: u64) {
        self.events
            .publish_with(|| PermitEvent::new(self.name.clone(), kind, permits, clock_nanos));
    }

    /// A pending acquisition for a decision taken at `now`: `Some(wait)` if
    /// granted, `None` if refused (published now). `limiter` gives a grant
    /// back, `ticket` is the grant's (see [`Undo`]).
    pub(crate) fn pending<'a>(
        &'a self,
        clock: &'a dyn Clock,
        limiter: &'a dyn Undo,
        permits: u32,
        now: u64,
        wait: Option<u64>,
        ticket: Option<Ticket>,
    ) -> PendingPermission<'a> {
        let state = match wait {
            None => {
                self.publish(PermitEventKind::FailedAcquire, u64::from(permits), now);
                PendingState::Refused
            }
            Some(0) => PendingState::Ready,
            Some(_) => {
                // Ordering: Relaxed; a gauge, decremented when this ends.
                self.waiting.fetch_add(1, Ordering::Relaxed);
                PendingState::Waiting
            }
        };
        PendingPermission {
            hub: self,
            clock,
            limiter,
            permits,
            decided_at: now,
            ready_at: now.saturating_add(wait.unwrap_or(0)),
            ticket,
            state,
        }
    }
}

/// Gives a reservation back: the limiter's
/// [`RateLimiter::cancel`](ratekeeper::RateLimiter::cancel), reachable from a
/// [`PendingPermission`] without naming the limiter's clock type. `Sync`,
/// so that a pending acquisition stays `Send` (an async task may hold it).
pub(crate) trait Undo: Sync {
    /// As [`RateLimiter::cancel`](ratekeeper::RateLimiter::cancel).
    fn undo(&self, grant: &Grant) -> bool;
}

impl core::fmt::Debug for Hub {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hub")
            .field("name", &self.name)
            .field("timeout_nanos", &self.timeout_nanos())
            .field("waiting", &self.waiting())
            .field("events", &self.events)
            .field("policy", &self.policy)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PendingState {
    /// Granted, may go now; not counted as waiting.
    Ready,
    /// Granted after a wait; counted as waiting.
    Waiting,
    /// Refused at the decision; its event is already published.
    Refused,
    /// Finished or abandoned.
    Ended,
}

/// An acquisition decided but not yet over: the caller may have to wait
/// before its permits may go.
///
/// Returned by [`PermitLimiter::begin_acquire_permission`](crate::PermitLimiter::begin_acquire_permission). The decision is
/// final when this is created; what remains is the wait and the
/// `SUCCESSFUL_ACQUIRE` / `FAILED_ACQUIRE` event, which is published when the
/// acquisition ends:
///
/// | call | returns | event | reservation |
/// |---|---|---|---|
/// | [`wait`](Self::wait) | after blocking until ready: whether granted | success (granted) | used |
/// | [`finish`](Self::finish) | at once: whether granted (the caller waited its own way) | success (granted) | used |
/// | [`abandon`](Self::abandon), or drop | at once: false | failure (granted ones) | **kept**: the permits are spent |
/// | [`cancel`](Self::cancel) | at once: whether the limiter took the permits back | failure (granted ones) | **given back** as far as the limiter allows, or kept for the next caller |
///
/// A refused acquisition is over when created: its failure event is already
/// published and every call returns false. While a granted acquisition with
/// a wait is alive it counts in [`Metrics::waiting_threads`](crate::Metrics::waiting_threads).
///
/// # Examples
///
/// A caller parked on a manual clock, the way a test (or an async runtime)
/// drives it without a thread:
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Clock, ManualClock};
/// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
///
/// let clock = ManualClock::new(0);
/// let config = RefillConfig::builder()
///     .limit_for_period(1)
///     .limit_refresh_period(Duration::from_nanos(1_000))
///     .timeout(Duration::from_nanos(5_000))
///     .build()?;
/// let limiter = RefillLimiter::new_with_clock("api", config, clock.clone());
/// assert!(limiter.acquire_permission(1)?); // the one stored permit
///
/// let pending = limiter.begin_acquire_permission(1)?;
/// assert!(pending.is_granted());
/// assert_eq!(pending.delay(), Duration::from_nanos(1_000));
/// assert_eq!(limiter.metrics().waiting_threads, 1);
///
/// clock.set_nanos(pending.ready_at_nanos());
/// assert!(pending.finish());
/// assert_eq!(limiter.metrics().waiting_threads, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "an acquisition that is dropped is abandoned (its permits stay spent)"]
pub struct PendingPermission<'a> {
    hub: &'a Hub,
    clock: &'a dyn Clock,
    limiter: &'a dyn Undo,
    permits: u32,
    decided_at: u64,
    ready_at: u64,
    /// The limiter's ticket on this reservation (see [`Grant::ticket`]).
    ticket: Option<Ticket>,
    state: PendingState,
}

impl PendingPermission<'_> {
    /// Whether the permits were granted (now or after the wait).
    pub fn is_granted(&self) -> bool {
        matches!(self.state, PendingState::Ready | PendingState::Waiting)
    }

    /// Whether this acquisition counts as a waiting thread: granted, with a
    /// wait.
    pub fn is_waiting(&self) -> bool {
        self.state == PendingState::Waiting
    }

    /// Permits asked for.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// When the decision was taken, in nanoseconds of the limiter's clock.
    pub fn decided_at_nanos(&self) -> u64 {
        self.decided_at
    }

    /// When the permits may go, in nanoseconds of the limiter's clock (the
    /// decision time if granted without a wait, or refused).
    pub fn ready_at_nanos(&self) -> u64 {
        self.ready_at
    }

    /// How long the caller has to wait from the decision: zero if the
    /// permits may go at once or were refused.
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.ready_at - self.decided_at)
    }

    /// The reservation as the crate's [`Grant`] (scheduled and ready at
    /// [`ready_at_nanos`](Self::ready_at_nanos), started at the decision),
    /// which the limiter's [`RateLimiter::cancel`](ratekeeper::RateLimiter::cancel)
    /// recognises; `None` if refused. [`cancel`](Self::cancel) is the same
    /// give-back, ending the acquisition too.
    pub fn grant(&self) -> Option<Grant> {
        self.is_granted().then(|| {
            let grant = Grant::new(self.ready_at, self.ready_at, self.decided_at, self.permits);
            match self.ticket {
                Some(ticket) => grant.with_ticket(ticket),
                None => grant,
            }
        })
    }

    /// Blocks the thread until the permits may go (on the limiter's clock,
    /// under its [`WaitPolicy`]), then [`finish`](Self::finish)es.
    ///
    /// Do not call it from an async task; await a timer for
    /// [`delay`](Self::delay) and call `finish` instead.
    pub fn wait(self) -> bool {
        if self.state == PendingState::Waiting {
            let grant = Grant::new(self.ready_at, self.ready_at, self.decided_at, self.permits);
            wait::block_until(self.clock, grant, self.hub.policy);
        }
        self.finish()
    }

    /// Ends the acquisition now, the caller having waited until
    /// [`ready_at_nanos`](Self::ready_at_nanos) its own way: returns whether
    /// the permits were granted and publishes `SUCCESSFUL_ACQUIRE` for a
    /// grant. The clock is not checked.
    pub fn finish(mut self) -> bool {
        self.end(true)
    }

    /// Gives up waiting (Resilience4j's interrupt): returns false and, for a
    /// granted acquisition, publishes `FAILED_ACQUIRE`. The reservation is
    /// **not** returned: the permits stay spent, as in Resilience4j. (To give
    /// them back, [`cancel`](Self::cancel).)
    pub fn abandon(mut self) -> bool {
        self.end(false)
    }

    /// Gives up waiting *and* gives the reservation back (Go's
    /// `Reservation.Cancel`; Resilience4j has no such call): ends the
    /// acquisition as [`abandon`](Self::abandon) does (`FAILED_ACQUIRE` for a
    /// grant, no longer a waiting thread), and returns whether the limiter
    /// took the permits back. What each limiter can take back is in its
    /// "Cancelling a reservation" section ([`RefillLimiter`](crate::RefillLimiter),
    /// [`CycleLimiter`](crate::CycleLimiter)); in short, a reservation that had to wait can be
    /// given back (or, if the state cannot take it, kept for the next caller
    /// of the same size) until its ready time, a grant that could go at once
    /// cannot.
    ///
    /// Unlike `abandon`, which keeps Resilience4j's semantics (an interrupted
    /// caller's permits are spent), `cancel` leaves the limiter as if the
    /// acquisition had not been made, as far as the algorithm allows. Dropping
    /// a pending acquisition abandons it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let config = RefillConfig::builder()
    ///     .limit_for_period(1)
    ///     .limit_refresh_period(Duration::from_nanos(1_000))
    ///     .timeout(Duration::from_nanos(5_000))
    ///     .build()?;
    /// let limiter = RefillLimiter::new_with_clock("api", config, ManualClock::new(0));
    /// assert!(limiter.acquire_permission(1)?);
    /// let first = limiter.begin_acquire_permission(1)?; // ready at 1 µs
    /// assert!(first.cancel());
    /// let again = limiter.begin_acquire_permission(1)?;
    /// assert_eq!(again.ready_at_nanos(), 1_000, "the cancelled one's time");
    /// assert!(!again.abandon()); // abandoned: the permit stays spent
    /// assert_eq!(limiter.begin_acquire_permission(1)?.ready_at_nanos(), 2_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(mut self) -> bool {
        let given_back = self.grant().is_some_and(|g| self.limiter.undo(&g));
        self.end(false);
        given_back
    }

    fn end(&mut self, went: bool) -> bool {
        let granted = self.is_granted();
        if self.state == PendingState::Waiting {
            // Ordering: Relaxed; a gauge (see `Hub::pending`).
            self.hub.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        self.state = PendingState::Ended;
        if granted {
            let kind = if went {
                PermitEventKind::SuccessfulAcquire
            } else {
                PermitEventKind::FailedAcquire
            };
            // The clock is read only if someone listens.
            if self.hub.events.has_subscribers() {
                self.hub
                    .publish(kind, u64::from(self.permits), self.clock.now_nanos());
            }
        }
        granted && went
    }
}

impl Drop for PendingPermission<'_> {
    fn drop(&mut self) {
        if self.state != PendingState::Ended {
            self.end(false);
        }
    }
}

impl core::fmt::Debug for PendingPermission<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PendingPermission")
            .field("limiter", &self.hub.name)
            .field("permits", &self.permits)
            .field("granted", &self.is_granted())
            .field("decided_at_nanos", &self.decided_at)
            .field("ready_at_nanos", &self.ready_at)
            .field("ticket", &self.ticket)
            .field("ended", &(self.state == PendingState::Ended))
            .finish()
    }
}
