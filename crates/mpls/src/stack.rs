//! Label stack words in a frame buffer, and the IP header a pop exposes.

use crate::DropReason;
use wire::checksum;

/// Reads the big-endian word at `at`, if the buffer holds it.
#[inline(always)]
pub(crate) fn read_word(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Writes a big-endian word at `at`; the caller has checked the bounds.
#[inline(always)]
pub(crate) fn write_word(buf: &mut [u8], at: usize, w: u32) {
    if let Some(b) = buf.get_mut(at..at + 4) {
        b.copy_from_slice(&w.to_be_bytes());
    }
}

/// The address family of the payload under the bottom label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Ip4,
    Ip6,
}

/// The family of the IP header at `ip` by its version nibble (RFC 3032 §2.1
/// leaves the payload's type to the label; an entry that does not fix it reads
/// the first nibble, as Linux's `mpls_egress` and VPP's `mpls-disposition`).
#[inline(always)]
pub(crate) fn family_at(buf: &[u8], ip: usize) -> Result<Family, DropReason> {
    match buf.get(ip).map(|b| b >> 4) {
        Some(4) => Ok(Family::Ip4),
        Some(6) => Ok(Family::Ip6),
        Some(_) => Err(DropReason::NotIp),
        None => Err(DropReason::Truncated),
    }
}

//= RFC 3443 §3.1 (uniform): on pop the TTL of the exposed IP header is set from the
//= label TTL; the IPv4 checksum is then fixed with RFC 1624 equation 3.
/// Validates the IPv4 header exposed at `ip` and, for the uniform model, sets its TTL
/// to `ttl` with an incremental checksum update.
#[inline(always)]
pub(crate) fn dispose_ip4(
    buf: &mut [u8],
    ip: usize,
    ttl: u8,
    uniform: bool,
) -> Result<(), DropReason> {
    // (the version first: a payload of the other family is named as such,
    // however short)
    if family_at(buf, ip)? == Family::Ip6 {
        return Err(DropReason::Ip6UnderIp4);
    }
    let Some(h) = buf.get_mut(ip..ip + wire::ipv4::HEADER_LEN) else {
        return Err(DropReason::Truncated);
    };
    if uniform && h[8] != ttl {
        let old = u16::from_be_bytes([h[8], h[9]]);
        let new = u16::from_be_bytes([ttl, h[9]]);
        let c = checksum::update_u16(u16::from_be_bytes([h[10], h[11]]), old, new);
        h[8] = ttl;
        h[10..12].copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}

//= RFC 3443 §3.1 (uniform), applied to IPv6 as RFC 4798 §3 carries it: the hop
//= limit of the exposed header is set from the label TTL; IPv6 has no header
//= checksum to fix.
/// Validates the IPv6 header exposed at `ip` (a packet whose payload length
/// ends past the buffer is cut short: a penultimate hop sends it as it is) and,
/// for the uniform model, sets its hop limit to `ttl`.
#[inline(always)]
pub(crate) fn dispose_ip6(
    buf: &mut [u8],
    ip: usize,
    ttl: u8,
    uniform: bool,
) -> Result<(), DropReason> {
    if family_at(buf, ip)? == Family::Ip4 {
        return Err(DropReason::Ip4UnderIp6);
    }
    let room = buf.len().saturating_sub(ip);
    let Some(h) = buf.get_mut(ip..ip + wire::ipv6::HEADER_LEN) else {
        return Err(DropReason::Truncated);
    };
    if wire::ipv6::HEADER_LEN + usize::from(u16::from_be_bytes([h[4], h[5]])) > room {
        return Err(DropReason::Truncated);
    }
    if uniform {
        h[7] = ttl;
    }
    Ok(())
}

/// [`dispose_ip4`] or [`dispose_ip6`] as the version nibble at `ip` says; the
/// family it found.
#[inline(always)]
pub(crate) fn dispose_any(
    buf: &mut [u8],
    ip: usize,
    ttl: u8,
    uniform: bool,
) -> Result<Family, DropReason> {
    match family_at(buf, ip)? {
        Family::Ip4 => dispose_ip4(buf, ip, ttl, uniform).map(|()| Family::Ip4),
        Family::Ip6 => dispose_ip6(buf, ip, ttl, uniform).map(|()| Family::Ip6),
    }
}
