//! [`RefillLimiter`]: Resilience4j's interface over the core's
//! [`bucket::RefillLimiter`].

use core::fmt;
use std::sync::Arc;
use std::time::Duration;

use ratekeeper::bucket::{self, RefillConfig};
use ratekeeper::{
    AcquireError, Clock, ConfigError, DefaultClock, Grant, RateLimiter, Recovery, WaitPolicy,
    WaitStats,
};

use crate::events::{EventPublisher, PermitEvent, PermitEventKind};
use crate::pending::{Hub, PendingPermission, Undo};
use crate::permit::{
    permission_of, ConfigView, Metrics, Permission, PermitError, PermitLimiter, View,
};

/// A Resilience4j-compatible token bucket with nanosecond-gradual refill; see
/// the [crate docs](crate) and the core's [`ratekeeper::bucket`].
///
/// Built from a [`RefillConfig`]; shared by reference or in an `Arc`; used
/// through [`PermitLimiter`] (Resilience4j's interface) or
/// [`RateLimiter`] (ratekeeper's). It is the core's
/// [`bucket::RefillLimiter`] with a name, events, a waiting gauge and a
/// timeout.
///
/// # Examples
///
/// No over-admission: a full bucket of 5 grants 5 at one instant, and later
/// permits at the refill rate (100 ns each here).
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::ManualClock;
/// use ratekeeper::bucket::RefillConfig;
/// use ratekeeper_resilience4j::{PermitLimiter, Permission, RefillLimiter};
///
/// let clock = ManualClock::new(0);
/// let config = RefillConfig::builder()
///     .limit_for_period(5)
///     .limit_refresh_period(Duration::from_nanos(500))
///     .timeout(Duration::ZERO)
///     .build()?;
/// let limiter = RefillLimiter::new_with_clock("db", config, clock.clone());
///
/// clock.set_nanos(10_000); // idle: the bucket is full (5, not more)
/// assert!(limiter.acquire_permission(4)?);
/// assert!(!limiter.acquire_permission(5)?); // refill-rate-limiter grants this too
/// assert!(limiter.acquire_permission(1)?);
/// assert_eq!(limiter.reserve_permission(1)?, Permission::Refused); // next permit in 100 ns
/// clock.advance_nanos(100);
/// assert_eq!(limiter.reserve_permission(1)?, Permission::Now);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Reservations within the timeout:
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::ManualClock;
/// use ratekeeper::bucket::RefillConfig;
/// use ratekeeper_resilience4j::{PermitLimiter, Permission, RefillLimiter};
///
/// let config = RefillConfig::builder()
///     .limit_for_period(3)
///     .limit_refresh_period(Duration::from_millis(12))
///     .timeout(Duration::from_millis(12))
///     .build()?;
/// let limiter = RefillLimiter::new_with_clock("api", config, ManualClock::new(0));
/// let waits: Vec<i64> = (0..7)
///     .map(|_| limiter.reserve_permission(1).map(|p| p.nanos_to_wait()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(waits, [0, 0, 0, 4_000_000, 8_000_000, 12_000_000, -1]);
/// assert_eq!(limiter.metrics().available_permissions, -3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RefillLimiter<C = DefaultClock> {
    inner: bucket::RefillLimiter<C>,
    hub: Hub,
}

impl RefillLimiter {
    /// A limiter on the real clock.
    pub fn new(name: impl Into<Arc<str>>, config: RefillConfig) -> RefillLimiter {
        RefillLimiter::new_with_clock(name, config, DefaultClock::new())
    }

    /// A limiter with Resilience4j's defaults (Resilience4j `ofDefaults`):
    /// 50 permits per 500 ns, capacity 50, timeout 5 s.
    pub fn of_defaults(name: impl Into<Arc<str>>) -> RefillLimiter {
        RefillLimiter::new(name, RefillConfig::default())
    }
}

impl<C: Clock> RefillLimiter<C> {
    /// A limiter on `clock`, created now, named `name`, with
    /// `config.timeout()` as its timeout.
    pub fn new_with_clock(
        name: impl Into<Arc<str>>,
        config: RefillConfig,
        clock: C,
    ) -> RefillLimiter<C> {
        let timeout = config.timeout().as_nanos() as i64;
        RefillLimiter {
            inner: bucket::RefillLimiter::new_with_clock(config, clock),
            hub: Hub::new(name.into(), timeout),
        }
    }

    /// This limiter with blocking waits done under `policy` (default: the
    /// clock's coalescing window).
    pub fn with_wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.inner = self.inner.with_wait_policy(policy);
        self.hub.set_policy(policy);
        self
    }

    /// The current configuration: the limit as last changed and the current
    /// timeout.
    pub fn config(&self) -> RefillConfig {
        let config = self.inner.config();
        // The timeout was validated when it was set: at most i64::MAX ns.
        config
            .with_timeout(Duration::from_nanos(self.hub.timeout_nanos()))
            .unwrap_or(config)
    }

    /// The rate the bucket actually refills at, in permits per second: one
    /// permit every `nanos_per_permit = limit_refresh_period /
    /// limit_for_period` whole nanoseconds (truncating, as
    /// refill-rate-limiter does), so `1e9 / nanos_per_permit`, at the
    /// current limit (after a
    /// [`change_limit_for_period`](PermitLimiter::change_limit_for_period),
    /// the new one).
    ///
    /// Never below `limit_for_period / limit_refresh_period`, and above it
    /// by less than one part in `nanos_per_permit`: nothing for 10 per
    /// second (100 ms), 1e-9 for 3 per second, 11 % for 3 permits per 10
    /// ns (3.33 ns refilled in 3 ns).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper::bucket::RefillConfig;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillLimiter};
    ///
    /// let config = RefillConfig::builder()
    ///     .limit_for_period(3)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = RefillLimiter::new_with_clock("api", config, ManualClock::new(0));
    /// assert_eq!(limiter.effective_rate(), 1e9 / 333_333_333.0); // 3.000000003
    /// limiter.change_limit_for_period(10)?; // 10 per second: 100 ms, exact
    /// assert_eq!(limiter.effective_rate(), 10.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn effective_rate(&self) -> f64 {
        self.inner.effective_rate()
    }

    /// The limiter's clock.
    pub fn clock_ref(&self) -> &C {
        self.inner.clock_ref()
    }

    /// The core limiter this one wraps.
    pub fn as_bucket(&self) -> &bucket::RefillLimiter<C> {
        &self.inner
    }

    #[inline]
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_nanos(self.hub.timeout_nanos()))
    }
}

impl<C: Clock> Undo for RefillLimiter<C> {
    fn undo(&self, grant: &Grant) -> bool {
        self.inner.cancel(grant)
    }
}

impl<C: Clock> PermitLimiter for RefillLimiter<C> {
    fn name(&self) -> &str {
        self.hub.name()
    }

    fn config_view(&self) -> ConfigView {
        self.config().view()
    }

    fn begin_acquire_permission(&self, permits: u32) -> Result<PendingPermission<'_>, PermitError> {
        let (now, outcome) = self.inner.reserve_once(permits, self.timeout());
        let grant = permission_of(outcome)?;
        let wait = grant.map(|g| g.delay_nanos());
        let ticket = grant.and_then(|g| g.ticket());
        Ok(self
            .hub
            .pending(self.inner.clock_ref(), self, permits, now, wait, ticket))
    }

    fn reserve_permission(&self, permits: u32) -> Result<Permission, PermitError> {
        let (now, outcome) = self.inner.reserve_once(permits, self.timeout());
        let permission = match permission_of(outcome)?.map(|g| g.delay_nanos()) {
            Some(0) => Permission::Now,
            Some(wait) => Permission::After(Duration::from_nanos(wait)),
            None => Permission::Refused,
        };
        let kind = if permission.is_granted() {
            PermitEventKind::SuccessfulAcquire
        } else {
            PermitEventKind::FailedAcquire
        };
        self.hub.publish(kind, u64::from(permits), now);
        Ok(permission)
    }

    fn drain_permissions(&self) -> u64 {
        let (now, drained) = self.inner.drain_at();
        self.hub.publish(PermitEventKind::Drained, drained, now);
        drained
    }

    /// Sets `limit` permits per the **configured** refresh period (calls do
    /// not compound) and the capacity to `max(capacity, limit)`, keeping the
    /// current token count, stored or owed: the time index is re-based so
    /// that `(now − E) / npp` is the same number of permits at the new rate
    /// (rounded down to a whole nanosecond of the new rate, never up).
    /// Callers already waiting keep their deadlines.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper::bucket::RefillConfig;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillLimiter};
    ///
    /// let clock = ManualClock::new(0);
    /// let config = RefillConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .initial_permits(0)
    ///     .build()?;
    /// let limiter = RefillLimiter::new_with_clock("api", config, clock.clone());
    /// clock.set_nanos(500_000_000);
    /// assert_eq!(limiter.metrics().available_permissions, 5);
    /// limiter.change_limit_for_period(5)?; // 5 per second: 200 ms per permit
    /// assert_eq!(limiter.metrics().available_permissions, 5); // kept
    /// clock.set_nanos(700_000_000);
    /// assert_eq!(limiter.metrics().available_permissions, 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn change_limit_for_period(&self, limit: u32) -> Result<(), ConfigError> {
        self.inner.set_limit_for_period(limit)
    }

    fn change_timeout(&self, timeout: Duration) -> Result<(), ConfigError> {
        self.hub.set_timeout(timeout)
    }

    fn metrics(&self) -> Metrics {
        let state = self.inner.state();
        Metrics {
            available_permissions: state.available_permits,
            waiting_threads: self.hub.waiting(),
            nanos_to_wait: state.nanos_to_wait,
            cycle: state.cycle,
        }
    }

    fn events(&self) -> &EventPublisher<PermitEvent> {
        self.hub.events()
    }
}

/// ratekeeper's interface: `reserve` decides as the core limiter's does
/// (with the given maximum wait instead of the timeout; `None`: any wait)
/// and publishes the same events as
/// [`reserve_permission`](PermitLimiter::reserve_permission). Blocking waits
/// through this trait do not count as waiting threads.
impl<C: Clock> RateLimiter for RefillLimiter<C> {
    fn recovery(&self) -> Recovery {
        self.inner.recovery()
    }

    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        let (now, outcome) = self.inner.reserve_at(permits, max_wait);
        match &outcome {
            Ok(_) => self
                .hub
                .publish(PermitEventKind::SuccessfulAcquire, u64::from(permits), now),
            Err(AcquireError::WouldWait { .. } | AcquireError::ScheduleExhausted) => self
                .hub
                .publish(PermitEventKind::FailedAcquire, u64::from(permits), now),
            Err(_) => {}
        }
        outcome
    }

    fn clock(&self) -> &dyn Clock {
        self.inner.clock()
    }

    fn wait_stats(&self) -> WaitStats {
        self.inner.wait_stats()
    }

    fn wait_policy(&self) -> WaitPolicy {
        self.hub.policy()
    }

    /// As the core limiter's `cancel`; see its "Cancelling a reservation".
    fn cancel(&self, grant: &Grant) -> bool {
        self.inner.cancel(grant)
    }
}

impl<C> fmt::Debug for RefillLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefillLimiter")
            .field("name", &self.hub.name())
            .field("bucket", &self.inner)
            .field("timeout_nanos", &self.hub.timeout_nanos())
            .field("waiting", &self.hub.waiting())
            .finish_non_exhaustive()
    }
}
