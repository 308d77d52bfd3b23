//! The packet path: vectors of arbitrary frames through `Core::process` (heap
//! buffers, fast path on) on a router with every path configured: routes, ECMP,
//! labelled routes, swap, PHP, explicit null, pop and lookup, a VLAN
//! sub-interface, an unresolved neighbour, a small MTU, IPv6 routes (plain,
//! labelled, ECMP, via an unresolved link-local neighbour, 6PE via an IPv4 next
//! hop), labels that pop into IPv6 (label 2, ip6-lookup, by the version); by
//! the input's length,
//! with sFlow sampling every packet both ways, the trace on, both or neither.
//! Every packet is accounted for (sent, dropped with a counted reason, held for
//! its neighbour, or punted), and what is sent is well formed: IPv4 (a valid
//! header when it came in as IPv4; what PHP uncovers is sent as it is, as Linux
//! does, once its version says IPv4), IPv6 (its payload length within the
//! frame), or a label stack that keeps its
//! bottom-of-stack entry. Held packets whose neighbour resolved are released
//! and checked the same way; samples never claim more header than frame. (One
//! router and core serve every run: building them costs far more than a run.)
//!
//! Input: frames, each as [port, length high, length low, bytes...].
#![no_main]

mod common;

use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use dataplane::dpdk::tsc_hz;
use dataplane::packet::VecPacket;
use dataplane::router::{Core, CoreConfig, Interface, Out, RouterControl, SflowHook};
use fib::{Path, RouteKind};
use libfuzzer_sys::fuzz_target;
use mpls::LabelAction;
use sflow::{Directions, SampleConsumer, Sampling, SamplingTable};

struct Rig {
    ctl: RouterControl,
    core: Core,
    hook: SflowHook,
    samples: SampleConsumer,
    table: Arc<SamplingTable>,
}

static ROUTER: Mutex<Option<Rig>> = Mutex::new(None);

/// The interfaces sFlow samples when on.
const SAMPLED: [u32; 5] = [1, 2, 3, 4, 10];

fn a(s: &str) -> Ipv4Addr {
    s.parse().expect("address")
}

fn router() -> Rig {
    let mut ctl = RouterControl::new();
    for p in 0..4u8 {
        let mtu = if p == 3 { 576 } else { 1500 };
        ctl.add_interface(common::port(p, mtu)).expect("interface");
    }
    ctl.add_interface(Interface {
        ifindex: 10,
        name: "port1.100".into(),
        port: 1,
        vlan: Some(100),
        mac: [2, 0, 0, 0, 1, 1],
        mtu: 1500,
        up: true,
        table: 0,
        addrs: vec![(a("10.100.0.1"), 24)],
        addrs6: Vec::new(),
    })
    .expect("sub-interface");
    for (ix, gw) in [
        (1, "10.1.0.2"),
        (2, "10.2.0.2"),
        (3, "10.3.0.2"),
        (4, "10.4.0.2"),
    ] {
        ctl.set_neighbor(ix, a(gw), [2, 0, 0, 0, ix as u8, 2])
            .expect("neighbour");
    }
    ctl.set_neighbor(10, a("10.100.0.2"), [2, 0, 0, 0, 9, 2])
        .expect("neighbour");
    let route = |ctl: &mut RouterControl, p: &str, paths: Vec<Path>| {
        let p: fib::IpPrefix = p.parse().expect("prefix");
        ctl.route_add(0, p, RouteKind::Paths(paths)).expect("route");
    };
    let gw = |g: &str| Path::gateway(a(g));
    route(&mut ctl, "198.18.0.0/16", vec![gw("10.2.0.2")]);
    route(
        &mut ctl,
        "198.19.0.0/16",
        vec![gw("10.2.0.2").with_labels(&[1000, 2000])],
    );
    route(
        &mut ctl,
        "198.20.0.0/16",
        vec![gw("10.2.0.2"), gw("10.3.0.2")],
    );
    route(&mut ctl, "198.21.0.0/16", vec![gw("10.3.0.7")]);
    route(&mut ctl, "198.22.0.0/16", vec![gw("10.100.0.2")]);
    route(&mut ctl, "198.23.0.0/16", vec![gw("10.4.0.2")]);
    route(
        &mut ctl,
        "0.0.0.0/0",
        vec![gw("10.2.0.2").with_labels(&[3])],
    );
    let v6 = |s: &str| -> std::net::Ipv6Addr { s.parse().expect("address") };
    ctl.set_neighbor6(2, v6("fe80::2:2"), [2, 0, 0, 0, 2, 6])
        .expect("neighbour");
    ctl.set_neighbor6(3, v6("fe80::3:2"), [2, 0, 0, 0, 3, 6])
        .expect("neighbour");
    let gw6 = |g: &str, ix: u32| Path::gateway6(v6(g), ix);
    route(&mut ctl, "2001:db8:18::/48", vec![gw6("fe80::2:2", 2)]);
    route(
        &mut ctl,
        "2001:db8:19::/48",
        vec![gw6("fe80::2:2", 2).with_labels(&[1000])],
    );
    route(
        &mut ctl,
        "2001:db8:20::/48",
        vec![gw6("fe80::2:2", 2), gw6("fe80::3:2", 3)],
    );
    route(&mut ctl, "2001:db8:21::/48", vec![gw6("fe80::3:7", 3)]);
    // (port 3's small MTU: packet too big)
    ctl.set_neighbor6(4, v6("fe80::4:2"), [2, 0, 0, 0, 4, 6])
        .expect("neighbour");
    route(&mut ctl, "2001:db8:23::/48", vec![gw6("fe80::4:2", 4)]);
    // 6PE: via the IPv4 next hop 198.19.0.1 (an LSP of two labels) with label 600.
    route(
        &mut ctl,
        "2001:db8:24::/48",
        vec![gw("198.19.0.1").with_labels(&[600])],
    );
    let adj2 = ctl.adjacency(2, a("10.2.0.2")).expect("adjacency");
    let adj3 = ctl.adjacency(3, a("10.3.0.2")).expect("adjacency");
    let adj4 = ctl.adjacency(4, a("10.4.0.2")).expect("adjacency");
    for (l, eos, act) in [
        (100, true, LabelAction::swap(adj2, &[200])),
        (100, false, LabelAction::swap(adj2, &[200])),
        (101, true, LabelAction::swap(adj2, &[0])),
        (102, true, LabelAction::php(adj3)),
        (103, true, LabelAction::swap(adj4, &[300, 301])),
        (300, true, LabelAction::ip4_lookup(0)),
        (301, true, LabelAction::ip4_lookup(mpls::RX_TABLE)),
        (304, true, LabelAction::ip6_lookup(0)),
        (305, true, LabelAction::ip_lookup(mpls::RX_TABLE)),
        (
            306,
            true,
            LabelAction::Ip6Lookup {
                table: 0,
                ttl_mode: mpls::TtlMode::pipe(),
            },
        ),
        (
            302,
            false,
            LabelAction::Pop {
                ttl_mode: mpls::TtlMode::Uniform,
            },
        ),
    ] {
        ctl.label_add(l, eos, act).expect("label");
    }
    let cfg = CoreConfig {
        icmp_rate_pps: 1_000_000,
        icmp_burst: 1_000_000,
        hold_ms: 1,
        ..CoreConfig::default()
    };
    let core = ctl.new_core(cfg, tsc_hz()).0;
    let table = Arc::new(SamplingTable::new());
    let (sampler, samples) = sflow::channel(0, table.clone(), 4096, 7).expect("sampler");
    Rig {
        ctl,
        core,
        hook: SflowHook::new(sampler),
        samples,
        table,
    }
}

/// One bottom-of-stack entry, at the end of the stack, inside the frame.
fn one_bottom(stack: &[u8]) -> bool {
    let mut at = 0;
    while let Some(e) = stack.get(at..at + 4) {
        if e[2] & 1 != 0 {
            return true;
        }
        at += 4;
    }
    false
}

fn ip4_sum_ok(ip: &[u8]) -> bool {
    let Some(&v) = ip.first() else { return false };
    let hl = usize::from(v & 0xf) * 4;
    let Some(h) = ip.get(..hl) else { return false };
    let mut sum = 0u32;
    for w in h.chunks_exact(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    v >> 4 == 4 && hl >= 20 && sum == 0xffff
}

fuzz_target!(|data: &[u8]| {
    let mut frames = Vec::new();
    let mut rest = data;
    while let [port, hi, lo, tail @ ..] = rest {
        let n = (usize::from(*hi) << 8 | usize::from(*lo))
            .min(tail.len())
            .min(2048);
        frames.push((u16::from(*port % 4), &tail[..n]));
        rest = &tail[n..];
        if frames.len() == 256 {
            break;
        }
    }
    if frames.is_empty() {
        return;
    }
    let mut guard = ROUTER.lock().unwrap_or_else(|e| e.into_inner());
    let Rig {
        ctl,
        core,
        hook,
        samples,
        table,
    } = guard.get_or_insert_with(router);
    let _ = ctl.poll();
    let sampling = (data.len() & 1 != 0).then_some(Sampling {
        rate: 1,
        directions: Directions::Both,
    });
    for ix in SAMPLED {
        table.set(ix, sampling).expect("sampling");
    }
    let trace = if data.len() & 2 != 0 { 256 } else { 0 };
    core.stats().trace_budget.store(trace, Ordering::Relaxed);

    // Held packets whose neighbour has resolved go first, as a worker sends them.
    let ready = core.held_ready();
    let mut back: Vec<VecPacket> = (0..ready).map(|_| VecPacket::new(&[], 0)).collect();
    let mut back_out = vec![Out::Drop; ready];
    assert_eq!(core.release(&mut back, &mut back_out), ready);
    for (o, p) in back_out.iter().zip(&back) {
        if let Out::Tx(_) = o {
            check_sent(o, p.data(), None);
        }
    }

    let stats = core.stats();
    let (drops, held, arp) = (
        stats.total_drops(),
        stats.held.get(),
        stats.arp_consumed.get() + stats.nd_consumed.get(),
    );
    let mut pkts: Vec<VecPacket> = frames.iter().map(|(p, f)| VecPacket::new(f, *p)).collect();
    let mut out = vec![Out::Drop; pkts.len()];
    hook.process(core, &mut pkts, &mut out);
    let dropped = out.iter().filter(|o| matches!(o, Out::Drop)).count() as u64;
    // Every drop is counted under a reason, held, or an ARP packet consumed (an
    // ICMP error or ARP request sent in a dropped packet's place counts its drop
    // too).
    let stats = core.stats();
    let accounted = stats.total_drops() - drops + stats.held.get() - held
        + stats.arp_consumed.get()
        + stats.nd_consumed.get()
        - arp;
    assert!(
        accounted >= dropped,
        "{dropped} dropped, {accounted} accounted"
    );
    while let Some(r) = samples.pop() {
        assert!(
            r.header().len() <= r.frame_len as usize,
            "a sample with more header than frame: {r:?}"
        );
    }
    while stats.traces.pop().is_some() {}
    for (i, (o, p)) in out.iter().zip(&pkts).enumerate() {
        if let Out::Tx(_) = o {
            check_sent(o, p.data(), Some(frames[i].1));
        }
    }
});

/// What the router sent, `f`, for `got` (unknown for a released packet, which
/// was checked as IPv4 on its way in) is well formed.
fn check_sent(o: &Out, f: &[u8], got: Option<&[u8]>) {
    {
        assert!(f.len() >= 14, "a frame sent without an Ethernet header");
        let (et, l3) = match u16::from_be_bytes([f[12], f[13]]) {
            0x8100 => (u16::from_be_bytes([f[16], f[17]]), 18),
            et => (et, 14),
        };
        match et {
            0x0800 => {
                // What came in as IPv4 was checked: it leaves with a valid header.
                // (A payload under a label is the LSP's: PHP sends it on as it is.)
                let plain_in = got.is_some_and(|g| g.get(12..14) == Some(&[8, 0][..]));
                assert!(
                    f.get(l3).is_some_and(|v| v >> 4 == 4),
                    "not IPv4 sent as IPv4: {o:?} {f:02x?} for {got:02x?}"
                );
                assert!(
                    !plain_in || ip4_sum_ok(&f[l3..]),
                    "bad IPv4 sent: {o:?} {f:02x?} for {got:02x?}"
                );
            }
            0x86dd => {
                let ip = &f[l3..];
                assert!(
                    ip.len() >= 40
                        && ip[0] >> 4 == 6
                        && 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]])) <= ip.len(),
                    "bad IPv6 sent: {o:?} {f:02x?} for {got:02x?}"
                );
            }
            0x8847 => {
                // A stack that had its bottom keeps one (a swap looks at the top
                // label only: below it, what came in goes on as it was).
                let had = match got.map(|g| (g.get(12..14), g)) {
                    Some((Some([0x88, 0x47]), g)) => one_bottom(&g[14..]),
                    Some((Some([0x81, 0x00]), g)) => g.len() > 18 && one_bottom(&g[18..]),
                    Some(_) => true,
                    None => false,
                };
                assert!(
                    !had || one_bottom(&f[l3..]),
                    "label stack without S: {o:?} {f:02x?} for {got:02x?}"
                );
            }
            _ => {}
        }
    }
}
