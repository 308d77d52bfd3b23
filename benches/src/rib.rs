//! The shared RouteViews table (`shared/data/rib-v4-2014-05-13.txt.gz`, 512,621
//! prefixes, `prefix<TAB>asn` lines) as benchmark input.

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// Where the table is: `shared/` sits beside the repository (as in CI).
pub fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/rib-v4-2014-05-13.txt.gz")
}

/// (network in host order with host bits cleared, prefix length, origin AS) of every
/// prefix in the table. Panics with a clear message if the file is missing or short:
/// the benchmarks mean nothing without it.
pub fn load_v4() -> Vec<(u32, u8, u32)> {
    let path = path();
    let f = std::fs::File::open(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (shared/ must sit beside the repository)",
            path.display()
        )
    });
    let mut rib = Vec::with_capacity(520_000);
    for line in BufReader::new(flate2::read::GzDecoder::new(f)).lines() {
        let line = line.expect("read the RIB");
        let Some((p, asn)) = line.split_once('\t') else {
            continue;
        };
        let Some((a, l)) = p.split_once('/') else {
            continue;
        };
        let (Ok(a), Ok(l)) = (a.parse::<Ipv4Addr>(), l.parse::<u8>()) else {
            continue;
        };
        if l > 32 {
            continue;
        }
        let mask = if l == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(l))
        };
        rib.push((u32::from(a) & mask, l, asn.trim().parse().unwrap_or(0)));
    }
    assert!(
        rib.len() > 500_000,
        "{}: only {} prefixes",
        path.display(),
        rib.len()
    );
    rib
}

/// The 2024 dual-stack table (`shared/data/prefixes-2024-v4v6.txt.gz`, one
/// `prefix/len` per line, 160,147 IPv6 prefixes) beside the repository.
pub fn path_2024() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/prefixes-2024-v4v6.txt.gz")
}

/// IPv6 prefixes of the 2024 table as (network with host bits cleared, length,
/// line index + 1), and whether they came from the file: without it, a synthetic
/// table of the same size and length mix ([`synthetic_v6`]).
pub fn load_v6_2024() -> (Vec<(u128, u8, u32)>, bool) {
    let path = path_2024();
    let Ok(f) = std::fs::File::open(&path) else {
        eprintln!(
            "{} not found: using a synthetic table of the same size and shape",
            path.display()
        );
        return (synthetic_v6(V6_PREFIXES_2024), false);
    };
    let mut out = Vec::with_capacity(V6_PREFIXES_2024);
    for (i, line) in BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .enumerate()
    {
        let line = line.expect("read the 2024 table");
        let Some((a, l)) = line.trim().split_once('/') else {
            continue;
        };
        let (Ok(a), Ok(l)) = (a.parse::<std::net::Ipv6Addr>(), l.parse::<u8>()) else {
            continue;
        };
        if l > 128 {
            continue;
        }
        out.push((u128::from(a) & mask6(l), l, i as u32 + 1));
    }
    assert!(
        out.len() > 150_000,
        "{}: only {} IPv6 prefixes",
        path.display(),
        out.len()
    );
    (out, true)
}

/// IPv6 prefixes in the 2024 table.
pub const V6_PREFIXES_2024: usize = 160_147;

/// Network mask of an IPv6 prefix of length `l <= 128`.
pub fn mask6(l: u8) -> u128 {
    if l == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(l))
    }
}

/// `n` distinct IPv6 prefixes with the 2024 table's length mix (per cent: /48 47,
/// /32 14, /44 9, /40 8, /36 4, /29 3, the rest spread over /19-/64), clustered the
/// way allocations are: the longer ones inside 20,000 random /32s of 2000::/4, so
/// that prefixes nest. Ids are index + 1.
pub fn synthetic_v6(n: usize) -> Vec<(u128, u8, u32)> {
    use rand::{Rng, SeedableRng};
    const MIX: [(u8, u32); 16] = [
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
        (48, 47),
        (56, 1),
        (64, 1),
    ];
    let total: u32 = MIX.iter().map(|m| m.1).sum();
    let mut rng = rand::rngs::StdRng::seed_from_u64(2024);
    let top = |r: &mut rand::rngs::StdRng| (2u128 << 124) | (r.random::<u128>() >> 4);
    let blocks: Vec<u128> = (0..20_000).map(|_| top(&mut rng) & mask6(32)).collect();
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut w = rng.random_range(0..total);
        let len = MIX
            .iter()
            .find(|m| {
                let hit = w < m.1;
                w = w.saturating_sub(m.1);
                hit
            })
            .map_or(48, |m| m.0);
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
