//! `--stages` on a run (`exec`, `pace`): the ops' schedule from ramping
//! stages ([`Stages`], as k6's ramping arrival rate), the limiters' rate a
//! thread of its own keeps above it ([`drive`]), and what a report says of
//! them ([`Staged`]).
//!
//! # The schedule of a staged run
//!
//! The stages give the rate at every moment (straight lines from the start
//! rate, `--rate`'s or 0); the ops **due** over a span from the start are
//! the integral of that rate over it ([`Ramp::ops_due`]), as k6 schedules
//! a ramping arrival rate. Op `k` (counting from 0) is due when the
//! integral reaches `k` ([`Ramp::due_nanos`]): the first at the start
//! (also for a ramp from 0), then one each time the integral grows by a
//! whole op, so the ops due by any time `t` are `floor(integral) + 1`,
//! within 1 of the integral. No op is due at or after the stages' end.
//!
//! A worker (`pace`) or the dispatcher (`exec`) takes the ops in that
//! order, each at its due time, and asks the limiter for its permit then;
//! an op's scheduled time (its wait's and response time's origin) is its
//! due time. The limiter's rate follows the ramp from above
//! ([`Ramp::limit_rate_at`]): the highest rate the ramp reaches until one
//! op after the next two [`STEP`]s, so that no slot a limiter hands out at
//! that rate reaches past the next op's due time and a ramp from a low
//! rate is not held back by its first slot.
//!
//! The **target rate** over a span is the ops due over it divided by the
//! span; the report sets the ops started against the integral.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ratekeeper::config::LimiterRef;
use ratekeeper::{Clock, Rate, RateSpec};
use serde::Serialize;

use super::interrupt::Interrupt;
use super::stages::{parse_stages, Stages, FLOOR_SHARE, STEP};
use crate::report::{fmt_rate, warn};

/// How often the drive thread, asleep until its next step, looks whether
/// the run has ended.
pub const POLL: Duration = Duration::from_millis(20);

/// How far ahead of the clock the limiters' rate covers the ramp: two
/// steps, so that a drive thread woken a step late still set a rate high
/// enough.
const LOOKAHEAD: Duration = Duration::from_millis(2 * STEP.as_millis() as u64);

/// `--stages` as given, and parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct StagesArg {
    /// The stages as given (trimmed), for the report.
    pub text: String,
    pub stages: Stages,
}

/// `--stages`' value parser: [`parse_stages`], keeping the text.
///
/// # Errors
///
/// The parser's message.
pub fn parse_stages_arg(s: &str) -> Result<StagesArg, String> {
    Ok(StagesArg {
        text: s.trim().to_owned(),
        stages: parse_stages(s)?,
    })
}

/// The rate spec of a run: `rate` (`--rate`'s), or without it (with
/// `--stages`, ramping from 0) one at the highest rate of `stages` with the
/// defaults, which the limiter is built with before the stages set its
/// rate (1/s for stages that never rise above 0, which [`Ramp::new`]
/// refuses).
pub fn spec_of(rate: Option<RateSpec>, stages: Option<&StagesArg>) -> RateSpec {
    rate.unwrap_or_else(|| {
        let peak = stages.map_or(0.0, |s| s.stages.peak(0.0));
        RateSpec::new(Rate::new(peak).unwrap_or(Rate::new(1.0).expect("1/s is a rate")))
    })
}

/// Where a run's stages start: `rate`'s rate (`--rate`'s), or 0.
pub fn start_rate(rate: Option<RateSpec>) -> f64 {
    rate.map_or(0.0, |s| s.rate().get())
}

/// A staged run's rate: the stages, from the start rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Ramp {
    /// The stages.
    pub arg: StagesArg,
    /// Where the first stage's ramp starts: `--rate`'s rate, or 0.
    pub start: f64,
}

impl Ramp {
    /// The ramp from `start` (per second) through `arg`'s stages.
    ///
    /// # Errors
    ///
    /// A message for stages that never rise above 0 from a start of 0: no
    /// limiter can be set a rate for them.
    pub fn new(arg: &StagesArg, start: f64) -> Result<Ramp, String> {
        if arg.stages.peak(start) <= 0.0 {
            return Err(format!(
                "--stages {} never rise above 0 ops/s; give a stage a rate, or --rate to \
                 start from",
                arg.text
            ));
        }
        Ok(Ramp {
            arg: arg.clone(),
            start,
        })
    }

    /// The ramp's rate `at` into the run.
    pub fn rate_at(&self, at: Duration) -> f64 {
        self.arg.stages.rate_at(self.start, at)
    }

    /// [`rate_at`](Self::rate_at) `at` nanoseconds into the run.
    pub fn rate_at_nanos(&self, at: u64) -> f64 {
        self.rate_at(Duration::from_nanos(at))
    }

    /// The lowest rate a limiter is set: a thousandth of the ramp's
    /// highest (a rate of 0 cannot be kept).
    pub fn floor(&self) -> f64 {
        self.arg.stages.peak(self.start) * FLOOR_SHARE
    }

    /// The ops due over the first `span` of the run: the integral of the
    /// ramp's rate over it (see the [module](self) doc).
    pub fn ops_due(&self, span: Duration) -> f64 {
        self.arg.stages.integral(self.start, span)
    }

    /// When op `k` (counting from 0) is due, in nanoseconds into the run:
    /// when [`ops_due`](Self::ops_due) reaches `k`; `None` for an op due
    /// at or after the stages' end.
    pub fn due_nanos(&self, k: u64) -> Option<u64> {
        let at = self.arg.stages.time_of(self.start, k as f64)?;
        let total = self.arg.stages.total();
        (at < total).then(|| crate::report::duration_nanos(at))
    }

    /// The rate the drive thread sets on the limiters `at` into the run:
    /// the highest the ramp reaches from `at` until the op due next after
    /// [`LOOKAHEAD`] (the stages' end if none is), at least the
    /// [`floor`](Self::floor). A limiter at this rate hands no op a slot
    /// that ends after the next op's due time.
    pub fn limit_rate_at(&self, at: Duration) -> f64 {
        let stages = &self.arg.stages;
        let total = stages.total();
        let ahead = (at + LOOKAHEAD).min(total);
        let next = self.ops_due(ahead).floor() + 1.0;
        let until = stages.time_of(self.start, next).unwrap_or(total);
        stages
            .max_between(self.start, at, until.max(ahead))
            .max(self.floor())
    }

    /// The mean rate the stages asked for between `from` and `to`
    /// nanoseconds into the run; the rate at `from` if that is no span.
    pub fn rate_between(&self, from: u64, to: u64) -> f64 {
        if to <= from {
            return self.rate_at_nanos(from);
        }
        let due = |at: u64| self.ops_due(Duration::from_nanos(at));
        (due(to) - due(from)) * 1e9 / (to - from) as f64
    }

    /// The target rate over the first `span_ns` of the run: the ops due
    /// over it divided by it.
    pub fn target_rate(&self, span_ns: u64) -> f64 {
        self.rate_between(0, span_ns)
    }

    /// The ramp's rate as `(seconds, rate)` points until `span_ns`, for the
    /// plot's target line: its corners (the start, each stage's end) and
    /// the span's end, joined by straight lines.
    pub fn points(&self, span_ns: u64) -> Vec<(f64, f64)> {
        let span = Duration::from_nanos(span_ns);
        let mut points = vec![(0.0, self.rate_at(Duration::ZERO))];
        let mut at = Duration::ZERO;
        for stage in self.arg.stages.iter() {
            at += stage.duration;
            if at >= span {
                break;
            }
            // A stage ends at its target; a step (0 s) is drawn upright.
            points.push((at.as_secs_f64(), stage.target));
        }
        points.push((span.as_secs_f64(), self.rate_at(span)));
        points
    }
}

/// The ops of a staged run, handed out in order to whoever is free to
/// start one (a `pace` worker, the `exec` dispatcher): op `k`, due at
/// [`Ramp::due_nanos`]`(k)`.
#[derive(Debug)]
pub struct Arrivals<'a> {
    ramp: &'a Ramp,
    /// The next op to hand out.
    next: AtomicU64,
}

impl<'a> Arrivals<'a> {
    /// None handed out yet.
    pub fn new(ramp: &'a Ramp) -> Arrivals<'a> {
        Arrivals {
            ramp,
            next: AtomicU64::new(0),
        }
    }

    /// Takes the next op: when it is due, in nanoseconds into the run;
    /// `None` once no op is due before the stages end.
    pub fn take(&self) -> Option<u64> {
        // Ordering: Relaxed; a ticket counter, carrying no data.
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        self.ramp.due_nanos(k)
    }
}

/// With --stages: what a report says of them (JSON null without).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Staged {
    /// The stages as given.
    pub stages: Option<String>,
    /// Rates set on the running limiters, the first (at the start)
    /// included.
    pub rate_changes: Option<u64>,
    /// Rate changes a limiter refused.
    pub rate_changes_refused: Option<u64>,
    /// Where the ramp started: `--rate`'s rate, or 0 without it.
    pub start_rate: Option<f64>,
    /// The rate the drive thread set, for the plot's target line.
    #[serde(skip)]
    pub ramp: Option<Ramp>,
}

impl Staged {
    /// What a run that followed `ramp` (if any) says of it, with what its
    /// drive thread did.
    pub fn of(ramp: Option<&Ramp>, driven: Driven) -> Staged {
        let Some(ramp) = ramp else {
            return Staged::default();
        };
        Staged {
            stages: Some(ramp.arg.text.clone()),
            rate_changes: Some(driven.changes),
            rate_changes_refused: Some(driven.refused),
            start_rate: Some(ramp.start),
            ramp: Some(ramp.clone()),
        }
    }
}

/// What the drive thread did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Driven {
    /// Rates set on the running limiters, the first (at the start)
    /// included.
    pub changes: u64,
    /// Rate changes a limiter refused (the first is warned about).
    pub refused: u64,
}

/// Follows `ramp` on the running `limiters` (each is set
/// [`Ramp::limit_rate_at`]) from `t0` on `clock` until the stages end, `ended` is set (the run
/// stopped) or a signal arrives. A rate a limiter refuses is warned about
/// once, on standard error, and the run goes on at the rate it had.
pub fn drive<C: Clock + 'static>(
    ramp: &Ramp,
    limiters: &[LimiterRef<'_, C>],
    clock: &dyn Clock,
    t0: u64,
    interrupt: &Interrupt,
    ended: &AtomicBool,
) -> Driven {
    let elapsed = || Duration::from_nanos(clock.now_nanos().saturating_sub(t0));
    let sleep = |d: Duration| sleep_unless_ended(d, interrupt, ended);
    let mut driven = Driven::default();
    let rate = |at: Duration| ramp.limit_rate_at(at);
    ramp.arg.stages.drive(&rate, &elapsed, &sleep, |rate| {
        match set_rate(limiters, rate) {
            Ok(()) => driven.changes += 1,
            Err(e) => {
                driven.refused += 1;
                if driven.refused == 1 {
                    let kept = limiters.first().map_or(rate, |l| l.rate());
                    warn(&format!(
                        "--stages: the limiter refused the rate {}: {e}; it keeps {} until \
                             a rate it takes, and the run goes on (further refusals are \
                             counted in the report, not told)",
                        fmt_rate(rate),
                        fmt_rate(kept)
                    ));
                }
            }
        }
    });
    driven
}

/// Sets the rate `ramp` starts the limiters at on every one of `limiters`,
/// before the run starts (so that no op is granted at another), as the
/// drive thread does first; a refusal is left for the drive thread to
/// count and tell.
pub fn prime<C: Clock + 'static>(ramp: &Ramp, limiters: &[LimiterRef<'_, C>]) {
    let _ = set_rate(limiters, ramp.limit_rate_at(Duration::ZERO));
}

/// Sets `rate` on every one of `limiters`; the first error, after trying
/// them all.
fn set_rate<C: Clock + 'static>(limiters: &[LimiterRef<'_, C>], rate: f64) -> anyhow::Result<()> {
    let rate = Rate::new(rate)?;
    let mut first = Ok(());
    for l in limiters {
        if let Err(e) = l.set_rate(rate) {
            first = first.and(Err(e));
        }
    }
    Ok(first?)
}

/// Sleeps for `d`, waking every [`POLL`] to see whether `ended` was set;
/// returns whether to stop: `ended` is set or a signal arrived.
fn sleep_unless_ended(d: Duration, interrupt: &Interrupt, ended: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    loop {
        // Ordering: Relaxed; a stop request that carries no data.
        if ended.load(Ordering::Relaxed) {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        if interrupt.sleep(left.min(POLL)) {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratekeeper::config::LimiterConfig;
    use ratekeeper::DefaultClock;

    fn ramp(text: &str, start: f64) -> Ramp {
        Ramp {
            arg: parse_stages_arg(text).unwrap(),
            start,
        }
    }

    #[test]
    fn the_ops_due_are_the_integral_of_the_ramp() {
        let r = ramp(" 1s:40,1s:40 ", 5.0);
        assert_eq!(r.arg.text, "1s:40,1s:40");
        // Up from 5 to 40 over 1 s (22.5 ops), then 40/s for 1 s.
        let secs = Duration::from_secs;
        assert!((r.ops_due(secs(1)) - 22.5).abs() < 1e-9);
        assert!((r.ops_due(secs(2)) - 62.5).abs() < 1e-9);
        assert!((r.target_rate(2_000_000_000) - 31.25).abs() < 1e-9);
        // The flat second: 40/s; no span: the rate then.
        let s = 1_000_000_000;
        assert!((r.rate_between(s, 2 * s) - 40.0).abs() < 1e-9);
        assert_eq!(r.rate_between(0, 0), 5.0);
        // Op 0 at the start, op 1 when 5t + 17.5t^2 = 1 (t = 0.1347 s),
        // op 22 just before 1 s, op 62 at 1.9875 s, none at or after the
        // end.
        assert_eq!(r.due_nanos(0), Some(0));
        let t1 = (-5.0 + (25.0f64 + 70.0).sqrt()) / 35.0;
        assert!((r.due_nanos(1).unwrap() as f64 - t1 * 1e9).abs() < 2.0);
        let t22 = (-5.0 + (25.0f64 + 70.0 * 22.0).sqrt()) / 35.0;
        assert!((r.due_nanos(22).unwrap() as f64 - t22 * 1e9).abs() < 2.0);
        assert!((r.due_nanos(62).unwrap() as f64 - 1.9875e9).abs() < 2.0);
        assert!(r.due_nanos(62).is_some() && r.due_nanos(63).is_none());
        // The plot's line: the corners, joined straight.
        assert_eq!(r.points(2 * s), [(0.0, 5.0), (1.0, 40.0), (2.0, 40.0)]);
    }

    #[test]
    fn a_ramp_from_zero_starts_with_one_op_and_needs_a_rate() {
        let arg = parse_stages_arg("1s:100").unwrap();
        let r = Ramp::new(&arg, 0.0).unwrap();
        // 50 t^2 = 1 at t = 0.1414 s.
        assert_eq!(r.due_nanos(0), Some(0));
        assert!((r.due_nanos(1).unwrap() as f64 - 0.02f64.sqrt() * 1e9).abs() < 2.0);
        // The limiters' rate covers the next op's slot: above 0.
        assert!(r.limit_rate_at(Duration::ZERO) >= 100.0 * 0.2);
        let e = Ramp::new(&parse_stages_arg("1s:0,2s:0").unwrap(), 0.0).unwrap_err();
        assert!(e.contains("never rise above 0"), "{e}");
    }

    #[test]
    fn the_limiters_rate_covers_the_slot_of_the_first_op_of_a_slow_start() {
        // 0.1/s up to 10/s over 1 s: op 1 is due at 0.441 s, so the first
        // op's slot at the rate set at the start ends by then.
        let r = ramp("1s:10", 0.1);
        let rate = r.limit_rate_at(Duration::ZERO);
        let op1 = r.due_nanos(1).unwrap();
        assert!(1e9 / rate <= op1 as f64, "{rate} {op1}");
        // And it is no more than the ramp's highest.
        assert!(rate <= 10.0);
    }

    #[test]
    fn the_drive_thread_sets_the_rate_until_the_stages_end_or_it_is_told() {
        let clock = DefaultClock::new();
        let config: LimiterConfig = "pacer:10".parse().unwrap();
        let (a, b) = (
            config.build_with_clock(clock).unwrap(),
            config.build_with_clock(clock).unwrap(),
        );
        let limiters = [a.as_ref(), b.as_ref()];
        let interrupt = Interrupt::new();
        let not_ended = AtomicBool::new(false);
        // 10 to 40 over 200 ms: at 0, 100 and 200 ms, on both limiters
        // (the ramp's highest ahead: 40 all along).
        let r = ramp("200ms:40", 10.0);
        let t0 = clock.now_nanos();
        let d = drive(&r, &limiters, &clock, t0, &interrupt, &not_ended);
        assert!(d.changes >= 1 && d.refused == 0, "{d:?}");
        assert!(limiters.iter().all(|l| l.rate() == 40.0));
        // Ended (the run stopped), or a signal: the first rate only.
        let long = ramp("1h:40,1h:10", 10.0);
        let ended = AtomicBool::new(true);
        let d = drive(&long, &limiters, &clock, t0, &interrupt, &ended);
        assert_eq!(d.changes, 1);
        interrupt.raise();
        let d = drive(&long, &limiters, &clock, t0, &interrupt, &not_ended);
        assert_eq!(d.changes, 1);
        // The first rate: the ramp's highest until one op after 200 ms.
        let first = long.limit_rate_at(Duration::ZERO);
        assert!(limiters.iter().all(|l| (l.rate() - first).abs() < 0.01));
    }

    #[test]
    fn a_refused_rate_is_counted_and_the_rate_kept() {
        let clock = DefaultClock::new();
        // A refill limiter counts whole permits per period, fewer than 2^32.
        let config: LimiterConfig = "refill:10,1s".parse().unwrap();
        let limiter = config.build_with_clock(clock).unwrap();
        let r = ramp("0s:5G,100ms:5G", 10.0);
        let (interrupt, not_ended) = (Interrupt::new(), AtomicBool::new(false));
        let t0 = clock.now_nanos();
        let d = drive(&r, &[limiter.as_ref()], &clock, t0, &interrupt, &not_ended);
        assert_eq!((d.changes, d.refused), (0, 1), "{d:?}");
        assert_eq!(limiter.as_ref().rate(), 10.0);
        // What a report says of the stages; nothing without them.
        let staged = Staged::of(Some(&r), d);
        assert_eq!(staged.rate_changes_refused, Some(d.refused));
        assert_eq!(staged.start_rate, Some(10.0));
        let json = serde_json::to_value(Staged::of(None, d)).unwrap();
        assert!(json["stages"].is_null() && json["rate_changes"].is_null());
    }

    /// Runs `ramp` on the manual clock as a staged run does: the ops are
    /// taken in order by `workers` workers whose ops take `service` ns,
    /// each at its due time or when a worker is free, and each waits for
    /// its permit from a Pacer whose rate the drive thread sets every
    /// [`STEP`] ([`Ramp::limit_rate_at`]). Returns when each op started.
    fn simulate(ramp: &Ramp, workers: usize, service: u64) -> Vec<u64> {
        use ratekeeper::{ManualClock, Pacer, RateLimiter};
        let clock = ManualClock::new(0);
        let first = Rate::new(ramp.limit_rate_at(Duration::ZERO)).unwrap();
        let pacer = Pacer::builder(first)
            .build_with_clock(clock.clone())
            .unwrap();
        let arrivals = Arrivals::new(ramp);
        let step = crate::report::duration_nanos(STEP);
        let mut free = vec![0u64; workers];
        let mut starts = Vec::new();
        let mut set_step = 0;
        while let Some(due) = arrivals.take() {
            let w = (0..workers).min_by_key(|&w| free[w]).unwrap();
            let at = due.max(free[w]);
            // The drive thread's steps up to now, then the op's request.
            while (set_step + 1) * step <= at {
                set_step += 1;
                clock.set_nanos(set_step * step);
                let rate = ramp.limit_rate_at(Duration::from_nanos(set_step * step));
                pacer.set_rate(Rate::new(rate).unwrap()).unwrap();
            }
            clock.set_nanos(at);
            let start = pacer.reserve(1, None).unwrap().ready_nanos().max(at);
            starts.push(start);
            free[w] = start + service;
        }
        starts
    }

    fn stage_lists() -> impl Strategy<Value = (f64, Vec<(u64, f64)>)> {
        let stage = (0u64..1_500, 0.0..400.0f64);
        (0.0..400.0f64, proptest::collection::vec(stage, 1..4))
    }

    fn ramp_of(start: f64, stages: &[(u64, f64)]) -> Ramp {
        let text: Vec<String> = stages.iter().map(|(ms, r)| format!("{ms}ms:{r}")).collect();
        ramp(
            &format!("{},1ms:{}", text.join(","), stages[stages.len() - 1].1),
            start,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// With workers enough (ops that take no time), the ops started by
        /// any time stay within 1 of the integral of the rate: the limiter,
        /// following the ramp from above, holds none back.
        #[test]
        fn ops_started_stay_within_one_of_the_integral(
            (start, stages) in stage_lists(),
            workers in 1usize..4,
            at in proptest::collection::vec(0.0..1.0f64, 8),
        ) {
            let r = ramp_of(start, &stages);
            prop_assume!(r.arg.stages.peak(start) > 0.0);
            let starts = simulate(&r, workers, 0);
            let total = crate::report::duration_nanos(r.arg.stages.total());
            let mut times: Vec<u64> = at.iter().map(|f| (f * total as f64) as u64).collect();
            times.extend(starts.iter().copied());
            for t in times {
                let started = starts.iter().filter(|&&s| s <= t).count() as f64;
                let due = r.ops_due(Duration::from_nanos(t));
                prop_assert!(
                    started >= due - 1e-3 && started <= due + 1.0 + 1e-3,
                    "{} ops started by {t} ns, {due} due", started
                );
            }
        }
    }

    /// Too few workers: the ops that find every one busy start late.
    #[test]
    fn ops_that_find_every_worker_busy_start_late() {
        // 100/s of 50 ms each: one worker starts one every 50 ms.
        let r = ramp("1s:100", 100.0);
        let starts = simulate(&r, 1, 50_000_000);
        assert_eq!(starts.len(), 100);
        assert_eq!(starts[99], 99 * 50_000_000);
        // Five keep up.
        let starts = simulate(&r, 5, 50_000_000);
        assert!(starts[99] <= 990_000_000 + 1, "{}", starts[99]);
    }
}
