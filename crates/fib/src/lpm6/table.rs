//! One IPv6 routing table's lookup with its publication: the writer changes
//! routes and commits; readers on other threads look up without locks through
//! [`Lpm6Reader`]s, each burst inside a read-side section of the table's
//! quiescent-state reclamation ([`crate::qsbr`]), as the IPv4 FIB's readers do.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use arc_swap::{ArcSwap, Cache};

use super::Lpm6Trie;
use super::btree::{Lpm6Stats, Tree, TreeWriter};
use crate::Ipv6Prefix;
use crate::qsbr::Qsbr;

/// What the writer and the readers share.
#[derive(Debug)]
struct Shared {
    current: Arc<ArcSwap<Tree>>,
    qsbr: Qsbr,
}

/// An IPv6 table: prefixes to result ids (0: no match), changed by one writer and
/// read by any number of [`Lpm6Reader`]s. Changes become visible at
/// [`Lpm6Table::commit`].
#[derive(Debug)]
pub struct Lpm6Table {
    trie: Lpm6Trie,
    writer: TreeWriter,
    lpm: Arc<Tree>,
    shared: Arc<Shared>,
    /// Replaced structures, dropped once no reader holds them.
    retired: Vec<Arc<Tree>>,
}

impl Default for Lpm6Table {
    fn default() -> Self {
        Self::new()
    }
}

impl Lpm6Table {
    /// An empty table.
    pub fn new() -> Self {
        Self::from_trie(Lpm6Trie::new())
    }

    /// A table holding `trie`'s routes, built whole (a full table's load).
    pub fn from_trie(trie: Lpm6Trie) -> Self {
        let (writer, lpm) = TreeWriter::build(&trie);
        let lpm = Arc::new(lpm);
        Self {
            trie,
            writer,
            shared: Arc::new(Shared {
                current: Arc::new(ArcSwap::new(lpm.clone())),
                qsbr: Qsbr::new(),
            }),
            lpm,
            retired: Vec::new(),
        }
    }

    /// Sets the result of `p` to `id` (below [`crate::LPM6_MAX_RESULT`], not 0);
    /// returns the id it replaced. Seen by readers after the next commit.
    ///
    /// # Panics
    ///
    /// If `id` is not below [`crate::LPM6_MAX_RESULT`].
    pub fn insert(&mut self, p: Ipv6Prefix, id: u32) -> Option<u32> {
        let old = self.trie.insert(p, id);
        if old != Some(id) {
            self.writer.mark(p.addr_u128(), p.prefix_len());
        }
        old
    }

    /// Removes `p`; returns its id. Seen by readers after the next commit.
    pub fn remove(&mut self, p: Ipv6Prefix) -> Option<u32> {
        let old = self.trie.remove(p);
        if old.is_some() {
            self.writer.mark(p.addr_u128(), p.prefix_len());
        }
        old
    }

    /// Publishes every change since the last commit, and frees what readers can no
    /// longer hold.
    pub fn commit(&mut self) {
        let q = &self.shared.qsbr;
        if self.writer.has_dirty() {
            let tag = q.next_epoch();
            if let Some(new) = self.writer.commit(&self.trie, &self.lpm, tag) {
                let new = Arc::new(new);
                self.shared.current.store(new.clone());
                self.retired.push(std::mem::replace(&mut self.lpm, new));
            }
        }
        q.advance();
        self.writer.reclaim(q.safe_epoch());
        self.retired.retain(|a| Arc::strong_count(a) > 1);
    }

    /// A reader for another thread.
    pub fn reader(&self) -> Lpm6Reader {
        Lpm6Reader {
            slot: self.shared.qsbr.register(),
            cache: Cache::new(self.shared.current.clone()),
            shared: self.shared.clone(),
        }
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.trie.len()
    }

    /// True when no prefix is stored.
    pub fn is_empty(&self) -> bool {
        self.trie.is_empty()
    }

    /// Longest-prefix match of one key in the structure as last committed (from the
    /// writer's thread).
    pub fn lookup(&self, addr: u128) -> u32 {
        self.lpm.lookup(addr)
    }

    /// Bytes of the published structure's arrays (free space included), then of the
    /// writer's trie.
    pub fn memory_bytes(&self) -> (usize, usize) {
        (self.lpm.memory_bytes(), self.trie.memory_bytes())
    }

    /// How route changes were applied so far.
    pub fn stats(&self) -> Lpm6Stats {
        self.writer.stats
    }
}

/// A lock-free reader of an [`Lpm6Table`] (one per thread).
pub struct Lpm6Reader {
    shared: Arc<Shared>,
    cache: Cache<Arc<ArcSwap<Tree>>, Arc<Tree>>,
    slot: Arc<AtomicU64>,
}

impl std::fmt::Debug for Lpm6Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lpm6Reader").finish_non_exhaustive()
    }
}

impl Lpm6Reader {
    /// Batched longest-prefix match of `min(keys.len(), out.len())` keys against the
    /// table as last committed (0: no match), inside one read-side section.
    pub fn lookup_burst(&mut self, keys: &[u128], out: &mut [u32]) {
        self.shared.qsbr.enter(&self.slot);
        self.cache.load().lookup_burst(keys, out);
        self.shared.qsbr.leave(&self.slot);
    }

    /// Longest-prefix match of one key.
    pub fn lookup(&mut self, key: u128) -> u32 {
        self.shared.qsbr.enter(&self.slot);
        let r = self.cache.load().lookup(key);
        self.shared.qsbr.leave(&self.slot);
        r
    }
}

impl Drop for Lpm6Reader {
    fn drop(&mut self) {
        self.shared.qsbr.unregister(&self.slot);
    }
}
