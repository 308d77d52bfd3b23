//! What the targets share (each uses a part).
#![allow(dead_code)]

use std::net::Ipv4Addr;

use ctl::config::Plan;
use ctl::routing::PortInfo;
use dataplane::router::Interface;

/// The ports of `plan` as the daemon would open them: ids in order, MACs by id.
pub fn port_infos(plan: &Plan) -> Vec<PortInfo> {
    plan.ports
        .iter()
        .enumerate()
        .map(|(i, p)| PortInfo {
            name: p.name.clone(),
            id: i as u16,
            mac: [2, 0, 0, 0, 0, i as u8],
        })
        .collect()
}

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
        addrs6: vec![
            (
                std::net::Ipv6Addr::new(0x2001, 0xdb8, u16::from(p) + 1, 0, 0, 0, 0, 1),
                64,
            ),
            (std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1), 64),
        ],
    }
}
