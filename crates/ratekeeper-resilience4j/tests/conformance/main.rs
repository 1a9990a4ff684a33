//! Replays every conformance vector file on a manual clock.
//!
//! Files: every `*.json` in `tests/vectors/`, plus every `*.json` in the folder
//! named by the environment variable `RATEKEEPER_VECTORS`, if set. The replayer
//! is chosen by the file's `format` and each vector's `family`; a format or
//! family this crate does not implement yet is reported as unsupported (set
//! `RATEKEEPER_VECTORS_STRICT=1` to make that a failure), never skipped
//! silently. A failure names the file, the vector and the step.
//!
//! Where a vector carries the reference's value beside ours (`legacy_expect`,
//! `upstream_expect`, `upstream*`), the primary `expect` is checked: it is
//! ratekeeper's behaviour, and the differences are documented on the limiter.
//! A vector that exercises a documented deviation but carries no such
//! alternative (Guava with a zero warm-up period) is replayed and reported as
//! a known deviation: counted and printed, a failure only under
//! `RATEKEEPER_VECTORS_STRICT=1`. A vector marked `applicable_to_rust: false`
//! (a Java null argument) is counted and listed as not applicable.
//!
//! This crate replays the `resilience4j` format (the refill and cycle
//! limiters behind Resilience4j's interface, built with the limiters'
//! default builder). The `nosqlbench` and `guava` formats are the core
//! crate's (`ratekeeper`'s conformance test): here their vectors are counted
//! as replayed there, neither passed nor failed. The harness (finding the
//! files, the tally, the helpers) is the core crate's `harness.rs`, shared.

#[path = "../../../ratekeeper/tests/conformance/harness.rs"]
mod harness;
mod resilience4j;

use harness::*;
use serde_json::Value;

#[test]
fn conformance_vectors() {
    harness::run(env!("CARGO_MANIFEST_DIR"), replay);
}

/// Replays the resilience4j format; the nosqlbench and guava formats are the
/// core crate's.
fn replay(name: &str, format: &str, doc: &Value, tally: &mut Tally) -> bool {
    if format == "refill-r4j-ratelimiter-vectors/2" {
        resilience4j::replay_file(name, doc, tally);
    } else if format.starts_with("nosqlbench-ratelimiter-vectors/")
        || format.starts_with("guava-ratelimiter-vectors/")
    {
        elsewhere(name, doc, tally, "ratekeeper");
    } else {
        return false;
    }
    true
}
