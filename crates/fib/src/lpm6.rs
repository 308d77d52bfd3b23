//! The IPv6 lookup: one table is an [`Lpm6Table`], a binary trie of its routes on
//! the writer's side ([`Lpm6Trie`]) and, for lock-free readers, arrays laid out as
//! DPDK's DIR-24-8 tables and `rte_fib6`'s trie are (all atomic words, as in
//! [`crate::lpm`]):
//! - `octant[key >> 125]`: where the direct entries of that eighth of the address
//!   space start, and the mask of the key bits that index them: an eighth with a
//!   route longer than /3 gets 2^21 entries, any other one entry. A real table only
//!   has routes in 2000::/3, so the 24-bit direct level costs 8 MiB, not 64;
//! - `direct`: [`LEAF`] | result id when nothing longer than /24 lies under the
//!   entry, else the index of the node that resolves the next 8 bits;
//! - `nodes`: 256 entries each, the same kind of value. Node 0 is the [`SINK`]
//!   (every entry a leaf of result 0), where a finished walk idles.
//!
//! A lookup reads one octant word (L1-resident), one direct entry, then one entry
//! per 8 bits. The batched lookup walks the whole burst level by level down to /48
//! (nearly every route of a real table) with no branch on the key, so the loads of
//! one level are independent and their cache misses overlap; only keys under longer
//! routes walk on. Route changes are single-entry release stores (`flat.rs`).
//!
//! A Poptrie of the same direct level (8-bit nodes compressed with `popcnt`, 83
//! bytes per prefix against 298) was measured and dropped: 0.68x `rte_fib6`'s
//! lookups against 0.85-0.89x, and its updates (nodes rewritten and swung in) ran at
//! 290-413 k changes/s against 0.67-1.3 M (`benches/RESULTS-fib6.md`).

mod flat;
mod table;
mod trie;

pub use flat::Lpm6Stats;
pub(crate) use flat::{Flat, FlatWriter};
pub use table::{Lpm6Reader, Lpm6Table};
pub use trie::Lpm6Trie;

/// Result ids must stay below this (entries keep a flag bit beside them).
pub const LPM6_MAX_RESULT: u32 = 1 << 31;
/// Bits resolved by the direct level.
pub const LPM6_DIRECT_BITS: u32 = 24;
/// Bits resolved by each node below it.
pub const LPM6_STRIDE: u32 = 8;
/// Bits that pick an eighth of the address space, each with a direct block of its
/// own only if routes longer than /3 lie in it (global unicast, 2000::/3, holds
/// every route of a real table).
const OCTANT_BITS: u32 = 3;
/// Flag of an entry that holds a result id.
const LEAF: u32 = 1 << 31;
/// Node 0: every entry a leaf of result 0. A walk that reached its leaf idles here.
const SINK: u32 = 0;
