//! `pace`'s text report and its plot.

use std::fmt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::drive::BACKLOG_SAMPLE_INTERVAL;
use super::summary::{PaceReport, WorkReport};
use super::worker::WorkerResult;
use crate::plot::{self, Buckets, Panel, Plot, PlotPath, Series, Unit, WaitStat};
use crate::report::{
    fmt_count, fmt_duration, fmt_effective, fmt_nanos, fmt_number, fmt_rate, resolution_note,
    wrote, WaitSummary,
};

impl fmt::Display for PaceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let length = match (&self.staged.stages, self.duration_ns, self.count) {
            (Some(_), Some(d), _) => format!("{} (the stages' total)", fmt_duration(d)),
            (None, Some(d), _) => format!("{} (--duration)", fmt_duration(d)),
            (_, None, Some(n)) => format!("{} ops (--count)", fmt_count(n)),
            _ => String::new(),
        };
        writeln!(f, "spec            {}", self.spec)?;
        let limiters = match self.limiter {
            "pool" => self.fmt_pool(f)?,
            "bursty" | "warmup" => self.fmt_guava(f)?,
            "refill" | "cycle" => self.fmt_resilience4j(f)?,
            _ => self.fmt_pacer(f)?,
        };
        self.fmt_access(f)?;
        writeln!(f, "threads         {} ({limiters})", self.threads)?;
        writeln!(f, "run length      {length}")?;
        self.fmt_rates(f)?;
        self.fmt_waits(f)?;
        self.fmt_backlog(f)?;
        self.fmt_costs(f)?;
        if let Some(redis) = &self.redis {
            redis.fmt_lines(f)?;
        }
        // With --fail-if: how many conditions held (each is told on
        // standard error after the report, with the value measured).
        match self.verdict.report_line() {
            Some(line) => writeln!(f, "fail-if         {line}"),
            None => Ok(()),
        }
    }
}

impl PaceReport {
    /// The token pool's lines; returns how many pools the threads share.
    fn fmt_pool(&self, f: &mut fmt::Formatter<'_>) -> Result<String, fmt::Error> {
        let burst = self.fields.burst_ratio.unwrap_or_default();
        writeln!(f, "limiter         token pool (burst ratio {burst})")?;
        let filling = match self.fill_interval_ns {
            Some(Some(i)) => format!(
                "thread (a filler thread refills every {})",
                humantime::format_duration(Duration::from_nanos(i))
            ),
            _ => "inline (callers refill the pool when it runs short)".to_owned(),
        };
        writeln!(f, "filling         {filling}")?;
        Ok(match self.pools {
            Some(1) | None => "1 shared pool".to_owned(),
            Some(n) => format!("{n} pools, one per thread"),
        })
    }

    /// Guava's limiters' line; returns how many limiters the threads share.
    fn fmt_guava(&self, f: &mut fmt::Formatter<'_>) -> Result<String, fmt::Error> {
        // --rate's rate (with --stages, where they start).
        let per_limiter = self
            .staged
            .start_rate
            .unwrap_or(self.target_rate / f64::from(self.limiters.unwrap_or(1)));
        if self.limiter == "bursty" {
            let burst = self.fields.max_burst_seconds.unwrap_or_default();
            writeln!(
                f,
                "limiter         Guava SmoothBursty (max burst {burst}s: up to {} \
                 permits stored while idle{})",
                fmt_number(burst * per_limiter),
                resolution_note(self.fields.resolution)
            )?;
        } else if self.fields.warmup_ns == Some(0) {
            writeln!(
                f,
                "limiter         Guava SmoothWarmingUp (warm-up 0s: no warm-up, \
                 permits at the rate{})",
                resolution_note(self.fields.resolution)
            )?;
        } else {
            let warmup = Duration::from_nanos(self.fields.warmup_ns.unwrap_or_default());
            writeln!(
                f,
                "limiter         Guava SmoothWarmingUp (warm-up {}, cold factor {}: a \
                 cold limiter runs at {}{})",
                humantime::format_duration(warmup),
                self.fields.cold_factor.unwrap_or_default(),
                fmt_rate(per_limiter / self.fields.cold_factor.unwrap_or(1.0)),
                resolution_note(self.fields.resolution)
            )?;
        }
        Ok(match self.limiters {
            Some(1) | None => "1 shared limiter".to_owned(),
            Some(n) => format!("{n} limiters, one per thread"),
        })
    }

    /// Resilience4j's limiters' line; returns how many limiters the threads
    /// share.
    fn fmt_resilience4j(&self, f: &mut fmt::Formatter<'_>) -> Result<String, fmt::Error> {
        let limit = fmt_number(self.fields.limit_for_period.unwrap_or_default());
        let period = humantime::format_duration(Duration::from_nanos(
            self.fields.refresh_period_ns.unwrap_or_default(),
        ));
        let timeout = humantime::format_duration(Duration::from_nanos(
            self.fields.timeout_ns.unwrap_or_default(),
        ));
        if self.limiter == "refill" {
            writeln!(
                f,
                "limiter         Resilience4j RefillLimiter ({limit} permits per {period}, \
                 refilled one by one; capacity {}, {} initial permits; timeout {timeout})",
                fmt_number(self.fields.capacity.unwrap_or_default()),
                fmt_number(self.fields.initial_permits.unwrap_or_default()),
            )?;
        } else {
            writeln!(
                f,
                "limiter         Resilience4j CycleLimiter ({limit} permits at the start \
                 of each {period} cycle; timeout {timeout})"
            )?;
        }
        Ok(match self.limiters {
            Some(1) | None => "1 shared limiter".to_owned(),
            Some(n) => format!("{n} limiters, one per thread"),
        })
    }

    /// The pacer's lines; returns how many pacers the threads share.
    fn fmt_pacer(&self, f: &mut fmt::Formatter<'_>) -> Result<String, fmt::Error> {
        let strictness = self.fields.strictness.unwrap_or_default();
        let mode = self.fields.strictness_mode.unwrap_or_default();
        writeln!(
            f,
            "strictness      {strictness} ({})",
            mode.replace('_', " ")
        )?;
        let policy = match self.wait_policy {
            Some("precise") => "precise (sleep, then spin 150µs)",
            _ => "default (early only when a sleep cannot reach the op; grouped at high rates)",
        };
        writeln!(f, "wait policy     {policy}")?;
        Ok(match self.pacers {
            Some(1) | None => "1 shared pacer".to_owned(),
            Some(n) => format!("{n} pacers, one per thread"),
        })
    }

    /// How the workers reach the limiter, unless each acquire goes to it.
    fn fmt_access(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.access, self.shards) {
            ("batched", _) => {
                // The Pacer's handle leases slots of its schedule.
                let what = if self.limiter == "pacer" {
                    "slots"
                } else {
                    "permits"
                };
                writeln!(
                    f,
                    "access          batched: a handle per thread leases {what}"
                )?;
            }
            ("sharded", Some(n)) => writeln!(
                f,
                "access          sharded: {n} shards of rate/{n}, work stealing"
            )?,
            _ => {}
        }
        Ok(())
    }

    /// The target rate, and with --stages the stages and the rate changes.
    fn fmt_target(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.staged;
        let (Some(stages), Some(start)) = (&s.stages, s.start_rate) else {
            return writeln!(f, "target rate     {}", fmt_rate(self.target_rate));
        };
        let each = match self.limiter_count() {
            1 => String::new(),
            n => format!(" on each of the {n} limiters"),
        };
        writeln!(
            f,
            "stages          {stages} (from {}{each}; {} rate changes{})",
            fmt_rate(start),
            fmt_count(s.rate_changes.unwrap_or_default()),
            match s.rate_changes_refused {
                Some(n @ 1..) => format!(", {n} refused by the limiter"),
                _ => String::new(),
            }
        )?;
        writeln!(
            f,
            "target rate     {} (the stages' mean over the run)",
            fmt_rate(self.target_rate)
        )
    }

    /// The target, effective and achieved rates, the ops and the time.
    fn fmt_rates(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_target(f)?;
        writeln!(
            f,
            "effective rate  {}{}",
            fmt_effective(self.effective_rate, self.effective_note.as_deref(), "ops"),
            if self.staged.stages.is_some() {
                " (at --rate, where the stages start)"
            } else {
                ""
            }
        )?;
        writeln!(f, "achieved rate   {}", fmt_rate(self.achieved_rate))?;
        writeln!(f, "ops             {}", self.ops_text())?;
        if self.interrupted {
            writeln!(
                f,
                "interrupted     by Ctrl-C: the report covers the ops granted before it"
            )?;
        }
        if let (true, Some(limit)) = (self.stopped_by_max_behind, self.max_behind_ns) {
            writeln!(
                f,
                "stopped         --max-behind {}: the run fell that far behind its schedule \
                 (exit status 3)",
                fmt_duration(limit)
            )?;
        }
        // Two measures, each on its own line: the span the achieved rate is
        // over, and the time on the wall clock.
        writeln!(
            f,
            "rate span       {} (the span the achieved rate is over: the run's duration, or \
             with --count the ops' slots)",
            fmt_nanos(self.rate_span_ns)
        )?;
        writeln!(f, "wall clock      {}", fmt_nanos(self.wall_ns))?;
        writeln!(
            f,
            "behind          {} (rate span - ops / target rate: how far behind its schedule \
             the run ended)",
            fmt_nanos(self.behind_ns)
        )?;
        Ok(())
    }

    /// The ops' wait percentiles; with --work, the work and a table of the
    /// wait, service and response times instead.
    fn fmt_waits(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(work) = &self.work {
            return fmt_work(f, work, &self.wait_ns, self.ops);
        }
        let w = &self.wait_ns;
        writeln!(f, "wait p50        {}", fmt_nanos(w.p50))?;
        writeln!(f, "wait p90        {}", fmt_nanos(w.p90))?;
        writeln!(f, "wait p95        {}", fmt_nanos(w.p95))?;
        writeln!(f, "wait p99        {}", fmt_nanos(w.p99))?;
        writeln!(f, "wait p99.9      {}", fmt_nanos(w.p999))?;
        writeln!(f, "wait max        {}", fmt_nanos(w.max))?;
        writeln!(f, "wait mean       {}", fmt_nanos(w.mean))?;
        Ok(())
    }

    /// The limiter's backlog at the end (and the largest sampled), and its
    /// total wait.
    fn fmt_backlog(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(max) = self.max_backlog_ns {
            writeln!(
                f,
                "backlog         {} (waiting pool at the end)",
                fmt_nanos(self.backlog_ns)
            )?;
            writeln!(
                f,
                "max backlog     {} (sampled every {})",
                fmt_nanos(max),
                humantime::format_duration(BACKLOG_SAMPLE_INTERVAL)
            )?;
        } else if self.refused.is_some() {
            writeln!(
                f,
                "backlog         {} (time reserved ahead of the clock at the end)",
                fmt_nanos(self.backlog_ns)
            )?;
        } else if self.limiters.is_some() {
            writeln!(
                f,
                "backlog         {} (next free time ahead of the clock at the end)",
                fmt_nanos(self.backlog_ns)
            )?;
        } else {
            writeln!(f, "backlog         {}", fmt_nanos(self.backlog_ns))?;
        }
        // Guava's and Resilience4j's limiters keep no wait total (theirs
        // equals the backlog).
        if self.limiters.is_none() {
            writeln!(
                f,
                "limiter wait    {} (the limiter's own total: backlog and its checkpoints, not \
                 the ops' waits)",
                fmt_nanos(self.total_wait_ns)
            )?;
        }
        Ok(())
    }

    /// Refused acquires, a pool's fills and the CPU time per op.
    fn fmt_costs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(refused) = self.refused {
            let timeout = humantime::format_duration(Duration::from_nanos(
                self.fields.timeout_ns.unwrap_or_default(),
            ));
            writeln!(
                f,
                "refused         {} (acquires whose wait would exceed the {timeout} \
                 timeout; not counted in ops)",
                fmt_count(refused)
            )?;
        }
        if let Some(fills) = self.fills {
            writeln!(f, "fills           {}", fmt_count(fills))?;
        }
        match (self.cpu_ns_per_op, self.cpu_ns) {
            (Some(per_op), Some(total)) => writeln!(
                f,
                "cpu per op      {} ({} in all)",
                fmt_nanos(per_op),
                fmt_nanos(total)
            ),
            (None, Some(total)) => writeln!(f, "cpu per op      - ({} in all)", fmt_nanos(total)),
            _ => writeln!(f, "cpu per op      unavailable on this platform"),
        }
    }
}

/// The plot's target line: the target rate, or with --stages the staircase
/// of rates the drive thread set (on each limiter: summed).
fn target_series(report: &PaceReport, end_secs: f64) -> Series {
    let Some(ramp) = &report.staged.ramp else {
        return plot::target_series(
            format!("target {}", fmt_rate(report.target_rate)),
            plot::TARGET,
            report.target_rate,
            end_secs,
        );
    };
    let limiters = f64::from(report.limiter_count());
    Series {
        name: format!("target: --stages {}", ramp.arg.text),
        color: plot::TARGET,
        dashed: true,
        width: 1,
        points: ramp
            .points(report.rate_span_ns)
            .into_iter()
            .map(|(t, rate)| (t, rate * limiters))
            .collect(),
    }
}

/// With --work: what each op did, and its wait, service and response times
/// as a table; `ops` counted, for those whose work Ctrl-C cut short.
fn fmt_work(
    f: &mut fmt::Formatter<'_>,
    work: &WorkReport,
    wait: &WaitSummary,
    ops: u64,
) -> fmt::Result {
    let jitter = match work.work_jitter_ns {
        0 => String::new(),
        j => format!(" ± {}", fmt_nanos(j)),
    };
    let how = if work.work_cpu {
        "spinning on the clock (--work-cpu)"
    } else {
        "sleeping"
    };
    writeln!(
        f,
        "work            {}{jitter} per op, {how}",
        fmt_nanos(work.work_ns)
    )?;
    writeln!(
        f,
        "{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "", "p50", "p90", "p95", "p99", "p99.9", "max", "mean"
    )?;
    for (name, s) in [
        ("wait", wait),
        ("service", &work.service_ns),
        ("response", &work.response_ns),
    ] {
        writeln!(
            f,
            "{name:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
            fmt_nanos(s.p50),
            fmt_nanos(s.p90),
            fmt_nanos(s.p95),
            fmt_nanos(s.p99),
            fmt_nanos(s.p999),
            fmt_nanos(s.max),
            fmt_nanos(s.mean)
        )?;
    }
    if work.completed < ops {
        writeln!(
            f,
            "completed       {} (Ctrl-C cut the others' work short: they count in wait only)",
            fmt_count(work.completed)
        )?;
    }
    Ok(())
}

/// Writes the `--plot` of `report` to `to`: the workers' `results`' time
/// buckets, `width` ns wide, merged; and says so on standard error.
///
/// # Errors
///
/// A drawing error or the I/O error writing the file.
pub(super) fn write_plot(
    to: &PlotPath,
    report: &PaceReport,
    results: &[WorkerResult],
    width: u64,
) -> anyhow::Result<()> {
    let mut buckets = Buckets::new(width);
    for b in results.iter().filter_map(|r| r.buckets.as_ref()) {
        buckets.merge(b);
    }
    plot::write(to, &pace_plot(report, &buckets))?;
    wrote(to.path());
    Ok(())
}

/// Writes `--hdr-out`: the ops' wait histogram (with --work, and their
/// service and response histograms) as one interval of HdrHistogram's log,
/// from `started` for the run's wall time; and says so on standard error.
///
/// # Errors
///
/// The I/O error creating or writing the file.
pub(super) fn write_hdr_log(
    path: &Path,
    report: &PaceReport,
    started: SystemTime,
) -> anyhow::Result<()> {
    let mut tagged = vec![("wait", report.waits.histogram())];
    if let Some(w) = &report.work {
        tagged.push(("service", w.service.histogram()));
        tagged.push(("response", w.response.histogram()));
    }
    let elapsed = Duration::from_nanos(report.wall_ns);
    crate::hdr_log::write(path, started, elapsed, &tagged)?;
    wrote(path);
    Ok(())
}

/// The `--plot` of a run: the achieved rate per bucket against the target,
/// and the longest and mean wait per bucket.
fn pace_plot(report: &PaceReport, buckets: &Buckets) -> Plot {
    let span = report.rate_span_ns;
    let end_secs = span as f64 / 1e9;
    let run = match (&report.staged.stages, report.duration_ns, report.count) {
        (Some(stages), ..) => format!("--stages {stages}"),
        (None, Some(d), _) => format!("--duration {}", fmt_duration(d)),
        (None, None, Some(n)) => format!("--count {n}"),
        (None, None, None) => String::new(),
    };
    let series = |name: &str, color, points| Series {
        name: name.to_owned(),
        color,
        dashed: false,
        width: 2,
        points,
    };
    Plot {
        title: format!(
            "ratekeeper pace --limiter {} --rate {} --threads {} {run}",
            report.limiter, report.spec, report.threads
        ),
        end_secs,
        rate: Panel {
            title: format!(
                "ops per {} bucket, as a rate (target dashed)",
                fmt_duration(buckets.width())
            ),
            quantity: "rate".to_owned(),
            unit: Unit::Rate,
            series: vec![
                series(
                    "achieved",
                    plot::PALETTE[0],
                    plot::rate_points(buckets, span),
                ),
                target_series(report, end_secs),
            ],
        },
        wait: Panel {
            title: "wait (start - scheduled) of the ops in each bucket".to_owned(),
            quantity: "wait".to_owned(),
            unit: Unit::Nanos,
            series: vec![
                series(
                    "longest wait",
                    plot::PALETTE[3],
                    plot::wait_points(buckets, WaitStat::Max),
                ),
                series(
                    "mean wait",
                    plot::PALETTE[0],
                    plot::wait_points(buckets, WaitStat::Mean),
                ),
            ],
        },
    }
}
