//! `pipe`'s report: what the copy measured; [`render`](super::render)
//! prints it.

use serde::Serialize;

/// The result of a `pipe` run; `Display` is the text report, `Serialize`
/// the JSON one (schema in [`AFTER_LONG_HELP`](super::AFTER_LONG_HELP)).
#[derive(Debug, Clone, Serialize)]
pub struct PipeReport {
    pub(super) spec: String,
    pub(super) unit: &'static str,
    pub(super) strictness: f64,
    pub(super) strictness_mode: &'static str,
    pub(super) target_rate: f64,
    /// What the Pacer's whole-nanosecond slots give (see `pace`).
    pub(super) effective_rate: Option<f64>,
    /// The text report's note when the effective rate is off the target.
    #[serde(skip)]
    pub(super) effective_note: Option<String>,
    pub(super) lines: u64,
    pub(super) bytes: u64,
    pub(super) writes: u64,
    pub(super) elapsed_ns: u64,
    pub(super) achieved_rate: f64,
    pub(super) rate_wait_ns: u64,
    pub(super) input_wait_ns: u64,
    pub(super) output_closed: bool,
    pub(super) interrupted: bool,
}

impl PipeReport {
    /// Whether Ctrl-C ended the copy.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
}
