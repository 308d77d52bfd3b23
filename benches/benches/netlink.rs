//! Netlink ingest: decode + apply of RTM_NEWROUTE for the full IPv4 table (the
//! shared 2014 RIB, 512,621 prefixes), in messages per second.
//!
//! The messages are built by hand as the kernel sends them (nlmsghdr, rtmsg,
//! RTA_TABLE, RTA_DST, RTA_PRIORITY, then RTA_GATEWAY + RTA_OIF, or RTA_MULTIPATH
//! with two rtnexthops for every tenth prefix) and packed into datagrams of up to
//! 32 KiB, the shape of a route dump. Next hops alternate between two twins
//! (kernel ifindex 11 and 12, router interfaces 1 and 2).
//!
//! - `netlink/decode_full_table`: `decode::messages` over every datagram.
//! - `netlink/ingest_full_table`: decode + `KernelView::apply_batch` into a fresh
//!   router, one batch (one publication) per 1024 datagrams, as `Learner::poll`.
//! - `netlink/churn_replace`: on a router holding the full table, decode + apply
//!   batches of 10,000 RTM_NEWROUTE that move routes to the other next hop.
//!
//! Printed once: the process's VmRSS before the router is built and after the
//! table is in (bytes per route; goal <= 300 for RIB + FIB), and a one-off
//! ingest rate against VPP linux-cp's best published netlink rate (~200k
//! messages/s) and the goal (>= 1M messages/s).
//!
//! Run: `cargo bench -p benches --bench netlink`
#![deny(unsafe_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, SamplingMode, Throughput};
use ctl::linux::change::{Change, Target};
use ctl::linux::decode::{self, Msg};
use ctl::linux::learner::KernelView;
use dataplane::router::{Interface, RouteSource, RouterControl};

/// Kernel ifindex of the two twins, and the gateway behind each.
const KIF: [u32; 2] = [11, 12];
const GW: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 1, 0, 2), Ipv4Addr::new(10, 2, 0, 2)];
/// Largest datagram the kernel fills on a dump.
const DATAGRAM: usize = 32 * 1024;
/// Datagrams `Learner::poll` reads before applying them as one batch.
const POLL: usize = 1024;
/// Messages per churn batch.
const CHURN: usize = 10_000;

/// Appends a netlink attribute (padded to 4 bytes).
fn attr(b: &mut Vec<u8>, kind: u16, val: &[u8]) {
    b.extend((4 + val.len() as u16).to_ne_bytes());
    b.extend(kind.to_ne_bytes());
    b.extend(val);
    b.resize(b.len().next_multiple_of(4), 0);
}

/// Appends one RTM_NEWROUTE for prefix number `i` of the table. `flip` moves
/// it to the other next hop (an ECMP route: the other first hop, weight 2).
fn newroute(b: &mut Vec<u8>, i: usize, (addr, len): (u32, u8), flip: bool) {
    let start = b.len();
    b.extend([0; 16]); // nlmsghdr, filled in below
    b.extend([2, len, 0, 0, 254, 12, 0, 1]); // AF_INET, dst_len, table main, bird, unicast
    b.extend(0u32.to_ne_bytes()); // rtm_flags
    attr(b, 15, &254u32.to_ne_bytes()); // RTA_TABLE
    if len > 0 {
        attr(b, 1, &addr.to_be_bytes()); // RTA_DST
    }
    attr(b, 6, &32u32.to_ne_bytes()); // RTA_PRIORITY
    let first = (i + usize::from(flip)) % 2;
    if i % 10 == 0 {
        let mut mp = Vec::with_capacity(32);
        for (n, h) in [first, 1 - first].into_iter().enumerate() {
            let hops = u8::from(flip && n == 0); // rtnh_hops: weight - 1
            mp.extend(16u16.to_ne_bytes()); // rtnh_len: rtnexthop + RTA_GATEWAY
            mp.extend([0, hops]);
            mp.extend(KIF[h].to_ne_bytes());
            attr(&mut mp, 5, &GW[h].octets()); // RTA_GATEWAY
        }
        attr(b, 9, &mp); // RTA_MULTIPATH
    } else {
        attr(b, 5, &GW[first].octets()); // RTA_GATEWAY
        attr(b, 4, &KIF[first].to_ne_bytes()); // RTA_OIF
    }
    let len = (b.len() - start) as u32;
    let flags: u16 = 0x1 | 0x100 | 0x400; // NLM_F_REQUEST | NLM_F_REPLACE | NLM_F_CREATE
    let hdr = [
        &len.to_ne_bytes()[..],
        &24u16.to_ne_bytes(), // RTM_NEWROUTE
        &flags.to_ne_bytes(),
        &(i as u32).to_ne_bytes(),
        &0u32.to_ne_bytes(),
    ]
    .concat();
    b[start..start + 16].copy_from_slice(&hdr);
}

/// RTM_NEWROUTEs for prefixes `idx` of `rib`, packed in datagrams of up to 32 KiB.
fn datagrams(rib: &[(u32, u8, u32)], idx: std::ops::Range<usize>, flip: bool) -> Vec<Vec<u8>> {
    let (mut out, mut cur, mut msg) = (Vec::new(), Vec::with_capacity(DATAGRAM), Vec::new());
    for i in idx {
        msg.clear();
        newroute(&mut msg, i, (rib[i].0, rib[i].1), flip);
        if cur.len() + msg.len() > DATAGRAM {
            out.push(std::mem::replace(&mut cur, Vec::with_capacity(DATAGRAM)));
        }
        cur.extend_from_slice(&msg);
    }
    out.push(cur);
    out
}

/// The same datagrams with every RTM_NEWROUTE turned into an RTM_DELROUTE: a
/// routing daemon withdrawing the table.
fn as_deletes(dgrams: &[Vec<u8>]) -> Vec<Vec<u8>> {
    dgrams
        .iter()
        .map(|d| {
            let mut d = d.clone();
            let mut at = 0;
            while at + 16 <= d.len() {
                let len = u32::from_ne_bytes(d[at..at + 4].try_into().expect("4 bytes")) as usize;
                d[at + 4..at + 6].copy_from_slice(&25u16.to_ne_bytes()); // RTM_DELROUTE
                d[at + 6..at + 8].copy_from_slice(&1u16.to_ne_bytes()); // NLM_F_REQUEST
                at += len.next_multiple_of(4).max(16);
            }
            d
        })
        .collect()
}

/// A router with interfaces 1 (port0, 10.1.0.1/24) and 2 (port1, 10.2.0.1/24),
/// neighbours 10.1.0.2 and 10.2.0.2, and an empty view over twins 11 -> 1, 12 -> 2.
fn router() -> (RouterControl, KernelView) {
    let mut ctl = RouterControl::new();
    for p in 0..2u8 {
        let iface = Interface {
            ifindex: u32::from(p) + 1,
            name: format!("port{p}"),
            port: u16::from(p),
            vlan: None,
            mac: [2, 0, 0, 0, p, 1],
            mtu: 1500,
            up: true,
            table: 0,
            addrs: vec![(Ipv4Addr::new(10, p + 1, 0, 1), 24)],
            addrs6: Vec::new(),
        };
        ctl.add_interface(iface).expect("interface");
        let mac = [2, 0, 0, 0, p, 0x99];
        ctl.set_neighbor(u32::from(p) + 1, GW[usize::from(p)], mac)
            .expect("neighbour");
    }
    let twins = HashMap::from([(KIF[0], 1), (KIF[1], 2)]);
    (ctl, KernelView::new(twins, BTreeMap::new()))
}

/// Decodes and applies `dgrams` as `Learner::poll` does: one batch per
/// [`POLL`] datagrams.
fn ingest(ctl: &mut RouterControl, view: &mut KernelView, dgrams: &[Vec<u8>]) {
    for chunk in dgrams.chunks(POLL) {
        let mut msgs = Vec::new();
        for d in chunk {
            msgs.extend(decode::messages(d));
        }
        view.apply_batch(ctl, msgs);
    }
}

/// VmRSS of this process, bytes.
fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS");
    kb * 1024
}

/// Hands freed heap memory back to the kernel (glibc), so VmRSS counts what is
/// held: what the daemon does after a resync.
fn trim() {
    ctl::linux::heap::trim();
}

/// FPM: the same messages as zebra would send them, one frame per datagram, over
/// a TCP connection on loopback into the daemon's FPM server (decode + apply as
/// the FPM source). Three runs; prints messages/s from connect to the last
/// message applied, and the time from connect to the swept table.
fn fpm_over_tcp(full: &[Vec<u8>], n: u64, unique: usize) {
    use ctl::linux::fpm::{FpmSection, FpmServer, HEADER};
    use std::io::Write;
    let frames: Vec<u8> = full
        .iter()
        .flat_map(|d| {
            let mut f = vec![1, 1];
            f.extend_from_slice(&((d.len() + HEADER) as u16).to_be_bytes());
            f.extend_from_slice(d);
            f
        })
        .collect();
    let mut runs = Vec::new();
    for _ in 0..3 {
        let (mut ctl, _) = router();
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let addr = l.local_addr().expect("address");
        let section = FpmSection {
            address: "127.0.0.1".into(),
            port: addr.port(),
            quiet_ms: 20,
            hold_s: 60,
            restart_s: 0,
            ..FpmSection::default()
        };
        let twins = HashMap::from([(KIF[0], 1), (KIF[1], 2)]);
        let mut s = FpmServer::new(section, l, twins, BTreeMap::new()).expect("server");
        let data = frames.clone();
        let t0 = Instant::now();
        let writer = std::thread::spawn(move || {
            let mut z = std::net::TcpStream::connect(addr).expect("connect");
            z.write_all(&data).expect("write");
            z
        });
        while s.messages() < n {
            s.poll(&mut ctl);
        }
        let applied = t0.elapsed();
        while s.walking() {
            s.poll(&mut ctl);
            std::thread::sleep(Duration::from_millis(1));
        }
        let swept = t0.elapsed();
        drop(writer.join());
        assert_eq!(ctl.routes_of(RouteSource::Fpm).count(), unique);
        runs.push((applied, swept));
    }
    runs.sort();
    let (applied, swept) = runs[1];
    eprintln!(
        "FPM over TCP, full table (median of 3): {:.0} msgs/s to the last message applied \
         ({applied:.2?}), swept {swept:.2?} after connect (20 ms quiet time included); \
         SONiC's fpmsyncd: 17-25k routes/s",
        n as f64 / applied.as_secs_f64()
    );
}

fn main() {
    let rib = benches::rib::load_v4();
    let n = rib.len();
    let unique = rib
        .iter()
        .map(|&(a, l, _)| (a, l))
        .collect::<HashSet<_>>()
        .len();
    let full = datagrams(&rib, 0..n, false);
    let bytes: usize = full.iter().map(Vec::len).sum();
    println!(
        "{n} RTM_NEWROUTE ({unique} distinct prefixes), {} datagrams, {bytes} bytes",
        full.len()
    );
    check_decode(&rib);
    let (mut ctl, mut view, base) = first_ingest(&full, n, unique);
    let dels = as_deletes(&full);
    withdraw_and_announce(&mut ctl, &mut view, &full, &dels, n, base, unique);
    fpm_over_tcp(&full, n as u64, unique);

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("netlink");
    full_table_benches(&mut g, &full, &dels, n);
    churn_bench(&mut g, &rib, &mut ctl, &mut view);
    g.finish();
    let s = view.stats();
    assert_eq!((ctl.fib().route_count(0), s.refused), (base + unique, 0));
    c.final_summary();
}

/// What one message decodes to: prefix 1 (one next hop) and prefix 10 (two, as
/// RTA_MULTIPATH) of `rib` each decode to the route sent. Panics otherwise.
fn check_decode(rib: &[(u32, u8, u32)]) {
    let one = |i: usize| {
        let mut b = Vec::new();
        newroute(&mut b, i, (rib[i].0, rib[i].1), false);
        decode::messages(&b)
    };
    for (i, hops) in [(1, 1), (10, 2)] {
        match &one(i)[..] {
            [
                Ok(Msg::Change(Change::Route {
                    table: 254,
                    prefix,
                    metric: 32,
                    route: Some(Target::Paths(nh)),
                })),
            ] if prefix.addr() == Ipv4Addr::from(rib[i].0)
                && prefix.prefix_len() == rib[i].1
                && nh.len() == hops => {}
            other => panic!("prefix {i} decodes to {other:?}"),
        }
    }
}

/// One full ingest of the `n` messages of `full` into a fresh router: checks that
/// every one of the `unique` prefixes went in, and prints the memory it takes and
/// the one-off rate. Returns the router, its view, and the route count it had
/// before.
fn first_ingest(full: &[Vec<u8>], n: usize, unique: usize) -> (RouterControl, KernelView, usize) {
    trim();
    let rss0 = rss();
    let (mut ctl, mut view) = router();
    let base = ctl.fib().route_count(0);
    let t0 = Instant::now();
    ingest(&mut ctl, &mut view, full);
    let took = t0.elapsed();
    let routes = ctl.fib().route_count(0);
    let s = view.stats();
    assert_eq!(
        (routes, s.refused, s.malformed, s.messages),
        (base + unique, 0, 0, n as u64),
        "ingest: {:?}",
        s.last_error
    );
    let rss1 = rss();
    trim();
    let rss2 = rss();
    print_memory(&ctl, routes, unique, [rss0, rss1, rss2]);
    let rate = n as f64 / took.as_secs_f64();
    eprintln!(
        "one-off full ingest: {took:.2?}, {:.0} msgs/s = {:.2}x VPP linux-cp's ~200k msgs/s, \
         {:.2}x the goal of 1M msgs/s ({})",
        rate,
        rate / 200e3,
        rate / 1e6,
        if rate >= 1e6 { "met" } else { "not met" }
    );
    (ctl, view, base)
}

/// Prints VmRSS before the router (`rss[0]`), with the table in (`rss[1]`) and
/// after malloc_trim (`rss[2]`), per route of the `unique` prefixes, and the
/// FIB's own share of it.
fn print_memory(ctl: &RouterControl, routes: usize, unique: usize, rss: [u64; 3]) {
    let [rss0, rss1, rss2] = rss;
    let per = |r: u64| (r as f64 - rss0 as f64) / unique as f64;
    eprintln!(
        "VmRSS: {rss0} B before the router, {rss1} B with {routes} routes \
         ({:.0} B/route; {rss2} B, {:.0} B/route after malloc_trim); goal <= 300 B/route",
        per(rss1),
        per(rss2)
    );
    let m = ctl.fib().memory();
    let fib = m.total() as u64;
    eprintln!(
        "of which the FIB's own (lpm {} + fwd {} + control {}): {fib} B, {:.0} B/route; \
         the rest (RIB, allocator): {:.0} B/route",
        m.lpm_bytes,
        m.fwd_bytes,
        m.control_bytes,
        fib as f64 / unique as f64,
        per(rss2) - fib as f64 / unique as f64
    );
}

/// The whole table withdrawn (`dels`), then announced again (`full`, `n`
/// messages): both directions timed and printed, checking that the route count
/// falls back to `base` and rises again by the `unique` prefixes.
fn withdraw_and_announce(
    ctl: &mut RouterControl,
    view: &mut KernelView,
    full: &[Vec<u8>],
    dels: &[Vec<u8>],
    n: usize,
    base: usize,
    unique: usize,
) {
    let t0 = Instant::now();
    ingest(ctl, view, dels);
    let withdraw = t0.elapsed();
    assert_eq!(
        ctl.fib().route_count(0),
        base,
        "withdraw: {:?}",
        view.stats().last_error
    );
    let t0 = Instant::now();
    ingest(ctl, view, full);
    let again = t0.elapsed();
    assert_eq!(ctl.fib().route_count(0), base + unique);
    let (wr, ar) = (
        n as f64 / withdraw.as_secs_f64(),
        n as f64 / again.as_secs_f64(),
    );
    eprintln!(
        "full withdraw: {withdraw:.2?}, {wr:.0} msgs/s; announced again: {again:.2?}, {ar:.0} \
         msgs/s; withdraw/announce {:.2} (goal: both >= 1M msgs/s)",
        wr / ar
    );
}

/// `netlink/decode_full_table`, `netlink/ingest_full_table` (into a fresh router)
/// and `netlink/withdraw_full_table` (from a router holding the table), over the
/// datagrams of `full` and `dels` (`n` messages each).
fn full_table_benches(
    g: &mut BenchmarkGroup<'_, WallTime>,
    full: &[Vec<u8>],
    dels: &[Vec<u8>],
    n: usize,
) {
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(n as u64));
    g.bench_function("decode_full_table", |b| {
        b.iter(|| {
            for d in full {
                black_box(decode::messages(d));
            }
        })
    });
    g.bench_function("ingest_full_table", |b| {
        b.iter_batched(
            router,
            |(mut ctl, mut view)| {
                ingest(&mut ctl, &mut view, full);
                (ctl, view)
            },
            BatchSize::LargeInput,
        )
    });

    g.bench_function("withdraw_full_table", |b| {
        b.iter_batched(
            || {
                let (mut ctl, mut view) = router();
                ingest(&mut ctl, &mut view, full);
                (ctl, view)
            },
            |(mut ctl, mut view)| {
                ingest(&mut ctl, &mut view, dels);
                (ctl, view)
            },
            BatchSize::LargeInput,
        )
    });
}

/// `netlink/churn_replace`: on the router `ctl` / `view` holding the full table,
/// batch k of pass p moves prefixes [k * CHURN, (k + 1) * CHURN) of `rib` to next
/// hop variant p % 2, so every message replaces a route.
fn churn_bench(
    g: &mut BenchmarkGroup<'_, WallTime>,
    rib: &[(u32, u8, u32)],
    ctl: &mut RouterControl,
    view: &mut KernelView,
) {
    let batches = rib.len() / CHURN;
    let churn: Vec<Vec<Vec<u8>>> = [true, false]
        .iter()
        .flat_map(|&flip| (0..batches).map(move |k| (k, flip)))
        .map(|(k, flip)| datagrams(rib, k * CHURN..(k + 1) * CHURN, flip))
        .collect();
    g.throughput(Throughput::Elements(CHURN as u64))
        .sampling_mode(SamplingMode::Auto)
        .measurement_time(Duration::from_secs(5));
    let mut next = 0;
    g.bench_function("churn_replace", |b| {
        b.iter(|| {
            ingest(ctl, view, &churn[next % churn.len()]);
            next += 1;
        })
    });
}
