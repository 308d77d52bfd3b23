//! The writer: routes, path lists, recursive resolution, ECMP buckets, adjacencies.
//!
//! Object graph (the hierarchical FIB of VPP and BGP PIC, "Fast convergence" in the
//! VPP FIB docs): a route points at a shared *path list*; routes with equal paths in
//! the same table share one. A path list owns one *result id* — the value the LPM
//! returns — whose load-balance object maps a flow hash to one of its *legs* through a
//! power-of-two bucket table. A leg is an action plus an adjacency (or interface) and
//! an out-label stack; legs and adjacencies are shared and reference-counted. When a
//! route that other path lists resolve through changes, only those path lists are
//! recomputed and their buckets rewritten in place: the prefixes that use them, and
//! the LPM, are not touched.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;

use crate::arena::{BlockAlloc, FastMap as HashMap, FastSet as HashSet};
use crate::index::{RouteEntry, RouteIndex};
use crate::lpm::{LpmWriter, UpdateStats};
use crate::lpm6::{Lpm6Trie, Tree, TreeWriter};
use crate::model::{
    Action, FibError, Interface, Ipv4Prefix, MAX_LABELS, Path, RouteKind, TableId, Via, check_paths,
};
use crate::prefix::{IpPrefix, Ipv6Prefix, mask6};
use crate::qsbr::Qsbr;
use crate::reader::{
    FibReader, LEG_IMPLICIT_NULL, LEG_WORDS, Planes, RW_COMPLETE, RW_NBR_V4, RW_NBR_V6, RW_WORDS,
    Shared, Sizes, TableChange, VLAN_TAGGED,
};
use crate::trie::{NIL, Trie};

mod legs;
mod publish;
mod recursive;
mod results;
mod routes;
mod routes6;

pub use publish::Batch;

/// Most ECMP buckets of one load-balance object (VPP caps at 8192).
pub const MAX_BUCKETS: usize = 1024;
/// Buckets per leg aimed for, so weights are met within 1/16 of a share.
const BUCKETS_PER_LEG: usize = 16;
/// Fixed-point scale of leg weights.
const SCALE: u64 = 1 << 20;
/// Longest chain of recursive resolutions followed.
const MAX_DEPTH: usize = 8;

/// Single updates between two grace-period checks.
const RECLAIM_EVERY: u32 = 32;

/// The most distinct results (path lists, each with its own result id) a FIB
/// holds: 2^22. Result ids stay far below the flag bits of the lookup arrays
/// (2^30), so none can alias another; past the limit a route is refused
/// ([`FibError::ResultsFull`]), never folded onto another's result.
pub const MAX_RESULTS: usize = 1 << 22;

const INIT_LB: usize = 1024;
const INIT_BUCKETS: usize = 4096;
const INIT_LEGS: usize = 1024;
const INIT_ADJ: usize = 256;
const INIT_RW: usize = 512;

/// A route of either family in a table: what recursive resolution depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct RouteKey {
    table: TableId,
    addr: u128,
    len: u8,
    v6: bool,
}

impl RouteKey {
    fn v4(table: TableId, addr: u32, len: u8) -> Self {
        Self {
            table,
            addr: u128::from(addr),
            len,
            v6: false,
        }
    }

    fn v6(table: TableId, addr: u128, len: u8) -> Self {
        Self {
            table,
            addr,
            len,
            v6: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PlKey {
    table: TableId,
    kind: RouteKind,
}

/// The path-list index's form of a [`PlKey`]: one path with at most two labels (most
/// BGP and VPN routes) held inline, so a lookup compares without reading the heap (a
/// cache miss per route change); anything else as it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum PlIndexKey {
    One {
        table: TableId,
        via: Via,
        ifindex: Option<u32>,
        weight: u32,
        nlabels: u8,
        labels: [u32; 2],
        via_table: Option<TableId>,
    },
    Other(PlKey),
}

impl From<PlKey> for PlIndexKey {
    fn from(k: PlKey) -> Self {
        match &k.kind {
            RouteKind::Paths(ps) if ps.len() == 1 && ps[0].labels.len() <= 2 => {
                let p = &ps[0];
                let mut labels = [0; 2];
                labels[..p.labels.len()].copy_from_slice(&p.labels);
                Self::One {
                    table: k.table,
                    via: p.via,
                    ifindex: p.ifindex,
                    weight: p.weight,
                    nlabels: p.labels.len() as u8,
                    labels,
                    via_table: p.via_table,
                }
            }
            _ => Self::Other(k),
        }
    }
}

impl PlIndexKey {
    fn key(&self) -> PlKey {
        match self {
            Self::One {
                table,
                via,
                ifindex,
                weight,
                nlabels,
                labels,
                via_table,
            } => PlKey {
                table: *table,
                kind: RouteKind::Paths(vec![Path {
                    via: *via,
                    ifindex: *ifindex,
                    weight: *weight,
                    labels: labels[..usize::from(*nlabels)].to_vec(),
                    via_table: *via_table,
                }]),
            },
            Self::Other(k) => k.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct LegKey {
    action: Action,
    ifindex: u32,
    nbr: Option<IpAddr>,
    labels: Vec<u32>,
}

#[derive(Debug)]
struct PathList {
    key: PlKey,
    fwd: u32,
    /// (leg id, weight * SCALE), sorted by leg id.
    legs: Vec<(u32, u64)>,
    buckets: Vec<u32>,
    bucket_base: u32,
    /// Bucket assignment of the path list this one replaced on a route, so a route
    /// that loses or gains one path moves only the flows it must.
    seed: Vec<u32>,
    /// Routes resolved through, with their path list (NIL when unresolved).
    via: Vec<(RouteKey, u32)>,
    /// Path lists resolved through a route that uses this one.
    dependents: HashSet<u32>,
}

#[derive(Debug)]
struct LegEntry {
    id: u32,
    refs: u32,
}

#[derive(Debug)]
struct AdjEntry {
    id: u32,
    /// Legs using it, plus one while a neighbour entry exists.
    refs: u32,
    present: bool,
    mac: Option<[u8; 6]>,
}

/// Control-plane state of one table. The trie stores each route's path list (its
/// "route" field) and result id; the exact-match index finds a route's trie node
/// without walking down, so most updates never descend the trie.
#[derive(Debug)]
struct Table {
    trie: Trie,
    index: RouteIndex,
    lpm: LpmWriter,
    v6: Table6,
}

/// The IPv6 half of a table: each prefix's path list, the trie of result ids the
/// lookup is built from, and the lookup's writer.
#[derive(Debug)]
struct Table6 {
    routes: HashMap<(u128, u8), u32>,
    /// Routes per prefix length, so a longest match tries only lengths in use.
    lens: [u32; 129],
    trie: Lpm6Trie,
    writer: TreeWriter,
    lpm: Arc<Tree>,
}

impl Table6 {
    fn new() -> Self {
        let trie = Lpm6Trie::new();
        let (writer, lpm) = TreeWriter::build(&trie);
        Self {
            routes: HashMap::default(),
            lens: [0; 129],
            trie,
            writer,
            lpm: Arc::new(lpm),
        }
    }

    /// The path list and length of the longest route covering `addr` no longer
    /// than `max_len`, skipping path lists `skip` refuses.
    fn longest_match(
        &self,
        addr: u128,
        max_len: u8,
        skip: impl Fn(u32) -> bool,
    ) -> Option<(u32, u8)> {
        (0..=max_len.min(128)).rev().find_map(|len| {
            if self.lens[usize::from(len)] == 0 {
                return None;
            }
            let pl = *self.routes.get(&(addr & mask6(len), len))?;
            (!skip(pl)).then_some((pl, len))
        })
    }

    fn memory_bytes(&self) -> usize {
        self.trie.memory_bytes() + self.routes.capacity() * 24
    }
}

#[derive(Clone, Copy, Debug)]
enum Arr {
    Lb,
    Buckets,
    Legs,
    Adj,
    Rw,
}

/// Memory held by the FIB, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Reader-visible LPM arrays of all tables (direct array, nodes, leaves).
    pub lpm_bytes: usize,
    /// Reader-visible forwarding arrays (load-balance, buckets, legs, adjacencies).
    pub fwd_bytes: usize,
    /// Writer-only state (tries, route slabs), approximate.
    pub control_bytes: usize,
}

impl MemoryUsage {
    /// Everything.
    pub fn total(&self) -> usize {
        self.lpm_bytes + self.fwd_bytes + self.control_bytes
    }
}

/// The FIB's single writer, owned by the control thread.
///
/// Every method applies one change and publishes it before returning (use
/// [`Fib::batch`] to publish many at once). Readers ([`FibReader`]) run concurrently
/// and never wait.
#[derive(Debug)]
pub struct Fib {
    shared: Arc<Shared>,
    planes: Arc<Planes>,
    republish: bool,
    retired: Vec<Arc<Planes>>,
    tables: BTreeMap<TableId, Table>,
    interfaces: HashMap<u32, Interface>,
    lb_alloc: BlockAlloc,
    bucket_alloc: BlockAlloc,
    leg_alloc: BlockAlloc,
    adj_alloc: BlockAlloc,
    rw_alloc: BlockAlloc,
    legs: HashMap<LegKey, LegEntry>,
    leg_keys: Vec<Option<LegKey>>,
    adjs: HashMap<(u32, IpAddr), AdjEntry>,
    /// Adjacency id → its (interface, neighbour): the reverse of `adjs`.
    adj_keys: HashMap<u32, (u32, IpAddr)>,
    pls: Vec<Option<PathList>>,
    /// Per path list id: (routes using it, result id) — what a route change needs,
    /// dense (8 bytes each) so it stays in cache where `pls` entries would miss.
    pl_hot: Vec<(u32, u32)>,
    pl_free: Vec<u32>,
    pl_index: HashMap<PlIndexKey, u32>,
    /// Per route, the path lists that resolve through it (a set: a per-prefix
    /// path list, one per labelled route, leaves its cover's set in O(1)).
    route_deps: HashMap<RouteKey, HashSet<u32>>,
    work: Vec<u32>,
    in_work: HashSet<u32>,
    batch: bool,
    since_reclaim: u32,
    /// Update counters of deleted tables.
    lpm_stats_gone: UpdateStats,
    /// Most path lists (result ids) held at once: see [`Fib::set_result_limit`].
    result_limit: usize,
    /// Routes refused because they needed a result past `result_limit`.
    results_refused: u64,
}

impl Default for Fib {
    fn default() -> Self {
        Self::new()
    }
}

fn new_allocs() -> [BlockAlloc; 5] {
    [
        BlockAlloc::new(INIT_LB, 1, 1),
        BlockAlloc::new(INIT_BUCKETS, 1, MAX_BUCKETS),
        BlockAlloc::new(INIT_LEGS, 1, 1),
        BlockAlloc::new(INIT_ADJ, 1, 1),
        BlockAlloc::new(INIT_RW, 1, 1),
    ]
}

fn init_sizes() -> Sizes {
    Sizes {
        lb: INIT_LB,
        buckets: INIT_BUCKETS,
        legs: INIT_LEGS * LEG_WORDS,
        adj: INIT_ADJ,
        rewrites: INIT_RW * RW_WORDS,
    }
}

impl Fib {
    /// An empty FIB with table 0.
    pub fn new() -> Self {
        let [lb_alloc, bucket_alloc, leg_alloc, adj_alloc, rw_alloc] = new_allocs();
        let planes = Arc::new(Planes::with_sizes(init_sizes()));
        let shared = Arc::new(Shared {
            current: Arc::new(ArcSwap::new(planes.clone())),
            qsbr: Qsbr::new(),
            version: AtomicU64::new(0),
        });
        let mut fib = Self {
            shared,
            planes,
            republish: false,
            retired: Vec::new(),
            tables: BTreeMap::new(),
            interfaces: HashMap::default(),
            lb_alloc,
            bucket_alloc,
            leg_alloc,
            adj_alloc,
            rw_alloc,
            legs: HashMap::default(),
            leg_keys: Vec::new(),
            adjs: HashMap::default(),
            adj_keys: HashMap::default(),
            pls: Vec::new(),
            pl_hot: Vec::new(),
            pl_free: Vec::new(),
            pl_index: HashMap::default(),
            route_deps: HashMap::default(),
            work: Vec::new(),
            in_work: HashSet::default(),
            batch: false,
            since_reclaim: 0,
            lpm_stats_gone: UpdateStats::default(),
            result_limit: MAX_RESULTS,
            results_refused: 0,
        };
        // Table 0 cannot fail to be created in an empty FIB.
        let _ = fib.table_add(0);
        fib
    }

    /// A new reader handle for a worker.
    pub fn reader(&self) -> FibReader {
        FibReader::new(self.shared.clone())
    }

    // ---- tables ----

    /// Creates table `id`.
    pub fn table_add(&mut self, id: TableId) -> Result<(), FibError> {
        if self.tables.contains_key(&id) {
            return Err(FibError::TableExists(id));
        }
        let (lpm, arena) = LpmWriter::new();
        let v6 = Table6::new();
        let flat = v6.lpm.clone();
        self.tables.insert(
            id,
            Table {
                trie: Trie::new(),
                index: RouteIndex::default(),
                lpm,
                v6,
            },
        );
        self.replace_planes(TableChange::Add(id, arena, flat));
        self.finish();
        Ok(())
    }

    /// Removes table `id` and all its routes (not table 0).
    pub fn table_del(&mut self, id: TableId) -> Result<(), FibError> {
        if id == 0 {
            return Err(FibError::DefaultTable);
        }
        let t = self.tables.get(&id).ok_or(FibError::UnknownTable(id))?;
        // Routes of other tables whose next hops are looked up in this one.
        let user = self.pls.iter().flatten().find_map(|p| match &p.key.kind {
            RouteKind::Paths(ps)
                if p.key.table != id && ps.iter().any(|x| x.via_table == Some(id)) =>
            {
                Some(p.key.table)
            }
            _ => None,
        });
        if let Some(user) = user {
            return Err(FibError::TableInUse(id, user));
        }
        let prefixes: Vec<Ipv4Prefix> = t
            .index
            .keys()
            .filter_map(|(a, l)| Ipv4Prefix::new(std::net::Ipv4Addr::from(a), l).ok())
            .collect();
        let prefixes6: Vec<Ipv6Prefix> =
            t.v6.routes
                .keys()
                .filter_map(|&(a, l)| Ipv6Prefix::new(a.into(), l).ok())
                .collect();
        let was = self.batch;
        self.batch = true;
        for p in prefixes {
            self.route_del(id, p)?;
        }
        for p in prefixes6 {
            self.route6_del(id, p)?;
        }
        self.batch = was;
        if let Some(t) = self.tables.remove(&id) {
            self.lpm_stats_gone += t.lpm.stats();
        }
        self.replace_planes(TableChange::Drop(id));
        self.finish();
        Ok(())
    }

    /// Table ids.
    pub fn tables(&self) -> impl Iterator<Item = TableId> + '_ {
        self.tables.keys().copied()
    }

    // ---- interfaces and neighbours ----

    /// Adds or changes an interface; adjacencies on it are rewritten.
    pub fn interface_set(&mut self, ifindex: u32, iface: Interface) {
        self.interfaces.insert(ifindex, iface);
        let ids: Vec<(u32, IpAddr, Option<[u8; 6]>)> = self
            .adjs
            .iter()
            .filter(|(k, _)| k.0 == ifindex)
            .map(|(k, e)| (e.id, k.1, e.mac))
            .collect();
        for (id, nbr, mac) in ids {
            self.adj_write(id, ifindex, nbr, mac);
        }
        self.finish();
    }

    /// Removes an interface no adjacency or route uses.
    pub fn interface_del(&mut self, ifindex: u32) -> Result<(), FibError> {
        if !self.interfaces.contains_key(&ifindex) {
            return Err(FibError::UnknownInterface(ifindex));
        }
        let used_adj = self.adjs.keys().any(|k| k.0 == ifindex);
        let used_route = self.pls.iter().flatten().any(|p| match &p.key.kind {
            RouteKind::Connected { ifindex: i } => *i == ifindex,
            RouteKind::Paths(ps) => ps.iter().any(|p| p.ifindex == Some(ifindex)),
            _ => false,
        });
        if used_adj || used_route {
            return Err(FibError::InterfaceInUse(ifindex));
        }
        self.interfaces.remove(&ifindex);
        Ok(())
    }

    /// Learns or refreshes a neighbour (ARP/ND or netlink): `mac = None` marks it
    /// incomplete. Every route using the adjacency sees the change at once.
    pub fn neighbor_set(
        &mut self,
        ifindex: u32,
        addr: IpAddr,
        mac: Option<[u8; 6]>,
    ) -> Result<u32, FibError> {
        if !self.interfaces.contains_key(&ifindex) {
            return Err(FibError::UnknownInterface(ifindex));
        }
        let id = self.adj_ref(ifindex, addr);
        if let Some(e) = self.adjs.get_mut(&(ifindex, addr)) {
            if e.present {
                e.refs -= 1; // the neighbour entry already held a reference
            }
            e.present = true;
            e.mac = mac;
        }
        self.adj_write(id, ifindex, addr, mac);
        self.finish();
        Ok(id)
    }

    /// Forgets a neighbour: its adjacency becomes incomplete (or goes when unused).
    pub fn neighbor_del(&mut self, ifindex: u32, addr: IpAddr) -> Result<(), FibError> {
        let Some(e) = self.adjs.get_mut(&(ifindex, addr)) else {
            return Err(FibError::UnknownNeighbor(ifindex, addr));
        };
        if !e.present {
            return Err(FibError::UnknownNeighbor(ifindex, addr));
        }
        e.present = false;
        e.mac = None;
        let id = e.id;
        self.adj_write(id, ifindex, addr, None);
        self.adj_unref(ifindex, addr);
        self.finish();
        Ok(())
    }

    /// The adjacency id of neighbour `addr` on `ifindex`, if one exists.
    pub fn adjacency_id(&self, ifindex: u32, addr: IpAddr) -> Option<u32> {
        self.adjs.get(&(ifindex, addr)).map(|e| e.id)
    }

    /// The interface and neighbour of adjacency `id`, if it exists.
    pub fn adjacency_key(&self, id: u32) -> Option<(u32, IpAddr)> {
        self.adj_keys.get(&id).copied()
    }

    /// Takes a reference on the adjacency of `addr` on `ifindex` (creating an
    /// incomplete one if there is none) for a user outside this FIB's routes, such as
    /// an MPLS label entry: the adjacency keeps its id until
    /// [`Fib::adjacency_release`], whatever happens to the routes and the neighbour
    /// entry that share it (the id is never reused under the label).
    pub fn adjacency_hold(&mut self, ifindex: u32, addr: IpAddr) -> Result<u32, FibError> {
        if !self.interfaces.contains_key(&ifindex) {
            return Err(FibError::UnknownInterface(ifindex));
        }
        let id = self.adj_ref(ifindex, addr);
        self.finish();
        Ok(id)
    }

    /// Gives back a reference taken with [`Fib::adjacency_hold`]; the adjacency goes
    /// when nothing else uses it. Unknown adjacencies are ignored.
    pub fn adjacency_release(&mut self, ifindex: u32, addr: IpAddr) {
        self.adj_unref(ifindex, addr);
        self.finish();
    }

    /// Caps the distinct results (path lists: one per distinct set of paths in a
    /// table) held at once; a route that needs one more is refused with
    /// [`FibError::ResultsFull`] and counted ([`Fib::results_refused`]). The default
    /// and the most is [`MAX_RESULTS`]; a lower cap bounds memory (about 400 bytes
    /// per result with the control state, see the README's limits).
    pub fn set_result_limit(&mut self, limit: usize) {
        self.result_limit = limit.min(MAX_RESULTS);
    }

    /// Distinct results held (path lists).
    pub fn result_count(&self) -> usize {
        self.pl_index.len()
    }

    /// Routes refused since the FIB was made because the result limit was reached.
    pub fn results_refused(&self) -> u64 {
        self.results_refused
    }

    /// Memory held, by part.
    pub fn memory(&self) -> MemoryUsage {
        let (lpm_bytes, fwd_bytes) = self.planes.memory_bytes();
        let control_bytes = self
            .tables
            .values()
            .map(|t| t.trie.memory_bytes() + t.index.memory_bytes() + t.v6.memory_bytes())
            .sum::<usize>()
            + self.pls.capacity() * size_of::<Option<PathList>>()
            + self.pl_hot.capacity() * 8
            + self.leg_keys.capacity() * size_of::<Option<LegKey>>();
        MemoryUsage {
            lpm_bytes,
            fwd_bytes,
            control_bytes,
        }
    }

    /// Number of live path lists (result ids in use).
    pub fn path_list_count(&self) -> usize {
        self.pl_index.len()
    }

    /// How the lookup structures took the route changes so far (all tables, including
    /// deleted ones).
    pub fn update_stats(&self) -> UpdateStats {
        let mut s = self.lpm_stats_gone;
        for t in self.tables.values() {
            s += t.lpm.stats();
        }
        s
    }
}
