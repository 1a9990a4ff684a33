//! [`RateLimitLayer`] and [`RateLimit`]: the middleware.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use pin_project_lite::pin_project;
use ratekeeper::{AcquireError, Grant};
use tokio::time::Sleep;
use tower_layer::Layer;
use tower_service::Service;

use crate::headers::{self, retry_after_secs};
use crate::key::{GlobalKey, KeyExtractor, PeerAddr, RateLimitKey, RequestHead};
use crate::limit::{AsyncKeyedLimit, Reservation};
use crate::metrics::Metrics;
use crate::{ConfigError, CoreKeyed, Global, PeerIp, PerConnectionLayer, Policy, RightmostTrusted};
use ratekeeper::keyed::DEFAULT_MAX_KEYS;
use std::net::IpAddr;

/// What to do with a request whose key cannot be extracted (no such
/// header, a malformed `X-Forwarded-For`, a `Forwarded` field that RFC
/// 7239's grammar rejects). Each such request is counted in
/// [`Metrics::key_errors`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnMissingKey<K> {
    /// Answer with this client-error status (400 or 429, typically).
    Refuse(StatusCode),
    /// Limit it under this one key, shared by every such request.
    Shared(K),
}

pub(crate) struct Shared<X: KeyExtractor, Lim> {
    extractor: X,
    pub(crate) limit: Lim,
    on_missing: OnMissingKey<X::Key>,
    max_wait: Duration,
    admitted_headers: bool,
    /// Whether admitted requests carry their key ([`RateLimitKey`]).
    key_extension: bool,
    /// The `RateLimit-Policy` value, made once.
    policy_value: HeaderValue,
    pub(crate) metrics: Metrics,
}

/// Builds a [`RateLimitLayer`]: the limit, then how requests are keyed,
/// what a request without a key gets, whether to wait, which headers.
pub struct Builder<X: KeyExtractor, Lim> {
    extractor: X,
    limit: Lim,
    on_missing: OnMissingKey<X::Key>,
    max_wait: Duration,
    admitted_headers: bool,
    key_extension: bool,
}

impl<X: KeyExtractor, Lim> std::fmt::Debug for Builder<X, Lim> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("max_wait", &self.max_wait)
            .field("admitted_headers", &self.admitted_headers)
            .finish_non_exhaustive()
    }
}

impl<Lim> Builder<GlobalKey, Lim> {
    /// Keys requests by `extractor` (the default, [`GlobalKey`], is one
    /// key for all). A request whose key cannot be extracted gets 429
    /// unless [`on_missing_key`](Builder::on_missing_key) says otherwise.
    pub fn key<X: KeyExtractor>(self, extractor: X) -> Builder<X, Lim> {
        Builder {
            extractor,
            limit: self.limit,
            on_missing: OnMissingKey::Refuse(StatusCode::TOO_MANY_REQUESTS),
            max_wait: self.max_wait,
            admitted_headers: self.admitted_headers,
            key_extension: self.key_extension,
        }
    }
}

impl<X: KeyExtractor, Lim: AsyncKeyedLimit<X::Key>> Builder<X, Lim> {
    /// What a request whose key cannot be extracted gets.
    pub fn on_missing_key(mut self, policy: OnMissingKey<X::Key>) -> Self {
        self.on_missing = policy;
        self
    }

    /// Lets a request wait up to `deadline` for the limit instead of being
    /// refused at once (zero, the default, refuses). A waiting request
    /// holds a clone of the inner service and sleeps on tokio's timer; if
    /// it is dropped while waiting, its reservation is given back as far as
    /// the limiter can ([`KeyedLimit::cancel`](crate::KeyedLimit::cancel)).
    pub fn wait_up_to(mut self, deadline: Duration) -> Self {
        self.max_wait = deadline;
        self
    }

    /// Also writes `RateLimit` and `RateLimit-Policy` on admitted
    /// responses (refusals always carry them).
    pub fn headers_on_admitted(mut self, yes: bool) -> Self {
        self.admitted_headers = yes;
        self
    }

    /// Puts each request's key in its extensions, as a [`RateLimitKey`],
    /// for the service to read (axum: `Extension<RateLimitKey<IpAddr>>`):
    /// the client the limit counted, which behind a proxy is not the
    /// connection's peer. Off by default (it costs an extension per
    /// request).
    pub fn key_in_extensions(mut self, yes: bool) -> Self {
        self.key_extension = yes;
        self
    }

    /// The layer, to go around a service (inside a router, around a
    /// route).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Status`] for an [`OnMissingKey::Refuse`] status that
    /// is not 4xx; [`ConfigError::PeerNotSupplied`] for a key that needs
    /// the connection's peer ([`KeyExtractor::needs_connection_peer`]),
    /// which nothing gives a layer inside the service: that one is built
    /// with [`build_per_connection`](Builder::build_per_connection).
    ///
    /// ```
    /// use ratekeeper_tower::{ConfigError, KeyedMap, PeerIp, Policy, RateLimitLayer};
    ///
    /// let map = || KeyedMap::from_config(&"pacer:1".parse().unwrap(), Policy::new("p", 1, 1).unwrap(), 10);
    /// let inside = RateLimitLayer::builder(map()?).key(PeerIp::connection()).build();
    /// assert_eq!(inside.unwrap_err(), ConfigError::PeerNotSupplied);
    /// let served = RateLimitLayer::builder(map()?).key(PeerIp::connection()).build_per_connection();
    /// assert!(served.is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<RateLimitLayer<X, Lim>, ConfigError> {
        if self.extractor.needs_connection_peer() {
            return Err(ConfigError::PeerNotSupplied);
        }
        Ok(RateLimitLayer {
            shared: self.shared()?,
        })
    }

    /// The layer, to be served per connection: its
    /// [`make_service`](PerConnectionLayer::make_service) is the server's
    /// make-service, and puts each connection's peer address in the
    /// requests ([`PeerAddr`](crate::key::PeerAddr)) before the limit reads
    /// it. Needed for a key that reads the connection's peer
    /// ([`PeerIp::connection`](crate::PeerIp::connection)); open to any.
    ///
    /// # Errors
    ///
    /// As [`build`](Builder::build), but an extractor that needs the peer
    /// is accepted.
    pub fn build_per_connection(self) -> Result<PerConnectionLayer<X, Lim>, ConfigError> {
        Ok(PerConnectionLayer {
            shared: self.shared()?,
        })
    }

    fn shared(self) -> Result<Arc<Shared<X, Lim>>, ConfigError> {
        if let OnMissingKey::Refuse(s) = &self.on_missing {
            if !s.is_client_error() {
                return Err(ConfigError::Status(s.as_u16()));
            }
        }
        let policy = self.limit.announced_policy();
        let policy_value = HeaderValue::try_from(policy.to_string())
            .map_err(|_| ConfigError::PolicyName(policy.name().to_owned()))?;
        Ok(Arc::new(Shared {
            extractor: self.extractor,
            limit: self.limit,
            on_missing: self.on_missing,
            max_wait: self.max_wait,
            admitted_headers: self.admitted_headers,
            key_extension: self.key_extension,
            policy_value,
            metrics: Metrics::default(),
        }))
    }
}

/// A [`Layer`] that limits the request rate of the services it wraps, all
/// of them against one shared limit.
///
/// Every decision is made in `call()` on state shared through an `Arc`:
/// clones of the layer and of its services (axum clones the service per
/// request) share one limit, and no `Buffer` is needed. The service stays
/// as ready as the service it wraps: the limit never acts through
/// `poll_ready`.
///
/// A refused request is answered at once with 429, `Retry-After` (whole
/// seconds, rounded up, at least 1), the draft-11 `RateLimit` and
/// `RateLimit-Policy` fields, and an RFC 9457 problem details body:
///
/// ```text
/// HTTP/1.1 429 Too Many Requests
/// ratelimit-policy: "per-ip";q=10;w=1;rk-burst=5
/// ratelimit: "per-ip";r=0;t=1
/// retry-after: 1
/// content-type: application/problem+json
///
/// {"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Too many
/// requests under the policy \"per-ip\": retry in 1 s.","retry_after":1}
/// ```
///
/// The response body type must be buildable from a `String` (axum's
/// `Body`, `Full<Bytes>`, `String`); the layer's own answers to a missing
/// key, an unavailable or a misconfigured limit have empty bodies.
///
/// Stacked layers merge their policies into one field of each
/// (`"global";…, "per-ip";…`).
///
/// # Examples
///
/// ```
/// use ratekeeper::{Pacer, Rate};
/// use ratekeeper_tower::{Policy, RateLimitLayer};
/// use tower::{Service, ServiceBuilder, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pacer = Pacer::builder(Rate::new(1.0)?).strictness(1.0).build()?;
/// let layer = RateLimitLayer::global(pacer, Policy::from_rate("all", 1.0)?)?;
/// let mut svc = ServiceBuilder::new().layer(layer).service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("hello")))
/// });
/// let first = svc.ready().await?.call(http::Request::new(())).await?;
/// assert_eq!(first.status(), 200);
/// let second = svc.ready().await?.call(http::Request::new(())).await?;
/// assert_eq!(second.status(), 429);
/// assert_eq!(second.headers()["retry-after"], "1");
/// assert_eq!(second.headers()["ratelimit"], r#""all";r=0;t=1"#);
/// # Ok(())
/// # }
/// ```
pub struct RateLimitLayer<X: KeyExtractor, Lim> {
    shared: Arc<Shared<X, Lim>>,
}

impl<X: KeyExtractor, Lim> Clone for RateLimitLayer<X, Lim> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<X: KeyExtractor, Lim> std::fmt::Debug for RateLimitLayer<X, Lim> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("metrics", &self.shared.metrics)
            .finish_non_exhaustive()
    }
}

impl<Lim> RateLimitLayer<GlobalKey, Lim> {
    /// Starts a layer over `limit`; see [`Builder`].
    pub fn builder(limit: Lim) -> Builder<GlobalKey, Lim> {
        Builder {
            extractor: GlobalKey,
            limit,
            on_missing: OnMissingKey::Shared(()),
            max_wait: Duration::ZERO,
            admitted_headers: false,
            key_extension: false,
        }
    }
}

impl RateLimitLayer<PeerIp, CoreKeyed<IpAddr>> {
    /// The common case in one expression: each client IP address (the
    /// connection's peer; IPv6 by /64) may send up to `burst` requests at
    /// once, refilled at `rate` a second ([`CoreKeyed::token_bucket`], at
    /// most [`DEFAULT_MAX_KEYS`] clients tracked), announced as the policy
    /// `"per-ip"`; refusals get 429, admitted responses carry the draft-11
    /// fields too, and each request its key ([`RateLimitKey`]).
    ///
    /// Keyed by the connection's peer, it is served per connection: its
    /// [`make_service`](PerConnectionLayer::make_service) is what
    /// `axum::serve` takes.
    ///
    /// ```
    /// # #[cfg(feature = "axum")]
    /// # #[allow(dead_code)]
    /// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    /// use axum::{routing::get, Router};
    /// use ratekeeper_tower::RateLimitLayer;
    ///
    /// let app = Router::new().route("/", get(|| async { "hello" }));
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// axum::serve(listener, RateLimitLayer::per_ip(2.0, 5)?.make_service(app)).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// The same as
    ///
    /// ```
    /// use ratekeeper_tower::{CoreKeyed, PeerIp, RateLimitLayer};
    ///
    /// let limit = RateLimitLayer::builder(CoreKeyed::token_bucket("per-ip", 2.0, 5, 100_000)?)
    ///     .key(PeerIp::connection())
    ///     .headers_on_admitted(true)
    ///     .key_in_extensions(true)
    ///     .build_per_connection()?;
    /// # let _ = limit;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`CoreKeyed::token_bucket`].
    ///
    /// [`DEFAULT_MAX_KEYS`]: ratekeeper::keyed::DEFAULT_MAX_KEYS
    pub fn per_ip(
        rate: f64,
        burst: u32,
    ) -> Result<PerConnectionLayer<PeerIp, CoreKeyed<IpAddr>>, ConfigError> {
        let limit = CoreKeyed::token_bucket("per-ip", rate, burst, DEFAULT_MAX_KEYS)?;
        RateLimitLayer::builder(limit)
            .key(PeerIp::connection())
            .headers_on_admitted(true)
            .key_in_extensions(true)
            .build_per_connection()
    }
}

impl RateLimitLayer<RightmostTrusted, CoreKeyed<IpAddr>> {
    /// [`per_ip`](RateLimitLayer::per_ip) behind reverse proxies: the
    /// client is the connection's peer, or for a connection from one of
    /// the `proxies` (networks, `ADDR/PREFIX` or `ADDR`), the rightmost
    /// `X-Forwarded-For` hop that is not one of them
    /// ([`RightmostTrusted`]: a spoofed left-most entry changes nothing).
    /// A request from a proxy without a usable header gets 400.
    ///
    /// ```
    /// use ratekeeper_tower::RateLimitLayer;
    ///
    /// let limit = RateLimitLayer::per_ip_behind(["10.0.0.0/8"], 2.0, 5)?;
    /// // axum::serve(listener, limit.make_service(router))
    /// # let _ = limit;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::Network`] for a proxy that is not a network; as
    /// [`CoreKeyed::token_bucket`].
    pub fn per_ip_behind<I, N>(
        proxies: I,
        rate: f64,
        burst: u32,
    ) -> Result<PerConnectionLayer<RightmostTrusted, CoreKeyed<IpAddr>>, ConfigError>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let key = RightmostTrusted::x_forwarded_for(proxies)?.with_connection_peer();
        let limit = CoreKeyed::token_bucket("per-ip", rate, burst, DEFAULT_MAX_KEYS)?;
        RateLimitLayer::builder(limit)
            .key(key)
            .on_missing_key(OnMissingKey::Refuse(StatusCode::BAD_REQUEST))
            .headers_on_admitted(true)
            .key_in_extensions(true)
            .build_per_connection()
    }
}

impl<L: ratekeeper::RateLimiter + Send + Sync> RateLimitLayer<GlobalKey, Global<L>> {
    /// One limiter for all requests, described by `policy`; refuses at once.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`].
    pub fn global(limiter: L, policy: Policy) -> Result<Self, ConfigError> {
        RateLimitLayer::builder(Global::new(limiter, policy)).build()
    }
}

impl<X: KeyExtractor, Lim> RateLimitLayer<X, Lim> {
    /// The counters of this layer and all its services.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// The limit.
    pub fn limit(&self) -> &Lim {
        &self.shared.limit
    }
}

impl<S, X: KeyExtractor, Lim> Layer<S> for RateLimitLayer<X, Lim> {
    type Service = RateLimit<S, X, Lim>;
    fn layer(&self, inner: S) -> RateLimit<S, X, Lim> {
        RateLimit::new(inner, Arc::clone(&self.shared), None)
    }
}

/// The service [`RateLimitLayer`] wraps around `S`; or, made by
/// [`MakeRateLimit`](crate::MakeRateLimit), the service of one connection.
pub struct RateLimit<S, X: KeyExtractor, Lim> {
    inner: S,
    shared: Arc<Shared<X, Lim>>,
    /// The connection's peer, put in every request as a [`PeerAddr`].
    peer: Option<PeerAddr>,
}

impl<S, X: KeyExtractor, Lim> RateLimit<S, X, Lim> {
    pub(crate) fn new(inner: S, shared: Arc<Shared<X, Lim>>, peer: Option<PeerAddr>) -> Self {
        RateLimit {
            inner,
            shared,
            peer,
        }
    }
}

impl<S: Clone, X: KeyExtractor, Lim> Clone for RateLimit<S, X, Lim> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
            peer: self.peer,
        }
    }
}

impl<S: std::fmt::Debug, X: KeyExtractor, Lim> std::fmt::Debug for RateLimit<S, X, Lim> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// A response the layer writes itself, without the inner service.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn status(status: StatusCode) -> Answer {
        Answer {
            status,
            headers: HeaderMap::new(),
            body: String::new(),
        }
    }

    fn into_response<B: From<String>>(self) -> Response<B> {
        let mut r = Response::new(B::from(self.body));
        *r.status_mut() = self.status;
        *r.headers_mut() = self.headers;
        r
    }
}

/// What the limit's answer makes of a request.
enum Verdict {
    /// To the inner service now, with the fields to write on its response.
    Admit(Option<Box<Admitted>>),
    /// To the inner service once `wait` has passed.
    Wait {
        wait: Duration,
        cancel: CancelOnDrop,
        admitted: Option<Box<Admitted>>,
    },
    /// Answered by the layer.
    Answer(Answer),
}

/// The fields to write on the response to a request admitted at once, if
/// the layer writes them.
#[inline]
fn admitted<X, Lim>(shared: &Shared<X, Lim>, key: &X::Key, g: &Grant) -> Option<Box<Admitted>>
where
    X: KeyExtractor,
    Lim: AsyncKeyedLimit<X::Key>,
{
    shared.admitted_headers.then(|| {
        let policy = shared.limit.announced_policy();
        let r = shared.limit.remaining_after(key, g);
        Box::new(Admitted {
            item: headers::ratelimit_item(policy, r, reset_secs(policy, g)),
            policy: shared.policy_value.clone(),
        })
    })
}

/// The verdict on the limit's answer for `key`.
fn verdict<X, Lim>(
    shared: &Arc<Shared<X, Lim>>,
    key: &X::Key,
    result: Result<Grant, AcquireError>,
) -> Verdict
where
    X: KeyExtractor,
    Lim: AsyncKeyedLimit<X::Key> + 'static,
{
    let policy = shared.limit.announced_policy();
    match result {
        Ok(g) if g.ready_nanos() <= g.started_nanos() => Verdict::Admit(admitted(shared, key, &g)),
        Ok(g) => {
            Metrics::bump(&shared.metrics.waited);
            let admitted = shared.admitted_headers.then(|| {
                Box::new(Admitted {
                    item: headers::ratelimit_item(policy, 0, reset_secs(policy, &g)),
                    policy: shared.policy_value.clone(),
                })
            });
            let limit = Arc::clone(shared);
            let k = key.clone();
            let cancel = CancelOnDrop(Some(Box::new(move || {
                limit.limit.cancel_grant(&k, &g);
            })));
            Verdict::Wait {
                wait: Duration::from_nanos(g.ready_nanos() - g.started_nanos()),
                cancel,
                admitted,
            }
        }
        Err(AcquireError::WouldWait { wait, .. }) => {
            Metrics::bump(&shared.metrics.refused);
            let secs = retry_after_secs(wait);
            let mut answer = Answer::status(StatusCode::TOO_MANY_REQUESTS);
            headers::write(
                &mut answer.headers,
                policy,
                &shared.policy_value,
                0,
                secs,
                Some(secs),
            );
            answer.headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(headers::PROBLEM_JSON),
            );
            answer.body = headers::problem_json(policy, secs);
            Verdict::Answer(answer)
        }
        Err(AcquireError::Unavailable) => {
            Metrics::bump(&shared.metrics.unavailable);
            let mut answer = Answer::status(StatusCode::SERVICE_UNAVAILABLE);
            answer
                .headers
                .insert(http::header::RETRY_AFTER, HeaderValue::from(1u64));
            Verdict::Answer(answer)
        }
        Err(_) => {
            // A permit that can never be granted, or a shared limit whose
            // state does not match its configuration: misconfigured.
            Metrics::bump(&shared.metrics.config_errors);
            Verdict::Answer(Answer::status(StatusCode::INTERNAL_SERVER_ERROR))
        }
    }
}

impl<S, X, Lim, ReqB, ResB> Service<Request<ReqB>> for RateLimit<S, X, Lim>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone,
    X: KeyExtractor,
    Lim: AsyncKeyedLimit<X::Key> + 'static,
    ResB: From<String>,
{
    type Response = Response<ResB>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqB>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ReqB>) -> Self::Future {
        if let Some(peer) = self.peer {
            req.extensions_mut().insert(peer);
        }
        let shared = &*self.shared;
        let extracted = shared.extractor.extract(&RequestHead::of(&req));
        let key = match (&extracted, &shared.on_missing) {
            (Ok(k), _) => k,
            (Err(e), _) if e.is_configuration() => {
                Metrics::bump(&shared.metrics.config_errors);
                let answer = Answer::status(StatusCode::INTERNAL_SERVER_ERROR);
                return ResponseFuture::ready(answer.into_response());
            }
            (Err(_), OnMissingKey::Refuse(status)) => {
                Metrics::bump(&shared.metrics.key_errors);
                return ResponseFuture::ready(Answer::status(*status).into_response());
            }
            (Err(_), OnMissingKey::Shared(k)) => {
                Metrics::bump(&shared.metrics.key_errors);
                k
            }
        };
        if shared.key_extension {
            req.extensions_mut().insert(RateLimitKey(key.clone()));
        }
        match shared.limit.reserve_async(key, 1, Some(shared.max_wait)) {
            // The hot path, decided here: no verdict to build and match.
            Reservation::Now(Ok(g)) if g.ready_nanos() <= g.started_nanos() => {
                ResponseFuture::inner(self.inner.call(req), admitted(shared, key, &g))
            }
            Reservation::Now(result) => match verdict(&self.shared, key, result) {
                Verdict::Admit(admitted) => ResponseFuture::inner(self.inner.call(req), admitted),
                Verdict::Answer(answer) => ResponseFuture::ready(answer.into_response()),
                Verdict::Wait {
                    wait,
                    cancel,
                    admitted,
                } => {
                    // Call the instance that was driven to readiness, after the wait.
                    let clone = self.inner.clone();
                    let svc = std::mem::replace(&mut self.inner, clone);
                    ResponseFuture::waiting(Waiting::new(wait, svc, req, cancel, admitted))
                }
            },
            Reservation::Later(pending) => {
                let shared = Arc::clone(&self.shared);
                let key = key.clone();
                let deciding: Deciding = Box::pin(async move {
                    let result = pending.await;
                    verdict(&shared, &key, result)
                });
                // The instance driven to readiness goes with the request.
                let clone = self.inner.clone();
                let svc = std::mem::replace(&mut self.inner, clone);
                ResponseFuture::deciding(deciding, svc, req)
            }
        }
    }
}

/// A decision awaited: a limit's [`Reservation::Later`], then its verdict.
type Deciding = Pin<Box<dyn Future<Output = Verdict> + Send>>;

/// `t` on an admitted response: whole seconds (at least 1) until one more
/// permit accrues after this grant's ready time.
fn reset_secs(policy: &Policy, g: &Grant) -> u64 {
    let ahead = g.ready_nanos().saturating_sub(g.started_nanos());
    retry_after_secs(Duration::from_nanos(
        ahead.saturating_add(policy.interval_nanos()),
    ))
}

struct Admitted {
    item: String,
    policy: HeaderValue,
}

impl Admitted {
    fn write<B>(self, resp: &mut Response<B>) {
        let h = resp.headers_mut();
        if h.contains_key(&headers::RATELIMIT_POLICY) {
            if let Ok(ours) = self.policy.to_str() {
                headers::append_list(h, &headers::RATELIMIT_POLICY, ours);
            }
        } else {
            h.insert(headers::RATELIMIT_POLICY.clone(), self.policy);
        }
        headers::append_list(h, &headers::RATELIMIT, &self.item);
    }
}

/// Gives a waiting request's reservation back if it is dropped before its
/// wait ends.
struct CancelOnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel();
        }
    }
}

pin_project! {
    /// The response future of [`RateLimit`].
    pub struct ResponseFuture<S: Service<Request<B>>, B> {
        #[pin]
        state: State<S, B>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<S: Service<Request<B>>, B> {
        Ready { response: Option<S::Response> },
        Inner { #[pin] fut: S::Future, admitted: Option<Box<Admitted>> },
        // Boxed: only waiting requests pay for the request, the service and
        // the timer they keep, not every response future (which the
        // caller may move, or box itself).
        Waiting { waiting: Box<Waiting<S, B>> },
        // Boxed likewise: only a limit that answers later pays for it.
        Deciding { deciding: Box<Pending<S, B>> },
    }
}

/// A request waiting for its grant, then sent to the service.
struct Waiting<S, B> {
    sleep: Pin<Box<Sleep>>,
    svc: Option<S>,
    req: Option<Request<B>>,
    cancel: CancelOnDrop,
    admitted: Option<Box<Admitted>>,
}

impl<S, B> Waiting<S, B> {
    fn new(
        wait: Duration,
        svc: S,
        req: Request<B>,
        cancel: CancelOnDrop,
        admitted: Option<Box<Admitted>>,
    ) -> Box<Self> {
        Box::new(Waiting {
            sleep: Box::pin(tokio::time::sleep(wait)),
            svc: Some(svc),
            req: Some(req),
            cancel,
            admitted,
        })
    }
}

/// A request waiting for the limit's decision.
struct Pending<S, B> {
    deciding: Deciding,
    svc: Option<S>,
    req: Option<Request<B>>,
}

impl<S: Service<Request<B>>, B> std::fmt::Debug for ResponseFuture<S, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseFuture")
    }
}

impl<S: Service<Request<B>>, B> ResponseFuture<S, B> {
    fn ready(response: S::Response) -> Self {
        ResponseFuture {
            state: State::Ready {
                response: Some(response),
            },
        }
    }
    fn inner(fut: S::Future, admitted: Option<Box<Admitted>>) -> Self {
        ResponseFuture {
            state: State::Inner { fut, admitted },
        }
    }
    fn waiting(waiting: Box<Waiting<S, B>>) -> Self {
        ResponseFuture {
            state: State::Waiting { waiting },
        }
    }
    fn deciding(deciding: Deciding, svc: S, req: Request<B>) -> Self {
        ResponseFuture {
            state: State::Deciding {
                deciding: Box::new(Pending {
                    deciding,
                    svc: Some(svc),
                    req: Some(req),
                }),
            },
        }
    }
}

impl<S, B, ResB> Future for ResponseFuture<S, B>
where
    S: Service<Request<B>, Response = Response<ResB>>,
    ResB: From<String>,
{
    type Output = Result<Response<ResB>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                StateProj::Ready { response } => {
                    return Poll::Ready(Ok(response.take().expect("polled after completion")));
                }
                StateProj::Inner { fut, admitted } => {
                    let mut resp = std::task::ready!(fut.poll(cx))?;
                    if let Some(a) = admitted.take() {
                        a.write(&mut resp);
                    }
                    return Poll::Ready(Ok(resp));
                }
                StateProj::Waiting { waiting } => {
                    std::task::ready!(waiting.sleep.as_mut().poll(cx));
                    waiting.cancel.0 = None; // waited to the end: the grant is used
                    let mut svc = waiting.svc.take().expect("polled after completion");
                    let req = waiting.req.take().expect("polled after completion");
                    let admitted = waiting.admitted.take();
                    let fut = svc.call(req);
                    state.set(State::Inner { fut, admitted });
                }
                StateProj::Deciding { deciding } => {
                    let verdict = std::task::ready!(deciding.deciding.as_mut().poll(cx));
                    let mut svc = deciding.svc.take().expect("polled after completion");
                    let req = deciding.req.take().expect("polled after completion");
                    match verdict {
                        Verdict::Admit(admitted) => {
                            let fut = svc.call(req);
                            state.set(State::Inner { fut, admitted });
                        }
                        Verdict::Wait {
                            wait,
                            cancel,
                            admitted,
                        } => {
                            let waiting = Waiting::new(wait, svc, req, cancel, admitted);
                            state.set(State::Waiting { waiting });
                        }
                        Verdict::Answer(answer) => {
                            let response = Some(answer.into_response());
                            state.set(State::Ready { response });
                        }
                    }
                }
            }
        }
    }
}
