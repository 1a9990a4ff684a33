//! One per-client limit shared by every replica of a server: 5 requests at
//! once, then 2 per second, for each client address, kept on Redis. Run
//! it twice, on two ports, against one Redis: a client's requests to
//! either replica draw on the same limit.
//!
//! ```text
//! export REDIS_URL=redis://127.0.0.1:6379/
//! cargo run -p ratekeeper-tower --features axum,redis --example redis_server -- 127.0.0.1:3000 &
//! cargo run -p ratekeeper-tower --features axum,redis --example redis_server -- 127.0.0.1:3001 &
//! for p in 3000 3001 3000 3001 3000 3001; do curl -s -o /dev/null -w '%{http_code} ' localhost:$p/; done
//! # 200 200 200 200 200 429
//! ```
//!
//! While Redis fails, each replica decides alone at the share of the limit
//! it was using (the default failure policy, `LocalLearned`); a key that
//! holds another limit answers 500, never admits. Refusals get 429,
//! `Retry-After`, the draft-11 fields and an RFC 9457 problem body.
//!
//! `tests/redis.rs` serves this same application from two replicas.

use std::net::IpAddr;

use axum::routing::get;
use axum::{Extension, Router};
use ratekeeper_redis::{Backend, RedisLimiter, SharedLimit};
use ratekeeper_tower::{MakeRateLimit, PeerIp, RateLimitKey, RateLimitLayer, RedisKeyed};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What `axum::serve` is given: the router, limited per client on Redis.
pub type App = MakeRateLimit<Router, PeerIp, RedisKeyed>;

/// Says hello to the client the limit counted.
async fn hello(Extension(RateLimitKey(client)): Extension<RateLimitKey<IpAddr>>) -> String {
    format!("hello {client}\n")
}

/// The application, limited per client by `limit` (a refill configuration)
/// under the key prefix `prefix` on `backend`.
pub fn app(backend: &Backend, prefix: &str, limit: &str) -> Result<App, Error> {
    let shared = SharedLimit::from_config(&limit.parse()?)?;
    let limiter = RedisLimiter::builder(backend, prefix, shared).build()?;
    let limit = RateLimitLayer::builder(RedisKeyed::new("per-ip", limiter)?)
        .key(PeerIp::connection())
        .headers_on_admitted(true)
        .key_in_extensions(true)
        .build_per_connection()?;
    Ok(limit.make_service(Router::new().route("/", get(hello))))
}

#[allow(dead_code)] // the Redis test includes this file without main
#[tokio::main]
async fn main() -> Result<(), Error> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".to_owned());
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_owned());
    let backend = Backend::connect(&url).await?;
    let app = app(
        &backend,
        "example:per-ip:",
        "refill:2,500ms,capacity=5,initial=5",
    )?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
