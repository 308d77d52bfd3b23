//! The arrays readers see ([`Tree`]) and the writer that changes them in place
//! ([`TreeWriter`]); the layout is the module's (see `lpm6.rs`).
//!
//! A change goes, from the writer's trie, to the lowest block whose key range
//! holds the changed prefix's range: a copy of it gets new leaves for the range
//! (or, in an internal block, new subtrees for the children the range meets), split
//! as needed; when the copy would need more than 16 leaves (256 children), the
//! block's parent takes the change instead, and only when the root cannot, a
//! taller tree is built. One release store of the copy's reference into its
//! parent's lanes (or the direct entry) publishes it, and the replaced blocks are
//! retired for the readers' grace period. A reader reads one reference per block,
//! so it walks either the old block or the new one.
//!
//! Separators are stored minus one (and biased) and a lane counts when its stored
//! word is less than the key's: unused lanes hold all ones, which no key passes,
//! so a block needs only the leaves it uses and lane 15 of every key line never
//! counts.

use std::sync::atomic::{AtomicU32, Ordering};

use super::simd::{Lines, Simd, block_step, leaf_step, prefetch_block, prefetch_key, root_step};
use super::trie::NIL;
use super::{DIRECT_BITS, Lpm6Trie};
use crate::arena::BlockAlloc;

/// Flag of a value that refers to a block (else it is a result id).
pub(super) const NODE: u32 = 1 << 31;
const LEVEL_SHIFT: u32 = 29;
/// Block index bits of a reference.
pub(super) const IDX: u32 = (1 << LEVEL_SHIFT) - 1;
/// Key lanes compared per line (the 16th lane is padding).
pub(super) const KEYS: usize = 15;
/// Keys are stored with the top bit flipped, so signed SIMD compares order them.
pub(super) const BIAS: u32 = 1 << 31;
const MAX: u32 = u32::MAX;
/// The stored key of an unused lane: no key bits are greater.
pub(super) const SENTINEL: u32 = MAX ^ BIAS;
/// Leaves per block, lanes per leaf, lanes per block.
const LEAVES: usize = 16;
const LANES: usize = 16;
const FANOUT: usize = LEAVES * LANES;
/// Leaves per leaf block when a subtree is built (of 16, each built full): room
/// for a few leaves split by inserts.
const BLOCK_FILL: usize = 8;
const BURST: usize = 256;
/// Keys ahead whose next root line a lookup step prefetches.
const AHEAD: usize = 16;
/// Keys ahead (eight cache lines) the first pass prefetches.
const KEYS_AHEAD: usize = 32;
/// Free lines a structure is built with (at least).
const SLACK: usize = 4096;
/// Lines of the sink block (line 0: no separators, line 1: none, line 2: zeros).
const SINK_LINES: usize = 3;

/// Separator `s` (the first key of a lane, never 0) as stored: lane `#{stored < k}`
/// is then key `k`'s, and [`SENTINEL`] never counts.
#[inline(always)]
fn enc(s: u32) -> u32 {
    s.wrapping_sub(1) ^ BIAS
}

/// The separator a stored key word holds, if it is one.
fn dec(w: u32) -> Option<u32> {
    (w != SENTINEL).then(|| (w ^ BIAS).wrapping_add(1))
}

/// A reference to block `b` of a level-`lvl` tree.
#[inline(always)]
fn node_ref(lvl: u32, b: u32) -> u32 {
    NODE | (lvl << LEVEL_SHIFT) | b
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

/// Intervals a subtree of height `h` is built with at most (room left in leaves).
fn fill(h: u32) -> usize {
    (BLOCK_FILL * LANES).saturating_mul(FANOUT.saturating_pow(h))
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
    lines: Lines,
    simd: Simd,
}

impl Tree {
    #[inline(always)]
    fn walk(&self, simd: Simd, mut v: u32, key: u128) -> u32 {
        // (four levels of at most a few blocks each: the bound only guards the loop)
        for _ in 0..64 {
            if v & NODE == 0 {
                break;
            }
            v = block_step(simd, &self.lines, v, k32(key, level(v)) ^ BIAS);
        }
        if v & NODE == 0 { v } else { 0 }
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
        let Ok(direct) = <&[AtomicU32; 1 << DIRECT_BITS]>::try_from(&self.direct[..]) else {
            out.fill(0);
            return;
        };
        let mut st = [0u32; BURST];
        let mut kk = [0u32; BURST];
        // The keys still walking a level-0 tree, compacted after every pass.
        let mut act = [0u8; BURST];
        let mut next = [0u8; BURST];
        // The leaf line each key's current block picks.
        let mut lf = [0u32; BURST];
        let mut na = 0usize;
        let tree0 = |v: u32| v >> LEVEL_SHIFT == NODE >> LEVEL_SHIFT;
        // The direct entry and, under a tree, its root block (few and
        // cache-resident: the tree-less keys step through the sink block instead
        // of a branch); the next block's root line is prefetched.
        // (a key with the previous key's /48 takes its answer: packets to one
        // network come in trains)
        let mut last = (u64::MAX, 0u32);
        for (i, ((k, s), x)) in keys.iter().zip(&mut st).zip(&mut kk).enumerate() {
            prefetch_key(keys, i, KEYS_AHEAD);
            let d = direct[(*k >> (128 - DIRECT_BITS)) as usize].load(Ordering::Acquire);
            let kb = k32(*k, 0) ^ BIAS;
            // (48 bits: the first key never matches `last`'s start)
            let k48 = (*k >> 80) as u64;
            let v = if k48 == last.0 {
                last.1
            } else {
                let t = tree0(d);
                let v = block_step(simd, &self.lines, if t { d } else { 0 }, kb);
                let v = if t { v } else { d };
                last = (k48, v);
                v
            };
            prefetch_block(&self.lines, v);
            (*s, *x) = (v, kb);
            act[na & (BURST - 1)] = i as u8;
            na += usize::from(tree0(v));
        }
        // The next blocks: many, mostly leaf blocks, their lines to be fetched.
        // (a level-0 tree is one or two blocks tall: the bound only guards the loop)
        for _ in 0..8 {
            if na == 0 {
                break;
            }
            let mut m = 0usize;
            // A pipeline over the keys: the key `AHEAD` places on picks its leaf
            // (whose lines are prefetched), this key reads its leaf. Past `na` the
            // places hold stale keys: their leaves are picked again before use.
            for &a in &act[..na.min(AHEAD)] {
                let j = usize::from(a);
                lf[j] = root_step(simd, &self.lines, st[j], kk[j]);
            }
            for t in 0..na {
                let j = usize::from(act[(t + AHEAD) & (BURST - 1)]);
                lf[j] = root_step(simd, &self.lines, st[j], kk[j]);
                let a = act[t];
                let i = usize::from(a);
                let v = leaf_step(simd, &self.lines, lf[i], kk[i]);
                st[i] = v;
                next[m & (BURST - 1)] = a;
                m += usize::from(tree0(v));
            }
            std::mem::swap(&mut act, &mut next);
            na = m;
        }
        // (below /48 too, a key whose next 32 bits are the previous walk's
        // takes that step's answer; a block reference is never 0)
        let mut last = (0u32, 0u32, 0u32);
        for ((o, &s), k) in out.iter_mut().zip(&st).zip(keys) {
            *o = if s & NODE == 0 {
                s
            } else {
                let kb = k32(*k, level(s)) ^ BIAS;
                let v = if (s, kb) == (last.0, last.1) {
                    last.2
                } else {
                    let v = block_step(simd, &self.lines, s, kb);
                    last = (s, kb, v);
                    v
                };
                self.walk(simd, v, *k)
            };
        }
    }

    /// Bytes of the reader-visible arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.direct.len() * 4 + self.lines.bytes()
    }

    /// A copy with room for `lines` lines.
    fn grown(&self, lines: usize) -> Self {
        Self {
            direct: crate::arena::grow32(&self.direct, self.direct.len()),
            lines: self.lines.grown(lines, SENTINEL),
            simd: self.simd,
        }
    }

    // The writer's reads (relaxed).
    fn word(&self, line: u32, j: usize) -> u32 {
        self.lines.line(line).0[j].load(Ordering::Relaxed)
    }

    /// Leaves of block `b`.
    fn leaves(&self, b: u32) -> u32 {
        1 + (0..KEYS)
            .take_while(|&j| self.word(b, j) != SENTINEL)
            .count() as u32
    }

    /// Lines of block `b`.
    fn block_lines(&self, b: u32) -> usize {
        1 + 2 * self.leaves(b) as usize
    }

    /// The lanes (start, value) of leaf `j` of block `b` (its range starting at
    /// `start`) onto `out`.
    fn leaf_lanes(&self, b: u32, j: u32, start: u32, out: &mut Vec<(u32, u32)>) {
        let (kl, vl) = (
            self.lines.line(b + 1 + 2 * j),
            self.lines.line(b + 2 + 2 * j),
        );
        out.push((start, vl.0[0].load(Ordering::Relaxed)));
        for i in 0..KEYS {
            match dec(kl.0[i].load(Ordering::Relaxed)) {
                Some(s) => out.push((s, vl.0[i + 1].load(Ordering::Relaxed))),
                None => break,
            }
        }
    }

    /// The starts of the leaves of block `b` after the first.
    fn seps(&self, b: u32) -> impl Iterator<Item = u32> + '_ {
        (0..KEYS).map_while(move |j| dec(self.word(b, j)))
    }

    /// The lanes (start, value) of block `b` (its range starting at `lo`), in key
    /// order, onto `out`.
    fn lanes(&self, b: u32, lo: u32, out: &mut Vec<(u32, u32)>) {
        self.leaf_lanes(b, 0, lo, out);
        for (j, s) in (1..).zip(self.seps(b)) {
            self.leaf_lanes(b, j, s, out);
        }
    }

    /// The lane of block `b` (its range `lo..=hi`) that key bits `k` take: its
    /// value and range.
    fn lane_w(&self, b: u32, lo: u32, hi: u32, k: u32) -> (u32, u32, u32) {
        let rank = |line: u32| {
            (0..KEYS)
                .filter(|&j| (self.word(line, j) as i32) < ((k ^ BIAS) as i32))
                .count()
        };
        let r1 = rank(b);
        let (llo, lhi) = (
            if r1 == 0 {
                lo
            } else {
                dec(self.word(b, r1 - 1)).unwrap_or(lo)
            },
            dec(self.word(b, r1)).map_or(hi, |s| s - 1),
        );
        let leaf = b + 1 + 2 * r1 as u32;
        let r2 = rank(leaf);
        let start = if r2 == 0 {
            llo
        } else {
            dec(self.word(leaf, r2 - 1)).unwrap_or(llo)
        };
        let end = if r2 < KEYS {
            dec(self.word(leaf, r2)).map_or(lhi, |s| s - 1)
        } else {
            lhi
        };
        (self.word(leaf + 1, r2), start, end)
    }

    fn is_internal(&self, b: u32, lvl: u32) -> bool {
        let v = self.word(b + 2, 0);
        v & NODE != 0 && level(v) == lvl
    }

    fn height(&self, mut b: u32, lvl: u32) -> u32 {
        let mut h = 0;
        while self.is_internal(b, lvl) {
            b = self.word(b + 2, 0) & IDX;
            h += 1;
        }
        h
    }

    /// The intervals (start, value) of the subtree at `b` (its range starting at
    /// `lo`), in key order, not yet normalised.
    fn collect(&self, b: u32, lvl: u32, lo: u32, out: &mut Vec<(u32, u32)>) {
        if self.is_internal(b, lvl) {
            let mut l = Vec::new();
            self.lanes(b, lo, &mut l);
            for (s, v) in l {
                self.collect(v & IDX, lvl, s, out);
            }
        } else {
            self.lanes(b, lo, out);
        }
    }

    /// The value block `b` gives key bits `k` (the lookup's compares, in scalar).
    fn value_w(&self, b: u32, k: u32) -> u32 {
        let rank = |line: u32| {
            (0..KEYS)
                .filter(|&j| (self.word(line, j) as i32) < ((k ^ BIAS) as i32))
                .count() as u32
        };
        let leaf = b + 1 + 2 * rank(b);
        self.word(leaf + 1, rank(leaf) as usize)
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
    /// Blocks built.
    pub nodes: u64,
    /// Copies into larger arrays (free lines ran out).
    pub grown: u64,
    /// Whole /16 trees built after the first build (a route of /16 or shorter
    /// changed, or a /16 got its first longer route).
    pub rebuilt: u64,
}

/// Free lines ran out: grow the arrays and apply the change again.
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
    lines: BlockAlloc,
    dirty: Vec<(u128, u8)>,
    /// Blocks (base, lines) built for the change being applied: freed if it runs
    /// out of space.
    fresh: Vec<(u32, usize)>,
    pub(crate) stats: Lpm6Stats,
}

impl TreeWriter {
    /// The structure for `trie`, built whole, and its writer.
    pub(crate) fn build(trie: &Lpm6Trie) -> (Self, Tree) {
        let mut tree = Tree {
            direct: (0..1usize << DIRECT_BITS)
                .map(|_| AtomicU32::new(0))
                .collect(),
            lines: Lines::new(trie.len() / 2 + SLACK, SENTINEL),
            simd: Simd::detect(),
        };
        for w in &tree.lines.line(2).0 {
            w.store(0, Ordering::Relaxed);
        }
        let mut w = Self {
            lines: BlockAlloc::new(tree.lines.cap(), SINK_LINES, 1 + 2 * LEAVES),
            dirty: Vec::new(),
            fresh: Vec::new(),
            stats: Lpm6Stats::default(),
        };
        while w.apply(trie, &tree, 0, 0, 0).is_err() {
            w.drop_fresh();
            let n = w.lines.cap() * 2;
            tree = tree.grown(n);
            w.lines.set_cap(tree.lines.cap());
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
        self.lines.reclaim(safe);
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
                        let g = cur.grown(self.lines.cap() * 2);
                        self.lines.set_cap(g.lines.cap());
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
        // The path down to the lowest block whose range holds lo..=hi.
        let mut path: Vec<(u32, u32, u32, u32)> = Vec::new();
        let (mut n, mut nlo, mut nhi) = (root & IDX, 0u32, MAX);
        let mut h = tree.height(n, lvl);
        loop {
            path.push((n, nlo, nhi, h));
            if h == 0 {
                break;
            }
            let (v, s, end) = tree.lane_w(n, nlo, nhi, lo);
            if hi > end {
                break;
            }
            (n, nlo, nhi) = (v & IDX, s, end);
            h -= 1;
        }
        // The lowest block whose copy can take the change (its leaves, or its
        // children, split as needed).
        for i in (1..=path.len()).rev() {
            if self.patch(tree, slot, root, lvl, &path[..i], (lo, hi), &new, tag)? {
                return Ok(());
            }
        }
        // None can: a taller tree.
        let (n, h) = (root & IDX, path.first().map_or(0, |p| p.3));
        let mut old = Vec::new();
        tree.collect(n, lvl, 0, &mut old);
        normalize(&mut old);
        let list = splice(&old, lo, hi, MAX, &new);
        let h = height_for(list.len()).max(h + 1);
        let built = node_ref(lvl, self.build_tree(tree, &list, lvl, h)?);
        self.fresh.clear();
        self.store_slot(tree, slot, root, built);
        self.retire_level(tree, n, lvl, tag);
        for &(s, v) in &old {
            if (lo..=hi).contains(&s) && v & NODE != 0 {
                self.retire_tree(tree, v, tag);
            }
        }
        Ok(())
    }

    /// Rebuilds, in a copy of the lowest block of `path`, only the leaves (in a leaf
    /// block) or the children (in an internal one) whose ranges meet `lo..=hi`, with
    /// `new` there, and publishes the copy; `false` when the copy would need more
    /// than 16 leaves (or 256 children).
    #[allow(clippy::too_many_arguments)]
    fn patch(
        &mut self,
        tree: &Tree,
        slot: Slot,
        root: u32,
        lvl: u32,
        path: &[(u32, u32, u32, u32)],
        (lo, hi): (u32, u32),
        new: &[(u32, u32)],
        tag: u64,
    ) -> Result<bool, Grow> {
        let Some((&(n, nlo, nhi, h), up)) = path.split_last() else {
            return Ok(false);
        };
        let old;
        let built;
        if h == 0 {
            // (leaf j's range starts at starts[j])
            let starts: Vec<u32> = std::iter::once(nlo).chain(tree.seps(n)).collect();
            let k = starts.len();
            let j0 = starts.partition_point(|&s| s <= lo).saturating_sub(1);
            let j1 = starts.partition_point(|&s| s <= hi).saturating_sub(1);
            let z = starts.get(j1 + 1).map_or(nhi, |&s| s - 1);
            let mut o = Vec::with_capacity(LANES * (j1 + 1 - j0));
            for (j, &s) in (j0..=j1).zip(&starts[j0..=j1]) {
                tree.leaf_lanes(n, j as u32, s, &mut o);
            }
            normalize(&mut o);
            let list = splice(&o, lo, hi, z, new);
            let c = list.len().div_ceil(LANES).max(1);
            if k - (j1 - j0 + 1) + c > LEAVES {
                return Ok(false);
            }
            built = self.build_patched(tree, n, (j0, j1, k), &list, c)?;
            self.lines.retire(n, 1 + 2 * k, tag);
            old = o;
        } else {
            let mut lanes = Vec::with_capacity(FANOUT);
            tree.lanes(n, nlo, &mut lanes);
            let i0 = lanes.partition_point(|e| e.0 <= lo).saturating_sub(1);
            let i1 = lanes.partition_point(|e| e.0 <= hi).saturating_sub(1);
            let z = lanes.get(i1 + 1).map_or(nhi, |e| e.0 - 1);
            let mut o = Vec::new();
            for &(s, v) in &lanes[i0..=i1] {
                tree.collect(v & IDX, lvl, s, &mut o);
            }
            normalize(&mut o);
            let list = splice(&o, lo, hi, z, new);
            let fh = fill(h - 1);
            let c = list.len().div_ceil(fh).max(1);
            if lanes.len() - (i1 - i0 + 1) + c > FANOUT || list.len() > c * fh {
                return Ok(false);
            }
            let len = list.len();
            let mut out = Vec::with_capacity(lanes.len() + c);
            out.extend_from_slice(&lanes[..i0]);
            for i in 0..c {
                let chunk = &list[i * len / c..(i + 1) * len / c];
                let child = self.build_tree(tree, chunk, lvl, h - 1)?;
                out.push((chunk.first().map_or(0, |e| e.0), node_ref(lvl, child)));
            }
            out.extend_from_slice(&lanes[i1 + 1..]);
            built = self.build_block(tree, &out, LANES)?;
            self.lines.retire(n, tree.block_lines(n), tag);
            for &(_, v) in &lanes[i0..=i1] {
                self.retire_level(tree, v & IDX, lvl, tag);
            }
            old = o;
        }
        self.fresh.clear();
        let built = node_ref(lvl, built);
        match up.last() {
            None => self.store_slot(tree, slot, root, built),
            Some(p) => self.replace_lanes(tree, p.0, node_ref(lvl, n), built),
        }
        for &(s, v) in &old {
            if (lo..=hi).contains(&s) && v & NODE != 0 {
                self.retire_tree(tree, v, tag);
            }
        }
        Ok(true)
    }

    /// The leaf block of the level-`lvl` tree `root` that holds key `k`, and its
    /// value.
    fn find(&self, tree: &Tree, mut b: u32, lvl: u32, k: u32) -> (u32, u32) {
        loop {
            let v = tree.value_w(b, k);
            if v & NODE != 0 && level(v) == lvl {
                b = v & IDX;
            } else {
                return (b, v);
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

    /// A new subtree of height `h` (in blocks) for `list` (normalised; at most
    /// [`cap`]`(h)` intervals), filled before anything links it.
    fn build_tree(
        &mut self,
        tree: &Tree,
        list: &[(u32, u32)],
        lvl: u32,
        h: u32,
    ) -> Result<u32, Grow> {
        if h == 0 || list.is_empty() {
            return self.build_block(tree, list, LANES);
        }
        let len = list.len();
        let c = len.div_ceil(fill(h - 1)).clamp(1, FANOUT);
        let mut lanes = Vec::with_capacity(c);
        for i in 0..c {
            let chunk = &list[i * len / c..(i + 1) * len / c];
            let child = self.build_tree(tree, chunk, lvl, h - 1)?;
            lanes.push((chunk.first().map_or(0, |e| e.0), node_ref(lvl, child)));
        }
        self.build_block(tree, &lanes, LANES)
    }

    /// A new block for `lanes` (strictly increasing starts, at most [`FANOUT`]),
    /// `per` lanes a leaf where they fit.
    fn build_block(&mut self, tree: &Tree, lanes: &[(u32, u32)], per: usize) -> Result<u32, Grow> {
        let lanes = if lanes.is_empty() {
            &[(0, 0)][..]
        } else {
            lanes
        };
        debug_assert!(lanes.len() <= FANOUT);
        let n = lanes.len();
        let mut k = n.div_ceil(per).clamp(1, LEAVES);
        if n > LANES * k {
            k = n.div_ceil(LANES).min(LEAVES);
        }
        let groups: Vec<&[(u32, u32)]> =
            (0..k).map(|j| &lanes[j * n / k..(j + 1) * n / k]).collect();
        self.build_groups(tree, &groups)
    }

    /// A copy of leaf block `n` (`k` leaves) with its leaves `j0..=j1` replaced by
    /// `c` leaves of `list` (normalised, starting where leaf `j0` starts), filled
    /// before anything links it.
    fn build_patched(
        &mut self,
        tree: &Tree,
        n: u32,
        (j0, j1, k): (usize, usize, usize),
        list: &[(u32, u32)],
        c: usize,
    ) -> Result<u32, Grow> {
        let nk = (k - (j1 + 1 - j0) + c).clamp(1, LEAVES);
        let size = 1 + 2 * nk;
        let b = self.lines.alloc(size).map_err(|_| Grow)?;
        self.fresh.push((b, size));
        self.stats.nodes += 1;
        let len = list.len();
        let chunk = |i: usize| &list[i * len / c..(i + 1) * len / c];
        // Old leaf j (or new chunk i) at new position p; root lane p-1 its start.
        let (src, dst) = (tree.lines.line(n), tree.lines.line(b));
        let copy = |from: u32, to: u32| {
            for (d, s) in tree.lines.line(to).0.iter().zip(&tree.lines.line(from).0) {
                d.store(s.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        };
        let mut p = 0usize;
        let sep = |p: usize, s: Option<u32>| {
            if let (Some(w), Some(s)) = (p.checked_sub(1).and_then(|q| dst.0.get(q)), s) {
                w.store(enc(s), Ordering::Relaxed);
            }
        };
        for j in 0..j0 {
            sep(
                p,
                (j > 0)
                    .then(|| src.0[j - 1].load(Ordering::Relaxed))
                    .and_then(dec),
            );
            copy(n + 1 + 2 * j as u32, b + 1 + 2 * p as u32);
            copy(n + 2 + 2 * j as u32, b + 2 + 2 * p as u32);
            p += 1;
        }
        for i in 0..c {
            let g = chunk(i);
            sep(p, g.first().map(|e| e.0));
            self.write_leaf(tree, b + 1 + 2 * p as u32, g);
            p += 1;
        }
        for j in j1 + 1..k {
            sep(p, dec(src.0[j - 1].load(Ordering::Relaxed)));
            copy(n + 1 + 2 * j as u32, b + 1 + 2 * p as u32);
            copy(n + 2 + 2 * j as u32, b + 2 + 2 * p as u32);
            p += 1;
        }
        for w in &dst.0[p.saturating_sub(1)..] {
            w.store(SENTINEL, Ordering::Relaxed);
        }
        Ok(b)
    }

    /// Leaf `lanes` (1 to 16, starts strictly increasing) into the key line `kl`
    /// and the value line after it.
    fn write_leaf(&self, tree: &Tree, kl: u32, lanes: &[(u32, u32)]) {
        debug_assert!((1..=LANES).contains(&lanes.len()));
        let (k, v) = (tree.lines.line(kl), tree.lines.line(kl + 1));
        for i in 0..LANES {
            let key = lanes
                .get(i + 1)
                .filter(|_| i < KEYS)
                .map_or(SENTINEL, |e| enc(e.0));
            k.0[i].store(key, Ordering::Relaxed);
            let val = lanes.get(i).or(lanes.last()).map_or(0, |e| e.1);
            v.0[i].store(val, Ordering::Relaxed);
        }
    }

    /// A new block with one leaf per group of lanes (1 to 16 groups of 1 to 16
    /// lanes, starts strictly increasing), filled before anything links it.
    fn build_groups<G: AsRef<[(u32, u32)]>>(
        &mut self,
        tree: &Tree,
        groups: &[G],
    ) -> Result<u32, Grow> {
        debug_assert!((1..=LEAVES).contains(&groups.len()));
        let k = groups.len().clamp(1, LEAVES);
        let size = 1 + 2 * k;
        let b = self.lines.alloc(size).map_err(|_| Grow)?;
        self.fresh.push((b, size));
        self.stats.nodes += 1;
        let root = tree.lines.line(b);
        for (j, w) in root.0.iter().enumerate() {
            let s = match groups.get(j + 1).and_then(|g| g.as_ref().first()) {
                Some(e) if j + 1 < k => enc(e.0),
                _ => SENTINEL,
            };
            w.store(s, Ordering::Relaxed);
        }
        for (j, g) in groups.iter().take(k).enumerate() {
            self.write_leaf(tree, b + 1 + 2 * j as u32, g.as_ref());
        }
        Ok(b)
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

    /// Stores `new` into the lanes of block `b` that hold `old`.
    fn replace_lanes(&mut self, tree: &Tree, b: u32, old: u32, new: u32) {
        for j in 0..tree.leaves(b) {
            for v in &tree.lines.line(b + 2 + 2 * j).0 {
                if v.load(Ordering::Relaxed) == old {
                    v.store(new, Ordering::Release);
                    self.stats.stored += 1;
                }
            }
        }
    }

    /// Retires the level-`lvl` blocks of the subtree at `b` (not the next levels'
    /// trees its leaves lead to).
    fn retire_level(&mut self, tree: &Tree, b: u32, lvl: u32, tag: u64) {
        if tree.is_internal(b, lvl) {
            let mut l = Vec::new();
            tree.lanes(b, 0, &mut l);
            for (_, v) in l {
                self.retire_level(tree, v & IDX, lvl, tag);
            }
        }
        self.lines.retire(b, tree.block_lines(b), tag);
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
        for (b, size) in self.fresh.drain(..) {
            self.lines.free_now(b, size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ipv6Prefix;

    fn prefix(a: u128, l: u8) -> Ipv6Prefix {
        Ipv6Prefix::new_truncated(std::net::Ipv6Addr::from(a), l).expect("prefix")
    }

    /// The first and last address of every route and their outer neighbours, the
    /// edges of the /16 and /48 blocks they lie in, and a few addresses inside.
    fn edge_keys(routes: &[(u128, u8)]) -> Vec<u128> {
        let mut keys = Vec::new();
        for &(a, l) in routes {
            let last = a | u128::MAX.checked_shr(u32::from(l)).unwrap_or(0);
            keys.extend([
                a,
                a.wrapping_sub(1),
                last,
                last.wrapping_add(1),
                a | (last >> 1 & !a),
            ]);
            for b in [16u32, 48, 80] {
                let m = u128::MAX >> b;
                keys.extend([
                    a & !m,
                    (a & !m).wrapping_sub(1),
                    a | m,
                    (a | m).wrapping_add(1),
                ]);
            }
        }
        keys
    }

    /// Every variant's burst and single lookups against the trie.
    fn assert_matches(tree: &mut Tree, trie: &Lpm6Trie, keys: &[u128], what: &str) {
        for simd in Simd::all() {
            tree.simd = simd;
            let mut out = vec![0u32; keys.len()];
            tree.lookup_burst(keys, &mut out);
            for (k, o) in keys.iter().zip(&out) {
                assert_eq!(*o, trie.lookup(*k), "{what}: {simd:?} {k:x}");
                assert_eq!(tree.lookup(*k), *o, "{what}: {simd:?} {k:x}");
            }
        }
        tree.simd = Simd::detect();
    }

    /// Applies the marked changes of `w` as the table does, taking a grown copy
    /// when one is made.
    fn commit(w: &mut TreeWriter, trie: &Lpm6Trie, tree: &mut Tree, tag: &mut u64) {
        *tag += 1;
        if let Some(g) = w.commit(trie, tree, *tag) {
            *tree = g;
        }
        w.reclaim(*tag);
    }

    /// Routes dense enough for two-block trees and next-level trees: inserted one
    /// commit each into an empty table (the line array grows), withdrawn and
    /// announced again (leaves and blocks split, copies published), covers
    /// changed over whole blocks; the answers match the trie at every block and
    /// route edge after each phase.
    #[test]
    fn blocks_split_grow_and_match_the_trie_at_their_edges() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut routes: Vec<(u128, u8)> = Vec::new();
        for i in 0..12_000u64 {
            let r = u128::from(rnd());
            let (base, len) = match i % 6 {
                // a dense /16: two blocks tall
                0..=2 => (0x2a02u128 << 112 | (r & 0xffff_ffff) << 80, 48),
                // a dense /32 inside it
                3 => (
                    0x2a02_0db8u128 << 96 | (r & 0xffff) << 80,
                    [44u8, 48, 46][(r >> 20) as usize % 3],
                ),
                // /48 blocks with longer routes: next-level trees
                4 => (
                    0x2001_0db8_0001u128 << 80 | (r & 0xff) << 72 | (r >> 8 & 0xf) << 64,
                    [56u8, 64, 128][(r >> 16) as usize % 3],
                ),
                // the edges of the key space
                _ => (
                    if r & 1 == 0 { 0 } else { u128::MAX << 96 } | (r >> 1 & 0xffff_ffff) << 64,
                    [32u8, 17, 48, 64][(r >> 40) as usize % 4],
                ),
            };
            routes.push((base, len));
        }
        routes.extend([
            (0x2a02u128 << 112, 16),
            (0x2a00u128 << 112, 12),
            (0, 0),
            (u128::MAX, 128),
        ]);
        let mut trie = Lpm6Trie::new();
        let (mut w, mut tree) = TreeWriter::build(&trie);
        let mut tag = 0u64;
        for (id, &(a, l)) in (1..).zip(&routes) {
            let p = prefix(a, l);
            trie.insert(p, id);
            w.mark(p.addr_u128(), p.prefix_len());
            if id % 7 != 0 {
                commit(&mut w, &trie, &mut tree, &mut tag);
            }
        }
        commit(&mut w, &trie, &mut tree, &mut tag);
        assert!(w.stats.grown > 0, "{:?}", w.stats);
        let keys = edge_keys(&routes);
        assert_matches(&mut tree, &trie, &keys, "inserted");
        let d = tree.direct[0x2a02].load(Ordering::Relaxed);
        assert!(
            d & NODE != 0 && tree.height(d & IDX, 0) == 1,
            "two blocks tall"
        );
        // Withdraw a third (one commit each, then in batches) and announce again.
        for (round, chunk) in routes.chunks(4_000).enumerate() {
            for (i, &(a, l)) in chunk.iter().enumerate() {
                let p = prefix(a, l);
                if trie.remove(p).is_some() {
                    w.mark(p.addr_u128(), p.prefix_len());
                }
                if round == 0 || i % 100 == 0 {
                    commit(&mut w, &trie, &mut tree, &mut tag);
                }
            }
            commit(&mut w, &trie, &mut tree, &mut tag);
            assert_matches(&mut tree, &trie, &keys, "withdrawn");
            for (id, &(a, l)) in (1_000_000..).zip(chunk) {
                let p = prefix(a, l);
                trie.insert(p, id);
                w.mark(p.addr_u128(), p.prefix_len());
                commit(&mut w, &trie, &mut tree, &mut tag);
            }
            assert_matches(&mut tree, &trie, &keys, "announced");
        }
        // Covers over whole blocks: the /16, the /12 and the default route.
        for &(a, l) in &[(0x2a02u128 << 112, 16u8), (0x2a00u128 << 112, 12), (0, 0)] {
            let p = prefix(a, l);
            trie.remove(p);
            w.mark(p.addr_u128(), p.prefix_len());
            commit(&mut w, &trie, &mut tree, &mut tag);
            assert_matches(&mut tree, &trie, &keys, "cover withdrawn");
            trie.insert(p, 7);
            w.mark(p.addr_u128(), p.prefix_len());
            commit(&mut w, &trie, &mut tree, &mut tag);
            assert_matches(&mut tree, &trie, &keys, "cover announced");
        }
    }

    /// Sixteen /64s under one /48 (l3fwd's IPv6 table): keys in a row share
    /// the answer of a step and each still gets its own below it.
    #[test]
    fn keys_of_one_48_in_a_row_get_their_own_answers() {
        let mut trie = Lpm6Trie::new();
        for i in 0..16u32 {
            let a = 0x2001_0200_0000_0000u128 << 64 | u128::from(i) << 64;
            let p = Ipv6Prefix::new_truncated(std::net::Ipv6Addr::from(a), 64).expect("prefix");
            trie.insert(p, i + 1);
        }
        // (and a /96 in 2001:200:0:1::/64: keys in a row that share bits
        // 48-79 part below them)
        let a = 0x2001_0200_0000_0001u128 << 64 | 1 << 32;
        let p = Ipv6Prefix::new_truncated(std::net::Ipv6Addr::from(a), 96).expect("prefix");
        trie.insert(p, 100);
        let (_, mut tree) = TreeWriter::build(&trie);
        let keys: Vec<u128> = (0..300u128)
            .map(|i| 0x2001_0200_0000_0000u128 << 64 | (i * 7 % 20) << 64 | i)
            .chain((0..300u128).map(|i| 0x2001_0200_0000_0001u128 << 64 | (i % 3 / 2) << 32 | i))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] >> 80 == w[1] >> 80));
        assert_matches(&mut tree, &trie, &keys, "16 /64s and a /96");
    }

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
