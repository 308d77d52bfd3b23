//! The route API: adding, replacing and removing a route in a table, and what a
//! table holds.

use super::*;

impl Fib {
    /// Checks a route's table, interfaces and next-hop tables.
    pub(super) fn check_kind(&self, table: TableId, kind: &RouteKind) -> Result<(), FibError> {
        if !self.tables.contains_key(&table) {
            return Err(FibError::UnknownTable(table));
        }
        match kind {
            RouteKind::Paths(ps) => {
                check_paths(ps)?;
                if let Some(i) = ps
                    .iter()
                    .filter_map(|p| p.ifindex)
                    .find(|i| !self.interfaces.contains_key(i))
                {
                    return Err(FibError::UnknownInterface(i));
                }
                if let Some(t) = ps
                    .iter()
                    .filter_map(|p| p.via_table)
                    .find(|t| !self.tables.contains_key(t))
                {
                    return Err(FibError::UnknownTable(t));
                }
            }
            RouteKind::Connected { ifindex } if !self.interfaces.contains_key(ifindex) => {
                return Err(FibError::UnknownInterface(*ifindex));
            }
            _ => {}
        }
        Ok(())
    }

    /// Adds or replaces the route for `prefix` in `table`. Returns its result id (the
    /// value lookups return for addresses it covers).
    pub fn route_add(
        &mut self,
        table: TableId,
        prefix: Ipv4Prefix,
        kind: RouteKind,
    ) -> Result<u32, FibError> {
        self.check_kind(table, &kind)?;
        let existing = self
            .tables
            .get(&table)
            .and_then(|t| t.index.get(prefix.addr_u32(), prefix.prefix_len()));
        let seed = existing.map(|e| e.pl);
        let pl = self.pl_acquire(PlKey { table, kind }, seed)?;
        let fwd = self.pl_hot.get(pl as usize).map_or(0, |h| h.1);
        let (addr, len) = (prefix.addr_u32(), prefix.prefix_len());
        let rk = RouteKey::v4(table, addr, len);
        let Some(t) = self.tables.get_mut(&table) else {
            return Err(FibError::UnknownTable(table));
        };
        if let Some(e) = existing {
            let old = e.pl;
            if old == pl {
                self.pl_release(pl);
            } else {
                t.index.insert(addr, len, RouteEntry { pl, node: e.node });
                t.trie.set_route(e.node, pl, fwd);
                t.lpm.mark(addr, len, e.node);
                self.queue_route_deps(rk, None);
                self.run_work();
                self.pl_release(old);
            }
        } else {
            let (node, _) = t.trie.insert(addr, len, pl, fwd);
            t.index.insert(addr, len, RouteEntry { pl, node });
            t.lpm.mark(addr, len, node);
            // Path lists that resolved a gateway inside the new prefix through a less
            // specific route now resolve through this one.
            // (Only when something resolves recursively: finding the cover walks the trie.)
            let cover = if len > 0 && !self.route_deps.is_empty() {
                t.trie
                    .longest_match(addr, len - 1, |_| false)
                    .and_then(|(_, l)| Ipv4Prefix::new_truncated(prefix.addr(), l).ok())
            } else {
                None
            };
            let ck = cover.map_or(RouteKey::v4(table, 0, 0), |c| {
                RouteKey::v4(table, c.addr_u32(), c.prefix_len())
            });
            self.queue_route_deps(ck, Some(prefix.into()));
            self.queue_route_deps(rk, None);
            self.run_work();
        }
        self.finish();
        Ok(fwd)
    }

    /// Removes the route for `prefix` from `table`.
    pub fn route_del(&mut self, table: TableId, prefix: Ipv4Prefix) -> Result<(), FibError> {
        let t = self
            .tables
            .get_mut(&table)
            .ok_or(FibError::UnknownTable(table))?;
        let (addr, len) = (prefix.addr_u32(), prefix.prefix_len());
        let pl = t
            .trie
            .remove(addr, len)
            .ok_or(FibError::NoSuchRoute(prefix.into(), table))?;
        t.lpm.mark(addr, len, NIL);
        t.index.remove(addr, len);
        if t.trie.len() == 0 {
            t.index = RouteIndex::default();
        }
        self.queue_route_deps(RouteKey::v4(table, addr, len), None);
        self.run_work();
        self.pl_release(pl);
        self.finish();
        Ok(())
    }

    /// The result id of the route for exactly `prefix`, if present.
    pub fn route(&self, table: TableId, prefix: Ipv4Prefix) -> Option<u32> {
        let t = self.tables.get(&table)?;
        let e = t.index.get(prefix.addr_u32(), prefix.prefix_len())?;
        self.pl(e.pl).map(|p| p.fwd)
    }

    /// The length of the route a lookup of `addr` in `table` finds (its longest
    /// match), if any.
    pub fn match_len(&self, table: TableId, addr: u32) -> Option<u8> {
        let t = self.tables.get(&table)?;
        t.trie
            .longest_match(addr, 32, |_| false)
            .map(|(_, len)| len)
    }

    /// Number of routes in `table` (0 for an unknown table).
    pub fn route_count(&self, table: TableId) -> usize {
        self.tables.get(&table).map_or(0, |t| t.trie.len())
    }
}
