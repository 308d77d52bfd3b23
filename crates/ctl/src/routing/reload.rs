//! A reload of the routing sections: the difference between the file the router
//! was last given and the new one, checked in full first, then applied in place.

use super::*;

/// Counts of what a reload changed, per kind of entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Changes {
    /// Added.
    pub added: usize,
    /// Removed.
    pub removed: usize,
    /// Changed in place.
    pub changed: usize,
}

impl Changes {
    fn is_empty(&self) -> bool {
        *self == Changes::default()
    }

    /// Counts an entry the reload wrote: changed if it was there before, else added.
    fn wrote(&mut self, existed: bool) {
        if existed {
            self.changed += 1;
        } else {
            self.added += 1;
        }
    }
}

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReloadSummary {
    /// Sub-interfaces, and interface attributes (MTU, admin state).
    pub interfaces: Changes,
    /// Interface addresses.
    pub addresses: Changes,
    /// Static neighbours.
    pub neighbors: Changes,
    /// Routes.
    pub routes: Changes,
    /// Label entries.
    pub labels: Changes,
    /// Pseudowires.
    pub pws: Changes,
}

impl std::fmt::Display for ReloadSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            ("interfaces", &self.interfaces),
            ("addresses", &self.addresses),
            ("neighbors", &self.neighbors),
            ("routes", &self.routes),
            ("labels", &self.labels),
            ("pseudowires", &self.pws),
        ];
        let changed: Vec<String> = parts
            .iter()
            .filter(|(_, c)| !c.is_empty())
            .map(|(n, c)| format!("{n} +{} -{} ~{}", c.added, c.removed, c.changed))
            .collect();
        if changed.is_empty() {
            f.write_str("no changes")
        } else {
            f.write_str(&changed.join(", "))
        }
    }
}

/// The two files side by side, and the sub-interfaces to remove and create.
struct Diff<'a> {
    old_if: BTreeMap<String, IfaceWant>,
    new_if: BTreeMap<String, IfaceWant>,
    old_rt: std::borrow::Cow<'a, RouteDigest>,
    new_rt: BTreeMap<(TableId, IpPrefix), RouteTarget>,
    old_lb: BTreeMap<(u32, bool), LabelSpec>,
    new_lb: BTreeMap<(u32, bool), LabelSpec>,
    old_nb: BTreeMap<(String, IpAddr), [u8; 6]>,
    new_nb: BTreeMap<(String, IpAddr), [u8; 6]>,
    sub_del: Vec<String>,
    sub_add: Vec<String>,
}

/// Everything [`reload`] checks before it changes anything.
fn diff<'a>(
    old: &'a Routing,
    new: &Routing,
    ports: &[PortInfo],
    ctl: &RouterControl,
) -> Result<Diff<'a>, RoutingError> {
    // 1. The new file must be right on its own (it is what a restart would load).
    // The scratch router lives on a thread of its own: its memory, a full
    // table's worth with a file that has one, stays in that thread's heap
    // arena, not scattered among the entries the reload is about to add.
    std::thread::scope(|s| {
        s.spawn(|| apply(new, ports, &mut RouterControl::new()))
            .join()
            .unwrap_or_else(|_| {
                Err(RoutingError::Invalid(
                    "the check of the file stopped".into(),
                ))
            })
    })?;
    if old.router.icmp_rate_pps != new.router.icmp_rate_pps {
        return Err(RoutingError::Restart(
            "[router] icmp_rate_pps changed: restart dataplaned to apply it".into(),
        ));
    }
    if old.router.route_preference != new.router.route_preference {
        return Err(RoutingError::Restart(
            "[router] route_preference changed: restart dataplaned to apply it".into(),
        ));
    }
    if let Some(t) = old
        .router
        .tables
        .iter()
        .find(|t| **t != 0 && !new.router.tables.contains(t))
    {
        return Err(RoutingError::Restart(format!(
            "[router] tables: removing table {t} needs a restart of dataplaned"
        )));
    }
    if let Some(v) = old.vrfs.iter().find(|v| !new.vrfs.contains(v)) {
        return Err(RoutingError::Restart(format!(
            "[[vrf]] {}: removing or renumbering a VRF needs a restart of dataplaned",
            v.name
        )));
    }
    let (old_if, new_if) = (wanted_ifaces(old, ports)?, wanted_ifaces(new, ports)?);
    let (old_rt, new_rt) = (old.routes_digest()?, wanted_routes(new)?);
    let (old_lb, new_lb) = (wanted_labels(old)?, wanted_labels(new)?);
    let (old_nb, new_nb) = (wanted_neighbors(old)?, wanted_neighbors(new)?);

    // 2. Checks against the running router.
    let mut sub_del = Vec::new();
    let mut sub_add = Vec::new();
    for (name, w) in &old_if {
        if w.vlan.is_some()
            && new_if
                .get(name)
                .is_none_or(|n| n.port != w.port || n.vlan != w.vlan || n.table != w.table)
        {
            sub_del.push(name.clone());
        }
    }
    for (name, w) in &new_if {
        match old_if.get(name) {
            Some(o) if w.vlan.is_none() && o.table != w.table => {
                return Err(RoutingError::Restart(format!(
                    "[[interface]] {name}: moving it to table {} needs a restart of dataplaned",
                    w.table
                )));
            }
            Some(o) if o.port == w.port && o.vlan == w.vlan && o.table == w.table => {}
            _ if w.vlan.is_some() => {
                if !sub_del.contains(name) && ctl.iface_by_name(name).is_ok() {
                    return Err(RoutingError::Invalid(format!(
                        "[[interface]] {name}: an interface of that name exists (made with dpctl?); delete it first"
                    )));
                }
                sub_add.push(name.clone());
            }
            _ => {}
        }
    }
    let used: HashSet<u32> = ctl.ifaces().iter().map(|i| i.ifindex).collect();
    let free = (1..MAX_IFACES as u32).filter(|i| !used.contains(i)).count();
    if free + sub_del.len() < sub_add.len() {
        return Err(RoutingError::Invalid(format!(
            "too many interfaces (at most {})",
            MAX_IFACES - 1
        )));
    }
    Ok(Diff {
        old_if,
        new_if,
        old_rt,
        new_rt,
        old_lb,
        new_lb,
        old_nb,
        new_nb,
        sub_del,
        sub_add,
    })
}

/// Applies the difference between the routing configuration the router was last
/// given (`old`) and `new`, without stopping anything: entries only in `new` are
/// added, entries only in `old` removed, entries in both but different replaced in
/// place (a route or label entry is swapped atomically for the workers). Changes
/// made with `dpctl` since are kept unless the file changes the same entry.
///
/// `new` is first applied in full to a scratch router, so every error in the file is
/// found before the running router is touched; what needs a restart (moving an
/// interface to another table, removing a table, `icmp_rate_pps`) is refused, and
/// nothing is applied.
/// `linux_owns` gives, for an interface whose addresses, MTU and up/down Linux
/// holds (a twin's), why a change is refused: it is, before anything is applied.
pub fn reload(
    old: &Routing,
    new: &Routing,
    ports: &[PortInfo],
    ctl: &mut RouterControl,
    linux_owns: &dyn Fn(&str) -> Option<String>,
) -> Result<ReloadSummary, RoutingError> {
    let d = diff(old, new, ports, ctl).map_err(|e| RoutingError::NothingApplied(Box::new(e)))?;
    for (name, w) in &d.new_if {
        let (Some(o), Some(why)) = (d.old_if.get(name), linux_owns(name)) else {
            continue;
        };
        if (&o.addrs, o.mtu, o.up) != (&w.addrs, w.mtu, w.up) {
            return Err(RoutingError::LinuxOwns {
                interface: name.clone(),
                why,
            });
        }
    }

    // Apply: what goes away first (it may hold references to what goes next),
    // then what stays or comes.
    let mut sum = ReloadSummary::default();
    remove_gone(old, new, &d, ctl, &mut sum)?;
    update_interfaces(&d, ctl, &mut sum)?;
    for &t in &new.router.tables {
        if t != 0 && !ctl.fib().tables().any(|x| x == t) {
            ctl.table_add(t)
                .map_err(|e| stopped("[router] tables".into(), e))?;
        }
    }
    for v in &new.vrfs {
        ctl.vrf_add(&v.name, v.table)
            .map_err(|e| stopped(format!("[[vrf]] {}", v.name), e))?;
    }
    let rid = router_id(new)?;
    if router_id(old)? != rid {
        ctl.set_router_id(rid);
    }
    add_interfaces(&d, ports, ctl, &mut sum)?;
    apply_entries(old, new, &d, ctl, &mut sum)?;
    Ok(sum)
}

/// Reload, first step: removes the pseudowires, label entries, routes,
/// neighbours and sub-interfaces the new file does not have.
fn remove_gone(
    old: &Routing,
    new: &Routing,
    d: &Diff<'_>,
    ctl: &mut RouterControl,
    sum: &mut ReloadSummary,
) -> Result<(), RoutingError> {
    for p in old.pws.iter().filter(|p| !new.pws.contains(p)) {
        if ctl
            .pws()
            .any(|(n, _, s, _)| n == p.name && s == RouteSource::Config)
        {
            ctl.pw_del(&p.name)
                .map_err(|e| stopped(format!("[[pw]] {}", p.name), e))?;
        }
        if new.pws.iter().all(|n| n.name != p.name) {
            sum.pws.removed += 1;
        }
    }
    for ((label, eos), _) in d.old_lb.iter().filter(|(k, _)| !d.new_lb.contains_key(k)) {
        if ctl.label_of(RouteSource::Config, *label, *eos).is_some() {
            ctl.label_del(*label, *eos)
                .map_err(|e| stopped(format!("label {label}"), e))?;
        }
        sum.labels.removed += 1;
    }
    for ((table, prefix), _) in d.old_rt.iter().filter(|(k, _)| !d.new_rt.contains_key(k)) {
        if ctl.route_of(RouteSource::Config, *table, *prefix).is_some() {
            ctl.route_del_from(RouteSource::Config, *table, *prefix)
                .map_err(|e| stopped(format!("route {prefix}"), e))?;
        }
        sum.routes.removed += 1;
    }
    for ((ifname, ip), _) in d.old_nb.iter().filter(|(k, _)| !d.new_nb.contains_key(k)) {
        if let Ok(ix) = spec::ifindex(ctl, ifname) {
            ctl.del_configured_neighbor(ix, *ip);
        }
        sum.neighbors.removed += 1;
    }
    for name in &d.sub_del {
        if let Ok(ix) = spec::ifindex(ctl, name) {
            ctl.del_interface(ix)
                .map_err(|e| stopped(format!("interface {name}"), e))?;
        }
        sum.interfaces.removed += 1;
    }
    Ok(())
}

/// Reload: the addresses, MTU and state of the interfaces that stay.
fn update_interfaces(
    d: &Diff<'_>,
    ctl: &mut RouterControl,
    sum: &mut ReloadSummary,
) -> Result<(), RoutingError> {
    // Interfaces that stay: addresses and attributes.
    for (name, w) in &d.new_if {
        let Some(o) = d.old_if.get(name) else {
            continue;
        };
        if d.sub_del.contains(name) {
            continue;
        }
        let ix = spec::ifindex(ctl, name).map_err(|e| stopped(format!("interface {name}"), e))?;
        for &(a, l) in o.addrs.iter().filter(|x| !w.addrs.contains(x)) {
            if ctl.address_of(RouteSource::Config, ix, a) == Some(l) {
                ctl.del_address(ix, a, l)
                    .map_err(|e| stopped(format!("address {a}/{l}"), e))?;
            }
            sum.addresses.removed += 1;
        }
        for &(a, l) in w.addrs.iter().filter(|x| !o.addrs.contains(x)) {
            ctl.add_address(ix, a, l)
                .map_err(|e| stopped(format!("address {a}/{l}"), e))?;
            sum.addresses.added += 1;
        }
        if o.mtu != w.mtu {
            ctl.set_mtu(ix, w.mtu)
                .map_err(|e| stopped(format!("interface {name}"), e))?;
        }
        if o.up != w.up {
            ctl.set_up(ix, w.up)
                .map_err(|e| stopped(format!("interface {name}"), e))?;
        }
        if o.mtu != w.mtu || o.up != w.up {
            sum.interfaces.changed += 1;
        }
    }
    Ok(())
}

/// Reload: the new sub-interfaces, each on the lowest free ifIndex.
fn add_interfaces(
    d: &Diff<'_>,
    ports: &[PortInfo],
    ctl: &mut RouterControl,
    sum: &mut ReloadSummary,
) -> Result<(), RoutingError> {
    for name in &d.sub_add {
        let used: HashSet<u32> = ctl.ifaces().iter().map(|i| i.ifindex).collect();
        let ix = (ports.len() as u32 + 1..MAX_IFACES as u32)
            .find(|i| !used.contains(i))
            .ok_or_else(|| {
                stopped(
                    format!("interface {name}"),
                    RoutingError::Invalid("no free ifIndex".into()),
                )
            })?;
        ctl.add_interface(make_iface(ix, name, &d.new_if[name], ports))
            .map_err(|e| stopped(format!("interface {name}"), e))?;
        sum.interfaces.added += 1;
    }
    Ok(())
}

/// Reload, last step: the neighbours, routes, label entries and pseudowires that
/// are new or changed.
fn apply_entries(
    old: &Routing,
    new: &Routing,
    d: &Diff<'_>,
    ctl: &mut RouterControl,
    sum: &mut ReloadSummary,
) -> Result<(), RoutingError> {
    for ((ifname, ip), mac) in &d.new_nb {
        let before = d.old_nb.get(&(ifname.clone(), *ip));
        if before == Some(mac) {
            continue;
        }
        let ix = spec::ifindex(ctl, ifname).map_err(|e| stopped(format!("neighbor {ip}"), e))?;
        ctl.set_configured_neighbor(ix, *ip, *mac)
            .map_err(|e| stopped(format!("neighbor {ip}"), e))?;
        sum.neighbors.wrote(before.is_some());
    }
    for ((table, prefix), target) in &d.new_rt {
        let before = d.old_rt.get(&(*table, *prefix));
        if before == Some(&fingerprint(target))
            && ctl.route_of(RouteSource::Config, *table, *prefix).is_some()
        {
            continue;
        }
        let kind =
            spec::resolve_route(ctl, target).map_err(|e| stopped(format!("route {prefix}"), e))?;
        // The file changes this entry: its version replaces a dpctl one.
        if ctl.route_of(RouteSource::Dpctl, *table, *prefix).is_some() {
            let _ = ctl.route_del_from(RouteSource::Dpctl, *table, *prefix);
        }
        ctl.route_add(*table, *prefix, kind)
            .map_err(|e| stopped(format!("route {prefix}"), e))?;
        sum.routes.wrote(before.is_some());
    }
    for ((label, eos), s) in &d.new_lb {
        let before = d.old_lb.get(&(*label, *eos));
        if before == Some(s) && ctl.labels().get(*label, *eos).is_some() {
            continue;
        }
        // The file changes the entry: a dpctl change of it is replaced.
        if ctl.label_of(RouteSource::Dpctl, *label, *eos).is_some() {
            let _ = ctl.label_del_from(RouteSource::Dpctl, *label, *eos);
        }
        spec::install_label(ctl, RouteSource::Config, *label, *eos, s)
            .map_err(|e| stopped(format!("label {label} {}", eos_word(*eos)), e))?;
        sum.labels.wrote(before.is_some());
    }
    for p in new.pws.iter().filter(|p| !old.pws.contains(p)) {
        let pw = p
            .pw(ctl)
            .map_err(|e| stopped(format!("[[pw]] {}", p.name), e))?;
        ctl.pw_add(RouteSource::Config, &p.name, pw)
            .map_err(|e| stopped(format!("[[pw]] {}", p.name), e))?;
        sum.pws.wrote(old.pws.iter().any(|o| o.name == p.name));
    }
    Ok(())
}
