//! The fast path: plain routed IPv4 and plain label switching in two walks over the
//! vector.
//!
//! Most of a router's traffic is the same few cases: an untagged frame to our MAC
//! carrying IPv4 (a header without options that checks out, a TTL above 1) or one
//! label to swap, pop at the penultimate hop, or pop into an IPv4 lookup; and a
//! route with one path to a resolved neighbour (maybe with labels to push). For
//! those the general stages (`ethernet-input`, `mpls-lookup`, `ip4-lookup`,
//! `l2-rewrite`) walk the vector four or five times and keep per-packet metadata
//! between them. The fast path does it in two walks with the batched LPM between
//! them, the way DPDK's l3fwd does:
//!
//! 1. **classify**: Ethernet (our MAC, untagged) and then, by EtherType, the IPv4
//!    checks (version and IHL, lengths, checksum, TTL, martians) with the
//!    destination collected as an LPM key, or the label switch
//!    ([`mpls::LabelGuard::switch`]); a pop into IPv4 checks the inner header and
//!    joins the same batch. ARP, VLAN tags, options, broadcast, bad headers, label
//!    drops and punts go to the general path untouched.
//! 2. **lookup** the keys in one batch.
//! 3. **forward**: labelled packets get their L2 header; for IPv4, a per-vector
//!    cache says per FIB result whether it is a plain forward (a forward leg, a
//!    resolved adjacency on an up interface, at most [`FAST_LABELS`] labels) and
//!    holds the label stack entries ready to write (an ECMP result's leg is picked
//!    per packet by the flow hash the general stage uses, and decoded each time);
//!    per packet: MTU and headroom, TTL and checksum (RFC 1624), labels, the cached
//!    L2 header, the output port.
//!
//! A packet the fast path does not finish goes to the general stages: untouched
//! ones from the start, counters and all; ones it already changed (switched
//! labels) resume at `ip4-lookup` or `l2-rewrite` with their metadata filled in.
//! So every rare case (ICMP errors, ARP, local delivery, drops, incomplete
//! neighbours) keeps one implementation, and the fast path changes no packet's
//! fate: `tests/router_core.rs` runs random vectors through a core with it and one
//! without and compares every byte and counter.
//!
//! `show run` still shows the stages: the classify walk is counted as
//! `ethernet-input` (the label switch included; switched packets also count under
//! `mpls-lookup`), the lookup and forward walk as `ip4-lookup` (its rewrite
//! included), and the packets it finished also under `l2-rewrite`.

use super::*;

/// Labels a fast-path route may push (more go through the general path).
pub(super) const FAST_LABELS: usize = 4;

/// Slots of the per-vector FIB result cache (a power of two).
pub(super) const FWD_CACHE: usize = 16;

/// What one FIB result means for the fast path, decoded once per vector.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FwdDec {
    /// FIB result + 1; 0 marks an empty slot.
    key: u32,
    /// A plain forward the fast path can finish.
    ok: bool,
    /// Several buckets: each packet's leg is picked by its flow hash and decoded
    /// into the scratch entry (`fd[FWD_CACHE]`).
    ecmp: bool,
    /// Labels to push (implicit null excluded).
    push: u8,
    /// The adjacency.
    adj: u32,
    /// Label stack entries, top first, S bit on the last, TTL 0 (filled per packet).
    lse: [u32; FAST_LABELS],
}

/// Per-stage packets and cycles of one vector, committed once at its end (one call
/// per stage and vector, whichever path the packets took).
#[derive(Debug, Default)]
pub(super) struct StageAcc {
    pkts: [u64; Stage::COUNT],
    cycles: [u64; Stage::COUNT],
}

impl StageAcc {
    /// Adds `pkts` packets and the cycles since `t0` to stage `s`; returns now.
    #[inline(always)]
    pub(super) fn add(&mut self, s: Stage, pkts: usize, t0: u64) -> u64 {
        let t1 = tsc();
        self.pkts[s as usize] += pkts as u64;
        self.cycles[s as usize] += t1.wrapping_sub(t0);
        t1
    }

    /// Counts packets without cycles (work fused into another stage's walk).
    #[inline(always)]
    pub(super) fn count(&mut self, s: Stage, pkts: usize) {
        self.pkts[s as usize] += pkts as u64;
    }

    pub(super) fn commit(&self, stats: &WorkerStats) {
        for (k, c) in stats.stages.iter().enumerate() {
            if self.pkts[k] > 0 {
                c.calls.inc();
                c.pkts.add(self.pkts[k]);
                c.cycles.add(self.cycles[k]);
            }
        }
    }
}

/// The receiving interface as the fast path needs it.
#[derive(Clone, Copy)]
struct RxIf {
    port: u16,
    /// Untagged interface of the port exists and is up.
    ok: bool,
    ifindex: u16,
    table: u32,
    /// Its MAC in the low 48 bits of a little-endian load.
    mac: u64,
}

impl RxIf {
    fn of(port: u16, ift: &IfTable) -> RxIf {
        match ift.rx_iface(port, None).filter(|i| i.up) {
            Some(i) => {
                let mut b = [0u8; 8];
                b[..6].copy_from_slice(&i.mac);
                RxIf {
                    port,
                    ok: true,
                    ifindex: i.ifindex as u16,
                    table: i.table,
                    mac: u64::from_le_bytes(b),
                }
            }
            None => RxIf {
                port,
                ok: false,
                ifindex: 0,
                table: 0,
                mac: 0,
            },
        }
    }
}

const MAC_MASK: u64 = 0xffff_ffff_ffff;

/// Ethernet checks of the fast path: addressed to `mac` (unicast), untagged; returns
/// the EtherType.
#[inline(always)]
fn l2_check(f: &[u8], mac: u64) -> Option<u16> {
    let h = f.first_chunk::<14>()?;
    let w64 = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    (w64 & MAC_MASK == mac).then(|| rd16(h, 12))
}

/// First octets a forwarded destination may not have: 0/8, 127/8, 224/4 and up
/// (RFC 1812 §5.3.7; multicast is not routed here).
const BAD_DST: [u64; 4] = [1, 1 << 63, 0, 0xffff_ffff_0000_0000];
/// First octets a forwarded source may not have: 127/8, 224/4 (multicast).
const BAD_SRC: [u64; 4] = [0, 1 << 63, 0, 0x0000_ffff_0000_0000];

#[inline(always)]
fn octet_in(set: &[u64; 4], a: u32) -> bool {
    let o = (a >> 24) as usize;
    set[o >> 6] >> (o & 63) & 1 != 0
}

/// IPv4 checks of the fast path on the header at the front of `ip` (the rest of the
/// frame): version 4 without options, total length within the frame, TTL above 1,
/// checksum, no martian or multicast address. Returns the destination; `None` for
/// anything the general path must see (including every malformed header).
#[inline(always)]
fn ip4_check_fast(ip: &[u8]) -> Option<u32> {
    let h = ip.first_chunk::<20>()?;
    let total = usize::from(rd16(h, 2));
    // (`|`: one branch for the common checks)
    if (h[0] != 0x45) | (total < 20) | (total > ip.len()) | (h[8] <= 1) {
        return None;
    }
    let w = |o: usize| u64::from(u32::from_be_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]));
    // Five words: two folds of the carries are enough (sum < 2^35).
    let s = w(0) + w(4) + w(8) + w(12) + w(16);
    let s = (s & 0xffff_ffff) + (s >> 32);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    let src = rd32(h, 12);
    let dst = rd32(h, 16);
    if (s != 0xffff) | octet_in(&BAD_SRC, src) | octet_in(&BAD_DST, dst) {
        return None;
    }
    Some(dst)
}

/// A packet the fast path took: where it stands when it leaves the fast path.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Taken {
    l3: u16,
    end: u16,
    rx_if: u16,
    path: u8,
}

impl Work {
    /// Marks packet `i` to resume in the general stages with `m` (it went through
    /// part of the fast path, which may have changed it).
    #[inline(always)]
    fn resume(&mut self, i: usize, m: Meta, back: &mut [u16; BURST], n_back: &mut usize) {
        self.meta[i] = m;
        self.resumed[i >> 6] |= 1 << (i & 63);
        back[*n_back] = i as u16;
        *n_back += 1;
    }

    /// Whether packet `i` resumes in the general stages (see [`Work::resume`]).
    #[inline(always)]
    pub(super) fn is_resumed(&self, i: usize) -> bool {
        self.resumed[i >> 6] >> (i & 63) & 1 != 0
    }

    /// Runs the fast path over `pkts[..n]`; returns how many packets it left for
    /// the general path (their indices in `self.slow`, ascending). `need_meta`:
    /// fill the metadata of finished packets too (trace, sFlow).
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    #[inline(always)]
    pub(super) fn fast_ip4<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        n: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        labels: &mpls::LabelReader,
        need_meta: bool,
        acc: &mut StageAcc,
    ) -> usize {
        let t0 = tsc();
        self.resumed = [0; 4];
        let mut n_slow = 0usize;
        let mut k = 0usize;
        let mut rxif = RxIf {
            port: u16::MAX,
            ok: false,
            ifindex: 0,
            table: 0,
            mac: 0,
        };
        let mut table = None;
        let mut guard = None;
        // Labelled packets switched here: (packet, adjacency, ethertype).
        let mut lfw = [(0u16, 0u32, 0u16); BURST];
        let mut n_lfw = 0usize;
        let mut back = [0u16; BURST];
        let mut n_back = 0usize;
        let mut rx = Run::default();
        let (mut taken, mut switched) = (0usize, 0usize);
        const ETH: u8 = 1 << Stage::EthernetInput as u8;
        const MPLS: u8 = 1 << Stage::MplsLookup as u8;
        for i in 0..n {
            if let Some(p) = pkts.get(i + 2 * PREFETCH) {
                p.prefetch_meta();
            }
            if let Some(p) = pkts.get_mut(i + PREFETCH) {
                prefetch_data(p);
            }
            let p = &mut pkts[i];
            let port = p.port();
            if port != rxif.port {
                rxif = RxIf::of(port, ift);
            }
            let (start, len) = p.window();
            let contiguous = p.is_contiguous();
            let raw = p.raw_mut();
            let end = start + len;
            let et = match raw.get(start..end) {
                Some(f) if rxif.ok && contiguous => l2_check(f, rxif.mac),
                _ => None,
            };
            let l3 = start + ETH_LEN;
            let base = Taken {
                l3: l3 as u16,
                end: end as u16,
                rx_if: rxif.ifindex,
                path: ETH,
            };
            let vt = *table.get_or_insert(rxif.table);
            match et {
                Some(ETHERTYPE_IPV4) if vt == rxif.table => {
                    if let Some(dst) = raw.get(l3..end).and_then(ip4_check_fast) {
                        self.keys[k] = dst;
                        self.sel[k] = i as u16;
                        self.taken[k] = base;
                        k += 1;
                        taken += 1;
                        rx_add(&self.stats, &mut rx, usize::from(rxif.ifindex), len);
                        continue;
                    }
                }
                Some(ETHERTYPE_MPLS) => {
                    let g = guard.get_or_insert_with(|| labels.pin());
                    let frame = &mut raw[..end];
                    if self.keep_stacks {
                        sflow_hook::keep_stack(&mut self.stacks[i], frame, l3);
                    }
                    let mut off = l3;
                    let d = g.switch(frame, &mut off);
                    let at = Taken {
                        l3: off as u16,
                        path: ETH | MPLS,
                        ..base
                    };
                    let (adj, et) = match d {
                        mpls::MplsDecision::Forward { adj } => (adj, ETHERTYPE_MPLS),
                        mpls::MplsDecision::Php { adj } => (adj, ETHERTYPE_IPV4),
                        mpls::MplsDecision::Ip4Lookup { table: t } => {
                            // Popped: on into the IPv4 batch, or the general
                            // IPv4 stage (the frame has changed: resume there).
                            taken += 1;
                            switched += 1;
                            rx_add(&self.stats, &mut rx, usize::from(rxif.ifindex), len);
                            match frame.get(off..).and_then(ip4_check_fast) {
                                Some(dst) if t == vt => {
                                    self.keys[k] = dst;
                                    self.sel[k] = i as u16;
                                    self.taken[k] = at;
                                    k += 1;
                                }
                                _ => {
                                    let m = Meta {
                                        kind: Kind::Ip4,
                                        l3: at.l3,
                                        end: at.end,
                                        rx_if: at.rx_if,
                                        table: t,
                                        path: at.path,
                                        ..Meta::default()
                                    };
                                    self.resume(i, m, &mut back, &mut n_back);
                                }
                            }
                            continue;
                        }
                        // Left untouched: the general path does it all again.
                        _ => {
                            self.slow[n_slow] = i as u16;
                            n_slow += 1;
                            continue;
                        }
                    };
                    taken += 1;
                    switched += 1;
                    rx_add(&self.stats, &mut rx, usize::from(rxif.ifindex), len);
                    self.meta[i] = Meta {
                        kind: Kind::Rewrite,
                        l3: at.l3,
                        end: at.end,
                        rx_if: at.rx_if,
                        ethertype: et,
                        table: vt,
                        adj,
                        path: at.path,
                        ..Meta::default()
                    };
                    lfw[n_lfw] = (i as u16, adj, et);
                    n_lfw += 1;
                    continue;
                }
                _ => {}
            }
            self.slow[n_slow] = i as u16;
            n_slow += 1;
        }
        drop(guard);
        flush_rx(&self.stats, &rx);
        let t1 = acc.add(Stage::EthernetInput, taken, t0);
        acc.count(Stage::MplsLookup, switched);

        // Labelled packets: the L2 header, or the general rewrite (incomplete
        // adjacency, interface down, no headroom).
        let mut done = 0usize;
        for &(i, adj, _) in &lfw[..n_lfw] {
            let i = usize::from(i);
            let rs = self.rw_slot(adj, ift, view);
            let rw = &mut self.rw[rs];
            let m = &mut self.meta[i];
            let sent = if rw.ok {
                put_l2(&mut pkts[i], m, rw)
            } else {
                None
            };
            if let Some(len) = sent {
                rw.tx_pkts += 1;
                rw.tx_bytes += len as u64;
                out[i] = Out::Tx(rw.port);
                m.path |= 1 << Stage::Rewrite as u8;
                done += 1;
            } else {
                let m = *m;
                self.resume(i, m, &mut back, &mut n_back);
            }
        }

        let mut done_ip4 = 0usize;
        if k > 0 {
            view.lookup_burst(table.unwrap_or(0), &self.keys[..k], &mut self.fwd[..k]);
        }
        for j in 0..k {
            let i = usize::from(self.sel[j]);
            let f = self.fwd[j];
            let slot = f as usize & (FWD_CACHE - 1);
            if self.fd[slot].key != f.wrapping_add(1) {
                self.fwd_decode(slot, f, ift, view);
            }
            let tk = self.taken[j];
            let slot = if self.fd[slot].ecmp {
                // The leg of this flow (the general stage's hash: the NIC's, or
                // the 5-tuple's).
                let rss = pkts[i].rss_hash();
                let l3 = usize::from(tk.l3);
                let raw = pkts[i].raw_mut();
                let hash = if rss != 0 {
                    rss
                } else {
                    let total = raw.get(l3 + 2..l3 + 4).map_or(0, |b| rd16(b, 0));
                    raw.get(l3..l3 + usize::from(total)).map_or(0, flow_hash)
                };
                self.leg_decode(FWD_CACHE, view.leg(f, hash), ift, view);
                FWD_CACHE
            } else {
                slot
            };
            let (ok, adj, push) = (self.fd[slot].ok, self.fd[slot].adj, self.fd[slot].push);
            let mut sent = None;
            if ok {
                let rs = self.rw_slot(adj, ift, view);
                let rw = &mut self.rw[rs];
                let lse = &self.fd[slot].lse;
                if let Some(r) = forward(&mut pkts[i], usize::from(tk.l3), rw, push, lse) {
                    rw.tx_pkts += 1;
                    rw.tx_bytes += r.1 as u64;
                    out[i] = Out::Tx(rw.port);
                    sent = Some(r.0);
                }
            }
            let Some(l3) = sent else {
                // Untouched by the IPv4 part: the general IPv4 stage takes over.
                let m = Meta {
                    kind: Kind::Ip4,
                    l3: tk.l3,
                    end: tk.end,
                    rx_if: tk.rx_if,
                    table: table.unwrap_or(0),
                    path: tk.path,
                    ..Meta::default()
                };
                self.resume(i, m, &mut back, &mut n_back);
                continue;
            };
            done_ip4 += 1;
            if need_meta {
                // Only what the trace and the sFlow hook read of a forwarded
                // packet, field by field (a whole `Meta` per packet cost sFlow
                // 6-7 cycles per packet before it sampled anything).
                let m = &mut self.meta[i];
                m.kind = Kind::Rewrite;
                m.l3 = l3;
                m.rx_if = tk.rx_if;
                m.ethertype = if push > 0 {
                    ETHERTYPE_MPLS
                } else {
                    ETHERTYPE_IPV4
                };
                m.adj = adj;
                m.path = tk.path | 1 << Stage::Ip4Lookup as u8 | 1 << Stage::Rewrite as u8;
                m.reason = 0;
            }
        }
        acc.add(Stage::Ip4Lookup, done_ip4, t1);
        acc.count(Stage::Rewrite, done + done_ip4);
        if n_back > 0 {
            // Merge the two ascending index lists.
            back[..n_back].sort_unstable();
            let mut merged = [0u16; BURST];
            let (mut a, mut b, mut m) = (0, 0, 0);
            while a < n_slow || b < n_back {
                let take_a = b == n_back || (a < n_slow && self.slow[a] < back[b]);
                merged[m] = if take_a { self.slow[a] } else { back[b] };
                a += usize::from(take_a);
                b += usize::from(!take_a);
                m += 1;
            }
            self.slow[..m].copy_from_slice(&merged[..m]);
            n_slow = m;
        }
        n_slow
    }

    /// What FIB result `f` means for the fast path (see [`FwdDec`]).
    /// Written in place, field by field, with the widths the forward walk reads
    /// them with (a struct returned by value and reloaded wider stalls the load on
    /// store forwarding, for every packet when each one has its own route).
    #[inline(always)]
    fn fwd_decode(&mut self, slot: usize, f: u32, ift: &IfTable, view: &fib::FibView<'_>) {
        self.fd[slot].key = f.wrapping_add(1);
        self.fd[slot].ok = false;
        self.fd[slot].ecmp = view.bucket_count(f) != 1;
        if !self.fd[slot].ecmp {
            self.leg_decode(slot, view.leg(f, 0), ift, view);
        }
    }

    /// Decodes `leg` into entry `slot` (its `ok`, `push`, `lse`, `adj`).
    #[inline(always)]
    fn leg_decode(
        &mut self,
        slot: usize,
        leg: fib::Leg<'_>,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) {
        self.fd[slot].ok = false;
        if leg.action() != fib::Action::Forward {
            return;
        }
        let mut labels = [0u32; fib::MAX_LABELS];
        let nl = leg.labels_into(&mut labels);
        let mut push = 0usize;
        for &l in labels[..nl].iter().filter(|&&l| l != 3) {
            if push == FAST_LABELS {
                return;
            }
            self.fd[slot].lse[push] = l << 12;
            push += 1;
        }
        if push > 0 {
            self.fd[slot].lse[push - 1] |= 0x100;
        }
        let adj = leg.target();
        self.fd[slot].push = push as u8;
        self.fd[slot].adj = adj;
        let rs = self.rw_slot(adj, ift, view);
        self.fd[slot].ok = self.rw[rs].ok;
    }
}

/// Forwards one checked IPv4 packet (header at `l3`) through a plain-forward
/// decision: MTU and headroom, TTL and checksum, labels, L2 header. Returns the new
/// layer-3 offset and the frame length, or `None` with the packet untouched.
#[inline(always)]
fn forward<P: Packet>(
    p: &mut P,
    l3: usize,
    rw: &Rw,
    push: u8,
    lse: &[u32; FAST_LABELS],
) -> Option<(u16, usize)> {
    if !rw.ok {
        return None;
    }
    let (start, len) = p.window();
    let push = usize::from(push);
    let hl = if rw.tagged {
        ETH_LEN + VLAN_LEN
    } else {
        ETH_LEN
    };
    let raw = p.raw_mut();
    let total = usize::from(rd16(raw.get(l3..l3 + 4)?, 2));
    let grow = hl + 4 * push;
    if total + 4 * push > usize::from(rw.mtu) || l3 < grow {
        return None;
    }
    let new_start = l3 - grow;
    let end = l3 + total;
    // Every check is done: from here on the packet changes.
    let fr = raw.get_mut(new_start..end)?;
    let (h, rest) = fr.split_at_mut(hl);
    let (st, ip) = rest.split_at_mut(4 * push);
    // TTL - 1, RFC 1624 incremental checksum.
    let old = rd16(ip, 8);
    let ttl = ip[8] - 1;
    ip[8] = ttl;
    let ck = wire::checksum::update_u16(rd16(ip, 10), old, rd16(ip, 8));
    wr16(ip, 10, ck);
    for (q, c) in st.chunks_exact_mut(4).enumerate() {
        c.copy_from_slice(&(lse[q] | u32::from(ttl)).to_be_bytes());
    }
    let et = if push > 0 {
        ETHERTYPE_MPLS
    } else {
        ETHERTYPE_IPV4
    };
    if rw.tagged {
        h[..16].copy_from_slice(&rw.hdr);
        wr16(h, 16, et);
    } else {
        h[..12].copy_from_slice(&rw.hdr[..12]);
        wr16(h, 12, et);
    }
    let frame = end - new_start;
    if (start, len) != (new_start, frame) {
        // Cannot fail: the window only moves inside the buffer of a one-segment
        // packet (the checks saw the whole frame in it).
        let _ = p.set_window(new_start, frame);
    }
    Some(((l3 - 4 * push) as u16, frame))
}
