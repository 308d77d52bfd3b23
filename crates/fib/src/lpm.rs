//! The lookup structure: a Poptrie (Asai & Ohara, "Poptrie: A Compressed Trie with
//! Population Count for Fast and Scalable Software IP Routing Table Lookup", SIGCOMM
//! 2015), with a direct-pointing first level of [`DIRECT_BITS`] bits and 6-bit strides.
//!
//! Layout (all atomic words, see [`crate::arena`]):
//! - `direct[key >> (32 - DIRECT_BITS)]`, per region (/18), one of:
//!   - [`LEAF`] | result id: nothing longer than /18 in the region;
//!   - [`LNODE`] | the base in `leaves` of a *leaf-only node*, the region's 64
//!     children at /24 compressed: `leafvec` (two words) and the leaves of its runs
//!     (most regions of a real table: nothing longer than /24);
//!   - the base in `leaves` of a *block*: [`BLOCK_LEN`] entries, one per value of the
//!     key's bits 18..24, each a result id or [`DEEP`] | the index of the node that
//!     resolves the routes longer than /24 under it (regions with such routes: few in
//!     a real table, but every interface address makes one). A prefix up to /24 takes
//!     two dependent loads and no `popcnt`.
//! - `nodes` (from /24 down): [`NODE_WORDS`] words per node: `vector` (bit v: child v
//!   is a node), `leafvec` (bit v: a new run of equal leaves starts at child v), and
//!   `base0 | base1 << 32` (first leaf, first child node). A node's child nodes and its
//!   leaves are contiguous, so child v is found with one `popcnt` of the bits below v.
//! - `leaves`: result ids (the nodes' runs), leaf-only nodes and blocks.
//!
//! Updates never change the shape of a published node (its `vector`, `leafvec` and
//! bases) and a reader reads exactly one block entry or one leaf, so it always sees
//! one consistent answer for its address.
//! - A change of a route of /19 to /24 stores the block entries under it in place
//!   (one release store each) unless a node lies under it; in a leaf-only node, the
//!   leaves under it if its runs of equal leaves still fit the new values, else the
//!   region gets a new leaf-only node swung in with one release store.
//! - A change of a route longer than /24 is patched into its node
//!   ([`LpmWriter::patch`]): if the node's runs of equal leaves still fit the new
//!   values, the leaves under the prefix get their new result ids in place; otherwise
//!   a node at /24 is replaced by a new one sharing its children, swung in with one
//!   release store into the block entry.
//! - Anything else (routes of /18 or shorter, nodes added or removed) rebuilds the
//!   region under each changed direct entry into free space and swings the direct
//!   entry with one release store.
//!
//! Replaced blocks are reused after a grace period ([`crate::qsbr`]).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arena::{BlockAlloc, grow32, words32};
use crate::trie::{NIL, Trie, bit};

mod build;
mod lookup;
mod patch;

/// Bits resolved by the direct-pointing array (Poptrie's `s`).
pub const DIRECT_BITS: u32 = 18;
/// Flag of a direct entry that holds a result id.
pub(crate) const LEAF: u32 = 1 << 31;
/// Flag of a direct entry that holds the base of a leaf-only node (without either
/// flag: of a block).
pub(crate) const LNODE: u32 = 1 << 30;
/// Flag of a block entry that holds the index of a node rather than a result id, and
/// of a lookup in [`LpmArena::lookup_burst`]'s output that goes on below /24 from that
/// node (result ids and node indices stay below it).
const DEEP: u32 = 1 << 31;
/// Entries of a region block: one per value of the 6 bits below the direct bits.
const BLOCK_LEN: usize = 1 << STRIDE;
/// Bits a direct entry and its block resolve: the depth of the first nodes.
const BLOCK_END: u32 = DIRECT_BITS + STRIDE;
/// 64-bit words per node.
pub(crate) const NODE_WORDS: usize = 3;
const DIRECT_LEN: usize = 1 << DIRECT_BITS;
const STRIDE: u32 = 6;

/// The reader-visible part of one table.
#[derive(Debug)]
pub(crate) struct LpmArena {
    /// (an array of its fixed size: an index `key >> (32 - DIRECT_BITS)` needs no
    /// bounds check)
    direct: Box<[AtomicU32; DIRECT_LEN]>,
    /// (one element per node: a node index is checked against the arena once)
    nodes: Box<[Node]>,
    leaves: Box<[AtomicU32]>,
}

/// One node's words: `vector`, `leafvec`, `base0 | base1 << 32`.
type Node = [AtomicU64; NODE_WORDS];

/// `n` zeroed nodes, the first `old.len()` copied from `old`.
fn grow_nodes(old: &[Node], n: usize) -> Box<[Node]> {
    (0..n)
        .map(|i| {
            std::array::from_fn(|w| {
                AtomicU64::new(old.get(i).map_or(0, |o| o[w].load(Ordering::Relaxed)))
            })
        })
        .collect()
}

/// Index of the 6-bit chunk of `key` that starts at bit `offset` (zero-padded past 32).
#[inline(always)]
fn chunk(key: u32, offset: u32) -> u32 {
    (key << (offset & 31)) >> 26
}

/// `words` (made [`DIRECT_LEN`] long) as the direct array.
fn direct_array(words: Box<[AtomicU32]>) -> Box<[AtomicU32; DIRECT_LEN]> {
    match words.try_into() {
        Ok(a) => a,
        Err(_) => unreachable!("the direct array is made DIRECT_LEN words long"),
    }
}

/// Bits `0..=v` set.
#[inline(always)]
fn upto(v: u32) -> u64 {
    (2u64 << v).wrapping_sub(1)
}

impl LpmArena {
    fn new(nodes: usize, leaves: usize) -> Self {
        let direct = direct_array(words32(DIRECT_LEN));
        for d in direct.iter() {
            d.store(LEAF, Ordering::Relaxed);
        }
        Self {
            direct,
            nodes: grow_nodes(&[], nodes),
            leaves: words32(leaves),
        }
    }

    fn grown(&self, nodes: usize, leaves: usize) -> Self {
        Self {
            direct: direct_array(grow32(&self.direct[..], DIRECT_LEN)),
            nodes: grow_nodes(&self.nodes, nodes),
            leaves: grow32(&self.leaves, leaves),
        }
    }

    /// Bytes of the reader-visible arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.direct.len() * 4 + self.nodes.len() * NODE_WORDS * 8 + self.leaves.len() * 4
    }

    /// A same-sized deep copy (the writer continues in the copy).
    pub(crate) fn copy(&self) -> Self {
        self.grown(self.nodes.len(), self.leaves.len())
    }

    fn node(&self, idx: u32) -> (u64, u64, u64) {
        let [v, lv, b] = &self.nodes[idx as usize];
        (
            v.load(Ordering::Relaxed),
            lv.load(Ordering::Relaxed),
            b.load(Ordering::Relaxed),
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Child {
    Leaf(u32),
    /// Trie node at the child's depth, best result id above it.
    Node(u32, u32),
}

/// Writer-side state of one table's lookup structure.
#[derive(Debug)]
pub(crate) struct LpmWriter {
    nodes: BlockAlloc,
    leaves: BlockAlloc,
    /// Direct entries to rebuild at the next commit...
    dirty: Vec<u32>,
    dirty_bits: Vec<u64>,
    /// ...whatever their best short route: a longer route changed there. Without this
    /// bit only a short route covering the region changed, and the region is left as
    /// it is when its best short route stays the same.
    must_bits: Vec<u64>,
    /// Per region, the best route of length <= DIRECT_BITS covering it...
    best: Vec<u32>,
    /// ...valid unless this bit is set (a short route changed): then walk the trie.
    stale_bits: Vec<u64>,
    /// Routes longer than [`DIRECT_BITS`] changed since the last commit, at most one
    /// per region, with the route's trie node (or [`NIL`] if it was removed): each is
    /// patched into its region (see [`LpmWriter::patch`]). The node stays valid until
    /// the commit: only a change inside the same region could prune it, and that one
    /// turns the patch into a whole rebuild.
    patches: Vec<(u32, u8, u32)>,
    /// Regions with an entry in `patches`.
    patch_bits: Vec<u64>,
    stats: UpdateStats,
}

/// How the lookup structure took route changes, counted since the FIB was created
/// (all tables). See [`crate::Fib::update_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// Changes applied by storing new result ids into published block entries or
    /// leaves in place.
    pub in_place: u64,
    /// Changes applied by a new leaf-only node for the region, or by turning the
    /// region into one direct leaf, swung in with one store.
    pub new_block: u64,
    /// Changes applied by a new node at /24 with new leaves that shares the old
    /// node's children, swung into its block entry with one store.
    pub new_root: u64,
    /// Changes whose leaves already held the right values.
    pub unchanged: u64,
    /// /18 regions rebuilt whole from the trie: for routes of /18 or shorter, routes
    /// that add or remove nodes, and several changes in one region in one publication
    /// (compaction, which rebuilds everything, is not counted).
    pub regions: u64,
}

impl std::ops::AddAssign for UpdateStats {
    fn add_assign(&mut self, o: Self) {
        self.in_place += o.in_place;
        self.new_block += o.new_block;
        self.new_root += o.new_root;
        self.unchanged += o.unchanged;
        self.regions += o.regions;
    }
}

/// Result of a build step that ran out of space: grow and retry.
pub(crate) struct NeedSpace;

const MIN_NODES: usize = 1024;
const MIN_LEAVES: usize = 4096;

impl LpmWriter {
    pub(crate) fn new() -> (Self, LpmArena) {
        (
            Self {
                nodes: BlockAlloc::new(MIN_NODES, 0, 64),
                leaves: BlockAlloc::new(MIN_LEAVES, 0, 66),
                dirty: Vec::new(),
                dirty_bits: vec![0; DIRECT_LEN / 64],
                must_bits: vec![0; DIRECT_LEN / 64],
                best: vec![0; DIRECT_LEN],
                stale_bits: vec![u64::MAX; DIRECT_LEN / 64],
                patches: Vec::new(),
                patch_bits: vec![0; DIRECT_LEN / 64],
                stats: UpdateStats::default(),
            },
            LpmArena::new(MIN_NODES, MIN_LEAVES),
        )
    }

    /// Records a change of the route `addr/len`, stored at trie node `node` ([`NIL`]
    /// once removed). A route longer than [`DIRECT_BITS`] is patched into its region
    /// at the commit; a second one in the same region, or a shorter route, has the
    /// regions it covers rebuilt whole.
    pub(crate) fn mark(&mut self, addr: u32, len: u8, node: u32) {
        if u32::from(len) > DIRECT_BITS {
            let r = addr >> (32 - DIRECT_BITS);
            let (w, b) = ((r / 64) as usize, r % 64);
            if self.dirty_bits[w] & (1 << b) == 0 && self.patch_bits[w] & (1 << b) == 0 {
                self.patch_bits[w] |= 1 << b;
                self.patches.push((addr, len, node));
            } else {
                self.mark_region(r);
            }
            return;
        }
        let first = addr >> (32 - DIRECT_BITS);
        let count = if u32::from(len) >= DIRECT_BITS {
            1
        } else {
            1u32 << (DIRECT_BITS - u32::from(len))
        };
        let short = u32::from(len) <= DIRECT_BITS;
        for r in first..first + count {
            let (w, b) = ((r / 64) as usize, r % 64);
            if short {
                self.stale_bits[w] |= 1 << b;
            }
            if self.dirty_bits[w] & (1 << b) == 0 {
                self.dirty_bits[w] |= 1 << b;
                self.dirty.push(r);
            }
        }
    }

    pub(crate) fn has_dirty(&self) -> bool {
        !self.dirty.is_empty() || !self.patches.is_empty()
    }

    pub(crate) fn stats(&self) -> UpdateStats {
        self.stats
    }

    /// Marks region `r` for a whole rebuild.
    fn mark_region(&mut self, r: u32) {
        let (w, b) = ((r / 64) as usize, r % 64);
        self.must_bits[w] |= 1 << b;
        if self.dirty_bits[w] & (1 << b) == 0 {
            self.dirty_bits[w] |= 1 << b;
            self.dirty.push(r);
        }
    }

    /// Doubles the arrays (at least): the caller continues in the returned copy.
    fn grow(&mut self, a: &LpmArena) -> LpmArena {
        let nodes = (self.nodes.cap() * 2).max(self.nodes.top() + 64);
        let leaves = (self.leaves.cap() * 2).max(self.leaves.top() + 66);
        self.nodes.set_cap(nodes);
        self.leaves.set_cap(leaves);
        a.grown(nodes, leaves)
    }

    /// Rebuilds every marked direct entry from `trie` into `arena`. If the arena is too
    /// small, returns a grown copy to continue in (the caller publishes it).
    pub(crate) fn commit(&mut self, trie: &Trie, arena: &LpmArena, tag: u64) -> Option<LpmArena> {
        let mut grown: Option<LpmArena> = None;
        let mut patches = std::mem::take(&mut self.patches);
        for &(addr, len, node) in &patches {
            let r = addr >> (32 - DIRECT_BITS);
            let (w, b) = ((r / 64) as usize, r % 64);
            self.patch_bits[w] &= !(1 << b);
            if self.dirty_bits[w] & (1 << b) != 0 {
                self.must_bits[w] |= 1 << b; // rebuilt whole below
                continue;
            }
            loop {
                let a = grown.as_ref().unwrap_or(arena);
                match self.patch(trie, a, addr, len, node, tag) {
                    Ok(true) => break,
                    Ok(false) => {
                        self.mark_region(r);
                        break;
                    }
                    Err(NeedSpace) => grown = Some(self.grow(a)),
                }
            }
        }
        patches.clear();
        self.patches = patches;
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        for &r in &dirty {
            self.dirty_bits[(r / 64) as usize] &= !(1 << (r % 64));
            loop {
                let a = grown.as_ref().unwrap_or(arena);
                match self.rebuild_region(trie, a, r, tag) {
                    Ok(()) => break,
                    Err(NeedSpace) => grown = Some(self.grow(a)),
                }
            }
        }
        dirty.clear();
        self.dirty = dirty;
        grown
    }

    pub(crate) fn reclaim(&mut self, safe: u64) {
        self.nodes.reclaim(safe);
        self.leaves.reclaim(safe);
    }

    /// True when the arena is mostly empty space and worth rebuilding compactly.
    pub(crate) fn wants_compaction(&self) -> bool {
        let cap = self.nodes.cap() + self.leaves.cap();
        let used = self.nodes.live() + self.leaves.live();
        cap > 4 * (MIN_NODES + MIN_LEAVES) && used * 4 < cap
    }
}
