//! Label switching: one pass over a received label stack, in place.
//!
//! [`LabelGuard::switch`] looks the top entry up by (label, S), applies the action and
//! returns an [`MplsDecision`]. Pops that continue with the next label (label 0 or 2
//! not at the bottom, configured `Pop`, entropy label pairs) loop inside the same call,
//! so a pop followed by an IP lookup never needs a second pass.
//!
//! The payload's family: label 0 and `Ip4Lookup` say IPv4, label 2 and
//! `Ip6Lookup` say IPv6 (a header of the other family under them is a drop,
//! [`DropReason::Ip6UnderIp4`], [`DropReason::Ip4UnderIp6`]); a penultimate hop's
//! pop of the bottom label, `IpLookup` and an entropy label pair at the bottom
//! read the version nibble under the stack (4 or 6, anything else
//! [`DropReason::NotIp`]).
//!
//! A caller with the top entry in hand splits the call: [`LabelGuard::top`] looks
//! the entry up, [`Top::pops_into_ip4`] says whether it pops into an IPv4 lookup
//! ([`LabelGuard::pop_into_ip4`] does that and returns the table), and
//! [`LabelGuard::switch_top`] does everything else; together they do what `switch`
//! does (a property test holds them to it). The router's fast path branches on the
//! entry that way instead of matching on a decision.
//!
//! TTL (RFC 3032 §2.4, RFC 3443):
//! * A received TTL 0 is dropped (`DropReason::TtlExpired`), as VPP's `mpls-input`.
//! * Swap and PHP decrement: with a received TTL of 1 the decision is
//!   `MplsDecision::TtlExpired` and the frame is left as received, for the ICMP
//!   builder.
//! * Pop-and-lookup does not decrement: the label TTL goes into the IPv4 TTL or
//!   the IPv6 hop limit (uniform) and the IP stage decrements once, so an egress
//!   LER is one hop, not two.
//! * Uniform pops carry the popped TTL down to the next label; pipe pops use the next
//!   label's own TTL.

use crate::hash::flow_hash;
use crate::stack::{Family, dispose_any, dispose_ip4, dispose_ip6, read_word, write_word};
use crate::table::{
    K_DROP, K_ECMP, K_ELI, K_IP4, K_IP6, K_IPX, K_PHP, K_POP, K_PUNT, K_PW, K_SWAP, LabelGuard,
    SLOT_WORDS, Slot, W_ARG, W_HDR, W_LABELS, hdr_count, hdr_kind, hdr_uniform, key_of,
};
use crate::{DropReason, MAX_STACK_DEPTH, MplsDecision, PuntReason};

const S_BIT: u32 = 0x100;
/// TC and S bits of an entry.
const TC_S: u32 = 0xf00;

impl LabelGuard<'_> {
    /// Switches the labelled packet whose stack starts at `buf[*off]`.
    ///
    /// On `Forward`, `Php` and `Ip4Lookup`, `*off` moves to where the outgoing layer 3
    /// starts (back by 4 × (n − 1) for a swap to n labels, forward by 4 per pop); the
    /// caller writes the L2 header in front of it with
    /// [`MplsDecision::ethertype`]. Otherwise `buf` and `*off` are untouched.
    /// Never panics, whatever the bytes.
    ///
    /// The one-label swap is inlined into the caller; every other action is one
    /// call away (`run` is large, and inlined it made every caller save
    /// and restore its registers even for a swap).
    #[inline(always)]
    pub fn switch(&self, buf: &mut [u8], off: &mut usize) -> MplsDecision {
        let Some(w) = read_word(buf, *off) else {
            return MplsDecision::Drop(DropReason::Truncated);
        };
        self.switch_word(buf, off, w)
    }

    /// [`switch`](Self::switch) for a caller that has read the top entry already:
    /// `w` is the word at `*off` (host order). The fast path reads it with the
    /// Ethernet header, in bounds it has checked.
    #[inline(always)]
    pub fn switch_word(&self, buf: &mut [u8], off: &mut usize, w: u32) -> MplsDecision {
        let t = self.top(w);
        self.switch_top(buf, off, w, t)
    }

    /// The table entry for top entry `w` (host order): the first half of
    /// [`switch_word`](Self::switch_word), for a caller that branches on
    /// [`Top::pops_into_ip4`] before the rest.
    #[inline(always)]
    pub fn top(&self, w: u32) -> Top<'_> {
        self.top_at(self.entry(key_of(w)))
    }

    /// The entry in slot `idx`.
    #[inline(always)]
    fn top_at(&self, idx: u32) -> Top<'_> {
        let slot = self.slot(idx);
        Top {
            idx,
            slot,
            h: slot.word(W_HDR),
        }
    }

    /// What [`switch_top`](Self::switch_top) does when [`Top::pops_into_ip4`]:
    /// pops the label into an IPv4 lookup and returns the table (the
    /// `Ip4Lookup` decision), or the reason to drop (with `buf` and `*off`
    /// untouched). For an entry of another kind the answer is `NoLabel`, and
    /// nothing changes.
    #[inline(always)]
    pub fn pop_into_ip4(
        &self,
        buf: &mut [u8],
        off: &mut usize,
        w: u32,
        t: Top<'_>,
    ) -> Result<u32, DropReason> {
        self.pop_ip4(buf, off, w, t)?;
        Ok(t.lookup_table())
    }

    /// [`pop_into_ip4`](Self::pop_into_ip4) without reading the table: for a
    /// caller that needs [`Top::lookup_table`] only now and then.
    #[inline(always)]
    pub fn pop_ip4(
        &self,
        buf: &mut [u8],
        off: &mut usize,
        w: u32,
        t: Top<'_>,
    ) -> Result<(), DropReason> {
        if !t.pops_into_ip4(w) {
            return Err(DropReason::NoLabel);
        }
        pop_to_ip4(buf, off, *off + 4, w as u8, t.h)
    }

    /// What [`switch_top`](Self::switch_top) does when [`Top::pops_into_ip6`]:
    /// pops the label into an IPv6 lookup (the `Ip6Lookup` decision, the table
    /// being [`Top::lookup_table`]), or the reason to drop (with `buf` and
    /// `*off` untouched). For an entry of another kind the answer is `NoLabel`,
    /// and nothing changes.
    #[inline(always)]
    pub fn pop_ip6(
        &self,
        buf: &mut [u8],
        off: &mut usize,
        w: u32,
        t: Top<'_>,
    ) -> Result<(), DropReason> {
        if !t.pops_into_ip6(w) {
            return Err(DropReason::NoLabel);
        }
        let ip = *off + 4;
        dispose_ip6(buf, ip, w as u8, hdr_uniform(t.h))?;
        *off = ip;
        Ok(())
    }

    /// The second half of [`switch_word`](Self::switch_word): `t` is
    /// [`top`](Self::top)`(w)`.
    ///
    /// The common cases first: a swap to one label with a live TTL is a single word
    /// write; a pop into an IPv4 lookup and a penultimate hop's pop of the bottom
    /// label are one header check; everything else goes through [`run`](Self::run)
    /// (the same code for these cases, out of line).
    #[inline(always)]
    pub fn switch_top(&self, buf: &mut [u8], off: &mut usize, w: u32, t: Top<'_>) -> MplsDecision {
        if let Some((nw, adj)) = t.swap_one(w) {
            if let Some(b) = buf.get_mut(*off..*off + 4) {
                b.copy_from_slice(&nw.to_be_bytes());
                return MplsDecision::Forward { adj };
            }
        }
        // Pop and look up (egress PE, explicit null): a call less per packet.
        if t.pops_into_ip4(w) {
            return ip4_lookup(self.pop_into_ip4(buf, off, w, t));
        }
        // Penultimate hop popping the bottom label: the IP payload goes out.
        if let Some(adj) = t.php_adj(w) {
            return match t.php_pop(buf, off, w) {
                Ok(Family::Ip4) => MplsDecision::Php { adj },
                Ok(Family::Ip6) => MplsDecision::Php6 { adj },
                Err(r) => MplsDecision::Drop(r),
            };
        }
        self.run(buf, off, w, t.idx)
    }

    /// [`switch_top`](Self::switch_top) for the two cases a transit LSR sees most,
    /// taken only when they leave by adjacency `adj`: a swap for one label
    /// ([`Top::swap_one`]) or a penultimate hop's pop of the bottom label. Returns
    /// whether the label was popped (`*off` moved past it to the IPv4 header, as
    /// for `MplsDecision::Php`), or `None` with `buf` and `*off` untouched for any
    /// other entry, adjacency or packet (an IPv6 payload's PHP included), which
    /// `switch_top` then decides.
    #[inline(always)]
    pub fn switch_one_to(
        &self,
        buf: &mut [u8],
        off: &mut usize,
        w: u32,
        t: Top<'_>,
        adj: u32,
    ) -> Option<bool> {
        if let Some((nw, a)) = t.swap_one(w) {
            let b = buf.get_mut(*off..*off + 4).filter(|_| a == adj)?;
            b.copy_from_slice(&nw.to_be_bytes());
            return Some(false);
        }
        if t.php_adj(w) == Some(adj) {
            // (a header it refuses is left as it was, for `switch_top` to drop)
            t.php_pop_ip4(buf, off, w).ok()?;
            return Some(true);
        }
        None
    }

    #[inline(never)]
    fn run(&self, buf: &mut [u8], off: &mut usize, mut w: u32, mut idx: u32) -> MplsDecision {
        let start = *off;
        let mut o = start;
        let mut ttl = w as u8;
        let mut depth = 1;
        loop {
            let mut slot = self.slot(idx);
            let mut h = slot.word(W_HDR);
            if hdr_kind(h) == K_ECMP {
                slot = self.pick_path(idx, h, buf.get(start..).unwrap_or(&[]));
                h = slot.word(W_HDR);
            }
            match hdr_kind(h) {
                K_SWAP => {
                    if ttl <= 1 {
                        return expired(ttl);
                    }
                    let tail = (w & TC_S) | u32::from(ttl - 1);
                    let n = hdr_count(h);
                    if n == 1 {
                        write_word(buf, o, slot.word(W_LABELS) | tail);
                        *off = o;
                    } else {
                        let Some(new_o) = (o + 4).checked_sub(4 * n) else {
                            return MplsDecision::Drop(DropReason::NoHeadroom);
                        };
                        let tc_ttl = tail & !S_BIT;
                        for i in 0..n.min(SLOT_WORDS - W_LABELS) {
                            let s = if i + 1 == n { w & S_BIT } else { 0 };
                            write_word(buf, new_o + 4 * i, slot.word(W_LABELS + i) | tc_ttl | s);
                        }
                        *off = new_o;
                    }
                    return MplsDecision::Forward {
                        adj: slot.word(W_ARG),
                    };
                }
                K_PHP => {
                    if ttl <= 1 {
                        return expired(ttl);
                    }
                    let adj = slot.word(W_ARG);
                    let next = o + 4;
                    if w & S_BIT == 0 {
                        let Some(nw) = read_word(buf, next) else {
                            return MplsDecision::Drop(DropReason::Truncated);
                        };
                        if hdr_uniform(h) {
                            write_word(buf, next, (nw & !0xff) | u32::from(ttl - 1));
                        }
                        *off = next;
                        return MplsDecision::Forward { adj };
                    }
                    return match dispose_any(buf, next, ttl - 1, hdr_uniform(h)) {
                        Ok(f) => {
                            *off = next;
                            match f {
                                Family::Ip4 => MplsDecision::Php { adj },
                                Family::Ip6 => MplsDecision::Php6 { adj },
                            }
                        }
                        Err(r) => MplsDecision::Drop(r),
                    };
                }
                K_IP4 => {
                    if ttl == 0 {
                        return MplsDecision::Drop(DropReason::TtlExpired);
                    }
                    return ip4_lookup(self.pop_lookup(buf, off, o + 4, ttl, (h, slot)));
                }
                K_IP6 | K_IPX => {
                    if ttl == 0 {
                        return MplsDecision::Drop(DropReason::TtlExpired);
                    }
                    let fixed = (hdr_kind(h) == K_IP6).then_some(Family::Ip6);
                    return pop_lookup_in(buf, off, o + 4, ttl, (h, slot), fixed);
                }
                K_POP | K_ELI => {
                    if ttl == 0 {
                        return MplsDecision::Drop(DropReason::TtlExpired);
                    }
                    if w & S_BIT != 0 {
                        // Unreachable by construction (these live on non-eos keys only).
                        return MplsDecision::Drop(DropReason::NoLabel);
                    }
                    o += 4;
                    if hdr_kind(h) == K_ELI {
                        //= RFC 6790 §4.2: the egress pops the ELI and the EL below it.
                        let Some(el) = read_word(buf, o) else {
                            return MplsDecision::Drop(DropReason::Truncated);
                        };
                        o += 4;
                        depth += 1;
                        if el & S_BIT != 0 {
                            // The pair was the bottom: the payload is what the label
                            // above carried, IPv4 or IPv6 by its version (looked up
                            // like explicit null).
                            return pop_lookup_in(buf, off, o, ttl, (h, slot), None);
                        }
                    }
                    let Some(nw) = read_word(buf, o) else {
                        return MplsDecision::Drop(DropReason::Truncated);
                    };
                    depth += 1;
                    if depth > MAX_STACK_DEPTH {
                        return MplsDecision::Drop(DropReason::StackTooDeep);
                    }
                    if hdr_kind(h) == K_POP && !hdr_uniform(h) {
                        ttl = nw as u8;
                    }
                    w = nw;
                    idx = self.entry(key_of(w));
                }
                K_PW => {
                    //= RFC 4448 §4.4: the egress PE pops the PW label; the payload
                    // (control word, Ethernet frame) is the attachment circuit's.
                    if ttl == 0 {
                        return MplsDecision::Drop(DropReason::TtlExpired);
                    }
                    if w & S_BIT == 0 {
                        return MplsDecision::Drop(DropReason::NoLabel);
                    }
                    *off = o + 4;
                    return MplsDecision::Xconnect {
                        pw: slot.word(W_ARG),
                    };
                }
                K_PUNT => return MplsDecision::Punt(PuntReason::from_code(slot.word(W_ARG))),
                K_DROP => return MplsDecision::Drop(DropReason::from_code(slot.word(W_ARG))),
                _ => return MplsDecision::Drop(DropReason::NoLabel),
            }
        }
    }

    /// [`pop_to_ip4`] for pop-and-lookup entry `slot` (its header word `h` as read
    /// for the decision): the table to look the packet up in.
    #[inline(always)]
    fn pop_lookup(
        &self,
        buf: &mut [u8],
        off: &mut usize,
        ip: usize,
        ttl: u8,
        (h, slot): (u32, &Slot),
    ) -> Result<u32, DropReason> {
        pop_to_ip4(buf, off, ip, ttl, h)?;
        Ok(slot.word(W_ARG))
    }

    #[inline(never)]
    fn pick_path(&self, head: u32, h: u32, stack: &[u8]) -> &Slot {
        let buckets_log2 = hdr_count(h) as u32;
        let b = (flow_hash(stack) & ((1u32 << buckets_log2) - 1)) as usize;
        let bucket_slot = self.slot(head + 1 + (b / SLOT_WORDS) as u32);
        let path = bucket_slot.word(b % SLOT_WORDS);
        let s = self.slot(path);
        // A path is never itself ECMP; guard against a corrupt index anyway.
        if hdr_kind(s.word(W_HDR)) == K_ECMP {
            self.slot(0)
        } else {
            s
        }
    }
}

/// Pops down to the IPv4 header at `ip` for a pop-and-lookup entry with header
/// word `h`, with label TTL `ttl` (the uniform model writes it into the header),
/// and moves `*off` there; or the reason to drop, with `buf` and `*off` untouched.
#[inline(always)]
fn pop_to_ip4(
    buf: &mut [u8],
    off: &mut usize,
    ip: usize,
    ttl: u8,
    h: u32,
) -> Result<(), DropReason> {
    dispose_ip4(buf, ip, ttl, hdr_uniform(h))?;
    *off = ip;
    Ok(())
}

/// Pops down to the IP header at `ip` for pop-and-lookup entry `slot` (header
/// word `h`) with label TTL `ttl`: of family `fixed`, or when `None` of the
/// family its version nibble says; the decision to look it up in the entry's
/// table, or to drop (with `buf` and `*off` untouched).
#[inline(never)]
fn pop_lookup_in(
    buf: &mut [u8],
    off: &mut usize,
    ip: usize,
    ttl: u8,
    (h, slot): (u32, &Slot),
    fixed: Option<Family>,
) -> MplsDecision {
    let uniform = hdr_uniform(h);
    let r = match fixed {
        Some(Family::Ip4) => dispose_ip4(buf, ip, ttl, uniform).map(|()| Family::Ip4),
        Some(Family::Ip6) => dispose_ip6(buf, ip, ttl, uniform).map(|()| Family::Ip6),
        None => dispose_any(buf, ip, ttl, uniform),
    };
    let table = slot.word(W_ARG);
    match r {
        Ok(f) => {
            *off = ip;
            match f {
                Family::Ip4 => MplsDecision::Ip4Lookup { table },
                Family::Ip6 => MplsDecision::Ip6Lookup { table },
            }
        }
        Err(r) => MplsDecision::Drop(r),
    }
}

/// The decision for a pop into an IPv4 lookup.
#[inline(always)]
fn ip4_lookup(r: Result<u32, DropReason>) -> MplsDecision {
    match r {
        Ok(table) => MplsDecision::Ip4Lookup { table },
        Err(r) => MplsDecision::Drop(r),
    }
}

#[cold]
#[inline(never)]
fn expired(ttl: u8) -> MplsDecision {
    if ttl == 0 {
        MplsDecision::Drop(DropReason::TtlExpired)
    } else {
        MplsDecision::TtlExpired
    }
}

/// A top label's table entry, looked up ([`LabelGuard::top`]) and not yet applied.
#[derive(Clone, Copy)]
pub struct Top<'g> {
    idx: u32,
    slot: &'g Slot,
    h: u32,
}

impl Top<'_> {
    /// Top entry `w` pops into an IPv4 lookup (egress PE, explicit null): what
    /// [`LabelGuard::pop_into_ip4`] does. A received TTL 0 is not: the general
    /// switch drops it.
    #[inline(always)]
    pub fn pops_into_ip4(&self, w: u32) -> bool {
        hdr_kind(self.h) == K_IP4 && w & 0xff != 0
    }

    /// Top entry `w` pops into an IPv6 lookup (6PE's and 6VPE's labels, label 2
    /// at the bottom): what [`LabelGuard::pop_ip6`] does. A received TTL 0 is
    /// not: the general switch drops it.
    #[inline(always)]
    pub fn pops_into_ip6(&self, w: u32) -> bool {
        hdr_kind(self.h) == K_IP6 && w & 0xff != 0
    }

    /// The routing table a pop into an IP lookup looks the packet up in (for an
    /// entry that [`pops_into_ip4`](Self::pops_into_ip4) or
    /// [`pops_into_ip6`](Self::pops_into_ip6)).
    #[inline(always)]
    pub fn lookup_table(&self) -> u32 {
        self.slot.word(W_ARG)
    }

    /// Top entry `w` is swapped for one label with a live TTL (a transit LSR's
    /// common case): the entry to write in its place (host order) and the
    /// adjacency it leaves by, what [`LabelGuard::switch_top`] writes and returns
    /// first. Nothing is written: a caller may look at the adjacency before the
    /// packet changes.
    #[inline(always)]
    pub fn swap_one(&self, w: u32) -> Option<(u32, u32)> {
        (self.h & 0xffff == K_SWAP | (1 << 8) && (w & 0xff) > 1).then(|| {
            (
                self.slot.word(W_LABELS) | (w & TC_S) | ((w & 0xff) - 1),
                self.slot.word(W_ARG),
            )
        })
    }

    /// Top entry `w` is popped at the penultimate hop (the bottom label, a live
    /// TTL): the adjacency the IPv4 packet under it leaves by.
    #[inline(always)]
    fn php_adj(&self, w: u32) -> Option<u32> {
        (hdr_kind(self.h) == K_PHP && w & S_BIT != 0 && (w & 0xff) > 1)
            .then(|| self.slot.word(W_ARG))
    }

    /// The penultimate hop's pop of entry `w` (at `*off` in `buf`; see
    /// [`Top::php_adj`]): in the uniform model the IP header under it (IPv4 or
    /// IPv6 by its version) takes the label's TTL less one, and `*off` moves to
    /// it; on an error `buf` and `*off` are untouched.
    #[inline(always)]
    fn php_pop(&self, buf: &mut [u8], off: &mut usize, w: u32) -> Result<Family, DropReason> {
        let next = *off + 4;
        let f = dispose_any(buf, next, (w as u8) - 1, hdr_uniform(self.h))?;
        *off = next;
        Ok(f)
    }

    /// [`Top::php_pop`] of an IPv4 payload only (any other is refused, with
    /// `buf` and `*off` untouched).
    #[inline(always)]
    fn php_pop_ip4(&self, buf: &mut [u8], off: &mut usize, w: u32) -> Result<(), DropReason> {
        let next = *off + 4;
        dispose_ip4(buf, next, (w as u8) - 1, hdr_uniform(self.h))?;
        *off = next;
        Ok(())
    }
}

impl std::fmt::Debug for Top<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Top")
            .field("idx", &self.idx)
            .field("header", &self.h)
            .finish()
    }
}
