//! Criterion benchmarks for ratekeeper, beside governor 0.10 as the peer.
//!
//! Groups:
//!
//! * `clock`: one clock read (`Instant::now`, [`ratekeeper::MonotonicClock`],
//!   [`ratekeeper::TscClock`] (the default clock), `quanta::Clock::now` and
//!   `quanta::Clock::raw`).
//! * `uncontended`: one grant on one thread from a limiter that never makes the
//!   caller wait (see `single_threaded.rs`).
//! * `contended`: aggregate grants per second of 1 and 2 threads sharing one
//!   such limiter (see `multi_threaded.rs`).
//! * `smooth_sync`: Guava's state behind a mutex against a 128-bit
//!   compare-and-swap (see `smooth_sync.rs`).
//!
//! Run with `cargo bench -p ratekeeper-bench --bench ratekeeper` (add
//! `-- --quick` for a fast pass, or a group name such as `-- contended` to
//! filter). The measured numbers are in `BENCHMARKS.md` at the workspace root.

use std::time::Duration;

use criterion::{criterion_main, Criterion};

mod clock;
mod multi_threaded;
mod single_threaded;
mod smooth_sync;

/// Short runs: the project's machines have 2 shared cores, so a whole
/// `cargo bench` stays within a couple of minutes; compare peers measured in
/// the same run.
fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// `criterion_group!` defines an undocumented `pub fn`; it lives here so the
/// workspace's `missing_docs` lint can be allowed for it alone.
#[allow(missing_docs)]
mod harness {
    use criterion::criterion_group;

    use super::{clock, config, multi_threaded, single_threaded, smooth_sync};

    criterion_group! {
        name = benches;
        config = config();
        targets = clock::bench, single_threaded::bench, multi_threaded::bench, smooth_sync::bench
    }
}

criterion_main!(harness::benches);
