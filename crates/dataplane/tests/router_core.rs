//! The forwarding core without EAL: [`RouterControl`] builds the tables, [`Core`]
//! runs vectors of [`VecPacket`]s, and every case checks the bytes that leave and the
//! exact counters (VPP's `n=257`: one full vector and one packet more). IPv6:
//! `router_core/ip6.rs`.

mod common;
#[path = "router_core/ip6.rs"]
mod ip6;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use dataplane::dpdk::{BURST, tsc_hz};
use dataplane::packet::{RxCsum, VecPacket};
use dataplane::router::{Core, CoreConfig, Out, RouterControl, RouterError, Stage};
use fib::{Path, RouteKind};
use mpls::LabelAction;
use proptest::prelude::*;

const N: usize = 257;

/// DPDK port ids of the logical ports (the core runs without EAL: any ids).
const PORTS: [u16; 5] = [0, 1, 2, 3, 4];

/// The ports `diff_frame`'s frames come in on: 0, 1, and one with no interface.
const DIFF_PORTS: [u16; 3] = [0, 1, 7];

fn lsr() -> RouterControl {
    lsr_on(PORTS)
}

fn core(ctl: &mut RouterControl) -> Core {
    ctl.new_core(core_cfg(), tsc_hz()).0
}

/// Runs `frames` received on `port` through the core in vectors of [`BURST`].
fn run(core: &mut Core, frames: &[Vec<u8>], port: u16) -> Vec<(Out, Vec<u8>)> {
    let mut res = Vec::with_capacity(frames.len());
    for chunk in frames.chunks(BURST) {
        let mut pkts: Vec<VecPacket> = chunk.iter().map(|f| VecPacket::new(f, port)).collect();
        let mut out = vec![Out::Drop; chunk.len()];
        core.process(&mut pkts, &mut out);
        res.extend(out.iter().zip(&pkts).map(|(o, p)| (*o, p.data().to_vec())));
    }
    res
}

/// Sends on what the core held, in `n` fresh buffers.
fn release(core: &mut Core, n: usize) -> Vec<(Out, Vec<u8>)> {
    let mut pkts: Vec<VecPacket> = (0..n).map(|_| VecPacket::new(&[], 0)).collect();
    let mut out = vec![Out::Drop; n];
    assert_eq!(core.release(&mut pkts, &mut out), n);
    out.iter()
        .zip(&pkts)
        .map(|(o, p)| (*o, p.data().to_vec()))
        .collect()
}

/// Checks that every frame left on `port` as `want(i)`.
fn assert_all_tx(res: &[(Out, Vec<u8>)], port: u16, mut want: impl FnMut(usize) -> Vec<u8>) {
    for (i, (o, d)) in res.iter().enumerate() {
        assert_eq!(*o, Out::Tx(port), "packet {i}");
        let w = want(i);
        assert_eq!(d, &w, "packet {i}: got {d:02x?}\nwant {w:02x?}");
    }
}

fn stage(core: &Core, s: Stage) -> (u64, u64) {
    let c = &core.stats().stages[s as usize];
    (c.calls.get(), c.pkts.get())
}

#[test]
fn ip4_forward_rewrites_ttl_checksum_and_macs() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut core = core(&mut ctl);
    // Every TTL from 2 to 255 and varied lengths and ids: the incremental checksum
    // must equal a full recomputation for all of them.
    let ips: Vec<Vec<u8>> = (0..N)
        .map(|i| {
            let mut p = host_ip(i, [198, 18], 2 + (i % 254) as u8, 28 + i * 5 % 1400);
            p[4..6].copy_from_slice(&((i * 7919) as u16).to_be_bytes());
            ip_fix(&mut p);
            p
        })
        .collect();
    let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
    let res = run(&mut core, &frames, 0);
    assert_all_tx(&res, 1, |i| {
        eth(
            mac_n(1),
            mac_r(1),
            None,
            ETH_IP4,
            &with_ttl(&ips[i], ips[i][8] - 1),
        )
    });

    let s = core.stats();
    assert_eq!(counters(s), expect(&[]));
    let rx_bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!(s.ifaces[1].rx_pkts.get(), N as u64);
    assert_eq!(s.ifaces[1].rx_bytes.get(), rx_bytes);
    assert_eq!(s.ifaces[1].drops.get(), 0);
    assert_eq!(s.ifaces[2].tx_pkts.get(), N as u64);
    assert_eq!(s.ifaces[2].tx_bytes.get(), rx_bytes);
    assert_eq!(stage(&core, Stage::EthernetInput), (2, N as u64));
    assert_eq!(stage(&core, Stage::MplsLookup), (0, 0));
    assert_eq!(stage(&core, Stage::Ip4Lookup), (2, N as u64));
    assert_eq!(stage(&core, Stage::Local), (0, 0));
    assert_eq!(stage(&core, Stage::Rewrite), (2, N as u64));
}

#[test]
fn ip4_forward_strips_ethernet_padding() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut core = core(&mut ctl);
    let ip = host_ip(1, [198, 18], 64, 28);
    let mut f = from_host(&ip);
    f.resize(60, 0xee);
    let res = run(&mut core, &vec![f; N], 0);
    assert_all_tx(&res, 1, |_| {
        eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 63))
    });
    assert_eq!(core.stats().ifaces[2].tx_bytes.get(), 42 * N as u64);
}

/// [`run`] with every packet carrying the NIC's checksum verdict `csum`.
fn run_csum(core: &mut Core, frames: &[Vec<u8>], port: u16, csum: RxCsum) -> Vec<(Out, Vec<u8>)> {
    let mut res = Vec::with_capacity(frames.len());
    for chunk in frames.chunks(BURST) {
        let mut pkts: Vec<VecPacket> = chunk
            .iter()
            .map(|f| VecPacket::new(f, port).with_rx_csum(csum))
            .collect();
        let mut out = vec![Out::Drop; chunk.len()];
        core.process(&mut pkts, &mut out);
        res.extend(out.iter().zip(&pkts).map(|(o, p)| (*o, p.data().to_vec())));
    }
    res
}

/// With rx checksum offload the NIC's verdict on the IPv4 header right behind the
/// Ethernet header is trusted: "good" is not summed again (a header whose sum the
/// NIC vouched for is forwarded, its checksum updated incrementally), "bad" is
/// dropped as `ip4_bad_checksum` however the sum comes out. A header that came out
/// from under a label was never seen by the NIC as IPv4: it is always summed. Fast
/// path and general path alike.
#[test]
fn nic_checksum_verdicts_hold_for_the_outer_header_only() {
    for fast_path in [true, false] {
        let mut ctl = lsr();
        // (port 0's device checks checksums)
        let nic = CoreConfig {
            fast_path,
            nic_csum_ports: 1,
            ..core_cfg()
        };
        let mut core = ctl.new_core(nic, tsc_hz()).0;
        let good = host_ip(7, [198, 18], 64, 60);
        let mut wrong = good.clone();
        wrong[10] ^= 0x5a;

        // "Good" on a header whose sum is off: forwarded, checksum updated in step
        // with the TTL (RFC 1624 on the field as it was).
        let res = run_csum(&mut core, &vec![from_host(&wrong); N], 0, RxCsum::Good);
        let mut out_ip = wrong.clone();
        out_ip[8] = 63;
        let ck = wire::checksum::update_u16(
            u16::from_be_bytes([wrong[10], wrong[11]]),
            u16::from_be_bytes([64, wrong[9]]),
            u16::from_be_bytes([63, wrong[9]]),
        );
        out_ip[10..12].copy_from_slice(&ck.to_be_bytes());
        assert_all_tx(&res, 1, |_| eth(mac_n(1), mac_r(1), None, ETH_IP4, &out_ip));
        assert_eq!(counters(core.stats()), expect(&[]), "fast path {fast_path}");

        // "Bad" on a header whose sum is right: dropped and counted.
        let res = run_csum(&mut core, &vec![from_host(&good); N], 0, RxCsum::Bad);
        assert!(res.iter().all(|(o, _)| *o == Out::Drop));
        assert_eq!(
            counters(core.stats()),
            expect(&[("ip4_bad_checksum", N as u64)]),
            "fast path {fast_path}"
        );

        // "Unknown" (no offload) on a header whose sum is off: summed, dropped.
        let res = run_csum(&mut core, &vec![from_host(&wrong); N], 0, RxCsum::Unknown);
        assert!(res.iter().all(|(o, _)| *o == Out::Drop));
        assert_eq!(
            counters(core.stats()),
            expect(&[("ip4_bad_checksum", 2 * N as u64)]),
            "fast path {fast_path}"
        );

        // Under explicit null and under a popped label, "good" says nothing of the
        // inner header: a wrong sum there is dropped.
        for label in [0, 300] {
            let f = from_host_mpls(&[(label, 64)], &wrong);
            let res = run_csum(&mut core, &vec![f; N], 0, RxCsum::Good);
            assert!(res.iter().all(|(o, _)| *o == Out::Drop), "label {label}");
        }
        // ... and a right one goes through whatever the NIC said.
        for csum in [RxCsum::Good, RxCsum::Bad, RxCsum::Unknown] {
            let f = from_host_mpls(&[(300, 64)], &good);
            let res = run_csum(&mut core, &vec![f; N], 0, csum);
            assert_all_tx(&res, 1, |_| {
                eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&good, 63))
            });
        }
        assert_eq!(
            counters(core.stats()),
            expect(&[("ip4_bad_checksum", 4 * N as u64)]),
            "fast path {fast_path}"
        );

        // A port left out of `nic_csum_ports` (no offload there, the default):
        // its verdicts are not read, every header is summed.
        let mut core = ctl
            .new_core(
                CoreConfig {
                    fast_path,
                    nic_csum_ports: !1,
                    ..core_cfg()
                },
                tsc_hz(),
            )
            .0;
        let res = run_csum(&mut core, &vec![from_host(&wrong); N], 0, RxCsum::Good);
        assert!(res.iter().all(|(o, _)| *o == Out::Drop));
        let res = run_csum(&mut core, &vec![from_host(&good); N], 0, RxCsum::Bad);
        assert_all_tx(&res, 1, |_| {
            eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&good, 63))
        });
        assert_eq!(
            counters(core.stats()),
            expect(&[("ip4_bad_checksum", N as u64)]),
            "fast path {fast_path}"
        );
    }
}

#[test]
fn pe_ingress_pushes_one_and_three_labels_with_uniform_ttl() {
    let mut ctl = router();
    route(&mut ctl, "198.19.0.0/16", &["10.2.0.2"], &[1000]);
    route(
        &mut ctl,
        "198.20.0.0/16",
        &["10.2.0.2"],
        &[1000, 2000, 3000],
    );
    let mut core = core(&mut ctl);
    for (net, labels) in [
        ([198, 19], vec![1000u32]),
        ([198, 20], vec![1000, 2000, 3000]),
    ] {
        let ips: Vec<Vec<u8>> = (0..N)
            .map(|i| host_ip(i, net, 2 + (i % 250) as u8, 64))
            .collect();
        let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 1, |i| {
            let ttl = ips[i][8] - 1;
            let stack: Vec<(u32, u8)> = labels.iter().map(|&l| (l, ttl)).collect();
            eth(
                mac_n(1),
                mac_r(1),
                None,
                ETH_MPLS,
                &labelled(&stack, &with_ttl(&ips[i], ttl)),
            )
        });
    }
    assert_eq!(counters(core.stats()), expect(&[]));
    assert_eq!(core.stats().ifaces[2].tx_pkts.get(), 2 * N as u64);
}

/// The core keeps what it decoded of FIB results and adjacencies from one vector
/// to the next while nothing changes: every change between two vectors (a
/// neighbour's MAC rewritten in place, the MTU, the admin state, a route moved to
/// another path list, the neighbour gone) shows in the very next vector, on the
/// plain and the labelled route alike.
#[test]
fn decoded_results_follow_changes_between_vectors() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    route(&mut ctl, "198.19.0.0/16", &["10.2.0.2"], &[1000]);
    let mut core = core(&mut ctl);
    let plain = host_ip(1, [198, 18], 64, 300);
    let pushed = host_ip(2, [198, 19], 64, 300);
    let frames: Vec<Vec<u8>> = (0..N)
        .map(|i| from_host(if i % 2 == 0 { &plain } else { &pushed }))
        .collect();
    let want = |mac: [u8; 6], src: [u8; 6], label: u32| {
        let (plain, pushed) = (&plain, &pushed);
        move |i: usize| {
            if i % 2 == 0 {
                eth(mac, src, None, ETH_IP4, &with_ttl(plain, 63))
            } else {
                let stack = labelled(&[(label, 63)], &with_ttl(pushed, 63));
                eth(mac, src, None, ETH_MPLS, &stack)
            }
        }
    };
    // Twice: the second vector runs on what the first decoded.
    for _ in 0..2 {
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 1, want(mac_n(1), mac_r(1), 1000));
    }
    // The neighbour's MAC, rewritten in place (same adjacency, same results).
    let moved = [0x02, 0, 0, 0, 1, 0x77];
    ctl.set_neighbor(2, a("10.2.0.2"), moved).unwrap();
    let res = run(&mut core, &frames, 0);
    assert_all_tx(&res, 1, want(moved, mac_r(1), 1000));
    // An MTU below the frames (no DF): dropped, none sent.
    ctl.set_mtu(2, 200).unwrap();
    let res = run(&mut core, &frames, 0);
    assert!(res.iter().all(|(o, _)| *o == Out::Drop), "{:?}", res[0].0);
    ctl.set_mtu(2, 1500).unwrap();
    assert_all_tx(&run(&mut core, &frames, 0), 1, want(moved, mac_r(1), 1000));
    // Interface down, then up again.
    ctl.set_up(2, false).unwrap();
    let res = run(&mut core, &frames, 0);
    assert!(res.iter().all(|(o, _)| !matches!(o, Out::Tx(_))));
    ctl.set_up(2, true).unwrap();
    assert_all_tx(&run(&mut core, &frames, 0), 1, want(moved, mac_r(1), 1000));
    // Both routes moved to another neighbour and label.
    route(&mut ctl, "198.18.0.0/16", &["10.3.0.2"], &[]);
    route(&mut ctl, "198.19.0.0/16", &["10.3.0.2"], &[2000]);
    assert_all_tx(
        &run(&mut core, &frames, 0),
        2,
        want(mac_n(2), mac_r(2), 2000),
    );
    // The neighbour incomplete: nothing leaves on the old MAC.
    ctl.set_neighbor(3, a("10.3.0.2"), [0; 6]).ok();
    let res = run(&mut core, &frames, 0);
    assert!(
        res.iter()
            .all(|(o, d)| !matches!(o, Out::Tx(2)) || d.get(..6) != Some(&mac_n(2)[..])),
    );
}

/// The same for an ECMP route: its legs are decoded once per leg (the leg
/// cache), and a change between vectors (new labels, a neighbour's new MAC) shows
/// in the very next vector on every leg.
#[test]
fn decoded_ecmp_legs_follow_changes_between_vectors() {
    let mut ctl = router();
    route(
        &mut ctl,
        "198.24.0.0/16",
        &["10.2.0.2", "10.3.0.2"],
        &[1000],
    );
    let mut core = core(&mut ctl);
    let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, [198, 24], 64, 100)).collect();
    let frames: Vec<Vec<u8>> = ips.iter().map(|ip| from_host(ip)).collect();
    // Every packet leaves by one of the two legs with `label`, on the MAC of its
    // neighbour there; both legs are used.
    let check = |res: &[(Out, Vec<u8>)], label: u32, macs: [[u8; 6]; 2]| {
        let mut used = [false; 2];
        for (i, (o, d)) in res.iter().enumerate() {
            let leg = match o {
                Out::Tx(1) => 0,
                Out::Tx(2) => 1,
                o => panic!("packet {i}: {o:?}"),
            };
            used[leg] = true;
            let stack = labelled(&[(label, 63)], &with_ttl(&ips[i], 63));
            let want = eth(macs[leg], mac_r(leg as u8 + 1), None, ETH_MPLS, &stack);
            assert_eq!(d, &want, "packet {i}");
        }
        assert_eq!(used, [true, true]);
    };
    for _ in 0..2 {
        check(&run(&mut core, &frames, 0), 1000, [mac_n(1), mac_n(2)]);
    }
    route(
        &mut ctl,
        "198.24.0.0/16",
        &["10.2.0.2", "10.3.0.2"],
        &[2000],
    );
    check(&run(&mut core, &frames, 0), 2000, [mac_n(1), mac_n(2)]);
    let moved = [0x02, 0, 0, 0, 2, 0x77];
    ctl.set_neighbor(3, a("10.3.0.2"), moved).unwrap();
    check(&run(&mut core, &frames, 0), 2000, [mac_n(1), moved]);
}

#[test]
fn implicit_null_out_label_sends_plain_ip4() {
    let mut ctl = router();
    route(&mut ctl, "198.23.0.0/16", &["10.2.0.2"], &[3]);
    let mut core = core(&mut ctl);
    let ip = host_ip(7, [198, 23], 64, 100);
    let res = run(&mut core, &vec![from_host(&ip); N], 0);
    assert_all_tx(&res, 1, |_| {
        eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 63))
    });
}

#[test]
fn p_router_swaps_the_top_label() {
    let mut ctl = lsr();
    let mut core = core(&mut ctl);
    let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, [198, 18], 64, 80)).collect();
    for (in_label, out_label) in [(100, 200), (110, 110)] {
        let frames: Vec<Vec<u8>> = ips
            .iter()
            .enumerate()
            .map(|(i, p)| from_host_mpls(&[(in_label, 2 + (i % 250) as u8)], p))
            .collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 1, |i| {
            let ttl = 1 + (i % 250) as u8;
            eth(
                mac_n(1),
                mac_r(1),
                None,
                ETH_MPLS,
                &labelled(&[(out_label, ttl)], &ips[i]),
            )
        });
    }
    // Non-bottom entry: the labels below are untouched.
    let f = from_host_mpls(&[(100, 64), (5000, 7)], &ips[0]);
    let res = run(&mut core, &vec![f; N], 0);
    assert_all_tx(&res, 1, |_| {
        let mut l = lse(200, false, 63).to_vec();
        l.extend_from_slice(&lse(5000, true, 7));
        l.extend_from_slice(&ips[0]);
        eth(mac_n(1), mac_r(1), None, ETH_MPLS, &l)
    });
    assert_eq!(counters(core.stats()), expect(&[]));
    assert_eq!(stage(&core, Stage::MplsLookup), (6, 3 * N as u64));
    assert_eq!(stage(&core, Stage::Ip4Lookup), (0, 0));
}

#[test]
fn pe_egress_pops_and_looks_up_in_the_same_pass() {
    let mut ctl = lsr();
    let mut core = core(&mut ctl);
    let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, [198, 18], 64, 90)).collect();
    // Uniform TTL: the label TTL becomes the IPv4 TTL, then the IPv4 hop takes one.
    let frames: Vec<Vec<u8>> = ips
        .iter()
        .enumerate()
        .map(|(i, p)| from_host_mpls(&[(300, 2 + (i % 200) as u8)], p))
        .collect();
    let res = run(&mut core, &frames, 0);
    assert_all_tx(&res, 1, |i| {
        eth(
            mac_n(1),
            mac_r(1),
            None,
            ETH_IP4,
            &with_ttl(&ips[i], 1 + (i % 200) as u8),
        )
    });
    assert_eq!(counters(core.stats()), expect(&[]));
    // One pass: every packet went through mpls-lookup and ip4-lookup once.
    assert_eq!(stage(&core, Stage::MplsLookup), (2, N as u64));
    assert_eq!(stage(&core, Stage::Ip4Lookup), (2, N as u64));
    assert_eq!(stage(&core, Stage::Rewrite), (2, N as u64));
}

#[test]
fn explicit_null_at_egress_and_towards_it() {
    let mut ctl = lsr();
    let mut core = core(&mut ctl);
    let ip = host_ip(3, [198, 18], 64, 60);
    // Received with label 0 (the penultimate hop swapped to explicit null).
    let res = run(&mut core, &vec![from_host_mpls(&[(0, 30)], &ip); N], 0);
    assert_all_tx(&res, 1, |_| {
        eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 29))
    });
    // The penultimate hop: label 0 on the wire.
    let res = run(&mut core, &vec![from_host_mpls(&[(101, 30)], &ip); N], 0);
    assert_all_tx(&res, 1, |_| {
        eth(
            mac_n(1),
            mac_r(1),
            None,
            ETH_MPLS,
            &labelled(&[(0, 29)], &ip),
        )
    });
    assert_eq!(counters(core.stats()), expect(&[]));
}

/// Label 0, and `ip4-lookup` without a table, look the payload up in the
/// receiving interface's table, as the same packet unlabelled would be: on the
/// fast path and on the general one.
#[test]
fn explicit_null_looks_up_in_the_receiving_interfaces_table() {
    let mut ctl = RouterControl::new();
    ctl.table_add(1).unwrap();
    for p in 0..2u8 {
        ctl.add_interface(port_iface(p, u16::from(p), 1)).unwrap();
    }
    ctl.set_neighbor(2, a("10.2.0.2"), mac_n(1)).unwrap();
    let via = RouteKind::Paths(vec![Path::gateway(a("10.2.0.2"))]);
    ctl.route_add(1, pfx("198.18.0.0/16"), via).unwrap();
    let lookup = LabelAction::Ip4Lookup {
        table: mpls::RX_TABLE,
        ttl_mode: mpls::TtlMode::Uniform,
    };
    ctl.label_add(200, true, lookup).unwrap();
    let ip = host_ip(3, [198, 18], 64, 60);
    for fast_path in [true, false] {
        let cfg = CoreConfig {
            fast_path,
            ..core_cfg()
        };
        let mut core = ctl.new_core(cfg, tsc_hz()).0;
        let plain = run(&mut core, &vec![from_host(&ip); 3], 0);
        assert_all_tx(&plain, 1, |_| {
            eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 63))
        });
        for label in [0, 200] {
            let res = run(&mut core, &vec![from_host_mpls(&[(label, 30)], &ip); 3], 0);
            assert_all_tx(&res, 1, |_| {
                eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 29))
            });
        }
        assert_eq!(counters(core.stats()), expect(&[]), "fast path {fast_path}");
    }
}

/// RFC 3032 §3: a labelled packet that is too big for the next hop after the
/// swap (or PHP) is never sent. With DF set in its IPv4 payload, "fragmentation
/// needed" with the MTU left under the outgoing stack goes on along the LSP
/// behind that stack (to the egress, which routes it to the source); without DF
/// it is only dropped. Both paths, fast and general.
#[test]
fn switched_packets_too_big_for_the_link_get_frag_needed_along_the_lsp() {
    let mut ctl = lsr();
    let big = |df: bool| {
        let mut ip = host_ip(3, [198, 18], 64, 1600);
        if df {
            ip[6] |= 0x40;
            ip_fix(&mut ip);
        }
        ip
    };
    for fast_path in [true, false] {
        let cfg = CoreConfig {
            fast_path,
            ..core_cfg()
        };
        let mut core = ctl.new_core(cfg, tsc_hz()).0;
        // Swap 100 -> 200 towards port 1 (MTU 1500): the reply carries label 200.
        let res = run(&mut core, &[from_host_mpls(&[(100, 30)], &big(true))], 0);
        assert_eq!(res[0].0, Out::Tx(1), "fast path {fast_path}");
        let f = &res[0].1;
        assert_eq!(&f[12..14], &[0x88, 0x47]);
        assert_eq!(&f[14..18], &lse(200, true, 64), "{:02x?}", &f[..80]);
        let ip = &f[18..];
        assert_eq!(ip[9], 1, "ICMP");
        assert_eq!(&ip[12..16], &[10, 1, 0, 1], "from the receiving interface");
        assert_eq!(&ip[16..20], &[10, 1, 0, 2], "to the source");
        assert_eq!((ip[20], ip[21]), (3, 4), "fragmentation needed");
        assert_eq!(
            u16::from_be_bytes([ip[26], ip[27]]),
            1496,
            "MTU under one label"
        );
        assert_eq!(
            &ip[28..48],
            &big(true)[..20],
            "the original's header quoted"
        );
        // PHP towards port 2: the reply is plain IPv4, the whole MTU is IPv4's.
        let res = run(&mut core, &[from_host_mpls(&[(102, 30)], &big(true))], 0);
        assert_eq!(res[0].0, Out::Tx(2));
        let f = &res[0].1;
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(u16::from_be_bytes([f[14 + 26], f[14 + 27]]), 1500);
        // No DF: dropped, counted.
        let res = run(&mut core, &[from_host_mpls(&[(100, 30)], &big(false))], 0);
        assert_eq!(res[0].0, Out::Drop);
        // A packet that fits still goes.
        let ip = host_ip(3, [198, 18], 64, 1496);
        let res = run(&mut core, &[from_host_mpls(&[(100, 30)], &ip)], 0);
        assert_eq!(res[0].0, Out::Tx(1));
        assert_eq!(
            counters(core.stats()),
            expect(&[("icmp_errors", 2), ("mpls_mtu_exceeded", 3)]),
            "fast path {fast_path}"
        );
    }
}

#[test]
fn php_sends_the_payload_as_ip4() {
    let mut ctl = lsr();
    let mut core = core(&mut ctl);
    let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, [198, 18], 64, 70)).collect();
    let frames: Vec<Vec<u8>> = ips
        .iter()
        .enumerate()
        .map(|(i, p)| from_host_mpls(&[(102, 2 + (i % 100) as u8)], p))
        .collect();
    let res = run(&mut core, &frames, 0);
    assert_all_tx(&res, 2, |i| {
        eth(
            mac_n(2),
            mac_r(2),
            None,
            ETH_IP4,
            &with_ttl(&ips[i], 1 + (i % 100) as u8),
        )
    });
    assert_eq!(counters(core.stats()), expect(&[]));
    assert_eq!(stage(&core, Stage::Ip4Lookup), (0, 0));
}

/// Sends `flows` packets of different UDP source ports to one destination and
/// returns how many left on each port; checks the MACs match the port.
fn spread(core: &mut Core, dst: Ipv4Addr, flows: usize) -> [usize; 8] {
    let frames: Vec<Vec<u8>> = (0..flows)
        .map(|i| from_host(&ip4(a("10.1.0.2"), dst, 64, 1024 + i as u16, 64)))
        .collect();
    let res = run(core, &frames, 0);
    let mut per_port = [0usize; 8];
    for (o, d) in &res {
        let Out::Tx(p) = *o else {
            panic!("not sent: {o:?}")
        };
        assert_eq!(&d[..6], &mac_n(p as u8));
        assert_eq!(&d[6..12], &mac_r(p as u8));
        per_port[usize::from(p)] += 1;
    }
    // The same flow always takes the same path.
    let again = run(core, &frames, 0);
    assert!(
        res.iter().zip(&again).all(|(x, y)| x.0 == y.0),
        "a flow changed path"
    );
    per_port
}

#[test]
fn ecmp_spreads_flows_over_two_and_four_paths() {
    let mut ctl = router();
    route(&mut ctl, "198.21.0.0/16", &["10.2.0.2", "10.3.0.2"], &[]);
    route(
        &mut ctl,
        "198.22.0.0/16",
        &["10.2.0.2", "10.3.0.2", "10.4.0.2", "10.5.0.2"],
        &[],
    );
    let mut core = core(&mut ctl);
    let flows = 16 * BURST;
    for (dst, ports) in [
        (a("198.21.0.1"), &[1usize, 2][..]),
        (a("198.22.0.1"), &[1, 2, 3, 4]),
    ] {
        let per_port = spread(&mut core, dst, flows);
        let even = flows / ports.len();
        for &p in ports {
            let dev = per_port[p].abs_diff(even) as f64 / even as f64;
            assert!(dev < 0.05, "{dst}: {per_port:?} is not within 5% of {even}");
        }
        assert_eq!(ports.iter().map(|&p| per_port[p]).sum::<usize>(), flows);
    }
    // Flows that differ only by destination spread too.
    let frames: Vec<Vec<u8>> = (0..flows)
        .map(|i| from_host(&host_ip(i, [198, 22], 64, 64)))
        .collect();
    let res = run(&mut core, &frames, 0);
    let mut per_port = [0usize; 8];
    for (o, _) in &res {
        if let Out::Tx(p) = o {
            per_port[usize::from(*p)] += 1;
        }
    }
    for p in 1..5 {
        assert!(
            per_port[p].abs_diff(flows / 4) < flows / 4 / 20,
            "{per_port:?}"
        );
    }
    assert_eq!(counters(core.stats()), expect(&[]));
}

#[test]
fn vlan_sub_interfaces_in_and_out() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    route(&mut ctl, "198.24.0.0/16", &["10.200.0.2"], &[]);
    let mut core = core(&mut ctl);
    let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, [198, 24], 64, 64)).collect();
    // Tagged in (VLAN 100 on port 0), tagged out (VLAN 200 on port 1).
    let frames: Vec<Vec<u8>> = ips
        .iter()
        .map(|p| eth(mac_r(0), HOST, Some(100), ETH_IP4, p))
        .collect();
    let res = run(&mut core, &frames, 0);
    assert_all_tx(&res, 1, |i| {
        eth(VNBR, mac_r(1), Some(200), ETH_IP4, &with_ttl(&ips[i], 63))
    });
    // Untagged in, tagged out.
    let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
    let res = run(&mut core, &frames, 0);
    assert_all_tx(&res, 1, |i| {
        eth(VNBR, mac_r(1), Some(200), ETH_IP4, &with_ttl(&ips[i], 63))
    });
    // Tagged in, untagged out.
    let ip = host_ip(9, [198, 18], 64, 64);
    let res = run(
        &mut core,
        &vec![eth(mac_r(0), HOST, Some(100), ETH_IP4, &ip); N],
        0,
    );
    assert_all_tx(&res, 1, |_| {
        eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 63))
    });
    let s = core.stats();
    assert_eq!(s.ifaces[10].rx_pkts.get(), 2 * N as u64);
    assert_eq!(s.ifaces[1].rx_pkts.get(), N as u64);
    assert_eq!(s.ifaces[11].tx_pkts.get(), 2 * N as u64);
    assert_eq!(s.ifaces[2].tx_pkts.get(), N as u64);
    assert_eq!(counters(s), expect(&[]));
}

#[test]
fn arp_requests_for_our_addresses_are_answered() {
    let mut ctl = router();
    let mut core = core(&mut ctl);
    let mut req = eth(
        BCAST,
        HOST,
        None,
        ETH_ARP,
        &arp(1, HOST, a("10.1.0.2"), [0; 6], a("10.1.0.1")),
    );
    req.resize(60, 0);
    let res = run(&mut core, &vec![req; N], 0);
    assert_all_tx(&res, 0, |_| {
        eth(
            HOST,
            mac_r(0),
            None,
            ETH_ARP,
            &arp(2, mac_r(0), a("10.1.0.1"), HOST, a("10.1.0.2")),
        )
    });
    // On a sub-interface: the reply is tagged.
    let host2 = [2, 0, 0, 0, 0x64, 0x55];
    let req = eth(
        BCAST,
        host2,
        Some(100),
        ETH_ARP,
        &arp(1, host2, a("10.100.0.2"), [0; 6], a("10.100.0.1")),
    );
    let res = run(&mut core, &vec![req; N], 0);
    assert_all_tx(&res, 0, |_| {
        eth(
            host2,
            mac_r(0),
            Some(100),
            ETH_ARP,
            &arp(2, mac_r(0), a("10.100.0.1"), host2, a("10.100.0.2")),
        )
    });
    // Requests for other hosts are only learned from.
    let other = eth(
        BCAST,
        HOST,
        None,
        ETH_ARP,
        &arp(1, HOST, a("10.1.0.2"), [0; 6], a("10.1.0.77")),
    );
    let res = run(&mut core, &vec![other; N], 0);
    assert!(res.iter().all(|r| r.0 == Out::Drop));
    assert_eq!(
        counters(core.stats()),
        expect(&[("arp_replies", 2 * N as u64), ("arp_consumed", N as u64)])
    );
    assert_eq!(core.stats().ifaces[1].tx_pkts.get(), N as u64);
    assert_eq!(core.stats().ifaces[10].tx_pkts.get(), N as u64);
    // The senders were learned: 10.100.0.2 is new.
    assert_eq!(ctl.poll(), 3 * N);
    assert_eq!(ctl.neighbors().get(&(10, a("10.100.0.2"))), Some(&host2));
}

#[test]
fn arp_resolves_an_incomplete_adjacency() {
    let mut ctl = router();
    // A gateway nobody has resolved yet.
    route(&mut ctl, "198.25.0.0/16", &["10.3.0.7"], &[]);
    let mut core = core(&mut ctl);
    let ip = host_ip(5, [198, 25], 64, 64);
    let res = run(&mut core, &vec![from_host(&ip); N], 0);
    // The first packet becomes the ARP request (for the gateway, on its port); the
    // first few are held until it is answered, the others dropped.
    let request = arp_request(BCAST, mac_r(2), a("10.3.0.1"), a("10.3.0.7"));
    assert_eq!(res[0].0, Out::Tx(2));
    assert_eq!(res[0].1, request, "{:02x?}", res[0].1);
    assert!(res[1..].iter().all(|r| r.0 == Out::Drop));
    let held = usize::from(core_cfg().hold_per_neighbor);
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("held", held as u64),
            ("neighbor_hold_full", (N - held) as u64),
            ("arp_requests", 1)
        ])
    );
    assert_eq!(core.holding(), held);
    assert_eq!(core.held_ready(), 0, "nothing resolved yet");

    // The reply is learned (and consumed); the control thread installs it.
    let gw_mac = [2, 0, 0, 0, 7, 7];
    let reply = neighbor_reply(2, gw_mac, "10.3.0.7");
    let res = run(&mut core, &[reply], 2);
    assert_eq!(res[0].0, Out::Drop);
    assert_eq!(ctl.poll(), 1);
    assert_eq!(ctl.neighbors().get(&(3, a("10.3.0.7"))), Some(&gw_mac));
    // The held packets go now, routed once (TTL 63), in order.
    let want = eth(gw_mac, mac_r(2), None, ETH_IP4, &with_ttl(&ip, 63));
    assert_eq!(core.held_ready(), held);
    let res = release(&mut core, held);
    assert_all_tx(&res, 2, |_| want.clone());
    assert_eq!(core.holding(), 0);
    assert_eq!(core.stats().hold_released.get(), held as u64);
    let res = run(&mut core, &vec![from_host(&ip); N], 0);
    assert_all_tx(&res, 2, |_| want.clone());

    // A host on a connected subnet (glean): the request is for the destination.
    let ip = ip4(a("10.1.0.2"), a("10.4.0.9"), 64, 1, 64);
    let res = run(&mut core, &[from_host(&ip)], 0);
    let request = arp_request(BCAST, mac_r(3), a("10.4.0.1"), a("10.4.0.9"));
    assert_eq!(res[0], (Out::Tx(3), request));
}

/// `ip route add P via G dev X onlink` with G on no subnet of X: the router
/// asks for G from X's address and takes the answer (Linux does); a reply from
/// another sender off X's subnets, which nobody asked for, is not learned.
#[test]
fn an_onlink_next_hop_off_the_subnet_resolves() {
    let mut ctl = router();
    ctl.route_add(
        0,
        pfx("198.26.0.0/16"),
        RouteKind::Paths(vec![Path::gateway_on(a("100.64.9.9"), 3)]),
    )
    .unwrap();
    let mut core = core(&mut ctl);
    let ip = host_ip(5, [198, 26], 64, 64);
    let res = run(&mut core, &[from_host(&ip)], 0);
    let request = arp_request(BCAST, mac_r(2), a("10.3.0.1"), a("100.64.9.9"));
    assert_eq!(res[0], (Out::Tx(2), request));
    assert_eq!(core.holding(), 1);
    // Unasked: dropped, not learned.
    let stranger = [2, 0, 0, 0, 9, 8];
    let res = run(&mut core, &[neighbor_reply(2, stranger, "100.64.9.8")], 2);
    assert_eq!(res[0].0, Out::Drop);
    assert_eq!(ctl.poll(), 0);
    assert_eq!(counters(core.stats())["arp_ignored"], 1);
    // Asked: learned, and the held packet goes.
    let gw_mac = [2, 0, 0, 0, 9, 9];
    let res = run(&mut core, &[neighbor_reply(2, gw_mac, "100.64.9.9")], 2);
    assert_eq!(res[0].0, Out::Drop);
    assert_eq!(ctl.poll(), 1);
    assert_eq!(ctl.neighbors().get(&(3, a("100.64.9.9"))), Some(&gw_mac));
    let want = eth(gw_mac, mac_r(2), None, ETH_IP4, &with_ttl(&ip, 63));
    assert_eq!(core.held_ready(), 1);
    let res = release(&mut core, 1);
    assert_all_tx(&res, 2, |_| want.clone());
    let res = run(&mut core, &[from_host(&ip)], 0);
    assert_all_tx(&res, 2, |_| want.clone());
}

/// An IPv4 route via an IPv6 next hop nobody resolved: no ARP goes out (there
/// is no IPv4 address to ask for); the packets are held and the control plane
/// is asked, once, to have it resolved; they go when it is.
#[test]
fn an_unresolved_ipv6_next_hop_holds_and_asks_the_control_plane() {
    let mut ctl = router();
    let gw6: std::net::Ipv6Addr = "fe80::99".parse().unwrap();
    ctl.route_add(
        0,
        pfx("198.27.0.0/16"),
        RouteKind::Paths(vec![Path::gateway6(gw6, 3)]),
    )
    .unwrap();
    let mut core = core(&mut ctl);
    let ip = host_ip(5, [198, 27], 64, 64);
    let res = run(&mut core, &[from_host(&ip), from_host(&ip)], 0);
    assert!(
        res.iter().all(|r| r.0 == Out::Drop),
        "nothing sent: {res:?}"
    );
    assert_eq!(core.holding(), 2);
    assert_eq!(counters(core.stats()), expect(&[("held", 2)]));
    assert_eq!(ctl.poll(), 1, "one request for the two packets");
    assert_eq!(ctl.take_unresolved6(), [(3, gw6)]);
    assert!(ctl.take_unresolved6().is_empty());
    let mac = [2, 0, 0, 0, 6, 6];
    ctl.set_neighbor6(3, gw6, mac).unwrap();
    let want = eth(mac, mac_r(2), None, ETH_IP4, &with_ttl(&ip, 63));
    assert_eq!(core.held_ready(), 2);
    let res = release(&mut core, 2);
    assert_all_tx(&res, 2, |_| want.clone());
}

fn echo(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, typ: u8, seq: u16) -> Vec<u8> {
    let mut p = vec![0u8; 20 + 8 + 32];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&60u16.to_be_bytes());
    p[4..6].copy_from_slice(&seq.wrapping_mul(31).to_be_bytes());
    p[6] = 0x40;
    p[8] = ttl;
    p[9] = 1;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    ip_fix(&mut p);
    p[20] = typ;
    p[24..26].copy_from_slice(&0x4242u16.to_be_bytes());
    p[26..28].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p[28..].iter_mut().enumerate() {
        *b = 0x10 + i as u8;
    }
    let c = wire::checksum::checksum(&p[20..]);
    p[22..24].copy_from_slice(&c.to_be_bytes());
    p
}

#[test]
fn ping_to_the_router_is_answered() {
    let mut ctl = router();
    let mut core = core(&mut ctl);
    for me in ["10.1.0.1", "10.3.0.1"] {
        let frames: Vec<Vec<u8>> = (0..N)
            .map(|i| {
                from_host(&echo(
                    a("10.1.0.2"),
                    a(me),
                    64 - (i % 60) as u8,
                    8,
                    i as u16,
                ))
            })
            .collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 0, |i| {
            let mut r = echo(a(me), a("10.1.0.2"), 64, 0, i as u16);
            // The reply keeps the request's IP id and DF.
            r[4..6].copy_from_slice(&(i as u16).wrapping_mul(31).to_be_bytes());
            ip_fix(&mut r);
            eth(HOST, mac_r(0), None, ETH_IP4, &r)
        });
        for (_, d) in &res {
            assert!(wire::checksum::verify(&d[14..34]));
            assert!(wire::checksum::verify(&d[34..]));
        }
    }
    assert_eq!(
        counters(core.stats()),
        expect(&[("echo_replies", 2 * N as u64)])
    );
    // Other traffic to us goes to the control plane.
    let udp = ip4(a("10.1.0.2"), a("10.1.0.1"), 64, 5, 64);
    let res = run(&mut core, &vec![from_host(&udp); N], 0);
    assert!(res.iter().all(
        |r| matches!(r.0, Out::Punt(dataplane::router::PuntReason::Local, _))
            && r.1 == from_host(&udp)
    ));
}

/// The test router with 198.26/16 unreachable, 198.27/16 prohibit and
/// 198.28/16 blackhole.
fn router_with_reject_routes() -> RouterControl {
    let mut ctl = router();
    for (p, kind) in [
        ("198.26.0.0/16", RouteKind::Unreachable),
        ("198.27.0.0/16", RouteKind::Prohibit),
        ("198.28.0.0/16", RouteKind::Blackhole),
    ] {
        ctl.route_add(0, pfx(p), kind).unwrap();
    }
    ctl
}

#[test]
fn replies_that_meet_a_reject_route_are_dropped_by_its_name() {
    // Echo requests from sources the router's routes reject: no reply and no
    // error (it would be about the router's own packet), as Linux; the drop
    // names the route.
    let mut ctl = router_with_reject_routes();
    let mut core = core(&mut ctl);
    for src in ["198.26.0.5", "198.27.0.5", "198.28.0.5", "203.0.113.5"] {
        let req = from_host(&echo(a(src), a("10.1.0.1"), 60, 8, 1));
        assert!(run(&mut core, &[req], 0).iter().all(|r| r.0 == Out::Drop));
    }
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("echo_replies", 4),
            ("ip4_unreachable", 1),
            ("ip4_prohibit", 1),
            ("ip4_blackhole", 1),
            ("ip4_no_route", 1)
        ])
    );
}

#[test]
fn replies_to_a_source_behind_an_lsp_are_labelled() {
    let mut ctl = router();
    route(&mut ctl, "10.9.0.0/16", &["10.2.0.2"], &[1000]);
    route(&mut ctl, "198.18.0.0/16", &["10.3.0.2"], &[]);
    let mut core = core(&mut ctl);
    // Echo reply to 10.9.0.2, whose route pushes label 1000.
    let req = from_host(&echo(a("10.9.0.2"), a("10.1.0.1"), 60, 8, 1));
    let res = run(&mut core, &vec![req; N], 0);
    let mut reply = echo(a("10.1.0.1"), a("10.9.0.2"), 64, 0, 1);
    reply[4..6].copy_from_slice(&31u16.to_be_bytes());
    ip_fix(&mut reply);
    assert_all_tx(&res, 1, |_| {
        eth(
            mac_n(1),
            mac_r(1),
            None,
            ETH_MPLS,
            &labelled(&[(1000, 64)], &reply),
        )
    });
    // ICMP time exceeded back to it.
    let ip = ip4(a("10.9.0.2"), a("198.18.0.1"), 1, 7, 64);
    let res = run(&mut core, &vec![from_host(&ip); N], 0);
    assert_all_tx(&res, 1, |i| {
        let id = ident(&res[i].1, 18);
        let icmp = icmp_error(a("10.1.0.1"), a("10.9.0.2"), id, 11, 0, 0, &ip);
        eth(
            mac_n(1),
            mac_r(1),
            None,
            ETH_MPLS,
            &labelled(&[(1000, 64)], &icmp),
        )
    });
}

#[test]
fn ping_from_an_unresolved_host_sends_an_arp_request() {
    let mut ctl = router();
    let mut core = core(&mut ctl);
    let req = from_host(&echo(a("10.1.0.3"), a("10.1.0.1"), 64, 8, 1));
    let res = run(&mut core, &[req], 0);
    let want = arp_request(BCAST, mac_r(0), a("10.1.0.1"), a("10.1.0.3"));
    assert_eq!(res[0], (Out::Tx(0), want));
    // The reply was held: it goes once the host answers.
    assert_eq!(core.holding(), 1);
    let mac = [2, 0, 0, 0, 1, 3];
    run(&mut core, &[neighbor_reply(0, mac, "10.1.0.3")], 0);
    assert_eq!(ctl.poll(), 1);
    assert_eq!(core.held_ready(), 1);
    let mut reply = echo(a("10.1.0.1"), a("10.1.0.3"), 64, 0, 1);
    reply[4..6].copy_from_slice(&31u16.to_be_bytes());
    ip_fix(&mut reply);
    assert_eq!(
        release(&mut core, 1),
        vec![(Out::Tx(0), eth(mac, mac_r(0), None, ETH_IP4, &reply))]
    );
    assert_eq!(core.stats().echo_replies.get(), 1);
}

/// The IPv4 id the router put into the ICMP message of `frame` (at `l3`).
fn ident(frame: &[u8], l3: usize) -> u16 {
    u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]])
}

#[test]
fn ttl_expiry_in_ip4_sends_time_exceeded_from_the_ingress_address() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut core = core(&mut ctl);
    let ips: Vec<Vec<u8>> = (0..N)
        .map(|i| host_ip(i, [198, 18], (i % 2) as u8, 40 + i * 4))
        .collect();
    let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
    let res = run(&mut core, &frames, 0);
    let mut ids = std::collections::BTreeSet::new();
    assert_all_tx(&res, 0, |i| {
        let id = ident(&res[i].1, 14);
        ids.insert(id);
        eth(
            HOST,
            mac_r(0),
            None,
            ETH_IP4,
            &icmp_error(a("10.1.0.1"), a("10.1.0.2"), id, 11, 0, 0, &ips[i]),
        )
    });
    assert_eq!(ids.len(), N, "every ICMP message has its own IP id");
    // The longest ones are cut to 576 bytes.
    assert_eq!(res[N - 1].1.len(), 14 + 576);
    assert_eq!(
        counters(core.stats()),
        expect(&[("ip4_ttl_expired", N as u64), ("icmp_errors", N as u64)])
    );
}

#[test]
fn icmp_errors_are_rate_limited() {
    let mut ctl = router();
    // 100 in the bucket, one more per second.
    let mut core = ctl
        .new_core(
            CoreConfig {
                icmp_rate_pps: 1,
                icmp_burst: 100,
                arp_retry_ms: 100,
                ..CoreConfig::default()
            },
            tsc_hz(),
        )
        .0;
    let ip = ip4(a("10.1.0.2"), a("203.0.113.1"), 64, 1, 64);
    let res = run(&mut core, &vec![from_host(&ip); N], 0);
    assert_eq!(res.iter().filter(|r| r.0 == Out::Tx(0)).count(), 100);
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("ip4_no_route", N as u64),
            ("icmp_errors", 100),
            ("icmp_rate_limited", N as u64 - 100)
        ])
    );
}

#[test]
fn ttl_expiry_inside_an_lsp_sends_icmp_with_the_label_stack_along_it() {
    let mut ctl = lsr();
    let mut core = core(&mut ctl);
    let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, [198, 18], 64, 40 + i)).collect();
    for stack in [vec![(100u32, 1u8)], vec![(100, 1), (5000, 9)]] {
        let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host_mpls(&stack, p)).collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 1, |i| {
            // Along the LSP: the received stack with TTL 64, switched (100 -> 200).
            let rx = labelled(&stack, &ips[i]);
            let l3 = 14 + 4 * stack.len();
            let mut icmp = vec![0u8; 512];
            let (len, depth) =
                mpls::build_time_exceeded(&rx, a("10.1.0.1"), ident(&res[i].1, l3), &mut icmp)
                    .unwrap();
            assert_eq!(depth, stack.len());
            let mut out: Vec<(u32, u8)> = vec![(200, 63)];
            out.extend(stack[1..].iter().map(|&(l, _)| (l, 64)));
            let mut l = Vec::new();
            for (k, &(lab, ttl)) in out.iter().enumerate() {
                l.extend_from_slice(&lse(lab, k + 1 == out.len(), ttl));
            }
            l.extend_from_slice(&icmp[..len]);
            eth(mac_n(1), mac_r(1), None, ETH_MPLS, &l)
        });
    }
    // At the penultimate hop the reply leaves as IPv4 (PHP, uniform TTL).
    let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host_mpls(&[(102, 1)], p)).collect();
    let res = run(&mut core, &frames, 0);
    assert_all_tx(&res, 2, |i| {
        let rx = labelled(&[(102, 1)], &ips[i]);
        let mut icmp = vec![0u8; 512];
        let (len, _) =
            mpls::build_time_exceeded(&rx, a("10.1.0.1"), ident(&res[i].1, 14), &mut icmp).unwrap();
        eth(
            mac_n(2),
            mac_r(2),
            None,
            ETH_IP4,
            &with_ttl(&icmp[..len], 63),
        )
    });
    assert_eq!(
        counters(core.stats()),
        expect(&[("icmp_errors", 3 * N as u64)])
    );
}

#[test]
fn mpls_swap_to_an_unresolved_neighbour_sends_an_arp_request() {
    let mut ctl = router();
    let adj = ctl.adjacency(4, a("10.4.0.7")).unwrap();
    ctl.label_add(120, true, LabelAction::swap(adj, &[220]))
        .unwrap();
    let mut core = core(&mut ctl);
    let ip = host_ip(1, [198, 18], 64, 64);
    let f = from_host_mpls(&[(120, 64)], &ip);
    let res = run(&mut core, &vec![f.clone(); N], 0);
    let request = arp_request(BCAST, mac_r(3), a("10.4.0.1"), a("10.4.0.7"));
    assert_eq!(res[0], (Out::Tx(3), request));
    assert!(res[1..].iter().all(|r| r.0 == Out::Drop));
    let held = usize::from(core_cfg().hold_per_neighbor);
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("held", held as u64),
            ("neighbor_hold_full", (N - held) as u64),
            ("arp_requests", 1)
        ])
    );
    let nbr = [2, 0, 0, 0, 4, 7];
    let reply = neighbor_reply(3, nbr, "10.4.0.7");
    assert_eq!(run(&mut core, &[reply], 3)[0].0, Out::Drop);
    assert_eq!(ctl.poll(), 1);
    // The held packets were switched once (label 220, TTL 63).
    let want = eth(nbr, mac_r(3), None, ETH_MPLS, &labelled(&[(220, 63)], &ip));
    assert_eq!(core.held_ready(), held);
    assert_all_tx(&release(&mut core, held), 3, |_| want.clone());
    let res = run(&mut core, &vec![f; N], 0);
    assert_all_tx(&res, 3, |_| want.clone());
}

#[test]
fn packets_held_for_a_connected_host_go_once_it_answers() {
    let mut ctl = router();
    let mut core = core(&mut ctl);
    // 10.4.0.9 is on interface 4's subnet (port 3) and never heard from.
    let ip = ip4(a("10.1.0.2"), a("10.4.0.9"), 64, 1, 64);
    let res = run(&mut core, &vec![from_host(&ip); 3], 0);
    let request = arp_request(BCAST, mac_r(3), a("10.4.0.1"), a("10.4.0.9"));
    assert_eq!(res[0], (Out::Tx(3), request));
    assert_eq!(core.holding(), 3);
    // A FIB change that does not resolve it leaves them waiting.
    route(&mut ctl, "198.25.0.0/16", &["10.2.0.2"], &[]);
    assert_eq!(core.held_ready(), 0);
    let mac = [2, 0, 0, 0, 4, 9];
    assert_eq!(
        run(&mut core, &[neighbor_reply(3, mac, "10.4.0.9")], 3)[0].0,
        Out::Drop
    );
    assert_eq!(ctl.poll(), 1);
    assert_eq!(core.held_ready(), 3);
    let want = eth(mac, mac_r(3), None, ETH_IP4, &with_ttl(&ip, 63));
    assert_all_tx(&release(&mut core, 3), 3, |_| want.clone());
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("held", 3),
            ("hold_released", 3),
            ("arp_requests", 1),
            ("arp_consumed", 1)
        ])
    );
}

#[test]
fn packets_held_for_a_gateway_follow_a_route_change() {
    let mut ctl = router();
    route(&mut ctl, "198.25.0.0/16", &["10.3.0.7"], &[]);
    let mut core = core(&mut ctl);
    let ip = host_ip(5, [198, 25], 64, 64);
    run(&mut core, &vec![from_host(&ip); 2], 0);
    assert_eq!(core.holding(), 2);
    // The route moves to a resolved gateway: they are looked up again and go there.
    route(&mut ctl, "198.25.0.0/16", &["10.2.0.2"], &[]);
    assert_eq!(core.held_ready(), 2);
    let want = eth(mac_n(1), mac_r(1), None, ETH_IP4, &with_ttl(&ip, 63));
    assert_all_tx(&release(&mut core, 2), 1, |_| want.clone());
    // Nothing left to release; a release with no packet ready writes none.
    assert_eq!(core.held_ready(), 0);
    let mut spare = [VecPacket::new(&[], 0)];
    assert_eq!(core.release(&mut spare, &mut [Out::Drop]), 0);
}

#[test]
fn held_packets_that_meet_a_reject_route_get_its_icmp_error() {
    // Held for an unresolved gateway; the route turns unreachable, prohibit or
    // blackhole before the gateway answers: on release each is answered (or
    // dropped) as the new route says, as Linux's queued packets are.
    for (kind, code, reason) in [
        (RouteKind::Unreachable, Some(1u8), "ip4_unreachable"),
        (RouteKind::Prohibit, Some(13), "ip4_prohibit"),
        (RouteKind::Blackhole, None, "ip4_blackhole"),
    ] {
        let mut ctl = router();
        route(&mut ctl, "198.25.0.0/16", &["10.3.0.7"], &[]);
        let mut core = core(&mut ctl);
        let ips: Vec<Vec<u8>> = (0..2).map(|i| host_ip(i, [198, 25], 64, 64)).collect();
        let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
        run(&mut core, &frames, 0);
        assert_eq!(core.holding(), 2);
        ctl.route_add(0, pfx("198.25.0.0/16"), kind.clone())
            .unwrap();
        assert_eq!(core.held_ready(), 2, "{kind:?}");
        let res = release(&mut core, 2);
        match code {
            Some(code) => assert_all_tx(&res, 0, |i| {
                let id = ident(&res[i].1, 14);
                eth(
                    HOST,
                    mac_r(0),
                    None,
                    ETH_IP4,
                    &icmp_error(a("10.1.0.1"), a("10.1.0.2"), id, 3, code, 0, &ips[i]),
                )
            }),
            None => assert!(res.iter().all(|r| r.0 == Out::Drop)),
        }
        let c = counters(core.stats());
        assert_eq!(c.get(reason), Some(&2), "{kind:?}: {c:?}");
    }
}

#[test]
fn held_packets_time_out_and_holding_can_be_off() {
    let mut ctl = router();
    route(&mut ctl, "198.25.0.0/16", &["10.3.0.7"], &[]);
    let ip = host_ip(5, [198, 25], 64, 64);
    let cfg = CoreConfig {
        hold_ms: 0,
        ..core_cfg()
    };
    let mut core = ctl.new_core(cfg, tsc_hz()).0;
    run(&mut core, &vec![from_host(&ip); 2], 0);
    assert_eq!(core.holding(), 2);
    std::thread::sleep(std::time::Duration::from_millis(1));
    assert_eq!(core.held_ready(), 0);
    assert_eq!(core.holding(), 0);
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("held", 2),
            ("neighbor_hold_timeout", 2),
            ("arp_requests", 1)
        ])
    );
    let cfg = CoreConfig {
        hold_per_neighbor: 0,
        ..core_cfg()
    };
    let mut core = ctl.new_core(cfg, tsc_hz()).0;
    run(&mut core, &vec![from_host(&ip); 2], 0);
    assert_eq!(core.holding(), 0);
    assert_eq!(
        counters(core.stats()),
        expect(&[("neighbor_incomplete", 2), ("arp_requests", 1)])
    );
}

#[test]
fn no_route_and_unreachable_routes_send_icmp_unreachable() {
    let mut ctl = router_with_reject_routes();
    let mut core = core(&mut ctl);
    for (net, code) in [([203, 0], 0u8), ([198, 26], 1), ([198, 27], 13)] {
        let ips: Vec<Vec<u8>> = (0..N).map(|i| host_ip(i, net, 64, 64)).collect();
        let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 0, |i| {
            let id = ident(&res[i].1, 14);
            eth(
                HOST,
                mac_r(0),
                None,
                ETH_IP4,
                &icmp_error(a("10.1.0.1"), a("10.1.0.2"), id, 3, code, 0, &ips[i]),
            )
        });
    }
    let ip = host_ip(1, [198, 28], 64, 64);
    let res = run(&mut core, &vec![from_host(&ip); N], 0);
    assert!(res.iter().all(|r| r.0 == Out::Drop));
    let n = N as u64;
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("ip4_no_route", n),
            ("ip4_unreachable", n),
            ("ip4_prohibit", n),
            ("ip4_blackhole", n),
            ("icmp_errors", 3 * n)
        ])
    );
    assert_eq!(core.stats().ifaces[1].drops.get(), 4 * n);
}

#[test]
fn mtu_exceeded_with_df_sends_frag_needed_with_the_next_hop_mtu() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    route(&mut ctl, "198.19.0.0/16", &["10.2.0.2"], &[1000]);
    route(&mut ctl, "198.20.0.0/16", &["10.2.0.2"], &[1000, 2000]);
    ctl.set_mtu(2, 1000).unwrap();
    let mut core = core(&mut ctl);
    let df = |mut p: Vec<u8>| {
        p[6] |= 0x40;
        ip_fix(&mut p);
        p
    };
    // (plain, one label, two labels: each its own send in the fast path)
    for (net, mtu) in [([198, 18], 1000u16), ([198, 19], 996), ([198, 20], 992)] {
        let ips: Vec<Vec<u8>> = (0..N)
            .map(|i| df(host_ip(i, net, 64, usize::from(mtu) + 1 + i)))
            .collect();
        let frames: Vec<Vec<u8>> = ips.iter().map(|p| from_host(p)).collect();
        let res = run(&mut core, &frames, 0);
        assert_all_tx(&res, 0, |i| {
            let id = ident(&res[i].1, 14);
            eth(
                HOST,
                mac_r(0),
                None,
                ETH_IP4,
                &icmp_error(a("10.1.0.1"), a("10.1.0.2"), id, 3, 4, mtu, &ips[i]),
            )
        });
        // Exactly the MTU passes.
        let ip = df(host_ip(1, net, 64, usize::from(mtu)));
        let res = run(&mut core, &vec![from_host(&ip); N], 0);
        assert!(res.iter().all(|r| r.0 == Out::Tx(1)));
    }
    // DF clear: no fragmentation here, dropped.
    let ip = host_ip(1, [198, 18], 64, 1001);
    let res = run(&mut core, &vec![from_host(&ip); N], 0);
    assert!(res.iter().all(|r| r.0 == Out::Drop));
    let n = N as u64;
    assert_eq!(
        counters(core.stats()),
        expect(&[
            ("ip4_mtu_exceeded", 3 * n),
            ("ip4_fragmentation_needed", n),
            ("icmp_errors", 3 * n)
        ])
    );
}

#[test]
fn traced_drops_name_their_reason() {
    let mut ctl = router();
    let mut core = core(&mut ctl);
    let mut ip = host_ip(1, [198, 18], 64, 64);
    ip[10] ^= 1;
    let mpls = from_host_mpls(&[(5000, 64)], &ip);
    ctl.trace_add(2);
    let res = run(&mut core, &[from_host(&ip), mpls], 0);
    assert!(res.iter().all(|r| r.0 == Out::Drop));
    let recs = ctl.trace_records();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].1.decision, "drop ip4_bad_checksum");
    assert_eq!(recs[1].1.decision, "drop mpls_no_label");
}

/// One malformed frame: what it is, the frame, the port, the counter it must bump.
struct Bad {
    what: &'static str,
    frame: Vec<u8>,
    port: u16,
    counter: &'static str,
}

fn corpus() -> Vec<Bad> {
    let ip = host_ip(1, [198, 18], 64, 64);
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut p = ip.clone();
        f(&mut p);
        p
    };
    let fixed = |f: &dyn Fn(&mut Vec<u8>)| {
        with(&|p| {
            f(p);
            ip_fix(p)
        })
    };
    let ip4f = |p: Vec<u8>| from_host(&p);
    let mplsf = |stack: &[(u32, u8)], payload: &[u8]| from_host_mpls(stack, payload);
    let mut deep = Vec::new();
    for _ in 0..20 {
        deep.extend_from_slice(&lse(0, false, 64));
    }
    let last = deep.len() - 4;
    deep[last..].copy_from_slice(&lse(0, true, 64));
    deep.extend_from_slice(&ip);
    let mut v = vec![
        Bad {
            what: "10-byte frame",
            frame: vec![0xff; 10],
            port: 0,
            counter: "eth_truncated",
        },
        Bad {
            what: "VLAN tag cut short",
            frame: eth(mac_r(0), HOST, None, 0x8100, &[0]),
            port: 0,
            counter: "eth_truncated",
        },
        Bad {
            what: "someone else's MAC",
            frame: eth([2, 9, 9, 9, 9, 9], HOST, None, ETH_IP4, &ip),
            port: 0,
            counter: "not_our_mac",
        },
        Bad {
            what: "VLAN without sub-interface",
            frame: eth(mac_r(0), HOST, Some(300), ETH_IP4, &ip),
            port: 0,
            counter: "unknown_vlan",
        },
        Bad {
            what: "port without interface",
            frame: from_host(&ip),
            port: 7,
            counter: "interface_down",
        },
        Bad {
            what: "IPv6 payload length past the frame",
            frame: eth(mac_r(0), HOST, None, 0x86dd, &[0x60; 40]),
            port: 0,
            counter: "ip6_bad_length",
        },
        Bad {
            what: "IPv6 header cut at 39 bytes",
            frame: eth(mac_r(0), HOST, None, 0x86dd, &[0x60; 39]),
            port: 0,
            counter: "ip6_truncated",
        },
        Bad {
            what: "IPv4 under the IPv6 EtherType",
            frame: eth(mac_r(0), HOST, None, 0x86dd, &ip),
            port: 0,
            counter: "ip6_bad_version",
        },
        Bad {
            what: "LLDP",
            frame: eth(mac_r(0), HOST, None, 0x88cc, &[0; 46]),
            port: 0,
            counter: "unknown_ethertype",
        },
        Bad {
            what: "IPv4 header cut at 10 bytes",
            frame: ip4f(ip[..10].to_vec()),
            port: 0,
            counter: "ip4_truncated",
        },
        Bad {
            what: "IHL 15 in a 24-byte packet",
            frame: ip4f(with(&|p| {
                p[0] = 0x4f;
                p.truncate(24);
                p[2..4].copy_from_slice(&24u16.to_be_bytes());
            })),
            port: 0,
            counter: "ip4_truncated",
        },
        Bad {
            what: "version 6 in an IPv4 frame",
            frame: ip4f(fixed(&|p| p[0] = 0x65)),
            port: 0,
            counter: "ip4_bad_version",
        },
        Bad {
            what: "IHL 4",
            frame: ip4f(with(&|p| p[0] = 0x44)),
            port: 0,
            counter: "ip4_bad_ihl",
        },
        Bad {
            what: "total length beyond the frame",
            frame: ip4f(fixed(&|p| p[2..4].copy_from_slice(&65u16.to_be_bytes()))),
            port: 0,
            counter: "ip4_bad_length",
        },
        Bad {
            what: "total length inside the header",
            frame: ip4f(fixed(&|p| p[2..4].copy_from_slice(&19u16.to_be_bytes()))),
            port: 0,
            counter: "ip4_bad_length",
        },
        Bad {
            what: "bad header checksum",
            frame: ip4f(with(&|p| p[10] ^= 0x40)),
            port: 0,
            counter: "ip4_bad_checksum",
        },
        Bad {
            what: "loopback source",
            frame: ip4f(fixed(&|p| p[12] = 127)),
            port: 0,
            counter: "ip4_martian",
        },
        Bad {
            what: "multicast destination",
            frame: ip4f(fixed(&|p| p[16] = 239)),
            port: 0,
            counter: "ip4_multicast",
        },
        Bad {
            what: "label stack cut short",
            frame: eth(mac_r(0), HOST, None, ETH_MPLS, &[0, 0x64]),
            port: 0,
            counter: "mpls_truncated",
        },
        Bad {
            what: "explicit null over a cut IPv4 header",
            frame: mplsf(&[(0, 64)], &ip[..12]),
            port: 0,
            counter: "mpls_truncated",
        },
        Bad {
            what: "explicit null over something not IP",
            frame: mplsf(&[(0, 64)], &[0x10; 40]),
            port: 0,
            counter: "mpls_not_ip",
        },
        Bad {
            what: "IPv6 explicit null over something not IP",
            frame: mplsf(&[(2, 64)], &[0x50; 40]),
            port: 0,
            counter: "mpls_not_ip",
        },
        Bad {
            what: "IPv4 explicit null over IPv6",
            frame: mplsf(&[(0, 64)], &host_ip6(1, 0x18, 64, 64)),
            port: 0,
            counter: "mpls_ip6_under_ip4_label",
        },
        Bad {
            what: "pop into IPv4 over IPv6",
            frame: mplsf(&[(300, 64)], &host_ip6(1, 0x18, 64, 64)),
            port: 0,
            counter: "mpls_ip6_under_ip4_label",
        },
        Bad {
            what: "IPv6 explicit null over IPv4",
            frame: mplsf(&[(2, 64)], &ip),
            port: 0,
            counter: "mpls_ip4_under_ip6_label",
        },
        Bad {
            what: "IPv6 explicit null over a cut IPv6 header",
            frame: mplsf(&[(2, 64)], &host_ip6(1, 0x18, 64, 64)[..30]),
            port: 0,
            counter: "mpls_truncated",
        },
        Bad {
            what: "IPv6 explicit null not at the bottom over IPv4",
            frame: eth(
                mac_r(0),
                HOST,
                None,
                ETH_MPLS,
                &[&lse(2, false, 64)[..], &ip].concat(),
            ),
            port: 0,
            counter: "mpls_no_label",
        },
        Bad {
            what: "implicit null on the wire",
            frame: mplsf(&[(3, 64)], &ip),
            port: 0,
            counter: "mpls_implicit_null_on_wire",
        },
        Bad {
            what: "stack of 20 entries",
            frame: eth(mac_r(0), HOST, None, ETH_MPLS, &deep),
            port: 0,
            counter: "mpls_stack_too_deep",
        },
        Bad {
            what: "unknown label",
            frame: mplsf(&[(5000, 64)], &ip),
            port: 0,
            counter: "mpls_no_label",
        },
        Bad {
            what: "unassigned reserved label",
            frame: mplsf(&[(4, 64)], &ip),
            port: 0,
            counter: "mpls_reserved_label",
        },
        Bad {
            what: "label TTL 0",
            frame: mplsf(&[(100, 0)], &ip),
            port: 0,
            counter: "mpls_ttl_expired",
        },
        Bad {
            what: "ARP for another hardware type",
            frame: eth(BCAST, HOST, None, ETH_ARP, &[6u8; 28]),
            port: 0,
            counter: "arp_ignored",
        },
        Bad {
            what: "ARP cut short",
            frame: eth(
                BCAST,
                HOST,
                None,
                ETH_ARP,
                &arp(1, HOST, a("10.1.0.2"), [0; 6], a("10.1.0.1"))[..20],
            ),
            port: 0,
            counter: "arp_ignored",
        },
    ];
    // IPv4 TTL 0: expired (and answered, like TTL 1).
    v.push(Bad {
        what: "IPv4 TTL 0",
        frame: ip4f(fixed(&|p| p[8] = 0)),
        port: 0,
        counter: "ip4_ttl_expired",
    });
    v
}

#[test]
fn malformed_frames_are_dropped_each_with_its_own_counter() {
    let mut ctl = lsr();
    for bad in corpus() {
        let mut core = core(&mut ctl);
        let res = run(&mut core, &vec![bad.frame.clone(); N], bad.port);
        let n = N as u64;
        let mut want = vec![(bad.counter, n)];
        if bad.counter == "ip4_ttl_expired" {
            want.push(("icmp_errors", n));
            assert!(res.iter().all(|r| r.0 == Out::Tx(0)), "{}", bad.what);
        } else {
            assert!(
                res.iter().all(|r| r.0 == Out::Drop),
                "{}: {:?}",
                bad.what,
                res[0].0
            );
        }
        let s = core.stats();
        assert_eq!(counters(s), expect(&want), "{}", bad.what);
        // Dropped packets count against the interface they came in on, if any.
        if bad.port == 0 && !matches!(bad.counter, "eth_truncated" | "unknown_vlan") {
            assert_eq!(s.ifaces[1].rx_pkts.get(), n, "{}", bad.what);
            assert_eq!(s.ifaces[1].drops.get(), n, "{}", bad.what);
        }
    }
}

fn fuzz_router() -> RouterControl {
    fuzz_router_on(PORTS)
}

/// A frame that gets past the Ethernet stage more often than random bytes do.
fn frame_strategy() -> impl Strategy<Value = (Vec<u8>, u16)> {
    let head = prop_oneof![
        Just(eth(mac_r(0), HOST, None, ETH_IP4, &[])),
        Just(eth(mac_r(0), HOST, None, ETH_MPLS, &[])),
        Just(eth(BCAST, HOST, None, ETH_ARP, &[])),
        Just(eth(mac_r(0), HOST, Some(100), ETH_IP4, &[])),
        Just(Vec::new()),
    ];
    let body = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120),
        // A valid packet with a few bytes changed.
        (
            0usize..4,
            prop::collection::vec((0usize..80, any::<u8>()), 0..4),
            1usize..600
        )
            .prop_map(|(k, edits, len)| {
                let ip = host_ip(len, [198, 18 + k as u8], (len % 3) as u8 + 1, 28 + len);
                let mut p = match k {
                    0 => ip,
                    1 => labelled(&[(100, (len % 3) as u8)], &ip),
                    2 => labelled(&[(300, 64), (0, 1)], &ip),
                    _ => labelled(&[(0, 64), (102, 2)], &ip),
                };
                for (at, b) in edits {
                    if let Some(x) = p.get_mut(at) {
                        *x = b;
                    }
                }
                p
            }),
    ];
    (head, body, 0u16..8).prop_map(|(mut h, b, port)| {
        h.extend_from_slice(&b);
        (h, port)
    })
}

/// Random and mutated frames through one core (built once: a router with a 2^21-entry
/// label table is too slow to build per case in a debug build): never a panic, and
/// whatever is sent is a whole Ethernet frame on a port that exists.
#[test]
fn random_bytes_never_panic() {
    let mut ctl = fuzz_router();
    let core = std::cell::RefCell::new(core(&mut ctl));
    let ctl = std::cell::RefCell::new(ctl);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(2048));
    runner
        .run(&prop::collection::vec(frame_strategy(), 1..40), |frames| {
            let mut pkts: Vec<VecPacket> =
                frames.iter().map(|(f, p)| VecPacket::new(f, *p)).collect();
            let mut out = vec![Out::Drop; pkts.len()];
            core.borrow_mut().process(&mut pkts, &mut out);
            for (o, p) in out.iter().zip(&pkts) {
                if let Out::Tx(port) = o {
                    prop_assert!(*port < 8);
                    prop_assert!(p.data().len() >= 14);
                }
            }
            let _ = ctl.borrow_mut().poll();
            Ok(())
        })
        .unwrap();
}

#[test]
fn route_and_label_changes_while_traffic_flows_drop_nothing_valid() {
    let mut ctl = lsr();
    route(&mut ctl, "198.19.0.0/16", &["10.2.0.2"], &[]);
    let adj1 = ctl.adjacency(2, a("10.2.0.2")).unwrap();
    let adj2 = ctl.adjacency(3, a("10.3.0.2")).unwrap();
    let mut core = core(&mut ctl);
    let stop = Arc::new(AtomicBool::new(false));

    // Traffic that has a route (and a label entry) before, during and after.
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for i in 0..BURST {
        let f = match i % 4 {
            0 => from_host(&host_ip(i, [198, 18], 64, 64)),
            1 => from_host(&host_ip(i, [198, 19], 64, 64)),
            2 => from_host_mpls(&[(100, 64)], &host_ip(i, [198, 18], 64, 64)),
            _ => from_host_mpls(&[(300, 64)], &host_ip(i, [198, 19], 64, 64)),
        };
        frames.push(f);
    }
    let worker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut pkts: Vec<VecPacket> = frames.iter().map(|f| VecPacket::new(f, 0)).collect();
            let mut out = vec![Out::Drop; BURST];
            let mut vectors = 0u64;
            while !stop.load(Ordering::Relaxed) || vectors < 100 {
                for (p, f) in pkts.iter_mut().zip(&frames) {
                    p.reset(f);
                }
                core.process(&mut pkts, &mut out);
                for (i, o) in out.iter().enumerate() {
                    assert!(
                        matches!(o, Out::Tx(1) | Out::Tx(2)),
                        "vector {vectors}, packet {i}: {o:?}"
                    );
                }
                vectors += 1;
            }
            (vectors, core)
        })
    };

    // The control thread: more-specific routes come and go inside the prefixes in
    // use, the prefix 198.19/16 and the label 100 move between two next hops, and
    // unrelated routes and labels churn.
    let t0 = Instant::now();
    let mut k = 0u32;
    while t0.elapsed() < Duration::from_secs(2) {
        let sub = pfx(&format!("198.18.{}.0/24", k % 256));
        let via = if k % 2 == 0 { "10.2.0.2" } else { "10.3.0.2" };
        ctl.route_add(0, sub, RouteKind::Paths(vec![Path::gateway(a(via))]))
            .unwrap();
        route(&mut ctl, "198.19.0.0/16", &[via], &[]);
        let adj = if k % 2 == 0 { adj1 } else { adj2 };
        ctl.label_add(100, true, LabelAction::swap(adj, &[200 + k % 7]))
            .unwrap();
        let other = pfx(&format!("100.{}.{}.0/24", k % 200, (k / 200) % 256));
        ctl.route_add(
            0,
            other,
            RouteKind::Paths(vec![Path::gateway(a("10.4.0.2"))]),
        )
        .unwrap();
        ctl.label_add(1000 + k % 500, true, LabelAction::swap(adj, &[42]))
            .unwrap();
        if k >= 100 {
            let j = k - 100;
            let old = pfx(&format!("100.{}.{}.0/24", j % 200, (j / 200) % 256));
            ctl.route_del(0, old).unwrap();
            let _ = ctl.label_del(1000 + j % 500, true);
        }
        if k % 3 == 0 {
            ctl.route_del(0, sub).unwrap();
        }
        k += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let (vectors, core) = worker.join().unwrap();
    assert!(vectors >= 100 && k > 100, "vectors {vectors}, updates {k}");
    assert_eq!(counters(core.stats()), expect(&[]));
}

/// The fast path changes no packet's fate: random vectors through a core with it
/// and a core without give the same output, byte for byte, and the same counters.
#[test]
fn fast_path_matches_general_path() {
    let mut ctl = fuzz_router();
    route(&mut ctl, "198.26.0.0/16", &["10.200.0.2"], &[]);
    route(
        &mut ctl,
        "198.27.0.0/16",
        &["10.2.0.2"],
        &[1001, 1002, 1003, 1004, 1005],
    );
    route(&mut ctl, "198.28.0.0/16", &["10.3.0.2"], &[3]);
    // Implicit null inside a stack (as recursion through an LDP route to a
    // neighbour concatenates it), and as many labels as the fast path pushes.
    route(&mut ctl, "198.29.0.0/16", &["10.3.0.2"], &[3, 1007]);
    route(&mut ctl, "198.30.0.0/16", &["10.2.0.2"], &[1008, 3, 1009]);
    route(
        &mut ctl,
        "198.31.0.0/16",
        &["10.2.0.2"],
        &[2001, 2002, 2003, 2004],
    );
    // ECMP with labelled legs, one of them to an unresolved neighbour (the fast
    // path's leg cache against the general path's decode per packet).
    route(
        &mut ctl,
        "198.22.0.0/16",
        &["10.2.0.2", "10.3.0.2", "10.3.0.7"],
        &[3001],
    );
    let unresolved = ctl.adjacency(3, a("10.3.0.7")).unwrap();
    ctl.label_add(120, true, LabelAction::swap(unresolved, &[220]))
        .unwrap();
    // No limits that depend on when each core runs.
    let cfg = |fast_path| CoreConfig {
        icmp_rate_pps: 1000,
        icmp_burst: u32::MAX,
        arp_retry_ms: 0,
        fast_path,
        // (some frames carry a checksum verdict: read them on every port)
        nic_csum_ports: u64::MAX,
        ..CoreConfig::default()
    };
    let fast = std::cell::RefCell::new(ctl.new_core(cfg(true), tsc_hz()).0);
    let general = std::cell::RefCell::new(ctl.new_core(cfg(false), tsc_hz()).0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(256));
    // Every other case is traced; the others run the fast path as it runs with
    // nothing to note (its inline lanes).
    let case = std::cell::Cell::new(0u32);
    runner
        .run(&prop::collection::vec(diff_frame(), 1..300), |frames| {
            let traced = case.get() % 2 == 0;
            case.set(case.get() + 1);
            // The first packets of each core are traced: same stages, same decisions.
            if traced {
                ctl.trace_add(48);
            }
            let mut res = Vec::new();
            for core in [&fast, &general] {
                let mut got = Vec::new();
                for (c, chunk) in frames.chunks(BURST).enumerate() {
                    // (some frames carry a NIC's checksum verdict, right or wrong)
                    let csum = |i: usize| match (c * BURST + i) % 13 {
                        0..=2 => RxCsum::Good,
                        3 => RxCsum::Bad,
                        _ => RxCsum::Unknown,
                    };
                    let mut pkts: Vec<VecPacket> = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, (f, p))| VecPacket::new(f, DIFF_PORTS[*p]).with_rx_csum(csum(i)))
                        .collect();
                    let mut out = vec![Out::Drop; chunk.len()];
                    core.borrow_mut().process(&mut pkts, &mut out);
                    got.extend(out.iter().zip(&pkts).map(|(o, p)| (*o, p.data().to_vec())));
                }
                res.push(got);
            }
            for (i, (f, g)) in res[0].iter().zip(&res[1]).enumerate() {
                prop_assert_eq!(f, g, "packet {}: {:02x?}", i, &frames[i]);
            }
            let recs = ctl.trace_records();
            ctl.trace_clear();
            let of = |w: usize| -> Vec<_> {
                recs.iter()
                    .filter(|(k, _)| *k == w)
                    .map(|(_, r)| {
                        let r = dataplane::router::TraceRecord {
                            tsc: 0,
                            ..r.clone()
                        };
                        format!("{r:?}")
                    })
                    .collect()
            };
            let (tf, tg) = (of(0), of(1));
            let want = if traced { frames.len().min(48) } else { 0 };
            prop_assert_eq!(tf.len(), want);
            prop_assert_eq!(tf, tg);
            Ok(())
        })
        .unwrap();
    let (f, g) = (fast.borrow(), general.borrow());
    let (fs, gs) = (f.stats(), g.stats());
    assert_eq!(counters(fs), counters(gs));
    for s in Stage::ALL {
        assert_eq!(stage(&f, s), stage(&g, s), "{}", s.name());
    }
    for (x, y) in fs.ifaces.iter().zip(gs.ifaces.iter()) {
        let c = |i: &dataplane::router::IfaceCounters| {
            [
                i.rx_pkts.get(),
                i.rx_bytes.get(),
                i.tx_pkts.get(),
                i.tx_bytes.get(),
                i.drops.get(),
            ]
        };
        assert_eq!(c(x), c(y));
    }
    // The case mix reaches the fast path, and leaves it.
    assert!(fs.ifaces[2].tx_pkts.get() > 1000, "{:?}", counters(fs));
    assert!(stage(&f, Stage::MplsLookup).1 > 1000);
    assert!(counters(fs).len() > 8, "{:?}", counters(fs));
}

/// Runs of swaps out of one adjacency (the fast path sends those after the first
/// in a loop of their own) broken by every case that must end such a run: another
/// label to the same neighbour, one over the MTU, TTL 1, another port, another
/// neighbour (unresolved), a PHP, a label not at the bottom; and runs of PHPs, of
/// pops into IPv4 and IPv6, and of IPv6 forwards and pushes likewise. Every
/// packet leaves as the general path sends it, counters alike.
#[test]
fn fast_path_runs_of_swaps_and_pops() {
    let mut ctl = fuzz_router();
    let unresolved = ctl.adjacency(3, a("10.3.0.7")).unwrap();
    ctl.label_add(120, true, LabelAction::swap(unresolved, &[220]))
        .unwrap();
    let cfg = |fast_path| CoreConfig {
        icmp_rate_pps: 1000,
        icmp_burst: u32::MAX,
        arp_retry_ms: 0,
        fast_path,
        ..CoreConfig::default()
    };
    let mut fast = ctl.new_core(cfg(true), tsc_hz()).0;
    let mut general = ctl.new_core(cfg(false), tsc_hz()).0;
    let one_label = |label: u32, ttl: u8, len: usize| {
        from_host_mpls(&[(label, ttl)], &host_ip(len, [198, 18], 64, len))
    };
    let mut frames: Vec<(Vec<u8>, u16)> = vec![
        (one_label(100, 64, 100), 0),
        (one_label(100, 64, 200), 0),
        (one_label(110, 9, 60), 0),
        // (over the MTU of 1500: ICMP, or dropped)
        (one_label(100, 64, 1560), 0),
        (one_label(100, 64, 100), 0),
        (one_label(100, 1, 100), 0),
        (one_label(101, 64, 100), 0),
        (one_label(100, 64, 100), 1),
        (one_label(100, 64, 100), 0),
        (one_label(120, 64, 100), 0),
        (one_label(100, 64, 100), 0),
        (one_label(102, 64, 100), 0),
        (one_label(100, 64, 100), 0),
        (
            from_host_mpls(&[(100, 64), (300, 64)], &host_ip(1, [198, 18], 64, 80)),
            0,
        ),
        (one_label(100, 64, 1499), 0),
        (one_label(100, 64, 1496), 0),
    ];
    // Runs of PHPs out of one adjacency (the same loop), broken by an IPv6 or
    // truncated packet under the label (dropped by the general switch), TTL 1, a
    // swap, and mixed with swaps to the neighbour of another port.
    let mut not_ip4 = one_label(102, 64, 100);
    not_ip4[18] = 0x65;
    let mut short = one_label(102, 64, 100);
    short.truncate(30);
    frames.extend([
        (one_label(102, 64, 100), 0),
        (one_label(102, 64, 101), 0),
        (not_ip4, 0),
        (one_label(102, 64, 102), 0),
        (one_label(102, 1, 103), 0),
        (one_label(102, 64, 104), 0),
        (one_label(102, 64, 1560), 0),
        (one_label(102, 64, 105), 0),
        (short, 0),
        (one_label(102, 64, 106), 0),
        (one_label(100, 64, 107), 0),
        (one_label(102, 64, 108), 0),
    ]);
    // Runs of pops into IPv4 (the same label's pops that follow one go through a
    // loop of their own too) broken likewise: a bad inner header (the frame has
    // changed: the general IPv4 stage), options or IPv6 or nothing under the label,
    // TTL 0, another label popping into the same table (explicit null) or into a
    // VRF, the entry that is not at the bottom.
    let mut bad_inner = one_label(300, 64, 90);
    bad_inner[18 + 10] ^= 0x5a;
    let mut options = one_label(300, 64, 90);
    options[18] = 0x46;
    let mut ip6_inner = one_label(300, 64, 90);
    ip6_inner[18] = 0x65;
    let mut cut = one_label(300, 64, 90);
    cut.truncate(36);
    frames.extend([
        (one_label(300, 64, 100), 0),
        (one_label(300, 64, 101), 0),
        (bad_inner, 0),
        (one_label(300, 64, 102), 0),
        (options, 0),
        (one_label(300, 64, 102), 0),
        (ip6_inner, 0),
        (one_label(300, 64, 102), 0),
        (cut, 0),
        (one_label(300, 64, 102), 0),
        (one_label(300, 0, 103), 0),
        (one_label(300, 2, 104), 0),
        (one_label(0, 64, 105), 0),
        (one_label(0, 64, 106), 0),
        (one_label(300, 64, 107), 0),
        (one_label(301, 64, 108), 0),
        (one_label(300, 64, 109), 0),
        (one_label(300, 64, 110), 1),
        (one_label(300, 64, 111), 0),
        (
            from_host_mpls(&[(300, 64), (300, 64)], &host_ip(2, [198, 18], 64, 80)),
            0,
        ),
        (one_label(300, 64, 112), 0),
    ]);
    // Pops inside a run that the forward walk hands back (an unresolved
    // neighbour, over the MTU, the router's own address): the general path takes
    // each as it came in.
    let popped = |ip: Vec<u8>| from_host_mpls(&[(300, 64)], &ip);
    frames.extend([
        (one_label(300, 64, 113), 0),
        (popped(host_ip(5, [198, 25], 64, 100)), 0),
        (one_label(300, 64, 114), 0),
        (one_label(300, 64, 1560), 0),
        (one_label(300, 64, 115), 0),
        (popped(ip4(a("10.1.0.2"), a("10.1.0.1"), 64, 7, 60)), 0),
        (one_label(300, 64, 116), 0),
    ]);
    // Runs of pops into IPv6 (label 303: the global table; 304: a VRF, the
    // general path's; 2 at the bottom: explicit null) broken by a hop limit
    // the pop leaves at 1 (TTL 1: uniform), a payload of the other version, a
    // payload length past or short of the frame, a link-local destination, an
    // unresolved next hop and the router's own address, each as the general
    // path takes it.
    let six = |label: u32, ttl: u8, ip: Vec<u8>| from_host_mpls(&[(label, ttl)], &ip);
    let plain6 = |j: usize| host_ip6(j, 0x18, 64, 100);
    let mut v4_under = six(303, 64, plain6(1));
    v4_under[18] = 0x45;
    let mut long6 = six(303, 64, plain6(2));
    long6[18 + 5] = 0xff;
    let mut short6 = six(303, 64, plain6(3));
    short6.truncate(18 + 50);
    let mut ll6 = six(303, 64, plain6(4));
    ll6[18 + 24..18 + 26].copy_from_slice(&[0xfe, 0x80]);
    let mut own6 = six(303, 64, plain6(5));
    own6[18 + 24..18 + 40].copy_from_slice(&v6("2001:db8:2::1").octets());
    frames.extend([
        (six(303, 64, plain6(10)), 0),
        (six(303, 64, plain6(11)), 0),
        (six(303, 1, plain6(12)), 0),
        (six(303, 64, plain6(13)), 0),
        (v4_under, 0),
        (six(303, 64, plain6(14)), 0),
        (long6, 0),
        (six(303, 64, plain6(15)), 0),
        (short6, 0),
        (six(303, 64, plain6(16)), 0),
        (ll6, 0),
        (six(303, 64, plain6(17)), 0),
        (six(303, 64, host_ip6(18, 0x25, 64, 100)), 0),
        (six(303, 64, plain6(19)), 0),
        (own6, 0),
        (six(303, 64, plain6(20)), 0),
        (six(304, 64, plain6(21)), 0),
        (six(303, 64, plain6(22)), 0),
        (six(2, 64, plain6(23)), 0),
        (six(2, 64, plain6(24)), 0),
        (six(303, 64, plain6(25)), 1),
        (six(303, 64, plain6(26)), 0),
        (six(303, 64, host_ip6(27, 0x19, 64, 100)), 0),
        (six(303, 64, plain6(28)), 0),
    ]);
    // Runs of plain IPv6 forwards out of one adjacency (2001:db8:18::/48) and of
    // pushes (a labelled route, 6PE's two labels), each broken by a frame over
    // the MTU (packet too big), a hop limit of 1, another port, an unresolved
    // next hop, ECMP, a blackhole, no route: the forward walk sends the run's
    // others in a loop of their own and hands those back.
    let ip6_frame = |net: u16, j: usize, hl: u8, len: usize| {
        eth(mac_r(0), HOST, None, 0x86dd, &host_ip6(j, net, hl, len))
    };
    for net in [0x18, 0x19, 0x27] {
        frames.extend([
            (ip6_frame(net, 1, 64, 100), 0),
            (ip6_frame(net, 2, 64, 200), 0),
            (ip6_frame(net, 3, 64, 1560), 0),
            (ip6_frame(net, 4, 64, 100), 0),
            (ip6_frame(net, 5, 1, 100), 0),
            (ip6_frame(net, 6, 64, 100), 0),
            (ip6_frame(net, 7, 64, 100), 1),
            (ip6_frame(net, 8, 64, 100), 0),
            (ip6_frame(0x25, 9, 64, 100), 0),
            (ip6_frame(net, 10, 64, 100), 0),
            (ip6_frame(net, 11, 64, 1492), 0),
            (ip6_frame(net, 12, 64, 100), 0),
            (ip6_frame(0x21, 13, 64, 100), 0),
            (ip6_frame(net, 14, 64, 100), 0),
            (ip6_frame(0x26, 15, 64, 100), 0),
            (ip6_frame(net, 16, 64, 100), 0),
            (ip6_frame(0x99, 17, 64, 100), 0),
            (ip6_frame(net, 18, 64, 100), 0),
            (ip6_frame(net, 19, 64, 100), 0),
        ]);
    }
    // (a long run to end the vector)
    frames.extend((0..40).map(|j| (one_label(100, 64, 60 + j), 0)));
    let mut res = Vec::new();
    for core in [&mut fast, &mut general] {
        let mut pkts: Vec<VecPacket> = frames.iter().map(|(f, p)| VecPacket::new(f, *p)).collect();
        let mut out = vec![Out::Drop; frames.len()];
        core.process(&mut pkts, &mut out);
        res.push((
            out,
            pkts.iter().map(|p| p.data().to_vec()).collect::<Vec<_>>(),
        ));
    }
    for (j, (f, g)) in res[0].0.iter().zip(&res[1].0).enumerate() {
        assert_eq!((f, &res[0].1[j]), (g, &res[1].1[j]), "packet {j}");
    }
    assert_eq!(counters(fast.stats()), counters(general.stats()));
    for s in Stage::ALL {
        assert_eq!(stage(&fast, s), stage(&general, s), "{}", s.name());
    }
    for (x, y) in fast
        .stats()
        .ifaces
        .iter()
        .zip(general.stats().ifaces.iter())
    {
        let c = |i: &dataplane::router::IfaceCounters| {
            [
                i.rx_pkts.get(),
                i.rx_bytes.get(),
                i.tx_pkts.get(),
                i.tx_bytes.get(),
                i.drops.get(),
            ]
        };
        assert_eq!(c(x), c(y));
    }
    // (the run's swaps left with the new label)
    let (out, data) = &res[0];
    assert_eq!(out[1], Out::Tx(1));
    assert_eq!(
        u32::from_be_bytes([data[1][14], data[1][15], data[1][16], data[1][17]]) >> 12,
        200
    );
    assert_ne!(out[3], Out::Tx(1));
    assert_eq!(out[4], Out::Tx(1));
    assert_eq!(out[frames.len() - 1], Out::Tx(1));
}

/// More adjacencies in one vector than the per-vector caches hold: the fast path's
/// decoded results name adjacency cache slots that other adjacencies take over
/// mid-vector. Every packet still leaves through its own neighbour, with its own
/// labels, as the general path sends it.
#[test]
fn fast_path_with_more_adjacencies_than_cache_slots() {
    // Neighbours in an order that makes slots change hands again and again, with
    // runs that reuse one.
    more_adjacencies_than_cache_slots(|j| ((j * 7 + j / 5) % 40) as u8);
    // Runs of consecutive packets to one neighbour (the forward walk keeps the
    // last result's decoding), slots changing hands between the runs.
    more_adjacencies_than_cache_slots(|j| ((j / 3 * 7 + j / 11) % 40) as u8);
}

fn more_adjacencies_than_cache_slots(order: impl Fn(usize) -> u8) {
    let mut ctl = lsr();
    let nbr = |k: u8| Ipv4Addr::new(10, 2, 0, 10 + k);
    let mac = |k: u8| [0x02, 0, 0, 0x77, 0, k];
    // Adjacency ids in another order than the routes' results, so that the two
    // caches' slots do not change hands together.
    for k in 0..40u8 {
        let k = ((u32::from(k) * 17) % 40) as u8;
        ctl.set_neighbor(2, nbr(k), mac(k)).unwrap();
        ctl.adjacency(2, nbr(k)).unwrap();
    }
    for k in 0..40u8 {
        let labels: &[u32] = if k % 3 == 0 { &[500 + k as u32] } else { &[] };
        route(
            &mut ctl,
            &format!("198.30.{k}.0/24"),
            &[&nbr(k).to_string()],
            labels,
        );
    }
    let cfg = |fast_path| CoreConfig {
        fast_path,
        ..CoreConfig::default()
    };
    let mut fast = ctl.new_core(cfg(true), tsc_hz()).0;
    let mut general = ctl.new_core(cfg(false), tsc_hz()).0;
    let which: Vec<u8> = (0..BURST).map(order).collect();
    let frames: Vec<Vec<u8>> = which
        .iter()
        .enumerate()
        .map(|(j, &k)| {
            let dst = Ipv4Addr::new(198, 30, k, j as u8);
            from_host(&ip4(a("10.1.0.2"), dst, 64, 1024 + j as u16, 60))
        })
        .collect();
    let mut res = Vec::new();
    for core in [&mut fast, &mut general] {
        let mut pkts: Vec<VecPacket> = frames.iter().map(|f| VecPacket::new(f, 0)).collect();
        let mut out = vec![Out::Drop; BURST];
        core.process(&mut pkts, &mut out);
        res.push((
            out,
            pkts.iter().map(|p| p.data().to_vec()).collect::<Vec<_>>(),
        ));
    }
    assert_eq!(res[0], res[1]);
    let (out, data) = &res[0];
    for (j, &k) in which.iter().enumerate() {
        assert_eq!(out[j], Out::Tx(1), "packet {j}");
        let d = &data[j];
        assert_eq!(&d[..6], &mac(k), "packet {j} to neighbour {k}");
        if k % 3 == 0 {
            assert_eq!(&d[12..14], &[0x88, 0x47]);
            let lse = u32::from_be_bytes([d[14], d[15], d[16], d[17]]);
            assert_eq!(lse >> 12, 500 + u32::from(k), "packet {j}");
        } else {
            assert_eq!(&d[12..14], &[0x08, 0x00]);
        }
    }
    assert_eq!(fast.stats().ifaces[2].tx_pkts.get(), BURST as u64);
}

/// Neighbours learned from ARP age: probed by unicast after `reachable`, kept when
/// they answer, forgotten (adjacency incomplete, traffic resolves again) when they
/// do not. Configured ones never age.
#[test]
fn learned_neighbors_are_probed_and_forgotten_when_silent() {
    use dataplane::router::NeighborAging;
    use std::time::Instant;
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.3.0.7"], &[]);
    let mut core = core(&mut ctl);
    let gw_mac = [2, 0, 0, 0, 7, 7];
    let heard = |core: &mut Core, ctl: &mut RouterControl| {
        let reply = neighbor_reply(2, gw_mac, "10.3.0.7");
        assert_eq!(run(core, &[reply], 2)[0].0, Out::Drop);
        assert_eq!(ctl.poll(), 1);
    };
    heard(&mut core, &mut ctl);
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    let aging = NeighborAging {
        reachable: Duration::from_secs(60),
        probe_every: Duration::from_secs(1),
        probes: 2,
    };
    assert!(!ctl.is_static_neighbor(3, a("10.3.0.7")));
    assert!(ctl.age_neighbors(at(59), &aging).is_empty());

    // Reachable time over: a unicast probe to the MAC it has; traffic still flows.
    let probes = ctl.age_neighbors(at(61), &aging);
    let want = arp_request(gw_mac, mac_r(2), a("10.3.0.1"), a("10.3.0.7"));
    assert_eq!(probes.len(), 1);
    assert_eq!((probes[0].port, probes[0].ifindex), (2, 3));
    assert_eq!(probes[0].frame, want);
    let ip = host_ip(1, [198, 18], 64, 64);
    let res = run(&mut core, &[from_host(&ip)], 0);
    assert_eq!(res[0].0, Out::Tx(2));

    // It answers: reachable again, no probe until another 60 s.
    heard(&mut core, &mut ctl);
    let t1 = Instant::now();
    let later = |s: u64| t1 + Duration::from_secs(s);
    assert!(ctl.age_neighbors(later(59), &aging).is_empty());

    // Silent this time: two probes a second apart, then it is forgotten.
    assert_eq!(ctl.age_neighbors(later(61), &aging).len(), 1);
    assert!(ctl.age_neighbors(later(61), &aging).is_empty());
    assert_eq!(ctl.age_neighbors(later(62), &aging).len(), 1);
    assert!(ctl.neighbors().contains_key(&(3, a("10.3.0.7"))));
    assert!(ctl.age_neighbors(later(63), &aging).is_empty());
    assert!(!ctl.neighbors().contains_key(&(3, a("10.3.0.7"))));
    assert_eq!(ctl.aging_counts(), (3, 1));
    // Traffic resolves it again by broadcast.
    let res = run(&mut core, &[from_host(&ip)], 0);
    let request = arp_request(BCAST, mac_r(2), a("10.3.0.1"), a("10.3.0.7"));
    assert_eq!(res[0], (Out::Tx(2), request));

    // Configured neighbours never age, and a learned one configured becomes static.
    ctl.set_neighbor(3, a("10.3.0.7"), gw_mac).unwrap();
    heard(&mut core, &mut ctl);
    assert!(ctl.is_static_neighbor(3, a("10.3.0.7")));
    assert!(ctl.age_neighbors(later(1 << 20), &aging).is_empty());
    assert!(ctl.neighbors().contains_key(&(3, a("10.3.0.7"))));
}

/// A label entry holds its adjacencies: the route that first made one can go, and
/// another neighbour can come, and the label still sends to its own neighbour; the
/// adjacency goes with the last label that held it.
#[test]
fn label_entries_hold_their_adjacencies() {
    let mut ctl = router();
    route(&mut ctl, "198.25.0.0/16", &["10.3.0.7"], &[]);
    let adj = ctl.adjacency(3, a("10.3.0.7")).unwrap();
    ctl.label_add(120, true, LabelAction::swap(adj, &[220]))
        .unwrap();
    ctl.route_del(0, pfx("198.25.0.0/16")).unwrap();
    // A new neighbour would have taken the freed id.
    route(&mut ctl, "198.26.0.0/16", &["10.4.0.9"], &[]);
    let other = ctl.adjacency(4, a("10.4.0.9")).unwrap();
    assert_ne!(other, adj);
    let key = |ctl: &RouterControl, id| ctl.fib().adjacency_key(id);
    assert_eq!(key(&ctl, adj), Some((3, a("10.3.0.7").into())));
    // Labelled packets still resolve 10.3.0.7 (and not 10.4.0.9).
    let mut core = core(&mut ctl);
    let ip = host_ip(1, [198, 18], 64, 64);
    let res = run(&mut core, &[from_host_mpls(&[(120, 64)], &ip)], 0);
    let request = arp_request(BCAST, mac_r(2), a("10.3.0.1"), a("10.3.0.7"));
    assert_eq!(res[0], (Out::Tx(2), request));
    // Replacing the entry with a path elsewhere lets the old adjacency go.
    ctl.label_add(120, true, LabelAction::swap(other, &[220]))
        .unwrap();
    assert_eq!(key(&ctl, adj), None);
    ctl.label_del(120, true).unwrap();
    route(&mut ctl, "198.26.0.0/16", &["10.2.0.2"], &[]);
    assert_eq!(key(&ctl, other), None);
    // An id the FIB does not know is refused, and nothing changes.
    assert!(matches!(
        ctl.label_add(121, true, LabelAction::swap(9999, &[221])),
        Err(RouterError::UnknownAdjacency(9999))
    ));
    assert!(ctl.labels().get(121, true).is_none());
}

/// An IPv6 packet: `next` header, 16 bytes of payload starting with `l4`.
fn ip6(dst: [u8; 16], next: u8, l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 40 + 16];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&16u16.to_be_bytes());
    p[6] = next;
    p[7] = 255;
    p[8] = 0xfe;
    p[9] = 0x80;
    p[24..40].copy_from_slice(&dst);
    p[40..40 + l4.len()].copy_from_slice(l4);
    p
}

#[test]
fn with_a_host_stack_control_traffic_is_punted_by_class() {
    use dataplane::router::PuntReason as P;
    let mut ctl = router();
    let mut core = core(&mut ctl);
    let mut ospf_hello = ip4(a("10.1.0.2"), a("224.0.0.5"), 1, 0, 64);
    ospf_hello[9] = 89;
    ip_fix(&mut ospf_hello);
    let mut bgp = ip4(a("10.1.0.2"), a("10.1.0.1"), 1, 40000, 64);
    bgp[9] = 6;
    bgp[22..24].copy_from_slice(&179u16.to_be_bytes());
    ip_fix(&mut bgp);
    let udp = ip4(a("10.1.0.2"), a("10.1.0.1"), 64, 5000, 64);
    let mut unreach = ip4(a("10.1.0.2"), a("10.1.0.1"), 64, 0, 64);
    unreach[9] = 1;
    unreach[20] = 3;
    ip_fix(&mut unreach);
    let mut ll_mc = [0u8; 16];
    ll_mc[..2].copy_from_slice(&[0xff, 0x02]);
    ll_mc[15] = 1;
    // The router's link-local address as its twin holds it (the routing state
    // has none here).
    let mut unicast6 = [0u8; 16];
    unicast6[..2].copy_from_slice(&[0xfe, 0x80]);
    unicast6[15] = 1;
    let eth6 = |p: &[u8]| eth(mac_r(0), HOST, None, 0x86dd, p);
    let arp_reply = eth(
        mac_r(0),
        HOST,
        None,
        ETH_ARP,
        &arp(2, HOST, a("10.1.0.2"), mac_r(0), a("10.1.0.1")),
    );
    let arp_request = eth(
        BCAST,
        HOST,
        None,
        ETH_ARP,
        &arp(1, HOST, a("10.1.0.2"), [0; 6], a("10.1.0.1")),
    );
    let frames = [
        (from_host(&ospf_hello), Some(P::Routing)),
        (from_host(&bgp), Some(P::Routing)),
        (from_host(&udp), Some(P::Local)),
        (from_host(&unreach), Some(P::Local)),
        // MLD (ICMPv6 143) to a link-scope group.
        (eth6(&ip6(ll_mc, 58, &[143])), Some(P::Ip6Control)),
        // OSPFv3 to ff02::5, BGP over IPv6.
        (eth6(&ip6(ll_mc, 89, &[])), Some(P::Ip6Control)),
        (
            eth6(&ip6(unicast6, 6, &[0x9c, 0x40, 0, 179])),
            Some(P::Ip6Control),
        ),
        (
            eth6(&ip6(unicast6, 17, &[0x13, 0x88, 0x13, 0x88])),
            Some(P::Ip6Other),
        ),
        // ARP: replies to us are copied to the host stack, requests are answered
        // here and nowhere else.
        (arp_reply, Some(P::Arp)),
        (arp_request.clone(), None),
    ];
    let all: Vec<Vec<u8>> = frames.iter().map(|f| f.0.clone()).collect();
    // Without a host stack: multicast and IPv6 are dropped, the rest as before.
    let res = run(&mut core, &all, 0);
    let want_off = [
        Out::Drop,
        Out::Punt(P::Routing, 1),
        Out::Punt(P::Local, 1),
        Out::Punt(P::Local, 1),
        Out::Drop,
        Out::Drop,
        Out::Drop,
        Out::Drop,
        Out::Drop,
        Out::Tx(0),
    ];
    let got: Vec<Out> = res.iter().map(|r| r.0).collect();
    assert_eq!(got, want_off);
    ctl.set_punt_to_host(true);
    let res = run(&mut core, &all, 0);
    for (i, ((frame, want), (out, data))) in frames.iter().zip(&res).enumerate() {
        match want {
            // Punts go up unchanged.
            Some(r) => {
                assert_eq!(*out, Out::Punt(*r, 1), "frame {i}");
                assert_eq!(data, frame, "frame {i}");
            }
            None => assert_eq!(*out, Out::Tx(0), "frame {i}"),
        }
    }
}

/// Sources' routes share one copy of each distinct kind, and the last copy goes
/// with the last route that used it, whatever order routes come and go in.
#[test]
fn route_kinds_are_shared_and_freed_with_their_last_route() {
    use dataplane::router::RouteSource as S;
    let mut ctl = router();
    let via = |gw: &str| RouteKind::Paths(vec![Path::gateway(a(gw))]);
    let p = |i: u8| pfx(&format!("198.18.{i}.0/24"));
    for i in 0..10 {
        let gw = if i % 3 == 0 { "10.3.0.2" } else { "10.2.0.2" };
        ctl.route_add_from(S::Kernel, 0, p(i), via(gw)).unwrap();
    }
    ctl.route_add_from(S::Fpm, 0, p(1), via("10.4.0.2"))
        .unwrap();
    assert_eq!(ctl.shared_route_kinds(), 3);
    // Replacing every route of a kind lets that kind go.
    for i in [0, 3, 6, 9] {
        ctl.route_add_from(S::Kernel, 0, p(i), via("10.2.0.2"))
            .unwrap();
    }
    assert_eq!(ctl.shared_route_kinds(), 2);
    ctl.route_del_from(S::Fpm, 0, p(1)).unwrap();
    assert_eq!(ctl.shared_route_kinds(), 1);
    for i in (0..10).rev() {
        ctl.route_del_from(S::Kernel, 0, p(i)).unwrap();
    }
    assert_eq!(ctl.shared_route_kinds(), 0);
    // And the kind interned last comes back as a new copy.
    ctl.route_add_from(S::Kernel, 0, p(0), via("10.2.0.2"))
        .unwrap();
    assert_eq!(ctl.shared_route_kinds(), 1);
}

#[test]
fn the_preferred_source_forwards_and_withdrawing_it_reveals_the_next() {
    use dataplane::router::RouteSource as S;
    let mut ctl = router();
    let mut core = core(&mut ctl);
    let via = |gw: &str| RouteKind::Paths(vec![Path::gateway(a(gw))]);
    let p = pfx("198.18.0.0/16");
    let out = |core: &mut Core| run(core, &[from_host(&host_ip(1, [198, 18], 64, 64))], 0)[0].0;
    ctl.route_add_from(S::Kernel, 0, p, via("10.3.0.2"))
        .unwrap();
    assert_eq!(out(&mut core), Out::Tx(2));
    // Config beats kernel, dpctl beats config; a less preferred one waits.
    ctl.route_add_from(S::Config, 0, p, via("10.4.0.2"))
        .unwrap();
    assert_eq!(out(&mut core), Out::Tx(3));
    ctl.route_add_from(S::Dpctl, 0, p, via("10.5.0.2")).unwrap();
    assert_eq!(out(&mut core), Out::Tx(4));
    ctl.route_add_from(S::Kernel, 0, p, via("10.2.0.2"))
        .unwrap();
    assert_eq!(out(&mut core), Out::Tx(4));
    assert_eq!(ctl.route_source(0, p), Some(S::Dpctl));
    ctl.route_del_from(S::Dpctl, 0, p).unwrap();
    assert_eq!(out(&mut core), Out::Tx(3));
    ctl.route_del_from(S::Config, 0, p).unwrap();
    // The kernel's latest route, not its first.
    assert_eq!(out(&mut core), Out::Tx(1));
    assert_eq!(ctl.route_source(0, p), Some(S::Kernel));
    assert!(ctl.route_del_from(S::Config, 0, p).is_err());
    assert_eq!(ctl.routes_of(S::Kernel).count(), 1);
    ctl.route_del_from(S::Kernel, 0, p).unwrap();
    // No route: ICMP unreachable back to the host.
    assert_eq!(out(&mut core), Out::Tx(0));
    assert_eq!(ctl.route_source(0, p), None);
    // An address owns its subnet: a source's route for it waits underneath and
    // comes back when the address goes.
    let net = pfx("10.50.0.0/24");
    ctl.route_add_from(S::Kernel, 0, net, via("10.3.0.2"))
        .unwrap();
    ctl.add_address(5, a("10.50.0.1"), 24).unwrap();
    assert_eq!(ctl.route_source(0, net), None);
    ctl.del_address(5, a("10.50.0.1"), 24).unwrap();
    assert_eq!(ctl.route_source(0, net), Some(S::Kernel));
    let to_net = from_host(&ip4(a("10.1.0.2"), a("10.50.0.9"), 64, 1, 64));
    assert_eq!(run(&mut core, &[to_net], 0)[0].0, Out::Tx(2));
}

#[test]
fn label_entries_of_less_preferred_sources_wait_and_are_revealed() {
    use dataplane::router::RouteSource as S;
    let mut ctl = router();
    let mut core = core(&mut ctl);
    let (adj2, adj3) = (
        ctl.adjacency(3, a("10.3.0.2")).unwrap(),
        ctl.adjacency(4, a("10.4.0.2")).unwrap(),
    );
    let ip = host_ip(1, [198, 18], 64, 64);
    let out = |core: &mut Core| {
        let r = run(core, &[from_host_mpls(&[(120, 64)], &ip)], 0);
        (r[0].0, r[0].1[14..17].to_vec())
    };
    ctl.label_add_from(S::Fpm, 120, true, LabelAction::swap(adj2, &[220]))
        .unwrap();
    ctl.label_add_from(S::Dpctl, 120, true, LabelAction::swap(adj3, &[330]))
        .unwrap();
    // Less preferred than dpctl: accepted, and waits.
    ctl.label_add_from(S::Kernel, 120, true, LabelAction::swap(adj2, &[440]))
        .unwrap();
    assert_eq!(ctl.label_source(120, true), Some(S::Dpctl));
    let label = |l: u32| vec![(l >> 12) as u8, (l >> 4) as u8, ((l << 4) as u8) | 1];
    assert_eq!(out(&mut core), (Out::Tx(3), label(330)));
    ctl.label_del_from(S::Dpctl, 120, true).unwrap();
    assert_eq!(ctl.label_source(120, true), Some(S::Fpm));
    assert_eq!(out(&mut core), (Out::Tx(2), label(220)));
    ctl.label_del_from(S::Fpm, 120, true).unwrap();
    assert_eq!(out(&mut core), (Out::Tx(2), label(440)));
    ctl.label_del_from(S::Kernel, 120, true).unwrap();
    assert!(ctl.labels().get(120, true).is_none());
    assert!(ctl.label_del_from(S::Kernel, 120, true).is_err());
    // A waiting entry is checked as an installed one: refused, nothing stays.
    ctl.label_add_from(S::Dpctl, 121, true, LabelAction::swap(adj3, &[500]))
        .unwrap();
    let bad = LabelAction::swap(adj2, &[1 << 20]);
    assert!(ctl.label_add_from(S::Kernel, 121, true, bad).is_err());
    assert!(ctl.label_of(S::Kernel, 121, true).is_none());
    ctl.label_del_from(S::Dpctl, 121, true).unwrap();
    assert!(ctl.labels().get(121, true).is_none());
}

#[test]
fn host_routes_of_neighbours_and_connected_routes_come_back_when_what_hid_them_goes() {
    use dataplane::router::RouteSource as S;
    let mut ctl = router();
    let via = |gw: &str| RouteKind::Paths(vec![Path::gateway(a(gw))]);
    // The neighbour 10.3.0.2 on ifindex 3 has its host route.
    let host = pfx("10.3.0.2/32");
    let own = RouteKind::Paths(vec![Path::gateway_on(a("10.3.0.2"), 3)]);
    assert_eq!(ctl.route_kind(0, host), Some(&own));
    ctl.route_add_from(S::Kernel, 0, host, via("10.4.0.2"))
        .unwrap();
    assert_eq!(ctl.route_source(0, host), Some(S::Kernel));
    ctl.route_del_from(S::Kernel, 0, host).unwrap();
    assert_eq!(ctl.route_kind(0, host), Some(&own));
    ctl.del_neighbor(3, a("10.3.0.2")).unwrap();
    assert_eq!(ctl.route_kind(0, host), None);
    // A source's route for a connected subnet forwards while the interface is
    // down, and the connected route is back when it is up.
    let net = pfx("10.3.0.0/24");
    ctl.route_add_from(S::Kernel, 0, net, via("10.4.0.2"))
        .unwrap();
    assert_eq!(ctl.route_source(0, net), None);
    ctl.set_up(3, false).unwrap();
    assert_eq!(ctl.route_source(0, net), Some(S::Kernel));
    ctl.set_up(3, true).unwrap();
    assert_eq!(
        ctl.route_kind(0, net),
        Some(&RouteKind::Connected { ifindex: 3 })
    );
}

#[test]
fn a_configured_neighbour_hides_the_host_stacks_and_arps_until_it_goes() {
    let mut ctl = router();
    let (ip, k, arp) = (a("10.3.0.9"), [2, 0, 0, 0, 9, 1], [2, 0, 0, 0, 9, 2]);
    let mac = |ctl: &RouterControl| ctl.neighbors().get(&(3, ip)).copied();
    ctl.set_neighbor(3, ip, mac_n(7)).unwrap();
    ctl.set_kernel_neighbor(3, ip, k).unwrap();
    assert_eq!(mac(&ctl), Some(mac_n(7)));
    assert!(ctl.is_static_neighbor(3, ip) && ctl.is_kernel_neighbor(3, ip));
    // The configured MAC goes: the host stack's takes its place.
    assert!(ctl.del_static_neighbor(3, ip));
    assert_eq!(mac(&ctl), Some(k));
    assert!(ctl.route_kind(0, pfx("10.3.0.9/32")).is_some());
    // The host stack forgets it: nothing is left, nor its host route.
    ctl.del_kernel_neighbor(3, ip).unwrap();
    assert_eq!(mac(&ctl), None);
    assert!(ctl.route_kind(0, pfx("10.3.0.9/32")).is_none());
    // ARP's entry ages; a configured one replaces it for good.
    ctl.learn_neighbor(3, ip, arp).unwrap();
    assert_eq!(mac(&ctl), Some(arp));
    ctl.set_neighbor(3, ip, mac_n(7)).unwrap();
    assert!(!ctl.del_static_neighbor(3, a("10.3.0.10")));
    assert!(ctl.del_static_neighbor(3, ip));
    assert_eq!(mac(&ctl), None);
}

#[test]
fn the_route_preference_can_put_the_kernel_first() {
    use dataplane::router::RouteSource as S;
    let mut ctl = router();
    let order = [S::Kernel, S::Fpm, S::Config, S::Dpctl];
    ctl.set_route_preference(&order).unwrap();
    assert_eq!(ctl.route_preference(), order);
    let via = |gw: &str| RouteKind::Paths(vec![Path::gateway(a(gw))]);
    let p = pfx("198.18.0.0/16");
    ctl.route_add_from(S::Config, 0, p, via("10.4.0.2"))
        .unwrap();
    ctl.route_add_from(S::Kernel, 0, p, via("10.3.0.2"))
        .unwrap();
    assert_eq!(ctl.route_source(0, p), Some(S::Kernel));
    ctl.route_add_from(S::Dpctl, 0, p, via("10.5.0.2")).unwrap();
    assert_eq!(ctl.route_source(0, p), Some(S::Kernel));
    ctl.route_del_from(S::Kernel, 0, p).unwrap();
    assert_eq!(ctl.route_source(0, p), Some(S::Config));
    // Only once, before anything is installed, and an order of every source.
    assert!(ctl.set_route_preference(&S::ALL).is_err());
    let mut fresh = router();
    assert!(
        fresh
            .set_route_preference(&[S::Kernel, S::Kernel, S::Config, S::Dpctl])
            .is_err()
    );
    assert!(
        fresh
            .set_route_preference(&[S::Kernel, S::Config, S::Dpctl])
            .is_err()
    );
}

#[test]
fn an_address_is_the_preferred_sources_and_withdrawing_it_reveals_the_next() {
    use dataplane::router::RouteSource as S;
    let mut ctl = router();
    let addrs = |ctl: &RouterControl| ctl.iface(1).unwrap().addrs.clone();
    let connected = RouteKind::Connected { ifindex: 1 };
    // port0 has the file's 10.1.0.1/24; dpctl gives the same address as a /16.
    ctl.add_address_from(S::Dpctl, 1, a("10.1.0.1"), 16)
        .unwrap();
    assert_eq!(addrs(&ctl), vec![(a("10.1.0.1"), 16)]);
    assert_eq!(ctl.route_kind(0, pfx("10.1.0.0/16")), Some(&connected));
    assert_eq!(ctl.route_kind(0, pfx("10.1.0.0/24")), None);
    // The file letting go of it changes nothing; taking it back neither.
    ctl.del_address(1, a("10.1.0.1"), 24).unwrap();
    assert_eq!(addrs(&ctl), vec![(a("10.1.0.1"), 16)]);
    ctl.add_address(1, a("10.1.0.1"), 24).unwrap();
    assert_eq!(addrs(&ctl), vec![(a("10.1.0.1"), 16)]);
    // dpctl's goes: the file's /24 is back, with its connected route.
    ctl.del_address_from(S::Dpctl, 1, a("10.1.0.1"), 16)
        .unwrap();
    assert_eq!(addrs(&ctl), vec![(a("10.1.0.1"), 24)]);
    assert_eq!(ctl.route_kind(0, pfx("10.1.0.0/24")), Some(&connected));
    assert_eq!(ctl.route_kind(0, pfx("10.1.0.0/16")), None);
    // A source deletes only its own.
    assert!(
        ctl.del_address_from(S::Kernel, 1, a("10.1.0.1"), 24)
            .is_err()
    );
    ctl.add_address_from(S::Kernel, 1, a("10.1.0.1"), 24)
        .unwrap();
    ctl.del_address(1, a("10.1.0.1"), 24).unwrap();
    assert_eq!(addrs(&ctl), vec![(a("10.1.0.1"), 24)]);
    assert_eq!(
        ctl.addresses_of(S::Kernel),
        vec![(1, a("10.1.0.1").into(), 24)]
    );
    // Refused, nothing is kept.
    assert!(ctl.add_address_from(S::Dpctl, 1, a("0.0.0.0"), 8).is_err());
    assert!(ctl.addresses_of(S::Dpctl).is_empty());
    // An interface that goes takes every source's candidates with it.
    ctl.add_address_from(S::Dpctl, 3, a("10.3.9.1"), 24)
        .unwrap();
    ctl.del_interface(3).unwrap();
    assert!(ctl.addresses_of(S::Dpctl).is_empty());
    assert!(!ctl.addresses_of(S::Config).iter().any(|k| k.0 == 3));
    assert_eq!(ctl.route_kind(0, pfx("10.3.9.0/24")), None);
}

#[test]
fn the_router_id_is_the_preferred_sources_and_withdrawing_it_reveals_the_next() {
    use dataplane::router::RouteSource as S;
    let mut ctl = router();
    assert_eq!(ctl.router_id(), None);
    ctl.set_router_id_from(S::Kernel, Some(a("10.255.0.9")));
    assert_eq!(ctl.router_id(), Some(a("10.255.0.9")));
    ctl.set_router_id(Some(a("192.0.2.1")));
    assert_eq!(ctl.router_id(), Some(a("192.0.2.1")));
    assert_eq!(ctl.router_id_source(), Some(S::Config));
    // A lower loopback from the kernel changes only the waiting candidate.
    ctl.set_router_id_from(S::Kernel, Some(a("10.255.0.1")));
    assert_eq!(ctl.router_id(), Some(a("192.0.2.1")));
    ctl.set_router_id_from(S::Dpctl, Some(a("198.51.100.1")));
    assert_eq!(ctl.router_id_source(), Some(S::Dpctl));
    assert_eq!(ctl.ifaces().router_id, Some(a("198.51.100.1")));
    ctl.set_router_id_from(S::Dpctl, None);
    assert_eq!(ctl.router_id(), Some(a("192.0.2.1")));
    ctl.set_router_id(None);
    assert_eq!(ctl.router_id(), Some(a("10.255.0.1")));
    assert_eq!(ctl.ifaces().router_id, Some(a("10.255.0.1")));
    ctl.set_router_id_from(S::Kernel, None);
    assert_eq!((ctl.router_id(), ctl.router_id_source()), (None, None));
    assert_eq!(ctl.ifaces().router_id, None);
}

#[test]
fn an_unnumbered_interface_speaks_arp_for_the_loopback() {
    let mut ctl = router();
    ctl.set_router_id(Some(a("192.0.2.1")));
    ctl.add_interface(dataplane::router::Interface {
        ifindex: 20,
        name: "port0.300".into(),
        port: 0,
        vlan: Some(300),
        mac: mac_r(0),
        mtu: 1500,
        up: true,
        table: 0,
        addrs: Vec::new(),
        addrs6: Vec::new(),
    })
    .unwrap();
    let mut core = core(&mut ctl);
    let peer = [2, 0, 0, 0, 0x30, 0x09];
    let req = eth(
        BCAST,
        peer,
        Some(300),
        ETH_ARP,
        &arp(1, peer, a("192.0.2.9"), [0; 6], a("192.0.2.1")),
    );
    let res = run(&mut core, &[req], 0);
    assert_all_tx(&res, 0, |_| {
        eth(
            peer,
            mac_r(0),
            Some(300),
            ETH_ARP,
            &arp(2, mac_r(0), a("192.0.2.1"), peer, a("192.0.2.9")),
        )
    });
    // The peer's loopback is learned although no subnet covers it.
    assert_eq!(ctl.poll(), 1);
    assert_eq!(ctl.neighbors().get(&(20, a("192.0.2.9"))), Some(&peer));
    // An onlink route over it forwards to the peer.
    ctl.route_add(
        0,
        pfx("198.18.9.0/24"),
        RouteKind::Paths(vec![Path::gateway_on(a("192.0.2.9"), 20)]),
    )
    .unwrap();
    let to = ip4(a("10.1.0.2"), a("198.18.9.1"), 64, 1000, 64);
    let res = run(&mut core, &[from_host(&to)], 0);
    assert_eq!(res[0].0, Out::Tx(0));
    assert_eq!(&res[0].1[..6], &peer);
    assert_eq!(&res[0].1[12..16], &[0x81, 0, 0x01, 0x2c]);
}

/// One operation on the RIB from outside: a source's route, an address, the
/// interface's admin state.
#[derive(Debug, Clone)]
enum RibOp {
    Add(usize, usize, usize),
    Del(usize, usize),
    Addr(bool),
    Up(bool),
}

fn rib_op() -> impl Strategy<Value = RibOp> {
    prop_oneof![
        5 => (0..4usize, 0..4usize, 0..2usize).prop_map(|(s, p, g)| RibOp::Add(s, p, g)),
        3 => (0..4usize, 0..4usize).prop_map(|(s, p)| RibOp::Del(s, p)),
        1 => any::<bool>().prop_map(RibOp::Addr),
        1 => any::<bool>().prop_map(RibOp::Up),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever the sources, addresses and admin state do, the FIB forwards
    /// with what a model recomputed from scratch picks: the address's routes,
    /// else the most preferred source's.
    #[test]
    fn the_fib_holds_the_winner_a_model_recomputes(ops in prop::collection::vec(rib_op(), 0..60)) {
        use dataplane::router::RouteSource as S;
        let mut ctl = router();
        let prefixes = [pfx("10.9.0.0/24"), pfx("10.9.0.1/32"), pfx("198.18.0.0/24"), pfx("10.9.0.0/16")];
        let gws = ["10.2.0.2", "10.3.0.2"];
        let via = |g: usize| RouteKind::Paths(vec![Path::gateway(a(gws[g]))]);
        // Each source's route per prefix, the address, the admin state.
        let mut model: std::collections::BTreeMap<(usize, usize), usize> = Default::default();
        let (mut addr, mut up) = (false, true);
        for op in &ops {
            match *op {
                RibOp::Add(s, p, g) => {
                    ctl.route_add_from(S::ALL[s], 0, prefixes[p], via(g)).unwrap();
                    model.insert((p, s), g);
                }
                RibOp::Del(s, p) => {
                    let r = ctl.route_del_from(S::ALL[s], 0, prefixes[p]);
                    prop_assert_eq!(r.is_ok(), model.remove(&(p, s)).is_some());
                }
                RibOp::Addr(on) if on != addr => {
                    if on {
                        ctl.add_address(5, a("10.9.0.1"), 24).unwrap();
                    } else {
                        ctl.del_address(5, a("10.9.0.1"), 24).unwrap();
                    }
                    addr = on;
                }
                RibOp::Addr(_) => {}
                RibOp::Up(u) => {
                    ctl.set_up(5, u).unwrap();
                    up = u;
                }
            }
            for (i, &p) in prefixes.iter().enumerate() {
                let want = match i {
                    1 if addr => Some(RouteKind::Local),
                    0 if addr && up => Some(RouteKind::Connected { ifindex: 5 }),
                    _ => (0..4).find_map(|s| model.get(&(i, s))).map(|&g| via(g)),
                };
                prop_assert_eq!(ctl.route_kind(0, p).cloned(), want.clone(), "{} after {:?}", p, op);
                prop_assert_eq!(ctl.fib().route(0, p).is_some(), want.is_some());
                let src = (0..4).find(|&s| model.contains_key(&(i, s)));
                let shadowed = (i == 1 && addr) || (i == 0 && addr && up);
                prop_assert_eq!(ctl.route_source(0, p), src.filter(|_| !shadowed).map(|s| S::ALL[s]));
            }
        }
    }
}

/// An L3VPN PE: port 0 faces a customer in VRF table 10, port 1 the core. A VRF
/// route via the remote PE's loopback, looked up in the global table, leaves with
/// the LSP's label on top of the VPN label (uniform TTL); a packet for the VPN
/// label pops and is looked up in the VRF, where the customer's addresses
/// overlap the global table's. Both paths, fast and general.
#[test]
fn vpn_routes_push_the_lsp_over_the_vpn_label_and_the_vpn_label_looks_up_in_the_vrf() {
    let mut ctl = RouterControl::new();
    ctl.table_add(10).unwrap();
    ctl.add_interface(port_iface(0, 0, 10)).unwrap();
    ctl.add_interface(port_iface(1, 1, 0)).unwrap();
    ctl.set_neighbor(2, a("10.2.0.2"), mac_n(1)).unwrap();
    ctl.set_neighbor(1, a("10.1.0.2"), HOST).unwrap();
    // The LSP to the remote PE, and the same customer prefix in the global table.
    let lsp = RouteKind::Paths(vec![Path::gateway(a("10.2.0.2")).with_labels(&[1000])]);
    ctl.route_add(0, pfx("192.0.2.4/32"), lsp).unwrap();
    ctl.route_add(0, pfx("198.18.0.0/16"), RouteKind::Blackhole)
        .unwrap();
    let vpn = Path::gateway(a("192.0.2.4")).in_table(0).with_labels(&[77]);
    ctl.route_add(10, pfx("198.18.0.0/16"), RouteKind::Paths(vec![vpn]))
        .unwrap();
    ctl.label_add(77, true, LabelAction::ip4_lookup(10))
        .unwrap();
    let ip = host_ip(3, [198, 18], 64, 60);
    let back = ip4(a("198.18.0.3"), a("10.1.0.2"), 64, 53, 60);
    for fast_path in [true, false] {
        let cfg = CoreConfig {
            fast_path,
            ..core_cfg()
        };
        let mut core = ctl.new_core(cfg, tsc_hz()).0;
        let res = run(&mut core, &vec![from_host(&ip); N], 0);
        assert_all_tx(&res, 1, |_| {
            let stack = labelled(&[(1000, 63), (77, 63)], &with_ttl(&ip, 63));
            eth(mac_n(1), mac_r(1), None, ETH_MPLS, &stack)
        });
        // From the core: the LSP's label was popped by the penultimate hop.
        let f = eth(
            mac_r(1),
            mac_n(1),
            None,
            ETH_MPLS,
            &labelled(&[(77, 30)], &back),
        );
        let res = run(&mut core, &vec![f; 3], 1);
        assert_all_tx(&res, 0, |_| {
            eth(HOST, mac_r(0), None, ETH_IP4, &with_ttl(&back, 29))
        });
        assert_eq!(counters(core.stats()), expect(&[]), "fast path {fast_path}");
    }
}

/// Two customers with the same subnet (10.1.0.0/24, the router 10.1.0.1 on both)
/// on ports 0 and 1, in VRFs 10 and 20: ARP, ICMP errors (a traceroute's first
/// hop) and a route each stay inside the receiving interface's VRF, and neither
/// reaches the other's routes.
#[test]
fn overlapping_vrfs_answer_arp_and_send_icmp_from_their_own_interface() {
    let mut ctl = RouterControl::new();
    ctl.table_add(10).unwrap();
    ctl.table_add(20).unwrap();
    for (p, t) in [(0u8, 10), (1, 20)] {
        let mut i = port_iface(p, u16::from(p), t);
        i.addrs = vec![(a("10.1.0.1"), 24)];
        ctl.add_interface(i).unwrap();
    }
    let host2 = mac_n(1);
    ctl.set_neighbor(1, a("10.1.0.2"), HOST).unwrap();
    ctl.set_neighbor(2, a("10.1.0.2"), host2).unwrap();
    // Only VRF 10 has a route to 198.18/16 (back to its customer).
    let back = RouteKind::Paths(vec![Path::gateway(a("10.1.0.2"))]);
    ctl.route_add(10, pfx("198.18.0.0/16"), back).unwrap();
    for fast_path in [true, false] {
        let cfg = CoreConfig {
            fast_path,
            ..core_cfg()
        };
        let mut core = ctl.new_core(cfg, tsc_hz()).0;
        for (port, host) in [(0u16, HOST), (1, host2)] {
            let mut req = eth(
                BCAST,
                host,
                None,
                ETH_ARP,
                &arp(1, host, a("10.1.0.2"), [0; 6], a("10.1.0.1")),
            );
            req.resize(60, 0);
            let res = run(&mut core, &[req], port);
            let mac = mac_r(port as u8);
            let want = arp(2, mac, a("10.1.0.1"), host, a("10.1.0.2"));
            assert_eq!(
                res[0],
                (Out::Tx(port), eth(host, mac, None, ETH_ARP, &want))
            );
        }
        // TTL 1 through VRF 10: time exceeded from 10.1.0.1 on port 0.
        let ip = ip4(a("10.1.0.2"), a("198.18.0.9"), 1, 7, 60);
        let res = run(&mut core, &[eth(mac_r(0), HOST, None, ETH_IP4, &ip)], 0);
        assert_eq!(res[0].0, Out::Tx(0), "fast path {fast_path}");
        let f = &res[0].1;
        assert_eq!(
            (&f[0..6], &f[26..30], &f[30..34]),
            (&HOST[..], &[10, 1, 0, 1][..], &[10, 1, 0, 2][..])
        );
        assert_eq!((f[34], f[35]), (11, 0), "time exceeded");
        // The same packet in VRF 20: no route there, net unreachable from port 1's
        // 10.1.0.1 back to its own customer.
        let ip = ip4(a("10.1.0.2"), a("198.18.0.9"), 64, 7, 60);
        let res = run(&mut core, &[eth(mac_r(1), host2, None, ETH_IP4, &ip)], 1);
        assert_eq!(res[0].0, Out::Tx(1), "fast path {fast_path}");
        let f = &res[0].1;
        assert_eq!((&f[0..6], &f[26..30]), (&host2[..], &[10, 1, 0, 1][..]));
        assert_eq!((f[34], f[35]), (3, 0), "net unreachable");
        // And through VRF 10 it goes back out of port 0, never port 1.
        let res = run(&mut core, &[eth(mac_r(0), HOST, None, ETH_IP4, &ip)], 0);
        assert_eq!(
            res[0],
            (
                Out::Tx(0),
                eth(HOST, mac_r(0), None, ETH_IP4, &with_ttl(&ip, 63))
            )
        );
    }
}

/// A pseudowire from port 4 (no address: the attachment circuit) to the PE
/// 192.0.2.9 over the LSP through 10.2.0.2 on port 1 (label 1000): every frame
/// of the circuit (ARP, a tagged frame, IPv4 to any MAC) leaves with the LSP's
/// label over the pseudowire's (600), both TTL 255, the control word and the
/// frame unchanged; the pseudowire's label (500) brings frames back out of the
/// circuit unchanged. A relabelled LSP takes the next frame; frames over an
/// MTU, without the control word, or with no route to the PE are dropped and
/// counted.
#[test]
fn pseudowire_encap_and_decap() {
    pseudowire_encap_and_decap_with(true);
    pseudowire_encap_and_decap_with(false);
}

fn pseudowire_encap_and_decap_with(fast_path: bool) {
    use dataplane::router::Pw;
    let mut ctl = router();
    ctl.del_address(5, a("10.5.0.1"), 24).unwrap();
    route(&mut ctl, "192.0.2.9/32", &["10.2.0.2"], &[1000]);
    let pw = Pw {
        ac: 5,
        remote: a("192.0.2.9"),
        in_label: 500,
        out_label: 600,
        cw: true,
    };
    let src = dataplane::router::RouteSource::Dpctl;
    // An interface with an address is no circuit; a label in use is refused.
    let mut bad = pw.clone();
    bad.ac = 4;
    assert!(matches!(ctl.pw_add(src, "p", bad), Err(RouterError::Pw(_))));
    ctl.pw_add(src, "cust1", pw.clone()).unwrap();
    let cfg = CoreConfig {
        fast_path,
        ..core_cfg()
    };
    let mut core = ctl.new_core(cfg, tsc_hz()).0;
    let frames = [
        arp_request(BCAST, HOST, a("10.9.0.1"), a("10.9.0.2")),
        eth(
            HOST,
            VNBR,
            Some(300),
            ETH_IP4,
            &ip4(a("10.9.0.1"), a("10.9.0.2"), 64, 9, 100),
        ),
        eth(
            mac_r(4),
            HOST,
            None,
            ETH_IP4,
            &ip4(a("10.9.0.1"), a("10.5.0.1"), 1, 9, 60),
        ),
        eth(HOST, VNBR, None, 0x88cc, &[7; 50]),
    ];
    let res = run(&mut core, &frames, 4);
    let cw = [0u8; 4];
    let wire = |f: &[u8], transport: u32| {
        let mut p = lse(transport, false, 255).to_vec();
        p.extend(lse(600, true, 255));
        p.extend(cw);
        p.extend_from_slice(f);
        eth(mac_n(1), mac_r(1), None, ETH_MPLS, &p)
    };
    assert_all_tx(&res, 1, |i| wire(&frames[i], 1000));
    let s = core.stats();
    assert_eq!(s.pws[0].encap_pkts.get(), 4);
    let bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!(s.pws[0].encap_bytes.get(), bytes);
    assert_eq!(s.ifaces[5].rx_pkts.get(), 4);
    // Back: the pseudowire's label from the core, the frame out of the circuit.
    let back: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| {
            let mut p = lse(500, true, 2).to_vec();
            p.extend(cw);
            p.extend_from_slice(f);
            eth(mac_r(1), mac_n(1), None, ETH_MPLS, &p)
        })
        .collect();
    let res = run(&mut core, &back, 1);
    assert_all_tx(&res, 4, |i| frames[i].clone());
    let s = core.stats();
    assert_eq!(s.pws[0].decap_pkts.get(), 4);
    assert_eq!(s.pws[0].decap_bytes.get(), bytes);
    assert_eq!(s.ifaces[5].tx_pkts.get(), 4);
    assert_eq!(counters(s), expect(&[]));
    // The LSP relabelled: the next frame follows.
    route(&mut ctl, "192.0.2.9/32", &["10.2.0.2"], &[2000]);
    let res = run(&mut core, &frames[..1], 4);
    assert_all_tx(&res, 1, |i| wire(&frames[i], 2000));
    // Over the core MTU (1500 with 12 bytes pushed); no control word; no route.
    let big = eth(HOST, VNBR, None, 0x88b5, &vec![1; 1490]);
    let res = run(&mut core, &[big], 4);
    assert_eq!(res[0].0, Out::Drop);
    let mut no_cw = lse(500, true, 2).to_vec();
    no_cw.extend_from_slice(&ip4(a("10.9.0.1"), a("10.9.0.2"), 64, 9, 100));
    let res = run(
        &mut core,
        &[eth(mac_r(1), mac_n(1), None, ETH_MPLS, &no_cw)],
        1,
    );
    assert_eq!(res[0].0, Out::Drop);
    ctl.route_del(0, pfx("192.0.2.9/32")).unwrap();
    let res = run(&mut core, &frames[..1], 4);
    assert_eq!(res[0].0, Out::Drop);
    let s = core.stats();
    assert_eq!(
        counters(s),
        expect(&[
            ("pw_mtu_exceeded", 1),
            ("pw_bad_payload", 1),
            ("pw_down", 1)
        ])
    );
    assert_eq!(s.pws[0].drops.get(), 3);
    // Deleted: the circuit's frames are its interface's again (not to its MAC:
    // dropped), the label is gone.
    ctl.pw_del("cust1").unwrap();
    assert!(ctl.labels().get(500, true).is_none());
    let res = run(&mut core, &frames[3..], 4);
    assert_eq!(res[0].0, Out::Drop);
}

/// A sub-interface as the circuit (RFC 4448 raw mode): its frames lose their
/// VLAN tag into the pseudowire (no control word here) and get it back out of
/// it; other VLANs and untagged frames of the port stay the port's.
#[test]
fn pseudowire_on_a_sub_interface() {
    use dataplane::router::{Interface, Pw};
    let mut ctl = router();
    ctl.add_interface(Interface {
        ifindex: 12,
        name: "port4.300".into(),
        port: 4,
        vlan: Some(300),
        mac: mac_r(4),
        mtu: 1500,
        up: true,
        table: 0,
        addrs: Vec::new(),
        addrs6: Vec::new(),
    })
    .unwrap();
    route(&mut ctl, "192.0.2.9/32", &["10.2.0.2"], &[1000]);
    let pw = Pw {
        ac: 12,
        remote: a("192.0.2.9"),
        in_label: 510,
        out_label: 610,
        cw: false,
    };
    ctl.pw_add(dataplane::router::RouteSource::Dpctl, "vlan300", pw)
        .unwrap();
    let mut core = core(&mut ctl);
    let inner = ip4(a("10.9.0.1"), a("10.9.0.2"), 64, 9, 100);
    let tagged = eth(HOST, VNBR, Some(300), ETH_IP4, &inner);
    let untagged = eth(HOST, VNBR, None, ETH_IP4, &inner);
    let res = run(&mut core, std::slice::from_ref(&tagged), 4);
    let mut p = lse(1000, false, 255).to_vec();
    p.extend(lse(610, true, 255));
    p.extend_from_slice(&untagged);
    assert_all_tx(&res, 1, |_| eth(mac_n(1), mac_r(1), None, ETH_MPLS, &p));
    assert_eq!(core.stats().ifaces[12].rx_pkts.get(), 1);
    // VLAN 301 is no interface; the port's own frames to its MAC are routed.
    let other = eth(mac_r(4), VNBR, Some(301), ETH_IP4, &inner);
    assert_eq!(run(&mut core, &[other], 4)[0].0, Out::Drop);
    let mine = eth(
        mac_r(4),
        HOST,
        None,
        ETH_IP4,
        &ip4(a("10.5.0.2"), a("10.2.0.2"), 64, 9, 60),
    );
    assert_eq!(run(&mut core, &[mine], 4)[0].0, Out::Tx(1));
    // Back out of the sub-interface, tagged again.
    let mut b = lse(510, true, 9).to_vec();
    b.extend_from_slice(&untagged);
    let res = run(&mut core, &[eth(mac_r(1), mac_n(1), None, ETH_MPLS, &b)], 1);
    assert_all_tx(&res, 4, |_| tagged.clone());
    assert_eq!(core.stats().ifaces[12].tx_pkts.get(), 1);
    assert_eq!(core.stats().pws[0].decap_pkts.get(), 1);
}
