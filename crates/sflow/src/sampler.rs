//! Per-worker 1-in-N sampling: the settings the control thread publishes, the
//! worker's samplers, and the ring the samples leave through.
//!
//! # Skip counts
//!
//! Each (interface, direction) sampler counts down a skip; the packet that brings it
//! to zero is sampled and a new skip is drawn, uniform on `[1, 2N-1]` (mean N) from
//! a per-worker xoshiro256++ generator ([`rand::rngs::SmallRng`]) with a 64-bit
//! state, so every N up to `u32::MAX` gets its mean to a part in 10^9 (no 15-bit
//! generator capping the skip as in hsflowd's software sampler). Uniform rather than
//! geometric because it is what sFlow's Appendix B describes and VPP and hsflowd do
//! (collectors see the same process), every integer of the range is reachable, a
//! draw is one multiply rather than a logarithm (it runs 25 times per vector at
//! 1:10), and the count of samples over M packets has a third of the variance of
//! Bernoulli sampling (M/3N against M/N), so estimates converge faster.
//!
//! # Cost when nothing is sampled
//!
//! Nothing is written per packet. [`WorkerSampler::select_run`] handles a run of
//! packets of one interface with one compare and one subtract (VPP's whole-frame
//! skip). [`WorkerSampler::select_burst`] handles a vector whose packets belong to
//! different interfaces (output ports): it counts the packets per interface in four
//! interleaved banks (so consecutive packets of one interface do not wait on each
//! other's store), then does the compare and subtract once per enabled interface.
//! Only when some interface's skip expires inside the vector is the vector walked
//! again, once for all such interfaces, to find which packets are the sampled ones.
//!
//! The sample pool is not counted per packet either: between two samples it is the
//! last draw minus what is left of it, so it is derived when a sample is taken.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

use crate::config::{
    ConfigError, DEFAULT_HEADER_BYTES, Directions, MAX_IFINDEX, Sampling, validate_header_bytes,
    validate_ifindex,
};
use crate::record::{Direction, PacketInfo, SampleRecord};
use crate::ring::{Consumer, Producer, SampleMeta, ring};

/// Packets in a full vector (VPP's `VLIB_FRAME_SIZE`).
pub const BURST: usize = 256;

/// Most picks a [`Picks`] holds: a full vector in both directions at 1:1.
pub const PICKS_CAPACITY: usize = 2 * BURST;

/// Slots of the per-worker tables: ifIndex 0..=MAX_IFINDEX, then a sink for
/// anything larger (never enabled).
const SLOTS: usize = MAX_IFINDEX as usize + 2;
const SINK: usize = SLOTS - 1;

/// Packets `select_burst` counts before it checks the skips, so the 16-bit bank
/// counters of enabled interfaces cannot wrap.
const CHUNK: usize = 4 * 16_384;

#[inline(always)]
fn slot(ifindex: u32) -> usize {
    (ifindex as usize).min(SINK)
}

/// Sampling settings shared by the control thread (writer) and the workers
/// (readers). Workers look at the generation once per vector and reread the table
/// only when it moved.
#[derive(Debug)]
pub struct SamplingTable {
    /// Per ifIndex: `rate << 2 | direction bits`, 0 = off.
    entries: Box<[AtomicU64]>,
    header_bytes: AtomicU32,
    generation: AtomicU64,
}

impl SamplingTable {
    /// Nothing sampled, 128 header bytes.
    pub fn new() -> SamplingTable {
        SamplingTable {
            entries: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            header_bytes: AtomicU32::new(u32::from(DEFAULT_HEADER_BYTES)),
            generation: AtomicU64::new(0),
        }
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Turns sampling of `ifindex` on (or changes it) or off. Validated first;
    /// nothing changes on error.
    pub fn set(&self, ifindex: u32, sampling: Option<Sampling>) -> Result<(), ConfigError> {
        let word = match sampling {
            Some(s) => {
                s.validate(ifindex)?;
                u64::from(s.rate) << 2 | u64::from(s.directions.bits())
            }
            None => {
                validate_ifindex(ifindex)?;
                0
            }
        };
        self.entries[slot(ifindex)].store(word, Ordering::Relaxed);
        self.bump();
        Ok(())
    }

    /// Sampling of `ifindex`, if on.
    pub fn get(&self, ifindex: u32) -> Option<Sampling> {
        if ifindex == 0 || ifindex > MAX_IFINDEX {
            return None;
        }
        decode_entry(self.entries[slot(ifindex)].load(Ordering::Relaxed))
    }

    /// Every interface sampled, by ifIndex.
    pub fn enabled(&self) -> Vec<(u32, Sampling)> {
        (1..=MAX_IFINDEX)
            .filter_map(|i| self.get(i).map(|s| (i, s)))
            .collect()
    }

    /// Sets the frame bytes copied per sample (64..=256).
    pub fn set_header_bytes(&self, n: u16) -> Result<(), ConfigError> {
        validate_header_bytes(n)?;
        self.header_bytes.store(u32::from(n), Ordering::Relaxed);
        self.bump();
        Ok(())
    }

    /// Frame bytes copied per sample.
    pub fn header_bytes(&self) -> u16 {
        self.header_bytes.load(Ordering::Relaxed) as u16
    }
}

impl Default for SamplingTable {
    fn default() -> Self {
        Self::new()
    }
}

fn decode_entry(w: u64) -> Option<Sampling> {
    let directions = Directions::from_bits((w & 3) as u8)?;
    let rate = (w >> 2) as u32;
    (rate != 0).then_some(Sampling { rate, directions })
}

/// A worker's sFlow counters: one writer per field, any number of readers.
/// `sampled` and `dropped` are written by the worker, `exported` by the agent.
#[derive(Debug, Default)]
pub struct WorkerCounters {
    sampled: AtomicU64,
    dropped: AtomicU64,
    /// Written by the agent: kept off the worker's cache line.
    exported: Padded,
}

#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded(AtomicU64);

impl WorkerCounters {
    /// Packets picked for sampling.
    pub fn sampled(&self) -> u64 {
        self.sampled.load(Ordering::Relaxed)
    }

    /// Samples lost because the ring was full (or the pick list was).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Samples the agent put into datagrams that went out.
    pub fn exported(&self) -> u64 {
        self.exported.0.load(Ordering::Relaxed)
    }

    /// Agent side: adds to `exported` (single writer).
    pub(crate) fn add_exported(&self, n: u64) {
        let e = &self.exported.0;
        e.store(e.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }
}

/// A packet picked for sampling by `select_*`, to be described with
/// [`WorkerSampler::submit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pick {
    /// Index of the packet in the vector.
    pub index: u32,
    /// ifIndex of the sampler that picked it.
    pub ifindex: u32,
    /// Direction of that sampler.
    pub direction: Direction,
    rate: u32,
    pool: u64,
}

/// The packets picked from a vector (capacity [`PICKS_CAPACITY`]), allocated once
/// per worker. `select_*` append; the caller clears after submitting.
#[derive(Debug)]
pub struct Picks {
    buf: Box<[Pick]>,
    len: usize,
}

impl Picks {
    /// An empty list.
    pub fn new() -> Picks {
        Picks {
            buf: vec![Pick::default(); PICKS_CAPACITY].into_boxed_slice(),
            len: 0,
        }
    }

    /// Forgets every pick.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The picks, grouped by sampler (not necessarily in packet order).
    #[inline]
    pub fn as_slice(&self) -> &[Pick] {
        &self.buf[..self.len.min(self.buf.len())]
    }

    /// Number of picks.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// No picks.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, p: Pick) -> bool {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = p;
                self.len += 1;
                true
            }
            None => false,
        }
    }
}

impl Default for Picks {
    fn default() -> Self {
        Self::new()
    }
}

/// Cold per-interface state of a worker's samplers.
#[derive(Debug, Clone, Copy, Default)]
struct Source {
    rate: u32,
    /// Direction bits enabled.
    dirs: u8,
    /// Per direction: the skip drawn last (the countdown started from it).
    drawn: [u64; 2],
    /// Per direction: packets seen up to the last sample.
    base: [u64; 2],
    /// Samples lost (ring or pick list full), cumulative.
    drops: u64,
}

impl Source {
    fn on(&self, d: usize) -> bool {
        self.dirs & (1 << d) != 0
    }
}

/// Creates a worker's sampler and the agent's end of its ring.
pub fn channel(
    worker: u32,
    table: Arc<SamplingTable>,
    ring_capacity: usize,
    seed: u64,
) -> Result<(WorkerSampler, SampleConsumer), ConfigError> {
    if ring_capacity == 0 {
        return Err(ConfigError::RingCapacity);
    }
    let (producer, consumer) = ring(ring_capacity);
    let counters = Arc::new(WorkerCounters::default());
    let consumer = SampleConsumer {
        worker,
        ring: consumer,
        counters: counters.clone(),
        table: table.clone(),
    };
    let sampler = WorkerSampler {
        skip: [Box::new([u64::MAX; SLOTS]), Box::new([u64::MAX; SLOTS])],
        counts: [Box::new([[0u16; 4]; SLOTS]), Box::new([[0u16; 4]; SLOTS])],
        enabled: [Vec::with_capacity(SLOTS), Vec::with_capacity(SLOTS)],
        expiring: Box::new([false; SLOTS]),
        sources: Box::new([Source::default(); SLOTS]),
        // Workers must not share a sequence: mix the id into the seed.
        rng: SmallRng::seed_from_u64(seed ^ u64::from(worker).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        generation: u64::MAX,
        table,
        ring: producer,
        counters,
        header_bytes: usize::from(DEFAULT_HEADER_BYTES),
        worker,
        sampled: 0,
        dropped: 0,
        dropping: false,
    };
    Ok((sampler, consumer))
}

/// The agent's end of a worker's ring.
#[derive(Debug)]
pub struct SampleConsumer {
    worker: u32,
    ring: Consumer,
    counters: Arc<WorkerCounters>,
    table: Arc<SamplingTable>,
}

impl SampleConsumer {
    /// The worker id.
    pub fn worker(&self) -> u32 {
        self.worker
    }

    /// Takes the oldest sample.
    pub fn pop(&mut self) -> Option<SampleRecord> {
        self.ring.pop(self.worker)
    }

    /// Samples waiting.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// No samples waiting.
    pub fn is_empty(&self) -> bool {
        self.ring.len() == 0
    }

    /// The worker's counters.
    pub fn counters(&self) -> &Arc<WorkerCounters> {
        &self.counters
    }

    pub(crate) fn table(&self) -> &Arc<SamplingTable> {
        &self.table
    }
}

/// One worker's samplers: one per (ifIndex, direction), all per-worker state, no
/// writes to anything shared on the packet path except the ring on a sample.
///
/// Per vector: [`refresh`](Self::refresh) once, then `select_run` /
/// `select_burst` for each direction, then [`submit`](Self::submit) for each pick
/// (after the forwarding decision, so the pick can name the output, the next hop
/// and the label stacks), then clear the picks.
pub struct WorkerSampler {
    /// Hot: per direction, per ifIndex, packets left until the next sample
    /// (`u64::MAX` when off).
    skip: [Box<[u64; SLOTS]>; 2],
    /// Hot: per direction, per ifIndex, packets counted in the current chunk in four
    /// banks.
    counts: [Box<[[u16; 4]; SLOTS]>; 2],
    /// Per direction, the ifIndexes sampled.
    enabled: [Vec<u32>; 2],
    /// Interfaces whose skip expires in the chunk being checked (all false between
    /// calls).
    expiring: Box<[bool; SLOTS]>,
    sources: Box<[Source; SLOTS]>,
    rng: SmallRng,
    generation: u64,
    table: Arc<SamplingTable>,
    ring: Producer,
    counters: Arc<WorkerCounters>,
    header_bytes: usize,
    worker: u32,
    sampled: u64,
    dropped: u64,
    /// The vector began with the ring full: its picks are counted as dropped as
    /// they are selected (see [`WorkerSampler::begin_vector`]).
    dropping: bool,
}

impl std::fmt::Debug for WorkerSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerSampler")
            .field("worker", &self.worker)
            .field("enabled", &self.enabled)
            .field("sampled", &self.sampled)
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

impl WorkerSampler {
    /// The worker id.
    pub fn worker(&self) -> u32 {
        self.worker
    }

    /// The counters the control thread reads.
    pub fn counters(&self) -> &Arc<WorkerCounters> {
        &self.counters
    }

    /// Whether any interface is sampled in `dir` (the pipeline may skip its sFlow
    /// step entirely when neither direction is).
    #[inline]
    pub fn is_on(&self, dir: Direction) -> bool {
        !self.enabled[dir as usize].is_empty()
    }

    /// Whether a sampler in `dir` may pick one of the next `n` packets: some
    /// interface sampled in `dir` has at most `n` packets left of its skip. When
    /// not, a pipeline need not note anything a sample would be described from
    /// (the counts still have to run: call `select_*` as usual).
    #[inline]
    pub fn may_pick(&self, dir: Direction, n: usize) -> bool {
        let d = dir as usize;
        let n = n as u64;
        self.enabled[d].iter().any(|&k| self.skip[d][slot(k)] <= n)
    }

    /// Picks up configuration changes; call once per vector, before `select_*`.
    /// One load and compare when nothing changed.
    #[inline]
    pub fn refresh(&mut self) {
        let g = self.table.generation.load(Ordering::Acquire);
        if g != self.generation {
            self.reconfigure(g);
        }
    }

    #[cold]
    #[inline(never)]
    fn reconfigure(&mut self, generation: u64) {
        self.generation = generation;
        self.header_bytes = usize::from(self.table.header_bytes());
        for k in 1..SINK {
            let want = decode_entry(self.table.entries[k].load(Ordering::Relaxed));
            let (rate, dirs) = want.map_or((0, 0), |s| (s.rate, s.directions.bits()));
            let src = self.sources[k];
            if src.rate == rate && src.dirs == dirs {
                continue;
            }
            for d in 0..2 {
                let was = src.on(d);
                let now = dirs & (1 << d) != 0;
                if was && now && src.rate == rate {
                    continue;
                }
                let s = &mut self.sources[k];
                if was {
                    // Account for the packets seen since the last sample.
                    s.base[d] += s.drawn[d].saturating_sub(self.skip[d][k]);
                }
                if now {
                    let skip = draw(&mut self.rng, rate);
                    self.skip[d][k] = skip;
                    self.sources[k].drawn[d] = skip;
                    self.counts[d][k] = [0; 4];
                } else {
                    self.skip[d][k] = u64::MAX;
                    self.sources[k].drawn[d] = u64::MAX;
                }
            }
            self.sources[k].rate = rate;
            self.sources[k].dirs = dirs;
        }
        for d in 0..2 {
            let e = &mut self.enabled[d];
            e.clear();
            e.extend((1..SINK as u32).filter(|&k| self.sources[k as usize].on(d)));
        }
    }

    /// Samples a run of `n` packets of one interface (`ifindex`, direction `dir`),
    /// which are packets `start..start + n` of the vector: the whole rx vector of
    /// one port, say. One compare and subtract unless the skip expires.
    #[inline]
    pub fn select_run(
        &mut self,
        dir: Direction,
        ifindex: u32,
        start: usize,
        n: usize,
        picks: &mut Picks,
    ) {
        let d = dir as usize;
        let k = slot(ifindex);
        let n64 = n as u64;
        let skip = &mut self.skip[d][k];
        if n64 < *skip {
            *skip -= n64;
        } else {
            self.expire_run(d, k, start, n, picks);
        }
    }

    #[cold]
    #[inline(never)]
    fn expire_run(&mut self, d: usize, k: usize, start: usize, n: usize, picks: &mut Picks) {
        if !self.sources[k].on(d) {
            // Off (or the sink): its countdown only ever restarts.
            self.skip[d][k] = u64::MAX;
            return;
        }
        // The skip-th packet of the run, 0-based.
        let mut pos = self.skip[d][k].saturating_sub(1);
        let n64 = n as u64;
        while pos < n64 {
            self.take(d, k, start + pos as usize, picks);
            pos += self.sources[k].drawn[d];
        }
        self.skip[d][k] = pos - n64 + 1;
        self.count_sampled();
    }

    /// Samples the first `n` packets of a vector in direction `dir`, packet `i`
    /// belonging to the interface `key(i)` (its input ifIndex for rx, its output
    /// ifIndex for tx; anything not sampled is ignored). `key` is called about once
    /// per packet, and again per packet of an interface whose skip expires.
    #[inline]
    pub fn select_burst(
        &mut self,
        dir: Direction,
        n: usize,
        key: impl Fn(usize) -> u32,
        picks: &mut Picks,
    ) {
        let d = dir as usize;
        if self.enabled[d].is_empty() {
            return;
        }
        let mut start = 0;
        while start < n {
            let m = (n - start).min(CHUNK);
            self.count_chunk(d, start, m, &key);
            self.check_chunk(d, start, m, &key, picks);
            start += m;
        }
    }

    #[inline]
    fn count_chunk(&mut self, d: usize, start: usize, n: usize, key: &impl Fn(usize) -> u32) {
        let counts = &mut self.counts[d];
        let end = start + n;
        let mut i = start;
        while i + 4 <= end {
            let k0 = slot(key(i));
            let k1 = slot(key(i + 1));
            let k2 = slot(key(i + 2));
            let k3 = slot(key(i + 3));
            counts[k0][0] = counts[k0][0].wrapping_add(1);
            counts[k1][1] = counts[k1][1].wrapping_add(1);
            counts[k2][2] = counts[k2][2].wrapping_add(1);
            counts[k3][3] = counts[k3][3].wrapping_add(1);
            i += 4;
        }
        while i < end {
            let k = slot(key(i));
            counts[k][0] = counts[k][0].wrapping_add(1);
            i += 1;
        }
    }

    #[inline]
    fn check_chunk(
        &mut self,
        d: usize,
        start: usize,
        n: usize,
        key: &impl Fn(usize) -> u32,
        picks: &mut Picks,
    ) {
        let mut expiring = false;
        for j in 0..self.enabled[d].len() {
            let k = slot(self.enabled[d][j]);
            let c = std::mem::take(&mut self.counts[d][k]);
            let total = u64::from(c[0]) + u64::from(c[1]) + u64::from(c[2]) + u64::from(c[3]);
            let skip = &mut self.skip[d][k];
            if total < *skip {
                *skip -= total;
            } else {
                self.expiring[k] = true;
                expiring = true;
            }
        }
        if expiring {
            self.expire_burst(d, start, n, key, picks);
        }
    }

    /// One walk over the chunk for every interface whose skip expires in it: their
    /// skips count down per packet, the others are left alone.
    #[cold]
    #[inline(never)]
    fn expire_burst(
        &mut self,
        d: usize,
        start: usize,
        n: usize,
        key: &impl Fn(usize) -> u32,
        picks: &mut Picks,
    ) {
        // Without a branch on whether the packet's interface expires (on a vector
        // mixed over several ports that branch is a coin toss): the others count
        // down by 0. Their skips are at least 1 (`check_chunk` left them so), and
        // the `e` guard keeps it so for the sink and the interfaces that are off.
        for i in start..start + n {
            let k = slot(key(i));
            let e = self.expiring[k];
            let left = &mut self.skip[d][k];
            *left -= u64::from(e);
            if (*left == 0) & e {
                self.take(d, k, i, picks);
                self.skip[d][k] = self.sources[k].drawn[d];
            }
        }
        for j in 0..self.enabled[d].len() {
            let k = slot(self.enabled[d][j]);
            self.expiring[k] = false;
        }
        self.count_sampled();
    }

    /// Samples packet `index` for sampler (`k`, `d`) and draws the next skip into
    /// `drawn` (the caller restarts the countdown from it).
    fn take(&mut self, d: usize, k: usize, index: usize, picks: &mut Picks) {
        let o = 1 - d;
        let src = &mut self.sources[k];
        src.base[d] += src.drawn[d];
        if self.dropping {
            // (a full ring: counted as `enqueue` would, nothing described; the
            // counter is published once per expiry, in `count_sampled`)
            src.drawn[d] = draw(&mut self.rng, src.rate);
            self.sampled += 1;
            self.count_drop(k);
            return;
        }
        let mut pool = src.base[d];
        if src.on(o) {
            pool += src.base[o] + src.drawn[o].saturating_sub(self.skip[o][k]);
        }
        let rate = src.rate;
        let ok = picks.push(Pick {
            index: index as u32,
            ifindex: k as u32,
            direction: Direction::ALL[d],
            rate,
            pool,
        });
        if !ok {
            src.drops += 1;
            self.dropped += 1;
            self.counters.dropped.store(self.dropped, Ordering::Relaxed);
        }
        src.drawn[d] = draw(&mut self.rng, rate);
        self.sampled += 1;
    }

    /// Publishes `sampled` to the control thread (once per expiry, not per pick).
    #[inline]
    fn count_sampled(&self) {
        self.counters.sampled.store(self.sampled, Ordering::Relaxed);
        if self.dropping {
            self.counters.dropped.store(self.dropped, Ordering::Relaxed);
        }
    }

    /// Copies the sampled packet into the ring and publishes it (see
    /// [`enqueue`](Self::enqueue) and [`publish`](Self::publish), which a pipeline
    /// uses to publish once per vector). Returns whether the sample was queued.
    #[inline]
    pub fn submit(&mut self, pick: &Pick, pkt: &PacketInfo<'_>) -> bool {
        let ok = self.enqueue(pick, pkt);
        self.publish();
        ok
    }

    /// Copies the sampled packet into the next slot of the ring, where the agent
    /// sees it after the next [`publish`](Self::publish). A full ring drops the
    /// sample and counts it (in the worker's `dropped` and in the sampler's drops,
    /// which the next sample of that interface carries); the worker never waits.
    /// Returns whether the sample was queued.
    #[inline]
    pub fn enqueue(&mut self, pick: &Pick, pkt: &PacketInfo<'_>) -> bool {
        let k = slot(pick.ifindex);
        let meta = SampleMeta {
            direction: pick.direction,
            source: pick.ifindex,
            rate: pick.rate,
            pool: pick.pool,
            drops: self.sources[k].drops,
            header_bytes: self.header_bytes,
        };
        if self.ring.write(&meta, pkt) {
            true
        } else {
            self.ring_full(k);
            false
        }
    }

    /// The ring was full when last checked and nothing was published since: an
    /// [`enqueue`](Self::enqueue) now drops the sample without looking. A pipeline
    /// can skip describing the packet and call [`drop_pick`](Self::drop_pick).
    #[inline]
    pub fn ring_blocked(&self) -> bool {
        self.ring.blocked()
    }

    /// Calls `f` on a word of each cache line the next `n` samples write first
    /// (see [`enqueue`](Self::enqueue)): for a prefetch with intent to write, which
    /// this crate (no `unsafe`) cannot issue itself. The ring's slots were last
    /// read by the agent's core: a store to one waits for that core to give the
    /// line up, unless the line was fetched for writing ahead of time.
    pub fn upcoming_lines(&self, n: usize, f: impl FnMut(&AtomicU64)) {
        self.ring.upcoming(n, f);
    }

    /// Starts a vector (after [`refresh`](Self::refresh)); returns whether the
    /// ring has room for a sample (the agent's index is reread only when the ring
    /// looked full: a line the agent writes only when it drains). Without room,
    /// the picks are counted as dropped as they are selected, and none is
    /// returned, until the next `begin_vector`: a pipeline need not note what they
    /// would be described from.
    #[inline]
    pub fn begin_vector(&mut self) -> bool {
        if self.ring.looks_full() {
            self.ring.recheck();
        }
        self.dropping = self.ring.looks_full();
        !self.dropping
    }

    /// Counts `pick` as dropped on a full ring, as [`enqueue`](Self::enqueue) does.
    pub fn drop_pick(&mut self, pick: &Pick) {
        self.ring_full(slot(pick.ifindex));
    }

    /// Makes the samples enqueued so far visible to the agent: one release store
    /// (none if nothing was enqueued since the last publish).
    #[inline]
    pub fn publish(&mut self) {
        self.ring.publish();
    }

    #[cold]
    fn ring_full(&mut self, k: usize) {
        self.count_drop(k);
        self.counters.dropped.store(self.dropped, Ordering::Relaxed);
    }

    /// One sample of source `k` lost to a full ring.
    #[inline(always)]
    fn count_drop(&mut self, k: usize) {
        self.sources[k].drops += 1;
        self.dropped += 1;
    }

    /// Packets this worker's sampler of (`ifindex`, `dir`) has seen (0 when off).
    pub fn sample_pool(&self, ifindex: u32, dir: Direction) -> u64 {
        let k = slot(ifindex);
        let d = dir as usize;
        let s = &self.sources[k];
        if !s.on(d) {
            return s.base[d];
        }
        s.base[d] + s.drawn[d].saturating_sub(self.skip[d][k])
    }

    /// Samples of `ifindex` this worker lost.
    pub fn drops(&self, ifindex: u32) -> u64 {
        self.sources[slot(ifindex)].drops
    }
}

//= sFlow v5 §3.1 and Appendix B: after each sample draw the next skip at random so
//= that packets / samples converges to N; a uniform distribution is fine as long as
//= every integer of the range can come up.
/// A skip uniform on `[1, 2N-1]`: mean N, for any N up to `u32::MAX`. One 64-bit
/// draw scaled by a widening multiply (Lemire), without the rejection step: the
/// bias is below `2N / 2^64`, far under anything a sample count can show, and a
/// sample costs no division or retry loop.
#[inline]
fn draw(rng: &mut SmallRng, rate: u32) -> u64 {
    let hi = 2 * u64::from(rate.max(1)) - 1;
    1 + ((u128::from(rng.next_u64()) * u128::from(hi)) >> 64) as u64
}

#[cfg(test)]
mod draw_tests {
    use super::*;

    /// Every skip of `[1, 2N-1]` comes up, nothing outside it, and the mean is N.
    #[test]
    fn draw_covers_the_range_with_mean_n() {
        let mut rng = SmallRng::seed_from_u64(7);
        for rate in [1u32, 2, 3, 10] {
            let hi = 2 * u64::from(rate) - 1;
            let mut seen = vec![0u64; hi as usize + 1];
            let n = 200_000u64;
            let mut sum = 0;
            for _ in 0..n {
                let d = draw(&mut rng, rate);
                assert!((1..=hi).contains(&d), "rate {rate}: {d}");
                seen[d as usize] += 1;
                sum += d;
            }
            assert!(seen[1..].iter().all(|&c| c > 0), "rate {rate}: {seen:?}");
            let mean = sum as f64 / n as f64;
            assert!(
                (mean - f64::from(rate)).abs() < 0.02 * f64::from(rate),
                "{mean}"
            );
        }
        assert_eq!(draw(&mut rng, 0), 1);
        let big = draw(&mut rng, u32::MAX);
        assert!((1..2 * u64::from(u32::MAX)).contains(&big));
    }
}
