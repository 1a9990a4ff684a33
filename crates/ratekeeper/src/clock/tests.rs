use super::*;

#[test]
fn manual_clock_never_goes_backwards() {
    let c = ManualClock::new(100);
    c.set_nanos(50);
    assert_eq!(c.now_nanos(), 100);
    c.advance_nanos(u64::MAX);
    assert_eq!(c.now_nanos(), u64::MAX);
}

#[test]
fn manual_clock_is_shared_across_threads() {
    let c = ManualClock::new(0);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    c.advance_nanos(1);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(c.now_nanos(), 4000);
}

#[test]
fn manual_sleep_applies_overshoot() {
    let c = ManualClock::new(0);
    c.set_sleep_overshoot_nanos(250);
    c.sleep_nanos(1000);
    assert_eq!(c.now_nanos(), 1250);
}

#[cfg(feature = "quanta")]
#[test]
fn tsc_clock_moves_forward_on_every_thread_at_the_os_clocks_pace() {
    crate::test_util::within(|| {
        let clock = TscClock::new();
        let handles: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut last = 0;
                    for _ in 0..100_000 {
                        let now = clock.now_nanos();
                        assert!(now >= last, "{last} then {now}");
                        last = now;
                    }
                    last
                })
            })
            .collect();
        let ends: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        // After a join the reading is later than the thread's last.
        let after = clock.now_nanos();
        assert!(
            ends.iter().all(|&end| end <= after),
            "{ends:?} then {after}"
        );
        // Over a sleep, within 1 % of the OS clock (calibration error is ppm).
        let (tsc0, os0) = (clock.now_nanos(), Instant::now());
        std::thread::sleep(Duration::from_millis(50));
        let (tsc, os) = (clock.now_nanos() - tsc0, os0.elapsed().as_nanos() as u64);
        assert!(tsc.abs_diff(os) < os / 100, "TSC {tsc} ns, OS {os} ns");
    });
}

#[cfg(feature = "quanta")]
#[test]
fn tsc_clock_starts_at_zero_and_is_copy() {
    crate::test_util::within(|| {
        let a = TscClock::new();
        let b = a; // Copy: limiters and the CLI pass it by value
        assert!(a.now_nanos() < 1_000_000_000);
        assert!(b.now_nanos() >= a.now_nanos().saturating_sub(1_000_000));
        if cfg!(target_os = "linux") && kernel_clock_is_tsc() {
            assert!(a.reads_tsc());
        }
    });
}

#[test]
fn monotonic_clock_moves_forward_on_every_thread() {
    crate::test_util::within(|| {
        let clock = MonotonicClock::new();
        let handles: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut last = 0;
                    for _ in 0..100_000 {
                        let now = clock.now_nanos();
                        assert!(now >= last);
                        last = now;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}
