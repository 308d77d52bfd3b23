//! Packet trace: `trace_add(n)` records exactly the next n packets with their stages
//! and decisions; nothing is recorded without a budget.

use std::net::Ipv4Addr;

use dataplane::packet::VecPacket;
use dataplane::router::{CoreConfig, Interface, Out, RouterControl};
use fib::{Ipv4Prefix, Path, RouteKind};

const MAC0: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC1: [u8; 6] = [2, 0, 0, 0, 1, 1];
const NBR: [u8; 6] = [2, 0, 0, 0, 9, 9];

fn iface(ifindex: u32, port: u16, mac: [u8; 6], addr: [u8; 4]) -> Interface {
    Interface {
        ifindex,
        name: format!("port{port}"),
        port,
        vlan: None,
        mac,
        mtu: 1500,
        up: true,
        table: 0,
        addrs: vec![(Ipv4Addr::from(addr), 24)],
        addrs6: Vec::new(),
    }
}

fn ipv4_frame(dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 28];
    f[..6].copy_from_slice(&MAC0);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x55]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&28u16.to_be_bytes());
    ip[8] = ttl;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 1, 0, 2]);
    ip[16..20].copy_from_slice(&dst);
    let ck = wire::checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    f
}

#[test]
fn trace_records_the_budgeted_packets() {
    let mut ctl = RouterControl::new();
    ctl.add_interface(iface(1, 0, MAC0, [10, 1, 0, 1])).unwrap();
    ctl.add_interface(iface(2, 1, MAC1, [10, 2, 0, 1])).unwrap();
    ctl.set_neighbor(2, Ipv4Addr::new(10, 2, 0, 2), NBR)
        .unwrap();
    let p = Ipv4Prefix::new(Ipv4Addr::new(198, 18, 0, 0), 16).unwrap();
    ctl.route_add(
        0,
        p,
        RouteKind::Paths(vec![Path::gateway(Ipv4Addr::new(10, 2, 0, 2))]),
    )
    .unwrap();
    let (mut core, _punts) = ctl.new_core(CoreConfig::default(), 2_000_000_000);

    let mut out = [Out::Drop; 4];
    let frames = [
        ipv4_frame([198, 18, 1, 1], 64),
        ipv4_frame([203, 0, 113, 1], 64),
        ipv4_frame([198, 18, 1, 2], 64),
    ];
    // No budget: nothing recorded.
    let mut pkts: Vec<VecPacket> = frames.iter().map(|f| VecPacket::new(f, 0)).collect();
    core.process(&mut pkts, &mut out[..3]);
    assert!(ctl.trace_records().is_empty());

    ctl.trace_add(2);
    let mut pkts: Vec<VecPacket> = frames.iter().map(|f| VecPacket::new(f, 0)).collect();
    core.process(&mut pkts, &mut out[..3]);
    let recs = ctl.trace_records();
    assert_eq!(recs.len(), 2, "budget of 2");
    let (_, fwd) = &recs[0];
    assert_eq!(fwd.stages, vec!["ethernet-input", "ip4-lookup", "rewrite"]);
    assert_eq!(fwd.decision, "tx port 1");
    assert_eq!(&fwd.head_in[..6], &MAC0);
    assert_eq!(&fwd.head_out[..6], &NBR);
    assert_eq!(fwd.rx_if, 1);
    let (_, noroute) = &recs[1];
    assert!(
        noroute.decision.contains("ip4_no_route"),
        "{}",
        noroute.decision
    );
    // Budget used up: the next vector adds nothing.
    let mut pkts: Vec<VecPacket> = frames.iter().map(|f| VecPacket::new(f, 0)).collect();
    core.process(&mut pkts, &mut out[..3]);
    assert_eq!(ctl.trace_records().len(), 2);
    ctl.trace_clear();
    assert!(ctl.trace_records().is_empty());
}
