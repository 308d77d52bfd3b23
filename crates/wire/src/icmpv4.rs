//! ICMPv4 (RFC 792): echo, destination unreachable (with the RFC 1191 next-hop MTU),
//! time exceeded, and the RFC 4884 multi-part extension structure that carries, for
//! example, the RFC 4950 MPLS label stack object.

use crate::checksum;
use crate::{Result, WireError, be16, put16};

/// ICMPv4 message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Message {
    /// 0 echo reply.
    EchoReply,
    /// 3 destination unreachable.
    DstUnreachable,
    /// 5 redirect.
    Redirect,
    /// 8 echo request.
    EchoRequest,
    /// 9 router advertisement.
    RouterAdvert,
    /// 10 router solicitation.
    RouterSolicit,
    /// 11 time exceeded.
    TimeExceeded,
    /// 12 parameter problem.
    ParamProblem,
    /// 13 timestamp.
    Timestamp,
    /// 14 timestamp reply.
    TimestampReply,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for Icmpv4Message {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::EchoReply,
            3 => Self::DstUnreachable,
            5 => Self::Redirect,
            8 => Self::EchoRequest,
            9 => Self::RouterAdvert,
            10 => Self::RouterSolicit,
            11 => Self::TimeExceeded,
            12 => Self::ParamProblem,
            13 => Self::Timestamp,
            14 => Self::TimestampReply,
            other => Self::Unknown(other),
        }
    }
}

impl From<Icmpv4Message> for u8 {
    fn from(v: Icmpv4Message) -> u8 {
        match v {
            Icmpv4Message::EchoReply => 0,
            Icmpv4Message::DstUnreachable => 3,
            Icmpv4Message::Redirect => 5,
            Icmpv4Message::EchoRequest => 8,
            Icmpv4Message::RouterAdvert => 9,
            Icmpv4Message::RouterSolicit => 10,
            Icmpv4Message::TimeExceeded => 11,
            Icmpv4Message::ParamProblem => 12,
            Icmpv4Message::Timestamp => 13,
            Icmpv4Message::TimestampReply => 14,
            Icmpv4Message::Unknown(other) => other,
        }
    }
}

/// Codes of destination unreachable (RFC 792, RFC 1122, RFC 1812).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DstUnreachable {
    /// 0 net unreachable.
    NetUnreachable,
    /// 1 host unreachable.
    HostUnreachable,
    /// 2 protocol unreachable.
    ProtoUnreachable,
    /// 3 port unreachable.
    PortUnreachable,
    /// 4 fragmentation needed and DF set (carries the next-hop MTU, RFC 1191).
    FragRequired,
    /// 5 source route failed.
    SrcRouteFailed,
    /// 6 destination network unknown.
    DstNetUnknown,
    /// 7 destination host unknown.
    DstHostUnknown,
    /// 9 network administratively prohibited.
    NetProhibited,
    /// 10 host administratively prohibited.
    HostProhibited,
    /// 13 communication administratively prohibited (RFC 1812).
    CommProhibited,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for DstUnreachable {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::NetUnreachable,
            1 => Self::HostUnreachable,
            2 => Self::ProtoUnreachable,
            3 => Self::PortUnreachable,
            4 => Self::FragRequired,
            5 => Self::SrcRouteFailed,
            6 => Self::DstNetUnknown,
            7 => Self::DstHostUnknown,
            9 => Self::NetProhibited,
            10 => Self::HostProhibited,
            13 => Self::CommProhibited,
            other => Self::Unknown(other),
        }
    }
}

impl From<DstUnreachable> for u8 {
    fn from(v: DstUnreachable) -> u8 {
        match v {
            DstUnreachable::NetUnreachable => 0,
            DstUnreachable::HostUnreachable => 1,
            DstUnreachable::ProtoUnreachable => 2,
            DstUnreachable::PortUnreachable => 3,
            DstUnreachable::FragRequired => 4,
            DstUnreachable::SrcRouteFailed => 5,
            DstUnreachable::DstNetUnknown => 6,
            DstUnreachable::DstHostUnknown => 7,
            DstUnreachable::NetProhibited => 9,
            DstUnreachable::HostProhibited => 10,
            DstUnreachable::CommProhibited => 13,
            DstUnreachable::Unknown(other) => other,
        }
    }
}

/// Codes of time exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeExceeded {
    /// 0 TTL exceeded in transit.
    TtlExpired,
    /// 1 fragment reassembly time exceeded.
    FragExpired,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for TimeExceeded {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::TtlExpired,
            1 => Self::FragExpired,
            other => Self::Unknown(other),
        }
    }
}

impl From<TimeExceeded> for u8 {
    fn from(v: TimeExceeded) -> u8 {
        match v {
            TimeExceeded::TtlExpired => 0,
            TimeExceeded::FragExpired => 1,
            TimeExceeded::Unknown(other) => other,
        }
    }
}

mod field {
    pub(super) const TYPE: usize = 0;
    pub(super) const CODE: usize = 1;
    pub(super) const CHECKSUM: usize = 2;
    pub(super) const ECHO_IDENT: usize = 4;
    pub(super) const ECHO_SEQNO: usize = 6;
    //= RFC 4884 §4.1: the length attribute is the 8-bit field in the second word
    //= (byte 5 of the ICMP header), counting 32-bit words of the original datagram.
    pub(super) const LENGTH: usize = 5;
    //= RFC 1191 §4: next-hop MTU in the low-order 16 bits of the second word.
    pub(super) const MTU: usize = 6;
}

/// Length of the ICMPv4 header (type, code, checksum, and the 4-byte rest-of-header).
pub const HEADER_LEN: usize = 8;

//= RFC 4884 §5.1: when an extension structure follows, the original datagram field
//= is zero-padded to at least 128 octets (and is a multiple of 32 bits).
/// Minimum original-datagram length when an extension structure is present.
pub const RFC4884_MIN_ORIGINAL_LEN: usize = 128;

/// A view of an ICMPv4 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Icmpv4Packet<T> {
        Icmpv4Packet { buffer }
    }

    /// Wraps `buffer` and checks it holds the 8-byte header.
    pub fn new_checked(buffer: T) -> Result<Icmpv4Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the buffer holds the 8-byte header.
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

    /// Message type.
    #[inline]
    pub fn msg_type(&self) -> Icmpv4Message {
        Icmpv4Message::from(self.buffer.as_ref()[field::TYPE])
    }

    /// Message code (meaning depends on the type).
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Echo identifier.
    #[inline]
    pub fn echo_ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ECHO_IDENT)
    }

    /// Echo sequence number.
    #[inline]
    pub fn echo_seq_no(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ECHO_SEQNO)
    }

    /// Next-hop MTU of a fragmentation-needed message (RFC 1191).
    #[inline]
    pub fn next_hop_mtu(&self) -> u16 {
        be16(self.buffer.as_ref(), field::MTU)
    }

    /// The RFC 4884 length attribute of time-exceeded, destination-unreachable and
    /// parameter-problem messages, in 32-bit words (0: no extension).
    #[inline]
    pub fn rfc4884_len_words(&self) -> u8 {
        self.buffer.as_ref()[field::LENGTH]
    }

    /// Everything after the 8-byte header.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// The original-datagram field: the first `length × 4` bytes of the data when the
    /// RFC 4884 length attribute is set and fits, otherwise all the data.
    pub fn original_datagram(&self) -> &[u8] {
        let d = self.data();
        let n = usize::from(self.rfc4884_len_words()) * 4;
        if n != 0 && n <= d.len() { &d[..n] } else { d }
    }

    /// The RFC 4884 extension structure, when the length attribute is set, fits the
    /// buffer and at least an extension header follows the original datagram.
    pub fn extension(&self) -> Option<&[u8]> {
        let d = self.data();
        let n = usize::from(self.rfc4884_len_words()) * 4;
        if n == 0 || n + ext::HEADER_LEN > d.len() {
            None
        } else {
            Some(&d[n..])
        }
    }

    /// Whether the checksum over the whole message verifies.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Sets the type.
    #[inline]
    pub fn set_msg_type(&mut self, v: Icmpv4Message) {
        self.buffer.as_mut()[field::TYPE] = v.into()
    }
    /// Sets the code.
    #[inline]
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v
    }
    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v)
    }
    /// Sets the echo identifier.
    #[inline]
    pub fn set_echo_ident(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::ECHO_IDENT, v)
    }
    /// Sets the echo sequence number.
    #[inline]
    pub fn set_echo_seq_no(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::ECHO_SEQNO, v)
    }
    /// Sets the next-hop MTU.
    #[inline]
    pub fn set_next_hop_mtu(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::MTU, v)
    }
    /// Sets the RFC 4884 length attribute (32-bit words).
    #[inline]
    pub fn set_rfc4884_len_words(&mut self, v: u8) {
        self.buffer.as_mut()[field::LENGTH] = v
    }
    /// Zeroes the 4-byte rest-of-header (bytes 4..8).
    #[inline]
    pub fn clear_rest_of_header(&mut self) {
        self.buffer.as_mut()[4..8].fill(0)
    }
    /// The data after the header, mutably.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
    /// Computes the checksum over the whole buffer and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c)
    }
}

/// Owned form of the ICMPv4 messages the router sends or answers.
///
/// The error messages carry the quoted bytes of the offending datagram as a slice (IP
/// header and the start of its payload) rather than a parsed header: the router quotes
/// what it received, byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv4Repr<'a> {
    /// Echo request.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Payload.
        data: &'a [u8],
    },
    /// Echo reply.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Payload.
        data: &'a [u8],
    },
    /// Destination unreachable.
    DstUnreachable {
        /// Code.
        reason: DstUnreachable,
        /// Next-hop MTU (meaningful with `FragRequired`, zero otherwise).
        next_hop_mtu: u16,
        /// Quoted original datagram.
        quote: &'a [u8],
    },
    /// Time exceeded.
    TimeExceeded {
        /// Code.
        reason: TimeExceeded,
        /// Quoted original datagram.
        quote: &'a [u8],
    },
}

impl<'a> Icmpv4Repr<'a> {
    /// Parses a message, verifying the checksum. Types other than the four above are
    /// `Unsupported`. For error messages with an RFC 4884 extension `quote` is the
    /// original-datagram field only.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a Icmpv4Packet<&'a T>) -> Result<Icmpv4Repr<'a>> {
        p.check_len()?;
        if !p.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        match p.msg_type() {
            Icmpv4Message::EchoRequest => Ok(Icmpv4Repr::EchoRequest {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data: p.data(),
            }),
            Icmpv4Message::EchoReply => Ok(Icmpv4Repr::EchoReply {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data: p.data(),
            }),
            Icmpv4Message::DstUnreachable => Ok(Icmpv4Repr::DstUnreachable {
                reason: DstUnreachable::from(p.msg_code()),
                next_hop_mtu: p.next_hop_mtu(),
                quote: p.original_datagram(),
            }),
            Icmpv4Message::TimeExceeded => Ok(Icmpv4Repr::TimeExceeded {
                reason: TimeExceeded::from(p.msg_code()),
                quote: p.original_datagram(),
            }),
            _ => Err(WireError::Unsupported),
        }
    }

    /// Length of the emitted message.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                Icmpv4Repr::EchoRequest { data, .. } | Icmpv4Repr::EchoReply { data, .. } => {
                    data.len()
                }
                Icmpv4Repr::DstUnreachable { quote, .. }
                | Icmpv4Repr::TimeExceeded { quote, .. } => quote.len(),
            }
    }

    /// Writes the message into `p` (exactly [`buffer_len`](Self::buffer_len) bytes)
    /// and fills the checksum. No RFC 4884 extension is written.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Icmpv4Packet<T>) {
        p.clear_rest_of_header();
        match *self {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            }
            | Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => {
                p.set_msg_type(if matches!(self, Icmpv4Repr::EchoRequest { .. }) {
                    Icmpv4Message::EchoRequest
                } else {
                    Icmpv4Message::EchoReply
                });
                p.set_msg_code(0);
                p.set_echo_ident(ident);
                p.set_echo_seq_no(seq_no);
                p.data_mut()[..data.len()].copy_from_slice(data);
            }
            Icmpv4Repr::DstUnreachable {
                reason,
                next_hop_mtu,
                quote,
            } => {
                p.set_msg_type(Icmpv4Message::DstUnreachable);
                p.set_msg_code(reason.into());
                p.set_next_hop_mtu(next_hop_mtu);
                p.data_mut()[..quote.len()].copy_from_slice(quote);
            }
            Icmpv4Repr::TimeExceeded { reason, quote } => {
                p.set_msg_type(Icmpv4Message::TimeExceeded);
                p.set_msg_code(reason.into());
                p.data_mut()[..quote.len()].copy_from_slice(quote);
            }
        }
        p.fill_checksum();
    }
}

/// RFC 4884 extension structure: the extension header and its objects.
pub mod ext {
    //= RFC 4884 §7: the extension header is Version (4 bits, = 2), Reserved (12 bits,
    //= zero) and a 16-bit checksum over the whole extension structure.
    /// Length of the extension header.
    pub const HEADER_LEN: usize = 4;
    /// Extension structure version.
    pub const VERSION: u8 = 2;
    //= RFC 4884 §7.2: object header = Length (16, in octets, header included),
    //= Class-Num (8), C-Type (8).
    /// Length of an object header.
    pub const OBJECT_HEADER_LEN: usize = 4;
    //= RFC 4950 §7: Class-Num 1 = MPLS Label Stack Class, C-Type 1 = Incoming MPLS
    //= Label Stack.
    /// Class-Num of the MPLS label stack object.
    pub const CLASS_MPLS_LABEL_STACK: u8 = 1;
    /// C-Type of the incoming MPLS label stack.
    pub const CTYPE_INCOMING_MPLS_STACK: u8 = 1;
}

/// A view of an RFC 4884 extension structure: header, then objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcmpExtHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IcmpExtHeader<T> {
    /// Wraps `buffer` (the whole extension structure) without checks.
    pub const fn new_unchecked(buffer: T) -> IcmpExtHeader<T> {
        IcmpExtHeader { buffer }
    }

    /// Wraps `buffer` and checks it holds the 4-byte header.
    pub fn new_checked(buffer: T) -> Result<IcmpExtHeader<T>> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// Checks the buffer holds the 4-byte header.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < ext::HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (2 for RFC 4884).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// Whether the checksum over the structure verifies. RFC 4884 allows a zero
    /// checksum meaning "not computed"; this returns `true` for it too.
    pub fn verify_checksum(&self) -> bool {
        self.checksum() == 0 || checksum::verify(self.buffer.as_ref())
    }

    /// The objects after the header.
    pub fn objects(&self) -> &[u8] {
        &self.buffer.as_ref()[ext::HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpExtHeader<T> {
    /// Writes version 2 and zero reserved bits.
    pub fn set_version(&mut self, version: u8) {
        let b = self.buffer.as_mut();
        b[0] = version << 4;
        b[1] = 0;
    }

    /// The objects after the header, mutably.
    pub fn objects_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ext::HEADER_LEN..]
    }

    /// Computes the checksum over the whole structure and stores it.
    pub fn fill_checksum(&mut self) {
        let b = self.buffer.as_mut();
        put16(b, 2, 0);
        let c = checksum::checksum(b);
        put16(b, 2, c);
    }
}

/// A view of one RFC 4884 extension object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcmpExtObject<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IcmpExtObject<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> IcmpExtObject<T> {
        IcmpExtObject { buffer }
    }

    /// Wraps `buffer` and checks the header and the length field (≥ 4, within the
    /// buffer).
    pub fn new_checked(buffer: T) -> Result<IcmpExtObject<T>> {
        let o = Self::new_unchecked(buffer);
        o.check_len()?;
        Ok(o)
    }

    /// Checks the header fits and the length field is ≥ 4 and fits the buffer.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < ext::OBJECT_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let l = usize::from(self.length());
        if l < ext::OBJECT_HEADER_LEN {
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

    /// Object length in bytes, header included.
    pub fn length(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }

    /// Class-Num.
    pub fn class_num(&self) -> u8 {
        self.buffer.as_ref()[2]
    }

    /// C-Type.
    pub fn c_type(&self) -> u8 {
        self.buffer.as_ref()[3]
    }

    /// The object payload (after the header, up to the length).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[ext::OBJECT_HEADER_LEN..usize::from(self.length())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpExtObject<T> {
    /// Writes the object header.
    pub fn set_header(&mut self, length: u16, class_num: u8, c_type: u8) {
        let b = self.buffer.as_mut();
        put16(b, 0, length);
        b[2] = class_num;
        b[3] = c_type;
    }

    /// The payload area (everything after the header), mutably.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ext::OBJECT_HEADER_LEN..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec;

    // Echo request id 0x0102 seq 3, payload "abcd".
    // Sum: 0800+0000+0102+0003+6162+6364 = 0xcdcb; checksum !0xcdcb = 0x3234.
    static ECHO_BYTES: [u8; 12] = [
        0x08, 0x00, 0x32, 0x34, 0x01, 0x02, 0x00, 0x03, 0x61, 0x62, 0x63, 0x64,
    ];

    // Fragmentation needed, next-hop MTU 1500, quoting 4 bytes.
    static FRAG_NEEDED_BYTES: [u8; 12] = [
        0x03, 0x04, 0x00, 0x00, 0x00, 0x00, 0x05, 0xdc, 0x45, 0x00, 0x05, 0xf0,
    ];

    #[test]
    fn test_echo_checksum_known() {
        let mut b = ECHO_BYTES;
        b[2] = 0;
        b[3] = 0;
        assert_eq!(checksum::checksum(&b), 0x3234);
    }

    #[test]
    fn test_deconstruct() {
        let p = Icmpv4Packet::new_checked(&ECHO_BYTES[..]).unwrap();
        assert_eq!(p.msg_type(), Icmpv4Message::EchoRequest);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.echo_ident(), 0x0102);
        assert_eq!(p.echo_seq_no(), 3);
        assert_eq!(p.data(), b"abcd");
        assert!(p.verify_checksum());
    }

    #[test]
    fn test_construct() {
        let repr = Icmpv4Repr::EchoRequest {
            ident: 0x0102,
            seq_no: 3,
            data: b"abcd",
        };
        let mut b = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[..], &ECHO_BYTES[..]);
    }

    #[test]
    fn test_parse_echo() {
        let p = Icmpv4Packet::new_checked(&ECHO_BYTES[..]).unwrap();
        assert_eq!(
            Icmpv4Repr::parse(&p).unwrap(),
            Icmpv4Repr::EchoRequest {
                ident: 0x0102,
                seq_no: 3,
                data: b"abcd"
            }
        );
    }

    #[test]
    fn test_frag_needed() {
        let repr = Icmpv4Repr::DstUnreachable {
            reason: DstUnreachable::FragRequired,
            next_hop_mtu: 1500,
            quote: &FRAG_NEEDED_BYTES[8..],
        };
        let mut b = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[..2], &FRAG_NEEDED_BYTES[..2]);
        assert_eq!(&b[4..], &FRAG_NEEDED_BYTES[4..]);
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.next_hop_mtu(), 1500);
        assert_eq!(Icmpv4Repr::parse(&p).unwrap(), repr);
    }

    #[test]
    fn test_parse_bad_checksum_and_truncated() {
        let mut b = ECHO_BYTES;
        b[9] ^= 1;
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&p), Err(WireError::BadChecksum));
        assert_eq!(
            Icmpv4Packet::new_checked(&b[..7]),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn test_rfc4884_extension() {
        // Time exceeded, 128-byte original datagram, extension with one MPLS object
        // carrying label 100, TC 0, S 1, TTL 1.
        let mut b = [0u8; HEADER_LEN + 128 + 4 + 8];
        {
            let mut p = Icmpv4Packet::new_unchecked(&mut b[..]);
            p.set_msg_type(Icmpv4Message::TimeExceeded);
            p.set_msg_code(0);
            p.set_rfc4884_len_words(32);
        }
        {
            let mut h = IcmpExtHeader::new_unchecked(&mut b[HEADER_LEN + 128..]);
            h.set_version(ext::VERSION);
            let mut o = IcmpExtObject::new_unchecked(h.objects_mut());
            o.set_header(
                8,
                ext::CLASS_MPLS_LABEL_STACK,
                ext::CTYPE_INCOMING_MPLS_STACK,
            );
            o.payload_mut()[..4].copy_from_slice(&[0x00, 0x06, 0x41, 0x01]);
            h.fill_checksum();
        }
        Icmpv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.original_datagram().len(), 128);
        let h = IcmpExtHeader::new_checked(p.extension().unwrap()).unwrap();
        assert_eq!(h.version(), 2);
        assert!(h.verify_checksum());
        let o = IcmpExtObject::new_checked(h.objects()).unwrap();
        assert_eq!((o.length(), o.class_num(), o.c_type()), (8, 1, 1));
        assert_eq!(o.payload(), &[0x00, 0x06, 0x41, 0x01]);
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(p) = Icmpv4Packet::new_checked(&bytes[..]) {
                let _ = (p.msg_type(), p.msg_code(), p.echo_ident(), p.next_hop_mtu());
                let _ = (p.original_datagram().len(), p.verify_checksum());
                if let Some(e) = p.extension() {
                    if let Ok(h) = IcmpExtHeader::new_checked(e) {
                        let _ = (h.version(), h.verify_checksum());
                        if let Ok(o) = IcmpExtObject::new_checked(h.objects()) {
                            let _ = (o.class_num(), o.c_type(), o.payload().len());
                        }
                    }
                }
                let _ = Icmpv4Repr::parse(&p);
            }
            if let Ok(o) = IcmpExtObject::new_checked(&bytes[..]) {
                let _ = o.payload();
            }
        }
    }
}
