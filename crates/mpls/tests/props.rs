//! Property tests: the split switch matches the whole one, and no input makes the
//! switch or the ICMP builder panic.

use mpls::{
    DropReason, LabelAction, LabelTable, MplsDecision, NextHop, TtlMode, build_time_exceeded,
    flow_hash,
};
use proptest::prelude::*;
use std::sync::OnceLock;
use wire::checksum;

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

/// An IPv6 header with hop limit `hl` and `payload`.
fn ip6_packet(hl: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 40 + payload.len()];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    p[6] = 17;
    p[7] = hl;
    p[8..10].copy_from_slice(&[0x20, 0x01]);
    p[24..26].copy_from_slice(&[0x20, 0x01]);
    p[39] = 1;
    p[40..].copy_from_slice(payload);
    p
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
        t.add(24, true, LabelAction::ip6_lookup(4)).unwrap();
        t.add(
            25,
            true,
            LabelAction::IpLookup {
                table: 5,
                ttl_mode: TtlMode::pipe(),
            },
        )
        .unwrap();
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
    fn prop_switch_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..120),
        labels in proptest::collection::vec((prop_oneof![0u32..3, 7u32..8, 16u32..26], any::<bool>(), any::<u8>()), 0..20),
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
                MplsDecision::Forward { .. }
                | MplsDecision::Php { .. }
                | MplsDecision::Php6 { .. }
                | MplsDecision::Ip4Lookup { .. }
                | MplsDecision::Ip6Lookup { .. } => {
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
            let mut out = vec![0u8; 400];
            let _ = g.ttl_exceeded_reply6(&b, std::net::Ipv6Addr::LOCALHOST, &mut out, 64);
            let mut out = [0u8; 300];
            let _ = mpls::icmp::build_time_exceeded6(&b, std::net::Ipv6Addr::LOCALHOST, &mut out);
            let mut out = [0u8; 200];
            let _ = mpls::icmp::build_packet_too_big6(&b, std::net::Ipv6Addr::LOCALHOST, 150, &mut out);
        }
    }

    /// The fast path's split switch (`top`, then `pop_into_ip4` when the entry
    /// pops into IPv4, else `switch_top`) does what `switch` does, bytes and offset
    /// alike, and `pop_into_ip4` on any other entry changes nothing.
    #[test]
    fn prop_split_switch_matches_switch(
        bytes in proptest::collection::vec(any::<u8>(), 0..80),
        labels in proptest::collection::vec((prop_oneof![0u32..3, 16u32..26], any::<bool>(), any::<u8>()), 1..6),
        ip_ttl in any::<u8>(),
        v6 in any::<bool>(),
    ) {
        let mut input = Vec::new();
        for (l, s, ttl) in &labels {
            input.extend_from_slice(&((l << 12) | (u32::from(*s) << 8) | u32::from(*ttl)).to_be_bytes());
        }
        if v6 {
            input.extend_from_slice(&ip6_packet(ip_ttl, &bytes));
        } else {
            input.extend_from_slice(&ip_packet(ip_ttl, 0, &bytes));
        }
        let r = table().reader();
        let g = r.pin();
        let w = u32::from_be_bytes([input[0], input[1], input[2], input[3]]);
        let (mut a, mut oa) = (input.clone(), 0usize);
        let want = g.switch(&mut a, &mut oa);
        let (mut b, mut ob) = (input.clone(), 0usize);
        let t = g.top(w);
        prop_assert!(!(t.pops_into_ip4(w) && t.pops_into_ip6(w)));
        let got = if t.pops_into_ip4(w) {
            match g.pop_into_ip4(&mut b, &mut ob, w, t) {
                Ok(table) => MplsDecision::Ip4Lookup { table },
                Err(r) => MplsDecision::Drop(r),
            }
        } else if t.pops_into_ip6(w) {
            match g.pop_ip6(&mut b, &mut ob, w, t) {
                Ok(()) => MplsDecision::Ip6Lookup { table: t.lookup_table() },
                Err(r) => MplsDecision::Drop(r),
            }
        } else {
            let (mut c, mut oc) = (input.clone(), 0usize);
            prop_assert_eq!(g.pop_into_ip4(&mut c, &mut oc, w, t), Err(DropReason::NoLabel));
            prop_assert_eq!(g.pop_ip6(&mut c, &mut oc, w, t), Err(DropReason::NoLabel));
            prop_assert_eq!((&c, oc), (&input, 0));
            g.switch_top(&mut b, &mut ob, w, t)
        };
        prop_assert_eq!(got, want);
        prop_assert_eq!((&b, ob), (&a, oa));
        let (mut c, mut oc) = (input.clone(), 0usize);
        prop_assert_eq!(g.switch_word(&mut c, &mut oc, w), want);
        prop_assert_eq!((&c, oc), (&a, oa));
        // `switch_one_to`: a one-label swap or a PHP out of `adj` exactly as
        // `switch` does it (every PHP of a PHP entry taken; an ECMP leg's is
        // `switch_top`'s), anything else untouched.
        for adj in [0u32, 1, 2, 3] {
            let (mut d, mut od) = (input.clone(), 0usize);
            match g.switch_one_to(&mut d, &mut od, w, g.top(w), adj) {
                Some(php) => {
                    let as_switch = if php {
                        MplsDecision::Php { adj }
                    } else {
                        MplsDecision::Forward { adj }
                    };
                    prop_assert_eq!(as_switch, want);
                    prop_assert_eq!((&d, od), (&a, oa));
                }
                None => {
                    if w >> 12 == 17 {
                        prop_assert_ne!(want, MplsDecision::Php { adj });
                    }
                    prop_assert_eq!((&d, od), (&input, 0));
                }
            }
        }
    }
}
