//! Addresses, prefixes and MACs as operators write them.

use std::net::Ipv4Addr;
use std::str::FromStr;

use fib::IpPrefix;

use crate::spec::SpecError;

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], SpecError> {
    let parts: Vec<&str> = s.split(':').collect();
    let bad = || SpecError::Mac(s.to_string());
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut m = [0u8; 6];
    for (o, p) in m.iter_mut().zip(parts) {
        if p.len() != 2 {
            return Err(bad());
        }
        *o = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(m)
}

/// Parses an IPv4 address.
pub fn parse_ip(s: &str) -> Result<Ipv4Addr, SpecError> {
    Ipv4Addr::from_str(s.trim()).map_err(|_| SpecError::Ip(s.to_string()))
}

/// Parses `a.b.c.d/len` or `x:y::z/len` (host bits must be clear).
pub fn parse_prefix(s: &str) -> Result<IpPrefix, SpecError> {
    IpPrefix::from_str(s.trim()).map_err(|e| SpecError::Prefix(s.to_string(), e.to_string()))
}

/// Parses `a.b.c.d/len` or `x:y::z/len` as an interface address (host bits
/// allowed).
pub fn parse_addr_len(s: &str) -> Result<(std::net::IpAddr, u8), SpecError> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| SpecError::NoLength(s.to_string()))?;
    let len: u8 = l.parse().map_err(|_| SpecError::Length(s.to_string()))?;
    let addr = std::net::IpAddr::from_str(a.trim()).map_err(|_| SpecError::IpAny(a.to_string()))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if len > max {
        return Err(SpecError::Length(s.to_string()));
    }
    Ok((addr, len))
}
