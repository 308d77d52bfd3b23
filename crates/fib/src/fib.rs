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
use crate::lpm::{LpmArena, LpmWriter, UpdateStats};
use crate::model::{
    Action, FibError, Interface, Ipv4Prefix, MAX_LABELS, Path, RouteKind, TableId, Via, check_paths,
};
use crate::qsbr::Qsbr;
use crate::reader::{
    FibReader, LEG_IMPLICIT_NULL, LEG_WORDS, Planes, RW_COMPLETE, RW_NBR_V4, RW_WORDS, Shared,
    Sizes, VLAN_TAGGED,
};
use crate::trie::{NIL, Trie};

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

type RouteKey = (TableId, u32, u8);

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

fn mac_word(m: [u8; 6]) -> u64 {
    u64::from_be_bytes([0, 0, m[0], m[1], m[2], m[3], m[4], m[5]])
}

/// Bucket count for `n` legs: a power of two, stable while `n` stays in one range.
fn bucket_count(n: usize) -> usize {
    if n <= 1 {
        1
    } else {
        (n.next_power_of_two() * BUCKETS_PER_LEG).clamp(64, MAX_BUCKETS)
    }
}

/// Fills `b` buckets with legs in proportion to their weights (largest remainder),
/// keeping every bucket of `prev` whose leg is still wanted, so flows on unchanged
/// legs stay where they are (minimal disruption).
fn assign_buckets(prev: &[u32], legs: &[(u32, u64)], b: usize) -> Vec<u32> {
    let total: u128 = legs.iter().map(|l| u128::from(l.1)).sum::<u128>().max(1);
    let mut target: Vec<usize> = Vec::with_capacity(legs.len());
    let mut rems: Vec<(u128, usize)> = Vec::with_capacity(legs.len());
    for (i, &(_, w)) in legs.iter().enumerate() {
        let x = u128::from(w) * b as u128;
        target.push((x / total) as usize);
        rems.push((x % total, i));
    }
    let mut left = b - target.iter().sum::<usize>();
    rems.sort_by(|a, c| c.0.cmp(&a.0).then(a.1.cmp(&c.1)));
    for &(_, i) in &rems {
        if left == 0 {
            break;
        }
        target[i] += 1;
        left -= 1;
    }
    let mut count = vec![0usize; legs.len()];
    let mut out = vec![u32::MAX; b];
    if prev.len() == b {
        let pos: HashMap<u32, usize> = legs.iter().enumerate().map(|(i, l)| (l.0, i)).collect();
        for (k, &p) in prev.iter().enumerate() {
            if let Some(&i) = pos.get(&p) {
                if count[i] < target[i] {
                    out[k] = p;
                    count[i] += 1;
                }
            }
        }
    }
    // Hand out the free buckets round-robin among legs below their target.
    let mut i = 0usize;
    for o in out.iter_mut().filter(|o| **o == u32::MAX) {
        let mut guard = 0;
        while count[i] >= target[i] && guard <= legs.len() {
            i = (i + 1) % legs.len();
            guard += 1;
        }
        *o = legs[i].0;
        count[i] += 1;
        i = (i + 1) % legs.len();
    }
    out
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
        self.tables.insert(
            id,
            Table {
                trie: Trie::new(),
                index: RouteIndex::default(),
                lpm,
            },
        );
        self.replace_planes(None, Some((id, arena)), None);
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
        let was = self.batch;
        self.batch = true;
        for p in prefixes {
            self.route_del(id, p)?;
        }
        self.batch = was;
        if let Some(t) = self.tables.remove(&id) {
            self.lpm_stats_gone += t.lpm.stats();
        }
        self.replace_planes(None, None, Some(id));
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

    // ---- routes ----

    /// Adds or replaces the route for `prefix` in `table`. Returns its result id (the
    /// value lookups return for addresses it covers).
    pub fn route_add(
        &mut self,
        table: TableId,
        prefix: Ipv4Prefix,
        kind: RouteKind,
    ) -> Result<u32, FibError> {
        if !self.tables.contains_key(&table) {
            return Err(FibError::UnknownTable(table));
        }
        match &kind {
            RouteKind::Paths(ps) => {
                check_paths(ps)?;
                if let Some(i) = ps
                    .iter()
                    .filter_map(|p| p.ifindex)
                    .find(|i| !self.interfaces.contains_key(i))
                {
                    return Err(FibError::UnknownInterface(i));
                }
                if let Some(t) = ps
                    .iter()
                    .filter_map(|p| p.via_table)
                    .find(|t| !self.tables.contains_key(t))
                {
                    return Err(FibError::UnknownTable(t));
                }
            }
            RouteKind::Connected { ifindex } if !self.interfaces.contains_key(ifindex) => {
                return Err(FibError::UnknownInterface(*ifindex));
            }
            _ => {}
        }
        let existing = self
            .tables
            .get(&table)
            .and_then(|t| t.index.get(prefix.addr_u32(), prefix.prefix_len()));
        let seed = existing.map(|e| e.pl);
        let pl = self.pl_acquire(PlKey { table, kind }, seed)?;
        let fwd = self.pl_hot.get(pl as usize).map_or(0, |h| h.1);
        let (addr, len) = (prefix.addr_u32(), prefix.prefix_len());
        let rk = (table, addr, len);
        let Some(t) = self.tables.get_mut(&table) else {
            return Err(FibError::UnknownTable(table));
        };
        if let Some(e) = existing {
            let old = e.pl;
            if old == pl {
                self.pl_release(pl);
            } else {
                t.index.insert(addr, len, RouteEntry { pl, node: e.node });
                t.trie.set_route(e.node, pl, fwd);
                t.lpm.mark(addr, len, e.node);
                self.queue_route_deps(rk, None);
                self.run_work();
                self.pl_release(old);
            }
        } else {
            let (node, _) = t.trie.insert(addr, len, pl, fwd);
            t.index.insert(addr, len, RouteEntry { pl, node });
            t.lpm.mark(addr, len, node);
            // Path lists that resolved a gateway inside the new prefix through a less
            // specific route now resolve through this one.
            // (Only when something resolves recursively: finding the cover walks the trie.)
            let cover = if len > 0 && !self.route_deps.is_empty() {
                t.trie
                    .longest_match(addr, len - 1, |_| false)
                    .and_then(|(_, l)| Ipv4Prefix::new_truncated(prefix.addr(), l).ok())
            } else {
                None
            };
            let ck = cover.map_or((table, 0, 0), |c| (table, c.addr_u32(), c.prefix_len()));
            self.queue_route_deps(ck, Some(prefix));
            self.queue_route_deps(rk, None);
            self.run_work();
        }
        self.finish();
        Ok(fwd)
    }

    /// Removes the route for `prefix` from `table`.
    pub fn route_del(&mut self, table: TableId, prefix: Ipv4Prefix) -> Result<(), FibError> {
        let t = self
            .tables
            .get_mut(&table)
            .ok_or(FibError::UnknownTable(table))?;
        let (addr, len) = (prefix.addr_u32(), prefix.prefix_len());
        let pl = t
            .trie
            .remove(addr, len)
            .ok_or(FibError::NoSuchRoute(prefix, table))?;
        t.lpm.mark(addr, len, NIL);
        t.index.remove(addr, len);
        if t.trie.len() == 0 {
            t.index = RouteIndex::default();
        }
        self.queue_route_deps((table, addr, len), None);
        self.run_work();
        self.pl_release(pl);
        self.finish();
        Ok(())
    }

    /// The result id of the route for exactly `prefix`, if present.
    pub fn route(&self, table: TableId, prefix: Ipv4Prefix) -> Option<u32> {
        let t = self.tables.get(&table)?;
        let e = t.index.get(prefix.addr_u32(), prefix.prefix_len())?;
        self.pl(e.pl).map(|p| p.fwd)
    }

    /// The length of the route a lookup of `addr` in `table` finds (its longest
    /// match), if any.
    pub fn match_len(&self, table: TableId, addr: u32) -> Option<u8> {
        let t = self.tables.get(&table)?;
        t.trie
            .longest_match(addr, 32, |_| false)
            .map(|(_, len)| len)
    }

    /// Number of routes in `table` (0 for an unknown table).
    pub fn route_count(&self, table: TableId) -> usize {
        self.tables.get(&table).map_or(0, |t| t.trie.len())
    }

    /// Starts a batch: changes are applied to the control state at once but the
    /// lookup structure is rebuilt and published once, at [`Batch::commit`] (or when
    /// the batch is dropped). Use it for bulk loads and netlink bursts.
    pub fn batch(&mut self) -> Batch<'_> {
        self.batch = true;
        Batch { fib: self }
    }

    /// Holds publication back until the matching [`Fib::release`]: the changes
    /// in between reach the lookup structure together. Returns whether it was
    /// held already (pass that to `release`). The borrow-free form of
    /// [`Fib::batch`], for callers that own the FIB inside a larger state.
    pub fn hold(&mut self) -> bool {
        std::mem::replace(&mut self.batch, true)
    }

    /// Ends a [`Fib::hold`]; publishes unless an outer hold is still on.
    pub fn release(&mut self, was_held: bool) {
        self.batch = was_held;
        if !was_held {
            self.commit(true);
        }
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
            .map(|t| t.trie.memory_bytes() + t.index.memory_bytes())
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

    // ---- internals: publication ----

    fn finish(&mut self) {
        if !self.batch {
            self.commit(false);
        }
    }

    fn commit(&mut self, force_reclaim: bool) {
        let tag = self.shared.qsbr.next_epoch();
        // Table by table without collecting the ids (no allocation per publication).
        let mut next = self.tables.keys().next().copied();
        while let Some(id) = next {
            next = self
                .tables
                .range((std::ops::Bound::Excluded(id), std::ops::Bound::Unbounded))
                .next()
                .map(|(k, _)| *k);
            let Some(t) = self.tables.get_mut(&id) else {
                continue;
            };
            let mut replace = None;
            if t.lpm.has_dirty() {
                if let Some(arena) = self.planes.table(id) {
                    replace = t.lpm.commit(&t.trie, arena, tag);
                }
            }
            if let Some(a) = replace {
                self.replace_planes(Some((id, a)), None, None);
            }
            let Some(t) = self.tables.get_mut(&id) else {
                continue;
            };
            if t.lpm.wants_compaction() {
                let a = t.lpm.rebuild_all(&t.trie);
                self.replace_planes(Some((id, a)), None, None);
            }
        }
        self.maybe_shrink_fwd();
        if self.republish {
            self.shared.current.store(self.planes.clone());
            self.republish = false;
        }
        // Everything of this change is visible: readers that keep decoded
        // answers drop them (see `FibView::version`).
        let v = self.shared.version.load(Ordering::Relaxed);
        self.shared.version.store(v + 1, Ordering::Release);
        // Ending a grace period touches cache lines every reader writes; amortise it
        // over several single updates. Until then freed slots just wait longer.
        self.since_reclaim += 1;
        if self.since_reclaim < RECLAIM_EVERY && !force_reclaim {
            return;
        }
        self.since_reclaim = 0;
        self.shared.qsbr.advance();
        let safe = self.shared.qsbr.safe_epoch();
        for a in [
            &mut self.lb_alloc,
            &mut self.bucket_alloc,
            &mut self.leg_alloc,
            &mut self.adj_alloc,
            &mut self.rw_alloc,
        ] {
            a.reclaim(safe);
        }
        for t in self.tables.values_mut() {
            t.lpm.reclaim(safe);
        }
        self.retired.retain(|p| Arc::strong_count(p) > 1);
    }

    /// Deep-copies the planes (sizes from the allocators) and switches to the copy.
    fn replace_planes(
        &mut self,
        replace: Option<(TableId, LpmArena)>,
        add: Option<(TableId, LpmArena)>,
        drop_table: Option<TableId>,
    ) {
        let s = Sizes {
            lb: self.lb_alloc.cap(),
            buckets: self.bucket_alloc.cap(),
            legs: self.leg_alloc.cap() * LEG_WORDS,
            adj: self.adj_alloc.cap(),
            rewrites: self.rw_alloc.cap() * RW_WORDS,
        };
        let new = Arc::new(self.planes.copy(s, replace, add, drop_table));
        let old = std::mem::replace(&mut self.planes, new);
        self.retired.push(old);
        self.republish = true;
    }

    /// When nothing is left in the forwarding arrays, shrink them back.
    fn maybe_shrink_fwd(&mut self) {
        let empty = self.lb_alloc.live() == 0
            && self.leg_alloc.live() == 0
            && self.adj_alloc.live() == 0
            && self.bucket_alloc.live() == 0
            && self.rw_alloc.live() == 0;
        let big = self.lb_alloc.cap() > INIT_LB
            || self.bucket_alloc.cap() > INIT_BUCKETS
            || self.leg_alloc.cap() > INIT_LEGS
            || self.adj_alloc.cap() > INIT_ADJ
            || self.rw_alloc.cap() > INIT_RW;
        if empty && big {
            [
                self.lb_alloc,
                self.bucket_alloc,
                self.leg_alloc,
                self.adj_alloc,
                self.rw_alloc,
            ] = new_allocs();
            self.leg_keys = Vec::new();
            self.pls = Vec::new();
            self.pl_hot = Vec::new();
            self.pl_free = Vec::new();
            self.legs.shrink_to_fit();
            self.pl_index.shrink_to_fit();
            self.route_deps.shrink_to_fit();
            self.replace_planes(None, None, None);
        }
    }

    fn alloc(&mut self, which: Arr, size: usize) -> u32 {
        loop {
            let a = match which {
                Arr::Lb => &mut self.lb_alloc,
                Arr::Buckets => &mut self.bucket_alloc,
                Arr::Legs => &mut self.leg_alloc,
                Arr::Adj => &mut self.adj_alloc,
                Arr::Rw => &mut self.rw_alloc,
            };
            match a.alloc(size) {
                Ok(b) => return b,
                Err(need) => {
                    let cap = (a.cap() * 2).max(need);
                    a.set_cap(cap);
                    self.replace_planes(None, None, None);
                }
            }
        }
    }

    fn retire(&mut self, which: Arr, base: u32, size: usize) {
        let tag = self.shared.qsbr.next_epoch();
        let a = match which {
            Arr::Lb => &mut self.lb_alloc,
            Arr::Buckets => &mut self.bucket_alloc,
            Arr::Legs => &mut self.leg_alloc,
            Arr::Adj => &mut self.adj_alloc,
            Arr::Rw => &mut self.rw_alloc,
        };
        a.retire(base, size, tag);
    }

    // ---- internals: adjacencies and legs ----

    fn adj_ref(&mut self, ifindex: u32, nbr: IpAddr) -> u32 {
        if let Some(e) = self.adjs.get_mut(&(ifindex, nbr)) {
            e.refs += 1;
            return e.id;
        }
        let id = self.alloc(Arr::Adj, 1);
        // A reused id still points at its previous owner's (already retired) rewrite.
        self.planes.adj[id as usize].store(0, Ordering::Relaxed);
        self.adj_keys.insert(id, (ifindex, nbr));
        self.adjs.insert(
            (ifindex, nbr),
            AdjEntry {
                id,
                refs: 1,
                present: false,
                mac: None,
            },
        );
        self.adj_write(id, ifindex, nbr, None);
        id
    }

    fn adj_unref(&mut self, ifindex: u32, nbr: IpAddr) {
        let Some(e) = self.adjs.get_mut(&(ifindex, nbr)) else {
            return;
        };
        e.refs -= 1;
        if e.refs == 0 {
            let id = e.id;
            self.adjs.remove(&(ifindex, nbr));
            self.adj_keys.remove(&id);
            let slot = self.planes.adj[id as usize].load(Ordering::Relaxed);
            self.retire(Arr::Rw, slot, 1);
            self.retire(Arr::Adj, id, 1);
        }
    }

    /// Writes a new rewrite for adjacency `id` and swings its pointer.
    fn adj_write(&mut self, id: u32, ifindex: u32, nbr: IpAddr, mac: Option<[u8; 6]>) {
        let iface = self.interfaces.get(&ifindex).copied().unwrap_or(Interface {
            mac: [0; 6],
            mtu: 0,
            vlan: None,
        });
        let slot = self.alloc(Arr::Rw, 1);
        let p = &self.planes;
        let b = slot as usize * RW_WORDS;
        let w0 = mac.map_or(0, |m| mac_word(m) | RW_COMPLETE);
        let vlan = iface
            .vlan
            .map_or(0, |v| (u64::from(v) & 0xfff) | VLAN_TAGGED);
        p.rewrites[b].store(w0, Ordering::Relaxed);
        p.rewrites[b + 1].store(mac_word(iface.mac) | vlan << 48, Ordering::Relaxed);
        p.rewrites[b + 2].store(
            u64::from(ifindex) | u64::from(iface.mtu) << 32,
            Ordering::Relaxed,
        );
        // The neighbour's address, so the data plane can ARP for it while the
        // adjacency is incomplete (IPv6 neighbours are resolved by ND elsewhere).
        let nbr_word = match nbr {
            IpAddr::V4(a) => u64::from(u32::from(a)) | RW_NBR_V4,
            IpAddr::V6(_) => 0,
        };
        p.rewrites[b + 3].store(nbr_word, Ordering::Relaxed);
        let old = p.adj[id as usize].swap(slot, Ordering::AcqRel);
        if old != 0 {
            self.retire(Arr::Rw, old, 1);
        }
    }

    /// The implicit-null label (RFC 3032): flagged in the leg header for readers.
    const IMPLICIT_NULL: u32 = 3;

    fn leg_acquire(&mut self, key: LegKey) -> u32 {
        if let Some(e) = self.legs.get_mut(&key) {
            e.refs += 1;
            return e.id;
        }
        let target = match (key.action, key.nbr) {
            (Action::Forward, Some(n)) => self.adj_ref(key.ifindex, n),
            (Action::Glean, _) => key.ifindex,
            _ => 0,
        };
        let id = self.alloc(Arr::Legs, 1);
        let b = id as usize * LEG_WORDS;
        let w = &self.planes.legs[b..b + LEG_WORDS];
        let n = key.labels.len().min(MAX_LABELS);
        let implicit_null = key.labels.iter().take(n).any(|&l| l == Self::IMPLICIT_NULL);
        let flags = if implicit_null { LEG_IMPLICIT_NULL } else { 0 };
        w[0].store(
            key.action as u32 | (n as u32) << 8 | flags,
            Ordering::Relaxed,
        );
        w[1].store(target, Ordering::Relaxed);
        // (the words past the last label are 0: see `Leg::plain_labels`)
        for (i, x) in w[2..].iter().enumerate() {
            x.store(key.labels.get(i).copied().unwrap_or(0), Ordering::Relaxed);
        }
        if self.leg_keys.len() <= id as usize {
            self.leg_keys.resize(id as usize + 1, None);
        }
        self.leg_keys[id as usize] = Some(key.clone());
        self.legs.insert(key, LegEntry { id, refs: 1 });
        id
    }

    fn leg_release(&mut self, id: u32) {
        let Some(key) = self.leg_keys.get(id as usize).cloned().flatten() else {
            return;
        };
        let Some(e) = self.legs.get_mut(&key) else {
            return;
        };
        e.refs -= 1;
        if e.refs == 0 {
            self.legs.remove(&key);
            self.leg_keys[id as usize] = None;
            self.retire(Arr::Legs, id, 1);
            if let (Action::Forward, Some(n)) = (key.action, key.nbr) {
                self.adj_unref(key.ifindex, n);
            }
        }
    }

    // ---- internals: path lists ----

    fn pl(&self, id: u32) -> Option<&PathList> {
        self.pls.get(id as usize).and_then(Option::as_ref)
    }

    /// The path list for `key` (one more route on it), made if new; a new one
    /// past the result limit is refused and counted.
    fn pl_acquire(&mut self, key: PlKey, seed: Option<u32>) -> Result<u32, FibError> {
        let key = PlIndexKey::from(key);
        if let Some(&id) = self.pl_index.get(&key) {
            if let Some(h) = self.pl_hot.get_mut(id as usize) {
                h.0 += 1;
            }
            return Ok(id);
        }
        if self.pl_index.len() >= self.result_limit {
            self.results_refused += 1;
            return Err(FibError::ResultsFull(self.result_limit));
        }
        let fwd = self.alloc(Arr::Lb, 1);
        let pl = PathList {
            key: key.key(),
            fwd,
            legs: Vec::new(),
            buckets: Vec::new(),
            bucket_base: 0,
            seed: seed
                .and_then(|s| self.pl(s))
                .map(|s| s.buckets.clone())
                .unwrap_or_default(),
            via: Vec::new(),
            dependents: HashSet::default(),
        };
        let id = if let Some(i) = self.pl_free.pop() {
            self.pls[i as usize] = Some(pl);
            i
        } else {
            self.pls.push(Some(pl));
            (self.pls.len() - 1) as u32
        };
        if self.pl_hot.len() <= id as usize {
            self.pl_hot.resize(id as usize + 1, (0, 0));
        }
        self.pl_hot[id as usize] = (1, fwd);
        self.pl_index.insert(key, id);
        self.recompute(id);
        self.run_work();
        Ok(id)
    }

    fn pl_release(&mut self, id: u32) {
        let Some(h) = self.pl_hot.get_mut(id as usize) else {
            return;
        };
        if h.0 == 0 {
            return; // not in use
        }
        h.0 -= 1;
        if h.0 > 0 {
            return;
        }
        let Some(p) = self.pls.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        self.pl_free.push(id);
        self.pl_index.remove(&PlIndexKey::from(p.key));
        self.unlink_via(id, &p.via);
        self.retire(Arr::Lb, p.fwd, 1);
        if !p.buckets.is_empty() {
            self.retire(Arr::Buckets, p.bucket_base, p.buckets.len());
        }
        for (leg, _) in p.legs {
            self.leg_release(leg);
        }
        for d in p.dependents {
            self.push_work(d);
        }
        self.run_work();
    }

    fn unlink_via(&mut self, id: u32, via: &[(RouteKey, u32)]) {
        for (rk, y) in via {
            if let Some(v) = self.route_deps.get_mut(rk) {
                v.remove(&id);
                if v.is_empty() {
                    self.route_deps.remove(rk);
                }
            }
            if let Some(Some(yp)) = self.pls.get_mut(*y as usize) {
                yp.dependents.remove(&id);
            }
        }
    }

    fn push_work(&mut self, id: u32) {
        if self.in_work.insert(id) {
            self.work.push(id);
        }
    }

    /// Queues the path lists that resolved through route `rk`; with `inside`, only
    /// those with a recursive gateway inside that prefix.
    fn queue_route_deps(&mut self, rk: RouteKey, inside: Option<Ipv4Prefix>) {
        let Some(list) = self.route_deps.get(&rk) else {
            return;
        };
        let list: Vec<u32> = list.iter().copied().collect();
        for id in list {
            let hit = match (inside, self.pl(id)) {
                (None, _) => true,
                (Some(pfx), Some(p)) => match &p.key.kind {
                    RouteKind::Paths(ps) => ps.iter().any(|x| match x.via {
                        Via::Gateway(gw) => x.ifindex.is_none() && pfx.contains(u32::from(gw)),
                        _ => false,
                    }),
                    _ => false,
                },
                _ => false,
            };
            if hit {
                self.push_work(id);
            }
        }
    }

    fn run_work(&mut self) {
        // Resolution never follows a cycle (see `depends_on`), so this terminates; the
        // bound only protects against a bug turning into a hang.
        let mut budget = 64 * (self.pls.len() + 16);
        while let Some(id) = self.work.pop() {
            self.in_work.remove(&id);
            if budget == 0 {
                self.work.clear();
                self.in_work.clear();
                break;
            }
            budget -= 1;
            if self.pl(id).is_some() {
                self.recompute(id);
            }
        }
    }

    /// True if path list `a` resolves (transitively) through path list `target`.
    fn depends_on(&self, a: u32, target: u32, depth: usize) -> bool {
        if a == target {
            return true;
        }
        if depth >= MAX_DEPTH {
            return true; // too deep: treat as a cycle
        }
        self.pl(a).is_some_and(|p| {
            p.via
                .iter()
                .any(|&(_, y)| y != NIL && self.depends_on(y, target, depth + 1))
        })
    }

    /// Resolves one path of path list `id` into weighted legs.
    fn resolve_path(
        &self,
        id: u32,
        table: TableId,
        p: &Path,
        specs: &mut Vec<(LegKey, u64)>,
        via: &mut Vec<(RouteKey, u32)>,
    ) {
        let w = u64::from(p.weight) * SCALE;
        let fwd = |ifindex, nbr| LegKey {
            action: Action::Forward,
            ifindex,
            nbr: Some(nbr),
            labels: p.labels.clone(),
        };
        match (p.via, p.ifindex) {
            (Via::Gateway(gw), Some(i)) => specs.push((fwd(i, IpAddr::V4(gw)), w)),
            (Via::Gateway6(gw), Some(i)) => specs.push((fwd(i, IpAddr::V6(gw)), w)),
            (Via::Attached, Some(i)) => specs.push((
                LegKey {
                    action: Action::Glean,
                    ifindex: i,
                    nbr: None,
                    labels: p.labels.clone(),
                },
                w,
            )),
            (Via::Gateway(gw), None) => {
                let table = p.via_table.unwrap_or(table);
                let Some(t) = self.tables.get(&table) else {
                    return;
                };
                let g = u32::from(gw);
                let hit = t.trie.longest_match(g, 32, |rp| self.depends_on(rp, id, 0));
                let Some((rpl, rlen)) = hit else {
                    via.push(((table, 0, 0), NIL));
                    return;
                };
                via.push(((table, g & crate::model::mask(rlen), rlen), rpl));
                let Some(y) = self.pl(rpl) else {
                    return;
                };
                match &y.key.kind {
                    RouteKind::Connected { ifindex } => {
                        specs.push((fwd(*ifindex, IpAddr::V4(gw)), w));
                    }
                    RouteKind::Paths(_) => {
                        let sum: u128 = y.legs.iter().map(|l| u128::from(l.1)).sum::<u128>().max(1);
                        for &(leg, lw) in &y.legs {
                            let Some(Some(k)) = self.leg_keys.get(leg as usize) else {
                                continue;
                            };
                            let (ifindex, nbr) = match k.action {
                                Action::Forward => (k.ifindex, k.nbr),
                                Action::Glean => (k.ifindex, Some(IpAddr::V4(gw))),
                                _ => continue,
                            };
                            // Outer labels (from the route resolved through) on top.
                            let mut labels = k.labels.clone();
                            labels.extend_from_slice(&p.labels);
                            if labels.len() > MAX_LABELS {
                                continue;
                            }
                            let share = (u128::from(w) * u128::from(lw) / sum).max(1) as u64;
                            specs.push((
                                LegKey {
                                    action: Action::Forward,
                                    ifindex,
                                    nbr,
                                    labels,
                                },
                                share,
                            ));
                        }
                    }
                    _ => {}
                }
            }
            // Rejected by validation.
            (_, None) => {}
        }
    }

    /// Re-resolves path list `id`, rewrites its buckets, and queues its dependents if
    /// its legs changed.
    fn recompute(&mut self, id: u32) {
        let Some(p) = self.pl(id) else {
            return;
        };
        let table = p.key.table;
        let kind = p.key.kind.clone();
        let mut specs: Vec<(LegKey, u64)> = Vec::new();
        let mut via: Vec<(RouteKey, u32)> = Vec::new();
        let special = |action| LegKey {
            action,
            ifindex: 0,
            nbr: None,
            labels: Vec::new(),
        };
        match &kind {
            RouteKind::Blackhole => specs.push((special(Action::Drop), SCALE)),
            RouteKind::Unreachable => specs.push((special(Action::Unreachable), SCALE)),
            RouteKind::Prohibit => specs.push((special(Action::Prohibit), SCALE)),
            RouteKind::Local => specs.push((special(Action::Local), SCALE)),
            RouteKind::Connected { ifindex } => specs.push((
                LegKey {
                    action: Action::Glean,
                    ifindex: *ifindex,
                    nbr: None,
                    labels: Vec::new(),
                },
                SCALE,
            )),
            RouteKind::Paths(ps) => {
                for path in ps {
                    self.resolve_path(id, table, path, &mut specs, &mut via);
                }
            }
        }
        // Merge equal legs.
        specs.sort_by(|a, b| format_key(&a.0).cmp(&format_key(&b.0)));
        let mut merged: Vec<(LegKey, u64)> = Vec::with_capacity(specs.len());
        for (k, w) in specs {
            match merged.last_mut() {
                Some(last) if last.0 == k => last.1 += w,
                _ => merged.push((k, w)),
            }
        }
        merged.truncate(MAX_BUCKETS);
        if merged.is_empty() {
            merged.push((special(Action::NoRoute), SCALE));
        }
        let mut legs: Vec<(u32, u64)> = Vec::with_capacity(merged.len());
        for (k, w) in merged {
            legs.push((self.leg_acquire(k), w));
        }
        legs.sort_unstable();
        let Some(p) = self.pl(id) else {
            return;
        };
        let nb = bucket_count(legs.len());
        let prev = if p.buckets.is_empty() {
            &p.seed
        } else {
            &p.buckets
        };
        let buckets = assign_buckets(prev, &legs, nb);
        let (fwd, old_base, old_buckets) = (p.fwd, p.bucket_base, p.buckets.clone());
        let base = if old_buckets.len() == nb {
            let pl = &self.planes;
            for (k, (&new, &old)) in buckets.iter().zip(&old_buckets).enumerate() {
                if new != old {
                    pl.buckets[old_base as usize + k].store(new, Ordering::Release);
                }
            }
            old_base
        } else {
            let base = self.alloc(Arr::Buckets, nb);
            let pl = &self.planes;
            for (k, &b) in buckets.iter().enumerate() {
                pl.buckets[base as usize + k].store(b, Ordering::Relaxed);
            }
            let h = ((nb as u64 - 1) << 32) | u64::from(base);
            pl.lb[fwd as usize].store(h, Ordering::Release);
            if !old_buckets.is_empty() {
                self.retire(Arr::Buckets, old_base, old_buckets.len());
            }
            base
        };
        // Swap the dependency edges.
        let old_via = self.pl(id).map(|p| p.via.clone()).unwrap_or_default();
        self.unlink_via(id, &old_via);
        for (rk, y) in &via {
            self.route_deps.entry(*rk).or_default().insert(id);
            if let Some(Some(yp)) = self.pls.get_mut(*y as usize) {
                yp.dependents.insert(id);
            }
        }
        let Some(Some(p)) = self.pls.get_mut(id as usize) else {
            return;
        };
        let old_legs = std::mem::replace(&mut p.legs, legs);
        let changed = old_legs != p.legs;
        p.buckets = buckets;
        p.bucket_base = base;
        p.seed = Vec::new();
        p.via = via;
        let deps: Vec<u32> = if changed {
            p.dependents.iter().copied().collect()
        } else {
            Vec::new()
        };
        for (leg, _) in old_legs {
            self.leg_release(leg);
        }
        for d in deps {
            self.push_work(d);
        }
    }
}

/// A total order on leg keys for merging (Action has no Ord).
fn format_key(k: &LegKey) -> (u8, u32, Option<IpAddr>, &[u32]) {
    (k.action as u8, k.ifindex, k.nbr, &k.labels)
}

/// A set of changes published together; see [`Fib::batch`].
#[derive(Debug)]
pub struct Batch<'f> {
    fib: &'f mut Fib,
}

impl Batch<'_> {
    /// [`Fib::route_add`] without publishing yet.
    pub fn route_add(
        &mut self,
        table: TableId,
        prefix: Ipv4Prefix,
        kind: RouteKind,
    ) -> Result<u32, FibError> {
        self.fib.route_add(table, prefix, kind)
    }

    /// [`Fib::route_del`] without publishing yet.
    pub fn route_del(&mut self, table: TableId, prefix: Ipv4Prefix) -> Result<(), FibError> {
        self.fib.route_del(table, prefix)
    }

    /// Rebuilds what changed and publishes it.
    pub fn commit(self) {}
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.fib.batch = false;
        self.fib.commit(true);
    }
}
