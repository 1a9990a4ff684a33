//! The grammar itself: splitting a spec into fields, nosqlbench's count
//! format for the rate, the burst-ratio number, and the words.

use core::fmt;
use std::borrow::Cow;

use super::error::{SpecError, SpecErrorKind};
use super::words::{Scope, Verb};
use super::{BurstRatio, RateSpec};
use crate::rate::{Rate, RateError};

/// The most fields a spec may have: rate, burst ratio, verb and scope.
const MAX_FIELDS: usize = 4;

/// The field separators.
const SEPARATORS: [char; 3] = [',', ':', ';'];

/// [`RateSpec::from_str`](core::str::FromStr::from_str): checks in the
/// order `docs/spec.md` ("Errors") gives. O(`s.len()`).
pub(super) fn parse_spec(s: &str) -> Result<RateSpec, SpecError> {
    let (fields, count) = split(s.split(SEPARATORS))?;
    let fields = &fields[..count];

    // Empty fields: the rate first (this covers empty input), then the rest.
    if fields[0].is_empty() {
        return Err(SpecError::at(SpecErrorKind::UnparsableRate, 1, ""));
    }
    check_empty(fields)?;

    // Field 1: the rate.
    let value = parse_rate_number(fields[0]).map_err(|kind| SpecError::at(kind, 1, fields[0]))?;
    let rate = Rate::checked(value).map_err(|e| {
        let kind = match e {
            RateError::NotFinite(_) => SpecErrorKind::RateNotFinite,
            _ => SpecErrorKind::RateNotPositive,
        };
        SpecError::at(kind, 1, fields[0])
    })?;
    after_rate(RateSpec::new(rate), fields)
}

/// [`RateSpec::parse_after_rate`]: `rest` holds fields 2 onwards.
pub(super) fn parse_after_rate(rate: Rate, rest: &str) -> Result<RateSpec, SpecError> {
    // Field 1, the rate, is given: a stand-in keeps the numbering.
    let (fields, count) = split(core::iter::once("").chain(rest.split(SEPARATORS)))?;
    let fields = &fields[..count];
    check_empty(fields)?;
    after_rate(RateSpec::new(rate), fields)
}

/// The fields, checking their count before anything else.
fn split<'a>(
    fields: impl Iterator<Item = &'a str>,
) -> Result<([&'a str; MAX_FIELDS], usize), SpecError> {
    let mut all = [""; MAX_FIELDS];
    let mut count = 0;
    for (i, field) in fields.enumerate() {
        if i == MAX_FIELDS {
            return Err(SpecError::at(SpecErrorKind::TooManyFields, i + 1, field));
        }
        all[i] = field;
        count = i + 1;
    }
    Ok((all, count))
}

/// The first empty field after the rate, if any.
fn check_empty(fields: &[&str]) -> Result<(), SpecError> {
    match fields.iter().skip(1).position(|f| f.is_empty()) {
        Some(i) => Err(SpecError::at(SpecErrorKind::EmptyField, i + 2, "")),
        None => Ok(()),
    }
}

/// Fields 2 onwards of `fields` applied to `spec`: the burst ratio if
/// field 2 is a number, then the words.
fn after_rate(mut spec: RateSpec, fields: &[&str]) -> Result<RateSpec, SpecError> {
    // Field 2: the burst ratio, if it looks like a number.
    let mut first_word = 1;
    if let Some(field) = fields.get(1) {
        if let Some(burst) = parse_burst_number(field) {
            let burst = BurstRatio::new(burst).map_err(|e| SpecError::at(e.kind(), 2, field))?;
            spec = spec.with_burst(burst);
            first_word = 2;
        }
    }

    // The remaining fields: verb and scope words, in any order, once each.
    let (mut verb, mut scope) = (None, None);
    for (i, word) in fields.iter().enumerate().skip(first_word) {
        let duplicate = if let Some(v) = Verb::from_word(word) {
            verb.replace(v).is_some()
        } else if let Some(s) = Scope::from_word(word) {
            scope.replace(s).is_some()
        } else {
            return Err(SpecError::at(SpecErrorKind::UnknownWord, i + 1, word));
        };
        if duplicate {
            return Err(SpecError::at(SpecErrorKind::DuplicateWord, i + 1, word));
        }
    }
    Ok(spec
        .with_verb(verb.unwrap_or_default())
        .with_scope(scope.unwrap_or_default()))
}

/// Field 2 as a burst ratio: after trimming characters <= U+0020 (Java's
/// `String.trim`), `[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?` parsed correctly
/// rounded, or `[+-]?(NaN|Infinity)`. `None` if the field is not a number (it is
/// then a word).
fn parse_burst_number(field: &str) -> Option<f64> {
    let t = field.trim_matches(|c: char| c <= ' ');
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    match unsigned {
        "NaN" => return Some(f64::NAN),
        "Infinity" => return Some(f64::INFINITY),
        _ => {}
    }
    let b = unsigned.as_bytes();
    let mut i = digits_end(b, 0);
    let int_digits = i;
    if b.get(i) == Some(&b'.') {
        i = digits_end(b, i + 1);
    }
    // At least one digit before the exponent: `\d+\.?\d*` or `\.\d+`.
    if int_digits == 0 && i < 2 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let end = digits_end(b, j);
        if end == j {
            return None;
        }
        i = end;
    }
    if i != b.len() {
        return None;
    }
    // The text is now known to be in Rust's float grammar as well.
    t.parse().ok()
}

/// The end of the run of ASCII digits in `b` that starts at `start`.
fn digits_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// nosqlbench's `Unit.doubleCountFor`: power form first, then the count.
fn parse_rate_number(field: &str) -> Result<f64, SpecErrorKind> {
    parse_count(&expand_power(field))
}

/// Java regex line terminators, which `.` does not match.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The power form of nosqlbench's `numberExponentPattern`,
/// ` *(?<pre>.*?)?(?<number>([0-9]+)(\.[0-9]+)?+)\^(?<exponent>[0-9]+)(?<post>.*?)?`:
/// if the whole field matches, it becomes `pre + Double.toString(pow) + post`.
fn expand_power(field: &str) -> Cow<'_, str> {
    // Java's `.` does not match line terminators, so `pre` and `post` cannot
    // hold one and the pattern does not match at all.
    if field.chars().any(is_line_terminator) {
        return Cow::Borrowed(field);
    }
    let b = field.as_bytes();
    // The shortest `pre`: the first start position whose digits (all of the
    // run, since a shorter run would be followed by a digit, not `.` or `^`),
    // optional fraction, `^` and exponent digits match.
    let mut start = 0;
    while start < b.len() {
        if !b[start].is_ascii_digit() {
            start += 1;
            continue;
        }
        let mut i = digits_end(b, start);
        let run_end = i;
        if b.get(i) == Some(&b'.') {
            let frac_end = digits_end(b, i + 1);
            if frac_end > i + 1 {
                i = frac_end;
            }
        }
        if b.get(i) == Some(&b'^') {
            let exp_start = i + 1;
            let exp_end = digits_end(b, exp_start);
            if exp_end > exp_start {
                // All indices sit next to ASCII bytes, so they are char boundaries.
                let value = java_pow(&field[start..i], &field[exp_start..exp_end]);
                let mut out = String::with_capacity(field.len() + 24);
                out.push_str(&field[..start]);
                push_java_double(&mut out, value);
                out.push_str(&field[exp_end..]);
                return Cow::Owned(out);
            }
        }
        // Positions inside this digit run end at the same place and fail the
        // same way.
        start = run_end;
    }
    Cow::Borrowed(field)
}

/// `Math.pow(Double.valueOf(base), Double.valueOf(exponent))` for digit strings.
fn java_pow(base: &str, exponent: &str) -> f64 {
    // Both are ASCII digit strings (with at most one '.'), which always parse.
    let base: f64 = base.parse().unwrap_or(f64::NAN);
    let exponent: f64 = exponent.parse().unwrap_or(f64::NAN);
    // Java: |base| == 1 with an infinite exponent is NaN; C's pow gives 1.
    if base == 1.0 && exponent.is_infinite() {
        return f64::NAN;
    }
    base.powf(exponent)
}

/// Appends Java's `Double.toString(v)` (same value; the digits are Rust's
/// shortest, as in Java 19 and later): `NaN`, `Infinity`, a plain decimal with
/// at least one fraction digit for 1e-3 <= |v| < 1e7, otherwise `d.dddE<n>`.
pub(super) fn push_java_double(out: &mut String, v: f64) {
    use fmt::Write;
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
    } else if (1e-3..1e7).contains(&v.abs()) {
        let start = out.len();
        let _ = write!(out, "{v}");
        if !out[start..].contains('.') {
            out.push_str(".0");
        }
    } else {
        let s = format!("{v:E}");
        match s.split_once('E') {
            Some((mantissa, exp)) if !mantissa.contains('.') => {
                let _ = write!(out, "{mantissa}.0E{exp}");
            }
            _ => out.push_str(&s),
        }
    }
}

/// nosqlbench's `numberFmtPattern`,
/// ` *(?<number>[0-9]+(\.[0-9]+)?(E[0-9]+)?) *(?<unit>[^ ]+?)? *`, then the
/// count suffix.
fn parse_count(s: &str) -> Result<f64, SpecErrorKind> {
    let b = s.as_bytes();
    let skip_spaces = |mut i: usize| {
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
        i
    };

    let num_start = skip_spaces(0);
    let mut i = digits_end(b, num_start);
    if i == num_start {
        return Err(SpecErrorKind::UnparsableRate);
    }
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits_end(b, i + 1);
    }
    if b.get(i) == Some(&b'E') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits_end(b, i + 1);
    }
    let num_end = i;

    // The unit is one run of non-spaces; only spaces may follow it. (A shorter
    // number cannot help: it only lengthens the first run.)
    let unit_start = skip_spaces(num_end);
    let mut unit_end = unit_start;
    while b.get(unit_end).is_some_and(|&c| c != b' ') {
        unit_end += 1;
    }
    if skip_spaces(unit_end) != b.len() {
        return Err(SpecErrorKind::UnparsableRate);
    }

    // Digits, optional fraction, optional unsigned exponent: valid for Rust.
    let number: f64 = s[num_start..num_end]
        .parse()
        .map_err(|_| SpecErrorKind::UnparsableRate)?;
    // `unit_start` and `unit_end` sit next to spaces or the ends of the string.
    let unit = &s[unit_start..unit_end];
    if unit.is_empty() {
        return Ok(number);
    }
    count_multiplier(unit)
        .map(|m| number * m)
        .ok_or(SpecErrorKind::UnknownUnit)
}

/// nosqlbench's `Unit.Count` suffixes: label, name or enum name, any case.
fn count_multiplier(unit: &str) -> Option<f64> {
    const COUNTS: [(&str, &str, f64); 8] = [
        ("u", "unit", 1.0),
        ("k", "kilo", 1e3),
        ("m", "mega", 1e6),
        ("b", "billion", 1e9),
        ("g", "giga", 1e9),
        ("t", "tera", 1e12),
        ("p", "peta", 1e15),
        ("e", "exa", 1e18),
    ];
    COUNTS
        .iter()
        .find(|(label, name, _)| {
            unit.eq_ignore_ascii_case(label) || unit.eq_ignore_ascii_case(name)
        })
        .map(|&(_, _, multiplier)| multiplier)
}

impl std::str::FromStr for Verb {
    type Err = SpecError;

    /// Reads a verb word, ASCII case-insensitively, untrimmed.
    /// [`SpecErrorKind::UnknownWord`] (no field number) otherwise.
    fn from_str(s: &str) -> Result<Verb, SpecError> {
        Verb::from_word(s).ok_or_else(|| SpecError::new(SpecErrorKind::UnknownWord, None, s))
    }
}

impl std::str::FromStr for Scope {
    type Err = SpecError;

    /// Reads a scope word as verbs are read, with the same error.
    fn from_str(s: &str) -> Result<Scope, SpecError> {
        Scope::from_word(s).ok_or_else(|| SpecError::new(SpecErrorKind::UnknownWord, None, s))
    }
}
