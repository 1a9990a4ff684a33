//! The configuration error: every bad input is refused when the layer is
//! built, never at request time.

/// A layer, policy, extractor or keyed map that cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A policy name that a structured-field String cannot carry (only
    /// printable ASCII, 0x20 to 0x7E).
    #[error("policy name {0:?} is not printable ASCII")]
    PolicyName(String),
    /// A quota of zero permits, or a window of zero seconds.
    #[error("a policy needs a quota and a window of at least 1 (got q={quota}, w={window})")]
    ZeroQuota {
        /// The quota given.
        quota: u64,
        /// The window given, in seconds.
        window: u64,
    },
    /// A quota or window above the largest Integer a structured field
    /// carries (999,999,999,999,999; RFC 9651 §3.3.1), so that the
    /// `RateLimit-Policy` field could not announce it.
    #[error(
        "a policy's quota and window must be at most 999999999999999 (got q={quota}, w={window})"
    )]
    QuotaTooLarge {
        /// The quota given.
        quota: u64,
        /// The window given, in seconds.
        window: u64,
    },
    /// A rate that is not a positive finite number of permits per second.
    #[error("rate {0} is not a positive finite number of permits per second")]
    Rate(f64),
    /// A burst of zero.
    #[error("a burst must be at least 1")]
    ZeroBurst,
    /// A keyed map with room for no key.
    #[error("a keyed map needs room for at least one key")]
    ZeroCap,
    /// A keyed map larger than [`MAX_KEYS`](crate::MAX_KEYS).
    #[error("a keyed map of {0} keys is over the limit of {max}", max = crate::MAX_KEYS)]
    TooManyKeys(usize),
    /// A trusted network that does not parse as `ADDR/PREFIX` or `ADDR`.
    #[error("{0:?} is not an IP network (ADDR/PREFIX)")]
    Network(String),
    /// A header name that is not a valid HTTP header name.
    #[error("{0:?} is not a valid header name")]
    HeaderName(String),
    /// A status for refused requests that is not a client error (4xx).
    #[error("status {0} is not a client error (4xx)")]
    Status(u16),
    /// The limiter cannot grant even one permit.
    #[error("the limiter cannot grant a single permit: {0}")]
    Limiter(#[source] ratekeeper::AcquireError),
    /// The core crate refused the limiter's configuration.
    #[error("invalid limiter configuration")]
    Core(#[source] ratekeeper::error::ConfigError),
    /// A limiter kind a keyed map must not build per key (a token pool
    /// filled by a thread would start a thread per key).
    #[error("a {0} limiter cannot be built per key")]
    PerKeyKind(&'static str),
    /// A limiter whose burst depends on its history (a pacer of
    /// strictness under 1, a token pool, a cycle limiter), so that no
    /// policy derived from its configuration
    /// ([`Policy::from_config`](crate::Policy::from_config)) could
    /// announce it truthfully.
    #[error("a {0} limiter's burst depends on its history: no policy can announce it")]
    UnannouncedBurst(&'static str),
    /// A layer keyed by the connection's peer ([`PeerIp::connection`],
    /// [`RightmostTrusted::with_connection_peer`]) built to go inside a
    /// service, where nothing supplies the peer: build it with
    /// [`Builder::build_per_connection`] and serve its make-service.
    ///
    /// [`PeerIp::connection`]: crate::PeerIp::connection
    /// [`RightmostTrusted::with_connection_peer`]: crate::RightmostTrusted::with_connection_peer
    /// [`Builder::build_per_connection`]: crate::Builder::build_per_connection
    #[error(
        "the key needs the connection's peer address, which only a per-connection layer is given"
    )]
    PeerNotSupplied,
}
