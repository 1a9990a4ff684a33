//! A limiter described as data: [`LimiterConfig`] names one of the crate's
//! limiters with its parameters, how the threads that share it reach it and
//! how they wait, and builds it on any clock.
//!
//! ```
//! use ratekeeper::config::LimiterConfig;
//! use ratekeeper::{ManualClock, RateLimiter};
//!
//! let config: LimiterConfig = "pacer:1000,1.0".parse()?; // 1000/s, strict
//! let pacer = config.build_with_clock(ManualClock::new(0))?;
//! pacer.reserve(1, None)?;
//! assert_eq!(pacer.reserve(1, None)?.ready_nanos(), 1_000_000);
//! assert_eq!(config.to_string(), "pacer:1000,1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Building
//!
//! [`build_with_clock`](LimiterConfig::build_with_clock) returns an
//! [`AnyLimiter`], which is a [`RateLimiter`](crate::RateLimiter) and can be matched for the
//! concrete limiter. [`visit_with_clock`](LimiterConfig::visit_with_clock)
//! builds `n` limiters and hands them to a [`LimiterVisitor`] as a slice of
//! one concrete type, so that a loop over them is compiled for that limiter
//! and keeps its inlining.
//!
//! The repository's `docs/config.md` has the grammar of every kind in full
//! and every default.

use std::time::Duration;

use crate::bucket::{ConfigBuilder, CycleConfig, RefillConfig};
use crate::error::ConfigError;
use crate::pacer::Strictness;
use crate::pool::Filling;
use crate::rate::Rate;
use crate::spec::BurstRatio;
use crate::wait::WaitPolicy;

mod any;
mod build;
mod error;
mod grammar;
mod kind;
#[cfg(all(test, not(loom)))]
mod tests;
mod visit;

pub use any::{AnyLimiter, LimiterRef};
pub(crate) use error::LimiterConfigError;
pub use kind::{Field, LimiterKind};
pub use visit::{LimiterVisitor, SharedLimiter};

/// The refresh period of a Resilience4j limiter configured by its rate
/// (`refill:RATE`, `pace --limiter refill --rate RATE`) when none is given:
/// 1 s, so that the limit for period is the rate.
///
/// ```
/// use ratekeeper::config::{KindConfig, LimiterConfig, DEFAULT_REFRESH_PERIOD};
///
/// let config: LimiterConfig = "cycle:20".parse()?;
/// let KindConfig::Cycle(cycle) = config.kind() else { unreachable!() };
/// assert_eq!(cycle.limit_refresh_period(), DEFAULT_REFRESH_PERIOD);
/// assert_eq!(cycle.limit_for_period(), 20);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_REFRESH_PERIOD: Duration = Duration::from_secs(1);

/// A limiter's kind with its own parameters.
///
/// The rate, a pacer's strictness and a pool's burst ratio are validated
/// types, and Resilience4j's limiters hold their validated configurations:
/// none of them is checked again. What those types do not say (that a
/// nanosecond schedule keeps the rate, a pool's sizes, the Guava limiters'
/// burst seconds and cold factor) is checked when a [`LimiterConfig`] is
/// parsed, [validated](LimiterConfig::validate) or built.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::config::{KindConfig, LimiterConfig};
/// use ratekeeper::Rate;
///
/// let kind = KindConfig::WarmingUp {
///     rate: Rate::new(10.0)?,
///     warmup: Duration::from_secs(2),
///     cold_factor: 3.0,
/// };
/// assert_eq!(LimiterConfig::new(kind).to_string(), "warmup:10,2s,3");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum KindConfig {
    /// A [`Pacer`](crate::Pacer).
    Pacer {
        /// Its rate.
        rate: Rate,
        /// Its strictness.
        strictness: Strictness,
    },
    /// A [`TokenPool`](crate::TokenPool).
    Pool {
        /// Its rate.
        rate: Rate,
        /// Its burst ratio.
        burst_ratio: BurstRatio,
        /// Where its tokens come from.
        filling: Filling,
    },
    /// A [`SmoothBursty`](crate::SmoothBursty), at
    /// [`Resolution::for_rate`](crate::smooth::Resolution::for_rate).
    Bursty {
        /// Its rate.
        rate: Rate,
        /// Seconds of permits it stores while idle.
        max_burst_seconds: f64,
    },
    /// A [`SmoothWarmingUp`](crate::SmoothWarmingUp), at
    /// [`Resolution::for_rate`](crate::smooth::Resolution::for_rate).
    WarmingUp {
        /// Its stable rate.
        rate: Rate,
        /// Its warm-up period.
        warmup: Duration,
        /// How much slower than the rate it is when cold.
        cold_factor: f64,
    },
    /// A [`RefillLimiter`](crate::RefillLimiter).
    Refill(RefillConfig),
    /// A [`CycleLimiter`](crate::CycleLimiter).
    Cycle(CycleConfig),
}

impl KindConfig {
    /// Which limiter it is.
    ///
    /// ```
    /// use ratekeeper::config::{KindConfig, LimiterKind};
    /// use ratekeeper::bucket::CycleConfig;
    ///
    /// assert_eq!(KindConfig::Cycle(CycleConfig::default()).limiter_kind(), LimiterKind::Cycle);
    /// ```
    pub const fn limiter_kind(&self) -> LimiterKind {
        match self {
            KindConfig::Pacer { .. } => LimiterKind::Pacer,
            KindConfig::Pool { .. } => LimiterKind::Pool,
            KindConfig::Bursty { .. } => LimiterKind::Bursty,
            KindConfig::WarmingUp { .. } => LimiterKind::WarmingUp,
            KindConfig::Refill(_) => LimiterKind::Refill,
            KindConfig::Cycle(_) => LimiterKind::Cycle,
        }
    }

    /// The rate it limits to, in permits per second: the rate given, or for
    /// Resilience4j's limiters `limit_for_period / limit_refresh_period`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::config::KindConfig;
    /// use ratekeeper::bucket::RefillConfig;
    ///
    /// let refill = RefillConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_millis(100))
    ///     .build()?;
    /// assert_eq!(KindConfig::Refill(refill).rate(), 100.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rate(&self) -> f64 {
        let per_period =
            |limit: i64, period: Duration| limit as f64 * 1e9 / period.as_nanos() as f64;
        match *self {
            KindConfig::Pacer { rate, .. }
            | KindConfig::Pool { rate, .. }
            | KindConfig::Bursty { rate, .. }
            | KindConfig::WarmingUp { rate, .. } => rate.get(),
            KindConfig::Refill(c) => per_period(c.limit_for_period(), c.limit_refresh_period()),
            KindConfig::Cycle(c) => per_period(c.limit_for_period(), c.limit_refresh_period()),
        }
    }

    /// How long a request may wait before it is refused: the timeout of
    /// Resilience4j's limiters; `None` (no bound) for the others.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::config::LimiterConfig;
    ///
    /// let config: LimiterConfig = "refill:10,timeout=50ms".parse()?;
    /// assert_eq!(config.kind().max_wait(), Some(Duration::from_millis(50)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_wait(&self) -> Option<Duration> {
        match self {
            KindConfig::Refill(c) => Some(c.timeout()),
            KindConfig::Cycle(c) => Some(c.timeout()),
            _ => None,
        }
    }
}

/// How the threads that share a limiter reach it.
///
/// ```
/// use ratekeeper::config::{Access, LimiterConfig};
///
/// let config: LimiterConfig = "pacer:10M,0,shards=4".parse()?;
/// assert_eq!(config.access(), Access::Sharded(4));
/// assert_eq!(Access::default(), Access::Exact);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Access {
    /// Every request goes to the shared limiter.
    #[default]
    Exact,
    /// Each thread takes permits through a batching handle of its own: a
    /// [`PacerHandle`](crate::PacerHandle) on a pacer, a
    /// [`BatchHandle`](crate::BatchHandle) on the others.
    Batched,
    /// The pacer is split into this many shards with work stealing
    /// ([`ShardedPacer`](crate::ShardedPacer)); each thread takes permits
    /// through a [`ShardHandle`](crate::ShardHandle) of its own.
    Sharded(usize),
}

/// A limiter described as data: its kind and parameters, how threads reach
/// it ([`Access`]) and how they wait ([`WaitPolicy`]). See the [module
/// docs](self) for its string form.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::config::{Access, KindConfig, LimiterConfig};
/// use ratekeeper::pacer::Strictness;
/// use ratekeeper::{Rate, WaitPolicy};
///
/// let strictness = Strictness::new(0.0)?;
/// let config = LimiterConfig::new(KindConfig::Pacer { rate: Rate::new(1e6)?, strictness })
///     .with_access(Access::Batched)
///     .with_wait_policy(WaitPolicy::precise(Duration::from_micros(150)));
/// assert_eq!(config.to_string(), "pacer:1000000,0,batch=true,wait=precise:150us");
/// assert_eq!(config.to_string().parse::<LimiterConfig>()?, config);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(into = "String", try_from = "String")
)]
pub struct LimiterConfig {
    kind: KindConfig,
    access: Access,
    wait: WaitPolicy,
}

impl LimiterConfig {
    /// `kind`, each thread going to the limiter itself, with the default
    /// wait policy. Nothing is checked until it is
    /// [validated](Self::validate) or built.
    ///
    /// ```
    /// use ratekeeper::config::{Access, KindConfig, LimiterConfig};
    /// use ratekeeper::pacer::Strictness;
    /// use ratekeeper::Rate;
    ///
    /// let strict = Strictness::new(1.0)?;
    /// let config = LimiterConfig::new(KindConfig::Pacer { rate: Rate::new(5.0)?, strictness: strict });
    /// assert_eq!(config.access(), Access::Exact);
    /// assert!(config.wait_policy().is_default());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(kind: KindConfig) -> LimiterConfig {
        LimiterConfig {
            kind,
            access: Access::Exact,
            wait: WaitPolicy::default(),
        }
    }

    /// The same with another kind and parameters.
    ///
    /// ```
    /// use ratekeeper::config::{KindConfig, LimiterConfig};
    /// use ratekeeper::pool::Filling;
    ///
    /// let config: LimiterConfig = "pool:100,1.5,batch=true".parse()?;
    /// let KindConfig::Pool { rate, burst_ratio, .. } = config.kind() else { unreachable!() };
    /// let manual = config.with_kind(KindConfig::Pool { rate, burst_ratio, filling: Filling::Manual });
    /// assert_eq!(manual.to_string(), "pool:100,1.5,manual,batch=true");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn with_kind(self, kind: KindConfig) -> LimiterConfig {
        LimiterConfig { kind, ..self }
    }

    /// The same with another [`Access`].
    ///
    /// ```
    /// use ratekeeper::config::{Access, LimiterConfig};
    ///
    /// let config: LimiterConfig = "bursty:100".parse()?;
    /// assert_eq!(config.with_access(Access::Batched).to_string(), "bursty:100,1,batch=true");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn with_access(self, access: Access) -> LimiterConfig {
        LimiterConfig { access, ..self }
    }

    /// The same with another wait policy for blocking waits.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::config::LimiterConfig;
    /// use ratekeeper::WaitPolicy;
    ///
    /// let config: LimiterConfig = "pacer:100".parse()?;
    /// let exact = config.with_wait_policy(WaitPolicy::coalesce(Duration::ZERO));
    /// assert_eq!(exact.to_string(), "pacer:100,1.1,wait=coalesce:0s");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn with_wait_policy(self, wait: WaitPolicy) -> LimiterConfig {
        LimiterConfig { wait, ..self }
    }

    /// The kind and its parameters.
    ///
    /// ```
    /// use ratekeeper::config::{LimiterConfig, LimiterKind};
    ///
    /// let config: LimiterConfig = "warmup:10,2s".parse()?;
    /// assert_eq!(config.kind().limiter_kind(), LimiterKind::WarmingUp);
    /// assert_eq!(config.kind().rate(), 10.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn kind(&self) -> KindConfig {
        self.kind
    }

    /// How the threads that share the limiter reach it.
    ///
    /// ```
    /// use ratekeeper::config::{Access, LimiterConfig};
    ///
    /// assert_eq!("pool:10,batch=true".parse::<LimiterConfig>()?.access(), Access::Batched);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn access(&self) -> Access {
        self.access
    }

    /// How blocking waits wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::config::LimiterConfig;
    /// use ratekeeper::WaitPolicy;
    ///
    /// let config: LimiterConfig = "pacer:10,wait=precise:100us".parse()?;
    /// assert_eq!(config.wait_policy(), WaitPolicy::precise(Duration::from_micros(100)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn wait_policy(&self) -> WaitPolicy {
        self.wait
    }

    /// Checks everything [`build_with_clock`](Self::build_with_clock) would,
    /// on the values alone: no limiter is built and no thread started. It
    /// checks what the parameters' types do not guarantee: that a nanosecond
    /// schedule keeps the rate (for a sharded pacer, each shard's share of
    /// it), that shards are for a pacer and number 1 to
    /// [`MAX_SHARDS`](crate::pacer::MAX_SHARDS), a pool's sizes and fill
    /// interval, and the Guava limiters' burst seconds and cold factor.
    /// O(1).
    ///
    /// # Errors
    ///
    /// The builder's [`ConfigError`], or one of kind
    /// [`Syntax`](crate::ConfigErrorKind::Syntax) for shards of another kind.
    ///
    /// ```
    /// use ratekeeper::config::{KindConfig, LimiterConfig};
    /// use ratekeeper::{ConfigErrorKind, Rate};
    ///
    /// let bursty = KindConfig::Bursty { rate: Rate::new(10.0)?, max_burst_seconds: -1.0 };
    /// let err = LimiterConfig::new(bursty).validate().unwrap_err();
    /// assert_eq!(err.kind(), ConfigErrorKind::MaxBurst);
    /// assert_eq!(err.to_string(), "max burst seconds must be finite and at least 0, got -1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        build::validate(self)
    }
}

impl From<BurstRatio> for Strictness {
    /// A rate spec's burst ratio as a Pacer's strictness, as `pace --rate
    /// 10k,1.5` and [`Pacer::from_spec`](crate::Pacer::from_spec) take it:
    /// the burst-ratio mode, or strict at 1.0. O(1).
    ///
    /// ```
    /// use ratekeeper::pacer::{Strictness, StrictnessMode};
    /// use ratekeeper::BurstRatio;
    ///
    /// assert_eq!(Strictness::from(BurstRatio::ONE).mode(), StrictnessMode::Strict);
    /// assert_eq!(Strictness::from(BurstRatio::DEFAULT).get(), 1.1);
    /// ```
    fn from(burst: BurstRatio) -> Strictness {
        // A burst ratio, finite and at least 1.0, is always a strictness.
        Strictness::new(burst.get()).unwrap_or(Strictness::DEFAULT)
    }
}

impl From<KindConfig> for LimiterConfig {
    /// [`LimiterConfig::new`].
    fn from(kind: KindConfig) -> LimiterConfig {
        LimiterConfig::new(kind)
    }
}

/// A configuration builder for Resilience4j's limiters at `rate`:
/// `rate × period` permits per `period`, which must be a whole number of
/// permits, at least 1 (within one part in 10^9, so that `0.1 × 10s` is 1).
///
/// # Errors
///
/// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate), detail
/// [`PermitConfigError::NotWholePermits`](crate::bucket::PermitConfigError::NotWholePermits),
/// with a round period (1 ms to 1000 s) that would hold a whole number, if
/// there is one.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::config::resilience4j_builder;
/// use ratekeeper::bucket::PermitConfigError;
/// use ratekeeper::Rate;
///
/// let builder = resilience4j_builder(Rate::new(1000.0)?, Duration::from_millis(100))?;
/// assert_eq!(builder.get_limit_for_period(), 100);
/// let err = resilience4j_builder(Rate::new(0.5)?, Duration::from_secs(1)).unwrap_err();
/// assert!(matches!(
///     err.downcast_ref(),
///     Some(PermitConfigError::NotWholePermits { suggestion: Some(p), .. }) if *p == Duration::from_secs(10)
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resilience4j_builder(rate: Rate, period: Duration) -> Result<ConfigBuilder, ConfigError> {
    let limit = crate::bucket::limit_for_rate(rate, period)?;
    Ok(ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period(period))
}
