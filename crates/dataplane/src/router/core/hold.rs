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

use super::{Meta, Next};
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
    /// The state it resumes with (`kind` `Ip4`, `Rewrite`, or `Arp` for one the
    /// router built; `l3`/`end` are set on release).
    pub(super) meta: Meta,
    /// The neighbour waited for: interface and address.
    pub(super) ifindex: u32,
    pub(super) nbr: u32,
    /// TSC when it was held (release goes oldest first).
    pub(super) at: u64,
    /// Bytes kept.
    pub(super) len: u16,
    /// Its neighbour resolved (or its route changed): goes on release.
    pub(super) ready: bool,
}

/// A worker's hold queue: a fixed slot (state and bytes) per packet, so taking
/// one out never moves the others.
pub(super) struct Hold {
    slots: Box<[Option<Held>]>,
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
        let n = if per_neighbor > 0 { HOLD_PACKETS } else { 0 };
        Hold {
            slots: vec![None; n].into_boxed_slice(),
            bytes: vec![0; n * HOLD_BYTES].into_boxed_slice(),
            used: 0,
            per_neighbor: usize::from(per_neighbor),
            timeout,
            seen: 0,
        }
    }

    /// Whether a packet waits for neighbour `nbr` on `ifindex`.
    pub(super) fn waits_for(&self, ifindex: u32, nbr: u32) -> bool {
        self.used > 0
            && self
                .slots
                .iter()
                .flatten()
                .any(|s| s.ifindex == ifindex && s.nbr == nbr)
    }

    /// Packets held.
    pub(super) fn len(&self) -> usize {
        self.used
    }

    fn bytes(&self, k: usize, len: u16) -> &[u8] {
        &self.bytes[k * HOLD_BYTES..k * HOLD_BYTES + usize::from(len)]
    }

    /// Keeps a copy of `l3` (the packet from its IPv4 header or label stack on)
    /// to resume with `h.meta` once `h.nbr` on `h.ifindex` resolves.
    pub(super) fn push(&mut self, l3: &[u8], mut h: Held) -> Result<(), DropReason> {
        if self.per_neighbor == 0 || l3.len() > HOLD_BYTES {
            return Err(DropReason::NeighborIncomplete);
        }
        let same = self
            .slots
            .iter()
            .flatten()
            .filter(|s| s.ifindex == h.ifindex && s.nbr == h.nbr)
            .count();
        let free = self.slots.iter().position(Option::is_none);
        let (Some(k), true) = (free, same < self.per_neighbor) else {
            return Err(DropReason::NeighborHoldFull);
        };
        self.bytes[k * HOLD_BYTES..k * HOLD_BYTES + l3.len()].copy_from_slice(l3);
        h.len = l3.len() as u16;
        h.ready = false;
        self.slots[k] = Some(h);
        self.used += 1;
        Ok(())
    }

    /// Marks what may go: packets whose neighbour `waiting` no longer says is
    /// unresolved (asked only when the FIB changed since the last check, at
    /// `version`), and drops those held longer than the timeout. Returns (ready,
    /// timed out).
    pub(super) fn check(
        &mut self,
        now: u64,
        version: u64,
        mut waiting: impl FnMut(&Held, &[u8]) -> bool,
    ) -> (usize, usize) {
        let fib_changed = version != self.seen;
        self.seen = version;
        let (mut ready, mut expired) = (0, 0);
        for k in 0..self.slots.len() {
            let Some(mut s) = self.slots[k] else {
                continue;
            };
            if !s.ready && fib_changed {
                s.ready = !waiting(&s, self.bytes(k, s.len));
            }
            if s.ready {
                ready += 1;
                self.slots[k] = Some(s);
            } else if now.wrapping_sub(s.at) > self.timeout {
                self.slots[k] = None;
                self.used -= 1;
                expired += 1;
            }
        }
        (ready, expired)
    }

    /// Takes the oldest ready packet: its bytes are copied to `to` (which must
    /// hold them), its state returned (`Next::Drop` when `to` is too short).
    pub(super) fn take_ready(&mut self, to: &mut [u8]) -> Option<(Meta, usize)> {
        let (k, s) = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.filter(|s| s.ready).map(|s| (k, s)))
            .min_by_key(|(_, s)| s.at)?;
        let len = usize::from(s.len);
        let mut m = s.meta;
        match to.get_mut(..len) {
            Some(to) => to.copy_from_slice(self.bytes(k, s.len)),
            None => m.next = Next::Drop,
        }
        self.slots[k] = None;
        self.used -= 1;
        Some((m, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(nbr: u32, at: u64) -> Held {
        Held {
            meta: Meta {
                next: Next::Ip4Lookup,
                ..Meta::default()
            },
            nbr,
            at,
            ..Held::default()
        }
    }

    #[test]
    fn bounded_per_neighbour_oldest_first_and_timed_out() {
        let mut h = Hold::new(2, 100);
        assert_eq!(h.push(&[1; 40], held(7, 10)), Ok(()));
        assert_eq!(h.push(&[2; 60], held(8, 20)), Ok(()));
        assert_eq!(h.push(&[3; 50], held(7, 30)), Ok(()));
        assert_eq!(
            h.push(&[4; 50], held(7, 40)),
            Err(DropReason::NeighborHoldFull)
        );
        assert_eq!(
            h.push(&[0; HOLD_BYTES + 1], held(9, 40)),
            Err(DropReason::NeighborIncomplete)
        );
        // 7 resolves, 8 does not: 7's two go, oldest first; 8's times out later.
        assert_eq!(h.check(50, 1, |s, _| s.nbr == 8), (2, 0));
        let mut buf = [0u8; 100];
        let (_, n) = h.take_ready(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[1; 40][..]);
        // A free slot is reused without moving the others.
        assert_eq!(h.push(&[5; 10], held(9, 60)), Ok(()));
        let (_, n) = h.take_ready(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[3; 50][..]);
        assert!(h.take_ready(&mut buf).is_none());
        // (no FIB change: nobody asked again)
        assert_eq!(h.check(125, 1, |_, _| unreachable!()), (0, 1));
        assert_eq!(h.len(), 1);
        // Too short a buffer: the packet goes, as a drop.
        assert_eq!(h.check(130, 2, |_, _| false), (1, 0));
        let (m, _) = h.take_ready(&mut [0u8; 4]).unwrap();
        assert_eq!(m.next, Next::Drop);
        assert_eq!(h.len(), 0);
        assert_eq!(
            Hold::new(0, 100).push(&[1], held(1, 0)),
            Err(DropReason::NeighborIncomplete)
        );
    }
}
