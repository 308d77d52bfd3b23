//! Adjacencies (one per interface and neighbour, with its L2 rewrite) and legs (an
//! action, an adjacency and an out-label stack): shared and reference-counted.

use super::*;

fn mac_word(m: [u8; 6]) -> u64 {
    u64::from_be_bytes([0, 0, m[0], m[1], m[2], m[3], m[4], m[5]])
}

impl Fib {
    pub(super) fn adj_ref(&mut self, ifindex: u32, nbr: IpAddr) -> u32 {
        if let Some(e) = self.adjs.get_mut(&(ifindex, nbr)) {
            e.refs += 1;
            return e.id;
        }
        let id = self.alloc(Arr::Adj, 1);
        // A reused id still points at its previous owner's (already retired) rewrite.
        self.planes.adj[id as usize].store(0, Ordering::Relaxed);
        self.adj_keys.insert(id, (ifindex, nbr));
        self.adjs.insert(
            (ifindex, nbr),
            AdjEntry {
                id,
                refs: 1,
                present: false,
                mac: None,
            },
        );
        self.adj_write(id, ifindex, nbr, None);
        id
    }

    pub(super) fn adj_unref(&mut self, ifindex: u32, nbr: IpAddr) {
        let Some(e) = self.adjs.get_mut(&(ifindex, nbr)) else {
            return;
        };
        e.refs -= 1;
        if e.refs == 0 {
            let id = e.id;
            self.adjs.remove(&(ifindex, nbr));
            self.adj_keys.remove(&id);
            let slot = self.planes.adj[id as usize].load(Ordering::Relaxed);
            self.retire(Arr::Rw, slot, 1);
            self.retire(Arr::Adj, id, 1);
        }
    }

    /// Writes a new rewrite for adjacency `id` and swings its pointer.
    pub(super) fn adj_write(&mut self, id: u32, ifindex: u32, nbr: IpAddr, mac: Option<[u8; 6]>) {
        let iface = self.interfaces.get(&ifindex).copied().unwrap_or(Interface {
            mac: [0; 6],
            mtu: 0,
            vlan: None,
        });
        let slot = self.alloc(Arr::Rw, 1);
        let p = &self.planes;
        let b = slot as usize * RW_WORDS;
        let w0 = mac.map_or(0, |m| mac_word(m) | RW_COMPLETE);
        let vlan = iface
            .vlan
            .map_or(0, |v| (u64::from(v) & 0xfff) | VLAN_TAGGED);
        p.rewrites[b].store(w0, Ordering::Relaxed);
        p.rewrites[b + 1].store(mac_word(iface.mac) | vlan << 48, Ordering::Relaxed);
        p.rewrites[b + 2].store(
            u64::from(ifindex) | u64::from(iface.mtu) << 32,
            Ordering::Relaxed,
        );
        // The neighbour's address, so the data plane can ARP for it while the
        // adjacency is incomplete (or solicit it, for IPv6).
        let nbr_word = match nbr {
            IpAddr::V4(a) => u64::from(u32::from(a)) | RW_NBR_V4,
            IpAddr::V6(a) => {
                let a = u128::from(a);
                p.nbr6[slot as usize * 2].store((a >> 64) as u64, Ordering::Relaxed);
                p.nbr6[slot as usize * 2 + 1].store(a as u64, Ordering::Relaxed);
                RW_NBR_V6
            }
        };
        p.rewrites[b + 3].store(nbr_word, Ordering::Relaxed);
        let old = p.adj[id as usize].swap(slot, Ordering::AcqRel);
        if old != 0 {
            self.retire(Arr::Rw, old, 1);
        }
    }

    /// The implicit-null label (RFC 3032): flagged in the leg header for readers.
    const IMPLICIT_NULL: u32 = 3;

    pub(super) fn leg_acquire(&mut self, key: LegKey) -> u32 {
        if let Some(e) = self.legs.get_mut(&key) {
            e.refs += 1;
            return e.id;
        }
        let target = match (key.action, key.nbr) {
            (Action::Forward, Some(n)) => self.adj_ref(key.ifindex, n),
            (Action::Glean, _) => key.ifindex,
            _ => 0,
        };
        let id = self.alloc(Arr::Legs, 1);
        let b = id as usize * LEG_WORDS;
        let w = &self.planes.legs[b..b + LEG_WORDS];
        let n = key.labels.len().min(MAX_LABELS);
        let implicit_null = key.labels.iter().take(n).any(|&l| l == Self::IMPLICIT_NULL);
        let flags = if implicit_null { LEG_IMPLICIT_NULL } else { 0 };
        w[0].store(
            key.action as u32 | (n as u32) << 8 | flags,
            Ordering::Relaxed,
        );
        w[1].store(target, Ordering::Relaxed);
        // (the words past the last label are 0: see `Leg::plain_labels`)
        for (i, x) in w[2..].iter().enumerate() {
            x.store(key.labels.get(i).copied().unwrap_or(0), Ordering::Relaxed);
        }
        if self.leg_keys.len() <= id as usize {
            self.leg_keys.resize(id as usize + 1, None);
        }
        self.leg_keys[id as usize] = Some(key.clone());
        self.legs.insert(key, LegEntry { id, refs: 1 });
        id
    }

    pub(super) fn leg_release(&mut self, id: u32) {
        let Some(key) = self.leg_keys.get(id as usize).cloned().flatten() else {
            return;
        };
        let Some(e) = self.legs.get_mut(&key) else {
            return;
        };
        e.refs -= 1;
        if e.refs == 0 {
            self.legs.remove(&key);
            self.leg_keys[id as usize] = None;
            self.retire(Arr::Legs, id, 1);
            if let (Action::Forward, Some(n)) = (key.action, key.nbr) {
                self.adj_unref(key.ifindex, n);
            }
        }
    }
}
