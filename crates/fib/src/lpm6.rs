//! The IPv6 lookup: one table is an [`Lpm6Table`], a binary trie of its routes on
//! the writer's side ([`Lpm6Trie`]) and, for lock-free readers, arrays of atomic
//! words (as in [`crate::lpm`]):
//! - `direct[key >> 112]`, one entry per /16 (256 KiB, L2-resident): a result id
//!   when nothing longer than /16 lies under it (shorter routes are expanded into
//!   the entries they cover), else the root of the /16's tree;
//! - `nodes`, 128 bytes each: B+-tree nodes over the elementary intervals of 32 key
//!   bits (the ranges between the boundaries of the routes, each holding its longest
//!   match): 15 separator keys in the first cache line, 16 values in the second.
//!   Key `k` takes value lane `#{separators <= k}`, one SIMD compare of the key line
//!   (AVX-512 or AVX2, detected at run time; a scalar loop otherwise): a child, or
//!   in a leaf the interval's result id. A level-0 tree (bits 16..48) holds every
//!   route of its /16 up to /48 exactly; a /48 block with longer routes is one
//!   interval whose value is the root of a level-1 tree over bits 48..80, and so on
//!   (level 3: bits 112..128). Node 0 is the sink (every value 0).
//!
//! A key reads one direct entry, then one node per level of its tree: leaves are
//! built 12 intervals full, so a /16 of up to 1,536 routes is at most three nodes
//! tall and the largest /16s of the 2024 table (up to 20,151 routes) four; the
//! upper levels stay in L2, a key's leaf is about one last-level-cache line pair
//! (its value line is prefetched with its key line). The batched lookup walks the
//! burst level by level over the keys still in a level-0 tree (compacted after each
//! level), so the loads of one level are independent and their misses overlap; the
//! few keys under routes longer than /48 finish one by one. 3.6 MiB for the 2024
//! table (24 bytes per prefix, against 298 for the DIR-24-8-like table this
//! replaced).
//!
//! A route change rebuilds, in free nodes, the smallest subtree whose range holds
//! the route's range and whose height can take its new intervals (one leaf for most
//! changes) and swings it in with one release store of its reference into its
//! parent (or the direct entry) (`btree.rs`); the old nodes are reused after the
//! readers' grace period. A reader reads each reference once, so it walks the old
//! subtree or the new one.
//!
//! Measured against DPDK (`benches/RESULTS-fib6.md`): 1.3-1.45x `rte_fib6`'s
//! batched lookups on the full table (the DIR-24-8-like table: 0.82-0.89x; a
//! Poptrie before it: 0.68x); cache-resident keys 0.7-0.85x (the compare steps cost
//! instructions that DPDK's indexed steps do not).

mod btree;
mod simd;
mod table;
mod trie;

pub use btree::Lpm6Stats;
pub(crate) use btree::{Tree, TreeWriter};
pub use table::{Lpm6Reader, Lpm6Table};
pub use trie::Lpm6Trie;

/// Result ids must stay below this (values keep a flag bit beside them).
pub const LPM6_MAX_RESULT: u32 = 1 << 31;
/// Bits resolved by the direct level.
pub const LPM6_DIRECT_BITS: u32 = 16;
const DIRECT_BITS: u32 = LPM6_DIRECT_BITS;
