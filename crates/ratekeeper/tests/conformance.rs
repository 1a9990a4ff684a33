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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ratekeeper::pacer::{compensation_shift, StrictnessError};
use ratekeeper::pool::PoolError;
use ratekeeper::refill::{
    ConfigBuilder, ConfigError, PendingPermission, PermitError, PermitEvent, PermitLimiter,
};
use ratekeeper::smooth::SmoothError;
use ratekeeper::{
    AcquireError, Clock, CycleLimiter, Grant, ManualClock, Pacer, Pools, Rate, RateError,
    RateLimiter, RateSpec, RefillLimiter, SmoothBursty, SmoothWarmingUp,
};
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
    if format.starts_with("nosqlbench-ratelimiter-vectors/") {
        replay_nosqlbench_file(&name, &doc, tally);
    } else if format.starts_with("guava-ratelimiter-vectors/") {
        replay_guava_file(&name, &doc, tally);
    } else if format == "refill-r4j-ratelimiter-vectors/2" {
        replay_r4j_file(&name, &doc, tally);
    } else {
        let n = ["vectors", "supplementary_vectors", "validation_vectors"]
            .iter()
            .map(|k| doc[*k].as_array().map_or(0, Vec::len))
            .sum::<usize>();
        *tally
            .unsupported
            .entry(format!("{name}: format {format}"))
            .or_default() += n;
    }
}

fn replay_nosqlbench_file(name: &str, doc: &Value, tally: &mut Tally) {
    let vectors = doc["vectors"].as_array().cloned().unwrap_or_default();
    for v in &vectors {
        let vname = v["name"].as_str().unwrap_or("<unnamed>");
        let family = v["family"].as_str().unwrap_or("<no family>");
        let result = match family {
            "cas_accumulator" => Some(replay_cas(v)),
            "dual_timeline" => Some(replay_dual(v)),
            "strictness_shift" => Some(replay_strictness(v)),
            "rate_spec" => Some(replay_spec(v)),
            // G3 SimRate pools (impl g3) are reference only: reported below.
            "token_pool" if v["config"]["impl"] != "g3" => Some(replay_pool(v)),
            _ => None,
        };
        match result {
            None => {
                let what = match v["config"]["impl"].as_str() {
                    Some(imp) => format!("{name}: family {family} (impl {imp})"),
                    None => format!("{name}: family {family}"),
                };
                *tally.unsupported.entry(what).or_default() += 1;
            }
            Some(Ok(())) => tally.passed += 1,
            Some(Err(e)) => tally.failed.push(format!("{name} / {vname} / {e}")),
        }
    }
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

/// Applies a clock step; returns false if the step is not a clock step.
fn clock_step(clock: &ManualClock, step: &Value) -> Result<bool, String> {
    match step["op"].as_str() {
        Some("advance") => {
            clock.advance_nanos(u64_of(&step["nanos"]));
            Ok(true)
        }
        Some("set_clock") => {
            let to = u64_of(&step["nanos"]);
            if to < clock.now_nanos() {
                return Err(format!("set_clock {to} would move the clock backwards"));
            }
            clock.set_nanos(to);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// The pacer a nosqlbench vector replays on: every default but what the
/// vector sets (the rate and the strictness; the manual clock gives the
/// exact sleeps `conventions.clock` asks for).
fn default_pacer(rate: f64, strictness: f64, clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::builder(Rate::new(rate).expect("vector rate"))
        .strictness(strictness)
        .build_with_clock(clock.clone())
        .expect("vector config")
}

// ---------------------------------------------------------------- cas_accumulator

/// nosqlbench G1d's CAS accumulator = a Pacer in average mode (strictness 0):
/// the burst ratio in the config is carried by the reference's spec but unused
/// by its limiter. `report = false` makes the reference's acquire return 0; the
/// pacer always reports the wait, so the harness returns 0 for such vectors.
fn replay_cas(v: &Value) -> Result<(), String> {
    let cfg = &v["config"];
    let clock = ManualClock::new(u64_of(&cfg["clock_start"]));
    let pacer = default_pacer(f64_of(&cfg["rate"]), 0.0, &clock);
    let report = cfg["report"].as_bool().unwrap_or(true);
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        if clock_step(&clock, step)? {
            continue;
        }
        let op = step["op"].as_str().unwrap_or("");
        match op {
            "acquire" => {
                let oversleep = step.get("oversleep_nanos").map_or(0, u64_of);
                clock.set_sleep_overshoot_nanos(oversleep);
                let grant = match step.get("nanos") {
                    Some(n) => pacer.acquire_nanos(u64_of(n)),
                    None => pacer.acquire_n(1),
                }
                .map_err(|e| format!("step {i} (acquire): {e}"))?;
                clock.set_sleep_overshoot_nanos(0);
                let returns = if report { grant.wait_nanos() } else { 0 };
                if let Some(e) = expect_of(step) {
                    check_fields(
                        i,
                        op,
                        e,
                        &[
                            ("returns", returns.into()),
                            ("ticks", pacer.next_slot_nanos().into()),
                            ("clock", clock.now_nanos().into()),
                        ],
                    )?;
                }
            }
            "set_rate" => {
                pacer
                    .set_rate(Rate::new(f64_of(&step["rate"])).map_err(|e| e.to_string())?)
                    .map_err(|e| format!("step {i} (set_rate): {e}"))?;
            }
            "check" => {
                let rate_delay = pacer.schedule_delay_nanos();
                let total = rate_delay + pacer.accumulated_wait_nanos() as i64;
                if let Some(e) = expect_of(step) {
                    check_fields(
                        i,
                        op,
                        e,
                        &[
                            ("ticks", pacer.next_slot_nanos().into()),
                            ("rate_delay", rate_delay.into()),
                            ("total_delay", total.into()),
                            ("clock", clock.now_nanos().into()),
                        ],
                    )?;
                }
            }
            other => return Err(format!("step {i}: unknown op {other:?}")),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- dual_timeline

/// The dual timeline = a Pacer whose strictness is the vector's burst ratio
/// (0.0 average, 1.0 strict, > 1 burst).
fn replay_dual(v: &Value) -> Result<(), String> {
    let cfg = &v["config"];
    let clock = ManualClock::new(u64_of(&cfg["clock_start"]));
    let burst = f64_of(&cfg["burst_ratio"]);
    let pacer = default_pacer(f64_of(&cfg["rate"]), burst, &clock);
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        if clock_step(&clock, step)? {
            continue;
        }
        let op = step["op"].as_str().unwrap_or("");
        match op {
            "acquire" => {
                let grant = pacer.acquire();
                if let Some(e) = expect_of(step) {
                    check_fields(
                        i,
                        op,
                        e,
                        &[
                            ("returns", grant.wait_nanos().into()),
                            ("ideal", grant.scheduled_nanos().into()),
                            ("start", grant.ready_nanos().into()),
                            ("clock", clock.now_nanos().into()),
                        ],
                    )?;
                }
            }
            "set_rate" => {
                let rate = Rate::new(f64_of(&step["rate"])).map_err(|e| e.to_string())?;
                pacer
                    .configure(rate, f64_of(&step["burst_ratio"]))
                    .map_err(|e| format!("step {i} (set_rate): {e}"))?;
            }
            "internal_add_ideal" => {
                // The reference test poked allocatedIdealNanos. Reserving the
                // same span of schedule does exactly that when there is no
                // burst spacing (average mode); refuse anything else loudly.
                if burst != 0.0 {
                    return Err(format!(
                        "step {i}: internal_add_ideal only replays with burst 0.0"
                    ));
                }
                pacer
                    .reserve_nanos(u64_of(&step["nanos"]), None)
                    .map_err(|e| format!("step {i} (internal_add_ideal): {e}"))?;
            }
            "check" => {
                let stats = pacer.wait_stats();
                if let Some(e) = expect_of(step) {
                    check_fields(
                        i,
                        op,
                        e,
                        &[
                            ("wait_time", stats.backlog_nanos.into()),
                            ("total_wait_time", stats.total_wait_nanos.into()),
                            ("next_ideal", pacer.next_slot_nanos().into()),
                            ("clock", clock.now_nanos().into()),
                        ],
                    )?;
                }
            }
            other => return Err(format!("step {i}: unknown op {other:?}")),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- strictness_shift

fn strictness_error_kind(e: StrictnessError) -> &'static str {
    match e {
        StrictnessError::AboveOne(_) => "strictness_above_one",
        StrictnessError::Negative(_) => "strictness_negative",
        StrictnessError::NaN => "strictness_nan",
        _ => "strictness_other",
    }
}

fn replay_strictness(v: &Value) -> Result<(), String> {
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        let ratio = f64_of(&step["ratio"]);
        let expect = expect_of(step).ok_or_else(|| format!("step {i}: no expect"))?;
        let got: Vec<(&str, Value)> = match compensation_shift(ratio) {
            Ok(shift) => vec![("shift", shift.into())],
            Err(e) => vec![("error", strictness_error_kind(e).into())],
        };
        check_fields(i, &format!("strictness_shift {ratio}"), expect, &got)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- rate_spec

fn replay_spec(v: &Value) -> Result<(), String> {
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        let input = step["input"]
            .as_str()
            .ok_or_else(|| format!("step {i}: no input"))?;
        let expect = expect_of(step).ok_or_else(|| format!("step {i}: no expect"))?;
        let got: Vec<(&str, Value)> = match input.parse::<RateSpec>() {
            Ok(spec) => {
                // A valid spec must also round-trip through its Display form.
                let again: RateSpec = spec.to_string().parse().map_err(|e| {
                    format!("step {i}: {input:?} displays as {spec} which fails to parse: {e}")
                })?;
                if again != spec {
                    return Err(format!(
                        "step {i}: {input:?} does not round-trip via {spec}"
                    ));
                }
                vec![
                    ("rate", spec.rate().get().into()),
                    ("burst_ratio", spec.burst_ratio().into()),
                    ("verb", spec.verb().as_str().into()),
                    ("scope", spec.scope().as_str().into()),
                ]
            }
            Err(e) => vec![("error", e.kind().as_str().into())],
        };
        check_fields(i, &format!("parse_rate_spec {input:?}"), expect, &got)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- token_pool

fn pool_error_kind(e: PoolError) -> &'static str {
    match e {
        PoolError::BurstBelowOne(_) => "burst_below_one",
        PoolError::BurstNotFinite(_) => "burst_not_finite",
        PoolError::PoolSize(_) => "pool_size",
        PoolError::Rate(RateError::NotPositive(_)) => "rate_not_positive",
        PoolError::Rate(RateError::NotFinite(_)) => "rate_not_finite",
        PoolError::Rate(RateError::TooFast(_)) => "rate_too_fast",
        PoolError::Rate(RateError::TooSlow(_)) => "rate_too_slow",
        _ => "pool_other",
    }
}

/// Pools sized for a step's (or config's) `rate` and `burst_ratio`.
fn pools_for(obj: &Value) -> Result<Pools, PoolError> {
    let rate = Rate::new(f64_of(&obj["rate"]))?;
    Pools::new(rate, f64_of(&obj["burst_ratio"]))
}

/// Every field a token_pool expect may name about the pools' state.
fn pool_state(p: &Pools) -> Vec<(&'static str, Value)> {
    vec![
        ("active", p.active().into()),
        ("waiting", p.waiting().into()),
        ("wait_time", p.wait_time().into()),
        ("can_take", p.can_take_op().into()),
        ("nanos_per_op", p.nanos_per_op().into()),
        ("max_active", p.max_active().into()),
        ("max_over_active", p.max_over_active().into()),
        ("burst_pool", p.burst_pool().into()),
    ]
}

/// Checks a step's expect, if any, against `extra` (the op's own results)
/// and the pools' state.
fn check_pool(
    step_no: usize,
    op: &str,
    step: &Value,
    pools: &Pools,
    mut extra: Vec<(&'static str, Value)>,
) -> Result<(), String> {
    if let Some(e) = expect_of(step) {
        extra.extend(pool_state(pools));
        check_fields(step_no, op, e, &extra)?;
    }
    Ok(())
}

/// Checks a step whose call failed: its expect must name this error kind,
/// and the call must have changed nothing.
fn check_pool_error(
    step_no: usize,
    op: &str,
    step: &Value,
    err: PoolError,
    changed: bool,
) -> Result<(), String> {
    let Some(e) = expect_of(step) else {
        return Err(format!("step {step_no} ({op}): unexpected error: {err}"));
    };
    if !e.contains_key("error") {
        return Err(format!("step {step_no} ({op}): unexpected error: {err}"));
    }
    check_fields(step_no, op, e, &[("error", pool_error_kind(err).into())])?;
    if changed {
        return Err(format!(
            "step {step_no} ({op}): failed but changed the pools"
        ));
    }
    Ok(())
}

fn expects_error(step: &Value) -> bool {
    expect_of(step).is_some_and(|e| e.contains_key("error"))
}

/// nosqlbench G2's TokenPool arithmetic = [`Pools`]. impl `g2` builds pools
/// from a rate or (engineblock's test form) a pool size; impl `sizing` only
/// checks the sizes for each step's rate and burst ratio (the `g3` object of
/// those steps holds SimRate's sizes, which ratekeeper does not implement).
fn replay_pool(v: &Value) -> Result<(), String> {
    let cfg = &v["config"];
    let steps = v["steps"].as_array().ok_or("no steps")?;
    match cfg["impl"].as_str() {
        Some("sizing") => return replay_pool_sizing(steps),
        Some("g2") => {}
        other => return Err(format!("config: unknown token_pool impl {other:?}")),
    }
    let mut pools = match (cfg.get("rate"), cfg.get("pool_size")) {
        (Some(_), None) => pools_for(cfg),
        (None, Some(size)) => Pools::with_pool_size(u64_of(size), f64_of(&cfg["burst_ratio"])),
        _ => return Err("config: needs exactly one of rate and pool_size".into()),
    }
    .map_err(|e| format!("config: {e}"))?;

    for (i, step) in steps.iter().enumerate() {
        let op = step["op"].as_str().unwrap_or("");
        match op {
            "refill" => {
                let returns = pools.refill(u64_of(&step["tokens"]));
                check_pool(i, op, step, &pools, vec![("returns", returns.into())])?;
            }
            "take_up_to" => {
                let returns = pools.take_up_to(u64_of(&step["amount"]));
                check_pool(i, op, step, &pools, vec![("returns", returns.into())])?;
            }
            "block_and_take" => {
                // The vectors use it only when it would not block.
                let returns = pools.try_take_op().ok_or_else(|| {
                    format!(
                        "step {i} ({op}): would block: active {} < nanos_per_op {}",
                        pools.active(),
                        pools.nanos_per_op()
                    )
                })?;
                check_pool(i, op, step, &pools, vec![("returns", returns.into())])?;
            }
            "drain" => {
                let (mut ops, mut last) = (0u64, Value::Null);
                while pools.nanos_per_op() > 0 {
                    let Some(returns) = pools.try_take_op() else {
                        break;
                    };
                    ops += 1;
                    last = returns.into();
                }
                check_pool(
                    i,
                    op,
                    step,
                    &pools,
                    vec![("ops", ops.into()), ("last_returns", last)],
                )?;
            }
            "apply" => {
                let before = pools.clone();
                let result = Rate::new(f64_of(&step["rate"]))
                    .map_err(PoolError::from)
                    .and_then(|rate| pools.apply(rate, f64_of(&step["burst_ratio"])));
                match result {
                    Ok(()) if expects_error(step) => {
                        return Err(format!("step {i} ({op}): expected an error, got success"));
                    }
                    Ok(()) => check_pool(i, op, step, &pools, vec![])?,
                    Err(e) => check_pool_error(i, op, step, e, pools != before)?,
                }
            }
            "restart" => {
                let returns = pools.restart();
                check_pool(i, op, step, &pools, vec![("returns", returns.into())])?;
            }
            "check" => check_pool(i, op, step, &pools, vec![])?,
            "run_fills" => {
                let fields =
                    run_fills(&mut pools, step).map_err(|e| format!("step {i} ({op}): {e}"))?;
                check_pool(i, op, step, &pools, fields)?;
            }
            other => return Err(format!("step {i}: unknown op {other:?}")),
        }
    }
    Ok(())
}

/// `count` refills of `tokens` each; after each, a `greedy` consumer takes
/// ops while it can (an `absent` one takes none). Returns ops, max_waiting
/// (the most waiting seen after an iteration) and, with a `window` of W
/// iterations, ops_per_window (a trailing partial window included).
fn run_fills(pools: &mut Pools, step: &Value) -> Result<Vec<(&'static str, Value)>, String> {
    let count = u64_of(&step["count"]);
    let tokens = u64_of(&step["tokens"]);
    let greedy = match step["consumer"].as_str() {
        Some("greedy") => true,
        Some("absent") => false,
        other => return Err(format!("unknown consumer {other:?}")),
    };
    let window = match step.get("window").map(u64_of) {
        Some(0) => return Err("window must be at least 1".into()),
        w => w,
    };
    let (mut ops, mut max_waiting, mut in_window) = (0u64, 0u64, 0u64);
    let mut per_window = Vec::new();
    for k in 1..=count {
        pools.refill(tokens);
        // nanos_per_op 0 (a pool-size config) would take nothing for ever.
        while greedy && pools.nanos_per_op() > 0 && pools.try_take_op().is_some() {
            ops += 1;
            in_window += 1;
        }
        max_waiting = max_waiting.max(pools.waiting());
        if window.is_some_and(|w| k % w == 0) {
            per_window.push(in_window);
            in_window = 0;
        }
    }
    if window.is_some_and(|w| count % w != 0) {
        per_window.push(in_window);
    }
    let mut fields = vec![("ops", ops.into()), ("max_waiting", max_waiting.into())];
    if window.is_some() {
        fields.push(("ops_per_window", per_window.into()));
    }
    Ok(fields)
}

/// impl `sizing`: no pools kept; each step sizes pools for a rate and burst.
fn replay_pool_sizing(steps: &[Value]) -> Result<(), String> {
    for (i, step) in steps.iter().enumerate() {
        let op = step["op"].as_str().unwrap_or("");
        if op != "sizing" {
            return Err(format!("step {i}: unknown op {op:?}"));
        }
        match pools_for(step) {
            Ok(_) if expects_error(step) => {
                return Err(format!("step {i} ({op}): expected an error, got success"));
            }
            Ok(pools) => check_pool(i, op, step, &pools, vec![])?,
            Err(e) => check_pool_error(i, op, step, e, false)?,
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- guava

/// The documented deviation replayed without an alternative expectation.
const WARMUP_ZERO: &str = "Guava warm-up period 0: Guava's stored permits turn NaN and it stops \
                           throttling after idle time (specs/guava_go.md §2.10); ratekeeper \
                           keeps the stable rate with no stored permits";

/// Replays a `guava-ratelimiter-vectors/*` file (specs/guava_go.md §1.1):
/// `vectors` and `supplementary_vectors` step by step, `validation_vectors`
/// case by case.
fn replay_guava_file(name: &str, doc: &Value, tally: &mut Tally) {
    let vectors = ["vectors", "supplementary_vectors"]
        .iter()
        .flat_map(|k| doc[*k].as_array().into_iter().flatten());
    for v in vectors {
        let vname = v["name"].as_str().unwrap_or("<unnamed>");
        let kind = v["limiter"]["kind"].as_str().unwrap_or("<no limiter kind>");
        if kind != "bursty" && kind != "warmingup" {
            *tally
                .unsupported
                .entry(format!("{name}: limiter kind {kind}"))
                .or_default() += 1;
            continue;
        }
        let alternatives = reference_only_fields(v);
        let result = replay_guava(v);
        if kind == "warmingup"
            && v["limiter"]["warmup_micros"].as_i64() == Some(0)
            && alternatives.is_empty()
        {
            let line = match result {
                Ok(_) => format!("{name} / {vname}: replayed without reaching the difference"),
                Err(e) => format!("{name} / {vname}: differs as documented: {e}"),
            };
            tally
                .deviations
                .entry(WARMUP_ZERO.to_owned())
                .or_default()
                .push(line);
            continue;
        }
        match result {
            Ok(note) => {
                tally.passed += 1;
                if let Some(note) = note {
                    tally.notes.push(format!("{name} / {vname}: {note}"));
                }
                for a in alternatives {
                    tally.notes.push(format!(
                        "{name} / {vname}: the reference differs here (not checked): {a}"
                    ));
                }
            }
            Err(e) => tally.failed.push(format!("{name} / {vname} / {e}")),
        }
    }
    for v in doc["validation_vectors"].as_array().into_iter().flatten() {
        let vname = v["name"].as_str().unwrap_or("<unnamed>");
        match replay_guava_validation(v) {
            Ok(()) => tally.passed += 1,
            Err(e) => tally
                .failed
                .push(format!("{name} / validation {vname} / {e}")),
        }
    }
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

/// A Guava limiter of either kind on a manual clock.
enum Smooth {
    Bursty(SmoothBursty<ManualClock>),
    WarmingUp(SmoothWarmingUp<ManualClock>),
}

impl Smooth {
    /// Builds the limiter a vector's `limiter` object describes (the public
    /// factories' defaults where a parameter is absent).
    fn new(spec: &Value, clock: &ManualClock) -> Result<Smooth, String> {
        let rate = f64_of(&spec["permits_per_second"]);
        match spec["kind"].as_str() {
            Some("bursty") => {
                let burst = spec.get("max_burst_seconds").map_or(1.0, f64_of);
                SmoothBursty::builder(rate)
                    .max_burst_seconds(burst)
                    .build_with_clock(clock.clone())
                    .map(Smooth::Bursty)
                    .map_err(|e| format!("creating {spec}: {e:?}"))
            }
            Some("warmingup") => {
                let warmup = spec["warmup_micros"]
                    .as_i64()
                    .ok_or_else(|| format!("limiter {spec}: no integer warmup_micros"))?;
                let cold = spec.get("cold_factor").map_or(3.0, f64_of);
                SmoothWarmingUp::builder(rate)
                    .warmup_micros(warmup)
                    .cold_factor(cold)
                    .build_with_clock(clock.clone())
                    .map(Smooth::WarmingUp)
                    .map_err(|e| format!("creating {spec}: {e:?}"))
            }
            other => Err(format!("unknown limiter kind {other:?}")),
        }
    }

    fn set_rate(&self, permits_per_second: f64) -> Result<(), SmoothError> {
        match self {
            Smooth::Bursty(l) => l.set_rate(permits_per_second),
            Smooth::WarmingUp(l) => l.set_rate(permits_per_second),
        }
    }

    fn rate(&self) -> f64 {
        match self {
            Smooth::Bursty(l) => l.rate(),
            Smooth::WarmingUp(l) => l.rate(),
        }
    }

    /// Guava's reserve for `acquire(permits)`: never sleeps.
    fn acquire(&self, permits: u32) -> Result<Grant, AcquireError> {
        match self {
            Smooth::Bursty(l) => l.reserve(permits, None),
            Smooth::WarmingUp(l) => l.reserve(permits, None),
        }
    }

    fn try_acquire(&self, permits: u32, timeout_micros: i64) -> Result<Grant, AcquireError> {
        match self {
            Smooth::Bursty(l) => l.try_acquire_micros(permits, timeout_micros),
            Smooth::WarmingUp(l) => l.try_acquire_micros(permits, timeout_micros),
        }
    }
}

/// An event's micros when the wait did not fit the grant's `u64` nanos.
const SATURATED: u64 = u64::MAX;

/// One entry of the FakeStopwatch's event log.
struct Event {
    /// `'R'` (reserve_sleep: the limiter asked to sleep) or `'U'` (user_sleep).
    prefix: char,
    micros: u64,
    /// The step that recorded it.
    step: usize,
}

impl Event {
    fn kind(&self) -> &'static str {
        if self.prefix == 'R' {
            "reserve_sleep"
        } else {
            "user_sleep"
        }
    }

    /// The log text as the Guava test prints it: `String.format("%3.2f")`
    /// rounds HALF_UP, so the hundredths are `(micros + 5000) / 10000`
    /// (Rust's `{:.2}` rounds ties to even: R0.62 where Guava prints R0.63).
    fn text(&self) -> String {
        if self.micros == SATURATED {
            return format!("{}(over u64::MAX ns)", self.prefix);
        }
        let hundredths = (u128::from(self.micros) + 5000) / 10000;
        format!(
            "{}{}.{:02}",
            self.prefix,
            hundredths / 100,
            hundredths % 100
        )
    }

    /// The numeric value of [`text`](Self::text), as the vectors' `seconds`.
    fn seconds(&self) -> f64 {
        ((u128::from(self.micros) + 5000) / 10000) as f64 / 100.0
    }
}

fn render_events(events: &[Event]) -> String {
    let items: Vec<String> = events
        .iter()
        .map(|e| format!("{}={}", e.text(), e.micros))
        .collect();
    format!("[{}]", items.join(" "))
}

fn render_expected_events(events: &[Value]) -> String {
    let items: Vec<String> = events
        .iter()
        .map(|e| format!("{}={}", e["text"].as_str().unwrap_or("?"), e["micros"]))
        .collect();
    format!("[{}]", items.join(" "))
}

/// Compares the recorded log with an expected one: kind, micros (where not
/// null), text and seconds of every event, and the count.
fn check_events(which: &str, want: &[Value], got: &[Event]) -> Result<(), String> {
    let lists = || {
        format!(
            "expected {} got {}",
            render_expected_events(want),
            render_events(got)
        )
    };
    for (j, w) in want.iter().enumerate() {
        let Some(e) = got.get(j) else {
            return Err(format!(
                "{which}[{j}]: expected {w}, but only {} events were recorded; {}",
                got.len(),
                lists()
            ));
        };
        let at = format!("{which}[{j}] (recorded by step {})", e.step);
        let want_kind = w["kind"].as_str().unwrap_or("<no kind>");
        if want_kind != e.kind() {
            return Err(format!(
                "{at}: expected a {want_kind}, got a {} {}; {}",
                e.kind(),
                e.text(),
                lists()
            ));
        }
        if e.micros == SATURATED {
            // Only a wait too long for u64 nanos may saturate; its exact
            // micros (and text) are then beyond what a grant can hold.
            let want_micros = w.get("micros").and_then(Value::as_u64);
            if want_micros.is_some_and(|m| u128::from(m) * 1000 >= u128::from(u64::MAX)) {
                continue;
            }
            return Err(format!(
                "{at}: the grant's delay saturated u64 nanos, expected {} µs; {}",
                w["micros"],
                lists()
            ));
        }
        if let Some(m) = w.get("micros").filter(|m| !m.is_null()) {
            if u64_of(m) != e.micros {
                return Err(format!(
                    "{at}: {want_kind} micros expected {m}, got {}; {}",
                    e.micros,
                    lists()
                ));
            }
        }
        if let Some(t) = w.get("text").and_then(Value::as_str) {
            if t != e.text() {
                return Err(format!(
                    "{at}: text expected {t}, got {} ({} µs); {}",
                    e.text(),
                    e.micros,
                    lists()
                ));
            }
        }
        if let Some(s) = w.get("seconds") {
            if f64_of(s) != e.seconds() {
                return Err(format!(
                    "{at}: seconds expected {s}, got {} ({} µs)",
                    e.seconds(),
                    e.micros
                ));
            }
        }
    }
    if got.len() > want.len() {
        return Err(format!(
            "{which}: {} events expected, {} recorded; {}",
            want.len(),
            got.len(),
            lists()
        ));
    }
    Ok(())
}

/// A step's `permits` as the u32 the API takes; Guava's `permits <= 0`
/// (which throws) maps to 0, the [`AcquireError::ZeroPermits`] path.
fn permits_of(i: usize, op: &str, step: &Value) -> Result<u32, String> {
    let p = step["permits"]
        .as_i64()
        .ok_or_else(|| format!("step {i} ({op}): no integer permits"))?;
    if p <= 0 {
        return Ok(0);
    }
    u32::try_from(p).map_err(|_| format!("step {i} ({op}): permits {p} exceed u32"))
}

/// Checks a call the step expects to throw (`expect_error`) for `permits
/// <= 0`: ratekeeper must refuse it with [`AcquireError::ZeroPermits`].
fn check_zero_permits(
    i: usize,
    op: &str,
    step: &Value,
    result: Result<Grant, AcquireError>,
) -> Result<(), String> {
    let want = &step["expect_error"];
    match result {
        Err(AcquireError::ZeroPermits) if step["permits"].as_i64().is_some_and(|p| p <= 0) => {
            Ok(())
        }
        Err(e) => Err(format!(
            "step {i} ({op} {}): expected {want} (ZeroPermits), got Err({e:?})",
            step["permits"]
        )),
        Ok(g) => Err(format!(
            "step {i} ({op} {}): expected {want}, got Ok (delay {} ns)",
            step["permits"],
            g.delay_nanos()
        )),
    }
}

/// The grant's wait as Guava's whole micros.
///
/// A wait past `u64::MAX` ns (584 years; Guava can ask to sleep up to
/// `Long.MAX_VALUE` µs) saturates the grant: it is returned as [`SATURATED`].
fn grant_micros(i: usize, op: &str, grant: &Grant) -> Result<u64, String> {
    let nanos = grant.delay_nanos();
    if nanos == u64::MAX {
        return Ok(SATURATED);
    }
    if nanos % 1000 != 0 {
        return Err(format!(
            "step {i} ({op}): delay_nanos {nanos} is not a whole number of micros"
        ));
    }
    Ok(nanos / 1000)
}

/// Replays one Guava vector. `Ok(Some(note))` for a pass worth reporting.
fn replay_guava(v: &Value) -> Result<Option<String>, String> {
    let mode = v["clock"].as_str().unwrap_or("fake");
    let start = v.get("clock_start_nanos").map_or(0, u64_of);
    // The limiter reads elapsed time since its creation (wrapping). That is
    // `relative` exactly; `fake` reads absolute micros, which is the same
    // thing when the clock starts at 0 (creation time does not otherwise
    // matter, §2.2); `system` is replayed on a frozen clock: no time passes,
    // sleeps included (they are still logged).
    let frozen = match mode {
        "fake" if start % 1000 != 0 => {
            return Err(format!(
                "fake clock starting at {start} ns: absolute micros differ from elapsed ones"
            ))
        }
        "fake" | "relative" => false,
        "system" => true,
        other => return Err(format!("unknown clock mode {other:?}")),
    };
    let (events_key, note) = match v["status"].as_str() {
        None | Some("compatible") => ("expected_events", None),
        Some("superseded") => (
            "modern_derived_events",
            Some(
                "superseded legacy vector: checked against modern_derived_events \
                 (ratekeeper follows modern Guava), not its asserted legacy events"
                    .to_owned(),
            ),
        ),
        Some(other) => return Err(format!("unknown status {other:?}")),
    };
    let clock = ManualClock::new(start);
    let limiter = Smooth::new(&v["limiter"], &clock)?;
    let sleep = |micros: u64| {
        if !frozen {
            clock.advance_nanos(micros.saturating_mul(1000));
        }
    };
    let mut events: Vec<Event> = Vec::new();
    let mut marks: BTreeMap<String, u64> = BTreeMap::new();

    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        let op = step["op"].as_str().unwrap_or("");
        let fail = |msg: String, events: &[Event]| -> String {
            format!(
                "step {i} ({op}): {msg}; events so far {}",
                render_events(events)
            )
        };
        match op {
            "acquire" => {
                let permits = permits_of(i, op, step)?;
                let result = limiter.acquire(permits);
                if step.get("expect_error").is_some() {
                    check_zero_permits(i, op, step, result)?;
                    continue;
                }
                if permits == 0 {
                    return Err(format!(
                        "step {i} ({op}): permits {} without expect_error",
                        step["permits"]
                    ));
                }
                let grant = result
                    .map_err(|e| fail(format!("acquire({permits}) -> Err({e:?})"), &events))?;
                let micros = grant_micros(i, op, &grant)?;
                events.push(Event {
                    prefix: 'R',
                    micros,
                    step: i,
                });
                sleep(micros);
                if let Some(want) = step.get("expect_return_seconds") {
                    let want = f64_of(want);
                    let tol = step.get("return_tolerance").map_or(1e-8, f64_of);
                    let got = micros as f64 / 1e6;
                    if (got - want).abs() > tol {
                        return Err(fail(
                            format!("returned {got} s ({micros} µs), expected {want} ± {tol}"),
                            &events,
                        ));
                    }
                }
            }
            "try_acquire" => {
                let permits = permits_of(i, op, step)?;
                let timeout = step["timeout_micros"]
                    .as_i64()
                    .ok_or_else(|| format!("step {i} ({op}): no integer timeout_micros"))?;
                let result = limiter.try_acquire(permits, timeout);
                if step.get("expect_error").is_some() {
                    check_zero_permits(i, op, step, result)?;
                    continue;
                }
                if permits == 0 {
                    return Err(format!(
                        "step {i} ({op}): permits {} without expect_error",
                        step["permits"]
                    ));
                }
                let want = step["expect"]
                    .as_bool()
                    .ok_or_else(|| format!("step {i} ({op}): no boolean expect"))?;
                let call = format!("try_acquire_micros({permits}, {timeout})");
                match result {
                    Ok(grant) if want => {
                        let micros = grant_micros(i, op, &grant)?;
                        events.push(Event {
                            prefix: 'R',
                            micros,
                            step: i,
                        });
                        sleep(micros);
                    }
                    Ok(grant) => {
                        return Err(fail(
                            format!(
                                "{call}: expected false, got true (delay {} ns)",
                                grant.delay_nanos()
                            ),
                            &events,
                        ))
                    }
                    Err(AcquireError::WouldWait { .. }) if !want => {}
                    Err(e) => {
                        return Err(fail(
                            format!("{call}: expected {want}, got Err({e:?})"),
                            &events,
                        ))
                    }
                }
            }
            "sleep_micros" => {
                let micros = u64_of(&step["micros"]);
                events.push(Event {
                    prefix: 'U',
                    micros,
                    step: i,
                });
                sleep(micros);
            }
            "advance_nanos_silent" => clock.advance_nanos(u64_of(&step["nanos"])),
            "set_rate" => {
                let rate = f64_of(&step["permits_per_second"]);
                let before = limiter.rate();
                match (limiter.set_rate(rate), step.get("expect_error")) {
                    (Ok(()), None) => {}
                    (Ok(()), Some(want)) => {
                        return Err(fail(
                            format!("set_rate({rate}): expected {want}, got Ok"),
                            &events,
                        ))
                    }
                    (Err(SmoothError::Rate(_)), Some(_)) => {
                        let after = limiter.rate();
                        if after.to_bits() != before.to_bits() {
                            return Err(fail(
                                format!(
                                    "set_rate({rate}) failed but the rate changed: {before} -> {after}"
                                ),
                                &events,
                            ));
                        }
                    }
                    (Err(e), want) => {
                        return Err(fail(
                            format!(
                                "set_rate({rate}): expected {}, got Err({e:?})",
                                want.map_or("Ok".to_owned(), |w| format!(
                                    "{w} (SmoothError::Rate)"
                                ))
                            ),
                            &events,
                        ))
                    }
                }
            }
            "get_rate" => {
                let want = f64_of(&step["expect"]);
                let got = limiter.rate();
                if !(got == want || got.is_nan() && want.is_nan()) {
                    return Err(fail(
                        format!("rate() expected {want:e}, got {got:e}"),
                        &events,
                    ));
                }
            }
            "mark" => {
                let label = step["label"]
                    .as_str()
                    .ok_or_else(|| format!("step {i} ({op}): no label"))?;
                marks.insert(label.to_owned(), clock.now_nanos());
            }
            "expect_elapsed_millis" => {
                let since = step["since"].as_str().unwrap_or("");
                let at = *marks
                    .get(since)
                    .ok_or_else(|| format!("step {i} ({op}): no mark {since:?}"))?;
                let elapsed = clock.now_nanos().wrapping_sub(at) / 1_000_000;
                let bounds = [
                    (
                        "equals_millis",
                        elapsed == step.get("equals_millis").map_or(elapsed, u64_of),
                    ),
                    (
                        "min_millis",
                        elapsed >= step.get("min_millis").map_or(0, u64_of),
                    ),
                    (
                        "max_millis",
                        elapsed <= step.get("max_millis").map_or(u64::MAX, u64_of),
                    ),
                ];
                for (k, ok) in bounds {
                    if !ok {
                        return Err(fail(
                            format!(
                                "elapsed {elapsed} ms since {since:?}, expected {k} {}",
                                step[k]
                            ),
                            &events,
                        ));
                    }
                }
            }
            other => return Err(format!("step {i}: unknown op {other:?}")),
        }
    }

    match v.get(events_key).and_then(Value::as_array) {
        Some(want) => check_events(events_key, want, &events)?,
        None if note.is_some() => return Err(format!("superseded but no {events_key}")),
        None => {}
    }
    if events.iter().any(|e| e.micros == SATURATED) {
        let sat = "a wait longer than u64::MAX ns (584 years) was compared as saturated, \
                   not to the micro";
        return Ok(Some(match note {
            Some(n) => format!("{n}; {sat}"),
            None => sat.to_owned(),
        }));
    }
    Ok(note)
}

/// Java's saturating `unit.toMicros(d)`.
fn java_to_micros(d: i64, unit: &str) -> Result<i64, String> {
    Ok(match unit {
        "NANOSECONDS" => d / 1000,
        "MICROSECONDS" => d,
        "MILLISECONDS" => d.saturating_mul(1_000),
        "SECONDS" => d.saturating_mul(1_000_000),
        "MINUTES" => d.saturating_mul(60_000_000),
        "HOURS" => d.saturating_mul(3_600_000_000),
        "DAYS" => d.saturating_mul(86_400_000_000),
        other => return Err(format!("unknown TimeUnit {other:?}")),
    })
}

/// What a validation call ended with.
#[derive(Debug)]
enum Caught {
    Smooth(SmoothError),
    Acquire(AcquireError),
}

/// `validation_vectors`: each case's call must fail with the typed error
/// Guava's IllegalArgumentException maps to, or succeed for `ok`.
fn replay_guava_validation(v: &Value) -> Result<(), String> {
    for (i, case) in v["cases"].as_array().into_iter().flatten().enumerate() {
        let call = case["call"].as_str().unwrap_or("");
        let throws = match case["expect"].as_str() {
            Some("ok") => false,
            Some("IllegalArgumentException") => true,
            other => return Err(format!("case {i} ({call}): unknown expect {other:?}")),
        };
        let clock = ManualClock::new(0);
        let rate = || case.get("permits_per_second").map(f64_of);
        // Guava: !(rate > 0.0), NaN included.
        let bad_rate = |r: f64| r.is_nan() || r <= 0.0;
        // The outcome, and for an error the variant Guava's check order
        // predicts (None where the case would not throw).
        let (outcome, predicted): (Result<(), Caught>, Option<&str>) = match call {
            "create" => {
                let r = rate().ok_or_else(|| format!("case {i}: no permits_per_second"))?;
                let out = SmoothBursty::builder(r)
                    .build_with_clock(clock)
                    .map(drop)
                    .map_err(Caught::Smooth);
                (out, bad_rate(r).then_some("Rate"))
            }
            "create_warmup" => {
                let r = rate().ok_or_else(|| format!("case {i}: no permits_per_second"))?;
                let period = case.get("warmup_period").and_then(Value::as_i64);
                let mut micros = match (case.get("warmup_micros"), period) {
                    (Some(m), _) => m
                        .as_i64()
                        .ok_or_else(|| format!("case {i}: warmup_micros {m} not an integer"))?,
                    (None, Some(p)) => java_to_micros(p, case["unit"].as_str().unwrap_or(""))
                        .map_err(|e| format!("case {i}: {e}"))?,
                    (None, None) => return Err(format!("case {i}: no warm-up period")),
                };
                // Guava checks the period's sign before converting it (-1 ns
                // would truncate to 0 µs): keep a negative period negative.
                if period.is_some_and(|p| p < 0) {
                    micros = micros.min(-1);
                }
                let out = SmoothWarmingUp::builder(r)
                    .warmup_micros(micros)
                    .build_with_clock(clock)
                    .map(drop)
                    .map_err(Caught::Smooth);
                let predicted = if micros < 0 {
                    Some("WarmupNegative")
                } else {
                    bad_rate(r).then_some("Rate")
                };
                (out, predicted)
            }
            "set_rate" => {
                let r = rate().ok_or_else(|| format!("case {i}: no permits_per_second"))?;
                let limiters = [
                    Smooth::new(
                        &serde_json::json!({"kind": "bursty", "permits_per_second": 1.0}),
                        &clock,
                    )?,
                    Smooth::new(
                        &serde_json::json!({"kind": "warmingup", "permits_per_second": 1.0, "warmup_micros": 1_000_000}),
                        &clock,
                    )?,
                ];
                let mut results = Vec::new();
                for (which, l) in ["bursty", "warming-up"].iter().zip(&limiters) {
                    let before = l.rate();
                    let res = l.set_rate(r);
                    if res.is_err() && l.rate().to_bits() != before.to_bits() {
                        return Err(format!(
                            "case {i} ({call} {r}) on a {which} limiter: failed but changed the rate to {}",
                            l.rate()
                        ));
                    }
                    results.push(res);
                }
                if results[0].is_err() != results[1].is_err() {
                    return Err(format!(
                        "case {i} ({call} {r}): bursty and warming-up limiters disagree: {:?} vs {:?}",
                        results[0], results[1]
                    ));
                }
                let out = results.remove(0).map_err(Caught::Smooth);
                (out, bad_rate(r).then_some("Rate"))
            }
            "acquire" | "try_acquire" => {
                let p = case["permits"]
                    .as_i64()
                    .ok_or_else(|| format!("case {i}: no integer permits"))?;
                let permits = if p <= 0 {
                    0
                } else {
                    u32::try_from(p).map_err(|_| format!("case {i}: permits {p} exceed u32"))?
                };
                let l = Smooth::new(
                    &serde_json::json!({"kind": "bursty", "permits_per_second": 1.0}),
                    &clock,
                )?;
                let res = if call == "acquire" {
                    l.acquire(permits)
                } else {
                    let t = case["timeout_micros"]
                        .as_i64()
                        .ok_or_else(|| format!("case {i}: no integer timeout_micros"))?;
                    l.try_acquire(permits, t)
                };
                (
                    res.map(drop).map_err(Caught::Acquire),
                    (p <= 0).then_some("ZeroPermits"),
                )
            }
            other => return Err(format!("case {i}: unknown call {other:?}")),
        };
        let what = format!(
            "case {i} ({call} {})",
            serde_json::to_string(case).unwrap_or_default()
        );
        match (outcome, throws) {
            (Ok(()), false) => {}
            (Ok(()), true) => {
                return Err(format!("{what}: expected IllegalArgumentException, got Ok"))
            }
            (Err(e), false) => return Err(format!("{what}: expected ok, got Err({e:?})")),
            (Err(e), true) => {
                let variant = match &e {
                    Caught::Smooth(SmoothError::Rate(_)) => "Rate",
                    Caught::Smooth(SmoothError::WarmupNegative(_)) => "WarmupNegative",
                    Caught::Acquire(AcquireError::ZeroPermits) => "ZeroPermits",
                    _ => "other",
                };
                if predicted.is_some_and(|p| p != variant) {
                    return Err(format!(
                        "{what}: expected the {} error, got Err({e:?})",
                        predicted.unwrap_or_default()
                    ));
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- refill / Resilience4j

/// Replays a `refill-r4j-ratelimiter-vectors/2` file (specs/resilience4j_refill_bucket4j.md
/// §3): families `refill` (the [`RefillLimiter`], primary = the strict
/// bucket), `atomic_cycle` (the [`CycleLimiter`], primary = the fixed
/// `AtomicRateLimiter`) and `config` (validation). Format /2's primary set
/// fails fast on a refused acquire, as ratekeeper does. Every `upstream*`
/// value (the reference's behaviour where it differs) is reported as a note.
fn replay_r4j_file(name: &str, doc: &Value, tally: &mut Tally) {
    for v in doc["vectors"].as_array().into_iter().flatten() {
        let vname = v["name"].as_str().unwrap_or("<unnamed>");
        let family = v["family"].as_str().unwrap_or("<no family>");
        if v["applicable_to_rust"] == Value::Bool(false) {
            let why = v["expect"]["error"].as_str().unwrap_or("not expressible");
            tally
                .not_applicable
                .push(format!("{name} / {vname}: {family} ({why})"));
            continue;
        }
        let result = match family {
            "refill" => Some(replay_r4j_refill(v)),
            "atomic_cycle" => Some(replay_r4j_cycle(v)),
            "config" => Some(replay_r4j_config(v)),
            _ => None,
        };
        match result {
            None => {
                *tally
                    .unsupported
                    .entry(format!("{name}: family {family}"))
                    .or_default() += 1
            }
            Some(Ok(())) => {
                tally.passed += 1;
                let alternatives = reference_only_fields(v);
                let differs = v["differs_from_upstream"] == Value::Bool(true)
                    || v["steps"]
                        .as_array()
                        .is_some_and(|s| s.iter().any(|s| s.get("upstream_expect").is_some()));
                if differs && !alternatives.is_empty() {
                    tally.notes.push(format!(
                        "{name} / {vname}: the reference differs here (not checked): {}",
                        alternatives.join("; ")
                    ));
                }
            }
            Some(Err(e)) => tally.failed.push(format!("{name} / {vname} / {e}")),
        }
    }
}

/// A step's required integer field.
fn req_i64(i: usize, step: &Value, key: &str) -> Result<i64, String> {
    step[key]
        .as_i64()
        .ok_or_else(|| format!("step {i}: {key} = {} is not an integer", step[key]))
}

/// A vector's permit count as the `u32` the API takes: a count below 1 maps
/// to 0, the [`PermitError::InvalidPermits`] path (a negative count cannot be
/// expressed).
fn r4j_permits(i: usize, step: &Value) -> Result<u32, String> {
    let p = step["permits"]
        .as_i64()
        .ok_or_else(|| format!("step {i}: no integer permits"))?;
    if p <= 0 {
        return Ok(0);
    }
    u32::try_from(p).map_err(|_| format!("step {i}: permits {p} exceed u32"))
}

fn permit_error_kind(e: PermitError) -> &'static str {
    match e {
        PermitError::InvalidPermits => "invalid_permits",
        PermitError::ExceedsCapacity { .. } => "exceeds_capacity",
        _ => "permit_other",
    }
}

fn config_error_kind(e: ConfigError) -> &'static str {
    match e {
        ConfigError::InvalidLimitForPeriod(_) => "invalid_limit_for_period",
        ConfigError::InvalidLimitRefreshPeriod(_) => "invalid_limit_refresh_period",
        ConfigError::LimitRefreshPeriodTooLarge(_) => "limit_refresh_period_too_large",
        ConfigError::ZeroNanosPerPermit { .. } => "zero_nanos_per_permit",
        ConfigError::NegativeTimeout(_) => "negative_timeout",
        ConfigError::TimeoutTooLarge(_) => "timeout_too_large",
        ConfigError::CapacityBelowLimit { .. } => "capacity_below_limit",
        ConfigError::InitialPermitsOutOfRange { .. } => "initial_permits_out_of_range",
        ConfigError::NanosPerFullCapacityOverflow { .. } => "nanos_per_full_capacity_overflow",
        _ => "config_other",
    }
}

/// Applies one builder field of a vector: JSON null leaves it unset, an
/// integer is taken as is (nanoseconds for durations), `{"seconds": N}` is a
/// `Duration` of N seconds.
fn r4j_builder(spec: &Value) -> Result<ConfigBuilder, String> {
    let mut b = ConfigBuilder::new();
    for (key, val) in spec.as_object().into_iter().flatten() {
        if val.is_null() || key == "derived" || key == "kind" || key == "clock_start_nanos" {
            continue;
        }
        let secs = val.get("seconds").and_then(Value::as_u64);
        let int = val.as_i64();
        b = match (key.as_str(), int, secs) {
            ("limit_for_period", Some(n), _) => b.limit_for_period(n),
            ("permit_capacity", Some(n), _) => b.permit_capacity(n),
            ("initial_permits", Some(n), _) => b.initial_permits(n),
            ("limit_refresh_period_nanos", Some(n), _) => b.limit_refresh_period_nanos(n),
            ("limit_refresh_period_nanos", None, Some(s)) => {
                b.limit_refresh_period(Duration::from_secs(s))
            }
            ("timeout_nanos", Some(n), _) => b.timeout_nanos(n),
            ("timeout_nanos", None, Some(s)) => b.timeout(Duration::from_secs(s)),
            _ => return Err(format!("cannot apply builder field {key} = {val}")),
        };
    }
    Ok(b)
}

fn replay_r4j_refill(v: &Value) -> Result<(), String> {
    let spec = &v["limiter"];
    let clock = ManualClock::new(spec.get("clock_start_nanos").map_or(0, u64_of));
    let config = r4j_builder(spec)?
        .build()
        .map_err(|e| format!("limiter {spec}: {e}"))?;
    if let Some(d) = spec.get("derived") {
        check_fields(
            0,
            "derived",
            d.as_object().ok_or("derived is not an object")?,
            &[
                ("nanos_per_permit", config.nanos_per_permit().into()),
                ("capacity", config.capacity().into()),
                ("initial_permits", config.initial_permits().into()),
            ],
        )?;
    }
    let limiter = RefillLimiter::new_with_clock("vector", config, clock.clone());
    replay_r4j_steps(v, &limiter, &clock)
}

fn replay_r4j_cycle(v: &Value) -> Result<(), String> {
    let spec = &v["limiter"];
    let clock = ManualClock::new(spec.get("clock_start_nanos").map_or(0, u64_of));
    let config = r4j_builder(spec)?
        .build_cycle()
        .map_err(|e| format!("limiter {spec}: {e}"))?;
    let limiter = CycleLimiter::new_with_clock("vector", config, clock.clone());
    replay_r4j_steps(v, &limiter, &clock)
}

/// A caller of a vector: parked on the virtual clock until its deadline, or
/// done.
struct Caller<'a> {
    pending: Option<PendingPermission<'a>>,
    /// The value the step expects it to return when its park ends.
    expect: Option<bool>,
    /// The step that started it.
    step: usize,
    /// `(returned, interrupted)` once done.
    done: Option<(bool, bool)>,
}

/// Ends every parked caller whose deadline has come, in deadline order.
fn settle_callers(callers: &mut BTreeMap<String, Caller<'_>>, now: u64) -> Result<(), String> {
    let mut due: Vec<(u64, String)> = callers
        .iter()
        .filter_map(|(id, c)| {
            c.pending
                .as_ref()
                .filter(|p| p.ready_at_nanos() <= now)
                .map(|p| (p.ready_at_nanos(), id.clone()))
        })
        .collect();
    due.sort();
    for (_, id) in due {
        let c = callers.get_mut(&id).expect("caller listed above");
        let returned = c.pending.take().expect("parked caller").finish();
        if let Some(want) = c.expect.filter(|w| *w != returned) {
            return Err(format!(
                "caller {id} (started at step {}) returned {returned}, expected {want}",
                c.step
            ));
        }
        c.done = Some((returned, false));
    }
    Ok(())
}

/// A step's optional boolean field; present but not a boolean is an error.
fn opt_bool(i: usize, step: &Value, key: &str) -> Result<Option<bool>, String> {
    match step.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_bool()
            .map(Some)
            .ok_or_else(|| format!("step {i}: {key} = {v} is not a boolean")),
    }
}

fn expect_i64(i: usize, op: &str, step: &Value, got: i64) -> Result<(), String> {
    let want = req_i64(i, step, "expect")?;
    if want != got {
        return Err(format!("step {i} ({op}): expected {want}, got {got}"));
    }
    Ok(())
}

/// Checks a call that failed: the step must expect exactly this error kind.
fn expect_r4j_error(i: usize, op: &str, step: &Value, kind: &str) -> Result<(), String> {
    match step["expect_error"].as_str() {
        Some(want) if want == kind => Ok(()),
        Some(want) => Err(format!(
            "step {i} ({op}): expected error {want}, got {kind}"
        )),
        None => Err(format!("step {i} ({op}): unexpected error {kind}")),
    }
}

fn no_error_expected(i: usize, op: &str, step: &Value) -> Result<(), String> {
    match step.get("expect_error") {
        Some(want) => Err(format!(
            "step {i} ({op}): expected error {want}, got success"
        )),
        None => Ok(()),
    }
}

/// Replays a limiter vector's steps against `limiter` (either kind).
fn replay_r4j_steps<L: PermitLimiter>(
    v: &Value,
    limiter: &L,
    clock: &ManualClock,
) -> Result<(), String> {
    type Log = std::sync::Arc<std::sync::Mutex<Vec<(String, u64)>>>;
    let log: Option<Log> = (v["record_events"] == Value::Bool(true)).then(|| {
        let log = Log::default();
        let sink = log.clone();
        limiter.events().on_event(move |e: &PermitEvent| {
            sink.lock()
                .unwrap()
                .push((e.kind().as_str().to_owned(), e.permits()))
        });
        log
    });
    let mut callers: BTreeMap<String, Caller<'_>> = BTreeMap::new();
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        let op = step["op"].as_str().unwrap_or("");
        let timeout_matches = |i: usize| -> Result<(), String> {
            if let Some(t) = step.get("timeout_nanos") {
                let configured = limiter.config_view().timeout.as_nanos();
                if i128::from(req_i64(i, step, "timeout_nanos")?) != configured as i128 {
                    return Err(format!(
                        "step {i} ({op}): timeout_nanos {t} differs from the configured {configured}"
                    ));
                }
            }
            Ok(())
        };
        match op {
            "set_time" => {
                let to = u64_of(&step["nanos"]);
                if to < clock.now_nanos() {
                    return Err(format!("step {i}: set_time {to} would move the clock back"));
                }
                clock.set_nanos(to);
            }
            "advance_nanos" => clock.advance_nanos(u64_of(&step["nanos"])),
            "acquire" => {
                timeout_matches(i)?;
                let permits = r4j_permits(i, step)?;
                let caller = step["caller"].as_str();
                let pending = match limiter.begin_acquire_permission(permits) {
                    Err(e) => {
                        expect_r4j_error(i, op, step, permit_error_kind(e))?;
                        continue;
                    }
                    Ok(p) => p,
                };
                no_error_expected(i, op, step)?;
                let parked = pending.delay().as_nanos() as u64;
                let want_parked = req_i64(i, step, "expect_parked_nanos")?;
                if i128::from(parked) != i128::from(want_parked) {
                    return Err(format!(
                        "step {i} ({op} {permits}): parks {parked} ns, expected {want_parked}"
                    ));
                }
                let want = opt_bool(i, step, "expect")?
                    .ok_or_else(|| format!("step {i} ({op}): no expect"))?;
                match caller {
                    None if parked > 0 => {
                        return Err(format!("step {i}: a step without a caller must not park"))
                    }
                    None => {
                        let got = pending.finish();
                        if want != got {
                            return Err(format!(
                                "step {i} ({op} {permits}): returned {got}, expected {want}"
                            ));
                        }
                    }
                    Some(id) => {
                        let mut c = Caller {
                            pending: None,
                            expect: Some(want),
                            step: i,
                            done: None,
                        };
                        if pending.is_granted() {
                            c.pending = Some(pending);
                        } else {
                            // Refused: fails fast, done at call time.
                            let got = pending.finish();
                            if want != got {
                                return Err(format!(
                                    "step {i} ({op} {permits}): caller {id} returned {got}, expected {want}"
                                ));
                            }
                            c.done = Some((got, false));
                        }
                        if callers.insert(id.to_owned(), c).is_some() {
                            return Err(format!("step {i}: caller {id} started twice"));
                        }
                    }
                }
            }
            "reserve" => {
                timeout_matches(i)?;
                let permits = r4j_permits(i, step)?;
                match limiter.reserve_permission(permits) {
                    Err(e) => expect_r4j_error(i, op, step, permit_error_kind(e))?,
                    Ok(p) => {
                        no_error_expected(i, op, step)?;
                        let want = req_i64(i, step, "expect_nanos_to_wait")?;
                        if p.nanos_to_wait() != want {
                            return Err(format!(
                                "step {i} (reserve {permits}): returned {} ({p:?}), expected {want}",
                                p.nanos_to_wait()
                            ));
                        }
                    }
                }
            }
            "drain" => {
                limiter.drain_permissions();
            }
            "change_limit_for_period" => {
                let limit = req_i64(i, step, "limit")?;
                let before = limiter.config_view();
                match limiter.change_limit_for_period(limit) {
                    Ok(()) => no_error_expected(i, op, step)?,
                    Err(e) => {
                        expect_r4j_error(i, op, step, config_error_kind(e))?;
                        if limiter.config_view() != before {
                            return Err(format!("step {i} ({op}): refused but changed the config"));
                        }
                    }
                }
            }
            "change_timeout" => {
                let t = req_i64(i, step, "timeout_nanos")?;
                let before = limiter.config_view();
                match limiter.change_timeout_nanos(t) {
                    Ok(()) => no_error_expected(i, op, step)?,
                    Err(e) => {
                        expect_r4j_error(i, op, step, config_error_kind(e))?;
                        if limiter.config_view() != before {
                            return Err(format!("step {i} ({op}): refused but changed the config"));
                        }
                    }
                }
            }
            "on_result" => {
                let drain = opt_bool(i, step, "drain_predicate")?
                    .ok_or_else(|| format!("step {i}: no drain_predicate"))?;
                let finished: Result<(), ()> = Ok(());
                let drained = limiter.on_result(&finished, |_| drain);
                if drained.is_some() != drain {
                    return Err(format!("step {i} ({op} {drain}): drained {drained:?}"));
                }
            }
            "interrupt" => {
                let id = step["caller"].as_str().unwrap_or("");
                let c = callers
                    .get_mut(id)
                    .ok_or_else(|| format!("step {i}: no caller {id}"))?;
                let p = c
                    .pending
                    .take()
                    .ok_or_else(|| format!("step {i}: caller {id} is not parked"))?;
                c.done = Some((p.abandon(), true));
            }
            "expect_available_permissions" => {
                expect_i64(i, op, step, limiter.metrics().available_permissions)?
            }
            "expect_nanos_to_wait" => {
                let got = limiter.metrics().nanos_to_wait;
                let got = i64::try_from(got).map_err(|_| format!("step {i}: wait {got}"))?;
                expect_i64(i, op, step, got)?
            }
            "expect_waiting_threads" => {
                expect_i64(i, op, step, limiter.metrics().waiting_threads as i64)?
            }
            "expect_cycle" => {
                let cycle = limiter
                    .metrics()
                    .cycle
                    .ok_or_else(|| format!("step {i}: this limiter has no cycle"))?;
                expect_i64(i, op, step, cycle as i64)?
            }
            "expect_caller" => {
                let id = step["caller"].as_str().unwrap_or("");
                let c = callers
                    .get(id)
                    .ok_or_else(|| format!("step {i}: no caller {id}"))?;
                let want_done = opt_bool(i, step, "expect_done")?.unwrap_or(true);
                match (c.done, want_done) {
                    (None, false) => {}
                    (Some(_), false) => {
                        return Err(format!("step {i}: caller {id} is done, expected parked"))
                    }
                    (None, true) => return Err(format!("step {i}: caller {id} is still parked")),
                    (Some((returned, interrupted)), true) => {
                        let want = opt_bool(i, step, "expect")?;
                        let want_int = opt_bool(i, step, "expect_interrupted")?;
                        if want.is_some_and(|w| w != returned)
                            || want_int.is_some_and(|w| w != interrupted)
                        {
                            return Err(format!(
                                "step {i}: caller {id} returned {returned} (interrupted {interrupted}), \
                                 expected {want:?} (interrupted {want_int:?})"
                            ));
                        }
                    }
                }
            }
            "expect_config" => {
                let view = limiter.config_view();
                let e = expect_of(step).ok_or_else(|| format!("step {i}: no expect object"))?;
                check_fields(
                    i,
                    op,
                    e,
                    &[
                        ("limit_for_period", view.limit_for_period.into()),
                        (
                            "limit_refresh_period_nanos",
                            (view.limit_refresh_period.as_nanos() as u64).into(),
                        ),
                        ("timeout_nanos", (view.timeout.as_nanos() as u64).into()),
                    ],
                )?;
            }
            "expect_events" => {
                let log = log
                    .as_ref()
                    .ok_or_else(|| format!("step {i}: events checked but not recorded"))?;
                let got: Vec<(String, u64)> = std::mem::take(&mut *log.lock().unwrap());
                let want: Vec<(String, u64)> = step["expect"]
                    .as_array()
                    .ok_or_else(|| format!("step {i}: expect is not a list"))?
                    .iter()
                    .map(|e| match (e["type"].as_str(), e["permits"].as_u64()) {
                        (Some(t), Some(n)) => Ok((t.to_owned(), n)),
                        _ => Err(format!("step {i}: malformed event {e}")),
                    })
                    .collect::<Result<_, _>>()?;
                if got != want {
                    return Err(format!("step {i} ({op}): expected {want:?}, got {got:?}"));
                }
            }
            other => return Err(format!("step {i}: unknown op {other:?}")),
        }
        settle_callers(&mut callers, clock.now_nanos()).map_err(|e| format!("step {i}: {e}"))?;
    }
    Ok(())
}

/// A `config` vector: the builder must validate as the primary `expect`
/// says, `{ok, derived}` or `{error}`.
fn replay_r4j_config(v: &Value) -> Result<(), String> {
    let builder = r4j_builder(&v["builder"])?;
    let expect = &v["expect"];
    let (result, derived): (Result<(), ConfigError>, Vec<(&str, Value)>) =
        match v["target"].as_str() {
            Some("refill") => match builder.build() {
                Ok(c) => {
                    let view = c.view();
                    (
                        Ok(()),
                        vec![
                            ("nanos_per_permit", c.nanos_per_permit().into()),
                            ("capacity", c.capacity().into()),
                            ("initial_permits", c.initial_permits().into()),
                            (
                                "nanos_per_full_capacity",
                                c.nanos_per_full_capacity().into(),
                            ),
                            ("view", view_json(view)),
                        ],
                    )
                }
                Err(e) => (Err(e), vec![]),
            },
            Some("atomic") => match builder.build_cycle() {
                Ok(c) => (Ok(()), vec![("view", view_json(c.view()))]),
                Err(e) => (Err(e), vec![]),
            },
            other => return Err(format!("unknown target {other:?}")),
        };
    match (result, expect["error"].as_str()) {
        (Ok(()), None) => {
            let want = expect["derived"]
                .as_object()
                .ok_or("expect has neither error nor derived")?;
            check_fields(0, "build", want, &derived)
        }
        (Ok(()), Some(want)) => Err(format!("expected error {want}, built {derived:?}")),
        (Err(e), Some(want)) if config_error_kind(e) == want => Ok(()),
        (Err(e), want) => Err(format!(
            "expected {}, got error {} ({e})",
            want.unwrap_or("ok"),
            config_error_kind(e)
        )),
    }
}

fn view_json(view: ratekeeper::refill::ConfigView) -> Value {
    serde_json::json!({
        "limit_for_period": view.limit_for_period,
        "limit_refresh_period_nanos": view.limit_refresh_period.as_nanos() as u64,
        "timeout_nanos": view.timeout.as_nanos() as u64,
    })
}
