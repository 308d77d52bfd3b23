//! In-process DPDK tests: net_ring ports driven through a real EAL and a real worker
//! lcore. EAL runs once per process, so every test here shares it and takes a lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use dataplane::dpdk::{Burst, Eal, EalConfig, Mempool, Port, PortConfig, Ring};
use dataplane::xconnect::{IdlePolicy, RxAssignment, XconnectWorker};

fn eal() -> (&'static Eal, MutexGuard<'static, ()>) {
    static EAL: OnceLock<&'static Eal> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let eal = EAL.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u16;
        let cfg = EalConfig {
            program: "xconnect-test".into(),
            main_cpu: 0,
            worker_cpus: vec![1 % cpus],
            memory_mb: 256,
            ..Default::default()
        };
        Eal::init_with(&cfg).expect("EAL init (run scripts/setup.sh first)")
    });
    (eal, guard)
}

/// A frame with a recognisable payload: broadcast dst, our ethertype 0x88b5, seq.
fn frame(seq: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].fill(0xff);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f[14..16].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f[16..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_add(seq as u8);
    }
    f
}

struct Pair {
    pool: Arc<Mempool>,
    rx: [Arc<Ring>; 2],
    tx: [Arc<Ring>; 2],
    ports: Vec<Port>,
}

fn ring_pair(eal: &Eal, tag: &str, tx_ring_size: u32) -> Pair {
    let pool = Mempool::new(eal, &format!("p_{tag}"), 2047, 0, 2176).unwrap();
    let mk = |n: &str, size: u32| Arc::new(Ring::new(eal, &format!("{n}_{tag}"), size).unwrap());
    let rx = [mk("r0", 1024), mk("r1", 1024)];
    let tx = [mk("t0", tx_ring_size), mk("t1", tx_ring_size)];
    let ports = (0..2)
        .map(|i| {
            let cfg = PortConfig::new(&format!("port{i}"), &format!("net_ring_{tag}{i}"));
            Port::from_rings(eal, &cfg, &[rx[i].clone()], &[tx[i].clone()], pool.clone()).unwrap()
        })
        .collect();
    Pair {
        pool,
        rx,
        tx,
        ports,
    }
}

fn run_worker(
    eal: &'static Eal,
    pair: &Pair,
    until: impl Fn() -> bool,
) -> Arc<dataplane::xconnect::WorkerCounters> {
    let (p0, p1) = (pair.ports[0].id(), pair.ports[1].id());
    let stop = Arc::new(AtomicBool::new(false));
    let assignments = vec![
        RxAssignment {
            port: p0,
            queue: 0,
            peer: p1,
            tx_queue: 0,
        },
        RxAssignment {
            port: p1,
            queue: 0,
            peer: p0,
            tx_queue: 0,
        },
    ];
    let mut w = XconnectWorker::new(assignments, stop.clone(), IdlePolicy::default());
    let counters = w.counters();
    let lcore = eal.worker_lcores()[0];
    eal.launch(lcore, move || {
        w.run();
        0
    })
    .unwrap();
    let t0 = Instant::now();
    while !until() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Let the worker finish whatever burst it is in, then stop it.
    std::thread::sleep(Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(eal.wait(lcore), 0);
    counters
}

#[test]
fn burst_of_257_crosses_intact_and_nothing_leaks() {
    let (eal, _g) = eal();
    let pair = ring_pair(eal, "a", 1024);
    let frames: Vec<Vec<u8>> = (0..257u16)
        .map(|i| frame(i, 60 + usize::from(i) * 5 % 1400))
        .collect();
    let mut b = Burst::new();
    for chunk in frames.chunks(200) {
        for f in chunk {
            b.push(pair.pool.alloc_with(f).unwrap()).unwrap();
        }
        assert_eq!(pair.rx[0].enqueue_burst(&mut b), chunk.len());
    }
    assert_eq!(pair.pool.in_use(), 257);
    let tx1 = pair.tx[1].clone();
    let counters = run_worker(eal, &pair, || tx1.count() >= 257);

    // Same frames, same order, on the peer port; nothing came back on port 0.
    let mut got = Vec::new();
    while pair.tx[1].dequeue_burst(&mut b) > 0 {
        got.extend(b.as_slice().iter().map(|m| m.data().to_vec()));
        b.clear();
    }
    assert_eq!(got.len(), 257);
    assert_eq!(got, frames);
    assert_eq!(pair.tx[0].count(), 0);

    // Counters exact.
    let q0 = &counters.queues[0];
    assert_eq!(q0.rx_pkts.get(), 257);
    assert_eq!(q0.tx_pkts.get(), 257);
    assert_eq!(q0.tx_drops.get(), 0);
    assert_eq!(counters.queues[1].rx_pkts.get(), 0);
    assert!(
        counters.busy_loops.get() >= 2,
        "257 frames need at least two bursts of 256"
    );
    let s0 = pair.ports[0].stats();
    let s1 = pair.ports[1].stats();
    assert_eq!((s0.rx_pkts, s1.tx_pkts), (257, 257));

    // Every mbuf went back to the pool.
    assert_eq!(pair.pool.in_use(), 0);
    assert_eq!(pair.pool.available(), pair.pool.size());
}

#[test]
fn refused_tx_is_freed_and_counted() {
    let (eal, _g) = eal();
    // tx rings of 64 slots hold 63 frames: the rest of a 257-frame burst is refused.
    let pair = ring_pair(eal, "b", 64);
    let mut b = Burst::new();
    for i in 0..257u16 {
        if b.push(pair.pool.alloc_with(&frame(i, 64)).unwrap())
            .is_err()
        {
            pair.rx[0].enqueue_burst(&mut b);
            b.push(pair.pool.alloc_with(&frame(i, 64)).unwrap())
                .unwrap();
        }
    }
    pair.rx[0].enqueue_burst(&mut b);
    let rx0 = pair.rx[0].clone();
    let counters = run_worker(eal, &pair, || rx0.count() == 0);
    let q0 = &counters.queues[0];
    assert_eq!(q0.rx_pkts.get(), 257);
    assert_eq!(q0.tx_pkts.get(), 63);
    assert_eq!(q0.tx_drops.get(), 257 - 63);
    assert_eq!(pair.tx[1].count(), 63);
    // The 63 in the ring are the only mbufs out; dropping the ring returns them.
    assert_eq!(pair.pool.in_use(), 63);
    let Pair {
        pool,
        rx,
        tx,
        ports,
    } = pair;
    drop(ports);
    drop(rx);
    drop(tx);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn mbuf_ops_keep_bounds() {
    let (eal, _g) = eal();
    let pool = Mempool::new(eal, "p_ops", 63, 0, 2176).unwrap();
    let mut m = pool.alloc_with(&[1, 2, 3, 4]).unwrap();
    assert_eq!(m.data(), &[1, 2, 3, 4]);
    let head = m.headroom();
    m.prepend(4).unwrap().copy_from_slice(&[9, 9, 9, 9]);
    assert_eq!(m.data(), &[9, 9, 9, 9, 1, 2, 3, 4]);
    assert!(m.adj(6));
    assert_eq!(m.data(), &[3, 4]);
    assert!(!m.adj(3), "adj past the end is refused");
    assert!(
        m.prepend(head + 10).is_none(),
        "prepend past the headroom is refused"
    );
    assert!(m.trim(1));
    assert_eq!(m.data(), &[3]);
    assert!(
        pool.alloc_with(&vec![0u8; 4000]).is_none(),
        "frame larger than the buffer"
    );
    drop(m);
    // Exhaust the pool: alloc returns None, never panics.
    let mut held = Vec::new();
    while let Some(m) = pool.alloc() {
        held.push(m);
    }
    assert_eq!(held.len(), 63);
    drop(held);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn bad_devices_are_clear_errors() {
    let (eal, _g) = eal();
    let pool = Mempool::new(eal, "p_bad", 255, 0, 2176).unwrap();
    let e = Port::open(
        eal,
        &PortConfig::new("port9", "net_nosuchdriver0"),
        pool.clone(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("port9: cannot create device"), "{e}");
    let e = Port::open(eal, &PortConfig::new("port9", "0000:42:00.0"), pool.clone()).unwrap_err();
    assert!(e.to_string().contains("no such PCI device"), "{e}");
    let mut cfg = PortConfig::new("port8", "net_null_q8");
    cfg.rx_queues = 2000;
    cfg.tx_queues = 2000;
    let e = Port::open(eal, &cfg, pool.clone()).unwrap_err();
    assert!(e.to_string().contains("queues requested"), "{e}");
    assert!(matches!(
        Eal::init(&["again"]),
        Err(dataplane::dpdk::DpdkError::AlreadyInitialized)
    ));
}

/// Runs `ip` with `args`; panics with its output when it fails.
fn ip(args: &[&str]) {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .expect("ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Rx checksum offload is asked for when the device has it and the port allows
/// it, and the device's verdict reaches the mbufs: net_tap (which has it) receives
/// a ping from a network namespace with its IPv4 checksum marked good; net_null
/// has no offload, and `rx_checksum = false` turns it off. Needs root (for the
/// tap and the namespace), as the EAL of these tests does.
#[test]
fn rx_checksum_offload_follows_the_device() {
    let (eal, _g) = eal();
    // (net_tap fills every rx descriptor with an mbuf at setup)
    let pool = Mempool::new(eal, "p_ck", 2047, 0, 2176).unwrap();
    let null = Port::open(eal, &PortConfig::new("n0", "net_null_ck0"), pool.clone()).unwrap();
    assert!(!null.rx_checksum());
    drop(null);
    // (net_tap needs root, as EAL here does already)
    let mut off = PortConfig::new("t1", "net_tap_ck1,iface=dpck1");
    (off.rx_desc, off.tx_desc) = (256, 256);
    off.rx_checksum = false;
    let tap = Port::open(eal, &off, pool.clone()).unwrap();
    assert!(!tap.rx_checksum());
    drop(tap);

    let mut on = PortConfig::new("t0", "net_tap_ck0,iface=dpck0");
    (on.rx_desc, on.tx_desc) = (256, 256);
    let tap = Port::open(eal, &on, pool).unwrap();
    assert!(tap.rx_checksum(), "net_tap offers IPv4 checksum offload");
    // The tap's kernel side in a namespace of its own, with a static neighbour, so
    // a ping from there comes in as one IPv4 frame.
    let ns = format!("dpck{}", std::process::id());
    ip(&["netns", "add", &ns]);
    let cleanup = NsGuard(ns.clone());
    ip(&["link", "set", "dpck0", "netns", &ns]);
    ip(&["-n", &ns, "addr", "add", "10.251.0.1/24", "dev", "dpck0"]);
    ip(&["-n", &ns, "link", "set", "dpck0", "up"]);
    ip(&[
        "-n",
        &ns,
        "neigh",
        "add",
        "10.251.0.2",
        "lladdr",
        "02:00:00:00:ca:fe",
        "dev",
        "dpck0",
    ]);
    let _ = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("ip netns exec {ns} ping -c 3 -i 0.2 -W 1 10.251.0.2"),
        ])
        .output();
    let mut b = Burst::new();
    let t0 = Instant::now();
    let mut seen = None;
    while seen.is_none() && t0.elapsed() < Duration::from_secs(5) {
        b.rx_burst(tap.id(), 0, 32);
        seen = b
            .as_slice()
            .iter()
            .find(|m| m.data().get(12..14) == Some(&[0x08, 0x00][..]))
            .map(|m| m.rx_ip4_csum());
        b.clear();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(seen, Some(dataplane::packet::RxCsum::Good));
    drop(cleanup);
}

/// Deletes network namespace `.0` when dropped.
struct NsGuard(String);

impl Drop for NsGuard {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.0])
            .output();
    }
}
