//! Every prefix with a result of its own: a PE that gives each route its own
//! out-label (BGP labelled unicast, a full table in a VRF with per-prefix VPN
//! labels) holds as many distinct results as prefixes. Each answer is decoded
//! through the FIB's own API (result id → bucket → leg → labels) back to the
//! prefix it names and compared with a plain longest-prefix reference: no result
//! id may alias another's, in any lookup style, after any way of loading, and
//! while readers run through the arrays' growth.

mod common;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fib::{Fib, FibView, Ipv4Prefix, Path, RouteKind};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// The next hop every route resolves through (covered by the connected 10/8).
const GW: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// Prefix number `i` as a two-label stack (1.2 M prefixes need more than the
/// 2^20 - 16 values of one label).
fn kind(i: usize) -> RouteKind {
    let labels = [16 + (i >> 10) as u32, 16 + (i & 1023) as u32];
    RouteKind::Paths(vec![Path::gateway(GW).with_labels(&labels)])
}

/// The prefix number + 1 an answer names (0: no route; `u32::MAX`: an answer no
/// route of this test gives).
fn decode(v: &FibView<'_>, id: u32) -> u32 {
    if id == 0 {
        return 0;
    }
    let mut l = [0u32; fib::MAX_LABELS];
    match v.leg(id, 0).labels_into(&mut l) {
        2 => (((l[0] - 16) << 10) | (l[1] - 16)) + 1,
        _ => u32::MAX,
    }
}

/// A FIB with interface 1 and 10.0.0.0/8 connected on it.
fn fib() -> Fib {
    let mut fib = common::fib_with_port();
    fib.route_add(
        0,
        "10.0.0.0/8".parse().expect("prefix"),
        RouteKind::Connected { ifindex: 1 },
    )
    .expect("connected");
    fib
}

/// The table's prefixes outside 10/8 (the next hop's own route stays put).
fn prefixes(table: Vec<Ipv4Prefix>) -> Vec<Ipv4Prefix> {
    table
        .into_iter()
        .filter(|p| p.prefix_len() >= 8 && p.addr_u32() >> 24 != 10)
        .collect()
}

/// Random addresses and every prefix's first and last address, each ±1.
fn probes(table: &[Ipv4Prefix], rng: &mut impl Rng) -> Vec<u32> {
    let mut out: Vec<u32> = (0..500_000).map(|_| rng.random()).collect();
    for p in table {
        let (a, z) = (p.addr_u32(), p.last());
        out.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1)]);
    }
    out.retain(|a| a >> 24 != 10);
    out
}

/// Wrong answers among `probes` looked up in bursts of 256 (the workers' way);
/// with `styles`, also in bursts of random sizes (some past 256), the whole
/// vector at once and one at a time.
fn wrong(
    fib: &Fib,
    reference: &common::Reference,
    probes: &[u32],
    styles: bool,
    rng: &mut impl Rng,
) -> usize {
    let want: Vec<u32> = probes.iter().map(|&a| reference.lookup(a)).collect();
    let mut r = fib.reader();
    let v = r.read();
    let t = v.table(0).expect("table 0");
    let mut out = vec![0u32; probes.len()];
    let mut bad = 0;
    let mut tally = |style: &str, out: &[u32]| {
        for (k, (&id, &w)) in out.iter().zip(&want).enumerate() {
            let got = decode(&v, id);
            if got != w {
                bad += 1;
                if bad <= 5 {
                    eprintln!(
                        "{style}: {} -> result {id} names prefix {got}, want {w}",
                        Ipv4Addr::from(probes[k])
                    );
                }
            }
        }
    };
    for (c, o) in probes.chunks(256).zip(out.chunks_mut(256)) {
        t.lookup_burst(c, o);
    }
    tally("burst", &out);
    if !styles {
        return bad;
    }
    let mut i = 0;
    while i < probes.len() {
        let n = rng.random_range(1..=600).min(probes.len() - i);
        t.lookup_burst(&probes[i..i + n], &mut out[i..i + n]);
        i += n;
    }
    tally("mixed", &out);
    out.fill(0);
    t.lookup_burst(probes, &mut out);
    tally("whole", &out);
    for (o, &a) in out.iter_mut().zip(probes) {
        *o = t.lookup(a);
    }
    tally("single", &out);
    bad
}

/// Loads `table` with a result per prefix (a batch), withdraws half of it and
/// adds it back one route at a time, and checks every answer after each step.
/// (Random single adds from empty, across every growth of the arrays, are
/// [`readers_never_see_an_aliased_result_during_growth`]'s.)
fn check_table(table: Vec<Ipv4Prefix>, seed: u64) {
    let table = prefixes(table);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let probes = probes(&table, &mut rng);
    let mut reference = common::Reference::new();
    for (i, p) in table.iter().enumerate() {
        reference.insert(*p, i as u32 + 1);
    }

    // A batch load, in the table's order.
    let mut fib = fib();
    let base = fib.result_count();
    {
        let mut b = fib.batch();
        for (i, p) in table.iter().enumerate() {
            b.route_add(0, *p, kind(i)).expect("add");
        }
    }
    assert_eq!(
        fib.result_count(),
        table.len() + base,
        "one result per prefix"
    );
    eprintln!("{} prefixes, memory {:?}", table.len(), fib.memory());
    assert_eq!(
        wrong(&fib, &reference, &probes, false, &mut rng),
        0,
        "batch load"
    );
    let sample: Vec<u32> = probes.iter().copied().step_by(7).collect();
    assert_eq!(
        wrong(&fib, &reference, &sample, true, &mut rng),
        0,
        "every lookup style"
    );

    // Half withdrawn one by one in random order, then added back the same way
    // (new results in the ids the withdrawn ones freed).
    let mut order: Vec<usize> = (0..table.len()).collect();
    order.shuffle(&mut rng);
    let half = &order[..order.len() / 2];
    for &i in half {
        fib.route_del(0, table[i]).expect("del");
        reference.remove(table[i]);
    }
    assert_eq!(
        wrong(&fib, &reference, &probes, false, &mut rng),
        0,
        "half withdrawn"
    );
    for &i in half.iter().rev() {
        fib.route_add(0, table[i], kind(i)).expect("add");
        reference.insert(table[i], i as u32 + 1);
    }
    assert_eq!(
        wrong(&fib, &reference, &probes, false, &mut rng),
        0,
        "half added back"
    );
}

/// The 2024 table's 901,899 IPv4 prefixes (`shared/data/`), when present.
#[test]
fn every_prefix_its_own_result_2024_table() {
    match common::load_prefixes_2024() {
        Some(t) => check_table(t, 2024),
        None => eprintln!("prefixes-2024-v4v6.txt.gz not found: covered by the synthetic table"),
    }
}

/// 1.2 M prefixes with the 2024 table's length mix: in place of the 2024 table
/// when it is absent, and with it under `DISTINCT_ALL=1` (`make soak`).
#[test]
fn every_prefix_its_own_result_synthetic_1_2m() {
    if common::load_prefixes_2024().is_some() && std::env::var_os("DISTINCT_ALL").is_none() {
        eprintln!("the 2024 table was checked: DISTINCT_ALL=1 checks 1.2 M synthetic prefixes too");
        return;
    }
    check_table(common::synthetic_2024(1_200_000), 12)
}

/// Readers check every answer while the writer adds and withdraws per-prefix
/// results one by one across the arrays' growth: each answer must name a prefix
/// that covers the address (some moment's answer), never another.
#[test]
fn readers_never_see_an_aliased_result_during_growth() {
    let table = prefixes(common::synthetic_2024(600_000));
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut probes: Vec<u32> = Vec::new();
    for _ in 0..8192 {
        let p = table[rng.random_range(0..table.len())];
        probes.push(p.addr_u32() | (rng.random::<u32>() & !common::mask(p)));
        probes.push(rng.random());
    }
    probes.retain(|a| a >> 24 != 10);
    let mut reference = common::Reference::new();
    for (i, p) in table.iter().enumerate() {
        reference.insert(*p, i as u32 + 1);
    }
    let allowed: Arc<Vec<Vec<u32>>> =
        Arc::new(probes.iter().map(|&a| reference.covering(a)).collect());
    let probes = Arc::new(probes);
    let mut fib = fib();
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let handles = {
        let p = probes.clone();
        common::spawn_readers(&fib, &probes, &done, &checked, move |v, k, id| {
            let got = decode(v, id);
            assert!(
                got == 0 || allowed[k].contains(&got),
                "{} -> result {id} names prefix {got}, covered by {:?}",
                Ipv4Addr::from(p[k]),
                allowed[k]
            );
        })
    };
    let mut order: Vec<usize> = (0..table.len()).collect();
    order.shuffle(&mut rng);
    for &i in &order {
        fib.route_add(0, table[i], kind(i)).expect("add");
    }
    for &i in order.iter().step_by(3) {
        fib.route_del(0, table[i]).expect("del");
    }
    for &i in order.iter().step_by(3) {
        fib.route_add(0, table[i], kind(i)).expect("add");
    }
    done.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("reader");
    }
    assert!(checked.load(Ordering::Relaxed) > 10_000);
}

/// Past the result limit a route is refused with a clear error and counted;
/// nothing already installed moves, and a freed result makes room again.
#[test]
fn results_past_the_limit_are_refused_not_aliased() {
    let mut fib = fib();
    let base = fib.result_count();
    fib.set_result_limit(base + 1000);
    let table = prefixes(common::synthetic_2024(2000));
    let mut added = Vec::new();
    for (i, p) in table.iter().enumerate() {
        match fib.route_add(0, *p, kind(i)) {
            Ok(_) => added.push(i),
            Err(e) => {
                assert_eq!(e, fib::FibError::ResultsFull(base + 1000));
                assert!(
                    fib.route(0, *p).is_none(),
                    "a refused route is not installed"
                );
            }
        }
    }
    assert_eq!(added.len(), 1000);
    assert_eq!(fib.results_refused(), (table.len() - 1000) as u64);
    // A route that shares an existing result still fits.
    let extra: Ipv4Prefix = "10.200.0.0/16".parse().expect("prefix");
    fib.route_add(0, extra, kind(added[0]))
        .expect("shared result");
    let mut reference = common::Reference::new();
    for &i in &added {
        reference.insert(table[i], i as u32 + 1);
    }
    let probes: Vec<u32> = table
        .iter()
        .flat_map(|p| [p.addr_u32(), p.last()])
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    assert_eq!(wrong(&fib, &reference, &probes, true, &mut rng), 0);
    // Withdrawing one makes room for one.
    fib.route_del(0, table[added[1]]).expect("del");
    let refused = table
        .iter()
        .position(|p| fib.route(0, *p).is_none() && *p != table[added[1]]);
    let j = refused.expect("a refused prefix");
    fib.route_add(0, table[j], kind(j)).expect("room again");
}

/// Prefixes for the growth test: half with the 2024 mix, half longer than /24
/// (they make the lookup's nodes and leaves grow as well).
fn growth_prefixes(n: usize, seed: u64) -> Vec<Ipv4Prefix> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Ipv4Prefix> = prefixes(common::synthetic_2024(n / 2));
    out.retain(|p| seen.insert(*p));
    while out.len() < n {
        let len = rng.random_range(25..=32);
        let p = Ipv4Prefix::new_truncated(Ipv4Addr::from(rng.random::<u32>()), len).expect("len");
        if p.addr_u32() >> 24 != 10 && seen.insert(p) {
            out.push(p);
        }
    }
    out.shuffle(&mut rng);
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 3, ..Default::default() })]

    /// The result count is walked up through every power of two from 2^10 to
    /// 2^15 (the arrays' first sizes up to 32 times them) and back down, stopping
    /// at 2^k - 1, 2^k and 2^k + 1 each way with adds and withdrawals mixed in
    /// random runs, while two readers check every answer names a prefix covering
    /// its address; at each stop every answer equals the reference.
    #[test]
    fn growth_across_every_boundary(seed in 0u64..u64::MAX, jitter in 1usize..64) {
        let table = growth_prefixes((1 << 15) + 256, seed);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut all = common::Reference::new();
        for (i, p) in table.iter().enumerate() {
            all.insert(*p, i as u32 + 1);
        }
        let mut probes: Vec<u32> = table.iter().flat_map(|p| [p.addr_u32(), p.last()]).collect();
        probes.extend((0..4096).map(|_| rng.random::<u32>()));
        probes.retain(|a| a >> 24 != 10);
        let allowed: Arc<Vec<Vec<u32>>> =
            Arc::new(probes.iter().map(|&a| all.covering(a)).collect());
        let probes = Arc::new(probes);
        let mut fib = fib();
        let base = fib.result_count();
        let done = Arc::new(AtomicBool::new(false));
        let checked = Arc::new(AtomicU64::new(0));
        let handles = common::spawn_readers(&fib, &probes, &done, &checked, move |v, k, id| {
            let got = decode(v, id);
            assert!(got == 0 || allowed[k].contains(&got), "result {id} names prefix {got}");
        });
        let mut stops: Vec<usize> = (10..=15)
            .flat_map(|k| [(1usize << k) - 1, 1 << k, (1 << k) + 1])
            .collect();
        let down: Vec<usize> = stops.iter().rev().skip(1).copied().collect();
        stops.extend(down);
        let mut reference = common::Reference::new();
        let (mut live, mut absent): (Vec<usize>, Vec<usize>) = (Vec::new(), (0..table.len()).collect());
        for want in stops {
            while live.len() != want {
                // A run of adds or withdrawals of up to `jitter` routes, biased
                // towards the stop, may overshoot it by a few and come back.
                let add = (live.len() < want) == (rng.random_range(0..4) != 0);
                for _ in 0..rng.random_range(1..=jitter) {
                    let (from, to) = if add { (&mut absent, &mut live) } else { (&mut live, &mut absent) };
                    if from.is_empty() {
                        break;
                    }
                    let i = from.swap_remove(rng.random_range(0..from.len()));
                    to.push(i);
                    if add {
                        fib.route_add(0, table[i], kind(i)).expect("add");
                        reference.insert(table[i], i as u32 + 1);
                    } else {
                        fib.route_del(0, table[i]).expect("del");
                        reference.remove(table[i]);
                    }
                    if live.len() == want {
                        break;
                    }
                }
            }
            proptest::prop_assert_eq!(fib.result_count(), want + base);
            proptest::prop_assert_eq!(wrong(&fib, &reference, &probes, false, &mut rng), 0, "at {} results", want);
        }
        done.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().expect("reader");
        }
    }
}
