//! The IPv6 lookup structure: a Poptrie (Asai & Ohara, SIGCOMM 2015) over 128-bit
//! keys with a direct-pointing first level of `direct_bits` bits and nodes of
//! `stride` bits (6 to 8), read lock-free through `&self`, built whole from an
//! [`Lpm6Trie`]. The measured choice ([`LPM6_DIRECT_BITS`], [`LPM6_STRIDE`]): 24
//! direct bits, then 8-bit nodes, so a /48 is three nodes below the direct level.
//!
//! Layout (all atomic words, as in [`crate::lpm`]):
//! - `octant[key >> 125]`: where the direct entries of that eighth of the address
//!   space start, and the mask of the key bits that index them: an eighth with a
//!   route longer than /3 gets 2^(direct_bits - 3) entries, any other one entry. A
//!   real table only has routes in 2000::/3, so a 24-bit direct level costs 8 MiB,
//!   not 64;
//! - `direct`: [`LEAF`] | result id when nothing longer than the direct bits lies
//!   under the entry, else the index of the node that resolves the next bits;
//! - `nodes`: a node is `2^(stride - 6)` parts of 64 children (part `c >> 6` holds
//!   child c), each three words: `vector` (bit v: child v is a node), `leafvec`
//!   (bit v: a run of equal leaves starts at child v), `base0 | base1 << 32` (its
//!   first leaf, its first child node). A node's child nodes are contiguous and so
//!   are its leaves, so child v is found with one `popcnt` of the bits below v in
//!   its part. Node 0 is the [`SINK`]: no children, no leaves;
//! - `leaves`: result ids, one per run.
//!
//! A lookup reads one octant word (L1-resident), one direct entry, then one node
//! part per stride down to bit [`FIXED_END`] (/48: nearly every route of a real table), the
//! same number of steps for every key (a walk that reached its leaf idles in the
//! sink), so no branch depends on the key; then one leaf. Only keys under a route
//! longer than /48 walk on, one branch per level. The batched lookup
//! ([`Lpm6::lookup_burst`]) takes the whole burst level by level: each pass reads
//! the current node of every key, so the loads of one pass are independent and their
//! cache misses overlap, and a last pass reads the leaves.
//!
//! [`Lpm6::build`] makes the structure whole from the trie; a published structure
//! is never changed. [`Lpm6Table`], the table route changes go to, uses the same
//! direct level with flat 8-bit nodes instead (`flat.rs`): a level is one load
//! with no `popcnt`, and a change is stores of single entries, at 1 KiB per node
//! (`benches/RESULTS-fib6.md`).

mod flat;
mod table;
mod trie;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub use flat::Lpm6Stats;
pub use table::{Lpm6Reader, Lpm6Table};
pub use trie::Lpm6Trie;
use trie::NIL;

/// Result ids must stay below this (the direct array keeps a flag bit beside them).
pub const LPM6_MAX_RESULT: u32 = 1 << 31;
/// Direct bits chosen by measurement (`benches/RESULTS-fib6.md`).
pub const LPM6_DIRECT_BITS: u32 = 24;
/// Bits per node chosen by measurement (`benches/RESULTS-fib6.md`).
pub const LPM6_STRIDE: u32 = 8;
/// Bits that pick an eighth of the address space, each with a direct block of its
/// own only if routes longer than /3 lie in it (global unicast, 2000::/3, holds
/// every route of a real table).
const OCTANT_BITS: u32 = 3;
/// Flag of a direct entry that holds a result id.
const LEAF: u32 = 1 << 31;
/// Keys a burst walks together (longer slices go in chunks of this).
const BURST: usize = 256;
/// Every lookup walks the levels down to this bit, branch-free (most routes of a
/// real table are /48 or shorter); only keys under a longer route go further.
const FIXED_END: u32 = 48;
/// Node 0: no child node, no leaf. A walk that reached its leaf idles here. (0, so
/// that a mask selects it.)
const SINK: u32 = 0;
/// A leaf index no leaf has.
const NO_LEAF: u32 = u32::MAX;

/// One node's words: `vector`, `leafvec`, `base0 | base1 << 32`.
type Node = [AtomicU64; 3];

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
    stride: u32,
    /// Per eighth of the address space (the key's top 3 bits): its first entry in
    /// `direct` | the mask of the key's next `direct_bits - 3` bits << 32 (0 when
    /// nothing is longer than /3 there: one entry).
    octant: [AtomicU64; 8],
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
    stride: u32,
    octant: [u64; 8],
    direct: Vec<u32>,
    nodes: Vec<[u64; 3]>,
    leaves: Vec<u32>,
}

impl Build<'_> {
    /// Gives each eighth of the address space (`octant[pos]`, for trie node `t` at
    /// `depth` <= 3, or [`NIL`]) its direct entries: a block of 2^(direct_bits - 3)
    /// when a route is longer than /3 in it, else one entry; `best` includes `t`'s
    /// own route.
    fn octants(&mut self, t: u32, depth: u32, pos: usize, best: u32) {
        if depth == OCTANT_BITS {
            let base = self.direct.len();
            if t != NIL && self.trie.has_children(t) {
                let len = 1usize << (self.direct_bits - OCTANT_BITS);
                self.direct.resize(base + len, 0);
                self.octant[pos] = base as u64 | ((len as u64 - 1) << 32);
                self.direct(base, t, depth, 0, best);
            } else {
                self.direct.push(LEAF | best);
                self.octant[pos] = base as u64;
            }
            return;
        }
        for b in 0..2 {
            let c = if t == NIL {
                NIL
            } else {
                self.trie.node(t).child[b]
            };
            let id = if c == NIL { NIL } else { self.trie.node(c).id };
            self.octants(c, depth + 1, pos * 2 + b, if id != NIL { id } else { best });
        }
    }

    /// Fills the direct entries under trie node `t` (at `depth`, entries from
    /// `base + (pos << (direct_bits - depth))`); `best` includes `t`'s own route.
    fn direct(&mut self, base: usize, t: u32, depth: u32, pos: usize, best: u32) {
        if depth == self.direct_bits {
            self.direct[base + pos] = if self.trie.has_children(t) {
                let group = 1usize << (self.stride - 6);
                let slot = (self.nodes.len() / group) as u32;
                self.nodes.resize(self.nodes.len() + group, [0; 3]);
                self.node(t, best, slot);
                slot
            } else {
                LEAF | best
            };
            return;
        }
        let span = 1usize << (self.direct_bits - depth);
        let d = &mut self.direct[base..];
        if !self.trie.has_children(t) {
            d[pos * span..(pos + 1) * span].fill(LEAF | best);
            return;
        }
        for b in 0..2 {
            let c = self.trie.node(t).child[b];
            let p = pos * 2 + b;
            if c == NIL {
                let half = span / 2;
                self.direct[base + p * half..base + (p + 1) * half].fill(LEAF | best);
            } else {
                let id = self.trie.node(c).id;
                self.direct(base, c, depth + 1, p, if id != NIL { id } else { best });
            }
        }
    }

    /// Builds the node for trie node `t` (`best` including its own route) into slot
    /// `slot` (its `2^(stride - 6)` parts of 64 children), its children after it.
    fn node(&mut self, t: u32, best: u32, slot: u32) {
        let group = 1usize << (self.stride - 6);
        let mut kids = [Kid::Leaf(0); 256];
        let kids = &mut kids[..64 * group];
        expand(self.trie, self.stride, t, 0, 0, best, kids);
        let nkids = kids.iter().filter(|k| matches!(k, Kid::Node(..))).count();
        let base1 = (self.nodes.len() / group) as u32;
        self.nodes.resize(self.nodes.len() + nkids * group, [0; 3]);
        let mut before = 0u32;
        for (q, part) in kids.chunks(64).enumerate() {
            let (mut vector, mut leafvec) = (0u64, 0u64);
            let base0 = self.leaves.len() as u32;
            let mut prev = None;
            for (v, k) in part.iter().enumerate() {
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
            self.nodes[slot as usize * group + q] = [
                vector,
                leafvec,
                u64::from(base0) | u64::from(base1 + before) << 32,
            ];
            before += vector.count_ones();
        }
        let mut k = base1;
        for c in kids.iter() {
            if let Kid::Node(ct, cb) = *c {
                self.node(ct, cb, k);
                k += 1;
            }
        }
    }
}

/// Fills `kids[pos << (stride - steps)..][..1 << (stride - steps)]` for trie node
/// `t`, `steps` bits below the stride's root; `best` includes `t`'s own route. Past
/// bit 127 the trie has no nodes, so a stride that runs over the key's end is
/// zero-padded.
fn expand(
    trie: &Lpm6Trie,
    stride: u32,
    t: u32,
    steps: u32,
    pos: usize,
    best: u32,
    kids: &mut [Kid],
) {
    let span = 1usize << (stride - steps);
    if steps == stride {
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
            let nb = if id != NIL { id } else { best };
            expand(trie, stride, c, steps + 1, p, nb, kids);
        }
    }
}

impl Lpm6 {
    /// Builds the lookup structure for `trie` with the measured choice of direct bits
    /// and stride ([`LPM6_DIRECT_BITS`], [`LPM6_STRIDE`]).
    pub fn build(trie: &Lpm6Trie) -> Self {
        Self::build_with(trie, LPM6_DIRECT_BITS, LPM6_STRIDE)
    }

    /// Builds the lookup structure for `trie` with a direct level of `direct_bits`
    /// bits (8 to 28) and nodes of `stride` bits (6 to 8: a node of 7 or 8 bits is
    /// 2 or 4 parts of 64 children, each with its own bit vectors and bases).
    ///
    /// # Panics
    ///
    /// If `direct_bits` or `stride` is out of range.
    pub fn build_with(trie: &Lpm6Trie, direct_bits: u32, stride: u32) -> Self {
        assert!(
            (8..=28).contains(&direct_bits),
            "direct bits {direct_bits} outside 8..=28"
        );
        assert!((6..=8).contains(&stride), "stride {stride} outside 6..=8");
        let root = trie.node(0).id;
        let mut b = Build {
            trie,
            direct_bits,
            stride,
            octant: [0; 8],
            direct: Vec::new(),
            nodes: Vec::with_capacity(trie.len() * 2),
            leaves: Vec::with_capacity(trie.len() * 4),
        };
        b.nodes.resize(1 << (stride - 6), [0; 3]); // SINK
        b.octants(0, 0, 0, if root != NIL { root } else { 0 });
        Self {
            direct_bits,
            stride,
            octant: b.octant.map(AtomicU64::new),
            direct: b.direct.into_iter().map(AtomicU32::new).collect(),
            nodes: b.nodes.into_iter().map(|n| n.map(AtomicU64::new)).collect(),
            leaves: b.leaves.into_iter().map(AtomicU32::new).collect(),
        }
    }

    /// Direct bits of this structure.
    pub fn direct_bits(&self) -> u32 {
        self.direct_bits
    }

    /// Bits per node of this structure.
    pub fn stride(&self) -> u32 {
        self.stride
    }

    /// Bytes of the reader-visible arrays.
    pub fn memory_bytes(&self) -> usize {
        size_of::<[AtomicU64; 8]>()
            + self.direct.len() * 4
            + self.nodes.len() * size_of::<Node>()
            + self.leaves.len() * 4
    }

    /// Number of nodes (below the direct array) and of leaves.
    pub fn counts(&self) -> (usize, usize) {
        (self.nodes.len() >> (self.stride - 6), self.leaves.len())
    }

    #[inline(always)]
    fn direct_entry(&self, key: u128) -> u32 {
        let o = self.octant[(key >> (128 - OCTANT_BITS)) as usize & 7].load(Ordering::Relaxed);
        let i =
            (o as u32).wrapping_add((key >> (128 - self.direct_bits)) as u32 & (o >> 32) as u32);
        self.direct
            .get(i as usize)
            .map_or(LEAF, |d| d.load(Ordering::Acquire))
    }

    /// Levels every lookup takes below the direct array, branch-free: down to bit
    /// [`FIXED_END`].
    #[inline(always)]
    fn fixed_levels(&self) -> u32 {
        FIXED_END
            .saturating_sub(self.direct_bits)
            .div_ceil(self.stride)
    }

    /// One fixed level of a walk at bit `offset` (< 59) of the key's high word `hi`:
    /// from node `*idx` down to a child node, or to the [`SINK`] with the leaf index
    /// in `*res`. A walk in the sink (done) stays there and keeps its `*res`. No
    /// branch depends on the key.
    #[inline(always)]
    fn descend(&self, hi: u64, idx: &mut u32, res: &mut u32, offset: u32) {
        let c = ((hi << (offset & 63)) >> (64 - self.stride)) as u32;
        let part = (*idx << (self.stride - 6)).wrapping_add(c >> 6);
        let (vector, leafvec, bases) = self.nodes.get(part as usize).map_or((0, 0, 0), |n| {
            (
                n[0].load(Ordering::Relaxed),
                n[1].load(Ordering::Relaxed),
                // (acquire: the writer may swing a part's bases to new children)
                n[2].load(Ordering::Acquire),
            )
        });
        let c = c & 63;
        let below = upto(c);
        let node = ((bases >> 32) as u32)
            .wrapping_add((vector & below).count_ones())
            .wrapping_sub(1);
        let leaf = (bases as u32)
            .wrapping_add((leafvec & below).count_ones())
            .wrapping_sub(1);
        // Masks, not `if`s: the compiler turns those into branches, which the key
        // decides (mispredicted about once per lookup). All ones if child c is a
        // node; if the walk is not in the sink yet.
        let is_node = 0u32.wrapping_sub(((vector >> c) & 1) as u32);
        let walking = 0u32.wrapping_sub(u32::from(*idx != SINK));
        let take = walking & !is_node;
        *res = (leaf & take) | (*res & !take);
        *idx = node & is_node; // SINK is 0
    }

    /// A walk from node `idx` at bit `offset` to the leaf, one branch per level: a
    /// single lookup, and the rest of a batched one below the fixed levels (routes
    /// longer than [`FIXED_END`] and whatever lies beside them: rare).
    #[inline]
    fn walk(&self, key: u128, mut idx: u32, mut offset: u32) -> u32 {
        loop {
            match self.step(key, idx, offset) {
                Ok(l) => return self.leaf(l),
                Err(next) => {
                    idx = next;
                    offset += self.stride;
                }
            }
        }
    }

    /// One step from node `idx` entered at bit `offset`: `Ok(leaf index)`, or
    /// `Err(next node)`. An index past the arrays reads as no match.
    #[inline(always)]
    fn step(&self, key: u128, idx: u32, offset: u32) -> Result<u32, u32> {
        let c = ((key << (offset & 127)) >> (128 - self.stride)) as u32;
        let part = (idx << (self.stride - 6)).wrapping_add(c >> 6);
        let Some([w_vector, w_leafvec, w_bases]) = self.nodes.get(part as usize) else {
            return Ok(u32::MAX);
        };
        let vector = w_vector.load(Ordering::Relaxed);
        let bases = w_bases.load(Ordering::Acquire);
        let v = c & 63;
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

    /// Longest-prefix match of one key: the result id, 0 if nothing matches. (One
    /// branch per level, predicted: for single lookups; bursts go through
    /// [`Lpm6::lookup_burst`].)
    #[inline]
    pub fn lookup(&self, key: u128) -> u32 {
        let d = self.direct_entry(key);
        if d & LEAF != 0 {
            return d & !LEAF;
        }
        self.walk(key, d, self.direct_bits)
    }

    /// Batched lookup of `min(keys.len(), out.len())` keys, level by level: a pass
    /// reads every key's direct entry, then one pass per fixed level takes every key
    /// one node down (the loads of a pass are independent of each other, so their
    /// cache misses overlap: what software prefetch buys DPDK's lookups), and a last
    /// pass reads the leaves.
    pub fn lookup_burst(&self, keys: &[u128], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        for (k, o) in keys[..n].chunks(BURST).zip(out[..n].chunks_mut(BURST)) {
            self.burst(k, o);
        }
    }

    /// [`Lpm6::lookup_burst`] on at most [`BURST`] keys.
    #[inline]
    fn burst(&self, keys: &[u128], out: &mut [u32]) {
        let n = keys.len().min(out.len()).min(BURST);
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut idx = [SINK; BURST];
        let mut res = [NO_LEAF; BURST];
        let mut hi = [0u64; BURST];
        for (((k, o), x), h) in keys.iter().zip(out.iter_mut()).zip(&mut idx).zip(&mut hi) {
            let d = self.direct_entry(*k);
            let direct_leaf = d & LEAF != 0;
            *o = if direct_leaf { d & !LEAF } else { 0 };
            *x = if direct_leaf { SINK } else { d };
            *h = (*k >> 64) as u64;
        }
        let mut offset = self.direct_bits;
        for _ in 0..self.fixed_levels() {
            for ((h, x), r) in hi[..n].iter().zip(&mut idx).zip(&mut res) {
                self.descend(*h, x, r, offset);
            }
            offset += self.stride;
        }
        for ((o, k), (&x, &r)) in out.iter_mut().zip(keys).zip(idx.iter().zip(&res)) {
            if x != SINK {
                *o = self.walk(*k, x, offset);
            } else {
                // (`res` stays `NO_LEAF` for a key answered by the direct array.)
                let l = self.leaf(r);
                *o = if r == NO_LEAF { *o } else { l };
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
        for (bits, stride) in [(8, 6), (16, 6), (20, 7), (24, 6), (24, 8), (16, 8)] {
            let l = Lpm6::build_with(&t, bits, stride);
            for k in [
                0u128,
                0x2001_0db8 << 96,
                (0x2001_0db8_0001u128 << 80) | 1,
                (0x2001_0db8_0001u128 << 80) | 2,
                (0x2001_0db8_0001_ff00u128 << 64) | 7,
                u128::MAX,
            ] {
                assert_eq!(
                    l.lookup(k),
                    t.lookup(k),
                    "{k:x} direct {bits} stride {stride}"
                );
                let mut out = [9u32];
                l.lookup_burst(&[k], &mut out);
                assert_eq!(
                    out[0],
                    t.lookup(k),
                    "{k:x} direct {bits} stride {stride} burst"
                );
            }
        }
    }
}
