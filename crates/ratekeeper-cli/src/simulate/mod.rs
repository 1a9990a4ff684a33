//! `ratekeeper simulate`: an arrival pattern run through one or more rate
//! limiters on a virtual clock, instantly.
//!
//! Every limiter gets its own [`ManualClock`](ratekeeper::ManualClock), built at time 0, and the same
//! arrivals. The model is **open loop**, a load generator's schedule: each
//! arrival, in time order, sets the clock to its time and reserves one permit
//! ([`RateLimiter::reserve`](ratekeeper::RateLimiter::reserve), which decides without sleeping); the op then
//! goes at the grant's ready time. A waiting op holds up nothing: the next
//! arrival asks at its own time, whether or not earlier ops have gone.
//!
//! The token pool is the exception to "reserve and read the ready time": a
//! pool that is short queues a claim that only its fills complete. Here it is
//! filled by hand (`Filling::Manual`) every fill interval, as nosqlbench's
//! filler thread does with a perfect timer, and a queued op goes at the fill
//! that completes its claim.
//!
//! `run` gathers each limiter's ops ([`model`]); [`summary`] computes the
//! report from them and [`render`] prints it and draws the plot.

mod arrivals;
mod clients;
mod help;
mod model;
mod render;
mod summary;
#[cfg(test)]
mod tests;

use std::time::Duration;

use arrivals::Arrivals;
use clap::Args;
use clients::{parse_client, parse_max_keys, KeyedSpec, Workload};
use ratekeeper::config::{Access, KindConfig, LimiterConfig};
use ratekeeper::pool::Filling;

use crate::error::UsageError;
use crate::plot::{self, PlotPath};

pub use clients::{ClientSpec, OverflowArg};
pub use help::{AFTER_HELP, AFTER_LONG_HELP, LONG_ABOUT};
use model::{simulate, simulate_keyed, Run};
use render::make_plot;
use summary::SimulateReport;

/// Options of `ratekeeper simulate`.
#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    /// The arrival pattern: steps separated by ';' (see above), e.g.
    /// 'burst 20 @0s; every 50ms for 3s; idle 2s; burst 10'.
    #[arg(
        long,
        value_name = "PATTERN",
        value_parser = parse_arrivals,
        required_unless_present = "clients",
        conflicts_with = "clients"
    )]
    pub arrivals: Option<Arrivals>,

    /// A client with its own arrival pattern (the --arrivals grammar), e.g.
    /// 'a=every 50ms for 2s'; repeat for several clients, instead of
    /// --arrivals. Without --keyed the clients share each limiter.
    #[arg(long = "client", value_name = "NAME=PATTERN", value_parser = parse_client)]
    pub clients: Vec<ClientSpec>,

    /// Give each --client its own limiter: each --limiter runs once per
    /// client through ratekeeper's Keyed map (pacer or refill).
    #[arg(long, requires = "clients")]
    pub keyed: bool,

    /// With --keyed, the most clients tracked at once [default: 100000].
    #[arg(long, value_name = "N", value_parser = parse_max_keys, requires = "keyed")]
    pub max_keys: Option<usize>,

    /// With --keyed, what a full map does with a new client while every
    /// tracked one holds debt [default: deny].
    #[arg(long, value_name = "POLICY", value_enum, requires = "keyed")]
    pub overflow: Option<OverflowArg>,

    /// A limiter to run the arrivals through, KIND:ARGS (see above), e.g.
    /// pacer:10,1.5 or warmup:10,2s; repeat to compare limiters.
    #[arg(long = "limiter", value_name = "KIND:ARGS", required = true, value_parser = parse_limiter)]
    pub limiters: Vec<LimiterSpec>,

    /// Timeline rows per limiter: a number, or `all`; 0 prints only the
    /// summary.
    #[arg(long, value_name = "N|all", default_value = "100", value_parser = parse_rows)]
    pub rows: Rows,

    /// Draw the granted rate and the waits over time to FILE, an SVG or a
    /// PNG (by its extension).
    #[arg(long, value_name = "FILE", value_parser = plot::parse_plot_path)]
    pub plot: Option<PlotPath>,

    /// The plot's time bucket, e.g. 100ms [default: about a hundredth of the
    /// timeline, and at least 5 ops at the slowest target rate, rounded to
    /// 1, 2 or 5 units].
    #[arg(long, value_name = "DUR", value_parser = parse_bucket, requires = "plot")]
    pub bucket: Option<Duration>,

    /// Print the report as one JSON object (schema in --help).
    #[arg(long)]
    pub json: bool,
}

/// How many timeline rows to show per limiter (`--rows`): `None` for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows(Option<usize>);

fn parse_rows(s: &str) -> Result<Rows, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("all") {
        return Ok(Rows(None));
    }
    s.parse()
        .map(|n| Rows(Some(n)))
        .map_err(|_| "expected a number of rows, such as 20 or 0, or all".to_owned())
}

fn parse_arrivals(s: &str) -> Result<Arrivals, String> {
    s.parse()
        .map_err(|e: arrivals::ArrivalsError| e.to_string())
}

fn parse_bucket(s: &str) -> Result<Duration, String> {
    match humantime::parse_duration(s.trim()) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the bucket must be greater than zero".to_owned()),
        Err(e) => Err(format!("{e}; expected a duration such as 100ms or 1s")),
    }
}

/// A limiter to simulate, as `--limiter` gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct LimiterSpec {
    /// The value as given (trimmed): the limiter's name in the report.
    label: String,
    config: LimiterConfig,
}

/// An error and its sources, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// `--limiter KIND:ARGS`: the library's grammar (which checks the values by
/// each limiter's builder), for a limiter `simulate` can model.
fn parse_limiter(s: &str) -> Result<LimiterSpec, String> {
    let label = s.trim();
    let config: LimiterConfig = label.parse().map_err(|e| chain(&e))?;
    if config.access() != Access::Exact {
        return Err(
            "simulate runs each limiter from one caller, on the limiter itself: \
                    batch and shards are for pace's worker threads (pace --batch, --shards)"
                .to_owned(),
        );
    }
    if !config.wait_policy().is_default() {
        return Err(
            "simulate never waits (an op goes at its grant's ready time), so a wait \
                    policy would change nothing: drop wait="
                .to_owned(),
        );
    }
    if let KindConfig::Pool { filling, .. } = config.kind() {
        if !matches!(filling, Filling::Thread(_)) {
            return Err(format!(
                "fill {filling}: simulate models the pool filled by its filler thread on a \
                 perfect timer; give fill as an interval, 1us to 1s (e.g. fill=1ms)"
            ));
        }
    }
    Ok(LimiterSpec {
        label: label.to_owned(),
        config,
    })
}

/// Runs `simulate` with `args` and returns its report; writes the plot if
/// asked.
///
/// # Errors
///
/// A [`UsageError`] for more limiters (or, with `--client --plot`, clients)
/// than the plot has colours, a client named twice, a limiter `--keyed`
/// cannot run per client, or a pool pattern too long to fill; a library error (none is expected); an I/O
/// error writing the plot.
pub fn run(args: &SimulateArgs) -> anyhow::Result<SimulateReport> {
    check_counts(args)?;
    let workload = match &args.arrivals {
        Some(arrivals) => Workload::single(arrivals),
        None => Workload::merge(&args.clients)?,
    };
    let keyed = keyed_spec(args);
    let runs = args
        .limiters
        .iter()
        .map(|spec| match keyed {
            Some(k) => simulate_keyed(spec, k, &workload.times, &workload.owner).map(
                |(ops, effective, m)| Run {
                    ops,
                    effective,
                    keyed: Some(m),
                },
            ),
            None => simulate(spec, &workload.times).map(|(ops, effective)| Run {
                ops,
                effective,
                keyed: None,
            }),
        })
        .collect::<anyhow::Result<Vec<Run>>>()?;
    if let Some(to) = &args.plot {
        let plot = make_plot(args, &workload, &runs)?;
        plot::write(to, &plot)?;
        crate::report::wrote(to.path());
    }
    Ok(summary::report(args, &workload, &runs, keyed))
}

/// The keyed map's settings, with `--keyed`.
fn keyed_spec(args: &SimulateArgs) -> Option<KeyedSpec> {
    let overflow = args.overflow.unwrap_or(OverflowArg::Deny);
    args.keyed.then(|| KeyedSpec {
        max_keys: args.max_keys.unwrap_or(ratekeeper::keyed::DEFAULT_MAX_KEYS),
        overflow: overflow.name(),
        policy: overflow.policy(),
    })
}

/// `--keyed` with clients; no more limiters than the plot has colours; with
/// `--client --plot`, one limiter and no more clients than colours.
fn check_counts(args: &SimulateArgs) -> Result<(), UsageError> {
    let colours = plot::PALETTE.len();
    if args.keyed && args.clients.is_empty() {
        // clap lets --keyed through beside --arrivals, which conflicts with
        // the --client it requires.
        return Err(UsageError(
            "--keyed gives each --client its own limiter: give the clients as --client \
             NAME=PATTERN instead of --arrivals"
                .to_owned(),
        ));
    }
    if args.limiters.len() > colours {
        return Err(UsageError(format!(
            "{} --limiter options given; at most {colours} can be compared at once",
            args.limiters.len(),
        )));
    }
    if args.plot.is_some() && !args.clients.is_empty() {
        if args.limiters.len() > 1 {
            return Err(UsageError(format!(
                "--plot with --client draws one limiter's clients; {} --limiter options given",
                args.limiters.len()
            )));
        }
        if args.clients.len() > colours {
            return Err(UsageError(format!(
                "--plot with {} --client options; at most {colours} can be drawn",
                args.clients.len()
            )));
        }
    }
    Ok(())
}
