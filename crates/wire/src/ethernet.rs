//! Ethernet II frames and IEEE 802.1Q tags.

use crate::{Result, WireError, be16, put16};
use core::fmt;

/// A 48-bit IEEE MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// Builds an address from the first six bytes of `data`; `None` if it is shorter.
    pub fn from_bytes(data: &[u8]) -> Option<EthernetAddress> {
        let b: [u8; 6] = data.get(..6)?.try_into().ok()?;
        Some(EthernetAddress(b))
    }

    /// The six bytes of the address.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether the group bit (I/G, least significant bit of the first octet) is set;
    /// broadcast is a multicast address too.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether this is an individual (unicast) address.
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Whether the locally administered bit (U/L) is set.
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// EtherType values the dataplane dispatches on (IEEE registry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EtherType {
    /// 0x0800 IPv4.
    Ipv4,
    /// 0x0806 ARP.
    Arp,
    /// 0x8100 IEEE 802.1Q VLAN tag (customer tag).
    Vlan,
    /// 0x86dd IPv6.
    Ipv6,
    //= RFC 3032 §5: "MPLS label stack ... Ethertype 0x8847 (unicast)"
    /// 0x8847 MPLS unicast.
    Mpls,
    /// 0x8848 MPLS with upstream-assigned labels (formerly "multicast"), RFC 5332.
    MplsMulticast,
    /// 0x88a8 IEEE 802.1ad service tag (QinQ outer tag).
    QinQ,
    /// Any other value.
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(v: u16) -> Self {
        match v {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x8100 => EtherType::Vlan,
            0x86dd => EtherType::Ipv6,
            0x8847 => EtherType::Mpls,
            0x8848 => EtherType::MplsMulticast,
            0x88a8 => EtherType::QinQ,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(v: EtherType) -> u16 {
        match v {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Vlan => 0x8100,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Mpls => 0x8847,
            EtherType::MplsMulticast => 0x8848,
            EtherType::QinQ => 0x88a8,
            EtherType::Unknown(other) => other,
        }
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtherType::Ipv4 => f.write_str("IPv4"),
            EtherType::Arp => f.write_str("ARP"),
            EtherType::Vlan => f.write_str("802.1Q"),
            EtherType::Ipv6 => f.write_str("IPv6"),
            EtherType::Mpls => f.write_str("MPLS"),
            EtherType::MplsMulticast => f.write_str("MPLS-UA"),
            EtherType::QinQ => f.write_str("802.1ad"),
            EtherType::Unknown(v) => write!(f, "0x{v:04x}"),
        }
    }
}

mod field {
    use core::ops::{Range, RangeFrom};
    pub(super) const DESTINATION: Range<usize> = 0..6;
    pub(super) const SOURCE: Range<usize> = 6..12;
    pub(super) const ETHERTYPE: usize = 12;
    pub(super) const PAYLOAD: RangeFrom<usize> = 14..;
}

/// Length of an untagged Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of an Ethernet II frame (without the FCS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buffer` without checking its length.
    pub const fn new_unchecked(buffer: T) -> EthernetFrame<T> {
        EthernetFrame { buffer }
    }

    /// Wraps `buffer` and checks that it holds a whole header.
    pub fn new_checked(buffer: T) -> Result<EthernetFrame<T>> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Checks that the buffer holds a whole header; after this every accessor is in
    /// bounds.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Header length for a given payload length.
    pub const fn buffer_len(payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> EthernetAddress {
        let b = self.buffer.as_ref();
        EthernetAddress([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> EthernetAddress {
        let b = self.buffer.as_ref();
        EthernetAddress([b[6], b[7], b[8], b[9], b[10], b[11]])
    }

    /// EtherType (or 0x8100 when a VLAN tag follows).
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(be16(self.buffer.as_ref(), field::ETHERTYPE))
    }

    /// The bytes after the header (a VLAN tag, or the payload).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a.0)
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a.0)
    }

    /// Sets the EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, t: EtherType) {
        put16(self.buffer.as_mut(), field::ETHERTYPE, t.into())
    }

    /// The bytes after the header, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// Owned form of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Source address.
    pub src_addr: EthernetAddress,
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// EtherType.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Parses a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<EthernetRepr> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Length of the emitted header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `frame`, which must hold at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_src_addr(self.src_addr);
        frame.set_dst_addr(self.dst_addr);
        frame.set_ethertype(self.ethertype);
    }
}

//= IEEE 802.1Q §9.6: the tag is TPID (0x8100, already read as the outer EtherType)
//= followed by the TCI: PCP (3 bits), DEI (1 bit), VID (12 bits).
mod vlan_field {
    pub(super) const TCI: usize = 0;
    pub(super) const ETHERTYPE: usize = 2;
    pub(super) const PAYLOAD: core::ops::RangeFrom<usize> = 4..;
}

/// Length of the part of an 802.1Q tag that follows the 0x8100 TPID: TCI + inner
/// EtherType.
pub const VLAN_TAG_LEN: usize = vlan_field::PAYLOAD.start;

/// A view of an 802.1Q tag: the four bytes after a 0x8100 (or 0x88a8) EtherType.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Wraps `buffer` without checking its length.
    pub const fn new_unchecked(buffer: T) -> VlanTag<T> {
        VlanTag { buffer }
    }

    /// Wraps `buffer` and checks that it holds a whole tag.
    pub fn new_checked(buffer: T) -> Result<VlanTag<T>> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

    /// Checks that the buffer holds a whole tag.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < VLAN_TAG_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (be16(self.buffer.as_ref(), vlan_field::TCI) >> 13) as u8
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        be16(self.buffer.as_ref(), vlan_field::TCI) & 0x1000 != 0
    }

    /// VLAN identifier (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        be16(self.buffer.as_ref(), vlan_field::TCI) & 0x0fff
    }

    /// The EtherType of the payload.
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(be16(self.buffer.as_ref(), vlan_field::ETHERTYPE))
    }

    /// The bytes after the tag.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[vlan_field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    /// Sets PCP, DEI and VID at once (the whole TCI).
    #[inline]
    pub fn set_tci(&mut self, pcp: u8, dei: bool, vid: u16) {
        let tci = (u16::from(pcp & 7) << 13) | (u16::from(dei) << 12) | (vid & 0x0fff);
        put16(self.buffer.as_mut(), vlan_field::TCI, tci)
    }

    /// Sets the payload EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, t: EtherType) {
        put16(self.buffer.as_mut(), vlan_field::ETHERTYPE, t.into())
    }

    /// The bytes after the tag, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[vlan_field::PAYLOAD]
    }
}

/// Owned form of an 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanRepr {
    /// Priority code point (0..=7).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier (0..=4095).
    pub vid: u16,
    /// Payload EtherType.
    pub ethertype: EtherType,
}

impl VlanRepr {
    /// Parses a tag.
    pub fn parse<T: AsRef<[u8]>>(tag: &VlanTag<T>) -> Result<VlanRepr> {
        tag.check_len()?;
        Ok(VlanRepr {
            pcp: tag.pcp(),
            dei: tag.dei(),
            vid: tag.vid(),
            ethertype: tag.ethertype(),
        })
    }

    /// Length of the emitted tag (after the TPID).
    pub const fn buffer_len(&self) -> usize {
        VLAN_TAG_LEN
    }

    /// Writes the tag.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut VlanTag<T>) {
        tag.set_tci(self.pcp, self.dei, self.vid);
        tag.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::format;

    // dst 52:54:00:12:34:56, src 02:00:00:00:00:01, 802.1Q PCP 5 VID 100, inner MPLS.
    static FRAME_BYTES: [u8; 22] = [
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x81, 0x00, 0xa0,
        0x64, 0x88, 0x47, 0xaa, 0xbb, 0xcc, 0xdd,
    ];

    #[test]
    fn test_deconstruct() {
        let f = EthernetFrame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(
            f.dst_addr(),
            EthernetAddress([0x52, 0x54, 0, 0x12, 0x34, 0x56])
        );
        assert_eq!(f.src_addr(), EthernetAddress([2, 0, 0, 0, 0, 1]));
        assert_eq!(f.ethertype(), EtherType::Vlan);
        let t = VlanTag::new_checked(f.payload()).unwrap();
        assert_eq!(t.pcp(), 5);
        assert!(!t.dei());
        assert_eq!(t.vid(), 100);
        assert_eq!(t.ethertype(), EtherType::Mpls);
        assert_eq!(t.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0u8; 22];
        let mut f = EthernetFrame::new_unchecked(&mut bytes[..]);
        EthernetRepr {
            dst_addr: EthernetAddress([0x52, 0x54, 0, 0x12, 0x34, 0x56]),
            src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            ethertype: EtherType::Vlan,
        }
        .emit(&mut f);
        let mut t = VlanTag::new_unchecked(f.payload_mut());
        VlanRepr {
            pcp: 5,
            dei: false,
            vid: 100,
            ethertype: EtherType::Mpls,
        }
        .emit(&mut t);
        t.payload_mut().copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(&bytes[..], &FRAME_BYTES[..]);
    }

    #[test]
    fn test_parse_repr() {
        let f = EthernetFrame::new_checked(&FRAME_BYTES[..]).unwrap();
        let r = EthernetRepr::parse(&f).unwrap();
        assert_eq!(r.ethertype, EtherType::Vlan);
        let v = VlanRepr::parse(&VlanTag::new_checked(f.payload()).unwrap()).unwrap();
        assert_eq!(
            v,
            VlanRepr {
                pcp: 5,
                dei: false,
                vid: 100,
                ethertype: EtherType::Mpls
            }
        );
    }

    #[test]
    fn test_parse_truncated() {
        assert_eq!(
            EthernetFrame::new_checked(&FRAME_BYTES[..13]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            VlanTag::new_checked(&FRAME_BYTES[14..17]),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn test_address_kinds() {
        assert!(EthernetAddress::BROADCAST.is_broadcast());
        assert!(EthernetAddress::BROADCAST.is_multicast());
        assert!(EthernetAddress([1, 0, 0x5e, 0, 0, 1]).is_multicast());
        assert!(EthernetAddress([2, 0, 0, 0, 0, 1]).is_unicast());
        assert!(EthernetAddress([2, 0, 0, 0, 0, 1]).is_local());
        assert_eq!(
            format!("{}", EthernetAddress([2, 0, 0, 0, 0, 0xab])),
            "02:00:00:00:00:ab"
        );
    }

    #[test]
    fn test_ethertype_total() {
        for v in [
            0x0800u16, 0x0806, 0x8100, 0x86dd, 0x8847, 0x8848, 0x88a8, 0x1234,
        ] {
            assert_eq!(u16::from(EtherType::from(v)), v);
        }
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(f) = EthernetFrame::new_checked(&bytes[..]) {
                let _ = (f.dst_addr(), f.src_addr(), f.ethertype(), f.payload().len());
                let _ = EthernetRepr::parse(&f);
            }
            if let Ok(t) = VlanTag::new_checked(&bytes[..]) {
                let _ = (t.pcp(), t.dei(), t.vid(), t.ethertype(), t.payload().len());
            }
        }
    }
}
