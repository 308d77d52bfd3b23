//! The interface and pseudowire records the workers get (through the
//! [`Publisher`](crate::Publisher)), and the rules of an interface's addresses.

use std::net::{Ipv4Addr, Ipv6Addr};

/// One interface: a port, or an 802.1Q sub-interface of a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// ifIndex (1..MAX_IFACES): the numbering `show interfaces` and sFlow use.
    pub ifindex: u32,
    /// Name (`port0`, `port0.100`).
    pub name: String,
    /// DPDK port id.
    pub port: u16,
    /// VLAN id for a sub-interface.
    pub vlan: Option<u16>,
    /// MAC address (the port's).
    pub mac: [u8; 6],
    /// IP MTU.
    pub mtu: u16,
    /// Administratively up.
    pub up: bool,
    /// IPv4 table the interface belongs to.
    pub table: u32,
    /// IPv4 addresses with prefix lengths.
    pub addrs: Vec<(Ipv4Addr, u8)>,
    /// IPv6 addresses with prefix lengths (link-local ones included).
    pub addrs6: Vec<(Ipv6Addr, u8)>,
}

impl Interface {
    /// The first IPv4 address (source of ICMP errors sent from this interface).
    #[inline]
    pub fn primary_addr(&self) -> Option<Ipv4Addr> {
        self.addrs.first().map(|a| a.0)
    }

    /// Whether `ip` is one of the interface's addresses.
    #[inline]
    pub fn has_addr(&self, ip: Ipv4Addr) -> bool {
        self.addrs.iter().any(|a| a.0 == ip)
    }

    /// Every address of both families, IPv4 first.
    pub fn all_addrs(&self) -> impl Iterator<Item = (std::net::IpAddr, u8)> + '_ {
        (self.addrs.iter().map(|&(a, l)| (a.into(), l)))
            .chain(self.addrs6.iter().map(|&(a, l)| (a.into(), l)))
    }

    /// Whether `ip` is one of the interface's IPv6 addresses.
    #[inline]
    pub fn has_addr6(&self, ip: Ipv6Addr) -> bool {
        self.addrs6.iter().any(|a| a.0 == ip)
    }

    /// The IPv6 address to speak from on this link toward `to` (RFC 6724's
    /// scope rule): the link-local one toward a link-local address; else a
    /// global one on `to`'s subnet, the first global one, the link-local one.
    pub fn addr6_toward(&self, to: Ipv6Addr) -> Option<Ipv6Addr> {
        if to.is_unicast_link_local() {
            if let Some(ll) = self.link_local6() {
                return Some(ll);
            }
        }
        let global = |a: &&(Ipv6Addr, u8)| !a.0.is_unicast_link_local();
        self.addrs6
            .iter()
            .filter(global)
            .find(|&&(a, l)| same_subnet6(a, to, l))
            .or(self.addrs6.iter().find(global))
            .or(self.addrs6.first())
            .map(|a| a.0)
    }

    /// The interface's link-local address, if it has one.
    pub fn link_local6(&self) -> Option<Ipv6Addr> {
        self.addrs6
            .iter()
            .find(|a| a.0.is_unicast_link_local())
            .map(|a| a.0)
    }

    /// Whether `ip` is on one of the interface's IPv6 subnets (link-local ones
    /// always are).
    pub fn on_link6(&self, ip: Ipv6Addr) -> bool {
        ip.is_unicast_link_local() || self.addrs6.iter().any(|&(a, l)| same_subnet6(a, ip, l))
    }

    /// The address to speak to `ip` from: the interface's address on its subnet,
    /// else the first one (`None` for an unnumbered interface).
    #[inline]
    pub fn addr_toward(&self, ip: Ipv4Addr) -> Option<Ipv4Addr> {
        self.addrs
            .iter()
            .find(|&&(a, len)| same_subnet(a, ip, len))
            .or(self.addrs.first())
            .map(|a| a.0)
    }

    /// Whether `ip` is on one of the interface's subnets (and not its address).
    #[inline]
    pub fn on_link(&self, ip: Ipv4Addr) -> bool {
        self.addrs
            .iter()
            .any(|&(a, len)| same_subnet(a, ip, len) && ip != a)
    }
}

/// Whether `a` and `b` share their first `len` bits.
#[inline]
fn same_subnet6(a: Ipv6Addr, b: Ipv6Addr, len: u8) -> bool {
    let m = u128::MAX
        .checked_shl(128 - u32::from(len.min(128)))
        .unwrap_or(0);
    (u128::from(a) ^ u128::from(b)) & m == 0
}

fn same_subnet(a: Ipv4Addr, b: Ipv4Addr, len: u8) -> bool {
    let mask = u32::MAX
        .checked_shl(32 - u32::from(len.min(32)))
        .unwrap_or(0);
    u32::from(a) & mask == u32::from(b) & mask
}

/// A pseudowire as the workers see it (RFC 4448, raw mode): every frame its
/// attachment circuit (a port) receives goes to the remote PE under the
/// pseudowire's label and the labels of the route to the PE; frames that come
/// with its label leave on the circuit as they were sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PwEntry {
    /// The attachment circuit's ifIndex (a port's untagged interface).
    pub ac: u32,
    /// Its DPDK port.
    pub port: u16,
    /// Its VLAN, for a sub-interface: the tag is stripped from the frames it
    /// receives and pushed on those it sends (RFC 4448 raw mode).
    pub vlan: Option<u16>,
    /// The remote PE's address, looked up in table 0 for each frame: the
    /// pseudowire follows the LSP that reaches it.
    pub remote: Ipv4Addr,
    /// The label the remote PE gave the pseudowire (it goes at the bottom).
    pub out_label: u32,
    /// Frames carry the RFC 4385 control word (sequence 0).
    pub cw: bool,
}
