//! What `pace`, `exec` and `simulate` share about the limiter a run uses,
//! once the library built it from its [`LimiterConfig`]: starting its
//! schedule, the rate its arithmetic gives, and the report's fields that
//! describe it (with the names of a pacer's strictness mode and wait
//! policy, which `pipe` uses too).

use ratekeeper::config::{KindConfig, LimiterConfig, LimiterRef};
use ratekeeper::pacer::{Strictness, StrictnessMode};
use ratekeeper::smooth::Resolution;
use ratekeeper::Clock;
use serde::Serialize;

use crate::report::{duration_nanos, resolution_name, EffectiveRate};

/// Starts every schedule of `limiters` now and returns the run's start: the
/// earliest pacer slot after the restarts, or for the others the clock's
/// reading before them. The token pool and the sharded pacer restart (a
/// pool's filler thread, if any, runs from here); Guava's and
/// Resilience4j's limiters have no restart: their time started when they
/// were built.
pub fn start_schedules<C: Clock + 'static>(
    limiters: &[LimiterRef<'_, C>],
    clock: &dyn Clock,
) -> u64 {
    let before = clock.now_nanos();
    let mut first_slot: Option<u64> = None;
    for l in limiters {
        match l {
            LimiterRef::Pacer(p) => {
                p.restart();
                let slot = p.next_slot_nanos();
                first_slot = Some(first_slot.map_or(slot, |s| s.min(slot)));
            }
            LimiterRef::ShardedPacer(p) => p.restart(),
            LimiterRef::Pool(p) => p.restart(),
            _ => {}
        }
    }
    first_slot.unwrap_or(before)
}

/// The rate `limiters` (all built from `config`) give in all by their
/// integer arithmetic, and how it rounds one `op` ("op", "run").
pub fn effective_rate<C: Clock + 'static>(
    limiters: &[LimiterRef<'_, C>],
    config: &LimiterConfig,
    op: &str,
) -> EffectiveRate {
    let sum: f64 = limiters.iter().map(|l| l.effective_rate()).sum();
    match limiters.first() {
        Some(LimiterRef::Pacer(p)) => EffectiveRate::pacer(sum, p.nanos_per_op(), op),
        Some(LimiterRef::ShardedPacer(p)) => EffectiveRate::sharded(sum, p.shards()),
        Some(LimiterRef::Pool(p)) => EffectiveRate::pool(sum, p.nanos_per_op(), op),
        Some(LimiterRef::Refill(l)) => EffectiveRate::refill(sum, l.config().nanos_per_permit()),
        Some(LimiterRef::Cycle(_)) => EffectiveRate::cycle(sum),
        // Guava's limiters.
        first => EffectiveRate::smooth(
            sum,
            first.map_or(0.0, |l| l.effective_rate()),
            Resolution::for_rate(config.kind().rate()),
        ),
    }
}

/// The fields of a JSON report that describe a limiter's own parameters;
/// the other kinds' are left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LimiterFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strictness: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strictness_mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_burst_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_factor: Option<f64>,
    /// Guava's limiters: `micros` or `nanos`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_for_period: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_period_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_permits: Option<i64>,
}

impl LimiterFields {
    /// The fields of `config`'s kind.
    pub fn of(config: &LimiterConfig) -> LimiterFields {
        let mut f = LimiterFields::default();
        let resolution =
            |rate: ratekeeper::Rate| Some(resolution_name(Resolution::for_rate(rate.get())));
        match config.kind() {
            KindConfig::Pacer { strictness, .. } => {
                f.strictness = Some(strictness.get());
                f.strictness_mode = Some(strictness_mode_name(strictness));
            }
            KindConfig::Pool { burst_ratio, .. } => f.burst_ratio = Some(burst_ratio.get()),
            KindConfig::Bursty {
                rate,
                max_burst_seconds,
            } => {
                f.max_burst_seconds = Some(max_burst_seconds);
                f.resolution = resolution(rate);
            }
            KindConfig::WarmingUp {
                rate,
                warmup,
                cold_factor,
            } => {
                f.warmup_ns = Some(duration_nanos(warmup));
                f.cold_factor = Some(cold_factor);
                f.resolution = resolution(rate);
            }
            KindConfig::Refill(c) => {
                f.limit_for_period = Some(c.limit_for_period());
                f.refresh_period_ns = Some(duration_nanos(c.limit_refresh_period()));
                f.timeout_ns = Some(duration_nanos(c.timeout()));
                f.capacity = Some(c.capacity());
                f.initial_permits = Some(c.initial_permits());
            }
            KindConfig::Cycle(c) => {
                f.limit_for_period = Some(c.limit_for_period());
                f.refresh_period_ns = Some(duration_nanos(c.limit_refresh_period()));
                f.timeout_ns = Some(duration_nanos(c.timeout()));
            }
            _ => {}
        }
        f
    }
}

/// The JSON name of a pacer strictness's mode: "average",
/// "burst_compensation", "strict" or "burst_ratio".
pub fn strictness_mode_name(s: Strictness) -> &'static str {
    match s.mode() {
        StrictnessMode::Average => "average",
        StrictnessMode::Compensate { .. } => "burst_compensation",
        StrictnessMode::Strict => "strict",
        StrictnessMode::Burst(_) => "burst_ratio",
    }
}

/// The JSON name of a pacer's wait policy: "precise" (`--precise`) or
/// "default".
pub fn wait_policy_name(config: &LimiterConfig) -> &'static str {
    if config.wait_policy().precise_spin().is_some() {
        "precise"
    } else {
        "default"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictness_modes_are_named() {
        let strictness_mode_name = |s| strictness_mode_name(Strictness::new(s).unwrap());
        assert_eq!(strictness_mode_name(0.0), "average");
        assert_eq!(strictness_mode_name(0.5), "burst_compensation");
        assert_eq!(strictness_mode_name(1.0), "strict");
        assert_eq!(strictness_mode_name(1.1), "burst_ratio");
    }
}
