//! `clock` group: the cost of one clock read.

use std::hint::black_box;
use std::time::Instant;

use criterion::Criterion;
use ratekeeper::{Clock, MonotonicClock, TscClock};

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("clock");

    g.bench_function("std_instant_now", |b| b.iter(|| black_box(Instant::now())));

    let mono = MonotonicClock::new();
    g.bench_function("ratekeeper_monotonic_now_nanos", |b| {
        b.iter(|| black_box(black_box(&mono).now_nanos()))
    });

    let tsc = TscClock::new();
    eprintln!(
        "ratekeeper_tsc_now_nanos reads the TSC: {}",
        tsc.reads_tsc()
    );
    g.bench_function("ratekeeper_tsc_now_nanos", |b| {
        b.iter(|| black_box(black_box(&tsc).now_nanos()))
    });

    let q = quanta::Clock::new();
    g.bench_function("quanta_now", |b| b.iter(|| black_box(black_box(&q).now())));
    g.bench_function("quanta_raw", |b| b.iter(|| black_box(black_box(&q).raw())));

    g.finish();
}
