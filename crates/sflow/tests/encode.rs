//! Encoder byte tests for every structure (expected bytes computed by hand from the
//! XDR layouts of sFlow v5 §5), round trips through the decoder, and the decoder's
//! errors on malformed input (plus proptest: arbitrary bytes never panic, arbitrary
//! structures round-trip).

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use sflow::proto::pad4;
use sflow::*;

/// Big-endian words to bytes.
fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_be_bytes()).collect()
}

fn emit(len: usize, f: impl FnOnce(&mut [u8]) -> Result<usize, EncodeError>) -> Vec<u8> {
    let mut b = vec![0xee; len];
    let n = f(&mut b).expect("emit");
    assert_eq!(n, len, "emit wrote buffer_len bytes");
    b
}

fn flow_record_bytes(r: &FlowRecord<'_>) -> Vec<u8> {
    emit(r.buffer_len(), |b| r.emit(b))
}

const LSE_100: u32 = 100 << 12 | 1 << 8 | 64; // label 100, S, TTL 64
const LSE_200: u32 = 200 << 12 | 63; // label 200, TTL 63
const LSE_300: u32 = 300 << 12 | 1 << 8 | 63; // label 300, S, TTL 63

#[test]
fn test_datagram_header_ipv4() {
    let h = DatagramHeader {
        agent_address: Address::V4(Ipv4Addr::new(192, 0, 2, 1)),
        sub_agent_id: 3,
        sequence_number: 7,
        uptime_ms: 1000,
    };
    assert_eq!(h.buffer_len(), 28);
    let b = emit(28, |b| h.emit(2, b));
    assert_eq!(b, words(&[5, 1, 0xc000_0201, 3, 7, 1000, 2]));
}

#[test]
fn test_datagram_header_ipv6() {
    let h = DatagramHeader {
        agent_address: Address::V6("2001:db8::1".parse().unwrap()),
        sub_agent_id: 1,
        sequence_number: 0xffff_ffff,
        uptime_ms: 5,
    };
    assert_eq!(h.buffer_len(), 40);
    let b = emit(40, |b| h.emit(0, b));
    assert_eq!(
        b,
        words(&[5, 2, 0x2001_0db8, 0, 0, 1, 1, 0xffff_ffff, 5, 0])
    );
}

#[test]
fn test_sampled_header_pads_to_four() {
    let r = FlowRecord::SampledHeader(SampledHeader {
        protocol: HeaderProtocol::Ethernet,
        frame_length: 64,
        stripped: 4,
        header: &[1, 2, 3, 4, 5, 6],
    });
    // format 1, length 16 + 8, protocol 1, frame_length, stripped, header<6> + 2 pad
    let want = words(&[1, 24, 1, 64, 4, 6, 0x0102_0304, 0x0506_0000]);
    assert_eq!(flow_record_bytes(&r), want);
}

#[test]
fn test_sampled_header_128() {
    let hdr = [0x5a; 128];
    let r = FlowRecord::SampledHeader(SampledHeader {
        protocol: HeaderProtocol::Ethernet,
        frame_length: 146,
        stripped: 4,
        header: &hdr,
    });
    // sflow-v5 reference: a 128-byte header makes a 144-byte record body.
    assert_eq!(r.body_len(), 144);
    let b = flow_record_bytes(&r);
    assert_eq!(&b[..24], &words(&[1, 144, 1, 146, 4, 128])[..]);
    assert_eq!(&b[24..], &hdr[..]);
}

#[test]
fn test_extended_switch() {
    let r = FlowRecord::ExtendedSwitch(ExtendedSwitch {
        src_vlan: 10,
        src_priority: 3,
        dst_vlan: 20,
        dst_priority: 5,
    });
    assert_eq!(flow_record_bytes(&r), words(&[1001, 16, 10, 3, 20, 5]));
}

#[test]
fn test_extended_router_v4_and_v6() {
    let r = FlowRecord::ExtendedRouter(ExtendedRouter {
        next_hop: Address::V4(Ipv4Addr::new(10, 0, 0, 1)),
        src_mask_len: 0,
        dst_mask_len: 24,
    });
    assert_eq!(
        flow_record_bytes(&r),
        words(&[1002, 16, 1, 0x0a00_0001, 0, 24])
    );
    let r = FlowRecord::ExtendedRouter(ExtendedRouter {
        next_hop: Address::V6(Ipv6Addr::LOCALHOST),
        src_mask_len: 8,
        dst_mask_len: 64,
    });
    assert_eq!(
        flow_record_bytes(&r),
        words(&[1002, 28, 2, 0, 0, 0, 1, 8, 64])
    );
}

#[test]
fn test_extended_mpls() {
    let r = FlowRecord::ExtendedMpls(ExtendedMpls {
        next_hop: Address::V4(Ipv4Addr::new(10, 0, 0, 1)),
        in_stack: Cow::Borrowed(&[LSE_100]),
        out_stack: Cow::Borrowed(&[LSE_200, LSE_300]),
    });
    assert_eq!(LSE_100, 0x0006_4140);
    assert_eq!(LSE_200, 0x000c_803f);
    assert_eq!(LSE_300, 0x0012_c13f);
    // body: address (8) + count + 1 label + count + 2 labels = 28
    let want = words(&[
        1006,
        28,
        1,
        0x0a00_0001,
        1,
        0x0006_4140,
        2,
        0x000c_803f,
        0x0012_c13f,
    ]);
    assert_eq!(flow_record_bytes(&r), want);
}

#[test]
fn test_extended_mpls_empty_stacks() {
    let r = FlowRecord::ExtendedMpls(ExtendedMpls {
        next_hop: Address::V4(Ipv4Addr::UNSPECIFIED),
        in_stack: Cow::Borrowed(&[]),
        out_stack: Cow::Borrowed(&[LSE_300]),
    });
    assert_eq!(
        flow_record_bytes(&r),
        words(&[1006, 20, 1, 0, 0, 1, 0x0012_c13f])
    );
}

fn switch() -> FlowRecord<'static> {
    FlowRecord::ExtendedSwitch(ExtendedSwitch {
        src_vlan: 10,
        src_priority: 3,
        dst_vlan: 20,
        dst_priority: 5,
    })
}

#[test]
fn test_flow_sample_compact() {
    let recs = [switch()];
    let s = FlowSample {
        sequence_number: 1,
        source_id: DataSource::ifindex(5),
        sampling_rate: 10,
        sample_pool: 100,
        drops: 2,
        input: Interface::Index(5),
        output: Interface::Index(7),
        records: Cow::Borrowed(&recs),
        expanded: false,
    };
    assert_eq!(s.buffer_len(), 8 + 32 + 24);
    let b = emit(s.buffer_len(), |b| s.emit(b));
    let mut want = words(&[1, 56, 1, 5, 10, 100, 2, 5, 7, 1]);
    want.extend(words(&[1001, 16, 10, 3, 20, 5]));
    assert_eq!(b, want);
}

#[test]
fn test_flow_sample_interface_encodings() {
    let cases = [
        (Interface::Index(0), 0),
        (Interface::Internal, 0x3fff_ffff),
        (Interface::Discarded(Interface::DISCARD_TTL), 0x4000_0101),
        (Interface::Multiple(7), 0x8000_0007),
        (Interface::Multiple(0), 0x8000_0000),
    ];
    for (i, w) in cases {
        let s = FlowSample {
            sequence_number: 9,
            source_id: DataSource::ifindex(1),
            sampling_rate: 1,
            sample_pool: 1,
            drops: 0,
            input: Interface::Index(1),
            output: i,
            records: Cow::Borrowed(&[]),
            expanded: false,
        };
        let b = emit(s.buffer_len(), |b| s.emit(b));
        assert_eq!(b, words(&[1, 32, 9, 1, 1, 1, 0, 1, w, 0]), "{i:?}");
    }
    // Out of range for the compact form.
    for bad in [Interface::Index(0x3fff_ffff), Interface::Discarded(1 << 30)] {
        assert_eq!(
            bad.to_compact(),
            Err(EncodeError::InterfaceValue(match bad {
                Interface::Index(v) | Interface::Discarded(v) => v,
                _ => 0,
            }))
        );
    }
    assert!(DataSource::ifindex(1 << 24).to_compact().is_err());
}

#[test]
fn test_flow_sample_expanded() {
    let recs = [switch()];
    let s = FlowSample {
        sequence_number: 1,
        source_id: DataSource::ifindex(5),
        sampling_rate: 10,
        sample_pool: 100,
        drops: 2,
        input: Interface::Index(5),
        output: Interface::Internal,
        records: Cow::Borrowed(&recs),
        expanded: true,
    };
    let b = emit(s.buffer_len(), |b| s.emit(b));
    let mut want = words(&[3, 68, 1, 0, 5, 10, 100, 2, 0, 5, 0, 0xffff_ffff, 1]);
    want.extend(words(&[1001, 16, 10, 3, 20, 5]));
    assert_eq!(b, want);
}

fn if_counters() -> IfCounters {
    IfCounters {
        if_index: 5,
        if_type: 6,
        if_speed: 10_000_000_000,
        if_direction: 1,
        if_status: 3,
        in_octets: 0x0000_0001_0000_0002,
        in_ucast_pkts: 10,
        in_multicast_pkts: 11,
        in_broadcast_pkts: 12,
        in_discards: 13,
        in_errors: 14,
        in_unknown_protos: 15,
        out_octets: 0x0000_0003_0000_0004,
        out_ucast_pkts: 20,
        out_multicast_pkts: 21,
        out_broadcast_pkts: 22,
        out_discards: 23,
        out_errors: 24,
        promiscuous_mode: 2,
    }
}

#[test]
fn test_if_counters_88_bytes() {
    let r = CounterRecord::Generic(if_counters());
    let b = emit(r.buffer_len(), |b| r.emit(b));
    let want = words(&[
        1,
        88, // format, length
        5,
        6,
        0x0000_0002,
        0x540b_e400, // ifIndex, ifType, ifSpeed 10^10
        1,
        3, // direction, status
        1,
        2, // in octets
        10,
        11,
        12,
        13,
        14,
        15, // in ucast .. unknown protos
        3,
        4, // out octets
        20,
        21,
        22,
        23,
        24, // out ucast .. errors
        2,  // promiscuous
    ]);
    assert_eq!(b.len(), 8 + 88);
    assert_eq!(b, want);
}

#[test]
fn test_ethernet_counters() {
    let e = EthernetCounters::from_words([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    assert_eq!(e.fcs_errors, 2);
    assert_eq!(e.symbol_errors, 13);
    let r = CounterRecord::Ethernet(e);
    let b = emit(r.buffer_len(), |b| r.emit(b));
    assert_eq!(
        b,
        words(&[2, 52, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
    );
}

#[test]
fn test_counters_sample_compact_and_expanded() {
    let recs = [CounterRecord::Ethernet(EthernetCounters::from_words(
        [0; 13],
    ))];
    let mut s = CountersSample {
        sequence_number: 9,
        source_id: DataSource::ifindex(5),
        records: Cow::Borrowed(&recs),
        expanded: false,
    };
    let b = emit(s.buffer_len(), |b| s.emit(b));
    let mut want = words(&[2, 72, 9, 5, 1, 2, 52]);
    want.extend([0u8; 52]);
    assert_eq!(b, want);
    s.expanded = true;
    let b = emit(s.buffer_len(), |b| s.emit(b));
    let mut want = words(&[4, 76, 9, 0, 5, 1, 2, 52]);
    want.extend([0u8; 52]);
    assert_eq!(b, want);
}

#[test]
fn test_unknown_sample_and_record_are_padded() {
    let s = Sample::Unknown {
        format: 4321 << 12 | 7,
        data: &[9, 9, 9],
    };
    let b = emit(s.buffer_len(), |b| s.emit(b));
    assert_eq!(b, words(&[4321 << 12 | 7, 3, 0x0909_0900]));
}

#[test]
fn test_emit_refuses_small_buffer() {
    let r = switch();
    let mut b = [0u8; 23];
    assert_eq!(
        r.emit(&mut b),
        Err(EncodeError::BufferTooSmall { need: 24, have: 23 })
    );
}

/// A datagram with one of everything.
fn full_datagram() -> Vec<u8> {
    let hdr = [0x11u8; 70];
    let flow_recs = [
        FlowRecord::SampledHeader(SampledHeader {
            protocol: HeaderProtocol::Ethernet,
            frame_length: 74,
            stripped: 4,
            header: &hdr,
        }),
        switch(),
        FlowRecord::ExtendedRouter(ExtendedRouter {
            next_hop: Address::V4(Ipv4Addr::new(192, 168, 11, 10)),
            src_mask_len: 16,
            dst_mask_len: 24,
        }),
        FlowRecord::ExtendedMpls(ExtendedMpls {
            next_hop: Address::V4(Ipv4Addr::new(192, 168, 11, 10)),
            in_stack: Cow::Borrowed(&[LSE_200, LSE_100]),
            out_stack: Cow::Borrowed(&[LSE_300]),
        }),
        FlowRecord::Unknown {
            format: 1234 << 12 | 1,
            data: &[1, 2, 3, 4, 5],
        },
    ];
    let ctr_recs = [
        CounterRecord::Generic(if_counters()),
        CounterRecord::Ethernet(EthernetCounters::UNKNOWN),
    ];
    let samples = [
        Sample::Flow(FlowSample {
            sequence_number: 1,
            source_id: DataSource::ifindex(5),
            sampling_rate: 1000,
            sample_pool: 1234,
            drops: 7,
            input: Interface::Index(5),
            output: Interface::Index(6),
            records: Cow::Borrowed(&flow_recs),
            expanded: false,
        }),
        Sample::Counters(CountersSample {
            sequence_number: 2,
            source_id: DataSource::ifindex(5),
            records: Cow::Borrowed(&ctr_recs),
            expanded: false,
        }),
        Sample::Unknown {
            format: 99,
            data: &[0; 8],
        },
    ];
    let d = Datagram {
        header: DatagramHeader {
            agent_address: Address::V4(Ipv4Addr::new(192, 0, 2, 1)),
            sub_agent_id: 0,
            sequence_number: 1,
            uptime_ms: 12,
        },
        samples: Cow::Borrowed(&samples),
    };
    d.to_vec().expect("encode")
}

#[test]
fn test_round_trip_full_datagram() {
    let bytes = full_datagram();
    let d = decode_datagram(&bytes).expect("decode");
    assert_eq!(d.samples.len(), 3);
    let Sample::Flow(f) = &d.samples[0] else {
        panic!("flow sample first")
    };
    assert_eq!(f.records.len(), 5);
    match &f.records[3] {
        FlowRecord::ExtendedMpls(m) => {
            assert_eq!(&m.in_stack[..], &[LSE_200, LSE_100]);
            assert_eq!(&m.out_stack[..], &[LSE_300]);
        }
        r => panic!("{r:?}"),
    }
    match &f.records[4] {
        FlowRecord::Unknown { format, data } => {
            assert_eq!(*format, 1234 << 12 | 1);
            assert_eq!(*data, &[1, 2, 3, 4, 5]);
        }
        r => panic!("{r:?}"),
    }
    // And back to the same bytes.
    assert_eq!(d.to_vec().expect("re-encode"), bytes);
}

#[test]
fn test_decode_errors() {
    let good = full_datagram();
    let w = |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_be_bytes());

    let mut b = good.clone();
    w(&mut b, 0, 4);
    assert_eq!(decode_datagram(&b), Err(DecodeError::BadVersion(4)));

    let mut b = good.clone();
    w(&mut b, 4, 3);
    assert_eq!(decode_datagram(&b), Err(DecodeError::BadAddressType(3)));

    for cut in [0, 3, 27, 40, good.len() - 1] {
        assert!(
            matches!(
                decode_datagram(&good[..cut]),
                Err(DecodeError::Truncated { .. })
            ),
            "cut at {cut}"
        );
    }

    let mut b = good.clone();
    b.extend([0; 4]);
    assert_eq!(decode_datagram(&b), Err(DecodeError::TrailingBytes(4)));

    // num_samples larger than what follows.
    let mut b = good.clone();
    w(&mut b, 24, 1000);
    assert!(matches!(
        decode_datagram(&b),
        Err(DecodeError::Truncated { .. })
    ));
    // ... or smaller.
    let mut b = good.clone();
    w(&mut b, 24, 2);
    assert!(matches!(
        decode_datagram(&b),
        Err(DecodeError::TrailingBytes(_))
    ));

    // The flow sample's length word (at 32) 4 bytes short: the records overrun it.
    let flow_len = u32::from_be_bytes(good[32..36].try_into().unwrap());
    let mut b = good.clone();
    w(&mut b, 32, flow_len - 4);
    assert_eq!(
        decode_datagram(&b),
        Err(DecodeError::LengthMismatch { format: 1 })
    );
    // 4 bytes long (and 4 bytes inserted so the datagram stays consistent).
    let mut b = good.clone();
    w(&mut b, 32, flow_len + 4);
    b.splice(36 + flow_len as usize..36 + flow_len as usize, [0u8; 4]);
    assert_eq!(
        decode_datagram(&b),
        Err(DecodeError::LengthMismatch { format: 1 })
    );

    // Output interface word (sample body at 36: seq, src, rate, pool, drops, in, out)
    // with format 3.
    let mut b = good.clone();
    w(&mut b, 36 + 24, 0xc000_0001);
    assert_eq!(decode_datagram(&b), Err(DecodeError::BadInterfaceFormat(3)));

    // The sampled header (70 bytes, 2 of padding) with a non-zero pad byte. The
    // record starts after the 32 fixed bytes: tag 8, proto/len/stripped/hlen 16.
    let pad_at = 36 + 32 + 8 + 16 + 70;
    let mut b = good.clone();
    b[pad_at] = 1;
    assert_eq!(
        decode_datagram(&b),
        Err(DecodeError::NonZeroPadding { at: pad_at })
    );

    // A label count that cannot fit.
    let mpls_at = 36 + 32 + (8 + 16 + pad4(70)) + 24 + 24;
    assert_eq!(&good[mpls_at..mpls_at + 4], &1006u32.to_be_bytes());
    let mut b = good.clone();
    w(&mut b, mpls_at + 16, 0xffff_ffff);
    assert_eq!(
        decode_datagram(&b),
        Err(DecodeError::LengthMismatch { format: 1006 })
    );
}

#[test]
fn test_if_counters_wrong_length_rejected() {
    // An if_counters record whose length says 84 (one word short).
    let mut b = words(&[
        5,
        1,
        0x0a00_0001,
        0,
        1,
        0,
        1,
        2,
        8 + 84 + 12,
        1,
        5,
        1,
        1,
        84,
    ]);
    b.extend([0u8; 84]);
    assert_eq!(
        decode_datagram(&b),
        Err(DecodeError::LengthMismatch { format: 1 })
    );
}

fn arb_interface() -> impl Strategy<Value = Interface> {
    prop_oneof![
        (0u32..0x3fff_ffff).prop_map(Interface::Index),
        Just(Interface::Internal),
        (0u32..0x4000_0000).prop_map(Interface::Discarded),
        (0u32..0x4000_0000).prop_map(Interface::Multiple),
    ]
}

fn arb_address() -> impl Strategy<Value = Address> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| Address::V4(a.into())),
        any::<[u8; 16]>().prop_map(|a| Address::V6(a.into())),
        Just(Address::Unknown),
    ]
}

/// Flow records owning their data (the decoder's output is compared against them).
#[derive(Debug, Clone)]
enum OwnedRecord {
    Header(u32, u32, u32, Vec<u8>),
    Switch([u32; 4]),
    Router(Address, u32, u32),
    Mpls(Address, Vec<u32>, Vec<u32>),
}

fn arb_record() -> impl Strategy<Value = OwnedRecord> {
    prop_oneof![
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            prop::collection::vec(any::<u8>(), 0..300)
        )
            .prop_map(|(p, f, s, h)| OwnedRecord::Header(p, f, s, h)),
        any::<[u32; 4]>().prop_map(OwnedRecord::Switch),
        (arb_address(), any::<u32>(), any::<u32>())
            .prop_map(|(a, s, d)| OwnedRecord::Router(a, s, d)),
        (
            arb_address(),
            prop::collection::vec(any::<u32>(), 0..10),
            prop::collection::vec(any::<u32>(), 0..10)
        )
            .prop_map(|(a, i, o)| OwnedRecord::Mpls(a, i, o)),
    ]
}

impl OwnedRecord {
    fn as_record(&self) -> FlowRecord<'_> {
        match self {
            OwnedRecord::Header(p, f, s, h) => FlowRecord::SampledHeader(SampledHeader {
                protocol: HeaderProtocol::from_value(*p),
                frame_length: *f,
                stripped: *s,
                header: h,
            }),
            OwnedRecord::Switch(w) => FlowRecord::ExtendedSwitch(ExtendedSwitch {
                src_vlan: w[0],
                src_priority: w[1],
                dst_vlan: w[2],
                dst_priority: w[3],
            }),
            OwnedRecord::Router(a, s, d) => FlowRecord::ExtendedRouter(ExtendedRouter {
                next_hop: *a,
                src_mask_len: *s,
                dst_mask_len: *d,
            }),
            OwnedRecord::Mpls(a, i, o) => FlowRecord::ExtendedMpls(ExtendedMpls {
                next_hop: *a,
                in_stack: Cow::Borrowed(i),
                out_stack: Cow::Borrowed(o),
            }),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary bytes: an error or a datagram, never a panic.
    #[test]
    fn decode_arbitrary_bytes_never_panics(b in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = decode_datagram(&b);
    }

    /// Valid datagrams with words overwritten, truncated or extended: never a panic,
    /// and whatever decodes re-encodes to the same bytes.
    #[test]
    fn decode_mutated_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u32>()), 1..6),
        cut in any::<prop::sample::Index>(),
        trunc in any::<bool>(),
    ) {
        let mut b = full_datagram();
        for (at, v) in edits {
            let i = at.index(b.len() / 4) * 4;
            b[i..i + 4].copy_from_slice(&v.to_be_bytes());
        }
        if trunc {
            b.truncate(cut.index(b.len() + 1));
        }
        if let Ok(d) = decode_datagram(&b) {
            prop_assert_eq!(d.to_vec().unwrap(), b);
        }
    }

    /// Arbitrary structures: encode then decode gives them back.
    #[test]
    fn flow_samples_round_trip(
        seq in any::<u32>(), index in 0u32..(1 << 24), rate in any::<u32>(),
        pool in any::<u32>(), drops in any::<u32>(),
        input in arb_interface(), output in arb_interface(),
        recs in prop::collection::vec(arb_record(), 0..5),
        agent in arb_address(), sub in any::<u32>(), dseq in any::<u32>(), up in any::<u32>(),
        expanded in any::<bool>(),
    ) {
        let records: Vec<FlowRecord<'_>> = recs.iter().map(OwnedRecord::as_record).collect();
        let samples = [Sample::Flow(FlowSample {
            sequence_number: seq,
            source_id: DataSource::ifindex(index),
            sampling_rate: rate,
            sample_pool: pool,
            drops,
            input,
            output,
            records: Cow::Borrowed(&records),
            expanded,
        })];
        let d = Datagram {
            header: DatagramHeader { agent_address: agent, sub_agent_id: sub, sequence_number: dseq, uptime_ms: up },
            samples: Cow::Borrowed(&samples),
        };
        let bytes = d.to_vec().unwrap();
        prop_assert_eq!(bytes.len() % 4, 0);
        let back = decode_datagram(&bytes).unwrap();
        prop_assert_eq!(&back, &d);
    }

    #[test]
    fn counters_round_trip(
        c in any::<[u32; 16]>(), big in any::<[u64; 3]>(), e in any::<[u32; 13]>(),
        seq in any::<u32>(), index in 0u32..(1 << 24), expanded in any::<bool>(),
    ) {
        let g = IfCounters {
            if_index: c[0], if_type: c[1], if_speed: big[0], if_direction: c[2], if_status: c[3],
            in_octets: big[1], in_ucast_pkts: c[4], in_multicast_pkts: c[5],
            in_broadcast_pkts: c[6], in_discards: c[7], in_errors: c[8], in_unknown_protos: c[9],
            out_octets: big[2], out_ucast_pkts: c[10], out_multicast_pkts: c[11],
            out_broadcast_pkts: c[12], out_discards: c[13], out_errors: c[14],
            promiscuous_mode: c[15],
        };
        let recs = [CounterRecord::Generic(g), CounterRecord::Ethernet(EthernetCounters::from_words(e))];
        let samples = [Sample::Counters(CountersSample {
            sequence_number: seq,
            source_id: DataSource::ifindex(index),
            records: Cow::Borrowed(&recs),
            expanded,
        })];
        let d = Datagram {
            header: DatagramHeader { agent_address: Address::V4(Ipv4Addr::LOCALHOST), ..DatagramHeader::default() },
            samples: Cow::Borrowed(&samples),
        };
        let bytes = d.to_vec().unwrap();
        let back = decode_datagram(&bytes).unwrap();
        prop_assert_eq!(back, d);
    }
}
