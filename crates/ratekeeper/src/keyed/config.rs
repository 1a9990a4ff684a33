//! [`KeyedBuilder`]: the cap, the shards and the overflow policy, checked
//! when the keyed limiter is built.

use std::hash::{BuildHasher, Hash};

use super::{KeyHasher, Keyed, Map, Rules};
use crate::clock::{Clock, DefaultClock};
use crate::config::{AnyLimiter, LimiterConfig};
use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};
use crate::pacer::decision::PacerRule;

/// The largest cap on live keys a keyed limiter takes: 2^32.
pub const MAX_KEYS: usize = 1 << 32;

/// The most shards a keyed limiter takes.
pub const MAX_SHARDS: usize = 4096;

/// The most shards a default count takes: 64.
pub const DEFAULT_SHARDS_MAX: usize = 64;

/// The shard count when none is given: four per CPU, rounded up to a power
/// of two, at most [`DEFAULT_SHARDS_MAX`] (see `docs/keyed.md`).
pub fn default_shards() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    cpus.saturating_mul(4)
        .checked_next_power_of_two()
        .unwrap_or(DEFAULT_SHARDS_MAX)
        .min(DEFAULT_SHARDS_MAX)
}

/// What a full keyed limiter does with a new key when every key holds debt.
/// Each choice is counted in [`KeyedMetrics`](super::KeyedMetrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Overflow {
    /// Refuse the new key with [`KeyedError::Full`](super::KeyedError::Full). The default.
    #[default]
    DenyNew,
    /// Untracked keys share one limiter of the same configuration.
    Shared,
    /// Drop the key with the least debt (as of the latest sweep), forgiving
    /// it ([`evicted_debt`](super::KeyedMetrics::evicted_debt)).
    EvictLeastDebt,
}

/// Detail (and message) of a refused keyed [`ConfigError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KeyedConfigError {
    /// A cap of zero keys.
    #[error("the cap on live keys must be at least 1")]
    ZeroCap,
    /// A cap above [`MAX_KEYS`].
    #[error("the cap on live keys must be at most {MAX_KEYS}, got {0}")]
    CapTooLarge(usize),
    /// Zero shards, more than [`MAX_SHARDS`], or more than the cap.
    #[error("shards must be between 1 and the smaller of {MAX_SHARDS} and the cap ({cap}), got {shards}")]
    Shards {
        /// The shards asked for.
        shards: usize,
        /// The cap on live keys.
        cap: usize,
    },
    /// A token pool or sharded pacer, not kept per key.
    #[error("a keyed limiter cannot keep a token pool or a sharded pacer per key")]
    Unsupported,
}

/// Settings of a [`Keyed`] limiter: key cap, shards, [`Overflow`] policy.
///
/// # Examples
///
/// ```
/// use ratekeeper::keyed::{Keyed, Overflow};
/// use ratekeeper::{ConfigErrorKind, ManualClock};
///
/// let config = "pacer:10,1.0".parse()?;
/// let keyed: Keyed<u64, _> = Keyed::builder()
///     .max_keys(1000)
///     .overflow(Overflow::Shared)
///     .build_with_clock(&config, ManualClock::new(0))?;
/// assert!(keyed.try_acquire(&7).is_ok());
///
/// let err = Keyed::builder().max_keys(0).build::<u64>(&config).unwrap_err();
/// assert_eq!(err.kind(), ConfigErrorKind::MaxKeys);
/// let err = Keyed::builder().build::<u64>(&"pool:10".parse()?).unwrap_err();
/// assert_eq!(err.kind(), ConfigErrorKind::Unsupported);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyedBuilder {
    max_keys: usize,
    shards: Option<usize>,
    overflow: Overflow,
}

/// The cap on live keys when none is given: 100 000.
pub const DEFAULT_MAX_KEYS: usize = 100_000;

impl Default for KeyedBuilder {
    fn default() -> Self {
        KeyedBuilder {
            max_keys: DEFAULT_MAX_KEYS,
            shards: None,
            overflow: Overflow::DenyNew,
        }
    }
}

impl KeyedBuilder {
    /// The hard cap on live keys (default [`DEFAULT_MAX_KEYS`]).
    pub fn max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys;
        self
    }

    /// The number of shards (default: [`default_shards`], at most the cap).
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// What a full map does with a new key (default [`Overflow::DenyNew`]).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// Builds a keyed limiter of `config` on the default clock.
    ///
    /// # Errors
    ///
    /// As [`build_with_hasher`](Self::build_with_hasher).
    pub fn build<K: Hash + Eq + Clone>(
        self,
        config: &LimiterConfig,
    ) -> Result<Keyed<K>, ConfigError> {
        self.build_with_clock(config, DefaultClock::new())
    }

    /// Builds a keyed limiter of `config` on `clock`.
    ///
    /// # Errors
    ///
    /// As [`build_with_hasher`](Self::build_with_hasher).
    pub fn build_with_clock<K: Hash + Eq + Clone, C: Clock + Clone + Send + Sync + 'static>(
        self,
        config: &LimiterConfig,
        clock: C,
    ) -> Result<Keyed<K, C>, ConfigError> {
        self.build_with_hasher(config, clock, KeyHasher::default())
    }

    /// Builds a keyed limiter of `config` on `clock`, hashing keys with
    /// `hasher` (default [`KeyHasher`]).
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::MaxKeys`] for a cap of 0 or above [`MAX_KEYS`];
    /// [`ConfigErrorKind::Shards`] for 0 shards, above [`MAX_SHARDS`] or the
    /// cap; `config`'s own errors; [`ConfigErrorKind::Unsupported`] for a
    /// token pool or a sharded pacer.
    pub fn build_with_hasher<K, C, S>(
        self,
        config: &LimiterConfig,
        clock: C,
        hasher: S,
    ) -> Result<Keyed<K, C, S>, ConfigError>
    where
        K: Hash + Eq + Clone,
        C: Clock + Clone + Send + Sync + 'static,
        S: BuildHasher,
    {
        let settings = self.check()?;
        let map = match config.build_with_clock(clock.clone())? {
            AnyLimiter::Pacer(p) => match p.keyed_rule() {
                PacerRule::Accumulator(r) => Rules::Accumulator(Map::new(r, &settings, hasher)),
                PacerRule::Spacing(r) => Rules::Spacing(Map::new(r, &settings, hasher)),
                PacerRule::Dual(r) => Rules::Dual(Map::new(r, &settings, hasher)),
            },
            AnyLimiter::Refill(r) => Rules::Bucket(Map::new(r.keyed_rule(), &settings, hasher)),
            AnyLimiter::Bursty(b) => Rules::Smooth(Map::new(b.keyed_rule(), &settings, hasher)),
            AnyLimiter::WarmingUp(w) => Rules::Smooth(Map::new(w.keyed_rule(), &settings, hasher)),
            AnyLimiter::Cycle(c) => Rules::Cycles(Map::new(c.keyed_rule(), &settings, hasher)),
            _ => {
                return Err(refused(
                    ConfigErrorKind::Unsupported,
                    KeyedConfigError::Unsupported,
                ))
            }
        };
        Ok(Keyed { map, clock })
    }

    /// The settings, once the cap and the shard count are checked.
    fn check(&self) -> Result<Settings, ConfigError> {
        let cap = self.max_keys;
        check_max_keys(cap)?;
        let shards = self.shards.unwrap_or_else(|| default_shards().min(cap));
        if shards == 0 || shards > MAX_SHARDS || shards > cap {
            let detail = KeyedConfigError::Shards { shards, cap };
            return Err(refused(ConfigErrorKind::Shards, detail));
        }
        Ok(Settings {
            max_keys: cap,
            shards,
            overflow: self.overflow,
        })
    }
}

/// Checks a cap on live keys, as the builder does; for other stores (Redis).
///
/// # Errors
///
/// [`ConfigErrorKind::MaxKeys`] for a cap of 0 or above [`MAX_KEYS`].
pub fn check_max_keys(cap: usize) -> Result<(), ConfigError> {
    if cap == 0 {
        return Err(refused(ConfigErrorKind::MaxKeys, KeyedConfigError::ZeroCap));
    }
    if cap > MAX_KEYS {
        let detail = KeyedConfigError::CapTooLarge(cap);
        return Err(refused(ConfigErrorKind::MaxKeys, detail));
    }
    Ok(())
}

fn refused(kind: ConfigErrorKind, detail: KeyedConfigError) -> ConfigError {
    let reason = match detail {
        KeyedConfigError::ZeroCap => ConfigReason::MaxKeysZero,
        KeyedConfigError::CapTooLarge(_) => ConfigReason::MaxKeysTooLarge,
        KeyedConfigError::Shards { .. } => ConfigReason::Shards,
        KeyedConfigError::Unsupported => ConfigReason::Unsupported,
    };
    ConfigError::because(kind, reason, detail)
}

/// Checked settings.
pub(super) struct Settings {
    pub(super) max_keys: usize,
    pub(super) shards: usize,
    pub(super) overflow: Overflow,
}
