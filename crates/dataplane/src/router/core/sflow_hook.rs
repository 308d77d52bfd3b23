//! sFlow in the pipeline: 1-in-N sampling after the forwarding decision.
//!
//! A worker owns one [`SflowHook`] (made from the [`sflow::WorkerSampler`] the
//! control thread's agent created for it) and calls [`SflowHook::begin`] before
//! [`Core::process`] and [`SflowHook::end`] after it. Per vector:
//!
//! * `begin`: one atomic load to pick up configuration changes, and it tells the
//!   core whether to keep the label stacks packets arrive with (only while some
//!   interface is sampled; one 32-byte copy per labelled packet).
//! * `end`: the rx samplers see the vector as runs of packets of one input
//!   interface (a compare per packet, one subtract per run); the tx samplers see
//!   each forwarded packet under its output interface (a per-vector cache of the
//!   adjacency's interface and neighbour). Only when a skip count expires is a
//!   packet described and copied into the worker's ring.
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
//!   packets (new L2 header, decremented TTL, new labels), and of the buffer as the
//!   pipeline left it for drops and punts: the frame as received, except that a
//!   packet dropped after the IPv4 stage may already have its TTL decremented, and a
//!   packet the router turned into an ICMP error or ARP request is sampled as that
//!   new packet (its buffer was reused).

use std::net::Ipv4Addr;

use sflow::{Direction, Interface as SfInterface, PacketInfo, Picks, WorkerSampler};

use super::{BURST, Core, ETHERTYPE_MPLS, Kind, Out, Packet, Stage};
use crate::router::reasons::DropReason;

/// Bytes of a received label stack kept per packet: 8 entries, the most a sample
/// record holds.
pub(super) const LSE_BYTES: usize = 4 * sflow::MAX_RECORD_LABELS;

/// Slots of the per-vector adjacency cache (a power of two).
const ADJ_CACHE: usize = 16;

#[derive(Debug, Clone, Copy, Default)]
struct AdjEntry {
    /// Adjacency id + 1; 0 = empty.
    key: u32,
    ifindex: u32,
    /// Neighbour address, 0 = none.
    nbr: u32,
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

#[cold]
fn keep_short(dst: &mut [u8; LSE_BYTES], frame: &[u8], off: usize) {
    *dst = [0; LSE_BYTES];
    let s = frame.get(off..).unwrap_or_default();
    let n = s.len().min(LSE_BYTES);
    dst[..n].copy_from_slice(&s[..n]);
}

/// Label stack entries at the start of `b`, up to the bottom of stack (at most 8,
/// and only whole entries).
fn stack_words(b: &[u8], out: &mut [u32; sflow::MAX_RECORD_LABELS]) -> usize {
    let mut n = 0;
    for c in b.chunks_exact(4).take(sflow::MAX_RECORD_LABELS) {
        let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        out[n] = w;
        n += 1;
        if w & 0x100 != 0 {
            break;
        }
    }
    n
}

//= sFlow v5 §5 "interface": format 1 (discarded) values are ICMP unreachable codes
//= 0-255, 256 unknown, 257 TTL exceeded, 259 no buffer space, 262 packet too big.
/// The sFlow discard code of a core drop reason (`Meta::reason`).
fn discard_code(reason: u8) -> u32 {
    if reason >= 100 {
        let k = usize::from(reason - 100);
        return match mpls::DropReason::ALL.get(k) {
            Some(mpls::DropReason::TtlExpired) => SfInterface::DISCARD_TTL,
            Some(mpls::DropReason::NoHeadroom) => SfInterface::DISCARD_NO_BUFFER,
            _ => SfInterface::DISCARD_UNKNOWN,
        };
    }
    let Some(r) = usize::from(reason)
        .checked_sub(1)
        .and_then(|k| DropReason::ALL.get(k))
    else {
        return SfInterface::DISCARD_UNKNOWN;
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
    /// whether to keep received label stacks.
    #[inline]
    pub fn begin(&mut self, core: &mut Core) {
        self.sampler.refresh();
        self.on = self.sampler.is_on(Direction::Rx) || self.sampler.is_on(Direction::Tx);
        core.w.keep_stacks = self.on;
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
        let meta = &core.w.meta;
        if self.sampler.is_on(Direction::Rx) {
            // Runs of one input interface: a vector mostly comes from one port.
            let mut start = 0;
            let mut cur = meta[0].rx_if;
            for i in 1..n {
                let k = meta[i].rx_if;
                if k != cur {
                    self.sampler.select_run(
                        Direction::Rx,
                        u32::from(cur),
                        start,
                        i - start,
                        &mut self.picks,
                    );
                    start = i;
                    cur = k;
                }
            }
            self.sampler.select_run(
                Direction::Rx,
                u32::from(cur),
                start,
                n - start,
                &mut self.picks,
            );
        }
        if self.sampler.is_on(Direction::Tx) {
            self.adj = [AdjEntry::default(); ADJ_CACHE];
            let view = core.tables.fib.read();
            for i in 0..n {
                let m = &meta[i];
                self.tx_if[i] = if transit(m.kind, m.reason, out[i]) {
                    adj_entry(&mut self.adj, m.adj, &view).ifindex
                } else {
                    0
                };
            }
            drop(view);
            let tx_if = &self.tx_if;
            self.sampler
                .select_burst(Direction::Tx, n, |i| tx_if[i], &mut self.picks);
        }
        if !self.picks.is_empty() {
            self.submit(core, pkts, out);
        }
    }

    #[cold]
    #[inline(never)]
    fn submit<P: Packet>(&mut self, core: &mut Core, pkts: &mut [P], out: &[Out]) {
        // The adjacencies of this vector, read under one FIB view taken only if a
        // forwarded packet was picked.
        self.adj = [AdjEntry::default(); ADJ_CACHE];
        let Core { tables, w } = core;
        let need = self.picks.as_slice().iter().any(|pk| {
            let i = pk.index as usize;
            matches!((w.meta.get(i), out.get(i)), (Some(m), Some(&o)) if transit(m.kind, m.reason, o))
        });
        let view = need.then(|| tables.fib.read());
        for pick in self.picks.as_slice() {
            let i = pick.index as usize;
            let (Some(p), Some(m), Some(&o)) = (pkts.get_mut(i), w.meta.get(i), out.get(i)) else {
                continue;
            };
            let forwarded = transit(m.kind, m.reason, o);
            let (output, next_hop) = if forwarded {
                let e = match &view {
                    Some(v) => adj_entry(&mut self.adj, m.adj, v),
                    None => AdjEntry::default(),
                };
                (
                    SfInterface::Index(e.ifindex),
                    (e.nbr != 0).then(|| Ipv4Addr::from(e.nbr)),
                )
            } else if matches!(o, Out::Punt(_)) || (m.reason == 0 && m.kind != Kind::Drop) {
                (SfInterface::Internal, None)
            } else {
                (SfInterface::Discarded(discard_code(m.reason)), None)
            };
            let mut in_words = [0u32; sflow::MAX_RECORD_LABELS];
            let n_in = if m.path & (1 << Stage::MplsLookup as u8) != 0 {
                stack_words(&w.stacks[i], &mut in_words)
            } else {
                0
            };
            let (start, len) = p.window();
            let raw = p.raw_mut();
            let mut out_words = [0u32; sflow::MAX_RECORD_LABELS];
            let n_out = if forwarded && m.ethertype == ETHERTYPE_MPLS {
                stack_words(
                    raw.get(usize::from(m.l3)..).unwrap_or_default(),
                    &mut out_words,
                )
            } else {
                0
            };
            let frame = raw.get(start..start + len).unwrap_or_default();
            let info = PacketInfo {
                frame,
                frame_len: len as u32,
                input: SfInterface::Index(u32::from(m.rx_if)),
                output,
                next_hop,
                in_labels: &in_words[..n_in],
                out_labels: &out_words[..n_out],
                ..PacketInfo::default()
            };
            self.sampler.submit(pick, &info);
        }
        drop(view);
        self.picks.clear();
    }
}

/// A packet forwarded through an adjacency (not one the router made from it, such
/// as an ICMP error, which keeps the original's drop reason).
#[inline(always)]
fn transit(kind: Kind, reason: u8, out: Out) -> bool {
    kind == Kind::Rewrite && reason == 0 && matches!(out, Out::Tx(_))
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
    }
}
