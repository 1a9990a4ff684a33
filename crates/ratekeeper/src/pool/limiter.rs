//! [`TokenPool`]: the pools of [`Pools`] as a thread-safe rate limiter.

use std::fmt;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::claims::Claims;
use super::filler::{Handle, Next};
use super::pools::{PoolError, Pools};
use crate::clock::{elapsed_nanos, Clock, DefaultClock};
use crate::error::{ConfigError, ConfigErrorKind};
use crate::limiter::{AcquireError, Grant, RateLimiter, Readiness, WaitStats};
use crate::rate::{per_second_of_nanos, Rate};
use crate::spec::{RateSpec, Verb, DEFAULT_BURST_RATIO};
use crate::sync::{self, lock, AtomicBool, AtomicU64, Mutex, Ordering, Thread};
use crate::wait::{self, saturating_nanos, WaitPolicy};

/// The interval of [`Filling::Thread`] unless set: 1 ms, nosqlbench's design
/// value (its later releases used 0.1 ms).
pub const DEFAULT_FILL_INTERVAL: Duration = Duration::from_millis(1);

/// The shortest fill interval a [`TokenPool`] accepts: 1 µs.
pub const MIN_FILL_INTERVAL: Duration = Duration::from_micros(1);

/// The longest fill interval a [`TokenPool`] accepts: 1 s.
pub const MAX_FILL_INTERVAL: Duration = Duration::from_secs(1);

/// The most tokens one reservation may take: 2^62 ns, the longest op slice a
/// [`Rate`] may have.
const MAX_SPAN: u64 = crate::rate::MAX_NANOS_PER_OP;

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
    /// The rate or burst ratio cannot size the pools. No longer returned:
    /// builders report a [`PoolError`] inside a [`ConfigError`].
    #[deprecated(
        since = "0.2.0",
        note = "builders return ConfigError with a PoolError detail"
    )]
    #[error(transparent)]
    Pool(#[from] PoolError),
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
    /// read (about 30 ns) per op, but a pool's tokens always cover time that
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
        let now = clock.now_nanos();
        let pool = TokenPool {
            shared: Arc::new(Shared {
                taken: CachePadded::new(AtomicU64::new(0)),
                filled: CachePadded::new(AtomicU64::new(0)),
                last_seen: CachePadded::new(AtomicU64::new(now)),
                params: CachePadded::new(Params {
                    nanos_per_op: AtomicU64::new(pools.nanos_per_op()),
                    base: AtomicU64::new(now),
                    idle: AtomicBool::new(false),
                }),
                cached_clock: self.cached_clock,
                policy: self.policy,
                state: Mutex::new(State {
                    rate: self.rate,
                    pools,
                    queue: Claims::new(),
                    owed: 0,
                    last_fill: now,
                    started: false,
                    filler_busy: false,
                    accumulated: 0,
                    fills: 0,
                    mode: self.filling,
                    filler: None,
                    parked: false,
                }),
                clock,
            }),
        };
        if matches!(self.verb, Verb::Start | Verb::Restart) {
            pool.start();
        }
        Ok(pool)
    }
}

/// nosqlbench's hybrid rate limiter: a token pool of nanoseconds with
/// active, burst and waiting pools. See the [module documentation](crate::pool).
///
/// Share it by reference or in an `Arc` and take permits through the
/// [`RateLimiter`] methods. A caller that finds too few tokens queues (first
/// come, first served) and sleeps until fills give it enough; it is woken by
/// the fill, not by polling.
///
/// # Examples
///
/// Deterministic, with a manual clock and manual filling:
///
/// ```
/// use ratekeeper::pool::{Filling, TokenPool};
/// use ratekeeper::{ManualClock, Rate, RateLimiter};
///
/// let clock = ManualClock::new(0);
/// let pool = TokenPool::builder(Rate::new(1000.0)?)
///     .filling(Filling::Manual)
///     .build_with_clock(clock.clone())?;
/// assert!(pool.try_acquire().is_ok()); // the start pre-fills one op
/// assert!(pool.try_acquire().is_err());
///
/// clock.advance_nanos(5_000_000);
/// pool.refill(5_000_000)?; // 5 ms: 2 ms fill the active pool, 3 ms overflow
/// assert_eq!(pool.backlog_nanos(), 2_800_000); // 0.2 ms went to the burst pool
/// let g = pool.try_acquire()?;
/// assert_eq!(g.scheduled_nanos(), 1_000_000); // due 1 ms in
/// assert_eq!(g.wait_nanos(), 4_000_000); // started 5 ms in
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TokenPool<C = DefaultClock> {
    shared: Arc<Shared<C>>,
}

/// What the pool and its filler thread share.
///
/// Invariants (the module documentation explains them):
///
/// 1. `filled` and `taken` only grow. The active pool is `filled − taken`,
///    read as a signed difference; it is negative only for an instant while a
///    fill moves tokens to queued claims (see `commit`), and takers treat a
///    negative pool as empty.
/// 2. Only a holder of the `state` lock writes `filled`; `taken` is written by
///    lock-free takers (a compare-exchange that never takes more than the
///    active pool holds) and by lock holders (the same compare-exchange).
/// 3. After every critical section, either no claim is queued or the active
///    pool is empty: fills serve queued claims first, so a lock-free taker
///    finds tokens only when nobody is waiting (first come, first served).
pub(crate) struct Shared<C> {
    /// Tokens taken from the active pool since the pool was built.
    taken: CachePadded<AtomicU64>,
    /// Tokens put into the active pool since the pool was built.
    filled: CachePadded<AtomicU64>,
    /// The latest clock reading any caller or fill stored.
    last_seen: CachePadded<AtomicU64>,
    params: CachePadded<Params>,
    cached_clock: bool,
    policy: WaitPolicy,
    state: Mutex<State>,
    clock: C,
}

/// Read-mostly values the lock-free path needs, written under the lock.
struct Params {
    nanos_per_op: AtomicU64,
    /// `scheduled = taken_before + base` (wrapping): the schedule origin minus
    /// the tokens taken before it and withdrawn since (tokens that left the
    /// active pool without going to an op).
    base: AtomicU64,
    /// The filler thread is parked (`State::parked`): a taker that finds it
    /// set must wake it. Written only under the lock; see `Shared::try_park`
    /// for why a taker cannot miss it.
    idle: AtomicBool,
}

struct State {
    rate: Rate,
    /// The waiting pool and the sizes; its active pool is synced from the
    /// atomics at each fill.
    pools: Pools,
    /// Claims waiting for tokens, oldest first.
    queue: Claims,
    /// Tokens the queued claims still need: exactly the sum of their
    /// `remaining`. `reserve_slow` refuses a claim that would take it past
    /// `u64::MAX`, so it is never saturated, and `distribute` and `cancel`
    /// subtract from it exactly.
    owed: u64,
    /// The clock reading of the latest fill.
    last_fill: u64,
    started: bool,
    /// `Filling::Inline`: a waiter is sleeping to refill for the queue.
    filler_busy: bool,
    /// Backlog checkpointed when the pool was stopped.
    accumulated: u64,
    fills: u64,
    /// The filling in effect (`Inline` if a filler thread could not start).
    mode: Filling,
    filler: Option<Handle>,
    /// The filler thread is parked because the pool is idle: its time since
    /// `last_fill` is backlog not added yet (see `Shared::catch_up`).
    parked: bool,
}

impl State {
    /// Where claim `id` is in the queue, if it is still queued.
    fn position(&self, id: u32) -> Option<usize> {
        self.queue.find(id)
    }
}

/// The active pool given `filled` and `taken` (never negative, see the
/// invariants on `Shared`).
#[inline]
fn available(filled: u64, taken: u64) -> u64 {
    (filled.wrapping_sub(taken) as i64).max(0) as u64
}

/// Someone to wake once the pool's lock is released.
#[derive(Clone)]
pub(super) enum Wake {
    /// A thread parked in a blocking wait, or the filler thread.
    Thread(Thread),
    /// An async wait ([`RateLimiter::poll_grant`]).
    Task(Waker),
}

impl Wake {
    fn wake(self) {
        match self {
            Wake::Thread(t) => t.unpark(),
            Wake::Task(w) => w.wake(),
        }
    }
}

fn wake_all(wake: &mut Vec<Wake>) {
    for w in wake.drain(..) {
        w.wake();
    }
}

impl<C: Clock> Shared<C> {
    pub(super) fn clock(&self) -> &C {
        &self.clock
    }

    /// Takes `span` tokens if the active pool holds them: the lock-free path.
    /// Returns `taken` before the take.
    #[inline(always)]
    fn try_take(&self, span: u64) -> Option<u64> {
        // Ordering: Acquire, so the `filled` read below is at least as new as
        // the one the taker that stored this value checked against (it
        // released it with its compare-exchange): `filled − taken` is then
        // never an underestimate of a value that was negative.
        let mut taken = self.taken.load(Ordering::Acquire);
        loop {
            // Ordering: Acquire pairs with the Release store of a fill, so the
            // tokens and everything the filler did before are visible.
            let filled = self.filled.load(Ordering::Acquire);
            if available(filled, taken) < span {
                return None;
            }
            // Ordering: AcqRel on success, so grants are ordered like the
            // Pacer's (each happens after the ones before it on this pool);
            // Acquire on failure, as for the load above.
            match self.taken.compare_exchange_weak(
                taken,
                taken.wrapping_add(span),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(taken),
                Err(current) => taken = current,
            }
        }
    }

    /// The grant for tokens taken at once at `taken`.
    #[inline(always)]
    fn grant_now(&self, taken: u64, permits: u32) -> Grant {
        // Ordering: Relaxed for both; `base` changes only at (re)start, stop,
        // and when tokens are withdrawn, and an op racing those may be
        // scheduled against either side of them (documented). `last_seen` is
        // a clock reading and carries no other data.
        let scheduled = taken.wrapping_add(self.params.base.load(Ordering::Relaxed));
        let started = if self.cached_clock {
            let seen = self.last_seen.load(Ordering::Relaxed);
            if scheduled < seen {
                seen
            } else {
                let now = self.clock.now_nanos();
                // A plain store, as the Pacer does: a racing older reading
                // may win, which only makes the cache a little staler.
                if now > seen {
                    self.last_seen.store(now, Ordering::Relaxed);
                }
                now
            }
        } else {
            // Not cached: no shared write on the common path.
            self.clock.now_nanos()
        };
        Grant::new(scheduled.min(started), started, started, permits)
    }

    #[inline]
    fn see(&self, now: u64) {
        // Ordering: Relaxed; a clock reading, and `fetch_max` keeps it from
        // going back when readings race.
        if now > self.last_seen.load(Ordering::Relaxed) {
            self.last_seen.fetch_max(now, Ordering::Relaxed);
        }
    }

    fn active(&self) -> u64 {
        // Ordering: Acquire, as in `try_take`.
        let taken = self.taken.load(Ordering::Acquire);
        available(self.filled.load(Ordering::Acquire), taken)
    }

    /// Refills with `nanos` tokens and serves queued claims with what the
    /// active pool then holds, as one step: the tokens claims receive never
    /// pass through the active pool where a lock-free taker could take them.
    ///
    /// With [`Filling::Inline`], the tokens owed to queued claims are served
    /// as they arrive, before G2's step sees the rest (see
    /// [Serving waiting callers first](crate::pool#serving-waiting-callers-first)).
    fn refill_locked(&self, st: &mut State, nanos: u64, wake: &mut Vec<Wake>) {
        loop {
            // Ordering: Acquire as in `try_take`; Relaxed for `filled`, which
            // only lock holders write.
            let taken = self.taken.load(Ordering::Acquire);
            let filled = self.filled.load(Ordering::Relaxed);
            let before = available(filled, taken);
            let mut pools = st.pools.clone();
            pools.set_active(before);
            // Claims wait only while the active pool is empty (invariant 3),
            // so the direct tokens never bypass tokens the pool holds.
            let demand = if st.mode == Filling::Inline && before == 0 {
                st.owed
            } else {
                0
            };
            let direct = pools.refill_serving(nanos, demand);
            let after = pools.active();
            let to_claims = after.min(st.owed - direct);
            // The direct tokens pass through the counters like tokens a claim
            // takes from the pool: `commit` takes them (with `to_claims`)
            // before it adds them, so no lock-free taker ever sees them.
            if !self.commit(
                taken,
                filled,
                before,
                after.saturating_add(direct),
                to_claims + direct,
            ) {
                continue; // a lock-free taker took in between: recompute
            }
            pools.set_active(after - to_claims);
            st.pools = pools;
            st.fills += 1;
            self.distribute(st, to_claims + direct, wake);
            return;
        }
    }

    /// Makes the active pool go from `before` to `after`, minus `to_claims`
    /// tokens handed to queued claims. Takes from the pool (`taken`) with a
    /// compare-exchange against the snapshot first, then adds (`filled`), so
    /// the pool is never seen holding tokens that are not there. Returns
    /// `false` if a lock-free taker moved `taken` since the snapshot.
    fn commit(&self, taken: u64, filled: u64, before: u64, after: u64, to_claims: u64) -> bool {
        let withdrawn = before.saturating_sub(after);
        let out = withdrawn + to_claims;
        if out > 0 {
            // Ordering: AcqRel, like a taker's; Relaxed on failure (we retry
            // from a fresh Acquire load).
            if self
                .taken
                .compare_exchange(
                    taken,
                    taken.wrapping_add(out),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                return false;
            }
        }
        let added = after.saturating_sub(before);
        if added > 0 {
            // Ordering: Release pairs with the takers' Acquire loads.
            self.filled
                .store(filled.wrapping_add(added), Ordering::Release);
        }
        if withdrawn > 0 {
            // Withdrawn tokens (moved back to the waiting pool) are no op's
            // schedule. Ordering: Relaxed; see `grant_now`.
            self.params.base.fetch_sub(withdrawn, Ordering::Relaxed);
        }
        true
    }

    /// Gives `tokens` to the queued claims, oldest first; completed claims
    /// leave the queue and their waiters are woken.
    fn distribute(&self, st: &mut State, mut tokens: u64, wake: &mut Vec<Wake>) {
        st.owed -= tokens;
        while tokens > 0 {
            let Some(front) = st.queue.front_mut() else {
                break;
            };
            let give = front.remaining.min(tokens);
            front.remaining -= give;
            tokens -= give;
            if front.remaining == 0 {
                if let Some(claim) = st.queue.pop_front() {
                    wake.extend(claim.waiter);
                }
            }
        }
    }

    /// Serves queued claims from the active pool.
    fn serve(&self, st: &mut State, wake: &mut Vec<Wake>) {
        while st.owed > 0 {
            let taken = self.taken.load(Ordering::Acquire);
            let filled = self.filled.load(Ordering::Relaxed);
            let active = available(filled, taken);
            if active == 0 {
                return;
            }
            let give = active.min(st.owed);
            if self.commit(taken, filled, active, active, give) {
                st.pools.set_active(active - give);
                self.distribute(st, give, wake);
                return;
            }
        }
    }

    /// Empties the active pool (tokens withdrawn, not taken by ops).
    fn withdraw_active(&self, st: &mut State) {
        loop {
            let taken = self.taken.load(Ordering::Acquire);
            let filled = self.filled.load(Ordering::Relaxed);
            let active = available(filled, taken);
            if active == 0 || self.commit(taken, filled, active, 0, 0) {
                st.pools.set_active(0);
                return;
            }
        }
    }

    /// A fill from the clock: the time since the last fill.
    fn fill_from_clock(&self, st: &mut State, now: u64, wake: &mut Vec<Wake>) {
        let elapsed = elapsed_nanos(st.last_fill, now);
        st.last_fill = st.last_fill.max(now);
        self.see(now);
        self.refill_locked(st, elapsed, wake);
    }

    /// The least time an inline fill covers while callers wait: the
    /// policy's fill granule, at most half the active pool (see `wait_claim`).
    fn fill_granule(&self, st: &State) -> u64 {
        self.policy
            .fill_granule_nanos(&self.clock)
            .min(st.pools.max_active() / 2)
    }

    /// The filler thread's fill; says whether the pool is now idle and the
    /// thread should park.
    pub(super) fn fill_tick(&self, now: u64) -> Next {
        let mut wake = Vec::new();
        let mut st = lock(&self.state);
        let mut next = Next::Fill;
        if st.parked {
            // Woken with nothing to do (a spurious wake-up), or by a take
            // whose waker has not had the lock yet.
            self.catch_up(&mut st, now);
            if self.active() == st.pools.max_over_active() {
                next = Next::Park; // still idle: no take since it parked
            } else {
                self.unpark_state(&mut st);
            }
        }
        if st.started && next == Next::Fill {
            self.fill_from_clock(&mut st, now, &mut wake);
            if self.try_park(&mut st) {
                next = Next::Park;
            }
        }
        drop(st);
        wake_all(&mut wake);
        next
    }

    /// Parks the filler if the pool is idle: nobody queued and the active
    /// pool full to `max_over_active`. A fill then can only add to the
    /// waiting pool (G2's step moves nothing into a full active pool), so
    /// the parked time is added there later, at once and exactly (see
    /// `catch_up`), and skipping the fills changes nothing but when the
    /// backlog is counted.
    ///
    /// The first take from the full pool must wake the filler. Takers take
    /// without the lock, so parking is published through `taken` itself:
    /// `idle` is set, then `taken` is written back unchanged by a
    /// compare-exchange against the snapshot the pool was found full in,
    /// which fails if any take came since (the filler then goes on).
    fn try_park(&self, st: &mut State) -> bool {
        if !st.queue.is_empty() || st.filler.is_none() {
            return false;
        }
        // Ordering: Acquire as in `try_take`; Relaxed for `filled`, which
        // only lock holders write.
        let taken = self.taken.load(Ordering::Acquire);
        let filled = self.filled.load(Ordering::Relaxed);
        if available(filled, taken) != st.pools.max_over_active() {
            return false;
        }
        // Ordering: Relaxed; the compare-exchange below publishes it.
        self.params.idle.store(true, Ordering::Relaxed);
        // Ordering: Release. Every write to `taken` is a read-modify-write,
        // so a take that comes after this one in `taken`'s modification
        // order reads from it or from a later one in its release sequence,
        // and its AcqRel compare-exchange synchronises with it: the take's
        // later load of `idle` sees it set (or cleared by a resume since).
        // A take before it made it fail. Relaxed on failure: nothing read.
        if self
            .taken
            .compare_exchange(taken, taken, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            st.parked = true;
            true
        } else {
            // Ordering: Relaxed; a taker that saw it set finds the filler
            // running when it gets the lock.
            self.params.idle.store(false, Ordering::Relaxed);
            false
        }
    }

    /// Adds the time since the last fill, while the filler was parked, to
    /// the waiting pool. Exact while the active pool is still full: G2's
    /// step would have sent every token of it there. After a take it is the
    /// conservative choice: the time between the take and `now` (the waker's
    /// clock reading, taken after the take) is backlog, caught up at the
    /// burst ratio, instead of tokens in the active pool, so nothing is
    /// ever admitted early; the fills that follow top the active pool up.
    fn catch_up(&self, st: &mut State, now: u64) {
        if st.parked {
            let elapsed = elapsed_nanos(st.last_fill, now);
            st.last_fill = st.last_fill.max(now);
            self.see(now);
            st.pools.add_waiting(elapsed);
        }
    }

    /// Marks the filler running (it is awake, or about to be woken).
    fn unpark_state(&self, st: &mut State) {
        st.parked = false;
        // Ordering: Relaxed; under the lock, and a taker that still reads it
        // set only takes the lock to find the filler running.
        self.params.idle.store(false, Ordering::Relaxed);
    }

    /// Wakes a parked filler: the pool has work again (a take, a queued
    /// claim, a new rate, a restart). Its parked time is caught up first.
    fn resume(&self, st: &mut State, now: u64, wake: &mut Vec<Wake>) {
        if st.parked {
            self.catch_up(st, now);
            self.unpark_state(st);
            wake.extend(st.filler.as_ref().map(|h| Wake::Thread(h.thread().clone())));
        }
    }

    /// What a lock-free take does when it finds the filler parked.
    #[cold]
    #[inline(never)]
    fn wake_filler(&self) {
        let mut wake = Vec::new();
        let mut st = lock(&self.state);
        let now = self.clock.now_nanos();
        self.resume(&mut st, now, &mut wake);
        drop(st);
        wake_all(&mut wake);
    }

    /// Brings the waiting pool up to date for a reader while the filler is
    /// parked.
    fn settle(&self, st: &mut State) {
        if st.parked {
            self.catch_up(st, self.clock.now_nanos());
        }
    }

    /// How long a waiter refilling an inline pool for the claim at `pos`
    /// waits before its next fill (see `TokenPool::wait_claim`): until the
    /// claim's tokens are due, at least the fill granule and at most half
    /// the active pool after the last fill.
    fn refill_span(&self, st: &State, pos: usize, now: u64) -> u64 {
        let due = st.queue.owed_through(pos);
        let since = elapsed_nanos(st.last_fill, now);
        let granule = self.fill_granule(st);
        let cap = (st.pools.max_active() / 2).saturating_sub(since).max(1);
        due.max(granule.saturating_sub(since)).min(cap).max(1)
    }

    /// In inline mode with nobody refilling, wakes one waiter to take over
    /// the refilling.
    fn hand_over(&self, st: &State, wake: &mut Vec<Wake>) {
        if st.mode == Filling::Inline && !st.filler_busy {
            if let Some(w) = st.queue.iter().find_map(|c| c.waiter.as_ref()) {
                wake.push(w.clone());
            }
        }
    }

    /// Removes the claim at `pos` (its waiter gave up, or its grant was
    /// cancelled). Tokens it had received go to the claims behind it, then
    /// back to the active pool up to `max_over_active` (where the tokens it
    /// took from the active pool came from), and the rest, which fills gave
    /// it beyond what the active pool can hold, to the waiting pool. Returns
    /// the tokens it still needed.
    fn cancel(&self, st: &mut State, pos: usize, wake: &mut Vec<Wake>) -> u64 {
        let Some(claim) = st.queue.remove(pos) else {
            return 0;
        };
        st.owed -= claim.remaining;
        let received = claim.span - claim.remaining;
        let to_claims = received.min(st.owed);
        self.distribute(st, to_claims, wake);
        let back = received - to_claims;
        if back > 0 {
            // Ordering: Relaxed load (only lock holders write `filled`), then
            // Release as in `commit`.
            let filled = self.filled.load(Ordering::Relaxed);
            let room = st.pools.max_over_active().saturating_sub(self.active());
            let to_active = back.min(room);
            if to_active > 0 {
                self.filled
                    .store(filled.wrapping_add(to_active), Ordering::Release);
            }
            st.pools.add_waiting(back - to_active);
            // The returned tokens are no op's: the ops that take them again
            // are scheduled where this claim was. Ordering: Relaxed; see
            // `grant_now`.
            self.params.base.fetch_sub(back, Ordering::Relaxed);
        }
        self.hand_over(st, wake);
        claim.remaining
    }

    /// Stops metering: checkpoints the backlog, empties the pools, and
    /// returns the filler thread to stop (with the lock released).
    fn halt(&self, st: &mut State, wake: &mut Vec<Wake>) -> Option<Handle> {
        if !st.started {
            return None;
        }
        self.settle(st);
        self.unpark_state(st); // `stop` wakes it
        st.accumulated = st.accumulated.saturating_add(st.pools.waiting());
        self.withdraw_active(st);
        st.pools.restart();
        st.started = false;
        // Waiters start the pool again (as any new acquire would).
        wake.extend(st.queue.iter().filter_map(|c| c.waiter.clone()));
        st.filler.take()
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

impl<C: Clock + 'static> TokenPool<C> {
    /// Starts metering from now: the pools are emptied, one op's tokens are
    /// pre-filled so that the first op need not wait, and a
    /// [`Filling::Thread`] filler starts. `reset` also clears the wait
    /// checkpointed at earlier stops.
    fn begin(&self, st: &mut State, now: u64, reset: bool, wake: &mut Vec<Wake>) {
        let sh = &*self.shared;
        sh.resume(st, now, wake);
        sh.withdraw_active(st);
        st.pools.restart();
        // Ordering: Acquire as in `try_take`; the next op's scheduled time is
        // now (after what queued claims still need).
        let taken = sh.taken.load(Ordering::Acquire);
        sh.params
            .base
            .store(now.wrapping_sub(taken), Ordering::Relaxed);
        st.last_fill = now;
        sh.see(now);
        st.started = true;
        if reset {
            st.accumulated = 0;
        }
        let npo = st.pools.nanos_per_op();
        sh.refill_locked(st, npo, wake);
        if let (Filling::Thread(interval), None) = (st.mode, &st.filler) {
            let (reader, filler) = (Arc::clone(&self.shared), Arc::clone(&self.shared));
            match Handle::spawn(
                move || reader.clock().now_nanos(),
                move |now| filler.fill_tick(now),
                now,
                saturating_nanos(interval),
            ) {
                Ok(h) => st.filler = Some(h),
                // No thread to be had: fill inline rather than never.
                Err(_) => st.mode = Filling::Inline,
            }
        }
    }

    fn locked<R>(&self, f: impl FnOnce(&mut State, &mut Vec<Wake>) -> R) -> R {
        let mut wake = Vec::new();
        let mut st = lock(&self.shared.state);
        let r = f(&mut st, &mut wake);
        drop(st);
        wake_all(&mut wake);
        r
    }

    /// Starts an idle pool (spec verb `start`): its schedule begins now, one
    /// op's tokens are pre-filled, and a [`Filling::Thread`] filler starts.
    /// No effect on a started pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    /// use ratekeeper::{Rate, Verb};
    ///
    /// let pool = TokenPool::builder(Rate::new(100.0)?).verb(Verb::Configure).build()?;
    /// assert!(!pool.is_started());
    /// pool.start();
    /// assert!(pool.is_started());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) {
        self.locked(|st, wake| {
            if !st.started {
                let now = self.shared.clock.now_nanos();
                self.begin(st, now, false, wake);
            }
        });
    }

    /// Re-initialises the pool as if starting for the first time (spec verb
    /// `restart`): the pools, the backlog and the accumulated wait are
    /// cleared, one op's tokens are pre-filled and the schedule begins now.
    /// Starts an idle pool. Callers already waiting keep their place.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::{Filling, TokenPool};
    /// use ratekeeper::{ManualClock, Rate};
    ///
    /// let pool = TokenPool::builder(Rate::new(1000.0)?)
    ///     .filling(Filling::Manual)
    ///     .build_with_clock(ManualClock::new(0))?;
    /// pool.refill(10_000_000)?;
    /// assert!(pool.backlog_nanos() > 0);
    /// pool.restart();
    /// assert_eq!(pool.backlog_nanos(), 0);
    /// assert_eq!(pool.active_nanos(), 1_000_000); // one op, pre-filled
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restart(&self) {
        self.locked(|st, wake| {
            let now = self.shared.clock.now_nanos();
            self.begin(st, now, true, wake);
        });
    }

    /// Stops metering (spec verb `stop`): the backlog is checkpointed into
    /// the total wait, the pools are emptied, and a [`Filling::Thread`]
    /// filler is stopped and joined before this returns. The next acquire
    /// (or [`start`](Self::start)) starts the pool afresh, and so do callers
    /// already waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::{Filling, TokenPool};
    /// use ratekeeper::{Rate, RateLimiter};
    ///
    /// let pool = TokenPool::builder(Rate::new(1000.0)?).filling(Filling::thread()).build()?;
    /// pool.stop(); // the filler thread has ended
    /// assert!(!pool.is_started());
    /// pool.acquire(); // starts it again
    /// assert!(pool.is_started());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stop(&self) {
        if let Some(h) = self.locked(|st, wake| self.shared.halt(st, wake)) {
            h.stop();
        }
    }

    /// Changes the rate and burst ratio, keeping the pools (nosqlbench
    /// G2's `apply`): their sizes follow the new rate, and when the active
    /// pool now holds more than the new `max_over_active`, the next fill
    /// moves the excess back to the waiting pool. Claims already waiting keep
    /// the tokens they asked for.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] or [`ConfigErrorKind::BurstRatio`]; nothing
    /// changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::{Filling, TokenPool};
    /// use ratekeeper::{ManualClock, Rate};
    ///
    /// let pool = TokenPool::builder(Rate::new(1000.0)?)
    ///     .filling(Filling::Manual)
    ///     .build_with_clock(ManualClock::new(0))?;
    /// pool.refill(10_000_000)?;
    /// pool.configure(Rate::new(1e6)?, 1.1)?;
    /// assert_eq!(pool.nanos_per_op(), 1000);
    /// assert_eq!(pool.pools().wait_time(), 11_000_000); // kept
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn configure(&self, rate: Rate, burst_ratio: f64) -> Result<(), ConfigError> {
        self.locked(|st, wake| {
            st.pools.apply(rate, burst_ratio)?;
            if st.parked {
                // New sizes: the pool may no longer be full. (The parked
                // time goes to the waiting pool whatever the sizes.)
                self.shared.resume(st, self.shared.clock.now_nanos(), wake);
            }
            st.rate = rate;
            // Ordering: Relaxed; a configuration value (an acquire racing the
            // change may use either).
            self.shared
                .params
                .nanos_per_op
                .store(st.pools.nanos_per_op(), Ordering::Relaxed);
            Ok(())
        })
    }

    /// Applies a spec: its rate and burst ratio as
    /// [`configure`](Self::configure) does (the pools are kept), then its
    /// verb: `configure` changes nothing else, `start` starts an idle pool,
    /// `restart` clears the pools and the backlog, `stop` stops it.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`] or [`ConfigErrorKind::BurstRatio`]; nothing
    /// changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    ///
    /// let pool = TokenPool::from_spec(&"1000".parse()?).build()?;
    /// pool.apply(&"2000,1.05,restart".parse()?)?;
    /// assert_eq!(pool.rate().get(), 2000.0);
    /// assert_eq!(pool.burst_ratio(), 1.05);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply(&self, spec: &RateSpec) -> Result<(), ConfigError> {
        self.configure(spec.rate(), spec.burst_ratio())?;
        match spec.verb() {
            Verb::Configure => {}
            Verb::Start => self.start(),
            Verb::Restart => self.restart(),
            Verb::Stop => self.stop(),
        }
        Ok(())
    }

    /// Adds `nanos` tokens, as a fill would, and serves waiting callers with
    /// them; returns the pools' content, `active + waiting`. Only for
    /// [`Filling::Manual`]; starts an idle pool first. This is how tests and
    /// external drivers move the pool deterministically (nosqlbench's tests
    /// call `refill` the same way).
    ///
    /// # Errors
    ///
    /// [`TokenPoolError::NotManual`] for a pool that fills itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::{Filling, TokenPool};
    /// use ratekeeper::{ManualClock, Rate, RateLimiter};
    ///
    /// // nosqlbench's testBackfillFullRate at 1e7 ops/s, burst 1.1.
    /// let pool = TokenPool::builder(Rate::new(1e7)?)
    ///     .filling(Filling::Manual)
    ///     .build_with_clock(ManualClock::new(0))?;
    /// pool.try_acquire()?; // takes the op the start pre-filled
    /// assert_eq!(pool.refill(1_000_000)?, 1_000_000);
    /// assert_eq!(pool.refill(100)?, 1_000_100);
    /// assert_eq!(pool.backlog_nanos(), 90); // 10 moved to the burst pool
    /// assert_eq!(pool.refill(10)?, 1_000_110);
    /// assert_eq!(pool.backlog_nanos(), 99);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refill(&self, nanos: u64) -> Result<u64, TokenPoolError> {
        self.locked(|st, wake| {
            if st.mode != Filling::Manual {
                return Err(TokenPoolError::NotManual);
            }
            if !st.started {
                let now = self.shared.clock.now_nanos();
                self.begin(st, now, false, wake);
            }
            self.shared.refill_locked(st, nanos, wake);
            Ok(st.pools.wait_time())
        })
    }

    /// A snapshot of the pools: sizes, active and waiting tokens.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    /// use ratekeeper::Rate;
    ///
    /// let pools = TokenPool::new(Rate::new(1000.0)?)?.pools();
    /// assert_eq!(pools.max_active(), 2_000_000);
    /// assert_eq!(pools.max_over_active(), 2_200_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pools(&self) -> Pools {
        let mut st = lock(&self.shared.state);
        self.shared.settle(&mut st);
        let mut pools = st.pools.clone();
        pools.set_active(self.shared.active());
        pools
    }

    /// The waiting pool: the backlog, time that arrived while the active pool
    /// was full and that ops have not caught up yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    /// use ratekeeper::Rate;
    ///
    /// assert_eq!(TokenPool::new(Rate::new(1000.0)?)?.backlog_nanos(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn backlog_nanos(&self) -> u64 {
        let mut st = lock(&self.shared.state);
        self.shared.settle(&mut st);
        st.pools.waiting()
    }

    /// Tokens in the active pool now.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::TokenPool;
    /// use ratekeeper::Rate;
    ///
    /// let pool = TokenPool::new(Rate::new(1000.0)?)?;
    /// assert_eq!(pool.active_nanos(), 1_000_000); // one op, pre-filled
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn active_nanos(&self) -> u64 {
        self.shared.active()
    }

    /// Backlog checkpointed at earlier stops since the pool was built or
    /// restarted.
    pub fn accumulated_wait_nanos(&self) -> u64 {
        lock(&self.shared.state).accumulated
    }

    /// How many fills the pool has had (pre-fills included). A parked
    /// filler thread makes none: the time it was parked is added to the
    /// waiting pool without a fill (see [Idle pools](crate::pool#idle-pools)).
    pub fn fills(&self) -> u64 {
        lock(&self.shared.state).fills
    }

    /// How many callers are queued for tokens now.
    pub fn waiters(&self) -> usize {
        lock(&self.shared.state).queue.len()
    }

    /// The filling in effect: the one built with, or [`Filling::Inline`] if a
    /// filler thread could not be started.
    pub fn filling(&self) -> Filling {
        lock(&self.shared.state).mode
    }

    /// Whether the pool is started (metering).
    pub fn is_started(&self) -> bool {
        lock(&self.shared.state).started
    }

    /// Whether the [`Filling::Thread`] filler is parked because the pool is
    /// idle: the active pool is full and nobody waits, so a fill could only
    /// add to the backlog. A parked filler costs no CPU; a take, a caller
    /// that must wait, a new rate, a restart or a stop wakes it (see
    /// [Idle pools](crate::pool#idle-pools)). Always `false` for the other
    /// fillings.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use ratekeeper::pool::{Filling, TokenPool};
    /// use ratekeeper::{Rate, RateLimiter};
    ///
    /// let pool = TokenPool::builder(Rate::new(1000.0)?)
    ///     .filling(Filling::thread())
    ///     .build()?;
    /// // Nobody acquires: after a few fills of 1 ms the pool is full.
    /// let t = Instant::now();
    /// while !pool.is_filler_parked() {
    ///     assert!(t.elapsed() < Duration::from_secs(10), "never parked");
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// pool.acquire(); // a take from the full pool wakes it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_filler_parked(&self) -> bool {
        lock(&self.shared.state).parked
    }

    /// The current rate.
    pub fn rate(&self) -> Rate {
        lock(&self.shared.state).rate
    }

    /// The current burst ratio.
    pub fn burst_ratio(&self) -> f64 {
        lock(&self.shared.state).pools.burst_ratio()
    }

    /// Tokens (ns) per permit at the current rate, `floor(1e9 / rate)`.
    pub fn nanos_per_op(&self) -> u64 {
        // Ordering: Relaxed; a configuration snapshot.
        self.shared.params.nanos_per_op.load(Ordering::Relaxed)
    }

    /// The rate the pool actually meters, in operations per second: its
    /// fills add one token per nanosecond and each permit takes
    /// [`nanos_per_op`](Self::nanos_per_op) `= floor(1e9 / rate)` of them
    /// (G2's arithmetic, pinned by the conformance vectors), so
    /// `1e9 / floor(1e9 / rate)`, at the current rate (after a
    /// [`configure`](Self::configure), the new one).
    ///
    /// Never below [`rate`](Self::rate), and above it by less than one part
    /// in `nanos_per_op`; see [`Rate::effective_rate`]. The burst ratio
    /// changes only how fast a backlog is caught up, not this long-run rate.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratekeeper::pool::{Filling, TokenPool};
    /// use ratekeeper::{ManualClock, Rate};
    ///
    /// let pool = TokenPool::builder(Rate::new(1500.0)?)
    ///     .filling(Filling::Manual)
    ///     .build_with_clock(ManualClock::new(0))?;
    /// assert_eq!(pool.nanos_per_op(), 666_666); // 666 666.67 ns truncated
    /// assert_eq!(pool.effective_rate(), 1e9 / 666_666.0); // 1500.0015 ops/s
    /// pool.configure(Rate::new(5.1e8)?, 1.1)?;
    /// assert_eq!(pool.effective_rate(), 1e9); // 1.96 ns truncated to 1 ns
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn effective_rate(&self) -> f64 {
        per_second_of_nanos(self.nanos_per_op())
    }

    /// The clock this pool reads.
    pub fn clock_ref(&self) -> &C {
        &self.shared.clock
    }

    /// Whether a thread is blocked waiting on claim `id` (tests).
    #[cfg(all(test, not(loom)))]
    pub(super) fn claim_is_held(&self, id: u32) -> bool {
        let st = lock(&self.shared.state);
        st.position(id).is_some_and(|pos| st.queue[pos].held)
    }

    #[inline(never)]
    fn reserve_slow(
        &self,
        span: u64,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        let sh = &*self.shared;
        self.locked(|st, wake| {
            let now = sh.clock.now_nanos();
            sh.see(now);
            // A caller the full pool cannot serve at once: the filler must
            // run (a refused try costs it a fill or two before it parks
            // again).
            sh.resume(st, now, wake);
            if !st.started {
                self.begin(st, now, false, wake);
            }
            // Fill from the clock, but when the caller will wait anyway, only
            // once a fill's worth of time has passed: callers that outrun the
            // rate find the pool empty on almost every op, and filling a few
            // ns of tokens each time would put every op through this lock.
            // A caller with a maximum wait fills whatever has passed, so that
            // its answer is exact.
            if st.mode == Filling::Inline
                && (max_wait.is_some() || elapsed_nanos(st.last_fill, now) >= sh.fill_granule(st))
            {
                sh.fill_from_clock(st, now, wake);
            }
            if st.queue.is_empty() {
                if let Some(taken) = sh.try_take(span) {
                    // Ordering: Relaxed; see `grant_now`.
                    let scheduled = taken.wrapping_add(sh.params.base.load(Ordering::Relaxed));
                    return Ok(Grant::new(scheduled.min(now), now, now, permits));
                }
            }
            // The tokens owed once this claim is queued, exactly: `owed` is
            // the sum of the queued claims' `remaining`, which `distribute`
            // and `cancel` subtract exactly, so it must never saturate. A
            // total past `u64::MAX` tokens is more clock time than a `u64`
            // can count: the claim would never fill.
            let Some(owed) = st.owed.checked_add(span) else {
                return Err(AcquireError::ScheduleExhausted);
            };
            let active = sh.active();
            let wait = owed.saturating_sub(active);
            if st.last_fill.max(now).checked_add(wait).is_none() {
                // Its tokens are clock time counted from the latest fill (a
                // reading behind it is no time passing), time the clock
                // cannot count any more near `u64::MAX`: it would never
                // fill.
                return Err(AcquireError::ScheduleExhausted);
            }
            if let Some(max) = max_wait {
                if wait > saturating_nanos(max) {
                    return Err(AcquireError::WouldWait {
                        wait: Duration::from_nanos(wait),
                        max_wait: max,
                    });
                }
            }
            // Its tokens come after those still owed to the claims ahead.
            let taken = sh.taken.load(Ordering::Acquire);
            let scheduled = taken
                .wrapping_add(st.owed)
                .wrapping_add(sh.params.base.load(Ordering::Relaxed));
            let id = st.queue.push(span, (scheduled, now, permits));
            st.owed = owed;
            sh.serve(st, wake);
            let ready = now.saturating_add(st.owed);
            let grant = Grant::new(scheduled, ready, now, permits).with_claim(id);
            // `Grant::new` may raise `ready`, never `scheduled`: the identity
            // recorded is the grant's.
            debug_assert_eq!(grant.scheduled_nanos(), scheduled);
            Ok(grant)
        })
    }

    /// [`RateLimiter::poll_grant`] for claim `id` of `grant`.
    fn poll_claim(&self, grant: &Grant, id: u32, waker: &Waker) -> Readiness {
        let sh = &*self.shared;
        let own = (
            grant.scheduled_nanos(),
            grant.started_nanos(),
            grant.permits(),
        );
        let queued = |st: &State| st.position(id).filter(|&pos| st.queue[pos].grant == own);
        self.locked(|st, wake| {
            if queued(st).is_none() {
                // Completed (its id is gone, or another claim's now).
                return Readiness::Go;
            }
            let now = sh.clock.now_nanos();
            sh.see(now);
            if !st.started {
                self.begin(st, now, false, wake);
            }
            let refilling = st.mode == Filling::Inline && !st.filler_busy;
            if refilling {
                sh.fill_from_clock(st, now, wake);
            }
            let Some(pos) = queued(st) else {
                return Readiness::Go;
            };
            let claim = &mut st.queue[pos];
            if !matches!(&claim.waiter, Some(Wake::Task(w)) if w.will_wake(waker)) {
                claim.waiter = Some(Wake::Task(waker.clone()));
            }
            if refilling {
                let span = sh.refill_span(st, pos, now);
                Readiness::Pending(Some(now.saturating_add(span)))
            } else {
                Readiness::Pending(None)
            }
        })
    }

    #[inline(never)]
    fn wait_for_claim(&self, grant: Grant, id: u32) -> Grant {
        match self.wait_claim(grant, id, None) {
            Ok(g) => g,
            // Without a deadline the wait only ends with the tokens.
            Err(_) => grant,
        }
    }

    /// Waits until claim `id` has its tokens, or until `deadline` (clock
    /// nanoseconds). On a deadline the claim is withdrawn and the tokens it
    /// still needed are returned as the error.
    fn wait_claim(&self, grant: Grant, id: u32, deadline: Option<u64>) -> Result<Grant, u64> {
        let sh = &*self.shared;
        let mut wake = Vec::new();
        let mut st = lock(&sh.state);
        loop {
            let Some(pos) = st.position(id) else {
                drop(st);
                wake_all(&mut wake);
                let now = sh.clock.now_nanos();
                sh.see(now);
                let scheduled = grant.scheduled_nanos().min(now);
                return Ok(Grant::new(scheduled, now, now, grant.permits()));
            };
            st.queue[pos].held = true;
            let now = sh.clock.now_nanos();
            if !st.started {
                self.begin(&mut st, now, false, &mut wake);
                continue;
            }
            if let Some(d) = deadline {
                if now >= d {
                    let left = sh.cancel(&mut st, pos, &mut wake);
                    drop(st);
                    wake_all(&mut wake);
                    return Err(left);
                }
            }
            if st.mode == Filling::Inline && !st.filler_busy {
                // Refill for the queue: sleep until this claim's tokens are
                // due, then fill from the clock. Counted from the last fill,
                // each fill covers
                //
                // * at least the fill granule (500 µs on real clocks,
                //   0 on exact ones): at high rates one fill then serves a
                //   group of ops instead of one sleep per op;
                // * at most half the active pool, so that a filler whose
                //   claim is behind claims nobody blocks on (reservations,
                //   async waits) completes those as their tokens come, in
                //   groups no larger than half the pool, instead of all at
                //   the end of its own sleep. (Before fills served
                //   claims first, the cap also kept the waiters' tokens out
                //   of the waiting pool: a 5-op claim at 1000 ops/s finished
                //   at 5.8 ms instead of 4 ms with one fill.) The loop naps
                //   again for the rest.
                //
                // The sleep is shortened by the clock's typical lateness (the
                // lead) so that it ends about on time.
                st.filler_busy = true;
                let span = sh.refill_span(&st, pos, now);
                let lead = sh.clock.sleep_overshoot_nanos();
                let mut nap = wait::refill_nap_nanos(span, lead);
                if let Some(d) = deadline {
                    nap = nap.min(d - now);
                }
                drop(st);
                wake_all(&mut wake);
                sh.clock.sleep_nanos(nap);
                st = lock(&sh.state);
                st.filler_busy = false;
                if st.started {
                    let now = sh.clock.now_nanos();
                    sh.fill_from_clock(&mut st, now, &mut wake);
                }
                if st.position(id).is_none() {
                    // Done: another waiter takes over the refilling.
                    sh.hand_over(&st, &mut wake);
                }
                continue;
            }
            st.queue[pos].waiter = Some(Wake::Thread(sync::current_thread()));
            drop(st);
            wake_all(&mut wake);
            match deadline {
                None => sync::park(),
                Some(d) => sync::park_timeout(Duration::from_nanos(d.saturating_sub(now))),
            }
            st = lock(&sh.state);
        }
    }
}

impl<C: Clock + 'static> RateLimiter for TokenPool<C> {
    /// Takes `permits` ops' tokens from the active pool if it holds them (one
    /// compare-exchange, no lock); otherwise queues a claim behind earlier
    /// ones, unless `max_wait` is shorter than the tokens still missing.
    ///
    /// A queued claim receives tokens from the fills that follow, first come,
    /// first served; its grant's `ready` time is an estimate (tokens arrive at
    /// one per nanosecond, faster while a backlog drains) and
    /// [`wait_for`](RateLimiter::wait_for) waits for the tokens themselves.
    /// A claim whose tokens are time the clock cannot count to is refused
    /// with [`AcquireError::ScheduleExhausted`]: it would never be served.
    /// That is a claim whose wait, from the later of now and the latest
    /// fill, passes `u64::MAX`, or whose tokens together with those still
    /// owed to the claims ahead of it pass `u64::MAX` (possible only at
    /// rates of about one op per century, where a few claims' tokens add up
    /// to 584 years). The claims already queued are unaffected, and
    /// cancelling them gives back exactly what they took.
    // Always inlined, as the Pacer's: the lock-free path is small.
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        // Ordering: Relaxed; a configuration snapshot.
        let npo = self.shared.params.nanos_per_op.load(Ordering::Relaxed);
        let span = u64::from(permits).saturating_mul(npo);
        if span > MAX_SPAN {
            return Err(AcquireError::InsufficientCapacity {
                requested: permits,
                max: u32::try_from(MAX_SPAN / npo.max(1)).unwrap_or(u32::MAX),
            });
        }
        if let Some(taken) = self.shared.try_take(span) {
            // Ordering: Relaxed; the take's AcqRel compare-exchange on
            // `taken` comes after the one that parked the filler, if any, and
            // synchronises with it (see `Shared::try_park`).
            if self.shared.params.idle.load(Ordering::Relaxed) {
                self.shared.wake_filler();
            }
            return Ok(self.shared.grant_now(taken, permits));
        }
        self.reserve_slow(span, permits, max_wait)
    }

    #[inline]
    fn clock(&self) -> &dyn Clock {
        &self.shared.clock
    }

    fn wait_policy(&self) -> WaitPolicy {
        self.shared.policy
    }

    /// `backlog_nanos` is the waiting pool; `total_wait_nanos` adds the
    /// backlog checkpointed at stops.
    fn wait_stats(&self) -> WaitStats {
        let mut st = lock(&self.shared.state);
        self.shared.settle(&mut st);
        let backlog = st.pools.waiting();
        WaitStats {
            backlog_nanos: backlog,
            total_wait_nanos: backlog.saturating_add(st.accumulated),
        }
    }

    /// Waits for a queued claim's tokens: woken by the fill that completes
    /// it (with [`Filling::Inline`], one waiter at a time sleeps until the
    /// tokens are due and fills). A grant whose tokens were taken at once is
    /// returned as it is.
    #[inline(always)]
    fn wait_for(&self, grant: Grant) -> Grant {
        match grant.claim() {
            None => grant,
            Some(id) => self.wait_for_claim(grant, id),
        }
    }

    /// A grant whose tokens were taken at once goes at its ready time, as
    /// for every limiter. A claim goes once it has its tokens, not at its
    /// estimated ready time: until then the answer is
    /// [`Readiness::Pending`], and the fill that completes the claim wakes
    /// `waker` (a fill of any kind: [`Filling::Thread`]'s,
    /// [`TokenPool::refill`], another waiter's). With [`Filling::Inline`]
    /// and no blocked thread refilling, the async waiters do the refilling:
    /// each ask fills from the clock, and the answer says when to ask again
    /// (when the claim's tokens are due, at least the fill granule and at
    /// most half the active pool after the last fill, as a blocking
    /// waiter's sleep).
    fn poll_grant(&self, grant: &Grant, now: u64, waker: &Waker) -> Readiness {
        match grant.claim() {
            Some(id) => self.poll_claim(grant, id, waker),
            None if grant.ready_nanos() <= now => Readiness::Go,
            None => Readiness::SleepUntil(grant.ready_nanos()),
        }
    }

    /// Withdraws a queued claim; see
    /// [Cancelling a reservation](crate::pool#cancelling-a-reservation).
    fn cancel(&self, grant: &Grant) -> bool {
        let Some(id) = grant.claim() else {
            return false;
        };
        let sh = &*self.shared;
        self.locked(|st, wake| {
            let Some(pos) = st.position(id) else {
                return false;
            };
            let claim = &st.queue[pos];
            let own = (
                grant.scheduled_nanos(),
                grant.started_nanos(),
                grant.permits(),
            );
            if claim.held || claim.grant != own {
                return false;
            }
            sh.cancel(st, pos, wake);
            true
        })
    }

    /// As for every limiter, but the deadline is kept however late the fills
    /// are: a caller still queued at the deadline withdraws its claim (tokens
    /// it had received go to the callers behind it) and gets
    /// [`AcquireError::WouldWait`].
    fn acquire_timeout(&self, permits: u32, timeout: Duration) -> Result<Grant, AcquireError> {
        let grant = self.reserve(permits, Some(timeout))?;
        let Some(id) = grant.claim() else {
            return Ok(grant);
        };
        let deadline = grant
            .started_nanos()
            .saturating_add(saturating_nanos(timeout));
        self.wait_claim(grant, id, Some(deadline))
            .map_err(|left| AcquireError::WouldWait {
                wait: timeout.saturating_add(Duration::from_nanos(left)),
                max_wait: timeout,
            })
    }
}

impl<C> Drop for TokenPool<C> {
    fn drop(&mut self) {
        let handle = lock(&self.shared.state).filler.take();
        if let Some(h) = handle {
            h.stop();
        }
    }
}

impl<C> fmt::Debug for TokenPool<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.shared.state);
        f.debug_struct("TokenPool")
            .field("rate", &st.rate)
            .field("burst_ratio", &st.pools.burst_ratio())
            .field("filling", &st.mode)
            .field("started", &st.started)
            .field("waiting_nanos", &st.pools.waiting())
            .field("waiters", &st.queue.len())
            .finish_non_exhaustive()
    }
}
