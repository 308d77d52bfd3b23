//! Byte-exact tests of every action and reserved label on hand-built
//! Ethernet/MPLS/IPv4 frames, including the cases of the VPP MPLS lab in the seed
//! article: P router swap 100 -> 100 (TTL 64 -> 63 -> 62), explicit null at the last
//! hop, implicit null (PHP) at the penultimate hop, and PE egress pop + IPv4 lookup.

mod common;

use common::*;
use mpls::{DropReason, LabelAction, LabelTable, MplsDecision, NextHop, PuntReason, TtlMode};
use wire::EtherType;

const ADJ: u32 = 7;

fn lse(label: u32, bos: bool, ttl: u8) -> String {
    format!(
        "{:08x}",
        (label << 12) | (u32::from(bos) << 8) | u32::from(ttl)
    )
}

fn switch(t: &LabelTable, buf: &mut [u8], off: &mut usize) -> MplsDecision {
    let r = t.reader();
    let g = r.pin();
    g.switch(buf, off)
}

/// Asserts the decision leaves `buf` and `off` untouched.
fn assert_untouched(t: &LabelTable, frame: &str, want: MplsDecision) {
    let (mut b, mut off) = rx(frame);
    let before = b.clone();
    assert_eq!(switch(t, &mut b, &mut off), want, "frame {frame}");
    assert_eq!(off, HEADROOM + 14);
    assert_eq!(b, before);
}

#[test]
fn seed_p_router_swap_100_to_100_ttl_64_63_62() {
    // belgium# mpls local-label add 100 eos via ... out-labels 100 (two P routers in a row)
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::swap(ADJ, &[100])).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(100, true, 64),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    assert_eq!(off, HEADROOM + 14);
    let out = tx(&mut b, off, EtherType::Mpls);
    assert_eq!(
        out,
        hex(&format!("{} 0006413f {}", eth_tx("8847"), ip4(64)))
    );
    // Next P router: 63 -> 62.
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    let out = tx(&mut b, off, EtherType::Mpls);
    assert_eq!(
        out,
        hex(&format!("{} 0006413e {}", eth_tx("8847"), ip4(64)))
    );
}

#[test]
fn seed_explicit_null_last_hop() {
    // belgium# mpls local-label add 33 eos via ... out-labels 0
    let mut p = LabelTable::new();
    p.add(33, true, LabelAction::swap(ADJ, &[0])).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(33, true, 64),
        ip4(64)
    ));
    assert_eq!(
        switch(&p, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    let out = tx(&mut b, off, EtherType::Mpls);
    assert_eq!(
        out,
        hex(&format!("{} 0000013f {}", eth_tx("8847"), ip4(64)))
    );
    // france (egress): label 0 at the bottom -> pop, IPv4 lookup in the explicit-null
    // table (the receiving interface's), label TTL 63 copied into IPv4 with the
    // checksum fixed (uniform).
    let e = LabelTable::new();
    let (mut b, mut off) = rx(&format!("{} {} {}", eth_rx("8847"), "0000013f", ip4(64)));
    assert_eq!(
        switch(&e, &mut b, &mut off),
        MplsDecision::Ip4Lookup {
            table: mpls::RX_TABLE
        }
    );
    assert_eq!(off, HEADROOM + 18);
    assert_eq!(&b[off..], &hex(&ip4(63))[..]);
    assert_eq!(
        MplsDecision::Ip4Lookup { table: 0 }.ethertype(),
        Some(EtherType::Ipv4)
    );
}

#[test]
fn explicit_null_table_and_pipe() {
    let mut e = LabelTable::new();
    e.set_explicit_null(5, TtlMode::pipe()).unwrap();
    assert_eq!(e.explicit_null(), (5, TtlMode::Pipe { ttl: 255 }));
    let (mut b, mut off) = rx(&format!("{} {} {}", eth_rx("8847"), "0000013f", ip4(64)));
    assert_eq!(
        switch(&e, &mut b, &mut off),
        MplsDecision::Ip4Lookup { table: 5 }
    );
    assert_eq!(
        &b[off..],
        &hex(&ip4(64))[..],
        "pipe leaves the IPv4 TTL alone"
    );
}

#[test]
fn seed_php_penultimate_hop() {
    // belgium# mpls local-label add 33 eos via ... out-labels 3
    let mut t = LabelTable::new();
    t.add(33, true, LabelAction::php(ADJ)).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(33, true, 64),
        ip4(64)
    ));
    let d = switch(&t, &mut b, &mut off);
    assert_eq!(d, MplsDecision::Php { adj: ADJ });
    assert_eq!(d.ethertype(), Some(EtherType::Ipv4));
    let out = tx(&mut b, off, EtherType::Ipv4);
    // Leaves as plain IPv4 (0x0800), TTL = label TTL - 1 = 63, checksum fixed.
    assert_eq!(out, hex(&format!("{} {}", eth_tx("0800"), ip4(63))));
}

#[test]
fn php_pipe_keeps_ip_ttl() {
    let mut t = LabelTable::new();
    t.add(
        33,
        true,
        LabelAction::Forward {
            paths: vec![NextHop::new(ADJ, &[])],
            ttl_mode: TtlMode::pipe(),
        },
    )
    .unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(33, true, 9),
        ip4(64)
    ));
    assert_eq!(switch(&t, &mut b, &mut off), MplsDecision::Php { adj: ADJ });
    assert_eq!(&b[off..], &hex(&ip4(64))[..]);
}

#[test]
fn php_non_eos_exposes_next_label() {
    let mut t = LabelTable::new();
    t.add(100, false, LabelAction::php(ADJ)).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(100, false, 10),
        lse(200, true, 255),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    let out = tx(&mut b, off, EtherType::Mpls);
    assert_eq!(
        out,
        hex(&format!(
            "{} {} {}",
            eth_tx("8847"),
            lse(200, true, 9),
            ip4(64)
        ))
    );
}

#[test]
fn seed_pe_egress_pop_and_lookup() {
    // france# mpls local-label add 33 eos via ip4-lookup-in-table 0
    let mut t = LabelTable::new();
    t.add(33, true, LabelAction::ip4_lookup(0)).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(33, true, 63),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip4Lookup { table: 0 }
    );
    assert_eq!(&b[off..], &hex(&ip4(63))[..]);
    // A label TTL of 1 still goes to the IPv4 stage (which answers the expiry).
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(33, true, 1),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip4Lookup { table: 0 }
    );
    assert_eq!(&b[off..], &hex(&ip4(1))[..]);
}

#[test]
fn swap_to_label_stack_uses_headroom() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::swap(ADJ, &[200, 300, 400]))
        .unwrap();
    let (mut b, mut off) = rx(&format!("{} {} {}", eth_rx("8847"), "00064b40", ip4(64)));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    assert_eq!(off, HEADROOM + 14 - 8);
    let out = tx(&mut b, off, EtherType::Mpls);
    // TC 5 copied into every new entry, TTL 63, S only on the last.
    assert_eq!(
        out,
        hex(&format!(
            "{} 000c8a3f 0012ca3f 00190b3f {}",
            eth_tx("8847"),
            ip4(64)
        ))
    );
    // Without headroom: counted drop, nothing written.
    let f = hex(&format!("{} {}", "00064b40", ip4(64)));
    let mut b2 = f.clone();
    let mut o2 = 0;
    assert_eq!(
        switch(&t, &mut b2, &mut o2),
        MplsDecision::Drop(DropReason::NoHeadroom)
    );
    assert_eq!(b2, f);
}

#[test]
fn swap_keeps_inner_labels() {
    let mut t = LabelTable::new();
    t.add(100, false, LabelAction::swap(ADJ, &[101])).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(100, false, 64),
        lse(16, true, 64),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    let out = tx(&mut b, off, EtherType::Mpls);
    assert_eq!(
        out,
        hex(&format!(
            "{} {} {} {}",
            eth_tx("8847"),
            lse(101, false, 63),
            lse(16, true, 64),
            ip4(64)
        ))
    );
}

#[test]
fn pop_then_next_label_same_pass() {
    let mut t = LabelTable::new();
    t.add(
        100,
        false,
        LabelAction::Pop {
            ttl_mode: TtlMode::Uniform,
        },
    )
    .unwrap();
    t.add(200, true, LabelAction::swap(ADJ, &[300])).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(100, false, 20),
        lse(200, true, 255),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    assert_eq!(off, HEADROOM + 18);
    // Uniform: the popped TTL (20) carries down, one decrement for the node.
    assert_eq!(&b[off..off + 4], &hex(&lse(300, true, 19))[..]);
    // Pipe: the exposed label's own TTL is used.
    t.add(
        100,
        false,
        LabelAction::Pop {
            ttl_mode: TtlMode::pipe(),
        },
    )
    .unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(100, false, 20),
        lse(200, true, 255),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    assert_eq!(&b[off..off + 4], &hex(&lse(300, true, 254))[..]);
}

#[test]
fn reserved_label_0_not_bottom_pops_and_continues() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::swap(ADJ, &[100])).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(0, false, 30),
        lse(100, true, 64),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Forward { adj: ADJ }
    );
    assert_eq!(&b[off..off + 4], &hex(&lse(100, true, 29))[..]);
}

#[test]
fn reserved_labels() {
    let t = LabelTable::new();
    let f = |l: u32, bos: bool| format!("{} {} {}", eth_rx("8847"), lse(l, bos, 64), ip4(64));
    // 1 router alert -> punt above the bottom; at the bottom it is illegal
    // (RFC 3032 §2.1): dropped, counted.
    assert_untouched(
        &t,
        &f(1, true),
        MplsDecision::Drop(DropReason::RouterAlertAtBottom),
    );
    assert_untouched(
        &t,
        &format!(
            "{} {} {} {}",
            eth_rx("8847"),
            lse(1, false, 64),
            lse(100, true, 64),
            ip4(64)
        ),
        MplsDecision::Punt(PuntReason::RouterAlert),
    );
    // 2 IPv6 explicit null at the bottom over IPv4: the label says IPv6.
    assert_untouched(&t, &f(2, true), MplsDecision::Drop(DropReason::Ip4UnderIp6));
    // 3 implicit null must never be on the wire.
    assert_untouched(
        &t,
        &f(3, true),
        MplsDecision::Drop(DropReason::ImplicitNullOnWire),
    );
    assert_untouched(
        &t,
        &f(3, false),
        MplsDecision::Drop(DropReason::ImplicitNullOnWire),
    );
    for l in [4, 5, 6, 8, 9, 10, 11, 12] {
        assert_untouched(
            &t,
            &f(l, true),
            MplsDecision::Drop(DropReason::ReservedLabel),
        );
    }
    // 7 ELI at the bottom of stack is malformed.
    assert_untouched(
        &t,
        &f(7, true),
        MplsDecision::Drop(DropReason::BadEntropyLabel),
    );
    assert_untouched(&t, &f(13, true), MplsDecision::Punt(PuntReason::Gal));
    assert_untouched(&t, &f(14, true), MplsDecision::Punt(PuntReason::OamAlert));
    assert_untouched(
        &t,
        &f(15, false),
        MplsDecision::Drop(DropReason::ExtensionLabel),
    );
    // An unknown label.
    assert_untouched(&t, &f(100, true), MplsDecision::Drop(DropReason::NoLabel));
}

#[test]
fn reserved_label_2_not_bottom_pops() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::ip4_lookup(3)).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(2, false, 64),
        lse(100, true, 64),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip4Lookup { table: 3 }
    );
}

#[test]
fn entropy_label_pair_popped() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::ip4_lookup(2)).unwrap();
    // ELI, EL 5555, then 100 at the bottom.
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {} {}",
        eth_rx("8847"),
        lse(7, false, 64),
        lse(5555, false, 0),
        lse(100, true, 64),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip4Lookup { table: 2 }
    );
    assert_eq!(off, HEADROOM + 14 + 12);
    // ELI + EL at the bottom: the IPv4 payload is looked up like explicit null.
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(7, false, 63),
        lse(5555, true, 0),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip4Lookup {
            table: mpls::RX_TABLE
        }
    );
    assert_eq!(&b[off..], &hex(&ip4(63))[..]);
    // ELI without an EL: truncated.
    let (mut b, mut off) = rx(&format!("{} {}", eth_rx("8847"), lse(7, false, 63)));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Drop(DropReason::Truncated)
    );
}

#[test]
fn ttl_zero_and_one() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::swap(ADJ, &[100])).unwrap();
    t.add(101, true, LabelAction::php(ADJ)).unwrap();
    t.add(102, true, LabelAction::ip4_lookup(0)).unwrap();
    for l in [100, 101, 102] {
        assert_untouched(
            &t,
            &format!("{} {} {}", eth_rx("8847"), lse(l, true, 0), ip4(64)),
            MplsDecision::Drop(DropReason::TtlExpired),
        );
    }
    for l in [100, 101] {
        assert_untouched(
            &t,
            &format!("{} {} {}", eth_rx("8847"), lse(l, true, 1), ip4(64)),
            MplsDecision::TtlExpired,
        );
    }
}

#[test]
fn truncated_inputs() {
    let mut t = LabelTable::new();
    t.add(
        100,
        false,
        LabelAction::Pop {
            ttl_mode: TtlMode::Uniform,
        },
    )
    .unwrap();
    t.add(101, true, LabelAction::ip4_lookup(0)).unwrap();
    t.add(102, true, LabelAction::php(ADJ)).unwrap();
    let cases = [
        // 3 bytes of a label stack entry
        format!("{} 000641", eth_rx("8847")),
        // S = 0 and nothing after
        format!("{} {}", eth_rx("8847"), lse(100, false, 64)),
        // pop to IPv4 with 10 bytes of header
        format!(
            "{} {} 45000020123440004011",
            eth_rx("8847"),
            lse(101, true, 64)
        ),
        format!(
            "{} {} 45000020123440004011",
            eth_rx("8847"),
            lse(102, true, 64)
        ),
    ];
    for c in &cases {
        assert_untouched(&t, c, MplsDecision::Drop(DropReason::Truncated));
    }
    let (mut b, mut off) = rx(&eth_rx("8847"));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Drop(DropReason::Truncated)
    );
    // Offset past the end.
    let mut off = 10_000;
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Drop(DropReason::Truncated)
    );
}

#[test]
fn pop_to_non_ipv4_payload() {
    let mut t = LabelTable::new();
    t.add(101, true, LabelAction::ip4_lookup(0)).unwrap();
    let ip6 = "60000000 00081140 ".to_string() + &"00".repeat(32);
    assert_untouched(
        &t,
        &format!("{} {} {}", eth_rx("8847"), lse(101, true, 64), ip6),
        MplsDecision::Drop(DropReason::Ip6UnderIp4),
    );
    assert_untouched(
        &t,
        &format!(
            "{} {} {}",
            eth_rx("8847"),
            lse(101, true, 64),
            "00".repeat(40)
        ),
        MplsDecision::Drop(DropReason::NotIp),
    );
}

#[test]
fn stack_deeper_than_limit() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::ip4_lookup(0)).unwrap();
    // 15 x (0, non-eos) + 100 eos: 16 entries, the limit: fine.
    let ok = format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(0, false, 64).repeat(15),
        lse(100, true, 64),
        ip4(64)
    );
    let (mut b, mut off) = rx(&ok);
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip4Lookup { table: 0 }
    );
    // One more: too deep.
    let deep = format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(0, false, 64).repeat(16),
        lse(100, true, 64),
        ip4(64)
    );
    assert_untouched(&t, &deep, MplsDecision::Drop(DropReason::StackTooDeep));
}

#[test]
fn configured_drop_and_punt() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::Drop).unwrap();
    t.add(101, true, LabelAction::Punt).unwrap();
    assert_untouched(
        &t,
        &format!("{} {} {}", eth_rx("8847"), lse(100, true, 64), ip4(64)),
        MplsDecision::Drop(DropReason::Blackhole),
    );
    assert_untouched(
        &t,
        &format!("{} {} {}", eth_rx("8847"), lse(101, true, 64), ip4(64)),
        MplsDecision::Punt(PuntReason::Configured),
    );
    t.remove(100, true).unwrap();
    assert_untouched(
        &t,
        &format!("{} {} {}", eth_rx("8847"), lse(100, true, 64), ip4(64)),
        MplsDecision::Drop(DropReason::NoLabel),
    );
}

fn udp_frame(label: u32, sport: u16) -> Vec<u8> {
    let mut f = hex(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(label, true, 64),
        ip4(64)
    ));
    let l3 = 14 + 4;
    f[l3 + 20..l3 + 22].copy_from_slice(&sport.to_be_bytes());
    let mut b = vec![0u8; HEADROOM];
    b.extend_from_slice(&f);
    b
}

#[test]
fn ecmp_spreads_flows_and_keeps_them() {
    let mut t = LabelTable::new();
    t.add(
        100,
        true,
        LabelAction::Forward {
            paths: vec![
                NextHop::new(1, &[201]),
                NextHop::new(2, &[202]),
                NextHop::new(3, &[3]),
            ],
            ttl_mode: TtlMode::Uniform,
        },
    )
    .unwrap();
    let r = t.reader();
    let g = r.pin();
    let mut seen = [0usize; 4];
    for sport in 0..300u16 {
        let mut b = udp_frame(100, sport);
        let mut off = HEADROOM + 14;
        let d = g.switch(&mut b, &mut off);
        let adj = match d {
            MplsDecision::Forward { adj } => {
                let w = u32::from_be_bytes(b[off..off + 4].try_into().unwrap());
                assert_eq!(w >> 12, 200 + adj, "path {adj} swaps to its own label");
                adj
            }
            MplsDecision::Php { adj } => {
                assert_eq!(adj, 3);
                adj
            }
            other => panic!("{other:?}"),
        };
        seen[adj as usize] += 1;
        // Same flow, same path.
        let mut b2 = udp_frame(100, sport);
        let mut off2 = HEADROOM + 14;
        let d2 = g.switch(&mut b2, &mut off2);
        assert_eq!(d, d2);
    }
    for (adj, &n) in seen.iter().enumerate().skip(1) {
        assert!(n > 50, "path {adj} got {n} of 300 flows: {seen:?}");
    }
}

#[test]
fn readers_see_whole_updates_while_writer_churns() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut t = LabelTable::with_capacity(256);
    t.add(100, true, LabelAction::swap(1, &[201])).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..2 {
        let r = t.reader();
        let stop = Arc::clone(&stop);
        workers.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let g = r.pin();
                for _ in 0..64 {
                    let mut b = udp_frame(100, 1);
                    let mut off = HEADROOM + 14;
                    match g.switch(&mut b, &mut off) {
                        MplsDecision::Forward { adj } => {
                            let w = u32::from_be_bytes(b[off..off + 4].try_into().unwrap());
                            // adj and label always come from the same action.
                            assert_eq!(w >> 12, 200 + adj);
                        }
                        MplsDecision::Drop(DropReason::NoLabel) => {}
                        other => panic!("{other:?}"),
                    }
                    n += 1;
                }
            }
            n
        }));
    }
    for i in 0..20_000u32 {
        let adj = 1 + i % 3;
        if i % 7 == 0 {
            let _ = t.remove(100, true);
        }
        // A reader the scheduler parks while pinned (three threads on two cores
        // here) holds reclamation back; the arena may then be full for a moment:
        // a writer retries, as the control plane would. It must get through.
        let t0 = std::time::Instant::now();
        loop {
            match t.add(100, true, LabelAction::swap(adj, &[200 + adj])) {
                Ok(()) => break,
                Err(e) => {
                    assert!(t0.elapsed().as_secs() < 10, "update {i}: {e:?}");
                    std::thread::yield_now();
                    t.reclaim();
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        assert!(w.join().unwrap() > 0);
    }
    // 20k updates through a 256-slot arena: reclamation kept up (every update got
    // through above); with the readers gone, everything but the live entry comes
    // back (freed slots are taken back lazily, so take them now).
    t.reclaim();
    assert!(t.slots_in_use() < 256, "{} slots in use", t.slots_in_use());
}

/// IPv6/UDP 2001:db8::1 -> 2001:db8:1::1, 8 bytes of payload, hop limit `hl`.
fn ip6(hl: u8) -> String {
    format!(
        "60000000 0008 11 {hl:02x} 20010db8000000000000000000000001 \
         20010db8000100000000000000000001 04000400 0008 0000"
    )
}

#[test]
fn ip6_explicit_null_at_bottom_pops_into_the_rx_table() {
    //= RFC 3032 §2.1: label 2 at the bottom of the stack: pop, the payload is IPv6.
    let t = LabelTable::new();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(2, true, 40),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip6Lookup {
            table: mpls::RX_TABLE
        }
    );
    assert_eq!(off, HEADROOM + 18);
    // Uniform: the label TTL becomes the hop limit.
    assert_eq!(&b[off..], &hex(&ip6(40))[..]);
    assert_eq!(
        MplsDecision::Ip6Lookup { table: 0 }.ethertype(),
        Some(EtherType::Ipv6)
    );
    // Label 2 above a 6PE label: popped, then the label below decides.
    let mut t = LabelTable::new();
    t.add(200, true, LabelAction::ip6_lookup(9)).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(2, false, 30),
        lse(200, true, 30),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip6Lookup { table: 9 }
    );
    assert_eq!(off, HEADROOM + 22);
    assert_eq!(&b[off..], &hex(&ip6(30))[..]);
}

#[test]
fn ip6_explicit_null_follows_the_explicit_null_table_and_pipe() {
    let mut t = LabelTable::new();
    t.set_explicit_null(5, TtlMode::pipe()).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(2, true, 40),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip6Lookup { table: 5 }
    );
    // Pipe: the hop limit is left alone.
    assert_eq!(&b[off..], &hex(&ip6(64))[..]);
}

#[test]
fn ip6_lookup_entry_uniform_and_pipe() {
    let mut t = LabelTable::new();
    t.add(300, true, LabelAction::ip6_lookup(3)).unwrap();
    t.add(
        301,
        true,
        LabelAction::Ip6Lookup {
            table: 4,
            ttl_mode: TtlMode::pipe(),
        },
    )
    .unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(300, true, 9),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip6Lookup { table: 3 }
    );
    assert_eq!(&b[off..], &hex(&ip6(9))[..]);
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(301, true, 9),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip6Lookup { table: 4 }
    );
    assert_eq!(&b[off..], &hex(&ip6(64))[..]);
    // A received TTL 0 is dropped, as for IPv4.
    assert_untouched(
        &t,
        &format!("{} {} {}", eth_rx("8847"), lse(300, true, 0), ip6(64)),
        MplsDecision::Drop(DropReason::TtlExpired),
    );
    // The fast path's split agrees.
    let r = t.reader();
    let g = r.pin();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(300, true, 9),
        ip6(64)
    ));
    let w = u32::from_be_bytes(b[off..off + 4].try_into().unwrap());
    let top = g.top(w);
    assert!(top.pops_into_ip6(w) && !top.pops_into_ip4(w));
    assert_eq!(top.lookup_table(), 3);
    g.pop_ip6(&mut b, &mut off, w, top).unwrap();
    assert_eq!(&b[off..], &hex(&ip6(9))[..]);
}

#[test]
fn ip_lookup_entry_reads_the_version_nibble() {
    let mut t = LabelTable::new();
    t.add(400, true, LabelAction::ip_lookup(7)).unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(400, true, 9),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip6Lookup { table: 7 }
    );
    assert_eq!(&b[off..], &hex(&ip6(9))[..]);
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(400, true, 9),
        ip4(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip4Lookup { table: 7 }
    );
    assert_eq!(&b[off..], &hex(&ip4(9))[..]);
    // A version that is neither: a named drop.
    for v in ["00", "50", "f0"] {
        assert_untouched(
            &t,
            &format!(
                "{} {} {v}{}",
                eth_rx("8847"),
                lse(400, true, 9),
                "00".repeat(39)
            ),
            MplsDecision::Drop(DropReason::NotIp),
        );
    }
    // Nothing under the label.
    assert_untouched(
        &t,
        &format!("{} {}", eth_rx("8847"), lse(400, true, 9)),
        MplsDecision::Drop(DropReason::Truncated),
    );
    // An IPv6 header cut short.
    assert_untouched(
        &t,
        &format!("{} {} 6000000000", eth_rx("8847"), lse(400, true, 9)),
        MplsDecision::Drop(DropReason::Truncated),
    );
}

#[test]
fn family_mismatches_are_named_drops() {
    let mut t = LabelTable::new();
    t.add(500, true, LabelAction::ip4_lookup(0)).unwrap();
    t.add(501, true, LabelAction::ip6_lookup(0)).unwrap();
    let cases = [
        // IPv6 under an entry that says IPv4, and under label 0.
        (lse(500, true, 64), ip6(64), DropReason::Ip6UnderIp4),
        (lse(0, true, 64), ip6(64), DropReason::Ip6UnderIp4),
        // IPv4 under an entry that says IPv6, and under label 2.
        (lse(501, true, 64), ip4(64), DropReason::Ip4UnderIp6),
        (lse(2, true, 64), ip4(64), DropReason::Ip4UnderIp6),
        // Neither version under either.
        (lse(501, true, 64), "00".repeat(40), DropReason::NotIp),
        (lse(2, true, 64), "50".repeat(40), DropReason::NotIp),
    ];
    for (l, payload, r) in cases {
        assert_untouched(
            &t,
            &format!("{} {l} {payload}", eth_rx("8847")),
            MplsDecision::Drop(r),
        );
    }
    // Label 2 not at the bottom with IPv4 under it: the IPv4 header is read as
    // the next label (0x45000 here, S clear), which has no entry.
    assert_untouched(
        &t,
        &format!("{} {} {}", eth_rx("8847"), lse(2, false, 64), ip4(64)),
        MplsDecision::Drop(DropReason::NoLabel),
    );
}

#[test]
fn php_of_an_ip6_payload() {
    let mut t = LabelTable::new();
    t.add(600, true, LabelAction::php(ADJ)).unwrap();
    t.add(
        601,
        true,
        LabelAction::Forward {
            paths: vec![NextHop::new(ADJ, &[3])],
            ttl_mode: TtlMode::pipe(),
        },
    )
    .unwrap();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(600, true, 20),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Php6 { adj: ADJ }
    );
    assert_eq!(off, HEADROOM + 18);
    let out = tx(&mut b, off, EtherType::Ipv6);
    // Uniform: the hop limit takes the label TTL less one.
    assert_eq!(out, hex(&format!("{} {}", eth_tx("86dd"), ip6(19))));
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(601, true, 20),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Php6 { adj: ADJ }
    );
    assert_eq!(&b[off..], &hex(&ip6(64))[..]);
    // The transit shortcut leaves an IPv6 payload to `switch_top`.
    let r = t.reader();
    let g = r.pin();
    let (mut b, mut off) = rx(&format!(
        "{} {} {}",
        eth_rx("8847"),
        lse(600, true, 20),
        ip6(64)
    ));
    let before = b.clone();
    let w = u32::from_be_bytes(b[off..off + 4].try_into().unwrap());
    assert_eq!(g.switch_one_to(&mut b, &mut off, w, g.top(w), ADJ), None);
    assert_eq!((b, off), (before, HEADROOM + 14));
    // A label TTL of 1 expires, whatever the payload.
    assert_untouched(
        &t,
        &format!("{} {} {}", eth_rx("8847"), lse(600, true, 1), ip6(64)),
        MplsDecision::TtlExpired,
    );
}

#[test]
fn entropy_pair_at_the_bottom_over_ip6() {
    //= RFC 6790 §4.2: the ELI and EL at the bottom: the payload is looked up as
    //= the label above carried it, here by its version.
    let t = LabelTable::new();
    let (mut b, mut off) = rx(&format!(
        "{} {} {} {}",
        eth_rx("8847"),
        lse(7, false, 33),
        lse(0x12345, true, 0),
        ip6(64)
    ));
    assert_eq!(
        switch(&t, &mut b, &mut off),
        MplsDecision::Ip6Lookup {
            table: mpls::RX_TABLE
        }
    );
    assert_eq!(off, HEADROOM + 22);
    assert_eq!(&b[off..], &hex(&ip6(33))[..]);
}

#[test]
fn lookups_are_eos_only() {
    for a in [LabelAction::ip6_lookup(1), LabelAction::ip_lookup(1)] {
        assert_eq!(
            mpls::validate_action(false, &a),
            Err(mpls::ConfigError::LookupNotEos)
        );
        assert_eq!(mpls::validate_action(true, &a), Ok(()));
    }
}

/// Ones' complement sum over the IPv6 pseudo-header (next header 58) and `m`.
fn icmp6_sum(src: [u8; 16], dst: [u8; 16], m: &[u8]) -> u16 {
    let mut s: u32 = 0;
    let mut add = |b: &[u8]| {
        for c in b.chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
    };
    add(&src);
    add(&dst);
    add(&(m.len() as u32).to_be_bytes());
    add(&[0, 0, 0, 58]);
    add(m);
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[test]
fn icmp6_time_exceeded_with_the_label_stack() {
    use mpls::icmp::{IcmpError, build_time_exceeded6, time_exceeded6_len};
    let me: std::net::Ipv6Addr = "2001:db8:ff::1".parse().unwrap();
    let stack = format!("{}{}", lse(100, false, 1), lse(600, true, 7));
    let rx = hex(&format!("{stack}{}", ip6(9)));
    let mut out = [0u8; 400];
    let (len, depth) = build_time_exceeded6(&rx, me, &mut out).unwrap();
    assert_eq!((len, depth), (time_exceeded6_len(2), 2));
    assert_eq!(len, 40 + 8 + 128 + 8 + 8);
    let o = &out[..len];
    // IPv6: version 6, payload length, ICMPv6, hop limit 64, from us to the source.
    assert_eq!(&o[..4], &[0x60, 0, 0, 0]);
    assert_eq!(u16::from_be_bytes([o[4], o[5]]) as usize, len - 40);
    assert_eq!((o[6], o[7]), (58, 64));
    assert_eq!(&o[8..24], &me.octets());
    assert_eq!(&o[24..40], &hex("20010db8000000000000000000000001")[..]);
    // Type 3 code 0, length 16 (x 8 bytes), the quote padded to 128 bytes.
    let m = &o[40..];
    assert_eq!((m[0], m[1]), (3, 0));
    assert_eq!(&m[4..8], &[16, 0, 0, 0]);
    let orig = hex(&ip6(9));
    assert_eq!(&m[8..8 + orig.len()], &orig[..]);
    assert!(m[8 + orig.len()..136].iter().all(|&b| b == 0));
    // RFC 4884 extension: version 2, checksum, object class 1 C-Type 1.
    assert_eq!(m[136], 0x20);
    let e = wire::IcmpExtHeader::new_checked(&m[136..]).unwrap();
    assert!(e.verify_checksum());
    assert_eq!(&m[140..144], &[0, 12, 1, 1]);
    assert_eq!(&m[144..], &hex(&stack)[..]);
    let mut z = m.to_vec();
    z[2..4].fill(0);
    let src = me.octets();
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&o[24..40]);
    assert_eq!(u16::from_be_bytes([m[2], m[3]]), icmp6_sum(src, dst, &z));
    // Not answered: IPv4 under the stack, a cut header, an ICMPv6 error, a
    // multicast source.
    let under = |payload: &str| hex(&format!("{}{payload}", lse(100, true, 1)));
    assert_eq!(
        build_time_exceeded6(&under(&ip4(9)), me, &mut out),
        Err(IcmpError::NotIpv6)
    );
    assert_eq!(
        build_time_exceeded6(&under("6000000000"), me, &mut out),
        Err(IcmpError::Truncated)
    );
    let mut err6 = hex(&ip6(9));
    err6[6] = 58;
    err6[40] = 1;
    let err6 = hex(&lse(100, true, 1))
        .into_iter()
        .chain(err6)
        .collect::<Vec<u8>>();
    assert_eq!(
        build_time_exceeded6(&err6, me, &mut out),
        Err(IcmpError::NotAnswerable)
    );
    let mut mc = rx.clone();
    mc[8 + 8] = 0xff;
    assert_eq!(
        build_time_exceeded6(&mc, me, &mut out),
        Err(IcmpError::NotAnswerable)
    );
    assert_eq!(
        build_time_exceeded6(&rx, me, &mut out[..100]),
        Err(IcmpError::BufferTooSmall)
    );
}

#[test]
fn icmp6_time_exceeded_goes_along_the_lsp() {
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::swap(ADJ, &[200])).unwrap();
    t.add(101, true, LabelAction::php(ADJ)).unwrap();
    let r = t.reader();
    let g = r.pin();
    let me: std::net::Ipv6Addr = "2001:db8:ff::1".parse().unwrap();
    let rx = hex(&format!("{}{}", lse(100, true, 1), ip6(9)));
    let mut out = [0u8; 600];
    let (off, d) = g.ttl_exceeded_reply6(&rx, me, &mut out, 128).unwrap();
    assert_eq!(d, MplsDecision::Forward { adj: ADJ });
    assert_eq!(off, 124);
    assert_eq!(&out[124..128], &hex(&lse(200, true, 63))[..]);
    assert_eq!(out[128] >> 4, 6);
    let rx = hex(&format!("{}{}", lse(101, true, 1), ip6(9)));
    let (off, d) = g.ttl_exceeded_reply6(&rx, me, &mut out, 128).unwrap();
    assert_eq!(d, MplsDecision::Php6 { adj: ADJ });
    assert_eq!(off, 128);
    // (uniform: the reply's label TTL less one)
    assert_eq!(out[128 + 7], 63);
}

#[test]
fn icmp6_packet_too_big() {
    use mpls::icmp::build_packet_too_big6;
    let me: std::net::Ipv6Addr = "2001:db8:ff::1".parse().unwrap();
    let mut big = hex(&ip6(9));
    big.resize(1600, 0xab);
    big[4..6].copy_from_slice(&(1600u16 - 40).to_be_bytes());
    let mut out = [0u8; 2000];
    let n = build_packet_too_big6(&big, me, 1496, &mut out).unwrap();
    // As much as fits in the IPv6 minimum MTU.
    assert_eq!(n, 1280);
    let m = &out[40..n];
    assert_eq!((m[0], m[1]), (2, 0));
    assert_eq!(u32::from_be_bytes([m[4], m[5], m[6], m[7]]), 1496);
    assert_eq!(&m[8..], &big[..n - 48]);
    let mut z = m.to_vec();
    z[2..4].fill(0);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&out[24..40]);
    assert_eq!(
        u16::from_be_bytes([m[2], m[3]]),
        icmp6_sum(me.octets(), dst, &z)
    );
    // A link smaller than that: the reply fits it.
    let n = build_packet_too_big6(&big, me, 1100, &mut out).unwrap();
    assert_eq!(n, 1100);
}

#[test]
fn ip6_payload_longer_than_the_frame_is_cut_short() {
    let mut t = LabelTable::new();
    t.add(600, true, LabelAction::php(ADJ)).unwrap();
    // Payload length 0x38 with 8 bytes behind the header.
    let short = ip6(64).replacen("0008 11", "0038 11", 1);
    for l in [600, 2] {
        assert_untouched(
            &t,
            &format!("{} {} {short}", eth_rx("8847"), lse(l, true, 20)),
            MplsDecision::Drop(DropReason::Truncated),
        );
    }
}
