//! Aging of neighbours learned from ARP.
//!
//! A neighbour the workers learned (from an ARP request or reply it heard) is
//! trusted for [`NeighborAging::reachable`] after it was last heard. Then the
//! control thread probes it: a unicast ARP request to the MAC it has, sent through
//! a worker ([`RouterState::age_neighbors`] returns the frames), up to
//! [`NeighborAging::probes`] times, [`NeighborAging::probe_every`] apart, while
//! traffic keeps using the entry (RFC 1122 §2.3.2.1: refresh a cache entry before it
//! is lost, by unicast). An answer (any ARP the neighbour sends) makes it reachable
//! again; silence after the last probe forgets it: its adjacency becomes incomplete
//! and the next packet for it resolves by broadcast, as for a neighbour never seen.
//!
//! Configured neighbours (`set_neighbor` from the configuration or `dpctl`) never
//! age.
//!
//! [`RouterState::age_neighbors`]: crate::RouterState::age_neighbors

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, EthernetRepr,
    VlanRepr, VlanTag,
};

use crate::iface::Interface;

/// How learned neighbours age. `reachable` zero: they never do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighborAging {
    /// How long an entry is trusted after it was last heard.
    pub reachable: Duration,
    /// Time between two probes (and from the last probe to forgetting).
    pub probe_every: Duration,
    /// Unicast probes before the entry is forgotten.
    pub probes: u8,
}

impl Default for NeighborAging {
    /// Linux's defaults, rounded: reachable for 5 minutes (the kernel uses a random
    /// 15-45 s then a stale phase; a router answers for transit, so it keeps the
    /// entry longer and probes instead), 3 unicast probes 1 s apart.
    fn default() -> Self {
        NeighborAging {
            reachable: Duration::from_secs(300),
            probe_every: Duration::from_secs(1),
            probes: 3,
        }
    }
}

/// A learned neighbour's aging state.
#[derive(Debug, Clone, Copy)]
pub(super) struct Learned {
    /// When the neighbour was last heard.
    pub(super) heard: Instant,
    /// Probes sent since.
    pub(super) probes: u8,
    /// When the last one went.
    pub(super) last_probe: Option<Instant>,
}

impl Learned {
    pub(super) fn heard_at(now: Instant) -> Learned {
        Learned {
            heard: now,
            probes: 0,
            last_probe: None,
        }
    }
}

/// What aging decided for one entry at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing to do.
    Wait,
    /// Send a probe.
    Probe,
    /// Forget the neighbour.
    Forget,
}

impl Learned {
    /// The next step for this entry (and its state updated for a probe).
    pub(super) fn step(&mut self, now: Instant, a: &NeighborAging) -> Step {
        if a.reachable.is_zero() || now < self.heard + a.reachable {
            return Step::Wait;
        }
        if self.last_probe.is_some_and(|t| now < t + a.probe_every) {
            return Step::Wait;
        }
        if self.probes >= a.probes {
            return Step::Forget;
        }
        self.probes += 1;
        self.last_probe = Some(now);
        Step::Probe
    }
}

/// A neighbour probe to send (a unicast ARP request or neighbour solicitation):
/// the whole frame and the DPDK port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpProbe {
    /// DPDK port to send on.
    pub port: u16,
    /// Interface (ifIndex) it is for.
    pub ifindex: u32,
    /// The neighbour probed.
    pub ip: IpAddr,
    /// The Ethernet frame (an ARP request padded to 60 bytes, or a solicitation).
    pub frame: Vec<u8>,
}

/// A unicast ARP request from interface `i` to the neighbour `ip` at `mac`, with the
/// interface's address on the neighbour's subnet as the sender (the first address
/// if none matches; an unnumbered interface's is `unnumbered`, the router's
/// loopback). `None` when there is no address to send from.
pub(super) fn arp_probe(
    i: &Interface,
    unnumbered: Option<Ipv4Addr>,
    ip: Ipv4Addr,
    mac: [u8; 6],
) -> Option<ArpProbe> {
    let spa = i.addr_toward(ip).or(unnumbered)?;
    let arp = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: EthernetAddress(i.mac),
        source_protocol_addr: spa,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: ip,
    };
    let (mut frame, l2) = l2_frame(i, mac, EtherType::Arp, arp.buffer_len());
    frame.resize(frame.len().max(60), 0);
    arp.emit(&mut ArpPacket::new_unchecked(&mut frame[l2..]));
    Some(probe(i, ip.into(), frame))
}

/// A unicast neighbour solicitation for `ip` to the MAC it has (`mac`), from
/// the interface's address toward it (RFC 4861 §7.3.3: a stale entry is
/// probed unicast); `None` when the interface has no IPv6 address.
pub(super) fn nd_probe(i: &Interface, ip: Ipv6Addr, mac: [u8; 6]) -> Option<ArpProbe> {
    let src = i.addr6_toward(ip)?;
    let repr = wire::nd::NdRepr::NeighborSolicit {
        target_addr: ip,
        source_ll_addr: Some(EthernetAddress(i.mac)),
    };
    let (mut frame, l2) = l2_frame(i, mac, EtherType::Ipv6, wire::nd::PACKET_LEN);
    let len = wire::nd::write_packet(src, ip, &repr, &mut frame[l2..]).ok()?;
    frame.truncate(l2 + len);
    Some(probe(i, ip.into(), frame))
}

fn probe(i: &Interface, ip: IpAddr, frame: Vec<u8>) -> ArpProbe {
    ArpProbe {
        port: i.port,
        ifindex: i.ifindex,
        ip,
        frame,
    }
}

/// A frame from interface `i` to `mac` with EtherType `et` (behind the
/// interface's 802.1Q tag, if it has one) and room for `len` bytes of payload;
/// and where the payload starts.
fn l2_frame(i: &Interface, mac: [u8; 6], et: EtherType, len: usize) -> (Vec<u8>, usize) {
    let l2 = if i.vlan.is_some() { 18 } else { 14 };
    let mut frame = vec![0u8; l2 + len];
    let eth = EthernetRepr {
        src_addr: EthernetAddress(i.mac),
        dst_addr: EthernetAddress(mac),
        ethertype: if i.vlan.is_some() {
            EtherType::Vlan
        } else {
            et
        },
    };
    eth.emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
    if let Some(vid) = i.vlan {
        let tag = VlanRepr {
            pcp: 0,
            dei: false,
            vid,
            ethertype: et,
        };
        tag.emit(&mut VlanTag::new_unchecked(&mut frame[14..18]));
    }
    (frame, l2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a() -> NeighborAging {
        NeighborAging {
            reachable: Duration::from_secs(10),
            probe_every: Duration::from_secs(1),
            probes: 2,
        }
    }

    #[test]
    fn an_entry_waits_then_probes_then_is_forgotten() {
        let t0 = Instant::now();
        let s = |x: f64| t0 + Duration::from_secs_f64(x);
        let mut e = Learned::heard_at(t0);
        assert_eq!(e.step(s(9.9), &a()), Step::Wait);
        assert_eq!(e.step(s(10.0), &a()), Step::Probe);
        assert_eq!(e.step(s(10.5), &a()), Step::Wait);
        assert_eq!(e.step(s(11.0), &a()), Step::Probe);
        assert_eq!(e.step(s(11.9), &a()), Step::Wait);
        assert_eq!(e.step(s(12.0), &a()), Step::Forget);
    }

    #[test]
    fn zero_reachable_never_ages() {
        let t0 = Instant::now();
        let mut e = Learned::heard_at(t0);
        let never = NeighborAging {
            reachable: Duration::ZERO,
            ..a()
        };
        assert_eq!(
            e.step(t0 + Duration::from_secs(1 << 20), &never),
            Step::Wait
        );
    }

    #[test]
    fn probe_frames_are_unicast_requests_from_the_subnet_address() {
        let mut i = Interface {
            ifindex: 3,
            name: "port2".into(),
            port: 2,
            vlan: None,
            mac: [2, 0, 0, 0, 0, 3],
            mtu: 1500,
            up: true,
            table: 0,
            addrs: vec![
                (Ipv4Addr::new(192, 0, 2, 1), 24),
                (Ipv4Addr::new(10, 3, 0, 1), 24),
            ],
            addrs6: Vec::new(),
        };
        let nbr = [2, 0, 0, 0, 9, 9];
        let p = arp_probe(&i, None, Ipv4Addr::new(10, 3, 0, 2), nbr).unwrap();
        assert_eq!((p.port, p.ifindex), (2, 3));
        assert_eq!(p.frame.len(), 60);
        assert_eq!(&p.frame[..6], &nbr);
        assert_eq!(&p.frame[6..12], &i.mac);
        assert_eq!(&p.frame[12..14], &[0x08, 0x06]);
        let arp = ArpRepr::parse(&ArpPacket::new_checked(&p.frame[14..]).unwrap()).unwrap();
        assert_eq!(
            arp,
            ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Request,
                source_hardware_addr: EthernetAddress(i.mac),
                source_protocol_addr: Ipv4Addr::new(10, 3, 0, 1),
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: Ipv4Addr::new(10, 3, 0, 2),
            }
        );
        // A sub-interface tags it.
        i.vlan = Some(200);
        let p = arp_probe(&i, None, Ipv4Addr::new(10, 3, 0, 2), nbr).unwrap();
        assert_eq!(&p.frame[12..18], &[0x81, 0x00, 0x00, 0xc8, 0x08, 0x06]);
        // No address: nothing to send from.
        i.addrs.clear();
        assert!(arp_probe(&i, None, Ipv4Addr::new(10, 3, 0, 2), nbr).is_none());
    }
}
