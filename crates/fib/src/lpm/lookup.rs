//! The readers' side: the longest-prefix match of one key and of a burst of keys,
//! from the direct entry down to a block entry, a leaf-only node's leaf or a node's.

use super::*;

impl LpmArena {
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
}
