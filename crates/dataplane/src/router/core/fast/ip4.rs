//! The classify walk's runs of plain IPv4 packets, which become the LPM keys, and
//! the hand-back of a packet to the general IPv4 stage.

use super::*;

/// EtherType IPv4, its two bytes at offset 12 read little-endian.
const ET_IP4_LE: u16 = 0x0008;

impl Work {
    /// The classify walk's run of plain IPv4 packets from `pkts[i0]` on:
    /// untagged frames on `c.rxif`'s port (up, in the vector's table) to its MAC
    /// carrying an IPv4 header that passes [`ip4_accept_sized`]. Their destinations
    /// become the next keys. Returns where the run ends.
    /// `NIC`: read the NIC's checksum verdicts (the port's device checks them; a
    /// port whose device does not gets a loop that never reads one).
    #[inline(never)]
    pub(super) fn ip4_run<const NIC: bool, P: Packet>(
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

    /// Hands packet `i` (IPv4 header at `l3`, frame up to `end`, received on
    /// `rx_if`, its label `popped` or not) to the general IPv4 stage of routing
    /// table `t`.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn ip4_resume_at(
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
    pub(super) fn ip4_resume<P: Packet>(&mut self, p: &mut P, i: usize, hb: &mut Handback<'_, '_>) {
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
}

/// Cuts the Ethernet padding of key packet `p` (packet `i`, its window
/// `received` long as it came in): its window ends at `frame`, the L2 header
/// and the IPv4 total length, when that is a header's length or more and
/// shorter than the window; false (untouched) otherwise. Notes the cut in
/// `padded`. Inline: a call in the classify walk's loop spills its values.
#[inline(always)]
pub(super) fn cut_padding<P: Packet>(
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
