//! `simulate`'s text report (the timelines and the summary table) and its
//! plot.

use std::fmt;

use super::model::Op;
use super::summary::{LimiterReport, SimulateReport};
use super::SimulateArgs;
use crate::error::UsageError;
use crate::plot::{self, Buckets, Panel, Plot, Series, Unit, WaitStat};
use crate::report::{duration_nanos, fmt_count, fmt_duration, fmt_nanos, fmt_rate};

/// The plot: granted rate per bucket (with arrivals and targets) and the
/// longest wait per bucket, one series per limiter.
///
/// # Errors
///
/// A [`UsageError`] for a `--bucket` that cuts the timeline into too many
/// buckets.
pub(super) fn make_plot(args: &SimulateArgs, results: &[Vec<Op>]) -> Result<Plot, UsageError> {
    let (width, end) = time_axis(args, results)?;
    let end_secs = end as f64 / 1e9;
    let mut arrivals = Buckets::new(width);
    for &t in args.arrivals.times() {
        arrivals.record(t, 0);
    }
    let mut rate_series = vec![Series {
        name: "arrivals".to_owned(),
        color: plot::ARRIVALS,
        dashed: false,
        width: 2,
        points: plot::rate_points(&arrivals, end),
    }];
    let (granted, wait_series) = limiter_series(args, results, width, end);
    rate_series.extend(granted);
    rate_series.extend(target_lines(args, end_secs));
    Ok(Plot {
        title: format!("ratekeeper simulate: {}", args.arrivals),
        end_secs,
        rate: Panel {
            title: format!(
                "ops granted per {} bucket, as a rate (arrivals in grey, target dashed)",
                fmt_duration(width)
            ),
            quantity: "rate".to_owned(),
            unit: Unit::Rate,
            series: rate_series,
        },
        wait: Panel {
            title: "longest wait (granted - arrival) of the ops granted in each bucket".to_owned(),
            quantity: "wait".to_owned(),
            unit: Unit::Nanos,
            series: wait_series,
        },
    })
}

/// The plot's bucket width and the end of its time axis, in nanoseconds:
/// whole buckets, and at least one past the last arrival or grant.
fn time_axis(args: &SimulateArgs, results: &[Vec<Op>]) -> Result<(u64, u64), UsageError> {
    let last_grant = results
        .iter()
        .flatten()
        .filter_map(|o| o.grant.map(|g| g.1))
        .max()
        .unwrap_or(0);
    let span = last_grant.max(args.arrivals.end_ns()).max(1);
    let slowest = args
        .limiters
        .iter()
        .map(|l| l.config.kind().rate())
        .fold(f64::INFINITY, f64::min);
    let width = args
        .bucket
        .map(duration_nanos)
        .unwrap_or_else(|| plot::auto_bucket(span, slowest));
    plot::check_bucket(span, width).map_err(UsageError)?;
    Ok((width, (span / width + 1) * width))
}

/// Each limiter's granted rate and longest wait per bucket, in its colour.
fn limiter_series(
    args: &SimulateArgs,
    results: &[Vec<Op>],
    width: u64,
    end: u64,
) -> (Vec<Series>, Vec<Series>) {
    let count = args.limiters.len() as u32;
    let mut rate_series = Vec::new();
    let mut wait_series = Vec::new();
    for (i, (spec, ops)) in args.limiters.iter().zip(results).enumerate() {
        let color = plot::PALETTE[i];
        // The first limiter's line widest: identical behaviours stay visible.
        let stroke = 2 + (count - 1 - i as u32).min(4);
        let mut b = Buckets::new(width);
        for o in ops {
            if let Some((_, g)) = o.grant {
                b.record(g, g - o.arrival);
            }
        }
        rate_series.push(Series {
            name: spec.label.clone(),
            color,
            dashed: false,
            width: stroke,
            points: plot::rate_points(&b, end),
        });
        wait_series.push(Series {
            name: spec.label.clone(),
            color,
            dashed: false,
            width: stroke,
            points: plot::wait_points(&b, WaitStat::Max),
        });
    }
    (rate_series, wait_series)
}

/// Target lines: one if the limiters share a rate, else one per limiter.
fn target_lines(args: &SimulateArgs, end_secs: f64) -> Vec<Series> {
    let rates: Vec<f64> = args
        .limiters
        .iter()
        .map(|l| l.config.kind().rate())
        .collect();
    if rates.iter().all(|r| *r == rates[0]) {
        return vec![plot::target_series(
            format!("target {}", fmt_rate(rates[0])),
            plot::TARGET,
            rates[0],
            end_secs,
        )];
    }
    args.limiters
        .iter()
        .zip(&rates)
        .enumerate()
        .map(|(i, (spec, rate))| {
            plot::target_series(
                format!("target of {} ({})", spec.label, fmt_rate(*rate)),
                plot::PALETTE[i],
                *rate,
                end_secs,
            )
        })
        .collect()
}

/// Formats nanoseconds as seconds with `decimals` decimals, exactly.
pub(super) fn fmt_secs(nanos: u64, decimals: usize) -> String {
    let whole = nanos / 1_000_000_000;
    let frac = nanos % 1_000_000_000;
    match decimals {
        6 => format!("{whole}.{:06}", frac / 1_000),
        _ => format!("{whole}.{frac:09}"),
    }
}

/// How the first column of a [`table`] is aligned (the others are aligned
/// right).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}

/// Lays out `rows` under `header`, columns two spaces apart, each line
/// indented by `indent`.
fn table(indent: &str, first: Align, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let parts: Vec<String> = cells
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| {
                if i == 0 && first == Align::Left {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(indent);
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

impl fmt::Display for SimulateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_head(f)?;
        for l in &self.limiters {
            if !l.timeline.is_empty() {
                fmt_timeline(f, l)?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "summary (wait = granted - arrival; behind = granted - scheduled)"
        )?;
        f.write_str(&summary_table(&self.limiters))
    }
}

impl SimulateReport {
    /// The pattern, its arrivals and one line per limiter.
    fn fmt_head(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "pattern   {}", self.pattern)?;
        writeln!(
            f,
            "arrivals  {}, until {} (open loop: each arrival asks for its permit at its own \
             time; a waiting op holds up nothing)",
            fmt_count(self.arrivals),
            fmt_duration(self.end_ns)
        )?;
        let label_width = self
            .limiters
            .iter()
            .map(|l| l.limiter.chars().count())
            .max()
            .unwrap_or(0);
        for (i, l) in self.limiters.iter().enumerate() {
            let head = if i == 0 { "limiters" } else { "" };
            writeln!(
                f,
                "{head:<10}{:<label_width$}  {}",
                l.limiter, l.description
            )?;
        }
        Ok(())
    }
}

/// One limiter's timeline: a row per op shown, in seconds.
fn fmt_timeline(f: &mut fmt::Formatter<'_>, l: &LimiterReport) -> fmt::Result {
    // Microseconds where every time is whole microseconds.
    let exact_us = l.timeline.iter().all(|r| {
        [Some(r.arrival_ns), r.scheduled_ns, r.granted_ns]
            .into_iter()
            .flatten()
            .all(|t| t % 1_000 == 0)
    });
    let decimals = if exact_us { 6 } else { 9 };
    let secs = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| fmt_secs(v, decimals));
    let rows: Vec<Vec<String>> = l
        .timeline
        .iter()
        .map(|r| {
            vec![
                r.op.to_string(),
                secs(Some(r.arrival_ns)),
                secs(r.scheduled_ns),
                if r.refused {
                    "refused".to_owned()
                } else {
                    secs(r.granted_ns)
                },
                secs(r.wait_ns),
                secs(r.behind_ns),
            ]
        })
        .collect();
    writeln!(f)?;
    writeln!(f, "timeline of {} (seconds)", l.limiter)?;
    f.write_str(&table(
        "  ",
        Align::Right,
        &["op", "arrival", "scheduled", "granted", "wait", "behind"],
        &rows,
    ))?;
    if l.timeline_omitted > 0 {
        writeln!(
            f,
            "  ... {} more ops (--rows all shows every op)",
            fmt_count(l.timeline_omitted)
        )?;
    }
    Ok(())
}

/// The summary table: a row per limiter.
fn summary_table(limiters: &[LimiterReport]) -> String {
    let dur = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), fmt_nanos);
    let any = |l: &LimiterReport| l.ops > 0;
    let rows: Vec<Vec<String>> = limiters
        .iter()
        .map(|l| {
            let when = |v: u64| any(l).then_some(v);
            vec![
                l.limiter.clone(),
                fmt_rate(l.target_rate),
                fmt_count(l.ops),
                fmt_count(l.refused),
                if any(l) {
                    fmt_rate(l.achieved_rate)
                } else {
                    "-".to_owned()
                },
                fmt_count(l.max_burst),
                dur(when(l.wait_ns.p50)),
                dur(when(l.wait_ns.p99)),
                dur(when(l.wait_ns.max)),
                dur(when(l.behind_ns.max)),
                dur(l.last_grant_ns),
            ]
        })
        .collect();
    table(
        "",
        Align::Left,
        &[
            "limiter",
            "target",
            "granted",
            "refused",
            "achieved",
            "max burst",
            "wait p50",
            "wait p99",
            "wait max",
            "behind max",
            "last grant",
        ],
        &rows,
    )
}
