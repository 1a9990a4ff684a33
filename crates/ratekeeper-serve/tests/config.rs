//! The config loader: envoyproxy/ratelimit's examples, folders, and every
//! error's file, line and message.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ratekeeper_serve::config::{
    Algorithm, Config, ConfigErrorKind, ConfigFileError, DescriptorConfig, FailurePolicy,
    LimitConfig, RateLimitConfig, Unit,
};

fn configs(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/configs")
        .join(name)
}

fn counted(descriptor: &DescriptorConfig) -> &RateLimitConfig {
    match &descriptor.limit {
        Some(LimitConfig::Limited(limit)) => limit,
        other => panic!("expected a counted limit, got {other:?}"),
    }
}

/// Asserts that `yaml` fails at `line` with `kind` and a message holding
/// every one of `words`.
#[track_caller]
fn fails(yaml: &str, line: usize, kind: ConfigErrorKind, words: &[&str]) -> ConfigFileError {
    let err = Config::from_yaml(yaml, "test.yaml").expect_err("the config should be refused");
    assert_eq!(err.file(), "test.yaml", "{err}");
    assert_eq!(err.line(), line, "{err}");
    assert_eq!(err.kind(), kind, "{err}");
    for word in words {
        assert!(err.message().contains(word), "{word:?} not in: {err}");
    }
    assert_eq!(
        err.to_string(),
        format!("test.yaml:{line}: {}", err.message())
    );
    err
}

fn invalid(yaml: &str, line: usize, words: &[&str]) -> ConfigFileError {
    fails(yaml, line, ConfigErrorKind::Invalid, words)
}

#[test]
fn envoy_mongo_cps_parses() {
    let config = Config::load(&configs("envoy/mongo_cps.yaml")).unwrap();
    let [domain] = config.domains.as_slice() else {
        panic!("one domain expected")
    };
    assert_eq!(domain.domain, "mongo_cps");
    assert!(domain.source.ends_with("mongo_cps.yaml"));
    let lines: Vec<_> = domain.descriptors.iter().map(|d| d.line).collect();
    assert_eq!(lines, [4, 10]);
    let values: Vec<_> = domain
        .descriptors
        .iter()
        .map(|d| d.value.as_deref())
        .collect();
    assert_eq!(values, [Some("users"), Some("default")]);
    for descriptor in &domain.descriptors {
        let limit = counted(descriptor);
        assert_eq!((limit.unit, limit.requests_per_unit), (Unit::Second, 500));
        assert_eq!(limit.algorithm, Algorithm::Refill);
        assert_eq!((limit.burst, limit.max_wait), (None, Duration::ZERO));
        assert_eq!(limit.on_redis_failure, None);
    }
}

#[test]
fn envoy_nested_descriptors_parse() {
    let config = Config::load(&configs("envoy/messaging.yaml")).unwrap();
    let domain = &config.domains[0];
    let [marketing, total] = domain.descriptors.as_slice() else {
        panic!("two descriptors expected")
    };
    assert_eq!(
        (marketing.key.as_str(), marketing.line),
        ("message_type", 5)
    );
    assert_eq!(marketing.limit, None);
    let [to_number] = marketing.descriptors.as_slice() else {
        panic!("one nested descriptor expected")
    };
    assert_eq!(
        (to_number.key.as_str(), to_number.value.as_deref()),
        ("to_number", None)
    );
    assert_eq!(to_number.line, 8);
    assert_eq!(counted(to_number).unit, Unit::Day);
    assert_eq!(counted(to_number).requests_per_unit, 5);
    assert_eq!(counted(total).requests_per_unit, 100);
    assert_eq!(total.line, 14);
}

#[test]
fn envoy_rl_example_parses() {
    let config = Config::load(&configs("envoy/rl.yaml")).unwrap();
    let d = &config.domains[0].descriptors;
    assert_eq!(counted(&d[0]).unit, Unit::Minute, "upper-case MINUTE");
    let override_ = &d[1].descriptors[1];
    assert_eq!(counted(override_).name.as_deref(), Some("override"));
    assert_eq!(d[2].limit, Some(LimitConfig::Unlimited { name: None }));
    assert!(d[3].shadow_mode);
    assert!(!d[0].shadow_mode);
}

#[test]
fn envoy_zero_limit_is_refused() {
    let err = Config::load(&configs("envoy/edge_proxy_per_ip.yaml")).unwrap_err();
    assert!(err.file().ends_with("edge_proxy_per_ip.yaml"));
    assert_eq!(err.line(), 15);
    assert!(err.message().contains("at least 1"), "{err}");
}

#[test]
fn folder_reads_yaml_files_by_name() {
    let config = Config::load(&configs("folder")).unwrap();
    let names: Vec<_> = config.domains.iter().map(|d| d.domain.as_str()).collect();
    // Not notes.txt, .hidden.yaml or sub/nested.yaml.
    assert_eq!(names, ["api", "users"]);
    let api = &config.domains[0].descriptors;
    assert_eq!(api[0].limit, Some(LimitConfig::Unlimited { name: None }));
    let path = counted(&api[1]);
    assert_eq!(
        (path.burst, path.max_wait),
        (Some(20), Duration::from_millis(50))
    );
    let user = counted(&config.domains[1].descriptors[0]);
    assert_eq!(user.algorithm, Algorithm::Cycle);
    assert_eq!(user.on_redis_failure, Some(FailurePolicy::Deny));
}

#[test]
fn duplicate_domain_names_both_files() {
    let err = Config::load(&configs("duplicate")).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::Duplicate);
    assert!(err.file().ends_with("two.yaml"), "{err}");
    assert_eq!(err.line(), 3);
    assert!(err.message().contains("one.yaml:1"), "{err}");
    assert!(err.message().contains("domain \"api\""), "{err}");
}

#[test]
fn missing_path_is_an_io_error() {
    let path = configs("no-such-file.yaml");
    let err = Config::load(&path).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::Io);
    assert_eq!(
        (err.file(), err.line()),
        (path.display().to_string().as_str(), 0)
    );
    assert!(std::error::Error::source(&err).is_some());
    assert_eq!(
        err.to_string(),
        format!("{}: {}", path.display(), err.message())
    );
}

#[test]
fn folder_without_yaml_is_refused() {
    // configs/ itself holds only folders.
    let err = Config::load(&configs("")).unwrap_err();
    assert_eq!(err.line(), 0);
    assert!(err.message().contains("no *.yaml or *.yml file"), "{err}");
}

#[test]
fn syntax_error_gives_its_line() {
    let yaml = "domain: api\ndescriptors:\n  - key: a\n    value: [b\n";
    fails(yaml, 5, ConfigErrorKind::Syntax, &["invalid YAML"]);
    fails(
        "domain: a\n  b: c\n",
        2,
        ConfigErrorKind::Syntax,
        &["invalid YAML"],
    );
}

#[test]
fn duplicate_field_is_refused() {
    fails(
        "domain: a\ndomain: b\n",
        2,
        ConfigErrorKind::Syntax,
        &["duplicate"],
    );
    invalid("domain: a\n\"domain\": b\n", 2, &["twice", "line 1"]);
}

#[test]
fn second_document_is_refused() {
    fails(
        "domain: a\n---\ndomain: b\n",
        3,
        ConfigErrorKind::Syntax,
        &["own file"],
    );
}

#[test]
fn empty_file_is_refused() {
    invalid("", 1, &["empty", "domain: NAME"]);
    invalid("# only a comment\n", 1, &["empty"]);
}

#[test]
fn an_error_at_the_end_of_input_names_the_last_line_whatever_the_line_ends() {
    // The scanner points one line past the end; the error names the last.
    for text in [
        "domain: a\ndescriptors:\n  - key: [a",
        "domain: a\r\ndescriptors:\r\n  - key: [a",
        "domain: a\rdescriptors:\r  - key: [a",
    ] {
        fails(text, 3, ConfigErrorKind::Syntax, &["invalid YAML"]);
    }
}

#[test]
fn a_document_of_nothing_is_refused_as_nothing() {
    invalid("---\n", 2, &["must be a mapping", "not nothing"]);
}

#[test]
fn root_must_be_a_mapping() {
    invalid(
        "- a\n- b\n",
        1,
        &["mapping", "domain, descriptors", "a list"],
    );
    invalid("just text\n", 1, &["mapping", "a single value"]);
}

#[test]
fn domain_is_required_and_not_empty() {
    invalid("descriptors: []\n", 1, &["no `domain`", "domain: NAME"]);
    invalid("\ndomain:\n", 2, &["`domain` is empty"]);
    invalid("domain: ''\n", 1, &["`domain` is empty"]);
    invalid("domain: [a]\n", 1, &["single value", "a list"]);
}

#[test]
fn unknown_fields_are_named_with_the_allowed_ones() {
    invalid(
        "domain: a\ndescriptor: []\n",
        2,
        &["`descriptor`", "domain, descriptors"],
    );
    let yaml = "domain: a\ndescriptors:\n  - key: k\n    rate_limt: {}\n";
    invalid(yaml, 4, &["`rate_limt`", "rate_limit", "on_redis_failure"]);
    let yaml = "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      units: second\n";
    invalid(
        yaml,
        5,
        &["`units`", "unit, requests_per_unit, unlimited, name"],
    );
}

#[test]
fn field_names_must_be_words() {
    invalid("domain: a\n[x]: 1\n", 2, &["field name", "a list"]);
}

#[test]
fn descriptors_must_be_a_list_of_mappings() {
    invalid(
        "domain: a\ndescriptors: {key: k}\n",
        2,
        &["must be a list", "a mapping"],
    );
    invalid(
        "domain: a\ndescriptors:\n  - k\n",
        3,
        &["a descriptor", "a single value"],
    );
    let ok = Config::from_yaml("domain: a\ndescriptors:\n", "t").unwrap();
    assert!(ok.descriptors.is_empty());
}

#[test]
fn descriptor_key_is_required_and_not_empty() {
    invalid(
        "domain: a\ndescriptors:\n  - value: v\n",
        3,
        &["needs a `key`", "key: NAME"],
    );
    invalid(
        "domain: a\ndescriptors:\n  - key: \"\"\n",
        3,
        &["`key` is empty"],
    );
    invalid(
        "domain: a\ndescriptors:\n  - key: {a: b}\n",
        3,
        &["`key`", "a mapping"],
    );
}

#[test]
fn scalars_are_taken_as_written() {
    let yaml =
        "domain: 007\ndescriptors:\n  - key: 1.50\n    value: true\n  - key: k\n    value: ~\n";
    let domain = Config::from_yaml(yaml, "t").unwrap();
    assert_eq!(domain.domain, "007");
    assert_eq!(domain.descriptors[0].key, "1.50");
    assert_eq!(domain.descriptors[0].value.as_deref(), Some("true"));
    assert_eq!(domain.descriptors[1].value, None);
}

#[test]
fn descriptor_line_is_its_keys_line() {
    let yaml = "domain: a\ndescriptors:\n  - value: v\n\n    key: k\n  - {key: j}\n";
    let domain = Config::from_yaml(yaml, "t").unwrap();
    let lines: Vec<_> = domain.descriptors.iter().map(|d| d.line).collect();
    assert_eq!(lines, [5, 6]);
}

#[test]
fn duplicate_siblings_name_both_lines() {
    let yaml =
        "domain: a\ndescriptors:\n  - key: k\n    value: v\n  - key: j\n  - key: k\n    value: v\n";
    fails(
        yaml,
        6,
        ConfigErrorKind::Duplicate,
        &["duplicate descriptor", "\"k\"", "\"v\"", "line 3"],
    );
    let yaml = "domain: a\ndescriptors:\n  - key: k\n  - key: k\n";
    fails(yaml, 4, ConfigErrorKind::Duplicate, &["no value", "line 3"]);
    // The same key and value under different parents is fine.
    let yaml = "domain: a\ndescriptors:\n  - key: p\n    descriptors: [{key: k}]\n  - key: q\n    descriptors: [{key: k}]\n";
    Config::from_yaml(yaml, "t").unwrap();
}

const HEAD: &str = "domain: a\ndescriptors:\n  - key: k\n";

fn with(lines: &str) -> String {
    format!("{HEAD}{lines}")
}

#[test]
fn unit_must_be_a_unit() {
    let err = invalid(
        &with("    rate_limit: { unit: minutes, requests_per_unit: 5 }\n"),
        4,
        &[],
    );
    assert_eq!(
        err.message(),
        "unit \"minutes\" is not a unit: write one of second, minute, hour, day, week, month, year"
    );
    let multi = with("    rate_limit:\n      requests_per_unit: 5\n      unit: Fortnight\n");
    invalid(&multi, 6, &["\"Fortnight\""]);
    for (text, unit) in [
        ("Hour", Unit::Hour),
        ("WEEK", Unit::Week),
        ("month", Unit::Month),
        ("year", Unit::Year),
    ] {
        let yaml = with(&format!(
            "    rate_limit: {{ unit: {text}, requests_per_unit: 5 }}\n"
        ));
        assert_eq!(
            counted(&Config::from_yaml(&yaml, "t").unwrap().descriptors[0]).unit,
            unit
        );
    }
}

#[test]
fn rate_limit_needs_unit_and_count() {
    invalid(
        &with("    rate_limit:\n      requests_per_unit: 5\n"),
        4,
        &["no `unit`", "unlimited: true"],
    );
    invalid(
        &with("    rate_limit:\n      unit: second\n"),
        4,
        &["no `requests_per_unit`", "at least 1"],
    );
    invalid(
        &with("    rate_limit: 5\n"),
        4,
        &["`rate_limit` must be a mapping", "a single value"],
    );
    let none = Config::from_yaml(&with("    rate_limit:\n"), "t").unwrap();
    assert_eq!(none.descriptors[0].limit, None);
}

#[test]
fn requests_per_unit_is_a_positive_u32() {
    let count = |n: &str| {
        with(&format!(
            "    rate_limit:\n      unit: second\n      requests_per_unit: {n}\n"
        ))
    };
    invalid(&count("0"), 6, &["is 0", "at least 1"]);
    invalid(
        &count("-1"),
        6,
        &["not a whole number", "from 1 to 4294967295"],
    );
    invalid(&count("1.5"), 6, &["not a whole number"]);
    invalid(&count("lots"), 6, &["\"lots\""]);
    invalid(
        &count("4294967296"),
        6,
        &["too large", "at most 4294967295"],
    );
    invalid(&count("[1]"), 6, &["needs a whole number"]);
    for nothing in ["~", "", "null"] {
        invalid(&count(nothing), 6, &["needs a whole number"]);
    }
    let max = Config::from_yaml(&count("4294967295"), "t").unwrap();
    assert_eq!(counted(&max.descriptors[0]).requests_per_unit, u32::MAX);
}

#[test]
fn unlimited_takes_no_unit_or_count() {
    let yaml = with("    rate_limit:\n      unlimited: true\n      requests_per_unit: 5\n");
    invalid(
        &yaml,
        6,
        &["`requests_per_unit` with `unlimited: true`", "remove"],
    );
    let yaml = with("    rate_limit:\n      unit: second\n      unlimited: true\n");
    invalid(&yaml, 5, &["`unit` with `unlimited: true`"]);
    let yaml = with("    rate_limit: { unlimited: yes }\n");
    invalid(&yaml, 4, &["`unlimited` must be true or false"]);
    let yaml = with("    rate_limit: { unlimited: true, name: free }\n");
    let named = Config::from_yaml(&yaml, "t").unwrap();
    let free = Some(LimitConfig::Unlimited {
        name: Some("free".into()),
    });
    assert_eq!(named.descriptors[0].limit, free);
    let yaml = with("    rate_limit: { unlimited: false, unit: hour, requests_per_unit: 2 }\n");
    assert_eq!(
        counted(&Config::from_yaml(&yaml, "t").unwrap().descriptors[0]).unit,
        Unit::Hour
    );
}

#[test]
fn refused_envoy_fields_say_unsupported() {
    let yaml = with("    rate_limit:\n      unit: second\n      requests_per_unit: 5\n      replaces:\n        - name: other\n");
    fails(
        &yaml,
        7,
        ConfigErrorKind::Unsupported,
        &["`replaces`", "not supported by ratekeeper serve", "remove"],
    );
    let yaml = with("    value: a*\n    share_threshold: true\n");
    fails(
        &yaml,
        5,
        ConfigErrorKind::Unsupported,
        &["`share_threshold`", "not supported by ratekeeper serve"],
    );
}

#[test]
fn metrics_fields_are_checked_and_ignored() {
    let yaml = with("    detailed_metric: true\n    value_to_metric: false\n");
    assert_eq!(
        Config::from_yaml(&yaml, "t").unwrap().descriptors[0].limit,
        None
    );
    invalid(
        &with("    detailed_metric: 1\n"),
        4,
        &["`detailed_metric` must be true or false"],
    );
    invalid(
        &with("    shadow_mode: on\n"),
        4,
        &["`shadow_mode` must be true or false"],
    );
}

const LIMIT: &str = "    rate_limit: { unit: second, requests_per_unit: 10 }\n";

fn limited(extra: &str) -> String {
    with(&format!("{LIMIT}{extra}"))
}

#[test]
fn additions_parse() {
    let yaml =
        limited("    algorithm: Pacer\n    max_wait: 1s 500ms\n    on_redis_failure: local\n");
    let limit = counted(&Config::from_yaml(&yaml, "t").unwrap().descriptors[0]).clone();
    assert_eq!(limit.algorithm, Algorithm::Pacer);
    assert_eq!(limit.max_wait, Duration::from_millis(1500));
    assert_eq!(limit.on_redis_failure, Some(FailurePolicy::Local));
    let yaml = limited(
        "    algorithm: refill\n    burst: 1\n    max_wait: 0\n    on_redis_failure: allow\n",
    );
    let limit = counted(&Config::from_yaml(&yaml, "t").unwrap().descriptors[0]).clone();
    assert_eq!((limit.burst, limit.max_wait), (Some(1), Duration::ZERO));
    assert_eq!(limit.on_redis_failure, Some(FailurePolicy::Allow));
    // The CLI's other names for allow and deny, and a name of neither.
    for (text, policy) in [
        ("open", FailurePolicy::Allow),
        ("Closed", FailurePolicy::Deny),
    ] {
        let yaml = limited(&format!("    on_redis_failure: {text}\n"));
        let limit = counted(&Config::from_yaml(&yaml, "t").unwrap().descriptors[0]).clone();
        assert_eq!(limit.on_redis_failure, Some(policy), "{text}");
    }
    invalid(
        &limited("    on_redis_failure: shut\n"),
        5,
        &["\"shut\" is not a policy", "allow, deny or local"],
    );
}

#[test]
fn additions_need_a_counted_limit() {
    invalid(
        &with("    burst: 5\n"),
        4,
        &["`burst` needs a counted `rate_limit`", "requests_per_unit"],
    );
    invalid(
        &with("    max_wait: 5ms\n"),
        4,
        &["`max_wait` needs a counted"],
    );
    let yaml = with("    rate_limit: { unlimited: true }\n    algorithm: pacer\n");
    invalid(
        &yaml,
        5,
        &["`algorithm` has no effect with `unlimited: true`", "remove"],
    );
    let yaml = with("    rate_limit:\n    on_redis_failure: deny\n");
    invalid(&yaml, 5, &["`on_redis_failure` needs a counted"]);
}

#[test]
fn burst_is_refill_only_and_positive() {
    invalid(
        &limited("    algorithm: cycle\n    burst: 5\n"),
        6,
        &["only for `algorithm: refill`"],
    );
    invalid(
        &limited("    burst: 5\n    algorithm: pacer\n"),
        5,
        &["only for `algorithm: refill`"],
    );
    invalid(
        &limited("    burst: 0\n"),
        5,
        &["`burst` is 0", "at least 1"],
    );
    invalid(
        &limited("    burst: big\n"),
        5,
        &["`burst` \"big\" is not a whole number"],
    );
}

#[test]
fn addition_values_must_be_known() {
    invalid(
        &limited("    algorithm: gcra\n"),
        5,
        &["\"gcra\"", "refill, cycle or pacer"],
    );
    invalid(
        &limited("    on_redis_failure: retry\n"),
        5,
        &["\"retry\"", "allow, deny or local"],
    );
    invalid(
        &limited("    max_wait: 50\n"),
        5,
        &["\"50\" is not a duration", "50ms"],
    );
    invalid(&limited("    max_wait: soon\n"), 5, &["not a duration"]);
    invalid(&limited("    max_wait:\n"), 5, &["`max_wait` is empty"]);
}

/// A domain whose descriptors nest `levels` deep, the last with a limit.
fn nested(levels: usize) -> String {
    let mut yaml = String::from("domain: a\ndescriptors:\n");
    for depth in 0..levels {
        let pad = "  ".repeat(2 * depth + 1);
        yaml.push_str(&format!("{pad}- key: k{depth}\n"));
        if depth + 1 < levels {
            yaml.push_str(&format!("{pad}  descriptors:\n"));
        } else {
            yaml.push_str(&format!(
                "{pad}  rate_limit: {{unit: second, requests_per_unit: 1}}\n"
            ));
        }
    }
    yaml
}

#[test]
fn deep_nesting_is_refused() {
    let err = Config::from_yaml(&nested(70), "t").unwrap_err();
    assert!(err.message().contains("deeper than 64"), "{err}");
    // The deepest tree allowed, and one level more.
    let deepest = Config::from_yaml(&nested(64), "t").unwrap();
    let mut level = &deepest.descriptors;
    for _ in 1..64 {
        level = &level[0].descriptors;
    }
    assert_eq!(level[0].key, "k63");
    let err = Config::from_yaml(&nested(65), "t").unwrap_err();
    assert!(err.message().contains("deeper than 64"), "{err}");
}

#[test]
fn non_utf8_file_is_an_io_error() {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("config-latin1.yaml");
    std::fs::write(&path, b"domain: caf\xe9\n").unwrap();
    let err = Config::load(&path).unwrap_err();
    assert_eq!((err.kind(), err.line()), (ConfigErrorKind::Io, 0));
    assert!(err.message().contains("not UTF-8"), "{err}");
}

#[test]
fn a_file_named_directly_is_read_whatever_its_name() {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("config-domain.conf");
    std::fs::write(&path, "domain: conf\n").unwrap();
    let config = Config::load(&path).unwrap();
    assert_eq!(config.domains[0].domain, "conf");
    assert_eq!(config.domains[0].source, path.display().to_string());
}
