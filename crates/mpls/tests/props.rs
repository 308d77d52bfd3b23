//! Property tests: push/pop round trips, and no input makes the switch, the pop or the
//! ICMP builder panic.

use mpls::{
    DropReason, Imposition, LabelAction, LabelTable, MAX_LABELS, MplsDecision, NextHop, TtlMode,
    build_time_exceeded, flow_hash, pop,
};
use proptest::prelude::*;
use std::sync::OnceLock;
use wire::{EtherType, Ipv4Packet, LabelStack, checksum};

fn ip_packet(ttl: u8, dscp: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20 + payload.len()];
    p[0] = 0x45;
    p[1] = dscp << 2;
    p[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    p[8] = ttl;
    p[9] = 17;
    p[12..16].copy_from_slice(&[16, 0, 0, 1]);
    p[16..20].copy_from_slice(&[48, 0, 0, 1]);
    let c = checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p[20..].copy_from_slice(payload);
    p
}

fn out_label() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(2u32), 16u32..(1 << 20)]
}

/// A table shared by the no-panic properties (building 8 MiB per case is slow).
fn table() -> &'static LabelTable {
    static T: OnceLock<LabelTable> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = LabelTable::new();
        t.add(16, true, LabelAction::swap(1, &[17])).unwrap();
        t.add(16, false, LabelAction::swap(1, &[17, 18, 19]))
            .unwrap();
        t.add(17, true, LabelAction::php(2)).unwrap();
        t.add(17, false, LabelAction::php(2)).unwrap();
        t.add(18, true, LabelAction::ip4_lookup(3)).unwrap();
        t.add(
            18,
            false,
            LabelAction::Pop {
                ttl_mode: TtlMode::Uniform,
            },
        )
        .unwrap();
        t.add(
            19,
            true,
            LabelAction::Forward {
                paths: vec![
                    NextHop::new(1, &[20]),
                    NextHop::new(2, &[3]),
                    NextHop::new(3, &[21, 22]),
                ],
                ttl_mode: TtlMode::Uniform,
            },
        )
        .unwrap();
        t
    })
}

proptest! {
    #[test]
    fn prop_push_pop_round_trip(
        labels in proptest::collection::vec(out_label(), 1..=MAX_LABELS),
        ttl in 1u8..=255,
        dscp in 0u8..64,
        pipe in any::<bool>(),
        payload in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mode = if pipe { TtlMode::pipe() } else { TtlMode::Uniform };
        let imp = Imposition::new(&labels, mode).unwrap();
        let ip = ip_packet(ttl, dscp, &payload);
        let head = 4 * MAX_LABELS;
        let mut buf = vec![0u8; head];
        buf.extend_from_slice(&ip);
        let r = imp.push_ip4(&mut buf, head).unwrap();
        prop_assert_eq!(r.off, head - 4 * labels.len());
        prop_assert_eq!(r.ethertype, EtherType::Mpls);
        let st = LabelStack::new_checked(&buf[r.off..]).unwrap();
        prop_assert_eq!(st.depth(), labels.len());
        for (i, e) in st.iter().enumerate() {
            prop_assert_eq!(e.label.value(), labels[i]);
            prop_assert_eq!(e.bos, i + 1 == labels.len());
            prop_assert_eq!(e.ttl, if pipe { 255 } else { ttl });
            prop_assert_eq!(e.tc, if pipe { 0 } else { dscp >> 3 });
        }
        let mut off = r.off;
        for i in 0..labels.len() {
            let p = pop(&mut buf, off, mode).unwrap();
            prop_assert_eq!(p.off, off + 4);
            let last = i + 1 == labels.len();
            prop_assert_eq!(p.ethertype, if last { EtherType::Ipv4 } else { EtherType::Mpls });
            off = p.off;
        }
        prop_assert_eq!(off, head);
        // Uniform: label TTL == IP TTL, so the packet comes back byte for byte; pipe:
        // untouched anyway.
        prop_assert_eq!(&buf[head..], &ip[..]);
        prop_assert!(Ipv4Packet::new_checked(&buf[head..]).unwrap().verify_checksum());
    }

    #[test]
    fn prop_uniform_pop_sets_ttl_and_valid_checksum(label_ttl in any::<u8>(), ip_ttl in any::<u8>()) {
        let mut buf = vec![0x00, 0x01, 0x01, label_ttl];
        buf.extend_from_slice(&ip_packet(ip_ttl, 0, b"x"));
        let r = pop(&mut buf, 0, TtlMode::Uniform).unwrap();
        let p = Ipv4Packet::new_checked(&buf[r.off..]).unwrap();
        prop_assert_eq!(p.ttl(), label_ttl);
        prop_assert!(p.verify_checksum());
    }

    #[test]
    fn prop_switch_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..120),
        labels in proptest::collection::vec((16u32..24, any::<bool>(), any::<u8>()), 0..20),
        off in 0usize..80,
    ) {
        // Random bytes, and random stacks of labels the table knows.
        let mut stacked = Vec::new();
        for (l, s, ttl) in &labels {
            stacked.extend_from_slice(&((l << 12) | (u32::from(*s) << 8) | u32::from(*ttl)).to_be_bytes());
        }
        stacked.extend_from_slice(&bytes);
        let r = table().reader();
        let g = r.pin();
        for input in [&bytes, &stacked] {
            let mut b = input.clone();
            let mut o = off.min(b.len());
            let start = o;
            let d = g.switch(&mut b, &mut o);
            match d {
                MplsDecision::Forward { .. } | MplsDecision::Php { .. } | MplsDecision::Ip4Lookup { .. } => {
                    prop_assert!(o <= b.len());
                }
                _ => {
                    prop_assert_eq!(o, start);
                    prop_assert_eq!(&b, input);
                }
            }
            let _ = flow_hash(&b);
            let mut out = [0u8; 300];
            let _ = build_time_exceeded(&b, std::net::Ipv4Addr::LOCALHOST, 0, &mut out);
            let mut out = vec![0u8; 400];
            let _ = g.ttl_exceeded_reply(&b, std::net::Ipv4Addr::LOCALHOST, 0, &mut out, 64);
            let _ = pop(&mut b, start, TtlMode::Uniform);
        }
    }

    /// The fast path's split switch (`top`, then `pop_into_ip4` when the entry
    /// pops into IPv4, else `switch_top`) does what `switch` does, bytes and offset
    /// alike, and `pop_into_ip4` on any other entry changes nothing.
    #[test]
    fn prop_split_switch_matches_switch(
        bytes in proptest::collection::vec(any::<u8>(), 0..80),
        labels in proptest::collection::vec((16u32..24, any::<bool>(), any::<u8>()), 1..6),
        ip_ttl in any::<u8>(),
    ) {
        let mut input = Vec::new();
        for (l, s, ttl) in &labels {
            input.extend_from_slice(&((l << 12) | (u32::from(*s) << 8) | u32::from(*ttl)).to_be_bytes());
        }
        input.extend_from_slice(&ip_packet(ip_ttl, 0, &bytes));
        let r = table().reader();
        let g = r.pin();
        let w = u32::from_be_bytes([input[0], input[1], input[2], input[3]]);
        let (mut a, mut oa) = (input.clone(), 0usize);
        let want = g.switch(&mut a, &mut oa);
        let (mut b, mut ob) = (input.clone(), 0usize);
        let t = g.top(w);
        let got = if t.pops_into_ip4(w) {
            match g.pop_into_ip4(&mut b, &mut ob, w, t) {
                Ok(table) => MplsDecision::Ip4Lookup { table },
                Err(r) => MplsDecision::Drop(r),
            }
        } else {
            let (mut c, mut oc) = (input.clone(), 0usize);
            prop_assert_eq!(g.pop_into_ip4(&mut c, &mut oc, w, t), Err(DropReason::NoLabel));
            prop_assert_eq!((&c, oc), (&input, 0));
            g.switch_top(&mut b, &mut ob, w, t)
        };
        prop_assert_eq!(got, want);
        prop_assert_eq!((&b, ob), (&a, oa));
        let (mut c, mut oc) = (input.clone(), 0usize);
        prop_assert_eq!(g.switch_word(&mut c, &mut oc, w), want);
        prop_assert_eq!((&c, oc), (&a, oa));
    }

    #[test]
    fn prop_push_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        n in 0usize..=MAX_LABELS,
        off in 0usize..80,
    ) {
        let imp = Imposition::new(&vec![16; n], TtlMode::Uniform).unwrap();
        let mut b = bytes.clone();
        match imp.push_ip4(&mut b, off) {
            Ok(r) => prop_assert_eq!(r.off + 4 * n, off),
            Err(e) => prop_assert!(matches!(e, DropReason::Truncated | DropReason::NoHeadroom)),
        }
        let _ = imp.push_mpls(&mut b, off, 1, 64);
    }
}
