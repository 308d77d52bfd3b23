//! Pseudowires (VPWS, RFC 4448 raw mode, RFC 4385 control word).
//!
//! Encapsulation, in `ethernet-input`: every frame of a port that is a
//! pseudowire's attachment circuit, whatever its MAC, tags or EtherType, gets
//! the control word (if the pseudowire has one), the pseudowire's label and the
//! labels of the route to the remote PE in front, and goes to `rewrite` for the
//! route's adjacency. The route is looked up per frame, so the pseudowire
//! follows its LSP (relabel, reroute) with the FIB's publication. Every label
//! leaves with TTL 255.
//!
//! Decapsulation, in `mpls-lookup`: the label table's `Xconnect` entry popped
//! the pseudowire's label; the control word goes, and the frame leaves on the
//! circuit as the remote circuit received it.
//!
//! Counters: per pseudowire (frames and bytes each way, drops), the circuit's
//! rx and tx; drops `pw_down`, `pw_mtu_exceeded`, `pw_bad_payload`.

use super::*;

/// Labels a pseudowire's frame takes at most (the route's and its own).
const MAX_PW_LABELS: usize = 8;

/// An LSE with TTL 255 (S bit as given).
fn lse(label: u32, bos: bool) -> [u8; 4] {
    ((label << 12) | (u32::from(bos) << 8) | 255).to_be_bytes()
}

/// Frame `p` arrived on the circuit of pseudowire `k` (`e`): into the
/// pseudowire, or dropped and counted.
pub(super) fn pw_encap<P: Packet>(
    stats: &WorkerStats,
    p: &mut P,
    m: &mut Meta,
    k: u32,
    e: &PwEntry,
    view: &fib::FibView<'_>,
) {
    let (start, len) = p.window();
    *m = Meta {
        end: (start + len) as u16,
        rx_if: e.ac as u16,
        ..Meta::default()
    };
    let Some(c) = stats.pws.get(k as usize) else {
        return drop_meta(stats, m, DropReason::PwDown);
    };
    if let Some(i) = stats.ifaces.get(e.ac as usize) {
        i.rx_pkts.inc();
        i.rx_bytes.add(len as u64);
    }
    let fail = |m: &mut Meta, r| {
        c.drops.inc();
        drop_meta(stats, m, r);
    };
    if !p.is_contiguous() {
        return fail(m, DropReason::MultiSegment);
    }
    if len < ETH_LEN {
        return fail(m, DropReason::EthTruncated);
    }
    // One leg per pseudowire (its frames stay in order).
    let leg = view.leg(view.lookup(0, u32::from(e.remote)), k);
    let adj = leg.target();
    let Some(a) = view
        .adjacency(adj)
        .filter(|_| leg.action() == fib::Action::Forward)
    else {
        return fail(m, DropReason::PwDown);
    };
    let mut labels = [0u32; MAX_PW_LABELS];
    let n = leg.labels_into(&mut labels[..MAX_PW_LABELS - 1]);
    // (an implicit null of the route: nothing to push for it)
    let mut stack = [0u32; MAX_PW_LABELS];
    let mut depth = 0;
    for &l in &labels[..n] {
        if l != wire::Label::IMPLICIT_NULL.value() {
            stack[depth] = l;
            depth += 1;
        }
    }
    stack[depth] = e.out_label;
    depth += 1;
    let push = 4 * depth + if e.cw { 4 } else { 0 };
    // (the inner frame, Ethernet header and all, is the outer payload)
    if len + push > usize::from(a.mtu) {
        return fail(m, DropReason::PwMtuExceeded);
    }
    let Some(l3) = start
        .checked_sub(push)
        .filter(|&l3| l3 >= ETH_LEN + VLAN_LEN)
    else {
        return fail(m, DropReason::NoHeadroom);
    };
    let raw = p.raw_mut();
    let mut o = l3;
    for (j, &l) in stack[..depth].iter().enumerate() {
        raw[o..o + 4].copy_from_slice(&lse(l, j + 1 == depth));
        o += 4;
    }
    if e.cw {
        //= RFC 4385 §3: first nibble 0; flags, fragment bits and the
        // sequence number 0 (sequencing not used).
        raw[o..o + 4].fill(0);
    }
    c.encap_pkts.inc();
    c.encap_bytes.add(len as u64);
    m.l3 = l3 as u16;
    m.ethertype = ETHERTYPE_MPLS;
    m.adj = adj;
    m.next = Next::Rewrite;
}

/// The label table popped pseudowire `k`'s label of the frame of `m`; its
/// payload starts at `off`: out of the circuit, or dropped and counted.
pub(super) fn pw_decap<P: Packet>(
    stats: &WorkerStats,
    p: &mut P,
    m: &mut Meta,
    k: u32,
    off: usize,
    ift: &IfTable,
) {
    let Some((e, c)) = ift.pw(k).zip(stats.pws.get(k as usize)) else {
        return drop_meta(stats, m, DropReason::PwDown);
    };
    let fail = |m: &mut Meta, r| {
        c.drops.inc();
        drop_meta(stats, m, r);
    };
    let end = usize::from(m.end);
    let raw = p.raw_mut();
    let mut at = off;
    if e.cw {
        match raw.get(at..end) {
            Some(w) if w.len() >= 4 && w[0] >> 4 == 0 => at += 4,
            _ => return fail(m, DropReason::PwBadPayload),
        }
    }
    let len = end.saturating_sub(at);
    if len < ETH_LEN {
        return fail(m, DropReason::PwBadPayload);
    }
    let Some(ac) = ift.get(e.ac).filter(|i| i.up) else {
        return fail(m, DropReason::InterfaceDown);
    };
    // (an 802.1Q tag the remote circuit received is carried, not counted)
    let tagged = rd16(raw, at + 12) == ETHERTYPE_VLAN;
    let header = ETH_LEN + if tagged { VLAN_LEN } else { 0 };
    if len > usize::from(ac.mtu) + header {
        return fail(m, DropReason::PwMtuExceeded);
    }
    if !p.set_window(at, len) {
        return fail(m, DropReason::PwBadPayload);
    }
    c.decap_pkts.inc();
    c.decap_bytes.add(len as u64);
    if let Some(i) = stats.ifaces.get(e.ac as usize) {
        i.tx_pkts.inc();
        i.tx_bytes.add(len as u64);
    }
    m.adj = u32::from(e.port);
    m.next = Next::Ready;
}
