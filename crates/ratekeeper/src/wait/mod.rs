//! Turning a reservation into a wait, written once for every limiter.
//!
//! Blocking waits sleep; they never spin unless asked to. Two facts about
//! sleeping shape the default (the `sleep_overshoot` measurement program
//! of `ratekeeper-bench` shows them on a given machine):
//!
//! * **A sleep ends late**, by the clock's *sleep resolution* ρ (tens to
//!   hundreds of microseconds, even for a 1 µs sleep). Waits sleep
//!   `ρ` less than they need, so that they wake about on time, and the
//!   estimate of ρ follows the sleeps the process actually makes (see
//!   [`sleep_resolution_nanos`]).
//! * **A sleep costs CPU**: a sleep and its wake take tens of microseconds
//!   of the thread's CPU time, whatever its length. At high rates a sleep
//!   per op would cost far more than the op.
//!
//! # The default policy
//!
//! An op whose ready time is `left` ns away when its caller asks:
//!
//! * **goes at once, early, only when sleeping to it is impossible**: when
//!   `left` is at most the *early bound* `E = clamp(slot / 2, ρ / 2, ρ)`,
//!   `slot` being the limiter's nanoseconds per permit. A sleep that short
//!   would overshoot the op by more than it goes early. Where a slot is
//!   longer than ρ (rates below `1e9 / ρ` per second), `E` is at
//!   most half a slot; the op goes at most `E` early, so a strict pacer's
//!   consecutive ops start at least `slot − E` apart.
//! * **otherwise sleeps**: where there is no grouping delay (below), aiming
//!   at the middle of the early bound (`E / 2` before the ready time), so
//!   that a sleep a little longer or shorter than usual still lets the op
//!   go at most `E` early and rarely late; and at high rates **later than
//!   its ready time by
//!   a grouping delay** `D = min(768 × slot, 8 × (ρ − 2 × slot))` (0 where
//!   the slot is at least half of ρ), so that one sleep releases a group of
//!   about 800 ops, all due, instead of waking for each: at 1 M ops/s (`ρ`
//!   = 100 µs) `D` is 768 µs and a sleep costs under 50 ns per op. The ops
//!   of a group go late, never early, and each reports its lateness in its
//!   wait time (`started − scheduled`): nothing is hidden. `D` falls to 0
//!   as the slot grows to half of ρ; from there ops are slept to one by
//!   one.
//!
//! | rate (ρ = 100 µs) | slot | early bound `E` | grouping delay `D` |
//! |---:|---:|---:|---:|
//! | 10 M/s | 100 ns | 50 µs | 76.8 µs |
//! | 1 M/s | 1 µs | 50 µs | 768 µs |
//! | 100 k/s | 10 µs | 50 µs | 640 µs |
//! | 20 k/s | 50 µs | 50 µs | 0 |
//! | 10 k/s | 100 µs | 50 µs | 0 |
//! | 1 k/s | 1 ms | 100 µs | 0 |
//!
//! The schedule itself is absolute (every grant's ready time was fixed when
//! it was reserved), so neither the early bound nor the grouping delay adds
//! up: the long-run rate is the schedule's.
//!
//! ```text
//! schedule  |--x--x--x--x--x--x--x--x--x--x--x--x--|    (x = ready times)
//! sleeps         [----- D -----]     [----- D -----]
//! released  |-------------xxxxxx----------------xxxxxx   (groups: late by <= D,
//!                                                          early by <= E)
//! ```
//!
//! A clock whose sleeps are exact ([`ManualClock`](crate::ManualClock):
//! `ρ = 0`) gets neither: every op goes exactly at its ready time.
//!
//! Other policies: [`WaitPolicy::coalesce`] lets ops due within a fixed
//! window go at once (up to that window early, no grouping delay; zero
//! sleeps for every wait), and [`WaitPolicy::precise`] sleeps until shortly
//! before the ready time and spins the rest, so no op goes early or late by
//! more than a clock read; it costs a core while spinning.

use std::time::Duration;

#[cfg(test)]
use crate::clock::{Clock, DEFAULT_SLEEP_OVERSHOOT_NANOS};
#[cfg(test)]
use crate::grant::Grant;

mod blocking;
mod policy;
pub(crate) mod room;
mod sleep;
pub use crate::clock::sleep_resolution_nanos;
pub use blocking::{block_on, stop_nap_nanos, Stop, STOP_TAIL};
pub use policy::{WaitPolicy, GROUP_OPS};
pub use room::PARK_LIMIT;
pub use sleep::block_until;
pub(crate) use sleep::refill_nap_nanos;
#[cfg(feature = "tokio")]
pub(crate) use sleep::timer_nap_nanos;

/// A duration in whole nanoseconds, `u64::MAX` if longer (584 years).
pub(crate) fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests;
