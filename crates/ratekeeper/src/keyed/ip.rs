//! [`IpKeyer`] and [`IpKey`]: client addresses as keys, IPv6 by prefix.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{ConfigError, ConfigReason};

/// The IPv6 prefix an [`IpKeyer`] keys on by default: /64, one subscriber.
pub const DEFAULT_IPV6_PREFIX: u8 = 64;

/// The NAT64 well-known prefix, `64:ff9b::/96` (RFC 6052).
const NAT64: [u16; 6] = [0x64, 0xff9b, 0, 0, 0, 0];

/// A client address normalised for keying: an IPv4 address, or an IPv6
/// network of the keyer's prefix length. 17 bytes, `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpKey {
    /// An IPv4 address (including one IPv4-mapped or NAT64 in IPv6).
    V4(Ipv4Addr),
    /// An IPv6 address with the bits past the prefix cleared.
    V6(Ipv6Addr),
}

impl fmt::Display for IpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpKey::V4(a) => a.fmt(f),
            IpKey::V6(a) => a.fmt(f),
        }
    }
}

/// The key as an address: the IPv4 address, or the IPv6 network's first.
impl From<IpKey> for IpAddr {
    fn from(key: IpKey) -> IpAddr {
        match key {
            IpKey::V4(a) => IpAddr::V4(a),
            IpKey::V6(a) => IpAddr::V6(a),
        }
    }
}

/// Turns addresses into [`IpKey`]s: IPv6 truncated to a prefix (default
/// [`DEFAULT_IPV6_PREFIX`]), IPv4-mapped and NAT64 addresses to their IPv4,
/// so one client is one key however it arrives.
///
/// # Examples
///
/// ```
/// use ratekeeper::keyed::{IpKey, IpKeyer};
/// use ratekeeper::ConfigErrorKind;
///
/// let keyer = IpKeyer::default();
/// assert_eq!(keyer.key("2001:db8:1:2:3:4:5:6".parse()?), IpKey::V6("2001:db8:1:2::".parse()?));
/// assert_eq!(keyer.key("::ffff:192.0.2.7".parse()?), IpKey::V4("192.0.2.7".parse()?));
/// assert_eq!(keyer.key("64:ff9b::192.0.2.7".parse()?), IpKey::V4("192.0.2.7".parse()?));
///
/// let by_56 = IpKeyer::with_ipv6_prefix(56)?;
/// assert_eq!(by_56.key("2001:db8:1:2ff::1".parse()?), IpKey::V6("2001:db8:1:200::".parse()?));
/// assert_eq!(IpKeyer::with_ipv6_prefix(129).unwrap_err().kind(), ConfigErrorKind::IpPrefix);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpKeyer {
    ipv6_mask: u128,
}

impl Default for IpKeyer {
    fn default() -> Self {
        IpKeyer {
            ipv6_mask: mask(DEFAULT_IPV6_PREFIX),
        }
    }
}

/// Why an IP prefix was refused: the detail behind a [`ConfigError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an IPv6 prefix length must be between 0 and 128, got {0}")]
pub(crate) struct IpPrefixError(pub(crate) u32);

impl IpKeyer {
    /// A keyer of IPv6 networks of `prefix` bits (0 to 128).
    ///
    /// # Errors
    ///
    /// [`IpPrefix`](ConfigReason::IpPrefix) for a prefix above 128.
    pub fn with_ipv6_prefix(prefix: u32) -> Result<IpKeyer, ConfigError> {
        match u8::try_from(prefix) {
            Ok(p) if p <= 128 => Ok(IpKeyer { ipv6_mask: mask(p) }),
            _ => Err(ConfigError::with_reason(
                ConfigReason::IpPrefix,
                IpPrefixError(prefix),
            )),
        }
    }

    /// The IPv6 prefix length.
    pub fn ipv6_prefix(&self) -> u32 {
        self.ipv6_mask.count_ones()
    }

    /// The key of `addr`.
    pub fn key(&self, addr: IpAddr) -> IpKey {
        match addr {
            IpAddr::V4(a) => IpKey::V4(a),
            IpAddr::V6(a) => {
                if let Some(v4) = a.to_ipv4_mapped() {
                    return IpKey::V4(v4);
                }
                let s = a.segments();
                if s[..6] == NAT64 {
                    return IpKey::V4(Ipv4Addr::from_bits(
                        (u32::from(s[6]) << 16) | u32::from(s[7]),
                    ));
                }
                IpKey::V6(Ipv6Addr::from_bits(a.to_bits() & self.ipv6_mask))
            }
        }
    }
}

/// The mask of the top `prefix` bits (`prefix ≤ 128`).
fn mask(prefix: u8) -> u128 {
    match prefix {
        0 => 0,
        p => u128::MAX << (128 - u32::from(p)),
    }
}
