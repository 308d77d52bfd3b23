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
//! Updates never modify a published node: the writer rebuilds the subtree under each
//! changed direct entry into free space and then swings the direct entry with one
//! release store; the old blocks are reused after a grace period ([`crate::qsbr`]).
//! A reader therefore always walks one complete, consistent subtree.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arena::{BlockAlloc, grow32, grow64, words32, words64};
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
/// 64-bit words per node.
pub(crate) const NODE_WORDS: usize = 3;
const DIRECT_LEN: usize = 1 << DIRECT_BITS;
const STRIDE: u32 = 6;
/// Keys handled per level-synchronous pass.
const BURST: usize = 256;

/// The reader-visible part of one table.
#[derive(Debug)]
pub(crate) struct LpmArena {
    direct: Box<[AtomicU32]>,
    nodes: Box<[AtomicU64]>,
    leaves: Box<[AtomicU32]>,
}

/// Index of the 6-bit chunk of `key` that starts at bit `offset` (zero-padded past 32).
#[inline(always)]
fn chunk(key: u32, offset: u32) -> u32 {
    (key << (offset & 31)) >> 26
}

/// Bits `0..=v` set.
#[inline(always)]
fn upto(v: u32) -> u64 {
    (2u64 << v).wrapping_sub(1)
}

impl LpmArena {
    fn new(nodes: usize, leaves: usize) -> Self {
        let direct = words32(DIRECT_LEN);
        for d in direct.iter() {
            d.store(LEAF, Ordering::Relaxed);
        }
        Self {
            direct,
            nodes: words64(nodes * NODE_WORDS),
            leaves: words32(leaves),
        }
    }

    fn grown(&self, nodes: usize, leaves: usize) -> Self {
        Self {
            direct: grow32(&self.direct, DIRECT_LEN),
            nodes: grow64(&self.nodes, nodes * NODE_WORDS),
            leaves: grow32(&self.leaves, leaves),
        }
    }

    /// Bytes of the reader-visible arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.direct.len() * 4 + self.nodes.len() * 8 + self.leaves.len() * 4
    }

    /// Walks from node `idx` (entered at bit `offset`) to a leaf.
    #[inline(always)]
    fn walk(&self, key: u32, mut idx: u32, mut offset: u32) -> u32 {
        loop {
            let base = idx as usize * NODE_WORDS;
            let (Some(vector), Some(leafvec), Some(bases)) = (
                self.nodes.get(base),
                self.nodes.get(base + 1),
                self.nodes.get(base + 2),
            ) else {
                return 0;
            };
            let vector = vector.load(Ordering::Relaxed);
            let bases = bases.load(Ordering::Relaxed);
            let v = chunk(key, offset);
            let below = upto(v);
            if vector & (1u64 << v) != 0 {
                idx = (bases >> 32) as u32 + (vector & below).count_ones() - 1;
                offset += STRIDE;
            } else {
                let leafvec = leafvec.load(Ordering::Relaxed);
                let i = bases as u32 + (leafvec & below).count_ones() - 1;
                return self
                    .leaves
                    .get(i as usize)
                    .map_or(0, |l| l.load(Ordering::Relaxed));
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
            .map_or(0, |l| l.load(Ordering::Relaxed))
    }

    /// Batched lookup of `min(keys.len(), out.len())` keys.
    ///
    /// Level-synchronous over the burst: one pass reads every key's direct entry, and
    /// each further pass takes every unfinished key one node down. The loads inside a
    /// pass are independent, so the core keeps many cache misses in flight (what
    /// software prefetch buys `rte_lpm` and VPP), without `unsafe` prefetch intrinsics.
    #[inline]
    pub(crate) fn lookup_burst(&self, keys: &[u32], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        for (k, o) in keys[..n].chunks(BURST).zip(out[..n].chunks_mut(BURST)) {
            self.lookup_chunk(k, o);
        }
    }

    #[inline(always)]
    fn lookup_chunk(&self, keys: &[u32], out: &mut [u32]) {
        // Pass 1: every direct entry.
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.direct_entry(*k);
        }
        // Pass 2: one node for every key that needs one; the few that go deeper are
        // listed for the next passes.
        let mut todo = [0u16; BURST];
        let mut node = [0u32; BURST];
        let mut m = 0usize;
        for (i, (k, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let d = *o;
            if d & LEAF != 0 {
                *o = d & !LEAF;
                continue;
            }
            if d & LNODE != 0 {
                *o = self.leaf_block(*k, d & !LNODE);
                continue;
            }
            let (is_node, next, leaf) = self.step(*k, d, DIRECT_BITS);
            if is_node {
                todo[m] = i as u16;
                node[m] = next;
                m += 1;
            } else {
                *o = leaf;
            }
        }
        let mut offset = DIRECT_BITS + STRIDE;
        while m > 0 && offset < 32 {
            let mut m2 = 0usize;
            for j in 0..m {
                let i = usize::from(todo[j]);
                let (is_node, next, leaf) = self.step(keys[i], node[j], offset);
                if is_node {
                    todo[m2] = i as u16;
                    node[m2] = next;
                    m2 += 1;
                } else {
                    out[i] = leaf;
                }
            }
            m = m2;
            offset += STRIDE;
        }
    }

    /// One node: (went down a node, that node, the leaf otherwise).
    #[inline(always)]
    fn step(&self, key: u32, idx: u32, offset: u32) -> (bool, u32, u32) {
        let base = idx as usize * NODE_WORDS;
        let Some(w) = self.nodes.get(base..base + NODE_WORDS) else {
            return (false, 0, 0);
        };
        let vector = w[0].load(Ordering::Relaxed);
        let leafvec = w[1].load(Ordering::Relaxed);
        let bases = w[2].load(Ordering::Relaxed);
        let v = chunk(key, offset);
        let below = upto(v);
        let is_node = vector & (1u64 << v) != 0;
        let next = ((bases >> 32) as u32)
            .wrapping_add((vector & below).count_ones())
            .wrapping_sub(1);
        let li = (bases as u32)
            .wrapping_add((leafvec & below).count_ones())
            .wrapping_sub(1);
        let leaf = if is_node {
            0
        } else {
            self.leaves
                .get(li as usize)
                .map_or(0, |l| l.load(Ordering::Relaxed))
        };
        (is_node, next, leaf)
    }

    #[inline(always)]
    fn direct_entry(&self, key: u32) -> u32 {
        self.direct
            .get((key >> (32 - DIRECT_BITS)) as usize)
            .map_or(LEAF, |d| d.load(Ordering::Acquire))
    }

    /// A same-sized deep copy (the writer continues in the copy).
    pub(crate) fn copy(&self) -> Self {
        self.grown(self.nodes.len() / NODE_WORDS, self.leaves.len())
    }

    fn node(&self, idx: u32) -> (u64, u64, u64) {
        let b = idx as usize * NODE_WORDS;
        (
            self.nodes[b].load(Ordering::Relaxed),
            self.nodes[b + 1].load(Ordering::Relaxed),
            self.nodes[b + 2].load(Ordering::Relaxed),
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
    /// Direct entries to rebuild at the next commit.
    dirty: Vec<u32>,
    dirty_bits: Vec<u64>,
    /// Per region, the best route of length <= DIRECT_BITS covering it...
    best: Vec<u32>,
    /// ...valid unless this bit is set (a short route changed): then walk the trie.
    stale_bits: Vec<u64>,
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
                best: vec![0; DIRECT_LEN],
                stale_bits: vec![u64::MAX; DIRECT_LEN / 64],
            },
            LpmArena::new(MIN_NODES, MIN_LEAVES),
        )
    }

    /// Marks the direct entries covered by `addr/len` for rebuild.
    pub(crate) fn mark(&mut self, addr: u32, len: u8) {
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
        !self.dirty.is_empty()
    }

    /// Rebuilds every marked direct entry from `trie` into `arena`. If the arena is too
    /// small, returns a grown copy to continue in (the caller publishes it).
    pub(crate) fn commit(&mut self, trie: &Trie, arena: &LpmArena, tag: u64) -> Option<LpmArena> {
        let mut grown: Option<LpmArena> = None;
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        for &r in &dirty {
            self.dirty_bits[(r / 64) as usize] &= !(1 << (r % 64));
            loop {
                let a = grown.as_ref().unwrap_or(arena);
                match self.rebuild_region(trie, a, r, tag) {
                    Ok(()) => break,
                    Err(NeedSpace) => {
                        let nodes = (self.nodes.cap() * 2).max(self.nodes.top() + 64);
                        let leaves = (self.leaves.cap() * 2).max(self.leaves.top() + 64);
                        self.nodes.set_cap(nodes);
                        self.leaves.set_cap(leaves);
                        grown = Some(a.grown(nodes, leaves));
                    }
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

    /// Builds a fresh, tightly sized arena for `trie` (compaction); the writer state is
    /// replaced. Nothing in the old arena is reused, so no grace period is needed.
    pub(crate) fn rebuild_all(&mut self, trie: &Trie) -> LpmArena {
        let nodes = (self.nodes.live() + self.nodes.live() / 4).max(MIN_NODES);
        let leaves = (self.leaves.live() + self.leaves.live() / 4).max(MIN_LEAVES);
        let (mut fresh, _) = Self::new();
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
            self.best[r as usize] = best;
            self.stale_bits[w] &= !(1 << b);
            (n, best)
        };
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
        let b = slot as usize * NODE_WORDS;
        arena.nodes[b].store(vector, Ordering::Relaxed);
        arena.nodes[b + 1].store(leafvec, Ordering::Relaxed);
        arena.nodes[b + 2].store(u64::from(base0) | u64::from(base1) << 32, Ordering::Relaxed);
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
