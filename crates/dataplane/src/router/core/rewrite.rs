//! `rewrite`: the L2 header of the adjacency and the output port.
//!
//! Adjacencies are decoded once per FIB version and interface table into a
//! small cache ([`Rw`]) holding the header ready to copy; the common case copies
//! it in front of the packet and counts the packet on its slot. Stale or
//! incomplete adjacencies, interfaces down, missing headroom, and switched
//! packets over the next hop's MTU take [`Work::rewrite`].
//!
//! Next: tx on a port, `local` work inline (ARP request for an incomplete
//! adjacency, "fragmentation needed" for a labelled packet too big), punt,
//! drop. Counters: tx packets and bytes per interface; drops
//! `stale_adjacency`, `interface_down`, `no_headroom`, `mpls_mtu_exceeded`.

use super::*;

impl Work {
    /// rewrite over `self.slow[..n_slow]`: `out[i]` for each packet; returns how
    /// many it wrote an adjacency's header for.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)]
    pub(super) fn rewrite_node<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        n_slow: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) -> usize {
        let mut n_rw = 0usize;
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            // The common case reads the fields it needs in place: copying the
            // metadata out, changing a field and copying it back costs a
            // store-forwarding stall per packet (narrow stores, wide reloads).
            if matches!(self.meta[i].next, Next::Rewrite) {
                n_rw += 1;
                self.meta[i].path |= 1 << Stage::Rewrite as u8;
                let slot = self.rw_slot(self.meta[i].adj, ift, view);
                let rw = &self.rw[slot];
                let m = &self.meta[i];
                let fast = if rw.ok {
                    let (l3, end) = (usize::from(m.l3), usize::from(m.end));
                    put_l2(&mut pkts[i], l3, m.ethertype, end, rw)
                } else {
                    None
                };
                if let Some(len) = fast {
                    out[i] = count_tx(&mut self.rw[slot], len);
                    if self.obs.tx_ifs && transit_meta(&self.meta[i]) {
                        self.obs.txs[i] = tx_ifindex(&self.rw[slot]);
                    }
                    continue;
                }
            }
            let mut m = self.meta[i];
            out[i] = match m.next {
                // Stale, down, unresolved, no headroom: the general path.
                Next::Rewrite => match self.rewrite(&mut pkts[i], i, &mut m, ift, view) {
                    Some(port) => {
                        if self.obs.tx_ifs && m.next == Next::Rewrite && transit_meta(&m) {
                            // (the loop above put this adjacency in its slot)
                            self.obs.txs[i] = tx_ifindex(&self.rw[rw_index(m.adj)]);
                        }
                        Out::Tx(port)
                    }
                    None => Out::Drop,
                },
                Next::Ready => self.ready_out(i, &m),
                Next::Punt(r) => {
                    self.stats.punts[r as usize].inc();
                    let (s, _) = pkts[i].window();
                    let _ = pkts[i].set_window(s, usize::from(m.end).saturating_sub(s));
                    Out::Punt(r, m.rx_if)
                }
                _ => Out::Drop,
            };
            self.meta[i] = m;
        }
        for k in 0..RW_CACHE {
            self.flush_tx(k);
        }
        n_rw
    }

    /// Where packet `i`, ready with metadata `m`, leaves: port `m.adj`; out of a
    /// pseudowire, its circuit is noted for tx sampling.
    #[inline(always)]
    pub(super) fn ready_out(&mut self, i: usize, m: &Meta) -> Out {
        if let Some(ac) = m.pw_circuit().filter(|_| self.obs.tx_ifs) {
            self.obs.txs[i & (BURST - 1)] = ac as u8;
        }
        Out::Tx(m.adj as u16)
    }

    /// Adds the packets a cache entry sent to its interface's tx counters (the fast
    /// rewrite counts in the entry: a vector leaves on a few interfaces, in any
    /// order).
    pub(super) fn flush_tx(&mut self, slot: usize) {
        let e = &mut self.rw[slot];
        if e.tx_pkts > 0 {
            if let Some(c) = self.stats.ifaces.get(e.ifindex as usize) {
                c.tx_pkts.add(e.tx_pkts);
                c.tx_bytes.add(e.tx_bytes);
            }
            e.tx_pkts = 0;
            e.tx_bytes = 0;
        }
    }

    /// The cache slot holding adjacency `adj` as decoded (see
    /// [`Rw`]).
    #[inline(always)]
    pub(super) fn rw_slot(&mut self, adj: u32, ift: &IfTable, view: &fib::FibView<'_>) -> usize {
        let slot = rw_index(adj);
        let key = self.rw[slot].key;
        if key != adj.wrapping_add(1) || key == 0 {
            if key != 0 {
                // Taken over: the fast path's decoded results that name this
                // slot would be stale (they are decoded again).
                self.fd_invalidate();
            }
            self.flush_tx(slot);
            self.rw[slot] = rw_decode(adj, ift, view);
        }
        slot
    }

    /// rewrite for one packet: the adjacency's header; returns the output port.
    #[inline(always)]
    pub(super) fn rewrite<P: Packet>(
        &mut self,
        p: &mut P,
        i: usize,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) -> Option<u16> {
        let Some(adj) = view.adjacency(m.adj) else {
            self.drop(m, DropReason::StaleAdjacency);
            return None;
        };
        let Some(ifc) = ift.get(adj.ifindex).filter(|i| i.up) else {
            self.drop(m, DropReason::InterfaceDown);
            return None;
        };
        if !adj.complete {
            // Labelled paths (MPLS swap/PHP) whose neighbour is not resolved yet: this
            // packet becomes the ARP request (rate-limited), like the IPv4 path.
            let Some(nbr) = adj.neighbor else {
                self.drop(m, DropReason::NeighborIncomplete);
                return None;
            };
            let held = self.hold(p, m, adj.ifindex, u32::from(nbr));
            self.resolve(m, adj.ifindex, u32::from(nbr), held);
            if let (Next::Local, LocalJob::Resolve(ix, ip)) = (m.next, m.local) {
                self.arp_request(p, m, ift, ix, ip);
            }
            return (m.next == Next::Ready).then_some(m.adj as u16);
        }
        // A switched packet (swap, PHP) too big for the link: IPv4 packets were
        // checked at ip4-lookup, labelled ones are checked here.
        let switched = m.path & (1 << Stage::MplsLookup as u8) != 0;
        if switched && usize::from(m.end) - usize::from(m.l3) > usize::from(adj.mtu) {
            self.lsp_too_big(p, i, m, ift, adj.mtu)?;
        }
        if self
            .l2_header(p, m, adj.dst_mac, adj.src_mac, adj.vlan.or(ifc.vlan))
            .is_none()
        {
            self.drop(m, DropReason::NoHeadroom);
            return None;
        }
        self.tx_count(ifc.ifindex, p);
        Some(ifc.port)
    }
}

/// Slots of the adjacency cache (a power of two).
pub(super) const RW_CACHE: usize = 16;

/// The slot of adjacency `adj` in the adjacency cache (`Work::rw`).
#[inline(always)]
pub(super) fn rw_index(adj: u32) -> usize {
    adj as usize & (RW_CACHE - 1)
}

/// An adjacency decoded for the IPv4 stage and the rewrite: what
/// `FibView::adjacency` and the interface table say about it, and the L2 header
/// ready to copy. Decoded once and kept from vector to vector while the FIB version
/// and the interface table stay (`Work::seen`), so the decode (four atomic loads,
/// MAC unpacking, the interface lookup) is paid once per change, not twice per
/// packet. The view's answer may change while a vector runs (the writer swings
/// adjacencies in place, then bumps the version); a cached entry is the answer of
/// one moment, as the FIB promises, both stages see the same one, and the next
/// vector after the bump decodes it again.
///
/// The two counters are apart (fields in this order): side by side, the
/// compiler adds to both with one vector add, five instructions per packet
/// sent where two scalar adds do.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub(super) struct Rw {
    /// Packets sent through it in this vector, not yet counted.
    pub(super) tx_pkts: u64,
    /// Adjacency id + 1; 0 marks an empty slot.
    pub(super) key: u32,
    /// Destination and source MAC, then for a tagged interface 0x8100 and the tag.
    pub(super) hdr: [u8; 16],
    pub(super) tagged: bool,
    /// Known, complete, and its interface exists and is up: the fast rewrite applies.
    pub(super) ok: bool,
    /// The FIB no longer knows the id.
    pub(super) stale: bool,
    pub(super) complete: bool,
    /// Where a packet sent through it goes: `Out::Tx` of its interface's port
    /// (stored whole: one store per packet).
    pub(super) out: Out,
    pub(super) mtu: u16,
    /// The longest untagged IPv4 frame it sends: the MTU and an Ethernet header
    /// (a plain forward's one test; saturated).
    pub(super) frame_max: u16,
    pub(super) ifindex: u32,
    /// Neighbour address to resolve (0: none known, use the destination).
    pub(super) nbr: u32,
    /// Bytes sent through it in this vector, not yet counted.
    pub(super) tx_bytes: u64,
}

/// Decodes adjacency `adj` for the adjacency cache.
#[inline(never)]
pub(super) fn rw_decode(adj: u32, ift: &IfTable, view: &fib::FibView<'_>) -> Rw {
    let mut e = Rw {
        key: adj.wrapping_add(1),
        ..Rw::default()
    };
    let Some(a) = view.adjacency(adj) else {
        e.stale = true;
        return e;
    };
    e.complete = a.complete;
    e.mtu = a.mtu;
    e.frame_max = a.mtu.saturating_add(ETH_LEN as u16);
    e.ifindex = a.ifindex;
    e.nbr = a.neighbor.map_or(0, u32::from);
    let Some(ifc) = ift.get(a.ifindex) else {
        return e;
    };
    e.out = Out::Tx(ifc.port);
    e.ok = ifc.up && a.complete;
    (e.hdr, e.tagged) = l2_hdr(a.dst_mac, a.src_mac, a.vlan.or(ifc.vlan));
    e
}

/// A packet forwarded through an adjacency: not dropped, and not one the router
/// answered or built (echo reply, ICMP error, ARP), which went through `local`.
#[inline(always)]
pub(super) fn transit_meta(m: &Meta) -> bool {
    m.reason.is_none() && m.path & (1 << Stage::Local as u8) == 0
}

/// The rewrite of the common case: copies the cached header of `rw` with EtherType `et` in
/// front of `l3` and sets the packet's window to the frame, which ends at `end`;
/// returns the frame length, or None (no headroom, or more than the link's MTU
/// from `l3` on: the general rewrite answers those).
#[inline(always)]
pub(super) fn put_l2<P: Packet>(
    p: &mut P,
    l3: usize,
    et: u16,
    end: usize,
    rw: &Rw,
) -> Option<usize> {
    let (start, len) = put_l2_in(p.raw_mut().get_mut(..end)?, l3, et, rw)?;
    p.set_window(start, len).then_some(len)
}

/// [`put_l2`] on `frame`, a packet's buffer up to the end of its frame: writes
/// the header and returns the frame's new start and length, for the caller to
/// set as the window (a frame whose header took the old one's place keeps it).
#[inline(always)]
pub(super) fn put_l2_in(frame: &mut [u8], l3: usize, et: u16, rw: &Rw) -> Option<(usize, usize)> {
    let end = frame.len();
    if end.checked_sub(l3)? > usize::from(rw.mtu) {
        return None;
    }
    let start = l3.checked_sub(ETH_LEN + VLAN_LEN * usize::from(rw.tagged))?;
    write_l2(frame, start, &rw.hdr, rw.tagged, et)?;
    Some((start, end - start))
}

/// The L2 header to `dst` from `src` on VLAN `vlan` (none: untagged) as
/// [`write_l2`] writes it: the MACs, then for a tagged link 0x8100 and the tag;
/// and whether it is tagged.
pub(super) fn l2_hdr(dst: [u8; 6], src: [u8; 6], vlan: Option<u16>) -> ([u8; 16], bool) {
    let mut hdr = [0u8; 16];
    hdr[..6].copy_from_slice(&dst);
    hdr[6..12].copy_from_slice(&src);
    if let Some(v) = vlan {
        wr16(&mut hdr, 12, ETHERTYPE_VLAN);
        wr16(&mut hdr, 14, v & 0x0fff);
    }
    (hdr, vlan.is_some())
}

/// Writes L2 header `hdr` (from [`l2_hdr`]; 14 bytes untagged, 18 `tagged`) with
/// EtherType `et` at `at` (fixed-size copies: a variable length would be a
/// `memcpy` call per packet). Every L2 header the router writes is written here.
#[inline(always)]
pub(super) fn write_l2(
    raw: &mut [u8],
    at: usize,
    hdr: &[u8; 16],
    tagged: bool,
    et: u16,
) -> Option<()> {
    let et = et.to_be_bytes();
    if tagged {
        let h = raw.get_mut(at..)?.first_chunk_mut::<18>()?;
        h[..16].copy_from_slice(hdr);
        h[16..].copy_from_slice(&et);
    } else {
        let h = raw.get_mut(at..)?.first_chunk_mut::<14>()?;
        h[..12].copy_from_slice(&hdr[..12]);
        h[12..].copy_from_slice(&et);
    }
    Some(())
}

/// The ifIndex a transit packet sent through `rw` leaves by, as `Work::txs` notes
/// it (ifIndex values are below [`crate::router::stats::MAX_IFACES`], 256).
#[inline(always)]
pub(super) fn tx_ifindex(rw: &Rw) -> u8 {
    const _: () = assert!(crate::router::stats::MAX_IFACES <= 256);
    rw.ifindex as u8
}

/// Counts a packet of `len` bytes sent through `rw`; where it goes.
#[inline(always)]
pub(super) fn count_tx(rw: &mut Rw, len: usize) -> Out {
    rw.tx_pkts += 1;
    rw.tx_bytes += len as u64;
    rw.out
}
