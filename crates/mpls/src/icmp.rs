//! ICMP time exceeded for TTL expiry inside an LSP, with the RFC 4950 label stack.
//!
//! A P router in the middle of an LSP usually has no IPv4 route back to the source of
//! a packet whose label TTL ran out (the core carries only labels). RFC 3032 §2.3.1
//! therefore has the LSR build the ICMP message and send it *along the LSP the packet
//! was on*: the egress LER pops the labels and routes the message back to the source
//! by IPv4. This is what makes `traceroute` through an LSP show every hop, and what
//! vendors do by default (Cisco, Juniper, Nokia "ICMP tunnelling"). VPP drops such
//! packets silently.
//!
//! [`build_time_exceeded`] writes the IPv4/ICMP packet: type 11 code 0, the RFC 4884
//! length attribute, the original datagram zero-padded to 128 bytes, and an extension
//! structure (version 2, checksum) with one object of class 1, C-Type 1 holding the
//! label stack as received. [`LabelGuard::ttl_exceeded_reply`] then pushes the
//! received stack again (TTL reset) in front of it and switches it like a received
//! packet, so it leaves on the same LSP. Both write into caller buffers; nothing
//! allocates.
//!
//! An IPv6 payload (6PE, 6VPE) is answered in ICMPv6 the same way
//! ([`build_time_exceeded6`], [`LabelGuard::ttl_exceeded_reply6`]): time
//! exceeded with the RFC 4884 length in 64-bit words, the quote zero-padded to
//! 128 bytes and the same extension structure, its checksum over the IPv6
//! pseudo-header. A packet too big ([`build_packet_too_big6`]) carries no
//! extension: RFC 4884 §4.2 gives one to ICMPv6 destination unreachable and
//! time exceeded only.

use crate::stack::read_word;
use crate::table::LabelGuard;
use crate::{MAX_STACK_DEPTH, MplsDecision};
use core::net::{Ipv4Addr, Ipv6Addr};
use wire::icmpv4::{self, RFC4884_MIN_ORIGINAL_LEN, ext};
use wire::icmpv6::{self, Icmpv6Message, Icmpv6Packet};
use wire::{
    IcmpExtHeader, IcmpExtObject, Icmpv4Message, Icmpv4Packet, IpProtocol, Ipv4Packet, Ipv4Repr,
};
use wire::{ipv4, ipv6};

/// Why no ICMP message was built (the pipeline counts the packet as
/// [`DropReason::TtlExpired`](crate::DropReason::TtlExpired)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IcmpError {
    /// The label stack or the IPv4 header is cut short.
    Truncated,
    /// More than [`MAX_STACK_DEPTH`] entries.
    StackTooDeep,
    /// The payload under the stack is not IPv4.
    NotIpv4,
    /// The payload under the stack is not IPv6.
    NotIpv6,
    //= RFC 1812 §4.3.2.7: no ICMP error about an ICMP error, a non-first fragment, or
    //= a datagram whose source is not a unicast address.
    /// The original datagram must not be answered with an ICMP error.
    NotAnswerable,
    /// The output buffer (or its headroom) is too small.
    BufferTooSmall,
}

/// Length of the quoted original datagram (RFC 4884 §5.1 minimum, also our maximum).
pub const QUOTE_LEN: usize = RFC4884_MIN_ORIGINAL_LEN;

/// IPv4 TTL (and label TTL, for the tunnelled reply) of generated messages: 64, the
/// Linux default `ip_default_ttl`.
pub const REPLY_TTL: u8 = 64;

/// DSCP of generated ICMP: CS6 (network control), as Linux sends ICMP errors.
const REPLY_DSCP: u8 = 48;

/// Bytes [`build_time_exceeded`] writes for a stack of `depth` entries:
/// 20 (IPv4) + 8 (ICMP) + 128 (quote) + 4 (extension header) + 4 (object header) +
/// 4 × depth.
pub const fn time_exceeded_len(depth: usize) -> usize {
    ipv4::HEADER_LEN
        + icmpv4::HEADER_LEN
        + QUOTE_LEN
        + ext::HEADER_LEN
        + ext::OBJECT_HEADER_LEN
        + 4 * depth
}

/// Counts the entries of the stack at the start of `rx`.
fn stack_depth(rx: &[u8]) -> Result<usize, IcmpError> {
    for i in 0..MAX_STACK_DEPTH {
        let w = read_word(rx, 4 * i).ok_or(IcmpError::Truncated)?;
        if w & 0x100 != 0 {
            return Ok(i + 1);
        }
    }
    Err(IcmpError::StackTooDeep)
}

/// Builds an ICMP time exceeded (TTL exceeded in transit) about the labelled packet
/// `rx` (starting at its top label stack entry, as received) into `out`, as a whole
/// IPv4 packet from `src` to the original source. Returns the length written and the
/// stack depth.
pub fn build_time_exceeded(
    rx: &[u8],
    src: Ipv4Addr,
    ident: u16,
    out: &mut [u8],
) -> Result<(usize, usize), IcmpError> {
    let depth = stack_depth(rx)?;
    let stack = &rx[..4 * depth];
    let orig = &rx[4 * depth..];
    let len = time_exceeded_len(depth);
    let out = out.get_mut(..len).ok_or(IcmpError::BufferTooSmall)?;
    let icmp = error_head(orig, src, ident, out)?;
    write_stack_extension(&mut icmp[icmpv4::HEADER_LEN + QUOTE_LEN..], stack);
    let mut p = Icmpv4Packet::new_unchecked(&mut *icmp);
    p.set_msg_type(Icmpv4Message::TimeExceeded);
    p.set_msg_code(0);
    //= RFC 4884 §4.1: length of the original datagram in 32-bit words.
    p.set_rfc4884_len_words((QUOTE_LEN / 4) as u8);
    p.fill_checksum();
    Ok((len, depth))
}

/// The header length and source of IPv4 datagram `orig` if an ICMP error may
/// answer it (RFC 1812 §4.3.2.7: not about a fragment other than the first, a
/// non-unicast source or an ICMP error).
fn answerable(orig: &[u8]) -> Result<(usize, Ipv4Addr), IcmpError> {
    let ip = Ipv4Packet::new_unchecked(orig);
    if orig.len() < ipv4::HEADER_LEN {
        return Err(IcmpError::Truncated);
    }
    if ip.version() != 4 {
        return Err(IcmpError::NotIpv4);
    }
    let hl = usize::from(ip.header_len());
    if hl < ipv4::HEADER_LEN || hl > orig.len() {
        return Err(IcmpError::Truncated);
    }
    let osrc = ip.src_addr();
    if ip.frag_offset() != 0
        || osrc.is_unspecified()
        || osrc.is_multicast()
        || osrc.is_broadcast()
        || osrc.is_loopback()
    {
        return Err(IcmpError::NotAnswerable);
    }
    if ip.protocol() == IpProtocol::Icmp {
        // Only queries (echo, timestamp, ...) may be answered with an error.
        let t = orig.get(hl).copied().ok_or(IcmpError::Truncated)?;
        if matches!(t, 3 | 4 | 5 | 11 | 12) {
            return Err(IcmpError::NotAnswerable);
        }
    }
    Ok((hl, osrc))
}

/// The parts every ICMP error here shares, into `out` (the whole message): the
/// IPv4 header from `src` to the source of `orig` (if it may be answered), a
/// zeroed ICMP header and the quote (`orig` as received, at most its total
/// length, cut or zero-padded to [`QUOTE_LEN`] bytes). Returns the ICMP part of
/// `out` for the caller to finish.
fn error_head<'o>(
    orig: &[u8],
    src: Ipv4Addr,
    ident: u16,
    out: &'o mut [u8],
) -> Result<&'o mut [u8], IcmpError> {
    let (hl, osrc) = answerable(orig)?;
    if out.len() < ipv4::HEADER_LEN + icmpv4::HEADER_LEN + QUOTE_LEN {
        return Err(IcmpError::BufferTooSmall);
    }
    let (ip_hdr, icmp) = out.split_at_mut(ipv4::HEADER_LEN);
    Ipv4Repr {
        src_addr: src,
        dst_addr: osrc,
        protocol: IpProtocol::Icmp,
        payload_len: icmp.len(),
        ttl: REPLY_TTL,
        dscp: REPLY_DSCP,
        ident,
        dont_frag: false,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut *ip_hdr));
    let total = usize::from(Ipv4Packet::new_unchecked(orig).total_len());
    let quote_len = orig.len().min(total.max(hl)).min(QUOTE_LEN);
    let (head, rest) = icmp.split_at_mut(icmpv4::HEADER_LEN);
    head.fill(0);
    let quote = &mut rest[..QUOTE_LEN];
    quote[..quote_len].copy_from_slice(&orig[..quote_len]);
    quote[quote_len..].fill(0);
    Ok(icmp)
}

/// Bytes [`build_frag_needed`] writes: 20 (IPv4) + 8 (ICMP) + the quote.
pub const FRAG_NEEDED_LEN: usize = ipv4::HEADER_LEN + icmpv4::HEADER_LEN + QUOTE_LEN;

//= RFC 3032 §3.2: a labelled packet too big for the next hop, whose IPv4 payload
//= must not be fragmented, is answered with "fragmentation needed" carrying the
//= MTU available to the IPv4 datagram (the link's minus the label stack).
/// Builds an ICMP "fragmentation needed and DF set" (type 3, code 4) about the
/// IPv4 datagram `orig`, from `src`, with next-hop MTU `mtu` (RFC 1191), into
/// `out` ([`FRAG_NEEDED_LEN`] bytes: the quote is the datagram's first 128 bytes,
/// zero-padded). Returns the length written.
pub fn build_frag_needed(
    orig: &[u8],
    src: Ipv4Addr,
    ident: u16,
    mtu: u16,
    out: &mut [u8],
) -> Result<usize, IcmpError> {
    let out = out
        .get_mut(..FRAG_NEEDED_LEN)
        .ok_or(IcmpError::BufferTooSmall)?;
    let icmp = error_head(orig, src, ident, out)?;
    let mut p = Icmpv4Packet::new_unchecked(&mut *icmp);
    p.set_msg_type(Icmpv4Message::DstUnreachable);
    p.set_msg_code(4);
    p.set_next_hop_mtu(mtu);
    p.fill_checksum();
    Ok(FRAG_NEEDED_LEN)
}

/// Bytes [`build_time_exceeded6`] writes for a stack of `depth` entries:
/// 40 (IPv6) + 8 (ICMPv6) + 128 (quote) + 4 (extension header) + 4 (object
/// header) + 4 × depth.
pub const fn time_exceeded6_len(depth: usize) -> usize {
    ipv6::HEADER_LEN
        + icmpv6::HEADER_LEN
        + QUOTE_LEN
        + ext::HEADER_LEN
        + ext::OBJECT_HEADER_LEN
        + 4 * depth
}

/// The source of IPv6 packet `orig` if an ICMPv6 error `msg` may answer it
/// (RFC 4443 §2.4(e), [`icmpv6::may_send_error`]).
fn answerable6(orig: &[u8], msg: Icmpv6Message) -> Result<Ipv6Addr, IcmpError> {
    if orig.first().is_some_and(|v| v >> 4 != 6) {
        return Err(IcmpError::NotIpv6);
    }
    let h = orig
        .first_chunk::<{ ipv6::HEADER_LEN }>()
        .ok_or(IcmpError::Truncated)?;
    if !icmpv6::may_send_error(orig, msg, 0) {
        return Err(IcmpError::NotAnswerable);
    }
    let mut src = [0u8; 16];
    src.copy_from_slice(&h[8..24]);
    Ok(Ipv6Addr::from(src))
}

/// The IPv6 header of a message the router sends from `src` to `dst` with
/// `payload_len` bytes after it, into `out` (40 bytes).
fn emit_ip6(out: &mut [u8], src: Ipv6Addr, dst: Ipv6Addr, payload_len: usize) {
    wire::Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len,
        hop_limit: REPLY_TTL,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut wire::Ipv6Packet::new_unchecked(out));
}

/// Builds an ICMPv6 time exceeded (hop limit exceeded in transit, type 3 code
/// 0) about the labelled packet `rx` (from its top label stack entry, as
/// received, an IPv6 packet under the stack) into `out`, as a whole IPv6
/// packet from `src` to the original source: the RFC 4884 length attribute (in
/// 64-bit words), the original packet zero-padded to 128 bytes, and the
/// extension structure with the RFC 4950 label stack object. Returns the
/// length written and the stack depth.
pub fn build_time_exceeded6(
    rx: &[u8],
    src: Ipv6Addr,
    out: &mut [u8],
) -> Result<(usize, usize), IcmpError> {
    let depth = stack_depth(rx)?;
    let stack = &rx[..4 * depth];
    let orig = &rx[4 * depth..];
    let to = answerable6(orig, Icmpv6Message::TimeExceeded)?;
    let len = time_exceeded6_len(depth);
    let out = out.get_mut(..len).ok_or(IcmpError::BufferTooSmall)?;
    let (ip, icmp) = out.split_at_mut(ipv6::HEADER_LEN);
    emit_ip6(ip, src, to, icmp.len());
    let (head, rest) = icmp.split_at_mut(icmpv6::HEADER_LEN);
    head.fill(0);
    //= RFC 4443 §3.3: the quote is the invoking packet, as much as fits; here
    //= the RFC 4884 §5.1 minimum of 128 bytes, zero-padded.
    let whole = 40 + usize::from(u16::from_be_bytes([orig[4], orig[5]]));
    let quote_len = orig.len().min(whole).min(QUOTE_LEN);
    let (quote, extension) = rest.split_at_mut(QUOTE_LEN);
    quote[..quote_len].copy_from_slice(&orig[..quote_len]);
    quote[quote_len..].fill(0);
    write_stack_extension(extension, stack);
    //= RFC 4884 §4.2: for ICMPv6 the length attribute is the first octet after
    //= the checksum and counts 64-bit words.
    head[4] = (QUOTE_LEN / 8) as u8;
    let mut p = Icmpv6Packet::new_unchecked(&mut *icmp);
    p.set_msg_type(Icmpv6Message::TimeExceeded);
    p.set_msg_code(0);
    p.fill_checksum(src, to);
    Ok((len, depth))
}

/// Bytes of the ICMPv6 header and its IPv6 header: what an ICMPv6 error adds
/// to its quote.
pub const ICMP6_ERROR_HEADERS: usize = ipv6::HEADER_LEN + icmpv6::HEADER_LEN;

//= RFC 3032 §3.2 as RFC 4443 §3.2 carries it for IPv6: a labelled IPv6 packet
//= too big for the next hop is answered with packet too big carrying the MTU
//= left to the IPv6 packet under the outgoing stack (IPv6 is never fragmented
//= on the way).
/// Builds an ICMPv6 packet too big (type 2) about IPv6 packet `orig`, from
/// `src`, with MTU `mtu`, into `out`: the quote is as much of `orig` as fits
/// in `out` and in `mtu` (and the IPv6 minimum MTU). Returns the length
/// written.
pub fn build_packet_too_big6(
    orig: &[u8],
    src: Ipv6Addr,
    mtu: u16,
    out: &mut [u8],
) -> Result<usize, IcmpError> {
    let to = answerable6(orig, Icmpv6Message::PktTooBig)?;
    let room = out
        .len()
        .min(usize::from(mtu))
        .min(ipv6::MIN_MTU)
        .checked_sub(ICMP6_ERROR_HEADERS)
        .filter(|&r| r >= ipv6::HEADER_LEN)
        .ok_or(IcmpError::BufferTooSmall)?;
    let whole = 40 + usize::from(u16::from_be_bytes([orig[4], orig[5]]));
    let quote_len = orig.len().min(whole).min(room);
    let len = ICMP6_ERROR_HEADERS + quote_len;
    let (ip, icmp) = out[..len].split_at_mut(ipv6::HEADER_LEN);
    emit_ip6(ip, src, to, icmp.len());
    let mut p = Icmpv6Packet::new_unchecked(&mut *icmp);
    p.set_msg_type(Icmpv6Message::PktTooBig);
    p.set_msg_code(0);
    p.set_mtu(u32::from(mtu));
    p.data_mut().copy_from_slice(&orig[..quote_len]);
    p.fill_checksum(src, to);
    Ok(len)
}

impl LabelGuard<'_> {
    /// Answers a [`MplsDecision::TtlExpired`]: builds the time-exceeded message about
    /// `rx` (the received frame from its top label) at `out[headroom..]`, pushes the
    /// received label stack in front of it with TTL [`REPLY_TTL`] (labels, TC and S
    /// as received) and switches the result like a received packet.
    ///
    /// Returns the offset where the labelled reply starts in `out` and the decision
    /// for it — normally `Forward`/`Php` to the same next hop as the original packet,
    /// i.e. along the LSP to its egress, which routes the ICMP back to the source.
    /// `headroom` must leave room for the stack (4 × depth bytes) plus whatever the
    /// swap adds; the pipeline passes its mbuf headroom.
    pub fn ttl_exceeded_reply(
        &self,
        rx: &[u8],
        src: Ipv4Addr,
        ident: u16,
        out: &mut [u8],
        headroom: usize,
    ) -> Result<(usize, MplsDecision), IcmpError> {
        let body = out.get_mut(headroom..).ok_or(IcmpError::BufferTooSmall)?;
        let (_, depth) = build_time_exceeded(rx, src, ident, body)?;
        let start = headroom
            .checked_sub(4 * depth)
            .ok_or(IcmpError::BufferTooSmall)?;
        for i in 0..depth {
            let w = read_word(rx, 4 * i).ok_or(IcmpError::Truncated)?;
            let w = (w & !0xff) | u32::from(REPLY_TTL);
            out[start + 4 * i..start + 4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        let mut off = start;
        let d = self.switch(out, &mut off);
        Ok((off, d))
    }

    /// [`ttl_exceeded_reply`](Self::ttl_exceeded_reply) for an IPv6 payload:
    /// the ICMPv6 time exceeded of [`build_time_exceeded6`] from `src`, behind
    /// the received stack (TTL [`REPLY_TTL`]), switched like a received packet
    /// (along the LSP; a penultimate hop's pop of it is `Php6`).
    pub fn ttl_exceeded_reply6(
        &self,
        rx: &[u8],
        src: Ipv6Addr,
        out: &mut [u8],
        headroom: usize,
    ) -> Result<(usize, MplsDecision), IcmpError> {
        let body = out.get_mut(headroom..).ok_or(IcmpError::BufferTooSmall)?;
        let (_, depth) = build_time_exceeded6(rx, src, body)?;
        let start = headroom
            .checked_sub(4 * depth)
            .ok_or(IcmpError::BufferTooSmall)?;
        for i in 0..depth {
            let w = read_word(rx, 4 * i).ok_or(IcmpError::Truncated)?;
            let w = (w & !0xff) | u32::from(REPLY_TTL);
            out[start + 4 * i..start + 4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        let mut off = start;
        let d = self.switch(out, &mut off);
        Ok((off, d))
    }
}

/// Writes the RFC 4884 extension structure holding one RFC 4950 incoming label
/// stack object with `stack` into `extension` (sized for it by the caller).
fn write_stack_extension(extension: &mut [u8], stack: &[u8]) {
    let mut e = IcmpExtHeader::new_unchecked(extension);
    e.set_version(ext::VERSION);
    //= RFC 4950 §7: the object carries the label stack entries as received.
    let mut obj = IcmpExtObject::new_unchecked(e.objects_mut());
    obj.set_header(
        (ext::OBJECT_HEADER_LEN + stack.len()) as u16,
        ext::CLASS_MPLS_LABEL_STACK,
        ext::CTYPE_INCOMING_MPLS_STACK,
    );
    obj.payload_mut()[..stack.len()].copy_from_slice(stack);
    e.fill_checksum();
}
