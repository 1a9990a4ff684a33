//! [`TokenPoolBuilder`]: how a [`TokenPool`] is configured and built.

//! [`TokenPool`]: the pools of [`Pools`] as a thread-safe rate limiter.

use super::filling::{Filling, TokenPoolError, MAX_FILL_INTERVAL, MIN_FILL_INTERVAL};
use super::limiter::TokenPool;
use super::pools::Pools;
use super::shared::Shared;
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::rate::Rate;
use crate::spec::{RateSpec, Verb, DEFAULT_BURST_RATIO};
use crate::wait::WaitPolicy;

impl TokenPool {
    /// A builder for a pool at `rate` with burst ratio 1.1, verb `start` and
    /// [`Filling::Inline`].
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
    pub fn from_spec(spec: &RateSpec) -> TokenPoolBuilder {
        TokenPool::builder(spec.rate())
            .burst_ratio(spec.burst_ratio())
            .verb(spec.verb())
    }

    /// A started pool at `rate`, burst ratio 1.1, filled inline.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) if the rate's op slice is not between 1 ns and
    /// 2^62 ns.
    pub fn new(rate: Rate) -> Result<TokenPool, ConfigError> {
        TokenPool::builder(rate).build()
    }
}

/// Configures a [`TokenPool`]. Setters take any value;
/// [`build`](Self::build) validates them.
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
    /// [`ConfigErrorKind::BurstRatio`](crate::ConfigErrorKind::BurstRatio) for a burst ratio that is not a finite
    /// number of at least 1.0; [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) for a rate whose op
    /// slice is not between 1 ns and 2^62 ns;
    /// [`ConfigErrorKind::Filling`](crate::ConfigErrorKind::Filling) ([`FillInterval`](crate::ConfigReason::FillInterval)) for a
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
