//! `exec`'s report: the dispatcher's tally of the finished runs, and the
//! report computed from it; [`render`](super::render) prints it.

use std::collections::BTreeMap;
use std::time::Duration;

use ratekeeper::config::{KindConfig, LimiterConfig, LimiterKind};
use ratekeeper::pool::Filling;
use serde::Serialize;

use super::dispatch::Stop;
use super::lag::{below_target, Lag};
use super::render::{signal_label, signal_name};
use super::slot::Sent;
use super::worker::{Ended, Finished};
use super::ExecArgs;
use crate::limiter::{wait_policy_name, LimiterFields};
use crate::plot::Buckets;
use crate::report::{
    duration_nanos, fmt_duration, fmt_nanos, fmt_unit_rate, per_second, EffectiveRate,
    WaitRecorder, WaitSummary,
};
use crate::run::ramp::{Driven, Ramp, Staged};
use crate::run::verdict::{
    recorded, Condition, Failed, Failures, Figures, Stat, TimeFigure, Verdict,
};
use crate::run::{self, schedule_span};
use crate::shared::RedisReport;

/// The most different statuses `--status-from-stdout` counts apart.
pub(super) const MAX_STATUSES: usize = 100;

/// What the runs that printed a status beyond the first
/// [`MAX_STATUSES`] different ones count as.
pub(super) const OTHER_STATUS: &str = "other";

/// What the dispatcher has seen of the finished runs.
#[derive(Debug)]
pub(super) struct Tally {
    pub(super) t0: u64,
    pub(super) wait: WaitRecorder,
    pub(super) service: WaitRecorder,
    pub(super) response: WaitRecorder,
    pub(super) exit_codes: BTreeMap<i32, u64>,
    pub(super) signals: BTreeMap<i32, u64>,
    /// With --status-from-stdout: runs by the status they printed.
    pub(super) statuses: BTreeMap<String, u64>,
    pub(super) spawn_failed: u64,
    pub(super) spawn_error: Option<String>,
    pub(super) failed: u64,
    /// Runs still running at a stop that ratekeeper sent SIGTERM.
    pub(super) terminated: u64,
    /// Of those, runs whose process group was also sent SIGKILL.
    pub(super) killed: u64,
    /// Runs ratekeeper sent SIGTERM that then ended by a signal or with a
    /// status other than 0: interrupted, not failed.
    pub(super) interrupted: u64,
    /// The first failure seen, for --fail-fast's message.
    pub(super) first_failure: Option<String>,
    pub(super) last_start: Option<u64>,
    pub(super) last_end: Option<u64>,
    /// With --plot: response and service times by start time.
    pub(super) plot: Option<(Buckets, Buckets)>,
}

impl Tally {
    pub(super) fn new(t0: u64, bucket: Option<u64>) -> Tally {
        Tally {
            t0,
            wait: WaitRecorder::new(),
            service: WaitRecorder::new(),
            response: WaitRecorder::new(),
            exit_codes: BTreeMap::new(),
            signals: BTreeMap::new(),
            statuses: BTreeMap::new(),
            spawn_failed: 0,
            spawn_error: None,
            failed: 0,
            terminated: 0,
            killed: 0,
            interrupted: 0,
            first_failure: None,
            last_start: None,
            last_end: None,
            plot: bucket.map(|w| (Buckets::new(w), Buckets::new(w))),
        }
    }

    pub(super) fn add(&mut self, f: &Finished) {
        self.last_start = self.last_start.max(Some(f.start));
        if self.stopped(f) {
            return;
        }
        let failure = match &f.ended {
            Ended::Exited(code) => {
                *self.exit_codes.entry(*code).or_default() += 1;
                (*code != 0).then(|| format!("exited with status {code}"))
            }
            Ended::Signaled(sig) => {
                *self.signals.entry(*sig).or_default() += 1;
                Some(format!("was killed by signal {}", signal_label(*sig)))
            }
            Ended::SpawnFailed(e) => {
                self.spawn_failed += 1;
                self.spawn_error.get_or_insert_with(|| e.clone());
                Some(format!("could not be started: {e}"))
            }
        };
        if let Some(why) = failure {
            self.failed += 1;
            self.first_failure
                .get_or_insert_with(|| format!("run {} {why}", f.number));
        }
        if matches!(f.ended, Ended::SpawnFailed(_)) {
            return;
        }
        if let Some(status) = &f.status {
            self.count_status(status);
        }
        self.record_times(f);
    }

    /// Counts a run by the status it printed: past [`MAX_STATUSES`]
    /// different ones, a new one counts as [`OTHER_STATUS`].
    fn count_status(&mut self, status: &str) {
        let key = if self.statuses.len() < MAX_STATUSES || self.statuses.contains_key(status) {
            status
        } else {
            OTHER_STATUS
        };
        *self.statuses.entry(key.to_owned()).or_default() += 1;
    }

    /// Counts what a run was sent at a stop; returns whether it is an
    /// interrupted run (sent SIGTERM, and did not exit 0), which is neither
    /// a failure nor timed: it did not run to its end.
    fn stopped(&mut self, f: &Finished) -> bool {
        if f.sent >= Sent::Term {
            self.terminated += 1;
        }
        if f.sent == Sent::Kill {
            self.killed += 1;
        }
        let interrupted = f.sent >= Sent::Term && f.ended != Ended::Exited(0);
        if interrupted {
            self.interrupted += 1;
            self.last_end = self.last_end.max(Some(f.end));
        }
        interrupted
    }

    /// Records a run's wait, service and response times.
    fn record_times(&mut self, f: &Finished) {
        // response = wait + service, also for a run let go before its
        // scheduled time (wait 0): never below its own service time.
        let wait = f.start.saturating_sub(f.scheduled);
        let service = f.end.saturating_sub(f.start);
        let response = wait.saturating_add(service);
        self.wait.record(wait);
        self.service.record(service);
        self.response.record(response);
        self.last_end = self.last_end.max(Some(f.end));
        if let Some((resp, serv)) = &mut self.plot {
            let t = f.start.saturating_sub(self.t0);
            resp.record(t, response);
            serv.record(t, service);
        }
    }
}

/// How the dispatch went, besides the tally.
#[derive(Debug, Clone)]
pub(super) struct Ran {
    pub(super) launched: u64,
    pub(super) stop: Stop,
    /// The signal that interrupted the run (SIGINT, SIGTERM), if one did.
    pub(super) signal: Option<i32>,
    /// Permits refused by the limiter's timeout (each asked for again).
    pub(super) refused: u64,
    pub(super) grace: Duration,
    /// When the dispatch stopped starting runs (see [`lag`](super::lag)).
    pub(super) end: u64,
    /// How far behind its schedule it was then.
    pub(super) lag: Lag,
    pub(super) max_behind: Option<Duration>,
    pub(super) config: LimiterConfig,
    pub(super) effective: EffectiveRate,
    pub(super) duration: Option<Duration>,
    pub(super) count: Option<u64>,
    /// With --stages: the rate the run followed.
    pub(super) ramp: Option<Ramp>,
    /// With --stages: the rate changes made.
    pub(super) driven: Driven,
    /// With --stages: the runs due while every slot was busy.
    pub(super) busy: u64,
}

impl Ran {
    /// With --stages: the runs they had due over the first `span_ns`.
    fn runs_due(&self, span_ns: u64) -> Option<f64> {
        let span = Duration::from_nanos(span_ns);
        self.ramp.as_ref().map(|r| r.ops_due(span))
    }
}

/// The runs' wait, service and response times, for `--fail-if`'s
/// percentiles and `--hdr-out`.
#[derive(Debug, Clone)]
pub(super) struct Histograms {
    pub(super) wait: WaitRecorder,
    pub(super) service: WaitRecorder,
    pub(super) response: WaitRecorder,
}

impl Histograms {
    fn of(tally: &Tally) -> Histograms {
        Histograms {
            wait: tally.wait.clone(),
            service: tally.service.clone(),
            response: tally.response.clone(),
        }
    }
}

/// The result of an `exec` run; `Display` is the text report, `Serialize`
/// the JSON one (schema in [`AFTER_LONG_HELP`](super::AFTER_LONG_HELP)).
#[derive(Debug, Clone, Serialize)]
pub struct ExecReport {
    /// The JSON schema's version.
    pub(super) schema: u32,
    pub(super) command: Vec<String>,
    pub(super) spec: String,
    pub(super) limiter: &'static str,
    /// The limiter's own parameters.
    #[serde(flatten)]
    pub(super) fields: LimiterFields,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) wait_policy: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) filling: Option<&'static str>,
    /// `Some(None)` (JSON null) for a pool filled inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) fill_interval_ns: Option<Option<u64>>,
    /// --rate's rate; with --stages, their mean over the rate span (see
    /// [`ramp`](crate::run::ramp)).
    pub(super) target_rate: f64,
    /// With --stages: the stages and the rate changes.
    #[serde(flatten)]
    pub(super) staged: Staged,
    /// What the limiter's integer arithmetic gives (null: no limit).
    pub(super) effective_rate: Option<f64>,
    /// The text report's note when the effective rate is off the target.
    #[serde(skip)]
    pub(super) effective_note: Option<String>,
    pub(super) concurrency: u32,
    pub(super) mode: &'static str,
    pub(super) duration_ns: Option<u64>,
    pub(super) count: Option<u64>,
    pub(super) stdout: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stdout_file: Option<String>,
    pub(super) runs: u64,
    /// With --stages: the runs due over the span, the integral of the
    /// ramp's rate (null without).
    pub(super) runs_due: Option<f64>,
    /// With --stages: the runs due while every slot was busy (null
    /// without).
    pub(super) runs_found_slots_busy: Option<u64>,
    pub(super) succeeded: u64,
    pub(super) failed: u64,
    pub(super) exit_codes: BTreeMap<i32, u64>,
    pub(super) signals: BTreeMap<i32, u64>,
    /// With --status-from-stdout: runs by the status they printed last
    /// ("" for none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stdout_statuses: Option<BTreeMap<String, u64>>,
    pub(super) spawn_failed: u64,
    pub(super) spawn_error: Option<String>,
    pub(super) interrupted_runs: u64,
    pub(super) terminated: u64,
    pub(super) killed: u64,
    pub(super) grace_ns: u64,
    pub(super) rate_span_ns: u64,
    pub(super) achieved_rate: f64,
    /// Runs due before the end that never started (see [`lag`](super::lag)).
    pub(super) due_not_started: u64,
    /// How late the schedule was at the end.
    pub(super) behind_ns: u64,
    /// Whether the achieved rate fell short of the target (by more than
    /// 1 %, and by at least one run); `None` (JSON null) where it is not
    /// checked (a limit shared through Redis).
    pub(super) below_target: Option<bool>,
    /// The wall clock from the start of the schedule until the last run
    /// ended.
    pub(super) wall_ns: u64,
    pub(super) wait_ns: WaitSummary,
    pub(super) service_ns: WaitSummary,
    pub(super) response_ns: WaitSummary,
    /// The histograms of the times above.
    #[serde(skip)]
    pub(super) histograms: Histograms,
    /// Resilience4j's limiters: permits refused by the timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) refused: Option<u64>,
    pub(super) interrupted: bool,
    /// The signal that interrupted the run: "SIGINT", "SIGTERM", or null.
    pub(super) signal: Option<&'static str>,
    /// Whether the signal stopped the starting of runs (else it came while
    /// the last runs were running).
    #[serde(skip)]
    pub(super) signal_stopped_starts: bool,
    pub(super) fail_fast: bool,
    pub(super) stopped_by_fail_fast: bool,
    /// --max-behind, if given.
    pub(super) max_behind_ns: Option<u64>,
    pub(super) stopped_by_max_behind: bool,
    /// With --fail-if: the conditions and those that held.
    #[serde(flatten)]
    pub(super) verdict: Verdict,
    /// The first failure, for --fail-fast's message (not in the JSON, which
    /// has the counts).
    #[serde(skip)]
    pub(super) first_failure: Option<String>,
    /// With --plot: runs started, and their response and service times, per
    /// time bucket.
    #[serde(skip)]
    pub(super) buckets: Option<(Buckets, Buckets)>,
    /// With --redis: the shared limit, its decisions by source and its
    /// round trips.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) redis: Option<RedisReport>,
}

impl ExecReport {
    /// Whether a signal (SIGINT, SIGTERM) interrupted the run.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// Why the limit shared through Redis stopped the run (exit status 4),
    /// if it did.
    pub fn shared_failure(&self) -> Option<String> {
        self.redis.as_ref().and_then(|r| r.stopped.clone())
    }

    /// With --fail-fast, the failure that stopped the run, if one did.
    pub fn fail_fast_failure(&self) -> Option<String> {
        if !self.stopped_by_fail_fast {
            return None;
        }
        let why = self
            .first_failure
            .clone()
            .unwrap_or_else(|| "a run failed".to_owned());
        Some(format!("{why}; stopped by --fail-fast"))
    }

    /// With --max-behind, why it stopped the run, if it did.
    pub fn max_behind_failure(&self) -> Option<String> {
        let max = self.max_behind_ns.filter(|_| self.stopped_by_max_behind)?;
        Some(format!(
            "the run fell {} behind its schedule; stopped by --max-behind {}",
            fmt_nanos(self.behind_ns),
            fmt_duration(max)
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

    /// The warning for an achieved rate below the target, if it was.
    pub(super) fn below_target_warning(&self) -> Option<String> {
        if self.below_target != Some(true) {
            return None;
        }
        let short = (1.0 - self.achieved_rate / self.target_rate) * 100.0;
        let slot = 1e9 / self.target_rate;
        // Short, though no run was waiting by the limiter's schedule.
        let kept_up = self.due_not_started == 0 && (self.behind_ns as f64) < slot;
        Some(format!(
            "achieved {}, {short:.1} % below the target {}: {} runs due but not started, behind \
             by {} at the end{}",
            fmt_unit_rate(self.achieved_rate, "runs"),
            fmt_unit_rate(self.target_rate, "runs"),
            self.due_not_started,
            fmt_nanos(self.behind_ns),
            self.staged_why(kept_up)
        ))
    }

    /// The text report's runs: with --stages, beside those due and those
    /// that found every slot busy.
    pub(super) fn runs_text(&self) -> String {
        let runs = crate::report::fmt_count(self.runs);
        match (self.runs_due, self.runs_found_slots_busy) {
            (Some(due), Some(busy)) => format!(
                "{runs} (of {due:.2} due by the stages, the integral of their rate; {busy} \
                 found every slot busy)"
            ),
            _ => runs,
        }
    }

    /// Why a run fell short of its target, for the warning: with --stages,
    /// the runs due against those started and whether every slot was busy
    /// when some were due.
    fn staged_why(&self, kept_up: bool) -> String {
        match (self.runs_due, self.runs_found_slots_busy) {
            (Some(due), Some(busy)) if busy > 0 => format!(
                " ({} of {due:.2} runs due by --stages; every slot was busy when {busy} of them \
                 were due: too little --concurrency ({}) for the stages, as k6's insufficient \
                 VUs)",
                self.runs, self.concurrency
            ),
            (Some(due), _) => format!(
                " ({} of {due:.2} runs due by --stages; a slot was free for each when due, so \
                 the limiter or the machine held them back)",
                self.runs
            ),
            _ if kept_up => " (none by the limiter's schedule: it warms up, or lets permits not \
                             taken in time go)"
                .to_owned(),
            _ => String::new(),
        }
    }
}

/// The pool's `filling` and `fill_interval_ns` (`None` for other
/// limiters; an inline pool's interval is JSON null).
fn filling(config: &LimiterConfig) -> (Option<&'static str>, Option<Option<u64>>) {
    match config.kind() {
        KindConfig::Pool {
            filling: Filling::Thread(i),
            ..
        } => (Some("thread"), Some(Some(duration_nanos(i)))),
        KindConfig::Pool { .. } => (Some("inline"), Some(None)),
        _ => (None, None),
    }
}

/// The span the achieved rate is over: --duration (or the stages' total)
/// for a run that reached its deadline; else from the start of the
/// schedule until the last run started plus one slot (at the rate then),
/// or until the dispatch stopped if that is later (a run stalled before a
/// signal is over the time it actually ran).
fn rate_span(tally: &Tally, ran: &Ran, rate: f64) -> u64 {
    let rate = match (&ran.ramp, tally.last_start) {
        (Some(r), Some(last)) => r.rate_at_nanos(last.saturating_sub(tally.t0)),
        _ => rate,
    };
    match ran.duration {
        Some(d) if ran.stop == Stop::Done => duration_nanos(d),
        _ => schedule_span(tally.t0, tally.last_start, rate).max(ran.end.saturating_sub(tally.t0)),
    }
}

/// Where the runs' output went: `stdout` and `stdout_file`.
fn stdout_of(args: &ExecArgs) -> (&'static str, Option<String>) {
    match (&args.stdout, args.discard_stdout) {
        (Some(p), _) => ("file", Some(p.display().to_string())),
        (None, true) => ("discard", None),
        _ if args.status_from_stdout => ("status", None),
        _ if args.json => ("stderr", None),
        (None, false) => ("inherit", None),
    }
}

pub(super) fn report(args: &ExecArgs, tally: &Tally, ran: Ran) -> ExecReport {
    let kind = ran.config.kind().limiter_kind();
    let (filling, fill_interval_ns) = filling(&ran.config);
    let rate_span_ns = rate_span(tally, &ran, args.spec().rate().get());
    let target_rate = match &ran.ramp {
        Some(r) => r.target_rate(rate_span_ns),
        None => args.spec().rate().get(),
    };
    let (stdout, stdout_file) = stdout_of(args);
    let succeeded = tally.exit_codes.get(&0).copied().unwrap_or(0);
    ExecReport {
        schema: crate::report::SCHEMA,
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        spec: args.spec().to_string(),
        limiter: kind.name(),
        fields: LimiterFields::of(&ran.config),
        wait_policy: (kind == LimiterKind::Pacer).then(|| wait_policy_name(&ran.config)),
        filling,
        fill_interval_ns,
        target_rate,
        staged: Staged::of(ran.ramp.as_ref(), ran.driven),
        effective_rate: ran.effective.json(),
        effective_note: ran.effective.note(args.spec().rate().get()),
        concurrency: args.concurrency,
        mode: run::mode_name(ran.duration),
        duration_ns: ran.duration.map(duration_nanos),
        count: ran.count,
        stdout,
        stdout_file,
        runs: ran.launched,
        runs_due: ran.runs_due(rate_span_ns),
        runs_found_slots_busy: ran.ramp.as_ref().map(|_| ran.busy),
        succeeded,
        failed: ran
            .launched
            .saturating_sub(succeeded)
            .saturating_sub(tally.interrupted),
        exit_codes: tally.exit_codes.clone(),
        signals: tally.signals.clone(),
        stdout_statuses: args.status_from_stdout.then(|| tally.statuses.clone()),
        spawn_failed: tally.spawn_failed,
        spawn_error: tally.spawn_error.clone(),
        interrupted_runs: tally.interrupted,
        terminated: tally.terminated,
        killed: tally.killed,
        grace_ns: duration_nanos(ran.grace),
        rate_span_ns,
        achieved_rate: per_second(ran.launched, rate_span_ns),
        due_not_started: ran.lag.due_not_started,
        behind_ns: ran.lag.behind_ns,
        below_target: Some(below_target(ran.launched, rate_span_ns, target_rate)),
        wall_ns: tally
            .last_end
            .max(tally.last_start)
            .unwrap_or(tally.t0)
            .saturating_sub(tally.t0),
        wait_ns: tally.wait.summary(),
        service_ns: tally.service.summary(),
        response_ns: tally.response.summary(),
        histograms: Histograms::of(tally),
        verdict: Verdict::default(),
        redis: None,
        refused: ran.config.kind().max_wait().map(|_| ran.refused),
        interrupted: ran.signal.is_some(),
        signal: ran.signal.map(|s| signal_name(s).unwrap_or("SIGINT")),
        signal_stopped_starts: ran.stop == Stop::Interrupted,
        fail_fast: args.fail_fast,
        stopped_by_fail_fast: ran.stop == Stop::FailFast,
        max_behind_ns: ran.max_behind.map(duration_nanos),
        stopped_by_max_behind: ran.stop == Stop::MaxBehind,
        first_failure: tally.first_failure.clone(),
        buckets: tally.plot.clone(),
    }
}

/// `--fail-if`'s figures: the time statistics the report prints (a
/// percentile it does not print from the histogram), the achieved rate and
/// the failed runs.
impl Figures for ExecReport {
    fn time(&self, figure: TimeFigure, stat: Stat) -> Option<f64> {
        let h = &self.histograms;
        let recorder = match figure {
            TimeFigure::Wait => &h.wait,
            TimeFigure::Service => &h.service,
            TimeFigure::Response => &h.response,
        };
        Some(recorded(recorder, stat))
    }

    fn rate(&self) -> f64 {
        self.achieved_rate
    }

    /// Failed runs, of the finished ones: those that ran to their end,
    /// succeeded or failed (not those interrupted at a stop).
    fn failures(&self) -> Option<Failures> {
        Some(Failures {
            failed: self.failed,
            finished: self.succeeded + self.failed,
        })
    }
}
