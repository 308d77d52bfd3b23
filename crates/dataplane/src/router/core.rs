//! The forwarding core: one vector of packets through every stage in one pass.
//!
//! Stage order is chosen so that nothing goes round twice: `ethernet-input` sorts
//! packets by EtherType, `mpls-lookup` switches labelled packets and hands the ones it
//! popped to IPv4 (explicit null, `via ip4-lookup`) in the same vector, `ip4-lookup`
//! validates, looks up (batched), decrements TTL and imposes labels, `ip4-local-arp`
//! answers ARP and pings and builds ICMP errors, and `l2-rewrite` writes the L2
//! header of the adjacency. The caller then transmits per port (see
//! [`super::RouterWorker`]). Each stage walks the whole vector, so its code and table
//! lines stay hot, and counts calls, packets and TSC cycles.
//!
//! In front of those stages runs the fast path (`core/fast.rs`): plain routed IPv4,
//! label swap, PHP and pop + lookup in two walks over the vector with one batched
//! LPM between them. What it cannot finish it leaves to the stages above, either
//! untouched (they start from the beginning) or where it stands (they resume at
//! `ip4-lookup` or `l2-rewrite`), so every rare case keeps one implementation.
//!
//! The core is generic over [`Packet`], so the same code runs on DPDK mbufs and, in
//! benchmarks, on plain buffers.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arc_swap::ArcSwap;
use crossbeam_queue::ArrayQueue;

use crate::dpdk::{BURST, tsc};
use crate::packet::{Packet, RxCsum};

use super::iface::{IfTable, Interface};
use super::reasons::{DropReason, PuntReason};
use super::stats::{Stage, TRACE_BYTES, TraceRecord, WorkerStats};

mod fast;
mod hold;
mod sflow_hook;
use fast::{FWD_CACHE, FwdDec, StageAcc};
pub use hold::{HOLD_BYTES, HOLD_PACKETS};
pub use sflow_hook::SflowHook;

const ETH_LEN: usize = 14;
const VLAN_LEN: usize = 4;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_IPV6: u16 = 0x86dd;
/// Bytes of the offending datagram quoted in ICMP errors: as much as fits in 576
/// bytes (RFC 1812 §4.3.2.3).
const ICMP_QUOTE_MAX: usize = 576 - 28;
/// Room kept in front of a packet for the L2 header.
const L2_ROOM: usize = ETH_LEN + VLAN_LEN;
/// An out-label that pushes nothing (RFC 3032: implicit null, PHP).
const IMPLICIT_NULL: u32 = wire::Label::IMPLICIT_NULL.value();

/// Where a packet goes after the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    /// Transmit on this DPDK port.
    Tx(u16),
    /// Free it (already counted).
    Drop,
    /// Hand it to the control plane.
    Punt(PuntReason),
}

/// What workers tell the control thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A neighbour's MAC, learned from ARP.
    Neighbor {
        /// Interface it was heard on.
        ifindex: u32,
        /// Its address.
        ip: Ipv4Addr,
        /// Its MAC.
        mac: [u8; 6],
    },
}

/// The tables a worker reads. Each worker has its own reader handles.
pub struct Tables {
    /// IPv4 FIB.
    pub fib: fib::FibReader,
    /// Label table.
    pub labels: mpls::LabelReader,
    /// Interfaces.
    pub ifaces: Arc<ArcSwap<IfTable>>,
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tables").finish_non_exhaustive()
    }
}

/// Knobs of the core.
#[derive(Debug, Clone, Copy)]
pub struct CoreConfig {
    /// ICMP errors per second a worker may send (token bucket rate).
    pub icmp_rate_pps: u32,
    /// Token bucket depth.
    pub icmp_burst: u32,
    /// Minimum time between two ARP requests for the same address, in ms.
    pub arp_retry_ms: u32,
    /// Plain routed IPv4 takes the two-walk fast path (see `core/fast.rs`); off,
    /// every packet goes through the general stages. Same results either way.
    pub fast_path: bool,
    /// The DPDK ports whose device checks IPv4 header checksums (rx checksum
    /// offload; bit per port id, ids from 64 on always count): their packets'
    /// verdicts ([`crate::packet::RxCsum`]) are read and trusted, other ports'
    /// packets are summed without looking. Default: none (the daemon sets the
    /// ports whose offload is on). Reading a verdict nobody set is never wrong
    /// (it reads as unknown), only a few instructions per packet dearer; ignoring
    /// one only sums a header the NIC already checked.
    pub nic_csum_ports: u64,
    /// Transit packets held per unresolved neighbour until ARP resolves it (see
    /// `core/hold.rs`); 0 holds none (they are dropped as `neighbor_incomplete`).
    pub hold_per_neighbor: u8,
    /// How long a held packet waits for its neighbour, in ms.
    pub hold_ms: u32,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            icmp_rate_pps: 1000,
            icmp_burst: 100,
            arp_retry_ms: 100,
            fast_path: true,
            nic_csum_ports: 0,
            hold_per_neighbor: 8,
            hold_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    #[default]
    Drop,
    Ip4,
    Mpls,
    Arp,
    /// Needs the L2 header of adjacency `adj`.
    Rewrite,
    /// Built completely (L2 included) by the local stage: send on `port`.
    Ready,
    /// Forwarded by the fast path with only `rx_if` filled in (unless
    /// `Work::rx_one` says it for the whole vector; the adjacency is in
    /// `Work::fast_adj`), for the sFlow hook
    /// while sampling is on and no trace runs; true: it arrived labelled (its
    /// stack as received is kept).
    Fast(bool),
    Punt(PuntReason),
}

/// Per-packet state between stages.
#[derive(Debug, Clone, Copy, Default)]
struct Meta {
    kind: Kind,
    /// Offset of layer 3 (label stack or IPv4 header) in the buffer.
    l3: u16,
    /// End of the packet in the buffer.
    end: u16,
    /// Receiving interface.
    rx_if: u16,
    /// EtherType to write in front of l3.
    ethertype: u16,
    /// IPv4 table for the lookup.
    table: u32,
    /// Adjacency for the rewrite; output port once `Ready`.
    adj: u32,
    /// Why it needs the local stage (see `Local`).
    local: Local,
    /// Flow hash from the MPLS stage (0 = compute from IPv4).
    hash: u32,
    /// Stages passed (bit per `Stage`), for the trace.
    path: u8,
    /// Drop reason + 1 (`DropReason`), or 100 + index of an MPLS reason; 0 = none.
    reason: u8,
    /// The NIC's verdict on the IPv4 header checksum: for an IPv4 header right
    /// behind the L2 header only (one that came out from under a label is always
    /// checked here).
    csum: RxCsum,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Local {
    #[default]
    None,
    /// To one of our addresses.
    ToUs,
    /// ICMP error: type, code, next-hop MTU (frag needed).
    IcmpError(u8, u8, u16),
    /// Resolve this address on this interface (packet becomes the ARP request).
    Resolve(u32, u32),
    /// MPLS TTL expired inside an LSP.
    MplsTtl,
    /// A packet the router built, held for its next hop: route it.
    Route,
}

/// A packet's frame as received: its length, the bytes kept and the first bytes
/// (as many as an sFlow header holds; a trace record shows fewer).
type RxHead = (u16, u16, [u8; sflow::HEADER_CAPACITY]);

/// Token bucket in TSC ticks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bucket {
    tokens: u64,
    max: u64,
    last: u64,
    ticks_per_token: u64,
}

impl Bucket {
    pub(super) fn new(rate: u32, burst: u32, hz: u64) -> Self {
        Bucket {
            tokens: u64::from(burst),
            max: u64::from(burst),
            last: 0,
            ticks_per_token: hz / u64::from(rate.max(1)),
        }
    }

    pub(super) fn take(&mut self, now: u64) -> bool {
        if let Some(add) = now
            .saturating_sub(self.last)
            .checked_div(self.ticks_per_token)
        {
            if add > 0 {
                self.tokens = (self.tokens + add).min(self.max);
                // Keep the part of a token already earned (moving `last` to `now`
                // dropped up to one token per refill); a full bucket earns no more.
                self.last = if self.tokens == self.max {
                    now
                } else {
                    self.last + add * self.ticks_per_token
                };
            }
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

/// One worker's forwarding core. Owns its scratch space; nothing here is shared
/// with other workers except the counters, which only this worker writes.
pub struct Core {
    tables: Tables,
    w: Work,
}

/// Everything of a core but its table readers (so a burst can hold a FIB view and
/// still update the core's scratch state).
struct Work {
    stats: Arc<WorkerStats>,
    events: Arc<ArrayQueue<Event>>,
    meta: Box<[Meta; BURST]>,
    keys: [u32; BURST],
    fwd: [u32; BURST],
    sel: [u16; BURST],
    icmp: Bucket,
    arp_recent: [(u32, u64); 16],
    arp_retry_ticks: u64,
    ident: u16,
    /// Frames as received, per packet (allocated on first use): every packet of
    /// a traced vector, and, while sFlow may pick one, each packet the router
    /// answers or turns into a packet of its own (echo reply, ICMP error, ARP).
    rx_heads: Option<Box<[RxHead]>>,
    /// sFlow may pick a packet of this vector: `mpls-lookup` keeps each labelled
    /// packet's stack as received.
    keep_stacks: bool,
    /// The fast path notes, per packet it sends, what sFlow describes a pick
    /// from: [`Kind::Fast`] and the adjacency (`fast_adj`). While a pick is
    /// possible.
    sflow_notes: bool,
    /// sFlow needs the receiving interface of every packet (`rx_one`, else each
    /// packet's `rx_if`): the rx samplers count by it, and a pick names it.
    sflow_rx_if: bool,
    /// sFlow samples on tx: record in `txs` the ifIndex each transit packet left
    /// by.
    tx_ifs: bool,
    /// Per packet the fast path sent while sFlow is on (`Kind::Fast`): its
    /// adjacency (a compact array: the fast path stores one word per packet, not
    /// into a `Meta`).
    fast_adj: [u32; BURST],
    /// Per packet of the vector (while `tx_ifs`): the ifIndex a transit packet
    /// left by ([`tx_ifindex`]), 0 for every other packet.
    txs: [u8; BURST],
    /// The fast path took every packet of the vector, all received on this
    /// interface (their `rx_if` is then not filled in for sFlow).
    rx_one: Option<u16>,
    /// The label stacks kept (see [`SflowHook`]).
    stacks: Box<[[u8; sflow_hook::LSE_BYTES]; BURST]>,
    /// Adjacencies decoded, kept while `seen` holds (see [`Rw`]).
    rw: [Rw; RW_CACHE],
    /// The fast path is on.
    fast: bool,
    /// FIB results decoded (fast path), and a scratch entry for ECMP legs. An
    /// entry holds while its `generation` is `fd_gen`.
    fd: [FwdDec; FWD_CACHE + 1],
    /// The generation of the valid `fd` entries (never 0).
    fd_gen: u16,
    /// The FIB version and interface table that `rw` and `fd` were decoded from
    /// (they are dropped when either changes).
    seen: Option<(u64, Arc<IfTable>)>,
    /// Indices of the packets the general stages handle, ascending.
    slow: [u16; BURST],
    /// The labelled packets the fast path switched in this vector (scratch kept
    /// here, taken out while the vector runs, so no vector clears its own).
    lfw: Option<Box<[fast::Lfw; BURST]>>,
    /// The same for the indices of the packets the fast path hands back.
    hback: Option<Box<[u16; BURST]>>,
    /// Where each fast-path key's IPv4 header starts.
    l3s: [u16; BURST],
    /// Packets the fast path handed to the general stages part-way (bit per packet).
    resumed: [u64; 4],
    /// `CoreConfig::nic_csum_ports`.
    nic_csum_ports: u64,
    /// Packets waiting for their next hop to resolve.
    hold: hold::Hold,
}

/// Slots of the adjacency cache (a power of two).
const RW_CACHE: usize = 16;

/// Whether held packet `h` (`bytes`: from its IPv4 header or label stack on)
/// still waits for its next hop: the lookup it resumes from would still glean or
/// find an incomplete adjacency.
fn held_waiting(view: &fib::FibView<'_>, h: &hold::Held, bytes: &[u8]) -> bool {
    let unresolved = |adj: u32| view.adjacency(adj).is_some_and(|a| !a.complete);
    match h.meta.kind {
        // (a packet the router built is looked up as `route_local` does)
        Kind::Ip4 | Kind::Arp => {
            let Some(dst) = bytes.get(16..20) else {
                return false;
            };
            let dst = rd32(dst, 0);
            let fwd = view.lookup(h.meta.table, dst);
            let hash = if h.meta.kind == Kind::Arp {
                dst
            } else {
                h.meta.hash
            };
            let leg = view.leg(fwd, hash);
            match leg.action() {
                fib::Action::Glean => true,
                fib::Action::Forward => unresolved(leg.target()),
                _ => false,
            }
        }
        _ => unresolved(h.meta.adj),
    }
}

/// The slot of adjacency `adj` in the adjacency cache (`Work::rw`).
#[inline(always)]
fn rw_index(adj: u32) -> usize {
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
#[derive(Debug, Clone, Copy, Default)]
struct Rw {
    /// Adjacency id + 1; 0 marks an empty slot.
    key: u32,
    /// Destination and source MAC, then for a tagged interface 0x8100 and the tag.
    hdr: [u8; 16],
    tagged: bool,
    /// Known, complete, and its interface exists and is up: the fast rewrite applies.
    ok: bool,
    /// The FIB no longer knows the id.
    stale: bool,
    complete: bool,
    port: u16,
    mtu: u16,
    ifindex: u32,
    /// Neighbour address to resolve (0: none known, use the destination).
    nbr: u32,
    /// Packets and bytes sent through it in this vector, not yet counted.
    tx_pkts: u64,
    tx_bytes: u64,
}

/// Packets and bytes of a run of packets on one interface, added to its counters
/// when the run ends (VPP keeps the last sw_if_index the same way): a vector mostly
/// comes from one interface and leaves on a few, and a read-modify-write of the same
/// counter per packet is a store-to-load chain.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    ifindex: usize,
    pkts: u64,
    bytes: u64,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core").finish_non_exhaustive()
    }
}

#[inline(always)]
fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

#[inline(always)]
fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

#[inline(always)]
fn wr16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_be_bytes());
}

impl Core {
    /// A core reading `tables`, counting into `stats`, reporting to `events`.
    pub fn new(
        tables: Tables,
        stats: Arc<WorkerStats>,
        events: Arc<ArrayQueue<Event>>,
        cfg: CoreConfig,
        tsc_hz: u64,
    ) -> Core {
        Core {
            tables,
            w: Work {
                stats,
                events,
                meta: Box::new([Meta::default(); BURST]),
                keys: [0; BURST],
                fwd: [0; BURST],
                sel: [0; BURST],
                icmp: Bucket::new(cfg.icmp_rate_pps, cfg.icmp_burst, tsc_hz),
                arp_recent: [(0, 0); 16],
                arp_retry_ticks: tsc_hz / 1000 * u64::from(cfg.arp_retry_ms),
                ident: 1,
                rx_heads: None,
                keep_stacks: false,
                sflow_notes: false,
                sflow_rx_if: false,
                tx_ifs: false,
                rx_one: None,
                txs: [0; BURST],
                fast_adj: [0; BURST],
                stacks: Box::new([[0; sflow_hook::LSE_BYTES]; BURST]),
                rw: [Rw::default(); RW_CACHE],
                fast: cfg.fast_path,
                fd: [FwdDec::default(); FWD_CACHE + 1],
                fd_gen: 1,
                seen: None,
                slow: [0; BURST],
                lfw: Some(Box::new([fast::Lfw::default(); BURST])),
                hback: Some(Box::new([0; BURST])),
                l3s: [0; BURST],
                resumed: [0; 4],
                nic_csum_ports: cfg.nic_csum_ports,
                hold: hold::Hold::new(
                    cfg.hold_per_neighbor,
                    tsc_hz / 1000 * u64::from(cfg.hold_ms),
                ),
            },
        }
    }

    /// The counters this core writes.
    pub fn stats(&self) -> &Arc<WorkerStats> {
        &self.w.stats
    }

    /// Runs one vector through every stage; `out[i]` says where `pkts[i]` goes. The
    /// packets are rewritten in place (and their windows moved). A packet held
    /// for its next hop (see [`Core::release`]) is `Out::Drop` here: its copy is
    /// kept, counted as `held`.
    pub fn process<P: Packet>(&mut self, pkts: &mut [P], out: &mut [Out]) {
        let Core { tables, w } = self;
        w.process(tables, pkts, out)
    }

    /// Packets held for a neighbour being resolved.
    #[inline(always)]
    pub fn holding(&self) -> usize {
        self.w.hold.len()
    }

    /// How many held packets may go now (their next hop resolved, or their route
    /// changed): [`Core::release`] wants as many buffers. Packets held longer than
    /// [`CoreConfig::hold_ms`] are dropped here (`neighbor_hold_timeout`).
    #[cold]
    pub fn held_ready(&mut self) -> usize {
        let Core { tables, w } = self;
        if w.hold.len() == 0 {
            return 0;
        }
        let view = tables.fib.read();
        let (ready, expired) = w.hold.check(tsc(), view.version(), |h, bytes| {
            held_waiting(&view, h, bytes)
        });
        w.stats.drops[DropReason::NeighborHoldTimeout as usize].add(expired as u64);
        ready
    }

    /// Sends on the held packets [`Core::held_ready`] counted, oldest first: each
    /// is written into one of `pkts` (empty buffers with room for
    /// [`HOLD_BYTES`] plus 128 bytes of headroom) and goes through the stages it
    /// was held before (ip4-lookup again, or the rewrite of a switched packet);
    /// `out[i]` as for [`Core::process`]. Returns the packets written.
    #[cold]
    pub fn release<P: Packet>(&mut self, pkts: &mut [P], out: &mut [Out]) -> usize {
        let Core { tables, w } = self;
        w.release(tables, pkts, out)
    }
}

impl Work {
    #[inline(always)]
    fn drop(&self, m: &mut Meta, r: DropReason) {
        drop_meta(&self.stats, m, r)
    }

    // The stages walk parallel arrays (packets, metadata, keys) by index.
    #[allow(clippy::needless_range_loop)]
    fn process<P: Packet>(&mut self, tables: &mut Tables, pkts: &mut [P], out: &mut [Out]) {
        let n = pkts.len().min(BURST).min(out.len());
        if n == 0 {
            return;
        }
        let ifaces = tables.ifaces.load_full();
        let ift: &IfTable = &ifaces;
        let now = tsc();
        let tracing = self.stats.trace_budget.load(Ordering::Relaxed) > 0;
        if tracing {
            self.trace_in(pkts, n);
        }
        let mut acc = StageAcc::default();

        if self.tx_ifs {
            self.txs[..n].fill(0);
        }
        let view = tables.fib.read();
        // The decoded adjacencies and FIB results of earlier vectors hold while the
        // FIB and the interface table are the ones they were decoded from.
        self.sync_caches(&view, &ifaces);

        self.rx_one = None;
        // The fast path first; what it leaves goes through the general stages.
        let n_slow = if self.fast {
            // The trace reads every field; sFlow (without a trace) what
            // `Kind::Fast` promises.
            let (need_meta, light_meta) = (tracing, self.sflow_notes && !tracing);
            self.fast_ip4(
                pkts,
                out,
                n,
                ift,
                &view,
                &tables.labels,
                need_meta,
                light_meta,
                &mut acc,
            )
        } else {
            for i in 0..n {
                self.slow[i] = i as u16;
            }
            n
        };
        self.stages(pkts, out, n_slow, ift, &view, &tables.labels, now, &mut acc);
        drop(view);
        acc.commit(&self.stats);
        if tracing {
            self.trace_out(pkts, out, n, now);
        }
    }

    /// The general stages over the packets `self.slow[..n_slow]` of `pkts`: from
    /// ethernet-input (or, for a packet marked resumed, the stage its metadata
    /// names) to the rewrite.
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    fn stages<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        n_slow: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        labels: &mpls::LabelReader,
        now: u64,
        acc: &mut StageAcc,
    ) {
        let mut t = tsc();

        // ethernet-input
        let (mut n_mpls, mut n_ip4, mut n_local) = (0usize, 0usize, 0usize);
        let mut last_if = None;
        let mut rx = Run::default();
        let mut n_eth = 0usize;
        // The stages work on the metadata in place (see the rewrite loop).
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            if let Some(&a) = self
                .slow
                .get(s + PREFETCH)
                .filter(|_| s + PREFETCH < n_slow)
            {
                prefetch_data(&mut pkts[usize::from(a)]);
            }
            if !self.is_resumed(i) {
                n_eth += 1;
                let m = &mut self.meta[i];
                ethernet(
                    &self.stats,
                    self.nic_csum_ports,
                    &mut pkts[i],
                    ift,
                    &mut last_if,
                    &mut rx,
                    m,
                );
            }
            match self.meta[i].kind {
                Kind::Mpls => n_mpls += 1,
                Kind::Ip4 => n_ip4 += 1,
                Kind::Arp => n_local += 1,
                _ => {}
            }
        }
        flush_rx(&self.stats, &rx);
        t = acc.add(Stage::EthernetInput, n_eth, t);

        // mpls-lookup
        if n_mpls > 0 {
            let guard = labels.pin();
            let stats: &WorkerStats = &self.stats;
            for s in 0..n_slow {
                let i = usize::from(self.slow[s]);
                let m = &mut self.meta[i];
                if !matches!(m.kind, Kind::Mpls) {
                    continue;
                }
                m.path |= 1 << Stage::MplsLookup as u8;
                let raw = pkts[i].raw_mut();
                let mut off = usize::from(m.l3);
                let frame = &mut raw[..usize::from(m.end)];
                if self.keep_stacks {
                    sflow_hook::keep_stack(&mut self.stacks[i], frame, off);
                }
                match guard.switch(frame, &mut off) {
                    mpls::MplsDecision::Forward { adj } => {
                        m.l3 = off as u16;
                        m.ethertype = ETHERTYPE_MPLS;
                        m.adj = adj;
                        m.kind = Kind::Rewrite;
                    }
                    mpls::MplsDecision::Php { adj } => {
                        m.l3 = off as u16;
                        m.ethertype = ETHERTYPE_IPV4;
                        m.adj = adj;
                        m.kind = Kind::Rewrite;
                    }
                    mpls::MplsDecision::Ip4Lookup { table } => {
                        m.l3 = off as u16;
                        // (m.table is the receiving interface's)
                        m.table = mpls::lookup_table(table, m.table);
                        m.kind = Kind::Ip4;
                        n_ip4 += 1;
                    }
                    mpls::MplsDecision::Punt(_) => m.kind = Kind::Punt(PuntReason::Mpls),
                    mpls::MplsDecision::Drop(r) => {
                        m.kind = Kind::Drop;
                        if let Some(k) = mpls::DropReason::ALL.iter().position(|&x| x == r) {
                            stats.mpls_drops[k].inc();
                            m.reason = 100 + k as u8;
                        }
                        stats.ifaces[usize::from(m.rx_if)].drops.inc();
                    }
                    mpls::MplsDecision::TtlExpired => {
                        m.local = Local::MplsTtl;
                        m.kind = Kind::Arp; // handled by the local stage
                        n_local += 1;
                    }
                }
            }
            drop(guard);
            t = acc.add(Stage::MplsLookup, n_mpls, t);
        }

        // ip4-lookup
        if n_ip4 > 0 {
            // Validate and collect keys; note whether the vector uses one table.
            let mut k = 0usize;
            let mut table0 = None;
            let mut same = true;
            for s in 0..n_slow {
                let i = usize::from(self.slow[s]);
                let m = &mut self.meta[i];
                if !matches!(m.kind, Kind::Ip4) {
                    continue;
                }
                m.path |= 1 << Stage::Ip4Lookup as u8;
                let raw = pkts[i].raw_mut();
                match ip4_check(raw, m) {
                    Ok(dst) => {
                        self.keys[k] = dst;
                        self.sel[k] = i as u16;
                        k += 1;
                        same &= *table0.get_or_insert(m.table) == m.table;
                    }
                    // Link-local multicast (OSPF hellos, ...) is for the host stack.
                    Err(DropReason::Ip4Multicast)
                        if ift.punt_to_host
                            && raw.get(usize::from(m.l3)..).is_some_and(ip4_link_local_mc) =>
                    {
                        m.kind = Kind::Punt(PuntReason::Routing);
                    }
                    // drop_meta() also records the reason for the trace.
                    Err(r) => drop_meta(&self.stats, m, r),
                }
            }
            // Batched LPM: the common case is one table for the whole vector.
            if same {
                let table0 = table0.unwrap_or(0);
                view.lookup_burst(table0, &self.keys[..k], &mut self.fwd[..k]);
            } else {
                for j in 0..k {
                    self.fwd[j] =
                        view.lookup(self.meta[usize::from(self.sel[j])].table, self.keys[j]);
                }
            }
            let mut labels = [0u32; fib::MAX_LABELS];
            for j in 0..k {
                let i = usize::from(self.sel[j]);
                if self.ip4_fast(&mut pkts[i], i, j, ift, view, &mut labels) {
                    continue;
                }
                let mut m = self.meta[i];
                let l3 = usize::from(m.l3);
                let rss = pkts[i].rss_hash();
                let raw = pkts[i].raw_mut();
                // The flow hash only matters with several buckets (ECMP).
                let hash = if m.hash != 0 {
                    m.hash
                } else if view.bucket_count(self.fwd[j]) == 1 {
                    0
                } else if rss != 0 {
                    rss
                } else {
                    flow_hash(&raw[l3..usize::from(m.end)])
                };
                let raw = pkts[i].raw_mut();
                let leg = view.leg(self.fwd[j], hash);
                match leg.action() {
                    fib::Action::Forward => {
                        let ip = &mut raw[l3..usize::from(m.end)];
                        if ip[8] <= 1 {
                            self.drop_with_icmp(&mut m, DropReason::Ip4TtlExpired, 11, 0, 0);
                            n_local += usize::from(m.kind == Kind::Arp);
                            self.meta[i] = m;
                            continue;
                        }
                        let adj_id = leg.target();
                        let adj = self.rw[self.rw_slot(adj_id, ift, view)];
                        if adj.stale {
                            self.drop(&mut m, DropReason::StaleAdjacency);
                            self.meta[i] = m;
                            continue;
                        }
                        let n_labels = leg.labels_into(&mut labels);
                        // implicit null as an out-label means "push nothing"
                        let push: usize = labels[..n_labels]
                            .iter()
                            .filter(|&&l| l != IMPLICIT_NULL)
                            .count();
                        let ip_len = usize::from(m.end) - l3;
                        if ip_len + 4 * push > usize::from(adj.mtu) {
                            if ip[6] & 0x40 != 0 {
                                let mtu = adj.mtu.saturating_sub(4 * push as u16);
                                self.drop_with_icmp(&mut m, DropReason::Ip4MtuExceeded, 3, 4, mtu);
                                n_local += usize::from(m.kind == Kind::Arp);
                            } else {
                                self.drop(&mut m, DropReason::Ip4FragmentationNeeded);
                            }
                            self.meta[i] = m;
                            continue;
                        }
                        if !adj.complete {
                            let nbr = if adj.nbr != 0 { adj.nbr } else { rd32(ip, 16) };
                            m.hash = hash;
                            let held = self.hold(&mut pkts[i], &m, adj.ifindex, nbr);
                            self.resolve(&mut m, adj.ifindex, nbr, held);
                            n_local += usize::from(m.kind == Kind::Arp);
                            self.meta[i] = m;
                            continue;
                        }
                        // TTL - 1, RFC 1624 incremental checksum.
                        let ttl = ip[8] - 1;
                        let old = rd16(ip, 8);
                        ip[8] = ttl;
                        let ck = wire::checksum::update_u16(rd16(ip, 10), old, rd16(ip, 8));
                        wr16(ip, 10, ck);
                        m.ethertype = ETHERTYPE_IPV4;
                        if push > 0 {
                            if l3 < 4 * push + L2_ROOM {
                                self.drop(&mut m, DropReason::NoHeadroom);
                                self.meta[i] = m;
                                continue;
                            }
                            // uniform TTL: every pushed label carries the IP TTL
                            m.l3 = push_labels(raw, l3, &labels[..n_labels], ttl) as u16;
                            m.ethertype = ETHERTYPE_MPLS;
                        }
                        m.adj = adj_id;
                        m.kind = Kind::Rewrite;
                    }
                    fib::Action::Local => {
                        m.local = Local::ToUs;
                        m.kind = Kind::Arp;
                        n_local += 1;
                    }
                    fib::Action::Glean => {
                        let ip = &raw[l3..];
                        if ip[8] <= 1 {
                            self.drop_with_icmp(&mut m, DropReason::Ip4TtlExpired, 11, 0, 0);
                        } else {
                            let dst = rd32(ip, 16);
                            m.hash = hash;
                            let held = self.hold(&mut pkts[i], &m, leg.target(), dst);
                            self.resolve(&mut m, leg.target(), dst, held);
                        }
                        n_local += usize::from(m.kind == Kind::Arp);
                    }
                    fib::Action::NoRoute => {
                        self.drop_with_icmp(&mut m, DropReason::Ip4NoRoute, 3, 0, 0);
                        n_local += usize::from(m.kind == Kind::Arp);
                    }
                    fib::Action::Unreachable => {
                        self.drop_with_icmp(&mut m, DropReason::Ip4Unreachable, 3, 1, 0);
                        n_local += usize::from(m.kind == Kind::Arp);
                    }
                    fib::Action::Prohibit => {
                        self.drop_with_icmp(&mut m, DropReason::Ip4Prohibit, 3, 13, 0);
                        n_local += usize::from(m.kind == Kind::Arp);
                    }
                    fib::Action::Drop => self.drop(&mut m, DropReason::Ip4Blackhole),
                }
                self.meta[i] = m;
            }
            t = acc.add(Stage::Ip4Lookup, n_ip4, t);
        }

        // ip4-local-arp: ARP, pings, ICMP errors, neighbour resolution (rare paths)
        if n_local > 0 {
            for s in 0..n_slow {
                let i = usize::from(self.slow[s]);
                if !matches!(self.meta[i].kind, Kind::Arp) {
                    continue;
                }
                let mut m = self.meta[i];
                m.path |= 1 << Stage::Local as u8;
                if self.sflow_notes {
                    self.keep_head(&mut pkts[i], i);
                }
                self.local(&mut pkts[i], &mut m, ift, view, labels, now);
                self.meta[i] = m;
            }
            t = acc.add(Stage::Local, n_local, t);
        }

        // l2-rewrite
        let mut n_rw = 0usize;
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            // The common case reads the fields it needs in place: copying the
            // metadata out, changing a field and copying it back costs a
            // store-forwarding stall per packet (narrow stores, wide reloads).
            if matches!(self.meta[i].kind, Kind::Rewrite) {
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
                    if self.tx_ifs && transit_meta(&self.meta[i]) {
                        self.txs[i] = tx_ifindex(&self.rw[slot]);
                    }
                    continue;
                }
            }
            let mut m = self.meta[i];
            out[i] = match m.kind {
                // Stale, down, unresolved, no headroom: the general path.
                Kind::Rewrite => match self.rewrite(&mut pkts[i], i, &mut m, ift, view) {
                    Some(port) => {
                        if self.tx_ifs && m.kind == Kind::Rewrite && transit_meta(&m) {
                            // (the loop above put this adjacency in its slot)
                            self.txs[i] = tx_ifindex(&self.rw[rw_index(m.adj)]);
                        }
                        Out::Tx(port)
                    }
                    None => Out::Drop,
                },
                Kind::Ready => Out::Tx(m.adj as u16),
                Kind::Punt(r) => {
                    self.stats.punts[r as usize].inc();
                    let (s, _) = pkts[i].window();
                    let _ = pkts[i].set_window(s, usize::from(m.end).saturating_sub(s));
                    Out::Punt(r)
                }
                _ => Out::Drop,
            };
            self.meta[i] = m;
        }
        for k in 0..RW_CACHE {
            self.flush_tx(k);
        }
        acc.add(Stage::Rewrite, n_rw, t);
    }

    #[allow(clippy::needless_range_loop)]
    fn release<P: Packet>(
        &mut self,
        tables: &mut Tables,
        pkts: &mut [P],
        out: &mut [Out],
    ) -> usize {
        let n = pkts.len().min(BURST).min(out.len());
        let mut k = 0;
        while k < n {
            let p = &mut pkts[k];
            let Some((mut m, len)) = p
                .raw_mut()
                .get_mut(hold::RESUME_AT..)
                .and_then(|to| self.hold.take_ready(to))
            else {
                break;
            };
            if m.kind == Kind::Drop || !p.set_window(hold::RESUME_AT, len) {
                // (a buffer too small for it)
                self.drop(&mut m, DropReason::NoHeadroom);
            }
            m.l3 = hold::RESUME_AT as u16;
            m.end = (hold::RESUME_AT + len) as u16;
            self.meta[k] = m;
            self.slow[k] = k as u16;
            self.resumed[k >> 6] |= 1 << (k & 63);
            out[k] = Out::Drop;
            k += 1;
        }
        if k == 0 {
            return 0;
        }
        self.stats.hold_released.add(k as u64);
        let ifaces = tables.ifaces.load_full();
        let view = tables.fib.read();
        self.sync_caches(&view, &ifaces);
        self.rx_one = None;
        let mut acc = StageAcc::default();
        self.stages(
            pkts,
            out,
            k,
            &ifaces,
            &view,
            &tables.labels,
            tsc(),
            &mut acc,
        );
        drop(view);
        acc.commit(&self.stats);
        self.resumed = [0; 4];
        k
    }

    /// Drops the decoded adjacencies and FIB results of earlier vectors unless the
    /// FIB and the interface table are the ones they were decoded from.
    fn sync_caches(&mut self, view: &fib::FibView<'_>, ifaces: &Arc<IfTable>) {
        let same =
            matches!(&self.seen, Some((v, t)) if *v == view.version() && Arc::ptr_eq(t, ifaces));
        if !same {
            self.rw = [Rw::default(); RW_CACHE];
            self.fd_invalidate();
            self.seen = Some((view.version(), ifaces.clone()));
        }
    }

    /// Keeps a copy of the packet `pkts[i]` (from `m.l3` to `m.end`) to go on
    /// from `m` once `nbr` on `ifindex` resolves.
    fn hold<P: Packet>(
        &mut self,
        p: &mut P,
        m: &Meta,
        ifindex: u32,
        nbr: u32,
    ) -> Result<(), DropReason> {
        let l3 = p
            .raw_mut()
            .get(usize::from(m.l3)..usize::from(m.end))
            .ok_or(DropReason::NeighborIncomplete)?;
        let mut meta = *m;
        meta.local = Local::None;
        self.hold_frame(l3, meta, ifindex, nbr)
    }

    /// Keeps a copy of `l3` to go on from `meta` once `nbr` on `ifindex` resolves.
    fn hold_frame(
        &mut self,
        l3: &[u8],
        mut meta: Meta,
        ifindex: u32,
        nbr: u32,
    ) -> Result<(), DropReason> {
        meta.reason = 0;
        meta.csum = RxCsum::Unknown;
        self.hold.push(
            l3,
            hold::Held {
                meta,
                ifindex,
                nbr,
                at: tsc(),
                ..Default::default()
            },
        )
    }

    /// Keeps the head of every packet of a traced vector before processing.
    #[cold]
    #[inline(never)]
    fn trace_in<P: Packet>(&mut self, pkts: &mut [P], n: usize) {
        for (i, p) in pkts.iter_mut().take(n).enumerate() {
            self.keep_head(p, i);
        }
    }

    /// Records traced packets while the budget lasts.
    #[cold]
    #[inline(never)]
    fn trace_out<P: Packet>(&mut self, pkts: &mut [P], out: &[Out], n: usize, now: u64) {
        let Some(heads) = self.rx_heads.as_ref() else {
            return;
        };
        for i in 0..n {
            let b = &self.stats.trace_budget;
            let left = b.load(Ordering::Relaxed);
            if left == 0 {
                break;
            }
            b.store(left - 1, Ordering::Relaxed);
            let m = self.meta[i];
            let mut stages = vec![Stage::EthernetInput.name()];
            for st in [
                Stage::MplsLookup,
                Stage::Ip4Lookup,
                Stage::Local,
                Stage::Rewrite,
            ] {
                if m.path & (1 << st as u8) != 0 {
                    stages.push(st.name());
                }
            }
            let reason = match m.reason {
                0 => None,
                r if r >= 100 => mpls::DropReason::ALL
                    .get(usize::from(r - 100))
                    .map(|x| x.name()),
                r => DropReason::ALL.get(usize::from(r - 1)).map(|x| x.name()),
            };
            let decision = match out[i] {
                Out::Tx(p) => match reason {
                    // an ICMP error or ARP request replaced the packet
                    Some(r) => format!("tx port {p} (original: {r})"),
                    None => format!("tx port {p}"),
                },
                Out::Punt(r) => format!("punt {}", r.name()),
                Out::Drop => format!("drop {}", reason.unwrap_or("consumed")),
            };
            let mut head_out = [0u8; TRACE_BYTES];
            let mut len_out = 0u16;
            if let Out::Tx(_) = out[i] {
                let (s, l) = pkts[i].window();
                let raw = pkts[i].raw_mut();
                let k = l.min(TRACE_BYTES);
                head_out[..k].copy_from_slice(&raw[s..s + k]);
                len_out = l as u16;
            }
            let (len_in, kept, head) =
                heads
                    .get(i)
                    .copied()
                    .unwrap_or((0, 0, [0; sflow::HEADER_CAPACITY]));
            let mut head_in = [0u8; TRACE_BYTES];
            let k = usize::from(kept).min(TRACE_BYTES);
            head_in[..k].copy_from_slice(&head[..k]);
            let rec = TraceRecord {
                tsc: now,
                rx_port: pkts[i].port(),
                rx_if: u32::from(m.rx_if),
                len_in,
                head_in,
                stages,
                decision,
                len_out,
                head_out,
            };
            if let Err(rec) = self.stats.traces.push(rec) {
                // full: the oldest record makes room
                let _ = self.stats.traces.pop();
                let _ = self.stats.traces.push(rec);
            }
        }
    }

    /// ip4-lookup after the LPM for the common case, in place: a forward leg to a
    /// resolved adjacency, TTL above 1, within the MTU, room for the labels.
    /// Returns false, with nothing changed, for everything else (the general code
    /// then handles the packet).
    #[inline(always)]
    fn ip4_fast<P: Packet>(
        &mut self,
        p: &mut P,
        i: usize,
        j: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        labels: &mut [u32; fib::MAX_LABELS],
    ) -> bool {
        let m = &self.meta[i];
        let (l3, end, mhash) = (usize::from(m.l3), usize::from(m.end), m.hash);
        let fwd = self.fwd[j];
        let rss = p.rss_hash();
        let raw = p.raw_mut();
        let Some(ip) = raw.get(l3..end) else {
            return false;
        };
        // The flow hash only matters with several buckets (ECMP).
        let hash = if mhash != 0 {
            mhash
        } else if view.bucket_count(fwd) == 1 {
            0
        } else if rss != 0 {
            rss
        } else {
            flow_hash(ip)
        };
        let leg = view.leg(fwd, hash);
        if leg.action() != fib::Action::Forward || ip[8] <= 1 {
            return false;
        }
        let adj = leg.target();
        let slot = self.rw_slot(adj, ift, view);
        let rw = &self.rw[slot];
        if !rw.complete || rw.stale {
            return false;
        }
        let n_labels = leg.labels_into(labels);
        let push = labels[..n_labels]
            .iter()
            .filter(|&&l| l != IMPLICIT_NULL)
            .count();
        if end - l3 + 4 * push > usize::from(rw.mtu) || l3 < 4 * push + L2_ROOM {
            return false;
        }
        // TTL - 1, RFC 1624 incremental checksum.
        let ip = &mut raw[l3..end];
        let ttl = ip[8] - 1;
        let old = rd16(ip, 8);
        ip[8] = ttl;
        let ck = wire::checksum::update_u16(rd16(ip, 10), old, rd16(ip, 8));
        wr16(ip, 10, ck);
        let m = &mut self.meta[i];
        m.ethertype = ETHERTYPE_IPV4;
        if push > 0 {
            // uniform TTL: every pushed label carries the IP TTL
            m.l3 = push_labels(raw, l3, &labels[..n_labels], ttl) as u16;
            m.ethertype = ETHERTYPE_MPLS;
        }
        m.adj = adj;
        m.kind = Kind::Rewrite;
        true
    }

    /// Adds the packets a cache entry sent to its interface's tx counters (the fast
    /// rewrite counts in the entry: a vector leaves on a few interfaces, in any
    /// order).
    fn flush_tx(&mut self, slot: usize) {
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

    /// Drops every decoded FIB result (`fd`): a new generation.
    fn fd_invalidate(&mut self) {
        self.fd_gen = self.fd_gen.wrapping_add(1);
        if self.fd_gen == 0 {
            // (wrapped: entries of generation 1 could look valid again)
            self.fd.fill(FwdDec::default());
            self.fd_gen = 1;
        }
    }

    /// The cache slot holding adjacency `adj` as decoded (see
    /// [`Rw`]).
    #[inline(always)]
    fn rw_slot(&mut self, adj: u32, ift: &IfTable, view: &fib::FibView<'_>) -> usize {
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

    /// Marks a packet for an ICMP error (built by the local stage) and counts the
    /// drop reason of the original.
    fn drop_with_icmp(&self, m: &mut Meta, r: DropReason, typ: u8, code: u8, mtu: u16) {
        m.reason = r as u8 + 1;
        self.stats.drops[r as usize].inc();
        self.stats.ifaces[usize::from(m.rx_if)].drops.inc();
        m.local = Local::IcmpError(typ, code, mtu);
        m.kind = Kind::Arp;
    }

    /// Marks a packet to become an ARP request for `ip` on `ifindex`, unless one
    /// went out recently. `held`: whether a copy of it waits for the answer (see
    /// [`Work::hold`]); if not, it is dropped for that reason.
    fn resolve(&mut self, m: &mut Meta, ifindex: u32, ip: u32, held: Result<(), DropReason>) {
        match held {
            Ok(()) => self.stats.held.inc(),
            Err(r) => {
                self.stats.drops[r as usize].inc();
                self.stats.ifaces[usize::from(m.rx_if)].drops.inc();
                // (an ICMP error's packet keeps the reason it was dropped for)
                if m.reason == 0 {
                    m.reason = r as u8 + 1;
                }
            }
        }
        let now = tsc();
        let slot = (ip.wrapping_mul(0x9e37_79b9) >> 28) as usize;
        let (rip, at) = self.arp_recent[slot];
        if rip == ip && now.wrapping_sub(at) < self.arp_retry_ticks {
            m.kind = Kind::Drop;
            return;
        }
        self.arp_recent[slot] = (ip, now);
        m.local = Local::Resolve(ifindex, ip);
        m.kind = Kind::Arp;
    }

    /// The rare paths, one packet at a time.
    #[cold]
    #[inline(never)]
    fn local<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        labels: &mpls::LabelReader,
        now: u64,
    ) {
        match m.local {
            Local::None => self.arp_input(p, m, ift),
            Local::ToUs => self.deliver_local(p, m, ift, view),
            Local::IcmpError(typ, code, mtu) => {
                self.icmp_error(p, m, ift, view, typ, code, mtu, now)
            }
            Local::Resolve(ifindex, ip) => self.arp_request(p, m, ift, ifindex, ip),
            Local::MplsTtl => self.mpls_ttl(p, m, ift, labels),
            Local::Route => {
                let raw = p.raw_mut();
                match raw.get(usize::from(m.l3) + 16..usize::from(m.l3) + 20) {
                    Some(d) => {
                        let dst = rd32(d, 0);
                        self.route_local(raw, m, ift, view, dst);
                    }
                    None => m.kind = Kind::Drop,
                }
            }
        }
        // An echo reply or ICMP error whose destination needs resolving: the packet
        // becomes the ARP request (resolve() already marked the address as asked).
        if let (Kind::Arp, Local::Resolve(ifindex, ip)) = (m.kind, m.local) {
            self.arp_request(p, m, ift, ifindex, ip);
        }
    }

    fn arp_input<P: Packet>(&mut self, p: &mut P, m: &mut Meta, ift: &IfTable) {
        let Some(ifc) = ift.get(u32::from(m.rx_if)) else {
            m.kind = Kind::Drop;
            return;
        };
        let raw = p.raw_mut();
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        if end < l3 + 28 {
            self.drop(m, DropReason::ArpIgnored);
            return;
        }
        let a = &raw[l3..l3 + 28];
        // Ethernet/IPv4 only
        if rd16(a, 0) != 1 || rd16(a, 2) != ETHERTYPE_IPV4 || a[4] != 6 || a[5] != 4 {
            self.drop(m, DropReason::ArpIgnored);
            return;
        }
        let op = rd16(a, 6);
        let mut sha = [0u8; 6];
        sha.copy_from_slice(&a[8..14]);
        let spa = Ipv4Addr::from(rd32(a, 14));
        let tpa = Ipv4Addr::from(rd32(a, 24));
        // An unnumbered interface (no address of its own) speaks for the router's
        // loopback (its router id) and learns any sender: peers reach each
        // other's loopbacks on the link (onlink next hops).
        let unnumbered = ifc.addrs.is_empty();
        let ours = ifc.has_addr(tpa) || (unnumbered && ift.router_id == Some(tpa));
        // Learn the sender if it is on one of the interface's subnets.
        let on_link = (unnumbered && spa != Ipv4Addr::UNSPECIFIED && Some(spa) != ift.router_id)
            || ifc.on_link(spa);
        if on_link && sha[0] & 1 == 0 {
            let _ = self.events.push(Event::Neighbor {
                ifindex: ifc.ifindex,
                ip: spa,
                mac: sha,
            });
        }
        if op == 1 && ours {
            // Answer in place.
            let a = &mut raw[l3..l3 + 28];
            wr16(a, 6, 2);
            a[18..24].copy_from_slice(&sha);
            a[24..28].copy_from_slice(&spa.octets());
            a[8..14].copy_from_slice(&ifc.mac);
            a[14..18].copy_from_slice(&tpa.octets());
            m.ethertype = ETHERTYPE_ARP;
            m.end = (l3 + 28) as u16;
            if self.l2_header(p, m, sha, ifc.mac, ifc.vlan).is_some() {
                self.stats.arp_replies.inc();
                m.adj = u32::from(ifc.port);
                m.kind = Kind::Ready;
                self.tx_count(ifc.ifindex, p);
            } else {
                self.drop(m, DropReason::NoHeadroom);
            }
            return;
        }
        if op == 2 && ift.punt_to_host && ours {
            // A reply to the router: the host stack may have asked (its own
            // neighbour table resolves what BIRD/FRR talk to). Requests for our
            // addresses are answered above and never reach it: one answer each.
            m.kind = Kind::Punt(PuntReason::Arp);
        } else if on_link {
            // A reply, or a request for someone else: learned (if anything), consumed.
            self.stats.arp_consumed.inc();
            m.kind = Kind::Drop;
        } else {
            self.drop(m, DropReason::ArpIgnored);
        }
    }

    fn deliver_local<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) {
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        let raw = p.raw_mut();
        let ip = &raw[l3..end];
        let hl = usize::from(ip[0] & 0x0f) * 4;
        let is_echo = ip[9] == 1 && ip.len() >= hl + 8 && ip[hl] == 8 && rd16(ip, 6) & 0x3fff == 0;
        if !is_echo {
            m.kind = Kind::Punt(ip4_punt_class(ip));
            return;
        }
        // Echo reply in place: swap addresses, type 0, fix both checksums.
        let ip = &mut raw[l3..end];
        let (src, dst) = (rd32(ip, 12), rd32(ip, 16));
        ip[12..16].copy_from_slice(&dst.to_be_bytes());
        ip[16..20].copy_from_slice(&src.to_be_bytes());
        let old_ttl = rd16(ip, 8);
        ip[8] = 64;
        let ck = wire::checksum::update_u16(rd16(ip, 10), old_ttl, rd16(ip, 8));
        wr16(ip, 10, ck);
        let old = rd16(ip, hl);
        ip[hl] = 0;
        let ck = wire::checksum::update_u16(rd16(ip, hl + 2), old, rd16(ip, hl));
        wr16(ip, hl + 2, ck);
        self.stats.echo_replies.inc();
        self.route_local(raw, m, ift, view, src);
    }

    /// Sends a packet the router built (echo reply, ICMP error) to `dst`: one lookup
    /// in the receiving interface's table, the route's out-labels (a source behind
    /// an LSP is reached through it), then the usual rewrite.
    fn route_local(
        &mut self,
        raw: &mut [u8],
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        dst: u32,
    ) {
        let table = ift.get(u32::from(m.rx_if)).map_or(0, |i| i.table);
        let fwd = view.lookup(table, dst);
        let leg = view.leg(fwd, dst);
        match leg.action() {
            fib::Action::Forward => {
                let mut labels = [0u32; fib::MAX_LABELS];
                let n = leg.labels_into(&mut labels);
                let l3 = usize::from(m.l3);
                let push = labels[..n].iter().filter(|&&l| l != IMPLICIT_NULL).count();
                if l3 < 4 * push + L2_ROOM {
                    self.drop(m, DropReason::NoHeadroom);
                    return;
                }
                // Pushed with the TTL of the IPv4 header the router wrote (64).
                let off = push_labels(raw, l3, &labels[..n], 64);
                m.ethertype = if off == usize::from(m.l3) {
                    ETHERTYPE_IPV4
                } else {
                    ETHERTYPE_MPLS
                };
                m.l3 = off as u16;
                m.adj = leg.target();
                m.kind = Kind::Rewrite;
            }
            // The caller (`local`) turns the packet into the ARP request.
            // Held to go through this lookup again (`Local::Route`).
            fib::Action::Glean => {
                let mut again = *m;
                again.kind = Kind::Arp;
                again.local = Local::Route;
                again.table = table;
                let l3 = raw
                    .get(usize::from(m.l3)..usize::from(m.end))
                    .unwrap_or_default();
                let held = self.hold_frame(l3, again, leg.target(), dst);
                self.resolve(m, leg.target(), dst, held)
            }
            _ => self.drop(m, DropReason::Ip4NoRoute),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn icmp_error<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        typ: u8,
        code: u8,
        mtu: u16,
        now: u64,
    ) {
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        let raw = p.raw_mut();
        let ip = &raw[l3..end];
        let src = rd32(ip, 12);
        let dst = rd32(ip, 16);
        let frag_off = rd16(ip, 6) & 0x1fff;
        let hl = usize::from(ip[0] & 0x0f) * 4;
        let about_icmp_error =
            ip[9] == 1 && ip.len() > hl && !matches!(ip[hl], 0 | 8 | 13 | 14 | 15 | 16 | 17 | 18);
        //= RFC 1812 §4.3.2.7: no ICMP error about an ICMP error, a non-first fragment,
        //= a broadcast/multicast destination or an invalid source.
        let src_bad = src == 0 || src >> 24 == 127 || src >> 28 == 0xe || src == u32::MAX;
        if about_icmp_error || frag_off != 0 || dst >> 28 == 0xe || dst == u32::MAX || src_bad {
            self.stats.drops[DropReason::IcmpSuppressed as usize].inc();
            m.kind = Kind::Drop;
            return;
        }
        let Some(me) = ift.source_for(u32::from(m.rx_if)) else {
            self.stats.drops[DropReason::IcmpSuppressed as usize].inc();
            m.kind = Kind::Drop;
            return;
        };
        if !self.icmp.take(now) {
            self.stats.drops[DropReason::IcmpRateLimited as usize].inc();
            m.kind = Kind::Drop;
            return;
        }
        if l3 < 28 + L2_ROOM {
            self.drop(m, DropReason::NoHeadroom);
            return;
        }
        let quote = (end - l3).min(ICMP_QUOTE_MAX);
        let new = l3 - 28;
        let total = 28 + quote;
        let id = self.next_ident();
        {
            let h = &mut raw[new..new + 28];
            h[0] = 0x45;
            h[1] = 0xc0; // internetwork control
            wr16(h, 2, total as u16);
            wr16(h, 4, id);
            wr16(h, 6, 0);
            h[8] = 64;
            h[9] = 1;
            wr16(h, 10, 0);
            h[12..16].copy_from_slice(&me.octets());
            h[16..20].copy_from_slice(&src.to_be_bytes());
            let ck = wire::checksum::checksum(&h[..20]);
            wr16(h, 10, ck);
            h[20] = typ;
            h[21] = code;
            wr16(h, 22, 0);
            wr16(h, 24, 0);
            wr16(h, 26, if typ == 3 && code == 4 { mtu } else { 0 });
        }
        let ck = wire::checksum::checksum(&raw[new + 20..new + total]);
        wr16(raw, new + 22, ck);
        m.l3 = new as u16;
        m.end = (new + total) as u16;
        self.stats.icmp_errors.inc();
        self.route_local(raw, m, ift, view, src);
    }

    /// Turns the packet into an ARP request for `ip` on interface `ifindex`.
    fn arp_request<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        ifindex: u32,
        ip: u32,
    ) {
        let Some(ifc) = ift.get(ifindex) else {
            m.kind = Kind::Drop;
            return;
        };
        // Source address: the interface's toward the target; unnumbered, the
        // router's loopback.
        let spa = ifc
            .addr_toward(Ipv4Addr::from(ip))
            .or(ift.router_id)
            .map_or(0, u32::from);
        let l3 = usize::from(m.l3).max(L2_ROOM);
        let raw = p.raw_mut();
        if raw.len() < l3 + 46 {
            m.kind = Kind::Drop;
            return;
        }
        let a = &mut raw[l3..l3 + 46];
        a.fill(0);
        wr16(a, 0, 1);
        wr16(a, 2, ETHERTYPE_IPV4);
        a[4] = 6;
        a[5] = 4;
        wr16(a, 6, 1);
        a[8..14].copy_from_slice(&ifc.mac);
        a[14..18].copy_from_slice(&spa.to_be_bytes());
        a[24..28].copy_from_slice(&ip.to_be_bytes());
        m.l3 = l3 as u16;
        m.end = (l3 + 46) as u16; // padded to the 60-byte minimum frame
        m.ethertype = ETHERTYPE_ARP;
        if self.l2_header(p, m, [0xff; 6], ifc.mac, ifc.vlan).is_some() {
            self.stats.arp_requests.inc();
            m.adj = u32::from(ifc.port);
            m.kind = Kind::Ready;
            self.tx_count(ifc.ifindex, p);
        } else {
            m.kind = Kind::Drop;
        }
    }

    /// MPLS TTL expiry: ICMP time exceeded with the RFC 4950 label stack, sent on
    /// along the LSP (it reaches the egress, which routes it back to the source).
    fn mpls_ttl<P: Packet>(
        &mut self,
        p: &mut P,
        m: &mut Meta,
        ift: &IfTable,
        labels: &mpls::LabelReader,
    ) {
        let me = ift.source_for(u32::from(m.rx_if));
        let now = tsc();
        let Some(me) = me else {
            self.stats.mpls_drop(mpls::DropReason::TtlExpired);
            m.kind = Kind::Drop;
            return;
        };
        if !self.icmp.take(now) {
            self.stats.drops[DropReason::IcmpRateLimited as usize].inc();
            m.kind = Kind::Drop;
            return;
        }
        let l3 = usize::from(m.l3);
        let end = usize::from(m.end);
        let mut rx = [0u8; 512];
        let n = (end - l3).min(rx.len());
        let raw = p.raw_mut();
        rx[..n].copy_from_slice(&raw[l3..l3 + n]);
        let id = self.next_ident();
        let guard = labels.pin();
        // Build the reply where the received stack started; labels go in front.
        let headroom = l3;
        match guard.ttl_exceeded_reply(&rx[..n], me, id, raw, headroom) {
            Ok((off, decision)) => {
                let depth = (headroom - off.min(headroom)) / 4;
                let depth = depth.max(mpls_depth(&rx[..n]));
                let reply_end = headroom + mpls::icmp::time_exceeded_len(mpls_depth(&rx[..n]));
                let _ = depth;
                m.l3 = off as u16;
                m.end = reply_end as u16;
                match decision {
                    mpls::MplsDecision::Forward { adj } => {
                        m.ethertype = ETHERTYPE_MPLS;
                        m.adj = adj;
                        m.kind = Kind::Rewrite;
                        self.stats.icmp_errors.inc();
                    }
                    mpls::MplsDecision::Php { adj } => {
                        m.ethertype = ETHERTYPE_IPV4;
                        m.adj = adj;
                        m.kind = Kind::Rewrite;
                        self.stats.icmp_errors.inc();
                    }
                    _ => {
                        self.stats.mpls_drop(mpls::DropReason::TtlExpired);
                        m.kind = Kind::Drop;
                    }
                }
            }
            Err(_) => {
                self.stats.mpls_drop(mpls::DropReason::TtlExpired);
                m.kind = Kind::Drop;
            }
        }
    }

    /// Keeps the frame of packet `i` as received (see `rx_heads`).
    #[cold]
    #[inline(never)]
    fn keep_head<P: Packet>(&mut self, p: &mut P, i: usize) {
        let heads = self
            .rx_heads
            .get_or_insert_with(|| vec![(0, 0, [0; sflow::HEADER_CAPACITY]); BURST].into());
        let (s, l) = p.window();
        let f = p.raw_mut().get(s..s + l).unwrap_or_default();
        if let Some(h) = heads.get_mut(i) {
            let k = f.len().min(h.2.len());
            h.2[..k].copy_from_slice(&f[..k]);
            (h.0, h.1) = (l as u16, k as u16);
        }
    }

    fn next_ident(&mut self) -> u16 {
        self.ident = self.ident.wrapping_add(1);
        self.ident
    }

    /// Writes the Ethernet (and 802.1Q) header in front of `m.l3` and sets the
    /// packet's window to the frame. None when the headroom is too small.
    #[inline(always)]
    fn l2_header<P: Packet>(
        &self,
        p: &mut P,
        m: &Meta,
        dst: [u8; 6],
        src: [u8; 6],
        vlan: Option<u16>,
    ) -> Option<()> {
        let l3 = usize::from(m.l3);
        let hl = if vlan.is_some() {
            ETH_LEN + VLAN_LEN
        } else {
            ETH_LEN
        };
        let start = l3.checked_sub(hl)?;
        let raw = p.raw_mut();
        let h = raw.get_mut(start..l3)?;
        h[0..6].copy_from_slice(&dst);
        h[6..12].copy_from_slice(&src);
        match vlan {
            Some(v) => {
                wr16(h, 12, ETHERTYPE_VLAN);
                wr16(h, 14, v & 0x0fff);
                wr16(h, 16, m.ethertype);
            }
            None => wr16(h, 12, m.ethertype),
        }
        let end = usize::from(m.end);
        p.set_window(start, end - start).then_some(())
    }

    #[inline(always)]
    fn tx_count<P: Packet>(&self, ifindex: u32, p: &P) {
        if let Some(c) = self.stats.ifaces.get(ifindex as usize) {
            c.tx_pkts.inc();
            c.tx_bytes.add(p.window().1 as u64);
        }
    }

    /// l2-rewrite for one packet: the adjacency's header; returns the output port.
    #[inline(always)]
    fn rewrite<P: Packet>(
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
            if let (Kind::Arp, Local::Resolve(ix, ip)) = (m.kind, m.local) {
                self.arp_request(p, m, ift, ix, ip);
            }
            return (m.kind == Kind::Ready).then_some(m.adj as u16);
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

    /// A switched packet bigger than its next hop's `mtu`: dropped, and when its
    /// IPv4 payload has DF set, replaced by "fragmentation needed" (the MTU left
    /// for IPv4 under the outgoing stack) behind the same outgoing stack, so it
    /// goes on along the LSP to the egress, which routes it back to the source
    /// (as TTL expiry inside an LSP is answered). `None`: dropped.
    #[cold]
    #[inline(never)]
    fn lsp_too_big<P: Packet>(
        &mut self,
        p: &mut P,
        i: usize,
        m: &mut Meta,
        ift: &IfTable,
        mtu: u16,
    ) -> Option<()> {
        self.drop(m, DropReason::MplsMtuExceeded);
        // (the router's own packet from here: sFlow describes the one dropped)
        m.path |= 1 << Stage::Local as u8;
        if self.sflow_notes {
            self.keep_head(p, i);
        }
        let (l3, end) = (usize::from(m.l3), usize::from(m.end));
        let raw = p.raw_mut();
        let frame = raw.get(l3..end)?;
        let depth = if m.ethertype == ETHERTYPE_MPLS {
            mpls_depth(frame)
        } else {
            0
        };
        let orig = frame.get(4 * depth..)?;
        if orig.first().is_none_or(|v| v >> 4 != 4) || orig.get(6)? & 0x40 == 0 {
            return None;
        }
        let me = ift.source_for(u32::from(m.rx_if))?;
        if !self.icmp.take(tsc()) {
            self.stats.drops[DropReason::IcmpRateLimited as usize].inc();
            return None;
        }
        let mut reply = [0u8; mpls::icmp::FRAG_NEEDED_LEN];
        let ip_mtu = mtu.saturating_sub(4 * depth as u16);
        let id = self.next_ident();
        let n = mpls::icmp::build_frag_needed(orig, me, id, ip_mtu, &mut reply).ok()?;
        // The outgoing stack stays (labels, TC, S); its TTLs are a new packet's.
        let reply_end = l3 + 4 * depth + n;
        let raw = raw.get_mut(l3..reply_end)?;
        for lse in raw[..4 * depth].chunks_exact_mut(4) {
            lse[3] = mpls::icmp::REPLY_TTL;
        }
        raw[4 * depth..].copy_from_slice(&reply[..n]);
        m.end = reply_end as u16;
        // Sent, keeping the original's drop reason (as ICMP errors do).
        m.kind = Kind::Rewrite;
        self.stats.icmp_errors.inc();
        Some(())
    }
}

/// Parses the L2 header: receiving interface, MAC check, dispatch.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ethernet<'t, P: Packet>(
    stats: &WorkerStats,
    nic_ports: u64,
    p: &mut P,
    ift: &'t IfTable,
    last_if: &mut Option<(u16, Option<u16>, &'t Interface)>,
    rx: &mut Run,
    m: &mut Meta,
) {
    let (start, len) = p.window();
    let port = p.port();
    *m = Meta {
        end: (start + len) as u16,
        ..Meta::default()
    };
    if !p.is_contiguous() {
        drop_meta(stats, m, DropReason::MultiSegment);
        return;
    }
    let raw = p.raw_mut();
    let f = &raw[start..start + len];
    if f.len() < ETH_LEN {
        drop_meta(stats, m, DropReason::EthTruncated);
        return;
    }
    let mut et = rd16(f, 12);
    let mut l3 = ETH_LEN;
    let mut vlan = None;
    if et == ETHERTYPE_VLAN {
        if f.len() < ETH_LEN + VLAN_LEN {
            drop_meta(stats, m, DropReason::EthTruncated);
            return;
        }
        vlan = Some(rd16(f, 14) & 0x0fff);
        et = rd16(f, 16);
        l3 += VLAN_LEN;
    }
    // A vector mostly comes from one interface: keep the last one.
    let ifc = match *last_if {
        Some((lp, lv, ifc)) if lp == port && lv == vlan => ifc,
        _ => {
            let Some(ifc) = ift.rx_iface(port, vlan) else {
                drop_meta(
                    stats,
                    m,
                    if vlan.is_some() {
                        DropReason::UnknownVlan
                    } else {
                        DropReason::InterfaceDown
                    },
                );
                return;
            };
            *last_if = Some((port, vlan, ifc));
            ifc
        }
    };
    m.rx_if = ifc.ifindex as u16;
    rx_add(stats, rx, ifc.ifindex as usize, len);
    if !ifc.up {
        drop_meta(stats, m, DropReason::InterfaceDown);
        return;
    }
    // ours, broadcast or multicast (group bit)
    if f[..6] != ifc.mac && f[0] & 1 == 0 {
        drop_meta(stats, m, DropReason::NotOurMac);
        return;
    }
    m.l3 = (start + l3) as u16;
    m.table = ifc.table;
    m.kind = match et {
        ETHERTYPE_IPV4 => {
            if nic_csum(nic_ports, port) {
                m.csum = p.rx_ip4_csum();
            }
            Kind::Ip4
        }
        ETHERTYPE_MPLS => Kind::Mpls,
        ETHERTYPE_ARP => Kind::Arp,
        ETHERTYPE_IPV6 if ift.punt_to_host => Kind::Punt(ip6_punt_class(&f[l3..])),
        _ => {
            drop_meta(stats, m, DropReason::UnknownEthertype);
            return;
        }
    };
}

/// Well-known ports of routing and control protocols over UDP or TCP: BGP (179),
/// LDP (646), BFD (3784, 3785, 4784), RIP (520), RIPng (521), Babel (6696).
fn control_port(port: u16) -> bool {
    matches!(port, 179 | 646 | 3784 | 3785 | 4784 | 520 | 521 | 6696)
}

/// Whether the first four bytes of a UDP or TCP header name a control port, as
/// source or destination.
fn control_ports(l4: Option<&[u8]>) -> bool {
    l4.is_some_and(|p| {
        control_port(u16::from_be_bytes([p[0], p[1]]))
            || control_port(u16::from_be_bytes([p[2], p[3]]))
    })
}

/// Whether an IPv4 packet (`ip` from its header on) goes to link-local
/// multicast, 224.0.0.0/24 (OSPF, RIP, VRRP, LDP hellos, ...).
fn ip4_link_local_mc(ip: &[u8]) -> bool {
    ip.get(16..19) == Some(&[224, 0, 0][..])
}

/// The punt class of an IPv4 packet for the router, `ip` from its header on.
fn ip4_punt_class(ip: &[u8]) -> PuntReason {
    let hl = usize::from(ip.first().map_or(0, |b| b & 0x0f)) * 4;
    let proto = ip.get(9).copied().unwrap_or(0);
    // OSPF, IGMP, PIM, VRRP
    let control = ip4_link_local_mc(ip)
        || matches!(proto, 89 | 2 | 103 | 112)
        || (matches!(proto, 6 | 17) && control_ports(ip.get(hl..hl + 4)));
    if control {
        PuntReason::Routing
    } else {
        PuntReason::Local
    }
}

/// The punt class of an IPv6 packet, `ip` from its header on: ND, MLD, OSPFv3,
/// link-local multicast and the routing protocols' ports are control.
fn ip6_punt_class(ip: &[u8]) -> PuntReason {
    let nh = ip.get(6).copied().unwrap_or(0);
    let link_local_mc = ip.get(24..26) == Some(&[0xff, 0x02][..]);
    let l4 = ip.get(40..44);
    let control = link_local_mc
        || nh == 89
        || (nh == 58 && l4.is_some_and(|p| (130..=143).contains(&p[0])))
        || (matches!(nh, 6 | 17) && control_ports(l4));
    if control {
        PuntReason::Ip6Control
    } else {
        PuntReason::Ip6Other
    }
}

/// Whether DPDK port `port`'s packets carry a checksum verdict worth reading
/// (`CoreConfig::nic_csum_ports`).
#[inline(always)]
fn nic_csum(ports: u64, port: u16) -> bool {
    ports
        .checked_shr(u32::from(port))
        .is_none_or(|b| b & 1 != 0)
}

#[inline(always)]
fn rx_add(stats: &WorkerStats, run: &mut Run, ifindex: usize, bytes: usize) {
    if run.ifindex != ifindex {
        flush_rx(stats, run);
        *run = Run {
            ifindex,
            ..Run::default()
        };
    }
    run.pkts += 1;
    run.bytes += bytes as u64;
}

fn flush_rx(stats: &WorkerStats, run: &Run) {
    if let Some(c) = stats.ifaces.get(run.ifindex).filter(|_| run.pkts > 0) {
        c.rx_pkts.add(run.pkts);
        c.rx_bytes.add(run.bytes);
    }
}

/// Drops a packet: its reason (for the trace) and its counters.
#[inline(always)]
fn drop_meta(stats: &WorkerStats, m: &mut Meta, r: DropReason) {
    m.kind = Kind::Drop;
    m.reason = r as u8 + 1;
    stats.drops[r as usize].inc();
    stats.ifaces[usize::from(m.rx_if)].drops.inc();
}

/// How many packets ahead ethernet-input prefetches the packet it will read next
/// (the later stages find the lines it brought in).
const PREFETCH: usize = 4;

/// Starts loading the cache line where the packet's data begins.
#[inline(always)]
fn prefetch_data<P: Packet>(p: &mut P) {
    let (start, _) = p.window();
    crate::dpdk::prefetch0(p.raw_mut().as_ptr().wrapping_add(start));
}

/// Decodes adjacency `adj` for the adjacency cache.
#[inline(never)]
fn rw_decode(adj: u32, ift: &IfTable, view: &fib::FibView<'_>) -> Rw {
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
    e.ifindex = a.ifindex;
    e.nbr = a.neighbor.map_or(0, u32::from);
    let Some(ifc) = ift.get(a.ifindex) else {
        return e;
    };
    e.port = ifc.port;
    e.ok = ifc.up && a.complete;
    e.hdr[..6].copy_from_slice(&a.dst_mac);
    e.hdr[6..12].copy_from_slice(&a.src_mac);
    if let Some(v) = a.vlan.or(ifc.vlan) {
        e.tagged = true;
        wr16(&mut e.hdr, 12, ETHERTYPE_VLAN);
        wr16(&mut e.hdr, 14, v & 0x0fff);
    }
    e
}

/// A packet forwarded through an adjacency: not dropped, and not one the router
/// answered or built (echo reply, ICMP error, ARP), which went through `local`.
#[inline(always)]
fn transit_meta(m: &Meta) -> bool {
    m.reason == 0 && m.path & (1 << Stage::Local as u8) == 0
}

/// The fast l2-rewrite: copies the cached header of `rw` with EtherType `et` in
/// front of `l3` and sets the packet's window to the frame, which ends at `end`;
/// returns the frame length, or None (no headroom, or more than the link's MTU
/// from `l3` on: the general rewrite answers those).
#[inline(always)]
fn put_l2<P: Packet>(p: &mut P, l3: usize, et: u16, end: usize, rw: &Rw) -> Option<usize> {
    if end.checked_sub(l3)? > usize::from(rw.mtu) {
        return None;
    }
    let start = l3.checked_sub(ETH_LEN + VLAN_LEN * usize::from(rw.tagged))?;
    write_l2(p.raw_mut(), start, rw, et)?;
    let len = end.checked_sub(start)?;
    p.set_window(start, len).then_some(len)
}

/// Writes the L2 header of `rw` with EtherType `et` at `at` (fixed-size copies: a
/// variable length would be a `memcpy` call per packet).
#[inline(always)]
fn write_l2(raw: &mut [u8], at: usize, rw: &Rw, et: u16) -> Option<()> {
    let et = et.to_be_bytes();
    if rw.tagged {
        let h = raw.get_mut(at..)?.first_chunk_mut::<18>()?;
        h[..16].copy_from_slice(&rw.hdr);
        h[16..].copy_from_slice(&et);
    } else {
        let h = raw.get_mut(at..)?.first_chunk_mut::<14>()?;
        h[..12].copy_from_slice(&rw.hdr[..12]);
        h[12..].copy_from_slice(&et);
    }
    Some(())
}

/// The ifIndex a transit packet sent through `rw` leaves by, as `Work::txs` notes
/// it (ifIndex values are below [`super::stats::MAX_IFACES`], 256).
#[inline(always)]
fn tx_ifindex(rw: &Rw) -> u8 {
    const _: () = assert!(super::stats::MAX_IFACES <= 256);
    rw.ifindex as u8
}

/// Counts a packet of `len` bytes sent through `rw`; where it goes.
#[inline(always)]
fn count_tx(rw: &mut Rw, len: usize) -> Out {
    rw.tx_pkts += 1;
    rw.tx_bytes += len as u64;
    Out::Tx(rw.port)
}

/// The ECMP hash of an IPv4 packet. `mpls::ip4_flow_hash` returns the raw 5-tuple
/// mix (`src << 32 | dst` xor rotated ports), whose low bits are the destination's
/// low bits; FIB buckets are picked with a low-bit mask, so it is folded and spread
/// by a Fibonacci multiply first (as `mpls::flow_hash` does for labelled packets).
#[inline(always)]
fn flow_hash(ip: &[u8]) -> u32 {
    let h = mpls::ip4_flow_hash(ip);
    let x = u64::from((h ^ (h >> 32)) as u32);
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32
}

/// Writes `labels` (top of stack first; implicit null, 3, pushes nothing) in front of
/// `l3` with TTL `ttl`, the S bit on the last one written, and returns the new layer-3
/// offset. The caller has checked that the headroom holds them and the L2 header.
#[inline(always)]
fn push_labels(raw: &mut [u8], l3: usize, labels: &[u32], ttl: u8) -> usize {
    let mut off = l3;
    let mut s = 1u32;
    for &l in labels.iter().rev().filter(|&&l| l != IMPLICIT_NULL) {
        off -= 4;
        let lse = (l << 12) | (s << 8) | u32::from(ttl);
        raw[off..off + 4].copy_from_slice(&lse.to_be_bytes());
        s = 0;
    }
    off
}

/// Label stack depth at the start of `b` (1 + entries before bottom of stack).
fn mpls_depth(b: &[u8]) -> usize {
    let mut d = 0;
    while d * 4 + 4 <= b.len() && d < mpls::MAX_STACK_DEPTH {
        d += 1;
        if b[d * 4 - 2] & 1 != 0 {
            break;
        }
    }
    d
}

/// IPv4 header checks; on success trims Ethernet padding (via `m.end`) and returns
/// the destination address.
#[inline(always)]
fn ip4_check(raw: &[u8], m: &mut Meta) -> Result<u32, DropReason> {
    let l3 = usize::from(m.l3);
    let end = usize::from(m.end);
    let ip = raw.get(l3..end).ok_or(DropReason::Ip4Truncated)?;
    let Some(h) = ip.first_chunk::<20>() else {
        return Err(DropReason::Ip4Truncated);
    };
    if h[0] >> 4 != 4 {
        return Err(DropReason::Ip4BadVersion);
    }
    let hl = usize::from(h[0] & 0x0f) * 4;
    if hl < 20 {
        return Err(DropReason::Ip4BadIhl);
    }
    if hl > ip.len() {
        return Err(DropReason::Ip4Truncated);
    }
    let total = usize::from(rd16(h, 2));
    if total < hl || total > ip.len() {
        return Err(DropReason::Ip4BadLength);
    }
    // The NIC's verdict when it checked; otherwise, without options (nearly
    // always), the header is five 32-bit words.
    let ok = if m.csum != RxCsum::Unknown {
        m.csum == RxCsum::Good
    } else if hl == 20 {
        let w = |o: usize| u64::from(u32::from_be_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]));
        wire::checksum::fold(w(0) + w(4) + w(8) + w(12) + w(16)) == 0xffff
    } else {
        wire::checksum::verify(&ip[..hl])
    };
    if !ok {
        return Err(DropReason::Ip4BadChecksum);
    }
    let src = rd32(h, 12);
    let dst = rd32(h, 16);
    //= RFC 1812 §5.3.7: martian addresses are not forwarded.
    // (`|`, not `||`: one branch instead of four)
    if (src >> 24 == 127) | (src >> 28 == 0xe) | (dst >> 24 == 127) | (dst >> 24 == 0) {
        return Err(DropReason::Ip4Martian);
    }
    if dst >> 28 == 0xe {
        return Err(DropReason::Ip4Multicast);
    }
    m.end = (l3 + total) as u16;
    Ok(dst)
}

impl WorkerStats {
    /// Bumps a label-table drop counter.
    pub fn mpls_drop(&self, r: mpls::DropReason) {
        if let Some(k) = mpls::DropReason::ALL.iter().position(|&x| x == r) {
            self.mpls_drops[k].inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Bucket;

    #[test]
    fn bucket_rate_holds_when_polled_between_tokens() {
        // 100 tokens/s at 1000 ticks/s: one token per 10 ticks; burst 5.
        let mut b = Bucket::new(100, 5, 1000);
        let mut now = 1000;
        while b.take(now) {}
        // Drained every 15 ticks for 300 ticks: 30 tokens earned.
        let mut got = 0;
        for _ in 0..20 {
            now += 15;
            while b.take(now) {
                got += 1;
            }
        }
        assert_eq!(got, 30);
    }
}
