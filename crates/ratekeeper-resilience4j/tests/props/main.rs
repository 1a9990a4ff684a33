//! Property tests of the Resilience4j limiters, in one test binary
//! (`cargo test -p ratekeeper-resilience4j --test props`). `refill` races
//! real threads on a manual clock.
//!
//! Failing cases proptest found are saved and replayed first on every run:
//! `tests/proptest-regressions/<module>.txt` (proptest's default for a test
//! binary with a `main.rs`).

mod refill;
