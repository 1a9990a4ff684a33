//! [`Pools`]: the state and arithmetic of G2's token pool.

use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};
use crate::rate::{Rate, RateError};

/// The least a rate-sized active pool holds: 1 ms ([Sizing](crate::pool#sizing)).
pub const MIN_ACTIVE_NANOS: u64 = 1_000_000;

/// The least number of ops a rate-sized active pool holds: 2.
pub const MIN_CONCURRENT_OPS: u64 = 2;

/// The most tokens the pools hold together (`active + waiting`): 2^63 - 1
/// ns, a Java `long`'s range. A refill beyond it is cut to fit
/// ([Overflow](crate::pool#overflow)); also the largest pool size.
pub const MAX_POOL_NANOS: u64 = i64::MAX as u64;

/// The three pools of nosqlbench G2's token pool (active, burst and waiting),
/// in nanosecond tokens, with G2's exact arithmetic: a value type with no
/// clock and no waiting, explained in the [module docs](crate::pool).
///
/// Invariants: `active + waiting <= MAX_POOL_NANOS`, and after every refill
/// `active <= max_over_active` (only an [`apply`](Self::apply) that shrank
/// the pools can break it until the next refill).
///
/// nosqlbench's `testBackfillFullRate` at 10 million ops/s with burst 1.1:
///
/// ```
/// use ratekeeper::{Pools, Rate};
///
/// let mut pools = Pools::new(Rate::new(1e7)?, 1.1)?;
/// assert_eq!(pools.nanos_per_op(), 100);
/// assert_eq!(pools.max_active(), 1_000_000); // 1 ms: more than 2 ops
/// assert_eq!(pools.max_over_active(), 1_100_000);
///
/// assert_eq!(pools.refill(1_000_000), 1_000_000); // fills the active pool
/// assert_eq!(pools.waiting(), 0);
/// // 100 more overflow to waiting; 100/1e6 of the burst pool, 10, come back.
/// assert_eq!(pools.refill(100), 1_000_100);
/// assert_eq!(pools.waiting(), 90);
/// assert_eq!(pools.active(), 1_000_010);
///
/// assert_eq!(pools.take_up_to(100), 100);
/// assert_eq!(pools.try_take_op(), Some(pools.wait_time()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Pools {
    /// The rate the pools were sized for; `None` for [`Pools::with_pool_size`].
    rate: Option<Rate>,
    burst_ratio: f64,
    /// Java `long`s as in nosqlbench, never negative:
    /// `active + waiting <= i64::MAX`, so the refill step cannot overflow.
    nanos_per_op: i64,
    max_active: i64,
    max_over_active: i64,
    active: i64,
    waiting: i64,
}

/// Why pools could not be built or re-sized: the detail of a
/// [`ConfigError`].
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum PoolError {
    /// The rate's op slice is not a whole number of nanoseconds between 1 and
    /// 2^62 (see [`Rate::nanos_per_op`]).
    #[error(transparent)]
    Rate(#[from] RateError),
    /// The burst ratio is NaN or infinite.
    #[error("burst ratio must be finite, got {0}")]
    BurstNotFinite(f64),
    /// The burst ratio is below 1.0.
    #[error("burst ratio must be at least 1.0, got {0}")]
    BurstBelowOne(f64),
    /// A pool size of 0 or above [`MAX_POOL_NANOS`].
    #[error("pool size must be between 1 and 2^63 - 1 ns, got {0}")]
    PoolSize(u64),
}

impl From<PoolError> for ConfigError {
    fn from(e: PoolError) -> Self {
        let (kind, reason) = match e {
            PoolError::Rate(e) => return e.into(),
            PoolError::BurstNotFinite(_) => {
                (ConfigErrorKind::BurstRatio, ConfigReason::BurstNotFinite)
            }
            PoolError::BurstBelowOne(_) => {
                (ConfigErrorKind::BurstRatio, ConfigReason::BurstBelowOne)
            }
            PoolError::PoolSize(_) => (ConfigErrorKind::Rate, ConfigReason::PoolSize),
        };
        ConfigError::because(kind, reason, e)
    }
}

/// The sizes G2's `apply` computes.
struct Sizes {
    nanos_per_op: i64,
    max_active: i64,
    max_over_active: i64,
}

fn check_burst(burst_ratio: f64) -> Result<f64, PoolError> {
    if !burst_ratio.is_finite() {
        Err(PoolError::BurstNotFinite(burst_ratio))
    } else if burst_ratio < 1.0 {
        Err(PoolError::BurstBelowOne(burst_ratio))
    } else {
        Ok(burst_ratio)
    }
}

/// `(long)(max_active * burst_ratio)`, never below `max_active`: `as i64`
/// truncates and saturates as Java's cast does; only a pool size above 2^53
/// can round below `max_active`.
fn max_over_active(max_active: i64, burst_ratio: f64) -> i64 {
    ((max_active as f64 * burst_ratio) as i64).max(max_active)
}

fn sizes_for_rate(rate: Rate, burst_ratio: f64) -> Result<Sizes, PoolError> {
    let burst_ratio = check_burst(burst_ratio)?;
    // 1 ..= 2^62: fits an i64.
    let nanos_per_op = rate.slice()? as i64;
    // (long)(nanosPerOp * 2.0): at most 2^63, which the cast saturates.
    let max_active =
        ((nanos_per_op as f64 * MIN_CONCURRENT_OPS as f64) as i64).max(MIN_ACTIVE_NANOS as i64);
    Ok(Sizes {
        nanos_per_op,
        max_active,
        max_over_active: max_over_active(max_active, burst_ratio),
    })
}

impl Pools {
    /// Empty pools sized for `rate` and `burst_ratio`
    /// ([Sizing](crate::pool#sizing)). G2's filler pre-fills one op at start;
    /// do that with `refill(nanos_per_op)` where wanted.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] for the reason
    /// [`BurstNotFinite`](ConfigReason::BurstNotFinite) or
    /// [`BurstBelowOne`](ConfigReason::BurstBelowOne) for a burst ratio that
    /// is not finite and at least 1.0, or a rate reason for an op slice
    /// outside 1 ns ..= 2^62 ns.
    pub fn new(rate: Rate, burst_ratio: f64) -> Result<Pools, ConfigError> {
        let sizes = sizes_for_rate(rate, burst_ratio)?;
        Ok(Pools {
            rate: Some(rate),
            burst_ratio,
            nanos_per_op: sizes.nanos_per_op,
            max_active: sizes.max_active,
            max_over_active: sizes.max_over_active,
            active: 0,
            waiting: 0,
        })
    }

    /// Empty pools of an explicit size, as engineblock's
    /// `TokenPool(poolSize, burstRatio)`: `max_active = pool_size`, and no
    /// rate, so [`try_take_op`](Self::try_take_op) takes nothing. For tests
    /// of the arithmetic.
    ///
    /// # Errors
    ///
    /// The reason [`PoolSize`](ConfigReason::PoolSize) for 0 or above
    /// [`MAX_POOL_NANOS`]; the burst ratio errors of [`Pools::new`].
    pub fn with_pool_size(pool_size: u64, burst_ratio: f64) -> Result<Pools, ConfigError> {
        let burst_ratio = check_burst(burst_ratio)?;
        if pool_size == 0 || pool_size > MAX_POOL_NANOS {
            return Err(PoolError::PoolSize(pool_size).into());
        }
        let max_active = pool_size as i64;
        Ok(Pools {
            rate: None,
            burst_ratio,
            nanos_per_op: 0,
            max_active,
            max_over_active: max_over_active(max_active, burst_ratio),
            active: 0,
            waiting: 0,
        })
    }

    /// Re-sizes the pools, keeping their content (G2's `apply`). An active
    /// pool over the new `max_over_active` may be taken from until the next
    /// [`refill`](Self::refill) moves the excess back to the waiting pool.
    ///
    /// # Errors
    ///
    /// As [`Pools::new`]; on an error nothing changes.
    pub fn apply(&mut self, rate: Rate, burst_ratio: f64) -> Result<(), ConfigError> {
        let sizes = sizes_for_rate(rate, burst_ratio)?;
        self.rate = Some(rate);
        self.burst_ratio = burst_ratio;
        self.nanos_per_op = sizes.nanos_per_op;
        self.max_active = sizes.max_active;
        self.max_over_active = sizes.max_over_active;
        Ok(())
    }

    /// Adds `nanos` tokens, the time since the last refill, and returns
    /// `active + waiting`: [The refill step](crate::pool#the-refill-step).
    /// Only what fits under [`MAX_POOL_NANOS`] is added.
    pub fn refill(&mut self, nanos: u64) -> u64 {
        self.refill_step(nanos, nanos);
        self.wait_time()
    }

    /// The refill step when waiting takers are owed `demand` tokens: the
    /// first `min(nanos, demand)` are theirs and never enter the pools; G2's
    /// step applies to the rest, its burst fill for all of `nanos`. Returns
    /// the tokens served directly; `demand == 0` is [`refill`](Pools::refill).
    /// See [Serving waiting callers first](crate::pool#serving-waiting-callers-first).
    pub(crate) fn refill_serving(&mut self, nanos: u64, demand: u64) -> u64 {
        let direct = nanos.min(demand);
        self.refill_step(nanos - direct, nanos);
        direct
    }

    /// G2's refill step: `nanos` tokens into the pools, a burst fill for
    /// `covered` ns of elapsed time (`covered >= nanos`).
    fn refill_step(&mut self, nanos: u64, covered: u64) {
        // The invariant active + waiting <= i64::MAX makes every step below
        // exact in i64; the saturating ops only guard it.
        let room = i64::MAX.saturating_sub(self.active.saturating_add(self.waiting));
        let new = nanos.min(room as u64) as i64;

        let needed = (self.max_active - self.active).max(0);
        let to_active = new.min(needed);
        self.active += to_active;
        self.waiting += new - to_active;

        // Normalising for jitter: the burst fill is proportional to the time
        // this refill covers. max_active >= 1, so the ratio is never NaN.
        // The time covered: the tokens that fit plus those served directly.
        let covered = (new as u64).saturating_add(covered.saturating_sub(nanos));
        let factor = (covered as f64 / self.max_active as f64).min(1.0);
        let burst_pool = self.max_over_active - self.max_active;
        // Negative when a shrinking apply left active above max_over_active:
        // the fill then moves the excess back to waiting.
        let allowed = (self.max_over_active - self.active).min((factor * burst_pool as f64) as i64);
        let fill = allowed.min(self.waiting);
        self.waiting -= fill;
        self.active += fill;
    }

    /// Takes up to `amount` tokens from the active pool without waiting and
    /// returns how many it took: `min(amount, active)`.
    pub fn take_up_to(&mut self, amount: u64) -> u64 {
        let taken = amount.min(self.active as u64);
        self.active -= taken as i64;
        taken
    }

    /// Takes exactly `nanos` tokens if the active pool holds them and
    /// returns `active + waiting` (G2's `blockAndTake` delay); else `None`,
    /// changing nothing.
    pub fn try_take(&mut self, nanos: u64) -> Option<u64> {
        if nanos > self.active as u64 {
            return None;
        }
        self.active -= nanos as i64;
        Some(self.wait_time())
    }

    /// [`try_take`](Self::try_take) of one op's tokens.
    pub fn try_take_op(&mut self) -> Option<u64> {
        self.try_take(self.nanos_per_op())
    }

    /// Whether [`try_take_op`](Self::try_take_op) would succeed.
    pub fn can_take_op(&self) -> bool {
        self.active >= self.nanos_per_op
    }

    /// Empties both pools and returns what they held, `active + waiting`
    /// (G2's `restart`). The sizes are kept.
    pub fn restart(&mut self) -> u64 {
        let held = self.wait_time();
        self.active = 0;
        self.waiting = 0;
        held
    }

    /// Sets the active pool (kept in the limiter's atomics) to `active`,
    /// cut to stay within [`MAX_POOL_NANOS`].
    pub(crate) fn set_active(&mut self, active: u64) {
        let room = (i64::MAX - self.waiting) as u64;
        self.active = active.min(room) as i64;
    }

    /// Adds `nanos` to the waiting pool (a withdrawn claim's surplus), cut
    /// to stay within [`MAX_POOL_NANOS`].
    pub(crate) fn add_waiting(&mut self, nanos: u64) {
        let room = (i64::MAX - self.active - self.waiting) as u64;
        self.waiting += nanos.min(room) as i64;
    }

    /// Tokens the active pool holds now, available to takers.
    pub fn active(&self) -> u64 {
        self.active as u64
    }

    /// Tokens the waiting pool holds now: the backlog.
    pub fn waiting(&self) -> u64 {
        self.waiting as u64
    }

    /// The content of the pools, `active + waiting`: G2's `getWaitTime`.
    pub fn wait_time(&self) -> u64 {
        // Both non-negative with a sum of at most i64::MAX.
        (self.active + self.waiting) as u64
    }

    /// The active pool's normal capacity: `max(1 ms, 2 ops)` for a rate, or
    /// the pool size given to [`with_pool_size`](Self::with_pool_size).
    pub fn max_active(&self) -> u64 {
        self.max_active as u64
    }

    /// The most the active pool holds with its burst pool:
    /// `floor(max_active * burst_ratio)`.
    pub fn max_over_active(&self) -> u64 {
        self.max_over_active as u64
    }

    /// `max_over_active - max_active`: 0 for a burst ratio of 1.0.
    pub fn burst_pool(&self) -> u64 {
        (self.max_over_active - self.max_active) as u64
    }

    /// One op's tokens, `floor(1e9 / rate)`; 0 for pools made with
    /// [`with_pool_size`](Self::with_pool_size).
    pub fn nanos_per_op(&self) -> u64 {
        self.nanos_per_op as u64
    }

    /// The rate the pools are sized for; `None` for pools made with
    /// [`with_pool_size`](Self::with_pool_size) and not re-sized since.
    pub fn rate(&self) -> Option<Rate> {
        self.rate
    }

    /// The burst ratio the pools are sized for.
    pub fn burst_ratio(&self) -> f64 {
        self.burst_ratio
    }
}

#[cfg(test)]
mod tests;
