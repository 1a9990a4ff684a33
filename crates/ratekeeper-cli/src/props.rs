//! Property tests at the CLI's front door: any value for any flag of any
//! subcommand is parsed or refused as a usage error, never a panic; and any
//! simulation the parser accepts runs and renders (text and JSON), or is
//! refused with an error, never a panic.

use clap::{CommandFactory, Parser};
use proptest::prelude::*;

use crate::{simulate, Cli, Command};

/// Every flag that takes a value, by subcommand: `(subcommand, --flag)`.
fn value_flags() -> Vec<(String, String)> {
    let cli = Cli::command();
    cli.get_subcommands()
        .flat_map(|sub| {
            sub.get_arguments()
                .filter(|a| a.get_action().takes_values())
                .filter_map(|a| {
                    a.get_long()
                        .map(|l| (sub.get_name().to_owned(), format!("--{l}")))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A value as a user might type one: numbers of every size and sign,
/// units, separators, or anything at all.
fn any_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+0-9.eE]{0,24}",
        "[0-9]{1,22}(ns|us|ms|s|m|h|d|y|k|K|M|G|KiB|MiB|GiB|%)?",
        "[a-z]{1,8}:[-0-9.,a-z=]{0,30}",
        "[ -~]{0,40}",
        ".{0,40}",
    ]
}

/// One of `usual`, or now and then one of `edges`: a field mostly valid
/// for its place, so that most specs parse and run, and the edges get in.
fn field(usual: &[&'static str], edges: &[&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        11 => prop::sample::select(usual.to_vec()),
        1 => prop::sample::select(edges.to_vec()),
    ]
    .prop_map(str::to_owned)
}

/// Edge numbers: zero, tiny, huge, past `u64`, negative, not a number.
const NUMBERS: [&str; 9] = [
    "0",
    "0.001",
    "1e12",
    "1e300",
    "18446744073709551615",
    "-1",
    "nan",
    "inf",
    "1M",
];
/// Edge durations: none, a nanosecond, past `u64` nanoseconds, not one.
const DURATIONS: [&str; 4] = ["0s", "1ns", "100000000h", "x"];
/// The edges of an arrival pattern: the same, less `1M` (last above),
/// which gives patterns of up to a million arrivals (allowed, and slow to
/// simulate in a debug build: `rate 1M for 1s`); more is refused.
const ARRIVAL_NUMBERS: &[&str] = match NUMBERS.split_last() {
    Some((_, rest)) => rest,
    None => &[],
};
/// Edge durations less `1ns` (`every 1ns for 1ms`: a million arrivals).
const ARRIVAL_DURATIONS: [&str; 3] = ["0s", "100000000h", "x"];

const RATES: [&str; 5] = ["1", "10", "100", "2500", "2.5k"];
const DURS: [&str; 4] = ["1ms", "50ms", "1s", "2s"];

/// An arrival pattern in the grammar, with arbitrary numbers.
fn pattern() -> impl Strategy<Value = String> {
    let (n, d) = (ARRIVAL_NUMBERS, &ARRIVAL_DURATIONS);
    let step = prop_oneof![
        (
            field(&["1", "3", "20"], n),
            prop::option::of(field(&DURS, d))
        )
            .prop_map(|(n, at)| {
                match at {
                    Some(t) => format!("burst {n} @{t}"),
                    None => format!("burst {n}"),
                }
            }),
        (field(&DURS, d), field(&DURS, d)).prop_map(|(e, f)| format!("every {e} for {f}")),
        (field(&RATES, n), field(&DURS, d)).prop_map(|(r, f)| format!("rate {r} for {f}")),
        field(&DURS, d).prop_map(|d| format!("idle {d}")),
    ];
    prop::collection::vec(step, 1..4).prop_map(|s| s.join("; "))
}

/// A limiter spec of each kind, its fields mostly valid for the kind.
fn limiter() -> impl Strategy<Value = String> {
    let whole = ["1", "10", "100", "2500"];
    prop_oneof![
        (
            field(&RATES, &NUMBERS),
            field(&["0", "0.5", "1", "1.5", "3"], &NUMBERS)
        )
            .prop_map(|(r, s)| format!("pacer:{r},{s}")),
        (
            // Not 1us or 1ms fills, nor tiny rates: a slow pool filled often
            // is simulated fill by fill while ops queue (up to 50 M fills,
            // seconds in a debug build), which costs this test time and
            // tests nothing new.
            field(&RATES, &["0", "1e300", "-1", "nan", "inf", "1M"]),
            field(&["1", "1.1", "2"], &NUMBERS),
            field(&["20ms", "50ms"], &DURATIONS)
        )
            .prop_map(|(r, b, f)| format!("pool:{r},{b},{f}")),
        (field(&RATES, &NUMBERS), field(&["0", "1", "2.5"], &NUMBERS))
            .prop_map(|(r, b)| format!("bursty:{r},{b}")),
        (
            field(&RATES, &NUMBERS),
            field(&DURS, &DURATIONS),
            field(&["1", "3", "10"], &NUMBERS)
        )
            .prop_map(|(r, w, c)| format!("warmup:{r},{w},{c}")),
        (
            field(&whole, &NUMBERS),
            1u64..4,
            0u64..4,
            field(&DURS, &DURATIONS)
        )
            .prop_map(|(r, k, i, t)| {
                // capacity k x the limit, holding i/3 of it at time 0
                let limit: u64 = r.parse().unwrap_or(1);
                let cap = limit.saturating_mul(k);
                format!("refill:{r},1s,{cap},{},{t}", cap / 3 * i)
            }),
        (
            field(&whole, &NUMBERS),
            field(&["1s", "2s"], &DURATIONS),
            field(&DURS, &DURATIONS)
        )
            .prop_map(|(r, p, t)| format!("cycle:{r},{p},{t}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any value given to any value-taking flag parses or is a usage error.
    #[test]
    fn any_flag_value_parses_or_is_refused(which in any::<prop::sample::Index>(), value in any_value()) {
        let flags = value_flags();
        let (sub, flag) = which.get(&flags);
        let _ = Cli::try_parse_from(["ratekeeper", sub.as_str(), flag.as_str(), value.as_str()]);
    }
}

/// Runs the simulation `argv` asks for, if it parses, and renders its
/// report; whether it ran.
fn simulate_argv(argv: &[String], json: bool) -> Result<bool, TestCaseError> {
    let Ok(cli) = Cli::try_parse_from(argv) else {
        return Ok(false);
    };
    let Command::Simulate(args) = cli.command else {
        return Err(TestCaseError::fail("parsed as another subcommand"));
    };
    let Ok(report) = simulate::run(&args) else {
        return Ok(false);
    };
    if json {
        prop_assert!(serde_json::to_string(&report).is_ok());
    } else {
        prop_assert!(!report.to_string().is_empty());
    }
    Ok(true)
}

/// Any simulation the parser accepts, single or keyed, runs and renders,
/// or is refused with an error; and a share of the generated ones run (so
/// the test keeps testing runs, not only refusals: 51–69 of 128 in five
/// runs when written, against the floor of 16).
#[test]
fn any_accepted_simulation_runs_or_is_refused() {
    const CASES: u32 = 128;
    let keyed = prop::option::of((
        prop::sample::select(vec!["1", "2", "1000"]),
        prop::sample::select(vec!["deny", "shared", "evict"]),
    ));
    let cases = (
        prop::collection::vec(limiter(), 1..3),
        prop::collection::vec(pattern(), 1..4),
        keyed,
        any::<bool>(),
    );
    let ran = std::sync::atomic::AtomicU32::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(CASES));
    let result = runner.run(&cases, |(limiters, patterns, keyed, json)| {
        let mut argv: Vec<String> = ["ratekeeper", "simulate", "--rows", "5"]
            .map(str::to_owned)
            .into();
        for l in limiters {
            argv.extend(["--limiter".to_owned(), l]);
        }
        match keyed {
            None => argv.extend(["--arrivals".to_owned(), patterns[0].clone()]),
            Some((max_keys, overflow)) => {
                for (i, p) in patterns.iter().enumerate() {
                    argv.extend(["--client".to_owned(), format!("c{i}={p}")]);
                }
                let flags = ["--keyed", "--max-keys", max_keys, "--overflow", overflow];
                argv.extend(flags.map(str::to_owned));
            }
        }
        if simulate_argv(&argv, json)? {
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let ran = ran.into_inner();
    assert!(
        ran >= CASES / 8,
        "only {ran} of {CASES} generated simulations ran"
    );
}
