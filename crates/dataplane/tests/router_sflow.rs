//! sFlow in the pipeline without EAL: [`RouterControl`] builds the tables, an
//! [`SflowHook`] samples the vectors [`Core`] forwards, and the records that come out
//! of the worker's ring (or the datagrams an [`Agent`] sends to a socket on
//! loopback) are checked field by field.

mod common;

use std::net::{Ipv4Addr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use dataplane::dpdk::{BURST, tsc_hz};
use dataplane::packet::VecPacket;
use dataplane::router::{Core, CoreConfig, Out, RouterControl, SflowHook};
use mpls::LabelAction;
use sflow::{
    Agent, AgentConfig, Directions, FlowRecord, Interface, NoCounters, Sample, SampleConsumer,
    SampleRecord, Sampling, SamplingTable, decode_datagram,
};

fn core(ctl: &mut RouterControl) -> Core {
    ctl.new_core(CoreConfig::default(), tsc_hz()).0
}

/// A hook on its own sampling table and the agent's end of its ring.
fn hook(ring: usize) -> (SflowHook, SampleConsumer, Arc<SamplingTable>) {
    let table = Arc::new(SamplingTable::new());
    let (s, c) = sflow::channel(0, table.clone(), ring, 7).unwrap();
    (SflowHook::new(s), c, table)
}

fn every(dirs: Directions) -> Option<Sampling> {
    Some(Sampling {
        rate: 1,
        directions: dirs,
    })
}

/// Runs `frames` received on `port` through core + hook in vectors of [`BURST`].
fn run(core: &mut Core, h: &mut SflowHook, frames: &[Vec<u8>], port: u16) -> Vec<(Out, Vec<u8>)> {
    let mut res = Vec::new();
    for chunk in frames.chunks(BURST) {
        let mut pkts: Vec<VecPacket> = chunk.iter().map(|f| VecPacket::new(f, port)).collect();
        let mut out = vec![Out::Drop; chunk.len()];
        h.process(core, &mut pkts, &mut out);
        res.extend(out.iter().zip(&pkts).map(|(o, p)| (*o, p.data().to_vec())));
    }
    res
}

fn drain(c: &mut SampleConsumer) -> Vec<SampleRecord> {
    std::iter::from_fn(|| c.pop()).collect()
}

fn word(label: u32, s: bool, ttl: u8) -> u32 {
    u32::from_be_bytes(lse(label, s, ttl))
}

fn host_ip(i: usize, net: [u8; 2], ttl: u8) -> Vec<u8> {
    ip4(
        a("10.1.0.2"),
        Ipv4Addr::new(net[0], net[1], 0, i as u8),
        ttl,
        1024 + i as u16,
        80,
    )
}

#[test]
fn swap_sample_has_both_stacks_output_next_hop_and_the_frame_as_it_leaves() {
    let mut ctl = router();
    let adj = ctl.adjacency(2, a("10.2.0.2")).unwrap();
    ctl.label_add(100, false, LabelAction::swap(adj, &[200]))
        .unwrap();
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(1, every(Directions::Rx)).unwrap();
    table.set(2, every(Directions::Tx)).unwrap();
    let ip = host_ip(1, [198, 18], 64);
    let f = eth(
        mac_r(0),
        HOST,
        None,
        ETH_MPLS,
        &labelled(&[(100, 64), (5000, 9)], &ip),
    );
    let res = run(&mut core, &mut h, &vec![f.clone(); 3], 0);
    assert!(res.iter().all(|(o, _)| *o == Out::Tx(1)));
    let recs = drain(&mut c);
    // Every packet twice: rx on ifIndex 1, tx on ifIndex 2.
    assert_eq!(recs.len(), 6);
    let want_in = [word(100, false, 64), word(5000, true, 9)];
    let want_out = [word(200, false, 63), word(5000, true, 9)];
    for r in &recs {
        assert_eq!(r.input, Interface::Index(1));
        assert_eq!(r.output, Interface::Index(2));
        assert_eq!(r.next_hop, Some(a("10.2.0.2").into()));
        assert_eq!(r.in_labels.as_slice(), want_in);
        assert_eq!(r.out_labels.as_slice(), want_out);
        assert_eq!(r.sampling_rate, 1);
        assert_eq!(r.drops, 0);
        assert_eq!(r.frame_len as usize, f.len());
        assert_eq!(r.header(), res[0].1.as_slice(), "the frame as it leaves");
    }
    let rx: Vec<_> = recs.iter().filter(|r| r.source == 1).collect();
    let tx: Vec<_> = recs.iter().filter(|r| r.source == 2).collect();
    assert_eq!((rx.len(), tx.len()), (3, 3));
    let pools = |v: &[&SampleRecord]| v.iter().map(|r| r.sample_pool).collect::<Vec<_>>();
    assert_eq!(pools(&rx), [1, 2, 3]);
    assert_eq!(pools(&tx), [1, 2, 3]);
}

#[test]
fn push_sample_has_no_in_stack_and_the_pushed_out_stack() {
    let mut ctl = router();
    route(&mut ctl, "198.20.0.0/16", &["10.2.0.2"], &[1000, 2000]);
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(2, every(Directions::Tx)).unwrap();
    let ip = host_ip(3, [198, 20], 64);
    let f = eth(mac_r(0), HOST, None, ETH_IP4, &ip);
    let res = run(&mut core, &mut h, &[f], 0);
    assert_eq!(res[0].0, Out::Tx(1));
    let recs = drain(&mut c);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert!(r.in_labels.is_empty());
    assert_eq!(
        r.out_labels.as_slice(),
        [word(1000, false, 63), word(2000, true, 63)]
    );
    assert_eq!(r.next_hop, Some(a("10.2.0.2").into()));
    assert_eq!(
        (r.input, r.output),
        (Interface::Index(1), Interface::Index(2))
    );
    assert_eq!(r.header(), res[0].1.as_slice());
}

#[test]
fn pop_and_lookup_keeps_the_received_stack() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    ctl.label_add(300, true, LabelAction::ip4_lookup(0))
        .unwrap();
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(1, every(Directions::Rx)).unwrap();
    let ip = host_ip(4, [198, 18], 64);
    let f = eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(&[(300, 20)], &ip));
    let res = run(&mut core, &mut h, &[f], 0);
    assert_eq!(res[0].0, Out::Tx(1));
    let r = &drain(&mut c)[0];
    assert_eq!(r.in_labels.as_slice(), [word(300, true, 20)]);
    assert!(r.out_labels.is_empty());
    assert_eq!(r.output, Interface::Index(2));
}

#[test]
fn drops_and_local_delivery_are_sampled_on_rx_with_their_fate() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(1, every(Directions::Both)).unwrap();
    let no_route = eth(mac_r(0), HOST, None, ETH_IP4, &host_ip(1, [203, 0], 64));
    let ttl_1 = eth(mac_r(0), HOST, None, ETH_IP4, &host_ip(1, [198, 18], 1));
    let mut to_us = host_ip(1, [198, 18], 64);
    to_us[16..20].copy_from_slice(&[10, 1, 0, 1]);
    ip_fix(&mut to_us);
    let ping = eth(mac_r(0), HOST, None, ETH_IP4, &to_us);
    run(&mut core, &mut h, &[no_route, ttl_1, ping], 0);
    let recs = drain(&mut c);
    // Only rx samples: drops never reach a tx sampler, and the ICMP errors the
    // router sends back out of ifIndex 1 are its own packets, not transit.
    let fates: Vec<_> = recs
        .iter()
        .map(|r| (r.input, r.output, r.next_hop))
        .collect();
    let i1 = Interface::Index(1);
    assert_eq!(
        fates,
        [
            (i1, Interface::Discarded(0), None),
            (i1, Interface::Discarded(Interface::DISCARD_TTL), None),
            (i1, Interface::Internal, None),
        ]
    );
}

/// A sample describes the packet as it was received (or, forwarded, as it
/// left): a ping to the router is sampled as the echo request with output
/// "internal", a packet dropped with an ICMP error as the dropped packet; what the
/// router sends itself (echo replies, ICMP errors) is neither counted in a tx
/// sampler's pool nor sampled on tx.
#[test]
fn local_traffic_is_sampled_as_received_and_never_as_transit() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(1, every(Directions::Both)).unwrap();
    let mut to_us = host_ip(1, [198, 18], 64);
    to_us[16..20].copy_from_slice(&[10, 1, 0, 1]);
    to_us[20] = 8; // ICMP echo request
    to_us[9] = 1;
    ip_fix(&mut to_us);
    let ping = eth(mac_r(0), HOST, None, ETH_IP4, &to_us);
    let ttl_1 = eth(mac_r(0), HOST, None, ETH_IP4, &host_ip(1, [198, 18], 1));
    let res = run(&mut core, &mut h, &[ping.clone(), ttl_1.clone()], 0);
    assert_eq!(res[0].0, Out::Tx(0), "the echo reply goes out");
    assert_eq!(res[1].0, Out::Tx(0), "the ICMP error goes out");
    let recs = drain(&mut c);
    assert_eq!(recs.len(), 2, "rx samples only: {recs:?}");
    let r = &recs[0];
    assert_eq!(
        (r.input, r.output, r.next_hop),
        (Interface::Index(1), Interface::Internal, None)
    );
    assert_eq!(
        &r.header()[..ping.len().min(64)],
        &ping[..ping.len().min(64)],
        "the request"
    );
    assert_eq!(r.frame_len as usize, ping.len());
    let r = &recs[1];
    assert_eq!(r.output, Interface::Discarded(Interface::DISCARD_TTL));
    assert_eq!(&r.header()[..64], &ttl_1[..64], "the dropped packet");
    assert_eq!(r.sample_pool, 2, "two received, none sent counted");
}

#[test]
fn off_costs_nothing_and_samples_nothing() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut core = core(&mut ctl);
    let (mut h, c, _table) = hook(16);
    let f = eth(mac_r(0), HOST, None, ETH_IP4, &host_ip(1, [198, 18], 64));
    let res = run(&mut core, &mut h, &vec![f; 257], 0);
    assert!(res.iter().all(|(o, _)| *o == Out::Tx(1)));
    assert!(c.is_empty());
    assert_eq!(h.sampler().counters().sampled(), 0);
}

#[test]
fn one_in_ten_over_many_vectors_is_within_bounds() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1 << 16);
    table
        .set(
            1,
            Some(Sampling {
                rate: 10,
                directions: Directions::Rx,
            }),
        )
        .unwrap();
    let f = eth(mac_r(0), HOST, None, ETH_IP4, &host_ip(1, [198, 18], 64));
    let frames = vec![f; 100 * BURST + 1];
    run(&mut core, &mut h, &frames, 0);
    let recs = drain(&mut c);
    let n = frames.len() as f64;
    // Uniform skips on [1, 19]: variance of the count ~ n/(3*10); 6 sigma.
    let sigma = (n / 30.0).sqrt();
    assert!(
        (recs.len() as f64 - n / 10.0).abs() < 6.0 * sigma,
        "{} samples of {n}",
        recs.len()
    );
    let last = recs.last().unwrap();
    assert!(last.sample_pool <= n as u64 && last.sample_pool + 19 > n as u64);
    assert!(recs.windows(2).all(|w| w[0].sample_pool < w[1].sample_pool));
}

/// A ring of 4 that nobody drains: forwarding is the same as without sFlow, the
/// worker counts the lost samples, and the agent's next datagrams report them.
#[test]
fn overload_ring_full_forwarding_unaffected_drops_reported() {
    let collector = UdpSocket::bind("127.0.0.1:0").unwrap();
    collector
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut cfg = AgentConfig::new(a("192.0.2.1").into());
    cfg.collectors = vec![collector.local_addr().unwrap().to_string()];
    cfg.ring_capacity = 4;
    cfg.seed = Some(1);
    cfg.interfaces.insert(
        1,
        Sampling {
            rate: 1,
            directions: Directions::Rx,
        },
    );
    let mut agent = Agent::new(cfg).unwrap();
    let mut h = SflowHook::new(agent.add_worker(0).unwrap());

    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    let mut plain = core(&mut ctl);
    let mut sampled = core(&mut ctl);
    let frames: Vec<Vec<u8>> = (0..257)
        .map(|i| eth(mac_r(0), HOST, None, ETH_IP4, &host_ip(i, [198, 18], 64)))
        .collect();
    let want = run(&mut plain, &mut hook(1).0, &frames, 0);
    let got = run(&mut sampled, &mut h, &frames, 0);
    assert_eq!(got, want, "forwarding unaffected");
    let st = &agent.stats().workers[0];
    assert_eq!(st.sampled, 257);
    assert_eq!(st.dropped, 253);
    assert_eq!(st.queued, 4);

    // The four queued samples go out; the next sample carries the drop count.
    agent.poll(Instant::now(), &mut NoCounters);
    agent.flush_all(Instant::now());
    run(&mut sampled, &mut h, &frames[..1], 0);
    agent.poll(Instant::now(), &mut NoCounters);
    agent.flush_all(Instant::now());
    let mut drops = Vec::new();
    let mut buf = [0u8; 65536];
    while drops.len() < 5 {
        let n = collector.recv(&mut buf).expect("datagram");
        let d = decode_datagram(&buf[..n]).unwrap();
        for s in d.samples.iter() {
            if let Sample::Flow(fs) = s {
                drops.push((fs.sample_pool, fs.drops));
            }
        }
    }
    assert_eq!(drops[..4], [(1, 0), (2, 0), (3, 0), (4, 0)]);
    assert_eq!(drops[4], (258, 253));
    assert_eq!(agent.stats().workers[0].exported, 5);
}

#[test]
fn mpls_datagram_carries_extended_mpls() {
    let collector = UdpSocket::bind("127.0.0.1:0").unwrap();
    collector
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut cfg = AgentConfig::new(a("192.0.2.1").into());
    cfg.collectors = vec![collector.local_addr().unwrap().to_string()];
    cfg.interfaces.insert(
        2,
        Sampling {
            rate: 1,
            directions: Directions::Tx,
        },
    );
    let mut agent = Agent::new(cfg).unwrap();
    let mut h = SflowHook::new(agent.add_worker(0).unwrap());
    let mut ctl = router();
    let adj = ctl.adjacency(2, a("10.2.0.2")).unwrap();
    ctl.label_add(100, true, LabelAction::swap(adj, &[200]))
        .unwrap();
    let mut core = core(&mut ctl);
    let ip = host_ip(1, [198, 18], 64);
    let f = eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(&[(100, 64)], &ip));
    run(&mut core, &mut h, &[f], 0);
    agent.poll(Instant::now(), &mut NoCounters);
    agent.flush_all(Instant::now());
    let mut buf = [0u8; 65536];
    let n = collector.recv(&mut buf).unwrap();
    let d = decode_datagram(&buf[..n]).unwrap();
    let Sample::Flow(fs) = &d.samples[0] else {
        panic!("not a flow sample: {:?}", d.samples[0]);
    };
    assert_eq!(
        (fs.input, fs.output),
        (Interface::Index(1), Interface::Index(2))
    );
    let mpls = fs
        .records
        .iter()
        .find_map(|r| match r {
            FlowRecord::ExtendedMpls(m) => Some(m.clone()),
            _ => None,
        })
        .expect("extended_mpls (1006)");
    assert_eq!(mpls.in_stack.as_ref(), [word(100, true, 64)]);
    assert_eq!(mpls.out_stack.as_ref(), [word(200, true, 63)]);
    assert_eq!(mpls.next_hop, sflow::Address::V4(a("10.2.0.2")));
}

/// The fast path fills only part of the metadata of what it forwards while sFlow
/// samples; the records must not tell: every packet of a mix (plain IPv4, push,
/// swap, penultimate-hop pop, pop + lookup, VLAN in and out (with a label too), a
/// TTL expiry, no route) is sampled on rx and tx by a core with the fast path and
/// one without, then a vector over two input ports, and the records are equal.
#[test]
fn fast_path_samples_match_the_general_path() {
    let mut ctl = router();
    route(&mut ctl, "198.18.0.0/16", &["10.2.0.2"], &[]);
    route(&mut ctl, "198.19.0.0/16", &["10.3.0.2"], &[1001, 1002]);
    route(&mut ctl, "198.20.0.0/16", &["10.200.0.2"], &[]);
    route(&mut ctl, "198.21.0.0/16", &["10.200.0.2"], &[1001]);
    let adj = ctl.adjacency(2, a("10.2.0.2")).unwrap();
    ctl.label_add(100, false, LabelAction::swap(adj, &[200]))
        .unwrap();
    let adj4 = ctl.adjacency(4, a("10.4.0.2")).unwrap();
    ctl.label_add(102, true, LabelAction::php(adj4)).unwrap();
    ctl.label_add(300, true, LabelAction::ip4_lookup(0))
        .unwrap();
    let mut frames = Vec::new();
    for i in 0..40 {
        let ip = |net: [u8; 2], ttl: u8| host_ip(i, net, ttl);
        frames.push(eth(mac_r(0), HOST, None, ETH_IP4, &ip([198, 18], 64)));
        frames.push(eth(mac_r(0), HOST, None, ETH_IP4, &ip([198, 19], 64)));
        frames.push(eth(mac_r(0), HOST, None, ETH_IP4, &ip([198, 20], 64)));
        frames.push(eth(mac_r(0), HOST, None, ETH_IP4, &ip([198, 21], 64)));
        frames.push(eth(mac_r(0), HOST, Some(100), ETH_IP4, &ip([198, 18], 64)));
        let mpls = |stack: &[(u32, u8)]| {
            eth(
                mac_r(0),
                HOST,
                None,
                ETH_MPLS,
                &labelled(stack, &ip([198, 18], 64)),
            )
        };
        frames.push(mpls(&[(100, 64), (5000, 9)]));
        frames.push(mpls(&[(102, 64)]));
        frames.push(mpls(&[(300, 20)]));
        frames.push(eth(mac_r(0), HOST, None, ETH_IP4, &ip([198, 18], 1)));
        frames.push(eth(mac_r(0), HOST, None, ETH_IP4, &ip([203, 0], 64)));
    }
    // Then a vector the fast path takes whole, over two input ports.
    let two_ports: Vec<(Vec<u8>, u16)> = (0..64)
        .map(|i| {
            let p = 2 * (i % 2) as u8;
            let ip = host_ip(i, [198, 18], 64);
            (eth(mac_r(p), HOST, None, ETH_IP4, &ip), u16::from(p))
        })
        .collect();
    // Every packet both ways; then 1 in 200 on rx over the frames 25 times, where
    // many vectors cannot pick (the fast path notes nothing for those) and some do.
    for (rate, rounds, directions) in [(1u32, 1usize, Directions::Both), (200, 25, Directions::Rx)]
    {
        let frames: Vec<Vec<u8>> = (0..rounds).flat_map(|_| frames.clone()).collect();
        let mut recs = Vec::new();
        let mut outs = Vec::new();
        for fast_path in [true, false] {
            let cfg = CoreConfig {
                fast_path,
                icmp_burst: u32::MAX,
                ..CoreConfig::default()
            };
            let mut core = ctl.new_core(cfg, tsc_hz()).0;
            let (mut h, mut c, table) = hook(4096);
            for ifindex in [1, 2, 3, 4, 5, 10, 11] {
                let s = Sampling { rate, directions };
                table.set(ifindex, Some(s)).unwrap();
            }
            let mut o = run(&mut core, &mut h, &frames, 0);
            for _ in 0..rounds {
                let mut pkts: Vec<VecPacket> = two_ports
                    .iter()
                    .map(|(f, p)| VecPacket::new(f, *p))
                    .collect();
                let mut out = vec![Out::Drop; pkts.len()];
                h.process(&mut core, &mut pkts, &mut out);
                o.extend(out.iter().zip(&pkts).map(|(o, p)| (*o, p.data().to_vec())));
            }
            outs.push(o);
            recs.push(drain(&mut c));
        }
        assert_eq!(outs[0], outs[1]);
        assert!(
            outs[0]
                .iter()
                .filter(|(o, _)| matches!(o, Out::Tx(_)))
                .count()
                >= 8 * 40 * rounds
        );
        if rate == 1 {
            // Rx: every frame once; tx: every forwarded one once more.
            assert!(
                recs[0].len() > frames.len() + 7 * 40 + 128,
                "{}",
                recs[0].len()
            );
            assert!(recs[0].iter().any(|r| r.input == Interface::Index(3)));
        } else {
            // About 11,600 / 200; labelled ones among them.
            assert!((25..=110).contains(&recs[0].len()), "{}", recs[0].len());
            assert!(recs[0].iter().any(|r| !r.in_labels.is_empty()));
        }
        assert_eq!(recs[0].len(), recs[1].len());
        for (k, (f, g)) in recs[0].iter().zip(&recs[1]).enumerate() {
            assert_eq!(f, g, "rate {rate}, record {k}");
        }
    }
}

/// A pseudowire's frames sampled on the circuit (rx) and on the core link
/// (tx) carry the circuit's ifIndex as input and the pushed stack (transport
/// over PW label); frames out of the pseudowire, sampled on the core link (rx),
/// carry the stack received and the circuit as output.
#[test]
fn pseudowire_samples_name_the_circuit_and_carry_the_stacks() {
    let mut ctl = router();
    ctl.del_address(5, a("10.5.0.1"), 24).unwrap();
    route(&mut ctl, "192.0.2.9/32", &["10.2.0.2"], &[1000]);
    let pw = dataplane::router::Pw {
        ac: 5,
        remote: a("192.0.2.9"),
        in_label: 500,
        out_label: 600,
        cw: true,
    };
    ctl.pw_add(dataplane::router::RouteSource::Dpctl, "c", pw)
        .unwrap();
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(5, every(Directions::Both)).unwrap();
    table.set(2, every(Directions::Both)).unwrap();
    let inner = eth(HOST, VNBR, Some(42), 0x88b5, &[7; 60]);
    let res = run(&mut core, &mut h, std::slice::from_ref(&inner), 4);
    assert_eq!(res[0].0, Out::Tx(1));
    let recs = drain(&mut c);
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r.input, Interface::Index(5), "{r:?}");
        assert_eq!(r.output, Interface::Index(2), "{r:?}");
        assert!(r.in_labels.is_empty(), "{r:?}");
        assert_eq!(
            r.out_labels.as_slice(),
            [word(1000, false, 255), word(600, true, 255)],
            "{r:?}"
        );
    }
    // Back: sampled on rx of the core link.
    let mut p = lse(500, true, 9).to_vec();
    p.extend([0; 4]);
    p.extend_from_slice(&inner);
    let f = eth(mac_r(1), mac_n(1), None, ETH_MPLS, &p);
    let res = run(&mut core, &mut h, &[f], 1);
    assert_eq!(res[0].0, Out::Tx(4));
    let recs = drain(&mut c);
    // rx on the core link, tx on the circuit
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r.input, Interface::Index(2), "{r:?}");
        assert_eq!(r.output, Interface::Index(5), "{r:?}");
        assert_eq!(r.in_labels.as_slice(), [word(500, true, 9)], "{r:?}");
    }
    assert_eq!(recs.iter().filter(|r| r.source == 5).count(), 1);
}

/// [`router`] with 2001:db8:7::/48 via the link-local neighbour fe80::2:2 on
/// port 1 (ifindex 2), which it returns.
fn router_with_ipv6_route() -> (RouterControl, std::net::Ipv6Addr) {
    let mut ctl = router();
    let ll: std::net::Ipv6Addr = "fe80::2:2".parse().unwrap();
    ctl.set_neighbor6(2, ll, mac_n(1)).unwrap();
    let p: fib::Ipv6Prefix = "2001:db8:7::/48".parse().unwrap();
    ctl.route_add(
        0,
        p,
        fib::RouteKind::Paths(vec![fib::Path::gateway6(ll, 2)]),
    )
    .unwrap();
    (ctl, ll)
}

/// Plain IPv6 forwarded with sampling on both sides (the fast path's IPv6
/// batch): every record names the output interface and the IPv6 next hop (a
/// link-local neighbour), and holds the frame as it leaves (hop limit 63).
#[test]
fn ipv6_samples_have_the_ipv6_next_hop_and_the_frame_as_it_leaves() {
    let (mut ctl, ll) = router_with_ipv6_route();
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(1, every(Directions::Rx)).unwrap();
    table.set(2, every(Directions::Tx)).unwrap();
    let frames: Vec<Vec<u8>> = (0..8)
        .map(|i| eth(mac_r(0), HOST, None, 0x86dd, &host_ip6(i, 7, 64, 80)))
        .collect();
    let res = run(&mut core, &mut h, &frames, 0);
    assert!(res.iter().all(|r| r.0 == Out::Tx(1)), "{:?}", res[0].0);
    let recs = drain(&mut c);
    assert_eq!(recs.len(), 16, "rx and tx of each");
    for r in &recs {
        assert_eq!(r.input, Interface::Index(1));
        assert_eq!(r.output, Interface::Index(2));
        assert_eq!(r.next_hop, Some(ll.into()));
        assert!(r.in_labels.is_empty() && r.out_labels.is_empty());
        assert_eq!(r.header()[14 + 7], 63, "hop limit as it leaves");
    }
    let rx: Vec<u64> = recs
        .iter()
        .filter(|r| r.source == 1)
        .map(|r| r.sample_pool)
        .collect();
    assert_eq!(rx, (1..=8).collect::<Vec<_>>());
}

/// 6PE at the ingress PE: an IPv6 route via the far PE's IPv4 address with its
/// label, over that address's LSP. The sample names the IPv4 neighbour the
/// packet leaves to and both pushed labels (TTL from the hop limit), and holds
/// the labelled frame as it leaves.
#[test]
fn six_pe_push_sample_has_the_ipv4_next_hop_and_both_labels() {
    let mut ctl = router();
    route(&mut ctl, "198.24.0.0/16", &["10.2.0.2"], &[1000]);
    let p: fib::Ipv6Prefix = "2001:db8:27::/48".parse().unwrap();
    let six_pe = fib::Path::gateway(a("198.24.0.1")).with_labels(&[600]);
    ctl.route_add(0, p, fib::RouteKind::Paths(vec![six_pe]))
        .unwrap();
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(1, every(Directions::Rx)).unwrap();
    table.set(2, every(Directions::Tx)).unwrap();
    let f = eth(mac_r(0), HOST, None, 0x86dd, &host_ip6(1, 0x27, 64, 80));
    let res = run(&mut core, &mut h, &[f], 0);
    assert_eq!(res[0].0, Out::Tx(1));
    let recs = drain(&mut c);
    assert_eq!(recs.len(), 2, "rx and tx");
    for r in &recs {
        assert!(r.in_labels.is_empty());
        assert_eq!(
            r.out_labels.as_slice(),
            [word(1000, false, 63), word(600, true, 63)]
        );
        assert_eq!(r.next_hop, Some(a("10.2.0.2").into()));
        assert_eq!(
            (r.input, r.output),
            (Interface::Index(1), Interface::Index(2))
        );
        assert_eq!(r.header(), res[0].1.as_slice());
        assert_eq!(r.header()[12..14], [0x88, 0x47]);
    }
}

/// The egress PE: a label popped into an IPv6 lookup. The sample keeps the
/// received stack, names the IPv6 neighbour and holds the IPv6 frame as it
/// leaves.
#[test]
fn pop_into_ipv6_sample_keeps_the_received_stack_and_the_ipv6_next_hop() {
    let (mut ctl, ll) = router_with_ipv6_route();
    ctl.label_add(303, true, LabelAction::ip6_lookup(0))
        .unwrap();
    let mut core = core(&mut ctl);
    let (mut h, mut c, table) = hook(1024);
    table.set(1, every(Directions::Rx)).unwrap();
    table.set(2, every(Directions::Tx)).unwrap();
    let frames: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            let ip = host_ip6(i, 7, 64, 80);
            eth(mac_r(0), HOST, None, ETH_MPLS, &labelled(&[(303, 20)], &ip))
        })
        .collect();
    let res = run(&mut core, &mut h, &frames, 0);
    assert!(res.iter().all(|r| r.0 == Out::Tx(1)), "{:?}", res[0].0);
    let recs = drain(&mut c);
    assert_eq!(recs.len(), 8, "rx and tx of each");
    for r in &recs {
        assert_eq!(r.in_labels.as_slice(), [word(303, true, 20)]);
        assert!(r.out_labels.is_empty());
        assert_eq!(r.next_hop, Some(ll.into()));
        assert_eq!(r.output, Interface::Index(2));
        assert_eq!(r.header()[12..14], [0x86, 0xdd]);
        // (uniform: the label's TTL, less this hop)
        assert_eq!(r.header()[14 + 7], 19, "hop limit as it leaves");
    }
}
