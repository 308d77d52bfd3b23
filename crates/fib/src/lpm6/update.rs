//! Route changes applied to a published [`Lpm6`] while readers use it.
//!
//! The writer records the prefixes whose route changed ([`Lpm6Writer::mark`]) and
//! applies them at a commit, each to the direct entries under it:
//! - an entry under no route longer than the direct bits gets its new result id
//!   with one release store (nothing is stored when it already holds it);
//! - an entry with longer routes under it (a *region*) is rebuilt whole: its nodes
//!   and leaves are written into free space, then the entry is swung to the new
//!   root with one release store, and the old nodes and leaves are retired, reused
//!   once every reader that could hold them has passed a quiescent point
//!   ([`crate::qsbr`]).
//!
//! A reader reads one direct entry and then only nodes reachable from it, never
//! written while reachable, so it sees for each key the table before or after a
//! change, never a mix. When the free space runs out, the arrays are copied into
//! larger ones and the copy is published; when a route longer than /3 first lands
//! in an eighth of the address space without direct entries, the structure is built
//! again whole.

use std::sync::atomic::Ordering;

use super::trie::NIL;
use super::{Kid, LEAF, Lpm6, Lpm6Trie, OCTANT_BITS, SINK, expand, upto};
use crate::arena::BlockAlloc;

/// How a table's route changes were applied (counted since it was created).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lpm6Stats {
    /// Direct entries given a new result id in place.
    pub in_place: u64,
    /// Regions (direct entries with longer routes under them) rebuilt and swung in.
    pub regions: u64,
    /// Nodes below a region's root rebuilt with their subtree, swung in by their
    /// parent's bases.
    pub subtrees: u64,
    /// Copies into larger arrays (free space ran out).
    pub grown: u64,
    /// Whole rebuilds (an eighth of the address space needed direct entries).
    pub rebuilt: u64,
}

/// Why an update stopped: the arrays are full, or only a whole rebuild will do.
enum Stop {
    Grow,
    Rebuild,
}

/// Largest block either allocator hands out: a node's children (2^stride) or
/// its leaves (at most one per child).
const MAX_BLOCK: usize = 256;
/// Changes below the direct bits in one region and one commit applied one by
/// one; more are one rebuild of the region.
const MERGE: usize = 32;
/// Free nodes a structure is built with (and 8 leaves per node).
const SLACK: usize = 1024;

/// Writer-side state of one IPv6 table's lookup structure.
#[derive(Debug)]
pub(super) struct Lpm6Writer {
    nodes: BlockAlloc,
    leaves: BlockAlloc,
    /// Prefixes (address, length) changed since the last commit.
    dirty: Vec<(u128, u8)>,
    /// Blocks allocated for the region being built: freed if it runs out of space.
    fresh: Vec<(bool, u32, usize)>,
    stats: Lpm6Stats,
}

impl Lpm6Writer {
    /// The structure for `trie`, built whole, and its writer.
    pub(super) fn build(trie: &Lpm6Trie, direct_bits: u32, stride: u32) -> (Self, Lpm6) {
        let (lpm, nodes, leaves) = Lpm6::build_slack(trie, direct_bits, stride, SLACK);
        let w = Self {
            nodes: BlockAlloc::with_used(nodes + SLACK, nodes, MAX_BLOCK),
            leaves: BlockAlloc::with_used(leaves + 8 * SLACK, leaves, MAX_BLOCK),
            dirty: Vec::new(),
            fresh: Vec::new(),
            stats: Lpm6Stats::default(),
        };
        (w, lpm)
    }

    pub(super) fn stats(&self) -> Lpm6Stats {
        self.stats
    }

    pub(super) fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Records that the route of `addr/len` changed (added, replaced or removed).
    pub(super) fn mark(&mut self, addr: u128, len: u8) {
        self.dirty.push((addr, len));
    }

    /// Applies the recorded changes (the trie already holds them) to `lpm`, tagging
    /// what it retires with epoch `tag`. `Some(new)`: the changes went into a new
    /// structure, to be published in `lpm`'s place.
    pub(super) fn commit(&mut self, trie: &Lpm6Trie, lpm: &Lpm6, tag: u64) -> Option<Lpm6> {
        let mut dirty = std::mem::take(&mut self.dirty);
        let db = lpm.direct_bits;
        // More than MERGE changes below the direct bits in one region are one
        // rebuild of the region; shorter prefixes first (their refills may rebuild what
        // longer ones touch); each once.
        let region = |a: u128| a >> (128 - db);
        dirty.sort_unstable_by_key(|&(a, l)| (u32::from(l) > db, region(a), l, a));
        dirty.dedup();
        let mut k = 0;
        while k < dirty.len() {
            let (a, l) = dirty[k];
            let mut end = k + 1;
            while end < dirty.len() && u32::from(l) > db && region(dirty[end].0) == region(a) {
                end += 1;
            }
            if end > k + MERGE {
                dirty[k] = (a & (u128::MAX << (128 - db)), db as u8);
                dirty.drain(k + 1..end);
            }
            k += 1;
        }
        let mut grown: Option<Lpm6> = None;
        for &(addr, len) in &dirty {
            loop {
                let cur = grown.as_ref().unwrap_or(lpm);
                match self.apply(trie, cur, addr, u32::from(len), tag) {
                    Ok(()) => break,
                    Err(Stop::Grow) => {
                        self.drop_fresh();
                        let (n, l) = (self.nodes.cap() * 2, self.leaves.cap() * 2);
                        let g = cur.grown(n, l);
                        self.nodes.set_cap(n);
                        self.leaves.set_cap(l);
                        self.stats.grown += 1;
                        grown = Some(g);
                    }
                    Err(Stop::Rebuild) => {
                        self.drop_fresh();
                        let stats = self.stats;
                        let (w, new) = Self::build(trie, lpm.direct_bits, lpm.stride);
                        *self = w;
                        self.stats = Lpm6Stats {
                            rebuilt: stats.rebuilt + 1,
                            ..stats
                        };
                        return Some(new);
                    }
                }
            }
        }
        dirty.clear();
        self.dirty = dirty;
        grown
    }

    /// Retired blocks whose grace period is over (every epoch `<= safe`) become free.
    pub(super) fn reclaim(&mut self, safe: u64) {
        self.nodes.reclaim(safe);
        self.leaves.reclaim(safe);
    }

    /// Brings what lies under `addr/len` up to date with the trie: for a route
    /// longer than the direct bits, the deepest node above it that stays a node is
    /// written anew, sharing its children the change leaves alone, and swung in
    /// ([`Lpm6Writer::replace_node`]); else (or when the region's root goes) the
    /// direct entries under it.
    fn apply(
        &mut self,
        trie: &Lpm6Trie,
        lpm: &Lpm6,
        addr: u128,
        len: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        let db = lpm.direct_bits;
        if len <= db {
            return self.refill(trie, lpm, addr, len, tag);
        }
        let region = addr & (u128::MAX << (128 - db));
        let w = lpm.octant[(addr >> (128 - OCTANT_BITS)) as usize].load(Ordering::Relaxed);
        if w >> 32 == 0 {
            return self.refill(trie, lpm, region, db, tag);
        }
        let r = w as u32 as usize + ((addr << OCTANT_BITS) >> (128 - (db - OCTANT_BITS))) as usize;
        let root = lpm
            .direct
            .get(r)
            .map_or(LEAF, |e| e.load(Ordering::Relaxed));
        if root & LEAF != 0 || root == SINK {
            return self.refill(trie, lpm, region, db, tag);
        }
        // The nodes on the way down, each with its depth, while the next one still
        // lies above the route.
        let group = 1usize << (lpm.stride - 6);
        let mut path = [(0u32, 0u32); 16];
        let mut n = 1;
        path[0] = (root, db);
        while n < path.len() && path[n - 1].1 + lpm.stride <= len {
            let (node, depth) = path[n - 1];
            let c = chunk(addr, depth, lpm.stride);
            let part = &lpm.nodes[node as usize * group + (c >> 6) as usize];
            let (vector, bases) = (
                part[0].load(Ordering::Relaxed),
                part[2].load(Ordering::Relaxed),
            );
            let v = c & 63;
            if vector & (1 << v) == 0 {
                break;
            }
            let child = ((bases >> 32) as u32) + (vector & upto(v)).count_ones() - 1;
            path[n] = (child, depth + lpm.stride);
            n += 1;
        }
        for k in (0..n).rev() {
            let (t, best) = trie.descend(addr, path[k].1);
            if t != NIL && trie.has_children(t) {
                let parent = if k == 0 { SINK } else { path[k - 1].0 };
                return self.replace_node(
                    trie,
                    lpm,
                    (parent, r),
                    path[k],
                    (addr, len),
                    (t, best),
                    tag,
                );
            }
        }
        self.refill(trie, lpm, region, db, tag)
    }

    /// Replaces node `x` (trie node `t` at `depth`, `best` including its own
    /// route), the child of `parent` on `addr`'s way, which stays a node: a new
    /// block for the children of the parent's part with the siblings' words copied,
    /// `x` written anew into it sharing its children outside the change
    /// ([`Lpm6Writer::put_node_sharing`]); then the part's bases swung with one
    /// release store, and the old block, `x`'s old parts and the children it no
    /// longer shares retired. `parent` [`SINK`]: `x` is the root of direct entry
    /// `entry`, swung there.
    #[allow(clippy::too_many_arguments)]
    fn replace_node(
        &mut self,
        trie: &Lpm6Trie,
        lpm: &Lpm6,
        (parent, entry): (u32, usize),
        (x, depth): (u32, u32),
        (addr, len): (u128, u32),
        (t, best): (u32, u32),
        tag: u64,
    ) -> Result<(), Stop> {
        let group = 1usize << (lpm.stride - 6);
        // The positions of x's children the change covers.
        let lo = chunk(addr, depth, lpm.stride);
        let hi = if len >= depth + lpm.stride {
            lo
        } else {
            lo | ((1 << (depth + lpm.stride - len)) - 1)
        };
        let shared = if parent == SINK {
            let slot = self.alloc(false, 1)?;
            let shared = self.put_node_sharing(trie, lpm, t, best, slot, Some((x, lo, hi)))?;
            lpm.direct[entry].store(slot, Ordering::Release);
            self.nodes.retire(x, 1, tag);
            shared
        } else {
            let pdepth = depth - lpm.stride;
            let c = chunk(addr, pdepth, lpm.stride);
            let part = &lpm.nodes[parent as usize * group + (c >> 6) as usize];
            let (vector, bases) = (
                part[0].load(Ordering::Relaxed),
                part[2].load(Ordering::Relaxed),
            );
            let kids = vector.count_ones();
            let pos = (vector & upto(c & 63)).count_ones() - 1;
            let old = (bases >> 32) as u32;
            let new = self.alloc(false, kids as usize)?;
            for i in (0..kids).filter(|&i| i != pos) {
                copy_node(lpm, group, (old + i) as usize, (new + i) as usize);
            }
            let shared = self.put_node_sharing(trie, lpm, t, best, new + pos, Some((x, lo, hi)))?;
            part[2].store(
                (bases & 0xffff_ffff) | u64::from(new) << 32,
                Ordering::Release,
            );
            self.nodes.retire(old, kids as usize, tag);
            shared
        };
        self.fresh.clear();
        self.stats.subtrees += 1;
        self.retire_shallow(lpm, x, shared, tag);
        Ok(())
    }

    /// Brings the direct entries under `addr/len` (`len` at most the direct bits)
    /// up to date with the trie.
    fn refill(
        &mut self,
        trie: &Lpm6Trie,
        lpm: &Lpm6,
        addr: u128,
        len: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        if len < OCTANT_BITS {
            let first = (addr >> (128 - OCTANT_BITS)) as usize;
            for o in first..first + (1 << (OCTANT_BITS - len)) {
                self.octant(trie, lpm, o, tag)?;
            }
            return Ok(());
        }
        let o = (addr >> (128 - OCTANT_BITS)) as usize;
        let w = lpm.octant[o].load(Ordering::Relaxed);
        if w >> 32 == 0 {
            return self.octant(trie, lpm, o, tag);
        }
        let (t, best) = trie.descend(addr, len);
        let pos = if len == OCTANT_BITS {
            0
        } else {
            ((addr << OCTANT_BITS) >> (128 - (len - OCTANT_BITS))) as usize
        };
        self.fill(trie, lpm, w as u32 as usize, t, len, pos, best, tag)
    }

    /// Brings eighth `o` of the address space up to date.
    fn octant(&mut self, trie: &Lpm6Trie, lpm: &Lpm6, o: usize, tag: u64) -> Result<(), Stop> {
        let (t, best) = trie.descend((o as u128) << (128 - OCTANT_BITS), OCTANT_BITS);
        let w = lpm.octant[o].load(Ordering::Relaxed);
        if w >> 32 != 0 {
            return self.fill(trie, lpm, w as u32 as usize, t, OCTANT_BITS, 0, best, tag);
        }
        if t != NIL && trie.has_children(t) {
            return Err(Stop::Rebuild);
        }
        self.set_entry(lpm, w as u32 as usize, LEAF | best, tag);
        Ok(())
    }

    /// Brings the direct entries under trie node `t` (at `depth`, or [`NIL`]: no
    /// route below) up to date: entries `base + (pos << (direct_bits - depth))`
    /// onwards; `best` includes `t`'s own route.
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &mut self,
        trie: &Lpm6Trie,
        lpm: &Lpm6,
        base: usize,
        t: u32,
        depth: u32,
        pos: usize,
        best: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        if depth == lpm.direct_bits {
            let v = self.region(trie, lpm, t, best)?;
            self.set_entry(lpm, base + pos, v, tag);
            return Ok(());
        }
        if t == NIL || !trie.has_children(t) {
            let span = 1usize << (lpm.direct_bits - depth);
            for i in base + pos * span..base + (pos + 1) * span {
                self.set_entry(lpm, i, LEAF | best, tag);
            }
            return Ok(());
        }
        for b in 0..2 {
            let c = trie.node(t).child[b];
            let id = if c == NIL { NIL } else { trie.node(c).id };
            let nb = if id != NIL { id } else { best };
            self.fill(trie, lpm, base, c, depth + 1, pos * 2 + b, nb, tag)?;
        }
        Ok(())
    }

    /// The direct entry for trie node `t` at the direct bits (`best` including its
    /// own route): a leaf, or the root of new nodes built for the routes below it.
    fn region(&mut self, trie: &Lpm6Trie, lpm: &Lpm6, t: u32, best: u32) -> Result<u32, Stop> {
        if t == NIL || !trie.has_children(t) {
            return Ok(LEAF | best);
        }
        let slot = self.alloc(false, 1)?;
        self.put_node(trie, lpm, t, best, slot)?;
        self.stats.regions += 1;
        Ok(slot)
    }

    /// Writes the node for trie node `t` (`best` including its own route) into free
    /// slot `slot`, its children and leaves into new blocks.
    fn put_node(
        &mut self,
        trie: &Lpm6Trie,
        lpm: &Lpm6,
        t: u32,
        best: u32,
        slot: u32,
    ) -> Result<(), Stop> {
        self.put_node_sharing(trie, lpm, t, best, slot, None)
            .map(|_| ())
    }

    /// [`Lpm6Writer::put_node`], with `share = Some((old, lo, hi))`: a child that
    /// is a node at a position outside `lo..=hi` and was one in node `old` (the
    /// version being replaced) is that old child, its words copied (its subtree
    /// shared), not built again. Returns the positions shared, a bit each.
    fn put_node_sharing(
        &mut self,
        trie: &Lpm6Trie,
        lpm: &Lpm6,
        t: u32,
        best: u32,
        slot: u32,
        share: Option<(u32, u32, u32)>,
    ) -> Result<[u64; 4], Stop> {
        let group = 1usize << (lpm.stride - 6);
        let mut kids = [Kid::Leaf(0); 256];
        let kids = &mut kids[..64 * group];
        expand(trie, lpm.stride, t, 0, 0, best, kids);
        // A block of children and one of leaves per part, the sizes they are
        // retired in ([`Lpm6Writer::retire_tree`]), so that freed blocks fit again.
        let mut firsts = [0u32; 4];
        for (q, part) in kids.chunks(64).enumerate() {
            let nkids = part.iter().filter(|k| matches!(k, Kid::Node(..))).count();
            let base1 = self.alloc(false, nkids)?;
            let mut leaf = self.alloc(true, runs(part))?;
            firsts[q] = base1;
            let (mut vector, mut leafvec) = (0u64, 0u64);
            let first = leaf;
            let mut prev = None;
            for (v, k) in part.iter().enumerate() {
                match *k {
                    Kid::Node(..) => vector |= 1 << v,
                    Kid::Leaf(x) if prev != Some(x) => {
                        leafvec |= 1 << v;
                        lpm.leaves[leaf as usize].store(x, Ordering::Relaxed);
                        leaf += 1;
                        prev = Some(x);
                    }
                    Kid::Leaf(_) => {}
                }
            }
            let words = &lpm.nodes[slot as usize * group + q];
            words[0].store(vector, Ordering::Relaxed);
            words[1].store(leafvec, Ordering::Relaxed);
            words[2].store(u64::from(first) | u64::from(base1) << 32, Ordering::Relaxed);
        }
        let mut shared = [0u64; 4];
        for (q, part) in kids.chunks(64).enumerate() {
            let mut k = firsts[q];
            let old = share.map(|(old, lo, hi)| {
                let w = &lpm.nodes[old as usize * group + q];
                (
                    w[0].load(Ordering::Relaxed),
                    w[2].load(Ordering::Relaxed),
                    lo,
                    hi,
                )
            });
            for (v, c) in part.iter().enumerate() {
                let Kid::Node(ct, cb) = *c else {
                    continue;
                };
                let at = (q * 64 + v) as u32;
                match old {
                    Some((vector, bases, lo, hi))
                        if (at < lo || at > hi) && vector & (1 << v) != 0 =>
                    {
                        let from = ((bases >> 32) as u32 + (vector & upto(v as u32)).count_ones()
                            - 1) as usize;
                        copy_node(lpm, group, from, k as usize);
                        shared[q] |= 1 << v;
                    }
                    _ => self.put_node(trie, lpm, ct, cb, k)?,
                }
                k += 1;
            }
        }
        Ok(shared)
    }

    /// Stores `new` into direct entry `i` (one release store, none if it holds it
    /// already) and retires the nodes the old value led to.
    fn set_entry(&mut self, lpm: &Lpm6, i: usize, new: u32, tag: u64) {
        self.fresh.clear();
        let Some(e) = lpm.direct.get(i) else {
            return;
        };
        let old = e.load(Ordering::Relaxed);
        if old == new {
            return;
        }
        e.store(new, Ordering::Release);
        if new & LEAF != 0 {
            self.stats.in_place += 1;
        }
        if old & LEAF == 0 && old != SINK {
            self.retire_tree(lpm, old, tag);
            self.nodes.retire(old, 1, tag);
        }
    }

    /// Retires node `x`'s blocks of children and leaves, and the subtrees of its
    /// children not in `shared` (a bit per position).
    fn retire_shallow(&mut self, lpm: &Lpm6, x: u32, shared: [u64; 4], tag: u64) {
        let group = 1usize << (lpm.stride - 6);
        for (q, keep) in shared.iter().enumerate().take(group) {
            let p = &lpm.nodes[x as usize * group + q];
            let bases = p[2].load(Ordering::Relaxed);
            let vector = p[0].load(Ordering::Relaxed);
            let leaves = p[1].load(Ordering::Relaxed).count_ones() as usize;
            let base1 = (bases >> 32) as u32;
            let (mut rest, mut c) = (vector, 0u32);
            while rest != 0 {
                if keep & (rest & rest.wrapping_neg()) == 0 {
                    self.retire_tree(lpm, base1 + c, tag);
                }
                rest &= rest - 1;
                c += 1;
            }
            self.nodes.retire(base1, vector.count_ones() as usize, tag);
            self.leaves.retire(bases as u32, leaves, tag);
        }
    }

    /// Retires the children and leaves of node `idx`, and theirs.
    fn retire_tree(&mut self, lpm: &Lpm6, idx: u32, tag: u64) {
        // Part by part: a part's children may have been moved to a block of
        // their own (`replace_child`).
        let group = 1usize << (lpm.stride - 6);
        for q in 0..group {
            let p = &lpm.nodes[idx as usize * group + q];
            let bases = p[2].load(Ordering::Relaxed);
            let kids = p[0].load(Ordering::Relaxed).count_ones();
            let leaves = p[1].load(Ordering::Relaxed).count_ones() as usize;
            let base1 = (bases >> 32) as u32;
            for c in 0..kids {
                self.retire_tree(lpm, base1 + c, tag);
            }
            self.nodes.retire(base1, kids as usize, tag);
            self.leaves.retire(bases as u32, leaves, tag);
        }
    }

    /// A block of `size` nodes or leaves, recorded as fresh until its region is
    /// swung in.
    fn alloc(&mut self, leaves: bool, size: usize) -> Result<u32, Stop> {
        let a = if leaves {
            &mut self.leaves
        } else {
            &mut self.nodes
        };
        let base = a.alloc(size).map_err(|_| Stop::Grow)?;
        if size > 0 {
            self.fresh.push((leaves, base, size));
        }
        Ok(base)
    }

    /// Frees the blocks of a region whose build ran out of space (no reader saw
    /// them).
    fn drop_fresh(&mut self) {
        for (leaves, base, size) in self.fresh.drain(..) {
            if leaves {
                self.leaves.free_now(base, size);
            } else {
                self.nodes.free_now(base, size);
            }
        }
    }
}

/// Runs of equal leaves in one part of a node (each takes one leaf).
fn runs(part: &[Kid]) -> usize {
    let mut prev = None;
    let mut n = 0;
    for k in part {
        if let Kid::Leaf(x) = *k {
            if prev != Some(x) {
                n += 1;
                prev = Some(x);
            }
        }
    }
    n
}

/// The `stride` bits of `addr` from bit `depth` (zero-padded past bit 127).
fn chunk(addr: u128, depth: u32, stride: u32) -> u32 {
    ((addr << (depth & 127)) >> (128 - stride)) as u32
}

/// Copies node `from`'s words (every part) to node `to`.
fn copy_node(lpm: &Lpm6, group: usize, from: usize, to: usize) {
    for q in 0..group {
        for w in 0..3 {
            let x = lpm.nodes[from * group + q][w].load(Ordering::Relaxed);
            lpm.nodes[to * group + q][w].store(x, Ordering::Relaxed);
        }
    }
}
