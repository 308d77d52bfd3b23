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

/// Next hops the 2024 table's IPv4 prefixes are spread over: its file has no
/// origin AS, so each prefix gets one of this many by a hash of the prefix (about
/// as many as the 2014 table's distinct origin ASes, 29,959).
pub const NEXT_HOPS_2024: u32 = 30_000;

/// The IPv4 table the FIB benchmarks load: the 2024 table's 901,899 prefixes
/// (each with one of [`NEXT_HOPS_2024`] next hops), or with `V4_TABLE=2014` the
/// 2014 table's 512,621 with their origin ASes. Returns the table and its name.
pub fn load_v4_selected() -> (Vec<(u32, u8, u32)>, &'static str) {
    if std::env::var("V4_TABLE").is_ok_and(|t| t == "2014") {
        return (load_v4(), "2014 table, next hop by origin AS");
    }
    let t = tables::load_v4_2024().unwrap_or_else(|| {
        panic!(
            "{} not found (shared/ must sit beside the repository; V4_TABLE=2014 for the 2014 table)",
            tables::FILE_2024
        )
    });
    let hop = |a: u32, l: u8| {
        let h = (u64::from(a) << 8 | u64::from(l)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 32) % u64::from(NEXT_HOPS_2024)) as u32 + 1
    };
    (
        t.into_iter().map(|(a, l, _)| (a, l, hop(a, l))).collect(),
        "2024 table, one of 30,000 next hops per prefix",
    )
}

pub use tables::{V6_PREFIXES_2024, load_v6_2024, mask6, synthetic_v6};
