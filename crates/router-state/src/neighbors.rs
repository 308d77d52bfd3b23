//! Neighbours of both families by source (static, kernel, ARP-learned), their aging, and the adjacencies routes and labels hold on them.

use super::*;

impl RouterState {
    /// Forgets the IPv4 neighbours on `ifindex` (and their host routes).
    pub(super) fn forget_neighbors(&mut self, ifindex: u32) {
        let nbrs: Vec<Ipv4Addr> = self
            .neighbors
            .keys()
            .filter(|k| k.0 == ifindex)
            .map(|k| k.1)
            .collect();
        for ip in nbrs {
            let _ = self.del_neighbor(ifindex, ip);
        }
    }

    /// Sets a configured neighbour of either family (the file's, `dpctl`'s),
    /// shown as static; returns its adjacency id.
    pub fn set_configured_neighbor(
        &mut self,
        ifindex: u32,
        ip: IpAddr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        match ip {
            IpAddr::V4(a) => self.set_neighbor(ifindex, a, mac),
            IpAddr::V6(a) => self.set_static_neighbor6(ifindex, a, mac),
        }
    }

    /// Forgets a configured neighbour of either family: an IPv4 one reveals
    /// what the host stack or ARP knows; an IPv6 one goes (neighbour discovery
    /// finds it again when traffic needs it). False when none was configured.
    pub fn del_configured_neighbor(&mut self, ifindex: u32, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(a) => self.del_static_neighbor(ifindex, a),
            IpAddr::V6(a) => {
                let had = self.is_static_neighbor6(ifindex, a);
                if had {
                    let _ = self.del_neighbor6(ifindex, a);
                }
                had
            }
        }
    }

    /// Sets (or learns) a neighbour's MAC; returns its adjacency id. A neighbour on
    /// one of the interface's connected subnets also gets a /32 host route, so traffic
    /// to it stops gleaning (unless a route for that /32 exists already).
    pub fn set_neighbor(
        &mut self,
        ifindex: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        self.put_neighbor(ifindex, ip, mac, true)
    }

    /// Installs a neighbour as if learned from ARP (it ages; see
    /// [`RouterState::age_neighbors`]).
    pub fn learn_neighbor(
        &mut self,
        ifindex: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        self.put_neighbor(ifindex, ip, mac, false)
    }

    /// Installs a neighbour, configured (static) or learned (aging from now).
    pub(super) fn put_neighbor(
        &mut self,
        ifindex: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
        configured: bool,
    ) -> Result<u32, RouterError> {
        if configured {
            let id = self.offer_neighbor(NeighborOrigin::Static, ifindex, ip, mac)?;
            // The operator's entry replaces the one ARP taught.
            self.withdraw_neighbor(NeighborOrigin::Arp, ifindex, ip);
            Ok(id)
        } else {
            let id = self.offer_neighbor(NeighborOrigin::Arp, ifindex, ip, mac)?;
            self.learned
                .insert((ifindex, ip), Learned::heard_at(Instant::now()));
            Ok(id)
        }
    }

    /// Offers `origin`'s MAC for a neighbour; installs it if it wins. Returns
    /// the adjacency id (the winner's). Refused: nothing changes.
    pub(super) fn offer_neighbor(
        &mut self,
        origin: NeighborOrigin,
        ifindex: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        self.iface(ifindex)?;
        let key = (ifindex, ip);
        let wins = self.neighbor_rib.would_win(&key, origin, 0);
        if wins && self.neighbors.get(&key) != Some(&mac) {
            self.install_neighbor(ifindex, ip, mac)?;
        }
        self.neighbor_rib.insert(key, origin, 0, mac);
        self.fib
            .adjacency_id(ifindex, IpAddr::V4(ip))
            .ok_or(RouterError::UnknownInterface(ifindex))
    }

    /// Withdraws `origin`'s MAC for a neighbour: the next origin's is
    /// installed, or the neighbour is forgotten (with its host route).
    pub(super) fn withdraw_neighbor(&mut self, origin: NeighborOrigin, ifindex: u32, ip: Ipv4Addr) {
        let key = (ifindex, ip);
        if origin == NeighborOrigin::Arp {
            self.learned.remove(&key);
        }
        let Some(gone) = self.neighbor_rib.remove(&key, origin, 0) else {
            return;
        };
        if !gone.was_winner {
            return;
        }
        match self.neighbor_rib.winner(&key).map(|w| *w.value) {
            Some(mac) => {
                if self.install_neighbor(ifindex, ip, mac).is_err() {
                    self.uninstall_neighbor(ifindex, ip);
                }
            }
            None => self.uninstall_neighbor(ifindex, ip),
        }
    }

    /// Installs a neighbour the host stack resolved (netlink): it does not age
    /// here (the kernel ages it and says when it goes). A configured entry
    /// wins over it.
    pub fn set_kernel_neighbor(
        &mut self,
        ifindex: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        let id = self.offer_neighbor(NeighborOrigin::Kernel, ifindex, ip, mac)?;
        // The host stack's entry replaces the one ARP taught here.
        self.withdraw_neighbor(NeighborOrigin::Arp, ifindex, ip);
        Ok(id)
    }

    /// Forgets the host stack's entry for a neighbour (a configured one stays).
    pub fn del_kernel_neighbor(&mut self, ifindex: u32, ip: Ipv4Addr) -> Result<(), RouterError> {
        self.withdraw_neighbor(NeighborOrigin::Kernel, ifindex, ip);
        Ok(())
    }

    /// Whether the host stack resolved this neighbour (netlink).
    pub fn is_kernel_neighbor(&self, ifindex: u32, ip: Ipv4Addr) -> bool {
        self.neighbor_rib
            .get(&(ifindex, ip), NeighborOrigin::Kernel, 0)
            .is_some()
    }

    /// Sets an IPv6 neighbour's MAC; returns its adjacency id. A global
    /// neighbour on one of the interface's IPv6 subnets also gets a /128 host
    /// route, so traffic to it stops gleaning (any other route for the /128
    /// wins over it).
    pub fn set_neighbor6(
        &mut self,
        ifindex: u32,
        ip: std::net::Ipv6Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        self.iface(ifindex)?;
        if self.neighbors6.get(&(ifindex, ip)) == Some(&mac) {
            if let Some(id) = self.fib.adjacency_id(ifindex, IpAddr::V6(ip)) {
                return Ok(id);
            }
        }
        let i = self.iface(ifindex)?;
        let table = i.table;
        let on_subnet = !ip.is_unicast_link_local() && i.on_link6(ip) && !i.has_addr6(ip);
        let id = self.fib.neighbor_set(ifindex, IpAddr::V6(ip), Some(mac))?;
        self.neighbors6.insert((ifindex, ip), mac);
        if on_subnet {
            let host = IpPrefix::host(IpAddr::V6(ip));
            let kind = RouteKind::Paths(vec![fib::Path::gateway6(ip, ifindex)]);
            self.offer(Origin::Neighbor, ifindex, table, host, kind)?;
        }
        Ok(id)
    }

    /// Sets an IPv6 neighbour's MAC as configured (`dpctl`): shown as static
    /// until it is deleted (by anyone).
    pub fn set_static_neighbor6(
        &mut self,
        ifindex: u32,
        ip: std::net::Ipv6Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        let id = self.set_neighbor6(ifindex, ip, mac)?;
        self.static6.insert((ifindex, ip));
        self.learned6.remove(&(ifindex, ip));
        Ok(id)
    }

    /// Whether an IPv6 neighbour was configured ([`RouterState::set_static_neighbor6`]).
    pub fn is_static_neighbor6(&self, ifindex: u32, ip: std::net::Ipv6Addr) -> bool {
        self.static6.contains(&(ifindex, ip))
    }

    /// Forgets an IPv6 neighbour.
    pub fn del_neighbor6(
        &mut self,
        ifindex: u32,
        ip: std::net::Ipv6Addr,
    ) -> Result<(), RouterError> {
        self.static6.remove(&(ifindex, ip));
        self.learned6.remove(&(ifindex, ip));
        if self.neighbors6.remove(&(ifindex, ip)).is_some() {
            let table = self.iface(ifindex)?.table;
            let host = IpPrefix::host(IpAddr::V6(ip));
            let _ = self.withdraw(Origin::Neighbor, ifindex, table, host);
            self.fib.neighbor_del(ifindex, IpAddr::V6(ip))?;
        }
        Ok(())
    }

    /// The IPv6 next hops (interface, address) workers held packets for since
    /// the last call, unresolved: the host stack beside the dataplane is asked
    /// to resolve them (the answer comes back as [`RouterState::set_neighbor6`]).
    pub fn take_unresolved6(&mut self) -> Vec<(u32, std::net::Ipv6Addr)> {
        std::mem::take(&mut self.unresolved6)
            .into_iter()
            .filter(|k| !self.neighbors6.contains_key(k))
            .collect()
    }

    /// IPv6 neighbours known: (ifindex, address) → MAC.
    pub fn neighbors6(&self) -> &BTreeMap<(u32, std::net::Ipv6Addr), [u8; 6]> {
        &self.neighbors6
    }

    /// Whether a neighbour was configured (it does not age) rather than learned.
    pub fn is_static_neighbor(&self, ifindex: u32, ip: Ipv4Addr) -> bool {
        self.neighbor_rib
            .get(&(ifindex, ip), NeighborOrigin::Static, 0)
            .is_some()
    }

    /// Probes sent and neighbours forgotten by aging since start.
    pub fn aging_counts(&self) -> (u64, u64) {
        self.aging_counts
    }

    pub(super) fn install_neighbor(
        &mut self,
        ifindex: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        let i = self.iface(ifindex)?;
        let table = i.table;
        let on_link = i.addrs.iter().any(|&(a, len)| {
            let mask = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            u32::from(a) & mask == u32::from(ip) & mask && a != ip
        });
        let id = self.fib.neighbor_set(ifindex, IpAddr::V4(ip), Some(mac))?;
        self.neighbors.insert((ifindex, ip), mac);
        if on_link {
            // A host route, so traffic to it stops gleaning; any other route
            // for the /32 wins over it.
            let host = Ipv4Prefix::new(ip, 32)?;
            let kind = RouteKind::Paths(vec![fib::Path::gateway_on(ip, ifindex)]);
            self.offer(Origin::Neighbor, ifindex, table, host, kind)?;
        }
        Ok(id)
    }

    /// Forgets a neighbour's MAC, whoever gave it (and the host route it
    /// brought).
    pub fn del_neighbor(&mut self, ifindex: u32, ip: Ipv4Addr) -> Result<(), RouterError> {
        let table = self.iface(ifindex)?.table;
        let _ = self.withdraw(Origin::Neighbor, ifindex, table, Ipv4Prefix::new(ip, 32)?);
        self.fib.neighbor_del(ifindex, IpAddr::V4(ip))?;
        self.neighbors.remove(&(ifindex, ip));
        for o in [
            NeighborOrigin::Static,
            NeighborOrigin::Kernel,
            NeighborOrigin::Arp,
        ] {
            self.neighbor_rib.remove(&(ifindex, ip), o, 0);
        }
        self.learned.remove(&(ifindex, ip));
        Ok(())
    }

    /// Forgets the configured MAC of a neighbour: the host stack's or ARP's,
    /// if any, takes its place. False when none was configured.
    pub fn del_static_neighbor(&mut self, ifindex: u32, ip: Ipv4Addr) -> bool {
        let had = self.is_static_neighbor(ifindex, ip);
        self.withdraw_neighbor(NeighborOrigin::Static, ifindex, ip);
        had
    }

    /// Forgets an installed neighbour no origin gives any more.
    pub(super) fn uninstall_neighbor(&mut self, ifindex: u32, ip: Ipv4Addr) {
        let table = self.iface_list.get(&ifindex).map(|i| i.table);
        if let (Some(table), Ok(host)) = (table, Ipv4Prefix::new(ip, 32)) {
            let _ = self.withdraw(Origin::Neighbor, ifindex, table, host);
        }
        let _ = self.fib.neighbor_del(ifindex, IpAddr::V4(ip));
        self.neighbors.remove(&(ifindex, ip));
    }

    /// Ages the neighbours learned from ARP (see [`NeighborAging`]) as of `now`:
    /// returns the probes to send now (give them to a worker's `inject` queue) and
    /// forgets the neighbours whose probes went unanswered.
    pub fn age_neighbors(&mut self, now: Instant, aging: &NeighborAging) -> Vec<ArpProbe> {
        let mut probes = Vec::new();
        let mut forget = Vec::new();
        let router_id = self.router_id;
        for (&(ifindex, ip), e) in self.learned.iter_mut() {
            match e.step(now, aging) {
                Step::Wait => {}
                Step::Forget => forget.push((ifindex, ip)),
                Step::Probe => {
                    let probe = self
                        .iface_list
                        .get(&ifindex)
                        .zip(self.neighbors.get(&(ifindex, ip)))
                        .and_then(|(i, &mac)| arp_probe(i, router_id, ip, mac));
                    match probe {
                        Some(p) => probes.push(p),
                        // No address to probe from: nothing can refresh it.
                        None => forget.push((ifindex, ip)),
                    }
                }
            }
        }
        for (ifindex, ip) in forget {
            let taught = self
                .neighbor_rib
                .get(&(ifindex, ip), NeighborOrigin::Arp, 0)
                .is_some();
            self.withdraw_neighbor(NeighborOrigin::Arp, ifindex, ip);
            self.aging_counts.1 += u64::from(taught);
        }
        // IPv6 neighbours learned from neighbour discovery: the same steps,
        // probed with unicast solicitations.
        let mut forget6 = Vec::new();
        for (&(ifindex, ip), e) in self.learned6.iter_mut() {
            match e.step(now, aging) {
                Step::Wait => {}
                Step::Forget => forget6.push((ifindex, ip)),
                Step::Probe => {
                    let probe = self
                        .iface_list
                        .get(&ifindex)
                        .zip(self.neighbors6.get(&(ifindex, ip)))
                        .and_then(|(i, &mac)| nd_probe(i, ip, mac));
                    match probe {
                        Some(p) => probes.push(p),
                        None => forget6.push((ifindex, ip)),
                    }
                }
            }
        }
        for (ifindex, ip) in forget6 {
            self.learned6.remove(&(ifindex, ip));
            if self.del_neighbor6(ifindex, ip).is_ok() {
                self.aging_counts.1 += 1;
            }
        }
        self.aging_counts.0 += probes.len() as u64;
        probes
    }

    /// The adjacency id of neighbour `ip` on `ifindex`, creating an incomplete one
    /// (resolved by ARP when traffic uses it) if there is none. For label entries:
    /// [`RouterState::label_add`] holds the adjacencies its entry names, so an id
    /// stays valid for the label whatever happens to the routes that share it.
    pub fn adjacency(&mut self, ifindex: u32, ip: Ipv4Addr) -> Result<u32, RouterError> {
        self.iface(ifindex)?;
        if let Some(id) = self.fib.adjacency_id(ifindex, IpAddr::V4(ip)) {
            return Ok(id);
        }
        // Held until a label entry takes it over (or for good, if none does).
        let id = self.fib.adjacency_hold(ifindex, IpAddr::V4(ip))?;
        *self
            .loose_holds
            .entry((ifindex, IpAddr::V4(ip)))
            .or_default() += 1;
        Ok(id)
    }

    /// Takes a reference on every adjacency `action` sends to (adopting one that
    /// [`RouterState::adjacency`] created for it). Nothing held on error.
    pub(super) fn hold_adjacencies(
        &mut self,
        action: &mpls::LabelAction,
    ) -> Result<Vec<(u32, IpAddr)>, RouterError> {
        let mpls::LabelAction::Forward { paths, .. } = action else {
            return Ok(Vec::new());
        };
        let mut keys = Vec::with_capacity(paths.len());
        for p in paths {
            let key = self
                .fib
                .adjacency_key(p.adj)
                .ok_or(RouterError::UnknownAdjacency(p.adj))?;
            keys.push(key);
        }
        for &(ifindex, addr) in &keys {
            match self.loose_holds.get_mut(&(ifindex, addr)) {
                Some(n) if *n > 1 => *n -= 1,
                Some(_) => {
                    self.loose_holds.remove(&(ifindex, addr));
                }
                None => {
                    self.fib.adjacency_hold(ifindex, addr)?;
                }
            }
        }
        Ok(keys)
    }

    pub(super) fn release_adjacencies(&mut self, keys: Vec<(u32, IpAddr)>) {
        for (ifindex, addr) in keys {
            self.fib.adjacency_release(ifindex, addr);
        }
    }
}
