//! The arrays readers see ([`Tree`]) and the writer that changes them in place
//! ([`TreeWriter`]); the layout is the module's (see `lpm6.rs`).
//!
//! A change rebuilds, from the writer's trie, the smallest subtree whose key range
//! holds the changed prefix's range and whose height can take the new intervals
//! (usually one node), in free nodes; one release store of the new subtree's
//! reference into its parent's lanes (or the direct entry) publishes it, and the old
//! subtree's nodes are retired for the readers' grace period. A reader reads one
//! reference per level, so it walks either the old subtree or the new one.

use std::sync::atomic::{AtomicU32, Ordering};

use super::simd::{Simd, rank};
use super::trie::NIL;
use super::{DIRECT_BITS, Lpm6Trie};
use crate::arena::BlockAlloc;

/// Flag of a value that refers to a node (else it is a result id).
pub(super) const NODE: u32 = 1 << 31;
const LEVEL_SHIFT: u32 = 29;
/// Node index bits of a reference.
pub(super) const IDX: u32 = (1 << LEVEL_SHIFT) - 1;
/// Key lanes compared per node (the 16th lane is padding).
pub(super) const KEYS: usize = 15;
/// Keys are stored with the top bit flipped, so signed SIMD compares order them.
pub(super) const BIAS: u32 = 1 << 31;
const MAX: u32 = u32::MAX;
/// Intervals per leaf when a subtree is built (of 16): room for a few inserts.
const FILL: usize = 12;
const BURST: usize = 256;
/// Free nodes a structure is built with.
const SLACK: usize = 1024;

/// One node: 15 separator keys (biased; lane 15 and unused lanes the largest key)
/// and 16 values (a result id, or a reference to the child, or to the root of the
/// next level's tree; unused lanes repeat the last one). Key `k` takes value lane
/// `#{keys <= k}`.
#[repr(C, align(128))]
#[derive(Debug)]
pub(super) struct Node {
    pub(super) keys: [AtomicU32; 16],
    pub(super) vals: [AtomicU32; 16],
}

impl Node {
    fn empty() -> Self {
        Self {
            keys: std::array::from_fn(|_| AtomicU32::new(MAX ^ BIAS)),
            vals: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

/// A reference to node `n` of a level-`lvl` tree.
#[inline(always)]
fn node_ref(lvl: u32, n: u32) -> u32 {
    NODE | (lvl << LEVEL_SHIFT) | n
}

#[inline(always)]
fn level(v: u32) -> u32 {
    (v >> LEVEL_SHIFT) & 3
}

/// The 32 key bits a level-`lvl` tree compares: bits 16 + 32 lvl onwards (the last
/// level's 16 bits padded with zeros).
#[inline(always)]
fn k32(key: u128, lvl: u32) -> u32 {
    ((key << DIRECT_BITS) >> (96 - 32 * lvl)) as u32
}

/// Most intervals a subtree of height `h` holds.
fn cap(h: u32) -> usize {
    16usize.saturating_pow(h + 1)
}

/// Intervals a subtree of height `h` is built with at most (room left in leaves).
fn fill(h: u32) -> usize {
    FILL.saturating_mul(16usize.saturating_pow(h))
}

/// Height of a new tree of `n` intervals.
fn height_for(n: usize) -> u32 {
    let mut h = 0;
    while fill(h) < n {
        h += 1;
    }
    h
}

/// The reader-visible arrays.
#[derive(Debug)]
pub(crate) struct Tree {
    /// One value per /16.
    direct: Box<[AtomicU32]>,
    nodes: Box<[Node]>,
    simd: Simd,
}

impl Tree {
    #[inline(always)]
    fn node(&self, n: u32) -> &Node {
        self.nodes.get(n as usize).unwrap_or(&self.nodes[0])
    }

    /// One step: the value node `n` gives key bits `kb` (biased).
    #[inline(always)]
    fn step(&self, simd: Simd, n: u32, kb: u32) -> u32 {
        let node = self.node(n);
        super::simd::prefetch(&node.vals);
        node.vals[rank(simd, node, kb)].load(Ordering::Acquire)
    }

    #[inline(always)]
    fn walk(&self, simd: Simd, mut v: u32, key: u128) -> u32 {
        while v & NODE != 0 {
            v = self.step(simd, v & IDX, k32(key, level(v)) ^ BIAS);
        }
        v
    }

    /// Longest-prefix match of one key (0: no match).
    pub(crate) fn lookup(&self, key: u128) -> u32 {
        let d = self.direct[(key >> (128 - DIRECT_BITS)) as usize].load(Ordering::Acquire);
        self.walk(self.simd, d, key)
    }

    /// Batched lookup, level by level over the burst.
    pub(crate) fn lookup_burst(&self, keys: &[u128], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        for (k, o) in keys[..n].chunks(BURST).zip(out[..n].chunks_mut(BURST)) {
            super::simd::burst(self.simd, self, k, o);
        }
    }

    /// The burst's body, inlined into each SIMD variant.
    #[inline(always)]
    pub(super) fn burst_with(&self, simd: Simd, keys: &[u128], out: &mut [u32]) {
        let n = keys.len().min(out.len()).min(BURST);
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut st = [0u32; BURST];
        let mut kk = [0u32; BURST];
        // The keys still walking a level-0 tree, compacted after every level.
        let mut act = [0u8; BURST];
        let mut next = [0u8; BURST];
        let mut na = 0usize;
        for (i, ((k, s), x)) in keys.iter().zip(&mut st).zip(&mut kk).enumerate() {
            *s = self.direct[(*k >> (128 - DIRECT_BITS)) as usize].load(Ordering::Acquire);
            *x = k32(*k, 0) ^ BIAS;
            act[na & (BURST - 1)] = i as u8;
            na += usize::from(*s >> LEVEL_SHIFT == NODE >> LEVEL_SHIFT);
        }
        // (a level-0 tree is a few nodes tall: the bound only guards the loop)
        for _ in 0..16 {
            if na == 0 {
                break;
            }
            let mut m = 0usize;
            for &a in &act[..na] {
                let i = usize::from(a);
                let v = self.step(simd, st[i] & IDX, kk[i]);
                st[i] = v;
                next[m & (BURST - 1)] = a;
                m += usize::from(v >> LEVEL_SHIFT == NODE >> LEVEL_SHIFT);
            }
            std::mem::swap(&mut act, &mut next);
            na = m;
        }
        for ((o, &s), k) in out.iter_mut().zip(&st).zip(keys) {
            *o = if s & NODE == 0 {
                s
            } else {
                self.walk(simd, s, *k)
            };
        }
    }

    /// Bytes of the reader-visible arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.direct.len() * 4 + self.nodes.len() * size_of::<Node>()
    }

    /// A copy with room for `nodes` nodes.
    fn grown(&self, nodes: usize) -> Self {
        let copy = |o: &Node| Node {
            keys: std::array::from_fn(|j| AtomicU32::new(o.keys[j].load(Ordering::Relaxed))),
            vals: std::array::from_fn(|j| AtomicU32::new(o.vals[j].load(Ordering::Relaxed))),
        };
        Self {
            direct: crate::arena::grow32(&self.direct, self.direct.len()),
            nodes: (0..nodes.max(self.nodes.len()))
                .map(|i| self.nodes.get(i).map_or_else(Node::empty, copy))
                .collect(),
            simd: self.simd,
        }
    }

    // The writer's reads (relaxed).
    fn key(&self, n: u32, j: usize) -> u32 {
        self.nodes[n as usize].keys[j].load(Ordering::Relaxed) ^ BIAS
    }

    fn val(&self, n: u32, j: usize) -> u32 {
        self.nodes[n as usize].vals[j].load(Ordering::Relaxed)
    }

    fn rank_w(&self, n: u32, k: u32) -> usize {
        (0..KEYS).filter(|&j| self.key(n, j) <= k).count()
    }

    fn is_internal(&self, n: u32, lvl: u32) -> bool {
        let v = self.val(n, 0);
        v & NODE != 0 && level(v) == lvl
    }

    fn height(&self, mut n: u32, lvl: u32) -> u32 {
        let mut h = 0;
        while self.is_internal(n, lvl) {
            n = self.val(n, 0) & IDX;
            h += 1;
        }
        h
    }

    /// The intervals (start, value) of the subtree at `n` (its range starting at
    /// `lo`), in key order, not yet normalised.
    fn collect(&self, n: u32, lvl: u32, lo: u32, out: &mut Vec<(u32, u32)>) {
        let internal = self.is_internal(n, lvl);
        let mut prev = None;
        for j in 0..16 {
            let start = if j == 0 { lo } else { self.key(n, j - 1) };
            let v = self.val(n, j);
            if internal {
                if prev != Some(v) {
                    prev = Some(v);
                    self.collect(v & IDX, lvl, start, out);
                }
            } else {
                out.push((start, v));
            }
        }
    }
}

/// Sorted intervals with one entry per start (the last one given) and no two
/// neighbours of equal value.
fn normalize(list: &mut Vec<(u32, u32)>) {
    let mut w = 0usize;
    for r in 0..list.len() {
        let (s, v) = list[r];
        if w > 0 && list[w - 1].0 == s {
            list[w - 1].1 = v;
            if w > 1 && list[w - 2].1 == v {
                w -= 1;
            }
            continue;
        }
        if w > 0 && list[w - 1].1 == v {
            continue;
        }
        list[w] = (s, v);
        w += 1;
    }
    list.truncate(w);
}

/// `old` (a subtree's normalised intervals, its range ending at `hi_end`) with
/// `new` (starting at `lo`) in place of what it held on `lo..=hi`.
fn splice(
    old: &[(u32, u32)],
    lo: u32,
    hi: u32,
    hi_end: u32,
    new: &[(u32, u32)],
) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(old.len() + new.len() + 1);
    out.extend(old.iter().copied().filter(|&(s, _)| s < lo));
    out.extend_from_slice(new);
    if hi < hi_end {
        let after = old
            .iter()
            .rev()
            .find(|&&(s, _)| s <= hi + 1)
            .map_or(0, |e| e.1);
        out.push((hi + 1, after));
        out.extend(old.iter().copied().filter(|&(s, _)| s > hi + 1));
    }
    normalize(&mut out);
    out
}

/// How route changes were applied (counted since the table was created).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lpm6Stats {
    /// References or results published with one release store.
    pub stored: u64,
    /// Nodes built.
    pub nodes: u64,
    /// Copies into larger arrays (free nodes ran out).
    pub grown: u64,
    /// Whole /16 trees built after the first build (a route of /16 or shorter
    /// changed, or a /16 got its first longer route).
    pub rebuilt: u64,
}

/// Free nodes ran out: grow the arrays and apply the change again.
struct Grow;

/// Where a tree's root reference is kept.
#[derive(Clone, Copy)]
enum Slot {
    Direct(usize),
    /// The lanes of this node that hold the old reference.
    Lanes(u32),
}

/// Writer-side state of a [`Tree`].
#[derive(Debug)]
pub(crate) struct TreeWriter {
    nodes: BlockAlloc,
    dirty: Vec<(u128, u8)>,
    /// Nodes built for the change being applied: freed if it runs out of space.
    fresh: Vec<u32>,
    pub(crate) stats: Lpm6Stats,
}

impl TreeWriter {
    /// The structure for `trie`, built whole, and its writer.
    pub(crate) fn build(trie: &Lpm6Trie) -> (Self, Tree) {
        let cap = 1 + trie.len() / 6 + SLACK;
        let mut tree = Tree {
            direct: (0..1usize << DIRECT_BITS)
                .map(|_| AtomicU32::new(0))
                .collect(),
            nodes: (0..cap).map(|_| Node::empty()).collect(),
            simd: Simd::detect(),
        };
        let mut w = Self {
            nodes: BlockAlloc::new(cap, 1, 1), // (node 0: the sink)
            dirty: Vec::new(),
            fresh: Vec::new(),
            stats: Lpm6Stats::default(),
        };
        while w.apply(trie, &tree, 0, 0, 0).is_err() {
            w.drop_fresh();
            let n = w.nodes.cap() * 2;
            tree = tree.grown(n);
            w.nodes.set_cap(n);
        }
        w.stats = Lpm6Stats::default();
        (w, tree)
    }

    pub(crate) fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    pub(crate) fn mark(&mut self, addr: u128, len: u8) {
        self.dirty.push((addr, len));
    }

    pub(crate) fn reclaim(&mut self, safe: u64) {
        self.nodes.reclaim(safe);
    }

    /// Applies the recorded changes to `tree`; `Some(new)`: publish `new` instead.
    pub(crate) fn commit(&mut self, trie: &Lpm6Trie, tree: &Tree, tag: u64) -> Option<Tree> {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable_by_key(|&(a, l)| (l, a));
        dirty.dedup();
        let mut grown: Option<Tree> = None;
        for &(addr, len) in &dirty {
            loop {
                let cur = grown.as_ref().unwrap_or(tree);
                match self.apply(trie, cur, addr, u32::from(len), tag) {
                    Ok(()) => break,
                    Err(Grow) => {
                        self.drop_fresh();
                        let n = self.nodes.cap() * 2;
                        let g = cur.grown(n);
                        self.nodes.set_cap(n);
                        self.stats.grown += 1;
                        grown = Some(g);
                    }
                }
            }
        }
        dirty.clear();
        self.dirty = dirty;
        grown
    }

    /// Brings the lookup of `addr/len`'s addresses up to date with the trie.
    fn apply(
        &mut self,
        trie: &Lpm6Trie,
        tree: &Tree,
        addr: u128,
        len: u32,
        tag: u64,
    ) -> Result<(), Grow> {
        if len <= DIRECT_BITS {
            let (t, best) = trie.descend(addr, len);
            let pos = if len == 0 {
                0
            } else {
                (addr >> (128 - len)) as usize
            };
            return self.fill_direct(trie, tree, t, len, pos, best, tag);
        }
        let d = (addr >> (128 - DIRECT_BITS)) as usize;
        let cur = tree.direct[d].load(Ordering::Relaxed);
        let (t, best) = trie.descend(addr, DIRECT_BITS);
        if cur & NODE == 0 || t == NIL || !trie.has_children(t) {
            return self.set_direct(trie, tree, d, t, best, tag);
        }
        self.update(trie, tree, Slot::Direct(d), cur, 0, addr, len, tag)
    }

    /// Brings the direct entries under trie node `t` (at `depth` <= 16, position
    /// `pos` there; `best` including its own route) up to date.
    #[allow(clippy::too_many_arguments)]
    fn fill_direct(
        &mut self,
        trie: &Lpm6Trie,
        tree: &Tree,
        t: u32,
        depth: u32,
        pos: usize,
        best: u32,
        tag: u64,
    ) -> Result<(), Grow> {
        if depth == DIRECT_BITS {
            return self.set_direct(trie, tree, pos, t, best, tag);
        }
        if t == NIL || !trie.has_children(t) {
            let span = 1usize << (DIRECT_BITS - depth);
            for d in pos * span..(pos + 1) * span {
                self.set_direct(trie, tree, d, NIL, best, tag)?;
            }
            return Ok(());
        }
        for b in 0..2 {
            let c = trie.node(t).child[b];
            let nb = if c != NIL && trie.node(c).id != NIL {
                trie.node(c).id
            } else {
                best
            };
            self.fill_direct(trie, tree, c, depth + 1, pos * 2 + b, nb, tag)?;
        }
        Ok(())
    }

    /// Direct entry `d` from trie node `t` at /16 (`best` including its route): a
    /// result, or a tree built whole.
    #[allow(clippy::too_many_arguments)]
    fn set_direct(
        &mut self,
        trie: &Lpm6Trie,
        tree: &Tree,
        d: usize,
        t: u32,
        best: u32,
        tag: u64,
    ) -> Result<(), Grow> {
        let new = if t != NIL && trie.has_children(t) {
            let mut list = Vec::new();
            self.emit(trie, tree, t, DIRECT_BITS, 0, best, 0, &mut list)?;
            let h = height_for(list.len());
            let root = self.build_tree(tree, &list, 0, h)?;
            self.stats.rebuilt += 1;
            node_ref(0, root)
        } else {
            best
        };
        self.fresh.clear();
        let old = tree.direct[d].load(Ordering::Relaxed);
        if old != new {
            tree.direct[d].store(new, Ordering::Release);
            self.stats.stored += 1;
            if old & NODE != 0 {
                self.retire_tree(tree, old, tag);
            }
        }
        Ok(())
    }

    /// Brings the level-`lvl` tree `root` (kept in `slot`) up to date for the
    /// change of `addr/len` (longer than the level's first bit).
    #[allow(clippy::too_many_arguments)]
    fn update(
        &mut self,
        trie: &Lpm6Trie,
        tree: &Tree,
        slot: Slot,
        root: u32,
        lvl: u32,
        addr: u128,
        len: u32,
        tag: u64,
    ) -> Result<(), Grow> {
        let end = DIRECT_BITS + 32 * (lvl + 1);
        let (lo, hi, depth) = if len > end {
            // Inside one block of the level's last bit: its own tree, if it has one
            // and keeps one, takes the change.
            let blk = k32(addr, lvl);
            let (t, _) = trie.descend(addr, end);
            if t != NIL && trie.has_children(t) {
                let (leaf, v) = self.find(tree, root & IDX, lvl, blk);
                if v & NODE != 0 {
                    return self.update(trie, tree, Slot::Lanes(leaf), v, lvl + 1, addr, len, tag);
                }
            }
            (blk, blk, end)
        } else {
            let lo = k32(addr, lvl);
            let span = end - len;
            let hi = if span >= 32 {
                MAX
            } else {
                lo | ((1u64 << span) - 1) as u32
            };
            (lo, hi, len)
        };
        let (t, best) = trie.descend(addr, depth);
        let mut new = Vec::new();
        self.emit(trie, tree, t, depth, lo, best, lvl, &mut new)?;
        // The path down to the lowest node whose range holds lo..=hi.
        let mut path: Vec<(u32, u32, u32, u32)> = Vec::new();
        let (mut n, mut nlo, mut nhi) = (root & IDX, 0u32, MAX);
        let mut h = tree.height(n, lvl);
        loop {
            path.push((n, nlo, nhi, h));
            if h == 0 {
                break;
            }
            let a = tree.val(n, tree.rank_w(n, lo));
            if a != tree.val(n, tree.rank_w(n, hi)) {
                break;
            }
            let j0 = (0..16).find(|&j| tree.val(n, j) == a).unwrap_or(0);
            let j1 = (0..16).rev().find(|&j| tree.val(n, j) == a).unwrap_or(15);
            if j0 > 0 {
                nlo = tree.key(n, j0 - 1);
            }
            if j1 < 15 {
                nhi = tree.key(n, j1) - 1;
            }
            n = a & IDX;
            h -= 1;
        }
        let mut old = Vec::new();
        for i in (0..path.len()).rev() {
            let (n, nlo, nhi, h) = path[i];
            old.clear();
            tree.collect(n, lvl, nlo, &mut old);
            normalize(&mut old);
            let list = splice(&old, lo, hi, nhi, &new);
            let fits = list.len() <= cap(h);
            if !fits && i > 0 {
                continue;
            }
            let h = if fits {
                h
            } else {
                height_for(list.len()).max(h + 1)
            };
            let built = node_ref(lvl, self.build_tree(tree, &list, lvl, h)?);
            self.fresh.clear();
            if i == 0 {
                self.store_slot(tree, slot, root, built);
            } else {
                self.replace_lanes(tree, path[i - 1].0, node_ref(lvl, n), built);
            }
            self.retire_level(tree, n, lvl, tag);
            for &(s, v) in &old {
                if (lo..=hi).contains(&s) && v & NODE != 0 {
                    self.retire_tree(tree, v, tag);
                }
            }
            break;
        }
        Ok(())
    }

    /// The leaf of the level-`lvl` tree `root` that holds key `k`, and its value.
    fn find(&self, tree: &Tree, mut n: u32, lvl: u32, k: u32) -> (u32, u32) {
        loop {
            let v = tree.val(n, tree.rank_w(n, k));
            if v & NODE != 0 && level(v) == lvl {
                n = v & IDX;
            } else {
                return (n, v);
            }
        }
    }

    /// Intervals of trie node `t` (at `depth`, its range starting at key `start`
    /// of level `lvl`; `best` including its own route) onto `out`; a block of the
    /// level's last bit with longer routes gets a next-level tree, built here.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        trie: &Lpm6Trie,
        tree: &Tree,
        t: u32,
        depth: u32,
        start: u32,
        best: u32,
        lvl: u32,
        out: &mut Vec<(u32, u32)>,
    ) -> Result<(), Grow> {
        let end = DIRECT_BITS + 32 * (lvl + 1);
        if t == NIL || !trie.has_children(t) {
            if out.last().is_none_or(|&(_, v)| v != best) {
                out.push((start, best));
            }
            return Ok(());
        }
        if depth == end {
            let mut list = Vec::new();
            self.emit(trie, tree, t, depth, 0, best, lvl + 1, &mut list)?;
            let root = self.build_tree(tree, &list, lvl + 1, height_for(list.len()))?;
            out.push((start, node_ref(lvl + 1, root)));
            return Ok(());
        }
        for b in 0..2u32 {
            let c = trie.node(t).child[b as usize];
            let nb = if c != NIL && trie.node(c).id != NIL {
                trie.node(c).id
            } else {
                best
            };
            let s = start | (b << (end - depth - 1));
            self.emit(trie, tree, c, depth + 1, s, nb, lvl, out)?;
        }
        Ok(())
    }

    /// A new subtree of height `h` for `list` (normalised; at most [`cap`]`(h)`
    /// intervals), filled before anything links it.
    fn build_tree(
        &mut self,
        tree: &Tree,
        list: &[(u32, u32)],
        lvl: u32,
        h: u32,
    ) -> Result<u32, Grow> {
        let n = self.nodes.alloc(1).map_err(|_| Grow)?;
        self.fresh.push(n);
        self.stats.nodes += 1;
        let mut keys = [MAX; 16];
        let mut vals = [0u32; 16];
        let len = list.len().max(1);
        if h == 0 {
            for (j, v) in vals.iter_mut().enumerate() {
                *v = list.get(j.min(len - 1)).map_or(0, |e| e.1);
            }
            for (j, k) in keys.iter_mut().enumerate().take(KEYS) {
                if let Some(e) = list.get(j + 1) {
                    *k = e.0;
                }
            }
        } else {
            let k = len.div_ceil(fill(h - 1)).clamp(1, 16);
            for c in 0..k {
                let chunk = &list[c * len / k..(c + 1) * len / k];
                vals[c] = node_ref(lvl, self.build_tree(tree, chunk, lvl, h - 1)?);
                if c > 0 {
                    keys[c - 1] = chunk[0].0;
                }
            }
            for j in k..16 {
                vals[j] = vals[k - 1];
            }
        }
        let node = &tree.nodes[n as usize];
        for j in 0..16 {
            node.keys[j].store(keys[j] ^ BIAS, Ordering::Relaxed);
            node.vals[j].store(vals[j], Ordering::Relaxed);
        }
        Ok(n)
    }

    fn store_slot(&mut self, tree: &Tree, slot: Slot, old: u32, new: u32) {
        match slot {
            Slot::Direct(d) => {
                tree.direct[d].store(new, Ordering::Release);
                self.stats.stored += 1;
            }
            Slot::Lanes(n) => self.replace_lanes(tree, n, old, new),
        }
    }

    /// Stores `new` into the lanes of node `n` that hold `old`.
    fn replace_lanes(&mut self, tree: &Tree, n: u32, old: u32, new: u32) {
        for v in &tree.nodes[n as usize].vals {
            if v.load(Ordering::Relaxed) == old {
                v.store(new, Ordering::Release);
                self.stats.stored += 1;
            }
        }
    }

    /// Retires the level-`lvl` nodes of the subtree at `n` (not the next levels'
    /// trees its leaves lead to).
    fn retire_level(&mut self, tree: &Tree, n: u32, lvl: u32, tag: u64) {
        if tree.is_internal(n, lvl) {
            let mut prev = None;
            for j in 0..16 {
                let v = tree.val(n, j);
                if prev != Some(v) {
                    prev = Some(v);
                    self.retire_level(tree, v & IDX, lvl, tag);
                }
            }
        }
        self.nodes.retire(n, 1, tag);
    }

    /// Retires the whole tree `root` refers to, the next levels' trees included.
    fn retire_tree(&mut self, tree: &Tree, root: u32, tag: u64) {
        let lvl = level(root);
        let mut list = Vec::new();
        tree.collect(root & IDX, lvl, 0, &mut list);
        list.dedup_by_key(|e| e.1);
        for &(_, v) in &list {
            if v & NODE != 0 && level(v) == lvl + 1 {
                self.retire_tree(tree, v, tag);
            }
        }
        self.retire_level(tree, root & IDX, lvl, tag);
    }

    fn drop_fresh(&mut self) {
        for n in self.fresh.drain(..) {
            self.nodes.free_now(n, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ipv6Prefix;

    /// Every compare variant the CPU runs gives the trie's answers, on routes of
    /// every length around a few dense blocks (tall trees, /48 blocks with longer
    /// routes, the edges of the key space).
    #[test]
    fn every_simd_variant_matches_the_trie() {
        let mut trie = Lpm6Trie::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (id, i) in (1..).zip(0..40_000u64) {
            let base: u128 = match i % 4 {
                0 => 0x2001_0db8 << 96,
                1 => 0x2a02_0000 << 96,
                2 => u128::MAX << 96,
                _ => 0,
            };
            let len = [48u8, 48, 44, 32, 56, 64, 128, 17, 3, 40][(rnd() % 10) as usize];
            let a = base ^ (u128::from(rnd()) << 64 | u128::from(rnd())) >> (i % 4 * 8 + 16);
            let p = Ipv6Prefix::new_truncated(std::net::Ipv6Addr::from(a), len).expect("prefix");
            trie.insert(p, id);
        }
        let (_, mut tree) = TreeWriter::build(&trie);
        let keys: Vec<u128> = (0..50_000)
            .map(|i| {
                let r = u128::from(rnd()) << 64 | u128::from(rnd());
                match i % 3 {
                    0 => (0x2001_0db8 << 96) | (r >> 32),
                    1 => (0x2a02_0000 << 96) | (r >> 40),
                    _ => r,
                }
            })
            .collect();
        for simd in Simd::all() {
            tree.simd = simd;
            let mut out = vec![0u32; keys.len()];
            tree.lookup_burst(&keys, &mut out);
            for (k, o) in keys.iter().zip(&out) {
                assert_eq!(*o, trie.lookup(*k), "{simd:?} {k:x}");
                assert_eq!(tree.lookup(*k), *o, "{simd:?} {k:x}");
            }
        }
    }
}
