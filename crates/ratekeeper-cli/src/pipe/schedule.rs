//! What each write of `pipe` reserves on the Pacer, and the rate changes
//! asked for while it runs (SIGUSR1 doubles the rate, SIGUSR2 halves it).
//!
//! **Lines** take one permit each: the Pacer's slot of `floor(1e9 / rate)`
//! ns per line, as `pace` and `exec` have it.
//!
//! **Bytes** (`--bytes`) are not one permit each. A Pacer's slot is whole
//! nanoseconds and at least 1 ns, so a permit per byte would cap the copy
//! at 1e9 bytes/s (0.93 GiB/s) and truncate every rate's slot (100 MiB/s is
//! a 9.54 ns byte cut to 9 ns: 111 MB/s, 6 % too fast). Instead the
//! schedule is kept in nanoseconds: each write reserves exactly the time
//! its bytes take at the rate ([`Pacer::reserve_nanos`]), counted from the
//! last rate change, `ceil(bytes so far × 1e9 / rate) − nanoseconds
//! reserved so far`. The fraction of a nanosecond is thereby carried from
//! write to write: the schedule is never more than 1 ns behind the exact
//! one and never ahead of it, so the long-run rate is the rate asked for at
//! any rate, with no drift, and rates above 1e9 bytes/s can be paced, up
//! to [`MAX_BYTES_RATE`].
//!
//! The Pacer itself is still configured in permits of one byte (above 1e9
//! bytes/s, of `ceil(rate / 1e9)` bytes, to stay within its 1e9 permits/s):
//! its slot then sizes its wait policy for many small ops, which groups
//! wake-ups and excuses a wake-up's own lateness in strict mode. A permit
//! the size of a chunk would make every write a wait slept to on its own,
//! whose lateness strict mode keeps (the next write is spaced from when
//! this one actually went): a little slow at 1 MiB/s, far more at
//! 100 MiB/s, where a chunk's wait is 625 µs.

use ratekeeper::{AcquireError, Clock, ConfigError, Grant, Pacer, Rate, RateLimiter};

use ratekeeper::rate::MAX_NANOS_PER_OP;

use crate::report::{fmt_unit_rate, EffectiveRate};

/// The most bytes one permit request (one write) covers in `--bytes` mode.
pub(super) const MAX_CHUNK: u64 = 64 * 1024;

/// The fastest `--bytes` rate: a 64 KiB permit every nanosecond (65.5 TB/s,
/// 59.6 TiB/s); in effect no limit. `--rate max` with `--bytes`.
pub(super) const MAX_BYTES_RATE: f64 = MAX_CHUNK as f64 * 1e9;

/// The fastest lines rate: a line every nanosecond, the Pacer's top.
/// `--rate max` without `--bytes`.
pub(super) const MAX_LINES_RATE: f64 = 1e9;

/// Bytes per write in `--bytes` mode at `rate` bytes per second: a
/// hundredth of a second's worth, from 1 byte to [`MAX_CHUNK`].
pub(super) fn chunk_size(rate: f64) -> usize {
    (rate / 100.0).floor().clamp(1.0, MAX_CHUNK as f64) as usize
}

/// A write's reservation: its grant and its share of the schedule in
/// nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reserved {
    pub(super) grant: Grant,
    pub(super) share_ns: u64,
}

/// The rate, what a write reserves at it, and the changes made to it.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    /// Units per second now: lines, or bytes with `--bytes`.
    rate: f64,
    /// Whether the rate counts bytes (`--bytes`), not lines.
    bytes: bool,
    /// A line's share of the schedule at the rate, `round(1e9 / rate)` ns
    /// (for the report's elapsed; kept so as not to divide per line).
    line_ns: u64,
    /// Bytes written since the rate was last set, and the nanoseconds
    /// reserved for them (`--bytes` mode).
    segment_bytes: u64,
    segment_nanos: u64,
    /// Doublings and halvings made, and refused (out of the Pacer's range).
    changes: u64,
    refused: u64,
}

impl Schedule {
    /// One permit per line at `rate` lines per second.
    pub(super) fn lines(rate: f64) -> Schedule {
        Schedule::new(rate, false)
    }

    /// `rate` bytes per second, in nanoseconds (see the [module docs](self)).
    pub(super) fn bytes(rate: f64) -> Schedule {
        Schedule::new(rate, true)
    }

    fn new(rate: f64, bytes: bool) -> Schedule {
        Schedule {
            rate,
            bytes,
            line_ns: line_nanos(rate),
            segment_bytes: 0,
            segment_nanos: 0,
            changes: 0,
            refused: 0,
        }
    }

    /// The rate now, in units per second.
    pub(super) fn rate(&self) -> f64 {
        self.rate
    }

    /// Rate changes made, and refused.
    pub(super) fn changes(&self) -> (u64, u64) {
        (self.changes, self.refused)
    }

    /// Whether the rate counts bytes (`--bytes`), not lines.
    pub(super) fn counts_bytes(&self) -> bool {
        self.bytes
    }

    /// The chunk size in `--bytes` mode (following the rate); `None` for
    /// lines.
    pub(super) fn chunk(&self) -> Option<usize> {
        self.bytes.then(|| chunk_size(self.rate))
    }

    /// The Pacer's rate for `rate` units per second: permits per second
    /// (a permit is a line, or a byte up to 1e9 bytes/s).
    ///
    /// # Errors
    ///
    /// The Pacer's refusal of the rate if no Pacer keeps it: outside
    /// [`range`](Self::range).
    pub(super) fn pacer_rate(&self, rate: f64) -> Result<Rate, ConfigError> {
        let per_permit = if self.bytes {
            if rate > MAX_BYTES_RATE {
                // A permit a byte would be above a permit a nanosecond: the
                // Pacer's own refusal of `rate`, naming it.
                Rate::new(rate)?.nanos_per_op()?;
            }
            (rate / 1e9).ceil().max(1.0)
        } else {
            1.0
        };
        let r = Rate::new(rate / per_permit)?;
        r.nanos_per_op()?;
        Ok(r)
    }

    /// The slowest and the fastest rate the Pacer keeps, in units per
    /// second: one every 2^62 ns, and a line a nanosecond or
    /// [`MAX_BYTES_RATE`].
    pub(super) fn range(&self) -> (f64, f64) {
        let fastest = if self.bytes {
            MAX_BYTES_RATE
        } else {
            MAX_LINES_RATE
        };
        (1e9 / MAX_NANOS_PER_OP as f64, fastest)
    }

    /// What the Pacer's arithmetic gives at the starting rate: its slot
    /// for lines; the rate itself for bytes, which are reserved in exact
    /// nanoseconds.
    pub(super) fn effective<C: Clock>(&self, pacer: &Pacer<C>) -> EffectiveRate {
        match self.bytes {
            false => EffectiveRate::pacer(pacer.effective_rate(), pacer.nanos_per_op(), "line"),
            true => EffectiveRate {
                rate: self.rate,
                arithmetic: "each write reserves ceil(bytes x 1e9 / rate) ns, the fraction \
                             carried"
                    .to_owned(),
            },
        }
    }

    /// Reserves the permits of a write of `len` bytes (a line, or a chunk
    /// of `--bytes`), without waiting. `None` in `--bytes` mode for a write
    /// that the previous writes' rounding up already paid for (0 ns owed):
    /// it goes at once.
    ///
    /// # Errors
    ///
    /// The Pacer's [`AcquireError`]: a schedule past 2^62 ns.
    #[inline]
    pub(super) fn reserve<C: Clock>(
        &mut self,
        pacer: &Pacer<C>,
        len: usize,
    ) -> Result<Option<Reserved>, AcquireError> {
        if !self.bytes {
            let grant = pacer.reserve(1, None)?;
            let share_ns = self.line_ns;
            return Ok(Some(Reserved { grant, share_ns }));
        }
        let bytes = self.segment_bytes.saturating_add(len as u64);
        let due = nanos_for(bytes, self.rate);
        let owed = due.saturating_sub(self.segment_nanos);
        let reserved = match owed {
            0 => None,
            _ => Some(Reserved {
                grant: pacer.reserve_nanos(owed, None)?,
                share_ns: owed,
            }),
        };
        self.segment_bytes = bytes;
        self.segment_nanos = self.segment_nanos.max(due);
        Ok(reserved)
    }

    /// The permits of a write of `len` bytes from a limit shared through
    /// Redis (`--redis`), without waiting: one permit per line, or per byte
    /// with `--bytes` (the shared Pacer's slot is then `floor(1e9 / rate)`
    /// ns a byte, as every process sharing the key has it), one request
    /// (one round trip) per write either way.
    ///
    /// # Errors
    ///
    /// The limiter's [`AcquireError`]: a refusal by `--on-redis-failure
    /// closed`.
    pub(super) fn reserve_shared(
        &mut self,
        limiter: &dyn RateLimiter,
        len: usize,
    ) -> Result<Reserved, AcquireError> {
        if !self.bytes {
            let grant = limiter.reserve(1, None)?;
            let share_ns = self.line_ns;
            return Ok(Reserved { grant, share_ns });
        }
        // A write is at most MAX_CHUNK bytes.
        let permits = u32::try_from(len).unwrap_or(u32::MAX);
        let grant = limiter.reserve(permits, None)?;
        let share_ns = nanos_for(len as u64, self.rate);
        Ok(Reserved { grant, share_ns })
    }

    /// Refuses `steps` rate changes (SIGUSR1, SIGUSR2) on a limit shared
    /// through Redis, whose rate is every process's: the note for standard
    /// error.
    pub(super) fn refuse_steps(&mut self, steps: i32) -> String {
        self.refused += u64::from(steps.unsigned_abs());
        let signal = if steps > 0 { "SIGUSR1" } else { "SIGUSR2" };
        format!(
            "{signal} ignored: the rate is shared through --redis with the other processes \
             using the key; it stays {}",
            self.rate
        )
    }

    /// Makes `steps` rate changes, doublings (SIGUSR1) if positive, halvings
    /// (SIGUSR2) if negative, one at a time, each only if the Pacer keeps
    /// the result; then sets the Pacer to the new rate (checkpoint and keep:
    /// a write already waiting keeps its time, the next one is spaced at the
    /// new rate) and, in `--bytes` mode, the chunk size follows. Returns the
    /// notes for standard error: each refused step, and a new lines rate
    /// the Pacer's slot truncates by more than 0.1 %.
    pub(super) fn step<C: Clock>(
        &mut self,
        pacer: &Pacer<C>,
        steps: i32,
        unit: &str,
    ) -> Vec<String> {
        let (signal, factor, refusal) = if steps > 0 {
            ("SIGUSR1", 2.0, "above the most")
        } else {
            ("SIGUSR2", 0.5, "below the least")
        };
        let (slowest, fastest) = self.range();
        let bound = if steps > 0 { fastest } else { slowest };
        let mut notes = Vec::new();
        let mut rate = self.rate;
        let mut made = 0;
        for _ in 0..steps.unsigned_abs() {
            if self.pacer_rate(rate * factor).is_ok() {
                rate *= factor;
                made += 1;
            } else {
                self.refused += 1;
                notes.push(format!(
                    "{signal} ignored: {} would be {refusal} pipe paces, {}; the rate stays {}",
                    fmt_unit_rate(rate * factor, unit),
                    fmt_unit_rate(bound, unit),
                    fmt_unit_rate(rate, unit)
                ));
            }
        }
        if made == 0 {
            return notes;
        }
        if let Err(e) = self.set_pacer(pacer, rate) {
            // Not expected: every step was checked.
            self.refused += made;
            notes.push(format!("{signal} ignored: {e}"));
            return notes;
        }
        self.changes += made;
        self.rate = rate;
        self.line_ns = line_nanos(rate);
        self.segment_bytes = 0;
        self.segment_nanos = 0;
        notes.extend(self.effective(pacer).warning("pipe", rate, unit));
        notes
    }

    /// Sets `pacer` to `rate` units per second: [`Pacer::set_rate`], or,
    /// where a permit's bytes grew with the rate so that the Pacer's own
    /// rate stays (above 1e9 bytes/s), a [`Pacer::restart`], which moves
    /// its schedule up to now as `set_rate` would (checkpoint and keep).
    fn set_pacer<C: Clock>(&self, pacer: &Pacer<C>, rate: f64) -> Result<(), String> {
        let r = self.pacer_rate(rate).map_err(|e| e.to_string())?;
        if pacer.rate() == r {
            pacer.restart();
            return Ok(());
        }
        pacer.set_rate(r).map_err(|e| e.to_string())
    }
}

/// A line's share of the schedule at `rate` lines per second, rounded to
/// the nanosecond, as the report counted it before rate changes existed.
fn line_nanos(rate: f64) -> u64 {
    // `as` saturates; the rate is finite and positive.
    (1e9 / rate).round() as u64
}

/// `ceil(bytes × 1e9 / rate)`: the nanoseconds `bytes` take at `rate`
/// bytes per second, in exact integer arithmetic for a whole rate (every
/// byte unit gives one, and so does doubling one), else in `f64` (within
/// a nanosecond: computed from the total, the error does not add up).
fn nanos_for(bytes: u64, rate: f64) -> u64 {
    if rate.fract() == 0.0 && rate <= 9_007_199_254_740_992.0 {
        // A whole rate from 1 to 2^53: exactly representable.
        let exact = (u128::from(bytes) * 1_000_000_000).div_ceil(rate as u128);
        return u64::try_from(exact).unwrap_or(u64::MAX);
    }
    // `as` saturates; the operands are finite and positive.
    (bytes as f64 * 1e9 / rate).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratekeeper::ManualClock;

    /// A Pacer for `schedule` on a clock that stands still.
    fn pacer(schedule: &Schedule, strictness: f64) -> Pacer<ManualClock> {
        Pacer::builder(schedule.pacer_rate(schedule.rate()).unwrap())
            .strictness(strictness)
            .build_with_clock(ManualClock::new(0))
            .unwrap()
    }

    #[test]
    fn nanos_are_exact_for_whole_rates_and_rounded_up() {
        assert_eq!(nanos_for(104_857_600, 104_857_600.0), 1_000_000_000);
        assert_eq!(nanos_for(1, 3.0), 333_333_334);
        assert_eq!(nanos_for(3, 3.0), 1_000_000_000);
        // Not a whole rate: f64, still exact here.
        assert_eq!(nanos_for(3, 1.5), 2_000_000_000);
        assert_eq!(nanos_for(0, 7.0), 0);
    }

    #[test]
    fn bytes_carry_the_fraction_of_a_nanosecond() {
        // 3 bytes/s: a byte is 333 333 333.3 ns; three take exactly 1 s.
        let mut s = Schedule::bytes(3.0);
        let p = pacer(&s, 0.0);
        let shares: Vec<u64> = (0..3)
            .map(|_| s.reserve(&p, 1).unwrap().unwrap().share_ns)
            .collect();
        assert_eq!(shares, [333_333_334, 333_333_333, 333_333_333]);
        assert_eq!(p.next_slot_nanos(), 1_000_000_000);
        // 100 MiB/s, which a 9 ns slot per byte would run 6 % fast: 1600
        // writes of 64 KiB take exactly one second of schedule.
        let mut s = Schedule::bytes(104_857_600.0);
        let p = pacer(&s, 0.0);
        for _ in 0..1600 {
            s.reserve(&p, 65_536).unwrap();
        }
        assert_eq!(p.next_slot_nanos(), 1_000_000_000);
        // At the fastest rate a small write is paid for by the one before
        // it (rounded up to 1 ns): it reserves nothing.
        let mut s = Schedule::bytes(MAX_BYTES_RATE);
        let p = pacer(&s, 0.0);
        assert_eq!(s.reserve(&p, 100).unwrap().unwrap().share_ns, 1);
        assert!(s.reserve(&p, 100).unwrap().is_none());
    }

    #[test]
    fn lines_take_a_permit_each() {
        let mut s = Schedule::lines(1000.0);
        let p = pacer(&s, 1.0);
        let r = s.reserve(&p, 12).unwrap().unwrap();
        assert_eq!((r.grant.permits(), r.share_ns), (1, 1_000_000));
        assert_eq!(s.chunk(), None);
        assert!(!s.counts_bytes());
    }

    #[test]
    fn bytes_rates_above_1e9_are_kept_in_larger_permits() {
        let s = Schedule::bytes(1e9);
        assert_eq!(s.pacer_rate(1e9).unwrap().get(), 1e9);
        assert_eq!(s.pacer_rate(4e9).unwrap().get(), 1e9);
        assert_eq!(s.pacer_rate(1.5e9).unwrap().get(), 0.75e9);
        assert!(s.pacer_rate(MAX_BYTES_RATE).is_ok());
        assert!(s.pacer_rate(MAX_BYTES_RATE * 2.0).is_err());
        assert!(Schedule::lines(1e9).pacer_rate(2e9).is_err());
        assert_eq!(s.effective(&pacer(&s, 1.0)).rate, 1e9);
    }

    #[test]
    fn steps_double_and_halve_and_the_chunk_follows() {
        let mut s = Schedule::bytes(1_000_000.0);
        let p = pacer(&s, 1.0);
        assert_eq!(s.chunk(), Some(10_000));
        assert!(s.step(&p, 2, "bytes").is_empty());
        assert_eq!(
            (s.rate(), s.chunk(), s.changes()),
            (4e6, Some(40_000), (2, 0))
        );
        assert_eq!(p.rate().get(), 4e6);
        assert!(s.step(&p, -1, "bytes").is_empty());
        assert_eq!((s.rate(), s.changes()), (2e6, (3, 0)));
        assert_eq!(p.rate().get(), 2e6);
        // A change restarts the carry: 2 MB/s, 1 byte is 500 ns.
        assert_eq!(s.reserve(&p, 1).unwrap().unwrap().share_ns, 500);
    }

    #[test]
    fn steps_beyond_the_range_are_refused_with_a_note() {
        let mut s = Schedule::lines(6e8);
        let p = pacer(&s, 1.0);
        let notes = s.step(&p, 2, "lines");
        assert_eq!(notes.len(), 2, "one per refused step: {notes:?}");
        assert_eq!(
            notes[0],
            "SIGUSR1 ignored: 1,200,000,000 lines/s would be above the most pipe paces, \
             1,000,000,000 lines/s; the rate stays 600,000,000 lines/s"
        );
        assert_eq!((s.rate(), s.changes()), (6e8, (0, 2)));
        assert_eq!(p.rate().get(), 6e8, "the Pacer is untouched");
        // Halving to 3e8 lines/s: a 3.33 ns slot truncated to 3 ns.
        let notes = s.step(&p, -1, "lines");
        assert_eq!(s.rate(), 3e8);
        assert!(notes[0].contains("pipe runs at 333,333,333"), "{notes:?}");
        // From the fastest bytes rate a doubling is refused, a halving made;
        // its permits stay 65536 bytes, so the Pacer restarts instead.
        let mut s = Schedule::bytes(MAX_BYTES_RATE);
        let p = pacer(&s, 1.0);
        assert_eq!(s.step(&p, 1, "bytes").len(), 1);
        assert!(s.step(&p, -1, "bytes").is_empty());
        assert_eq!((s.rate(), s.changes()), (MAX_BYTES_RATE / 2.0, (1, 1)));
    }
}
