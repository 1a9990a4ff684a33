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
//! [`AnyLimiter`], a [`RateLimiter`](crate::RateLimiter) that can be matched
//! for the concrete limiter. [`visit_with_clock`](LimiterConfig::visit_with_clock)
//! hands `n` limiters to a [`LimiterVisitor`] as a slice of one concrete
//! type, so a loop over them keeps its inlining. The repository's
//! `docs/config.md` has the full grammar and every default.

use std::time::Duration;

use crate::bucket::{CycleConfig, RefillConfig};
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

/// The examples of docs/config.md, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/config.md")]
struct ConfigDocDoctests;

pub use any::{AnyLimiter, LimiterRef};
pub(crate) use error::LimiterConfigError;
pub use kind::{Field, LimiterKind};
pub use visit::{LimiterVisitor, SharedLimiter};

/// The refresh period of a Resilience4j limiter configured by its rate
/// (`refill:RATE`) when none is given: 1 s, so the limit for period is the
/// rate.
pub const DEFAULT_REFRESH_PERIOD: Duration = Duration::from_secs(1);

/// A limiter's kind with its own parameters.
///
/// The rate, strictness, burst ratio and Resilience4j configurations are
/// validated types, never checked again; the rest is checked when a
/// [`LimiterConfig`] is parsed, [validated](LimiterConfig::validate) or built.
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
    pub fn max_wait(&self) -> Option<Duration> {
        match self {
            KindConfig::Refill(c) => Some(c.timeout()),
            KindConfig::Cycle(c) => Some(c.timeout()),
            _ => None,
        }
    }
}

/// How the threads that share a limiter reach it (`batch=true`,
/// `shards=N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Access {
    /// Every request goes to the shared limiter.
    #[default]
    Exact,
    /// Each thread takes permits through a batching handle of its own
    /// ([`PacerHandle`](crate::PacerHandle), else [`BatchHandle`](crate::BatchHandle)).
    Batched,
    /// The pacer is split into this many shards with work stealing
    /// ([`ShardedPacer`](crate::ShardedPacer)), one [`ShardHandle`](crate::ShardHandle) per thread.
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
    /// `kind` with [`Access::Exact`] and the default wait policy. Nothing
    /// is checked until it is [validated](Self::validate) or built.
    pub fn new(kind: KindConfig) -> LimiterConfig {
        LimiterConfig {
            kind,
            access: Access::Exact,
            wait: WaitPolicy::default(),
        }
    }

    /// The same with another kind and parameters.
    pub const fn with_kind(self, kind: KindConfig) -> LimiterConfig {
        LimiterConfig { kind, ..self }
    }

    /// The same with another [`Access`].
    pub const fn with_access(self, access: Access) -> LimiterConfig {
        LimiterConfig { access, ..self }
    }

    /// The same with another wait policy for blocking waits.
    pub const fn with_wait_policy(self, wait: WaitPolicy) -> LimiterConfig {
        LimiterConfig { wait, ..self }
    }

    /// The kind and its parameters.
    pub const fn kind(&self) -> KindConfig {
        self.kind
    }

    /// How the threads that share the limiter reach it.
    pub const fn access(&self) -> Access {
        self.access
    }

    /// How blocking waits wait.
    pub const fn wait_policy(&self) -> WaitPolicy {
        self.wait
    }

    /// Checks everything [`build_with_clock`](Self::build_with_clock) would,
    /// on the values alone (no limiter built, no thread started): that a
    /// nanosecond schedule keeps the rate (per shard when sharded), shards
    /// (pacer only, 1 to [`MAX_SHARDS`](crate::pacer::MAX_SHARDS)), a pool's
    /// sizes and fill interval, the Guava burst seconds and cold factor. O(1).
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
    /// A rate spec's burst ratio as a Pacer's strictness (as
    /// [`Pacer::from_spec`](crate::Pacer::from_spec) takes it): strict at
    /// 1.0. O(1).
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
