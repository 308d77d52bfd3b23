//! Interfaces: addresses, MTU, admin state, 802.1Q sub-interfaces, their tables, `show interfaces|addresses`.

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_interfaces(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::Address {
                add,
                interface,
                addr,
                len,
            } => {
                self.linux_owns(&interface, "addresses")?;
                self.address(add, &interface, addr, len)
            }
            Command::Mtu { interface, mtu } => {
                self.linux_owns(&interface, "mtu")?;
                let ix = ifindex(self.ctl, &interface)?;
                self.ctl.set_mtu(ix, mtu)?;
                Ok(Value::Null)
            }
            Command::SetUp { interface, up } => {
                self.linux_owns(&interface, "admin state")?;
                let ix = ifindex(self.ctl, &interface)?;
                self.ctl.set_up(ix, up)?;
                Ok(Value::Null)
            }
            Command::SubAdd { parent, vlan } => self.sub_add(&parent, vlan),
            Command::SubDel { interface } => {
                self.linux_owns(&interface, "sub-interface")?;
                self.sub_del(&interface)
            }
            Command::InterfaceTable { interface, table } => {
                let ix = ifindex(self.ctl, &interface)?;
                self.ctl.set_table(ix, table)?;
                Ok(Value::Null)
            }
            Command::ShowInterfaces { name } => self.show_interfaces(name.as_deref()),
            Command::ShowAddresses => {
                let v: Vec<Value> = self
                    .ctl
                    .ifaces()
                    .iter()
                    .map(|i| {
                        json!({
                            "name": i.name,
                            "up": i.up,
                            "table": i.table,
                            "addresses": i.all_addrs().map(|(a, l)| format!("{a}/{l}")).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                Ok(json!({ "interfaces": v }))
            }
            other => Err(misrouted(&other)),
        }
    }

    pub(super) fn address(
        &mut self,
        add: bool,
        name: &str,
        addr: std::net::IpAddr,
        len: u8,
    ) -> Result<Value, ApiError> {
        let ix = ifindex(self.ctl, name)?;
        let ift = self.ctl.ifaces();
        let Some(i) = ift.get(ix) else {
            return Err(ApiError::NotFound(format!("unknown interface {name:?}")));
        };
        let all = |i: &Interface| -> Vec<(std::net::IpAddr, u8)> { i.all_addrs().collect() };
        let list = |i: &Interface| {
            let all = all(i);
            if all.is_empty() {
                "none".to_string()
            } else {
                all.iter()
                    .map(|(a, l)| format!("{a}/{l}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        if !add {
            let mut gone = false;
            for src in RouteSource::ALL.into_iter().filter(|s| !s.is_learned()) {
                if self.ctl.address_of(src, ix, addr) == Some(len) {
                    self.ctl.del_address_from(src, ix, addr, len)?;
                    gone = true;
                }
            }
            if !gone {
                return Err(ApiError::NotFound(format!(
                    "{addr}/{len} is not an address of {name} (its addresses: {})",
                    list(i)
                )));
            }
            return Ok(Value::Null);
        }
        let has = |o: &Interface| all(o).iter().any(|&(a, _)| a == addr);
        // (the same link-local address on several links is the norm)
        let link_local = matches!(addr, std::net::IpAddr::V6(a) if a.is_unicast_link_local());
        if let Some(o) = ift.iter().find(|o| {
            o.table == i.table
                && has(o)
                && (o.ifindex == ix && all(o).contains(&(addr, len))
                    || o.ifindex != ix && !link_local)
        }) {
            let text = format!("{addr} is already an address of {}", o.name);
            // This interface's address, or another interface's.
            return Err(if o.ifindex == ix {
                ApiError::Exists(text)
            } else {
                ApiError::Conflict(text)
            });
        }
        if !has(i) && !link_local {
            let host = IpPrefix::host(addr);
            let net = IpPrefix::new_truncated(addr, len)?;
            let full = if addr.is_ipv4() { 32 } else { 128 };
            for p in [Some(host), (len < full).then_some(net)]
                .into_iter()
                .flatten()
            {
                if let Some(k) = self.ctl.route_kind(i.table, p) {
                    return Err(ApiError::Conflict(format!(
                        "route {p} exists in table {} ({}); an address needs that prefix for itself: delete the route first",
                        i.table,
                        self.kind_text(k)
                    )));
                }
            }
        }
        self.ctl
            .add_address_from(RouteSource::Dpctl, ix, addr, len)?;
        Ok(Value::Null)
    }

    pub(super) fn sub_add(&mut self, parent: &str, vlan: u16) -> Result<Value, ApiError> {
        let pix = ifindex(self.ctl, parent)?;
        let ift = self.ctl.ifaces();
        let Some(p) = ift.get(pix) else {
            return Err(ApiError::NotFound(format!("unknown interface {parent:?}")));
        };
        if p.vlan.is_some() {
            let ports: Vec<&str> = self.port_infos.iter().map(|p| p.name.as_str()).collect();
            return Err(ApiError::Refused(format!(
                "{parent} is a sub-interface; sub-interfaces go on a port ({})",
                ports.join(", ")
            )));
        }
        let name = format!("{parent}.{vlan}");
        if ift.iter().any(|i| i.name == name) {
            return Err(ApiError::Exists(format!("interface {name} exists")));
        }
        if let Some(o) = ift
            .iter()
            .find(|i| i.port == p.port && i.vlan == Some(vlan))
        {
            return Err(ApiError::Conflict(format!(
                "VLAN {vlan} of {parent} is interface {} already",
                o.name
            )));
        }
        let first = self.port_infos.len() as u32 + 1;
        let ix = (first..MAX_IFACES as u32)
            .find(|&k| ift.get(k).is_none())
            .ok_or_else(|| {
                ApiError::Refused(format!("too many interfaces (at most {})", MAX_IFACES - 1))
            })?;
        let iface = Interface {
            ifindex: ix,
            name: name.clone(),
            port: p.port,
            vlan: Some(vlan),
            mac: p.mac,
            mtu: p.mtu,
            up: true,
            table: p.table,
            addrs: Vec::new(),
            addrs6: Vec::new(),
        };
        self.ctl
            .add_interface(iface)
            .map_err(|source| ApiError::Router {
                what: name.clone(),
                source,
            })?;
        // A reused ifIndex starts from zero in `show interfaces`.
        for (s, b) in self
            .ctl
            .worker_stats()
            .iter()
            .zip(&mut self.baseline.workers)
        {
            if let (Some(c), Some(slot)) =
                (s.ifaces.get(ix as usize), b.ifaces.get_mut(ix as usize))
            {
                *slot = [
                    c.rx_pkts.get(),
                    c.rx_bytes.get(),
                    c.tx_pkts.get(),
                    c.tx_bytes.get(),
                    c.drops.get(),
                ];
            }
        }
        Ok(
            json!({ "message": format!("created {name} (ifindex {ix})"), "name": name, "ifindex": ix }),
        )
    }

    pub(super) fn sub_del(&mut self, name: &str) -> Result<Value, ApiError> {
        let ix = ifindex(self.ctl, name)?;
        let ift = self.ctl.ifaces();
        let Some(i) = ift.get(ix).cloned() else {
            return Err(ApiError::NotFound(format!("unknown interface {name:?}")));
        };
        if i.vlan.is_none() {
            return Err(ApiError::Refused(format!(
                "{name} is a port's interface; only sub-interfaces can be deleted"
            )));
        }
        let own: Vec<IpPrefix> = i
            .all_addrs()
            .filter_map(|(a, l)| IpPrefix::new_truncated(a, l).ok())
            .collect();
        let mut users = Vec::new();
        for (t, p, k) in self.ctl.routes() {
            let uses = match k {
                RouteKind::Paths(ps) => ps.iter().any(|x| x.ifindex == Some(ix)),
                RouteKind::Connected { ifindex } => *ifindex == ix && !own.contains(&p),
                _ => false,
            };
            if uses {
                users.push(format!("route {p} (table {t})"));
            }
        }
        {
            let mut reader = self.ctl.fib().reader();
            let view = reader.read();
            for (l, eos, a) in self.ctl.labels().iter() {
                if let mpls::LabelAction::Forward { paths, .. } = a {
                    if paths
                        .iter()
                        .any(|h| view.adjacency(h.adj).is_some_and(|x| x.ifindex == ix))
                    {
                        users.push(format!("label {l} {}", eos_word(eos)));
                    }
                }
            }
        }
        if !users.is_empty() {
            let n = users.len();
            users.truncate(5);
            return Err(ApiError::Conflict(format!(
                "{name} is in use by {}{}; delete those first",
                users.join(", "),
                if n > 5 {
                    format!(" and {} more", n - 5)
                } else {
                    String::new()
                }
            )));
        }
        let nbrs: Vec<(Ipv4Addr, [u8; 6], bool)> = self
            .ctl
            .neighbors()
            .iter()
            .filter(|(k, _)| k.0 == ix)
            .map(|(k, m)| (k.1, *m, self.ctl.is_static_neighbor(ix, k.1)))
            .collect();
        if let Err(e) = self.ctl.del_interface(ix) {
            // Put back what went before the refusal (the addresses are back).
            for (ip, mac, configured) in nbrs {
                let _ = if configured {
                    self.ctl.set_neighbor(ix, ip, mac)
                } else {
                    self.ctl.learn_neighbor(ix, ip, mac)
                };
            }
            return Err(ApiError::Conflict(format!(
                "{name}: {e} (routes still resolve through it; delete them first)"
            )));
        }
        Ok(Value::Null)
    }

    pub(super) fn show_interfaces(&self, only: Option<&str>) -> Result<Value, ApiError> {
        if let Some(n) = only {
            ifindex(self.ctl, n)?;
        }
        let snaps = self.snaps();
        let ift = self.ctl.ifaces();
        let rows: Vec<Value> = ift
            .iter()
            .filter(|i| only.is_none_or(|n| n == i.name))
            .map(|i| {
                let ix = i.ifindex as usize;
                let sum = |k: usize| -> u64 {
                    snaps
                        .iter()
                        .filter_map(|s| s.ifaces.get(ix))
                        .map(|c| c[k])
                        .sum()
                };
                let port = self.port_counters(i.port);
                let mut counters = json!({
                    "rx_packets": sum(0),
                    "rx_bytes": sum(1),
                    "tx_packets": sum(2),
                    "tx_bytes": sum(3),
                    "drops": sum(4),
                });
                if let (None, Some((_, ps))) = (i.vlan, port) {
                    counters["rx_missed"] = json!(ps.rx_missed);
                    counters["rx_errors"] = json!(ps.rx_errors);
                    counters["tx_errors"] = json!(ps.tx_errors);
                    counters["rx_no_mbuf"] = json!(ps.rx_nombuf);
                }
                json!({
                    "name": i.name,
                    "ifindex": i.ifindex,
                    "port": i.port,
                    "vlan": i.vlan,
                    "mac": mac_str(i.mac),
                    "mtu": i.mtu,
                    "up": i.up,
                    "link": port.map(|p| p.0),
                    "table": i.table,
                    "addresses": i.all_addrs().map(|(a, l)| format!("{a}/{l}")).collect::<Vec<_>>(),
                    "counters": counters,
                })
            })
            .collect();
        Ok(json!({ "interfaces": rows }))
    }
}
