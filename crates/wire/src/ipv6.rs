//! IPv6 (RFC 8200): the fixed header, the walk over extension headers to the upper
//! layer, and the addresses neighbour discovery sends to (the solicited-node group of
//! RFC 4291 and its Ethernet group address, RFC 2464).

use crate::ethernet::EthernetAddress;
use crate::ipv4::IpProtocol;
use crate::{Result, WireError, be16, be32, put16, put32};
use core::net::Ipv6Addr;

//= RFC 8200 §3: Version(4) Traffic Class(8) Flow Label(20) Payload Length(16)
//= Next Header(8) Hop Limit(8) Source Address(128) Destination Address(128)
/// Byte offsets of the IPv6 header fields.
pub mod field {
    /// Version, traffic class and flow label (one 32-bit word).
    pub const VER_TC_FLOW: usize = 0;
    /// Payload length.
    pub const LENGTH: usize = 4;
    /// Next header.
    pub const NEXT_HEADER: usize = 6;
    /// Hop limit.
    pub const HOP_LIMIT: usize = 7;
    /// Source address.
    pub const SRC_ADDR: usize = 8;
    /// Destination address.
    pub const DST_ADDR: usize = 24;
}

/// Length of the IPv6 fixed header.
pub const HEADER_LEN: usize = 40;

//= RFC 8200 §5: "IPv6 requires that every link in the Internet have an MTU of 1280
//= octets or greater."
/// The IPv6 minimum link MTU.
pub const MIN_MTU: usize = 1280;

/// Most extension headers [`walk_ext_headers`] follows before it gives up.
pub const MAX_EXT_HEADERS: usize = 8;

//= RFC 4291 §2.7.1: FF02:0:0:0:0:0:0:1 all-nodes, FF02:0:0:0:0:0:0:2 all-routers
//= (link-local scope).
/// The link-local all-nodes group, `ff02::1`.
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// The link-local all-routers group, `ff02::2`.
pub const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

/// Reads the 16-byte address at `at`; the caller guarantees `at + 16 <= buf.len()`.
#[inline]
pub(crate) fn addr_at(buf: &[u8], at: usize) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&buf[at..at + 16]);
    Ipv6Addr::from(o)
}

//= RFC 4291 §2.7.1: the solicited-node address is FF02:0:0:0:0:1:FF00::/104 followed
//= by the low-order 24 bits of the unicast or anycast address.
/// The solicited-node multicast group of `addr`, `ff02::1:ffXX:XXXX`.
pub const fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | o[13] as u16,
        ((o[14] as u16) << 8) | o[15] as u16,
    )
}

/// Whether `addr` is a solicited-node multicast group (in `ff02::1:ff00:0/104`).
pub fn is_solicited_node(addr: Ipv6Addr) -> bool {
    addr.octets()[..13] == [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff]
}

//= RFC 2464 §7: an IPv6 packet to multicast address DST goes to the Ethernet address
//= whose first two octets are 3333 and whose last four are the last four of DST.
/// The Ethernet group address `33:33:xx:xx:xx:xx` that carries IPv6 multicast
/// address `addr` (meaningful for multicast addresses only).
pub const fn multicast_mac(addr: Ipv6Addr) -> EthernetAddress {
    let o = addr.octets();
    EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

/// A view of an IPv6 packet.
///
/// `check_len` guarantees: the buffer holds the 40-byte fixed header (else
/// [`WireError::Truncated`]), the version is 6 (else [`WireError::BadVersion`]; unlike
/// IPv4 the check costs nothing more, the byte is read anyway), and the payload length
/// fits the buffer (else [`WireError::BadLength`]). The buffer may be longer (Ethernet
/// padding): [`payload`](Self::payload) ends where the payload length says. Jumbograms
/// (payload length 0 and an RFC 2675 option) are not modelled: their payload looks
/// empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Ipv6Packet<T> {
        Ipv6Packet { buffer }
    }

    /// Wraps `buffer` and runs [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Ipv6Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the fixed header, the version and the payload length against the buffer
    /// (see the type docs).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if self.version() != 6 {
            return Err(WireError::BadVersion);
        }
        if HEADER_LEN + usize::from(self.payload_len()) > len {
            return Err(WireError::BadLength);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version field (6 for IPv6).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_TC_FLOW] >> 4
    }

    /// Traffic class (8 bits: DSCP and ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (be16(self.buffer.as_ref(), field::VER_TC_FLOW) >> 4) as u8
    }

    /// Differentiated services code point (the high 6 bits of the traffic class).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// Explicit congestion notification (the low 2 bits of the traffic class).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        be32(self.buffer.as_ref(), field::VER_TC_FLOW) & 0x000f_ffff
    }

    /// Payload length: the bytes after the fixed header, extension headers included.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Next header: the first extension header or the upper-layer protocol.
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NEXT_HEADER])
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        addr_at(self.buffer.as_ref(), field::SRC_ADDR)
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        addr_at(self.buffer.as_ref(), field::DST_ADDR)
    }

    /// The payload: from the end of the fixed header to the payload length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }

    /// Walks the extension headers (see [`walk_ext_headers`]); the offsets of the
    /// answer count from the start of the fixed header.
    pub fn ext_headers(&self) -> Result<ExtHeaders> {
        let end = HEADER_LEN + usize::from(self.payload_len());
        walk_ext_headers(&self.buffer.as_ref()[..end], self.next_header(), HEADER_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets the version (6), keeping traffic class and flow label.
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let b = self.buffer.as_mut();
        b[field::VER_TC_FLOW] = (v << 4) | (b[field::VER_TC_FLOW] & 0x0f);
    }
    /// Sets the traffic class, keeping version and flow label.
    #[inline]
    pub fn set_traffic_class(&mut self, tc: u8) {
        let b = self.buffer.as_mut();
        let w = be32(b, field::VER_TC_FLOW) & 0xf00f_ffff;
        put32(b, field::VER_TC_FLOW, w | (u32::from(tc) << 20))
    }
    /// Sets the flow label (20 bits), keeping version and traffic class.
    #[inline]
    pub fn set_flow_label(&mut self, fl: u32) {
        let b = self.buffer.as_mut();
        let w = be32(b, field::VER_TC_FLOW) & 0xfff0_0000;
        put32(b, field::VER_TC_FLOW, w | (fl & 0x000f_ffff))
    }
    /// Sets the payload length.
    #[inline]
    pub fn set_payload_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v)
    }
    /// Sets the next header.
    #[inline]
    pub fn set_next_header(&mut self, v: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = v.into()
    }
    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v
    }
    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR..field::SRC_ADDR + 16].copy_from_slice(&a.octets())
    }
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR..field::DST_ADDR + 16].copy_from_slice(&a.octets())
    }

    //= RFC 8200 §3: the hop limit is "decremented by 1 by each node that forwards the
    //= packet"; RFC 4443 §3.3: a router that receives a hop limit of zero, or
    //= decrements it to zero, discards the packet.
    /// Decrements the hop limit (IPv6 has no header checksum to update). Returns the
    /// new hop limit, or `None` (and leaves the packet untouched) when the received
    /// hop limit is 0 or 1.
    #[inline]
    pub fn decrement_hop_limit(&mut self) -> Option<u8> {
        let hl = self.hop_limit();
        if hl <= 1 {
            return None;
        }
        self.set_hop_limit(hl - 1);
        Some(hl - 1)
    }

    /// The payload, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// A fragment header met on the extension-header walk (RFC 8200 §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentInfo {
    /// Where the fragment header starts in the walked buffer.
    pub header_at: usize,
    /// Fragment offset in bytes (the 13-bit field × 8).
    pub offset: u16,
    /// The M (more fragments) flag.
    pub more_frags: bool,
    /// Identification.
    pub ident: u32,
}

impl FragmentInfo {
    /// Whether this is the first fragment (offset 0), the only one whose payload starts
    /// with the upper-layer header.
    pub const fn is_first(&self) -> bool {
        self.offset == 0
    }

    //= RFC 6946 §3: a fragment header with offset 0 and M clear is an "atomic
    //= fragment", a whole packet.
    /// Whether this is an atomic fragment (offset 0, M clear): a whole packet.
    pub const fn is_atomic(&self) -> bool {
        self.offset == 0 && !self.more_frags
    }
}

/// What [`walk_ext_headers`] found between the fixed header and the upper layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtHeaders {
    /// The upper-layer protocol: the first next-header value that is not an extension
    /// header the walk follows ([`IpProtocol::Ipv6NoNxt`] when the chain says nothing
    /// follows, [`IpProtocol::Esp`] for ESP, whose header the walk cannot see past).
    pub upper_layer: IpProtocol,
    /// Where the upper-layer header starts in the walked buffer. For a fragment other
    /// than the first ([`FragmentInfo::is_first`] false) the bytes there are the middle
    /// of the original payload, not a header.
    pub upper_at: usize,
    /// Whether a hop-by-hop options header leads the chain.
    pub hop_by_hop: bool,
    /// The first fragment header of the chain, if any.
    pub fragment: Option<FragmentInfo>,
    /// How many extension headers the chain holds.
    pub count: usize,
}

/// Hdr Ext Len unit of hop-by-hop, routing and destination options headers.
const EXT_UNIT: usize = 8;
/// Length of the fragment header.
const FRAG_HEADER_LEN: usize = 8;

//= RFC 8200 §4: extension headers are chained by their Next Header field, from the
//= fixed header's, and examined in order; §4.1: hop-by-hop options may only stand
//= right after the fixed header.
/// Walks the extension headers of an IPv6 packet from `first` (the fixed header's next
/// header) over `buf` starting at `start` (the end of the fixed header when `buf` is the
/// packet) to the upper layer.
///
/// Follows hop-by-hop options (0), routing (43), fragment (44), destination options
/// (60) and authentication (51, RFC 4302) headers; any other value ends the walk and is
/// the upper layer, no-next-header (59) included. A fragment other than the first ends
/// the walk at its fragment header. At most [`MAX_EXT_HEADERS`] headers are followed,
/// so the walk always ends and never reads outside `buf`.
///
/// Errors: [`WireError::Truncated`] when a header runs past `buf`,
/// [`WireError::BadNextHeader`] for a hop-by-hop header that does not lead the chain,
/// [`WireError::Unsupported`] for a chain of more than [`MAX_EXT_HEADERS`] headers.
pub fn walk_ext_headers(buf: &[u8], first: IpProtocol, start: usize) -> Result<ExtHeaders> {
    let mut w = ExtHeaders {
        upper_layer: first,
        upper_at: start,
        hop_by_hop: false,
        fragment: None,
        count: 0,
    };
    let mut next = first;
    let mut at = start;
    loop {
        let len = match next {
            //= RFC 8200 §4.3, §4.4, §4.6: Hdr Ext Len counts 8-octet units, not
            //= including the first 8 octets.
            IpProtocol::HopByHop | IpProtocol::Ipv6Route | IpProtocol::Ipv6Opts => {
                let l = buf.get(at + 1).ok_or(WireError::Truncated)?;
                (usize::from(*l) + 1) * EXT_UNIT
            }
            IpProtocol::Ipv6Frag => FRAG_HEADER_LEN,
            //= RFC 4302 §2.2: Payload Len is the AH length in 4-octet units minus 2.
            IpProtocol::Ah => {
                let l = buf.get(at + 1).ok_or(WireError::Truncated)?;
                (usize::from(*l) + 2) * 4
            }
            _ => break,
        };
        if next == IpProtocol::HopByHop && w.count != 0 {
            return Err(WireError::BadNextHeader);
        }
        if w.count == MAX_EXT_HEADERS {
            return Err(WireError::Unsupported);
        }
        let h = buf.get(at..at + len).ok_or(WireError::Truncated)?;
        w.count += 1;
        let this = next;
        next = IpProtocol::from(h[0]);
        let here = at;
        at += len;
        match this {
            IpProtocol::HopByHop => w.hop_by_hop = true,
            //= RFC 8200 §4.5: Next Header(8) Reserved(8) Fragment Offset(13) Res(2)
            //= M(1) Identification(32); the offset is in 8-octet units.
            IpProtocol::Ipv6Frag => {
                let off_m = be16(h, 2);
                let frag = FragmentInfo {
                    header_at: here,
                    offset: off_m & 0xfff8,
                    more_frags: off_m & 1 != 0,
                    ident: be32(h, 4),
                };
                if w.fragment.is_none() {
                    w.fragment = Some(frag);
                }
                if !frag.is_first() {
                    break;
                }
            }
            _ => {}
        }
    }
    w.upper_layer = next;
    w.upper_at = at;
    Ok(w)
}

/// Owned form of an IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Next header.
    pub next_header: IpProtocol,
    /// Payload length in bytes (extension headers included).
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Parses a packet: checks lengths and the version.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<Ipv6Repr> {
        p.check_len()?;
        Ok(Ipv6Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            next_header: p.next_header(),
            payload_len: usize::from(p.payload_len()),
            hop_limit: p.hop_limit(),
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
        })
    }

    /// Length of the emitted header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header (40 bytes) into `p`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv6Packet<T>) {
        put32(
            p.buffer.as_mut(),
            field::VER_TC_FLOW,
            (6 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & 0x000f_ffff),
        );
        p.set_payload_len(self.payload_len as u16);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const DST: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);

    // 2001:db8::1 -> 2001:db8:1::1, hop limit 64, UDP 1024 -> 33434 "ping" (scapy).
    static PACKET_BYTES: [u8; 52] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x00, 0x82, 0x9a, 0x00,
        0x0c, 0x3e, 0xf6, 0x70, 0x69, 0x6e, 0x67,
    ];

    // 2001:db8::1 -> 2001:db8::2: hop-by-hop (router alert, PadN), routing (type 0,
    // one address), fragment (offset 0, M, ident 0x12345678), destination options
    // (PadN), then UDP 1 -> 2 "hi" (scapy).
    static EXT_BYTES: [u8; 98] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x3a, 0x00, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x2b, 0x00, 0x05, 0x02, 0x00,
        0x00, 0x01, 0x00, 0x2c, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x3c, 0x00, 0x00,
        0x01, 0x12, 0x34, 0x56, 0x78, 0x11, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x02, 0x00, 0x0a, 0x3b, 0xf8, 0x68, 0x69,
    ];

    // 2001:db8::1 -> 2001:db8::2, AH (next header 58, SPI 0x100, seq 1, 12-byte ICV),
    // then an ICMPv6 echo request id 1 seq 1 (scapy).
    static AH_BYTES: [u8; 72] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x33, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x3a, 0x04, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x24, 0x46, 0x00, 0x01, 0x00, 0x01,
    ];

    fn repr() -> Ipv6Repr {
        Ipv6Repr {
            src_addr: SRC,
            dst_addr: DST,
            next_header: IpProtocol::Udp,
            payload_len: 12,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Ipv6Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0);
        assert_eq!(p.flow_label(), 0);
        assert_eq!(p.payload_len(), 12);
        assert_eq!(p.next_header(), IpProtocol::Udp);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), SRC);
        assert_eq!(p.dst_addr(), DST);
        assert_eq!(p.payload(), &PACKET_BYTES[40..]);
        let e = p.ext_headers().unwrap();
        assert_eq!(e.upper_layer, IpProtocol::Udp);
        assert_eq!(e.upper_at, 40);
        assert_eq!(e.count, 0);
        assert!(!e.hop_by_hop);
        assert_eq!(e.fragment, None);
    }

    #[test]
    fn test_construct() {
        let mut b = [0xa5u8; 52];
        let mut p = Ipv6Packet::new_unchecked(&mut b[..]);
        repr().emit(&mut p);
        p.payload_mut().copy_from_slice(&PACKET_BYTES[40..]);
        assert_eq!(&b[..], &PACKET_BYTES[..]);
    }

    #[test]
    fn test_parse_repr() {
        let p = Ipv6Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn test_traffic_class_and_flow_label() {
        let mut b = PACKET_BYTES;
        let mut p = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        p.set_traffic_class(0xb9); // DSCP 46 (EF), ECN 1
        p.set_flow_label(0x1_2345);
        assert_eq!(&b[..4], &[0x6b, 0x91, 0x23, 0x45]);
        let mut p = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        assert_eq!((p.version(), p.dscp(), p.ecn()), (6, 46, 1));
        assert_eq!(p.flow_label(), 0x1_2345);
        p.set_flow_label(0xfff_ffff);
        assert_eq!((p.traffic_class(), p.flow_label()), (0xb9, 0xf_ffff));
        p.set_version(6);
        assert_eq!(p.traffic_class(), 0xb9);
    }

    #[test]
    fn test_parse_errors() {
        let b = PACKET_BYTES;
        assert_eq!(Ipv6Packet::new_checked(&b[..39]), Err(WireError::Truncated));
        assert_eq!(Ipv6Packet::new_checked(&b[..51]), Err(WireError::BadLength));
        let mut x = b;
        x[0] = 0x45;
        assert_eq!(Ipv6Packet::new_checked(&x[..]), Err(WireError::BadVersion));
        // Ethernet padding after the payload is not payload.
        let mut padded = [0u8; 60];
        padded[..52].copy_from_slice(&b);
        let p = Ipv6Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.payload(), &b[40..]);
    }

    #[test]
    fn test_decrement_hop_limit() {
        let mut b = PACKET_BYTES;
        let mut p = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        assert_eq!(p.decrement_hop_limit(), Some(63));
        p.set_hop_limit(1);
        assert_eq!(p.decrement_hop_limit(), None);
        assert_eq!(p.hop_limit(), 1);
        p.set_hop_limit(0);
        assert_eq!(p.decrement_hop_limit(), None);
    }

    #[test]
    fn test_ext_walk() {
        let p = Ipv6Packet::new_checked(&EXT_BYTES[..]).unwrap();
        let e = p.ext_headers().unwrap();
        assert_eq!(e.upper_layer, IpProtocol::Udp);
        assert_eq!(e.upper_at, 88);
        assert_eq!(e.count, 4);
        assert!(e.hop_by_hop);
        assert_eq!(
            e.fragment,
            Some(FragmentInfo {
                header_at: 72,
                offset: 0,
                more_frags: true,
                ident: 0x1234_5678
            })
        );
        assert!(e.fragment.unwrap().is_first());
        assert!(!e.fragment.unwrap().is_atomic());
        assert_eq!(&EXT_BYTES[e.upper_at..e.upper_at + 4], &[0, 1, 0, 2]);
    }

    #[test]
    fn test_ext_walk_ah() {
        let p = Ipv6Packet::new_checked(&AH_BYTES[..]).unwrap();
        let e = p.ext_headers().unwrap();
        assert_eq!(
            (e.upper_layer, e.upper_at, e.count),
            (IpProtocol::Icmpv6, 64, 1)
        );
        assert_eq!(AH_BYTES[e.upper_at], 128);
    }

    #[test]
    fn test_ext_walk_non_first_fragment() {
        // The fragment header says offset 1448, M clear: the walk stops after it.
        let mut b = EXT_BYTES;
        b[74..76].copy_from_slice(&(1448u16).to_be_bytes());
        let e = Ipv6Packet::new_checked(&b[..])
            .unwrap()
            .ext_headers()
            .unwrap();
        assert_eq!(e.upper_layer, IpProtocol::Ipv6Opts);
        assert_eq!(e.upper_at, 80);
        assert_eq!(e.count, 3);
        let f = e.fragment.unwrap();
        assert_eq!((f.offset, f.more_frags, f.is_first()), (1448, false, false));
    }

    #[test]
    fn test_ext_walk_no_next_header() {
        // Destination options whose next header is 59: nothing follows.
        let mut b = EXT_BYTES;
        b[80] = 59;
        let e = Ipv6Packet::new_checked(&b[..])
            .unwrap()
            .ext_headers()
            .unwrap();
        assert_eq!((e.upper_layer, e.upper_at), (IpProtocol::Ipv6NoNxt, 88));
    }

    #[test]
    fn test_ext_walk_errors() {
        // The chain runs past the payload: cut the payload length to 40 (the
        // destination options header ends at 88 > 80).
        let mut b = EXT_BYTES;
        b[5] = 40;
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.ext_headers(), Err(WireError::Truncated));
        // A routing header claiming 2 KiB.
        let mut b = EXT_BYTES;
        b[49] = 0xff;
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.ext_headers(), Err(WireError::Truncated));
        // Hop-by-hop after the routing header.
        let mut b = EXT_BYTES;
        b[48] = 0;
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.ext_headers(), Err(WireError::BadNextHeader));
        // Nine destination options headers in a row.
        let mut b = [0u8; HEADER_LEN + 9 * 8 + 8];
        b[..HEADER_LEN].copy_from_slice(&PACKET_BYTES[..HEADER_LEN]);
        b[4..6].copy_from_slice(&((9 * 8 + 8) as u16).to_be_bytes());
        b[6] = 60;
        for i in 0..9 {
            b[HEADER_LEN + 8 * i] = if i == 8 { 17 } else { 60 };
        }
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.ext_headers(), Err(WireError::Unsupported));
        // Eight are fine.
        b[HEADER_LEN + 8 * 7] = 17;
        let e = Ipv6Packet::new_checked(&b[..])
            .unwrap()
            .ext_headers()
            .unwrap();
        assert_eq!(
            (e.upper_layer, e.upper_at, e.count),
            (IpProtocol::Udp, 104, 8)
        );
    }

    #[test]
    fn test_multicast_addresses() {
        let a = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0xab12, 0x3456);
        let s = solicited_node(a);
        assert_eq!(s, Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff12, 0x3456));
        assert!(is_solicited_node(s));
        assert!(!is_solicited_node(a));
        assert!(!is_solicited_node(ALL_NODES));
        assert_eq!(
            multicast_mac(s),
            EthernetAddress([0x33, 0x33, 0xff, 0x12, 0x34, 0x56])
        );
        assert_eq!(
            multicast_mac(ALL_ROUTERS),
            EthernetAddress([0x33, 0x33, 0, 0, 0, 2])
        );
        assert!(multicast_mac(ALL_NODES).is_multicast());
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(p) = Ipv6Packet::new_checked(&bytes[..]) {
                let _ = (p.version(), p.traffic_class(), p.flow_label(), p.payload().len());
                let _ = (p.src_addr(), p.dst_addr(), p.next_header(), p.hop_limit());
                let _ = p.ext_headers();
                let _ = Ipv6Repr::parse(&p);
            }
        }

        #[test]
        fn prop_ext_walk_terminates_in_bounds(
            first in prop_oneof![Just(0u8), Just(43), Just(44), Just(51), Just(60), any::<u8>()],
            // Bytes biased towards extension-header numbers so chains get long.
            bytes in proptest::collection::vec(
                prop_oneof![Just(0u8), Just(43), Just(44), Just(51), Just(59), Just(60), any::<u8>()],
                0..200,
            ),
            start in 0usize..8,
        ) {
            if let Ok(e) = walk_ext_headers(&bytes, IpProtocol::from(first), start) {
                prop_assert!(e.upper_at <= bytes.len().max(start));
                prop_assert!(e.count <= MAX_EXT_HEADERS);
                if let Some(f) = e.fragment {
                    prop_assert!(f.header_at + 8 <= bytes.len());
                }
            }
        }

        #[test]
        fn prop_ext_walk_follows_built_chains(
            hop_by_hop in any::<bool>(),
            chain in proptest::collection::vec((prop_oneof![Just(43u8), Just(44), Just(51), Just(60)], 0u8..4), 0..12),
            upper in prop_oneof![Just(6u8), Just(17), Just(58), Just(59)],
        ) {
            // Builds hop-by-hop (optional) and the chain, each header as long as its
            // length unit says, every fragment header a first fragment.
            let mut kinds: std::vec::Vec<(u8, u8)> = std::vec::Vec::new();
            if hop_by_hop {
                kinds.push((0, 0));
            }
            kinds.extend(chain.iter().copied());
            let mut b = std::vec::Vec::new();
            let mut at = std::vec::Vec::new();
            for (i, &(kind, l)) in kinds.iter().enumerate() {
                let next = kinds.get(i + 1).map_or(upper, |k| k.0);
                let len = match kind {
                    44 => 8,
                    51 => (usize::from(l) + 2) * 4,
                    _ => (usize::from(l) + 1) * 8,
                };
                at.push(b.len());
                let start = b.len();
                b.resize(start + len, 0);
                b[start] = next;
                b[start + 1] = if kind == 44 { 0 } else { l };
            }
            let end = b.len();
            b.extend_from_slice(&[0xee; 8]);
            let first = kinds.first().map_or(upper, |k| k.0);
            let r = walk_ext_headers(&b, IpProtocol::from(first), 0);
            if kinds.len() > MAX_EXT_HEADERS {
                prop_assert_eq!(r, Err(WireError::Unsupported));
            } else {
                let e = r.unwrap();
                prop_assert_eq!(e.upper_layer, IpProtocol::from(upper));
                prop_assert_eq!(e.upper_at, end);
                prop_assert_eq!(e.count, kinds.len());
                prop_assert_eq!(e.hop_by_hop, hop_by_hop);
                let frag = kinds.iter().position(|k| k.0 == 44).map(|i| at[i]);
                prop_assert_eq!(e.fragment.map(|f| f.header_at), frag);
                // Cut anywhere inside the chain, the walk says truncated.
                if end > 0 {
                    prop_assert_eq!(
                        walk_ext_headers(&b[..end - 1], IpProtocol::from(first), 0),
                        Err(WireError::Truncated)
                    );
                }
            }
        }

        #[test]
        fn prop_repr_round_trip(
            src in any::<[u8; 16]>(),
            dst in any::<[u8; 16]>(),
            nh in any::<u8>(),
            payload_len in 0usize..64,
            hop_limit in any::<u8>(),
            traffic_class in any::<u8>(),
            flow_label in 0u32..0x10_0000,
        ) {
            let r = Ipv6Repr {
                src_addr: Ipv6Addr::from(src),
                dst_addr: Ipv6Addr::from(dst),
                next_header: IpProtocol::from(nh),
                payload_len,
                hop_limit,
                traffic_class,
                flow_label,
            };
            let mut b = std::vec![0u8; HEADER_LEN + payload_len];
            r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
            prop_assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&b[..]).unwrap()), Ok(r));
        }
    }
}
