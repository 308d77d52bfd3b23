//! The fast path: plain routed IPv4 in two walks over the vector, plain label
//! switching in one.
//!
//! Most of a router's traffic is the same few cases: an untagged frame to our MAC
//! carrying IPv4 (a header without options that checks out, a TTL above 1) or one
//! label to swap, pop at the penultimate hop, or pop into an IPv4 lookup; and a
//! route with one path to a resolved neighbour (maybe with labels to push). For
//! those the nodes (`ethernet-input`, `mpls-lookup`, `ip4-lookup`, `rewrite`)
//! walk the vector four or five times and keep per-packet metadata between
//! them. The fast path does it in two walks with the batched LPM between them,
//! the way DPDK's l3fwd does:
//!
//! 1. **classify** (runs of plain IPv4 and of labelled packets, each in a loop of
//!    its own): Ethernet (our MAC, untagged) and then, by EtherType, the IPv4
//!    header test of `ip4-lookup` ([`ip4_accept`]: version and IHL, lengths,
//!    checksum or the NIC's verdict, TTL, martians) with the destination
//!    collected as an LPM key (its window cut to the IPv4 packet: Ethernet
//!    padding dropped, put back if it is handed back), or the label switch on the
//!    top entry read with the Ethernet header ([`mpls::LabelGuard::top`]); a pop into IPv4
//!    ([`mpls::Top::pops_into_ip4`], [`mpls::LabelGuard::pop_into_ip4`]) checks the
//!    inner header and joins the same batch without a decision to match on (the
//!    pops of a run of one label leave with their window moved past the label, as
//!    IPv4 frames: [`Work::pop_run`]), the
//!    rest goes through [`mpls::LabelGuard::switch_top`], and a swap or a pop at
//!    the penultimate hop gets its L2 header ([`put_l2_in`]) and leaves right there.
//!    ARP, VLAN tags, options, broadcast, bad headers, label drops and punts go
//!    to the nodes untouched.
//! 2. **lookup** the keys in one batch.
//! 3. **forward** the IPv4 keys: a cache kept
//!    while the FIB version and interface table stay (see `Work::seen`) says per
//!    FIB result whether it is a plain forward (a forward leg, a resolved
//!    adjacency on an up interface, at most [`FAST_LABELS`] labels) and holds the
//!    label stack entries ready to write ([`leg_stack`]; an ECMP result's leg is
//!    picked per packet by [`ecmp_hash`] and decoded once per leg). A run of
//!    keys with one result goes out of line ([`Work::forward_run`]), in a loop
//!    that holds its adjacency and counters; the other keys whose result is
//!    cached as a plain forward or a push out of an untagged link go through a
//!    loop of their own ([`Work::quick_keys`]). Per packet: MTU and headroom,
//!    then
//!    the steps `ip4-lookup` and `rewrite` use: [`ttl_dec`], [`impose`],
//!    [`write_l2`] (a plain forward and a push of one or two labels out of an
//!    untagged link each in one slice of the buffer:
//!    [`forward_plain`](send::forward_plain), [`forward_push`](send::forward_push)).
//!
//! So the fast path decides which packets it takes and batches them; each
//! per-packet step is the nodes' own. A packet it does not finish goes to the
//! nodes: untouched ones from the start, counters and all; ones it already
//! changed (switched labels) resume at `ip4-lookup` or `rewrite` with their
//! metadata filled in. Every rare case (ICMP errors, ARP, local delivery, drops,
//! incomplete neighbours) has one implementation, and the fast path changes no
//! packet's fate: `tests/router_core.rs` runs random vectors through a core with
//! it and one without and compares every byte and counter. A vector the trace
//! watches takes the nodes whole.
//!
//! Metadata: a packet the fast path finishes has none, unless sFlow samples (only
//! [`Next::Fast`] and the adjacency in a compact array, the receiving interface once
//! per vector when one port sent it all, and for tx sampling the ifIndex it left
//! by: see `sflow_hook`).
//!
//! `show run` still shows the nodes: the classify walk is counted as
//! `ethernet-input` (the label switch included; switched packets also count under
//! `mpls-lookup`), the lookup and forward walk as `ip4-lookup` (its rewrite
//! included), and the packets it finished also under `rewrite`.

use super::*;

mod forward_walk;
mod ip4;
mod ip6;
mod label;
mod send;

/// Labels a fast-path route may push (more go through the general path).
pub(super) const FAST_LABELS: usize = 4;
const _: () = assert!(FAST_LABELS.is_power_of_two());

/// Slots of the FIB result cache (a power of two): kept from vector to vector
/// while the FIB version and the interface table stay (see `Work::seen`), so a
/// PE with a label per route decodes each result once, not once per vector.
/// Direct-mapped by result id: results are numbered densely, so a PE whose
/// routes use up to this many distinct (next hop, labels) results never evicts
/// one for another. 128 KiB per worker, within L2; with 1,024 slots the
/// pipeline bench's PE (about 1,500 results over three tables) decoded a fifth
/// of its pushes again (`pe_push` 48 to 39 cycles/packet).
pub(super) const FWD_CACHE: usize = 4096;

/// Slots of the ECMP leg cache (a power of two), behind the FIB result cache in
/// `Work::fd`: the legs of ECMP results decoded by leg id ([`fib::FibView::leg_id`]),
/// so a packet of an ECMP route pays for its hash and two loads, not for a decode.
pub(super) const LEG_CACHE: usize = 64;

/// How the fast path sends the packets of a FIB result (or an ECMP leg).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum How {
    /// Not a plain forward (no forward leg, an incomplete adjacency or one on a
    /// down interface, more labels than [`FAST_LABELS`]): the general path's.
    #[default]
    No,
    /// One leg, nothing to push, an untagged interface: the forward walk's
    /// inline case ([`forward_plain`](send::forward_plain)).
    Plain,
    /// One leg, one label to push, an untagged interface
    /// ([`forward_push`](send::forward_push)).
    Push1,
    /// One leg, two labels to push (an LSP's over a VPN's), an untagged
    /// interface ([`forward_push`](send::forward_push)).
    Push2,
    /// One leg, three or more labels or a tagged interface ([`forward`](send::forward)).
    Other,
    /// Several buckets: each packet's leg is picked by its flow hash, and found
    /// decoded in the leg cache (`fd[FWD_CACHE..]`, see [`LEG_CACHE`]).
    Ecmp,
}

/// What one FIB result means for the fast path, decoded once per FIB version.
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(32))]
pub(super) struct FwdDec {
    /// The result (or leg id) it holds and its generation ([`fd_tag`]; 0: none).
    tag: u64,
    how: How,
    /// `how` is [`How::Plain`]: the forward walk's first test (a byte of its
    /// own, or the compiler orders the other cases' tests before it).
    plain: bool,
    /// Labels to push (implicit null excluded).
    push: u8,
    /// The adjacency.
    adj: u32,
    /// Its slot in the adjacency cache (`rw`); a slot taken over by another
    /// adjacency drops this cache, a new generation (see [`Work::rw_slot`]).
    rs: u8,
    /// Label stack entries, top first, S bit on the last, TTL 0 (filled per packet).
    lse: [u32; FAST_LABELS],
}

// (a cache line holds two: the forward walk reads one per result)
const _: () = assert!(std::mem::size_of::<FwdDec>() == 32);

/// The tag of FIB result (or leg id) `f` decoded in generation `generation`
/// (see `Work::fd_gen`): the result + 1 in the low half, so 0 is no entry; one
/// compare tells an entry's key and generation.
#[inline(always)]
pub(super) fn fd_tag(generation: u64, f: u32) -> u64 {
    generation | u64::from(f.wrapping_add(1))
}

/// The fast-path keys whose window was cut to their IPv4 packet (Ethernet
/// padding dropped: [`cut_padding`](ip4::cut_padding)), with the length of their
/// window as received: a key handed back gets its frame as it came in.
#[derive(Debug)]
pub(super) struct Padded {
    /// Bit per packet; cleared per vector.
    pub(super) bits: [u64; 4],
    /// The window's length as received, of the packets of `bits`.
    len: [u16; BURST],
}

impl Default for Padded {
    fn default() -> Self {
        Self {
            bits: [0; 4],
            len: [0; BURST],
        }
    }
}

impl Padded {
    /// The window length packet `i` was received with, if it was cut.
    #[inline(always)]
    fn received(&self, i: usize) -> Option<usize> {
        (self.bits[(i >> 6) & 3] >> (i & 63) & 1 != 0)
            .then(|| usize::from(self.len[i & (BURST - 1)]))
    }
}

/// Per-stage packets and cycles of one vector, committed once at its end (one call
/// per stage and vector, whichever path the packets took).
#[derive(Debug, Default)]
pub(super) struct StageAcc {
    pkts: [u64; Stage::COUNT],
    cycles: [u64; Stage::COUNT],
}

impl StageAcc {
    /// Adds `pkts` packets and the cycles since `t0` to stage `s`; returns now.
    #[inline(always)]
    pub(super) fn add(&mut self, s: Stage, pkts: usize, t0: u64) -> u64 {
        let t1 = tsc();
        self.pkts[s as usize] += pkts as u64;
        self.cycles[s as usize] += t1.wrapping_sub(t0);
        t1
    }

    /// Counts packets without cycles (work fused into another stage's walk).
    #[inline(always)]
    pub(super) fn count(&mut self, s: Stage, pkts: usize) {
        self.pkts[s as usize] += pkts as u64;
    }

    pub(super) fn commit(&self, stats: &WorkerStats) {
        for (k, c) in stats.stages.iter().enumerate() {
            if self.pkts[k] > 0 {
                c.calls.inc();
                c.pkts.add(self.pkts[k]);
                c.cycles.add(self.cycles[k]);
            }
        }
    }
}

/// The receiving interface as the fast path needs it.
#[derive(Clone, Copy)]
struct RxIf {
    port: u16,
    ifindex: u16,
    table: u32,
    /// Its MAC as [`mac_key`] has a frame's destination MAC; [`NO_MAC`] (which no
    /// key equals) when the port has no untagged interface that is up.
    mac: u64,
    /// IPv4 may take the fast path: the interface is up and in the vector's table.
    v4: bool,
}

/// The MAC of an [`RxIf`] that takes nothing: no [`mac_key`] equals it.
const NO_MAC: u64 = u64::MAX;

impl RxIf {
    /// Becomes port `port`'s interface if it is not already.
    #[inline(always)]
    fn follow(&mut self, port: u16, ift: &IfTable, vt: u32) {
        if port != self.port {
            *self = RxIf::of(port, ift, vt);
        }
    }

    /// Port `port`'s untagged interface; `vt` is the vector's routing table.
    fn of(port: u16, ift: &IfTable, vt: u32) -> RxIf {
        // (a pseudowire's circuit: its frames are the general path's)
        let l3 = ift
            .rx_iface(port, None)
            .filter(|_| ift.pw_of_port(port).is_none());
        match l3.filter(|i| i.up) {
            Some(i) => {
                let mut b = [0u8; 8];
                b[..6].copy_from_slice(&i.mac);
                RxIf {
                    port,
                    ifindex: i.ifindex as u16,
                    table: i.table,
                    mac: u64::from_le_bytes(b) << 16,
                    v4: i.table == vt,
                }
            }
            None => RxIf {
                port,
                ifindex: 0,
                table: 0,
                mac: NO_MAC,
                v4: false,
            },
        }
    }
}

/// `Meta::path` bits of the stages a packet went through.
const ETH: u8 = 1 << Stage::EthernetInput as u8;
const MPLS: u8 = 1 << Stage::MplsLookup as u8;

/// Bytes the classify walk reads at once: Ethernet and an IPv4 header without
/// options (shorter frames go to the general path).
const HEAD: usize = ETH_LEN + 20;

/// A label stack entry's bytes: what a pop into IPv4 takes off.
const LABEL_LEN: usize = 4;

/// The destination MAC of a frame in the high 48 bits of a word (its first eight
/// bytes read little-endian, shifted: one load and one shift, no mask).
#[inline(always)]
fn mac_key(h: &[u8; HEAD]) -> u64 {
    u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]) << 16
}

/// Counts `pkts` packets and `bytes` bytes received on interface `ifindex`.
#[inline(always)]
fn rx_flush(stats: &WorkerStats, ifindex: u16, pkts: u64, bytes: u64) {
    let ifindex = usize::from(ifindex);
    flush_rx(
        stats,
        &Run {
            ifindex,
            pkts,
            bytes,
        },
    );
}

impl Work {
    /// Marks packet `i` to resume in the nodes with `m` (it went through
    /// part of the fast path, which may have changed it).
    #[inline(always)]
    fn resume(&mut self, i: usize, m: Meta, hb: &mut Handback<'_, '_>) {
        self.meta[i] = m;
        self.resumed[i >> 6] |= 1 << (i & 63);
        hb.back[hb.n] = i as u16;
        hb.n += 1;
    }

    /// Marks the `k` IPv4 keys the classify walk took ([`Next::Fast`], popped
    /// from under a label or not) for sFlow. Before the forward walk: a packet it
    /// hands back gets its whole metadata then. (A pass of its own: in the
    /// classify walk, the per-packet metadata address cost every packet, sFlow on
    /// or not.)
    #[cold]
    #[inline(never)]
    fn note_fast6(&mut self, k: usize) {
        for j in 0..k.min(BURST) {
            let i = usize::from(self.sel6[j]);
            self.meta[i].next = Next::Fast(self.popped(i));
        }
    }

    fn note_fast(&mut self, k: usize) {
        for j in 0..k {
            let i = usize::from(self.sel[j]);
            self.meta[i].next = Next::Fast(self.popped(i));
        }
    }

    /// Whether fast-path key packet `i` came from under a label (its window
    /// starts past the label: the frame does not say).
    #[inline(always)]
    fn popped(&self, i: usize) -> bool {
        self.popped[(i >> 6) & 3] >> (i & 63) & 1 != 0
    }

    /// Whether packet `i` resumes in the nodes (see [`Work::resume`]).
    #[inline(always)]
    pub(super) fn is_resumed(&self, i: usize) -> bool {
        self.resumed[i >> 6] >> (i & 63) & 1 != 0
    }

    /// Runs the fast path over `pkts[..n]`; returns how many packets it left for
    /// the general path (their indices in `self.slow`, ascending). `light_meta`:
    /// note what sFlow reads of a finished packet: [`Next::Fast`] and the
    /// adjacency (the receiving interface: see `sflow_rx_if`).
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    #[inline(always)]
    pub(super) fn fast_ip4<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        n: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        labels: &mpls::LabelReader,
        light_meta: bool,
        acc: &mut StageAcc,
    ) -> usize {
        let t0 = tsc();
        // The vector's routing table: the first packet's interface's (packets of
        // another table take the general path).
        let port0 = pkts.first().map_or(u16::MAX, |p| p.port());
        let vt = RxIf::of(port0, ift, 0).table;
        // Packets handed back part-way.
        let mut hb = Handback {
            ift,
            view,
            vt,
            light_meta,
            fb_if: RxIf::of(u16::MAX, ift, vt),
            back: self.hback.take().unwrap_or_else(|| Box::new([0; BURST])),
            n: 0,
        };
        let mut c = Cls {
            rxif: RxIf::of(port0, ift, vt),
            vt,
            rx_pkts: 0,
            rx_bytes: 0,
            one_port: true,
            k: 0,
            pt: None,
            k2: 0,
            n_slow: 0,
            sent: 0,
            switched: 0,
            guard: None,
            k6: 0,
            pt6: None,
            k26: 0,
        };
        self.classify(pkts, out, n, ift, vt, &mut c, labels, &mut hb);
        let Cls {
            rxif,
            rx_pkts,
            rx_bytes,
            one_port,
            k,
            pt,
            k2,
            mut n_slow,
            sent,
            switched,
            guard,
            k6,
            pt6,
            k26,
            ..
        } = c;
        drop(guard);
        rx_flush(&self.stats, rxif.ifindex, rx_pkts, rx_bytes);
        if light_meta {
            self.note_fast(k);
        }
        // Packets taken: the IPv4 keys that were not popped, and the switched ones.
        let t1 = acc.add(Stage::EthernetInput, n - n_slow, t0);
        acc.count(Stage::MplsLookup, switched);

        // The receiving interface of the packets that leave the fast path after
        // the classify walk.
        hb.fb_if = rxif;

        let mut done_ip4 = if k > 0 {
            view.lookup_burst(vt, &self.keys[..k], &mut self.fwd[..k]);
            self.forward_walk(pkts, out, k, &mut hb)
        } else {
            0
        };
        if let (Some(pt), true) = (pt, k2 > 0) {
            // The second batch, from the top of the arrays to their start, in the
            // order it was taken; its walk resumes packets in its own table.
            second_batch_to_front(&mut self.keys, &mut self.sel, k2);
            if light_meta {
                self.note_fast(k2);
            }
            view.lookup_burst(pt, &self.keys[..k2], &mut self.fwd[..k2]);
            hb.vt = pt;
            done_ip4 += self.forward_walk(pkts, out, k2, &mut hb);
            hb.vt = vt;
        }
        let t2 = acc.add(Stage::Ip4Lookup, done_ip4, t1);
        if light_meta {
            self.note_fast6(k6);
        }
        let mut done_ip6 = 0;
        if k6 > 0 {
            view.lookup6_burst(vt, &self.keys6[..k6], &mut self.fwd[..k6]);
            done_ip6 = self.forward_walk6(pkts, out, k6, &mut hb);
        }
        if let (Some(pt6), true) = (pt6, k26 > 0) {
            // IPv6's second batch, as IPv4's.
            second_batch_to_front(&mut self.keys6, &mut self.sel6, k26);
            if light_meta {
                self.note_fast6(k26);
            }
            view.lookup6_burst(pt6, &self.keys6[..k26], &mut self.fwd[..k26]);
            hb.vt = pt6;
            done_ip6 += self.forward_walk6(pkts, out, k26, &mut hb);
            hb.vt = vt;
        }
        if k6 + k26 > 0 {
            acc.add(Stage::Ip6Lookup, done_ip6, t2);
        }
        acc.count(Stage::Rewrite, sent + done_ip4 + done_ip6);
        let (back, n_back) = (&mut hb.back, hb.n);
        if n_back > 0 {
            // Merge the two ascending index lists.
            back[..n_back].sort_unstable();
            let mut merged = [0u16; BURST];
            let (mut a, mut b, mut m) = (0, 0, 0);
            while a < n_slow || b < n_back {
                let take_a = b == n_back || (a < n_slow && self.slow[a] < back[b]);
                merged[m] = if take_a { self.slow[a] } else { back[b] };
                a += usize::from(take_a);
                b += usize::from(!take_a);
                m += 1;
            }
            self.slow[..m].copy_from_slice(&merged[..m]);
            n_slow = m;
        }
        // (the scratch lent for the vector goes back)
        self.hback = Some(hb.back);
        // sFlow reads the receiving interface of every packet: for a vector the
        // fast path took whole from one port, that is one value; otherwise each
        // packet it took gets its own (the general path fills the others').
        self.obs.rx_one = (n_slow == 0 && one_port).then_some(rxif.ifindex);
        if self.obs.sflow_rx_if && self.obs.rx_one.is_none() {
            self.fill_rx_if(pkts, n, n_slow, ift, vt);
        }
        n_slow
    }

    /// The classify walk over `pkts[..n]`: runs of plain IPv4 and of labelled
    /// packets, each in a loop of its own (one loop for every case kept a dozen
    /// values live and spilled them); what neither takes goes to the general path
    /// untouched. `vt` is the vector's routing table.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn classify<'g, P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        n: usize,
        ift: &IfTable,
        vt: u32,
        c: &mut Cls<'g>,
        labels: &'g mpls::LabelReader,
        hb: &mut Handback<'_, '_>,
    ) {
        let mut i = 0;
        while i < n {
            if c.rxif.mac == NO_MAC {
                // Nothing of this port is the fast path's (a pseudowire's
                // circuit, no untagged interface up): its run goes to the
                // general path as it is.
                let port = c.rxif.port;
                while i < n && pkts.get(i).is_some_and(|p| p.port() == port) {
                    self.slow[c.n_slow & (BURST - 1)] = i as u16;
                    c.n_slow += 1;
                    i += 1;
                }
                if let Some(p) = pkts.get(i).filter(|_| i < n) {
                    rx_flush(&self.stats, c.rxif.ifindex, c.rx_pkts, c.rx_bytes);
                    (c.rx_pkts, c.rx_bytes) = (0, 0);
                    c.rxif = RxIf::of(p.port(), ift, vt);
                    c.one_port = false;
                }
                continue;
            }
            i = if nic_csum(self.nic_csum_ports, c.rxif.port) {
                self.ip4_run::<true, P>(pkts, i, n, c)
            } else {
                self.ip4_run::<false, P>(pkts, i, n, c)
            };
            i = self.mpls_run(pkts, out, i, n, c, labels, hb);
            i = self.ip6_run(pkts, i, n, c);
            let Some(p) = pkts.get(i).filter(|_| i < n) else {
                break;
            };
            let port = p.port();
            if port != c.rxif.port {
                // (the runs take it on its own port's interface)
                rx_flush(&self.stats, c.rxif.ifindex, c.rx_pkts, c.rx_bytes);
                (c.rx_pkts, c.rx_bytes) = (0, 0);
                c.rxif = RxIf::of(port, ift, vt);
                c.one_port = false;
                continue;
            }
            self.slow[c.n_slow & (BURST - 1)] = i as u16;
            c.n_slow += 1;
            i += 1;
        }
    }

    /// Fills `rx_if` of the packets the fast path took (every packet of
    /// `pkts[..n]` not in `self.slow[..n_slow]`).
    #[cold]
    #[inline(never)]
    fn fill_rx_if<P: Packet>(
        &mut self,
        pkts: &[P],
        n: usize,
        n_slow: usize,
        ift: &IfTable,
        vt: u32,
    ) {
        let mut s = 0;
        let mut rx = RxIf::of(u16::MAX, ift, vt);
        for (i, p) in pkts.iter().enumerate().take(n) {
            if s < n_slow && usize::from(self.slow[s]) == i {
                s += 1;
                continue;
            }
            rx.follow(p.port(), ift, vt);
            self.meta[i].rx_if = rx.ifindex;
        }
    }
}

/// Where the classify walk stands (see [`Work::fast_ip4`]), shared by its runs.
struct Cls<'g> {
    /// The receiving interface of the packets at hand.
    rxif: RxIf,
    /// The vector's routing table.
    vt: u32,
    /// Received packets and bytes taken on `rxif`, not yet counted.
    rx_pkts: u64,
    rx_bytes: u64,
    /// Every packet so far came in on the first packet's port.
    one_port: bool,
    /// IPv4 keys so far.
    k: usize,
    /// The table of the second batch: packets whose label pops them into a
    /// table other than `vt` (a VPN label into its VRF), the first such table.
    pt: Option<u32>,
    /// Its keys so far, kept from the top of the key arrays down.
    k2: usize,
    /// Packets for the general path so far (`Work::slow`).
    n_slow: usize,
    /// Labelled packets switched and sent.
    sent: usize,
    /// Packets the label switch took (counted under `mpls-lookup`).
    switched: usize,
    /// The label table, pinned at the first labelled packet.
    guard: Option<mpls::LabelGuard<'g>>,
    /// IPv6 keys so far (`Work::keys6`, `Work::sel6`).
    k6: usize,
    /// IPv6's second batch, as `pt` and `k2` (a 6VPE label into its VRF).
    pt6: Option<u32>,
    k26: usize,
}

/// What the fast path's walks share over a vector: the tables, what to note per
/// packet sent, and the packets handed back to the nodes part-way.
struct Handback<'a, 'v> {
    ift: &'a IfTable,
    /// The FIB as this vector sees it.
    view: &'a fib::FibView<'v>,
    /// The vector's routing table.
    vt: u32,
    /// Note what sFlow reads of packets sent (see [`Work::fast_ip4`]).
    light_meta: bool,
    /// The receiving interface of the packet handed back last.
    fb_if: RxIf,
    /// Their indices (`n` of them), in the order handed back (`Work::hback`, lent
    /// for the vector).
    back: Box<[u16; BURST]>,
    n: usize,
}

impl Handback<'_, '_> {
    /// Makes `fb_if` port `port`'s interface.
    #[inline(always)]
    fn follow(&mut self, port: u16) {
        self.fb_if.follow(port, self.ift, self.vt);
    }
}

/// Packet `i` of a classify run on `port`'s interface, with the data of the one
/// [`PREFETCH`] ahead prefetched; `None` when it came in on another port or in several segments (the
/// run ends there).
#[inline(always)]
fn run_next<P: Packet>(pkts: &mut [P], i: usize, port: u16) -> Option<&mut P> {
    // (one length check for the packet and the one ahead of it but in a vector's
    // last packets)
    let w = pkts.get_mut(i..)?;
    let p = if w.len() > PREFETCH {
        prefetch_data(&mut w[PREFETCH]);
        &mut w[0]
    } else {
        w.first_mut()?
    };
    Some(p).filter(|p| p.whole_from(port))
}

/// Where the IPv4 header of fast-path key packet `p` starts: right behind the
/// frame's L2 header (a popped packet's window starts past its label).
#[inline(always)]
fn key_l3<P: Packet>(p: &P) -> usize {
    p.window().0 + ETH_LEN
}

/// Moves a second batch's `k` keys and their packets' places, taken from the
/// top of the arrays down, to their start in the order they were taken.
#[inline(always)]
fn second_batch_to_front<K: Copy>(keys: &mut [K; BURST], sel: &mut [u16; BURST], k: usize) {
    let from = BURST - k.min(BURST);
    keys[from..].reverse();
    sel[from..].reverse();
    keys.copy_within(from.., 0);
    sel.copy_within(from.., 0);
}

/// Sets bits `a..b` of `bits` (a word at a time).
#[inline(always)]
fn mark_range(bits: &mut [u64; 4], a: usize, b: usize) {
    let b = b.min(BURST);
    let mut j = a;
    while j < b {
        let (w, lo) = (j >> 6, j & 63);
        // (bits `lo..hi` of word `w`, at least one)
        let hi = (b - (w << 6)).min(64);
        if let Some(x) = bits.get_mut(w) {
            *x |= (u64::MAX >> (64 - (hi - lo))) << lo;
        }
        j = (w + 1) << 6;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_range_sets_exactly_the_range() {
        for a in 0..=BURST {
            for b in a..=BURST + 3 {
                let mut bits = [0u64; 4];
                mark_range(&mut bits, a, b);
                for j in 0..BURST {
                    let set = bits[j >> 6] >> (j & 63) & 1 != 0;
                    assert_eq!(set, (a..b).contains(&j), "{a}..{b} bit {j}");
                }
            }
        }
    }
}
