//! `ip6-lookup`: IPv6 forwarding.
//!
//! Per packet: the header checks (version, payload length within the frame, the
//! frame's padding cut), the addresses no packet may carry (multicast or
//! loopback source, unspecified or loopback destination), scope (link-local
//! and link-scope multicast destinations stay on their link: neighbour
//! discovery and packets to the router go to `local`, the rest of link-scope
//! multicast to the host stack when there is one), the batched LPM over the
//! vector, the ECMP leg by flow hash, the hop limit, the link-local source that
//! may not leave its link (RFC 4291 §2.5.6), the MTU (never fragmented: packet
//! too big, RFC 8200 §5), and the labels the route imposes (uniform TTL).
//! Extension headers are forwarded untouched (RFC 8200 §4: a router does not
//! process them; hop-by-hop options are not examined).
//!
//! Next nodes: `rewrite` (forwarded), `local` (for the router, neighbour
//! discovery, ICMPv6 errors, unresolved next hop: neighbour solicitation),
//! punt (link-scope multicast for the host stack), drop. Counters: drops
//! `ip6_*`, `stale_adjacency`, `no_headroom`, `neighbor_*`.

use super::*;

/// Where a packet goes when its header says it never takes the FIB.
enum Pre {
    Drop(DropReason),
    Punt(PuntReason),
    Local,
}

/// The first byte of a link-local unicast address (fe80::/10) and of the
/// multicast ones (ff00::/8).
const LINK_LOCAL: u128 = 0xfe80 << 112;
const LINK_LOCAL_MASK: u128 = 0xffc0 << 112;
/// ICMPv6 next header, and the neighbour discovery types routers take here.
const NH_ICMP6: u8 = 58;

#[inline(always)]
fn is_link_local(a: u128) -> bool {
    a & LINK_LOCAL_MASK == LINK_LOCAL
}

/// The address at `ip[o..o + 16]`, as a big-endian `u128`.
#[inline(always)]
pub(super) fn addr_at(ip: &[u8], o: usize) -> u128 {
    let mut b = [0u8; 16];
    b.copy_from_slice(&ip[o..o + 16]);
    u128::from_be_bytes(b)
}

impl Work {
    /// ip6-lookup over the packets of `self.slow[..n_slow]` bound for it;
    /// counts in `q` the packets it hands to `local`.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)]
    pub(super) fn ip6_lookup<P: Packet>(
        &mut self,
        pkts: &mut [P],
        n_slow: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        q: &mut Pending,
    ) {
        let (k, table0, same) = self.ip6_keys(pkts, n_slow, ift, q);
        if same {
            view.lookup6_burst(table0.unwrap_or(0), &self.keys6[..k], &mut self.fwd[..k]);
        } else {
            for j in 0..k {
                let t = self.meta[usize::from(self.sel[j])].table;
                self.fwd[j] = view.lookup6(t, self.keys6[j]);
            }
        }
        for j in 0..k {
            let i = usize::from(self.sel[j]);
            let mut m = self.meta[i];
            let (l3, end) = (usize::from(m.l3), usize::from(m.end));
            // (a result with one leg needs no flow hash: one read of its header)
            let (leg, hash) = match view.only_leg(self.fwd[j]) {
                Some(leg) => (leg, m.hash),
                None => {
                    let rss = pkts[i].rss_hash();
                    let hash = if m.hash != 0 {
                        m.hash
                    } else if rss != 0 {
                        rss
                    } else {
                        pkts[i].raw_mut().get(l3..end).map_or(0, flow_hash6)
                    };
                    (view.leg(self.fwd[j], hash), hash)
                }
            };
            match leg.action() {
                fib::Action::Forward => {
                    self.ip6_forward(&mut pkts[i], &mut m, leg, hash, ift, view)
                }
                fib::Action::Local => {
                    m.local = LocalJob::ToUs6;
                    m.next = Next::Local;
                }
                fib::Action::Glean => {
                    let raw = pkts[i].raw_mut();
                    if raw[l3 + 7] <= 1 {
                        self.drop_with_icmp6(&mut m, DropReason::Ip6HopLimitExpired, 3, 0, 0);
                    } else {
                        m.hash = hash;
                        let dst = addr_at(raw, l3 + 24);
                        let held = self.hold(&mut pkts[i], &m, leg.target(), fold6(dst));
                        self.solicit6(&mut m, leg.target(), u32::MAX, dst, held);
                    }
                }
                fib::Action::NoRoute => {
                    self.drop_with_icmp6(&mut m, DropReason::Ip6NoRoute, 1, 0, 0)
                }
                fib::Action::Unreachable => {
                    self.drop_with_icmp6(&mut m, DropReason::Ip6Unreachable, 1, 0, 0)
                }
                fib::Action::Prohibit => {
                    self.drop_with_icmp6(&mut m, DropReason::Ip6Prohibit, 1, 1, 0)
                }
                fib::Action::Drop => self.drop(&mut m, DropReason::Ip6Blackhole),
            }
            q.local += usize::from(m.next == Next::Local);
            self.meta[i] = m;
        }
    }

    /// A packet the FIB forwards over `leg`: hop limit, scope, MTU, the
    /// neighbour, the labels; on to the rewrite, or to `local` for an error or a
    /// solicitation.
    #[inline(always)]
    fn ip6_forward<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        leg: fib::Leg<'_>,
        hash: u32,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) {
        let (l3, end) = (usize::from(m.l3), usize::from(m.end));
        let raw = p.raw_mut();
        // (the order of Linux's ip6_forward: hop limit, then the source's scope,
        // then the MTU)
        if raw[l3 + 7] <= 1 {
            self.drop_with_icmp6(m, DropReason::Ip6HopLimitExpired, 3, 0, 0);
            return;
        }
        let src = addr_at(raw, l3 + 8);
        if src == 0 {
            self.drop(m, DropReason::Ip6Martian);
            return;
        }
        if is_link_local(src) {
            self.drop_with_icmp6(m, DropReason::Ip6BeyondScope, 1, 2, 0);
            return;
        }
        let adj = leg.target();
        let rw = &self.rw[self.rw_slot(adj, ift, view)];
        let (stale, complete, mtu, ifindex) = (rw.stale, rw.complete, rw.mtu, rw.ifindex);
        if stale {
            self.drop(m, DropReason::StaleAdjacency);
            return;
        }
        // (a leg holds at most fib::MAX_LABELS: never `None`)
        let Some((lse, push)) = leg_stack::<{ fib::MAX_LABELS }>(leg) else {
            self.drop(m, DropReason::NoHeadroom);
            return;
        };
        if end - l3 + 4 * push > usize::from(mtu) {
            let mtu = mtu.saturating_sub(4 * push as u16);
            self.drop_with_icmp6(m, DropReason::Ip6TooBig, 2, 0, mtu);
            return;
        }
        if !complete {
            m.hash = hash;
            let nbr = view
                .adjacency(adj)
                .and_then(|a| a.neighbor6)
                .map_or(0, u128::from);
            let held = self.hold(p, m, ifindex, fold6(nbr));
            self.solicit6(m, ifindex, adj, nbr, held);
            return;
        }
        if l3 < 4 * push + L2_ROOM {
            self.drop(m, DropReason::NoHeadroom);
            return;
        }
        let raw = p.raw_mut();
        let hl = raw[l3 + 7] - 1;
        raw[l3 + 7] = hl;
        m.ethertype = ETHERTYPE_IPV6;
        if push > 0 {
            let top = l3 - 4 * push;
            impose(&mut raw[top..l3], &lse, hl);
            m.l3 = top as u16;
            m.ethertype = ETHERTYPE_MPLS;
        }
        m.adj = adj;
        m.next = Next::Rewrite;
    }

    /// The header checks of ip6-lookup over the packets of `self.slow[..n_slow]`
    /// bound for it: the destinations of those that take the FIB become the
    /// keys; the rest go to `local`, are punted or dropped. Returns how many
    /// keys, the first key's table, and whether every key has it.
    #[inline(always)]
    fn ip6_keys<P: Packet>(
        &mut self,
        pkts: &mut [P],
        n_slow: usize,
        ift: &IfTable,
        q: &mut Pending,
    ) -> (usize, Option<u32>, bool) {
        let mut k = 0usize;
        let mut table0 = None;
        let mut same = true;
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            let m = &mut self.meta[i];
            if !matches!(m.next, Next::Ip6Lookup) {
                continue;
            }
            m.path |= 1 << Stage::Ip6Lookup as u8;
            let raw = pkts[i].raw_mut();
            match ip6_check(raw, m, ift) {
                Ok(dst) => {
                    self.keys6[k] = dst;
                    self.sel[k] = i as u16;
                    k += 1;
                    same &= *table0.get_or_insert(m.table) == m.table;
                }
                Err(Pre::Local) => {
                    m.local = LocalJob::ToUs6;
                    m.next = Next::Local;
                    q.local += 1;
                }
                Err(Pre::Punt(r)) => m.next = Next::Punt(r),
                Err(Pre::Drop(r)) => drop_meta(&self.stats, m, r),
            }
        }
        (k, table0, same)
    }

    /// Marks a packet for an ICMPv6 error (built by the local stage) and counts
    /// the drop reason of the original.
    pub(super) fn drop_with_icmp6(&self, m: &mut Meta, r: DropReason, typ: u8, code: u8, mtu: u16) {
        self.drop_with_icmp(m, r, typ, code, mtu);
        m.local = LocalJob::Icmp6Error(typ, code, mtu);
    }
}

/// The header test of ip6-lookup on the frame `raw` (IPv6 header at `m.l3`):
/// the destination to look up, or where the packet goes instead. Cuts the
/// frame's padding (`m.end`).
#[inline(always)]
fn ip6_check(raw: &[u8], m: &mut Meta, ift: &IfTable) -> Result<u128, Pre> {
    let (l3, end) = (usize::from(m.l3), usize::from(m.end));
    let Some(ip) = raw.get(l3..end).filter(|ip| ip.len() >= 40) else {
        return Err(Pre::Drop(DropReason::Ip6Truncated));
    };
    if ip[0] >> 4 != 6 {
        return Err(Pre::Drop(DropReason::Ip6BadVersion));
    }
    let total = 40 + usize::from(rd16(ip, 4));
    if total > ip.len() {
        return Err(Pre::Drop(DropReason::Ip6BadLength));
    }
    m.end = (l3 + total) as u16;
    let ip = &ip[..total];
    let (src, dst) = (addr_at(ip, 8), addr_at(ip, 24));
    // A multicast or loopback source, a loopback or unspecified destination.
    if src >> 120 == 0xff || src == 1 || dst <= 1 {
        return Err(Pre::Drop(DropReason::Ip6Martian));
    }
    let nd = ip[6] == NH_ICMP6 && ip.get(40).is_some_and(|t| matches!(t, 135 | 136));
    if dst >> 120 == 0xff {
        // Interface- and link-scope multicast (ff01::/16, ff02::/16): neighbour
        // discovery here, the rest (MLD, OSPFv3, RIPng, all-routers) to the host
        // stack. Wider scopes are not routed.
        let scope = (dst >> 112) & 0xf;
        return match scope {
            1 | 2 if nd => Err(Pre::Local),
            1 | 2 if ift.punt_to_host => Err(Pre::Punt(ip6_punt_class(ip))),
            _ => Err(Pre::Drop(DropReason::Ip6Multicast)),
        };
    }
    if is_link_local(dst) {
        let ours = ift
            .get(u32::from(m.rx_if))
            .is_some_and(|i| i.has_addr6(Ipv6Addr::from(dst)));
        // (the host stack behind the twin holds link-local addresses of its own)
        return if nd || ours || ift.punt_to_host {
            Err(Pre::Local)
        } else {
            Err(Pre::Drop(DropReason::Ip6LinkLocal))
        };
    }
    Ok(dst)
}

/// The ECMP hash of an IPv6 packet: addresses, flow label, next header and,
/// for TCP and UDP right behind the header, the ports; folded and spread as
/// [`flow_hash`]'s ([`spread`]).
#[inline(always)]
pub(super) fn flow_hash6(ip: &[u8]) -> u32 {
    if ip.len() < 40 {
        return 0;
    }
    let (src, dst) = (addr_at(ip, 8), addr_at(ip, 24));
    let a = src ^ dst.rotate_left(17);
    let mut h = (a as u64) ^ ((a >> 64) as u64);
    let flow = u64::from(rd32(ip, 0) & 0x000f_ffff);
    let nh = ip[6];
    let ports = if matches!(nh, 6 | 17) && ip.len() >= 44 {
        u64::from(rd32(ip, 40))
    } else {
        0
    };
    h ^= (flow << 40) ^ (u64::from(nh) << 32) ^ ports.rotate_left(21);
    spread(h)
}

/// An IPv6 address folded to the 32-bit key the hold queue and the
/// solicitation rate limit keep (two addresses that fold alike share a rate
/// limit and a hold budget, nothing else).
#[inline(always)]
pub(super) fn fold6(a: u128) -> u32 {
    let x = (a as u32) ^ ((a >> 32) as u32) ^ ((a >> 64) as u32) ^ ((a >> 96) as u32);
    x | 0x8000_0000
}
