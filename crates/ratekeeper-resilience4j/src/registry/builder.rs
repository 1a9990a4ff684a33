//! [`RegistryBuilder`]: a registry's default and named configurations.

use std::collections::HashMap;
use std::fmt;

use super::table::merge;
use super::{Registry, RegistryError, RegistryLimiter, DEFAULT_CONFIGURATION};
use crate::ConfigBuilder;

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
/// use ratekeeper::ConfigReason;
/// use ratekeeper_resilience4j::{ConfigBuilder, RefillConfig};
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
/// let RegistryError::InvalidConfiguration { name, source } = err else {
///     panic!("not an invalid configuration");
/// };
/// assert_eq!((name.as_str(), source.reason()), ("default", ConfigReason::NegativeTimeout));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RegistryBuilder<L: RegistryLimiter> {
    clock: L::Clock,
    defaults: ConfigBuilder,
    configs: Vec<(String, Named<L::Config>)>,
}

impl<L: RegistryLimiter> RegistryBuilder<L> {
    pub(super) fn new(clock: L::Clock) -> RegistryBuilder<L> {
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
    /// use ratekeeper::ConfigReason;
    /// use ratekeeper_resilience4j::ConfigBuilder;
    /// use ratekeeper_resilience4j::registry::{Registry, RegistryError};
    ///
    /// // The cycle limiter has no bucket: a capacity is refused, by name.
    /// let err = Registry::<CycleLimiter>::builder()
    ///     .configuration_overrides("bursty", ConfigBuilder::new().permit_capacity(10))
    ///     .build()
    ///     .unwrap_err();
    /// let RegistryError::InvalidConfiguration { name, source } = err else {
    ///     panic!("not an invalid configuration");
    /// };
    /// assert_eq!((name.as_str(), source.reason()), ("bursty", ConfigReason::CapacityNotSupported));
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
