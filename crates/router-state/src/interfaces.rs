//! Interfaces and their addresses: ports and sub-interfaces, admin state, MTU, the table each is in, and the addresses every source gives them.

use super::*;

impl RouterState {
    /// Adds an interface (its addresses included).
    pub fn add_interface(&mut self, iface: Interface) -> Result<(), RouterError> {
        let bad = |msg: &str| RouterError::InvalidInterface {
            name: iface.name.clone(),
            msg: msg.into(),
        };
        if iface.ifindex == 0 || iface.ifindex as usize >= MAX_IFACES {
            return Err(bad(&format!("ifindex must be 1..{}", MAX_IFACES - 1)));
        }
        if !(68..=9600).contains(&iface.mtu) {
            return Err(bad("mtu must be 68..=9600"));
        }
        if iface.vlan.is_some_and(|v| v == 0 || v > 4094) {
            return Err(bad("vlan must be 1..=4094"));
        }
        if self.iface_list.contains_key(&iface.ifindex)
            || self.iface_list.values().any(|i| i.name == iface.name)
        {
            return Err(RouterError::InterfaceExists(iface.name.clone()));
        }
        if self
            .iface_list
            .values()
            .any(|i| i.port == iface.port && i.vlan == iface.vlan)
        {
            return Err(bad("another interface has the same port and vlan"));
        }
        if !self.fib.tables().any(|t| t == iface.table) {
            return Err(RouterError::Fib(FibError::UnknownTable(iface.table)));
        }
        for &(a, l) in &iface.addrs {
            check_addr(a.into(), l)?;
        }
        for &(a, l) in &iface.addrs6 {
            check_addr(a.into(), l)?;
        }
        let addrs: Vec<(IpAddr, u8)> = (iface.addrs.iter().map(|&(a, l)| (a.into(), l)))
            .chain(iface.addrs6.iter().map(|&(a, l)| (a.into(), l)))
            .collect();
        let ifindex = iface.ifindex;
        self.fib.interface_set(
            ifindex,
            fib::Interface {
                mac: iface.mac,
                mtu: iface.mtu,
                vlan: iface.vlan,
            },
        );
        let mut iface = iface;
        iface.addrs.clear();
        iface.addrs6.clear();
        self.iface_list.insert(ifindex, iface);
        for (a, l) in addrs {
            if let Err(e) = self.add_address_from(RouteSource::Config, ifindex, a, l) {
                // Undo: nothing of this interface stays.
                let _ = self.del_interface(ifindex);
                return Err(e);
            }
        }
        self.publish();
        Ok(())
    }

    /// Removes an interface and its addresses; refused while routes or neighbours
    /// use it.
    pub fn del_interface(&mut self, ifindex: u32) -> Result<(), RouterError> {
        self.iface(ifindex)?;
        let mut held = Vec::new();
        for src in RouteSource::ALL {
            held.extend(
                self.addr_rib
                    .of_source(src)
                    .filter(|(k, _, _)| k.0 == ifindex)
                    .map(|(k, _, &l)| (src, k.1, l)),
            );
        }
        let i = self.iface(ifindex)?;
        let addrs: Vec<(IpAddr, u8)> = (i.addrs.iter().map(|&(a, l)| (a.into(), l)))
            .chain(i.addrs6.iter().map(|&(a, l)| (a.into(), l)))
            .collect();
        for (a, l) in addrs {
            self.uninstall_address(ifindex, a, l)?;
        }
        for &(src, a, _) in &held {
            self.addr_rib.remove(&(ifindex, a), src, 0);
        }
        self.forget_neighbors(ifindex);
        let nbrs6: Vec<_> = self
            .neighbors6
            .keys()
            .filter(|k| k.0 == ifindex)
            .map(|k| k.1)
            .collect();
        for ip in nbrs6 {
            let _ = self.del_neighbor6(ifindex, ip);
        }
        if let Err(e) = self.fib.interface_del(ifindex) {
            // Still used by routes: its addresses come back.
            for (src, a, l) in held {
                let _ = self.add_address_from(src, ifindex, a, l);
            }
            return Err(e.into());
        }
        self.iface_list.remove(&ifindex);
        self.publish();
        Ok(())
    }

    /// Sets the admin state. As in Linux, the connected routes of a down
    /// interface go (its local addresses stay) and come back when it is up.
    pub fn set_up(&mut self, ifindex: u32, up: bool) -> Result<(), RouterError> {
        let i = self
            .iface_list
            .get_mut(&ifindex)
            .ok_or(RouterError::UnknownInterface(ifindex))?;
        if i.up == up {
            return Ok(());
        }
        i.up = up;
        let table = i.table;
        let nets: BTreeSet<IpPrefix> = (i.addrs.iter().map(|&(a, l)| (IpAddr::from(a), l)))
            .chain(i.addrs6.iter().map(|&(a, l)| (IpAddr::from(a), l)))
            .filter_map(|(a, l)| connected_net(a, l))
            .collect();
        for net in nets {
            if up {
                let _ = self.offer(
                    Origin::Address,
                    ifindex,
                    table,
                    net,
                    RouteKind::Connected { ifindex },
                );
            } else {
                let _ = self.withdraw(Origin::Address, ifindex, table, net);
            }
        }
        self.publish();
        Ok(())
    }

    /// Sets the IP MTU.
    pub fn set_mtu(&mut self, ifindex: u32, mtu: u16) -> Result<(), RouterError> {
        let i = self.iface(ifindex)?;
        if !(68..=9600).contains(&mtu) {
            return Err(RouterError::InvalidInterface {
                name: i.name.clone(),
                msg: "mtu must be 68..=9600".into(),
            });
        }
        let (mac, vlan) = (i.mac, i.vlan);
        self.fib
            .interface_set(ifindex, fib::Interface { mac, mtu, vlan });
        if let Some(i) = self.iface_list.get_mut(&ifindex) {
            i.mtu = mtu;
        }
        self.publish();
        Ok(())
    }

    /// Adds the configuration file's address (see
    /// [`RouterState::add_address_from`]).
    pub fn add_address(
        &mut self,
        ifindex: u32,
        addr: impl Into<IpAddr>,
        len: u8,
    ) -> Result<(), RouterError> {
        self.add_address_from(RouteSource::Config, ifindex, addr, len)
    }

    /// Removes the configuration file's address (see
    /// [`RouterState::del_address_from`]).
    pub fn del_address(
        &mut self,
        ifindex: u32,
        addr: impl Into<IpAddr>,
        len: u8,
    ) -> Result<(), RouterError> {
        self.del_address_from(RouteSource::Config, ifindex, addr, len)
    }

    /// Adds or replaces `source`'s address `addr/len` (either family) on an
    /// interface. The most preferred source's prefix length for `addr` is
    /// installed: a local host route (/32, /128) and, for shorter prefixes, the
    /// connected route of the subnet while the interface is up. An IPv6
    /// link-local address gets no route (packets to and from link-local
    /// addresses never take the FIB: they stay on their link). A less
    /// preferred source's waits; refused, nothing changes.
    pub fn add_address_from(
        &mut self,
        source: RouteSource,
        ifindex: u32,
        addr: impl Into<IpAddr>,
        len: u8,
    ) -> Result<(), RouterError> {
        let addr = addr.into();
        check_addr(addr, len)?;
        self.iface(ifindex)?;
        if let Some((name, _)) = self.pws.iter().find(|(_, p)| p.2.ac == ifindex) {
            return Err(RouterError::Pw(format!(
                "{name}: its circuit takes no address (delete the pseudowire first)"
            )));
        }
        let key = (ifindex, addr);
        let old = self.addr_rib.winner(&key).map(|w| *w.value);
        if self.addr_rib.would_win(&key, source, 0) && old != Some(len) {
            if let Some(l) = old {
                self.uninstall_address(ifindex, addr, l)?;
            }
            if let Err(e) = self.install_address(ifindex, addr, len) {
                if let Some(l) = old {
                    let _ = self.install_address(ifindex, addr, l);
                }
                return Err(e);
            }
        }
        self.addr_rib.insert(key, source, 0, len);
        Ok(())
    }

    /// Removes `source`'s address `addr/len`; the next source's, if any, takes
    /// its place.
    pub fn del_address_from(
        &mut self,
        source: RouteSource,
        ifindex: u32,
        addr: impl Into<IpAddr>,
        len: u8,
    ) -> Result<(), RouterError> {
        let addr = addr.into();
        let name = self.iface(ifindex)?.name.clone();
        let key = (ifindex, addr);
        if self.addr_rib.get(&key, source, 0) != Some(&len) {
            return Err(RouterError::NoSuchAddress(addr, len, name));
        }
        if !self
            .addr_rib
            .remove(&key, source, 0)
            .is_some_and(|g| g.was_winner)
        {
            return Ok(());
        }
        let next = self.addr_rib.winner(&key).map(|w| *w.value);
        if next != Some(len) {
            self.uninstall_address(ifindex, addr, len)?;
            if let Some(l) = next {
                if let Err(e) = self.install_address(ifindex, addr, l) {
                    // It cannot forward: it goes.
                    for src in RouteSource::ALL {
                        self.addr_rib.remove(&key, src, 0);
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// `source`'s prefix length for `addr` on an interface, installed or waiting.
    pub fn address_of(
        &self,
        source: RouteSource,
        ifindex: u32,
        addr: impl Into<IpAddr>,
    ) -> Option<u8> {
        self.addr_rib
            .get(&(ifindex, addr.into()), source, 0)
            .copied()
    }

    /// Every address `source` gives: (ifindex, address, prefix length).
    pub fn addresses_of(&self, source: RouteSource) -> Vec<(u32, IpAddr, u8)> {
        self.addr_rib
            .of_source(source)
            .map(|(k, _, &l)| (k.0, k.1, l))
            .collect()
    }

    /// Installs an address: a local host route and, for shorter prefixes, the
    /// connected route of the subnet while the interface is up (none for an IPv6
    /// link-local address).
    pub(super) fn install_address(
        &mut self,
        ifindex: u32,
        addr: IpAddr,
        len: u8,
    ) -> Result<(), RouterError> {
        check_addr(addr, len)?;
        let i = self.iface(ifindex)?;
        let exists = match addr {
            IpAddr::V4(a) => i.has_addr(a),
            IpAddr::V6(a) => i.has_addr6(a),
        };
        if exists {
            return Err(RouterError::AddressExists(addr, len, i.name.clone()));
        }
        let table = i.table;
        let up = i.up;
        if let Some(host) = host_route(addr) {
            self.offer(Origin::Address, ifindex, table, host, RouteKind::Local)?;
            if let Some(net) = connected_net(addr, len).filter(|_| up) {
                let connected = RouteKind::Connected { ifindex };
                if let Err(e) = self.offer(Origin::Address, ifindex, table, net, connected) {
                    let _ = self.withdraw(Origin::Address, ifindex, table, host);
                    return Err(e);
                }
            }
        }
        if let Some(i) = self.iface_list.get_mut(&ifindex) {
            match addr {
                IpAddr::V4(a) => i.addrs.push((a, len)),
                IpAddr::V6(a) => i.addrs6.push((a, len)),
            }
        }
        self.publish();
        Ok(())
    }

    /// Removes an installed address and its routes.
    pub(super) fn uninstall_address(
        &mut self,
        ifindex: u32,
        addr: IpAddr,
        len: u8,
    ) -> Result<(), RouterError> {
        let i = self.iface(ifindex)?;
        let all: Vec<(IpAddr, u8)> = (i.addrs.iter().map(|&(a, l)| (a.into(), l)))
            .chain(i.addrs6.iter().map(|&(a, l)| (a.into(), l)))
            .collect();
        if !all.contains(&(addr, len)) {
            return Err(RouterError::NoSuchAddress(addr, len, i.name.clone()));
        }
        let table = i.table;
        let net = connected_net(addr, len);
        // Another address of the same subnet keeps its connected route.
        let shared = all
            .iter()
            .any(|&(a, l)| (a, l) != (addr, len) && net.is_some() && connected_net(a, l) == net);
        if let Some(i) = self.iface_list.get_mut(&ifindex) {
            match addr {
                IpAddr::V4(a) => i.addrs.retain(|&x| x != (a, len)),
                IpAddr::V6(a) => i.addrs6.retain(|&x| x != (a, len)),
            }
        }
        if let Some(host) = host_route(addr) {
            let _ = self.withdraw(Origin::Address, ifindex, table, host);
        }
        if let Some(net) = net.filter(|_| !shared) {
            let _ = self.withdraw(Origin::Address, ifindex, table, net);
        }
        self.publish();
        Ok(())
    }

    /// Binds an interface to another IPv4 table: packets it receives are looked
    /// up there. As VPP's `set interface ip table`, refused while the interface
    /// has addresses (their routes are in the old table); its IPv4 neighbours are
    /// forgotten (their host routes are in the old table) and learned again.
    pub fn set_table(&mut self, ifindex: u32, table: TableId) -> Result<(), RouterError> {
        let i = self.iface(ifindex)?;
        if !self.fib.tables().any(|t| t == table) {
            return Err(FibError::UnknownTable(table).into());
        }
        if i.table == table {
            return Ok(());
        }
        let first = (i.addrs.first().map(|&(a, l)| (IpAddr::from(a), l)))
            .or(i.addrs6.first().map(|&(a, l)| (IpAddr::from(a), l)));
        if let Some((a, l)) = first {
            return Err(RouterError::TableInUse(format!(
                "interface {}: remove its addresses first ({a}/{l} has its routes in table {})",
                i.name, i.table
            )));
        }
        self.forget_neighbors(ifindex);
        if let Some(i) = self.iface_list.get_mut(&ifindex) {
            i.table = table;
        }
        self.publish();
        Ok(())
    }
}

/// The local host route of an address (none for an IPv6 link-local one).
fn host_route(addr: IpAddr) -> Option<IpPrefix> {
    match addr {
        IpAddr::V6(a) if a.is_unicast_link_local() => None,
        a => Some(IpPrefix::host(a)),
    }
}

/// The connected route of an address's subnet: none for a host-length prefix or
/// an IPv6 link-local address.
fn connected_net(addr: IpAddr, len: u8) -> Option<IpPrefix> {
    let host = match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(a) if a.is_unicast_link_local() => return None,
        IpAddr::V6(_) => 128,
    };
    (len < host)
        .then(|| IpPrefix::new_truncated(addr, len).ok())
        .flatten()
}
