//! The forwarding core: one vector of packets through every node in one pass.
//!
//! The nodes, one file each, in the order a vector meets them (as VPP's graph,
//! with the next node of each packet in its metadata, [`Meta::next`]):
//!
//! | node | file | what it does |
//! |---|---|---|
//! | fast path | `core/fast.rs` | plain IPv4, label swap, PHP, pop + lookup in two walks |
//! | `ethernet-input` | `core/ethernet.rs` | receiving interface, MAC, EtherType |
//! | `mpls-lookup` | `core/mpls_lookup.rs` | swap, PHP, pop into IPv4, TTL expiry |
//! | `ip4-lookup` | `core/ip4_lookup.rs` | checks, batched LPM, ECMP, TTL, imposition |
//! | `ip6-lookup` | `core/ip6_lookup.rs` | checks, scope, batched LPM, ECMP, hop limit |
//! | `local` | `core/local.rs`, `core/local6.rs` | ARP, ND, echo, ICMP and ICMPv6 errors (RFC 4950), resolution |
//! | `rewrite` | `core/rewrite.rs` | L2 header of the adjacency, output port |
//!
//! The fast path takes the common cases first and calls the same per-packet steps
//! as the nodes (the header test, TTL and checksum, the ECMP hash and the label
//! stack of `ip4_lookup.rs`, the L2 writer of `rewrite.rs`); what it does not
//! finish it leaves to the nodes, untouched (they start at ethernet-input) or
//! where it stands (they resume at ip4-lookup or the rewrite). Each node walks
//! the whole vector, so its code and table lines stay hot, and counts calls,
//! packets and TSC cycles (`show run`). The caller then transmits per port (see
//! [`super::RouterWorker`]). Packets waiting for ARP are held in `core/hold.rs`;
//! sFlow (`core/sflow_hook.rs`) and the trace (`core/trace.rs`) observe.
//!
//! The core is generic over [`Packet`], so the same code runs on DPDK mbufs and, in
//! benchmarks, on plain buffers.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arc_swap::ArcSwap;
use crossbeam_queue::ArrayQueue;

use crate::dpdk::{BURST, tsc};
use crate::packet::{Packet, RxCsum};

use super::iface::{IfTable, Interface, PwEntry};
use super::reasons::{Discard, DropReason, PuntReason};
use super::stats::{Stage, TRACE_BYTES, TraceRecord, WorkerStats};

mod ethernet;
mod fast;
mod hold;
mod ip4_lookup;
mod ip6_lookup;
mod local;
mod local6;
mod mpls_lookup;
mod pw;
mod rewrite;
mod sflow_hook;
mod trace;
use ethernet::*;
use fast::{FWD_CACHE, FwdDec, LEG_CACHE, StageAcc};
pub use hold::{HOLD_BYTES, HOLD_PACKETS};
use ip4_lookup::*;
pub(super) use local::Bucket;
use rewrite::*;
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

/// `Meta::path` bit (above the stages') of a frame a pseudowire delivers to its
/// circuit; its `hash` is then the circuit's ifIndex (sFlow's output).
const PW_OUT: u8 = 1 << 7;
/// An out-label that pushes nothing (RFC 3032: implicit null, PHP).
const IMPLICIT_NULL: u32 = wire::Label::IMPLICIT_NULL.value();

/// Where a packet goes after the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Out {
    /// Transmit on this DPDK port.
    Tx(u16),
    /// Free it (already counted).
    #[default]
    Drop,
    /// Hand it to the control plane: why, and the interface it arrived on.
    Punt(PuntReason, u16),
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
    /// Packets wait for an IPv6 next hop (RFC 5549) no one has resolved: the
    /// control plane asks the host stack to (neighbour solicitation).
    Resolve6 {
        /// The incomplete adjacency.
        adj: u32,
    },
    /// An IPv6 neighbour's MAC, learned from neighbour discovery (a
    /// solicitation's source, an advertisement's target).
    Neighbor6 {
        /// Interface it was heard on.
        ifindex: u32,
        /// Its address.
        ip: Ipv6Addr,
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
    /// every packet goes through the nodes. Same results either way.
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

/// The node a packet goes to next (one value per packet, set by the node it leaves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Next {
    /// Freed (already counted).
    #[default]
    Drop,
    /// `ip4-lookup`.
    Ip4Lookup,
    /// `ip6-lookup`.
    Ip6Lookup,
    /// `mpls-lookup`.
    MplsLookup,
    /// `local`: ARP, packets for the router, ICMP errors, neighbour resolution
    /// (`Meta::local` says which).
    Local,
    /// `rewrite`: needs the L2 header of adjacency `adj`.
    Rewrite,
    /// Built completely (L2 included) by `local`: send on port `adj`.
    Ready,
    /// Forwarded by the fast path with only `rx_if` filled in (unless
    /// `Work::rx_one` says it for the whole vector; the adjacency is in
    /// `Work::fast_adj`), for the sFlow hook while sampling is on and no trace
    /// runs; true: it arrived labelled (its stack as received is kept).
    Fast(bool),
    /// To the control plane.
    Punt(PuntReason),
}

/// Per-packet state between stages.
#[derive(Debug, Clone, Copy, Default)]
struct Meta {
    next: Next,
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
    local: LocalJob,
    /// Flow hash from the MPLS stage (0 = compute from IPv4).
    hash: u32,
    /// Stages passed (bit per `Stage`), for the trace.
    path: u8,
    /// Why it was dropped (an ICMP error or ARP request may have taken its place).
    reason: Option<Discard>,
    /// The NIC's verdict on the IPv4 header checksum: for an IPv4 header right
    /// behind the L2 header only (one that came out from under a label is always
    /// checked here).
    csum: RxCsum,
}

impl Meta {
    /// The circuit's ifIndex of a frame a pseudowire delivers to it (see
    /// [`PW_OUT`]).
    #[inline(always)]
    fn pw_circuit(&self) -> Option<u32> {
        (self.next == Next::Ready && self.path & PW_OUT != 0).then_some(self.hash)
    }
}

/// What `local` does with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum LocalJob {
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
    /// IPv6 to one of our addresses (or neighbour discovery).
    ToUs6,
    /// ICMPv6 error: type, code, MTU (packet too big).
    Icmp6Error(u8, u8, u16),
    /// Solicit the IPv6 neighbour on this interface: adjacency `.1`'s, or
    /// (`u32::MAX`) the packet's destination; the packet becomes the solicitation.
    Solicit6(u32, u32),
}

/// Packets of the vector each node still has to take, counted by the nodes
/// before it (a node with none is skipped).
#[derive(Debug, Default)]
struct Pending {
    mpls: usize,
    ip4: usize,
    ip6: usize,
    local: usize,
}

/// A packet's frame as received: its length, the bytes kept and the first bytes
/// (as many as an sFlow header holds; a trace record shows fewer).
type RxHead = (u16, u16, [u8; sflow::HEADER_CAPACITY]);

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
    /// IPv6 destinations of the vector's ip6-lookup (big-endian order).
    keys6: Box<[u128; BURST]>,
    /// The packets of the fast path's IPv6 keys.
    sel6: [u16; BURST],
    fwd: [u32; BURST],
    sel: [u16; BURST],
    icmp: Bucket,
    arp_recent: [(u32, u64); 16],
    arp_retry_ticks: u64,
    /// How long after a request its answer is taken from a sender on no
    /// subnet of the interface (an onlink next hop).
    arp_answer_ticks: u64,
    ident: u16,
    /// What sFlow and the trace see of the vector.
    obs: Observe,
    /// Adjacencies decoded, kept while `seen` holds (see [`Rw`]).
    rw: [Rw; RW_CACHE],
    /// The fast path is on.
    fast: bool,
    /// FIB results decoded (fast path), then the legs of ECMP results by leg id.
    /// An entry holds while its tag is its key's in `fd_gen` (`fast::fd_tag`).
    fd: Box<[FwdDec; FWD_CACHE + LEG_CACHE]>,
    /// The generation of the valid `fd` entries, in the high half of a tag
    /// (never 0).
    fd_gen: u64,
    /// The FIB version and interface table that `rw` and `fd` were decoded from
    /// (they are dropped when either changes).
    seen: Option<(u64, Arc<IfTable>)>,
    /// Indices of the packets the nodes handle, ascending.
    slow: [u16; BURST],
    /// The keys of a forward run its adjacency did not take, handed back at the
    /// run's end (see `Work::forward_run`).
    held: [u16; BURST],
    /// The indices of the packets the fast path hands back (scratch kept here,
    /// taken out while the vector runs, so no vector clears its own).
    hback: Option<Box<[u16; BURST]>>,
    /// Packets the fast path handed to the nodes part-way (bit per packet).
    resumed: [u64; 4],
    /// Fast-path keys popped from under a label (bit per packet; a pop run marks
    /// its whole range): their window starts past the label, so the frame does
    /// not say.
    popped: [u64; 4],
    /// Fast-path keys whose Ethernet padding was cut, and the length of their
    /// window as received (see `fast::Padded`).
    padded: fast::Padded,
    /// `CoreConfig::nic_csum_ports`.
    nic_csum_ports: u64,
    /// Packets waiting for their next hop to resolve.
    hold: hold::Hold,
    /// The worker's copy of [`ip4_lookup::MARTIAN`] (the fast path's).
    martian: ip4_lookup::Martians,
}

/// What the observers of the core (sFlow, `core/sflow_hook.rs`; the trace,
/// `core/trace.rs`) need of a vector beyond each packet's metadata, and what
/// they ask the nodes to keep. The nodes write here only what a flag asks for.
struct Observe {
    /// Frames as received, per packet (allocated on first use): every packet of
    /// a traced vector, and, while sFlow may pick one, each packet the router
    /// answers or turns into a packet of its own (echo reply, ICMP error, ARP).
    rx_heads: Option<Box<[RxHead]>>,
    /// sFlow may pick a packet of this vector: `mpls-lookup` keeps each labelled
    /// packet's stack as received.
    keep_stacks: bool,
    /// The fast path notes, per packet it sends, what sFlow describes a pick
    /// from: [`Next::Fast`] and the adjacency (`fast_adj`). While a pick is
    /// possible.
    sflow_notes: bool,
    /// sFlow needs the receiving interface of every packet (`rx_one`, else each
    /// packet's `rx_if`): the rx samplers count by it, and a pick names it.
    sflow_rx_if: bool,
    /// sFlow samples on tx: record in `txs` the ifIndex each transit packet left
    /// by.
    tx_ifs: bool,
    /// Per packet the fast path sent while sFlow is on (`Next::Fast`): its
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
}

/// Whether held packet `h` (`bytes`: from its IPv4 header or label stack on)
/// still waits for its next hop: the lookup it resumes from would still glean or
/// find an incomplete adjacency.
fn held_waiting(view: &fib::FibView<'_>, h: &hold::Held, bytes: &[u8]) -> bool {
    let unresolved = |adj: u32| view.adjacency(adj).is_some_and(|a| !a.complete);
    match h.meta.next {
        // (a packet the router built is looked up as `route_local` does)
        Next::Ip4Lookup | Next::Local => {
            let Some(dst) = bytes.get(16..20) else {
                return false;
            };
            let dst = rd32(dst, 0);
            let fwd = view.lookup(h.meta.table, dst);
            let hash = if h.meta.next == Next::Local {
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
        Next::Ip6Lookup => {
            let Some(dst) = bytes.get(24..40) else {
                return false;
            };
            let mut a = [0u8; 16];
            a.copy_from_slice(dst);
            let fwd = view.lookup6(h.meta.table, u128::from_be_bytes(a));
            let leg = view.leg(fwd, h.meta.hash);
            match leg.action() {
                fib::Action::Glean => true,
                fib::Action::Forward => unresolved(leg.target()),
                _ => false,
            }
        }
        _ => unresolved(h.meta.adj),
    }
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
                keys6: Box::new([0; BURST]),
                sel6: [0; BURST],
                fwd: [0; BURST],
                sel: [0; BURST],
                icmp: Bucket::new(cfg.icmp_rate_pps, cfg.icmp_burst, tsc_hz),
                arp_recent: [(0, 0); 16],
                arp_retry_ticks: tsc_hz / 1000 * u64::from(cfg.arp_retry_ms),
                arp_answer_ticks: tsc_hz * 3,
                ident: 1,
                obs: Observe {
                    rx_heads: None,
                    keep_stacks: false,
                    sflow_notes: false,
                    sflow_rx_if: false,
                    tx_ifs: false,
                    rx_one: None,
                    txs: [0; BURST],
                    fast_adj: [0; BURST],
                    stacks: Box::new([[0; sflow_hook::LSE_BYTES]; BURST]),
                },
                rw: [Rw::default(); RW_CACHE],
                fast: cfg.fast_path,
                // (built on the heap: 133 KB is too much for a stack)
                fd: vec![FwdDec::default(); FWD_CACHE + LEG_CACHE]
                    .into_boxed_slice()
                    .try_into()
                    .unwrap_or_else(|_| unreachable!("the length is the array's")),
                fd_gen: 1 << 32,
                seen: None,
                slow: [0; BURST],
                held: [0; BURST],
                hback: Some(Box::new([0; BURST])),
                resumed: [0; 4],
                popped: [0; 4],
                padded: fast::Padded::default(),
                nic_csum_ports: cfg.nic_csum_ports,
                hold: hold::Hold::new(
                    cfg.hold_per_neighbor,
                    tsc_hz / 1000 * u64::from(cfg.hold_ms),
                ),
                martian: MARTIAN,
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

        if self.obs.tx_ifs {
            self.obs.txs[..n].fill(0);
        }
        let view = tables.fib.read();
        // The decoded adjacencies and FIB results of earlier vectors hold while the
        // FIB and the interface table are the ones they were decoded from.
        self.sync_caches(&view, &ifaces);

        self.obs.rx_one = None;
        // (each vector marks its own resumed packets: the fast path's handbacks)
        self.resumed = [0; 4];
        self.popped = [0; 4];
        self.padded.bits = [0; 4];
        // The fast path first; what it leaves goes through the nodes. A
        // traced vector takes the nodes whole (same fate for every
        // packet, and the trace shows each node it passed).
        let n_slow = if self.fast && !tracing {
            let notes = self.obs.sflow_notes;
            self.fast_ip4(pkts, out, n, ift, &view, &tables.labels, notes, &mut acc)
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

    /// The general path over the packets `self.slow[..n_slow]` of `pkts`: the
    /// nodes in order, each over the whole vector, from ethernet-input (or, for a
    /// packet marked resumed, the node its metadata names) to the rewrite.
    #[allow(clippy::too_many_arguments)]
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
        let t = tsc();
        let mut q = Pending::default();
        let n_eth = self.ethernet_input(pkts, n_slow, ift, view, &mut q);
        let mut t = acc.add(Stage::EthernetInput, n_eth, t);
        if q.mpls > 0 {
            self.mpls_lookup(pkts, n_slow, labels, ift, &mut q);
            t = acc.add(Stage::MplsLookup, q.mpls, t);
        }
        if q.ip4 > 0 {
            self.ip4_lookup(pkts, n_slow, ift, view, &mut q);
            t = acc.add(Stage::Ip4Lookup, q.ip4, t);
        }
        if q.ip6 > 0 {
            self.ip6_lookup(pkts, n_slow, ift, view, &mut q);
            t = acc.add(Stage::Ip6Lookup, q.ip6, t);
        }
        if q.local > 0 {
            self.local_node(pkts, n_slow, ift, view, labels, now);
            t = acc.add(Stage::Local, q.local, t);
        }
        let n_rw = self.rewrite_node(pkts, out, n_slow, ift, view);
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
        // (every released packet resumes: marked below)
        self.resumed = [0; 4];
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
            if m.next == Next::Drop || !p.set_window(hold::RESUME_AT, len) {
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
        self.obs.rx_one = None;
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

    /// Drops every decoded FIB result (`fd`): a new generation.
    fn fd_invalidate(&mut self) {
        self.fd_gen = self.fd_gen.wrapping_add(1 << 32);
        if self.fd_gen == 0 {
            // (wrapped: entries of generation 1 could look valid again)
            self.fd.fill(FwdDec::default());
            self.fd_gen = 1 << 32;
        }
    }
}

/// Drops a packet: its reason (for the trace) and its counters.
#[inline(always)]
fn drop_meta(stats: &WorkerStats, m: &mut Meta, r: DropReason) {
    m.next = Next::Drop;
    m.reason = Some(Discard::Core(r));
    stats.drops[r as usize].inc();
    stats.ifaces[usize::from(m.rx_if)].drops.inc();
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
