//! An adjacency carries its neighbour's IPv4 address, complete or not, so the data
//! plane can ARP for a gateway whose MAC is unknown.

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use fib::Interface;

#[test]
fn adjacency_knows_its_neighbor() {
    let mut fib = common::fib_with_port();
    let gw = Ipv4Addr::new(192, 168, 11, 8);
    let id = fib.neighbor_set(1, IpAddr::V4(gw), None).unwrap();
    let mut r = fib.reader();
    let a = r.read().adjacency(id).unwrap();
    assert!(!a.complete);
    assert_eq!(a.neighbor, Some(gw));
    let id2 = fib
        .neighbor_set(1, IpAddr::V4(gw), Some([2, 0, 0, 0, 0, 8]))
        .unwrap();
    assert_eq!(id, id2);
    let a = r.read().adjacency(id).unwrap();
    assert!(a.complete);
    assert_eq!(a.neighbor, Some(gw));
    assert_eq!(a.dst_mac, [2, 0, 0, 0, 0, 8]);
    // Changing the interface rewrites the adjacency and keeps the neighbour.
    fib.interface_set(
        1,
        Interface {
            mac: [2, 0, 0, 0, 0, 1],
            mtu: 9000,
            vlan: Some(7),
        },
    );
    let a = r.read().adjacency(id).unwrap();
    assert_eq!((a.neighbor, a.mtu, a.vlan), (Some(gw), 9000, Some(7)));
    // IPv6 next hops have no IPv4 neighbour address.
    let v6 = fib
        .neighbor_set(1, IpAddr::V6(Ipv6Addr::LOCALHOST), None)
        .unwrap();
    assert_eq!(r.read().adjacency(v6).unwrap().neighbor, None);
}
