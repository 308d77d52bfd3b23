//! The writer-side source of the IPv6 lookup structure: a binary (unibit) trie of
//! IPv6 prefixes and their result ids. Only the writer touches it; [`crate::Lpm6Table`]
//! is built from it. One node per bit of every stored prefix, pruned on removal, so
//! a node without a route always has a child.

use crate::Ipv6Prefix;

/// "No node" / "no route".
pub(super) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(super) struct Node6 {
    /// Child for bit 0 and bit 1, or [`NIL`].
    pub(super) child: [u32; 2],
    /// Result id of the route stored here, or [`NIL`].
    pub(super) id: u32,
}

const EMPTY: Node6 = Node6 {
    child: [NIL; 2],
    id: NIL,
};

/// Bit `depth` (0 = most significant) of `addr`.
#[inline]
fn bit6(addr: u128, depth: u32) -> usize {
    ((addr >> (127 - depth)) & 1) as usize
}

/// IPv6 prefixes and their result ids, as a binary trie: the table an
/// [`Lpm6Table`](crate::Lpm6Table) is built from.
#[derive(Debug, Clone)]
pub struct Lpm6Trie {
    nodes: Vec<Node6>,
    free: Vec<u32>,
    routes: usize,
}

impl Default for Lpm6Trie {
    fn default() -> Self {
        Self::new()
    }
}

impl Lpm6Trie {
    /// An empty table.
    pub fn new() -> Self {
        Self {
            nodes: vec![EMPTY],
            free: Vec::new(),
            routes: 0,
        }
    }

    /// Number of prefixes stored.
    pub fn len(&self) -> usize {
        self.routes
    }

    /// True when no prefix is stored.
    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }

    #[inline]
    pub(super) fn node(&self, i: u32) -> &Node6 {
        &self.nodes[i as usize]
    }

    #[inline]
    pub(super) fn has_children(&self, i: u32) -> bool {
        let c = self.nodes[i as usize].child;
        c[0] != NIL || c[1] != NIL
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

    /// Stores `p` → `id`; returns the id it replaced.
    ///
    /// # Panics
    ///
    /// If `id` is not below [`LPM6_MAX_RESULT`](crate::LPM6_MAX_RESULT) (the lookup
    /// structure keeps a flag bit beside it).
    pub fn insert(&mut self, p: Ipv6Prefix, id: u32) -> Option<u32> {
        assert!(
            id < crate::LPM6_MAX_RESULT,
            "result id {id} is not below {}",
            crate::LPM6_MAX_RESULT
        );
        let addr = p.addr_u128();
        let mut n = 0u32;
        for d in 0..u32::from(p.prefix_len()) {
            let b = bit6(addr, d);
            let c = self.nodes[n as usize].child[b];
            n = if c == NIL {
                let c = self.alloc();
                self.nodes[n as usize].child[b] = c;
                c
            } else {
                c
            };
        }
        let old = std::mem::replace(&mut self.nodes[n as usize].id, id);
        if old == NIL {
            self.routes += 1;
            None
        } else {
            Some(old)
        }
    }

    /// Removes `p`, pruning nodes left empty; returns its id.
    pub fn remove(&mut self, p: Ipv6Prefix) -> Option<u32> {
        let addr = p.addr_u128();
        let len = u32::from(p.prefix_len());
        let mut path = [0u32; 129];
        let mut n = 0u32;
        for d in 0..len {
            path[d as usize] = n;
            n = self.nodes[n as usize].child[bit6(addr, d)];
            if n == NIL {
                return None;
            }
        }
        let old = std::mem::replace(&mut self.nodes[n as usize].id, NIL);
        if old == NIL {
            return None;
        }
        self.routes -= 1;
        let mut d = len;
        while d > 0 && self.nodes[n as usize].id == NIL && !self.has_children(n) {
            let parent = path[(d - 1) as usize];
            self.nodes[parent as usize].child[bit6(addr, d - 1)] = NIL;
            self.free.push(n);
            n = parent;
            d -= 1;
        }
        Some(old)
    }

    /// The node `depth` bits down along `addr` ([`NIL`] if there is none) and the
    /// best result id of the routes at or above it (0: none).
    pub(super) fn descend(&self, addr: u128, depth: u32) -> (u32, u32) {
        let mut best = 0u32;
        let mut n = 0u32;
        for d in 0..=depth {
            let node = &self.nodes[n as usize];
            if node.id != NIL {
                best = node.id;
            }
            if d == depth {
                break;
            }
            n = node.child[bit6(addr, d)];
            if n == NIL {
                break;
            }
        }
        (n, best)
    }

    /// Longest-prefix match of `addr` by walking the trie bit by bit (0: no route).
    pub fn lookup(&self, addr: u128) -> u32 {
        let mut best = 0u32;
        let mut n = 0u32;
        for d in 0..=128u32 {
            let node = &self.nodes[n as usize];
            if node.id != NIL {
                best = node.id;
            }
            if d == 128 {
                break;
            }
            n = node.child[bit6(addr, d)];
            if n == NIL {
                break;
            }
        }
        best
    }

    /// Bytes held (capacity).
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node6>() + self.free.capacity() * 4
    }
}
