//! IPv6 longest-prefix match on the 2024 table's 160,147 IPv6 prefixes:
//! `fib::Lpm6Table` (looked up through a reader, as a worker would) against DPDK's `rte_fib6` (TRIE, 4-byte next hops,
//! `rte_fib6_lookup_bulk`) and `rte_lpm6` (`rte_lpm6_lookup_bulk_func`), all fed
//! the same table and the same keys, in the same process, on one core.
//!
//! Keys: 2^20 addresses drawn from the table's prefixes (a random prefix, then
//! random host bits). Result id of a prefix = its line index in the file + 1. Every
//! structure's answers are checked against a plain binary trie on a sample before
//! anything is timed (a mismatch panics).
//!
//! Reported: full-table load time (ours: trie inserts + build; DPDK: one add per
//! prefix), memory per prefix (ours: the lookup arrays; `rte_fib6` / `rte_lpm6`:
//! their 24-bit first level plus the tbl8 groups the table needs, from the
//! configuration), and cycles per lookup at batch 256 over interleaved rounds
//! (median and best pass).
//!
//! Route changes on the full table: `fib::Lpm6Table` withdrawing and announcing
//! random prefixes again, one commit per change and in batches of 1,000 changes,
//! while a reader thread looks the keys up on the other core; `rte_fib6` deleting
//! and adding the same prefixes (its lookups are not synchronised with updates:
//! DPDK leaves that to the caller).
//!
//! Run: `cargo bench -p benches --bench lpm6` (needs hugepages for DPDK);
//! `LPM6_HOT=n` draws the keys from `n` random prefixes only; `LPM6_UPDATES_ONLY=1`
//! measures our route changes and stops; `LPM6_LOOKUPS_ONLY=1` skips the route
//! changes.
//! Without `shared/data/prefixes-2024-v4v6.txt.gz` beside the repository it runs
//! on a synthetic table of the same size and length mix.
#![deny(unsafe_code)]

use std::hint::black_box;
use std::net::Ipv6Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use benches::cycles::{rdtsc, tsc_hz};
use benches::rib::{load_v6_2024, mask6};
use dataplane::dpdk::Eal;
use dataplane::dpdk::peers::{RteFib6, RteLpm6};
use fib::{Ipv6Prefix, Lpm6Reader, Lpm6Table, Lpm6Trie};
use rand::{Rng, SeedableRng};

const KEYS: usize = 1 << 20;
const BATCH: usize = 256;
const ROUNDS: usize = 11;
/// Prefixes withdrawn and announced again in the update measurements.
const UPDATES: usize = 200_000;

type Table = Vec<(u128, u8, u32)>;

fn prefix(a: u128, l: u8) -> Ipv6Prefix {
    Ipv6Prefix::new_truncated(Ipv6Addr::from(a), l).unwrap_or_else(|e| panic!("{e}"))
}

fn load_trie(t: &Table) -> Lpm6Trie {
    let mut trie = Lpm6Trie::new();
    for &(a, l, id) in t {
        trie.insert(prefix(a, l), id);
    }
    trie
}

/// tbl8 groups a DIR-24-8-8-... structure (`rte_fib6` TRIE, `rte_lpm6`) needs for
/// `t`: one per distinct (24 + 8k)-bit prefix under which some route is longer.
fn tbl8_needed(t: &Table) -> usize {
    let mut groups = std::collections::HashSet::new();
    for &(a, l, _) in t {
        let mut d = 24u8;
        while d < l {
            groups.insert((a & mask6(d), d));
            d += 8;
        }
    }
    groups.len()
}

/// tbl8 groups `rte_fib6` (TRIE) reserves for `t` before it adds a route: per route
/// longer than /24, the 8-bit levels between it and its longest covering route (or
/// /24), whether or not groups end up shared. It refuses a route (`ENOSPC`) when the
/// reservations would pass its pool, so the pool must be sized for this sum.
fn tbl8_reserved(t: &Table) -> usize {
    let set: std::collections::HashSet<(u128, u8)> = t.iter().map(|&(a, l, _)| (a, l)).collect();
    let ceil8 = |d: u8| usize::from(d).div_ceil(8) * 8;
    t.iter()
        .filter(|p| p.1 > 24)
        .map(|&(a, l, _)| {
            let parent = (0..l)
                .rev()
                .find(|&d| set.contains(&(a & mask6(d), d)))
                .unwrap_or(0);
            (ceil8(l) - ceil8(parent.max(24))) / 8
        })
        .sum()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Impl {
    /// Batches through a reader.
    Ours,
    /// One reader `lookup` per key (no batching), for comparison.
    OursScalar,
    RteFib6,
    RteLpm6,
}

struct Tables {
    table: Lpm6Table,
    reader: std::cell::RefCell<Lpm6Reader>,
    fib6: RteFib6,
    lpm6: RteLpm6,
}

/// One pass over all keys in batches of [`BATCH`]; returns a checksum.
fn pass(t: &Tables, which: Impl, keys: &[u128], bytes: &[[u8; 16]]) -> u64 {
    let mut out = [0u32; BATCH];
    let mut out64 = [0u64; BATCH];
    let mut outi = [0i32; BATCH];
    let mut sum = 0u64;
    match which {
        Impl::Ours => {
            let mut r = t.reader.borrow_mut();
            for c in keys.chunks(BATCH) {
                r.lookup_burst(c, &mut out[..c.len()]);
                sum = sum.wrapping_add(u64::from(out[0]));
            }
        }
        Impl::OursScalar => {
            let mut r = t.reader.borrow_mut();
            for c in keys.chunks(BATCH) {
                for (o, &k) in out.iter_mut().zip(c) {
                    *o = r.lookup(k);
                }
                sum = sum.wrapping_add(u64::from(out[0]));
            }
        }
        Impl::RteFib6 => {
            for c in bytes.chunks(BATCH) {
                t.fib6.lookup_bulk(c, &mut out64[..c.len()]);
                sum = sum.wrapping_add(out64[0]);
            }
        }
        Impl::RteLpm6 => {
            for c in bytes.chunks(BATCH) {
                t.lpm6.lookup_bulk(c, &mut outi[..c.len()]);
                sum = sum.wrapping_add(outi[0] as u64);
            }
        }
    }
    black_box(sum)
}

fn main() {
    let (table, real) = load_v6_2024();
    println!(
        "IPv6 table: {} prefixes ({})",
        table.len(),
        if real {
            "2024 table"
        } else {
            "synthetic stand-in"
        }
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    let keys = draw_keys(&table, &mut rng);
    let bytes: Vec<[u8; 16]> = keys.iter().map(|k| k.to_be_bytes()).collect();
    let (trie, flat) = load_ours(&table);
    // (before EAL pins this thread: the reader thread must run on the other core)
    let picks: Vec<usize> = (0..UPDATES)
        .map(|_| rng.random_range(0..table.len()))
        .collect();
    let lookups_only = std::env::var_os("LPM6_LOOKUPS_ONLY").is_some();
    if !lookups_only {
        update_rates(&table, &keys, &picks);
    }
    if std::env::var_os("LPM6_UPDATES_ONLY").is_some() {
        return;
    }
    let (mut fib6, lpm6) = load_dpdk(&table);
    if !lookups_only {
        update_rates_fib6(&table, &picks, &mut fib6);
    }
    let reader = std::cell::RefCell::new(flat.reader());
    let t = Tables {
        table: flat,
        reader,
        fib6,
        lpm6,
    };
    check_answers(&t, &trie, &table, &keys, &mut rng);
    let cases = cases();
    let (rows, hz) = time_cases(&t, &cases, &keys, &bytes);
    print_table(&cases, &rows, hz);
}

/// [`KEYS`] addresses drawn from `table`: a random prefix (one of `LPM6_HOT=n`
/// random prefixes when set), then random host bits.
fn draw_keys(table: &Table, rng: &mut impl Rng) -> Vec<u128> {
    // `LPM6_HOT=n`: keys from n random prefixes only (a cache-resident working set,
    // to tell instruction cost from memory latency).
    let hot: Option<Vec<usize>> = std::env::var("LPM6_HOT")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|n: usize| (0..n).map(|_| rng.random_range(0..table.len())).collect());
    (0..KEYS)
        .map(|_| {
            let i = match &hot {
                Some(h) => h[rng.random_range(0..h.len())],
                None => rng.random_range(0..table.len()),
            };
            let (a, l, _) = table[i];
            a | (rng.random::<u128>() & !mask6(l))
        })
        .collect()
}

/// Loads `table` into the binary trie and `fib::Lpm6Table` (median of 3 whole
/// loads: trie inserts + build), printing the load time and memory. Runs before EAL
/// pins this thread. Returns the trie and the table.
fn load_ours(table: &Table) -> (Lpm6Trie, Lpm6Table) {
    let mut loads = Vec::new();
    for _ in 0..3 {
        let t0 = Instant::now();
        let l = Lpm6Table::from_trie(load_trie(table));
        loads.push(t0.elapsed());
        black_box(l);
    }
    loads.sort();
    let t0 = Instant::now();
    let trie = load_trie(table);
    let trie_time = t0.elapsed();
    let flat = Lpm6Table::from_trie(trie.clone());
    let bytes = flat.memory_bytes().0;
    println!(
        "fib::Lpm6Table: full load {:.0?} (median of 3; trie inserts {trie_time:.0?}); {:.2} MiB = {:.1} B/prefix (with the free room it is built with)",
        loads[1],
        bytes as f64 / 1048576.0,
        bytes as f64 / table.len() as f64
    );
    (trie, flat)
}

/// Starts EAL and loads `table` into `rte_fib6` and `rte_lpm6` (one add per
/// prefix, pools sized for the table), printing load times and memory.
fn load_dpdk(table: &Table) -> (RteFib6, RteLpm6) {
    let eal = Eal::init(&[
        "lpm6-bench",
        "--no-pci",
        "--in-memory",
        "-l",
        "0",
        "--log-level=*:error",
    ])
    .unwrap_or_else(|e| panic!("EAL: {e}"));
    let needed = tbl8_needed(table);
    let reserved = tbl8_reserved(table);
    let tbl8 = (needed.max(reserved) + 1024) as u32;
    // rte_fib6's RIB counts its internal branch nodes against max_routes too.
    let rules = (table.len() * 2 + 1024) as u32;
    let mut fib6 =
        RteFib6::new(eal, "bench_fib6", rules, tbl8, 0).unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    for &(a, l, id) in table {
        fib6.add(&a.to_be_bytes(), l, u64::from(id))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let fib6_load = t0.elapsed();
    let mut lpm6 = RteLpm6::new(eal, "bench_lpm6", rules, tbl8).unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    for &(a, l, id) in table {
        lpm6.add(&a.to_be_bytes(), l, id)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let lpm6_load = t0.elapsed();
    // Both: a 2^24-entry first level and 256-entry tbl8 groups of 4-byte entries.
    let dpdk_bytes = |groups: usize| (1usize << 24) * 4 + groups * 256 * 4;
    println!("load: rte_fib6 {fib6_load:.0?}, rte_lpm6 {lpm6_load:.0?} (one add per prefix)");
    println!(
        "rte_fib6 (4-byte next hops) / rte_lpm6 memory: tbl24 64 MiB + 1 KiB per tbl8 group: as configured ({tbl8} groups; rte_fib6 reserves {reserved}) {:.1} MiB = {:.0} B/prefix; groups in use ({needed}) {:.1} MiB = {:.0} B/prefix (rules / RIB not counted)",
        dpdk_bytes(tbl8 as usize) as f64 / 1048576.0,
        dpdk_bytes(tbl8 as usize) as f64 / table.len() as f64,
        dpdk_bytes(needed) as f64 / 1048576.0,
        dpdk_bytes(needed) as f64 / table.len() as f64
    );
    (fib6, lpm6)
}

/// Differential check on a sample (the first keys, random addresses, and the
/// edges of every 16th prefix): every structure against the binary trie. Panics
/// on a mismatch.
fn check_answers(t: &Tables, trie: &Lpm6Trie, table: &Table, keys: &[u128], rng: &mut impl Rng) {
    let mut sample: Vec<u128> = keys.iter().take(50_000).copied().collect();
    sample.extend((0..10_000).map(|_| rng.random::<u128>()));
    for &(a, l, _) in table.iter().step_by(16) {
        sample.push(a);
        sample.push(a | !mask6(l));
        sample.push(a.wrapping_sub(1));
        sample.push((a | !mask6(l)).wrapping_add(1));
    }
    let want: Vec<u32> = sample.iter().map(|&k| trie.lookup(k)).collect();
    let sb: Vec<[u8; 16]> = sample.iter().map(|k| k.to_be_bytes()).collect();
    let mut got = vec![0u32; sample.len()];
    t.reader.borrow_mut().lookup_burst(&sample, &mut got);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "Lpm6Table: {}", Ipv6Addr::from(sample[i]));
        assert_eq!(t.table.lookup(sample[i]), w);
    }
    let mut g64 = vec![0u64; sample.len()];
    let mut gi = vec![0i32; sample.len()];
    t.fib6.lookup_bulk(&sb, &mut g64);
    t.lpm6.lookup_bulk(&sb, &mut gi);
    for (i, &w) in want.iter().enumerate() {
        assert_eq!(
            g64[i],
            u64::from(w),
            "rte_fib6: {}",
            Ipv6Addr::from(sample[i])
        );
        let l = if gi[i] < 0 { 0 } else { gi[i] as u32 };
        assert_eq!(l, w, "rte_lpm6: {}", Ipv6Addr::from(sample[i]));
    }
    println!(
        "answers agree with the binary trie on {} keys",
        sample.len()
    );
}

/// The cases timed, with their names: ours batched and one lookup per key, then
/// `rte_fib6` and `rte_lpm6`.
fn cases() -> Vec<(Impl, String)> {
    vec![
        (Impl::Ours, "fib::Lpm6Table, reader".into()),
        (
            Impl::OursScalar,
            "fib::Lpm6Table, reader, one lookup per key".into(),
        ),
        (Impl::RteFib6, "rte_fib6 (trie)".into()),
        (Impl::RteLpm6, "rte_lpm6".into()),
    ]
}

/// Times `cases` over [`ROUNDS`] rounds, every case once per round (interleaved),
/// after one warm-up pass each, and prints the heading. Returns the cycles per
/// lookup (median, best pass) per case, and the TSC rate.
fn time_cases(
    t: &Tables,
    cases: &[(Impl, String)],
    keys: &[u128],
    bytes: &[[u8; 16]],
) -> (Vec<(f64, f64)>, f64) {
    for &(w, _) in cases {
        pass(t, w, keys, bytes); // warm
    }
    let mut samples: Vec<Vec<u64>> = vec![Vec::new(); cases.len()];
    let t0 = Instant::now();
    for _ in 0..ROUNDS {
        for (j, &(w, _)) in cases.iter().enumerate() {
            let c0 = rdtsc();
            pass(t, w, keys, bytes);
            samples[j].push(rdtsc() - c0);
        }
    }
    let hz = tsc_hz() as f64;
    println!(
        "\nIPv6 lookups, keys drawn from the table's prefixes, 2^20 keys per pass, batch {BATCH}, {ROUNDS} interleaved rounds ({:.1?}), TSC {:.2} GHz",
        t0.elapsed(),
        hz / 1e9
    );
    let rows = samples
        .iter_mut()
        .map(|v| {
            v.sort_unstable();
            (
                v[ROUNDS / 2] as f64 / KEYS as f64,
                v[0] as f64 / KEYS as f64,
            )
        })
        .collect();
    (rows, hz)
}

/// Prints the results table: per case, cycles and lookups per second (median and
/// best pass), and the median against `rte_fib6` and `rte_lpm6`.
fn print_table(cases: &[(Impl, String)], rows: &[(f64, f64)], hz: f64) {
    let find = |w: Impl| {
        cases
            .iter()
            .position(|c| c.0 == w)
            .map_or((1.0, 1.0), |j| rows[j])
    };
    let (fib6, lpm6) = (find(Impl::RteFib6), find(Impl::RteLpm6));
    println!(
        "| impl | cycles/lookup (median) | M lookups/s (median) | vs rte_fib6 | vs rte_lpm6 | M lookups/s (best) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (j, (_, name)) in cases.iter().enumerate() {
        let (med, best) = rows[j];
        println!(
            "| {name} | {med:.1} | {:.1} | {:.2}x | {:.2}x | {:.1} |",
            hz / med / 1e6,
            fib6.0 / med,
            lpm6.0 / med,
            hz / best / 1e6
        );
    }
}

/// Route changes per second on `Lpm6Table` holding `table`: each picked prefix
/// withdrawn and announced again, first one commit per change, then 1,000 changes
/// per commit, while a reader thread looks up `keys` in bursts of [`BATCH`].
fn update_rates(table: &Table, keys: &[u128], picks: &[usize]) {
    let mut t = Lpm6Table::from_trie(load_trie(table));
    let done = Arc::new(AtomicBool::new(false));
    let looked = Arc::new(AtomicU64::new(0));
    let reader = {
        let (mut r, done, looked) = (t.reader(), done.clone(), looked.clone());
        let keys = keys.to_vec();
        std::thread::spawn(move || {
            let mut out = [0u32; BATCH];
            let mut n = 0u64;
            while !done.load(Ordering::Relaxed) {
                for chunk in keys.chunks(BATCH) {
                    r.lookup_burst(chunk, &mut out);
                    black_box(&out);
                }
                n += keys.len() as u64;
            }
            looked.store(n, Ordering::Relaxed);
        })
    };
    let t0 = Instant::now();
    let (single, batched) = picks.split_at(picks.len() / 2);
    for &i in single {
        let (a, l, id) = table[i];
        t.remove(prefix(a, l));
        t.commit();
        t.insert(prefix(a, l), id);
        t.commit();
    }
    let single_time = t0.elapsed();
    let t1 = Instant::now();
    for chunk in batched.chunks(500) {
        for &i in chunk {
            let (a, l, _) = table[i];
            t.remove(prefix(a, l));
        }
        for &i in chunk {
            let (a, l, id) = table[i];
            t.insert(prefix(a, l), id);
        }
        t.commit();
    }
    let batch_time = t1.elapsed();
    done.store(true, Ordering::Relaxed);
    reader.join().unwrap_or_else(|_| panic!("reader"));
    let lookups = looked.load(Ordering::Relaxed) as f64 / (t0.elapsed().as_secs_f64());
    let (arrays, trie) = t.memory_bytes();
    println!(
        "fib::Lpm6Table updates with a reader on the other core: {:.0} k/s one commit per change, {:.0} k/s 1,000 changes per commit; the reader's lookups meanwhile {:.1} M/s; {:?}; arrays {:.1} MiB after the changes (trie {:.1} MiB)",
        (2 * single.len()) as f64 / single_time.as_secs_f64() / 1e3,
        (2 * batched.len()) as f64 / batch_time.as_secs_f64() / 1e3,
        lookups / 1e6,
        t.stats(),
        arrays as f64 / 1048576.0,
        trie as f64 / 1048576.0
    );
}

/// Route changes per second on `rte_fib6`: the same prefixes deleted and added
/// again, one call each (until an add is refused: its tbl8 reservation can run out
/// on delete + add cycles).
fn update_rates_fib6(table: &Table, picks: &[usize], fib6: &mut RteFib6) {
    let t0 = Instant::now();
    let mut done = 0usize;
    let mut refused = None;
    for &i in picks {
        let (a, l, id) = table[i];
        fib6.delete(&a.to_be_bytes(), l)
            .unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = fib6.add(&a.to_be_bytes(), l, u64::from(id)) {
            refused = Some(e);
            break;
        }
        done += 1;
    }
    println!(
        "rte_fib6 updates: {:.0} k/s (delete + add, one call each; {} changes{})",
        (2 * done) as f64 / t0.elapsed().as_secs_f64() / 1e3,
        2 * done,
        refused.map_or(String::new(), |e| format!(", then an add refused: {e}"))
    );
}
