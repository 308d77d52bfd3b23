//! Readers look up while the writer loads and withdraws the full table.

mod common;

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fib::{Action, Ipv4Prefix, Path, RouteKind};
use rand::{Rng, SeedableRng};

/// Each origin AS is carried as an out-label, so a reader can tell which route's
/// forwarding it got, through LPM, load-balance and leg.
fn kind(asn: u32) -> RouteKind {
    let gw = Ipv4Addr::from(0x0a00_0000 | (asn & 0x00ff_ffff) | 1);
    RouteKind::Paths(vec![Path::gateway_on(gw, 1).with_labels(&[asn & 0xf_ffff])])
}

#[test]
fn readers_only_see_states_that_existed() {
    let rib = common::load_rib();
    // Every label a covering route could give, per probe address (0 = no route).
    let mut by_len: Vec<HashMap<u32, u32>> = vec![HashMap::new(); 33];
    for &(p, asn) in &rib {
        by_len[p.prefix_len() as usize].insert(p.addr_u32(), asn & 0xf_ffff);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut probes: Vec<u32> = Vec::new();
    for _ in 0..4096 {
        let (p, _) = rib[rng.random_range(0..rib.len())];
        probes.push(p.addr_u32() | (rng.random::<u32>() & !mask(p)));
        probes.push(rng.random());
    }
    let allowed: Arc<Vec<Vec<u32>>> = Arc::new(
        probes
            .iter()
            .map(|&a| {
                (0..=32u32)
                    .filter_map(|l| {
                        let m = if l == 0 { 0 } else { u32::MAX << (32 - l) };
                        by_len[l as usize].get(&(a & m)).copied()
                    })
                    .collect()
            })
            .collect(),
    );
    let probes = Arc::new(probes);

    let mut fib = common::fib_with_port();
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let handles = {
        let p = probes.clone();
        common::spawn_readers(&fib, &probes, &done, &checked, move |v, k, id| {
            let mut labels = [0u32; 12];
            let leg = v.leg(id, k as u32);
            let ok = match leg.action() {
                Action::NoRoute => true,
                Action::Forward => {
                    leg.labels_into(&mut labels) == 1 && allowed[k].contains(&labels[0])
                }
                _ => false,
            };
            assert!(ok, "{}: {:?} never valid", Ipv4Addr::from(p[k]), leg);
        })
    };
    for round in 0..2 {
        // Load in batches of 20k routes (one publication each)...
        for chunk in rib.chunks(20_000) {
            let mut b = fib.batch();
            for &(p, asn) in chunk {
                b.route_add(0, p, kind(asn)).expect("add");
            }
        }
        // ...churn 5k routes one by one...
        for &(p, asn) in rib.iter().skip(round * 5000).take(5000) {
            fib.route_del(0, p).expect("del");
            fib.route_add(0, p, kind(asn)).expect("add");
        }
        // ...and withdraw, in batches and one by one.
        for (i, chunk) in rib.chunks(20_000).enumerate() {
            if i % 4 == 0 {
                for &(p, _) in chunk {
                    fib.route_del(0, p).expect("del");
                }
            } else {
                let mut b = fib.batch();
                for &(p, _) in chunk {
                    b.route_del(0, p).expect("del");
                }
            }
        }
        assert_eq!(fib.route_count(0), 0);
    }
    done.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("reader");
    }
    let n = checked.load(Ordering::Relaxed);
    eprintln!("{n} answers checked");
    assert!(n > 100_000);
}

fn mask(p: Ipv4Prefix) -> u32 {
    if p.prefix_len() == 0 {
        0
    } else {
        u32::MAX << (32 - p.prefix_len())
    }
}
