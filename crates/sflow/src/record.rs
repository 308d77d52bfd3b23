//! The fixed-size sample record a worker puts into its ring, and what the pipeline
//! tells the sampler about a sampled packet.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr};

use crate::config::MAX_HEADER_BYTES;
use crate::proto::{
    Address, DataSource, ExtendedMpls, ExtendedRouter, ExtendedSwitch, FlowRecord, FlowSample,
    HeaderProtocol, Interface, SampledHeader,
};

/// Most label stack entries a record keeps per stack (deeper stacks keep the top
/// entries).
pub const MAX_RECORD_LABELS: usize = 8;

/// Bytes of frame a record can hold.
pub const HEADER_CAPACITY: usize = MAX_HEADER_BYTES as usize;

//= sFlow v5 §5 "sampled_header": frame_length includes the FCS, stripped counts it.
/// Bytes of Ethernet FCS: the dataplane sees frames without it, sFlow counts it in
/// `frame_length` and reports it as `stripped` (hsflowd's convention).
pub const FCS_BYTES: u32 = 4;

/// Which way the sampled packet crossed the data source (the sampled interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Direction {
    /// Received on the interface.
    #[default]
    Rx = 0,
    /// Sent on the interface.
    Tx = 1,
}

impl Direction {
    /// Both directions, in index order.
    pub const ALL: [Direction; 2] = [Direction::Rx, Direction::Tx];

    /// The name `dpctl` uses.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Rx => "rx",
            Direction::Tx => "tx",
        }
    }
}

/// Up to [`MAX_RECORD_LABELS`] label stack entries (whole RFC 3032 words, top of
/// stack first), stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LabelWords {
    words: [u32; MAX_RECORD_LABELS],
    len: u8,
}

impl LabelWords {
    /// The first [`MAX_RECORD_LABELS`] entries of `stack`.
    #[inline]
    pub fn from_slice(stack: &[u32]) -> LabelWords {
        let n = stack.len().min(MAX_RECORD_LABELS);
        let mut words = [0; MAX_RECORD_LABELS];
        words[..n].copy_from_slice(&stack[..n]);
        LabelWords {
            words,
            len: n as u8,
        }
    }

    /// The entries.
    #[inline]
    pub fn as_slice(&self) -> &[u32] {
        &self.words[..usize::from(self.len).min(MAX_RECORD_LABELS)]
    }

    /// Number of entries.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// No entries.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for LabelWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// What the pipeline knows about a sampled packet after the forwarding decision.
/// Everything is borrowed; [`WorkerSampler::submit`](crate::WorkerSampler::submit)
/// copies what it needs into a [`SampleRecord`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PacketInfo<'a> {
    /// The frame from its Ethernet header on; the first `header_bytes` are copied
    /// (all of it if shorter). It may run on past `frame_len` into the rest of the
    /// buffer: nothing past `frame_len` is sampled, but a slice that covers whole
    /// 64-byte lines lets the ring copy them with fixed-size stores.
    pub frame: &'a [u8],
    /// Length of the whole frame without FCS (may exceed `frame.len()` when only the
    /// first segment is at hand).
    pub frame_len: u32,
    /// Interface the packet came in on.
    pub input: Interface,
    /// Where it goes: an ifIndex, [`Interface::Internal`] for local delivery,
    /// [`Interface::Discarded`] with a reason for a drop.
    pub output: Interface,
    /// Next hop chosen, if any (extended_router, extended_mpls).
    pub next_hop: Option<IpAddr>,
    /// Prefix length of the route to the source (0 if not looked up).
    pub src_mask_len: u8,
    /// Prefix length of the route that forwarded the packet.
    pub dst_mask_len: u8,
    /// Label stack the packet arrived with (RFC 3032 words, top first).
    pub in_labels: &'a [u32],
    /// Label stack it leaves with.
    pub out_labels: &'a [u32],
    /// 802.1Q VLAN it arrived on (0 = untagged).
    pub src_vlan: u16,
    /// 802.1p priority it arrived with.
    pub src_priority: u8,
    /// 802.1Q VLAN it leaves on (0 = untagged).
    pub dst_vlan: u16,
    /// 802.1p priority it leaves with.
    pub dst_priority: u8,
}

/// One sample, fixed size, no heap: what travels from a worker to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleRecord {
    /// Worker that took it (the datagram's sub-agent id).
    pub worker: u32,
    /// Direction of the sampler that took it.
    pub direction: Direction,
    /// ifIndex of the sampled interface (the flow sample's data source).
    pub source: u32,
    /// N of 1-in-N at the time.
    pub sampling_rate: u32,
    /// Packets this worker's sampler of `source` had seen, this one included.
    pub sample_pool: u64,
    /// Samples of `source` this worker lost before this one (ring full).
    pub drops: u64,
    /// Input interface.
    pub input: Interface,
    /// Output.
    pub output: Interface,
    /// Frame length without FCS.
    pub frame_len: u32,
    /// Next hop.
    pub next_hop: Option<IpAddr>,
    /// Prefix length of the route to the source.
    pub src_mask_len: u8,
    /// Prefix length of the route that forwarded the packet.
    pub dst_mask_len: u8,
    /// Label stack in.
    pub in_labels: LabelWords,
    /// Label stack out.
    pub out_labels: LabelWords,
    /// VLAN in (0 = untagged).
    pub src_vlan: u16,
    /// Priority in.
    pub src_priority: u8,
    /// VLAN out (0 = untagged).
    pub dst_vlan: u16,
    /// Priority out.
    pub dst_priority: u8,
    pub(crate) header_len: u16,
    pub(crate) header: [u8; HEADER_CAPACITY],
}

impl SampleRecord {
    /// A record of `pkt` with the sampler's fields; copies at most `header_bytes`
    /// (and at most [`HEADER_CAPACITY`]) bytes of the frame.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        worker: u32,
        direction: Direction,
        source: u32,
        sampling_rate: u32,
        sample_pool: u64,
        drops: u64,
        header_bytes: usize,
        pkt: &PacketInfo<'_>,
    ) -> SampleRecord {
        let n = pkt
            .frame
            .len()
            .min(header_bytes)
            .min(HEADER_CAPACITY)
            .min(pkt.frame_len as usize);
        let mut header = [0u8; HEADER_CAPACITY];
        header[..n].copy_from_slice(&pkt.frame[..n]);
        SampleRecord {
            worker,
            direction,
            source,
            sampling_rate,
            sample_pool,
            drops,
            input: pkt.input,
            output: pkt.output,
            frame_len: pkt.frame_len,
            next_hop: pkt.next_hop,
            src_mask_len: pkt.src_mask_len,
            dst_mask_len: pkt.dst_mask_len,
            in_labels: LabelWords::from_slice(pkt.in_labels),
            out_labels: LabelWords::from_slice(pkt.out_labels),
            src_vlan: pkt.src_vlan,
            src_priority: pkt.src_priority,
            dst_vlan: pkt.dst_vlan,
            dst_priority: pkt.dst_priority,
            header_len: n as u16,
            header,
        }
    }

    /// The copied frame bytes.
    pub fn header(&self) -> &[u8] {
        &self.header[..usize::from(self.header_len).min(HEADER_CAPACITY)]
    }

    /// Whether the packet carried labels in or out (then the sample gets an
    /// extended_mpls record).
    pub fn is_mpls(&self) -> bool {
        !self.in_labels.is_empty() || !self.out_labels.is_empty()
    }

    /// Builds the sample's `flow_sample` with `sequence_number` (borrowing the
    /// record, no allocation) and hands it to `f`.
    ///
    /// Records: sampled_header (Ethernet; frame_length and stripped count the FCS),
    /// extended_switch, extended_router when there is a next hop, extended_mpls when
    /// there are labels. The 32-bit wire fields take the low bits of the pool and
    /// drops counters, which wrap as the spec expects.
    pub fn with_flow_sample<R>(
        &self,
        sequence_number: u32,
        f: impl FnOnce(&FlowSample<'_>) -> R,
    ) -> R {
        let next_hop = match self.next_hop {
            Some(IpAddr::V4(a)) => Address::V4(a),
            Some(IpAddr::V6(a)) => Address::V6(a),
            None => Address::V4(Ipv4Addr::UNSPECIFIED),
        };
        let mut records = [
            FlowRecord::SampledHeader(SampledHeader {
                protocol: HeaderProtocol::Ethernet,
                frame_length: self.frame_len.saturating_add(FCS_BYTES),
                stripped: FCS_BYTES,
                header: self.header(),
            }),
            //= sFlow v5 §5 "extended_switch": untagged ports report the port's VLAN;
            //= routed ports here have none, so 0.
            FlowRecord::ExtendedSwitch(ExtendedSwitch {
                src_vlan: u32::from(self.src_vlan),
                src_priority: u32::from(self.src_priority),
                dst_vlan: u32::from(self.dst_vlan),
                dst_priority: u32::from(self.dst_priority),
            }),
            FlowRecord::ExtendedSwitch(ExtendedSwitch::default()),
            FlowRecord::ExtendedSwitch(ExtendedSwitch::default()),
        ];
        let mut n = 2;
        if self.next_hop.is_some() {
            records[n] = FlowRecord::ExtendedRouter(ExtendedRouter {
                next_hop,
                src_mask_len: u32::from(self.src_mask_len),
                dst_mask_len: u32::from(self.dst_mask_len),
            });
            n += 1;
        }
        if self.is_mpls() {
            //= sflowtool rejects a whole datagram on an address of type 0, so a
            //= labelled packet without an IPv4 next hop reports 0.0.0.0.
            records[n] = FlowRecord::ExtendedMpls(ExtendedMpls {
                next_hop,
                in_stack: Cow::Borrowed(self.in_labels.as_slice()),
                out_stack: Cow::Borrowed(self.out_labels.as_slice()),
            });
            n += 1;
        }
        let sample = FlowSample {
            sequence_number,
            source_id: DataSource::ifindex(self.source),
            sampling_rate: self.sampling_rate,
            sample_pool: self.sample_pool as u32,
            drops: self.drops as u32,
            input: self.input,
            output: self.output,
            records: Cow::Borrowed(&records[..n]),
            expanded: false,
        };
        f(&sample)
    }
}
