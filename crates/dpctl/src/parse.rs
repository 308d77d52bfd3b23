//! Addresses, prefixes and MACs as operators write them.

use std::net::Ipv4Addr;
use std::str::FromStr;

use fib::Ipv4Prefix;

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    let bad = || format!("bad MAC address {s:?} (want aa:bb:cc:dd:ee:ff)");
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
pub fn parse_ip(s: &str) -> Result<Ipv4Addr, String> {
    Ipv4Addr::from_str(s.trim()).map_err(|_| format!("bad IPv4 address {s:?}"))
}

/// Parses `a.b.c.d/len` (host bits must be clear).
pub fn parse_prefix(s: &str) -> Result<Ipv4Prefix, String> {
    Ipv4Prefix::from_str(s.trim()).map_err(|e| format!("bad prefix {s:?}: {e}"))
}

/// Parses `a.b.c.d/len` as an interface address (host bits allowed).
pub fn parse_addr_len(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("address {s:?} needs a prefix length (a.b.c.d/len)"))?;
    let len: u8 = l
        .parse()
        .map_err(|_| format!("bad prefix length in {s:?}"))?;
    if len > 32 {
        return Err(format!("prefix length {len} > 32 in {s:?}"));
    }
    Ok((parse_ip(a)?, len))
}
