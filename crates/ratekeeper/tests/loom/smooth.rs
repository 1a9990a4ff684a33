//! Loom models of Guava's smooth limiters: lock-free reservations racing each
//! other and a rate change, which retires the state they compete for.
//!
//! The claim checked (see the `Smooth` type in `src/smooth/mod.rs`): every
//! interleaving ends exactly as some serial order of the same calls does,
//! each call getting the wait that order gives it.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p ratekeeper --test loom smooth::`

use std::sync::Arc;
use std::time::Duration;

use loom::thread;
use ratekeeper::smooth::Resolution;
use ratekeeper::{ManualClock, RateLimiter, SmoothBursty, SmoothWarmingUp};

/// What a run left: each reservation's wait (by call), and the limiter's
/// whole state as `Debug` prints it (rate, stored permits, maximum,
/// next free).
type Outcome = (Vec<u64>, String);

#[derive(Clone, Copy, Debug)]
enum Op {
    Reserve(u32),
    Try(u32, u64),
    SetRate(f64),
}

trait Smooth: RateLimiter + std::fmt::Debug + Send + Sync + 'static {
    fn set(&self, rate: f64);
}
impl Smooth for SmoothBursty<ManualClock> {
    fn set(&self, rate: f64) {
        self.set_rate(rate).unwrap();
    }
}
impl Smooth for SmoothWarmingUp<ManualClock> {
    fn set(&self, rate: f64) {
        self.set_rate(rate).unwrap();
    }
}

/// A call's result: the wait granted, or `u64::MAX` for a refusal; 0 for a
/// rate change.
fn apply<L: Smooth>(l: &L, op: Op) -> u64 {
    match op {
        Op::Reserve(n) => l.reserve(n, None).unwrap().delay_nanos(),
        Op::Try(n, micros) => l
            .reserve(n, Some(Duration::from_micros(micros)))
            .map_or(u64::MAX, |g| g.delay_nanos()),
        Op::SetRate(r) => {
            l.set(r);
            0
        }
    }
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

/// Runs `ops` on concurrent threads (one each) against a limiter made by
/// `make` after `idle_nanos` of idle time, and checks the outcome is one of
/// the serial orders' outcomes.
fn races_equal_a_serial_order<L: Smooth>(
    make: fn(&ManualClock) -> L,
    idle_nanos: u64,
    ops: &'static [Op],
) {
    loom::model(move || {
        let serial: Vec<Outcome> = permutations(ops.len())
            .into_iter()
            .map(|order| {
                let clock = ManualClock::new(0);
                let l = make(&clock);
                clock.advance_nanos(idle_nanos);
                let mut waits = vec![0; ops.len()];
                for i in order {
                    waits[i] = apply(&l, ops[i]);
                }
                (waits, format!("{l:?}"))
            })
            .collect();

        let clock = ManualClock::new(0);
        let l = Arc::new(make(&clock));
        clock.advance_nanos(idle_nanos);
        let handles: Vec<_> = ops
            .iter()
            .map(|&op| {
                let l = l.clone();
                thread::spawn(move || apply(&*l, op))
            })
            .collect();
        let waits: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let outcome = (waits, format!("{l:?}"));
        assert!(
            serial.contains(&outcome),
            "{outcome:?} is no serial order's outcome; serial outcomes: {serial:#?}"
        );
    });
}

fn bursty(clock: &ManualClock) -> SmoothBursty<ManualClock> {
    SmoothBursty::builder(10.0)
        .build_with_clock(clock.clone())
        .unwrap()
}

fn warming(clock: &ManualClock) -> SmoothWarmingUp<ManualClock> {
    SmoothWarmingUp::builder(10.0)
        .warmup(Duration::from_secs(1))
        .build_with_clock(clock.clone())
        .unwrap()
}

/// Two reservations spending stored permits race a rate change that rescales
/// them: a reservation computed at the old rate must not commit after it.
#[test]
fn bursty_reservations_race_a_rate_change() {
    // 0.25 s idle at 10/s: 2.5 stored permits.
    races_equal_a_serial_order(
        bursty,
        250_000_000,
        &[Op::Reserve(2), Op::Reserve(1), Op::SetRate(40.0)],
    );
}

/// Busy limiter (nothing stored, next free in the future): the state a rate
/// change publishes is bit-for-bit the one it retired, the case a plain
/// compare-exchange on a reused word would get wrong.
#[test]
fn bursty_rate_change_that_leaves_the_state_unchanged() {
    races_equal_a_serial_order(
        bursty,
        0,
        &[Op::Reserve(1), Op::SetRate(20.0), Op::Reserve(1)],
    );
}

/// A try racing a reservation and a rate change: refusals change nothing.
#[test]
fn bursty_try_races_a_reservation_and_a_rate_change() {
    races_equal_a_serial_order(
        bursty,
        100_000_000,
        &[Op::Try(2, 50_000), Op::Reserve(2), Op::SetRate(5.0)],
    );
}

/// Warming up: stored permits are costly, and a rate change rescales them.
#[test]
fn warming_up_reservations_race_a_rate_change() {
    races_equal_a_serial_order(
        warming,
        2_000_000_000,
        &[Op::Reserve(3), Op::Reserve(2), Op::SetRate(20.0)],
    );
}

/// At an infinite rate, once a reservation has banked the idle time, the
/// reservations after it in the same clock tick leave the state as they
/// found it and write nothing; racing a rate change, each still lands on one
/// side of it (before: free, nothing stored; after: one of the 10 permits
/// the change stores).
fn bursty_infinite(clock: &ManualClock) -> SmoothBursty<ManualClock> {
    let l = SmoothBursty::builder(f64::INFINITY)
        .build_with_clock(clock.clone())
        .unwrap();
    clock.advance_nanos(1_000_000);
    l.reserve(1, None).unwrap();
    l
}

#[test]
fn bursty_reservations_that_write_nothing_race_a_rate_change() {
    races_equal_a_serial_order(
        bursty_infinite,
        0,
        &[Op::Reserve(1), Op::Reserve(2), Op::SetRate(10.0)],
    );
}

/// The nanosecond mode: the same protocol on a schedule in nanoseconds,
/// at 1e7 permits/s (100 ns a permit, which Guava's microseconds would not
/// charge at all); 250 ns idle stores 2.5 permits.
#[test]
fn bursty_nanos_reservations_race_a_rate_change() {
    fn bursty_nanos(clock: &ManualClock) -> SmoothBursty<ManualClock> {
        SmoothBursty::builder(1e7)
            .resolution(Resolution::Nanos)
            .build_with_clock(clock.clone())
            .unwrap()
    }
    races_equal_a_serial_order(
        bursty_nanos,
        250,
        &[Op::Reserve(2), Op::Reserve(1), Op::SetRate(4e7)],
    );
}

/// A limiter whose first core was already retired: reservations go through
/// the replaceable core.
fn bursty_changed(clock: &ManualClock) -> SmoothBursty<ManualClock> {
    let l = bursty(clock);
    l.set_rate(10.0).unwrap();
    l
}

/// Two rate changes racing a reservation: the second change retires the
/// core the first one published.
#[test]
fn bursty_two_rate_changes_race_a_reservation() {
    races_equal_a_serial_order(
        bursty,
        150_000_000,
        &[Op::Reserve(2), Op::SetRate(20.0), Op::SetRate(40.0)],
    );
}

/// After a change: reservations race another change on a published core.
#[test]
fn bursty_after_a_change_reservations_race_a_rate_change() {
    races_equal_a_serial_order(
        bursty_changed,
        250_000_000,
        &[Op::Reserve(2), Op::Reserve(1), Op::SetRate(40.0)],
    );
}

/// A cancel of the latest reservation races a reservation that would build
/// on it: the cancel (which retires the state, as a rate change does) either
/// comes first, giving the reservation the cancelled one's moment, or comes
/// second and keeps the grant for the next caller of its size (issue 16);
/// every interleaving ends as one of those two serial orders, and the grant
/// is never given back twice.
fn cancel_races_a_reservation<L: Smooth>(make: fn(&ManualClock) -> L) {
    fn c_after<L: Smooth>(l: &L, g: &ratekeeper::Grant) -> bool {
        let c = l.cancel(g);
        assert!(!l.cancel(g), "given back twice");
        c
    }
    loom::model(move || {
        let setup = |clock: &ManualClock| {
            let l = make(clock);
            l.reserve(1, None).unwrap();
            let g = l.reserve(2, None).unwrap();
            assert!(g.delay_nanos() > 0);
            (l, g)
        };
        // The two serial orders.
        let serial: Vec<(bool, u64, u64, String)> = [true, false]
            .into_iter()
            .map(|cancel_first| {
                let (l, g) = setup(&ManualClock::new(0));
                let (c, w) = if cancel_first {
                    let c = l.cancel(&g);
                    (c, l.reserve(1, None).unwrap().delay_nanos())
                } else {
                    let w = l.reserve(1, None).unwrap().delay_nanos();
                    (c_after(&l, &g), w)
                };
                // The next caller of g's size: g's moment if it was kept.
                let next = l.reserve(2, None).unwrap().delay_nanos();
                (c, w, next, format!("{l:?}"))
            })
            .collect();
        assert_eq!((serial[0].0, serial[1].0), (true, true));

        let clock = ManualClock::new(0);
        let (l, g) = setup(&clock);
        let l = Arc::new(l);
        let b = {
            let l = l.clone();
            thread::spawn(move || l.reserve(1, None).unwrap().delay_nanos())
        };
        let c = l.cancel(&g);
        let w = b.join().unwrap();
        assert!(!l.cancel(&g), "given back twice");
        let next = l.reserve(2, None).unwrap().delay_nanos();
        let outcome = (c, w, next, format!("{l:?}"));
        assert!(serial.contains(&outcome), "{outcome:?} vs {serial:#?}");
    });
}

#[test]
fn bursty_cancel_races_a_reservation() {
    cancel_races_a_reservation(bursty);
}

#[test]
fn warming_up_cancel_races_a_reservation() {
    cancel_races_a_reservation(warming);
}
