//! The pacer's configuration as its lock-free paths read it: the slices
//! and the mode word (kind, flags and the cancel epoch).

use super::strictness::{Strictness, StrictnessMode};
use crate::rate::{Rate, RateError};
use crate::sync::AtomicU64;

// Mode word layout: bits 0..=7 compensation shift; bits 8..=9 kind; bit 16 idle;
// bit 17 cached clock enabled; bit 18 spaced (below); bits 32..=62 the cancel
// epoch; bit 63 always set, so that the top half, which every grant carries
// as its tag, is never 0.
pub(super) const KIND_SHIFT: u32 = 8;
pub(super) const KIND_AVERAGE: u64 = 0;
pub(super) const KIND_COMPENSATE: u64 = 1;
pub(super) const KIND_DUAL: u64 = 2;
pub(super) const IDLE: u64 = 1 << 16;
pub(super) const CACHED_CLOCK: u64 = 1 << 17;
/// Set by a change from strict or burst mode to a mode without spacing: the
/// spacing the last strict or burst op reserved on `actual` still applies
/// to the next op, so the accumulator paths also start no op before
/// `actual` (which they never write) until the next change.
pub(super) const SPACED: u64 = 1 << 18;
/// The mode bits any of which takes an unbounded reservation off the plain
/// accumulator (average mode, exact clock, running, no spacing left over):
/// one test for the default grant's path.
pub(super) const NOT_PLAIN: u64 = IDLE | CACHED_CLOCK | SPACED | KIND_MASK;
/// The kind's bits in the mode word.
pub(super) const KIND_MASK: u64 = 0b11 << KIND_SHIFT;
pub(super) const EPOCH_SHIFT: u32 = 32;
/// The epoch: moved on by every reset of the schedule and every cancel (see
/// [Cancelling a reservation](super#cancelling-a-reservation)).
pub(super) const EPOCH: u64 = 0x7fff_ffff << EPOCH_SHIFT;
pub(super) const TAGGED: u64 = 1 << 63;

/// The tag a grant reserved under mode word `mode` carries.
#[inline(always)]
pub(super) fn tag(mode: u64) -> u32 {
    (mode >> EPOCH_SHIFT) as u32
}

/// How many epochs before `mode`'s the grant tagged `tag` was reserved in.
pub(super) fn age(mode: u64, tag: u32) -> u32 {
    self::tag(mode).wrapping_sub(tag) & 0x7fff_ffff
}

/// The kind of decision of mode word `mode`: `KIND_AVERAGE`,
/// `KIND_COMPENSATE` or `KIND_DUAL`.
#[inline(always)]
pub(super) fn kind(mode: u64) -> u64 {
    (mode >> KIND_SHIFT) & 0b11
}

/// The compensation shift of mode word `mode`.
#[inline(always)]
pub(super) fn shift(mode: u64) -> u32 {
    (mode & 0xff) as u32
}

/// `mode` with the epoch moved on by one.
pub(super) fn next_epoch(mode: u64) -> u64 {
    let epoch = mode.wrapping_add(1 << EPOCH_SHIFT) & EPOCH;
    (mode & !EPOCH) | epoch | TAGGED
}

/// The configuration the lock-free paths read: slices and the mode word
/// are written only under the pacer's `control` lock.
pub(super) struct Params {
    pub(super) op_nanos: AtomicU64,
    pub(super) burst_nanos: AtomicU64,
    pub(super) mode: AtomicU64,
    /// The clock reading the timeline counts from (fixed at build time).
    pub(super) origin: u64,
    /// The first time on the timeline no slot or strict start may take:
    /// 2^63 ns, or the clock's last reading if that comes first.
    pub(super) limit: u64,
}

/// Nanoseconds per op and burst nanoseconds per op for a configuration.
pub(super) fn slices(rate: Rate, strictness: Strictness) -> Result<(u64, u64), RateError> {
    let op = rate.slice()?;
    let burst = match strictness.mode() {
        StrictnessMode::Strict => op,
        // (long)(1e9 / (rate × burst)), as G1.5 computes it.
        StrictnessMode::Burst(b) => (1e9 / (rate.get() * b)) as u64,
        StrictnessMode::Average | StrictnessMode::Compensate { .. } => 0,
    };
    Ok((op, burst))
}

/// The mode word for a configuration. A strict or burst pacer whose burst
/// slice rounds to 0 ns (rates near 1e9/s) has no spacing to keep on the
/// actual timeline, so it runs as the plain accumulator.
pub(super) fn mode_word(strictness: Strictness, cached_clock: bool, burst_nanos: u64) -> u64 {
    let (kind, shift) = match strictness.mode() {
        StrictnessMode::Average => (KIND_AVERAGE, 0),
        StrictnessMode::Compensate { shift } => (KIND_COMPENSATE, u64::from(shift)),
        StrictnessMode::Strict | StrictnessMode::Burst(_) if burst_nanos > 0 => (KIND_DUAL, 0),
        StrictnessMode::Strict | StrictnessMode::Burst(_) => (KIND_AVERAGE, 0),
    };
    (kind << KIND_SHIFT) | shift | if cached_clock { CACHED_CLOCK } else { 0 }
}
