//! Which reservations a limiter may still take back once it took back others.
//!
//! Limiters that give back only their *latest* reservation (the Pacer, the
//! refill bucket, the smooth limiters) tag every grant with an **epoch**, a
//! counter that every successful cancel and every reset of the schedule
//! moves on by one. A grant of the current epoch (age 0) was made after the
//! latest cancel, so its slots have never been given back. An older grant
//! is a risk: the cancel since may have been its own (and its slots handed
//! out again), or may have moved the schedule below it.
//!
//! The rule: a cancel gives back the slots `[start, end)` of the latest
//! reservation and leaves the schedule at `start`, its **cut**. A grant of
//! age `a ≥ 1` whose slots end at `end` may be taken back only if every one
//! of the `a` cancels since its epoch left a cut at or above `end` (so none
//! of them was its own, nor of one before it) and the limiter is still at
//! `end` (the caller checks that with its compare-exchange). Checking that
//! every cut since an epoch is at least `end` needs only the minimum of the
//! cuts since that epoch; [`CancelWindow`] keeps the latest cut and `back`,
//! the number of epochs over which it is that minimum. With the latest cut
//! equal to `end` this is exact for the common case, reservations given
//! back newest first, and conservative (a refusal) otherwise.

/// An epoch as a grant carries it (see the [module docs](self)): 31 bits
/// of count and the top bit always set, so that a tag is never 0 (a
/// [`Grant`](crate::Grant)'s claim of 0 means none). Ages are counted modulo
/// 2^31: a grant held across 2^31 cancels and resets could be mistaken for a
/// current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Epoch(u32);

impl Epoch {
    /// The epoch a limiter starts in.
    pub(crate) const FIRST: Epoch = Epoch(1 << 31);

    /// The next epoch.
    pub(crate) fn next(self) -> Epoch {
        Epoch((self.0.wrapping_add(1) & 0x7fff_ffff) | (1 << 31))
    }

    /// The tag grants of this epoch carry: never 0.
    #[inline(always)]
    pub(crate) fn tag(self) -> u32 {
        self.0
    }

    /// How many epochs before this one a grant tagged `tag` was made in.
    pub(crate) fn age(self, tag: u32) -> u32 {
        self.0.wrapping_sub(tag) & 0x7fff_ffff
    }
}

/// The latest cut and how many epochs back it is the least cut since (see
/// the [module docs](self)). Kept under the limiter's lock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CancelWindow<T> {
    /// Where the latest cancel left the schedule.
    cut: T,
    /// Grants up to this many epochs old may be taken back if they end at
    /// `cut`; 0 after a reset of the schedule (none may).
    back: u32,
}

/// Epoch ages are reduced modulo 2^31; `back` stays well below that.
const MAX_BACK: u32 = 1 << 30;

impl<T: Copy + Ord> CancelWindow<T> {
    /// A window that lets only grants of the current epoch be taken back.
    pub(crate) const fn new(cut: T) -> CancelWindow<T> {
        CancelWindow { cut, back: 0 }
    }

    /// Whether a grant `age` epochs old whose slots end at `end` may be
    /// taken back (the limiter must also find its schedule still at `end`).
    pub(crate) fn allows(&self, age: u32, end: T) -> bool {
        age == 0 || (age <= self.back && end == self.cut)
    }

    /// A cancel left the schedule at `cut` and moved the epoch on by one.
    pub(crate) fn record(&mut self, cut: T) {
        // If the new cut is at or below the latest, it is the least of every
        // cut the latest was the least of, and of its own epoch: the window
        // grows by one. Otherwise only grants of the epoch just ended may
        // rely on it.
        self.back = if cut <= self.cut {
            (self.back + 1).min(MAX_BACK)
        } else {
            1
        };
        self.cut = cut;
    }

    /// The schedule was reset (and the epoch moved on): no earlier grant may
    /// be taken back.
    pub(crate) fn reset(&mut self) {
        self.back = 0;
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
