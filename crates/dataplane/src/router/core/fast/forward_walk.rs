//! The forward walk: the IPv4 keys looked up, each sent by what its FIB result (or
//! ECMP leg) means for the fast path, decoded once and kept in a cache.

use super::send::{plain_max, send};
use super::*;

impl Work {
    /// The forward walk of the fast path over the `k` keys looked up (see the
    /// module docs); returns how many packets it sent. Packets it leaves are handed
    /// back (`hb`) to resume in the general IPv4 stage. Out of line: with the rest
    /// of `process` around it, its loop ran short of registers.
    #[inline(never)]
    pub(super) fn forward_walk<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        k: usize,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        // (one loop without sFlow's notes, one with them)
        if hb.light_meta | self.obs.tx_ifs {
            self.forward_keys::<V4, true, P>(pkts, out, k, hb)
        } else {
            self.forward_keys::<V4, false, P>(pkts, out, k, hb)
        }
    }

    /// The forward walks' loop over the keys of family `F` (`forward_walk`,
    /// `forward_walk6`). `NOTES`: note what sFlow reads of each packet sent
    /// (its adjacency and the ifIndex it left by).
    #[inline(always)]
    pub(super) fn forward_keys<F: KeyFamily, const NOTES: bool, P: Packet>(
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
        let mut j = 0;
        while j < k {
            let f = self.fwd[j];
            let slot = f as usize & (FWD_CACHE - 1);
            if !self.fd_hit(slot, f) {
                self.fwd_decode_cold(slot, f, hb.ift, hb.view);
            } else {
                match self.fd[slot].how {
                    // A run of one result with one leg (the next two keys have
                    // it): out of line, in a loop that holds its decision,
                    // adjacency and counters (worth its call).
                    How::Plain | How::Push1 | How::Push2 | How::Other | How::No
                        if run_at(&self.fwd, j, k, f) =>
                    {
                        let d = self.fd[slot];
                        j = self.forward_run_of::<F, NOTES, P>(pkts, out, j, k, f, &d, hb);
                        continue;
                    }
                    // (a plain forward or a push: the keys from here on go
                    // through that one's loop while they have such results)
                    How::Plain => {
                        j = self.quick_keys::<F, NOTES, true, P>(pkts, out, j, k, hb);
                        continue;
                    }
                    How::Push1 | How::Push2 => {
                        j = self.quick_keys::<F, NOTES, false, P>(pkts, out, j, k, hb);
                        continue;
                    }
                    _ => {}
                }
            }
            let i = usize::from(F::sel(&self.sel, &self.sel6)[j]);
            j += 1;
            let (Some(p), Some(o)) = (pkts.get_mut(i), out.get_mut(i)) else {
                continue;
            };
            // (an ECMP result's leg comes from the leg cache, which may decode;
            // the family without one hands its packet back)
            let slot = match self.fd[slot].how {
                How::Ecmp if F::ECMP => self.ecmp_leg(p, key_l3(p), f, hb.ift, hb.view),
                _ => slot,
            };
            let d = &self.fd[slot];
            let rs = usize::from(d.rs) & (RW_CACHE - 1);
            let rw = &mut self.rw[rs];
            let max = plain_max(rw);
            let sent = if d.plain {
                F::send::<true, P>(p, rw, d, max)
            } else {
                F::send::<false, P>(p, rw, d, max)
            };
            let Some(len) = sent else {
                // Untouched by the family's part: its general stage takes over.
                F::resume(self, p, i, hb);
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

    /// The keys from `j` on (up to `k`) whose result the cache holds decoded
    /// as a plain forward ([`How::Plain`]) if `PLAIN`, else as a push of one
    /// or two labels out of an untagged link ([`How::Push1`], [`How::Push2`]):
    /// each sent ([`KeyFamily::send`]), or (too long for its adjacency's MTU,
    /// no headroom) handed back. Stops at the first other key; returns where.
    /// The loop borrows the arrays it reads apart from the rest of the worker,
    /// so their addresses and the generation stay in registers while it
    /// writes the frames; the packets it holds are handed back after it. (A
    /// run of one result where the walk enters one goes to
    /// [`Work::forward_run`] instead: a vector of one route costs no more
    /// than there.)
    #[inline(always)]
    fn quick_keys<F: KeyFamily, const NOTES: bool, const PLAIN: bool, P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        mut j: usize,
        k: usize,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        let Work {
            fwd,
            sel,
            sel6,
            fd,
            fd_gen,
            rw,
            held,
            obs,
            ..
        } = self;
        let sel = F::sel(sel, sel6);
        let (fd, generation, k) = (&**fd, *fd_gen, k.min(BURST));
        let mut n = 0;
        while j < k {
            let f = fwd[j];
            let d = &fd[f as usize & (FWD_CACHE - 1)];
            let ours = if PLAIN {
                d.plain
            } else {
                matches!(d.how, How::Push1 | How::Push2)
            };
            if (d.tag != fd_tag(generation, f)) | !ours {
                break;
            }
            let i = usize::from(sel[j]);
            j += 1;
            let rw = &mut rw[usize::from(d.rs) & (RW_CACHE - 1)];
            let (Some(p), Some(o)) = (pkts.get_mut(i), out.get_mut(i)) else {
                continue;
            };
            let Some(len) = F::send::<PLAIN, P>(p, rw, d, plain_max(rw)) else {
                held[n & (BURST - 1)] = i as u16;
                n += 1;
                continue;
            };
            *o = count_tx(rw, len);
            if NOTES {
                obs.fast_adj[i & (BURST - 1)] = d.adj;
                obs.txs[i & (BURST - 1)] = tx_ifindex(rw);
            }
        }
        for h in 0..n.min(BURST) {
            let i = usize::from(self.held[h]);
            if let Some(p) = pkts.get_mut(i) {
                F::resume(self, p, i, hb);
            }
        }
        j
    }

    /// [`Work::forward_run`] for decision `d`: its plain loop or the other.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn forward_run_of<F: KeyFamily, const NOTES: bool, P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        j: usize,
        k: usize,
        f: u32,
        d: &FwdDec,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        if d.plain {
            self.forward_run::<F, NOTES, true, P>(pkts, out, j, k, f, d, hb)
        } else {
            self.forward_run::<F, NOTES, false, P>(pkts, out, j, k, f, d, hb)
        }
    }

    /// The keys of family `F` from `j` on whose FIB result is `f` (decoded as
    /// `d`, one leg, not ECMP), up to `k`: each sent through `d`'s adjacency
    /// ([`KeyFamily::send`]: its plain forward if `PLAIN`) or handed back.
    /// Returns where the run ends.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn forward_run<F: KeyFamily, const NOTES: bool, const PLAIN: bool, P: Packet>(
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
        // (a copy: the frames' writes cannot reach it, so its L2 header and
        // output stay in registers through the loop)
        let rw = self.rw[rs];
        let max = plain_max(&rw);
        let (k, j0) = (k.min(BURST), j);
        let n = pkts.len().min(out.len());
        let (pkts, out) = (&mut pkts[..n], &mut out[..n]);
        // (the run's bytes: added to the adjacency's once, at the end, with its
        // packets: those of the run not held; the held ones are handed back after
        // the loop, which so makes no call and keeps its values in registers)
        let (mut tx_bytes, mut held) = (0u64, 0usize);
        while j < k && self.fwd[j] == f {
            let i = usize::from(F::sel(&self.sel, &self.sel6)[j]);
            j += 1;
            let sent = match (pkts.get_mut(i), out.get_mut(i)) {
                (Some(p), Some(o)) => {
                    let sent = F::send::<PLAIN, P>(p, &rw, d, max);
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
                self.obs.txs[i & (BURST - 1)] = tx_ifindex(&rw);
            }
        }
        // Untouched by the family's part: its general stage takes over.
        for h in 0..held.min(BURST) {
            let i = usize::from(self.held[h]);
            if let Some(p) = pkts.get_mut(i) {
                F::resume(self, p, i, hb);
            }
        }
        let tx_pkts = (j - j0) - held;
        self.add_tx(rs, tx_pkts as u64, tx_bytes);
        j
    }

    /// Entry `slot` holds FIB result `f`, decoded in this generation (one
    /// compare: see `Work::fd_tag`).
    #[inline(always)]
    pub(super) fn fd_hit(&self, slot: usize, f: u32) -> bool {
        self.fd[slot].tag == fd_tag(self.fd_gen, f)
    }

    /// [`Work::fwd_decode`] out of the forward walk's loop.
    #[inline(never)]
    pub(super) fn fwd_decode_cold(
        &mut self,
        slot: usize,
        f: u32,
        ift: &IfTable,
        view: &fib::FibView<'_>,
    ) {
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
    pub(super) fn add_tx(&mut self, rs: usize, pkts: u64, bytes: u64) {
        let rw = &mut self.rw[rs & (RW_CACHE - 1)];
        rw.tx_pkts += pkts;
        rw.tx_bytes += bytes;
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

/// Key `j` begins a run of result `f`: the next two keys (below `k`) have it
/// too.
#[inline(always)]
fn run_at(fwd: &[u32; BURST], j: usize, k: usize, f: u32) -> bool {
    j + 3 <= k && fwd.get(j + 1..j + 3).is_some_and(|r| r == [f, f])
}

/// What the forward walks do differently in each family's keys.
pub(super) trait KeyFamily {
    /// IPv6: its keys' packets are in `Work::sel6`, not `Work::sel`.
    const SIX: bool;
    /// An ECMP result's packets take a leg from the leg cache (else they are
    /// handed back).
    const ECMP: bool;
    /// The packets of the family's keys, by key: `sel` or `sel6` (passed apart
    /// from the worker, which a loop may hold borrowed in parts).
    #[inline(always)]
    fn sel<'a>(sel: &'a [u16; BURST], sel6: &'a [u16; BURST]) -> &'a [u16; BURST] {
        if Self::SIX { sel6 } else { sel }
    }
    /// Sends key packet `p` by decision `d` through `rw` (its plain forward up
    /// to `max` if `PLAIN`): the frame length, or `None` with the packet
    /// untouched.
    fn send<const PLAIN: bool, P: Packet>(
        p: &mut P,
        rw: &Rw,
        d: &FwdDec,
        max: usize,
    ) -> Option<usize>;
    /// Hands key packet `i` to the family's general stage.
    fn resume<P: Packet>(w: &mut Work, p: &mut P, i: usize, hb: &mut Handback<'_, '_>);
}

/// IPv4 keys: [`send`], then the general IPv4 stage.
pub(super) struct V4;

impl KeyFamily for V4 {
    const SIX: bool = false;
    const ECMP: bool = true;

    #[inline(always)]
    fn send<const PLAIN: bool, P: Packet>(
        p: &mut P,
        rw: &Rw,
        d: &FwdDec,
        max: usize,
    ) -> Option<usize> {
        send(p, rw, d, PLAIN, max)
    }

    #[inline(always)]
    fn resume<P: Packet>(w: &mut Work, p: &mut P, i: usize, hb: &mut Handback<'_, '_>) {
        w.ip4_resume(p, i, hb);
    }
}
