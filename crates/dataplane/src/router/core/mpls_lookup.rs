//! `mpls-lookup`: label switching of the packets the fast path left.
//!
//! Per packet: the label table's decision on its stack ([`mpls::LabelGuard::switch`]:
//! swap, penultimate-hop pop of an IPv4 or IPv6 payload, pop into an IPv4 or
//! IPv6 lookup (explicit null 0 and 2 included, or by the payload's version),
//! pops of reserved labels in the same pass), with the stack as received kept for
//! sFlow while it may sample.
//!
//! Next nodes: `rewrite` (swap, PHP), `ip4-lookup` and `ip6-lookup` (popped to
//! IP, same vector), `local` (TTL expired: ICMP or ICMPv6 time exceeded with
//! RFC 4950 labels), punt, drop. Counters: `mpls drops` by label-table reason.

use super::*;

impl Work {
    /// mpls-lookup over the packets of `self.slow[..n_slow]` bound for it;
    /// counts in `q` the packets it hands to `ip4-lookup`, `ip6-lookup` and
    /// `local`.
    #[inline(always)]
    pub(super) fn mpls_lookup<P: Packet>(
        &mut self,
        pkts: &mut [P],
        n_slow: usize,
        labels: &mpls::LabelReader,
        ift: &IfTable,
        q: &mut Pending,
    ) {
        let guard = labels.pin();
        let stats: &WorkerStats = &self.stats;
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            let m = &mut self.meta[i];
            if !matches!(m.next, Next::MplsLookup) {
                continue;
            }
            m.path |= 1 << Stage::MplsLookup as u8;
            let raw = pkts[i].raw_mut();
            let mut off = usize::from(m.l3);
            let frame = &mut raw[..usize::from(m.end)];
            if self.obs.keep_stacks {
                sflow_hook::keep_stack(&mut self.obs.stacks[i], frame, off);
            }
            match guard.switch(frame, &mut off) {
                mpls::MplsDecision::Forward { adj } => {
                    m.l3 = off as u16;
                    m.ethertype = ETHERTYPE_MPLS;
                    m.adj = adj;
                    m.next = Next::Rewrite;
                }
                mpls::MplsDecision::Php { adj } => {
                    m.l3 = off as u16;
                    m.ethertype = ETHERTYPE_IPV4;
                    m.adj = adj;
                    m.next = Next::Rewrite;
                }
                mpls::MplsDecision::Php6 { adj } => {
                    m.l3 = off as u16;
                    m.ethertype = ETHERTYPE_IPV6;
                    m.adj = adj;
                    m.next = Next::Rewrite;
                }
                mpls::MplsDecision::Ip4Lookup { table } => {
                    m.l3 = off as u16;
                    // (m.table is the receiving interface's)
                    m.table = mpls::lookup_table(table, m.table);
                    m.next = Next::Ip4Lookup;
                    q.ip4 += 1;
                }
                mpls::MplsDecision::Ip6Lookup { table } => {
                    m.l3 = off as u16;
                    m.table = mpls::lookup_table(table, m.table);
                    m.next = Next::Ip6Lookup;
                    q.ip6 += 1;
                }
                mpls::MplsDecision::Xconnect { pw } => {
                    pw::pw_decap(stats, &mut pkts[i], m, pw, off, ift);
                }
                mpls::MplsDecision::Punt(_) => m.next = Next::Punt(PuntReason::Mpls),
                mpls::MplsDecision::Drop(r) => {
                    m.next = Next::Drop;
                    stats.mpls_drop(r);
                    m.reason = Some(Discard::Mpls(r));
                    stats.ifaces[usize::from(m.rx_if)].drops.inc();
                }
                mpls::MplsDecision::TtlExpired => {
                    m.local = LocalJob::MplsTtl;
                    m.next = Next::Local; // handled by the local stage
                    q.local += 1;
                }
            }
        }
        drop(guard);
    }
}
