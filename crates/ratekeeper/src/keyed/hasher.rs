//! [`KeyHasher`]: the keyed limiter's default hash of keys.

use std::hash::BuildHasher;

/// The hash a [`Keyed`](super::Keyed) limiter puts keys through unless
/// told otherwise: [foldhash](https://docs.rs/foldhash)'s fast hash with a
/// random seed per map: a few instructions for a `u64` key, an order of
/// magnitude less than std's SipHash-1-3, which matters because a keyed
/// limit's hot path is little more than the hash, a lock and a
/// compare-exchange.
///
/// The seed keeps an outsider from choosing keys that collide, as long as
/// they cannot learn it; foldhash does not claim SipHash's resistance to an
/// adversary who can measure hash timings. Where keys come from a hostile
/// network and that margin matters more than the speed, build with std's
/// `RandomState` ([`KeyedBuilder::build_with_hasher`](super::KeyedBuilder::build_with_hasher)).
///
/// ```
/// use std::hash::{BuildHasher, RandomState};
/// use ratekeeper::keyed::{KeyHasher, Keyed};
/// use ratekeeper::DefaultClock;
///
/// let (a, b) = (KeyHasher::default(), KeyHasher::default());
/// assert_eq!(a.hash_one(7u64), a.hash_one(7u64));
/// assert_ne!(a.hash_one(7u64), b.hash_one(7u64), "seeded per map");
///
/// // SipHash instead:
/// let config = "refill:100".parse()?;
/// let keyed: Keyed<u64, DefaultClock, RandomState> =
///     Keyed::builder().build_with_hasher(&config, DefaultClock::new(), RandomState::new())?;
/// assert!(keyed.try_acquire(&1).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct KeyHasher(foldhash::fast::RandomState);

impl BuildHasher for KeyHasher {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}
