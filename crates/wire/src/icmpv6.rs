//! ICMPv6 (RFC 4443): echo, the four error messages with their codes, the checksum
//! over the IPv6 pseudo-header, and [`write_error`], which builds a whole error packet
//! quoting as much of the offending packet as the IPv6 minimum MTU allows. Neighbour
//! solicitations and advertisements have their own view in [`crate::nd`].

use crate::checksum;
use crate::ipv4::IpProtocol;
use crate::ipv6::{self, Ipv6Packet, Ipv6Repr};
use crate::{Result, WireError, be16, be32, put16, put32};
use core::net::Ipv6Addr;

/// ICMPv6 message types (IANA "ICMPv6 Parameters").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Message {
    /// 1 destination unreachable.
    DstUnreachable,
    /// 2 packet too big.
    PktTooBig,
    /// 3 time exceeded.
    TimeExceeded,
    /// 4 parameter problem.
    ParamProblem,
    /// 128 echo request.
    EchoRequest,
    /// 129 echo reply.
    EchoReply,
    /// 133 router solicitation (RFC 4861).
    RouterSolicit,
    /// 134 router advertisement (RFC 4861).
    RouterAdvert,
    /// 135 neighbour solicitation (RFC 4861).
    NeighborSolicit,
    /// 136 neighbour advertisement (RFC 4861).
    NeighborAdvert,
    /// 137 redirect (RFC 4861).
    Redirect,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for Icmpv6Message {
    fn from(v: u8) -> Self {
        match v {
            1 => Self::DstUnreachable,
            2 => Self::PktTooBig,
            3 => Self::TimeExceeded,
            4 => Self::ParamProblem,
            128 => Self::EchoRequest,
            129 => Self::EchoReply,
            133 => Self::RouterSolicit,
            134 => Self::RouterAdvert,
            135 => Self::NeighborSolicit,
            136 => Self::NeighborAdvert,
            137 => Self::Redirect,
            other => Self::Unknown(other),
        }
    }
}

impl From<Icmpv6Message> for u8 {
    fn from(v: Icmpv6Message) -> u8 {
        match v {
            Icmpv6Message::DstUnreachable => 1,
            Icmpv6Message::PktTooBig => 2,
            Icmpv6Message::TimeExceeded => 3,
            Icmpv6Message::ParamProblem => 4,
            Icmpv6Message::EchoRequest => 128,
            Icmpv6Message::EchoReply => 129,
            Icmpv6Message::RouterSolicit => 133,
            Icmpv6Message::RouterAdvert => 134,
            Icmpv6Message::NeighborSolicit => 135,
            Icmpv6Message::NeighborAdvert => 136,
            Icmpv6Message::Redirect => 137,
            Icmpv6Message::Unknown(other) => other,
        }
    }
}

impl Icmpv6Message {
    //= RFC 4443 §2.1: error messages have a zero in the high-order bit of the type
    //= (types 0 to 127), informational messages a one (128 to 255).
    /// Whether this is an error message (type below 128). An error must never be
    /// answered with an error (RFC 4443 §2.4(e.1)).
    pub fn is_error(self) -> bool {
        u8::from(self) < 128
    }
}

/// Codes of destination unreachable (RFC 4443 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DstUnreachable {
    /// 0 no route to destination.
    NoRoute,
    /// 1 communication with destination administratively prohibited.
    AdminProhibited,
    /// 2 beyond scope of source address.
    BeyondScope,
    /// 3 address unreachable.
    AddrUnreachable,
    /// 4 port unreachable.
    PortUnreachable,
    /// 5 source address failed ingress/egress policy.
    FailedPolicy,
    /// 6 reject route to destination.
    RejectRoute,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for DstUnreachable {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::NoRoute,
            1 => Self::AdminProhibited,
            2 => Self::BeyondScope,
            3 => Self::AddrUnreachable,
            4 => Self::PortUnreachable,
            5 => Self::FailedPolicy,
            6 => Self::RejectRoute,
            other => Self::Unknown(other),
        }
    }
}

impl From<DstUnreachable> for u8 {
    fn from(v: DstUnreachable) -> u8 {
        match v {
            DstUnreachable::NoRoute => 0,
            DstUnreachable::AdminProhibited => 1,
            DstUnreachable::BeyondScope => 2,
            DstUnreachable::AddrUnreachable => 3,
            DstUnreachable::PortUnreachable => 4,
            DstUnreachable::FailedPolicy => 5,
            DstUnreachable::RejectRoute => 6,
            DstUnreachable::Unknown(other) => other,
        }
    }
}

/// Codes of time exceeded (RFC 4443 §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeExceeded {
    /// 0 hop limit exceeded in transit.
    HopLimitExceeded,
    /// 1 fragment reassembly time exceeded.
    FragReassemblyExceeded,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for TimeExceeded {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::HopLimitExceeded,
            1 => Self::FragReassemblyExceeded,
            other => Self::Unknown(other),
        }
    }
}

impl From<TimeExceeded> for u8 {
    fn from(v: TimeExceeded) -> u8 {
        match v {
            TimeExceeded::HopLimitExceeded => 0,
            TimeExceeded::FragReassemblyExceeded => 1,
            TimeExceeded::Unknown(other) => other,
        }
    }
}

/// Codes of parameter problem (RFC 4443 §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamProblem {
    /// 0 erroneous header field encountered.
    ErroneousHeaderField,
    /// 1 unrecognized next header type encountered.
    UnrecognizedNextHeader,
    /// 2 unrecognized IPv6 option encountered.
    UnrecognizedOption,
    /// Any other value (3, an incomplete header chain in the first fragment, is
    /// RFC 7112's).
    Unknown(u8),
}

impl From<u8> for ParamProblem {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::ErroneousHeaderField,
            1 => Self::UnrecognizedNextHeader,
            2 => Self::UnrecognizedOption,
            other => Self::Unknown(other),
        }
    }
}

impl From<ParamProblem> for u8 {
    fn from(v: ParamProblem) -> u8 {
        match v {
            ParamProblem::ErroneousHeaderField => 0,
            ParamProblem::UnrecognizedNextHeader => 1,
            ParamProblem::UnrecognizedOption => 2,
            ParamProblem::Unknown(other) => other,
        }
    }
}

//= RFC 4443 §2.1: Type(8) Code(8) Checksum(16) Message Body; §3.2: the packet too
//= big MTU and §3.4: the parameter problem pointer are the 32-bit word after the
//= checksum; §4.1: echo Identifier(16) Sequence Number(16) there.
mod field {
    pub(super) const TYPE: usize = 0;
    pub(super) const CODE: usize = 1;
    pub(super) const CHECKSUM: usize = 2;
    pub(super) const ECHO_IDENT: usize = 4;
    pub(super) const ECHO_SEQNO: usize = 6;
    pub(super) const MTU: usize = 4;
    pub(super) const POINTER: usize = 4;
}

/// Length of the ICMPv6 header (type, code, checksum, and the 4-byte word after them
/// that every message of this module has).
pub const HEADER_LEN: usize = 8;

/// IP protocol number of ICMPv6 (the pseudo-header's next header).
const PROTO_ICMPV6: u8 = 58;

//= RFC 4443 §2.4(c): every ICMPv6 error message includes "as much of invoking packet
//= as possible without the ICMPv6 packet exceeding the minimum IPv6 MTU".
/// Most bytes of the offending packet an error message quotes: the minimum MTU less
/// the IPv6 and ICMPv6 headers (1232).
pub const MAX_QUOTE_LEN: usize = ipv6::MIN_MTU - ipv6::HEADER_LEN - HEADER_LEN;

/// A view of an ICMPv6 message: the buffer is the whole message (the upper-layer
/// packet), which the checksum covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Icmpv6Packet<T> {
        Icmpv6Packet { buffer }
    }

    /// Wraps `buffer` and checks it holds the 8-byte header.
    pub fn new_checked(buffer: T) -> Result<Icmpv6Packet<T>> {
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

    /// The whole message.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Message type.
    #[inline]
    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Message::from(self.buffer.as_ref()[field::TYPE])
    }

    /// Message code (meaning depends on the type).
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Whether this is an error message (type below 128).
    #[inline]
    pub fn is_error(&self) -> bool {
        self.msg_type().is_error()
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

    /// MTU of a packet too big message.
    #[inline]
    pub fn mtu(&self) -> u32 {
        be32(self.buffer.as_ref(), field::MTU)
    }

    /// Pointer of a parameter problem message: the offset in the offending packet of
    /// the octet where the problem lies.
    #[inline]
    pub fn pointer(&self) -> u32 {
        be32(self.buffer.as_ref(), field::POINTER)
    }

    /// Everything after the 8-byte header: echo data, or the quoted packet.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    //= RFC 4443 §2.3: the checksum covers the ICMPv6 message and the IPv6
    //= pseudo-header (RFC 8200 §8.1) with next header 58.
    /// Whether the checksum verifies, with `src` and `dst` (the final destination) in
    /// the pseudo-header.
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let b = self.buffer.as_ref();
        checksum::combine(&[
            checksum::pseudo_header_v6(src, dst, PROTO_ICMPV6, b.len() as u32),
            checksum::data(b),
        ]) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Sets the type.
    #[inline]
    pub fn set_msg_type(&mut self, v: Icmpv6Message) {
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
    /// Sets the MTU of a packet too big message.
    #[inline]
    pub fn set_mtu(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::MTU, v)
    }
    /// Sets the pointer of a parameter problem message.
    #[inline]
    pub fn set_pointer(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::POINTER, v)
    }
    /// Zeroes the 4-byte word after the checksum (the unused field of destination
    /// unreachable and time exceeded).
    #[inline]
    pub fn clear_rest_of_header(&mut self) {
        self.buffer.as_mut()[4..8].fill(0)
    }
    /// The data after the header, mutably.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
    /// Computes the checksum over the whole buffer and the pseudo-header of `src` and
    /// `dst` and stores it.
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let c = !checksum::combine(&[
            checksum::pseudo_header_v6(src, dst, PROTO_ICMPV6, b.len() as u32),
            checksum::data(b),
        ]);
        self.set_checksum(c)
    }
}

/// Owned form of the ICMPv6 messages the router sends or answers.
///
/// The error messages carry the quoted bytes of the offending packet as a slice (its
/// IPv6 header and as much of the rest as was quoted): the router quotes what it
/// received, byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv6Repr<'a> {
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
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// Packet too big.
    PktTooBig {
        /// MTU of the next-hop link.
        mtu: u32,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// Time exceeded.
    TimeExceeded {
        /// Code.
        reason: TimeExceeded,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
    /// Parameter problem.
    ParamProblem {
        /// Code.
        reason: ParamProblem,
        /// Offset of the offending octet in the offending packet.
        pointer: u32,
        /// Quoted offending packet.
        quote: &'a [u8],
    },
}

impl<'a> Icmpv6Repr<'a> {
    /// Parses a message, verifying the checksum against the pseudo-header of `src`
    /// and `dst`. Types other than the six above are `Unsupported`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        p: &'a Icmpv6Packet<&'a T>,
        src: Ipv6Addr,
        dst: Ipv6Addr,
    ) -> Result<Icmpv6Repr<'a>> {
        p.check_len()?;
        if !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        match p.msg_type() {
            Icmpv6Message::EchoRequest => Ok(Icmpv6Repr::EchoRequest {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data: p.data(),
            }),
            Icmpv6Message::EchoReply => Ok(Icmpv6Repr::EchoReply {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data: p.data(),
            }),
            Icmpv6Message::DstUnreachable => Ok(Icmpv6Repr::DstUnreachable {
                reason: DstUnreachable::from(p.msg_code()),
                quote: p.data(),
            }),
            Icmpv6Message::PktTooBig => Ok(Icmpv6Repr::PktTooBig {
                mtu: p.mtu(),
                quote: p.data(),
            }),
            Icmpv6Message::TimeExceeded => Ok(Icmpv6Repr::TimeExceeded {
                reason: TimeExceeded::from(p.msg_code()),
                quote: p.data(),
            }),
            Icmpv6Message::ParamProblem => Ok(Icmpv6Repr::ParamProblem {
                reason: ParamProblem::from(p.msg_code()),
                pointer: p.pointer(),
                quote: p.data(),
            }),
            _ => Err(WireError::Unsupported),
        }
    }

    /// Whether this is an error message.
    pub const fn is_error(&self) -> bool {
        self.quote().is_some()
    }

    /// The quoted offending packet of an error message; `None` for echo.
    pub const fn quote(&self) -> Option<&'a [u8]> {
        match *self {
            Icmpv6Repr::EchoRequest { .. } | Icmpv6Repr::EchoReply { .. } => None,
            Icmpv6Repr::DstUnreachable { quote, .. }
            | Icmpv6Repr::PktTooBig { quote, .. }
            | Icmpv6Repr::TimeExceeded { quote, .. }
            | Icmpv6Repr::ParamProblem { quote, .. } => Some(quote),
        }
    }

    /// The same message with `quote` in place of its quote (echo is returned as is).
    const fn with_quote(self, quote: &'a [u8]) -> Icmpv6Repr<'a> {
        match self {
            Icmpv6Repr::EchoRequest { .. } | Icmpv6Repr::EchoReply { .. } => self,
            Icmpv6Repr::DstUnreachable { reason, .. } => {
                Icmpv6Repr::DstUnreachable { reason, quote }
            }
            Icmpv6Repr::PktTooBig { mtu, .. } => Icmpv6Repr::PktTooBig { mtu, quote },
            Icmpv6Repr::TimeExceeded { reason, .. } => Icmpv6Repr::TimeExceeded { reason, quote },
            Icmpv6Repr::ParamProblem {
                reason, pointer, ..
            } => Icmpv6Repr::ParamProblem {
                reason,
                pointer,
                quote,
            },
        }
    }

    /// Length of the emitted message.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                Icmpv6Repr::EchoRequest { data, .. } | Icmpv6Repr::EchoReply { data, .. } => {
                    data.len()
                }
                Icmpv6Repr::DstUnreachable { quote, .. }
                | Icmpv6Repr::PktTooBig { quote, .. }
                | Icmpv6Repr::TimeExceeded { quote, .. }
                | Icmpv6Repr::ParamProblem { quote, .. } => quote.len(),
            }
    }

    /// Writes the message into `p` (exactly [`buffer_len`](Self::buffer_len) bytes)
    /// and fills the checksum with the pseudo-header of `src` and `dst`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        p: &mut Icmpv6Packet<T>,
        src: Ipv6Addr,
        dst: Ipv6Addr,
    ) {
        p.clear_rest_of_header();
        let (typ, code, body) = match *self {
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data,
            }
            | Icmpv6Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => {
                p.set_echo_ident(ident);
                p.set_echo_seq_no(seq_no);
                let typ = if matches!(self, Icmpv6Repr::EchoRequest { .. }) {
                    Icmpv6Message::EchoRequest
                } else {
                    Icmpv6Message::EchoReply
                };
                (typ, 0, data)
            }
            Icmpv6Repr::DstUnreachable { reason, quote } => {
                (Icmpv6Message::DstUnreachable, reason.into(), quote)
            }
            Icmpv6Repr::PktTooBig { mtu, quote } => {
                p.set_mtu(mtu);
                (Icmpv6Message::PktTooBig, 0, quote)
            }
            Icmpv6Repr::TimeExceeded { reason, quote } => {
                (Icmpv6Message::TimeExceeded, reason.into(), quote)
            }
            Icmpv6Repr::ParamProblem {
                reason,
                pointer,
                quote,
            } => {
                p.set_pointer(pointer);
                (Icmpv6Message::ParamProblem, reason.into(), quote)
            }
        };
        p.set_msg_type(typ);
        p.set_msg_code(code);
        p.data_mut()[..body.len()].copy_from_slice(body);
        p.fill_checksum(src, dst);
    }
}

/// Writes into `out` a whole IPv6 packet carrying the error message `msg`, from `src`
/// to the source of the offending packet, with hop limit `hop_limit` (traffic class
/// and flow label zero). Returns the bytes written.
///
/// The quote of `msg` is the offending packet from its IPv6 header, as received; the
/// message quotes as much of it as fits in `out` and in the IPv6 minimum MTU
/// (RFC 4443 §2.4(c)): at most [`MAX_QUOTE_LEN`] bytes, and no Ethernet padding past
/// its payload length. Whether an error may be sent at all is the caller's question
/// ([`may_send_error`]).
///
/// Errors: [`WireError::Unsupported`] when `msg` is not an error message,
/// [`WireError::Truncated`] when the quote is shorter than an IPv6 header or `out`
/// cannot hold the two headers and the quoted IPv6 header,
/// [`WireError::BadVersion`] when the quote is not IPv6.
pub fn write_error(
    msg: &Icmpv6Repr<'_>,
    src: Ipv6Addr,
    hop_limit: u8,
    out: &mut [u8],
) -> Result<usize> {
    let orig = msg.quote().ok_or(WireError::Unsupported)?;
    if orig.len() < ipv6::HEADER_LEN {
        return Err(WireError::Truncated);
    }
    let o = Ipv6Packet::new_unchecked(orig);
    if o.version() != 6 {
        return Err(WireError::BadVersion);
    }
    let room = out.len().min(ipv6::MIN_MTU);
    if room < ipv6::HEADER_LEN + HEADER_LEN + ipv6::HEADER_LEN {
        return Err(WireError::Truncated);
    }
    let whole = orig
        .len()
        .min(ipv6::HEADER_LEN + usize::from(o.payload_len()));
    let quote_len = whole.min(room - ipv6::HEADER_LEN - HEADER_LEN);
    let dst = o.src_addr();
    let msg = msg.with_quote(&orig[..quote_len]);
    let len = ipv6::HEADER_LEN + msg.buffer_len();
    let (ip, icmp) = out[..len].split_at_mut(ipv6::HEADER_LEN);
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.len(),
        hop_limit,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(ip));
    msg.emit(&mut Icmpv6Packet::new_unchecked(icmp), src, dst);
    Ok(len)
}

//= RFC 4443 §2.4(e): no ICMPv6 error message is originated as a result of receiving
//= (e.1) an ICMPv6 error message, (e.2) a packet destined to an IPv6 multicast address
//= (except packet too big, and parameter problem code 2 about an option whose type
//= asks for it), or (e.6) a packet whose source address does not uniquely identify a
//= single node (the unspecified address, a multicast address).
/// Whether an error of type `msg` and code `code` may answer the offending packet
/// `orig` (from its IPv6 header) as far as its bytes tell: not about an ICMPv6 error
/// message, not about a packet to a multicast destination (but packet too big and
/// parameter problem code 2, whose option type the caller has checked, may), not to an
/// unspecified or multicast source. What the bytes cannot tell (a link-layer multicast
/// or broadcast destination, a known anycast source, the rate limit) stays with the
/// caller.
///
/// A packet whose extension-header chain cannot be walked may be answered (the error
/// may well be about that chain); one whose ICMPv6 type lies past the bytes given may
/// not, since it may be an error.
pub fn may_send_error(orig: &[u8], msg: Icmpv6Message, code: u8) -> bool {
    if orig.len() < ipv6::HEADER_LEN {
        return false;
    }
    let o = Ipv6Packet::new_unchecked(orig);
    if o.version() != 6 {
        return false;
    }
    let src = o.src_addr();
    if src.is_unspecified() || src.is_multicast() {
        return false;
    }
    let to_multicast_ok = msg == Icmpv6Message::PktTooBig
        || (msg == Icmpv6Message::ParamProblem && code == ParamProblem::UnrecognizedOption.into());
    if o.dst_addr().is_multicast() && !to_multicast_ok {
        return false;
    }
    let Ok(e) = ipv6::walk_ext_headers(orig, o.next_header(), ipv6::HEADER_LEN) else {
        return true;
    };
    if e.upper_layer != IpProtocol::Icmpv6 || e.fragment.is_some_and(|f| !f.is_first()) {
        return true;
    }
    orig.get(e.upper_at)
        .is_some_and(|&t| !Icmpv6Message::from(t).is_error())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_hex;
    use proptest::prelude::*;
    use std::vec;

    const HOST: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const PEER: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
    const ROUTER: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xfe);

    // 2001:db8::1 -> 2001:db8::2 hop limit 64, echo request id 0x1234 seq 1 "abcd"
    // (scapy; checksum 0x4d48).
    const ECHO_HEX: &str = "60000000000c3a4020010db8000000000000000000000001\
        20010db800000000000000000000000280004d481234000161626364";

    // The answer from 2001:db8::2: echo reply, checksum 0x4c48 (scapy).
    const REPLY_HEX: &str = "60000000000c3a4020010db8000000000000000000000002\
        20010db800000000000000000000000181004c481234000161626364";

    // The offending packet of the error tests: 2001:db8::1 -> 2001:db8:1::1 hop limit
    // 64, UDP 1024 -> 33434 with 20 bytes of "x" (scapy).
    const ORIG_HEX: &str = "60000000001c114020010db8000000000000000000000001\
        20010db80001000000000000000000010400829a001c68f2\
        7878787878787878787878787878787878787878";

    // IPv6 and ICMPv6 headers of errors about ORIG from 2001:db8::fe, hop limit 64
    // (scapy): packet too big MTU 1400, time exceeded code 0, parameter problem code 1
    // pointer 6, destination unreachable code 4.
    const PTB_HEAD_HEX: &str = "60000000004c3a4020010db80000000000000000000000fe\
        20010db800000000000000000000000102002a6100000578";
    const TE_HEAD_HEX: &str = "60000000004c3a4020010db80000000000000000000000fe\
        20010db800000000000000000000000103002ed900000000";
    const PP_HEAD_HEX: &str = "60000000004c3a4020010db80000000000000000000000fe\
        20010db800000000000000000000000104012dd200000006";
    const DU_HEAD_HEX: &str = "60000000004c3a4020010db80000000000000000000000fe\
        20010db8000000000000000000000001010430d500000000";

    fn error_bytes(head: &str) -> vec::Vec<u8> {
        let mut b = from_hex(head);
        b.extend_from_slice(&from_hex(ORIG_HEX));
        b
    }

    #[test]
    fn test_deconstruct_echo() {
        let b = from_hex(ECHO_HEX);
        let ip = Ipv6Packet::new_checked(&b[..]).unwrap();
        let p = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Message::EchoRequest);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0x4d48);
        assert_eq!(p.echo_ident(), 0x1234);
        assert_eq!(p.echo_seq_no(), 1);
        assert_eq!(p.data(), b"abcd");
        assert!(!p.is_error());
        assert!(p.verify_checksum(HOST, PEER));
        assert!(!p.verify_checksum(HOST, ROUTER));
    }

    #[test]
    fn test_construct_echo() {
        let b = from_hex(ECHO_HEX);
        let repr = Icmpv6Repr::EchoRequest {
            ident: 0x1234,
            seq_no: 1,
            data: b"abcd",
        };
        let mut out = vec![0xa5u8; repr.buffer_len()];
        repr.emit(&mut Icmpv6Packet::new_unchecked(&mut out[..]), HOST, PEER);
        assert_eq!(&out[..], &b[40..]);
    }

    #[test]
    fn test_echo_reply_in_place() {
        // Answering in place: swap the addresses, turn the type, refill the checksum.
        let mut b = from_hex(ECHO_HEX);
        let mut ip = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        ip.set_src_addr(dst);
        ip.set_dst_addr(src);
        let mut p = Icmpv6Packet::new_checked(ip.payload_mut()).unwrap();
        p.set_msg_type(Icmpv6Message::EchoReply);
        p.fill_checksum(dst, src);
        assert_eq!(b, from_hex(REPLY_HEX));
    }

    #[test]
    fn test_parse_echo() {
        let b = from_hex(ECHO_HEX);
        let p = Icmpv6Packet::new_checked(&b[40..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&p, HOST, PEER).unwrap(),
            Icmpv6Repr::EchoRequest {
                ident: 0x1234,
                seq_no: 1,
                data: b"abcd"
            }
        );
        assert_eq!(
            Icmpv6Repr::parse(&p, HOST, ROUTER),
            Err(WireError::BadChecksum)
        );
    }

    #[test]
    fn test_write_errors_known_bytes() {
        let orig = from_hex(ORIG_HEX);
        let cases = [
            (
                PTB_HEAD_HEX,
                Icmpv6Repr::PktTooBig {
                    mtu: 1400,
                    quote: &orig[..],
                },
            ),
            (
                TE_HEAD_HEX,
                Icmpv6Repr::TimeExceeded {
                    reason: TimeExceeded::HopLimitExceeded,
                    quote: &orig[..],
                },
            ),
            (
                PP_HEAD_HEX,
                Icmpv6Repr::ParamProblem {
                    reason: ParamProblem::UnrecognizedNextHeader,
                    pointer: 6,
                    quote: &orig[..],
                },
            ),
            (
                DU_HEAD_HEX,
                Icmpv6Repr::DstUnreachable {
                    reason: DstUnreachable::PortUnreachable,
                    quote: &orig[..],
                },
            ),
        ];
        for (head, repr) in cases {
            let want = error_bytes(head);
            let mut out = [0xa5u8; 1500];
            let n = write_error(&repr, ROUTER, 64, &mut out).unwrap();
            assert_eq!(&out[..n], &want[..]);
            let ip = Ipv6Packet::new_checked(&out[..n]).unwrap();
            let p = Icmpv6Packet::new_checked(ip.payload()).unwrap();
            assert!(p.is_error());
            assert_eq!(Icmpv6Repr::parse(&p, ROUTER, HOST).unwrap(), repr);
        }
    }

    #[test]
    fn test_write_error_quotes_up_to_min_mtu() {
        // A 1500-byte packet: the error is 1280 bytes and quotes the first 1232.
        let mut orig = vec![0x5au8; 1500];
        orig[..40].copy_from_slice(&from_hex(ORIG_HEX)[..40]);
        orig[4..6].copy_from_slice(&1460u16.to_be_bytes());
        let repr = Icmpv6Repr::PktTooBig {
            mtu: 1280,
            quote: &orig,
        };
        let mut out = [0u8; 2000];
        let n = write_error(&repr, ROUTER, 255, &mut out).unwrap();
        assert_eq!(n, ipv6::MIN_MTU);
        let ip = Ipv6Packet::new_checked(&out[..n]).unwrap();
        assert_eq!(ip.hop_limit(), 255);
        assert_eq!(ip.dst_addr(), HOST);
        let p = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert!(p.verify_checksum(ROUTER, HOST));
        assert_eq!(p.mtu(), 1280);
        assert_eq!(p.data(), &orig[..MAX_QUOTE_LEN]);
        // A smaller buffer quotes less.
        let n = write_error(&repr, ROUTER, 255, &mut out[..200]).unwrap();
        assert_eq!(n, 200);
        let ip = Ipv6Packet::new_checked(&out[..n]).unwrap();
        assert!(
            Icmpv6Packet::new_checked(ip.payload())
                .unwrap()
                .verify_checksum(ROUTER, HOST)
        );
        // Ethernet padding after the offending packet is not quoted.
        let mut padded = from_hex(ORIG_HEX);
        padded.extend_from_slice(&[0; 10]);
        let repr = Icmpv6Repr::TimeExceeded {
            reason: TimeExceeded::HopLimitExceeded,
            quote: &padded,
        };
        let n = write_error(&repr, ROUTER, 64, &mut out).unwrap();
        assert_eq!(&out[..n], &error_bytes(TE_HEAD_HEX)[..]);
    }

    #[test]
    fn test_write_error_refusals() {
        let orig = from_hex(ORIG_HEX);
        let mut out = [0u8; 1280];
        let echo = Icmpv6Repr::EchoReply {
            ident: 1,
            seq_no: 1,
            data: &[],
        };
        assert_eq!(
            write_error(&echo, ROUTER, 64, &mut out),
            Err(WireError::Unsupported)
        );
        let te = |quote| Icmpv6Repr::TimeExceeded {
            reason: TimeExceeded::HopLimitExceeded,
            quote,
        };
        assert_eq!(
            write_error(&te(&orig[..39]), ROUTER, 64, &mut out),
            Err(WireError::Truncated)
        );
        assert_eq!(
            write_error(&te(&orig), ROUTER, 64, &mut out[..87]),
            Err(WireError::Truncated)
        );
        assert_eq!(write_error(&te(&orig), ROUTER, 64, &mut out[..88]), Ok(88));
        let mut v4 = orig.clone();
        v4[0] = 0x45;
        assert_eq!(
            write_error(&te(&v4), ROUTER, 64, &mut out),
            Err(WireError::BadVersion)
        );
    }

    #[test]
    fn test_may_send_error() {
        let te = Icmpv6Message::TimeExceeded;
        let orig = from_hex(ORIG_HEX);
        assert!(may_send_error(&orig, te, 0));
        assert!(!may_send_error(&orig[..39], te, 0));
        // An echo request may be answered with an error, an error may not.
        let echo = from_hex(ECHO_HEX);
        assert!(may_send_error(&echo, te, 0));
        let err = error_bytes(TE_HEAD_HEX);
        assert!(!may_send_error(&err, te, 0));
        // ... even when only its first bytes are at hand, but not when its type is not.
        assert!(!may_send_error(&err[..41], te, 0));
        assert!(!may_send_error(&err[..40], te, 0));
        // To a multicast destination: packet too big and parameter problem code 2 only.
        let mut mc = orig.clone();
        mc[24..40].copy_from_slice(&ipv6::ALL_NODES.octets());
        assert!(!may_send_error(&mc, te, 0));
        assert!(!may_send_error(&mc, Icmpv6Message::DstUnreachable, 4));
        assert!(may_send_error(&mc, Icmpv6Message::PktTooBig, 0));
        assert!(may_send_error(&mc, Icmpv6Message::ParamProblem, 2));
        assert!(!may_send_error(&mc, Icmpv6Message::ParamProblem, 1));
        // From the unspecified or a multicast source: never.
        let mut s = orig.clone();
        s[8..24].fill(0);
        assert!(!may_send_error(&s, Icmpv6Message::PktTooBig, 0));
        s[8] = 0xff;
        assert!(!may_send_error(&s, Icmpv6Message::PktTooBig, 0));
    }

    #[test]
    fn test_is_error() {
        for t in 0..=u8::MAX {
            let m = Icmpv6Message::from(t);
            assert_eq!(u8::from(m), t);
            assert_eq!(m.is_error(), t < 128);
        }
        for c in 0..=u8::MAX {
            assert_eq!(u8::from(DstUnreachable::from(c)), c);
            assert_eq!(u8::from(TimeExceeded::from(c)), c);
            assert_eq!(u8::from(ParamProblem::from(c)), c);
        }
        assert_eq!(DstUnreachable::from(6), DstUnreachable::RejectRoute);
        assert_eq!(DstUnreachable::from(5), DstUnreachable::FailedPolicy);
    }

    #[test]
    fn test_truncated() {
        assert_eq!(
            Icmpv6Packet::new_checked(&[0u8; 7][..]),
            Err(WireError::Truncated)
        );
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(p) = Icmpv6Packet::new_checked(&bytes[..]) {
                let _ = (p.msg_type(), p.msg_code(), p.echo_ident(), p.mtu(), p.pointer());
                let _ = (p.data().len(), p.is_error(), p.verify_checksum(HOST, PEER));
                let _ = Icmpv6Repr::parse(&p, HOST, PEER);
            }
            let _ = may_send_error(&bytes, Icmpv6Message::TimeExceeded, 0);
            let quote = &bytes[..];
            let mut out = [0u8; 300];
            if let Ok(n) = write_error(&Icmpv6Repr::PktTooBig { mtu: 1280, quote }, ROUTER, 64, &mut out) {
                prop_assert!(n <= out.len());
            }
        }

        #[test]
        fn prop_checksum_written_then_verified(
            src in any::<[u8; 16]>(),
            dst in any::<[u8; 16]>(),
            ident in any::<u16>(),
            seq_no in any::<u16>(),
            data in proptest::collection::vec(any::<u8>(), 0..100),
            request in any::<bool>(),
        ) {
            let (src, dst) = (Ipv6Addr::from(src), Ipv6Addr::from(dst));
            let repr = if request {
                Icmpv6Repr::EchoRequest { ident, seq_no, data: &data }
            } else {
                Icmpv6Repr::EchoReply { ident, seq_no, data: &data }
            };
            let mut b = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), src, dst);
            let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
            prop_assert!(p.verify_checksum(src, dst));
            prop_assert_eq!(Icmpv6Repr::parse(&p, src, dst), Ok(repr));
        }

        #[test]
        fn prop_error_round_trip(
            kind in 0u8..4,
            code in any::<u8>(),
            word in any::<u32>(),
            len in 0usize..1500,
            room in 88usize..1400,
            hop_limit in any::<u8>(),
        ) {
            let mut orig = vec![0x77u8; ipv6::HEADER_LEN + len];
            orig[..40].copy_from_slice(&from_hex(ORIG_HEX)[..40]);
            orig[4..6].copy_from_slice(&(len as u16).to_be_bytes());
            let repr = match kind {
                0 => Icmpv6Repr::DstUnreachable { reason: code.into(), quote: &orig },
                1 => Icmpv6Repr::PktTooBig { mtu: word, quote: &orig },
                2 => Icmpv6Repr::TimeExceeded { reason: code.into(), quote: &orig },
                _ => Icmpv6Repr::ParamProblem { reason: code.into(), pointer: word, quote: &orig },
            };
            let mut out = vec![0u8; room];
            let n = write_error(&repr, ROUTER, hop_limit, &mut out).unwrap();
            prop_assert_eq!(n, (48 + orig.len()).min(room).min(1280));
            let ip = Ipv6Packet::new_checked(&out[..n]).unwrap();
            prop_assert_eq!(ip.dst_addr(), HOST);
            let p = Icmpv6Packet::new_checked(ip.payload()).unwrap();
            let back = Icmpv6Repr::parse(&p, ROUTER, HOST).unwrap();
            prop_assert_eq!(back, repr.with_quote(&orig[..n - 48]));
        }
    }
}
