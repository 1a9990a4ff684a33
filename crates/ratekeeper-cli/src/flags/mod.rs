//! The command line's flags that more than one subcommand takes: their
//! value parsers here, the limiter flags in [`limiter`].

pub mod limiter;
pub mod rate;
pub mod redis;

use std::time::Duration;

use ratekeeper::pacer::Strictness;
use ratekeeper::RateSpec;

/// `--rate`: a rate spec whose rate a nanosecond schedule can keep, its rate
/// field in the command line's grammar (see [`rate`]).
pub fn parse_spec(s: &str) -> Result<RateSpec, String> {
    rate::parse_ops_spec(s)
}

/// `--shards`: 1 to [`MAX_SHARDS`](ratekeeper::pacer::MAX_SHARDS).
pub fn parse_shards(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=ratekeeper::pacer::MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number of shards from 1 to {}, got \"{s}\"",
            ratekeeper::pacer::MAX_SHARDS
        )),
    }
}

/// `--count`: a whole number of ops, at least 1.
pub fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of ops, at least 1".to_owned()),
    }
}

/// The longest duration a flag takes: what a nanosecond clock counts to,
/// `u64::MAX` ns (about 584 years). Longer ones would be cut to it silently.
pub const MAX_DURATION: Duration = Duration::from_nanos(u64::MAX);

/// `s` as a duration, refused (not saturated) beyond [`MAX_DURATION`].
fn duration(s: &str, expected: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim()).map_err(|e| format!("{e}; {expected}"))?;
    if d > MAX_DURATION {
        return Err(format!(
            "\"{}\" is longer than a nanosecond clock counts (about 584 years); {expected}",
            s.trim()
        ));
    }
    Ok(d)
}

/// A duration greater than zero.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = duration(s, "expected a duration such as 5s, 500ms or 1m30s")?;
    if d.is_zero() {
        return Err("the duration must be greater than zero".to_owned());
    }
    Ok(d)
}

/// A warm-up period: like a duration, but 0 is allowed (no warm-up).
pub fn parse_warmup(s: &str) -> Result<Duration, String> {
    duration(s, "expected a duration such as 2s, 500ms or 1m")
}

/// `--timeout`: a duration; 0 is allowed (no waiting).
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    duration(s, "expected a duration such as 5s, 10ms or 0s")
}

/// `--capacity`, `--initial-permits`: a whole number; the library checks its
/// range when the limiter is built.
pub fn parse_permits(s: &str) -> Result<i64, String> {
    s.trim()
        .parse()
        .map_err(|_| "expected a whole number of permits, such as 100".to_owned())
}

/// `--max-burst`: a number, checked by the library when the limiter is built.
pub fn parse_max_burst(s: &str) -> Result<f64, String> {
    s.trim()
        .parse()
        .map_err(|_| "expected a number of seconds, at least 0, such as 1 or 0.5".to_owned())
}

/// `--cold-factor`: a finite number; the library checks that it is at least 1
/// when the limiter is built.
pub fn parse_cold_factor(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected a number, at least 1, such as 3";
    let v: f64 = s.trim().parse().map_err(|_| EXPECTED.to_owned())?;
    // The library takes +inf, but an infinite cold factor leaves no permits
    // above the warm-up threshold: no warm-up at all, the opposite of what it
    // says (and JSON has no infinity).
    if v.is_infinite() {
        return Err(format!("the cold factor must be finite; {EXPECTED}"));
    }
    Ok(v)
}

const STRICTNESS_EXPECTED: &str = "expected a number: 0 (average), between 0 and 1 \
     (burst compensation), 1 (strict) or above 1 (burst ratio)";

/// `--strictness`: a valid [`Strictness`].
pub fn parse_strictness(s: &str) -> Result<Strictness, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| STRICTNESS_EXPECTED.to_owned())?;
    Strictness::new(v).map_err(|e| format!("{e}; {STRICTNESS_EXPECTED}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_beyond_the_clock_are_refused_not_saturated() {
        for parse in [parse_duration, parse_warmup, parse_timeout] {
            let e = parse("1000y").unwrap_err();
            assert!(e.contains("584 years"), "{e}");
            assert!(parse("584y").is_ok());
        }
    }

    #[test]
    fn parsers_name_what_they_expect() {
        let parse_strictness = |s| parse_strictness(s).map(Strictness::get);
        assert!(parse_spec("abc").unwrap_err().contains("\"abc\""));
        assert!(parse_spec("2G").unwrap_err().contains("1e9"));
        assert!(parse_spec("2B").unwrap_err().contains("2G"));
        assert!(parse_count("0").is_err());
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s")
            .unwrap_err()
            .contains("greater than zero"));
        assert!(parse_duration("xyz").unwrap_err().contains("5s"));
        assert_eq!(parse_strictness("0.5"), Ok(0.5));
        assert!(parse_strictness("-1").unwrap_err().contains("negative"));
        assert!(parse_strictness("inf").unwrap_err().contains("finite"));
        assert!(parse_strictness("x").unwrap_err().contains("strict"));
        assert_eq!(parse_warmup("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_warmup("2s"), Ok(Duration::from_secs(2)));
        assert!(parse_warmup("soon").unwrap_err().contains("2s"));
        assert_eq!(parse_cold_factor("3"), Ok(3.0));
        // Below 1 is the library's to refuse, with its message.
        assert_eq!(parse_cold_factor("0.5"), Ok(0.5));
        assert!(parse_cold_factor("inf").unwrap_err().contains("finite"));
        assert!(parse_cold_factor("x").unwrap_err().contains("at least 1"));
        assert_eq!(parse_max_burst("-1"), Ok(-1.0));
        assert!(parse_max_burst("x").unwrap_err().contains("seconds"));
        assert_eq!(parse_timeout("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_timeout("10ms"), Ok(Duration::from_millis(10)));
        assert!(parse_timeout("soon").unwrap_err().contains("10ms"));
        // Ranges are the library's to refuse, with its messages.
        assert_eq!(parse_permits("-3"), Ok(-3));
        assert!(parse_permits("1.5").unwrap_err().contains("whole number"));
    }
}
