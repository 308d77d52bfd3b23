//! Publication: batches and holds, the commit that brings the lookup structures up
//! to date and publishes them to the readers, and the reader-visible arrays' space
//! (growth, shrinking, slots freed after a grace period).

use super::*;

impl Fib {
    /// Starts a batch: changes are applied to the control state at once but the
    /// lookup structure is rebuilt and published once, at [`Batch::commit`] (or when
    /// the batch is dropped). Use it for bulk loads and netlink bursts.
    pub fn batch(&mut self) -> Batch<'_> {
        self.batch = true;
        Batch { fib: self }
    }

    /// Holds publication back until the matching [`Fib::release`]: the changes
    /// in between reach the lookup structure together. Returns whether it was
    /// held already (pass that to `release`). The borrow-free form of
    /// [`Fib::batch`], for callers that own the FIB inside a larger state.
    pub fn hold(&mut self) -> bool {
        std::mem::replace(&mut self.batch, true)
    }

    /// Ends a [`Fib::hold`]; publishes unless an outer hold is still on.
    pub fn release(&mut self, was_held: bool) {
        self.batch = was_held;
        if !was_held {
            self.commit(true);
        }
    }

    pub(super) fn finish(&mut self) {
        if !self.batch {
            self.commit(false);
        }
    }

    pub(super) fn commit(&mut self, force_reclaim: bool) {
        let tag = self.shared.qsbr.next_epoch();
        // Table by table without collecting the ids (no allocation per publication).
        let mut next = self.tables.keys().next().copied();
        while let Some(id) = next {
            next = self
                .tables
                .range((std::ops::Bound::Excluded(id), std::ops::Bound::Unbounded))
                .next()
                .map(|(k, _)| *k);
            let Some(t) = self.tables.get_mut(&id) else {
                continue;
            };
            let mut replace = None;
            if t.lpm.has_dirty() {
                if let Some(arena) = self.planes.table(id) {
                    replace = t.lpm.commit(&t.trie, arena, tag);
                }
            }
            if let Some(a) = replace {
                self.replace_planes(TableChange::Replace4(id, a));
            }
            let Some(t) = self.tables.get_mut(&id) else {
                continue;
            };
            if t.lpm.wants_compaction() {
                let a = t.lpm.rebuild_all(&t.trie);
                self.replace_planes(TableChange::Replace4(id, a));
            }
            let Some(t) = self.tables.get_mut(&id) else {
                continue;
            };
            let v6 = &mut t.v6;
            if v6.writer.has_dirty() {
                if let Some(new) = v6.writer.commit(&v6.trie, &v6.lpm, tag) {
                    v6.lpm = Arc::new(new);
                    let flat = v6.lpm.clone();
                    self.replace_planes(TableChange::Replace6(id, flat));
                }
            }
        }
        self.maybe_shrink_fwd();
        if self.republish {
            self.shared.current.store(self.planes.clone());
            self.republish = false;
        }
        // Everything of this change is visible: readers that keep decoded
        // answers drop them (see `FibView::version`).
        let v = self.shared.version.load(Ordering::Relaxed);
        self.shared.version.store(v + 1, Ordering::Release);
        // Ending a grace period touches cache lines every reader writes; amortise it
        // over several single updates. Until then freed slots just wait longer.
        self.since_reclaim += 1;
        if self.since_reclaim < RECLAIM_EVERY && !force_reclaim {
            return;
        }
        self.since_reclaim = 0;
        self.shared.qsbr.advance();
        let safe = self.shared.qsbr.safe_epoch();
        for a in [
            &mut self.lb_alloc,
            &mut self.bucket_alloc,
            &mut self.leg_alloc,
            &mut self.adj_alloc,
            &mut self.rw_alloc,
        ] {
            a.reclaim(safe);
        }
        for t in self.tables.values_mut() {
            t.lpm.reclaim(safe);
            t.v6.writer.reclaim(safe);
        }
        self.retired.retain(|p| Arc::strong_count(p) > 1);
    }

    /// Deep-copies the planes (sizes from the allocators) and switches to the copy.
    pub(super) fn replace_planes(&mut self, change: TableChange) {
        let s = Sizes {
            lb: self.lb_alloc.cap(),
            buckets: self.bucket_alloc.cap(),
            legs: self.leg_alloc.cap() * LEG_WORDS,
            adj: self.adj_alloc.cap(),
            rewrites: self.rw_alloc.cap() * RW_WORDS,
        };
        let new = Arc::new(self.planes.copy(s, change));
        let old = std::mem::replace(&mut self.planes, new);
        self.retired.push(old);
        self.republish = true;
    }

    /// When nothing is left in the forwarding arrays, shrink them back.
    fn maybe_shrink_fwd(&mut self) {
        let empty = self.lb_alloc.live() == 0
            && self.leg_alloc.live() == 0
            && self.adj_alloc.live() == 0
            && self.bucket_alloc.live() == 0
            && self.rw_alloc.live() == 0;
        let big = self.lb_alloc.cap() > INIT_LB
            || self.bucket_alloc.cap() > INIT_BUCKETS
            || self.leg_alloc.cap() > INIT_LEGS
            || self.adj_alloc.cap() > INIT_ADJ
            || self.rw_alloc.cap() > INIT_RW;
        if empty && big {
            [
                self.lb_alloc,
                self.bucket_alloc,
                self.leg_alloc,
                self.adj_alloc,
                self.rw_alloc,
            ] = new_allocs();
            self.leg_keys = Vec::new();
            self.pls = Vec::new();
            self.pl_hot = Vec::new();
            self.pl_free = Vec::new();
            self.legs.shrink_to_fit();
            self.pl_index.shrink_to_fit();
            self.route_deps.shrink_to_fit();
            self.replace_planes(TableChange::None);
        }
    }

    pub(super) fn alloc(&mut self, which: Arr, size: usize) -> u32 {
        loop {
            let a = match which {
                Arr::Lb => &mut self.lb_alloc,
                Arr::Buckets => &mut self.bucket_alloc,
                Arr::Legs => &mut self.leg_alloc,
                Arr::Adj => &mut self.adj_alloc,
                Arr::Rw => &mut self.rw_alloc,
            };
            match a.alloc(size) {
                Ok(b) => return b,
                Err(need) => {
                    let cap = (a.cap() * 2).max(need);
                    a.set_cap(cap);
                    self.replace_planes(TableChange::None);
                }
            }
        }
    }

    pub(super) fn retire(&mut self, which: Arr, base: u32, size: usize) {
        let tag = self.shared.qsbr.next_epoch();
        let a = match which {
            Arr::Lb => &mut self.lb_alloc,
            Arr::Buckets => &mut self.bucket_alloc,
            Arr::Legs => &mut self.leg_alloc,
            Arr::Adj => &mut self.adj_alloc,
            Arr::Rw => &mut self.rw_alloc,
        };
        a.retire(base, size, tag);
    }
}

/// A set of changes published together; see [`Fib::batch`].
#[derive(Debug)]
pub struct Batch<'f> {
    fib: &'f mut Fib,
}

impl Batch<'_> {
    /// [`Fib::route_add`] without publishing yet.
    pub fn route_add(
        &mut self,
        table: TableId,
        prefix: Ipv4Prefix,
        kind: RouteKind,
    ) -> Result<u32, FibError> {
        self.fib.route_add(table, prefix, kind)
    }

    /// [`Fib::route_del`] without publishing yet.
    pub fn route_del(&mut self, table: TableId, prefix: Ipv4Prefix) -> Result<(), FibError> {
        self.fib.route_del(table, prefix)
    }

    /// [`Fib::route6_add`] without publishing yet.
    pub fn route6_add(
        &mut self,
        table: TableId,
        prefix: Ipv6Prefix,
        kind: RouteKind,
    ) -> Result<u32, FibError> {
        self.fib.route6_add(table, prefix, kind)
    }

    /// [`Fib::route6_del`] without publishing yet.
    pub fn route6_del(&mut self, table: TableId, prefix: Ipv6Prefix) -> Result<(), FibError> {
        self.fib.route6_del(table, prefix)
    }

    /// Rebuilds what changed and publishes it.
    pub fn commit(self) {}
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.fib.batch = false;
        self.fib.commit(true);
    }
}
