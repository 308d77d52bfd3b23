//! IPv6 routes: the same path lists, results, legs and adjacencies as IPv4's, keyed
//! by 128-bit prefixes in each table's IPv6 half.

use super::*;

impl Fib {
    /// Adds or replaces the IPv6 route for `prefix` in `table`. Returns its result
    /// id (the value [`crate::FibView::lookup6`] returns for addresses it covers).
    pub fn route6_add(
        &mut self,
        table: TableId,
        prefix: Ipv6Prefix,
        kind: RouteKind,
    ) -> Result<u32, FibError> {
        self.check_kind(table, &kind)?;
        let key = (prefix.addr_u128(), prefix.prefix_len());
        let existing = self
            .tables
            .get(&table)
            .and_then(|t| t.v6.routes.get(&key).copied());
        let pl = self.pl_acquire(PlKey { table, kind }, existing)?;
        let fwd = self.pl_hot.get(pl as usize).map_or(0, |h| h.1);
        let rk = RouteKey::v6(table, key.0, key.1);
        let Some(t) = self.tables.get_mut(&table) else {
            return Err(FibError::UnknownTable(table));
        };
        let v6 = &mut t.v6;
        if let Some(old) = existing {
            if old == pl {
                self.pl_release(pl);
            } else {
                v6.routes.insert(key, pl);
                v6.trie.insert(prefix, fwd);
                v6.writer.mark(key.0, key.1);
                self.queue_route_deps(rk, None);
                self.run_work();
                self.pl_release(old);
            }
        } else {
            v6.routes.insert(key, pl);
            v6.lens[usize::from(key.1)] += 1;
            v6.trie.insert(prefix, fwd);
            v6.writer.mark(key.0, key.1);
            // Path lists that resolved a gateway inside the new prefix through a
            // less specific route now resolve through this one.
            let cover = if key.1 > 0 && !self.route_deps.is_empty() {
                v6.longest_match(key.0, key.1 - 1, |_| false)
            } else {
                None
            };
            let ck = cover.map_or(RouteKey::v6(table, 0, 0), |(_, l)| {
                RouteKey::v6(table, key.0 & mask6(l), l)
            });
            self.queue_route_deps(ck, Some(prefix.into()));
            self.queue_route_deps(rk, None);
            self.run_work();
        }
        self.finish();
        Ok(fwd)
    }

    /// Removes the IPv6 route for `prefix` from `table`.
    pub fn route6_del(&mut self, table: TableId, prefix: Ipv6Prefix) -> Result<(), FibError> {
        let t = self
            .tables
            .get_mut(&table)
            .ok_or(FibError::UnknownTable(table))?;
        let key = (prefix.addr_u128(), prefix.prefix_len());
        let v6 = &mut t.v6;
        let pl = v6
            .routes
            .remove(&key)
            .ok_or(FibError::NoSuchRoute(prefix.into(), table))?;
        v6.lens[usize::from(key.1)] -= 1;
        v6.trie.remove(prefix);
        v6.writer.mark(key.0, key.1);
        if v6.routes.is_empty() {
            v6.routes = HashMap::default();
        }
        self.queue_route_deps(RouteKey::v6(table, key.0, key.1), None);
        self.run_work();
        self.pl_release(pl);
        self.finish();
        Ok(())
    }

    /// The result id of the IPv6 route for exactly `prefix`, if present.
    pub fn route6(&self, table: TableId, prefix: Ipv6Prefix) -> Option<u32> {
        let t = self.tables.get(&table)?;
        let pl =
            t.v6.routes
                .get(&(prefix.addr_u128(), prefix.prefix_len()))?;
        self.pl(*pl).map(|p| p.fwd)
    }

    /// Number of IPv6 routes in `table` (0 for an unknown table).
    pub fn route6_count(&self, table: TableId) -> usize {
        self.tables.get(&table).map_or(0, |t| t.v6.routes.len())
    }

    /// The length of the IPv6 route a lookup of `addr` in `table` finds (its
    /// longest match), if any.
    pub fn match_len6(&self, table: TableId, addr: u128) -> Option<u8> {
        let t = self.tables.get(&table)?;
        t.v6.longest_match(addr, 128, |_| false).map(|(_, len)| len)
    }
}
