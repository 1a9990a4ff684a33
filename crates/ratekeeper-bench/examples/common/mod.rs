//! What the measuring examples share: medians over runs, timing a phase,
//! resident memory, and list options.
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

/// This process's resident memory in bytes (Linux's `/proc/self/statm`,
/// 4 KiB pages); 0 where it cannot be read.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
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
