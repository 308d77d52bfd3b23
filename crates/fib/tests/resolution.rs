//! Property test: recursive resolution and its dependency tracking against a naive
//! resolver that recomputes everything from the route set after every change.
//!
//! Layered universe (so no route can resolve through itself): level 0 routes are
//! connected or onlink in 10/8, level 1 routes in 172.16/12 resolve gateways in 10/8,
//! level 2 routes resolve gateways in 172.16/12.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use fib::{Action, Fib, Interface, Ipv4Prefix, Path, RouteKind};
use proptest::prelude::*;

fn pfx(s: &str) -> Ipv4Prefix {
    s.parse().expect("prefix")
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().expect("address")
}

const L0: [&str; 2] = ["10.0.1.128/25", "10.0.1.192/26"];
const L1: [&str; 5] = [
    "172.16.0.0/16",
    "172.16.1.0/24",
    "172.16.1.1/32",
    "172.16.2.0/24",
    "172.17.0.0/16",
];
const L2: [&str; 3] = ["198.51.100.0/24", "198.51.100.128/25", "203.0.113.0/24"];

fn kinds(level: usize) -> Vec<RouteKind> {
    let p = |path: Path| RouteKind::Paths(vec![path]);
    match level {
        0 => vec![
            p(Path::gateway_on(ip("10.0.2.9"), 2).with_labels(&[5])),
            p(Path::gateway_on(ip("10.0.2.10"), 2)),
            RouteKind::Blackhole,
        ],
        1 => vec![
            p(Path::gateway(ip("10.0.1.1"))),
            p(Path::gateway(ip("10.0.1.200")).with_labels(&[10])),
            p(Path::gateway(ip("10.0.2.5")).with_labels(&[11])),
            p(Path::gateway_on(ip("10.0.2.7"), 2)),
            RouteKind::Blackhole,
        ],
        _ => vec![
            p(Path::gateway(ip("172.16.1.1")).with_labels(&[20])),
            p(Path::gateway(ip("172.16.2.2"))),
            p(Path::gateway(ip("172.17.0.1")).with_labels(&[21])),
        ],
    }
}

/// (action, interface, neighbour, labels) — what a packet gets.
type Fwd = (Action, u32, Option<Ipv4Addr>, Vec<u32>);

struct Model {
    routes: BTreeMap<Ipv4Prefix, RouteKind>,
}

impl Model {
    fn lpm(&self, a: u32, skip: Option<&RouteKind>) -> Option<(&Ipv4Prefix, &RouteKind)> {
        self.routes
            .iter()
            .filter(|(p, k)| p.contains(a) && Some(*k) != skip)
            .max_by_key(|(p, _)| p.prefix_len())
    }

    fn forward(&self, kind: &RouteKind) -> Fwd {
        let none = (Action::NoRoute, 0, None, vec![]);
        match kind {
            RouteKind::Connected { ifindex } => (Action::Glean, *ifindex, None, vec![]),
            RouteKind::Blackhole => (Action::Drop, 0, None, vec![]),
            RouteKind::Paths(ps) => {
                let p = &ps[0];
                let fib::Via::Gateway(gw) = p.via else {
                    return none;
                };
                if let Some(i) = p.ifindex {
                    return (Action::Forward, i, Some(gw), p.labels.clone());
                }
                // Routes with the same paths share a path list, which may not resolve
                // through a route that uses it.
                let Some((_, c)) = self.lpm(u32::from(gw), Some(kind)) else {
                    return none;
                };
                match self.forward(c) {
                    (Action::Glean, i, _, _) => (Action::Forward, i, Some(gw), p.labels.clone()),
                    (Action::Forward, i, n, mut l) => {
                        l.extend_from_slice(&p.labels);
                        (Action::Forward, i, n, l)
                    }
                    _ => none,
                }
            }
            _ => none,
        }
    }

    fn lookup(&self, a: u32) -> Fwd {
        match self.lpm(a, None) {
            Some((_, k)) => self.forward(k),
            None => (Action::NoRoute, 0, None, vec![]),
        }
    }
}

fn actual(fib: &Fib, a: u32) -> Fwd {
    let mut r = fib.reader();
    let v = r.read();
    let leg = v.leg(v.lookup(0, a), 0);
    let mut l = [0u32; fib::MAX_LABELS];
    let n = leg.labels_into(&mut l);
    match leg.action() {
        Action::Forward => {
            let adj = v.adjacency(leg.target()).expect("adjacency");
            let nbr = adj.neighbor;
            prop_assert_eq_adj(fib, adj.ifindex, nbr, leg.target());
            (Action::Forward, adj.ifindex, nbr, l[..n].to_vec())
        }
        Action::Glean => (Action::Glean, leg.target(), None, vec![]),
        other => (other, 0, None, vec![]),
    }
}

/// The adjacency the leg points at is the FIB's adjacency for that neighbour.
fn prop_assert_eq_adj(fib: &Fib, ifindex: u32, nbr: Option<Ipv4Addr>, id: u32) {
    let nbr = nbr.expect("IPv4 neighbour");
    assert_eq!(fib.adjacency_id(ifindex, IpAddr::V4(nbr)), Some(id));
}

#[derive(Clone, Debug)]
enum Op {
    Add(usize, usize, usize),
    Del(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..3, 0usize..5, 0usize..5).prop_map(|(l, p, k)| Op::Add(l, p, k)),
        1 => (0usize..3, 0usize..5).prop_map(|(l, p)| Op::Del(l, p)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn resolution_matches_naive_resolver(ops in proptest::collection::vec(op(), 1..40)) {
        let mut fib = Fib::new();
        let mut model = Model { routes: BTreeMap::new() };
        for i in 1..=2u8 {
            fib.interface_set(u32::from(i), Interface { mac: [2, 0, 0, 0, 0, i], mtu: 1500, vlan: None });
        }
        for (p, i) in [("10.0.1.0/24", 1), ("10.0.2.0/24", 2)] {
            let k = RouteKind::Connected { ifindex: i };
            fib.route_add(0, pfx(p), k.clone()).unwrap();
            model.routes.insert(pfx(p), k);
        }
        let universe: [&[&str]; 3] = [&L0, &L1, &L2];
        let mut probes: Vec<u32> = Vec::new();
        for l in universe {
            for p in l {
                let p = pfx(p);
                probes.extend([p.addr_u32(), p.last(), p.addr_u32() | ((p.last() - p.addr_u32()) / 2)]);
            }
        }
        for g in ["10.0.1.1", "10.0.1.200", "10.0.2.5", "172.16.1.1", "172.16.2.2", "172.17.0.1"] {
            probes.push(u32::from(ip(g)));
        }
        for op in ops {
            match op {
                Op::Add(l, p, k) => {
                    let p = pfx(universe[l][p % universe[l].len()]);
                    let ks = kinds(l);
                    let k = ks[k % ks.len()].clone();
                    fib.route_add(0, p, k.clone()).unwrap();
                    model.routes.insert(p, k);
                }
                Op::Del(l, p) => {
                    let p = pfx(universe[l][p % universe[l].len()]);
                    let r = fib.route_del(0, p);
                    prop_assert_eq!(r.is_ok(), model.routes.remove(&p).is_some());
                }
            }
            for &a in &probes {
                prop_assert_eq!(actual(&fib, a), model.lookup(a), "at {}", Ipv4Addr::from(a));
            }
        }
    }
}
