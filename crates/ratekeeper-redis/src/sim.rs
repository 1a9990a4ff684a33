//! A virtual-clock simulation of many processes sharing one bucket through
//! leases: how much they admit beyond the bucket's own bound, and how many
//! round trips each permit costs, against lease window and process count.
//!
//! The server is the in-memory [`RefillLimiter`] on a [`ManualClock`] (the
//! same arithmetic as the script, by the conformance tests); each process
//! runs this crate's own lease logic. Each process's requests arrive
//! evenly spaced (a random phase each) at its share of the demand, and are
//! try-acquires (refused if the permit is not there now), as an HTTP
//! service's; each process keeps its own denial cache (a refusal answers
//! later requests locally until its wait has passed), and a lease refill
//! takes as many permits as the bucket holds, up to the lease. A round trip takes [`LeaseSim::round_trip`] of virtual time:
//! the server decides half-way, the process admits when the answer comes.
//! Nothing sleeps: a simulation of 10,000 processes and a million requests
//! takes a fraction of a second.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper_redis::sim::{simulate, LeaseSim};
//!
//! let report = simulate(&LeaseSim {
//!     processes: 10,
//!     demand: 0.5,
//!     window: Some(Duration::from_millis(1)),
//!     ..LeaseSim::default()
//! });
//! // One window of the limit's rate (100 permits at 100 000/s) at most.
//! assert!(report.excess <= 100.0, "{report:?}");
//! assert!(report.round_trips_per_permit < 1.0);
//! ```
//!
//! [`RefillLimiter`]: ratekeeper::RefillLimiter
//! [`ManualClock`]: ratekeeper::ManualClock

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use ratekeeper::bucket::RefillConfig;
use ratekeeper::{AcquireError, ManualClock, RateLimiter, RefillLimiter};

use crate::cache::DenialCache;
use crate::lease::{Lease, Take};

/// One simulation's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseSim {
    /// Processes sharing the limit.
    pub processes: u32,
    /// The limit: permits a second.
    pub rate: u32,
    /// The bucket's capacity (it starts full).
    pub capacity: u32,
    /// All processes' requests together, as a multiple of the rate.
    pub demand: f64,
    /// The lease window; `None`: no leases (every request a round trip).
    pub window: Option<Duration>,
    /// Virtual time simulated.
    pub duration: Duration,
    /// A round trip to the server.
    pub round_trip: Duration,
    /// The seed of the processes' phases.
    pub seed: u64,
}

impl Default for LeaseSim {
    /// 10 processes, 100 000 permits a second, capacity 1 000, demand twice
    /// the rate, no leases, 1 s, 100 µs round trips.
    fn default() -> LeaseSim {
        LeaseSim {
            processes: 10,
            rate: 100_000,
            capacity: 1_000,
            demand: 2.0,
            window: None,
            duration: Duration::from_secs(1),
            round_trip: Duration::from_micros(100),
            seed: 1,
        }
    }
}

/// What a simulation measured.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseSimReport {
    /// Requests made.
    pub requests: u64,
    /// Requests admitted.
    pub admitted: u64,
    /// The most admitted over any interval beyond what the bucket allows
    /// over it (capacity + rate × its length): 0 without leases.
    pub excess: f64,
    /// Round trips to the server.
    pub round_trips: u64,
    /// Round trips per admitted permit.
    pub round_trips_per_permit: f64,
    /// Requests refused by a process's denial cache (no round trip).
    pub cached_refusals: u64,
    /// Admitted over the bucket's own bound for the whole run (capacity +
    /// rate × duration): below 1 where leases held permits unused.
    pub utilisation: f64,
}

/// Runs `sim`.
pub fn simulate(sim: &LeaseSim) -> LeaseSimReport {
    let clock = ManualClock::new(0);
    let server = bucket(sim, clock.clone());
    let rtt = u64::try_from(sim.round_trip.as_nanos()).unwrap_or(u64::MAX);
    let duration = u64::try_from(sim.duration.as_nanos()).unwrap_or(u64::MAX);
    let per_process = sim.demand * f64::from(sim.rate) / f64::from(sim.processes.max(1));
    let gap = (1e9 / per_process).max(1.0) as u64;
    let npp = 1_000_000_000 / u64::from(sim.rate.max(1));
    let max_lease = sim.window.map_or(1, |w| {
        (w.as_nanos() / u128::from(npp)).clamp(1, u128::from(sim.capacity)) as u32
    });
    let mut leases: Vec<Lease> = (0..sim.processes)
        .map(|_| Lease::new(sim.window.unwrap_or(Duration::ZERO), 0, max_lease, 0))
        .collect();
    let caches: Vec<DenialCache> = (0..sim.processes).map(|_| DenialCache::new(npp)).collect();
    // Arrivals: (time, process), each process at a random phase.
    let mut seed = sim.seed.max(1);
    let mut arrivals: BinaryHeap<Reverse<(u64, u32)>> = (0..sim.processes)
        .map(|p| Reverse((next_random(&mut seed) % gap, p)))
        .collect();
    let (mut requests, mut trips, mut cached) = (0u64, 0u64, 0u64);
    let mut admitted_at: Vec<u64> = Vec::new();
    while let Some(Reverse((t, p))) = arrivals.pop() {
        if t >= duration {
            break;
        }
        arrivals.push(Reverse((t.saturating_add(gap), p)));
        requests += 1;
        let (lease, cache) = (&mut leases[p as usize], &caches[p as usize]);
        if sim.window.is_some() {
            if let Take::Granted(_) = lease.take(1, t, Some(0)) {
                admitted_at.push(t);
                continue;
            }
        }
        if cache.refuses(t, 1, 0).is_some() {
            cached += 1;
            continue;
        }
        // A round trip: decided half-way, admitted when the answer comes.
        trips += 1;
        let at_server = t + rtt / 2;
        clock.set_nanos(at_server);
        let size = if sim.window.is_some() {
            lease.size(t, 1, 0)
        } else {
            1
        };
        // As many as the bucket holds, up to the lease (at least one).
        let held = u32::try_from(server.available_permits().max(1)).unwrap_or(1);
        match server.try_acquire_n(size.min(held)) {
            Ok(g) if g.permits() > 1 => {
                lease.fill(&g, g.permits(), 1, t + rtt);
                admitted_at.push(t + rtt);
            }
            Ok(_) => {
                lease.count(1);
                admitted_at.push(t + rtt);
            }
            Err(AcquireError::WouldWait { wait, .. }) => {
                let wait = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
                cache.refused(at_server, 1, wait);
            }
            Err(_) => {}
        }
    }
    admitted_at.sort_unstable();
    let admitted = admitted_at.len() as u64;
    let bound = f64::from(sim.capacity) + f64::from(sim.rate) * duration as f64 / 1e9;
    LeaseSimReport {
        requests,
        admitted,
        excess: excess(&admitted_at, f64::from(sim.rate), f64::from(sim.capacity)),
        round_trips: trips,
        round_trips_per_permit: trips as f64 / admitted.max(1) as f64,
        cached_refusals: cached,
        utilisation: admitted as f64 / bound,
    }
}

/// The server's bucket: `capacity`, full at the start, `rate` a second.
fn bucket(sim: &LeaseSim, clock: ManualClock) -> RefillLimiter<ManualClock> {
    // The capacity may be below the rate: a period of 1 s (whose limit may
    // not exceed the capacity) would refuse it, so the rate is given per
    // millisecond-sized period.
    let per_period = (sim.rate / 1000).max(1);
    let config = RefillConfig::builder()
        .limit_for_period(u64::from(per_period))
        .limit_refresh_period(Duration::from_nanos(
            1_000_000_000 * u64::from(per_period) / u64::from(sim.rate.max(1)),
        ))
        .permit_capacity(u64::from(sim.capacity.max(per_period)))
        .initial_permits(u64::from(sim.capacity.max(per_period)))
        .timeout(Duration::ZERO)
        .build()
        .expect("a valid simulated bucket");
    RefillLimiter::new_with_clock(config, clock)
}

/// The most admitted over any interval beyond `capacity + rate × length`
/// (`rate` a second, `times` sorted, in ns): `max over i ≤ j of (j − i + 1)
/// − rate × (t_j − t_i) − capacity`, or 0, in one pass (the best start so
/// far for each end).
///
/// ```
/// // 1 a second, capacity 1: three at once exceed by 2.
/// assert_eq!(ratekeeper_redis::sim::excess(&[0, 0, 0], 1.0, 1.0), 2.0);
/// ```
pub fn excess(times: &[u64], rate: f64, capacity: f64) -> f64 {
    let mut best_start = f64::NEG_INFINITY;
    let mut worst = f64::NEG_INFINITY;
    for (j, &t) in times.iter().enumerate() {
        let x = rate * t as f64 / 1e9;
        // The interval i..=j holds j − i + 1 and may hold capacity +
        // x_j − x_i: its excess is (j − x_j) + (x_i − i) + 1 − capacity.
        best_start = best_start.max(x - j as f64);
        worst = worst.max(j as f64 - x + best_start + 1.0 - capacity);
    }
    worst.max(0.0)
}

/// A step of a 64-bit linear congruential generator (Knuth's MMIX).
fn next_random(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_excess_is_the_worst_interval() {
        // 1 a second, capacity 1: three at once exceed by 2.
        assert_eq!(excess(&[0, 0, 0], 1.0, 1.0), 2.0);
        // Spaced a second apart: within the bound.
        assert_eq!(excess(&[0, 1_000_000_000, 2_000_000_000], 1.0, 1.0), 0.0);
    }

    #[test]
    fn without_leases_nothing_exceeds_the_bucket() {
        let r = simulate(&LeaseSim::default());
        assert_eq!(r.excess, 0.0, "{r:?}");
        assert_eq!(r.round_trips + r.cached_refusals, r.requests);
        assert!(r.utilisation > 0.95, "{r:?}");
    }

    #[test]
    fn leases_exceed_by_at_most_one_window_of_the_rate() {
        for processes in [10, 1000] {
            let r = simulate(&LeaseSim {
                processes,
                window: Some(Duration::from_millis(1)),
                ..LeaseSim::default()
            });
            // One window of 100 000/s is 100 permits.
            assert!(r.excess <= 100.0, "{processes}: {r:?}");
        }
    }
}
