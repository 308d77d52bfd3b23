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
    Some(read_2024(
        &path,
        V4_PREFIXES_2024,
        850_000,
        "IPv4",
        |a, l| {
            let a = a.parse::<std::net::Ipv4Addr>().ok()?;
            let mask = u32::MAX.checked_shl(32u32.checked_sub(u32::from(l))?);
            Some((u32::from(a) & mask.unwrap_or(0), l))
        },
    ))
}

/// The prefixes of the 2024 table at `path` that `parse` takes (address text and
/// length to network and length), as (network, length, line index + 1).
///
/// # Panics
///
/// If the file cannot be read, or `parse` takes fewer than `least` of its lines.
fn read_2024<A>(
    path: &std::path::Path,
    size: usize,
    least: usize,
    family: &str,
    parse: impl Fn(&str, u8) -> Option<(A, u8)>,
) -> Vec<(A, u8, u32)> {
    let f = std::fs::File::open(path)
        .unwrap_or_else(|e| panic!("{} cannot be opened: {e}", path.display()));
    let mut out = Vec::with_capacity(size);
    for (i, line) in BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .enumerate()
    {
        let line = line.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // (the other family's lines, and any that is not a prefix, are skipped)
        let Some((a, Ok(l))) = line
            .trim()
            .split_once('/')
            .map(|(a, l)| (a, l.parse::<u8>()))
        else {
            continue;
        };
        if let Some((a, l)) = parse(a, l) {
            out.push((a, l, i as u32 + 1));
        }
    }
    assert!(
        out.len() > least,
        "{}: only {} {family} prefixes",
        path.display(),
        out.len()
    );
    out
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
    let out = read_2024(&path, V6_PREFIXES_2024, 150_000, "IPv6", |a, l| {
        let a = a.parse::<Ipv6Addr>().ok()?;
        (l <= 128).then(|| (u128::from(a) & mask6(l), l))
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Both families of the 2024 table, counted as its README counts them, with
    /// host bits clear (when the shared data is beside the repository).
    #[test]
    fn the_2024_table_loads_both_families() {
        let Some(v4) = load_v4_2024() else {
            eprintln!("{FILE_2024} not found: nothing to check");
            return;
        };
        assert_eq!(v4.len(), V4_PREFIXES_2024);
        assert!(
            v4.iter().all(|&(a, l, _)| l <= 32
                && a & !u32::MAX.checked_shl(32 - u32::from(l)).unwrap_or(0) == 0)
        );
        let (v6, from_file) = load_v6_2024();
        assert!(from_file);
        assert_eq!(v6.len(), V6_PREFIXES_2024);
        assert!(v6.iter().all(|&(a, l, _)| a & !mask6(l) == 0));
    }
}
