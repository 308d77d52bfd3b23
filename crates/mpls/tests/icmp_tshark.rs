//! ICMP time exceeded with the RFC 4950 label stack: built from a packet whose label
//! TTL ran out, checked field by field, written to a pcap and decoded by tshark.
//!
//! tshark is required (Debian package `tshark`, installed by `scripts/setup.sh`);
//! without it the test fails and says so.

mod common;

use common::*;
use mpls::icmp::{REPLY_TTL, time_exceeded_len};
use mpls::{IcmpError, LabelAction, LabelTable, MplsDecision, build_time_exceeded};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use wire::icmpv4::ext;
use wire::{
    IcmpExtHeader, IcmpExtObject, Icmpv4Message, Icmpv4Packet, IpProtocol, Ipv4Packet, Ipv4Repr,
    LabelStack,
};

const ROUTER: Ipv4Addr = Ipv4Addr::new(192, 168, 13, 5);
const ADJ: u32 = 7;

fn lse(label: u32, bos: bool, ttl: u8) -> String {
    format!(
        "{:08x}",
        (label << 12) | (u32::from(bos) << 8) | u32::from(ttl)
    )
}

/// Checks an ICMP/IPv4 packet built by `build_time_exceeded` about `stack` + `orig`.
fn check_icmp(ip: &[u8], stack: &[u8], orig: &[u8]) {
    let p = Ipv4Packet::new_checked(ip).unwrap();
    let r = Ipv4Repr::parse(&p).unwrap();
    assert_eq!(r.src_addr, ROUTER);
    assert_eq!(r.dst_addr, Ipv4Addr::new(16, 0, 0, 1));
    assert_eq!(r.protocol, IpProtocol::Icmp);
    assert_eq!(r.ttl, REPLY_TTL);
    let icmp = Icmpv4Packet::new_checked(p.payload()).unwrap();
    assert!(icmp.verify_checksum());
    assert_eq!(icmp.msg_type(), Icmpv4Message::TimeExceeded);
    assert_eq!(icmp.msg_code(), 0);
    assert_eq!(icmp.rfc4884_len_words(), 32);
    let q = icmp.original_datagram();
    assert_eq!(q.len(), 128);
    assert_eq!(&q[..orig.len()], orig);
    assert!(q[orig.len()..].iter().all(|&b| b == 0));
    let e = IcmpExtHeader::new_checked(icmp.extension().unwrap()).unwrap();
    assert_eq!(e.version(), 2);
    assert_ne!(e.checksum(), 0);
    assert!(e.verify_checksum());
    let o = IcmpExtObject::new_checked(e.objects()).unwrap();
    assert_eq!(o.class_num(), ext::CLASS_MPLS_LABEL_STACK);
    assert_eq!(o.c_type(), ext::CTYPE_INCOMING_MPLS_STACK);
    assert_eq!(o.payload(), stack);
}

#[test]
fn time_exceeded_fields() {
    let rx = hex(&format!(
        "{} {} {}",
        lse(100, false, 1),
        lse(200, true, 7),
        ip4(64)
    ));
    let mut out = [0u8; 256];
    let (len, depth) = build_time_exceeded(&rx, ROUTER, 0x4242, &mut out).unwrap();
    assert_eq!(depth, 2);
    assert_eq!(len, time_exceeded_len(2));
    assert_eq!(len, 20 + 8 + 128 + 4 + 4 + 8);
    check_icmp(&out[..len], &rx[..8], &rx[8..]);
}

#[test]
fn time_exceeded_refusals() {
    let mut out = [0u8; 256];
    let ok = hex(&format!("{} {}", lse(100, true, 1), ip4(64)));
    assert_eq!(
        build_time_exceeded(&ok, ROUTER, 0, &mut out[..100]),
        Err(IcmpError::BufferTooSmall)
    );
    assert_eq!(
        build_time_exceeded(&ok[..20], ROUTER, 0, &mut out),
        Err(IcmpError::Truncated)
    );
    assert_eq!(
        build_time_exceeded(&ok[..2], ROUTER, 0, &mut out),
        Err(IcmpError::Truncated)
    );
    let deep = hex(&format!(
        "{}{} {}",
        lse(16, false, 1).repeat(16),
        lse(16, true, 1),
        ip4(64)
    ));
    assert_eq!(
        build_time_exceeded(&deep, ROUTER, 0, &mut out),
        Err(IcmpError::StackTooDeep)
    );
    let mut v6 = ok.clone();
    v6[4] = 0x60;
    assert_eq!(
        build_time_exceeded(&v6, ROUTER, 0, &mut out),
        Err(IcmpError::NotIpv4)
    );
    // An ICMP error (time exceeded, type 11) inside: never answered.
    let mut icmp_err = ok.clone();
    icmp_err[4 + 9] = 1;
    icmp_err[4 + 20] = 11;
    assert_eq!(
        build_time_exceeded(&icmp_err, ROUTER, 0, &mut out),
        Err(IcmpError::NotAnswerable)
    );
    // A non-first fragment.
    let mut frag = ok.clone();
    frag[4 + 7] = 0x10;
    assert_eq!(
        build_time_exceeded(&frag, ROUTER, 0, &mut out),
        Err(IcmpError::NotAnswerable)
    );
}

/// Writes Ethernet frames as a classic pcap file (LINKTYPE_ETHERNET).
fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes()); // magic, microseconds
    f.extend_from_slice(&2u16.to_le_bytes()); // version 2.4
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&0i32.to_le_bytes()); // thiszone
    f.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
    f.extend_from_slice(&65535u32.to_le_bytes()); // snaplen
    f.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    for (i, fr) in frames.iter().enumerate() {
        f.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(fr.len() as u32).to_le_bytes());
        f.extend_from_slice(&(fr.len() as u32).to_le_bytes());
        f.extend_from_slice(fr);
    }
    std::fs::write(path, f).unwrap();
}

fn tshark(path: &Path) -> String {
    let out = Command::new("tshark")
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-V",
            "-r",
        ])
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "tshark is required for this test but could not be run ({e}); \
             install it with scripts/setup.sh (Debian package tshark)"
            )
        });
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn time_exceeded_in_lsp_decoded_by_tshark() {
    // P router: 100 (non-eos) swapped to 101, 100 (eos) swapped to 100.
    let mut t = LabelTable::new();
    t.add(100, true, LabelAction::swap(ADJ, &[100])).unwrap();
    t.add(100, false, LabelAction::swap(ADJ, &[101])).unwrap();
    let r = t.reader();
    let g = r.pin();
    let mut frames = Vec::new();
    for stack in [
        lse(100, true, 1),
        format!(
            "{}{}{}",
            lse(100, false, 1),
            lse(16, false, 5),
            lse(200, true, 9)
        ),
    ] {
        let (mut b, mut off) = rx(&format!("{} {} {}", eth_rx("8847"), stack, ip4(64)));
        assert_eq!(g.switch(&mut b, &mut off), MplsDecision::TtlExpired);
        let depth = stack.len() / 8;
        let mut out = vec![0u8; 512];
        let (reply_off, d) = g
            .ttl_exceeded_reply(&b[off..], ROUTER, 0x1001, &mut out, 128)
            .unwrap();
        // Sent along the LSP: same next hop, swapped like the original would be.
        assert_eq!(d, MplsDecision::Forward { adj: ADJ });
        assert_eq!(reply_off, 128 - 4 * depth);
        let st = LabelStack::new_checked(&out[reply_off..]).unwrap();
        assert_eq!(st.depth(), depth);
        let top = st.entry(0).unwrap();
        assert_eq!(top.label.value(), if depth == 1 { 100 } else { 101 });
        assert_eq!(top.ttl, REPLY_TTL - 1);
        let ip_len = time_exceeded_len(depth);
        let ip = &out[128..128 + ip_len];
        check_icmp(ip, &b[off..off + 4 * depth], &hex(&ip4(64)));
        // The labelled reply as it leaves, and the bare ICMP (as the egress routes it).
        let (mut fb, _) = rx(&eth_rx("8847"));
        fb.truncate(HEADROOM);
        fb.extend_from_slice(&out[reply_off - 14..128 + ip_len]);
        frames.push(tx(&mut fb, HEADROOM + 14, wire::EtherType::Mpls));
        let mut bare = hex(&eth_tx("0800"));
        bare.extend_from_slice(ip);
        frames.push(bare);
    }
    let path: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpls_rfc4950.pcap");
    write_pcap(&path, &frames);
    let text = tshark(&path);
    for needle in [
        "Time-to-live exceeded",
        "ICMP Multi-Part Extensions",
        "MPLS Stack Entry",
        "Label: 100",
        "Label: 16",
        "Label: 200",
        "Checksum Status: Good",
        "Header Checksum: 0x8bde [correct]",
        "MultiProtocol Label Switching Header",
    ] {
        assert!(
            text.contains(needle),
            "tshark output lacks {needle:?}:\n{text}"
        );
    }
    for bad in [
        "Malformed",
        "Bad checksum",
        "[incorrect",
        "Expert Info (Warning",
        "Expert Info (Error",
        "Bad]",
    ] {
        assert!(!text.contains(bad), "tshark reports {bad:?}:\n{text}");
    }
}

/// The ICMPv6 twin: a P router's time exceeded about a 6PE packet (IPv6 under
/// the LSP's label and the 6PE label), along the LSP and bare, decoded by
/// tshark with its checksums checked.
#[test]
fn time_exceeded6_in_lsp_decoded_by_tshark() {
    let mut t = LabelTable::new();
    t.add(100, false, LabelAction::swap(ADJ, &[101])).unwrap();
    let r = t.reader();
    let g = r.pin();
    let me: std::net::Ipv6Addr = "2001:db8:ff::5".parse().unwrap();
    let ip6 = "6000000000081140 20010db8000000000000000000000001 \
               20010db8000100000000000000000001 0400829a 0008 0000";
    let stack = format!("{}{}", lse(100, false, 1), lse(600, true, 9));
    let (mut b, mut off) = rx(&format!("{} {stack} {ip6}", eth_rx("8847")));
    assert_eq!(g.switch(&mut b, &mut off), MplsDecision::TtlExpired);
    let mut out = vec![0u8; 512];
    let (reply_off, d) = g.ttl_exceeded_reply6(&b[off..], me, &mut out, 128).unwrap();
    assert_eq!(d, MplsDecision::Forward { adj: ADJ });
    assert_eq!(reply_off, 120);
    let ip_len = mpls::icmp::time_exceeded6_len(2);
    let (mut fb, _) = rx(&eth_rx("8847"));
    fb.truncate(HEADROOM);
    fb.extend_from_slice(&out[reply_off - 14..128 + ip_len]);
    let mut frames = vec![tx(&mut fb, HEADROOM + 14, wire::EtherType::Mpls)];
    let mut bare = hex(&eth_tx("86dd"));
    bare.extend_from_slice(&out[128..128 + ip_len]);
    frames.push(bare);
    let path: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpls_rfc4950_v6.pcap");
    write_pcap(&path, &frames);
    let text = tshark(&path);
    for needle in [
        "Time Exceeded",
        "hop limit exceeded in transit",
        "ICMP Multi-Part Extensions",
        "MPLS Stack Entry",
        "Label: 100",
        "Label: 600",
        "Label: 101",
        "[Checksum Status: Good]",
        "2001:db8:ff::5",
    ] {
        assert!(
            text.contains(needle),
            "tshark output lacks {needle:?}:\n{text}"
        );
    }
    for bad in [
        "Malformed",
        "Bad checksum",
        "[incorrect",
        "Expert Info (Warning",
        "Expert Info (Error",
        "Bad]",
    ] {
        assert!(!text.contains(bad), "tshark reports {bad:?}:\n{text}");
    }
}
