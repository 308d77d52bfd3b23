//! The router pipeline: TSC cycles per packet through `Core::process` (ethernet-input,
//! mpls-lookup, ip4-lookup, local, rewrite in one pass) on vectors of 256 frames,
//! with a full IPv4 table loaded through `RouterControl`: the 2024 table's 901,899
//! prefixes, each with one of 30,000 pseudo origin ASes (`V4_TABLE=2014`: the 2014
//! table's 512,621 with their origin ASes).
//!
//! Each case is one forwarding path: the frames of a vector all take it. No I/O: the
//! frames are `VecPacket`s (heap buffers shaped like mbufs), refilled from templates
//! between vectors outside the timed region (the TSC is read around `process` only).
//! Destinations are random addresses inside random table prefixes, 16,384 of them
//! over 64 template vectors used in turn, so the LPM walks a realistic mix of depths
//! and does not run on 256 hot keys.
//!
//! Goals (issue 5) and VPP's figures from the seed article (`show run`, sum of the
//! nodes between rx and tx): IPv4 <= 35 (104), swap <= 30 (110), push <= 40 (131),
//! pop + lookup <= 40 (145).
//!
//! L3VPN PE: `vpn_ingress` looks up in a VRF holding the same table, whose routes go
//! to a remote PE's loopback resolved in the global table (the LSP's label pushed
//! over the VPN label); `vpn_egress` pops a per-VRF VPN label and looks up in a
//! VRF holding the same table, without labels towards the customers.
//!
//! VPWS: `pw_encap` takes the frames of port 6, a pseudowire's circuit, into the
//! pseudowire (the LSP's label over the PW label and the control word);
//! `pw_decap` pops the PW label and sends the frames under it out of port 6.
//!
//! IPv6: `ip6_forward` routes UDP over IPv6 (the same 26-byte payload as the
//! IPv4 cases) through the 2024 table's 160,147 IPv6 prefixes (or its synthetic
//! stand-in), each via one of four link-local neighbours, to random addresses
//! inside random prefixes; `PIPELINE_PREFIXES6` (else `PIPELINE_PREFIXES`)
//! truncates it.
//!
//! IPv6 over MPLS, beside their IPv4 twins: `pe6_push` is 6PE's ingress, 4,096
//! IPv6 /48s each via the remote PE's IPv4 loopback with a label of its own
//! (the LSP's label over the 6PE label, pushed in one slice); `pe6_pop_lookup`
//! pops a label into the IPv6 lookup of `ip6_forward`'s table. 6VPE, beside
//! `vpn_ingress` and `vpn_egress` (whose VRFs hold the whole IPv4 table): the
//! same 4,096 /48s in the VRFs, `vpn6_ingress` through port 5 (the LSP's label
//! over a VPN label), `vpn6_egress` out of a per-VRF label popped into IPv6.
//!
//! Run: `cargo bench -p benches --bench pipeline`
#![deny(unsafe_code)]

use std::net::{Ipv4Addr, Ipv6Addr};

use benches::cycles::{Tsc, rdtsc, tsc_hz};
use criterion::{BenchmarkId, Criterion, Throughput};
use dataplane::dpdk::BURST;
use dataplane::dpdk::peers::{RteLpm, RteLpm6};
use dataplane::dpdk::{Eal, Mbuf, Mempool};
use dataplane::packet::{Packet, VecPacket};
use dataplane::router::{Core, CoreConfig, Interface, Out, RouterControl, Stage};
use fib::{Ipv4Prefix, Ipv6Prefix, Path, RouteKind};
use mpls::LabelAction;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;

/// Template vectors per case (64 × 256 = 16,384 destinations).
const TEMPLATES: usize = 64;
/// 100.64.0.0: the ECMP routes' block.
const ECMP_BASE: u32 = 0x6440_0000;
/// IPv4 packet length: 46 bytes, a 60-byte frame (64 on the wire with the FCS).
const IP_LEN: usize = 46;

const fn mac_r(p: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, p, 0x01]
}
const fn mac_n(p: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, p, 0x99]
}
const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x55];

/// The table; `PIPELINE_PREFIXES=N` keeps its first N prefixes (for
/// instruction counts under valgrind, where loading three full tables takes
/// minutes per run).
fn load_rib() -> Vec<(u32, u8, u32)> {
    let (mut rib, name) = benches::rib::load_v4_selected();
    eprintln!("IPv4 table: {name}, {} prefixes", rib.len());
    if let Some(n) = std::env::var("PIPELINE_PREFIXES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        rib.truncate(n);
    }
    rib
}

/// Ports 0..5 with 10.(p+1).0.1/24 and a neighbour 10.(p+1).0.2 on ports 1..5; the
/// table with every prefix via one of those neighbours, odd origin ASes with an
/// out-label (a PE with labelled and plain routes); label 100 swaps to 200 towards
/// port 1, 102 is PHP towards port 2, 300 pops and looks up in table 0.
/// L3VPN: port 5 is in VRF table 10, whose copy of the table goes to a remote PE
/// (192.0.2.4, an LSP with label 1000 towards port 1) with a VPN label per origin
/// AS under the LSP's; label 301 pops into VRF table 20, whose copy of the table
/// goes to the local customers' neighbours without labels.
fn router(rib: &[(u32, u8, u32)], rib6: &[(u128, u8, u32)]) -> RouterControl {
    let mut ctl = RouterControl::new();
    ctl.table_add(VRF_IN).unwrap();
    ctl.table_add(VRF_OUT).unwrap();
    for p in 0..6u8 {
        ctl.add_interface(Interface {
            ifindex: u32::from(p) + 1,
            name: format!("port{p}"),
            port: u16::from(p),
            vlan: None,
            mac: mac_r(p),
            mtu: 1500,
            up: true,
            table: if p == 5 { VRF_IN } else { 0 },
            addrs: vec![(Ipv4Addr::new(10, p + 1, 0, 1), 24)],
            addrs6: Vec::new(),
        })
        .unwrap();
        if (1..5).contains(&p) {
            ctl.set_neighbor(u32::from(p) + 1, Ipv4Addr::new(10, p + 1, 0, 2), mac_n(p))
                .unwrap();
        }
    }
    ctl.set_neighbor(1, Ipv4Addr::new(10, 1, 0, 2), HOST)
        .unwrap();
    let t0 = std::time::Instant::now();
    for &(a, l, asn) in rib {
        let p = (asn % 4) as u8 + 1;
        let mut path = Path::gateway_on(Ipv4Addr::new(10, p + 1, 0, 2), u32::from(p) + 1);
        if asn % 2 == 1 {
            path = path.with_labels(&[16 + asn % 1000]);
        }
        let prefix = Ipv4Prefix::new_truncated(Ipv4Addr::from(a), l).unwrap();
        ctl.route_add(0, prefix, RouteKind::Paths(vec![path]))
            .unwrap();
        let vpn = Path::gateway(REMOTE_PE)
            .in_table(0)
            .with_labels(&[16 + asn % 1000]);
        ctl.route_add(VRF_IN, prefix, RouteKind::Paths(vec![vpn]))
            .unwrap();
        let ce = Path::gateway_on(Ipv4Addr::new(10, p + 1, 0, 2), u32::from(p) + 1);
        ctl.route_add(VRF_OUT, prefix, RouteKind::Paths(vec![ce]))
            .unwrap();
    }
    for p in 1..5u8 {
        ctl.set_neighbor6(u32::from(p) + 1, nbr6(p), mac_n(p))
            .unwrap();
    }
    let t6 = std::time::Instant::now();
    for &(a, l, v) in rib6 {
        let p = (v % 4) as u8 + 1;
        let prefix = Ipv6Prefix::new_truncated(Ipv6Addr::from(a), l).unwrap();
        let path = Path::gateway6(nbr6(p), u32::from(p) + 1);
        ctl.route_add(0, prefix, RouteKind::Paths(vec![path]))
            .unwrap();
    }
    eprintln!(
        "{} IPv6 routes loaded in {:.2} s",
        rib6.len(),
        t6.elapsed().as_secs_f64()
    );
    let lsp = Path::gateway_on(Ipv4Addr::new(10, 2, 0, 2), 2).with_labels(&[1000]);
    let pe = Ipv4Prefix::new(REMOTE_PE, 32).unwrap();
    ctl.route_add(0, pe, RouteKind::Paths(vec![lsp])).unwrap();
    // Port 6: a pseudowire's circuit (no address).
    ctl.add_interface(Interface {
        ifindex: 7,
        name: "port6".into(),
        port: 6,
        vlan: None,
        mac: mac_r(6),
        mtu: 1500,
        up: true,
        table: 0,
        addrs: Vec::new(),
        addrs6: Vec::new(),
    })
    .unwrap();
    let pw = dataplane::router::Pw {
        ac: 7,
        remote: REMOTE_PE,
        in_label: PW_IN,
        out_label: 401,
        cw: true,
    };
    ctl.pw_add(dataplane::router::RouteSource::Config, "bench", pw)
        .unwrap();
    eprintln!(
        "loaded {} prefixes through RouterControl in {:.1} s",
        rib.len(),
        t0.elapsed().as_secs_f64()
    );
    // ECMP: 1,024 /24s in 100.64.0.0/14 (shared address space, not in the RIB),
    // each over the four neighbours.
    for k in 0..1024u32 {
        let prefix = Ipv4Prefix::new(Ipv4Addr::from(ECMP_BASE | k << 8), 24).unwrap();
        let paths = (1..5u8)
            .map(|p| Path::gateway_on(Ipv4Addr::new(10, p + 1, 0, 2), u32::from(p) + 1))
            .collect();
        ctl.route_add(0, prefix, RouteKind::Paths(paths)).unwrap();
    }
    let adj1 = ctl.adjacency(2, Ipv4Addr::new(10, 2, 0, 2)).unwrap();
    let adj2 = ctl.adjacency(3, Ipv4Addr::new(10, 3, 0, 2)).unwrap();
    ctl.label_add(100, true, LabelAction::swap(adj1, &[200]))
        .unwrap();
    ctl.label_add(102, true, LabelAction::php(adj2)).unwrap();
    ctl.label_add(300, true, LabelAction::ip4_lookup(0))
        .unwrap();
    ctl.label_add(301, true, LabelAction::ip4_lookup(VRF_OUT))
        .unwrap();
    ctl.label_add(304, true, LabelAction::ip6_lookup(0))
        .unwrap();
    // 6PE: 4,096 /48s of 2001:db8::/32 via the remote PE's loopback (its LSP's
    // label 1000), each with a label of its own.
    // 6VPE: the same /48s in VRF_IN via the remote PE (a VPN label each over
    // the LSP's) and in VRF_OUT via the link-local neighbours, label 305
    // popping into VRF_OUT.
    for k in 0..SIX_PE_ROUTES {
        let prefix = Ipv6Prefix::new(Ipv6Addr::from(six_pe_prefix(k)), 48).unwrap();
        let path = Path::gateway(REMOTE_PE).with_labels(&[16 + k % 1000]);
        ctl.route_add(0, prefix, RouteKind::Paths(vec![path]))
            .unwrap();
        let vpn = Path::gateway(REMOTE_PE)
            .in_table(0)
            .with_labels(&[16 + k % 1000]);
        ctl.route_add(VRF_IN, prefix, RouteKind::Paths(vec![vpn]))
            .unwrap();
        let p = (k % 4) as u8 + 1;
        let ce = Path::gateway6(nbr6(p), u32::from(p) + 1);
        ctl.route_add(VRF_OUT, prefix, RouteKind::Paths(vec![ce]))
            .unwrap();
    }
    ctl.label_add(305, true, LabelAction::ip6_lookup(VRF_OUT))
        .unwrap();
    ctl
}

/// 6PE routes of the `pe6_push` case.
const SIX_PE_ROUTES: u32 = 4096;

/// The `k`th 6PE route's /48: 2001:db8:k::/48.
fn six_pe_prefix(k: u32) -> u128 {
    (0x2001_0db8u128 << 96) | (u128::from(k) << 80)
}

/// Template vectors of IPv6 frames to random addresses of the 6PE routes.
fn templates_6pe() -> Vec<Vec<Vec<u8>>> {
    let mut rng = StdRng::seed_from_u64(66);
    (0..TEMPLATES)
        .map(|_| {
            (0..BURST)
                .map(|i| {
                    let k = rng.random_range(0..SIX_PE_ROUTES);
                    let host = rng.random::<u128>() & !benches::rib::mask6(48);
                    frame6(six_pe_prefix(k) | host, 1024 + i as u16)
                })
                .collect()
        })
        .collect()
}

/// `templates` addressed to port `p`'s MAC.
fn to_port(mut templates: Vec<Vec<Vec<u8>>>, p: u8) -> Vec<Vec<Vec<u8>>> {
    for f in templates.iter_mut().flatten() {
        f[..6].copy_from_slice(&mac_r(p));
    }
    templates
}

/// `templates` with each frame under label `label` (S, TTL 64).
fn under_label(templates: Vec<Vec<Vec<u8>>>, label: u32) -> Vec<Vec<Vec<u8>>> {
    templates
        .into_iter()
        .map(|v| {
            v.into_iter()
                .map(|f| {
                    let mut g = f[..12].to_vec();
                    g.extend_from_slice(&0x8847u16.to_be_bytes());
                    g.extend_from_slice(&((label << 12) | 0x100 | 64).to_be_bytes());
                    g.extend_from_slice(&f[14..]);
                    g
                })
                .collect()
        })
        .collect()
}

/// The VRF of port 5 (L3VPN ingress) and the one label 301 pops into (egress).
const VRF_IN: u32 = 10;
const VRF_OUT: u32 = 20;
/// The remote PE's loopback.
const REMOTE_PE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 4);
/// The pseudowire's label (this router's).
const PW_IN: u32 = 400;

/// The link-local neighbour behind port `p`.
fn nbr6(p: u8) -> Ipv6Addr {
    Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, u16::from(p), 2)
}

/// The 2024 table's IPv6 prefixes (`PIPELINE_PREFIXES6` of them, else
/// `PIPELINE_PREFIXES`, if set).
fn load_rib6() -> Vec<(u128, u8, u32)> {
    let mut rib = benches::rib::load_v6_2024().0;
    let n = ["PIPELINE_PREFIXES6", "PIPELINE_PREFIXES"]
        .iter()
        .find_map(|v| std::env::var(v).ok().and_then(|v| v.parse().ok()));
    if let Some(n) = n {
        rib.truncate(n);
    }
    rib
}

/// A frame from the host on port 0: IPv6 (hop limit 64), UDP to `dst` with the
/// IPv4 cases' payload.
fn frame6(dst: u128, sport: u16) -> Vec<u8> {
    let payload = IP_LEN - 20;
    let mut f = Vec::with_capacity(14 + 40 + payload);
    f.extend_from_slice(&mac_r(0));
    f.extend_from_slice(&HOST);
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(payload as u16).to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2).octets());
    f.extend_from_slice(&dst.to_be_bytes());
    let mut u = [0u8; IP_LEN - 20];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&53u16.to_be_bytes());
    u[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
    f.extend_from_slice(&u);
    f
}

/// Template vectors of IPv6 frames to random addresses inside random prefixes
/// of `rib6`.
fn templates6(rib6: &[(u128, u8, u32)]) -> Vec<Vec<Vec<u8>>> {
    let mut rng = StdRng::seed_from_u64(6);
    (0..TEMPLATES)
        .map(|_| {
            (0..BURST)
                .map(|i| {
                    let (a, l, _) = rib6[rng.random_range(0..rib6.len())];
                    let host = rng.random::<u128>() & !benches::rib::mask6(l);
                    frame6(a | host, 1024 + i as u16)
                })
                .collect()
        })
        .collect()
}

fn ip4(dst: u32, sport: u16) -> [u8; IP_LEN] {
    let mut p = [0u8; IP_LEN];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(IP_LEN as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 1, 0, 2]);
    p[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = wire::checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&53u16.to_be_bytes());
    p[24..26].copy_from_slice(&((IP_LEN - 20) as u16).to_be_bytes());
    p
}

/// A frame from the host on port `rx`: Ethernet, `labels` (label, S on the last,
/// TTL 64), IPv4 to `dst`.
fn frame(rx: u16, labels: &[u32], dst: u32, sport: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + 4 * labels.len() + IP_LEN);
    f.extend_from_slice(&mac_r(rx as u8));
    f.extend_from_slice(&HOST);
    let et: u16 = if labels.is_empty() { 0x0800 } else { 0x8847 };
    f.extend_from_slice(&et.to_be_bytes());
    for (i, &l) in labels.iter().enumerate() {
        let s = u32::from(i + 1 == labels.len());
        f.extend_from_slice(&((l << 12) | (s << 8) | 64).to_be_bytes());
    }
    f.extend_from_slice(&ip4(dst, sport));
    f
}

/// Template vectors of frames from the host on port `rx` to `dsts` under
/// `labels` (see [`frame`]), `BURST` per vector.
fn templates(dsts: &[u32], rx: u16, labels: &[u32]) -> Vec<Vec<Vec<u8>>> {
    dsts.chunks(BURST)
        .map(|c| {
            c.iter()
                .enumerate()
                .map(|(i, &d)| frame(rx, labels, d, 1024 + i as u16))
                .collect()
        })
        .collect()
}

/// Puts the frames of a template vector back into the packets (at the usual
/// 128-byte headroom).
fn refill<P: Packet>(pkts: &mut [P], frames: &[Vec<u8>]) {
    for (p, f) in pkts.iter_mut().zip(frames) {
        let ok = p.set_window(VecPacket::HEADROOM, f.len());
        debug_assert!(ok);
        p.raw_mut()[VecPacket::HEADROOM..VecPacket::HEADROOM + f.len()].copy_from_slice(f);
    }
}

/// Packets made from frames in DPDK mbufs of `pool`.
fn mbufs(pool: &Mempool) -> impl Fn(&[u8], u16) -> Mbuf + '_ {
    |f: &[u8], rx: u16| {
        let mut m = pool.alloc_with(f).expect("mbuf");
        m.set_port(rx);
        m
    }
}

/// The benches' mbuf pool.
fn bench_pool(eal: &Eal) -> std::sync::Arc<Mempool> {
    Mempool::new(eal, "bench_pool", 8191, 0, 2176).unwrap_or_else(|e| panic!("{e}"))
}

/// One forwarding path: template vectors and the EtherType every frame must leave
/// with (checked once before timing, so no case measures drops). Generic over the
/// packet type: heap `VecPacket`s, or DPDK mbufs from a hugepage pool.
struct Case<P: Packet> {
    name: &'static str,
    vpp: &'static str,
    goal: &'static str,
    templates: Vec<Vec<Vec<u8>>>,
    out_ethertype: u16,
    core: Core,
    pkts: Vec<P>,
    next: usize,
}

/// The frame a packet holds now.
fn data<P: Packet>(p: &mut P) -> &[u8] {
    let (s, l) = p.window();
    &p.raw_mut()[s..s + l]
}

/// Destinations inside random table prefixes whose route leads to a `want`
/// (0x0800: plain route, 0x8847: labelled route) output, found by running
/// candidates through `core`.
fn destinations(rib: &[(u32, u8, u32)], core: &mut Core, want: u16, n: usize) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(u64::from(want));
    let mut found = Vec::with_capacity(n);
    let mut out = [Out::Drop; BURST];
    while found.len() < n {
        let cand: Vec<u32> = (0..BURST)
            .map(|_| {
                let (a, l, _) = rib[rng.random_range(0..rib.len())];
                let host = if l == 32 { 0 } else { rng.random::<u32>() >> l };
                a | host
            })
            .collect();
        let mut pkts: Vec<VecPacket> = cand
            .iter()
            .map(|&d| VecPacket::new(&frame(0, &[], d, 1), 0))
            .collect();
        core.process(&mut pkts, &mut out);
        for ((d, o), p) in cand.iter().zip(&out).zip(&pkts) {
            let et = p
                .data()
                .get(12..14)
                .map(|e| u16::from_be_bytes([e[0], e[1]]));
            if matches!(o, Out::Tx(1..=4)) && et == Some(want) && found.len() < n {
                found.push(*d);
            }
        }
    }
    found
}

impl<P: Packet> Case<P> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        ctl: &mut RouterControl,
        mk: &dyn Fn(&[u8], u16) -> P,
        rx: u16,
        name: &'static str,
        vpp: &'static str,
        goal: &'static str,
        dsts: &[u32],
        labels: &[u32],
        out_ethertype: u16,
    ) -> Self {
        let templates = templates(dsts, rx, labels);
        Self::of_frames(ctl, mk, rx, name, vpp, goal, templates, out_ethertype)
    }

    /// A case of the frames of `templates`.
    #[allow(clippy::too_many_arguments)]
    fn of_frames(
        ctl: &mut RouterControl,
        mk: &dyn Fn(&[u8], u16) -> P,
        rx: u16,
        name: &'static str,
        vpp: &'static str,
        goal: &'static str,
        templates: Vec<Vec<Vec<u8>>>,
        out_ethertype: u16,
    ) -> Self {
        let (core, _) = ctl.new_core(CoreConfig::default(), tsc_hz());
        let pkts = templates[0].iter().map(|f| mk(f, rx)).collect();
        let mut c = Case {
            name,
            vpp,
            goal,
            templates,
            out_ethertype,
            core,
            pkts,
            next: 0,
        };
        c.check();
        c
    }

    /// Every frame of every template leaves on a neighbour port with the expected
    /// EtherType.
    fn check(&mut self) {
        let mut out = [Out::Drop; BURST];
        for t in 0..self.templates.len() {
            self.refill(t);
            self.core.process(&mut self.pkts, &mut out);
            for (i, (o, p)) in out.iter().zip(&mut self.pkts).enumerate() {
                let d = data(p);
                let et = u16::from_be_bytes([d[12], d[13]]);
                assert!(
                    matches!(o, Out::Tx(1..=4 | 6)) && et == self.out_ethertype,
                    "{}: template {t} frame {i}: {o:?}, ethertype {et:#06x}",
                    self.name
                );
            }
        }
    }

    fn refill(&mut self, t: usize) {
        refill(&mut self.pkts, &self.templates[t]);
    }

    /// `iters` vectors, each refilled from the next template untimed; returns the
    /// TSC cycles spent in `process`.
    fn timed(&mut self, iters: u64) -> u64 {
        let mut out = [Out::Drop; BURST];
        let mut total = 0;
        for _ in 0..iters {
            self.refill(self.next);
            self.next = (self.next + 1) % self.templates.len();
            let t0 = rdtsc();
            self.core.process(black_box(&mut self.pkts), &mut out);
            total += rdtsc() - t0;
            black_box(&out);
        }
        total
    }

    /// One vector, timed; also the cycles each stage counted for it.
    fn timed_stages(&mut self) -> (u64, [u64; STAGES.len()]) {
        let before = self.stage_cycles();
        let t = self.timed(1);
        let after = self.stage_cycles();
        (t, std::array::from_fn(|k| after[k] - before[k]))
    }

    fn stage_cycles(&self) -> [u64; STAGES.len()] {
        let s = self.core.stats();
        STAGES.map(|st| s.stages[st as usize].cycles.get())
    }

    /// The summary line: median, p10, Mpps, goal, VPP, median per stage.
    fn summary(&mut self, hz: u64) {
        let runs: Vec<(u64, [u64; STAGES.len()])> =
            (0..2001).map(|_| self.timed_stages()).collect();
        let mut v: Vec<u64> = runs.iter().map(|r| r.0).collect();
        let (med, p10) = per_packet(&mut v);
        let stages: Vec<String> = STAGES
            .iter()
            .enumerate()
            .filter_map(|(k, st)| {
                let mut c: Vec<u64> = runs.iter().map(|r| r.1[k]).collect();
                let (m, _) = per_packet(&mut c);
                (m > 0.0).then(|| format!("{} {m:.1}", st.name()))
            })
            .collect();
        println!(
            "{:<18} {:>7.1} {:>7.1} {:>7.1} {:>6} {:>5}   {}",
            self.name,
            med,
            p10,
            hz as f64 / med / 1e6,
            self.goal,
            self.vpp,
            stages.join(", ")
        );
    }
}

/// The stages the core times (rx and tx are the worker's).
const STAGES: [Stage; 6] = [
    Stage::EthernetInput,
    Stage::MplsLookup,
    Stage::Ip4Lookup,
    Stage::Ip6Lookup,
    Stage::Local,
    Stage::Rewrite,
];

/// A summary line of what is not a router case (no goal, VPP or stages): the
/// median, p10 and Mpps of the timings `v`, and `note`.
fn other_row(name: &str, v: &mut [u64], hz: u64, note: &str) {
    let (med, p10) = per_packet(v);
    println!(
        "{name:<18} {med:>7.1} {p10:>7.1} {:>7.1} {:>6} {:>5}   ({note})",
        hz as f64 / med / 1e6,
        "",
        ""
    );
}

/// Median and 10th percentile of `v`, per packet.
fn per_packet(v: &mut [u64]) -> (f64, f64) {
    v.sort_unstable();
    let at = |q: usize| v[(v.len() - 1) * q / 100] as f64 / BURST as f64;
    (at(50), at(10))
}

/// The router with the table, and the destinations of the cases.
struct Setup {
    rib: Vec<(u32, u8, u32)>,
    rib6: Vec<(u128, u8, u32)>,
    ctl: RouterControl,
    plain: Vec<u32>,
    labelled: Vec<u32>,
    ecmp: Vec<u32>,
}

fn setup() -> Setup {
    let rib = load_rib();
    let rib6 = load_rib6();
    let mut ctl = router(&rib, &rib6);
    let n = TEMPLATES * BURST;
    let (mut probe, _) = ctl.new_core(CoreConfig::default(), tsc_hz());
    let plain = destinations(&rib, &mut probe, 0x0800, n);
    let labelled = destinations(&rib, &mut probe, 0x8847, n);
    let mut rng = StdRng::seed_from_u64(4);
    let ecmp = (0..n)
        .map(|_| ECMP_BASE | rng.random_range(0..1u32 << 18))
        .collect();
    Setup {
        rib,
        rib6,
        ctl,
        plain,
        labelled,
        ecmp,
    }
}

/// The six paths, IPv4 over four-way ECMP and the L3VPN PE's two, with packets
/// made by `mk` (frame, receiving port).
fn cases<P: Packet>(s: &mut Setup, mk: &dyn Fn(&[u8], u16) -> P) -> Vec<Case<P>> {
    let Setup {
        ctl,
        plain,
        labelled,
        ecmp,
        rib6,
        ..
    } = s;
    vec![
        Case::new(
            ctl,
            mk,
            0,
            "ip4_forward",
            "104",
            "<= 35",
            plain,
            &[],
            0x0800,
        ),
        Case::new(ctl, mk, 0, "p_swap", "110", "<= 30", plain, &[100], 0x8847),
        Case::new(ctl, mk, 0, "pe_push", "131", "<= 40", labelled, &[], 0x8847),
        Case::new(
            ctl,
            mk,
            0,
            "pe_explicit_null",
            "125",
            "",
            plain,
            &[0],
            0x0800,
        ),
        Case::new(
            ctl,
            mk,
            0,
            "pe_pop_lookup",
            "145",
            "<= 40",
            plain,
            &[300],
            0x0800,
        ),
        Case::new(ctl, mk, 0, "php", "113", "", plain, &[102], 0x0800),
        Case::new(ctl, mk, 0, "ip4_ecmp4", "", "", ecmp, &[], 0x0800),
        // Every VRF route: the LSP's label over the VPN label.
        Case::new(ctl, mk, 5, "vpn_ingress", "", "", plain, &[], 0x8847),
        Case::new(ctl, mk, 0, "vpn_egress", "", "", plain, &[301], 0x0800),
        Case::new(ctl, mk, 6, "pw_encap", "", "", plain, &[], 0x8847),
        Case::of_frames(ctl, mk, 0, "pw_decap", "", "", pw_frames(plain), 0x0800),
        Case::of_frames(ctl, mk, 0, "ip6_forward", "", "", templates6(rib6), 0x86dd),
        Case::of_frames(ctl, mk, 0, "pe6_push", "", "", templates_6pe(), 0x8847),
        Case::of_frames(
            ctl,
            mk,
            0,
            "pe6_pop_lookup",
            "",
            "",
            under_label(templates6(rib6), 304),
            0x86dd,
        ),
        // 6VPE: the same /48s in VRFs, in through port 5 (the LSP's label over
        // the VPN label) and out of a per-VRF label into IPv6.
        Case::of_frames(
            ctl,
            mk,
            5,
            "vpn6_ingress",
            "",
            "",
            to_port(templates_6pe(), 5),
            0x8847,
        ),
        Case::of_frames(
            ctl,
            mk,
            0,
            "vpn6_egress",
            "",
            "",
            under_label(templates_6pe(), 305),
            0x86dd,
        ),
    ]
}

/// Frames of the pseudowire from the core: Ethernet to port 0, the PW label,
/// the control word, the customer's frame (IPv4 to each of `dsts`).
fn pw_frames(dsts: &[u32]) -> Vec<Vec<Vec<u8>>> {
    dsts.chunks(BURST)
        .map(|c| {
            c.iter()
                .enumerate()
                .map(|(i, &d)| {
                    let inner = frame(6, &[], d, 1024 + i as u16);
                    let mut f = frame(0, &[PW_IN], 0, 0);
                    f.truncate(14 + 4);
                    f.extend_from_slice(&[0; 4]);
                    f.extend_from_slice(&inner);
                    f
                })
                .collect()
        })
        .collect()
}

/// The peer in the same run: DPDK l3fwd's per-packet work in its LPM mode, over
/// the IPv4 case's frames in the same buffers with the same table in DPDK's
/// `rte_lpm` (what l3fwd looks up in): four destinations read, `rte_lpm_lookupx4`
/// (a miss goes back out of the receiving port), then per packet the RFC 1812
/// step l3fwd does (TTL decremented and the checksum patched, a header whose
/// version/IHL or total length is wrong sent to an invalid port) and the
/// destination and source MACs of the output port written. The EtherType stands
/// for the NIC's packet type. No checksum verified, no destination MAC, TTL or
/// martian test, no counters, no MTU: the floor of what forwarding one packet
/// costs on this machine, not a router.
struct L3fwdWork<'l, P: Packet> {
    lpm: &'l RteLpm,
    templates: Vec<Vec<Vec<u8>>>,
    pkts: Vec<P>,
    /// Output port per packet (`BAD_PORT`: dropped).
    ports: [u16; BURST],
    /// Destination and source MAC per output port.
    eth: [[u8; 12]; 8],
    next: usize,
}

/// Per output port, the destination and source MACs l3fwd writes.
fn port_macs() -> [[u8; 12]; 8] {
    std::array::from_fn(|p| {
        let mut e = [0u8; 12];
        e[..6].copy_from_slice(&mac_n(p as u8));
        e[6..].copy_from_slice(&mac_r(p as u8));
        e
    })
}

/// l3fwd's port for a packet it drops.
const BAD_PORT: u16 = u16::MAX;

impl<'l, P: Packet> L3fwdWork<'l, P> {
    fn new(lpm: &'l RteLpm, dsts: &[u32], mk: &dyn Fn(&[u8], u16) -> P) -> Self {
        let templates = templates(dsts, 0, &[]);
        let pkts = templates[0].iter().map(|f| mk(f, 0)).collect();
        let eth = port_macs();
        let mut w = L3fwdWork {
            lpm,
            templates,
            pkts,
            ports: [0; BURST],
            eth,
            next: 0,
        };
        w.check();
        w
    }

    /// Every frame leaves on a neighbour port with its TTL one lower.
    fn check(&mut self) {
        for t in 0..self.templates.len() {
            self.refill(t);
            self.process();
            for (i, p) in self.pkts.iter_mut().enumerate() {
                let (port, d) = (self.ports[i], data(p));
                assert!(
                    (1..=4).contains(&port) && d[22] == 63 && d[..6] == mac_n(port as u8),
                    "l3fwd_work: template {t} frame {i}: port {port}"
                );
            }
        }
    }

    fn refill(&mut self, t: usize) {
        refill(&mut self.pkts, &self.templates[t]);
    }

    /// One vector, four packets at a time.
    #[inline(never)]
    fn process(&mut self) {
        let n = self.pkts.len().min(BURST) & !3;
        for c in (0..n).step_by(4) {
            let mut dst = [0u32; 4];
            let mut rx = 0;
            for (k, d) in dst.iter_mut().enumerate() {
                let p = &mut self.pkts[c + k];
                rx = p.port();
                let f = p.data_mut();
                if f.len() >= 34 && f[12..14] == [0x08, 0x00] {
                    *d = u32::from_be_bytes([f[30], f[31], f[32], f[33]]);
                }
            }
            let mut hop = [0u32; 4];
            self.lpm.lookupx4(&dst, &mut hop, u32::from(rx));
            for (k, &h) in hop.iter().enumerate() {
                let f = self.pkts[c + k].data_mut();
                let mut port = h as u16;
                if let Some(ip) = f.get_mut(14..34) {
                    let ihl = ip[0].wrapping_sub(0x45);
                    ip[8] = ip[8].wrapping_sub(1);
                    // (the checksum patched as l3fwd does: + 0x0100 in network
                    // order, one add on the little-endian value, no end-around
                    // carry)
                    let ck = u16::from_le_bytes([ip[10], ip[11]]).wrapping_add(1);
                    ip[10..12].copy_from_slice(&ck.to_le_bytes());
                    // (version 4, IHL 5 to 15; total length 20 or more)
                    if ihl > 0x0a || u16::from_be_bytes([ip[2], ip[3]]) < 20 {
                        port = BAD_PORT;
                    }
                } else {
                    port = BAD_PORT;
                }
                if let Some(e) = self.eth.get(usize::from(port)) {
                    f[..12].copy_from_slice(e);
                }
                self.ports[c + k] = port;
            }
        }
    }

    fn timed(&mut self, iters: u64) -> u64 {
        let mut total = 0;
        for _ in 0..iters {
            self.refill(self.next);
            self.next = (self.next + 1) % self.templates.len();
            let t0 = rdtsc();
            self.process();
            total += rdtsc() - t0;
            black_box(&self.ports);
        }
        total
    }

    fn summary(&mut self, hz: u64) {
        let mut v: Vec<u64> = (0..2001).map(|_| self.timed(1)).collect();
        other_row(
            "l3fwd_work",
            &mut v,
            hz,
            "l3fwd's work per packet: see L3fwdWork",
        );
    }
}

/// The table in `rte_lpm` (next hop: the output port of the router's route).
/// The IPv6 peer in the same run: l3fwd's per-packet work on IPv6 in its LPM
/// mode, over the `ip6_forward` case's frames with the same table in DPDK's
/// `rte_lpm6`: per packet the destination read, `rte_lpm6_lookup` (a miss goes
/// back out of the receiving port), the output port's MACs written. l3fwd does
/// no hop limit, no header check, no scope or MTU test on IPv6: the floor of
/// what forwarding one IPv6 packet costs here, not a router.
struct L3fwdWork6<'l, P: Packet> {
    lpm: &'l RteLpm6,
    templates: Vec<Vec<Vec<u8>>>,
    pkts: Vec<P>,
    ports: [u16; BURST],
    eth: [[u8; 12]; 8],
    next: usize,
}

impl<'l, P: Packet> L3fwdWork6<'l, P> {
    fn new(lpm: &'l RteLpm6, rib6: &[(u128, u8, u32)], mk: &dyn Fn(&[u8], u16) -> P) -> Self {
        let templates = templates6(rib6);
        let pkts = templates[0].iter().map(|f| mk(f, 0)).collect();
        let eth = port_macs();
        let mut w = L3fwdWork6 {
            lpm,
            templates,
            pkts,
            ports: [0; BURST],
            eth,
            next: 0,
        };
        for t in 0..w.templates.len() {
            refill(&mut w.pkts, &w.templates[t]);
            w.process();
            for (i, p) in w.pkts.iter_mut().enumerate() {
                let (port, d) = (w.ports[i], data(p));
                assert!(
                    (1..=4).contains(&port) && d[..6] == mac_n(port as u8),
                    "l3fwd_work6: template {t} frame {i}: port {port}"
                );
            }
        }
        w
    }

    /// One vector, packet by packet (l3fwd looks IPv6 up one at a time).
    #[inline(never)]
    fn process(&mut self) {
        for (p, port) in self.pkts.iter_mut().zip(self.ports.iter_mut()) {
            let rx = p.port();
            let f = p.data_mut();
            let mut out = rx;
            if let Some(d) = f.get(38..54).and_then(|d| <&[u8; 16]>::try_from(d).ok()) {
                out = self.lpm.lookup(d).map_or(rx, |h| h as u16);
            }
            if let Some(e) = self.eth.get(usize::from(out)) {
                f[..12].copy_from_slice(e);
            }
            *port = out;
        }
    }

    fn timed(&mut self, iters: u64) -> u64 {
        let mut total = 0;
        for _ in 0..iters {
            refill(&mut self.pkts, &self.templates[self.next]);
            self.next = (self.next + 1) % self.templates.len();
            let t0 = rdtsc();
            self.process();
            total += rdtsc() - t0;
            black_box(&self.ports);
        }
        total
    }

    fn summary(&mut self, hz: u64) {
        let mut v: Vec<u64> = (0..2001).map(|_| self.timed(1)).collect();
        other_row(
            "l3fwd_work6",
            &mut v,
            hz,
            "l3fwd's IPv6 work per packet: see L3fwdWork6",
        );
    }
}

/// `rib6` in DPDK's `rte_lpm6`, each prefix to the port the router's table
/// sends it to.
fn rte_lpm6(eal: &Eal, rib6: &[(u128, u8, u32)]) -> RteLpm6 {
    let rules = (rib6.len() * 2 + 1024) as u32;
    let mut lpm =
        RteLpm6::new(eal, "pipeline_lpm6", rules, 1 << 16).unwrap_or_else(|e| panic!("{e}"));
    for &(a, l, v) in rib6 {
        let a = a & benches::rib::mask6(l);
        lpm.add(&a.to_be_bytes(), l, v % 4 + 1)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    lpm
}

fn rte_lpm(eal: &Eal, rib: &[(u32, u8, u32)]) -> RteLpm {
    let mut lpm =
        RteLpm::new(eal, "pipeline_lpm", 1 << 20, 1 << 16).unwrap_or_else(|e| panic!("{e}"));
    for &(a, l, asn) in rib {
        let p = (asn % 4) + 1;
        let a = if l == 0 {
            0
        } else {
            a & (u32::MAX << (32 - l))
        };
        lpm.add(a, l, p).unwrap_or_else(|e| panic!("{e}"));
    }
    lpm
}

/// The FIB lookup alone over the IPv4 case's destinations: the floor under the
/// IPv4 paths (a batched LPM of 256 keys per vector, same keys in the same order).
struct LpmOnly {
    reader: fib::FibReader,
    keys: Vec<u32>,
    next: usize,
}

impl LpmOnly {
    fn timed(&mut self, iters: u64) -> u64 {
        let mut out = [0u32; BURST];
        let mut total = 0;
        for _ in 0..iters {
            let keys = &self.keys[self.next * BURST..(self.next + 1) * BURST];
            self.next = (self.next + 1) % TEMPLATES;
            let t0 = rdtsc();
            let view = self.reader.read();
            view.lookup_burst(0, black_box(keys), &mut out);
            drop(view);
            total += rdtsc() - t0;
            black_box(&out);
        }
        total
    }
}

/// Case `name` of `cs`.
fn case_named<'c, P: Packet>(cs: &'c mut [Case<P>], name: &str) -> &'c mut Case<P> {
    cs.iter_mut()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

/// Case `name` of `cs` alone for `vectors` vectors: the TSC cycles.
fn profile<P: Packet>(cs: &mut [Case<P>], name: &str, vectors: u64) -> u64 {
    let case = case_named(cs, name);
    let t = case.timed(vectors);
    if std::env::var_os("PIPELINE_SUMMARY").is_some() {
        case.summary(tsc_hz());
    }
    t
}

/// Case `name` of `cs` against the peer `l3fwd_work` in one process, in turns
/// of 16 vectors each, `vectors` of each in all: the median cycles per packet
/// of each over the turns and their 10th percentiles (the turns the
/// neighbours disturbed least), and the median of the turns' ratios (the
/// peer's cycles over the case's: the case's rate as a multiple of the
/// peer's). Turns a few milliseconds apart see the same load from the
/// machine's neighbours, which moves separate runs by 1.5x here.
fn versus<P: Packet, Q: Packet>(
    cs: &mut [Case<P>],
    name: &str,
    peer: &mut L3fwdWork<'_, Q>,
    vectors: u64,
) {
    const TURN: u64 = 16;
    let case = case_named(cs, name);
    let per = |t: u64| t as f64 / (TURN * BURST as u64) as f64;
    let (mut ours, mut theirs, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..vectors.div_ceil(TURN) {
        let (a, b) = (per(case.timed(TURN)), per(peer.timed(TURN)));
        ours.push(a);
        theirs.push(b);
        ratio.push(b / a);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, b) = (med(&mut ours), med(&mut theirs));
    let (a10, b10) = (ours[ours.len() / 10], theirs[theirs.len() / 10]);
    println!(
        "{name}: {a:.1} cycles/packet (p10 {a10:.1}), l3fwd_work {b:.1} (p10 {b10:.1}): \
         {:.3}x its rate by the turns' median ratio, {:.3}x by the p10s ({} turns of {TURN} vectors)",
        med(&mut ratio),
        b10 / a10,
        ratio.len()
    );
}

/// [`versus`] for each case of the comma-separated `names`, on packets `mk`
/// makes, against `l3fwd_work` over `lpm`.
fn versus_each<P: Packet>(
    st: &mut Setup,
    lpm: &RteLpm,
    mk: &dyn Fn(&[u8], u16) -> P,
    names: &str,
    vectors: u64,
) {
    let mut peer = L3fwdWork::new(lpm, &st.plain, mk);
    let mut cs = cases(st, mk);
    for name in names.split(',') {
        versus(&mut cs, name, &mut peer, vectors);
    }
}

fn main() {
    let mut c = Criterion::default()
        .with_measurement(Tsc)
        .configure_from_args();
    let mut st = setup();
    let mut lpm = LpmOnly {
        reader: st.ctl.fib().reader(),
        keys: st.plain.clone(),
        next: 0,
    };
    // Profiling mode: `PIPELINE_PROFILE=ip4_forward` runs that case alone (4096
    // vectors, or PIPELINE_VECTORS; with PIPELINE_SUMMARY, then its summary
    // line with the cycles per stage) and exits: for `perf record`, or for
    // `valgrind --tool=cachegrind`, whose instruction counts do not move with the
    // neighbours' load (two runs with different counts, subtracted, give the
    // instructions per packet). `PIPELINE_MBUF=1`: on DPDK mbufs (EAL with
    // `--no-huge`, which valgrind can run). `PIPELINE_VS=1`: the case (or each
    // of a comma-separated list) against the peer `l3fwd_work` in turns (see
    // `versus`).
    if let Ok(name) = std::env::var("PIPELINE_PROFILE") {
        let vectors: u64 = std::env::var("PIPELINE_VECTORS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4096);
        let mbuf = std::env::var_os("PIPELINE_MBUF").is_some();
        let vs = std::env::var_os("PIPELINE_VS").is_some();
        let eal = (mbuf || vs || name.starts_with("l3fwd_work")).then(|| {
            Eal::init(&[
                "pipeline-bench",
                "--no-pci",
                "--no-huge",
                "-m",
                "1024",
                "--no-shconf",
                "-l",
                "1",
                "--log-level=*:error",
            ])
            .unwrap_or_else(|e| panic!("EAL: {e}"))
        });
        let heap = |f: &[u8], rx: u16| VecPacket::new(f, rx);
        let pool = eal.filter(|_| mbuf).map(bench_pool);
        if let (true, Some(eal)) = (vs, eal) {
            // (the IPv4 peer, beside the case in the same process)
            let lpm = rte_lpm(eal, &st.rib);
            match pool {
                Some(pool) => versus_each(&mut st, &lpm, &mbufs(&pool), &name, vectors),
                None => versus_each(&mut st, &lpm, &heap, &name, vectors),
            }
            return;
        }
        let t = match (eal, &pool) {
            (Some(eal), pool) if name == "l3fwd_work6" => {
                let lpm = rte_lpm6(eal, &st.rib6);
                match pool {
                    Some(pool) => L3fwdWork6::new(&lpm, &st.rib6, &mbufs(pool)).timed(vectors),
                    None => L3fwdWork6::new(&lpm, &st.rib6, &heap).timed(vectors),
                }
            }
            (Some(eal), pool) if name == "l3fwd_work" => {
                let lpm = rte_lpm(eal, &st.rib);
                match pool {
                    Some(pool) => L3fwdWork::new(&lpm, &st.plain, &mbufs(pool)).timed(vectors),
                    None => L3fwdWork::new(&lpm, &st.plain, &heap).timed(vectors),
                }
            }
            (_, Some(pool)) => profile(&mut cases(&mut st, &mbufs(pool)), &name, vectors),
            (_, None) => profile(&mut cases(&mut st, &heap), &name, vectors),
        };
        println!(
            "{name}: {:.1} cycles/packet over {vectors} vectors",
            t as f64 / (vectors * BURST as u64) as f64
        );
        return;
    }
    // (DPDK for the peer's rte_lpm and the mbufs; without it, neither)
    let eal = Eal::init(&[
        "pipeline-bench",
        "--no-pci",
        "--in-memory",
        "-l",
        "1",
        "--log-level=*:error",
    ]);
    let eal = eal.map_err(|e| println!("(no l3fwd_work and no mbuf run: EAL: {e})"));
    let rlpm = eal.as_ref().ok().map(|eal| rte_lpm(eal, &st.rib));
    let rlpm6 = eal.as_ref().ok().map(|eal| rte_lpm6(eal, &st.rib6));
    let heap = |f: &[u8], rx: u16| VecPacket::new(f, rx);
    let mut peer = rlpm.as_ref().map(|l| L3fwdWork::new(l, &st.plain, &heap));
    let mut peer6 = rlpm6.as_ref().map(|l| L3fwdWork6::new(l, &st.rib6, &heap));
    let mut cs = cases(&mut st, &heap);
    {
        let mut g = c.benchmark_group("pipeline");
        g.throughput(Throughput::Elements(BURST as u64));
        g.bench_function(BenchmarkId::from_parameter("lpm_only"), |b| {
            b.iter_custom(|iters| lpm.timed(iters))
        });
        if let Some(peer) = peer.as_mut() {
            g.bench_function(BenchmarkId::from_parameter("l3fwd_work"), |b| {
                b.iter_custom(|iters| peer.timed(iters))
            });
        }
        if let Some(peer) = peer6.as_mut() {
            g.bench_function(BenchmarkId::from_parameter("l3fwd_work6"), |b| {
                b.iter_custom(|iters| peer.timed(iters))
            });
        }
        for case in cs.iter_mut() {
            g.bench_function(BenchmarkId::from_parameter(case.name), |b| {
                b.iter_custom(|iters| case.timed(iters))
            });
        }
        g.finish();
    }
    c.final_summary();

    // A plain summary: median and 10th percentile of 2001 vectors per case (the
    // machine is shared: the median moves with the neighbours' load, p10 much less),
    // and the median per stage from the core's own TSC counters (the `show run` view).
    let hz = tsc_hz();
    println!(
        "\npipeline, TSC cycles/packet over 2001 vectors of {BURST}, TSC {:.2} GHz",
        hz as f64 / 1e9
    );
    let header = || {
        println!(
            "{:<18} {:>7} {:>7} {:>7} {:>6} {:>5}   median per stage",
            "path", "median", "p10", "Mpps", "goal", "VPP"
        )
    };
    header();
    let mut v: Vec<u64> = (0..2001).map(|_| lpm.timed(1)).collect();
    other_row("lpm_only", &mut v, hz, "fib lookup_burst alone");
    if let Some(peer) = peer.as_mut() {
        peer.summary(hz);
    }
    if let Some(peer) = peer6.as_mut() {
        peer.summary(hz);
    }
    for case in cs.iter_mut() {
        case.summary(hz);
    }

    // The same paths on DPDK mbufs from a hugepage pool: what a worker sees (the
    // heap buffers above span 140 4 KiB pages per vector; mbufs sit in 2 MiB pages).
    let (Ok(eal), Some(rlpm)) = (eal, rlpm.as_ref()) else {
        return;
    };
    let pool = bench_pool(eal);
    let mk = mbufs(&pool);
    let mut ms = cases(&mut st, &mk);
    println!("\nthe same on mbufs (hugepage mempool), TSC cycles/packet:");
    header();
    L3fwdWork::new(rlpm, &st.plain, &mk).summary(hz);
    if let Some(l) = rlpm6.as_ref() {
        L3fwdWork6::new(l, &st.rib6, &mk).summary(hz);
    }
    for case in ms.iter_mut() {
        case.summary(hz);
    }
}
