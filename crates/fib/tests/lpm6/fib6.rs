//! IPv6 routes in the FIB: the route kinds, link-local and recursive next hops,
//! ECMP, neighbours, both families side by side in a table, tables removed with
//! their routes, and the 2024 table with a distinct result per prefix, checked
//! against a naive reference at rest and while it churns under readers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::common::{self, Reference6, fib_with_port};
use fib::{Action, Fib, FibError, Interface, Ipv6Prefix, Path, RouteKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn p6(s: &str) -> Ipv6Prefix {
    s.parse().expect("prefix")
}

fn a6(s: &str) -> Ipv6Addr {
    s.parse().expect("address")
}

fn key(s: &str) -> u128 {
    u128::from(a6(s))
}

const MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 9];

/// (action, out-interface or adjacency's interface, neighbour, labels) of the leg
/// a lookup of `dst` finds for flow hash `h`.
fn forward(fib: &Fib, dst: &str, h: u32) -> (Action, Option<IpAddr>, Vec<u32>) {
    let mut r = fib.reader();
    let v = r.read();
    let id = v.lookup6(0, key(dst));
    let leg = v.leg(id, h);
    let mut l = [0; fib::MAX_LABELS];
    let n = leg.labels_into(&mut l);
    let nbr = match leg.action() {
        Action::Forward => v
            .adjacency(leg.target())
            .and_then(|a| a.neighbor6.map(IpAddr::V6).or(a.neighbor.map(IpAddr::V4))),
        _ => None,
    };
    (leg.action(), nbr, l[..n].to_vec())
}

#[test]
fn kinds_link_local_next_hops_and_neighbours() {
    let mut fib = fib_with_port();
    let ll = a6("fe80::1");
    fib.route6_add(0, p6("2001:db8::/64"), RouteKind::Connected { ifindex: 1 })
        .unwrap();
    fib.route6_add(0, p6("::/0"), RouteKind::Paths(vec![Path::gateway6(ll, 1)]))
        .unwrap();
    for (p, k, a) in [
        ("2001:db8:dead::/48", RouteKind::Blackhole, Action::Drop),
        (
            "2001:db8:beef::/48",
            RouteKind::Unreachable,
            Action::Unreachable,
        ),
        ("2001:db8:f00d::/48", RouteKind::Prohibit, Action::Prohibit),
        ("2001:db8::1/128", RouteKind::Local, Action::Local),
    ] {
        fib.route6_add(0, p6(p), k).unwrap();
        let probe = p.split('/').next().unwrap();
        assert_eq!(forward(&fib, probe, 0).0, a, "{p}");
    }
    assert_eq!(forward(&fib, "2001:db8::2", 0).0, Action::Glean);
    // The link-local gateway: incomplete, with its address for solicitation.
    let (act, nbr, _) = forward(&fib, "2606:4700::1", 0);
    assert_eq!((act, nbr), (Action::Forward, Some(IpAddr::V6(ll))));
    {
        let mut r = fib.reader();
        let v = r.read();
        let leg = v.leg(v.lookup6(0, key("2606:4700::1")), 0);
        let adj = v.adjacency(leg.target()).unwrap();
        assert!(!adj.complete);
        assert_eq!(adj.neighbor, None);
    }
    fib.neighbor_set(1, IpAddr::V6(ll), Some(MAC)).unwrap();
    let mut r = fib.reader();
    let v = r.read();
    let leg = v.leg(v.lookup6(0, key("2606:4700::1")), 0);
    let adj = v.adjacency(leg.target()).unwrap();
    assert!(adj.complete);
    assert_eq!(adj.dst_mac, MAC);
    assert_eq!(adj.neighbor6, Some(ll));
    drop(v);
    // A link-local gateway needs its link.
    assert_eq!(
        fib.route6_add(
            0,
            p6("2001:db8:1::/48"),
            RouteKind::Paths(vec![Path {
                ifindex: None,
                ..Path::gateway6(ll, 1)
            }])
        ),
        Err(FibError::NeedsInterface(IpAddr::V6(ll)))
    );
    // Deletes: exact prefix only; then the default answers.
    assert_eq!(
        fib.route6_del(0, p6("2001:db8:de00::/40")),
        Err(FibError::NoSuchRoute(p6("2001:db8:de00::/40").into(), 0))
    );
    fib.route6_del(0, p6("2001:db8:dead::/48")).unwrap();
    assert_eq!(forward(&fib, "2001:db8:dead::", 0).0, Action::Forward);
    assert_eq!(fib.route6_count(0), 5);
}

#[test]
fn both_families_in_one_table_stay_apart() {
    let mut fib = fib_with_port();
    fib.route_add(0, "0.0.0.0/0".parse().unwrap(), RouteKind::Blackhole)
        .unwrap();
    let mut r = fib.reader();
    assert_eq!(r.read().lookup6(0, key("2001:db8::1")), 0);
    fib.route6_add(0, p6("::/0"), RouteKind::Unreachable)
        .unwrap();
    {
        let v = r.read();
        assert_eq!(v.leg(v.lookup6(0, 1), 0).action(), Action::Unreachable);
        assert_eq!(v.leg(v.lookup(0, 1), 0).action(), Action::Drop);
    }
    fib.route_del(0, "0.0.0.0/0".parse().unwrap()).unwrap();
    let v = r.read();
    assert_eq!(v.lookup(0, 1), 0);
    assert_eq!(v.leg(v.lookup6(0, 1), 0).action(), Action::Unreachable);
    assert_eq!(fib.route_count(0), 0);
    assert_eq!(fib.route6_count(0), 1);
}

#[test]
fn recursive_next_hops_follow_their_cover() {
    let mut fib = fib_with_port();
    let gw = a6("2001:db8::99");
    let nh1 = a6("fe80::1");
    let nh2 = a6("fe80::2");
    // BGP-style: a prefix through a global next hop, resolved via the IGP route.
    fib.route6_add(
        0,
        p6("2001:db8:100::/40"),
        RouteKind::Paths(vec![Path {
            ifindex: None,
            ..Path::gateway6(gw, 1).with_labels(&[100])
        }]),
    )
    .unwrap();
    assert_eq!(forward(&fib, "2001:db8:100::1", 0).0, Action::NoRoute);
    fib.route6_add(
        0,
        p6("2001:db8::/32"),
        RouteKind::Paths(vec![Path::gateway6(nh1, 1).with_labels(&[16])]),
    )
    .unwrap();
    assert_eq!(
        forward(&fib, "2001:db8:100::1", 0),
        (Action::Forward, Some(IpAddr::V6(nh1)), vec![16, 100])
    );
    // A more specific route to the next hop takes over.
    fib.route6_add(
        0,
        p6("2001:db8::/64"),
        RouteKind::Paths(vec![Path::gateway6(nh2, 1)]),
    )
    .unwrap();
    assert_eq!(
        forward(&fib, "2001:db8:100::1", 0),
        (Action::Forward, Some(IpAddr::V6(nh2)), vec![100])
    );
    // A connected cover: the next hop itself is the neighbour.
    fib.route6_add(0, p6("2001:db8::/64"), RouteKind::Connected { ifindex: 1 })
        .unwrap();
    assert_eq!(
        forward(&fib, "2001:db8:100::1", 0),
        (Action::Forward, Some(IpAddr::V6(gw)), vec![100])
    );
    fib.route6_del(0, p6("2001:db8::/64")).unwrap();
    assert_eq!(forward(&fib, "2001:db8:100::1", 0).1, Some(IpAddr::V6(nh1)));
    fib.route6_del(0, p6("2001:db8::/32")).unwrap();
    assert_eq!(forward(&fib, "2001:db8:100::1", 0).0, Action::NoRoute);
    // An IPv4 route through an IPv6 next hop (RFC 5549) resolved the same way, and
    // an IPv6 route through an IPv4 one (6PE's IPv4-mapped next hop, resolved in
    // IPv4's routes).
    fib.route6_add(0, p6("2001:db8::/32"), RouteKind::Connected { ifindex: 1 })
        .unwrap();
    fib.route_add(
        0,
        "198.51.100.0/24".parse().unwrap(),
        RouteKind::Paths(vec![Path {
            ifindex: None,
            ..Path::gateway6(gw, 1)
        }]),
    )
    .unwrap();
    let v4gw = Ipv4Addr::new(192, 0, 2, 1);
    fib.route_add(
        0,
        "192.0.2.0/24".parse().unwrap(),
        RouteKind::Connected { ifindex: 1 },
    )
    .unwrap();
    fib.route6_add(
        0,
        p6("2001:db8:200::/40"),
        RouteKind::Paths(vec![Path::gateway(v4gw).with_labels(&[200])]),
    )
    .unwrap();
    let mut r = fib.reader();
    let v = r.read();
    let leg = v.leg(v.lookup(0, u32::from(Ipv4Addr::new(198, 51, 100, 7))), 0);
    assert_eq!(leg.action(), Action::Forward);
    assert_eq!(v.adjacency(leg.target()).unwrap().neighbor6, Some(gw));
    drop(v);
    assert_eq!(
        forward(&fib, "2001:db8:200::1", 0),
        (Action::Forward, Some(IpAddr::V4(v4gw)), vec![200])
    );
}

#[test]
fn ecmp_weights_and_tables() {
    let mut fib = fib_with_port();
    let (a, b) = (a6("fe80::a"), a6("fe80::b"));
    fib.route6_add(
        0,
        p6("2001:db8::/32"),
        RouteKind::Paths(vec![
            Path::gateway6(a, 1).with_weight(3),
            Path::gateway6(b, 1),
        ]),
    )
    .unwrap();
    let mut r = fib.reader();
    let v = r.read();
    let id = v.lookup6(0, key("2001:db8::1"));
    let n = v.bucket_count(id);
    let on_a = (0..n)
        .filter(|&h| {
            let leg = v.leg(id, h);
            v.adjacency(leg.target()).unwrap().neighbor6 == Some(a)
        })
        .count() as u32;
    assert_eq!(on_a * 4, n * 3, "3:1 over {n} buckets");
    drop(v);
    // A second table: its own IPv6 routes; removing it removes them.
    fib.table_add(7).unwrap();
    fib.route6_add(7, p6("::/0"), RouteKind::Prohibit).unwrap();
    let v = r.read();
    assert_eq!(v.leg(v.lookup6(7, 5), 0).action(), Action::Prohibit);
    assert_eq!(v.lookup6(0, 5), 0);
    drop(v);
    fib.table_del(7).unwrap();
    let v = r.read();
    assert_eq!(v.lookup6(7, 5), 0);
    drop(v);
    // The interface is in use by IPv6 legs.
    assert_eq!(fib.interface_del(1), Err(FibError::InterfaceInUse(1)));
    fib.route6_del(0, p6("2001:db8::/32")).unwrap();
    fib.interface_set(
        2,
        Interface {
            mac: [2, 0, 0, 0, 0, 2],
            mtu: 9000,
            vlan: Some(10),
        },
    );
    fib.interface_del(2).unwrap();
}

/// The 2024 table (or its stand-in), each prefix valued with its own label.
fn load_v6_2024() -> Vec<(Ipv6Prefix, u32)> {
    common::load_v6_2024()
        .into_iter()
        .enumerate()
        .map(|(i, (p, _))| (p, i as u32 + 16))
        .collect()
}

/// The label carried by the leg of `id`: each prefix of the big table gets its own.
fn label_of(v: &fib::FibView<'_>, id: u32) -> u32 {
    v.leg(id, 0).label(0)
}

fn labelled(value: u32) -> RouteKind {
    RouteKind::Paths(vec![
        Path::gateway6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1), 1).with_labels(&[value]),
    ])
}

/// The 2024 table loaded in one batch, each prefix its own labelled result,
/// and the reference holding the same.
fn loaded() -> (Vec<(Ipv6Prefix, u32)>, Fib, Reference6) {
    let table = load_v6_2024();
    let mut fib = fib_with_port();
    let mut reference = Reference6::new();
    {
        let mut b = fib.batch();
        for &(p, v) in &table {
            b.route6_add(0, p, labelled(v)).unwrap();
            reference.insert(p, v);
        }
    }
    (table, fib, reference)
}

/// Keys drawn from the table: a random address inside each of `n` random prefixes.
fn keys_in(table: &[(Ipv6Prefix, u32)], n: usize, rng: &mut StdRng) -> Vec<u128> {
    (0..n)
        .map(|_| {
            let (p, _) = table[rng.random_range(0..table.len())];
            p.addr_u128() | (rng.random::<u128>() & !common::mask6(p.prefix_len()))
        })
        .collect()
}

#[test]
fn full_table_each_prefix_its_own_result() {
    let (table, fib, reference) = loaded();
    assert_eq!(fib.route6_count(0), table.len());
    assert!(fib.result_count() >= table.len());
    let mut rng = StdRng::seed_from_u64(6);
    let mut keys = keys_in(&table, 200_000, &mut rng);
    keys.extend(common::edges(&table));
    let mut r = fib.reader();
    let v = r.read();
    let mut out = vec![0u32; keys.len()];
    assert!(v.lookup6_burst(0, &keys, &mut out));
    let mut wrong = 0;
    for (&k, &id) in keys.iter().zip(&out) {
        let want = reference.lookup(k);
        let got = if id == 0 { 0 } else { label_of(&v, id) };
        if got != want || v.lookup6(0, k) != id {
            wrong += 1;
        }
    }
    assert_eq!(wrong, 0, "of {} keys", keys.len());
    let mem = fib.memory();
    eprintln!(
        "{} prefixes: lpm {} B/prefix, fib total {} MiB",
        table.len(),
        mem.lpm_bytes / table.len(),
        mem.total() >> 20
    );
}

#[test]
fn churn_under_readers_answers_only_covering_prefixes() {
    let (table, mut fib, mut reference) = loaded();
    let values: std::collections::HashMap<(u128, u8), u32> = table
        .iter()
        .map(|&(p, v)| ((p.addr_u128(), p.prefix_len()), v))
        .collect();
    let mut rng = StdRng::seed_from_u64(66);
    let probes = Arc::new(keys_in(&table, 1 << 14, &mut rng));
    // label -> prefix, so a reader can tell an answer belongs to a cover of its key.
    let by_label: Arc<Vec<Ipv6Prefix>> = {
        let mut v = vec![p6("::/0"); table.len() + 16];
        for &(p, l) in &table {
            v[l as usize] = p;
        }
        Arc::new(v)
    };
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let mut r = fib.reader();
            let (done, checked, probes, by_label) = (
                done.clone(),
                checked.clone(),
                probes.clone(),
                by_label.clone(),
            );
            std::thread::spawn(move || {
                let mut out = [0u32; 256];
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    for chunk in probes.chunks(256) {
                        let v = r.read();
                        v.lookup6_burst(0, chunk, &mut out);
                        for (&k, &id) in chunk.iter().zip(&out) {
                            if id != 0 {
                                let l = label_of(&v, id) as usize;
                                let p = by_label.get(l).copied().unwrap_or(p6("::/0"));
                                assert!(
                                    l != 0 && p.contains(Ipv6Addr::from(k)),
                                    "{k:x}: label {l} ({p}) does not cover it"
                                );
                            }
                            n += 1;
                        }
                    }
                }
                checked.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    // Withdraw and re-add a fifth of the table, one change at a time, twice.
    for _ in 0..2 {
        let mut gone = Vec::new();
        for _ in 0..table.len() / 5 {
            let (p, _) = table[rng.random_range(0..table.len())];
            if reference.remove(p).is_some() {
                fib.route6_del(0, p).unwrap();
                gone.push(p);
            }
        }
        for p in gone {
            let v = values[&(p.addr_u128(), p.prefix_len())];
            fib.route6_add(0, p, labelled(v)).unwrap();
            reference.insert(p, v);
        }
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("reader");
    }
    assert!(checked.load(Ordering::Relaxed) > 0);
    let mut r = fib.reader();
    let v = r.read();
    for &k in probes.iter() {
        let id = v.lookup6(0, k);
        let got = if id == 0 { 0 } else { label_of(&v, id) };
        assert_eq!(got, reference.lookup(k), "{k:x}");
    }
}
