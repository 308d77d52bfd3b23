//! The reader's step through one block (two compares, `#{keys of a line < k}`, and
//! one value load) with the widest SIMD the CPU has (checked at run time: the crate
//! is built for x86-64-v2), the line array it indexes, and the lookup bodies
//! compiled once per variant so that the compares are inlined.
//!
//! The only `unsafe` of the crate:
//! - the line array's indexing without bounds checks: a block reference is masked
//!   to the array's power-of-two capacity, and the array has [`PAD`] lines past it,
//!   so a block's root, any of its 16 possible leaves and their value lines are in
//!   bounds whatever the lines hold;
//! - the vector loads of key lines (aligned arrays of atomic words that no writer
//!   touches while a reader can reach them: a block is filled before it is linked
//!   and refilled only after the readers' grace period);
//! - the calls into the variants, made only when the CPU has the features.
//!
//! Unlike the rest of the lookup's reads the vector loads are not atomic, so here,
//! and only here, a grace-period bug (a block refilled under a reader) would be a
//! data race rather than a stale answer.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use super::btree::{KEYS, Tree};

/// One 64-byte line: 16 key words (15 compared) or 16 values.
#[repr(C, align(64))]
#[derive(Debug)]
pub(super) struct Line(pub(super) [AtomicU32; 16]);

const _: () = assert!(size_of::<Line>() == 64);

/// Lines past the capacity: the most a block reaches past its base is its last
/// leaf's value line, `1 + 2 * 15 + 1` (`1 + 2 * 16 + 1`, lane 16, with a rank
/// of 16 from a line whose lane 15 is not a sentinel).
pub(super) const PAD: usize = 40;

/// The lines of the blocks: a power-of-two capacity, then [`PAD`] lines that no
/// block occupies.
#[derive(Debug)]
pub(super) struct Lines {
    lines: Box<[Line]>,
    /// Capacity - 1.
    mask: u32,
}

impl Lines {
    /// Room for at least `cap` lines (at most 2^29), every word `fill`.
    pub(super) fn new(cap: usize, fill: u32) -> Self {
        let cap = cap.clamp(64, 1 << 29).next_power_of_two();
        Self {
            lines: (0..cap + PAD)
                .map(|_| Line(std::array::from_fn(|_| AtomicU32::new(fill))))
                .collect(),
            mask: (cap - 1) as u32,
        }
    }

    /// Lines blocks may occupy.
    pub(super) fn cap(&self) -> usize {
        self.mask as usize + 1
    }

    /// Bytes of the array.
    pub(super) fn bytes(&self) -> usize {
        self.lines.len() * size_of::<Line>()
    }

    /// Line `n` (the writer's access).
    pub(super) fn line(&self, n: u32) -> &Line {
        &self.lines[n as usize]
    }

    /// A copy with room for `cap` lines.
    pub(super) fn grown(&self, cap: usize, fill: u32) -> Self {
        let new = Self::new(cap.max(self.cap()), fill);
        for (d, s) in new.lines.iter().zip(&self.lines[..self.cap()]) {
            for (dw, sw) in d.0.iter().zip(&s.0) {
                dw.store(sw.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
        new
    }
}

/// Which compare the lookups use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Simd {
    Scalar,
    Avx2,
    Avx512,
}

impl Simd {
    /// The widest the CPU runs.
    pub(super) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Self::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Self::Avx2;
            }
        }
        Self::Scalar
    }

    /// Every variant this CPU runs (the tests compare them).
    #[cfg(test)]
    pub(super) fn all() -> Vec<Self> {
        let best = Self::detect();
        [Self::Scalar, Self::Avx2, Self::Avx512]
            .into_iter()
            .filter(|&s| s as u8 <= best as u8)
            .collect()
    }
}

/// The value block `b` (a reference: masked here) gives key bits `kb` (biased):
/// lane `#{root keys < kb}` picks the leaf, lane `#{leaf keys < kb}` its value.
#[inline(always)]
pub(super) fn block_step(simd: Simd, lines: &Lines, b: u32, kb: u32) -> u32 {
    let base = lines.lines.as_ptr();
    let b = (b & lines.mask) as usize;
    #[cfg(target_arch = "x86_64")]
    if simd == Simd::Avx512 {
        // SAFETY: `b <= mask`; the CPU has AVX-512F (`Simd::detect`); see
        // `block_step512`.
        return unsafe { block_step512(base.add(b), kb) };
    }
    // SAFETY: `b <= mask`, a rank is at most 15, so every line read is at most
    // `b + 1 + 2 * 15 + 1 < b + PAD` and `lines` holds `mask + 1 + PAD` lines; key
    // lines are only read while no writer stores to them (module doc). The
    // variants run only on CPUs with their features (`Simd::detect`).
    unsafe {
        let r1 = rank(simd, base.add(b), kb);
        let leaf = b + 1 + 2 * r1;
        prefetch(base.add(leaf + 1));
        let r2 = rank(simd, base.add(leaf), kb);
        (*base.add(leaf + 1)).0[r2].load(Ordering::Acquire)
    }
}

/// [`block_step`] in one `asm!` block up to the value's address: both compares
/// count all 16 lanes (lane 15 of every key line is
/// [`SENTINEL`](super::btree::SENTINEL), so it never
/// counts; were it not, a rank of 16 still stays inside [`PAD`]).
///
/// # Safety
///
/// `root` points to line `b <= mask` of a [`Lines`] array; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn block_step512(root: *const Line, kb: u32) -> u32 {
    let leaf: *const AtomicU32;
    let r2: usize;
    // SAFETY: reads the root line and one leaf's key line, 64 aligned bytes each:
    // a rank is at most 16, so the leaf is at most `b + 1 + 2 * 16` and its value
    // line `b + 34 < b + PAD` (the caller's contract); key lines are only read
    // while no writer stores to them (module doc). Lane i of a mask: kb > key i
    // (signed: keys are biased).
    unsafe {
        std::arch::asm!(
            "vpbroadcastd {v}, {kb:e}",
            "vpcmpd {k}, {v}, zmmword ptr [{p}], 6",
            "kmovw {r:e}, {k}",
            "popcnt {r:e}, {r:e}",
            "shl {r:e}, 7",
            "lea {p}, [{p} + {r} + 64]",
            "prefetcht0 [{p} + 64]",
            "vpcmpd {k}, {v}, zmmword ptr [{p}], 6",
            "kmovw {r:e}, {k}",
            "popcnt {r:e}, {r:e}",
            v = out(zmm_reg) _,
            k = out(kreg) _,
            kb = in(reg) kb,
            p = inout(reg) root => leaf,
            r = out(reg) r2,
            options(pure, readonly, nostack),
        );
        // (the leaf's value line follows its key line: lanes 16.. from `leaf`)
        (*leaf.add(16 + r2)).load(Ordering::Acquire)
    }
}

/// The first half of [`block_step`]: the line of the leaf block `b` (a reference:
/// masked here) picks for key bits `kb` (biased), whose key and value lines are
/// prefetched; [`leaf_step`] finishes.
#[inline(always)]
pub(super) fn root_step(simd: Simd, lines: &Lines, b: u32, kb: u32) -> u32 {
    let base = lines.lines.as_ptr();
    let b = (b & lines.mask) as usize;
    // SAFETY: `b <= mask` is in bounds; the leaf, at most `b + 1 + 2 * 16`, and its
    // value line are inside [`PAD`]; key lines are only read while no writer
    // stores to them (module doc). The variants run only on CPUs with their
    // features (`Simd::detect`).
    unsafe {
        let leaf = b + 1 + 2 * rank16(simd, base.add(b), kb);
        prefetch(base.add(leaf));
        prefetch(base.add(leaf + 1));
        leaf as u32
    }
}

/// The second half of [`block_step`]: the value the leaf whose key line is `leaf`
/// (from [`root_step`]: clamped here) gives key bits `kb` (biased).
#[inline(always)]
pub(super) fn leaf_step(simd: Simd, lines: &Lines, leaf: u32, kb: u32) -> u32 {
    let base = lines.lines.as_ptr();
    let leaf = leaf.min(lines.mask + 33) as usize;
    // SAFETY: `leaf <= mask + 33`, a rank is at most 16, so the value read is lane
    // at most 32 from the line after `leaf`, at most line `mask + 35 < mask + 1 +
    // PAD`; key lines are only read while no writer stores to them (module doc).
    // The variants run only on CPUs with their features (`Simd::detect`).
    unsafe {
        let r = rank16(simd, base.add(leaf), kb);
        (*base.add(leaf).cast::<AtomicU32>().add(16 + r)).load(Ordering::Acquire)
    }
}

/// `#{keys[0..16] of line < k}` (lane 15 is a sentinel in every key line the
/// writer fills, so this is [`rank`] there), `kb` being `k` biased.
///
/// # Safety
///
/// `line` points to a line of a live array; the CPU has the variant's features.
#[inline(always)]
unsafe fn rank16(simd: Simd, line: *const Line, kb: u32) -> usize {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract.
        Simd::Avx512 => unsafe { rank16_512(line, kb) },
        // SAFETY: the caller's contract.
        _ => unsafe { rank(simd, line, kb) },
    }
}

/// # Safety
///
/// `line` points to a line of a live array; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn rank16_512(line: *const Line, kb: u32) -> usize {
    let r: usize;
    // SAFETY: reads the 64 aligned bytes of the line (the caller's contract); the
    // CPU has AVX-512F. Lane i of the mask: kb > key i (signed: keys are biased).
    unsafe {
        std::arch::asm!(
            "vpbroadcastd {v}, {kb:e}",
            "vpcmpd {k}, {v}, zmmword ptr [{p}], 6",
            "kmovw {r:e}, {k}",
            "popcnt {r:e}, {r:e}",
            v = out(zmm_reg) _,
            k = out(kreg) _,
            kb = in(reg) kb,
            p = in(reg) line,
            r = out(reg) r,
            options(pure, readonly, nostack),
        );
    }
    r
}

/// Starts loading the key `ahead` places after `keys[i]`, inside `keys` or past it
/// (a caller streaming keys from a larger array gets its next burst's).
#[inline(always)]
pub(super) fn prefetch_key(keys: &[u128], i: usize, ahead: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = keys.as_ptr().wrapping_add(i + ahead);
        // SAFETY: a prefetch reads nothing the program sees and does not fault on
        // any address; the pointer is only computed (wrapping), never dereferenced.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (keys, i, ahead);
}

/// Starts loading the root line of block `b` (a reference: masked here).
#[inline(always)]
pub(super) fn prefetch_block(lines: &Lines, b: u32) {
    let b = (b & lines.mask) as usize;
    // SAFETY: `b <= mask` is in bounds; a prefetch reads nothing the program sees.
    unsafe { prefetch(lines.lines.as_ptr().add(b)) }
}

/// `#{keys[0..15] of line < k}`, `kb` being `k` biased.
///
/// # Safety
///
/// `line` points to a line of a live array; the CPU has the variant's features.
#[inline(always)]
unsafe fn rank(simd: Simd, line: *const Line, kb: u32) -> usize {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract.
        Simd::Avx2 => unsafe { rank256(line, kb) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract.
        Simd::Avx512 => unsafe { rank512(line, kb) },
        // SAFETY: the caller's contract.
        _ => rank_scalar(unsafe { &*line }, kb),
    }
}

#[inline(always)]
fn rank_scalar(line: &Line, kb: u32) -> usize {
    let kb = kb as i32;
    line.0[..KEYS]
        .iter()
        .filter(|w| (w.load(Ordering::Relaxed) as i32) < kb)
        .count()
}

/// # Safety
///
/// `line` points to a line of a live array; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn rank256(line: *const Line, kb: u32) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_castsi256_ps, _mm256_cmpgt_epi32, _mm256_load_si256, _mm256_movemask_ps,
        _mm256_set1_epi32,
    };
    let p: *const __m256i = line.cast();
    // SAFETY: the 64 aligned bytes of the line, read 32 at a time (the caller's
    // contract); the CPU has AVX2.
    let (la, lb) = unsafe {
        let (a, b) = (_mm256_load_si256(p), _mm256_load_si256(p.add(1)));
        let kv = _mm256_set1_epi32(kb as i32);
        (
            _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(kv, a))) as u32,
            _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(kv, b))) as u32,
        )
    };
    ((la | (lb << 8)) & 0x7fff).count_ones() as usize
}

/// The same with one AVX-512 compare of the whole line (in `asm!`: the AVX-512
/// intrinsics are newer than the workspace's minimum Rust).
///
/// # Safety
///
/// `line` points to a line of a live array; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn rank512(line: *const Line, kb: u32) -> usize {
    let m: u32;
    // SAFETY: reads the 64 aligned bytes of the line (the caller's contract); the
    // CPU has AVX-512F. Lane i of the mask: kb > key i (signed: keys are biased).
    unsafe {
        std::arch::asm!(
            "vpbroadcastd {v}, {kb:e}",
            "vpcmpd {k}, {v}, zmmword ptr [{p}], 6",
            "kmovw {m:e}, {k}",
            v = out(zmm_reg) _,
            k = out(kreg) _,
            kb = in(reg) kb,
            p = in(reg) line,
            m = out(reg) m,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    (m & 0x7fff).count_ones() as usize
}

/// Starts loading `line` (a leaf's values: the lane waits for the compare, the
/// line need not).
///
/// # Safety
///
/// None needed beyond a valid address computation (a prefetch reads nothing the
/// program sees); `unsafe` only for the intrinsic's signature.
#[inline(always)]
unsafe fn prefetch(line: *const Line) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch reads nothing the program sees.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = line;
}

/// A burst of lookups (at most 256) with `simd`'s compare.
pub(super) fn burst(simd: Simd, tree: &Tree, keys: &[u128], out: &mut [u32]) {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2` is only chosen when the CPU has AVX2.
        Simd::Avx2 => unsafe { burst256(tree, keys, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only chosen when the CPU has AVX-512F.
        Simd::Avx512 => unsafe { burst512(tree, keys, out) },
        _ => tree.burst_with(Simd::Scalar, keys, out),
    }
}

#[cfg(target_arch = "x86_64")]
/// # Safety
///
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
unsafe fn burst256(tree: &Tree, keys: &[u128], out: &mut [u32]) {
    tree.burst_with(Simd::Avx2, keys, out);
}

/// # Safety
///
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn burst512(tree: &Tree, keys: &[u128], out: &mut [u32]) {
    tree.burst_with(Simd::Avx512, keys, out);
}
