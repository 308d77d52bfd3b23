//! The control side of the router: the single writer of the FIB, the label table and
//! the interface table, and the reader of the workers' counters and events. It runs
//! on the control thread; workers never wait for it and it never stops them.
//!
//! Every method validates completely before it changes anything, so a failed call
//! leaves the router as it was.
//!
//! This module owns [`RouterControl`] itself (its state, the workers' handles, the
//! publication of the interface table, the router id, traces and the workers'
//! events); its rules are in one module per kind of state: `interfaces` (and their
//! addresses), `neighbors` (and adjacency holds), `routes` (sources, preference,
//! sweeps, tables), `labels`, `vpn` (pseudowires and VRFs).

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

mod interfaces;
mod labels;
mod neighbors;
mod routes;
mod vpn;

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
