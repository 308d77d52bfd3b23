//! The netlink learner: follows the control-plane namespace's links, addresses,
//! neighbours, routes and nexthop objects and applies them to the router, a batch
//! of messages at a time (one FIB publication per batch). Lost events (ENOBUFS)
//! or anything out of step trigger a resync: a full dump applied with
//! mark-and-sweep, which leaves exactly the kernel's state and never stops the
//! workers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::net::IpAddr;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fib::{IpPrefix, Path, RouteKind, TableId, Via};
use serde_json::{Value, json};

use dataplane::router::{RouteSource, RouterControl};

use super::change::{Change, DecodeError, Link, NextHop, NexthopObject, Target};
use super::decode::{self, Msg};
use super::nl::NlSocket;

/// `lo`'s ifindex in every network namespace.
const LOOPBACK_IFINDEX: u32 = 1;

/// Datagrams read per poll before the batch is applied.
const POLL_DATAGRAMS: usize = 1024;

/// After lost events, how long the event socket must be free of overflows
/// before the resync (one resync per burst, not one per overflow).
pub const RESYNC_QUIET: Duration = Duration::from_millis(20);

/// Counters and the last resync, for `show linux`.
#[derive(Debug, Default, Clone)]
pub struct LearnerStats {
    /// Netlink messages decoded (events and dumps).
    pub messages: u64,
    /// Batches applied (one publication each).
    pub batches: u64,
    /// Changes taken (those then ignored, e.g. for a link that is not a twin,
    /// included).
    pub applied: u64,
    /// Messages of no interest, by reason.
    pub ignored: BTreeMap<&'static str, u64>,
    /// Malformed messages.
    pub malformed: u64,
    /// Changes the router refused, and the last refusal.
    pub refused: u64,
    /// Changes refused for what they are, by reason (e.g. a link over FPM).
    pub refused_by: BTreeMap<&'static str, u64>,
    /// The last refusal or malformed message.
    pub last_error: Option<String>,
    /// Receive errors on the event socket (ENOBUFS: events lost).
    pub overflows: u64,
    /// Resyncs done.
    pub resyncs: u64,
    /// The last resync: reason, how long it took, entries swept.
    pub last_resync: Option<(String, Duration, u64)>,
}

/// The netlink learner: the sockets and what they taught.
#[derive(Debug)]
pub struct Learner {
    events: NlSocket,
    dump: NlSocket,
    view: KernelView,
    /// A resync is due: the reason, and when events were last lost.
    pending: Option<(String, Instant)>,
}

/// What the router learned from the kernel, and how more of it is applied: the
/// socket-free half of the learner (the benchmarks and the FPM server drive it
/// with messages of their own).
#[derive(Debug)]
pub struct KernelView {
    /// Whose routes these are in the RIB.
    source: RouteSource,
    /// Refused input is logged at most this often (it comes in floods).
    log_limit: crate::log::RateLimit,
    /// Routes are taken (off: another source, FPM, has them).
    import_routes: bool,
    /// Twin kernel ifindex -> router ifindex.
    twins: fib::FastMap<u32, u32>,
    /// Linux table -> FIB table, beyond the default rule.
    tables: BTreeMap<u32, u32>,
    /// Nexthop objects by id.
    nexthops: BTreeMap<u32, NexthopObject>,
    /// Routes that use a nexthop object: (table, prefix, metric) -> id.
    nh_users: BTreeMap<(TableId, IpPrefix, u32), u32>,
    /// Label entries learned (label), for the sweep.
    labels: BTreeSet<u32>,
    /// Set while a resync marks what the dump holds.
    mark: Option<Mark>,
    /// The router's addresses on the namespace's `lo` (/32s and /128s).
    loopbacks: BTreeSet<IpAddr>,
    /// An event after which the kernel changed routes without telling (a link
    /// down or up, an address gone or added): the routes are read again.
    refresh: Option<String>,
    /// The namespace's VRF devices (shared with the FPM server's view).
    vrf_devs: VrfDevices,
    /// Twins Linux enslaved to a VRF device, with the table they had before.
    enslaved: BTreeMap<u32, TableId>,
    /// Each twin's carrier as last heard (kernel ifindex -> IFF_LOWER_UP).
    carrier: fib::FastMap<u32, bool>,
    /// Twins set up while without carrier: the kernel keeps the IPv6 legs over
    /// them dead until the carrier comes, and revives them then without a
    /// message.
    dead_legs6: BTreeSet<u32>,
    stats: LearnerStats,
}

/// The namespace's VRF devices, kernel ifindex -> Linux table: the netlink
/// learner keeps them (RTM_NEWLINK of kind `vrf`); zebra's per-VRF labels over
/// FPM name one as their next hop (pop, then look up in its table).
pub type VrfDevices = Arc<Mutex<HashMap<u32, u32>>>;

/// What a dump refreshed (routes: the RIB marks them).
#[derive(Debug, Default)]
struct Mark {
    loopbacks: BTreeSet<IpAddr>,
    neighbors: BTreeSet<(u32, IpAddr)>,
    addrs: BTreeSet<(u32, IpAddr, u8)>,
    labels: BTreeSet<u32>,
    nexthops: BTreeSet<u32>,
}

impl Learner {
    /// Has the kernel resolve neighbour `addr` on its interface `ifindex`.
    pub fn resolve_neighbor(&mut self, ifindex: u32, addr: IpAddr) -> io::Result<()> {
        self.dump.resolve_neighbor(ifindex, addr)
    }

    /// The VRF devices it learns, for the FPM server's view.
    pub fn vrf_devices(&self) -> VrfDevices {
        self.view.vrf_devs.clone()
    }

    /// Sets the carrier of the kernel's interface `ifindex` (a TAP twin).
    pub fn set_carrier(&mut self, ifindex: u32, on: bool) -> io::Result<()> {
        self.dump.set_carrier(ifindex, on)
    }

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
            view: KernelView::new(twins, tables),
            pending: None,
        }
    }

    /// The counters.
    pub fn stats(&self) -> &LearnerStats {
        &self.view.stats
    }

    /// Reads what is waiting on the event socket and applies it as one batch.
    /// When events were lost it drops what follows until the burst is over
    /// (no overflow for [`RESYNC_QUIET`]) and then resyncs once. Returns whether
    /// datagrams are left (the budget of one call ran out).
    pub fn poll(&mut self, ctl: &mut RouterControl) -> bool {
        let mut msgs = Vec::new();
        let mut left = true;
        for _ in 0..POLL_DATAGRAMS {
            match self.events.recv() {
                Ok(Some(buf)) => {
                    if self.pending.is_none() {
                        msgs.extend(decode::messages(buf));
                    }
                }
                Ok(None) => {
                    left = false;
                    break;
                }
                Err(e) => {
                    let why = if e.raw_os_error() == Some(libc::ENOBUFS) {
                        "ENOBUFS: netlink events were lost".to_string()
                    } else {
                        format!("netlink receive: {e}")
                    };
                    self.view.stats.overflows += 1;
                    tracing::warn!("netlink: {why}; a resync follows");
                    self.pending = Some((why, Instant::now()));
                    msgs.clear();
                }
            }
        }
        if let Some((reason, at)) = &self.pending {
            if at.elapsed() >= RESYNC_QUIET {
                let reason = reason.clone();
                self.pending = None;
                self.resync(ctl, &reason);
            }
            return left;
        }
        if !msgs.is_empty() {
            let (n, before) = (msgs.len(), ctl.route_count_of(self.view.source));
            self.view.apply_batch(ctl, msgs);
            tracing::debug!(
                "netlink: {n} messages applied; kernel routes {before} -> {}",
                ctl.route_count_of(self.view.source)
            );
        }
        // What the kernel did silently is read back once the events settle.
        if let Some(why) = self.view.refresh.take() {
            self.pending = Some((why, Instant::now()));
        }
        left
    }

    /// The event socket's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.events.fd()
    }

    /// Dumps the namespace and makes the router hold exactly its state: what the
    /// dump has is applied, kernel-learned entries it does not have are removed,
    /// all in one publication.
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
        let tables = self.view.kernel_tables(ctl);
        let msgs = match self.dump.dump_all(&tables) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("netlink resync ({reason}): the dump failed: {e}");
                self.view.stats.last_error = Some(format!("netlink dump: {e}"));
                self.pending = Some((format!("netlink dump failed: {e}"), Instant::now()));
                return;
            }
        };
        let v = &mut self.view;
        let swept = ctl.batch(|ctl| {
            v.begin_refresh(ctl);
            v.apply_batch(ctl, msgs);
            v.sweep(ctl)
        });
        super::heap::trim();
        // The dump holds what those events did.
        v.refresh = None;
        v.stats.resyncs += 1;
        let took = t0.elapsed();
        tracing::info!(
            "netlink resync ({reason}): {:.1} ms, {swept} stale entries swept",
            took.as_secs_f64() * 1e3
        );
        v.stats.last_resync = Some((reason.to_string(), took, swept));
    }

    /// See [`KernelView::set_route_import`].
    pub fn set_route_import(&mut self, ctl: &mut RouterControl, on: bool) -> bool {
        self.view.set_route_import(ctl, on)
    }

    /// The event socket's receive buffer in bytes.
    pub fn rcvbuf(&self) -> usize {
        self.events.rcvbuf()
    }

    /// The counters for a Prometheus scrape, labelled `source`.
    pub fn metrics(&self, source: &str, m: &mut crate::metrics::Scrape) {
        self.view.metrics(source, m);
        m.counter(
            "netlink_overflows",
            "Receive errors on the netlink event socket (ENOBUFS: events lost, a resync follows).",
            &[],
            self.view.stats.overflows,
        );
    }

    /// `show linux`'s netlink part.
    pub fn show(&self) -> Value {
        let mut v = self.view.show();
        v["rcvbuf"] = json!(self.events.rcvbuf());
        v
    }
}

impl KernelView {
    /// Nothing learned yet; twin ifindexes `twins` (kernel -> router), Linux
    /// tables mapped by `tables` (beyond main -> 0 and N -> N).
    pub fn new(twins: HashMap<u32, u32>, tables: BTreeMap<u32, u32>) -> KernelView {
        KernelView::with_source(RouteSource::Kernel, twins, tables)
    }

    /// Shares `devs`: the VRF devices another view learns (or this one
    /// keeps for others).
    pub fn share_vrf_devices(&mut self, devs: VrfDevices) {
        self.vrf_devs = devs;
    }

    /// The Linux table of VRF device `ifindex`.
    fn vrf_dev(&self, ifindex: u32) -> Option<u32> {
        self.vrf_devs
            .lock()
            .map_or(None, |d| d.get(&ifindex).copied())
    }

    /// [`KernelView::new`] for another source of netlink messages (FPM).
    pub fn with_source(
        source: RouteSource,
        twins: HashMap<u32, u32>,
        tables: BTreeMap<u32, u32>,
    ) -> KernelView {
        KernelView {
            source,
            import_routes: true,
            twins: twins.into_iter().collect(),
            tables,
            nexthops: BTreeMap::new(),
            nh_users: BTreeMap::new(),
            labels: BTreeSet::new(),
            mark: None,
            loopbacks: BTreeSet::new(),
            refresh: None,
            vrf_devs: VrfDevices::default(),
            enslaved: BTreeMap::new(),
            carrier: fib::FastMap::default(),
            dead_legs6: BTreeSet::new(),
            stats: LearnerStats::default(),
            log_limit: crate::log::RateLimit::new(5, Duration::from_secs(10)),
        }
    }

    /// The counters.
    pub fn stats(&self) -> &LearnerStats {
        &self.stats
    }

    /// Stops taking routes and withdraws this source's (`false`), or takes them
    /// again from the next refresh on (`true`). Returns whether it changed.
    pub fn set_route_import(&mut self, ctl: &mut RouterControl, on: bool) -> bool {
        if self.import_routes == on {
            return false;
        }
        self.import_routes = on;
        if !on {
            let src = self.source;
            let mine: Vec<_> = ctl
                .routes_of_metric(src)
                .map(|(t, p, m, _)| (t, p, m))
                .collect();
            ctl.batch(|ctl| {
                for (t, p, m) in mine {
                    let _ = ctl.route_del_metric(src, t, p, m);
                }
            });
            self.nh_users.clear();
        }
        true
    }

    /// Starts a full refresh: what is applied until [`KernelView::sweep`] is
    /// marked as present.
    pub fn begin_refresh(&mut self, ctl: &mut RouterControl) {
        self.mark = Some(Mark::default());
        ctl.route_mark(self.source);
        // Which routes use which nexthop object is learned again from the dump:
        // a route the kernel flushed silently (its nexthop's link went down) and
        // that was never installed here (nothing of it on a twin) would otherwise
        // stay listed, and come back when an object of that id does.
        self.nh_users.clear();
    }

    /// Ends a refresh: removes the kernel-learned entries it did not mark.
    /// Returns how many went.
    pub fn sweep(&mut self, ctl: &mut RouterControl) -> u64 {
        let mark = self.mark.take().unwrap_or_default();
        self.sweep_unmarked(ctl, &mark)
    }

    fn sweep_unmarked(&mut self, ctl: &mut RouterControl, mark: &Mark) -> u64 {
        let mut swept = 0;
        for key in ctl.route_sweep(self.source) {
            self.nh_users.remove(&key);
            swept += 1;
        }
        // Neighbours and addresses come from the kernel only (FPM carries routes).
        if self.source == RouteSource::Kernel {
            swept += self.sweep_links(ctl, mark);
        }
        for label in self.labels.clone() {
            if !mark.labels.contains(&label) {
                self.del_label(ctl, label);
                swept += 1;
            }
        }
        self.nexthops.retain(|id, _| mark.nexthops.contains(id));
        let gone: Vec<IpAddr> = self
            .loopbacks
            .iter()
            .copied()
            .filter(|a| !mark.loopbacks.contains(a))
            .collect();
        for a in gone {
            self.loopback(ctl, false, a);
        }
        swept
    }

    /// Sweeps the kernel neighbours and the twins' addresses a dump did not have.
    fn sweep_links(&mut self, ctl: &mut RouterControl, mark: &Mark) -> u64 {
        let mut swept = 0;
        let twins: BTreeSet<u32> = self.twins.values().copied().collect();
        let stale4 = ctl
            .neighbors()
            .keys()
            .filter(|&&(ix, ip)| ctl.is_kernel_neighbor(ix, ip))
            .map(|&(ix, ip)| (ix, IpAddr::V4(ip)));
        let stale6 = ctl
            .neighbors6()
            .keys()
            .filter(|k| twins.contains(&k.0))
            .map(|&(ix, ip)| (ix, IpAddr::V6(ip)));
        let stale: Vec<_> = stale4
            .chain(stale6)
            .filter(|k| !mark.neighbors.contains(k))
            .collect();
        for (ix, ip) in stale {
            let _ = match ip {
                IpAddr::V4(ip) => ctl.del_kernel_neighbor(ix, ip),
                IpAddr::V6(ip) => ctl.del_neighbor6(ix, ip),
            };
            swept += 1;
        }
        let stale: Vec<_> = ctl
            .addresses_of(self.source)
            .into_iter()
            .filter(|k| twins.contains(&k.0) && !mark.addrs.contains(k))
            .collect();
        for (ix, a, l) in stale {
            let _ = ctl.del_address_from(self.source, ix, a, l);
            swept += 1;
        }
        swept
    }

    /// Applies decoded messages as one publication.
    pub fn apply_batch(&mut self, ctl: &mut RouterControl, msgs: Vec<Result<Msg, DecodeError>>) {
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
        if let Some(left_out) = self.log_limit.allow(Instant::now()) {
            let more = if left_out > 0 {
                format!(" ({left_out} more refused since the last one logged)")
            } else {
                String::new()
            };
            tracing::warn!("{}: refused {what}{more}", self.source.name());
        }
        self.stats.last_error = Some(what);
    }

    /// Whether a delete of `key` waits for the refresh's sweep: FPM's deletes,
    /// while zebra walks after a connect, of routes its walk has not announced
    /// yet (a restarted zebra deletes its previous instance's; see
    /// [`super::fpm`]). The route is unmarked: the sweep removes it unless it is
    /// announced again first. A delete of what the walk announced is a
    /// withdrawal: it is taken at once.
    fn deferred(&mut self, ctl: &mut RouterControl, key: (TableId, IpPrefix, u32)) -> bool {
        if self.source != RouteSource::Fpm
            || self.mark.is_none()
            || ctl.route_refreshed(self.source, key.0, key.1, key.2)
        {
            return false;
        }
        ctl.route_unmark(self.source, key.0, key.1, key.2);
        true
    }

    /// Applies one change.
    pub fn apply(&mut self, ctl: &mut RouterControl, c: Change) {
        self.stats.applied += 1;
        // FPM brings forwarding state only: links, addresses and neighbours are
        // the kernel's.
        if self.source == RouteSource::Fpm {
            let what = match &c {
                Change::Route { .. } | Change::Label { .. } | Change::Nexthop { .. } => None,
                Change::Link(_) | Change::LinkGone { .. } => Some("link over FPM"),
                Change::Addr { .. } => Some("address over FPM"),
                Change::Neigh { .. } => Some("neighbour over FPM"),
            };
            if let Some(why) = what {
                self.stats.refused += 1;
                *self.stats.refused_by.entry(why).or_default() += 1;
                self.stats.last_error = Some(why.to_string());
                return;
            }
        }
        match c {
            Change::Link(l) if l.vrf_table.is_some() => {
                if let (Ok(mut d), Some(t)) = (self.vrf_devs.lock(), l.vrf_table) {
                    d.insert(l.ifindex, t);
                }
            }
            Change::Link(l) => self.link(ctl, &l),
            Change::LinkGone { ifindex } => {
                if let Ok(mut d) = self.vrf_devs.lock() {
                    d.remove(&ifindex);
                }
                self.carrier.remove(&ifindex);
                self.dead_legs6.remove(&ifindex);
                if let Some(&r) = self.twins.get(&ifindex) {
                    let _ = ctl.set_up(r, false);
                    self.purge_interface(ctl, r);
                    self.refused(format!("twin of interface {r} was deleted in Linux"));
                }
            }
            Change::Addr {
                add,
                ifindex: LOOPBACK_IFINDEX,
                addr,
                len,
            } if is_router_loopback(addr, len) => self.loopback(ctl, add, addr),
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
                let res = match (add, ctl.address_of(self.source, r, addr)) {
                    (true, Some(l)) if l == len => return,
                    (true, Some(l)) => {
                        return self
                            .refused(format!("address {addr}/{len}: {addr}/{l} is there already"));
                    }
                    (true, None) => ctl.add_address_from(self.source, r, addr, len),
                    (false, Some(l)) if l == len => ctl.del_address_from(self.source, r, addr, len),
                    (false, _) => return,
                };
                if let Err(e) = res {
                    self.refused(format!("address {addr}/{len}: {e}"));
                }
                // An interface's last address going flushes the routes over it
                // and kills its ECMP legs; one coming back revives them.
                let name = ctl.iface(r).map(|i| i.name.clone()).unwrap_or_default();
                let what = if add { "added on" } else { "deleted from" };
                self.refresh_due(format!("address {addr}/{len} {what} {name}"));
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
                metric,
                route,
            } => self.route(ctl, table, prefix, metric, route),
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
                        self.follow_nexthop(ctl, id);
                    }
                    None => self.nexthop_gone(ctl, id),
                }
            }
        }
    }

    /// Routes over nexthop `id`, directly or through a group, follow its change.
    fn follow_nexthop(&mut self, ctl: &mut RouterControl, id: u32) {
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
        for ((t, p, m), n) in users {
            let kind = self.resolve(&Target::NexthopId(n));
            self.install(ctl, (t, p, m), kind);
        }
    }

    /// A nexthop deleted, as the kernel does it: the routes over it go (the
    /// kernel flushes IPv4 ones without a message), it leaves the groups that
    /// hold it, and a group left empty goes too, with its routes. An object
    /// created later under the same id starts with no routes.
    fn nexthop_gone(&mut self, ctl: &mut RouterControl, id: u32) {
        let mut gone = vec![id];
        while let Some(id) = gone.pop() {
            self.nexthops.remove(&id);
            let users: Vec<_> = self
                .nh_users
                .iter()
                .filter(|(_, n)| **n == id)
                .map(|(k, _)| *k)
                .collect();
            for key @ (t, p, m) in users {
                self.nh_users.remove(&key);
                let _ = ctl.route_del_metric(self.source, t, p, m);
            }
            let mut shrunk = Vec::new();
            for (&g, o) in &mut self.nexthops {
                if let NexthopObject::Group(members) = o {
                    if members.iter().any(|m| m.0 == id) {
                        members.retain(|m| m.0 != id);
                        if members.is_empty() {
                            gone.push(g);
                        } else {
                            shrunk.push(g);
                        }
                    }
                }
            }
            for g in shrunk {
                self.follow_nexthop(ctl, g);
            }
        }
    }

    /// A /32 or /128 on the namespace's `lo`: the router's own address (delivered
    /// locally); the lowest IPv4 one is its router id unless the file set one:
    /// ICMP errors and ARP of unnumbered interfaces come from it.
    fn loopback(&mut self, ctl: &mut RouterControl, add: bool, addr: IpAddr) {
        if add {
            if let Some(m) = &mut self.mark {
                m.loopbacks.insert(addr);
            }
            if self.loopbacks.insert(addr) {
                if let Err(e) = ctl.set_local(0, addr, true) {
                    self.loopbacks.remove(&addr);
                    self.refused(format!("loopback {addr}: {e}"));
                }
            }
        } else if self.loopbacks.remove(&addr) {
            let _ = ctl.set_local(0, addr, false);
        }
        let lowest = self.loopbacks.iter().find_map(|a| match a {
            IpAddr::V4(a) => Some(*a),
            IpAddr::V6(_) => None,
        });
        ctl.set_router_id_from(self.source, lowest);
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
            // message (and keeps ECMP legs over it dead, reviving them when it
            // comes up): they go at once here, and the table is read again.
            if !l.up {
                self.purge_interface(ctl, r);
            }
            if l.up && !l.carrier {
                self.dead_legs6.insert(l.ifindex);
            } else {
                self.dead_legs6.remove(&l.ifindex);
            }
            let state = if l.up { "up" } else { "down" };
            self.refresh_due(format!("{} {state}", iface.name));
        }
        let had = self.carrier.insert(l.ifindex, l.carrier);
        if l.up && had == Some(!l.carrier) {
            self.carrier_changed(l.ifindex, &iface.name, l.carrier);
        }
        if let Ok(mtu) = u16::try_from(l.mtu) {
            if mtu != iface.mtu && mtu >= 68 {
                if let Err(e) = ctl.set_mtu(r, mtu) {
                    self.refused(format!("{} mtu {mtu}: {e}", iface.name));
                }
            }
        }
        // `ip link set TWIN master VRF` (or nomaster): the interface's table
        // follows, its addresses with it, as the kernel moves its connected routes.
        let vrf = l.master.and_then(|m| self.vrf_dev(m));
        let to = match (vrf, self.enslaved.get(&r)) {
            (Some(t), _) => match self.fib_table(ctl, t) {
                Some(id) => id,
                None => {
                    return self.refused(format!(
                        "{}: its VRF's table {t} is no FIB table (`tables` in [linux], or `table add`)",
                        iface.name
                    ));
                }
            },
            (None, Some(&before)) => before,
            (None, None) => return,
        };
        if to == iface.table {
            if vrf.is_none() {
                self.enslaved.remove(&r);
            }
            return;
        }
        let addrs: Vec<(IpAddr, u8)> = (iface.addrs.iter().map(|&(a, l)| (a.into(), l)))
            .chain(iface.addrs6.iter().map(|&(a, l)| (a.into(), l)))
            .collect();
        for &(a, len) in &addrs {
            let _ = ctl.del_address_from(self.source, r, a, len);
        }
        if let Err(e) = ctl.set_table(r, to) {
            self.refused(format!("{} into table {to}: {e}", iface.name));
        } else if vrf.is_some() {
            self.enslaved.entry(r).or_insert(iface.table);
        } else {
            self.enslaved.remove(&r);
        }
        for (a, len) in addrs {
            if let Err(e) = ctl.add_address_from(self.source, r, a, len) {
                self.refused(format!("address {a}/{len}: {e}"));
            }
        }
        self.refresh_due(format!("{} into table {to}", iface.name));
    }

    /// What the kernel changes without a message when twin `k` (kernel
    /// ifindex) of an up interface loses or regains its carrier: losing it
    /// flushes the nexthop objects over it, with the IPv4 routes that use them;
    /// regaining it revives the IPv6 legs an admin up without carrier left dead.
    /// Either is read again; any other carrier change moves no route.
    fn carrier_changed(&mut self, k: u32, name: &str, carrier: bool) {
        let why = if carrier {
            self.dead_legs6
                .remove(&k)
                .then_some("carrier up: IPv6 legs revived")
        } else {
            self.nexthops
                .values()
                .any(|o| matches!(o, NexthopObject::One(n) if n.ifindex == Some(k)))
                .then_some("carrier down: nexthop objects flushed")
        };
        if let Some(why) = why {
            self.refresh_due(format!("{name} {why}"));
        }
    }

    /// Asks for the routes to be read again from the kernel (the learner does
    /// it once the events settle; see [`Learner::poll`]).
    fn refresh_due(&mut self, why: String) {
        if self.source == RouteSource::Kernel && self.mark.is_none() {
            self.refresh.get_or_insert(why);
        }
    }

    /// Removes the legs of kernel routes over interface `r` (the route when none
    /// is left).
    fn purge_interface(&mut self, ctl: &mut RouterControl, r: u32) {
        let hit: Vec<_> = ctl
            .routes_of_metric(self.source)
            .filter_map(|(t, p, m, k)| match k {
                RouteKind::Paths(ps) if ps.iter().any(|x| x.ifindex == Some(r)) => {
                    let rest: Vec<Path> = ps
                        .iter()
                        .filter(|x| x.ifindex != Some(r))
                        .cloned()
                        .collect();
                    Some(((t, p, m), rest))
                }
                RouteKind::Connected { ifindex } if *ifindex == r => Some(((t, p, m), Vec::new())),
                _ => None,
            })
            .collect();
        for (key, rest) in hit {
            if rest.is_empty() {
                self.nh_users.remove(&key);
                let _ = ctl.route_del_metric(self.source, key.0, key.1, key.2);
            } else {
                let _ =
                    ctl.route_add_metric(self.source, key.0, key.1, key.2, RouteKind::Paths(rest));
            }
        }
    }

    /// The Linux tables whose routes are imported: main, the mapped ones, and
    /// those with the number of a FIB table.
    pub fn kernel_tables(&self, ctl: &RouterControl) -> Vec<u32> {
        let mut t: BTreeSet<u32> = self.tables.keys().copied().collect();
        t.insert(254);
        t.extend(ctl.fib().tables().filter(|&id| id != 0));
        t.into_iter()
            .filter(|&k| self.fib_table(ctl, k).is_some())
            .collect()
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
        prefix: IpPrefix,
        metric: u32,
        route: Option<Target>,
    ) {
        if !self.import_routes {
            return self.ignore("route import off");
        }
        let Some(t) = self.fib_table(ctl, table) else {
            return self.ignore("table not mapped");
        };
        // The kernel holds a route per prefix and metric, and forwards with the
        // lowest; zebra sends one route per prefix, replaced whatever its metric.
        let metric = if self.source == RouteSource::Fpm {
            0
        } else {
            metric
        };
        let key = (t, prefix, metric);
        match route {
            Some(target) => {
                match target {
                    Target::NexthopId(id) => {
                        self.nh_users.insert(key, id);
                    }
                    _ => {
                        self.nh_users.remove(&key);
                    }
                }
                let kind = self.resolve(&target);
                self.install(ctl, key, kind);
            }
            None if self.deferred(ctl, key) => {
                self.ignore("delete during a walk left to its sweep")
            }
            None => {
                self.nh_users.remove(&key);
                let _ = ctl.route_del_metric(self.source, t, prefix, metric);
            }
        }
    }

    /// Installs (or, when nothing of it can forward here, withdraws) the kernel's
    /// route.
    fn install(
        &mut self,
        ctl: &mut RouterControl,
        (t, prefix, metric): (TableId, IpPrefix, u32),
        kind: Option<RouteKind>,
    ) {
        match kind {
            Some(kind) => {
                if let Err(e) = ctl.route_add_metric(self.source, t, prefix, metric, kind) {
                    self.refused(format!("route {prefix} table {t}: {e}"));
                }
            }
            None => {
                self.ignore("route not over a twin");
                if ctl
                    .route_of_metric(self.source, t, prefix, metric)
                    .is_some()
                {
                    let _ = ctl.route_del_metric(self.source, t, prefix, metric);
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
                // A group of one blackhole forwards as the blackhole (a
                // blackhole cannot share a group).
                NexthopObject::Group(g)
                    if g.len() == 1
                        && matches!(self.nexthops.get(&g[0].0), Some(NexthopObject::Blackhole)) =>
                {
                    Some(RouteKind::Blackhole)
                }
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
            // (an IPv4-mapped next hop, 6PE's (RFC 4798 §2), is the IPv4
            // neighbour it maps)
            let via = match n.gateway {
                Some(IpAddr::V4(g)) => Via::Gateway(g),
                Some(IpAddr::V6(g)) => g.to_ipv4_mapped().map_or(Via::Gateway6(g), Via::Gateway),
                None => Via::Attached,
            };
            out.push(Path {
                via,
                ifindex: Some(r),
                weight: (u32::from(n.weight) * w).clamp(1, 65535),
                labels: n.labels.clone(),
                via_table: None,
            });
        }
        (!out.is_empty()).then_some(RouteKind::Paths(out))
    }

    fn set_label(&mut self, ctl: &mut RouterControl, label: u32, nhs: &[NextHop]) {
        if let Some(m) = &mut self.mark {
            m.labels.insert(label);
        }
        let mut paths = Vec::new();
        let mut lookup = None;
        for n in nhs {
            // zebra's per-VRF label: implicit null out of the VRF's device.
            if let Some(t) = n.ifindex.and_then(|k| self.vrf_dev(k)) {
                match self.fib_table(ctl, t) {
                    Some(id) if n.gateway.is_none() && n.labels.is_empty() => {
                        lookup = Some(id);
                        continue;
                    }
                    Some(_) => {
                        return self.refused(format!(
                            "label {label}: a next hop on a VRF device is a pop and lookup only"
                        ));
                    }
                    None => {
                        return self.refused(format!(
                            "label {label}: the VRF's table {t} is no FIB table"
                        ));
                    }
                }
            }
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
                // Popped and delivered to the host (`dev lo`): a lookup.
                (None, None) if n.labels.is_empty() => lookup = Some(0),
                _ => {
                    return self.refused(format!(
                        "label {label}: next hop {:?} is not an IPv4 neighbour on a twin",
                        n.gateway
                    ));
                }
            }
        }
        let ttl_mode = mpls::TtlMode::Uniform;
        let (bos, non_bos) = if let Some(table) = lookup {
            (
                // (a route without `via` has no payload type in Linux: its
                // `mpls_egress` reads the version nibble, and so does this
                // lookup, so a per-VRF label serves both families)
                mpls::LabelAction::IpLookup { table, ttl_mode },
                mpls::LabelAction::Pop { ttl_mode },
            )
        } else if paths.is_empty() {
            return self.refused(format!("label {label}: no next hop"));
        } else {
            let a = mpls::LabelAction::Forward { paths, ttl_mode };
            (a.clone(), a)
        };
        for (eos, a) in [(true, bos), (false, non_bos)] {
            if let Err(e) = ctl.label_add_from(self.source, label, eos, a) {
                return self.refused(format!("label {label}: {e}"));
            }
        }
        self.labels.insert(label);
    }

    fn del_label(&mut self, ctl: &mut RouterControl, label: u32) {
        if self.source == RouteSource::Fpm && self.labels.contains(&label) {
            if let Some(m) = &mut self.mark {
                m.labels.remove(&label);
                return self.ignore("delete during a walk left to its sweep");
            }
        }
        if self.labels.remove(&label) {
            for eos in [true, false] {
                if ctl.label_of(self.source, label, eos).is_some() {
                    let _ = ctl.label_del_from(self.source, label, eos);
                }
            }
        }
    }

    /// The counters for a Prometheus scrape, labelled `source` (netlink, fpm).
    pub fn metrics(&self, source: &str, m: &mut crate::metrics::Scrape) {
        let s = &self.stats;
        let l = [("source", source)];
        m.counter(
            "learner_messages",
            "Netlink messages decoded (events and dumps).",
            &l,
            s.messages,
        );
        m.counter(
            "learner_batches",
            "Batches of changes applied (one publication each).",
            &l,
            s.batches,
        );
        m.counter("learner_applied", "Changes taken.", &l, s.applied);
        m.counter("learner_malformed", "Malformed messages.", &l, s.malformed);
        m.counter(
            "learner_refused",
            "Changes the router refused.",
            &l,
            s.refused,
        );
        for (why, n) in &s.ignored {
            m.counter(
                "learner_ignored",
                "Messages of no interest, by reason.",
                &[("source", source), ("reason", why)],
                *n,
            );
        }
        for (why, n) in &s.refused_by {
            m.counter(
                "learner_refused_by",
                "Changes refused for what they are, by reason.",
                &[("source", source), ("reason", why)],
                *n,
            );
        }
        m.counter(
            "learner_resyncs",
            "Full resyncs (dump and sweep).",
            &l,
            s.resyncs,
        );
        if let Some((_, d, swept)) = &s.last_resync {
            m.gauge(
                "learner_last_resync_seconds",
                "Duration of the last resync.",
                &l,
                d.as_secs_f64(),
            );
            m.gauge(
                "learner_last_resync_swept",
                "Entries the last resync swept.",
                &l,
                *swept as f64,
            );
        }
        m.gauge(
            "learner_nexthop_objects",
            "Nexthop objects known.",
            &l,
            self.nexthops.len() as f64,
        );
    }

    /// `show linux`'s netlink part.
    pub fn show(&self) -> Value {
        let s = &self.stats;
        json!({
            "messages": s.messages,
            "batches": s.batches,
            "applied": s.applied,
            "ignored": s.ignored,
            "malformed": s.malformed,
            "refused": s.refused,
            "refused_by": s.refused_by,
            "last_error": s.last_error,
            "overflows": s.overflows,
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

/// An address on `lo` that makes the router's own: a /32 or a /128, not the
/// loopback block itself (127/8, ::1) nor a link-local one.
fn is_router_loopback(addr: IpAddr, len: u8) -> bool {
    match addr {
        IpAddr::V4(a) => len == 32 && !a.is_loopback(),
        IpAddr::V6(a) => len == 128 && !a.is_loopback() && !a.is_unicast_link_local(),
    }
}

#[cfg(test)]
mod tests;
