//! `--rate`: the rate people type, in front of the library's rate spec.
//!
//! The library reads nosqlbench's rate spec exactly (`10K,1.1,restart`),
//! count suffixes and all. Typed on a command line that grammar has traps:
//! `1e6` is refused (an unknown suffix) while `1E6` is a million, `1e` alone
//! is exa, `1m` is a million per second rather than one per minute, and
//! `100B` is a hundred billion rather than a hundred bytes. The command line
//! reads the first field (the rate) itself, into a [`Rate`], and hands the
//! library that rate with the fields after it:
//!
//! * numbers in decimal or scientific notation, either case: `250`, `2.5`,
//!   `1e6`, `1E6`, `2.5e-3`;
//! * a count suffix `k`/`K` (10^3), `M` (10^6) or `G` (10^9);
//! * a unit of time after a slash: `N/s`, `N/min` (also `N/m`), `N/h`,
//!   `N/ms`, `N/d`;
//! * with `pipe --bytes`, byte units: decimal `kB`/`KB`, `MB`, `GB` and binary
//!   `KiB`, `MiB`, `GiB` (`1MiB` is 1 048 576 bytes a second, as `pv -L 1M`).
//!
//! Refused, each with a message that says what to write instead: a lowercase
//! `m` suffix (`1M` or `1/m`?), `B` as billion (`1G`, or bytes with
//! `pipe --bytes`), a bare `K`/`M`/`G` under `--bytes` (`MB` or `MiB`?), and
//! any other suffix. The fields after the rate (burst ratio, verb, scope) are
//! the library's.

use ratekeeper::{Rate, RateSpec, SpecErrorKind};

/// What a rate counts: operations (lines, runs) or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Operations per unit of time; count suffixes k, M, G.
    Ops,
    /// Bytes per unit of time (`pipe --bytes`); byte units kB..GiB.
    Bytes,
}

/// Parses a rate spec whose first field is read as described in the
/// [module docs](self), and whose rate a nanosecond schedule can keep: the
/// rate is read here, once, into a [`Rate`], and the library reads the
/// fields after it ([`spec_after_rate`]).
///
/// # Errors
///
/// A message naming the refused field and what to write instead.
pub fn parse_rate_spec(s: &str, counting: Counting) -> Result<RateSpec, String> {
    let (first, rest) = match s.split_once(',') {
        Some((first, rest)) => (first, Some(rest)),
        None => (s, None),
    };
    let per_second = parse_rate(first, counting)?;
    let rate = Rate::new(per_second).map_err(|e| format!("{e} (from \"{}\")", first.trim()))?;
    rate.nanos_per_op().map_err(|e| e.to_string())?;
    spec_after_rate(rate, rest)
}

/// The spec at `rate`, already read, with the fields that followed it on
/// the command line (`rest`, after the first comma: burst ratio, verb,
/// scope) read by the library's grammar ([`RateSpec::parse_after_rate`]).
///
/// # Errors
///
/// The library's message for a refused field; for a burst ratio below 1,
/// with the flag that takes one.
pub fn spec_after_rate(rate: Rate, rest: Option<&str>) -> Result<RateSpec, String> {
    let Some(rest) = rest else {
        return Ok(RateSpec::new(rate));
    };
    RateSpec::parse_after_rate(rate, rest).map_err(|e| {
        if e.kind() == SpecErrorKind::BurstBelowOne {
            format!(
                "{e}; for a strictness below 1 (average or burst compensation) use \
                 --strictness (Pacer only)"
            )
        } else {
            e.to_string()
        }
    })
}

/// `--rate` for operations: [`parse_rate_spec`] with [`Counting::Ops`].
///
/// # Errors
///
/// As [`parse_rate_spec`].
pub fn parse_ops_spec(s: &str) -> Result<RateSpec, String> {
    parse_rate_spec(s, Counting::Ops)
}

/// The rate field alone, in units per second.
///
/// # Errors
///
/// A message for a missing or malformed number, an unknown or ambiguous
/// suffix, or an unknown unit of time.
pub fn parse_rate(field: &str, counting: Counting) -> Result<f64, String> {
    let field = field.trim();
    let (amount, per) = match field.split_once('/') {
        Some((amount, unit)) => (amount.trim(), seconds_per(unit.trim())?),
        None => (field, 1.0),
    };
    let (number, suffix) = split_number(amount).ok_or_else(|| {
        format!(
            "\"{field}\" is not a rate; expected a number such as 250, 1e6, 10k or 100/min{}",
            if counting == Counting::Bytes {
                ", or bytes such as 512KiB or 1MB"
            } else {
                ""
            }
        )
    })?;
    let multiplier = match counting {
        Counting::Ops => count_multiplier(suffix.trim(), number, per)?,
        Counting::Bytes => byte_multiplier(suffix.trim(), number)?,
    };
    Ok(number * multiplier / per)
}

/// The leading number (`[+-]digits[.digits][e[+-]digits]`) and what follows.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let bytes = s.as_bytes();
    let mut end = 0;
    let digits = |from: usize| {
        from + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    let int_end = digits(end);
    end = int_end;
    if bytes.get(end) == Some(&b'.') {
        end = digits(end + 1);
    }
    if end == 0 || !bytes[..end].iter().any(u8::is_ascii_digit) {
        return None;
    }
    // An exponent only where digits follow the `e`: `1e` and `1E` are a
    // number and a (refused) suffix, never exa.
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exp = end + 1;
        if matches!(bytes.get(exp), Some(b'+' | b'-')) {
            exp += 1;
        }
        let exp_end = digits(exp);
        if exp_end > exp {
            end = exp_end;
        }
    }
    let number = s[..end].parse::<f64>().ok()?;
    Some((number, &s[end..]))
}

/// Seconds in the unit after a slash.
fn seconds_per(unit: &str) -> Result<f64, String> {
    Ok(match unit {
        "ms" => 1e-3,
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hr" | "hour" => 3600.0,
        "d" | "day" => 86_400.0,
        _ => {
            return Err(format!(
                "\"/{unit}\" is not a unit of time; expected /s, /min (or /m), /h, /ms or /d"
            ))
        }
    })
}

/// A count suffix's multiplier: none, k or K, M, G.
fn count_multiplier(suffix: &str, number: f64, per: f64) -> Result<f64, String> {
    let n = fmt_number(number);
    Ok(match suffix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "m" if per == 1.0 => {
            return Err(format!(
                "\"{n}m\" is ambiguous: write {n}M for {n} million a second, or {n}/m for {n} a \
                 minute"
            ))
        }
        "b" | "B" => {
            return Err(format!(
                "\"{n}{suffix}\" reads as bytes: for {n} billion a second write {n}G; to copy \
                 bytes use pipe --bytes with {n}MB or {n}MiB"
            ))
        }
        _ if byte_multiplier(suffix, number).is_ok() => {
            return Err(format!(
                "\"{n}{suffix}\" is bytes, and this --rate counts ops (pipe: lines): to copy \
                 bytes a second, add --bytes: pipe --bytes --rate {n}{suffix}"
            ))
        }
        _ => {
            return Err(format!(
                "unknown suffix \"{suffix}\" after {n}; expected k, M or G (thousand, million, \
                 billion), or a unit of time such as {n}/s or {n}/min"
            ))
        }
    })
}

/// A byte unit's multiplier under `--bytes`.
fn byte_multiplier(suffix: &str, number: f64) -> Result<f64, String> {
    let n = fmt_number(number);
    Ok(match suffix {
        "" | "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" | "kiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => 1_073_741_824.0,
        "k" | "K" | "m" | "M" | "g" | "G" => {
            let upper = suffix.to_ascii_uppercase();
            let (dec, bin) = if upper == "K" {
                ("kB", "KiB")
            } else {
                (
                    if upper == "M" { "MB" } else { "GB" },
                    if upper == "M" { "MiB" } else { "GiB" },
                )
            };
            return Err(format!(
                "\"{n}{suffix}\" is ambiguous in bytes: write {n}{dec} (decimal, as disks) or \
                 {n}{bin} (binary, as pv -L {n}{upper})"
            ));
        }
        _ => {
            return Err(format!(
                "unknown byte unit \"{suffix}\" after {n}; expected B, kB, MB, GB, KiB, MiB or GiB"
            ))
        }
    })
}

/// A number as the user would write it back.
fn fmt_number(n: f64) -> String {
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ops(s: &str) -> Result<f64, String> {
        parse_rate(s, Counting::Ops)
    }

    fn bytes(s: &str) -> Result<f64, String> {
        parse_rate(s, Counting::Bytes)
    }

    #[test]
    fn scientific_notation_in_either_case() {
        for s in [
            "1e6", "1E6", "1e+6", "1000000", "1M", "1000k", "1000K", "0.001G",
        ] {
            assert_eq!(ops(s), Ok(1e6), "{s}");
        }
        assert_eq!(ops("2.5e-3"), Ok(2.5e-3));
        assert_eq!(ops(" 250 "), Ok(250.0));
    }

    #[test]
    fn units_of_time_after_a_slash() {
        assert_eq!(ops("10/s"), Ok(10.0));
        assert_eq!(ops("120/min"), Ok(2.0));
        assert_eq!(ops("120/m"), Ok(2.0));
        assert_eq!(ops("3600/h"), Ok(1.0));
        assert_eq!(ops("1/ms"), Ok(1000.0));
        assert_eq!(ops("86400/d"), Ok(1.0));
        assert_eq!(ops("6k/min"), Ok(100.0));
        assert!(ops("10/fortnight")
            .unwrap_err()
            .contains("not a unit of time"));
    }

    #[test]
    fn the_traps_are_refused_with_what_to_write() {
        let e = ops("1m").unwrap_err();
        assert!(e.contains("1M") && e.contains("1/m"), "{e}");
        let e = ops("100B").unwrap_err();
        assert!(e.contains("100G") && e.contains("--bytes"), "{e}");
        for unit in ["1MB", "1MiB", "2.5kB", "3GiB"] {
            let e = ops(unit).unwrap_err();
            assert!(e.contains(&format!("pipe --bytes --rate {unit}")), "{e}");
        }
        // `1e` is not exa: a number and an unknown suffix.
        assert!(ops("1e").unwrap_err().contains("unknown suffix \"e\""));
        assert!(ops("1E").unwrap_err().contains("unknown suffix \"E\""));
        assert!(ops("abc").unwrap_err().contains("is not a rate"));
        assert!(ops("").unwrap_err().contains("is not a rate"));
    }

    #[test]
    fn byte_units_decimal_and_binary() {
        assert_eq!(bytes("512KiB"), Ok(524_288.0));
        assert_eq!(bytes("1MiB"), Ok(1_048_576.0));
        assert_eq!(bytes("1MB"), Ok(1e6));
        assert_eq!(bytes("100kB"), Ok(1e5));
        assert_eq!(bytes("2GB/s"), Ok(2e9));
        assert_eq!(bytes("60MiB/min"), Ok(1_048_576.0));
        assert_eq!(bytes("4096"), Ok(4096.0));
        let e = bytes("1M").unwrap_err();
        assert!(e.contains("1MB") && e.contains("1MiB"), "{e}");
        let e = bytes("10k").unwrap_err();
        assert!(e.contains("10kB") && e.contains("10KiB"), "{e}");
        assert!(bytes("1XB").unwrap_err().contains("unknown byte unit"));
    }

    #[test]
    fn negative_and_zero_rates_get_our_message() {
        let e = parse_ops_spec("-5").unwrap_err();
        assert!(e.contains("greater than zero") && e.contains("-5"), "{e}");
        assert!(parse_ops_spec("0")
            .unwrap_err()
            .contains("greater than zero"));
    }

    #[test]
    fn the_rest_of_the_spec_is_the_librarys() {
        let spec = parse_ops_spec("1e3,1.5,restart").unwrap();
        assert_eq!(spec.rate().get(), 1000.0);
        assert_eq!(spec.burst_ratio(), 1.5);
        assert_eq!(spec.verb(), ratekeeper::Verb::Restart);
        assert!(parse_ops_spec("100,0.5")
            .unwrap_err()
            .contains("--strictness"));
        // Above one op per nanosecond: no schedule keeps it.
        assert!(parse_ops_spec("2G").unwrap_err().contains("1e9"));
    }

    proptest! {
        /// Whatever is typed, the parser answers: a rate or a message.
        #[test]
        fn never_panics(s in "\\PC{0,16}", bytes_mode in any::<bool>()) {
            let counting = if bytes_mode { Counting::Bytes } else { Counting::Ops };
            let _ = parse_rate_spec(&s, counting);
        }

        /// A number written plainly, scientifically or per minute reads as
        /// the same rate.
        #[test]
        fn spellings_agree(mantissa in 1u32..100_000, exp in 0i32..4) {
            let n = f64::from(mantissa) * 10f64.powi(exp);
            prop_assert_eq!(ops(&format!("{mantissa}e{exp}")), Ok(n));
            let per_minute = ops(&format!("{}/min", n * 60.0)).unwrap();
            prop_assert!((per_minute - n).abs() <= n * 1e-12);
        }
    }
}
