//! tshark (Debian's Wireshark 4.0) decodes the agent's datagrams: every field as
//! sent, the extended_mpls label stacks, and no malformed packet or expert
//! warning. The datagrams are written to a pcap inside Ethernet/IPv4/UDP headers
//! (to port 6343, and once to another port with `-d udp.port==N,sflow`).
//!
//! Needs /usr/bin/tshark (scripts/setup.sh installs it); fails clearly without it.

mod common;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use common::*;
use sflow::*;

const NH_A: Ipv4Addr = Ipv4Addr::new(192, 168, 11, 10);
const NH_B: Ipv4Addr = Ipv4Addr::new(192, 168, 12, 10);
/// A link-local next hop, as BGP and OSPFv3 give.
const NH_6: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0x12);

/// The packets, in the order they are sampled (rate 1, rx on ifIndex 1).
fn packets() -> Vec<(TestPacket, Interface)> {
    let ip = |d: u8, n: usize| {
        frame(
            &[],
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, d, 1),
            n,
        )
    };
    let swap_in = vec![lse(100, 0, false, 64), lse(200, 5, true, 64)];
    let swap_out = vec![lse(300, 0, false, 63), lse(200, 5, true, 64)];
    let push_out = vec![lse(500, 0, false, 63), lse(600, 0, true, 63)];
    let six_pe_out = vec![lse(700, 0, false, 63), lse(800, 0, true, 63)];
    // (an IPv6 frame with the stack between its MAC addresses and its header)
    let labelled6 = |stack: &[u32]| {
        let f = frame6(
            "2001:db8::1".parse().unwrap(),
            "2001:db8:3::1".parse().unwrap(),
            2,
        );
        let mut g = f[..12].to_vec();
        g.extend_from_slice(&0x8847u16.to_be_bytes());
        stack
            .iter()
            .for_each(|l| g.extend_from_slice(&l.to_be_bytes()));
        g.extend_from_slice(&f[14..]);
        g
    };
    vec![
        // P router: swap the top label.
        (
            TestPacket {
                frame: frame(
                    &swap_in,
                    Ipv4Addr::new(10, 0, 0, 1),
                    Ipv4Addr::new(10, 0, 1, 1),
                    50,
                ),
                rx_if: 1,
                tx_if: 2,
                next_hop: Some(NH_A.into()),
                in_labels: swap_in,
                out_labels: swap_out,
            },
            Interface::Index(2),
        ),
        // Plain IPv4 routing.
        (
            TestPacket {
                frame: ip(2, 30),
                rx_if: 1,
                tx_if: 3,
                next_hop: Some(NH_B.into()),
                in_labels: vec![],
                out_labels: vec![],
            },
            Interface::Index(3),
        ),
        // Plain IPv6 routing.
        (
            TestPacket {
                frame: frame6(
                    "2001:db8::1".parse().unwrap(),
                    "2001:db8:2::1".parse().unwrap(),
                    40,
                ),
                rx_if: 1,
                tx_if: 3,
                next_hop: Some(NH_6.into()),
                in_labels: vec![],
                out_labels: vec![],
            },
            Interface::Index(3),
        ),
        // Local delivery.
        (
            TestPacket {
                frame: ip(3, 10),
                rx_if: 1,
                tx_if: 0,
                next_hop: None,
                in_labels: vec![],
                out_labels: vec![],
            },
            Interface::Internal,
        ),
        // PE push of two labels.
        (
            TestPacket {
                frame: ip(4, 50),
                rx_if: 1,
                tx_if: 2,
                next_hop: Some(NH_A.into()),
                in_labels: vec![],
                out_labels: push_out,
            },
            Interface::Index(2),
        ),
        // 6PE push: IPv6 under two labels, over an IPv4 next hop.
        (
            TestPacket {
                frame: labelled6(&six_pe_out),
                rx_if: 1,
                tx_if: 2,
                next_hop: Some(NH_A.into()),
                in_labels: vec![],
                out_labels: six_pe_out.clone(),
            },
            Interface::Index(2),
        ),
        // TTL expired: discarded.
        (
            TestPacket {
                frame: ip(5, 1),
                rx_if: 1,
                tx_if: 0,
                next_hop: None,
                in_labels: vec![],
                out_labels: vec![],
            },
            Interface::Discarded(Interface::DISCARD_TTL),
        ),
    ]
}

/// Runs the agent over the packets and the counters; returns the datagrams.
fn datagrams(agent_address: IpAddr, with_counters: bool) -> Vec<Vec<u8>> {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut cfg = AgentConfig::new(agent_address);
    cfg.collectors.push(sock.local_addr().unwrap().to_string());
    cfg.interfaces.insert(
        1,
        Sampling {
            rate: 1,
            directions: Directions::Rx,
        },
    );
    cfg.seed = Some(1);
    // (every sample in one datagram: tshark's view of sequence numbers is per run)
    cfg.max_datagram_bytes = 2048;
    cfg.polling_interval = if with_counters {
        Duration::from_secs(20)
    } else {
        Duration::ZERO
    };
    let mut agent = Agent::new(cfg).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    let mut picks = Picks::new();
    let pkts = packets();
    w.refresh();
    w.select_run(Direction::Rx, 1, 0, pkts.len(), &mut picks);
    assert_eq!(picks.len(), pkts.len());
    for p in picks.as_slice() {
        let (pkt, out) = &pkts[p.index as usize];
        let mut info = pkt.info();
        info.output = *out;
        info.src_vlan = 10;
        info.src_priority = 5;
        assert!(w.submit(p, &info));
    }
    let t = agent.start_time() + Duration::from_millis(1234);
    let mut src = |out: &mut Vec<InterfaceCounters>| {
        let mut g = IfCounters::ethernet(1, 10_000_000_000, true, true);
        g.in_octets = 123_456_789_012;
        g.in_ucast_pkts = 1_000_000;
        g.out_octets = 987_654_321;
        g.out_ucast_pkts = 2_000_000;
        g.out_discards = 7;
        out.push(InterfaceCounters {
            generic: g,
            ethernet: Some(EthernetCounters {
                fcs_errors: 3,
                ..EthernetCounters::UNKNOWN
            }),
        });
    };
    agent.poll(t, &mut src);
    agent.flush_all(t);
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    let want = agent.stats().datagrams as usize;
    while out.len() < want {
        let n = sock.recv(&mut buf).unwrap();
        out.push(buf[..n].to_vec());
    }
    out
}

/// Extracts `fields` from every frame: one map per frame, occurrences joined
/// with ','.
fn fields(pcap: &Path, extra: &[&str], names: &[&str]) -> Vec<BTreeMap<String, String>> {
    let mut args: Vec<&str> = extra.to_vec();
    args.extend([
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "aggregator=,",
        "-E",
        "occurrence=a",
    ]);
    for n in names {
        args.push("-e");
        args.push(n);
    }
    run_tshark(pcap, &args)
        .lines()
        .map(|l| {
            names
                .iter()
                .map(|n| n.to_string())
                .zip(l.split('|').map(str::to_string))
                .collect()
        })
        .collect()
}

fn join<T: ToString>(v: impl IntoIterator<Item = T>) -> String {
    v.into_iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

const FLOW_FIELDS: &[&str] = &[
    "sflow_245.version",
    "sflow_245.agenttype",
    "sflow_245.agent",
    "sflow_245.agent.v6",
    "sflow_245.sub_agent_id",
    "sflow_245.sequence_number",
    "sflow_245.sysuptime",
    "sflow_245.numsamples",
    "sflow_245.sampletype",
    "sflow.flow_sample.sequence_number",
    "sflow.flow_sample.index",
    "sflow.flow_sample.sampling_rate",
    "sflow.flow_sample.sample_pool",
    "sflow.flow_sample.dropped_packets",
    "sflow.flow_sample.input_interface",
    "sflow.flow_sample.output_interface_format",
    "sflow.flow_sample.output_interface_value",
    "sflow_245.header_protocol",
    "sflow_245.header.frame_length",
    "sflow_245.header.payload_stripped",
    "sflow_245.header.sampled_header_length",
    "sflow_245.vlan.in",
    "sflow_245.pri.in",
    "sflow_245.vlan.out",
    "sflow_245.nexthop",
    "sflow_245.nexthop.v6",
    "sflow_245.nexthop.src_mask",
    "sflow_245.nexthop.dst_mask",
    "sflow_245.extended_mpls.in_label_stack_entries",
    "sflow_245.extended_mpls.in_label",
    "sflow_245.extended_mpls.out_label_stack_entries",
    "sflow_245.extended_mpls.out_label",
    "mpls.label",
    "mpls.bottom",
    "ipv6.dst",
];

const COUNTER_FIELDS: &[&str] = &[
    "sflow.counters_sample.sequence_number",
    "sflow.counters_sample.source_id_index",
    "sflow_245.ifindex",
    "sflow_245.iftype",
    "sflow_245.ifspeed",
    "sflow_245.ifdirection",
    "sflow_245.ifadmin_status",
    "sflow_245.ifoper_status",
    "sflow_245.ifinoct",
    "sflow_245.ifinpkt",
    "sflow_245.ifinerr",
    "sflow_245.ifoutoct",
    "sflow_245.ifoutpkt",
    "sflow_245.ifoutdisc",
    "sflow_245.ifpromisc",
    "sflow_245.dot3StatsFCSErrors",
    "sflow_245.dot3StatsAlignmentErrors",
];

/// What tshark must show for the flow samples of `packets()`.
fn expected_flows(agent: IpAddr, n_samples: usize) -> BTreeMap<&'static str, String> {
    let pkts = packets();
    let mut e = BTreeMap::new();
    let (ty, v4, v6) = match agent {
        IpAddr::V4(a) => ("1", a.to_string(), String::new()),
        IpAddr::V6(a) => ("2", String::new(), a.to_string()),
    };
    e.insert("sflow_245.version", "5".to_string());
    e.insert("sflow_245.agenttype", ty.to_string());
    e.insert("sflow_245.agent", v4);
    e.insert("sflow_245.agent.v6", v6);
    e.insert("sflow_245.sub_agent_id", "0".to_string());
    e.insert("sflow_245.sequence_number", "1".to_string());
    e.insert("sflow_245.sysuptime", "1234".to_string());
    e.insert("sflow_245.numsamples", n_samples.to_string());
    let n = pkts.len();
    let mut types = vec![1; n];
    types.extend(std::iter::repeat_n(2, n_samples - n));
    e.insert("sflow_245.sampletype", join(types));
    e.insert("sflow.flow_sample.sequence_number", join(1..=n));
    e.insert("sflow.flow_sample.index", join(vec![1; n]));
    e.insert("sflow.flow_sample.sampling_rate", join(vec![1; n]));
    e.insert("sflow.flow_sample.sample_pool", join(1..=n));
    e.insert("sflow.flow_sample.dropped_packets", join(vec![0; n]));
    e.insert("sflow.flow_sample.input_interface", join(vec![1; n]));
    let (fmt, val): (Vec<u32>, Vec<u32>) = pkts
        .iter()
        .map(|(_, o)| match *o {
            Interface::Index(i) => (0, i),
            Interface::Internal => (0, 0x3fff_ffff),
            Interface::Discarded(r) => (1, r),
            Interface::Multiple(m) => (2, m),
        })
        .unzip();
    e.insert("sflow.flow_sample.output_interface_format", join(fmt));
    e.insert("sflow.flow_sample.output_interface_value", join(val));
    e.insert("sflow_245.header_protocol", join(vec![1; n]));
    e.insert(
        "sflow_245.header.frame_length",
        join(pkts.iter().map(|(p, _)| p.frame.len() + 4)),
    );
    e.insert("sflow_245.header.payload_stripped", join(vec![4; n]));
    e.insert(
        "sflow_245.header.sampled_header_length",
        join(pkts.iter().map(|(p, _)| p.frame.len().min(128))),
    );
    e.insert("sflow_245.vlan.in", join(vec![10; n]));
    e.insert("sflow_245.pri.in", join(vec![5; n]));
    e.insert("sflow_245.vlan.out", join(vec![0; n]));
    // extended_router, then extended_mpls, per sample, when present.
    let (mut nh, mut nh6) = (Vec::new(), Vec::new());
    let mut masks = 0;
    let (mut in_n, mut in_l, mut out_n, mut out_l) = (vec![], vec![], vec![], vec![]);
    for (p, _) in &pkts {
        if let Some(h) = p.next_hop {
            let list = if h.is_ipv4() { &mut nh } else { &mut nh6 };
            list.push(h);
            masks += 1;
            if !p.in_labels.is_empty() || !p.out_labels.is_empty() {
                list.push(h);
                in_n.push(p.in_labels.len());
                in_l.extend(p.in_labels.iter().copied());
                out_n.push(p.out_labels.len());
                out_l.extend(p.out_labels.iter().copied());
            }
        }
    }
    e.insert("sflow_245.nexthop", join(nh));
    e.insert("sflow_245.nexthop.v6", join(nh6));
    e.insert("sflow_245.nexthop.src_mask", join(vec![0; masks]));
    e.insert("sflow_245.nexthop.dst_mask", join(vec![24; masks]));
    e.insert("sflow_245.extended_mpls.in_label_stack_entries", join(in_n));
    e.insert("sflow_245.extended_mpls.in_label", join(in_l));
    e.insert(
        "sflow_245.extended_mpls.out_label_stack_entries",
        join(out_n),
    );
    e.insert("sflow_245.extended_mpls.out_label", join(out_l));
    // The sampled headers are dissected too: the swapped packet's received stack
    // and the 6PE packet's, as it leaves.
    e.insert("mpls.label", "100,200,700,800".to_string());
    e.insert("mpls.bottom", "0,1,0,1".to_string());
    // (the IPv6 under the 6PE labels too)
    e.insert("ipv6.dst", "2001:db8:2::1,2001:db8:3::1".to_string());
    e
}

fn check(frame: &BTreeMap<String, String>, want: &BTreeMap<&'static str, String>) {
    for (k, v) in want {
        assert_eq!(frame.get(*k), Some(v), "field {k}");
    }
}

/// `-V` output and the expert summary: nothing malformed, no warnings.
fn assert_clean(pcap: &Path, extra: &[&str]) {
    let mut args = extra.to_vec();
    args.push("-V");
    let v = run_tshark(pcap, &args);
    for bad in [
        "Malformed",
        "Expert Info",
        "[Packet size limited",
        "Undecoded",
    ] {
        assert!(!v.contains(bad), "tshark -V shows {bad:?}:\n{v}");
    }
    // Unknown formats, types or enterprises; the only "Unknown" allowed is the name
    // of the ifInUnknownProtos counter.
    for l in v.lines() {
        assert!(
            !l.contains("Unknown") || l.contains("Unknown Protocol Packets"),
            "tshark -V: {l}"
        );
    }
    assert!(v.contains("InMon sFlow"));
    let mut args = extra.to_vec();
    args.extend(["-q", "-z", "expert"]);
    let e = run_tshark(pcap, &args);
    for sev in ["Error", "Warning", "Note"] {
        assert!(!e.contains(sev), "expert info: {e}");
    }
}

#[test]
fn tshark_decodes_every_field() {
    let agent4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10));
    let agent6: IpAddr = "2001:db8::10".parse().unwrap();
    let mut d = datagrams(agent4, true);
    assert_eq!(
        d.len(),
        1,
        "7 flow samples and 1 counters sample fit 2048 bytes"
    );
    d.extend(datagrams(agent6, false));
    assert_eq!(d.len(), 2);
    let pcap = scratch("sflow.pcap");
    write_pcap(&pcap, 6343, &d);

    let flows = fields(&pcap, &[], FLOW_FIELDS);
    assert_eq!(flows.len(), 2);
    check(&flows[0], &expected_flows(agent4, 8));
    check(&flows[1], &expected_flows(agent6, 7));

    let ctr = fields(&pcap, &[], COUNTER_FIELDS);
    let want: BTreeMap<&str, String> = [
        ("sflow.counters_sample.sequence_number", "1"),
        ("sflow.counters_sample.source_id_index", "1"),
        ("sflow_245.ifindex", "1"),
        ("sflow_245.iftype", "6"),
        ("sflow_245.ifspeed", "10000000000"),
        ("sflow_245.ifdirection", "1"),
        ("sflow_245.ifadmin_status", "1"),
        ("sflow_245.ifoper_status", "1"),
        ("sflow_245.ifinoct", "123456789012"),
        ("sflow_245.ifinpkt", "1000000"),
        ("sflow_245.ifinerr", "4294967295"),
        ("sflow_245.ifoutoct", "987654321"),
        ("sflow_245.ifoutpkt", "2000000"),
        ("sflow_245.ifoutdisc", "7"),
        ("sflow_245.ifpromisc", "2"),
        ("sflow_245.dot3StatsFCSErrors", "3"),
        ("sflow_245.dot3StatsAlignmentErrors", "4294967295"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect();
    check(&ctr[0], &want);
    // The IPv6 agent's datagram has no counters sample.
    assert_eq!(
        ctr[1].get("sflow_245.ifindex").map(String::as_str),
        Some("")
    );

    assert_clean(&pcap, &[]);
    let _ = std::fs::remove_file(&pcap);
}

#[test]
fn tshark_decodes_on_another_port_with_decode_as() {
    let d = datagrams(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10)), true);
    let pcap = scratch("sflow-16343.pcap");
    write_pcap(&pcap, 16_343, &d);
    let decode_as = ["-d", "udp.port==16343,sflow"];
    let f = fields(&pcap, &decode_as, FLOW_FIELDS);
    check(
        &f[0],
        &expected_flows(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10)), 8),
    );
    assert_clean(&pcap, &decode_as);
    let _ = std::fs::remove_file(&pcap);
}

#[test]
fn tshark_decodes_full_datagrams_split_at_the_limit() {
    // Many samples: several datagrams, each as long as the limit allows, all clean.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut cfg = AgentConfig::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10)));
    cfg.collectors.push(sock.local_addr().unwrap().to_string());
    cfg.interfaces.insert(
        1,
        Sampling {
            rate: 1,
            directions: Directions::Both,
        },
    );
    cfg.header_bytes = 256;
    cfg.polling_interval = Duration::ZERO;
    let mut agent = Agent::new(cfg).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    let mut picks = Picks::new();
    let pkts: Vec<TestPacket> = packets()
        .into_iter()
        .map(|(mut p, _)| {
            p.tx_if = 1;
            p
        })
        .cycle()
        .take(40)
        .collect();
    run_vector(&mut w, &mut picks, &pkts);
    let t = agent.start_time();
    agent.poll(t, &mut NoCounters);
    agent.flush_all(t);
    let mut d = Vec::new();
    let mut buf = [0u8; 2048];
    while d.len() < agent.stats().datagrams as usize {
        let n = sock.recv(&mut buf).unwrap();
        d.push(buf[..n].to_vec());
    }
    assert!(d.len() > 10);
    let pcap = scratch("sflow-many.pcap");
    write_pcap(&pcap, 6343, &d);
    let f = fields(
        &pcap,
        &[],
        &["sflow_245.numsamples", "sflow_245.sequence_number"],
    );
    let total: usize = f
        .iter()
        .map(|m| m["sflow_245.numsamples"].parse::<usize>().unwrap())
        .sum();
    assert_eq!(total, 80);
    let seqs: Vec<String> = f
        .iter()
        .map(|m| m["sflow_245.sequence_number"].clone())
        .collect();
    assert_eq!(
        seqs,
        (1..=d.len()).map(|i| i.to_string()).collect::<Vec<_>>()
    );
    assert_clean(&pcap, &[]);
    let _ = std::fs::remove_file(&pcap);
}

#[test]
fn the_clean_check_catches_a_malformed_datagram() {
    // Negative control: a datagram cut short must trip `assert_clean`.
    let mut d = datagrams(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10)), true);
    d[0].truncate(300);
    let pcap = scratch("sflow-cut.pcap");
    write_pcap(&pcap, 6343, &d);
    let r = std::panic::catch_unwind(|| assert_clean(&pcap, &[]));
    let _ = std::fs::remove_file(&pcap);
    assert!(
        r.is_err(),
        "a truncated datagram passed the malformed check"
    );
}
