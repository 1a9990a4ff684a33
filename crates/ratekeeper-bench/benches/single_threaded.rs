//! `uncontended` group: the cost of one grant on one thread, from limiters
//! configured so that they never make the caller wait.
//!
//! * The Pacer runs at 1e9 ops/s on the real [`DefaultClock`]: one permit is a
//!   1 ns slice, and one thread cannot take more than one permit per ns, so the
//!   schedule only falls further behind the clock and `acquire()` never sleeps.
//!   [`assert_never_waits`] checks this before and after the measurements: every
//!   grant must be ready no later than it started.
//! * The TokenPool runs at 1e9 ops/s too, filled inline: its active pool
//!   (1 ms of tokens) is refilled from the clock whenever it runs short, which
//!   on one thread always gives at least the one token an op needs.
//! * Guava's smooth limiters run at `f64::INFINITY` permits/s, where the
//!   stable interval is 0 and every wait is 0: [`SmoothBursty`] with Guava's
//!   1 s of burst, and [`SmoothWarmingUp`] with a 1 s warm-up (cold factor
//!   3), whose cost of a stored permit is then 0 too. Both take one 128-bit
//!   compare-exchange per grant.
//! * The Resilience4j-style limiters run at 1e9 permits per second (1 ns per
//!   permit) with the timeout at 0: [`RefillLimiter`] (a bucket of 1e9
//!   permits, starting full) and [`CycleLimiter`] (1e9 permits per 1 s
//!   cycle). Each is measured through the crate's [`RateLimiter::acquire`]
//!   and through Resilience4j's `acquire_permission` (which also checks for
//!   event subscribers and keeps the waiting gauge).
//! * governor 0.10: `RateLimiter::direct(Quota::per_second(NonZeroU32::MAX))`,
//!   whose `check()` never denies (1 ns per cell, a burst of 2^32 − 1 cells);
//!   the setup asserts that it is `Ok`.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::Criterion;
use governor::{DefaultDirectRateLimiter, Quota};
use ratekeeper::{
    Clock, DefaultClock, Pacer, Rate, RateLimiter, SmoothBursty, SmoothWarmingUp, TokenPool,
};
use ratekeeper_resilience4j::{
    CycleConfig, CycleLimiter, PermitLimiter, RefillConfig, RefillLimiter,
};

/// Rate of the unthrottled pacers: one 1 ns slice per permit.
pub const UNTHROTTLED: f64 = 1e9;

/// A started pacer on the real clock at `rate` with `strictness`.
pub fn pacer(rate: f64, strictness: f64, cached_clock: bool) -> Pacer<DefaultClock> {
    let rate = Rate::new(rate).expect("valid rate");
    Pacer::builder(rate)
        .strictness(strictness)
        .cached_clock(cached_clock)
        .build()
        .expect("valid pacer")
}

/// A started token pool on the real clock at 1e9 ops/s, filled inline; it
/// reads the clock for every grant unless `cached_clock`.
pub fn pool_unthrottled(cached_clock: bool) -> TokenPool<DefaultClock> {
    TokenPool::builder(Rate::new(UNTHROTTLED).expect("valid rate"))
        .cached_clock(cached_clock)
        .build()
        .expect("valid pool")
}

/// Guava's SmoothBursty on the real clock at an infinite rate: every wait is 0.
pub fn smooth_bursty_unthrottled() -> SmoothBursty<DefaultClock> {
    SmoothBursty::builder(f64::INFINITY)
        .build_with_clock(DefaultClock::new())
        .expect("valid smooth bursty limiter")
}

/// Guava's SmoothWarmingUp on the real clock at an infinite rate with a 1 s
/// warm-up: every wait is 0, cold or not.
pub fn smooth_warmup_unthrottled() -> SmoothWarmingUp<DefaultClock> {
    SmoothWarmingUp::builder(f64::INFINITY)
        .warmup(Duration::from_secs(1))
        .build_with_clock(DefaultClock::new())
        .expect("valid smooth warming-up limiter")
}

/// A refill limiter of 1e9 permits per second (1 ns per permit), a bucket of
/// 1e9 starting full, and no timeout: one thread never waits.
pub fn refill_unthrottled() -> RefillLimiter<DefaultClock> {
    let config = RefillConfig::builder()
        .limit_for_period(1_000_000_000)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout(Duration::ZERO)
        .build()
        .expect("valid refill config");
    RefillLimiter::new_with_clock("bench", config, DefaultClock::new())
}

/// A cycle limiter of 1e9 permits per 1 s cycle and no timeout.
pub fn cycle_unthrottled() -> CycleLimiter<DefaultClock> {
    let config = CycleConfig::builder()
        .limit_for_period(1_000_000_000)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout(Duration::ZERO)
        .build()
        .expect("valid cycle config");
    CycleLimiter::new_with_clock("bench", config, DefaultClock::new())
}

/// Asserts that Resilience4j's `acquire_permission` granted `n` times.
pub fn assert_always_permitted<L: PermitLimiter>(limiter: &L, n: u64) {
    for i in 0..n {
        assert_eq!(
            limiter.acquire_permission(1),
            Ok(true),
            "acquire_permission {i} refused"
        );
    }
}

/// Measures Resilience4j's `acquire_permission(1)` between two checks that
/// it always grants.
#[inline(never)]
fn bench_acquire_permission<L: PermitLimiter>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    limiter: &L,
    check: u64,
) {
    assert_always_permitted(limiter, check);
    g.bench_function(name, |b| {
        b.iter(|| black_box(black_box(limiter).acquire_permission(1)))
    });
    assert_always_permitted(limiter, check);
}

/// governor's direct limiter with the largest quota, which never denies.
pub fn governor_unthrottled() -> DefaultDirectRateLimiter {
    let lim = governor::RateLimiter::direct(Quota::per_second(NonZeroU32::MAX));
    for _ in 0..1_000 {
        assert!(lim.check().is_ok(), "governor denied an unthrottled check");
    }
    lim
}

/// Takes `n` blocking grants and panics if any of them had to wait, i.e. was
/// ready later than it started (a wait would have been coalesced or slept).
pub fn assert_never_waits<L: RateLimiter>(limiter: &L, n: u64) {
    for i in 0..n {
        let g = limiter.acquire();
        assert!(
            g.ready_nanos() <= g.started_nanos(),
            "grant {i} had to wait: {g:?}"
        );
    }
}

/// Asserts that `check()` never denied over `n` calls.
pub fn assert_governor_never_denies(lim: &DefaultDirectRateLimiter, n: u64) {
    for i in 0..n {
        assert!(lim.check().is_ok(), "governor denied check {i}");
    }
}

/// Measures `limiter.acquire()` between two never-waits checks. One
/// monomorphised, never-inlined function per limiter type: with every loop
/// inlined into one function, adding the token pool's loops changed how
/// LLVM compiled the Pacer's (6 ns became 17 ns in the same run, although the
/// library was identical).
#[inline(never)]
fn bench_acquire<L: RateLimiter>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    limiter: &L,
    check: u64,
) {
    assert_never_waits(limiter, check);
    g.bench_function(name, |b| b.iter(|| black_box(black_box(limiter).acquire())));
    assert_never_waits(limiter, check);
}

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("uncontended");
    const CHECK: u64 = 1_000_000;

    let variants: [(&str, f64, f64, bool); 5] = [
        // The default strictness, burst 1.1, and the default exact path (a
        // clock read per grant). At 1e9/s its burst slice
        // floor(1e9 / (1e9 × 1.1)) is 0 ns, which makes the pacer take the
        // single-timeline path of average mode.
        ("pacer_acquire/burst_1.1", UNTHROTTLED, 1.1, false),
        ("pacer_acquire/average_0", UNTHROTTLED, 0.0, false),
        ("pacer_acquire/strict_1.0", UNTHROTTLED, 1.0, false),
        // The opt-in cached clock: callers behind schedule skip the read.
        (
            "pacer_acquire/burst_1.1_cached_clock",
            UNTHROTTLED,
            1.1,
            true,
        ),
        // Burst 1.1 at 5e8/s: a 2 ns slice and a 1 ns burst slice, so the
        // default strictness takes its real dual-timeline path, still without
        // ever waiting.
        ("pacer_acquire/burst_1.1_at_5e8", 5e8, 1.1, false),
    ];
    for (name, rate, strictness, cached) in variants {
        bench_acquire(&mut g, name, &pacer(rate, strictness, cached), CHECK);
    }

    // The non-blocking peer of governor's `check()`: a bounded reservation
    // (compare-exchange loop) with a zero maximum wait.
    // Micro-batching: one handle, one atomic add per lease of up to 1024
    // slots (`pacer::batch`).
    for (name, strictness) in [
        ("pacer_handle_acquire/burst_1.1", 1.1),
        ("pacer_handle_acquire/average_0", 0.0),
    ] {
        let p = pacer(UNTHROTTLED, strictness, false);
        let h = p.handle();
        assert_never_waits(&h, CHECK);
        g.bench_function(name, |b| b.iter(|| black_box(black_box(&h).acquire())));
        assert_never_waits(&h, CHECK);
    }

    let p = pacer(UNTHROTTLED, 1.1, false);
    assert_never_waits(&p, CHECK);
    g.bench_function("pacer_try_acquire/burst_1.1", |b| {
        b.iter(|| black_box(black_box(&p).try_acquire()).expect("unthrottled"))
    });
    assert_never_waits(&p, CHECK);

    for (name, cached) in [
        ("pool_acquire/inline", false),
        ("pool_acquire/inline_cached_clock", true),
    ] {
        bench_acquire(&mut g, name, &pool_unthrottled(cached), CHECK);
    }

    bench_acquire(
        &mut g,
        "smooth_bursty_acquire/infinite_rate",
        &smooth_bursty_unthrottled(),
        CHECK,
    );
    bench_acquire(
        &mut g,
        "smooth_warmup_acquire/infinite_rate",
        &smooth_warmup_unthrottled(),
        CHECK,
    );

    bench_acquire(&mut g, "refill_acquire", &refill_unthrottled(), CHECK);
    bench_acquire_permission(
        &mut g,
        "refill_acquire_permission",
        &refill_unthrottled(),
        CHECK,
    );
    bench_acquire(&mut g, "cycle_acquire", &cycle_unthrottled(), CHECK);
    bench_acquire_permission(
        &mut g,
        "cycle_acquire_permission",
        &cycle_unthrottled(),
        CHECK,
    );

    let gov = governor_unthrottled();
    assert_governor_never_denies(&gov, CHECK);
    g.bench_function("governor_check", |b| {
        b.iter(|| black_box(black_box(&gov).check()))
    });
    assert_governor_never_denies(&gov, CHECK);

    // The floor: the one uncontended atomic read-modify-write a Pacer grant
    // makes (the `fetch_add` on its schedule), with nothing around it.
    let floor = AtomicU64::new(0);
    g.bench_function("floor_atomic_fetch_add", |b| {
        b.iter(|| black_box(black_box(&floor).fetch_add(1, Ordering::AcqRel)))
    });
    // The floor of an exact grant: that add and one read of the default
    // clock (issue 15's target: a grant within this plus 5 ns).
    let clock = DefaultClock::new();
    g.bench_function("floor_fetch_add_and_clock_read", |b| {
        b.iter(|| {
            let slot = black_box(&floor).fetch_add(1, Ordering::AcqRel);
            black_box((slot, black_box(&clock).now_nanos()))
        })
    });

    g.finish();
}
