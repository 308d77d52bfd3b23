//! Churn under traffic, and the soak: the full IPv4 table (the 2024 table's
//! 901,899 prefixes when the shared data sits beside the repository, else a
//! generated table) in a router whose worker runs on a real EAL lcore over `net_ring` ports.
//! While one half of the table is withdrawn and re-announced over and over with
//! its next hops swapped, traffic flows: to the stable half (which must all leave
//! on port 1, none lost or misrouted), labelled (swapped, port 1), pings to the
//! router (answered on port 0), and to the churning half (forwarded either way or
//! dropped with a counter). Every 100 ms the control thread answers what `dpctl`
//! polls (`show run`, `show errors`, `show interfaces`, `show route`). At the end
//! every mbuf is back in the pool and the counters add up to what was sent; the
//! resident memory after the first quarter stays within a bound.
//!
//! `CHURN_SECS` sets the duration (default 10 s; `make soak` runs 600 s in
//! release mode), `CHURN_PPS` the offered load (default 2 M packets/s, at most what
//! the generator manages). The figures are printed (`--nocapture`).

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ctl::api::{DaemonInfo, RouterApi};
use ctl::config::Config;
use ctl::ports::NoPorts;
use ctl::routing::Routing;
use ctl::server::Service;
use dataplane::dpdk::{BURST, Burst, Eal, EalConfig, Mempool, Port, PortConfig, Ring, tsc_hz};
use dataplane::router::{
    CoreConfig, DropReason, Interface, PuntRates, RouterControl, RouterWorker, Stage,
};
use dataplane::xconnect::IdlePolicy;
use fib::{Ipv4Prefix, Path, RouteKind};
use mpls::LabelAction;

const MAC_R: [[u8; 6]; 3] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 2, 1]];
const MAC_N: [[u8; 6]; 3] = [[2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 1, 2], [2, 0, 0, 0, 2, 2]];
/// IPv4 identification of each traffic class.
const STABLE: u16 = 0x5ab1;
const CHURN: u16 = 0xc4a0;
const ECHO: u16 = 0xec40;
/// Label switched to port 1 as 200.
const LABEL_IN: u32 = 100;

/// The table: (network, length), host bits clear, sorted, without duplicates:
/// the 2024 table's IPv4 prefixes (901,899) when `shared/data/` is beside the
/// repository, else the 2014 dump, else a generated table of the 2014 one's size.
fn table() -> (Vec<(u32, u8)>, &'static str) {
    if let Some(t) = tables::load_v4_2024() {
        let mut t: Vec<(u32, u8)> = t.into_iter().map(|(a, l, _)| (a, l)).collect();
        t.sort_unstable();
        t.dedup();
        return (t, "the 2024 table");
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/rib-v4-2014-05-13.txt.gz");
    let mut t = Vec::with_capacity(520_000);
    let source = match std::fs::File::open(&path) {
        Ok(f) => {
            for line in BufReader::new(flate2::read::GzDecoder::new(f)).lines() {
                let line = line.expect("read the table");
                let Some((p, _)) = line.split_once('\t') else {
                    continue;
                };
                if let Ok(p) = p.parse::<Ipv4Prefix>() {
                    t.push((p.addr_u32(), p.prefix_len()));
                }
            }
            "RouteViews 2014-05-13"
        }
        Err(_) => {
            // Lengths spread as in a real table: mostly /24, then /22-/23, /16-/21.
            let mut x = 0x2545_f491_u64;
            while t.len() < 512_621 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let len = [24, 24, 24, 24, 24, 23, 22, 22, 21, 20, 19, 16][(x >> 40) as usize % 12];
                let addr = (x as u32) & (u32::MAX << (32 - len));
                // (public unicast space only)
                if (1..224).contains(&(addr >> 24)) && addr >> 24 != 10 && addr >> 24 != 127 {
                    t.push((addr, len));
                }
            }
            "generated"
        }
    };
    t.sort_unstable();
    t.dedup();
    (t, source)
}

/// For each prefix of `stable`, one address in it that no longer prefix of
/// `all` covers (so its route is that prefix), if there is one.
fn destinations(stable: &[(u32, u8)], all: &HashSet<(u32, u8)>) -> Vec<u32> {
    let covered = |a: u32, len: u8| {
        (len + 1..=32).any(|l| all.contains(&(a & (u32::MAX << (32 - u32::from(l))), l)))
    };
    stable
        .iter()
        .filter_map(|&(net, len)| {
            let size = if len == 0 {
                u32::MAX
            } else {
                (1u32 << (32 - len)) - 1
            };
            [size / 2, 1, size.saturating_sub(1), size / 4, size / 4 * 3]
                .into_iter()
                .map(|off| net | off)
                .find(|&a| !covered(a, len))
        })
        .collect()
}

/// An Ethernet frame from the host on port 0: IPv4 (ICMP echo request when
/// `echo`, else UDP) to `dst`, marked with `id`, under `labels`.
fn frame(dst: u32, id: u16, echo: bool, labels: &[u32]) -> Vec<u8> {
    let mut ip = vec![0u8; 64];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&64u16.to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[8] = 64;
    ip[9] = if echo { 1 } else { 17 };
    ip[12..16].copy_from_slice(&[10, 1, 0, 2]);
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = wire::checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    if echo {
        ip[20] = 8;
        let c = wire::checksum::checksum(&ip[20..]);
        ip[22..24].copy_from_slice(&c.to_be_bytes());
    }
    let mut f = Vec::with_capacity(14 + 4 * labels.len() + ip.len());
    f.extend_from_slice(&MAC_R[0]);
    f.extend_from_slice(&MAC_N[0]);
    f.extend_from_slice(if labels.is_empty() {
        &[8, 0]
    } else {
        &[0x88, 0x47]
    });
    for (k, l) in labels.iter().enumerate() {
        let s = u32::from(k + 1 == labels.len());
        f.extend_from_slice(&(l << 12 | s << 8 | 64).to_be_bytes());
    }
    f.extend_from_slice(&ip);
    f
}

/// What left, by class: (port, class id, sent correctly).
fn classify(port: usize, f: &[u8]) -> (u16, bool) {
    let (l3, labelled) = match (f.get(12), f.get(13)) {
        (Some(0x88), Some(0x47)) => (18, true),
        _ => (14, false),
    };
    let Some(ip) = f.get(l3..l3 + 20) else {
        return (0, false);
    };
    let id = u16::from_be_bytes([ip[4], ip[5]]);
    let to_nbr = |p: usize| f[..6] == MAC_N[p] && f[6..12] == MAC_R[p];
    // An ICMP error about a churning destination (no route for a moment).
    if ip[9] == 1 && f.get(l3 + 20) == Some(&3) {
        return (CHURN, port == 0 && to_nbr(0));
    }
    let ok = match id {
        STABLE => port == 1 && to_nbr(1) && !labelled && ip[8] == 63,
        // the swapped label: 200, TTL 63, bottom of stack
        LABEL_ID => {
            port == 1 && to_nbr(1) && f[14..18] == (200u32 << 12 | 1 << 8 | 63).to_be_bytes()
        }
        // echo replies keep the request's id, back to the host
        ECHO => port == 0 && to_nbr(0) && ip[9] == 1 && f.get(l3 + 20) == Some(&0),
        CHURN => (port == 1 || port == 2) && to_nbr(port),
        _ => false,
    };
    (id, ok)
}

const LABEL_ID: u16 = 0x1ab0;

#[test]
fn full_table_churn_under_mixed_traffic_loses_nothing_stable() {
    let secs: u64 = std::env::var("CHURN_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let pps: f64 = std::env::var("CHURN_PPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2e6);
    let eal = Eal::init_with(&EalConfig {
        program: "churn-test".into(),
        main_cpu: 0,
        worker_cpus: vec![1 % std::thread::available_parallelism().map_or(1, |n| n.get()) as u16],
        memory_mb: 256,
        ..Default::default()
    })
    .expect("EAL init (run scripts/setup.sh first)");

    // Three ring ports; rings as large as the pool, so no ring ever refuses.
    let pool = Mempool::new(eal, "churn", 4095, 0, 2176).unwrap();
    let ring = |n: String| Arc::new(Ring::new(eal, &n, 4096).unwrap());
    let rx: Vec<Arc<Ring>> = (0..3).map(|p| ring(format!("chr{p}"))).collect();
    let tx: Vec<Arc<Ring>> = (0..3).map(|p| ring(format!("cht{p}"))).collect();
    let ports: Vec<Port> = (0..3)
        .map(|p| {
            let cfg = PortConfig::new(&format!("port{p}"), &format!("net_ring_ch{p}"));
            Port::from_rings(eal, &cfg, &[rx[p].clone()], &[tx[p].clone()], pool.clone()).unwrap()
        })
        .collect();
    let ids: Vec<u16> = ports.iter().map(Port::id).collect();

    let mut ctl = RouterControl::new();
    for p in 0..3u8 {
        ctl.add_interface(Interface {
            ifindex: u32::from(p) + 1,
            name: format!("port{p}"),
            port: ids[usize::from(p)],
            vlan: None,
            mac: MAC_R[usize::from(p)],
            mtu: 1500,
            up: true,
            table: 0,
            addrs: vec![(Ipv4Addr::new(10, p + 1, 0, 1), 24)],
            addrs6: Vec::new(),
        })
        .unwrap();
        ctl.set_neighbor(
            u32::from(p) + 1,
            Ipv4Addr::new(10, p + 1, 0, 2),
            MAC_N[usize::from(p)],
        )
        .unwrap();
    }
    let gw = |p: u8| RouteKind::Paths(vec![Path::gateway(Ipv4Addr::new(10, p + 1, 0, 2))]);
    let adj1 = ctl.adjacency(2, Ipv4Addr::new(10, 2, 0, 2)).unwrap();
    ctl.label_add(LABEL_IN, true, LabelAction::swap(adj1, &[200]))
        .unwrap();

    // The table: even prefixes stay (via port 1), odd ones churn.
    let (t, source) = table();
    let t0 = Instant::now();
    ctl.batch(|c| {
        for (k, &(net, len)) in t.iter().enumerate() {
            let via = if k % 2 == 0 { 1 } else { 1 + (k / 2 % 2) as u8 };
            let p = Ipv4Prefix::new(Ipv4Addr::from(net), len).unwrap();
            c.route_add(0, p, gw(via)).unwrap();
        }
    });
    let load = t0.elapsed();
    let stable: Vec<(u32, u8)> = t.iter().copied().step_by(2).collect();
    let churn: Vec<(u32, u8)> = t.iter().copied().skip(1).step_by(2).collect();
    let mut all: HashSet<(u32, u8)> = t.iter().copied().collect();
    for p in 1..=3u32 {
        all.insert((0x0a00_0000 | p << 16, 24));
    }
    let dsts = destinations(&stable, &all);
    let churn_dsts: Vec<u32> = churn.iter().map(|&(n, _)| n | 1).collect();
    eprintln!(
        "churn: {} prefixes ({source}) loaded in {:.2} s; {} stable destinations",
        t.len(),
        load.as_secs_f64(),
        dsts.len()
    );
    assert!(dsts.len() > stable.len() / 2, "too few stable destinations");

    // The worker.
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = CoreConfig {
        icmp_rate_pps: u32::MAX / 2,
        icmp_burst: u32::MAX / 2,
        ..CoreConfig::default()
    };
    let (core, punts) = ctl.new_core(cfg, tsc_hz());
    let stats = core.stats().clone();
    let n_ports = usize::from(*ids.iter().max().unwrap()) + 1;
    let mut w = RouterWorker::new(
        core,
        vec![(ids[0], 0)],
        0,
        n_ports,
        punts.clone(),
        stop.clone(),
        IdlePolicy::default(),
    )
    .with_pool(pool.clone())
    .with_punt_rates(PuntRates {
        control_pps: u32::MAX / 2,
        other_pps: u32::MAX / 2,
    });
    let lcore = eal.worker_lcores()[0];
    eal.launch(lcore, move || {
        w.run();
        0
    })
    .unwrap();

    // Churn and dpctl polls on their own thread (the control thread's work).
    let done = Arc::new(AtomicBool::new(false));
    let updates = Arc::new(AtomicU64::new(0));
    let rss = Arc::new(std::sync::Mutex::new(Vec::new()));
    let control = {
        let (done, updates, rss) = (done.clone(), updates.clone(), rss.clone());
        std::thread::spawn(move || {
            let config = Config::parse("[forwarding]\nmode = \"router\"\n", "churn.toml").unwrap();
            let mut polls = 0u64;
            let mut round = 0usize;
            let mut last_poll = Instant::now();
            let mut last_rss = Instant::now();
            let start = Instant::now();
            // What the control loop does between updates: neighbour events, dpctl
            // polls every 100 ms, and (for this test) the resident memory each second.
            let mut tick = |ctl: &mut RouterControl| {
                ctl.poll();
                if last_poll.elapsed() >= Duration::from_millis(100) {
                    last_poll = Instant::now();
                    polls += 1;
                    let info = DaemonInfo {
                        config_path: None,
                        config: config.clone(),
                        socket: "churn.sock".into(),
                        lcores: vec![1],
                        tsc_hz: tsc_hz(),
                        started: start,
                        metrics: None,
                    };
                    let mut api =
                        RouterApi::new(ctl, &NoPorts, Vec::new(), Routing::default(), info);
                    for cmd in [
                        &["show", "run"][..],
                        &["show", "errors"],
                        &["show", "interfaces"],
                        &["show", "route", "10.1.0.0/24"],
                    ] {
                        let args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
                        api.handle(&args).unwrap();
                    }
                }
                if last_rss.elapsed() >= Duration::from_secs(1) {
                    last_rss = Instant::now();
                    rss.lock()
                        .unwrap()
                        .push((start.elapsed(), resident_bytes()));
                }
            };
            while !done.load(Ordering::Relaxed) {
                // Withdraw the churning half, then announce it again with the other
                // next hop, in batches as the FPM and netlink readers apply them.
                for chunk in churn.chunks(1000) {
                    ctl.batch(|c| {
                        for &(net, len) in chunk {
                            let p = Ipv4Prefix::new(Ipv4Addr::from(net), len).unwrap();
                            c.route_del(0, p).unwrap();
                        }
                    });
                    updates.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    tick(&mut ctl);
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                }
                round += 1;
                for chunk in churn.chunks(1000) {
                    ctl.batch(|c| {
                        for (k, &(net, len)) in chunk.iter().enumerate() {
                            let via = 1 + ((k + round) % 2) as u8;
                            let p = Ipv4Prefix::new(Ipv4Addr::from(net), len).unwrap();
                            c.route_add(0, p, gw(via)).unwrap();
                        }
                    });
                    updates.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    tick(&mut ctl);
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                }
            }
            let elapsed = start.elapsed();
            (polls, round, elapsed)
        })
    };

    // Traffic: fed into port 0's rx ring, drained from every tx ring and checked.
    let mut fed = [0u64; 4]; // stable, labelled, echo, churn
    let mut ok = [0u64; 4];
    let mut wrong = 0u64;
    let class = |id: u16| match id {
        STABLE => 0,
        LABEL_ID => 1,
        ECHO => 2,
        _ => 3,
    };
    let (mut si, mut ci) = (0usize, 0usize);
    let mut b = Burst::new();
    let mut out = Burst::new();
    let mut drain = |ok: &mut [u64; 4], wrong: &mut u64| {
        for (p, r) in tx.iter().enumerate() {
            while r.dequeue_burst(&mut out) > 0 {
                for m in out.as_slice() {
                    let (id, good) = classify(p, m.data());
                    if good {
                        ok[class(id)] += 1;
                    } else if id != CHURN {
                        *wrong += 1;
                    }
                }
                out.clear();
            }
        }
    };
    let t_start = Instant::now();
    while t_start.elapsed() < Duration::from_secs(secs) {
        drain(&mut ok, &mut wrong);
        // At the offered rate at most (the generator shares a core with the
        // control thread: what it does not take, the updates get).
        let due = t_start.elapsed().as_secs_f64() * pps;
        if pool.in_use() > 3000 || fed.iter().sum::<u64>() as f64 > due {
            std::thread::sleep(Duration::from_micros(50));
            continue;
        }
        for k in 0..BURST {
            let (f, c) = match k % 16 {
                0 => (frame(0x0a01_0001, ECHO, true, &[]), 2),
                1 => (
                    frame(dsts[si % dsts.len()], LABEL_ID, false, &[LABEL_IN]),
                    1,
                ),
                2..=5 => {
                    ci += 1;
                    (
                        frame(churn_dsts[ci % churn_dsts.len()], CHURN, false, &[]),
                        3,
                    )
                }
                _ => {
                    si += 1;
                    (frame(dsts[si % dsts.len()], STABLE, false, &[]), 0)
                }
            };
            let Some(m) = pool.alloc_with(&f) else {
                break;
            };
            b.push(m).unwrap();
            fed[c] += 1;
        }
        let n = b.len();
        assert_eq!(rx[0].enqueue_burst(&mut b), n);
    }
    done.store(true, Ordering::Relaxed);
    let (polls, rounds, churn_time) = control.join().unwrap();
    // Let the worker finish, then stop it.
    let settle = Instant::now();
    while (rx[0].count() > 0 || pool.in_use() > 0) && settle.elapsed() < Duration::from_secs(10) {
        drain(&mut ok, &mut wrong);
        std::thread::sleep(Duration::from_millis(1));
    }
    drain(&mut ok, &mut wrong);
    stop.store(true, Ordering::Relaxed);
    assert_eq!(eal.wait(lcore), 0, "the worker panicked");
    while punts.pop().is_some() {}

    let sent: u64 = fed.iter().sum();
    let n = updates.load(Ordering::Relaxed);
    let rate = n as f64 / churn_time.as_secs_f64();
    let rss = rss.lock().unwrap().clone();
    let after_warmup: Vec<u64> = rss
        .iter()
        .filter(|(t, _)| t.as_secs() >= secs / 4)
        .map(|&(_, r)| r)
        .collect();
    let (lo, hi) = (
        after_warmup.iter().min().copied().unwrap_or(0),
        after_warmup.iter().max().copied().unwrap_or(0),
    );
    eprintln!(
        "churn: {secs} s, {rounds} rounds, {n} route updates ({:.0} k/s sustained under traffic, {:.2} M packets/s offered), {polls} dpctl polls",
        rate / 1e3,
        fed.iter().sum::<u64>() as f64 / secs as f64 / 1e6
    );
    eprintln!(
        "churn: sent {sent} (stable {}, labelled {}, echo {}, churning {}); right: stable {}, labelled {}, echo {}; wrong or lost: {}",
        fed[0],
        fed[1],
        fed[2],
        fed[3],
        ok[0],
        ok[1],
        ok[2],
        fed[0] + fed[1] + fed[2] - ok[0] - ok[1] - ok[2]
    );
    eprintln!(
        "churn: resident memory after the first quarter {:.1}..{:.1} MiB ({} samples); mbufs in use at the end {}",
        lo as f64 / 1048576.0,
        hi as f64 / 1048576.0,
        after_warmup.len(),
        pool.in_use()
    );

    assert_eq!(wrong, 0, "stable traffic misrouted");
    assert_eq!(ok[..3], fed[..3], "stable traffic lost");
    assert_eq!(pool.in_use(), 0, "mbufs not back");
    // The counters say what was sent: every packet received, and each either
    // left (forwarded or answered) or was dropped under a reason.
    assert_eq!(stats.stages[Stage::Rx as usize].pkts.get(), sent);
    assert_eq!(stats.ifaces[1].rx_pkts.get(), sent);
    let tx_pkts: u64 = (1..=3).map(|i| stats.ifaces[i].tx_pkts.get()).sum();
    let icmp = stats.icmp_errors.get();
    assert_eq!(
        tx_pkts + stats.total_drops() - icmp,
        sent,
        "tx {tx_pkts} + drops {} - ICMP errors {icmp}",
        stats.total_drops()
    );
    assert_eq!(stats.drop_count(DropReason::TxFull), 0);
    // Resident memory is flat once warm: a churn round reuses what the last one
    // freed (growth below 5% of the size).
    if after_warmup.len() >= 4 {
        assert!(
            hi - lo < lo / 20,
            "resident memory grew from {lo} to {hi} bytes"
        );
    }
}

/// Resident set size of this process.
fn resident_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    s.split_whitespace()
        .nth(1)
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(0)
        * 4096
}
