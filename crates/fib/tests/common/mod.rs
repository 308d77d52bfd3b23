//! Shared helpers: the real RIB (or a stand-in of its size) and a naive reference LPM.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use fib::{Fib, FibView, Interface, Ipv4Prefix, Ipv6Prefix};

/// A FIB with interface 1 (MAC 02:00:00:00:00:01, MTU 1500, untagged).
pub fn fib_with_port() -> Fib {
    let mut fib = Fib::new();
    fib.interface_set(
        1,
        Interface {
            mac: [2, 0, 0, 0, 0, 1],
            mtu: 1500,
            vlan: None,
        },
    );
    fib
}

/// Two reader threads that look `probes` up in table 0 (batches of 256, a fresh
/// view per batch) until `done`, handing every answer to `check(view, probe index,
/// result id)` (which asserts), and adding how many they checked to `checked`.
pub fn spawn_readers<F>(
    fib: &Fib,
    probes: &Arc<Vec<u32>>,
    done: &Arc<AtomicBool>,
    checked: &Arc<AtomicU64>,
    check: F,
) -> Vec<JoinHandle<()>>
where
    F: Fn(&FibView<'_>, usize, u32) + Send + Clone + 'static,
{
    (0..2)
        .map(|_| {
            let mut r = fib.reader();
            let (done, checked, probes, check) =
                (done.clone(), checked.clone(), probes.clone(), check.clone());
            std::thread::spawn(move || {
                let mut out = [0u32; 256];
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    for (c, chunk) in probes.chunks(256).enumerate() {
                        let v = r.read();
                        v.lookup_burst(0, chunk, &mut out);
                        for (i, &id) in out[..chunk.len()].iter().enumerate() {
                            check(&v, c * 256 + i, id);
                            n += 1;
                        }
                    }
                }
                checked.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect()
}

/// Prefixes in the shared 2014 RIB snapshot (and in the stand-in table).
pub const RIB_PREFIXES: usize = 512_621;

const RIB_FILE: &str = "rib-v4-2014-05-13.txt.gz";

/// The shared 2014 RIB snapshot (512,621 `prefix<TAB>asn` lines): `$RIB_V4` if set,
/// else `shared/data/` beside the workspace or beside any directory above it.
pub fn rib_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RIB_V4") {
        return Some(PathBuf::from(p));
    }
    shared_data(RIB_FILE)
}

/// Loads (prefix, asn) pairs from the snapshot. Without it (a clone that has no
/// `shared/` beside it), a stand-in of the same size and shape: see
/// [`synthetic_rib`]. The tests check the FIB against a reference either way.
pub fn load_rib() -> Vec<(Ipv4Prefix, u32)> {
    let Some(path) = rib_path() else {
        eprintln!(
            "RIB snapshot {RIB_FILE} not found (set RIB_V4, or check shared/ out beside the repo): using a synthetic table of the same size"
        );
        return synthetic_rib();
    };
    let f = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("RIB snapshot {} cannot be opened: {e}", path.display()));
    let r = BufReader::new(flate2::read::GzDecoder::new(f));
    let mut out = Vec::with_capacity(520_000);
    for line in r.lines() {
        let line = line.expect("read RIB");
        if line.starts_with(';') || line.is_empty() {
            continue;
        }
        let (p, asn) = line.split_once('\t').expect("prefix<TAB>asn");
        let (a, l) = p.split_once('/').expect("prefix");
        let a: Ipv4Addr = a.parse().expect("address");
        let l: u8 = l.parse().expect("length");
        out.push((
            Ipv4Prefix::new_truncated(a, l).expect("len"),
            asn.trim().parse().unwrap_or(0),
        ));
    }
    out
}

/// A deterministic stand-in for the RIB: [`RIB_PREFIXES`] distinct prefixes with
/// roughly the 2014 table's length mix (/24 more than half, then /22-/23, /16-/21,
/// a few short and long ones) and 45,000 origin ASes.
pub fn synthetic_rib() -> Vec<(Ipv4Prefix, u32)> {
    const MIX: [(u8, u32); 17] = [
        (8, 1),
        (12, 2),
        (14, 3),
        (15, 4),
        (16, 25),
        (17, 14),
        (18, 24),
        (19, 45),
        (20, 50),
        (21, 52),
        (22, 92),
        (23, 98),
        (24, 545),
        (25, 8),
        (26, 7),
        (28, 5),
        (32, 25),
    ];
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(45_000);
    synthetic(RIB_PREFIXES, &MIX, 2014)
        .into_iter()
        .map(|p| (p, rng.random_range(1..=45_000)))
        .collect()
}

/// `n` distinct prefixes with lengths drawn from `mix` ((length, weight) pairs).
pub fn synthetic(n: usize, mix: &[(u8, u32)], seed: u64) -> Vec<Ipv4Prefix> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = tables::draw_len(mix, &mut rng);
        let p = Ipv4Prefix::new_truncated(Ipv4Addr::from(rng.random::<u32>()), len).expect("len");
        if seen.insert((p.addr_u32(), len)) {
            out.push(p);
        }
    }
    out
}

/// Naive LPM: one hash map per prefix length, probed from /32 down.
#[derive(Default)]
pub struct Reference {
    by_len: Vec<fib::FastMap<u32, u32>>,
}

impl Reference {
    pub fn new() -> Self {
        Self {
            by_len: vec![fib::FastMap::default(); 33],
        }
    }
    pub fn insert(&mut self, p: Ipv4Prefix, v: u32) {
        self.by_len[p.prefix_len() as usize].insert(p.addr_u32(), v);
    }
    pub fn remove(&mut self, p: Ipv4Prefix) -> Option<u32> {
        self.by_len[p.prefix_len() as usize].remove(&p.addr_u32())
    }
    /// The values of every prefix that covers `a`, longest first.
    pub fn covering(&self, a: u32) -> Vec<u32> {
        (0..=32u32)
            .rev()
            .filter_map(|len| {
                let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                self.by_len[len as usize].get(&(a & m)).copied()
            })
            .collect()
    }
    pub fn lookup(&self, a: u32) -> u32 {
        for len in (0..=32u32).rev() {
            let t = &self.by_len[len as usize];
            if t.is_empty() {
                continue;
            }
            let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            if let Some(&v) = t.get(&(a & m)) {
                return v;
            }
        }
        0
    }
}

pub use tables::shared_data;

/// The 2024 table's IPv4 prefixes (`prefixes-2024-v4v6.txt.gz`, one `prefix/len`
/// per line, both families), if the shared data is beside the clone.
pub fn load_prefixes_2024() -> Option<Vec<Ipv4Prefix>> {
    Some(
        tables::load_v4_2024()?
            .into_iter()
            .map(|(a, l, _)| Ipv4Prefix::new_truncated(Ipv4Addr::from(a), l).expect("length"))
            .collect(),
    )
}

/// `n` distinct prefixes with about the 2024 table's length mix (per mille:
/// /24 596, /22 120, /23 107, /21 56, /20 47, /19 28, /16-/18 39, a few
/// shorter), with a few more longer than /24 than it has, so that the lookup's
/// nodes below /24 are exercised too.
pub fn synthetic_2024(n: usize) -> Vec<Ipv4Prefix> {
    const MIX: [(u8, u32); 17] = [
        (8, 1),
        (12, 1),
        (14, 2),
        (15, 2),
        (16, 15),
        (17, 9),
        (18, 15),
        (19, 28),
        (20, 47),
        (21, 56),
        (22, 120),
        (23, 107),
        (24, 596),
        (25, 2),
        (26, 2),
        (28, 2),
        (32, 3),
    ];
    synthetic(n, &MIX, 2024)
}

/// The network mask of `p`.
pub fn mask(p: Ipv4Prefix) -> u32 {
    if p.prefix_len() == 0 {
        0
    } else {
        u32::MAX << (32 - p.prefix_len())
    }
}

pub use tables::mask6;

/// `(network, length, value)` as a prefix.
fn prefix6_of(&(a, l, v): &(u128, u8, u32)) -> (Ipv6Prefix, u32) {
    let p = Ipv6Prefix::new_truncated(Ipv6Addr::from(a), l).expect("length");
    (p, v)
}

/// The 2024 table's IPv6 prefixes (line index + 1 as their value), or without the
/// shared data a synthetic table of the same size and shape ([`synthetic_v6`]).
pub fn load_v6_2024() -> Vec<(Ipv6Prefix, u32)> {
    tables::load_v6_2024().0.iter().map(prefix6_of).collect()
}

/// `n` distinct IPv6 prefixes with the 2024 table's length mix, nested as
/// allocations are ([`tables::synthetic_v6`]). Values index + 1.
pub fn synthetic_v6(n: usize) -> Vec<(Ipv6Prefix, u32)> {
    tables::synthetic_v6(n).iter().map(prefix6_of).collect()
}

/// Naive IPv6 LPM: one hash map per prefix length, probed from /128 down.
#[derive(Default)]
pub struct Reference6 {
    by_len: Vec<std::collections::HashMap<u128, u32>>,
}

impl Reference6 {
    pub fn new() -> Self {
        Self {
            by_len: vec![std::collections::HashMap::new(); 129],
        }
    }
    pub fn insert(&mut self, p: Ipv6Prefix, v: u32) {
        self.by_len[p.prefix_len() as usize].insert(p.addr_u128(), v);
    }
    pub fn remove(&mut self, p: Ipv6Prefix) -> Option<u32> {
        self.by_len[p.prefix_len() as usize].remove(&p.addr_u128())
    }
    /// The result stored for exactly `p`.
    pub fn exact(&self, p: Ipv6Prefix) -> Option<u32> {
        self.by_len[p.prefix_len() as usize]
            .get(&p.addr_u128())
            .copied()
    }
    pub fn lookup(&self, a: u128) -> u32 {
        for len in (0..=128u8).rev() {
            let t = &self.by_len[len as usize];
            if t.is_empty() {
                continue;
            }
            if let Some(&v) = t.get(&(a & mask6(len))) {
                return v;
            }
        }
        0
    }
}

/// Every prefix's first and last address and the addresses just outside.
pub fn edges(table: &[(Ipv6Prefix, u32)]) -> Vec<u128> {
    let mut keys = Vec::with_capacity(table.len() * 4);
    for (p, _) in table {
        let first = p.addr_u128();
        let last = first | !mask6(p.prefix_len());
        keys.extend([first, last, first.wrapping_sub(1), last.wrapping_add(1)]);
    }
    keys
}

/// A prefix near one of a few seeds (so that prefixes nest and share nodes), of
/// any length, /0 and /128 included.
pub fn prefix6() -> impl proptest::strategy::Strategy<Value = Ipv6Prefix> {
    let seeds = [
        0u128,
        0x2001_0db8_u128 << 96,
        (0x2001_0db8_0001_u128 << 80) | 0xff,
        u128::MAX,
        0x2a00_1450_4001_0800_u128 << 64,
    ];
    proptest::strategy::Strategy::prop_map(
        (
            0..seeds.len(),
            proptest::prelude::any::<u128>(),
            0u32..128,
            0u8..=128,
        ),
        move |(s, r, flip, len)| {
            // The seed with one random low bit region changed: siblings and cousins.
            let a = seeds[s] ^ ((r >> flip) & (r >> 64));
            Ipv6Prefix::new_truncated(Ipv6Addr::from(a), len).unwrap_or_else(|e| panic!("{e}"))
        },
    )
}

/// Checks an IPv6 table on `keys` against `want`, through a reader in bursts of
/// uneven length and one key at a time, and through the writer's lookup.
pub fn check6(t: &fib::Lpm6Table, keys: &[u128], want: &[u32]) {
    let mut r = t.reader();
    let mut out = vec![0u32; keys.len()];
    for c in (0..keys.len()).step_by(300) {
        let end = (c + 300).min(keys.len());
        r.lookup_burst(&keys[c..end], &mut out[c..end]);
    }
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(out[i], want[i], "burst: {}", Ipv6Addr::from(k));
        assert_eq!(r.lookup(k), want[i], "lookup: {}", Ipv6Addr::from(k));
        assert_eq!(t.lookup(k), want[i], "writer: {}", Ipv6Addr::from(k));
    }
}
