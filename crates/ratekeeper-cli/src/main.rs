//! The `ratekeeper` command: pace real work through a rate limiter and see
//! what happened, run a command or copy a stream at a rate, or simulate an
//! arrival pattern through several limiters.
//!
//! Each subcommand lives in its own module and returns a report that
//! [`report`] prints as text or JSON; [`plot`] draws it with `--plot`. Exit
//! statuses:
//!
//! * `0`: success (also when stdout was closed early, e.g. piped to `head`);
//! * `1`: a runtime failure (e.g. an I/O error writing the report), or an
//!   `exec` run stopped by `--fail-fast`;
//! * `2`: a usage error: a bad flag, rate spec, strictness, duration or count,
//!   an arrival pattern or limiter spec that does not parse, an option the
//!   chosen limiter does not take, or a command `exec` cannot find;
//! * `3`: a `pace` or `exec` run stopped by `--max-behind` (after its
//!   report);
//! * `4`: a `pace`, `exec` or `pipe` run stopped by its limit shared
//!   through Redis (`--redis`): Redis failed under `--on-redis-failure
//!   closed`, or the key cannot be used (another type, or another limit
//!   without `--redis-adopt`) (after its report);
//! * `99`: a `pace` or `exec` run a `--fail-if` condition failed (after its
//!   report; a signal's status, the shared limit's 4, `exec --fail-fast`'s 1
//!   and `--max-behind`'s 3 win over it);
//! * `129`, `130`, `143`: SIGHUP, Ctrl-C (SIGINT) or SIGTERM ended a `pace`,
//!   `exec` or `pipe` run (after its report).
//!
//! `pace`, `exec` and `pipe` install a Ctrl-C handler right after the
//! arguments are parsed ([`interrupt`]).

mod error;
mod exec;
mod flags;
mod hdr_log;
mod limiter;
mod pace;
mod pipe;
mod plot;
mod progress;
#[cfg(test)]
mod props;
mod report;
mod run;
mod serve;
mod shared;
mod simulate;
#[cfg(test)]
mod test_util;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::UsageError;
use crate::run::interrupt;

const AFTER_HELP: &str = "\
Examples:
  ratekeeper pace --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --rate 2000 --count 200 --json
  ratekeeper pace --limiter pool --rate 10k,1.1 --threads 2 --duration 5s
  ratekeeper pace --limiter warmup --warmup 2s --rate 1000 --duration 3s
  ratekeeper pace --limiter refill --rate 1000 --refresh-period 100ms --capacity 200 --timeout 10ms
  ratekeeper pace --rate 2000 --duration 3s --plot pace.svg
  ratekeeper exec --rate 5 --concurrency 2 -n 20 -- curl -s http://127.0.0.1:8080/
  seq 1000 | ratekeeper pipe --rate 100
  cat big.bin | ratekeeper pipe --bytes --rate 1MiB > copy.bin
  ratekeeper simulate --arrivals 'burst 20 @0s; every 50ms for 3s; idle 2s; burst 10' --limiter pacer:10,1.0 --limiter pacer:10,1.5 --limiter warmup:10,2s
  ratekeeper serve --config limits.yaml --grpc 127.0.0.1:8081 --http 127.0.0.1:8080
  ratekeeper simulate --arrivals 'every 40ms for 2s; idle 2s; burst 30; every 40ms for 2s' --limiter pacer:25,1 --limiter pacer:25,1.5 --limiter pacer:25,0 --limiter warmup:25,1s --rows 0 --plot compare.svg

Run `ratekeeper help <COMMAND>` or `ratekeeper <COMMAND> --help` for a command's options.";

/// Pace real work through a rate limiter and see what happened, run a command
/// or copy a stream at a rate, or simulate an arrival pattern through several
/// limiters.
#[derive(Debug, Parser)]
#[command(name = "ratekeeper", version, about, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Pace worker threads through a rate limiter (the Pacer; with --limiter
    /// the token pool, Guava's SmoothBursty or SmoothWarmingUp, or
    /// Resilience4j's refill or cycle limiter) and report the achieved rate,
    /// the ops' wait times and the CPU cost per permit.
    #[command(
        long_about = pace::LONG_ABOUT,
        after_help = pace::AFTER_HELP,
        after_long_help = pace::AFTER_LONG_HELP
    )]
    Pace(pace::PaceArgs),
    /// Run a command repeatedly at a rate, at most --concurrency at once, and
    /// report its service and response times (measured from each run's
    /// scheduled start) and the runs by exit status.
    #[command(
        long_about = exec::LONG_ABOUT,
        after_help = exec::AFTER_HELP,
        after_long_help = exec::AFTER_LONG_HELP
    )]
    Exec(exec::ExecArgs),
    /// Copy standard input to standard output at a rate, by lines or by
    /// bytes (--bytes), like pv -L.
    #[command(
        long_about = pipe::LONG_ABOUT,
        after_help = pipe::AFTER_HELP,
        after_long_help = pipe::AFTER_LONG_HELP
    )]
    Pipe(pipe::PipeArgs),
    /// Run an arrival pattern through one or more rate limiters on a virtual
    /// clock, instantly, and show each op's arrival, grant and wait per
    /// limiter, with a summary (and with --plot, a picture) to compare them.
    #[command(
        long_about = simulate::LONG_ABOUT,
        after_help = simulate::AFTER_HELP,
        after_long_help = simulate::AFTER_LONG_HELP
    )]
    Simulate(simulate::SimulateArgs),
    /// Serve rate limits to other services: Envoy's RLS v3 gRPC API and an
    /// HTTP/JSON API, from limits in envoyproxy/ratelimit's YAML shape.
    #[command(long_about = serve::LONG_ABOUT, after_help = serve::AFTER_HELP)]
    Serve(serve::ServeArgs),
}

/// How a run that did not fail outright ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Exit status 0.
    Done,
    /// SIGINT or SIGTERM ended it: exit status 128 + the signal (130, 143).
    Interrupted(u8),
    /// It ran, but failed as a whole (`exec --fail-fast`): the message, and
    /// exit status 1.
    Failed(String),
    /// It fell too far behind its schedule (`--max-behind`): the message,
    /// and exit status 3 ([`run::EXIT_BEHIND`]).
    Behind(String),
    /// Its limit shared through Redis stopped it (Redis failed under
    /// `--on-redis-failure closed`, or the key cannot be used): the
    /// message, and exit status 4 ([`run::EXIT_SHARED_FAILED`]).
    SharedFailed(String),
    /// A `--fail-if` condition held (the conditions were printed after the
    /// report): exit status 99 ([`run::verdict::EXIT_STATUS`]).
    ConditionFailed,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let argv: Vec<String> = std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            if let Some(hint) = error::clap_hint(&e, &Cli::command(), &argv) {
                let _ = writeln!(std::io::stderr(), "error: {hint}");
                return ExitCode::from(2);
            }
            // `--help` and `--version` are "errors" with exit code 0. Printing
            // fails only if stdout/stderr is closed, and then there is nobody to
            // tell.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match run(cli) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Interrupted(status)) => ExitCode::from(status),
        Ok(Outcome::Failed(why)) => {
            let _ = writeln!(std::io::stderr(), "error: {why}");
            ExitCode::FAILURE
        }
        Ok(Outcome::Behind(why)) => {
            let _ = writeln!(std::io::stderr(), "error: {why}");
            ExitCode::from(run::EXIT_BEHIND)
        }
        Ok(Outcome::SharedFailed(why)) => {
            let _ = writeln!(std::io::stderr(), "error: {why}");
            ExitCode::from(run::EXIT_SHARED_FAILED)
        }
        Ok(Outcome::ConditionFailed) => ExitCode::from(run::verdict::EXIT_STATUS),
        Err(e) if report::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    let interrupted = |yes: bool, interrupt: &interrupt::Interrupt| {
        if yes {
            Outcome::Interrupted(interrupt.exit_status())
        } else {
            Outcome::Done
        }
    };
    match cli.command {
        Command::Pace(args) => {
            let interrupt = interrupt::install();
            let report = pace::run(&args, interrupt)?;
            report::emit(&report, args.json)?;
            // Every --fail-if condition that held, whatever the exit status.
            for failed in report.failed_conditions() {
                let _ = writeln!(std::io::stderr(), "error: {failed}");
            }
            if report.interrupted() {
                return Ok(Outcome::Interrupted(interrupt.exit_status()));
            }
            if let Some(why) = report.shared_failure() {
                return Ok(Outcome::SharedFailed(why));
            }
            Ok(match report.stopped_behind() {
                Some(why) => Outcome::Behind(why),
                None if !report.failed_conditions().is_empty() => Outcome::ConditionFailed,
                None => Outcome::Done,
            })
        }
        Command::Exec(args) => {
            let interrupt = interrupt::install();
            let report = exec::run(&args, interrupt)?;
            if let Some(to) = &args.plot {
                exec::write_plot(to, &report)?;
            }
            report::emit(&report, args.json)?;
            // Every --fail-if condition that held, whatever the exit status.
            for failed in report.failed_conditions() {
                let _ = writeln!(std::io::stderr(), "error: {failed}");
            }
            if report.interrupted() {
                return Ok(Outcome::Interrupted(interrupt.exit_status()));
            }
            if let Some(why) = report.shared_failure() {
                return Ok(Outcome::SharedFailed(why));
            }
            if let Some(why) = report.fail_fast_failure() {
                return Ok(Outcome::Failed(why));
            }
            Ok(match report.max_behind_failure() {
                Some(why) => Outcome::Behind(why),
                None if !report.failed_conditions().is_empty() => Outcome::ConditionFailed,
                None => Outcome::Done,
            })
        }
        Command::Pipe(args) => {
            let interrupt = interrupt::install_with_rate_control();
            let report = pipe::run(&args, interrupt)?;
            if args.report || args.json {
                report::emit_stderr(&report, args.json)?;
            }
            if let (false, Some(why)) = (report.interrupted(), report.shared_failure()) {
                return Ok(Outcome::SharedFailed(why));
            }
            Ok(interrupted(report.interrupted(), interrupt))
        }
        Command::Simulate(args) => {
            let report = simulate::run(&args)?;
            report::emit(&report, args.json)?;
            Ok(Outcome::Done)
        }
        Command::Serve(args) => {
            serve::run(&args)?;
            Ok(Outcome::Done)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
