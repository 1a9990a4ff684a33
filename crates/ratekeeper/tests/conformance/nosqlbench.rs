//! The `nosqlbench-ratelimiter-vectors/*` format: the Pacer's
//! `cas_accumulator`, `dual_timeline` and `strictness_shift` families, the
//! rate spec grammar (`rate_spec`) and the G2 token pool (`token_pool`).

use ratekeeper::pacer::compensation_shift;
use ratekeeper::{Clock, ConfigError, ManualClock, Pacer, Pools, Rate, RateLimiter, RateSpec};
use serde_json::Value;

use crate::{check_fields, expect_of, f64_of, u64_of, Tally};

pub(crate) fn replay_file(name: &str, doc: &Value, tally: &mut Tally) {
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

/// The vectors' name of a refusal: the reason's own stable name.
fn error_kind(e: &ConfigError) -> &'static str {
    e.reason().as_str()
}

fn replay_strictness(v: &Value) -> Result<(), String> {
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        let ratio = f64_of(&step["ratio"]);
        let expect = expect_of(step).ok_or_else(|| format!("step {i}: no expect"))?;
        let got: Vec<(&str, Value)> = match compensation_shift(ratio) {
            Ok(shift) => vec![("shift", shift.into())],
            Err(e) => vec![("error", error_kind(&e).into())],
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

/// Pools sized for a step's (or config's) `rate` and `burst_ratio`.
fn pools_for(obj: &Value) -> Result<Pools, ConfigError> {
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
    err: ConfigError,
    changed: bool,
) -> Result<(), String> {
    let Some(e) = expect_of(step) else {
        return Err(format!("step {step_no} ({op}): unexpected error: {err}"));
    };
    if !e.contains_key("error") {
        return Err(format!("step {step_no} ({op}): unexpected error: {err}"));
    }
    check_fields(step_no, op, e, &[("error", error_kind(&err).into())])?;
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
