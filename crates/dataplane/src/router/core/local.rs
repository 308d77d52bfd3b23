//! `local`: what the router answers or builds itself, one packet at a time (the
//! rare paths).
//!
//! ARP (answers for our addresses, learns senders), ICMP echo replies,
//! ICMP errors (RFC 1812 §4.3.2: rate-limited, never about an ICMP error, a
//! fragment or a martian), ICMP time exceeded inside an LSP with the received
//! label stack (RFC 4950) sent on along the LSP, "fragmentation needed" behind
//! a label stack, and ARP requests for unresolved next hops (the packet is held,
//! see `hold.rs`, and its buffer becomes the request).
//!
//! Next nodes: `rewrite` (replies and errors routed by [`Work::route_local`]),
//! tx on a port (ARP, built whole), punt, drop. Counters: `arp_replies`,
//! `arp_requests`, `arp_consumed`, `echo_replies`, `icmp_errors`, `held`;
//! drops `arp_ignored`, `icmp_suppressed`, `icmp_rate_limited`,
//! `neighbor_*`.

use wire::arp::{self, ArpHardware, ArpOperation, ArpPacket};
use wire::icmpv4::{self, Icmpv4Message, Icmpv4Packet};
use wire::{EtherType, IpProtocol, Ipv4Packet};

use super::*;

impl Work {
    /// local over the packets of `self.slow[..n_slow]` bound for it.
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    pub(super) fn local_node<P: Packet>(
        &mut self,
        pkts: &mut [P],
        n_slow: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        labels: &mpls::LabelReader,
        now: u64,
    ) {
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            if !matches!(self.meta[i].next, Next::Local) {
                continue;
            }
            let mut m = self.meta[i];
            m.path |= 1 << Stage::Local as u8;
            if self.obs.sflow_notes {
                self.keep_head(&mut pkts[i], i);
            }
            self.local(&mut pkts[i], &mut m, ift, view, labels, now);
            self.meta[i] = m;
        }
    }

    /// Takes a token of the ICMP error bucket; without one the error is not sent,
    /// counted as `icmp_rate_limited`.
    pub(super) fn icmp_token(&mut self, now: u64) -> bool {
        let ok = self.icmp.take(now);
        if !ok {
            self.stats.drops[DropReason::IcmpRateLimited as usize].inc();
        }
        ok
    }

    /// Marks a packet for an ICMP error (built by the local stage) and counts the
    /// drop reason of the original.
    pub(super) fn drop_with_icmp(&self, m: &mut Meta, r: DropReason, typ: u8, code: u8, mtu: u16) {
        m.reason = Some(Discard::Core(r));
        self.stats.drops[r as usize].inc();
        self.stats.ifaces[usize::from(m.rx_if)].drops.inc();
        m.local = LocalJob::IcmpError(typ, code, mtu);
        m.next = Next::Local;
    }

    /// Marks a packet to become an ARP request for `ip` on `ifindex`, unless one
    /// went out recently. `held`: whether a copy of it waits for the answer (see
    /// [`Work::hold`]); if not, it is dropped for that reason.
    pub(super) fn resolve(
        &mut self,
        m: &mut Meta,
        ifindex: u32,
        ip: u32,
        held: Result<(), DropReason>,
    ) {
        self.count_held(m, held);
        if !self.ask_now(ip) {
            m.next = Next::Drop;
            return;
        }
        m.local = LocalJob::Resolve(ifindex, ip);
        m.next = Next::Local;
    }

    /// For a packet held (or not: `held`) for IPv6 next hop `adj`: asks the
    /// control plane to resolve it, at most once per ARP retry time; the packet
    /// itself is consumed.
    pub(super) fn resolve6(&mut self, m: &mut Meta, adj: u32, held: Result<(), DropReason>) {
        self.count_held(m, held);
        m.next = Next::Drop;
        // (kept among the addresses asked for as !adj: 255.255.255.x, which
        // no ARP asks for)
        if self.ask_now(!adj) {
            let _ = self.events.push(Event::Resolve6 { adj });
        }
    }

    /// Counts a packet held for its next hop, or dropped for why it could not
    /// be (an ICMP error's packet keeps the reason it was dropped for).
    pub(super) fn count_held(&mut self, m: &mut Meta, held: Result<(), DropReason>) {
        match held {
            Ok(()) => self.stats.held.inc(),
            Err(r) => {
                self.stats.drops[r as usize].inc();
                self.stats.ifaces[usize::from(m.rx_if)].drops.inc();
                if m.reason.is_none() {
                    m.reason = Some(Discard::Core(r));
                }
            }
        }
    }

    /// Whether to ask for `key` now (not asked within the ARP retry time), and
    /// notes that it is asked.
    pub(super) fn ask_now(&mut self, key: u32) -> bool {
        let now = tsc();
        let slot = arp_slot(key);
        let (k, at) = self.arp_recent[slot];
        if k == key && now.wrapping_sub(at) < self.arp_retry_ticks {
            return false;
        }
        self.arp_recent[slot] = (key, now);
        true
    }

    /// Whether the router asked for `ip` on `ifindex` lately: a packet waits
    /// for it, or a request for it went out within the hold time.
    fn asked(&self, ifindex: u32, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        if self.hold.waits_for(ifindex, ip) {
            return true;
        }
        let (rip, at) = self.arp_recent[arp_slot(ip)];
        rip == ip && tsc().wrapping_sub(at) < self.arp_answer_ticks
    }

    /// Keeps a copy of the packet `pkts[i]` (from `m.l3` to `m.end`) to go on
    /// from `m` once `nbr` on `ifindex` resolves.
    pub(super) fn hold<P: Packet>(
        &mut self,
        p: &mut P,
        m: &Meta,
        ifindex: u32,
        nbr: u32,
    ) -> Result<(), DropReason> {
        let l3 = p
            .raw_mut()
            .get(usize::from(m.l3)..usize::from(m.end))
            .ok_or(DropReason::NeighborIncomplete)?;
        let mut meta = *m;
        meta.local = LocalJob::None;
        self.hold_frame(l3, meta, ifindex, nbr)
    }

    /// Keeps a copy of `l3` to go on from `meta` once `nbr` on `ifindex` resolves.
    pub(super) fn hold_frame(
        &mut self,
        l3: &[u8],
        mut meta: Meta,
        ifindex: u32,
        nbr: u32,
    ) -> Result<(), DropReason> {
        meta.reason = None;
        meta.csum = RxCsum::Unknown;
        self.hold.push(
            l3,
            hold::Held {
                meta,
                ifindex,
                nbr,
                at: tsc(),
                ..Default::default()
            },
        )
    }

    /// The rare paths, one packet at a time.
    #[cold]
    #[inline(never)]
    pub(super) fn local<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        labels: &mpls::LabelReader,
        now: u64,
    ) {
        match m.local {
            LocalJob::None => self.arp_input(p, m, ift),
            LocalJob::ToUs => self.deliver_local(p, m, view),
            LocalJob::IcmpError(typ, code, mtu) => {
                self.icmp_error(p, m, ift, view, typ, code, mtu, now)
            }
            LocalJob::Resolve(ifindex, ip) => self.arp_request(p, m, ift, ifindex, ip),
            LocalJob::MplsTtl => self.mpls_ttl(p, m, ift, labels),
            LocalJob::ToUs6 | LocalJob::Icmp6Error(..) | LocalJob::Solicit6(..) => {
                self.local6(p, m, ift, view, now)
            }
            LocalJob::Route => {
                let raw = p.raw_mut();
                match raw.get(usize::from(m.l3) + 16..usize::from(m.l3) + 20) {
                    Some(d) => {
                        let dst = rd32(d, 0);
                        self.route_local(raw, m, view, dst);
                    }
                    None => m.next = Next::Drop,
                }
            }
        }
        // An echo reply or ICMP error whose destination needs resolving: the packet
        // becomes the ARP request (resolve() already marked the address as asked).
        if let (Next::Local, LocalJob::Resolve(ifindex, ip)) = (m.next, m.local) {
            self.arp_request(p, m, ift, ifindex, ip);
        }
    }

    pub(super) fn arp_input<P: Packet>(&mut self, p: &mut P, m: &mut Meta, ift: &IfTable) {
        let Some(ifc) = ift.get(u32::from(m.rx_if)) else {
            m.next = Next::Drop;
            return;
        };
        let raw = p.raw_mut();
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        if end < l3 + arp::ETHERNET_IPV4_LEN {
            self.drop(m, DropReason::ArpIgnored);
            return;
        }
        let a = ArpPacket::new_unchecked(&raw[l3..l3 + arp::ETHERNET_IPV4_LEN]);
        // Ethernet/IPv4 only
        if a.hardware_type() != ArpHardware::Ethernet
            || a.protocol_type() != EtherType::Ipv4
            || a.hardware_len() != 6
            || a.protocol_len() != 4
        {
            self.drop(m, DropReason::ArpIgnored);
            return;
        }
        let op = a.operation();
        let mut sha = [0u8; 6];
        sha.copy_from_slice(a.source_hardware_addr());
        let ip4 = |b: &[u8]| Ipv4Addr::from(rd32(b, 0));
        let (spa, tpa) = (ip4(a.source_protocol_addr()), ip4(a.target_protocol_addr()));
        // An unnumbered interface (no address of its own) speaks for the router's
        // loopback (its router id) and learns any sender: peers reach each
        // other's loopbacks on the link (onlink next hops).
        let unnumbered = ifc.addrs.is_empty();
        let ours = ifc.has_addr(tpa) || (unnumbered && ift.router_id == Some(tpa));
        // Learn the sender if it is on one of the interface's subnets, or if it
        // answers what the router asked (an onlink next hop outside them).
        let on_link = (unnumbered && spa != Ipv4Addr::UNSPECIFIED && Some(spa) != ift.router_id)
            || ifc.on_link(spa)
            || (op == ArpOperation::Reply && ours && self.asked(ifc.ifindex, spa));
        if on_link && sha[0] & 1 == 0 {
            let _ = self.events.push(Event::Neighbor {
                ifindex: ifc.ifindex,
                ip: spa,
                mac: sha,
            });
        }
        if op == ArpOperation::Request && ours {
            // Answer in place.
            let mut a = ArpPacket::new_unchecked(&mut raw[l3..l3 + arp::ETHERNET_IPV4_LEN]);
            a.set_operation(ArpOperation::Reply);
            a.set_target_hardware_addr(&sha);
            a.set_target_protocol_addr(&spa.octets());
            a.set_source_hardware_addr(&ifc.mac);
            a.set_source_protocol_addr(&tpa.octets());
            m.ethertype = ETHERTYPE_ARP;
            m.end = (l3 + arp::ETHERNET_IPV4_LEN) as u16;
            if self.l2_header(p, m, sha, ifc.mac, ifc.vlan).is_some() {
                self.stats.arp_replies.inc();
                m.adj = u32::from(ifc.port);
                m.next = Next::Ready;
                self.tx_count(ifc.ifindex, p);
            } else {
                self.drop(m, DropReason::NoHeadroom);
            }
            return;
        }
        if op == ArpOperation::Reply && ift.punt_to_host && ours {
            // A reply to the router: the host stack may have asked (its own
            // neighbour table resolves what BIRD/FRR talk to). Requests for our
            // addresses are answered above and never reach it: one answer each.
            m.next = Next::Punt(PuntReason::Arp);
        } else if on_link {
            // A reply, or a request for someone else: learned (if anything), consumed.
            self.stats.arp_consumed.inc();
            m.next = Next::Drop;
        } else {
            self.drop(m, DropReason::ArpIgnored);
        }
    }

    pub(super) fn deliver_local<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        view: &fib::FibView<'_>,
    ) {
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        let raw = p.raw_mut();
        // (ip4-lookup checked the header: version, IHL, lengths)
        let ip = Ipv4Packet::new_unchecked(&raw[l3..end]);
        let is_echo = ip.protocol() == IpProtocol::Icmp
            && ip.payload().len() >= icmpv4::HEADER_LEN
            && Icmpv4Packet::new_unchecked(ip.payload()).msg_type() == Icmpv4Message::EchoRequest
            && !ip.is_fragment();
        if !is_echo {
            m.next = Next::Punt(ip4_punt_class(ip.into_inner()));
            return;
        }
        // Echo reply in place: swap addresses, type 0, fix both checksums.
        let mut ip = Ipv4Packet::new_unchecked(&mut raw[l3..end]);
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        ip.set_src_addr(dst);
        ip.set_dst_addr(src);
        ip.set_ttl_incremental(64);
        let mut icmp = Icmpv4Packet::new_unchecked(ip.payload_mut());
        let old = u16::from_be_bytes([u8::from(icmp.msg_type()), icmp.msg_code()]);
        icmp.set_msg_type(Icmpv4Message::EchoReply);
        let new = u16::from_be_bytes([0, icmp.msg_code()]);
        icmp.set_checksum(wire::checksum::update_u16(icmp.checksum(), old, new));
        self.stats.echo_replies.inc();
        self.route_local(raw, m, view, u32::from(src));
    }

    /// Sends a packet the router built (echo reply, ICMP error) to `dst`: one lookup
    /// in the table the packet it answers was looked up in (the receiving
    /// interface's, or the VRF its label popped into), the route's out-labels (a
    /// source behind an LSP is reached through it), then the usual rewrite.
    pub(super) fn route_local(
        &mut self,
        raw: &mut [u8],
        m: &mut Meta,
        view: &fib::FibView<'_>,
        dst: u32,
    ) {
        let table = m.table;
        let fwd = view.lookup(table, dst);
        let leg = view.leg(fwd, dst);
        match leg.action() {
            fib::Action::Forward => {
                let l3 = usize::from(m.l3);
                let stack = leg_stack::<{ fib::MAX_LABELS }>(leg);
                let Some((lse, push)) = stack.filter(|&(_, push)| l3 >= 4 * push + L2_ROOM) else {
                    self.drop(m, DropReason::NoHeadroom);
                    return;
                };
                // Pushed with the TTL of the IPv4 header the router wrote (64).
                let top = l3 - 4 * push;
                impose(&mut raw[top..l3], &lse, 64);
                m.ethertype = if push > 0 {
                    ETHERTYPE_MPLS
                } else {
                    ETHERTYPE_IPV4
                };
                m.l3 = top as u16;
                m.adj = leg.target();
                m.next = Next::Rewrite;
            }
            // The caller (`local`) turns the packet into the ARP request.
            // Held to go through this lookup again (`LocalJob::Route`).
            fib::Action::Glean => {
                let mut again = *m;
                again.next = Next::Local;
                again.local = LocalJob::Route;
                again.table = table;
                let l3 = raw
                    .get(usize::from(m.l3)..usize::from(m.end))
                    .unwrap_or_default();
                let held = self.hold_frame(l3, again, leg.target(), dst);
                self.resolve(m, leg.target(), dst, held)
            }
            // No error about a packet the router built (it would be to itself),
            // as Linux: the drop is named after the route.
            fib::Action::Unreachable => self.drop(m, DropReason::Ip4Unreachable),
            fib::Action::Prohibit => self.drop(m, DropReason::Ip4Prohibit),
            fib::Action::Drop => self.drop(m, DropReason::Ip4Blackhole),
            _ => self.drop(m, DropReason::Ip4NoRoute),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn icmp_error<P: Packet>(
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
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        let raw = p.raw_mut();
        let ip = &raw[l3..end];
        let src = rd32(ip, 12);
        let dst = rd32(ip, 16);
        let frag_off = rd16(ip, 6) & 0x1fff;
        let hl = usize::from(ip[0] & 0x0f) * 4;
        let about_icmp_error =
            ip[9] == 1 && ip.len() > hl && !matches!(ip[hl], 0 | 8 | 13 | 14 | 15 | 16 | 17 | 18);
        //= RFC 1812 §4.3.2.7: no ICMP error about an ICMP error, a non-first fragment,
        //= a broadcast/multicast destination or an invalid source.
        let src_bad = src == 0 || src >> 24 == 127 || src >> 28 == 0xe || src == u32::MAX;
        if about_icmp_error || frag_off != 0 || dst >> 28 == 0xe || dst == u32::MAX || src_bad {
            self.stats.drops[DropReason::IcmpSuppressed as usize].inc();
            m.next = Next::Drop;
            return;
        }
        let Some(me) = ift.source_for(u32::from(m.rx_if)) else {
            self.stats.drops[DropReason::IcmpSuppressed as usize].inc();
            m.next = Next::Drop;
            return;
        };
        if !self.icmp_token(now) {
            m.next = Next::Drop;
            return;
        }
        if l3 < 28 + L2_ROOM {
            self.drop(m, DropReason::NoHeadroom);
            return;
        }
        let quote = (end - l3).min(ICMP_QUOTE_MAX);
        let new = l3 - 28;
        let total = 28 + quote;
        let id = self.next_ident();
        let mut h = Ipv4Packet::new_unchecked(&mut raw[new..new + total]);
        h.set_version_and_header_len(20);
        h.set_dscp_ecn(48, 0); // CS6, internetwork control
        h.set_total_len(total as u16);
        h.set_ident(id);
        h.set_flags_and_frag_offset(false, false, 0);
        h.set_ttl(64);
        h.set_protocol(IpProtocol::Icmp);
        h.set_src_addr(me);
        h.set_dst_addr(Ipv4Addr::from(src));
        h.fill_checksum();
        let mut icmp = Icmpv4Packet::new_unchecked(h.payload_mut());
        icmp.set_msg_type(Icmpv4Message::from(typ));
        icmp.set_msg_code(code);
        icmp.clear_rest_of_header();
        if typ == 3 && code == 4 {
            icmp.set_next_hop_mtu(mtu);
        }
        icmp.fill_checksum();
        m.l3 = new as u16;
        m.end = (new + total) as u16;
        self.stats.icmp_errors.inc();
        self.route_local(raw, m, view, src);
    }

    /// Turns the packet into an ARP request for `ip` on interface `ifindex`.
    pub(super) fn arp_request<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        ifindex: u32,
        ip: u32,
    ) {
        let Some(ifc) = ift.get(ifindex) else {
            m.next = Next::Drop;
            return;
        };
        // Source address: the interface's toward the target; unnumbered, the
        // router's loopback.
        let spa = ifc
            .addr_toward(Ipv4Addr::from(ip))
            .or(ift.router_id)
            .map_or(0, u32::from);
        let l3 = usize::from(m.l3).max(L2_ROOM);
        let raw = p.raw_mut();
        if raw.len() < l3 + 46 {
            m.next = Next::Drop;
            return;
        }
        raw[l3..l3 + 46].fill(0);
        let mut a = ArpPacket::new_unchecked(&mut raw[l3..l3 + arp::ETHERNET_IPV4_LEN]);
        a.set_hardware_type(ArpHardware::Ethernet);
        a.set_protocol_type(EtherType::Ipv4);
        a.set_hardware_len(6);
        a.set_protocol_len(4);
        a.set_operation(ArpOperation::Request);
        a.set_source_hardware_addr(&ifc.mac);
        a.set_source_protocol_addr(&spa.to_be_bytes());
        a.set_target_protocol_addr(&ip.to_be_bytes());
        m.l3 = l3 as u16;
        m.end = (l3 + 46) as u16; // padded to the 60-byte minimum frame
        m.ethertype = ETHERTYPE_ARP;
        if self.l2_header(p, m, [0xff; 6], ifc.mac, ifc.vlan).is_some() {
            self.stats.arp_requests.inc();
            m.adj = u32::from(ifc.port);
            m.next = Next::Ready;
            self.tx_count(ifc.ifindex, p);
        } else {
            m.next = Next::Drop;
        }
    }

    /// MPLS TTL expiry: ICMP time exceeded with the RFC 4950 label stack, sent on
    /// along the LSP (it reaches the egress, which routes it back to the source);
    /// ICMPv6 for an IPv6 payload, from [`source6_for`].
    pub(super) fn mpls_ttl<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        labels: &mpls::LabelReader,
    ) {
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        let mut rx = [0u8; 512];
        let n = (end - l3).min(rx.len());
        let raw = p.raw_mut();
        rx[..n].copy_from_slice(&raw[l3..l3 + n]);
        let depth = mpls_depth(&rx[..n]);
        let ip6 = rx.get(4 * depth).is_some_and(|v| v >> 4 == 6);
        let me = ift.source_for(u32::from(m.rx_if));
        let me6 = if ip6 {
            source6_for(ift, m.rx_if, &rx[4 * depth..n])
        } else {
            None
        };
        if me.is_none() && me6.is_none() {
            self.stats.mpls_drop(mpls::DropReason::TtlExpired);
            m.next = Next::Drop;
            return;
        }
        if !self.icmp_token(tsc()) {
            m.next = Next::Drop;
            return;
        }
        let id = self.next_ident();
        let guard = labels.pin();
        // Build the reply where the received stack started; labels go in front.
        let headroom = l3;
        let built = match (me6, me) {
            (Some(me6), _) => guard
                .ttl_exceeded_reply6(&rx[..n], me6, raw, headroom)
                .map(|r| (r, mpls::icmp::time_exceeded6_len(depth))),
            (None, Some(me)) if !ip6 => guard
                .ttl_exceeded_reply(&rx[..n], me, id, raw, headroom)
                .map(|r| (r, mpls::icmp::time_exceeded_len(depth))),
            _ => Err(mpls::IcmpError::NotIpv6),
        };
        let Ok(((off, decision), len)) = built else {
            self.stats.mpls_drop(mpls::DropReason::TtlExpired);
            m.next = Next::Drop;
            return;
        };
        m.l3 = off as u16;
        m.end = (headroom + len) as u16;
        let et = match decision {
            mpls::MplsDecision::Forward { adj } => Some((adj, ETHERTYPE_MPLS)),
            mpls::MplsDecision::Php { adj } => Some((adj, ETHERTYPE_IPV4)),
            mpls::MplsDecision::Php6 { adj } => Some((adj, ETHERTYPE_IPV6)),
            _ => None,
        };
        match et {
            Some((adj, et)) => {
                m.ethertype = et;
                m.adj = adj;
                m.next = Next::Rewrite;
                self.stats.icmp_errors.inc();
            }
            None => {
                self.stats.mpls_drop(mpls::DropReason::TtlExpired);
                m.next = Next::Drop;
            }
        }
    }

    pub(super) fn next_ident(&mut self) -> u16 {
        self.ident = self.ident.wrapping_add(1);
        self.ident
    }

    /// Writes the Ethernet (and 802.1Q) header in front of `m.l3` and sets the
    /// packet's window to the frame. None when the headroom is too small.
    #[inline(always)]
    pub(super) fn l2_header<P: Packet>(
        &self,
        p: &mut P,
        m: &Meta,
        dst: [u8; 6],
        src: [u8; 6],
        vlan: Option<u16>,
    ) -> Option<()> {
        let l3 = usize::from(m.l3);
        let (hdr, tagged) = l2_hdr(dst, src, vlan);
        let start = l3.checked_sub(ETH_LEN + VLAN_LEN * usize::from(tagged))?;
        write_l2(p.raw_mut(), start, &hdr, tagged, m.ethertype)?;
        let end = usize::from(m.end);
        p.set_window(start, end - start).then_some(())
    }

    #[inline(always)]
    pub(super) fn tx_count<P: Packet>(&self, ifindex: u32, p: &P) {
        if let Some(c) = self.stats.ifaces.get(ifindex as usize) {
            c.tx_pkts.inc();
            c.tx_bytes.add(p.window().1 as u64);
        }
    }

    /// A switched packet bigger than its next hop's `mtu`: dropped, and when its
    /// IPv4 payload has DF set, replaced by "fragmentation needed" (the MTU left
    /// for IPv4 under the outgoing stack) behind the same outgoing stack, so it
    /// goes on along the LSP to the egress, which routes it back to the source
    /// (as TTL expiry inside an LSP is answered); an IPv6 payload (never
    /// fragmented) by ICMPv6 packet too big likewise. `None`: dropped.
    #[cold]
    #[inline(never)]
    pub(super) fn lsp_too_big<P: Packet>(
        &mut self,
        p: &mut P,
        i: usize,
        m: &mut Meta,
        ift: &IfTable,
        mtu: u16,
    ) -> Option<()> {
        self.drop(m, DropReason::MplsMtuExceeded);
        // (the router's own packet from here: sFlow describes the one dropped)
        m.path |= 1 << Stage::Local as u8;
        if self.obs.sflow_notes {
            self.keep_head(p, i);
        }
        let (l3, end) = (usize::from(m.l3), usize::from(m.end));
        let raw = p.raw_mut();
        let frame = raw.get(l3..end)?;
        let depth = if m.ethertype == ETHERTYPE_MPLS {
            mpls_depth(frame)
        } else {
            0
        };
        let orig = frame.get(4 * depth..)?;
        if orig.first().is_some_and(|v| v >> 4 == 6) {
            return self.lsp_too_big6(p, m, ift, mtu, depth);
        }
        if orig.first().is_none_or(|v| v >> 4 != 4) || orig.get(6)? & 0x40 == 0 {
            return None;
        }
        let me = ift.source_for(u32::from(m.rx_if))?;
        if !self.icmp_token(tsc()) {
            return None;
        }
        let mut reply = [0u8; mpls::icmp::FRAG_NEEDED_LEN];
        let ip_mtu = mtu.saturating_sub(4 * depth as u16);
        let id = self.next_ident();
        let n = mpls::icmp::build_frag_needed(orig, me, id, ip_mtu, &mut reply).ok()?;
        // The outgoing stack stays (labels, TC, S); its TTLs are a new packet's.
        let reply_end = l3 + 4 * depth + n;
        let raw = raw.get_mut(l3..reply_end)?;
        for lse in raw[..4 * depth].chunks_exact_mut(4) {
            lse[3] = mpls::icmp::REPLY_TTL;
        }
        raw[4 * depth..].copy_from_slice(&reply[..n]);
        m.end = reply_end as u16;
        // Sent, keeping the original's drop reason (as ICMP errors do).
        m.next = Next::Rewrite;
        self.stats.icmp_errors.inc();
        Some(())
    }
}

impl Work {
    /// [`Work::lsp_too_big`] for an IPv6 payload under `depth` labels (none:
    /// a penultimate hop's pop): ICMPv6 packet too big with the MTU left under
    /// the outgoing stack, from [`source6_for`], behind that stack.
    #[cold]
    #[inline(never)]
    fn lsp_too_big6<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        mtu: u16,
        depth: usize,
    ) -> Option<()> {
        let (l3, end) = (usize::from(m.l3), usize::from(m.end));
        let raw = p.raw_mut();
        let orig = raw.get(l3 + 4 * depth..end)?;
        let me = source6_for(ift, m.rx_if, orig)?;
        if !self.icmp_token(tsc()) {
            return None;
        }
        let ip_mtu = mtu.saturating_sub(4 * depth as u16);
        // (the reply is no longer than the packet it replaces, which was longer
        // than the MTU)
        let mut reply = [0u8; wire::ipv6::MIN_MTU];
        let n = mpls::icmp::build_packet_too_big6(orig, me, ip_mtu, &mut reply).ok()?;
        let reply_end = l3 + 4 * depth + n;
        let raw = raw.get_mut(l3..reply_end.min(end))?;
        if raw.len() != 4 * depth + n {
            return None;
        }
        for lse in raw[..4 * depth].chunks_exact_mut(4) {
            lse[3] = mpls::icmp::REPLY_TTL;
        }
        raw[4 * depth..].copy_from_slice(&reply[..n]);
        m.end = reply_end as u16;
        m.next = Next::Rewrite;
        self.stats.icmp_errors.inc();
        Some(())
    }
}

/// Token bucket in TSC ticks.
#[derive(Debug, Clone, Copy)]
pub(in crate::router) struct Bucket {
    pub(super) tokens: u64,
    pub(super) max: u64,
    pub(super) last: u64,
    pub(super) ticks_per_token: u64,
}

impl Bucket {
    pub(in crate::router) fn new(rate: u32, burst: u32, hz: u64) -> Self {
        Bucket {
            tokens: u64::from(burst),
            max: u64::from(burst),
            last: 0,
            ticks_per_token: hz / u64::from(rate.max(1)),
        }
    }

    pub(in crate::router) fn take(&mut self, now: u64) -> bool {
        if let Some(add) = now
            .saturating_sub(self.last)
            .checked_div(self.ticks_per_token)
        {
            if add > 0 {
                self.tokens = (self.tokens + add).min(self.max);
                // Keep the part of a token already earned (moving `last` to `now`
                // dropped up to one token per refill); a full bucket earns no more.
                self.last = if self.tokens == self.max {
                    now
                } else {
                    self.last + add * self.ticks_per_token
                };
            }
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

/// The slot of `ip` among the recently asked addresses.
fn arp_slot(ip: u32) -> usize {
    (ip.wrapping_mul(0x9e37_79b9) >> 28) as usize
}

/// The IPv6 address the router answers the IPv6 packet `orig` from when it
/// arrived on interface `rx_if` under labels: the interface's global address
/// (toward the packet's source), else its IPv4 source
/// ([`IfTable::source_for`]) as an IPv4-mapped address, as a P router of an
/// IPv4 core with no IPv6 address of its own answers 6PE traffic.
pub(super) fn source6_for(ift: &IfTable, rx_if: u16, orig: &[u8]) -> Option<Ipv6Addr> {
    let to = orig.get(8..24).map_or(Ipv6Addr::UNSPECIFIED, |b| {
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        Ipv6Addr::from(a)
    });
    ift.get(u32::from(rx_if))
        .and_then(|i| i.addr6_toward(to))
        .filter(|a| !a.is_unicast_link_local())
        .or_else(|| ift.source_for(u32::from(rx_if)).map(|a| a.to_ipv6_mapped()))
}

/// Label stack depth at the start of `b` (1 + entries before bottom of stack).
pub(super) fn mpls_depth(b: &[u8]) -> usize {
    let mut d = 0;
    while d * 4 + 4 <= b.len() && d < mpls::MAX_STACK_DEPTH {
        d += 1;
        if b[d * 4 - 2] & 1 != 0 {
            break;
        }
    }
    d
}
