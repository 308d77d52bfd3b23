//! Prefixes of either address family: [`Ipv6Prefix`] beside the IPv4 FIB's
//! [`Ipv4Prefix`], and [`IpPrefix`], which carries one or the other through the
//! routing state, the control API, the learners and the configuration. The
//! forwarding structures keep their own concrete keys.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use crate::model::{FibError, Ipv4Prefix, split_prefix};

/// An address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    /// `ipv4` or `ipv6`.
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Network mask of a 128-bit prefix of length `len <= 128`.
#[inline]
pub(crate) fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

/// An IPv6 prefix with no host bits set. Stored as bytes so that it packs beside
/// an [`Ipv4Prefix`] in [`IpPrefix`] without 16-byte alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ipv6Prefix {
    addr: [u8; 16],
    len: u8,
}

impl Ipv6Prefix {
    /// `addr/len`; fails on `len > 128` or host bits set.
    pub fn new(addr: Ipv6Addr, len: u8) -> Result<Self, FibError> {
        if len > 128 {
            return Err(FibError::PrefixLen(len, 128));
        }
        if u128::from(addr) & !mask6(len) != 0 {
            return Err(FibError::HostBits {
                addr: addr.into(),
                len,
            });
        }
        Ok(Self {
            addr: addr.octets(),
            len,
        })
    }

    /// `addr/len` with the host bits cleared; fails only on `len > 128`.
    pub fn new_truncated(addr: Ipv6Addr, len: u8) -> Result<Self, FibError> {
        if len > 128 {
            return Err(FibError::PrefixLen(len, 128));
        }
        Ok(Self {
            addr: (u128::from(addr) & mask6(len)).to_be_bytes(),
            len,
        })
    }

    /// The network address.
    pub fn addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.addr)
    }

    /// The network address as an integer.
    pub fn addr_u128(&self) -> u128 {
        u128::from_be_bytes(self.addr)
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// True if `a` is inside the prefix.
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        u128::from(a) & mask6(self.len) == self.addr_u128()
    }
}

impl fmt::Display for Ipv6Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}

impl FromStr for Ipv6Prefix {
    type Err = FibError;
    fn from_str(s: &str) -> Result<Self, FibError> {
        let (a, l) = split_prefix(s)?;
        Ipv6Prefix::new(a, l)
    }
}

/// A prefix of either family. IPv4 orders before IPv6; within a family by
/// address, then length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpPrefix {
    /// An IPv4 prefix.
    V4(Ipv4Prefix),
    /// An IPv6 prefix.
    V6(Ipv6Prefix),
}

impl IpPrefix {
    /// `addr/len` of `addr`'s family; fails on a length beyond the family's
    /// bits or host bits set.
    pub fn new(addr: IpAddr, len: u8) -> Result<Self, FibError> {
        Ok(match addr {
            IpAddr::V4(a) => IpPrefix::V4(Ipv4Prefix::new(a, len)?),
            IpAddr::V6(a) => IpPrefix::V6(Ipv6Prefix::new(a, len)?),
        })
    }

    /// `addr/len` with the host bits cleared; fails only on a length beyond the
    /// family's bits.
    pub fn new_truncated(addr: IpAddr, len: u8) -> Result<Self, FibError> {
        Ok(match addr {
            IpAddr::V4(a) => IpPrefix::V4(Ipv4Prefix::new_truncated(a, len)?),
            IpAddr::V6(a) => IpPrefix::V6(Ipv6Prefix::new_truncated(a, len)?),
        })
    }

    /// The host prefix (/32, /128) of `addr`.
    pub fn host(addr: IpAddr) -> Self {
        match addr {
            IpAddr::V4(a) => IpPrefix::V4(Ipv4Prefix::host(a)),
            IpAddr::V6(a) => IpPrefix::V6(Ipv6Prefix {
                addr: a.octets(),
                len: 128,
            }),
        }
    }

    /// The family.
    pub fn family(&self) -> Family {
        match self {
            IpPrefix::V4(_) => Family::V4,
            IpPrefix::V6(_) => Family::V6,
        }
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        match self {
            IpPrefix::V4(p) => p.addr().into(),
            IpPrefix::V6(p) => p.addr().into(),
        }
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        match self {
            IpPrefix::V4(p) => p.prefix_len(),
            IpPrefix::V6(p) => p.prefix_len(),
        }
    }

    /// True if `a` is inside the prefix (never for an address of the other family).
    pub fn contains(&self, a: IpAddr) -> bool {
        match (self, a) {
            (IpPrefix::V4(p), IpAddr::V4(a)) => p.contains(u32::from(a)),
            (IpPrefix::V6(p), IpAddr::V6(a)) => p.contains(a),
            _ => false,
        }
    }
}

impl From<Ipv4Prefix> for IpPrefix {
    fn from(p: Ipv4Prefix) -> Self {
        IpPrefix::V4(p)
    }
}

impl From<Ipv6Prefix> for IpPrefix {
    fn from(p: Ipv6Prefix) -> Self {
        IpPrefix::V6(p)
    }
}

impl PartialEq<Ipv4Prefix> for IpPrefix {
    fn eq(&self, other: &Ipv4Prefix) -> bool {
        *self == IpPrefix::V4(*other)
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpPrefix::V4(p) => p.fmt(f),
            IpPrefix::V6(p) => p.fmt(f),
        }
    }
}

impl FromStr for IpPrefix {
    type Err = FibError;
    /// `a.b.c.d/len` or `x:y::z/len`.
    fn from_str(s: &str) -> Result<Self, FibError> {
        let (a, l) = split_prefix(s)?;
        IpPrefix::new(a, l)
    }
}

// Held per route in the routing state: it must stay small.
const _: () = assert!(std::mem::size_of::<IpPrefix>() <= 20);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_and_show_both_families() {
        let p: IpPrefix = "10.1.0.0/16".parse().unwrap();
        assert_eq!(p.family(), Family::V4);
        assert_eq!(p.to_string(), "10.1.0.0/16");
        let p: IpPrefix = "2001:db8::/32".parse().unwrap();
        assert_eq!(p.family(), Family::V6);
        assert_eq!(p.to_string(), "2001:db8::/32");
        assert!(p.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!p.contains("2001:db9::1".parse().unwrap()));
        assert!(!p.contains("10.0.0.1".parse().unwrap()));
        assert_eq!(
            "2001:db8::1/32".parse::<IpPrefix>(),
            Err(FibError::HostBits {
                addr: "2001:db8::1".parse().unwrap(),
                len: 32
            })
        );
        assert_eq!(
            "::/129".parse::<IpPrefix>(),
            Err(FibError::PrefixLen(129, 128))
        );
        assert_eq!(
            "10.0.0.0/33".parse::<IpPrefix>(),
            Err(FibError::PrefixLen(33, 32))
        );
        assert!(matches!(
            "2001:db8::/x".parse::<IpPrefix>(),
            Err(FibError::Parse(_))
        ));
        assert_eq!(
            IpPrefix::host("2001:db8::7".parse().unwrap()).to_string(),
            "2001:db8::7/128"
        );
        assert_eq!(
            IpPrefix::host("10.0.0.7".parse().unwrap()).to_string(),
            "10.0.0.7/32"
        );
        assert!(IpPrefix::V4("0.0.0.0/0".parse().unwrap()) < IpPrefix::V6("::/0".parse().unwrap()));
    }

    proptest! {
        #[test]
        fn prop_v6_truncate_contains_round_trip(a in any::<u128>(), len in 0u8..=128, b in any::<u128>()) {
            let p = Ipv6Prefix::new_truncated(Ipv6Addr::from(a), len).unwrap();
            prop_assert!(p.contains(Ipv6Addr::from(a)));
            prop_assert_eq!(Ipv6Prefix::new(p.addr(), len), Ok(p));
            prop_assert_eq!(p.to_string().parse::<Ipv6Prefix>(), Ok(p));
            let inside = (a ^ b) & mask6(len) == 0;
            prop_assert_eq!(p.contains(Ipv6Addr::from(b)), inside);
            let ip = IpPrefix::from(p);
            prop_assert_eq!(ip.to_string().parse::<IpPrefix>(), Ok(ip));
            prop_assert_eq!(ip.prefix_len(), len);
        }
    }
}
