//! The router's state and its rules, without DPDK: interfaces and their
//! addresses, neighbours of both families, routes and label entries from every
//! source (dpctl, the configuration file, FPM, the kernel) ranked in a RIB, VRFs,
//! pseudowires, the router id and the adjacencies routes and labels hold. The
//! winners go to the FIB and the label table (their writer handles live here; the
//! workers read them lock-free), and what the workers must see of the interfaces
//! goes to a [`Publisher`] (the dataplane's interface table).
//!
//! Every method validates completely before it changes anything, so a failed call
//! leaves the router as it was.
//!
//! One module per kind of state: `interfaces` (and their addresses), `neighbors`
//! (and adjacency holds; `neigh`: aging of ARP-learned ones), `routes` (sources,
//! preference, sweeps, tables), `labels`, `vpn` (pseudowires and VRFs); `iface`:
//! the interface and pseudowire records the workers get.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

use thiserror::Error;

use fib::{Fib, FibError, IpPrefix, Ipv4Prefix, RouteKind, TableId};

pub mod iface;
pub mod neigh;

pub use iface::{Interface, PwEntry};
use neigh::{ArpProbe, Learned, NeighborAging, Step, arp_probe, nd_probe};

/// Most interfaces (ifIndex values 1..MAX_IFACES-1); index 0 is unused.
pub const MAX_IFACES: usize = 256;

/// Most pseudowires (indexes 0..MAX_PWS-1).
pub const MAX_PWS: usize = 256;

/// What the workers must see of the interfaces, handed to the [`Publisher`]
/// whenever it changes (once per batch).
#[derive(Debug, Clone, Copy)]
pub struct InterfaceView<'a> {
    /// Every interface, by ifIndex.
    pub interfaces: &'a BTreeMap<u32, Interface>,
    /// The router id (source of ICMP errors and ARP of unnumbered interfaces).
    pub router_id: Option<Ipv4Addr>,
    /// Whether the workers punt what a host stack beside them needs.
    pub punt_to_host: bool,
    /// The pseudowires by index (`None`: a free index, or a circuit that is down).
    pub pws: &'a [Option<PwEntry>],
}

/// Where the interface state goes: the dataplane builds its workers' interface
/// table from it. Called on the control thread.
pub trait Publisher: Send {
    /// The interfaces changed: this is what the workers must see now.
    fn interfaces(&self, view: InterfaceView<'_>);
}

/// A publisher for a router without workers (tools, tests of the rules): it
/// keeps nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoWorkers;

impl Publisher for NoWorkers {
    fn interfaces(&self, _: InterfaceView<'_>) {}
}

mod interfaces;
mod labels;
mod neighbors;
mod routes;
mod vpn;

/// Errors of the router's state operations. Each says what is wrong.
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
    #[error("unknown adjacency {0} (take ids from RouterState::adjacency)")]
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
    AddressExists(IpAddr, u8, String),
    /// The address is not configured.
    #[error("address {0}/{1} is not on interface {2}")]
    NoSuchAddress(IpAddr, u8, String),
    /// An address that cannot be an interface address.
    #[error("{0}/{1} cannot be an interface address")]
    InvalidAddress(IpAddr, u8),
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
    /// No route of that source for that prefix.
    #[error("no route {0} in table {1}")]
    NoSuchRoute(IpPrefix, TableId),
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
/// [`RouterState::set_route_preference`] changes it), and withdrawing it
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

/// The router's state: the single writer of the FIB and the label table.
pub struct RouterState {
    fib: fib::Fib,
    labels: mpls::LabelTable,
    publisher: Box<dyn Publisher>,
    iface_list: BTreeMap<u32, Interface>,
    /// Each source's interface addresses (prefix length per interface and
    /// address); the winners are the interfaces' `addrs`.
    addr_rib: rib::Rib<(u32, IpAddr), RouteSource, u8>,
    /// The router id each source gives (one key); the winner is `router_id`.
    router_ids: rib::Rib<(), RouteSource, Ipv4Addr>,
    router_id: Option<Ipv4Addr>,
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
    /// [`RouterState::label_add`]).
    label_holds: BTreeMap<(u32, bool, RouteSource), Vec<(u32, IpAddr)>>,
    /// Adjacencies [`RouterState::adjacency`] created and no label entry took yet.
    loose_holds: BTreeMap<(u32, IpAddr), u32>,
    /// Whether the workers punt what a host stack needs (see [`InterfaceView::punt_to_host`]).
    punt_to_host: bool,
    /// Set inside [`RouterState::batch`]: the interface table is published once,
    /// at its end.
    batching: bool,
    /// The interface table changed during the batch.
    dirty: std::cell::Cell<bool>,
    /// Every route candidate: addresses', sources', neighbours'. The FIB holds
    /// each prefix's winner.
    rib: rib::Rib<(TableId, IpPrefix), Origin, Arc<RouteKind>>,
    /// The distinct route kinds the candidates hold, each once: a full table
    /// shares a few next-hop sets among all its prefixes.
    kinds: fib::FastSet<Arc<RouteKind>>,
    /// The kind interned last (also in `kinds`): a full table's routes come in
    /// runs of one kind, found here without hashing it.
    last_kind: Option<Arc<RouteKind>>,
    /// IPv6 neighbours (next hops of IPv4 routes, RFC 5549): (ifindex, address) → MAC.
    neighbors6: BTreeMap<(u32, std::net::Ipv6Addr), [u8; 6]>,
    /// IPv6 neighbours configured with `dpctl` (the rest are learned).
    static6: BTreeSet<(u32, std::net::Ipv6Addr)>,
    /// IPv6 neighbours learned from neighbour discovery, aging as ARP's.
    learned6: BTreeMap<(u32, std::net::Ipv6Addr), Learned>,
    /// IPv6 next hops packets wait for (see [`RouterState::take_unresolved6`]).
    unresolved6: BTreeSet<(u32, std::net::Ipv6Addr)>,
    /// VRF names of tables (table 0 is `default`, never listed here).
    vrfs: BTreeMap<String, TableId>,
    /// Pseudowires by name: their index (see [`InterfaceView::pws`]), where they came
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

impl std::fmt::Debug for RouterState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterState")
            .field("interfaces", &self.iface_list.len())
            .finish_non_exhaustive()
    }
}

impl Default for RouterState {
    fn default() -> Self {
        Self::new(Box::new(NoWorkers), mpls::DEFAULT_SLOTS)
    }
}

impl RouterState {
    /// An empty router (table 0, no interfaces, no routes, no labels) whose
    /// interfaces go to `publisher` and whose label table holds `label_slots`
    /// action slots (see [`mpls::LabelTable::with_capacity`]: past them a label
    /// is refused).
    pub fn new(publisher: Box<dyn Publisher>, label_slots: usize) -> RouterState {
        RouterState {
            fib: fib::Fib::new(),
            labels: mpls::LabelTable::with_capacity(label_slots),
            publisher,
            iface_list: BTreeMap::new(),
            addr_rib: rib::Rib::new(),
            router_ids: rib::Rib::new(),
            router_id: None,
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
            static6: BTreeSet::new(),
            learned6: BTreeMap::new(),
            unresolved6: BTreeSet::new(),
            vrfs: BTreeMap::new(),
            pws: BTreeMap::new(),
        }
    }

    /// The FIB (for `show`, and for the workers' readers).
    pub fn fib(&self) -> &fib::Fib {
        &self.fib
    }

    /// The label table (for `show`, and for the workers' readers).
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
        self.publisher.interfaces(InterfaceView {
            interfaces: &self.iface_list,
            router_id: self.router_id,
            punt_to_host: self.punt_to_host,
            pws: &pws,
        });
    }

    /// Holds publication back until the matching [`RouterState::release_publication`]: the
    /// FIB and interface changes in between reach the workers together (one
    /// publication for a whole netlink batch). Returns what to pass to `release`.
    pub fn hold_publication(&mut self) -> (bool, bool) {
        let was = std::mem::replace(&mut self.batching, true);
        (was, self.fib.hold())
    }

    /// Ends a [`RouterState::hold_publication`]: publishes what changed unless an outer hold
    /// is still on.
    pub fn release_publication(&mut self, (was, fib_held): (bool, bool)) {
        self.fib.release(fib_held);
        self.batching = was;
        if !was && self.dirty.replace(false) {
            self.publish();
        }
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
    /// [`RouterState::set_router_id_from`]).
    pub fn router_id(&self) -> Option<Ipv4Addr> {
        self.router_id
    }

    /// The source whose router id is in use.
    pub fn router_id_source(&self) -> Option<RouteSource> {
        self.router_ids.winner(&()).map(|w| w.source)
    }

    /// Sets the configuration file's router id (see
    /// [`RouterState::set_router_id_from`]).
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

    /// A worker heard `ip` at `mac` on `ifindex` in ARP: learned, unless the
    /// operator or the host stack gave that neighbour.
    pub fn heard_arp(&mut self, ifindex: u32, ip: Ipv4Addr, mac: [u8; 6], now: Instant) {
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

    /// A worker heard IPv6 neighbour `ip` at `mac` on `ifindex` in neighbour
    /// discovery: learned (aging as ARP's), unless it was configured.
    pub fn heard_nd(&mut self, ifindex: u32, ip: std::net::Ipv6Addr, mac: [u8; 6], now: Instant) {
        if self.static6.contains(&(ifindex, ip)) {
            return;
        }
        if self.set_neighbor6(ifindex, ip, mac).is_ok() {
            self.learned6.insert((ifindex, ip), Learned::heard_at(now));
        }
    }

    /// A worker has packets for the IPv6 next hop of adjacency `adj`, which has
    /// no MAC yet (see [`RouterState::take_unresolved6`]).
    pub fn wants_nd(&mut self, adj: u32) {
        if let Some((ifindex, IpAddr::V6(ip))) = self.fib.adjacency_key(adj) {
            self.unresolved6.insert((ifindex, ip));
        }
    }
}

fn check_addr(a: IpAddr, len: u8) -> Result<(), RouterError> {
    let bad = match a {
        IpAddr::V4(a) => {
            len > 32
                || a.is_unspecified()
                || a.is_multicast()
                || a.is_broadcast()
                || a.is_loopback()
        }
        IpAddr::V6(a) => len > 128 || a.is_unspecified() || a.is_multicast() || a.is_loopback(),
    };
    if bad {
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
