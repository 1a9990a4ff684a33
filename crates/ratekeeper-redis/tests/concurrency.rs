//! Many callers on one key: tasks through one backend, and processes each
//! with its own, never take more than the limit gives over the run.

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ratekeeper::bucket::RefillConfig;
use ratekeeper::Rate;
use ratekeeper_redis::{Backend, FailurePolicy, RedisLimiter, SharedLimit, Source};

/// Tasks on one key through one backend.
const TASKS: usize = 2_000;

/// A backend whose deadline no round trip under this load reaches: the
/// tests count the server's decisions, not the failure policy's.
async fn patient_backend(url: &str) -> Backend {
    Backend::builder(url)
        .deadline(Duration::from_secs(5))
        .connect()
        .await
        .expect("connect")
}

/// A refill bucket of `per_period` permits every `period`, holding
/// `capacity` (full at the start), that never waits.
fn bucket(per_period: u32, period: Duration, capacity: u32) -> SharedLimit {
    SharedLimit::Refill(
        RefillConfig::builder()
            .limit_for_period(u64::from(per_period))
            .limit_refresh_period(period)
            .permit_capacity(u64::from(capacity))
            .initial_permits(u64::from(capacity))
            .timeout(Duration::ZERO)
            .build()
            .unwrap(),
    )
}

/// What `tasks` tasks took from `limiter`, each asking for one permit
/// with `max_wait` again and again for `run`.
struct Tally {
    granted: u64,
    refused: u64,
    /// From before the first request was sent to after the last answer.
    elapsed: Duration,
}

impl Tally {
    fn seconds(&self) -> f64 {
        self.elapsed.as_secs_f64()
    }
}

/// Runs `tasks` callers on `limiter` for `run`; every decision must be the
/// server's or its denial cache's (the limiter fails closed, so nothing is
/// admitted unchecked).
async fn hammer(
    limiter: RedisLimiter,
    tasks: usize,
    run: Duration,
    max_wait: Option<Duration>,
) -> Tally {
    let limiter = Arc::new(limiter);
    let granted = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (limiter, granted, refused) = (limiter.clone(), granted.clone(), refused.clone());
            tokio::spawn(async move {
                while start.elapsed() < run {
                    let d = limiter.reserve(1, max_wait).await;
                    // The server's, or its refusal remembered by the
                    // denial cache (which refuses only what it would).
                    assert!(
                        matches!(d.source(), Source::Redis | Source::Cache),
                        "{:?}: {:?}",
                        d.source(),
                        d.backend_error()
                    );
                    // Ordering: Relaxed; counters read after the joins.
                    if d.is_granted() {
                        granted.fetch_add(1, Ordering::Relaxed);
                    } else {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.await.expect("task");
    }
    let elapsed = start.elapsed();
    Tally {
        granted: granted.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
        elapsed,
    }
}

/// Slack for the server clock's whole microseconds at both ends.
const CLOCK_SLACK: Duration = Duration::from_millis(1);

#[test]
fn many_tasks_on_one_bucket_take_at_most_capacity_plus_the_refill() {
    let Some(url) = common::redis_url() else {
        return;
    };
    common::runtime().block_on(async {
        let backend = patient_backend(&url).await;
        // 500 permits a second, 50 at most at once.
        let (rate, capacity) = (500.0, 50.0);
        let limit = bucket(50, Duration::from_millis(100), 50);
        let limiter = RedisLimiter::builder(&backend, common::key("tasks-bucket"), limit)
            .failure_policy(FailurePolicy::Closed)
            .build()
            .unwrap();
        let t = hammer(
            limiter,
            TASKS,
            Duration::from_millis(800),
            Some(Duration::ZERO),
        )
        .await;
        let bound = capacity + rate * (t.elapsed + CLOCK_SLACK).as_secs_f64();
        eprintln!(
            "bucket: {} granted, {} refused in {:?} (bound {bound:.0})",
            t.granted, t.refused, t.elapsed
        );
        assert!(t.granted as f64 <= bound, "{} granted > {bound}", t.granted);
        assert!(
            t.refused > 0,
            "the limit never bound: {} granted",
            t.granted
        );
        // Liveness, loosely: the bucket kept refilling under the load.
        assert!(
            t.granted as f64 >= rate * t.seconds() / 4.0,
            "only {} granted in {:?}",
            t.granted,
            t.elapsed
        );
        assert_eq!(backend.stats().failures, 0);
    });
}

#[test]
fn many_tasks_on_one_schedule_take_at_most_one_slot_each() {
    let Some(url) = common::redis_url() else {
        return;
    };
    common::runtime().block_on(async {
        let backend = patient_backend(&url).await;
        let rate = 500.0;
        let slot = Duration::from_secs_f64(1.0 / rate);
        // (strictness, max wait): try-acquires in average, compensated,
        // strict and burst modes; and waits of up to 20 ms.
        for (strictness, max_wait) in [
            (0.0, Duration::ZERO),
            (0.3, Duration::ZERO),
            (1.0, Duration::ZERO),
            (1.5, Duration::from_millis(20)),
        ] {
            let limit = SharedLimit::pacer(Rate::new(rate).unwrap(), strictness).unwrap();
            let limiter = RedisLimiter::builder(&backend, common::key("tasks-pacer"), limit)
                .failure_policy(FailurePolicy::Closed)
                .build()
                .unwrap();
            let t = hammer(limiter, TASKS, Duration::from_millis(400), Some(max_wait)).await;
            // The k-th grant's slot is (k - 1) slots after the first
            // request, and at most max_wait ahead of its own request.
            let window = t.elapsed + max_wait + CLOCK_SLACK;
            let bound = 1.0 + window.as_secs_f64() / slot.as_secs_f64();
            eprintln!(
                "pacer {strictness}, max wait {max_wait:?}: {} granted, {} refused in {:?} \
                 (bound {bound:.0})",
                t.granted, t.refused, t.elapsed
            );
            assert!(
                t.granted as f64 <= bound,
                "strictness {strictness}: {} granted > {bound}",
                t.granted
            );
            assert!(
                t.refused > 0,
                "strictness {strictness}: the limit never bound"
            );
            // Liveness, loosely, where unused time is kept (the average
            // mode's accumulator): strict and burst modes forfeit the time
            // the server is not asked, and a loaded client asks in bursts.
            if strictness == 0.0 {
                assert!(
                    t.granted as f64 >= rate * t.seconds() / 4.0,
                    "only {} granted in {:?}",
                    t.granted,
                    t.elapsed
                );
            }
            assert!(t.granted > 0, "strictness {strictness}: nothing granted");
        }
        assert_eq!(backend.stats().failures, 0);
    });
}

/// The environment a child process of
/// [`several_processes_on_one_bucket_stay_within_it`] reads.
const CHILD_KEY: &str = "RK_TEST_CHILD_KEY";
const CHILD_URL: &str = "RK_TEST_CHILD_URL";
const CHILD_START_MS: &str = "RK_TEST_CHILD_START_MS";
const CHILD_RUN_MS: &str = "RK_TEST_CHILD_RUN_MS";

/// The multi-process test's limit: 200 permits a second, 20 at once.
const PROCESS_RATE: f64 = 200.0;
const PROCESS_CAPACITY: f64 = 20.0;

fn process_limit() -> SharedLimit {
    bucket(20, Duration::from_millis(100), 20)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Not a test of its own: the body of one child process of
/// [`several_processes_on_one_bucket_stay_within_it`], which runs this test
/// binary again with the key in the environment. Without it, returns.
#[test]
fn child_process_worker() {
    let Ok(key) = std::env::var(CHILD_KEY) else {
        return;
    };
    let var = |name: &str| std::env::var(name).expect(name);
    let url = var(CHILD_URL);
    let start_ms: u64 = var(CHILD_START_MS).parse().unwrap();
    let run = Duration::from_millis(var(CHILD_RUN_MS).parse().unwrap());
    common::runtime().block_on(async {
        let backend = patient_backend(&url).await;
        let limiter = RedisLimiter::builder(&backend, key, process_limit())
            .failure_policy(FailurePolicy::Closed)
            .build()
            .unwrap();
        // Every process starts at the same moment, so that they contend.
        let now = unix_ms();
        if start_ms > now {
            tokio::time::sleep(Duration::from_millis(start_ms - now)).await;
        }
        let t = hammer(limiter, 50, run, Some(Duration::ZERO)).await;
        println!("rk-child granted={} refused={}", t.granted, t.refused);
    });
}

#[test]
fn several_processes_on_one_bucket_stay_within_it() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let key = common::key("processes");
    let exe = std::env::current_exe().unwrap();
    // Time for the children to start and connect before they begin.
    let start_ms = unix_ms() + 500;
    let run_ms = 800;
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "child_process_worker", "--nocapture"])
                .args(["--test-threads", "1"])
                .env(CHILD_KEY, &key)
                .env(CHILD_URL, &url)
                .env(CHILD_START_MS, start_ms.to_string())
                .env(CHILD_RUN_MS, run_ms.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn the test binary")
        })
        .collect();
    let (mut granted, mut refused) = (0u64, 0u64);
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "a child failed: {stdout}");
        let line = stdout
            .lines()
            .find_map(|l| Some(l.split_once("rk-child ")?.1))
            .unwrap_or_else(|| panic!("no tally from a child: {stdout}"));
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                .unwrap()
                .parse()
                .unwrap()
        };
        granted += field("granted");
        refused += field("refused");
    }
    // Every request was sent after the common start (on the same machine's
    // wall clock as the server's TIME) and answered before now.
    let window_ms = unix_ms().saturating_sub(start_ms) + 1;
    let bound = PROCESS_CAPACITY + PROCESS_RATE * window_ms as f64 / 1000.0;
    eprintln!(
        "3 processes: {granted} granted, {refused} refused in {window_ms} ms (bound {bound:.0})"
    );
    assert!(granted as f64 <= bound, "{granted} granted > {bound}");
    assert!(refused > 0, "the limit never bound");
    assert!(
        granted as f64 >= PROCESS_RATE * run_ms as f64 / 1000.0 / 4.0,
        "only {granted} granted"
    );
}

/// Try-acquires on a bucket that starts empty are granted once it has
/// refilled (on the server's clock): a refused first request starts the
/// bucket too.
#[test]
fn try_acquire_on_an_empty_new_bucket_is_granted_once_it_refills() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::builder(url)
            .deadline(Duration::from_secs(2))
            .connect()
            .await
            .unwrap();
        // One permit a millisecond, none at the start.
        let config = RefillConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_millis(1))
            .permit_capacity(1)
            .initial_permits(0)
            .timeout(Duration::ZERO)
            .build()
            .unwrap();
        let limiter =
            RedisLimiter::builder(&backend, common::key("empty"), SharedLimit::Refill(config))
                .failure_policy(FailurePolicy::Closed)
                .build()
                .unwrap();
        let start = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            let d = limiter.reserve(1, Some(Duration::ZERO)).await;
            assert_eq!(d.source(), Source::Redis, "{:?}", d.backend_error());
            if d.is_granted() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(1),
                "no grant in 1 s ({tries} tries) at a permit a millisecond"
            );
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
    });
}
