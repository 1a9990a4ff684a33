//! Property tests of Guava's smooth limiters on a manual clock.
//!
//! * **Against a model**: random operations (reservations, tries with any
//!   timeout, idle time, rate changes) give exactly what an independent
//!   model, written here from the spec's pseudocode (`guava_go.md` §2.3–2.8),
//!   gives: every wait, every refusal, the rate, the stored permits and the
//!   whole state as `Debug` shows it. In Guava's whole microseconds
//!   (`Resolution::Micros`, the default) and in the nanosecond mode
//!   (`Resolution::Nanos`: the same pseudocode with every time in whole
//!   nanoseconds and 1e9 in place of 1e6).
//! * **Concurrency is some serial order**: threads reserving and trying on one
//!   limiter, on a clock frozen while they run, get results that a serial run
//!   of the same operations in one interleaving of the threads (each thread's
//!   own order kept) reproduces exactly, on the model and then on a fresh
//!   limiter, and the limiter ends in that run's state.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::smooth::compat::{GuavaTimeouts, GuavaWarmup};
use ratekeeper::smooth::Resolution;
use ratekeeper::{
    AcquireError, Clock, Grant, ManualClock, RateLimiter, SmoothBursty, SmoothWarmingUp, WaitStats,
};
use ratekeeper::{ConfigError, ConfigReason};

// ------------------------------------------------------------- the model ---

#[derive(Debug, Clone, Copy)]
enum Config {
    Bursty {
        rate: f64,
        burst_seconds: f64,
        res: Resolution,
    },
    Warm {
        rate: f64,
        warmup_micros: i64,
        /// Added to the warm-up period in the nanosecond mode, through
        /// `warmup(Duration)` (0: `warmup_micros(..)`).
        sub_micro_nanos: u32,
        cold_factor: f64,
        res: Resolution,
    },
}

impl Config {
    fn rate(&self) -> f64 {
        match *self {
            Config::Bursty { rate, .. } | Config::Warm { rate, .. } => rate,
        }
    }

    fn res(&self) -> Resolution {
        match *self {
            Config::Bursty { res, .. } | Config::Warm { res, .. } => res,
        }
    }

    /// Ticks (units of the schedule) per second: Guava's 1e6, or 1e9.
    fn per_second(&self) -> f64 {
        match self.res() {
            Resolution::Nanos => 1e9,
            _ => 1e6,
        }
    }

    /// Nanoseconds per tick.
    fn tick(&self) -> u64 {
        match self.res() {
            Resolution::Nanos => 1,
            _ => 1000,
        }
    }

    /// Ticks as a duration.
    fn duration(&self, ticks: u64) -> Duration {
        match self.res() {
            Resolution::Nanos => Duration::from_nanos(ticks),
            _ => Duration::from_micros(ticks),
        }
    }

    /// The warm-up period in ticks.
    fn warmup(&self) -> i64 {
        match *self {
            Config::Bursty { .. } => 0,
            Config::Warm {
                warmup_micros,
                sub_micro_nanos,
                res,
                ..
            } => match res {
                Resolution::Nanos => warmup_micros
                    .saturating_mul(1000)
                    .saturating_add(i64::from(sub_micro_nanos)),
                _ => warmup_micros,
            },
        }
    }
}

/// Java's `Math.min(double, double)`: NaN when either is NaN.
fn jmin(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// Java's `(long)` of a double: truncation, NaN to 0, saturation.
fn jlong(x: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() {
        0
    } else if x >= TWO_63 {
        i64::MAX
    } else if x <= -TWO_63 {
        i64::MIN
    } else {
        x.trunc() as i64
    }
}

/// Guava's `SmoothRateLimiter`, from the spec: §2.3 `setRate`, §2.4
/// `resync`, §2.5 `reserveEarliestAvailable`, §2.6 bursty, §2.7 warming-up,
/// §2.8 `tryAcquire`. The crate's documented differences: a warm-up period
/// of 0 is no warm-up (it cools down at the stable interval and stores
/// nothing; Guava's 0/0 is NaN), and a burst of 0 seconds stores nothing even
/// at an infinite rate (Guava's 0 × ∞ is NaN).
#[derive(Debug, Clone, Copy)]
struct Model {
    cfg: Config,
    /// The clock reading at creation; the limiter's time is ticks since.
    created: u64,
    stored_permits: f64,
    max_permits: f64,
    stable_interval: f64,
    next_free: i64,
    threshold_permits: f64,
    slope: f64,
}

/// What one operation gave: a grant's delay, or an error.
type Outcome = Result<u64, AcquireError>;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// `reserve(n, None)`: Guava's `acquire(n)` without the sleep.
    Reserve(u32),
    /// `try_acquire_micros(n, timeout)`.
    Try(u32, i64),
    /// `reserve(n, Some(timeout))`, the timeout in nanoseconds.
    TryFor(u32, u64),
    /// Idle time.
    Advance(u64),
    /// Sleep what the next caller would wait (the backlog).
    SleepBacklog,
    /// `set_rate`, possibly invalid.
    SetRate(f64),
}

impl Model {
    fn new(cfg: Config, created: u64) -> Model {
        let mut m = Model {
            cfg,
            created,
            stored_permits: 0.0,
            max_permits: 0.0,
            stable_interval: 0.0,
            next_free: 0,
            threshold_permits: 0.0,
            slope: 0.0,
        };
        // The factories call setRate at "now", which is 0 micros since creation.
        m.do_set_rate(cfg.rate(), 0);
        m
    }

    /// Ticks since creation, saturating (in nanoseconds 2^63 of them, 292
    /// years, is the end of the limiter's time).
    fn read(&self, clock_nanos: u64) -> i64 {
        let ticks = clock_nanos.wrapping_sub(self.created) / self.cfg.tick();
        i64::try_from(ticks).unwrap_or(i64::MAX)
    }

    fn cool_down_interval(&self) -> f64 {
        match self.cfg {
            Config::Bursty { .. } => self.stable_interval,
            Config::Warm { .. } => {
                if self.cfg.warmup() == 0 {
                    self.stable_interval
                } else {
                    self.cfg.warmup() as f64 / self.max_permits
                }
            }
        }
    }

    fn resync(&mut self, now: i64) {
        if now > self.next_free {
            let new_permits = now.wrapping_sub(self.next_free) as f64 / self.cool_down_interval();
            self.stored_permits = jmin(self.max_permits, self.stored_permits + new_permits);
            self.next_free = now;
        }
    }

    fn do_set_rate(&mut self, rate: f64, now: i64) {
        self.resync(now);
        let stable = self.cfg.per_second() / rate;
        self.stable_interval = stable;
        let old_max = self.max_permits;
        match self.cfg {
            Config::Bursty { burst_seconds, .. } => {
                // Deviation: no burst stores nothing, even at rate +inf
                // (Guava: 0 × ∞ = NaN).
                self.max_permits = if burst_seconds == 0.0 {
                    0.0
                } else {
                    burst_seconds * rate
                };
                self.stored_permits = if old_max == f64::INFINITY {
                    self.max_permits
                } else if old_max == 0.0 {
                    0.0
                } else {
                    self.stored_permits * self.max_permits / old_max
                };
            }
            Config::Warm { cold_factor, .. } => {
                let w = self.cfg.warmup() as f64;
                let cold_interval = stable * cold_factor;
                if self.cfg.warmup() == 0 {
                    // Deviation: no warm-up stores nothing, whatever the rate
                    // (Guava: 0/0 = NaN at rate +inf).
                    self.threshold_permits = 0.0;
                    self.max_permits = 0.0;
                    self.slope = 0.0;
                } else {
                    self.threshold_permits = 0.5 * w / stable;
                    self.max_permits = self.threshold_permits + 2.0 * w / (stable + cold_interval);
                    self.slope =
                        (cold_interval - stable) / (self.max_permits - self.threshold_permits);
                }
                self.stored_permits = if old_max == f64::INFINITY {
                    0.0
                } else if old_max == 0.0 {
                    self.max_permits
                } else {
                    self.stored_permits * self.max_permits / old_max
                };
            }
        }
    }

    fn set_rate(&mut self, rate: f64, clock_nanos: u64) -> Result<(), ()> {
        // Rejects 0, negatives and NaN; accepts +inf and subnormals.
        if rate > 0.0 {
            let now = self.read(clock_nanos);
            self.do_set_rate(rate, now);
            Ok(())
        } else {
            Err(())
        }
    }

    fn stored_permits_to_wait_time(&self, stored: f64, permits_to_take: f64) -> i64 {
        match self.cfg {
            Config::Bursty { .. } => 0,
            Config::Warm { .. } => {
                let f = |p: f64| self.stable_interval + p * self.slope;
                let mut to_take = permits_to_take;
                let above = stored - self.threshold_permits;
                let mut ticks: i64 = 0;
                if above > 0.0 {
                    let t = jmin(above, to_take);
                    ticks = jlong(t * (f(above) + f(above - t)) / 2.0);
                    to_take -= t;
                }
                // Saturating where Guava's long sum wraps (issue 16).
                ticks.saturating_add(jlong(self.stable_interval * to_take))
            }
        }
    }

    fn reserve_earliest_available(&mut self, permits: u32, now: i64) -> i64 {
        self.resync(now);
        let moment = self.next_free;
        let n = f64::from(permits);
        let spend = jmin(n, self.stored_permits);
        let fresh = n - spend;
        let wait = self
            .stored_permits_to_wait_time(self.stored_permits, spend)
            .saturating_add(jlong(fresh * self.stable_interval));
        self.next_free = self.next_free.saturating_add(wait);
        self.stored_permits -= spend;
        moment
    }

    /// A grant's delay: Guava's wait in nanoseconds (× 1000 in Guava's
    /// microseconds), as far as a `u64` nanosecond clock reading can hold it.
    fn delay(&self, wait_ticks: i64, clock_nanos: u64) -> u64 {
        let nanos = (wait_ticks.max(0) as u64).saturating_mul(self.cfg.tick());
        nanos.min(u64::MAX - clock_nanos)
    }

    fn reserve(&mut self, permits: u32, clock_nanos: u64) -> Outcome {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        let now = self.read(clock_nanos);
        let moment = self.reserve_earliest_available(permits, now);
        // Saturating, as the crate's grants do.
        Ok(self.delay(moment.saturating_sub(now), clock_nanos))
    }

    fn try_acquire(
        &mut self,
        permits: u32,
        timeout_ticks: i64,
        max_wait: Duration,
        clock_nanos: u64,
    ) -> Outcome {
        if permits == 0 {
            return Err(AcquireError::ZeroPermits);
        }
        let timeout = timeout_ticks.max(0);
        let now = self.read(clock_nanos);
        // canAcquire: no resync, no change when refused.
        if self.next_free.saturating_sub(timeout) > now {
            let wait = self.next_free.saturating_sub(now).max(0) as u64;
            return Err(AcquireError::WouldWait {
                wait: self.cfg.duration(wait),
                max_wait,
            });
        }
        self.reserve(permits, clock_nanos)
    }

    /// Applies a reservation or a try.
    fn apply(&mut self, op: Op, clock_nanos: u64) -> Outcome {
        match op {
            Op::Reserve(n) => self.reserve(n, clock_nanos),
            Op::Try(n, micros) => {
                // A timeout in microseconds: 1000 ticks each in nanoseconds.
                let micros = micros.max(0);
                let t = micros.saturating_mul(1000 / self.cfg.tick() as i64);
                let max_wait = Duration::from_micros(micros as u64);
                self.try_acquire(n, t, max_wait, clock_nanos)
            }
            Op::TryFor(n, nanos) => {
                let t = i64::try_from(nanos / self.cfg.tick()).unwrap_or(i64::MAX);
                self.try_acquire(n, t, Duration::from_nanos(nanos), clock_nanos)
            }
            _ => unreachable!("not a reservation: {op:?}"),
        }
    }

    fn backlog_nanos(&self, clock_nanos: u64) -> u64 {
        let now = self.read(clock_nanos);
        (self.next_free.saturating_sub(now).max(0) as u64).saturating_mul(self.cfg.tick())
    }

    /// The state as the limiter's `Debug` prints it.
    fn debug(&self) -> String {
        let name = match self.cfg {
            Config::Bursty { .. } => "SmoothBursty",
            Config::Warm { .. } => "SmoothWarmingUp",
        };
        let unit = unit(self.cfg);
        format!(
            "{name} {{ rate: {:?}, stored_permits: {:?}, max_permits: {:?}, next_free_{unit}: {:?}, .. }}",
            self.cfg.per_second() / self.stable_interval,
            self.stored_permits,
            self.max_permits,
            self.next_free,
        )
    }
}

// ------------------------------------------------------------ the limiter ---

#[derive(Debug)]
enum Lim {
    B(SmoothBursty<ManualClock>),
    W(SmoothWarmingUp<ManualClock>),
}

impl Lim {
    fn build(cfg: Config, clock: &ManualClock) -> Lim {
        match cfg {
            Config::Bursty {
                rate,
                burst_seconds,
                res,
            } => Lim::B(
                SmoothBursty::builder(rate)
                    .max_burst_seconds(burst_seconds)
                    .resolution(res)
                    .build_with_clock(clock.clone())
                    .unwrap(),
            ),
            Config::Warm {
                rate,
                warmup_micros,
                sub_micro_nanos,
                cold_factor,
                res,
            } => {
                let b = SmoothWarmingUp::builder(rate)
                    .cold_factor(cold_factor)
                    .resolution(res);
                let b = if sub_micro_nanos == 0 {
                    GuavaWarmup::warmup_micros(b, warmup_micros)
                } else {
                    let micros = Duration::from_micros(warmup_micros.max(0) as u64);
                    b.warmup(micros + Duration::from_nanos(u64::from(sub_micro_nanos)))
                };
                Lim::W(b.build_with_clock(clock.clone()).unwrap())
            }
        }
    }

    fn limiter(&self) -> &dyn RateLimiter {
        match self {
            Lim::B(l) => l,
            Lim::W(l) => l,
        }
    }

    fn try_micros(&self, n: u32, t: i64) -> Result<Grant, AcquireError> {
        match self {
            Lim::B(l) => GuavaTimeouts::try_acquire_micros(l, n, t),
            Lim::W(l) => GuavaTimeouts::try_acquire_micros(l, n, t),
        }
    }

    fn set_rate(&self, r: f64) -> Result<(), ConfigError> {
        match self {
            Lim::B(l) => l.set_rate(r),
            Lim::W(l) => l.set_rate(r),
        }
    }

    fn rate(&self) -> f64 {
        match self {
            Lim::B(l) => l.rate(),
            Lim::W(l) => l.rate(),
        }
    }

    fn stored_permits(&self) -> f64 {
        match self {
            Lim::B(l) => l.stored_permits(),
            Lim::W(l) => l.stored_permits(),
        }
    }

    fn debug(&self) -> String {
        match self {
            Lim::B(l) => format!("{l:?}"),
            Lim::W(l) => format!("{l:?}"),
        }
    }

    /// Applies a reservation or a try; checks the grant's own fields.
    fn apply(&self, op: Op, clock_nanos: u64) -> Outcome {
        let (n, r) = match op {
            Op::Reserve(n) => (n, self.limiter().reserve(n, None)),
            Op::Try(n, t) => (n, self.try_micros(n, t)),
            Op::TryFor(n, nanos) => (
                n,
                self.limiter().reserve(n, Some(Duration::from_nanos(nanos))),
            ),
            _ => unreachable!("not a reservation: {op:?}"),
        };
        r.map(|g| {
            assert_eq!(g.permits(), n, "{g:?}");
            assert_eq!(g.started_nanos(), clock_nanos, "{g:?}");
            assert_eq!(g.scheduled_nanos(), g.ready_nanos(), "{g:?}");
            g.delay_nanos()
        })
    }
}

/// The unit `Debug` names `next_free` in.
fn unit(cfg: Config) -> &'static str {
    match cfg.res() {
        Resolution::Nanos => "nanos",
        _ => "micros",
    }
}

/// The same number, NaN equal to NaN.
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

// ------------------------------------------------------------ strategies ---

fn valid_rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.5f64..2000.0,
        1 => Just(1.0),
        1 => Just(2.0),
        1 => Just(7.0),
        1 => Just(1e-3),
        1 => Just(1e6),             // 1 µs a permit
        1 => Just(3e6),             // under 1 µs: truncated costs of 0
        1 => Just(1e7),             // 100 ns a permit
        1 => 1e5f64..1e8,
        1 => Just(3e9),             // under 1 ns: truncated costs of 0
        1 => Just(f64::INFINITY),
        1 => Just(f64::from_bits(1)), // Double.MIN_VALUE
    ]
}

fn resolution() -> impl Strategy<Value = Resolution> {
    prop_oneof![Just(Resolution::Micros), Just(Resolution::Nanos)]
}

fn config(rate: BoxedStrategy<f64>) -> impl Strategy<Value = Config> {
    prop_oneof![
        (
            rate.clone(),
            prop_oneof![Just(1.0), Just(0.0), Just(2.0), 0.0f64..5.0],
            resolution(),
        )
            .prop_map(|(rate, burst_seconds, res)| Config::Bursty {
                rate,
                burst_seconds,
                res,
            }),
        (
            rate,
            prop_oneof![
                Just(4_000_000i64),
                Just(0),
                Just(1),
                Just(1_000),
                0i64..10_000_000
            ],
            prop_oneof![3 => Just(0u32), 1 => 1u32..1000],
            prop_oneof![Just(3.0), Just(1.0), Just(10.0), 1.0f64..20.0],
            resolution(),
        )
            .prop_map(|(rate, warmup_micros, sub_micro_nanos, cold_factor, res)| {
                Config::Warm {
                    rate,
                    warmup_micros,
                    sub_micro_nanos: match res {
                        Resolution::Nanos => sub_micro_nanos,
                        _ => 0,
                    },
                    cold_factor,
                    res,
                }
            }),
    ]
}

fn permits() -> impl Strategy<Value = u32> {
    prop_oneof![
        12 => 1u32..5,
        1 => Just(0u32),
        1 => 5u32..1000,
        1 => Just(i32::MAX as u32),
        1 => Just(u32::MAX),
    ]
}

fn timeout_micros() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => -1_000i64..4_000_000,
        1 => Just(0i64),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(-1i64),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => permits().prop_map(Op::Reserve),
        4 => (permits(), timeout_micros()).prop_map(|(n, t)| Op::Try(n, t)),
        2 => (permits(), prop_oneof![0u64..4_000_000_000, Just(u64::MAX)])
            .prop_map(|(n, t)| Op::TryFor(n, t)),
        4 => prop_oneof![
            0u64..3_000_000_000,
            0u64..2_000,                // less than the limiter's microsecond
            Just(10_000_000_000u64),
        ]
        .prop_map(Op::Advance),
        2 => Just(Op::SleepBacklog),
        1 => prop_oneof![
            6 => valid_rate(),
            1 => Just(0.0),
            1 => Just(-1.0),
            1 => Just(f64::NAN),
        ]
        .prop_map(Op::SetRate),
    ]
}

fn clock_start() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..u64::MAX / 4,
        Just(u64::MAX - 5_000_000_000), // saturates during the run
    ]
}

// ------------------------------------------------ single thread vs model ---

fn run_against_model(cfg: Config, start: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new(start);
    let lim = Lim::build(cfg, &clock);
    let mut model = Model::new(cfg, start);
    prop_assert_eq!(lim.debug(), model.debug(), "at creation");
    for (i, &op) in ops.iter().enumerate() {
        let now = clock.now_nanos();
        match op {
            Op::Advance(n) => clock.advance_nanos(n),
            Op::SleepBacklog => {
                let backlog = model.backlog_nanos(now);
                prop_assert_eq!(
                    lim.limiter().wait_stats(),
                    WaitStats {
                        backlog_nanos: backlog,
                        total_wait_nanos: backlog
                    },
                    "op {}",
                    i
                );
                clock.advance_nanos(backlog);
            }
            Op::SetRate(r) => {
                let got = lim.set_rate(r);
                let want = model.set_rate(r, now);
                match (got, want) {
                    (Ok(()), Ok(())) => {}
                    (Err(e), Err(())) if e.reason() == ConfigReason::RateNotPositive => {
                        prop_assert_eq!(e.to_string(), format!("rate must be positive, got {}", r));
                    }
                    (got, want) => prop_assert!(false, "op {i} {op:?}: {got:?} vs {want:?}"),
                }
            }
            _ => {
                let got = lim.apply(op, now);
                let want = model.apply(op, now);
                prop_assert_eq!(got, want, "op {} {:?}", i, op);
            }
        }
        prop_assert!(
            same(lim.rate(), cfg.per_second() / model.stable_interval),
            "op {}",
            i
        );
        prop_assert!(same(lim.stored_permits(), model.stored_permits), "op {}", i);
        prop_assert_eq!(lim.debug(), model.debug(), "after op {} {:?}", i, op);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn single_thread_matches_the_model(
        cfg in config(valid_rate().boxed()),
        start in clock_start(),
        ops in prop::collection::vec(op(), 1..80),
    ) {
        run_against_model(cfg, start, &ops)?;
    }
}

#[test]
fn the_model_replays_the_hand_checked_warm_up() {
    // The model itself against testWarmUp (spec §4), so that the properties
    // above do not merely compare two copies of one mistake.
    let cfg = Config::Warm {
        rate: 2.0,
        warmup_micros: 4_000_000,
        cold_factor: 3.0,
        sub_micro_nanos: 0,
        res: Resolution::Micros,
    };
    let mut m = Model::new(cfg, 0);
    let mut now = 0u64;
    let mut waits = Vec::new();
    for _ in 0..8 {
        let d = m.reserve(1, now).unwrap();
        now += d;
        waits.push(d / 1000);
    }
    assert_eq!(
        waits,
        [0, 1_375_000, 1_125_000, 875_000, 625_000, 500_000, 500_000, 500_000]
    );
    // The same in nanoseconds, a thousand times faster: 2e6 permits/s, a
    // 4 µs warm-up (4000 ns, given as 3 µs and 1000 ns... as 4 µs here, and
    // as 3 µs + 1000 ns through the sub-microsecond part).
    for (warmup_micros, sub_micro_nanos) in [(4, 0), (3, 1000)] {
        let cfg = Config::Warm {
            rate: 2e6,
            warmup_micros,
            cold_factor: 3.0,
            sub_micro_nanos,
            res: Resolution::Nanos,
        };
        let mut m = Model::new(cfg, 0);
        let mut now = 0u64;
        let mut waits = Vec::new();
        for _ in 0..8 {
            let d = m.reserve(1, now).unwrap();
            now += d;
            waits.push(d);
        }
        assert_eq!(waits, [0, 1_375, 1_125, 875, 625, 500, 500, 500]);
    }
    let cfg = Config::Bursty {
        rate: 1.0,
        burst_seconds: 1.0,
        res: Resolution::Micros,
    };
    let mut m = Model::new(cfg, 0);
    let waits: Vec<u64> = [1, 1, 2, 4, 8, 1]
        .iter()
        .map(|&n| m.reserve(n, 0).unwrap() / 1_000_000_000)
        .collect();
    assert_eq!(waits, [0, 1, 2, 4, 8, 16]);
}

// ------------------------------------------- concurrency is a serial order ---

/// One round: the main thread moves the clock and may change the rate, then
/// the threads run their operations at once on the frozen clock.
#[derive(Debug, Clone)]
struct Phase {
    advance: u64,
    set_rate: Option<f64>,
    threads: Vec<Vec<Op>>,
}

fn concurrent_rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 1.0f64..1000.0,
        1 => Just(2.0),
        1 => Just(7.0),
        1 => Just(1e6),
        1 => Just(1e7),
        1 => Just(f64::INFINITY),
    ]
}

fn concurrent_op() -> impl Strategy<Value = Op> {
    let n = prop_oneof![8 => 1u32..5, 1 => 5u32..200];
    prop_oneof![
        3 => n.clone().prop_map(Op::Reserve),
        2 => (n.clone(), prop_oneof![0i64..3_000_000, Just(-1i64), Just(i64::MAX)])
            .prop_map(|(n, t)| Op::Try(n, t)),
        1 => (n, 0u64..3_000_000_000).prop_map(|(n, t)| Op::TryFor(n, t)),
    ]
}

fn phase() -> impl Strategy<Value = Phase> {
    (
        prop_oneof![Just(0u64), 0u64..3_000_000_000],
        prop::option::weighted(0.25, concurrent_rate()),
        prop::collection::vec(prop::collection::vec(concurrent_op(), 1..10), 2..=4),
    )
        .prop_map(|(advance, set_rate, threads)| Phase {
            advance,
            set_rate,
            threads,
        })
}

/// What a phase observed.
#[derive(Debug)]
struct Observed {
    clock: u64,
    /// Per thread, per operation, in the thread's order.
    outcomes: Vec<Vec<Outcome>>,
    /// The limiter's state after the phase.
    debug: String,
}

/// How far next_free was ahead of now when the outcome was decided, in
/// nanoseconds (a grant waits exactly that; a refusal reports it). `None`
/// where the grant's delay was cut short by the end of the clock's range.
fn backlog_seen(o: &Outcome, clock: u64) -> Option<u128> {
    match o {
        Ok(delay) if *delay == u64::MAX - clock => None,
        Ok(delay) => Some(u128::from(*delay)),
        Err(AcquireError::WouldWait { wait, .. }) => Some(wait.as_nanos()),
        Err(_) => None,
    }
}

/// Depth-first search for an interleaving of the threads' operations (each
/// thread's own order kept) that, applied serially to `model`, gives every
/// observed outcome and ends in the observed state. Fills `order` with
/// (thread, index) pairs.
///
/// While the clock stands still next_free only moves forward, so:
/// * a refusal that matches now is taken at once (it changes nothing, so
///   taking it earlier never spoils a serial order);
/// * an operation that saw a smaller backlog than the model's current one can
///   never match any more: the branch is dead;
/// * a grant can only go when the backlog is exactly the delay it got, so the
///   search branches only between grants tied at the same moment;
/// * a node (how far each thread got, and the model's state) that failed
///   once fails again, however it was reached: `failed` remembers them, so
///   many grants tied at one moment (all served from stored permits, say)
///   cost a polynomial search, not one per interleaving.
fn find_serial_order(
    model: Model,
    phase: &Phase,
    seen: &Observed,
    pos: &mut Vec<usize>,
    order: &mut Vec<(usize, usize)>,
    budget: &mut u32,
    failed: &mut HashSet<(Vec<usize>, String)>,
) -> Option<Model> {
    if *budget == 0 {
        return None;
    }
    *budget -= 1;
    let node = (pos.clone(), model.debug());
    if failed.contains(&node) {
        return None;
    }
    let threads = &phase.threads;
    let (saved_pos, saved_len) = (pos.clone(), order.len());
    let pending = |pos: &[usize], t: usize| (pos[t] < threads[t].len()).then(|| pos[t]);

    // Refusals that match now.
    let mut progressed = true;
    while progressed {
        progressed = false;
        for t in 0..threads.len() {
            while let Some(i) = pending(pos, t) {
                let want = seen.outcomes[t][i];
                let mut m = model;
                if want.is_ok() || m.apply(threads[t][i], seen.clock) != want {
                    break;
                }
                pos[t] += 1;
                order.push((t, i));
                progressed = true;
            }
        }
    }

    let backlog = u128::from(model.backlog_nanos(seen.clock));
    let mut dead = false;
    let mut done = true;
    for t in 0..threads.len() {
        if let Some(i) = pending(pos, t) {
            done = false;
            dead |= backlog_seen(&seen.outcomes[t][i], seen.clock).is_some_and(|b| b < backlog);
        }
    }
    if done && model.debug() == seen.debug {
        return Some(model);
    }
    if !done && !dead {
        for t in 0..threads.len() {
            let Some(i) = pending(pos, t) else { continue };
            let want = seen.outcomes[t][i];
            let mut m = model;
            if want.is_err() || m.apply(threads[t][i], seen.clock) != want {
                continue;
            }
            pos[t] += 1;
            order.push((t, i));
            if let Some(end) = find_serial_order(m, phase, seen, pos, order, budget, failed) {
                return Some(end);
            }
            pos[t] -= 1;
            order.pop();
        }
    }
    *pos = saved_pos;
    order.truncate(saved_len);
    if *budget > 0 {
        // A complete failure, not one cut short by the budget.
        failed.insert(node);
    }
    None
}

fn run_concurrently(cfg: Config, start: u64, phases: &[Phase]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new(start);
    let lim = Arc::new(Lim::build(cfg, &clock));
    let mut observed = Vec::new();
    for p in phases {
        clock.advance_nanos(p.advance);
        if let Some(r) = p.set_rate {
            lim.set_rate(r).unwrap();
        }
        let now = clock.now_nanos();
        let barrier = Arc::new(Barrier::new(p.threads.len()));
        let handles: Vec<_> = p
            .threads
            .iter()
            .map(|ops| {
                let (lim, barrier, ops) = (Arc::clone(&lim), Arc::clone(&barrier), ops.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    ops.iter().map(|&op| lim.apply(op, now)).collect::<Vec<_>>()
                })
            })
            .collect();
        let outcomes = handles.into_iter().map(|h| h.join().unwrap()).collect();
        prop_assert_eq!(clock.now_nanos(), now, "the clock stood still");
        observed.push(Observed {
            clock: now,
            outcomes,
            debug: lim.debug(),
        });
    }

    // 1. Find a serial order on the model, phase by phase.
    let mut model = Model::new(cfg, start);
    let mut orders = Vec::new();
    for (k, (p, seen)) in phases.iter().zip(&observed).enumerate() {
        if let Some(r) = p.set_rate {
            model.set_rate(r, seen.clock).unwrap();
        }
        let mut pos = vec![0; p.threads.len()];
        let mut order = Vec::new();
        let mut budget = 200_000;
        let mut failed = HashSet::new();
        match find_serial_order(
            model,
            p,
            seen,
            &mut pos,
            &mut order,
            &mut budget,
            &mut failed,
        ) {
            Some(end) => model = end,
            None => prop_assert!(
                false,
                "phase {k}: no serial order gives {seen:?} (search budget left: {budget})"
            ),
        }
        orders.push(order);
    }

    // 2. That order, replayed on a fresh limiter, gives the same outcomes,
    //    one for one, and the same states.
    let clock = ManualClock::new(start);
    let fresh = Lim::build(cfg, &clock);
    for ((p, seen), order) in phases.iter().zip(&observed).zip(&orders) {
        clock.advance_nanos(p.advance);
        prop_assert_eq!(clock.now_nanos(), seen.clock);
        if let Some(r) = p.set_rate {
            fresh.set_rate(r).unwrap();
        }
        for &(t, i) in order {
            let got = fresh.apply(p.threads[t][i], seen.clock);
            prop_assert_eq!(got, seen.outcomes[t][i], "thread {} op {}", t, i);
        }
        prop_assert_eq!(fresh.debug(), seen.debug.clone());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn concurrent_reservations_equal_a_serial_order(
        cfg in config(concurrent_rate().boxed()),
        start in prop_oneof![Just(0u64), 0u64..1_000_000_000_000],
        phases in prop::collection::vec(phase(), 1..4),
    ) {
        run_concurrently(cfg, start, &phases)?;
    }
}

#[test]
fn many_threads_on_one_limiter_equal_a_serial_order() {
    // A larger fixed case: 4 threads × 200 operations, both kinds.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    for cfg in [
        Config::Bursty {
            rate: 5.0,
            burst_seconds: 1.0,
            res: Resolution::Micros,
        },
        Config::Warm {
            rate: 5.0,
            warmup_micros: 4_000_000,
            cold_factor: 3.0,
            sub_micro_nanos: 0,
            res: Resolution::Micros,
        },
        Config::Bursty {
            rate: 3e6,
            burst_seconds: 1e-5,
            res: Resolution::Nanos,
        },
        Config::Warm {
            rate: 3e6,
            warmup_micros: 4,
            cold_factor: 3.0,
            sub_micro_nanos: 500,
            res: Resolution::Nanos,
        },
    ] {
        let threads: Vec<Vec<Op>> = (0..4)
            .map(|_| {
                (0..200)
                    .map(|_| match next(3) {
                        0 => Op::Reserve(1 + next(3) as u32),
                        _ => Op::Try(1 + next(3) as u32, next(60_000_000) as i64),
                    })
                    .collect()
            })
            .collect();
        let phases = [
            Phase {
                advance: 0,
                set_rate: None,
                threads: threads.clone(),
            },
            Phase {
                advance: 30_000_000_000,
                set_rate: Some(50.0),
                threads,
            },
        ];
        run_concurrently(cfg, 0, &phases).unwrap();
    }
}

#[test]
fn the_serial_order_check_rejects_an_impossible_history() {
    // At 1 permit/s two single permits cannot both go at once; one must wait
    // 1 s. And a refusal must report the backlog its lock order saw.
    let cfg = Config::Bursty {
        rate: 1.0,
        burst_seconds: 1.0,
        res: Resolution::Micros,
    };
    let phase = Phase {
        advance: 0,
        set_rate: None,
        threads: vec![vec![Op::Reserve(1)], vec![Op::Reserve(1), Op::Try(1, 0)]],
    };
    let check = |outcomes: Vec<Vec<Outcome>>, debug: &str| {
        let seen = Observed {
            clock: 0,
            outcomes,
            debug: debug.to_string(),
        };
        let mut pos = vec![0; 2];
        let mut order = Vec::new();
        let mut budget = 1_000;
        find_serial_order(
            Model::new(cfg, 0),
            &phase,
            &seen,
            &mut pos,
            &mut order,
            &mut budget,
            &mut HashSet::new(),
        )
        .map(|_| order)
    };
    let end = "SmoothBursty { rate: 1.0, stored_permits: 0.0, max_permits: 1.0, next_free_micros: 2000000, .. }";
    let refused = |s: u64| {
        Err(AcquireError::WouldWait {
            wait: Duration::from_secs(s),
            max_wait: Duration::ZERO,
        })
    };
    assert_eq!(
        check(vec![vec![Ok(1_000_000_000)], vec![Ok(0), refused(2)]], end),
        Some(vec![(1, 0), (0, 0), (1, 1)])
    );
    assert_eq!(
        check(vec![vec![Ok(0)], vec![Ok(1_000_000_000), refused(2)]], end),
        Some(vec![(0, 0), (1, 0), (1, 1)])
    );
    assert_eq!(
        check(vec![vec![Ok(1_000_000_000)], vec![Ok(0), refused(1)]], end),
        Some(vec![(1, 0), (1, 1), (0, 0)])
    );
    // Impossible: both at once; a refusal that saw less backlog than its own
    // thread's grant left; the wrong final state.
    assert_eq!(check(vec![vec![Ok(0)], vec![Ok(0), refused(2)]], end), None);
    assert_eq!(
        check(vec![vec![Ok(0)], vec![Ok(1_000_000_000), refused(1)]], end),
        None
    );
    assert_eq!(
        check(
            vec![vec![Ok(0)], vec![Ok(1_000_000_000), refused(2)]],
            &end.replace("2000000", "2000001")
        ),
        None
    );
}

// ------------------------------------------------------------- cancels ---

/// An operation, or a cancel of the grant at this index (modulo the grants
/// so far).
#[derive(Debug, Clone, Copy)]
enum WithCancel {
    Op(Op),
    Cancel(usize),
}

/// Runs `ops` on a limiter, cancelling earlier grants (any of them, at any
/// time, in any order), then replays on the model only what stood: the
/// grants not cancelled, the rate changes and the time that passed. Every
/// grant that stood must equal the model's, and the limiter must end in the
/// model's state: a cancel that succeeds undoes its reservation exactly, and
/// only while nothing was built on it. The one exception: a reservation that
/// cost nothing and spent no stored permit (a permit under 1 µs) left the
/// state as it found it, so a grant before it can still be given back; it
/// keeps its time, later than the model's.
///
/// Rates are kept where a permit costs at least 3 ticks (at or below
/// 300 000/s in Guava's microseconds, 3e8/s in nanoseconds): above that a
/// later reservation may leave a state that the grant alone could have
/// produced (see the smooth module's docs). Runs whose schedule saturates
/// (the model would charge again what saturated) are left out: rates so
/// small that one permit saturates it, and runs that reach its end (in
/// nanoseconds, 292 years of reservations).
fn run_with_cancels(cfg: Config, start: u64, ops: &[WithCancel]) -> Result<(), TestCaseError> {
    #[derive(Debug)]
    enum Done {
        Advance(u64),
        SetRate(f64),
        /// The grant, whether it stands, whether it changed the state.
        Granted(Op, Grant, bool, bool),
    }
    let clock = ManualClock::new(start);
    let lim = Lim::build(cfg, &clock);
    let mut done: Vec<Done> = Vec::new();
    let mut cancelled = 0;
    for (i, &op) in ops.iter().enumerate() {
        let now = clock.now_nanos();
        match op {
            WithCancel::Op(Op::Advance(n)) => {
                clock.advance_nanos(n);
                done.push(Done::Advance(n));
            }
            WithCancel::Op(Op::SleepBacklog) => {
                let n = lim.limiter().wait_stats().backlog_nanos;
                clock.advance_nanos(n);
                done.push(Done::Advance(n));
            }
            WithCancel::Op(Op::SetRate(r)) => {
                if lim.set_rate(r).is_ok() {
                    done.push(Done::SetRate(r));
                }
            }
            WithCancel::Op(op) => {
                let before = lim.debug();
                let r = match op {
                    Op::Reserve(n) => lim.limiter().reserve(n, None),
                    Op::Try(n, t) => lim.try_micros(n, t),
                    Op::TryFor(n, t) => lim.limiter().reserve(n, Some(Duration::from_nanos(t))),
                    _ => unreachable!(),
                };
                if let Ok(g) = r {
                    let after = lim.debug();
                    if after.contains(&format!("_{}: {}, ..", unit(cfg), i64::MAX)) {
                        // At its end (292 years out in nanoseconds) the
                        // schedule absorbs reservations without a trace.
                        return Err(TestCaseError::reject("the schedule saturated"));
                    }
                    done.push(Done::Granted(op, g, true, after != before));
                }
            }
            WithCancel::Cancel(k) => {
                let grants: Vec<usize> = (0..done.len())
                    .filter(|&j| matches!(done[j], Done::Granted(..)))
                    .collect();
                if grants.is_empty() {
                    continue;
                }
                let j = grants[k % grants.len()];
                let Done::Granted(_, g, ref mut standing, _) = done[j] else {
                    unreachable!()
                };
                let before = lim.debug();
                if lim.limiter().cancel(&g) {
                    prop_assert!(*standing, "op {}: grant {} given back twice", i, j);
                    if lim.debug() == before {
                        // Not the latest: kept for the next caller of its
                        // size (issue 16), which the model does not
                        // follow. The grant still stands; stop here.
                        break;
                    }
                    prop_assert!(g.ready_nanos() >= now && g.ready_nanos() > g.started_nanos());
                    *standing = false;
                    cancelled += 1;
                } else {
                    prop_assert_eq!(lim.debug(), before, "op {}: a refused cancel changed it", i);
                }
            }
        }
    }
    // The model, without what was cancelled.
    let mut model = Model::new(cfg, start);
    let mut now = start;
    for d in &done {
        match *d {
            Done::Advance(n) => now = now.saturating_add(n),
            Done::SetRate(r) => prop_assert!(model.set_rate(r, now).is_ok()),
            Done::Granted(op, g, true, changed) => {
                let got = model.apply(op, now);
                if changed {
                    prop_assert_eq!(got, Ok(g.delay_nanos()), "{:?} at {}", op, now);
                } else {
                    prop_assert!(
                        got.is_ok_and(|d| d <= g.delay_nanos()),
                        "{:?} at {}",
                        op,
                        now
                    );
                }
            }
            Done::Granted(_, _, false, _) => {}
        }
    }
    prop_assert_eq!(lim.debug(), model.debug(), "after {} cancels", cancelled);
    prop_assert!(same(lim.stored_permits(), model.stored_permits));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn cancels_undo_exactly_what_nothing_was_built_on(
        cfg in config(valid_rate().boxed()),
        start in clock_start(),
        ops in prop::collection::vec(
            prop_oneof![
                4 => op().prop_map(WithCancel::Op),
                2 => any::<usize>().prop_map(WithCancel::Cancel),
            ],
            1..80,
        ),
    ) {
        let most = 0.3 * cfg.per_second(); // over 3 ticks a permit
        let out = |r: f64| (r > 0.0 && r < 1e-300) || (r > most && r.is_finite());
        prop_assume!(!out(cfg.rate()));
        let ops: Vec<WithCancel> = ops
            .into_iter()
            .map(|op| match op {
                WithCancel::Op(Op::SetRate(r)) if out(r) => WithCancel::Op(Op::SetRate(1e3)),
                op => op,
            })
            .collect();
        run_with_cancels(cfg, start, &ops)?;
    }
}

/// Reservations given back newest first all come back, on both limiters.
#[test]
fn cancels_newest_first_restore_the_start() {
    for cfg in [
        Config::Bursty {
            rate: 5.0,
            burst_seconds: 1.0,
            res: Resolution::Micros,
        },
        Config::Warm {
            rate: 2.0,
            warmup_micros: 4_000_000,
            cold_factor: 3.0,
            sub_micro_nanos: 0,
            res: Resolution::Micros,
        },
        Config::Bursty {
            rate: 5e6,
            burst_seconds: 1e-6,
            res: Resolution::Nanos,
        },
        Config::Warm {
            rate: 2e6,
            warmup_micros: 4,
            cold_factor: 3.0,
            sub_micro_nanos: 0,
            res: Resolution::Nanos,
        },
    ] {
        let clock = ManualClock::new(0);
        let lim = Lim::build(cfg, &clock);
        lim.limiter().reserve(1, None).unwrap();
        let start = lim.debug();
        // (A warming-up reservation that spends the last stored permits is
        // not given back: 1 + 4 × 1 of the 8 stored.)
        let n = |k: u32| {
            if matches!(cfg, Config::Bursty { .. }) {
                k
            } else {
                1
            }
        };
        let grants: Vec<Grant> = (1..=4)
            .map(|k| lim.limiter().reserve(n(k), None).unwrap())
            .collect();
        for g in grants.iter().rev() {
            assert!(lim.limiter().cancel(g), "{cfg:?}: {g:?}");
        }
        assert_eq!(lim.debug(), start, "{cfg:?}");
        assert!(grants.iter().all(|g| !lim.limiter().cancel(g)));
    }
}
