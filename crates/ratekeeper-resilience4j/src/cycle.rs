//! [`CycleLimiter`]: Resilience4j's interface over the core's
//! [`bucket::CycleLimiter`].

use core::fmt;
use std::sync::Arc;
use std::time::Duration;

use ratekeeper::bucket::{self, CycleConfig};
use ratekeeper::{
    AcquireError, Clock, ConfigError, DefaultClock, Grant, RateLimiter, Recovery, WaitPolicy,
    WaitStats,
};

use crate::events::{EventPublisher, PermitEvent, PermitEventKind};
use crate::pending::{Hub, PendingPermission, Undo};
use crate::permit::{
    permission_of, ConfigView, Metrics, Permission, PermitError, PermitLimiter, View,
};

/// Resilience4j's default rate limiter (`AtomicRateLimiter`): at most
/// `limit_for_period` permits per cycle of `limit_refresh_period`, cycles
/// counted from the limiter's creation; see the [crate docs](crate) and the core's [`ratekeeper::bucket`].
///
/// Fixed relative to Resilience4j: a drain empties the *refreshed* cycle and
/// keeps reservations, and reports what it drained; permits below 1 are an
/// error; cycle and wait arithmetic never wraps; a limit change applies from
/// the next cycle; a refused acquire returns at once.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::ManualClock;
/// use ratekeeper::bucket::CycleConfig;
/// use ratekeeper_resilience4j::{CycleLimiter, PermitLimiter, Permission};
///
/// let clock = ManualClock::new(0);
/// let config = CycleConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1))
///     .timeout(Duration::from_secs(10))
///     .build()?;
/// let limiter = CycleLimiter::new_with_clock("api", config, clock.clone());
///
/// // 25 permits: this cycle's 10, the next two cycles' 10 and 5.
/// assert_eq!(
///     limiter.reserve_permission(25)?,
///     Permission::After(std::time::Duration::from_secs(2))
/// );
/// assert_eq!(limiter.metrics().available_permissions, -15);
/// clock.set_nanos(2_000_000_000);
/// assert_eq!(limiter.metrics().available_permissions, 5);
/// assert_eq!(limiter.metrics().cycle, Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CycleLimiter<C = DefaultClock> {
    inner: bucket::CycleLimiter<C>,
    hub: Hub,
}

impl CycleLimiter {
    /// A limiter on the real clock.
    pub fn new(name: impl Into<Arc<str>>, config: CycleConfig) -> CycleLimiter {
        CycleLimiter::new_with_clock(name, config, DefaultClock::new())
    }

    /// A limiter with Resilience4j's defaults (Resilience4j `ofDefaults`):
    /// 50 permits per 500 ns, timeout 5 s.
    pub fn of_defaults(name: impl Into<Arc<str>>) -> CycleLimiter {
        CycleLimiter::new(name, CycleConfig::default())
    }
}

impl<C: Clock> CycleLimiter<C> {
    /// A limiter on `clock`, created now, named `name`, with
    /// `config.timeout()` as its timeout.
    pub fn new_with_clock(
        name: impl Into<Arc<str>>,
        config: CycleConfig,
        clock: C,
    ) -> CycleLimiter<C> {
        let timeout = config.timeout().as_nanos() as i64;
        CycleLimiter {
            inner: bucket::CycleLimiter::new_with_clock(config, clock),
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
    pub fn config(&self) -> CycleConfig {
        let config = self.inner.config();
        // The timeout was validated when it was set: at most i64::MAX ns.
        config
            .with_timeout(Duration::from_nanos(self.hub.timeout_nanos()))
            .unwrap_or(config)
    }

    /// The rate the cycles give, in permits per second:
    /// `limit_for_period × 1e9 / limit_refresh_period`, exactly (no
    /// per-permit interval is rounded; up to `f64` rounding of that
    /// quotient), at the limit as last changed (which a
    /// [`change_limit_for_period`](PermitLimiter::change_limit_for_period)
    /// applies from the next cycle on).
    ///
    /// This is the long-run rate; within a window the fixed cycles let up
    /// to twice the limit go across a cycle boundary (see the core's
    /// [cycle limiter](ratekeeper::bucket#the-cycle-limiter)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper::bucket::CycleConfig;
    /// use ratekeeper_resilience4j::{CycleLimiter, PermitLimiter};
    ///
    /// let config = CycleConfig::builder()
    ///     .limit_for_period(3)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .build()?;
    /// let limiter = CycleLimiter::new_with_clock("api", config, ManualClock::new(0));
    /// assert_eq!(limiter.effective_rate(), 3.0);
    /// limiter.change_limit_for_period(7)?;
    /// assert_eq!(limiter.effective_rate(), 7.0);
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
    pub fn as_bucket(&self) -> &bucket::CycleLimiter<C> {
        &self.inner
    }

    #[inline]
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_nanos(self.hub.timeout_nanos()))
    }
}

impl<C: Clock> Undo for CycleLimiter<C> {
    fn undo(&self, grant: &Grant) -> bool {
        self.inner.cancel(grant)
    }
}

impl<C: Clock> PermitLimiter for CycleLimiter<C> {
    fn name(&self) -> &str {
        self.hub.name()
    }

    fn config_view(&self) -> ConfigView {
        self.config().view()
    }

    fn begin_acquire_permission(&self, permits: u32) -> Result<PendingPermission<'_>, PermitError> {
        let (now, outcome) = self.inner.reserve_at(permits, self.timeout());
        let grant = permission_of(outcome)?;
        let wait = grant.map(|g| g.delay_nanos());
        let ticket = grant.and_then(|g| g.ticket());
        Ok(self
            .hub
            .pending(self.inner.clock_ref(), self, permits, now, wait, ticket))
    }

    fn reserve_permission(&self, permits: u32) -> Result<Permission, PermitError> {
        let (now, outcome) = self.inner.reserve_at(permits, self.timeout());
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

    /// Drops the permits left in the current cycle (refreshed to now), keeps
    /// reservations, and returns how many were dropped.
    fn drain_permissions(&self) -> u64 {
        let (now, drained) = self.inner.drain_at();
        self.hub.publish(PermitEventKind::Drained, drained, now);
        drained
    }

    /// Sets the permits per cycle from the **next** cycle on: the current
    /// cycle is first settled with the old limit (its permits and
    /// reservations are kept as they are).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper::bucket::CycleConfig;
    /// use ratekeeper_resilience4j::{CycleLimiter, PermitLimiter};
    ///
    /// let clock = ManualClock::new(0);
    /// let config = CycleConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_nanos(1_000))
    ///     .build()?;
    /// let limiter = CycleLimiter::new_with_clock("api", config, clock.clone());
    /// assert!(limiter.acquire_permission(2)?);
    /// limiter.change_limit_for_period(5)?;
    /// assert_eq!(limiter.metrics().available_permissions, 8); // this cycle: untouched
    /// clock.set_nanos(1_000);
    /// assert_eq!(limiter.metrics().available_permissions, 5); // the next: the new limit
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
impl<C: Clock> RateLimiter for CycleLimiter<C> {
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

impl<C> fmt::Debug for CycleLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CycleLimiter")
            .field("name", &self.hub.name())
            .field("bucket", &self.inner)
            .field("timeout_nanos", &self.hub.timeout_nanos())
            .field("waiting", &self.hub.waiting())
            .finish_non_exhaustive()
    }
}
