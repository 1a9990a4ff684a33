//! [`IpNet`]: a trusted network (`10.0.0.0/8`, `2001:db8::/32`, or one
//! address).

use std::net::IpAddr;
use std::str::FromStr;

use crate::ConfigError;

/// An IP network, `ADDR/PREFIX`, or one address (`ADDR`, the full prefix).
///
/// ```
/// use ratekeeper_tower::IpNet;
///
/// let net: IpNet = "10.0.0.0/8".parse()?;
/// assert!(net.contains("10.1.2.3".parse()?));
/// assert!(!net.contains("11.0.0.1".parse()?));
/// let one: IpNet = "::1".parse()?;
/// assert!(one.contains("::1".parse()?));
/// assert!("10.0.0.0/33".parse::<IpNet>().is_err());
/// assert_eq!("::ffff:10.0.0.0/104".parse::<IpNet>()?, "10.0.0.0/8".parse()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// `addr/prefix`. An IPv4-mapped address (`::ffff:a.b.c.d`) with a
    /// prefix of 96 or more is the IPv4 network it writes
    /// (`::ffff:10.0.0.0/104` is `10.0.0.0/8`).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Network`] for a prefix longer than the address.
    pub fn new(addr: IpAddr, prefix: u8) -> Result<IpNet, ConfigError> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(ConfigError::Network(format!("{addr}/{prefix}")));
        }
        let (addr, prefix) = match canonical(addr) {
            v4 @ IpAddr::V4(_) if addr.is_ipv6() && prefix >= 96 => (v4, prefix - 96),
            _ => (addr, prefix),
        };
        Ok(IpNet {
            addr: mask(addr, prefix),
            prefix,
        })
    }

    /// Whether `ip` is in the network. An IPv4-mapped IPv6 address
    /// (`::ffff:a.b.c.d`) counts as its IPv4 address, in an IPv4 network
    /// only; a NAT64 address (`64:ff9b::a.b.c.d`) is the translator's IPv6
    /// address here, though a key counts it as its IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.prefix) == self.addr
    }
}

impl FromStr for IpNet {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<IpNet, ConfigError> {
        let bad = || ConfigError::Network(s.to_owned());
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().map_err(|_| bad())?)),
            None => (s, None),
        };
        let addr = addr.trim().parse::<IpAddr>().map_err(|_| bad())?;
        let prefix = prefix.unwrap_or(if addr.is_ipv4() { 32 } else { 128 });
        IpNet::new(addr, prefix).map_err(|_| bad())
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// An IPv4-mapped IPv6 address as IPv4; others as they are.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// `ip` with all but its first `prefix` bits zeroed.
pub(crate) fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let m = u32::MAX
                .checked_shl(32 - u32::from(prefix.min(32)))
                .unwrap_or(0);
            IpAddr::V4((bits & m).into())
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let m = u128::MAX
                .checked_shl(128 - u32::from(prefix.min(128)))
                .unwrap_or(0);
            IpAddr::V6((bits & m).into())
        }
    }
}
