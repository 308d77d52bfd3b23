//! The IPv6 lookup: one table is an [`Lpm6Table`], a binary trie of its routes on
//! the writer's side ([`Lpm6Trie`]) and, for lock-free readers, arrays of atomic
//! words (as in [`crate::lpm`]):
//! - `direct[key >> 112]`, one entry per /16 (256 KiB, L2-resident): a result id
//!   when nothing longer than /16 lies under it (shorter routes are expanded into
//!   the entries they cover), else the root of the /16's tree;
//! - `lines`, 64 bytes each, holding blocks: B+-trees over the elementary intervals
//!   of 32 key bits (the ranges between the boundaries of the routes, each holding
//!   its longest match) whose nodes are blocks. A block is a root line of 15
//!   separators, then up to 16 leaves, each a key line of 15 separators and a value
//!   line of 16 values: key `k` takes leaf `r = #{root separators <= k}`, found at
//!   line `block + 1 + 2r` (no child reference to load), then value lane
//!   `#{leaf separators <= k}`; each count is one SIMD compare of a line (AVX-512
//!   or AVX2, detected at run time; a scalar loop otherwise). A value is a result
//!   id or a reference to a block: a child (internal blocks), or the root of the
//!   next level's tree. A block thus has up to 256 lanes: a level-0 tree (bits
//!   16..48) holds every route of its /16 up to /48 exactly, in one block up to
//!   128 intervals (as built) and in two up to 32,768; a /48 block with longer
//!   routes is one interval whose value is the root of a level-1 tree over bits
//!   48..80, and so on (level 3: bits 112..128). Block 0 is the sink (value 0).
//!
//! A key reads one direct entry, then per block three lines (root, leaf keys,
//! leaf values): every /16 of the 2024 table is at most two blocks tall. The
//! batched lookup reads the direct entries and the /16 roots' blocks (few, and
//! cache-resident) in one pass, prefetching the next block's root line; a second
//! pass over the keys still in a level-0 tree is a pipeline: a key's root compare
//! runs 16 keys ahead of its leaf compare and prefetches the leaf's two lines, so
//! the misses of many keys overlap. The few keys under routes longer than /48
//! finish one by one. Packets to one network come in trains: a key of the
//! previous key's /48 takes its first answer, and below /48 a key whose 32 bits
//! at a block are the previous walk's takes that step's answer, so a train pays
//! for one walk. The line array has a power-of-two capacity (a reference is
//! masked to it, and padding lines past it keep every line a block can reach in
//! bounds, so the steps need no bounds checks): 8.25 MiB for the 2024 table
//! (54 bytes per prefix with the free room; `rte_fib6` needs 663).
//!
//! A route change rebuilds, in a copy of the lowest block whose range holds the
//! route's range, the leaves (or, in an internal block, the children's subtrees)
//! that range meets, split into more leaves or children as needed (`btree.rs`);
//! one release store of the copy's reference into its parent's lanes (or the
//! direct entry) publishes it, and the old block is reused after the readers'
//! grace period. Leaf blocks are built with 8 of their 16 leaves, so a change
//! copies about 17 lines. A reader reads each reference once, so it walks the old
//! block or the new one.
//!
//! Measured against DPDK (`benches/RESULTS-fib6.md`): about 1.8-2x `rte_fib6`'s
//! batched lookups on the full table, and about as fast with cache-resident keys.

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
