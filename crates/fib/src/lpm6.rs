//! The IPv6 lookup: one table is an [`Lpm6Table`], a binary trie of its routes on
//! the writer's side ([`Lpm6Trie`]) and, for lock-free readers, arrays of atomic
//! words (as in [`crate::lpm`]):
//! - `direct[key >> 112]`, one entry per /16: a result id when nothing longer than
//!   /16 lies under it (shorter routes are expanded into the entries they cover),
//!   else the reference of the /16's tree;
//! - `nodes`, 128 bytes each: a B+-tree node over the elementary intervals of 32 key
//!   bits (the intervals between the boundaries of the routes, each with its longest
//!   match): 15 separator keys in the first cache line, 16 values in the second. Key
//!   `k` takes value lane `#{separators <= k}` (one SIMD compare of the line): a
//!   child node, or in a leaf the interval's result id. A level-0 tree (bits 16..48)
//!   holds every route of its /16 up to /48 exactly; a /48 block with longer routes
//!   is one interval whose value is the root of a level-1 tree over bits 48..80, and
//!   so on (level 3: bits 112..128). Node 0 is the sink (every value 0).
//!
//! A lookup reads one direct entry (the 256 KiB direct array stays in L2) and one
//! node per level of its tree: on the 2024 table the trees are built at most four
//! nodes tall, whose upper levels also stay in L2, so a key costs about one
//! last-level-cache line pair (its leaf). The batched lookup walks the whole burst
//! level by level down the level-0 trees with no branch on the key (finished keys
//! read the sink), so the loads of one level are independent and their cache misses
//! overlap; the few keys under routes longer than /48 then finish one by one.
//!
//! A route change rebuilds, in free nodes, the smallest subtree whose range holds
//! the route's range and that can take its new intervals (usually one leaf: leaves
//! are built 12 intervals full of 16) and swings it in with one release store
//! (`btree.rs`); the old nodes are reused after the readers' grace period.
//!
//! Replaced: a DIR-24-8-like layout (24-bit direct level, 8-bit nodes; 298 bytes per
//! prefix, four dependent cache misses per key down to /48: 0.82-0.89x `rte_fib6`)
//! and, before it, a Poptrie (0.68x) (`benches/RESULTS-fib6.md`).

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
