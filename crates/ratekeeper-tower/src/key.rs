//! Key extractors: what a keyed limit is keyed by.
//!
//! There is no guessing ("smart" extraction): each extractor reads one
//! explicit source. Behind proxies use [`RightmostTrusted`], which walks
//! `X-Forwarded-For` or `Forwarded` from the right and stops at the first
//! hop that is not a trusted proxy: a client can prepend whatever it likes
//! on the left, but not change what the trusted proxies appended.
//! `Forwarded` is parsed by RFC 7239's grammar, quoted strings and all,
//! and a field it rejects is no key ([`RightmostTrusted::forwarded`]).

use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};

use http::header::{HeaderName, HeaderValue, FORWARDED};
use http::{Extensions, HeaderMap, Method, Uri};
use ratekeeper::keyed::IpKeyer;

use crate::{forwarded, ConfigError, IpNet};

/// What an extractor sees of a request: its head, not its body.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    method: &'a Method,
    uri: &'a Uri,
    headers: &'a HeaderMap,
    extensions: &'a Extensions,
}

impl<'a> RequestHead<'a> {
    /// The head of `req`.
    pub fn of<B>(req: &'a http::Request<B>) -> RequestHead<'a> {
        RequestHead {
            method: req.method(),
            uri: req.uri(),
            headers: req.headers(),
            extensions: req.extensions(),
        }
    }
    /// The request method.
    pub fn method(&self) -> &'a Method {
        self.method
    }
    /// The request URI.
    pub fn uri(&self) -> &'a Uri {
        self.uri
    }
    /// The request headers.
    pub fn headers(&self) -> &'a HeaderMap {
        self.headers
    }
    /// The request extensions (where servers put the peer address).
    pub fn extensions(&self) -> &'a Extensions {
        self.extensions
    }
}

/// Why no key could be taken from a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The source is absent from this request (no such header).
    #[error("the request carries no key")]
    Missing,
    /// The source is there but does not parse (a hop that is not an IP
    /// address, a header value that is not visible ASCII, a `Forwarded`
    /// field that RFC 7239's grammar rejects:
    /// see [`RightmostTrusted::forwarded`]). The layer answers it as it
    /// answers [`Missing`](KeyError::Missing).
    #[error("the request's key is malformed")]
    Malformed,
    /// The server does not put the peer address where the extractor reads
    /// it: a deployment mistake, not the client's, which the per-connection
    /// service rules out. See [`PeerIp`].
    #[error(
        "no peer address in the request extensions: the server is not configured to provide it"
    )]
    NoPeerAddress,
}

impl KeyError {
    /// Whether the error is the server's configuration, not the request's.
    pub fn is_configuration(&self) -> bool {
        matches!(self, KeyError::NoPeerAddress)
    }
}

/// Takes a key from a request's head.
pub trait KeyExtractor: Send + Sync + 'static {
    /// The key.
    type Key: Hash + Eq + Clone + Send + Sync + 'static;

    /// The key of the request whose head is `head`.
    ///
    /// # Errors
    ///
    /// A [`KeyError`] when the request carries no usable key.
    fn extract(&self, head: &RequestHead<'_>) -> Result<Self::Key, KeyError>;

    /// Whether the key needs the connection's peer address as a
    /// [`PeerAddr`], which only the per-connection service supplies
    /// ([`Builder::build_per_connection`](crate::Builder::build_per_connection)).
    /// [`Builder::build`](crate::Builder::build) refuses such an extractor
    /// with [`ConfigError::PeerNotSupplied`]. The default is `false`; an
    /// extractor that wraps others answers as they do.
    ///
    /// ```
    /// use ratekeeper_tower::key::{HeaderKey, KeyExtractor, PeerIp};
    ///
    /// assert!(PeerIp::connection().needs_connection_peer());
    /// assert!(!PeerIp::socket_addr().needs_connection_peer());
    /// assert!(!HeaderKey::new("x-api-key")?.needs_connection_peer());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn needs_connection_peer(&self) -> bool {
        false
    }
}

/// One key for every request: a global limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobalKey;

impl KeyExtractor for GlobalKey {
    type Key = ();
    #[inline]
    fn extract(&self, _: &RequestHead<'_>) -> Result<(), KeyError> {
        Ok(())
    }
}

/// Reads the peer address from the request extensions.
pub type PeerSource = fn(&Extensions) -> Option<IpAddr>;

fn socket_addr_extension(ext: &Extensions) -> Option<IpAddr> {
    ext.get::<SocketAddr>().map(SocketAddr::ip)
}

/// The key the limit counted a request under, in the request's
/// extensions when the layer is built with
/// [`key_in_extensions`](crate::Builder::key_in_extensions) (as
/// [`RateLimitLayer::per_ip`](crate::RateLimitLayer::per_ip) is): behind
/// a proxy, the client the proxy named, not the connection's peer.
///
/// ```
/// use std::net::IpAddr;
/// use ratekeeper_tower::RateLimitKey;
///
/// // axum: async fn hello(Extension(RateLimitKey(ip)): Extension<RateLimitKey<IpAddr>>) -> String
/// let mut req = http::Request::new(());
/// req.extensions_mut().insert(RateLimitKey("203.0.113.7".parse::<IpAddr>()?));
/// assert_eq!(req.extensions().get::<RateLimitKey<IpAddr>>().map(|k| k.0.to_string()).as_deref(), Some("203.0.113.7"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimitKey<K>(pub K);

/// The connection's peer address, as the per-connection service
/// ([`MakeRateLimit`](crate::MakeRateLimit)) puts it in every request's
/// extensions before the limit reads it. Handlers may read it too (axum:
/// `Extension<PeerAddr>`).
///
/// ```
/// use ratekeeper_tower::key::{KeyExtractor, PeerAddr, PeerIp, RequestHead};
///
/// let mut req = http::Request::new(());
/// req.extensions_mut().insert(PeerAddr("192.0.2.7:4000".parse()?));
/// assert_eq!(PeerIp::connection().extract(&RequestHead::of(&req))?, "192.0.2.7".parse::<std::net::IpAddr>()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerAddr(pub SocketAddr);

fn peer_addr_extension(ext: &Extensions) -> Option<IpAddr> {
    ext.get::<PeerAddr>().map(|p| p.0.ip())
}

/// Where an extractor finds the peer address.
#[derive(Debug, Clone, Copy)]
enum Peer {
    /// [`PeerAddr`], supplied by the per-connection service.
    Connection,
    /// Wherever the server put it, as the function reads it.
    Extensions(PeerSource),
}

impl Peer {
    fn read(self, ext: &Extensions) -> Result<IpAddr, KeyError> {
        match self {
            Peer::Connection => peer_addr_extension(ext),
            Peer::Extensions(source) => source(ext),
        }
        .ok_or(KeyError::NoPeerAddress)
    }
}

/// The IPv6 prefix length addresses are keyed by unless told otherwise: one
/// key per /64, since a single client commonly holds a whole /64 (the core
/// crate's [`IpKeyer`] default).
pub const DEFAULT_IPV6_PREFIX: u8 = ratekeeper::keyed::DEFAULT_IPV6_PREFIX;

/// The peer's IP address, from the connection (the address the TCP
/// connection came from), IPv6 addresses keyed by their /64, IPv4-mapped
/// (`::ffff:a.b.c.d`) and NAT64 (`64:ff9b::a.b.c.d`) addresses by their
/// IPv4 (the core crate's [`IpKeyer`]), so one client is one key however
/// it arrives.
///
/// # Startup-safe: [`PeerIp::connection`]
///
/// A layer keyed by [`PeerIp::connection`] cannot be put inside a router
/// ([`Builder::build`](crate::Builder::build) refuses it with
/// [`ConfigError::PeerNotSupplied`], before any request). It is built
/// with [`Builder::build_per_connection`](crate::Builder::build_per_connection)
/// and served as the server's make-service, which takes the address from
/// each accepted connection, so that no request can arrive without it:
///
/// * **axum** (feature `axum`):
///   `axum::serve(listener, layer.make_service(router))`, for any listener
///   whose addresses are `SocketAddr`s (a Unix socket has no IP to key by:
///   it does not compile);
/// * **hyper**: in the accept loop, `make.for_peer(addr)` with the
///   `SocketAddr` from `accept()` gives that connection's service.
///
/// The limit then covers the whole application (it wraps the router, not
/// a route).
///
/// # Reading the server's extension: [`socket_addr`](PeerIp::socket_addr), [`from_fn`](PeerIp::from_fn)
///
/// To limit some routes only, or with a server that already puts the
/// address in the extensions, read it from there and build with
/// [`Builder::build`](crate::Builder::build):
///
/// * **axum**: serve with
///   `app.into_make_service_with_connect_info::<SocketAddr>()` and read
///   axum's `ConnectInfo` (a non-capturing closure is a [`PeerSource`]):
///   ```ignore
///   PeerIp::from_fn(|e| e.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip()))
///   ```
/// * **hyper**: insert the `SocketAddr` from `accept()` into each
///   request's extensions (for example with `tower::util::MapRequest`), and
///   use [`PeerIp::socket_addr`].
///
/// No check at startup can see whether that server really inserts it. A
/// request without the address is the server's mistake, not the client's:
/// it is answered 500 and counted in
/// [`Metrics::config_errors`](crate::Metrics::config_errors) (never limited
/// under one shared key).
#[derive(Debug, Clone, Copy)]
pub struct PeerIp {
    source: Peer,
    keyer: IpKeyer,
}

impl PeerIp {
    /// The peer of the connection, supplied by the per-connection service
    /// ([`Builder::build_per_connection`](crate::Builder::build_per_connection)):
    /// never missing.
    ///
    /// ```
    /// use ratekeeper_tower::{KeyedMap, PeerIp, Policy, RateLimitLayer};
    ///
    /// let map = KeyedMap::from_config(&"pacer:10".parse()?, Policy::from_rate("per-ip", 10.0)?, 1000)?;
    /// let limit = RateLimitLayer::builder(map).key(PeerIp::connection()).build_per_connection()?;
    /// // axum::serve(listener, limit.make_service(router))
    /// # let _ = limit;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connection() -> PeerIp {
        PeerIp::with_source(Peer::Connection)
    }

    /// The peer from a `SocketAddr` in the request extensions.
    pub fn socket_addr() -> PeerIp {
        PeerIp::from_fn(socket_addr_extension)
    }

    /// The peer as `source` reads it from the extensions.
    pub fn from_fn(source: PeerSource) -> PeerIp {
        PeerIp::with_source(Peer::Extensions(source))
    }

    fn with_source(source: Peer) -> PeerIp {
        PeerIp {
            source,
            keyer: IpKeyer::default(),
        }
    }

    /// Keys IPv6 addresses by their first `prefix` bits (128: each address).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Network`] for a prefix over 128.
    pub fn ipv6_prefix(mut self, prefix: u8) -> Result<PeerIp, ConfigError> {
        self.keyer = keyer(prefix)?;
        Ok(self)
    }
}

/// The keyer of IPv6 networks of `prefix` bits.
fn keyer(prefix: u8) -> Result<IpKeyer, ConfigError> {
    IpKeyer::with_ipv6_prefix(prefix.into())
        .map_err(|_| ConfigError::Network(format!("::/{prefix}")))
}

/// The key of `ip`: IPv4 as it is (IPv4-mapped and NAT64 addresses too),
/// IPv6 as its network's first address.
fn key_ip(ip: IpAddr, keyer: IpKeyer) -> IpAddr {
    keyer.key(ip).into()
}

impl KeyExtractor for PeerIp {
    type Key = IpAddr;
    fn extract(&self, head: &RequestHead<'_>) -> Result<IpAddr, KeyError> {
        let ip = self.source.read(head.extensions)?;
        Ok(key_ip(ip, self.keyer))
    }

    fn needs_connection_peer(&self) -> bool {
        matches!(self.source, Peer::Connection)
    }
}

/// Which forwarding header [`RightmostTrusted`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forwarding {
    XForwardedFor,
    Forwarded,
}

/// The client address behind trusted proxies: the rightmost hop of
/// `X-Forwarded-For` (or of `Forwarded`'s `for=`, RFC 7239) that is not in
/// the trusted networks, the peer address counted as the last hop.
///
/// Each proxy appends the address it received the request from, so hops
/// right of the first untrusted one were written by trusted proxies and
/// that hop is the client; anything left of it is whatever the client
/// sent, and is never read (the left-most entry is spoofable).
///
/// ```
/// use ratekeeper_tower::key::{KeyExtractor, RequestHead, RightmostTrusted};
///
/// let xff = RightmostTrusted::x_forwarded_for(["10.0.0.0/8"])?;
/// let req = http::Request::builder()
///     .header("x-forwarded-for", "6.6.6.6, 203.0.113.7, 10.0.0.2")
///     .body(())?;
/// assert_eq!(xff.extract(&RequestHead::of(&req))?, "203.0.113.7".parse::<std::net::IpAddr>()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// With [`with_connection_peer`](RightmostTrusted::with_connection_peer)
/// (startup-safe, as [`PeerIp::connection`]) or
/// [`with_peer`](RightmostTrusted::with_peer), the connection's peer is
/// the last hop: a request that did not come through a trusted proxy is
/// keyed by its peer whatever its headers say. Without either, the layer
/// must only be reachable through the trusted proxies.
///
/// A hop that is not an IP address (`unknown`, an obfuscated `_id`) where
/// the walk needs it is [`KeyError::Malformed`], and so is a `Forwarded`
/// field that is not RFC 7239's grammar, wherever it breaks it (see
/// [`forwarded`](RightmostTrusted::forwarded)); no header at all (and no
/// peer) is [`KeyError::Missing`]; all hops trusted gives the left-most.
/// The client's address is keyed as [`PeerIp`] keys it (IPv6 by prefix,
/// IPv4-mapped and NAT64 as IPv4).
#[derive(Debug, Clone)]
pub struct RightmostTrusted {
    header: Forwarding,
    trusted: Vec<IpNet>,
    peer: Option<Peer>,
    keyer: IpKeyer,
}

impl RightmostTrusted {
    /// Reads `X-Forwarded-For`; `trusted` are the proxies' networks.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Network`] for an entry that is not a network.
    pub fn x_forwarded_for<I, S>(trusted: I) -> Result<RightmostTrusted, ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        RightmostTrusted::new(Forwarding::XForwardedFor, trusted)
    }

    /// Reads `Forwarded` (RFC 7239) `for=` parameters.
    ///
    /// # Parsing
    ///
    /// The field is read by the grammar of RFC 7239 §4, with RFC 7230's
    /// tokens, quoted strings and lists:
    ///
    /// ```text
    /// Forwarded         = 1#forwarded-element
    /// forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
    /// forwarded-pair    = token "=" value
    /// value             = token / quoted-string
    /// ```
    ///
    /// * **Accepted:** elements separated by commas, parameters by
    ///   semicolons, with optional spaces and tabs around either. A comma,
    ///   semicolon or `=` inside a quoted string belongs to the value, and
    ///   `\x` there stands for `x`. Parameter names are case-insensitive
    ///   (`For=`). Several field lines are one list, in order. Nothing but
    ///   whitespace between two commas is no element at all.
    /// * **Rejected:** anything else: an unterminated quoted string, a
    ///   character that is not a token's where a name or an unquoted value
    ///   is due (an unquoted `[2001:db8::1]` or `192.0.2.1:80`), spaces
    ///   around `=`, an empty value, a parameter given twice in one
    ///   element (two `for=`), bytes other than visible ASCII, space and
    ///   tab (obs-text only inside quotes). One rejected element or line
    ///   rejects the whole field, which is then no key at all
    ///   ([`KeyError::Malformed`]): the layer answers it with its
    ///   [`OnMissingKey`](crate::OnMissingKey) policy, as it answers a
    ///   request without the field. Elements are never split some other
    ///   way to recover one.
    ///
    /// A client's own text can thus make the field rejected (and the
    /// missing-key policy answer it), but cannot make a hop that a trusted
    /// proxy appended, or text such a proxy quoted, read as a different
    /// address. A request from an untrusted peer
    /// ([`with_connection_peer`](RightmostTrusted::with_connection_peer),
    /// [`with_peer`](RightmostTrusted::with_peer)) is keyed by that peer
    /// before the field is read.
    ///
    /// The walk then reads the `for=` node of each element from the right
    /// (RFC 7239 §6): an IPv4 address, or an IPv6 address in brackets
    /// (quoted, as `[` and `:` are not token characters), either with an
    /// optional port or obfuscated `_port`. An element it reaches without
    /// `for=`, or whose node is `unknown` or an obfuscated `_name`, is
    /// [`KeyError::Malformed`] too.
    ///
    /// ```
    /// use ratekeeper_tower::key::{KeyError, KeyExtractor, RequestHead, RightmostTrusted};
    ///
    /// let fwd = RightmostTrusted::forwarded(["10.0.0.0/8"])?;
    /// let key = |value: &str| {
    ///     let req = http::Request::builder().header("forwarded", value).body(())?;
    ///     Ok::<_, http::Error>(fwd.extract(&RequestHead::of(&req)))
    /// };
    /// // The Host a proxy quoted holds a comma: still one element.
    /// let quoted = r#"for=203.0.113.9;host="evil.example,for=6.6.6.6;x=""#;
    /// assert_eq!(key(quoted)?, Ok("203.0.113.9".parse()?));
    /// let v6 = r#"for=6.6.6.6, For="[2001:db8::17]:4711"; proto=https, for=10.0.0.2"#;
    /// assert_eq!(key(v6)?, Ok("2001:db8::".parse()?));
    /// // Not the grammar: no key, whatever the rest says.
    /// assert_eq!(key(r#"for=203.0.113.9;host="evil.example"#)?, Err(KeyError::Malformed));
    /// assert_eq!(key("for=203.0.113.9;for=6.6.6.6")?, Err(KeyError::Malformed));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::Network`] for an entry that is not a network.
    pub fn forwarded<I, S>(trusted: I) -> Result<RightmostTrusted, ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        RightmostTrusted::new(Forwarding::Forwarded, trusted)
    }

    fn new<I, S>(header: Forwarding, trusted: I) -> Result<RightmostTrusted, ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let trusted = trusted
            .into_iter()
            .map(|s| s.as_ref().parse())
            .collect::<Result<Vec<IpNet>, _>>()?;
        Ok(RightmostTrusted {
            header,
            trusted,
            peer: None,
            keyer: IpKeyer::default(),
        })
    }

    /// Counts the connection's peer address as the last hop, supplied by
    /// the per-connection service: the layer must be built with
    /// [`Builder::build_per_connection`](crate::Builder::build_per_connection)
    /// (see [`PeerIp::connection`]).
    ///
    /// ```
    /// use ratekeeper_tower::key::{KeyExtractor, PeerAddr, RequestHead, RightmostTrusted};
    ///
    /// let xff = RightmostTrusted::x_forwarded_for(["10.0.0.0/8"])?.with_connection_peer();
    /// let mut req = http::Request::builder().header("x-forwarded-for", "203.0.113.7").body(())?;
    /// // Through the proxy: the client it names.
    /// req.extensions_mut().insert(PeerAddr("10.0.0.2:4000".parse()?));
    /// assert_eq!(xff.extract(&RequestHead::of(&req))?, "203.0.113.7".parse::<std::net::IpAddr>()?);
    /// // Directly: the peer, whatever the header says.
    /// req.extensions_mut().insert(PeerAddr("198.51.100.1:4000".parse()?));
    /// assert_eq!(xff.extract(&RequestHead::of(&req))?, "198.51.100.1".parse::<std::net::IpAddr>()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_connection_peer(mut self) -> RightmostTrusted {
        self.peer = Some(Peer::Connection);
        self
    }

    /// Counts the peer address, as `source` reads it from the extensions
    /// the server fills, as the last hop. A request without it is answered
    /// 500 (see [`PeerIp`]).
    pub fn with_peer(mut self, source: PeerSource) -> RightmostTrusted {
        self.peer = Some(Peer::Extensions(source));
        self
    }

    /// Keys IPv6 addresses by their first `prefix` bits (128: each address).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Network`] for a prefix over 128.
    pub fn ipv6_prefix(mut self, prefix: u8) -> Result<RightmostTrusted, ConfigError> {
        self.keyer = keyer(prefix)?;
        Ok(self)
    }

    fn trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|n| n.contains(ip))
    }

    /// The rightmost of `hops` not in the trusted networks, right of a
    /// `peer` that is trusted.
    /// Each hop is parsed only when the walk reaches it (`None`: not an
    /// address).
    fn walk(
        &self,
        hops: impl DoubleEndedIterator<Item = Option<IpAddr>>,
        peer: Option<IpAddr>,
    ) -> Result<IpAddr, KeyError> {
        let mut leftmost = peer;
        for hop in hops.rev() {
            let ip = hop.ok_or(KeyError::Malformed)?;
            if !self.trusted(ip) {
                return Ok(ip);
            }
            leftmost = Some(ip);
        }
        leftmost.ok_or(KeyError::Missing)
    }
}

impl KeyExtractor for RightmostTrusted {
    type Key = IpAddr;
    fn extract(&self, head: &RequestHead<'_>) -> Result<IpAddr, KeyError> {
        let peer = match self.peer {
            Some(source) => Some(source.read(head.extensions)?),
            None => None,
        };
        // A peer that is not a trusted proxy is the client: its headers are
        // its own, not read at all (not even to refuse them).
        if let Some(p) = peer.filter(|&p| !self.trusted(p)) {
            return Ok(key_ip(p, self.keyer));
        }
        let ip = match self.header {
            Forwarding::XForwardedFor => {
                let mut values = Vec::new();
                for v in head.headers.get_all(&X_FORWARDED_FOR) {
                    values.push(v.to_str().map_err(|_| KeyError::Malformed)?);
                }
                let hops = values.iter().flat_map(|v| v.split(','));
                self.walk(hops.map(|h| parse_xff_hop(h.trim())), peer)?
            }
            Forwarding::Forwarded => {
                let lines = head.headers.get_all(FORWARDED);
                let elements = forwarded::for_values(lines.iter().map(HeaderValue::as_bytes))
                    .map_err(|_| KeyError::Malformed)?;
                let hops = elements
                    .iter()
                    .map(|e| e.as_deref().and_then(forwarded::node_ip));
                self.walk(hops, peer)?
            }
        };
        Ok(key_ip(ip, self.keyer))
    }

    fn needs_connection_peer(&self) -> bool {
        matches!(self.peer, Some(Peer::Connection))
    }
}

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// An `X-Forwarded-For` entry: an address, or one with a port.
fn parse_xff_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

/// A request header's value as the key: an API key, a tenant id.
///
/// A missing header is [`KeyError::Missing`]; so is an empty one.
#[derive(Debug, Clone)]
pub struct HeaderKey {
    name: HeaderName,
}

impl HeaderKey {
    /// Keys by the header `name`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::HeaderName`] for a name that is not a header name.
    pub fn new(name: &str) -> Result<HeaderKey, ConfigError> {
        let name = HeaderName::try_from(name).map_err(|_| ConfigError::HeaderName(name.into()))?;
        Ok(HeaderKey { name })
    }
}

impl KeyExtractor for HeaderKey {
    type Key = HeaderValue;
    fn extract(&self, head: &RequestHead<'_>) -> Result<HeaderValue, KeyError> {
        match head.headers.get(&self.name) {
            Some(v) if !v.is_empty() => Ok(v.clone()),
            _ => Err(KeyError::Missing),
        }
    }
}

/// A closure as the extractor; `None` is [`KeyError::Missing`].
///
/// ```
/// use ratekeeper_tower::key::{FnKey, KeyExtractor, RequestHead};
///
/// let by_path = FnKey::new(|head: &RequestHead<'_>| Some(head.uri().path().to_owned()));
/// let req = http::Request::get("/a/b").body(())?;
/// assert_eq!(by_path.extract(&RequestHead::of(&req))?, "/a/b");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FnKey<F> {
    f: F,
}

impl<F> FnKey<F> {
    /// Keys by what `f` returns.
    pub fn new(f: F) -> FnKey<F> {
        FnKey { f }
    }
}

impl<F> std::fmt::Debug for FnKey<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnKey")
    }
}

impl<F, K> KeyExtractor for FnKey<F>
where
    F: Fn(&RequestHead<'_>) -> Option<K> + Send + Sync + 'static,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    type Key = K;
    fn extract(&self, head: &RequestHead<'_>) -> Result<K, KeyError> {
        (self.f)(head).ok_or(KeyError::Missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(name: &str, values: &[&str]) -> http::Request<()> {
        let mut b = http::Request::builder();
        for v in values {
            b = b.header(name, *v);
        }
        b.body(()).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn xff_spoofed_leftmost_is_never_read() {
        let x = RightmostTrusted::x_forwarded_for(["10.0.0.0/8", "192.168.0.1"]).unwrap();
        let honest = req("x-forwarded-for", &["203.0.113.7, 10.0.0.2"]);
        let spoofed = req("x-forwarded-for", &["1.2.3.4, 203.0.113.7, 10.0.0.2"]);
        let split = req("x-forwarded-for", &["9.9.9.9", "203.0.113.7,192.168.0.1"]);
        for r in [&honest, &spoofed, &split] {
            assert_eq!(x.extract(&RequestHead::of(r)), Ok(ip("203.0.113.7")));
        }
        // All trusted: the left-most; none: missing; garbage where read: malformed.
        let inside = req("x-forwarded-for", &["10.0.0.9, 10.0.0.2"]);
        assert_eq!(x.extract(&RequestHead::of(&inside)), Ok(ip("10.0.0.9")));
        assert_eq!(
            x.extract(&RequestHead::of(&req("a", &[]))),
            Err(KeyError::Missing)
        );
        let bad = req("x-forwarded-for", &["203.0.113.7, nonsense, 10.0.0.2"]);
        assert_eq!(x.extract(&RequestHead::of(&bad)), Err(KeyError::Malformed));
        // Garbage left of the client is never parsed.
        let junk_left = req("x-forwarded-for", &["<script>, 203.0.113.7"]);
        assert_eq!(
            x.extract(&RequestHead::of(&junk_left)),
            Ok(ip("203.0.113.7"))
        );
    }

    #[test]
    fn xff_with_peer() {
        let x = RightmostTrusted::x_forwarded_for(["127.0.0.1"])
            .unwrap()
            .with_peer(socket_addr_extension);
        let mut r = req("x-forwarded-for", &["1.2.3.4"]);
        assert_eq!(
            x.extract(&RequestHead::of(&r)),
            Err(KeyError::NoPeerAddress)
        );
        r.extensions_mut()
            .insert("198.51.100.1:5000".parse::<SocketAddr>().unwrap());
        // An untrusted peer is the client, whatever it claims.
        assert_eq!(x.extract(&RequestHead::of(&r)), Ok(ip("198.51.100.1")));
        r.extensions_mut()
            .insert("127.0.0.1:5000".parse::<SocketAddr>().unwrap());
        assert_eq!(x.extract(&RequestHead::of(&r)), Ok(ip("1.2.3.4")));
    }

    /// A request that did not come through a trusted proxy is keyed by its
    /// peer whatever its headers say, even headers that do not parse: the
    /// client cannot move itself to the missing-key policy's answer.
    #[test]
    fn an_untrusted_peer_is_its_key_whatever_the_headers_hold() {
        let xff = RightmostTrusted::x_forwarded_for(["10.0.0.0/8"])
            .unwrap()
            .with_peer(socket_addr_extension);
        let fwd = RightmostTrusted::forwarded(["10.0.0.0/8"])
            .unwrap()
            .with_peer(socket_addr_extension);
        for (x, name) in [(&xff, "x-forwarded-for"), (&fwd, "forwarded")] {
            for bad in [&b"203.0.113.7, \xff"[..], b"for=\"unterminated", b"a b c"] {
                let mut r = http::Request::builder()
                    .header(name, HeaderValue::from_bytes(bad).unwrap())
                    .body(())
                    .unwrap();
                r.extensions_mut()
                    .insert("198.51.100.1:5000".parse::<SocketAddr>().unwrap());
                assert_eq!(
                    x.extract(&RequestHead::of(&r)),
                    Ok(ip("198.51.100.1")),
                    "{name}: {}",
                    String::from_utf8_lossy(bad)
                );
            }
        }
    }

    #[test]
    fn forwarded_rfc7239() {
        let f = RightmostTrusted::forwarded(["10.0.0.0/8", "2001:db8:cafe::/48"]).unwrap();
        let r = req(
            "forwarded",
            &[r#"for=6.6.6.6, for="[2001:db8::17]:4711";proto=http, For="10.1.1.1:80""#],
        );
        // /64 of the client's IPv6 address.
        assert_eq!(f.extract(&RequestHead::of(&r)), Ok(ip("2001:db8::")));
        let f128 = f.clone().ipv6_prefix(128).unwrap();
        assert_eq!(f128.extract(&RequestHead::of(&r)), Ok(ip("2001:db8::17")));
        let unknown = req("forwarded", &["for=unknown, for=10.0.0.1"]);
        assert_eq!(
            f.extract(&RequestHead::of(&unknown)),
            Err(KeyError::Malformed)
        );
        let no_for = req("forwarded", &["proto=https"]);
        assert_eq!(
            f.extract(&RequestHead::of(&no_for)),
            Err(KeyError::Malformed)
        );
    }

    /// A comma inside a quoted string does not end the element: a trusted
    /// proxy that quotes client text (here the Host) into its own element
    /// does not let the client name a hop of its choosing.
    #[test]
    fn a_quoted_comma_does_not_split_a_forwarded_element() {
        let f = RightmostTrusted::forwarded(["10.0.0.0/8"])
            .unwrap()
            .with_peer(socket_addr_extension);
        let mut r = req(
            "forwarded",
            &[r#"for=203.0.113.9;host="evil.example,for=6.6.6.6;x=""#],
        );
        r.extensions_mut()
            .insert("10.0.0.2:5000".parse::<SocketAddr>().unwrap());
        assert_eq!(f.extract(&RequestHead::of(&r)), Ok(ip("203.0.113.9")));
    }

    /// One client is one key however it arrives: IPv4-mapped and NAT64
    /// (`64:ff9b::/96`, RFC 6052) addresses key as their IPv4, from the
    /// peer and from a forwarding header alike.
    #[test]
    fn mapped_and_nat64_addresses_key_as_their_ipv4() {
        let peer = PeerIp::socket_addr();
        let xff = RightmostTrusted::x_forwarded_for(["10.0.0.0/8"]).unwrap();
        let fwd = RightmostTrusted::forwarded(["10.0.0.0/8"]).unwrap();
        for v6 in [
            "::ffff:203.0.113.7",
            "64:ff9b::203.0.113.7",
            "64:ff9b::cb00:7107",
        ] {
            let mut r = req("x-forwarded-for", &[&format!("{v6}, 10.0.0.2")]);
            r.extensions_mut().insert(SocketAddr::new(ip(v6), 443));
            assert_eq!(
                peer.extract(&RequestHead::of(&r)),
                Ok(ip("203.0.113.7")),
                "{v6}"
            );
            assert_eq!(
                xff.extract(&RequestHead::of(&r)),
                Ok(ip("203.0.113.7")),
                "{v6}"
            );
            let f = req("forwarded", &[&format!(r#"for="[{v6}]:80", for=10.0.0.2"#)]);
            assert_eq!(
                fwd.extract(&RequestHead::of(&f)),
                Ok(ip("203.0.113.7")),
                "{v6}"
            );
        }
        // Any other IPv6 address keys as its /64.
        let mut r = req("a", &[]);
        r.extensions_mut()
            .insert("[64:ff9c::cb00:7107]:80".parse::<SocketAddr>().unwrap());
        assert_eq!(peer.extract(&RequestHead::of(&r)), Ok(ip("64:ff9c::")));
    }

    #[test]
    fn peer_ip_and_header() {
        let p = PeerIp::socket_addr();
        let mut r = req("x-api-key", &["k1"]);
        assert_eq!(
            p.extract(&RequestHead::of(&r)),
            Err(KeyError::NoPeerAddress)
        );
        assert!(KeyError::NoPeerAddress.is_configuration());
        r.extensions_mut()
            .insert("[::ffff:1.2.3.4]:80".parse::<SocketAddr>().unwrap());
        assert_eq!(p.extract(&RequestHead::of(&r)), Ok(ip("1.2.3.4")));
        let h = HeaderKey::new("x-api-key").unwrap();
        assert_eq!(h.extract(&RequestHead::of(&r)).unwrap(), "k1");
        assert!(HeaderKey::new("bad header").is_err());
        assert_eq!(
            h.extract(&RequestHead::of(&req("x-api-key", &[""]))),
            Err(KeyError::Missing)
        );
        assert!(PeerIp::socket_addr().ipv6_prefix(129).is_err());
        assert!(RightmostTrusted::x_forwarded_for(["10.0.0.0/40"]).is_err());
    }
}
