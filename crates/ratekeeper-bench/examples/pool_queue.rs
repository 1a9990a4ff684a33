//! What n queued claims (callers waiting for tokens) cost a token pool, on
//! a manual clock: queueing them, asking each once whether it may go (what
//! every async or blocked waiter does on each wake), and cancelling them
//! all, from the middle of the queue outwards (tasks dropped or timed out).
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example pool_queue
//! ```
//!
//! Each phase's total, in milliseconds, for n from 10,000 to 160,000: a
//! cost linear in the queue shows as time doubling with n, quadratic as
//! time quadrupling.

#[path = "common/mod.rs"]
mod common;

use std::task::Waker;

use common::ms;
use ratekeeper::pool::{Filling, TokenPool};
use ratekeeper::{Clock, ManualClock, Rate, RateLimiter};

fn main() {
    println!(
        "{:>8} {:>10} {:>10} {:>10}",
        "claims", "queue ms", "poll ms", "cancel ms"
    );
    for n in [10_000usize, 20_000, 40_000, 80_000, 160_000] {
        let clock = ManualClock::new(0);
        let pool = TokenPool::builder(Rate::new(100.0).expect("rate"))
            .filling(Filling::Manual)
            .build_with_clock(clock.clone())
            .expect("pool");
        let mut grants = Vec::with_capacity(n);
        let queue = ms(|| grants.extend((0..n).map(|_| pool.reserve(1, None).expect("grant"))));
        let now = clock.now_nanos();
        let poll = ms(|| {
            for g in &grants {
                std::hint::black_box(pool.poll_grant(g, now, Waker::noop()));
            }
        });
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| i.abs_diff(n / 2));
        let mut cancelled = 0;
        let cancel = ms(|| cancelled = order.iter().filter(|&&i| pool.cancel(&grants[i])).count());
        assert_eq!(pool.waiters(), 0, "{cancelled} of {n} cancelled");
        println!("{n:>8} {queue:>10.1} {poll:>10.1} {cancel:>10.1}");
    }
}
