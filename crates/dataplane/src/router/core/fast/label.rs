//! The classify walk's runs of labelled packets: the label switch, with a swap or a
//! pop at the penultimate hop sent right away, a pop into IPv4 joining the LPM keys,
//! a pop into IPv6 joining the IPv6 keys, and a pseudowire's frame decapsulated.

use super::ip4::cut_padding;
use super::ip6::ip6_accept;
use super::*;

/// Where a [`Work::switch_run`] ended and what it counted.
struct SwitchRun {
    /// The first packet it did not take.
    end: usize,
    tx_pkts: u64,
    tx_bytes: u64,
    rx_bytes: u64,
}

/// Where a [`Work::pop_run`] ended, the keys taken so far, and the bytes received.
struct PopRun {
    end: usize,
    k: usize,
    rx_bytes: u64,
}

/// Bytes a pop run reads at once: Ethernet, one label and an IPv4 header without
/// options.
const POPPED_HEAD: usize = ETH_LEN + LABEL_LEN + 20;
/// The same with an IPv6 header under the label.
const POPPED_HEAD6: usize = ETH_LEN + LABEL_LEN + 40;

/// EtherType MPLS unicast, its two bytes at offset 12 read little-endian.
const ET_MPLS_LE: u32 = 0x4788;

impl Work {
    /// Notes what sFlow reads of switched packet `i`, sent through adjacency `adj`
    /// (slot `rs`): [`Next::Fast`] when `light_meta`, its adjacency and the
    /// ifIndex it left by.
    #[cold]
    #[inline(never)]
    fn note_switched(&mut self, i: usize, adj: u32, rs: usize, light_meta: bool) {
        if light_meta {
            self.meta[i].next = Next::Fast(true);
        }
        self.obs.fast_adj[i & (BURST - 1)] = adj;
        self.obs.txs[i & (BURST - 1)] = tx_ifindex(&self.rw[rs & (RW_CACHE - 1)]);
    }

    /// Key packet `i` (`p`) had the label behind its L2 header popped: its
    /// window moves past the label (the forward walk sends it as an IPv4 frame
    /// received so; the classify walk saw the IPv4 header in the frame, and
    /// [`Work::ip4_resume`] moves it back), ends at `frame` (the L2 header and
    /// the IPv4 total length: Ethernet padding cut) and is marked popped.
    #[inline(always)]
    fn popped_key<P: Packet>(&mut self, p: &mut P, i: usize, frame: usize) {
        pop_window(p, i, frame, &mut self.padded);
        self.popped[(i >> 6) & 3] |= 1 << (i & 63);
    }

    /// Packet `p` (packet `i`), popped into IPv6 with destination `d`, becomes
    /// IPv6 key `j`: its window moves past the label, and it is marked popped.
    #[inline(always)]
    fn popped_key6<P: Packet>(&mut self, p: &mut P, i: usize, j: usize, d: u128) {
        self.keys6[j & (BURST - 1)] = d;
        self.sel6[j & (BURST - 1)] = i as u16;
        // (cannot fail: the frame holds the label)
        let _ = p.drop_front(LABEL_LEN);
        self.popped[(i >> 6) & 3] |= 1 << (i & 63);
    }

    /// The classify walk's run of labelled packets from `pkts[i0]` on: untagged
    /// frames on `c.rxif`'s port to its MAC with EtherType MPLS, switched
    /// ([`mpls::LabelGuard::switch`]). A swap or PHP gets its L2 header and leaves
    /// in the same walk (or resumes in the general rewrite: incomplete adjacency,
    /// interface down, no headroom, MTU); a pop into IPv4 checks the inner header
    /// and joins the IPv4 keys (or resumes in the general IPv4 stage); any other
    /// decision leaves the packet untouched for the general path. Returns where
    /// the run ends.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn mpls_run<'g, P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        i0: usize,
        n: usize,
        c: &mut Cls<'g>,
        labels: &'g mpls::LabelReader,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        let (rxif, vt) = (c.rxif, c.vt);
        let n = n.min(pkts.len());
        // (the label table is pinned once, at the first labelled packet)
        if !pkts.get_mut(i0).filter(|_| i0 < n).is_some_and(is_mpls) {
            return i0;
        }
        let g = c.guard.get_or_insert_with(|| labels.pin());
        let (mut k, mut sent, mut n_slow) = (c.k, c.sent, c.n_slow);
        let n_slow0 = n_slow;
        let (mut pt, mut k2) = (c.pt, c.k2);
        // (the packets the switch took are those of the run not left for the
        // general path: counted at the end)
        let (mut bytes, mut i) = (0u64, i0);
        let notes = hb.light_meta | self.obs.tx_ifs;
        // (the swaps and PHPs that follow one to the same adjacency go out in
        // `switch_run`, which keeps no sFlow notes or stacks)
        let switch_runs = !notes && !self.obs.keep_stacks;
        // The adjacency of the last packet switched, its slot, and what was sent
        // through it since (added to its counters when another one comes, and at
        // the end: one label's packets mostly leave by one adjacency, and a
        // read-modify-write of its counters per packet is a store-to-load chain).
        let mut last = (u32::MAX, 0usize);
        let (mut tx_pkts, mut tx_bytes) = (0u64, 0u64);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let (start, len) = p.window();
            let end = start + len;
            let Some((frame, top)) = labelled(p, &rxif) else {
                break;
            };
            let l3 = start + ETH_LEN;
            self.keep_stack(i, frame, l3);
            let mut off = l3;
            let t = g.top(top);
            if t.pops_into_ip4(top) {
                // Popped: on into the IPv4 batch, or the general IPv4 stage (the
                // frame has changed: resume there); not IPv4 below: untouched,
                // for the general path to drop.
                match g
                    .pop_into_ip4(frame, &mut off, top, t)
                    .map(|t| mpls::lookup_table(t, rxif.table))
                {
                    Ok(table) => match popped_ip4(frame, off) {
                        Some((d, fl)) if table == vt => {
                            self.keys[k & (BURST - 1)] = d;
                            self.sel[k & (BURST - 1)] = i as u16;
                            k += 1;
                            self.popped_key(p, i, fl);
                            if !self.obs.keep_stacks {
                                // (the same label's pops that follow)
                                bytes += len as u64;
                                let r = self.pop_run(pkts, i + 1, n, rxif, g, (top, t), k, hb);
                                (i, k) = (r.end, r.k);
                                bytes += r.rx_bytes;
                                continue;
                            }
                        }
                        Some((d, fl)) if pt.is_none_or(|t| t == table) => {
                            pt = Some(table);
                            self.push_key2(k2, d, i);
                            k2 += 1;
                            self.popped_key(p, i, fl);
                        }
                        _ => self.ip4_resume_at(i, off, end, rxif.ifindex, table, true, hb),
                    },
                    Err(_) => {
                        n_slow = self.leave(i, n_slow);
                        i += 1;
                        continue;
                    }
                }
                bytes += len as u64;
                i += 1;
                continue;
            }
            if t.pops_into_ip6(top) {
                // Popped (6PE, 6VPE, label 2): on into the IPv6 batch when it
                // looks up in the vector's table and the header is plain, else
                // the general IPv6 stage; not IPv6 below: untouched, for the
                // general path to drop.
                if g.pop_ip6(frame, &mut off, top, t).is_err() {
                    n_slow = self.leave(i, n_slow);
                    i += 1;
                    continue;
                }
                let table = mpls::lookup_table(t.lookup_table(), rxif.table);
                match popped_ip6(frame, off, end) {
                    Some(d) if table == vt && rxif.v4 => {
                        self.popped_key6(p, i, c.k6, d);
                        c.k6 += 1;
                        if !self.obs.keep_stacks {
                            // (the same label's pops that follow)
                            bytes += len as u64;
                            let r = self.pop_run6(pkts, i + 1, n, rxif, g, (top, t), c.k6, hb);
                            (i, c.k6) = (r.end, r.k);
                            bytes += r.rx_bytes;
                            continue;
                        }
                    }
                    Some(d) if rxif.v4 && c.pt6.is_none_or(|t| t == table) => {
                        // (into another table: the second IPv6 batch)
                        c.pt6 = Some(table);
                        self.popped_key6(p, i, BURST - 1 - c.k26, d);
                        c.k26 += 1;
                    }
                    _ => self.ip6_resume_at(i, off, end, rxif.ifindex, table, hb),
                }
                bytes += len as u64;
                i += 1;
                continue;
            }
            let (adj, et) = match g.switch_top(frame, &mut off, top, t) {
                mpls::MplsDecision::Forward { adj } => (adj, ETHERTYPE_MPLS),
                mpls::MplsDecision::Php { adj } => (adj, ETHERTYPE_IPV4),
                mpls::MplsDecision::Php6 { adj } => (adj, ETHERTYPE_IPV6),
                // A pop into a lookup by the payload's version: on in the general
                // lookup stage of its family, popped.
                mpls::MplsDecision::Ip4Lookup { table } => {
                    let table = mpls::lookup_table(table, rxif.table);
                    self.ip4_resume_at(i, off, end, rxif.ifindex, table, true, hb);
                    bytes += len as u64;
                    i += 1;
                    continue;
                }
                mpls::MplsDecision::Ip6Lookup { table } => {
                    let table = mpls::lookup_table(table, rxif.table);
                    self.ip6_resume_at(i, off, end, rxif.ifindex, table, hb);
                    bytes += len as u64;
                    i += 1;
                    continue;
                }
                mpls::MplsDecision::Xconnect { pw } => {
                    // A pseudowire's frame: out of its circuit from here.
                    let mut m = xc_meta(l3, end, rxif.ifindex);
                    pw::pw_decap(&self.stats, p, &mut m, pw, off, hb.ift);
                    match m.pw_circuit() {
                        Some(_) => self.xc_send(out, i, &m, notes),
                        // (dropped and counted: the general path frees it)
                        None => self.resume(i, m, hb),
                    }
                    bytes += len as u64;
                    i += 1;
                    continue;
                }
                // Left untouched: the general path does it all again (a pop into
                // IPv4 or IPv6 is taken above).
                _ => {
                    n_slow = self.leave(i, n_slow);
                    i += 1;
                    continue;
                }
            };
            let rs = if adj == last.0 {
                last.1
            } else {
                // (before the slot lookup: a slot taken over flushes its counters)
                sent += self.commit_tx(last.1, &mut tx_pkts, &mut tx_bytes);
                last = (adj, self.rw_slot(adj, hb.ift, hb.view));
                last.1
            };
            let rw = &self.rw[rs & (RW_CACHE - 1)];
            let put = put_l2_if_ok(frame, off, et, rw);
            let sent = put.is_some();
            match put {
                Some(w) => {
                    tx_pkts += 1;
                    tx_bytes += send_switched(p, start, w, out, i, rw);
                    self.note_switched_if(notes, i, adj, rs, hb.light_meta);
                }
                None => self.label_resume(i, off, end, et, adj, rxif.ifindex, hb),
            }
            bytes += len as u64;
            i += 1;
            if sent && switch_runs {
                let r = self.switch_run(pkts, out, i, n, rxif, g, last, hb);
                i = r.end;
                tx_pkts += r.tx_pkts;
                tx_bytes += r.tx_bytes;
                bytes += r.rx_bytes;
            }
        }
        sent += self.commit_tx(last.1, &mut tx_pkts, &mut tx_bytes);
        (c.k, c.sent, c.n_slow) = (k, sent, n_slow);
        (c.pt, c.k2) = (pt, k2);
        c.took_labelled((i - i0) - (n_slow - n_slow0), bytes);
        i
    }

    /// Keeps the label stack of packet `i` (`frame`, its payload at `l3`) for
    /// sFlow if it keeps stacks.
    #[inline(always)]
    fn keep_stack(&mut self, i: usize, frame: &[u8], l3: usize) {
        if self.obs.keep_stacks {
            // (out of line: the stacks' address is not kept per packet)
            sflow_hook::keep_stack_of(&mut self.obs.stacks, i, frame, l3);
        }
    }

    /// Sends pseudowire frame `i` (its metadata `m`) out of its circuit as the
    /// general path sends a ready packet; `notes`: sFlow reads its metadata.
    #[inline(always)]
    fn xc_send(&mut self, out: &mut [Out], i: usize, m: &Meta, notes: bool) {
        let o = self.ready_out(i, m);
        if let Some(slot) = out.get_mut(i) {
            *slot = o;
        }
        if notes {
            // (sFlow reads its metadata, as the general path leaves it)
            self.meta[i & (BURST - 1)] = *m;
        }
    }

    /// [`Work::note_switched`] if `notes`.
    #[inline(always)]
    fn note_switched_if(&mut self, notes: bool, i: usize, adj: u32, rs: usize, light_meta: bool) {
        if notes {
            self.note_switched(i, adj, rs, light_meta);
        }
    }

    /// Leaves packet `i` untouched for the general path, the one after the
    /// `n_slow` left so far; returns how many are left now.
    #[inline(always)]
    fn leave(&mut self, i: usize, n_slow: usize) -> usize {
        self.slow[n_slow & (BURST - 1)] = i as u16;
        n_slow + 1
    }

    /// Makes `d`, the destination of packet `i`, key `k2` of the second batch
    /// (see `Cls::pt`), kept from the top of the key arrays down.
    #[inline(always)]
    fn push_key2(&mut self, k2: usize, d: u32, i: usize) {
        let j = (BURST - 1 - k2) & (BURST - 1);
        self.keys[j] = d;
        self.sel[j] = i as u16;
    }

    /// Adds `tx_pkts` packets of `tx_bytes` bytes to what adjacency cache slot
    /// `rs` sent in this vector and zeroes them; returns the packets.
    #[inline(always)]
    fn commit_tx(&mut self, rs: usize, tx_pkts: &mut u64, tx_bytes: &mut u64) -> usize {
        self.add_tx(rs, *tx_pkts, *tx_bytes);
        let pkts = *tx_pkts as usize;
        (*tx_pkts, *tx_bytes) = (0, 0);
        pkts
    }

    /// The swaps and PHPs that follow one [`Work::mpls_run`] sent, from `pkts[i0]`
    /// on: packets of the run whose top entry is swapped for one label or popped
    /// at the penultimate hop ([`mpls::LabelGuard::switch_one_to`]) leaving by the
    /// same adjacency `adj` (slot `rs` of the adjacency cache) go out here, each as
    /// `mpls_run` would send it, in a loop that keeps few values (in `mpls_run`'s,
    /// a swap spilled a dozen). Any other packet ends the run untouched, for
    /// `mpls_run`.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn switch_run<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        i0: usize,
        n: usize,
        rxif: RxIf,
        g: &mpls::LabelGuard<'_>,
        (adj, rs): (u32, usize),
        hb: &mut Handback<'_, '_>,
    ) -> SwitchRun {
        let n = n.min(pkts.len());
        let (mut i, mut tx_pkts, mut tx_bytes, mut rx_bytes) = (i0, 0u64, 0u64, 0u64);
        // (a copy: the loop's writes to packets cannot change it, so it is not
        // read again per packet; its counters are added by the caller)
        let rw = self.rw[rs & (RW_CACHE - 1)];
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let (start, len) = p.window();
            let end = start + len;
            let Some((frame, top)) = labelled(p, &rxif) else {
                break;
            };
            let mut off = start + ETH_LEN;
            let Some(php) = g.switch_one_to(frame, &mut off, top, g.top(top), adj) else {
                break;
            };
            // (from here on as `mpls_run` sends a swap or a PHP)
            let et = if php { ETHERTYPE_IPV4 } else { ETHERTYPE_MPLS };
            let put = if rw.ok {
                put_l2_in(frame, off, et, &rw)
            } else {
                None
            };
            match put {
                Some(w) => {
                    tx_pkts += 1;
                    tx_bytes += send_switched(p, start, w, out, i, &rw);
                }
                None => self.label_resume(i, off, end, et, adj, rxif.ifindex, hb),
            }
            rx_bytes += len as u64;
            i += 1;
        }
        SwitchRun {
            end: i,
            tx_pkts,
            tx_bytes,
            rx_bytes,
        }
    }

    /// The pops into IPv4 that follow one [`Work::mpls_run`] added to the keys of
    /// the vector's table, from `pkts[i0]` on: packets of the run with the same
    /// top label (and S bit) as `top`, whose entry `t` pops into that table, join
    /// the keys here as `mpls_run` adds them, in a loop that keeps few values. Any
    /// other packet ends the run untouched, for `mpls_run`. A packet that joins the
    /// keys has its window moved past the label (the forward walk sends it as an
    /// IPv4 frame received so), and the run's packets are marked `popped`.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn pop_run<P: Packet>(
        &mut self,
        pkts: &mut [P],
        i0: usize,
        n: usize,
        rxif: RxIf,
        g: &mpls::LabelGuard<'_>,
        (top0, t): (u32, mpls::Top<'_>),
        k0: usize,
        hb: &mut Handback<'_, '_>,
    ) -> PopRun {
        let n = n.min(pkts.len());
        let (mut i, mut k, mut rx_bytes) = (i0, k0, 0u64);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let (start, len) = p.window();
            let end = start + len;
            // (the frame's own window, offsets from its start: a pop writes
            // nothing in front of it, and an mbuf's window needs no bounds check)
            let frame = p.data_mut();
            // (one length check for the L2 header, the label and the IPv4 header
            // under it; a header with options or another version ends the run,
            // and so does a total length other than the frame's: Ethernet
            // padding, for `mpls_run` to cut, or a bad length)
            if frame.first_chunk::<POPPED_HEAD>().is_none_or(|h| {
                (h[POPPED_HEAD - 20] != 0x45)
                    | (POPPED_HEAD - 20 + usize::from(rd16(h, POPPED_HEAD - 18)) != len)
            }) {
                break;
            }
            let Some(top) = label_top(frame, &rxif) else {
                break;
            };
            // (label and S bit: the same entry)
            if (top ^ top0) & 0xffff_f100 != 0 || !t.pops_into_ip4(top) {
                break;
            }
            let mut off = ETH_LEN;
            // (the table is read only for a packet handed back)
            let Ok(()) = g.pop_ip4(frame, &mut off, top, t) else {
                // (untouched: `mpls_run` leaves it to the general path)
                break;
            };
            // (from here on as `mpls_run` takes a pop)
            // (0x45 and the total length seen above, where the pop left `off`)
            let accepted = frame
                .get(off..)
                .and_then(|ip| ip4_accept_sized(ip.first_chunk::<20>()?, false, &self.martian));
            let l3 = start + off;
            match accepted {
                Some(d) => {
                    self.keys[k & (BURST - 1)] = d;
                    self.sel[k & (BURST - 1)] = i as u16;
                    k += 1;
                    // (as `popped_key`, nothing to cut; the run's range is
                    // marked at the end)
                    let _ = p.drop_front(LABEL_LEN);
                }
                None => {
                    let table = mpls::lookup_table(t.lookup_table(), rxif.table);
                    self.ip4_resume_at(i, l3, end, rxif.ifindex, table, true, hb)
                }
            }
            rx_bytes += len as u64;
            i += 1;
        }
        mark_range(&mut self.popped, i0, i);
        PopRun {
            end: i,
            k,
            rx_bytes,
        }
    }

    /// The pops into IPv6 that follow one [`Work::mpls_run`] added to the IPv6
    /// keys of the vector's table, from `pkts[i0]` on, as [`Work::pop_run`] takes
    /// those into IPv4: packets with the same top label (and S bit) as `top`,
    /// a plain IPv6 header under it (see `ip6.rs`) and a payload length that ends
    /// at the frame's end join the IPv6 keys (`k0` of them so far); a packet the
    /// pop leaves otherwise resumes in the general IPv6 stage; any other packet
    /// ends the run untouched, for `mpls_run`.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn pop_run6<P: Packet>(
        &mut self,
        pkts: &mut [P],
        i0: usize,
        n: usize,
        rxif: RxIf,
        g: &mpls::LabelGuard<'_>,
        (top0, t): (u32, mpls::Top<'_>),
        k0: usize,
        hb: &mut Handback<'_, '_>,
    ) -> PopRun {
        const V6: usize = POPPED_HEAD6 - 40;
        let n = n.min(pkts.len());
        let (mut i, mut k, mut rx_bytes) = (i0, k0, 0u64);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let (start, len) = p.window();
            let end = start + len;
            let frame = p.data_mut();
            // (one length check for the L2 header, the label and the IPv6
            // header under it; another version or a payload length other than
            // the frame's ends the run)
            if frame.first_chunk::<POPPED_HEAD6>().is_none_or(|h| {
                (h[V6] >> 4 != 6) | (POPPED_HEAD6 + usize::from(rd16(h, V6 + 4)) != len)
            }) {
                break;
            }
            let Some(top) = label_top(frame, &rxif) else {
                break;
            };
            // (label and S bit: the same entry)
            if (top ^ top0) & 0xffff_f100 != 0 || !t.pops_into_ip6(top) {
                break;
            }
            let mut off = ETH_LEN;
            let Ok(()) = g.pop_ip6(frame, &mut off, top, t) else {
                // (untouched: `mpls_run` leaves it to the general path)
                break;
            };
            // (from here on as `mpls_run` takes a pop into IPv6)
            let accepted = frame
                .get(off..)
                .and_then(|ip| ip6_accept(ip.first_chunk::<40>()?));
            match accepted {
                Some(d) => {
                    self.keys6[k & (BURST - 1)] = d;
                    self.sel6[k & (BURST - 1)] = i as u16;
                    k += 1;
                    let _ = p.drop_front(LABEL_LEN);
                }
                None => {
                    let table = mpls::lookup_table(t.lookup_table(), rxif.table);
                    self.ip6_resume_at(i, start + off, end, rxif.ifindex, table, hb)
                }
            }
            rx_bytes += len as u64;
            i += 1;
        }
        mark_range(&mut self.popped, i0, i);
        PopRun {
            end: i,
            k,
            rx_bytes,
        }
    }

    /// Hands packet `i`, popped into IPv6 (its header at `l3`, its frame as
    /// received ending at `end`, received on `rx_if`), to the general IPv6
    /// stage of routing table `t`.
    #[cold]
    #[inline(never)]
    fn ip6_resume_at(
        &mut self,
        i: usize,
        l3: usize,
        end: usize,
        rx_if: u16,
        t: u32,
        hb: &mut Handback<'_, '_>,
    ) {
        let m = Meta {
            next: Next::Ip6Lookup,
            l3: l3 as u16,
            end: end as u16,
            rx_if,
            table: t,
            path: ETH | MPLS,
            ..Meta::default()
        };
        self.resume(i, m, hb);
    }

    /// Hands switched packet `i` (the payload of its new L2 header at `l3`, with
    /// EtherType `et`, for adjacency `adj`; its frame as received ended at `end`;
    /// received on `rx_if`) to the general rewrite.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn label_resume(
        &mut self,
        i: usize,
        l3: usize,
        end: usize,
        et: u16,
        adj: u32,
        rx_if: u16,
        hb: &mut Handback<'_, '_>,
    ) {
        let m = Meta {
            next: Next::Rewrite,
            l3: l3 as u16,
            end: end as u16,
            rx_if,
            ethertype: et,
            table: hb.vt,
            adj,
            path: ETH | MPLS,
            ..Meta::default()
        };
        self.resume(i, m, hb);
    }
}

/// The metadata of a pseudowire's frame (its payload at `l3` up to `end`,
/// received on `rx_if`) as it leaves the label switch.
#[inline(always)]
fn xc_meta(l3: usize, end: usize, rx_if: u16) -> Meta {
    Meta {
        l3: l3 as u16,
        end: end as u16,
        rx_if,
        path: ETH | MPLS,
        ..Meta::default()
    }
}

/// Whether frame `p` has EtherType MPLS unicast (untagged). (`#[inline]`:
/// with `#[inline(always)]` the label run's loop compiles differently.)
#[inline]
fn is_mpls<P: Packet>(p: &mut P) -> bool {
    let (start, _) = p.window();
    p.raw_mut().get(start + 12..start + 14) == Some(&[0x88, 0x47][..])
}

/// The destination of the IPv4 header at `off` in `frame` (where a pop into
/// IPv4 left it), if [`ip4_accept`] takes it, and the frame's length by the
/// header's total length (the L2 header and the IPv4 packet).
#[inline(always)]
fn popped_ip4(frame: &[u8], off: usize) -> Option<(u32, usize)> {
    frame.get(off..).and_then(|ip| {
        let h = ip.first_chunk::<20>()?;
        Some((
            ip4_accept(h, ip.len(), false)?,
            ETH_LEN + usize::from(rd16(h, 2)),
        ))
    })
}

/// The destination of the IPv6 header at `off` in `frame` (where a pop into
/// IPv6 left it), if the fast path's IPv6 test takes it and the packet ends
/// exactly at `end`, the frame's end (Ethernet padding is the general path's).
#[inline(always)]
fn popped_ip6(frame: &[u8], off: usize, end: usize) -> Option<u128> {
    let ip = frame.get(off..)?.first_chunk::<40>()?;
    (off + 40 + usize::from(rd16(ip, 4)) == end)
        .then(|| ip6_accept(ip))
        .flatten()
}

/// [`put_l2_in`] through adjacency cache entry `rw` if it is usable.
#[inline(always)]
fn put_l2_if_ok(frame: &mut [u8], off: usize, et: u16, rw: &Rw) -> Option<(usize, usize)> {
    if rw.ok {
        put_l2_in(frame, off, et, rw)
    } else {
        None
    }
}

/// The frame of packet `p` up to its end, and its top label stack entry (host
/// order), if it is one the label runs take: at least [`HEAD`] bytes, untagged, to
/// `rxif`'s MAC, EtherType MPLS.
#[inline(always)]
fn labelled<'p, P: Packet>(p: &'p mut P, rxif: &RxIf) -> Option<(&'p mut [u8], u32)> {
    let (start, len) = p.window();
    let frame = p.raw_mut().get_mut(..start + len)?;
    let top = label_top(frame.get(start..)?, rxif)?;
    Some((frame, top))
}

/// The top label stack entry (host order) of frame `f` (starting at its L2
/// header), if [`labelled`] takes it.
#[inline(always)]
fn label_top(f: &[u8], rxif: &RxIf) -> Option<u32> {
    let hd = f.first_chunk::<HEAD>()?;
    let et = u32::from(u16::from_le_bytes([hd[12], hd[13]]));
    if (mac_key(hd) != rxif.mac) | (et != ET_MPLS_LE) {
        return None;
    }
    Some(u32::from_be_bytes([hd[14], hd[15], hd[16], hd[17]]))
}

/// Sends switched packet `i` (`p`, its frame at `start` as received) through
/// adjacency cache entry `rw` once [`put_l2_in`] wrote its L2 header: the window
/// moves to `(s, l)` when the frame now starts elsewhere (a pop or a tagged link;
/// it stays within the frame as received, so this cannot fail), and the output is
/// the adjacency's. Returns the bytes it leaves with.
#[inline(always)]
fn send_switched<P: Packet>(
    p: &mut P,
    start: usize,
    (s, l): (usize, usize),
    out: &mut [Out],
    i: usize,
    rw: &Rw,
) -> u64 {
    if s != start {
        let _ = p.set_window(s, l);
    }
    if let Some(o) = out.get_mut(i) {
        *o = rw.out;
    }
    l as u64
}

/// Moves popped key packet `p` (packet `i`)'s window past its label and ends it
/// at `frame` (the L2 header and the IPv4 total length, checked within the
/// frame), noting in `padded` a cut.
#[inline(always)]
fn pop_window<P: Packet>(p: &mut P, i: usize, frame: usize, padded: &mut Padded) {
    let received = p.window().1;
    // (cannot fail: the frame holds the label and the IPv4 header)
    let _ = p.drop_front(LABEL_LEN);
    if frame != p.window().1 {
        let _ = cut_padding(p, i, frame, received, padded);
    }
}

impl Cls<'_> {
    /// Counts what a label run took (the packets of the run not left for the
    /// general path): `taken` packets of `bytes` bytes received.
    #[inline(always)]
    fn took_labelled(&mut self, taken: usize, bytes: u64) {
        self.switched += taken;
        self.rx_pkts += taken as u64;
        self.rx_bytes += bytes;
    }
}
