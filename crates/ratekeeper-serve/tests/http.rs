//! The HTTP API over a real server on loopback and a real client: the
//! `/json` RLS mapping, the plain `/v1/check`, health, metrics, malformed
//! bodies, and a graceful shutdown with a held request in flight.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ratekeeper_serve::config::{
    Algorithm, Config, DescriptorConfig, DomainConfig, LimitConfig, RateLimitConfig, Unit,
};
use ratekeeper_serve::http::serve_http;
use ratekeeper_serve::{Limits, Service};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

fn limit(n: u32, unit: Unit, algorithm: Algorithm, max_wait: Duration) -> Option<LimitConfig> {
    Some(
        RateLimitConfig {
            algorithm,
            max_wait,
            ..RateLimitConfig::new(n, unit)
        }
        .into(),
    )
}

fn node(key: &str, value: Option<&str>, limit: Option<LimitConfig>) -> DescriptorConfig {
    DescriptorConfig {
        value: value.map(Into::into),
        limit,
        ..DescriptorConfig::new(key)
    }
}

fn service() -> Service {
    let zero = Duration::ZERO;
    let config = Config {
        domains: vec![DomainConfig {
            domain: "api".into(),
            descriptors: vec![
                node(
                    "user",
                    None,
                    limit(2, Unit::Minute, Algorithm::Refill, zero),
                ),
                node(
                    "job",
                    None,
                    limit(5, Unit::Second, Algorithm::Pacer, Duration::from_secs(1)),
                ),
            ],
            source: "api.yaml".into(),
        }],
    };
    Service::new(Limits::new(&config).unwrap())
}

struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(service: Service) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(serve_http(service, listener, async {
        let _ = stopped.await;
    }));
    Server {
        addr,
        stop: Some(stop),
        done,
    }
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

async fn call(addr: SocketAddr, method: Method, path: &str, body: &[u8]) -> Answer {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let req = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::copy_from_slice(body)))
        .unwrap();
    let res = client.request(req).await.unwrap();
    let (parts, body) = res.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

async fn post(addr: SocketAddr, path: &str, body: &Value) -> Answer {
    call(addr, Method::POST, path, body.to_string().as_bytes()).await
}

fn rls(user: &str) -> Value {
    json!({"domain": "api", "descriptors": [{"entries": [{"key": "user", "value": user}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_as_envoyproxy_ratelimit_does() {
    let server = start(service()).await;
    let first = post(server.addr, "/json", &rls("alice")).await;
    assert_eq!(first.status, StatusCode::OK);
    let body = first.json();
    assert_eq!(body["overallCode"], "OK");
    assert_eq!(body["statuses"][0]["code"], "OK");
    assert_eq!(
        body["statuses"][0]["currentLimit"],
        json!({"requestsPerUnit": 2, "unit": "MINUTE"})
    );
    assert_eq!(body["statuses"][0]["limitRemaining"], 1);
    // Until the bucket is full again: one permit's 30 s, less the time
    // since the decision.
    let reset = body["statuses"][0]["durationUntilReset"].as_str().unwrap();
    let reset: f64 = reset.trim_end_matches('s').parse().unwrap();
    assert!(reset > 29.0 && reset <= 30.0, "{reset}");
    assert_eq!(first.headers["ratelimit"], r#""api/user";r=1;t=30"#);
    let headers = &body["responseHeadersToAdd"];
    assert_eq!(
        headers[0],
        json!({"key": "ratelimit-policy", "value": "\"api/user\";q=2;w=60;rk-burst=2"})
    );
    post(server.addr, "/json", &rls("alice")).await;
    let over = post(server.addr, "/json", &rls("alice")).await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS);
    let body = over.json();
    assert_eq!(body["overallCode"], "OVER_LIMIT");
    assert_eq!(
        body["statuses"][0].get("limitRemaining"),
        None,
        "zero is left out"
    );
    assert_eq!(over.headers["retry-after"], "30");
    // The proto names and string integers are read too.
    let mut bob = rls("bob");
    bob["hits_addend"] = json!("2");
    let taken = post(server.addr, "/json", &bob).await.json();
    assert_eq!(taken["statuses"][0].get("limitRemaining"), None);
    assert_eq!(taken["overallCode"], "OK");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_checks_answer_at_once_with_the_wait() {
    let server = start(service()).await;
    let ask = json!({"domain": "api", "key": "job", "value": "j", "max_wait": "500ms"});
    let started = Instant::now();
    let mut waits = Vec::new();
    for _ in 0..4 {
        let a = post(server.addr, "/v1/check", &ask).await;
        let body = a.json();
        waits.push((
            a.status,
            body["allowed"].clone(),
            body["wait_secs"].as_f64().unwrap(),
        ));
    }
    assert!(started.elapsed() < Duration::from_millis(400), "not held");
    let allowed = |w: f64| (StatusCode::OK, json!(true), w);
    assert_eq!(waits[0], allowed(0.0));
    assert!((waits[1].2 - 0.2).abs() < 0.05, "{waits:?}");
    assert!((waits[2].2 - 0.4).abs() < 0.05, "{waits:?}");
    assert_eq!(waits[3].0, StatusCode::TOO_MANY_REQUESTS, "0.6 s > 500 ms");
    let several =
        json!({"domain": "api", "descriptors": [[["user", "u"]], [["none", "x"]]], "permits": 0});
    let body = post(server.addr, "/v1/check", &several).await.json();
    assert_eq!(body["allowed"], true);
    assert_eq!(body["remaining"], 2, "0 permits take nothing");
    assert_eq!(body["statuses"][1]["limit"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_calls_get_a_4xx_and_the_server_still_serves() {
    let server = start(service()).await;
    let many: Vec<Value> = (0..10_000)
        .map(|i| json!({"key": format!("k{i}"), "value": "v"}))
        .collect();
    let cases: Vec<(&str, Vec<u8>, StatusCode)> = vec![
        ("/json", b"not json".to_vec(), StatusCode::BAD_REQUEST),
        ("/json", b"{\"domain\":\"api\"}".to_vec(), StatusCode::BAD_REQUEST),
        ("/json", json!({"domain": "api", "descriptors": [{"entries": many}]}).to_string().into_bytes(), StatusCode::BAD_REQUEST),
        ("/json", rls(&"x".repeat(1 << 20)).to_string().into_bytes(), StatusCode::BAD_REQUEST),
        ("/json", json!({"domain": "nope", "descriptors": [{"entries": [{"key": "a", "value": "b"}]}]}).to_string().into_bytes(), StatusCode::NOT_FOUND),
        ("/json", json!({"domain": "api", "descriptors": [], "extra": 1}).to_string().into_bytes(), StatusCode::BAD_REQUEST),
        ("/json", json!({"domain": "api", "descriptors": [{"entries": [], "limit": {"requests_per_unit": 1}}]}).to_string().into_bytes(), StatusCode::BAD_REQUEST),
        ("/json", json!({"domain": "api", "hitsAddend": u64::from(u32::MAX) + 1}).to_string().into_bytes(), StatusCode::BAD_REQUEST),
        ("/json", vec![b'['; 3 << 20], StatusCode::PAYLOAD_TOO_LARGE),
        ("/v1/check", b"\xff\xfe".to_vec(), StatusCode::BAD_REQUEST),
        ("/v1/check", json!({"domain": "api", "key": "user"}).to_string().into_bytes(), StatusCode::BAD_REQUEST),
        ("/v1/check", json!({"domain": "api", "key": "u", "value": "v", "max_wait": -1}).to_string().into_bytes(), StatusCode::BAD_REQUEST),
        ("/v1/check", json!({"domain": "api", "key": "u", "value": "v", "max_wait": "soon"}).to_string().into_bytes(), StatusCode::BAD_REQUEST),
    ];
    for (path, body, expected) in cases {
        let a = call(server.addr, Method::POST, path, &body).await;
        assert_eq!(
            a.status,
            expected,
            "{path} {}",
            String::from_utf8_lossy(&body[..body.len().min(80)])
        );
        if expected != StatusCode::PAYLOAD_TOO_LARGE {
            assert!(
                a.json()["error"].as_str().is_some_and(|e| !e.is_empty()),
                "{}",
                a.body
            );
        }
        // A query (a descriptor's own zero hits) is answered.
        let query = json!({"domain": "api", "descriptors": [{"entries": [{"key": "user", "value": "after"}], "hitsAddend": 0}]});
        assert_eq!(
            post(server.addr, "/json", &query).await.status,
            StatusCode::OK
        );
    }
    let health = call(server.addr, Method::GET, "/healthz", b"").await;
    assert_eq!(
        (health.status, health.body.as_str()),
        (StatusCode::OK, "OK")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_decisions_errors_and_live_keys() {
    let server = start(service()).await;
    for user in ["a", "a", "a", "b"] {
        post(server.addr, "/json", &rls(user)).await;
    }
    call(server.addr, Method::POST, "/json", b"{").await;
    post(
        server.addr,
        "/json",
        &json!({"domain": "x", "descriptors": [{"entries": [{"key": "a", "value": "b"}]}]}),
    )
    .await;
    let m = call(server.addr, Method::GET, "/metrics", b"").await.body;
    let has = |line: &str| m.lines().any(|l| l == line);
    assert!(
        has(r#"ratekeeper_decisions_total{domain="api",descriptor="api/user",result="ok"} 3"#),
        "{m}"
    );
    assert!(
        has(
            r#"ratekeeper_decisions_total{domain="api",descriptor="api/user",result="over_limit"} 1"#
        ),
        "{m}"
    );
    assert!(
        has(r#"ratekeeper_request_errors_total{reason="unknown_domain"} 1"#),
        "{m}"
    );
    assert!(has("ratekeeper_live_keys 2"), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_the_requests_in_flight() {
    let mut server = start(service()).await;
    let body =
        json!({"domain": "api", "descriptors": [{"entries": [{"key": "job", "value": "held"}]}]});
    assert_eq!(
        post(server.addr, "/json", &body).await.status,
        StatusCode::OK
    );
    let addr = server.addr;
    // The pacer's next slot is 200 ms away: this call is held that long.
    let held = tokio::spawn(async move { post(addr, "/json", &body).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.stop.take().unwrap().send(()).unwrap();
    let answer = held.await.unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["overallCode"], "OK");
    server.done.await.unwrap().unwrap();
}
