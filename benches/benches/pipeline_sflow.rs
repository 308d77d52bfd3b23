//! sFlow in the router pipeline: TSC cycles per packet of `Core::process` plus the
//! sFlow step (`SflowHook::begin`/`end`) on the IPv4 forward path, with sFlow off, on
//! but not sampling (rate 2^32-1), 1:1000 and 1:10 on the input interface, and
//! 1:10 on the output interfaces (tx: four ports, mixed in each vector).
//!
//! The table is 100,000 random prefixes (seeded) over four neighbours, so the
//! baseline is cheaper than the full-table `pipeline` bench and the sFlow overhead
//! shows as a larger share (a conservative ratio). The samples go into the worker's
//! ring as in the dataplane; the agent's end is drained between vectors, outside the
//! timed region (the agent runs on the control thread), except in the
//! `rx-1:10-ring-full` case: there it is never drained, as when the agent is at its
//! export limit (`max_samples_per_second`), and the worker drops what it picks.
//!
//! Before criterion runs, a summary prints the median cycles of single vectors
//! (400 rounds of 50 vectors per case, interleaved) and the forwarding rate of each
//! case relative to sFlow off (goal: 1:10 >= 0.95).
//!
//! Run: `cargo bench -p benches --bench pipeline_sflow`
#![deny(unsafe_code)]

use std::net::Ipv4Addr;
use std::sync::Arc;

use benches::cycles::{Tsc, rdtsc, tsc_hz};
use criterion::{BenchmarkId, Criterion, Throughput};
use dataplane::dpdk::BURST;
use dataplane::packet::VecPacket;
use dataplane::router::{Core, CoreConfig, Interface, Out, RouterControl, SflowHook};
use fib::{Ipv4Prefix, Path, RouteKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sflow::{DEFAULT_RING_CAPACITY, Directions, SampleConsumer, Sampling, SamplingTable};
use std::hint::black_box;

const TEMPLATES: usize = 64;
const PREFIXES: usize = 100_000;
const IP_LEN: usize = 46;

const fn mac_r(p: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, p, 0x01]
}
const fn mac_n(p: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, p, 0x99]
}
const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x55];

fn router(rng: &mut StdRng) -> (RouterControl, Vec<(u32, u8)>) {
    let mut ctl = RouterControl::new();
    for p in 0..5u8 {
        ctl.add_interface(Interface {
            ifindex: u32::from(p) + 1,
            name: format!("port{p}"),
            port: u16::from(p),
            vlan: None,
            mac: mac_r(p),
            mtu: 1500,
            up: true,
            table: 0,
            addrs: vec![(Ipv4Addr::new(10, p + 1, 0, 1), 24)],
            addrs6: Vec::new(),
        })
        .unwrap();
        if p > 0 {
            ctl.set_neighbor(u32::from(p) + 1, Ipv4Addr::new(10, p + 1, 0, 2), mac_n(p))
                .unwrap();
        }
    }
    let mut rib = Vec::with_capacity(PREFIXES);
    while rib.len() < PREFIXES {
        let len = rng.random_range(16..=24u8);
        let a = rng.random_range(0x0100_0000u32..0xdf00_0000) & (u32::MAX << (32 - len));
        let Ok(prefix) = Ipv4Prefix::new_truncated(Ipv4Addr::from(a), len) else {
            continue;
        };
        if (a >> 24) == 10 || (a >> 24) == 127 {
            continue;
        }
        let p = rng.random_range(1..=4u8);
        let path = Path::gateway_on(Ipv4Addr::new(10, p + 1, 0, 2), u32::from(p) + 1);
        if ctl
            .route_add(0, prefix, RouteKind::Paths(vec![path]))
            .is_ok()
        {
            rib.push((a, len));
        }
    }
    (ctl, rib)
}

fn frame(dst: u32, sport: u16) -> Vec<u8> {
    let mut ip = vec![0u8; IP_LEN];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(IP_LEN as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 1, 0, 2]);
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    ip[20..22].copy_from_slice(&sport.to_be_bytes());
    ip[22..24].copy_from_slice(&4789u16.to_be_bytes());
    let ck = wire::checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    let mut f = Vec::with_capacity(14 + IP_LEN);
    f.extend_from_slice(&mac_r(0));
    f.extend_from_slice(&HOST);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.extend_from_slice(&ip);
    f
}

/// The core and the packets every case runs on: one of each, so that the cases
/// differ only in their sFlow hook. (With a core and packet buffers per case, two
/// identical sFlow-off cases measured 10-20 % apart, from where their buffers
/// landed in memory.)
struct Rig {
    core: Core,
    /// A hook with nothing sampled: its `begin` puts the core back to sFlow off
    /// (no label stacks kept, no metadata filled) before the `off` case runs.
    idle: SflowHook,
    templates: Vec<Vec<Vec<u8>>>,
    pkts: Vec<VecPacket>,
    next: usize,
}

struct Case {
    name: &'static str,
    hook: Option<(SflowHook, SampleConsumer)>,
    /// The agent's end is never drained: the ring stays full (the agent at its
    /// export limit), and the worker drops what it picks.
    full: bool,
}

impl Case {
    fn new(rig: &mut Rig, name: &'static str, sampling: Option<(u32, Sampling)>) -> Case {
        let hook = sampling.map(|(ifindex, s)| {
            let table = Arc::new(SamplingTable::new());
            table.set(ifindex, Some(s)).unwrap();
            let (sampler, consumer) = sflow::channel(0, table, DEFAULT_RING_CAPACITY, 1).unwrap();
            (SflowHook::new(sampler), consumer)
        });
        let mut c = Case {
            name,
            hook,
            full: false,
        };
        rig.check(&mut c);
        c
    }

    /// [`Case::new`] with a ring that is never drained.
    fn full(rig: &mut Rig, name: &'static str, sampling: Option<(u32, Sampling)>) -> Case {
        Case {
            full: true,
            ..Case::new(rig, name, sampling)
        }
    }

    fn drain(&mut self) -> usize {
        let mut n = 0;
        if self.full {
            return 0;
        }
        if let Some((_, c)) = &mut self.hook {
            while c.pop().is_some() {
                n += 1;
            }
        }
        n
    }
}

impl Rig {
    fn check(&mut self, case: &mut Case) {
        let mut out = [Out::Drop; BURST];
        for t in 0..self.templates.len() {
            self.refill(t);
            self.run(case, &mut out);
            for (i, o) in out.iter().enumerate() {
                assert!(matches!(o, Out::Tx(1..=4)), "{}: {t}/{i}: {o:?}", case.name);
            }
        }
        case.drain();
    }

    fn refill(&mut self, t: usize) {
        for (p, f) in self.pkts.iter_mut().zip(&self.templates[t]) {
            p.reset(f);
        }
    }

    #[inline(always)]
    fn run(&mut self, case: &mut Case, out: &mut [Out; BURST]) {
        match &mut case.hook {
            Some((h, _)) => h.process(&mut self.core, black_box(&mut self.pkts), out),
            None => self.core.process(black_box(&mut self.pkts), out),
        }
    }

    /// One vector of `case`: TSC cycles of `process` + sFlow, and of the sFlow step
    /// after `process` (`SflowHook::end`: selection and samples).
    fn split(&mut self, case: &mut Case) -> (u64, u64) {
        if case.hook.is_none() {
            self.idle.begin(&mut self.core);
            return (self.timed(case, 1), 0);
        }
        let mut out = [Out::Drop; BURST];
        self.refill(self.next);
        self.next = (self.next + 1) % self.templates.len();
        let Some((h, _)) = &mut case.hook else {
            return (0, 0);
        };
        let pkts = black_box(&mut self.pkts);
        let t0 = rdtsc();
        h.begin(&mut self.core);
        self.core.process(pkts, &mut out);
        let t1 = rdtsc();
        h.end(&mut self.core, pkts, &out);
        let t2 = rdtsc();
        black_box(&out);
        case.drain();
        (t2 - t0, t2 - t1)
    }

    /// `iters` vectors of `case`; returns the TSC cycles of `process` + sFlow.
    fn timed(&mut self, case: &mut Case, iters: u64) -> u64 {
        if case.hook.is_none() {
            self.idle.begin(&mut self.core);
        }
        let mut out = [Out::Drop; BURST];
        let mut total = 0;
        for _ in 0..iters {
            self.refill(self.next);
            self.next = (self.next + 1) % self.templates.len();
            let t0 = rdtsc();
            self.run(case, &mut out);
            total += rdtsc() - t0;
            black_box(&out);
            case.drain();
        }
        total
    }
}

fn cases() -> (Rig, Vec<Case>) {
    let mut rng = StdRng::seed_from_u64(42);
    let (mut ctl, rib) = router(&mut rng);
    let templates: Vec<Vec<Vec<u8>>> = (0..TEMPLATES)
        .map(|_| {
            (0..BURST)
                .map(|i| {
                    let (a, l) = rib[rng.random_range(0..rib.len())];
                    let host = rng.random::<u32>() >> l;
                    frame(a | host | 1, 1024 + i as u16)
                })
                .collect()
        })
        .collect();
    let (core, _) = ctl.new_core(CoreConfig::default(), tsc_hz());
    let (idle, _) = sflow::channel(0, Arc::new(SamplingTable::new()), 1, 1).unwrap();
    let pkts = templates[0].iter().map(|f| VecPacket::new(f, 0)).collect();
    let mut rig = Rig {
        core,
        idle: SflowHook::new(idle),
        templates,
        pkts,
        next: 0,
    };
    let rx = |rate| {
        Some((
            1,
            Sampling {
                rate,
                directions: Directions::Rx,
            },
        ))
    };
    let tx = |rate| {
        Some((
            2,
            Sampling {
                rate,
                directions: Directions::Tx,
            },
        ))
    };
    let cases = vec![
        Case::new(&mut rig, "off", None),
        Case::new(&mut rig, "on-not-sampling", rx(u32::MAX)),
        Case::new(&mut rig, "rx-1:1000", rx(1000)),
        Case::new(&mut rig, "rx-1:10", rx(10)),
        // The agent at its export limit: every pick dropped at a full ring.
        Case::full(&mut rig, "rx-1:10-ring-full", rx(10)),
        Case::new(&mut rig, "tx-not-sampling", tx(u32::MAX)),
        Case::new(&mut rig, "tx-1:10", tx(10)),
        // sFlow off again: how far two identical cases land apart.
        Case::new(&mut rig, "off-again", None),
    ];
    (rig, cases)
}

/// 400 rounds of 50 vectors per case, rounds interleaved across cases; the median
/// of the single vectors' cycles per case. A neighbour's burst of work on the
/// shared machine slows some vectors of every case alike; the median does not see
/// it, and interleaving keeps slow drifts out of the ratios.
fn summary(rig: &mut Rig, cases: &mut [Case]) {
    let (rounds, per_round) = (400, 50);
    let mut cyc: Vec<Vec<u64>> = vec![Vec::with_capacity(rounds * per_round); cases.len()];
    let mut end: Vec<Vec<u64>> = vec![Vec::with_capacity(rounds * per_round); cases.len()];
    for _ in 0..rounds {
        for (k, c) in cases.iter_mut().enumerate() {
            for _ in 0..per_round {
                let (t, e) = rig.split(c);
                cyc[k].push(t);
                end[k].push(e);
            }
        }
    }
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / BURST as f64
    };
    let med: Vec<f64> = cyc.iter_mut().map(median).collect();
    let med_end: Vec<f64> = end.iter_mut().map(median).collect();
    eprintln!(
        "case               cycles/pkt  extra  rate vs off  sflow end cyc/pkt  samples/vector  (medians of single vectors)"
    );
    for (k, c) in cases.iter().enumerate() {
        let per_vector = c.hook.as_ref().map_or(0.0, |(h, _)| {
            h.sampler().counters().sampled() as f64 / (64 + rounds * per_round) as f64
        });
        eprintln!(
            "{:<18} {:>10.2} {:>6.2} {:>11.3} {:>18.2} {:>15.1}",
            c.name,
            med[k],
            med[k] - med[0],
            med[0] / med[k],
            med_end[k],
            per_vector,
        );
    }
}

fn main() {
    let (mut rig, mut cases) = cases();
    // Profiling mode: `PIPELINE_SFLOW_PROFILE=rx-1:10` runs that case alone (4096
    // vectors, or PIPELINE_SFLOW_VECTORS) and exits: for `perf record -e cpu-clock`
    // or `valgrind --tool=cachegrind` (two runs with different counts, subtracted,
    // give the instructions per packet; against `off`, per sample).
    if let Ok(name) = std::env::var("PIPELINE_SFLOW_PROFILE") {
        let vectors: u64 = std::env::var("PIPELINE_SFLOW_VECTORS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4096);
        let case = cases
            .iter_mut()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        let t = rig.timed(case, vectors);
        println!(
            "{name}: {:.1} cycles/packet over {vectors} vectors",
            t as f64 / (vectors * BURST as u64) as f64
        );
        return;
    }
    summary(&mut rig, &mut cases);
    let mut c = Criterion::default()
        .with_measurement(Tsc)
        .configure_from_args();
    let mut g = c.benchmark_group("pipeline_sflow");
    g.throughput(Throughput::Elements(BURST as u64));
    for case in &mut cases {
        g.bench_function(BenchmarkId::new("ip4", case.name), |b| {
            b.iter_custom(|iters| rig.timed(case, iters))
        });
    }
    g.finish();
    c.final_summary();
}
