//! sFlow v5 datagrams: the structures (`Repr`-style owned or borrowed forms) and their
//! XDR encoding. The decoder for the same types is in [`crate::decode`].
//!
//! Everything on the wire is XDR: big-endian 32-bit words, 64-bit counters as two
//! words, `opaque<>` as a length word, the bytes and zero padding to a 4-byte
//! boundary. Every type here has `buffer_len()` (the exact number of bytes it
//! encodes to) and `emit(&mut [u8]) -> Result<usize, EncodeError>`, which checks the
//! buffer size and every range before it writes and never panics.
//!
//! Lists (samples, records, label stacks) are [`Cow`]s: the agent encodes from
//! borrowed stack arrays without allocating, the decoder returns owned vectors.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

//= sFlow v5 §5 "sample_datagram_v5": the only version this crate writes or reads.
/// Datagram version.
pub const VERSION: u32 = 5;

//= sFlow v5 §4 (sFlowRcvrPort default): collectors listen on UDP 6343.
/// The collector port used when a collector is given without one.
pub const DEFAULT_COLLECTOR_PORT: u16 = 6343;

/// `data_format` values of the standard (enterprise 0) structures this crate knows.
///
//= sFlow v5 §5 "Data Format": `enterprise << 12 | format`, enterprise 0 = sflow.org.
pub mod format {
    /// `flow_sample` (compact).
    pub const FLOW_SAMPLE: u32 = 1;
    /// `counters_sample` (compact).
    pub const COUNTERS_SAMPLE: u32 = 2;
    /// `flow_sample_expanded`.
    pub const FLOW_SAMPLE_EXPANDED: u32 = 3;
    /// `counters_sample_expanded`.
    pub const COUNTERS_SAMPLE_EXPANDED: u32 = 4;
    /// Flow record `sampled_header`.
    pub const SAMPLED_HEADER: u32 = 1;
    /// Flow record `extended_switch`.
    pub const EXTENDED_SWITCH: u32 = 1001;
    /// Flow record `extended_router`.
    pub const EXTENDED_ROUTER: u32 = 1002;
    /// Flow record `extended_mpls`.
    pub const EXTENDED_MPLS: u32 = 1006;
    /// Counter record `if_counters` (generic interface counters).
    pub const GENERIC_INTERFACE: u32 = 1;
    /// Counter record `ethernet_counters`.
    pub const ETHERNET_INTERFACE: u32 = 2;
}

/// Bytes of the fixed part of a compact `flow_sample` (up to and including the
/// record count).
pub const FLOW_SAMPLE_FIXED_LEN: usize = 32;
/// Bytes of the fixed part of a `flow_sample_expanded`.
pub const FLOW_SAMPLE_EXPANDED_FIXED_LEN: usize = 44;
/// Bytes of the fixed part of a compact `counters_sample`.
pub const COUNTERS_SAMPLE_FIXED_LEN: usize = 12;
/// Bytes of the fixed part of a `counters_sample_expanded`.
pub const COUNTERS_SAMPLE_EXPANDED_FIXED_LEN: usize = 16;
//= sFlow v5 §5 "if_counters": always 88 bytes.
/// Bytes of an `if_counters` record body.
pub const IF_COUNTERS_LEN: usize = 88;
/// Bytes of an `ethernet_counters` record body (13 words).
pub const ETHERNET_COUNTERS_LEN: usize = 52;
/// Bytes in front of every sample and record: `data_format` and the opaque length.
pub const TAG_LEN: usize = 8;

/// Rounds up to the XDR 4-byte boundary.
pub const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Why a structure could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The output buffer is smaller than `buffer_len()`.
    #[error("buffer of {have} bytes, {need} needed")]
    BufferTooSmall {
        /// Bytes the structure encodes to.
        need: usize,
        /// Bytes the buffer has.
        have: usize,
    },
    /// A compact data source index does not fit 24 bits, or its class 8 bits.
    #[error("data source {class}:{index} does not fit the compact encoding")]
    SourceId {
        /// Source class (0 = ifIndex).
        class: u32,
        /// Source index.
        index: u32,
    },
    /// An interface value does not fit the 30 bits of the compact encoding, or is
    /// reserved (`0x3FFFFFFF` as an ifIndex, `0xFFFFFFFF` in the expanded form).
    #[error("interface value {0:#x} out of range")]
    InterfaceValue(u32),
    /// A length or count does not fit a 32-bit word.
    #[error("length {0} does not fit 32 bits")]
    Length(usize),
}

/// Little XDR writer over a buffer the caller has sized with `buffer_len()`. It
/// never panics: writes past the end are dropped and show up as a short count.
pub(crate) struct Xdr<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Xdr<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Xdr<'a> {
        Xdr { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    pub(crate) fn u32(&mut self, v: u32) {
        if let Some(d) = self.buf.get_mut(self.pos..self.pos + 4) {
            d.copy_from_slice(&v.to_be_bytes());
        }
        self.pos += 4;
    }

    #[inline]
    pub(crate) fn u64(&mut self, v: u64) {
        if let Some(d) = self.buf.get_mut(self.pos..self.pos + 8) {
            d.copy_from_slice(&v.to_be_bytes());
        }
        self.pos += 8;
    }

    /// A length word that must fit 32 bits.
    #[inline]
    fn len(&mut self, n: usize) -> Result<(), EncodeError> {
        self.u32(u32::try_from(n).map_err(|_| EncodeError::Length(n))?);
        Ok(())
    }

    /// Bytes and zero padding to the next 4-byte boundary.
    #[inline]
    fn bytes_padded(&mut self, b: &[u8]) {
        let end = self.pos + pad4(b.len());
        if let Some(d) = self.buf.get_mut(self.pos..end) {
            let (data, pad) = d.split_at_mut(b.len());
            data.copy_from_slice(b);
            pad.fill(0);
        }
        self.pos = end;
    }

    /// `opaque<>`: length, bytes, padding.
    fn opaque(&mut self, b: &[u8]) -> Result<(), EncodeError> {
        self.len(b.len())?;
        self.bytes_padded(b);
        Ok(())
    }

    fn address(&mut self, a: &Address) {
        match a {
            Address::Unknown => self.u32(0),
            Address::V4(ip) => {
                self.u32(1);
                self.bytes_padded(&ip.octets());
            }
            Address::V6(ip) => {
                self.u32(2);
                self.bytes_padded(&ip.octets());
            }
        }
    }
}

/// Checks the buffer, runs `write` and returns the bytes written.
fn emit_with(
    need: usize,
    buf: &mut [u8],
    write: impl FnOnce(&mut Xdr<'_>) -> Result<(), EncodeError>,
) -> Result<usize, EncodeError> {
    if buf.len() < need {
        return Err(EncodeError::BufferTooSmall {
            need,
            have: buf.len(),
        });
    }
    let mut w = Xdr::new(&mut buf[..need]);
    write(&mut w)?;
    debug_assert_eq!(w.pos(), need, "buffer_len disagrees with emit");
    Ok(need)
}

//= sFlow v5 §5 "union address": type 0 unknown (no body), 1 IPv4, 2 IPv6.
/// An `address`: the agent address, a next hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Address {
    /// Type 0. Legal, but sflowtool rejects a whole datagram whose agent address is
    /// of this type, so the agent never sends it.
    #[default]
    Unknown,
    /// Type 1.
    V4(Ipv4Addr),
    /// Type 2.
    V6(Ipv6Addr),
}

impl Address {
    /// Encoded length: 4, 8 or 20 bytes.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Address::Unknown => 4,
            Address::V4(_) => 8,
            Address::V6(_) => 20,
        }
    }

    /// The IP address, if the type is not unknown.
    pub const fn ip(&self) -> Option<IpAddr> {
        match *self {
            Address::Unknown => None,
            Address::V4(a) => Some(IpAddr::V4(a)),
            Address::V6(a) => Some(IpAddr::V6(a)),
        }
    }
}

impl From<IpAddr> for Address {
    fn from(ip: IpAddr) -> Address {
        match ip {
            IpAddr::V4(a) => Address::V4(a),
            IpAddr::V6(a) => Address::V6(a),
        }
    }
}

impl From<Ipv4Addr> for Address {
    fn from(ip: Ipv4Addr) -> Address {
        Address::V4(ip)
    }
}

//= sFlow v5 §5 "sflow_data_source": `type << 24 | index` in the compact forms,
//= type 0 = ifIndex, 1 = smonVlanDataSource, 2 = entPhysicalEntry.
/// A data source: what a sample describes (for us always an ifIndex).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataSource {
    /// Source class (0 = ifIndex).
    pub class: u32,
    /// Index within the class.
    pub index: u32,
}

impl DataSource {
    /// Largest index the compact encoding carries.
    pub const MAX_COMPACT_INDEX: u32 = (1 << 24) - 1;

    /// The interface with this ifIndex.
    pub const fn ifindex(index: u32) -> DataSource {
        DataSource { class: 0, index }
    }

    /// The compact word.
    pub fn to_compact(self) -> Result<u32, EncodeError> {
        if self.class > 0xff || self.index > Self::MAX_COMPACT_INDEX {
            return Err(EncodeError::SourceId {
                class: self.class,
                index: self.index,
            });
        }
        Ok(self.class << 24 | self.index)
    }

    /// From the compact word.
    pub const fn from_compact(w: u32) -> DataSource {
        DataSource {
            class: w >> 24,
            index: w & Self::MAX_COMPACT_INDEX,
        }
    }
}

//= sFlow v5 §5 "interface": bits 31-30 format, 29-0 value. Format 0: ifIndex (0
//= unknown, 0x3FFFFFFF the device itself); 1: discarded, value = reason; 2: several
//= outputs, value = count (0 = unknown). The errata make "internal" 0xFFFFFFFF in the
//= expanded form.
/// The input or output of a flow sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interface {
    /// An ifIndex; 0 means unknown.
    Index(u32),
    /// The packet came from or went to the device itself (local delivery, punt).
    Internal,
    /// The packet was discarded (output only); the value is a reason code: 0..=255
    /// ICMP unreachable codes, 256 unknown, 257 TTL exceeded, 258 ACL, 259 no buffer
    /// space, 260 RED, 261 traffic shaping / rate limit, 262 packet too big.
    Discarded(u32),
    /// Sent to several interfaces; the value is their number (0 = unknown).
    Multiple(u32),
}

impl Default for Interface {
    fn default() -> Interface {
        Interface::Index(0)
    }
}

impl Interface {
    const VALUE_MASK: u32 = (1 << 30) - 1;
    /// The compact "internal" value.
    pub const INTERNAL_COMPACT: u32 = 0x3FFF_FFFF;
    /// The expanded "internal" value (sFlow errata).
    pub const INTERNAL_EXPANDED: u32 = 0xFFFF_FFFF;
    /// Discard reason: unknown.
    pub const DISCARD_UNKNOWN: u32 = 256;
    /// Discard reason: TTL exceeded.
    pub const DISCARD_TTL: u32 = 257;
    /// Discard reason: no buffer space.
    pub const DISCARD_NO_BUFFER: u32 = 259;
    /// Discard reason: packet too big.
    pub const DISCARD_TOO_BIG: u32 = 262;

    /// The compact word.
    pub fn to_compact(self) -> Result<u32, EncodeError> {
        let (fmt, v) = match self {
            Interface::Index(v) if v >= Self::INTERNAL_COMPACT => {
                return Err(EncodeError::InterfaceValue(v));
            }
            Interface::Index(v) => (0, v),
            Interface::Internal => (0, Self::INTERNAL_COMPACT),
            Interface::Discarded(v) => (1, v),
            Interface::Multiple(v) => (2, v),
        };
        if v > Self::VALUE_MASK {
            return Err(EncodeError::InterfaceValue(v));
        }
        Ok(fmt << 30 | v)
    }

    /// From the compact word; `None` for the undefined format 3.
    pub const fn from_compact(w: u32) -> Option<Interface> {
        Self::from_expanded_parts(w >> 30, w & Self::VALUE_MASK, Self::INTERNAL_COMPACT)
    }

    /// The expanded (format, value) pair.
    pub fn to_expanded(self) -> Result<(u32, u32), EncodeError> {
        Ok(match self {
            Interface::Index(v) if v == Self::INTERNAL_EXPANDED => {
                return Err(EncodeError::InterfaceValue(v));
            }
            Interface::Index(v) => (0, v),
            Interface::Internal => (0, Self::INTERNAL_EXPANDED),
            Interface::Discarded(v) => (1, v),
            Interface::Multiple(v) => (2, v),
        })
    }

    /// From the expanded (format, value) pair; `None` for formats above 2.
    pub const fn from_expanded(format: u32, value: u32) -> Option<Interface> {
        Self::from_expanded_parts(format, value, Self::INTERNAL_EXPANDED)
    }

    const fn from_expanded_parts(format: u32, value: u32, internal: u32) -> Option<Interface> {
        match format {
            0 if value == internal => Some(Interface::Internal),
            0 => Some(Interface::Index(value)),
            1 => Some(Interface::Discarded(value)),
            2 => Some(Interface::Multiple(value)),
            _ => None,
        }
    }
}

//= sFlow v5 §5 "header_protocol": 1 ETHERNET-ISO88023 ... 11 IPv4, 12 IPv6, 13 MPLS.
/// What the sampled header starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderProtocol {
    /// 1: Ethernet (ISO 8802-3). The only one the agent sends.
    Ethernet,
    /// 11: IPv4.
    Ipv4,
    /// 12: IPv6.
    Ipv6,
    /// 13: MPLS.
    Mpls,
    /// Any other value.
    Other(u32),
}

impl HeaderProtocol {
    /// The wire value.
    pub const fn value(self) -> u32 {
        match self {
            HeaderProtocol::Ethernet => 1,
            HeaderProtocol::Ipv4 => 11,
            HeaderProtocol::Ipv6 => 12,
            HeaderProtocol::Mpls => 13,
            HeaderProtocol::Other(v) => v,
        }
    }

    /// From the wire value.
    pub const fn from_value(v: u32) -> HeaderProtocol {
        match v {
            1 => HeaderProtocol::Ethernet,
            11 => HeaderProtocol::Ipv4,
            12 => HeaderProtocol::Ipv6,
            13 => HeaderProtocol::Mpls,
            v => HeaderProtocol::Other(v),
        }
    }
}

//= sFlow v5 §5 "sampled_header": protocol, frame_length (original length including
//= the FCS), stripped (bytes removed before the header was taken, at least the 4 of
//= the FCS), header<>.
/// Flow record 1: the first bytes of the sampled frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampledHeader<'a> {
    /// What `header` starts with.
    pub protocol: HeaderProtocol,
    /// Length of the frame on the wire, FCS included.
    pub frame_length: u32,
    /// Bytes removed from the frame before `header` was taken (the FCS: 4).
    pub stripped: u32,
    /// The sampled bytes.
    pub header: &'a [u8],
}

//= sFlow v5 §5 "extended_switch": src_vlan, src_priority, dst_vlan, dst_priority.
/// Flow record 1001: 802.1Q VLANs and priorities in and out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtendedSwitch {
    /// VLAN the packet arrived on.
    pub src_vlan: u32,
    /// 802.1p priority it arrived with.
    pub src_priority: u32,
    /// VLAN it leaves on.
    pub dst_vlan: u32,
    /// 802.1p priority it leaves with.
    pub dst_priority: u32,
}

//= sFlow v5 §5 "extended_router": nexthop, src_mask_len, dst_mask_len.
/// Flow record 1002: IP next hop and the prefix lengths of the matched routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtendedRouter {
    /// The next hop the packet was sent to.
    pub next_hop: Address,
    /// Prefix length of the route to the source (0 if not looked up).
    pub src_mask_len: u32,
    /// Prefix length of the route that forwarded the packet.
    pub dst_mask_len: u32,
}

//= sFlow v5 §5 "extended_mpls": nexthop, in_stack<>, out_stack<> (label stack
//= entries, RFC 3032 encoding, top of stack first).
/// Flow record 1006: next hop and the label stacks in and out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExtendedMpls<'a> {
    /// The next hop the packet was sent to.
    pub next_hop: Address,
    /// Label stack the packet arrived with (whole 32-bit entries, top first).
    pub in_stack: Cow<'a, [u32]>,
    /// Label stack it left with.
    pub out_stack: Cow<'a, [u32]>,
}

/// A flow record inside a flow sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowRecord<'a> {
    /// 1: `sampled_header`.
    SampledHeader(SampledHeader<'a>),
    /// 1001: `extended_switch`.
    ExtendedSwitch(ExtendedSwitch),
    /// 1002: `extended_router`.
    ExtendedRouter(ExtendedRouter),
    /// 1006: `extended_mpls`.
    ExtendedMpls(ExtendedMpls<'a>),
    /// Any other record, kept as its data format and body (without padding).
    Unknown {
        /// `enterprise << 12 | format`.
        format: u32,
        /// The record body.
        data: &'a [u8],
    },
}

impl FlowRecord<'_> {
    /// The record's `data_format`.
    pub const fn data_format(&self) -> u32 {
        match self {
            FlowRecord::SampledHeader(_) => format::SAMPLED_HEADER,
            FlowRecord::ExtendedSwitch(_) => format::EXTENDED_SWITCH,
            FlowRecord::ExtendedRouter(_) => format::EXTENDED_ROUTER,
            FlowRecord::ExtendedMpls(_) => format::EXTENDED_MPLS,
            FlowRecord::Unknown { format, .. } => *format,
        }
    }

    /// Length of the body (what the record's length word says).
    pub fn body_len(&self) -> usize {
        match self {
            FlowRecord::SampledHeader(h) => 16 + pad4(h.header.len()),
            FlowRecord::ExtendedSwitch(_) => 16,
            FlowRecord::ExtendedRouter(r) => r.next_hop.buffer_len() + 8,
            FlowRecord::ExtendedMpls(m) => {
                m.next_hop.buffer_len() + 8 + 4 * (m.in_stack.len() + m.out_stack.len())
            }
            FlowRecord::Unknown { data, .. } => data.len(),
        }
    }

    /// Encoded length: tag, length and padded body.
    pub fn buffer_len(&self) -> usize {
        TAG_LEN + pad4(self.body_len())
    }

    /// Encodes the record into `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        emit_with(self.buffer_len(), buf, |w| self.write(w))
    }

    fn write(&self, w: &mut Xdr<'_>) -> Result<(), EncodeError> {
        w.u32(self.data_format());
        w.len(self.body_len())?;
        match self {
            FlowRecord::SampledHeader(h) => {
                w.u32(h.protocol.value());
                w.u32(h.frame_length);
                w.u32(h.stripped);
                w.opaque(h.header)?;
            }
            FlowRecord::ExtendedSwitch(s) => {
                w.u32(s.src_vlan);
                w.u32(s.src_priority);
                w.u32(s.dst_vlan);
                w.u32(s.dst_priority);
            }
            FlowRecord::ExtendedRouter(r) => {
                w.address(&r.next_hop);
                w.u32(r.src_mask_len);
                w.u32(r.dst_mask_len);
            }
            FlowRecord::ExtendedMpls(m) => {
                w.address(&m.next_hop);
                for stack in [&m.in_stack, &m.out_stack] {
                    w.len(stack.len())?;
                    for &lse in stack.iter() {
                        w.u32(lse);
                    }
                }
            }
            FlowRecord::Unknown { data, .. } => w.bytes_padded(data),
        }
        Ok(())
    }
}

//= sFlow v5 §5 "flow_sample": sequence_number, source_id, sampling_rate, sample_pool,
//= drops, input, output, flow_records<>; "flow_sample_expanded" splits source_id and
//= the interfaces into (type/format, index/value) word pairs.
/// A flow sample (compact format 1 or expanded format 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSample<'a> {
    /// Incremented with each flow sample of this source.
    pub sequence_number: u32,
    /// The sampling data source (the ifIndex whose sampler took the sample).
    pub source_id: DataSource,
    /// N of 1-in-N.
    pub sampling_rate: u32,
    /// Packets the sampler has seen (skipped + sampled), wrapping.
    pub sample_pool: u32,
    /// Samples lost for lack of resources, cumulative, wrapping.
    pub drops: u32,
    /// Interface the packet came in on.
    pub input: Interface,
    /// Where it went.
    pub output: Interface,
    /// The records.
    pub records: Cow<'a, [FlowRecord<'a>]>,
    /// Encode as `flow_sample_expanded` (format 3). The agent never sets it.
    pub expanded: bool,
}

impl FlowSample<'_> {
    /// Length of the body.
    pub fn body_len(&self) -> usize {
        let fixed = if self.expanded {
            FLOW_SAMPLE_EXPANDED_FIXED_LEN
        } else {
            FLOW_SAMPLE_FIXED_LEN
        };
        fixed
            + self
                .records
                .iter()
                .map(FlowRecord::buffer_len)
                .sum::<usize>()
    }

    /// Encoded length including the sample tag.
    pub fn buffer_len(&self) -> usize {
        TAG_LEN + self.body_len()
    }

    /// Encodes the sample into `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        emit_with(self.buffer_len(), buf, |w| self.write(w))
    }

    fn write(&self, w: &mut Xdr<'_>) -> Result<(), EncodeError> {
        if self.expanded {
            let input = self.input.to_expanded()?;
            let output = self.output.to_expanded()?;
            w.u32(format::FLOW_SAMPLE_EXPANDED);
            w.len(self.body_len())?;
            w.u32(self.sequence_number);
            w.u32(self.source_id.class);
            w.u32(self.source_id.index);
            w.u32(self.sampling_rate);
            w.u32(self.sample_pool);
            w.u32(self.drops);
            w.u32(input.0);
            w.u32(input.1);
            w.u32(output.0);
            w.u32(output.1);
        } else {
            let source = self.source_id.to_compact()?;
            let input = self.input.to_compact()?;
            let output = self.output.to_compact()?;
            w.u32(format::FLOW_SAMPLE);
            w.len(self.body_len())?;
            w.u32(self.sequence_number);
            w.u32(source);
            w.u32(self.sampling_rate);
            w.u32(self.sample_pool);
            w.u32(self.drops);
            w.u32(input);
            w.u32(output);
        }
        w.len(self.records.len())?;
        for r in self.records.iter() {
            r.write(w)?;
        }
        Ok(())
    }
}

//= sFlow v5 §5 "if_counters": 88 bytes. A counter the agent cannot read is sent as
//= all ones, and stays unavailable for the life of the session.
/// Counter record 1: generic interface counters (RFC 2233 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IfCounters {
    /// ifIndex.
    pub if_index: u32,
    /// ifType (6 = ethernetCsmacd).
    pub if_type: u32,
    /// Speed in bits per second.
    pub if_speed: u64,
    /// 0 unknown, 1 full duplex, 2 half duplex, 3 in, 4 out.
    pub if_direction: u32,
    /// Bit 0 admin up, bit 1 oper up.
    pub if_status: u32,
    /// Octets received.
    pub in_octets: u64,
    /// Unicast packets received.
    pub in_ucast_pkts: u32,
    /// Multicast packets received.
    pub in_multicast_pkts: u32,
    /// Broadcast packets received.
    pub in_broadcast_pkts: u32,
    /// Received packets discarded.
    pub in_discards: u32,
    /// Received packets with errors.
    pub in_errors: u32,
    /// Received packets of an unknown protocol.
    pub in_unknown_protos: u32,
    /// Octets sent.
    pub out_octets: u64,
    /// Unicast packets sent.
    pub out_ucast_pkts: u32,
    /// Multicast packets sent.
    pub out_multicast_pkts: u32,
    /// Broadcast packets sent.
    pub out_broadcast_pkts: u32,
    /// Packets not sent for lack of resources.
    pub out_discards: u32,
    /// Packets not sent because of errors.
    pub out_errors: u32,
    /// 1 if promiscuous, 2 if not.
    pub promiscuous_mode: u32,
}

impl IfCounters {
    /// ifType ethernetCsmacd.
    pub const IF_TYPE_ETHERNET: u32 = 6;
    /// ifDirection full duplex.
    pub const FULL_DUPLEX: u32 = 1;
    /// ifStatus bit: administratively up.
    pub const ADMIN_UP: u32 = 1;
    /// ifStatus bit: operationally up.
    pub const OPER_UP: u32 = 2;
    /// ifPromiscuousMode false.
    pub const NOT_PROMISCUOUS: u32 = 2;

    /// An Ethernet interface, full duplex, not promiscuous, with every counter
    /// unavailable (all ones), for the caller to fill in.
    pub const fn ethernet(if_index: u32, if_speed: u64, admin_up: bool, oper_up: bool) -> Self {
        IfCounters {
            if_index,
            if_type: Self::IF_TYPE_ETHERNET,
            if_speed,
            if_direction: Self::FULL_DUPLEX,
            if_status: (admin_up as u32) * Self::ADMIN_UP + (oper_up as u32) * Self::OPER_UP,
            in_octets: u64::MAX,
            in_ucast_pkts: u32::MAX,
            in_multicast_pkts: u32::MAX,
            in_broadcast_pkts: u32::MAX,
            in_discards: u32::MAX,
            in_errors: u32::MAX,
            in_unknown_protos: u32::MAX,
            out_octets: u64::MAX,
            out_ucast_pkts: u32::MAX,
            out_multicast_pkts: u32::MAX,
            out_broadcast_pkts: u32::MAX,
            out_discards: u32::MAX,
            out_errors: u32::MAX,
            promiscuous_mode: Self::NOT_PROMISCUOUS,
        }
    }

    fn write(&self, w: &mut Xdr<'_>) {
        w.u32(self.if_index);
        w.u32(self.if_type);
        w.u64(self.if_speed);
        w.u32(self.if_direction);
        w.u32(self.if_status);
        w.u64(self.in_octets);
        w.u32(self.in_ucast_pkts);
        w.u32(self.in_multicast_pkts);
        w.u32(self.in_broadcast_pkts);
        w.u32(self.in_discards);
        w.u32(self.in_errors);
        w.u32(self.in_unknown_protos);
        w.u64(self.out_octets);
        w.u32(self.out_ucast_pkts);
        w.u32(self.out_multicast_pkts);
        w.u32(self.out_broadcast_pkts);
        w.u32(self.out_discards);
        w.u32(self.out_errors);
        w.u32(self.promiscuous_mode);
    }
}

//= sFlow v5 §5 "ethernet_counters": 13 words, dot3Stats* from RFC 2358.
/// Counter record 2: Ethernet (dot3) counters. All ones means unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetCounters {
    /// dot3StatsAlignmentErrors.
    pub alignment_errors: u32,
    /// dot3StatsFCSErrors.
    pub fcs_errors: u32,
    /// dot3StatsSingleCollisionFrames.
    pub single_collision_frames: u32,
    /// dot3StatsMultipleCollisionFrames.
    pub multiple_collision_frames: u32,
    /// dot3StatsSQETestErrors.
    pub sqe_test_errors: u32,
    /// dot3StatsDeferredTransmissions.
    pub deferred_transmissions: u32,
    /// dot3StatsLateCollisions.
    pub late_collisions: u32,
    /// dot3StatsExcessiveCollisions.
    pub excessive_collisions: u32,
    /// dot3StatsInternalMacTransmitErrors.
    pub internal_mac_transmit_errors: u32,
    /// dot3StatsCarrierSenseErrors.
    pub carrier_sense_errors: u32,
    /// dot3StatsFrameTooLongs.
    pub frame_too_longs: u32,
    /// dot3StatsInternalMacReceiveErrors.
    pub internal_mac_receive_errors: u32,
    /// dot3StatsSymbolErrors.
    pub symbol_errors: u32,
}

impl EthernetCounters {
    /// Every counter unavailable.
    pub const UNKNOWN: EthernetCounters = EthernetCounters::from_words([u32::MAX; 13]);

    /// The 13 counters in wire order.
    pub const fn words(&self) -> [u32; 13] {
        [
            self.alignment_errors,
            self.fcs_errors,
            self.single_collision_frames,
            self.multiple_collision_frames,
            self.sqe_test_errors,
            self.deferred_transmissions,
            self.late_collisions,
            self.excessive_collisions,
            self.internal_mac_transmit_errors,
            self.carrier_sense_errors,
            self.frame_too_longs,
            self.internal_mac_receive_errors,
            self.symbol_errors,
        ]
    }

    /// From the 13 counters in wire order.
    pub const fn from_words(w: [u32; 13]) -> EthernetCounters {
        EthernetCounters {
            alignment_errors: w[0],
            fcs_errors: w[1],
            single_collision_frames: w[2],
            multiple_collision_frames: w[3],
            sqe_test_errors: w[4],
            deferred_transmissions: w[5],
            late_collisions: w[6],
            excessive_collisions: w[7],
            internal_mac_transmit_errors: w[8],
            carrier_sense_errors: w[9],
            frame_too_longs: w[10],
            internal_mac_receive_errors: w[11],
            symbol_errors: w[12],
        }
    }
}

impl Default for EthernetCounters {
    fn default() -> Self {
        Self::UNKNOWN
    }
}

/// A counter record inside a counters sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterRecord<'a> {
    /// 1: `if_counters`.
    Generic(IfCounters),
    /// 2: `ethernet_counters`.
    Ethernet(EthernetCounters),
    /// Any other record, kept as its data format and body (without padding).
    Unknown {
        /// `enterprise << 12 | format`.
        format: u32,
        /// The record body.
        data: &'a [u8],
    },
}

impl CounterRecord<'_> {
    /// The record's `data_format`.
    pub const fn data_format(&self) -> u32 {
        match self {
            CounterRecord::Generic(_) => format::GENERIC_INTERFACE,
            CounterRecord::Ethernet(_) => format::ETHERNET_INTERFACE,
            CounterRecord::Unknown { format, .. } => *format,
        }
    }

    /// Length of the body.
    pub fn body_len(&self) -> usize {
        match self {
            CounterRecord::Generic(_) => IF_COUNTERS_LEN,
            CounterRecord::Ethernet(_) => ETHERNET_COUNTERS_LEN,
            CounterRecord::Unknown { data, .. } => data.len(),
        }
    }

    /// Encoded length: tag, length and padded body.
    pub fn buffer_len(&self) -> usize {
        TAG_LEN + pad4(self.body_len())
    }

    /// Encodes the record into `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        emit_with(self.buffer_len(), buf, |w| self.write(w))
    }

    fn write(&self, w: &mut Xdr<'_>) -> Result<(), EncodeError> {
        w.u32(self.data_format());
        w.len(self.body_len())?;
        match self {
            CounterRecord::Generic(c) => c.write(w),
            CounterRecord::Ethernet(e) => {
                for v in e.words() {
                    w.u32(v);
                }
            }
            CounterRecord::Unknown { data, .. } => w.bytes_padded(data),
        }
        Ok(())
    }
}

//= sFlow v5 §5 "counters_sample": sequence_number, source_id, counters<>;
//= "counters_sample_expanded" splits source_id into type and index words.
/// A counters sample (compact format 2 or expanded format 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountersSample<'a> {
    /// Incremented with each counters sample of this source.
    pub sequence_number: u32,
    /// The polled data source.
    pub source_id: DataSource,
    /// The records.
    pub records: Cow<'a, [CounterRecord<'a>]>,
    /// Encode as `counters_sample_expanded` (format 4). The agent never sets it.
    pub expanded: bool,
}

impl CountersSample<'_> {
    /// Length of the body.
    pub fn body_len(&self) -> usize {
        let fixed = if self.expanded {
            COUNTERS_SAMPLE_EXPANDED_FIXED_LEN
        } else {
            COUNTERS_SAMPLE_FIXED_LEN
        };
        fixed
            + self
                .records
                .iter()
                .map(CounterRecord::buffer_len)
                .sum::<usize>()
    }

    /// Encoded length including the sample tag.
    pub fn buffer_len(&self) -> usize {
        TAG_LEN + self.body_len()
    }

    /// Encodes the sample into `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        emit_with(self.buffer_len(), buf, |w| self.write(w))
    }

    fn write(&self, w: &mut Xdr<'_>) -> Result<(), EncodeError> {
        if self.expanded {
            w.u32(format::COUNTERS_SAMPLE_EXPANDED);
            w.len(self.body_len())?;
            w.u32(self.sequence_number);
            w.u32(self.source_id.class);
            w.u32(self.source_id.index);
        } else {
            let source = self.source_id.to_compact()?;
            w.u32(format::COUNTERS_SAMPLE);
            w.len(self.body_len())?;
            w.u32(self.sequence_number);
            w.u32(source);
        }
        w.len(self.records.len())?;
        for r in self.records.iter() {
            r.write(w)?;
        }
        Ok(())
    }
}

/// A sample inside a datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sample<'a> {
    /// Format 1 or 3.
    Flow(FlowSample<'a>),
    /// Format 2 or 4.
    Counters(CountersSample<'a>),
    /// Any other sample, kept as its data format and body (without padding).
    Unknown {
        /// `enterprise << 12 | format`.
        format: u32,
        /// The sample body.
        data: &'a [u8],
    },
}

impl Sample<'_> {
    /// Encoded length including the sample tag.
    pub fn buffer_len(&self) -> usize {
        match self {
            Sample::Flow(f) => f.buffer_len(),
            Sample::Counters(c) => c.buffer_len(),
            Sample::Unknown { data, .. } => TAG_LEN + pad4(data.len()),
        }
    }

    /// Encodes the sample into `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        emit_with(self.buffer_len(), buf, |w| self.write(w))
    }

    fn write(&self, w: &mut Xdr<'_>) -> Result<(), EncodeError> {
        match self {
            Sample::Flow(f) => f.write(w),
            Sample::Counters(c) => c.write(w),
            Sample::Unknown { format, data } => {
                w.u32(*format);
                w.len(data.len())?;
                w.bytes_padded(data);
                Ok(())
            }
        }
    }
}

//= sFlow v5 §5 "sample_datagram_v5": version, agent_address, sub_agent_id,
//= sequence_number (per sub-agent, +1 per datagram), uptime (ms), samples<>.
/// The datagram header, without the sample count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DatagramHeader {
    /// The agent's address.
    pub agent_address: Address,
    /// Sub-agent (for us: the worker whose samples the datagram carries).
    pub sub_agent_id: u32,
    /// Incremented with each datagram of this sub-agent.
    pub sequence_number: u32,
    /// Milliseconds since the agent started, at send time.
    pub uptime_ms: u32,
}

impl DatagramHeader {
    /// Encoded length including the sample count: 28 bytes with an IPv4 agent
    /// address, 40 with IPv6.
    pub const fn buffer_len(&self) -> usize {
        16 + self.agent_address.buffer_len() + 4
    }

    /// Encodes the header followed by `num_samples`.
    pub fn emit(&self, num_samples: u32, buf: &mut [u8]) -> Result<usize, EncodeError> {
        emit_with(self.buffer_len(), buf, |w| {
            self.write(num_samples, w);
            Ok(())
        })
    }

    fn write(&self, num_samples: u32, w: &mut Xdr<'_>) {
        w.u32(VERSION);
        w.address(&self.agent_address);
        w.u32(self.sub_agent_id);
        w.u32(self.sequence_number);
        w.u32(self.uptime_ms);
        w.u32(num_samples);
    }
}

/// A whole datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// Header fields.
    pub header: DatagramHeader,
    /// Samples; their number is the datagram's sample count.
    pub samples: Cow<'a, [Sample<'a>]>,
}

impl Datagram<'_> {
    /// Encoded length.
    pub fn buffer_len(&self) -> usize {
        self.header.buffer_len() + self.samples.iter().map(Sample::buffer_len).sum::<usize>()
    }

    /// Encodes the datagram into `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        let n = u32::try_from(self.samples.len())
            .map_err(|_| EncodeError::Length(self.samples.len()))?;
        emit_with(self.buffer_len(), buf, |w| {
            self.header.write(n, w);
            for s in self.samples.iter() {
                s.write(w)?;
            }
            Ok(())
        })
    }

    /// Encodes the datagram into a new vector (tests and tools).
    pub fn to_vec(&self) -> Result<Vec<u8>, EncodeError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}
