//! Resilience4j's rate limiter interface over ratekeeper's two bucket
//! algorithms.
//!
//! [`RefillLimiter`] (a strict token bucket with gradual refill, a burst
//! capacity and initial permits) and [`CycleLimiter`] (Resilience4j's
//! default `AtomicRateLimiter`, fixed cycles) are the core's
//! [`ratekeeper::bucket`] limiters with what Resilience4j adds: a name, a
//! timeout, events, a waiting gauge and metrics, behind one trait,
//! [`PermitLimiter`]. Around them: a [`Registry`] of named limiters with
//! layered configuration, [`decorate`]d calls, the signed Java shapes of
//! [`compat`], and, with feature `tokio`, async acquisition and decorators
//! ([`tokio`]). The algorithms, their cancel and their fine print are
//! documented in [`ratekeeper::bucket`].
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
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
//! A [`Registry`] of named limiters and a [`decorate`]d call:
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper_resilience4j::decorate::RateLimited;
//! use ratekeeper_resilience4j::{ConfigBuilder, Permission, PermitLimiter, RefillLimiter};
//! use ratekeeper_resilience4j::registry::Registry;
//!
//! // 10 permits per second, a bucket of 20, callers wait at most 50 ms. The
//! // registry merges Resilience4j's layered configuration (`ConfigBuilder`).
//! let registry = Registry::<RefillLimiter>::builder()
//!     .defaults(
//!         ConfigBuilder::new()
//!             .limit_for_period(10)
//!             .limit_refresh_period(Duration::from_secs(1))
//!             .permit_capacity(20)
//!             .timeout(Duration::from_millis(50)),
//!     )
//!     .build()?;
//! let backend = registry.limiter("backend"); // get-or-create, shared as an Arc
//!
//! assert_eq!(backend.reserve_permission(10)?, Permission::Now); // 10 initial permits
//! // The next permit comes in 100 ms, beyond the timeout: refused at once,
//! // nothing reserved (Resilience4j would park the caller for 50 ms first).
//! assert_eq!(backend.reserve_permission(1)?, Permission::Refused);
//!
//! let fetch = RateLimited::new(&*backend).decorate(|id: u32| format!("row {id}"));
//! assert!(fetch(7).is_err()); // not permitted: the function did not run
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The Resilience4j interface
//!
//! Both limiters implement [`PermitLimiter`] (and ratekeeper's
//! [`RateLimiter`](ratekeeper::RateLimiter)):
//!
//! | Resilience4j | here |
//! |---|---|
//! | `RateLimiterConfig.custom()…build()` | [`RefillConfig::builder()`](RefillConfig::builder)`…`[`build()`](ConfigBuilder::build) / [`ConfigBuilder::build_cycle()`](ConfigBuilder::build_cycle) |
//! | `getName()` | [`name`](PermitLimiter::name) |
//! | `getRateLimiterConfig()` | [`config_view`](PermitLimiter::config_view) ([`ConfigView`]) |
//! | `acquirePermission(n)` | [`acquire_permission`](PermitLimiter::acquire_permission) → `Ok(bool)` |
//! | the same, without blocking the thread | [`begin_acquire_permission`](PermitLimiter::begin_acquire_permission) → [`PendingPermission`] |
//! | `reservePermission(n)` → `0` / nanos / `-1` | [`reserve_permission`](PermitLimiter::reserve_permission) → [`Permission`] `Now` / `After(d)` / `Refused` ([`Permission::nanos_to_wait`] gives the `long`) |
//! | `drainPermissions()` | [`drain_permissions`](PermitLimiter::drain_permissions) → permits drained |
//! | `changeLimitForPeriod(n)` | [`change_limit_for_period`](PermitLimiter::change_limit_for_period) |
//! | `changeTimeoutDuration(d)` | [`change_timeout`](PermitLimiter::change_timeout), [`compat::change_timeout_nanos`] |
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
//! the thread, on the limiter's clock and [`WaitPolicy`](ratekeeper::WaitPolicy))
//! and returns true; refused, it returns false **at once**, with nothing
//! reserved. While it waits it counts in [`Metrics::waiting_threads`].
//! [`begin_acquire_permission`](PermitLimiter::begin_acquire_permission)
//! splits this: it returns the decision as a [`PendingPermission`], which the
//! caller [`wait`](PendingPermission::wait)s on, [`finish`](PendingPermission::finish)es
//! after waiting its own way (an async timer, a virtual clock),
//! [`abandon`](PendingPermission::abandon)s (Resilience4j's interrupt: false,
//! reservation kept), or [`cancel`](PendingPermission::cancel)s (Go's
//! `Reservation.Cancel`: false, reservation given back as far as the limiter
//! allows, or kept for the next caller; see the core's [Cancelling a
//! reservation](ratekeeper::bucket#cancelling-a-reservation)).
//!
//! **Events** are published when an acquisition ends (refused: at once;
//! granted: when it finishes; abandoned: as a failure), when a reservation is
//! decided, and when permits are drained. A request refused with a typed
//! error publishes nothing. With no subscriber an event costs one atomic
//! load.
//!
//!
//! # Crate features
//!
//! * `tokio`: [`tokio::AsyncPermitLimiter`] (Resilience4j's
//!   `acquirePermission`, async, cancel safe) and [`tokio::decorate`].
#![cfg_attr(docsrs, feature(doc_cfg))]

mod builder;
pub mod compat;
mod config;
mod cycle;
pub mod decorate;
mod events;
mod pending;
mod permit;
mod refill;
pub mod registry;
mod sync;
#[cfg(all(test, not(loom)))]
mod test_util;
#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;

pub use builder::{CycleLimiterBuilder, RefillLimiterBuilder, DEFAULT_NAME, DEFAULT_RATE_PERIOD};
pub use config::ConfigBuilder;
pub use cycle::CycleLimiter;
pub use events::{EventPublisher, PermitEvent, PermitEventKind, SubscriptionId};
pub use pending::PendingPermission;
pub use permit::{ConfigView, Metrics, Permission, PermitError, PermitLimiter, View};
pub use ratekeeper::bucket::{
    CycleConfig, CycleConfigBuilder, RefillConfig, RefillConfigBuilder, DEFAULT_LIMIT_FOR_PERIOD,
    DEFAULT_LIMIT_REFRESH_PERIOD, DEFAULT_TIMEOUT,
};
pub use refill::RefillLimiter;
pub use registry::{Registry, RegistryError};
