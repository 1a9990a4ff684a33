//! A shared limit that fails safe: a key that holds something else is a
//! configuration error under every policy; a limit other than the key's is
//! refused unless adopted; no error shows a password; a dropped connection
//! is retried within the deadline; the local fallback starts when it takes
//! over, owing what the server last said; the default policy keeps the
//! share of the key this process was using; and a key idle past its TTL
//! starts afresh.

mod common;

use std::future::Future;
use std::time::{Duration, Instant};

use common::OwnServer;
use ratekeeper::{AcquireError, Rate};
use ratekeeper_redis::{
    redact_url, Backend, Decision, FailurePolicy, RedisError, RedisLimiter, SharedLimit, Source,
};

const DEADLINE: Duration = Duration::from_millis(50);

/// Runs `body` on a runtime, failing the test instead of hanging.
fn run<F: Future<Output = ()>>(body: F) {
    common::runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(20), body)
            .await
            .expect("the test hung")
    });
}

async fn connect(server: &OwnServer, deadline: Duration) -> Backend {
    Backend::builder(server.url())
        .deadline(deadline)
        .connect()
        .await
        .expect("connect")
}

fn pacer(rate: f64) -> SharedLimit {
    SharedLimit::pacer(Rate::new(rate).unwrap(), 1.0).unwrap()
}

fn refill(spec: &str) -> SharedLimit {
    SharedLimit::from_config(&spec.parse().unwrap()).unwrap()
}

fn policies() -> [FailurePolicy; 4] {
    [
        FailurePolicy::default(),
        FailurePolicy::Local { share: 0.5 },
        FailurePolicy::Open,
        FailurePolicy::Closed,
    ]
}

/// A refusal for a misconfigured key: no policy decided it, nothing
/// admitted, the error kept for `config_error`.
fn misconfigured(limiter: &RedisLimiter, d: &Decision) -> RedisError {
    assert_eq!(d.result(), Err(AcquireError::Misconfigured), "{d:?}");
    assert_eq!(d.source(), Source::Redis, "{d:?}");
    let e = d.backend_error().expect("the server's error").clone();
    assert!(e.is_misconfiguration(), "{e:?}");
    assert_eq!(
        limiter.config_error().map(|e| e.to_string()),
        Some(e.to_string())
    );
    e
}

#[test]
fn a_key_of_another_type_is_a_configuration_error_under_every_policy() {
    let Some(server) = OwnServer::start("wrongtype") else {
        return;
    };
    run(async {
        let backend = connect(&server, DEADLINE).await;
        for (n, limit) in [pacer(100.0), refill("refill:10,1s")]
            .into_iter()
            .enumerate()
        {
            for policy in policies() {
                let key = common::key(&format!("wrongtype-{n}"));
                let set = tokio::task::block_in_place(|| server.cli(&["SET", &key, "hello"]));
                assert_eq!(set.as_deref().map(str::trim), Some("OK"));
                let limiter = RedisLimiter::builder(&backend, key.clone(), limit)
                    .failure_policy(policy)
                    .lease(Duration::from_millis(1))
                    .build()
                    .unwrap();
                // More than the breaker's threshold: a wrong type says
                // nothing of the server's health.
                for _ in 0..5 {
                    let d = limiter.reserve(1, Some(Duration::ZERO)).await;
                    match misconfigured(&limiter, &d) {
                        RedisError::WrongType { key: k, .. } => assert_eq!(k, key),
                        other => panic!("not WrongType: {other:?}"),
                    }
                }
                let stats = limiter.stats();
                assert_eq!(stats.refused, 5, "{policy:?}: {stats:?}");
            }
        }
        assert!(!backend.stats().breaker_open);
    });
}

#[test]
fn a_pacer_and_a_bucket_on_one_key_are_a_mismatch_naming_both() {
    let Some(server) = OwnServer::start("kinds") else {
        return;
    };
    run(async {
        let backend = connect(&server, DEADLINE).await;
        let key = common::key("kinds");
        let first = RedisLimiter::builder(&backend, key.clone(), pacer(100.0))
            .build()
            .unwrap();
        assert!(first.reserve(1, None).await.is_granted());
        for policy in policies() {
            let second = RedisLimiter::builder(&backend, key.clone(), refill("refill:1000,1s"))
                .failure_policy(policy)
                .build()
                .unwrap();
            let d = second.reserve(1, Some(Duration::ZERO)).await;
            let e = misconfigured(&second, &d);
            let text = e.to_string();
            assert!(matches!(e, RedisError::LimitMismatch { .. }), "{e:?}");
            assert!(text.contains("a pacer of 100/s (strict)"), "{text}");
            assert!(text.contains("a refill bucket of 1000/s"), "{text}");
        }
        // And the other way round.
        let key = common::key("kinds-2");
        let bucket = RedisLimiter::builder(&backend, key.clone(), refill("refill:10,1s"))
            .build()
            .unwrap();
        assert!(bucket.reserve(1, None).await.is_granted());
        let p = RedisLimiter::builder(&backend, key, pacer(10.0))
            .build()
            .unwrap();
        let d = p.reserve(1, None).await;
        assert!(matches!(
            misconfigured(&p, &d),
            RedisError::LimitMismatch { .. }
        ));
    });
}

#[test]
fn another_rate_on_a_key_is_refused_unless_adopted_and_adopting_keeps_the_grants() {
    let Some(server) = OwnServer::start("adopt") else {
        return;
    };
    run(async {
        let backend = connect(&server, Duration::from_secs(1)).await;
        let key = common::key("adopt");
        let slow = RedisLimiter::builder(&backend, key.clone(), pacer(100.0))
            .build()
            .unwrap();
        let t = 2_000_000_000_000; // server time, whole µs
        let first = slow.decide_at(5, None, t).await.unwrap().unwrap();
        assert!(first.granted);
        let fast = RedisLimiter::builder(&backend, key.clone(), pacer(1000.0))
            .build()
            .unwrap();
        let e = fast.decide_at(1, None, t).await.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, RedisError::LimitMismatch { .. }), "{e:?}");
        assert!(text.contains("a pacer of 100/s (strict)"), "{text}");
        // The reserve path names ours too.
        let d = fast.reserve(1, None).await;
        let text = misconfigured(&fast, &d).to_string();
        assert!(
            text.contains("a pacer of 100/s (strict)") && text.contains("a pacer of 1000/s"),
            "{text}"
        );
        // Adopted: the five slots of 10 ms granted stand (the next is 50 ms
        // on), later ones are 1 ms apart.
        let adopter = RedisLimiter::builder(&backend, key.clone(), pacer(1000.0))
            .adopt(true)
            .build()
            .unwrap();
        let a = adopter.decide_at(1, None, t).await.unwrap().unwrap();
        assert!(a.granted);
        assert_eq!(a.scheduled, 50_000_000);
        let b = adopter.decide_at(1, None, t).await.unwrap().unwrap();
        assert_eq!(b.scheduled, 51_000_000);
        // Now the old limit is the mismatch.
        assert!(matches!(
            slow.decide_at(1, None, t).await,
            Err(RedisError::LimitMismatch { .. })
        ));

        // A bucket taken over keeps what it holds, at most its capacity.
        let key = common::key("adopt-bucket");
        let old = RedisLimiter::builder(&backend, key.clone(), refill("refill:10,1s,10,10"))
            .build()
            .unwrap();
        let r = old.decide_at(4, None, t).await.unwrap().unwrap();
        assert_eq!((r.granted, r.extra), (true, 6), "6 of 10 left");
        let new = RedisLimiter::builder(&backend, key, refill("refill:100,10ms,5,5"))
            .adopt(true)
            .build()
            .unwrap();
        // 6 held, at most 5 now: 5 at once, the sixth after 10 ms.
        let r = new.decide_at(5, Some(Duration::ZERO), t).await.unwrap();
        assert!(r.unwrap().granted);
        let r = new.decide_at(1, Some(Duration::ZERO), t).await.unwrap();
        assert_eq!(r.unwrap().ready, 10_000_000, "{r:?}");
    });
}

#[test]
fn no_error_or_debug_output_holds_a_password() {
    const SECRET: &str = "TopSecretPW";
    let Some(server) = OwnServer::start_with("auth", &["--requirepass", SECRET]) else {
        return;
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    run(async {
        let wrong = format!("redis://:{SECRET}x@127.0.0.1:{}/", server.port);
        let cases = [
            // Nothing listens.
            format!("redis://:{SECRET}@127.0.0.1:{closed}/"),
            // A wrong password.
            wrong.clone(),
            format!("redis://default:{SECRET}x@127.0.0.1:{}/", server.port),
            // URLs that do not parse.
            format!("redis://:{SECRET}@127.0.0.1:notaport/"),
            format!("http://:{SECRET}@127.0.0.1/"),
            format!("redis//:{SECRET}@127.0.0.1/"),
        ];
        for url in &cases {
            let builder = Backend::builder(url.as_str());
            assert!(!format!("{builder:?}").contains(SECRET), "{builder:?}");
            let e = builder.connect().await.expect_err(url);
            for shown in [e.to_string(), format!("{e:?}")] {
                assert!(!shown.contains(SECRET), "{url}: {shown}");
            }
        }
        let e = Backend::connect(&wrong).await.unwrap_err();
        assert!(matches!(e, RedisError::Auth(_)), "{e:?}");
        // No password at all: NOAUTH, said as such.
        let none = format!("redis://127.0.0.1:{}/", server.port);
        let e = Backend::connect(&none).await.unwrap_err();
        assert!(matches!(e, RedisError::Auth(_)), "{e:?}");
        assert!(e.to_string().contains("authentication"), "{e}");
        assert!(!e.to_string().contains("scripting"), "{e}");
        // The right one connects, and nothing it shows holds it.
        let right = format!("redis://:{SECRET}@127.0.0.1:{}/", server.port);
        let backend = Backend::connect(&right).await.expect("the right password");
        assert!(!format!("{backend:?}").contains(SECRET));
        assert_eq!(
            redact_url(&right),
            format!("redis://:***@127.0.0.1:{}/", server.port)
        );
    });
}

#[test]
fn a_killed_connection_is_retried_within_the_deadline_under_closed() {
    let Some(server) = OwnServer::start("clientkill") else {
        return;
    };
    run(async {
        let backend = connect(&server, Duration::from_millis(500)).await;
        let limiter = RedisLimiter::builder(&backend, common::key("clientkill"), pacer(1e6))
            .failure_policy(FailurePolicy::Closed)
            .build()
            .unwrap();
        for round in 0..5 {
            for _ in 0..20 {
                let d = limiter.reserve(1, None).await;
                assert_eq!(d.source(), Source::Redis, "round {round}: {d:?}");
            }
            let killed = tokio::task::block_in_place(|| {
                server.cli(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])
            });
            assert_ne!(
                killed.as_deref().map(str::trim),
                Some("0"),
                "nothing killed"
            );
        }
        let d = limiter.reserve(1, None).await;
        assert_eq!(d.source(), Source::Redis, "{d:?}");
        assert_eq!(limiter.stats().from(Source::FailClosed), 0);
    });
}

/// A bucket of 100/s, capacity 100, that starts empty: used flat out for
/// `used`, then the server killed.
async fn bucket_used_then_killed(server: &mut OwnServer, used: Duration) -> RedisLimiter {
    let backend = connect(server, DEADLINE).await;
    let limit = refill("refill:100,1s,100,0");
    let limiter = RedisLimiter::builder(&backend, common::key("takeover"), limit)
        .failure_policy(FailurePolicy::Local { share: 1.0 })
        .build()
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < used {
        let d = limiter.acquire(1).await;
        assert_eq!(d.source(), Source::Redis, "{d:?}");
    }
    tokio::task::block_in_place(|| server.kill());
    limiter
}

#[test]
fn the_local_fallback_starts_when_it_takes_over_owing_the_shared_state() {
    let Some(mut server) = OwnServer::start("takeover") else {
        return;
    };
    run(async {
        // 1.5 s flat out: the shared bucket is empty when the server dies.
        // A fallback built at the start would hold 100 permits by then.
        let limiter = bucket_used_then_killed(&mut server, Duration::from_millis(1500)).await;
        let start = Instant::now();
        let mut admitted = 0u32;
        while start.elapsed() < Duration::from_millis(500) {
            let d = limiter.reserve(1, Some(Duration::ZERO)).await;
            if d.is_granted() {
                assert_eq!(d.source(), Source::Local, "{d:?}");
                admitted += 1;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // 100/s for 0.5 s, the permits the shared bucket held (at most 1),
        // and one for rounding.
        assert!(admitted <= 52, "admitted {admitted} in 0.5 s at 100/s");
        assert!(admitted >= 30, "admitted only {admitted}");
    });
}

#[test]
fn the_default_policy_keeps_the_share_this_process_was_using() {
    assert_eq!(FailurePolicy::default(), FailurePolicy::LocalLearned);
    let Some(mut server) = OwnServer::start("learned") else {
        return;
    };
    run(async {
        // Two processes' limiters on one key (a backend each), one asking
        // three times as often as the other, at 400/s together.
        let key = common::key("learned");
        let a = connect(&server, DEADLINE).await;
        let b = connect(&server, DEADLINE).await;
        let limit = pacer(400.0);
        let a = RedisLimiter::builder(&a, key.clone(), limit)
            .build()
            .unwrap();
        let b = RedisLimiter::builder(&b, key, limit).build().unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(1300) {
            for _ in 0..3 {
                assert!(a.acquire(1).await.is_granted());
            }
            assert!(b.acquire(1).await.is_granted());
        }
        let (sa, sb) = (a.learned_share().unwrap(), b.learned_share().unwrap());
        assert!((sa - 0.75).abs() < 0.05, "{sa}");
        assert!((sb - 0.25).abs() < 0.05, "{sb}");
        tokio::task::block_in_place(|| server.kill());
        // b alone now: its fallback keeps a quarter of 400/s (a slot every
        // 10 ms), owing the shared schedule's next slot. The first
        // decisions each take the deadline (the connection retried) until
        // the breaker opens: at most 50 slots, and at least 25.
        let start = Instant::now();
        let mut admitted = 0;
        while start.elapsed() < Duration::from_millis(500) {
            let d = b.acquire(1).await;
            assert_eq!(d.source(), Source::Local, "{d:?}");
            admitted += 1;
        }
        assert!(
            (25..=51).contains(&admitted),
            "admitted {admitted} in 0.5 s"
        );
    });
}

#[test]
fn a_key_idle_past_its_ttl_starts_afresh() {
    let Some(server) = OwnServer::start("fresh") else {
        return;
    };
    run(async {
        let backend = connect(&server, Duration::from_secs(1)).await;
        let key = common::key("fresh");
        // An average Pacer at 10/s: 20 permits reserve 2 s of schedule.
        let limit = SharedLimit::pacer(Rate::new(10.0).unwrap(), 0.0).unwrap();
        let first = RedisLimiter::builder(&backend, key.clone(), limit)
            .build()
            .unwrap();
        assert!(first.reserve(20, None).await.is_granted());
        // Within the schedule and the default idle TTL: the key is shared
        // as it is (the next slot is 2 s on).
        let joined = RedisLimiter::builder(&backend, key.clone(), limit)
            .build()
            .unwrap();
        let g = joined.reserve(1, None).await.result().unwrap();
        assert!(g.delay_nanos() > 1_500_000_000, "{g:?}");
        // Caught up (2.1 s) and idle past the default 1 s: a new schedule.
        tokio::time::sleep(Duration::from_millis(3300)).await;
        let g = joined.reserve(1, None).await.result().unwrap();
        assert!(g.delay_nanos() < 50_000_000, "{g:?}");
        assert!(
            g.scheduled_nanos() + 50_000_000 > g.ready_nanos(),
            "no lateness"
        );
    });
}

#[test]
fn what_the_fallback_granted_is_not_granted_again_after_the_outage() {
    let Some(server) = OwnServer::start("charge") else {
        return;
    };
    run(async {
        let backend = Backend::builder(server.url())
            .deadline(DEADLINE)
            .breaker(3, Duration::from_millis(100))
            .connect()
            .await
            .unwrap();
        // Average mode catches up every slot behind the clock at once: a
        // schedule left behind by an outage would grant it again.
        let limit = SharedLimit::pacer(Rate::new(200.0).unwrap(), 0.0).unwrap();
        let limiter = RedisLimiter::builder(&backend, common::key("charge"), limit)
            .failure_policy(FailurePolicy::Local { share: 1.0 })
            .build()
            .unwrap();
        let start = Instant::now();
        let (mut admitted, mut local) = (0u32, 0u32);
        let mut paused = false;
        let mut resumed = false;
        while start.elapsed() < Duration::from_millis(1500) {
            if !paused && start.elapsed() > Duration::from_millis(400) {
                server.signal("STOP");
                paused = true;
            }
            if !resumed && start.elapsed() > Duration::from_millis(900) {
                server.signal("CONT");
                resumed = true;
            }
            let d = limiter.acquire(1).await;
            assert!(d.is_granted(), "{d:?}");
            admitted += 1;
            local += u32::from(d.source() == Source::Local);
        }
        assert!(local > 20, "the fallback decided only {local}");
        let due = 200.0 * start.elapsed().as_secs_f64();
        // 200/s over the run, one slot for the start and two for rounding
        // at the handovers.
        assert!(
            f64::from(admitted) <= due + 3.0,
            "admitted {admitted} where {due:.0} were due ({local} by the fallback)"
        );
        assert!(limiter.stats().from(Source::Redis) > 150);
    });
}

#[test]
fn a_limiter_shows_its_settings_and_a_refused_setting_says_why() {
    let Some(url) = common::redis_url() else {
        return;
    };
    run(async {
        let backend = Backend::connect(&url).await.unwrap();
        let key = common::key("settings");
        let leased = RedisLimiter::builder(&backend, key.clone(), pacer(100.0))
            .failure_policy(FailurePolicy::Closed)
            .lease(Duration::from_millis(3))
            .build()
            .unwrap();
        assert_eq!(leased.failure_policy(), FailurePolicy::Closed);
        assert_eq!(leased.lease_window(), Some(Duration::from_millis(3)));
        let shown = format!("{leased:?}");
        for part in ["RedisLimiter", key.as_str(), "Closed", "stats"] {
            assert!(shown.contains(part), "{part} in {shown}");
        }
        let plain = RedisLimiter::builder(&backend, key, pacer(100.0))
            .failure_policy(FailurePolicy::Open)
            .build()
            .unwrap();
        assert_eq!(plain.failure_policy(), FailurePolicy::Open);
        assert_eq!(plain.lease_window(), None);
        let e = RedisLimiter::builder(&backend, "", pacer(100.0))
            .build()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the key is empty: name the limit (e.g. \"api:global\")"
        );
    });
}
