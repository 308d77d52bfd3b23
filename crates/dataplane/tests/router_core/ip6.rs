//! IPv6 through the forwarding core without EAL: forwarding (hop limit, MACs,
//! labels, ECMP), the errors a Linux router sends (time exceeded, no route,
//! prohibited, packet too big, beyond scope) and their limits, the drops by
//! name, neighbour discovery both ways (answers for our addresses, solicitations
//! for unresolved next hops with the packets held until the advertisement),
//! and echo replies. Frames are built byte by byte here; checksums are summed
//! from scratch.

use std::net::Ipv6Addr;

use super::{N, assert_all_tx, core, run, stage};
use crate::common::*;
use dataplane::dpdk::tsc_hz;
use dataplane::packet::VecPacket;
use dataplane::router::{Core, CoreConfig, Out, RouterControl, Stage};
use fib::{Ipv6Prefix, Path, RouteKind};
use mpls::LabelAction;

const ETH_IP6: u16 = 0x86dd;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn p6(s: &str) -> Ipv6Prefix {
    s.parse().unwrap()
}

/// The host on port 0.
const HOST6: &str = "2001:db8:1::2";
/// The router on port 0, and its link-local address there.
const R0: &str = "2001:db8:1::1";
const R0_LL: &str = "fe80::1";
/// The neighbour behind port 1 (link-local, as BGP and OSPFv3 next hops are).
const N1_LL: &str = "fe80::2:99";

/// [`router`] with IPv6: 2001:db8:(p+1)::1/64 and fe80::1 on ports 0..2, the
/// host's and port 1's neighbour known, and 2001:db8:100::/48 via port 1's
/// link-local neighbour.
fn router6() -> RouterControl {
    let mut ctl = router();
    for p in 0..3u32 {
        ctl.add_address(p + 1, a6(&format!("2001:db8:{}::1", p + 1)), 64)
            .unwrap();
        ctl.add_address(p + 1, a6(R0_LL), 64).unwrap();
    }
    ctl.set_neighbor6(1, a6(HOST6), HOST).unwrap();
    ctl.set_neighbor6(2, a6(N1_LL), mac_n(1)).unwrap();
    ctl.route_add(
        0,
        p6("2001:db8:100::/48"),
        RouteKind::Paths(vec![Path::gateway6(a6(N1_LL), 2)]),
    )
    .unwrap();
    ctl
}

/// Ones' complement sum of the IPv6 pseudo-header and `data`.
fn csum6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, data: &[u8]) -> u16 {
    let mut s: u64 = 0;
    let mut add = |b: &[u8]| {
        for c in b.chunks(2) {
            s += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&(data.len() as u32).to_be_bytes());
    add(&[0, 0, 0, nh]);
    add(data);
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An IPv6 packet with next header `nh`.
fn ip6(src: &str, dst: &str, hl: u8, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend((payload.len() as u16).to_be_bytes());
    p.extend([nh, hl]);
    p.extend(a6(src).octets());
    p.extend(a6(dst).octets());
    p.extend(payload);
    p
}

/// An ICMPv6 message (`body` after type, code and checksum) in an IPv6 packet.
fn icmp6(src: &str, dst: &str, hl: u8, typ: u8, code: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![typ, code, 0, 0];
    m.extend(body);
    let c = csum6(a6(src), a6(dst), 58, &m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    ip6(src, dst, hl, 58, &m)
}

/// A UDP packet of `len` payload bytes with source port `sport`.
fn udp6(src: &str, dst: &str, hl: u8, sport: u16, len: usize) -> Vec<u8> {
    let mut u = sport.to_be_bytes().to_vec();
    u.extend(9u16.to_be_bytes());
    u.extend(((8 + len) as u16).to_be_bytes());
    u.extend([0, 0]);
    u.extend((0..len).map(|i| i as u8));
    let c = csum6(a6(src), a6(dst), 17, &u);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    ip6(src, dst, hl, 17, &u)
}

fn with_hl(ip: &[u8], hl: u8) -> Vec<u8> {
    let mut p = ip.to_vec();
    p[7] = hl;
    p
}

fn from_host6(ip: &[u8]) -> Vec<u8> {
    eth(mac_r(0), HOST, None, ETH_IP6, ip)
}

/// The ICMPv6 error the router sends from `from` to `to` about `orig`.
fn error6(from: &str, to: &str, typ: u8, code: u8, param: u32, orig: &[u8]) -> Vec<u8> {
    let mut body = param.to_be_bytes().to_vec();
    body.extend(&orig[..orig.len().min(1280 - 48)]);
    icmp6(from, to, 64, typ, code, &body)
}

#[test]
fn forwards_with_the_hop_limit_down_and_the_neighbours_mac() {
    let mut ctl = router6();
    let mut core = core(&mut ctl);
    let frames: Vec<Vec<u8>> = (0..257)
        .map(|i| from_host6(&udp6(HOST6, "2001:db8:100::5", 64, 1000 + i, 32)))
        .collect();
    let res = run(&mut core, &frames, 0);
    for (i, (o, d)) in res.iter().enumerate() {
        assert_eq!(*o, Out::Tx(1), "packet {i}");
        let ip = udp6(HOST6, "2001:db8:100::5", 63, 1000 + i as u16, 32);
        assert_eq!(
            d,
            &eth(mac_n(1), mac_r(1), None, ETH_IP6, &ip),
            "packet {i}"
        );
    }
    assert_eq!(counters(core.stats()), expect(&[]));
    assert_eq!(stage(&core, Stage::Ip6Lookup), (2, 257));
    // Ethernet padding is cut; a route's labels go on with the hop limit.
    ctl.route_add(
        0,
        p6("2001:db8:200::/48"),
        RouteKind::Paths(vec![Path::gateway6(a6(N1_LL), 2).with_labels(&[1000])]),
    )
    .unwrap();
    let small = icmp6(HOST6, "2001:db8:200::1", 9, 128, 0, &[0, 1, 0, 1]);
    let mut padded = from_host6(&small);
    padded.resize(64, 0);
    let res = run(&mut core, &[padded], 0);
    let mut want = lse(1000, true, 8).to_vec();
    want.extend(with_hl(&small, 8));
    assert_eq!(
        res[0],
        (Out::Tx(1), eth(mac_n(1), mac_r(1), None, ETH_MPLS, &want))
    );
}

#[test]
fn errors_are_those_of_a_linux_router() {
    let mut ctl = router6();
    ctl.route_add(0, p6("2001:db8:dead::/48"), RouteKind::Unreachable)
        .unwrap();
    ctl.route_add(0, p6("2001:db8:f00d::/48"), RouteKind::Prohibit)
        .unwrap();
    ctl.route_add(0, p6("2001:db8:b1ac::/48"), RouteKind::Blackhole)
        .unwrap();
    let mut core = core(&mut ctl);
    let back = |ip: &[u8]| (Out::Tx(0), eth(HOST, mac_r(0), None, ETH_IP6, ip));
    let expired = udp6(HOST6, "2001:db8:100::5", 1, 7, 16);
    let noroute = udp6(HOST6, "2001:db9::1", 64, 7, 16);
    let unreach = udp6(HOST6, "2001:db8:dead::1", 64, 7, 16);
    let prohibit = udp6(HOST6, "2001:db8:f00d::1", 64, 7, 16);
    let hole = udp6(HOST6, "2001:db8:b1ac::1", 64, 7, 16);
    let big = udp6(HOST6, "2001:db8:100::5", 64, 7, 1500 - 48 + 1);
    let res = run(
        &mut core,
        &[&expired, &noroute, &unreach, &prohibit, &hole, &big].map(|p| from_host6(p)),
        0,
    );
    assert_eq!(res[0], back(&error6(R0, HOST6, 3, 0, 0, &expired)));
    assert_eq!(res[1], back(&error6(R0, HOST6, 1, 0, 0, &noroute)));
    assert_eq!(res[2], back(&error6(R0, HOST6, 1, 0, 0, &unreach)));
    assert_eq!(res[3], back(&error6(R0, HOST6, 1, 1, 0, &prohibit)));
    assert_eq!(res[4].0, Out::Drop);
    assert_eq!(res[5], back(&error6(R0, HOST6, 2, 0, 1500, &big)));
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("ip6_hop_limit_expired", 1),
            ("ip6_no_route", 1),
            ("ip6_unreachable", 1),
            ("ip6_prohibit", 1),
            ("ip6_blackhole", 1),
            ("ip6_packet_too_big", 1),
            ("icmp_errors", 5),
        ])
    );
    // Never about an ICMPv6 error, nor to a multicast source's packet.
    let err = error6(HOST6, "2001:db9::1", 1, 0, 0, &noroute);
    let res = run(&mut core, &[from_host6(&err)], 0);
    assert_eq!(res[0].0, Out::Drop);
    assert_eq!(counters(core.stats())["icmp_suppressed"], 1);
}

#[test]
fn scope_and_bad_headers_are_named_drops() {
    let mut ctl = router6();
    let mut core = core(&mut ctl);
    // A link-local source may not leave its link: beyond scope, back to the
    // MAC it came from.
    let ll = udp6("fe80::55", "2001:db8:100::5", 64, 7, 16);
    let res = run(&mut core, &[from_host6(&ll)], 0);
    let err = error6(R0_LL, "fe80::55", 1, 2, 0, &ll);
    assert_eq!(
        res[0],
        (Out::Tx(0), eth(HOST, mac_r(0), None, ETH_IP6, &err))
    );
    let mut bad_version = udp6(HOST6, "2001:db8:100::5", 64, 7, 16);
    bad_version[0] = 0x40;
    let mut too_long = udp6(HOST6, "2001:db8:100::5", 64, 7, 16);
    too_long[5] += 1;
    let cases: Vec<Vec<u8>> = vec![
        vec![0x60; 39],
        bad_version,
        too_long,
        udp6("ff02::1", "2001:db8:100::5", 64, 7, 16),
        udp6(HOST6, "::1", 64, 7, 16),
        udp6(HOST6, "fe80::77", 64, 7, 16),
        udp6(HOST6, "ff0e::1", 64, 7, 16),
        udp6(HOST6, "ff02::5", 64, 7, 16),
        udp6("::", "2001:db8:100::5", 64, 7, 16),
    ];
    let res = run(
        &mut core,
        &cases.iter().map(|p| from_host6(p)).collect::<Vec<_>>(),
        0,
    );
    assert!(res.iter().all(|r| r.0 == Out::Drop), "{res:?}");
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("ip6_beyond_scope", 1),
            ("icmp_errors", 1),
            ("ip6_truncated", 1),
            ("ip6_bad_version", 1),
            ("ip6_bad_length", 1),
            ("ip6_martian", 3),
            ("ip6_link_local", 1),
            ("ip6_multicast", 2),
        ])
    );
}

/// A neighbour solicitation for `target` from `src` (with its MAC as the source
/// link-layer option unless unspecified), to the target's solicited-node group.
fn ns(src: &str, mac: [u8; 6], target: &str, hl: u8) -> Vec<u8> {
    let t = a6(target).octets();
    let group = format!("ff02::1:ff{:02x}:{:02x}{:02x}", t[13], t[14], t[15]);
    let mut body = vec![0; 4];
    body.extend(t);
    if src != "::" {
        body.extend([1, 1]);
        body.extend(mac);
    }
    icmp6(src, &group, hl, 135, 0, &body)
}

/// A neighbour advertisement for `target` (flags R S O as given) with its MAC.
fn na(src: &str, dst: &str, flags: u8, target: &str, mac: [u8; 6]) -> Vec<u8> {
    let mut body = vec![flags, 0, 0, 0];
    body.extend(a6(target).octets());
    body.extend([2, 1]);
    body.extend(mac);
    icmp6(src, dst, 255, 136, 0, &body)
}

fn group_mac(target: &str) -> [u8; 6] {
    let t = a6(target).octets();
    [0x33, 0x33, 0xff, t[13], t[14], t[15]]
}

#[test]
fn solicitations_for_our_addresses_are_answered_and_their_senders_learned() {
    let mut ctl = router6();
    let mut core = core(&mut ctl);
    let mac = [2, 0, 0, 0, 0, 0x77];
    let frame = eth(
        group_mac(R0),
        mac,
        None,
        ETH_IP6,
        &ns("2001:db8:1::7", mac, R0, 255),
    );
    let res = run(&mut core, &[frame], 0);
    let answer = na(R0, "2001:db8:1::7", 0xe0, R0, mac_r(0));
    assert_eq!(
        res[0],
        (Out::Tx(0), eth(mac, mac_r(0), None, ETH_IP6, &answer))
    );
    assert_eq!(ctl.poll(), 1);
    assert_eq!(ctl.neighbors6().get(&(1, a6("2001:db8:1::7"))), Some(&mac));
    // Duplicate address detection (from ::) is answered to all nodes, S clear.
    let dad = eth(
        group_mac(R0_LL),
        mac,
        None,
        ETH_IP6,
        &ns("::", mac, R0_LL, 255),
    );
    let res = run(&mut core, &[dad], 0);
    let answer = na(R0_LL, "ff02::1", 0xa0, R0_LL, mac_r(0));
    let all_nodes = [0x33, 0x33, 0, 0, 0, 1];
    assert_eq!(
        res[0],
        (Out::Tx(0), eth(all_nodes, mac_r(0), None, ETH_IP6, &answer))
    );
    // Not ours, or not valid (hop limit 64, a bad checksum): ignored.
    let mut bad_sum = ns("2001:db8:1::7", mac, R0, 255);
    bad_sum[42] ^= 1;
    let res = run(
        &mut core,
        &[
            ns("2001:db8:1::7", mac, "2001:db8:1::9", 255),
            ns("2001:db8:1::7", mac, R0, 64),
            bad_sum,
        ]
        .map(|p| eth(group_mac(R0), mac, None, ETH_IP6, &p)),
        0,
    );
    assert!(res.iter().all(|r| r.0 == Out::Drop));
    assert_eq!(
        counters(core.stats()),
        expect(&[("nd_replies", 2), ("nd_ignored", 3)])
    );
}

#[test]
fn unresolved_next_hops_are_solicited_and_their_packets_held() {
    let mut ctl = router6();
    let mut core = core(&mut ctl);
    // 2001:db8:2::9 is on port 1's subnet and never heard from.
    let ip = udp6(HOST6, "2001:db8:2::9", 64, 7, 16);
    let res = run(&mut core, &vec![from_host6(&ip); 3], 0);
    let ask = ns("2001:db8:2::1", mac_r(1), "2001:db8:2::9", 255);
    assert_eq!(
        res[0],
        (
            Out::Tx(1),
            eth(group_mac("2001:db8:2::9"), mac_r(1), None, ETH_IP6, &ask)
        )
    );
    assert!(res[1..].iter().all(|r| r.0 == Out::Drop));
    assert_eq!(core.holding(), 3);
    let mac = [2, 0, 0, 0, 1, 9];
    let reply = na("2001:db8:2::9", "2001:db8:2::1", 0x60, "2001:db8:2::9", mac);
    let res = run(&mut core, &[eth(mac_r(1), mac, None, ETH_IP6, &reply)], 1);
    assert_eq!(res[0].0, Out::Drop);
    assert_eq!(ctl.poll(), 1);
    assert_eq!(core.held_ready(), 3);
    let mut pkts: Vec<VecPacket> = (0..3).map(|_| VecPacket::new(&[], 0)).collect();
    let mut out = vec![Out::Drop; 3];
    assert_eq!(core.release(&mut pkts, &mut out), 3);
    let want = eth(mac, mac_r(1), None, ETH_IP6, &with_hl(&ip, 63));
    for (o, p) in out.iter().zip(&pkts) {
        assert_eq!((*o, p.data().to_vec()), (Out::Tx(1), want.clone()));
    }
    // Now it has a host route: straight through.
    let res = run(&mut core, &[from_host6(&ip)], 0);
    assert_eq!(res[0], (Out::Tx(1), want));
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("held", 3),
            ("hold_released", 3),
            ("nd_requests", 1),
            ("nd_consumed", 1)
        ])
    );
    // An incomplete link-local gateway is solicited from the link-local address.
    ctl.del_neighbor6(2, a6(N1_LL)).unwrap();
    ctl.set_neighbor6(2, a6("fe80::2:98"), mac_n(1)).unwrap();
    ctl.route_add(
        0,
        p6("2001:db8:300::/48"),
        RouteKind::Paths(vec![Path::gateway6(a6("fe80::2:77"), 2)]),
    )
    .unwrap();
    let ip = udp6(HOST6, "2001:db8:300::1", 64, 7, 16);
    let res = run(&mut core, &[from_host6(&ip)], 0);
    let ask = ns(R0_LL, mac_r(1), "fe80::2:77", 255);
    assert_eq!(
        res[0],
        (
            Out::Tx(1),
            eth(group_mac("fe80::2:77"), mac_r(1), None, ETH_IP6, &ask)
        )
    );
}

#[test]
fn echo_requests_to_our_addresses_are_answered() {
    let mut ctl = router6();
    let mut core = core(&mut ctl);
    let body = [0x12, 0x34, 0, 1, b'a', b'b'];
    let req = icmp6(HOST6, R0, 64, 128, 0, &body);
    let ll_req = icmp6("fe80::55", R0_LL, 64, 128, 0, &body);
    let res = run(&mut core, &[from_host6(&req), from_host6(&ll_req)], 0);
    let reply = icmp6(R0, HOST6, 64, 129, 0, &body);
    let ll_reply = icmp6(R0_LL, "fe80::55", 64, 129, 0, &body);
    assert_eq!(
        res[0],
        (Out::Tx(0), eth(HOST, mac_r(0), None, ETH_IP6, &reply))
    );
    assert_eq!(
        res[1],
        (Out::Tx(0), eth(HOST, mac_r(0), None, ETH_IP6, &ll_reply))
    );
    // Anything else for the router, with no host stack behind it: dropped.
    let tcp = ip6(HOST6, R0, 64, 6, &[0; 20]);
    let res = run(&mut core, &[from_host6(&tcp)], 0);
    assert_eq!(res[0].0, Out::Drop);
    assert_eq!(
        counters(core.stats()),
        expect(&[("echo_replies", 2), ("local_unhandled", 1)])
    );
}

#[test]
fn replies_that_meet_a_reject_route_are_dropped_by_its_name() {
    let mut ctl = router6();
    for (p, kind) in [
        ("2001:db8:26::/48", RouteKind::Unreachable),
        ("2001:db8:27::/48", RouteKind::Prohibit),
        ("2001:db8:28::/48", RouteKind::Blackhole),
    ] {
        ctl.route_add(0, p6(p), kind).unwrap();
    }
    let mut core = core(&mut ctl);
    let body = [0x12, 0x34, 0, 1];
    for src in [
        "2001:db8:26::5",
        "2001:db8:27::5",
        "2001:db8:28::5",
        "3fff::5",
    ] {
        let req = from_host6(&icmp6(src, R0, 64, 128, 0, &body));
        assert_eq!(run(&mut core, &[req], 0)[0].0, Out::Drop, "{src}");
    }
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("echo_replies", 4),
            ("ip6_unreachable", 1),
            ("ip6_prohibit", 1),
            ("ip6_blackhole", 1),
            ("ip6_no_route", 1)
        ])
    );
}

#[test]
fn ecmp_spreads_ipv6_flows() {
    let mut ctl = router6();
    ctl.set_neighbor6(3, a6("fe80::3:99"), mac_n(2)).unwrap();
    ctl.route_add(
        0,
        p6("2001:db8:400::/48"),
        RouteKind::Paths(vec![
            Path::gateway6(a6(N1_LL), 2),
            Path::gateway6(a6("fe80::3:99"), 3),
        ]),
    )
    .unwrap();
    let mut core = core(&mut ctl);
    let frames: Vec<Vec<u8>> = (0..256)
        .map(|i| from_host6(&udp6(HOST6, "2001:db8:400::1", 64, 2000 + i, 8)))
        .collect();
    let res = run(&mut core, &frames, 0);
    let on1 = res.iter().filter(|r| r.0 == Out::Tx(1)).count();
    let on2 = res.iter().filter(|r| r.0 == Out::Tx(2)).count();
    assert_eq!(on1 + on2, 256);
    assert!((96..=160).contains(&on1), "{on1} of 256 on port 1");
    // A flow stays on its leg.
    let again = run(&mut core, &frames, 0);
    assert!(res.iter().zip(&again).all(|(a, b)| a.0 == b.0));
}

#[test]
fn a_reply_to_an_unresolved_host_solicits_it_and_goes_once_it_answers() {
    let mut ctl = router6();
    let mut core = core(&mut ctl);
    // 2001:db8:1::7 pings the router without having been heard from.
    let body = [0, 7, 0, 1];
    let req = icmp6("2001:db8:1::7", R0, 64, 128, 0, &body);
    let mac = [2, 0, 0, 0, 0, 0x77];
    let res = run(&mut core, &[eth(mac_r(0), mac, None, ETH_IP6, &req)], 0);
    let ask = ns(R0, mac_r(0), "2001:db8:1::7", 255);
    assert_eq!(
        res[0],
        (
            Out::Tx(0),
            eth(group_mac("2001:db8:1::7"), mac_r(0), None, ETH_IP6, &ask)
        )
    );
    assert_eq!(core.holding(), 1);
    let answer = na("2001:db8:1::7", R0, 0x60, "2001:db8:1::7", mac);
    run(&mut core, &[eth(mac_r(0), mac, None, ETH_IP6, &answer)], 0);
    assert_eq!(ctl.poll(), 1);
    assert_eq!(core.held_ready(), 1);
    let mut pkts = vec![VecPacket::new(&[], 0)];
    let mut out = vec![Out::Drop];
    assert_eq!(core.release(&mut pkts, &mut out), 1);
    let reply = icmp6(R0, "2001:db8:1::7", 64, 129, 0, &body);
    assert_eq!(
        (out[0], pkts[0].data().to_vec()),
        (Out::Tx(0), eth(mac, mac_r(0), None, ETH_IP6, &reply))
    );
}

#[test]
fn learned_ipv6_neighbours_age_as_arp_ones() {
    use dataplane::router::NeighborAging;
    use std::time::{Duration, Instant};
    let mut ctl = router6();
    let mut core = core(&mut ctl);
    let mac = [2, 0, 0, 0, 0, 0x77];
    let nb = "2001:db8:1::7";
    let solicit = eth(group_mac(R0), mac, None, ETH_IP6, &ns(nb, mac, R0, 255));
    run(&mut core, std::slice::from_ref(&solicit), 0);
    assert_eq!(ctl.poll(), 1);
    let t0 = Instant::now();
    let aging = NeighborAging {
        reachable: Duration::from_secs(60),
        probe_every: Duration::from_secs(1),
        probes: 2,
    };
    let at = |s: u64| t0 + Duration::from_secs(s);
    assert!(ctl.age_neighbors(at(59), &aging).is_empty());
    // A unicast solicitation to the MAC it has, from the router's address.
    let probes = ctl.age_neighbors(at(61), &aging);
    assert_eq!(probes.len(), 1);
    let mut body = vec![0; 4];
    body.extend(a6(nb).octets());
    body.extend([1, 1]);
    body.extend(mac_r(0));
    let want = eth(
        mac,
        mac_r(0),
        None,
        ETH_IP6,
        &icmp6(R0, nb, 255, 135, 0, &body),
    );
    assert_eq!((probes[0].port, probes[0].frame.clone()), (0, want));
    // Silent: a second probe, then forgotten (with its host route).
    assert_eq!(ctl.age_neighbors(at(62), &aging).len(), 1);
    assert!(ctl.neighbors6().contains_key(&(1, a6(nb))));
    assert!(ctl.age_neighbors(at(63), &aging).is_empty());
    assert!(!ctl.neighbors6().contains_key(&(1, a6(nb))));
    // Configured ones never age.
    ctl.set_static_neighbor6(1, a6(nb), mac).unwrap();
    run(&mut core, &[solicit], 0);
    ctl.poll();
    assert!(ctl.age_neighbors(at(1 << 20), &aging).is_empty());
    assert!(ctl.is_static_neighbor6(1, a6(nb)));
}

/// [`router6`] as a PE and LSR for IPv6 over MPLS: label 303 pops into the
/// global table's IPv6 half, 304 into the global table by the payload's
/// version, 102 is popped at the penultimate hop towards port 2, 100 swapped to
/// 200 towards port 1; 6PE: 2001:db8:200::/48 via the IPv4 next hop 192.0.2.1
/// (an LSP with label 1000 through port 1's neighbour) with label 600.
fn pe6() -> RouterControl {
    let mut ctl = router6();
    let adj1 = ctl.adjacency(2, a("10.2.0.2")).unwrap();
    let adj2 = ctl.adjacency(3, a("10.3.0.2")).unwrap();
    ctl.label_add(303, true, LabelAction::ip6_lookup(0))
        .unwrap();
    ctl.label_add(304, true, LabelAction::ip_lookup(mpls::RX_TABLE))
        .unwrap();
    ctl.label_add(102, true, LabelAction::php(adj2)).unwrap();
    ctl.label_add(100, true, LabelAction::swap(adj1, &[200]))
        .unwrap();
    route(&mut ctl, "192.0.2.0/24", &["10.2.0.2"], &[1000]);
    ctl.route_add(
        0,
        p6("2001:db8:200::/48"),
        RouteKind::Paths(vec![Path::gateway(a("192.0.2.1")).with_labels(&[600])]),
    )
    .unwrap();
    ctl
}

/// Cores of `ctl` with the fast path on and off.
fn both_paths(ctl: &mut RouterControl) -> [(bool, Core); 2] {
    [true, false].map(|fast_path| {
        let cfg = CoreConfig {
            fast_path,
            ..core_cfg()
        };
        (fast_path, ctl.new_core(cfg, tsc_hz()).0)
    })
}

/// RFC 3032 §2.1: label 2 at the bottom of the stack is popped and the IPv6
/// payload looked up in the receiving interface's table, the label TTL its hop
/// limit (uniform), then one IPv6 hop; above another label it is popped and the
/// label under it switched.
#[test]
fn ip6_explicit_null_pops_into_the_receiving_interfaces_table() {
    let mut ctl = pe6();
    let ip = udp6(HOST6, "2001:db8:100::5", 64, 1000, 32);
    for (fast_path, mut core) in both_paths(&mut ctl) {
        let res = run(&mut core, &vec![from_host_mpls(&[(2, 30)], &ip); N], 0);
        assert_all_tx(&res, 1, |_| {
            eth(mac_n(1), mac_r(1), None, ETH_IP6, &with_hl(&ip, 29))
        });
        let res = run(
            &mut core,
            &vec![from_host_mpls(&[(2, 30), (303, 30)], &ip); 3],
            0,
        );
        assert_all_tx(&res, 1, |_| {
            eth(mac_n(1), mac_r(1), None, ETH_IP6, &with_hl(&ip, 29))
        });
        assert_eq!(counters(core.stats()), expect(&[]), "fast path {fast_path}");
        assert_eq!(core.stats().ifaces[2].tx_pkts.get(), N as u64 + 3);
    }
}

/// The egress PE of 6PE/6VPE: the label pops into an IPv6 lookup in the same
/// pass (uniform TTL: the label's becomes the hop limit, then the IPv6 hop takes
/// one); an entry that looks up by the version takes IPv4 and IPv6 alike.
#[test]
fn pe_egress_pops_into_ip6_lookup_in_the_same_pass() {
    let mut ctl = pe6();
    let ips: Vec<Vec<u8>> = (0..N)
        .map(|i| udp6(HOST6, "2001:db8:100::5", 64, 1000 + i as u16, 40))
        .collect();
    for (fast_path, mut core) in both_paths(&mut ctl) {
        for label in [303, 304] {
            let frames: Vec<Vec<u8>> = ips
                .iter()
                .enumerate()
                .map(|(i, p)| from_host_mpls(&[(label, 2 + (i % 200) as u8)], p))
                .collect();
            let res = run(&mut core, &frames, 0);
            assert_all_tx(&res, 1, |i| {
                eth(
                    mac_n(1),
                    mac_r(1),
                    None,
                    ETH_IP6,
                    &with_hl(&ips[i], 1 + (i % 200) as u8),
                )
            });
        }
        // IPv4 under the entry that reads the version.
        let ip4 = host_ip(3, [198, 18], 64, 60);
        route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
        let mut core = if fast_path {
            core
        } else {
            ctl.new_core(
                CoreConfig {
                    fast_path,
                    ..core_cfg()
                },
                tsc_hz(),
            )
            .0
        };
        let res = run(&mut core, &[from_host_mpls(&[(304, 30)], &ip4)], 0);
        assert_all_tx(&res, 1, |_| {
            eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip4, 29))
        });
        assert_eq!(counters(core.stats()), expect(&[]), "fast path {fast_path}");
    }
}

/// The penultimate hop pops the bottom label off an IPv6 payload and sends it
/// as IPv6 (EtherType 0x86dd), its hop limit the label TTL less one (uniform).
#[test]
fn php_sends_the_payload_as_ip6() {
    let mut ctl = pe6();
    let ips: Vec<Vec<u8>> = (0..N)
        .map(|i| udp6(HOST6, "2001:db8:100::5", 64, 1000 + i as u16, 40))
        .collect();
    for (fast_path, mut core) in both_paths(&mut ctl) {
        let frames: Vec<Vec<u8>> = ips
            .iter()
            .enumerate()
            .map(|(i, p)| from_host_mpls(&[(102, 2 + (i % 100) as u8)], p))
            .collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 2, |i| {
            eth(
                mac_n(2),
                mac_r(2),
                None,
                ETH_IP6,
                &with_hl(&ips[i], 1 + (i % 100) as u8),
            )
        });
        assert_eq!(counters(core.stats()), expect(&[]), "fast path {fast_path}");
        assert_eq!(stage(&core, Stage::Ip6Lookup), (0, 0));
    }
}

/// 6PE ingress (RFC 4798): an IPv6 route via an IPv4 next hop takes the LSP's
/// label from the IPv4 route that reaches it, with the 6PE label under it; both
/// go on with the hop limit less one (uniform), the payload's hop limit too.
#[test]
fn six_pe_pushes_the_lsp_label_over_the_6pe_label() {
    let mut ctl = pe6();
    let ips: Vec<Vec<u8>> = (0..N)
        .map(|i| {
            udp6(
                HOST6,
                "2001:db8:200::9",
                2 + (i % 250) as u8,
                1000 + i as u16,
                40,
            )
        })
        .collect();
    for (fast_path, mut core) in both_paths(&mut ctl) {
        let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host6(p)).collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 1, |i| {
            let hl = ips[i][7] - 1;
            eth(
                mac_n(1),
                mac_r(1),
                None,
                ETH_MPLS,
                &labelled(&[(1000, hl), (600, hl)], &with_hl(&ips[i], hl)),
            )
        });
        assert_eq!(counters(core.stats()), expect(&[]), "fast path {fast_path}");
    }
}

/// Checks the ICMPv6 time exceeded a P router sent about `orig` (received under
/// `stack`), from `from` back to its source: every field of the IPv6 header, the
/// ICMPv6 header with the RFC 4884 length in 64-bit words, the quote padded to
/// 128 bytes, the RFC 4950 extension (version 2, its checksum, one object of
/// class 1, C-Type 1 holding the stack as received), and the checksum over the
/// pseudo-header, with the wire crate's views and summed from scratch here.
fn check_time_exceeded6(ip: &[u8], from: Ipv6Addr, orig: &[u8], stack: &[(u32, u8)]) {
    use wire::{IcmpExtHeader, IcmpExtObject, Icmpv6Message, Icmpv6Packet, Ipv6Packet};
    let h = Ipv6Packet::new_checked(ip).unwrap();
    let depth = stack.len();
    let icmp_len = 8 + 128 + 4 + 4 + 4 * depth;
    assert_eq!(h.version(), 6);
    assert_eq!(h.traffic_class(), 0);
    assert_eq!(h.flow_label(), 0);
    assert_eq!(usize::from(h.payload_len()), icmp_len);
    assert_eq!(ip.len(), 40 + icmp_len);
    assert_eq!(h.next_header(), wire::IpProtocol::Icmpv6);
    assert_eq!(h.src_addr(), from);
    assert_eq!(h.dst_addr(), a6(HOST6));
    let icmp = &ip[40..];
    let p = Icmpv6Packet::new_checked(icmp).unwrap();
    assert_eq!(p.msg_type(), Icmpv6Message::TimeExceeded);
    assert_eq!(p.msg_code(), 0);
    assert!(p.verify_checksum(from, a6(HOST6)));
    let mut zeroed = icmp.to_vec();
    zeroed[2..4].fill(0);
    assert_eq!(p.checksum(), csum6(from, a6(HOST6), 58, &zeroed));
    assert_eq!(icmp[4], 16, "RFC 4884 length: 128 bytes in 64-bit words");
    assert_eq!(&icmp[5..8], &[0, 0, 0]);
    let q = orig.len().min(128);
    assert_eq!(&icmp[8..8 + q], &orig[..q]);
    assert!(icmp[8 + q..136].iter().all(|&b| b == 0));
    let e = IcmpExtHeader::new_checked(&icmp[136..]).unwrap();
    assert_eq!(e.version(), 2);
    assert!(e.verify_checksum());
    let o = IcmpExtObject::new_checked(e.objects()).unwrap();
    assert_eq!(usize::from(o.length()), 4 + 4 * depth);
    assert_eq!((o.class_num(), o.c_type()), (1, 1));
    assert_eq!(o.payload(), &labelled(stack, &[])[..]);
}

/// RFC 4950 with an IPv6 payload: a label TTL that runs out at a P router (6PE
/// traffic in an IPv4 core) is answered with ICMPv6 time exceeded carrying the
/// label stack, sent on along the LSP (swapped like the packet: label 200, TTL
/// 64 less one) to the egress, which routes it back; at the penultimate hop it
/// leaves as IPv6. The source is the receiving interface's IPv6 address, or,
/// where it has none, its IPv4 address as an IPv4-mapped one.
#[test]
fn ttl_expiry_inside_an_lsp_sends_icmp6_with_the_label_stack_along_it() {
    let ips: Vec<Vec<u8>> = (0..N)
        .map(|i| udp6(HOST6, "2001:db8:100::5", 64, 1000 + i as u16, 20 + i))
        .collect();
    for (v6_addr, from) in [(true, a6(R0)), (false, a6("::ffff:10.1.0.1"))] {
        let mut ctl = if v6_addr {
            pe6()
        } else {
            let mut c = router();
            let adj1 = c.adjacency(2, a("10.2.0.2")).unwrap();
            let adj2 = c.adjacency(3, a("10.3.0.2")).unwrap();
            c.label_add(100, true, LabelAction::swap(adj1, &[200]))
                .unwrap();
            c.label_add(102, true, LabelAction::php(adj2)).unwrap();
            c
        };
        for (fast_path, mut core) in both_paths(&mut ctl) {
            let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host_mpls(&[(100, 1)], p)).collect();
            let res = run(&mut core, &frames, 0);
            for (i, (o, f)) in res.iter().enumerate() {
                assert_eq!(*o, Out::Tx(1), "packet {i} fast path {fast_path}");
                assert_eq!(&f[..14], &eth(mac_n(1), mac_r(1), None, ETH_MPLS, &[])[..]);
                assert_eq!(&f[14..18], &lse(200, true, 63));
                check_time_exceeded6(&f[18..], from, &ips[i], &[(100, 1)]);
            }
            let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host_mpls(&[(102, 1)], p)).collect();
            let res = run(&mut core, &frames, 0);
            for (i, (o, f)) in res.iter().enumerate() {
                assert_eq!(*o, Out::Tx(2), "packet {i}");
                assert_eq!(&f[..14], &eth(mac_n(2), mac_r(2), None, ETH_IP6, &[])[..]);
                // (uniform: the reply's label TTL 64 less one is its hop limit)
                let mut ip = f[14..].to_vec();
                assert_eq!(ip[7], 63);
                ip[7] = 64;
                check_time_exceeded6(&ip, from, &ips[i], &[(102, 1)]);
            }
            assert_eq!(
                counters(core.stats()),
                expect(&[("icmp_errors", 2 * N as u64)]),
                "fast path {fast_path}"
            );
        }
    }
}

/// The egress PE of 6PE over an IPv4 core: a label TTL of 1 reaches the pop
/// (transport label and 6PE label, or the 6PE label alone after PHP), the hop
/// limit it becomes runs out at the IPv6 hop, and the ICMPv6 time exceeded
/// comes from the receiving interface's IPv4 address IPv4-mapped (it has no
/// IPv6 address), as a P router's does, routed back to the source by 6PE
/// (the router's own packet: hop limit and label TTLs 64).
#[test]
fn hop_limit_expiry_at_a_6pe_pop_is_answered_from_the_ipv4_mapped_address() {
    let mut ctl = router();
    ctl.label_add(
        100,
        false,
        LabelAction::Pop {
            ttl_mode: mpls::TtlMode::Uniform,
        },
    )
    .unwrap();
    ctl.label_add(600, true, LabelAction::ip6_lookup(0))
        .unwrap();
    route(&mut ctl, "192.0.2.0/24", &["10.2.0.2"], &[1000]);
    for (prefix, label) in [("2001:db8:1::/64", 603), ("2001:db8:100::/48", 700)] {
        ctl.route_add(
            0,
            p6(prefix),
            RouteKind::Paths(vec![Path::gateway(a("192.0.2.1")).with_labels(&[label])]),
        )
        .unwrap();
    }
    let ip = udp6(HOST6, "2001:db8:100::5", 60, 1000, 24);
    let from = "::ffff:10.1.0.1";
    for (fast_path, mut core) in both_paths(&mut ctl) {
        for stack in [&[(100, 1), (600, 3)][..], &[(600, 1)]] {
            let res = run(&mut core, &[from_host_mpls(stack, &ip)], 0);
            let err = error6(from, HOST6, 3, 0, 0, &with_hl(&ip, 1));
            assert_eq!(
                res[0],
                (
                    Out::Tx(1),
                    eth(
                        mac_n(1),
                        mac_r(1),
                        None,
                        ETH_MPLS,
                        &labelled(&[(1000, 64), (603, 64)], &err)
                    )
                ),
                "fast path {fast_path}, stack {stack:?}"
            );
        }
        assert_eq!(
            counters(core.stats()),
            expect(&[("ip6_hop_limit_expired", 2), ("icmp_errors", 2)]),
            "fast path {fast_path}"
        );
    }
}

/// A labelled IPv6 packet too big for the next hop after the swap (or PHP) is
/// answered with ICMPv6 packet too big (the MTU left under the outgoing
/// stack) behind the outgoing stack, along the LSP; IPv6 is never fragmented.
#[test]
fn switched_ip6_too_big_for_the_link_gets_packet_too_big_along_the_lsp() {
    use wire::{Icmpv6Message, Icmpv6Packet, Ipv6Packet};
    let mut ctl = pe6();
    let big = udp6(HOST6, "2001:db8:100::5", 64, 1000, 1600);
    for (fast_path, mut core) in both_paths(&mut ctl) {
        for (label, port, depth) in [(100u32, 1u16, 1usize), (102, 2, 0)] {
            let res = run(&mut core, &[from_host_mpls(&[(label, 30)], &big)], 0);
            assert_eq!(res[0].0, Out::Tx(port), "fast path {fast_path}");
            let f = &res[0].1;
            let ip = if depth == 1 {
                assert_eq!(&f[12..14], &[0x88, 0x47]);
                assert_eq!(&f[14..18], &lse(200, true, 64));
                &f[18..]
            } else {
                assert_eq!(&f[12..14], &[0x86, 0xdd]);
                &f[14..]
            };
            let h = Ipv6Packet::new_checked(ip).unwrap();
            assert_eq!(h.src_addr(), a6(R0));
            assert_eq!(h.dst_addr(), a6(HOST6));
            let icmp = &ip[40..40 + usize::from(h.payload_len())];
            let p = Icmpv6Packet::new_checked(icmp).unwrap();
            assert_eq!(p.msg_type(), Icmpv6Message::PktTooBig);
            assert_eq!(p.mtu(), 1500 - 4 * depth as u32);
            assert!(p.verify_checksum(a6(R0), a6(HOST6)));
            // As much of the packet as fits in the IPv6 minimum MTU (RFC 4443
            // §2.4(c)).
            assert_eq!(ip.len(), 1280);
            // (at the penultimate hop the packet quoted is the one popped:
            // its hop limit the label TTL less one)
            let sent = if depth == 0 {
                with_hl(&big, 29)
            } else {
                big.clone()
            };
            assert_eq!(&icmp[8..], &sent[..icmp.len() - 8]);
        }
        assert_eq!(
            counters(core.stats()),
            expect(&[("icmp_errors", 2), ("mpls_mtu_exceeded", 2)]),
            "fast path {fast_path}"
        );
    }
}
