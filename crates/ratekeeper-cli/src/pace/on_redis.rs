//! A `pace` run on a limit shared through Redis (`--redis`): the workers
//! call the shared [`BlockingLimiter`](ratekeeper_redis::BlockingLimiter),
//! one round trip a permit, through the same [`drive`] and [`worker`] loop
//! as an in-memory limiter.

use ratekeeper::config::{LimiterConfig, LimiterRef};
use ratekeeper::{Clock, DefaultClock, RateLimiter};

use super::drive::{drive, Outcome, RunPlan};
use super::visit::LimiterStats;
use super::worker::worker;
use super::PaceArgs;
use crate::error::UsageError;
use crate::limiter;
use crate::report::EffectiveRate;
use crate::shared::Shared;

/// Refuses what a shared limit cannot do in `pace`: the thread scope (one
/// limit per worker), `--stages` (the rate is every process's) and
/// `--max-behind` (this process's share of the rate is not known).
pub(super) fn check(args: &PaceArgs) -> Result<(), UsageError> {
    if args.redis.redis.is_none() {
        return Ok(());
    }
    let refuse = |flag: &str, why: &str| {
        Err(UsageError(format!(
            "{flag} cannot be used with --redis: {why}"
        )))
    };
    if args.spec().scope() == ratekeeper::Scope::Thread {
        return refuse(
            "the rate spec's thread scope",
            "the workers share the one limit kept under --key (drop \",thread\")",
        );
    }
    if args.stages.is_some() {
        return refuse(
            "--stages",
            "the shared limit's rate is every process's, set by the --rate each one gives",
        );
    }
    if args.max_behind.is_some() {
        return refuse(
            "--max-behind",
            "this process's share of the shared rate is not known, so neither is its schedule",
        );
    }
    Ok(())
}

/// Runs `plan` (on `shared`'s clock) on the shared limiter; `config` gives
/// the effective rate, which the server's arithmetic shares with the
/// in-memory limiter's.
pub(super) fn run(
    shared: &Shared,
    config: &LimiterConfig,
    plan: RunPlan<'_>,
) -> anyhow::Result<(Outcome, LimiterStats, EffectiveRate)> {
    let local = config.build_with_clock(plan.clock)?;
    let effective = limiter::effective_rate(&[local.as_ref()], config, "op");
    effective.warn(
        &format!("--limiter {}", config.kind().limiter_kind().name()),
        plan.target.rate,
        "ops",
    );
    let limiters = [shared.limiter().clone()];
    let no_rates: &[LimiterRef<'_, DefaultClock>] = &[];
    // A shared schedule has no restart: the run starts now.
    let start = |_: &[_]| plan.clock.now_nanos();
    let outcome = drive(&limiters, no_rates, plan, start, None, |l, ctx| {
        worker(l, ctx)
    })?;
    let s = shared.limiter().wait_stats();
    let stats = LimiterStats {
        backlog_ns: s.backlog_nanos,
        total_wait_ns: s.total_wait_nanos,
        pool: None,
    };
    Ok((outcome, stats, effective))
}
