//! `simulate`'s report: what each limiter's ops add up to (exact
//! percentiles, bursts, the timeline), computed from the simulated ops;
//! [`render`](super::render) prints it.

use std::time::Duration;

use ratekeeper::config::{KindConfig, LimiterConfig};
use ratekeeper::pool::Filling;
use serde::Serialize;

use super::clients::{client_reports, ClientInfo, ClientReport, KeyedReport, KeyedSpec, Workload};
use super::model::{Op, Run};
use super::{LimiterSpec, Rows, SimulateArgs};
use crate::limiter::{strictness_mode_name, LimiterFields};
use crate::report::{
    duration_nanos, fmt_duration, fmt_effective, fmt_number, fmt_rate, per_second, resolution_note,
    EffectiveRate, WaitSummary,
};

/// Exact percentiles (nearest rank), maximum and mean (rounded down) of
/// `values`; all zero for none.
pub(super) fn exact_summary(values: &mut [u64]) -> WaitSummary {
    if values.is_empty() {
        return WaitSummary::default();
    }
    values.sort_unstable();
    let n = values.len();
    let rank = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let sum: u128 = values.iter().map(|&v| u128::from(v)).sum();
    WaitSummary {
        p50: rank(0.50),
        p90: rank(0.90),
        p95: rank(0.95),
        p99: rank(0.99),
        p999: rank(0.999),
        max: values[n - 1],
        mean: u64::try_from(sum / n as u128).unwrap_or(u64::MAX),
    }
}

/// The most grants in a row each less than half of `interval_ns` after the
/// one before; `granted` sorted.
pub(super) fn max_burst(granted: &[u64], interval_ns: f64) -> u64 {
    let mut best = 0u64;
    let mut run = 0u64;
    let mut prev: Option<u64> = None;
    for &g in granted {
        run = match prev {
            Some(p) if ((g - p) as f64) < interval_ns / 2.0 => run + 1,
            _ => 1,
        };
        best = best.max(run);
        prev = Some(g);
    }
    best
}

/// One timeline row (JSON: an element of `timeline`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct Row {
    pub(super) op: u64,
    /// With `--client`: whose op.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) client: Option<String>,
    pub(super) arrival_ns: u64,
    pub(super) refused: bool,
    pub(super) scheduled_ns: Option<u64>,
    pub(super) granted_ns: Option<u64>,
    pub(super) wait_ns: Option<u64>,
    pub(super) behind_ns: Option<u64>,
}

/// One limiter's part of the report (JSON: an element of `limiters`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct LimiterReport {
    pub(super) limiter: String,
    pub(super) kind: &'static str,
    /// The text report's one-line description.
    #[serde(skip)]
    pub(super) description: String,
    pub(super) target_rate: f64,
    /// What the limiter's integer arithmetic gives (null: no limit).
    pub(super) effective_rate: Option<f64>,
    /// The kind's own parameters.
    #[serde(flatten)]
    pub(super) fields: LimiterFields,
    /// The pool's fill interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) fill_interval_ns: Option<u64>,
    pub(super) ops: u64,
    pub(super) refused: u64,
    pub(super) first_grant_ns: Option<u64>,
    pub(super) last_grant_ns: Option<u64>,
    /// The span the achieved rate is over.
    pub(super) rate_span_ns: u64,
    pub(super) achieved_rate: f64,
    pub(super) max_burst: u64,
    pub(super) wait_ns: WaitSummary,
    pub(super) behind_ns: WaitSummary,
    pub(super) timeline: Vec<Row>,
    pub(super) timeline_omitted: u64,
    /// With `--client`: each client's share.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) clients: Vec<ClientReport>,
    /// With `--keyed`: the keyed map's metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) keyed: Option<KeyedReport>,
}

/// The result of a `simulate` run; `Display` is the text report,
/// `Serialize` the JSON one (schema in [`AFTER_LONG_HELP`](super::AFTER_LONG_HELP)).
#[derive(Debug, Clone, Serialize)]
pub struct SimulateReport {
    /// The JSON schema's version.
    pub(super) schema: u32,
    /// `--arrivals`; null with `--client`.
    pub(super) pattern: Option<String>,
    pub(super) arrivals: u64,
    pub(super) end_ns: u64,
    pub(super) model: &'static str,
    pub(super) rows: Option<usize>,
    /// With `--client`: the clients and their patterns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) clients: Vec<ClientInfo>,
    /// With `--keyed`: the keyed map's settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) keyed: Option<KeyedSpec>,
    pub(super) limiters: Vec<LimiterReport>,
}

/// The report of a run of `args` on `workload`: each limiter's run (in the
/// order of `args.limiters`), summarized, and with `--client` each
/// client's share.
pub(super) fn report(
    args: &SimulateArgs,
    workload: &Workload,
    runs: &[Run],
    keyed: Option<KeyedSpec>,
) -> SimulateReport {
    SimulateReport {
        schema: crate::report::SCHEMA,
        pattern: workload.pattern.clone(),
        arrivals: workload.times.len() as u64,
        end_ns: workload.end_ns,
        model: "open_loop",
        rows: args.rows.0,
        clients: args.clients.iter().map(ClientInfo::of).collect(),
        keyed,
        limiters: args
            .limiters
            .iter()
            .zip(runs)
            .map(|(spec, run)| {
                let mut l = summarize(spec, &run.ops, args.rows, &run.effective);
                if !args.clients.is_empty() {
                    let interval = 1e9 / l.target_rate;
                    l.clients = client_reports(&args.clients, &workload.owner, &run.ops, interval);
                    for row in &mut l.timeline {
                        let client = &args.clients[workload.owner[row.op as usize - 1]];
                        row.client = Some(client.name.clone());
                    }
                }
                l.keyed = run.keyed;
                l
            })
            .collect(),
    }
}

/// The text report's description of a limiter.
fn describe(config: &LimiterConfig) -> String {
    let kind = config.kind();
    let rate = fmt_rate(kind.rate());
    let d = |d: Duration| fmt_duration(duration_nanos(d));
    let resolution = || resolution_note(LimiterFields::of(config).resolution);
    match kind {
        KindConfig::Pacer { strictness, .. } => format!(
            "ratekeeper Pacer, {rate}, strictness {strictness} ({})",
            strictness_mode_name(strictness).replace('_', " ")
        ),
        KindConfig::Pool {
            burst_ratio,
            filling,
            ..
        } => {
            let fill = match filling {
                Filling::Thread(fill) => format!("filled every {}", d(fill)),
                other => format!("filling {other}"),
            };
            format!("nosqlbench token pool, {rate}, burst ratio {burst_ratio}, {fill}")
        }
        KindConfig::Bursty {
            rate: r,
            max_burst_seconds,
        } => format!(
            "Guava SmoothBursty, {rate}, max burst {max_burst_seconds}s ({} permits stored while \
             idle){}",
            fmt_number(max_burst_seconds * r.get()),
            resolution()
        ),
        KindConfig::WarmingUp { warmup, .. } if warmup.is_zero() => {
            format!("Guava SmoothWarmingUp, {rate}, no warm-up{}", resolution())
        }
        KindConfig::WarmingUp {
            rate: r,
            warmup,
            cold_factor,
        } => format!(
            "Guava SmoothWarmingUp, {rate}, warm-up {}, cold factor {cold_factor} (cold: {}){}",
            d(warmup),
            fmt_rate(r.get() / cold_factor),
            resolution()
        ),
        KindConfig::Refill(c) => format!(
            "Resilience4j RefillLimiter, {} permits per {} ({rate}), capacity {}, {} initial \
             permits, timeout {}",
            fmt_number(c.limit_for_period()),
            d(c.limit_refresh_period()),
            fmt_number(c.capacity()),
            fmt_number(c.initial_permits()),
            d(c.timeout())
        ),
        KindConfig::Cycle(c) => format!(
            "Resilience4j CycleLimiter, {} permits at the start of each {} cycle ({rate}), \
             timeout {}",
            fmt_number(c.limit_for_period()),
            d(c.limit_refresh_period()),
            d(c.timeout())
        ),
        other => format!("{}, {rate}", other.limiter_kind()),
    }
}

/// One limiter's report from its ops and its effective rate.
fn summarize(
    spec: &LimiterSpec,
    ops: &[Op],
    rows: Rows,
    effective: &EffectiveRate,
) -> LimiterReport {
    let config = spec.config;
    let target_rate = config.kind().rate();
    let mut description = describe(&config);
    if let Some(note) = effective.note(target_rate) {
        description.push_str(&format!(
            "; effective {}",
            fmt_effective(effective.json(), Some(&note), "ops")
        ));
    }
    let interval = 1e9 / target_rate;
    let mut granted: Vec<u64> = ops.iter().filter_map(|o| o.grant.map(|g| g.1)).collect();
    let mut waits: Vec<u64> = ops
        .iter()
        .filter_map(|o| o.grant.map(|(_, g)| g - o.arrival))
        .collect();
    let mut behind: Vec<u64> = ops
        .iter()
        .filter_map(|o| o.grant.map(|(s, g)| g.saturating_sub(s)))
        .collect();
    granted.sort_unstable();
    let count = granted.len() as u64;
    let first = granted.first().copied();
    let last = granted.last().copied();
    let rate_span_ns = match (first, last) {
        (Some(f), Some(l)) => (l - f).saturating_add(interval.round() as u64),
        _ => 0,
    };
    let achieved_rate = per_second(count, rate_span_ns);
    let (timeline, timeline_omitted) = timeline(ops, rows);
    LimiterReport {
        limiter: spec.label.clone(),
        kind: config.kind().limiter_kind().name(),
        description,
        target_rate,
        effective_rate: effective.json(),
        fields: LimiterFields::of(&config),
        fill_interval_ns: match config.kind() {
            KindConfig::Pool {
                filling: Filling::Thread(fill),
                ..
            } => Some(duration_nanos(fill)),
            _ => None,
        },
        ops: count,
        refused: ops.len() as u64 - count,
        first_grant_ns: first,
        last_grant_ns: last,
        rate_span_ns,
        achieved_rate,
        max_burst: max_burst(&granted, interval),
        wait_ns: exact_summary(&mut waits),
        behind_ns: exact_summary(&mut behind),
        timeline,
        timeline_omitted,
        clients: Vec::new(),
        keyed: None,
    }
}

/// The first `rows` ops as timeline rows, and how many were left out.
fn timeline(ops: &[Op], rows: Rows) -> (Vec<Row>, u64) {
    let shown = rows.0.unwrap_or(ops.len()).min(ops.len());
    let timeline = ops[..shown]
        .iter()
        .enumerate()
        .map(|(i, o)| Row {
            op: i as u64 + 1,
            client: None,
            arrival_ns: o.arrival,
            refused: o.grant.is_none(),
            scheduled_ns: o.grant.map(|g| g.0),
            granted_ns: o.grant.map(|g| g.1),
            wait_ns: o.grant.map(|g| g.1 - o.arrival),
            behind_ns: o.grant.map(|(s, g)| g.saturating_sub(s)),
        })
        .collect();
    (timeline, (ops.len() - shown) as u64)
}
