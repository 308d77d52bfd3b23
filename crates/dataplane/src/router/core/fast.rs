//! The IPv4 fast path: plain routed IPv4 in two passes over the vector.
//!
//! Most of a router's traffic is the same case: an untagged IPv4 frame to our MAC,
//! a header without options that checks out, a TTL above 1, and a route with one
//! path to a resolved neighbour (maybe with labels to push). For that case the
//! general stages (`ethernet-input`, `ip4-lookup`, `l2-rewrite`) walk the vector
//! four times and keep per-packet metadata between them. The fast path does it in
//! two walks with the batched LPM between them, the way DPDK's l3fwd does:
//!
//! 1. **classify**: parse the Ethernet and IPv4 headers in one go (MAC, EtherType,
//!    version and IHL, lengths, checksum, TTL, martians) and collect the
//!    destination as an LPM key. Anything else (ARP, MPLS, VLAN tags, options,
//!    broadcast, bad headers) goes to the general path untouched.
//! 2. **lookup** the keys in one batch.
//! 3. **forward**: per FIB result, a per-vector cache says whether it is a plain
//!    forward (one bucket, a forward leg, a resolved adjacency on an up
//!    interface, at most [`FAST_LABELS`] labels) and holds the label stack entries
//!    ready to write; per packet: MTU and headroom, TTL and checksum (RFC 1624),
//!    labels, the cached L2 header, the output port.
//!
//! A packet the fast path does not finish is left exactly as it arrived and the
//! general path handles it from the start, counters and all, so every rare case
//! (ICMP errors, ARP, ECMP, local delivery, drops) keeps one implementation. The
//! fast path changes no packet's fate: `tests/router_core.rs` runs random vectors
//! through a core with it and one without and compares every byte and counter.
//!
//! `show run` still shows the three stages: the classify walk is counted as
//! `ethernet-input`, the lookup and forward walk as `ip4-lookup` (its rewrite
//! included) and the packets it finished also under `l2-rewrite`.

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

/// Checks an untagged IPv4 frame addressed to `mac` from the front of `f` and
/// returns its destination address and IPv4 total length; `None` for anything the
/// general path must see (including every malformed frame).
#[inline(always)]
fn classify(f: &[u8], mac: u64) -> Option<(u32, usize)> {
    let h = f.first_chunk::<34>()?;
    let w64 = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    let total = usize::from(rd16(h, 16));
    // (`|`: one branch for the common checks)
    let bad = (w64 & MAC_MASK != mac)
        | (rd16(h, 12) != ETHERTYPE_IPV4)
        | (h[14] != 0x45)
        | (total < 20)
        | (total + ETH_LEN > f.len())
        | (h[22] <= 1);
    if bad {
        return None;
    }
    let w = |o: usize| u64::from(u32::from_be_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]));
    if wire::checksum::fold(w(14) + w(18) + w(22) + w(26) + w(30)) != 0xffff {
        return None;
    }
    let src = rd32(h, 26);
    let dst = rd32(h, 30);
    // Martians and multicast: the general path drops and counts them.
    if (src >> 24 == 127)
        | (src >> 28 == 0xe)
        | (dst >> 24 == 127)
        | (dst >> 24 == 0)
        | (dst >> 28 == 0xe)
    {
        return None;
    }
    Some((dst, total))
}

impl Work {
    /// Runs the fast path over `pkts[..n]`; returns how many packets it left for
    /// the general path (their indices in `self.slow`, in order).
    #[inline(always)]
    pub(super) fn fast_ip4<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        n: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        acc: &mut StageAcc,
    ) -> usize {
        let t0 = tsc();
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
        for i in 0..n {
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
            let got = match p.raw_mut().get(start..start + len) {
                Some(f) if rxif.ok && contiguous => classify(f, rxif.mac),
                _ => None,
            };
            match got {
                Some((dst, _)) if *table.get_or_insert(rxif.table) == rxif.table => {
                    self.keys[k] = dst;
                    self.sel[k] = i as u16;
                    self.fast_if[k] = rxif.ifindex;
                    k += 1;
                }
                _ => {
                    self.slow[n_slow] = i as u16;
                    n_slow += 1;
                }
            }
        }
        if k == 0 {
            acc.add(Stage::EthernetInput, 0, t0);
            return n_slow;
        }
        let t1 = acc.add(Stage::EthernetInput, 0, t0);
        view.lookup_burst(table.unwrap_or(0), &self.keys[..k], &mut self.fwd[..k]);

        let mut rx = Run::default();
        let mut done = 0usize;
        // Packets sent back to the general path join the slow list in order.
        let mut back = [0u16; BURST];
        let mut n_back = 0usize;
        for j in 0..k {
            let i = usize::from(self.sel[j]);
            let f = self.fwd[j];
            let slot = f as usize & (FWD_CACHE - 1);
            if self.fd[slot].key != f.wrapping_add(1) {
                self.fd[slot] = self.fwd_decode(f, ift, view);
            }
            let d = self.fd[slot];
            let (_, len_in) = pkts[i].window();
            let mut sent = None;
            if d.ok {
                let rs = self.rw_slot(d.adj, ift, view);
                let rw = &mut self.rw[rs];
                if let Some(r) = forward(&mut pkts[i], rw, &d) {
                    rw.tx_pkts += 1;
                    rw.tx_bytes += r.2 as u64;
                    out[i] = Out::Tx(rw.port);
                    sent = Some(r);
                }
            }
            let Some((l3, end, _)) = sent else {
                back[n_back] = i as u16;
                n_back += 1;
                continue;
            };
            let rx_if = self.fast_if[j];
            rx_add(&self.stats, &mut rx, usize::from(rx_if), len_in);
            self.meta[i] = Meta {
                kind: Kind::Rewrite,
                l3,
                end,
                rx_if,
                ethertype: if d.push > 0 {
                    ETHERTYPE_MPLS
                } else {
                    ETHERTYPE_IPV4
                },
                table: table.unwrap_or(0),
                adj: d.adj,
                path: 1 << Stage::EthernetInput as u8
                    | 1 << Stage::Ip4Lookup as u8
                    | 1 << Stage::Rewrite as u8,
                ..Meta::default()
            };
            done += 1;
        }
        flush_rx(&self.stats, &rx);
        acc.count(Stage::EthernetInput, done);
        acc.add(Stage::Ip4Lookup, done, t1);
        acc.count(Stage::Rewrite, done);
        if n_back > 0 {
            // Merge the two ascending index lists.
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
    #[inline(never)]
    fn fwd_decode(&mut self, f: u32, ift: &IfTable, view: &fib::FibView<'_>) -> FwdDec {
        let mut d = FwdDec {
            key: f.wrapping_add(1),
            ..FwdDec::default()
        };
        if view.bucket_count(f) != 1 {
            return d; // ECMP: the general path hashes per packet
        }
        let leg = view.leg(f, 0);
        if leg.action() != fib::Action::Forward {
            return d;
        }
        let mut labels = [0u32; fib::MAX_LABELS];
        let nl = leg.labels_into(&mut labels);
        let mut push = 0usize;
        for &l in labels[..nl].iter().filter(|&&l| l != 3) {
            if push == FAST_LABELS {
                return d;
            }
            d.lse[push] = l << 12;
            push += 1;
        }
        if push > 0 {
            d.lse[push - 1] |= 0x100;
        }
        d.push = push as u8;
        d.adj = leg.target();
        let rs = self.rw_slot(d.adj, ift, view);
        d.ok = self.rw[rs].ok;
        d
    }
}

/// Forwards one classified packet through a plain-forward decision: MTU and
/// headroom, TTL and checksum, labels, L2 header. Returns the new layer-3 offset,
/// end and frame length, or `None` with the packet untouched.
#[inline(always)]
fn forward<P: Packet>(p: &mut P, rw: &Rw, d: &FwdDec) -> Option<(u16, u16, usize)> {
    if !rw.ok {
        return None;
    }
    let (start, len) = p.window();
    let push = usize::from(d.push);
    let hl = if rw.tagged {
        ETH_LEN + VLAN_LEN
    } else {
        ETH_LEN
    };
    let l3 = start + ETH_LEN;
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
        c.copy_from_slice(&(d.lse[q] | u32::from(ttl)).to_be_bytes());
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
        // packet (classify saw the whole frame in it).
        let _ = p.set_window(new_start, frame);
    }
    Some(((l3 - 4 * push) as u16, end as u16, frame))
}
