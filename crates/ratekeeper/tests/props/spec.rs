//! Property tests for the rate spec grammar: parsing never panics, and every
//! valid spec survives a `Display` / `FromStr` round trip.

use proptest::prelude::*;
use ratekeeper::{Rate, RateSpec, Scope, SpecErrorKind, Verb};

/// Pieces of the grammar's alphabet, weighted towards the tricky ones.
fn grammar_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(vec![
            "0", "1", "2", "5", "9", "10", "00", ".", ",", ":", ";", "^", " ", "E", "e", "K",
            "k", "M", "B", "G", "T", "P", "U", "+", "-", "x", "d", "0x", "p",
        ])
        .prop_map(str::to_owned),
        2 => proptest::sample::select(vec![
            "kilo", "KILO", "mega", "billion", "giga", "tera", "peta", "exa", "unit", "NaN",
            "Infinity", "inf", "start", "Start", "stop", "restart", "configure", "thread",
            "activity", "co", "dynamic", "1.5", "1.1", "0.5", "1e400", "1E400", "10^3", "^-3",
            "\t", "\n", "\r", "\u{85}", "\u{2028}", "\u{212A}", "é", "𝟙", "１",
        ])
        .prop_map(str::to_owned),
        1 => any::<char>().prop_map(String::from),
    ]
}

/// Strings built from the grammar's alphabet.
fn grammar_string() -> impl Strategy<Value = String> {
    proptest::collection::vec(grammar_piece(), 0..16).prop_map(|parts| parts.concat())
}

/// Positive finite rates across the whole f64 range, including fractional,
/// subnormal and huge ones.
fn rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        (1u32..=10_000_000).prop_map(f64::from),
        0.0f64..1e9,
        (1u64..=u64::MAX).prop_map(|bits| f64::from_bits(bits >> 1)),
        proptest::sample::select(vec![
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            1e-300,
            1e300
        ]),
    ]
    .prop_filter("finite and positive", |r| r.is_finite() && *r > 0.0)
}

/// Finite burst ratios >= 1.0.
fn burst() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(1.0),
        Just(RateSpec::DEFAULT_BURST_RATIO),
        1.0f64..10.0,
        1.0f64..f64::MAX,
        (0x3FF0_0000_0000_0000u64..0x7FF0_0000_0000_0000).prop_map(f64::from_bits),
    ]
}

fn verb() -> impl Strategy<Value = Verb> {
    proptest::sample::select(Verb::ALL.to_vec())
}

fn scope() -> impl Strategy<Value = Scope> {
    proptest::sample::select(Scope::ALL.to_vec())
}

fn valid_spec() -> impl Strategy<Value = RateSpec> {
    (rate(), burst(), verb(), scope()).prop_map(|(rate, burst, verb, scope)| {
        RateSpec::new(Rate::new(rate).unwrap())
            .with_burst_ratio(burst)
            .unwrap()
            .with_verb(verb)
            .with_scope(scope)
    })
}

/// Every error must carry a known kind, a field in 1..=5 and a message that
/// names that field.
fn check_result(input: &str) {
    match input.parse::<RateSpec>() {
        Ok(spec) => {
            let rate = spec.rate().get();
            assert!(rate.is_finite() && rate > 0.0, "{input:?} gave rate {rate}");
            let burst = spec.burst_ratio();
            assert!(
                burst.is_finite() && burst >= 1.0,
                "{input:?} gave burst {burst}"
            );
            // A parsed spec prints to a canonical form that parses back.
            assert_eq!(spec.to_string().parse::<RateSpec>(), Ok(spec), "{input:?}");
        }
        Err(e) => {
            let field = e.field().expect("parse errors name a field");
            assert!((1..=5).contains(&field), "{input:?}: field {field}");
            assert!(!e.kind().as_str().is_empty());
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("invalid rate spec field {field} ")),
                "{msg}"
            );
            assert!(msg.contains(&format!("{:?}", e.value())), "{msg}");
            if e.kind() == SpecErrorKind::EmptyField {
                assert_eq!(e.value(), "");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn arbitrary_strings_never_panic(input in any::<String>()) {
        check_result(&input);
    }

    #[test]
    fn grammar_alphabet_strings_never_panic(input in grammar_string()) {
        check_result(&input);
    }

    #[test]
    fn spec_shaped_strings_never_panic(
        fields in proptest::collection::vec(grammar_string(), 1..6),
        sep in proptest::sample::select(vec![",", ":", ";"]),
    ) {
        check_result(&fields.join(sep));
    }

    #[test]
    fn display_round_trips(spec in valid_spec()) {
        let printed = spec.to_string();
        let parsed: RateSpec = printed.parse().map_err(|e| {
            TestCaseError::fail(format!("{printed:?} does not parse: {e}"))
        })?;
        prop_assert_eq!(parsed, spec);
        prop_assert_eq!(parsed.rate().get().to_bits(), spec.rate().get().to_bits());
        prop_assert_eq!(parsed.burst_ratio().to_bits(), spec.burst_ratio().to_bits());
        // Printing is stable.
        prop_assert_eq!(parsed.to_string(), printed);
    }

    #[test]
    fn words_and_separators_in_any_order(
        rate in 1u32..1_000_000,
        burst in proptest::option::of(1.0f64..100.0),
        verb in proptest::option::of(verb()),
        scope in proptest::option::of(scope()),
        verb_first in any::<bool>(),
        upper in any::<bool>(),
        seps in proptest::collection::vec(proptest::sample::select(vec![',', ':', ';']), 3),
    ) {
        let mut fields = vec![rate.to_string()];
        if let Some(b) = burst {
            fields.push(b.to_string());
        }
        let mut words: Vec<String> = verb
            .map(|v| v.as_str().to_owned())
            .into_iter()
            .chain(scope.map(|s| s.as_str().to_owned()))
            .collect();
        if !verb_first {
            words.reverse();
        }
        if upper {
            words = words.iter().map(|w| w.to_ascii_uppercase()).collect();
        }
        fields.extend(words);
        let mut input = fields[0].clone();
        for (field, sep) in fields[1..].iter().zip(&seps) {
            input.push(*sep);
            input.push_str(field);
        }
        let spec: RateSpec = input.parse().map_err(|e| TestCaseError::fail(format!("{input:?}: {e}")))?;
        prop_assert_eq!(spec.rate().get(), f64::from(rate));
        prop_assert_eq!(spec.burst_ratio(), burst.unwrap_or(RateSpec::DEFAULT_BURST_RATIO));
        prop_assert_eq!(spec.verb(), verb.unwrap_or_default());
        prop_assert_eq!(spec.scope(), scope.unwrap_or_default());
    }

    #[test]
    fn count_suffixes_multiply_once(
        whole in 0u32..100_000,
        frac in proptest::option::of(0u32..1000),
        suffix in proptest::sample::select(vec![
            ("", 1.0), ("u", 1.0), ("K", 1e3), ("kilo", 1e3), ("M", 1e6), ("Mega", 1e6),
            ("B", 1e9), ("G", 1e9), ("t", 1e12), ("P", 1e15), ("E", 1e18), ("exa", 1e18),
        ]),
        space in any::<bool>(),
    ) {
        let number = match frac {
            Some(f) => format!("{whole}.{f}"),
            None => whole.to_string(),
        };
        let input = format!("{number}{}{}", if space { " " } else { "" }, suffix.0);
        let expected = number.parse::<f64>().unwrap() * suffix.1;
        match input.parse::<RateSpec>() {
            Ok(spec) => prop_assert_eq!(spec.rate().get().to_bits(), expected.to_bits()),
            Err(e) => {
                prop_assert_eq!(expected, 0.0);
                prop_assert_eq!(e.kind(), SpecErrorKind::RateNotPositive);
            }
        }
    }
}
