//! The control-plane copy of one table: a binary (unibit) trie of prefixes.
//!
//! Only the writer touches it. It answers exact-match and longest-match questions for
//! route management and recursive resolution, and it is the source the lookup structure
//! ([`crate::lpm`]) is built from. One node per bit of every stored prefix, pruned on
//! delete, so a node without a route always has a child.

use crate::lpm::DIRECT_BITS;

/// "No node" / "no route".
pub(crate) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(crate) struct TrieNode {
    /// Child for bit 0 and bit 1, or [`NIL`].
    pub(crate) child: [u32; 2],
    /// Path list of the route stored at this node, or [`NIL`].
    pub(crate) route: u32,
    /// Result id the data plane returns for this route (valid when `route != NIL`).
    pub(crate) fwd: u32,
}

const EMPTY: TrieNode = TrieNode {
    child: [NIL; 2],
    route: NIL,
    fwd: 0,
};

/// Bit `depth` (0 = most significant) of `addr`.
#[inline]
pub(crate) fn bit(addr: u32, depth: u32) -> usize {
    ((addr >> (31 - depth)) & 1) as usize
}

#[derive(Debug)]
pub(crate) struct Trie {
    nodes: Vec<TrieNode>,
    free: Vec<u32>,
    routes: usize,
    /// Node at depth [`DIRECT_BITS`] per region (or [`NIL`]), so rebuilding a region
    /// of the lookup structure does not walk down from the root.
    region: Vec<u32>,
}

const REGION_DEPTH: u32 = DIRECT_BITS;

impl Trie {
    pub(crate) fn new() -> Self {
        Self {
            nodes: vec![EMPTY],
            free: Vec::new(),
            routes: 0,
            region: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn node(&self, i: u32) -> &TrieNode {
        &self.nodes[i as usize]
    }

    #[inline]
    pub(crate) fn has_children(&self, i: u32) -> bool {
        let c = self.nodes[i as usize].child;
        c[0] != NIL || c[1] != NIL
    }

    /// Number of routes stored.
    pub(crate) fn len(&self) -> usize {
        self.routes
    }

    fn alloc(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = EMPTY;
            i
        } else {
            self.nodes.push(EMPTY);
            (self.nodes.len() - 1) as u32
        }
    }

    /// Stores `route`/`fwd` at `addr/len`; returns the node, and the route it
    /// replaced.
    pub(crate) fn insert(
        &mut self,
        addr: u32,
        len: u8,
        route: u32,
        fwd: u32,
    ) -> (u32, Option<u32>) {
        if self.region.is_empty() {
            // Allocated with the first route, freed with the last.
            self.region = vec![NIL; 1 << REGION_DEPTH];
        }
        let (mut n, start) = self.start(addr, len);
        for d in start..u32::from(len) {
            let b = bit(addr, d);
            let c = self.nodes[n as usize].child[b];
            n = if c == NIL {
                let c = self.alloc();
                self.nodes[n as usize].child[b] = c;
                if d + 1 == REGION_DEPTH {
                    self.region[(addr >> (32 - REGION_DEPTH)) as usize] = c;
                }
                c
            } else {
                c
            };
        }
        let node = &mut self.nodes[n as usize];
        let old = node.route;
        node.route = route;
        node.fwd = fwd;
        if old == NIL {
            self.routes += 1;
            (n, None)
        } else {
            (n, Some(old))
        }
    }

    /// Changes the route (and its result id) stored at node `n`.
    pub(crate) fn set_route(&mut self, n: u32, route: u32, fwd: u32) {
        if let Some(node) = self.nodes.get_mut(n as usize) {
            node.route = route;
            node.fwd = fwd;
        }
    }

    /// Where a walk down to `addr/len` may start: the region's node when the prefix
    /// lies below it (one array read instead of [`DIRECT_BITS`] dependent ones, most
    /// of them cache misses in a big trie), else the root. (node, its depth)
    #[inline]
    fn start(&self, addr: u32, len: u8) -> (u32, u32) {
        if u32::from(len) >= REGION_DEPTH {
            let r = self.region_node(addr >> (32 - REGION_DEPTH));
            if r != NIL {
                return (r, REGION_DEPTH);
            }
        }
        (0, 0)
    }

    /// Removes the route at `addr/len`, prunes empty nodes, returns its path list.
    pub(crate) fn remove(&mut self, addr: u32, len: u8) -> Option<u32> {
        let mut path = [0u32; 33];
        let (mut n, mut start) = self.start(addr, len);
        for d in start..u32::from(len) {
            path[d as usize] = n;
            n = self.nodes[n as usize].child[bit(addr, d)];
            if n == NIL {
                return None;
            }
        }
        let old = self.nodes[n as usize].route;
        if old == NIL {
            return None;
        }
        self.nodes[n as usize].route = NIL;
        self.routes -= 1;
        // Prune upwards while the node is empty (never the root).
        let mut d = u32::from(len);
        while d > 0 && self.nodes[n as usize].route == NIL && !self.has_children(n) {
            if d <= start {
                // Pruning goes above where the walk started: find the path from the root.
                let mut m = 0u32;
                for (e, p) in path.iter_mut().enumerate().take(start as usize) {
                    *p = m;
                    m = self.nodes[m as usize].child[bit(addr, e as u32)];
                }
                start = 0;
            }
            let parent = path[(d - 1) as usize];
            self.nodes[parent as usize].child[bit(addr, d - 1)] = NIL;
            self.free.push(n);
            if d == REGION_DEPTH {
                self.region[(addr >> (32 - REGION_DEPTH)) as usize] = NIL;
            }
            n = parent;
            d -= 1;
        }
        if self.routes == 0 {
            // Give the memory back: everything but the root is free.
            self.nodes = vec![EMPTY];
            self.free = Vec::new();
            self.region = Vec::new();
        }
        Some(old)
    }

    /// The node at depth [`DIRECT_BITS`] for region `r`, or [`NIL`].
    #[inline]
    pub(crate) fn region_node(&self, r: u32) -> u32 {
        self.region.get(r as usize).copied().unwrap_or(NIL)
    }

    /// Longest route covering `addr` whose length is at most `max_len`, skipping the
    /// routes (path lists) for which `skip` returns true. Returns (path list, length).
    pub(crate) fn longest_match(
        &self,
        addr: u32,
        max_len: u8,
        skip: impl Fn(u32) -> bool,
    ) -> Option<(u32, u8)> {
        let mut best = None;
        let mut n = 0u32;
        let mut d = 0u32;
        loop {
            let node = &self.nodes[n as usize];
            if node.route != NIL && !skip(node.route) {
                best = Some((node.route, d as u8));
            }
            if d >= u32::from(max_len) {
                return best;
            }
            n = node.child[bit(addr, d)];
            if n == NIL {
                return best;
            }
            d += 1;
        }
    }

    /// Bytes held (capacity).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<TrieNode>()
            + self.free.capacity() * 4
            + self.region.capacity() * 4
    }
}
