use super::*;

#[derive(Debug, thiserror::Error)]
#[error("outer")]
struct Outer(#[source] Inner);

#[derive(Debug, thiserror::Error)]
#[error("inner")]
struct Inner;

#[test]
fn the_chain_names_each_cause_once() {
    let err = ConfigError::new(ConfigErrorKind::Rate, Outer(Inner));
    assert_eq!(err.to_string(), "outer");
    assert_eq!(
        err.source().map(|s| s.to_string()).as_deref(),
        Some("inner")
    );
    assert!(err.downcast_ref::<Outer>().is_some());
    assert!(err.downcast_ref::<Inner>().is_none());
}

#[test]
fn equal_when_kind_and_message_are() {
    let a = ConfigError::new(ConfigErrorKind::Rate, Inner);
    assert_eq!(a, a.clone());
    assert_ne!(a, ConfigError::new(ConfigErrorKind::Timeout, Inner));
    assert_ne!(a, ConfigError::new(ConfigErrorKind::Rate, Outer(Inner)));
}

#[test]
fn small_enough_to_return_by_value() {
    assert!(std::mem::size_of::<ConfigError>() <= 24);
}
