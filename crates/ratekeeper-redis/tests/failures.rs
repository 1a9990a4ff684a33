//! Failure injection, each test on a redis-server of its own: a stalled
//! server (SIGSTOP, then SIGCONT), a killed and restarted one, scripts
//! flushed under load, a closed port, a malformed URL, an invalid local
//! share (a key of another type is no failure: see fail_safe.rs). Whatever fails, every decision comes back
//! within about the deadline, says where it came from, carries the error,
//! and admits nothing unchecked unless the policy is `Open`.

mod common;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::OwnServer;
use ratekeeper::{AcquireError, ConfigErrorKind, Rate};
use ratekeeper_redis::{
    Backend, Decision, FailurePolicy, RedisError, RedisLimiter, SharedLimit, Source,
};

/// The deadline of the backends here.
const DEADLINE: Duration = Duration::from_millis(50);
/// Their circuit breaker's cool-down (3 failures open it).
const COOLDOWN: Duration = Duration::from_millis(300);
/// What a decision may take beyond the deadline on a loaded machine.
const SLACK: Duration = Duration::from_millis(150);

/// Runs `body` on a runtime, failing the test instead of hanging.
fn run<F: Future<Output = ()>>(body: F) {
    common::runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(20), body)
            .await
            .expect("the test hung")
    });
}

async fn connect(server: &OwnServer) -> Backend {
    Backend::builder(server.url())
        .deadline(DEADLINE)
        .breaker(3, COOLDOWN)
        .connect()
        .await
        .expect("connect")
}

/// A Pacer at 100/s (a 10 ms slot); the local fallback keeps `share` of it.
fn pacer() -> SharedLimit {
    SharedLimit::pacer(Rate::new(100.0).unwrap(), 1.0).unwrap()
}

fn limiter(backend: &Backend, name: &str, policy: FailurePolicy) -> RedisLimiter {
    RedisLimiter::builder(backend, common::key(name), pacer())
        .failure_policy(policy)
        .build()
        .unwrap()
}

const LOCAL: FailurePolicy = FailurePolicy::Local { share: 0.5 };

/// A try-acquire, timed: it must not hang.
async fn try_once(limiter: &RedisLimiter) -> (Decision, Duration) {
    let start = Instant::now();
    let d = tokio::time::timeout(
        Duration::from_secs(5),
        limiter.reserve(1, Some(Duration::ZERO)),
    )
    .await
    .expect("a decision past 5 s");
    (d, start.elapsed())
}

/// A decision the policy made after a failure: its source, the error
/// attached, and no unchecked admission unless `Open`. Returns whether it
/// granted.
fn by_policy(policy: FailurePolicy, d: &Decision) -> bool {
    assert!(d.backend_error().is_some(), "no error on {d:?}");
    match policy {
        FailurePolicy::Open => {
            assert_eq!(d.source(), Source::FailOpen, "{d:?}");
            assert!(d.is_granted(), "{d:?}");
        }
        FailurePolicy::Closed => {
            assert_eq!(d.source(), Source::FailClosed, "{d:?}");
            assert_eq!(d.result().unwrap_err(), AcquireError::Unavailable);
        }
        _ => assert_eq!(d.source(), Source::Local, "{d:?}"),
    }
    d.is_granted()
}

/// Asks until the server decides again, within `limit`.
async fn until_redis(limiter: &RedisLimiter, limit: Duration) -> Decision {
    let start = Instant::now();
    loop {
        let (d, _) = try_once(limiter).await;
        if d.source() == Source::Redis {
            return d;
        }
        assert!(
            start.elapsed() < limit,
            "still {} ({:?}) after {limit:?}",
            d.source(),
            d.backend_error()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The local fallback at half of 100/s grants a try-acquire at most once
/// every 20 ms (and once at the start).
fn local_bound(elapsed: Duration) -> u64 {
    1 + (elapsed.as_millis() / 20) as u64
}

fn stall_and_resume(policy: FailurePolicy, name: &str) {
    let Some(server) = OwnServer::start(name) else {
        return;
    };
    run(async {
        let backend = connect(&server).await;
        let limiter = limiter(&backend, name, policy);
        assert_eq!(try_once(&limiter).await.0.source(), Source::Redis);
        server.signal("STOP");
        let stalled = Instant::now();
        let mut granted = 0;
        // Three requests meet the stall, each ending at the deadline.
        for _ in 0..3 {
            let (d, took) = try_once(&limiter).await;
            assert!(took < DEADLINE + SLACK, "took {took:?}");
            assert!(
                matches!(d.backend_error(), Some(RedisError::Deadline(_))),
                "{d:?}"
            );
            granted += u64::from(by_policy(policy, &d));
        }
        let stats = backend.stats();
        assert!(stats.breaker_open, "{stats:?}");
        assert_eq!(stats.deadlines, 3, "{stats:?}");
        // The breaker now skips the server: no wait at all.
        for _ in 0..10 {
            let (d, took) = try_once(&limiter).await;
            assert!(took < DEADLINE, "a skipped request took {took:?}");
            assert!(
                matches!(d.backend_error(), Some(RedisError::BreakerOpen)),
                "{d:?}"
            );
            granted += u64::from(by_policy(policy, &d));
        }
        assert_eq!(backend.stats().skipped - stats.skipped, 10);
        if let FailurePolicy::Local { .. } = policy {
            let bound = local_bound(stalled.elapsed());
            assert!(granted <= bound, "local granted {granted} > {bound}");
        }
        server.signal("CONT");
        until_redis(&limiter, COOLDOWN * 10).await;
        assert!(!backend.stats().breaker_open);
        let by = limiter.stats();
        assert!(by.from(Source::Redis) >= 2, "{by:?}");
    });
}

#[test]
fn a_stalled_server_fails_open_then_recovers() {
    stall_and_resume(FailurePolicy::Open, "stall-open");
}

#[test]
fn a_stalled_server_fails_closed_then_recovers() {
    stall_and_resume(FailurePolicy::Closed, "stall-closed");
}

#[test]
fn a_stalled_server_falls_back_to_the_local_share_then_recovers() {
    stall_and_resume(LOCAL, "stall-local");
}

fn kill_and_restart(policy: FailurePolicy, name: &str) {
    let Some(mut server) = OwnServer::start(name) else {
        return;
    };
    run(async {
        let backend = connect(&server).await;
        let limiter = limiter(&backend, name, policy);
        assert_eq!(try_once(&limiter).await.0.source(), Source::Redis);
        server.kill();
        let killed = Instant::now();
        let mut granted = 0;
        for _ in 0..8 {
            let (d, took) = try_once(&limiter).await;
            assert!(took < DEADLINE + SLACK, "took {took:?}");
            granted += u64::from(by_policy(policy, &d));
        }
        if let FailurePolicy::Local { .. } = policy {
            let bound = local_bound(killed.elapsed());
            assert!(granted <= bound, "local granted {granted} > {bound}");
        }
        assert_eq!(backend.stats().reloads, 0);
        // The new server has no scripts: the first request meets NOSCRIPT.
        tokio::task::block_in_place(|| server.restart());
        until_redis(&limiter, Duration::from_secs(5)).await;
        assert_eq!(backend.stats().reloads, 1, "{:?}", backend.stats());
    });
}

#[test]
fn a_killed_server_fails_open_then_a_restarted_one_reloads_the_scripts() {
    kill_and_restart(FailurePolicy::Open, "kill-open");
}

#[test]
fn a_killed_server_fails_closed_then_a_restarted_one_reloads_the_scripts() {
    kill_and_restart(FailurePolicy::Closed, "kill-closed");
}

#[test]
fn a_killed_server_falls_back_to_the_local_share_then_a_restarted_one_reloads_the_scripts() {
    kill_and_restart(LOCAL, "kill-local");
}

#[test]
fn script_flush_under_100_concurrent_callers_reloads_once_per_flush() {
    let Some(server) = OwnServer::start("flush") else {
        return;
    };
    let port = server.port;
    let flush = move || {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "SCRIPT", "FLUSH"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    };
    run(async {
        // A deadline no reload reaches: every decision is the server's.
        let backend = Backend::builder(server.url())
            .deadline(Duration::from_secs(2))
            .connect()
            .await
            .unwrap();
        let limit = SharedLimit::pacer(Rate::new(1_000_000.0).unwrap(), 0.0).unwrap();
        let limiter = Arc::new(
            RedisLimiter::builder(&backend, common::key("flush"), limit)
                .failure_policy(FailurePolicy::Closed)
                .build()
                .unwrap(),
        );
        let start = Arc::new(tokio::sync::Barrier::new(101));
        let tasks: Vec<_> = (0..100)
            .map(|_| {
                let (limiter, start) = (limiter.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    for _ in 0..20 {
                        let d = limiter.reserve(1, None).await;
                        assert_eq!(d.source(), Source::Redis, "{:?}", d.backend_error());
                        assert!(d.is_granted());
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                })
            })
            .collect();
        // The first requests all meet NOSCRIPT together.
        tokio::task::spawn_blocking(flush).await.unwrap();
        start.wait().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        tokio::task::spawn_blocking(flush).await.unwrap();
        for t in tasks {
            t.await.expect("a caller failed");
        }
        let stats = backend.stats();
        assert_eq!(stats.failures, 0, "{stats:?}");
        assert!((1..=2).contains(&stats.reloads), "{stats:?}");
        assert_eq!(limiter.stats().from(Source::Redis), 2_000);
    });
}

#[test]
fn connecting_to_a_closed_port_is_a_typed_error_at_once() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    run(async {
        let start = Instant::now();
        let e = Backend::connect(&format!("redis://127.0.0.1:{port}/"))
            .await
            .unwrap_err();
        let took = start.elapsed();
        match &e {
            RedisError::Redis(source) => assert!(source.is_connection_refusal(), "{e:?}"),
            other => panic!("not a connection error: {other:?}"),
        }
        assert!(took < Duration::from_secs(1), "took {took:?}");
    });
}

#[test]
fn a_malformed_url_is_a_url_error() {
    run(async {
        for url in [
            "not a url",
            "redis://127.0.0.1:notaport/",
            "http://127.0.0.1/",
        ] {
            match Backend::connect(url).await {
                Err(RedisError::Url { url: u, .. }) => assert_eq!(u, url, "no password to hide"),
                other => panic!("{url}: {other:?}"),
            }
        }
    });
}

#[test]
fn a_local_share_outside_0_to_1_is_a_config_error() {
    let Some(server) = OwnServer::start("share") else {
        return;
    };
    run(async {
        let backend = connect(&server).await;
        for share in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = RedisLimiter::builder(&backend, "k", pacer())
                .failure_policy(FailurePolicy::Local { share })
                .build()
                .unwrap_err();
            assert_eq!(e.kind(), ConfigErrorKind::Backend, "share {share}: {e}");
        }
        for share in [1.0, 0.25, 1e-3] {
            RedisLimiter::builder(&backend, "k", pacer())
                .failure_policy(FailurePolicy::Local { share })
                .build()
                .unwrap_or_else(|e| panic!("share {share}: {e}"));
        }
    });
}
