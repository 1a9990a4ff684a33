//! nosqlbench's hybrid rate limiter: a token pool of nanoseconds, with
//! active, burst and waiting pools.
//!
//! From late 2018 until nosqlbench 5.17, nosqlbench paced its operations with
//! a *token pool* (its "G2" design): one token is one nanosecond of schedule
//! time, a filler adds the nanoseconds it measured since its last fill, and
//! every operation takes `floor(1e9 / rate)` of them. Idle time is banked, up
//! to a small bound, and time nobody used in time becomes a *backlog* that is
//! caught up at a limited burst rate. Two types:
//!
//! * [`TokenPool`], the rate limiter: thread-safe, lock-free when tokens are
//!   there, first come first served when they are not, with per-op wait time.
//! * [`Pools`], the pool's state and arithmetic alone, exactly as G2 computes
//!   it, with no thread, clock or waiting: you pass it elapsed time, it tells
//!   you what an operation may take. It is how the conformance vectors drive
//!   the pool deterministically, and how the limiter computes every fill.
//!
//! ```
//! use ratekeeper::{RateLimiter, Rate, TokenPool};
//!
//! // 1000 ops/s; a backlog is caught up at up to 1100 ops/s.
//! let pool = TokenPool::from_spec(&"1000,1.1".parse()?).build()?;
//! let grant = pool.acquire(); // the start pre-filled one op: no wait
//! // ... do the op; response time = end - grant.scheduled_nanos()
//! assert_eq!(pool.wait_stats().backlog_nanos, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Contents
//!
//! * [The three pools](#the-three-pools), [Sizing](#sizing) and
//!   [The refill step](#the-refill-step): G2's arithmetic.
//! * [The limiter](#the-limiter): taking tokens, waiting, filling.
//! * [Serving waiting callers first](#serving-waiting-callers-first): why an
//!   inline pool loses no time to late fills.
//! * [Choosing the filling](#choosing-the-filling).
//! * [Idle pools](#idle-pools): what a pool costs while nobody acquires.
//! * [Wait time](#wait-time): per op, backlog, total.
//! * [Verbs and runtime changes](#verbs-and-runtime-changes).
//! * [Cancelling a reservation](#cancelling-a-reservation).
//! * [Memory ordering and invariants](#memory-ordering-and-invariants).
//! * [Overflow](#overflow) and
//!   [Differences from nosqlbench](#differences-from-nosqlbench).
//!
//! The arithmetic alone:
//!
//! ```
//! use ratekeeper::{Pools, Rate};
//!
//! // 1000 ops/s: one op is 1 ms of tokens; up to 10 % burst to catch up.
//! let mut pools = Pools::new(Rate::new(1000.0)?, 1.1)?;
//! pools.refill(1_000_000); // the filler measured 1 ms
//! assert!(pools.try_take_op().is_some()); // one op may go
//! assert!(pools.try_take_op().is_none()); // the next must wait for a fill
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The three pools
//!
//! ```text
//!                 refill(elapsed ns)
//!                        |
//!                        v
//!  +----------------------------------+   overflow    +--------------------+
//!  | active pool                      | ------------> | waiting pool       |
//!  |   0 ..= max_active               |               |   the backlog:     |
//!  | - - - - - - - - - - - - - - - - -|  burst fill   |   time nobody used |
//!  | burst pool                       | <------------ |   in time          |
//!  |   max_active ..= max_over_active |  (see below)  |                    |
//!  +----------------------------------+               +--------------------+
//!                        |
//!                        v
//!            takers: nanos_per_op per op
//! ```
//!
//! * The **active pool** holds the tokens takers may use now, normally up to
//!   `max_active`.
//! * The **burst pool** is the room between `max_active` and
//!   `max_over_active`: the active pool may grow into it, but only with tokens
//!   moved back from the waiting pool.
//! * The **waiting pool** holds the time that arrived while the active pool
//!   was full: callers did not keep up, so this much of the schedule is
//!   overdue. nosqlbench calls it "a direct measure of wait time in ns".
//!
//! Tokens are neither created nor destroyed inside the pools: they arrive by
//! [`refill`](Pools::refill), move between the pools, and leave only through a
//! take or a [`restart`](Pools::restart). (The one exception is the bound below
//! which no real backlog reaches: see [Overflow](#overflow).)
//!
//! # Sizing
//!
//! For a rate R and a burst ratio B (at least 1.0):
//!
//! ```text
//! nanos_per_op    = floor(1e9 / R)
//! max_active      = max(1_000_000, floor(nanos_per_op * 2.0))   // max(1 ms, 2 ops)
//! max_over_active = floor(max_active * B)
//! burst_pool      = max_over_active - max_active
//! ```
//!
//! One op takes `nanos_per_op` tokens and fills add one token per
//! nanosecond, so the pool meters `1e9 / floor(1e9 / R)` ops per second,
//! slightly above R where `1e9 / R` is not whole (5.1e8/s runs at 1e9/s):
//! [`TokenPool::effective_rate`] reports it.
//!
//! * **At least two ops.** With room for only one op, a caller running exactly
//!   at the filler's pace would see the active pool overflow whenever a fill
//!   arrives just before the op takes its share, and that jitter would be
//!   counted as backlog. Two ops of room absorb it.
//! * **At least 1 ms.** The filler runs about once per millisecond and adds
//!   what it measured. A pool smaller than one fill would overflow on every
//!   fill, again turning ordinary operation into backlog. The consequence is
//!   "op bulking" above 2000 ops/s: at 1 000 000 ops/s up to 1000 ops may
//!   start together right after a fill. Below 2000 ops/s the two-op rule
//!   dominates, and how strictly ops are spaced is up to the burst ratio.
//!
//! nosqlbench keeps the pool size out of the user's hands for these reasons;
//! only engineblock's test-only constructor, [`Pools::with_pool_size`], sets it
//! directly.
//!
//! # The refill step
//!
//! [`Pools::refill`] adds `new` tokens, the nanoseconds elapsed since the last
//! fill:
//!
//! ```text
//! to_active    = min(new, max(max_active - active, 0))
//! active      += to_active
//! waiting     += new - to_active                          // the overflow
//! factor       = min(new / max_active, 1.0)               // in f64
//! allowed      = min(max_over_active - active, floor(factor * burst_pool))
//! fill         = min(allowed, waiting)
//! waiting     -= fill
//! active      += fill
//! ```
//!
//! The **jitter normalisation** is `factor`: the burst fill is proportional to
//! the time this fill covers, so one fill of a whole `max_active` or ten fills
//! of a tenth each move the same number of tokens from the waiting pool back
//! to the active pool, however irregular the filler's wake-ups are. While a
//! backlog exists and callers keep up, the backlog thus drains at
//! `(B - 1) × elapsed time` and operations run at `B × R`; after an idle
//! stall of length T they run at `B × R` for about `T / (B - 1)` and then at
//! R. With B = 1.0 the burst pool is empty and a backlog is never recovered.
//!
//! Up to `max_active` of idle time is banked in the active pool (and released
//! at once when callers return); only time beyond that reaches the waiting
//! pool.
//!
//! `allowed` is negative when the active pool holds more than
//! `max_over_active`, which happens only after [`Pools::apply`] shrank the
//! pools: the next refill then moves the excess from the active pool back to
//! the waiting pool. So after every refill `active <= max_over_active`.
//!
//! # The limiter
//!
//! [`TokenPool`] keeps the active pool in two counters that only grow,
//! `filled` and `taken` (active = `filled − taken`), and everything else (the
//! waiting pool, the sizes, the queue of waiting callers) behind a mutex.
//!
//! * **Taking.** A caller that finds enough tokens takes them with one
//!   compare-exchange on `taken`, without the lock: the common path at any
//!   rate where callers do not outrun the pool.
//! * **Queueing.** A caller that finds too few queues a *claim* for its
//!   tokens, behind earlier claims. Each fill serves the queue first, oldest
//!   claim first, with whatever the active pool then holds; a claim may be
//!   served across several fills, so a request larger than the pool (say 5
//!   ops at 1000 ops/s, where the pool holds 2.2) completes too. The fill
//!   that completes a claim wakes its waiter (`unpark`): no polling, no
//!   spinning. Fills hand tokens to claims directly, so while anyone waits
//!   the active pool stays empty and no later caller can overtake a waiting
//!   one.
//! * **Not now.** [`try_acquire`](crate::RateLimiter::try_acquire) takes
//!   tokens only if they are there (and nobody is queued), and otherwise
//!   refuses, queueing nothing, with the tokens still missing as the wait.
//!   [`acquire_timeout`](crate::RateLimiter::acquire_timeout) refuses at once
//!   when the missing tokens exceed the timeout; if fills come late and the
//!   deadline passes while it waits, its claim is withdrawn and the tokens it
//!   had received go to the claims behind it.
//!
//! **Who decides, who waits.** As for every limiter,
//! [`poll_grant`](crate::RateLimiter::poll_grant) is what decides whether a
//! claim may go (`Pending` until a fill completes it), and the async waiter
//! and [`wait_for_or_stop`](crate::RateLimiter::wait_for_or_stop) drive it. A
//! *blocking* waiter of an inline pool is more than a waiter, though: it is
//! the pool's filler while it sleeps (one at a time, the others parked until
//! a fill completes their claims), and it holds its claim against
//! cancellation while it does. So [`wait_for`](crate::RateLimiter::wait_for)
//! and [`acquire_timeout`](crate::RateLimiter::acquire_timeout) keep a loop
//! of their own under the pool's lock. Driven through `poll_grant` instead,
//! every blocked thread would sleep to its own tokens' due time and fill,
//! N sleeping fillers where one suffices; the sleep itself is still the
//! waiting module's formula (`wait::refill_nap_nanos`).
//!
//! Tokens come from one of three [`Filling`]s, always as elapsed time
//! measured on the pool's clock since the previous fill:
//!
//! * [`Filling::Inline`] (the default): callers fill. A caller that finds the
//!   pool short first fills it with the time elapsed since the last fill; if
//!   it must still wait and nobody else is filling, it sleeps until its
//!   tokens are due, fills, and serves the queue, while other waiters sleep
//!   until a fill completes their claims. No thread, and nothing runs while
//!   the pool is idle.
//! * [`Filling::Thread`]: nosqlbench's `TokenFiller`, a thread that fills
//!   every interval (1 ms by default) and parks while the pool is idle (see
//!   [Idle pools](#idle-pools)). It starts with the pool and is stopped and
//!   joined by [`TokenPool::stop`] and when the pool is dropped.
//! * [`Filling::Manual`]: only [`TokenPool::refill`] adds tokens.
//!
//! Because of the [jitter normalisation](#the-refill-step), one fill covering
//! a long time and many fills covering its parts move the same tokens: after
//! an idle period of any length both fillings leave the pools in the same
//! state, so the two modes differ only in when tokens become visible to
//! callers, not in how many.
//!
//! # Serving waiting callers first
//!
//! With [`Filling::Inline`], a fill that finds claims queued gives them the
//! tokens it measured **before** G2's step sees the rest: the first
//! `min(elapsed, owed)` tokens go to the claims as they arrive, and only
//! what is left fills the active pool and, beyond `max_active`, overflows to
//! the waiting pool. The burst fill is still proportional to the whole
//! elapsed time the fill covers.
//!
//! Without this, a fill that comes late while callers wait (an async task
//! woken on a 1 ms timer tick and a little after it, a thread the scheduler
//! ran late) covers more than the 1 ms the active pool holds, and G2's step
//! counts the excess as backlog, time nobody used in time, although the
//! waiting callers were owed every token of it; burst 1.1 then returns it
//! at a tenth of the rate, and async tasks at high rates fell short this
//! way (`BENCHMARKS.md`). A caller
//! polling the pool continuously would have taken each token the moment it
//! was measured; serving the queue first gives waiting callers exactly that,
//! however late the fill. Time that passes while nobody waits still
//! overflows as in G2, so idle time is banked up to `max_active` and the
//! rest is backlog, caught up at the burst ratio.
//!
//! [`Filling::Thread`] keeps G2's step as it is (nosqlbench's own filler:
//! its late fills overflow while callers wait, see below), and
//! [`Filling::Manual`] applies [`Pools::refill`] exactly, so that the pools
//! can be checked against the reference.
//!
//! # Choosing the filling
//!
//! [`Filling::Inline`] is the default: it holds the rate with short waits
//! where a 1 ms filler thread falls behind when its fills come late, and it
//! needs no thread. `BENCHMARKS.md` (the token pool's section) has the
//! measurements behind this choice, at 10 000 ops/s (`ratekeeper pace
//! --limiter pool --fill <inline|thread>`) and at 1e7 ops/s with 1 to 8
//! threads (the `pool_throughput` measurement program), where every
//! filling held the rate within 1 %.
//!
//! Why inline:
//!
//! * **No lost throughput when fills are late.** A filler thread's fill
//!   covers the time since its last one. At 2000 ops/s and above the active
//!   pool holds 1 ms, so a 1 ms filler that wakes late (on a loaded machine
//!   it wakes a little after every interval) overflows the excess into the
//!   waiting pool *while callers are waiting for it*, and burst 1.1 moves
//!   back only 0.1 ms per fill: the backlog grows and the rate falls short.
//!   This is G2's own behaviour, kept as it is;
//!   nosqlbench's later releases filled every 0.1 ms for this reason. Inline
//!   fills serve the waiting callers first (see
//!   [Serving waiting callers first](#serving-waiting-callers-first)), and
//!   a blocked caller's fill covers at most half the active pool anyway.
//! * **No thread at all**: a thread filler costs no CPU while its pool is
//!   idle (it parks, see [Idle pools](#idle-pools)), but each pool holds a
//!   thread, and the first take after an idle spell takes the lock once to
//!   wake it.
//! * **Shorter waits**: a waiting caller's fill covers the wait policy's
//!   fill granule (500 µs by default) rather than the filler's interval plus its lateness, so ops
//!   leave in smaller groups.
//!
//! The 1 ms thread filler costs less CPU per op at moderate rates (one fill
//! per interval whatever the callers do, against one sleep per group of ops
//! that a waiting caller makes inline); choose it, with an interval of
//! 0.1 ms as nosqlbench's later releases did, for nosqlbench's own
//! behaviour.
//!
//! # Idle pools
//!
//! A pool is *idle* when nobody is queued and its active pool is full to
//! `max_over_active`. G2's [refill step](#the-refill-step) then moves
//! nothing into the active pool (it has no room, and the burst fill none
//! either): every token a fill measures overflows to the waiting pool. So a
//! [`Filling::Thread`] filler whose fill leaves the pool idle parks, with no
//! timeout, instead of waking every interval only to add to the backlog
//! (see [`TokenPool::is_filler_parked`]):
//!
//! * **What it costs.** Nothing but a parked thread (its stack and a kernel
//!   task): no wake-ups and no CPU, however long the pool stays idle. A
//!   pool that has just started or just served callers fills up within a few
//!   fills (the active pool holds 2.2 ops at burst 1.1) and then parks.
//! * **No token is lost.** Tokens are elapsed clock time, so the time the
//!   filler was parked is added to the waiting pool in one step when it is
//!   woken, or when the backlog is read ([`wait_stats`](crate::RateLimiter::wait_stats),
//!   [`TokenPool::backlog_nanos`], [`TokenPool::pools`]), exactly as the
//!   fills it skipped would have added it (they are not counted in
//!   [`TokenPool::fills`]).
//! * **Woken by work.** The first take from the full pool wakes the filler
//!   (the lock-free path loads one flag, and finds it set only then), and so
//!   do a caller that must queue or is refused, a new rate or burst ratio
//!   ([`TokenPool::configure`], [`TokenPool::apply`]) and a restart;
//!   [`TokenPool::stop`] and dropping the pool wake it and join it at once.
//!   Woken, it fills at once and then every interval until the pool is idle
//!   again.
//! * **One difference from a filler that never parks**: the time between
//!   the first take and the waker's clock reading (it reads the clock after
//!   taking the lock) is added to the waiting pool, not the active pool. It
//!   is the conservative side: G2's next fill would have put up to one
//!   interval of time from before the take into the active pool; here the
//!   fills that follow the wake-up refill it, and nothing is ever admitted
//!   early.
//!
//! # Wait time
//!
//! Every [`Grant`](crate::Grant) reports the op's own wait, `started −
//! scheduled`, where `scheduled` is the pool's origin (its start or restart)
//! plus the tokens taken before it: op *k* at 1000 ops/s is due *k* ms after
//! the start, as on the [`Pacer`](crate::Pacer)'s schedule. Since every
//! token is measured time, an op can never take its tokens before it is due,
//! and what it waited is exactly how late it started against the rate: the
//! input for response time free of coordinated omission. `started` is a
//! clock reading taken when the op got its tokens: unlike the Pacer, the pool
//! does not use a cached clock reading by default, because its tokens always
//! cover past time and every op would then be measured against the last fill,
//! which is stale after a caller stalls (see
//! [`TokenPoolBuilder::cached_clock`]). Separately,
//! [`wait_stats`](crate::RateLimiter::wait_stats) reports the limiter's
//! state: `backlog_nanos` is the waiting pool, and `total_wait_nanos` adds the
//! backlog checkpointed when the pool was stopped.
//!
//! nosqlbench G2 returned `active + waiting` after each take as the op's
//! delay (and added it to the op's service time): a level of the pool, the
//! same number for every op taken at that moment, which includes up to
//! `max_active` of banked idle credit and misses the time since the last
//! fill. [`Pools::try_take`] still returns it, so the reference behaviour can
//! be checked; [`TokenPool::pools`] gives the pools for anyone who wants the
//! gauge.
//!
//! # Verbs and runtime changes
//!
//! * `start` ([`TokenPool::start`]): an idle pool's schedule begins now; one
//!   op's tokens are pre-filled so the first op need not wait (G2 does the
//!   same). A pool built with `start` or `restart` is started; with
//!   `configure` or `stop` it is idle until its first acquire or `start`.
//! * `restart` ([`TokenPool::restart`]): as if starting for the first time:
//!   pools, backlog and accumulated wait are cleared and one op is pre-filled.
//!   Callers already queued keep their place.
//! * `stop` ([`TokenPool::stop`]): the backlog is checkpointed into the total
//!   wait, the pools are emptied and a filler thread is stopped and joined.
//!   The next acquire starts the pool afresh (as the Pacer does), and so do
//!   callers that were already waiting.
//! * `configure` and a new rate or burst ratio
//!   ([`TokenPool::configure`], [`TokenPool::apply`]): the pools are kept and
//!   re-sized (nosqlbench's T-P-3); when the active pool then holds more than
//!   the new `max_over_active`, the next fill moves the excess back to the
//!   waiting pool.
//!
//! # Cancelling a reservation
//!
//! [`cancel`](crate::RateLimiter::cancel) withdraws a **queued claim**: the
//! reservation of a caller that found too few tokens and is not (yet)
//! waiting for them in [`wait_for`](crate::RateLimiter::wait_for). The
//! tokens the claim had already received go to the claims behind it, oldest
//! first, as the fills would have given them; what is left goes back to the
//! active pool up to `max_over_active`, and the rest (fills gave a claim
//! larger than the pool more than the pool can hold) to the waiting pool, as
//! backlog: tokens are conserved and the active pool stays within its bound.
//! A claim withdrawn before any fill leaves the pool exactly as it was. Ops that take the returned tokens are scheduled where the
//! claim was. The claims behind it keep the scheduled times and ready
//! estimates they were given (now conservative: their tokens come sooner).
//! This is what [`acquire_timeout`](crate::RateLimiter::acquire_timeout)
//! does with a claim whose deadline passed.
//!
//! ```
//! use ratekeeper::pool::{Filling, TokenPool};
//! use ratekeeper::{ManualClock, Rate, RateLimiter};
//!
//! let clock = ManualClock::new(0);
//! let pool = TokenPool::builder(Rate::new(1000.0)?)
//!     .filling(Filling::Manual)
//!     .build_with_clock(clock.clone())?;
//! pool.try_acquire()?; // the pre-filled op
//! let claim = pool.reserve(1, None)?; // queued: 1 ms of tokens missing
//! assert_eq!(pool.waiters(), 1);
//! assert!(pool.cancel(&claim));
//! assert_eq!(pool.waiters(), 0);
//! assert!(!pool.cancel(&claim), "withdrawn already");
//! clock.advance_nanos(1_000_000);
//! pool.refill(1_000_000)?; // the 1 ms the claim would have taken
//! assert_eq!(pool.try_acquire()?.scheduled_nanos(), claim.scheduled_nanos());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `cancel` returns `false`, and changes nothing, for
//!
//! * a grant that **took its tokens** (at once, or a claim the fills have
//!   completed): the pool's tokens are always time that has passed, so an op
//!   that has them is due, like a grant whose ready time has passed, and its
//!   tokens stay spent. (Taking tokens is lock-free and leaves no record of
//!   the grant, so the pool could not tell such a grant from a copy, or from
//!   one already given back, without slowing every take down.)
//! * a claim some thread is blocked on in [`wait_for`](crate::RateLimiter::wait_for)
//!   (or [`acquire`](crate::RateLimiter::acquire) and its variants): that
//!   caller owns it;
//! * a claim already withdrawn, or a grant not this pool's (a claim is
//!   known by its id, scheduled and start times, and size).
//!
//! A queued claim is withdrawn whatever its estimated ready time says: it
//! is due only when its tokens are there.
//!
//! # Memory ordering and invariants
//!
//! 1. `filled` and `taken` only grow; the active pool is their signed
//!    difference. Only lock holders write `filled`. Every write to `taken`
//!    is a compare-exchange against a snapshot, so no taker takes more than
//!    the snapshot held, and tokens are never spent twice.
//! 2. A fill first takes what it hands to claims (compare-exchange on
//!    `taken`), then adds what it put in the pool (`filled`, Release): the
//!    active pool may read negative for that instant, which takers treat as
//!    empty, and never holds tokens that are promised to a claim.
//! 3. After every critical section, either no claim is queued or the active
//!    pool is empty (first come, first served).
//! 4. Takers load `taken` with Acquire before `filled` with Acquire: the
//!    `filled` they read is at least as new as the one the taker that wrote
//!    `taken` checked, so the difference is never an overestimate.
//! 5. A lock-free take racing a fill is ordered after it: the fill computed
//!    on a snapshot and only adds, so the result is the same as G2's fill
//!    followed by the take. A fill that must remove tokens (the excess after
//!    a shrink) retries if a taker moved `taken` in between.
//! 6. A waiter registers itself in its claim under the lock before parking,
//!    and fills complete claims under the lock and unpark afterwards; an
//!    unpark that comes before the park makes the park return at once, so no
//!    wake-up is lost (checked by the loom models in `tests/loom.rs`).
//! 7. The filler parks only under the lock, after a fill that found nobody
//!    queued and the active pool full: it sets the `idle` flag, then writes
//!    `taken` back unchanged with a compare-exchange (Release) against the
//!    snapshot it found full, which fails if a take came since. Every write
//!    to `taken` is a read-modify-write, so a take after it synchronises
//!    with it (AcqRel) and its load of `idle` sees the flag set: the first
//!    take from a parked pool wakes the filler, with no fence and no
//!    sequentially consistent operation on the lock-free path (checked by
//!    the loom models in `tests/loom.rs`).
//!
//! An op racing a restart, a stop, or a withdrawn claim may be scheduled
//! against either side of it (its wait is then off by at most that event's
//! effect); every other op's schedule is exact.
//!
//! # Overflow
//!
//! nosqlbench's pools are Java `long`s and would overflow after 292 years of
//! backlog. Here the content, `active + waiting`, is bounded by
//! [`MAX_POOL_NANOS`] (2^63 - 1 ns): a refill that would exceed it adds only
//! what fits and discards the rest, and the whole refill step is computed with
//! the amount that fit. Every other operation stays within the bound, so no
//! operation overflows or panics, and tokens are conserved exactly (refilled
//! = active + waiting + taken) as long as the content stays below the bound.
//!
//! The tokens owed to queued claims are kept exactly too: a reservation whose
//! tokens, added to those the claims ahead of it still need, would pass
//! `u64::MAX` (584 years of clock time, reachable only at about one op per
//! century) is refused with
//! [`AcquireError::ScheduleExhausted`](crate::AcquireError::ScheduleExhausted)
//! instead of queued, so cancelling the claims that are queued always gives
//! back exactly what they took.
//!
//! # Differences from nosqlbench
//!
//! From G2 (`TokenPool` / `ThreadDrivenTokenPool`):
//!
//! * [`Pools`] is only the arithmetic: G2's synchronized blocking
//!   `blockAndTake` becomes the non-blocking [`Pools::try_take_op`], and the
//!   filler, clock and waiting belong to [`TokenPool`].
//! * Taking is lock-free when tokens are there; waiters are served first
//!   come, first served (G2's `notifyAll` let any of them win), and a waiter
//!   holds the tokens it has received so far, so a request larger than the
//!   pool completes (G2 would block forever). Whole-op serving would keep a
//!   waiter's partial tokens in the active pool, where G2's fill counts them
//!   against `max_active`; here they are the waiter's, so a fill may top the
//!   active pool up by up to one op more before overflowing to the waiting
//!   pool.
//! * With inline filling, a fill serves queued callers before the active
//!   pool's bound applies, so a late fill turns no owed time into backlog
//!   ([Serving waiting callers first](#serving-waiting-callers-first)). G2
//!   had no queue: its waiters competed for the active pool after each fill.
//! * The filler thread is stopped and joined by `stop` and on drop (G2's
//!   never stopped, and before 2022 one more was started per `start()` call),
//!   and it is optional: callers fill inline by default.
//! * The filler thread parks while the pool is idle and the time it was
//!   parked reaches the waiting pool in one step (G2's filler woke every
//!   interval for ever); see [Idle pools](#idle-pools).
//! * `restart` pre-fills one op, as a first start does (G2's restart left the
//!   pool empty, so the first op after it waited a whole op interval).
//! * Each op's own wait time is reported (see [Wait time](#wait-time)).
//! * A fill interval outside 1 µs ..= 1 s is an error.
//! * Invalid configurations are errors: a NaN or infinite burst ratio (G2
//!   accepted both), a rate whose op slice is not between 1 ns and 2^62 ns,
//!   and a pool size of 0.
//! * The content saturates at [`MAX_POOL_NANOS`] instead of wrapping.
//! * With [`Pools::with_pool_size`], a size above 2^53 that an `f64` cannot
//!   hold exactly could give G2 a `max_over_active` below `max_active`;
//!   `max_over_active` is never less than `max_active` here.
//! * G2 reports `active + waiting` after each take as the op's delay: the
//!   backlog plus up to `max_active` of banked idle time, an aggregate rather
//!   than the op's own wait. [`Pools`] returns that value (so the reference
//!   behaviour can be checked), but the ratekeeper limiter reports each op's
//!   own wait time, scheduled start to actual start.
//!
//! From G3 (nosqlbench 5's `SimRate`), which kept this algorithm but stored
//! the active pool in a `Semaphore`, none of its changes are followed: its
//! active pool fixed at 1e9 ticks (a whole second of instant burst at ns
//! scale, far looser than 2 ops / 1 ms), its `int` tick units that saturate
//! burst ratios above about 2.147 and truncate at µs and ms scales, and its
//! `applyRateSpec` that wipes the pools ([`Pools::apply`] keeps them, as G2
//! does).

mod claims;
mod filler;
mod limiter;
mod pools;

pub use filler::FILLER_THREAD_NAME;
pub use limiter::{
    Filling, TokenPool, TokenPoolBuilder, TokenPoolError, DEFAULT_FILL_INTERVAL, MAX_FILL_INTERVAL,
    MIN_FILL_INTERVAL,
};
pub use pools::{PoolError, Pools, MAX_POOL_NANOS, MIN_ACTIVE_NANOS, MIN_CONCURRENT_OPS};

#[cfg(all(test, not(loom)))]
mod tests;
