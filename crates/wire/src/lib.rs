//! Zero-copy views of the wire formats the dataplane speaks: Ethernet II with 802.1Q,
//! ARP, IPv4, ICMPv4 (with RFC 4884 extensions), IPv6 with its extension-header chain,
//! ICMPv6, neighbour solicitations and advertisements, UDP, MPLS label stack entries,
//! and the Internet checksum with RFC 1624 incremental updates and the IPv4 and IPv6
//! pseudo-headers.
//!
//! Every view follows the same shape (smoltcp's `wire`): a struct wrapping a buffer
//! `T: AsRef<[u8]>`, built with `new_checked` on received bytes (which calls
//! `check_len`, after which every accessor indexes in bounds) or `new_unchecked` when
//! emitting into a buffer the caller sized with `Repr::buffer_len`. Accessors read the
//! fields straight from the buffer; setters need `T: AsMut<[u8]>`. `Repr` types are
//! owned, parsed or emitted forms for the control plane and tests, not for the packet
//! path.
//!
//! The crate is `no_std`, never allocates and has no `unsafe`.
#![forbid(unsafe_code)]
#![no_std]

#[cfg(test)]
extern crate std;

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod mpls;
pub mod nd;
pub mod udp;

pub use arp::{ArpHardware, ArpOperation, ArpPacket, ArpRepr};
pub use core::net::{Ipv4Addr, Ipv6Addr};
pub use ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanRepr, VlanTag};
pub use icmpv4::{
    DstUnreachable, IcmpExtHeader, IcmpExtObject, Icmpv4Message, Icmpv4Packet, Icmpv4Repr,
    TimeExceeded,
};
pub use icmpv6::{Icmpv6Message, Icmpv6Packet, Icmpv6Repr};
pub use ipv4::{IpProtocol, Ipv4Packet, Ipv4Repr};
pub use ipv6::{ExtHeaders, FragmentInfo, Ipv6Packet, Ipv6Repr};
pub use mpls::{Label, LabelStack, Lse, LseRepr};
pub use nd::{NdError, NdOption, NdOptionType, NdOptions, NdRepr, NeighborPacket};
pub use udp::{UdpPacket, UdpRepr};

/// Why a buffer could not be viewed or parsed as a given header.
///
/// Small and `Copy`: on the packet path a malformed header is a counter and a drop, so
/// the error carries no data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireError {
    /// The buffer is shorter than the header, or than a length field says.
    Truncated,
    /// A version field holds a value this view does not handle.
    BadVersion,
    /// A header-length field is below the minimum or points past the buffer.
    BadHeaderLen,
    /// A length field is inconsistent (for example IPv4 total length below the header,
    /// an IPv6 payload length past the buffer, or a zero-length neighbour discovery
    /// option).
    BadLength,
    /// A checksum does not verify.
    BadChecksum,
    /// A next-header field names a header that may not stand there (an IPv6
    /// hop-by-hop options header anywhere but right after the fixed header).
    BadNextHeader,
    /// The header is well formed but describes something this crate does not model
    /// (for example ARP for a non-Ethernet hardware type in `ArpRepr`).
    Unsupported,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "truncated",
            WireError::BadVersion => "bad version",
            WireError::BadHeaderLen => "bad header length",
            WireError::BadLength => "bad length field",
            WireError::BadChecksum => "bad checksum",
            WireError::BadNextHeader => "bad next header",
            WireError::Unsupported => "unsupported",
        })
    }
}

impl core::error::Error for WireError {}

/// Result of parsing with [`WireError`].
pub type Result<T> = core::result::Result<T, WireError>;

/// Reads a big-endian `u16` at `at`; the caller guarantees `at + 2 <= buf.len()`
/// (views call this only after `check_len`).
#[inline(always)]
pub(crate) fn be16(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([buf[at], buf[at + 1]])
}

/// Reads a big-endian `u32` at `at`; bounds as for [`be16`].
#[inline(always)]
pub(crate) fn be32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

/// Writes a big-endian `u16` at `at`.
#[inline(always)]
pub(crate) fn put16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Writes a big-endian `u32` at `at`.
#[inline(always)]
pub(crate) fn put32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Bytes from a hex string (test vectors pasted from packet dumps).
#[cfg(test)]
pub(crate) fn from_hex(s: &str) -> std::vec::Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}
