//! The real 512k-prefix table (or a stand-in of its size and shape, when the
//! shared data is not beside the clone) against a naive reference.

mod common;

use std::net::Ipv4Addr;
use std::time::Instant;

use fib::{Path, RouteKind};
use rand::{Rng, SeedableRng};

/// An onlink gateway per origin AS, so every AS gets its own path list.
fn path_for(asn: u32) -> RouteKind {
    let gw = Ipv4Addr::from(0x0a00_0000 | (asn & 0x00ff_ffff) | 1);
    RouteKind::Paths(vec![Path::gateway_on(gw, 1)])
}

#[test]
fn full_table_load_check_delete() {
    let rib = common::load_rib();
    assert_eq!(rib.len(), common::RIB_PREFIXES);
    let mut fib = common::fib_with_port();
    let empty = fib.memory();
    let mut reference = common::Reference::new();

    let t0 = Instant::now();
    {
        let mut b = fib.batch();
        for &(p, asn) in &rib {
            let id = b.route_add(0, p, path_for(asn)).expect("add");
            reference.insert(p, id);
        }
    }
    let load = t0.elapsed();
    let mem = fib.memory();
    eprintln!(
        "load {load:?}, {} path lists, memory {mem:?}",
        fib.path_list_count()
    );
    assert_eq!(fib.route_count(0), rib.len());

    let mut r = fib.reader();
    let v = r.read();
    let t = v.table(0).expect("table 0");
    for &(p, _) in &rib {
        for a in [p.addr_u32(), p.last()] {
            assert_eq!(
                t.lookup(a),
                reference.lookup(a),
                "{p} at {}",
                Ipv4Addr::from(a)
            );
        }
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let keys: Vec<u32> = (0..1_000_000).map(|_| rng.random()).collect();
    let mut out = vec![0u32; 256];
    for chunk in keys.chunks(256) {
        t.lookup_burst(chunk, &mut out);
        for (k, o) in chunk.iter().zip(&out) {
            assert_eq!(*o, reference.lookup(*k), "{}", Ipv4Addr::from(*k));
        }
    }
    drop(v);

    let t0 = Instant::now();
    {
        let mut b = fib.batch();
        for &(p, _) in &rib {
            b.route_del(0, p).expect("del");
        }
    }
    eprintln!("delete {:?}", t0.elapsed());
    assert_eq!(fib.route_count(0), 0);
    assert_eq!(fib.path_list_count(), 0);
    let v = r.read();
    for &(p, _) in rib.iter().step_by(97) {
        assert_eq!(v.lookup(0, p.addr_u32()), 0);
    }
    drop(v);
    let after = fib.memory();
    eprintln!("after delete {after:?} (empty {empty:?})");
    assert_eq!(after, empty, "memory returned");
}
