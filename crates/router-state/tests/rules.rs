//! The router's rules without DPDK: sources ranked, addresses' routes first,
//! a down interface's connected routes gone, neighbours by origin, labels by
//! source, refused changes that change nothing, and what the publisher is given.

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use fib::{Action, IpPrefix, Ipv4Prefix, Path, RouteKind};
use router_state::{Interface, InterfaceView, Publisher, RouteSource, RouterError, RouterState};

/// An interface as published: ifindex, up, addresses.
type Published = (u32, bool, Vec<(Ipv4Addr, u8)>);

/// What the publisher was given last: (ifindex, up, addresses) per interface,
/// the router id, and how many times.
#[derive(Default)]
struct Seen {
    ifaces: Vec<Published>,
    router_id: Option<Ipv4Addr>,
    count: usize,
}

struct Recorder(Arc<Mutex<Seen>>);

impl Publisher for Recorder {
    fn interfaces(&self, v: InterfaceView<'_>) {
        let mut s = self.0.lock().unwrap();
        s.ifaces = v
            .interfaces
            .values()
            .map(|i| (i.ifindex, i.up, i.addrs.clone()))
            .collect();
        s.router_id = v.router_id;
        s.count += 1;
    }
}

fn port(ifindex: u32) -> Interface {
    Interface {
        ifindex,
        name: format!("port{}", ifindex - 1),
        port: (ifindex - 1) as u16,
        vlan: None,
        mac: [2, 0, 0, 0, 0, ifindex as u8],
        mtu: 1500,
        up: true,
        table: 0,
        addrs: Vec::new(),
        addrs6: Vec::new(),
    }
}

fn pfx(s: &str) -> Ipv4Prefix {
    s.parse().unwrap()
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// A router with port0 (10.0.0.1/24) and port1 (10.1.0.1/24), both up.
fn router() -> (RouterState, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut r = RouterState::new(Box::new(Recorder(seen.clone())), 1024);
    r.add_interface(port(1)).unwrap();
    r.add_interface(port(2)).unwrap();
    r.add_address(1, ip("10.0.0.1"), 24).unwrap();
    r.add_address(2, ip("10.1.0.1"), 24).unwrap();
    (r, seen)
}

fn via(gw: &str, ifindex: u32) -> RouteKind {
    RouteKind::Paths(vec![Path::gateway_on(ip(gw), ifindex)])
}

/// The action the FIB takes for `dst` in table 0.
fn action(r: &RouterState, dst: &str) -> Action {
    let mut reader = r.fib().reader();
    let v = reader.read();
    let id = v.lookup(0, u32::from(ip(dst)));
    v.leg(id, 0).action()
}

#[test]
fn ipv6_routes_and_addresses_forward_beside_ipv4_ones() {
    let (mut r, _) = router();
    let p6: IpPrefix = "2001:db8::/32".parse().unwrap();
    r.route_add_from(RouteSource::Dpctl, 0, p6, RouteKind::Blackhole)
        .unwrap();
    assert_eq!(r.route_source(0, p6), Some(RouteSource::Dpctl));
    let lookup6 = |r: &RouterState, dst: &str| {
        let mut reader = r.fib().reader();
        let v = reader.read();
        let id = v.lookup6(0, u128::from(dst.parse::<std::net::Ipv6Addr>().unwrap()));
        v.leg(id, 0).action()
    };
    assert_eq!(lookup6(&r, "2001:db8::1"), Action::Drop);
    // An address: its /128 is local, its subnet connected while the port is up;
    // a link-local one gets no route.
    let a6: std::net::Ipv6Addr = "2001:db8:1::1".parse().unwrap();
    r.add_address(1, a6, 64).unwrap();
    r.add_address(1, "fe80::1".parse::<std::net::Ipv6Addr>().unwrap(), 64)
        .unwrap();
    assert_eq!(lookup6(&r, "2001:db8:1::1"), Action::Local);
    assert_eq!(lookup6(&r, "2001:db8:1::2"), Action::Glean);
    assert_eq!(lookup6(&r, "fe80::1"), Action::NoRoute);
    assert_eq!(r.iface(1).unwrap().addrs6.len(), 2);
    r.set_up(1, false).unwrap();
    assert_eq!(lookup6(&r, "2001:db8:1::2"), Action::Drop);
    r.set_up(1, true).unwrap();
    // A neighbour on the subnet gets its host route.
    let n6: std::net::Ipv6Addr = "2001:db8:1::2".parse().unwrap();
    r.set_neighbor6(1, n6, [2, 0, 0, 0, 0, 9]).unwrap();
    assert_eq!(lookup6(&r, "2001:db8:1::2"), Action::Forward);
    r.del_neighbor6(1, n6).unwrap();
    assert_eq!(lookup6(&r, "2001:db8:1::2"), Action::Glean);
    r.del_address(1, a6, 64).unwrap();
    assert_eq!(lookup6(&r, "2001:db8:1::2"), Action::Drop);
    assert!(matches!(
        r.del_address(1, a6, 64),
        Err(RouterError::NoSuchAddress(..))
    ));
    r.route_del_from(RouteSource::Dpctl, 0, p6).unwrap();
    assert_eq!(lookup6(&r, "2001:db8::1"), Action::NoRoute);
    assert!(matches!(
        r.route_del_from(RouteSource::Dpctl, 0, p6),
        Err(RouterError::NoSuchRoute(p, 0)) if p == p6
    ));
    // IPv4 routes key the same RIB.
    let p4 = pfx("192.0.2.0/24");
    r.route_add_from(RouteSource::Dpctl, 0, p4, RouteKind::Blackhole)
        .unwrap();
    assert_eq!(
        r.route_source(0, IpPrefix::V4(p4)),
        Some(RouteSource::Dpctl)
    );
}

#[test]
fn the_most_preferred_source_forwards_and_a_withdrawal_reveals_the_next() {
    let (mut r, _) = router();
    let p = pfx("192.0.2.0/24");
    r.route_add_from(RouteSource::Kernel, 0, p, via("10.0.0.2", 1))
        .unwrap();
    r.route_add_from(RouteSource::Dpctl, 0, p, RouteKind::Blackhole)
        .unwrap();
    assert_eq!(r.route_source(0, p), Some(RouteSource::Dpctl));
    assert_eq!(action(&r, "192.0.2.9"), Action::Drop);
    r.route_del_from(RouteSource::Dpctl, 0, p).unwrap();
    assert_eq!(r.route_source(0, p), Some(RouteSource::Kernel));
    assert_eq!(r.route_kind(0, p), Some(&via("10.0.0.2", 1)));
    // The order is set at start (refused once routes exist); another order
    // puts the kernel first.
    let order = [
        RouteSource::Kernel,
        RouteSource::Fpm,
        RouteSource::Config,
        RouteSource::Dpctl,
    ];
    assert!(r.set_route_preference(&order).is_err());
    let mut k = RouterState::default();
    k.set_route_preference(&order).unwrap();
    k.route_add_from(RouteSource::Config, 0, p, RouteKind::Blackhole)
        .unwrap();
    k.route_add_from(RouteSource::Kernel, 0, p, RouteKind::Unreachable)
        .unwrap();
    assert_eq!(k.route_source(0, p), Some(RouteSource::Kernel));
}

#[test]
fn an_address_route_beats_every_source_and_a_down_interface_loses_its_connected_route() {
    let (mut r, seen) = router();
    let connected = pfx("10.0.0.0/24");
    // A source's route for the connected prefix waits behind the address's.
    r.route_add_from(RouteSource::Kernel, 0, connected, RouteKind::Blackhole)
        .unwrap();
    assert_eq!(r.route_source(0, connected), None, "the address's route");
    assert_ne!(action(&r, "10.0.0.7"), Action::Drop);
    // Down: the connected route goes (the address stays), the kernel's shows.
    r.set_up(1, false).unwrap();
    assert_eq!(r.route_source(0, connected), Some(RouteSource::Kernel));
    assert_eq!(action(&r, "10.0.0.7"), Action::Drop);
    {
        let s = seen.lock().unwrap();
        assert!(s.ifaces.contains(&(1, false, vec![(ip("10.0.0.1"), 24)])));
    }
    r.set_up(1, true).unwrap();
    assert_eq!(r.route_source(0, connected), None);
}

#[test]
fn a_refused_change_changes_nothing() {
    let (mut r, seen) = router();
    let before = seen.lock().unwrap().count;
    let routes: Vec<_> = r.routes().map(|(t, p, k)| (t, p, k.clone())).collect();
    // An unknown interface, a next hop off every link, a bad address, a
    // duplicate interface: each refused.
    assert!(
        r.route_add_from(
            RouteSource::Dpctl,
            0,
            pfx("192.0.2.0/24"),
            via("10.0.0.2", 9)
        )
        .is_err()
    );
    assert!(r.add_address(1, ip("224.0.0.1"), 24).is_err());
    assert!(r.add_address(9, ip("10.9.0.1"), 24).is_err());
    assert!(r.add_interface(port(1)).is_err());
    assert!(
        r.route_add_from(
            RouteSource::Dpctl,
            7,
            pfx("192.0.2.0/24"),
            RouteKind::Blackhole
        )
        .is_err()
    );
    let after: Vec<_> = r.routes().map(|(t, p, k)| (t, p, k.clone())).collect();
    assert_eq!(routes, after);
    assert_eq!(seen.lock().unwrap().count, before, "nothing published");
}

#[test]
fn neighbours_by_origin_and_the_router_id_by_source() {
    let (mut r, seen) = router();
    let n = ip("10.0.0.2");
    // Heard in ARP, then configured: the configured MAC wins and stays.
    r.heard_arp(1, n, [2, 0, 0, 0, 0, 0x22], std::time::Instant::now());
    assert_eq!(r.neighbors().get(&(1, n)), Some(&[2, 0, 0, 0, 0, 0x22]));
    r.set_neighbor(1, n, [2, 0, 0, 0, 0, 0x33]).unwrap();
    r.heard_arp(1, n, [2, 0, 0, 0, 0, 0x44], std::time::Instant::now());
    assert_eq!(r.neighbors().get(&(1, n)), Some(&[2, 0, 0, 0, 0, 0x33]));
    assert!(r.is_static_neighbor(1, n));
    // The router id: the file's, then dpctl's over it, withdrawn back.
    r.set_router_id(Some(ip("192.0.2.1")));
    r.set_router_id_from(RouteSource::Dpctl, Some(ip("192.0.2.2")));
    assert_eq!(seen.lock().unwrap().router_id, Some(ip("192.0.2.2")));
    r.set_router_id_from(RouteSource::Dpctl, None);
    assert_eq!(r.router_id(), Some(ip("192.0.2.1")));
    assert_eq!(seen.lock().unwrap().router_id, Some(ip("192.0.2.1")));
}

#[test]
fn labels_by_source_and_a_batch_publishes_once() {
    let (mut r, seen) = router();
    r.label_add_from(RouteSource::Kernel, 100, true, mpls::LabelAction::Drop)
        .unwrap();
    r.label_add_from(
        RouteSource::Dpctl,
        100,
        true,
        mpls::LabelAction::ip4_lookup(0),
    )
    .unwrap();
    assert_eq!(r.label_source(100, true), Some(RouteSource::Dpctl));
    assert_eq!(
        r.labels().get(100, true),
        Some(&mpls::LabelAction::ip4_lookup(0))
    );
    r.label_del_from(RouteSource::Dpctl, 100, true).unwrap();
    assert_eq!(r.labels().get(100, true), Some(&mpls::LabelAction::Drop));
    // Held: many interface changes, one publication at the end.
    let before = seen.lock().unwrap().count;
    let held = r.hold_publication();
    for k in 0..10u8 {
        r.add_address(2, Ipv4Addr::new(10, 2, k, 1), 24).unwrap();
    }
    assert_eq!(seen.lock().unwrap().count, before);
    r.release_publication(held);
    assert_eq!(seen.lock().unwrap().count, before + 1);
    assert_eq!(seen.lock().unwrap().ifaces[1].2.len(), 11);
}
