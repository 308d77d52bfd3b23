//! Shared helpers: the real RIB and a naive reference LPM.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use fib::{Fib, FibView, Interface, Ipv4Prefix};

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

/// The shared 2014 RIB snapshot: 512,621 `prefix<TAB>asn` lines.
pub fn rib_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/rib-v4-2014-05-13.txt.gz")
}

/// Loads (prefix, asn) pairs; panics with a clear message when the file is missing.
pub fn load_rib() -> Vec<(Ipv4Prefix, u32)> {
    let path = rib_path();
    let f = std::fs::File::open(&path).unwrap_or_else(|e| {
        panic!(
            "RIB snapshot {} not found ({e}); the repo expects shared/ checked out beside it",
            path.display()
        )
    });
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

/// Naive LPM: one hash map per prefix length, probed from /32 down.
#[derive(Default)]
pub struct Reference {
    by_len: Vec<HashMap<u32, u32>>,
}

impl Reference {
    pub fn new() -> Self {
        Self {
            by_len: vec![HashMap::new(); 33],
        }
    }
    pub fn insert(&mut self, p: Ipv4Prefix, v: u32) {
        self.by_len[p.prefix_len() as usize].insert(p.addr_u32(), v);
    }
    pub fn remove(&mut self, p: Ipv4Prefix) -> Option<u32> {
        self.by_len[p.prefix_len() as usize].remove(&p.addr_u32())
    }
    pub fn lookup(&self, a: u32) -> u32 {
        for len in (0..=32u32).rev() {
            let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            if let Some(&v) = self.by_len[len as usize].get(&(a & m)) {
                return v;
            }
        }
        0
    }
}
