//! [`Rule`]: a limiter's decision over a compact state (a
//! [`Cell`](Rule::Cell) of one or two words). Each algorithm family
//! implements it once; the in-memory limiter keeps one cell, and a keyed
//! map keeps one per key. A leaf: it imports no room.

use crate::grant::Recovery;
use crate::grant::{AcquireError, Grant};

/// A limiter's decisions over one key's state. Times are readings of the
/// keyed limiter's clock, in nanoseconds; the caller reads the clock, so a
/// rule never does.
pub(crate) trait Rule: Send + Sync + std::fmt::Debug {
    /// One key's state: atomics, updated with the orderings each rule
    /// documents.
    type Cell: Send + Sync + std::fmt::Debug;

    /// The state of a key first seen at `now`: a fresh limiter's.
    fn fresh(&self, now: u64) -> Self::Cell;

    /// Decides `permits` at `now`, waiting at most `max_wait` ns (`None`:
    /// any wait). A refusal changes nothing (or, where a rule documents a
    /// race, forfeits time: fewer grants, never more).
    fn reserve(
        &self,
        cell: &Self::Cell,
        permits: u32,
        max_wait: Option<u64>,
        now: u64,
    ) -> Result<Grant, AcquireError>;

    /// How the key's state compares with a fresh one's at `now`: whether
    /// dropping it changes a decision.
    fn recovery(&self, cell: &Self::Cell, now: u64) -> Recovery;

    /// Permits the key could take at `now` without waiting, where the rule
    /// counts them (a bucket); `None` for a schedule.
    fn available(&self, cell: &Self::Cell, now: u64) -> Option<u64> {
        let _ = (cell, now);
        None
    }
}

/// A refusal for a wait of `wait` ns against a maximum of `max` ns.
pub(crate) fn would_wait(wait: u64, max: u64) -> AcquireError {
    AcquireError::WouldWait {
        wait: std::time::Duration::from_nanos(wait),
        max_wait: std::time::Duration::from_nanos(max),
    }
}
