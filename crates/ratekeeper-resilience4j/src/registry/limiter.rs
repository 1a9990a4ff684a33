//! What a registry holds: [`RegistryLimiter`], and its error.

use std::fmt;
use std::sync::Arc;

use ratekeeper::{Clock, ConfigError};

use crate::{ConfigBuilder, CycleConfig, CycleLimiter, PermitLimiter, RefillConfig, RefillLimiter};

/// The name of the default configuration: Resilience4j's `"default"`. It
/// cannot be added or removed by name; [`Registry::configuration`](super::Registry::configuration) returns
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

/// A limiter a [`Registry`](super::Registry) can build: a name and a configuration in, a
/// limiter out.
///
/// Implemented for [`RefillLimiter`] and [`CycleLimiter`] on any clock that
/// can be cloned (every limiter of a registry gets a clone of the registry's
/// clock; clones of a [`ManualClock`](ratekeeper::ManualClock) share their time).
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
        ConfigBuilder::from(config)
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
        ConfigBuilder::from(config)
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
