//! IPv4 longest-prefix match on the 2024 table's 901,899 prefixes (`V4_TABLE=2014`:
//! the shared 2014 RIB's 512,621, next hop by origin AS): `fib` against
//! DPDK's `rte_lpm` and `rte_fib` (DIR-24-8, in hugepages), the `prefix-trie` crate,
//! and a plain safe-Rust DIR-24-8 (`Vec<u32>`, 4 KiB pages), all fed the same table
//! and the same keys, in the same process.
//!
//! Keys: 2^20 uniformly random addresses ("random"), and 2^20 addresses drawn from the
//! table's prefixes, a random prefix then a random host inside it ("prefix"). Batch
//! sizes 1, 32 and 256: `fib` pins its reader once per batch (per 256 keys for batch
//! 1), as a worker pins once per rx burst. Next hop of a prefix: one of 30,000 by a
//! hash of the prefix (2014: its origin AS, 29,959 distinct); one path list per next
//! hop in `fib`.
//!
//! Also measured (before EAL starts, so the threads are not pinned to one core):
//! full-table load time, route changes per second while a reader thread looks up,
//! and memory.
//!
//! Run: `cargo bench -p benches --bench lpm` (needs hugepages for DPDK:
//! `/proc/sys/vm/nr_hugepages`). The summary table at the end is what
//! `benches/RESULTS-fib.md` records. `LPM_UPDATES_ONLY=n` stops after the load and
//! `n` runs of the update-rate measurement (0: after the load); `LPM_OURS_ONLY=1` measures `fib`'s
//! batched lookups beside the safe-Rust DIR-24-8 only (no DPDK).
#![deny(unsafe_code)]

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benches::cycles::{Tsc, rdtsc, tsc_hz};
use criterion::{BenchmarkId, Criterion, Throughput};
use dataplane::dpdk::Eal;
use dataplane::dpdk::peers::{RteFib, RteLpm};
use fib::{Fib, FibReader, Interface, Ipv4Prefix, Path, RouteKind};
use prefix_trie::PrefixMap;
use rand::{Rng, SeedableRng};

const KEYS: usize = 1 << 20;
/// Interleaved rounds of the summary table.
const ROUNDS: usize = 15;

/// (address, length, origin AS).
type Rib = Vec<(u32, u8, u32)>;

fn load_rib() -> Vec<(u32, u8, u32)> {
    let (rib, name) = benches::rib::load_v4_selected();
    println!("table: {name}");
    rib
}

fn kind(asn: u32) -> RouteKind {
    let gw = Ipv4Addr::from(0x0a00_0001 | (asn & 0x007f_ffff) << 1);
    RouteKind::Paths(vec![Path::gateway_on(gw, 1)])
}

fn prefix(a: u32, l: u8) -> Ipv4Prefix {
    Ipv4Prefix::new_truncated(Ipv4Addr::from(a), l).unwrap_or_else(|e| panic!("{e}"))
}

fn load_fib(rib: &Rib) -> Fib {
    let mut fib = Fib::new();
    fib.interface_set(
        1,
        Interface {
            mac: [2, 0, 0, 0, 0, 1],
            mtu: 1500,
            vlan: None,
        },
    );
    {
        let mut b = fib.batch();
        for &(a, l, asn) in rib {
            b.route_add(0, prefix(a, l), kind(asn))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    fib
}

/// A safe-Rust DIR-24-8 (`rte_lpm`'s layout without its hugepages), static build.
struct Dir248 {
    t24: Vec<u32>,
    t8: Vec<u32>,
}

impl Dir248 {
    fn new(rib: &Rib) -> Self {
        let mut sorted = rib.clone();
        sorted.sort_by_key(|p| p.1);
        let mut t24 = vec![0u32; 1 << 24];
        let mut t8: Vec<u32> = Vec::new();
        for &(a, l, asn) in &sorted {
            let v = (asn & 0x7fff_ffff).max(1);
            if l <= 24 {
                let s = (a >> 8) as usize;
                for e in &mut t24[s..s + (1 << (24 - l))] {
                    if *e & 0x8000_0000 != 0 {
                        let g = (*e & 0x7fff_ffff) as usize;
                        t8[g * 256..g * 256 + 256].fill(v);
                    } else {
                        *e = v;
                    }
                }
            } else {
                let i = (a >> 8) as usize;
                if t24[i] & 0x8000_0000 == 0 {
                    let g = t8.len() / 256;
                    let old = t24[i];
                    t8.resize(t8.len() + 256, old);
                    t24[i] = 0x8000_0000 | g as u32;
                }
                let g = (t24[i] & 0x7fff_ffff) as usize;
                let s = g * 256 + (a & 255) as usize;
                t8[s..s + (1 << (32 - l))].fill(v);
            }
        }
        Self { t24, t8 }
    }

    #[inline]
    fn lookup_burst(&self, keys: &[u32], out: &mut [u32]) {
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            let e = self.t24[(*k >> 8) as usize];
            *o = if e & 0x8000_0000 != 0 {
                self.t8[((e & 0x7fff_ffff) as usize) * 256 + (*k & 255) as usize]
            } else {
                e
            };
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Impl {
    Fib,
    RteLpm,
    RteFib,
    PrefixTrie,
    Dir248,
}

impl Impl {
    fn name(self) -> &'static str {
        match self {
            Impl::Fib => "fib",
            Impl::RteLpm => "rte_lpm",
            Impl::RteFib => "rte_fib",
            Impl::PrefixTrie => "prefix-trie",
            Impl::Dir248 => "dir24-8-safe-rust",
        }
    }
}

struct Tables {
    reader: FibReader,
    lpm: RteLpm,
    rfib: RteFib,
    trie: PrefixMap<(u32, u8), u32>,
    dir: Dir248,
}

/// One pass over all `keys` in batches of `batch`; returns a checksum.
fn pass(t: &mut Tables, which: Impl, keys: &[u32], batch: usize) -> u64 {
    let mut out = [0u32; 256];
    let mut out64 = [0u64; 256];
    let mut sum = 0u64;
    match which {
        Impl::Fib if batch == 1 => {
            for c in keys.chunks(256) {
                let v = t.reader.read();
                if let Some(tv) = v.table(0) {
                    for &k in c {
                        sum = sum.wrapping_add(u64::from(tv.lookup(k)));
                    }
                }
            }
        }
        Impl::Fib => {
            for c in keys.chunks(batch) {
                let v = t.reader.read();
                v.lookup_burst(0, c, &mut out[..c.len()]);
                sum = sum.wrapping_add(u64::from(out[0]));
            }
        }
        Impl::RteLpm if batch == 1 => {
            for &k in keys {
                sum = sum.wrapping_add(u64::from(t.lpm.lookup(k).unwrap_or(0)));
            }
        }
        Impl::RteLpm => {
            for c in keys.chunks(batch) {
                t.lpm.lookup_bulk(c, &mut out[..c.len()]);
                sum = sum.wrapping_add(u64::from(out[0]));
            }
        }
        Impl::RteFib => {
            for c in keys.chunks(batch) {
                t.rfib.lookup_bulk(c, &mut out64[..c.len()]);
                sum = sum.wrapping_add(out64[0]);
            }
        }
        Impl::PrefixTrie => {
            for &k in keys {
                sum = sum.wrapping_add(u64::from(t.trie.get_lpm(&(k, 32)).map_or(0, |x| *x.1)));
            }
        }
        Impl::Dir248 => {
            for c in keys.chunks(batch) {
                t.dir.lookup_burst(c, &mut out[..c.len()]);
                sum = sum.wrapping_add(u64::from(out[0]));
            }
        }
    }
    black_box(sum)
}

fn cases() -> Vec<(Impl, usize)> {
    let mut v = Vec::new();
    for b in [1, 32, 256] {
        v.push((Impl::Fib, b));
        v.push((Impl::RteLpm, b));
        v.push((Impl::RteFib, b));
    }
    v.push((Impl::Dir248, 256));
    v.push((Impl::PrefixTrie, 1));
    v
}

/// This thread's (on-CPU ns, ns waiting for a CPU) from `/proc/thread-self/schedstat`:
/// the writer's own cost per change, apart from time other tenants took the core.
fn sched_ns() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut f = s.split_whitespace().map(|x| x.parse().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
}

/// Route changes per second while a reader thread looks up 256-key bursts.
fn update_rate(rib: &Rib, keys: &[u32]) {
    let mut fib = load_fib(rib);
    let stop = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));
    let mut reader = fib.reader();
    let (s2, l2) = (stop.clone(), lookups.clone());
    let keys: Arc<Vec<u32>> = Arc::new(keys[..1 << 16].to_vec());
    let k2 = keys.clone();
    let h = std::thread::spawn(move || {
        let mut out = [0u32; 256];
        while !s2.load(Ordering::Relaxed) {
            for c in k2.chunks(256) {
                let v = reader.read();
                v.lookup_burst(0, c, &mut out);
                black_box(&out);
            }
            l2.fetch_add(k2.len() as u64, Ordering::Relaxed);
        }
    });
    let stats0 = std::cell::Cell::new(fib.update_stats());
    let sched0 = std::cell::Cell::new(sched_ns());
    let how = |fib: &Fib, changes: f64| {
        let (s, s0) = (fib.update_stats(), stats0.get());
        stats0.set(s);
        let ((cpu, wait), (cpu0, wait0)) = (sched_ns(), sched0.get());
        sched0.set((cpu, wait));
        format!(
            "writer on CPU {:.0} ns/change ({:.0} k changes per CPU-second), waited for a CPU {:.0} ms\n  \
             LPM: {} in place, {} new leaf-only nodes, {} new nodes at /24, {} unchanged, {} /18 regions rebuilt",
            (cpu - cpu0) as f64 / changes,
            changes / (cpu - cpu0).max(1) as f64 * 1e6,
            (wait - wait0) as f64 / 1e6,
            s.in_place - s0.in_place,
            s.new_block - s0.new_block,
            s.new_root - s0.new_root,
            s.unchanged - s0.unchanged,
            s.regions - s0.regions
        )
    };
    let rate = |l0: u64, t: Instant| {
        (lookups.load(Ordering::Relaxed) - l0) as f64 / t.elapsed().as_secs_f64() / 1e6
    };
    std::thread::sleep(Duration::from_millis(300));
    let (l0, t0) = (lookups.load(Ordering::Relaxed), Instant::now());
    std::thread::sleep(Duration::from_millis(1000));
    println!(
        "reader alone: {:.1} M lookups/s (256-key bursts, random keys)",
        rate(l0, t0)
    );

    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let n = 200_000;
    let picks: Vec<(u32, u8, u32)> = (0..n)
        .map(|_| rib[rng.random_range(0..rib.len())])
        .collect();
    let other: Vec<u32> = (0..n)
        .map(|_| rib[rng.random_range(0..rib.len())].2)
        .collect();

    // Replace: the prefix moves to another (existing) next hop, one publication each.
    how(&fib, 1.0);
    let (l0, t0) = (lookups.load(Ordering::Relaxed), Instant::now());
    for (&(a, l, _), &asn) in picks.iter().zip(&other) {
        fib.route_add(0, prefix(a, l), kind(asn))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let e = t0.elapsed();
    println!(
        "replace, one publication each: {:.0} k changes/s ({n} in {e:.2?}); reader meanwhile {:.1} M lookups/s\n  {}",
        n as f64 / e.as_secs_f64() / 1e3,
        rate(l0, t0),
        how(&fib, n as f64)
    );
    // Withdraw + re-announce (2 changes), one publication each.
    let (l0, t0) = (lookups.load(Ordering::Relaxed), Instant::now());
    let mut changes = 0;
    for &(a, l, asn) in picks.iter().take(n / 2) {
        if fib.route_del(0, prefix(a, l)).is_ok() {
            changes += 1;
        }
        fib.route_add(0, prefix(a, l), kind(asn))
            .unwrap_or_else(|e| panic!("{e}"));
        changes += 1;
    }
    let e = t0.elapsed();
    println!(
        "withdraw + announce, one publication each: {:.0} k changes/s ({changes} in {e:.2?}); reader meanwhile {:.1} M lookups/s\n  {}",
        f64::from(changes) / e.as_secs_f64() / 1e3,
        rate(l0, t0),
        how(&fib, f64::from(changes))
    );
    // Batches of 1000 replaces (a netlink burst), one publication per batch.
    let (l0, t0) = (lookups.load(Ordering::Relaxed), Instant::now());
    for (pc, oc) in picks.chunks(1000).zip(other.chunks(1000)) {
        let mut b = fib.batch();
        for (&(a, l, asn), &o) in pc.iter().zip(oc) {
            b.route_add(0, prefix(a, l), kind(o ^ asn ^ asn))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let e = t0.elapsed();
    println!(
        "replace, batches of 1000: {:.0} k changes/s ({n} in {e:.2?}); reader meanwhile {:.1} M lookups/s\n  {}",
        n as f64 / e.as_secs_f64() / 1e3,
        rate(l0, t0),
        how(&fib, n as f64)
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap_or_else(|_| panic!("reader thread"));
}

fn main() {
    let rib = load_rib();
    println!("RIB: {} prefixes", rib.len());
    let (random, from_prefixes) = draw_keys(&rib);
    let (fib, trie, dir) = load_ours(&rib);
    if std::env::var_os("LPM_OURS_ONLY").is_some() {
        return ours_only(&fib, &dir, &random, &from_prefixes);
    }
    if updates_only() == Some(0) {
        return;
    }
    update_rate(&rib, &random);
    if let Some(runs) = updates_only() {
        for _ in 1..runs {
            update_rate(&rib, &random);
        }
        return;
    }
    let (lpm, rfib) = load_dpdk(&rib);
    let mut t = Tables {
        reader: fib.reader(),
        lpm,
        rfib,
        trie,
        dir,
    };
    spot_check(&mut t, &random);
    criterion_runs(&mut t, &random, &from_prefixes);
    summary(&mut t, &random, &from_prefixes);
}

/// `LPM_OURS_ONLY=1`: `fib` against the safe-Rust DIR-24-8 at batch 256 on both
/// key sets, without DPDK (whose `rte_lpm` takes minutes to load a full table):
/// for iterating on the lookup.
fn ours_only(fib: &Fib, dir: &Dir248, random: &[u32], from_prefixes: &[u32]) {
    let hz = tsc_hz() as f64;
    let mut reader = fib.reader();
    let mut out = [0u32; 256];
    for (name, keys) in [("random", random), ("prefix", from_prefixes)] {
        let (mut ours, mut peer) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t0 = rdtsc();
            for c in keys.chunks(256) {
                let v = reader.read();
                v.lookup_burst(0, c, &mut out[..c.len()]);
                black_box(&out);
            }
            ours.push(rdtsc() - t0);
            let t0 = rdtsc();
            for c in keys.chunks(256) {
                dir.lookup_burst(c, &mut out[..c.len()]);
                black_box(&out);
            }
            peer.push(rdtsc() - t0);
        }
        ours.sort_unstable();
        peer.sort_unstable();
        let (o, d) = (
            ours[ROUNDS / 2] as f64 / keys.len() as f64,
            peer[ROUNDS / 2] as f64 / keys.len() as f64,
        );
        println!(
            "{name} keys, batch 256: fib {o:.1} cycles ({:.1} M/s), dir24-8 {d:.1}: {:.2}x",
            hz / o / 1e6,
            d / o
        );
    }
}

/// The two key sets, [`KEYS`] each: uniformly random addresses, and addresses
/// drawn from `rib`'s prefixes (a random prefix, then a random host inside it).
fn draw_keys(rib: &Rib) -> (Vec<u32>, Vec<u32>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let random: Vec<u32> = (0..KEYS).map(|_| rng.random()).collect();
    let from_prefixes: Vec<u32> = (0..KEYS)
        .map(|_| {
            let (a, l, _) = rib[rng.random_range(0..rib.len())];
            let host = if l == 0 {
                u32::MAX
            } else {
                !(u32::MAX << (32 - u32::from(l)))
            };
            a | (rng.random::<u32>() & host)
        })
        .collect();
    (random, from_prefixes)
}

/// Loads `rib` into `fib`, `prefix-trie` and the safe-Rust DIR-24-8, printing
/// load times and memory. Runs before EAL, whose init pins this thread.
fn load_ours(rib: &Rib) -> (Fib, PrefixMap<(u32, u8), u32>, Dir248) {
    let t0 = Instant::now();
    let fib = load_fib(rib);
    let fib_load = t0.elapsed();
    let mem = fib.memory();
    let t0 = Instant::now();
    let mut trie = PrefixMap::<(u32, u8), u32>::new();
    for &(a, l, asn) in rib {
        trie.insert((a, l), asn);
    }
    let trie_load = t0.elapsed();
    let t0 = Instant::now();
    let dir = Dir248::new(rib);
    let dir_load = t0.elapsed();
    println!(
        "load: fib {fib_load:.2?} (batch, incl. path lists), prefix-trie {trie_load:.2?}, dir24-8 safe Rust {dir_load:.2?}"
    );
    println!(
        "fib memory: LPM {:.2} MiB, forwarding objects {:.2} MiB, control plane {:.2} MiB; {} path lists",
        mem.lpm_bytes as f64 / 1048576.0,
        mem.fwd_bytes as f64 / 1048576.0,
        mem.control_bytes as f64 / 1048576.0,
        fib.path_list_count()
    );
    println!(
        "dir24-8 memory: {:.2} MiB ({} tbl8 groups)",
        (dir.t24.len() * 4 + dir.t8.len() * 4) as f64 / 1048576.0,
        dir.t8.len() / 256
    );
    (fib, trie, dir)
}

/// With `LPM_UPDATES_ONLY` set, how many runs of the update measurement to make
/// in all (its value, else 1): the run then stops after the load and update
/// figures (no EAL, no lookups), for iterating on the writer; 0 stops after
/// the load.
fn updates_only() -> Option<usize> {
    std::env::var_os("LPM_UPDATES_ONLY")?;
    Some(
        std::env::var("LPM_UPDATES_ONLY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1),
    )
}

/// Starts EAL and loads `rib` into `rte_lpm` and `rte_fib` (one add per prefix),
/// printing load times and memory.
fn load_dpdk(rib: &Rib) -> (RteLpm, RteFib) {
    let eal = Eal::init(&[
        "lpm-bench",
        "--no-pci",
        "--in-memory",
        "-l",
        "0",
        "--log-level=*:error",
    ])
    .unwrap_or_else(|e| panic!("EAL: {e}"));
    let tbl8 = 1 << 14;
    let mut lpm = RteLpm::new(eal, "bench_lpm", 1 << 20, tbl8).unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    for &(a, l, asn) in rib {
        lpm.add(a, l, asn & 0xff_ffff)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let lpm_load = t0.elapsed();
    let mut rfib =
        RteFib::new(eal, "bench_fib", 1 << 20, tbl8, 0).unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    for &(a, l, asn) in rib {
        rfib.add(a, l, u64::from(asn))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let rfib_load = t0.elapsed();
    println!("load: rte_lpm {lpm_load:.2?}, rte_fib {rfib_load:.2?} (one add per prefix)");
    println!("rte_lpm/rte_fib memory: tbl24 64 MiB + {tbl8} tbl8 groups x 1 KiB (as configured)");
    (lpm, rfib)
}

/// Same answers (spot check on the first 10,000 keys): fib's result ids differ
/// from AS numbers, so compare "matched or not" with `rte_lpm`. Panics on a
/// mismatch.
fn spot_check(t: &mut Tables, keys: &[u32]) {
    for &k in keys.iter().take(10_000) {
        let v = t.reader.read();
        assert_eq!(
            v.lookup(0, k) != 0,
            t.lpm.lookup(k).is_some(),
            "{}",
            Ipv4Addr::from(k)
        );
    }
}

/// The criterion groups `lpm/random` and `lpm/prefix`: every case of [`cases`]
/// on each key set, in TSC cycles.
fn criterion_runs(t: &mut Tables, random: &[u32], from_prefixes: &[u32]) {
    let mut c = Criterion::default()
        .with_measurement(Tsc)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    for (name, keys) in [("random", random), ("prefix", from_prefixes)] {
        let mut g = c.benchmark_group(format!("lpm/{name}"));
        g.throughput(Throughput::Elements(KEYS as u64));
        for (which, batch) in cases() {
            g.bench_function(BenchmarkId::new(which.name(), batch), |b| {
                b.iter_custom(|iters| {
                    let t0 = rdtsc();
                    for _ in 0..iters {
                        pass(t, which, keys, batch);
                    }
                    rdtsc() - t0
                })
            });
        }
        g.finish();
    }
    c.final_summary();
}

/// The summary table: per key set, [`ROUNDS`] rounds with every case once per
/// round (interleaved, so noise from other tenants spreads over all cases),
/// median and best pass per case against `rte_lpm`.
fn summary(t: &mut Tables, random: &[u32], from_prefixes: &[u32]) {
    let hz = tsc_hz() as f64;
    println!(
        "\nLPM lookups, 2^20 keys per pass, {ROUNDS} interleaved rounds, TSC {:.2} GHz",
        hz / 1e9
    );
    println!(
        "| keys | impl | batch | cycles/lookup (median) | M lookups/s (median) | vs rte_lpm (median) | M lookups/s (best) | vs rte_lpm (best) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (name, keys) in [("random", random), ("prefix", from_prefixes)] {
        let rows = interleaved(t, keys);
        print_rows(name, &rows, hz);
    }
}

/// [`ROUNDS`] rounds over `keys`, every case of [`cases`] once per round. Returns
/// per case its implementation, batch, and cycles per lookup (median, best pass).
fn interleaved(t: &mut Tables, keys: &[u32]) -> Vec<(Impl, usize, f64, f64)> {
    let cs = cases();
    let mut samples: Vec<Vec<u64>> = vec![Vec::new(); cs.len()];
    for _ in 0..ROUNDS {
        for (j, &(which, batch)) in cs.iter().enumerate() {
            let t0 = rdtsc();
            pass(t, which, keys, batch);
            samples[j].push(rdtsc() - t0);
        }
    }
    cs.iter()
        .zip(samples.iter_mut())
        .map(|(&(w, b), v)| {
            v.sort_unstable();
            (
                w,
                b,
                v[ROUNDS / 2] as f64 / KEYS as f64,
                v[0] as f64 / KEYS as f64,
            )
        })
        .collect()
}

/// Prints the summary rows of key set `name`, each against `rte_lpm` at the same
/// batch (else at 256).
fn print_rows(name: &str, rows: &[(Impl, usize, f64, f64)], hz: f64) {
    for &(which, batch, med, best) in rows {
        let base = rows
            .iter()
            .find(|r| r.0 == Impl::RteLpm && r.1 == batch)
            .or_else(|| rows.iter().find(|r| r.0 == Impl::RteLpm && r.1 == 256))
            .map_or((med, best), |r| (r.2, r.3));
        println!(
            "| {name} | {} | {batch} | {med:.1} | {:.1} | {:.2}x | {:.1} | {:.2}x |",
            which.name(),
            hz / med / 1e6,
            base.0 / med,
            hz / best / 1e6,
            base.1 / best
        );
    }
}
