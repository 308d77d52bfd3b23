//! Route changes patched into the lookup structure in place (see `Fib::update_stats`):
//! random adds, replaces and withdrawals packed into a few /18 regions, one
//! publication each and in small batches, against a naive reference after every
//! publication; and readers during that churn only ever see answers that existed.

mod common;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fib::{Action, Fib, Ipv4Prefix, Path, RouteKind};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// 10.0.0.0/16: four /18 regions.
const BASE: u32 = 0x0a00_0000;

fn fib() -> Fib {
    common::fib_with_port()
}

/// Next hop `v`, carried as an out-label so readers can tell routes apart.
fn kind(v: u32) -> RouteKind {
    RouteKind::Paths(vec![
        Path::gateway_on(Ipv4Addr::from(0xc000_0200 + v), 1).with_labels(&[v + 16]),
    ])
}

fn prefix(addr: u32, len: u8) -> Ipv4Prefix {
    Ipv4Prefix::new_truncated(Ipv4Addr::from(BASE | (addr & 0xffff)), len).expect("prefix")
}

/// Lengths weighted towards what a patch handles: /19-/24 in the region's block,
/// /25-/30 in the node at /24, /31-/32 one node down, and some /16-/18 that rebuild
/// regions whole.
fn length(x: u32) -> u8 {
    const L: [u8; 24] = [
        16, 17, 18, 19, 20, 21, 22, 22, 23, 23, 24, 24, 24, 24, 24, 24, 25, 26, 27, 28, 29, 30, 31,
        32,
    ];
    L[x as usize % L.len()]
}

#[derive(Clone, Debug)]
enum Op {
    /// (address in the /16, length selector, next hop)
    Add(u32, u32, u32),
    /// Index into the live routes.
    Del(usize),
    /// Several changes, one publication.
    Batch(Vec<(bool, u32, u32, u32)>),
}

fn op() -> impl Strategy<Value = Op> {
    // Few next hops, so runs of equal leaves merge and split.
    let change = (any::<bool>(), any::<u32>(), any::<u32>(), 0u32..3);
    prop_oneof![
        5 => (any::<u32>(), any::<u32>(), 0u32..3).prop_map(|(a, l, v)| Op::Add(a, l, v)),
        3 => any::<usize>().prop_map(Op::Del),
        1 => proptest::collection::vec(change, 1..6).prop_map(Op::Batch),
    ]
}

/// The FIB, a reference, the live routes and every prefix boundary seen so far.
struct Model {
    fib: Fib,
    reference: common::Reference,
    live: Vec<Ipv4Prefix>,
    probes: Vec<u32>,
}

impl Model {
    fn new() -> Self {
        Self {
            fib: fib(),
            reference: common::Reference::new(),
            live: Vec::new(),
            probes: Vec::new(),
        }
    }

    fn add(&mut self, batch: Option<&mut fib::Batch<'_>>, a: u32, l: u32, v: u32) {
        let p = prefix(a, length(l));
        let id = match batch {
            Some(b) => b.route_add(0, p, kind(v)),
            None => self.fib.route_add(0, p, kind(v)),
        }
        .expect("add");
        self.reference.insert(p, id);
        if !self.live.contains(&p) {
            self.live.push(p);
        }
        let (f, l) = (p.addr_u32(), p.last());
        self.probes.extend([
            f,
            l,
            f.wrapping_sub(1),
            l.wrapping_add(1),
            f + (l - f) / 2,
            a | BASE,
        ]);
    }

    fn del(&mut self, batch: Option<&mut fib::Batch<'_>>, i: usize) {
        if self.live.is_empty() {
            return;
        }
        let p = self.live.swap_remove(i % self.live.len());
        match batch {
            Some(b) => b.route_del(0, p),
            None => self.fib.route_del(0, p),
        }
        .expect("del");
        self.reference.remove(p);
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Add(a, l, v) => self.add(None, a, l, v),
            Op::Del(i) => self.del(None, i),
            Op::Batch(changes) => {
                // The batch borrows the FIB: apply to a detached model, then move back.
                let mut fib = std::mem::replace(&mut self.fib, Fib::new());
                {
                    let mut b = fib.batch();
                    for (add, a, l, v) in changes {
                        if add {
                            self.add(Some(&mut b), a, l, v);
                        } else {
                            self.del(Some(&mut b), a as usize);
                        }
                    }
                }
                self.fib = fib;
            }
        }
    }

    /// Every probe, batched and one by one, against the reference.
    fn check(&self) -> Result<(), String> {
        let mut r = self.fib.reader();
        let v = r.read();
        let t = v.table(0).ok_or("no table 0")?;
        let mut out = vec![0u32; self.probes.len()];
        t.lookup_burst(&self.probes, &mut out);
        for (&k, &o) in self.probes.iter().zip(&out) {
            let want = self.reference.lookup(k);
            if o != want || t.lookup(k) != want {
                return Err(format!(
                    "{}: burst {o}, single {}, reference {want}",
                    Ipv4Addr::from(k),
                    t.lookup(k)
                ));
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn patched_regions_match_naive_reference(ops in proptest::collection::vec(op(), 1..250)) {
        let mut m = Model::new();
        for op in ops {
            m.apply(op);
            if let Err(e) = m.check() {
                prop_assert!(false, "{}", e);
            }
        }
    }
}

/// The same, seeded and long, and every way of applying a change is taken.
#[test]
fn every_update_path_is_taken_and_correct() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut m = Model::new();
    for step in 0..6000 {
        let op = match rng.random_range(0..10) {
            0..5 => Op::Add(rng.random(), rng.random(), rng.random_range(0..3)),
            5..9 => Op::Del(rng.random::<u32>() as usize),
            _ => Op::Batch(
                (0..rng.random_range(1..6))
                    .map(|_| {
                        (
                            rng.random(),
                            rng.random(),
                            rng.random(),
                            rng.random_range(0..3),
                        )
                    })
                    .collect(),
            ),
        };
        m.apply(op);
        if step % 7 == 0 {
            m.probes
                .extend((0..64).map(|_| BASE | rng.random_range(0..1 << 16)));
            m.check().unwrap_or_else(|e| panic!("step {step}: {e}"));
            m.probes.truncate(4096);
        }
    }
    m.check().unwrap_or_else(|e| panic!("end: {e}"));
    let s = m.fib.update_stats();
    eprintln!("{s:?}");
    assert!(s.in_place > 100, "{s:?}");
    assert!(s.new_block > 5, "{s:?}");
    assert!(s.new_root > 20, "{s:?}");
    assert!(s.unchanged > 10, "{s:?}");
    assert!(s.regions > 100, "{s:?}");
}

/// Readers look up while routes change in place: every answer must be a route that
/// covers the address (one of the values it ever had), never another route's value,
/// never "no route" (a /16 that never changes covers everything).
#[test]
fn readers_see_only_values_that_existed_during_in_place_churn() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    // Prefix i may carry next hops 4i+1..=4i+3; the /16 carries 0.
    let mut prefixes: Vec<Ipv4Prefix> = Vec::new();
    while prefixes.len() < 400 {
        let p = prefix(rng.random(), length(rng.random_range(3..24)));
        if !prefixes.contains(&p) {
            prefixes.push(p);
        }
    }
    let probes: Vec<u32> = (0..4096)
        .map(|i| {
            if i % 2 == 0 {
                BASE | rng.random_range(0..1 << 16)
            } else {
                let p = prefixes[rng.random_range(0..prefixes.len())];
                p.addr_u32() | (rng.random::<u32>() & !(u32::MAX << (32 - p.prefix_len())))
            }
        })
        .collect();
    let allowed: Arc<Vec<Vec<u32>>> = Arc::new(
        probes
            .iter()
            .map(|&a| {
                let mut labels = vec![16];
                for (i, p) in prefixes.iter().enumerate() {
                    if p.contains(a) {
                        labels.extend((1..4).map(|k| 16 + 4 * i as u32 + k));
                    }
                }
                labels
            })
            .collect(),
    );
    let probes = Arc::new(probes);
    let mut fib = fib();
    let mut reference = common::Reference::new();
    let id = fib.route_add(0, prefix(0, 16), kind(0)).expect("/16");
    reference.insert(prefix(0, 16), id);
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let handles = {
        let p = probes.clone();
        common::spawn_readers(&fib, &probes, &done, &checked, move |v, k, id| {
            let mut label = [0u32; 12];
            let leg = v.leg(id, 0);
            let ok = leg.action() == Action::Forward
                && leg.labels_into(&mut label) == 1
                && allowed[k].contains(&label[0]);
            assert!(ok, "{}: {leg:?} never valid", Ipv4Addr::from(p[k]));
        })
    };
    let mut present = vec![false; prefixes.len()];
    let hop = |rng: &mut rand::rngs::StdRng, i: usize| 4 * i as u32 + rng.random_range(1..4);
    for step in 0..60_000 {
        let i = rng.random_range(0..prefixes.len());
        let p = prefixes[i];
        if present[i] && rng.random_range(0..4) == 0 {
            fib.route_del(0, p).expect("del");
            reference.remove(p);
            present[i] = false;
        } else if step % 50 == 0 {
            let mut b = fib.batch();
            for _ in 0..20 {
                let j = rng.random_range(0..prefixes.len());
                let id = b
                    .route_add(0, prefixes[j], kind(hop(&mut rng, j)))
                    .expect("add");
                reference.insert(prefixes[j], id);
                present[j] = true;
            }
        } else {
            let id = fib.route_add(0, p, kind(hop(&mut rng, i))).expect("add");
            reference.insert(p, id);
            present[i] = true;
        }
    }
    done.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("reader");
    }
    let n = checked.load(Ordering::Relaxed);
    let s = fib.update_stats();
    eprintln!("{n} answers checked; {s:?}");
    assert!(n > 100_000);
    assert!(s.in_place > 1000 && s.new_root > 200, "{s:?}");
    // And the final state is exactly the reference's.
    let mut r = fib.reader();
    let v = r.read();
    for &k in probes.iter() {
        assert_eq!(v.lookup(0, k), reference.lookup(k), "{}", Ipv4Addr::from(k));
    }
}
