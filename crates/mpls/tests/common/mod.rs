//! Helpers shared by the integration tests: hex frames with headroom and an L2
//! rewrite like the pipeline's.
#![allow(dead_code, unreachable_pub)]

use wire::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};

/// Headroom in front of every test frame (DPDK's default is 128).
pub const HEADROOM: usize = 64;

/// MACs of the "previous hop" (source of received frames) and of us.
pub const PREV: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
pub const US: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
/// MAC of the next hop our adjacency points at.
pub const NEXT: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 3]);

/// Parses hex, ignoring whitespace.
pub fn hex(s: &str) -> Vec<u8> {
    let d: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    d.chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect()
}

/// A received frame in a buffer with [`HEADROOM`]; returns the buffer and the
/// layer-3 offset (after the 14-byte Ethernet header).
pub fn rx(frame_hex: &str) -> (Vec<u8>, usize) {
    let f = hex(frame_hex);
    let mut b = vec![0u8; HEADROOM];
    b.extend_from_slice(&f);
    (b, HEADROOM + 14)
}

/// The pipeline's rewrite stage: writes the adjacency's Ethernet header in front of
/// `off` and returns the frame as it leaves.
pub fn tx(buf: &mut [u8], off: usize, ethertype: EtherType) -> Vec<u8> {
    let start = off - 14;
    EthernetRepr {
        src_addr: US,
        dst_addr: NEXT,
        ethertype,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut buf[start..]));
    buf[start..].to_vec()
}

/// Ethernet header hex of a frame from PREV to US.
pub fn eth_rx(ethertype: &str) -> String {
    format!("020000000002 020000000001 {ethertype}")
}

/// Ethernet header hex of a frame from US to NEXT.
pub fn eth_tx(ethertype: &str) -> String {
    format!("020000000003 020000000002 {ethertype}")
}

/// IPv4/UDP 16.0.0.1:1024 -> 48.0.0.1:33434 "ping", ident 0x1234, DF, with the TTL
/// given and its checksum (precomputed: 64 e897, 63 e997, 62 ea97, 9 1f98, 1 2798).
pub fn ip4(ttl: u8) -> String {
    let csum = match ttl {
        64 => "e897",
        63 => "e997",
        62 => "ea97",
        9 => "1f98",
        1 => "2798",
        _ => panic!("no precomputed checksum for TTL {ttl}"),
    };
    format!("45000020 12344000 {ttl:02x}11{csum} 10000001 30000001 0400829a 000c5a69 7069 6e67")
}
