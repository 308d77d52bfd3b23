//! The fast path's IPv6: the classify walk's runs of plain IPv6 packets, whose
//! destinations become a batch of keys of their own (with the packets a label
//! popped into IPv6), and their forward walk, which sends the packets of a
//! plain decision (one leg, a resolved adjacency on an untagged interface that
//! is up, nothing to push) or of a push of one or two labels there
//! ([`send::push6`]: 6PE) and hands the others to `ip6-lookup` untouched.
//!
//! A plain IPv6 packet: an untagged frame to the interface's MAC, exactly as
//! long as its payload length says (no Ethernet padding), a hop limit above 1,
//! and a source and a destination whose upper 64 bits are neither zero
//! (unspecified, loopback, IPv4-mapped) nor fe80:: or above (link-local,
//! site-local, multicast).
//! Everything else (extension headers included: they are forwarded untouched
//! either way) has the same fate in `ip6-lookup`, which the differential test
//! of `tests/router_core.rs` checks.

use super::forward_walk::KeyFamily;
use super::send::HEAD6;
use super::*;

/// EtherType IPv6 and version 6: bytes 12..15 of the frame read little-endian,
/// under the mask 0xf0_ffff.
const ET_V6_LE: u64 = 0x60_dd86;

/// Whether an address whose upper 64 bits are `hi` may be plain: neither zero
/// (unspecified, loopback, IPv4-mapped or -compatible) nor fe80:: or above
/// (link-local, the deprecated site-local, multicast): one compare.
#[inline(always)]
fn plain_hi(hi: u64) -> bool {
    hi.wrapping_sub(1) < 0xfe7f_ffff_ffff_ffff
}

/// The destination of a plain IPv6 header `ip` (see the module docs), as the
/// lookup's key.
#[inline(always)]
pub(super) fn ip6_accept(ip: &[u8; 40]) -> Option<u128> {
    let be = |o: usize| {
        ip.get(o..o + 8)
            .and_then(|b| b.first_chunk::<8>())
            .map(|b| u64::from_be_bytes(*b))
    };
    let (src, dst, lo) = (be(8)?, be(24)?, be(32)?);
    ((ip[7] > 1) & plain_hi(src) & plain_hi(dst))
        .then_some((u128::from(dst) << 64) | u128::from(lo))
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
        let (mut bytes, mut i, mut k6) = (0u64, i0, c.k6);
        while i < n {
            let Some(p) = run_next(pkts, i, rxif.port) else {
                break;
            };
            let frame = p.data_mut();
            let len = frame.len();
            let Some(h) = frame.first_chunk::<HEAD6>() else {
                break;
            };
            // (the EtherType, the version and the payload length in one word)
            let w = u64::from_le_bytes([h[12], h[13], h[14], h[15], h[16], h[17], h[18], h[19]]);
            let mac = h.first_chunk::<HEAD>().map_or(0, mac_key);
            let plen = usize::from(((w >> 48) as u16).swap_bytes());
            if (mac != rxif.mac) | (w & 0xf0_ffff != ET_V6_LE) | (HEAD6 + plen != len) {
                break;
            }
            let Some(dst) = h.last_chunk::<40>().and_then(ip6_accept) else {
                break;
            };
            let k = k6 & (BURST - 1);
            self.keys6[k] = dst;
            self.sel6[k] = i as u16;
            k6 += 1;
            bytes += len as u64;
            i += 1;
        }
        c.k6 = k6;
        c.rx_pkts += (i - i0) as u64;
        c.rx_bytes += bytes;
        i
    }

    /// The forward walk of the `k` IPv6 keys looked up (results in `fwd`): a
    /// plain decision sends the packet (hop limit, L2 header), and so does one
    /// that pushes one or two labels out of an untagged interface
    /// ([`send::push6`]); any other hands it to `ip6-lookup`. Returns how many it
    /// sent.
    #[inline(never)]
    pub(super) fn forward_walk6<P: Packet>(
        &mut self,
        pkts: &mut [P],
        out: &mut [Out],
        k: usize,
        hb: &mut Handback<'_, '_>,
    ) -> usize {
        // (what sFlow reads of a packet this walk sends: see `forward_walk`)
        if hb.light_meta | self.obs.tx_ifs {
            self.forward_keys::<V6, true, P>(pkts, out, k, hb)
        } else {
            self.forward_keys::<V6, false, P>(pkts, out, k, hb)
        }
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

/// IPv6 keys: [`send::forward_plain6`] or [`send::push6`], then `ip6-lookup`.
pub(super) struct V6;

impl KeyFamily for V6 {
    const SIX: bool = true;
    const ECMP: bool = false;

    #[inline(always)]
    fn send<const PLAIN: bool, P: Packet>(
        p: &mut P,
        rw: &Rw,
        d: &FwdDec,
        max: usize,
    ) -> Option<usize> {
        if PLAIN {
            send::forward_plain6(p, rw, max)
        } else {
            send::push6(p, rw, d)
        }
    }

    #[inline(always)]
    fn resume<P: Packet>(w: &mut Work, p: &mut P, i: usize, hb: &mut Handback<'_, '_>) {
        w.ip6_resume(p, i, hb);
    }
}
