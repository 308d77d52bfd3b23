//! Test and benchmark input: the routing tables of `shared/data/` (checked out
//! beside the repository) and, where a clone has none, synthetic stand-ins of the
//! same size and shape. Prefixes come as plain integers (network with host bits
//! cleared, length, value) so that any crate can use them without this one
//! depending on it.
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader};
use std::net::Ipv6Addr;
use std::path::PathBuf;

/// IPv6 prefixes in the 2024 table.
pub const V6_PREFIXES_2024: usize = 160_147;

/// The 2024 dual-stack table: one `prefix/len` per line.
pub const FILE_2024: &str = "prefixes-2024-v4v6.txt.gz";

/// `shared/data/FILE` beside this workspace or beside any directory above it.
pub fn shared_data(file: &str) -> Option<PathBuf> {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("shared/data").join(file))
        .find(|p| p.is_file())
}

/// IPv4 prefixes in the 2024 table.
pub const V4_PREFIXES_2024: usize = 901_899;

/// The 2024 table's IPv4 prefixes as (network, length, line index + 1), or `None`
/// when the file is not beside the repository.
///
/// # Panics
///
/// If the file is there but cannot be read, or holds fewer than 850,000 IPv4
/// prefixes.
pub fn load_v4_2024() -> Option<Vec<(u32, u8, u32)>> {
    let path = shared_data(FILE_2024)?;
    let f = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("{} cannot be opened: {e}", path.display()));
    let mut out = Vec::with_capacity(V4_PREFIXES_2024);
    for (i, line) in BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .enumerate()
    {
        let line = line.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Some((a, l)) = line.trim().split_once('/') else {
            continue;
        };
        let (Ok(a), Ok(l)) = (a.parse::<std::net::Ipv4Addr>(), l.parse::<u8>()) else {
            continue; // IPv6, or not a prefix
        };
        if l <= 32 {
            let mask = u32::MAX.checked_shl(32 - u32::from(l)).unwrap_or(0);
            out.push((u32::from(a) & mask, l, i as u32 + 1));
        }
    }
    assert!(
        out.len() > 850_000,
        "{}: only {} IPv4 prefixes",
        path.display(),
        out.len()
    );
    Some(out)
}

/// Network mask of an IPv6 prefix of length `l <= 128`.
pub fn mask6(l: u8) -> u128 {
    if l == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(l))
    }
}

/// The 2024 table's IPv6 prefixes as (network, length, line index + 1), and
/// whether they came from the file: without it, [`synthetic_v6`] of the same size.
///
/// # Panics
///
/// If the file is there but cannot be read, or holds fewer than 150,000 IPv6
/// prefixes.
pub fn load_v6_2024() -> (Vec<(u128, u8, u32)>, bool) {
    let Some(path) = shared_data(FILE_2024) else {
        eprintln!(
            "{FILE_2024} not found (check shared/ out beside the repository): using a synthetic IPv6 table of the same size and shape"
        );
        return (synthetic_v6(V6_PREFIXES_2024), false);
    };
    let f = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("{} cannot be opened: {e}", path.display()));
    let mut out = Vec::with_capacity(V6_PREFIXES_2024);
    for (i, line) in BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .enumerate()
    {
        let line = line.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Some((a, l)) = line.trim().split_once('/') else {
            continue;
        };
        let (Ok(a), Ok(l)) = (a.parse::<Ipv6Addr>(), l.parse::<u8>()) else {
            continue; // IPv4, or not a prefix
        };
        if l <= 128 {
            out.push((u128::from(a) & mask6(l), l, i as u32 + 1));
        }
    }
    assert!(
        out.len() > 150_000,
        "{}: only {} IPv6 prefixes",
        path.display(),
        out.len()
    );
    (out, true)
}

/// A prefix length drawn from `mix`, (length, weight) pairs (one draw of `rng`).
pub fn draw_len(mix: &[(u8, u32)], rng: &mut impl rand::Rng) -> u8 {
    let total: u32 = mix.iter().map(|m| m.1).sum();
    let mut w = rng.random_range(0..total.max(1));
    for &(len, weight) in mix {
        if w < weight {
            return len;
        }
        w -= weight;
    }
    mix.last().map_or(0, |m| m.0)
}

/// `n` distinct IPv6 prefixes with the 2024 table's length mix (per cent: /48 46,
/// /32 14, /44 9, /40 8, /36 4, /29 3, the rest over /19-/128), clustered the way
/// allocations are: the longer ones inside 20,000 random /32s of 2000::/4, so that
/// prefixes nest. Values are index + 1.
pub fn synthetic_v6(n: usize) -> Vec<(u128, u8, u32)> {
    use rand::{Rng, SeedableRng};
    const MIX: [(u8, u32); 17] = [
        (19, 1),
        (24, 1),
        (28, 2),
        (29, 3),
        (30, 1),
        (32, 14),
        (33, 2),
        (36, 4),
        (40, 8),
        (42, 2),
        (44, 9),
        (46, 2),
        (47, 2),
        (48, 46),
        (56, 1),
        (64, 1),
        (128, 1),
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(2024);
    let top = |r: &mut rand::rngs::StdRng| (2u128 << 124) | (r.random::<u128>() >> 4);
    let blocks: Vec<u128> = (0..20_000).map(|_| top(&mut rng) & mask6(32)).collect();
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = draw_len(&MIX, &mut rng);
        let a = if len <= 32 {
            top(&mut rng)
        } else {
            blocks[rng.random_range(0..blocks.len())] | (rng.random::<u128>() >> 32)
        } & mask6(len);
        if seen.insert((a, len)) {
            out.push((a, len, out.len() as u32 + 1));
        }
    }
    out
}
