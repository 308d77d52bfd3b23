//! `ip4-lookup`: IPv4 forwarding of the packets the fast path left.
//!
//! Per packet: the header checks (version, IHL, lengths, checksum or the NIC's
//! verdict, martians: RFC 1812 §5.2.2 and §5.3.7), the batched LPM over the
//! vector, the ECMP leg by flow hash, TTL and checksum (RFC 1624), the MTU, and
//! the labels the route imposes (uniform TTL).
//!
//! Next nodes: `rewrite` (forwarded), `local` (for the router, TTL expired,
//! no route and other ICMP errors, unresolved next hop: ARP), punt (link-local
//! multicast for the host stack), drop. Counters: drops `ip4_*`,
//! `stale_adjacency`, `no_headroom`, `neighbor_*`.

use wire::ipv4::field;

use super::*;

impl Work {
    /// ip4-lookup over the packets of `self.slow[..n_slow]` bound for it;
    /// counts in `q` the packets it hands to `local`.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)]
    pub(super) fn ip4_lookup<P: Packet>(
        &mut self,
        pkts: &mut [P],
        n_slow: usize,
        ift: &IfTable,
        view: &fib::FibView<'_>,
        q: &mut Pending,
    ) {
        // Validate and collect keys; note whether the vector uses one table.
        let (k, table0, same) = self.ip4_keys(pkts, n_slow, ift);
        // Batched LPM: the common case is one table for the whole vector.
        self.ip4_lpm(view, k, table0, same);
        for j in 0..k {
            let i = usize::from(self.sel[j]);
            let mut m = self.meta[i];
            let (l3, end) = (usize::from(m.l3), usize::from(m.end));
            let rss = pkts[i].rss_hash();
            let raw = pkts[i].raw_mut();
            // The flow hash only matters with several buckets (ECMP); a packet
            // popped from under labels or held brings its own.
            let hash = if m.hash != 0 {
                m.hash
            } else if view.bucket_count(self.fwd[j]) == 1 {
                0
            } else {
                ecmp_hash(rss, || raw.get(l3..end))
            };
            let leg = view.leg(self.fwd[j], hash);
            match leg.action() {
                fib::Action::Forward => {
                    let ip = &mut raw[l3..end];
                    if ip[field::TTL] <= 1 {
                        self.drop_with_icmp(&mut m, DropReason::Ip4TtlExpired, 11, 0, 0);
                        q.local += usize::from(m.next == Next::Local);
                        self.meta[i] = m;
                        continue;
                    }
                    let adj = leg.target();
                    let rw = &self.rw[self.rw_slot(adj, ift, view)];
                    let (stale, complete, mtu) = (rw.stale, rw.complete, rw.mtu);
                    let (ifindex, nbr) = (rw.ifindex, rw.nbr);
                    if stale {
                        self.drop(&mut m, DropReason::StaleAdjacency);
                        self.meta[i] = m;
                        continue;
                    }
                    // (a leg holds at most fib::MAX_LABELS: never `None`)
                    let Some((lse, push)) = leg_stack::<{ fib::MAX_LABELS }>(leg) else {
                        self.drop(&mut m, DropReason::NoHeadroom);
                        self.meta[i] = m;
                        continue;
                    };
                    if end - l3 + 4 * push > usize::from(mtu) {
                        if ip[field::FLG_OFF] & 0x40 != 0 {
                            let mtu = mtu.saturating_sub(4 * push as u16);
                            self.drop_with_icmp(&mut m, DropReason::Ip4MtuExceeded, 3, 4, mtu);
                            q.local += usize::from(m.next == Next::Local);
                        } else {
                            self.drop(&mut m, DropReason::Ip4FragmentationNeeded);
                        }
                        self.meta[i] = m;
                        continue;
                    }
                    if !complete {
                        m.hash = hash;
                        if nbr == 0 {
                            // An IPv6 next hop: held while the control plane has
                            // it resolved (no ARP).
                            let held = self.hold(&mut pkts[i], &m, ifindex, adj);
                            self.resolve6(&mut m, adj, held);
                        } else {
                            let held = self.hold(&mut pkts[i], &m, ifindex, nbr);
                            self.resolve(&mut m, ifindex, nbr, held);
                            q.local += usize::from(m.next == Next::Local);
                        }
                        self.meta[i] = m;
                        continue;
                    }
                    if l3 < 4 * push + L2_ROOM {
                        self.drop(&mut m, DropReason::NoHeadroom);
                        self.meta[i] = m;
                        continue;
                    }
                    let Some(h) = ip.first_chunk_mut::<20>() else {
                        // (cannot happen: ip4_check saw 20 bytes)
                        self.drop(&mut m, DropReason::Ip4Truncated);
                        self.meta[i] = m;
                        continue;
                    };
                    let ttl = ttl_dec(h);
                    m.ethertype = ETHERTYPE_IPV4;
                    if push > 0 {
                        let top = l3 - 4 * push;
                        impose(&mut raw[top..l3], &lse, ttl);
                        m.l3 = top as u16;
                        m.ethertype = ETHERTYPE_MPLS;
                    }
                    m.adj = adj;
                    m.next = Next::Rewrite;
                }
                fib::Action::Local => {
                    m.local = LocalJob::ToUs;
                    m.next = Next::Local;
                    q.local += 1;
                }
                fib::Action::Glean => {
                    let ip = &raw[l3..];
                    if ip[field::TTL] <= 1 {
                        self.drop_with_icmp(&mut m, DropReason::Ip4TtlExpired, 11, 0, 0);
                    } else {
                        let dst = rd32(ip, field::DST_ADDR);
                        m.hash = hash;
                        let held = self.hold(&mut pkts[i], &m, leg.target(), dst);
                        self.resolve(&mut m, leg.target(), dst, held);
                    }
                    q.local += usize::from(m.next == Next::Local);
                }
                fib::Action::NoRoute => {
                    self.drop_with_icmp(&mut m, DropReason::Ip4NoRoute, 3, 0, 0);
                    q.local += usize::from(m.next == Next::Local);
                }
                fib::Action::Unreachable => {
                    self.drop_with_icmp(&mut m, DropReason::Ip4Unreachable, 3, 1, 0);
                    q.local += usize::from(m.next == Next::Local);
                }
                fib::Action::Prohibit => {
                    self.drop_with_icmp(&mut m, DropReason::Ip4Prohibit, 3, 13, 0);
                    q.local += usize::from(m.next == Next::Local);
                }
                fib::Action::Drop => self.drop(&mut m, DropReason::Ip4Blackhole),
            }
            self.meta[i] = m;
        }
    }

    /// Looks up the `k` keys: in one batch in `table0` when every key has that
    /// table (`same`), else each in its own.
    #[inline(always)]
    fn ip4_lpm(&mut self, view: &fib::FibView<'_>, k: usize, table0: Option<u32>, same: bool) {
        if same {
            let table0 = table0.unwrap_or(0);
            view.lookup_burst(table0, &self.keys[..k], &mut self.fwd[..k]);
        } else {
            for j in 0..k {
                self.fwd[j] = view.lookup(self.meta[usize::from(self.sel[j])].table, self.keys[j]);
            }
        }
    }

    /// The header checks of ip4-lookup over the packets of `self.slow[..n_slow]`
    /// bound for it: the destinations of those that pass become the keys, the
    /// rest are punted (link-local multicast, for the host stack) or dropped.
    /// Returns how many keys, the first key's table, and whether every key has it.
    #[inline(always)]
    fn ip4_keys<P: Packet>(
        &mut self,
        pkts: &mut [P],
        n_slow: usize,
        ift: &IfTable,
    ) -> (usize, Option<u32>, bool) {
        let mut k = 0usize;
        let mut table0 = None;
        let mut same = true;
        for s in 0..n_slow {
            let i = usize::from(self.slow[s]);
            let m = &mut self.meta[i];
            if !matches!(m.next, Next::Ip4Lookup) {
                continue;
            }
            m.path |= 1 << Stage::Ip4Lookup as u8;
            let raw = pkts[i].raw_mut();
            match ip4_check(raw, m) {
                Ok(dst) => {
                    self.keys[k] = dst;
                    self.sel[k] = i as u16;
                    k += 1;
                    same &= *table0.get_or_insert(m.table) == m.table;
                }
                // Link-local multicast (OSPF hellos, ...) is for the host stack.
                Err(DropReason::Ip4Multicast)
                    if ift.punt_to_host
                        && raw.get(usize::from(m.l3)..).is_some_and(ip4_link_local_mc) =>
                {
                    m.next = Next::Punt(PuntReason::Routing);
                }
                // drop_meta() also records the reason for the trace.
                Err(r) => drop_meta(&self.stats, m, r),
            }
        }
        (k, table0, same)
    }
}

/// The ECMP hash of an IPv4 packet. `mpls::ip4_flow_hash` returns the raw 5-tuple
/// mix (`src << 32 | dst` xor rotated ports), whose low bits are the destination's
/// low bits; FIB buckets are picked with a low-bit mask, so it is folded and spread
/// by a Fibonacci multiply first (as `mpls::flow_hash` does for labelled packets).
#[inline(always)]
pub(super) fn flow_hash(ip: &[u8]) -> u32 {
    spread(mpls::ip4_flow_hash(ip))
}

/// A 64-bit flow mix folded to 32 bits and spread by a Fibonacci multiply, so
/// any mask of its low bits picks ECMP buckets evenly.
#[inline(always)]
pub(super) fn spread(h: u64) -> u32 {
    let x = u64::from((h ^ (h >> 32)) as u32);
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32
}

/// The flow hash of an IPv4 packet for picking an ECMP leg: the NIC's RSS hash
/// when it gave one, else [`flow_hash`] of the packet `ip` finds (header and
/// payload; 0 without one).
#[inline(always)]
pub(super) fn ecmp_hash<'a>(rss: u32, ip: impl FnOnce() -> Option<&'a [u8]>) -> u32 {
    if rss != 0 {
        rss
    } else {
        ip().map_or(0, flow_hash)
    }
}

/// The label stack entries `leg` imposes, top first, and their number: implicit
/// null pushes nothing, the S bit is on the last, the TTL is 0 (ORed in per
/// packet by [`impose`]). `None` when more than `N` are pushed.
#[inline(always)]
pub(super) fn leg_stack<const N: usize>(leg: fib::Leg<'_>) -> Option<([u32; N], usize)> {
    // (no branch per label: an implicit null among them, or more than N, is rare
    // and decoded out of line)
    match leg.plain_labels::<N>() {
        Some((ls, count)) => {
            let mut lse = ls.map(|l| l << 12);
            if count > 0 {
                // (`% N`: count is at most N; a power of two N makes it a mask)
                lse[(count - 1) % N] |= 0x100;
            }
            Some((lse, count))
        }
        None => implicit_null_stack(leg),
    }
}

/// [`leg_stack`] for a leg with an implicit null among its labels (or more than
/// `N`).
#[cold]
#[inline(never)]
fn implicit_null_stack<const N: usize>(leg: fib::Leg<'_>) -> Option<([u32; N], usize)> {
    let mut lse = [0u32; N];
    let mut push = 0usize;
    for q in 0..leg.label_count() {
        let l = leg.label(q);
        if l == IMPLICIT_NULL {
            continue;
        }
        *lse.get_mut(push)? = l << 12;
        push += 1;
    }
    if let Some(e) = push.checked_sub(1).and_then(|t| lse.get_mut(t)) {
        *e |= 0x100;
    }
    Some((lse, push))
}

/// Writes label stack entries `lse` (from [`leg_stack`]) into `st`, the bytes in
/// front of the IPv4 header, as many as it holds, each with TTL `ttl` (the
/// uniform model: the IPv4 TTL after the decrement, RFC 3443 §3.1).
#[inline(always)]
pub(super) fn impose(st: &mut [u8], lse: &[u32], ttl: u8) {
    for (c, &e) in st.chunks_exact_mut(4).zip(lse) {
        c.copy_from_slice(&(e | u32::from(ttl)).to_be_bytes());
    }
}

/// TTL - 1 and the checksum with it, on a header whose TTL is above 1. RFC 1624
/// equation 3 with the changed word folded in: the word (TTL, protocol) drops by
/// 0x0100, so `~m + m'` is 0xfeff, which is 0xfffe (-1) in the byte order the
/// checksum is loaded in here (little-endian; the ones' complement sum commutes
/// with the swap), and `~(~HC + -1)` is HC + 1, where a sum of 0xffff (-0) or
/// more goes one further (0xfffe gives 0, 0xffff gives 1). Same result as
/// [`wire::checksum::update_u16`] for every input.
#[inline(always)]
pub(super) fn ttl_dec(h: &mut [u8; 20]) -> u8 {
    let ttl = h[field::TTL].wrapping_sub(1);
    h[field::TTL] = ttl;
    let c = field::CHECKSUM;
    let s = u32::from(u16::from_le_bytes([h[c], h[c + 1]])) + 1;
    let s = s + u32::from(s >= 0xffff);
    let ck = (s as u16).to_le_bytes();
    h[c] = ck[0];
    h[c + 1] = ck[1];
    ttl
}

/// Per first octet of an address, non-zero where a forwarded packet may not have
/// it: `[0]` as its source (127/8, 224/4), `[1]` as its destination (0/8, 127/8,
/// 224/4 and up: RFC 1812 §5.3.7; multicast is not routed here). Two tables: the
/// test is two loads and an OR.
pub(super) type Martians = [[u8; 256]; 2];

/// The [`Martians`].
pub(super) static MARTIAN: Martians = {
    let mut t = [[0u8; 256]; 2];
    t[1][0] = 1;
    t[0][127] = 1;
    t[1][127] = 1;
    let mut o = 224;
    while o < 256 {
        t[0][o] = (o < 240) as u8;
        t[1][o] = 1;
        o += 1;
    }
    t
};

/// The IPv4 header test of the common case, `h` with `avail` bytes from its start
/// to the end of the frame: version 4 without options, total length within the
/// frame, TTL above 1, the checksum right (or `nic_good`: the receiving NIC
/// checked it), no martian or multicast address. Returns the destination; `None`
/// for everything else, which [`ip4_check_slow`] sorts out. Both paths take
/// their packets through it: [`ip4_check`] and the fast path's pops whole, the
/// classify walks its tail ([`ip4_accept_sized`]) after their own length test.
#[inline(always)]
pub(super) fn ip4_accept(h: &[u8; 20], avail: usize, nic_good: bool) -> Option<u32> {
    if h[field::VER_IHL] != 0x45 {
        return None;
    }
    debug_assert!(avail >= 20, "`h` is the first 20 of `avail` bytes");
    let total = usize::from(rd16(h, field::LENGTH));
    // (`total` in 20..=avail in one compare, `avail` being 20 or more)
    if total.wrapping_sub(20) > avail.wrapping_sub(20) {
        return None;
    }
    ip4_accept_sized(h, nic_good, &MARTIAN)
}

/// Whether IPv4 header `h` (20 bytes, no options) has a right checksum.
///
/// The header checks out when the ones' complement sum of its 16-bit words is
/// 0xffff, that is, when their plain sum is a non-zero multiple of 0xffff
/// (folding the carries back in keeps the value mod 0xffff). 2^16 is 1 mod
/// 0xffff, and so are 2^32 and 2^64: two 64-bit words and a 32-bit one, as loaded
/// (little-endian: swapping the bytes of every word multiplies the sum by 2^8,
/// which keeps it a multiple), added with their carries out of 64 bits added back
/// in, have the same sum mod 0xffff; it is never 0 (the first byte is 0x45). A
/// divisibility test by an odd constant is one multiply by its inverse mod 2^64
/// and one compare.
#[inline(always)]
fn sum_ok(h: &[u8; 20]) -> bool {
    let (a, rest) = h.split_first_chunk::<8>().unwrap_or((&[0; 8], &[]));
    let b = rest.first_chunk::<8>().unwrap_or(&[0; 8]);
    let c = h.last_chunk::<4>().unwrap_or(&[0; 4]);
    let (s, o1) = u64::from_le_bytes(*a).overflowing_add(u64::from_le_bytes(*b));
    let (s, o2) = s.overflowing_add(u64::from(u32::from_le_bytes(*c)) + u64::from(o1));
    // (cannot overflow: after a carry out, `s` is below 2^33)
    let s = s + u64::from(o2);
    const INV: u64 = 0xfffe_fffe_fffe_ffff;
    const _: () = assert!(INV.wrapping_mul(0xffff) == 1);
    s.wrapping_mul(INV) <= u64::MAX / 0xffff
}

/// [`ip4_accept`] but for the version and IHL byte and the total length, which
/// the caller has seen to be 0x45 and 20 or more and within the frame; with `mt`,
/// [`MARTIAN`] or a worker's copy of it (addressed from the register that holds
/// its state: no load of the table's address per packet).
#[inline(always)]
pub(super) fn ip4_accept_sized(h: &[u8; 20], nic_good: bool, mt: &Martians) -> Option<u32> {
    let bad = mt[0][usize::from(h[field::SRC_ADDR])] | mt[1][usize::from(h[field::DST_ADDR])];
    // (`|`: one branch for the common checks)
    if (h[field::TTL] <= 1) | (!sum_ok(h) & !nic_good) | (bad != 0) {
        return None;
    }
    Some(rd32(h, field::DST_ADDR))
}

/// The IPv4 header checks of `ip4-lookup` on the packet's header (`m.l3` to
/// `m.end`): the common header passes [`ip4_accept`], the rest goes through
/// [`ip4_check_slow`]. On success trims Ethernet padding (`m.end`) and returns
/// the destination.
#[inline(always)]
pub(super) fn ip4_check(raw: &[u8], m: &mut Meta) -> Result<u32, DropReason> {
    let l3 = usize::from(m.l3);
    let ip = raw.get(l3..usize::from(m.end)).unwrap_or_default();
    if let Some(h) = ip.first_chunk::<20>().filter(|_| m.csum != RxCsum::Bad) {
        if let Some(dst) = ip4_accept(h, ip.len(), m.csum == RxCsum::Good) {
            m.end = (l3 + usize::from(rd16(h, field::LENGTH))) as u16;
            return Ok(dst);
        }
    }
    ip4_check_slow(raw, m)
}

/// Every IPv4 header check with its drop reason (RFC 1812 §5.2.2, §5.3.7), for
/// the headers [`ip4_accept`] does not take (options, TTL 1, a NIC's bad verdict,
/// malformed, martian): on success trims Ethernet padding (`m.end`) and returns
/// the destination.
#[cold]
#[inline(never)]
pub(super) fn ip4_check_slow(raw: &[u8], m: &mut Meta) -> Result<u32, DropReason> {
    let l3 = usize::from(m.l3);
    let end = usize::from(m.end);
    let ip = raw.get(l3..end).ok_or(DropReason::Ip4Truncated)?;
    let Some(h) = ip.first_chunk::<20>() else {
        return Err(DropReason::Ip4Truncated);
    };
    if h[0] >> 4 != 4 {
        return Err(DropReason::Ip4BadVersion);
    }
    let hl = usize::from(h[0] & 0x0f) * 4;
    if hl < 20 {
        return Err(DropReason::Ip4BadIhl);
    }
    if hl > ip.len() {
        return Err(DropReason::Ip4Truncated);
    }
    let total = usize::from(rd16(h, 2));
    if total < hl || total > ip.len() {
        return Err(DropReason::Ip4BadLength);
    }
    // The NIC's verdict when it checked; otherwise, without options (nearly
    // always), the header is five 32-bit words.
    let ok = if m.csum != RxCsum::Unknown {
        m.csum == RxCsum::Good
    } else if hl == 20 {
        let w = |o: usize| u64::from(u32::from_be_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]));
        wire::checksum::fold(w(0) + w(4) + w(8) + w(12) + w(16)) == 0xffff
    } else {
        wire::checksum::verify(&ip[..hl])
    };
    if !ok {
        return Err(DropReason::Ip4BadChecksum);
    }
    let src = rd32(h, 12);
    let dst = rd32(h, 16);
    //= RFC 1812 §5.3.7: martian addresses are not forwarded.
    // (`|`, not `||`: one branch instead of four)
    if (src >> 24 == 127) | (src >> 28 == 0xe) | (dst >> 24 == 127) | (dst >> 24 == 0) {
        return Err(DropReason::Ip4Martian);
    }
    if dst >> 28 == 0xe {
        return Err(DropReason::Ip4Multicast);
    }
    m.end = (l3 + total) as u16;
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift64 generator from `seed` (not 0).
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// The folded TTL update gives RFC 1624's answer for every checksum and TTL.
    #[test]
    fn ttl_dec_matches_rfc1624() {
        let mut h = [0u8; 20];
        for ttl in [2u8, 3, 64, 128, 255] {
            for proto in [1u8, 6, 17, 0xff] {
                for hc in 0..=u16::MAX {
                    h[8] = ttl;
                    h[9] = proto;
                    h[10..12].copy_from_slice(&hc.to_be_bytes());
                    let old = u16::from_be_bytes([ttl, proto]);
                    let want = wire::checksum::update_u16(hc, old, old - 0x100);
                    assert_eq!(ttl_dec(&mut h), ttl - 1);
                    assert_eq!(u16::from_be_bytes([h[10], h[11]]), want, "hc {hc:#x}");
                }
            }
        }
    }

    /// The divisibility test accepts exactly what the checksum module verifies:
    /// every checksum value of a few random headers.
    #[test]
    fn header_checksum_matches_verify() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..16 {
            let r = next().to_le_bytes();
            let q = next().to_le_bytes();
            let mut h = [
                0x45,
                r[0],
                0,
                40,
                r[1],
                r[2],
                r[3],
                r[4],
                2 + r[5] % 250,
                r[6],
                0,
                0,
                10,
                r[7],
                q[0],
                q[1],
                198,
                q[2],
                q[3],
                q[4],
            ];
            for ck in 0..=u16::MAX {
                h[10..12].copy_from_slice(&ck.to_be_bytes());
                assert_eq!(
                    ip4_accept(&h, 40, false).is_some(),
                    wire::checksum::verify(&h),
                    "{h:02x?}"
                );
            }
        }
    }

    /// The sum with its carries folded back agrees with the checksum module on
    /// headers of mostly 0xff bytes, whose 64-bit words carry out of both adds.
    #[test]
    fn header_sum_carries() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..16 {
            let r = next().to_le_bytes();
            let mut h = [0xffu8; 20];
            h[0] = 0x45;
            // (a few bytes below 0xff, so the words differ from header to header)
            h[1 + usize::from(r[0] % 8)] = r[1];
            h[12 + usize::from(r[2] % 8)] = r[3];
            for ck in 0..=u16::MAX {
                h[10..12].copy_from_slice(&ck.to_be_bytes());
                assert_eq!(sum_ok(&h), wire::checksum::verify(&h), "{h:02x?}");
            }
        }
    }

    /// The little-endian sum accepts exactly the headers whose checksum is right.
    #[test]
    fn header_checksum_either_byte_order() {
        let mut h = [
            0x45, 0, 0, 40, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 192, 0, 2, 7,
        ];
        let ck = wire::checksum::checksum(&h);
        h[10..12].copy_from_slice(&ck.to_be_bytes());
        assert_eq!(ip4_accept(&h, 40, false), Some(0xc000_0207));
        for bit in 0..160 {
            let mut b = h;
            b[bit / 8] ^= 1 << (bit % 8);
            let sum_ok = wire::checksum::verify(&b);
            if ip4_accept(&b, 40, false).is_some() {
                assert!(sum_ok, "bit {bit}");
            }
        }
        // Martians: loopback source, multicast destination, 0/8 destination.
        for (o, v) in [(12, 127), (16, 224), (16, 0), (12, 230), (16, 255)] {
            let mut b = h;
            b[o] = v;
            b[10..12].copy_from_slice(&[0, 0]);
            let ck = wire::checksum::checksum(&b);
            b[10..12].copy_from_slice(&ck.to_be_bytes());
            assert_eq!(ip4_accept(&b, 40, false), None, "octet {v} at {o}");
        }
    }

    /// The two header checks agree: every header the common test takes, the
    /// full checks take too, with the same destination; and every header of the
    /// common shape (no options, TTL above 1, not class E) the full checks take,
    /// the common test takes. So both paths treat a header the same whichever
    /// check it meets.
    #[test]
    fn common_header_test_agrees_with_the_full_checks() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for round in 0..200_000u32 {
            let r = next().to_le_bytes();
            let q = next().to_le_bytes();
            // Mostly well-formed headers, with one field bent now and then.
            let mut h = [
                0x45,
                r[0],
                0,
                40,
                r[1],
                r[2],
                r[3] & 0x5f,
                r[4],
                r[5] % 4,
                6,
                0,
                0,
                r[6] % 4 * 64,
                r[7],
                q[0],
                q[1],
                q[2] % 8 * 32,
                q[3],
                q[4],
                q[5],
            ];
            match q[6] % 8 {
                0 => h[0] = [0x46, 0x55, 0x44, 0x4f][usize::from(q[7] % 4)],
                1 => h[3] = q[7],
                _ => {}
            }
            let ck = wire::checksum::checksum(&h);
            h[10..12].copy_from_slice(&ck.to_be_bytes());
            if q[6] % 8 == 2 {
                h[11] ^= 1 << (q[7] % 8);
            }
            let mut frame = [0u8; 60];
            frame[..20].copy_from_slice(&h);
            let avail = 20 + usize::from(q[7] % 40);
            let mut m = Meta {
                l3: 0,
                end: avail as u16,
                ..Meta::default()
            };
            let full = ip4_check_slow(&frame, &mut m);
            let common = ip4_accept(&h, avail, false);
            if let Some(d) = common {
                assert_eq!(full, Ok(d), "round {round}: {h:02x?}");
            }
            let common_shape = h[0] == 0x45 && h[8] > 1 && h[16] < 240;
            if let (Ok(d), true) = (full, common_shape) {
                assert_eq!(common, Some(d), "round {round}: {h:02x?}");
            }
        }
    }
}
