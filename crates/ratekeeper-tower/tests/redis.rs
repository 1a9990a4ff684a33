//! The layer over a per-client limit kept on a real Redis
//! ([`RedisKeyed`]): two replicas of the example server share each
//! client's limit, and a key that keeps another limit is answered 500,
//! never admitted. Needs `REDIS_URL` (scripts/with-redis.sh); skipped with
//! a message without it, failed under `CI`.

mod common;

#[path = "../examples/redis_server.rs"]
mod server;

use std::net::SocketAddr;
use std::time::Duration;

use ratekeeper_redis::Backend;

/// 3 at once, then one every 10 s: nothing refills while a test runs.
const LIMIT: &str = "refill:0.1,10s,capacity=3,initial=3";
const BURST: usize = 3;

async fn backend(url: &str) -> Backend {
    // A generous deadline: on a loaded machine the server must still be
    // the one deciding (the failure policy is tested in ratekeeper-redis).
    Backend::builder(url)
        .deadline(Duration::from_secs(2))
        .connect()
        .await
        .unwrap()
}

/// Serves `app` on a loopback port; its address.
async fn replica(app: server::App) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_each_clients_limit_on_redis() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let backend = backend(&url).await;
    let prefix = common::unique_prefix("replicas");
    let a = replica(server::app(&backend, &prefix, LIMIT).unwrap()).await;
    let b = replica(server::app(&backend, &prefix, LIMIT).unwrap()).await;
    for ip in ["127.0.0.2", "127.0.0.3"] {
        let client = common::client_from(ip);
        let mut statuses = Vec::new();
        // Alternating replicas: the client's burst is spent once, in all.
        for i in 0..BURST + 3 {
            let addr = if i % 2 == 0 { a } else { b };
            let (parts, body) = common::get_spoofed(&client, addr).await;
            if parts.status == 429 {
                common::check_refusal(&parts.headers, "per-ip");
                let problem = common::check_problem(&parts.headers, &body, "per-ip");
                // The next permit is up to 10 s away.
                assert!((1..=10).contains(&problem["retry_after"].as_u64().unwrap()));
            } else {
                assert_eq!(parts.status, 200, "{ip}: {parts:?}");
                assert_eq!(body, format!("hello {ip}\n"));
                let p = common::parse_list(parts.headers["ratelimit-policy"].to_str().unwrap());
                // 0.1/s with bursts of 3: 3 per 30 s, derived from the limit.
                assert_eq!((p[0].1["q"], p[0].1["w"], p[0].1["rk-burst"]), (3, 30, 3));
            }
            statuses.push(parts.status.as_u16());
        }
        let want: Vec<u16> = [200; BURST].into_iter().chain([429; 3]).collect();
        assert_eq!(statuses, want, "{ip}");
    }
    let stats = backend.stats();
    assert_eq!(stats.failures, 0, "{stats:?}");
    assert!(stats.round_trips >= 2 * (BURST as u64 + 3), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_keeps_another_limit_is_answered_500_never_admitted() {
    let Some(url) = common::redis_url() else {
        return;
    };
    let backend = backend(&url).await;
    let prefix = common::unique_prefix("mismatch");
    let ours = replica(server::app(&backend, &prefix, LIMIT).unwrap()).await;
    // A replica deployed with another limit on the same prefix.
    let other = "refill:1,1s,capacity=3,initial=3";
    let theirs = replica(server::app(&backend, &prefix, other).unwrap()).await;
    let client = common::client_from("127.0.0.4");
    let (first, _) = common::get_spoofed(&client, ours).await;
    assert_eq!(first.status, 200);
    // The client's key now keeps our limit: the other replica cannot use
    // it, and must neither admit nor blame the client.
    for _ in 0..BURST + 2 {
        let (parts, _) = common::get_spoofed(&client, theirs).await;
        assert_eq!(parts.status, 500, "{parts:?}");
    }
    // Ours still decides on it.
    let (again, _) = common::get_spoofed(&client, ours).await;
    assert_eq!(again.status, 200);
}
