//! sFlow v5 decoder, for tests and tools (a collector in a test, a capture reader).
//!
//! Strict where the reference decoders are strict and a little stricter: every
//! sample and record length must equal what its structure consumes (sflowtool aborts
//! the rest of a datagram otherwise), padding must be zero, the sample count must
//! match the samples present and nothing may follow the last one. Unknown sample and
//! record formats are kept as bytes and skipped by their length, as sflowtool and
//! tshark do. It never panics and never allocates more than the input can describe:
//! every count is checked against the bytes left before anything is reserved.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::proto::{
    Address, CounterRecord, CountersSample, DataSource, Datagram, DatagramHeader, EthernetCounters,
    ExtendedMpls, ExtendedRouter, ExtendedSwitch, FlowRecord, FlowSample, HeaderProtocol,
    IfCounters, Interface, Sample, SampledHeader, VERSION, format, pad4,
};

/// Why bytes are not a valid sFlow v5 datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ends inside a field, or a count or length points past the end of
    /// the enclosing structure.
    #[error("truncated at byte {at}")]
    Truncated {
        /// Offset of the field that does not fit.
        at: usize,
    },
    /// The version word is not 5.
    #[error("datagram version {0}, only 5 is supported")]
    BadVersion(u32),
    /// An address type other than 0, 1 or 2.
    #[error("address type {0}")]
    BadAddressType(u32),
    /// A sample or record body is longer than its structure (the length word and
    /// the contents disagree).
    #[error("length of format {format} disagrees with its contents")]
    LengthMismatch {
        /// `data_format` of the sample or record.
        format: u32,
    },
    /// An XDR padding byte is not zero.
    #[error("non-zero padding at byte {at}")]
    NonZeroPadding {
        /// Offset of the padding.
        at: usize,
    },
    /// An interface word of format 3 (undefined), or an expanded format above 2.
    #[error("interface format {0}")]
    BadInterfaceFormat(u32),
    /// Bytes after the last sample.
    #[error("{0} bytes after the last sample")]
    TrailingBytes(usize),
}

/// Reader over one structure: offsets are kept relative to the whole datagram for
/// error messages.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], base: usize) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    fn at(&self) -> usize {
        self.base + self.pos
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let at = self.at();
        let end = self
            .pos
            .checked_add(n)
            .ok_or(DecodeError::Truncated { at })?;
        let b = self
            .buf
            .get(self.pos..end)
            .ok_or(DecodeError::Truncated { at })?;
        self.pos = end;
        Ok(b)
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from(self.u32()?) << 32 | u64::from(self.u32()?))
    }

    /// `n` bytes followed by zero padding to a 4-byte boundary.
    fn padded(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let data = self.take(n)?;
        let at = self.at();
        let pad = self.take(pad4(n) - n)?;
        if pad.iter().any(|&b| b != 0) {
            return Err(DecodeError::NonZeroPadding { at });
        }
        Ok(data)
    }

    /// A length word followed by that many padded bytes.
    fn opaque(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u32()? as usize;
        self.padded(n)
    }

    /// A count of items of at least `min_item` bytes each: rejects counts the rest
    /// of the structure cannot hold before anything is allocated for them.
    fn count(&mut self, min_item: usize) -> Result<usize, DecodeError> {
        let at = self.at();
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item) > self.remaining() {
            return Err(DecodeError::Truncated { at });
        }
        Ok(n)
    }

    fn address(&mut self) -> Result<Address, DecodeError> {
        match self.u32()? {
            0 => Ok(Address::Unknown),
            1 => {
                let b = self.take(4)?;
                Ok(Address::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])))
            }
            2 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(self.take(16)?);
                Ok(Address::V6(Ipv6Addr::from(a)))
            }
            t => Err(DecodeError::BadAddressType(t)),
        }
    }

    /// A tagged structure: `data_format`, length, body (padded). Returns the format
    /// and a reader over the body without its padding.
    fn tagged(&mut self) -> Result<(u32, Reader<'a>), DecodeError> {
        let fmt = self.u32()?;
        let base = self.at() + 4;
        let body = self.opaque()?;
        Ok((fmt, Reader::new(body, base)))
    }

    /// Fails unless the whole body was consumed.
    fn finish(&self, format: u32) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return Err(DecodeError::LengthMismatch { format });
        }
        Ok(())
    }
}

/// Runs `parse` over a body that must be consumed exactly; running out of body
/// inside the structure is a length mismatch too (the length word is too short).
fn exact<'a, T>(
    format: u32,
    mut r: Reader<'a>,
    parse: impl FnOnce(&mut Reader<'a>) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    let v = parse(&mut r).map_err(|e| match e {
        DecodeError::Truncated { .. } => DecodeError::LengthMismatch { format },
        e => e,
    })?;
    r.finish(format)?;
    Ok(v)
}

/// Decodes one datagram (a UDP payload).
pub fn decode_datagram(buf: &[u8]) -> Result<Datagram<'_>, DecodeError> {
    let mut r = Reader::new(buf, 0);
    let version = r.u32()?;
    if version != VERSION {
        return Err(DecodeError::BadVersion(version));
    }
    let header = DatagramHeader {
        agent_address: r.address()?,
        sub_agent_id: r.u32()?,
        sequence_number: r.u32()?,
        uptime_ms: r.u32()?,
    };
    let n = r.count(8)?;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        samples.push(sample(&mut r)?);
    }
    if r.remaining() != 0 {
        return Err(DecodeError::TrailingBytes(r.remaining()));
    }
    Ok(Datagram {
        header,
        samples: Cow::Owned(samples),
    })
}

fn sample<'a>(r: &mut Reader<'a>) -> Result<Sample<'a>, DecodeError> {
    let (fmt, body) = r.tagged()?;
    Ok(match fmt {
        format::FLOW_SAMPLE => Sample::Flow(exact(fmt, body, |b| flow_sample(b, false))?),
        format::FLOW_SAMPLE_EXPANDED => Sample::Flow(exact(fmt, body, |b| flow_sample(b, true))?),
        format::COUNTERS_SAMPLE => {
            Sample::Counters(exact(fmt, body, |b| counters_sample(b, false))?)
        }
        format::COUNTERS_SAMPLE_EXPANDED => {
            Sample::Counters(exact(fmt, body, |b| counters_sample(b, true))?)
        }
        _ => Sample::Unknown {
            format: fmt,
            data: body.buf,
        },
    })
}

fn interface_compact(w: u32) -> Result<Interface, DecodeError> {
    Interface::from_compact(w).ok_or(DecodeError::BadInterfaceFormat(w >> 30))
}

fn interface_expanded(r: &mut Reader<'_>) -> Result<Interface, DecodeError> {
    let f = r.u32()?;
    let v = r.u32()?;
    Interface::from_expanded(f, v).ok_or(DecodeError::BadInterfaceFormat(f))
}

fn flow_sample<'a>(r: &mut Reader<'a>, expanded: bool) -> Result<FlowSample<'a>, DecodeError> {
    let sequence_number = r.u32()?;
    let source_id = if expanded {
        DataSource {
            class: r.u32()?,
            index: r.u32()?,
        }
    } else {
        DataSource::from_compact(r.u32()?)
    };
    let sampling_rate = r.u32()?;
    let sample_pool = r.u32()?;
    let drops = r.u32()?;
    let (input, output) = if expanded {
        (interface_expanded(r)?, interface_expanded(r)?)
    } else {
        (interface_compact(r.u32()?)?, interface_compact(r.u32()?)?)
    };
    let n = r.count(8)?;
    let mut records = Vec::with_capacity(n);
    for _ in 0..n {
        records.push(flow_record(r)?);
    }
    Ok(FlowSample {
        sequence_number,
        source_id,
        sampling_rate,
        sample_pool,
        drops,
        input,
        output,
        records: Cow::Owned(records),
        expanded,
    })
}

fn label_stack(r: &mut Reader<'_>) -> Result<Vec<u32>, DecodeError> {
    let n = r.count(4)?;
    (0..n).map(|_| r.u32()).collect()
}

fn flow_record<'a>(r: &mut Reader<'a>) -> Result<FlowRecord<'a>, DecodeError> {
    let (fmt, body) = r.tagged()?;
    match fmt {
        format::SAMPLED_HEADER => exact(fmt, body, |b| {
            Ok(FlowRecord::SampledHeader(SampledHeader {
                protocol: HeaderProtocol::from_value(b.u32()?),
                frame_length: b.u32()?,
                stripped: b.u32()?,
                header: b.opaque()?,
            }))
        }),
        format::EXTENDED_SWITCH => exact(fmt, body, |b| {
            Ok(FlowRecord::ExtendedSwitch(ExtendedSwitch {
                src_vlan: b.u32()?,
                src_priority: b.u32()?,
                dst_vlan: b.u32()?,
                dst_priority: b.u32()?,
            }))
        }),
        format::EXTENDED_ROUTER => exact(fmt, body, |b| {
            Ok(FlowRecord::ExtendedRouter(ExtendedRouter {
                next_hop: b.address()?,
                src_mask_len: b.u32()?,
                dst_mask_len: b.u32()?,
            }))
        }),
        format::EXTENDED_MPLS => exact(fmt, body, |b| {
            Ok(FlowRecord::ExtendedMpls(ExtendedMpls {
                next_hop: b.address()?,
                in_stack: Cow::Owned(label_stack(b)?),
                out_stack: Cow::Owned(label_stack(b)?),
            }))
        }),
        _ => Ok(FlowRecord::Unknown {
            format: fmt,
            data: body.buf,
        }),
    }
}

fn counters_sample<'a>(
    r: &mut Reader<'a>,
    expanded: bool,
) -> Result<CountersSample<'a>, DecodeError> {
    let sequence_number = r.u32()?;
    let source_id = if expanded {
        DataSource {
            class: r.u32()?,
            index: r.u32()?,
        }
    } else {
        DataSource::from_compact(r.u32()?)
    };
    let n = r.count(8)?;
    let mut records = Vec::with_capacity(n);
    for _ in 0..n {
        records.push(counter_record(r)?);
    }
    Ok(CountersSample {
        sequence_number,
        source_id,
        records: Cow::Owned(records),
        expanded,
    })
}

fn counter_record<'a>(r: &mut Reader<'a>) -> Result<CounterRecord<'a>, DecodeError> {
    let (fmt, body) = r.tagged()?;
    match fmt {
        format::GENERIC_INTERFACE => exact(fmt, body, |b| {
            Ok(CounterRecord::Generic(IfCounters {
                if_index: b.u32()?,
                if_type: b.u32()?,
                if_speed: b.u64()?,
                if_direction: b.u32()?,
                if_status: b.u32()?,
                in_octets: b.u64()?,
                in_ucast_pkts: b.u32()?,
                in_multicast_pkts: b.u32()?,
                in_broadcast_pkts: b.u32()?,
                in_discards: b.u32()?,
                in_errors: b.u32()?,
                in_unknown_protos: b.u32()?,
                out_octets: b.u64()?,
                out_ucast_pkts: b.u32()?,
                out_multicast_pkts: b.u32()?,
                out_broadcast_pkts: b.u32()?,
                out_discards: b.u32()?,
                out_errors: b.u32()?,
                promiscuous_mode: b.u32()?,
            }))
        }),
        format::ETHERNET_INTERFACE => exact(fmt, body, |b| {
            let mut w = [0u32; 13];
            for v in &mut w {
                *v = b.u32()?;
            }
            Ok(CounterRecord::Ethernet(EthernetCounters::from_words(w)))
        }),
        _ => Ok(CounterRecord::Unknown {
            format: fmt,
            data: body.buf,
        }),
    }
}
