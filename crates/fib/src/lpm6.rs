//! The IPv6 lookup structure: a Poptrie (Asai & Ohara, SIGCOMM 2015) over 128-bit
//! keys with a direct-pointing first level of `direct_bits` bits and 6-bit strides,
//! read lock-free through `&self`, built whole from an [`Lpm6Trie`].
//!
//! Layout (all atomic words, as in [`crate::lpm`]):
//! - `direct[key >> (128 - direct_bits)]`: [`LEAF`] | result id when nothing longer
//!   than the direct bits lies under the entry, else the index of the node that
//!   resolves the next 6 bits;
//! - `nodes`: three words per node, `vector` (bit v: child v is a node), `leafvec`
//!   (bit v: a run of equal leaves starts at child v), `base0 | base1 << 32` (first
//!   leaf, first child node). A node's child nodes are contiguous and so are its
//!   leaves, so child v is found with one `popcnt` of the bits below v;
//! - `leaves`: result ids, one per run.
//!
//! A lookup reads one direct entry, one node per 6 bits below the direct bits down
//! to the stride that holds its longest match, and one leaf. The batched lookup
//! ([`Lpm6::lookup_burst`]) walks the whole burst level by level: each pass reads
//! the current node of every key still walking, so the loads of one pass are
//! independent and their cache misses overlap, then a last pass reads every key's
//! leaf.
//!
//! This first version is rebuilt whole from the trie ([`Lpm6::build`]); a published
//! structure is never modified, so a reader holding it sees one table throughout.
//! Incremental updates (patching a published structure, as [`crate::lpm`] does for
//! IPv4) are not done yet.

mod trie;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub use trie::Lpm6Trie;
use trie::NIL;

/// Result ids must stay below this (the direct array keeps a flag bit beside them).
pub const LPM6_MAX_RESULT: u32 = 1 << 31;
/// Direct bits chosen by measurement (see the crate documentation and
/// `benches/RESULTS-fib6.md`).
pub const LPM6_DIRECT_BITS: u32 = 20;
/// Flag of a direct entry that holds a result id.
const LEAF: u32 = 1 << 31;
const STRIDE: u32 = 6;
/// Keys a burst walks together (longer slices go in chunks of this).
const BURST: usize = 256;

/// One node's words: `vector`, `leafvec`, `base0 | base1 << 32`.
type Node = [AtomicU64; 3];

/// Index of the 6-bit chunk of `key` that starts at bit `offset` (`offset < 128`;
/// zero-padded past bit 127).
#[inline(always)]
fn chunk(key: u128, offset: u32) -> u32 {
    ((key << (offset & 127)) >> 122) as u32
}

/// Bits `0..=v` set.
#[inline(always)]
fn upto(v: u32) -> u64 {
    (2u64 << v).wrapping_sub(1)
}

/// A longest-prefix-match table of IPv6 prefixes returning 32-bit result ids (0: no
/// match). Lookups take `&self` and only load atomic words.
#[derive(Debug)]
pub struct Lpm6 {
    direct_bits: u32,
    direct: Box<[AtomicU32]>,
    nodes: Box<[Node]>,
    leaves: Box<[AtomicU32]>,
}

/// A child of a node while building: a leaf value, or a trie node (at the child's
/// depth) with the best result id above it.
#[derive(Clone, Copy)]
enum Kid {
    Leaf(u32),
    Node(u32, u32),
}

/// Plain arrays the build fills before they are turned into atomic words.
struct Build<'t> {
    trie: &'t Lpm6Trie,
    direct_bits: u32,
    direct: Vec<u32>,
    nodes: Vec<[u64; 3]>,
    leaves: Vec<u32>,
}

impl Build<'_> {
    /// Fills the direct entries under trie node `t` (at `depth`, entries from
    /// `pos << (direct_bits - depth)`); `best` includes `t`'s own route.
    fn direct(&mut self, t: u32, depth: u32, pos: usize, best: u32) {
        if depth == self.direct_bits {
            self.direct[pos] = if self.trie.has_children(t) {
                let slot = self.nodes.len() as u32;
                self.nodes.push([0; 3]);
                self.node(t, best, slot);
                slot
            } else {
                LEAF | best
            };
            return;
        }
        let span = 1usize << (self.direct_bits - depth);
        if !self.trie.has_children(t) {
            self.direct[pos * span..(pos + 1) * span].fill(LEAF | best);
            return;
        }
        for b in 0..2 {
            let c = self.trie.node(t).child[b];
            let p = pos * 2 + b;
            if c == NIL {
                let half = span / 2;
                self.direct[p * half..(p + 1) * half].fill(LEAF | best);
            } else {
                let id = self.trie.node(c).id;
                self.direct(c, depth + 1, p, if id != NIL { id } else { best });
            }
        }
    }

    /// Builds the node for trie node `t` (`best` including its own route) into slot
    /// `slot`, its children after it.
    fn node(&mut self, t: u32, best: u32, slot: u32) {
        let mut kids = [Kid::Leaf(0); 64];
        expand(self.trie, t, 0, 0, best, &mut kids);
        let (mut vector, mut leafvec) = (0u64, 0u64);
        let base0 = self.leaves.len() as u32;
        let mut prev = None;
        for (v, k) in kids.iter().enumerate() {
            match *k {
                Kid::Node(..) => vector |= 1 << v,
                Kid::Leaf(x) => {
                    if prev != Some(x) {
                        leafvec |= 1 << v;
                        self.leaves.push(x);
                        prev = Some(x);
                    }
                }
            }
        }
        let base1 = self.nodes.len() as u32;
        self.nodes
            .resize(self.nodes.len() + vector.count_ones() as usize, [0; 3]);
        self.nodes[slot as usize] = [vector, leafvec, u64::from(base0) | u64::from(base1) << 32];
        let mut k = base1;
        for c in kids {
            if let Kid::Node(ct, cb) = c {
                self.node(ct, cb, k);
                k += 1;
            }
        }
    }
}

/// Fills `kids[pos << (6 - steps)..][..1 << (6 - steps)]` for trie node `t`, `steps`
/// bits below the stride's root; `best` includes `t`'s own route. Past bit 127 the
/// trie has no nodes, so a stride that runs over the key's end is zero-padded.
fn expand(trie: &Lpm6Trie, t: u32, steps: u32, pos: usize, best: u32, kids: &mut [Kid; 64]) {
    let span = 1usize << (STRIDE - steps);
    if steps == STRIDE {
        kids[pos] = if trie.has_children(t) {
            Kid::Node(t, best)
        } else {
            Kid::Leaf(best)
        };
        return;
    }
    if !trie.has_children(t) {
        kids[pos * span..(pos + 1) * span].fill(Kid::Leaf(best));
        return;
    }
    for b in 0..2 {
        let c = trie.node(t).child[b];
        let p = pos * 2 + b;
        let half = span / 2;
        if c == NIL {
            kids[p * half..(p + 1) * half].fill(Kid::Leaf(best));
        } else {
            let id = trie.node(c).id;
            expand(
                trie,
                c,
                steps + 1,
                p,
                if id != NIL { id } else { best },
                kids,
            );
        }
    }
}

impl Lpm6 {
    /// Builds the lookup structure for `trie` with a direct array of `direct_bits`
    /// bits (8 to 28; [`LPM6_DIRECT_BITS`] is the measured choice).
    ///
    /// # Panics
    ///
    /// If `direct_bits` is outside 8..=28.
    pub fn build(trie: &Lpm6Trie, direct_bits: u32) -> Self {
        assert!(
            (8..=28).contains(&direct_bits),
            "direct bits {direct_bits} outside 8..=28"
        );
        let root = trie.node(0).id;
        let mut b = Build {
            trie,
            direct_bits,
            direct: vec![0; 1 << direct_bits],
            nodes: Vec::with_capacity(trie.len() * 2),
            leaves: Vec::with_capacity(trie.len() * 4),
        };
        b.direct(0, 0, 0, if root != NIL { root } else { 0 });
        Self {
            direct_bits,
            direct: b.direct.into_iter().map(AtomicU32::new).collect(),
            nodes: b.nodes.into_iter().map(|n| n.map(AtomicU64::new)).collect(),
            leaves: b.leaves.into_iter().map(AtomicU32::new).collect(),
        }
    }

    /// Direct bits of this structure.
    pub fn direct_bits(&self) -> u32 {
        self.direct_bits
    }

    /// Bytes of the reader-visible arrays.
    pub fn memory_bytes(&self) -> usize {
        self.direct.len() * 4 + self.nodes.len() * size_of::<Node>() + self.leaves.len() * 4
    }

    /// Number of nodes (below the direct array) and of leaves.
    pub fn counts(&self) -> (usize, usize) {
        (self.nodes.len(), self.leaves.len())
    }

    #[inline(always)]
    fn direct_entry(&self, key: u128) -> u32 {
        self.direct
            .get((key >> (128 - self.direct_bits)) as usize)
            .map_or(LEAF, |d| d.load(Ordering::Acquire))
    }

    /// One step from node `idx` entered at bit `offset`: `Ok(leaf index)`, or
    /// `Err(next node)`. An index past the arrays reads as no match.
    #[inline(always)]
    fn step(&self, key: u128, idx: u32, offset: u32) -> Result<u32, u32> {
        let Some([w_vector, w_leafvec, w_bases]) = self.nodes.get(idx as usize) else {
            return Ok(u32::MAX);
        };
        let vector = w_vector.load(Ordering::Relaxed);
        let bases = w_bases.load(Ordering::Relaxed);
        let v = chunk(key, offset);
        let below = upto(v);
        if vector & (1u64 << v) != 0 {
            return Err(((bases >> 32) as u32)
                .wrapping_add((vector & below).count_ones())
                .wrapping_sub(1));
        }
        let leafvec = w_leafvec.load(Ordering::Relaxed);
        Ok((bases as u32)
            .wrapping_add((leafvec & below).count_ones())
            .wrapping_sub(1))
    }

    #[inline(always)]
    fn leaf(&self, i: u32) -> u32 {
        self.leaves
            .get(i as usize)
            .map_or(0, |l| l.load(Ordering::Acquire))
    }

    /// Longest-prefix match of one key: the result id, 0 if nothing matches.
    #[inline]
    pub fn lookup(&self, key: u128) -> u32 {
        let d = self.direct_entry(key);
        if d & LEAF != 0 {
            return d & !LEAF;
        }
        let (mut idx, mut offset) = (d, self.direct_bits);
        loop {
            match self.step(key, idx, offset) {
                Ok(l) => return self.leaf(l),
                Err(next) => {
                    idx = next;
                    offset += STRIDE;
                }
            }
        }
    }

    /// Batched lookup of `min(keys.len(), out.len())` keys, level by level: a pass
    /// reads every key's direct entry, then each pass takes every key still walking
    /// one node down (its loads independent of each other, so their cache misses
    /// overlap, which is what software prefetch buys DPDK's lookups), and a last pass
    /// reads the leaves.
    pub fn lookup_burst(&self, keys: &[u128], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        for (k, o) in keys[..n].chunks(BURST).zip(out[..n].chunks_mut(BURST)) {
            self.burst(k, o);
        }
    }

    /// [`Lpm6::lookup_burst`] on at most [`BURST`] keys.
    #[inline]
    fn burst(&self, keys: &[u128], out: &mut [u32]) {
        // Per key: the node it is at, then its leaf index; `walking` lists the keys
        // still at a node, `leafy` the keys that end at a leaf.
        let mut at = [0u32; BURST];
        let mut walking = [0u8; BURST];
        let mut leafy = [0u8; BURST];
        let (mut nw, mut nl) = (0usize, 0usize);
        for (i, (k, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let d = self.direct_entry(*k);
            *o = d & !LEAF;
            at[i] = d;
            walking[nw] = i as u8;
            nw += usize::from(d & LEAF == 0);
        }
        let mut offset = self.direct_bits;
        while nw > 0 {
            let mut still = 0usize;
            for j in 0..nw {
                let i = usize::from(walking[j]);
                let (Some(&k), Some(a)) = (keys.get(i), at.get_mut(i)) else {
                    continue;
                };
                match self.step(k, *a, offset) {
                    Ok(l) => {
                        *a = l;
                        leafy[nl] = i as u8;
                        nl += 1;
                    }
                    Err(next) => {
                        *a = next;
                        walking[still] = i as u8;
                        still += 1;
                    }
                }
            }
            nw = still;
            offset += STRIDE;
        }
        for &i in &leafy[..nl] {
            let i = usize::from(i);
            if let (Some(o), Some(&a)) = (out.get_mut(i), at.get(i)) {
                *o = self.leaf(a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ipv6Prefix;

    fn p(s: &str) -> Ipv6Prefix {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn small_table() {
        let mut t = Lpm6Trie::new();
        t.insert(p("::/0"), 1);
        t.insert(p("2001:db8::/32"), 2);
        t.insert(p("2001:db8:1::/48"), 3);
        t.insert(p("2001:db8:1::1/128"), 4);
        t.insert(p("2001:db8:1:ff00::/56"), 5);
        for bits in [8, 16, 20, 24] {
            let l = Lpm6::build(&t, bits);
            for k in [
                0u128,
                0x2001_0db8 << 96,
                (0x2001_0db8_0001u128 << 80) | 1,
                (0x2001_0db8_0001u128 << 80) | 2,
                (0x2001_0db8_0001_ff00u128 << 64) | 7,
                u128::MAX,
            ] {
                assert_eq!(l.lookup(k), t.lookup(k), "{k:x} direct {bits}");
                let mut out = [9u32];
                l.lookup_burst(&[k], &mut out);
                assert_eq!(out[0], t.lookup(k), "{k:x} direct {bits} burst");
            }
        }
    }
}
