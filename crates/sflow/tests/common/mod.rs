//! Helpers shared by the integration tests: test frames, a small "pipeline" that
//! drives a worker's sampler, a pcap writer and the tshark runner.
#![allow(dead_code, unreachable_pub)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

use sflow::{Direction, Interface, PacketInfo, Picks, WorkerSampler};

/// A frame: Ethernet, then `labels` (RFC 3032 words, S set on the last by the
/// caller), then IPv4/UDP with `payload_len` bytes of payload.
pub fn frame(labels: &[u32], src: Ipv4Addr, dst: Ipv4Addr, payload_len: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02]); // dst MAC
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01]); // src MAC
    let et: u16 = if labels.is_empty() { 0x0800 } else { 0x8847 };
    f.extend_from_slice(&et.to_be_bytes());
    for l in labels {
        f.extend_from_slice(&l.to_be_bytes());
    }
    f.extend_from_slice(&ipv4_udp(src, dst, 1024, 4000, &vec![0xab; payload_len]));
    f
}

/// An untagged Ethernet frame with an IPv6/UDP packet (UDP checksum 0: not
/// checked by any reader here) of `payload_len` bytes of payload.
pub fn frame6(src: Ipv6Addr, dst: Ipv6Addr, payload_len: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x86, 0xdd]);
    let plen = (8 + payload_len) as u16;
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&plen.to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&1024u16.to_be_bytes());
    f.extend_from_slice(&4000u16.to_be_bytes());
    f.extend_from_slice(&plen.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend(std::iter::repeat_n(0xab, payload_len));
    f
}

/// An IPv4 header (checksum filled in) and a UDP header (checksum 0) around
/// `payload`.
pub fn ipv4_udp(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let total = 20 + 8 + payload.len();
    let mut p = vec![0u8; 20];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&1u16.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    let c = wire::checksum::checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

/// An RFC 3032 label stack entry.
pub const fn lse(label: u32, tc: u32, s: bool, ttl: u32) -> u32 {
    label << 12 | tc << 9 | (s as u32) << 8 | ttl
}

/// One packet of a test vector: its frame and what the forwarding decision said.
#[derive(Debug, Clone)]
pub struct TestPacket {
    pub frame: Vec<u8>,
    pub rx_if: u32,
    pub tx_if: u32,
    pub next_hop: Option<IpAddr>,
    pub in_labels: Vec<u32>,
    pub out_labels: Vec<u32>,
}

impl TestPacket {
    pub fn info(&self) -> PacketInfo<'_> {
        PacketInfo {
            frame: &self.frame,
            frame_len: self.frame.len() as u32,
            input: Interface::Index(self.rx_if),
            output: Interface::Index(self.tx_if),
            next_hop: self.next_hop,
            src_mask_len: 0,
            dst_mask_len: 24,
            in_labels: &self.in_labels,
            out_labels: &self.out_labels,
            ..PacketInfo::default()
        }
    }
}

/// What a pipeline worker does per vector: refresh, select rx per run of one input
/// interface and tx over the mixed outputs, submit every pick. Returns the picks
/// submitted and how many were queued.
pub fn run_vector(s: &mut WorkerSampler, picks: &mut Picks, pkts: &[TestPacket]) -> (usize, usize) {
    s.refresh();
    let n = pkts.len();
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pkts[j].rx_if == pkts[i].rx_if {
            j += 1;
        }
        s.select_run(Direction::Rx, pkts[i].rx_if, i, j - i, picks);
        i = j;
    }
    s.select_burst(Direction::Tx, n, |i| pkts[i].tx_if, picks);
    let mut queued = 0;
    for p in picks.as_slice() {
        if s.submit(p, &pkts[p.index as usize].info()) {
            queued += 1;
        }
    }
    let taken = picks.len();
    picks.clear();
    (taken, queued)
}

/// Writes a pcap (Ethernet link type) with each payload in an Ethernet/IPv4/UDP
/// packet from 192.0.2.1:40000 to 192.0.2.2:`port`.
pub fn write_pcap(path: &Path, port: u16, payloads: &[Vec<u8>]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&65_535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, p) in payloads.iter().enumerate() {
        let mut pkt = Vec::new();
        pkt.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00]);
        pkt.extend_from_slice(&ipv4_udp(
            Ipv4Addr::new(192, 0, 2, 1),
            Ipv4Addr::new(192, 0, 2, 2),
            40_000,
            port,
            p,
        ));
        out.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        out.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        out.extend_from_slice(&pkt);
    }
    std::fs::write(path, out).expect("write pcap");
}

/// A scratch file path unique to this test process.
pub fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sflow-test-{}-{name}", std::process::id()))
}

/// Path of tshark; fails the test with a clear message when it is missing.
pub fn tshark() -> PathBuf {
    let p = PathBuf::from("/usr/bin/tshark");
    assert!(
        p.exists(),
        "tshark is not installed at /usr/bin/tshark: run scripts/setup.sh (Debian package `tshark`)"
    );
    p
}

/// Runs tshark on `pcap` with `args` and returns stdout; fails on a non-zero exit
/// or anything on stderr other than the "running as root" notice.
pub fn run_tshark(pcap: &Path, args: &[&str]) -> String {
    let out = Command::new(tshark())
        .arg("-n")
        .arg("-r")
        .arg(pcap)
        .args(args)
        .output()
        .expect("run tshark");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let unexpected: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            !l.trim().is_empty() && !l.contains("Running as user") && !l.contains("dangerous")
        })
        .collect();
    assert!(out.status.success(), "tshark failed: {stderr}");
    assert!(unexpected.is_empty(), "tshark stderr: {stderr}");
    String::from_utf8(out.stdout).expect("tshark output is utf-8")
}
