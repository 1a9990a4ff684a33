//! [`TokenPoolBuilder`], [`Filling`] and [`TokenPoolError`]: how a
//! [`TokenPool`] is configured.

//! [`TokenPool`]: the pools of [`Pools`] as a thread-safe rate limiter.

use std::fmt;
use std::time::Duration;

use super::limiter::TokenPool;
use super::pools::Pools;
use super::shared::Shared;
use crate::clock::{Clock, DefaultClock};
use crate::error::{ConfigError, ConfigErrorKind};
use crate::rate::Rate;
use crate::spec::{RateSpec, Verb, DEFAULT_BURST_RATIO};
use crate::wait::WaitPolicy;

/// The interval of [`Filling::Thread`] unless set: 1 ms, nosqlbench's design
/// value.
pub const DEFAULT_FILL_INTERVAL: Duration = Duration::from_millis(1);

/// The shortest fill interval a [`TokenPool`] accepts: 1 µs.
pub const MIN_FILL_INTERVAL: Duration = Duration::from_micros(1);

/// The longest fill interval a [`TokenPool`] accepts: 1 s.
pub const MAX_FILL_INTERVAL: Duration = Duration::from_secs(1);

/// Where a [`TokenPool`]'s tokens come from.
///
/// Whatever the source, tokens are elapsed time *measured* on the pool's
/// clock since the previous fill, never a fixed step, so the long-run rate is
/// exact however irregular the fills are (see
/// [The refill step](crate::pool#the-refill-step)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::pool::{Filling, TokenPool};
/// use ratekeeper::Rate;
///
/// let pool = TokenPool::builder(Rate::new(1000.0)?)
///     .filling(Filling::Thread(Duration::from_micros(100)))
///     .build()?;
/// assert_eq!(pool.filling(), Filling::Thread(Duration::from_micros(100)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Filling {
    /// Callers refill the pool themselves, from the time elapsed since the
    /// last fill, whenever it runs short; a caller that must wait while no one
    /// else is refilling sleeps until its tokens are due and refills then
    /// (nosqlbench's "callers act as fillers" remedy). No thread at all. The
    /// default: see [Choosing the filling](crate::pool#choosing-the-filling).
    #[default]
    Inline,
    /// A background thread refills the pool every interval, as nosqlbench's
    /// `TokenFiller` did ([`DEFAULT_FILL_INTERVAL`] is its 1 ms). The thread
    /// runs while the pool is started; stopping or dropping the pool stops and
    /// joins it at once. It sleeps in real time, so use it with a real clock.
    ///
    /// While the pool is idle (its active pool full and nobody waiting) the
    /// thread parks and costs no CPU: an idle pool costs one parked thread.
    /// The first take, or a caller that must wait, wakes it, and no token is
    /// lost meanwhile: see [Idle pools](crate::pool#idle-pools).
    Thread(Duration),
    /// Tokens come only from [`TokenPool::refill`]: for deterministic tests
    /// and for callers that drive the pool from their own loop.
    Manual,
}

impl Filling {
    /// [`Filling::Thread`] with the [`DEFAULT_FILL_INTERVAL`].
    pub const fn thread() -> Filling {
        Filling::Thread(DEFAULT_FILL_INTERVAL)
    }
}

impl fmt::Display for Filling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filling::Inline => f.write_str("inline"),
            Filling::Thread(i) => write!(f, "thread every {i:?}"),
            Filling::Manual => f.write_str("manual"),
        }
    }
}

/// What a [`TokenPool`] refuses beyond its rate and burst ratio: a fill
/// interval out of range (inside a [`ConfigError`] of kind
/// [`Filling`](ConfigErrorKind::Filling)) and a hand refill of a pool that
/// fills itself.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::pool::{Filling, TokenPool, TokenPoolError};
/// use ratekeeper::{ConfigErrorKind, Rate};
///
/// let err = TokenPool::builder(Rate::new(100.0)?).burst_ratio(0.9).build().unwrap_err();
/// assert_eq!(err.kind(), ConfigErrorKind::BurstRatio);
/// assert_eq!(err.to_string(), "burst ratio must be at least 1.0, got 0.9");
///
/// let slow = Filling::Thread(Duration::from_secs(2));
/// let err = TokenPool::builder(Rate::new(100.0)?).filling(slow).build().unwrap_err();
/// assert_eq!(err.downcast_ref(), Some(&TokenPoolError::FillInterval(Duration::from_secs(2))));
///
/// let pool = TokenPool::new(Rate::new(100.0)?)?; // inline filling
/// assert_eq!(pool.refill(1_000), Err(TokenPoolError::NotManual));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenPoolError {
    /// A [`Filling::Thread`] interval outside [`MIN_FILL_INTERVAL`] ..=
    /// [`MAX_FILL_INTERVAL`].
    #[error("fill interval must be between 1 µs and 1 s, got {0:?}")]
    FillInterval(Duration),
    /// [`TokenPool::refill`] on a pool that fills itself: the same time would
    /// be added twice.
    #[error("refill() needs Filling::Manual; this pool fills itself")]
    NotManual,
}

impl From<TokenPoolError> for ConfigError {
    fn from(e: TokenPoolError) -> Self {
        ConfigError::new(ConfigErrorKind::Filling, e)
    }
}

impl TokenPool {
    /// A builder for a pool at `rate` with burst ratio 1.1, verb `start` and
    /// [`Filling::Inline`].
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    /// use ratekeeper::Rate;
    ///
    /// let pool = TokenPool::builder(Rate::new(100.0)?).burst_ratio(2.0).build()?;
    /// assert_eq!(pool.burst_ratio(), 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(rate: Rate) -> TokenPoolBuilder {
        TokenPoolBuilder {
            rate,
            burst_ratio: DEFAULT_BURST_RATIO,
            verb: Verb::Start,
            filling: Filling::Inline,
            cached_clock: false,
            policy: WaitPolicy::default(),
        }
    }

    /// A builder from a spec: its rate, burst ratio and verb.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    ///
    /// let pool = TokenPool::from_spec(&"12000,1.1,configure".parse()?).build()?;
    /// assert_eq!(pool.rate().get(), 12000.0);
    /// assert!(!pool.is_started());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_spec(spec: &RateSpec) -> TokenPoolBuilder {
        TokenPool::builder(spec.rate())
            .burst_ratio(spec.burst_ratio())
            .verb(spec.verb())
    }

    /// A started pool at `rate`, burst ratio 1.1, filled inline.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] if the rate's op slice is not between 1 ns and
    /// 2^62 ns.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    /// use ratekeeper::{Rate, RateLimiter};
    ///
    /// let pool = TokenPool::new(Rate::new(1e6)?)?;
    /// let g = pool.acquire();
    /// assert!(g.ready_nanos() >= g.scheduled_nanos());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(rate: Rate) -> Result<TokenPool, ConfigError> {
        TokenPool::builder(rate).build()
    }
}

/// Configures a [`TokenPool`]. Setters take any value;
/// [`build`](Self::build) validates them.
///
/// # Examples
///
/// ```
/// use ratekeeper::pool::{Filling, TokenPool};
/// use ratekeeper::{Rate, Verb};
///
/// let pool = TokenPool::builder(Rate::new(5000.0)?)
///     .burst_ratio(1.5)          // catch up at up to 7500 ops/s
///     .verb(Verb::Configure)     // built idle: the first acquire starts it
///     .filling(Filling::Inline)
///     .build()?;
/// assert!(!pool.is_started());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TokenPoolBuilder {
    rate: Rate,
    burst_ratio: f64,
    verb: Verb,
    filling: Filling,
    cached_clock: bool,
    policy: WaitPolicy,
}

impl TokenPoolBuilder {
    /// The burst ratio, at least 1.0 (default 1.1): a backlog drains at
    /// `(burst − 1) × rate`, so ops catch up at `burst × rate`.
    pub fn burst_ratio(mut self, burst_ratio: f64) -> Self {
        self.burst_ratio = burst_ratio;
        self
    }

    /// The rate.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = rate;
        self
    }

    /// The verb the pool is built with: `start` and `restart` (the default is
    /// `start`) build it started; `configure` and `stop` build it idle, and its
    /// first acquire (or [`TokenPool::start`]) starts it.
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = verb;
        self
    }

    /// Where tokens come from (default [`Filling::Inline`]).
    pub fn filling(mut self, filling: Filling) -> Self {
        self.filling = filling;
        self
    }

    /// Whether an acquire that takes tokens at once may report the latest
    /// clock reading any caller or fill stored instead of reading the clock
    /// (default `false`, unlike the [`Pacer`](crate::Pacer)). It saves a clock
    /// read per op, but a pool's tokens always cover time that
    /// has passed, so *every* such op would use that reading, and after a
    /// caller stalls it can be arbitrarily old: the first ops after a 1 s
    /// stall would report a few ms of wait instead of 1 s. Enable it only
    /// where wait times do not matter.
    pub fn cached_clock(mut self, enabled: bool) -> Self {
        self.cached_clock = enabled;
        self
    }

    /// How callers wait (default: [`WaitPolicy::default`]). With
    /// [`Filling::Inline`], a waiting caller's fill covers at least the
    /// policy's fill granule, so ops due within it go together: 500 µs for
    /// the default policy on real clocks, 0 on clocks whose sleeps are exact
    /// (such as [`ManualClock`](crate::ManualClock)), a
    /// [coalescing](WaitPolicy::coalesce) policy's window; never more than
    /// half the active pool. A [precise](WaitPolicy::precise) policy acts as a window of 0:
    /// the pool never spins. Callers never go before their tokens exist.
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Builds the pool on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::BurstRatio`] for a burst ratio that is not a finite
    /// number of at least 1.0; [`ConfigErrorKind::Rate`] for a rate whose op
    /// slice is not between 1 ns and 2^62 ns;
    /// [`ConfigErrorKind::Filling`] ([`TokenPoolError::FillInterval`]) for a
    /// thread interval out of range.
    pub fn build(self) -> Result<TokenPool, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds the pool on `clock`.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_clock<C: Clock + 'static>(
        self,
        clock: C,
    ) -> Result<TokenPool<C>, ConfigError> {
        let pools = Pools::new(self.rate, self.burst_ratio)?;
        if let Filling::Thread(i) = self.filling {
            if !(MIN_FILL_INTERVAL..=MAX_FILL_INTERVAL).contains(&i) {
                return Err(TokenPoolError::FillInterval(i).into());
            }
        }
        let shared = Shared::new(
            self.rate,
            pools,
            self.filling,
            self.cached_clock,
            self.policy,
            clock,
        );
        let pool = TokenPool::from_shared(shared);
        if matches!(self.verb, Verb::Start | Verb::Restart) {
            pool.start();
        }
        Ok(pool)
    }
}
