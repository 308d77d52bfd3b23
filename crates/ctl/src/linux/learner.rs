//! The netlink learner: follows the control-plane namespace's links, addresses,
//! neighbours, routes and nexthop objects and applies them to the router, a batch
//! of messages at a time (one FIB publication per batch). Lost events (ENOBUFS)
//! or anything out of step trigger a resync: a full dump applied with
//! mark-and-sweep, which leaves exactly the kernel's state and never stops the
//! workers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use fib::{Ipv4Prefix, Path, RouteKind, TableId, Via};
use serde_json::{Value, json};

use dataplane::router::{RouteSource, RouterControl};

use super::change::{Change, DecodeError, Link, NextHop, NexthopObject, Target};
use super::decode::{self, Msg};
use super::nl::NlSocket;

/// Datagrams read per poll before the batch is applied.
const POLL_DATAGRAMS: usize = 1024;

/// Counters and the last resync, for `show linux`.
#[derive(Debug, Default, Clone)]
pub struct LearnerStats {
    /// Netlink messages decoded (events and dumps).
    pub messages: u64,
    /// Batches applied (one publication each).
    pub batches: u64,
    /// Changes applied to the router.
    pub applied: u64,
    /// Messages of no interest, by reason.
    pub ignored: BTreeMap<&'static str, u64>,
    /// Malformed messages.
    pub malformed: u64,
    /// Changes the router refused, and the last refusal.
    pub refused: u64,
    /// The last refusal or malformed message.
    pub last_error: Option<String>,
    /// Resyncs done.
    pub resyncs: u64,
    /// The last resync: reason, how long it took, entries swept.
    pub last_resync: Option<(String, Duration, u64)>,
}

/// The learner's state.
#[derive(Debug)]
pub struct Learner {
    events: NlSocket,
    dump: NlSocket,
    /// Twin kernel ifindex -> router ifindex.
    twins: HashMap<u32, u32>,
    /// Linux table -> FIB table, beyond the default rule.
    tables: BTreeMap<u32, u32>,
    /// Nexthop objects by id.
    nexthops: BTreeMap<u32, NexthopObject>,
    /// Routes that use a nexthop object: (table, prefix) -> id.
    nh_users: BTreeMap<(TableId, Ipv4Prefix), u32>,
    /// Label entries learned (label), for the sweep.
    labels: BTreeSet<u32>,
    /// Set while a resync marks what the dump holds.
    mark: Option<Mark>,
    stats: LearnerStats,
    /// A resync is due (the reason).
    pending: Option<String>,
}

/// What a dump refreshed.
#[derive(Debug, Default)]
struct Mark {
    routes: BTreeSet<(TableId, Ipv4Prefix)>,
    neighbors: BTreeSet<(u32, IpAddr)>,
    addrs: BTreeSet<(u32, Ipv4Addr, u8)>,
    labels: BTreeSet<u32>,
    nexthops: BTreeSet<u32>,
}

impl Learner {
    /// A learner over `events` (subscribed, non-blocking) and `dump` (blocking),
    /// mapping twin ifindexes `twins` (kernel -> router) and tables `tables`.
    pub fn new(
        events: NlSocket,
        dump: NlSocket,
        twins: HashMap<u32, u32>,
        tables: BTreeMap<u32, u32>,
    ) -> Learner {
        Learner {
            events,
            dump,
            twins,
            tables,
            nexthops: BTreeMap::new(),
            nh_users: BTreeMap::new(),
            labels: BTreeSet::new(),
            mark: None,
            stats: LearnerStats::default(),
            pending: None,
        }
    }

    /// The counters.
    pub fn stats(&self) -> &LearnerStats {
        &self.stats
    }

    /// Reads what is waiting on the event socket and applies it as one batch;
    /// resyncs when events were lost.
    pub fn poll(&mut self, ctl: &mut RouterControl) {
        let mut msgs = Vec::new();
        for _ in 0..POLL_DATAGRAMS {
            match self.events.recv() {
                Ok(Some(buf)) => msgs.extend(decode::messages(buf)),
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.pending = Some("ENOBUFS: netlink events were lost".into());
                    break;
                }
                Err(e) => {
                    self.pending = Some(format!("netlink receive: {e}"));
                    break;
                }
            }
        }
        if let Some(reason) = self.pending.take() {
            self.resync(ctl, &reason);
            return;
        }
        if !msgs.is_empty() {
            self.apply_batch(ctl, msgs);
        }
    }

    /// Dumps the namespace and makes the router hold exactly its state: what the
    /// dump has is applied, kernel-learned entries it does not have are removed.
    pub fn resync(&mut self, ctl: &mut RouterControl, reason: &str) {
        let t0 = Instant::now();
        // Events queued before the dump are older than it: drop them.
        loop {
            match self.events.recv() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(_) => break,
            }
        }
        let msgs = match self.dump.dump_all() {
            Ok(m) => m,
            Err(e) => {
                self.stats.last_error = Some(format!("netlink dump: {e}"));
                self.pending = Some(format!("netlink dump failed: {e}"));
                return;
            }
        };
        self.mark = Some(Mark::default());
        self.apply_batch(ctl, msgs);
        let mark = self.mark.take().unwrap_or_default();
        let swept = ctl.batch(|ctl| self.sweep(ctl, &mark));
        self.stats.resyncs += 1;
        self.stats.last_resync = Some((reason.to_string(), t0.elapsed(), swept));
    }

    fn sweep(&mut self, ctl: &mut RouterControl, mark: &Mark) -> u64 {
        let mut swept = 0;
        let stale: Vec<_> = ctl
            .routes_of(RouteSource::Kernel)
            .map(|(t, p, _)| (t, p))
            .filter(|k| !mark.routes.contains(k))
            .collect();
        for (t, p) in stale {
            let _ = ctl.route_del_from(RouteSource::Kernel, t, p);
            self.nh_users.remove(&(t, p));
            swept += 1;
        }
        let twins: BTreeSet<u32> = self.twins.values().copied().collect();
        let stale: Vec<_> = ctl
            .neighbors()
            .keys()
            .filter(|&&(ix, ip)| ctl.is_kernel_neighbor(ix, ip))
            .filter(|&&(ix, ip)| !mark.neighbors.contains(&(ix, IpAddr::V4(ip))))
            .copied()
            .collect();
        for (ix, ip) in stale {
            let _ = ctl.del_kernel_neighbor(ix, ip);
            swept += 1;
        }
        let stale: Vec<_> = ctl
            .neighbors6()
            .keys()
            .filter(|&&(ix, ip)| twins.contains(&ix) && !mark.neighbors.contains(&(ix, ip.into())))
            .copied()
            .collect();
        for (ix, ip) in stale {
            let _ = ctl.del_neighbor6(ix, ip);
            swept += 1;
        }
        let stale: Vec<_> = ctl
            .ifaces()
            .iter()
            .filter(|i| twins.contains(&i.ifindex))
            .flat_map(|i| i.addrs.iter().map(move |&(a, l)| (i.ifindex, a, l)))
            .filter(|k| !mark.addrs.contains(k))
            .collect();
        for (ix, a, l) in stale {
            let _ = ctl.del_address(ix, a, l);
            swept += 1;
        }
        for label in self.labels.clone() {
            if !mark.labels.contains(&label) {
                self.del_label(ctl, label);
                swept += 1;
            }
        }
        self.nexthops.retain(|id, _| mark.nexthops.contains(id));
        swept
    }

    fn apply_batch(&mut self, ctl: &mut RouterControl, msgs: Vec<Result<Msg, DecodeError>>) {
        ctl.batch(|ctl| {
            for m in msgs {
                self.stats.messages += 1;
                match m {
                    Ok(Msg::Change(c)) => self.apply(ctl, c),
                    Ok(Msg::Ignored(why)) => *self.stats.ignored.entry(why).or_default() += 1,
                    Ok(Msg::Done) => {}
                    Ok(Msg::Error(0)) => {}
                    Ok(Msg::Error(e)) => {
                        self.stats.last_error = Some(format!(
                            "netlink error: {}",
                            std::io::Error::from_raw_os_error(e)
                        ));
                    }
                    Err(e) => {
                        self.stats.malformed += 1;
                        self.stats.last_error = Some(e.to_string());
                    }
                }
            }
        });
        self.stats.batches += 1;
    }

    fn ignore(&mut self, why: &'static str) {
        *self.stats.ignored.entry(why).or_default() += 1;
    }

    fn refused(&mut self, what: String) {
        self.stats.refused += 1;
        self.stats.last_error = Some(what);
    }

    /// Applies one change.
    pub fn apply(&mut self, ctl: &mut RouterControl, c: Change) {
        self.stats.applied += 1;
        match c {
            Change::Link(l) => self.link(ctl, &l),
            Change::LinkGone { ifindex } => {
                if let Some(&r) = self.twins.get(&ifindex) {
                    let _ = ctl.set_up(r, false);
                    self.purge_interface(ctl, r);
                    self.refused(format!("twin of interface {r} was deleted in Linux"));
                }
            }
            Change::Addr {
                add,
                ifindex,
                addr,
                len,
            } => {
                let Some(&r) = self.twins.get(&ifindex) else {
                    return self.ignore("not a twin");
                };
                if let Some(m) = &mut self.mark {
                    m.addrs.insert((r, addr, len));
                }
                let has = ctl
                    .ifaces()
                    .iter()
                    .any(|i| i.ifindex == r && i.addrs.contains(&(addr, len)));
                let res = match (add, has) {
                    (true, false) => ctl.add_address(r, addr, len),
                    (false, true) => ctl.del_address(r, addr, len),
                    _ => Ok(()),
                };
                if let Err(e) = res {
                    self.refused(format!("address {addr}/{len}: {e}"));
                }
            }
            Change::Neigh { ifindex, addr, mac } => {
                let Some(&r) = self.twins.get(&ifindex) else {
                    return self.ignore("not a twin");
                };
                if mac.is_some() {
                    if let Some(m) = &mut self.mark {
                        m.neighbors.insert((r, addr));
                    }
                }
                let res = match (addr, mac) {
                    (IpAddr::V4(ip), Some(mac)) => ctl.set_kernel_neighbor(r, ip, mac).map(|_| ()),
                    (IpAddr::V4(ip), None) if ctl.is_kernel_neighbor(r, ip) => {
                        ctl.del_kernel_neighbor(r, ip)
                    }
                    (IpAddr::V6(ip), Some(mac)) => ctl.set_neighbor6(r, ip, mac).map(|_| ()),
                    (IpAddr::V6(ip), None) if ctl.neighbors6().contains_key(&(r, ip)) => {
                        ctl.del_neighbor6(r, ip)
                    }
                    _ => Ok(()),
                };
                if let Err(e) = res {
                    self.refused(format!("neighbour {addr}: {e}"));
                }
            }
            Change::Route {
                table,
                prefix,
                route,
            } => self.route(ctl, table, prefix, route),
            Change::Label { label, route } => match route {
                Some(nhs) => self.set_label(ctl, label, &nhs),
                None => self.del_label(ctl, label),
            },
            Change::Nexthop { id, nh } => {
                if let Some(m) = &mut self.mark {
                    m.nexthops.insert(id);
                }
                match nh {
                    Some(o) => {
                        self.nexthops.insert(id, o);
                    }
                    None => {
                        self.nexthops.remove(&id);
                    }
                }
                // Routes over it (directly or through a group) follow.
                let users: Vec<_> = self
                    .nh_users
                    .iter()
                    .filter(|(_, n)| {
                        **n == id
                            || matches!(self.nexthops.get(n),
                                Some(NexthopObject::Group(g)) if g.iter().any(|m| m.0 == id))
                    })
                    .map(|(k, n)| (*k, *n))
                    .collect();
                for ((t, p), n) in users {
                    let kind = self.resolve(&Target::NexthopId(n));
                    self.install(ctl, t, p, kind);
                }
            }
        }
    }

    fn link(&mut self, ctl: &mut RouterControl, l: &Link) {
        let Some(&r) = self.twins.get(&l.ifindex) else {
            return self.ignore("not a twin");
        };
        let Ok(iface) = ctl.iface(r).cloned() else {
            return;
        };
        if iface.up != l.up {
            if let Err(e) = ctl.set_up(r, l.up) {
                self.refused(format!("{}: {e}", iface.name));
            }
            // The kernel withdraws the routes of a link going down without a
            // message.
            if !l.up {
                self.purge_interface(ctl, r);
            }
        }
        if let Ok(mtu) = u16::try_from(l.mtu) {
            if mtu != iface.mtu && mtu >= 68 {
                if let Err(e) = ctl.set_mtu(r, mtu) {
                    self.refused(format!("{} mtu {mtu}: {e}", iface.name));
                }
            }
        }
    }

    /// Removes the legs of kernel routes over interface `r` (the route when none
    /// is left).
    fn purge_interface(&mut self, ctl: &mut RouterControl, r: u32) {
        let hit: Vec<_> = ctl
            .routes_of(RouteSource::Kernel)
            .filter_map(|(t, p, k)| match k {
                RouteKind::Paths(ps) if ps.iter().any(|x| x.ifindex == Some(r)) => {
                    let rest: Vec<Path> = ps
                        .iter()
                        .filter(|x| x.ifindex != Some(r))
                        .cloned()
                        .collect();
                    Some((t, p, rest))
                }
                RouteKind::Connected { ifindex } if *ifindex == r => Some((t, p, Vec::new())),
                _ => None,
            })
            .collect();
        for (t, p, rest) in hit {
            if rest.is_empty() {
                let _ = ctl.route_del_from(RouteSource::Kernel, t, p);
            } else {
                let _ = ctl.route_add_from(RouteSource::Kernel, t, p, RouteKind::Paths(rest));
            }
        }
    }

    /// The FIB table of Linux table `t`.
    fn fib_table(&self, ctl: &RouterControl, t: u32) -> Option<TableId> {
        let id = match self.tables.get(&t) {
            Some(&id) => id,
            None if t == 254 => 0,
            None => t,
        };
        ctl.fib().tables().any(|x| x == id).then_some(id)
    }

    fn route(
        &mut self,
        ctl: &mut RouterControl,
        table: u32,
        prefix: Ipv4Prefix,
        route: Option<Target>,
    ) {
        let Some(t) = self.fib_table(ctl, table) else {
            return self.ignore("table not mapped");
        };
        match route {
            Some(target) => {
                if let Some(m) = &mut self.mark {
                    m.routes.insert((t, prefix));
                }
                match target {
                    Target::NexthopId(id) => {
                        self.nh_users.insert((t, prefix), id);
                    }
                    _ => {
                        self.nh_users.remove(&(t, prefix));
                    }
                }
                let kind = self.resolve(&target);
                self.install(ctl, t, prefix, kind);
            }
            None => {
                self.nh_users.remove(&(t, prefix));
                if ctl.route_of(RouteSource::Kernel, t, prefix).is_some() {
                    let _ = ctl.route_del_from(RouteSource::Kernel, t, prefix);
                }
            }
        }
    }

    /// Installs (or, when nothing of it can forward here, withdraws) the kernel's
    /// route.
    fn install(
        &mut self,
        ctl: &mut RouterControl,
        t: TableId,
        prefix: Ipv4Prefix,
        kind: Option<RouteKind>,
    ) {
        match kind {
            Some(kind) => {
                if let Err(e) = ctl.route_add_from(RouteSource::Kernel, t, prefix, kind) {
                    self.refused(format!("route {prefix} table {t}: {e}"));
                }
            }
            None => {
                self.ignore("route not over a twin");
                if ctl.route_of(RouteSource::Kernel, t, prefix).is_some() {
                    let _ = ctl.route_del_from(RouteSource::Kernel, t, prefix);
                }
            }
        }
    }

    /// The FIB's form of a kernel route; `None` when no next hop is on a twin.
    fn resolve(&self, target: &Target) -> Option<RouteKind> {
        match target {
            Target::Blackhole => Some(RouteKind::Blackhole),
            Target::Unreachable => Some(RouteKind::Unreachable),
            Target::Prohibit => Some(RouteKind::Prohibit),
            Target::Paths(nhs) => self.paths(nhs.iter().map(|n| (n, 1))),
            Target::NexthopId(id) => match self.nexthops.get(id)? {
                NexthopObject::Blackhole => Some(RouteKind::Blackhole),
                NexthopObject::One(n) => self.paths([(n, 1)].into_iter()),
                NexthopObject::Group(g) => {
                    self.paths(g.iter().filter_map(|&(m, w)| match self.nexthops.get(&m)? {
                        NexthopObject::One(n) => Some((n, u32::from(w))),
                        _ => None,
                    }))
                }
            },
        }
    }

    fn paths<'n>(&self, nhs: impl Iterator<Item = (&'n NextHop, u32)>) -> Option<RouteKind> {
        let mut out = Vec::new();
        for (n, w) in nhs {
            let Some(&r) = n.ifindex.and_then(|k| self.twins.get(&k)) else {
                continue;
            };
            let via = match n.gateway {
                Some(IpAddr::V4(g)) => Via::Gateway(g),
                Some(IpAddr::V6(g)) => Via::Gateway6(g),
                None => Via::Attached,
            };
            out.push(Path {
                via,
                ifindex: Some(r),
                weight: (u32::from(n.weight) * w).clamp(1, 65535),
                labels: n.labels.clone(),
            });
        }
        (!out.is_empty()).then_some(RouteKind::Paths(out))
    }

    fn set_label(&mut self, ctl: &mut RouterControl, label: u32, nhs: &[NextHop]) {
        if let Some(m) = &mut self.mark {
            m.labels.insert(label);
        }
        let mut paths = Vec::new();
        let mut lookup = false;
        for n in nhs {
            match (
                n.gateway,
                n.ifindex.and_then(|k| self.twins.get(&k).copied()),
            ) {
                (Some(IpAddr::V4(g)), Some(r)) => match ctl.adjacency(r, g) {
                    Ok(adj) => {
                        let out = if n.labels.is_empty() {
                            vec![wire::Label::IMPLICIT_NULL.value()]
                        } else {
                            n.labels.clone()
                        };
                        paths.push(mpls::NextHop::new(adj, &out));
                    }
                    Err(e) => return self.refused(format!("label {label}: {e}")),
                },
                // Popped and delivered to the host (`dev lo`): IPv4 lookup.
                (None, None) if n.labels.is_empty() => lookup = true,
                _ => {
                    return self.refused(format!(
                        "label {label}: next hop {:?} is not an IPv4 neighbour on a twin",
                        n.gateway
                    ));
                }
            }
        }
        let ttl_mode = mpls::TtlMode::Uniform;
        let (bos, non_bos) = if lookup {
            (
                mpls::LabelAction::Ip4Lookup { table: 0, ttl_mode },
                mpls::LabelAction::Pop { ttl_mode },
            )
        } else if paths.is_empty() {
            return self.refused(format!("label {label}: no next hop"));
        } else {
            let a = mpls::LabelAction::Forward { paths, ttl_mode };
            (a.clone(), a)
        };
        for (eos, a) in [(true, bos), (false, non_bos)] {
            if let Err(e) = ctl.label_add(label, eos, a) {
                return self.refused(format!("label {label}: {e}"));
            }
        }
        self.labels.insert(label);
    }

    fn del_label(&mut self, ctl: &mut RouterControl, label: u32) {
        if self.labels.remove(&label) {
            let _ = ctl.label_del(label, true);
            let _ = ctl.label_del(label, false);
        }
    }

    /// `show linux`'s netlink part.
    pub fn show(&self) -> Value {
        let s = &self.stats;
        json!({
            "rcvbuf": self.events.rcvbuf(),
            "messages": s.messages,
            "batches": s.batches,
            "applied": s.applied,
            "ignored": s.ignored,
            "malformed": s.malformed,
            "refused": s.refused,
            "last_error": s.last_error,
            "resyncs": s.resyncs,
            "last_resync": s.last_resync.as_ref().map(|(r, d, n)| json!({
                "reason": r,
                "ms": d.as_secs_f64() * 1e3,
                "swept": n,
            })),
            "nexthop_objects": self.nexthops.len(),
            "labels": self.labels.len(),
        })
    }
}
