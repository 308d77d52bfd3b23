//! Neighbour discovery (RFC 4861), the part that resolves addresses: neighbour
//! solicitations and advertisements (one view, their layouts are the same), their
//! options with the link-layer address ones, the validity checks of RFC 4861 §7.1.1
//! and §7.1.2 that the bytes can answer ([`validate`]), and writers of whole IPv6
//! packets: [`write_ns`] to the target's solicited-node group and [`write_na`].
//! Router discovery and redirects are not modelled.

use crate::ethernet::EthernetAddress;
use crate::icmpv6::{Icmpv6Message, Icmpv6Packet};
use crate::ipv4::IpProtocol;
use crate::ipv6::{self, Ipv6Packet, Ipv6Repr, addr_at, is_solicited_node, solicited_node};
use crate::{Result, WireError};
use core::net::Ipv6Addr;

//= RFC 4861 §4.3: NS is Type(8) Code(8) Checksum(16) Reserved(32) Target Address(128)
//= Options; §4.4: NA is Type Code Checksum R(1) S(1) O(1) Reserved(29) Target Address
//= Options.
mod field {
    pub(super) const FLAGS: usize = 4;
    pub(super) const TARGET: usize = 8;
    pub(super) const OPTIONS: usize = 24;
}

/// Length of a neighbour solicitation or advertisement without options.
pub const HEADER_LEN: usize = field::OPTIONS;

//= RFC 4861 §7.1.1, §7.1.2: a valid NS or NA has an IP hop limit of 255, which no
//= router forwards: the message comes from the link.
/// The IP hop limit of every neighbour discovery message.
pub const HOP_LIMIT: u8 = 255;

/// Length of a link-layer address option for Ethernet (RFC 2464 §8: length 1).
pub const LL_ADDR_OPTION_LEN: usize = 8;

/// Bytes [`write_ns`] and [`write_na`] write with a link-layer address option:
/// 40 (IPv6) + 24 + 8.
pub const PACKET_LEN: usize = ipv6::HEADER_LEN + HEADER_LEN + LL_ADDR_OPTION_LEN;

const FLAG_ROUTER: u8 = 0x80;
const FLAG_SOLICITED: u8 = 0x40;
const FLAG_OVERRIDE: u8 = 0x20;

/// Neighbour discovery option types (RFC 4861 §4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdOptionType {
    /// 1 source link-layer address.
    SourceLinkLayerAddr,
    /// 2 target link-layer address.
    TargetLinkLayerAddr,
    /// 3 prefix information.
    PrefixInfo,
    /// 4 redirected header.
    RedirectedHeader,
    /// 5 MTU.
    Mtu,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for NdOptionType {
    fn from(v: u8) -> Self {
        match v {
            1 => Self::SourceLinkLayerAddr,
            2 => Self::TargetLinkLayerAddr,
            3 => Self::PrefixInfo,
            4 => Self::RedirectedHeader,
            5 => Self::Mtu,
            other => Self::Unknown(other),
        }
    }
}

impl From<NdOptionType> for u8 {
    fn from(v: NdOptionType) -> u8 {
        match v {
            NdOptionType::SourceLinkLayerAddr => 1,
            NdOptionType::TargetLinkLayerAddr => 2,
            NdOptionType::PrefixInfo => 3,
            NdOptionType::RedirectedHeader => 4,
            NdOptionType::Mtu => 5,
            NdOptionType::Unknown(other) => other,
        }
    }
}

//= RFC 4861 §4.6: an option is Type(8) Length(8) and its data; the length counts
//= 8-octet units, type and length included, and "the value 0 is invalid. Nodes MUST
//= silently discard an ND packet that contains an option with length zero."
/// Length unit of an option.
const OPTION_UNIT: usize = 8;

/// A view of one neighbour discovery option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NdOption<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> NdOption<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> NdOption<T> {
        NdOption { buffer }
    }

    /// Wraps `buffer` and runs [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<NdOption<T>> {
        let o = Self::new_unchecked(buffer);
        o.check_len()?;
        Ok(o)
    }

    /// Checks the type and length fit, the length is not zero
    /// ([`WireError::BadLength`]) and the option fits the buffer.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < 2 {
            return Err(WireError::Truncated);
        }
        if b[1] == 0 {
            return Err(WireError::BadLength);
        }
        if self.total_len() > b.len() {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Option type.
    #[inline]
    pub fn option_type(&self) -> NdOptionType {
        NdOptionType::from(self.buffer.as_ref()[0])
    }

    /// Length field, in units of 8 bytes.
    #[inline]
    pub fn length(&self) -> u8 {
        self.buffer.as_ref()[1]
    }

    /// Length of the option in bytes, type and length included.
    #[inline]
    pub fn total_len(&self) -> usize {
        usize::from(self.length()) * OPTION_UNIT
    }

    /// The option data: after type and length, up to the option's length.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[2..self.total_len()]
    }

    //= RFC 4861 §4.6.1: the source/target link-layer address option carries the
    //= address; RFC 2464 §8: on Ethernet its length is 1 and the address is 6 octets.
    /// The Ethernet address of a source or target link-layer address option of length
    /// 1; `None` for other options and lengths.
    pub fn link_layer_addr(&self) -> Option<EthernetAddress> {
        match self.option_type() {
            NdOptionType::SourceLinkLayerAddr | NdOptionType::TargetLinkLayerAddr
                if self.length() == 1 =>
            {
                EthernetAddress::from_bytes(self.data())
            }
            _ => None,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NdOption<T> {
    /// Sets the option type.
    #[inline]
    pub fn set_option_type(&mut self, v: NdOptionType) {
        self.buffer.as_mut()[0] = v.into()
    }
    /// Sets the length field (units of 8 bytes).
    #[inline]
    pub fn set_length(&mut self, v: u8) {
        self.buffer.as_mut()[1] = v
    }
    /// Writes a link-layer address option of type `kind` for Ethernet address `mac`
    /// (8 bytes).
    pub fn set_link_layer_addr(&mut self, kind: NdOptionType, mac: EthernetAddress) {
        self.set_option_type(kind);
        self.set_length(1);
        self.buffer.as_mut()[2..LL_ADDR_OPTION_LEN].copy_from_slice(&mac.0)
    }
}

/// The options of a neighbour discovery message, in order. An option of length zero
/// yields [`WireError::BadLength`], one that runs past the message
/// [`WireError::Truncated`]; either ends the walk (the message is invalid, RFC 4861
/// §4.6). Every step consumes at least 8 bytes, so the walk always ends.
#[derive(Debug, Clone)]
pub struct NdOptions<'a> {
    rest: &'a [u8],
}

impl<'a> NdOptions<'a> {
    /// Walks the options in `buf` (everything after the fixed part of a message).
    pub const fn new(buf: &'a [u8]) -> NdOptions<'a> {
        NdOptions { rest: buf }
    }
}

impl<'a> Iterator for NdOptions<'a> {
    type Item = Result<NdOption<&'a [u8]>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match NdOption::new_checked(self.rest) {
            Ok(o) => {
                let (this, rest) = self.rest.split_at(o.total_len());
                self.rest = rest;
                Some(Ok(NdOption::new_unchecked(this)))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// Checks every option of `buf` and returns the Ethernet address of the first
/// link-layer address option of type `kind`.
fn find_ll_addr(buf: &[u8], kind: NdOptionType) -> Result<Option<EthernetAddress>> {
    let mut found = None;
    for o in NdOptions::new(buf) {
        let o = o?;
        if found.is_none() && o.option_type() == kind {
            found = o.link_layer_addr();
        }
    }
    Ok(found)
}

/// A view of a neighbour solicitation or advertisement: the whole ICMPv6 message, from
/// its type to the end of its options. `check_len` guarantees the 24-byte fixed part;
/// the options are checked as they are walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> NeighborPacket<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> NeighborPacket<T> {
        NeighborPacket { buffer }
    }

    /// Wraps `buffer` and checks it holds the 24-byte fixed part.
    pub fn new_checked(buffer: T) -> Result<NeighborPacket<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the buffer holds the 24-byte fixed part.
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

    /// Message type (135 or 136 for the messages this view is for).
    #[inline]
    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Packet::new_unchecked(self.buffer.as_ref()).msg_type()
    }

    /// Message code (0 in a valid message).
    #[inline]
    pub fn msg_code(&self) -> u8 {
        Icmpv6Packet::new_unchecked(self.buffer.as_ref()).msg_code()
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        Icmpv6Packet::new_unchecked(self.buffer.as_ref()).checksum()
    }

    /// The R flag of an advertisement: the sender is a router.
    #[inline]
    pub fn router_flag(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & FLAG_ROUTER != 0
    }

    /// The S flag of an advertisement: it answers a solicitation.
    #[inline]
    pub fn solicited_flag(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & FLAG_SOLICITED != 0
    }

    /// The O flag of an advertisement: it overrides a cached link-layer address.
    #[inline]
    pub fn override_flag(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & FLAG_OVERRIDE != 0
    }

    /// Target address: the address being resolved (NS) or advertised (NA).
    #[inline]
    pub fn target_addr(&self) -> Ipv6Addr {
        addr_at(self.buffer.as_ref(), field::TARGET)
    }

    /// The options, unparsed.
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..]
    }

    /// Walks the options.
    #[inline]
    pub fn option_iter(&self) -> NdOptions<'_> {
        NdOptions::new(self.options())
    }

    /// The first source link-layer address option's address, after checking every
    /// option.
    pub fn source_ll_addr(&self) -> Result<Option<EthernetAddress>> {
        find_ll_addr(self.options(), NdOptionType::SourceLinkLayerAddr)
    }

    /// The first target link-layer address option's address, after checking every
    /// option.
    pub fn target_ll_addr(&self) -> Result<Option<EthernetAddress>> {
        find_ll_addr(self.options(), NdOptionType::TargetLinkLayerAddr)
    }

    /// Whether the ICMPv6 checksum verifies with `src` and `dst` in the
    /// pseudo-header.
    #[inline]
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        Icmpv6Packet::new_unchecked(self.buffer.as_ref()).verify_checksum(src, dst)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NeighborPacket<T> {
    /// Sets the type.
    #[inline]
    pub fn set_msg_type(&mut self, v: Icmpv6Message) {
        Icmpv6Packet::new_unchecked(self.buffer.as_mut()).set_msg_type(v)
    }
    /// Sets the code.
    #[inline]
    pub fn set_msg_code(&mut self, v: u8) {
        Icmpv6Packet::new_unchecked(self.buffer.as_mut()).set_msg_code(v)
    }
    /// Sets the R, S and O flags and zeroes the reserved bits (all zero in an NS).
    #[inline]
    pub fn set_flags(&mut self, router: bool, solicited: bool, override_flag: bool) {
        let b = self.buffer.as_mut();
        b[field::FLAGS..field::TARGET].fill(0);
        b[field::FLAGS] = (if router { FLAG_ROUTER } else { 0 })
            | (if solicited { FLAG_SOLICITED } else { 0 })
            | (if override_flag { FLAG_OVERRIDE } else { 0 });
    }
    /// Sets the target address.
    #[inline]
    pub fn set_target_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::TARGET..field::OPTIONS].copy_from_slice(&a.octets())
    }
    /// The options, mutably.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::OPTIONS..]
    }
    /// Computes the ICMPv6 checksum with `src` and `dst` in the pseudo-header and
    /// stores it.
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        Icmpv6Packet::new_unchecked(self.buffer.as_mut()).fill_checksum(src, dst)
    }
}

/// Owned form of a neighbour solicitation or advertisement, with the one link-layer
/// address option each may carry (other options are skipped on parse and not
/// written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdRepr {
    /// Neighbour solicitation (135).
    NeighborSolicit {
        /// The address to resolve.
        target_addr: Ipv6Addr,
        /// The sender's link-layer address (absent when the source is unspecified).
        source_ll_addr: Option<EthernetAddress>,
    },
    /// Neighbour advertisement (136).
    NeighborAdvert {
        /// R: the sender is a router.
        router_flag: bool,
        /// S: this answers a solicitation.
        solicited_flag: bool,
        /// O: this overrides a cached link-layer address.
        override_flag: bool,
        /// The address advertised.
        target_addr: Ipv6Addr,
        /// The target's link-layer address.
        target_ll_addr: Option<EthernetAddress>,
    },
}

impl NdRepr {
    /// Parses a message: checks the fixed part, the checksum with `src` and `dst` in
    /// the pseudo-header and every option. Types other than 135 and 136 are
    /// `Unsupported`. The other RFC 4861 §7.1 checks are [`validate`]'s.
    pub fn parse<T: AsRef<[u8]>>(
        p: &NeighborPacket<T>,
        src: Ipv6Addr,
        dst: Ipv6Addr,
    ) -> Result<NdRepr> {
        p.check_len()?;
        if !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        match p.msg_type() {
            Icmpv6Message::NeighborSolicit => Ok(NdRepr::NeighborSolicit {
                target_addr: p.target_addr(),
                source_ll_addr: p.source_ll_addr()?,
            }),
            Icmpv6Message::NeighborAdvert => Ok(NdRepr::NeighborAdvert {
                router_flag: p.router_flag(),
                solicited_flag: p.solicited_flag(),
                override_flag: p.override_flag(),
                target_addr: p.target_addr(),
                target_ll_addr: p.target_ll_addr()?,
            }),
            _ => Err(WireError::Unsupported),
        }
    }

    /// The target address.
    pub const fn target_addr(&self) -> Ipv6Addr {
        match *self {
            NdRepr::NeighborSolicit { target_addr, .. }
            | NdRepr::NeighborAdvert { target_addr, .. } => target_addr,
        }
    }

    /// Length of the emitted message.
    pub const fn buffer_len(&self) -> usize {
        let ll = match self {
            NdRepr::NeighborSolicit { source_ll_addr, .. } => source_ll_addr.is_some(),
            NdRepr::NeighborAdvert { target_ll_addr, .. } => target_ll_addr.is_some(),
        };
        HEADER_LEN + if ll { LL_ADDR_OPTION_LEN } else { 0 }
    }

    /// Writes the message into `p` (exactly [`buffer_len`](Self::buffer_len) bytes)
    /// and fills the checksum with `src` and `dst` in the pseudo-header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        p: &mut NeighborPacket<T>,
        src: Ipv6Addr,
        dst: Ipv6Addr,
    ) {
        let (ll, kind) = match *self {
            NdRepr::NeighborSolicit {
                target_addr,
                source_ll_addr,
            } => {
                p.set_msg_type(Icmpv6Message::NeighborSolicit);
                p.set_flags(false, false, false);
                p.set_target_addr(target_addr);
                (source_ll_addr, NdOptionType::SourceLinkLayerAddr)
            }
            NdRepr::NeighborAdvert {
                router_flag,
                solicited_flag,
                override_flag,
                target_addr,
                target_ll_addr,
            } => {
                p.set_msg_type(Icmpv6Message::NeighborAdvert);
                p.set_flags(router_flag, solicited_flag, override_flag);
                p.set_target_addr(target_addr);
                (target_ll_addr, NdOptionType::TargetLinkLayerAddr)
            }
        };
        p.set_msg_code(0);
        if let Some(mac) = ll {
            NdOption::new_unchecked(p.options_mut()).set_link_layer_addr(kind, mac);
        }
        p.fill_checksum(src, dst);
    }
}

/// Why a neighbour solicitation or advertisement is invalid (RFC 4861 §7.1.1,
/// §7.1.2); the receiver silently discards it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdError {
    /// The IPv6 view does not pass [`Ipv6Packet::check_len`].
    BadIpHeader,
    /// The message is cut short: the ICMP length is below 24, or an option runs past
    /// the message.
    Truncated,
    /// The message is neither a solicitation nor an advertisement.
    NotNeighbor,
    /// The IP hop limit is not 255: the message crossed a router.
    HopLimit,
    /// The ICMPv6 checksum does not verify.
    BadChecksum,
    /// The ICMP code is not 0.
    BadCode,
    /// The target address is a multicast address.
    MulticastTarget,
    /// An option has length zero.
    ZeroLengthOption,
    /// A solicitation from the unspecified address (duplicate address detection) is
    /// not sent to a solicited-node group.
    NotToSolicitedNode,
    /// A solicitation from the unspecified address carries a source link-layer
    /// address option.
    SourceLinkLayerFromUnspecified,
    /// An advertisement to a multicast address has the S flag set.
    SolicitedToMulticast,
}

impl core::fmt::Display for NdError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            NdError::BadIpHeader => "bad IPv6 header",
            NdError::Truncated => "truncated",
            NdError::NotNeighbor => "not a neighbour solicitation or advertisement",
            NdError::HopLimit => "hop limit not 255",
            NdError::BadChecksum => "bad checksum",
            NdError::BadCode => "code not 0",
            NdError::MulticastTarget => "multicast target",
            NdError::ZeroLengthOption => "option of length zero",
            NdError::NotToSolicitedNode => {
                "from the unspecified address, not to a solicited-node group"
            }
            NdError::SourceLinkLayerFromUnspecified => {
                "source link-layer address from the unspecified address"
            }
            NdError::SolicitedToMulticast => "solicited advertisement to a multicast address",
        })
    }
}

impl core::error::Error for NdError {}

//= RFC 4861 §7.1.1: a valid NS has hop limit 255, a valid checksum, code 0, an ICMP
//= length of 24 or more, a target that is not multicast, options of non-zero length;
//= from the unspecified source it goes to a solicited-node group and carries no source
//= link-layer address option. §7.1.2: a valid NA has the same hop limit, checksum,
//= code, length, target and option checks, and to a multicast destination its
//= Solicited flag is zero.
/// Checks a neighbour solicitation or advertisement (`icmp`, the whole ICMPv6
/// message) received in `ip` against RFC 4861 §7.1.1 and §7.1.2 and returns it parsed.
///
/// What the bytes cannot tell stays with the caller: a multicast target on the
/// receiving interface, an NA that answers a solicitation this node did not send, and
/// an authentication header's verdict. Never panics, whatever the views hold.
pub fn validate<T: AsRef<[u8]>, U: AsRef<[u8]>>(
    ip: &Ipv6Packet<T>,
    icmp: &Icmpv6Packet<U>,
) -> core::result::Result<NdRepr, NdError> {
    ip.check_len().map_err(|_| NdError::BadIpHeader)?;
    let p = NeighborPacket::new_checked(icmp.as_bytes()).map_err(|_| NdError::Truncated)?;
    if !matches!(
        p.msg_type(),
        Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert
    ) {
        return Err(NdError::NotNeighbor);
    }
    if ip.hop_limit() != HOP_LIMIT {
        return Err(NdError::HopLimit);
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if !p.verify_checksum(src, dst) {
        return Err(NdError::BadChecksum);
    }
    if p.msg_code() != 0 {
        return Err(NdError::BadCode);
    }
    if p.target_addr().is_multicast() {
        return Err(NdError::MulticastTarget);
    }
    let repr = NdRepr::parse(&p, src, dst).map_err(|e| match e {
        WireError::BadLength => NdError::ZeroLengthOption,
        WireError::BadChecksum => NdError::BadChecksum,
        WireError::Unsupported => NdError::NotNeighbor,
        _ => NdError::Truncated,
    })?;
    match repr {
        NdRepr::NeighborSolicit { source_ll_addr, .. } if src.is_unspecified() => {
            if !is_solicited_node(dst) {
                return Err(NdError::NotToSolicitedNode);
            }
            // Any source link-layer option counts, whatever its length.
            let has_sll = p
                .option_iter()
                .flatten()
                .any(|o| o.option_type() == NdOptionType::SourceLinkLayerAddr);
            if has_sll || source_ll_addr.is_some() {
                return Err(NdError::SourceLinkLayerFromUnspecified);
            }
        }
        NdRepr::NeighborAdvert { solicited_flag, .. } if dst.is_multicast() && solicited_flag => {
            return Err(NdError::SolicitedToMulticast);
        }
        _ => {}
    }
    Ok(repr)
}

/// Writes into `out` a whole IPv6 packet from `src` to `dst` (hop limit 255, traffic
/// class and flow label zero) carrying `repr`. Returns the bytes written;
/// [`WireError::Truncated`] when `out` is too small.
pub fn write_packet(src: Ipv6Addr, dst: Ipv6Addr, repr: &NdRepr, out: &mut [u8]) -> Result<usize> {
    let len = ipv6::HEADER_LEN + repr.buffer_len();
    let out = out.get_mut(..len).ok_or(WireError::Truncated)?;
    let (ip, icmp) = out.split_at_mut(ipv6::HEADER_LEN);
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.len(),
        hop_limit: HOP_LIMIT,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(ip));
    repr.emit(&mut NeighborPacket::new_unchecked(icmp), src, dst);
    Ok(len)
}

//= RFC 4861 §7.2.2: the solicitation goes to the target's solicited-node group
//= (multicast address resolution); §4.3: the source link-layer address option "MUST
//= NOT be included when the source IP address is the unspecified address".
/// Writes into `out` a neighbour solicitation for `target` from `src` (link-layer
/// address `src_mac`) to the solicited-node group of `target`, with a source
/// link-layer address option unless `src` is the unspecified address (duplicate
/// address detection). Returns the bytes written ([`PACKET_LEN`], or 8 fewer without
/// the option). The Ethernet destination is [`ipv6::multicast_mac`] of the group.
pub fn write_ns(
    src: Ipv6Addr,
    src_mac: EthernetAddress,
    target: Ipv6Addr,
    out: &mut [u8],
) -> Result<usize> {
    let repr = NdRepr::NeighborSolicit {
        target_addr: target,
        source_ll_addr: (!src.is_unspecified()).then_some(src_mac),
    };
    write_packet(src, solicited_node(target), &repr, out)
}

//= RFC 4861 §7.2.4: the answer to a solicitation has the Solicited flag set, goes to
//= the solicitation's source, or to all-nodes with S clear when that source is the
//= unspecified address, and carries the target link-layer address option; the
//= Override flag is set for an address that is not anycast or proxied.
/// Writes into `out` a neighbour advertisement for `target` (the router's own unicast
/// address, link-layer address `target_mac`) from `src` to `dst`, with the O flag, the
/// S flag when `dst` is unicast, the R flag when `router`, and a target link-layer
/// address option. Returns the bytes written ([`PACKET_LEN`]).
pub fn write_na(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    target: Ipv6Addr,
    target_mac: EthernetAddress,
    router: bool,
    out: &mut [u8],
) -> Result<usize> {
    let repr = NdRepr::NeighborAdvert {
        router_flag: router,
        solicited_flag: !dst.is_multicast(),
        override_flag: true,
        target_addr: target,
        target_ll_addr: Some(target_mac),
    };
    write_packet(src, dst, &repr, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_hex;
    use proptest::prelude::*;
    use std::vec;

    const HOST: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const PEER: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
    const HOST_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const PEER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    // 2001:db8::1 (02:00:00:00:00:01) asks ff02::1:ff00:2 for 2001:db8::2 (scapy;
    // checksum 0x1c27).
    const NS_HEX: &str = "6000000000203aff20010db8000000000000000000000001\
        ff0200000000000000000001ff000002\
        87001c270000000020010db8000000000000000000000002\
        0101020000000001";

    // The same target probed for duplicates from :: (scapy; checksum 0x4ceb).
    const DAD_HEX: &str = "6000000000183aff00000000000000000000000000000000\
        ff0200000000000000000001ff000002\
        87004ceb0000000020010db8000000000000000000000002";

    // 2001:db8::2 answers 2001:db8::1: S and O set, 02:00:00:00:00:02 (scapy;
    // checksum 0x8a71).
    const NA_HEX: &str = "6000000000203aff20010db8000000000000000000000002\
        20010db8000000000000000000000001\
        88008a716000000020010db8000000000000000000000002\
        0201020000000002";

    /// Validates the packet in `b` as the dataplane would.
    fn check(b: &[u8]) -> core::result::Result<NdRepr, NdError> {
        let ip = Ipv6Packet::new_checked(b).unwrap();
        validate(&ip, &Icmpv6Packet::new_unchecked(ip.payload()))
    }

    /// Changes a byte of the message in `b` and fixes the checksum.
    fn poke(b: &mut [u8], at: usize, v: u8) {
        b[at] = v;
        let mut ip = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        NeighborPacket::new_unchecked(ip.payload_mut()).fill_checksum(src, dst);
    }

    #[test]
    fn test_deconstruct_ns() {
        let b = from_hex(NS_HEX);
        let ip = Ipv6Packet::new_checked(&b[..]).unwrap();
        let p = NeighborPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Message::NeighborSolicit);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0x1c27);
        assert_eq!(p.target_addr(), PEER);
        assert!(p.verify_checksum(HOST, solicited_node(PEER)));
        assert_eq!(p.source_ll_addr(), Ok(Some(HOST_MAC)));
        assert_eq!(p.target_ll_addr(), Ok(None));
        let o = p.option_iter().next().unwrap().unwrap();
        assert_eq!(o.option_type(), NdOptionType::SourceLinkLayerAddr);
        assert_eq!((o.length(), o.total_len()), (1, 8));
        assert_eq!(o.data(), &[2, 0, 0, 0, 0, 1]);
        assert_eq!(p.option_iter().count(), 1);
    }

    #[test]
    fn test_deconstruct_na() {
        let b = from_hex(NA_HEX);
        let ip = Ipv6Packet::new_checked(&b[..]).unwrap();
        let p = NeighborPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Message::NeighborAdvert);
        assert!(!p.router_flag());
        assert!(p.solicited_flag());
        assert!(p.override_flag());
        assert_eq!(p.target_addr(), PEER);
        assert_eq!(p.target_ll_addr(), Ok(Some(PEER_MAC)));
        assert_eq!(p.source_ll_addr(), Ok(None));
    }

    #[test]
    fn test_write_ns() {
        let mut out = [0xa5u8; 100];
        let n = write_ns(HOST, HOST_MAC, PEER, &mut out).unwrap();
        assert_eq!(n, PACKET_LEN);
        assert_eq!(&out[..n], &from_hex(NS_HEX)[..]);
        let n = write_ns(Ipv6Addr::UNSPECIFIED, HOST_MAC, PEER, &mut out).unwrap();
        assert_eq!(n, PACKET_LEN - LL_ADDR_OPTION_LEN);
        assert_eq!(&out[..n], &from_hex(DAD_HEX)[..]);
        assert_eq!(
            write_ns(HOST, HOST_MAC, PEER, &mut out[..PACKET_LEN - 1]),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn test_write_na() {
        let mut out = [0xa5u8; 100];
        let n = write_na(PEER, HOST, PEER, PEER_MAC, false, &mut out).unwrap();
        assert_eq!(&out[..n], &from_hex(NA_HEX)[..]);
        // To all-nodes (answering duplicate address detection): S clear.
        let n = write_na(PEER, ipv6::ALL_NODES, PEER, PEER_MAC, true, &mut out).unwrap();
        let r = check(&out[..n]).unwrap();
        assert_eq!(
            r,
            NdRepr::NeighborAdvert {
                router_flag: true,
                solicited_flag: false,
                override_flag: true,
                target_addr: PEER,
                target_ll_addr: Some(PEER_MAC),
            }
        );
    }

    #[test]
    fn test_validate_known_packets() {
        assert_eq!(
            check(&from_hex(NS_HEX)),
            Ok(NdRepr::NeighborSolicit {
                target_addr: PEER,
                source_ll_addr: Some(HOST_MAC)
            })
        );
        assert_eq!(
            check(&from_hex(DAD_HEX)),
            Ok(NdRepr::NeighborSolicit {
                target_addr: PEER,
                source_ll_addr: None
            })
        );
        assert_eq!(
            check(&from_hex(NA_HEX)),
            Ok(NdRepr::NeighborAdvert {
                router_flag: false,
                solicited_flag: true,
                override_flag: true,
                target_addr: PEER,
                target_ll_addr: Some(PEER_MAC),
            })
        );
    }

    #[test]
    fn test_validate_refusals() {
        let ns = from_hex(NS_HEX);
        let na = from_hex(NA_HEX);
        // Hop limit 254: came through a router.
        let mut b = ns.clone();
        b[7] = 254;
        assert_eq!(check(&b), Err(NdError::HopLimit));
        // Checksum.
        let mut b = ns.clone();
        b[70] ^= 1;
        assert_eq!(check(&b), Err(NdError::BadChecksum));
        // Code 1.
        let mut b = ns.clone();
        poke(&mut b, 41, 1);
        assert_eq!(check(&b), Err(NdError::BadCode));
        // Multicast target.
        let mut b = na.clone();
        poke(&mut b, 48, 0xff);
        assert_eq!(check(&b), Err(NdError::MulticastTarget));
        // An option of length zero.
        let mut b = ns.clone();
        poke(&mut b, 65, 0);
        assert_eq!(check(&b), Err(NdError::ZeroLengthOption));
        // An option running past the message.
        let mut b = ns.clone();
        poke(&mut b, 65, 2);
        assert_eq!(check(&b), Err(NdError::Truncated));
        // Not NS or NA (router solicitation).
        let mut b = ns.clone();
        poke(&mut b, 40, 133);
        assert_eq!(check(&b), Err(NdError::NotNeighbor));
        // ICMP length 16: an echo-sized message.
        let mut b = ns.clone();
        b[5] = 16;
        assert_eq!(check(&b[..56]), Err(NdError::Truncated));
        // NA with S to a multicast destination.
        let mut b = na.clone();
        b[24..40].copy_from_slice(&ipv6::ALL_NODES.octets());
        poke(&mut b, 44, 0x60);
        assert_eq!(check(&b), Err(NdError::SolicitedToMulticast));
        poke(&mut b, 44, 0x20);
        assert!(check(&b).is_ok());
        // DAD to something else than a solicited-node group.
        let mut b = from_hex(DAD_HEX);
        b[24..40].copy_from_slice(&ipv6::ALL_NODES.octets());
        poke(&mut b, 0, 0x60);
        assert_eq!(check(&b), Err(NdError::NotToSolicitedNode));
        // DAD with a source link-layer address option.
        let mut b = ns.clone();
        b[8..24].fill(0);
        poke(&mut b, 0, 0x60);
        assert_eq!(check(&b), Err(NdError::SourceLinkLayerFromUnspecified));
        // ... even one of another length than Ethernet's.
        let mut b = ns.clone();
        b.extend_from_slice(&[0; 8]);
        b[5] = 40;
        b[8..24].fill(0);
        poke(&mut b, 65, 2);
        assert_eq!(check(&b), Err(NdError::SourceLinkLayerFromUnspecified));
    }

    #[test]
    fn test_validate_unchecked_views() {
        let ns = from_hex(NS_HEX);
        // Views made with new_unchecked over short buffers do not panic.
        let ip = Ipv6Packet::new_unchecked(&ns[..10]);
        let icmp = Icmpv6Packet::new_unchecked(&ns[40..]);
        assert_eq!(validate(&ip, &icmp), Err(NdError::BadIpHeader));
        let ip = Ipv6Packet::new_unchecked(&ns[..]);
        let icmp = Icmpv6Packet::new_unchecked(&ns[40..50]);
        assert_eq!(validate(&ip, &icmp), Err(NdError::Truncated));
    }

    #[test]
    fn test_options() {
        // Unknown option (type 14, 16 bytes), then the target link-layer address.
        let mut opts = [0u8; 24];
        opts[0] = 14;
        opts[1] = 2;
        NdOption::new_unchecked(&mut opts[16..])
            .set_link_layer_addr(NdOptionType::TargetLinkLayerAddr, PEER_MAC);
        let mut it = NdOptions::new(&opts);
        let o = it.next().unwrap().unwrap();
        assert_eq!(o.option_type(), NdOptionType::Unknown(14));
        assert_eq!(o.data().len(), 14);
        assert_eq!(o.link_layer_addr(), None);
        let o = it.next().unwrap().unwrap();
        assert_eq!(o.link_layer_addr(), Some(PEER_MAC));
        assert!(it.next().is_none());
        assert_eq!(
            find_ll_addr(&opts, NdOptionType::TargetLinkLayerAddr),
            Ok(Some(PEER_MAC))
        );
        // A zero length ends the walk with an error.
        opts[1] = 0;
        let mut it = NdOptions::new(&opts);
        assert_eq!(it.next().unwrap().err(), Some(WireError::BadLength));
        assert!(it.next().is_none());
        // A dangling byte.
        let mut it = NdOptions::new(&opts[16..17]);
        assert_eq!(it.next().unwrap().err(), Some(WireError::Truncated));
        assert!(it.next().is_none());
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(NdOptionType::from(v)), v);
        }
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(p) = NeighborPacket::new_checked(&bytes[..]) {
                let _ = (p.msg_type(), p.msg_code(), p.target_addr(), p.router_flag());
                let _ = (p.source_ll_addr(), p.target_ll_addr());
                let _ = NdRepr::parse(&p, HOST, PEER);
            }
            prop_assert!(NdOptions::new(&bytes).count() <= bytes.len() / 8 + 1);
            for o in NdOptions::new(&bytes).flatten() {
                let _ = (o.option_type(), o.data(), o.link_layer_addr());
            }
            // Any bytes as IPv6 and ICMPv6, even through unchecked views.
            let _ = validate(&Ipv6Packet::new_unchecked(&bytes[..]), &Icmpv6Packet::new_unchecked(&bytes[..]));
            if let Ok(ip) = Ipv6Packet::new_checked(&bytes[..]) {
                let _ = validate(&ip, &Icmpv6Packet::new_unchecked(ip.payload()));
            }
        }

        #[test]
        fn prop_written_then_parsed(
            src in prop_oneof![any::<[u8; 16]>(), Just([0u8; 16])],
            dst in prop_oneof![
                any::<[u8; 16]>(),
                Just(ipv6::ALL_NODES.octets()),
                any::<[u8; 16]>().prop_map(|a| solicited_node(Ipv6Addr::from(a)).octets()),
            ],
            target in any::<[u8; 16]>(),
            mac in any::<[u8; 6]>(),
            flags in any::<(bool, bool, bool)>(),
            ll in any::<bool>(),
            advert in any::<bool>(),
        ) {
            let (src, dst, target) = (Ipv6Addr::from(src), Ipv6Addr::from(dst), Ipv6Addr::from(target));
            let mac = ll.then_some(EthernetAddress(mac));
            let repr = if advert {
                NdRepr::NeighborAdvert {
                    router_flag: flags.0,
                    solicited_flag: flags.1,
                    override_flag: flags.2,
                    target_addr: target,
                    target_ll_addr: mac,
                }
            } else {
                NdRepr::NeighborSolicit { target_addr: target, source_ll_addr: mac }
            };
            let mut out = vec![0u8; PACKET_LEN];
            let n = write_packet(src, dst, &repr, &mut out).unwrap();
            prop_assert_eq!(n, ipv6::HEADER_LEN + repr.buffer_len());
            let ip = Ipv6Packet::new_checked(&out[..n]).unwrap();
            prop_assert_eq!(ip.hop_limit(), HOP_LIMIT);
            let p = NeighborPacket::new_checked(ip.payload()).unwrap();
            prop_assert_eq!(NdRepr::parse(&p, src, dst), Ok(repr));
            let valid = validate(&ip, &Icmpv6Packet::new_unchecked(ip.payload()));
            let ok = !target.is_multicast()
                && if advert {
                    !(dst.is_multicast() && flags.1)
                } else {
                    !src.is_unspecified() || (is_solicited_node(dst) && mac.is_none())
                };
            if ok {
                prop_assert_eq!(valid, Ok(repr));
            } else {
                prop_assert!(valid.is_err());
            }
        }

        #[test]
        fn prop_ns_na_writers_validate(
            src in any::<[u8; 16]>(),
            dst in any::<[u8; 16]>(),
            target in any::<[u8; 16]>(),
            mac in any::<[u8; 6]>(),
            router in any::<bool>(),
        ) {
            let (src, dst, target) = (Ipv6Addr::from(src), Ipv6Addr::from(dst), Ipv6Addr::from(target));
            prop_assume!(!target.is_multicast());
            let mac = EthernetAddress(mac);
            let mut out = [0u8; PACKET_LEN];
            let n = write_ns(src, mac, target, &mut out).unwrap();
            let ip = Ipv6Packet::new_checked(&out[..n]).unwrap();
            prop_assert_eq!(ip.dst_addr(), solicited_node(target));
            prop_assert_eq!(
                validate(&ip, &Icmpv6Packet::new_unchecked(ip.payload())),
                Ok(NdRepr::NeighborSolicit {
                    target_addr: target,
                    source_ll_addr: (!src.is_unspecified()).then_some(mac),
                })
            );
            let n = write_na(src, dst, target, mac, router, &mut out).unwrap();
            let ip = Ipv6Packet::new_checked(&out[..n]).unwrap();
            prop_assert_eq!(
                validate(&ip, &Icmpv6Packet::new_unchecked(ip.payload())),
                Ok(NdRepr::NeighborAdvert {
                    router_flag: router,
                    solicited_flag: !dst.is_multicast(),
                    override_flag: true,
                    target_addr: target,
                    target_ll_addr: Some(mac),
                })
            );
        }
    }
}
