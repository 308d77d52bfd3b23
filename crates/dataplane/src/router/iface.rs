//! Interfaces as the workers see them: an immutable snapshot, replaced as a whole by
//! the control thread (interfaces change rarely; workers load the current snapshot
//! once per vector).

use std::net::Ipv4Addr;

pub use router_state::{Interface, PwEntry};

use super::stats::MAX_IFACES;

/// All interfaces, indexed for the data path.
#[derive(Debug, Clone, Default)]
pub struct IfTable {
    by_index: Vec<Option<Interface>>,
    /// Per DPDK port: the untagged interface and the VLAN sub-interfaces.
    by_port: Vec<PortIfs>,
    /// Address used as ICMP source when the interface has none (loopback).
    pub router_id: Option<Ipv4Addr>,
    /// Packets for the router that the dataplane does not answer itself (IPv6,
    /// link-local multicast, routing protocols, ARP replies) go to the control
    /// plane (the Linux twins) instead of being dropped.
    pub punt_to_host: bool,
    /// Pseudowires by index (`None`: a free index).
    pws: Vec<Option<PwEntry>>,
    /// Per DPDK port: the pseudowires whose circuit is the port or one of
    /// its VLANs (VLAN, index; `None`: the port).
    pw_ports: Vec<Vec<(Option<u16>, u32)>>,
}

#[derive(Debug, Clone, Default)]
struct PortIfs {
    main: u32,
    vlans: Vec<(u16, u32)>,
}

impl IfTable {
    /// The source of a packet the router sends about one that came in on
    /// `ifindex` (an ICMP error): that interface's first address, else the
    /// router id (an unnumbered interface).
    pub fn source_for(&self, ifindex: u32) -> Option<Ipv4Addr> {
        self.get(ifindex)
            .and_then(Interface::primary_addr)
            .or(self.router_id)
    }

    /// Builds the indexes from a list of interfaces.
    pub fn new(
        ifaces: impl IntoIterator<Item = Interface>,
        router_id: Option<Ipv4Addr>,
    ) -> IfTable {
        let mut t = IfTable {
            by_index: vec![None; MAX_IFACES],
            by_port: Vec::new(),
            router_id,
            punt_to_host: false,
            pws: Vec::new(),
            pw_ports: Vec::new(),
        };
        for i in ifaces {
            let port = usize::from(i.port);
            if t.by_port.len() <= port {
                t.by_port.resize(port + 1, PortIfs::default());
            }
            match i.vlan {
                None => t.by_port[port].main = i.ifindex,
                Some(v) => t.by_port[port].vlans.push((v, i.ifindex)),
            }
            let idx = i.ifindex as usize;
            if idx < MAX_IFACES {
                t.by_index[idx] = Some(i);
            }
        }
        t
    }

    /// The interface with this ifIndex.
    #[inline]
    pub fn get(&self, ifindex: u32) -> Option<&Interface> {
        self.by_index.get(ifindex as usize)?.as_ref()
    }

    /// The interface a frame arrived on: the port's untagged interface, or the
    /// sub-interface of its VLAN.
    #[inline]
    pub fn rx_iface(&self, port: u16, vlan: Option<u16>) -> Option<&Interface> {
        let p = self.by_port.get(usize::from(port))?;
        let idx = match vlan {
            None => p.main,
            Some(v) => p.vlans.iter().find(|x| x.0 == v)?.1,
        };
        self.get(idx)
    }

    /// Sets the pseudowires (by index).
    pub fn set_pws(&mut self, pws: Vec<Option<PwEntry>>) {
        self.pw_ports.clear();
        for (k, e) in pws.iter().enumerate() {
            if let Some(e) = e {
                let port = usize::from(e.port);
                if self.pw_ports.len() <= port {
                    self.pw_ports.resize(port + 1, Vec::new());
                }
                self.pw_ports[port].push((e.vlan, k as u32));
            }
        }
        self.pws = pws;
    }

    /// Whether port `port` or one of its VLANs is a pseudowire's circuit.
    #[inline]
    pub fn port_has_pw(&self, port: u16) -> bool {
        self.pw_ports
            .get(usize::from(port))
            .is_some_and(|v| !v.is_empty())
    }

    /// The pseudowire whose circuit is port `port` (`vlan`: its sub-interface
    /// of that VLAN), with its index.
    #[inline]
    pub fn pw_of(&self, port: u16, vlan: Option<u16>) -> Option<(u32, &PwEntry)> {
        let &(_, k) = self
            .pw_ports
            .get(usize::from(port))?
            .iter()
            .find(|x| x.0 == vlan)?;
        Some((k, self.pw(k)?))
    }

    /// The pseudowire whose circuit is port `port` itself (untagged).
    #[inline]
    pub fn pw_of_port(&self, port: u16) -> Option<(u32, &PwEntry)> {
        self.pw_of(port, None)
    }

    /// Pseudowire `k`.
    #[inline]
    pub fn pw(&self, k: u32) -> Option<&PwEntry> {
        self.pws.get(k as usize)?.as_ref()
    }

    /// All interfaces in ifIndex order.
    pub fn iter(&self) -> impl Iterator<Item = &Interface> {
        self.by_index.iter().flatten()
    }
}
