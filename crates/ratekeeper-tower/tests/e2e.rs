//! End to end: the example server on a loopback port, driven by a real
//! HTTP client over many concurrent connections; and the startup check
//! that refuses a limit keyed by the peer where nothing supplies it.

mod common;

#[path = "../examples/axum_server.rs"]
mod server;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ratekeeper_tower::{ConfigError, KeyedMap, PeerIp, Policy, RateLimitLayer};

const KEYS: usize = 8;
const CONNECTIONS: usize = 32;
const PER_CONNECTION: usize = 12;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admitted_counts_per_key_headers_and_spoofing() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(server::serve(listener));

    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        tasks.push(tokio::spawn(async move {
            // One client (one pooled connection) per task: many connections.
            let client = Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(1)
                .build_http::<Empty<Bytes>>();
            let key = c % KEYS;
            let mut seen = Vec::new();
            for i in 0..PER_CONNECTION {
                // Half the requests spoof a different left-most hop each time.
                let xff = if i % 2 == 0 {
                    format!("203.0.113.{key}")
                } else {
                    format!(
                        "198.51.100.{}, 203.0.113.{key}",
                        (c * PER_CONNECTION + i) % 250
                    )
                };
                let req = http::Request::get(format!("http://{addr}/"))
                    .header("x-forwarded-for", xff)
                    .body(Empty::new())
                    .unwrap();
                let resp = client.request(req).await.unwrap();
                let (parts, body) = resp.into_parts();
                let body = body.collect().await.unwrap().to_bytes();
                seen.push((key, parts.status, parts.headers, body));
            }
            seen
        }));
    }
    let mut admitted: HashMap<usize, u64> = HashMap::new();
    let mut refused = 0;
    for t in tasks {
        for (key, status, headers, body) in t.await.unwrap() {
            match status.as_u16() {
                200 => {
                    *admitted.entry(key).or_default() += 1;
                    assert_eq!(body, format!("hello 203.0.113.{key}\n")); // not the proxy
                    let rl = common::parse_list(headers["ratelimit"].to_str().unwrap());
                    assert_eq!(rl[0].0, "per-ip");
                    assert!(rl[0].1["r"] < i64::from(server::BURST) && rl[0].1["t"] >= 1);
                    let p = common::parse_list(headers["ratelimit-policy"].to_str().unwrap());
                    assert_eq!(p[0].1["rk-burst"], i64::from(server::BURST));
                    // The rate over the shortest whole window whose quota
                    // holds the burst (5 at 2/s: 6 per 3 s).
                    let w = server::BURST.div_ceil(server::RATE);
                    let want = (i64::from(server::RATE * w), i64::from(w));
                    assert_eq!((p[0].1["q"], p[0].1["w"]), want);
                    assert!(p[0].1["q"] >= i64::from(server::BURST));
                }
                429 => {
                    refused += 1;
                    common::check_refusal(&headers, "per-ip");
                    common::check_problem(&headers, &body, "per-ip");
                }
                s => panic!("status {s}"),
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    // Each key: its burst, plus what refilled while the test ran.
    let most = u64::from(server::BURST) + (elapsed * f64::from(server::RATE)).ceil() as u64;
    assert_eq!(admitted.len(), KEYS, "{admitted:?}");
    for (key, n) in &admitted {
        assert!(
            (u64::from(server::BURST)..=most).contains(n),
            "key {key}: {n} admitted, limit {most} in {elapsed:.2} s"
        );
    }
    let total = (CONNECTIONS * PER_CONNECTION) as u64;
    assert_eq!(admitted.values().sum::<u64>() + refused, total);
    server.abort();
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The mistake the startup check is for: a limit keyed by the connection's
/// peer put inside the router, and the router served as it is (nothing
/// puts the peer address in the requests). `handled` counts requests that
/// reached the handler.
async fn serve_limit_inside_router(
    listener: tokio::net::TcpListener,
    handled: Arc<AtomicUsize>,
) -> Result<(), Error> {
    let policy = Policy::from_rate("per-ip", 2.0)?;
    let map = KeyedMap::from_config(&"pacer:2,1".parse()?, policy, 1000)?;
    let layer = RateLimitLayer::builder(map)
        .key(PeerIp::connection())
        .build()?;
    let hello = move || {
        handled.fetch_add(1, Ordering::Relaxed);
        async { "hello\n" }
    };
    let app = Router::new().route("/", get(hello)).layer(layer);
    axum::serve(listener, app).await?;
    Ok(())
}

async fn get_status(addr: SocketAddr) -> Result<u16, hyper_util::client::legacy::Error> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let req = http::Request::get(format!("http://{addr}/"))
        .body(Empty::new())
        .expect("a valid request");
    Ok(client.request(req).await?.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_keyed_limit_inside_the_router_is_refused_before_serving() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handled = Arc::new(AtomicUsize::new(0));
    let server = tokio::spawn(serve_limit_inside_router(listener, Arc::clone(&handled)));
    // Startup ends, with the typed error, without a single request sent.
    let err = match tokio::time::timeout(Duration::from_secs(2), server).await {
        Ok(ended) => ended
            .unwrap()
            .expect_err("a misconfigured server must not start"),
        Err(_) => panic!(
            "the server started serving; a request gets {:?}",
            get_status(addr).await
        ),
    };
    assert_eq!(
        err.downcast_ref::<ConfigError>(),
        Some(&ConfigError::PeerNotSupplied),
        "{err}"
    );
    // Nothing listens any more, and nothing reached the handler.
    assert!(get_status(addr).await.is_err());
    assert_eq!(handled.load(Ordering::Relaxed), 0);
}

/// A client whose connections come from `ip` (any 127/8 address is this
/// host's loopback).
fn client_from(ip: &str) -> Client<HttpConnector, Empty<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_local_address(Some(ip.parse().unwrap()));
    Client::builder(TokioExecutor::new()).build(connector)
}

/// Sends requests with a spoofed `X-Forwarded-For` until one is refused;
/// checks each admitted one was said hello as `peer` (the peer address the
/// limit saw), and that their number is the burst plus at most what
/// refilled meanwhile. Returns it.
async fn drain(client: &Client<HttpConnector, Empty<Bytes>>, addr: SocketAddr, peer: &str) -> u64 {
    let start = Instant::now();
    let mut admitted = 0u64;
    loop {
        let (parts, body) = common::get_spoofed(client, addr).await;
        if parts.status == 429 {
            common::check_refusal(&parts.headers, "per-ip");
            common::check_problem(&parts.headers, &body, "per-ip");
            break;
        }
        assert_eq!(parts.status, 200);
        assert_eq!(body, format!("hello {peer}\n"));
        admitted += 1;
        assert!(admitted <= 100, "{peer} is never refused");
    }
    let most = u64::from(server::BURST)
        + (start.elapsed().as_secs_f64() * f64::from(server::RATE)).ceil() as u64;
    assert!(
        (u64::from(server::BURST)..=most).contains(&admitted),
        "{peer}: {admitted} admitted, at most {most}"
    );
    admitted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_connection_limit_keys_by_the_real_peer_address() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(server::serve(listener));
    // Two clients on two loopback addresses, neither a trusted proxy: each
    // is keyed by its own address, whatever X-Forwarded-For claims (all
    // their requests claim the same client). 127.0.0.3 is refused only
    // after its own burst, though 127.0.0.2 was refused just before.
    drain(&client_from("127.0.0.2"), addr, "127.0.0.2").await;
    drain(&client_from("127.0.0.3"), addr, "127.0.0.3").await;
    server.abort();
}
