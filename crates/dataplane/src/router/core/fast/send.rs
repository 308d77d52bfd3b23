//! The per-packet writes that send a key: TTL and checksum, the labels to push and
//! the L2 header, for a plain forward, a push out of an untagged link, or any other.

use wire::ipv6;

use super::*;

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

/// [`forward`] for a plain decision (see [`How::Plain`]): IPv4 out of an
/// untagged interface, nothing pushed, for a frame no longer than `max` (the
/// adjacency's MTU and the L2 header). Returns the frame length, or `None` with
/// the packet untouched (MTU).
///
/// A key's frame ends where its IPv4 total length says (the classify walks cut
/// Ethernet padding: [`cut_padding`](super::ip4::cut_padding)), and its header
/// sits right behind the frame's L2 header (a popped packet's window starts past
/// its label): the frame's own window holds it (no bounds to check against the
/// buffer).
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
    push_front::<N, W, P>(p, rw, d, max, |h| h.last_chunk_mut::<20>().map(ttl_dec))
}

/// The push of `N` labels both families share: the frame grows into its
/// headroom by the labels ([`Packet::grow_front`]) if it then fits in `max`;
/// in its first `W` bytes (`N` labels and the L2 and IP headers), `ttl`
/// decrements the IP header's TTL or hop limit and returns it, the labels get
/// it (uniform) and the L2 header is written. Returns the frame length, or
/// `None` with the packet untouched (MTU, headroom).
#[inline(always)]
fn push_front<const N: usize, const W: usize, P: Packet>(
    p: &mut P,
    rw: &Rw,
    d: &FwdDec,
    max: usize,
    ttl: impl FnOnce(&mut [u8; W]) -> Option<u8>,
) -> Option<usize> {
    let grow = N * LABEL_LEN;
    let frame = p.window().1 + grow;
    if frame > max || !p.grow_front(grow) {
        return None;
    }
    let Some(h) = p.data_mut().first_chunk_mut::<W>() else {
        // (cannot happen: a key's frame holds its L2 and IP headers)
        let _ = p.drop_front(grow);
        return None;
    };
    // Every check is done: from here on the packet changes.
    let ttl = ttl(h)?;
    impose(&mut h[ETH_LEN..ETH_LEN + grow], &d.lse, ttl);
    write_l2(h, 0, &rw.hdr, false, ETHERTYPE_MPLS)?;
    Some(frame)
}

/// Ethernet and an IPv6 header.
pub(super) const HEAD6: usize = ETH_LEN + ipv6::HEADER_LEN;
/// The hop limit's offset in a frame that starts with an untagged L2 header.
const HOP_LIMIT6: usize = ETH_LEN + ipv6::field::HOP_LIMIT;

/// [`forward_push`] for an IPv6 key (6PE's two labels, or an IPv6 route's
/// own): decision `d` pushes one or two labels out of an untagged interface
/// (see [`How::Push1`], [`How::Push2`]); the frame grows into its headroom by
/// the labels, then its L2 header, labels and the hop limit (less one, the
/// labels' TTL: uniform) are written in one slice of it. The classify walk saw
/// a hop limit above 1. Returns the frame length, or `None` with the packet
/// untouched (not such a decision, MTU, headroom).
#[inline(always)]
pub(super) fn push6<P: Packet>(p: &mut P, rw: &Rw, d: &FwdDec) -> Option<usize> {
    match d.how {
        How::Push1 => push6_n::<1, { LABEL_LEN + HEAD6 }, P>(p, rw, d),
        How::Push2 => push6_n::<2, { 2 * LABEL_LEN + HEAD6 }, P>(p, rw, d),
        _ => None,
    }
}

/// A plain IPv6 forward (see [`How::Plain`]) of key packet `p` through `rw`,
/// for a frame no longer than `max` (the adjacency's MTU and an untagged L2
/// header): the hop limit (above 1: the classify walk saw it) less one and the
/// L2 header. Returns the frame length, or `None` with the packet untouched
/// (MTU).
#[inline(always)]
pub(super) fn forward_plain6<P: Packet>(p: &mut P, rw: &Rw, max: usize) -> Option<usize> {
    let frame = p.data_mut();
    let len = frame.len();
    let h = frame.first_chunk_mut::<HEAD6>()?;
    if len > max {
        return None;
    }
    // Every check is done: from here on the packet changes.
    h[HOP_LIMIT6] = h[HOP_LIMIT6].wrapping_sub(1);
    write_l2(h, 0, &rw.hdr, false, ETHERTYPE_IPV6)?;
    Some(len)
}

/// [`push6`] of `N` labels, in a slice of `W` bytes (`N` labels and
/// [`HEAD6`]).
#[inline(always)]
fn push6_n<const N: usize, const W: usize, P: Packet>(
    p: &mut P,
    rw: &Rw,
    d: &FwdDec,
) -> Option<usize> {
    const { assert!(W == N * LABEL_LEN + HEAD6 && N <= FAST_LABELS) };
    push_front::<N, W, P>(p, rw, d, plain_max(rw), |h| {
        let at = N * LABEL_LEN + HOP_LIMIT6;
        let hl = h[at].wrapping_sub(1);
        h[at] = hl;
        Some(hl)
    })
}

/// Sends key packet `p` by decision `d` through its adjacency `rw`
/// ([`forward_plain`] up to `max` if `plain`, [`forward_push`] if `d` pushes
/// one or two labels out of an untagged interface, else [`forward`] if `d` is
/// ok): the frame length, or `None` with the packet untouched.
#[inline(always)]
pub(super) fn send<P: Packet>(
    p: &mut P,
    rw: &Rw,
    d: &FwdDec,
    plain: bool,
    max: usize,
) -> Option<usize> {
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
pub(super) fn plain_max(rw: &Rw) -> usize {
    usize::from(rw.frame_max)
}
