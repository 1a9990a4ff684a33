//! An axum server limited per client: 5 requests at once, then 2 per
//! second, for each client address. The client is the connection's peer,
//! or, for connections from the loopback proxy, the rightmost hop of
//! `X-Forwarded-For` that is not the proxy (a spoofed left-most entry does
//! not change the key). Refusals get 429, `Retry-After` and the draft-11
//! `RateLimit` / `RateLimit-Policy` fields; admitted responses carry them
//! too.
//!
//! ```text
//! cargo run -p ratekeeper-tower --features axum --example axum_server -- 127.0.0.1:3000
//! curl -i -H 'X-Forwarded-For: 6.6.6.6, 203.0.113.7' http://127.0.0.1:3000/
//! ```
//!
//! The limit is served per connection (`build_per_connection`): it is the
//! make-service `axum::serve` takes, and reads each connection's peer
//! address from the accepted connection itself, so no request can arrive
//! without it (no `into_make_service_with_connect_info` to forget). A layer
//! keyed by the connection's peer built to go inside the router is refused
//! before serving (`ConfigError::PeerNotSupplied`).
//!
//! `tests/e2e.rs` starts this same server on a loopback port. Needs the
//! `axum` feature (as in the command above).

use std::net::IpAddr;

use axum::routing::get;
use axum::{Extension, Router};
use ratekeeper::keyed::Keyed;
use ratekeeper_tower::{
    CoreKeyed, MakeRateLimit, OnMissingKey, PeerAddr, Policy, RateLimitLayer, RightmostTrusted,
};

/// Each client's burst.
pub const BURST: u32 = 5;
/// Each client's rate, per second.
pub const RATE: u32 = 2;

/// What `axum::serve` is given: the router, limited per client.
pub type App = MakeRateLimit<Router, RightmostTrusted, CoreKeyed<IpAddr>>;

/// Says hello to the connection's peer (the address the limit saw).
async fn hello(Extension(PeerAddr(peer)): Extension<PeerAddr>) -> String {
    format!("hello {}\n", peer.ip())
}

/// The application: one route, limited per client.
pub fn app() -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
    // A token bucket: BURST permits, refilled at RATE per second.
    let config = format!("refill:{RATE},1s,capacity={BURST},initial={BURST}").parse()?;
    let policy = Policy::from_rate("per-client", f64::from(RATE))?.with_burst(BURST)?;
    // At most 100 000 clients tracked; a recovered one is dropped for free.
    let keyed = Keyed::builder().max_keys(100_000).build(&config)?;
    let limit = RateLimitLayer::builder(CoreKeyed::new(keyed, policy))
        .key(RightmostTrusted::x_forwarded_for(["127.0.0.1", "::1"])?.with_connection_peer())
        .on_missing_key(OnMissingKey::Refuse(http::StatusCode::BAD_REQUEST))
        .headers_on_admitted(true)
        .build_per_connection()?;
    Ok(limit.make_service(Router::new().route("/", get(hello))))
}

/// Serves [`app`] on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let app = app().map_err(std::io::Error::other)?;
    axum::serve(listener, app).await
}

#[allow(dead_code)] // the end-to-end test includes this file without main
#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    serve(listener).await
}
