//! The run on the limiters a [`LimiterConfig`] built: the workers' loop is
//! compiled for each limiter type, and what the limiters measured besides
//! the workers is read from them.

use ratekeeper::config::{
    KindConfig, LimiterConfig, LimiterKind, LimiterRef, LimiterVisitor, SharedLimiter,
};
use ratekeeper::pool::Filling;
use ratekeeper::Clock;

use super::drive::{drive, Outcome, RunPlan};
use super::worker::{worker, Ctx};
use crate::limiter;
use crate::report::EffectiveRate;

/// The run on the limiters a [`LimiterConfig`] built: the workers' loop is
/// compiled for each limiter type and the way workers reach it.
pub(super) struct Pace<'a> {
    pub(super) plan: RunPlan<'a>,
    pub(super) config: &'a LimiterConfig,
}

impl LimiterVisitor for Pace<'_> {
    type Output = anyhow::Result<(Outcome, LimiterStats, EffectiveRate)>;

    fn visit<S: SharedLimiter>(self, limiters: &[S]) -> Self::Output {
        let Pace { plan, config } = self;
        let refs: Vec<LimiterRef<'_, S::Clock>> = limiters.iter().map(|l| l.limiter()).collect();
        let effective = limiter::effective_rate(&refs, config, "op");
        effective.warn(
            &format!("--limiter {}", config.kind().limiter_kind().name()),
            plan.target.rate,
            "ops",
        );
        let is_pool = config.kind().limiter_kind() == LimiterKind::Pool;
        // The pools' fills before the run (each started when it was built).
        let mut fills_before = 0;
        let start = |limiters: &[S]| {
            let refs: Vec<_> = limiters.iter().map(|l| l.limiter()).collect();
            fills_before = summed_fills(&refs);
            limiter::start_schedules(&refs, &plan.clock)
        };
        let backlog = is_pool.then_some(summed_backlog::<S> as fn(&[S]) -> u64);
        // Each worker's way to its limiter is made on its own thread.
        let work = |l: &S, ctx: &Ctx<'_>| worker(&l.worker(), ctx);
        let outcome = drive(limiters, &refs, plan, start, backlog, work)?;
        let (backlog_ns, total_wait_ns) = refs.iter().fold((0u64, 0u64), |(b, t), l| {
            let s = l.as_dyn().wait_stats();
            (
                b.saturating_add(s.backlog_nanos),
                t.saturating_add(s.total_wait_nanos),
            )
        });
        let pool = is_pool.then(|| {
            let fills = summed_fills(&refs).saturating_sub(fills_before);
            (
                // The backlog reported is read after the last sample, and a
                // filler thread may have added to it since: the largest
                // backlog includes it.
                outcome.max_backlog_ns.max(backlog_ns),
                fills,
                filling_in_effect(&refs, config),
            )
        });
        let stats = LimiterStats {
            backlog_ns,
            total_wait_ns,
            pool,
        };
        Ok((outcome, stats, effective))
    }
}

/// What a run measured of its limiters besides the workers' results.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LimiterStats {
    /// The summed backlog and total wait at the end.
    pub(super) backlog_ns: u64,
    pub(super) total_wait_ns: u64,
    /// Token pools: the largest backlog sampled, the fills during the run
    /// and the filling in effect (a pool falls back to inline filling if its
    /// filler thread cannot start).
    pub(super) pool: Option<(u64, u64, Filling)>,
}

/// The summed backlog (waiting pools) of the token pools among `limiters`.
fn summed_backlog<S: SharedLimiter>(limiters: &[S]) -> u64 {
    limiters.iter().fold(0u64, |sum, l| match l.limiter() {
        LimiterRef::Pool(p) => sum.saturating_add(p.backlog_nanos()),
        _ => sum,
    })
}

/// The summed fills of the token pools among `limiters`.
fn summed_fills<C: Clock + 'static>(limiters: &[LimiterRef<'_, C>]) -> u64 {
    limiters.iter().fold(0u64, |sum, l| match l {
        LimiterRef::Pool(p) => sum.saturating_add(p.fills()),
        _ => sum,
    })
}

/// The pools' filling in effect: the configured one, unless a pool fell
/// back to inline filling because its filler thread could not start.
fn filling_in_effect<C: Clock + 'static>(
    limiters: &[LimiterRef<'_, C>],
    config: &LimiterConfig,
) -> Filling {
    let configured = match config.kind() {
        KindConfig::Pool { filling, .. } => filling,
        _ => Filling::Inline,
    };
    limiters
        .iter()
        .filter_map(|l| match l {
            LimiterRef::Pool(p) => Some(p.filling()),
            _ => None,
        })
        .find(|f| *f != configured)
        .unwrap_or(configured)
}
