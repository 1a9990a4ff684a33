//! What the measuring examples share: medians over runs, timing a phase,
//! and list options.
//!
//! Included by each example with `#[path = "common/mod.rs"] mod common;`
//! (not an example itself: Cargo only builds `examples/*.rs` and
//! `examples/*/main.rs`). Each example uses part of it.
#![allow(dead_code)]

use std::error::Error;
use std::time::Instant;

/// The median of `v` (the mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median, min and max of `v`.
pub fn spread(v: Vec<f64>) -> (f64, f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (median(v), lo, hi)
}

/// Milliseconds `f` takes.
pub fn ms(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e3
}

/// A comma-separated option value, each item parsed by `f`.
pub fn list<T>(
    v: &str,
    f: impl Fn(&str) -> Result<T, Box<dyn Error>>,
) -> Result<Vec<T>, Box<dyn Error>> {
    v.split(',').map(|x| f(x.trim())).collect()
}
