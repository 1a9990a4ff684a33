//! Limits kept on a real Redis: two replicas never admit more than the
//! limit together, refusals take nothing, and a killed server is answered
//! by each limit's failure policy within the deadline, the replicas
//! deciding on Redis again once it is back. Needs `REDIS_URL`
//! (scripts/with-redis.sh) and `redis-server` (the outage test runs its
//! own); skipped with a message without them, failed under `CI`.

use std::time::{Duration, Instant};

use ratekeeper_redis::Backend;
use ratekeeper_serve::config::Config;
use ratekeeper_serve::{CheckError, CheckRequest, Code, Descriptor, Limits, RedisStore};

// The Redis tests' helpers, shared with ratekeeper-redis's own tests.
#[path = "../../ratekeeper-redis/tests/common/mod.rs"]
mod common;
use common::{redis_url, OwnServer};

/// A key prefix no other run shares.
fn unique(name: &str) -> String {
    format!("{}:", common::key(&format!("serve:{name}")))
}

fn config(yaml: &str) -> Config {
    Config {
        domains: vec![Config::from_yaml(yaml, "test.yaml").unwrap()],
    }
}

async fn replica(url: &str, prefix: &str, yaml: &str, deadline: Duration) -> Limits {
    let backend = Backend::builder(url)
        .deadline(deadline)
        .connect()
        .await
        .unwrap();
    let store = RedisStore::new(backend).prefix(prefix);
    Limits::builder().redis(store).build(&config(yaml)).unwrap()
}

fn ask(entries: &[(&str, &str)]) -> CheckRequest {
    CheckRequest::new("api", vec![Descriptor::new(entries.iter().copied())])
}

const PER_SECOND: &str = "\
domain: api
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 20}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_admit_more_than_burst_plus_rate_times_t() {
    let Some(url) = redis_url() else { return };
    let prefix = unique("replicas");
    let secs = Duration::from_secs(2);
    let a = replica(&url, &prefix, PER_SECOND, secs).await;
    let b = replica(&url, &prefix, PER_SECOND, secs).await;
    let started = Instant::now();
    let run = |limits: Limits| async move {
        let mut admitted = Vec::new();
        while started.elapsed() < Duration::from_millis(1_500) {
            let sent = started.elapsed();
            let r = limits.check_async(&ask(&[("user", "u")])).await.unwrap();
            assert!(!r.statuses[0].store_error, "Redis decided");
            if r.overall_code == Code::Ok {
                admitted.push((sent, started.elapsed()));
            }
        }
        admitted
    };
    let (x, y) = tokio::join!(tokio::spawn(run(a)), tokio::spawn(run(b)));
    let times: Vec<(Duration, Duration)> = x.unwrap().into_iter().chain(y.unwrap()).collect();
    // Each grant was decided between its check's start and its answer. In
    // any span from one check's start to another's answer, the grants
    // surely decided inside it are at most the burst (20) plus 20 a
    // second, plus one for the server's clock running between readings.
    for &(start, _) in &times {
        for &(_, end) in times.iter().filter(|&&(_, end)| end >= start) {
            let inside = times
                .iter()
                .filter(|&&(s, e)| s >= start && e <= end)
                .count();
            let span = (end - start).as_secs_f64();
            assert!(inside as f64 <= 21.0 + 20.0 * span, "{inside} in {span} s");
        }
    }
    assert!(times.len() >= 40, "both replicas admitted: {}", times.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_on_redis_take_nothing() {
    let Some(url) = redis_url() else { return };
    let yaml = "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 2}\n";
    let limits = replica(&url, &unique("refusals"), yaml, Duration::from_secs(2)).await;
    let mut codes = Vec::new();
    for _ in 0..12 {
        codes.push(
            limits
                .check_async(&ask(&[("user", "v")]))
                .await
                .unwrap()
                .overall_code,
        );
    }
    assert_eq!(&codes[..2], [Code::Ok, Code::Ok]);
    assert!(codes[2..].iter().all(|c| *c == Code::OverLimit));
    // One permit comes back every 0.5 s, whatever the refusals before.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut admitted = 0;
    for _ in 0..3 {
        if limits
            .check_async(&ask(&[("user", "v")]))
            .await
            .unwrap()
            .overall_code
            == Code::Ok
        {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 1);
}

const POLICIES: &str = "\
domain: api
descriptors:
  - key: open
    on_redis_failure: allow
    rate_limit: {unit: second, requests_per_unit: 1000}
  - key: closed
    on_redis_failure: deny
    rate_limit: {unit: second, requests_per_unit: 1000}
  - key: local
    on_redis_failure: local
    rate_limit: {unit: second, requests_per_unit: 1000}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_answered_by_each_policy_within_the_deadline() {
    if redis_url().is_none() {
        return;
    }
    let Some(mut server) = OwnServer::start("serve-outage") else {
        return;
    };
    let deadline = Duration::from_millis(100);
    let limits = replica(&server.url(), &unique("outage"), POLICIES, deadline).await;
    for key in ["open", "closed", "local"] {
        let r = limits.check_async(&ask(&[(key, "k")])).await.unwrap();
        assert_eq!(
            (r.overall_code, r.statuses[0].store_error),
            (Code::Ok, false)
        );
    }
    server.kill();
    for (key, code) in [
        ("open", Code::Ok),
        ("closed", Code::OverLimit),
        ("local", Code::Ok),
    ] {
        for _ in 0..3 {
            let started = Instant::now();
            let r = limits.check_async(&ask(&[(key, "k")])).await.unwrap();
            let took = started.elapsed();
            assert_eq!(r.overall_code, code, "{key}");
            assert!(r.statuses[0].store_error, "{key}: the policy decided");
            assert!(took < deadline * 5, "{key}: {took:?}");
        }
    }
    server.restart();
    let recovered = Instant::now() + Duration::from_secs(10);
    loop {
        let r = limits.check_async(&ask(&[("closed", "k")])).await.unwrap();
        if r.overall_code == Code::Ok && !r.statuses[0].store_error {
            break;
        }
        assert!(Instant::now() < recovered, "still failing over: {r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_synchronous_check_names_a_limit_it_cannot_decide() {
    let Some(url) = redis_url() else { return };
    let limits = replica(&url, &unique("sync"), PER_SECOND, Duration::from_secs(2)).await;
    let ask = ask(&[("user", "s")]);
    assert_eq!(
        limits.check(&ask),
        Err(CheckError::SharedStore("api/user".into()))
    );
    // Nothing was taken: the first asynchronous check sees the whole burst.
    let first = limits.check_async(&ask).await.unwrap();
    assert_eq!(first.overall_code, Code::Ok);
    assert!(!first.statuses[0].store_error);
}
