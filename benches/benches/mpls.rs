//! MPLS label operations: TSC cycles per packet on vectors of 256 frames.
//!
//! Each case runs the operation the way a worker does: pin the label table once per
//! burst, then switch (or push) all 256 frames in place. Frames are restored from a
//! template between bursts, outside the timed region. The frames and the few table
//! lines they touch are cache-hot, so this is the cost of the operation itself, the
//! figure to hold against VPP's per-node clocks (the seed article's `show run`):
//! swap 110, PE push 131, PE pop + lookup 145, explicit null 125, PHP 113 cycles/packet
//! (those include VPP's ip4/mpls lookup and rewrite nodes, not rx/tx).
//!
//! Run: `cargo bench -p benches --bench mpls`

use benches::cycles::{Tsc, rdtsc, tsc_hz};
use criterion::{BenchmarkId, Criterion, Throughput};
use mpls::{BURST, Imposition, LabelAction, LabelTable, MplsDecision, NextHop, TtlMode};
use std::hint::black_box;

const FRAME: usize = 128;
const HEADROOM: usize = 64;
/// Layer-3 offset of every frame: headroom + Ethernet.
const L3: usize = HEADROOM + 14;

type Frames = Vec<[u8; FRAME]>;
/// One timed operation over a burst: frames and their layer-3 offsets.
type Op = Box<dyn FnMut(&mut Frames, &mut [usize; BURST])>;

fn ip4(ttl: u8, i: usize) -> [u8; 28] {
    let mut p = [0u8; 28];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&28u16.to_be_bytes());
    p[8] = ttl;
    p[9] = 17;
    p[12..16].copy_from_slice(&[16, 0, (i >> 8) as u8, i as u8]);
    p[16..20].copy_from_slice(&[48, 0, 0, 1]);
    let c = wire::checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p[20..22].copy_from_slice(&(1024 + i as u16).to_be_bytes());
    p[22..24].copy_from_slice(&33434u16.to_be_bytes());
    p
}

/// 256 frames: Ethernet (0x8847 or 0x0800), `labels` (S on the last, TTL 64), IPv4.
fn frames(labels: &[u32]) -> Frames {
    (0..BURST)
        .map(|i| {
            let mut f = [0u8; FRAME];
            f[HEADROOM..HEADROOM + 12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
            let et: u16 = if labels.is_empty() { 0x0800 } else { 0x8847 };
            f[HEADROOM + 12..L3].copy_from_slice(&et.to_be_bytes());
            let mut at = L3;
            for (j, l) in labels.iter().enumerate() {
                let s = u32::from(j + 1 == labels.len());
                f[at..at + 4].copy_from_slice(&((l << 12) | (s << 8) | 64).to_be_bytes());
                at += 4;
            }
            f[at..at + 28].copy_from_slice(&ip4(64, i));
            f
        })
        .collect()
}

/// Times `op` over the burst, restoring the frames from `template` before each run.
fn timed(
    template: &Frames,
    iters: u64,
    mut op: impl FnMut(&mut Frames, &mut [usize; BURST]),
) -> u64 {
    let mut work = template.clone();
    let mut offs = [L3; BURST];
    let mut total = 0;
    for _ in 0..iters {
        work.copy_from_slice(template);
        offs.fill(L3);
        let t0 = rdtsc();
        op(&mut work, &mut offs);
        total += rdtsc() - t0;
        black_box(&work);
    }
    total
}

/// The cases: a name, the VPP figure it is compared with, and the operation.
struct Case {
    name: &'static str,
    vpp: &'static str,
    template: Frames,
    op: Op,
}

fn switch_case(name: &'static str, vpp: &'static str, t: LabelTable, labels: &[u32]) -> Case {
    let reader = t.reader();
    let mut out = [MplsDecision::TtlExpired; BURST];
    Case {
        name,
        vpp,
        template: frames(labels),
        op: Box::new(move |f, offs| {
            let _keep = &t;
            let g = reader.pin();
            g.switch_burst(f, offs, &mut out);
            black_box(&out);
        }),
    }
}

fn push_case(name: &'static str, vpp: &'static str, n: usize) -> Case {
    let labels: Vec<u32> = (0..n as u32).map(|i| 100 + i).collect();
    let imp = Imposition::new(&labels, TtlMode::Uniform).unwrap_or_else(|e| panic!("{e}"));
    Case {
        name,
        vpp,
        template: frames(&[]),
        op: Box::new(move |f, offs| {
            for (fr, o) in f.iter_mut().zip(offs.iter_mut()) {
                if let Ok(r) = imp.push_ip4(fr, *o) {
                    *o = r.off;
                }
            }
            black_box(&offs);
        }),
    }
}

fn cases() -> Vec<Case> {
    let mut swap = LabelTable::new();
    swap.add(100, true, LabelAction::swap(1, &[100])).unwrap();
    let mut swap2 = LabelTable::new();
    swap2
        .add(100, true, LabelAction::swap(1, &[200, 300]))
        .unwrap();
    let mut egress = LabelTable::new();
    egress.add(31, true, LabelAction::ip4_lookup(0)).unwrap();
    let explicit_null = LabelTable::new();
    let mut php = LabelTable::new();
    php.add(33, true, LabelAction::php(2)).unwrap();
    let mut ecmp = LabelTable::new();
    ecmp.add(
        100,
        true,
        LabelAction::Forward {
            paths: (0..4).map(|i| NextHop::new(i, &[200 + i])).collect(),
            ttl_mode: TtlMode::Uniform,
        },
    )
    .unwrap();
    vec![
        switch_case(
            "swap",
            "110 (mpls-input+lookup+imposition+output)",
            swap,
            &[100],
        ),
        switch_case("swap_to_2", "-", swap2, &[100]),
        push_case("push_1", "131 (ip4-input..mpls-output)", 1),
        push_case("push_2", "-", 2),
        push_case("push_4", "-", 4),
        switch_case(
            "pop_lookup",
            "145 (egress, incl. ip4 lookup+rewrite)",
            egress,
            &[31],
        ),
        switch_case(
            "explicit_null",
            "125 (egress, incl. ip4 lookup+rewrite)",
            explicit_null,
            &[0],
        ),
        switch_case("php", "113 (P router, incl. ip4-rewrite)", php, &[33]),
        switch_case("ecmp_4", "-", ecmp, &[100]),
    ]
}

fn main() {
    let mut c = Criterion::default()
        .with_measurement(Tsc)
        .configure_from_args();
    let mut cs = cases();
    {
        let mut g = c.benchmark_group("mpls");
        g.throughput(Throughput::Elements(BURST as u64));
        for case in cs.iter_mut() {
            let template = &case.template;
            let op = &mut case.op;
            g.bench_function(BenchmarkId::from_parameter(case.name), |b| {
                b.iter_custom(|iters| timed(template, iters, &mut *op))
            });
        }
        g.finish();
    }
    c.final_summary();

    // A plain summary next to VPP's figures: median of 2001 bursts per case.
    let hz = tsc_hz();
    println!(
        "\nmpls ops, TSC cycles/packet (median of 2001 bursts of {BURST}), TSC {:.2} GHz",
        hz as f64 / 1e9
    );
    println!(
        "{:<15} {:>10} {:>10}   VPP cycles/packet (seed 000)",
        "op", "cyc/pkt", "Mpps"
    );
    for case in cs.iter_mut() {
        let mut v: Vec<u64> = (0..2001)
            .map(|_| timed(&case.template, 1, &mut *case.op))
            .collect();
        v.sort_unstable();
        let per = v[v.len() / 2] as f64 / BURST as f64;
        println!(
            "{:<15} {:>10.1} {:>10.1}   {}",
            case.name,
            per,
            hz as f64 / per / 1e6,
            case.vpp
        );
    }
}
