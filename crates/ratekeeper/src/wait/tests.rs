use super::policy::*;
use super::sleep::*;
use super::*;
use crate::clock::ManualClock;

#[test]
fn precise_on_an_exact_clock_sleeps_instead_of_spinning() {
    // Issue 16: the spin phase waited for a ManualClock that only moves
    // when slept on, forever. A clock whose sleeps are exact needs no
    // spin. Run on a thread, so that a regression fails, not hangs.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let clock = ManualClock::new(0);
        let g = Grant::new(10_000_000, 10_000_000, 0, 1);
        let g = block_until(&clock, g, WaitPolicy::precise(Duration::from_millis(1)));
        tx.send((clock.now_nanos(), g.started_nanos())).unwrap();
    });
    let got = rx.recv_timeout(Duration::from_secs(10));
    assert_eq!(got, Ok((10_000_000, 10_000_000)));
}

#[test]
fn a_grant_waited_for_later_sleeps_only_what_is_left() {
    // Reserved at 0, ready at 10 ms; the caller comes back at 4 ms.
    for policy in [
        WaitPolicy::coalesce(Duration::ZERO),
        WaitPolicy::default(),
        WaitPolicy::precise(Duration::ZERO),
    ] {
        let clock = ManualClock::new(0);
        let g = Grant::new(10_000_000, 10_000_000, 0, 1);
        clock.advance_nanos(4_000_000);
        let g = block_until(&clock, g, policy);
        assert_eq!(clock.now_nanos(), 10_000_000, "{policy:?}");
        assert_eq!(g.started_nanos(), 10_000_000, "{policy:?}");
    }
}

#[test]
fn exact_policy_on_manual_clock_lands_on_ready() {
    let clock = ManualClock::new(100);
    let g = Grant::new(50, 1_000, 100, 1);
    let g = block_until(&clock, g, WaitPolicy::coalesce(Duration::ZERO));
    assert_eq!(g.started_nanos(), 1_000);
    assert_eq!(clock.now_nanos(), 1_000);
    assert_eq!(g.wait_nanos(), 950);
}

#[test]
fn oversleep_counts_as_wait() {
    let clock = ManualClock::new(0);
    clock.set_sleep_overshoot_nanos(250);
    let g = block_until(
        &clock,
        Grant::new(1_000, 1_000, 0, 1),
        WaitPolicy::coalesce(Duration::ZERO),
    );
    assert_eq!(g.started_nanos(), 1_250);
    assert_eq!(g.wait_nanos(), 250);
}

#[test]
fn short_waits_are_coalesced_without_touching_the_clock() {
    let clock = ManualClock::new(0);
    let g = block_until(
        &clock,
        Grant::new(900, 900, 0, 1),
        WaitPolicy::coalesce(Duration::from_nanos(1_000)),
    );
    assert_eq!(g.started_nanos(), 0);
    assert_eq!(clock.now_nanos(), 0);
}

#[test]
fn long_waits_sleep_until_due_on_an_exact_clock() {
    let clock = ManualClock::new(0);
    let g = block_until(
        &clock,
        Grant::new(10_000, 10_000, 0, 1),
        WaitPolicy::coalesce(Duration::from_nanos(1_000)),
    );
    // The manual clock's sleeps are exact (lead 0): it wakes on time.
    assert_eq!(g.started_nanos(), 10_000);
}

/// A clock whose sleeps end 100 ns late, as real ones end ~100 µs late.
struct Late(ManualClock);
impl Clock for Late {
    fn now_nanos(&self) -> u64 {
        self.0.now_nanos()
    }
    fn sleep_nanos(&self, nanos: u64) {
        self.0.advance_nanos(nanos + 100);
    }
    fn sleep_overshoot_nanos(&self) -> u64 {
        100
    }
}

#[test]
fn sleeps_lead_by_the_clock_overshoot() {
    let clock = Late(ManualClock::new(0));
    let g = block_until(
        &clock,
        Grant::new(10_000, 10_000, 0, 1),
        WaitPolicy::coalesce(Duration::from_nanos(50)),
    );
    // Aims at the middle of the 50 ns window: asked for 9 875 ns, slept
    // 9 975, 25 ns early, one sleep.
    assert_eq!(g.started_nanos(), 9_975);
}

#[test]
fn the_default_early_bound_and_delay_follow_resolution_and_slot() {
    let clock = Late(ManualClock::new(0)); // resolution 100 ns
    let at = |slot| {
        let p = WaitPolicy::default().for_slot(slot);
        (p.window_nanos(&clock), p.group_delay_nanos(&clock))
    };
    assert_eq!(at(0), (50, 0), "unknown slot: half a resolution, no delay");
    assert_eq!(at(1), (50, 768), "tiny slots: 768 of them");
    assert_eq!(at(10), (50, 640), "capped: 768 slots > 8 x (100 - 2 x 10)");
    assert_eq!(at(49), (50, 16), "just under half a resolution");
    assert_eq!(at(50), (50, 0), "half a resolution: ops one by one");
    assert_eq!(at(150), (75, 0), "half a slot");
    assert_eq!(at(1_000), (100, 0), "at most one resolution early");
    assert_eq!(at(1), at(1), "deterministic");
    let exact = ManualClock::new(0);
    let p = WaitPolicy::default().for_slot(1);
    assert_eq!(
        (p.window_nanos(&exact), p.group_delay_nanos(&exact)),
        (0, 0)
    );
    // The other policies ignore the slot.
    let c = WaitPolicy::coalesce(Duration::from_nanos(7)).for_slot(1);
    assert_eq!(
        (c.window_nanos(&clock), c.group_delay_nanos(&clock)),
        (7, 0)
    );
}

#[test]
fn a_default_wait_goes_late_by_the_delay_never_early_by_more_than_the_bound() {
    // Resolution 100 ns, slot 10 ns: early bound 50, delay 640.
    let clock = Late(ManualClock::new(0));
    let policy = WaitPolicy::default().for_slot(10);
    // 40 ns away: sleeping to it is impossible, it goes at once.
    let g = block_until(&clock, Grant::new(40, 40, 0, 1), policy);
    assert_eq!((g.started_nanos(), clock.now_nanos()), (0, 0));
    // 1 000 ns away: one sleep, woken 640 ns after the ready time.
    let g = block_until(&clock, Grant::new(1_000, 1_000, 0, 1), policy);
    assert_eq!(g.started_nanos(), 1_640);
    assert_eq!(g.wait_nanos(), 640, "the lateness is reported");
}

#[test]
fn zero_window_on_a_late_clock_still_waits_until_due() {
    let clock = Late(ManualClock::new(0));
    let g = block_until(
        &clock,
        Grant::new(50, 50, 0, 1),
        WaitPolicy::coalesce(Duration::ZERO),
    );
    assert!(g.started_nanos() >= 50);
}

#[test]
fn precise_never_releases_early() {
    let clock = ManualClock::new(0);
    let g = block_until(
        &clock,
        Grant::new(10_000, 10_000, 0, 1),
        WaitPolicy::precise(Duration::from_nanos(0)),
    );
    assert_eq!(g.started_nanos(), 10_000);
}

#[test]
fn default_policy_uses_the_clock_resolution() {
    crate::test_util::within(|| {
        // The estimate is process-wide and other tests' sleeps move it:
        // check the relation within its bounds.
        let real = crate::clock::MonotonicClock::new();
        let window = WaitPolicy::default().window_nanos(&real);
        assert!((MIN_RESOLUTION / 2..=MAX_RESOLUTION / 2).contains(&window));
        assert_eq!(WaitPolicy::default().window_nanos(&ManualClock::new(0)), 0);
    });
}

#[test]
fn the_resolution_estimate_follows_the_median_and_stays_bounded() {
    // Sleeps alternating 80 and 120 µs late, one in 10 preempted 5 ms:
    // the estimate settles between the two, unmoved by the outliers.
    let mut est = DEFAULT_SLEEP_OVERSHOOT_NANOS;
    for i in 0..2_000u64 {
        let observed = match i % 10 {
            0 => 5_000_000,
            k if k % 2 == 0 => 80_000,
            _ => 120_000,
        };
        est = next_estimate(est, observed);
    }
    assert!((80_000..=125_000).contains(&est), "{est}");
    let low = (0..1_000).fold(est, |e, _| next_estimate(e, 0));
    assert_eq!(low, MIN_RESOLUTION);
    let high = (0..1_000).fold(est, |e, _| next_estimate(e, u64::MAX));
    assert_eq!(high, MAX_RESOLUTION);
}
