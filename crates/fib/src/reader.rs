//! What workers see: one immutable-shape [`Planes`] snapshot per burst, read without
//! locks, and the [`FibReader`] / [`FibView`] handles.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use arc_swap::{ArcSwap, Cache};

use crate::arena::{grow32, grow64};
use crate::lpm::LpmArena;
use crate::lpm6::Tree;
use crate::model::{Action, Adjacency, MAX_LABELS, TableId};
use crate::qsbr::Qsbr;

/// 32-bit words per leg: header, target, labels.
pub(crate) const LEG_WORDS: usize = 16;
/// Leg header flag: some out-label is implicit null (3).
pub(crate) const LEG_IMPLICIT_NULL: u32 = 1 << 16;
/// 64-bit words per adjacency rewrite.
pub(crate) const RW_WORDS: usize = 4;
pub(crate) const RW_COMPLETE: u64 = 1 << 48;
/// Set in a rewrite's 4th word when it holds an IPv4 neighbour address.
pub(crate) const RW_NBR_V4: u64 = 1 << 32;
/// Set in a rewrite's 4th word when its slot's IPv6 neighbour address is in
/// [`Planes::nbr6`].
pub(crate) const RW_NBR_V6: u64 = 1 << 33;
pub(crate) const VLAN_TAGGED: u64 = 0x1000;

/// All arrays the data plane reads. Shapes never change once published: growing any
/// array means a deep copy that is published in its place.
#[derive(Debug)]
pub(crate) struct Planes {
    /// Per table, sorted by id.
    pub(crate) tables: Vec<(TableId, LpmArena)>,
    /// Per table, the IPv6 lookup (the same ids). Its arrays are changed in place
    /// and shared by successive snapshots; a grown one comes with a new snapshot.
    pub(crate) tables6: Vec<(TableId, Arc<Tree>)>,
    /// Result id → `mask << 32 | first bucket`.
    pub(crate) lb: Box<[AtomicU64]>,
    /// Bucket → leg.
    pub(crate) buckets: Box<[AtomicU32]>,
    /// [`LEG_WORDS`] per leg: `action | nlabels << 8 | flags` (flags from bit 16:
    /// [`LEG_IMPLICIT_NULL`]), target, labels, 0 in the words after the last.
    pub(crate) legs: Box<[AtomicU32]>,
    /// Adjacency id → rewrite slot.
    pub(crate) adj: Box<[AtomicU32]>,
    /// [`RW_WORDS`] per rewrite slot.
    pub(crate) rewrites: Box<[AtomicU64]>,
    /// Two words per rewrite slot: the IPv6 neighbour's address (high, low), for
    /// neighbour solicitation while the adjacency is incomplete.
    pub(crate) nbr6: Box<[AtomicU64]>,
}

/// A change of the tables a deep copy of the [`Planes`] makes.
pub(crate) enum TableChange {
    None,
    /// A new IPv4 lookup for a table.
    Replace4(TableId, LpmArena),
    /// A new (grown) IPv6 lookup for a table.
    Replace6(TableId, Arc<Tree>),
    Add(TableId, LpmArena, Arc<Tree>),
    Drop(TableId),
}

/// Sizes (in words) for a deep copy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizes {
    pub(crate) lb: usize,
    pub(crate) buckets: usize,
    pub(crate) legs: usize,
    pub(crate) adj: usize,
    pub(crate) rewrites: usize,
}

impl Planes {
    pub(crate) fn with_sizes(s: Sizes) -> Self {
        Self {
            tables: Vec::new(),
            tables6: Vec::new(),
            lb: grow64(&[], s.lb),
            buckets: grow32(&[], s.buckets),
            legs: grow32(&[], s.legs),
            adj: grow32(&[], s.adj),
            rewrites: grow64(&[], s.rewrites),
            nbr6: grow64(&[], s.rewrites / RW_WORDS * 2),
        }
    }

    /// Deep copy with new sizes and one change of the tables.
    pub(crate) fn copy(&self, s: Sizes, change: TableChange) -> Self {
        let mut tables: Vec<(TableId, LpmArena)> = Vec::with_capacity(self.tables.len() + 1);
        let mut tables6: Vec<(TableId, Arc<Tree>)> = Vec::with_capacity(self.tables.len() + 1);
        let mut change = Some(change);
        for ((id, a), (_, f)) in self.tables.iter().zip(&self.tables6) {
            let (a, f) = match change.take() {
                Some(TableChange::Drop(d)) if d == *id => continue,
                Some(TableChange::Replace4(r, ra)) if r == *id => (ra, f.clone()),
                Some(TableChange::Replace6(r, rf)) if r == *id => (a.copy(), rf),
                other => {
                    change = other;
                    (a.copy(), f.clone())
                }
            };
            tables.push((*id, a));
            tables6.push((*id, f));
        }
        if let Some(TableChange::Add(id, a, f)) = change {
            tables.push((id, a));
            tables6.push((id, f));
            tables.sort_by_key(|t| t.0);
            tables6.sort_by_key(|t| t.0);
        }
        Self {
            tables,
            tables6,
            lb: grow64(&self.lb, s.lb),
            buckets: grow32(&self.buckets, s.buckets),
            legs: grow32(&self.legs, s.legs),
            adj: grow32(&self.adj, s.adj),
            rewrites: grow64(&self.rewrites, s.rewrites),
            nbr6: grow64(&self.nbr6, s.rewrites / RW_WORDS * 2),
        }
    }

    pub(crate) fn table(&self, id: TableId) -> Option<&LpmArena> {
        if let Some((tid, a)) = self.tables.first() {
            if *tid == id {
                return Some(a);
            }
        }
        self.tables
            .binary_search_by_key(&id, |t| t.0)
            .ok()
            .map(|i| &self.tables[i].1)
    }

    pub(crate) fn table6(&self, id: TableId) -> Option<&Tree> {
        if let Some((tid, a)) = self.tables6.first() {
            if *tid == id {
                return Some(a);
            }
        }
        self.tables6
            .binary_search_by_key(&id, |t| t.0)
            .ok()
            .map(|i| &*self.tables6[i].1)
    }

    pub(crate) fn memory_bytes(&self) -> (usize, usize) {
        let lpm = self
            .tables
            .iter()
            .map(|t| t.1.memory_bytes())
            .sum::<usize>()
            + self
                .tables6
                .iter()
                .map(|t| t.1.memory_bytes())
                .sum::<usize>();
        let fwd = self.lb.len() * 8
            + self.buckets.len() * 4
            + self.legs.len() * 4
            + self.adj.len() * 4
            + self.rewrites.len() * 8
            + self.nbr6.len() * 8;
        (lpm, fwd)
    }
}

/// State shared by the writer and all readers.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) current: Arc<ArcSwap<Planes>>,
    pub(crate) qsbr: Qsbr,
    /// Bumped (release) after every change the writer made visible, in place or
    /// by publication: see [`FibView::version`].
    pub(crate) version: AtomicU64,
}

/// A worker's handle on the FIB: cheap to clone, `Send`, never blocks.
///
/// Call [`FibReader::read`] once per burst and do all lookups of that burst through
/// the returned [`FibView`]; dropping the view is the worker's quiescent point.
pub struct FibReader {
    shared: Arc<Shared>,
    cache: Cache<Arc<ArcSwap<Planes>>, Arc<Planes>>,
    slot: Arc<AtomicU64>,
}

impl std::fmt::Debug for FibReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FibReader").finish_non_exhaustive()
    }
}

impl FibReader {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let slot = shared.qsbr.register();
        let cache = Cache::new(shared.current.clone());
        Self {
            shared,
            cache,
            slot,
        }
    }

    /// Starts a read-side section: one epoch announcement and one pointer check.
    #[inline]
    pub fn read(&mut self) -> FibView<'_> {
        self.shared.qsbr.enter(&self.slot);
        // (before the data: what was changed before this version is seen)
        let version = self.shared.version.load(Ordering::Acquire);
        let planes: &Planes = self.cache.load();
        FibView {
            planes,
            qsbr: &self.shared.qsbr,
            slot: &self.slot,
            version,
        }
    }
}

impl Clone for FibReader {
    fn clone(&self) -> Self {
        Self::new(self.shared.clone())
    }
}

impl Drop for FibReader {
    fn drop(&mut self) {
        self.shared.qsbr.unregister(&self.slot);
    }
}

/// One burst's consistent view of the FIB. Lookups through it never lock or allocate.
pub struct FibView<'r> {
    planes: &'r Planes,
    qsbr: &'r Qsbr,
    slot: &'r AtomicU64,
    version: u64,
}

impl std::fmt::Debug for FibView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FibView").finish_non_exhaustive()
    }
}

impl Drop for FibView<'_> {
    #[inline]
    fn drop(&mut self) {
        self.qsbr.leave(self.slot);
    }
}

/// One table inside a [`FibView`], for repeated lookups without the table search.
#[derive(Clone, Copy)]
pub struct TableView<'r> {
    arena: &'r LpmArena,
}

impl std::fmt::Debug for TableView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableView").finish_non_exhaustive()
    }
}

impl TableView<'_> {
    /// Longest-prefix match: the result id (0 = no route).
    #[inline]
    pub fn lookup(&self, dst: u32) -> u32 {
        self.arena.lookup(dst)
    }

    /// Batched longest-prefix match of `min(dst.len(), out.len())` host-order
    /// addresses; `out[i]` is a result id (0 = no route).
    #[inline]
    pub fn lookup_burst(&self, dst: &[u32], out: &mut [u32]) {
        self.arena.lookup_burst(dst, out)
    }
}

impl<'r> FibView<'r> {
    /// The FIB's version when this view was taken. Every change (route, path
    /// list, adjacency, neighbour) bumps it once the writer has made it visible,
    /// so two views with the same version answer alike, except for a change still
    /// under way, which either may see in part, as any view may. A reader that
    /// keeps what it decoded from one view (results, adjacencies) for the next may
    /// keep it while the version stays.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The table `id`, if it exists.
    #[inline]
    pub fn table(&self, id: TableId) -> Option<TableView<'r>> {
        self.planes.table(id).map(|arena| TableView { arena })
    }

    /// One lookup in table `id`; 0 if no route or no such table.
    #[inline]
    pub fn lookup(&self, id: TableId, dst: u32) -> u32 {
        self.planes.table(id).map_or(0, |a| a.lookup(dst))
    }

    /// Batched lookup in table `id`. Returns false (and fills `out` with 0) if the
    /// table does not exist.
    #[inline]
    pub fn lookup_burst(&self, id: TableId, dst: &[u32], out: &mut [u32]) -> bool {
        match self.planes.table(id) {
            Some(a) => {
                a.lookup_burst(dst, out);
                true
            }
            None => {
                out.fill(0);
                false
            }
        }
    }

    /// One IPv6 lookup in table `id` (the address as a big-endian `u128`); 0 if
    /// no route or no such table.
    #[inline]
    pub fn lookup6(&self, id: TableId, dst: u128) -> u32 {
        self.planes.table6(id).map_or(0, |f| f.lookup(dst))
    }

    /// Batched IPv6 lookup in table `id`, level by level over the burst (the
    /// loads of one level overlap). Returns false (and fills `out` with 0) if the
    /// table does not exist.
    #[inline]
    pub fn lookup6_burst(&self, id: TableId, dst: &[u128], out: &mut [u32]) -> bool {
        match self.planes.table6(id) {
            Some(f) => {
                f.lookup_burst(dst, out);
                true
            }
            None => {
                out.fill(0);
                false
            }
        }
    }

    /// The ECMP pick for result id `fwd` and a flow hash: one bucket index.
    #[inline]
    pub fn leg(&self, fwd: u32, flow_hash: u32) -> Leg<'r> {
        self.leg_at(self.leg_id(fwd, flow_hash))
    }

    /// The id of the leg [`FibView::leg`] picks for result id `fwd` and a flow
    /// hash: [`FibView::leg_at`] of it is that leg. A leg keeps its id while the
    /// FIB version stays, so a caller may decode a leg once per id and version.
    #[inline]
    pub fn leg_id(&self, fwd: u32, flow_hash: u32) -> u32 {
        let p = self.planes;
        let h =
            p.lb.get(fwd as usize)
                .map_or(0, |h| h.load(Ordering::Acquire));
        self.bucket_id((h as u32).wrapping_add(flow_hash & (h >> 32) as u32))
    }

    /// The leg with id `id` (see [`FibView::leg_id`]).
    #[inline]
    pub fn leg_at(&self, id: u32) -> Leg<'r> {
        let start = id as usize * LEG_WORDS;
        Leg {
            words: self
                .planes
                .legs
                .get(start..)
                .and_then(|s| s.first_chunk())
                .unwrap_or(&NO_LEG),
        }
    }

    /// The id of the leg in bucket `b`.
    #[inline]
    fn bucket_id(&self, b: u32) -> u32 {
        self.planes
            .buckets
            .get(b as usize)
            .map_or(0, |l| l.load(Ordering::Acquire))
    }

    /// The leg of result id `fwd` when it has one bucket (nothing for a flow hash
    /// to pick); `None` for an ECMP result. One read of its bucket header, where
    /// [`FibView::bucket_count`] then [`FibView::leg`] make two.
    #[inline]
    pub fn only_leg(&self, fwd: u32) -> Option<Leg<'r>> {
        let p = self.planes;
        let h =
            p.lb.get(fwd as usize)
                .map_or(0, |h| h.load(Ordering::Acquire));
        (h >> 32 == 0).then(|| self.leg_at(self.bucket_id(h as u32)))
    }

    /// Number of ECMP buckets of result id `fwd` (a power of two).
    pub fn bucket_count(&self, fwd: u32) -> u32 {
        let h = self
            .planes
            .lb
            .get(fwd as usize)
            .map_or(0, |h| h.load(Ordering::Acquire));
        ((h >> 32) as u32).wrapping_add(1)
    }

    /// The L2 rewrite of adjacency `adj`.
    #[inline]
    pub fn adjacency(&self, adj: u32) -> Option<Adjacency> {
        let p = self.planes;
        let slot = p.adj.get(adj as usize)?.load(Ordering::Acquire) as usize;
        if slot == 0 {
            return None;
        }
        let w = p.rewrites.get(slot * RW_WORDS..slot * RW_WORDS + 4)?;
        let w3 = w[3].load(Ordering::Relaxed);
        let (w0, w1, w2) = (
            w[0].load(Ordering::Relaxed),
            w[1].load(Ordering::Relaxed),
            w[2].load(Ordering::Relaxed),
        );
        let mac = |x: u64| {
            let b = x.to_be_bytes();
            [b[2], b[3], b[4], b[5], b[6], b[7]]
        };
        let vlan = (w1 >> 48) & 0xffff;
        let neighbor6 = (w3 & RW_NBR_V6 != 0)
            .then(|| {
                let hi = p.nbr6.get(slot * 2)?.load(Ordering::Relaxed);
                let lo = p.nbr6.get(slot * 2 + 1)?.load(Ordering::Relaxed);
                Some(std::net::Ipv6Addr::from(
                    u128::from(hi) << 64 | u128::from(lo),
                ))
            })
            .flatten();
        Some(Adjacency {
            neighbor: (w3 & RW_NBR_V4 != 0).then(|| std::net::Ipv4Addr::from(w3 as u32)),
            neighbor6,
            ifindex: w2 as u32,
            complete: w0 & RW_COMPLETE != 0,
            dst_mac: mac(w0),
            src_mac: mac(w1),
            vlan: (vlan & VLAN_TAGGED != 0).then_some((vlan & 0xfff) as u16),
            mtu: (w2 >> 32) as u16,
        })
    }
}

/// One ECMP bucket's forwarding: action, adjacency and out-labels.
#[derive(Clone, Copy)]
pub struct Leg<'r> {
    words: &'r [AtomicU32; LEG_WORDS],
}

/// The leg of a bucket index out of range (never published): no route.
static NO_LEG: [AtomicU32; LEG_WORDS] = [const { AtomicU32::new(0) }; LEG_WORDS];

impl std::fmt::Debug for Leg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut l = [0u32; MAX_LABELS];
        let n = self.labels_into(&mut l);
        f.debug_struct("Leg")
            .field("action", &self.action())
            .field("target", &self.target())
            .field("labels", &&l[..n])
            .finish()
    }
}

impl Leg<'_> {
    #[inline]
    fn header(&self) -> u32 {
        self.words[0].load(Ordering::Relaxed)
    }

    /// What to do with the packet.
    #[inline]
    pub fn action(&self) -> Action {
        Action::from_u8(self.header() as u8)
    }

    /// The adjacency id for [`Action::Forward`], the interface for [`Action::Glean`].
    #[inline]
    pub fn target(&self) -> u32 {
        self.words[1].load(Ordering::Relaxed)
    }

    /// Number of out-labels to impose.
    #[inline]
    pub fn label_count(&self) -> usize {
        ((self.header() >> 8 & 0xff) as usize).min(MAX_LABELS)
    }

    /// Out-label `i` (top of stack first); 0 past the last.
    #[inline]
    pub fn label(&self, i: usize) -> u32 {
        if i < self.label_count() {
            self.words
                .get(2 + i)
                .map_or(0, |w| w.load(Ordering::Relaxed))
        } else {
            0
        }
    }

    /// Copies the out-labels (top of stack first) into `out`; returns how many.
    #[inline]
    pub fn labels_into(&self, out: &mut [u32]) -> usize {
        let n = self.label_count().min(out.len());
        for (o, w) in out[..n].iter_mut().zip(&self.words[2..2 + n]) {
            *o = w.load(Ordering::Relaxed);
        }
        n
    }

    /// The out-labels (top of stack first, 0 past the last) and their number, when
    /// there are at most `N` and none is implicit null (3); `None` otherwise. For a
    /// fast path: one test, then loads without a branch per label.
    #[inline]
    pub fn plain_labels<const N: usize>(&self) -> Option<([u32; N], usize)> {
        // (the flags sit above the count: any flag makes it look too long)
        let n = (self.header() >> 8) as usize;
        let mut out = [0u32; N];
        if n == 0 || n > N {
            return (n == 0).then_some((out, 0));
        }
        for (o, w) in out.iter_mut().zip(&self.words[2..]) {
            *o = w.load(Ordering::Relaxed);
        }
        Some((out, n))
    }
}
