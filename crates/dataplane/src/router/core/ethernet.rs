//! `ethernet-input`: the first node of the general path.
//!
//! Per packet: the receiving interface (port and 802.1Q tag; one lookup per run
//! of packets from the same interface), the destination MAC (ours, broadcast or
//! multicast), the rx counters, and the dispatch by EtherType.
//!
//! Next nodes: `mpls-lookup` (0x8847), `ip4-lookup` (0x0800), `ip6-lookup`
//! (0x86dd), `local` (ARP), drop.
//! Counters: rx packets and bytes per interface; drops `eth_truncated`,
//! `not_our_mac`, `unknown_vlan`, `interface_down`, `unknown_ethertype`,
//! `multi_segment`.

use super::*;

impl Work {
    /// ethernet-input over the packets `self.slow[..n_slow]` of `pkts` (those
    /// marked resumed keep the metadata they resume with); counts in `q` the
    /// packets each next node has; returns how many it parsed.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)]
    pub(super) fn ethernet_input<P: Packet>(
        &mut self,
        pkts: &mut [P],
        n_slow: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        q: &mut Pending,
    ) -> usize {
        let mut last_if = None;
        let mut rx = Run::default();
        let mut n_eth = 0usize;
        // The path of the last pseudowire a frame went into (one per vector).
        let mut pw_path: Option<(u32, Option<pw::PwPath>)> = None;
        // The stages work on the metadata in place (see the rewrite loop).
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            if let Some(&a) = self
                .slow
                .get(s + PREFETCH)
                .filter(|_| s + PREFETCH < n_slow)
            {
                prefetch_data(&mut pkts[usize::from(a)]);
            }
            if !self.is_resumed(i) {
                n_eth += 1;
                if let Some((k, e)) = pw::circuit(&mut pkts[i], ift) {
                    // A pseudowire's circuit: every frame goes into it.
                    let path = match pw_path {
                        Some((pk, path)) if pk == k => path,
                        _ => {
                            let path = pw::pw_resolve(k, e, view);
                            pw_path = Some((k, path));
                            path
                        }
                    };
                    let m = &mut self.meta[i];
                    pw::pw_encap(&self.stats, &mut pkts[i], m, k, e, path.as_ref());
                    continue;
                }
                let m = &mut self.meta[i];
                ethernet(
                    &self.stats,
                    self.nic_csum_ports,
                    &mut pkts[i],
                    ift,
                    &mut last_if,
                    &mut rx,
                    m,
                );
            }
            match self.meta[i].next {
                Next::MplsLookup => q.mpls += 1,
                Next::Ip4Lookup => q.ip4 += 1,
                Next::Ip6Lookup => q.ip6 += 1,
                Next::Local => q.local += 1,
                _ => {}
            }
        }
        flush_rx(&self.stats, &rx);
        n_eth
    }
}

/// Parses the L2 header: receiving interface, MAC check, dispatch.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn ethernet<'t, P: Packet>(
    stats: &WorkerStats,
    nic_ports: u64,
    p: &mut P,
    ift: &'t IfTable,
    last_if: &mut Option<(u16, Option<u16>, &'t Interface)>,
    rx: &mut Run,
    m: &mut Meta,
) {
    let (start, len) = p.window();
    let port = p.port();
    *m = Meta {
        end: (start + len) as u16,
        ..Meta::default()
    };
    if !p.is_contiguous() {
        drop_meta(stats, m, DropReason::MultiSegment);
        return;
    }
    let raw = p.raw_mut();
    let f = &raw[start..start + len];
    if f.len() < ETH_LEN {
        drop_meta(stats, m, DropReason::EthTruncated);
        return;
    }
    let mut et = rd16(f, 12);
    let mut l3 = ETH_LEN;
    let mut vlan = None;
    if et == ETHERTYPE_VLAN {
        if f.len() < ETH_LEN + VLAN_LEN {
            drop_meta(stats, m, DropReason::EthTruncated);
            return;
        }
        vlan = Some(rd16(f, 14) & 0x0fff);
        et = rd16(f, 16);
        l3 += VLAN_LEN;
    }
    // A vector mostly comes from one interface: keep the last one.
    let ifc = match *last_if {
        Some((lp, lv, ifc)) if lp == port && lv == vlan => ifc,
        _ => {
            let Some(ifc) = ift.rx_iface(port, vlan) else {
                drop_meta(
                    stats,
                    m,
                    if vlan.is_some() {
                        DropReason::UnknownVlan
                    } else {
                        DropReason::InterfaceDown
                    },
                );
                return;
            };
            *last_if = Some((port, vlan, ifc));
            ifc
        }
    };
    m.rx_if = ifc.ifindex as u16;
    rx_add(stats, rx, ifc.ifindex as usize, len);
    if !ifc.up {
        drop_meta(stats, m, DropReason::InterfaceDown);
        return;
    }
    // ours, broadcast or multicast (group bit)
    if f[..6] != ifc.mac && f[0] & 1 == 0 {
        drop_meta(stats, m, DropReason::NotOurMac);
        return;
    }
    m.l3 = (start + l3) as u16;
    m.table = ifc.table;
    m.next = match et {
        ETHERTYPE_IPV4 => {
            if nic_csum(nic_ports, port) {
                m.csum = p.rx_ip4_csum();
            }
            Next::Ip4Lookup
        }
        ETHERTYPE_MPLS => Next::MplsLookup,
        ETHERTYPE_ARP => Next::Local,
        ETHERTYPE_IPV6 => Next::Ip6Lookup,
        _ => {
            drop_meta(stats, m, DropReason::UnknownEthertype);
            return;
        }
    };
}

/// Well-known ports of routing and control protocols over UDP or TCP: BGP (179),
/// LDP (646), BFD (3784, 3785, 4784), RIP (520), RIPng (521), Babel (6696).
pub(super) fn control_port(port: u16) -> bool {
    matches!(port, 179 | 646 | 3784 | 3785 | 4784 | 520 | 521 | 6696)
}

/// Whether the first four bytes of a UDP or TCP header name a control port, as
/// source or destination.
pub(super) fn control_ports(l4: Option<&[u8]>) -> bool {
    l4.is_some_and(|p| {
        control_port(u16::from_be_bytes([p[0], p[1]]))
            || control_port(u16::from_be_bytes([p[2], p[3]]))
    })
}

/// Whether an IPv4 packet (`ip` from its header on) goes to link-local
/// multicast, 224.0.0.0/24 (OSPF, RIP, VRRP, LDP hellos, ...).
pub(super) fn ip4_link_local_mc(ip: &[u8]) -> bool {
    ip.get(16..19) == Some(&[224, 0, 0][..])
}

/// The punt class of an IPv4 packet for the router, `ip` from its header on.
pub(super) fn ip4_punt_class(ip: &[u8]) -> PuntReason {
    let hl = usize::from(ip.first().map_or(0, |b| b & 0x0f)) * 4;
    let proto = ip.get(9).copied().unwrap_or(0);
    // OSPF, IGMP, PIM, VRRP
    let control = ip4_link_local_mc(ip)
        || matches!(proto, 89 | 2 | 103 | 112)
        || (matches!(proto, 6 | 17) && control_ports(ip.get(hl..hl + 4)));
    if control {
        PuntReason::Routing
    } else {
        PuntReason::Local
    }
}

/// The punt class of an IPv6 packet, `ip` from its header on: ND, MLD, OSPFv3,
/// link-local multicast and the routing protocols' ports are control.
pub(super) fn ip6_punt_class(ip: &[u8]) -> PuntReason {
    let nh = ip.get(6).copied().unwrap_or(0);
    let link_local_mc = ip.get(24..26) == Some(&[0xff, 0x02][..]);
    let l4 = ip.get(40..44);
    let control = link_local_mc
        || nh == 89
        || (nh == 58 && l4.is_some_and(|p| (130..=143).contains(&p[0])))
        || (matches!(nh, 6 | 17) && control_ports(l4));
    if control {
        PuntReason::Ip6Control
    } else {
        PuntReason::Ip6Other
    }
}

/// Whether DPDK port `port`'s packets carry a checksum verdict worth reading
/// (`CoreConfig::nic_csum_ports`).
#[inline(always)]
pub(super) fn nic_csum(ports: u64, port: u16) -> bool {
    ports
        .checked_shr(u32::from(port))
        .is_none_or(|b| b & 1 != 0)
}

#[inline(always)]
pub(super) fn rx_add(stats: &WorkerStats, run: &mut Run, ifindex: usize, bytes: usize) {
    if run.ifindex != ifindex {
        flush_rx(stats, run);
        *run = Run {
            ifindex,
            ..Run::default()
        };
    }
    run.pkts += 1;
    run.bytes += bytes as u64;
}

pub(super) fn flush_rx(stats: &WorkerStats, run: &Run) {
    if let Some(c) = stats.ifaces.get(run.ifindex).filter(|_| run.pkts > 0) {
        c.rx_pkts.add(run.pkts);
        c.rx_bytes.add(run.bytes);
    }
}

/// How many packets ahead ethernet-input prefetches the packet it will read next
/// (the later stages find the lines it brought in).
pub(super) const PREFETCH: usize = 4;

/// Starts loading the cache line where a received packet's data begins: behind
/// the headroom (`RTE_PKTMBUF_HEADROOM`, where PMDs put it; `VecPacket` keeps the
/// same). A hint only: its address needs no load of the packet's data offset.
#[inline(always)]
pub(super) fn prefetch_data<P: Packet>(p: &mut P) {
    let headroom = dpdk_sys::RTE_PKTMBUF_HEADROOM as usize;
    crate::dpdk::prefetch0(p.raw_mut().as_ptr().wrapping_add(headroom));
}

/// Packets and bytes of a run of packets on one interface, added to its counters
/// when the run ends (VPP keeps the last sw_if_index the same way): a vector mostly
/// comes from one interface and leaves on a few, and a read-modify-write of the same
/// counter per packet is a store-to-load chain.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Run {
    pub(super) ifindex: usize,
    pub(super) pkts: u64,
    pub(super) bytes: u64,
}
