//! The router: interfaces, the forwarding core that carries a vector of packets
//! through every stage in one pass (IPv4 routing and MPLS switching), the DPDK worker
//! loop around it, and the counters the control plane reads.

mod control;
mod core;
mod iface;
mod reasons;
pub mod report;
mod sessions;
mod stats;
mod worker;

pub use control::{Pw, RouteSource, RouterControl, RouterError, RouterState, WorkerHandle};
pub use core::{Core, CoreConfig, Event, HOLD_BYTES, HOLD_PACKETS, Out, SflowHook, Tables};
pub use iface::{IfTable, Interface, PwEntry};
pub use reasons::{Discard, DropReason, PuntClass, PuntReason};
pub use router_state::neigh::{ArpProbe, NeighborAging};
pub use sessions::Sessions;
pub use stats::{
    IfaceCounters, MAX_IFACES, MAX_PWS, PwCounters, Stage, StageCounters, TRACE_BYTES, TraceRecord,
    WorkerStats,
};
pub use worker::{InjectQueue, PuntQueue, PuntRates, PuntSignal, RouterWorker, WorkerWake};
