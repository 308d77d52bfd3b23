//! Fixed-size atomic arrays shared with readers, and the writer's block allocator.
//!
//! Readers index plain `Box<[AtomicU32]>` / `Box<[AtomicU64]>` arrays; on x86-64 a
//! relaxed or acquire atomic load is an ordinary `mov`, so this costs nothing on the
//! lookup path and needs no `unsafe` (the IPv6 lookup's SIMD compare is the one
//! exception, `lpm6/simd.rs`). An array never changes size
//! under a reader: to grow, the writer copies it into a larger one and publishes the
//! copy (see [`crate::reader`]); the old one stays frozen until its last reader lets go.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Allocates `n` zeroed atomic words.
pub(crate) fn words32(n: usize) -> Box<[AtomicU32]> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

/// Copies `old` into a new array of `n >= old.len()` words.
pub(crate) fn grow32(old: &[AtomicU32], n: usize) -> Box<[AtomicU32]> {
    (0..n)
        .map(|i| AtomicU32::new(old.get(i).map_or(0, |w| w.load(Ordering::Relaxed))))
        .collect()
}

/// Copies `old` into a new array of `n >= old.len()` words.
pub(crate) fn grow64(old: &[AtomicU64], n: usize) -> Box<[AtomicU64]> {
    (0..n)
        .map(|i| AtomicU64::new(old.get(i).map_or(0, |w| w.load(Ordering::Relaxed))))
        .collect()
}

/// Writer-side allocator of contiguous blocks of units inside one shared array.
///
/// Free blocks are kept per exact size; a freed block first waits in `pending` for a
/// grace period (see [`crate::qsbr`]). Units are whatever the owner stores (a node of
/// three words, one leaf, one bucket...).
#[derive(Debug)]
pub(crate) struct BlockAlloc {
    /// Capacity in units.
    cap: usize,
    /// Units below `top` have been handed out at least once.
    top: usize,
    /// Units in use.
    live: usize,
    /// Free lists indexed by block size.
    free: Vec<Vec<u32>>,
    /// (epoch tag, base, size) blocks waiting for a grace period.
    /// (in retirement order: tags never decrease, so the blocks whose grace
    /// period is over are a prefix)
    pending: VecDeque<(u64, u32, u32)>,
    /// Units in `pending`.
    pending_units: usize,
}

impl BlockAlloc {
    /// `first` units are reserved (never handed out), e.g. so index 0 can mean "none".
    pub(crate) fn new(cap: usize, first: usize, max_block: usize) -> Self {
        Self {
            cap,
            top: first,
            live: 0,
            free: vec![Vec::new(); max_block + 1],
            pending: VecDeque::new(),
            pending_units: 0,
        }
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    pub(crate) fn live(&self) -> usize {
        self.live
    }

    pub(crate) fn top(&self) -> usize {
        self.top
    }

    /// Returns the base of a block of `size` units. `Err(needed)` asks the owner to grow
    /// the array to at least `needed` units and call again.
    pub(crate) fn alloc(&mut self, size: usize) -> Result<u32, usize> {
        if size == 0 {
            return Ok(0);
        }
        if let Some(b) = self.free.get_mut(size).and_then(Vec::pop) {
            self.live += size;
            return Ok(b);
        }
        if self.top + size > self.cap {
            return Err(self.top + size);
        }
        let b = self.top as u32;
        self.top += size;
        self.live += size;
        Ok(b)
    }

    pub(crate) fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// Frees a block that readers may still see: reusable after epoch `tag` is safe.
    pub(crate) fn retire(&mut self, base: u32, size: usize, tag: u64) {
        if size == 0 {
            return;
        }
        debug_assert!(self.live >= size, "retire of a block not in use");
        self.live = self.live.saturating_sub(size);
        self.pending_units += size;
        self.pending.push_back((tag, base, size as u32));
    }

    /// Frees a block no reader has seen.
    pub(crate) fn free_now(&mut self, base: u32, size: usize) {
        if size == 0 {
            return;
        }
        debug_assert!(self.live >= size, "free of a block not in use");
        self.live = self.live.saturating_sub(size);
        if let Some(l) = self.free.get_mut(size) {
            l.push(base);
        }
    }

    /// Moves blocks whose grace period is over to the free lists.
    pub(crate) fn reclaim(&mut self, safe: u64) {
        // (a block behind one of a later tag waits for that one: later, never
        // early; the cost is the blocks released, not the blocks waiting)
        let mut released = 0usize;
        while let Some(&(tag, base, size)) = self.pending.front() {
            if tag > safe {
                break;
            }
            self.pending.pop_front();
            if let Some(l) = self.free.get_mut(size as usize) {
                l.push(base);
            }
            released += size as usize;
        }
        self.pending_units -= released;
    }
}

/// A fast, non-keyed hasher for the writer's maps (FxHash's multiply-rotate
/// scheme). The keys are route and path data from the control plane, not packets.
#[derive(Default, Clone, Copy, Debug)]
pub struct FastHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl std::hash::Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut c = bytes.chunks_exact(8);
        for w in &mut c {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(b));
        }
        for &b in c.remainder() {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(SEED);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Spread the high bits down: hashbrown takes its group tag from the top 7.
        self.0 ^ (self.0 >> 29)
    }
}

/// `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;
/// `HashSet` with [`FastHasher`].
pub type FastSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<FastHasher>>;
