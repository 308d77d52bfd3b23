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

pub use tables::{V6_PREFIXES_2024, load_v6_2024, mask6, synthetic_v6};
