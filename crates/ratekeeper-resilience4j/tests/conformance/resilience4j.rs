//! The `refill-r4j-ratelimiter-vectors/2` format: the refill and cycle
//! limiters and their configuration.

use std::collections::BTreeMap;
use std::time::Duration;

use ratekeeper::{Clock, ConfigError, ManualClock};
use ratekeeper_resilience4j::{
    compat, ConfigBuilder, PendingPermission, PermitError, PermitEvent, PermitLimiter, View,
};
use ratekeeper_resilience4j::{CycleLimiter, RefillLimiter};
use serde_json::Value;

use crate::{check_fields, expect_of, reference_only_fields, u64_of, Tally};

/// Replays a `refill-r4j-ratelimiter-vectors/2` file (specs/resilience4j_refill_bucket4j.md
/// §3): families `refill` (the [`RefillLimiter`], primary = the strict
/// bucket), `atomic_cycle` (the [`CycleLimiter`], primary = the fixed
/// `AtomicRateLimiter`) and `config` (validation). Format /2's primary set
/// fails fast on a refused acquire, as ratekeeper does. Every `upstream*`
/// value (the reference's behaviour where it differs) is reported as a note.
pub(crate) fn replay_file(name: &str, doc: &Value, tally: &mut Tally) {
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

/// The vectors' name for a refusal: its reason's stable name.
fn config_error_kind(e: &ConfigError) -> &'static str {
    e.reason().as_str()
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
                match compat::change_limit_for_period(limiter, limit) {
                    Ok(()) => no_error_expected(i, op, step)?,
                    Err(e) => {
                        expect_r4j_error(i, op, step, config_error_kind(&e))?;
                        if limiter.config_view() != before {
                            return Err(format!("step {i} ({op}): refused but changed the config"));
                        }
                    }
                }
            }
            "change_timeout" => {
                let t = req_i64(i, step, "timeout_nanos")?;
                let before = limiter.config_view();
                match compat::change_timeout_nanos(limiter, t) {
                    Ok(()) => no_error_expected(i, op, step)?,
                    Err(e) => {
                        expect_r4j_error(i, op, step, config_error_kind(&e))?;
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
    match (&result, expect["error"].as_str()) {
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

fn view_json(view: ratekeeper_resilience4j::ConfigView) -> Value {
    serde_json::json!({
        "limit_for_period": view.limit_for_period,
        "limit_refresh_period_nanos": view.limit_refresh_period.as_nanos() as u64,
        "timeout_nanos": view.timeout.as_nanos() as u64,
    })
}
