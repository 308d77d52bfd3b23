//! The router on a real EAL: `net_ring` ports, [`RouterWorker`]s on worker lcores,
//! 257 frames in, the exact frames out of the tx rings, exact counters, and every
//! mbuf back in its pool afterwards (forwarded, dropped, refused or punted). EAL runs
//! once per process, so the tests share it and take a lock.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use dataplane::dpdk::{BURST, Burst, Eal, EalConfig, Mempool, Port, PortConfig, Ring, tsc_hz};
use dataplane::packet::{RxCsum, VecPacket};
use dataplane::router::{
    CoreConfig, Out, PuntClass, PuntQueue, PuntRates, PuntReason, RouterControl, RouterWorker,
    Stage, WorkerStats, report,
};
use dataplane::xconnect::IdlePolicy;
use mpls::LabelAction;
use proptest::prelude::*;

const N: usize = 257;

fn eal() -> (&'static Eal, MutexGuard<'static, ()>) {
    static EAL: OnceLock<&'static Eal> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let eal = EAL.get_or_init(|| {
        // Two worker lcores; on a 2-CPU machine they share CPU 1 (and time-share).
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u16;
        let cfg = EalConfig {
            program: "router-test".into(),
            main_cpu: 0,
            worker_cpus: vec![1 % cpus, 1 % cpus],
            memory_mb: 256,
            ..Default::default()
        };
        Eal::init_with(&cfg).expect("EAL init (run scripts/setup.sh first)")
    });
    (eal, guard)
}

/// Three ring ports (logical 0..3) with `queues` rx and tx rings each.
struct Lab {
    pool: Arc<Mempool>,
    rx: Vec<Vec<Arc<Ring>>>,
    tx: Vec<Vec<Arc<Ring>>>,
    ports: Vec<Port>,
    /// Logical port → DPDK port id; logical 3 and 4 have no device.
    ids: [u16; 5],
}

impl Lab {
    fn new(eal: &Eal, tag: &str, queues: usize, tx_ring_size: u32) -> Lab {
        let pool = Mempool::new(eal, &format!("rp_{tag}"), 4095, 0, 2176).unwrap();
        let ring = |n: String, size: u32| Arc::new(Ring::new(eal, &n, size).unwrap());
        let rx: Vec<Vec<Arc<Ring>>> = (0..3)
            .map(|p| {
                (0..queues)
                    .map(|q| ring(format!("rr{p}{q}_{tag}"), 1024))
                    .collect()
            })
            .collect();
        let tx: Vec<Vec<Arc<Ring>>> = (0..3)
            .map(|p| {
                (0..queues)
                    .map(|q| ring(format!("rt{p}{q}_{tag}"), tx_ring_size))
                    .collect()
            })
            .collect();
        let ports: Vec<Port> = (0..3)
            .map(|p| {
                let cfg = PortConfig::new(&format!("port{p}"), &format!("net_ring_r{tag}{p}"));
                Port::from_rings(eal, &cfg, &rx[p], &tx[p], pool.clone()).unwrap()
            })
            .collect();
        let ids = [ports[0].id(), ports[1].id(), ports[2].id(), 9000, 9001];
        Lab {
            pool,
            rx,
            tx,
            ports,
            ids,
        }
    }

    /// Size of the workers' per-port tx array: every real port id fits.
    fn port_count(&self) -> usize {
        usize::from(self.ids[..3].iter().copied().max().unwrap()) + 1
    }

    /// Puts `frames` into rx queue `queue` of logical port `port`.
    fn feed(&self, port: usize, queue: usize, frames: &[Vec<u8>]) {
        self.feed_as(port, queue, frames, RxCsum::Unknown);
    }

    /// [`Lab::feed`] with the checksum verdict `csum` in every mbuf, as a NIC with
    /// rx checksum offload leaves it.
    fn feed_as(&self, port: usize, queue: usize, frames: &[Vec<u8>], csum: RxCsum) {
        let mut b = Burst::new();
        for chunk in frames.chunks(BURST) {
            for f in chunk {
                let mut m = self.pool.alloc_with(f).unwrap();
                m.set_rx_ip4_csum(csum);
                assert_eq!(m.rx_ip4_csum(), csum);
                b.push(m).unwrap();
            }
            assert_eq!(self.rx[port][queue].enqueue_burst(&mut b), chunk.len());
        }
    }

    /// Takes every frame out of tx queue `queue` of logical port `port` (and frees
    /// the mbufs).
    fn drain(&self, port: usize, queue: usize) -> Vec<Vec<u8>> {
        let mut b = Burst::new();
        let mut got = Vec::new();
        while self.tx[port][queue].dequeue_burst(&mut b) > 0 {
            got.extend(b.as_slice().iter().map(|m| m.data().to_vec()));
            b.clear();
        }
        got
    }

    fn rx_empty(&self) -> bool {
        self.rx.iter().flatten().all(|r| r.count() == 0)
    }
}

/// Queue 0 of every lab port, and queue 1.
const QUEUES0: &[(usize, u16)] = &[(0, 0), (1, 0), (2, 0)];
const QUEUES1: &[(usize, u16)] = &[(0, 1), (1, 1), (2, 1)];

/// One worker polling `rx` (logical port, queue) pairs and sending on `tx_queue`,
/// its core configured by `cfg`.
fn worker(
    ctl: &mut RouterControl,
    lab: &Lab,
    rx: &[(usize, u16)],
    tx_queue: u16,
    stop: &Arc<AtomicBool>,
    cfg: CoreConfig,
) -> (RouterWorker, Arc<WorkerStats>, Arc<PuntQueue>) {
    let (core, punts) = ctl.new_core(cfg, tsc_hz());
    let stats = core.stats().clone();
    let rx = rx.iter().map(|&(p, q)| (lab.ids[p], q)).collect();
    let w = RouterWorker::new(
        core,
        rx,
        tx_queue,
        lab.port_count(),
        punts.clone(),
        stop.clone(),
        IdlePolicy::default(),
    )
    .with_punt_rates(UNPOLICED);
    (w, stats, punts)
}

/// Launches the workers on the worker lcores; returns the lcores.
fn start(eal: &'static Eal, workers: Vec<RouterWorker>) -> Vec<u32> {
    let lcores: Vec<u32> = eal.worker_lcores()[..workers.len()].to_vec();
    for (mut w, &lcore) in workers.into_iter().zip(&lcores) {
        eal.launch(lcore, move || {
            w.run();
            0
        })
        .unwrap();
    }
    lcores
}

/// Waits for `done` (at most 10 s), then stops the workers.
fn finish(eal: &'static Eal, lcores: Vec<u32>, stop: &Arc<AtomicBool>, done: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !done() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Let the workers finish the vector they are in.
    std::thread::sleep(Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);
    for lcore in lcores {
        assert_eq!(eal.wait(lcore), 0, "worker on lcore {lcore} panicked");
    }
}

/// Runs the workers until `done` (or 10 s), then stops them.
fn run(
    eal: &'static Eal,
    workers: Vec<RouterWorker>,
    stop: &Arc<AtomicBool>,
    done: impl Fn() -> bool,
) {
    let lcores = start(eal, workers);
    finish(eal, lcores, stop, done);
}

fn rx_pkts(s: &WorkerStats) -> u64 {
    s.stages[Stage::Rx as usize].pkts.get()
}

/// [`router_on`] the lab's ports with 198.18/16 via port 1, label 100 swap to 200
/// (port 1) and label 102 PHP (port 2).
fn lsr(lab: &Lab) -> RouterControl {
    let mut ctl = router_on(lab.ids);
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let adj1 = ctl.adjacency(2, a("10.2.0.2")).unwrap();
    let adj2 = ctl.adjacency(3, a("10.3.0.2")).unwrap();
    ctl.label_add(100, true, LabelAction::swap(adj1, &[200]))
        .unwrap();
    ctl.label_add(102, true, LabelAction::php(adj2)).unwrap();
    ctl
}

#[test]
fn router_forwards_257_frames_byte_exact_and_returns_every_mbuf() {
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "a", 1, 1024);
    let mut ctl = lsr(&lab);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, punts) = worker(&mut ctl, &lab, QUEUES0, 0, &stop, core_cfg());
    let ips: Vec<Vec<u8>> = (0..N)
        .map(|i| host_ip(i, [198, 18], 2 + (i % 250) as u8, 28 + i * 5 % 1400))
        .collect();
    let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
    lab.feed(0, 0, &frames);
    assert_eq!(lab.pool.in_use(), N as u32);
    run(eal, vec![w], &stop, || {
        rx_pkts(&stats) == N as u64 && lab.rx_empty()
    });

    let got = lab.drain(1, 0);
    let want: Vec<Vec<u8>> = ips
        .iter()
        .map(|p| eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(p, p[8] - 1)))
        .collect();
    assert_eq!(got.len(), N);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "frame {i}");
    }
    assert!(lab.drain(0, 0).is_empty() && lab.drain(2, 0).is_empty());
    assert_eq!(counters(&stats), expect(&[]));
    assert!(punts.is_empty());
    let bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!(stats.ifaces[1].rx_pkts.get(), N as u64);
    assert_eq!(stats.ifaces[1].rx_bytes.get(), bytes);
    assert_eq!(stats.ifaces[2].tx_pkts.get(), N as u64);
    assert_eq!(stats.ifaces[2].tx_bytes.get(), bytes);
    assert_eq!(stats.stages[Stage::Tx as usize].pkts.get(), N as u64);
    assert!(stats.busy_loops.get() >= 2, "257 frames need two vectors");
    let (s0, s1) = (lab.ports[0].stats(), lab.ports[1].stats());
    // (net_ring counts no bytes.)
    assert_eq!((s0.rx_pkts, s1.tx_pkts), (N as u64, N as u64));
    assert_eq!(lab.pool.in_use(), 0);
    assert_eq!(lab.pool.available(), lab.pool.size());
}

/// The checksum verdict a NIC leaves in `ol_flags` reaches the core through a
/// real port: "good" frames whose sum is off are forwarded without a second sum,
/// "bad" frames whose sum is right are dropped and counted, and every mbuf comes
/// back. (net_ring has no checksum offload: the port says so.)
#[test]
fn nic_checksum_verdicts_in_mbufs_are_trusted() {
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "k", 1, 1024);
    assert!(lab.ports.iter().all(|p| !p.rx_checksum()));
    let mut ctl = lsr(&lab);
    let stop = Arc::new(AtomicBool::new(false));
    // (as if port 0's device had the offload on: the daemon says so per port)
    let cfg = CoreConfig {
        nic_csum_ports: 1 << lab.ids[0],
        ..core_cfg()
    };
    let (w, stats, _punts) = worker(&mut ctl, &lab, &[(0, 0)], 0, &stop, cfg);
    let good = host_ip(3, [198, 18], 64, 46);
    let mut wrong = good.clone();
    wrong[11] ^= 0x81;
    lab.feed_as(0, 0, &vec![from_host(&wrong); N], RxCsum::Good);
    lab.feed_as(0, 0, &vec![from_host(&good); N], RxCsum::Bad);
    run(eal, vec![w], &stop, || {
        rx_pkts(&stats) == 2 * N as u64 && lab.rx_empty()
    });
    let got = lab.drain(1, 0);
    assert_eq!(got.len(), N);
    // (TTL 64 -> 63 with the checksum field updated as it was: RFC 1624)
    let mut want = wrong.clone();
    want[8] = 63;
    let ck = u16::from_be_bytes([wrong[10], wrong[11]]);
    let ck = wire::checksum::update_u16(ck, 0x4000 | 17, 0x3f00 | 17);
    want[10..12].copy_from_slice(&ck.to_be_bytes());
    let want = eth(mac_n(1), mac_r(1), None, ETH_IP4, &want);
    assert!(got.iter().all(|g| *g == want));
    assert_eq!(counters(&stats), expect(&[("ip4_bad_checksum", N as u64)]));
    assert_eq!(lab.pool.in_use(), 0);
}

/// What should become of one frame of the mixed run./// What should become of one frame of the mixed run.
enum Want {
    /// Sent on a logical port, exactly.
    Tx(usize, Vec<u8>),
    /// An ICMP error about `quote` sent to the host on port 0 (type, code).
    Icmp(u8, u8, Vec<u8>),
    /// Punted as is.
    Punt(Vec<u8>),
    Drop,
}

fn echo_request(seq: u16) -> Vec<u8> {
    let mut p = vec![0u8; 20 + 8 + 16];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&44u16.to_be_bytes());
    p[8] = 64;
    p[9] = 1;
    p[12..16].copy_from_slice(&a("10.1.0.2").octets());
    p[16..20].copy_from_slice(&a("10.1.0.1").octets());
    ip_fix(&mut p);
    p[20] = 8;
    p[26..28].copy_from_slice(&seq.to_be_bytes());
    let c = wire::checksum::checksum(&p[20..]);
    p[22..24].copy_from_slice(&c.to_be_bytes());
    p
}

fn echo_reply(req: &[u8]) -> Vec<u8> {
    let mut r = req.to_vec();
    r[12..16].copy_from_slice(&req[16..20]);
    r[16..20].copy_from_slice(&req[12..16]);
    r[8] = 64;
    ip_fix(&mut r);
    r[20] = 0;
    r[22..24].fill(0);
    let c = wire::checksum::checksum(&r[20..]);
    r[22..24].copy_from_slice(&c.to_be_bytes());
    r
}

#[test]
fn drops_punts_replies_and_refusals_return_every_mbuf() {
    let (eal, _g) = eal();
    // Port 2's tx ring holds 63 frames: the rest of what goes there is refused.
    let lab = Lab::new(eal, "b", 1, 1024);
    let mut ctl = lsr(&lab);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, punts) = worker(&mut ctl, &lab, QUEUES0, 0, &stop, core_cfg());

    let mut frames = Vec::new();
    let mut wants = Vec::new();
    for i in 0..N {
        let ip = host_ip(i, [198, 18], 64, 64);
        let (f, w) = match i % 8 {
            0 => (
                from_host(&ip),
                Want::Tx(
                    1,
                    eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 63)),
                ),
            ),
            1 => (
                eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(&[(100, 9)], &ip)),
                Want::Tx(
                    1,
                    eth(
                        mac_n(1),
                        mac_r(1),
                        None,
                        ETH_MPLS,
                        &labelled(&[(200, 8)], &ip),
                    ),
                ),
            ),
            2 => (
                eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(&[(102, 9)], &ip)),
                Want::Tx(2, eth(mac_n(2), mac_r(2), None, ETH_IP4, &with_ttl(&ip, 8))),
            ),
            3 => (
                eth(
                    BCAST,
                    HOST,
                    None,
                    ETH_ARP,
                    &arp(1, HOST, a("10.1.0.2"), [0; 6], a("10.1.0.1")),
                ),
                Want::Tx(
                    0,
                    eth(
                        HOST,
                        mac_r(0),
                        None,
                        ETH_ARP,
                        &arp(2, mac_r(0), a("10.1.0.1"), HOST, a("10.1.0.2")),
                    ),
                ),
            ),
            4 => {
                let req = echo_request(i as u16);
                (
                    from_host(&req),
                    Want::Tx(0, eth(HOST, mac_r(0), None, ETH_IP4, &echo_reply(&req))),
                )
            }
            5 => {
                let mut bad = ip.clone();
                bad[10] ^= 0xff;
                (from_host(&bad), Want::Drop)
            }
            6 => {
                let old = with_ttl(&ip, 1);
                (from_host(&old), Want::Icmp(11, 0, old))
            }
            _ => {
                let mut udp = ip4(a("10.1.0.2"), a("10.1.0.1"), 64, i as u16, 64);
                udp[30] = i as u8;
                let f = from_host(&udp);
                (f.clone(), Want::Punt(f))
            }
        };
        frames.push(f);
        wants.push(w);
    }
    lab.feed(0, 0, &frames);
    run(eal, vec![w], &stop, || {
        rx_pkts(&stats) == N as u64 && lab.rx_empty()
    });

    let mut out: Vec<std::collections::VecDeque<Vec<u8>>> =
        (0..3).map(|p| lab.drain(p, 0).into()).collect();
    let mut punted: std::collections::VecDeque<_> = std::iter::from_fn(|| punts.pop()).collect();
    let mut n = [0u64; 8];
    for (i, w) in wants.iter().enumerate() {
        n[i % 8] += 1;
        match w {
            Want::Tx(p, f) => assert_eq!(out[*p].pop_front().as_ref(), Some(f), "frame {i}"),
            Want::Icmp(t, c, quote) => {
                let g = out[0].pop_front().unwrap();
                let id = u16::from_be_bytes([g[18], g[19]]);
                let icmp = icmp_error(a("10.1.0.1"), a("10.1.0.2"), id, *t, *c, 0, quote);
                assert_eq!(g, eth(HOST, mac_r(0), None, ETH_IP4, &icmp), "frame {i}");
            }
            Want::Punt(f) => {
                let (r, m) = punted.pop_front().unwrap();
                assert_eq!(r, PuntReason::Local);
                assert_eq!(m.data(), &f[..], "frame {i}");
            }
            Want::Drop => {}
        }
    }
    assert!(out.iter().all(|q| q.is_empty()), "unexpected frames");
    assert!(punted.is_empty());
    drop(punted);
    assert_eq!(
        counters(&stats),
        expect(&[
            ("arp_replies", n[3]),
            ("echo_replies", n[4]),
            ("ip4_bad_checksum", n[5]),
            ("ip4_ttl_expired", n[6]),
            ("icmp_errors", n[6]),
            ("punt_local", n[7]),
        ])
    );
    assert_eq!(stats.ifaces[1].rx_pkts.get(), N as u64);
    assert_eq!(stats.ifaces[1].tx_pkts.get(), n[3] + n[4] + n[6]);
    assert_eq!(stats.ifaces[1].drops.get(), n[5] + n[6]);
    assert_eq!(lab.pool.in_use(), 0);
}

#[test]
fn refused_tx_and_a_full_punt_queue_free_their_mbufs() {
    let (eal, _g) = eal();
    // Port 1's tx ring holds 63 frames.
    let lab = Lab::new(eal, "c", 1, 64);
    let mut ctl = lsr(&lab);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, punts) = worker(&mut ctl, &lab, &[(0, 0)], 0, &stop, core_cfg());
    let fwd: Vec<Vec<u8>> = (0..N)
        .map(|i| from_host(&host_ip(i, [198, 18], 64, 64)))
        .collect();
    // More punts than the punt queue (1024) holds.
    let punt: Vec<Vec<u8>> = (0..1100)
        .map(|i| from_host(&ip4(a("10.1.0.2"), a("10.1.0.1"), 64, 1024 + i as u16, 64)))
        .collect();
    let lcores = start(eal, vec![w]);
    lab.feed(0, 0, &fwd);
    for c in punt.chunks(500) {
        let t0 = Instant::now();
        while lab.rx[0][0].count() > 0 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        lab.feed(0, 0, c);
    }
    finish(eal, lcores, &stop, || {
        rx_pkts(&stats) == (N + 1100) as u64 && lab.rx_empty()
    });
    assert_eq!(lab.tx[1][0].count(), 63);
    assert_eq!(punts.len(), 1024);
    assert_eq!(
        counters(&stats),
        expect(&[
            ("tx_full", N as u64 - 63),
            ("punt_local", 1100),
            ("punt_queue_full", 1100 - 1024),
        ])
    );
    assert_eq!(lab.pool.in_use(), 63 + 1024);
    while punts.pop().is_some() {}
    assert_eq!(lab.drain(1, 0).len(), 63);
    assert_eq!(lab.pool.in_use(), 0);
}

/// Policing off: the tests count every punt.
const UNPOLICED: PuntRates = PuntRates {
    control_pps: u32::MAX,
    other_pps: u32::MAX,
};

#[test]
fn the_punt_policer_keeps_routing_protocols_through_a_flood() {
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "p", 1, 1024);
    let mut ctl = lsr(&lab);
    ctl.set_punt_to_host(true);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, punts) = worker(&mut ctl, &lab, &[(0, 0)], 0, &stop, core_cfg());
    // From one interface: bursts of 100 (routing hellos) and 16 (other)
    // packets, refilled at 1000/s and 5/s.
    let w = w.with_punt_rates(PuntRates {
        control_pps: 4000,
        other_pps: 10,
    });
    // 900 datagrams to the router's address on an ordinary port, 50 to BGP's port.
    let frames: Vec<Vec<u8>> = (0..950)
        .map(|i| {
            let mut p = ip4(a("10.1.0.2"), a("10.1.0.1"), 64, 1024 + i as u16, 64);
            if i % 19 == 0 {
                p[22..24].copy_from_slice(&179u16.to_be_bytes());
            }
            from_host(&p)
        })
        .collect();
    let lcores = start(eal, vec![w]);
    lab.feed(0, 0, &frames);
    finish(eal, lcores, &stop, || {
        rx_pkts(&stats) == 950 && lab.rx_empty()
    });
    let mut by_class = BTreeMap::new();
    while let Some((r, _m)) = punts.pop() {
        *by_class.entry(r.name()).or_insert(0u64) += 1;
    }
    let c = counters(&stats);
    assert_eq!(by_class.get("punt_routing"), Some(&50));
    let other = by_class["punt_local"];
    assert!(
        (16..100).contains(&other),
        "{other} ordinary punts let through"
    );
    assert_eq!(c.get("punt_policed_other"), Some(&(900 - other)));
    assert_eq!(c.get("punt_policed_control"), None);
    assert_eq!(lab.pool.in_use(), 0);
}

#[test]
fn two_workers_with_two_queues_each_add_up() {
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "d", 2, 1024);
    let mut ctl = lsr(&lab);
    let stop = Arc::new(AtomicBool::new(false));
    let (w0, s0, _p0) = worker(&mut ctl, &lab, QUEUES0, 0, &stop, core_cfg());
    let (w1, s1, _p1) = worker(&mut ctl, &lab, QUEUES1, 1, &stop, core_cfg());
    let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, [198, 18], 64, 100)).collect();
    // Queue 0 of port 0: IPv4; queue 1 of port 0: labelled; queue 1 of port 2: IPv4
    // from the other side.
    let ip_frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
    let mpls_frames: Vec<Vec<u8>> = ips
        .iter()
        .map(|p| eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(&[(100, 64)], p)))
        .collect();
    let far_frames: Vec<Vec<u8>> = ips
        .iter()
        .map(|p| eth(mac_r(2), mac_n(2), None, ETH_IP4, p))
        .collect();
    lab.feed(0, 0, &ip_frames);
    lab.feed(0, 1, &mpls_frames);
    lab.feed(2, 1, &far_frames);
    let n = N as u64;
    run(eal, vec![w0, w1], &stop, || {
        rx_pkts(&s0) + rx_pkts(&s1) == 3 * n && lab.rx_empty()
    });

    let routed: Vec<Vec<u8>> = ips
        .iter()
        .map(|p| eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(p, 63)))
        .collect();
    let swapped: Vec<Vec<u8>> = ips
        .iter()
        .map(|p| {
            eth(
                mac_n(1),
                mac_r(1),
                None,
                ETH_MPLS,
                &labelled(&[(200, 63)], p),
            )
        })
        .collect();
    // Worker 0 sent on tx queue 0 only, worker 1 on queue 1 only; each queue keeps
    // the order of each input queue.
    assert_eq!(lab.drain(1, 0), routed);
    let q1 = lab.drain(1, 1);
    assert_eq!(q1.len(), 2 * N);
    let (mpls, ip): (Vec<_>, Vec<_>) = q1.into_iter().partition(|f| f[12..14] == [0x88, 0x47]);
    assert_eq!(mpls, swapped);
    assert_eq!(ip, routed);

    assert_eq!(rx_pkts(&s0), n);
    assert_eq!(rx_pkts(&s1), 2 * n);
    for s in [&s0, &s1] {
        assert_eq!(counters(s), expect(&[]));
    }
    // Per-interface counters add up over the workers.
    let rows = report::iface_rows(&ctl.ifaces(), &ctl.worker_stats());
    let row = |ix: u32| rows.iter().find(|r| r.ifindex == ix).unwrap();
    assert_eq!(
        (row(1).rx_pkts, row(3).rx_pkts, row(2).tx_pkts),
        (2 * n, n, 3 * n)
    );
    assert_eq!(
        s0.ifaces[2].tx_pkts.get() + s1.ifaces[2].tx_pkts.get(),
        3 * n
    );
    assert_eq!(lab.ports[1].stats().tx_pkts, 3 * n);
    assert_eq!(
        lab.ports[0].stats().rx_pkts + lab.ports[2].stats().rx_pkts,
        3 * n
    );
    assert_eq!(lab.pool.in_use(), 0);
}

/// What the control thread gives a worker to send (ARP probes from neighbour aging)
/// leaves on the port it names, byte-exact; a port that does not exist is counted
/// and freed.
#[test]
fn injected_probes_leave_on_their_port() {
    use dataplane::router::NeighborAging;
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "i", 1, 1024);
    let mut ctl = lsr(&lab);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, _punts) = worker(&mut ctl, &lab, &[(0, 0)], 0, &stop, core_cfg());
    let inject = ctl.workers()[0].inject.clone();
    let w = w.with_inject(inject.clone());
    // A neighbour learned from ARP on port 0, aged at once.
    let nbr = [2, 0, 0, 0, 1, 9];
    let reply = neighbor_reply(0, nbr, "10.1.0.9");
    let lcores = start(eal, vec![w]);
    lab.feed(0, 0, &[reply]);
    let t0 = Instant::now();
    while ctl.poll() == 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let aging = NeighborAging {
        reachable: Duration::from_secs(1),
        ..NeighborAging::default()
    };
    let probes = ctl.age_neighbors(Instant::now() + Duration::from_secs(2), &aging);
    assert_eq!(probes.len(), 1);
    let frame = probes[0].frame.clone();
    let mut m = lab.pool.alloc_with(&frame).unwrap();
    m.set_port(probes[0].port);
    assert!(inject.push((probes[0].port, m)).is_ok());
    // And one for a port the worker has no queue on.
    assert!(
        inject
            .push((9000, lab.pool.alloc_with(&frame).unwrap()))
            .is_ok()
    );
    finish(eal, lcores, &stop, || inject.is_empty());
    assert_eq!(lab.drain(0, 0), vec![frame]);
    assert_eq!(stats.injected.get(), 1);
    assert_eq!(
        counters(&stats),
        expect(&[("no_tx_port", 1), ("arp_consumed", 1)])
    );
    assert_eq!(lab.pool.in_use(), 0);
}

/// `f` with the IPv4 identification and header checksum of an ICMP error the
/// router built zeroed: it numbers the errors it sends in the order it builds
/// them, which depends on how the frames were split into vectors.
fn icmp_error_unnumbered(mut f: Vec<u8>) -> Vec<u8> {
    let et = |f: &[u8], o: usize| f.get(o..o + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let mut l3 = match et(&f, 12) {
        Some(0x8100) => 18,
        _ => 14,
    };
    if et(&f, l3 - 2) == Some(ETH_MPLS) {
        while f.get(l3 + 2).is_some_and(|b| b & 1 == 0) {
            l3 += 4;
        }
        l3 += 4;
    }
    let Some(ip) = f.get_mut(l3..) else {
        return f;
    };
    let hl = usize::from(ip[0] & 0x0f) * 4;
    if ip.len() > hl && ip[0] >> 4 == 4 && ip[9] == 1 && matches!(ip[hl], 3 | 11) {
        ip[4..6].fill(0);
        ip[10..12].fill(0);
    }
    f
}

/// Where a frame ended up: sent on a logical port, punted, or dropped.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Fate {
    Tx(usize, Vec<u8>),
    Punt(String, Vec<u8>),
}

/// Real mbufs through a worker on net_ring ports against the core on heap
/// buffers: random vectors of every case the differential test draws (plain IPv4,
/// labels, ICMP errors, ARP resolution, VLANs, bad headers, ...) leave on the same
/// ports with the same bytes, are punted alike, count the same drops and replies,
/// and every mbuf comes back. The worker polls two ports, so its vectors mix them
/// differently from the reference's: fates are compared as sorted lists per port.
#[test]
fn mbufs_through_a_worker_match_the_core_on_heap_buffers() {
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "m", 1, 1024);
    let ctl = std::cell::RefCell::new(fuzz_router_on(lab.ids));
    // No limits that depend on when each core runs.
    let cfg = CoreConfig {
        icmp_burst: u32::MAX,
        arp_retry_ms: 0,
        ..core_cfg()
    };
    let logical = |id: u16| lab.ids.iter().position(|&x| x == id);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(64));
    runner
        .run(&prop::collection::vec(diff_frame(), 1..300), |frames| {
            // The reference: the same frames on heap buffers, vectors in order.
            let (mut core, _) = ctl.borrow_mut().new_core(cfg, tsc_hz());
            let mut want = Vec::new();
            let mut no_port = 0u64;
            for chunk in frames.chunks(BURST) {
                let mut pkts: Vec<VecPacket> = chunk
                    .iter()
                    .map(|(f, p)| VecPacket::new(f, lab.ids[*p]))
                    .collect();
                let mut out = vec![Out::Drop; chunk.len()];
                core.process(&mut pkts, &mut out);
                for (o, p) in out.iter().zip(&pkts) {
                    match *o {
                        // (logical ports 3 and 4 have no device: the worker drops)
                        Out::Tx(id) => match logical(id).filter(|&l| l < 3) {
                            Some(l) => {
                                want.push(Fate::Tx(l, icmp_error_unnumbered(p.data().to_vec())))
                            }
                            None => no_port += 1,
                        },
                        Out::Punt(r, _) => {
                            want.push(Fate::Punt(r.name().into(), p.data().to_vec()))
                        }
                        Out::Drop => {}
                    }
                }
            }
            let mut want_counts = counters(core.stats());
            if no_port > 0 {
                want_counts.insert("no_tx_port", no_port);
            }
            want.sort();

            // The worker, on mbufs: frames of logical ports 0..3 on their rx rings.
            let stop = Arc::new(AtomicBool::new(false));
            let (w, stats, punts) = worker(&mut ctl.borrow_mut(), &lab, QUEUES0, 0, &stop, cfg);
            for l in 0..3 {
                let mine: Vec<Vec<u8>> = frames
                    .iter()
                    .filter(|(_, p)| *p == l)
                    .map(|(f, _)| f.clone())
                    .collect();
                lab.feed(l, 0, &mine);
            }
            let n = frames.len() as u64;
            run(eal, vec![w], &stop, || {
                rx_pkts(&stats) == n && lab.rx_empty()
            });
            let mut got: Vec<Fate> = (0..3)
                .flat_map(|l| {
                    lab.drain(l, 0)
                        .into_iter()
                        .map(move |f| Fate::Tx(l, icmp_error_unnumbered(f)))
                })
                .collect();
            while let Some((r, m)) = punts.pop() {
                got.push(Fate::Punt(r.name().into(), m.data().to_vec()));
            }
            got.sort();
            prop_assert_eq!(rx_pkts(&stats), n);
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                prop_assert_eq!(g, w);
            }
            prop_assert_eq!(counters(&stats), want_counts);
            prop_assert_eq!(lab.pool.in_use(), 0);
            Ok(())
        })
        .unwrap();
}

/// An IPv4 TCP segment `src` -> `dst`, destination port `dport`, with `flags`.
fn tcp(src: &str, dst: &str, sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut p = ip4(a(src), a(dst), 64, sport, 40);
    p[9] = 6;
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    p[32] = 0x50;
    p[33] = flags;
    ip_fix(&mut p);
    p
}

/// One host floods the router with TCP SYNs and segments to BGP's port on one
/// interface: its own buckets run dry, while the OSPF hellos and the BGP
/// segments of the neighbour on another interface all go up; the policer's
/// drops are counted per interface and class.
#[test]
fn a_flood_on_one_interface_leaves_another_interfaces_adjacencies_alone() {
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "q", 1, 1024);
    let mut ctl = lsr(&lab);
    ctl.set_punt_to_host(true);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, punts) = worker(&mut ctl, &lab, &[(0, 0), (1, 0)], 0, &stop, core_cfg());
    let w = w.with_punt_rates(PuntRates {
        control_pps: 4000,
        other_pps: 100,
    });
    let flood: Vec<Vec<u8>> = (0..1000)
        .map(|i| {
            let flags = if i % 2 == 0 { 0x02 } else { 0x10 };
            from_host(&tcp("10.1.0.2", "10.1.0.1", 1024 + i as u16, 179, flags))
        })
        .collect();
    let nbr = [2, 0, 0, 0, 2, 0x99];
    let to_port1 = |ip: &[u8]| eth(mac_r(1), nbr, None, ETH_IP4, ip);
    let mut hello = ip4(a("10.2.0.2"), a("224.0.0.5"), 1, 0, 64);
    hello[9] = 89;
    ip_fix(&mut hello);
    let hellos: Vec<Vec<u8>> = (0..40).map(|_| to_port1(&hello)).collect();
    let bgp: Vec<Vec<u8>> = (0..40)
        .map(|i| to_port1(&tcp("10.2.0.2", "10.2.0.1", 40000, 179, 0x18 + (i % 2))))
        .collect();
    let lcores = start(eal, vec![w]);
    lab.feed(0, 0, &flood);
    lab.feed(1, 0, &hellos);
    lab.feed(1, 0, &bgp);
    finish(eal, lcores, &stop, || {
        rx_pkts(&stats) == 1080 && lab.rx_empty()
    });
    let (mut from1, mut from0) = (0, 0);
    while let Some((_, m)) = punts.pop() {
        if m.data()[26..30] == [10, 2, 0, 2] {
            from1 += 1;
        } else {
            from0 += 1;
        }
    }
    assert_eq!(from1, 80, "every hello and BGP segment from port 1");
    assert!(from0 < 200, "{from0} flood packets went up");
    let policed = |ix: usize, c: PuntClass| stats.ifaces[ix].punt_policed[c as usize].get();
    assert!(
        policed(1, PuntClass::Syn) >= 400,
        "{}",
        policed(1, PuntClass::Syn)
    );
    assert!(policed(1, PuntClass::Tcp) >= 350);
    assert_eq!(policed(2, PuntClass::Hello) + policed(2, PuntClass::Tcp), 0);
    assert_eq!(
        counters(&stats)["punt_policed_control"],
        policed(1, PuntClass::Syn) + policed(1, PuntClass::Tcp)
    );
    assert_eq!(lab.pool.in_use(), 0);
}

/// One class per packet in every counter view: with the control namespace's
/// sessions known and nothing listening on BGP's port, a SYN flood to 179 is
/// policed as `other` on the interface and in the global counters alike; the
/// neighbour's hellos stay control.
#[test]
fn policed_packets_are_counted_in_one_class_everywhere() {
    use dataplane::router::Sessions;
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "pc", 1, 1024);
    let mut ctl = lsr(&lab);
    ctl.set_punt_to_host(true);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, punts) = worker(&mut ctl, &lab, &[(0, 0), (1, 0)], 0, &stop, core_cfg());
    let sessions = Arc::new(arc_swap::ArcSwap::from_pointee(Sessions::new(
        [22u16],
        [],
        [],
    )));
    let w = w
        .with_punt_rates(PuntRates {
            control_pps: 4000,
            other_pps: 100,
        })
        .with_sessions(sessions);
    let flood: Vec<Vec<u8>> = (0..600)
        .map(|i| from_host(&tcp("10.1.0.2", "10.1.0.1", 1024 + i as u16, 179, 0x02)))
        .collect();
    let lcores = start(eal, vec![w]);
    lab.feed(0, 0, &flood);
    finish(eal, lcores, &stop, || {
        rx_pkts(&stats) == 600 && lab.rx_empty()
    });
    while punts.pop().is_some() {}
    let policed = |c: PuntClass| stats.ifaces[1].punt_policed[c as usize].get();
    let c = counters(&stats);
    assert!(
        policed(PuntClass::Other) >= 400,
        "{}",
        policed(PuntClass::Other)
    );
    assert_eq!(policed(PuntClass::Syn), 0);
    assert_eq!(c["punt_policed_other"], policed(PuntClass::Other), "{c:?}");
    assert_eq!(c.get("punt_policed_control"), None, "{c:?}");
    assert_eq!(lab.pool.in_use(), 0);
}

/// `shrink_window` keeps a window inside the old one and refuses anything else,
/// on an mbuf (its packet length drops by what the segment loses) as on a heap
/// buffer; `grow_front` grows it into the headroom and no further.
#[test]
fn windows_shrink_within_the_data() {
    use dataplane::packet::Packet;
    let (eal, _g) = eal();
    let pool = Mempool::new(eal, "shrink", 63, 0, 2176).unwrap();
    let frame: Vec<u8> = (0..100u8).collect();
    let mut m = pool.alloc_with(&frame).unwrap();
    let mut v = VecPacket::new(&frame, 0);
    let (m0, _) = Packet::window(&m);
    let (v0, _) = v.window();
    // Past the data, in front or behind: refused, unchanged.
    for (front, len) in [
        (0, 101),
        (1, 100),
        (101, 0),
        (usize::MAX, 2),
        (2, usize::MAX),
    ] {
        assert!(!m.shrink_window(front, len), "{front} {len}");
        assert!(!v.shrink_window(front, len), "{front} {len}");
    }
    assert_eq!((Packet::window(&m), m.pkt_len()), ((m0, 100), 100));
    assert_eq!(v.window(), (v0, 100));
    // Inside: the window moves, the data is what was there.
    assert!(m.shrink_window(4, 60) && v.shrink_window(4, 60));
    assert_eq!((Packet::window(&m), m.pkt_len()), ((m0 + 4, 60), 60));
    assert_eq!(v.window(), (v0 + 4, 60));
    assert_eq!(m.data(), &frame[4..64]);
    assert_eq!(v.data(), &frame[4..64]);
    // The front dropped: past the data refused, inside the rest stays.
    assert!(!m.drop_front(61) && !v.drop_front(61));
    assert!(!m.drop_front(usize::MAX) && !v.drop_front(usize::MAX));
    assert!(m.drop_front(4) && v.drop_front(4));
    assert_eq!((Packet::window(&m), m.pkt_len()), ((m0 + 8, 56), 56));
    assert_eq!(v.window(), (v0 + 8, 56));
    assert_eq!(m.data(), &frame[8..64]);
    assert_eq!(v.data(), &frame[8..64]);
    // Grown back in front: the bytes there come back into the window; past
    // the headroom refused, unchanged.
    assert!(m.grow_front(4) && v.grow_front(4));
    assert_eq!((Packet::window(&m), m.pkt_len()), ((m0 + 4, 60), 60));
    assert_eq!(v.window(), (v0 + 4, 60));
    assert_eq!(m.data(), &frame[4..64]);
    assert_eq!(v.data(), &frame[4..64]);
    assert!(!m.grow_front(m0 + 5) && !v.grow_front(v0 + 5));
    assert!(!m.grow_front(usize::MAX) && !v.grow_front(usize::MAX));
    assert_eq!((Packet::window(&m), m.pkt_len()), ((m0 + 4, 60), 60));
    assert_eq!(v.window(), (v0 + 4, 60));
    assert!(m.drop_front(4) && v.drop_front(4));
    // To nothing, at the end.
    assert!(m.shrink_window(56, 0) && v.shrink_window(56, 0));
    assert_eq!((Packet::window(&m), m.pkt_len()), ((m0 + 64, 0), 0));
    drop(m);
    assert_eq!(pool.in_use(), 0);
}

/// Frames in two segments (what a PMD that scatters hands over) are dropped and
/// counted by every path, IPv4 or labelled, between whole frames the fast path
/// forwards; every segment goes back to the pool.
#[test]
fn multi_segment_frames_are_dropped_and_counted() {
    let (eal, _g) = eal();
    let lab = Lab::new(eal, "s", 1, 1024);
    let mut ctl = lsr(&lab);
    let stop = Arc::new(AtomicBool::new(false));
    let (w, stats, punts) = worker(&mut ctl, &lab, &[(0, 0)], 0, &stop, core_cfg());
    let ip = host_ip(5, [198, 18], 7, 100);
    let plain = from_host(&ip);
    let mpls = eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(&[(100, 9)], &ip));
    // Whole and split frames in turn: the runs of the fast path end at each split
    // one and take the next whole one again.
    let mut b = Burst::new();
    let mut split = 0u64;
    for i in 0..64 {
        let f = if i % 4 < 2 { &plain } else { &mpls };
        let m = if i % 2 == 0 {
            lab.pool.alloc_with(f).unwrap()
        } else {
            let mut head = lab.pool.alloc_with(&f[..40]).unwrap();
            head.chain(lab.pool.alloc_with(&f[40..]).unwrap()).unwrap();
            assert!(!head.is_contiguous());
            assert_eq!(head.pkt_len() as usize, f.len());
            split += 1;
            head
        };
        b.push(m).unwrap();
    }
    assert_eq!(lab.pool.in_use(), 64 + split as u32);
    assert_eq!(lab.rx[0][0].enqueue_burst(&mut b), 64);
    run(eal, vec![w], &stop, || {
        rx_pkts(&stats) == 64 && lab.rx_empty()
    });
    let got = lab.drain(1, 0);
    let ip_out = eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, ip[8] - 1));
    let mpls_out = eth(
        mac_n(1),
        mac_r(1),
        None,
        ETH_MPLS,
        &labelled(&[(200, 8)], &ip),
    );
    assert_eq!(got.len(), 32);
    assert_eq!(got.iter().filter(|g| **g == ip_out).count(), 16);
    assert_eq!(got.iter().filter(|g| **g == mpls_out).count(), 16);
    assert_eq!(counters(&stats), expect(&[("multi_segment", split)]));
    assert!(punts.is_empty());
    assert_eq!(lab.pool.in_use(), 0);
}
