//! MPLS label switching for the dataplane: the label table, label operations,
//! reserved-label semantics, TTL models and RFC 4950 ICMP. Pure code: no DPDK, no
//! I/O, no `unsafe`; it takes bytes and table ids and returns decisions.
//!
//! # Who calls what
//!
//! Control thread (owns the one [`LabelTable`]):
//! * [`LabelTable::add`] / [`LabelTable::remove`] for `label add 100 eos via ...`:
//!   [`LabelAction::Forward`] (swap to one or more out-labels, implicit null = PHP,
//!   several paths = ECMP), [`LabelAction::Ip4Lookup`] ("via ip4-lookup-in-table N"),
//!   [`LabelAction::Ip6Lookup`] ("via ip6-lookup-in-table N": 6PE, 6VPE),
//!   [`LabelAction::IpLookup`] (either family by the payload's version nibble: a
//!   per-VRF label), [`LabelAction::Pop`] (non-eos: continue with the next
//!   label), `Drop`, `Punt`. Labels 0..=15 are built in and cannot be configured;
//!   [`LabelTable::set_explicit_null`] picks the table for labels 0 (IPv4) and 2
//!   (IPv6).
//! * [`LabelTable::reader`] once per worker.
//!
//! Worker, per vector: `let g = reader.pin();` then [`LabelGuard::switch`] per packet
//! (or [`LabelGuard::top`] and [`LabelGuard::switch_top`] when the caller has read
//! the top entry already) on frames whose EtherType was 0x8847, acting on the
//! [`MplsDecision`]s; [`LabelGuard::ttl_exceeded_reply`] for `TtlExpired`. Drop `g`
//! at the end of the vector: that is the reader's quiescent point. Labels imposed by
//! IPv4 routes live in the FIB (`fib`), which the router's IPv4 stage pushes.
//!
//! Offsets are layer-3 offsets into the frame buffer (where the label stack or IPv4
//! header starts); operations move them back (a swap to more labels) or forward (pop) and leave the
//! L2 header to the rewrite stage, which writes it in front of the new offset with the
//! EtherType the operation returned. With a DPDK mbuf, the headroom in front of
//! `data_off` is where pushed labels go.
#![forbid(unsafe_code)]

mod config;
mod decision;
mod hash;
pub mod icmp;
mod stack;
mod switch;
mod table;

pub use config::{
    ConfigError, DEFAULT_PIPE_TTL, LabelAction, NextHop, TtlMode, validate_action,
    validate_in_label, validate_out_labels,
};
pub use decision::{DropReason, MplsDecision, PuntReason};
pub use hash::{flow_hash, ip4_flow_hash};
pub use icmp::{IcmpError, build_time_exceeded};
pub use switch::Top;
pub use table::{DEFAULT_SLOTS, KEYS, LabelGuard, LabelReader, LabelTable, MAX_BUCKETS, key_of};
pub use wire::{Label, mpls::LSE_LEN};

/// Most out-labels of one swap path (a swap path fits one 64-byte slot: header,
/// adjacency and 14 labels).
pub const MAX_SWAP_LABELS: usize = 14;

/// Most label stack entries one pass walks (pops, entropy pairs, hashing, ICMP).
/// Deeper stacks are dropped with [`DropReason::StackTooDeep`].
pub const MAX_STACK_DEPTH: usize = 16;

/// Most paths of one ECMP entry.
pub const MAX_ECMP_PATHS: usize = 32;

/// The table of an [`LabelAction::Ip4Lookup`], [`LabelAction::Ip6Lookup`] or
/// [`LabelAction::IpLookup`] (and of explicit null) that means "the table of the
/// interface the packet came in on", as an unlabelled packet there would be
/// looked up.
pub const RX_TABLE: u32 = u32::MAX;

/// The table a popped packet is looked up in: `table`, or with
/// [`RX_TABLE`] the receiving interface's `rx_table`.
#[inline(always)]
pub fn lookup_table(table: u32, rx_table: u32) -> u32 {
    if table == RX_TABLE { rx_table } else { table }
}

/// Burst size the worker uses (= VPP's VLIB_FRAME_SIZE).
pub const BURST: usize = 256;
