//! Patching a route longer than /18 into its region in place: the block entries or
//! leaves under the prefix, or a new leaf-only node or node at /24 swung in with
//! one store.

use super::build::{compress, expand};
use super::*;

impl LpmWriter {
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
    pub(super) fn patch(
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
