//! What the layer asks: [`KeyedLimit`], "a limiter per key", with a global
//! limit ([`Global`]) and a simple capped map ([`KeyedMap`]) as its
//! implementations.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use ratekeeper::config::{AnyLimiter, KindConfig, LimiterConfig};
use ratekeeper::pool::Filling;
use ratekeeper::{AcquireError, Clock, DefaultClock, Grant, RateLimiter};

use crate::{ConfigError, Policy};

/// The most keys a [`KeyedMap`] may be configured for (16 Mi): a larger
/// cap is an absurd configuration, refused when the map is built.
pub const MAX_KEYS: usize = 1 << 24;

/// A rate limit per key: what the layer decides with.
///
/// The layer calls [`reserve`](KeyedLimit::reserve) once per request, in
/// `call()`, with one permit. A keyed limiter from the core crate plugs in
/// through this trait, as [`KeyedMap`] does here.
pub trait KeyedLimit<K: ?Sized>: Send + Sync {
    /// Decides, without sleeping, whether and when `permits` may go for
    /// `key`: as [`RateLimiter::reserve`] on that key's limiter.
    ///
    /// # Errors
    ///
    /// As [`RateLimiter::reserve`]; [`AcquireError::Unavailable`] when the
    /// key cannot be given a limiter now (a full map).
    fn reserve(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError>;

    /// The quota the headers describe.
    fn policy(&self) -> &Policy;

    /// Gives back a grant the request will not use (its wait was cancelled);
    /// as [`RateLimiter::cancel`]. The default gives back nothing.
    fn cancel(&self, key: &K, grant: &Grant) -> bool {
        let _ = (key, grant);
        false
    }

    /// Permits `key` could take at once after `grant`, for the `RateLimit`
    /// field's `r`. The default reads the grant's schedule: a grant
    /// scheduled `lag` before it started leaves `floor(lag / interval)`
    /// more (the [`Pacer`](ratekeeper::Pacer)'s account of unused time),
    /// at most `burst - 1`, and none after a grant that had to wait. For a
    /// limiter whose grants are never scheduled early (a token bucket) it
    /// says 0: a lower bound, so a client that trusts it never exceeds.
    ///
    /// An implementation answers at most the policy's
    /// [`burst`](Policy::burst), which the announced quota holds
    /// ([`Policy::with_burst`]), so that `r` never exceeds `q`.
    fn remaining(&self, key: &K, grant: &Grant) -> u64 {
        let _ = key;
        schedule_remaining(self.policy(), grant)
    }
}

/// What the layer decides with: a rate limit per key whose answer may come
/// later (a limit kept on a server, as the `redis` feature's
/// `RedisKeyed`), awaited by the request's response future.
///
/// Every [`KeyedLimit`] is one, answering at once
/// ([`Reservation::Now`]): the layer then decides in `call()`, with no
/// future, no allocation and no extra state, as before. Implement this
/// trait (not [`KeyedLimit`]) for a limit that must wait on I/O; its
/// methods are named apart from [`KeyedLimit`]'s so that both traits can
/// be in scope. Implement it for each key type the limit takes, not for
/// every `K` (a generic impl would collide with the [`KeyedLimit`] impls
/// other crates may write for the same type).
pub trait AsyncKeyedLimit<K: ?Sized>: Send + Sync {
    /// The decision that is not made at once. It owns what it needs (it
    /// outlives the borrow of the key): a limit that answers only at once
    /// may name [`std::future::Pending`].
    type Pending: Future<Output = Result<Grant, AcquireError>> + Send + 'static;

    /// Decides, or starts deciding, whether and when `permits` may go for
    /// `key`, waiting at most `max_wait`: as [`KeyedLimit::reserve`].
    fn reserve_async(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Reservation<Self::Pending>;

    /// The quota the headers describe; as [`KeyedLimit::policy`].
    fn announced_policy(&self) -> &Policy;

    /// Gives back a grant the request will not use; as
    /// [`KeyedLimit::cancel`]. The default gives back nothing.
    fn cancel_grant(&self, key: &K, grant: &Grant) -> bool {
        let _ = (key, grant);
        false
    }

    /// Permits `key` could take at once after `grant`; as
    /// [`KeyedLimit::remaining`]. The default says 0: a lower bound, never
    /// wrong, as it must be for a limit other processes draw on too.
    fn remaining_after(&self, key: &K, grant: &Grant) -> u64 {
        let _ = (key, grant);
        0
    }
}

/// An [`AsyncKeyedLimit`]'s answer: made now, or a future of it.
#[derive(Debug)]
pub enum Reservation<F> {
    /// Decided at once.
    Now(Result<Grant, AcquireError>),
    /// To be awaited.
    Later(F),
}

impl<K: ?Sized, T: KeyedLimit<K> + ?Sized> AsyncKeyedLimit<K> for T {
    type Pending = std::future::Pending<Result<Grant, AcquireError>>;

    #[inline]
    fn reserve_async(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Reservation<Self::Pending> {
        Reservation::Now(self.reserve(key, permits, max_wait))
    }

    #[inline]
    fn announced_policy(&self) -> &Policy {
        self.policy()
    }

    fn cancel_grant(&self, key: &K, grant: &Grant) -> bool {
        self.cancel(key, grant)
    }

    fn remaining_after(&self, key: &K, grant: &Grant) -> u64 {
        self.remaining(key, grant)
    }
}

/// The default [`KeyedLimit::remaining`].
pub fn schedule_remaining(policy: &Policy, grant: &Grant) -> u64 {
    if grant.ready_nanos() > grant.started_nanos() {
        return 0;
    }
    let lag = grant
        .started_nanos()
        .saturating_sub(grant.scheduled_nanos());
    (lag / policy.interval_nanos()).min(u64::from(policy.burst() - 1))
}

impl<K: ?Sized, T: KeyedLimit<K> + ?Sized> KeyedLimit<K> for std::sync::Arc<T> {
    fn reserve(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        (**self).reserve(key, permits, max_wait)
    }
    fn policy(&self) -> &Policy {
        (**self).policy()
    }
    fn cancel(&self, key: &K, grant: &Grant) -> bool {
        (**self).cancel(key, grant)
    }
    fn remaining(&self, key: &K, grant: &Grant) -> u64 {
        (**self).remaining(key, grant)
    }
}

/// One limiter for every key: a global limit.
///
/// ```
/// use ratekeeper::{Pacer, Rate};
/// use ratekeeper_tower::{Global, KeyedLimit, Policy};
///
/// let global = Global::new(Pacer::builder(Rate::new(10.0)?).build()?, Policy::from_rate("all", 10.0)?);
/// assert!(global.reserve(&(), 1, Some(std::time::Duration::ZERO)).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Global<L> {
    limiter: L,
    policy: Policy,
}

impl<L> Global<L> {
    /// `limiter` for every key, described by `policy`.
    pub fn new(limiter: L, policy: Policy) -> Global<L> {
        Global { limiter, policy }
    }

    /// The limiter.
    pub fn limiter(&self) -> &L {
        &self.limiter
    }
}

impl<K: ?Sized, L: RateLimiter + Send + Sync> KeyedLimit<K> for Global<L> {
    #[inline]
    fn reserve(
        &self,
        _: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        self.limiter.reserve(permits, max_wait)
    }
    fn policy(&self) -> &Policy {
        &self.policy
    }
    fn cancel(&self, _: &K, grant: &Grant) -> bool {
        self.limiter.cancel(grant)
    }
}

struct Entry<L> {
    limiter: L,
    /// The latest ready time granted to this key (clock nanoseconds).
    last_ready: u64,
}

struct Slots<K, L> {
    map: HashMap<K, Entry<L>>,
    /// No sweep before this reading: a flood of new keys into a full map
    /// costs one O(n) sweep per idle period, not one per request.
    next_sweep: u64,
}

type Make<L> = Box<dyn Fn() -> Result<L, ratekeeper::ConfigError> + Send + Sync>;

/// A limiter per key in a `Mutex<HashMap>` with a hard cap: the simple,
/// correct map this crate works and is tested with on its own.
///
/// * **Cap.** At most `cap` keys. When a new key arrives at a full map, keys
///   idle for a full refill ([`Policy::refill_time`]: a whole burst has come
///   back, so a fresh limiter is no more generous than the old one) are
///   swept, at most once per refill time; if none can go, the new key is
///   refused with [`AcquireError::Unavailable`] and counted in
///   [`rejected_keys`](KeyedMap::rejected_keys). Known keys are never
///   evicted while they could still owe time, so a key flood cannot reset
///   anyone's limit.
/// * **Cost.** One lock per request, held for the hash lookup and the
///   limiter's `reserve`. Good for thousands of requests per second; the
///   core crate's sharded keyed map is the one for more.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::ManualClock;
/// use ratekeeper_tower::{KeyedLimit, KeyedMap, Policy};
///
/// let clock = ManualClock::new(0);
/// let map = KeyedMap::from_config_with_clock(
///     &"pacer:1,1".parse()?, Policy::from_rate("per-ip", 1.0)?, 2, clock.clone())?;
/// let now = Some(Duration::ZERO);
/// assert!(map.reserve(&"a", 1, now).is_ok());
/// assert!(map.reserve(&"a", 1, now).is_err()); // 1/s
/// assert!(map.reserve(&"b", 1, now).is_ok());
/// assert!(map.reserve(&"c", 1, now).is_err()); // full
/// clock.advance(Duration::from_secs(1));
/// assert!(map.reserve(&"c", 1, now).is_ok()); // "a" and "b" idle: swept
/// assert_eq!(map.rejected_keys(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedMap<K, L, C = DefaultClock> {
    slots: Mutex<Slots<K, L>>,
    make: Make<L>,
    clock: C,
    policy: Policy,
    cap: usize,
    rejected: AtomicU64,
}

impl<K, L, C> std::fmt::Debug for KeyedMap<K, L, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedMap")
            .field("policy", &self.policy)
            .field("cap", &self.cap)
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq, L: RateLimiter, C: Clock> KeyedMap<K, L, C> {
    /// A map of at most `cap` keys, each given a limiter by `make`, on
    /// `clock` (the limiters must keep time on the same clock).
    ///
    /// # Errors
    ///
    /// [`ConfigError::ZeroCap`], [`ConfigError::TooManyKeys`], or
    /// [`ConfigError::Core`] when `make` fails (it is called once here).
    pub fn with_factory<F>(
        policy: Policy,
        cap: usize,
        clock: C,
        make: F,
    ) -> Result<KeyedMap<K, L, C>, ConfigError>
    where
        F: Fn() -> Result<L, ratekeeper::ConfigError> + Send + Sync + 'static,
    {
        if cap == 0 {
            return Err(ConfigError::ZeroCap);
        }
        if cap > MAX_KEYS {
            return Err(ConfigError::TooManyKeys(cap));
        }
        make().map_err(ConfigError::Core)?;
        Ok(KeyedMap {
            slots: Mutex::new(Slots {
                map: HashMap::new(),
                next_sweep: 0,
            }),
            make: Box::new(make),
            clock,
            policy,
            cap,
            rejected: AtomicU64::new(0),
        })
    }

    /// New keys refused because the map was full.
    pub fn rejected_keys(&self) -> u64 {
        // Ordering: a statistic; nothing is published through it.
        self.rejected.load(Ordering::Relaxed)
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots<K, L>> {
        // A panic under the lock leaves only counters and limiters, which stay valid.
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<K: Hash + Eq + Clone, C: Clock + Clone + 'static> KeyedMap<K, AnyLimiter<C>, C> {
    /// A map whose keys each get the limiter `config` describes, on `clock`.
    ///
    /// # Errors
    ///
    /// As [`with_factory`](KeyedMap::with_factory), and
    /// [`ConfigError::PerKeyKind`] for a token pool filled by a thread (a
    /// thread per key).
    pub fn from_config_with_clock(
        config: &LimiterConfig,
        policy: Policy,
        cap: usize,
        clock: C,
    ) -> Result<KeyedMap<K, AnyLimiter<C>, C>, ConfigError> {
        if let KindConfig::Pool {
            filling: Filling::Thread(_),
            ..
        } = config.kind()
        {
            return Err(ConfigError::PerKeyKind("thread-filled pool"));
        }
        let config = *config;
        let c = clock.clone();
        KeyedMap::with_factory(policy, cap, clock, move || {
            config.build_with_clock(c.clone())
        })
    }
}

impl<K: Hash + Eq + Clone> KeyedMap<K, AnyLimiter, DefaultClock> {
    /// [`from_config_with_clock`](KeyedMap::from_config_with_clock) on the
    /// default clock.
    ///
    /// # Errors
    ///
    /// As [`from_config_with_clock`](KeyedMap::from_config_with_clock).
    pub fn from_config(
        config: &LimiterConfig,
        policy: Policy,
        cap: usize,
    ) -> Result<KeyedMap<K, AnyLimiter, DefaultClock>, ConfigError> {
        KeyedMap::from_config_with_clock(config, policy, cap, DefaultClock::new())
    }
}

impl<K, L, C> KeyedLimit<K> for KeyedMap<K, L, C>
where
    K: Hash + Eq + Clone + Send,
    L: RateLimiter + Send,
    C: Clock,
{
    fn reserve(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        let mut slots = self.lock();
        if let Some(e) = slots.map.get_mut(key) {
            let g = e.limiter.reserve(permits, max_wait)?;
            e.last_ready = e.last_ready.max(g.ready_nanos());
            return Ok(g);
        }
        if slots.map.len() >= self.cap {
            let now = self.clock.now_nanos();
            let idle = self.policy.refill_time().as_nanos() as u64;
            if now >= slots.next_sweep {
                slots.next_sweep = now.saturating_add(idle);
                slots
                    .map
                    .retain(|_, e| e.last_ready.saturating_add(idle) > now);
            }
            if slots.map.len() >= self.cap {
                // Ordering: a statistic.
                self.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(AcquireError::Unavailable);
            }
        }
        // `make` succeeded when the map was built; the same configuration
        // fails again only if the core crate's rules change under it.
        let limiter = (self.make)().map_err(|_| AcquireError::Unavailable)?;
        let g = limiter.reserve(permits, max_wait)?;
        slots.map.insert(
            key.clone(),
            Entry {
                limiter,
                last_ready: g.ready_nanos(),
            },
        );
        Ok(g)
    }

    fn policy(&self) -> &Policy {
        &self.policy
    }

    fn cancel(&self, key: &K, grant: &Grant) -> bool {
        let slots = self.lock();
        slots.map.get(key).is_some_and(|e| e.limiter.cancel(grant))
    }
}
