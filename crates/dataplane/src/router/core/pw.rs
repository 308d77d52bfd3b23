//! Pseudowires (VPWS, RFC 4448 raw mode, RFC 4385 control word).
//!
//! Encapsulation, in `ethernet-input`: every frame of a port that is a
//! pseudowire's attachment circuit, whatever its MAC, tags or EtherType (or of
//! the VLAN of a sub-interface that is one, its tag stripped), gets the control
//! word (if the pseudowire has one), the pseudowire's label and the labels of
//! the route to the remote PE in front, and goes to `rewrite` for the route's
//! adjacency. The route is looked up once per vector, so the pseudowire follows
//! its LSP (relabel, reroute) with the FIB's publication. Every label leaves
//! with TTL 255.
//!
//! Decapsulation, in the fast path's classify walk (or `mpls-lookup`): the label
//! table's `Xconnect` entry popped the pseudowire's label; the control word
//! goes, and the frame leaves on the circuit as the remote circuit received it
//! (a sub-interface's tag pushed back).
//!
//! Counters: per pseudowire (frames and bytes each way, drops), the circuit's
//! rx and tx; drops `pw_down`, `pw_mtu_exceeded`, `pw_bad_payload`.

use super::*;

/// Labels a pseudowire's frame takes at most (the route's and its own).
const MAX_PW_LABELS: usize = 8;

/// The pseudowire whose circuit frame `p` arrived on: its port, or the
/// sub-interface of its 802.1Q tag.
#[inline(always)]
pub(super) fn circuit<'t, P: Packet>(p: &mut P, ift: &'t IfTable) -> Option<(u32, &'t PwEntry)> {
    let port = p.port();
    if !ift.port_has_pw(port) {
        return None;
    }
    let f = p.data_mut();
    let vlan = match f.get(12..16) {
        Some(t) if rd16(t, 0) == ETHERTYPE_VLAN => Some(rd16(t, 2) & 0x0fff),
        _ => None,
    };
    // (a port that is a circuit takes every tag no sub-interface circuit takes)
    match vlan {
        Some(_) => ift.pw_of(port, vlan).or_else(|| ift.pw_of(port, None)),
        None => ift.pw_of(port, None),
    }
}

/// Where pseudowire `k`'s frames go now: the adjacency of the route to its
/// remote PE, the MTU there, and the labels to push (the route's, then the
/// pseudowire's). Resolved once per vector and circuit.
#[derive(Debug, Clone, Copy)]
pub(super) struct PwPath {
    adj: u32,
    mtu: u16,
    stack: [u32; MAX_PW_LABELS],
    depth: usize,
}

/// Resolves pseudowire `k` (`e`) in `view`.
pub(super) fn pw_resolve(k: u32, e: &PwEntry, view: &fib::FibView<'_>) -> Option<PwPath> {
    // One leg per pseudowire (its frames stay in order).
    let leg = view.leg(view.lookup(0, u32::from(e.remote)), k);
    let adj = leg.target();
    let a = view
        .adjacency(adj)
        .filter(|_| leg.action() == fib::Action::Forward)?;
    // The route's stack as an IPv4 push would take it (an implicit null pushes
    // nothing), the bottom moving to the pseudowire's label; no room for it:
    // down.
    let (mut stack, n) = leg_stack::<MAX_PW_LABELS>(leg).filter(|s| s.1 < MAX_PW_LABELS)?;
    if n > 0 {
        stack[n - 1] &= !0x100;
    }
    stack[n] = e.out_label << 12 | 0x100;
    Some(PwPath {
        adj,
        mtu: a.mtu,
        stack,
        depth: n + 1,
    })
}

/// Frame `p` arrived on the circuit of pseudowire `k` (`e`), whose path is
/// `path`: into the pseudowire, or dropped and counted.
pub(super) fn pw_encap<P: Packet>(
    stats: &WorkerStats,
    p: &mut P,
    m: &mut Meta,
    k: u32,
    e: &PwEntry,
    path: Option<&PwPath>,
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
    let Some(path) = path else {
        return fail(m, DropReason::PwDown);
    };
    let rx_len = len;
    let (start, len) = if e.vlan.is_some() {
        // A sub-interface's tag delimits the service: it stays here.
        if len < ETH_LEN + VLAN_LEN {
            return fail(m, DropReason::EthTruncated);
        }
        p.raw_mut().copy_within(start..start + 12, start + VLAN_LEN);
        (start + VLAN_LEN, len - VLAN_LEN)
    } else {
        (start, len)
    };
    let push = 4 * path.depth + if e.cw { 4 } else { 0 };
    // (the inner frame, Ethernet header and all, is the outer payload)
    if len + push > usize::from(path.mtu) {
        return fail(m, DropReason::PwMtuExceeded);
    }
    let Some(l3) = start
        .checked_sub(push)
        .filter(|&l3| l3 >= ETH_LEN + VLAN_LEN)
    else {
        return fail(m, DropReason::NoHeadroom);
    };
    let raw = p.raw_mut();
    let o = l3 + 4 * path.depth;
    impose(&mut raw[l3..o], &path.stack[..path.depth], 255);
    if e.cw {
        //= RFC 4385 §3: first nibble 0; flags, fragment bits and the
        // sequence number 0 (sequencing not used).
        raw[o..o + 4].fill(0);
    }
    c.encap_pkts.inc();
    c.encap_bytes.add(rx_len as u64);
    m.l3 = l3 as u16;
    m.ethertype = ETHERTYPE_MPLS;
    m.adj = path.adj;
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
    let (at, len) = match e.vlan {
        // A sub-interface: its tag goes back in front of the EtherType (into
        // the bytes the label and the control word held).
        Some(v) => {
            let to = at - VLAN_LEN;
            raw.copy_within(at..at + 12, to);
            raw[to + 12..to + 14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
            raw[to + 14..to + 16].copy_from_slice(&v.to_be_bytes());
            (to, len + VLAN_LEN)
        }
        None => (at, len),
    };
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
    m.hash = e.ac;
    m.path |= PW_OUT;
    m.next = Next::Ready;
}
