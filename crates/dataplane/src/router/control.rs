//! The control side of the router: the single writer of the FIB, the label table and
//! the interface table, and the reader of the workers' counters and events. It runs
//! on the control thread; workers never wait for it and it never stops them.
//!
//! Every method validates completely before it changes anything, so a failed call
//! leaves the router as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use crossbeam_queue::ArrayQueue;
use thiserror::Error;

use fib::{FibError, Ipv4Prefix, RouteKind, TableId};

use super::core::{Core, CoreConfig, Event, Tables};
use super::iface::{IfTable, Interface, PwEntry};
use super::neigh::{ArpProbe, Learned, NeighborAging, Step, arp_probe};
use super::sessions::Sessions;
use super::stats::{MAX_IFACES, MAX_PWS, TraceRecord, WorkerStats};
use super::worker::{InjectQueue, PuntQueue, WorkerWake};

/// Depth of each worker's event queue (neighbours learned from ARP).
const EVENT_QUEUE: usize = 1024;

/// Errors of control operations. Each says what is wrong.
#[derive(Debug, Error)]
pub enum RouterError {
    /// The FIB refused the change.
    #[error(transparent)]
    Fib(#[from] FibError),
    /// The label table refused the change.
    #[error(transparent)]
    Mpls(#[from] mpls::ConfigError),
    /// No interface with that ifIndex.
    #[error("unknown interface {0}")]
    UnknownInterface(u32),
    /// A label entry names an adjacency the FIB does not have.
    #[error("unknown adjacency {0} (take ids from RouterControl::adjacency)")]
    UnknownAdjacency(u32),
    /// No interface with that name.
    #[error("unknown interface {0:?}")]
    UnknownInterfaceName(String),
    /// An interface with that ifIndex or name exists.
    #[error("interface {0} exists")]
    InterfaceExists(String),
    /// Interface parameters out of range.
    #[error("interface {name}: {msg}")]
    InvalidInterface {
        /// Interface.
        name: String,
        /// What is wrong.
        msg: String,
    },
    /// The address is configured already.
    #[error("address {0}/{1} exists on interface {2}")]
    AddressExists(Ipv4Addr, u8, String),
    /// The address is not configured.
    #[error("address {0}/{1} is not on interface {2}")]
    NoSuchAddress(Ipv4Addr, u8, String),
    /// An address that cannot be an interface address.
    #[error("{0}/{1} cannot be an interface address")]
    InvalidAddress(Ipv4Addr, u8),
    /// No label entry.
    #[error("no label {0} {1}")]
    NoSuchLabel(u32, &'static str),
    /// A route preference that is not an order of every source, or one set too
    /// late.
    #[error("route preference: {0}")]
    Preference(String),
    /// A table cannot go, or an interface cannot change tables, yet.
    #[error("{0}")]
    TableInUse(String),
    /// A VRF name that is taken, unknown or not a name.
    #[error("{0}")]
    Vrf(String),
    /// A pseudowire that cannot be (see the message).
    #[error("pseudowire {0}")]
    Pw(String),
    /// A more preferred source holds the label entry.
    #[error("label {label} {eos} belongs to {owner}")]
    LabelOwned {
        /// In-label.
        label: u32,
        /// `eos` or `non-eos`.
        eos: &'static str,
        /// Its source's name.
        owner: &'static str,
    },
}

/// Who asked for a route. Several sources may hold a route for the same prefix;
/// the FIB forwards with the preferred one (by default the lowest in this order;
/// [`RouterControl::set_route_preference`] changes it), and withdrawing it
/// reveals the next. The routes of interface addresses (local and
/// connected) and of resolved neighbours (host /32s) belong to their address or
/// neighbour, not to a source, and are never replaced by a source's route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteSource {
    /// `dpctl route add|replace`.
    Dpctl,
    /// The configuration file (`[[route]]`).
    Config,
    /// FRR's FPM.
    Fpm,
    /// The Linux kernel's table, learned over netlink.
    Kernel,
}

impl RouteSource {
    /// Every source, most preferred first.
    pub const ALL: [RouteSource; 4] = [
        RouteSource::Dpctl,
        RouteSource::Config,
        RouteSource::Fpm,
        RouteSource::Kernel,
    ];

    /// Whether routing daemons bring this source's routes (kernel, FPM), as
    /// opposed to the operator (dpctl, the file). Learned routes are withdrawn
    /// where they come from, not with `route del`.
    pub const fn is_learned(self) -> bool {
        matches!(self, RouteSource::Kernel | RouteSource::Fpm)
    }

    /// The source called `name` (as [`RouteSource::name`] prints it).
    pub fn from_name(name: &str) -> Option<RouteSource> {
        RouteSource::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The name `route show` prints.
    pub const fn name(self) -> &'static str {
        match self {
            RouteSource::Dpctl => "dpctl",
            RouteSource::Config => "config",
            RouteSource::Fpm => "fpm",
            RouteSource::Kernel => "kernel",
        }
    }
}

impl rib::Source for RouteSource {
    const COUNT: usize = 4;
    fn index(self) -> usize {
        self as usize
    }
}

/// Who holds a route candidate in the RIB. An interface address's routes
/// (local /32, connected subnet while the interface is up) always win; a
/// resolved neighbour's host route always loses; the sources rank between, in
/// the configured order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Address,
    Dpctl,
    Config,
    Fpm,
    Kernel,
    Neighbor,
}

impl rib::Source for Origin {
    const COUNT: usize = 6;
    fn index(self) -> usize {
        self as usize
    }
}

/// Who gave a neighbour's MAC, most preferred first: the operator (`dpctl`,
/// the file), the host stack (netlink), ARP heard by the workers (aging).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NeighborOrigin {
    Static,
    Kernel,
    Arp,
}

impl rib::Source for NeighborOrigin {
    const COUNT: usize = 3;
    fn index(self) -> usize {
        self as usize
    }
}

impl Origin {
    const fn of(s: RouteSource) -> Origin {
        match s {
            RouteSource::Dpctl => Origin::Dpctl,
            RouteSource::Config => Origin::Config,
            RouteSource::Fpm => Origin::Fpm,
            RouteSource::Kernel => Origin::Kernel,
        }
    }

    const fn source(self) -> Option<RouteSource> {
        match self {
            Origin::Dpctl => Some(RouteSource::Dpctl),
            Origin::Config => Some(RouteSource::Config),
            Origin::Fpm => Some(RouteSource::Fpm),
            Origin::Kernel => Some(RouteSource::Kernel),
            Origin::Address | Origin::Neighbor => None,
        }
    }
}

/// The control thread's view of one worker.
#[derive(Debug, Clone)]
pub struct WorkerHandle {
    /// Its counters.
    pub stats: Arc<WorkerStats>,
    /// Neighbours it learned.
    pub events: Arc<ArrayQueue<Event>>,
    /// Packets it punted.
    pub punts: Arc<PuntQueue>,
    /// Packets the control thread gives it to send (ARP probes).
    pub inject: Arc<InjectQueue>,
    /// Wakes it from an idle sleep after pushing to `inject`.
    pub wake: Arc<WorkerWake>,
}

/// The router's control state.
pub struct RouterControl {
    fib: fib::Fib,
    labels: mpls::LabelTable,
    ifaces: Arc<ArcSwap<IfTable>>,
    iface_list: BTreeMap<u32, Interface>,
    /// Each source's interface addresses (prefix length per interface and
    /// address); the winners are the interfaces' `addrs`.
    addr_rib: rib::Rib<(u32, Ipv4Addr), RouteSource, u8>,
    /// The router id each source gives (one key); the winner is `router_id`.
    router_ids: rib::Rib<(), RouteSource, Ipv4Addr>,
    router_id: Option<Ipv4Addr>,
    workers: Vec<WorkerHandle>,
    /// The control namespace's sessions, for the workers' punt policers.
    sessions: Arc<ArcSwap<Sessions>>,
    neighbors: BTreeMap<(u32, Ipv4Addr), [u8; 6]>,
    /// Every neighbour's candidate MACs: configured (`dpctl`, the file) first,
    /// then the host stack's (netlink), then what the workers heard in ARP.
    /// `neighbors` holds the winners.
    neighbor_rib: rib::Rib<(u32, Ipv4Addr), NeighborOrigin, [u8; 6]>,
    /// Neighbours the workers learned from ARP, with their aging state.
    learned: BTreeMap<(u32, Ipv4Addr), Learned>,
    /// Probes sent and neighbours forgotten by aging, since start.
    aging_counts: (u64, u64),
    /// Each source's label entries; the winners are in `labels`.
    label_rib: rib::Rib<(u32, bool), RouteSource, mpls::LabelAction>,
    /// Adjacencies each source's label entry holds, winning or waiting (see
    /// [`RouterControl::label_add`]).
    label_holds: BTreeMap<(u32, bool, RouteSource), Vec<(u32, IpAddr)>>,
    /// Adjacencies [`RouterControl::adjacency`] created and no label entry took yet.
    loose_holds: BTreeMap<(u32, IpAddr), u32>,
    /// Whether the workers punt what a host stack needs (see [`IfTable::punt_to_host`]).
    punt_to_host: bool,
    /// Set inside [`RouterControl::batch`]: the interface table is published once,
    /// at its end.
    batching: bool,
    /// The interface table changed during the batch.
    dirty: std::cell::Cell<bool>,
    /// Every route candidate: addresses', sources', neighbours'. The FIB holds
    /// each prefix's winner.
    rib: rib::Rib<(TableId, Ipv4Prefix), Origin, Arc<RouteKind>>,
    /// The distinct route kinds the candidates hold, each once: a full table
    /// shares a few next-hop sets among all its prefixes.
    kinds: fib::FastSet<Arc<RouteKind>>,
    /// The kind interned last (also in `kinds`): a full table's routes come in
    /// runs of one kind, found here without hashing it.
    last_kind: Option<Arc<RouteKind>>,
    /// IPv6 neighbours (next hops of IPv4 routes, RFC 5549): (ifindex, address) → MAC.
    neighbors6: BTreeMap<(u32, std::net::Ipv6Addr), [u8; 6]>,
    /// IPv6 next hops packets wait for (see [`RouterControl::take_unresolved6`]).
    unresolved6: BTreeSet<(u32, std::net::Ipv6Addr)>,
    /// VRF names of tables (table 0 is `default`, never listed here).
    vrfs: BTreeMap<String, TableId>,
    /// Pseudowires by name: their index (see [`IfTable::pw`]), where they came
    /// from and what they are.
    pws: BTreeMap<String, (u32, RouteSource, Pw)>,
}

/// A pseudowire (VPWS, RFC 4448): a port cross-connected to a remote PE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pw {
    /// The attachment circuit: a port, or an 802.1Q sub-interface (its ifIndex).
    pub ac: u32,
    /// The remote PE (its loopback, reached in table 0).
    pub remote: Ipv4Addr,
    /// The label this router gave the pseudowire (the remote PE pushes it).
    pub in_label: u32,
    /// The label the remote PE gave it.
    pub out_label: u32,
    /// With the RFC 4385 control word.
    pub cw: bool,
}

impl std::fmt::Debug for RouterControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterControl")
            .field("interfaces", &self.iface_list.len())
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

impl Default for RouterControl {
    fn default() -> Self {
        Self::new()
    }
}

impl RouterControl {
    /// An empty router: table 0, no interfaces, no routes, no labels.
    pub fn new() -> RouterControl {
        Self::with_label_slots(mpls::DEFAULT_SLOTS)
    }

    /// An empty router whose label table holds `slots` action slots (see
    /// [`mpls::LabelTable::with_capacity`]): past them a label is refused.
    pub fn with_label_slots(slots: usize) -> RouterControl {
        RouterControl {
            fib: fib::Fib::new(),
            labels: mpls::LabelTable::with_capacity(slots),
            ifaces: Arc::new(ArcSwap::from_pointee(IfTable::default())),
            iface_list: BTreeMap::new(),
            addr_rib: rib::Rib::new(),
            router_ids: rib::Rib::new(),
            router_id: None,
            workers: Vec::new(),
            sessions: Arc::new(ArcSwap::from_pointee(Sessions::default())),
            neighbors: BTreeMap::new(),
            neighbor_rib: rib::Rib::new(),
            learned: BTreeMap::new(),
            aging_counts: (0, 0),
            label_rib: rib::Rib::new(),
            label_holds: BTreeMap::new(),
            loose_holds: BTreeMap::new(),
            punt_to_host: false,
            batching: false,
            dirty: std::cell::Cell::new(false),
            rib: rib::Rib::new(),
            kinds: fib::FastSet::default(),
            last_kind: None,
            neighbors6: BTreeMap::new(),
            unresolved6: BTreeSet::new(),
            vrfs: BTreeMap::new(),
            pws: BTreeMap::new(),
        }
    }

    /// A forwarding core for a new worker, with its own table readers, counters and
    /// queues. Call once per worker before starting it.
    pub fn new_core(&mut self, cfg: CoreConfig, tsc_hz: u64) -> (Core, Arc<PuntQueue>) {
        let stats = Arc::new(WorkerStats::default());
        let events = Arc::new(ArrayQueue::new(EVENT_QUEUE));
        let punts = Arc::new(PuntQueue::new());
        let tables = Tables {
            fib: self.fib.reader(),
            labels: self.labels.reader(),
            ifaces: self.ifaces.clone(),
        };
        let core = Core::new(tables, stats.clone(), events.clone(), cfg, tsc_hz);
        self.workers.push(WorkerHandle {
            stats,
            events,
            punts: punts.clone(),
            inject: Arc::new(InjectQueue::new()),
            wake: Arc::new(WorkerWake::default()),
        });
        (core, punts)
    }

    /// The workers' handles.
    pub fn workers(&self) -> &[WorkerHandle] {
        &self.workers
    }

    /// The sessions snapshot the workers police with
    /// ([`super::RouterWorker::with_sessions`]).
    pub fn sessions(&self) -> Arc<ArcSwap<Sessions>> {
        self.sessions.clone()
    }

    /// Publishes a new sessions snapshot.
    pub fn set_sessions(&self, s: Sessions) {
        self.sessions.store(Arc::new(s));
    }

    /// The workers' counters.
    pub fn worker_stats(&self) -> Vec<Arc<WorkerStats>> {
        self.workers.iter().map(|w| w.stats.clone()).collect()
    }

    /// The current interface table.
    pub fn ifaces(&self) -> Arc<IfTable> {
        self.ifaces.load_full()
    }

    /// The FIB (for `show`).
    pub fn fib(&self) -> &fib::Fib {
        &self.fib
    }

    /// The label table (for `show`).
    pub fn labels(&self) -> &mpls::LabelTable {
        &self.labels
    }

    /// Neighbours known: (ifindex, address) → MAC.
    pub fn neighbors(&self) -> &BTreeMap<(u32, Ipv4Addr), [u8; 6]> {
        &self.neighbors
    }

    fn publish(&self) {
        if self.batching {
            self.dirty.set(true);
            return;
        }
        let mut t = IfTable::new(self.iface_list.values().cloned(), self.router_id);
        t.punt_to_host = self.punt_to_host;
        // (a circuit that is down takes no frames: its port's are dropped)
        let mut pws = vec![
            None;
            self.pws
                .values()
                .map(|p| p.0 as usize + 1)
                .max()
                .unwrap_or(0)
        ];
        for (k, _, p) in self.pws.values() {
            if let Some(i) = self.iface_list.get(&p.ac).filter(|i| i.up) {
                pws[*k as usize] = Some(PwEntry {
                    ac: p.ac,
                    port: i.port,
                    vlan: i.vlan,
                    remote: p.remote,
                    out_label: p.out_label,
                    cw: p.cw,
                });
            }
        }
        t.set_pws(pws);
        self.ifaces.store(Arc::new(t));
    }

    /// Runs `f` with publication held back: the FIB and the interface table
    /// changes it makes reach the workers together, when it returns (one
    /// publication for a whole netlink batch).
    pub fn batch<T>(&mut self, f: impl FnOnce(&mut RouterControl) -> T) -> T {
        let was = self.batching;
        self.batching = true;
        let held = self.fib.hold();
        let r = f(self);
        self.fib.release(held);
        self.batching = was;
        if !was && self.dirty.replace(false) {
            self.publish();
        }
        r
    }

    /// Whether the workers hand the control plane what a host stack beside the
    /// dataplane needs (IPv6, link-local multicast, routing protocols, copies of
    /// ARP replies): on when the interfaces have Linux twins.
    pub fn set_punt_to_host(&mut self, on: bool) {
        self.punt_to_host = on;
        self.publish();
    }

    /// The interface called `name`.
    pub fn iface_by_name(&self, name: &str) -> Result<&Interface, RouterError> {
        self.iface_list
            .values()
            .find(|i| i.name == name)
            .ok_or_else(|| RouterError::UnknownInterfaceName(name.to_string()))
    }

    /// The interface with `ifindex`.
    pub fn iface(&self, ifindex: u32) -> Result<&Interface, RouterError> {
        self.iface_list
            .get(&ifindex)
            .ok_or(RouterError::UnknownInterface(ifindex))
    }

    /// The router id: the most preferred source's (see
    /// [`RouterControl::set_router_id_from`]).
    pub fn router_id(&self) -> Option<Ipv4Addr> {
        self.router_id
    }

    /// The source whose router id is in use.
    pub fn router_id_source(&self) -> Option<RouteSource> {
        self.router_ids.winner(&()).map(|w| w.source)
    }

    /// Sets the configuration file's router id (see
    /// [`RouterControl::set_router_id_from`]).
    pub fn set_router_id(&mut self, id: Option<Ipv4Addr>) {
        self.set_router_id_from(RouteSource::Config, id);
    }

    /// Sets (`Some`) or withdraws (`None`) `source`'s router id: the ICMP
    /// source and ARP sender of unnumbered interfaces (the loopback's
    /// address). The most preferred source's id is used; withdrawing it
    /// reveals the next source's.
    pub fn set_router_id_from(&mut self, source: RouteSource, id: Option<Ipv4Addr>) {
        match id {
            Some(id) => {
                self.router_ids.insert((), source, 0, id);
            }
            None => {
                self.router_ids.remove(&(), source, 0);
            }
        }
        let winner = self.router_ids.winner(&()).map(|w| *w.value);
        if winner != self.router_id {
            self.router_id = winner;
            self.publish();
        }
    }

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
            check_addr(a, l)?;
        }
        let addrs = iface.addrs.clone();
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
        let addrs = self.iface(ifindex)?.addrs.clone();
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

    /// Forgets the IPv4 neighbours on `ifindex` (and their host routes).
    fn forget_neighbors(&mut self, ifindex: u32) {
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
        let nets: BTreeSet<Ipv4Prefix> = i
            .addrs
            .iter()
            .filter(|&&(_, l)| l < 32)
            .filter_map(|&(a, l)| Ipv4Prefix::new_truncated(a, l).ok())
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
    /// [`RouterControl::add_address_from`]).
    pub fn add_address(
        &mut self,
        ifindex: u32,
        addr: Ipv4Addr,
        len: u8,
    ) -> Result<(), RouterError> {
        self.add_address_from(RouteSource::Config, ifindex, addr, len)
    }

    /// Removes the configuration file's address (see
    /// [`RouterControl::del_address_from`]).
    pub fn del_address(
        &mut self,
        ifindex: u32,
        addr: Ipv4Addr,
        len: u8,
    ) -> Result<(), RouterError> {
        self.del_address_from(RouteSource::Config, ifindex, addr, len)
    }

    /// Adds or replaces `source`'s address `addr/len` on an interface. The most
    /// preferred source's prefix length for `addr` is installed: a local /32
    /// route and, for shorter prefixes, the connected route of the subnet while
    /// the interface is up. A less preferred source's waits; refused, nothing
    /// changes.
    pub fn add_address_from(
        &mut self,
        source: RouteSource,
        ifindex: u32,
        addr: Ipv4Addr,
        len: u8,
    ) -> Result<(), RouterError> {
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
        addr: Ipv4Addr,
        len: u8,
    ) -> Result<(), RouterError> {
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
    pub fn address_of(&self, source: RouteSource, ifindex: u32, addr: Ipv4Addr) -> Option<u8> {
        self.addr_rib.get(&(ifindex, addr), source, 0).copied()
    }

    /// Every address `source` gives: (ifindex, address, prefix length).
    pub fn addresses_of(&self, source: RouteSource) -> Vec<(u32, Ipv4Addr, u8)> {
        self.addr_rib
            .of_source(source)
            .map(|(k, _, &l)| (k.0, k.1, l))
            .collect()
    }

    /// Installs an address: a local /32 route and, for shorter prefixes, the connected
    /// route of the subnet while the interface is up.
    fn install_address(
        &mut self,
        ifindex: u32,
        addr: Ipv4Addr,
        len: u8,
    ) -> Result<(), RouterError> {
        check_addr(addr, len)?;
        let i = self.iface(ifindex)?;
        if i.addrs.iter().any(|&(a, _)| a == addr) {
            return Err(RouterError::AddressExists(addr, len, i.name.clone()));
        }
        let table = i.table;
        let up = i.up;
        let host = Ipv4Prefix::new(addr, 32)?;
        let net = Ipv4Prefix::new_truncated(addr, len)?;
        self.offer(Origin::Address, ifindex, table, host, RouteKind::Local)?;
        if len < 32 && up {
            let connected = RouteKind::Connected { ifindex };
            if let Err(e) = self.offer(Origin::Address, ifindex, table, net, connected) {
                let _ = self.withdraw(Origin::Address, ifindex, table, host);
                return Err(e);
            }
        }
        if let Some(i) = self.iface_list.get_mut(&ifindex) {
            i.addrs.push((addr, len));
        }
        self.publish();
        Ok(())
    }

    /// Removes an installed address and its routes.
    fn uninstall_address(
        &mut self,
        ifindex: u32,
        addr: Ipv4Addr,
        len: u8,
    ) -> Result<(), RouterError> {
        let i = self.iface(ifindex)?;
        if !i.addrs.contains(&(addr, len)) {
            return Err(RouterError::NoSuchAddress(addr, len, i.name.clone()));
        }
        let table = i.table;
        let host = Ipv4Prefix::new(addr, 32)?;
        let net = Ipv4Prefix::new_truncated(addr, len)?;
        // Another address of the same subnet keeps its connected route.
        let shared = i.addrs.iter().any(|&(a, l)| {
            (a, l) != (addr, len) && l < 32 && Ipv4Prefix::new_truncated(a, l).ok() == Some(net)
        });
        if let Some(i) = self.iface_list.get_mut(&ifindex) {
            i.addrs.retain(|&x| x != (addr, len));
        }
        let _ = self.withdraw(Origin::Address, ifindex, table, host);
        if len < 32 && !shared {
            let _ = self.withdraw(Origin::Address, ifindex, table, net);
        }
        self.publish();
        Ok(())
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
    /// [`RouterControl::age_neighbors`]).
    pub fn learn_neighbor(
        &mut self,
        ifindex: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<u32, RouterError> {
        self.put_neighbor(ifindex, ip, mac, false)
    }

    /// Installs a neighbour, configured (static) or learned (aging from now).
    fn put_neighbor(
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
    fn offer_neighbor(
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
    fn withdraw_neighbor(&mut self, origin: NeighborOrigin, ifindex: u32, ip: Ipv4Addr) {
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

    /// Sets an IPv6 neighbour's MAC (the next hop of IPv4 routes via IPv6, RFC
    /// 5549); returns its adjacency id.
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
        let id = self.fib.neighbor_set(ifindex, IpAddr::V6(ip), Some(mac))?;
        self.neighbors6.insert((ifindex, ip), mac);
        Ok(id)
    }

    /// Forgets an IPv6 neighbour.
    pub fn del_neighbor6(
        &mut self,
        ifindex: u32,
        ip: std::net::Ipv6Addr,
    ) -> Result<(), RouterError> {
        if self.neighbors6.remove(&(ifindex, ip)).is_some() {
            self.fib.neighbor_del(ifindex, IpAddr::V6(ip))?;
        }
        Ok(())
    }

    /// The IPv6 next hops (interface, address) workers held packets for since
    /// the last call, unresolved: the host stack beside the dataplane is asked
    /// to resolve them (the answer comes back as [`RouterControl::set_neighbor6`]).
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

    fn install_neighbor(
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
    fn uninstall_neighbor(&mut self, ifindex: u32, ip: Ipv4Addr) {
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
        self.aging_counts.0 += probes.len() as u64;
        probes
    }

    /// The adjacency id of neighbour `ip` on `ifindex`, creating an incomplete one
    /// (resolved by ARP when traffic uses it) if there is none. For label entries:
    /// [`RouterControl::label_add`] holds the adjacencies its entry names, so an id
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
    /// [`RouterControl::adjacency`] created for it). Nothing held on error.
    fn hold_adjacencies(
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

    fn release_adjacencies(&mut self, keys: Vec<(u32, IpAddr)>) {
        for (ifindex, addr) in keys {
            self.fib.adjacency_release(ifindex, addr);
        }
    }

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
    /// [`RouterControl::route_add_from`]).
    pub fn route_add(
        &mut self,
        table: TableId,
        prefix: Ipv4Prefix,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
        self.route_add_from(RouteSource::Config, table, prefix, kind)
    }

    /// Deletes the configuration file's route (see [`RouterControl::route_del_from`]).
    pub fn route_del(&mut self, table: TableId, prefix: Ipv4Prefix) -> Result<(), RouterError> {
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
        prefix: Ipv4Prefix,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
        self.route_add_metric(source, table, prefix, 0, kind)
    }

    /// Adds or replaces `source`'s route for `prefix` with `metric`: a source
    /// may hold several for one prefix (as the kernel does), and the lowest
    /// metric of the most preferred source forwards (see
    /// [`RouterControl::route_add_from`]).
    pub fn route_add_metric(
        &mut self,
        source: RouteSource,
        table: TableId,
        prefix: Ipv4Prefix,
        metric: u32,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
        if !self.fib.tables().any(|t| t == table) {
            return Err(RouterError::Fib(FibError::UnknownTable(table)));
        }
        self.offer(Origin::of(source), metric, table, prefix, kind)
    }

    /// Deletes `source`'s route for `prefix` with `metric`.
    pub fn route_del_metric(
        &mut self,
        source: RouteSource,
        table: TableId,
        prefix: Ipv4Prefix,
        metric: u32,
    ) -> Result<(), RouterError> {
        if self.withdraw(Origin::of(source), metric, table, prefix)? {
            Ok(())
        } else {
            Err(RouterError::Fib(FibError::NoSuchRoute(prefix, table)))
        }
    }

    /// Starts a refresh of `source`'s routes: those it does not add again
    /// before [`RouterControl::route_sweep`] go then.
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
        prefix: Ipv4Prefix,
        metric: u32,
    ) -> bool {
        self.rib
            .set_stale(&(table, prefix), Origin::of(source), metric)
    }

    /// Ends a refresh of `source`'s routes: deletes those not added since
    /// [`RouterControl::route_mark`]. Returns them (table, prefix, metric).
    pub fn route_sweep(&mut self, source: RouteSource) -> Vec<(TableId, Ipv4Prefix, u32)> {
        let stale = self.rib.sweep(Origin::of(source));
        let mut gone = Vec::with_capacity(stale.len());
        for ((t, p), m) in stale {
            let _ = self.withdraw(Origin::of(source), m, t, p);
            gone.push((t, p, m));
        }
        gone
    }

    /// Adds (`on`) or removes an address of the router's own that is on no
    /// interface (a loopback's): its local /32 in `table`, which wins over every
    /// source's route for it, as the kernel's local table does.
    pub fn set_local(
        &mut self,
        table: TableId,
        addr: Ipv4Addr,
        on: bool,
    ) -> Result<(), RouterError> {
        check_addr(addr, 32)?;
        let host = Ipv4Prefix::new(addr, 32)?;
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
    fn offer(
        &mut self,
        origin: Origin,
        metric: u32,
        table: TableId,
        prefix: Ipv4Prefix,
        kind: RouteKind,
    ) -> Result<u32, RouterError> {
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
                fib.route_add(table, prefix, (**k).clone()).map(|i| id = i)
            });
        match r {
            Ok(ins) => {
                drop(keep);
                self.release(ins.replaced);
                Ok(id)
            }
            Err(e) => {
                self.release(Some(keep));
                Err(e.into())
            }
        }
    }

    /// Withdraws `origin`'s candidate for `prefix`; the FIB gets what it reveals.
    /// `Ok(false)`: there was none. An error: the revealed candidate cannot
    /// forward (nothing does for the prefix until it changes).
    fn withdraw(
        &mut self,
        origin: Origin,
        metric: u32,
        table: TableId,
        prefix: Ipv4Prefix,
    ) -> Result<bool, RouterError> {
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
                    if let Err(e) = self.fib.route_add(table, prefix, kind) {
                        let _ = self.fib.route_del(table, prefix);
                        return Err(e.into());
                    }
                }
                None => {
                    let _ = self.fib.route_del(table, prefix);
                }
            }
        }
        Ok(true)
    }

    /// How many distinct route kinds the sources' routes share.
    pub fn shared_route_kinds(&self) -> usize {
        self.kinds.len()
    }

    /// Lets go of a candidate's kind: the shared copy goes with its last user.
    fn release(&mut self, kind: Option<Arc<RouteKind>>) {
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
        prefix: Ipv4Prefix,
    ) -> Result<(), RouterError> {
        if self.withdraw(Origin::of(source), 0, table, prefix)? {
            Ok(())
        } else {
            Err(RouterError::Fib(FibError::NoSuchRoute(prefix, table)))
        }
    }

    /// The source of the route that forwards for exactly `prefix`, if a source's
    /// route does (not an address's or a neighbour's).
    pub fn route_source(&self, table: TableId, prefix: Ipv4Prefix) -> Option<RouteSource> {
        self.rib.winner(&(table, prefix))?.source.source()
    }

    /// `source`'s route for exactly `prefix` with `metric`, forwarding or waiting.
    pub fn route_of_metric(
        &self,
        source: RouteSource,
        table: TableId,
        prefix: Ipv4Prefix,
        metric: u32,
    ) -> Option<&RouteKind> {
        self.rib
            .get(&(table, prefix), Origin::of(source), metric)
            .map(|k| &**k)
    }

    /// Every route `source` holds, with its metric: (table, prefix, metric, kind).
    pub fn routes_of_metric(
        &self,
        source: RouteSource,
    ) -> impl Iterator<Item = (TableId, Ipv4Prefix, u32, &RouteKind)> + '_ {
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
        prefix: Ipv4Prefix,
    ) -> Option<&RouteKind> {
        self.rib
            .best_of(&(table, prefix), Origin::of(source))
            .map(|c| &**c.value)
    }

    /// Every route `source` holds: (table, prefix, kind).
    pub fn routes_of(
        &self,
        source: RouteSource,
    ) -> impl Iterator<Item = (TableId, Ipv4Prefix, &RouteKind)> + '_ {
        self.rib
            .of_source(Origin::of(source))
            .map(|(&(t, p), _, k)| (t, p, &**k))
    }

    /// Every route that forwards, by table then prefix, with what it does
    /// (addresses' local and connected routes and neighbours' host routes
    /// included).
    pub fn routes(&self) -> impl Iterator<Item = (TableId, Ipv4Prefix, &RouteKind)> + '_ {
        self.rib
            .winners()
            .filter(|(k, _)| self.fib.route(k.0, k.1).is_some())
            .map(|(&(t, p), w)| (t, p, &**w.value))
    }

    /// What the route for exactly `prefix` in `table` does, if one forwards.
    pub fn route_kind(&self, table: TableId, prefix: Ipv4Prefix) -> Option<&RouteKind> {
        self.fib.route(table, prefix)?;
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
            self.label_rib.of_source(s).find(|(_, _, a)| {
                matches!(a, mpls::LabelAction::Ip4Lookup { table: t, .. } if *t == table)
            })
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

    /// Adds pseudowire `name` from `source`, or replaces it: its circuit takes
    /// no IPv4 or MPLS of its own any more (it must have no address), and label
    /// `in_label` (bottom of stack) becomes its (refused if another entry has it).
    pub fn pw_add(&mut self, source: RouteSource, name: &str, pw: Pw) -> Result<(), RouterError> {
        let bad = |m: String| Err(RouterError::Pw(format!("{name}: {m}")));
        if name.is_empty() || name.len() > 32 || !name.chars().all(|c| c.is_ascii_graphic()) {
            return bad("a name is 1-32 printable characters".into());
        }
        let Some(ac) = self.iface_list.get(&pw.ac) else {
            return Err(RouterError::UnknownInterface(pw.ac));
        };
        if let Some((a, l)) = ac.addrs.first() {
            return bad(format!(
                "{} has address {a}/{l}: a circuit has none",
                ac.name
            ));
        }
        if let Some((other, _)) = self.pws.iter().find(|(n, p)| *n != name && p.2.ac == pw.ac) {
            return bad(format!("{} is the circuit of pseudowire {other}", ac.name));
        }
        if !(16..1 << 20).contains(&pw.out_label) {
            return bad(format!("out-label {} is not 16-1048575", pw.out_label));
        }
        let old = self.pws.get(name).cloned();
        let k = match &old {
            Some((k, _, _)) => *k,
            None => match (0..MAX_PWS as u32).find(|k| self.pws.values().all(|p| p.0 != *k)) {
                Some(k) => k,
                None => return bad(format!("{MAX_PWS} pseudowires at most")),
            },
        };
        let mine = |a: &mpls::LabelAction| *a == mpls::LabelAction::Xconnect { pw: k };
        if self
            .label_rib
            .winner(&(pw.in_label, true))
            .is_some_and(|w| !mine(w.value))
        {
            return bad(format!("in-label {} is in use", pw.in_label));
        }
        self.label_add_from(
            source,
            pw.in_label,
            true,
            mpls::LabelAction::Xconnect { pw: k },
        )?;
        if let Some((_, s, o)) = &old {
            if (o.in_label, *s) != (pw.in_label, source) {
                let _ = self.label_del_from(*s, o.in_label, true);
            }
        }
        self.pws.insert(name.to_string(), (k, source, pw));
        self.publish();
        Ok(())
    }

    /// Deletes pseudowire `name` (its label with it).
    pub fn pw_del(&mut self, name: &str) -> Result<Pw, RouterError> {
        let (_, source, pw) = self
            .pws
            .remove(name)
            .ok_or_else(|| RouterError::Pw(format!("{name}: no such pseudowire")))?;
        let _ = self.label_del_from(source, pw.in_label, true);
        self.publish();
        Ok(pw)
    }

    /// The pseudowires: name, index, source, configuration.
    pub fn pws(&self) -> impl Iterator<Item = (&str, u32, RouteSource, &Pw)> {
        self.pws
            .iter()
            .map(|(n, (k, s, p))| (n.as_str(), *k, *s, p))
    }

    /// Names table `table` VRF `name`, creating the table if it does not exist.
    /// A VRF is a table with a name: interfaces bound to it, its routes, the
    /// labels that look up in it. `default` is table 0's name and cannot be given.
    pub fn vrf_add(&mut self, name: &str, table: TableId) -> Result<(), RouterError> {
        let ok = !name.is_empty()
            && name.len() <= 32
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !name.chars().all(|c| c.is_ascii_digit());
        if !ok {
            return Err(RouterError::Vrf(format!(
                "bad VRF name {name:?}: 1-32 letters, digits, '-', '_' or '.', not all digits"
            )));
        }
        if name == "default" || table == 0 {
            return Err(RouterError::Vrf(
                "table 0 is the default VRF; give another name and table".into(),
            ));
        }
        match self.vrfs.get(name) {
            Some(&t) if t == table => return Ok(()),
            Some(&t) => {
                return Err(RouterError::Vrf(format!("VRF {name} is table {t}")));
            }
            None => {}
        }
        if let Some(other) = self.table_vrf(table) {
            return Err(RouterError::Vrf(format!(
                "table {table} is VRF {other} already"
            )));
        }
        if !self.fib.tables().any(|t| t == table) {
            self.fib.table_add(table)?;
            self.publish();
        }
        self.vrfs.insert(name.to_string(), table);
        Ok(())
    }

    /// Removes VRF `name` and its table (refused while the table is in use, as
    /// [`RouterControl::table_del`]).
    pub fn vrf_del(&mut self, name: &str) -> Result<(), RouterError> {
        if name == "default" {
            return Err(RouterError::Vrf("the default VRF (table 0) stays".into()));
        }
        let Some(table) = self.vrf_table(name) else {
            return Err(RouterError::Vrf(self.unknown_vrf(name)));
        };
        self.vrfs.remove(name);
        if let Err(e) = self.table_del(table) {
            self.vrfs.insert(name.to_string(), table);
            return Err(e);
        }
        Ok(())
    }

    /// The table of VRF `name` (`default` is 0).
    pub fn vrf_table(&self, name: &str) -> Option<TableId> {
        if name == "default" {
            return Some(0);
        }
        self.vrfs.get(name).copied()
    }

    /// The VRF name of `table`, if it has one (`default` for 0).
    pub fn table_vrf(&self, table: TableId) -> Option<&str> {
        if table == 0 {
            return Some("default");
        }
        self.vrfs
            .iter()
            .find(|(_, t)| **t == table)
            .map(|(n, _)| n.as_str())
    }

    /// The named VRFs and their tables (without `default`).
    pub fn vrfs(&self) -> impl Iterator<Item = (&str, TableId)> + '_ {
        self.vrfs.iter().map(|(n, &t)| (n.as_str(), t))
    }

    /// "unknown VRF ... (VRFs: ...)".
    pub fn unknown_vrf(&self, name: &str) -> String {
        let mut names = vec!["default"];
        names.extend(self.vrfs.keys().map(String::as_str));
        format!("unknown VRF {name:?} (VRFs: {})", names.join(", "))
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
        if let Some((a, l)) = i.addrs.first() {
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

    /// Adds or replaces the configuration file's label entry (see
    /// [`RouterControl::label_add_from`]).
    pub fn label_add(
        &mut self,
        label: u32,
        eos: bool,
        action: mpls::LabelAction,
    ) -> Result<(), RouterError> {
        self.label_add_from(RouteSource::Config, label, eos, action)
    }

    /// Adds or replaces `source`'s label entry. Each source may hold one per
    /// label and eos; the most preferred source's forwards, the others wait to
    /// be revealed. Every entry, waiting or not, holds the adjacencies it names.
    /// A refused entry changes nothing.
    pub fn label_add_from(
        &mut self,
        source: RouteSource,
        label: u32,
        eos: bool,
        action: mpls::LabelAction,
    ) -> Result<(), RouterError> {
        if let mpls::LabelAction::Ip4Lookup { table, .. } = &action {
            if *table != mpls::RX_TABLE && !self.fib.tables().any(|t| t == *table) {
                return Err(RouterError::Fib(FibError::UnknownTable(*table)));
            }
        }
        mpls::LabelTable::check(label, eos, &action)?;
        let held = self.hold_adjacencies(&action)?;
        let labels = &mut self.labels;
        let r = self
            .label_rib
            .insert_with((label, eos), source, 0, action, |a| {
                labels.add(label, eos, a.clone())
            });
        if let Err(e) = r {
            self.release_adjacencies(held);
            return Err(e.into());
        }
        if let Some(old) = self.label_holds.insert((label, eos, source), held) {
            self.release_adjacencies(old);
        }
        Ok(())
    }

    /// How many routes `source` gives, forwarding or waiting.
    pub fn route_count_of(&self, source: RouteSource) -> usize {
        self.rib.count(Origin::of(source))
    }

    /// The source whose label entry forwards.
    pub fn label_source(&self, label: u32, eos: bool) -> Option<RouteSource> {
        self.label_rib.winner(&(label, eos)).map(|w| w.source)
    }

    /// `source`'s label entry, forwarding or waiting.
    pub fn label_of(
        &self,
        source: RouteSource,
        label: u32,
        eos: bool,
    ) -> Option<&mpls::LabelAction> {
        self.label_rib.get(&(label, eos), source, 0)
    }

    /// Deletes the configuration file's label entry (see
    /// [`RouterControl::label_del_from`]).
    pub fn label_del(&mut self, label: u32, eos: bool) -> Result<mpls::LabelAction, RouterError> {
        self.label_del_from(RouteSource::Config, label, eos)
    }

    /// Deletes `source`'s label entry and lets go of the adjacencies it held;
    /// the next source's entry, if any, takes its place.
    pub fn label_del_from(
        &mut self,
        source: RouteSource,
        label: u32,
        eos: bool,
    ) -> Result<mpls::LabelAction, RouterError> {
        let gone =
            self.label_rib
                .remove(&(label, eos), source, 0)
                .ok_or(RouterError::NoSuchLabel(
                    label,
                    if eos { "eos" } else { "non-eos" },
                ))?;
        if gone.was_winner {
            match self
                .label_rib
                .winner(&(label, eos))
                .map(|w| w.value.clone())
            {
                Some(next) => {
                    if self.labels.add(label, eos, next).is_err() {
                        let _ = self.labels.remove(label, eos);
                    }
                }
                None => {
                    let _ = self.labels.remove(label, eos);
                }
            }
        }
        if let Some(old) = self.label_holds.remove(&(label, eos, source)) {
            self.release_adjacencies(old);
        }
        Ok(gone.value)
    }

    /// Traces the next `n` packets of every worker (a budget per worker).
    pub fn trace_add(&self, n: u32) {
        for w in &self.workers {
            let b = &w.stats.trace_budget;
            b.store(
                b.load(std::sync::atomic::Ordering::Relaxed)
                    .saturating_add(n),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// Trace records collected so far, per worker (worker index, record); they stay
    /// until [`RouterControl::trace_clear`].
    pub fn trace_records(&self) -> Vec<(usize, TraceRecord)> {
        let mut v = Vec::new();
        for (k, w) in self.workers.iter().enumerate() {
            let mut mine = Vec::new();
            while let Some(r) = w.stats.traces.pop() {
                mine.push(r);
            }
            for r in &mine {
                let _ = w.stats.traces.push(r.clone());
            }
            v.extend(mine.into_iter().map(|r| (k, r)));
        }
        v.sort_by_key(|(_, r)| r.tsc);
        v
    }

    /// Stops tracing and forgets the records.
    pub fn trace_clear(&self) {
        for w in &self.workers {
            w.stats
                .trace_budget
                .store(0, std::sync::atomic::Ordering::Relaxed);
            while w.stats.traces.pop().is_some() {}
        }
    }

    /// Handles what the workers reported (neighbours learned from ARP). Returns the
    /// number of events handled.
    pub fn poll(&mut self) -> usize {
        let now = Instant::now();
        let mut n = 0;
        for w in 0..self.workers.len() {
            while let Some(ev) = self.workers[w].events.pop() {
                n += 1;
                match ev {
                    Event::Neighbor { ifindex, ip, mac } => {
                        // What the operator or the host stack gave wins over ARP.
                        let owned = self
                            .neighbor_rib
                            .candidates(&(ifindex, ip))
                            .any(|c| c.source != NeighborOrigin::Arp);
                        if !owned
                            && self
                                .offer_neighbor(NeighborOrigin::Arp, ifindex, ip, mac)
                                .is_ok()
                        {
                            self.learned.insert((ifindex, ip), Learned::heard_at(now));
                        }
                    }
                    Event::Resolve6 { adj } => {
                        if let Some((ifindex, IpAddr::V6(ip))) = self.fib.adjacency_key(adj) {
                            self.unresolved6.insert((ifindex, ip));
                        }
                    }
                }
            }
        }
        n
    }
}

fn check_addr(a: Ipv4Addr, len: u8) -> Result<(), RouterError> {
    if len > 32 || a.is_unspecified() || a.is_multicast() || a.is_broadcast() || a.is_loopback() {
        return Err(RouterError::InvalidAddress(a, len));
    }
    Ok(())
}

/// The shared copy of `kind` in `kinds`.
fn intern(
    kinds: &mut fib::FastSet<Arc<RouteKind>>,
    last: &mut Option<Arc<RouteKind>>,
    kind: RouteKind,
) -> Arc<RouteKind> {
    if let Some(l) = last.as_ref().filter(|l| ***l == kind) {
        return l.clone();
    }
    let k = match kinds.get(&kind) {
        Some(k) => k.clone(),
        None => {
            let k = Arc::new(kind);
            kinds.insert(k.clone());
            k
        }
    };
    *last = Some(k.clone());
    k
}
