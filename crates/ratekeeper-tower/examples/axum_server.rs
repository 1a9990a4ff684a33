//! An axum server limited per client: 5 requests at once, then 2 per
//! second, for each client address. The client is the connection's peer,
//! or, for connections from the loopback proxy, the rightmost hop of
//! `X-Forwarded-For` that is not the proxy (a spoofed left-most entry does
//! not change the key). Refusals get 429, `Retry-After`, the draft-11
//! `RateLimit` / `RateLimit-Policy` fields and an RFC 9457
//! `application/problem+json` body; admitted responses carry the fields
//! too, and are greeted as the client the limit counted.
//!
//! ```text
//! cargo run -p ratekeeper-tower --features axum --example axum_server -- 127.0.0.1:3000
//! curl -i -H 'X-Forwarded-For: 6.6.6.6, 203.0.113.7' http://127.0.0.1:3000/
//! ```
//!
//! The whole limit is one expression, `RateLimitLayer::per_ip_behind`
//! (`per_ip` without a proxy): a token bucket per client, its announced
//! policy derived from the same rate and burst. It is served per
//! connection: `make_service` is the make-service `axum::serve` takes,
//! and reads each connection's peer address from the accepted connection
//! itself, so no request can arrive without it (no
//! `into_make_service_with_connect_info` to forget).
//!
//! `tests/e2e.rs` starts this same server on a loopback port. Needs the
//! `axum` feature (as in the command above).

use std::net::IpAddr;

use axum::routing::get;
use axum::{Extension, Router};
use ratekeeper_tower::{CoreKeyed, MakeRateLimit, RateLimitKey, RateLimitLayer, RightmostTrusted};

/// Each client's burst.
pub const BURST: u32 = 5;
/// Each client's rate, per second.
pub const RATE: u32 = 2;

/// What `axum::serve` is given: the router, limited per client.
pub type App = MakeRateLimit<Router, RightmostTrusted, CoreKeyed<IpAddr>>;

/// Says hello to the client the limit counted (behind the proxy, the
/// client it named).
async fn hello(Extension(RateLimitKey(client)): Extension<RateLimitKey<IpAddr>>) -> String {
    format!("hello {client}\n")
}

/// The application: one route, limited per client.
pub fn app() -> Result<App, ratekeeper_tower::ConfigError> {
    let limit = RateLimitLayer::per_ip_behind(["127.0.0.1", "::1"], f64::from(RATE), BURST)?;
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
