//! Frames, a router and counter helpers shared by the router tests.
//!
//! The frames are built byte by byte here, not by the code under test; expected
//! outputs recompute checksums from scratch so the incremental updates are checked.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use dataplane::router::{
    CoreConfig, DropReason, Interface, PuntReason, RouterControl, WorkerStats,
};
use fib::{Ipv4Prefix, Path, RouteKind};
use mpls::LabelAction;
use proptest::prelude::*;

/// Our MAC on DPDK port `p` (sub-interfaces share their port's MAC).
pub const fn mac_r(p: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, p, 0x01]
}
/// The neighbour behind port `p` (10.(p+1).0.2).
pub const fn mac_n(p: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, p, 0x99]
}
/// The traffic source on port 0 (10.1.0.2).
pub const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x55];
/// The neighbour on the VLAN 200 sub-interface of port 1 (10.200.0.2).
pub const VNBR: [u8; 6] = [0x02, 0, 0, 0, 0xc8, 0x99];
pub const BCAST: [u8; 6] = [0xff; 6];

pub const ETH_IP4: u16 = 0x0800;
pub const ETH_ARP: u16 = 0x0806;
pub const ETH_MPLS: u16 = 0x8847;

pub fn a(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

pub fn pfx(s: &str) -> Ipv4Prefix {
    s.parse().unwrap()
}

/// Ports 0..5 as ifindex 1..6 with 10.(p+1).0.1/24; sub-interfaces port0.100
/// (ifindex 10, 10.100.0.1/24) and port1.200 (ifindex 11, 10.200.0.1/24).
/// Neighbours: the host 10.1.0.2 on port 0, 10.(p+1).0.2 on ports 1..5,
/// 10.200.0.2 on port1.200.
pub fn router() -> RouterControl {
    router_on([0, 1, 2, 3, 4])
}

/// [`router`] with logical port `p` on DPDK port `ports[p]` (MACs and addresses
/// still follow the logical number).
pub fn router_on(ports: [u16; 5]) -> RouterControl {
    let mut ctl = RouterControl::new();
    for p in 0..5u8 {
        ctl.add_interface(port_iface(p, ports[usize::from(p)], 0))
            .unwrap();
    }
    for (ifindex, port, vlan, addr) in [(10, 0u8, 100, "10.100.0.1"), (11, 1, 200, "10.200.0.1")] {
        ctl.add_interface(Interface {
            ifindex,
            name: format!("port{port}.{vlan}"),
            port: ports[usize::from(port)],
            vlan: Some(vlan),
            mac: mac_r(port),
            mtu: 1500,
            up: true,
            table: 0,
            addrs: vec![(a(addr), 24)],
            addrs6: Vec::new(),
        })
        .unwrap();
    }
    ctl.set_neighbor(1, a("10.1.0.2"), HOST).unwrap();
    for p in 1..5u8 {
        ctl.set_neighbor(u32::from(p) + 1, Ipv4Addr::new(10, p + 1, 0, 2), mac_n(p))
            .unwrap();
    }
    ctl.set_neighbor(11, a("10.200.0.2"), VNBR).unwrap();
    ctl
}

/// Logical port `p` (ifindex p + 1, `port{p}`, 10.(p+1).0.1/24) on DPDK port
/// `port`, bound to `table`.
pub fn port_iface(p: u8, port: u16, table: u32) -> Interface {
    Interface {
        ifindex: u32::from(p) + 1,
        name: format!("port{p}"),
        port,
        vlan: None,
        mac: mac_r(p),
        mtu: 1500,
        up: true,
        table,
        addrs: vec![(Ipv4Addr::new(10, p + 1, 0, 1), 24)],
        addrs6: Vec::new(),
    }
}

/// A route over gateways (resolved recursively), with out-labels.
pub fn route(ctl: &mut RouterControl, prefix: &str, gws: &[&str], labels: &[u32]) {
    let paths = gws
        .iter()
        .map(|g| Path::gateway(a(g)).with_labels(labels))
        .collect();
    ctl.route_add(0, pfx(prefix), RouteKind::Paths(paths))
        .unwrap();
}

/// An IPv4/UDP packet of `len` bytes (at least 28) with a valid header checksum.
pub fn ip4(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, sport: u16, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    p[8] = ttl;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    ip_fix(&mut p);
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&53u16.to_be_bytes());
    p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    for (i, b) in p[28..].iter_mut().enumerate() {
        *b = i as u8;
    }
    p
}

/// Recomputes an IPv4 header checksum from scratch.
pub fn ip_fix(p: &mut [u8]) {
    let hl = usize::from(p[0] & 0x0f) * 4;
    p[10..12].fill(0);
    let c = wire::checksum::checksum(&p[..hl]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
}

/// `p` as the next hop sees it: TTL set, checksum recomputed.
pub fn with_ttl(p: &[u8], ttl: u8) -> Vec<u8> {
    let mut q = p.to_vec();
    q[8] = ttl;
    ip_fix(&mut q);
    q
}

/// An Ethernet frame (with an 802.1Q tag if `vlan`).
pub fn eth(dst: [u8; 6], src: [u8; 6], vlan: Option<u16>, et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(18 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if let Some(v) = vlan {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A label stack entry.
pub fn lse(label: u32, s: bool, ttl: u8) -> [u8; 4] {
    ((label << 12) | (u32::from(s) << 8) | u32::from(ttl)).to_be_bytes()
}

/// `labels` (label, ttl), top first, S on the last, in front of `payload`.
pub fn labelled(labels: &[(u32, u8)], payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, &(l, ttl)) in labels.iter().enumerate() {
        v.extend_from_slice(&lse(l, i + 1 == labels.len(), ttl));
    }
    v.extend_from_slice(payload);
    v
}

/// An ARP packet (28 bytes).
pub fn arp(op: u16, sha: [u8; 6], spa: Ipv4Addr, tha: [u8; 6], tpa: Ipv4Addr) -> Vec<u8> {
    let mut p = vec![0, 1, 0x08, 0x00, 6, 4];
    p.extend_from_slice(&op.to_be_bytes());
    p.extend_from_slice(&sha);
    p.extend_from_slice(&spa.octets());
    p.extend_from_slice(&tha);
    p.extend_from_slice(&tpa.octets());
    p
}

/// The ARP request interface `mac` (address `spa`) sends for `tpa`, as a whole
/// untagged frame to `dst` (broadcast to resolve, the known MAC to probe), padded to
/// the 60-byte minimum.
pub fn arp_request(dst: [u8; 6], mac: [u8; 6], spa: Ipv4Addr, tpa: Ipv4Addr) -> Vec<u8> {
    let mut f = eth(dst, mac, None, ETH_ARP, &arp(1, mac, spa, [0; 6], tpa));
    f.resize(60, 0);
    f
}

/// An ARP reply from neighbour `mac`/`ip` on logical port `p` to the router's
/// address there (10.(p+1).0.1), as an untagged frame.
pub fn neighbor_reply(p: u8, mac: [u8; 6], ip: &str) -> Vec<u8> {
    let ours = Ipv4Addr::new(10, p + 1, 0, 1);
    eth(
        mac_r(p),
        mac,
        None,
        ETH_ARP,
        &arp(2, mac, a(ip), mac_r(p), ours),
    )
}

/// An IPv4 ICMP error as the router should build it: TOS 0xc0, TTL 64, `id`, the
/// quoted datagram cut at 548 bytes (576 in all).
pub fn icmp_error(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    id: u16,
    typ: u8,
    code: u8,
    mtu: u16,
    quote: &[u8],
) -> Vec<u8> {
    let quote = &quote[..quote.len().min(548)];
    let total = 28 + quote.len();
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[1] = 0xc0;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[8] = 64;
    p[9] = 1;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    ip_fix(&mut p);
    p[20] = typ;
    p[21] = code;
    p[26..28].copy_from_slice(&mtu.to_be_bytes());
    p[28..].copy_from_slice(quote);
    let c = wire::checksum::checksum(&p[20..]);
    p[22..24].copy_from_slice(&c.to_be_bytes());
    p
}

/// Every non-zero event counter of a worker by name: drops (ours and the label
/// table's), punts, and what the local stage sent. Tests compare the whole map, so
/// a packet counted twice or under the wrong name fails.
pub fn counters(s: &WorkerStats) -> BTreeMap<&'static str, u64> {
    let mut m = BTreeMap::new();
    for r in DropReason::ALL {
        m.insert(r.name(), s.drop_count(r));
    }
    for r in mpls::DropReason::ALL {
        m.insert(r.name(), s.mpls_drop_count(r));
    }
    for r in PuntReason::ALL {
        m.insert(r.name(), s.punts[r as usize].get());
    }
    m.insert("echo_replies", s.echo_replies.get());
    m.insert("icmp_errors", s.icmp_errors.get());
    m.insert("arp_replies", s.arp_replies.get());
    m.insert("arp_requests", s.arp_requests.get());
    m.insert("arp_consumed", s.arp_consumed.get());
    m.insert("nd_replies", s.nd_replies.get());
    m.insert("nd_requests", s.nd_requests.get());
    m.insert("nd_consumed", s.nd_consumed.get());
    m.insert("held", s.held.get());
    m.insert("hold_released", s.hold_released.get());
    m.retain(|_, v| *v != 0);
    m
}

/// Builds the expected map for [`counters`].
pub fn expect(items: &[(&'static str, u64)]) -> BTreeMap<&'static str, u64> {
    items.iter().copied().filter(|x| x.1 != 0).collect()
}

/// A core configuration with an ICMP budget large enough for every case of 257.
pub fn core_cfg() -> CoreConfig {
    CoreConfig {
        icmp_rate_pps: 1000,
        icmp_burst: 1000,
        arp_retry_ms: 100,
        ..CoreConfig::default()
    }
}

/// A packet from the host (10.1.0.2) to address `i` of `dst_net`/16.
pub fn host_ip(i: usize, dst_net: [u8; 2], ttl: u8, len: usize) -> Vec<u8> {
    ip4(
        a("10.1.0.2"),
        Ipv4Addr::new(dst_net[0], dst_net[1], (i >> 8) as u8, i as u8),
        ttl,
        1024 + i as u16,
        len,
    )
}

/// An IPv4 frame from the host on port 0.
pub fn from_host(ip: &[u8]) -> Vec<u8> {
    eth(mac_r(0), HOST, None, ETH_IP4, ip)
}

/// A router with the label entries of the MPLS cases: 100 swap to 200 (and the
/// non-bottom entry of 100), 101 swap to explicit null, 102 PHP to port 2, 110 swap
/// to itself, 300 pop and IPv4 lookup; 198.18/16 via port 1 ([`router_on`]
/// `ports`).
pub fn lsr_on(ports: [u16; 5]) -> RouterControl {
    let mut ctl = router_on(ports);
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let adj1 = ctl.adjacency(2, a("10.2.0.2")).unwrap();
    let adj2 = ctl.adjacency(3, a("10.3.0.2")).unwrap();
    ctl.label_add(100, true, LabelAction::swap(adj1, &[200]))
        .unwrap();
    ctl.label_add(100, false, LabelAction::swap(adj1, &[200]))
        .unwrap();
    ctl.label_add(110, true, LabelAction::swap(adj1, &[110]))
        .unwrap();
    ctl.label_add(101, true, LabelAction::swap(adj1, &[0]))
        .unwrap();
    ctl.label_add(102, true, LabelAction::php(adj2)).unwrap();
    ctl.label_add(300, true, LabelAction::ip4_lookup(0))
        .unwrap();
    ctl
}

pub fn from_host_mpls(stack: &[(u32, u8)], ip: &[u8]) -> Vec<u8> {
    eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(stack, ip))
}

/// [`lsr_on`] with the routes the differential tests draw from: labelled (two
/// labels), ECMP over two neighbours, via an unresolved neighbour, a default route
/// via a neighbour on port 3.
pub fn fuzz_router_on(ports: [u16; 5]) -> RouterControl {
    let mut ctl = lsr_on(ports);
    route(&mut ctl, "198.19.0.0/16", &["10.2.0.2"], &[1000, 2000]);
    route(&mut ctl, "198.21.0.0/16", &["10.2.0.2", "10.3.0.2"], &[]);
    route(&mut ctl, "198.25.0.0/16", &["10.3.0.7"], &[]);
    ctl.route_add(
        0,
        pfx("0.0.0.0/0"),
        RouteKind::Paths(vec![Path::gateway(a("10.4.0.2"))]),
    )
    .unwrap();
    // VRFs 7 and 8 with labels 301 and 302 popping into them (the fast path's
    // second batch, and a third table left to the general path): a neighbour, a
    // VPN route over the global table's 198.19/16 and nothing else.
    for (t, l, nbr, ix) in [(7, 301, "10.2.0.2", 2), (8, 302, "10.3.0.2", 3)] {
        ctl.table_add(t).unwrap();
        let p = Path::gateway_on(a(nbr), ix);
        ctl.route_add(t, pfx("198.18.0.0/16"), RouteKind::Paths(vec![p]))
            .unwrap();
        let vpn = Path::gateway(a("198.19.0.1"))
            .in_table(0)
            .with_labels(&[77]);
        ctl.route_add(t, pfx("198.26.0.0/16"), RouteKind::Paths(vec![vpn]))
            .unwrap();
        ctl.label_add(l, true, LabelAction::ip4_lookup(t)).unwrap();
    }
    // IPv6: addresses on ports 0..3, 2001:db8:18::/48 via port 1's link-local
    // neighbour, labelled via port 2's, ECMP over both, via an unresolved one,
    // a blackhole; the host on port 0 known.
    for p in 0..3u32 {
        let a6 = std::net::Ipv6Addr::new(0x2001, 0xdb8, p as u16 + 1, 0, 0, 0, 0, 1);
        ctl.add_address(p + 1, a6, 64).unwrap();
        ctl.add_address(p + 1, v6("fe80::1"), 64).unwrap();
    }
    ctl.set_neighbor6(1, v6("2001:db8:1::2"), HOST).unwrap();
    ctl.set_neighbor6(2, v6("fe80::2:99"), mac_n(1)).unwrap();
    ctl.set_neighbor6(3, v6("fe80::3:99"), mac_n(2)).unwrap();
    let via6 = |n: &str, ix: u32| Path::gateway6(v6(n), ix);
    for (prefix, kind) in [
        (
            "2001:db8:18::/48",
            RouteKind::Paths(vec![via6("fe80::2:99", 2)]),
        ),
        (
            "2001:db8:19::/48",
            RouteKind::Paths(vec![via6("fe80::3:99", 3).with_labels(&[1000])]),
        ),
        (
            "2001:db8:21::/48",
            RouteKind::Paths(vec![via6("fe80::2:99", 2), via6("fe80::3:99", 3)]),
        ),
        (
            "2001:db8:25::/48",
            RouteKind::Paths(vec![via6("fe80::3:77", 3)]),
        ),
        ("2001:db8:26::/48", RouteKind::Blackhole),
    ] {
        let p: fib::Ipv6Prefix = prefix.parse().unwrap();
        ctl.route_add(0, p, kind).unwrap();
    }
    // Labels into IPv6: 303 pops into the global table's IPv6 half, 304 into
    // VRF 7's (2001:db8:18::/48 via port 2's neighbour there), 305 into the
    // global table by the payload's version; 6PE: 2001:db8:27::/48 via the
    // IPv4 next hop 198.24.0.1 (whose LSP is label 1000) with label 600.
    ctl.label_add(303, true, LabelAction::ip6_lookup(0))
        .unwrap();
    ctl.label_add(304, true, LabelAction::ip6_lookup(7))
        .unwrap();
    ctl.label_add(305, true, LabelAction::ip_lookup(0)).unwrap();
    let p: fib::Ipv6Prefix = "2001:db8:18::/48".parse().unwrap();
    ctl.route_add(
        7,
        p,
        RouteKind::Paths(vec![Path::gateway6(v6("fe80::3:99"), 3)]),
    )
    .unwrap();
    let p: fib::Ipv6Prefix = "2001:db8:27::/48".parse().unwrap();
    route(&mut ctl, "198.24.0.0/16", &["10.2.0.2"], &[1000]);
    let six_pe = Path::gateway(a("198.24.0.1")).with_labels(&[600]);
    ctl.route_add(0, p, RouteKind::Paths(vec![six_pe])).unwrap();
    ctl
}

pub fn v6(s: &str) -> std::net::Ipv6Addr {
    s.parse().unwrap()
}

/// An IPv6/UDP packet from the host (2001:db8:1::2) to address `i` of
/// 2001:db8:`net`::/48, `len` bytes (at least 48), hop limit `hl`.
pub fn host_ip6(i: usize, net: u16, hl: u8, len: usize) -> Vec<u8> {
    let len = len.max(48);
    let mut p = vec![0u8; len];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
    p[6] = 17;
    p[7] = hl;
    p[8..24].copy_from_slice(&v6("2001:db8:1::2").octets());
    let dst = std::net::Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, i as u16 + 1);
    p[24..40].copy_from_slice(&dst.octets());
    p[40..42].copy_from_slice(&(1024 + i as u16).to_be_bytes());
    p[42..44].copy_from_slice(&53u16.to_be_bytes());
    p[44..46].copy_from_slice(&((len - 40) as u16).to_be_bytes());
    p
}

/// Mostly plain IPv4 (what the fast path takes) with everything that must leave it:
/// TTL 0 and 1, local and martian destinations, ECMP (198.21/16; 198.22/16 where
/// the caller routes it), unresolved neighbours, a
/// tagged output, five labels, implicit null, over-MTU with and without DF,
/// padding, VLAN and broadcast heads, a few changed bytes; received on one of three
/// ports (an index: the caller says which ports those are, mostly the first).
pub fn diff_frame() -> impl Strategy<Value = (Vec<u8>, usize)> {
    (
        (
            0usize..14,
            0usize..6,
            28usize..1600,
            0usize..3,
            any::<bool>(),
        ),
        prop::collection::vec((0usize..40, any::<u8>()), 0..2),
        prop_oneof![Just(0usize), Just(0), Just(0), Just(1), Just(2)],
        0u8..30,
    )
        .prop_map(|((net, ttl, len, pad, df), edits, port, head)| {
            let nets: [[u8; 2]; 14] = [
                [198, 18],
                [198, 22],
                [198, 19],
                [198, 21],
                [198, 25],
                [198, 26],
                [198, 27],
                [198, 28],
                [198, 29],
                [198, 30],
                [198, 31],
                [10, 1],
                [203, 0],
                [127, 0],
            ];
            let ttl = [1u8, 2, 64, 64, 255, 0][ttl];
            let mut ip = host_ip(len % 3, nets[net], ttl, len);
            if df {
                ip[6] |= 0x40;
                ip_fix(&mut ip);
            }
            let lt = [0u8, 1, 2, 64][len % 4];
            let mut f = match head {
                8 => eth(mac_r(0), HOST, Some(100), ETH_IP4, &ip),
                9 => eth(BCAST, HOST, None, ETH_IP4, &ip),
                // swap, PHP, pop + lookup, explicit null, swap to an unresolved
                // neighbour, no entry
                10 => from_host_mpls(&[(100, lt)], &ip),
                11 => from_host_mpls(&[(102, lt)], &ip),
                12 => from_host_mpls(&[(300, lt)], &ip),
                13 => from_host_mpls(&[(0, lt)], &ip),
                14 => from_host_mpls(&[(120, lt)], &ip),
                15 => from_host_mpls(&[(100, 64), (300, lt)], &ip),
                16 => from_host_mpls(&[(999, lt)], &ip),
                // pop into VRF 7 or 8
                17 => from_host_mpls(&[(301, lt)], &ip),
                18 => from_host_mpls(&[(302, lt)], &ip),
                // IPv6: routed, labelled, ECMP, unresolved, blackhole, no
                // route, 6PE, link-local and multicast destinations
                19..=22 => {
                    let nets = [0x18, 0x19, 0x21, 0x25, 0x26, 0x99, 0x27];
                    let mut ip6 = host_ip6(len % 3, nets[net % 7], ttl, len);
                    match (net, head) {
                        (7, _) => ip6[24..40].copy_from_slice(&v6("fe80::1").octets()),
                        (8, _) => ip6[24..40].copy_from_slice(&v6("ff02::1").octets()),
                        (9, _) => ip6[8..24].copy_from_slice(&v6("fe80::55").octets()),
                        _ => {}
                    }
                    eth(mac_r(0), HOST, None, 0x86dd, &ip6)
                }
                // Labelled IPv6: explicit null 2, pop into the global table,
                // into VRF 7, by the version, PHP, swap (TTL expiry: ICMPv6),
                // and under an IPv4 label (a named drop); and IPv4 by the
                // version and under label 2.
                23..=29 => {
                    let nets = [0x18, 0x19, 0x21, 0x25, 0x26, 0x99, 0x18, 0x27];
                    let ip6 = host_ip6(len % 3, nets[net % 8], 64, len);
                    let label = [2, 303, 304, 305, 102, 100, 300][usize::from(head - 23)];
                    match net {
                        12 => from_host_mpls(&[(305, lt)], &ip),
                        13 => from_host_mpls(&[(2, lt)], &ip),
                        _ => from_host_mpls(&[(label, lt)], &ip6),
                    }
                }
                _ => from_host(&ip),
            };
            f.extend(std::iter::repeat_n(0xee, pad * 7));
            for (at, b) in edits {
                if let Some(x) = f.get_mut(at) {
                    *x = b;
                }
            }
            (f, port)
        })
}
