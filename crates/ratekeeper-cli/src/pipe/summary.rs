//! `pipe`'s report, computed from what the copy measured;
//! [`render`](super::render) prints it.

use ratekeeper::RateSpec;
use serde::Serialize;

use super::copy::Copy;
use crate::limiter::strictness_mode_name;
use crate::report::{duration_nanos, per_second, EffectiveRate};
use crate::shared::RedisReport;
use ratekeeper::pacer::Strictness;

/// The result of a `pipe` run; `Display` is the text report, `Serialize`
/// the JSON one (schema in [`AFTER_LONG_HELP`](super::AFTER_LONG_HELP)).
#[derive(Debug, Clone, Serialize)]
pub struct PipeReport {
    /// The JSON schema's version.
    pub(super) schema: u32,
    pub(super) spec: String,
    pub(super) unit: &'static str,
    pub(super) strictness: f64,
    pub(super) strictness_mode: &'static str,
    pub(super) target_rate: f64,
    /// The rate at the end, after the changes SIGUSR1/SIGUSR2 made.
    pub(super) final_rate: f64,
    /// Doublings and halvings made, and refused (beyond the Pacer's range).
    pub(super) rate_changes: u64,
    pub(super) rate_changes_refused: u64,
    /// What the Pacer's whole-nanosecond slots give (see `pace`).
    pub(super) effective_rate: Option<f64>,
    /// The text report's note when the effective rate is off the target.
    #[serde(skip)]
    pub(super) effective_note: Option<String>,
    pub(super) lines: u64,
    pub(super) bytes: u64,
    pub(super) writes: u64,
    pub(super) rate_span_ns: u64,
    pub(super) achieved_rate: f64,
    pub(super) rate_wait_ns: u64,
    pub(super) input_wait_ns: u64,
    pub(super) output_closed: bool,
    pub(super) interrupted: bool,
    /// With --redis: the shared limit, its decisions by source and its
    /// round trips (per permit: per line, or per byte with --bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) redis: Option<RedisReport>,
}

impl PipeReport {
    /// Why the limit shared through Redis stopped the run (exit status 4),
    /// if it did.
    pub fn shared_failure(&self) -> Option<String> {
        self.redis.as_ref().and_then(|r| r.stopped.clone())
    }

    /// Whether Ctrl-C ended the copy.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
}

/// The report of a copy in `unit`s ("lines" or "bytes") at `spec`, at
/// `strictness`, on a Pacer whose arithmetic gives `effective`.
pub(super) fn report(
    spec: &RateSpec,
    unit: &'static str,
    strictness: Strictness,
    effective: &EffectiveRate,
    copy: &Copy,
) -> PipeReport {
    let rate = spec.rate().get();
    let rate_span_ns = match copy.t0 {
        None => 0,
        // The last write's share of the schedule: its permits' slots.
        Some(t0) => copy
            .last_start
            .saturating_sub(t0)
            .saturating_add(copy.last_share_ns),
    };
    let (rate_changes, rate_changes_refused) = copy.schedule.changes();
    let achieved_rate = per_second(copy.units, rate_span_ns);
    let output = &copy.output;
    PipeReport {
        schema: crate::report::SCHEMA,
        spec: spec.to_string(),
        unit,
        strictness: strictness.get(),
        strictness_mode: strictness_mode_name(strictness),
        target_rate: rate,
        final_rate: copy.schedule.rate(),
        rate_changes,
        rate_changes_refused,
        effective_rate: effective.json(),
        effective_note: effective.note(rate),
        lines: output.lines(),
        bytes: output.bytes,
        writes: output.writes,
        rate_span_ns,
        achieved_rate,
        rate_wait_ns: duration_nanos(copy.rate_wait),
        input_wait_ns: duration_nanos(copy.input_wait),
        output_closed: output.closed,
        interrupted: copy.interrupted,
        redis: None,
    }
}
