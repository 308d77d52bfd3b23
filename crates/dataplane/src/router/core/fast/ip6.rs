//! The fast path's IPv6: the classify walk's runs of plain IPv6 packets, whose
//! destinations become a batch of keys of their own (with the packets a label
//! popped into IPv6), and their forward walk, which sends the packets of a
//! plain decision (one leg, a resolved adjacency on an untagged interface that
//! is up, nothing to push) or of a push of one or two labels there
//! ([`send::push6`]: 6PE) and hands the others to `ip6-lookup` untouched.
//!
//! A plain IPv6 packet: an untagged frame to the interface's MAC, exactly as
//! long as its payload length says (no Ethernet padding), a hop limit above 1,
//! a source that is not multicast, link-local, unspecified or loopback, and a
//! destination that is not multicast, link-local, unspecified or loopback.
//! Everything else (extension headers included: they are forwarded untouched
//! either way) has the same fate in `ip6-lookup`, which the differential test
//! of `tests/router_core.rs` checks.

use super::*;

/// EtherType IPv6, its two bytes at offset 12 read little-endian.
const ET_IP6_LE: u16 = 0xdd86;
/// Ethernet and an IPv6 header.
const HEAD6: usize = ETH_LEN + 40;

/// The destination of a plain IPv6 header `ip` (see the module docs), as the
/// lookup's key.
#[inline(always)]
pub(super) fn ip6_accept(ip: &[u8; 40]) -> Option<u128> {
    let src = u128::from_be_bytes(*ip[8..24].first_chunk::<16>()?);
    let dst = u128::from_be_bytes(*ip[24..40].first_chunk::<16>()?);
    // Multicast (ff00::/8), link-local (fe80::/10), unspecified and loopback
    // (below 2): not plain on either side.
    let odd = |a: u128| a >> 120 == 0xff || a >> 118 == 0xfe80 >> 6 || a <= 1;
    (ip[7] > 1 && !odd(src) && !odd(dst)).then_some(dst)
}

impl Work {
    /// The classify walk's run of plain IPv6 packets from `pkts[i0]` on (see the
    /// module docs) on `c.rxif`'s port; their destinations become the next IPv6
    /// keys. Returns where the run ends.
    #[inline(never)]
    pub(super) fn ip6_run<P: Packet>(
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
        let (mut bytes, mut i) = (0u64, i0);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let frame = p.data_mut();
            let len = frame.len();
            let Some(h) = frame.first_chunk::<HEAD6>() else {
                break;
            };
            let et = u16::from_le_bytes([h[12], h[13]]);
            let mac = h.first_chunk::<HEAD>().map_or(0, mac_key);
            if (mac != rxif.mac) | (et != ET_IP6_LE) | (h[14] >> 4 != 6) {
                break;
            }
            let Some(ip) = h.last_chunk::<40>() else {
                break;
            };
            if HEAD6 + usize::from(rd16(ip, 4)) != len {
                break;
            }
            let Some(dst) = ip6_accept(ip) else {
                break;
            };
            let k = c.k6 & (BURST - 1);
            self.keys6[k] = dst;
            self.sel6[k] = i as u16;
            c.k6 += 1;
            bytes += len as u64;
            i += 1;
        }
        c.rx_pkts += (i - i0) as u64;
        c.rx_bytes += bytes;
        i
    }

    /// The forward walk of the `k` IPv6 keys looked up (results in `fwd`): a
    /// plain decision sends the packet (hop limit, L2 header); any other hands it
    /// to `ip6-lookup`. Returns how many it sent.
    #[inline(never)]
    pub(super) fn forward_walk6<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        k: usize,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        let k = k.min(BURST);
        let n = pkts.len().min(out.len());
        let (pkts, out) = (&mut pkts[..n], &mut out[..n]);
        let mut sent = 0;
        let mut last_f = u64::MAX;
        // (what sFlow reads of a packet this walk sends: see `forward_walk`)
        let notes = hb.light_meta | self.obs.tx_ifs;
        for j in 0..k {
            let f = self.fwd[j];
            let slot = f as usize & (FWD_CACHE - 1);
            if u64::from(f) != last_f {
                if !self.fd_hit(slot, f) {
                    self.fwd_decode_cold(slot, f, hb.ift, hb.view);
                }
                last_f = u64::from(f);
            }
            let i = usize::from(self.sel6[j]);
            let (Some(p), Some(o)) = (pkts.get_mut(i), out.get_mut(i)) else {
                continue;
            };
            let d = &self.fd[slot];
            let rs = usize::from(d.rs) & (RW_CACHE - 1);
            let rw = &mut self.rw[rs];
            let frame = p.data_mut();
            let len = frame.len();
            let fits = len <= usize::from(rw.frame_max);
            match frame.first_chunk_mut::<HEAD6>() {
                Some(h) if d.plain && fits => {
                    h[ETH_LEN + 7] -= 1;
                    if write_l2(h, 0, &rw.hdr, false, ETHERTYPE_IPV6).is_none() {
                        // (cannot happen: the header is in the chunk)
                        continue;
                    }
                    *o = count_tx(rw, len);
                    sent += 1;
                    if notes {
                        self.obs.fast_adj[i & (BURST - 1)] = d.adj;
                        self.obs.txs[i & (BURST - 1)] = tx_ifindex(&self.rw[rs]);
                    }
                }
                // (a push: 6PE's LSP and 6PE labels, or a route's own)
                _ => match send::push6(p, rw, d) {
                    Some(len) => {
                        *o = count_tx(rw, len);
                        sent += 1;
                        if notes {
                            self.obs.fast_adj[i & (BURST - 1)] = d.adj;
                            self.obs.txs[i & (BURST - 1)] = tx_ifindex(&self.rw[rs]);
                        }
                    }
                    None => self.ip6_resume(p, i, hb),
                },
            }
        }
        sent
    }

    /// Hands IPv6 key packet `i` (`p`, untouched, or popped from under a label)
    /// to `ip6-lookup`.
    #[cold]
    #[inline(never)]
    fn ip6_resume<P: Packet>(&mut self, p: &mut P, i: usize, hb: &mut Handback<'_, '_>) {
        hb.follow(p.port());
        let (start, len) = p.window();
        let popped = self.popped(i);
        if popped {
            // (the frame as it came in, its label in it)
            if let Some(s) = start.checked_sub(LABEL_LEN) {
                let _ = p.set_window(s, len + LABEL_LEN);
            }
        }
        let m = Meta {
            next: Next::Ip6Lookup,
            l3: (start + ETH_LEN) as u16,
            end: (start + len) as u16,
            rx_if: hb.fb_if.ifindex,
            table: hb.vt,
            path: ETH | if popped { MPLS } else { 0 },
            ..Meta::default()
        };
        self.resume(i, m, hb);
    }
}
