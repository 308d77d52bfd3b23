//! What the targets share.

use std::net::Ipv4Addr;

use dataplane::router::Interface;

/// Port `p` as interface p + 1, `port{p}`, 10.(p+1).0.1/24, in table 0.
pub fn port(p: u8, mtu: u16) -> Interface {
    Interface {
        ifindex: u32::from(p) + 1,
        name: format!("port{p}"),
        port: u16::from(p),
        vlan: None,
        mac: [2, 0, 0, 0, p, 1],
        mtu,
        up: true,
        table: 0,
        addrs: vec![(Ipv4Addr::new(10, p + 1, 0, 1), 24)],
    }
}
