//! The help lists the options people reach for first before each limiter's
//! fine print, which `--help` gives under headings of their own.

mod common;
use common::ratekeeper;

/// `-h` lists the options people reach for first, rate, length,
/// concurrency and output, before the limiter's knobs.
#[test]
fn short_help_puts_the_common_options_first() {
    for (sub, first, common) in [
        (
            "pace",
            "--rate",
            &["--duration", "--count", "--threads", "--json"][..],
        ),
        (
            "exec",
            "--rate",
            &["--duration", "--count", "--concurrency", "--json"][..],
        ),
        ("pipe", "--rate", &["--bytes", "--report", "--json"][..]),
    ] {
        let out = ratekeeper()
            .args([sub, "-h"])
            .assert()
            .success()
            .get_output()
            .clone();
        let help = String::from_utf8(out.stdout).unwrap();
        let at = |flag: &str| {
            help.find(&format!("  {flag} "))
                .or_else(|| help.find(&format!(", {flag} ")))
                .unwrap_or_else(|| panic!("{sub} -h has no {flag}:\n{help}"))
        };
        let knob = if sub == "pipe" {
            "--strictness"
        } else {
            "--limiter"
        };
        let knob_at = at(knob);
        assert!(at(first) < knob_at, "{sub}: {first} after {knob}:\n{help}");
        for flag in common {
            assert!(at(flag) < knob_at, "{sub}: {flag} after {knob}:\n{help}");
        }
        // The output options come before the runs' finer controls.
        if sub == "exec" {
            for later in ["--stdout", "--status-from-stdout", "--grace"] {
                assert!(
                    at("--json") < at(later),
                    "exec: {later} before --json:\n{help}"
                );
            }
        }
        // Each limiter's fine print and the Redis options are --help's.
        for fine in ["--cold-factor <", "--redis-lease <"] {
            assert!(!help.contains(fine), "{sub} -h lists {fine}:\n{help}");
        }
    }
}

/// `--help` gives each limiter's fine print a heading of its own.
#[test]
fn long_help_heads_each_limiters_options() {
    let out = ratekeeper()
        .args(["pace", "--help"])
        .assert()
        .success()
        .get_output()
        .clone();
    let help = String::from_utf8(out.stdout).unwrap();
    for heading in ["Pacer options:", "Token pool options:", "Redis options:"] {
        assert!(help.contains(heading), "no {heading:?} in pace --help");
    }
    let options = help.find("Options:").expect("an Options heading");
    let pacer = help.find("Pacer options:").unwrap();
    assert!(options < pacer);
    assert!(help[options..pacer].contains("--threads"));
    assert!(!help[options..pacer].contains("--strictness <"));
}
