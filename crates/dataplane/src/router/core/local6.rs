//! `local` for IPv6: neighbour discovery (RFC 4861: solicitations for the
//! router's addresses answered, senders and targets learned, solicitations
//! sent for unresolved next hops from the held packet's buffer), echo replies,
//! ICMPv6 errors (RFC 4443: rate-limited with ICMP's bucket, never about an
//! ICMPv6 error or to a multicast or unspecified source, quoting as much as
//! fits in 1280 bytes; from the receiving interface's address, or for a packet
//! popped from an LSP as the MPLS stage answers), and the rest of what is for the router to the host
//! stack.
//!
//! A packet the router builds to a link-local address goes back out of the
//! interface the packet it answers came in by, to the MAC that sent it (a
//! link-local source is always a neighbour); to other addresses it is routed
//! through the FIB. Counters: `echo_replies`, `icmp_errors`, `nd_replies`,
//! `nd_requests`, `nd_consumed`; drops `nd_ignored`, `icmp_suppressed`,
//! `icmp_rate_limited`, `local_unhandled`.

use wire::icmpv6::{self, Icmpv6Message, Icmpv6Packet};
use wire::ipv6::{self, Ipv6Packet};
use wire::nd::{self, NdRepr};
use wire::{EthernetAddress, IpProtocol};

use super::ip6_lookup::{addr_at, fold6};
use super::*;

/// Bytes the router puts in front of a quoted packet: IPv6 and ICMPv6 headers.
const ERR_HDRS: usize = ipv6::HEADER_LEN + icmpv6::HEADER_LEN;

/// The IPv6 address at `ip[o..o + 16]` (ip6-lookup checked the header's length).
fn addr(ip: &[u8], o: usize) -> Ipv6Addr {
    Ipv6Addr::from(addr_at(ip, o))
}

impl Work {
    /// For a packet held (or not: `held`) for the IPv6 neighbour `target` on
    /// `ifindex` (adjacency `adj`, or `u32::MAX` for a connected destination):
    /// its buffer becomes the solicitation, unless one went out within the
    /// retry time (then it is consumed).
    pub(super) fn solicit6(
        &mut self,
        m: &mut Meta,
        ifindex: u32,
        adj: u32,
        target: u128,
        held: Result<(), DropReason>,
    ) {
        self.count_held(m, held);
        if target == 0 || !self.ask_now(fold6(target)) {
            m.next = Next::Drop;
            return;
        }
        m.local = LocalJob::Solicit6(ifindex, adj);
        m.next = Next::Local;
    }

    /// The IPv6 jobs of `local`.
    pub(super) fn local6<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        now: u64,
    ) {
        match m.local {
            LocalJob::ToUs6 => self.deliver_local6(p, m, ift, view),
            LocalJob::Icmp6Error(typ, code, mtu) => {
                self.icmp6_error(p, m, ift, view, typ, code, mtu, now)
            }
            LocalJob::Solicit6(..) => {}
            _ => m.next = Next::Drop,
        }
        // A packet to solicit for (or a reply or error whose next hop needs
        // it): its buffer becomes the solicitation.
        if let (Next::Local, LocalJob::Solicit6(ifindex, adj)) = (m.next, m.local) {
            let target = if adj == u32::MAX {
                p.raw_mut()
                    .get(usize::from(m.l3)..usize::from(m.end))
                    .filter(|ip| ip.len() >= 40)
                    .map(|ip| addr(ip, 24))
            } else {
                view.adjacency(adj).and_then(|a| a.neighbor6)
            };
            match target {
                Some(t) => self.solicit_now(p, m, ift, ifindex, t),
                None => m.next = Next::Drop,
            }
        }
    }

    /// IPv6 for the router: neighbour discovery, echo requests to its
    /// addresses; the rest to the host stack (or dropped without one).
    fn deliver_local6<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) {
        let (l3, end) = (usize::from(m.l3), usize::from(m.end));
        let raw = p.raw_mut();
        // (ip6-lookup checked the header and cut the padding)
        let ip = &raw[l3..end];
        let icmp_type = (ip[6] == 58).then(|| ip.get(40).copied()).flatten();
        if matches!(icmp_type, Some(135 | 136)) {
            self.nd_input(p, m, ift);
            return;
        }
        let dst = addr(ip, 24);
        let ours = !dst.is_unicast_link_local()
            || ift
                .get(u32::from(m.rx_if))
                .is_some_and(|i| i.has_addr6(dst));
        if icmp_type == Some(128) && ours && ip.len() >= ERR_HDRS && !dst.is_multicast() {
            // Echo reply in place: swap the addresses (the pseudo-header's sum
            // stays), type 129, the checksum updated for the type.
            let src = addr(ip, 8);
            let back = self.rx_mac(p, m);
            let raw = p.raw_mut();
            let mut ip = Ipv6Packet::new_unchecked(&mut raw[l3..end]);
            ip.set_src_addr(dst);
            ip.set_dst_addr(src);
            ip.set_hop_limit(64);
            let mut icmp = Icmpv6Packet::new_unchecked(ip.payload_mut());
            let old = u16::from_be_bytes([128, icmp.msg_code()]);
            icmp.set_msg_type(Icmpv6Message::EchoReply);
            let new = u16::from_be_bytes([129, icmp.msg_code()]);
            icmp.set_checksum(wire::checksum::update_u16(icmp.checksum(), old, new));
            self.stats.echo_replies.inc();
            self.route_local6(p, m, ift, view, src, back);
            return;
        }
        if ift.punt_to_host {
            m.next = Next::Punt(ip6_punt_class(&raw[l3..end]));
        } else if ours {
            self.drop(m, DropReason::LocalUnhandled);
        } else {
            self.drop(m, DropReason::Ip6LinkLocal);
        }
    }

    /// A neighbour solicitation or advertisement (RFC 4861 §7.1 checks): a
    /// solicitation for one of the receiving interface's addresses is answered
    /// in place and its sender learned; an advertisement's target is learned if
    /// it is on the link or was asked for (and the host stack, which may have
    /// asked too, sees it).
    fn nd_input<P: Packet>(&mut self, p: &mut P, m: &mut Meta, ift: &IfTable) {
        let Some(ifc) = ift.get(u32::from(m.rx_if)) else {
            m.next = Next::Drop;
            return;
        };
        let (l3, end) = (usize::from(m.l3), usize::from(m.end));
        let raw = p.raw_mut();
        let ip = Ipv6Packet::new_unchecked(&raw[l3..end]);
        let icmp = Icmpv6Packet::new_unchecked(ip.payload());
        let Ok(repr) = nd::validate(&ip, &icmp) else {
            self.drop(m, DropReason::NdIgnored);
            return;
        };
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        match repr {
            NdRepr::NeighborSolicit {
                target_addr,
                source_ll_addr,
            } => {
                if !ifc.has_addr6(target_addr) {
                    // The host stack may hold addresses of its own (tentative
                    // ones, those not learned yet): it decides.
                    if ift.punt_to_host {
                        m.next = Next::Punt(PuntReason::Ip6Control);
                    } else {
                        self.drop(m, DropReason::NdIgnored);
                    }
                    return;
                }
                if let Some(mac) = source_ll_addr.filter(|_| !src.is_unspecified()) {
                    let _ = self.events.push(Event::Neighbor6 {
                        ifindex: ifc.ifindex,
                        ip: src,
                        mac: mac.0,
                    });
                }
                // To the sender, or to all nodes from a node still checking its
                // address (duplicate address detection).
                let (to, to_mac) = if src.is_unspecified() {
                    (ipv6::ALL_NODES, ipv6::multicast_mac(ipv6::ALL_NODES).0)
                } else {
                    match source_ll_addr.map(|a| a.0).or(self.rx_mac(p, m)) {
                        Some(mac) => (src, mac),
                        None => {
                            self.drop(m, DropReason::NdIgnored);
                            return;
                        }
                    }
                };
                let raw = p.raw_mut();
                let Some(out) = raw.get_mut(l3..) else {
                    m.next = Next::Drop;
                    return;
                };
                let mac = EthernetAddress(ifc.mac);
                let Ok(len) = nd::write_na(target_addr, to, target_addr, mac, true, out) else {
                    self.drop(m, DropReason::NoHeadroom);
                    return;
                };
                m.end = (l3 + len) as u16;
                m.ethertype = ETHERTYPE_IPV6;
                if self.l2_header(p, m, to_mac, ifc.mac, ifc.vlan).is_some() {
                    self.stats.nd_replies.inc();
                    m.adj = u32::from(ifc.port);
                    m.next = Next::Ready;
                    self.tx_count(ifc.ifindex, p);
                } else {
                    self.drop(m, DropReason::NoHeadroom);
                }
            }
            NdRepr::NeighborAdvert {
                target_addr,
                target_ll_addr,
                ..
            } => {
                let asked = self.hold.waits_for(ifc.ifindex, fold6(target_addr.into()));
                if let Some(mac) = target_ll_addr.filter(|_| ifc.on_link6(target_addr) || asked) {
                    let _ = self.events.push(Event::Neighbor6 {
                        ifindex: ifc.ifindex,
                        ip: target_addr,
                        mac: mac.0,
                    });
                }
                if ift.punt_to_host && !dst.is_multicast() {
                    m.next = Next::Punt(PuntReason::Ip6Control);
                } else {
                    self.stats.nd_consumed.inc();
                    m.next = Next::Drop;
                }
            }
        }
    }

    /// Turns the packet into a neighbour solicitation for `target` on
    /// `ifindex`, from the interface's address toward it.
    fn solicit_now<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        ifindex: u32,
        target: Ipv6Addr,
    ) {
        let Some(ifc) = ift.get(ifindex) else {
            m.next = Next::Drop;
            return;
        };
        // The link-local address for a link-local target, else one on its
        // subnet (as Linux picks).
        let src = if target.is_unicast_link_local() {
            ifc.link_local6().or(ifc.addr6_toward(target))
        } else {
            ifc.addr6_toward(target)
        };
        let Some(src) = src else {
            // (no IPv6 address on the link: nothing to ask from)
            self.drop(m, DropReason::NeighborIncomplete);
            return;
        };
        let l3 = usize::from(m.l3).max(L2_ROOM);
        let raw = p.raw_mut();
        let Some(out) = raw.get_mut(l3..) else {
            m.next = Next::Drop;
            return;
        };
        let Ok(len) = nd::write_ns(src, EthernetAddress(ifc.mac), target, out) else {
            m.next = Next::Drop;
            return;
        };
        m.l3 = l3 as u16;
        m.end = (l3 + len) as u16;
        m.ethertype = ETHERTYPE_IPV6;
        let group = ipv6::multicast_mac(ipv6::solicited_node(target)).0;
        if self.l2_header(p, m, group, ifc.mac, ifc.vlan).is_some() {
            self.stats.nd_requests.inc();
            m.adj = u32::from(ifc.port);
            m.next = Next::Ready;
            self.tx_count(ifc.ifindex, p);
        } else {
            m.next = Next::Drop;
        }
    }

    /// The MAC the packet's frame came from, while its Ethernet header is still
    /// in front of it (not for a packet released from the hold queue).
    fn rx_mac<P: Packet>(&self, p: &mut P, m: &Meta) -> Option<[u8; 6]> {
        let (start, _) = p.window();
        let l3 = usize::from(m.l3);
        // (a released packet starts at its layer 3: no header in front)
        if l3 < start + ETH_LEN {
            return None;
        }
        let raw = p.raw_mut();
        let mut mac = [0u8; 6];
        mac.copy_from_slice(raw.get(start + 6..start + 12)?);
        Some(mac)
    }

    /// ICMPv6 error of type `typ` and code `code` (MTU `mtu` for packet too
    /// big) about the packet, which it quotes; to its source.
    #[allow(clippy::too_many_arguments)]
    fn icmp6_error<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        typ: u8,
        code: u8,
        mtu: u16,
        now: u64,
    ) {
        let (l3, end) = (usize::from(m.l3), usize::from(m.end));
        let raw = p.raw_mut();
        let ip = &raw[l3..end];
        let msg = Icmpv6Message::from(typ);
        //= RFC 4443 §2.4(e): not about an ICMPv6 error, a multicast destination
        //= (but packet too big), an unspecified or multicast source.
        if !icmpv6::may_send_error(ip, msg, code) {
            self.stats.drops[DropReason::IcmpSuppressed as usize].inc();
            m.next = Next::Drop;
            return;
        }
        let to = addr(ip, 8);
        let from = if m.path & (1 << Stage::MplsLookup as u8) != 0 {
            // Popped from an LSP: answered as the MPLS stage answers, so an
            // egress PE whose core interface has no IPv6 address (6PE over an
            // IPv4 core) speaks from its IPv4 address IPv4-mapped.
            super::local::source6_for(ift, m.rx_if, ip)
        } else {
            ift.get(u32::from(m.rx_if))
                .and_then(|i| i.addr6_toward(to))
                .filter(|a| to.is_unicast_link_local() || !a.is_unicast_link_local())
        };
        let Some(from) = from else {
            // (no address to speak from on that interface)
            self.stats.drops[DropReason::IcmpSuppressed as usize].inc();
            m.next = Next::Drop;
            return;
        };
        //= RFC 4443 §2.4(f): rate-limited.
        if !self.icmp_token(now) {
            m.next = Next::Drop;
            return;
        }
        if l3 < ERR_HDRS + L2_ROOM {
            self.drop(m, DropReason::NoHeadroom);
            return;
        }
        let back = self.rx_mac(p, m);
        let raw = p.raw_mut();
        let quote = (end - l3).min(ipv6::MIN_MTU - ERR_HDRS);
        let new = l3 - ERR_HDRS;
        let total = ERR_HDRS + quote;
        let mut h = Ipv6Packet::new_unchecked(&mut raw[new..new + total]);
        h.set_version(6);
        h.set_traffic_class(0);
        h.set_flow_label(0);
        h.set_payload_len((total - ipv6::HEADER_LEN) as u16);
        h.set_next_header(IpProtocol::Icmpv6);
        h.set_hop_limit(64);
        h.set_src_addr(from);
        h.set_dst_addr(to);
        let mut icmp = Icmpv6Packet::new_unchecked(h.payload_mut());
        icmp.set_msg_type(msg);
        icmp.set_msg_code(code);
        icmp.clear_rest_of_header();
        if msg == Icmpv6Message::PktTooBig {
            icmp.set_mtu(u32::from(mtu));
        }
        icmp.fill_checksum(from, to);
        m.l3 = new as u16;
        m.end = (new + total) as u16;
        self.stats.icmp_errors.inc();
        self.route_local6(p, m, ift, view, to, back);
    }

    /// Sends an IPv6 packet the router built to `dst`: a link-local one back to
    /// `back`, the MAC the answered packet came from, on its interface; others
    /// through the FIB (the table the answered packet was looked up in).
    fn route_local6<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        dst: Ipv6Addr,
        back: Option<[u8; 6]>,
    ) {
        m.ethertype = ETHERTYPE_IPV6;
        if dst.is_unicast_link_local() {
            let ifc = ift.get(u32::from(m.rx_if));
            let (Some(ifc), Some(mac)) = (ifc, back) else {
                self.drop(m, DropReason::NeighborIncomplete);
                return;
            };
            if self.l2_header(p, m, mac, ifc.mac, ifc.vlan).is_some() {
                m.adj = u32::from(ifc.port);
                m.next = Next::Ready;
                self.tx_count(ifc.ifindex, p);
            } else {
                self.drop(m, DropReason::NoHeadroom);
            }
            return;
        }
        let d = u128::from(dst);
        let fwd = view.lookup6(m.table, d);
        let leg = view.leg(fwd, fold6(d));
        let unresolved = match leg.action() {
            fib::Action::Glean => Some((leg.target(), u32::MAX, d)),
            fib::Action::Forward => view
                .adjacency(leg.target())
                .filter(|a| !a.complete)
                .map(|a| (a.ifindex, leg.target(), a.neighbor6.map_or(0, u128::from))),
            _ => None,
        };
        if let Some((ifindex, adj, target)) = unresolved {
            // Held to go through ip6-lookup once the neighbour answers, with a
            // hop limit one above what it leaves with (ip6-lookup takes one).
            let mut again = *m;
            again.next = Next::Ip6Lookup;
            again.local = LocalJob::None;
            again.hash = fold6(d);
            let (l3, end) = (usize::from(m.l3), usize::from(m.end));
            let raw = p.raw_mut();
            raw[l3 + 7] = 65;
            let held = self.hold_frame(&raw[l3..end], again, ifindex, fold6(target));
            raw[l3 + 7] = 64;
            self.solicit6(m, ifindex, adj, target, held);
            return;
        }
        match leg.action() {
            fib::Action::Forward => {
                let l3 = usize::from(m.l3);
                let stack = leg_stack::<{ fib::MAX_LABELS }>(leg);
                let Some((lse, push)) = stack.filter(|&(_, push)| l3 >= 4 * push + L2_ROOM) else {
                    self.drop(m, DropReason::NoHeadroom);
                    return;
                };
                let top = l3 - 4 * push;
                impose(&mut p.raw_mut()[top..l3], &lse, 64);
                if push > 0 {
                    m.ethertype = ETHERTYPE_MPLS;
                }
                m.l3 = top as u16;
                m.adj = leg.target();
                m.next = Next::Rewrite;
            }
            // No error about a packet the router built, as Linux.
            fib::Action::Unreachable => self.drop(m, DropReason::Ip6Unreachable),
            fib::Action::Prohibit => self.drop(m, DropReason::Ip6Prohibit),
            fib::Action::Drop => self.drop(m, DropReason::Ip6Blackhole),
            _ => self.drop(m, DropReason::Ip6NoRoute),
        }
    }
}
