//! `fib::Lpm6Table`, the IPv6 lookup changed while readers read it, against the
//! naive reference: random changes of nested prefixes (/0 to /128, every eighth of
//! the address space) committed at random points; the 2024 table (or its
//! stand-in) loaded half whole and half one prefix at a time, each prefix with its
//! own result, then withdrawn and announced again in part; and readers on other
//! threads checking every answer while a table grows from empty and churns.

mod common;

use std::net::Ipv6Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{Reference6, edges, load_v6_2024, mask6, prefix6};
use fib::{Ipv6Prefix, Lpm6Table, Lpm6Trie};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// Checks the table against the reference on `keys`.
fn check(t: &Lpm6Table, reference: &Reference6, keys: &[u128]) {
    let want: Vec<u32> = keys.iter().map(|&k| reference.lookup(k)).collect();
    common::check6(t, keys, &want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Any sequence of adds, replacements and removals, committed at any points,
    /// leaves the table answering as the reference does.
    #[test]
    fn prop_lpm6_table_updates_match_reference(
        ops in proptest::collection::vec(
            (prefix6(), 1u32..1000, 0u8..6, any::<prop::sample::Index>()),
            1..80,
        ),
        extra in proptest::collection::vec(any::<u128>(), 0..20),
    ) {
        let mut reference = Reference6::new();
        let mut t = Lpm6Table::new();
        let used: Vec<(Ipv6Prefix, u32)> = ops.iter().map(|&(p, v, ..)| (p, v)).collect();
        let mut keys = edges(&used);
        keys.extend(extra);
        for (i, &(p, v, action, earlier)) in ops.iter().enumerate() {
            // 0, 1: withdraw a prefix added before (1: and commit); 2: add and
            // commit; else add.
            if action < 2 && i > 0 {
                let (q, _) = used[earlier.index(i)];
                prop_assert_eq!(t.remove(q), reference.remove(q));
            } else {
                t.insert(p, v);
                reference.insert(p, v);
            }
            if action == 1 || action == 2 {
                t.commit();
                check(&t, &reference, &keys);
            }
        }
        t.commit();
        check(&t, &reference, &keys);
    }
}

/// Probes: every prefix's edges, random keys inside the table's prefixes, random
/// keys anywhere.
fn probes(table: &[(Ipv6Prefix, u32)], rng: &mut impl Rng) -> Vec<u128> {
    let mut keys = edges(table);
    for _ in 0..100_000 {
        let (p, _) = table[rng.random_range(0..table.len())];
        keys.push(p.addr_u128() | (rng.random::<u128>() & !mask6(p.prefix_len())));
    }
    keys.extend((0..50_000).map(|_| rng.random::<u128>() >> rng.random_range(0..4)));
    keys
}

/// The full table, each prefix its own result: half loaded whole, half added one
/// commit per prefix and then in batches; a third withdrawn and announced again;
/// a default route and a /16 over many regions changed on the way.
#[test]
fn full_table_changed_in_place_matches_reference() {
    let mut table = load_v6_2024();
    let mut rng = rand::rngs::StdRng::seed_from_u64(62);
    table.shuffle(&mut rng);
    let (first, second) = table.split_at(table.len() / 2);
    let mut trie = Lpm6Trie::new();
    let mut reference = Reference6::new();
    for &(p, v) in first {
        trie.insert(p, v);
        reference.insert(p, v);
    }
    let mut t = Lpm6Table::from_trie(trie);
    for (i, &(p, v)) in second.iter().enumerate() {
        t.insert(p, v);
        reference.insert(p, v);
        if i < 20_000 || i % 1000 == 0 {
            t.commit();
        }
    }
    let default: Ipv6Prefix = "::/0".parse().expect("prefix");
    let wide: Ipv6Prefix = "2a00::/16".parse().expect("prefix");
    for (p, v) in [(default, 0x7fff_0001), (wide, 0x7fff_0002)] {
        t.insert(p, v);
        reference.insert(p, v);
        t.commit();
    }
    t.commit();
    let keys = probes(&table, &mut rng);
    check(&t, &reference, &keys);
    for &(p, _) in table.iter().step_by(3) {
        assert!(t.remove(p).is_some());
        reference.remove(p);
    }
    t.remove(wide);
    reference.remove(wide);
    t.commit();
    check(&t, &reference, &keys);
    for (i, &(p, v)) in table.iter().step_by(3).enumerate() {
        t.insert(p, v);
        reference.insert(p, v);
        if i % 7 == 0 {
            t.commit();
        }
    }
    t.commit();
    check(&t, &reference, &keys);
    let s = t.stats();
    eprintln!("{s:?}, memory {:?}", t.memory_bytes());
    assert!(s.nodes > 0 && s.stored > 0, "{s:?}");
}

/// Two readers check every answer (0, or the result of a prefix covering the key)
/// while the writer fills a table from empty one prefix per commit (whole
/// rebuilds, copies into larger arrays) and then withdraws and announces prefixes
/// and a default route at random.
#[test]
fn readers_see_only_covering_routes_while_the_table_changes() {
    let mut table = common::synthetic_v6(30_000);
    let mut rng = rand::rngs::StdRng::seed_from_u64(63);
    table.shuffle(&mut rng);
    let default: Ipv6Prefix = "::/0".parse().expect("prefix");
    let mut all = Reference6::new();
    for &(p, v) in &table {
        all.insert(p, v);
    }
    let keys = probes(&table, &mut rng);
    // The results allowed for each key: those of every prefix covering it.
    let allowed: Arc<Vec<Vec<u32>>> = Arc::new(
        keys.iter()
            .map(|&k| {
                let mut ids = vec![0, u32::MAX >> 1];
                for len in 0..=128u8 {
                    let p = Ipv6Prefix::new_truncated(Ipv6Addr::from(k), len).expect("len");
                    ids.extend(all.exact(p));
                }
                ids
            })
            .collect(),
    );
    let keys = Arc::new(keys);
    let mut t = Lpm6Table::new();
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let mut r = t.reader();
            let (keys, allowed, done, checked) =
                (keys.clone(), allowed.clone(), done.clone(), checked.clone());
            std::thread::spawn(move || {
                let mut out = [0u32; 256];
                let mut n = 0u64;
                // (at least one whole pass, however late the thread starts)
                loop {
                    let last = done.load(Ordering::Relaxed);
                    for (c, chunk) in keys.chunks(256).enumerate() {
                        r.lookup_burst(chunk, &mut out);
                        for (i, &id) in out[..chunk.len()].iter().enumerate() {
                            let k = c * 256 + i;
                            assert!(
                                allowed[k].contains(&id),
                                "{} -> {id}, allowed {:?}",
                                Ipv6Addr::from(keys[k]),
                                allowed[k]
                            );
                            n += 1;
                        }
                    }
                    if last {
                        break;
                    }
                }
                checked.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    for &(p, v) in &table {
        t.insert(p, v);
        t.commit();
    }
    let mut live: Vec<bool> = vec![true; table.len()];
    for step in 0..60_000usize {
        if step % 5000 == 0 {
            if step % 10_000 == 0 {
                t.insert(default, u32::MAX >> 1);
            } else {
                t.remove(default);
            }
        }
        let i = rng.random_range(0..table.len());
        let (p, v) = table[i];
        if live[i] {
            t.remove(p);
        } else {
            t.insert(p, v);
        }
        live[i] = !live[i];
        t.commit();
    }
    done.store(true, Ordering::Relaxed);
    for h in readers {
        h.join().expect("reader");
    }
    let s = t.stats();
    eprintln!("{s:?}, {} answers checked", checked.load(Ordering::Relaxed));
    assert!(checked.load(Ordering::Relaxed) > 100_000);
    assert!(s.grown > 0 && s.rebuilt > 0 && s.nodes > 0, "{s:?}");
}

/// The tree structure's edges: routes shorter than the direct level (::/0, /3, /15),
/// at it and just below (/16, /17), at the level boundaries and across them (/47,
/// /48, /49, /64, /80, /81, /112, /113, /127, /128), adjacent /48 blocks, the last
/// blocks and addresses of a /16 and of the address space, a /32 dense enough for a
/// four-node-tall tree, a /48 with enough longer routes for its own tall tree; then
/// covers withdrawn and announced again, and every route withdrawn, one commit each.
#[test]
fn tree_edges_match_reference() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(48);
    let mut routes: Vec<(Ipv6Prefix, u32)> = Vec::new();
    let mut add = |a: u128, len: u8| {
        let p = Ipv6Prefix::new_truncated(Ipv6Addr::from(a), len).expect("prefix");
        let id = routes.len() as u32 + 1;
        routes.push((p, id));
    };
    let dense: u128 = 0x2001_0db8 << 96;
    for l in [
        0u8, 3, 15, 16, 17, 32, 47, 48, 49, 64, 80, 81, 112, 113, 127, 128,
    ] {
        add(dense | 0x1234_5678_9abc_def0_1234_5678, l);
        add(u128::MAX, l);
        add(0x2a02_ffff_ffff << 80, l);
    }
    for i in 0..6000u128 {
        // (adjacent /48s, with gaps, under one /32: about 12,000 intervals)
        add(dense | (i * 3 / 2) << 80, 48);
    }
    let deep: u128 = dense | 0x77 << 80;
    for i in 0..3000u128 {
        add(deep | rng.random::<u64>() as u128 >> 16 << 64, 64);
        add(deep | i << 70, 58);
        if i % 10 == 0 {
            add(deep | rng.random::<u128>() >> 48, 128);
        }
    }
    routes.sort_by_key(|&(p, _)| p.prefix_len());
    routes.dedup_by_key(|(p, _)| *p);
    let mut keys = edges(&routes);
    keys.extend((0..20_000).map(|_| dense | rng.random::<u128>() >> 32));
    keys.extend((0..20_000).map(|_| deep | rng.random::<u128>() >> 48));
    let mut reference = Reference6::new();
    let mut trie = Lpm6Trie::new();
    for &(p, v) in &routes[..routes.len() / 2] {
        trie.insert(p, v);
        reference.insert(p, v);
    }
    let mut t = Lpm6Table::from_trie(trie);
    check(&t, &reference, &keys);
    for &(p, v) in &routes[routes.len() / 2..] {
        t.insert(p, v);
        reference.insert(p, v);
        t.commit();
    }
    check(&t, &reference, &keys);
    // Covers (every route up to /48) withdrawn, then announced again with new ids.
    let covers: Vec<(Ipv6Prefix, u32)> = routes
        .iter()
        .copied()
        .filter(|(p, _)| p.prefix_len() <= 48 && rng.random_bool(0.3))
        .collect();
    for &(p, _) in &covers {
        assert_eq!(t.remove(p), reference.remove(p));
        t.commit();
    }
    check(&t, &reference, &keys);
    for &(p, v) in &covers {
        t.insert(p, v + 100_000);
        reference.insert(p, v + 100_000);
        t.commit();
    }
    check(&t, &reference, &keys);
    let mut all = routes.clone();
    all.shuffle(&mut rng);
    for (i, &(p, _)) in all.iter().enumerate() {
        assert_eq!(t.remove(p), reference.remove(p));
        if i % 3 == 0 {
            t.commit();
        }
        if i % 4000 == 0 {
            t.commit();
            check(&t, &reference, &keys);
        }
    }
    t.commit();
    check(&t, &reference, &keys);
    assert!(t.is_empty());
}
