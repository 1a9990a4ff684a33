//! The two bucket algorithms of Resilience4j, Rust-shaped:
//! [`RefillLimiter`], a strict token bucket with gradual refill, and
//! [`CycleLimiter`], Resilience4j's default fixed-cycle limiter. Both
//! implement [`RateLimiter`](crate::RateLimiter): reserve with a maximum
//! wait, cancel, change the limit at runtime, drain, read the permits
//! available. Resilience4j's own interface over them (names, events, a
//! timeout, a registry, decorators) is the `ratekeeper-resilience4j` crate.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::bucket::{RefillConfig, RefillLimiter};
//! use ratekeeper::RateLimiter;
//!
//! let config = RefillConfig::builder()
//!     .limit_for_period(10)                          // 10 permits ...
//!     .limit_refresh_period(Duration::from_secs(1))  // ... per second, refilled gradually
//!     .permit_capacity(20)                           // bursts of up to 20
//!     .build()?;
//! let limiter = RefillLimiter::new(config);
//! assert!(limiter.try_acquire().is_ok()); // the bucket starts with 10
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each algorithm's arithmetic is written once, as a pure decision over a
//! compact state (`decision.rs`): the limiters commit it to one state word,
//! and [`Keyed`](crate::keyed::Keyed) to one word per key.
//!
//! # Contents
//!
//! * [The bucket](#the-bucket)
//! * [The cycle limiter](#the-cycle-limiter)
//! * [Cancelling a reservation](#cancelling-a-reservation)
//! * [Differences from refill-rate-limiter and Resilience4j](#differences-from-refill-rate-limiter-and-resilience4j)
//! * [Which limiter?](#which-limiter)
//! * [Memory ordering](#memory-ordering)
//! * [Implementation details](#implementation-details)
//!
//! # The bucket
//!
//! A [`RefillLimiter`] refills one permit every `nanos_per_permit =
//! limit_refresh_period / limit_for_period` nanoseconds (truncating, as
//! refill-rate-limiter does: 3 per second is 333 333 333 ns per permit, so
//! it refills at [`1e9 / nanos_per_permit`](RefillLimiter::effective_rate)
//! per second, 3.000000003), up to
//! `capacity` permits (the burst; `limit_for_period` unless set), and starts
//! with `initial_permits` (`limit_for_period` unless set, *not* the
//! capacity). Refill is computed lazily on each call from one number, the
//! **time index** `E`: the instant at which the bucket would be empty.
//!
//! ```text
//!   tokens(now) = min(capacity, (now − E) / nanos_per_permit)
//!
//!        E            now − C·npp                  now
//!   -----|----------------|---------------------------|------> time
//!        |<-- credit beyond a full bucket: lost ----->|
//!                         |<----- at most C permits -->|
//! ```
//!
//! A request for `n` permits moves `E` to `max(E, now − C·npp) + n·npp`: the
//! credit beyond a full bucket is dropped, and the request is charged. If
//! that puts `E` after `now`, the request waits `E − now`: it is granted with
//! that wait if the wait is within the caller's maximum wait (a *reservation*: the
//! available count goes negative until then), and refused, changing nothing,
//! if not. So every grant moves `E` forward by exactly its cost, and over any
//! window the permits granted (counted when they may go) are at most
//! `capacity + window / nanos_per_permit`.
//!
//! # The cycle limiter
//!
//! A [`CycleLimiter`] is Resilience4j's `AtomicRateLimiter`: time is cut into
//! cycles of `limit_refresh_period` from the limiter's creation, each cycle
//! starts with `limit_for_period` permits (unused permits do not carry over),
//! reservations make the count negative and are repaid by later cycles, and a
//! request larger than the limit waits as many cycles as it needs. It is a
//! fixed window: up to `2 × limit_for_period` permits can go within
//! nanoseconds across a cycle boundary. Without reservations, any window that
//! touches `k` cycles grants at most `k × limit_for_period`; with them, the
//! permits that may go by the end of cycle `c` are at most
//! `(c + 1) × limit_for_period` in all.
//!
//! # Cancelling a reservation
//!
//! Resilience4j cannot give a reservation back: an interrupted caller's
//! permits stay spent. Both limiters here also give back a reservation its
//! caller will not use, as Go's `Reservation.Cancel` does, through
//! [`RateLimiter::cancel`](crate::RateLimiter::cancel) on the
//! [`Grant`](crate::Grant) that [`reserve`](crate::RateLimiter::reserve)
//! returned. What can be
//! given back is a reservation that **had to wait**, until its ready time
//! (`ready ≥ now`): a grant that could go at once took permits that were
//! there, and is due.
//!
//! **[`RefillLimiter`].** If the reservation is the latest, the time index
//! moves back by its cost, `permits × nanos_per_permit`: the bucket is as if
//! it had never been made, and the next reservation gets its ready time.
//! Reservations made after it keep their times; the index then moves back by
//! what they leave, `min(permits × nanos_per_permit, full − later)`, where
//! `later` is what they were charged and `full = capacity × nanos_per_permit`:
//! the bucket a limiter that never saw the cancelled reservation would hold
//! after granting them at their (later) times. So no instant and no window
//! ever gets more than the bucket allows, and nothing is given back when the
//! later reservations cover a full bucket. (Go gives back `permits − later`
//! tokens, less than this whenever the capacity exceeds the reservation.)
//! Reservations given back newest first all come back in full. Nothing goes
//! back to the bucket for a reservation whose later reservations leave
//! nothing, or made before an earlier cancel unless it is then the latest
//! reservation (newest first): it is [kept](#kept-reservations) instead.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::{ManualClock, RateLimiter};
//! use ratekeeper::bucket::{RefillConfig, RefillLimiter};
//!
//! let config = RefillConfig::builder()
//!     .limit_for_period(1)
//!     .limit_refresh_period(Duration::from_nanos(1_000)) // a permit per µs
//!     .permit_capacity(4)
//!     .initial_permits(0)
//!     .build()?;
//! let limiter = RefillLimiter::new_with_clock(config, ManualClock::new(0));
//! let a = limiter.reserve(2, None)?; // ready at 2 µs
//! let b = limiter.reserve(1, None)?; // ready at 3 µs
//! assert!(limiter.cancel(&a), "b keeps its time; a's 2 permits come back");
//! assert_eq!(limiter.reserve(2, None)?.ready_nanos(), 3_000);
//! assert!(!limiter.cancel(&a), "given back already");
//!
//! // Capacity 1: b alone fills the bucket at its time, nothing of a comes
//! // back. It is kept for the next caller of 1 permit.
//! let config = RefillConfig::builder()
//!     .limit_for_period(1)
//!     .limit_refresh_period(Duration::from_nanos(1_000))
//!     .initial_permits(0)
//!     .build()?;
//! let limiter = RefillLimiter::new_with_clock(config, ManualClock::new(0));
//! let a = limiter.reserve(1, None)?; // ready at 1 µs
//! let b = limiter.reserve(1, None)?; // ready at 2 µs
//! assert!(limiter.cancel(&a), "kept");
//! assert_eq!(limiter.reserve(1, None)?.ready_nanos(), 1_000, "a's place");
//! assert_eq!(limiter.reserve(1, None)?.ready_nanos(), 3_000, "the bucket's");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **[`CycleLimiter`].** Only the **latest** reservation is given back,
//! while the cycle it was decided in is still the current one: the count
//! is then as if it had never been made, and the next reservation gets its
//! ready time. The count is a position in a queue of permits, not a record
//! of who holds which: giving back an earlier reservation would hand the
//! positions of the ones after it to the next callers, who would then start
//! in cycles those later reservations already fill (Resilience4j's own
//! `AtomicRateLimiter` has no cancel). Nothing goes back to the count for a
//! reservation with later ones after it, one made before the latest cancel
//! (each moves the limiter to a new epoch), any reservation of a limiter
//! whose `limit_for_period` exceeds 65 536 (a grant identifies itself by 16
//! bits of the count it left), nor once a new cycle has started (the count
//! was refreshed; what is owed is owed to cycles that have begun): such a
//! reservation is [kept](#kept-reservations) instead, its permits still
//! counted in the cycle it is ready in.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::{ManualClock, RateLimiter};
//! use ratekeeper::bucket::{CycleConfig, CycleLimiter};
//!
//! let config = CycleConfig::builder()
//!     .limit_for_period(10)
//!     .limit_refresh_period(Duration::from_millis(100)) // 10 per 100 ms
//!     .build()?;
//! let limiter = CycleLimiter::new_with_clock(config, ManualClock::new(0));
//! limiter.reserve(10, None)?; // cycle 0
//! let b = limiter.reserve(10, None)?; // cycle 1
//! let c = limiter.reserve(10, None)?; // cycle 2
//! assert!(limiter.cancel(&b), "c came after it: kept, still counted in cycle 1");
//! assert!(limiter.cancel(&c), "the latest: given back");
//! assert_eq!(limiter.reserve(10, None)?.ready_nanos(), 100_000_000, "b's place");
//! assert_eq!(limiter.reserve(10, None)?.ready_nanos(), 200_000_000, "c's cycle");
//! assert_eq!(limiter.reserve(10, None)?.ready_nanos(), 300_000_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Kept reservations
//!
//! A reservation that had to wait and cannot go back to the state is
//! **kept** (`cancel` returns `true`, the state is untouched) for the next
//! reservation of the same number of permits, through
//! [`reserve`](crate::RateLimiter::reserve) (and every acquire built on
//! it): it gets the kept ready time, if that is within its maximum wait,
//! instead of a new one. Its holder may cancel it again. The permits were charged once and
//! go once, by one caller, so nothing is admitted that the limiter did not
//! already allow, and a cycle never starts more than `limit_for_period`. A
//! kept reservation whose ready time passes unused is dropped, never handed
//! out late. This is what lets abandoned async acquires keep the rate: with
//! many waiters, the one that gives up is rarely the latest, so giving
//! back only the latest would lose about as many permits as are abandoned.
//! A limit change drops every kept reservation; a drain keeps them, as it
//! keeps every reservation.
//!
//! Both return `false`, and change nothing, for a grant already cancelled
//! (given back or kept) or handed on, one whose ready time has passed, one
//! that was ready when made, and one made before a limit change. A grant
//! from another limiter, or one whose permits already went, must not be
//! cancelled: the limiter cannot always tell it from one of its own still
//! waiting, and would hand its time out again. A cancel takes the
//! limiter's change mutex; a give-back publishes its state anew (retiring
//! the old, as a limit change does; one allocation), and reservations racing
//! it retry on the new state.
//!
//! # Differences from refill-rate-limiter and Resilience4j
//!
//! * **No over-admission.** refill-rate-limiter serves stored permits without
//!   moving its time index, so it grants up to *twice* its capacity at one
//!   instant (capacity 5, after idle time: `acquire(4)` and `acquire(5)` both
//!   succeed). Here every grant is charged to the time index: never more than
//!   the capacity at once.
//! * **`change_limit_for_period(n)` means `n` per the configured period.**
//!   refill-rate-limiter divides its *current* nanos per permit by `n`, so
//!   calls compound (10/s, then `changeLimitForPeriod(20)` twice: 4 000/s) and
//!   a lower limit can give a faster rate. Here the new rate is `n` per the
//!   period the limiter was configured with, the capacity becomes
//!   `max(capacity, n)`, and the current token count, stored or owed, is kept
//!   (re-based to the new rate) rather than the raw time index: nothing is
//!   lost or minted. The cycle limiter settles the current cycle with the old
//!   limit and applies the new one from the next cycle, as Resilience4j
//!   documents (its code applies it to skipped cycles too).
//! * **A refused acquire returns at once.** Resilience4j and
//!   refill-rate-limiter park the caller for the whole timeout before
//!   returning false when they already know the wait exceeds it.
//! * **Drain.** Resilience4j's `AtomicRateLimiter` drains the permit count
//!   from before the cycle refresh: after a rollover it leaves permits behind
//!   or drains nothing, and it cancels outstanding reservations (the next
//!   cycle is over-admitted). refill-rate-limiter's drain also cancels
//!   reservations. Here a drain empties the refreshed count (the bucket: the
//!   stored permits and the partial one) and keeps reservations, and
//!   reports the permits drained (both references report 0).
//! * **Validation.** Permits below 1, limits below 1, refresh periods below
//!   1 ns, negative timeouts, a capacity below the limit, initial permits
//!   outside `0..=capacity`, and values that overflow 64-bit nanoseconds are
//!   typed errors ([`ConfigError`](crate::ConfigError),
//!   [`AcquireError`](crate::AcquireError)); both references accept
//!   negative permits (which *add* permits) and refill-rate-limiter accepts
//!   negative timeouts and any initial count. More permits than the capacity
//!   is [`AcquireError::InsufficientCapacity`](crate::AcquireError::InsufficientCapacity) (refill-rate-limiter throws only
//!   when its bank cannot cover them; the cycle limiter waits several cycles,
//!   as Resilience4j).
//! * **No wrapping arithmetic.** Resilience4j's cycle arithmetic wraps
//!   (a 2^62 ns period turns a 2-cycle wait negative and grants it at once);
//!   here products saturate or the request is refused, and the metrics
//!   never overflow.
//! * **Time** is the limiter's [`Clock`](crate::Clock) for decisions and
//!   waits alike (refill-rate-limiter decides on `System.nanoTime()` but
//!   parks in real time).
//!
//! # Which limiter?
//!
//! | you want | use |
//! |---|---|
//! | a true token bucket: smooth refill, a burst capacity, initial permits | [`RefillLimiter`] |
//! | Resilience4j's default behaviour (fixed windows aligned to creation), e.g. while migrating | [`CycleLimiter`] |
//! | Resilience4j's interface (names, events, a timeout, a registry) | the `ratekeeper-resilience4j` crate |
//! | per-op wait time and a schedule, for a load generator | [`Pacer`](crate::Pacer) |
//! | Guava's stored permits or warm-up | [`SmoothBursty`](crate::SmoothBursty), [`SmoothWarmingUp`](crate::SmoothWarmingUp) |
//!
//! # Memory ordering
//!
//! Every grant of a limiter is a compare-exchange with acquire-release
//! ordering on the limiter's one state word, so a grant *happens after*
//! every grant made before it on the same limiter (a refusal or a metrics
//! read happens after the grants it saw): data written by one caller before
//! it was granted is visible to a caller granted later. A runtime change
//! happens after every grant it kept and before every grant made on the new
//! parameters.
//!
//! # Implementation details
//!
//! Each limiter keeps its parameters and its atomic state word together in a
//! *core* behind an `ArcSwap`: the hot path loads
//! the core, reads the state word, computes the next state with a pure
//! function of (state, parameters, request, now), and commits it with one
//! compare-exchange; a refusal commits nothing.
//!
//! A runtime limit change *retires* the core: under a mutex it swaps the old
//! core's state word to a `FROZEN` sentinel (which no algorithm state ever
//! equals, so the word never changes again), computes the new state from
//! the frozen value, and publishes a new core. A caller still holding the
//! old core cannot commit to it: its compare-exchange fails, it sees
//! `FROZEN`, takes the mutex (which the changer holds until the new core is
//! published), and retries on the new core. So no grant is lost across a
//! change (the swap returns the latest state, including every grant
//! committed before it), none is counted twice, and no grant is computed on
//! one set of parameters and committed to another. See `refill.rs`,
//! `cycle.rs` and `decision.rs` for the state encodings.

mod builder;
mod config;
mod cycle;
mod decision;
mod refill;

pub use builder::{ConfigBuilder, CycleConfigBuilder, RefillConfigBuilder};
pub use config::{
    limit_for_rate, CycleConfig, PermitConfigError, RefillConfig, DEFAULT_LIMIT_FOR_PERIOD,
    DEFAULT_LIMIT_REFRESH_PERIOD, DEFAULT_TIMEOUT,
};
pub use cycle::CycleLimiter;
pub use decision::BucketState;
pub(crate) use decision::{CycleRule, RefillRule};
pub use refill::RefillLimiter;
