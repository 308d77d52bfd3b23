//! The ports as the control plane reads them (link, counters, speed): the DPDK
//! ports of a running daemon, or none in tests. An af_packet or af_xdp port's
//! link is its Linux interface's (those PMDs always say up): read from sysfs in
//! the daemon's namespace, and set over rtnetlink.

use dataplane::dpdk::{DpdkError, PortStats};

/// Why a port's link could not be set up or down.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// No port of that DPDK id.
    #[error("no port {0}")]
    NoPort(u16),
    /// The port's Linux interface is gone.
    #[error("no interface {0}")]
    NoInterface(String),
    /// No rtnetlink socket.
    #[error("{0}")]
    Netlink(std::io::Error),
    /// The kernel refused `ip link set IFACE up|down`.
    #[error("{iface}: set link {}: {error}", if *up { "up" } else { "down" })]
    Kernel {
        /// The Linux interface.
        iface: String,
        /// Up or down.
        up: bool,
        /// Why.
        error: std::io::Error,
    },
    /// DPDK refused.
    #[error("{0}")]
    Dpdk(DpdkError),
}

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
    /// Sets port `id`'s link up or down (its twin's admin state), so the
    /// neighbour sees the link go.
    fn set_link(&self, id: u16, _up: bool) -> Result<(), LinkError> {
        Err(LinkError::NoPort(id))
    }
}

/// Whether Linux interface `iface` is operationally up (admin up with carrier),
/// `None` when there is no such interface.
pub fn kernel_link_up(iface: &str) -> Option<bool> {
    let state = std::fs::read_to_string(format!("/sys/class/net/{iface}/operstate")).ok()?;
    Some(matches!(state.trim(), "up" | "unknown"))
}

/// `ip link set IFACE up|down` in the daemon's namespace.
pub fn set_kernel_link(iface: &str, up: bool) -> Result<(), LinkError> {
    let ifindex: u32 = std::fs::read_to_string(format!("/sys/class/net/{iface}/ifindex"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| LinkError::NoInterface(iface.to_string()))?;
    let mut nl = crate::linux::nl::NlSocket::open(false, 0).map_err(LinkError::Netlink)?;
    nl.set_admin(ifindex, up)
        .map_err(|error| LinkError::Kernel {
            iface: iface.to_string(),
            up,
            error,
        })
}

/// The DPDK ports.
#[derive(Debug, Clone, Copy)]
pub struct DpdkPorts<'a>(pub &'a [dataplane::dpdk::Port]);

impl DpdkPorts<'_> {
    fn port(&self, id: u16) -> Option<&dataplane::dpdk::Port> {
        self.0.iter().find(|p| p.id() == id)
    }
}

/// A port's link: its Linux interface's where it has one.
fn link_of(p: &dataplane::dpdk::Port) -> bool {
    match p.kernel_iface() {
        Some(i) => kernel_link_up(i).unwrap_or(false),
        None => p.link().up,
    }
}

impl PortSource for DpdkPorts<'_> {
    fn port_state(&self, id: u16) -> Option<(bool, PortStats)> {
        self.port(id).map(|p| (link_of(p), p.stats()))
    }
    fn link_up(&self, id: u16) -> Option<bool> {
        self.port(id).map(link_of)
    }
    fn set_link(&self, id: u16, up: bool) -> Result<(), LinkError> {
        let p = self.port(id).ok_or(LinkError::NoPort(id))?;
        match p.kernel_iface() {
            Some(i) => set_kernel_link(i, up),
            None => p.set_link(up).map_err(LinkError::Dpdk),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_errors_say_which_link() {
        assert_eq!(
            NoPorts.set_link(3, true).unwrap_err().to_string(),
            "no port 3"
        );
        let e = LinkError::Kernel {
            iface: "eth1".into(),
            up: false,
            error: std::io::Error::from_raw_os_error(libc::EPERM),
        };
        assert!(e.to_string().starts_with("eth1: set link down: "), "{e}");
        let e = set_kernel_link("no-such-interface-x", true).unwrap_err();
        assert!(matches!(e, LinkError::NoInterface(_)), "{e:?}");
        assert_eq!(e.to_string(), "no interface no-such-interface-x");
    }
}
