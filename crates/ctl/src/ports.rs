//! The ports as the control plane reads them (link, counters, speed): the DPDK
//! ports of a running daemon, or none in tests.

use dataplane::dpdk::PortStats;

/// Link state and device counters of the ports, by DPDK port id.
pub trait PortSource {
    /// Link up and counters of port `id`, if there is such a port.
    fn port_state(&self, id: u16) -> Option<(bool, PortStats)>;
    /// Link up of port `id`, if there is such a port.
    fn link_up(&self, id: u16) -> Option<bool> {
        self.port_state(id).map(|s| s.0)
    }
    /// Link speed of port `id` in Mbit/s (0 when unknown).
    fn link_speed_mbps(&self, _id: u16) -> u32 {
        0
    }
}

/// The DPDK ports.
#[derive(Debug, Clone, Copy)]
pub struct DpdkPorts<'a>(pub &'a [dataplane::dpdk::Port]);

impl PortSource for DpdkPorts<'_> {
    fn port_state(&self, id: u16) -> Option<(bool, PortStats)> {
        self.0
            .iter()
            .find(|p| p.id() == id)
            .map(|p| (p.link().up, p.stats()))
    }
    fn link_up(&self, id: u16) -> Option<bool> {
        self.0.iter().find(|p| p.id() == id).map(|p| p.link().up)
    }
    fn link_speed_mbps(&self, id: u16) -> u32 {
        self.0
            .iter()
            .find(|p| p.id() == id)
            .map_or(0, |p| p.link().speed_mbps)
    }
}

/// No ports (tests without DPDK).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPorts;

impl PortSource for NoPorts {
    fn port_state(&self, _: u16) -> Option<(bool, PortStats)> {
        None
    }
}
