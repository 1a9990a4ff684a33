//! [`Registry`]: the named limiters and configurations.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ratekeeper::DefaultClock;

use super::{
    RegistryBuilder, RegistryError, RegistryEvent, RegistryLimiter, DEFAULT_CONFIGURATION,
};
use crate::{ConfigBuilder, CycleLimiter, EventPublisher, RefillLimiter};

/// The limiters, and the count of changes made to them.
struct Entries<L> {
    map: HashMap<Arc<str>, Arc<L>>,
    /// Changes made so far: the last event's sequence number.
    sequence: u64,
}

/// Named limiters of type `L`, built from a default configuration and named
/// ones: Resilience4j's `RateLimiterRegistry`. See the [module
/// docs](super).
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
    /// [`RefillConfig`](crate::RefillConfig), its capacity and initial permits too); use
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
    /// [`ManualClock`](ratekeeper::ManualClock) in tests.
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

    pub(super) fn from_parts(
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
    /// use ratekeeper::ConfigReason;
    /// use ratekeeper_resilience4j::ConfigBuilder;
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
    /// let RegistryError::InvalidConfiguration { name, source } = err else {
    ///     panic!("not an invalid configuration");
    /// };
    /// assert_eq!((name.as_str(), source.reason()), ("bad", ConfigReason::InvalidLimitForPeriod));
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
    /// [`PermitLimiter::change_limit_for_period`](crate::PermitLimiter::change_limit_for_period) and
    /// [`PermitLimiter::change_timeout`](crate::PermitLimiter::change_timeout) instead.
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
pub(super) fn merge<L: RegistryLimiter>(
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
