//! sFlow in the router pipeline: TSC cycles per packet of `Core::process` plus the
//! sFlow step (`SflowHook::begin`/`end`) on the IPv4 forward path, with sFlow off, on
//! but not sampling (rate 2^32-1), 1:1000 and 1:10 on the input interface, and
//! 1:10 on the output interfaces (tx: four ports, mixed in each vector).
//!
//! The table is 100,000 random prefixes (seeded) over four neighbours, so the
//! baseline is cheaper than the full-table `pipeline` bench and the sFlow overhead
//! shows as a larger share (a conservative ratio). The samples go into the worker's
//! ring as in the dataplane; the agent's end is drained between vectors, outside the
//! timed region (the agent runs on the control thread).
//!
//! Before criterion runs, a summary prints the best of 7 rounds of 4,000 vectors
//! per case and the forwarding rate of each relative to sFlow off (goal: 1:10 >=
//! 0.95).
//!
//! Run: `cargo bench -p benches --bench pipeline_sflow`

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
use sflow::{Directions, SampleConsumer, Sampling, SamplingTable};
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

struct Case {
    name: &'static str,
    core: Core,
    hook: Option<(SflowHook, SampleConsumer)>,
    templates: Arc<Vec<Vec<Vec<u8>>>>,
    pkts: Vec<VecPacket>,
    next: usize,
}

impl Case {
    fn new(
        ctl: &mut RouterControl,
        name: &'static str,
        templates: &Arc<Vec<Vec<Vec<u8>>>>,
        sampling: Option<(u32, Sampling)>,
    ) -> Case {
        let (core, _) = ctl.new_core(CoreConfig::default(), tsc_hz());
        let hook = sampling.map(|(ifindex, s)| {
            let table = Arc::new(SamplingTable::new());
            table.set(ifindex, Some(s)).unwrap();
            let (sampler, consumer) = sflow::channel(0, table, 4096, 1).unwrap();
            (SflowHook::new(sampler), consumer)
        });
        let pkts = templates[0].iter().map(|f| VecPacket::new(f, 0)).collect();
        let mut c = Case {
            name,
            core,
            hook,
            templates: templates.clone(),
            pkts,
            next: 0,
        };
        c.check();
        c
    }

    fn check(&mut self) {
        let mut out = [Out::Drop; BURST];
        for t in 0..self.templates.len() {
            self.refill(t);
            self.run(&mut out);
            for (i, o) in out.iter().enumerate() {
                assert!(matches!(o, Out::Tx(1..=4)), "{}: {t}/{i}: {o:?}", self.name);
            }
        }
        self.drain();
    }

    fn refill(&mut self, t: usize) {
        for (p, f) in self.pkts.iter_mut().zip(&self.templates[t]) {
            p.reset(f);
        }
    }

    #[inline(always)]
    fn run(&mut self, out: &mut [Out; BURST]) {
        match &mut self.hook {
            Some((h, _)) => h.process(&mut self.core, black_box(&mut self.pkts), out),
            None => self.core.process(black_box(&mut self.pkts), out),
        }
    }

    fn drain(&mut self) -> usize {
        let mut n = 0;
        if let Some((_, c)) = &mut self.hook {
            while c.pop().is_some() {
                n += 1;
            }
        }
        n
    }

    /// `iters` vectors; returns the TSC cycles of `process` + sFlow.
    fn timed(&mut self, iters: u64) -> u64 {
        let mut out = [Out::Drop; BURST];
        let mut total = 0;
        for _ in 0..iters {
            self.refill(self.next);
            self.next = (self.next + 1) % self.templates.len();
            let t0 = rdtsc();
            self.run(&mut out);
            total += rdtsc() - t0;
            black_box(&out);
            self.drain();
        }
        total
    }
}

fn cases() -> Vec<Case> {
    let mut rng = StdRng::seed_from_u64(42);
    let (mut ctl, rib) = router(&mut rng);
    let templates: Arc<Vec<Vec<Vec<u8>>>> = Arc::new(
        (0..TEMPLATES)
            .map(|_| {
                (0..BURST)
                    .map(|i| {
                        let (a, l) = rib[rng.random_range(0..rib.len())];
                        let host = rng.random::<u32>() >> l;
                        frame(a | host | 1, 1024 + i as u16)
                    })
                    .collect()
            })
            .collect(),
    );
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
    vec![
        Case::new(&mut ctl, "off", &templates, None),
        Case::new(&mut ctl, "on-not-sampling", &templates, rx(u32::MAX)),
        Case::new(&mut ctl, "rx-1:1000", &templates, rx(1000)),
        Case::new(&mut ctl, "rx-1:10", &templates, rx(10)),
        Case::new(&mut ctl, "tx-1:10", &templates, tx(10)),
    ]
}

/// Best of 7 rounds of 4,000 vectors per case, rounds interleaved across cases.
fn summary(cases: &mut [Case]) {
    let mut best = vec![f64::MAX; cases.len()];
    let vectors = 4000u64;
    for _ in 0..7 {
        for (k, c) in cases.iter_mut().enumerate() {
            let cyc = c.timed(vectors) as f64 / (vectors as f64 * BURST as f64);
            best[k] = best[k].min(cyc);
        }
    }
    eprintln!("case               cycles/pkt  extra  rate vs off");
    for (k, c) in cases.iter().enumerate() {
        eprintln!(
            "{:<18} {:>10.2} {:>6.2} {:>11.3}",
            c.name,
            best[k],
            best[k] - best[0],
            best[0] / best[k]
        );
    }
}

fn main() {
    let mut cases = cases();
    summary(&mut cases);
    let mut c = Criterion::default()
        .with_measurement(Tsc)
        .configure_from_args();
    let mut g = c.benchmark_group("pipeline_sflow");
    g.throughput(Throughput::Elements(BURST as u64));
    for case in &mut cases {
        g.bench_function(BenchmarkId::new("ip4", case.name), |b| {
            b.iter_custom(|iters| case.timed(iters))
        });
    }
    g.finish();
    c.final_summary();
}
