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

    /// Walks from node `idx` (entered at bit `offset`) to a leaf.
    #[inline(always)]
    fn walk(&self, key: u32, mut idx: u32, mut offset: u32) -> u32 {
        loop {
            match self.child(key, idx, offset) {
                Ok(leaf) => return leaf,
                Err(next) => {
                    idx = next;
                    offset += STRIDE;
                }
            }
        }
    }

    /// Longest-prefix match of one key: the result id, 0 if nothing matches.
    #[inline]
    pub(crate) fn lookup(&self, key: u32) -> u32 {
        let d = self.direct_entry(key);
        if d & LEAF != 0 {
            return d & !LEAF;
        }
        if d & LNODE != 0 {
            return self.leaf_block(key, d & !LNODE);
        }
        let e = self.block_entry(key, d);
        if e & DEEP != 0 {
            self.walk(key, e & !DEEP, BLOCK_END)
        } else {
            e
        }
    }

    /// The entry of `key` in the region block at `base`: a result id, or [`DEEP`] |
    /// the node to go on from. Past the arena: no match.
    #[inline(always)]
    fn block_entry(&self, key: u32, base: u32) -> u32 {
        self.leaves
            .get(base as usize + chunk(key, DIRECT_BITS) as usize)
            .map_or(0, |l| l.load(Ordering::Acquire))
    }

    /// The leaf of `key` in the leaf-only node at `base` (see [`LNODE`]).
    #[inline(always)]
    fn leaf_block(&self, key: u32, base: u32) -> u32 {
        let b = base as usize;
        let Some(w) = self.leaves.get(b..b + 2) else {
            return 0;
        };
        let lv =
            u64::from(w[0].load(Ordering::Relaxed)) | u64::from(w[1].load(Ordering::Relaxed)) << 32;
        let i = base
            .wrapping_add(1)
            .wrapping_add((lv & upto(chunk(key, DIRECT_BITS))).count_ones());
        self.leaves
            .get(i as usize)
            .map_or(0, |l| l.load(Ordering::Acquire))
    }

    /// Batched lookup of `min(keys.len(), out.len())` keys.
    ///
    /// Two passes over the burst: one reads every key's direct entry, the next takes
    /// every key to its leaf or block entry (the answer for prefixes up to /24), and the walks
    /// below /24 go on out of line (longer prefixes are rare in real tables). The loads
    /// of each pass are independent, so the core keeps many cache misses in flight
    /// (what software prefetch buys `rte_lpm` and VPP) without `unsafe` prefetch
    /// intrinsics.
    #[inline]
    pub(crate) fn lookup_burst(&self, keys: &[u32], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.direct_entry(*k);
        }
        // Keys whose walk goes on below /24 keep their block entry (DEEP | node) in
        // `out` and a bit in `deep` (past its 256 bits: `far`), for a pass of their
        // own: this loop makes no call, so it keeps its values in registers.
        let (mut deep, mut far) = ([0u64; 4], false);
        for (j, (k, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let d = *o;
            if d & LEAF != 0 {
                *o = d & !LEAF;
            } else if d & LNODE != 0 {
                *o = self.leaf_block(*k, d & !LNODE);
            } else {
                let e = self.block_entry(*k, d);
                if e & DEEP != 0 {
                    match deep.get_mut(j / 64) {
                        Some(w) => *w |= 1 << (j % 64),
                        None => far = true,
                    }
                }
                *o = e;
            }
        }
        if deep != [0; 4] || far {
            self.walk_deep(keys, out, deep, far);
        }
    }

    /// The walks [`LpmArena::lookup_burst`] left below /24: the keys of the bits
    /// in `deep`, and with `far` every key past 256 whose `out` has [`DEEP`].
    /// Out of line: prefixes longer than /24 are rare.
    #[inline(never)]
    fn walk_deep(&self, keys: &[u32], out: &mut [u32], deep: [u64; 4], far: bool) {
        let n = keys.len().min(out.len());
        let mut go_on = |j: usize| {
            if let (Some(k), Some(o)) = (keys.get(j), out.get_mut(j)) {
                if *o & DEEP != 0 {
                    *o = self.walk(*k, *o & !DEEP, BLOCK_END);
                }
            }
        };
        for (w, mut bits) in deep.into_iter().enumerate() {
            while bits != 0 {
                go_on(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        if far {
            (256..n).for_each(go_on);
        }
    }

    /// Child of `key` in node `idx` entered at bit `offset`: its leaf, or
    /// (`Err`) the node to go down to (one branch on the child: a leaf needs the
    /// leaf vector, a node does not). A node index past the arena reads as no
    /// match.
    #[inline(always)]
    fn child(&self, key: u32, idx: u32, offset: u32) -> Result<u32, u32> {
        let Some([w_vector, w_leafvec, w_bases]) = self.nodes.get(idx as usize) else {
            return Ok(0);
        };
        let vector = w_vector.load(Ordering::Relaxed);
        let leafvec = w_leafvec.load(Ordering::Relaxed);
        let bases = w_bases.load(Ordering::Relaxed);
        let v = chunk(key, offset);
        let below = upto(v);
        if vector & (1u64 << v) != 0 {
            return Err(((bases >> 32) as u32)
                .wrapping_add((vector & below).count_ones())
                .wrapping_sub(1));
        }
        let li = (bases as u32)
            .wrapping_add((leafvec & below).count_ones())
            .wrapping_sub(1);
        Ok(self
            .leaves
            .get(li as usize)
            .map_or(0, |l| l.load(Ordering::Acquire)))
    }

    #[inline(always)]
    fn direct_entry(&self, key: u32) -> u32 {
        self.direct
            .get((key >> (32 - DIRECT_BITS)) as usize)
            .map_or(LEAF, |d| d.load(Ordering::Acquire))
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

    /// Applies the change of route `addr/len` (longer than [`DIRECT_BITS`]) to its
    /// region without rebuilding the region: only the entries of the one block or node
    /// whose stride holds the prefix's last bit change, and only those under the
    /// prefix (its *span*). Their new values come from the trie below the prefix
    /// (usually just the prefix's own node, `node`); for a removed route (`node` is
    /// [`NIL`]), from the best route above it on the path down from the region's trie
    /// node. The other entries keep the values the arena holds.
    ///
    /// - Up to /24 in a block ([`LpmWriter::patch_block`]): the entries are stored in
    ///   place; in a leaf-only node or a direct leaf: [`LpmWriter::patch_leaf_only`].
    /// - Longer: if the new values fit the node's runs of equal leaves (each run still
    ///   holds one value), the changed leaves are stored in place: a lookup reads one
    ///   leaf, so it sees the old or the new answer, never a mix. Otherwise a node at
    ///   /24 gets a new node sharing its children, swung into the block entry with one
    ///   release store; the old node and its leaves are retired.
    ///
    /// Returns `Ok(false)` when the change needs nodes added or removed, or lies under
    /// a deeper node whose runs change; the caller then rebuilds the region whole.
    fn patch(
        &mut self,
        trie: &Trie,
        arena: &LpmArena,
        addr: u32,
        len: u8,
        node: u32,
        tag: u64,
    ) -> Result<bool, NeedSpace> {
        let r = addr >> (32 - DIRECT_BITS);
        let len = u32::from(len);
        let d = arena.direct[r as usize].load(Ordering::Relaxed);
        if len <= BLOCK_END {
            // The span under the prefix in the region's stride (bits 18..24).
            let steps = len - DIRECT_BITS;
            let span = 1usize << (STRIDE - steps);
            let c0 = chunk(addr, DIRECT_BITS) as usize & !(span - 1);
            let Some(kids) = self.span_values(trie, r, (addr, len), node, steps, c0, span) else {
                return Ok(false);
            };
            return if d & (LEAF | LNODE) == 0 {
                self.patch_block(arena, (r, d), c0, span, &kids, tag)
            } else {
                self.patch_leaf_only(arena, (r, d), c0, span, &kids, tag)
            };
        }
        if d & (LEAF | LNODE) != 0 {
            return Ok(false); // no block yet: the region gets its first node
        }
        // The block entry over the prefix, and the node whose stride holds bit
        // `len - 1`.
        let entry = d as usize + chunk(addr, DIRECT_BITS) as usize;
        let Some(e) = arena.leaves.get(entry).map(|l| l.load(Ordering::Relaxed)) else {
            return Ok(false);
        };
        if e & DEEP == 0 {
            return Ok(false);
        }
        let level = (len - BLOCK_END - 1) / STRIDE;
        let depth = BLOCK_END + level * STRIDE;
        let mut idx = e & !DEEP;
        for l in 0..level {
            let (vector, _, bases) = arena.node(idx);
            let v = chunk(addr, BLOCK_END + l * STRIDE);
            if vector & (1 << v) == 0 {
                return Ok(false);
            }
            idx = ((bases >> 32) as u32) + (vector & upto(v)).count_ones() - 1;
        }
        let steps = len - depth;
        let span = 1usize << (STRIDE - steps);
        let c0 = chunk(addr, depth) as usize & !(span - 1);
        let (vector, leafvec, bases) = arena.node(idx);
        let first = bases as usize;
        if vector & span_mask(c0, span) != 0 {
            return Ok(false); // a node under the prefix: its subtree changes too
        }
        let Some(kids) = self.span_values(trie, r, (addr, len), node, steps, c0, span) else {
            return Ok(false);
        };
        let nruns = leafvec.count_ones() as usize;
        let Some(runs) = arena.leaves.get(first..first + nruns) else {
            return Ok(false);
        };
        match fit_runs(runs, vector, leafvec, c0, span, &kids) {
            None => return Ok(false),
            Some(Runs::Unchanged) => {
                self.stats.unchanged += 1;
                return Ok(true);
            }
            Some(Runs::Fit { j0, n, vals }) => {
                store_changed(&runs[j0..j0 + n], &vals[..n]);
                self.stats.in_place += 1;
                return Ok(true);
            }
            Some(Runs::Split) if level != 0 => return Ok(false), // only a node at /24 swings
            Some(Runs::Split) => {}
        }
        let old = load_runs(runs);
        let (vals, _) = new_values(&old[..nruns], vector, leafvec, c0, span, &kids);
        let (new_lv, leaves, nleaves) = compress(&vals, vector);
        let base0 = self.leaves.alloc(nleaves).map_err(|_| NeedSpace)?;
        let slot = match self.nodes.alloc(1) {
            Ok(s) => s,
            Err(_) => {
                self.leaves.free_now(base0, nleaves);
                return Err(NeedSpace);
            }
        };
        for (i, &x) in leaves[..nleaves].iter().enumerate() {
            arena.leaves[base0 as usize + i].store(x, Ordering::Relaxed);
        }
        let [v, lv, b] = &arena.nodes[slot as usize];
        v.store(vector, Ordering::Relaxed);
        lv.store(new_lv, Ordering::Relaxed);
        b.store(
            u64::from(base0) | bases & 0xffff_ffff_0000_0000,
            Ordering::Relaxed,
        );
        arena.leaves[entry].store(slot | DEEP, Ordering::Release);
        // The children now belong to the new node: retire only the old node and its
        // leaves.
        self.nodes.retire(idx, 1, tag);
        self.leaves.retire(first as u32, nruns, tag);
        self.stats.new_root += 1;
        Ok(true)
    }

    /// [`LpmWriter::patch`] for a route of /19 to /24 in region `r` whose direct
    /// entry `d` is a block, `kids` the new values of its span `c0..c0 + span`: the
    /// block entries under it get them in place, and a block left with one value
    /// everywhere becomes a direct leaf.
    fn patch_block(
        &mut self,
        arena: &LpmArena,
        (r, d): (u32, u32),
        c0: usize,
        span: usize,
        kids: &[Child; 64],
        tag: u64,
    ) -> Result<bool, NeedSpace> {
        let Some(block) = arena.leaves.get(d as usize..d as usize + BLOCK_LEN) else {
            return Ok(false);
        };
        let mut vals = [0u32; BLOCK_LEN];
        for (v, k) in kids.iter().enumerate().skip(c0).take(span) {
            match *k {
                // (a node under the prefix, or routes below /24 under it now)
                Child::Node(..) => return Ok(false),
                Child::Leaf(_) if block[v].load(Ordering::Relaxed) & DEEP != 0 => {
                    return Ok(false);
                }
                Child::Leaf(x) => vals[v] = x,
            }
        }
        let value = |v: usize| {
            if (c0..c0 + span).contains(&v) {
                vals[v]
            } else {
                block[v].load(Ordering::Relaxed)
            }
        };
        let v0 = value(0);
        if v0 & DEEP == 0 && (1..BLOCK_LEN).all(|v| value(v) == v0) {
            // Nothing left to tell apart: the region becomes a direct leaf.
            self.swing(arena, r, LEAF | v0, d, tag);
            self.stats.new_block += 1;
            return Ok(true);
        }
        if store_changed(&block[c0..c0 + span], &vals[c0..c0 + span]) {
            self.stats.in_place += 1;
        } else {
            self.stats.unchanged += 1;
        }
        Ok(true)
    }

    /// [`LpmWriter::patch`] for a route of /19 to /24 in region `r` whose direct
    /// entry `d` is a leaf-only node or a direct leaf, `kids` the new values of its
    /// span `c0..c0 + span`: the leaves under the prefix in place if the node's runs
    /// still fit, else a new leaf-only node (or a direct leaf when one value is left)
    /// swung in with one release store.
    fn patch_leaf_only(
        &mut self,
        arena: &LpmArena,
        (r, d): (u32, u32),
        c0: usize,
        span: usize,
        kids: &[Child; 64],
        tag: u64,
    ) -> Result<bool, NeedSpace> {
        if kids[c0..c0 + span]
            .iter()
            .any(|k| matches!(k, Child::Node(..)))
        {
            return Ok(false); // the prefix now has routes below /24
        }
        // The runs of equal leaves: a direct leaf is one run (and new runs follow).
        let (leafvec, old, nruns) = if d & LEAF != 0 {
            let mut old = [0u32; 64];
            old[0] = d & !LEAF;
            (1u64, old, 1)
        } else {
            let b = (d & !LNODE) as usize;
            let Some(w) = arena.leaves.get(b..b + 2) else {
                return Ok(false);
            };
            let lv = u64::from(w[0].load(Ordering::Relaxed))
                | u64::from(w[1].load(Ordering::Relaxed)) << 32;
            let nruns = lv.count_ones() as usize;
            let Some(runs) = arena.leaves.get(b + 2..b + 2 + nruns) else {
                return Ok(false);
            };
            let old = load_runs(runs);
            match fit_runs(runs, 0, lv, c0, span, kids) {
                None => return Ok(false),
                Some(Runs::Unchanged) => {
                    self.stats.unchanged += 1;
                    return Ok(true);
                }
                Some(Runs::Fit { j0, n, vals }) => {
                    let value = |j: usize| {
                        if (j0..j0 + n).contains(&j) {
                            vals[j - j0]
                        } else {
                            old[j]
                        }
                    };
                    if (1..nruns).all(|j| value(j) == value(0)) {
                        // Nothing left to tell apart: the region becomes a direct leaf.
                        self.swing(arena, r, LEAF | value(0), d, tag);
                        self.stats.new_block += 1;
                    } else {
                        store_changed(&runs[j0..j0 + n], &vals[..n]);
                        self.stats.in_place += 1;
                    }
                    return Ok(true);
                }
                Some(Runs::Split) => (lv, old, nruns),
            }
        };
        let (vals, changed) = new_values(&old[..nruns], 0, leafvec, c0, span, kids);
        if !changed {
            self.stats.unchanged += 1;
            return Ok(true);
        }
        let new = self.leaf_only(arena, &vals)?;
        self.swing(arena, r, new, d, tag);
        self.stats.new_block += 1;
        Ok(true)
    }

    /// The direct entry for a region whose 64 children at /24 are the leaves `vals`:
    /// a direct leaf if they hold one value, else a new leaf-only node.
    fn leaf_only(&mut self, arena: &LpmArena, vals: &[u32; 64]) -> Result<u32, NeedSpace> {
        let (leafvec, leaves, nleaves) = compress(vals, 0);
        if nleaves == 1 {
            return Ok(LEAF | leaves[0]);
        }
        let base = self.leaves.alloc(2 + nleaves).map_err(|_| NeedSpace)?;
        let b = base as usize;
        arena.leaves[b].store(leafvec as u32, Ordering::Relaxed);
        arena.leaves[b + 1].store((leafvec >> 32) as u32, Ordering::Relaxed);
        for (i, &x) in leaves[..nleaves].iter().enumerate() {
            arena.leaves[b + 2 + i].store(x, Ordering::Relaxed);
        }
        Ok(LNODE | base)
    }

    /// The new children of the span `c0..c0 + span` of the stride that holds bit
    /// `len - 1` of `addr` (`steps` bits below the stride's top), from the route's
    /// trie node `node`, or for a removed route ([`NIL`]) from the best route above it
    /// on the path down from region `r`'s trie node. `None` when that is not known
    /// here (a short route changed too, or the region empties).
    #[allow(clippy::too_many_arguments)]
    fn span_values(
        &self,
        trie: &Trie,
        r: u32,
        (addr, len): (u32, u32),
        node: u32,
        steps: u32,
        c0: usize,
        span: usize,
    ) -> Option<[Child; 64]> {
        let (n, best) = if node != NIL {
            (node, trie.node(node).fwd)
        } else {
            let (w, b) = ((r / 64) as usize, r % 64);
            let region = trie.region_node(r);
            if self.stale_bits[w] & (1 << b) != 0 || region == NIL {
                return None;
            }
            let mut best = self.best[r as usize];
            let mut n = region;
            let mut at = DIRECT_BITS;
            loop {
                let t = trie.node(n);
                if t.route != NIL {
                    best = t.fwd;
                }
                if at == len {
                    break;
                }
                let c = t.child[bit(addr, at)];
                if c == NIL {
                    n = NIL;
                    break;
                }
                n = c;
                at += 1;
            }
            (n, best)
        };
        let mut kids = [Child::Leaf(best); 64];
        if n != NIL {
            expand(trie, n, steps, c0 / span, best, &mut kids);
        }
        Some(kids)
    }

    /// Stores direct entry `new` for region `r` in place of `old`, which is retired.
    fn swing(&mut self, arena: &LpmArena, r: u32, new: u32, old: u32, tag: u64) {
        arena.direct[r as usize].store(new, Ordering::Release);
        self.retire_region(arena, old, tag);
    }

    /// Retires what direct entry `old` held: a leaf-only node, or a block with the
    /// nodes under it.
    fn retire_region(&mut self, arena: &LpmArena, old: u32, tag: u64) {
        if old & LEAF != 0 {
            return;
        }
        if old & LNODE != 0 {
            let b = (old & !LNODE) as usize;
            let lv = arena.leaves[b].load(Ordering::Relaxed).count_ones()
                + arena.leaves[b + 1].load(Ordering::Relaxed).count_ones();
            self.leaves.retire(old & !LNODE, 2 + lv as usize, tag);
            return;
        }
        let b = old as usize;
        for l in &arena.leaves[b..b + BLOCK_LEN] {
            let e = l.load(Ordering::Relaxed);
            if e & DEEP != 0 {
                self.nodes.retire(e & !DEEP, 1, tag);
                self.retire_subtree(arena, e & !DEEP, tag);
            }
        }
        self.leaves.retire(old, BLOCK_LEN, tag);
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

    /// Builds a fresh, tightly sized arena for `trie` (compaction); the writer state is
    /// replaced. Nothing in the old arena is reused, so no grace period is needed.
    pub(crate) fn rebuild_all(&mut self, trie: &Trie) -> LpmArena {
        let nodes = (self.nodes.live() + self.nodes.live() / 4).max(MIN_NODES);
        let leaves = (self.leaves.live() + self.leaves.live() / 4).max(MIN_LEAVES);
        let (mut fresh, _) = Self::new();
        fresh.must_bits.fill(u64::MAX); // the fresh arena holds nothing yet
        fresh.nodes.set_cap(nodes);
        fresh.leaves.set_cap(leaves);
        let mut arena = LpmArena::new(nodes, leaves);
        for r in 0..DIRECT_LEN as u32 {
            loop {
                match fresh.rebuild_region(trie, &arena, r, 0) {
                    Ok(()) => break,
                    Err(NeedSpace) => {
                        let n = fresh.nodes.cap() * 2;
                        let l = fresh.leaves.cap() * 2;
                        fresh.nodes.set_cap(n);
                        fresh.leaves.set_cap(l);
                        arena = arena.grown(n, l);
                    }
                }
            }
        }
        fresh.stats = self.stats;
        *self = fresh;
        arena
    }

    fn rebuild_region(
        &mut self,
        trie: &Trie,
        arena: &LpmArena,
        r: u32,
        tag: u64,
    ) -> Result<(), NeedSpace> {
        let (w, b) = ((r / 64) as usize, r % 64);
        let must = self.must_bits[w] & (1 << b) != 0;
        self.must_bits[w] &= !(1 << b);
        let (n, best) = if self.stale_bits[w] & (1 << b) == 0 {
            (trie.region_node(r), self.best[r as usize])
        } else {
            // Descend DIRECT_BITS bits, remembering the best route on the way.
            let addr = r << (32 - DIRECT_BITS);
            let mut best = 0u32;
            let mut n = 0u32;
            let mut depth = 0;
            loop {
                let node = trie.node(n);
                if node.route != NIL {
                    best = node.fwd;
                }
                if depth == DIRECT_BITS {
                    break;
                }
                let c = node.child[bit(addr, depth)];
                if c == NIL {
                    n = NIL;
                    break;
                }
                n = c;
                depth += 1;
            }
            let old = std::mem::replace(&mut self.best[r as usize], best);
            self.stale_bits[w] &= !(1 << b);
            if old == best && !must {
                // Only a covering short route changed, and not what the region
                // inherits: every leaf already holds its answer.
                return Ok(());
            }
            (n, best)
        };
        self.stats.regions += 1;
        let new = if n != NIL && trie.has_children(n) {
            self.build_region(trie, arena, n, best)?
        } else {
            LEAF | best
        };
        // Single writer: a plain load and a release store (no locked swap needed).
        let old = arena.direct[r as usize].load(Ordering::Relaxed);
        self.swing(arena, r, new, old, tag);
        Ok(())
    }

    /// The direct entry for region trie node `n` (best route above it `best`): a
    /// direct leaf when every child at /24 holds one value, a leaf-only node when no
    /// route is longer than /24, else a block with the nodes under it.
    fn build_region(
        &mut self,
        trie: &Trie,
        arena: &LpmArena,
        n: u32,
        best: u32,
    ) -> Result<u32, NeedSpace> {
        let mut kids = [Child::Leaf(0); BLOCK_LEN];
        expand(trie, n, 0, 0, best, &mut kids);
        if kids.iter().all(|k| matches!(k, Child::Leaf(_))) {
            let vals = std::array::from_fn(|v| match kids[v] {
                Child::Leaf(x) => x,
                Child::Node(..) => 0,
            });
            return self.leaf_only(arena, &vals);
        }
        let base = self.leaves.alloc(BLOCK_LEN).map_err(|_| NeedSpace)?;
        let block = &arena.leaves[base as usize..base as usize + BLOCK_LEN];
        for (v, k) in kids.iter().enumerate() {
            let e = match *k {
                Child::Leaf(x) => x,
                Child::Node(t, b) => {
                    let built = match self.nodes.alloc(1) {
                        Ok(slot) => match self.build_node(trie, arena, t, b, slot) {
                            Ok(()) => Ok(slot),
                            Err(e) => {
                                self.nodes.free_now(slot, 1);
                                Err(e)
                            }
                        },
                        Err(_) => Err(NeedSpace),
                    };
                    match built {
                        Ok(slot) => slot | DEEP,
                        Err(e) => {
                            // Undo the nodes built so far, then the block.
                            for l in &block[..v] {
                                let e = l.load(Ordering::Relaxed);
                                if e & DEEP != 0 {
                                    self.free_subtree_now(arena, e & !DEEP);
                                    self.nodes.free_now(e & !DEEP, 1);
                                }
                            }
                            self.leaves.free_now(base, BLOCK_LEN);
                            return Err(e);
                        }
                    }
                }
            };
            block[v].store(e, Ordering::Relaxed);
        }
        Ok(base)
    }

    fn retire_subtree(&mut self, arena: &LpmArena, idx: u32, tag: u64) {
        let (vector, leafvec, bases) = arena.node(idx);
        self.leaves
            .retire(bases as u32, leafvec.count_ones() as usize, tag);
        let nkids = vector.count_ones();
        let base1 = (bases >> 32) as u32;
        self.nodes.retire(base1, nkids as usize, tag);
        for k in 0..nkids {
            self.retire_subtree(arena, base1 + k, tag);
        }
    }

    fn free_subtree_now(&mut self, arena: &LpmArena, idx: u32) {
        let (vector, leafvec, bases) = arena.node(idx);
        self.leaves
            .free_now(bases as u32, leafvec.count_ones() as usize);
        let nkids = vector.count_ones();
        let base1 = (bases >> 32) as u32;
        for k in 0..nkids {
            self.free_subtree_now(arena, base1 + k);
        }
        self.nodes.free_now(base1, nkids as usize);
    }

    /// Writes the node for trie node `t` (a stride root) into slot `slot`.
    fn build_node(
        &mut self,
        trie: &Trie,
        arena: &LpmArena,
        t: u32,
        best: u32,
        slot: u32,
    ) -> Result<(), NeedSpace> {
        let mut kids = [Child::Leaf(0); 64];
        expand(trie, t, 0, 0, best, &mut kids);
        let mut vector = 0u64;
        let mut leafvec = 0u64;
        let mut leaves = [0u32; 64];
        let mut nleaves = 0usize;
        let mut prev: Option<u32> = None;
        for (v, k) in kids.iter().enumerate() {
            match *k {
                Child::Node(..) => vector |= 1 << v,
                Child::Leaf(x) => {
                    if prev != Some(x) {
                        leafvec |= 1 << v;
                        leaves[nleaves] = x;
                        nleaves += 1;
                        prev = Some(x);
                    }
                }
            }
        }
        let nkids = vector.count_ones() as usize;
        let base0 = self.leaves.alloc(nleaves).map_err(|_| NeedSpace)?;
        let base1 = match self.nodes.alloc(nkids) {
            Ok(b) => b,
            Err(_) => {
                self.leaves.free_now(base0, nleaves);
                return Err(NeedSpace);
            }
        };
        for (i, &x) in leaves[..nleaves].iter().enumerate() {
            arena.leaves[base0 as usize + i].store(x, Ordering::Relaxed);
        }
        let mut k = 0u32;
        for c in kids.iter() {
            if let Child::Node(ct, cb) = *c {
                if let Err(e) = self.build_node(trie, arena, ct, cb, base1 + k) {
                    // Undo the children built so far, then this node's blocks.
                    for j in 0..k {
                        self.free_subtree_now(arena, base1 + j);
                    }
                    self.nodes.free_now(base1, nkids);
                    self.leaves.free_now(base0, nleaves);
                    return Err(e);
                }
                k += 1;
            }
        }
        let [v, lv, b] = &arena.nodes[slot as usize];
        v.store(vector, Ordering::Relaxed);
        lv.store(leafvec, Ordering::Relaxed);
        b.store(u64::from(base0) | u64::from(base1) << 32, Ordering::Relaxed);
        Ok(())
    }
}

/// Fills `kids[pos << (6 - steps) ..][.. 1 << (6 - steps)]` for trie node `t`, which
/// sits `steps` bits below the stride root; `best` includes `t`'s own route.
fn expand(trie: &Trie, t: u32, steps: u32, pos: usize, best: u32, kids: &mut [Child; 64]) {
    let span = 1usize << (STRIDE - steps);
    if steps == STRIDE {
        kids[pos] = if trie.has_children(t) {
            Child::Node(t, best)
        } else {
            Child::Leaf(best)
        };
        return;
    }
    if !trie.has_children(t) {
        kids[pos * span..(pos + 1) * span].fill(Child::Leaf(best));
        return;
    }
    for b in 0..2 {
        let c = trie.node(t).child[b];
        let p = pos * 2 + b;
        if c == NIL {
            let half = span / 2;
            kids[p * half..(p + 1) * half].fill(Child::Leaf(best));
        } else {
            let cn = trie.node(c);
            let nb = if cn.route != NIL { cn.fwd } else { best };
            expand(trie, c, steps + 1, p, nb, kids);
        }
    }
}

/// Bits `c0..c0 + span` set.
fn span_mask(c0: usize, span: usize) -> u64 {
    (u64::MAX >> (64 - span)) << c0
}

/// How the new values of a span fit a node's runs of equal leaves.
#[allow(clippy::large_enum_variant)] // (one on the stack per route change)
enum Runs {
    /// Every run under the span keeps its value.
    Unchanged,
    /// Runs `j0..j0 + n` (leaf indices) take `vals[..n]`, each still one value.
    Fit {
        j0: usize,
        n: usize,
        vals: [u32; 64],
    },
    /// A run would hold two values: the node needs new runs.
    Split,
}

/// How the span `c0..c0 + span`'s new values `kids` fit the runs of the node
/// (`vector`, `leafvec`; a leaf-only node has no `vector`) whose run leaves are
/// `runs`. `None` when no run starts at or before the span (not a shape built here).
fn fit_runs(
    runs: &[AtomicU32],
    vector: u64,
    leafvec: u64,
    c0: usize,
    span: usize,
    kids: &[Child; 64],
) -> Option<Runs> {
    let leaf = |v: usize| match kids[v] {
        Child::Leaf(x) => x,
        Child::Node(..) => 0,
    };
    let span_bits = span_mask(c0, span);
    let below = leafvec & upto(c0 as u32);
    if below == 0 {
        return None;
    }
    let j0 = below.count_ones() as usize - 1;
    let mut s = 63 - below.leading_zeros() as usize;
    let mut vals = [0u32; 64];
    let (mut fits, mut changed, mut n) = (true, false, 0usize);
    loop {
        let above = leafvec & !upto(s as u32);
        let e = if above == 0 {
            64
        } else {
            above.trailing_zeros() as usize
        };
        let run_bits = !vector & (u64::MAX >> (64 - (e - s))) << s;
        let inside = run_bits & span_bits;
        let x = leaf(inside.trailing_zeros() as usize);
        let mut rest = inside & (inside - 1);
        while rest != 0 {
            fits &= leaf(rest.trailing_zeros() as usize) == x;
            rest &= rest - 1;
        }
        if x != runs.get(j0 + n)?.load(Ordering::Relaxed) {
            changed = true;
            // Leaves of the run outside the span keep the old value.
            fits &= run_bits & !span_bits == 0;
        }
        vals[n] = x;
        n += 1;
        if !fits || e >= c0 + span {
            break;
        }
        s = e;
    }
    Some(if !fits {
        Runs::Split
    } else if !changed {
        Runs::Unchanged
    } else {
        Runs::Fit { j0, n, vals }
    })
}

/// The values of a node's 64 children after the change: each leaf child's run value
/// (`runs`, by `leafvec`; child nodes, in `vector`, 0), the span's new values over
/// them; and whether any changed.
fn new_values(
    runs: &[u32],
    vector: u64,
    leafvec: u64,
    c0: usize,
    span: usize,
    kids: &[Child; 64],
) -> ([u32; 64], bool) {
    let mut vals = [0u32; 64];
    let mut run = 0usize;
    for (v, val) in vals.iter_mut().enumerate() {
        if leafvec & (1 << v) != 0 {
            run += 1;
        }
        if vector & (1 << v) == 0 {
            *val = runs.get(run.saturating_sub(1)).copied().unwrap_or(0);
        }
    }
    let mut changed = false;
    for (v, val) in vals.iter_mut().enumerate().skip(c0).take(span) {
        let x = match kids[v] {
            Child::Leaf(x) => x,
            Child::Node(..) => 0,
        };
        changed |= *val != x;
        *val = x;
    }
    (vals, changed)
}

/// The runs of equal values among the leaf children (not in `vector`) of `vals`:
/// `leafvec`, the runs' values and their count.
fn compress(vals: &[u32; 64], vector: u64) -> (u64, [u32; 64], usize) {
    let mut leafvec = 0u64;
    let mut leaves = [0u32; 64];
    let mut n = 0usize;
    let mut prev = None;
    for (v, &x) in vals.iter().enumerate() {
        if vector & (1 << v) == 0 && prev != Some(x) {
            leafvec |= 1 << v;
            leaves[n] = x;
            n += 1;
            prev = Some(x);
        }
    }
    (leafvec, leaves, n)
}

/// The values of a node's run leaves (at most 64).
fn load_runs(runs: &[AtomicU32]) -> [u32; 64] {
    let mut old = [0u32; 64];
    for (o, l) in old.iter_mut().zip(runs) {
        *o = l.load(Ordering::Relaxed);
    }
    old
}

/// Stores `vals` into the published words `at` that differ (release: the result ids'
/// forwarding was written before). Returns whether any did.
fn store_changed(at: &[AtomicU32], vals: &[u32]) -> bool {
    let mut changed = false;
    for (l, &x) in at.iter().zip(vals) {
        if l.load(Ordering::Relaxed) != x {
            l.store(x, Ordering::Release);
            changed = true;
        }
    }
    changed
}
