//! `exec`'s text report and its plot.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::summary::ExecReport;
use crate::error::shell_words;
use crate::plot::{self, Buckets, Panel, Plot, PlotPath, Series, Unit, WaitStat};
use crate::report::{
    fmt_count, fmt_duration, fmt_effective, fmt_nanos, fmt_number, fmt_rate, fmt_unit_rate,
    resolution_note, wrote,
};

/// The most characters of a plot's title (its width, in the title's font).
const TITLE_CHARS: usize = 95;

/// `--plot FILE`: where to write the plot and in which format, with the
/// file's name as given, to say where it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotArg {
    /// The name as given.
    pub shown: PathBuf,
    pub to: PlotPath,
}

/// `--plot`'s value parser: [`plot::parse_plot_path`], keeping the name.
///
/// # Errors
///
/// The parser's message.
pub(super) fn parse_plot_arg(s: &str) -> Result<PlotArg, String> {
    Ok(PlotArg {
        shown: PathBuf::from(s),
        to: plot::parse_plot_path(s)?,
    })
}

/// Writes the `--plot` of `report` to `to`, and says so on standard error.
///
/// # Errors
///
/// A drawing error or the I/O error writing the file.
pub fn write_plot(to: &PlotArg, report: &ExecReport) -> anyhow::Result<()> {
    let Some((response, service)) = &report.buckets else {
        return Ok(());
    };
    plot::write(&to.to, &exec_plot(report, response, service))?;
    wrote(&to.shown);
    Ok(())
}

/// Writes `--hdr-out`: the runs' wait, service and response histograms as
/// one interval of HdrHistogram's log, from `started` for the time until
/// the last run ended; and says so on standard error.
///
/// # Errors
///
/// The I/O error creating or writing the file.
pub(super) fn write_hdr_log(
    path: &Path,
    report: &ExecReport,
    started: SystemTime,
) -> anyhow::Result<()> {
    let h = &report.histograms;
    let tagged = [
        ("wait", h.wait.histogram()),
        ("service", h.service.histogram()),
        ("response", h.response.histogram()),
    ];
    let elapsed = Duration::from_nanos(report.wall_ns);
    crate::hdr_log::write(path, started, elapsed, &tagged)?;
    wrote(path);
    Ok(())
}

/// The plot of a run: the runs started per bucket against the target, and
/// the `response` and `service` times of the runs started in each bucket.
fn exec_plot(report: &ExecReport, response: &Buckets, service: &Buckets) -> Plot {
    let span = report.rate_span_ns;
    let end_secs = span as f64 / 1e9;
    let series = |name: &str, color, width, points| Series {
        name: name.to_owned(),
        color,
        dashed: false,
        width,
        points,
    };
    Plot {
        title: plot_title(report),
        end_secs,
        rate: Panel {
            title: format!(
                "runs started per {} bucket, as a rate (target dashed)",
                fmt_duration(response.width())
            ),
            quantity: "rate".to_owned(),
            unit: Unit::Rate,
            series: vec![
                series(
                    "started",
                    plot::PALETTE[0],
                    2,
                    plot::rate_points(response, span),
                ),
                target_series(report, end_secs),
            ],
        },
        wait: Panel {
            title: "response (end - scheduled) and service (end - start) times of the runs \
                    started in each bucket"
                .to_owned(),
            quantity: "time".to_owned(),
            unit: Unit::Nanos,
            series: vec![
                series(
                    "longest response",
                    plot::PALETTE[3],
                    3,
                    plot::wait_points(response, WaitStat::Max),
                ),
                series(
                    "mean response",
                    plot::PALETTE[0],
                    2,
                    plot::wait_points(response, WaitStat::Mean),
                ),
                series(
                    "mean service",
                    plot::PALETTE[2],
                    1,
                    plot::wait_points(service, WaitStat::Mean),
                ),
            ],
        },
    }
}

/// The target line: --rate's, or with --stages the staircase of rates the
/// drive thread set.
fn target_series(report: &ExecReport, end_secs: f64) -> Series {
    match &report.staged.ramp {
        Some(ramp) => Series {
            name: format!("target: --stages {}", ramp.arg.text),
            color: plot::TARGET,
            dashed: true,
            width: 1,
            points: ramp.points(report.rate_span_ns),
        },
        None => plot::target_series(
            format!("target {}", fmt_rate(report.target_rate)),
            plot::TARGET,
            report.target_rate,
            end_secs,
        ),
    }
}

/// The plot's title: the command line, cut short to fit the plot's width.
fn plot_title(report: &ExecReport) -> String {
    let run = match (&report.staged.stages, report.duration_ns, report.count) {
        (Some(stages), ..) => format!("--stages {stages}"),
        (None, Some(d), _) => format!("--duration {}", fmt_duration(d)),
        (None, None, Some(n)) => format!("-n {n}"),
        (None, None, None) => String::new(),
    };
    let head = format!(
        "ratekeeper exec --limiter {} --rate {} --concurrency {} {run} -- ",
        report.limiter, report.spec, report.concurrency
    );
    // The title fits the plot's width: a long command is cut short.
    let command = shell_words(&report.command);
    let room = TITLE_CHARS.saturating_sub(head.chars().count()).max(12);
    let command = if command.chars().count() > room {
        let cut: String = command.chars().take(room - 1).collect();
        format!("{cut}…")
    } else {
        command
    };
    format!("{head}{command}")
}

/// A conventional name for signal `sig` (Unix numbering shared by Linux, the
/// BSDs and macOS for these), or `None`.
pub(super) fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// `9 (SIGKILL)`, or just the number.
pub(super) fn signal_label(sig: i32) -> String {
    match signal_name(sig) {
        Some(name) => format!("{sig} ({name})"),
        None => sig.to_string(),
    }
}

impl fmt::Display for ExecReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "command         {}", shell_words(&self.command))?;
        writeln!(f, "spec            {}", self.spec)?;
        writeln!(f, "limiter         {}", self.limiter_description())?;
        writeln!(f, "concurrency     {}", self.concurrency)?;
        self.fmt_runs(f)?;
        self.fmt_rates(f)?;
        self.fmt_statuses(f)?;
        self.fmt_times(f)?;
        if let Some(redis) = &self.redis {
            redis.fmt_lines(f)?;
        }
        self.fmt_verdict(f)
    }
}

impl ExecReport {
    /// The limiter and its parameters, on one line.
    fn limiter_description(&self) -> String {
        let fields = &self.fields;
        let d = |nanos: Option<u64>| fmt_duration(nanos.unwrap_or_default());
        match self.limiter {
            "pool" => {
                let filling = match self.fill_interval_ns {
                    Some(Some(i)) => format!(", filled by a thread every {}", fmt_duration(i)),
                    _ => String::new(),
                };
                format!(
                    "token pool (burst ratio {}{filling})",
                    fields.burst_ratio.unwrap_or_default()
                )
            }
            "bursty" => format!(
                "Guava SmoothBursty (max burst {}s{})",
                fields.max_burst_seconds.unwrap_or_default(),
                resolution_note(fields.resolution)
            ),
            "warmup" => format!(
                "Guava SmoothWarmingUp (warm-up {}, cold factor {}{})",
                d(fields.warmup_ns),
                fields.cold_factor.unwrap_or_default(),
                resolution_note(fields.resolution)
            ),
            "refill" => format!(
                "Resilience4j RefillLimiter ({} permits per {}, refilled one by one; capacity \
                 {}, {} initial permits; timeout {})",
                fmt_number(fields.limit_for_period.unwrap_or_default()),
                d(fields.refresh_period_ns),
                fmt_number(fields.capacity.unwrap_or_default()),
                fmt_number(fields.initial_permits.unwrap_or_default()),
                d(fields.timeout_ns)
            ),
            "cycle" => format!(
                "Resilience4j CycleLimiter ({} permits at the start of each {} cycle; timeout \
                 {})",
                fmt_number(fields.limit_for_period.unwrap_or_default()),
                d(fields.refresh_period_ns),
                d(fields.timeout_ns)
            ),
            _ => format!(
                "pacer (strictness {}, {}{})",
                fields.strictness.unwrap_or_default(),
                fields.strictness_mode.unwrap_or_default().replace('_', " "),
                if self.wait_policy == Some("precise") {
                    "; precise: sleep, then spin 150µs"
                } else {
                    ""
                }
            ),
        }
    }

    /// How many runs, of what, and whether a signal, --max-behind or
    /// --fail-fast stopped them.
    fn fmt_runs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let length = match (&self.staged.stages, self.duration_ns, self.count) {
            (Some(_), Some(d), _) => format!("{} (the stages' total)", fmt_duration(d)),
            (None, Some(d), _) => format!("{} (--duration)", fmt_duration(d)),
            (_, None, Some(n)) => format!("{} runs (--count)", fmt_count(n)),
            _ => String::new(),
        };
        let output = match (self.stdout, &self.stdout_file) {
            (_, Some(file)) => format!("appended to {file}"),
            ("discard", _) => "discarded".to_owned(),
            ("stderr", _) => "ratekeeper's standard error (--json)".to_owned(),
            ("status", _) => "read for the status (--status-from-stdout)".to_owned(),
            _ => "ratekeeper's".to_owned(),
        };
        writeln!(f, "runs            {}", self.runs_text())?;
        writeln!(f, "run length      {length}")?;
        writeln!(f, "stdout          {output}")?;
        if let Some(max) = self.max_behind_ns.filter(|_| self.stopped_by_max_behind) {
            writeln!(
                f,
                "stopped         by --max-behind {}: {} behind the schedule{}",
                fmt_duration(max),
                fmt_nanos(self.behind_ns),
                self.fmt_sent()
            )?;
        }
        if let Some(signal) = self.signal {
            let when = if self.signal_stopped_starts {
                ": no run was started after it"
            } else {
                " while the last runs were running"
            };
            // What the runs were sent is told once, with the first stop.
            let sent = if self.stopped_by_max_behind {
                String::new()
            } else {
                self.fmt_sent()
            };
            writeln!(f, "stopped         by {signal}{when}{sent}")?;
        }
        if self.stopped_by_fail_fast {
            writeln!(
                f,
                "stopped         by --fail-fast: {}",
                self.first_failure.as_deref().unwrap_or("a run failed")
            )?;
        }
        Ok(())
    }

    /// What the runs still running at the stop were sent.
    fn fmt_sent(&self) -> String {
        let runs = |n: u64| match n {
            1 => "1 running run was".to_owned(),
            n => format!("{n} running runs were"),
        };
        match (self.terminated, self.killed) {
            (0, _) => String::new(),
            (t, 0) => format!("; {} sent SIGTERM", runs(t)),
            (t, k) => format!(
                "; {} sent SIGTERM, {k} of them SIGKILL (after the {} grace or at a further \
                 signal)",
                runs(t),
                fmt_duration(self.grace_ns)
            ),
        }
    }

    /// The target, effective and achieved rates, the runs due but not
    /// started and how far behind the schedule was, the time until the
    /// last run ended, and the permits refused by the timeout.
    fn fmt_rates(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_target(f)?;
        writeln!(
            f,
            "effective rate  {}{}",
            fmt_effective(self.effective_rate, self.effective_note.as_deref(), "runs"),
            if self.staged.stages.is_some() {
                " (at --rate, where the stages start)"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "achieved rate   {} (runs started over the rate span)",
            fmt_unit_rate(self.achieved_rate, "runs")
        )?;
        writeln!(
            f,
            "rate span       {} (--duration reached, else until the last start plus one slot \
             or the stop)",
            fmt_nanos(self.rate_span_ns)
        )?;
        writeln!(
            f,
            "not started     {} (runs due before the end that never started)",
            fmt_count(self.due_not_started)
        )?;
        writeln!(
            f,
            "behind          {} (at the end, how late the next run due was{})",
            fmt_nanos(self.behind_ns),
            if self.count.is_some() {
                "; once every run started, the last one"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "wall clock      {} (until the last run ended)",
            fmt_nanos(self.wall_ns)
        )?;
        if let Some(refused) = self.refused {
            writeln!(
                f,
                "refused         {} (permits whose wait would exceed the {} timeout; the \
                 run waited and asked again)",
                fmt_count(refused),
                fmt_duration(self.fields.timeout_ns.unwrap_or_default())
            )?;
        }
        Ok(())
    }

    /// The target rate, and with --stages the stages and the rate changes.
    fn fmt_target(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.staged;
        let (Some(stages), Some(start)) = (&s.stages, s.start_rate) else {
            return writeln!(
                f,
                "target rate     {}",
                fmt_unit_rate(self.target_rate, "runs")
            );
        };
        writeln!(
            f,
            "stages          {stages} (from {}; {} rate changes{})",
            fmt_unit_rate(start, "runs"),
            fmt_count(s.rate_changes.unwrap_or_default()),
            match s.rate_changes_refused {
                Some(n @ 1..) => format!(", {n} refused by the limiter"),
                _ => String::new(),
            }
        )?;
        writeln!(
            f,
            "target rate     {} (the stages' mean over the rate span)",
            fmt_unit_rate(self.target_rate, "runs")
        )
    }

    /// The runs by how they ended.
    fn fmt_statuses(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "succeeded       {} (exit status 0)",
            fmt_count(self.succeeded)
        )?;
        writeln!(f, "failed          {}", fmt_count(self.failed))?;
        if self.interrupted || self.interrupted_runs > 0 {
            writeln!(
                f,
                "interrupted     {} (running at the stop and ended by ratekeeper's SIGTERM or \
                 SIGKILL; not failed)",
                fmt_count(self.interrupted_runs)
            )?;
        }
        for (code, n) in &self.exit_codes {
            writeln!(f, "{:<16}{}", format!("exit {code}"), fmt_count(*n))?;
        }
        for (status, n) in self.stdout_statuses.iter().flatten() {
            let status = if status.is_empty() { "(none)" } else { status };
            writeln!(f, "{:<15} {}", format!("status {status}"), fmt_count(*n))?;
        }
        for (sig, n) in &self.signals {
            let name = signal_name(*sig)
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            writeln!(f, "{:<16}{}{name}", format!("signal {sig}"), fmt_count(*n))?;
        }
        if self.spawn_failed > 0 {
            writeln!(
                f,
                "spawn failed    {} ({})",
                fmt_count(self.spawn_failed),
                self.spawn_error.as_deref().unwrap_or("")
            )?;
        }
        Ok(())
    }

    /// With --fail-if: how many conditions held (each is told on standard
    /// error after the report, with the value measured).
    fn fmt_verdict(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.verdict.report_line() {
            Some(line) => writeln!(f, "fail-if         {line}"),
            None => Ok(()),
        }
    }

    /// The wait, service and response times' table.
    fn fmt_times(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
            "", "p50", "p90", "p95", "p99", "p99.9", "max", "mean"
        )?;
        for (name, s) in [
            ("wait", &self.wait_ns),
            ("service", &self.service_ns),
            ("response", &self.response_ns),
        ] {
            writeln!(
                f,
                "{name:<10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
                fmt_nanos(s.p50),
                fmt_nanos(s.p90),
                fmt_nanos(s.p95),
                fmt_nanos(s.p99),
                fmt_nanos(s.p999),
                fmt_nanos(s.max),
                fmt_nanos(s.mean)
            )?;
        }
        Ok(())
    }
}
