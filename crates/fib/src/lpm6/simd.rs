//! The one compare of a lookup step, `#{keys of a node <= k}`, with the widest SIMD
//! the CPU has (checked at run time: the crate is built for x86-64-v2), and the
//! lookup bodies compiled once per variant so that the compare is inlined.
//!
//! The only `unsafe` of the crate: the vector loads of a node's key line (an aligned
//! array of atomic words that no writer touches while a reader can reach the node:
//! a node is filled before it is linked and refilled only after the readers' grace
//! period), and the calls into the variants, made only when the CPU has the
//! features. Unlike the rest of the lookup's reads these loads are not atomic, so
//! here, and only here, a grace-period bug (a node refilled under a reader) would be
//! a data race rather than a stale answer.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use super::btree::{KEYS, Node, Tree};

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

/// `#{keys[0..15] <= k}` of `node`, `kb` being `k` biased.
#[inline(always)]
pub(super) fn rank(simd: Simd, node: &Node, kb: u32) -> usize {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2` is only chosen when the CPU has AVX2.
        Simd::Avx2 => unsafe { rank256(node, kb) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx512` is only chosen when the CPU has AVX-512F.
        Simd::Avx512 => unsafe { rank512(node, kb) },
        _ => rank_scalar(node, kb),
    }
}

#[inline(always)]
fn rank_scalar(node: &Node, kb: u32) -> usize {
    let kb = kb as i32;
    node.keys[..KEYS]
        .iter()
        .filter(|w| w.load(Ordering::Relaxed) as i32 <= kb)
        .count()
}

/// # Safety
///
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn rank256(node: &Node, kb: u32) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_castsi256_ps, _mm256_cmpgt_epi32, _mm256_load_si256, _mm256_movemask_ps,
        _mm256_set1_epi32,
    };
    let p: *const __m256i = node.keys.as_ptr().cast();
    // SAFETY: the 16 key words are the first 64 bytes of a 128-byte aligned node,
    // read 32 at a time; no writer stores to them while a reader can reach the
    // node (module doc). The CPU has AVX2 (the caller's contract).
    let (ga, gb) = unsafe {
        let (a, b) = (_mm256_load_si256(p), _mm256_load_si256(p.add(1)));
        let kv = _mm256_set1_epi32(kb as i32);
        (
            _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(a, kv))) as u32,
            _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(b, kv))) as u32,
        )
    };
    (!(ga | (gb << 8)) & 0x7fff).count_ones() as usize
}

/// The same with one AVX-512 compare of the whole line (in `asm!`: the AVX-512
/// intrinsics are newer than the workspace's minimum Rust).
///
/// # Safety
///
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn rank512(node: &Node, kb: u32) -> usize {
    let m: u32;
    // SAFETY: reads the 64 aligned bytes of key words of the node (no writer stores
    // to them while a reader can reach it, module doc); the CPU has AVX-512F (the
    // caller's contract). Lane i of the mask: key i <= kb (signed: keys are biased).
    unsafe {
        std::arch::asm!(
            "vpbroadcastd {v}, {kb:e}",
            "vpcmpd {k}, {v}, zmmword ptr [{p}], 5",
            "kmovw {m:e}, {k}",
            v = out(zmm_reg) _,
            k = out(kreg) _,
            kb = in(reg) kb,
            p = in(reg) node.keys.as_ptr(),
            m = out(reg) m,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    (m & 0x7fff).count_ones() as usize
}

/// Starts loading the cache line of `line` (the values of a node whose keys are
/// being compared: the lane's address waits for the compare, the line need not).
#[inline(always)]
pub(super) fn prefetch(line: &[AtomicU32; 16]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch reads nothing the program sees; the address is valid.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
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
