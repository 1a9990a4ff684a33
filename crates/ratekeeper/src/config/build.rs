//! Building what a [`LimiterConfig`] describes: one limiter as an
//! [`AnyLimiter`], or `n` of one concrete type for a [`LimiterVisitor`].

use std::time::Duration;

use super::visit::{Batched, Exact, Member};
use super::{
    Access, AnyLimiter, KindConfig, LimiterConfig, LimiterConfigError, LimiterKind, LimiterVisitor,
};
use crate::bucket::{CycleConfig, CycleLimiter, RefillConfig, RefillLimiter};
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::pacer::{Pacer, PacerBuilder, ShardError, ShardedPacer, Strictness, MAX_SHARDS};
use crate::pool::{
    Filling, Pools, TokenPool, TokenPoolError, MAX_FILL_INTERVAL, MIN_FILL_INTERVAL,
};
use crate::rate::Rate;
use crate::smooth::{Resolution, SmoothBursty, SmoothError, SmoothWarmingUp};
use crate::spec::BurstRatio;
use crate::wait::WaitPolicy;

impl LimiterConfig {
    /// Builds the limiter on `clock`, started (its time starts now). O(1),
    /// O(shards) for a sharded pacer; a pool with [`Filling::Thread`] starts
    /// its filler thread.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate).
    ///
    /// ```
    /// use ratekeeper::config::{AnyLimiter, LimiterConfig};
    /// use ratekeeper::{ManualClock, RateLimiter};
    ///
    /// let config: LimiterConfig = "refill:10,timeout=0s".parse()?;
    /// let limiter = config.build_with_clock(ManualClock::new(0))?;
    /// assert!(matches!(limiter, AnyLimiter::Refill(_)));
    /// for _ in 0..10 {
    ///     limiter.try_acquire()?; // a full bucket of 10
    /// }
    /// assert!(limiter.try_acquire().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build_with_clock<C: Clock + Clone + 'static>(
        &self,
        clock: C,
    ) -> Result<AnyLimiter<C>, ConfigError> {
        check_access(self)?;
        let b = Builder::new(self, clock);
        Ok(match self.kind {
            KindConfig::Pacer { rate, strictness } => {
                let pacer = b.pacer_builder(rate, strictness);
                match self.access {
                    Access::Sharded(n) => AnyLimiter::ShardedPacer(b.sharded(pacer, n)?),
                    _ => AnyLimiter::Pacer(b.pacer(pacer)?),
                }
            }
            KindConfig::Pool {
                rate,
                burst_ratio,
                filling,
            } => AnyLimiter::Pool(b.pool(rate, burst_ratio, filling)?),
            KindConfig::Bursty {
                rate,
                max_burst_seconds,
            } => AnyLimiter::Bursty(b.bursty(rate, max_burst_seconds)?),
            KindConfig::WarmingUp {
                rate,
                warmup,
                cold_factor,
            } => AnyLimiter::WarmingUp(b.warming_up(rate, warmup, cold_factor)?),
            KindConfig::Refill(c) => AnyLimiter::Refill(b.refill(c)),
            KindConfig::Cycle(c) => AnyLimiter::Cycle(b.cycle(c)),
        })
    }

    /// [`build_with_clock`](Self::build_with_clock) on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate).
    pub fn build(&self) -> Result<AnyLimiter, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds `n` limiters on clones of `clock` (each started) and hands
    /// them to `visitor` as a slice of one concrete type, reached as the
    /// configuration's [`Access`] says. O(n) builds. The visitor's loop is
    /// compiled per limiter type and keeps its inlining, where a loop over
    /// [`AnyLimiter`] would match on every call.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate), before the visitor is called.
    ///
    /// # Examples
    ///
    /// One limiter per thread, as a rate spec's `thread` scope asks:
    ///
    /// ```
    /// use ratekeeper::config::{LimiterConfig, LimiterVisitor, SharedLimiter};
    /// use ratekeeper::{ManualClock, RateLimiter};
    ///
    /// struct Each;
    /// impl LimiterVisitor for Each {
    ///     type Output = Vec<u64>;
    ///     fn visit<S: SharedLimiter>(self, limiters: &[S]) -> Vec<u64> {
    ///         limiters.iter().map(|l| l.worker().acquire().scheduled_nanos()).collect()
    ///     }
    /// }
    ///
    /// let config: LimiterConfig = "pacer:10".parse()?;
    /// assert_eq!(config.visit_with_clock(ManualClock::new(0), 3, Each)?, [0, 0, 0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn visit_with_clock<C, V>(
        &self,
        clock: C,
        n: usize,
        visitor: V,
    ) -> Result<V::Output, ConfigError>
    where
        C: Clock + Clone + 'static,
        V: LimiterVisitor,
    {
        check_access(self)?;
        let b = Builder::new(self, clock);
        let access = self.access;
        Ok(match self.kind {
            KindConfig::Pacer { rate, strictness } => {
                let pacer = b.pacer_builder(rate, strictness);
                match access {
                    Access::Sharded(shards) => {
                        visitor.visit(&many(n, || b.sharded(pacer, shards))?)
                    }
                    _ => visit(access, n, || b.pacer(pacer), visitor)?,
                }
            }
            KindConfig::Pool {
                rate,
                burst_ratio,
                filling,
            } => visit(access, n, || b.pool(rate, burst_ratio, filling), visitor)?,
            KindConfig::Bursty {
                rate,
                max_burst_seconds,
            } => visit(access, n, || b.bursty(rate, max_burst_seconds), visitor)?,
            KindConfig::WarmingUp {
                rate,
                warmup,
                cold_factor,
            } => visit(
                access,
                n,
                || b.warming_up(rate, warmup, cold_factor),
                visitor,
            )?,
            KindConfig::Refill(c) => visit(access, n, || Ok(b.refill(c)), visitor)?,
            KindConfig::Cycle(c) => visit(access, n, || Ok(b.cycle(c)), visitor)?,
        })
    }

    /// [`visit_with_clock`](Self::visit_with_clock) on the [`DefaultClock`].
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate).
    pub fn visit<V: LimiterVisitor>(&self, n: usize, visitor: V) -> Result<V::Output, ConfigError> {
        self.visit_with_clock(DefaultClock::new(), n, visitor)
    }
}

/// [`LimiterConfig::validate`]: the checks the parameters' types leave
/// open, in the builders' order and with their errors.
pub(super) fn validate(config: &LimiterConfig) -> Result<(), ConfigError> {
    check_access(config)?;
    match config.kind {
        KindConfig::Pacer { rate, .. } => match config.access {
            Access::Sharded(n) => check_shards(rate, n),
            _ => rate.nanos_per_op().map(drop),
        },
        KindConfig::Pool {
            rate,
            burst_ratio,
            filling,
        } => {
            Pools::new(rate, burst_ratio.get())?;
            match filling {
                Filling::Thread(i) if !(MIN_FILL_INTERVAL..=MAX_FILL_INTERVAL).contains(&i) => {
                    Err(TokenPoolError::FillInterval(i).into())
                }
                _ => Ok(()),
            }
        }
        // SmoothBursty's and SmoothWarmingUp's own rules; a `Rate` is a rate
        // they take, and any warm-up duration is.
        KindConfig::Bursty {
            max_burst_seconds: b,
            ..
        } if !(b.is_finite() && b >= 0.0) => Err(SmoothError::MaxBurstSeconds(b).into()),
        KindConfig::WarmingUp { cold_factor: c, .. } if !c.is_finite() || c < 1.0 => {
            Err(SmoothError::ColdFactor(c).into())
        }
        KindConfig::Bursty { .. } | KindConfig::WarmingUp { .. } => Ok(()),
        // Validated when they were built.
        KindConfig::Refill(_) | KindConfig::Cycle(_) => Ok(()),
    }
}

/// A sharded pacer's checks: 1 to [`MAX_SHARDS`] shards, a total rate one
/// pacer keeps, and a share of it (`rate / shards`) a shard keeps.
fn check_shards(rate: Rate, shards: usize) -> Result<(), ConfigError> {
    if shards == 0 || shards > MAX_SHARDS {
        let max = MAX_SHARDS;
        return Err(ShardError::Shards {
            requested: shards,
            max,
        }
        .into());
    }
    rate.nanos_per_op()?;
    Rate::new(rate.get() / shards as f64)?.nanos_per_op()?;
    Ok(())
}

/// Shards only for a pacer.
fn check_access(config: &LimiterConfig) -> Result<(), ConfigError> {
    match (config.access, config.kind.limiter_kind()) {
        (Access::Sharded(_), LimiterKind::Pacer) | (Access::Exact | Access::Batched, _) => Ok(()),
        (Access::Sharded(_), kind) => Err(LimiterConfigError::ShardsNeedPacer { kind }.into()),
    }
}

/// `n` limiters from `build`.
fn many<L>(n: usize, build: impl Fn() -> Result<L, ConfigError>) -> Result<Vec<L>, ConfigError> {
    (0..n).map(|_| build()).collect()
}

/// `n` limiters from `build`, reached as `access` says, visited.
fn visit<L: Member, V: LimiterVisitor>(
    access: Access,
    n: usize,
    build: impl Fn() -> Result<L, ConfigError>,
    visitor: V,
) -> Result<V::Output, ConfigError> {
    Ok(match access {
        Access::Batched => visitor.visit(&many(n, || build().map(Batched))?),
        _ => visitor.visit(&many(n, || build().map(Exact))?),
    })
}

/// The clock and wait policy every limiter of a configuration is built
/// with; one method per kind, taking the kind's parameters.
struct Builder<C> {
    clock: C,
    wait: WaitPolicy,
}

impl<C: Clock + Clone + 'static> Builder<C> {
    fn new(config: &LimiterConfig, clock: C) -> Builder<C> {
        Builder {
            clock,
            wait: config.wait,
        }
    }

    fn pacer_builder(&self, rate: Rate, strictness: Strictness) -> PacerBuilder {
        Pacer::builder(rate)
            .strictness(strictness.get())
            .wait_policy(self.wait)
    }

    fn pacer(&self, b: PacerBuilder) -> Result<Pacer<C>, ConfigError> {
        b.build_with_clock(self.clock.clone())
    }

    fn sharded(&self, b: PacerBuilder, shards: usize) -> Result<ShardedPacer<C>, ConfigError> {
        b.build_sharded_with_clock(shards, self.clock.clone())
    }

    fn pool(
        &self,
        rate: Rate,
        burst: BurstRatio,
        filling: Filling,
    ) -> Result<TokenPool<C>, ConfigError> {
        TokenPool::builder(rate)
            .burst_ratio(burst.get())
            .filling(filling)
            .wait_policy(self.wait)
            .build_with_clock(self.clock.clone())
    }

    fn bursty(&self, rate: Rate, max_burst_seconds: f64) -> Result<SmoothBursty<C>, ConfigError> {
        SmoothBursty::builder(rate.get())
            .max_burst_seconds(max_burst_seconds)
            .resolution(Resolution::for_rate(rate.get()))
            .wait_policy(self.wait)
            .build_with_clock(self.clock.clone())
    }

    fn warming_up(
        &self,
        rate: Rate,
        warmup: Duration,
        cold_factor: f64,
    ) -> Result<SmoothWarmingUp<C>, ConfigError> {
        SmoothWarmingUp::builder(rate.get())
            .warmup(warmup)
            .cold_factor(cold_factor)
            .resolution(Resolution::for_rate(rate.get()))
            .wait_policy(self.wait)
            .build_with_clock(self.clock.clone())
    }

    fn refill(&self, config: RefillConfig) -> RefillLimiter<C> {
        RefillLimiter::new_with_clock(config, self.clock.clone()).with_wait_policy(self.wait)
    }

    fn cycle(&self, config: CycleConfig) -> CycleLimiter<C> {
        CycleLimiter::new_with_clock(config, self.clock.clone()).with_wait_policy(self.wait)
    }
}
