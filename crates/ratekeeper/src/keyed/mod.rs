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
//! When a new key finds its shard full, the shard drops every key whose
//! state is [`Fresh`](crate::Recovery::Fresh) (exact: no decision changes)
//! or holds only [`Credit`](crate::Recovery::Credit) (the key's next limiter
//! is stricter, never looser), counting each. No sweeper thread: the sweep
//! runs on the insert that needs room. If every key holds debt, the
//! [`Overflow`] policy decides: refuse the new key ([`KeyedError::Full`]),
//! share one overflow limiter, or forgive the least debt (counted). Nothing
//! is admitted untracked. Token pools and sharded pacers are refused at
//! build.
//!
//! # Key identity
//!
//! A key is its fingerprint: a 64-bit hash of it by the map's
//! [`BuildHasher`](std::hash::BuildHasher); the key itself is not stored.
//! Two keys whose fingerprints are equal share one state (one limit). With
//! the default [`KeyHasher`]'s random seed per map, an outsider cannot aim
//! a collision at another client's key; keys that collide by chance (about
//! one pair in 2^64 / n² for n keys) only share their limits.
//!
//! # Cost
//!
//! A key costs a slot of its shard's table: its fingerprint and its state,
//! side by side. For the limiters whose state is one word (a refill bucket,
//! a pacer without a burst ratio) four slots fill one 64-byte cache line,
//! and a table at its cap is at most 3/4 full: at most 24 bytes a key.
//! Wider states (a pacer with a burst ratio, Guava's smooth limiters, the
//! cycle limiter) take wider buckets. Each shard's table grows by doubling
//! under its write lock, up to the size for its share of the cap.
//!
//! Each key is decided by its limiter's own arithmetic, without cancels,
//! rate changes or a waiting room; wait until
//! [`Grant::ready_nanos`](crate::Grant::ready_nanos) by your own means. A
//! check on a tracked key is a clock read, a hash, a read lock, a probe
//! from the key's home bucket (usually that bucket alone) and one
//! compare-exchange: O(1), no allocation. A new key takes the shard's
//! write lock (amortised O(1); a doubling or a clean-up of removed keys'
//! slots moves every key of the shard once).
//!
//! # Memory ordering
//!
//! A grant on a key happens after every earlier grant on that key (one
//! `AcqRel` read-modify-write of its state). The map is a lock per shard
//! ([`ShardedLock`](crossbeam_utils::sync::ShardedLock)): read to find a
//! key and decide on its state, write to insert, drop, or rebuild. A slot's
//! fingerprint changes only under the write lock, so no check ever decides
//! on a state that another key took over while it looked.
//!
//! The repository's `docs/keyed.md` has the fresh/credit table per limiter,
//! the memory per key and the shard count rule.

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
