//! [`KeyedBuilder`]: the cap, the shards and the overflow policy, checked
//! when the keyed limiter is built.

use std::hash::{BuildHasher, Hash, RandomState};

use super::{Keyed, KeyedError};
use crate::clock::{Clock, DefaultClock};
use crate::config::{AnyLimiter, LimiterConfig};
use crate::error::{ConfigError, ConfigErrorKind};
use crate::limiter::{RateLimiter, Recovery};

/// The largest cap on live keys a keyed limiter takes: 2^32. A cap is a
/// memory bound; one above this is a mistake, not a bound.
pub const MAX_KEYS: usize = 1 << 32;

/// The most shards a keyed limiter takes.
pub const MAX_SHARDS: usize = 4096;

/// The shard count when none is given: 64, or the cap if smaller.
pub const DEFAULT_SHARDS: usize = 64;

/// What a keyed limiter does with a new key when its map is full and no
/// key can be dropped for free (every one of them holds debt).
///
/// Never "admit untracked", and never a silent fresh limiter: each choice
/// is visible in [`KeyedMetrics`](super::KeyedMetrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Overflow {
    /// Refuse the new key with [`KeyedError::Full`] (fail closed). Keys
    /// already tracked keep their limits. The default.
    #[default]
    DenyNew,
    /// Every key that cannot be tracked shares one limiter of the same
    /// configuration (so unknown keys together get one key's limit).
    Shared,
    /// Drop the key closest to recovering (the least debt, as of the
    /// shard's latest sweep) and track the new one: the dropped key's debt
    /// is forgiven, counted in
    /// [`evicted_debt`](super::KeyedMetrics::evicted_debt).
    EvictLeastDebt,
}

/// Why a keyed limiter's settings were refused (inside a [`ConfigError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyedConfigError {
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
    /// The limiter cannot say when its state equals a fresh one's
    /// ([`Recovery::Unknown`]), so no key could ever be dropped exactly.
    #[error("a keyed limiter needs a limiter that can tell when it is fresh again (a pacer or a refill bucket)")]
    Unsupported,
}

/// Settings of a [`Keyed`] limiter: the cap on live keys, the shard count
/// and the [`Overflow`] policy; built over a [`LimiterConfig`] or any
/// limiter factory.
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
/// let err = Keyed::builder().build::<u64>(&"bursty:10".parse()?).unwrap_err();
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
    /// The hard cap on live keys (default [`DEFAULT_MAX_KEYS`]); each shard
    /// holds its share of it.
    pub fn max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys;
        self
    }

    /// The number of shards (default: [`DEFAULT_SHARDS`], or the cap if
    /// smaller).
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// What a full map does with a new key (default [`Overflow::DenyNew`]).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// Builds one limiter of `config` per key on the default clock.
    ///
    /// # Errors
    ///
    /// As [`build_with`](Self::build_with).
    pub fn build<K: Hash + Eq + Clone>(
        self,
        config: &LimiterConfig,
    ) -> Result<Keyed<K, AnyLimiter>, ConfigError> {
        self.build_with_clock(config, DefaultClock::new())
    }

    /// Builds one limiter of `config` per key on `clock`.
    ///
    /// # Errors
    ///
    /// As [`build_with`](Self::build_with), and `config`'s own errors.
    pub fn build_with_clock<K: Hash + Eq + Clone, C: Clock + Clone + Send + Sync + 'static>(
        self,
        config: &LimiterConfig,
        clock: C,
    ) -> Result<Keyed<K, AnyLimiter<C>>, ConfigError> {
        let config = *config;
        self.build_with(move || config.build_with_clock(clock.clone()))
    }

    /// Builds a keyed limiter whose keys each get a limiter from `make`
    /// (called once here, to check it, and once per new key).
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::MaxKeys`] for a cap of 0 or above [`MAX_KEYS`],
    /// [`ConfigErrorKind::Shards`] for a shard count of 0, above
    /// [`MAX_SHARDS`] or above the cap, `make`'s own error, and
    /// [`ConfigErrorKind::Unsupported`] for a limiter that does not say
    /// when it is fresh ([`RateLimiter::recovery`]).
    pub fn build_with<K, L, F>(self, make: F) -> Result<Keyed<K, L>, ConfigError>
    where
        K: Hash + Eq + Clone,
        L: RateLimiter,
        F: Fn() -> Result<L, ConfigError> + Send + Sync + 'static,
    {
        self.build_with_hasher(make, RandomState::new())
    }

    /// As [`build_with`](Self::build_with), hashing keys with `hasher`
    /// (the default, [`RandomState`], resists hash flooding).
    ///
    /// # Errors
    ///
    /// As [`build_with`](Self::build_with).
    pub fn build_with_hasher<K, L, F, S>(
        self,
        make: F,
        hasher: S,
    ) -> Result<Keyed<K, L, S>, ConfigError>
    where
        K: Hash + Eq + Clone,
        L: RateLimiter,
        F: Fn() -> Result<L, ConfigError> + Send + Sync + 'static,
        S: BuildHasher,
    {
        let shards = self.check()?;
        let spare = make()?;
        // A fresh limiter on a running clock may already hold credit (a
        // pacer started at build is behind schedule a moment later).
        if spare.recovery() == Recovery::Unknown {
            return Err(refused(
                ConfigErrorKind::Unsupported,
                KeyedConfigError::Unsupported,
            ));
        }
        Ok(Keyed::new(
            self.max_keys,
            shards,
            self.overflow,
            Box::new(make),
            spare,
            hasher,
        ))
    }

    /// The shard count, once the cap and the count are checked.
    fn check(&self) -> Result<usize, ConfigError> {
        let cap = self.max_keys;
        if cap == 0 {
            return Err(refused(ConfigErrorKind::MaxKeys, KeyedConfigError::ZeroCap));
        }
        if cap > MAX_KEYS {
            return Err(refused(
                ConfigErrorKind::MaxKeys,
                KeyedConfigError::CapTooLarge(cap),
            ));
        }
        let shards = self.shards.unwrap_or(DEFAULT_SHARDS.min(cap));
        if shards == 0 || shards > MAX_SHARDS || shards > cap {
            let detail = KeyedConfigError::Shards { shards, cap };
            return Err(refused(ConfigErrorKind::Shards, detail));
        }
        Ok(shards)
    }
}

fn refused(kind: ConfigErrorKind, detail: KeyedConfigError) -> ConfigError {
    ConfigError::new(kind, detail)
}

/// The factory a keyed limiter builds each key's limiter with.
pub(super) type Make<L> = Box<dyn Fn() -> Result<L, ConfigError> + Send + Sync>;

impl From<ConfigError> for KeyedError {
    fn from(e: ConfigError) -> Self {
        KeyedError::Build(e)
    }
}
