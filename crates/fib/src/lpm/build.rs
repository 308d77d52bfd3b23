//! Building regions from the trie: a direct leaf, a leaf-only node or a block with
//! its nodes, swung into the direct array; retiring what a region held; and the
//! compacting rebuild of a whole table.

use super::*;

impl LpmWriter {
    /// The direct entry for a region whose 64 children at /24 are the leaves `vals`:
    /// a direct leaf if they hold one value, else a new leaf-only node.
    pub(super) fn leaf_only(
        &mut self,
        arena: &LpmArena,
        vals: &[u32; 64],
    ) -> Result<u32, NeedSpace> {
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

    /// Stores direct entry `new` for region `r` in place of `old`, which is retired.
    pub(super) fn swing(&mut self, arena: &LpmArena, r: u32, new: u32, old: u32, tag: u64) {
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

    pub(super) fn rebuild_region(
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
pub(super) fn expand(
    trie: &Trie,
    t: u32,
    steps: u32,
    pos: usize,
    best: u32,
    kids: &mut [Child; 64],
) {
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

/// The runs of equal values among the leaf children (not in `vector`) of `vals`:
/// `leafvec`, the runs' values and their count.
pub(super) fn compress(vals: &[u32; 64], vector: u64) -> (u64, [u32; 64], usize) {
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
