//! [`Keyed`]: one limit per key (a client, an IP prefix, an API key), each
//! key a word or two of state, with a hard cap on live keys and exact,
//! automatic eviction.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::keyed::{IpKeyer, Keyed, KeyedError};
//! use ratekeeper::{AcquireError, ManualClock};
//!
//! let clock = ManualClock::new(0);
//! let keyed = Keyed::builder()
//!     .max_keys(10_000)
//!     .build_with_clock(&"pacer:10,1.0".parse()?, clock.clone())?; // 10/s each, strict
//! let keyer = IpKeyer::default(); // IPv6 by /64
//! let a = keyer.key("2001:db8::1".parse()?);
//! let b = keyer.key("2001:db8::2".parse()?); // the same /64
//! assert!(keyed.try_acquire(&a).is_ok());
//! assert!(matches!(keyed.try_acquire(&b), Err(KeyedError::Limiter(AcquireError::WouldWait { .. }))));
//! clock.advance(Duration::from_millis(100));
//! assert!(keyed.try_acquire(&b).is_ok());
//! assert_eq!(keyed.metrics().live_keys, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Eviction
//!
//! A key's state says, as [`RateLimiter::recovery`](crate::RateLimiter::recovery) does for a whole
//! limiter, how it compares with a fresh limiter's. When a new key finds its shard full,
//! the shard drops every key that is [`Fresh`](crate::Recovery::Fresh) (dropping it
//! changes no decision: exact and free) or holds only
//! [`Credit`](crate::Recovery::Credit) (dropping it forfeits credit: the key's next
//! limiter is stricter, never looser), counting each kind. No sweeper
//! thread: the sweep runs on the insert that needs room, at most once per
//! shard-full of inserts or once per earliest recovery time.
//!
//! | limiter | fresh | credit |
//! |---|---|---|
//! | [`Pacer`](crate::Pacer), strict (`1.0`) | next slot and spacing at or before now | never |
//! | [`Pacer`](crate::Pacer), average, compensation, burst | next slot exactly now, or idle | behind schedule: a backlog it may catch up |
//! | [`RefillLimiter`](crate::RefillLimiter) | `max(E, now − full) = now − initial × npp` (with initial = capacity: full again) | more permits stored than the initial ones |
//! | [`SmoothBursty`](crate::SmoothBursty) | nothing stored, nothing owed | permits stored |
//! | [`SmoothWarmingUp`](crate::SmoothWarmingUp) | cold again (its maximum stored), nothing owed | warmer than cold |
//! | [`CycleLimiter`](crate::CycleLimiter) | the cycle's whole limit left | never |
//! | token pools, sharded pacers | refused at build ([`ConfigErrorKind::Unsupported`](crate::ConfigErrorKind::Unsupported)) | |
//!
//! If every key of the shard holds debt, the [`Overflow`] policy decides:
//! refuse the new key ([`KeyedError::Full`]), share one overflow limiter,
//! or forgive the least debt (counted). Nothing is admitted untracked.
//!
//! # Memory
//!
//! A key costs its own size, one word of state (two for a pacer with a
//! burst ratio above 1; a 16-byte aligned 128-bit word for Guava's smooth
//! limiters) and a byte of the hash table's control, over the table's
//! load: with `u64` keys, 16 bytes an entry for a bucket or a pacer. A map
//! also holds, per shard, the read slots of its lock (eight padded slots,
//! 1 KiB): 8 KiB with the default shards on two CPUs, 64 KiB on sixteen. Each key is decided by
//! its limiter's own arithmetic on that state, as a limiter of the
//! configuration would decide it (the same slots, ready times and
//! refusals), without what a per-key limiter has no use for: cancels, rate
//! changes, a waiting room, events. Grants wait with the caller's own
//! means (sleep until [`Grant::ready_nanos`](crate::Grant::ready_nanos) on the limiter's clock).
//!
//! A strict pacer's key keeps one timeline, the next start (the in-memory
//! [`Pacer`](crate::Pacer)'s `max(actual, ideal)`, all its decisions depend
//! on); its grants report that start as their scheduled time, where the
//! in-memory pacer reports its ideal timeline (earlier by every late
//! arrival's lateness).
//!
//! # Speed
//!
//! A check on a tracked key is a clock read, a hash ([`KeyHasher`] by
//! default, a seeded foldhash), a read lock, a table lookup and one
//! compare-exchange (or two words' worth): O(1), with no allocation once
//! the key is tracked. A new key takes the shard's write lock and may grow
//! its table (amortised O(1)).
//!
//! # Memory ordering
//!
//! A grant on a key happens after every earlier grant on that key (each
//! is one atomic read-modify-write of the key's state, `AcqRel`), as the
//! limiter's grants do. The map is a lock per shard: a read lock for known
//! keys, sharded by thread ([`ShardedLock`](crossbeam_utils::sync::ShardedLock)) so that readers on different
//! threads do not write one lock word; a write lock to insert or drop keys.

mod config;
mod hasher;
mod ip;
mod map;
mod shard;
#[cfg(all(test, not(loom)))]
mod tests;

pub use config::{
    check_max_keys, default_shards, KeyedBuilder, Overflow, DEFAULT_MAX_KEYS, DEFAULT_SHARDS_MAX,
    MAX_KEYS, MAX_SHARDS,
};
pub use hasher::KeyHasher;
pub use ip::{IpKey, IpKeyer, DEFAULT_IPV6_PREFIX};
pub use map::{Keyed, KeyedError, KeyedMetrics};
pub(crate) use map::{Map, Rules};
