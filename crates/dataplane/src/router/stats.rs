//! A worker's counters: per stage (the data behind `show run`), per drop reason
//! (`show errors`), per interface. One writer (the worker), read by the control
//! thread while the worker runs.

use std::sync::atomic::AtomicU32;

use crossbeam_queue::ArrayQueue;

use crate::counters::Counter;

use super::reasons::{DropReason, PuntClass, PuntReason};

pub use router_state::{MAX_IFACES, MAX_PWS};

/// One pseudowire's counters in one worker.
#[derive(Debug, Default)]
pub struct PwCounters {
    /// Frames from the attachment circuit sent into the pseudowire.
    pub encap_pkts: Counter,
    /// Their bytes (the frames as received).
    pub encap_bytes: Counter,
    /// Frames from the pseudowire sent on the attachment circuit.
    pub decap_pkts: Counter,
    /// Their bytes (the frames as sent).
    pub decap_bytes: Counter,
    /// Frames dropped either way (down, over the MTU, bad payload).
    pub drops: Counter,
}

/// The stages of the forwarding path, in the order a vector goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Stage {
    /// rx from the queues.
    Rx,
    /// Ethernet parse, VLAN to sub-interface, MAC check, EtherType dispatch.
    EthernetInput,
    /// MPLS label lookup and swap/pop.
    MplsLookup,
    /// IPv4 header checks, LPM lookup, TTL, ECMP, label imposition.
    Ip4Lookup,
    /// IPv6 header checks, scope, LPM lookup, hop limit, ECMP, label imposition.
    Ip6Lookup,
    /// ARP answers and learning; local delivery; ICMP built by the router.
    Local,
    /// L2 rewrite from the adjacency.
    Rewrite,
    /// tx to the ports.
    Tx,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 8] = [
        Stage::Rx,
        Stage::EthernetInput,
        Stage::MplsLookup,
        Stage::Ip4Lookup,
        Stage::Ip6Lookup,
        Stage::Local,
        Stage::Rewrite,
        Stage::Tx,
    ];
    /// Number of stages.
    pub const COUNT: usize = Self::ALL.len();
    /// Name, VPP style.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Rx => "port-rx",
            Stage::EthernetInput => "ethernet-input",
            Stage::MplsLookup => "mpls-lookup",
            Stage::Ip4Lookup => "ip4-lookup",
            Stage::Ip6Lookup => "ip6-lookup",
            Stage::Local => "local",
            Stage::Rewrite => "rewrite",
            Stage::Tx => "port-tx",
        }
    }
}

/// One stage's counters.
#[derive(Debug, Default)]
pub struct StageCounters {
    /// Times the stage ran on a non-empty vector.
    pub calls: Counter,
    /// Packets it processed.
    pub pkts: Counter,
    /// TSC cycles spent in it.
    pub cycles: Counter,
}

/// Per-interface counters.
#[derive(Debug, Default)]
pub struct IfaceCounters {
    /// Packets received.
    pub rx_pkts: Counter,
    /// Bytes received.
    pub rx_bytes: Counter,
    /// Packets sent.
    pub tx_pkts: Counter,
    /// Bytes sent.
    pub tx_bytes: Counter,
    /// Packets dropped that arrived on the interface.
    pub drops: Counter,
    /// Punts from the interface the policer dropped, by `PuntClass as usize`.
    pub punt_policed: [Counter; PuntClass::COUNT],
}

/// Everything one worker counts.
#[derive(Debug)]
pub struct WorkerStats {
    /// Per stage, indexed by `Stage as usize`.
    pub stages: [StageCounters; Stage::COUNT],
    /// Per drop reason, indexed by `DropReason as usize`.
    pub drops: [Counter; DropReason::COUNT],
    /// Label-table drops, indexed like `mpls::DropReason::ALL`.
    pub mpls_drops: [Counter; mpls::DropReason::COUNT],
    /// Punts, indexed by `PuntReason as usize`.
    pub punts: [Counter; PuntReason::COUNT],
    /// Per interface, indexed by ifIndex.
    pub ifaces: Box<[IfaceCounters]>,
    /// Per pseudowire, by its index.
    pub pws: Box<[PwCounters]>,
    /// Loops run.
    pub loops: Counter,
    /// Loops that received packets.
    pub busy_loops: Counter,
    /// TSC cycles of loops that received packets.
    pub busy_cycles: Counter,
    /// Idle sleeps.
    pub idle_sleeps: Counter,
    /// Idle sleeps a port's frames ended (af_packet ports: the worker sleeps
    /// in `poll` on their sockets).
    pub rx_wakes: Counter,
    /// ICMP echo replies sent by the dataplane.
    pub echo_replies: Counter,
    /// ICMP errors sent (time exceeded, unreachable, frag needed).
    pub icmp_errors: Counter,
    /// ARP replies sent for our addresses.
    pub arp_replies: Counter,
    /// ARP requests sent to resolve neighbours.
    pub arp_requests: Counter,
    /// ARP replies, and requests for other addresses, heard on a link: the sender
    /// learned, the packet consumed.
    pub arp_consumed: Counter,
    /// Neighbour advertisements sent for our IPv6 addresses.
    pub nd_replies: Counter,
    /// Neighbour solicitations sent to resolve IPv6 neighbours.
    pub nd_requests: Counter,
    /// Neighbour advertisements heard on a link: the target learned, the
    /// packet consumed.
    pub nd_consumed: Counter,
    /// Packets the control thread sent through this worker (ARP probes).
    pub injected: Counter,
    /// Packets held while their next hop was resolved (see `core::hold`).
    pub held: Counter,
    /// Held packets sent on once their next hop resolved.
    pub hold_released: Counter,
    /// Packets still to trace (set by the control thread, counted down by the worker).
    pub trace_budget: AtomicU32,
    /// Trace records, oldest first (bounded; the control thread drains them).
    pub traces: ArrayQueue<TraceRecord>,
}

/// Bytes of a packet a trace record keeps (before and after processing).
pub const TRACE_BYTES: usize = 64;

/// One traced packet: what came in, which stages it went through, what left.
#[derive(Debug, Clone)]
pub struct TraceRecord {
    /// TSC when its vector was processed.
    pub tsc: u64,
    /// DPDK port it arrived on.
    pub rx_port: u16,
    /// Receiving interface (0 if none).
    pub rx_if: u32,
    /// Frame length as received.
    pub len_in: u16,
    /// First bytes as received.
    pub head_in: [u8; TRACE_BYTES],
    /// Stage names it passed, in order.
    pub stages: Vec<&'static str>,
    /// Decision: `tx portN`, `drop <reason>` or `punt <reason>`.
    pub decision: String,
    /// Frame length as sent (0 if not sent).
    pub len_out: u16,
    /// First bytes as sent.
    pub head_out: [u8; TRACE_BYTES],
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            stages: Default::default(),
            drops: std::array::from_fn(|_| Counter::new()),
            mpls_drops: std::array::from_fn(|_| Counter::new()),
            punts: Default::default(),
            ifaces: (0..MAX_IFACES).map(|_| IfaceCounters::default()).collect(),
            pws: (0..MAX_PWS).map(|_| PwCounters::default()).collect(),
            loops: Counter::new(),
            busy_loops: Counter::new(),
            busy_cycles: Counter::new(),
            idle_sleeps: Counter::new(),
            rx_wakes: Counter::new(),
            echo_replies: Counter::new(),
            icmp_errors: Counter::new(),
            arp_replies: Counter::new(),
            nd_replies: Counter::new(),
            nd_requests: Counter::new(),
            nd_consumed: Counter::new(),
            arp_requests: Counter::new(),
            arp_consumed: Counter::new(),
            injected: Counter::new(),
            held: Counter::new(),
            hold_released: Counter::new(),
            trace_budget: AtomicU32::new(0),
            traces: ArrayQueue::new(1024),
        }
    }
}

impl WorkerStats {
    /// A drop counter's value.
    pub fn drop_count(&self, r: DropReason) -> u64 {
        self.drops[r as usize].get()
    }

    /// A label-table drop counter's value.
    pub fn mpls_drop_count(&self, r: mpls::DropReason) -> u64 {
        mpls::DropReason::ALL
            .iter()
            .position(|&x| x == r)
            .map_or(0, |i| self.mpls_drops[i].get())
    }

    /// Sum of all drops.
    pub fn total_drops(&self) -> u64 {
        self.drops
            .iter()
            .chain(self.mpls_drops.iter())
            .map(Counter::get)
            .sum()
    }
}
