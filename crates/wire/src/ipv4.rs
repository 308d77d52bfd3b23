//! IPv4 headers (RFC 791).

use crate::checksum;
use crate::{Result, WireError, be16, put16};
use core::net::Ipv4Addr;

/// IP protocol numbers (IANA "Assigned Internet Protocol Numbers"): IPv4's protocol
/// and IPv6's next header, extension headers included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    /// 0 IPv6 hop-by-hop options.
    HopByHop,
    /// 1 ICMP.
    Icmp,
    /// 2 IGMP.
    Igmp,
    /// 4 IPv4-in-IPv4.
    IpIp,
    /// 6 TCP.
    Tcp,
    /// 17 UDP.
    Udp,
    /// 41 IPv6 encapsulation.
    Ipv6,
    /// 43 IPv6 routing header.
    Ipv6Route,
    /// 44 IPv6 fragment header.
    Ipv6Frag,
    /// 47 GRE.
    Gre,
    /// 50 encapsulating security payload.
    Esp,
    /// 51 authentication header.
    Ah,
    /// 58 ICMPv6.
    Icmpv6,
    /// 59 no next header (IPv6).
    Ipv6NoNxt,
    /// 60 IPv6 destination options.
    Ipv6Opts,
    /// 89 OSPF.
    Ospf,
    /// 137 MPLS-in-IP.
    MplsInIp,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(v: u8) -> Self {
        match v {
            0 => IpProtocol::HopByHop,
            1 => IpProtocol::Icmp,
            2 => IpProtocol::Igmp,
            4 => IpProtocol::IpIp,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            41 => IpProtocol::Ipv6,
            43 => IpProtocol::Ipv6Route,
            44 => IpProtocol::Ipv6Frag,
            47 => IpProtocol::Gre,
            50 => IpProtocol::Esp,
            51 => IpProtocol::Ah,
            58 => IpProtocol::Icmpv6,
            59 => IpProtocol::Ipv6NoNxt,
            60 => IpProtocol::Ipv6Opts,
            89 => IpProtocol::Ospf,
            137 => IpProtocol::MplsInIp,
            other => IpProtocol::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(v: IpProtocol) -> u8 {
        match v {
            IpProtocol::HopByHop => 0,
            IpProtocol::Icmp => 1,
            IpProtocol::Igmp => 2,
            IpProtocol::IpIp => 4,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Ipv6 => 41,
            IpProtocol::Ipv6Route => 43,
            IpProtocol::Ipv6Frag => 44,
            IpProtocol::Gre => 47,
            IpProtocol::Esp => 50,
            IpProtocol::Ah => 51,
            IpProtocol::Icmpv6 => 58,
            IpProtocol::Ipv6NoNxt => 59,
            IpProtocol::Ipv6Opts => 60,
            IpProtocol::Ospf => 89,
            IpProtocol::MplsInIp => 137,
            IpProtocol::Unknown(other) => other,
        }
    }
}

//= RFC 791 §3.1: Version(4) IHL(4) ToS(8) Total Length(16) Identification(16)
//= Flags(3) Fragment Offset(13) TTL(8) Protocol(8) Header Checksum(16) Source(32)
//= Destination(32) Options(variable)
/// Byte offsets of the IPv4 header fields.
pub mod field {
    /// Version and IHL.
    pub const VER_IHL: usize = 0;
    /// DSCP (6 bits) and ECN (2 bits), the former ToS.
    pub const DSCP_ECN: usize = 1;
    /// Total length.
    pub const LENGTH: usize = 2;
    /// Identification.
    pub const IDENT: usize = 4;
    /// Flags and fragment offset.
    pub const FLG_OFF: usize = 6;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol.
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: usize = 10;
    /// Source address.
    pub const SRC_ADDR: usize = 12;
    /// Destination address.
    pub const DST_ADDR: usize = 16;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;

/// A view of an IPv4 packet.
///
/// `check_len` guarantees: the buffer holds the fixed header, IHL ≥ 5, the header with
/// its options fits, and `header_len ≤ total_len ≤ buffer length`. It does not check
/// the version or the checksum (the packet path decides which checks it pays for);
/// [`Ipv4Repr::parse`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }

    /// Wraps `buffer` and runs [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks header and total lengths against the buffer (see the type docs).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = usize::from(self.header_len());
        if hl < HEADER_LEN {
            return Err(WireError::BadHeaderLen);
        }
        if hl > len {
            return Err(WireError::Truncated);
        }
        let tl = usize::from(self.total_len());
        if tl < hl {
            return Err(WireError::BadLength);
        }
        if tl > len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version field (4 for IPv4).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4), options included.
    #[inline]
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Length of the options in bytes (header length − 20, 0 when IHL is below 5).
    #[inline]
    pub fn options_len(&self) -> usize {
        usize::from(self.header_len()).saturating_sub(HEADER_LEN)
    }

    /// Differentiated services code point (6 bits).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification (2 bits).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total length (header + payload) in bytes.
    #[inline]
    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::IDENT)
    }

    /// Don't-fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & 0x4000 != 0
    }

    /// More-fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & 0x2000 != 0
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (be16(self.buffer.as_ref(), field::FLG_OFF) & 0x1fff) << 3
    }

    /// Whether this is a fragment (MF set or a non-zero offset).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & 0x3fff != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(b[12], b[13], b[14], b[15])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(b[16], b[17], b[18], b[19])
    }

    /// Whether the header checksum verifies (header with options).
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(&self.buffer.as_ref()[..usize::from(self.header_len())])
    }

    /// The options (empty when IHL is 5).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.header_len())]
    }

    /// The payload: from the end of the header to the total length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[usize::from(self.header_len())..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets version 4 and the header length in bytes (a multiple of 4, 20..=60).
    #[inline]
    pub fn set_version_and_header_len(&mut self, header_len: u8) {
        self.buffer.as_mut()[field::VER_IHL] = 0x40 | ((header_len / 4) & 0x0f);
    }
    /// Sets DSCP and ECN.
    #[inline]
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = (dscp << 2) | (ecn & 3);
    }
    /// Sets the total length.
    #[inline]
    pub fn set_total_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v)
    }
    /// Sets the identification.
    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::IDENT, v)
    }
    /// Sets flags (DF, MF) and the fragment offset in bytes (a multiple of 8).
    #[inline]
    pub fn set_flags_and_frag_offset(&mut self, dont_frag: bool, more_frags: bool, off: u16) {
        let v = (u16::from(dont_frag) << 14) | (u16::from(more_frags) << 13) | (off >> 3);
        put16(self.buffer.as_mut(), field::FLG_OFF, v)
    }
    /// Sets the TTL without touching the checksum.
    #[inline]
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v
    }
    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, v: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = v.into()
    }
    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v)
    }
    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR..field::SRC_ADDR + 4].copy_from_slice(&a.octets())
    }
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR..field::DST_ADDR + 4].copy_from_slice(&a.octets())
    }

    /// Computes the header checksum (options included) and stores it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = usize::from(self.header_len());
        let c = checksum::checksum(&self.buffer.as_ref()[..hl]);
        self.set_checksum(c)
    }

    //= RFC 1624 §3 (incremental update); TTL and protocol share one 16-bit word.
    /// Sets the TTL and updates the checksum incrementally.
    #[inline]
    pub fn set_ttl_incremental(&mut self, ttl: u8) {
        let b = self.buffer.as_mut();
        let old = u16::from_be_bytes([b[field::TTL], b[field::PROTOCOL]]);
        let new = u16::from_be_bytes([ttl, b[field::PROTOCOL]]);
        let c = be16(b, field::CHECKSUM);
        b[field::TTL] = ttl;
        put16(b, field::CHECKSUM, checksum::update_u16(c, old, new));
    }

    //= RFC 1812 §5.3.1: a router decrements the TTL by one and must not forward a
    //= packet whose TTL is (or would become) zero.
    /// Decrements the TTL with an incremental checksum update. Returns the new TTL, or
    /// `None` (and leaves the packet untouched) when the received TTL is 0 or 1.
    #[inline]
    pub fn decrement_ttl(&mut self) -> Option<u8> {
        let ttl = self.ttl();
        if ttl <= 1 {
            return None;
        }
        self.set_ttl_incremental(ttl - 1);
        Some(ttl - 1)
    }

    /// The options, mutably.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = usize::from(self.header_len());
        &mut self.buffer.as_mut()[HEADER_LEN..hl]
    }

    /// The payload, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, tl) = (
            usize::from(self.header_len()),
            usize::from(self.total_len()),
        );
        &mut self.buffer.as_mut()[hl..tl]
    }
}

/// Owned form of an IPv4 header without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload protocol.
    pub protocol: IpProtocol,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP (6 bits).
    pub dscp: u8,
    /// Identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// Parses a packet: checks lengths, the version and the checksum. Options are
    /// skipped (their length is reflected in where the payload starts).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        p.check_len()?;
        if p.version() != 4 {
            return Err(WireError::BadVersion);
        }
        if !p.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        Ok(Ipv4Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - usize::from(p.header_len()),
            ttl: p.ttl(),
            dscp: p.dscp(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
        })
    }

    /// Length of the emitted header (no options).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (20 bytes, checksum filled) into `p`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) {
        p.set_version_and_header_len(HEADER_LEN as u8);
        p.set_dscp_ecn(self.dscp, 0);
        p.set_total_len((HEADER_LEN + self.payload_len) as u16);
        p.set_ident(self.ident);
        p.set_flags_and_frag_offset(self.dont_frag, false, 0);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 16.0.0.1 -> 48.0.0.1, UDP, TTL 64, DF, ident 0x1234, 8 bytes of payload.
    // Header words 4500+001c+1234+4000+4011+1000+0001+3000+0001 sum to 0x1764 after
    // the end-around carry, so the checksum is !0x1764 = 0xe89b.
    static PACKET_BYTES: [u8; 28] = [
        0x45, 0x00, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xe8, 0x9b, 0x10, 0x00, 0x00,
        0x01, 0x30, 0x00, 0x00, 0x01, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11,
    ];

    fn packet_bytes() -> [u8; 28] {
        PACKET_BYTES
    }

    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Addr::new(16, 0, 0, 1),
            dst_addr: Ipv4Addr::new(48, 0, 0, 1),
            protocol: IpProtocol::Udp,
            payload_len: 8,
            ttl: 64,
            dscp: 0,
            ident: 0x1234,
            dont_frag: true,
        }
    }

    #[test]
    fn test_known_checksum() {
        let mut b = PACKET_BYTES;
        b[10] = 0;
        b[11] = 0;
        assert_eq!(checksum::checksum(&b[..20]), 0xe89b);
    }

    #[test]
    fn test_deconstruct() {
        let b = packet_bytes();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.options_len(), 0);
        assert_eq!(p.dscp(), 0);
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.total_len(), 28);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert!(!p.is_fragment());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IpProtocol::Udp);
        assert_eq!(p.src_addr(), Ipv4Addr::new(16, 0, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(48, 0, 0, 1));
        assert!(p.verify_checksum());
        assert_eq!(
            p.payload(),
            &[0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11]
        );
    }

    #[test]
    fn test_construct() {
        let mut b = [0u8; 28];
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        repr().emit(&mut p);
        p.payload_mut().copy_from_slice(&PACKET_BYTES[20..]);
        assert_eq!(&b[..], &packet_bytes()[..]);
    }

    #[test]
    fn test_parse_repr() {
        let b = packet_bytes();
        assert_eq!(
            Ipv4Repr::parse(&Ipv4Packet::new_checked(&b[..]).unwrap()).unwrap(),
            repr()
        );
    }

    #[test]
    fn test_parse_errors() {
        let b = packet_bytes();
        assert_eq!(Ipv4Packet::new_checked(&b[..19]), Err(WireError::Truncated));
        assert_eq!(Ipv4Packet::new_checked(&b[..27]), Err(WireError::Truncated));
        let mut x = b;
        x[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&x[..]),
            Err(WireError::BadHeaderLen)
        );
        let mut x = b;
        x[0] = 0x48; // 32-byte header, 28-byte buffer
        assert_eq!(Ipv4Packet::new_checked(&x[..]), Err(WireError::Truncated));
        let mut x = b;
        x[3] = 0x10; // total length 16 < header
        assert_eq!(Ipv4Packet::new_checked(&x[..]), Err(WireError::BadLength));
        let mut x = b;
        x[0] = 0x65;
        let p = Ipv4Packet::new_checked(&x[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Err(WireError::BadVersion));
        let mut x = b;
        x[8] = 63;
        let p = Ipv4Packet::new_checked(&x[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Err(WireError::BadChecksum));
    }

    #[test]
    fn test_parse_options() {
        // Same packet with one 4-byte option (NOP NOP NOP EOL): IHL 6, total 32.
        let mut b = [0u8; 32];
        b[..20].copy_from_slice(&packet_bytes()[..20]);
        b[0] = 0x46;
        b[3] = 32;
        b[20..24].copy_from_slice(&[1, 1, 1, 0]);
        b[24..].copy_from_slice(&PACKET_BYTES[20..]);
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(p.options_len(), 4);
        assert_eq!(p.options(), &[1, 1, 1, 0]);
        assert_eq!(p.payload(), &PACKET_BYTES[20..]);
        assert_eq!(Ipv4Repr::parse(&p).unwrap().payload_len, 8);
    }

    #[test]
    fn test_decrement_ttl() {
        let mut b = packet_bytes();
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        assert_eq!(p.decrement_ttl(), Some(63));
        assert!(p.verify_checksum());
        p.set_ttl_incremental(1);
        assert!(p.verify_checksum());
        assert_eq!(p.decrement_ttl(), None);
        assert_eq!(p.ttl(), 1);
    }

    #[test]
    fn test_protocol_total() {
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(IpProtocol::from(v)), v);
        }
        assert_eq!(IpProtocol::from(58), IpProtocol::Icmpv6);
        assert_eq!(IpProtocol::from(44), IpProtocol::Ipv6Frag);
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = Ipv4Packet::new_checked(&bytes[..]) {
                let _ = (p.version(), p.options(), p.payload(), p.verify_checksum());
                let _ = (p.src_addr(), p.dst_addr(), p.protocol(), p.frag_offset());
                let _ = Ipv4Repr::parse(&p);
            }
        }

        #[test]
        fn prop_ttl_incremental_keeps_checksum(ttl in any::<u8>(), new in any::<u8>(), proto in any::<u8>()) {
            let mut b = packet_bytes();
            b[8] = ttl;
            b[9] = proto;
            let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
            p.fill_checksum();
            p.set_ttl_incremental(new);
            prop_assert!(p.verify_checksum());
            prop_assert_eq!(p.ttl(), new);
        }
    }
}
