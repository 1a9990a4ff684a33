//! `Config::from_yaml` never panics: on any text, and on valid files with
//! bytes changed, dropped or inserted, it answers `Ok` or `Err`.

use proptest::prelude::*;
use ratekeeper_serve::config::Config;

/// A file that uses every field, to mutate.
const VALID: &str = include_str!("configs/envoy/rl.yaml");

const ADDITIONS: &str = "\
domain: api
descriptors:
  - key: user
    value: admin
    rate_limit: { unit: second, requests_per_unit: 10, name: admins }
    algorithm: refill
    burst: 20
    max_wait: 50ms
    on_redis_failure: local
    descriptors:
      - key: path
        rate_limit: { unlimited: true }
";

/// YAML's own characters, so mutations hit the grammar often.
fn yaml_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(vec![
            ':', '-', ' ', '\n', '\t', '#', '[', ']', '{', '}', ',', '&', '*', '!', '|', '>', '\'',
            '"', '?', '%', '@', '`', '~', '0', '9', 'a',
        ]),
        any::<char>(),
    ]
}

/// An edit: at a fraction of the text, delete up to `len` chars, then
/// insert `insert`.
fn edit() -> impl Strategy<Value = (f64, usize, String)> {
    (
        0.0..1.0f64,
        0..8usize,
        prop::collection::vec(yaml_char(), 0..6),
    )
        .prop_map(|(at, len, insert)| (at, len, insert.into_iter().collect()))
}

fn mutate(text: &str, edits: &[(f64, usize, String)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for (at, len, insert) in edits {
        let start = ((chars.len() as f64) * at) as usize;
        let end = (start + len).min(chars.len());
        chars.splice(start..end, insert.chars());
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn any_text_is_answered(text in any::<String>()) {
        let _ = Config::from_yaml(&text, "any.yaml");
    }

    #[test]
    fn yaml_like_text_is_answered(chars in prop::collection::vec(yaml_char(), 0..200)) {
        let text: String = chars.into_iter().collect();
        let _ = Config::from_yaml(&text, "any.yaml");
    }

    #[test]
    fn mutated_files_are_answered(
        base in prop::sample::select(vec![VALID, ADDITIONS]),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let text = mutate(base, &edits);
        if let Err(err) = Config::from_yaml(&text, "mutated.yaml") {
            // Every error points into the file (YAML breaks lines at a
            // lone `\r` too).
            let breaks = text.matches(['\n', '\r']).count();
            prop_assert!(err.line() >= 1, "{err}");
            prop_assert!(err.line() <= breaks + 1, "{err}");
            prop_assert!(!err.message().is_empty());
        }
    }
}

#[test]
fn the_bases_are_valid() {
    Config::from_yaml(VALID, "rl.yaml").unwrap();
    Config::from_yaml(ADDITIONS, "api.yaml").unwrap();
}
