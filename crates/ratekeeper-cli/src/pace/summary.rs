//! `pace`'s report, computed from what the run measured;
//! [`render`](super::render) prints it.

use ratekeeper::config::{Access, LimiterConfig, LimiterKind};
use ratekeeper::pool::Filling;
use serde::Serialize;

use super::behind::{behind_nanos, below_target_warning, checks_below_target, is_below_target};
use super::drive::{Outcome, RunPlan};
use super::visit::LimiterStats;
use super::work::WorkSpec;
use super::worker::WorkerResult;
use super::PaceArgs;
use crate::limiter::{wait_policy_name, LimiterFields};
use crate::report::{
    duration_nanos, fmt_duration, fmt_nanos, per_second, EffectiveRate, WaitRecorder, WaitSummary,
};
use crate::run::ramp::Staged;
use crate::run::verdict::{
    recorded, Condition, Failed, Failures, Figures, Stat, TimeFigure, Verdict,
};
use crate::run::{self, schedule_span};
use crate::shared::RedisReport;

/// The name the JSON report gives `access`.
fn access_name(access: Access) -> &'static str {
    match access {
        Access::Batched => "batched",
        Access::Sharded(_) => "sharded",
        _ => "exact",
    }
}

/// The result of a `pace` run; `Display` is the text report, `Serialize` the
/// JSON one (schema in [`AFTER_LONG_HELP`](super::AFTER_LONG_HELP)). Fields that apply to one limiter
/// only are `None` for the other and left out of the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct PaceReport {
    /// The JSON schema's version.
    pub(super) schema: u32,
    pub(super) spec: String,
    pub(super) limiter: &'static str,
    /// --rate's rate (x threads for the thread scope); with --stages their
    /// mean over the rate span (see [`target`](super::target)).
    pub(super) target_rate: f64,
    /// With --stages: the stages and the rate changes (JSON null without).
    #[serde(flatten)]
    pub(super) staged: Staged,
    /// What the limiters' integer arithmetic gives (null: no limit).
    pub(super) effective_rate: Option<f64>,
    /// The text report's note when the effective rate is off the target.
    #[serde(skip)]
    pub(super) effective_note: Option<String>,
    /// The limiter's own parameters.
    #[serde(flatten)]
    pub(super) fields: LimiterFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) wait_policy: Option<&'static str>,
    /// How the workers reach the limiter: "exact", "batched" or "sharded".
    pub(super) access: &'static str,
    /// The sharded pacer's shard count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) shards: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) filling: Option<&'static str>,
    /// `Some(None)` (JSON null) for a pool filled inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) fill_interval_ns: Option<Option<u64>>,
    pub(super) threads: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) pacers: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) pools: Option<u32>,
    /// Guava's and Resilience4j's limiters: how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) limiters: Option<u32>,
    pub(super) mode: &'static str,
    pub(super) duration_ns: Option<u64>,
    pub(super) count: Option<u64>,
    pub(super) ops: u64,
    /// With --stages: the ops due over the span, the integral of the
    /// ramp's rate (null without).
    pub(super) ops_due: Option<f64>,
    /// With --stages: the ops taken after they were due, every worker busy
    /// then (null without).
    pub(super) ops_found_workers_busy: Option<u64>,
    pub(super) rate_span_ns: u64,
    pub(super) wall_ns: u64,
    pub(super) achieved_rate: f64,
    /// How far behind its target schedule the run ended (see
    /// [`behind`](super::behind)).
    pub(super) behind_ns: u64,
    /// Whether the achieved rate is more than 1 % below the target (and the
    /// run at least 100 ms behind): the warning's condition. `None` (JSON
    /// null) where it is not checked (the warm-up limiter).
    pub(super) below_target: Option<bool>,
    pub(super) wait_ns: WaitSummary,
    /// The ops' wait times, for --fail-if's percentiles.
    #[serde(skip)]
    pub(super) waits: WaitRecorder,
    /// With --work: the work and the ops' service and response times.
    #[serde(flatten)]
    pub(super) work: Option<WorkReport>,
    pub(super) backlog_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_backlog_ns: Option<u64>,
    pub(super) total_wait_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) fills: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) refused: Option<u64>,
    pub(super) cpu_ns: Option<u64>,
    pub(super) cpu_ns_per_op: Option<u64>,
    pub(super) interrupted: bool,
    /// --max-behind (null without).
    pub(super) max_behind_ns: Option<u64>,
    /// Whether --max-behind ended the run.
    pub(super) stopped_by_max_behind: bool,
    /// With --fail-if: the conditions and those that held.
    #[serde(flatten)]
    pub(super) verdict: Verdict,
    /// With --redis: the shared limit, its decisions by source and its
    /// round trips.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) redis: Option<RedisReport>,
}

/// With --work: the work each op did and the ops' service (end - start)
/// and response (end - scheduled) times.
#[derive(Debug, Clone, Serialize)]
pub(super) struct WorkReport {
    pub(super) work_ns: u64,
    pub(super) work_jitter_ns: u64,
    /// Whether the work spun on the clock (`--work-cpu`) or slept.
    pub(super) work_cpu: bool,
    /// Ops whose work ran to the end: all of them, unless Ctrl-C cut the
    /// last ones' short (those count in `ops` and `wait_ns` only).
    pub(super) completed: u64,
    pub(super) service_ns: WaitSummary,
    pub(super) response_ns: WaitSummary,
    /// The service and response times, for --fail-if's percentiles.
    #[serde(skip)]
    pub(super) service: WaitRecorder,
    #[serde(skip)]
    pub(super) response: WaitRecorder,
}

impl WorkReport {
    /// The report of `spec` from the workers' `results`, merged.
    fn of(spec: WorkSpec, results: &[WorkerResult]) -> WorkReport {
        let (mut service, mut response) = (WaitRecorder::new(), WaitRecorder::new());
        for w in results.iter().filter_map(|r| r.work.as_ref()) {
            service.merge(&w.service);
            response.merge(&w.response);
        }
        WorkReport {
            work_ns: spec.nanos,
            work_jitter_ns: spec.jitter_nanos,
            work_cpu: spec.cpu,
            completed: service.count(),
            service_ns: service.summary(),
            response_ns: response.summary(),
            service,
            response,
        }
    }
}

impl PaceReport {
    /// Whether Ctrl-C ended the run.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// Why the limit shared through Redis stopped the run (exit status 4),
    /// if it did.
    pub fn shared_failure(&self) -> Option<String> {
        self.redis.as_ref().and_then(|r| r.stopped.clone())
    }

    /// What to say when --max-behind ended the run (exit status 3); `None`
    /// otherwise.
    pub fn stopped_behind(&self) -> Option<String> {
        let limit = self.max_behind_ns.filter(|_| self.stopped_by_max_behind)?;
        Some(format!(
            "the run fell {} behind its schedule (--max-behind {}) and was stopped {} in",
            fmt_nanos(self.behind_ns),
            fmt_duration(limit),
            fmt_nanos(self.rate_span_ns)
        ))
    }

    /// The `--fail-if` conditions that held after the run, with the values
    /// measured (empty when none did, or none was given).
    pub fn failed_conditions(&self) -> &[Failed] {
        &self.verdict.failed
    }

    /// Evaluates `conditions` on this report: records them, and those that
    /// held.
    pub(super) fn judge(&mut self, conditions: &[Condition]) {
        self.verdict = Verdict::of(conditions, self);
    }

    /// Adds what the run's limit shared through Redis reports. Whether
    /// the run is below its target is not checked: the target is the
    /// shared rate, which every process sharing it makes up together.
    pub(super) fn share(&mut self, redis: RedisReport) {
        self.redis = Some(redis);
        self.below_target = None;
    }

    /// How many limiters the workers shared (one each for the thread
    /// scope).
    pub(super) fn limiter_count(&self) -> u32 {
        self.pacers.or(self.pools).or(self.limiters).unwrap_or(1)
    }

    /// The text report's ops: with --stages, beside those due and those
    /// that found every worker busy.
    pub(super) fn ops_text(&self) -> String {
        let ops = crate::report::fmt_count(self.ops);
        match (self.ops_due, self.ops_found_workers_busy) {
            (Some(due), Some(busy)) => format!(
                "{ops} (of {due:.2} due by the stages, the integral of their rate; {busy} found \
                 every worker busy)"
            ),
            _ => ops,
        }
    }

    /// The warning for a run below its target, if it is.
    pub(super) fn below_target_warning(&self) -> Option<String> {
        let w = below_target_warning(self.achieved_rate, self.target_rate, self.behind_ns);
        let staged = match (self.ops_due, self.ops_found_workers_busy) {
            (Some(due), Some(busy)) if busy > 0 => format!(
                " ({} of {due:.2} ops due by --stages; every worker was busy when {busy} of \
                 them were due: too few --threads ({}) for the stages, as k6's insufficient VUs)",
                self.ops, self.threads
            ),
            (Some(due), _) => format!(
                " ({} of {due:.2} ops due by --stages; a worker was free for each when due, so \
                 the limiter or the machine held them back)",
                self.ops
            ),
            _ => String::new(),
        };
        (self.below_target == Some(true)).then(|| format!("{w}{staged}"))
    }
}

/// When the run was ended early: when --max-behind stopped it, or the first
/// clock reading at which a worker saw Ctrl-C; `None` for a run that ran its
/// course.
fn stopped_at(outcome: &Outcome) -> Option<u64> {
    outcome.halted_at.or_else(|| {
        outcome
            .results
            .iter()
            .filter(|r| r.interrupted)
            .map(|r| r.finished)
            .min()
    })
}

/// The span the run's achieved rate is over (see `pace --help`): a `--duration` (or
/// `--stages`) run's duration; otherwise (`--count`, or a run ended early)
/// from the start `t0` until the last op started, plus one slot of the
/// target schedule (at the rate then), and for a run ended early at least
/// until it `stopped`.
fn rate_span_nanos(
    plan: &RunPlan<'_>,
    outcome: &Outcome,
    last_start: Option<u64>,
    stopped: Option<u64>,
) -> u64 {
    let t0 = outcome.t0;
    match (plan.duration, stopped) {
        (Some(d), None) => duration_nanos(d),
        (_, stopped) => {
            let rate = plan.target.at(last_start.unwrap_or(t0).saturating_sub(t0));
            schedule_span(t0, last_start, rate).max(stopped.map_or(0, |s| s.saturating_sub(t0)))
        }
    }
}

/// The run's report from what it measured.
pub(super) fn summarize(
    args: &PaceArgs,
    config: &LimiterConfig,
    plan: &RunPlan<'_>,
    outcome: &Outcome,
    stats: LimiterStats,
    effective: &EffectiveRate,
) -> PaceReport {
    // --max-behind stops the workers through the interrupt, as Ctrl-C does.
    let stopped_by_max_behind = outcome.halted_at.is_some();
    let interrupted = !stopped_by_max_behind && outcome.results.iter().any(|r| r.interrupted);
    let waits = merged_waits(&outcome.results);
    let ops = waits.count();
    let last_start = outcome.results.iter().filter_map(|r| r.last_start).max();
    let rate_span_ns = rate_span_nanos(plan, outcome, last_start, stopped_at(outcome));
    let target_rate = plan.target.over(rate_span_ns);
    let achieved_rate = per_second(ops, rate_span_ns);
    let behind_ns = behind_nanos(rate_span_ns, ops, target_rate);
    let cpu_ns = outcome.cpu_ns;
    let kind = config.kind().limiter_kind();
    // One each for the thread scope.
    let limiters = Some(plan.target.limiters);
    let (filling, fill_interval_ns, max_backlog_ns, fills) = pool_fields(stats.pool);
    PaceReport {
        schema: crate::report::SCHEMA,
        spec: args.spec().to_string(),
        limiter: kind.name(),
        target_rate,
        staged: Staged::of(plan.target.ramp, outcome.driven),
        effective_rate: effective.json(),
        effective_note: effective.note(plan.target.rate),
        fields: LimiterFields::of(config),
        wait_policy: (kind == LimiterKind::Pacer).then_some(wait_policy_name(config)),
        access: access_name(config.access()),
        shards: match config.access() {
            Access::Sharded(n) => Some(n),
            _ => None,
        },
        filling,
        fill_interval_ns,
        threads: args.threads,
        pacers: limiters.filter(|_| kind == LimiterKind::Pacer),
        pools: limiters.filter(|_| kind == LimiterKind::Pool),
        limiters: limiters.filter(|_| !matches!(kind, LimiterKind::Pacer | LimiterKind::Pool)),
        mode: run::mode_name(plan.duration),
        duration_ns: plan.duration.map(duration_nanos),
        count: plan.count,
        ops,
        ops_due: plan.target.ops_due(rate_span_ns),
        ops_found_workers_busy: plan.target.ramp.map(|_| busy_ops(&outcome.results)),
        rate_span_ns,
        wall_ns: outcome.t_end.saturating_sub(outcome.t0),
        achieved_rate,
        behind_ns,
        below_target: checks_below_target(kind.name())
            .then(|| is_below_target(achieved_rate, target_rate, behind_ns)),
        wait_ns: waits.summary(),
        waits,
        work: plan.work.map(|spec| WorkReport::of(spec, &outcome.results)),
        backlog_ns: stats.backlog_ns,
        max_backlog_ns,
        total_wait_ns: stats.total_wait_ns,
        fills,
        refused: config
            .kind()
            .max_wait()
            .map(|_| outcome.results.iter().map(|r| r.refused).sum()),
        cpu_ns,
        cpu_ns_per_op: match cpu_ns {
            Some(c) if ops > 0 => Some((c as f64 / ops as f64).round() as u64),
            _ => None,
        },
        interrupted,
        max_behind_ns: plan.max_behind,
        stopped_by_max_behind,
        verdict: Verdict::default(),
        redis: None,
    }
}

/// With --stages: the ops the workers took after they were due.
fn busy_ops(results: &[WorkerResult]) -> u64 {
    results.iter().map(|r| r.busy).sum()
}

/// The workers' waits, merged.
fn merged_waits(results: &[WorkerResult]) -> WaitRecorder {
    let mut waits = WaitRecorder::new();
    for r in results {
        waits.merge(&r.waits);
    }
    waits
}

/// A token pool's report fields: its filling ("thread" or "inline"), its
/// fill interval (JSON null for inline filling), its largest sampled backlog
/// and its fills; all `None` for the other limiters.
type PoolFields = (
    Option<&'static str>,
    Option<Option<u64>>,
    Option<u64>,
    Option<u64>,
);

/// The [`PoolFields`] of what the run measured of its pools, if any.
fn pool_fields(pool: Option<(u64, u64, Filling)>) -> PoolFields {
    match pool {
        Some((max_backlog, fills, Filling::Thread(i))) => (
            Some("thread"),
            Some(Some(duration_nanos(i))),
            Some(max_backlog),
            Some(fills),
        ),
        Some((max_backlog, fills, _)) => {
            (Some("inline"), Some(None), Some(max_backlog), Some(fills))
        }
        None => (None, None, None, None),
    }
}

/// `--fail-if`'s figures: the time statistics the report prints (a
/// percentile it does not print from the histogram; service and response
/// with --work only) and the achieved rate; pace has no failures.
impl Figures for PaceReport {
    fn time(&self, figure: TimeFigure, stat: Stat) -> Option<f64> {
        let recorder = match (figure, &self.work) {
            (TimeFigure::Wait, _) => &self.waits,
            (TimeFigure::Service, Some(w)) => &w.service,
            (TimeFigure::Response, Some(w)) => &w.response,
            _ => return None,
        };
        Some(recorded(recorder, stat))
    }

    fn rate(&self) -> f64 {
        self.achieved_rate
    }

    fn failures(&self) -> Option<Failures> {
        None
    }
}
