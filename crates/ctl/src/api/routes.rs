//! Routes: `route add|replace|del|show`.

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_routes(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::RouteAdd {
                table,
                prefix,
                target,
                replace,
            } => {
                check_table(self.ctl, table)?;
                if let Some(owner) = self.address_route(table, prefix) {
                    return Err(ApiError::Conflict(format!(
                        "{prefix} in table {table} is the route of {owner}; change the address instead (interface address del|add)"
                    )));
                }
                // Routes learned from a routing daemon do not count: a configured
                // route takes precedence over them and reveals them when it goes.
                let learned = self
                    .ctl
                    .route_source(table, prefix)
                    .is_some_and(RouteSource::is_learned);
                if !replace && !learned {
                    if let Some(k) = self.ctl.route_kind(table, prefix) {
                        return Err(ApiError::Exists(format!(
                            "route {prefix} exists in table {table} ({}); use `route replace` to change it, or `route del` first",
                            self.kind_text(k)
                        )));
                    }
                }
                let kind =
                    spec::resolve_route(self.ctl, &target).map_err(|source| ApiError::Resolve {
                        what: format!("route {prefix}"),
                        source,
                    })?;
                self.ctl
                    .route_add_from(RouteSource::Dpctl, table, prefix, kind)
                    .map_err(|source| ApiError::Router {
                        what: format!("route {prefix}"),
                        source,
                    })?;
                // One configured route per prefix: this one replaces the file's.
                if self
                    .ctl
                    .route_of(RouteSource::Config, table, prefix)
                    .is_some()
                {
                    let _ = self.ctl.route_del_from(RouteSource::Config, table, prefix);
                }
                Ok(Value::Null)
            }
            Command::RouteDel { table, prefix } => {
                check_table(self.ctl, table)?;
                if self.ctl.route_kind(table, prefix).is_none() {
                    return Err(ApiError::NotFound(format!(
                        "no route {prefix} in table {table} (dpctl route show table {table} lists them)"
                    )));
                }
                if let Some(owner) = self.address_route(table, prefix) {
                    return Err(ApiError::Conflict(format!(
                        "{prefix} in table {table} is the route of {owner}; remove the address instead (interface address del)"
                    )));
                }
                let mut gone = false;
                for src in RouteSource::ALL.into_iter().filter(|s| !s.is_learned()) {
                    if self.ctl.route_of(src, table, prefix).is_some() {
                        self.ctl
                            .route_del_from(src, table, prefix)
                            .map_err(|source| ApiError::Router {
                                what: format!("route {prefix}"),
                                source,
                            })?;
                        gone = true;
                    }
                }
                if !gone {
                    return Err(ApiError::Conflict(
                        match self.ctl.route_source(table, prefix) {
                            Some(src) => format!(
                                "route {prefix} in table {table} is learned ({}); withdraw it where it comes from (e.g. ip route del in the control-plane namespace)",
                                src.name()
                            ),
                            None => format!(
                                "route {prefix} in table {table} is a neighbour's host route; it goes with the neighbour (neighbor del)"
                            ),
                        },
                    ));
                }
                Ok(Value::Null)
            }
            Command::RouteShow { table, filter } => self.route_show(table, filter),
            other => Err(misrouted(&other)),
        }
    }

    /// If `prefix` is the local or connected route of an interface address, which.
    pub(super) fn address_route(&self, table: TableId, prefix: IpPrefix) -> Option<String> {
        for i in self.ctl.ifaces().iter().filter(|i| i.table == table) {
            for (a, l) in i.all_addrs() {
                let host = IpPrefix::host(a);
                let net = IpPrefix::new_truncated(a, l).ok();
                if host == prefix || (l < if a.is_ipv4() { 32 } else { 128 } && net == Some(prefix))
                {
                    return Some(format!("address {a}/{l} on {}", i.name));
                }
            }
        }
        None
    }

    pub(super) fn kind_text(&self, k: &RouteKind) -> String {
        match k {
            RouteKind::Paths(ps) => ps
                .iter()
                .map(|p| {
                    let mut s = String::from("via");
                    match p.via {
                        Via::Gateway(g) => s += &format!(" {g}"),
                        Via::Gateway6(g) => s += &format!(" {g}"),
                        Via::Attached => {}
                    }
                    if let Some(ix) = p.ifindex {
                        s += &format!(" {}", self.iface_name(ix));
                    }
                    if let Some(t) = p.via_table {
                        s += &format!(" next-hop-table {t}");
                    }
                    if !p.labels.is_empty() {
                        s += " out-labels";
                        for l in &p.labels {
                            s += &format!(" {l}");
                        }
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join(" "),
            RouteKind::Blackhole => "blackhole".into(),
            RouteKind::Unreachable => "unreachable".into(),
            RouteKind::Prohibit => "prohibit".into(),
            RouteKind::Local => "local".into(),
            RouteKind::Connected { ifindex } => format!("connected {}", self.iface_name(*ifindex)),
        }
    }

    pub(super) fn route_json(&self, table: TableId, prefix: IpPrefix, k: &RouteKind) -> Value {
        let mut v = json!({ "table": table, "prefix": prefix.to_string() });
        let kind = match k {
            RouteKind::Paths(ps) => {
                v["paths"] = ps
                    .iter()
                    .map(|p| {
                        json!({
                            "gateway": match p.via {
                                Via::Gateway(g) => Some(g.to_string()),
                                Via::Gateway6(g) => Some(g.to_string()),
                                Via::Attached => None,
                            },
                            "interface": p.ifindex.map(|ix| self.iface_name(ix)),
                            "next_hop_table": p.via_table,
                            "out_labels": p.labels,
                            "weight": p.weight,
                        })
                    })
                    .collect();
                "paths"
            }
            RouteKind::Blackhole => "blackhole",
            RouteKind::Unreachable => "unreachable",
            RouteKind::Prohibit => "prohibit",
            RouteKind::Local => "local",
            RouteKind::Connected { ifindex } => {
                v["interface"] = json!(self.iface_name(*ifindex));
                "connected"
            }
        };
        v["kind"] = json!(kind);
        v["source"] = json!(match self.ctl.route_source(table, prefix) {
            Some(src) => src.name(),
            None if self.address_route(table, prefix).is_some() => "interface",
            // (an address of the router's on no interface: the namespace's `lo`)
            None if matches!(k, RouteKind::Local) => "loopback",
            None => "neighbor",
        });
        v
    }

    pub(super) fn route_show(
        &self,
        table: Option<TableId>,
        filter: Option<RouteFilter>,
    ) -> Result<Value, ApiError> {
        if let Some(t) = table {
            check_table(self.ctl, t)?;
        }
        let in_table = |t: TableId| table.is_none_or(|x| x == t);
        let mut rows = Vec::new();
        match filter {
            None => {
                for (t, p, k) in self.ctl.routes().filter(|r| in_table(r.0)) {
                    rows.push(self.route_json(t, p, k));
                }
            }
            Some(RouteFilter::Prefix(pf)) => {
                for (t, p, k) in self.ctl.routes().filter(|r| in_table(r.0) && r.1 == pf) {
                    rows.push(self.route_json(t, p, k));
                }
            }
            Some(RouteFilter::Address(a)) => {
                // The longest match per table: the route that forwards `a`.
                let mut best: Vec<(TableId, IpPrefix, &RouteKind)> = Vec::new();
                for (t, p, k) in self
                    .ctl
                    .routes()
                    .filter(|r| in_table(r.0) && r.1.contains(a))
                {
                    match best.iter_mut().find(|b| b.0 == t) {
                        Some(b) if b.1.prefix_len() < p.prefix_len() => *b = (t, p, k),
                        Some(_) => {}
                        None => best.push((t, p, k)),
                    }
                }
                for (t, p, k) in best {
                    rows.push(self.route_json(t, p, k));
                }
            }
        }
        let mut tables: Vec<TableId> = self.ctl.fib().tables().filter(|t| in_table(*t)).collect();
        tables.sort_unstable();
        let counts: Vec<Value> = tables
            .iter()
            .map(|&t| {
                json!({
                    "table": t,
                    "vrf": self.ctl.table_vrf(t),
                    "routes": self.ctl.fib().route_count(t),
                })
            })
            .collect();
        Ok(json!({ "tables": counts, "routes": rows }))
    }
}
