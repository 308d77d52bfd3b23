//! Packets held while their next hop's MAC is being resolved.
//!
//! A packet whose next hop is not resolved yet (a connected host never heard
//! from, an adjacency still incomplete) is copied here instead of being lost, as
//! Linux keeps a few packets per incomplete neighbour (`unres_qlen`); its buffer
//! then becomes the ARP request (or is freed while one is outstanding). When the FIB says the neighbour is resolved, the worker asks for
//! the packets back ([`Core::held_ready`], [`Core::release`]) and they go through
//! the rest of the stages as if they had just been looked up: an IPv4 packet
//! from ip4-lookup (it was held before its TTL was touched), a switched one from
//! the rewrite, one the router built (echo reply, ICMP error) from its lookup.
//!
//! Each worker has its own queue, allocated with the core: nothing is shared,
//! nothing allocated while packets flow. At most [`HOLD_PACKETS`] packets of up to
//! [`HOLD_BYTES`] bytes (from the IPv4 header or label stack on) are held per
//! worker, and [`CoreConfig::hold_per_neighbor`] per neighbour. Counters:
//! `held` and `hold_released` ([`WorkerStats`]); drops `neighbor_hold_full`
//! (no room), `neighbor_hold_timeout` (not resolved within
//! [`CoreConfig::hold_ms`]) and `neighbor_incomplete` (not holdable: too long,
//! or holding off).
//!
//! [`Core::held_ready`]: super::Core::held_ready
//! [`Core::release`]: super::Core::release
//! [`CoreConfig::hold_per_neighbor`]: super::CoreConfig::hold_per_neighbor
//! [`CoreConfig::hold_ms`]: super::CoreConfig::hold_ms
//! [`WorkerStats`]: crate::router::WorkerStats

use super::{Kind, Meta};
use crate::router::reasons::DropReason;

/// Packets a worker holds at most.
pub const HOLD_PACKETS: usize = 64;
/// Longest packet held (layer 3 on; longer ones are dropped as
/// `neighbor_incomplete`).
pub const HOLD_BYTES: usize = 2048;
/// Where a released packet's layer 3 starts in its new buffer: room for the
/// Ethernet and VLAN headers and the labels ip4-lookup may push.
pub(super) const RESUME_AT: usize = 128;

/// One held packet: what the stage it goes back to needs.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Held {
    /// The state it resumes with (`kind` `Ip4` or `Rewrite`; `l3`/`end` are set
    /// on release).
    pub(super) meta: Meta,
    /// The neighbour waited for: interface and address.
    pub(super) ifindex: u32,
    pub(super) nbr: u32,
    /// TSC when it was held.
    pub(super) at: u64,
    /// Bytes kept.
    pub(super) len: u16,
    /// Its neighbour resolved (or its route changed): goes on release.
    pub(super) ready: bool,
}

/// A worker's hold queue: slots `0..used` in arrival order.
pub(super) struct Hold {
    slots: Box<[Held]>,
    bytes: Box<[u8]>,
    used: usize,
    per_neighbor: usize,
    timeout: u64,
    /// FIB version the waiting packets were last checked against.
    seen: u64,
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hold").field("used", &self.used).finish()
    }
}

impl Hold {
    /// A queue keeping up to `per_neighbor` packets per neighbour (0: none)
    /// for `timeout` TSC ticks.
    pub(super) fn new(per_neighbor: u8, timeout: u64) -> Hold {
        let on = per_neighbor > 0;
        Hold {
            slots: vec![Held::default(); if on { HOLD_PACKETS } else { 0 }].into_boxed_slice(),
            bytes: vec![0; if on { HOLD_PACKETS * HOLD_BYTES } else { 0 }].into_boxed_slice(),
            used: 0,
            per_neighbor: usize::from(per_neighbor),
            timeout,
            seen: 0,
        }
    }

    /// Packets held.
    pub(super) fn len(&self) -> usize {
        self.used
    }

    /// Keeps a copy of `l3` (the packet from its IPv4 header or label stack on)
    /// to resume with `h.meta` once `h.nbr` on `h.ifindex` resolves.
    pub(super) fn push(&mut self, l3: &[u8], mut h: Held) -> Result<(), DropReason> {
        if self.per_neighbor == 0 || l3.len() > HOLD_BYTES {
            return Err(DropReason::NeighborIncomplete);
        }
        let same = self.slots[..self.used]
            .iter()
            .filter(|s| s.ifindex == h.ifindex && s.nbr == h.nbr)
            .count();
        if same >= self.per_neighbor || self.used == self.slots.len() {
            return Err(DropReason::NeighborHoldFull);
        }
        let k = self.used;
        self.bytes[k * HOLD_BYTES..k * HOLD_BYTES + l3.len()].copy_from_slice(l3);
        h.len = l3.len() as u16;
        h.ready = false;
        self.slots[k] = h;
        self.used += 1;
        Ok(())
    }

    /// Marks what may go: packets whose neighbour `waiting` no longer says is
    /// unresolved (asked only when the FIB changed since the last check, at
    /// `version`), and drops those held longer than the timeout (returned, to be
    /// counted). Returns (ready, timed out).
    pub(super) fn check(
        &mut self,
        now: u64,
        version: u64,
        mut waiting: impl FnMut(&Held, &[u8]) -> bool,
    ) -> (usize, usize) {
        let fib_changed = version != self.seen;
        self.seen = version;
        let mut expired = 0;
        let mut k = 0;
        while k < self.used {
            let s = self.slots[k];
            if !s.ready && fib_changed {
                let bytes = &self.bytes[k * HOLD_BYTES..k * HOLD_BYTES + usize::from(s.len)];
                self.slots[k].ready = !waiting(&s, bytes);
            }
            if !self.slots[k].ready && now.wrapping_sub(s.at) > self.timeout {
                self.remove(k);
                expired += 1;
            } else {
                k += 1;
            }
        }
        let ready = self.slots[..self.used].iter().filter(|s| s.ready).count();
        (ready, expired)
    }

    /// Takes the oldest ready packet: its bytes are copied to `to` (which must
    /// hold them), its state returned.
    pub(super) fn take_ready(&mut self, to: &mut [u8]) -> Option<(Meta, usize)> {
        let k = self.slots[..self.used].iter().position(|s| s.ready)?;
        let s = self.slots[k];
        let len = usize::from(s.len);
        let ok = to.len() >= len;
        if ok {
            to[..len].copy_from_slice(&self.bytes[k * HOLD_BYTES..k * HOLD_BYTES + len]);
        }
        self.remove(k);
        let mut m = s.meta;
        if !ok {
            m.kind = Kind::Drop;
        }
        Some((m, len))
    }

    /// Removes slot `k`, keeping the others in order.
    fn remove(&mut self, k: usize) {
        for j in k..self.used - 1 {
            self.slots[j] = self.slots[j + 1];
            let len = usize::from(self.slots[j].len);
            self.bytes.copy_within(
                (j + 1) * HOLD_BYTES..(j + 1) * HOLD_BYTES + len,
                j * HOLD_BYTES,
            );
        }
        self.used -= 1;
    }
}
