//! The label table: (label, bottom-of-stack) → action, read by workers without locks.
//!
//! Layout (VPP `mpls_fib.h` idea, made safe):
//!
//! * `entries`: a flat boxed slice of 2^21 `AtomicU32`, indexed by `label << 1 | S`
//!   (8 MiB, allocated once). 0 means "no entry"; anything else is an index into
//!   `slots`. One load per label, no hashing, no probing.
//! * `slots`: a fixed arena of 64-byte, cache-line-aligned action slots, each sixteen
//!   `AtomicU32` words: a header (kind, label count, TTL model, pipe TTL), an argument
//!   (adjacency, table or reason) and up to 14 pre-encoded out-labels. An ECMP entry is
//!   a head slot followed by bucket slots (16 path indices each); the paths are
//!   ordinary slots.
//!
//! Readers never see a slot change under them: the single writer fills *fresh* slots
//! (relaxed stores), then publishes the index with a release store on the entry. The
//! slots an update replaced are handed to crossbeam-epoch (`Guard::defer`), whose
//! closure only sets bits in a `freed` bitmap once every reader that could have
//! loaded the old index has unpinned; the writer recycles those bits on its next
//! allocation. Readers pin once per burst ([`LabelReader::pin`]). No pointer is ever
//! dereferenced through the epoch, so the crate stays free of `unsafe`.

use crate::config::{
    LabelAction, NextHop, TtlMode, validate_action, validate_in_label, validate_out_labels,
};
use crate::{ConfigError, DropReason, MAX_SWAP_LABELS, PuntReason};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use wire::Label;

/// Number of entries: every label (20 bits) × bottom-of-stack (1 bit).
pub const KEYS: usize = 1 << 21;

/// Default number of action slots (64 bytes each: 4 MiB).
pub const DEFAULT_SLOTS: usize = 1 << 16;

pub(crate) const SLOT_WORDS: usize = 16;
pub(crate) const W_HDR: usize = 0;
pub(crate) const W_ARG: usize = 1;
pub(crate) const W_LABELS: usize = 2;

// Slot kinds (header bits 0..8). A zeroed slot reads as Drop(NoLabel).
pub(crate) const K_DROP: u32 = 0;
pub(crate) const K_SWAP: u32 = 1;
pub(crate) const K_PHP: u32 = 2;
pub(crate) const K_IP4: u32 = 3;
pub(crate) const K_POP: u32 = 4;
pub(crate) const K_ECMP: u32 = 5;
pub(crate) const K_PUNT: u32 = 6;
pub(crate) const K_ELI: u32 = 7;
pub(crate) const K_PW: u32 = 8;
/// Pop into an IPv6 lookup.
pub(crate) const K_IP6: u32 = 9;
/// Pop into the lookup of the payload's family (its version nibble).
pub(crate) const K_IPX: u32 = 10;

/// Header: kind | count << 8 | pipe << 16 | pipe_ttl << 24.
#[inline(always)]
pub(crate) const fn hdr(kind: u32, count: u32, mode: TtlMode) -> u32 {
    let (pipe, ttl) = mode.code();
    kind | (count << 8) | (pipe << 16) | ((ttl as u32) << 24)
}
#[inline(always)]
pub(crate) const fn hdr_kind(h: u32) -> u32 {
    h & 0xff
}
#[inline(always)]
pub(crate) const fn hdr_count(h: u32) -> usize {
    ((h >> 8) & 0xff) as usize
}
#[inline(always)]
pub(crate) const fn hdr_uniform(h: u32) -> bool {
    (h >> 16) & 0xff == 0
}

/// The key of a received label stack entry (host-order word): `label << 1 | S`.
#[inline(always)]
pub const fn key_of(lse: u32) -> usize {
    (((lse >> 11) & !1) | ((lse >> 8) & 1)) as usize
}

/// One action slot: a cache line of atomic words.
#[repr(align(64))]
pub(crate) struct Slot {
    pub(crate) w: [AtomicU32; SLOT_WORDS],
}

impl Slot {
    fn new() -> Slot {
        Slot {
            w: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> u32 {
        self.w[i % SLOT_WORDS].load(Ordering::Relaxed)
    }
}

/// The memory shared by the writer and the readers.
pub(crate) struct Shared {
    /// (an array of its fixed size: an index made by [`key_of`] needs no bounds
    /// check)
    entries: Box<[AtomicU32; KEYS]>,
    slots: Box<[Slot]>,
    freed: Box<[AtomicU64]>,
    /// Slots marked in `freed` and not harvested yet: the writer scans `freed`
    /// (a word per 64 slots) only once enough have come back to pay for it.
    freed_count: AtomicUsize,
}

impl Shared {
    /// The slot at `idx` (see [`slot_in`]).
    #[inline(always)]
    pub(crate) fn slot(&self, idx: u32) -> &Slot {
        slot_in(&self.slots, idx)
    }

    fn mark_freed(&self, start: u32, len: u32) {
        // Counted before marked: a harvest never takes more than is counted.
        self.freed_count.fetch_add(len as usize, Ordering::Release);
        for i in start..start + len {
            if let Some(w) = self.freed.get((i / 64) as usize) {
                w.fetch_or(1 << (i % 64), Ordering::Release);
            }
        }
    }
}

/// A worker's handle on the label table: cheap to clone, `Send` and `Sync`.
#[derive(Clone)]
pub struct LabelReader {
    shared: Arc<Shared>,
}

impl fmt::Debug for LabelReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LabelReader")
            .field("slots", &self.shared.slots.len())
            .finish()
    }
}

impl LabelReader {
    /// Enters a read-side critical section for one burst. While the guard lives, no
    /// slot the reader can see is recycled; drop it between bursts (the quiescent
    /// point), so that updates can be reclaimed.
    #[inline]
    pub fn pin(&self) -> LabelGuard<'_> {
        LabelGuard {
            entries: &self.shared.entries,
            slots: &self.shared.slots,
            _epoch: crossbeam_epoch::pin(),
        }
    }
}

/// A pinned view of the label table: the per-burst handle the switching functions
/// hang off (see the `switch` module).
pub struct LabelGuard<'a> {
    // (the two arrays themselves, not the `Shared` holding them: a lookup is one
    // dependent load shorter)
    entries: &'a [AtomicU32; KEYS],
    slots: &'a [Slot],
    _epoch: crossbeam_epoch::Guard,
}

impl LabelGuard<'_> {
    /// The slot index for `key` (0 = none).
    #[inline(always)]
    pub(crate) fn entry(&self, key: usize) -> u32 {
        match self.entries.get(key) {
            Some(e) => e.load(Ordering::Acquire),
            None => 0,
        }
    }

    /// The slot at `idx` (see [`slot_in`]).
    #[inline(always)]
    pub(crate) fn slot(&self, idx: u32) -> &Slot {
        slot_in(self.slots, idx)
    }
}

/// Slot `idx` of `slots`; out of range reads as slot 0 (Drop(NoLabel)), which
/// every table has.
#[inline(always)]
fn slot_in(slots: &[Slot], idx: u32) -> &Slot {
    match slots.get(idx as usize) {
        Some(s) => s,
        None => &slots[0],
    }
}

impl fmt::Debug for LabelGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LabelGuard").finish_non_exhaustive()
    }
}

/// What an entry uses in the arena: runs of consecutive slots.
#[derive(Debug, Clone)]
struct Installed {
    action: LabelAction,
    runs: Vec<(u32, u32)>,
}

/// The writer's handle: the only way to change the table. Not `Clone`; owned by the
/// control thread. Updates never block readers and never stop forwarding: an entry
/// switches atomically from its old action to the new one.
pub struct LabelTable {
    shared: Arc<Shared>,
    used: Vec<u64>,
    cursor: usize,
    in_use: usize,
    retired: usize,
    installed: BTreeMap<usize, Installed>,
    explicit_null: (u32, TtlMode),
    explicit_null_runs: [(u32, u32); 3],
}

impl fmt::Debug for LabelTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LabelTable")
            .field("entries", &self.installed.len())
            .field("slots_in_use", &self.in_use)
            .field("capacity", &self.shared.slots.len())
            .finish()
    }
}

impl Default for LabelTable {
    fn default() -> Self {
        Self::new()
    }
}

/// What to write into freshly allocated slots for one action.
enum Encoded {
    One([u32; SLOT_WORDS]),
    Ecmp {
        paths: Vec<[u32; SLOT_WORDS]>,
        buckets_log2: u32,
    },
}

/// Most buckets of one ECMP entry.
pub const MAX_BUCKETS: usize = 256;

fn encode_path(p: &NextHop, mode: TtlMode) -> Result<[u32; SLOT_WORDS], ConfigError> {
    let pop = validate_out_labels(&p.out_labels, MAX_SWAP_LABELS)?;
    let mut w = [0u32; SLOT_WORDS];
    w[W_ARG] = p.adj;
    if pop {
        w[W_HDR] = hdr(K_PHP, 0, mode);
    } else {
        w[W_HDR] = hdr(K_SWAP, p.out_labels.len() as u32, mode);
        for (i, l) in p.out_labels.iter().enumerate() {
            w[W_LABELS + i] = Label::from_bits(*l).value() << 12;
        }
    }
    Ok(w)
}

fn encode_simple(kind: u32, arg: u32, mode: TtlMode) -> [u32; SLOT_WORDS] {
    let mut w = [0u32; SLOT_WORDS];
    w[W_HDR] = hdr(kind, 0, mode);
    w[W_ARG] = arg;
    w
}

fn encode(action: &LabelAction) -> Result<Encoded, ConfigError> {
    Ok(match action {
        LabelAction::Forward { paths, ttl_mode } if paths.len() == 1 => {
            Encoded::One(encode_path(&paths[0], *ttl_mode)?)
        }
        LabelAction::Forward { paths, ttl_mode } => {
            let enc = paths
                .iter()
                .map(|p| encode_path(p, *ttl_mode))
                .collect::<Result<Vec<_>, _>>()?;
            let buckets = (paths.len() * 16).next_power_of_two().min(MAX_BUCKETS);
            Encoded::Ecmp {
                paths: enc,
                buckets_log2: buckets.trailing_zeros(),
            }
        }
        LabelAction::Ip4Lookup { table, ttl_mode } => {
            Encoded::One(encode_simple(K_IP4, *table, *ttl_mode))
        }
        LabelAction::Ip6Lookup { table, ttl_mode } => {
            Encoded::One(encode_simple(K_IP6, *table, *ttl_mode))
        }
        LabelAction::IpLookup { table, ttl_mode } => {
            Encoded::One(encode_simple(K_IPX, *table, *ttl_mode))
        }
        LabelAction::Pop { ttl_mode } => Encoded::One(encode_simple(K_POP, 0, *ttl_mode)),
        LabelAction::Drop => Encoded::One(encode_simple(
            K_DROP,
            DropReason::Blackhole as u32,
            TtlMode::Uniform,
        )),
        LabelAction::Punt => Encoded::One(encode_simple(
            K_PUNT,
            PuntReason::Configured as u32,
            TtlMode::Uniform,
        )),
        LabelAction::Xconnect { pw } => Encoded::One(encode_simple(K_PW, *pw, TtlMode::Uniform)),
    })
}

impl LabelTable {
    /// A table with [`DEFAULT_SLOTS`] action slots.
    pub fn new() -> LabelTable {
        Self::with_capacity(DEFAULT_SLOTS)
    }

    /// A table with room for `slots` action slots (at least 64, at most 2^24; one per
    /// plain entry, 2 + buckets/16 + paths per ECMP entry). Allocates 8 MiB of entries
    /// plus 64 bytes per slot, once.
    pub fn with_capacity(slots: usize) -> LabelTable {
        let slots = slots.clamp(64, 1 << 24).next_multiple_of(64);
        let shared = Arc::new(Shared {
            entries: match (0..KEYS)
                .map(|_| AtomicU32::new(0))
                .collect::<Box<[_]>>()
                .try_into()
            {
                Ok(a) => a,
                Err(_) => unreachable!("made KEYS entries long"),
            },
            slots: (0..slots).map(|_| Slot::new()).collect(),
            freed: (0..slots / 64).map(|_| AtomicU64::new(0)).collect(),
            freed_count: AtomicUsize::new(0),
        });
        let mut t = LabelTable {
            shared,
            used: vec![0; slots / 64],
            cursor: 1,
            in_use: 0,
            retired: 0,
            installed: BTreeMap::new(),
            explicit_null: (0, TtlMode::Uniform),
            explicit_null_runs: [(0, 0); 3],
        };
        // Slot 0 stays zero: Drop(NoLabel), what an empty entry points at.
        t.used[0] |= 1;
        t.in_use = 1;
        t.install_reserved();
        t
    }

    /// A new reader handle for a worker.
    pub fn reader(&self) -> LabelReader {
        LabelReader {
            shared: Arc::clone(&self.shared),
        }
    }

    //= RFC 3032 §2.1, RFC 7274 §3.1 (special-purpose labels 0-15); VPP installs the
    //= same defaults at table creation (mpls_fib.c).
    fn install_reserved(&mut self) {
        let drop = |r: DropReason| encode_simple(K_DROP, r as u32, TtlMode::Uniform);
        let punt = |r: PuntReason| encode_simple(K_PUNT, r as u32, TtlMode::Uniform);
        let pop = encode_simple(K_POP, 0, TtlMode::Uniform);
        type Words = Option<[u32; SLOT_WORDS]>;
        let fixed: [(u32, Words, Words); 16] = [
            // (label, non-eos, eos); None for labels 0 and 2 eos / label 7 non-eos
            // (explicit-null driven).
            (0, Some(pop), None),
            //= RFC 3032 §2.1: router alert "MUST NOT appear at the bottom of the
            //= stack".
            (
                1,
                Some(punt(PuntReason::RouterAlert)),
                Some(drop(DropReason::RouterAlertAtBottom)),
            ),
            //= RFC 4182 §2: explicit null not at the bottom is popped and the next
            //= label processed; at the bottom the payload is IPv6 (see
            //= `set_explicit_null`).
            (2, Some(pop), None),
            (
                3,
                Some(drop(DropReason::ImplicitNullOnWire)),
                Some(drop(DropReason::ImplicitNullOnWire)),
            ),
            (
                4,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            (
                5,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            (
                6,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            //= RFC 6790 §4.1: the ELI is never the bottom of stack.
            (7, None, Some(drop(DropReason::BadEntropyLabel))),
            (
                8,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            (
                9,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            (
                10,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            (
                11,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            (
                12,
                Some(drop(DropReason::ReservedLabel)),
                Some(drop(DropReason::ReservedLabel)),
            ),
            (13, Some(punt(PuntReason::Gal)), Some(punt(PuntReason::Gal))),
            (
                14,
                Some(punt(PuntReason::OamAlert)),
                Some(punt(PuntReason::OamAlert)),
            ),
            (
                15,
                Some(drop(DropReason::ExtensionLabel)),
                Some(drop(DropReason::ExtensionLabel)),
            ),
        ];
        for (label, non_eos, eos) in fixed {
            for (s, enc) in [(0usize, non_eos), (1usize, eos)] {
                if let Some(words) = enc {
                    // The arena is far larger than 32 slots, so these cannot fail.
                    if let Some(idx) = self.alloc_run(1) {
                        self.write_slot(idx, &words);
                        self.shared.entries[(label as usize) << 1 | s]
                            .store(idx, Ordering::Release);
                    }
                }
            }
        }
        let _ = self.set_explicit_null(crate::RX_TABLE, TtlMode::Uniform);
    }

    /// The table and TTL model used for labels 0 (IPv4) and 2 (IPv6) at the
    /// bottom of the stack (and for an entropy label pair at the bottom, see the
    /// `switch` module).
    pub fn explicit_null(&self) -> (u32, TtlMode) {
        self.explicit_null
    }

    /// Sets the table label 0 (bottom of stack, IPv4) and label 2 (bottom of
    /// stack, IPv6) are looked up in (default [`RX_TABLE`](crate::RX_TABLE), the
    /// receiving interface's) and whether their TTL is copied into the IP header
    /// (default uniform).
    pub fn set_explicit_null(&mut self, table: u32, ttl_mode: TtlMode) -> Result<(), ConfigError> {
        crate::config::validate_mode(ttl_mode)?;
        let old = self.explicit_null_runs;
        let mut new = [0u32; 3];
        for k in 0..new.len() {
            match self.alloc_run_reclaiming(1) {
                Ok(i) => new[k] = i,
                Err(e) => {
                    for &i in &new[..k] {
                        self.release_now(i, 1);
                    }
                    return Err(e);
                }
            }
        }
        let [a, b, c] = new;
        self.write_slot(a, &encode_simple(K_IP4, table, ttl_mode));
        self.write_slot(b, &encode_simple(K_ELI, table, ttl_mode));
        self.write_slot(c, &encode_simple(K_IP6, table, ttl_mode));
        self.shared.entries[1].store(a, Ordering::Release); // (0, eos)
        self.shared.entries[7 << 1].store(b, Ordering::Release); // (7, non-eos)
        self.shared.entries[2 << 1 | 1].store(c, Ordering::Release); // (2, eos)
        self.explicit_null = (table, ttl_mode);
        self.explicit_null_runs = [(a, 1), (b, 1), (c, 1)];
        self.retire(&old);
        Ok(())
    }

    /// Whether [`LabelTable::add`] would take the entry (short of running out
    /// of slots): for entries kept aside until they are installed.
    pub fn check(label: u32, eos: bool, action: &LabelAction) -> Result<(), ConfigError> {
        validate_in_label(label)?;
        validate_action(eos, action)?;
        encode(action).map(|_| ())
    }

    /// Adds or replaces the entry for (`label`, `eos`). `label` must be 16..2^20;
    /// the action is validated ([`validate_action`]). Readers switch from the old
    /// action to the new one atomically.
    pub fn add(&mut self, label: u32, eos: bool, action: LabelAction) -> Result<(), ConfigError> {
        validate_in_label(label)?;
        validate_action(eos, &action)?;
        let key = (label as usize) << 1 | usize::from(eos);
        let enc = encode(&action)?;
        let (head, runs) = self.materialize(&enc)?;
        self.shared.entries[key].store(head, Ordering::Release);
        if let Some(old) = self.installed.insert(key, Installed { action, runs }) {
            self.retire(&old.runs);
        }
        Ok(())
    }

    /// Removes the entry for (`label`, `eos`), returning its action.
    pub fn remove(&mut self, label: u32, eos: bool) -> Result<LabelAction, ConfigError> {
        validate_in_label(label)?;
        let key = (label as usize) << 1 | usize::from(eos);
        let Some(old) = self.installed.remove(&key) else {
            return Err(ConfigError::NotFound { label, eos });
        };
        self.shared.entries[key].store(0, Ordering::Release);
        self.retire(&old.runs);
        Ok(old.action)
    }

    /// The action configured for (`label`, `eos`).
    pub fn get(&self, label: u32, eos: bool) -> Option<&LabelAction> {
        let key = (label as usize).checked_shl(1)? | usize::from(eos);
        self.installed.get(&key).map(|i| &i.action)
    }

    /// The configured entries, by label then non-eos before eos.
    pub fn iter(&self) -> impl Iterator<Item = (u32, bool, &LabelAction)> + '_ {
        self.installed
            .iter()
            .map(|(k, i)| ((k >> 1) as u32, k & 1 == 1, &i.action))
    }

    /// Number of configured entries (built-in reserved labels not counted).
    pub fn len(&self) -> usize {
        self.installed.len()
    }

    /// Whether no entry is configured.
    pub fn is_empty(&self) -> bool {
        self.installed.is_empty()
    }

    /// Action slots allocated (including ones waiting for readers to move on).
    pub fn slots_in_use(&self) -> usize {
        self.in_use
    }

    /// Total action slots.
    pub fn capacity(&self) -> usize {
        self.shared.slots.len()
    }

    /// Drives epoch reclamation and takes back the slots whose readers have all
    /// passed a quiescent point. Returns how many slots came back. `add` does this by
    /// itself when the arena is full; call it from a timer to keep memory tidy.
    pub fn reclaim(&mut self) -> usize {
        for _ in 0..4 {
            crossbeam_epoch::pin().flush();
        }
        self.harvest()
    }

    fn harvest(&mut self) -> usize {
        let mut n = 0;
        let mut taken = 0;
        for (u, f) in self.used.iter_mut().zip(self.shared.freed.iter()) {
            let bits = f.swap(0, Ordering::Acquire);
            if bits != 0 {
                taken += bits.count_ones() as usize;
                n += (*u & bits).count_ones() as usize;
                *u &= !bits;
            }
        }
        // (a slot counted but not marked yet when its word was read stays counted
        // for the next harvest)
        self.shared.freed_count.fetch_sub(taken, Ordering::AcqRel);
        self.in_use -= n;
        self.retired = self.retired.saturating_sub(n);
        n
    }

    /// Hands `runs` to the epoch: freed once every pinned reader has unpinned.
    fn retire(&mut self, runs: &[(u32, u32)]) {
        let guard = crossbeam_epoch::pin();
        for &(start, len) in runs {
            if len == 0 {
                continue;
            }
            let shared = Arc::clone(&self.shared);
            self.retired += len as usize;
            guard.defer(move || shared.mark_freed(start, len));
        }
        guard.flush();
    }

    /// Frees never-published slots at once.
    fn release_now(&mut self, start: u32, len: u32) {
        for i in start..start + len {
            self.used[(i / 64) as usize] &= !(1 << (i % 64));
        }
        self.in_use -= len as usize;
    }

    fn is_free(&self, i: usize) -> bool {
        self.used[i / 64] & (1 << (i % 64)) == 0
    }

    fn alloc_run(&mut self, len: usize) -> Option<u32> {
        let cap = self.shared.slots.len();
        // (a full arena answers at once, not after a scan of every slot)
        if len == 0 || self.in_use + len > cap {
            return None;
        }
        let mut start = self.cursor;
        let mut scanned = 0;
        while scanned < cap + len {
            if start + len > cap {
                scanned += cap - start;
                start = 1;
                continue;
            }
            match (start..start + len).find(|&i| !self.is_free(i)) {
                None => {
                    for i in start..start + len {
                        self.used[i / 64] |= 1 << (i % 64);
                    }
                    self.in_use += len;
                    self.cursor = start + len;
                    return Some(start as u32);
                }
                Some(busy) => {
                    scanned += busy + 1 - start;
                    start = busy + 1;
                }
            }
        }
        None
    }

    fn alloc_run_reclaiming(&mut self, len: usize) -> Result<u32, ConfigError> {
        // A harvest scans a word per 64 slots: done when at least that many slots
        // came back (a word per slot at most, amortized), or when the arena is full.
        let worth = self.used.len().max(64);
        if self.shared.freed_count.load(Ordering::Acquire) >= worth {
            self.harvest();
        }
        if let Some(i) = self.alloc_run(len) {
            return Ok(i);
        }
        if self.harvest() > 0 {
            if let Some(i) = self.alloc_run(len) {
                return Ok(i);
            }
        }
        // Full, but slots are waiting for readers to pass a quiescent point: wait for
        // them (readers unpin once per burst, so this is microseconds), at most 100 ms.
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
        while self.retired > 0 && std::time::Instant::now() < deadline {
            if self.reclaim() > 0 {
                if let Some(i) = self.alloc_run(len) {
                    return Ok(i);
                }
            }
            std::thread::yield_now();
        }
        Err(ConfigError::TableFull)
    }

    fn write_slot(&self, idx: u32, words: &[u32; SLOT_WORDS]) {
        let s = self.shared.slot(idx);
        for (a, &v) in s.w.iter().zip(words) {
            a.store(v, Ordering::Relaxed);
        }
    }

    /// Allocates and fills the slots of an action; returns the head index and runs.
    fn materialize(&mut self, enc: &Encoded) -> Result<(u32, Vec<(u32, u32)>), ConfigError> {
        match enc {
            Encoded::One(words) => {
                let i = self.alloc_run_reclaiming(1)?;
                self.write_slot(i, words);
                Ok((i, vec![(i, 1)]))
            }
            Encoded::Ecmp {
                paths,
                buckets_log2,
            } => {
                let buckets = 1usize << buckets_log2;
                let run_len = 1 + buckets.div_ceil(SLOT_WORDS);
                let mut runs: Vec<(u32, u32)> = Vec::with_capacity(paths.len() + 1);
                let mut path_idx = Vec::with_capacity(paths.len());
                for p in paths {
                    match self.alloc_run_reclaiming(1) {
                        Ok(i) => {
                            self.write_slot(i, p);
                            runs.push((i, 1));
                            path_idx.push(i);
                        }
                        Err(e) => {
                            for &(s, l) in &runs {
                                self.release_now(s, l);
                            }
                            return Err(e);
                        }
                    }
                }
                let head = match self.alloc_run_reclaiming(run_len) {
                    Ok(h) => h,
                    Err(e) => {
                        for &(s, l) in &runs {
                            self.release_now(s, l);
                        }
                        return Err(e);
                    }
                };
                for b in 0..buckets {
                    let slot = self.shared.slot(head + 1 + (b / SLOT_WORDS) as u32);
                    slot.w[b % SLOT_WORDS].store(path_idx[b % path_idx.len()], Ordering::Relaxed);
                }
                let mut h = [0u32; SLOT_WORDS];
                h[W_HDR] = hdr(K_ECMP, *buckets_log2, TtlMode::Uniform);
                h[W_ARG] = paths.len() as u32;
                self.write_slot(head, &h);
                runs.push((head, run_len as u32));
                Ok((head, runs))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_key_of() {
        // label 100, S = 1 -> 201; label 100, S = 0 -> 200; TC and TTL ignored.
        assert_eq!(key_of(0x0006_4140), 201);
        assert_eq!(key_of(0x0006_4e40), 200);
        assert_eq!(key_of(0xffff_f1ff), KEYS - 1);
    }

    #[test]
    fn test_add_replace_remove_reclaims() {
        let mut t = LabelTable::with_capacity(64);
        let base = t.slots_in_use();
        t.add(100, true, LabelAction::swap(1, &[200])).unwrap();
        assert_eq!(t.slots_in_use(), base + 1);
        t.add(100, true, LabelAction::swap(2, &[300])).unwrap();
        assert_eq!(t.get(100, true), Some(&LabelAction::swap(2, &[300])));
        // The replaced slot comes back once no reader is pinned.
        let mut tries = 0;
        while t.slots_in_use() > base + 1 && tries < 100 {
            t.reclaim();
            tries += 1;
        }
        assert_eq!(t.slots_in_use(), base + 1);
        assert_eq!(t.remove(100, true), Ok(LabelAction::swap(2, &[300])));
        assert_eq!(
            t.remove(100, true),
            Err(ConfigError::NotFound {
                label: 100,
                eos: true
            })
        );
        assert!(t.is_empty());
    }

    #[test]
    fn test_table_full_then_reuse() {
        let mut t = LabelTable::with_capacity(64);
        let mut added = 0;
        for l in 16..200 {
            match t.add(l, true, LabelAction::ip4_lookup(0)) {
                Ok(()) => added += 1,
                Err(e) => {
                    assert_eq!(e, ConfigError::TableFull);
                    break;
                }
            }
        }
        assert!(added > 10);
        // With one slot free, replacing every other entry works: each replacement
        // reclaims the slot the previous one retired.
        t.remove(16, true).unwrap();
        for l in 17..16 + added {
            t.add(l, true, LabelAction::Drop).unwrap();
        }
    }

    #[test]
    fn test_reserved_in_labels_rejected() {
        let mut t = LabelTable::with_capacity(64);
        for l in 0..16 {
            assert_eq!(
                t.add(l, true, LabelAction::Drop),
                Err(ConfigError::ReservedInLabel(l))
            );
        }
        assert_eq!(
            t.add(1 << 20, true, LabelAction::Drop),
            Err(ConfigError::LabelOutOfRange(1 << 20))
        );
    }
}
