//! The Internet checksum and its incremental update.
//!
//! The checksum is the 16-bit one's complement of the one's complement sum of the data
//! taken as big-endian 16-bit words (RFC 1071). [`data`] returns the folded sum, not
//! complemented, so partial sums can be combined with [`combine`]; [`checksum`]
//! returns the value to put into a header.
//!
//! Forwarding changes one or two header fields (TTL, a label TTL copied into IPv4), and
//! recomputing the whole header sum for that would waste cycles. [`update_u16`]
//! applies RFC 1624 equation 3 instead.
//!
//! Transport and ICMPv6 checksums also cover a pseudo-header of the IP addresses:
//! [`pseudo_header_v4`] and [`pseudo_header_v6`] return its sum for [`combine`].

use core::net::{Ipv4Addr, Ipv6Addr};

/// Adds the big-endian 16-bit words of `data` into a 64-bit accumulator without
/// folding. An odd trailing byte counts as the high byte of a word padded with zero.
#[inline]
pub fn sum(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        // Adding the two 32-bit halves keeps carries inside the 64-bit accumulator for
        // any packet size this crate sees (< 2^32 words).
        acc += (w >> 32) + (w & 0xffff_ffff);
    }
    let mut rest = chunks.remainder().chunks_exact(2);
    for c in &mut rest {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [b] = rest.remainder() {
        acc += u64::from(*b) << 8;
    }
    acc
}

/// Folds a 64-bit accumulator from [`sum`] into a 16-bit one's complement sum.
#[inline]
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The one's complement sum of `data` (not complemented).
#[inline]
pub fn data(data: &[u8]) -> u16 {
    fold(sum(0, data))
}

/// Combines partial sums from [`data`] (for example a pseudo-header and a payload).
#[inline]
pub fn combine(parts: &[u16]) -> u16 {
    fold(parts.iter().map(|&p| u64::from(p)).sum())
}

/// The checksum of `data`: what goes into a header whose checksum field is zero
/// while summing.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !self::data(data)
}

/// Whether `data` (which includes its checksum field) verifies: its sum is `0xffff`.
#[inline]
pub fn verify(data: &[u8]) -> bool {
    self::data(data) == 0xffff
}

//= RFC 768 (UDP), RFC 793 §3.1 (TCP): the IPv4 pseudo-header.
/// The one's complement sum of the IPv4 pseudo-header used by UDP and TCP checksums:
/// source, destination, zero, protocol, and the transport length.
#[inline]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u16 {
    let mut acc = sum(0, &src.octets());
    acc = sum(acc, &dst.octets());
    acc += u64::from(protocol) + u64::from(length);
    fold(acc)
}

//= RFC 8200 §8.1: the IPv6 pseudo-header is the source address, the destination
//= address (the final one when a routing header is present), the upper-layer packet
//= length as 32 bits, three zero octets and the next header.
/// The one's complement sum of the IPv6 pseudo-header used by UDP, TCP and ICMPv6
/// checksums: source, destination, the upper-layer length (header and data, without
/// the extension headers before it) and the upper-layer protocol.
#[inline]
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: u32) -> u16 {
    let mut acc = sum(0, &src.octets());
    acc = sum(acc, &dst.octets());
    acc += u64::from(length >> 16) + u64::from(length & 0xffff) + u64::from(next_header);
    fold(acc)
}

//= RFC 1624 §3, equation 3: HC' = ~(~HC + ~m + m')
/// Updates checksum `hc` for one 16-bit field changing from `old` to `new`.
///
/// Equation 3 of RFC 1624 works for every input, including the cases where
/// equation 2 of RFC 1141 yields -0 (0xffff) wrongly.
#[inline(always)]
pub fn update_u16(hc: u16, old: u16, new: u16) -> u16 {
    let s = u32::from(!hc) + u32::from(!old) + u32::from(new);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// Updates checksum `hc` for a 32-bit field (two adjacent 16-bit words, for example an
/// IPv4 address) changing from `old` to `new`; RFC 1624 equation 3 applied twice.
#[inline]
pub fn update_u32(hc: u16, old: u32, new: u32) -> u16 {
    let hc = update_u16(hc, (old >> 16) as u16, (new >> 16) as u16);
    update_u16(hc, old as u16, new as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // RFC 1071 §3 example: the words 0001 f203 f4f5 f6f7 sum to ddf2.
    static RFC1071_BYTES: [u8; 8] = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];

    #[test]
    fn test_rfc1071_example() {
        assert_eq!(data(&RFC1071_BYTES), 0xddf2);
        assert_eq!(checksum(&RFC1071_BYTES), !0xddf2);
    }

    #[test]
    fn test_odd_length() {
        assert_eq!(data(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    //= RFC 1624 §4: the worked example with HC = 0xDD2F, m = 0x5555 -> m' = 0x3285
    // gives HC' = 0x0000 with equation 3 (equation 2 wrongly gives 0xFFFF).
    #[test]
    fn test_rfc1624_example() {
        assert_eq!(update_u16(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    // UDP 1024 -> 33434 "ping" from 2001:db8::1 to 2001:db8:1::1; scapy puts
    // 0x3ef6 in the checksum field.
    #[test]
    fn test_pseudo_header_v6() {
        let src = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
        let dst = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);
        let udp = [
            0x04, 0x00, 0x82, 0x9a, 0x00, 0x0c, 0x00, 0x00, 0x70, 0x69, 0x6e, 0x67,
        ];
        // 2001+0db8+0001 + 2001+0db8+0001+0001 + 000c + 0011 = 0x5b92
        assert_eq!(pseudo_header_v6(src, dst, 17, 12), 0x5b92);
        assert_eq!(
            !combine(&[pseudo_header_v6(src, dst, 17, 12), data(&udp)]),
            0x3ef6
        );
        // The length is 32 bits: its high half counts.
        assert_eq!(
            pseudo_header_v6(src, dst, 17, 0x1_000c),
            combine(&[0x5b92, 1])
        );
    }

    proptest! {
        #[test]
        fn prop_incremental_matches_full(
            mut bytes in proptest::collection::vec(any::<u8>(), 4..64),
            at in 0usize..30,
            new in any::<u16>(),
        ) {
            if bytes.len() % 2 == 1 { bytes.pop(); }
            let at = (at * 2) % (bytes.len() - 2);
            // checksum field lives at the last word
            let n = bytes.len();
            bytes[n - 2] = 0;
            bytes[n - 1] = 0;
            let c = checksum(&bytes);
            bytes[n - 2..].copy_from_slice(&c.to_be_bytes());
            prop_assert!(verify(&bytes));
            let old = u16::from_be_bytes([bytes[at], bytes[at + 1]]);
            bytes[at..at + 2].copy_from_slice(&new.to_be_bytes());
            // Data of zero words only has two checksums in one's complement (0x0000 and
            // 0xffff) and equation 3 can yield the one that does not verify. No header
            // the router updates is all zero (IPv4's version, a label's S bit or TTL).
            prop_assume!(bytes[..n - 2].iter().any(|&b| b != 0));
            let c2 = update_u16(c, old, new);
            bytes[n - 2..].copy_from_slice(&c2.to_be_bytes());
            prop_assert!(verify(&bytes));
        }

        #[test]
        fn prop_sum_matches_naive(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut acc: u32 = 0;
            for c in bytes.chunks(2) {
                let w = if c.len() == 2 { u16::from_be_bytes([c[0], c[1]]) } else { u16::from(c[0]) << 8 };
                acc += u32::from(w);
                acc = (acc & 0xffff) + (acc >> 16);
            }
            prop_assert_eq!(u32::from(data(&bytes)), acc);
        }
    }
}
