//! The layer in-process: decisions, headers (parsed with sfv), waiting,
//! keys, bad configuration. Paused tokio time, so waits are exact.

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use ratekeeper::tokio::TokioClock;
use ratekeeper::{Pacer, Rate};
use ratekeeper_tower::{
    ConfigError, Global, HeaderKey, KeyedMap, OnMissingKey, PeerIp, Policy, RateLimitLayer,
    RightmostTrusted,
};
use tower::{Service, ServiceBuilder, ServiceExt};

type Svc = tower::util::BoxCloneService<Request<()>, Response<String>, Infallible>;

fn hello(
) -> impl Service<Request<()>, Response = Response<String>, Error = Infallible, Future: Send>
       + Clone
       + Send {
    tower::service_fn(|_req: Request<()>| async { Ok(Response::new("hello".to_owned())) })
}

async fn send(svc: &mut Svc, req: Request<()>) -> Response<String> {
    svc.ready().await.unwrap().call(req).await.unwrap()
}

fn strict_pacer(rate: f64) -> Pacer<TokioClock> {
    Pacer::builder(Rate::new(rate).unwrap())
        .strictness(1.0)
        .build_with_clock(TokioClock::new())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn global_refuses_with_draft11_headers_and_retry_after_rounded_up() {
    // 2 per second: the refusal's wait is 500 ms, Retry-After is 1 (not 0).
    let layer =
        RateLimitLayer::global(strict_pacer(2.0), Policy::from_rate("all", 2.0).unwrap()).unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer.clone()).service(hello()));
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 200);
    let refused = send(&mut svc, Request::new(())).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(common::check_refusal(refused.headers(), "all"), 1);
    assert_eq!(
        refused.headers()["ratelimit-policy"],
        r#""all";q=2;w=1;rk-burst=1"#
    );
    assert_eq!(layer.metrics().refused(), 1);
    tokio::time::advance(Duration::from_millis(500)).await;
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn long_waits_round_up_to_whole_seconds() {
    // 1 per 2.5 s: the second request would wait 2.5 s -> Retry-After 3.
    let layer =
        RateLimitLayer::global(strict_pacer(0.4), Policy::from_rate("slow", 0.4).unwrap()).unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello()));
    send(&mut svc, Request::new(())).await;
    let refused = send(&mut svc, Request::new(())).await;
    assert_eq!(common::check_refusal(refused.headers(), "slow"), 3);
    let p = common::parse_list(refused.headers()["ratelimit-policy"].to_str().unwrap());
    assert_eq!((p[0].1["q"], p[0].1["w"]), (2, 5));
}

#[tokio::test(start_paused = true)]
async fn waits_up_to_the_deadline_instead_of_refusing() {
    let limit = Global::new(strict_pacer(1.0), Policy::from_rate("all", 1.0).unwrap());
    let layer = RateLimitLayer::builder(limit)
        .wait_up_to(Duration::from_millis(1500))
        .build()
        .unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer.clone()).service(hello()));
    let start = tokio::time::Instant::now();
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 200);
    assert_eq!(start.elapsed(), Duration::ZERO);
    // The second waits exactly 1 s; a third would need 2 s > 1.5 s: refused.
    let second = tokio::spawn({
        let mut svc = svc.clone();
        async move { send(&mut svc, Request::new(())).await }
    });
    tokio::task::yield_now().await;
    let third = send(&mut svc, Request::new(())).await;
    assert_eq!(third.status(), 429);
    assert_eq!(common::check_refusal(third.headers(), "all"), 2);
    assert_eq!(second.await.unwrap().status(), 200);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(layer.metrics().waited(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_gives_its_slot_back() {
    let limit = Global::new(strict_pacer(1.0), Policy::from_rate("all", 1.0).unwrap());
    let layer = RateLimitLayer::builder(limit)
        .wait_up_to(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer.clone()).service(hello()));
    send(&mut svc, Request::new(())).await;
    let fut = svc.ready().await.unwrap().call(Request::new(())); // due at 1 s
    drop(fut);
    // The next request takes the slot at 1 s again, not 2 s.
    let start = tokio::time::Instant::now();
    send(&mut svc, Request::new(())).await;
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

fn keyed_layer(
    on_missing: OnMissingKey<http::HeaderValue>,
) -> RateLimitLayer<
    HeaderKey,
    KeyedMap<http::HeaderValue, ratekeeper::config::AnyLimiter<TokioClock>, TokioClock>,
> {
    let policy = Policy::from_rate("per-key", 1.0).unwrap();
    let map = KeyedMap::from_config_with_clock(
        &"pacer:1,1".parse().unwrap(),
        policy,
        100,
        TokioClock::new(),
    )
    .unwrap();
    RateLimitLayer::builder(map)
        .key(HeaderKey::new("x-api-key").unwrap())
        .on_missing_key(on_missing)
        .headers_on_admitted(true)
        .build()
        .unwrap()
}

fn with_key(key: &str) -> Request<()> {
    Request::builder()
        .header("x-api-key", key)
        .body(())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn keys_are_limited_apart_and_missing_keys_follow_the_policy() {
    let layer = keyed_layer(OnMissingKey::Refuse(StatusCode::BAD_REQUEST));
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer.clone()).service(hello()));
    let a = send(&mut svc, with_key("a")).await;
    assert_eq!(a.status(), 200);
    let rl = common::parse_list(a.headers()["ratelimit"].to_str().unwrap());
    assert_eq!(rl[0].0, "per-key");
    assert_eq!((rl[0].1["r"], rl[0].1["t"]), (0, 1));
    common::parse_list(a.headers()["ratelimit-policy"].to_str().unwrap());
    assert_eq!(send(&mut svc, with_key("a")).await.status(), 429);
    assert_eq!(send(&mut svc, with_key("b")).await.status(), 200);
    let missing = send(&mut svc, Request::new(())).await;
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
    assert_eq!(layer.metrics().key_errors(), 1);

    // Or every keyless request shares one key.
    let shared = keyed_layer(OnMissingKey::Shared(http::HeaderValue::from_static("-")));
    let mut svc = Svc::new(ServiceBuilder::new().layer(shared.clone()).service(hello()));
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 200);
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 429);
    assert_eq!(send(&mut svc, with_key("a")).await.status(), 200);
    assert_eq!(shared.metrics().key_errors(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_missing_peer_address_is_a_configuration_error_not_a_shared_key() {
    let policy = Policy::from_rate("per-ip", 1.0).unwrap();
    let map = KeyedMap::from_config_with_clock(
        &"pacer:1,1".parse().unwrap(),
        policy,
        10,
        TokioClock::new(),
    )
    .unwrap();
    let layer = RateLimitLayer::builder(map)
        .key(PeerIp::socket_addr())
        .build()
        .unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer.clone()).service(hello()));
    for _ in 0..3 {
        assert_eq!(send(&mut svc, Request::new(())).await.status(), 500);
    }
    assert_eq!(layer.metrics().config_errors(), 3);
    assert_eq!(layer.metrics().refused(), 0);
    let mut req = Request::new(());
    req.extensions_mut()
        .insert("192.0.2.1:4000".parse::<SocketAddr>().unwrap());
    assert_eq!(send(&mut svc, req).await.status(), 200);
}

fn per_ip_map() -> KeyedMap<std::net::IpAddr, ratekeeper::config::AnyLimiter<TokioClock>, TokioClock>
{
    let policy = Policy::from_rate("per-ip", 1.0).unwrap();
    KeyedMap::from_config_with_clock(&"pacer:1,1".parse().unwrap(), policy, 10, TokioClock::new())
        .unwrap()
}

fn via_proxy() -> RightmostTrusted {
    RightmostTrusted::x_forwarded_for(["10.0.0.0/8"]).unwrap()
}

fn xff(client: &str) -> Request<()> {
    Request::builder()
        .header("x-forwarded-for", client)
        .body(())
        .unwrap()
}

/// A `Forwarded` field the grammar rejects is answered as a request with
/// no field at all: the missing-key policy, counted as a key error.
#[tokio::test(start_paused = true)]
async fn a_rejected_forwarded_field_gets_the_missing_key_answer() {
    let forwarded = |values: &[&str]| {
        let mut b = Request::builder();
        for v in values {
            b = b.header("forwarded", *v);
        }
        b.body(()).unwrap()
    };
    let rejected = [
        &[r#"for=203.0.113.9;host="evil.example"#][..],
        &["for=203.0.113.9;for=6.6.6.6"],
        &["for=203.0.113.9", "for = 6.6.6.6"],
    ];
    let layer = |on_missing| {
        RateLimitLayer::builder(per_ip_map())
            .key(RightmostTrusted::forwarded(["10.0.0.0/8"]).unwrap())
            .on_missing_key(on_missing)
            .build()
            .unwrap()
    };
    let refuse = layer(OnMissingKey::Refuse(StatusCode::BAD_REQUEST));
    let mut svc = Svc::new(ServiceBuilder::new().layer(refuse.clone()).service(hello()));
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 400);
    for values in rejected {
        assert_eq!(
            send(&mut svc, forwarded(values)).await.status(),
            400,
            "{values:?}"
        );
    }
    assert_eq!(refuse.metrics().key_errors(), 4);
    let ok = forwarded(&[r#"for=203.0.113.9;host="a,for=6.6.6.6""#]);
    assert_eq!(send(&mut svc, ok).await.status(), 200);

    // Shared: each takes the one shared key's place (1 per second).
    let shared = layer(OnMissingKey::Shared("192.0.2.1".parse().unwrap()));
    let mut svc = Svc::new(ServiceBuilder::new().layer(shared.clone()).service(hello()));
    assert_eq!(send(&mut svc, forwarded(rejected[0])).await.status(), 200);
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 429);
    assert_eq!(send(&mut svc, forwarded(rejected[1])).await.status(), 429);
    assert_eq!(shared.metrics().key_errors(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_key_read_from_the_connection_is_served_per_connection_only() {
    // Inside a service nothing supplies the connection's peer: refused.
    let inside = |x| RateLimitLayer::builder(per_ip_map()).key(x).build();
    assert_eq!(
        inside(via_proxy().with_connection_peer()).unwrap_err(),
        ConfigError::PeerNotSupplied
    );
    assert_eq!(
        RateLimitLayer::builder(per_ip_map())
            .key(PeerIp::connection())
            .build()
            .unwrap_err(),
        ConfigError::PeerNotSupplied
    );
    // Keys read from the server's extensions, or from headers only, are
    // not (the 500 answers their missing peer at request time).
    assert!(inside(via_proxy()).is_ok());
    assert!(inside(via_proxy().with_peer(|e| e.get::<SocketAddr>().map(|a| a.ip()))).is_ok());

    // Per connection: each connection's service is made from its address.
    let limit = RateLimitLayer::builder(per_ip_map())
        .key(via_proxy().with_connection_peer())
        .build_per_connection()
        .unwrap();
    let mut make = limit.make_service(hello());
    let mut connect = |peer: &str| {
        let svc = make.call(peer.parse::<SocketAddr>().unwrap());
        async move { Svc::new(svc.await.unwrap()) }
    };
    let mut proxy = connect("10.0.0.1:4000").await;
    let mut direct = connect("203.0.113.1:5000").await;
    // Through the proxy: the client the proxy appended.
    assert_eq!(send(&mut proxy, xff("203.0.113.1")).await.status(), 200);
    assert_eq!(send(&mut proxy, xff("203.0.113.1")).await.status(), 429);
    assert_eq!(send(&mut proxy, xff("203.0.113.2")).await.status(), 200);
    // Directly: the peer, whatever the header claims (the same key as above).
    assert_eq!(send(&mut direct, xff("198.51.100.9")).await.status(), 429);
    assert_eq!(send(&mut direct, Request::new(())).await.status(), 429);
    assert_eq!(limit.metrics().refused(), 3);
    assert_eq!(limit.metrics().config_errors(), 0);
}

#[tokio::test(start_paused = true)]
async fn stacked_layers_share_one_field_of_each() {
    let global = RateLimitLayer::builder(Global::new(
        strict_pacer(1000.0),
        Policy::new("global", 1000, 1).unwrap(),
    ))
    .headers_on_admitted(true)
    .build()
    .unwrap();
    let inner = keyed_layer(OnMissingKey::Refuse(StatusCode::BAD_REQUEST));
    let mut svc = Svc::new(
        ServiceBuilder::new()
            .layer(global)
            .layer(inner)
            .service(hello()),
    );
    let ok = send(&mut svc, with_key("a")).await;
    let names =
        |v: &str| -> Vec<String> { common::parse_list(v).into_iter().map(|(n, _)| n).collect() };
    let h = ok.headers();
    assert_eq!(
        names(h["ratelimit-policy"].to_str().unwrap()),
        ["per-key", "global"]
    );
    assert_eq!(
        names(h["ratelimit"].to_str().unwrap()),
        ["per-key", "global"]
    );
    assert_eq!(h.get_all("ratelimit").iter().count(), 1);
    tokio::time::advance(Duration::from_millis(10)).await; // past the global slot
    let refused = send(&mut svc, with_key("a")).await;
    assert_eq!(refused.status(), 429);
    common::check_refusal(refused.headers(), "per-key");
}

#[tokio::test(start_paused = true)]
async fn clones_share_one_limit() {
    // The tower RateLimit + Buffer trap under axum: every clone its own window.
    let layer = RateLimitLayer::global(
        Pacer::builder(Rate::new(5.0).unwrap())
            .strictness(1.0)
            .build_with_clock(TokioClock::new())
            .unwrap(),
        Policy::from_rate("all", 5.0).unwrap(),
    )
    .unwrap();
    let svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello()));
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let mut s = svc.clone();
        tasks.push(tokio::spawn(async move {
            send(&mut s, Request::new(())).await.status()
        }));
    }
    let mut ok = 0;
    for t in tasks {
        ok += usize::from(t.await.unwrap() == 200);
    }
    assert_eq!(ok, 1);
}

#[test]
fn bad_configuration_is_a_typed_error() {
    assert_eq!(
        Policy::new("x", 0, 1).unwrap_err(),
        ConfigError::ZeroQuota {
            quota: 0,
            window: 1
        }
    );
    // A field Integer has at most 15 digits (RFC 9651 §3.3.1).
    assert_eq!(
        Policy::new("x", 1_000_000_000_000_000, 1).unwrap_err(),
        ConfigError::QuotaTooLarge {
            quota: 1_000_000_000_000_000,
            window: 1
        }
    );
    assert!(Policy::new("x", 999_999_999_999_999, 999_999_999_999_999).is_ok());
    assert!(matches!(
        Policy::from_rate("x", 1e300),
        Err(ConfigError::QuotaTooLarge { .. })
    ));
    assert!(matches!(
        Policy::new("é", 1, 1),
        Err(ConfigError::PolicyName(_))
    ));
    assert!(matches!(
        Policy::new("\n", 1, 1),
        Err(ConfigError::PolicyName(_))
    ));
    assert!(matches!(
        Policy::from_rate("x", f64::NAN),
        Err(ConfigError::Rate(_))
    ));
    assert!(matches!(
        Policy::from_rate("x", 0.0),
        Err(ConfigError::Rate(_))
    ));
    assert_eq!(
        Policy::new("x", 1, 1).unwrap().with_burst(0).unwrap_err(),
        ConfigError::ZeroBurst
    );
    let p = || Policy::new("x", 1, 1).unwrap();
    let cfg = "pacer:1".parse().unwrap();
    assert_eq!(
        KeyedMap::<u32, _, _>::from_config(&cfg, p(), 0).unwrap_err(),
        ConfigError::ZeroCap
    );
    assert_eq!(
        KeyedMap::<u32, _, _>::from_config(&cfg, p(), usize::MAX).unwrap_err(),
        ConfigError::TooManyKeys(usize::MAX)
    );
    assert!(matches!(
        KeyedMap::<u32, _, _>::from_config(&"pool:10,fill=1ms".parse().unwrap(), p(), 10),
        Err(ConfigError::PerKeyKind(_))
    ));
    let global = Global::new(strict_pacer_std(), p());
    assert_eq!(
        RateLimitLayer::builder(global)
            .on_missing_key(OnMissingKey::Refuse(StatusCode::OK))
            .build()
            .unwrap_err(),
        ConfigError::Status(200)
    );
    // Quoting: a name with quotes and backslashes still parses.
    let odd = Policy::new(r#"a "b" \c"#, 1, 1).unwrap().to_string();
    assert_eq!(common::parse_list(&odd)[0].0, r#"a "b" \c"#);
}

fn strict_pacer_std() -> Pacer {
    Pacer::builder(Rate::new(1.0).unwrap()).build().unwrap()
}

#[allow(dead_code)]
fn _arc_limit_is_a_limit(l: Arc<Global<Pacer>>) -> impl ratekeeper_tower::KeyedLimit<()> {
    l
}

#[tokio::test(start_paused = true)]
async fn the_core_keyed_map_bounds_keys_and_refuses_new_ones_when_full_of_debt() {
    use ratekeeper::keyed::{Keyed, Overflow};
    use ratekeeper_tower::CoreKeyed;
    // Two keys at most (one shard), 1 a second each, strict.
    let settings = Keyed::builder()
        .max_keys(2)
        .shards(1)
        .overflow(Overflow::DenyNew);
    let limit = Arc::new(
        CoreKeyed::from_builder_with_clock(
            "per-key",
            settings,
            &"pacer:1,1".parse().unwrap(),
            TokioClock::new(),
        )
        .unwrap(),
    );
    let layer = RateLimitLayer::builder(Arc::clone(&limit))
        .key(HeaderKey::new("x-api-key").unwrap())
        .build()
        .unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello()));
    assert_eq!(send(&mut svc, with_key("a")).await.status(), 200);
    assert_eq!(send(&mut svc, with_key("b")).await.status(), 200);
    // Each key's next slot is a second away: both hold debt.
    assert_eq!(send(&mut svc, with_key("a")).await.status(), 429);
    // A third key finds the map full of debt: refused, not tracked.
    assert_eq!(
        send(&mut svc, with_key("c")).await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let m = limit.metrics();
    assert_eq!((m.live_keys, m.denied_new), (2, 1), "{m:?}");
    // A second later both recovered: the new key evicts a fresh one.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(send(&mut svc, with_key("c")).await.status(), 200);
    assert!(limit.metrics().live_keys <= 2);
}

#[tokio::test(start_paused = true)]
async fn admitted_responses_count_a_buckets_remaining_permits_exactly() {
    use ratekeeper::keyed::Keyed;
    use ratekeeper_tower::CoreKeyed;
    // 5 per second, a bucket of 5: each admitted response says how many
    // permits the key has left, not the schedule's lower bound (0).
    let limit = CoreKeyed::from_builder_with_clock(
        "per-key",
        Keyed::builder(),
        &"refill:5,1s,capacity=5,timeout=0s".parse().unwrap(),
        TokioClock::new(),
    )
    .unwrap();
    let layer = RateLimitLayer::builder(limit)
        .key(HeaderKey::new("x-api-key").unwrap())
        .headers_on_admitted(true)
        .build()
        .unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello()));
    let remaining = |r: &Response<String>| {
        let item = r.headers()["ratelimit"].to_str().unwrap().to_owned();
        common::parse_list(&item)[0].1.get("r").copied()
    };
    for left in (0..5).rev() {
        let r = send(&mut svc, with_key("a")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(remaining(&r), Some(left), "{left}");
    }
    assert_eq!(send(&mut svc, with_key("a")).await.status(), 429);
    // Another key has its own bucket.
    assert_eq!(remaining(&send(&mut svc, with_key("b")).await), Some(4));
}

/// A limit decided elsewhere: each key's answer comes after a round trip
/// of 5 ms (tokio's paused timer), as a limit kept on a server's would.
/// Key "ok" is admitted, "wait" granted 2 s ahead, "full" refused for
/// 3.5 s, "down" unavailable, "bad" misconfigured.
struct Remote(Policy);

type RemoteFuture = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<ratekeeper::Grant, ratekeeper::AcquireError>>
            + Send,
    >,
>;

impl ratekeeper_tower::AsyncKeyedLimit<http::HeaderValue> for Remote {
    type Pending = RemoteFuture;

    fn reserve_async(
        &self,
        key: &http::HeaderValue,
        _: u32,
        _: Option<Duration>,
    ) -> ratekeeper_tower::Reservation<RemoteFuture> {
        use ratekeeper::{AcquireError, Grant};
        let key = key.to_str().unwrap().to_owned();
        ratekeeper_tower::Reservation::Later(Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            match key.as_str() {
                "ok" => Ok(Grant::new(0, 0, 0, 1)),
                "wait" => Ok(Grant::new(2_000_000_000, 2_000_000_000, 0, 1)),
                "full" => Err(AcquireError::WouldWait {
                    wait: Duration::from_millis(3500),
                    max_wait: Duration::ZERO,
                }),
                "down" => Err(AcquireError::Unavailable),
                _ => Err(AcquireError::Misconfigured),
            }
        }))
    }

    fn announced_policy(&self) -> &Policy {
        &self.0
    }
}

#[tokio::test(start_paused = true)]
async fn a_limit_that_answers_later_is_awaited_and_answered_as_one_that_answers_now() {
    let layer = RateLimitLayer::builder(Remote(Policy::new("remote", 10, 1).unwrap()))
        .key(HeaderKey::new("x-api-key").unwrap())
        .headers_on_admitted(true)
        .build()
        .unwrap();
    let metrics = layer.clone();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello()));
    let start = tokio::time::Instant::now();
    let ok = send(&mut svc, with_key("ok")).await;
    assert_eq!((ok.status(), ok.body().as_str()), (StatusCode::OK, "hello"));
    assert_eq!(ok.headers()["ratelimit"], r#""remote";r=0;t=1"#);
    assert_eq!(start.elapsed(), Duration::from_millis(5));
    // Granted 2 s ahead: the round trip, then the wait, then the service.
    let start = tokio::time::Instant::now();
    assert_eq!(send(&mut svc, with_key("wait")).await.status(), 200);
    assert_eq!(start.elapsed(), Duration::from_millis(2005));
    let full = send(&mut svc, with_key("full")).await;
    assert_eq!(full.status(), 429);
    assert_eq!(common::check_refusal(full.headers(), "remote"), 4);
    common::check_problem(full.headers(), full.body().as_bytes(), "remote");
    let down = send(&mut svc, with_key("down")).await;
    assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Misconfigured: 500, never admitted, counted.
    let bad = send(&mut svc, with_key("bad")).await;
    assert_eq!(bad.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let m = metrics.metrics();
    assert_eq!(
        (m.refused(), m.unavailable(), m.config_errors(), m.waited()),
        (1, 1, 1, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn debug_shows_each_parts_settings() {
    let policy = Policy::from_rate("all", 2.0).unwrap();
    let builder = RateLimitLayer::builder(Global::new(strict_pacer(2.0), policy.clone()))
        .wait_up_to(Duration::from_millis(250));
    let shown = format!("{builder:?}");
    assert!(
        shown.starts_with("Builder {")
            && shown.contains("max_wait: 250ms")
            && shown.contains("admitted_headers: false"),
        "{shown}"
    );
    let layer = RateLimitLayer::global(strict_pacer(2.0), policy).unwrap();
    let shown = format!("{layer:?}");
    assert!(
        shown.starts_with("RateLimitLayer {") && shown.contains("metrics:"),
        "{shown}"
    );
    let mut service = tower::Layer::layer(
        &layer,
        tower::service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(String::new()))
        }),
    );
    let shown = format!("{service:?}");
    assert!(
        shown.starts_with("RateLimit {") && shown.contains("inner: ServiceFn"),
        "{shown}"
    );
    let future = service.call(Request::new(()));
    assert_eq!(format!("{future:?}"), "ResponseFuture");
}

#[tokio::test(start_paused = true)]
async fn a_wait_is_the_grants_own_however_long_the_clock_has_run() {
    let limit = Global::new(strict_pacer(1.0), Policy::from_rate("all", 1.0).unwrap());
    let layer = RateLimitLayer::builder(limit)
        .wait_up_to(Duration::from_millis(1500))
        .build()
        .unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello()));
    // 100 s on the limiter's clock before the first request.
    tokio::time::advance(Duration::from_secs(100)).await;
    let start = tokio::time::Instant::now();
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 200);
    assert_eq!(send(&mut svc, Request::new(())).await.status(), 200);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

/// A service that is never ready: backpressure the layer must pass on.
#[derive(Clone)]
struct NeverReady;

impl Service<Request<()>> for NeverReady {
    type Response = Response<String>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<String>, Infallible>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Pending
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        std::future::ready(Ok(Response::new(String::new())))
    }
}

#[tokio::test(start_paused = true)]
async fn the_inner_services_backpressure_passes_through() {
    let layer =
        RateLimitLayer::global(strict_pacer(1.0), Policy::from_rate("all", 1.0).unwrap()).unwrap();
    let mut svc = tower::Layer::layer(&layer, NeverReady);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(svc.poll_ready(&mut cx).is_pending());
}

#[tokio::test(start_paused = true)]
async fn an_admitted_response_says_when_the_next_permit_accrues() {
    // 1 per 4 s: after an admitted request, the next permit is 4 s away.
    let limit = Global::new(strict_pacer(0.25), Policy::from_rate("slow", 0.25).unwrap());
    let layer = RateLimitLayer::builder(limit)
        .headers_on_admitted(true)
        .build()
        .unwrap();
    let mut svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello()));
    let r = send(&mut svc, Request::new(())).await;
    assert_eq!(r.status(), 200);
    let item = common::parse_list(r.headers()["ratelimit"].to_str().unwrap());
    assert_eq!((item[0].1["r"], item[0].1["t"]), (0, 4));
}
