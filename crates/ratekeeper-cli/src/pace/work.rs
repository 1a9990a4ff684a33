//! `pace --work`: what each op does between its permit and the next one,
//! and the service and response times that makes measurable.
//!
//! Each op has three clock readings: *scheduled* (its grant's place on the
//! schedule), *start* (read right after the grant returned) and *end* (read
//! right after its work). From them, as wrk2 measures:
//!
//! * wait = start − scheduled (0 for an op let go before its scheduled time,
//!   within the wait policy's early bound);
//! * service = end − start: the work itself;
//! * response = wait + service = end − scheduled (or the service, for an op
//!   let go early): what a caller arriving on schedule would have seen. A
//!   worker still busy with earlier work starts its next op late, and the
//!   lateness shows in that op's response time instead of silently
//!   stretching the schedule (no coordinated omission).
//!
//! The work is a sleep (I/O) or, with `--work-cpu`, a spin on the clock
//! (compute), of `--work` ± a uniform jitter drawn per op from a small
//! xorshift generator seeded by the worker's index: the same run draws the
//! same durations.

use std::time::Duration;

use ratekeeper::Clock;

use crate::flags::MAX_DURATION;
use crate::report::{duration_nanos, WaitRecorder};
use crate::run::interrupt::{Interrupt, LONG_WAIT_NANOS};

/// What `--work` asks of every op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkSpec {
    /// The work's mean duration, at least 1 ns.
    pub(super) nanos: u64,
    /// Each op's work is `nanos` ± up to this much, uniformly; at most
    /// `nanos`.
    pub(super) jitter_nanos: u64,
    /// Whether the work spins on the clock (`--work-cpu`) instead of
    /// sleeping.
    pub(super) cpu: bool,
}

const WORK_EXPECTED: &str = "expected DUR or DUR~JITTER, such as 2ms or 2ms~500us";

/// `--work DUR[~JITTER]`: a duration greater than zero, and optionally a
/// jitter no larger than it (0 allowed). `cpu` is left false (`--work-cpu`
/// sets it).
pub(super) fn parse_work(s: &str) -> Result<WorkSpec, String> {
    let s = s.trim();
    let (work, jitter) = match s.split_once('~') {
        Some((w, j)) => (w.trim(), Some(j.trim())),
        None => (s, None),
    };
    let nanos = work_duration(work, "work")?;
    if nanos == 0 {
        return Err(format!(
            "the work must take longer than zero, got \"{work}\"; {WORK_EXPECTED}"
        ));
    }
    let jitter_nanos = match jitter {
        Some(j) => work_duration(j, "jitter")?,
        None => 0,
    };
    if jitter_nanos > nanos {
        return Err(format!(
            "the jitter ({}) is larger than the work ({work}): an op would take less \
             than no time; {WORK_EXPECTED}",
            jitter.unwrap_or_default()
        ));
    }
    Ok(WorkSpec {
        nanos,
        jitter_nanos,
        cpu: false,
    })
}

/// One part of `--work` (`what`: "work" or "jitter") in nanoseconds.
fn work_duration(s: &str, what: &str) -> Result<u64, String> {
    if s.starts_with('-') {
        return Err(format!(
            "the {what} cannot be negative, got \"{s}\"; {WORK_EXPECTED}"
        ));
    }
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("the {what} \"{s}\" is not a duration ({e}); {WORK_EXPECTED}"))?;
    if d > MAX_DURATION {
        return Err(format!(
            "the {what} \"{s}\" is longer than a nanosecond clock counts (about 584 years)"
        ));
    }
    Ok(duration_nanos(d))
}

/// xorshift64* (Vigna): a few instructions per draw, plenty for jitter.
#[derive(Debug, Clone)]
struct XorShift(u64);

impl XorShift {
    /// The generator of worker `index`: its seed is splitmix64 of the
    /// index, never 0 (xorshift's one fixed point).
    fn for_worker(index: u32) -> XorShift {
        let mut z = u64::from(index).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        XorShift((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A draw from 0 to `n - 1` (Lemire's multiply-shift: no division, a
    /// bias below n / 2^64); 0 for `n` = 0. `n` is taken as at most 2^64
    /// (a jitter of centuries draws from 2^64 values only).
    fn below(&mut self, n: u128) -> u128 {
        (u128::from(self.next()) * n.min(1 << 64)) >> 64
    }
}

/// One worker's `--work`: the spec, its jitter generator, and the service
/// and response times of its ops whose work ran to the end.
#[derive(Debug)]
pub(super) struct WorkLoad {
    spec: WorkSpec,
    rng: XorShift,
    pub(super) service: WaitRecorder,
    pub(super) response: WaitRecorder,
}

impl WorkLoad {
    /// Worker `index`'s work.
    pub(super) fn new(spec: WorkSpec, index: u32) -> WorkLoad {
        WorkLoad {
            spec,
            rng: XorShift::for_worker(index),
            service: WaitRecorder::new(),
            response: WaitRecorder::new(),
        }
    }

    /// The next op's work in nanoseconds: the spec's ± its jitter.
    fn draw(&mut self) -> u64 {
        let WorkSpec {
            nanos,
            jitter_nanos: j,
            ..
        } = self.spec;
        if j == 0 {
            return nanos;
        }
        // nanos - j + [0, 2j], in u128: 2j + 1 and the sum may pass u64.
        let offset = self.rng.below(2 * u128::from(j) + 1);
        let d = u128::from(nanos - j) + offset;
        u64::try_from(d).unwrap_or(u64::MAX)
    }

    /// Does the work of an op `scheduled` at that reading of `clock` that
    /// started at `start`, and records its service and response times.
    /// Returns the clock reading when it ended; `None`, with nothing
    /// recorded, if `interrupt` cut it short.
    #[inline]
    pub(super) fn run(
        &mut self,
        scheduled: u64,
        start: u64,
        clock: &dyn Clock,
        interrupt: &Interrupt,
    ) -> Option<u64> {
        let nanos = self.draw();
        let end = if self.spec.cpu {
            spin(nanos, start, clock, interrupt)?
        } else {
            sleep(nanos, clock, interrupt)?
        };
        let (_, service, response) = op_times(scheduled, start, end);
        self.service.record(service);
        self.response.record(response);
        Some(end)
    }
}

/// An op's wait, service and response times from its scheduled, start and
/// end readings (see the [module](self)): the response is the wait plus the
/// service, so never below either.
#[inline]
pub(super) fn op_times(scheduled: u64, start: u64, end: u64) -> (u64, u64, u64) {
    let wait = start.saturating_sub(scheduled);
    let service = end.saturating_sub(start);
    (wait, service, wait.saturating_add(service))
}

/// Sleeps `nanos` and returns the clock reading after; a sleep longer than
/// [`LONG_WAIT_NANOS`] is slept on the interrupt (`None` if it came).
fn sleep(nanos: u64, clock: &dyn Clock, interrupt: &Interrupt) -> Option<u64> {
    let d = Duration::from_nanos(nanos);
    if nanos > LONG_WAIT_NANOS {
        if interrupt.sleep(d) {
            return None;
        }
    } else {
        std::thread::sleep(d);
    }
    Some(clock.now_nanos())
}

/// Spins on `clock` until `nanos` after `start` and returns the reading
/// that passed it; `None` if the interrupt came first.
fn spin(nanos: u64, start: u64, clock: &dyn Clock, interrupt: &Interrupt) -> Option<u64> {
    let until = start.saturating_add(nanos);
    loop {
        let now = clock.now_nanos();
        if now >= until {
            return Some(now);
        }
        if interrupt.is_set() {
            return None;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratekeeper::DefaultClock;

    #[test]
    fn work_values_are_read_and_checked() {
        let spec = |nanos, jitter_nanos| WorkSpec {
            nanos,
            jitter_nanos,
            cpu: false,
        };
        assert_eq!(parse_work("2ms"), Ok(spec(2_000_000, 0)));
        assert_eq!(parse_work("2ms~500us"), Ok(spec(2_000_000, 500_000)));
        assert_eq!(parse_work(" 5ms ~ 5ms "), Ok(spec(5_000_000, 5_000_000)));
        assert_eq!(parse_work("1s~0s"), Ok(spec(1_000_000_000, 0)));
        for (bad, says) in [
            ("0s", "longer than zero"),
            ("-2ms", "cannot be negative"),
            ("2ms~-1ms", "cannot be negative"),
            ("2ms~3ms", "larger than the work"),
            ("", "not a duration"),
            ("fast", "not a duration"),
            ("2ms~", "not a duration"),
            ("2ms~1ms~1ms", "not a duration"),
            ("1000y", "584 years"),
        ] {
            let e = parse_work(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn jitter_stays_within_its_bounds_and_is_the_same_per_worker() {
        let spec = WorkSpec {
            nanos: 1_000,
            jitter_nanos: 300,
            cpu: false,
        };
        let mut a = WorkLoad::new(spec, 0);
        let draws: Vec<u64> = (0..10_000).map(|_| a.draw()).collect();
        assert!(draws.iter().all(|d| (700..=1_300).contains(d)));
        // Both ends are reached, and the mean is about the work.
        assert!(draws.contains(&700) && draws.contains(&1_300));
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((mean - 1_000.0).abs() < 10.0, "mean {mean}");
        let mut again = WorkLoad::new(spec, 0);
        assert!(draws.iter().all(|&d| d == again.draw()), "deterministic");
        let mut other = WorkLoad::new(spec, 1);
        assert!(draws.iter().any(|&d| d != other.draw()), "per worker");
        // The largest work and jitter do not overflow.
        let mut max = WorkLoad::new(
            WorkSpec {
                nanos: u64::MAX,
                jitter_nanos: u64::MAX,
                cpu: false,
            },
            3,
        );
        let _ = max.draw();
        let no_jitter = WorkSpec {
            jitter_nanos: 0,
            ..spec
        };
        assert_eq!(WorkLoad::new(no_jitter, 0).draw(), 1_000);
    }

    #[test]
    fn response_is_wait_plus_service_and_never_below_either() {
        // On time, late, and let go 30 ns early (wait 0).
        assert_eq!(op_times(100, 100, 600), (0, 500, 500));
        assert_eq!(op_times(100, 350, 600), (250, 250, 500));
        assert_eq!(op_times(100, 70, 600), (0, 530, 530));
        for (s, st, e) in [(0, 5, 9), (9, 5, 20), (3, 3, 3), (u64::MAX, 0, u64::MAX)] {
            let (w, sv, r) = op_times(s, st, e);
            assert!(r >= sv && r >= w, "{s} {st} {e}");
        }
    }

    #[test]
    fn work_sleeps_or_spins_at_least_its_time_and_records_it() {
        crate::test_util::within(|| {
            let clock = DefaultClock::new();
            let interrupt = Interrupt::new();
            for cpu in [false, true] {
                let spec = WorkSpec {
                    nanos: 2_000_000,
                    jitter_nanos: 0,
                    cpu,
                };
                let mut w = WorkLoad::new(spec, 0);
                let start = clock.now_nanos();
                let scheduled = start.saturating_sub(1_000_000);
                let end = w.run(scheduled, start, &clock, &interrupt).unwrap();
                assert!(end - start >= 2_000_000, "cpu {cpu}: {}", end - start);
                let (service, response) = (w.service.summary(), w.response.summary());
                assert_eq!(service.max, end - start);
                assert_eq!(response.max, end - scheduled);
            }
            // The interrupt cuts a long sleep or any spin short; nothing is
            // recorded.
            interrupt.raise();
            for cpu in [false, true] {
                let spec = WorkSpec {
                    nanos: 60_000_000_000,
                    jitter_nanos: 0,
                    cpu,
                };
                let mut w = WorkLoad::new(spec, 0);
                let start = clock.now_nanos();
                assert_eq!(w.run(start, start, &clock, &interrupt), None);
                assert_eq!(w.service.count(), 0);
            }
        });
    }
}
