//! The decoder's tests: messages built byte by byte as the kernel and zebra send
//! them, each to its change, and random bytes to no panic.

use super::*;
use proptest::collection::vec as pvec;
use proptest::prelude::*;
use proptest::sample::{Index, select};

// A small netlink byte builder, independent of the crate's emitter.
type R = Result<Msg, DecodeError>;
type B = Vec<u8>;
const P: &str = "10.1.2.0/24";
const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

fn pad(mut v: B) -> B {
    v.resize(align4(v.len()), 0);
    v
}
/// One attribute (length without padding, value padded).
fn a(kind: u16, v: &[u8]) -> B {
    let len = (4 + v.len()) as u16;
    pad([&len.to_ne_bytes()[..], &kind.to_ne_bytes(), v].concat())
}
fn a32(kind: u16, v: u32) -> B {
    a(kind, &v.to_ne_bytes())
}
fn nest(kind: u16, parts: &[B]) -> B {
    a(kind | 0x8000, &parts.concat())
}
/// nlmsghdr (flags 0, seq 1, pid 0) + header struct + attributes.
fn msg(kind: u16, hdr: &[u8], attrs: &[B]) -> B {
    let body = [pad(hdr.to_vec()), attrs.concat()].concat();
    let len = (16 + body.len()) as u32;
    let h = [len.to_ne_bytes(), [0; 4], 1u32.to_ne_bytes(), [0; 4]].concat();
    [&h[..4], &kind.to_ne_bytes(), &h[6..], &body].concat()
}
fn v4(s: &str) -> [u8; 4] {
    s.parse::<Ipv4Addr>().unwrap().octets()
}
fn v6(s: &str) -> [u8; 16] {
    s.parse::<Ipv6Addr>().unwrap().octets()
}
/// struct rtmsg (src_len, tos, scope 0).
fn rt(family: u8, dst_len: u8, table: u8, proto: u8, rtype: u8, flags: u32) -> B {
    let h = [family, dst_len, 0, 0, table, proto, 0, rtype];
    [&h[..], &flags.to_ne_bytes()].concat()
}
/// A BIRD-style IPv4 route header for a /24 in main.
fn inet(rtype: u8, flags: u32) -> B {
    rt(AF_INET, 24, 254, 12, rtype, flags)
}
/// RTM_NEWROUTE, unicast, BIRD, main, 10.1.2.0/24, and `attrs`.
fn uni(attrs: &[B]) -> B {
    msg(24, &inet(1, 0), &[&[dst()][..], attrs].concat())
}
fn dst() -> B {
    a(1, &v4("10.1.2.0"))
}
fn gw(s: &str) -> B {
    a(5, &v4(s))
}
fn oif(i: u32) -> B {
    a32(4, i)
}
fn via(family: u16, addr: &[u8]) -> B {
    a(18, &[&family.to_ne_bytes()[..], addr].concat())
}
/// struct rtnexthop and its attributes.
fn rtnh(flags: u8, hops: u8, ifindex: u32, attrs: &[B]) -> B {
    let attrs = attrs.concat();
    let len = (8 + attrs.len()) as u16;
    let h = [len.to_ne_bytes(), [flags, hops]].concat();
    [h, ifindex.to_ne_bytes().to_vec(), attrs].concat()
}
fn multipath(hops: &[B]) -> B {
    a(9, &hops.concat())
}
/// Label stack entries, TTL 64, S bit on the last.
fn lse(labels: &[u32]) -> B {
    let s = |i: usize| u32::from(i + 1 == labels.len()) << 8;
    let e = labels.iter().enumerate();
    let f = |(i, l): (usize, &u32)| (l << 12 | s(i) | 64).to_be_bytes();
    e.flat_map(f).collect()
}
/// RTA_ENCAP (nested MPLS_IPTUNNEL_DST) then RTA_ENCAP_TYPE = MPLS.
fn encap(labels: &[u32]) -> B {
    [nest(22, &[a(1, &lse(labels))]), a(21, &1u16.to_ne_bytes())].concat()
}
fn nhmsg(family: u8, flags: u32) -> B {
    [&[family, 0, 4, 0][..], &flags.to_ne_bytes()].concat()
}
fn ifinfo(ifindex: u32, flags: u32) -> B {
    let i = [[0, 0, 1, 0], ifindex.to_ne_bytes(), flags.to_ne_bytes()];
    [i.concat(), vec![0; 4]].concat()
}
fn ifaddr(family: u8, len: u8, ifindex: u32) -> B {
    [&[family, len, 0, 0][..], &ifindex.to_ne_bytes()].concat()
}
fn ndmsg(family: u8, state: u16, flags: u8, ntype: u8) -> B {
    let f = [[family, 0, 0, 0], 3u32.to_ne_bytes()].concat(); // ifindex 3
    [&f[..], &state.to_ne_bytes(), &[flags, ntype]].concat()
}

// Expected values.
fn one(b: &[u8]) -> R {
    let mut v = messages(b);
    assert_eq!(v.len(), 1, "{v:?}");
    v.remove(0)
}
fn hop(gw: &str, ifindex: u32, weight: u16, labels: &[u32]) -> NextHop {
    NextHop {
        gateway: (!gw.is_empty()).then(|| gw.parse().unwrap()),
        ifindex: (ifindex != 0).then_some(ifindex),
        weight,
        onlink: false,
        labels: labels.to_vec(),
    }
}
fn onlink(h: NextHop) -> NextHop {
    NextHop { onlink: true, ..h }
}
fn ok(c: Change) -> R {
    Ok(Msg::Change(c))
}
fn r(table: u32, p: &str, route: Option<Target>) -> R {
    let prefix = p.parse().unwrap();
    let c = Change::Route {
        table,
        prefix,
        metric: 0,
        route,
    };
    ok(c)
}
/// 10.1.2.0/24 in main over `hops`.
fn p4(hops: Vec<NextHop>) -> R {
    r(254, P, Some(Target::Paths(hops)))
}
fn label(label: u32, route: Option<Vec<NextHop>>) -> R {
    ok(Change::Label { label, route })
}
fn nho(id: u32, nh: Option<NexthopObject>) -> R {
    ok(Change::Nexthop { id, nh })
}
fn malformed(what: &'static str, detail: &str) -> R {
    let detail = detail.into();
    Err(DecodeError::Malformed { what, detail })
}

#[test]
fn single_gateway_route() {
    // Host bits in RTA_DST are cleared; RTA_PRIORITY is the metric.
    let attrs = [a32(15, 254), a(1, &v4("10.1.2.3")), a32(6, 32)];
    let m = msg(
        24,
        &inet(1, 0),
        &[&attrs[..], &[gw("192.0.2.1"), oif(3)]].concat(),
    );
    let mut want = p4(vec![hop("192.0.2.1", 3, 1, &[])]);
    if let Ok(Msg::Change(Change::Route { metric, .. })) = &mut want {
        *metric = 32;
    }
    assert_eq!(one(&m), want);
    // This shape is read in place (see plain_route_equals_general).
    assert_eq!(plain_route(&m[16..], true), Some(want));
}

#[test]
fn device_route_and_default_route() {
    assert_eq!(one(&uni(&[oif(5)])), p4(vec![hop("", 5, 1, &[])]));
    let m = msg(24, &rt(AF_INET, 0, 254, 4, 1, 0), &[gw("192.0.2.1")]);
    let want = Some(Target::Paths(vec![hop("192.0.2.1", 0, 1, &[])]));
    assert_eq!(one(&m), r(254, "0.0.0.0/0", want));
}

#[test]
fn multipath_weights_1_and_3() {
    let (h1, h2) = (
        rtnh(0, 0, 3, &[gw("192.0.2.1")]),
        rtnh(0, 2, 4, &[gw("192.0.2.2")]),
    );
    let mp = multipath(&[h1, h2]);
    let (w1, w2) = (hop("192.0.2.1", 3, 1, &[]), hop("192.0.2.2", 4, 3, &[]));
    let want = vec![w1, w2];
    assert_eq!(one(&uni(&[mp])), p4(want));
}

#[test]
fn multipath_with_mpls_encap() {
    // Encap type before or after RTA_ENCAP.
    let (ty, l200) = (a(21, &1u16.to_ne_bytes()), a(1, &lse(&[200])));
    let mp = multipath(&[
        rtnh(0, 0, 3, &[gw("192.0.2.1"), encap(&[100])]),
        rtnh(0, 0, 4, &[ty, gw("192.0.2.2"), nest(22, &[l200])]),
        rtnh(0, 0, 5, &[gw("192.0.2.3"), encap(&[300, 400])]),
    ]);
    let want = vec![
        hop("192.0.2.1", 3, 1, &[100]),
        hop("192.0.2.2", 4, 1, &[200]),
        hop("192.0.2.3", 5, 1, &[300, 400]),
    ];
    assert_eq!(one(&uni(&[mp])), p4(want));
}

#[test]
fn single_path_mpls_encap() {
    let m = uni(&[gw("192.0.2.1"), oif(3), encap(&[16, 17])]);
    assert_eq!(one(&m), p4(vec![hop("192.0.2.1", 3, 1, &[16, 17])]));
    // Without an S bit the stack runs to the end; entries past it are dropped.
    let (l100, l200) = (100 << 12, 200 << 12);
    assert_eq!(label_stack([l100, l200].into_iter()), vec![100, 200]);
    assert_eq!(label_stack([l100 | 0x100, l200].into_iter()), vec![100]);
}

#[test]
fn via_inet6_gateway() {
    // RFC 5549: an IPv4 route via an IPv6 next hop.
    let m = uni(&[via(10, &v6("fe80::1")), oif(2)]);
    assert_eq!(one(&m), p4(vec![hop("fe80::1", 2, 1, &[])]));
    let m = uni(&[via(2, &v4("192.0.2.1"))]);
    assert_eq!(one(&m), p4(vec![hop("192.0.2.1", 0, 1, &[])]));
}

#[test]
fn onlink_flag() {
    let attrs = [dst(), gw("203.0.113.9"), oif(3)];
    let m = msg(24, &inet(1, RTNH_F_ONLINK), &attrs);
    assert_eq!(one(&m), p4(vec![onlink(hop("203.0.113.9", 3, 1, &[]))]));
    let m = uni(&[multipath(&[rtnh(4, 0, 3, &[gw("203.0.113.9")])])]);
    assert_eq!(one(&m), p4(vec![onlink(hop("203.0.113.9", 3, 1, &[]))]));
}

#[test]
fn reject_routes() {
    let (u, p) = (Target::Unreachable, Target::Prohibit);
    for (t, want) in [(6, Target::Blackhole), (7, u), (8, p)] {
        assert_eq!(one(&msg(24, &inet(t, 0), &[dst()])), r(254, P, Some(want)));
    }
}

#[test]
fn nexthop_id_route() {
    // Compat mode: RTA_NH_ID plus the expanded gateway.
    let m = uni(&[a32(30, 7), gw("192.0.2.1"), oif(3)]);
    assert_eq!(one(&m), r(254, P, Some(Target::NexthopId(7))));
    // Over a blackhole nexthop the route's type is blackhole: the object still
    // decides (its delete takes the route).
    let m = msg(24, &inet(6, 0), &[dst(), a32(30, 2)]);
    assert_eq!(one(&m), r(254, P, Some(Target::NexthopId(2))));
}

#[test]
fn ignored_routes() {
    let cases = [
        (rt(AF_INET, 24, 254, 2, 1, 0), "kernel-derived"),
        (rt(AF_INET, 32, 255, 4, 2, 0), "local table"),
        (inet(1, RTM_F_CLONED), "cloned"),
        (inet(2, 0), "not unicast"),
        (inet(3, 0), "not unicast"),
        (inet(5, 0), "not unicast"),
        (rt(7, 0, 254, 12, 1, 0), "other route family"),
    ];
    for (h, why) in cases {
        assert_eq!(one(&msg(24, &h, &[oif(3)])), Ok(Msg::Ignored(why)), "{why}");
    }
    let m = uni(&[gw("192.0.2.1"), a(21, &2u16.to_ne_bytes())]);
    assert_eq!(one(&m), Ok(Msg::Ignored("non-mpls encap")));
}

#[test]
fn ipv6_routes_decode_as_ipv4_ones_do() {
    let h = rt(AF_INET6, 32, 254, 12, 1, 0);
    let net = a(1, &v6("2001:db8::"));
    let m = msg(24, &h, &[net.clone(), a(5, &v6("fe80::1")), oif(3)]);
    let hops = vec![hop("fe80::1", 3, 1, &[])];
    assert_eq!(one(&m), r(254, "2001:db8::/32", Some(Target::Paths(hops))));
    let m = msg(
        24,
        &rt(AF_INET6, 48, 254, 12, 6, 0),
        &[a(1, &v6("2001:db8:1::"))],
    );
    assert_eq!(one(&m), r(254, "2001:db8:1::/48", Some(Target::Blackhole)));
    let m = msg(25, &h, std::slice::from_ref(&net));
    assert_eq!(one(&m), r(254, "2001:db8::/32", None));
    // Host bits are cleared as for IPv4; a length past 128 is an error.
    let m = msg(24, &h, &[a(1, &v6("2001:db8::1")), oif(3)]);
    let hops = vec![hop("", 3, 1, &[])];
    assert_eq!(one(&m), r(254, "2001:db8::/32", Some(Target::Paths(hops))));
    let m = msg(24, &rt(AF_INET6, 129, 254, 12, 1, 0), &[net, oif(3)]);
    assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(129)));
}

#[test]
fn table_from_rta_table() {
    let dev = || Some(Target::Paths(vec![hop("", 1, 1, &[])]));
    let h = rt(AF_INET, 24, 252, 12, 1, 0);
    assert_eq!(
        one(&msg(24, &h, &[a32(15, 1000), dst(), oif(1)])),
        r(1000, P, dev())
    );
    let h = rt(AF_INET, 24, 100, 12, 1, 0);
    assert_eq!(one(&msg(24, &h, &[dst(), oif(1)])), r(100, P, dev()));
}

#[test]
fn delroute() {
    let m = msg(25, &inet(1, 0), &[dst(), gw("192.0.2.1"), oif(3)]);
    assert_eq!(one(&m), r(254, P, None));
    // FRR FPM: type 0, only RTA_DST and RTA_PRIORITY.
    let m = msg(25, &rt(AF_INET, 24, 254, 196, 0, 0), &[dst(), a32(6, 20)]);
    let mut want = r(254, P, None);
    if let Ok(Msg::Change(Change::Route { metric, .. })) = &mut want {
        *metric = 20;
    }
    assert_eq!(one(&m), want);
    assert_eq!(one(&msg(25, &inet(6, 0), &[dst()])), r(254, P, None));
}

#[test]
fn bad_routes() {
    let m = msg(24, &rt(AF_INET, 33, 254, 12, 1, 0), &[dst(), oif(3)]);
    assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(33)));
    let why = "next hop with neither gateway nor interface";
    assert_eq!(one(&uni(&[])), malformed("route", why));
    let m = uni(&[multipath(&[rtnh(0, 0, 0, &[])])]);
    assert_eq!(one(&m), malformed("route", why));
    let why = "empty RTA_MULTIPATH";
    assert_eq!(one(&uni(&[multipath(&[])])), malformed("route", why));
    // An attribute claiming more bytes than the message has (the crate's error).
    let mut m = uni(&[gw("192.0.2.1")]);
    let at = m.len() - 8;
    m[at..at + 2].copy_from_slice(&40u16.to_ne_bytes());
    let got = format!("{:?}", one(&m));
    assert!(got.starts_with("Err(Malformed { what: \"route\""), "{got}");
    // Unknown attributes are skipped.
    let m = uni(&[a(200, &[1, 2, 3]), oif(3)]);
    assert_eq!(one(&m), p4(vec![hop("", 3, 1, &[])]));
}

/// An AF_MPLS route for incoming label 100.
fn mpls(kind: u16, proto: u8, attrs: &[B]) -> B {
    let attrs = [&[a(1, &lse(&[100]))][..], attrs].concat();
    msg(kind, &rt(AF_MPLS, 20, 254, proto, 1, 0), &attrs)
}

#[test]
fn mpls_swap_pop_ecmp_delete() {
    let via1 = || via(2, &v4("192.0.2.1"));
    let to = |labels: &[u32]| label(100, Some(vec![hop("192.0.2.1", 3, 1, labels)]));
    assert_eq!(
        one(&mpls(24, 196, &[a(19, &lse(&[200])), via1(), oif(3)])),
        to(&[200])
    );
    assert_eq!(one(&mpls(24, 193, &[via1(), oif(3)])), to(&[]));
    assert_eq!(one(&mpls(24, 12, &[gw("192.0.2.1"), oif(3)])), to(&[]));
    let h1 = rtnh(0, 0, 3, &[a(19, &lse(&[17])), via1()]);
    let h2 = rtnh(0, 0, 4, &[a(19, &lse(&[18, 19])), via(2, &v4("192.0.2.2"))]);
    let mp = multipath(&[h1, h2]);
    let (w1, w2) = (
        hop("192.0.2.1", 3, 1, &[17]),
        hop("192.0.2.2", 4, 1, &[18, 19]),
    );
    let want = vec![w1, w2];
    assert_eq!(one(&mpls(24, 196, &[mp])), label(100, Some(want)));
    // FRR's delete: proto 0, no RTA_VIA.
    let m = mpls(25, 0, &[a(19, &lse(&[200])), oif(3)]);
    assert_eq!(one(&m), label(100, None));
    let m = msg(24, &rt(AF_MPLS, 20, 254, 196, 1, 0), &[oif(3)]);
    assert_eq!(one(&m), malformed("mpls route", "no RTA_DST label"));
}

#[test]
fn nexthop_objects() {
    let m4 = |attrs: &[B]| msg(104, &nhmsg(AF_INET, 0), attrs);
    let one_nh = |h| nho(10, Some(NexthopObject::One(h)));
    let m = m4(&[a32(1, 10), a(6, &v4("192.0.2.1")), a32(5, 3)]);
    assert_eq!(one(&m), one_nh(hop("192.0.2.1", 3, 1, &[])));
    // MPLS encap (type after the encap), onlink, an unknown attribute.
    let enc = [nest(8, &[a(1, &lse(&[100, 200]))]), a(7, &[1, 0])];
    let attrs = [&[a32(1, 10), a32(5, 3), a(99, &[0])][..], &enc].concat();
    let m = msg(104, &nhmsg(AF_INET, 4), &attrs);
    assert_eq!(one(&m), one_nh(onlink(hop("", 3, 1, &[100, 200]))));
    let attrs = [a32(1, 10), a(6, &v6("fe80::1")), a32(5, 2)];
    let m = msg(104, &nhmsg(AF_INET6, 0), &attrs);
    assert_eq!(one(&m), one_nh(hop("fe80::1", 2, 1, &[])));
    let grp = [
        10u32.to_ne_bytes(),
        [0; 4],
        11u32.to_ne_bytes(),
        [2, 0, 0, 0],
    ];
    let m = msg(
        104,
        &nhmsg(AF_UNSPEC, 0),
        &[a32(1, 20), a(2, &grp.concat())],
    );
    let g = NexthopObject::Group(vec![(10, 1), (11, 3)]);
    assert_eq!(one(&m), nho(20, Some(g)));
    let m = msg(104, &nhmsg(AF_UNSPEC, 0), &[a32(1, 30), a(4, &[])]);
    assert_eq!(one(&m), nho(30, Some(NexthopObject::Blackhole)));
    assert_eq!(
        one(&msg(105, &nhmsg(AF_INET, 0), &[a32(1, 10)])),
        nho(10, None)
    );
    let m = m4(&[a32(1, 10), a32(5, 3), a(7, &[2, 0])]);
    assert_eq!(one(&m), Ok(Msg::Ignored("non-mpls encap")));
}

#[test]
fn bad_nexthop_objects() {
    let m = |attrs: &[B]| one(&msg(104, &nhmsg(AF_INET, 0), attrs));
    let bad = |why: &str| malformed("nexthop", why);
    assert_eq!(m(&[a32(5, 3)]), bad("no NHA_ID"));
    assert_eq!(m(&[a32(1, 10)]), bad("neither NHA_GATEWAY nor NHA_OIF"));
    let why = "NHA_GATEWAY of 16 bytes in family 2";
    assert_eq!(m(&[a32(1, 10), a(6, &v6("fe80::1"))]), bad(why));
    assert_eq!(m(&[a(1, &[1, 0])]), bad("NHA_ID of 2 bytes"));
    assert_eq!(m(&[a32(1, 1), a(2, &[0; 6])]), bad("NHA_GROUP of 6 bytes"));
    assert_eq!(one(&msg(104, &[2, 0, 0], &[])), bad("short nhmsg"));
    let mut b = msg(104, &nhmsg(AF_INET, 0), &[a32(1, 10), a32(5, 3)]);
    let at = b.len() - 8;
    b[at..at + 2].copy_from_slice(&12u16.to_ne_bytes());
    assert_eq!(one(&b), bad("attribute length 12 with 8 bytes left"));
}

#[test]
fn links() {
    let attrs = [a(3, b"eth0\0"), a32(4, 1500), a(1, &MAC)];
    let link = |ifindex, name: &str, up, mtu, mac| {
        let name = name.to_string();
        ok(Change::Link(Link {
            ifindex,
            name,
            up,
            mtu,
            mac,
            ..Default::default()
        }))
    };
    let m = msg(16, &ifinfo(3, 0x1043), &attrs);
    assert_eq!(one(&m), link(3, "eth0", true, 1500, Some(MAC)));
    // Down, no MTU, a 4-byte (tunnel) address.
    let m = msg(
        16,
        &ifinfo(4, 0x1002),
        &[a(3, b"tun0\0"), a(1, &[10, 0, 0, 1])],
    );
    assert_eq!(one(&m), link(4, "tun0", false, 0, None));
    // With carrier: IFF_LOWER_UP.
    let m = msg(16, &ifinfo(3, 0x1_1043), &attrs);
    assert!(matches!(
        one(&m),
        Ok(Msg::Change(Change::Link(Link {
            up: true,
            carrier: true,
            ..
        })))
    ));
    let gone = ok(Change::LinkGone { ifindex: 3 });
    assert_eq!(one(&msg(17, &ifinfo(3, 0), &attrs)), gone);
    // `ip link add red type vrf table 10`: IFLA_LINKINFO { IFLA_INFO_KIND
    // "vrf", IFLA_INFO_DATA { IFLA_VRF_TABLE 10 } }; a twin enslaved to it
    // carries IFLA_MASTER (0: none).
    let info = nest(18, &[a(1, b"vrf\0"), nest(2, &[a32(1, 10)])]);
    let m = msg(16, &ifinfo(50, 0x1041), &[a(3, b"red\0"), info]);
    let mut red = Link {
        ifindex: 50,
        name: "red".into(),
        up: true,
        vrf_table: Some(10),
        ..Default::default()
    };
    assert_eq!(one(&m), ok(Change::Link(red.clone())));
    let m = msg(16, &ifinfo(3, 0x1043), &[a(3, b"eth0\0"), a32(10, 50)]);
    red = Link {
        ifindex: 3,
        name: "eth0".into(),
        up: true,
        master: Some(50),
        ..Default::default()
    };
    assert_eq!(one(&m), ok(Change::Link(red)));
    let m = msg(16, &ifinfo(3, 0x1043), &[a(3, b"eth0\0"), a32(10, 0)]);
    assert!(matches!(
        one(&m),
        Ok(Msg::Change(Change::Link(Link { master: None, .. })))
    ));
}

#[test]
fn addresses() {
    let add = |add, addr: &str| {
        let addr = addr.parse().unwrap();
        ok(Change::Addr {
            add,
            ifindex: 3,
            addr,
            len: 24,
        })
    };
    // IFA_LOCAL wins over IFA_ADDRESS (the peer on a point-to-point link).
    let attrs = [
        a(1, &v4("192.0.2.2")),
        a(2, &v4("192.0.2.1")),
        a(3, b"eth0\0"),
    ];
    let h = ifaddr(AF_INET, 24, 3);
    assert_eq!(one(&msg(20, &h, &attrs)), add(true, "192.0.2.1"));
    assert_eq!(one(&msg(21, &h, &attrs[..1])), add(false, "192.0.2.2"));
    let m = msg(20, &ifaddr(AF_INET6, 64, 3), &[a(1, &v6("2001:db8::1"))]);
    let want = Change::Addr {
        add: true,
        ifindex: 3,
        addr: "2001:db8::1".parse().unwrap(),
        len: 64,
    };
    assert_eq!(one(&m), ok(want));
    let m = msg(20, &ifaddr(AF_INET, 33, 3), &attrs);
    assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(33)));
    let m = msg(20, &ifaddr(AF_INET6, 129, 3), &[a(1, &v6("2001:db8::1"))]);
    assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(129)));
    // An address of the other family in the message does not count.
    let m = msg(20, &ifaddr(AF_INET6, 64, 3), &[a(1, &v4("192.0.2.1"))]);
    let why = "no IFA_LOCAL or IFA_ADDRESS of its family";
    assert_eq!(one(&m), malformed("address", why));
    assert_eq!(one(&msg(20, &h, &[])), malformed("address", why));
}

#[test]
fn neighbours() {
    let n = |addr: &str, mac| {
        let addr = addr.parse().unwrap();
        ok(Change::Neigh {
            ifindex: 3,
            addr,
            mac,
        })
    };
    let attrs = [a(1, &v4("192.0.2.1")), a(2, &MAC)];
    let usable = [0x02, 0x04, 0x08, 0x10, 0x40, 0x80].map(|s| (s, Some(MAC)));
    for (state, mac) in usable
        .into_iter()
        .chain([(0x20, None), (0x01, None), (0, None)])
    {
        let m = msg(28, &ndmsg(AF_INET, state, 0, 1), &attrs);
        assert_eq!(one(&m), n("192.0.2.1", mac), "{state:#x}");
    }
    let m = msg(28, &ndmsg(AF_INET, 0x02, 0, 1), &attrs[..1]);
    assert_eq!(one(&m), n("192.0.2.1", None));
    let m = msg(29, &ndmsg(AF_INET, 0x02, 0, 1), &attrs);
    assert_eq!(one(&m), n("192.0.2.1", None));
    let attrs6 = [a(1, &v6("fe80::1")), a(2, &MAC)];
    let m = msg(28, &ndmsg(AF_INET6, 0x04, 0x80, 1), &attrs6);
    assert_eq!(one(&m), n("fe80::1", Some(MAC)));
    let m = msg(28, &ndmsg(AF_INET, 0x80, NTF_PROXY, 1), &attrs[..1]);
    assert_eq!(one(&m), Ok(Msg::Ignored("proxy neighbour")));
    let m = msg(28, &ndmsg(7, 0x80, 0x02, 1), &[a(2, &MAC)]);
    assert_eq!(one(&m), Ok(Msg::Ignored("not an ip neighbour")));
    let mcast = [a(1, &v4("224.0.0.5")), a(2, &MAC)];
    let m = msg(28, &ndmsg(AF_INET, 0x40, 0, 5), &mcast);
    assert_eq!(one(&m), Ok(Msg::Ignored("not a unicast neighbour")));
    let m = msg(28, &ndmsg(AF_INET, 0x02, 0, 1), &attrs[1..]);
    assert_eq!(one(&m), malformed("neighbour", "no NDA_DST"));
}

#[test]
fn done_error_and_unknown() {
    assert_eq!(one(&msg(3, &0u32.to_ne_bytes(), &[])), Ok(Msg::Done));
    let err = [(-95i32).to_ne_bytes(), [0; 4], [0; 4], [0; 4], [0; 4]].concat();
    assert_eq!(one(&msg(2, &err, &[])), Ok(Msg::Error(95)));
    assert_eq!(one(&msg(2, &[0; 20], &[])), Ok(Msg::Error(0)));
    assert_eq!(one(&msg(2, &[], &[])), malformed("NLMSG_ERROR", "no errno"));
    assert_eq!(one(&msg(1, &[], &[])), Ok(Msg::Ignored("unknown type")));
    let m = msg(18, &ifinfo(0, 0), &[]);
    assert_eq!(one(&m), Ok(Msg::Ignored("unknown type")));
}

#[test]
fn datagrams() {
    // FRR's replace frame: DELROUTE + NEWROUTE, then a DONE.
    let del = msg(25, &rt(AF_INET, 24, 254, 196, 0, 0), &[dst()]);
    let h = rt(AF_INET, 24, 254, 196, 1, 0);
    let new = msg(24, &h, &[dst(), gw("192.0.2.1")]);
    let got = messages(&[del.clone(), new, msg(3, &[0; 4], &[])].concat());
    let new = p4(vec![hop("192.0.2.1", 0, 1, &[])]);
    let want = vec![r(254, P, None), new, Ok(Msg::Done)];
    assert_eq!(got, want);
    // Truncations end the datagram with one error.
    let why = "nlmsg_len 36 with 35 bytes left";
    assert_eq!(
        messages(&del[..35]),
        vec![malformed("netlink message", why)]
    );
    let mut tiny = del.clone();
    tiny[..4].copy_from_slice(&15u32.to_ne_bytes());
    let why = "nlmsg_len 15 with 36 bytes left";
    assert_eq!(messages(&tiny), vec![malformed("netlink message", why)]);
    let why = "nlmsg_len 36 with 10 bytes left";
    let want = vec![r(254, P, None), malformed("netlink message", why)];
    assert_eq!(messages(&[&del[..], &del[..10]].concat()), want);
    let why = "nlmsg_len 0 with 3 bytes left";
    let want = vec![r(254, P, None), malformed("netlink message", why)];
    assert_eq!(messages(&[&del[..], &[0; 3]].concat()), want);
    assert_eq!(messages(&[]), vec![]);
    let why = "nlmsg_len 36 with 20 bytes";
    assert_eq!(message(&del[..20]), malformed("netlink message", why));
}

/// One valid message of most shapes, for the mutation test.
fn samples() -> Vec<B> {
    let h1 = rtnh(0, 0, 3, &[gw("192.0.2.1"), encap(&[100])]);
    let mp = [h1, rtnh(4, 2, 4, &[via(10, &[0; 16])])];
    let mpls_mp = rtnh(0, 0, 3, &[a(19, &lse(&[17, 18])), via(2, &v4("192.0.2.1"))]);
    let enc = [a(7, &[1, 0]), nest(8, &[a(1, &lse(&[100]))])];
    let nh = [&[a32(1, 11), a(6, &v4("192.0.2.1")), a32(5, 3)][..], &enc].concat();
    let addr = [a(1, &v4("192.0.2.2")), a(2, &v4("192.0.2.1"))];
    let link = [a(3, b"eth0\0"), a32(4, 1500), a(1, &MAC)];
    vec![
        uni(&[a32(15, 1000), gw("192.0.2.1"), oif(3), encap(&[16, 17])]),
        uni(&[multipath(&mp), a32(30, 7)]),
        mpls(24, 196, &[multipath(&[mpls_mp])]),
        msg(104, &nhmsg(AF_INET, 0), &nh),
        msg(
            104,
            &nhmsg(0, 0),
            &[a32(1, 20), a(2, &[10, 0, 0, 0, 0, 0, 0, 0])],
        ),
        msg(16, &ifinfo(3, 1), &link),
        msg(20, &ifaddr(AF_INET, 24, 3), &addr),
        msg(
            28,
            &ndmsg(AF_INET6, 2, 0, 1),
            &[a(1, &v6("fe80::1")), a(2, &MAC)],
        ),
        msg(2, &[0; 20], &[]),
    ]
}

#[test]
fn samples_decode() {
    for s in samples() {
        let got = one(&s);
        assert!(matches!(got, Ok(Msg::Change(_) | Msg::Error(0))), "{got:?}");
    }
}

proptest! {
    /// The in-place reader of plain IPv4 routes says exactly what the general
    /// decoder says, for every header and any mix of its attributes (and
    /// others, which it leaves to the general decoder).
    #[test]
    fn plain_route_equals_general(
        new in any::<bool>(),
        dst_len in select(vec![0u8, 8, 24, 31, 32, 33]),
        table in select(vec![0u8, 254, 255, 10]),
        proto in select(vec![2u8, 3, 4, 12, 186]),
        rtype in select(vec![0u8, 1, 2, 5, 6, 7, 8, 9]),
        flags in select(vec![0u32, 4, 0x200, 0x204]),
        attrs in pvec((select(vec![1u16, 4, 5, 6, 7, 15, 12, 30, 0x8001]),
                       select(vec![4usize, 4, 4, 2, 8]), any::<u32>()), 0..7),
    ) {
        let h = rt(AF_INET, dst_len, table, proto, rtype, flags);
        let attrs: Vec<B> = attrs
            .iter()
            .map(|&(k, n, v)| a(k, &[v.to_ne_bytes(), v.to_be_bytes()].concat()[..n]))
            .collect();
        let body = [&h[..], &attrs.concat()].concat();
        if let Some(plain) = plain_route(&body, new) {
            prop_assert_eq!(plain, route_general(&body, new));
        }
    }

    #[test]
    fn random_bytes_never_panic(b in pvec(any::<u8>(), 0..600)) {
        let _ = messages(&b);
    }

    #[test]
    fn random_bodies_never_panic(
        kind in select(vec![2u16, 3, 16, 17, 20, 21, 24, 25, 28, 29, 104, 105]),
        family in select(vec![0u8, 2, 7, 10, 28]),
        mut body in pvec(any::<u8>(), 1..300),
    ) {
        body[0] = family;
        let _ = messages(&msg(kind, &body, &[]));
    }

    #[test]
    fn random_attributes_never_panic(
        which in any::<Index>(),
        attrs in pvec((0u16..80, any::<bool>(), pvec(any::<u8>(), 0..40)), 0..8),
    ) {
        let hdrs = [(16, ifinfo(3, 1)), (20, ifaddr(AF_INET, 24, 3)), (24, inet(1, 0)),
            (24, rt(AF_MPLS, 20, 254, 4, 1, 0)), (28, ndmsg(AF_INET, 2, 0, 1)),
            (104, nhmsg(AF_INET, 0))];
        let (kind, hdr) = which.get(&hdrs);
        let attrs: Vec<B> = attrs.iter().map(|(k, n, v)| {
            // Nested attributes get a valid inner attribute, sometimes.
            if *n { nest(*k, &[a(v.first().map_or(1, |&b| u16::from(b % 8)), v)]) } else { a(*k, v) }
        }).collect();
        let _ = messages(&msg(*kind, hdr, &attrs));
        let _ = messages(&msg(*kind, hdr, &[multipath(&[rtnh(0, 0, 1, &attrs)])]));
    }

    #[test]
    fn mutations_never_panic(
        which in any::<Index>(),
        muts in pvec((any::<Index>(), any::<u8>()), 1..6),
        cut in any::<Index>(),
    ) {
        let all = samples();
        let mut b = which.get(&all).clone();
        for (at, v) in muts {
            let n = at.index(b.len());
            b[n] = v;
        }
        let _ = messages(&b);
        let _ = messages(&b[..cut.index(b.len() + 1)]);
        let _ = messages(&[all.concat(), b].concat());
    }
}
