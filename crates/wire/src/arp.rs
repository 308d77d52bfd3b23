//! ARP (RFC 826), with a `Repr` for Ethernet/IPv4, the only combination routed here.

use crate::ethernet::{EtherType, EthernetAddress};
use crate::{Result, WireError, be16, put16};
use core::net::Ipv4Addr;

/// ARP hardware type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpHardware {
    /// 1: Ethernet (10 Mb and everything since).
    Ethernet,
    /// Any other value.
    Unknown(u16),
}

impl From<u16> for ArpHardware {
    fn from(v: u16) -> Self {
        match v {
            1 => ArpHardware::Ethernet,
            other => ArpHardware::Unknown(other),
        }
    }
}

impl From<ArpHardware> for u16 {
    fn from(v: ArpHardware) -> u16 {
        match v {
            ArpHardware::Ethernet => 1,
            ArpHardware::Unknown(other) => other,
        }
    }
}

/// ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpOperation {
    /// 1: request.
    Request,
    /// 2: reply.
    Reply,
    /// Any other value.
    Unknown(u16),
}

impl From<u16> for ArpOperation {
    fn from(v: u16) -> Self {
        match v {
            1 => ArpOperation::Request,
            2 => ArpOperation::Reply,
            other => ArpOperation::Unknown(other),
        }
    }
}

impl From<ArpOperation> for u16 {
    fn from(v: ArpOperation) -> u16 {
        match v {
            ArpOperation::Request => 1,
            ArpOperation::Reply => 2,
            ArpOperation::Unknown(other) => other,
        }
    }
}

//= RFC 826: ar$hrd(16) ar$pro(16) ar$hln(8) ar$pln(8) ar$op(16) ar$sha ar$spa ar$tha ar$tpa
mod field {
    pub(super) const HTYPE: usize = 0;
    pub(super) const PTYPE: usize = 2;
    pub(super) const HLEN: usize = 4;
    pub(super) const PLEN: usize = 5;
    pub(super) const OPER: usize = 6;
    pub(super) const SHA: usize = 8;
}

/// Length of the fixed part of an ARP packet.
pub const FIXED_LEN: usize = field::SHA;
/// Length of an Ethernet/IPv4 ARP packet.
pub const ETHERNET_IPV4_LEN: usize = FIXED_LEN + 2 * (6 + 4);

/// A view of an ARP packet of any hardware/protocol address length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buffer` without checking its length.
    pub const fn new_unchecked(buffer: T) -> ArpPacket<T> {
        ArpPacket { buffer }
    }

    /// Wraps `buffer` and checks that it holds the fixed part and all four addresses.
    pub fn new_checked(buffer: T) -> Result<ArpPacket<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the buffer holds the fixed part and the addresses its lengths announce.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < FIXED_LEN {
            return Err(WireError::Truncated);
        }
        let need = FIXED_LEN + 2 * (usize::from(b[field::HLEN]) + usize::from(b[field::PLEN]));
        if b.len() < need {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Hardware type.
    pub fn hardware_type(&self) -> ArpHardware {
        ArpHardware::from(be16(self.buffer.as_ref(), field::HTYPE))
    }

    /// Protocol type (an EtherType).
    pub fn protocol_type(&self) -> EtherType {
        EtherType::from(be16(self.buffer.as_ref(), field::PTYPE))
    }

    /// Hardware address length.
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length.
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation.
    pub fn operation(&self) -> ArpOperation {
        ArpOperation::from(be16(self.buffer.as_ref(), field::OPER))
    }

    fn sha_at(&self) -> usize {
        field::SHA
    }
    fn spa_at(&self) -> usize {
        self.sha_at() + usize::from(self.hardware_len())
    }
    fn tha_at(&self) -> usize {
        self.spa_at() + usize::from(self.protocol_len())
    }
    fn tpa_at(&self) -> usize {
        self.tha_at() + usize::from(self.hardware_len())
    }

    /// Sender hardware address bytes.
    pub fn source_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.sha_at()..self.spa_at()]
    }

    /// Sender protocol address bytes.
    pub fn source_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.spa_at()..self.tha_at()]
    }

    /// Target hardware address bytes.
    pub fn target_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.tha_at()..self.tpa_at()]
    }

    /// Target protocol address bytes.
    pub fn target_protocol_addr(&self) -> &[u8] {
        let at = self.tpa_at();
        &self.buffer.as_ref()[at..at + usize::from(self.protocol_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets the hardware type.
    pub fn set_hardware_type(&mut self, v: ArpHardware) {
        put16(self.buffer.as_mut(), field::HTYPE, v.into())
    }
    /// Sets the protocol type.
    pub fn set_protocol_type(&mut self, v: EtherType) {
        put16(self.buffer.as_mut(), field::PTYPE, v.into())
    }
    /// Sets the hardware address length.
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v
    }
    /// Sets the protocol address length.
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v
    }
    /// Sets the operation.
    pub fn set_operation(&mut self, v: ArpOperation) {
        put16(self.buffer.as_mut(), field::OPER, v.into())
    }
    /// Sets the sender hardware address (length must match `hardware_len`).
    pub fn set_source_hardware_addr(&mut self, v: &[u8]) {
        let (a, b) = (self.sha_at(), self.spa_at());
        self.buffer.as_mut()[a..b].copy_from_slice(v)
    }
    /// Sets the sender protocol address (length must match `protocol_len`).
    pub fn set_source_protocol_addr(&mut self, v: &[u8]) {
        let (a, b) = (self.spa_at(), self.tha_at());
        self.buffer.as_mut()[a..b].copy_from_slice(v)
    }
    /// Sets the target hardware address.
    pub fn set_target_hardware_addr(&mut self, v: &[u8]) {
        let (a, b) = (self.tha_at(), self.tpa_at());
        self.buffer.as_mut()[a..b].copy_from_slice(v)
    }
    /// Sets the target protocol address.
    pub fn set_target_protocol_addr(&mut self, v: &[u8]) {
        let a = self.tpa_at();
        let b = a + usize::from(self.protocol_len());
        self.buffer.as_mut()[a..b].copy_from_slice(v)
    }
}

/// Owned form of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpRepr {
    /// Ethernet hardware, IPv4 protocol addresses.
    EthernetIpv4 {
        /// Operation.
        operation: ArpOperation,
        /// Sender MAC.
        source_hardware_addr: EthernetAddress,
        /// Sender IPv4 address.
        source_protocol_addr: Ipv4Addr,
        /// Target MAC (zero in requests).
        target_hardware_addr: EthernetAddress,
        /// Target IPv4 address.
        target_protocol_addr: Ipv4Addr,
    },
}

fn ip4(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

impl ArpRepr {
    /// Parses an ARP packet; anything but Ethernet/IPv4 is `Unsupported`.
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<ArpRepr> {
        p.check_len()?;
        match (
            p.hardware_type(),
            p.protocol_type(),
            p.hardware_len(),
            p.protocol_len(),
        ) {
            (ArpHardware::Ethernet, EtherType::Ipv4, 6, 4) => Ok(ArpRepr::EthernetIpv4 {
                operation: p.operation(),
                source_hardware_addr: EthernetAddress::from_bytes(p.source_hardware_addr())
                    .ok_or(WireError::Truncated)?,
                source_protocol_addr: ip4(p.source_protocol_addr()),
                target_hardware_addr: EthernetAddress::from_bytes(p.target_hardware_addr())
                    .ok_or(WireError::Truncated)?,
                target_protocol_addr: ip4(p.target_protocol_addr()),
            }),
            _ => Err(WireError::Unsupported),
        }
    }

    /// Length of the emitted packet.
    pub const fn buffer_len(&self) -> usize {
        ETHERNET_IPV4_LEN
    }

    /// Writes the packet into `p` (at least [`ETHERNET_IPV4_LEN`] bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ArpPacket<T>) {
        let ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr,
            source_protocol_addr,
            target_hardware_addr,
            target_protocol_addr,
        } = *self;
        p.set_hardware_type(ArpHardware::Ethernet);
        p.set_protocol_type(EtherType::Ipv4);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(operation);
        p.set_source_hardware_addr(&source_hardware_addr.0);
        p.set_source_protocol_addr(&source_protocol_addr.octets());
        p.set_target_hardware_addr(&target_hardware_addr.0);
        p.set_target_protocol_addr(&target_protocol_addr.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // who-has 192.168.13.5 tell 192.168.13.4 (02:00:00:00:00:04)
    static PACKET_BYTES: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0,
        0xa8, 0x0d, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xa8, 0x0d, 0x05,
    ];

    fn repr() -> ArpRepr {
        ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: EthernetAddress([2, 0, 0, 0, 0, 4]),
            source_protocol_addr: Ipv4Addr::new(192, 168, 13, 4),
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Addr::new(192, 168, 13, 5),
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = ArpPacket::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.hardware_type(), ArpHardware::Ethernet);
        assert_eq!(p.protocol_type(), EtherType::Ipv4);
        assert_eq!(p.hardware_len(), 6);
        assert_eq!(p.protocol_len(), 4);
        assert_eq!(p.operation(), ArpOperation::Request);
        assert_eq!(p.source_hardware_addr(), &[2, 0, 0, 0, 0, 4]);
        assert_eq!(p.source_protocol_addr(), &[192, 168, 13, 4]);
        assert_eq!(p.target_hardware_addr(), &[0; 6]);
        assert_eq!(p.target_protocol_addr(), &[192, 168, 13, 5]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5; ETHERNET_IPV4_LEN];
        repr().emit(&mut ArpPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], &PACKET_BYTES[..]);
    }

    #[test]
    fn test_parse_repr() {
        let p = ArpPacket::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(ArpRepr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn test_parse_truncated_and_unsupported() {
        assert_eq!(
            ArpPacket::new_checked(&PACKET_BYTES[..27]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            ArpPacket::new_checked(&PACKET_BYTES[..7]),
            Err(WireError::Truncated)
        );
        let mut b = PACKET_BYTES;
        b[1] = 6; // IEEE 802 hardware
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()),
            Err(WireError::Unsupported)
        );
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = ArpPacket::new_checked(&bytes[..]) {
                let _ = (p.operation(), p.source_hardware_addr(), p.source_protocol_addr());
                let _ = (p.target_hardware_addr(), p.target_protocol_addr());
                let _ = ArpRepr::parse(&p);
            }
        }
    }
}
