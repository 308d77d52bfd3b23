//! Route model: ECMP, recursion, adjacencies, bad input, property tests.

mod common;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use fib::{Action, Fib, FibError, Interface, Ipv4Prefix, Path, RouteKind};
use proptest::prelude::*;

fn pfx(s: &str) -> Ipv4Prefix {
    s.parse().expect("prefix")
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().expect("address")
}

fn a(s: &str) -> u32 {
    u32::from(ip(s))
}

fn fib_with_ifaces() -> Fib {
    let mut fib = Fib::new();
    for i in 1..=4u8 {
        fib.interface_set(
            u32::from(i),
            Interface {
                mac: [2, 0, 0, 0, 0, i],
                mtu: 1500,
                vlan: None,
            },
        );
    }
    fib
}

/// (action, target, labels) of the bucket `hash` picks for `dst` in table 0.
fn forward(fib: &Fib, dst: &str, hash: u32) -> (Action, u32, Vec<u32>) {
    let mut r = fib.reader();
    let v = r.read();
    let id = v.lookup(0, a(dst));
    let leg = v.leg(id, hash);
    let mut l = [0u32; fib::MAX_LABELS];
    let n = leg.labels_into(&mut l);
    // The one-bucket shortcut and the per-label reads say the same.
    assert_eq!((0..n).map(|i| leg.label(i)).collect::<Vec<_>>(), l[..n]);
    assert_eq!(leg.label(n), 0);
    // The fast path's form: up to four labels without implicit null, 0 after them.
    let plain = (n <= 4 && !l[..n].contains(&3)).then(|| {
        let mut f = [0u32; 4];
        f[..n].copy_from_slice(&l[..n]);
        (f, n)
    });
    assert_eq!(leg.plain_labels::<4>(), plain);
    match v.only_leg(id) {
        Some(o) => {
            assert_eq!(v.bucket_count(id), 1);
            let ol: Vec<u32> = (0..o.label_count()).map(|i| o.label(i)).collect();
            assert_eq!(
                (o.action(), o.target(), ol),
                (leg.action(), leg.target(), l[..n].to_vec())
            );
        }
        None => assert_ne!(v.bucket_count(id), 1),
    }
    (leg.action(), leg.target(), l[..n].to_vec())
}

#[test]
fn special_routes() {
    let mut fib = fib_with_ifaces();
    fib.route_add(0, pfx("10.0.0.0/8"), RouteKind::Blackhole)
        .unwrap();
    fib.route_add(0, pfx("10.1.0.0/16"), RouteKind::Unreachable)
        .unwrap();
    fib.route_add(0, pfx("10.2.0.0/16"), RouteKind::Prohibit)
        .unwrap();
    fib.route_add(0, pfx("10.3.0.1/32"), RouteKind::Local)
        .unwrap();
    fib.route_add(0, pfx("10.4.0.0/24"), RouteKind::Connected { ifindex: 2 })
        .unwrap();
    assert_eq!(forward(&fib, "10.9.9.9", 0).0, Action::Drop);
    assert_eq!(forward(&fib, "10.1.9.9", 0).0, Action::Unreachable);
    assert_eq!(forward(&fib, "10.2.9.9", 0).0, Action::Prohibit);
    assert_eq!(forward(&fib, "10.3.0.1", 0).0, Action::Local);
    assert_eq!(forward(&fib, "10.4.0.7", 0), (Action::Glean, 2, vec![]));
    assert_eq!(forward(&fib, "11.0.0.1", 0).0, Action::NoRoute);
}

#[test]
fn tables_are_separate() {
    let mut fib = fib_with_ifaces();
    fib.table_add(10).unwrap();
    assert_eq!(fib.table_add(10), Err(FibError::TableExists(10)));
    fib.route_add(10, pfx("0.0.0.0/0"), RouteKind::Local)
        .unwrap();
    let mut r = fib.reader();
    {
        let v = r.read();
        assert_eq!(v.lookup(0, a("1.2.3.4")), 0);
        assert_ne!(v.lookup(10, a("1.2.3.4")), 0);
        assert!(v.table(11).is_none());
    }
    fib.table_del(10).unwrap();
    assert_eq!(fib.table_del(0), Err(FibError::DefaultTable));
    let v = r.read();
    assert!(v.table(10).is_none());
    assert_eq!(v.lookup(10, a("1.2.3.4")), 0);
}

#[test]
fn adjacency_rewrite_and_neighbour_flip() {
    let mut fib = fib_with_ifaces();
    fib.interface_set(
        3,
        Interface {
            mac: [2, 0, 0, 0, 0, 3],
            mtu: 9000,
            vlan: Some(100),
        },
    );
    let gw = ip("192.0.2.1");
    fib.route_add(
        0,
        pfx("198.51.100.0/24"),
        RouteKind::Paths(vec![Path::gateway_on(gw, 3)]),
    )
    .unwrap();
    fib.route_add(
        0,
        pfx("203.0.113.0/24"),
        RouteKind::Paths(vec![Path::gateway_on(gw, 3)]),
    )
    .unwrap();
    let adj = fib.adjacency_id(3, IpAddr::V4(gw)).expect("adjacency");
    let (act, target, _) = forward(&fib, "198.51.100.1", 0);
    assert_eq!((act, target), (Action::Forward, adj));
    assert_eq!(
        forward(&fib, "203.0.113.1", 0).1,
        adj,
        "shared by both routes"
    );
    let mut r = fib.reader();
    {
        let v = r.read();
        let ad = v.adjacency(adj).unwrap();
        assert!(!ad.complete, "incomplete until ARP");
        assert_eq!(
            (ad.ifindex, ad.mtu, ad.vlan, ad.src_mac),
            (3, 9000, Some(100), [2, 0, 0, 0, 0, 3])
        );
    }
    let mac = [0x52, 0x54, 0, 0xab, 0xcd, 0xef];
    assert_eq!(fib.neighbor_set(3, IpAddr::V4(gw), Some(mac)), Ok(adj));
    {
        let v = r.read();
        let ad = v.adjacency(adj).unwrap();
        assert!(ad.complete);
        assert_eq!(ad.dst_mac, mac);
    }
    fib.neighbor_del(3, IpAddr::V4(gw)).unwrap();
    assert!(!r.read().adjacency(adj).unwrap().complete);
    // Unused adjacencies go away with the last route.
    fib.route_del(0, pfx("198.51.100.0/24")).unwrap();
    fib.route_del(0, pfx("203.0.113.0/24")).unwrap();
    assert_eq!(fib.adjacency_id(3, IpAddr::V4(gw)), None);
    assert_eq!(
        fib.neighbor_del(3, IpAddr::V4(gw)),
        Err(FibError::UnknownNeighbor(3, IpAddr::V4(gw)))
    );
}

#[test]
fn ipv6_next_hop_and_labels() {
    let mut fib = fib_with_ifaces();
    let gw6: Ipv6Addr = "fe80::1".parse().unwrap();
    fib.route_add(
        0,
        pfx("100.64.0.0/10"),
        RouteKind::Paths(vec![
            Path::gateway6(gw6, 1).with_labels(&[100, 200, 300, 400, 500, 600, 700, 800, 900]),
        ]),
    )
    .unwrap();
    let (act, target, labels) = forward(&fib, "100.64.1.1", 0);
    assert_eq!(act, Action::Forward);
    assert_eq!(Some(target), fib.adjacency_id(1, IpAddr::V6(gw6)));
    assert_eq!(labels, vec![100, 200, 300, 400, 500, 600, 700, 800, 900]);
}

/// The fast path's form of a stack (`Leg::plain_labels`): implicit null anywhere
/// or more labels than asked for say `None`; a leg slot reused for a shorter stack
/// reads 0 after its last label.
#[test]
fn plain_labels_of_out_label_stacks() {
    let mut fib = fib_with_ifaces();
    let cases: [&[u32]; 6] = [
        &[],
        &[100],
        &[100, 200, 300, 400],
        &[100, 200, 300, 400, 500],
        &[3],
        &[3, 100],
    ];
    // (a route that stays: the arrays are not reset when the others go)
    fib.route_add(
        0,
        pfx("198.51.100.0/24"),
        RouteKind::Paths(vec![Path::gateway_on(ip("10.1.1.1"), 2)]),
    )
    .unwrap();
    // (freed slots are reused after a grace period: some dozens of changes)
    for round in 0..12 {
        for (k, &labels) in cases.iter().enumerate() {
            // (a different next hop per round: new legs, in slots freed before)
            let gw = Ipv4Addr::new(10, 0, round, k as u8 + 1);
            let prefix = pfx(&format!("198.51.{k}.0/24"));
            fib.route_add(
                0,
                prefix,
                RouteKind::Paths(vec![Path::gateway_on(gw, 1).with_labels(labels)]),
            )
            .unwrap();
            let (_, _, got) = forward(&fib, &format!("198.51.{k}.1"), 0);
            assert_eq!(got, labels);
            let mut r = fib.reader();
            let v = r.read();
            let plain = v
                .leg(v.lookup(0, a(&format!("198.51.{k}.1"))), 0)
                .plain_labels::<4>();
            let want = match labels.len() {
                n if n <= 4 && !labels.contains(&3) => {
                    let mut f = [0u32; 4];
                    f[..n].copy_from_slice(labels);
                    Some((f, n))
                }
                _ => None,
            };
            assert_eq!(plain, want, "round {round}, {labels:?}");
        }
        for k in 0..cases.len() {
            fib.route_del(0, pfx(&format!("198.51.{k}.0/24"))).unwrap();
        }
    }
}

/// Share of 2^16 flow hashes per adjacency.
fn spread(fib: &Fib, dst: &str) -> HashMap<u32, f64> {
    let mut r = fib.reader();
    let v = r.read();
    let id = v.lookup(0, a(dst));
    let mut m = HashMap::new();
    let n = 1u32 << 16;
    for h in 0..n {
        // Any well-mixed flow hash; the bucket index is its low bits.
        let h = h.wrapping_mul(0x9e37_79b9);
        *m.entry(v.leg(id, h).target()).or_insert(0.0) += 1.0 / f64::from(n);
    }
    m
}

#[test]
fn ecmp_weights_and_minimal_disruption() {
    let mut fib = fib_with_ifaces();
    let paths: Vec<Path> = (1..=3u8)
        .map(|i| {
            Path::gateway_on(Ipv4Addr::new(192, 0, 2, i), u32::from(i)).with_weight(u32::from(i))
        })
        .collect();
    fib.route_add(0, pfx("0.0.0.0/0"), RouteKind::Paths(paths.clone()))
        .unwrap();
    let s = spread(&fib, "8.8.8.8");
    for i in 1..=3u8 {
        let adj = fib
            .adjacency_id(u32::from(i), IpAddr::V4(Ipv4Addr::new(192, 0, 2, i)))
            .unwrap();
        let want = f64::from(i) / 6.0;
        assert!(
            (s[&adj] - want).abs() < 0.02,
            "path {i}: {} vs {want}",
            s[&adj]
        );
    }
    // 64 equal paths.
    let many: Vec<Path> = (0..64u8)
        .map(|i| Path::gateway_on(Ipv4Addr::new(192, 0, 3, i + 1), 1))
        .collect();
    fib.route_add(0, pfx("10.0.0.0/8"), RouteKind::Paths(many))
        .unwrap();
    let s = spread(&fib, "10.1.1.1");
    assert_eq!(s.len(), 64);
    assert!(s.values().all(|x| (x - 1.0 / 64.0).abs() < 0.005));

    // Minimal disruption: remove one of four equal paths; flows on the others stay.
    let four: Vec<Path> = (1..=4u8)
        .map(|i| Path::gateway_on(Ipv4Addr::new(192, 0, 4, i), 1))
        .collect();
    fib.route_add(0, pfx("172.16.0.0/12"), RouteKind::Paths(four.clone()))
        .unwrap();
    let before: Vec<u32> = (0..4096)
        .map(|h| forward(&fib, "172.16.0.1", h).1)
        .collect();
    let gone = fib
        .adjacency_id(1, IpAddr::V4(Ipv4Addr::new(192, 0, 4, 2)))
        .unwrap();
    fib.route_add(
        0,
        pfx("172.16.0.0/12"),
        RouteKind::Paths(vec![four[0].clone(), four[2].clone(), four[3].clone()]),
    )
    .unwrap();
    let after: Vec<u32> = (0..4096)
        .map(|h| forward(&fib, "172.16.0.1", h).1)
        .collect();
    let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    let on_gone = before.iter().filter(|&&b| b == gone).count();
    assert_eq!(moved, on_gone, "only flows of the removed path move");
    assert!(after.iter().all(|&x| x != gone));
    // And adding it back moves only about a quarter of the flows.
    fib.route_add(0, pfx("172.16.0.0/12"), RouteKind::Paths(four))
        .unwrap();
    let back: Vec<u32> = (0..4096)
        .map(|h| forward(&fib, "172.16.0.1", h).1)
        .collect();
    let moved = after.iter().zip(&back).filter(|(b, a)| b != a).count();
    assert!(moved <= 4096 / 4 + 64, "moved {moved}");
}

#[test]
fn recursive_resolution_follows_changes() {
    let mut fib = fib_with_ifaces();
    fib.route_add(0, pfx("10.0.0.0/24"), RouteKind::Connected { ifindex: 1 })
        .unwrap();
    fib.route_add(0, pfx("10.0.1.0/24"), RouteKind::Connected { ifindex: 2 })
        .unwrap();
    // IGP route to the BGP next hop's network, with an LDP label.
    fib.route_add(
        0,
        pfx("172.16.0.0/16"),
        RouteKind::Paths(vec![Path::gateway(ip("10.0.0.1")).with_labels(&[1000])]),
    )
    .unwrap();
    // BGP routes via 172.16.5.5 with a service label; they share one path list.
    let bgp = RouteKind::Paths(vec![Path::gateway(ip("172.16.5.5")).with_labels(&[77])]);
    let id1 = fib
        .route_add(0, pfx("198.51.100.0/24"), bgp.clone())
        .unwrap();
    let id2 = fib.route_add(0, pfx("203.0.113.0/24"), bgp).unwrap();
    assert_eq!(id1, id2, "shared path list");
    let adj1 = fib.adjacency_id(1, IpAddr::V4(ip("10.0.0.1"))).unwrap();
    assert_eq!(
        forward(&fib, "198.51.100.9", 0),
        (Action::Forward, adj1, vec![1000, 77])
    );

    // The IGP route moves to another neighbour: both BGP prefixes follow, same id.
    fib.route_add(
        0,
        pfx("172.16.0.0/16"),
        RouteKind::Paths(vec![Path::gateway(ip("10.0.1.1")).with_labels(&[2000])]),
    )
    .unwrap();
    let adj2 = fib.adjacency_id(2, IpAddr::V4(ip("10.0.1.1"))).unwrap();
    assert_eq!(
        forward(&fib, "198.51.100.9", 0),
        (Action::Forward, adj2, vec![2000, 77])
    );
    assert_eq!(
        forward(&fib, "203.0.113.9", 0),
        (Action::Forward, adj2, vec![2000, 77])
    );
    assert_eq!(fib.route(0, pfx("198.51.100.0/24")), Some(id1));

    // A more specific route for the next hop takes over, and gives it back on delete.
    fib.route_add(
        0,
        pfx("172.16.5.0/24"),
        RouteKind::Paths(vec![Path::gateway(ip("10.0.0.1"))]),
    )
    .unwrap();
    // (The adjacency to 10.0.0.1 went away with its last user; it has a new id now.)
    let adj1 = fib.adjacency_id(1, IpAddr::V4(ip("10.0.0.1"))).unwrap();
    assert_eq!(
        forward(&fib, "198.51.100.9", 0),
        (Action::Forward, adj1, vec![77])
    );
    fib.route_del(0, pfx("172.16.5.0/24")).unwrap();
    assert_eq!(
        forward(&fib, "198.51.100.9", 0),
        (Action::Forward, adj2, vec![2000, 77])
    );

    // Losing the covering route leaves the next hop unresolved; it comes back.
    fib.route_del(0, pfx("172.16.0.0/16")).unwrap();
    assert_eq!(forward(&fib, "198.51.100.9", 0).0, Action::NoRoute);
    fib.route_add(
        0,
        pfx("0.0.0.0/0"),
        RouteKind::Paths(vec![Path::gateway(ip("10.0.0.1"))]),
    )
    .unwrap();
    let adj1 = fib.adjacency_id(1, IpAddr::V4(ip("10.0.0.1"))).unwrap();
    assert_eq!(
        forward(&fib, "198.51.100.9", 0),
        (Action::Forward, adj1, vec![77])
    );

    // A route may not resolve through itself.
    fib.route_add(
        0,
        pfx("10.8.0.0/16"),
        RouteKind::Paths(vec![Path::gateway(ip("10.8.0.1"))]),
    )
    .unwrap();
    assert_eq!(
        forward(&fib, "10.8.1.1", 0),
        (Action::Forward, adj1, vec![])
    );
}

#[test]
fn bad_input_is_rejected_and_changes_nothing() {
    let mut fib = fib_with_ifaces();
    fib.route_add(0, pfx("10.0.0.0/8"), RouteKind::Blackhole)
        .unwrap();
    let mem = fib.memory();
    let before = forward(&fib, "10.1.1.1", 0);
    assert!(matches!(
        Ipv4Prefix::new(ip("10.0.0.1"), 8),
        Err(FibError::HostBits { .. })
    ));
    assert_eq!(
        Ipv4Prefix::new(ip("10.0.0.0"), 33),
        Err(FibError::PrefixLen(33, 32))
    );
    assert!(matches!(
        "10.0.0.0/33".parse::<Ipv4Prefix>(),
        Err(FibError::PrefixLen(33, 32))
    ));
    assert!(matches!(
        "10.0.0.1/8".parse::<Ipv4Prefix>(),
        Err(FibError::HostBits { .. })
    ));
    assert!(matches!(
        "nonsense".parse::<Ipv4Prefix>(),
        Err(FibError::Parse(_))
    ));
    let p = pfx("10.0.0.0/8");
    assert_eq!(
        fib.route_add(7, p, RouteKind::Local),
        Err(FibError::UnknownTable(7))
    );
    assert_eq!(
        fib.route_add(
            0,
            p,
            RouteKind::Paths(vec![Path::gateway_on(ip("1.1.1.1"), 99)])
        ),
        Err(FibError::UnknownInterface(99))
    );
    assert_eq!(
        fib.route_add(0, p, RouteKind::Paths(vec![Path::gateway(ip("0.0.0.0"))])),
        Err(FibError::InvalidNextHop(IpAddr::V4(ip("0.0.0.0"))))
    );
    assert_eq!(
        fib.route_add(0, p, RouteKind::Paths(vec![Path::gateway(ip("224.0.0.1"))])),
        Err(FibError::InvalidNextHop(IpAddr::V4(ip("224.0.0.1"))))
    );
    let too_many: Vec<Path> = (0..65u32)
        .map(|i| Path::gateway(Ipv4Addr::from(0x0a00_0001 + i)))
        .collect();
    assert_eq!(
        fib.route_add(0, p, RouteKind::Paths(too_many)),
        Err(FibError::TooManyPaths(65))
    );
    assert_eq!(
        fib.route_add(0, p, RouteKind::Paths(vec![])),
        Err(FibError::NoPaths)
    );
    assert_eq!(
        fib.route_add(
            0,
            p,
            RouteKind::Paths(vec![Path::gateway(ip("1.1.1.1")).with_weight(0)])
        ),
        Err(FibError::Weight(0))
    );
    assert_eq!(
        fib.route_add(
            0,
            p,
            RouteKind::Paths(vec![Path::gateway(ip("1.1.1.1")).with_labels(&[1; 13])])
        ),
        Err(FibError::TooManyLabels(13))
    );
    assert_eq!(
        fib.route_add(
            0,
            p,
            RouteKind::Paths(vec![Path::gateway(ip("1.1.1.1")).with_labels(&[1 << 20])])
        ),
        Err(FibError::LabelValue(1 << 20))
    );
    assert_eq!(
        fib.route_add(0, p, RouteKind::Connected { ifindex: 42 }),
        Err(FibError::UnknownInterface(42))
    );
    assert_eq!(
        fib.route_del(0, pfx("11.0.0.0/8")),
        Err(FibError::NoSuchRoute(pfx("11.0.0.0/8").into(), 0))
    );
    assert_eq!(
        fib.route_del(3, pfx("11.0.0.0/8")),
        Err(FibError::UnknownTable(3))
    );
    assert_eq!(
        fib.neighbor_set(9, IpAddr::V4(ip("1.1.1.1")), None),
        Err(FibError::UnknownInterface(9))
    );
    assert_eq!(fib.interface_del(9), Err(FibError::UnknownInterface(9)));
    assert_eq!(forward(&fib, "10.1.1.1", 0), before);
    assert_eq!(fib.memory(), mem);
    assert_eq!(fib.route_count(0), 1);
}

#[test]
fn reader_never_sees_reused_slots_before_quiescence() {
    let mut fib = fib_with_ifaces();
    let gw = ip("192.0.2.1");
    let id = fib
        .route_add(
            0,
            pfx("10.0.0.0/8"),
            RouteKind::Paths(vec![Path::gateway_on(gw, 1).with_labels(&[42])]),
        )
        .unwrap();
    let mut r = fib.reader();
    let v = r.read();
    let leg = v.leg(v.lookup(0, a("10.1.1.1")), 0);
    // Delete and churn many routes while the view is held: the old result id and its
    // leg must keep their contents until the reader passes a quiescent point.
    fib.route_del(0, pfx("10.0.0.0/8")).unwrap();
    for i in 0..200u32 {
        let p = Ipv4Prefix::new(Ipv4Addr::from(0x0b00_0000 + (i << 8)), 24).unwrap();
        fib.route_add(
            0,
            p,
            RouteKind::Paths(vec![
                Path::gateway_on(Ipv4Addr::from(0xc000_0300 + i), 2).with_labels(&[i]),
            ]),
        )
        .unwrap();
    }
    let mut l = [0u32; 12];
    assert_eq!(leg.labels_into(&mut l), 1);
    assert_eq!(l[0], 42);
    assert_eq!(v.leg(id, 0).target(), leg.target());
    drop(v);
    let v = r.read();
    assert_eq!(v.lookup(0, a("10.1.1.1")), 0);
}

#[derive(Clone, Debug)]
enum Op {
    Add(u32, u8, u8),
    Del(usize),
    Look(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u32>(), 0u8..=32, 0u8..8).prop_map(|(a, l, v)| Op::Add(a, l, v)),
        // Cluster some prefixes so they nest.
        3 => (0u32..256, 16u8..=32, 0u8..8).prop_map(|(a, l, v)| Op::Add(0x0a00_0000 | a << 12, l, v)),
        2 => any::<usize>().prop_map(Op::Del),
        3 => any::<u32>().prop_map(Op::Look),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn matches_naive_reference(ops in proptest::collection::vec(op(), 1..200)) {
        let mut fib = Fib::new();
        fib.interface_set(1, Interface { mac: [2, 0, 0, 0, 0, 1], mtu: 1500, vlan: None });
        let mut reference = common::Reference::new();
        let mut live: Vec<Ipv4Prefix> = Vec::new();
        let mut r = fib.reader();
        let mut probe: Vec<u32> = Vec::new();
        for op in ops {
            match op {
                Op::Add(addr, len, v) => {
                    let p = Ipv4Prefix::new_truncated(Ipv4Addr::from(addr), len).unwrap();
                    let kind = RouteKind::Paths(vec![Path::gateway_on(Ipv4Addr::new(192, 0, 2, v + 1), 1)]);
                    let id = fib.route_add(0, p, kind).unwrap();
                    reference.insert(p, id);
                    if !live.contains(&p) { live.push(p); }
                    probe.extend([p.addr_u32(), p.last(), p.addr_u32().wrapping_sub(1), p.last().wrapping_add(1)]);
                }
                Op::Del(i) => {
                    if !live.is_empty() {
                        let p = live.swap_remove(i % live.len());
                        fib.route_del(0, p).unwrap();
                        reference.remove(p);
                    }
                }
                Op::Look(k) => probe.push(k),
            }
            let v = r.read();
            let t = v.table(0).unwrap();
            let mut out = vec![0u32; probe.len()];
            t.lookup_burst(&probe, &mut out);
            for (k, o) in probe.iter().zip(&out) {
                prop_assert_eq!(*o, reference.lookup(*k), "key {}", Ipv4Addr::from(*k));
                prop_assert_eq!(t.lookup(*k), *o);
            }
        }
    }
}

#[test]
fn handles_are_send() {
    fn send<T: Send>() {}
    send::<Fib>();
    send::<fib::FibReader>();
}

/// Every change a reader can see moves the version its views report, so a reader
/// that keeps decoded answers between views (the data plane's result cache) never
/// keeps one across a change; a view in between changes reports the same version.
#[test]
fn every_change_moves_the_view_version() {
    let mut fib = fib_with_ifaces();
    let mut r = fib.reader();
    let version = |r: &mut fib::FibReader| r.read().version();
    let mut last = version(&mut r);
    let mut moved = |r: &mut fib::FibReader, what: &str| {
        let v = version(r);
        assert!(v > last, "{what}: version {v} after {last}");
        assert_eq!(version(r), v, "{what}: two views between changes differ");
        last = v;
    };
    let nbr = IpAddr::V4(ip("10.0.1.2"));
    fib.interface_set(
        1,
        Interface {
            mac: [2, 0, 0, 0, 0, 9],
            mtu: 9000,
            vlan: None,
        },
    );
    moved(&mut r, "interface_set");
    fib.neighbor_set(1, nbr, Some([2, 0, 0, 0, 1, 2])).unwrap();
    moved(&mut r, "neighbor_set");
    fib.neighbor_set(1, nbr, Some([2, 0, 0, 0, 1, 3])).unwrap();
    moved(&mut r, "neighbor_set (MAC in place)");
    fib.route_add(
        0,
        pfx("198.18.0.0/16"),
        RouteKind::Paths(vec![Path::gateway(ip("10.0.1.2"))]),
    )
    .unwrap();
    moved(&mut r, "route_add");
    fib.route_add(
        0,
        pfx("198.18.0.0/16"),
        RouteKind::Paths(vec![Path::gateway(ip("10.0.1.2")).with_labels(&[100])]),
    )
    .unwrap();
    moved(&mut r, "route_add (replace)");
    let _held = fib.adjacency_hold(2, IpAddr::V4(ip("10.0.2.2"))).unwrap();
    moved(&mut r, "adjacency_hold");
    fib.neighbor_set(1, nbr, None).unwrap();
    moved(&mut r, "neighbor_set (incomplete)");
    fib.route_del(0, pfx("198.18.0.0/16")).unwrap();
    moved(&mut r, "route_del");
    fib.adjacency_release(2, IpAddr::V4(ip("10.0.2.2")));
    moved(&mut r, "adjacency_release");
    fib.neighbor_del(1, nbr).unwrap();
    moved(&mut r, "neighbor_del");
    {
        let mut b = fib.batch();
        b.route_add(
            0,
            pfx("198.19.0.0/16"),
            RouteKind::Paths(vec![Path::gateway(ip("10.0.2.2"))]),
        )
        .unwrap();
        b.commit();
    }
    moved(&mut r, "batch");
    fib.table_add(7).unwrap();
    moved(&mut r, "table_add");
}

/// (action, target, labels) of the bucket `hash` picks for `dst` in `table`.
fn forward_in(fib: &Fib, table: u32, dst: &str, hash: u32) -> (Action, u32, Vec<u32>) {
    let mut r = fib.reader();
    let v = r.read();
    let leg = v.leg(v.lookup(table, a(dst)), hash);
    let mut l = [0u32; fib::MAX_LABELS];
    let n = leg.labels_into(&mut l);
    (leg.action(), leg.target(), l[..n].to_vec())
}

fn lpm_changes(fib: &Fib) -> u64 {
    let s = fib.update_stats();
    s.in_place + s.new_block + s.new_root + s.unchanged + s.regions
}

#[test]
fn vpn_routes_resolve_in_the_global_table_and_follow_the_lsp() {
    let mut fib = fib_with_ifaces();
    fib.table_add(10).unwrap();
    fib.table_add(20).unwrap();
    fib.route_add(0, pfx("10.0.0.0/24"), RouteKind::Connected { ifindex: 1 })
        .unwrap();
    fib.route_add(0, pfx("10.0.1.0/24"), RouteKind::Connected { ifindex: 2 })
        .unwrap();
    // The transport LSP to the remote PE's loopback.
    let lsp = |gw: &str, l: u32| RouteKind::Paths(vec![Path::gateway(ip(gw)).with_labels(&[l])]);
    fib.route_add(0, pfx("192.0.2.4/32"), lsp("10.0.0.1", 1000))
        .unwrap();
    // Two VRFs with the same prefixes (overlapping the global table's too), each
    // with its VPN label, all over that LSP.
    let vpn = |l: u32| {
        RouteKind::Paths(vec![
            Path::gateway(ip("192.0.2.4")).in_table(0).with_labels(&[l]),
        ])
    };
    let mut ids = Vec::new();
    for k in 0..64u32 {
        let p = pfx(&format!("10.0.{k}.0/24"));
        ids.push((
            fib.route_add(10, p, vpn(77)).unwrap(),
            fib.route_add(20, p, vpn(88)).unwrap(),
        ));
    }
    assert!(ids.iter().all(|&x| x == ids[0]), "one path list per VRF");
    let adj1 = fib.adjacency_id(1, IpAddr::V4(ip("10.0.0.1"))).unwrap();
    assert_eq!(
        forward_in(&fib, 10, "10.0.5.9", 0),
        (Action::Forward, adj1, vec![1000, 77])
    );
    assert_eq!(
        forward_in(&fib, 20, "10.0.5.9", 0),
        (Action::Forward, adj1, vec![1000, 88])
    );
    assert_eq!(forward_in(&fib, 0, "10.0.0.9", 0).0, Action::Glean);

    // The LSP is relabelled and moves: every VPN route follows, and only the
    // global table's lookup structure changes (one /32), none of the VRFs'.
    let before = lpm_changes(&fib);
    fib.route_add(0, pfx("192.0.2.4/32"), lsp("10.0.1.1", 2000))
        .unwrap();
    assert!(lpm_changes(&fib) - before <= 1, "{:?}", fib.update_stats());
    let adj2 = fib.adjacency_id(2, IpAddr::V4(ip("10.0.1.1"))).unwrap();
    for k in [0, 31, 63] {
        let d = format!("10.0.{k}.1");
        assert_eq!(
            forward_in(&fib, 10, &d, 0),
            (Action::Forward, adj2, vec![2000, 77])
        );
        assert_eq!(
            forward_in(&fib, 20, &d, 0),
            (Action::Forward, adj2, vec![2000, 88])
        );
    }
    let p = pfx("10.0.9.0/24");
    assert_eq!(
        (fib.route(10, p), fib.route(20, p)),
        (Some(ids[0].0), Some(ids[0].1))
    );

    // The loopback unreachable: the VPN routes do not forward; back, they do.
    fib.route_del(0, pfx("192.0.2.4/32")).unwrap();
    assert_eq!(forward_in(&fib, 10, "10.0.5.9", 0).0, Action::NoRoute);
    fib.route_add(0, pfx("192.0.2.0/24"), lsp("10.0.0.1", 3000))
        .unwrap();
    let adj1 = fib.adjacency_id(1, IpAddr::V4(ip("10.0.0.1"))).unwrap();
    assert_eq!(
        forward_in(&fib, 20, "10.0.5.9", 0),
        (Action::Forward, adj1, vec![3000, 88])
    );

    // A VRF route's next hop is never looked up in the VRF itself.
    fib.route_add(10, pfx("192.0.2.0/24"), RouteKind::Blackhole)
        .unwrap();
    assert_eq!(
        forward_in(&fib, 10, "10.0.5.9", 0),
        (Action::Forward, adj1, vec![3000, 77])
    );

    // Bad input changes nothing.
    let before = fib.route(10, p);
    let bad = |path: Path| RouteKind::Paths(vec![path]);
    assert_eq!(
        fib.route_add(10, p, bad(Path::gateway(ip("192.0.2.4")).in_table(99))),
        Err(FibError::UnknownTable(99))
    );
    assert_eq!(
        fib.route_add(10, p, bad(Path::gateway_on(ip("10.0.0.1"), 1).in_table(0))),
        Err(FibError::ViaTableNeedsRecursive)
    );
    assert_eq!(fib.route(10, p), before);
    // A table others resolve in is not removed under them.
    fib.table_add(30).unwrap();
    fib.route_add(
        30,
        pfx("10.9.0.0/16"),
        bad(Path::gateway(ip("10.0.5.1")).in_table(20)),
    )
    .unwrap();
    assert_eq!(fib.table_del(20), Err(FibError::TableInUse(20, 30)));
    fib.table_del(30).unwrap();
    fib.table_del(20).unwrap();
}
