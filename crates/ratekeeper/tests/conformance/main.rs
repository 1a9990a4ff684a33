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
//! One replayer per vector format: `nosqlbench` (the Pacer, the rate spec and
//! the token pool) and `guava` (the smooth limiters). The `resilience4j`
//! format (the refill and cycle limiters behind Resilience4j's interface) is
//! replayed by the `ratekeeper-resilience4j` crate's conformance test: here
//! its vectors are counted as replayed there, neither passed nor failed. This
//! file dispatches on each file's format; `harness.rs`, which the
//! `ratekeeper-resilience4j` crate's conformance test shares, finds the
//! files and keeps the tally and the helpers the replayers use.

mod guava;
mod harness;
mod nosqlbench;

use harness::*;
use serde_json::Value;

#[test]
fn conformance_vectors() {
    harness::run(env!("CARGO_MANIFEST_DIR"), replay);
}

/// Replays the nosqlbench and guava formats; the resilience4j format is the
/// `ratekeeper-resilience4j` crate's.
fn replay(name: &str, format: &str, doc: &Value, tally: &mut Tally) -> bool {
    if format.starts_with("nosqlbench-ratelimiter-vectors/") {
        nosqlbench::replay_file(name, doc, tally);
    } else if format.starts_with("guava-ratelimiter-vectors/") {
        guava::replay_file(name, doc, tally);
    } else if format == "refill-r4j-ratelimiter-vectors/2" {
        elsewhere(name, doc, tally, "ratekeeper-resilience4j");
    } else {
        return false;
    }
    true
}
