//! The `guava-ratelimiter-vectors/*` format: Guava's `SmoothBursty` and
//! `SmoothWarmingUp`.

use std::collections::BTreeMap;

use ratekeeper::smooth::compat::{GuavaTimeouts, GuavaWarmup};
use ratekeeper::{
    AcquireError, Clock, ConfigReason, Grant, ManualClock, RateLimiter, SmoothBursty,
    SmoothWarmingUp,
};
use serde_json::Value;

use crate::{f64_of, reference_only_fields, u64_of, Tally};

/// The documented deviation replayed without an alternative expectation.
const WARMUP_ZERO: &str = "Guava warm-up period 0: Guava's stored permits turn NaN and it stops \
                           throttling after idle time (specs/guava_go.md §2.10); ratekeeper \
                           keeps the stable rate with no stored permits";

/// Replays a `guava-ratelimiter-vectors/*` file (specs/guava_go.md §1.1):
/// `vectors` and `supplementary_vectors` step by step, `validation_vectors`
/// case by case.
pub(crate) fn replay_file(name: &str, doc: &Value, tally: &mut Tally) {
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
                GuavaWarmup::warmup_micros(SmoothWarmingUp::builder(rate), warmup)
                    .cold_factor(cold)
                    .build_with_clock(clock.clone())
                    .map(Smooth::WarmingUp)
                    .map_err(|e| format!("creating {spec}: {e:?}"))
            }
            other => Err(format!("unknown limiter kind {other:?}")),
        }
    }

    fn set_rate(&self, permits_per_second: f64) -> Result<(), ConfigReason> {
        match self {
            Smooth::Bursty(l) => l.set_rate(permits_per_second),
            Smooth::WarmingUp(l) => l.set_rate(permits_per_second),
        }
        .map_err(|e| e.reason())
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
            Smooth::Bursty(l) => GuavaTimeouts::try_acquire_micros(l, permits, timeout_micros),
            Smooth::WarmingUp(l) => GuavaTimeouts::try_acquire_micros(l, permits, timeout_micros),
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
                    (Err(ConfigReason::RateNotPositive), Some(_)) => {
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
                                    "{w} (ConfigReason::RateNotPositive)"
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
    Smooth(ConfigReason),
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
                    .map_err(|e| Caught::Smooth(e.reason()));
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
                let out = GuavaWarmup::warmup_micros(SmoothWarmingUp::builder(r), micros)
                    .build_with_clock(clock)
                    .map(drop)
                    .map_err(|e| Caught::Smooth(e.reason()));
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
                    Caught::Smooth(ConfigReason::RateNotPositive) => "Rate",
                    Caught::Smooth(ConfigReason::WarmUpNegative) => "WarmupNegative",
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
