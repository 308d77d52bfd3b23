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
//!    that holds its adjacency and counters; per packet: MTU and headroom, then
//!    the steps `ip4-lookup` and `rewrite` use: [`ttl_dec`], [`impose`],
//!    [`write_l2`] (a plain forward and a push of one or two labels out of an
//!    untagged link each in one slice of the buffer: [`forward_plain`],
//!    [`forward_push`]).
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
    /// inline case ([`forward_plain`]).
    Plain,
    /// One leg, one label to push, an untagged interface ([`forward_push`]).
    Push1,
    /// One leg, two labels to push (an LSP's over a VPN's), an untagged
    /// interface ([`forward_push`]).
    Push2,
    /// One leg, three or more labels or a tagged interface ([`forward`]).
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
/// padding dropped: [`cut_padding`]), with the length of their window as
/// received: a key handed back gets its frame as it came in.
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

/// Where a [`Work::switch_run`] ended and what it counted.
struct SwitchRun {
    /// The first packet it did not take.
    end: usize,
    tx_pkts: u64,
    tx_bytes: u64,
    rx_bytes: u64,
}

/// Where a [`Work::pop_run`] ended, the keys taken so far, and the bytes received.
struct PopRun {
    end: usize,
    k: usize,
    rx_bytes: u64,
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

/// Bytes a pop run reads at once: Ethernet, one label and an IPv4 header without
/// options.
const POPPED_HEAD: usize = ETH_LEN + LABEL_LEN + 20;

/// EtherType IPv4, its two bytes at offset 12 read little-endian.
const ET_IP4_LE: u16 = 0x0008;
/// EtherType MPLS unicast, its two bytes at offset 12 read little-endian.
const ET_MPLS_LE: u32 = 0x4788;

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
    fn note_fast(&mut self, k: usize) {
        for j in 0..k {
            let i = usize::from(self.sel[j]);
            self.meta[i].next = Next::Fast(self.popped(i));
        }
    }

    /// Notes what sFlow reads of switched packet `i`, sent through adjacency `adj`
    /// (slot `rs`): [`Next::Fast`] when `light_meta`, its adjacency and the
    /// ifIndex it left by.
    #[cold]
    #[inline(never)]
    fn note_switched(&mut self, i: usize, adj: u32, rs: usize, light_meta: bool) {
        if light_meta {
            self.meta[i].next = Next::Fast(true);
        }
        self.obs.fast_adj[i & (BURST - 1)] = adj;
        self.obs.txs[i & (BURST - 1)] = tx_ifindex(&self.rw[rs & (RW_CACHE - 1)]);
    }

    /// Whether fast-path key packet `i` came from under a label (its window
    /// starts past the label: the frame does not say).
    #[inline(always)]
    fn popped(&self, i: usize) -> bool {
        self.popped[(i >> 6) & 3] >> (i & 63) & 1 != 0
    }

    /// Key packet `i` (`p`) had the label behind its L2 header popped: its
    /// window moves past the label (the forward walk sends it as an IPv4 frame
    /// received so; the classify walk saw the IPv4 header in the frame, and
    /// [`Work::ip4_resume`] moves it back), ends at `frame` (the L2 header and
    /// the IPv4 total length: Ethernet padding cut) and is marked popped.
    #[inline(always)]
    fn popped_key<P: Packet>(&mut self, p: &mut P, i: usize, frame: usize) {
        pop_window(p, i, frame, &mut self.padded);
        self.popped[(i >> 6) & 3] |= 1 << (i & 63);
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
        };
        // The classify walk: runs of plain IPv4 and of labelled packets, each in
        // a loop of its own (one loop for every case kept a dozen values live and
        // spilled them); what neither takes goes to the general path untouched.
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
                self.ip4_run::<true, P>(pkts, i, n, &mut c)
            } else {
                self.ip4_run::<false, P>(pkts, i, n, &mut c)
            };
            i = self.mpls_run(pkts, out, i, n, &mut c, labels, &mut hb);
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
            let from = BURST - k2;
            self.keys[from..].reverse();
            self.sel[from..].reverse();
            self.keys.copy_within(from.., 0);
            self.sel.copy_within(from.., 0);
            if light_meta {
                self.note_fast(k2);
            }
            view.lookup_burst(pt, &self.keys[..k2], &mut self.fwd[..k2]);
            hb.vt = pt;
            done_ip4 += self.forward_walk(pkts, out, k2, &mut hb);
            hb.vt = vt;
        }
        acc.add(Stage::Ip4Lookup, done_ip4, t1);
        acc.count(Stage::Rewrite, sent + done_ip4);
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

    /// The classify walk's run of plain IPv4 packets from `pkts[i0]` on:
    /// untagged frames on `c.rxif`'s port (up, in the vector's table) to its MAC
    /// carrying an IPv4 header that passes [`ip4_accept_sized`]. Their destinations
    /// become the next keys. Returns where the run ends.
    /// `NIC`: read the NIC's checksum verdicts (the port's device checks them; a
    /// port whose device does not gets a loop that never reads one).
    #[inline(never)]
    fn ip4_run<const NIC: bool, P: Packet>(
        &mut self,
        pkts: &mut [P],
        i0: usize,
        n: usize,
        c: &mut Cls<'_>,
    ) -> usize {
        let rxif = c.rxif;
        if !rxif.v4 {
            return i0;
        }
        let n = n.min(pkts.len());
        // (every packet of the run is a key: packet `i`'s is key `i + kd`, one
        // counter for both)
        let kd = c.k.wrapping_sub(i0);
        let mt = &self.martian;
        let (mut bytes, mut i) = (0u64, i0);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            // (a checksum the NIC found wrong: the general path drops and counts it)
            let csum = if NIC {
                p.rx_ip4_csum()
            } else {
                RxCsum::Unknown
            };
            let frame = p.data_mut();
            let len = frame.len();
            let Some(hd) = frame.first_chunk::<HEAD>().filter(|_| csum != RxCsum::Bad) else {
                break;
            };
            // (the EtherType and the version byte apart: two compares with the
            // frame's bytes, where a 3-byte value took five instructions)
            let et = u16::from_le_bytes([hd[12], hd[13]]);
            if (mac_key(hd) != rxif.mac) | (et != ET_IP4_LE) | (hd[14] != 0x45) {
                break;
            }
            let Some(ip) = hd.last_chunk::<20>() else {
                break;
            };
            // (a key's frame ends where its total length says: a frame of
            // exactly that length, nearly all, needs one compare, which also
            // holds the total length at 20 or more; Ethernet padding is cut)
            let frame = ETH_LEN + usize::from(rd16(ip, 2));
            let Some(dst) = ip4_accept_sized(ip, csum == RxCsum::Good, mt) else {
                break;
            };
            if frame != len && !cut_padding(p, i, frame, len, &mut self.padded) {
                break;
            }
            let k = i.wrapping_add(kd) & (BURST - 1);
            self.keys[k] = dst;
            self.sel[k] = i as u16;
            bytes += len as u64;
            i += 1;
        }
        c.k = i.wrapping_add(kd);
        c.rx_pkts += (i - i0) as u64;
        c.rx_bytes += bytes;
        i
    }

    /// The classify walk's run of labelled packets from `pkts[i0]` on: untagged
    /// frames on `c.rxif`'s port to its MAC with EtherType MPLS, switched
    /// ([`mpls::LabelGuard::switch`]). A swap or PHP gets its L2 header and leaves
    /// in the same walk (or resumes in the general rewrite: incomplete adjacency,
    /// interface down, no headroom, MTU); a pop into IPv4 checks the inner header
    /// and joins the IPv4 keys (or resumes in the general IPv4 stage); any other
    /// decision leaves the packet untouched for the general path. Returns where
    /// the run ends.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn mpls_run<'g, P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        i0: usize,
        n: usize,
        c: &mut Cls<'g>,
        labels: &'g mpls::LabelReader,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        let (rxif, vt) = (c.rxif, c.vt);
        let n = n.min(pkts.len());
        // (the label table is pinned once, at the first labelled packet)
        let is_mpls = |p: &mut P| {
            let (start, _) = p.window();
            p.raw_mut().get(start + 12..start + 14) == Some(&[0x88, 0x47][..])
        };
        if !pkts.get_mut(i0).filter(|_| i0 < n).is_some_and(is_mpls) {
            return i0;
        }
        let g = c.guard.get_or_insert_with(|| labels.pin());
        let (mut k, mut sent, mut n_slow) = (c.k, c.sent, c.n_slow);
        let n_slow0 = n_slow;
        let (mut pt, mut k2) = (c.pt, c.k2);
        // (the packets the switch took are those of the run not left for the
        // general path: counted at the end)
        let (mut bytes, mut i) = (0u64, i0);
        let notes = hb.light_meta | self.obs.tx_ifs;
        // (the swaps and PHPs that follow one to the same adjacency go out in
        // `switch_run`, which keeps no sFlow notes or stacks)
        let switch_runs = !notes && !self.obs.keep_stacks;
        // The adjacency of the last packet switched, its slot, and what was sent
        // through it since (added to its counters when another one comes, and at
        // the end: one label's packets mostly leave by one adjacency, and a
        // read-modify-write of its counters per packet is a store-to-load chain).
        let mut last = (u32::MAX, 0usize);
        let (mut tx_pkts, mut tx_bytes) = (0u64, 0u64);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let (start, len) = p.window();
            let end = start + len;
            let Some((frame, top)) = labelled(p, &rxif) else {
                break;
            };
            let l3 = start + ETH_LEN;
            if self.obs.keep_stacks {
                // (out of line: the stacks' address is not kept per packet)
                sflow_hook::keep_stack_of(&mut self.obs.stacks, i, frame, l3);
            }
            let mut off = l3;
            let t = g.top(top);
            if t.pops_into_ip4(top) {
                // Popped: on into the IPv4 batch, or the general IPv4 stage (the
                // frame has changed: resume there); not IPv4 below: untouched,
                // for the general path to drop.
                match g
                    .pop_into_ip4(frame, &mut off, top, t)
                    .map(|t| mpls::lookup_table(t, rxif.table))
                {
                    Ok(table) => match frame.get(off..).and_then(|ip| {
                        let h = ip.first_chunk::<20>()?;
                        Some((
                            ip4_accept(h, ip.len(), false)?,
                            ETH_LEN + usize::from(rd16(h, 2)),
                        ))
                    }) {
                        Some((d, fl)) if table == vt => {
                            self.keys[k & (BURST - 1)] = d;
                            self.sel[k & (BURST - 1)] = i as u16;
                            k += 1;
                            self.popped_key(p, i, fl);
                            if !self.obs.keep_stacks {
                                // (the same label's pops that follow)
                                bytes += len as u64;
                                let r = self.pop_run(pkts, i + 1, n, rxif, g, (top, t), k, hb);
                                (i, k) = (r.end, r.k);
                                bytes += r.rx_bytes;
                                continue;
                            }
                        }
                        Some((d, fl)) if pt.is_none_or(|t| t == table) => {
                            pt = Some(table);
                            let j = (BURST - 1 - k2) & (BURST - 1);
                            self.keys[j] = d;
                            self.sel[j] = i as u16;
                            k2 += 1;
                            self.popped_key(p, i, fl);
                        }
                        _ => self.ip4_resume_at(i, off, end, rxif.ifindex, table, true, hb),
                    },
                    Err(_) => {
                        self.slow[n_slow & (BURST - 1)] = i as u16;
                        n_slow += 1;
                        i += 1;
                        continue;
                    }
                }
                bytes += len as u64;
                i += 1;
                continue;
            }
            let (adj, et) = match g.switch_top(frame, &mut off, top, t) {
                mpls::MplsDecision::Forward { adj } => (adj, ETHERTYPE_MPLS),
                mpls::MplsDecision::Php { adj } => (adj, ETHERTYPE_IPV4),
                mpls::MplsDecision::Xconnect { pw } => {
                    // A pseudowire's frame: out of its circuit from here.
                    let mut m = Meta {
                        l3: l3 as u16,
                        end: end as u16,
                        rx_if: rxif.ifindex,
                        path: ETH | MPLS,
                        ..Meta::default()
                    };
                    pw::pw_decap(&self.stats, p, &mut m, pw, off, hb.ift);
                    match m.pw_circuit() {
                        Some(_) => {
                            // (as the general path sends a ready packet)
                            let o = self.ready_out(i, &m);
                            if let Some(slot) = out.get_mut(i) {
                                *slot = o;
                            }
                            if notes {
                                // (sFlow reads its metadata, as the general
                                // path leaves it)
                                self.meta[i & (BURST - 1)] = m;
                            }
                        }
                        // (dropped and counted: the general path frees it)
                        None => self.resume(i, m, hb),
                    }
                    bytes += len as u64;
                    i += 1;
                    continue;
                }
                // Left untouched: the general path does it all again (a pop into
                // IPv4 is taken above).
                _ => {
                    self.slow[n_slow & (BURST - 1)] = i as u16;
                    n_slow += 1;
                    i += 1;
                    continue;
                }
            };
            let rs = if adj == last.0 {
                last.1
            } else {
                // (before the slot lookup: a slot taken over flushes its counters)
                self.add_tx(last.1, tx_pkts, tx_bytes);
                sent += tx_pkts as usize;
                (tx_pkts, tx_bytes) = (0, 0);
                let rs = self.rw_slot(adj, hb.ift, hb.view);
                last = (adj, rs);
                rs
            };
            let rw = &self.rw[rs & (RW_CACHE - 1)];
            let put = if rw.ok {
                put_l2_in(frame, off, et, rw)
            } else {
                None
            };
            let sent = put.is_some();
            match put {
                Some(w) => {
                    tx_pkts += 1;
                    tx_bytes += send_switched(p, start, w, out, i, rw);
                    if notes {
                        self.note_switched(i, adj, rs, hb.light_meta);
                    }
                }
                None => self.label_resume(i, off, end, et, adj, rxif.ifindex, hb),
            }
            bytes += len as u64;
            i += 1;
            if sent && switch_runs {
                let r = self.switch_run(pkts, out, i, n, rxif, g, last, hb);
                i = r.end;
                tx_pkts += r.tx_pkts;
                tx_bytes += r.tx_bytes;
                bytes += r.rx_bytes;
            }
        }
        self.add_tx(last.1, tx_pkts, tx_bytes);
        sent += tx_pkts as usize;
        (c.k, c.sent, c.n_slow) = (k, sent, n_slow);
        (c.pt, c.k2) = (pt, k2);
        let taken = (i - i0) - (n_slow - n_slow0);
        c.switched += taken;
        c.rx_pkts += taken as u64;
        c.rx_bytes += bytes;
        i
    }

    /// The swaps and PHPs that follow one [`Work::mpls_run`] sent, from `pkts[i0]`
    /// on: packets of the run whose top entry is swapped for one label or popped
    /// at the penultimate hop ([`mpls::LabelGuard::switch_one_to`]) leaving by the
    /// same adjacency `adj` (slot `rs` of the adjacency cache) go out here, each as
    /// `mpls_run` would send it, in a loop that keeps few values (in `mpls_run`'s,
    /// a swap spilled a dozen). Any other packet ends the run untouched, for
    /// `mpls_run`.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn switch_run<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        i0: usize,
        n: usize,
        rxif: RxIf,
        g: &mpls::LabelGuard<'_>,
        (adj, rs): (u32, usize),
        hb: &mut Handback<'_, '_>,
    ) -> SwitchRun {
        let n = n.min(pkts.len());
        let (mut i, mut tx_pkts, mut tx_bytes, mut rx_bytes) = (i0, 0u64, 0u64, 0u64);
        // (a copy: the loop's writes to packets cannot change it, so it is not
        // read again per packet; its counters are added by the caller)
        let rw = self.rw[rs & (RW_CACHE - 1)];
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let (start, len) = p.window();
            let end = start + len;
            let Some((frame, top)) = labelled(p, &rxif) else {
                break;
            };
            let mut off = start + ETH_LEN;
            let Some(php) = g.switch_one_to(frame, &mut off, top, g.top(top), adj) else {
                break;
            };
            // (from here on as `mpls_run` sends a swap or a PHP)
            let et = if php { ETHERTYPE_IPV4 } else { ETHERTYPE_MPLS };
            let put = if rw.ok {
                put_l2_in(frame, off, et, &rw)
            } else {
                None
            };
            match put {
                Some(w) => {
                    tx_pkts += 1;
                    tx_bytes += send_switched(p, start, w, out, i, &rw);
                }
                None => self.label_resume(i, off, end, et, adj, rxif.ifindex, hb),
            }
            rx_bytes += len as u64;
            i += 1;
        }
        SwitchRun {
            end: i,
            tx_pkts,
            tx_bytes,
            rx_bytes,
        }
    }

    /// The pops into IPv4 that follow one [`Work::mpls_run`] added to the keys of
    /// the vector's table, from `pkts[i0]` on: packets of the run with the same
    /// top label (and S bit) as `top`, whose entry `t` pops into that table, join
    /// the keys here as `mpls_run` adds them, in a loop that keeps few values. Any
    /// other packet ends the run untouched, for `mpls_run`. A packet that joins the
    /// keys has its window moved past the label (the forward walk sends it as an
    /// IPv4 frame received so), and the run's packets are marked `popped`.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn pop_run<P: Packet>(
        &mut self,
        pkts: &mut [P],
        i0: usize,
        n: usize,
        rxif: RxIf,
        g: &mpls::LabelGuard<'_>,
        (top0, t): (u32, mpls::Top<'_>),
        k0: usize,
        hb: &mut Handback<'_, '_>,
    ) -> PopRun {
        let n = n.min(pkts.len());
        let (mut i, mut k, mut rx_bytes) = (i0, k0, 0u64);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let (start, len) = p.window();
            let end = start + len;
            // (the frame's own window, offsets from its start: a pop writes
            // nothing in front of it, and an mbuf's window needs no bounds check)
            let frame = p.data_mut();
            // (one length check for the L2 header, the label and the IPv4 header
            // under it; a header with options or another version ends the run,
            // and so does a total length other than the frame's: Ethernet
            // padding, for `mpls_run` to cut, or a bad length)
            if frame.first_chunk::<POPPED_HEAD>().is_none_or(|h| {
                (h[POPPED_HEAD - 20] != 0x45)
                    | (POPPED_HEAD - 20 + usize::from(rd16(h, POPPED_HEAD - 18)) != len)
            }) {
                break;
            }
            let Some(top) = label_top(frame, &rxif) else {
                break;
            };
            // (label and S bit: the same entry)
            if (top ^ top0) & 0xffff_f100 != 0 || !t.pops_into_ip4(top) {
                break;
            }
            let mut off = ETH_LEN;
            // (the table is read only for a packet handed back)
            let Ok(()) = g.pop_ip4(frame, &mut off, top, t) else {
                // (untouched: `mpls_run` leaves it to the general path)
                break;
            };
            // (from here on as `mpls_run` takes a pop)
            // (0x45 and the total length seen above, where the pop left `off`)
            let accepted = frame
                .get(off..)
                .and_then(|ip| ip4_accept_sized(ip.first_chunk::<20>()?, false, &self.martian));
            let l3 = start + off;
            match accepted {
                Some(d) => {
                    self.keys[k & (BURST - 1)] = d;
                    self.sel[k & (BURST - 1)] = i as u16;
                    k += 1;
                    // (as `popped_key`, nothing to cut; the run's range is
                    // marked at the end)
                    let _ = p.drop_front(LABEL_LEN);
                }
                None => {
                    let table = mpls::lookup_table(t.ip4_table(), rxif.table);
                    self.ip4_resume_at(i, l3, end, rxif.ifindex, table, true, hb)
                }
            }
            rx_bytes += len as u64;
            i += 1;
        }
        mark_range(&mut self.popped, i0, i);
        PopRun {
            end: i,
            k,
            rx_bytes,
        }
    }

    /// The forward walk of the fast path over the `k` keys looked up (see the
    /// module docs); returns how many packets it sent. Packets it leaves are handed
    /// back (`hb`) to resume in the general IPv4 stage. Out of line: with the rest
    /// of `process` around it, its loop ran short of registers.
    #[inline(never)]
    fn forward_walk<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        k: usize,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        // (one loop without sFlow's notes, one with them)
        if hb.light_meta | self.obs.tx_ifs {
            self.forward_keys::<true, P>(pkts, out, k, hb)
        } else {
            self.forward_keys::<false, P>(pkts, out, k, hb)
        }
    }

    /// [`Work::forward_walk`]'s loop. `NOTES`: note what sFlow reads of each packet
    /// sent (its adjacency and the ifIndex it left by).
    #[inline(always)]
    fn forward_keys<const NOTES: bool, P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        k: usize,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        // (what is not sent resumes: the count of those says how many were sent)
        let resumed_before = hb.n;
        // (within the arrays: no bounds check per key; one length for the packets
        // and their outputs: one check of each key's index for both)
        let k = k.min(BURST);
        let n = pkts.len().min(out.len());
        let (pkts, out) = (&mut pkts[..n], &mut out[..n]);
        // The last result decoded, kept while no decode runs (u64::MAX: none): a
        // vector's packets mostly share a few results, consecutive ones the same,
        // and its entry needs no tag check then.
        let mut last_f = u64::MAX;
        let mut j = 0;
        while j < k {
            let f = self.fwd[j];
            let slot = f as usize & (FWD_CACHE - 1);
            if u64::from(f) != last_f {
                if !self.fd_hit(slot, f) {
                    self.fwd_decode_cold(slot, f, hb.ift, hb.view);
                }
                last_f = u64::from(f);
            } else if self.fwd.get(j + 1..j + 3).is_some_and(|r| r == [f, f]) && j + 3 <= k {
                // A run of one result (the key before this one had it, the next
                // two have it): out of line, in a loop that holds its decision,
                // adjacency and counters (worth its call). `last_f` held the
                // decode of a result with one leg.
                let d = self.fd[slot];
                j = if d.plain {
                    self.forward_run::<NOTES, true, P>(pkts, out, j, k, f, &d, hb)
                } else {
                    self.forward_run::<NOTES, false, P>(pkts, out, j, k, f, &d, hb)
                };
                continue;
            }
            let i = usize::from(self.sel[j]);
            j += 1;
            let (Some(p), Some(o)) = (pkts.get_mut(i), out.get_mut(i)) else {
                continue;
            };
            // (an ECMP result's leg comes from the leg cache, which may decode:
            // nothing kept then)
            let slot = if self.fd[slot].how == How::Ecmp {
                last_f = u64::MAX;
                self.ecmp_leg(p, key_l3(p), f, hb.ift, hb.view)
            } else {
                slot
            };
            let d = &self.fd[slot];
            let rs = usize::from(d.rs) & (RW_CACHE - 1);
            let rw = &mut self.rw[rs];
            let Some(len) = send(p, rw, d, d.plain, plain_max(rw)) else {
                // Untouched by the IPv4 part: the general IPv4 stage takes over.
                self.ip4_resume(p, i, hb);
                continue;
            };
            *o = count_tx(rw, len);
            // (both notes unconditionally: each is read only when it is meant to
            // be, `txs` while `tx_ifs`, `fast_adj` for `Next::Fast` packets)
            if NOTES {
                self.obs.fast_adj[i & (BURST - 1)] = self.fd[slot].adj;
                self.obs.txs[i & (BURST - 1)] = tx_ifindex(&self.rw[rs]);
            }
        }
        k - (hb.n - resumed_before)
    }

    /// The keys from `j` on whose FIB result is `f` (decoded as `d`, one leg, not
    /// ECMP), up to `k`: each sent through `d`'s adjacency ([`forward_plain`] if
    /// `PLAIN`, else [`forward`]) or handed back. Returns where the run ends.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn forward_run<const NOTES: bool, const PLAIN: bool, P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        mut j: usize,
        k: usize,
        f: u32,
        d: &FwdDec,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        let rs = usize::from(d.rs) & (RW_CACHE - 1);
        let max = plain_max(&self.rw[rs]);
        let (k, j0) = (k.min(BURST), j);
        let n = pkts.len().min(out.len());
        let (pkts, out) = (&mut pkts[..n], &mut out[..n]);
        // (the run's bytes: added to the adjacency's once, at the end, with its
        // packets: those of the run not held; the held ones are handed back after
        // the loop, which so makes no call and keeps its values in registers)
        let (mut tx_bytes, mut held) = (0u64, 0usize);
        while j < k && self.fwd[j] == f {
            let i = usize::from(self.sel[j]);
            j += 1;
            let sent = match (pkts.get_mut(i), out.get_mut(i)) {
                (Some(p), Some(o)) => {
                    let rw = &self.rw[rs];
                    let sent = send(p, rw, d, PLAIN, max);
                    if sent.is_some() {
                        *o = rw.out;
                    }
                    sent
                }
                _ => None,
            };
            let Some(len) = sent else {
                self.held[held & (BURST - 1)] = i as u16;
                held += 1;
                continue;
            };
            tx_bytes += len as u64;
            // (both notes unconditionally: each is read only when it is meant to
            // be, `txs` while `tx_ifs`, `fast_adj` for `Next::Fast` packets)
            if NOTES {
                self.obs.fast_adj[i & (BURST - 1)] = d.adj;
                self.obs.txs[i & (BURST - 1)] = tx_ifindex(&self.rw[rs]);
            }
        }
        // Untouched by the IPv4 part: the general IPv4 stage takes over.
        for h in 0..held.min(BURST) {
            let i = usize::from(self.held[h]);
            if let Some(p) = pkts.get_mut(i) {
                self.ip4_resume(p, i, hb);
            }
        }
        let tx_pkts = (j - j0) - held;
        self.add_tx(rs, tx_pkts as u64, tx_bytes);
        j
    }

    /// Entry `slot` holds FIB result `f`, decoded in this generation (one
    /// compare: see `Work::fd_tag`).
    #[inline(always)]
    fn fd_hit(&self, slot: usize, f: u32) -> bool {
        self.fd[slot].tag == fd_tag(self.fd_gen, f)
    }

    /// [`Work::fwd_decode`] out of the forward walk's loop.
    #[inline(never)]
    fn fwd_decode_cold(&mut self, slot: usize, f: u32, ift: &IfTable, view: &fib::FibView<'_>) {
        self.fwd_decode(slot, f, ift, view);
    }

    /// The slot of the leg cache (`fd[FWD_CACHE..]`) holding the leg of ECMP
    /// result `f` that packet `p` (IPv4 header at `l3`) takes, by the flow hash
    /// ip4-lookup uses ([`ecmp_hash`]), decoded on a miss.
    #[inline(always)]
    fn ecmp_leg<P: Packet>(
        &mut self,
        p: &mut P,
        l3: usize,
        f: u32,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) -> usize {
        let rss = p.rss_hash();
        let raw = p.raw_mut();
        let hash = ecmp_hash(rss, || {
            let total = raw.get(l3 + 2..l3 + 4).map_or(0, |b| rd16(b, 0));
            raw.get(l3..l3 + usize::from(total))
        });
        let id = view.leg_id(f, hash);
        let slot = FWD_CACHE + (id as usize & (LEG_CACHE - 1));
        if !self.fd_hit(slot, id) {
            self.leg_decode_cold(slot, id, ift, view);
        }
        slot
    }

    /// Decodes leg `id` into leg cache entry `slot`.
    #[inline(never)]
    fn leg_decode_cold(&mut self, slot: usize, id: u32, ift: &IfTable, view: &fib::FibView<'_>) {
        self.leg_decode(slot, view.leg_at(id), ift, view);
        // (last: decoding the leg may have dropped the cache)
        self.fd[slot].tag = fd_tag(self.fd_gen, id);
    }

    /// Adds `pkts` packets of `bytes` bytes to what adjacency cache slot `rs` sent
    /// in this vector.
    #[inline(always)]
    fn add_tx(&mut self, rs: usize, pkts: u64, bytes: u64) {
        let rw = &mut self.rw[rs & (RW_CACHE - 1)];
        rw.tx_pkts += pkts;
        rw.tx_bytes += bytes;
    }

    /// Hands switched packet `i` (the payload of its new L2 header at `l3`, with
    /// EtherType `et`, for adjacency `adj`; its frame as received ended at `end`;
    /// received on `rx_if`) to the general rewrite.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn label_resume(
        &mut self,
        i: usize,
        l3: usize,
        end: usize,
        et: u16,
        adj: u32,
        rx_if: u16,
        hb: &mut Handback<'_, '_>,
    ) {
        let m = Meta {
            next: Next::Rewrite,
            l3: l3 as u16,
            end: end as u16,
            rx_if,
            ethertype: et,
            table: hb.vt,
            adj,
            path: ETH | MPLS,
            ..Meta::default()
        };
        self.resume(i, m, hb);
    }

    /// Hands packet `i` (IPv4 header at `l3`, frame up to `end`, received on
    /// `rx_if`, its label `popped` or not) to the general IPv4 stage of routing
    /// table `t`.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn ip4_resume_at(
        &mut self,
        i: usize,
        l3: usize,
        end: usize,
        rx_if: u16,
        t: u32,
        popped: bool,
        hb: &mut Handback<'_, '_>,
    ) {
        let m = Meta {
            next: Next::Ip4Lookup,
            l3: l3 as u16,
            end: end as u16,
            rx_if,
            table: t,
            path: ETH | if popped { MPLS } else { 0 },
            ..Meta::default()
        };
        self.resume(i, m, hb);
    }

    /// Hands key packet `i` (`p`, untouched by the forward walk) to the general
    /// IPv4 stage.
    #[cold]
    #[inline(never)]
    fn ip4_resume<P: Packet>(&mut self, p: &mut P, i: usize, hb: &mut Handback<'_, '_>) {
        hb.follow(p.port());
        let l3 = key_l3(p);
        let popped = self.popped(i);
        // (the frame as the general path takes it, as it came in: from its L2
        // header on, a popped label in it, padding not cut)
        let (start, len) = p.window();
        let back = if popped { LABEL_LEN } else { 0 };
        let received = self.padded.received(i).unwrap_or(len + back);
        if (back, received) != (0, len) {
            if let Some(s) = start.checked_sub(back) {
                let _ = p.set_window(s, received);
            }
        }
        let (start, len) = p.window();
        let (rx_if, vt) = (hb.fb_if.ifindex, hb.vt);
        self.ip4_resume_at(i, l3, start + len, rx_if, vt, popped, hb);
        if !popped && nic_csum(self.nic_csum_ports, p.port()) {
            // (the NIC's verdict holds for the header it saw: not one under a label)
            self.meta[i].csum = p.rx_ip4_csum();
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

    /// What FIB result `f` means for the fast path (see [`FwdDec`]).
    /// Written in place, field by field, with the widths the forward walk reads
    /// them with (a struct returned by value and reloaded wider stalls the load on
    /// store forwarding, for every packet when each one has its own route).
    #[inline(always)]
    fn fwd_decode(&mut self, slot: usize, f: u32, ift: &IfTable, view: &fib::FibView<'_>) {
        match view.only_leg(f) {
            Some(leg) => self.leg_decode(slot, leg, ift, view),
            None => {
                self.fd[slot].how = How::Ecmp;
                self.fd[slot].plain = false;
            }
        }
        // (last: decoding the leg may have dropped the cache)
        self.fd[slot].tag = fd_tag(self.fd_gen, f);
    }

    /// Decodes `leg` into entry `slot` (its `how`, `push`, `lse`, `adj`, `rs`).
    #[inline(always)]
    fn leg_decode(
        &mut self,
        slot: usize,
        leg: fib::Leg<'_>,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) {
        self.fd[slot].how = How::No;
        self.fd[slot].plain = false;
        if leg.action() != fib::Action::Forward {
            return;
        }
        let Some((lse, push)) = leg_stack::<FAST_LABELS>(leg) else {
            return;
        };
        let adj = leg.target();
        // (before the fields are written: taking a slot over drops this cache)
        let rs = self.rw_slot(adj, ift, view);
        let (ok, tagged) = (self.rw[rs].ok, self.rw[rs].tagged);
        let e = &mut self.fd[slot];
        e.lse = lse;
        e.push = push as u8;
        e.adj = adj;
        e.rs = rs as u8;
        e.how = match (ok, push, tagged) {
            (false, ..) => How::No,
            (true, 0, false) => How::Plain,
            (true, 1, false) => How::Push1,
            (true, 2, false) => How::Push2,
            _ => How::Other,
        };
        e.plain = e.how == How::Plain;
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

/// Forwards one checked IPv4 packet (header at `l3`) through a plain-forward
/// decision `d` on adjacency `rw`: MTU and headroom, TTL and checksum, labels, L2
/// header. Returns the new layer-3 offset and the frame length, or `None` with the
/// packet untouched.
#[inline(always)]
fn forward<P: Packet>(p: &mut P, l3: usize, rw: &Rw, d: &FwdDec) -> Option<usize> {
    let (start, len) = p.window();
    let push = usize::from(d.push);
    let hl = ETH_LEN + VLAN_LEN * usize::from(rw.tagged);
    let grow = hl + 4 * push;
    let raw = p.raw_mut();
    let ip = raw.get_mut(l3..)?.first_chunk_mut::<20>()?;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let end = l3 + total;
    // (`end` is within the frame: the classify walk checked the total length.)
    if (total + 4 * push > usize::from(rw.mtu)) | (l3 < grow) {
        return None;
    }
    // Every check is done: from here on the packet changes.
    let ttl = ttl_dec(ip);
    let new_start = l3 - grow;
    let top = l3 - 4 * push;
    if push > 0 {
        impose(raw.get_mut(top..l3)?, &d.lse, ttl);
    }
    let et = if push > 0 {
        ETHERTYPE_MPLS
    } else {
        ETHERTYPE_IPV4
    };
    write_l2(raw, new_start, &rw.hdr, rw.tagged, et)?;
    let frame = end - new_start;
    if (start, len) != (new_start, frame) {
        // Cannot fail: the window only moves inside the buffer of a one-segment
        // packet (the checks saw the whole frame in it).
        let _ = p.set_window(new_start, frame);
    }
    Some(frame)
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

/// The frame of packet `p` up to its end, and its top label stack entry (host
/// order), if it is one the label runs take: at least [`HEAD`] bytes, untagged, to
/// `rxif`'s MAC, EtherType MPLS.
#[inline(always)]
fn labelled<'p, P: Packet>(p: &'p mut P, rxif: &RxIf) -> Option<(&'p mut [u8], u32)> {
    let (start, len) = p.window();
    let frame = p.raw_mut().get_mut(..start + len)?;
    let top = label_top(frame.get(start..)?, rxif)?;
    Some((frame, top))
}

/// The top label stack entry (host order) of frame `f` (starting at its L2
/// header), if [`labelled`] takes it.
#[inline(always)]
fn label_top(f: &[u8], rxif: &RxIf) -> Option<u32> {
    let hd = f.first_chunk::<HEAD>()?;
    let et = u32::from(u16::from_le_bytes([hd[12], hd[13]]));
    if (mac_key(hd) != rxif.mac) | (et != ET_MPLS_LE) {
        return None;
    }
    Some(u32::from_be_bytes([hd[14], hd[15], hd[16], hd[17]]))
}

/// Sends switched packet `i` (`p`, its frame at `start` as received) through
/// adjacency cache entry `rw` once [`put_l2_in`] wrote its L2 header: the window
/// moves to `(s, l)` when the frame now starts elsewhere (a pop or a tagged link;
/// it stays within the frame as received, so this cannot fail), and the output is
/// the adjacency's. Returns the bytes it leaves with.
#[inline(always)]
fn send_switched<P: Packet>(
    p: &mut P,
    start: usize,
    (s, l): (usize, usize),
    out: &mut [Out],
    i: usize,
    rw: &Rw,
) -> u64 {
    if s != start {
        let _ = p.set_window(s, l);
    }
    if let Some(o) = out.get_mut(i) {
        *o = rw.out;
    }
    l as u64
}

/// Where the IPv4 header of fast-path key packet `p` starts: right behind the
/// frame's L2 header (a popped packet's window starts past its label).
#[inline(always)]
fn key_l3<P: Packet>(p: &P) -> usize {
    p.window().0 + ETH_LEN
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

/// [`forward`] for a plain decision (see [`How::Plain`]): IPv4 out of an
/// untagged interface, nothing pushed, for a frame no longer than `max` (the
/// adjacency's MTU and the L2 header). Returns the frame length, or `None` with
/// the packet untouched (MTU).
///
/// A key's frame ends where its IPv4 total length says (the classify walks cut
/// Ethernet padding: [`cut_padding`]), and its header sits right behind the
/// frame's L2 header (a popped packet's window starts past its label): the
/// frame's own window holds it (no bounds to check against the buffer).
#[inline(always)]
fn forward_plain<P: Packet>(p: &mut P, rw: &Rw, max: usize) -> Option<usize> {
    let frame = p.data_mut();
    let len = frame.len();
    let h = frame.first_chunk_mut::<HEAD>()?;
    if len > max {
        return None;
    }
    // Every check is done: from here on the packet changes.
    ttl_dec(h.last_chunk_mut::<20>()?);
    write_l2(h, 0, &rw.hdr, false, ETHERTYPE_IPV4)?;
    Some(len)
}

/// [`forward`] for a decision with `N` labels to push out of an untagged
/// interface (see [`How::Push1`], [`How::Push2`]), for a frame that is no longer
/// than `max` (the adjacency's MTU and an untagged L2 header) with its labels:
/// the frame grows into its headroom by the labels ([`Packet::grow_front`]),
/// then its L2 header, labels and IPv4 header are written in one slice of it,
/// `W` bytes (`N` labels and [`HEAD`]). Returns the frame length, or `None`
/// with the packet untouched (MTU, headroom).
#[inline(always)]
fn forward_push<const N: usize, const W: usize, P: Packet>(
    p: &mut P,
    rw: &Rw,
    d: &FwdDec,
    max: usize,
) -> Option<usize> {
    const { assert!(W == N * LABEL_LEN + HEAD && N <= FAST_LABELS) };
    let grow = N * LABEL_LEN;
    let frame = p.window().1 + grow;
    if frame > max || !p.grow_front(grow) {
        return None;
    }
    let Some(h) = p.data_mut().first_chunk_mut::<W>() else {
        // (cannot happen: a key's frame holds its L2 and IPv4 headers)
        let _ = p.drop_front(grow);
        return None;
    };
    // Every check is done: from here on the packet changes.
    let ttl = ttl_dec(h.last_chunk_mut::<20>()?);
    impose(&mut h[ETH_LEN..ETH_LEN + grow], &d.lse, ttl);
    write_l2(h, 0, &rw.hdr, false, ETHERTYPE_MPLS)?;
    Some(frame)
}

/// Sends key packet `p` by decision `d` through its adjacency `rw`
/// ([`forward_plain`] up to `max` if `plain`, [`forward_push`] if `d` pushes
/// one or two labels out of an untagged interface, else [`forward`] if `d` is
/// ok): the frame length, or `None` with the packet untouched.
#[inline(always)]
fn send<P: Packet>(p: &mut P, rw: &Rw, d: &FwdDec, plain: bool, max: usize) -> Option<usize> {
    if plain {
        return forward_plain(p, rw, max);
    }
    match d.how {
        How::Push1 => forward_push::<1, { LABEL_LEN + HEAD }, P>(p, rw, d, max),
        How::Push2 => forward_push::<2, { 2 * LABEL_LEN + HEAD }, P>(p, rw, d, max),
        How::Other => forward(p, key_l3(p), rw, d),
        _ => None,
    }
}

/// The largest frame a plain forward through `rw` sends: its MTU and an
/// untagged L2 header.
#[inline(always)]
fn plain_max(rw: &Rw) -> usize {
    usize::from(rw.frame_max)
}

/// Moves popped key packet `p` (packet `i`)'s window past its label and ends it
/// at `frame` (the L2 header and the IPv4 total length, checked within the
/// frame), noting in `padded` a cut.
#[inline(always)]
fn pop_window<P: Packet>(p: &mut P, i: usize, frame: usize, padded: &mut Padded) {
    let received = p.window().1;
    // (cannot fail: the frame holds the label and the IPv4 header)
    let _ = p.drop_front(LABEL_LEN);
    if frame != p.window().1 {
        let _ = cut_padding(p, i, frame, received, padded);
    }
}

/// Cuts the Ethernet padding of key packet `p` (packet `i`, its window
/// `received` long as it came in): its window ends at `frame`, the L2 header
/// and the IPv4 total length, when that is a header's length or more and
/// shorter than the window; false (untouched) otherwise. Notes the cut in
/// `padded`. Inline: a call in the classify walk's loop spills its values.
#[inline(always)]
fn cut_padding<P: Packet>(
    p: &mut P,
    i: usize,
    frame: usize,
    received: usize,
    padded: &mut Padded,
) -> bool {
    if !(HEAD..p.window().1).contains(&frame) {
        return false;
    }
    padded.bits[(i >> 6) & 3] |= 1 << (i & 63);
    padded.len[i & (BURST - 1)] = received as u16;
    p.shrink_window(0, frame)
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
