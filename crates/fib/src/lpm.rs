//! The lookup structure: a Poptrie (Asai & Ohara, "Poptrie: A Compressed Trie with
//! Population Count for Fast and Scalable Software IP Routing Table Lookup", SIGCOMM
//! 2015), with a direct-pointing first level of [`DIRECT_BITS`] bits and 6-bit strides.
//!
//! Layout (all atomic words, see [`crate::arena`]):
//! - `direct[key >> (32 - DIRECT_BITS)]`: [`LEAF`] | result id, [`LNODE`] | index of a
//!   leaf-only node in `leaves`, or the index of a node.
//! - `nodes`: [`NODE_WORDS`] words per node: `vector` (bit v: child v is a node),
//!   `leafvec` (bit v: a new run of equal leaves starts at child v), and
//!   `base0 | base1 << 32` (first leaf, first child node). A node's child nodes and its
//!   leaves are contiguous, so child v is found with one `popcnt` of the bits below v.
//! - `leaves`: result ids.
//!
//! Updates never change the shape of a published node (its `vector`, `leafvec` and
//! bases): a reader always walks one consistent shape and reads exactly one leaf.
//! - A change of a route longer than [`DIRECT_BITS`] is patched into its region
//!   ([`LpmWriter::patch`]): if the node's runs of equal leaves still fit the new
//!   values, the leaves under the prefix get their new result ids in place, one
//!   release store each, so a lookup returns the old or the new answer for its
//!   address; otherwise the region's root gets a new leaf block (an internal root: a
//!   new root node sharing the old root's children), swung in with one release store.
//! - Anything else (routes of /18 or shorter, nodes added or removed) rebuilds the
//!   subtree under each changed direct entry into free space and swings the direct
//!   entry with one release store.
//!
//! Replaced blocks are reused after a grace period ([`crate::qsbr`]).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arena::{BlockAlloc, grow32, words32};
use crate::trie::{NIL, Trie, bit};

/// Bits resolved by the direct-pointing array (Poptrie's `s`).
pub const DIRECT_BITS: u32 = 18;
/// Flag of a direct entry that holds a result id rather than a node index.
pub(crate) const LEAF: u32 = 1 << 31;
/// Flag of a direct entry that points at a leaf-only node: a block in `leaves` of
/// `leafvec` (two words) followed by the leaves. Most /18 regions of a real table hold
/// nothing longer than /24, so their root has no child nodes; this saves them the
/// node load (one dependent cache miss fewer for most addresses).
pub(crate) const LNODE: u32 = 1 << 30;
/// Flag of a lookup in [`LpmArena::lookup_burst`]'s output that goes on below /24
/// from the node it holds (result ids and node indices stay below it).
const DEEP: u32 = 1 << 31;
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
        let d = self
            .direct
            .get((key >> (32 - DIRECT_BITS)) as usize)
            .map_or(LEAF, |d| d.load(Ordering::Acquire));
        if d & LEAF != 0 {
            d & !LEAF
        } else if d & LNODE != 0 {
            self.leaf_block(key, d & !LNODE)
        } else {
            self.walk(key, d, DIRECT_BITS)
        }
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
    /// every key to its leaf, through one node for prefixes up to /24 (the leaf-only
    /// node or the region's root) and out of line below that (longer prefixes are rare
    /// in real tables). The loads of the first pass are independent, so the core keeps
    /// many cache misses in flight (what software prefetch buys `rte_lpm` and VPP)
    /// without `unsafe` prefetch intrinsics.
    #[inline]
    pub(crate) fn lookup_burst(&self, keys: &[u32], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.direct_entry(*k);
        }
        // Keys whose walk goes on below /24 keep the node to go on from in `out`
        // (with DEEP) and a bit in `deep` (past its 256 bits: `far`), for a pass of
        // their own: this loop makes no call, so it keeps its values in registers.
        let (mut deep, mut far) = ([0u64; 4], false);
        for (j, (k, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let d = *o;
            if d & LEAF != 0 {
                *o = d & !LEAF;
            } else if d & LNODE != 0 {
                *o = self.leaf_block(*k, d & !LNODE);
            } else {
                *o = match self.child(*k, d, DIRECT_BITS) {
                    Ok(leaf) => leaf,
                    Err(next) => {
                        match deep.get_mut(j / 64) {
                            Some(w) => *w |= 1 << (j % 64),
                            None => far = true,
                        }
                        next | DEEP
                    }
                };
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
                    *o = self.walk(*k, *o & !DEEP, DIRECT_BITS + STRIDE);
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
    /// Changes applied by storing new result ids into published leaves in place.
    pub in_place: u64,
    /// Changes applied by a new leaf-only root block for the region, swung in with
    /// one store (or by turning the region into one direct leaf).
    pub new_block: u64,
    /// Changes applied by a new root node with new leaves that shares the old root's
    /// children, swung in with one store.
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

/// The node of a region that a patch rewrites.
#[derive(Clone, Copy)]
enum Target {
    /// The region is one direct leaf (no block yet).
    Leaf(u32),
    /// Leaf-only root block at this base in `leaves` ([`LNODE`]).
    Block(u32),
    /// Node index; `true` for the region's root.
    Node(u32, bool),
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
    /// region without rebuilding the region: only the children of the one node whose
    /// stride holds the prefix's last bit change, and only those under the prefix
    /// (its *span*). Their new values come from the trie below the prefix (usually
    /// just the prefix's own node, `node`); for a removed route (`node` is [`NIL`]),
    /// from the best route above it on the path down from the region's trie node. The
    /// other children keep the values the arena holds.
    ///
    /// - If the new values fit the node's runs of equal leaves (each run still holds
    ///   one value), the changed leaves are stored in place: a lookup reads one leaf,
    ///   so it sees the old or the new answer, never a mix.
    /// - Otherwise the region's root gets a new leaf block (a leaf-only root: the
    ///   block; an internal root: a new root node sharing the old children) and the
    ///   direct entry is swung with one release store; the old block is retired.
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
        let level = (len - DIRECT_BITS - 1) / STRIDE;
        let depth = DIRECT_BITS + level * STRIDE;
        // The arena node whose stride holds bit `len - 1`.
        let d = arena.direct[r as usize].load(Ordering::Relaxed);
        let mut target = if d & LEAF != 0 {
            Target::Leaf(d & !LEAF)
        } else if d & LNODE != 0 {
            Target::Block(d & !LNODE)
        } else {
            Target::Node(d, true)
        };
        for l in 0..level {
            let Target::Node(idx, _) = target else {
                return Ok(false);
            };
            let (vector, _, bases) = arena.node(idx);
            let v = chunk(addr, DIRECT_BITS + l * STRIDE);
            if vector & (1 << v) == 0 {
                return Ok(false);
            }
            let child = ((bases >> 32) as u32) + (vector & upto(v)).count_ones() - 1;
            target = Target::Node(child, false);
        }
        let steps = len - depth;
        let span = 1usize << (STRIDE - steps);
        let c0 = chunk(addr, depth) as usize & !(span - 1);
        let span_bits = (u64::MAX >> (64 - span)) << c0;
        let (vector, leafvec, first) = match target {
            Target::Leaf(_) => (0, 1, 0),
            Target::Block(base) => {
                let bb = base as usize;
                let lv = u64::from(arena.leaves[bb].load(Ordering::Relaxed))
                    | u64::from(arena.leaves[bb + 1].load(Ordering::Relaxed)) << 32;
                (0, lv, base + 2)
            }
            Target::Node(idx, _) => {
                let (v, lv, bases) = arena.node(idx);
                (v, lv, bases as u32)
            }
        };
        if vector & span_bits != 0 {
            return Ok(false); // a node under the prefix: its subtree changes too
        }
        // New values of the span: from the route's node, or for a removed route from
        // the path down to where it was.
        let (n, best) = if node != NIL {
            (node, trie.node(node).fwd)
        } else {
            let (w, b) = ((r / 64) as usize, r % 64);
            let region = trie.region_node(r);
            if self.stale_bits[w] & (1 << b) != 0 || region == NIL {
                return Ok(false); // no best short route known / the region empties
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
        if kids[c0..c0 + span]
            .iter()
            .any(|k| matches!(k, Child::Node(..)))
        {
            return Ok(false); // the prefix now has routes below the stride
        }
        let leaf = |v: usize| match kids[v] {
            Child::Leaf(x) => x,
            Child::Node(..) => 0,
        };
        let nruns = leafvec.count_ones() as usize;
        let f = first as usize;
        if !matches!(target, Target::Leaf(_)) {
            // Walk only the runs under the span: does each still hold one value?
            let below = leafvec & upto(c0 as u32);
            if below == 0 {
                return Ok(false); // no run starts at or before the span (not built here)
            }
            let j0 = below.count_ones() as usize - 1;
            let mut s = 63 - below.leading_zeros() as usize;
            let mut new_vals = [0u32; 64];
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
                if x != arena.leaves[f + j0 + n].load(Ordering::Relaxed) {
                    changed = true;
                    // Leaves of the run outside the span keep the old value.
                    fits &= run_bits & !span_bits == 0;
                }
                new_vals[n] = x;
                n += 1;
                if !fits || e >= c0 + span {
                    break;
                }
                s = e;
            }
            if fits && !changed {
                self.stats.unchanged += 1;
                return Ok(true);
            }
            if fits {
                let value = |j: usize| {
                    if (j0..j0 + n).contains(&j) {
                        new_vals[j - j0]
                    } else {
                        arena.leaves[f + j].load(Ordering::Relaxed)
                    }
                };
                if matches!(target, Target::Block(_)) && (1..nruns).all(|j| value(j) == value(0)) {
                    // Nothing left to tell apart: the region becomes a direct leaf.
                    self.swing(arena, r, LEAF | value(0), d, tag);
                    self.stats.new_block += 1;
                    return Ok(true);
                }
                for (j, &x) in new_vals[..n].iter().enumerate() {
                    let l = &arena.leaves[f + j0 + j];
                    if l.load(Ordering::Relaxed) != x {
                        // Release: the result id's forwarding was written before.
                        l.store(x, Ordering::Release);
                    }
                }
                self.stats.in_place += 1;
                return Ok(true);
            }
        }
        // New runs: every leaf child's value, the span's new ones over the old ones.
        let mut runs = [0u32; 64];
        match target {
            Target::Leaf(v) => runs[0] = v,
            _ => {
                for (o, l) in runs[..nruns].iter_mut().zip(&arena.leaves[f..f + nruns]) {
                    *o = l.load(Ordering::Relaxed);
                }
            }
        }
        let mut vals = [0u32; 64];
        let mut run = 0usize;
        for (v, val) in vals.iter_mut().enumerate() {
            if leafvec & (1 << v) != 0 {
                run += 1;
            }
            if vector & (1 << v) == 0 {
                *val = runs[run.saturating_sub(1)];
            }
        }
        let mut changed = false;
        for (v, val) in vals.iter_mut().enumerate().skip(c0).take(span) {
            changed |= *val != leaf(v);
            *val = leaf(v);
        }
        if !changed {
            self.stats.unchanged += 1;
            return Ok(true);
        }
        if let Target::Block(_) = target {
            if vals.iter().all(|&x| x == vals[0]) {
                self.swing(arena, r, LEAF | vals[0], d, tag);
                self.stats.new_block += 1;
                return Ok(true);
            }
        }
        // New runs: only a root's leaf block can be replaced with one store.
        let mut new_lv = 0u64;
        let mut leaves = [0u32; 64];
        let mut nleaves = 0usize;
        let mut prev = None;
        for (v, &x) in vals.iter().enumerate() {
            if vector & (1 << v) == 0 && prev != Some(x) {
                new_lv |= 1 << v;
                leaves[nleaves] = x;
                nleaves += 1;
                prev = Some(x);
            }
        }
        match target {
            Target::Leaf(_) | Target::Block(_) => {
                let base = self.leaves.alloc(2 + nleaves).map_err(|_| NeedSpace)?;
                let bb = base as usize;
                arena.leaves[bb].store(new_lv as u32, Ordering::Relaxed);
                arena.leaves[bb + 1].store((new_lv >> 32) as u32, Ordering::Relaxed);
                for (i, &x) in leaves[..nleaves].iter().enumerate() {
                    arena.leaves[bb + 2 + i].store(x, Ordering::Relaxed);
                }
                self.swing(arena, r, LNODE | base, d, tag);
            }
            Target::Node(idx, true) => {
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
                let (_, _, bases) = arena.node(idx);
                let [v, lv, b] = &arena.nodes[slot as usize];
                v.store(vector, Ordering::Relaxed);
                lv.store(new_lv, Ordering::Relaxed);
                b.store(
                    u64::from(base0) | bases & 0xffff_ffff_0000_0000,
                    Ordering::Relaxed,
                );
                arena.direct[r as usize].store(slot, Ordering::Release);
                // The children now belong to the new root: retire only the old root
                // and its leaves.
                self.nodes.retire(idx, 1, tag);
                self.leaves.retire(first, nruns, tag);
                self.stats.new_root += 1;
                return Ok(true);
            }
            Target::Node(_, false) => return Ok(false),
        }
        self.stats.new_block += 1;
        Ok(true)
    }

    /// Stores direct entry `new` for region `r` in place of `old` (a direct leaf or a
    /// leaf-only block, which is retired).
    fn swing(&mut self, arena: &LpmArena, r: u32, new: u32, old: u32, tag: u64) {
        arena.direct[r as usize].store(new, Ordering::Release);
        if old & LEAF == 0 && old & LNODE != 0 {
            let b = (old & !LNODE) as usize;
            let lv = arena.leaves[b].load(Ordering::Relaxed).count_ones()
                + arena.leaves[b + 1].load(Ordering::Relaxed).count_ones();
            self.leaves.retire(old & !LNODE, 2 + lv as usize, tag);
        }
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
            let mut kids = [Child::Leaf(0); 64];
            expand(trie, n, 0, 0, best, &mut kids);
            if kids.iter().all(|k| matches!(k, Child::Leaf(_))) {
                let mut leafvec = 0u64;
                let mut leaves = [0u32; 64];
                let mut nleaves = 0usize;
                let mut prev = None;
                for (v, k) in kids.iter().enumerate() {
                    if let Child::Leaf(x) = *k {
                        if prev != Some(x) {
                            leafvec |= 1 << v;
                            leaves[nleaves] = x;
                            nleaves += 1;
                            prev = Some(x);
                        }
                    }
                }
                let base = self.leaves.alloc(2 + nleaves).map_err(|_| NeedSpace)?;
                let b = base as usize;
                arena.leaves[b].store(leafvec as u32, Ordering::Relaxed);
                arena.leaves[b + 1].store((leafvec >> 32) as u32, Ordering::Relaxed);
                for (i, &x) in leaves[..nleaves].iter().enumerate() {
                    arena.leaves[b + 2 + i].store(x, Ordering::Relaxed);
                }
                LNODE | base
            } else {
                self.internal_root(trie, arena, n, best)?
            }
        } else {
            LEAF | best
        };
        // Single writer: a plain load and a release store (no locked swap needed).
        let old = arena.direct[r as usize].load(Ordering::Relaxed);
        arena.direct[r as usize].store(new, Ordering::Release);
        if old & LEAF == 0 {
            if old & LNODE != 0 {
                let b = (old & !LNODE) as usize;
                let lv = arena.leaves[b].load(Ordering::Relaxed).count_ones()
                    + arena.leaves[b + 1].load(Ordering::Relaxed).count_ones();
                self.leaves.retire(old & !LNODE, 2 + lv as usize, tag);
            } else {
                self.nodes.retire(old, 1, tag);
                self.retire_subtree(arena, old, tag);
            }
        }
        Ok(())
    }

    fn internal_root(
        &mut self,
        trie: &Trie,
        arena: &LpmArena,
        n: u32,
        best: u32,
    ) -> Result<u32, NeedSpace> {
        {
            let slot = self.nodes.alloc(1).map_err(|_| NeedSpace)?;
            if let Err(e) = self.build_node(trie, arena, n, best, slot) {
                self.nodes.free_now(slot, 1);
                return Err(e);
            }
            Ok(slot)
        }
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
