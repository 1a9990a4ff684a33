//! Unit tests of the rate-spec grammar: fields, numbers, errors, printing.

use super::parse::push_java_double;
use super::*;

fn parse(s: &str) -> Result<RateSpec, SpecError> {
    s.parse()
}

fn ok(s: &str) -> RateSpec {
    parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn rate(s: &str) -> f64 {
    ok(s).rate().get()
}

fn err(s: &str) -> SpecError {
    match parse(s) {
        Ok(spec) => panic!("{s:?} should fail, got {spec:?}"),
        Err(e) => e,
    }
}

fn kind(s: &str) -> SpecErrorKind {
    err(s).kind()
}

fn spec(rate: f64, burst: f64, verb: Verb, scope: Scope) -> RateSpec {
    RateSpec::new(Rate::new(rate).unwrap())
        .with_burst_ratio(burst)
        .unwrap()
        .with_verb(verb)
        .with_scope(scope)
}

#[test]
fn defaults() {
    assert_eq!(ok("523"), spec(523.0, 1.1, Verb::Start, Scope::Activity));
    assert_eq!(RateSpec::DEFAULT_BURST_RATIO, 1.1);
    assert_eq!(DEFAULT_BURST_RATIO, 1.1);
}

#[test]
fn fields_and_words() {
    use Scope::*;
    use Verb::*;
    assert_eq!(ok("12345,1.3"), spec(12345.0, 1.3, Start, Activity));
    assert_eq!(
        ok("12345,1.4,configure"),
        spec(12345.0, 1.4, Configure, Activity)
    );
    assert_eq!(
        ok("12345,configure"),
        spec(12345.0, 1.1, Configure, Activity)
    );
    assert_eq!(ok("12345,thread"), spec(12345.0, 1.1, Start, Thread));
    assert_eq!(
        ok("12345,configure,activity"),
        spec(12345.0, 1.1, Configure, Activity)
    );
    assert_eq!(ok("100,1.1,start,thread"), spec(100.0, 1.1, Start, Thread));
    assert_eq!(
        ok("1000,1.5,thread,restart"),
        spec(1000.0, 1.5, Restart, Thread)
    );
    assert_eq!(ok("1000,1.5,STOP,Thread"), spec(1000.0, 1.5, Stop, Thread));
    assert_eq!(
        ok("1000:1.5;restart,thread"),
        spec(1000.0, 1.5, Restart, Thread)
    );
    assert_eq!(ok("1000, 1.5"), spec(1000.0, 1.5, Start, Activity));
    assert_eq!(ok("1000,\t1.5 "), spec(1000.0, 1.5, Start, Activity));
}

#[test]
fn burst_numbers() {
    let burst = |s: &str| ok(s).burst_ratio();
    assert_eq!(burst("1000,1.0"), 1.0);
    assert_eq!(burst("1000,1"), 1.0);
    assert_eq!(burst("1000,1e1"), 10.0);
    assert_eq!(burst("1000,1E+1"), 10.0);
    assert_eq!(burst("1000,+1.25"), 1.25);
    assert_eq!(burst("1000,2."), 2.0);
    assert_eq!(burst("1000,15e-1"), 1.5);
    assert_eq!(burst("1000,.15e1"), 1.5);
    assert_eq!(kind("1000,."), SpecErrorKind::UnknownWord);
    assert_eq!(kind("1000,1e"), SpecErrorKind::UnknownWord);
    assert_eq!(kind("1000,e1"), SpecErrorKind::UnknownWord);
    assert_eq!(kind("1000,inf"), SpecErrorKind::UnknownWord);
}

#[test]
fn rate_numbers() {
    assert_eq!(rate("1E6"), 1e6);
    assert_eq!(rate("1.5^2"), 2.25);
    assert_eq!(rate("10^3K"), 1e6);
    assert_eq!(rate("10^7"), 1e7);
    assert_eq!(rate("1kilo"), 1e3);
    assert_eq!(rate("3 mega"), 3e6);
    assert_eq!(rate("  3  MEGA  "), 3e6);
    assert_eq!(rate("2KILO"), 2e3);
    assert_eq!(rate("5k"), 5e3);
    assert_eq!(rate("2billion"), 2e9);
    assert_eq!(rate("1B"), 1e9);
    assert_eq!(rate("1giga"), 1e9);
    assert_eq!(rate("1T"), 1e12);
    assert_eq!(rate("1P"), 1e15);
    assert_eq!(rate("1exa"), 1e18);
    assert_eq!(rate("2E"), 2e18);
    assert_eq!(rate("5 unit"), 5.0);
    assert_eq!(rate("5u"), 5.0);
    assert_eq!(rate("1E3K"), 1e6);
    assert_eq!(rate("2.01K"), 2009.9999999999998);
    assert_eq!(rate("16.1K"), 16100.000000000002);
    assert_eq!(rate("0.5"), 0.5);
    assert_eq!(rate("2^10"), 1024.0);
    assert_eq!(rate(" 2^10 "), 1024.0);
    assert_eq!(rate("0.5^2"), 0.25);
    assert_eq!(rate("0.1^3"), 0.1f64.powf(3.0));
    // The power's result is printed in Java's E form and read again.
    assert_eq!(rate("10^20"), 1e20);
    assert_eq!(rate("1.5^60"), 1.5f64.powf(60.0));
    assert_eq!(rate("3^0"), 1.0);
}

#[test]
fn java_double_strings() {
    let java = |v: f64| {
        let mut s = String::new();
        push_java_double(&mut s, v);
        s
    };
    assert_eq!(java(1000.0), "1000.0");
    assert_eq!(java(2.25), "2.25");
    assert_eq!(java(1e-3), "0.001");
    assert_eq!(java(9.765625e-4), "9.765625E-4");
    assert_eq!(java(1e7), "1.0E7");
    assert_eq!(java(1.5e7), "1.5E7");
    assert_eq!(java(9999999.0), "9999999.0");
    assert_eq!(java(0.0), "0.0");
    assert_eq!(java(f64::INFINITY), "Infinity");
    assert_eq!(java(f64::NAN), "NaN");
}

#[test]
fn power_form_quirks() {
    use SpecErrorKind::*;
    assert_eq!(kind("10^400"), UnparsableRate);
    assert_eq!(kind("10^-3"), UnknownUnit);
    assert_eq!(kind("0.5^10"), UnknownUnit);
    // Java prints 9.765625E-4: a number, then two space-separated runs.
    assert_eq!(kind("0.5^10 K"), UnparsableRate);
    assert_eq!(kind("0^3"), RateNotPositive);
    // Math.pow(1, Infinity) is NaN in Java.
    let huge_exponent = format!("1^{}", "9".repeat(400));
    assert_eq!(kind(&huge_exponent), UnparsableRate);
    let huge_exponent = format!("2^{}", "9".repeat(400));
    assert_eq!(kind(&huge_exponent), UnparsableRate);
    // The shortest prefix wins, and the prefix must still fit the count.
    assert_eq!(kind("x10^3"), UnparsableRate);
    assert_eq!(kind("5 10^3"), UnknownUnit);
    assert_eq!(kind("1.5.3^2"), UnknownUnit);
    assert_eq!(kind("1.^2"), UnknownUnit);
    // A line terminator stops the power form (Java's `.`).
    assert_eq!(kind("10^400\n"), UnknownUnit);
    assert_eq!(kind("10^3\u{2028}"), UnknownUnit);
}

#[test]
fn error_unparsable_rate() {
    for s in [
        "", ",1.5", "-100", "NaN", "abc", ".5", " ", "1 K M", "\t5", "１０",
    ] {
        let e = err(s);
        assert_eq!(e.kind(), SpecErrorKind::UnparsableRate, "{s:?}");
        assert_eq!(e.field(), Some(1), "{s:?}");
    }
    let e = err("abc,1.5");
    assert_eq!(e.value(), "abc");
    assert_eq!(
        e.to_string(),
        r#"invalid rate spec field 1 (rate) "abc": not a rate; expected a count such as 1000, 2.5K, 1E6 or 10^3"#
    );
    assert_eq!(
        err("").to_string(),
        r#"invalid rate spec field 1 (rate) "": the rate is missing"#
    );
}

#[test]
fn error_unknown_unit() {
    for s in ["5.", "1e6", "5x", "5 kilos", "1.E3", "5\u{212A}"] {
        assert_eq!(kind(s), SpecErrorKind::UnknownUnit, "{s:?}");
    }
    let e = err("5x,2");
    assert_eq!((e.field(), e.value()), (Some(1), "5x"));
    let msg = e.to_string();
    assert!(
        msg.starts_with(r#"invalid rate spec field 1 (rate) "5x": unknown count suffix"#),
        "{msg}"
    );
}

#[test]
fn error_rate_range() {
    for s in ["0", "0.0", "0^3", "0K", "0E400"] {
        assert_eq!(kind(s), SpecErrorKind::RateNotPositive, "{s:?}");
    }
    for s in ["1E400", "1E308K", "1E309"] {
        assert_eq!(kind(s), SpecErrorKind::RateNotFinite, "{s:?}");
    }
    assert_eq!(
        err("0,1.5").to_string(),
        r#"invalid rate spec field 1 (rate) "0": rate must be greater than zero"#
    );
    assert_eq!(
        err("1E400").to_string(),
        r#"invalid rate spec field 1 (rate) "1E400": rate must be finite"#
    );
    // Tiny but positive rates are valid.
    assert_eq!(rate("0.000001"), 1e-6);
}

#[test]
fn error_burst() {
    use SpecErrorKind::*;
    for s in [
        "1000,0.0",
        "1000,0.999",
        "1000,-1.5",
        "1,000",
        "1000,-0",
        "1000,1e-400",
    ] {
        let e = err(s);
        assert_eq!(e.kind(), BurstBelowOne, "{s:?}");
        assert_eq!(e.field(), Some(2), "{s:?}");
    }
    for s in [
        "1000,1e400",
        "1000,NaN",
        "1000,-Infinity",
        "1000, Infinity ",
    ] {
        assert_eq!(kind(s), BurstNotFinite, "{s:?}");
    }
    assert_eq!(
        err("1000,0.5").to_string(),
        r#"invalid rate spec field 2 (burst ratio) "0.5": burst ratio must be at least 1.0"#
    );
    assert_eq!(
        err("1000,NaN,start").to_string(),
        r#"invalid rate spec field 2 (burst ratio) "NaN": burst ratio must be finite"#
    );
}

#[test]
fn error_unknown_word() {
    for s in [
        "1000,1.5d",
        "1000,0x1.8p0",
        "12345,1.3,co",
        "1000,1.5,dynamic",
        "1000, thread",
        "1000,start,1.5",
        "1000,nan",
        "1000,1.5,STARt ",
    ] {
        assert_eq!(kind(s), SpecErrorKind::UnknownWord, "{s:?}");
    }
    let e = err("1000,1.5,start,co");
    assert_eq!((e.field(), e.value()), (Some(4), "co"));
    let msg = e.to_string();
    assert!(
        msg.starts_with(r#"invalid rate spec field 4 (verb or scope) "co": unknown word"#),
        "{msg}"
    );
}

#[test]
fn error_duplicate_word() {
    let e = err("1000,start,restart");
    assert_eq!(e.kind(), SpecErrorKind::DuplicateWord);
    assert_eq!((e.field(), e.value()), (Some(3), "restart"));
    assert_eq!(
        e.to_string(),
        r#"invalid rate spec field 3 (verb) "restart": a second verb; give at most one verb"#
    );
    let e = err("1000,1.5,thread,Activity");
    assert_eq!(
        (e.kind(), e.field()),
        (SpecErrorKind::DuplicateWord, Some(4))
    );
    assert_eq!(
        e.to_string(),
        r#"invalid rate spec field 4 (scope) "Activity": a second scope; give at most one scope"#
    );
    assert_eq!(kind("1000,start,start"), SpecErrorKind::DuplicateWord);
}

#[test]
fn error_too_many_fields() {
    let e = err("1000,1.5,start,thread,x");
    assert_eq!(e.kind(), SpecErrorKind::TooManyFields);
    assert_eq!((e.field(), e.value()), (Some(5), "x"));
    assert_eq!(
        e.to_string(),
        r#"invalid rate spec field 5 "x": too many fields; at most 4 are allowed (rate, burst ratio, verb, scope)"#
    );
    // Checked before anything else.
    assert_eq!(kind(",,,,"), SpecErrorKind::TooManyFields);
    assert_eq!(kind("abc,0.5,x,y,z,w"), SpecErrorKind::TooManyFields);
}

#[test]
fn error_empty_field() {
    let e = err("1000,1.5;");
    assert_eq!(e.kind(), SpecErrorKind::EmptyField);
    assert_eq!((e.field(), e.value()), (Some(3), ""));
    assert_eq!(
        e.to_string(),
        r#"invalid rate spec field 3 "": empty field; check for a doubled or trailing separator"#
    );
    assert_eq!(kind("1000,"), SpecErrorKind::EmptyField);
    assert_eq!(kind("1000,,start"), SpecErrorKind::EmptyField);
    // Before the rate's own checks.
    assert_eq!(kind("abc,"), SpecErrorKind::EmptyField);
    // An empty rate field wins over a later empty field.
    assert_eq!(kind(",1.5,"), SpecErrorKind::UnparsableRate);
}

#[test]
fn check_order() {
    use SpecErrorKind::*;
    assert_eq!(kind("0,0.5"), RateNotPositive);
    assert_eq!(kind("5x,0.5"), UnknownUnit);
    assert_eq!(kind("1000,0.5,co"), BurstBelowOne);
    assert_eq!(kind("1000,co,start,start"), UnknownWord);
    assert_eq!(kind("1000,start,start,co"), DuplicateWord);
}

#[test]
fn error_messages_escape_the_value() {
    let msg = err("5\"\n").to_string();
    assert_eq!(
        msg,
        r#"invalid rate spec field 1 (rate) "5\"\n": unknown count suffix; expected U, K, M, B, G, T, P or E (or unit, kilo, mega, billion, giga, tera, peta, exa)"#
    );
}

#[test]
fn builder() {
    let base = RateSpec::new(Rate::new(10.0).unwrap());
    let e = base.with_burst_ratio(0.5).unwrap_err();
    assert_eq!(
        (e.kind(), e.field(), e.value()),
        (SpecErrorKind::BurstBelowOne, None, "0.5")
    );
    assert_eq!(
        e.to_string(),
        r#"invalid burst ratio "0.5": burst ratio must be at least 1.0"#
    );
    let e = base.with_burst_ratio(f64::NAN).unwrap_err();
    assert_eq!(e.kind(), SpecErrorKind::BurstNotFinite);
    assert_eq!(
        e.to_string(),
        r#"invalid burst ratio "NaN": burst ratio must be finite"#
    );
    assert_eq!(
        base.with_burst_ratio(f64::INFINITY).unwrap_err().kind(),
        SpecErrorKind::BurstNotFinite
    );
    let s = base
        .with_verb(Verb::Stop)
        .with_scope(Scope::Thread)
        .with_burst_ratio(2.0)
        .unwrap();
    assert_eq!(
        (s.verb(), s.scope(), s.burst_ratio()),
        (Verb::Stop, Scope::Thread, 2.0)
    );
}

#[test]
fn verb_and_scope_words() {
    for v in Verb::ALL {
        assert_eq!(v.as_str().parse::<Verb>(), Ok(v));
        assert_eq!(v.as_str().to_ascii_uppercase().parse::<Verb>(), Ok(v));
        assert_eq!(v.to_string(), v.as_str());
    }
    for s in Scope::ALL {
        assert_eq!(s.as_str().parse::<Scope>(), Ok(s));
        assert_eq!(s.to_string(), s.as_str());
    }
    let e = "thread".parse::<Verb>().unwrap_err();
    assert_eq!(
        (e.kind(), e.field(), e.value()),
        (SpecErrorKind::UnknownWord, None, "thread")
    );
    assert!(e
        .to_string()
        .starts_with(r#"invalid verb or scope "thread": unknown word"#));
    assert!(" thread".parse::<Scope>().is_err());
}

#[test]
fn kind_names() {
    use SpecErrorKind::*;
    let all = [
        (UnparsableRate, "unparsable_rate"),
        (UnknownUnit, "unknown_unit"),
        (RateNotPositive, "rate_not_positive"),
        (RateNotFinite, "rate_not_finite"),
        (BurstBelowOne, "burst_below_one"),
        (BurstNotFinite, "burst_not_finite"),
        (UnknownWord, "unknown_word"),
        (DuplicateWord, "duplicate_word"),
        (TooManyFields, "too_many_fields"),
        (EmptyField, "empty_field"),
    ];
    for (kind, name) in all {
        assert_eq!(kind.as_str(), name);
        assert_eq!(kind.to_string(), name);
    }
}

#[test]
fn display_round_trips() {
    for s in [
        "523",
        "2.01K",
        "1E300,1E300,stop,thread",
        "0.000001,1.000001,configure",
        "1.5^60,restart",
    ] {
        let spec = ok(s);
        let printed = spec.to_string();
        assert_eq!(parse(&printed), Ok(spec), "{s:?} printed as {printed:?}");
    }
    assert_eq!(
        ok("2.01K").to_string(),
        "2009.9999999999998,1.1,start,activity"
    );
    assert_eq!(
        ok("12345,1.4,configure").to_string(),
        "12345,1.4,configure,activity"
    );
    let tiny = RateSpec::new(Rate::new(f64::from_bits(1)).unwrap());
    assert_eq!(parse(&tiny.to_string()), Ok(tiny));
    let huge = RateSpec::new(Rate::new(f64::MAX).unwrap());
    assert_eq!(parse(&huge.to_string()), Ok(huge));
}

#[test]
fn never_panics_on_odd_input() {
    for s in [
        "é", "^", "^^", "1^", "^1", "1.^", "1^é", "é1^2", "1^2é", "\u{0}", "1\u{0}", "1,\u{0}",
        "𝟙", "1 𝟙", "9^9^9", "1E", "1E+3", "1.5E3.5", ",", ";;", "::::",
    ] {
        let _ = parse(s);
    }
}

#[cfg(feature = "serde")]
#[test]
fn serde_as_string() {
    let spec = ok("2.5K,1.5,restart,thread");
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(json, r#""2500,1.5,restart,thread""#);
    assert_eq!(serde_json::from_str::<RateSpec>(&json).unwrap(), spec);
    assert_eq!(
        serde_json::from_str::<RateSpec>(r#""1000""#).unwrap(),
        ok("1000")
    );
    let e = serde_json::from_str::<RateSpec>(r#""1000,0.5""#).unwrap_err();
    assert!(
        e.to_string().contains("burst ratio must be at least 1.0"),
        "{e}"
    );
    assert!(serde_json::from_str::<RateSpec>("1000").is_err());
}
