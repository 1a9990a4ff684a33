//! The token pool arithmetic of nosqlbench's hybrid rate limiter (G2).
//!
//! From late 2018 until nosqlbench 5.17, nosqlbench paced its operations with
//! a *token pool*: one token is one nanosecond of schedule time, a filler
//! thread adds the nanoseconds it measured since its last fill, and every
//! operation takes `floor(1e9 / rate)` of them. [`Pools`] is that pool's state
//! and arithmetic, exactly as G2 computes it (`TokenPool` in engineblock,
//! `ThreadDrivenTokenPool` in nosqlbench 4), with no thread, no clock and no
//! waiting: you pass it elapsed time, it tells you what an operation may take.
//! ratekeeper's token-pool limiter (still to come) will be built on it.
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
//! # Differences from nosqlbench
//!
//! From G2 (`TokenPool` / `ThreadDrivenTokenPool`):
//!
//! * [`Pools`] is only the arithmetic: G2's synchronized blocking
//!   `blockAndTake` becomes the non-blocking [`Pools::try_take_op`], and the
//!   filler thread, clock and waiting belong to the limiter.
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

mod pools;

pub use pools::{PoolError, Pools, MAX_POOL_NANOS, MIN_ACTIVE_NANOS, MIN_CONCURRENT_OPS};
