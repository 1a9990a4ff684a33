//! Named limiters built from named configurations: Resilience4j's
//! `RateLimiterRegistry`.
//!
//! A [`Registry`] holds a **default configuration**, any number of **named
//! configurations**, and the **limiters** created so far, one per name. It
//! hands limiters out as `Arc<L>`; asking for a name again returns the same
//! limiter, whatever configuration is passed the second time (get-or-create
//! never replaces). It publishes an event when a limiter is added, removed
//! or replaced. Every method takes `&self`: share the registry by reference
//! or in an `Arc`.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use ratekeeper_resilience4j::{ConfigBuilder, PermitLimiter, RefillLimiter};
//! use ratekeeper_resilience4j::registry::Registry;
//!
//! let registry = Registry::<RefillLimiter>::builder()
//!     // Shared defaults: 100 permits per second, no waiting.
//!     .defaults(
//!         ConfigBuilder::new()
//!             .limit_for_period(100)
//!             .limit_refresh_period(Duration::from_secs(1))
//!             .timeout(Duration::ZERO),
//!     )
//!     // A named configuration overriding one field of the defaults.
//!     .configuration_overrides("bulk", ConfigBuilder::new().limit_for_period(10))
//!     .build()?;
//!
//! let api = registry.limiter("api"); // the default configuration
//! assert_eq!(api.config().limit_for_period(), 100);
//! assert!(Arc::ptr_eq(&api, &registry.limiter("api"))); // the same limiter
//!
//! let export = registry.limiter_from_configuration("export", "bulk")?;
//! assert_eq!(export.config().limit_for_period(), 10);
//! assert_eq!(export.config().timeout(), Duration::ZERO); // from the defaults
//!
//! let names: Vec<String> = registry.limiters().iter().map(|l| l.name().to_owned()).collect();
//! assert_eq!(names, ["api", "export"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Resilience4j's registry here
//!
//! | Resilience4j | here |
//! |---|---|
//! | `RateLimiterRegistry.ofDefaults()` | [`Registry::new`] |
//! | `RateLimiterRegistry.of(config)` | [`Registry::with_default_config`] |
//! | `custom().withRateLimiterConfig(c).addRateLimiterConfig(n, c).build()` | [`Registry::builder`]`().`[`default_config`](RegistryBuilder::default_config)`(c).`[`configuration`](RegistryBuilder::configuration)`(n, c).`[`build`](RegistryBuilder::build)`()` |
//! | `rateLimiter(name)` | [`limiter`](Registry::limiter) |
//! | `rateLimiter(name, config)` | [`limiter_with_config`](Registry::limiter_with_config) |
//! | `rateLimiter(name, Supplier<config>)` | [`limiter_with`](Registry::limiter_with) |
//! | `rateLimiter(name, configName)` | [`limiter_from_configuration`](Registry::limiter_from_configuration) |
//! | `addConfiguration` / `removeConfiguration` / `getConfiguration` | [`add_configuration`](Registry::add_configuration) / [`remove_configuration`](Registry::remove_configuration) / [`configuration`](Registry::configuration) |
//! | `getDefaultConfig()` | [`default_config`](Registry::default_config) |
//! | `find` / `remove` / `replace` | [`find`](Registry::find) / [`remove`](Registry::remove) / [`replace`](Registry::replace) |
//! | `getAllRateLimiters()` | [`limiters`](Registry::limiters) (a snapshot, sorted by name) |
//! | `getEventPublisher().onEntryAdded / onEntryRemoved / onEntryReplaced` | [`events`](Registry::events)`().`[`on_added`](crate::EventPublisher::on_added) / [`on_removed`](crate::EventPublisher::on_removed) / [`on_replaced`](crate::EventPublisher::on_replaced) |
//! | `IllegalArgumentException` for `"default"` | [`RegistryError::ReservedName`] |
//! | `ConfigurationNotFoundException` | [`RegistryError::ConfigurationNotFound`] |
//!
//! Differences:
//!
//! * **Either limiter.** Resilience4j's registry always builds its
//!   `AtomicRateLimiter`; a `Registry<L>` builds any [`RegistryLimiter`]:
//!   [`RefillLimiter`](crate::RefillLimiter) or [`CycleLimiter`](crate::CycleLimiter), on any clock (a
//!   [`ManualClock`](ratekeeper::ManualClock) for tests, through
//!   [`Registry::builder_with_clock`]).
//! * **Overrides.** A named configuration can be given whole, or as a
//!   [`ConfigBuilder`](crate::ConfigBuilder) whose set fields override the registry's defaults
//!   (the framework-level `baseConfig` inheritance of Resilience4j's Spring
//!   properties, built in).
//! * **Unknown configuration names are always an error.**
//!   [`limiter_from_configuration`](Registry::limiter_from_configuration)
//!   checks the configuration name even when the limiter already exists
//!   (Resilience4j checks it only when it creates the limiter), so a typo
//!   never goes unnoticed because someone else created the limiter first.
//! * **No tags** and no pluggable store: the limiters carry no tags to merge
//!   into, and eviction of per-key limiters is [`remove`](Registry::remove).
//!
//! # Concurrency
//!
//! Lookups of existing limiters take a read lock; creating, removing or
//! replacing one takes a write lock. Get-or-create checks again under the
//! write lock, so racing threads create **exactly one** limiter per name,
//! and a configuration closure ([`limiter_with`](Registry::limiter_with))
//! is called only by the thread that creates it. Such a closure runs while
//! the registry is locked for writing: it must not call the registry (that
//! would deadlock). If it panics, nothing is added and the registry stays
//! usable.
//!
//! Events are delivered after the change, on the thread that made it, with
//! no lock held, so a subscriber may use the registry. Events of different
//! threads may therefore arrive out of order; each carries the
//! [`sequence`](RegistryEvent::sequence) number of its change, which orders
//! the changes as the registry made them.

mod builder;
mod event;
mod limiter;
mod table;
#[cfg(all(test, not(loom)))]
mod tests;

pub use builder::RegistryBuilder;
pub use event::{RegistryEvent, RegistryEventKind};
pub use limiter::{RegistryError, RegistryLimiter, DEFAULT_CONFIGURATION};
pub use table::{CycleRegistry, RefillRegistry, Registry};
