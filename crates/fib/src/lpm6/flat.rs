//! The arrays readers see ([`Flat`]) and the writer that changes them in place
//! ([`FlatWriter`]); the layout is the module's (see `lpm6.rs`).
//!
//! Every change is a store of one entry at a time: a new result id stored into the
//! entries it covers (in the nodes below them too, where they inherit it), a new
//! node filled and then swung into its entry, a node no longer needed replaced by a
//! leaf and retired after the readers' grace period. A reader reads one entry per
//! level, so it sees each entry before or after a change.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::trie::NIL;
use super::{LEAF, LPM6_DIRECT_BITS, LPM6_STRIDE, Lpm6Trie, OCTANT_BITS, SINK};
use crate::arena::BlockAlloc;

const DIRECT: u32 = LPM6_DIRECT_BITS;
const STRIDE: u32 = LPM6_STRIDE;
const FANOUT: usize = 1 << STRIDE;
/// Every lookup walks the levels down to this bit branch-free.
const FIXED_END: u32 = 48;
const FIXED_LEVELS: u32 = (FIXED_END - DIRECT) / STRIDE;
const BURST: usize = 256;
/// Free nodes a structure is built with.
const SLACK: usize = 256;

/// The reader-visible arrays.
#[derive(Debug)]
pub(crate) struct Flat {
    octant: [AtomicU64; 8],
    direct: Box<[AtomicU32]>,
    /// [`FANOUT`] entries per node; node 0 is the [`SINK`] (every entry `LEAF | 0`).
    nodes: Box<[AtomicU32]>,
}

/// The `STRIDE` bits of `key` from bit `depth`.
#[inline(always)]
fn byte(key: u128, depth: u32) -> usize {
    ((key << (depth & 127)) >> (128 - STRIDE)) as usize
}

impl Flat {
    #[inline(always)]
    fn direct_entry(&self, key: u128) -> u32 {
        let o = self.octant[(key >> (128 - OCTANT_BITS)) as usize & 7].load(Ordering::Relaxed);
        let i = (o as u32).wrapping_add((key >> (128 - DIRECT)) as u32 & (o >> 32) as u32);
        self.direct
            .get(i as usize)
            .map_or(LEAF, |d| d.load(Ordering::Acquire))
    }

    #[inline(always)]
    fn entry(&self, node: u32, b: usize) -> u32 {
        self.nodes
            .get(((node as usize) << STRIDE) | b)
            .map_or(LEAF, |e| e.load(Ordering::Acquire))
    }

    /// Longest-prefix match of one key (0: no match).
    pub(crate) fn lookup(&self, key: u128) -> u32 {
        let mut e = self.direct_entry(key);
        let mut depth = DIRECT;
        while e & LEAF == 0 && depth < 128 {
            e = self.entry(e, byte(key, depth));
            depth += STRIDE;
        }
        e & !LEAF
    }

    /// Batched lookup, level by level over the burst.
    pub(crate) fn lookup_burst(&self, keys: &[u128], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        for (k, o) in keys[..n].chunks(BURST).zip(out[..n].chunks_mut(BURST)) {
            self.burst(k, o);
        }
    }

    #[inline]
    fn burst(&self, keys: &[u128], out: &mut [u32]) {
        let n = keys.len().min(out.len()).min(BURST);
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut idx = [SINK; BURST];
        let mut hi = [0u64; BURST];
        for (((k, o), x), h) in keys.iter().zip(out.iter_mut()).zip(&mut idx).zip(&mut hi) {
            let d = self.direct_entry(*k);
            let leaf = 0u32.wrapping_sub(d >> 31);
            *o = d & leaf & !LEAF;
            *x = d & !leaf;
            *h = (*k >> 64) as u64;
        }
        let mut depth = DIRECT;
        for _ in 0..FIXED_LEVELS {
            for ((h, x), o) in hi[..n].iter().zip(&mut idx).zip(out.iter_mut()) {
                let b = ((*h << (depth & 63)) >> (64 - STRIDE)) as usize;
                let e = self.entry(*x, b);
                // All ones when the walk is still on (not in the sink) and `e` is a
                // leaf; masks, not branches.
                let leaf = 0u32.wrapping_sub(e >> 31);
                let walking = 0u32.wrapping_sub(u32::from(*x != SINK));
                let take = leaf & walking;
                *o = (e & !LEAF & take) | (*o & !take);
                *x = e & !leaf;
            }
            depth += STRIDE;
        }
        for ((o, k), &x) in out.iter_mut().zip(keys).zip(idx.iter()) {
            if x != SINK {
                let mut e = x;
                let mut d = depth;
                while e & LEAF == 0 && d < 128 {
                    e = self.entry(e, byte(*k, d));
                    d += STRIDE;
                }
                *o = e & !LEAF;
            }
        }
    }

    /// Entry `i` of `arr` (the writer's read: relaxed; [`LEAF`] past the end).
    fn at(&self, arr: Arr, i: usize) -> u32 {
        self.array(arr)
            .get(i)
            .map_or(LEAF, |e| e.load(Ordering::Relaxed))
    }

    fn array(&self, arr: Arr) -> &[AtomicU32] {
        match arr {
            Arr::Direct => &self.direct,
            Arr::Nodes => &self.nodes,
        }
    }

    /// Bytes of the reader-visible arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        64 + self.direct.len() * 4 + self.nodes.len() * 4
    }

    /// A copy with room for `nodes` nodes.
    fn grown(&self, nodes: usize) -> Self {
        Self {
            octant: std::array::from_fn(|o| AtomicU64::new(self.octant[o].load(Ordering::Relaxed))),
            direct: crate::arena::grow32(&self.direct, self.direct.len()),
            nodes: crate::arena::grow32(&self.nodes, (nodes << STRIDE).max(self.nodes.len())),
        }
    }
}

/// How a table's route changes were applied (counted since it was created).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lpm6Stats {
    /// Entries given a new value with one release store (a result id, a new node,
    /// or a leaf in place of a node no longer needed).
    pub stored: u64,
    /// Nodes filled and linked in.
    pub nodes: u64,
    /// Copies into larger arrays (free nodes ran out).
    pub grown: u64,
    /// Whole rebuilds (an eighth of the address space needed direct entries).
    pub rebuilt: u64,
}

/// Why an update stopped.
enum Stop {
    Grow,
    Rebuild,
}

/// Writer-side state of a [`Flat`] structure.
#[derive(Debug)]
pub(crate) struct FlatWriter {
    nodes: BlockAlloc,
    dirty: Vec<(u128, u8)>,
    /// Nodes allocated for the entry being built: freed if it runs out of space.
    fresh: Vec<u32>,
    pub(crate) stats: Lpm6Stats,
}

impl FlatWriter {
    /// The structure for `trie`, built whole (the arrays sized for it, then every
    /// eighth of the address space filled as a change would), and its writer.
    pub(crate) fn build(trie: &Lpm6Trie) -> (Self, Flat) {
        let mut octant = [0u64; 8];
        let mut direct = 0usize;
        for (o, w) in octant.iter_mut().enumerate() {
            let (t, _) = trie.descend((o as u128) << (128 - OCTANT_BITS), OCTANT_BITS);
            let len = if t != NIL && trie.has_children(t) {
                1usize << (DIRECT - OCTANT_BITS)
            } else {
                1
            };
            *w = direct as u64 | ((len as u64 - 1) << 32);
            direct += len;
        }
        let cap = 1 + nodes_needed(trie, 0, 0) + SLACK;
        let leaves = |n: usize| (0..n).map(|_| AtomicU32::new(LEAF)).collect();
        let mut flat = Flat {
            octant: octant.map(AtomicU64::new),
            direct: leaves(direct),
            nodes: leaves(cap * FANOUT),
        };
        let mut w = Self {
            nodes: BlockAlloc::new(cap, 1, 1), // (node 0: the sink)
            dirty: Vec::new(),
            fresh: Vec::new(),
            stats: Lpm6Stats::default(),
        };
        let mut o = 0;
        while o < 8 {
            // (the arrays are sized for the table, so neither stop is expected; a
            // shortfall grows them as a commit would)
            match w.octant(trie, &flat, o, 0) {
                Err(Stop::Grow) => {
                    w.drop_fresh();
                    let n = w.nodes.cap() * 2;
                    flat = flat.grown(n);
                    w.nodes.set_cap(n);
                }
                // (the direct blocks were laid out from this trie: no eighth lacks one)
                Ok(()) | Err(Stop::Rebuild) => o += 1,
            }
        }
        w.stats = Lpm6Stats::default();
        (w, flat)
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

    /// Applies the recorded changes to `flat`; `Some(new)`: publish `new` instead.
    pub(crate) fn commit(&mut self, trie: &Lpm6Trie, flat: &Flat, tag: u64) -> Option<Flat> {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable_by_key(|&(a, l)| (l, a));
        dirty.dedup();
        let mut grown: Option<Flat> = None;
        for &(addr, len) in &dirty {
            loop {
                let cur = grown.as_ref().unwrap_or(flat);
                match self.apply(trie, cur, addr, u32::from(len), tag) {
                    Ok(()) => break,
                    Err(Stop::Grow) => {
                        self.drop_fresh();
                        let n = self.nodes.cap() * 2;
                        let g = cur.grown(n);
                        self.nodes.set_cap(n);
                        self.stats.grown += 1;
                        grown = Some(g);
                    }
                    Err(Stop::Rebuild) => {
                        self.drop_fresh();
                        let stats = self.stats;
                        let (w, new) = Self::build(trie);
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

    /// Brings the entries under `addr/len` up to date with the trie.
    fn apply(
        &mut self,
        trie: &Lpm6Trie,
        flat: &Flat,
        addr: u128,
        len: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        if len < OCTANT_BITS {
            let first = (addr >> (128 - OCTANT_BITS)) as usize;
            for o in first..first + (1 << (OCTANT_BITS - len)) {
                self.octant(trie, flat, o, tag)?;
            }
            return Ok(());
        }
        let o = (addr >> (128 - OCTANT_BITS)) as usize;
        let w = flat.octant[o].load(Ordering::Relaxed);
        if w >> 32 == 0 {
            return self.octant(trie, flat, o, tag);
        }
        let base = w as u32 as usize;
        if len <= DIRECT {
            return self.fill_range(trie, flat, (Arr::Direct, base, OCTANT_BITS), addr, len, tag);
        }
        // Down the nodes on the prefix's way to the table whose entries it covers;
        // the nodes passed are noted to collapse those left without routes below.
        let mut path = [(Arr::Direct, 0usize, 0u32); 16];
        let mut n = 0;
        let (mut arr, mut i, mut depth) = (
            Arr::Direct,
            base + ((addr << OCTANT_BITS) >> (128 - (DIRECT - OCTANT_BITS))) as usize,
            DIRECT,
        );
        loop {
            let cur = flat.at(arr, i);
            if cur & LEAF != 0 || cur == SINK {
                // A leaf where the prefix lies: it becomes a node (or stays a leaf).
                let (t, best) = trie.descend(addr, depth);
                self.set(trie, flat, arr, i, t, best, depth, tag)?;
                break;
            }
            path[n] = (arr, i, depth);
            n += 1;
            let node_base = (cur as usize) << STRIDE;
            if len <= depth + STRIDE {
                self.fill_range(trie, flat, (Arr::Nodes, node_base, depth), addr, len, tag)?;
                break;
            }
            arr = Arr::Nodes;
            i = node_base + byte(addr, depth);
            depth += STRIDE;
        }
        // Nodes left with nothing longer than their start below them become leaves.
        for &(arr, i, depth) in path[..n].iter().rev() {
            let (t, best) = trie.descend(addr, depth);
            if t != NIL && trie.has_children(t) {
                break;
            }
            self.set(trie, flat, arr, i, t, best, depth, tag)?;
        }
        Ok(())
    }

    /// Brings the entries of the table at `base` (starting at bit `start`: the
    /// direct block of an eighth, or a node) that `addr/len` covers up to date;
    /// `len` ends inside the table.
    fn fill_range(
        &mut self,
        trie: &Lpm6Trie,
        flat: &Flat,
        (arr, base, start): (Arr, usize, u32),
        addr: u128,
        len: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        let end = match arr {
            Arr::Direct => DIRECT,
            Arr::Nodes => start + STRIDE,
        };
        let (t, best) = trie.descend(addr, len);
        let pos = if len == start {
            0
        } else {
            ((addr << start) >> (128 - (len - start))) as usize
        };
        self.fill(trie, flat, arr, base, t, len, pos, best, end, tag)
    }

    /// Brings eighth `o` of the address space up to date.
    fn octant(&mut self, trie: &Lpm6Trie, flat: &Flat, o: usize, tag: u64) -> Result<(), Stop> {
        let (t, best) = trie.descend((o as u128) << (128 - OCTANT_BITS), OCTANT_BITS);
        let w = flat.octant[o].load(Ordering::Relaxed);
        if w >> 32 != 0 {
            return self.fill(
                trie,
                flat,
                Arr::Direct,
                w as u32 as usize,
                t,
                OCTANT_BITS,
                0,
                best,
                DIRECT,
                tag,
            );
        }
        if t != NIL && trie.has_children(t) {
            return Err(Stop::Rebuild);
        }
        self.store(flat, Arr::Direct, w as u32 as usize, LEAF | best, tag);
        Ok(())
    }

    /// Brings the entries of one table (from `base`, ending at depth `end`) under
    /// trie node `t` (at `depth`, or [`NIL`]) up to date: entries `base + (pos <<
    /// (end - depth))` onwards; `best` includes `t`'s own route.
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &mut self,
        trie: &Lpm6Trie,
        flat: &Flat,
        arr: Arr,
        base: usize,
        t: u32,
        depth: u32,
        pos: usize,
        best: u32,
        end: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        if depth == end {
            return self.set(trie, flat, arr, base + pos, t, best, end, tag);
        }
        if t == NIL || !trie.has_children(t) {
            let span = 1usize << (end - depth);
            for i in base + pos * span..base + (pos + 1) * span {
                // (an entry that leads to a node keeps it only while routes lie
                // below; here none does)
                self.set(trie, flat, arr, i, NIL, best, end, tag)?;
            }
            return Ok(());
        }
        for b in 0..2 {
            let c = trie.node(t).child[b];
            let id = if c == NIL { NIL } else { trie.node(c).id };
            let nb = if id != NIL { id } else { best };
            self.fill(
                trie,
                flat,
                arr,
                base,
                c,
                depth + 1,
                pos * 2 + b,
                nb,
                end,
                tag,
            )?;
        }
        Ok(())
    }

    /// Brings entry `i` (at the end of its table, `depth`) up to date with trie
    /// node `t` there (`best` including its own route): a leaf, or a node for the
    /// routes below: the node it leads to updated in place, or a new one filled and
    /// swung in.
    #[allow(clippy::too_many_arguments)]
    fn set(
        &mut self,
        trie: &Lpm6Trie,
        flat: &Flat,
        arr: Arr,
        i: usize,
        t: u32,
        best: u32,
        depth: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        let cur = flat.at(arr, i);
        if t == NIL || !trie.has_children(t) {
            self.store(flat, arr, i, LEAF | best, tag);
            return Ok(());
        }
        if cur & LEAF == 0 && cur != SINK {
            let base = (cur as usize) << STRIDE;
            return self.fill_node(trie, flat, base, t, depth, best, tag);
        }
        let node = self.new_node(trie, flat, t, best, depth)?;
        self.fresh.clear();
        self.store(flat, arr, i, node, tag);
        Ok(())
    }

    /// Brings the whole node at `base` (starting at `depth`) up to date with trie
    /// node `t` (`best` including its own route).
    #[allow(clippy::too_many_arguments)]
    fn fill_node(
        &mut self,
        trie: &Lpm6Trie,
        flat: &Flat,
        base: usize,
        t: u32,
        depth: u32,
        best: u32,
        tag: u64,
    ) -> Result<(), Stop> {
        self.fill(
            trie,
            flat,
            Arr::Nodes,
            base,
            t,
            depth,
            0,
            best,
            depth + STRIDE,
            tag,
        )
    }

    /// A new node for trie node `t` at `depth` (`best` including its own route),
    /// filled with its subtree before anything links it.
    fn new_node(
        &mut self,
        trie: &Lpm6Trie,
        flat: &Flat,
        t: u32,
        best: u32,
        depth: u32,
    ) -> Result<u32, Stop> {
        let node = self.nodes.alloc(1).map_err(|_| Stop::Grow)?;
        self.fresh.push(node);
        self.stats.nodes += 1;
        let base = (node as usize) << STRIDE;
        // (a node from the free list holds stale entries: every one is written)
        for e in &flat.nodes[base..base + FANOUT] {
            e.store(LEAF, Ordering::Relaxed);
        }
        // (nothing is retired from a node no reader sees: no epoch tag needed)
        self.fill_node(trie, flat, base, t, depth, best, 0)?;
        Ok(node)
    }

    /// Stores `v` into entry `i` (a release store, none if it holds it already),
    /// retiring the node the old value led to.
    fn store(&mut self, flat: &Flat, arr: Arr, i: usize, v: u32, tag: u64) {
        let Some(e) = flat.array(arr).get(i) else {
            return;
        };
        let old = e.load(Ordering::Relaxed);
        if old == v {
            return;
        }
        e.store(v, Ordering::Release);
        self.stats.stored += 1;
        if old & LEAF == 0 && old != SINK {
            self.retire(flat, old, tag);
        }
    }

    /// Retires node `n` and the nodes below it.
    fn retire(&mut self, flat: &Flat, n: u32, tag: u64) {
        let base = (n as usize) << STRIDE;
        for i in base..base + FANOUT {
            let e = flat.nodes[i].load(Ordering::Relaxed);
            if e & LEAF == 0 && e != SINK {
                self.retire(flat, e, tag);
            }
        }
        self.nodes.retire(n, 1, tag);
    }

    fn drop_fresh(&mut self) {
        for n in self.fresh.drain(..) {
            self.nodes.free_now(n, 1);
        }
    }
}

/// Which array an entry is in.
#[derive(Clone, Copy, Debug)]
enum Arr {
    Direct,
    Nodes,
}

/// Nodes a table needs below trie node `t` at `depth`: one for every trie node at
/// the direct bits or a stride below them with routes under it.
fn nodes_needed(trie: &Lpm6Trie, t: u32, depth: u32) -> usize {
    if t == NIL || !trie.has_children(t) {
        return 0;
    }
    let own = usize::from(depth >= DIRECT && (depth - DIRECT) % STRIDE == 0);
    own + trie
        .node(t)
        .child
        .iter()
        .map(|&c| nodes_needed(trie, c, depth + 1))
        .sum::<usize>()
}
