//! sFlow in the pipeline: 1-in-N sampling after the forwarding decision.
//!
//! A worker owns one [`SflowHook`] (made from the [`sflow::WorkerSampler`] the
//! control thread's agent created for it) and calls [`SflowHook::begin`] before
//! [`Core::process`] and [`SflowHook::end`] after it. Per vector:
//!
//! * `begin`: one atomic load to pick up configuration changes; then it tells the
//!   core what to note for the hook. Whether any skip count could run out within
//!   the vector ([`WorkerSampler::may_pick`]: one compare per sampled interface)
//!   decides whether the core keeps the label stacks packets arrive with (one
//!   32-byte copy per labelled packet) and notes what a pick is described from.
//!   At 1:1000 about three vectors in four cannot pick, and cost only the counting.
//!   So does a vector that begins with the ring full
//!   ([`WorkerSampler::begin_vector`]: the agent is behind, say at its export
//!   limit): the sampler counts its picks as dropped as they are selected.
//! * `end`: the rx samplers see the vector as runs of packets of one input
//!   interface (a branch-free compare per packet, one subtract per run); the tx
//!   samplers see each forwarded packet under its output interface: the core notes,
//!   per transit packet, the ifIndex it left by (one byte: ifIndex values are below
//!   256), whichever path sent it, so tx counting needs no other note. (Debug
//!   builds check it against each packet's metadata and adjacency whenever those
//!   are noted.) Only when a skip count expires is a packet described and copied
//!   into the worker's ring; the vector's samples are published to the agent with
//!   one store.
//! * What the core leaves for the hook: while a pick is possible (and no trace
//!   runs), the fast path fills only the kind ([`Next::Fast`]) of
//!   what it forwards and its adjacency (in the compact `fast_adj` array); and the
//!   receiving interface, once for a vector it took whole from one port (`rx_one`;
//!   per packet otherwise). The description of a pick reads the rest (where the
//!   payload starts, the EtherType it left with) from the frame.
//!
//! What a sample carries:
//! * input: the receiving interface's ifIndex; output: the adjacency's interface
//!   for forwarded packets, "internal" for packets to the router itself (punts,
//!   pings), "discarded" with a reason for drops. Tx samplers see transit packets
//!   only: a dropped packet never reaches one, and packets the router originates
//!   (ARP, ICMP replies and errors) are not sampled on the way out.
//! * next hop: the adjacency's neighbour; incoming labels: the stack as received
//!   (before `mpls-lookup` swapped or popped it); outgoing labels: the stack the
//!   packet leaves with (after swap or push).
//! * header: the first `header_bytes` of the frame **as it leaves** for forwarded
//!   packets (new L2 header, decremented TTL, new labels), and as received for the
//!   rest: drops and punts as the pipeline left the buffer (a packet dropped after
//!   the IPv4 stage may already have its TTL decremented); a packet the router
//!   answered or turned into a packet of its own (echo reply, ICMP error, ARP
//!   request, "fragmentation needed" along an LSP) from a copy `local` keeps of
//!   it while a pick is possible, so the sample shows the request or the dropped
//!   packet, never the router's answer. Those answers are not transit: no tx
//!   sampler counts or samples them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sflow::{Direction, Interface as SfInterface, PacketInfo, Picks, WorkerSampler};

use super::{BURST, Core, ETHERTYPE_MPLS, Next, Out, Packet, Stage};
use crate::dpdk::prefetchw;
use crate::router::reasons::{Discard, DropReason};

/// Bytes of a received label stack kept per packet: 8 entries, the most a sample
/// record holds.
pub(super) const LSE_BYTES: usize = 4 * sflow::MAX_RECORD_LABELS;

/// Slots of the per-vector adjacency cache (a power of two).
const ADJ_CACHE: usize = 16;

/// Ring slots fetched for writing ahead of the next vector's samples, at most.
const UPCOMING: usize = 64;

#[derive(Debug, Clone, Copy, Default)]
struct AdjEntry {
    /// Adjacency id + 1; 0 = empty.
    key: u32,
    ifindex: u32,
    /// IPv4 neighbour address, 0 = none.
    nbr: u32,
    /// IPv6 neighbour address, 0 = none.
    nbr6: u128,
}

/// A worker's sFlow step. See the module documentation.
#[derive(Debug)]
pub struct SflowHook {
    sampler: WorkerSampler,
    picks: Picks,
    /// Per packet: output ifIndex for the tx samplers (0 = not forwarded).
    tx_if: Box<[u32; BURST]>,
    adj: [AdjEntry; ADJ_CACHE],
    /// Some interface is sampled (as of `begin`).
    on: bool,
}

/// Keeps the first [`LSE_BYTES`] of the label stack at `frame[off..]` (called by
/// `mpls-lookup` before it changes the stack, only while sampling is on).
#[inline(always)]
pub(super) fn keep_stack(dst: &mut [u8; LSE_BYTES], frame: &[u8], off: usize) {
    match frame.get(off..off + LSE_BYTES) {
        Some(s) => dst.copy_from_slice(s),
        None => keep_short(dst, frame, off),
    }
}

/// [`keep_stack`] into `stacks[i]`, out of line (the classify walk calls it only
/// while a pick is possible).
#[inline(never)]
pub(super) fn keep_stack_of(
    stacks: &mut [[u8; LSE_BYTES]; BURST],
    i: usize,
    frame: &[u8],
    off: usize,
) {
    if let Some(dst) = stacks.get_mut(i) {
        keep_stack(dst, frame, off);
    }
}

#[cold]
fn keep_short(dst: &mut [u8; LSE_BYTES], frame: &[u8], off: usize) {
    *dst = [0; LSE_BYTES];
    let s = frame.get(off..).unwrap_or_default();
    let n = s.len().min(LSE_BYTES);
    dst[..n].copy_from_slice(&s[..n]);
}

/// Label stack entries at the start of `b`, up to the bottom of stack (at most 8,
/// and only whole entries).
fn stack_words(b: &[u8]) -> sflow::LabelWords {
    let mut out = [0u32; sflow::MAX_RECORD_LABELS];
    let mut n = 0;
    for c in b.chunks_exact(4).take(sflow::MAX_RECORD_LABELS) {
        let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        out[n] = w;
        n += 1;
        if w & 0x100 != 0 {
            break;
        }
    }
    sflow::LabelWords::from_slice(&out[..n])
}

//= sFlow v5 §5 "interface": format 1 (discarded) values are ICMP unreachable codes
//= 0-255, 256 unknown, 257 TTL exceeded, 259 no buffer space, 262 packet too big.
/// The sFlow discard code of a core drop reason (`Meta::reason`).
fn discard_code(reason: Option<Discard>) -> u32 {
    let r = match reason {
        None => return SfInterface::DISCARD_UNKNOWN,
        Some(Discard::Mpls(r)) => {
            return match r {
                mpls::DropReason::TtlExpired => SfInterface::DISCARD_TTL,
                mpls::DropReason::NoHeadroom => SfInterface::DISCARD_NO_BUFFER,
                _ => SfInterface::DISCARD_UNKNOWN,
            };
        }
        Some(Discard::Core(r)) => r,
    };
    match r {
        DropReason::Ip4TtlExpired => SfInterface::DISCARD_TTL,
        DropReason::Ip4NoRoute => 0,
        DropReason::Ip4Unreachable => 1,
        DropReason::Ip4Prohibit => 13,
        DropReason::Ip4MtuExceeded | DropReason::Ip4FragmentationNeeded => {
            SfInterface::DISCARD_TOO_BIG
        }
        DropReason::TxFull | DropReason::NoHeadroom | DropReason::PuntQueueFull => {
            SfInterface::DISCARD_NO_BUFFER
        }
        _ => SfInterface::DISCARD_UNKNOWN,
    }
}

impl SflowHook {
    /// The step for the worker `sampler` belongs to.
    pub fn new(sampler: WorkerSampler) -> SflowHook {
        SflowHook {
            sampler,
            picks: Picks::new(),
            tx_if: Box::new([0; BURST]),
            adj: [AdjEntry::default(); ADJ_CACHE],
            on: false,
        }
    }

    /// The sampler (its counters, pools and drops).
    pub fn sampler(&self) -> &WorkerSampler {
        &self.sampler
    }

    /// Before [`Core::process`]: picks up configuration changes and tells the core
    /// what to note for the samplers.
    #[inline]
    pub fn begin(&mut self, core: &mut Core) {
        self.sampler.refresh();
        let (rx, tx) = (
            self.sampler.is_on(Direction::Rx),
            self.sampler.is_on(Direction::Tx),
        );
        self.on = rx || tx;
        // Whether a skip count may run out in this vector, into a ring with room
        // (when the agent is behind, the picks are dropped without a description):
        // if not, nothing a sample is described from needs noting (the counting
        // still runs).
        // (`may_pick` is false for a direction nothing is sampled in)
        let room = self.sampler.begin_vector();
        let pick = room
            && (self.sampler.may_pick(Direction::Rx, BURST)
                || self.sampler.may_pick(Direction::Tx, BURST));
        let w = &mut core.w;
        w.obs.keep_stacks = pick;
        // (the tx samplers read the ifIndex noted per packet, `txs`)
        w.obs.sflow_notes = pick;
        w.obs.sflow_rx_if = rx || pick;
        w.obs.tx_ifs = tx;
    }

    /// After [`Core::process`] on the same `pkts` and `out`: samples.
    #[inline]
    pub fn end<P: Packet>(&mut self, core: &mut Core, pkts: &mut [P], out: &[Out]) {
        if self.on {
            self.sample(core, pkts, out);
        }
    }

    /// `begin`, [`Core::process`], `end`.
    #[inline]
    pub fn process<P: Packet>(&mut self, core: &mut Core, pkts: &mut [P], out: &mut [Out]) {
        self.begin(core);
        core.process(pkts, out);
        self.end(core, pkts, out);
    }

    #[inline(never)]
    fn sample<P: Packet>(&mut self, core: &mut Core, pkts: &mut [P], out: &[Out]) {
        let n = pkts.len().min(out.len()).min(BURST);
        if n == 0 {
            return;
        }
        let Core { tables, w } = core;
        let meta = &w.meta;
        if self.sampler.is_on(Direction::Rx) {
            // Runs of one input interface: a vector mostly comes from one port, so
            // first one branch-free pass to see whether it is one run.
            let rx = &meta[..n];
            let first = w.obs.rx_one.unwrap_or(rx[0].rx_if);
            let one =
                w.obs.rx_one.is_some() || rx.iter().fold(true, |same, m| same & (m.rx_if == first));
            if one {
                self.sampler
                    .select_run(Direction::Rx, u32::from(first), 0, n, &mut self.picks);
            } else {
                self.rx_runs(rx);
            }
        }
        if self.sampler.is_on(Direction::Tx) && w.obs.tx_ifs {
            // The core noted per packet the ifIndex a transit packet left by (0:
            // not transit).
            let txs = &w.obs.txs;
            #[cfg(debug_assertions)]
            if w.obs.sflow_notes {
                // The same answers as the per-packet way (which reads the notes).
                let tx_if = &mut self.tx_if;
                tx_ifs(tx_if, &mut self.adj, &mut tables.fib, w, out, n);
                for i in 0..n {
                    debug_assert_eq!(u32::from(txs[i]), tx_if[i], "packet {i}");
                }
            }
            self.sampler
                .select_burst(Direction::Tx, n, |i| u32::from(txs[i]), &mut self.picks);
        } else if self.sampler.is_on(Direction::Tx) {
            // The general way: each packet's kind, fate and adjacency.
            tx_ifs(&mut self.tx_if, &mut self.adj, &mut tables.fib, w, out, n);
            let tx_if = &self.tx_if;
            self.sampler
                .select_burst(Direction::Tx, n, |i| tx_if[i], &mut self.picks);
        }
        // (none when the ring was full at `begin`: counted as dropped already)
        if !self.picks.is_empty() {
            self.submit(core, pkts, out);
        }
    }

    /// The rx samplers over a vector from several input interfaces, run by run.
    #[inline(never)]
    fn rx_runs(&mut self, rx: &[super::Meta]) {
        let mut start = 0;
        let mut cur = rx.first().map_or(0, |m| m.rx_if);
        for (i, m) in rx.iter().enumerate() {
            if m.rx_if != cur {
                self.sampler.select_run(
                    Direction::Rx,
                    u32::from(cur),
                    start,
                    i - start,
                    &mut self.picks,
                );
                start = i;
                cur = m.rx_if;
            }
        }
        self.sampler.select_run(
            Direction::Rx,
            u32::from(cur),
            start,
            rx.len() - start,
            &mut self.picks,
        );
    }

    /// Describes each pick and writes it into the ring; publishes them together.
    #[cold]
    #[inline(never)]
    fn submit<P: Packet>(&mut self, core: &mut Core, pkts: &mut [P], out: &[Out]) {
        let Core { tables, w } = core;
        // Adjacencies: the core's cache of this vector's, else (rarely) the FIB
        // under one view taken on the first miss.
        let (mut reader, mut view) = (Some(&mut tables.fib), None);
        for pick in self.picks.as_slice() {
            if self.sampler.ring_blocked() {
                // Overload: the agent is behind; count the drop, describe nothing.
                self.sampler.drop_pick(pick);
                continue;
            }
            let i = pick.index as usize;
            let (Some(p), Some(m), Some(&o)) = (pkts.get_mut(i), w.meta.get(i), out.get(i)) else {
                continue;
            };
            let forwarded = transit(m, o);
            let (output, next_hop) = if let Some(ac) = m.pw_circuit() {
                // Out of a pseudowire to its circuit.
                (SfInterface::Index(ac), None)
            } else if forwarded {
                let adj = adj_of(m, &w.obs.fast_adj, i);
                let e = match rw_hit(&w.rw, adj) {
                    Some(e) => e,
                    None => adj_slow(&mut self.adj, adj, &mut reader, &mut view),
                };
                let nh = if e.nbr != 0 {
                    Some(IpAddr::V4(Ipv4Addr::from(e.nbr)))
                } else {
                    (e.nbr6 != 0).then(|| IpAddr::V6(Ipv6Addr::from(e.nbr6)))
                };
                (SfInterface::Index(e.ifindex), nh)
            } else if matches!(o, Out::Punt(..)) || (m.reason.is_none() && m.next != Next::Drop) {
                (SfInterface::Internal, None)
            } else {
                (SfInterface::Discarded(discard_code(m.reason)), None)
            };
            let (start, len) = p.window();
            let raw = p.raw_mut();
            // The fast path did not fill `l3`, `ethertype`, `path` of what it sent:
            // the frame and the kind say.
            let (labelled_in, l3, et) = match m.next {
                Next::Fast(labelled) => {
                    let f = raw.get(start..start + len).unwrap_or_default();
                    let (off, et) = sent_l3(f);
                    (labelled, start + off, et)
                }
                _ => (
                    m.path & (1 << Stage::MplsLookup as u8) != 0,
                    usize::from(m.l3),
                    m.ethertype,
                ),
            };
            // The stacks only for labelled packets (no zeroed arrays otherwise).
            let (in_buf, out_buf);
            let in_labels: &[u32] = if labelled_in {
                in_buf = stack_words(&w.obs.stacks[i]);
                in_buf.as_slice()
            } else {
                &[]
            };
            let out_labels: &[u32] = if forwarded && et == ETHERTYPE_MPLS {
                out_buf = stack_words(raw.get(l3..).unwrap_or_default());
                out_buf.as_slice()
            } else {
                &[]
            };
            // A packet the router answered or turned into its own: as received.
            // (the fast path leaves `path` as it was: its packets are transit)
            let kept = w
                .obs
                .rx_heads
                .as_ref()
                .and_then(|h| h.get(i))
                .filter(|h| h.1 > 0);
            let (frame, frame_len) = match kept {
                Some(h)
                    if !matches!(m.next, Next::Fast(_))
                        && m.path & (1 << Stage::Local as u8) != 0 =>
                {
                    (&h.2[..usize::from(h.1)], u32::from(h.0))
                }
                // (with the rest of the buffer: the ring copies whole lines)
                _ => (raw.get(start..).unwrap_or_default(), len as u32),
            };
            let info = PacketInfo {
                frame,
                frame_len,
                input: SfInterface::Index(u32::from(w.obs.rx_one.unwrap_or(m.rx_if))),
                output,
                next_hop,
                in_labels,
                out_labels,
                ..PacketInfo::default()
            };
            self.sampler.enqueue(pick, &info);
        }
        drop(view);
        self.sampler.publish();
        // The next vector likely takes as many: fetch their slots' lines for
        // writing now, while it is forwarded.
        self.sampler
            .upcoming_lines(self.picks.len().min(UPCOMING), |w| prefetchw(w));
        self.picks.clear();
    }
}

/// Per packet of `w.meta[..n]`, the ifIndex a transit packet left through (0 for
/// any other packet): its adjacency's, from the core's cache, else from the FIB.
fn tx_ifs(
    tx_if: &mut [u32; BURST],
    cache: &mut [AdjEntry; ADJ_CACHE],
    fib: &mut fib::FibReader,
    w: &super::Work,
    out: &[Out],
    n: usize,
) {
    let (meta, fast_adj, rw) = (&w.meta[..], &w.obs.fast_adj, &w.rw);
    let (mut reader, mut view) = (Some(fib), None);
    for i in 0..n {
        let m = &meta[i];
        tx_if[i] = if let Some(ac) = m.pw_circuit() {
            // (out of a pseudowire: its circuit)
            ac
        } else if transit(m, out[i]) {
            let adj = adj_of(m, fast_adj, i);
            match rw_hit(rw, adj) {
                Some(e) => e.ifindex,
                None => adj_slow(cache, adj, &mut reader, &mut view).ifindex,
            }
        } else {
            0
        };
    }
}

/// The interface and neighbour of adjacency `adj` from the FIB, under a view taken
/// on the first call of a vector (which also empties the cache).
#[cold]
#[inline(never)]
fn adj_slow<'a>(
    cache: &mut [AdjEntry; ADJ_CACHE],
    adj: u32,
    reader: &mut Option<&'a mut fib::FibReader>,
    view: &mut Option<fib::FibView<'a>>,
) -> AdjEntry {
    if view.is_none() {
        *cache = [AdjEntry::default(); ADJ_CACHE];
        *view = reader.take().map(|r| r.read());
    }
    match view {
        Some(v) => adj_entry(cache, adj, v),
        None => AdjEntry::default(),
    }
}

/// The interface and IPv4 neighbour of adjacency `adj` if the core decoded it in
/// this vector (its rewrite cache: the same answer the packet was forwarded with).
/// The cache keeps no IPv6 neighbour: an adjacency without an IPv4 one is decoded
/// from the FIB.
#[inline(always)]
fn rw_hit(rw: &[super::Rw; super::RW_CACHE], adj: u32) -> Option<AdjEntry> {
    let e = &rw[super::rw_index(adj)];
    (e.key == adj.wrapping_add(1) && e.nbr != 0).then_some(AdjEntry {
        key: e.key,
        ifindex: e.ifindex,
        nbr: e.nbr,
        nbr6: 0,
    })
}

/// The adjacency packet `i` (metadata `m`) left through: the fast path keeps it
/// in `fast_adj`, the general path in the metadata.
#[inline(always)]
fn adj_of(m: &super::Meta, fast_adj: &[u32; BURST], i: usize) -> u32 {
    match m.next {
        Next::Fast(_) => fast_adj.get(i).copied().unwrap_or(u32::MAX),
        _ => m.adj,
    }
}

/// A packet forwarded through an adjacency (not one the router answered or made
/// from it: an echo reply, an ICMP error, which keeps the original's drop reason).
#[inline(always)]
fn transit(m: &super::Meta, out: Out) -> bool {
    let fwd = match m.next {
        // (the fast path leaves `reason` and `path` as they were)
        Next::Fast(_) => true,
        Next::Rewrite => super::transit_meta(m),
        _ => false,
    };
    fwd && matches!(out, Out::Tx(_))
}

/// Where the payload of a frame we built starts (after Ethernet and at most one
/// 802.1Q tag) and its EtherType.
#[inline(always)]
fn sent_l3(frame: &[u8]) -> (usize, u16) {
    let rd = |o: usize| {
        frame
            .get(o..o + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    match rd(12) {
        0x8100 => (18, rd(16)),
        et => (14, et),
    }
}

/// The cached interface and neighbour of adjacency `adj`.
#[inline(always)]
fn adj_entry(cache: &mut [AdjEntry; ADJ_CACHE], adj: u32, view: &fib::FibView<'_>) -> AdjEntry {
    let slot = adj as usize & (ADJ_CACHE - 1);
    if cache[slot].key != adj.wrapping_add(1) {
        cache[slot] = adj_decode(adj, view);
    }
    cache[slot]
}

#[inline(never)]
fn adj_decode(adj: u32, view: &fib::FibView<'_>) -> AdjEntry {
    let a = view.adjacency(adj);
    AdjEntry {
        key: adj.wrapping_add(1),
        ifindex: a.map_or(0, |a| a.ifindex),
        nbr: a.and_then(|a| a.neighbor).map_or(0, u32::from),
        nbr6: a.and_then(|a| a.neighbor6).map_or(0, u128::from),
    }
}
