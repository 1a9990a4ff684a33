//! [`TokenPool`]: the pools of [`Pools`] as a thread-safe rate limiter.

use std::fmt;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use super::claims::{wake_all, Wake};
use super::filler::Handle;
use super::filling::{Filling, TokenPoolError};
use super::pools::Pools;
use super::shared::{Shared, State};
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::limiter::{refused, AcquireError, Grant, RateLimiter, Readiness, WaitStats};
use crate::rate::{per_second_of_nanos, Rate};
use crate::spec::{RateSpec, Verb};
use crate::sync::{lock, Ordering};
use crate::wait::{saturating_nanos, WaitPolicy};

/// The most tokens one reservation may take: 2^62 ns, the longest op slice a
/// [`Rate`] may have.
const MAX_SPAN: u64 = crate::rate::MAX_NANOS_PER_OP;

/// nosqlbench's hybrid rate limiter: a token pool of nanoseconds with
/// active, burst and waiting pools (see the [module docs](crate::pool)).
///
/// Share it by reference or in an `Arc`. A caller that finds too few tokens
/// queues (first come, first served) and is woken by the fill that gives it
/// enough, not by polling.
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
    pub(super) shared: Arc<Shared<C>>,
}

impl<C: Clock + 'static> TokenPool<C> {
    /// The pool over `shared`.
    pub(super) fn from_shared(shared: Shared<C>) -> TokenPool<C> {
        TokenPool {
            shared: Arc::new(shared),
        }
    }
}

impl<C: Clock + 'static> TokenPool<C> {
    /// Starts metering from now: pools emptied, one op pre-filled, a
    /// [`Filling::Thread`] filler started; `reset` also clears the
    /// checkpointed wait.
    pub(super) fn begin(&self, st: &mut State, now: u64, reset: bool, wake: &mut Vec<Wake>) {
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

    pub(super) fn locked<R>(&self, f: impl FnOnce(&mut State, &mut Vec<Wake>) -> R) -> R {
        let mut wake = Vec::new();
        let mut st = lock(&self.shared.state);
        let r = f(&mut st, &mut wake);
        drop(st);
        wake_all(&mut wake);
        r
    }

    /// Starts an idle pool (spec verb `start`): the schedule begins now, one
    /// op is pre-filled, a filler thread starts. No effect on a started pool.
    pub fn start(&self) {
        self.locked(|st, wake| {
            if !st.started {
                let now = self.shared.clock.now_nanos();
                self.begin(st, now, false, wake);
            }
        });
    }

    /// Starts afresh (spec verb `restart`): pools, backlog and accumulated
    /// wait cleared, one op pre-filled, the schedule begins now. Callers
    /// already waiting keep their place.
    pub fn restart(&self) {
        self.locked(|st, wake| {
            let now = self.shared.clock.now_nanos();
            self.begin(st, now, true, wake);
        });
    }

    /// Stops metering (spec verb `stop`): the backlog is checkpointed into
    /// the total wait, the pools emptied, a filler thread stopped and joined
    /// before this returns. The next acquire starts the pool afresh.
    pub fn stop(&self) {
        if let Some(h) = self.locked(|st, wake| self.shared.halt(st, wake)) {
            h.stop();
        }
    }

    /// Changes the rate and burst ratio, keeping the pools (G2's `apply`):
    /// the next fill moves any excess over the new `max_over_active` back to
    /// the waiting pool. Waiting claims keep the tokens they asked for.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) or
    /// [`ConfigErrorKind::BurstRatio`](crate::ConfigErrorKind::BurstRatio); nothing
    /// changes.
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

    /// Applies a spec: [`configure`](Self::configure) with its rate and
    /// burst ratio, then its verb ([`start`](Self::start),
    /// [`restart`](Self::restart), [`stop`](Self::stop), or nothing).
    ///
    /// # Errors
    ///
    /// As [`configure`](Self::configure).
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

    /// Adds `nanos` tokens as a fill would, serving waiting callers; returns
    /// `active + waiting`. For tests and external drivers of a
    /// [`Filling::Manual`] pool; starts an idle pool first.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`](crate::ConfigError) for the reason
    /// [`NotManual`](crate::ConfigReason::NotManual) for a pool that fills
    /// itself.
    pub fn refill(&self, nanos: u64) -> Result<u64, crate::ConfigError> {
        self.locked(|st, wake| {
            if st.mode != Filling::Manual {
                return Err(TokenPoolError::NotManual.into());
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
    pub fn pools(&self) -> Pools {
        let mut st = lock(&self.shared.state);
        self.shared.settle(&mut st);
        let mut pools = st.pools.clone();
        pools.set_active(self.shared.active());
        pools
    }

    /// The waiting pool: the backlog not caught up yet.
    pub fn backlog_nanos(&self) -> u64 {
        let mut st = lock(&self.shared.state);
        self.shared.settle(&mut st);
        st.pools.waiting()
    }

    /// Tokens in the active pool now.
    pub fn active_nanos(&self) -> u64 {
        self.shared.active()
    }

    /// Backlog checkpointed at earlier stops since the pool was built or
    /// restarted.
    pub fn accumulated_wait_nanos(&self) -> u64 {
        lock(&self.shared.state).accumulated
    }

    /// How many fills the pool has had (pre-fills included; a parked filler
    /// makes none, see [Idle pools](crate::pool#idle-pools)).
    pub fn fills(&self) -> u64 {
        lock(&self.shared.state).fills
    }

    /// How many callers are queued for tokens now.
    pub fn waiters(&self) -> usize {
        lock(&self.shared.state).queue.len()
    }

    /// The filling in effect ([`Filling::Inline`] if a filler thread could
    /// not be started).
    pub fn filling(&self) -> Filling {
        lock(&self.shared.state).mode
    }

    /// Whether the pool is started (metering).
    pub fn is_started(&self) -> bool {
        lock(&self.shared.state).started
    }

    /// Whether the [`Filling::Thread`] filler is parked because the pool is
    /// idle ([Idle pools](crate::pool#idle-pools)); `false` for the other
    /// fillings.
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

    /// The rate the pool actually meters, `1e9 / floor(1e9 / rate)` ops per
    /// second (G2's arithmetic): never below [`rate`](Self::rate), above it
    /// by less than one part in `nanos_per_op` ([`Rate::effective_rate`]).
    /// The burst ratio does not change it.
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
}

impl<C: Clock + 'static> RateLimiter for TokenPool<C> {
    /// Takes `permits` ops' tokens from the active pool if it holds them (one
    /// compare-exchange, no lock); otherwise queues a claim, unless
    /// `max_wait` is shorter than the tokens still missing. A claim is served
    /// by later fills in order; its `ready` time is an estimate, and
    /// [`wait_for`](RateLimiter::wait_for) waits for the tokens themselves.
    /// A claim whose tokens (with those owed ahead of it) pass `u64::MAX` is
    /// refused with [`AcquireError::ScheduleExhausted`].
    // Always inlined, as the Pacer's: the lock-free path is small.
    #[inline(always)]
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        // Ordering: Relaxed; a configuration snapshot.
        let npo = self.shared.params.nanos_per_op.load(Ordering::Relaxed);
        let span = span_of(permits, npo)?;
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

    /// [`RateLimiter::acquire`]'s steps (`reserve(1, None)`, `wait_for`),
    /// with the lock-free take's grant kept in registers: the queued path
    /// comes back as words (`Grant::to_words`), so the paths merge as
    /// values rather than through the memory a call returned into.
    #[inline(always)]
    fn acquire(&self) -> Grant {
        // Ordering: Relaxed; a configuration snapshot, as in `reserve`.
        let npo = self.shared.params.nanos_per_op.load(Ordering::Relaxed);
        let span = match span_of(1, npo) {
            Ok(span) => span,
            Err(e) => refused(e),
        };
        if let Some(taken) = self.shared.try_take(span) {
            // Ordering: Relaxed, as in `reserve`.
            if self.shared.params.idle.load(Ordering::Relaxed) {
                self.shared.wake_filler();
            }
            // No claim: `wait_for` would return it as it is.
            return self.shared.grant_now(taken, 1);
        }
        Grant::from_words(self.acquire_queued(span))
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

    /// Waits for a queued claim's tokens, woken by the fill that completes
    /// it (inline filling: one waiter at a time sleeps and fills).
    #[inline(always)]
    fn wait_for(&self, grant: Grant) -> Grant {
        match grant.claim() {
            None => grant,
            Some(id) => self.wait_for_claim(grant, id),
        }
    }

    /// A claim goes once it has its tokens: until then
    /// [`Readiness::Pending`], and the fill that completes it wakes `waker`.
    /// With [`Filling::Inline`] and no blocked thread refilling, each ask
    /// fills from the clock and says when to ask again.
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

    /// The deadline holds however late the fills are: a caller still queued
    /// then withdraws its claim and gets [`AcquireError::WouldWait`].
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

impl<C: Clock + 'static> TokenPool<C> {
    /// `acquire` when the lock-free take found too few tokens: the rest of
    /// `reserve(1, None)`, then `wait_for`, as words.
    #[cold]
    #[inline(never)]
    fn acquire_queued(&self, span: u64) -> [u64; 4] {
        match self.reserve_slow(span, 1, None) {
            Ok(g) => self.wait_for(g).to_words(),
            Err(e) => refused(e),
        }
    }
}

/// `permits` ops of `npo` tokens, or the refusal of a request the pool can
/// never hold.
#[inline(always)]
fn span_of(permits: u32, npo: u64) -> Result<u64, AcquireError> {
    let span = u64::from(permits).saturating_mul(npo);
    if span > MAX_SPAN {
        return Err(AcquireError::InsufficientCapacity {
            requested: permits,
            max: u32::try_from(MAX_SPAN / npo.max(1)).unwrap_or(u32::MAX),
        });
    }
    Ok(span)
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
