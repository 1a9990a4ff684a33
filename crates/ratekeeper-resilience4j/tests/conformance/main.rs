//! Replays every conformance vector file on a manual clock.
//!
//! Files: every `*.json` in `tests/vectors/`, plus every `*.json` in the folder
//! named by the environment variable `RATEKEEPER_VECTORS`, if set. The replayer
//! is chosen by the file's `format` and each vector's `family`; a format or
//! family this crate does not implement yet is reported as unsupported (set
//! `RATEKEEPER_VECTORS_STRICT=1` to make that a failure), never skipped
//! silently. A failure names the file, the vector and the step.
//!
//! Where a vector carries the reference's value beside ours (`legacy_expect`,
//! `upstream_expect`, `upstream*`), the primary `expect` is checked: it is
//! ratekeeper's behaviour, and the differences are documented on the limiter.
//! A vector that exercises a documented deviation but carries no such
//! alternative (Guava with a zero warm-up period) is replayed and reported as
//! a known deviation: counted and printed, a failure only under
//! `RATEKEEPER_VECTORS_STRICT=1`. A vector marked `applicable_to_rust: false`
//! (a Java null argument) is counted and listed as not applicable.
//!
//! This crate replays the `resilience4j` format (the refill and cycle
//! limiters behind Resilience4j's interface, built with the limiters'
//! default builder). The `nosqlbench` and `guava` formats are the core
//! crate's (`ratekeeper`'s conformance test): here their vectors are counted
//! as replayed there, neither passed nor failed. This file finds the files,
//! dispatches on their format and keeps the tally and the helpers the
//! replayer uses.

mod resilience4j;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

type Obj = Map<String, Value>;

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: Vec<String>,
    unsupported: BTreeMap<String, usize>,
    /// Vectors that exercise a documented deviation from the reference and
    /// carry no alternative expectation: category -> one line per vector.
    deviations: BTreeMap<String, Vec<String>>,
    /// Passed vectors worth a word: superseded vectors checked against the
    /// reference's modern behaviour, reference-only expectations not checked.
    notes: Vec<String>,
    /// Vectors marked `applicable_to_rust: false` (e.g. a Java null
    /// argument): one line per vector. Neither passed nor failed.
    not_applicable: Vec<String>,
    /// Vectors of a format another crate of the workspace replays: what ->
    /// count. Neither passed nor failed.
    elsewhere: BTreeMap<String, usize>,
}

#[test]
fn conformance_vectors() {
    let mut files = json_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors"));
    if let Some(dir) = std::env::var_os("RATEKEEPER_VECTORS") {
        // `cargo test` runs in the crate folder; a relative path is tried from
        // there and then from the workspace root, where users usually are.
        let mut dir = PathBuf::from(dir);
        let from_root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(&dir);
        if dir.is_relative() && !dir.is_dir() && from_root.is_dir() {
            dir = from_root;
        }
        let extra = json_files(&dir);
        assert!(
            !extra.is_empty(),
            "RATEKEEPER_VECTORS={} holds no *.json file",
            dir.display()
        );
        files.extend(extra);
    }
    assert!(!files.is_empty(), "no vector files found");

    let mut tally = Tally::default();
    for file in &files {
        replay_file(file, &mut tally);
    }

    println!("conformance: {} vectors passed", tally.passed);
    for note in &tally.notes {
        println!("conformance: note: {note}");
    }
    println!(
        "conformance: {} vectors not applicable to Rust",
        tally.not_applicable.len()
    );
    for line in &tally.not_applicable {
        println!("conformance:   not applicable: {line}");
    }
    for (what, n) in &tally.elsewhere {
        println!("conformance: {what}: {n} vectors");
    }
    for (what, n) in &tally.unsupported {
        println!("conformance: unsupported (not implemented yet): {what}: {n} vectors");
    }
    for (what, lines) in &tally.deviations {
        println!(
            "conformance: known deviation ({what}): {} vectors",
            lines.len()
        );
        for line in lines {
            println!("conformance:   {line}");
        }
    }
    if !tally.failed.is_empty() {
        panic!(
            "{} conformance failures:\n{}",
            tally.failed.len(),
            tally.failed.join("\n")
        );
    }
    if std::env::var_os("RATEKEEPER_VECTORS_STRICT").is_some()
        && !(tally.unsupported.is_empty() && tally.deviations.is_empty())
    {
        panic!(
            "under RATEKEEPER_VECTORS_STRICT: unsupported vectors {:?}; known deviations {:?}",
            tally.unsupported, tally.deviations
        );
    }
    assert!(tally.passed > 0, "no vector was replayed");
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read vector folder {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    out
}

fn replay_file(path: &Path, tally: &mut Tally) {
    let name = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .display()
        .to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
    let format = doc["format"].as_str().unwrap_or("<no format>").to_owned();
    if format.starts_with("nosqlbench-ratelimiter-vectors/")
        || format.starts_with("guava-ratelimiter-vectors/")
    {
        *tally
            .elsewhere
            .entry(format!("{name}: replayed by ratekeeper"))
            .or_default() += vector_count(&doc);
    } else if format == "refill-r4j-ratelimiter-vectors/2" {
        resilience4j::replay_file(&name, &doc, tally);
    } else {
        let n = vector_count(&doc);
        *tally
            .unsupported
            .entry(format!("{name}: format {format}"))
            .or_default() += n;
    }
}
/// The vectors a file holds, in all its lists.
fn vector_count(doc: &Value) -> usize {
    ["vectors", "supplementary_vectors", "validation_vectors"]
        .iter()
        .map(|k| doc[*k].as_array().map_or(0, Vec::len))
        .sum()
}

// ---------------------------------------------------------------- helpers

fn f64_of(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "NaN" => f64::NAN,
        Value::String(s) if s == "Infinity" => f64::INFINITY,
        Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        other => other
            .as_f64()
            .unwrap_or_else(|| panic!("not a number: {other}")),
    }
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// Compares every field of `expect` with `actual`; integers exactly, floats
/// bit-for-bit (NaN equal to NaN).
fn check_fields(
    step: usize,
    op: &str,
    expect: &Obj,
    actual: &[(&str, Value)],
) -> Result<(), String> {
    for (k, want) in expect {
        let got = actual
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("step {step} ({op}): harness has no field {k:?}"))?;
        let same = match (want, got) {
            (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
                f64_of(want).to_bits() == f64_of(got).to_bits()
            }
            _ => want == got,
        };
        if !same {
            return Err(format!(
                "step {step} ({op}): {k}: expected {want}, got {got}"
            ));
        }
    }
    Ok(())
}

fn expect_of(step: &Value) -> Option<&Obj> {
    step.get("expect").and_then(Value::as_object)
}

/// Every `upstream*` / `legacy_expect*` field of a vector or its steps: the
/// reference's value where ratekeeper deliberately differs. The primary
/// expectation is what is checked; these are only reported.
fn reference_only_fields(v: &Value) -> Vec<String> {
    let is_alt = |k: &str| k.starts_with("upstream") || k.starts_with("legacy_expect");
    let mut out = Vec::new();
    for (k, val) in v.as_object().into_iter().flatten() {
        if is_alt(k) {
            out.push(format!("{k} = {val}"));
        }
    }
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        for (k, val) in step.as_object().into_iter().flatten() {
            if is_alt(k) {
                out.push(format!("step {i} ({}): {k} = {val}", step["op"]));
            }
        }
    }
    out
}
