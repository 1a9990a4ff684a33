//! The conformance harness both crates' conformance tests share: finding
//! the vector files, the tally, and the helpers the replayers use. Each
//! crate's `main.rs` includes this file and hands `run` the replayer of the
//! formats it implements.
// Each crate uses a subset of the helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub type Obj = Map<String, Value>;

/// A crate's replayer: `(file name, format, parsed file, tally)`, `false`
/// for a format the crate does not replay.
pub type Replay = fn(&str, &str, &Value, &mut Tally) -> bool;

#[derive(Default)]
pub struct Tally {
    pub passed: usize,
    pub failed: Vec<String>,
    pub unsupported: BTreeMap<String, usize>,
    /// Vectors that exercise a documented deviation from the reference and
    /// carry no alternative expectation: category -> one line per vector.
    pub deviations: BTreeMap<String, Vec<String>>,
    /// Passed vectors worth a word: superseded vectors checked against the
    /// reference's modern behaviour, reference-only expectations not checked.
    pub notes: Vec<String>,
    /// Vectors marked `applicable_to_rust: false` (e.g. a Java null
    /// argument): one line per vector. Neither passed nor failed.
    pub not_applicable: Vec<String>,
    /// Vectors of a format another crate of the workspace replays: what ->
    /// count. Neither passed nor failed.
    pub elsewhere: BTreeMap<String, usize>,
}

/// Replays every vector file of the crate's `tests/vectors/` and of
/// `RATEKEEPER_VECTORS`, handing each parsed file to `replay`, which returns
/// `false` for a format it does not know; prints the tally and fails on a
/// failure (and, under `RATEKEEPER_VECTORS_STRICT`, on an unsupported or
/// deviating vector).
pub fn run(manifest_dir: &str, replay: Replay) {
    let mut files = json_files(&Path::new(manifest_dir).join("tests/vectors"));
    if let Some(dir) = std::env::var_os("RATEKEEPER_VECTORS") {
        // `cargo test` runs in the crate folder; a relative path is tried from
        // there and then from the workspace root, where users usually are.
        let mut dir = PathBuf::from(dir);
        let from_root = Path::new(manifest_dir).join("../..").join(&dir);
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
        replay_file(manifest_dir, file, &mut tally, replay);
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

fn replay_file(manifest_dir: &str, path: &Path, tally: &mut Tally, replay: Replay) {
    let name = path
        .strip_prefix(manifest_dir)
        .unwrap_or(path)
        .display()
        .to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
    let format = doc["format"].as_str().unwrap_or("<no format>").to_owned();
    if !replay(&name, &format, &doc, tally) {
        let n = vector_count(&doc);
        *tally
            .unsupported
            .entry(format!("{name}: format {format}"))
            .or_default() += n;
    }
}

/// Counts a file's vectors as replayed by another crate of the workspace.
pub fn elsewhere(name: &str, doc: &Value, tally: &mut Tally, by: &str) {
    *tally
        .elsewhere
        .entry(format!("{name}: replayed by {by}"))
        .or_default() += vector_count(doc);
}

/// The vectors a file holds, in all its lists.
pub fn vector_count(doc: &Value) -> usize {
    ["vectors", "supplementary_vectors", "validation_vectors"]
        .iter()
        .map(|k| doc[*k].as_array().map_or(0, Vec::len))
        .sum()
}

// ---------------------------------------------------------------- helpers

pub fn f64_of(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "NaN" => f64::NAN,
        Value::String(s) if s == "Infinity" => f64::INFINITY,
        Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        other => other
            .as_f64()
            .unwrap_or_else(|| panic!("not a number: {other}")),
    }
}

pub fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// Compares every field of `expect` with `actual`; integers exactly, floats
/// bit-for-bit (NaN equal to NaN).
pub fn check_fields(
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

pub fn expect_of(step: &Value) -> Option<&Obj> {
    step.get("expect").and_then(Value::as_object)
}

/// Every `upstream*` / `legacy_expect*` field of a vector or its steps: the
/// reference's value where ratekeeper deliberately differs. The primary
/// expectation is what is checked; these are only reported.
pub fn reference_only_fields(v: &Value) -> Vec<String> {
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
