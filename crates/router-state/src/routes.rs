//! Routes: per source and metric in the RIB, the most preferred one in the FIB, marks and sweeps for resyncs, and IPv4 tables.

use super::*;

impl RouterState {
    /// Orders the sources, most preferred first; every source once. Only before
    /// any source's route or label entry exists (at start).
    pub fn set_route_preference(&mut self, order: &[RouteSource]) -> Result<(), RouterError> {
        let mut seen = [false; 4];
        for &s in order {
            if std::mem::replace(&mut seen[s as usize], true) {
                return Err(RouterError::Preference(format!(
                    "{} is named twice",
                    s.name()
                )));
            }
        }
        if let Some(s) = RouteSource::ALL.iter().find(|s| !seen[**s as usize]) {
            return Err(RouterError::Preference(format!("{} is missing", s.name())));
        }
        let late =
            || RouterError::Preference("routes or labels exist already: set it at start".into());
        let before = self.route_preference();
        self.label_rib.set_ranking(order).map_err(|_| late())?;
        if self.router_ids.set_ranking(order).is_err() {
            let _ = self.label_rib.set_ranking(&before);
            return Err(late());
        }
        let mut origins = vec![Origin::Address];
        origins.extend(order.iter().map(|&s| Origin::of(s)));
        origins.push(Origin::Neighbor);
        if self.rib.set_ranking(&origins).is_err() {
            // Sources without label entries moved: they move back.
            let _ = self.label_rib.set_ranking(&before);
            let _ = self.router_ids.set_ranking(&before);
            return Err(late());
        }
        Ok(())
    }

    /// The sources, most preferred first.
    pub fn route_preference(&self) -> [RouteSource; 4] {
        let mut v = RouteSource::ALL;
        v.sort_by_key(|s| self.label_rib.rank(*s));
        v
    }

    /// Adds or replaces the configuration file's route (see
    /// [`RouterState::route_add_from`]).
    pub fn route_add(
        &mut self,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
        self.route_add_from(RouteSource::Config, table, prefix, kind)
    }

    /// Deletes the configuration file's route (see [`RouterState::route_del_from`]).
    pub fn route_del(
        &mut self,
        table: TableId,
        prefix: impl Into<IpPrefix>,
    ) -> Result<(), RouterError> {
        self.route_del_from(RouteSource::Config, table, prefix)
    }

    /// Adds or replaces `source`'s route for `prefix`. It forwards when no more
    /// preferred source holds the prefix and no address owns it; otherwise it waits
    /// to be revealed. Returns the FIB's result id (0 while it waits). A refused
    /// route changes nothing.
    pub fn route_add_from(
        &mut self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
        self.route_add_metric(source, table, prefix, 0, kind)
    }

    /// Adds or replaces `source`'s route for `prefix` with `metric`: a source
    /// may hold several for one prefix (as the kernel does), and the lowest
    /// metric of the most preferred source forwards (see
    /// [`RouterState::route_add_from`]).
    pub fn route_add_metric(
        &mut self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        metric: u32,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
        if !self.fib.tables().any(|t| t == table) {
            return Err(RouterError::Fib(FibError::UnknownTable(table)));
        }
        self.offer(Origin::of(source), metric, table, prefix.into(), kind)
    }

    /// Deletes `source`'s route for `prefix` with `metric`.
    pub fn route_del_metric(
        &mut self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        metric: u32,
    ) -> Result<(), RouterError> {
        let prefix = prefix.into();
        if self.withdraw(Origin::of(source), metric, table, prefix)? {
            Ok(())
        } else {
            Err(RouterError::NoSuchRoute(prefix, table))
        }
    }

    /// Starts a refresh of `source`'s routes: those it does not add again
    /// before [`RouterState::route_sweep`] go then.
    pub fn route_mark(&mut self, source: RouteSource) {
        self.rib.mark(Origin::of(source));
    }

    /// During a refresh, leaves `source`'s route for `prefix` with `metric` to
    /// the sweep (unless it is added again first). False when there is none or
    /// no refresh runs.
    pub fn route_unmark(
        &mut self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        metric: u32,
    ) -> bool {
        self.rib
            .set_stale(&(table, prefix.into()), Origin::of(source), metric)
    }

    /// During a refresh, whether `source`'s route for `prefix` with `metric`
    /// was added again since [`RouterState::route_mark`].
    pub fn route_refreshed(
        &self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        metric: u32,
    ) -> bool {
        self.rib
            .is_fresh(&(table, prefix.into()), Origin::of(source), metric)
    }

    /// Ends a refresh of `source`'s routes: deletes those not added since
    /// [`RouterState::route_mark`]. Returns them (table, prefix, metric).
    pub fn route_sweep(&mut self, source: RouteSource) -> Vec<(TableId, IpPrefix, u32)> {
        let stale = self.rib.sweep(Origin::of(source));
        let mut gone = Vec::with_capacity(stale.len());
        for ((t, p), m) in stale {
            let _ = self.withdraw(Origin::of(source), m, t, p);
            gone.push((t, p, m));
        }
        gone
    }

    /// Adds (`on`) or removes an address of the router's own that is on no
    /// interface (a loopback's): its local /32 or /128 in `table`, which wins over
    /// every source's route for it, as the kernel's local table does.
    pub fn set_local(
        &mut self,
        table: TableId,
        addr: impl Into<IpAddr>,
        on: bool,
    ) -> Result<(), RouterError> {
        let addr = addr.into();
        check_addr(addr, if addr.is_ipv4() { 32 } else { 128 })?;
        let host = IpPrefix::host(addr);
        if on {
            if !self.fib.tables().any(|t| t == table) {
                return Err(RouterError::Fib(FibError::UnknownTable(table)));
            }
            self.offer(Origin::Address, 0, table, host, RouteKind::Local)?;
        } else {
            self.withdraw(Origin::Address, 0, table, host)?;
        }
        Ok(())
    }

    /// Offers `origin`'s candidate for `prefix` to the RIB (with `metric`, which
    /// tells apart an origin's candidates for one prefix: the ifindex of an
    /// address or a neighbour). The FIB gets it first if it is to win; refused
    /// there, nothing changes. Returns the FIB's result id (0 while it waits).
    pub(super) fn offer(
        &mut self,
        origin: Origin,
        metric: u32,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
        let prefix = prefix.into();
        // The sources' kinds are shared (a full table has few); an address's
        // or a neighbour's is its own.
        let kind = match origin.source() {
            Some(_) => intern(&mut self.kinds, &mut self.last_kind, kind),
            None => Arc::new(kind),
        };
        let keep = kind.clone();
        let fib = &mut self.fib;
        let mut id = 0;
        let r = self
            .rib
            .insert_with((table, prefix), origin, metric, kind, |k| {
                fib_add(fib, table, prefix, (**k).clone()).map(|i| id = i)
            });
        match r {
            Ok(ins) => {
                drop(keep);
                self.release(ins.replaced);
                Ok(id)
            }
            Err(e) => {
                self.release(Some(keep));
                Err(e)
            }
        }
    }

    /// Withdraws `origin`'s candidate for `prefix`; the FIB gets what it reveals.
    /// `Ok(false)`: there was none. An error: the revealed candidate cannot
    /// forward (nothing does for the prefix until it changes).
    pub(super) fn withdraw(
        &mut self,
        origin: Origin,
        metric: u32,
        table: TableId,
        prefix: impl Into<IpPrefix>,
    ) -> Result<bool, RouterError> {
        let prefix = prefix.into();
        let Some(r) = self.rib.remove(&(table, prefix), origin, metric) else {
            return Ok(false);
        };
        self.release(Some(r.value));
        if r.was_winner {
            match self
                .rib
                .winner(&(table, prefix))
                .map(|w| (**w.value).clone())
            {
                Some(kind) => {
                    if let Err(e) = fib_add(&mut self.fib, table, prefix, kind) {
                        fib_del(&mut self.fib, table, prefix);
                        return Err(e);
                    }
                }
                None => fib_del(&mut self.fib, table, prefix),
            }
        }
        Ok(true)
    }

    /// How many distinct route kinds the sources' routes share.
    pub fn shared_route_kinds(&self) -> usize {
        self.kinds.len()
    }

    /// Lets go of a candidate's kind: the shared copy goes with its last user.
    pub(super) fn release(&mut self, kind: Option<Arc<RouteKind>>) {
        if let Some(k) = kind {
            let last = self.last_kind.as_ref().is_some_and(|l| Arc::ptr_eq(l, &k));
            // Held by `k`, `kinds` (and `last_kind`): no candidate uses it any more.
            if Arc::strong_count(&k) == 2 + usize::from(last) {
                self.kinds.remove(&*k);
                if last {
                    self.last_kind = None;
                }
            }
        }
    }

    /// Deletes `source`'s route for `prefix`; the next candidate, if any,
    /// takes its place.
    pub fn route_del_from(
        &mut self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
    ) -> Result<(), RouterError> {
        let prefix = prefix.into();
        if self.withdraw(Origin::of(source), 0, table, prefix)? {
            Ok(())
        } else {
            Err(RouterError::NoSuchRoute(prefix, table))
        }
    }

    /// The source of the route that forwards for exactly `prefix`, if a source's
    /// route does (not an address's or a neighbour's).
    pub fn route_source(&self, table: TableId, prefix: impl Into<IpPrefix>) -> Option<RouteSource> {
        self.rib.winner(&(table, prefix.into()))?.source.source()
    }

    /// `source`'s route for exactly `prefix` with `metric`, forwarding or waiting.
    pub fn route_of_metric(
        &self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
        metric: u32,
    ) -> Option<&RouteKind> {
        self.rib
            .get(&(table, prefix.into()), Origin::of(source), metric)
            .map(|k| &**k)
    }

    /// Every route `source` holds, with its metric: (table, prefix, metric, kind).
    pub fn routes_of_metric(
        &self,
        source: RouteSource,
    ) -> impl Iterator<Item = (TableId, IpPrefix, u32, &RouteKind)> + '_ {
        self.rib
            .of_source(Origin::of(source))
            .map(|(&(t, p), m, k)| (t, p, m, &**k))
    }

    /// `source`'s route for exactly `prefix`, forwarding or waiting (its lowest
    /// metric's).
    pub fn route_of(
        &self,
        source: RouteSource,
        table: TableId,
        prefix: impl Into<IpPrefix>,
    ) -> Option<&RouteKind> {
        self.rib
            .best_of(&(table, prefix.into()), Origin::of(source))
            .map(|c| &**c.value)
    }

    /// Every route `source` holds: (table, prefix, kind).
    pub fn routes_of(
        &self,
        source: RouteSource,
    ) -> impl Iterator<Item = (TableId, IpPrefix, &RouteKind)> + '_ {
        self.rib
            .of_source(Origin::of(source))
            .map(|(&(t, p), _, k)| (t, p, &**k))
    }

    /// Every route that forwards, by table then prefix, with what it does
    /// (addresses' local and connected routes and neighbours' host routes
    /// included).
    pub fn routes(&self) -> impl Iterator<Item = (TableId, IpPrefix, &RouteKind)> + '_ {
        self.rib
            .winners()
            .filter(|(k, _)| self.in_fib(k.0, k.1))
            .map(|(&(t, p), w)| (t, p, &**w.value))
    }

    /// What the route for exactly `prefix` in `table` does, if one forwards.
    pub fn route_kind(&self, table: TableId, prefix: impl Into<IpPrefix>) -> Option<&RouteKind> {
        let prefix = prefix.into();
        if !self.in_fib(table, prefix) {
            return None;
        }
        Some(&**self.rib.winner(&(table, prefix))?.value)
    }

    /// Creates an IPv4 table.
    pub fn table_add(&mut self, table: TableId) -> Result<(), RouterError> {
        Ok(self.fib.table_add(table)?)
    }

    /// Removes an empty IPv4 table (not 0): refused while an interface is bound
    /// to it, a route is in it or a label entry looks up in it.
    pub fn table_del(&mut self, table: TableId) -> Result<(), RouterError> {
        if table != 0 && !self.fib.tables().any(|t| t == table) {
            return Err(FibError::UnknownTable(table).into());
        }
        if let Some(name) = self.table_vrf(table).filter(|_| table != 0) {
            return Err(RouterError::TableInUse(format!(
                "table {table} is VRF {name} (vrf del {name} instead)"
            )));
        }
        if let Some(i) = self.iface_list.values().find(|i| i.table == table) {
            return Err(RouterError::TableInUse(format!(
                "table {table}: interface {} is in it (interface table {} 0 first)",
                i.name, i.name
            )));
        }
        if let Some(((_, p), _)) = self.rib.winners().find(|(k, _)| k.0 == table) {
            return Err(RouterError::TableInUse(format!(
                "table {table}: route {p} is in it (delete its routes first)"
            )));
        }
        let looked_up = RouteSource::ALL.into_iter().find_map(|s| {
            self.label_rib
                .of_source(s)
                .find(|(_, _, a)| a.lookup_table() == Some(table))
        });
        if let Some(((l, _), _, _)) = looked_up {
            return Err(RouterError::TableInUse(format!(
                "table {table}: label {l} looks up in it"
            )));
        }
        self.fib.table_del(table)?;
        self.publish();
        Ok(())
    }

    /// Whether the route for exactly `prefix` in `table` forwards (is in a FIB).
    fn in_fib(&self, table: TableId, prefix: IpPrefix) -> bool {
        match prefix {
            IpPrefix::V4(p) => self.fib.route(table, p).is_some(),
            IpPrefix::V6(p) => self.fib.route6(table, p).is_some(),
        }
    }

    /// How many routes `source` gives, forwarding or waiting.
    pub fn route_count_of(&self, source: RouteSource) -> usize {
        self.rib.count(Origin::of(source))
    }
}

/// Installs a winner in its family's FIB; returns the FIB's result id.
fn fib_add(
    fib: &mut Fib,
    table: TableId,
    prefix: IpPrefix,
    kind: RouteKind,
) -> Result<u32, RouterError> {
    match prefix {
        IpPrefix::V4(p) => Ok(fib.route_add(table, p, kind)?),
        IpPrefix::V6(p) => Ok(fib.route6_add(table, p, kind)?),
    }
}

/// Removes a prefix from its family's FIB (nothing if it is not there).
fn fib_del(fib: &mut Fib, table: TableId, prefix: IpPrefix) {
    let _ = match prefix {
        IpPrefix::V4(p) => fib.route_del(table, p),
        IpPrefix::V6(p) => fib.route6_del(table, p),
    };
}
