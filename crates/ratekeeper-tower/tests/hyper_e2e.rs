//! End to end on hyper alone (no axum): an accept loop serving each
//! connection with [`MakeRateLimit::for_peer`], keyed by the connection's
//! peer, driven by real clients from two loopback addresses.

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;

use http::{Request, Response};
use http_body_util::{Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use ratekeeper_tower::{CoreKeyed, MakeRateLimit, PeerAddr, PeerIp, RateLimitLayer};

/// Each client's burst; its rate is 1 a second (so nothing refills while
/// a test drains it).
const BURST: u32 = 3;

type App = tower::util::BoxCloneSyncService<Request<Incoming>, Response<Full<Bytes>>, Infallible>;

/// Says hello to the peer the limit saw.
fn app() -> App {
    App::new(tower::service_fn(|req: Request<Incoming>| async move {
        let peer = req.extensions().get::<PeerAddr>().map(|p| p.0.ip());
        let body = format!(
            "hello {}\n",
            peer.map_or("?".to_owned(), |ip| ip.to_string())
        );
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
    }))
}

/// Accepts connections on `listener` forever, each served by its own
/// service from `make`.
async fn serve(
    listener: tokio::net::TcpListener,
    make: MakeRateLimit<App, PeerIp, CoreKeyed<std::net::IpAddr>>,
) {
    loop {
        let (stream, peer) = listener.accept().await.unwrap();
        let svc = TowerToHyperService::new(make.for_peer(peer));
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// A client whose connections come from `ip` (127/8 is this host's).
fn client_from(ip: &str) -> Client<HttpConnector, Empty<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_local_address(Some(ip.parse().unwrap()));
    Client::builder(TokioExecutor::new()).build(connector)
}

/// Statuses of `n` requests from `client`, and the bodies of the 200s.
async fn send(
    client: &Client<HttpConnector, Empty<Bytes>>,
    addr: SocketAddr,
    n: usize,
) -> (Vec<u16>, Vec<String>) {
    let (mut statuses, mut bodies) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let (parts, body) = common::get_spoofed(client, addr).await;
        if parts.status == 429 {
            common::check_refusal(&parts.headers, "per-peer");
        } else {
            bodies.push(String::from_utf8(body.to_vec()).unwrap());
        }
        statuses.push(parts.status.as_u16());
    }
    (statuses, bodies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_serves_the_limit_per_connection_keyed_by_the_real_peer() {
    let config = format!("refill:1,1s,capacity={BURST},initial={BURST}")
        .parse()
        .unwrap();
    let limit = CoreKeyed::from_config("per-peer", &config, 1000).unwrap();
    let make = RateLimitLayer::builder(limit)
        .key(PeerIp::connection())
        .build_per_connection()
        .unwrap()
        .make_service(app());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(serve(listener, make));
    // Each address gets its own burst, then 429s; the spoofed
    // X-Forwarded-For changes nothing (the key is the connection's peer).
    for ip in ["127.0.0.2", "127.0.0.3"] {
        let (statuses, bodies) = send(&client_from(ip), addr, BURST as usize + 2).await;
        assert_eq!(
            statuses[..BURST as usize],
            [200; BURST as usize],
            "{ip}: {statuses:?}"
        );
        assert!(
            statuses[BURST as usize..].iter().all(|&s| s == 429),
            "{ip}: {statuses:?}"
        );
        assert!(
            bodies.iter().all(|b| *b == format!("hello {ip}\n")),
            "{ip}: {bodies:?}"
        );
    }
    server.abort();
}
