//! The exact-match index of one table's routes: prefix → (path list, trie node).
//!
//! Open addressing with linear probing and the keys inline, 16-byte slots, at most
//! 70 % full: a lookup usually reads one cache line. A `HashMap` reads its control
//! bytes and then its bucket, two random accesses into a 17 MiB table for the full
//! Internet table, and every route change starts with this lookup. Removal shifts
//! the following entries back (no tombstones).

/// What the index holds for a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RouteEntry {
    /// Path list.
    pub(crate) pl: u32,
    /// Trie node holding the route (stable while the route exists).
    pub(crate) node: u32,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    /// [`key`] of the route, 0 for an empty slot.
    key: u64,
    entry: RouteEntry,
}

const EMPTY: Slot = Slot {
    key: 0,
    entry: RouteEntry { pl: 0, node: 0 },
};

const MIN_SLOTS: usize = 16;

/// Never 0 (bit 40 is set).
#[inline]
fn key(addr: u32, len: u8) -> u64 {
    1 << 40 | u64::from(addr) << 8 | u64::from(len)
}

#[derive(Debug, Default)]
pub(crate) struct RouteIndex {
    /// A power of two in length (or empty).
    slots: Vec<Slot>,
    len: usize,
}

impl RouteIndex {
    /// Home slot of `k` (Fibonacci hashing: the top bits of a multiply).
    #[inline]
    fn home(&self, k: u64) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    /// The slot holding `k`, or the empty slot where it would go.
    #[inline]
    fn find(&self, k: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = self.home(k);
        loop {
            let s = self.slots[i].key;
            if s == k || s == 0 {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    pub(crate) fn get(&self, addr: u32, len: u8) -> Option<RouteEntry> {
        if self.slots.is_empty() {
            return None;
        }
        let s = self.slots[self.find(key(addr, len))];
        (s.key != 0).then_some(s.entry)
    }

    /// Inserts or replaces; returns the entry replaced.
    pub(crate) fn insert(&mut self, addr: u32, len: u8, entry: RouteEntry) -> Option<RouteEntry> {
        if (self.len + 1) * 10 > self.slots.len() * 7 {
            self.grow();
        }
        let k = key(addr, len);
        let i = self.find(k);
        let old = self.slots[i];
        self.slots[i] = Slot { key: k, entry };
        if old.key == 0 {
            self.len += 1;
            None
        } else {
            Some(old.entry)
        }
    }

    /// Removes `addr/len`; returns its entry.
    pub(crate) fn remove(&mut self, addr: u32, len: u8) -> Option<RouteEntry> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut hole = self.find(key(addr, len));
        let removed = self.slots[hole];
        if removed.key == 0 {
            return None;
        }
        // Shift back every following entry of the cluster that may live in the hole
        // (its home is not cyclically after the hole), so lookups never stop early.
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s.key == 0 {
                break;
            }
            let home = self.home(s.key);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
        Some(removed.entry)
    }

    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; n]);
        for s in old.into_iter().filter(|s| s.key != 0) {
            let i = self.find(s.key);
            self.slots[i] = s;
        }
    }

    /// Every route, as (address, length).
    pub(crate) fn keys(&self) -> impl Iterator<Item = (u32, u8)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.key != 0)
            .map(|s| ((s.key >> 8) as u32, s.key as u8))
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Slot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Random inserts, replaces and removals (keys drawn from a small space, so
    /// clusters form and removals shift) against a `HashMap`.
    #[test]
    fn matches_a_hash_map() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut idx = RouteIndex::default();
        let mut map: HashMap<(u32, u8), RouteEntry> = HashMap::new();
        for step in 0..200_000u32 {
            let r = rnd();
            let (addr, len) = ((r >> 8) as u32 & 0x3ff, (r % 33) as u8);
            let e = RouteEntry {
                pl: step,
                node: step ^ 5,
            };
            match r >> 60 {
                0..=6 => assert_eq!(idx.insert(addr, len, e), map.insert((addr, len), e)),
                7..=13 => assert_eq!(idx.remove(addr, len), map.remove(&(addr, len))),
                _ => assert_eq!(idx.get(addr, len), map.get(&(addr, len)).copied()),
            }
            assert_eq!(idx.len, map.len());
            if step % 20_000 == 0 {
                for (&(a, l), &v) in &map {
                    assert_eq!(idx.get(a, l), Some(v));
                }
                let mut keys: Vec<(u32, u8)> = idx.keys().collect();
                keys.sort_unstable();
                let mut want: Vec<(u32, u8)> = map.keys().copied().collect();
                want.sort_unstable();
                assert_eq!(keys, want);
            }
        }
    }
}
