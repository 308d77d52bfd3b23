//! Label stack words in a frame buffer, and the IPv4 header a pop exposes.

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
    let Some(h) = buf.get_mut(ip..ip + wire::ipv4::HEADER_LEN) else {
        return Err(DropReason::Truncated);
    };
    match h[0] >> 4 {
        4 => {}
        6 => return Err(DropReason::Ip6NotSupported),
        _ => return Err(DropReason::NotIpv4),
    }
    if uniform && h[8] != ttl {
        let old = u16::from_be_bytes([h[8], h[9]]);
        let new = u16::from_be_bytes([ttl, h[9]]);
        let c = checksum::update_u16(u16::from_be_bytes([h[10], h[11]]), old, new);
        h[8] = ttl;
        h[10..12].copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}
