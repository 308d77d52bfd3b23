//! UDP headers (RFC 768), used by tests and traceroute probes.

use crate::checksum;
use crate::{Result, WireError, be16, put16};
use core::net::Ipv4Addr;

mod field {
    pub(super) const SRC_PORT: usize = 0;
    pub(super) const DST_PORT: usize = 2;
    pub(super) const LENGTH: usize = 4;
    pub(super) const CHECKSUM: usize = 6;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// IP protocol number of UDP.
const PROTO_UDP: u8 = 17;

/// A view of a UDP datagram. `check_len` guarantees `8 ≤ length ≤ buffer length`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    /// Wraps `buffer` and runs [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the header fits and the length field is between 8 and the buffer length.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let l = usize::from(self.len());
        if l < HEADER_LEN {
            return Err(WireError::BadLength);
        }
        if l > len {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length field (header + payload).
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Checksum field (0: not computed).
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The payload (up to the length field).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Whether the checksum verifies with the IPv4 pseudo-header; a zero checksum
    /// ("not computed", RFC 768) verifies.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let l = self.len();
        let data = &self.buffer.as_ref()[..usize::from(l)];
        checksum::combine(&[
            checksum::pseudo_header_v4(src, dst, PROTO_UDP, l),
            checksum::data(data),
        ]) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, v)
    }
    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, v)
    }
    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v)
    }
    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v)
    }
    /// The payload, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let l = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..l]
    }
    /// Computes the checksum with the IPv4 pseudo-header and stores it (0 is sent as
    /// 0xffff, RFC 768).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let l = self.len();
        let data = &self.buffer.as_ref()[..usize::from(l)];
        let c = !checksum::combine(&[
            checksum::pseudo_header_v4(src, dst, PROTO_UDP, l),
            checksum::data(data),
        ]);
        self.set_checksum(if c == 0 { 0xffff } else { c })
    }
}

/// Owned form of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl UdpRepr {
    /// Parses a datagram, verifying the checksum against the pseudo-header.
    pub fn parse<T: AsRef<[u8]>>(
        p: &UdpPacket<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<UdpRepr> {
        p.check_len()?;
        if !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
        })
    }

    /// Length of the emitted header.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes header and `payload` into `p` (`8 + payload.len()` bytes) and fills the
    /// checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        p: &mut UdpPacket<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload: &[u8],
    ) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len((HEADER_LEN + payload.len()) as u16);
        p.payload_mut().copy_from_slice(payload);
        p.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(16, 0, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(48, 0, 0, 1);

    // 1024 -> 33434 (traceroute's first port), payload "ping".
    // Pseudo header 1000+0001+3000+0001+0011+000c, header 0400+829a+000c,
    // payload 7069+6e67: sum 0xa596 after the carry, checksum !0xa596 = 0x5a69.
    static PACKET_BYTES: [u8; 12] = [
        0x04, 0x00, 0x82, 0x9a, 0x00, 0x0c, 0x5a, 0x69, 0x70, 0x69, 0x6e, 0x67,
    ];

    #[test]
    fn test_deconstruct() {
        let p = UdpPacket::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 1024);
        assert_eq!(p.dst_port(), 33434);
        assert_eq!(p.len(), 12);
        assert_eq!(p.payload(), b"ping");
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn test_construct() {
        let mut b = [0u8; 12];
        UdpRepr {
            src_port: 1024,
            dst_port: 33434,
        }
        .emit(&mut UdpPacket::new_unchecked(&mut b[..]), SRC, DST, b"ping");
        assert_eq!(&b[..], &PACKET_BYTES[..]);
    }

    #[test]
    fn test_parse_errors() {
        assert_eq!(
            UdpPacket::new_checked(&PACKET_BYTES[..7]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            UdpPacket::new_checked(&PACKET_BYTES[..11]),
            Err(WireError::Truncated)
        );
        let mut b = PACKET_BYTES;
        b[5] = 4;
        assert_eq!(UdpPacket::new_checked(&b[..]), Err(WireError::BadLength));
        let mut b = PACKET_BYTES;
        b[11] ^= 1;
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, SRC, DST), Err(WireError::BadChecksum));
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(p) = UdpPacket::new_checked(&bytes[..]) {
                let _ = (p.src_port(), p.dst_port(), p.payload().len(), p.verify_checksum(SRC, DST));
            }
        }
    }
}
