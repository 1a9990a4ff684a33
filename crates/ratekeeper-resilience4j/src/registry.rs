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
//! | `getEventPublisher().onEntryAdded / onEntryRemoved / onEntryReplaced` | [`events`](Registry::events)`().`[`on_added`](EventPublisher::on_added) / [`on_removed`](EventPublisher::on_removed) / [`on_replaced`](EventPublisher::on_replaced) |
//! | `IllegalArgumentException` for `"default"` | [`RegistryError::ReservedName`] |
//! | `ConfigurationNotFoundException` | [`RegistryError::ConfigurationNotFound`] |
//!
//! Differences:
//!
//! * **Either limiter.** Resilience4j's registry always builds its
//!   `AtomicRateLimiter`; a `Registry<L>` builds any [`RegistryLimiter`]:
//!   [`RefillLimiter`] or [`CycleLimiter`], on any clock (a
//!   [`ManualClock`](crate::ManualClock) for tests, through
//!   [`Registry::builder_with_clock`]).
//! * **Overrides.** A named configuration can be given whole, or as a
//!   [`ConfigBuilder`] whose set fields override the registry's defaults
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

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::{
    ConfigBuilder, CycleConfig, CycleLimiter, EventPublisher, PermitLimiter, RefillConfig,
    RefillLimiter, SubscriptionId,
};
use ratekeeper::ConfigError;
use ratekeeper::{Clock, DefaultClock};

/// The name of the default configuration: Resilience4j's `"default"`. It
/// cannot be added or removed by name; [`Registry::configuration`] returns
/// the default configuration for it.
///
/// ```
/// use ratekeeper_resilience4j::CycleLimiter;
/// use ratekeeper_resilience4j::registry::{Registry, DEFAULT_CONFIGURATION};
///
/// let registry = Registry::<CycleLimiter>::new();
/// assert_eq!(registry.configuration(DEFAULT_CONFIGURATION).as_ref(), Some(registry.default_config()));
/// ```
pub const DEFAULT_CONFIGURATION: &str = "default";

/// A limiter a [`Registry`] can build: a name and a configuration in, a
/// limiter out.
///
/// Implemented for [`RefillLimiter`] and [`CycleLimiter`] on any clock that
/// can be cloned (every limiter of a registry gets a clone of the registry's
/// clock; clones of a [`ManualClock`](crate::ManualClock) share their time).
///
/// # Examples
///
/// ```
/// use ratekeeper_resilience4j::{ConfigBuilder, CycleConfig, CycleLimiter, PermitLimiter};
/// use ratekeeper_resilience4j::registry::RegistryLimiter;
/// use ratekeeper::ManualClock;
///
/// let config = <CycleLimiter<ManualClock> as RegistryLimiter>::validate(
///     &ConfigBuilder::new().limit_for_period(5),
/// )?;
/// let limiter = CycleLimiter::build("jobs".into(), config, ManualClock::new(0));
/// assert_eq!(limiter.name(), "jobs");
/// assert_eq!(limiter.config_view().limit_for_period, 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait RegistryLimiter: PermitLimiter + Send + Sync + Sized + 'static {
    /// The validated configuration the limiter is built from.
    ///
    /// Its `Default` must be what [`validate`](Self::validate) gives for an
    /// empty [`ConfigBuilder`]: the limiter's own defaults.
    type Config: Clone + Default + fmt::Debug + Send + Sync + 'static;

    /// The clock the limiter reads.
    type Clock: Clock + Clone + 'static;

    /// A limiter named `name`, configured by `config`, on `clock`.
    fn build(name: Arc<str>, config: Self::Config, clock: Self::Clock) -> Self;

    /// Validates a builder into a configuration for this limiter.
    ///
    /// # Errors
    ///
    /// The builder's [`ConfigError`] for this limiter.
    fn validate(builder: &ConfigBuilder) -> Result<Self::Config, ConfigError>;

    /// `config` as a builder with every field set: validating it gives
    /// `config` back.
    fn to_builder(config: &Self::Config) -> ConfigBuilder;
}

impl<C: Clock + Clone + 'static> RegistryLimiter for RefillLimiter<C> {
    type Config = RefillConfig;
    type Clock = C;

    fn build(name: Arc<str>, config: RefillConfig, clock: C) -> Self {
        RefillLimiter::new_with_clock(name, config, clock)
    }

    fn validate(builder: &ConfigBuilder) -> Result<RefillConfig, ConfigError> {
        builder.build()
    }

    fn to_builder(config: &RefillConfig) -> ConfigBuilder {
        config.to_builder()
    }
}

impl<C: Clock + Clone + 'static> RegistryLimiter for CycleLimiter<C> {
    type Config = CycleConfig;
    type Clock = C;

    fn build(name: Arc<str>, config: CycleConfig, clock: C) -> Self {
        CycleLimiter::new_with_clock(name, config, clock)
    }

    fn validate(builder: &ConfigBuilder) -> Result<CycleConfig, ConfigError> {
        builder.build_cycle()
    }

    fn to_builder(config: &CycleConfig) -> ConfigBuilder {
        config.to_builder()
    }
}

/// Why a registry refused a configuration request.
///
/// # Examples
///
/// ```
/// use ratekeeper_resilience4j::RefillLimiter;
/// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
///
/// let registry = Registry::<RefillLimiter>::new();
/// let err = registry.limiter_from_configuration("api", "fast").unwrap_err();
/// assert_eq!(err, RegistryError::ConfigurationNotFound("fast".to_owned()));
/// assert_eq!(err.to_string(), "no configuration named \"fast\"");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A named configuration was added or removed under the reserved name
    /// [`"default"`](DEFAULT_CONFIGURATION).
    #[error(
        "\"default\" names the registry's default configuration and cannot be added or removed"
    )]
    ReservedName,
    /// No configuration has this name.
    #[error("no configuration named \"{0}\"")]
    ConfigurationNotFound(String),
    /// A configuration did not validate for the registry's limiter.
    #[error("configuration \"{name}\" is invalid")]
    InvalidConfiguration {
        /// The configuration's name (`"default"` for the defaults).
        name: String,
        /// What the validation refused.
        #[source]
        source: ConfigError,
    },
}

/// What changed in a registry: Resilience4j's `RegistryEvent.Type`.
///
/// ```
/// use ratekeeper_resilience4j::RefillLimiter;
/// use ratekeeper_resilience4j::registry::{Registry, RegistryEventKind};
///
/// let registry = Registry::<RefillLimiter>::new();
/// registry.events().subscribe(|e| assert_eq!(e.kind(), RegistryEventKind::Added));
/// registry.limiter("a");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegistryEventKind {
    /// A limiter was created and added.
    Added,
    /// A limiter was removed.
    Removed,
    /// A limiter was replaced by a new one of the same name.
    Replaced,
}

impl RegistryEventKind {
    /// Resilience4j's name: `ADDED`, `REMOVED` or `REPLACED`.
    ///
    /// ```
    /// use ratekeeper_resilience4j::registry::RegistryEventKind;
    ///
    /// assert_eq!(RegistryEventKind::Replaced.as_str(), "REPLACED");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            RegistryEventKind::Added => "ADDED",
            RegistryEventKind::Removed => "REMOVED",
            RegistryEventKind::Replaced => "REPLACED",
        }
    }
}

impl fmt::Display for RegistryEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A change of a [`Registry`]'s limiters, delivered to the subscribers of
/// [`Registry::events`].
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use ratekeeper_resilience4j::RefillLimiter;
/// use ratekeeper_resilience4j::registry::{Registry, RegistryEventKind};
///
/// let registry = Registry::<RefillLimiter>::new();
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let sink = log.clone();
/// registry.events().subscribe(move |e| {
///     sink.lock().unwrap().push((e.kind(), e.name().to_owned(), e.sequence()))
/// });
/// registry.limiter("a");
/// registry.remove("a");
/// assert_eq!(
///     *log.lock().unwrap(),
///     vec![
///         (RegistryEventKind::Added, "a".to_owned(), 1),
///         (RegistryEventKind::Removed, "a".to_owned(), 2),
///     ]
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistryEvent<L> {
    /// A limiter was created and added.
    Added {
        /// The new limiter.
        limiter: Arc<L>,
        /// The change's [sequence number](Self::sequence).
        sequence: u64,
    },
    /// A limiter was removed.
    Removed {
        /// The limiter removed (callers holding it may still use it).
        limiter: Arc<L>,
        /// The change's [sequence number](Self::sequence).
        sequence: u64,
    },
    /// A limiter was replaced by a new one of the same name.
    Replaced {
        /// The limiter replaced (callers holding it may still use it).
        old: Arc<L>,
        /// The limiter now registered under the name.
        new: Arc<L>,
        /// The change's [sequence number](Self::sequence).
        sequence: u64,
    },
}

impl<L> Clone for RegistryEvent<L> {
    fn clone(&self) -> Self {
        match self {
            RegistryEvent::Added { limiter, sequence } => RegistryEvent::Added {
                limiter: Arc::clone(limiter),
                sequence: *sequence,
            },
            RegistryEvent::Removed { limiter, sequence } => RegistryEvent::Removed {
                limiter: Arc::clone(limiter),
                sequence: *sequence,
            },
            RegistryEvent::Replaced { old, new, sequence } => RegistryEvent::Replaced {
                old: Arc::clone(old),
                new: Arc::clone(new),
                sequence: *sequence,
            },
        }
    }
}

impl<L> RegistryEvent<L> {
    /// What changed.
    pub fn kind(&self) -> RegistryEventKind {
        match self {
            RegistryEvent::Added { .. } => RegistryEventKind::Added,
            RegistryEvent::Removed { .. } => RegistryEventKind::Removed,
            RegistryEvent::Replaced { .. } => RegistryEventKind::Replaced,
        }
    }

    /// The limiter the event is about: the one added, removed, or the new
    /// one of a replacement.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let last = Arc::new(Mutex::new(None));
    /// let sink = last.clone();
    /// registry.events().subscribe(move |e| *sink.lock().unwrap() = Some(e.limiter().clone()));
    /// registry.limiter("a");
    /// registry.replace("a", RefillConfig::default());
    /// let new = registry.find("a").unwrap();
    /// assert!(Arc::ptr_eq(last.lock().unwrap().as_ref().unwrap(), &new));
    /// ```
    pub fn limiter(&self) -> &Arc<L> {
        match self {
            RegistryEvent::Added { limiter, .. } | RegistryEvent::Removed { limiter, .. } => {
                limiter
            }
            RegistryEvent::Replaced { new, .. } => new,
        }
    }

    /// The registry's count of changes when this one was made: 1 for the
    /// first limiter added, one more for every later addition, removal or
    /// replacement. Subscribers that see events from several threads can
    /// order them by it.
    pub fn sequence(&self) -> u64 {
        match self {
            RegistryEvent::Added { sequence, .. }
            | RegistryEvent::Removed { sequence, .. }
            | RegistryEvent::Replaced { sequence, .. } => *sequence,
        }
    }
}

impl<L: PermitLimiter> RegistryEvent<L> {
    /// The name of the limiter the event is about.
    pub fn name(&self) -> &str {
        self.limiter().name()
    }
}

/// Filtered subscriptions to a registry's events, as Resilience4j's
/// `onEntryAdded`, `onEntryRemoved` and `onEntryReplaced`.
impl<L> EventPublisher<RegistryEvent<L>> {
    /// Calls `callback` with every limiter added.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use ratekeeper_resilience4j::PermitLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    /// use ratekeeper_resilience4j::CycleLimiter;
    ///
    /// let registry = Registry::<CycleLimiter>::new();
    /// let added = Arc::new(Mutex::new(Vec::new()));
    /// let sink = added.clone();
    /// registry.events().on_added(move |l| sink.lock().unwrap().push(l.name().to_owned()));
    /// registry.limiter("a");
    /// registry.limiter("a"); // exists: not added again
    /// registry.remove("a");
    /// assert_eq!(*added.lock().unwrap(), ["a"]);
    /// ```
    pub fn on_added(&self, callback: impl Fn(&Arc<L>) + Send + Sync + 'static) -> SubscriptionId {
        self.subscribe(move |e: &RegistryEvent<L>| {
            if let RegistryEvent::Added { limiter, .. } = e {
                callback(limiter)
            }
        })
    }

    /// Calls `callback` with every limiter removed.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use ratekeeper_resilience4j::registry::Registry;
    /// use ratekeeper_resilience4j::CycleLimiter;
    ///
    /// let registry = Registry::<CycleLimiter>::new();
    /// let removed = Arc::new(AtomicUsize::new(0));
    /// let count = removed.clone();
    /// registry.events().on_removed(move |_| {
    ///     count.fetch_add(1, Ordering::Relaxed);
    /// });
    /// registry.limiter("a");
    /// registry.remove("a");
    /// registry.remove("a"); // gone: nothing removed
    /// assert_eq!(removed.load(Ordering::Relaxed), 1);
    /// ```
    pub fn on_removed(&self, callback: impl Fn(&Arc<L>) + Send + Sync + 'static) -> SubscriptionId {
        self.subscribe(move |e: &RegistryEvent<L>| {
            if let RegistryEvent::Removed { limiter, .. } = e {
                callback(limiter)
            }
        })
    }

    /// Calls `callback` with the old and the new limiter of every
    /// replacement.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use ratekeeper_resilience4j::{CycleConfig, PermitLimiter};
    /// use ratekeeper_resilience4j::registry::Registry;
    /// use ratekeeper_resilience4j::CycleLimiter;
    ///
    /// let registry = Registry::<CycleLimiter>::new();
    /// let limits = Arc::new(Mutex::new(Vec::new()));
    /// let sink = limits.clone();
    /// registry.events().on_replaced(move |old, new| {
    ///     let limit = |l: &CycleLimiter| l.config_view().limit_for_period;
    ///     sink.lock().unwrap().push((limit(old), limit(new)));
    /// });
    /// registry.limiter("a");
    /// registry.replace("a", CycleConfig::builder().limit_for_period(7).build()?);
    /// assert_eq!(*limits.lock().unwrap(), [(50, 7)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_replaced(
        &self,
        callback: impl Fn(&Arc<L>, &Arc<L>) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.subscribe(move |e: &RegistryEvent<L>| {
            if let RegistryEvent::Replaced { old, new, .. } = e {
                callback(old, new)
            }
        })
    }
}

/// The limiters, and the count of changes made to them.
struct Entries<L> {
    map: HashMap<Arc<str>, Arc<L>>,
    /// Changes made so far: the last event's sequence number.
    sequence: u64,
}

/// Named limiters of type `L`, built from a default configuration and named
/// ones: Resilience4j's `RateLimiterRegistry`. See the [module
/// docs](self).
///
/// # Examples
///
/// A registry of cycle limiters on a test clock:
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_resilience4j::{CycleConfig, CycleLimiter, PermitLimiter};
/// use ratekeeper_resilience4j::registry::Registry;
/// use ratekeeper::ManualClock;
///
/// let clock = ManualClock::new(0);
/// let one_per_second = CycleConfig::builder()
///     .limit_for_period(1)
///     .limit_refresh_period(Duration::from_secs(1))
///     .timeout(Duration::ZERO)
///     .build()?;
/// let registry = Registry::<CycleLimiter<ManualClock>>::builder_with_clock(clock.clone())
///     .default_config(one_per_second)
///     .build()?;
///
/// let limiter = registry.limiter("jobs");
/// assert!(limiter.acquire_permission(1)?);
/// assert!(!limiter.acquire_permission(1)?); // refused at once: timeout 0
/// clock.advance(Duration::from_secs(1));
/// assert!(registry.limiter("jobs").acquire_permission(1)?); // the same limiter
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Registry<L: RegistryLimiter> {
    /// What named overrides are merged onto.
    defaults: ConfigBuilder,
    /// `defaults`, validated.
    default_config: L::Config,
    clock: L::Clock,
    /// Named configurations, validated; never holds `"default"`.
    configs: RwLock<HashMap<String, L::Config>>,
    entries: RwLock<Entries<L>>,
    events: EventPublisher<RegistryEvent<L>>,
}

impl<L: RegistryLimiter> Registry<L>
where
    L::Clock: Default,
{
    /// A registry whose default configuration is the limiter's own defaults
    /// (Resilience4j `RateLimiterRegistry.ofDefaults()`), on the default
    /// clock.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// assert_eq!(*registry.default_config(), RefillConfig::default());
    /// assert_eq!(registry.limiter("api").config(), RefillConfig::default());
    /// ```
    pub fn new() -> Registry<L> {
        Registry::from_parts(
            ConfigBuilder::new(),
            L::Config::default(),
            L::Clock::default(),
            HashMap::new(),
        )
    }

    /// A registry with `config` as its default configuration (Resilience4j
    /// `RateLimiterRegistry.of(config)`), on the default clock.
    ///
    /// Named overrides are merged onto every field of `config` (for a
    /// [`RefillConfig`], its capacity and initial permits too); use
    /// [`RegistryBuilder::defaults`] for defaults that leave fields unset.
    ///
    /// ```
    /// use ratekeeper_resilience4j::CycleLimiter;
    /// use ratekeeper_resilience4j::{CycleConfig, PermitLimiter};
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let config = CycleConfig::builder().limit_for_period(3).build()?;
    /// let registry = Registry::<CycleLimiter>::with_default_config(config);
    /// assert_eq!(registry.limiter("a").config(), config);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_default_config(config: L::Config) -> Registry<L> {
        Registry::from_parts(
            L::to_builder(&config),
            config,
            L::Clock::default(),
            HashMap::new(),
        )
    }

    /// A builder for a registry on the default clock (Resilience4j
    /// `RateLimiterRegistry.custom()`).
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let slow = RefillConfig::builder().limit_for_period(1).build()?;
    /// let registry = Registry::<RefillLimiter>::builder()
    ///     .configuration("slow", slow)
    ///     .build()?;
    /// assert_eq!(registry.configuration("slow"), Some(slow));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> RegistryBuilder<L> {
        RegistryBuilder::new(L::Clock::default())
    }
}

impl<L: RegistryLimiter> Default for Registry<L>
where
    L::Clock: Default,
{
    fn default() -> Self {
        Registry::new()
    }
}

impl<L: RegistryLimiter> Registry<L> {
    /// A builder for a registry whose limiters read clones of `clock`, e.g. a
    /// [`ManualClock`](crate::ManualClock) in tests.
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::PermitLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let clock = ManualClock::new(0);
    /// let registry = Registry::<RefillLimiter<ManualClock>>::builder_with_clock(clock.clone()).build()?;
    /// let limiter = registry.limiter("api");
    /// assert_eq!(limiter.metrics().available_permissions, 50);
    /// assert!(limiter.acquire_permission(50)?);
    /// clock.advance_nanos(100); // 10 ns per permit
    /// assert_eq!(limiter.metrics().available_permissions, 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder_with_clock(clock: L::Clock) -> RegistryBuilder<L> {
        RegistryBuilder::new(clock)
    }

    fn from_parts(
        defaults: ConfigBuilder,
        default_config: L::Config,
        clock: L::Clock,
        configs: HashMap<String, L::Config>,
    ) -> Registry<L> {
        Registry {
            defaults,
            default_config,
            clock,
            configs: RwLock::new(configs),
            entries: RwLock::new(Entries {
                map: HashMap::new(),
                sequence: 0,
            }),
            events: EventPublisher::new(),
        }
    }

    // The locks guard maps that are only changed by whole inserts and
    // removals after every fallible step (a configuration closure runs
    // before the insert), so a panic never leaves them half-changed: a
    // poisoned lock is used as is.

    fn read(&self) -> RwLockReadGuard<'_, Entries<L>> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Entries<L>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_configs(&self) -> RwLockReadGuard<'_, HashMap<String, L::Config>> {
        self.configs.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_configs(&self) -> RwLockWriteGuard<'_, HashMap<String, L::Config>> {
        self.configs.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The default configuration: what [`limiter`](Self::limiter) builds
    /// with (Resilience4j `getDefaultConfig()`).
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::ConfigBuilder;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::builder()
    ///     .defaults(ConfigBuilder::new().limit_for_period(10))
    ///     .build()?;
    /// assert_eq!(registry.default_config().capacity(), 10); // follows the limit
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn default_config(&self) -> &L::Config {
        &self.default_config
    }

    /// The defaults that named overrides are merged onto
    /// ([`add_configuration_overrides`](Self::add_configuration_overrides)).
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::ConfigBuilder;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::builder()
    ///     .defaults(ConfigBuilder::new().limit_for_period(10))
    ///     .build()?;
    /// assert_eq!(registry.defaults().get_limit_for_period(), 10);
    /// assert_eq!(registry.defaults().get_permit_capacity(), None); // follows the limit
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn defaults(&self) -> ConfigBuilder {
        self.defaults
    }

    /// The clock the registry's limiters read (each has a clone).
    ///
    /// ```
    /// use ratekeeper::{Clock, ManualClock};
    /// use ratekeeper_resilience4j::CycleLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<CycleLimiter<ManualClock>>::builder_with_clock(ManualClock::new(0)).build()?;
    /// registry.clock().advance_nanos(1_000); // clones share their time
    /// assert_eq!(registry.limiter("a").clock_ref().now_nanos(), 1_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock(&self) -> &L::Clock {
        &self.clock
    }

    /// The configuration named `name`: the default configuration for
    /// [`"default"`](DEFAULT_CONFIGURATION) (Resilience4j
    /// `getConfiguration`).
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// assert_eq!(registry.configuration("default"), Some(RefillConfig::default()));
    /// assert_eq!(registry.configuration("missing"), None);
    /// ```
    pub fn configuration(&self, name: &str) -> Option<L::Config> {
        if name == DEFAULT_CONFIGURATION {
            return Some(self.default_config.clone());
        }
        self.read_configs().get(name).cloned()
    }

    /// The names of the named configurations, sorted, without `"default"`.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// registry.add_configuration("b", RefillConfig::default())?;
    /// registry.add_configuration("a", RefillConfig::default())?;
    /// assert_eq!(registry.configuration_names(), ["a", "b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn configuration_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.read_configs().keys().cloned().collect();
        names.sort_unstable();
        names
    }

    /// Adds (or replaces) the configuration named `name`, returning the one
    /// it replaced (Resilience4j `addConfiguration`). Limiters already
    /// created keep their configuration.
    ///
    /// # Errors
    ///
    /// [`RegistryError::ReservedName`] for `"default"`; nothing changes.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let slow = RefillConfig::builder().limit_for_period(1).build()?;
    /// assert_eq!(registry.add_configuration("slow", slow)?, None);
    /// assert_eq!(registry.add_configuration("slow", slow)?, Some(slow));
    /// assert_eq!(
    ///     registry.add_configuration("default", slow),
    ///     Err(RegistryError::ReservedName)
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_configuration(
        &self,
        name: impl Into<String>,
        config: L::Config,
    ) -> Result<Option<L::Config>, RegistryError> {
        let name = name.into();
        if name == DEFAULT_CONFIGURATION {
            return Err(RegistryError::ReservedName);
        }
        Ok(self.write_configs().insert(name, config))
    }

    /// Adds (or replaces) the configuration named `name`: the registry's
    /// [`defaults`](Self::defaults) with every field that `overrides` sets
    /// taken from `overrides` ([`ConfigBuilder::overwrite`]), validated.
    /// Returns the configuration added.
    ///
    /// # Errors
    ///
    /// [`RegistryError::ReservedName`] for `"default"`;
    /// [`RegistryError::InvalidConfiguration`] if the merged configuration
    /// does not validate. Nothing changes on an error.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::{ConfigBuilder, PermitConfigError};
    /// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
    ///
    /// let registry = Registry::<RefillLimiter>::builder()
    ///     .defaults(ConfigBuilder::new().timeout(Duration::ZERO))
    ///     .build()?;
    /// let burst = registry
    ///     .add_configuration_overrides("burst", ConfigBuilder::new().permit_capacity(200))?;
    /// assert_eq!((burst.capacity(), burst.timeout()), (200, Duration::ZERO));
    ///
    /// let err = registry
    ///     .add_configuration_overrides("bad", ConfigBuilder::new().limit_for_period(0))
    ///     .unwrap_err();
    /// assert_eq!(
    ///     err,
    ///     RegistryError::InvalidConfiguration {
    ///         name: "bad".to_owned(),
    ///         source: PermitConfigError::InvalidLimitForPeriod(0).into(),
    ///     }
    /// );
    /// assert_eq!(registry.configuration("bad"), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_configuration_overrides(
        &self,
        name: impl Into<String>,
        overrides: ConfigBuilder,
    ) -> Result<L::Config, RegistryError> {
        let name = name.into();
        if name == DEFAULT_CONFIGURATION {
            return Err(RegistryError::ReservedName);
        }
        let config = merge::<L>(&self.defaults, overrides, &name)?;
        self.write_configs().insert(name, config.clone());
        Ok(config)
    }

    /// Removes the configuration named `name` and returns it (Resilience4j
    /// `removeConfiguration`). Limiters built from it keep it.
    ///
    /// # Errors
    ///
    /// [`RegistryError::ReservedName`] for `"default"`.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// registry.add_configuration("slow", RefillConfig::default())?;
    /// assert!(registry.remove_configuration("slow")?.is_some());
    /// assert!(registry.remove_configuration("slow")?.is_none());
    /// assert_eq!(registry.remove_configuration("default"), Err(RegistryError::ReservedName));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_configuration(&self, name: &str) -> Result<Option<L::Config>, RegistryError> {
        if name == DEFAULT_CONFIGURATION {
            return Err(RegistryError::ReservedName);
        }
        Ok(self.write_configs().remove(name))
    }

    /// The limiter named `name`, created with the default configuration if
    /// there is none (Resilience4j `rateLimiter(name)`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let a = registry.limiter("a");
    /// assert!(Arc::ptr_eq(&a, &registry.limiter("a")));
    /// assert!(!Arc::ptr_eq(&a, &registry.limiter("b")));
    /// ```
    pub fn limiter(&self, name: &str) -> Arc<L> {
        self.get_or_create(name, || self.default_config.clone())
    }

    /// The limiter named `name`, created with `config` if there is none
    /// (Resilience4j `rateLimiter(name, config)`). An existing limiter is
    /// returned unchanged: `config` is then unused.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let one = RefillConfig::builder().limit_for_period(1).build()?;
    /// let two = RefillConfig::builder().limit_for_period(2).build()?;
    /// assert_eq!(registry.limiter_with_config("a", one).config(), one);
    /// assert_eq!(registry.limiter_with_config("a", two).config(), one); // not replaced
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limiter_with_config(&self, name: &str, config: L::Config) -> Arc<L> {
        self.get_or_create(name, || config)
    }

    /// The limiter named `name`, created with the configuration `make`
    /// returns if there is none (Resilience4j `rateLimiter(name,
    /// Supplier<config>)`). `make` is called only when the limiter is
    /// created: at most once per new name, however many threads race.
    ///
    /// `make` runs while the registry is locked for writing: it must not
    /// call this registry (that would deadlock). If it panics, nothing is
    /// added.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let calls = Cell::new(0);
    /// for _ in 0..3 {
    ///     registry.limiter_with("a", || {
    ///         calls.set(calls.get() + 1);
    ///         RefillConfig::default()
    ///     });
    /// }
    /// assert_eq!(calls.get(), 1);
    /// ```
    pub fn limiter_with(&self, name: &str, make: impl FnOnce() -> L::Config) -> Arc<L> {
        self.get_or_create(name, make)
    }

    /// The limiter named `name`, created with the configuration named
    /// `config_name` if there is none (Resilience4j `rateLimiter(name,
    /// configName)`); `"default"` names the default configuration.
    ///
    /// # Errors
    ///
    /// [`RegistryError::ConfigurationNotFound`] if no configuration is named
    /// `config_name`, **also when the limiter exists** (Resilience4j checks
    /// only when it creates one); nothing is created.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let slow = RefillConfig::builder().limit_for_period(1).build()?;
    /// registry.add_configuration("slow", slow)?;
    /// assert_eq!(registry.limiter_from_configuration("a", "slow")?.config(), slow);
    /// assert!(matches!(
    ///     registry.limiter_from_configuration("b", "fast"),
    ///     Err(RegistryError::ConfigurationNotFound(name)) if name == "fast"
    /// ));
    /// assert!(registry.find("b").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limiter_from_configuration(
        &self,
        name: &str,
        config_name: &str,
    ) -> Result<Arc<L>, RegistryError> {
        let config = self
            .configuration(config_name)
            .ok_or_else(|| RegistryError::ConfigurationNotFound(config_name.to_owned()))?;
        Ok(self.get_or_create(name, || config))
    }

    /// Get-or-create: one read-locked lookup, then, for a new name, a
    /// write-locked lookup and insert, so that exactly one limiter is created
    /// per name.
    fn get_or_create(&self, name: &str, make: impl FnOnce() -> L::Config) -> Arc<L> {
        if let Some(l) = self.read().map.get(name) {
            return Arc::clone(l);
        }
        let (limiter, sequence) = {
            let mut entries = self.write();
            if let Some(l) = entries.map.get(name) {
                return Arc::clone(l);
            }
            let config = make();
            let name: Arc<str> = Arc::from(name);
            let limiter = Arc::new(L::build(Arc::clone(&name), config, self.clock.clone()));
            entries.map.insert(name, Arc::clone(&limiter));
            entries.sequence += 1;
            (limiter, entries.sequence)
        };
        self.events.publish_with(|| RegistryEvent::Added {
            limiter: Arc::clone(&limiter),
            sequence,
        });
        limiter
    }

    /// The limiter named `name`, if there is one (Resilience4j `find`).
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// assert!(registry.find("a").is_none()); // find never creates
    /// registry.limiter("a");
    /// assert!(registry.find("a").is_some());
    /// ```
    pub fn find(&self, name: &str) -> Option<Arc<L>> {
        self.read().map.get(name).cloned()
    }

    /// Removes the limiter named `name` and returns it (Resilience4j
    /// `remove`). Callers holding it may go on using it; the next
    /// [`limiter`](Self::limiter) call for the name creates a new one.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let old = registry.limiter("a");
    /// assert!(Arc::ptr_eq(&registry.remove("a").unwrap(), &old));
    /// assert!(registry.remove("a").is_none());
    /// assert!(!Arc::ptr_eq(&registry.limiter("a"), &old));
    /// ```
    pub fn remove(&self, name: &str) -> Option<Arc<L>> {
        let (limiter, sequence) = {
            let mut entries = self.write();
            let limiter = entries.map.remove(name)?;
            entries.sequence += 1;
            (limiter, entries.sequence)
        };
        self.events.publish_with(|| RegistryEvent::Removed {
            limiter: Arc::clone(&limiter),
            sequence,
        });
        Some(limiter)
    }

    /// Replaces the limiter named `name`, if there is one, by a new limiter
    /// built with `config`, and returns the old one (Resilience4j `replace`).
    /// Does nothing and returns `None` if there is none. The new limiter
    /// starts afresh (its configuration's initial permits, a new cycle 0);
    /// callers holding the old one may go on using it.
    ///
    /// To change a running limiter's limit or timeout in place, use
    /// [`PermitLimiter::change_limit_for_period`] and
    /// [`PermitLimiter::change_timeout`] instead.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let slow = RefillConfig::builder().limit_for_period(1).build()?;
    /// assert!(registry.replace("a", slow).is_none()); // nothing to replace
    /// assert!(registry.find("a").is_none());
    ///
    /// let old = registry.limiter("a");
    /// let replaced = registry.replace("a", slow).unwrap();
    /// assert!(std::sync::Arc::ptr_eq(&old, &replaced));
    /// assert_eq!(registry.limiter("a").config(), slow);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace(&self, name: &str, config: L::Config) -> Option<Arc<L>> {
        let (old, new, sequence) = {
            let mut entries = self.write();
            let (key, old) = entries.map.get_key_value(name)?;
            let key = Arc::clone(key);
            let old = Arc::clone(old);
            let new = Arc::new(L::build(Arc::clone(&key), config, self.clock.clone()));
            entries.map.insert(key, Arc::clone(&new));
            entries.sequence += 1;
            (old, new, entries.sequence)
        };
        self.events.publish_with(|| RegistryEvent::Replaced {
            old: Arc::clone(&old),
            new,
            sequence,
        });
        Some(old)
    }

    /// A snapshot of every limiter, sorted by name (Resilience4j
    /// `getAllRateLimiters()`). Later changes do not affect it.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::PermitLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// registry.limiter("b");
    /// registry.limiter("a");
    /// let all = registry.limiters();
    /// registry.remove("a");
    /// let names: Vec<&str> = all.iter().map(|l| l.name()).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// ```
    pub fn limiters(&self) -> Vec<Arc<L>> {
        let mut all: Vec<(Arc<str>, Arc<L>)> = self
            .read()
            .map
            .iter()
            .map(|(k, v)| (Arc::clone(k), Arc::clone(v)))
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        all.into_iter().map(|(_, l)| l).collect()
    }

    /// How many limiters the registry holds.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// assert!(registry.is_empty());
    /// registry.limiter("a");
    /// assert_eq!(registry.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.read().map.len()
    }

    /// Whether the registry holds no limiter.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// registry.limiter("a");
    /// registry.remove("a");
    /// assert!(registry.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.read().map.is_empty()
    }

    /// The registry's event publisher: limiters added, removed and replaced
    /// (Resilience4j `getEventPublisher()`). With no subscriber an event
    /// costs one atomic load.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let changes = Arc::new(AtomicU64::new(0));
    /// let last = changes.clone();
    /// let id = registry.events().subscribe(move |e| last.store(e.sequence(), Ordering::Relaxed));
    /// registry.limiter("a");
    /// registry.limiter("b");
    /// assert!(registry.events().unsubscribe(id));
    /// registry.remove("a");
    /// assert_eq!(changes.load(Ordering::Relaxed), 2);
    /// ```
    pub fn events(&self) -> &EventPublisher<RegistryEvent<L>> {
        &self.events
    }
}

impl<L: RegistryLimiter> fmt::Debug for Registry<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<Arc<str>> = {
            let entries = self.read();
            let mut names: Vec<Arc<str>> = entries.map.keys().cloned().collect();
            names.sort_unstable();
            names
        };
        f.debug_struct("Registry")
            .field("default_config", &self.default_config)
            .field("configurations", &self.configuration_names())
            .field("limiters", &names)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

/// `defaults` overwritten by `overrides`, validated for `L`.
fn merge<L: RegistryLimiter>(
    defaults: &ConfigBuilder,
    overrides: ConfigBuilder,
    name: &str,
) -> Result<L::Config, RegistryError> {
    L::validate(&defaults.overwrite(overrides)).map_err(|source| {
        RegistryError::InvalidConfiguration {
            name: name.to_owned(),
            source,
        }
    })
}

/// A named configuration given to the builder, validated by
/// [`RegistryBuilder::build`].
enum Named<C> {
    Whole(C),
    Overrides(ConfigBuilder),
}

/// Builds a [`Registry`]: its default configuration, named configurations,
/// and clock (Resilience4j `RateLimiterRegistry.custom()`).
///
/// Everything is validated by [`build`](Self::build); the setters never
/// fail.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_resilience4j::RefillLimiter;
/// use ratekeeper_resilience4j::{ConfigBuilder, PermitConfigError, RefillConfig};
/// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
///
/// let registry = Registry::<RefillLimiter>::builder()
///     .defaults(ConfigBuilder::new().limit_refresh_period(Duration::from_secs(1)))
///     .configuration_overrides("ten", ConfigBuilder::new().limit_for_period(10))
///     .configuration("r4j", RefillConfig::default())
///     .build()?;
/// assert_eq!(registry.configuration("ten").unwrap().nanos_per_permit(), 100_000_000);
/// assert_eq!(registry.configuration("r4j"), Some(RefillConfig::default()));
///
/// let err = Registry::<RefillLimiter>::builder()
///     .configuration("default", RefillConfig::default())
///     .build()
///     .unwrap_err();
/// assert_eq!(err, RegistryError::ReservedName);
///
/// let err = Registry::<RefillLimiter>::builder()
///     .defaults(ConfigBuilder::new().timeout_nanos(-1))
///     .build()
///     .unwrap_err();
/// assert_eq!(
///     err,
///     RegistryError::InvalidConfiguration {
///         name: "default".to_owned(),
///         source: PermitConfigError::NegativeTimeout(-1).into(),
///     }
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RegistryBuilder<L: RegistryLimiter> {
    clock: L::Clock,
    defaults: ConfigBuilder,
    configs: Vec<(String, Named<L::Config>)>,
}

impl<L: RegistryLimiter> RegistryBuilder<L> {
    fn new(clock: L::Clock) -> RegistryBuilder<L> {
        RegistryBuilder {
            clock,
            defaults: ConfigBuilder::new(),
            configs: Vec::new(),
        }
    }

    /// The default configuration, whole (Resilience4j
    /// `withRateLimiterConfig`). Named overrides are merged onto every field
    /// of it; see [`defaults`](Self::defaults) for partial defaults. Unset:
    /// the limiter's own defaults.
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::{ConfigBuilder, RefillConfig};
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let whole = RefillConfig::builder().limit_for_period(10).build()?;
    /// let registry = Registry::<RefillLimiter>::builder()
    ///     .default_config(whole)
    ///     .configuration_overrides("slow", ConfigBuilder::new().limit_for_period(5))
    ///     .build()?;
    /// // Every field of the whole default is kept, the capacity of 10 too.
    /// assert_eq!(registry.configuration("slow").unwrap().capacity(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn default_config(mut self, config: L::Config) -> Self {
        self.defaults = L::to_builder(&config);
        self
    }

    /// The default configuration as a builder: its unset fields take the
    /// limiter's own defaults (for a refill limiter, a capacity and initial
    /// permits left unset follow each configuration's limit).
    ///
    /// ```
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::ConfigBuilder;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::builder()
    ///     .defaults(ConfigBuilder::new().limit_for_period(10))
    ///     .configuration_overrides("slow", ConfigBuilder::new().limit_for_period(5))
    ///     .build()?;
    /// // The capacity was left unset: it follows each limit.
    /// assert_eq!(registry.configuration("slow").unwrap().capacity(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn defaults(mut self, defaults: ConfigBuilder) -> Self {
        self.defaults = defaults;
        self
    }

    /// Adds a named configuration, whole (Resilience4j
    /// `addRateLimiterConfig`). A later one of the same name wins.
    ///
    /// ```
    /// use ratekeeper_resilience4j::CycleLimiter;
    /// use ratekeeper_resilience4j::CycleConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let one = CycleConfig::builder().limit_for_period(1).build()?;
    /// let two = CycleConfig::builder().limit_for_period(2).build()?;
    /// let registry = Registry::<CycleLimiter>::builder()
    ///     .configuration("x", one)
    ///     .configuration("x", two)
    ///     .build()?;
    /// assert_eq!(registry.configuration("x"), Some(two));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn configuration(mut self, name: impl Into<String>, config: L::Config) -> Self {
        self.configs.push((name.into(), Named::Whole(config)));
        self
    }

    /// Adds a named configuration: the defaults with the fields `overrides`
    /// sets taken from it. A later one of the same name wins.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper_resilience4j::CycleLimiter;
    /// use ratekeeper_resilience4j::ConfigBuilder;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<CycleLimiter>::builder()
    ///     .defaults(ConfigBuilder::new().timeout(Duration::ZERO))
    ///     .configuration_overrides("patient", ConfigBuilder::new().timeout(Duration::from_secs(1)))
    ///     .build()?;
    /// assert_eq!(registry.configuration("patient").unwrap().timeout(), Duration::from_secs(1));
    /// assert_eq!(registry.default_config().timeout(), Duration::ZERO);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn configuration_overrides(
        mut self,
        name: impl Into<String>,
        overrides: ConfigBuilder,
    ) -> Self {
        self.configs
            .push((name.into(), Named::Overrides(overrides)));
        self
    }

    /// Validates the defaults and every named configuration and builds the
    /// registry.
    ///
    /// ```
    /// use ratekeeper_resilience4j::CycleLimiter;
    /// use ratekeeper_resilience4j::{ConfigBuilder, PermitConfigError};
    /// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
    ///
    /// // The cycle limiter has no bucket: a capacity is refused, by name.
    /// let err = Registry::<CycleLimiter>::builder()
    ///     .configuration_overrides("bursty", ConfigBuilder::new().permit_capacity(10))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(
    ///     err,
    ///     RegistryError::InvalidConfiguration {
    ///         name: "bursty".to_owned(),
    ///         source: PermitConfigError::CapacityNotSupported.into(),
    ///     }
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// [`RegistryError::ReservedName`] if a named configuration is called
    /// `"default"`; [`RegistryError::InvalidConfiguration`] for the first
    /// configuration that does not validate (named `"default"` for the
    /// defaults).
    pub fn build(self) -> Result<Registry<L>, RegistryError> {
        let default_config =
            merge::<L>(&self.defaults, ConfigBuilder::new(), DEFAULT_CONFIGURATION)?;
        let mut configs = HashMap::with_capacity(self.configs.len());
        for (name, named) in self.configs {
            if name == DEFAULT_CONFIGURATION {
                return Err(RegistryError::ReservedName);
            }
            let config = match named {
                Named::Whole(c) => c,
                Named::Overrides(o) => merge::<L>(&self.defaults, o, &name)?,
            };
            configs.insert(name, config);
        }
        Ok(Registry::from_parts(
            self.defaults,
            default_config,
            self.clock,
            configs,
        ))
    }
}

impl<L: RegistryLimiter> fmt::Debug for RegistryBuilder<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.configs.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("RegistryBuilder")
            .field("defaults", &self.defaults)
            .field("configurations", &names)
            .finish_non_exhaustive()
    }
}

/// A registry of [`RefillLimiter`]s on the default clock.
///
/// ```
/// use ratekeeper_resilience4j::registry::RefillRegistry;
///
/// let registry = RefillRegistry::new();
/// assert_eq!(registry.limiter("api").config().capacity(), 50);
/// ```
pub type RefillRegistry = Registry<RefillLimiter<DefaultClock>>;

/// A registry of [`CycleLimiter`]s on the default clock.
///
/// ```
/// use ratekeeper_resilience4j::PermitLimiter;
/// use ratekeeper_resilience4j::registry::CycleRegistry;
///
/// let registry = CycleRegistry::new();
/// assert_eq!(registry.limiter("api").config_view().limit_for_period, 50);
/// ```
pub type CycleRegistry = Registry<CycleLimiter<DefaultClock>>;

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Barrier, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::{Metrics, PermitConfigError, PermitEventKind};
    use ratekeeper::ManualClock;

    type Refills = Registry<RefillLimiter<ManualClock>>;
    type Cycles = Registry<CycleLimiter<ManualClock>>;

    fn refills(clock: &ManualClock) -> Refills {
        Registry::builder_with_clock(clock.clone()).build().unwrap()
    }

    fn config(limit: i64) -> RefillConfig {
        crate::compat::ConfigBuilder::new()
            .limit_for_period(limit)
            .limit_refresh_period_nanos(1_000)
            .timeout_nanos(0)
            .build()
            .unwrap()
    }

    type Log = Arc<Mutex<Vec<(RegistryEventKind, String, u64)>>>;

    fn record<L: PermitLimiter + Send + Sync + 'static>(
        events: &EventPublisher<RegistryEvent<L>>,
    ) -> Log {
        let log: Log = Arc::default();
        let sink = log.clone();
        events.subscribe(move |e: &RegistryEvent<L>| {
            sink.lock()
                .unwrap()
                .push((e.kind(), e.name().to_owned(), e.sequence()))
        });
        log
    }

    #[test]
    fn registry_and_limiters_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<RefillRegistry>();
        check::<CycleRegistry>();
        check::<Refills>();
        check::<RegistryEvent<RefillLimiter>>();
    }

    #[test]
    fn own_defaults_match_an_empty_builder() {
        // The trait's contract for `Config: Default`.
        assert_eq!(
            <RefillLimiter as RegistryLimiter>::validate(&ConfigBuilder::new()),
            Ok(RefillConfig::default())
        );
        assert_eq!(
            <CycleLimiter as RegistryLimiter>::validate(&ConfigBuilder::new()),
            Ok(CycleConfig::default())
        );
        // And `to_builder` round-trips.
        let c = RefillConfig::builder()
            .limit_for_period(3)
            .permit_capacity(7)
            .initial_permits(2)
            .build()
            .unwrap();
        assert_eq!(
            <RefillLimiter as RegistryLimiter>::validate(
                &RefillLimiter::<DefaultClock>::to_builder(&c)
            ),
            Ok(c)
        );
    }

    #[test]
    fn same_name_same_limiter_other_name_other_limiter() {
        let clock = ManualClock::new(0);
        let r = refills(&clock);
        let a = r.limiter("a");
        assert!(Arc::ptr_eq(&a, &r.limiter("a")));
        assert!(Arc::ptr_eq(&a, &r.limiter_with_config("a", config(1))));
        assert!(Arc::ptr_eq(
            &a,
            &r.limiter_with("a", || unreachable!("a exists"))
        ));
        let b = r.limiter("b");
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(a.name(), "a");
        assert_eq!(b.name(), "b");
        // Get-or-create never replaces: "a" keeps the default configuration.
        assert_eq!(a.config(), RefillConfig::default());
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn limiters_read_the_registry_clock() {
        let clock = ManualClock::new(0);
        let r = refills(&clock);
        let l = r.limiter_with_config("a", config(10)); // 100 ns per permit
        assert!(l.acquire_permission(10).unwrap());
        assert!(!l.acquire_permission(1).unwrap());
        clock.advance_nanos(300);
        assert_eq!(l.metrics().available_permissions, 3);
        // A limiter created later starts full at the clock's reading then.
        let m = r.limiter_with_config("b", config(10));
        assert_eq!(m.metrics().available_permissions, 10);
    }

    #[test]
    fn missing_default_gives_the_limiters_own_defaults() {
        let r = Cycles::builder_with_clock(ManualClock::new(0))
            .build()
            .unwrap();
        assert_eq!(*r.default_config(), CycleConfig::default());
        assert_eq!(r.limiter("a").config().limit_for_period(), 50);
        let r = RefillRegistry::new();
        assert_eq!(r.limiter("a").config().limit_for_period(), 50);
        let r = CycleRegistry::default();
        assert_eq!(
            r.configuration(DEFAULT_CONFIGURATION),
            Some(CycleConfig::default())
        );
    }

    #[test]
    fn default_is_reserved() {
        let r = RefillRegistry::new();
        assert_eq!(
            r.add_configuration("default", config(1)),
            Err(RegistryError::ReservedName)
        );
        assert_eq!(
            r.add_configuration_overrides("default", ConfigBuilder::new()),
            Err(RegistryError::ReservedName)
        );
        assert_eq!(
            r.remove_configuration("default"),
            Err(RegistryError::ReservedName)
        );
        // Still the limiter's defaults.
        assert_eq!(r.configuration("default"), Some(RefillConfig::default()));
        assert!(r.configuration_names().is_empty());
        assert_eq!(
            RefillRegistry::builder()
                .configuration_overrides("default", ConfigBuilder::new())
                .build()
                .unwrap_err(),
            RegistryError::ReservedName
        );
        // "default" as a configuration name for a limiter is the default one.
        let l = r.limiter_from_configuration("a", "default").unwrap();
        assert_eq!(l.config(), RefillConfig::default());
    }

    #[test]
    fn unknown_configuration_name_is_an_error_and_creates_nothing() {
        let clock = ManualClock::new(0);
        let r = refills(&clock);
        let log = record(r.events());
        let err = r.limiter_from_configuration("a", "nope").unwrap_err();
        assert_eq!(err, RegistryError::ConfigurationNotFound("nope".into()));
        assert_eq!(err.to_string(), "no configuration named \"nope\"");
        assert!(r.find("a").is_none());
        assert!(log.lock().unwrap().is_empty());
        // Also when the limiter exists.
        r.limiter("a");
        assert!(r.limiter_from_configuration("a", "nope").is_err());
        // A configuration removed is unknown again.
        r.add_configuration("slow", config(1)).unwrap();
        assert_eq!(
            r.limiter_from_configuration("b", "slow").unwrap().config(),
            config(1)
        );
        assert_eq!(r.remove_configuration("slow"), Ok(Some(config(1))));
        assert!(matches!(
            r.limiter_from_configuration("c", "slow"),
            Err(RegistryError::ConfigurationNotFound(n)) if n == "slow"
        ));
        // The limiter built from it keeps it.
        assert_eq!(r.find("b").unwrap().config(), config(1));
    }

    #[test]
    fn overrides_merge_onto_partial_defaults() {
        let r = Refills::builder_with_clock(ManualClock::new(0))
            .defaults(
                ConfigBuilder::new()
                    .limit_refresh_period(Duration::from_secs(1))
                    .timeout(Duration::ZERO),
            )
            .configuration_overrides("hundred", ConfigBuilder::new().limit_for_period(100))
            .build()
            .unwrap();
        let d = r.default_config();
        assert_eq!((d.limit_for_period(), d.capacity()), (50, 50));
        assert_eq!(d.timeout(), Duration::ZERO);
        // The capacity was left unset in the defaults: it follows the limit.
        let h = r.configuration("hundred").unwrap();
        assert_eq!(
            (h.limit_for_period(), h.capacity(), h.initial_permits()),
            (100, 100, 100)
        );
        assert_eq!(h.nanos_per_permit(), 10_000_000);
        assert_eq!(h.timeout(), Duration::ZERO);

        // With whole defaults every field is set: raising the limit above the
        // default capacity is then refused, with the name and the cause.
        let whole = Refills::builder_with_clock(ManualClock::new(0))
            .default_config(RefillConfig::default())
            .build()
            .unwrap();
        let err = whole
            .add_configuration_overrides("hundred", ConfigBuilder::new().limit_for_period(100))
            .unwrap_err();
        assert_eq!(
            err,
            RegistryError::InvalidConfiguration {
                name: "hundred".into(),
                source: PermitConfigError::CapacityBelowLimit {
                    capacity: 50,
                    limit: 100
                }
                .into(),
            }
        );
        assert_eq!(err.to_string(), "configuration \"hundred\" is invalid");
        let source = std::error::Error::source(&err).map(|s| s.to_string());
        let cause = PermitConfigError::CapacityBelowLimit {
            capacity: 50,
            limit: 100,
        };
        assert_eq!(source, Some(cause.to_string()));
    }

    #[test]
    fn builder_reports_the_invalid_configuration_by_name() {
        let err = CycleRegistry::builder()
            .configuration_overrides("ok", ConfigBuilder::new().limit_for_period(1))
            .configuration_overrides("capped", ConfigBuilder::new().permit_capacity(5))
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            RegistryError::InvalidConfiguration {
                name: "capped".into(),
                source: PermitConfigError::CapacityNotSupported.into(),
            }
        );
        // A later configuration of the same name wins.
        let r = RefillRegistry::builder()
            .configuration("x", config(1))
            .configuration("x", config(2))
            .build()
            .unwrap();
        assert_eq!(r.configuration("x"), Some(config(2)));
    }

    #[test]
    fn events_for_added_removed_and_replaced() {
        let clock = ManualClock::new(0);
        let r = refills(&clock);
        let log = record(r.events());
        let a = r.limiter("a");
        r.limiter("a"); // exists: no event
        r.limiter_with_config("b", config(2));
        let replaced = r.replace("a", config(3)).unwrap();
        assert!(Arc::ptr_eq(&replaced, &a));
        assert!(r.replace("zzz", config(3)).is_none()); // absent: no event
        assert!(r.remove("b").is_some());
        assert!(r.remove("b").is_none()); // absent: no event
        use RegistryEventKind::*;
        assert_eq!(
            *log.lock().unwrap(),
            vec![
                (Added, "a".into(), 1),
                (Added, "b".into(), 2),
                (Replaced, "a".into(), 3),
                (Removed, "b".into(), 4),
            ]
        );
        assert_eq!(r.find("a").unwrap().config(), config(3));
        assert!(r.find("zzz").is_none());
    }

    #[test]
    fn filtered_subscriptions_see_their_kind_only() {
        let r = RefillRegistry::new();
        let added = Arc::new(AtomicUsize::new(0));
        let removed = Arc::new(AtomicUsize::new(0));
        let replaced = Arc::new(Mutex::new(Vec::new()));
        let (a, b, c) = (added.clone(), removed.clone(), replaced.clone());
        let id = r.events().on_added(move |_| {
            a.fetch_add(1, Ordering::Relaxed);
        });
        r.events().on_removed(move |_| {
            b.fetch_add(1, Ordering::Relaxed);
        });
        r.events().on_replaced(move |old, new| {
            c.lock().unwrap().push((
                old.config().limit_for_period(),
                new.config().limit_for_period(),
            ))
        });
        r.limiter("x");
        r.replace("x", config(9));
        r.remove("x");
        assert!(r.events().unsubscribe(id));
        r.limiter("y");
        assert_eq!(added.load(Ordering::Relaxed), 1);
        assert_eq!(removed.load(Ordering::Relaxed), 1);
        assert_eq!(*replaced.lock().unwrap(), [(50, 9)]);
    }

    #[test]
    fn subscribers_may_use_the_registry() {
        // Events are published with no lock held.
        let r = Arc::new(RefillRegistry::new());
        let weak = Arc::downgrade(&r);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        r.events().on_added(move |l| {
            if let Some(r) = weak.upgrade() {
                sink.lock()
                    .unwrap()
                    .push((r.len(), r.find(l.name()).is_some()));
                if l.name() == "a" {
                    r.limiter("b"); // nested creation from a subscriber
                }
            }
        });
        r.limiter("a");
        assert_eq!(*seen.lock().unwrap(), [(1, true), (2, true)]);
    }

    #[test]
    fn replaced_and_removed_limiters_stay_usable_by_their_holders() {
        let clock = ManualClock::new(0);
        let r = refills(&clock);
        let old = r.limiter_with_config("a", config(1));
        assert!(old.acquire_permission(1).unwrap());
        r.replace("a", config(1));
        let new = r.limiter("a");
        assert!(!Arc::ptr_eq(&old, &new));
        // The new one starts afresh, the old one keeps its state.
        assert!(new.acquire_permission(1).unwrap());
        assert!(!old.acquire_permission(1).unwrap());
        let removed = r.remove("a").unwrap();
        assert!(Arc::ptr_eq(&removed, &new));
        assert_eq!(removed.metrics().available_permissions, 0);
        assert!(r.is_empty());
    }

    #[test]
    fn snapshot_is_sorted_and_detached() {
        let r = RefillRegistry::new();
        for name in ["c", "a", "b"] {
            r.limiter(name);
        }
        let snapshot = r.limiters();
        r.remove("b");
        r.limiter("d");
        let names: Vec<&str> = snapshot.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let now: Vec<String> = r.limiters().iter().map(|l| l.name().to_owned()).collect();
        assert_eq!(now, ["a", "c", "d"]);
        let debug = format!("{r:?}");
        assert!(debug.contains("[\"a\", \"c\", \"d\"]"), "{debug}");
    }

    #[test]
    fn racing_get_or_create_creates_one_limiter_and_calls_the_supplier_once() {
        crate::test_util::within(|| {
            const THREADS: usize = 8;
            const ROUNDS: usize = 50;
            let clock = ManualClock::new(0);
            let r = refills(&clock);
            let log = record(r.events());
            let calls = AtomicUsize::new(0);
            for round in 0..ROUNDS {
                let name = format!("n{round}");
                let barrier = Barrier::new(THREADS);
                let got: Vec<Arc<RefillLimiter<ManualClock>>> = std::thread::scope(|s| {
                    let handles: Vec<_> = (0..THREADS)
                        .map(|i| {
                            let (r, name, barrier, calls) = (&r, &name, &barrier, &calls);
                            s.spawn(move || {
                                barrier.wait();
                                match i % 3 {
                                    0 => r.limiter_with(name, || {
                                        calls.fetch_add(1, Ordering::SeqCst);
                                        // Widen the race window.
                                        std::thread::yield_now();
                                        config(5)
                                    }),
                                    1 => r.limiter_with_config(name, config(6)),
                                    _ => r.limiter(name),
                                }
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                assert!(got.iter().all(|l| Arc::ptr_eq(l, &got[0])), "round {round}");
                assert!(Arc::ptr_eq(&got[0], &r.find(&name).unwrap()));
            }
            // One limiter and one event per name; the supplier ran exactly once
            // for each name one of its threads created (the only limiters with
            // limit 5), and never for the others.
            assert_eq!(r.len(), ROUNDS);
            let by_supplier = r
                .limiters()
                .iter()
                .filter(|l| l.config() == config(5))
                .count();
            assert_eq!(calls.load(Ordering::SeqCst), by_supplier);
            let log = log.lock().unwrap();
            assert_eq!(log.len(), ROUNDS);
            assert!(log.iter().all(|(k, _, _)| *k == RegistryEventKind::Added));
            let mut seqs: Vec<u64> = log.iter().map(|e| e.2).collect();
            seqs.sort_unstable();
            assert_eq!(seqs, (1..=ROUNDS as u64).collect::<Vec<_>>());
        });
    }

    #[test]
    fn racing_suppliers_for_one_name_run_once() {
        crate::test_util::within(|| {
            // Every thread offers a supplier: exactly one of them runs.
            const THREADS: usize = 8;
            let r = RefillRegistry::new();
            let calls = AtomicUsize::new(0);
            let barrier = Barrier::new(THREADS);
            std::thread::scope(|s| {
                for _ in 0..THREADS {
                    s.spawn(|| {
                        barrier.wait();
                        r.limiter_with("shared", || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(1));
                            RefillConfig::default()
                        })
                    });
                }
            });
            assert_eq!(calls.load(Ordering::SeqCst), 1);
            assert_eq!(r.len(), 1);
        });
    }

    #[test]
    fn racing_remove_and_create_keep_the_events_consistent() {
        crate::test_util::within(|| {
            // Adds and removes of one name from many threads: the sequence
            // numbers order the events into a valid history (alternating, starting
            // with an add), and the final state matches the last event.
            const THREADS: usize = 4;
            const OPS: usize = 200;
            let r = RefillRegistry::new();
            let log = record(r.events());
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let r = &r;
                    s.spawn(move || {
                        for i in 0..OPS {
                            if (i + t) % 2 == 0 {
                                r.limiter("x");
                            } else {
                                r.remove("x");
                            }
                        }
                    });
                }
            });
            let mut log = log.lock().unwrap().clone();
            log.sort_by_key(|e| e.2);
            for (i, (kind, _, seq)) in log.iter().enumerate() {
                assert_eq!(*seq, i as u64 + 1);
                let expected = if i % 2 == 0 {
                    RegistryEventKind::Added
                } else {
                    RegistryEventKind::Removed
                };
                assert_eq!(*kind, expected, "event {i}");
            }
            assert_eq!(r.find("x").is_some(), log.len() % 2 == 1);
        });
    }

    #[test]
    fn panicking_supplier_adds_nothing_and_leaves_the_registry_usable() {
        let r = RefillRegistry::new();
        let log = record(r.events());
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            r.limiter_with("a", || panic!("no configuration today"))
        }));
        assert!(result.is_err());
        assert!(r.find("a").is_none());
        assert!(log.lock().unwrap().is_empty());
        assert_eq!(r.limiter("a").name(), "a");
        assert_eq!(log.lock().unwrap().len(), 1);
    }

    #[test]
    fn cycle_registry_builds_cycle_limiters() {
        let clock = ManualClock::new(0);
        let r = Cycles::builder_with_clock(clock.clone())
            .defaults(
                ConfigBuilder::new()
                    .limit_for_period(2)
                    .limit_refresh_period_nanos(1_000)
                    .timeout_nanos(0),
            )
            .build()
            .unwrap();
        let l = r.limiter("jobs");
        assert!(l.acquire_permission(2).unwrap());
        assert!(!l.acquire_permission(1).unwrap());
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        l.events()
            .subscribe(move |e| sink.lock().unwrap().push(e.kind()));
        clock.advance_nanos(1_000);
        assert!(r.limiter("jobs").acquire_permission(1).unwrap());
        assert_eq!(
            *events.lock().unwrap(),
            [PermitEventKind::SuccessfulAcquire]
        );
        let m: Metrics = l.metrics();
        assert_eq!((m.available_permissions, m.cycle), (1, Some(1)));
    }
}
