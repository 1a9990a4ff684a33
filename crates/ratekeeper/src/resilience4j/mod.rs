//! Resilience4j's rate limiter interface: [`RefillLimiter`], a strict token
//! bucket with gradual refill, and [`CycleLimiter`], Resilience4j's default
//! fixed-cycle limiter, behind one trait, [`PermitLimiter`].
//!
//! The whole Resilience4j family lives in this room: the limiters and their
//! configuration and events here, the [`registry`] of named limiters, the
//! [`decorate`]d calls, and, with feature `tokio`, their async forms
//! ([`crate::tokio::AsyncPermitLimiter`] and `async_decorate`, also at
//! `ratekeeper::tokio::decorate`). The paths it had before it was one room
//! still work: `ratekeeper::refill` is this module, and
//! `ratekeeper::registry` and `ratekeeper::decorate` are its submodules.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::refill::{PermitLimiter, RefillConfig, RefillLimiter};
//!
//! let config = RefillConfig::builder()
//!     .limit_for_period(10)                          // 10 permits ...
//!     .limit_refresh_period(Duration::from_secs(1))  // ... per second, refilled gradually
//!     .permit_capacity(20)                           // bursts of up to 20
//!     .timeout(Duration::from_millis(100))           // wait at most 100 ms
//!     .build()?;
//! let limiter = RefillLimiter::new("backend", config);
//! assert!(limiter.acquire_permission(1)?); // the bucket starts with 10
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Contents
//!
//! * [The bucket](#the-bucket)
//! * [The cycle limiter](#the-cycle-limiter)
//! * [The Resilience4j interface](#the-resilience4j-interface)
//! * [Cancelling a reservation](#cancelling-a-reservation)
//! * [Differences from refill-rate-limiter and Resilience4j](#differences-from-refill-rate-limiter-and-resilience4j)
//! * [Which limiter?](#which-limiter)
//! * [Memory ordering](#memory-ordering)
//! * [Implementation details](#implementation-details)
//!
//! # The bucket
//!
//! A [`RefillLimiter`] refills one permit every `nanos_per_permit =
//! limit_refresh_period / limit_for_period` nanoseconds (truncating, as
//! refill-rate-limiter does: 3 per second is 333 333 333 ns per permit, so
//! it refills at [`1e9 / nanos_per_permit`](RefillLimiter::effective_rate)
//! per second, 3.000000003), up to
//! `capacity` permits (the burst; `limit_for_period` unless set), and starts
//! with `initial_permits` (`limit_for_period` unless set, *not* the
//! capacity). Refill is computed lazily on each call from one number, the
//! **time index** `E`: the instant at which the bucket would be empty.
//!
//! ```text
//!   tokens(now) = min(capacity, (now − E) / nanos_per_permit)
//!
//!        E            now − C·npp                  now
//!   -----|----------------|---------------------------|------> time
//!        |<-- credit beyond a full bucket: lost ----->|
//!                         |<----- at most C permits -->|
//! ```
//!
//! A request for `n` permits moves `E` to `max(E, now − C·npp) + n·npp`: the
//! credit beyond a full bucket is dropped, and the request is charged. If
//! that puts `E` after `now`, the request waits `E − now`: it is granted with
//! that wait if the wait is within the timeout (a *reservation*: the
//! available count goes negative until then), and refused, changing nothing,
//! if not. So every grant moves `E` forward by exactly its cost, and over any
//! window the permits granted (counted when they may go) are at most
//! `capacity + window / nanos_per_permit`.
//!
//! # The cycle limiter
//!
//! A [`CycleLimiter`] is Resilience4j's `AtomicRateLimiter`: time is cut into
//! cycles of `limit_refresh_period` from the limiter's creation, each cycle
//! starts with `limit_for_period` permits (unused permits do not carry over),
//! reservations make the count negative and are repaid by later cycles, and a
//! request larger than the limit waits as many cycles as it needs. It is a
//! fixed window: up to `2 × limit_for_period` permits can go within
//! nanoseconds across a cycle boundary. Without reservations, any window that
//! touches `k` cycles grants at most `k × limit_for_period`; with them, the
//! permits that may go by the end of cycle `c` are at most
//! `(c + 1) × limit_for_period` in all.
//!
//! # The Resilience4j interface
//!
//! Both limiters implement [`PermitLimiter`] (and the crate's
//! [`RateLimiter`](crate::RateLimiter)):
//!
//! | Resilience4j | here |
//! |---|---|
//! | `RateLimiterConfig.custom()…build()` | [`RefillConfig::builder()`](RefillConfig::builder)`…`[`build()`](ConfigBuilder::build) / [`build_cycle()`](ConfigBuilder::build_cycle) |
//! | `getName()` | [`name`](PermitLimiter::name) |
//! | `getRateLimiterConfig()` | [`config_view`](PermitLimiter::config_view) ([`ConfigView`]) |
//! | `acquirePermission(n)` | [`acquire_permission`](PermitLimiter::acquire_permission) → `Ok(bool)` |
//! | the same, without blocking the thread | [`begin_acquire_permission`](PermitLimiter::begin_acquire_permission) → [`PendingPermission`] |
//! | `reservePermission(n)` → `0` / nanos / `-1` | [`reserve_permission`](PermitLimiter::reserve_permission) → [`Permission`] `Now` / `After(d)` / `Refused` ([`Permission::nanos_to_wait`] gives the `long`) |
//! | `drainPermissions()` | [`drain_permissions`](PermitLimiter::drain_permissions) → permits drained |
//! | `changeLimitForPeriod(n)` | [`change_limit_for_period`](PermitLimiter::change_limit_for_period) |
//! | `changeTimeoutDuration(d)` | [`change_timeout`](PermitLimiter::change_timeout), [`change_timeout_nanos`](PermitLimiter::change_timeout_nanos) |
//! | `getMetrics()` / `getDetailedMetrics()` | [`metrics`](PermitLimiter::metrics) ([`Metrics`]) |
//! | `getEventPublisher().onEvent / onSuccess / onFailure` | [`events`](PermitLimiter::events)`().`[`on_event`](EventPublisher::on_event) / [`on_success`](EventPublisher::on_success) / [`on_failure`](EventPublisher::on_failure) / [`on_drained`](EventPublisher::on_drained) |
//! | `onResult` / `onError` + `drainPermissionsOnResult` | [`on_result`](PermitLimiter::on_result)`(&result, predicate)` |
//! | `RequestNotPermitted` (more permits than the capacity) | [`PermitError::ExceedsCapacity`] |
//!
//! Counts asked for are `u32`: zero is [`PermitError::InvalidPermits`] and a
//! negative count cannot be expressed. Limits and capacities are `i64`, so
//! that zero and negative values from a configuration are typed errors.
//!
//! **Waiting.** An acquire decides at once. Granted without a wait, it
//! returns true; granted with a wait within the timeout, it waits (blocking
//! the thread, on the limiter's clock and [`WaitPolicy`])
//! and returns true; refused, it returns false **at once**, with nothing
//! reserved. While it waits it counts in [`Metrics::waiting_threads`].
//! [`begin_acquire_permission`](PermitLimiter::begin_acquire_permission)
//! splits this: it returns the decision as a [`PendingPermission`], which the
//! caller [`wait`](PendingPermission::wait)s on, [`finish`](PendingPermission::finish)es
//! after waiting its own way (an async timer, a virtual clock),
//! [`abandon`](PendingPermission::abandon)s (Resilience4j's interrupt: false,
//! reservation kept), or [`cancel`](PendingPermission::cancel)s (Go's
//! `Reservation.Cancel`: false, reservation given back as far as the limiter
//! allows, or kept for the next caller; see [Cancelling a
//! reservation](#cancelling-a-reservation)).
//!
//! **Events** are published when an acquisition ends (refused: at once;
//! granted: when it finishes; abandoned: as a failure), when a reservation is
//! decided, and when permits are drained. A request refused with a typed
//! error publishes nothing. With no subscriber an event costs one atomic
//! load.
//!
//! # Cancelling a reservation
//!
//! Resilience4j cannot give a reservation back: an interrupted caller's
//! permits stay spent ([`PendingPermission::abandon`] keeps that). Both
//! limiters here also give back a reservation its caller will not use, as Go's
//! `Reservation.Cancel` does, through [`RateLimiter::cancel`](crate::RateLimiter::cancel)
//! on the [`Grant`] that [`reserve`](crate::RateLimiter::reserve) returned, or
//! [`PendingPermission::cancel`] (or [`PendingPermission::grant`]). What can be
//! given back is a reservation that **had to wait**, until its ready time
//! (`ready ≥ now`): a grant that could go at once took permits that were
//! there, and is due.
//!
//! **[`RefillLimiter`].** If the reservation is the latest, the time index
//! moves back by its cost, `permits × nanos_per_permit`: the bucket is as if
//! it had never been made, and the next reservation gets its ready time.
//! Reservations made after it keep their times; the index then moves back by
//! what they leave, `min(permits × nanos_per_permit, full − later)`, where
//! `later` is what they were charged and `full = capacity × nanos_per_permit`:
//! the bucket a limiter that never saw the cancelled reservation would hold
//! after granting them at their (later) times. So no instant and no window
//! ever gets more than the bucket allows, and nothing is given back when the
//! later reservations cover a full bucket. (Go gives back `permits − later`
//! tokens, less than this whenever the capacity exceeds the reservation.)
//! Reservations given back newest first all come back in full. Nothing goes
//! back to the bucket for a reservation whose later reservations leave
//! nothing, or made before an earlier cancel unless it is then the latest
//! reservation (newest first): it is [kept](#kept-reservations) instead.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::{ManualClock, RateLimiter};
//! use ratekeeper::refill::{RefillConfig, RefillLimiter};
//!
//! let config = RefillConfig::builder()
//!     .limit_for_period(1)
//!     .limit_refresh_period(Duration::from_nanos(1_000)) // a permit per µs
//!     .permit_capacity(4)
//!     .initial_permits(0)
//!     .build()?;
//! let limiter = RefillLimiter::new_with_clock("api", config, ManualClock::new(0));
//! let a = limiter.reserve(2, None)?; // ready at 2 µs
//! let b = limiter.reserve(1, None)?; // ready at 3 µs
//! assert!(limiter.cancel(&a), "b keeps its time; a's 2 permits come back");
//! assert_eq!(limiter.reserve(2, None)?.ready_nanos(), 3_000);
//! assert!(!limiter.cancel(&a), "given back already");
//!
//! // Capacity 1: b alone fills the bucket at its time, nothing of a comes
//! // back. It is kept for the next caller of 1 permit.
//! let config = RefillConfig::builder()
//!     .limit_for_period(1)
//!     .limit_refresh_period(Duration::from_nanos(1_000))
//!     .initial_permits(0)
//!     .build()?;
//! let limiter = RefillLimiter::new_with_clock("api", config, ManualClock::new(0));
//! let a = limiter.reserve(1, None)?; // ready at 1 µs
//! let b = limiter.reserve(1, None)?; // ready at 2 µs
//! assert!(limiter.cancel(&a), "kept");
//! assert_eq!(limiter.reserve(1, None)?.ready_nanos(), 1_000, "a's place");
//! assert_eq!(limiter.reserve(1, None)?.ready_nanos(), 3_000, "the bucket's");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **[`CycleLimiter`].** Only the **latest** reservation is given back,
//! while the cycle it was decided in is still the current one: the count
//! is then as if it had never been made, and the next reservation gets its
//! ready time. The count is a position in a queue of permits, not a record
//! of who holds which: giving back an earlier reservation would hand the
//! positions of the ones after it to the next callers, who would then start
//! in cycles those later reservations already fill (Resilience4j's own
//! `AtomicRateLimiter` has no cancel). Nothing goes back to the count for a
//! reservation with later ones after it, one made before the latest cancel
//! (each moves the limiter to a new epoch), any reservation of a limiter
//! whose `limit_for_period` exceeds 65 536 (a grant identifies itself by 16
//! bits of the count it left), nor once a new cycle has started (the count
//! was refreshed; what is owed is owed to cycles that have begun): such a
//! reservation is [kept](#kept-reservations) instead, its permits still
//! counted in the cycle it is ready in.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::{ManualClock, RateLimiter};
//! use ratekeeper::refill::{CycleConfig, CycleLimiter};
//!
//! let config = CycleConfig::builder()
//!     .limit_for_period(10)
//!     .limit_refresh_period(Duration::from_millis(100)) // 10 per 100 ms
//!     .build()?;
//! let limiter = CycleLimiter::new_with_clock("api", config, ManualClock::new(0));
//! limiter.reserve(10, None)?; // cycle 0
//! let b = limiter.reserve(10, None)?; // cycle 1
//! let c = limiter.reserve(10, None)?; // cycle 2
//! assert!(limiter.cancel(&b), "c came after it: kept, still counted in cycle 1");
//! assert!(limiter.cancel(&c), "the latest: given back");
//! assert_eq!(limiter.reserve(10, None)?.ready_nanos(), 100_000_000, "b's place");
//! assert_eq!(limiter.reserve(10, None)?.ready_nanos(), 200_000_000, "c's cycle");
//! assert_eq!(limiter.reserve(10, None)?.ready_nanos(), 300_000_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Kept reservations
//!
//! A reservation that had to wait and cannot go back to the state is
//! **kept** (`cancel` returns `true`, the state is untouched) for the next
//! reservation of the same number of permits, through
//! [`reserve`](crate::RateLimiter::reserve),
//! [`begin_acquire_permission`](PermitLimiter::begin_acquire_permission)
//! (so [`acquire_permission`](PermitLimiter::acquire_permission) and the
//! async `acquire_permission_async` too) or
//! [`reserve_permission`](PermitLimiter::reserve_permission): it gets the
//! kept ready time, if that is within its maximum wait (the timeout),
//! instead of a new one, and publishes the same `SUCCESSFUL_ACQUIRE` as any
//! grant. Its holder may cancel it again. The permits were charged once and
//! go once, by one caller, so nothing is admitted that the limiter did not
//! already allow, and a cycle never starts more than `limit_for_period`. A
//! kept reservation whose ready time passes unused is dropped, never handed
//! out late. This is what lets abandoned async acquires keep the rate: with
//! many waiters, the one that gives up is rarely the latest, so giving
//! back only the latest would lose about as many permits as are abandoned.
//! A limit change drops every kept reservation; a drain keeps them, as it
//! keeps every reservation.
//!
//! Both return `false`, and change nothing, for a grant already cancelled
//! (given back or kept) or handed on, one whose ready time has passed, one
//! that was ready when made, and one made before a limit change. A grant
//! from another limiter, or one whose permits already went, must not be
//! cancelled: the limiter cannot always tell it from one of its own still
//! waiting, and would hand its time out again. A cancel takes the
//! limiter's change mutex; a give-back publishes its state anew (retiring
//! the old, as a limit change does; one allocation), and reservations racing
//! it retry on the new state.
//!
//! # Differences from refill-rate-limiter and Resilience4j
//!
//! * **No over-admission.** refill-rate-limiter serves stored permits without
//!   moving its time index, so it grants up to *twice* its capacity at one
//!   instant (capacity 5, after idle time: `acquire(4)` and `acquire(5)` both
//!   succeed). Here every grant is charged to the time index: never more than
//!   the capacity at once.
//! * **`change_limit_for_period(n)` means `n` per the configured period.**
//!   refill-rate-limiter divides its *current* nanos per permit by `n`, so
//!   calls compound (10/s, then `changeLimitForPeriod(20)` twice: 4 000/s) and
//!   a lower limit can give a faster rate. Here the new rate is `n` per the
//!   period the limiter was configured with, the capacity becomes
//!   `max(capacity, n)`, and the current token count, stored or owed, is kept
//!   (re-based to the new rate) rather than the raw time index: nothing is
//!   lost or minted. The cycle limiter settles the current cycle with the old
//!   limit and applies the new one from the next cycle, as Resilience4j
//!   documents (its code applies it to skipped cycles too).
//! * **A refused acquire returns at once.** Resilience4j and
//!   refill-rate-limiter park the caller for the whole timeout before
//!   returning false when they already know the wait exceeds it.
//! * **Drain.** Resilience4j's `AtomicRateLimiter` drains the permit count
//!   from before the cycle refresh: after a rollover it leaves permits behind
//!   or drains nothing, and it cancels outstanding reservations (the next
//!   cycle is over-admitted). refill-rate-limiter's drain also cancels
//!   reservations. Here a drain empties the refreshed count (the bucket: the
//!   stored permits and the partial one) and keeps reservations, and the
//!   `DRAINED` event carries the permits drained (both references report 0).
//! * **`drainPermissionsOnResult` is honoured** ([`PermitLimiter::on_result`]);
//!   refill-rate-limiter ignores it.
//! * **Validation.** Permits below 1, limits below 1, refresh periods below
//!   1 ns, negative timeouts, a capacity below the limit, initial permits
//!   outside `0..=capacity`, and values that overflow 64-bit nanoseconds are
//!   typed errors ([`ConfigError`], [`PermitError`]); both references accept
//!   negative permits (which *add* permits) and refill-rate-limiter accepts
//!   negative timeouts and any initial count. More permits than the capacity
//!   is [`PermitError::ExceedsCapacity`] (refill-rate-limiter throws only
//!   when its bank cannot cover them; the cycle limiter waits several cycles,
//!   as Resilience4j).
//! * **No wrapping arithmetic.** Resilience4j's cycle arithmetic wraps
//!   (a 2^62 ns period turns a 2-cycle wait negative and grants it at once);
//!   here products saturate or the request is refused, and the metrics
//!   never overflow.
//! * **Time** is the limiter's [`Clock`] for decisions and
//!   waits alike (refill-rate-limiter decides on `System.nanoTime()` but
//!   parks in real time).
//!
//! # Which limiter?
//!
//! | you want | use |
//! |---|---|
//! | Resilience4j's interface with a true token bucket: smooth refill, a burst capacity, initial permits | [`RefillLimiter`] |
//! | Resilience4j's default behaviour (fixed windows aligned to creation), e.g. while migrating | [`CycleLimiter`] |
//! | per-op wait time and a schedule, for a load generator | [`Pacer`](crate::Pacer) |
//! | Guava's stored permits or warm-up | [`SmoothBursty`](crate::SmoothBursty), [`SmoothWarmingUp`](crate::SmoothWarmingUp) |
//!
//! # Memory ordering
//!
//! Every grant of a limiter is a compare-exchange with acquire-release
//! ordering on the limiter's one state word, so a grant *happens after*
//! every grant made before it on the same limiter (a refusal or a metrics
//! read happens after the grants it saw): data written by one caller before
//! it was granted is visible to a caller granted later. A runtime change
//! happens after every grant it kept and before every grant made on the new
//! parameters. Events are delivered on the publishing thread.
//!
//! # Implementation details
//!
//! Each limiter keeps its parameters and its atomic state word together in a
//! *core* behind an `ArcSwap`: the hot path loads
//! the core, reads the state word, computes the next state with a pure
//! function of (state, parameters, request, now), and commits it with one
//! compare-exchange; a refusal commits nothing.
//!
//! A runtime limit change *retires* the core: under a mutex it swaps the old
//! core's state word to a `FROZEN` sentinel (which no algorithm state ever
//! equals, so the word never changes again), computes the new state from
//! the frozen value, and publishes a new core. A caller still holding the
//! old core cannot commit to it: its compare-exchange fails, it sees
//! `FROZEN`, takes the mutex (which the changer holds until the new core is
//! published), and retries on the new core. So no grant is lost across a
//! change (the swap returns the latest state, including every grant
//! committed before it), none is counted twice, and no grant is computed on
//! one set of parameters and committed to another. The timeout is an atomic
//! read on each call. See `bucket.rs` and `cycle.rs` for the state encodings.

#[cfg(feature = "tokio")]
pub mod async_decorate;
#[cfg(feature = "tokio")]
pub(crate) mod async_permit;
mod bucket;
mod builder;
pub mod compat;
mod config;
mod cycle;
pub mod decorate;
mod events;
pub(crate) mod keyed;
pub mod registry;
#[cfg(all(test, not(loom)))]
mod tests;

use std::sync::Arc;
use std::time::Duration;

pub use bucket::RefillLimiter;
pub use builder::{CycleLimiterBuilder, RefillLimiterBuilder, DEFAULT_NAME, DEFAULT_RATE_PERIOD};
pub use compat::ConfigBuilder;
pub(crate) use config::limit_for_rate;
pub use config::{
    ConfigView, CycleConfig, CycleConfigBuilder, PermitConfigError, RefillConfig,
    RefillConfigBuilder, DEFAULT_LIMIT_FOR_PERIOD, DEFAULT_LIMIT_REFRESH_PERIOD, DEFAULT_TIMEOUT,
};
pub use cycle::CycleLimiter;

/// The old name of [`PermitConfigError`], from before builders returned one
/// [`ConfigError`](crate::ConfigError).
#[deprecated(
    since = "0.2.0",
    note = "builders return ratekeeper::ConfigError; its detail is a PermitConfigError"
)]
pub type ConfigError = PermitConfigError;
pub use events::{EventPublisher, PermitEvent, PermitEventKind, SubscriptionId};

use crate::clock::{elapsed_nanos, Clock};
use crate::limiter::{AcquireError, Grant};
use crate::sync::{AtomicU64, Ordering};
use crate::wait::{self, WaitPolicy};

/// The answer to a reservation ([`PermitLimiter::reserve_permission`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::refill::Permission;
///
/// assert_eq!(Permission::Now.nanos_to_wait(), 0);
/// assert_eq!(Permission::After(Duration::from_nanos(250)).nanos_to_wait(), 250);
/// assert_eq!(Permission::Refused.nanos_to_wait(), -1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Granted: the permits may be used now.
    Now,
    /// Reserved: the permits may be used after this wait (at most the
    /// limiter's timeout).
    After(Duration),
    /// Refused: the wait would exceed the timeout. Nothing was reserved.
    Refused,
}

impl Permission {
    /// Resilience4j's `reservePermission` value: `0` (now), the wait in
    /// nanoseconds (reserved), or `-1` (refused).
    pub fn nanos_to_wait(&self) -> i64 {
        match self {
            Permission::Now => 0,
            // A reservation's wait is within a timeout of at most i64::MAX ns.
            Permission::After(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Permission::Refused => -1,
        }
    }

    /// Whether the permits were granted (now or after a wait).
    pub fn is_granted(&self) -> bool {
        !matches!(self, Permission::Refused)
    }
}

/// A request that can never be granted as asked.
///
/// # Examples
///
/// ```
/// use ratekeeper::ManualClock;
/// use ratekeeper::refill::{PermitError, PermitLimiter, RefillConfig, RefillLimiter};
///
/// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
/// assert_eq!(limiter.reserve_permission(0), Err(PermitError::InvalidPermits));
/// assert_eq!(
///     limiter.acquire_permission(51),
///     Err(PermitError::ExceedsCapacity { requested: 51, capacity: 50 })
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermitError {
    /// Zero permits were asked for.
    #[error("permits must be at least 1")]
    InvalidPermits,
    /// More permits than the bucket can ever hold (refill limiter).
    #[error("cannot take {requested} permits at once: the capacity is {capacity}")]
    ExceedsCapacity {
        /// Permits asked for.
        requested: u32,
        /// The bucket's capacity.
        capacity: i64,
    },
}

impl From<PermitError> for AcquireError {
    fn from(e: PermitError) -> AcquireError {
        match e {
            PermitError::InvalidPermits => AcquireError::ZeroPermits,
            PermitError::ExceedsCapacity {
                requested,
                capacity,
            } => AcquireError::InsufficientCapacity {
                requested,
                max: u32::try_from(capacity).unwrap_or(u32::MAX),
            },
        }
    }
}

/// A snapshot of a limiter's state: Resilience4j's (detailed) metrics.
///
/// All are estimates as of the moment they were read; none changes the
/// limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Permits available now; negative while permits are reserved ahead.
    pub available_permissions: i64,
    /// Acquisitions currently waiting for a reservation (live
    /// [`PendingPermission`]s that have a wait).
    pub waiting_threads: u64,
    /// How long one permit would have to wait now (0 if available).
    pub nanos_to_wait: u64,
    /// Cycle limiter: the current cycle since creation. `None` for the
    /// refill limiter.
    pub cycle: Option<u64>,
}

/// The Resilience4j rate limiter interface, implemented by [`RefillLimiter`]
/// and [`CycleLimiter`] (and forwarded by `&L` and `Arc<L>`).
///
/// Every method takes `&self`; a limiter is shared by reference or in an
/// `Arc`. See the [module docs](self) for the mapping to Resilience4j.
pub trait PermitLimiter {
    /// The limiter's name.
    fn name(&self) -> &str;

    /// Resilience4j's `getRateLimiterConfig()` view, as of now.
    fn config_view(&self) -> ConfigView;

    /// Decides at once whether `permits` are granted within the current
    /// timeout and returns the decision as a [`PendingPermission`], without
    /// blocking. A refusal is final (and its `FAILED_ACQUIRE` event is
    /// published now); a grant with a wait counts as a waiting thread until
    /// the pending value is finished, waited on or abandoned.
    ///
    /// # Errors
    ///
    /// [`PermitError::InvalidPermits`] for zero,
    /// [`PermitError::ExceedsCapacity`] above a refill limiter's capacity.
    /// Nothing is published.
    fn begin_acquire_permission(&self, permits: u32) -> Result<PendingPermission<'_>, PermitError>;

    /// Resilience4j's `reservePermission`: decides at once, reserving the
    /// permits if they can go within the timeout, and never waits. Publishes
    /// `SUCCESSFUL_ACQUIRE` for [`Permission::Now`] and
    /// [`Permission::After`], `FAILED_ACQUIRE` for [`Permission::Refused`].
    ///
    /// # Errors
    ///
    /// As [`begin_acquire_permission`](Self::begin_acquire_permission).
    fn reserve_permission(&self, permits: u32) -> Result<Permission, PermitError>;

    /// Drops the permits available now (keeping reservations) and returns how
    /// many were dropped; publishes `DRAINED` with that count.
    fn drain_permissions(&self) -> u64;

    /// Sets the limit for period, from the next call on, keeping the permits
    /// available or owed (see each limiter).
    ///
    /// # Errors
    ///
    /// [`PermitConfigError::InvalidLimitForPeriod`] for 0; for the refill
    /// limiter also [`PermitConfigError::ZeroNanosPerPermit`] and
    /// [`PermitConfigError::NanosPerFullCapacityOverflow`]. The limiter is
    /// then unchanged. (A signed limit, as Resilience4j takes it, goes
    /// through [`compat::change_limit_for_period`].)
    fn change_limit_for_period(&self, limit: u32) -> Result<(), crate::ConfigError>;

    /// Sets the timeout for calls made from now on; callers already waiting
    /// keep their deadlines.
    ///
    /// # Errors
    ///
    /// [`PermitConfigError::TimeoutTooLarge`] beyond `i64::MAX` ns.
    fn change_timeout(&self, timeout: Duration) -> Result<(), crate::ConfigError>;

    /// The limiter's metrics now.
    fn metrics(&self) -> Metrics;

    /// The limiter's event publisher.
    fn events(&self) -> &EventPublisher<PermitEvent>;

    /// Resilience4j's `acquirePermission`: takes `permits` if they can go
    /// within the current timeout, blocking the thread until they may go;
    /// returns `Ok(false)` at once, with nothing reserved, if they cannot.
    ///
    /// Blocks the calling thread: do not call it from an async task (use
    /// [`begin_acquire_permission`](Self::begin_acquire_permission) and the
    /// runtime's timer).
    ///
    /// # Errors
    ///
    /// As [`begin_acquire_permission`](Self::begin_acquire_permission).
    fn acquire_permission(&self, permits: u32) -> Result<bool, PermitError> {
        Ok(self.begin_acquire_permission(permits)?.wait())
    }

    /// [`change_timeout`](Self::change_timeout) from signed nanoseconds, as a
    /// configuration may carry them.
    ///
    /// # Errors
    ///
    /// [`PermitConfigError::NegativeTimeout`] below 0.
    #[deprecated(
        since = "0.2.0",
        note = "use change_timeout(Duration), or compat::change_timeout_nanos for signed nanoseconds"
    )]
    fn change_timeout_nanos(&self, nanos: i64) -> Result<(), crate::ConfigError> {
        compat::change_timeout_nanos(self, nanos)
    }

    /// A call guarded by this limiter finished with `result`: drains the
    /// limiter if `drain_when(result)` says so (Resilience4j's
    /// `drainPermissionsOnResult`, consulted by `onResult` / `onError`), and
    /// returns the permits drained.
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper::refill::{PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// let too_many: Result<(), u16> = Err(429);
    /// let drained = limiter.on_result(&too_many, |r| matches!(r, Err(429)));
    /// assert_eq!(drained, Some(50));
    /// assert_eq!(limiter.metrics().available_permissions, 0);
    /// ```
    fn on_result<T, E>(
        &self,
        result: &Result<T, E>,
        drain_when: impl FnOnce(&Result<T, E>) -> bool,
    ) -> Option<u64>
    where
        Self: Sized,
    {
        drain_when(result).then(|| self.drain_permissions())
    }
}

macro_rules! forward_permit_limiter {
    ($($ty:ty),*) => {$(
        impl<L: PermitLimiter + ?Sized> PermitLimiter for $ty {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn config_view(&self) -> ConfigView {
                (**self).config_view()
            }
            fn begin_acquire_permission(&self, permits: u32) -> Result<PendingPermission<'_>, PermitError> {
                (**self).begin_acquire_permission(permits)
            }
            fn reserve_permission(&self, permits: u32) -> Result<Permission, PermitError> {
                (**self).reserve_permission(permits)
            }
            fn drain_permissions(&self) -> u64 {
                (**self).drain_permissions()
            }
            fn change_limit_for_period(&self, limit: u32) -> Result<(), crate::ConfigError> {
                (**self).change_limit_for_period(limit)
            }
            fn change_timeout(&self, timeout: Duration) -> Result<(), crate::ConfigError> {
                (**self).change_timeout(timeout)
            }
            fn metrics(&self) -> Metrics {
                (**self).metrics()
            }
            fn events(&self) -> &EventPublisher<PermitEvent> {
                (**self).events()
            }
            fn acquire_permission(&self, permits: u32) -> Result<bool, PermitError> {
                (**self).acquire_permission(permits)
            }
        }
    )*};
}

forward_permit_limiter!(&L, Arc<L>);

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

    pub(crate) fn set_timeout(&self, timeout: Duration) -> Result<(), crate::ConfigError> {
        let t = config::check_timeout_duration(timeout)?;
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
    /// back, `tag` is the grant's (see [`Undo`]).
    pub(crate) fn pending<'a>(
        &'a self,
        clock: &'a dyn Clock,
        limiter: &'a dyn Undo,
        permits: u32,
        now: u64,
        wait: Option<u64>,
        tag: u32,
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
            tag,
            state,
        }
    }
}

/// Gives a reservation back: the limiter's
/// [`RateLimiter::cancel`](crate::RateLimiter::cancel), reachable from a
/// [`PendingPermission`] without naming the limiter's clock type. `Sync`,
/// so that a pending acquisition stays `Send` (an async task may hold it).
pub(crate) trait Undo: Sync {
    /// As [`RateLimiter::cancel`](crate::RateLimiter::cancel).
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
/// Returned by [`PermitLimiter::begin_acquire_permission`]. The decision is
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
/// a wait is alive it counts in [`Metrics::waiting_threads`].
///
/// # Examples
///
/// A caller parked on a manual clock, the way a test (or an async runtime)
/// drives it without a thread:
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Clock, ManualClock};
/// use ratekeeper::refill::{PermitLimiter, RefillConfig, RefillLimiter};
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
    /// The limiter's tag for this reservation (see [`Grant`]'s claim).
    tag: u32,
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
    /// which the limiter's [`RateLimiter::cancel`](crate::RateLimiter::cancel)
    /// recognises; `None` if refused. [`cancel`](Self::cancel) is the same
    /// give-back, ending the acquisition too.
    pub fn grant(&self) -> Option<Grant> {
        self.is_granted().then(|| {
            Grant::new(self.ready_at, self.ready_at, self.decided_at, self.permits)
                .with_claim(self.tag)
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
    /// "Cancelling a reservation" section ([`RefillLimiter`],
    /// [`CycleLimiter`]); in short, a reservation that had to wait can be
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
    /// use ratekeeper::refill::{PermitLimiter, RefillConfig, RefillLimiter};
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
            .field("tag", &self.tag)
            .field("ended", &(self.state == PendingState::Ended))
            .finish()
    }
}

/// Nanoseconds of `clock` since `origin`, clamped to `0 ..= i64::MAX` (a
/// clock that reads before the origin counts as the origin; after 292 years
/// time stops).
#[inline]
pub(crate) fn elapsed(now: u64, origin: u64) -> i64 {
    elapsed_nanos(origin, now).min(i64::MAX as u64) as i64
}
