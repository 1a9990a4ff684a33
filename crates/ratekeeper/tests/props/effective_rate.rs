//! Property tests of every limiter's `effective_rate()`: the rate its
//! integer arithmetic actually gives.
//!
//! For the limiters that truncate a per-permit interval to whole units
//! (the Pacer and its shards, the token pool, Guava's smooth limiters in
//! either resolution, the refill limiter), the effective rate is never below
//! the rate asked for, its relative excess is exactly what the truncation
//! implies (`frac(interval) / floor(interval)`, less than one part in the
//! whole interval), and it is what the limiter then grants on a manual
//! clock. The cycle limiter rounds nothing: its effective rate is its rate.
//!
//! "Never below" and "exactly" hold up to the `f64` rounding of one
//! division: the rate asked for is an `f64`, and `1e9 / rate` may round up
//! to a whole number that the exact quotient is just below. [`ROUNDING`] is
//! that allowance, a few units in the last place.

use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::bucket::{CycleLimiter, RefillLimiter};
use ratekeeper::pool::Filling;
use ratekeeper::smooth::Resolution;
use ratekeeper::{ManualClock, Pacer, Rate, RateLimiter, SmoothBursty, SmoothWarmingUp, TokenPool};

/// Relative allowance for the `f64` rounding of a quotient or two: about
/// 4.5 units in the last place.
const ROUNDING: f64 = 1e-15;

/// `x` moved by `ulps` units in the last place (positive `x`).
fn nudge(x: f64, ulps: i64) -> f64 {
    f64::from_bits((x.to_bits() as i64 + ulps) as u64)
}

/// Rates across a limiter's range `10^lo ..= 10^hi`, log-uniform, plus the
/// edges where the truncation jumps: just around `units / k` for a whole
/// `k` (`units` = 1e9 for nanoseconds, 1e6 for microseconds).
fn rates(lo: f64, hi: f64, units: f64) -> impl Strategy<Value = f64> {
    prop_oneof![
        (lo..=hi).prop_map(|e| 10f64.powf(e)),
        (1u64..2_000_000, -3i64..=3).prop_map(move |(k, ulps)| nudge(units / k as f64, ulps)),
        (1u64..20, 0.0f64..1.0).prop_map(move |(k, f)| units / (k as f64 + f)),
    ]
}

/// Checks a truncating limiter's `effective` rate for `asked`, where one
/// permit's exact interval is `interval` units and the limiter charges
/// `whole` of them (`units` per second).
fn check_truncation(asked: f64, effective: f64, interval: f64, whole: u64, units: f64) {
    if whole == 0 {
        assert_eq!(effective, f64::INFINITY, "{asked}: charged 0 units");
        return;
    }
    assert_eq!(effective, units / whole as f64, "{asked}");
    let excess = effective / asked - 1.0;
    assert!(excess >= -ROUNDING, "{asked}: {effective} is below it");
    assert!(
        excess < 1.0 / whole as f64 + ROUNDING,
        "{asked}: {effective} is above it by {excess}, one part in {whole} at most"
    );
    let implied = (interval - whole as f64) / whole as f64;
    assert!(
        (excess - implied).abs() <= ROUNDING * (1.0 + implied),
        "{asked}: excess {excess}, the truncation implies {implied}"
    );
}

proptest! {
    #[test]
    fn pacer_runs_at_one_second_over_its_whole_slot(
        rate in rates(-9.0, 9.0, 1e9),
        strictness in prop_oneof![Just(0.0), Just(1.0), Just(1.1)],
    ) {
        let Ok(r) = Rate::new(rate) else { return Ok(()) };
        let Ok(slot) = r.nanos_per_op() else { return Ok(()) };
        let clock = ManualClock::new(0);
        let pacer = Pacer::builder(r)
            .strictness(strictness)
            .build_with_clock(clock.clone())
            .unwrap();
        prop_assert_eq!(pacer.nanos_per_op(), slot);
        prop_assert_eq!(pacer.effective_rate(), r.effective_rate().unwrap());
        check_truncation(rate, pacer.effective_rate(), 1e9 / rate, slot, 1e9);
        // What the schedule delivers: 10 slots in 10 × slot ns.
        if slot < 1 << 40 {
            let first = pacer.reserve(1, None).unwrap().ready_nanos();
            let last = (0..10).map(|_| pacer.reserve(1, None).unwrap().ready_nanos()).last();
            prop_assert_eq!(last.unwrap() - first, 10 * slot);
        }
    }

    #[test]
    fn sharded_pacer_runs_at_the_sum_of_its_shards(
        rate in rates(-6.0, 9.0, 1e9),
        shards in 1usize..=8,
    ) {
        let Ok(r) = Rate::new(rate) else { return Ok(()) };
        let Ok(pacer) = Pacer::builder(r).build_sharded_with_clock(shards, ManualClock::new(0))
        else {
            return Ok(());
        };
        let per_shard = Rate::new(rate / shards as f64).unwrap();
        let slot = per_shard.nanos_per_op().unwrap();
        let effective = pacer.effective_rate();
        let one = 1e9 / slot as f64;
        let sum: f64 = (0..shards).map(|_| one).sum();
        prop_assert_eq!(effective, sum);
        // Each shard keeps its share within the truncation of its slot.
        check_truncation(rate / shards as f64, one, 1e9 / (rate / shards as f64), slot, 1e9);
        let excess = effective / rate - 1.0;
        prop_assert!(excess >= -ROUNDING * shards as f64, "{} below {}", effective, rate);
        prop_assert!(excess < 1.0 / slot as f64 + ROUNDING * shards as f64);
    }

    #[test]
    fn token_pool_meters_one_second_over_its_tokens_per_op(rate in rates(-9.0, 9.0, 1e9)) {
        let Ok(r) = Rate::new(rate) else { return Ok(()) };
        let Ok(slot) = r.nanos_per_op() else { return Ok(()) };
        let pool = TokenPool::builder(r)
            .burst_ratio(1.0)
            .filling(Filling::Manual)
            .build_with_clock(ManualClock::new(0))
            .unwrap();
        prop_assert_eq!(pool.nanos_per_op(), slot);
        check_truncation(rate, pool.effective_rate(), 1e9 / rate, slot, 1e9);
        // What the fills meter: 3 ops' tokens let exactly 3 ops go.
        if slot <= 100_000 {
            while pool.try_acquire().is_ok() {}
            pool.refill(3 * slot).unwrap();
            let mut ops = 0;
            while pool.try_acquire().is_ok() {
                ops += 1;
            }
            prop_assert_eq!(ops, 3);
        }
    }

    #[test]
    fn smooth_limiters_charge_whole_units_per_permit(
        micros_rate in rates(-3.0, 8.0, 1e6),
        nanos_rate in rates(-3.0, 11.0, 1e9),
        warm in any::<bool>(),
    ) {
        for (rate, res, units) in [
            (micros_rate, Resolution::Micros, 1e6),
            (nanos_rate, Resolution::Nanos, 1e9),
        ] {
            let clock = ManualClock::new(0);
            let limiter: Box<dyn SmoothUnderTest> = if warm {
                Box::new(
                    SmoothWarmingUp::builder(rate)
                        .warmup(Duration::ZERO)
                        .resolution(res)
                        .build_with_clock(clock.clone())
                        .unwrap(),
                )
            } else {
                Box::new(
                    SmoothBursty::builder(rate)
                        .max_burst_seconds(0.0)
                        .resolution(res)
                        .build_with_clock(clock.clone())
                        .unwrap(),
                )
            };
            // Guava's arithmetic: the interval as an f64, cast to whole units.
            let interval = units / rate;
            let whole = interval as i64 as u64;
            let effective = limiter.effective();
            check_truncation(rate, effective, interval, whole, units);
            // What one-permit calls get: 10 calls push the 11th 10 charges on.
            if rate >= 1.0 {
                let unit_nanos = 1e9 / units;
                limiter.reserve_one();
                let delay = (0..10).map(|_| limiter.reserve_one()).last().unwrap();
                prop_assert_eq!(delay as f64, 10.0 * whole as f64 * unit_nanos);
            }
        }
    }

    #[test]
    fn refill_limiter_refills_one_second_over_its_whole_interval(
        limit in 1i64..1_000_000,
        per_permit in 1i64..1_000_000_000,
        extra in 0i64..1_000_000_000,
    ) {
        // Any period from `limit` ns on: `limit × per_permit` plus a remainder.
        let period = limit * per_permit + extra % limit.max(1);
        let config = ratekeeper::bucket::RefillConfig::builder()
            .limit_for_period(limit as u64)
            .limit_refresh_period(std::time::Duration::from_nanos(period as u64))
            .build()
            .unwrap();
        let limiter = RefillLimiter::new_with_clock(config, ManualClock::new(0));
        let npp = (period / limit) as u64;
        let asked = limit as f64 * 1e9 / period as f64;
        let effective = limiter.effective_rate();
        prop_assert_eq!(effective, 1e9 / npp as f64);
        prop_assert!(effective / asked - 1.0 >= -ROUNDING, "{} below {}", effective, asked);
        // The excess, exactly: the remainder over what the whole intervals cover.
        let implied = (period % limit) as f64 / (limit as f64 * npp as f64);
        let excess = effective / asked - 1.0;
        prop_assert!((excess - implied).abs() <= ROUNDING * (1.0 + implied), "{} vs {}", excess, implied);
        prop_assert!(excess < 1.0 / npp as f64 + ROUNDING);
    }

    #[test]
    fn cycle_limiter_rounds_nothing(limit in 1i64..1_000_000_000, period in 1i64..i64::MAX / 2) {
        let config = ratekeeper::bucket::CycleConfig::builder()
            .limit_for_period(limit as u64)
            .limit_refresh_period(std::time::Duration::from_nanos(period as u64))
            .build()
            .unwrap();
        let limiter = CycleLimiter::new_with_clock(config, ManualClock::new(0));
        let exact = limit as f64 * 1e9 / period as f64;
        prop_assert_eq!(limiter.effective_rate(), exact);
    }
}

/// The two smooth limiters behind one face, for the property above.
trait SmoothUnderTest {
    fn effective(&self) -> f64;
    /// Reserves one permit; its delay in nanoseconds.
    fn reserve_one(&self) -> u64;
}

impl SmoothUnderTest for SmoothBursty<ManualClock> {
    fn effective(&self) -> f64 {
        self.effective_rate()
    }
    fn reserve_one(&self) -> u64 {
        self.reserve(1, None).unwrap().delay_nanos()
    }
}

impl SmoothUnderTest for SmoothWarmingUp<ManualClock> {
    fn effective(&self) -> f64 {
        self.effective_rate()
    }
    fn reserve_one(&self) -> u64 {
        self.reserve(1, None).unwrap().delay_nanos()
    }
}
