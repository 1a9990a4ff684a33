//! [`PerConnectionLayer`] and [`MakeRateLimit`]: the limit served as the
//! server's make-service, so that a key read from the connection's peer
//! cannot find it missing.
//!
//! A layer inside the application reads the peer address from the request
//! extensions, where only the server can have put it; whether it did is
//! known at the first request, too late. Served per connection instead,
//! the limit is handed the address by the server's accept loop itself (the
//! target of the make-service), and writes it into each request
//! ([`PeerAddr`]) before reading it back: it is there by construction. A
//! layer keyed by the connection's peer is built only this way
//! ([`Builder::build`](crate::Builder::build) refuses it with a
//! [`ConfigError::PeerNotSupplied`](crate::ConfigError::PeerNotSupplied)),
//! and the make-service only serves connections whose address is a
//! `SocketAddr` (checked by the compiler).

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use crate::key::{KeyExtractor, PeerAddr};
use crate::service::Shared;
use crate::{Metrics, RateLimit};

/// A rate limit to be served per connection, around the whole
/// application: made by
/// [`Builder::build_per_connection`](crate::Builder::build_per_connection).
///
/// Its [`make_service`](PerConnectionLayer::make_service) (or, as a
/// [`Layer`], `layer`) turns the application into the server's
/// make-service, a [`MakeRateLimit`]. It is not a layer of request
/// services: `Router::layer` does not accept it (a compile error), since
/// inside the router nothing would supply the peer:
///
/// ```compile_fail,E0277
/// use ratekeeper_tower::{KeyedMap, PeerIp, Policy, RateLimitLayer};
///
/// let map = KeyedMap::from_config(&"pacer:1".parse()?, Policy::new("p", 1, 1)?, 10)?;
/// let limit = RateLimitLayer::builder(map).key(PeerIp::connection()).build_per_connection()?;
/// let app: axum::Router = axum::Router::new()
///     .route("/", axum::routing::get(|| async { "hello" }))
///     .layer(limit); // MakeRateLimit<Route, ..> is not a request service
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// With axum (feature `axum`), the make-service is what `axum::serve`
/// takes, in place of `into_make_service_with_connect_info`:
///
/// ```
/// # #[cfg(feature = "axum")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use axum::{routing::get, Router};
/// use ratekeeper_tower::{KeyedMap, PeerIp, Policy, RateLimitLayer};
///
/// let policy = Policy::from_rate("per-ip", 10.0)?.with_burst(5)?;
/// let map = KeyedMap::from_config(&"bursty:10,0.5".parse()?, policy, 100_000)?;
/// let limit = RateLimitLayer::builder(map)
///     .key(PeerIp::connection())
///     .build_per_connection()?;
/// let app = Router::new().route("/", get(|| async { "hello" }));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let server = axum::serve(listener, limit.make_service(app));
/// // server.await?;
/// # drop(server);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "axum"))]
/// # fn main() {}
/// ```
pub struct PerConnectionLayer<X: KeyExtractor, Lim> {
    pub(crate) shared: Arc<Shared<X, Lim>>,
}

impl<X: KeyExtractor, Lim> Clone for PerConnectionLayer<X, Lim> {
    fn clone(&self) -> Self {
        PerConnectionLayer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<X: KeyExtractor, Lim> std::fmt::Debug for PerConnectionLayer<X, Lim> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerConnectionLayer")
            .field("metrics", &self.shared.metrics)
            .finish_non_exhaustive()
    }
}

impl<X: KeyExtractor, Lim> PerConnectionLayer<X, Lim> {
    /// The make-service that serves `app` with this limit, one
    /// [`RateLimit`] per connection, all sharing the limit.
    pub fn make_service<S>(&self, app: S) -> MakeRateLimit<S, X, Lim> {
        MakeRateLimit {
            app,
            shared: Arc::clone(&self.shared),
        }
    }

    /// The counters of this layer and all its services.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// The limit.
    pub fn limit(&self) -> &Lim {
        &self.shared.limit
    }
}

impl<S, X: KeyExtractor, Lim> Layer<S> for PerConnectionLayer<X, Lim> {
    type Service = MakeRateLimit<S, X, Lim>;
    fn layer(&self, app: S) -> MakeRateLimit<S, X, Lim> {
        self.make_service(app)
    }
}

/// The make-service of a [`PerConnectionLayer`]: given a connection's peer
/// address, the [`RateLimit`] service for that connection, which puts the
/// address in each request as a [`PeerAddr`] before the limit reads it.
///
/// * **axum** (feature `axum`): a `Service<IncomingStream<'_, L>>` for any
///   listener `L` whose addresses are `SocketAddr`s (`TcpListener`, and
///   `tap_io` over it), so `axum::serve(listener, make)` serves it.
/// * **hyper** and others: a `Service<SocketAddr>`, or
///   [`for_peer`](MakeRateLimit::for_peer), called with the address from
///   `accept()`.
///
/// # Examples
///
/// ```
/// use ratekeeper_tower::key::PeerAddr;
/// use ratekeeper_tower::{KeyedMap, PeerIp, Policy, RateLimitLayer};
/// use tower::{Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let map = KeyedMap::from_config(&"pacer:1,1".parse()?, Policy::from_rate("per-ip", 1.0)?, 100)?;
/// let limit = RateLimitLayer::builder(map).key(PeerIp::connection()).build_per_connection()?;
/// let make = limit.make_service(tower::service_fn(|req: http::Request<()>| async move {
///     // The peer is in the extensions for the application too.
///     let peer = req.extensions().get::<PeerAddr>().map(|p| p.0.to_string());
///     Ok::<_, std::convert::Infallible>(http::Response::new(peer.unwrap_or_default()))
/// }));
///
/// // As an accept loop would: one service per connection.
/// let mut a = make.for_peer("192.0.2.1:5000".parse()?);
/// let first = a.ready().await?.call(http::Request::new(())).await?;
/// assert_eq!((first.status().as_u16(), first.body().as_str()), (200, "192.0.2.1:5000"));
/// assert_eq!(a.ready().await?.call(http::Request::new(())).await?.status(), 429);
/// // Another connection from the same address shares its key; another address has its own.
/// let mut a2 = make.for_peer("192.0.2.1:5001".parse()?);
/// assert_eq!(a2.ready().await?.call(http::Request::new(())).await?.status(), 429);
/// let mut b = make.for_peer("192.0.2.2:5000".parse()?);
/// assert_eq!(b.ready().await?.call(http::Request::new(())).await?.status(), 200);
/// assert_eq!(limit.metrics().refused(), 2);
/// # Ok(())
/// # }
/// ```
pub struct MakeRateLimit<S, X: KeyExtractor, Lim> {
    app: S,
    shared: Arc<Shared<X, Lim>>,
}

impl<S: Clone, X: KeyExtractor, Lim> Clone for MakeRateLimit<S, X, Lim> {
    fn clone(&self) -> Self {
        MakeRateLimit {
            app: self.app.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: std::fmt::Debug, X: KeyExtractor, Lim> std::fmt::Debug for MakeRateLimit<S, X, Lim> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MakeRateLimit")
            .field("app", &self.app)
            .field("metrics", &self.shared.metrics)
            .finish_non_exhaustive()
    }
}

impl<S, X: KeyExtractor, Lim> MakeRateLimit<S, X, Lim> {
    /// The service of a connection from `peer`.
    pub fn for_peer(&self, peer: SocketAddr) -> RateLimit<S, X, Lim>
    where
        S: Clone,
    {
        RateLimit::new(
            self.app.clone(),
            Arc::clone(&self.shared),
            Some(PeerAddr(peer)),
        )
    }

    /// The counters of the layer and all its services.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }
}

impl<S: Clone, X: KeyExtractor, Lim> Service<SocketAddr> for MakeRateLimit<S, X, Lim> {
    type Response = RateLimit<S, X, Lim>;
    type Error = Infallible;
    type Future = Ready<Result<RateLimit<S, X, Lim>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, peer: SocketAddr) -> Self::Future {
        ready(Ok(self.for_peer(peer)))
    }
}

#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
impl<'a, L, S, X, Lim> Service<axum::serve::IncomingStream<'a, L>> for MakeRateLimit<S, X, Lim>
where
    L: axum::serve::Listener<Addr = SocketAddr>,
    S: Clone,
    X: KeyExtractor,
{
    type Response = RateLimit<S, X, Lim>;
    type Error = Infallible;
    type Future = Ready<Result<RateLimit<S, X, Lim>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, stream: axum::serve::IncomingStream<'a, L>) -> Self::Future {
        ready(Ok(self.for_peer(*stream.remote_addr())))
    }
}
