//! `fib::Lpm6Table` loaded whole against a naive reference (one hash map per prefix
//! length): the 2024 table's IPv6 prefixes (or a synthetic table of its shape) with
//! every prefix's first and last address and their neighbours plus 200,000 random
//! keys, through a reader (batched and one key at a time) and the writer's lookup;
//! and random small tables with /0, /128 and nested prefixes, with removals.
//! (Changes to a loaded table: `lpm6_updates.rs`.)

mod common;
#[path = "lpm6/fib6.rs"]
mod fib6;

use std::net::Ipv6Addr;

use common::{Reference6, check6 as check, edges, load_v6_2024, mask6, prefix6};
use fib::{Ipv6Prefix, Lpm6Table, Lpm6Trie};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

#[test]
fn full_table_matches_reference() {
    let table = load_v6_2024();
    assert!(table.len() > 150_000, "{} prefixes", table.len());
    let mut reference = Reference6::new();
    let mut trie = Lpm6Trie::new();
    for &(p, v) in &table {
        reference.insert(p, v);
        trie.insert(p, v);
    }
    let mut keys = edges(&table);
    let mut rng = rand::rngs::StdRng::seed_from_u64(61);
    for _ in 0..100_000 {
        let (p, _) = table[rng.random_range(0..table.len())];
        keys.push(p.addr_u128() | (rng.random::<u128>() & !mask6(p.prefix_len())));
    }
    keys.extend((0..100_000).map(|_| rng.random::<u128>() >> rng.random_range(0..4)));
    let want: Vec<u32> = keys.iter().map(|&k| reference.lookup(k)).collect();
    for (&k, &w) in keys.iter().zip(&want).step_by(7) {
        assert_eq!(trie.lookup(k), w, "trie: {}", Ipv6Addr::from(k));
    }
    check(&Lpm6Table::from_trie(trie), &keys, &want);
}

/// The stand-in used without the shared data (more routes past /48 than the real
/// table: the walks below the fixed levels get exercised).
#[test]
fn synthetic_table_matches_reference() {
    let table = common::synthetic_v6(40_000);
    let mut reference = Reference6::new();
    let mut trie = Lpm6Trie::new();
    for &(p, v) in &table {
        reference.insert(p, v);
        trie.insert(p, v);
    }
    let keys = edges(&table);
    let want: Vec<u32> = keys.iter().map(|&k| reference.lookup(k)).collect();
    check(&Lpm6Table::from_trie(trie), &keys, &want);
}

#[test]
fn full_table_loads_fast_and_small() {
    let table = load_v6_2024();
    let t0 = std::time::Instant::now();
    let mut trie = Lpm6Trie::new();
    for &(p, v) in &table {
        trie.insert(p, v);
    }
    let lpm = Lpm6Table::from_trie(trie);
    let took = t0.elapsed();
    let per_prefix = lpm.memory_bytes().0 / table.len();
    eprintln!("full IPv6 table: {took:.2?}, {per_prefix} B/prefix");
    // (the bound on load time is the bench's: a debug-profile test on a shared
    // machine only guards against a blow-up)
    assert!(took.as_secs_f64() < 5.0, "load took {took:.2?}");
    // The real table's prefixes cluster (298 B each, free room included); the
    // synthetic stand-in's are spread evenly and share fewer nodes.
    let real = common::shared_data("prefixes-2024-v4v6.txt.gz").is_some();
    let bound = if real { 350 } else { 1600 };
    assert!(per_prefix <= bound, "{per_prefix} B/prefix");
}

#[test]
fn empty_default_and_host_routes() {
    let p = |s: &str| s.parse::<Ipv6Prefix>().unwrap_or_else(|e| panic!("{e}"));
    let mut trie = Lpm6Trie::new();
    check(
        &Lpm6Table::from_trie(trie.clone()),
        &[0, u128::MAX],
        &[0, 0],
    );
    trie.insert(p("::/0"), 7);
    trie.insert(p("::/128"), 8);
    trie.insert(p("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), 9);
    trie.insert(p("8000::/1"), 10);
    check(
        &Lpm6Table::from_trie(trie.clone()),
        &[0, 1, u128::MAX, u128::MAX - 1, 1 << 127, (1 << 127) - 1],
        &[8, 7, 9, 10, 10, 7],
    );
    assert_eq!(trie.remove(p("::/0")), Some(7));
    assert_eq!(trie.remove(p("::/0")), None);
    check(
        &Lpm6Table::from_trie(trie),
        &[0, 1, (1 << 127) - 1, 1 << 127],
        &[8, 0, 0, 10],
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn prop_lpm6_matches_reference(
        adds in proptest::collection::vec((prefix6(), 1u32..1000), 0..60),
        removes in proptest::collection::vec(any::<prop::sample::Index>(), 0..10),
        extra in proptest::collection::vec(any::<u128>(), 0..20),
    ) {
        let mut reference = Reference6::new();
        let mut trie = Lpm6Trie::new();
        for &(p, v) in &adds {
            reference.insert(p, v);
            trie.insert(p, v);
        }
        if !adds.is_empty() {
            for i in &removes {
                let (p, _) = adds[i.index(adds.len())];
                prop_assert_eq!(trie.remove(p), reference.remove(p));
            }
        }
        let mut keys = edges(&adds);
        keys.extend(extra);
        let want: Vec<u32> = keys.iter().map(|&k| reference.lookup(k)).collect();
        check(&Lpm6Table::from_trie(trie), &keys, &want);
    }
}
