//! `simulate`'s text report (the timelines and the summary table) and its
//! plot.

use std::fmt;

use plotters::style::RGBColor;

use super::clients::{ClientReport, KeyedReport, Workload};
use super::model::{Op, Run};
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
pub(super) fn make_plot(
    args: &SimulateArgs,
    workload: &Workload,
    runs: &[Run],
) -> Result<Plot, UsageError> {
    let results: Vec<&[Op]> = runs.iter().map(|r| r.ops.as_slice()).collect();
    let (width, end) = time_axis(args, workload, &results)?;
    let end_secs = end as f64 / 1e9;
    let mut rate_series = Vec::new();
    let (granted, wait_series) = if args.clients.is_empty() {
        rate_series.push(arrival_series(
            "arrivals",
            plot::ARRIVALS,
            2,
            &workload.times,
            width,
            end,
        ));
        limiter_series(args, &results, width, end)
    } else {
        client_series(args, workload, &runs[0].ops, width, end)
    };
    rate_series.extend(granted);
    rate_series.extend(target_lines(args, end_secs));
    let title = match &workload.pattern {
        Some(p) => p.clone(),
        None if args.keyed => format!("{} clients, one limiter each", args.clients.len()),
        None => format!("{} clients sharing one limiter", args.clients.len()),
    };
    let whose = if args.clients.is_empty() {
        "arrivals in grey"
    } else {
        "each client's arrivals thin"
    };
    Ok(Plot {
        title: format!("ratekeeper simulate: {title}"),
        end_secs,
        rate: Panel {
            title: format!(
                "ops granted per {} bucket, as a rate ({whose}, target dashed)",
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
fn time_axis(
    args: &SimulateArgs,
    workload: &Workload,
    results: &[&[Op]],
) -> Result<(u64, u64), UsageError> {
    let last_grant = results
        .iter()
        .copied()
        .flatten()
        .filter_map(|o| o.grant.map(|g| g.1))
        .max()
        .unwrap_or(0);
    let span = last_grant.max(workload.end_ns).max(1);
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

/// The arrivals at `times` as a rate per bucket.
fn arrival_series(
    name: &str,
    color: RGBColor,
    stroke: u32,
    times: &[u64],
    width: u64,
    end: u64,
) -> Series {
    let mut b = Buckets::new(width);
    for &t in times {
        b.record(t, 0);
    }
    Series {
        name: name.to_owned(),
        color,
        dashed: false,
        width: stroke,
        points: plot::rate_points(&b, end),
    }
}

/// With `--client` (and one limiter, whose ops are `ops`): each client's
/// arrivals (thin), granted rate and longest wait per bucket, in its colour.
fn client_series(
    args: &SimulateArgs,
    workload: &Workload,
    ops: &[Op],
    width: u64,
    end: u64,
) -> (Vec<Series>, Vec<Series>) {
    let mut rate_series = Vec::new();
    let mut wait_series = Vec::new();
    for (i, client) in args.clients.iter().enumerate() {
        let color = plot::PALETTE[i];
        let mine = || {
            ops.iter()
                .zip(&workload.owner)
                .filter(move |(_, &o)| o == i)
        };
        let times: Vec<u64> = mine().map(|(op, _)| op.arrival).collect();
        let name = format!("{} arrivals", client.name);
        rate_series.push(arrival_series(&name, color, 1, &times, width, end));
        let mut b = Buckets::new(width);
        for (o, _) in mine() {
            if let Some((_, g)) = o.grant {
                b.record(g, g - o.arrival);
            }
        }
        let stroke = 2 + (args.clients.len() - 1 - i).min(3) as u32;
        for (series, points) in [
            (&mut rate_series, plot::rate_points(&b, end)),
            (&mut wait_series, plot::wait_points(&b, WaitStat::Max)),
        ] {
            series.push(Series {
                name: client.name.clone(),
                color,
                dashed: false,
                width: stroke,
                points,
            });
        }
    }
    (rate_series, wait_series)
}

/// Each limiter's granted rate and longest wait per bucket, in its colour.
fn limiter_series(
    args: &SimulateArgs,
    results: &[&[Op]],
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
        for o in ops.iter() {
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
        f.write_str(&summary_table(&self.limiters))?;
        for l in self.limiters.iter().filter(|l| !l.clients.is_empty()) {
            writeln!(f)?;
            writeln!(f, "clients of {}", l.limiter)?;
            f.write_str(&client_table(&l.clients))?;
            if let Some(k) = &l.keyed {
                writeln!(f, "{}", keyed_line(k))?;
            }
        }
        Ok(())
    }
}

/// A limiter's clients: a row per client.
fn client_table(clients: &[ClientReport]) -> String {
    let dur = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), fmt_nanos);
    let rows: Vec<Vec<String>> = clients
        .iter()
        .map(|c| {
            let any = c.ops > 0;
            vec![
                c.client.clone(),
                fmt_count(c.arrivals),
                fmt_count(c.ops),
                fmt_count(c.refused),
                if any {
                    fmt_rate(c.achieved_rate)
                } else {
                    "-".to_owned()
                },
                dur(any.then_some(c.wait_ns.p99)),
                dur(any.then_some(c.wait_ns.max)),
                dur(c.last_grant_ns),
            ]
        })
        .collect();
    table(
        "",
        Align::Left,
        &[
            "client",
            "arrivals",
            "granted",
            "refused",
            "achieved",
            "wait p99",
            "wait max",
            "last grant",
        ],
        &rows,
    )
}

/// The keyed map's metrics, as one line.
fn keyed_line(k: &KeyedReport) -> String {
    format!(
        "keyed: {} live of at most {} clients; evicted {} fresh, {} with credit, {} in debt; \
         {} ops of new clients denied; {} ops overflowed to the shared limiter",
        fmt_count(k.live_keys),
        fmt_count(k.max_keys),
        fmt_count(k.evicted_fresh),
        fmt_count(k.evicted_credit),
        fmt_count(k.evicted_debt),
        fmt_count(k.denied_new),
        fmt_count(k.overflowed)
    )
}

impl SimulateReport {
    /// The pattern, its arrivals and one line per limiter.
    fn fmt_head(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(pattern) = &self.pattern {
            writeln!(f, "pattern   {pattern}")?;
        }
        let name_width = self.clients.iter().map(|c| c.client.chars().count()).max();
        for (i, c) in self.clients.iter().enumerate() {
            let head = if i == 0 { "clients" } else { "" };
            let w = name_width.unwrap_or(0);
            writeln!(f, "{head:<10}{:<w$}  {}", c.client, c.pattern)?;
        }
        writeln!(
            f,
            "arrivals  {}, until {} (open loop: each arrival asks for its permit at its own \
             time; a waiting op holds up nothing)",
            fmt_count(self.arrivals),
            fmt_duration(self.end_ns)
        )?;
        match (&self.keyed, self.clients.is_empty()) {
            (Some(k), _) => writeln!(
                f,
                "keyed     one limiter per client (ratekeeper Keyed, one shard), clients tracked \
                 at most {}, overflow {}",
                fmt_count(k.max_keys as u64),
                k.overflow
            )?,
            (None, false) => writeln!(f, "shared    the clients share each limiter")?,
            (None, true) => {}
        }
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
            let client = r.client.iter().cloned();
            std::iter::once(r.op.to_string())
                .chain(client)
                .chain([
                    secs(Some(r.arrival_ns)),
                    secs(r.scheduled_ns),
                    if r.refused {
                        "refused".to_owned()
                    } else {
                        secs(r.granted_ns)
                    },
                    secs(r.wait_ns),
                    secs(r.behind_ns),
                ])
                .collect()
        })
        .collect();
    let header: &[&str] = if l.timeline.iter().any(|r| r.client.is_some()) {
        &[
            "op",
            "client",
            "arrival",
            "scheduled",
            "granted",
            "wait",
            "behind",
        ]
    } else {
        &["op", "arrival", "scheduled", "granted", "wait", "behind"]
    };
    writeln!(f)?;
    writeln!(f, "timeline of {} (seconds)", l.limiter)?;
    f.write_str(&table("  ", Align::Right, header, &rows))?;
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
