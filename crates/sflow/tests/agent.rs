//! The agent end to end over loopback: workers sample MPLS traffic, the agent sends
//! datagrams to a UDP socket bound in the test, the test decodes what arrives.
//! Also: bad configuration, counter polling, overload reporting, datagram sizes,
//! flush timing, IPv6.

mod common;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::*;
use sflow::*;

const AGENT: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10));

fn collector() -> (UdpSocket, String) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_nonblocking(true).unwrap();
    let a = s.local_addr().unwrap().to_string();
    (s, a)
}

fn recv_all(s: &UdpSocket, out: &mut Vec<Vec<u8>>) {
    let mut buf = vec![0u8; 70_000];
    loop {
        match s.recv(&mut buf) {
            Ok(n) => out.push(buf[..n].to_vec()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) => panic!("recv: {e}"),
        }
    }
}

fn config(collectors: &[&str], ifaces: &[(u32, u32, Directions)]) -> AgentConfig {
    let mut c = AgentConfig::new(AGENT);
    c.collectors = collectors.iter().map(|s| s.to_string()).collect();
    c.seed = Some(7);
    c.polling_interval = Duration::ZERO;
    for &(i, rate, directions) in ifaces {
        c.interfaces.insert(i, Sampling { rate, directions });
    }
    c
}

/// MPLS traffic from ifIndex 1 to ifIndex 2: in-stack [100, 200], swapped to [300,
/// 200]; packet `i` has a 40 + i % 200 byte payload.
fn mpls_packets(n: usize) -> Vec<TestPacket> {
    let in_labels = vec![lse(100, 0, false, 64), lse(200, 0, true, 64)];
    let out_labels = vec![lse(300, 0, false, 63), lse(200, 0, true, 64)];
    (0..n)
        .map(|i| TestPacket {
            frame: frame(
                &in_labels,
                Ipv4Addr::new(10, 0, 0, (i % 250) as u8 + 1),
                Ipv4Addr::new(10, 0, 1, 1),
                40 + i % 200,
            ),
            rx_if: 1,
            tx_if: 2,
            next_hop: Some(Ipv4Addr::new(192, 168, 11, 10).into()),
            in_labels: in_labels.clone(),
            out_labels: out_labels.clone(),
        })
        .collect()
}

fn flows(d: &Datagram<'_>) -> Vec<FlowSample<'static>> {
    d.samples
        .iter()
        .filter_map(|s| match s {
            Sample::Flow(f) => Some(owned_flow(f)),
            _ => None,
        })
        .collect()
}

/// A copy that does not borrow the datagram bytes (headers become empty; tests
/// that look at headers do so on the borrowed form).
fn owned_flow(f: &FlowSample<'_>) -> FlowSample<'static> {
    let records: Vec<FlowRecord<'static>> = f
        .records
        .iter()
        .map(|r| match r {
            FlowRecord::SampledHeader(h) => {
                FlowRecord::SampledHeader(SampledHeader { header: &[], ..*h })
            }
            FlowRecord::ExtendedSwitch(s) => FlowRecord::ExtendedSwitch(*s),
            FlowRecord::ExtendedRouter(r) => FlowRecord::ExtendedRouter(*r),
            FlowRecord::ExtendedMpls(m) => FlowRecord::ExtendedMpls(ExtendedMpls {
                next_hop: m.next_hop,
                in_stack: std::borrow::Cow::Owned(m.in_stack.to_vec()),
                out_stack: std::borrow::Cow::Owned(m.out_stack.to_vec()),
            }),
            FlowRecord::Unknown { format, .. } => FlowRecord::Unknown {
                format: *format,
                data: &[],
            },
        })
        .collect();
    FlowSample {
        records: std::borrow::Cow::Owned(records),
        ..f.clone()
    }
}

#[test]
fn loopback_end_to_end_with_two_workers() {
    let (sock, addr) = collector();
    let cfg = config(
        &[&addr],
        &[(1, 10, Directions::Rx), (2, 10, Directions::Tx)],
    );
    let mut agent = Agent::new(cfg).unwrap();
    let mut workers = [agent.add_worker(0).unwrap(), agent.add_worker(1).unwrap()];
    let mut picks = Picks::new();
    let pkts = mpls_packets(BURST);
    let mut got = Vec::new();
    let vectors = 80; // 20480 packets per worker and direction
    let t0 = agent.start_time();
    for v in 0..vectors {
        for w in workers.iter_mut() {
            run_vector(w, &mut picks, &pkts);
        }
        agent.poll(t0 + Duration::from_millis(v), &mut NoCounters);
        recv_all(&sock, &mut got);
    }
    agent.flush_all(t0 + Duration::from_millis(vectors));
    recv_all(&sock, &mut got);

    let packets = vectors * BURST as u64;
    let mut dgram_seq: BTreeMap<u32, u32> = BTreeMap::new();
    // (sub-agent, source) -> (last flow seq, last pool, samples)
    let mut per_source: BTreeMap<(u32, u32), (u32, u32, u64)> = BTreeMap::new();
    let mut last_uptime = 0;
    let mut per_worker = [0u64; 2];
    for b in &got {
        assert!(b.len() <= DEFAULT_MAX_DATAGRAM_BYTES, "{} bytes", b.len());
        let d = decode_datagram(b).unwrap();
        assert_eq!(
            d.header.agent_address,
            Address::V4(Ipv4Addr::new(192, 0, 2, 10))
        );
        let sub = d.header.sub_agent_id;
        assert!(sub < 2);
        let prev = dgram_seq.insert(sub, d.header.sequence_number).unwrap_or(0);
        assert_eq!(
            d.header.sequence_number,
            prev + 1,
            "datagram sequence of sub-agent {sub}"
        );
        assert!(d.header.uptime_ms >= last_uptime);
        last_uptime = d.header.uptime_ms;
        for s in d.samples.iter() {
            let Sample::Flow(f) = s else {
                panic!("only flow samples expected: {s:?}")
            };
            per_worker[sub as usize] += 1;
            let src = f.source_id.index;
            assert_eq!(f.source_id.class, 0);
            let e = per_source.entry((sub, src)).or_insert((0, 0, 0));
            assert_eq!(f.sequence_number, e.0 + 1, "flow sequence of {sub}/{src}");
            assert!(f.sample_pool > e.1, "pool grows");
            assert!(u64::from(f.sample_pool) <= packets);
            *e = (f.sequence_number, f.sample_pool, e.2 + 1);
            assert_eq!(f.sampling_rate, 10);
            assert_eq!(f.drops, 0);
            assert_eq!(f.input, Interface::Index(1));
            assert_eq!(f.output, Interface::Index(2));
            assert!(!f.expanded);
            assert_eq!(f.records.len(), 4);
            let FlowRecord::SampledHeader(h) = &f.records[0] else {
                panic!("sampled_header first")
            };
            assert_eq!(h.protocol, HeaderProtocol::Ethernet);
            assert_eq!(h.stripped, 4);
            // One of the packets sent, its first 128 bytes, its length plus FCS.
            let pkt = pkts
                .iter()
                .find(|p| {
                    p.frame.len() as u32 + 4 == h.frame_length
                        && h.header == &p.frame[..128.min(p.frame.len())]
                })
                .expect("the header and length of a packet sent");
            assert_eq!(
                f.records[1],
                FlowRecord::ExtendedSwitch(ExtendedSwitch::default())
            );
            assert_eq!(
                f.records[2],
                FlowRecord::ExtendedRouter(ExtendedRouter {
                    next_hop: Address::V4(Ipv4Addr::new(192, 168, 11, 10)),
                    src_mask_len: 0,
                    dst_mask_len: 24,
                })
            );
            let FlowRecord::ExtendedMpls(m) = &f.records[3] else {
                panic!("extended_mpls last")
            };
            assert_eq!(m.next_hop, Address::V4(Ipv4Addr::new(192, 168, 11, 10)));
            assert_eq!(&m.in_stack[..], &pkt.in_labels[..]);
            assert_eq!(&m.out_stack[..], &pkt.out_labels[..]);
        }
    }
    // Rx samples come from source 1, tx samples from source 2, per worker.
    assert_eq!(per_source.len(), 4, "{per_source:?}");
    let lo = packets / 10 - packets / 50;
    let hi = packets / 10 + packets / 50;
    for (&(sub, src), &(_, _, n)) in &per_source {
        assert!(
            (lo..=hi).contains(&n),
            "{sub}/{src}: {n} samples of {packets}"
        );
    }
    let stats = agent.stats();
    assert_eq!(stats.workers.len(), 2);
    for (i, w) in stats.workers.iter().enumerate() {
        assert_eq!(w.worker, i as u32);
        assert_eq!(w.dropped, 0);
        assert_eq!(w.queued, 0);
        assert_eq!(w.sampled, per_worker[i]);
        assert_eq!(w.exported, per_worker[i]);
        assert_eq!(workers[i].counters().exported(), per_worker[i]);
    }
    assert_eq!(stats.datagrams, got.len() as u64);
    assert_eq!(stats.send_errors, 0);
    assert_eq!(stats.flow_samples, per_worker[0] + per_worker[1]);
    let sources = agent.sources();
    assert_eq!(sources.len(), 4);
    assert!(
        sources
            .iter()
            .all(|s| s.sampling_rate == 10 && s.flow_samples > 0)
    );
}

#[test]
fn ring_overload_is_reported_in_the_next_datagram() {
    let (sock, addr) = collector();
    let mut cfg = config(&[&addr], &[(1, 1, Directions::Rx)]);
    cfg.ring_capacity = 8;
    let mut agent = Agent::new(cfg).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    let mut picks = Picks::new();
    let pkts = mpls_packets(100);
    // The agent does not drain while the worker samples 100 packets at 1:1: the
    // worker never waits, 8 samples fit, 92 are dropped and counted.
    let (taken, queued) = run_vector(&mut w, &mut picks, &pkts);
    assert_eq!((taken, queued), (100, 8));
    assert_eq!(w.counters().dropped(), 92);
    let t0 = agent.start_time();
    agent.poll(t0, &mut NoCounters);
    agent.flush_all(t0);
    // Next vector: the first sample carries the drops.
    run_vector(&mut w, &mut picks, &pkts[..3]);
    agent.poll(t0, &mut NoCounters);
    agent.flush_all(t0);
    let mut got = Vec::new();
    recv_all(&sock, &mut got);
    let samples: Vec<FlowSample<'_>> = got
        .iter()
        .flat_map(|b| flows(&decode_datagram(b).unwrap()))
        .collect();
    assert_eq!(samples.len(), 11);
    assert!(samples[..8].iter().all(|f| f.drops == 0));
    assert!(samples[8..].iter().all(|f| f.drops == 92));
    // Sequence numbers have no gap (drops are reported, not skipped); the pool
    // counts every packet, sampled or lost.
    let seqs: Vec<u32> = samples.iter().map(|f| f.sequence_number).collect();
    assert_eq!(seqs, (1..=11).collect::<Vec<u32>>());
    assert_eq!(samples[8].sample_pool, 101);
    let st = agent.stats();
    assert_eq!(st.workers[0].sampled, 103);
    assert_eq!(st.workers[0].dropped, 92);
    assert_eq!(st.workers[0].exported, 11);
}

#[test]
fn datagrams_split_at_the_configured_size() {
    for max in [DEFAULT_MAX_DATAGRAM_BYTES, 600, 9000] {
        let (sock, addr) = collector();
        let mut cfg = config(&[&addr], &[(1, 1, Directions::Rx)]);
        cfg.max_datagram_bytes = max;
        let mut agent = Agent::new(cfg).unwrap();
        let mut w = agent.add_worker(0).unwrap();
        let mut picks = Picks::new();
        // 150-byte frames: sampled header 128, so every sample is the same size.
        let pkts: Vec<TestPacket> = mpls_packets(200)
            .into_iter()
            .map(|mut p| {
                p.frame.resize(150, 0);
                p
            })
            .collect();
        run_vector(&mut w, &mut picks, &pkts);
        let t0 = agent.start_time();
        agent.poll(t0, &mut NoCounters);
        agent.flush_all(t0);
        let mut got = Vec::new();
        recv_all(&sock, &mut got);
        // flow sample: tag 8 + 32 + header record 8+16+128 + switch 24 + router 24 +
        // mpls 8+8+4+8+4+8 = 280 bytes.
        let per = (max - 28) / 280;
        assert_eq!(got.len(), 200usize.div_ceil(per), "max {max}");
        let mut n = 0;
        for b in &got {
            assert!(b.len() <= max);
            let d = decode_datagram(b).unwrap();
            assert!(d.samples.len() <= per);
            n += d.samples.len();
        }
        assert_eq!(n, 200);
    }
}

#[test]
fn partial_datagrams_wait_for_the_flush_delay() {
    let (sock, addr) = collector();
    let mut cfg = config(&[&addr], &[(1, 1, Directions::Rx)]);
    cfg.flush_delay = Duration::from_millis(500);
    let mut agent = Agent::new(cfg).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    let mut picks = Picks::new();
    run_vector(&mut w, &mut picks, &mpls_packets(1));
    let t0 = agent.start_time() + Duration::from_secs(1);
    let r = agent.poll(t0, &mut NoCounters);
    assert_eq!((r.samples, r.datagrams), (1, 0));
    assert_eq!(agent.next_deadline(), Some(t0 + Duration::from_millis(500)));
    let r = agent.poll(t0 + Duration::from_millis(499), &mut NoCounters);
    assert_eq!(r.datagrams, 0);
    let r = agent.poll(t0 + Duration::from_millis(500), &mut NoCounters);
    assert_eq!(r.datagrams, 1);
    assert_eq!(agent.next_deadline(), None);
    let mut got = Vec::new();
    recv_all(&sock, &mut got);
    let d = decode_datagram(&got[0]).unwrap();
    assert_eq!(d.header.uptime_ms, 1500);
}

#[test]
fn counter_samples_every_polling_interval() {
    let (sock, addr) = collector();
    let mut cfg = config(&[&addr], &[]);
    cfg.polling_interval = DEFAULT_POLLING_INTERVAL;
    cfg.counters_sub_agent = 9;
    let mut agent = Agent::new(cfg).unwrap();
    let mut polls = 0u64;
    let mut src = |out: &mut Vec<InterfaceCounters>| {
        polls += 1;
        for i in [1u32, 2] {
            let mut g = IfCounters::ethernet(i, 10_000_000_000, true, i == 1);
            g.in_octets = 1000 * u64::from(i) * polls;
            g.in_ucast_pkts = 10 * i;
            g.out_octets = 5_000_000_000;
            g.out_discards = 3;
            out.push(InterfaceCounters {
                generic: g,
                ethernet: (i == 1).then_some(EthernetCounters {
                    fcs_errors: 4,
                    ..EthernetCounters::UNKNOWN
                }),
            });
        }
    };
    let t0 = agent.start_time();
    let mut got = Vec::new();
    let mut n = Vec::new();
    for s in [0u64, 1, 19, 20, 39, 40, 41, 100] {
        let now = t0 + Duration::from_secs(s);
        let r = agent.poll(now, &mut src);
        agent.flush_all(now);
        n.push(r.counter_samples);
    }
    // Due at 0, 20, 40; at 100 it is late and polls once (not three times).
    assert_eq!(n, [2, 0, 0, 2, 0, 2, 0, 2]);
    recv_all(&sock, &mut got);
    assert_eq!(got.len(), 4);
    for (k, b) in got.iter().enumerate() {
        let d = decode_datagram(b).unwrap();
        assert_eq!(d.header.sub_agent_id, 9);
        assert_eq!(d.header.sequence_number, k as u32 + 1);
        assert_eq!(d.samples.len(), 2);
        for (j, s) in d.samples.iter().enumerate() {
            let Sample::Counters(c) = s else {
                panic!("{s:?}")
            };
            let i = j as u32 + 1;
            assert_eq!(c.source_id, DataSource::ifindex(i));
            assert_eq!(c.sequence_number, k as u32 + 1);
            let CounterRecord::Generic(g) = &c.records[0] else {
                panic!()
            };
            assert_eq!(g.if_index, i);
            assert_eq!(g.if_type, 6);
            assert_eq!(g.if_speed, 10_000_000_000);
            assert_eq!(g.if_status, if i == 1 { 3 } else { 1 });
            assert_eq!(g.in_octets, 1000 * u64::from(i) * (k as u64 + 1));
            assert_eq!(g.in_ucast_pkts, 10 * i);
            assert_eq!(g.out_octets, 5_000_000_000);
            assert_eq!(g.out_discards, 3);
            assert_eq!(g.in_errors, u32::MAX, "unavailable = all ones");
            if i == 1 {
                assert_eq!(c.records.len(), 2);
                let CounterRecord::Ethernet(e) = &c.records[1] else {
                    panic!()
                };
                assert_eq!(e.fcs_errors, 4);
                assert_eq!(e.alignment_errors, u32::MAX);
            } else {
                assert_eq!(c.records.len(), 1);
            }
        }
    }
    assert_eq!(agent.stats().counter_samples, 8);
}

#[test]
fn bad_config_is_refused_and_changes_nothing() {
    let (_sock, addr) = collector();
    let ok = config(&[&addr], &[(1, 100, Directions::Both)]);
    let rate0 = config(&[&addr], &[(1, 0, Directions::Rx)]);
    assert!(matches!(
        Agent::new(rate0),
        Err(ConfigError::ZeroRate { ifindex: 1 })
    ));
    for n in [0, 63, 257, 1024] {
        let mut c = ok.clone();
        c.header_bytes = n;
        assert!(matches!(Agent::new(c), Err(ConfigError::HeaderBytes(x)) if x == n));
    }
    for n in [64, 256] {
        let mut c = ok.clone();
        c.header_bytes = n;
        assert!(Agent::new(c).is_ok());
    }
    for bad in [
        "no-such-host.invalid",
        "no-such-host.invalid:6343",
        "10.0.0.1:0",
        "[::1",
        "",
        "0.0.0.0",
        "::1:x:y",
    ] {
        let mut c = ok.clone();
        c.collectors.push(bad.to_string());
        let e = Agent::new(c).unwrap_err();
        assert!(matches!(e, ConfigError::Collector { .. }), "{bad}: {e}");
        assert!(e.to_string().contains("collector"), "{e}");
    }
    let mut c = ok.clone();
    c.agent_address = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    assert!(matches!(Agent::new(c), Err(ConfigError::AgentAddress(_))));
    let mut c = ok.clone();
    c.max_datagram_bytes = 300;
    assert!(matches!(
        Agent::new(c),
        Err(ConfigError::DatagramSize { .. })
    ));
    let mut c = ok.clone();
    c.interfaces.insert(
        MAX_IFINDEX + 1,
        Sampling {
            rate: 1,
            directions: Directions::Rx,
        },
    );
    assert!(matches!(Agent::new(c), Err(ConfigError::IfIndex { .. })));

    // At run time: each failed request leaves everything as it was.
    let mut agent = Agent::new(ok.clone()).unwrap();
    let before = agent.config().clone();
    let collectors = agent.collectors().to_vec();
    assert!(agent.add_collector("no-such-host.invalid").is_err());
    assert!(agent.set_header_bytes(300).is_err());
    assert!(agent.set_header_bytes(32).is_err());
    assert!(
        agent
            .set_sampling(
                1,
                Some(Sampling {
                    rate: 0,
                    directions: Directions::Rx
                })
            )
            .is_err()
    );
    assert!(agent.set_sampling(0, None).is_err());
    assert!(
        agent
            .set_agent_address(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
            .is_err()
    );
    assert!(agent.set_max_datagram_bytes(100).is_err());
    assert!(agent.set_max_datagram_bytes(100_000).is_err());
    assert!(matches!(
        agent.remove_collector("127.0.0.1:1"),
        Err(ConfigError::NoSuchCollector(_))
    ));
    let mut bad = ok.clone();
    bad.header_bytes = 20;
    bad.collectors.push("192.0.2.99".into());
    assert!(agent.reconfigure(bad).is_err());
    let mut bad = ok.clone();
    bad.collectors.push("no-such-host.invalid".into());
    bad.interfaces.clear();
    assert!(agent.reconfigure(bad).is_err());
    assert_eq!(agent.config(), &before);
    assert_eq!(agent.collectors(), &collectors[..]);
    assert_eq!(
        agent.table().get(1),
        Some(Sampling {
            rate: 100,
            directions: Directions::Both
        })
    );
    assert_eq!(agent.table().header_bytes(), DEFAULT_HEADER_BYTES);
    // A header size the datagram cannot carry with a small datagram limit.
    agent.set_max_datagram_bytes(400).unwrap();
    assert!(matches!(
        agent.set_header_bytes(256),
        Err(ConfigError::DatagramSize { .. })
    ));
    assert_eq!(agent.table().header_bytes(), DEFAULT_HEADER_BYTES);
    // Duplicate workers.
    let _w = agent.add_worker(0).unwrap();
    assert!(matches!(
        agent.add_worker(0),
        Err(ConfigError::DuplicateWorker(0))
    ));
    // A channel built on another table cannot be attached.
    let other = std::sync::Arc::new(SamplingTable::new());
    let (_s, c) = channel(5, other, 16, 0).unwrap();
    assert!(matches!(agent.attach(c), Err(ConfigError::ForeignTable(5))));
}

#[test]
fn runtime_changes_apply() {
    let (sock, addr) = collector();
    let (sock2, addr2) = collector();
    let mut agent = Agent::new(config(&[&addr], &[])).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    let mut picks = Picks::new();
    let pkts = mpls_packets(10);
    // Not sampling yet.
    run_vector(&mut w, &mut picks, &pkts);
    assert_eq!(w.counters().sampled(), 0);
    agent
        .set_sampling(
            1,
            Some(Sampling {
                rate: 1,
                directions: Directions::Rx,
            }),
        )
        .unwrap();
    agent.set_header_bytes(64).unwrap();
    let added = agent.add_collector(&addr2).unwrap();
    assert_eq!(added, addr2.parse::<SocketAddr>().unwrap());
    // Adding it again changes nothing.
    agent.add_collector(&addr2).unwrap();
    assert_eq!(agent.collectors().len(), 2);
    run_vector(&mut w, &mut picks, &pkts);
    assert_eq!(w.counters().sampled(), 10);
    let t0 = agent.start_time();
    agent.poll(t0, &mut NoCounters);
    agent.flush_all(t0);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    recv_all(&sock, &mut a);
    recv_all(&sock2, &mut b);
    assert_eq!(a, b, "every collector gets every datagram");
    let samples: Vec<_> = a.iter().map(|x| decode_datagram(x).unwrap()).collect();
    let n: usize = samples.iter().map(|d| d.samples.len()).sum();
    assert_eq!(n, 10);
    for d in &samples {
        for s in d.samples.iter() {
            let Sample::Flow(f) = s else { panic!() };
            let FlowRecord::SampledHeader(h) = &f.records[0] else {
                panic!()
            };
            assert_eq!(h.header.len(), 64);
        }
    }
    // Remove one, disable sampling.
    agent.remove_collector(&addr2).unwrap();
    agent.set_sampling(1, None).unwrap();
    run_vector(&mut w, &mut picks, &pkts);
    assert_eq!(w.counters().sampled(), 10);
    assert_eq!(agent.config().collectors, vec![addr.clone()]);
    assert!(agent.config().interfaces.is_empty());
    // A full reconfigure (config reload).
    let mut cfg = agent.config().clone();
    cfg.interfaces.insert(
        1,
        Sampling {
            rate: 2,
            directions: Directions::Rx,
        },
    );
    cfg.header_bytes = 256;
    agent.reconfigure(cfg).unwrap();
    assert_eq!(agent.table().header_bytes(), 256);
    assert_eq!(agent.table().get(1).unwrap().rate, 2);
    // Detach flushes what is left.
    run_vector(&mut w, &mut picks, &pkts);
    let queued = w.counters().sampled() - 10;
    assert!(queued > 0);
    let _ = agent.detach(0).unwrap();
    let mut c = Vec::new();
    recv_all(&sock, &mut c);
    let n: usize = c
        .iter()
        .map(|x| decode_datagram(x).unwrap().samples.len())
        .sum();
    assert_eq!(n as u64, queued);
}

#[test]
fn without_collectors_rings_are_still_drained() {
    let mut agent = Agent::new(config(&[], &[(1, 1, Directions::Rx)])).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    let mut picks = Picks::new();
    let pkts = mpls_packets(BURST);
    for _ in 0..20 {
        run_vector(&mut w, &mut picks, &pkts);
        agent.poll(Instant::now(), &mut NoCounters);
    }
    let st = agent.stats();
    assert_eq!(st.workers[0].dropped, 0);
    assert_eq!(st.unsent_samples, 20 * BURST as u64);
    assert_eq!(st.datagrams, 0);
}

#[test]
fn drain_is_bounded_per_poll() {
    let (sock, addr) = collector();
    let mut cfg = config(&[&addr], &[(1, 1, Directions::Rx)]);
    cfg.drain_budget = 100;
    let mut agent = Agent::new(cfg).unwrap();
    let mut w0 = agent.add_worker(0).unwrap();
    let mut w1 = agent.add_worker(1).unwrap();
    let mut picks = Picks::new();
    let pkts = mpls_packets(BURST);
    run_vector(&mut w0, &mut picks, &pkts);
    run_vector(&mut w1, &mut picks, &pkts);
    let t0 = agent.start_time();
    let mut got = Vec::new();
    let r = agent.poll(t0, &mut NoCounters);
    recv_all(&sock, &mut got);
    assert_eq!(r.samples, 100);
    assert!(r.more);
    // Both workers got a share.
    let st = agent.stats();
    assert!(st.workers.iter().all(|w| w.queued < BURST as u64));
    let mut total = 100;
    loop {
        let r = agent.poll(t0, &mut NoCounters);
        recv_all(&sock, &mut got);
        total += r.samples;
        if !r.more {
            break;
        }
    }
    assert_eq!(total, 2 * BURST);
    agent.flush_all(t0);
    recv_all(&sock, &mut got);
    let n: usize = got
        .iter()
        .map(|x| decode_datagram(x).unwrap().samples.len())
        .sum();
    assert_eq!(n, 2 * BURST);
}

/// The export limit: a bucket of one second's worth, refilled with time; what it
/// holds back waits in the ring (or, when the ring is full, the worker drops and
/// counts it); 0 lifts it.
#[test]
fn export_limit_caps_samples_per_second() {
    let (sock, addr) = collector();
    let mut cfg = config(&[&addr], &[(1, 1, Directions::Rx)]);
    cfg.max_samples_per_second = 200;
    cfg.ring_capacity = 2 * BURST;
    let mut agent = Agent::new(cfg).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    let mut picks = Picks::new();
    let pkts = mpls_packets(BURST);
    for _ in 0..3 {
        run_vector(&mut w, &mut picks, &pkts);
    }
    // (the third vector found the ring full)
    assert_eq!(agent.stats().workers[0].dropped, BURST as u64);
    let t0 = agent.start_time();
    let ms = Duration::from_millis;
    let mut got = Vec::new();
    let mut take = |agent: &mut Agent, at: Instant| {
        let r = agent.poll(at, &mut NoCounters);
        recv_all(&sock, &mut got);
        assert!(!r.more);
        r.samples
    };
    assert_eq!(take(&mut agent, t0), 200);
    assert_eq!(take(&mut agent, t0), 0);
    assert_eq!(take(&mut agent, t0 + ms(500)), 100);
    assert_eq!(take(&mut agent, t0 + ms(520)), 4);
    // Idle for long: still one second's worth at most.
    assert_eq!(take(&mut agent, t0 + ms(10_000)), 200);
    run_vector(&mut w, &mut picks, &pkts);
    assert_eq!(take(&mut agent, t0 + ms(10_000)), 0);
    agent.set_max_samples_per_second(0);
    assert_eq!(agent.config().max_samples_per_second, 0);
    assert_eq!(take(&mut agent, t0 + ms(10_000)), 8 + BURST);
    assert_eq!(agent.stats().workers[0].dropped, BURST as u64);
    agent.flush_all(t0 + ms(10_000));
    recv_all(&sock, &mut got);
    let n: usize = got
        .iter()
        .map(|x| decode_datagram(x).unwrap().samples.len())
        .sum();
    assert_eq!(n, 3 * BURST);
}

#[test]
fn ipv6_agent_and_collector() {
    let Ok(sock) = UdpSocket::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback here; skipping");
        return;
    };
    sock.set_nonblocking(true).unwrap();
    let addr = sock.local_addr().unwrap().to_string();
    let mut cfg = config(&[&addr], &[(3, 1, Directions::Tx)]);
    cfg.agent_address = "2001:db8::10".parse().unwrap();
    let mut agent = Agent::new(cfg).unwrap();
    let mut w = agent.add_worker(2).unwrap();
    let mut picks = Picks::new();
    let mut pkts = mpls_packets(5);
    for p in &mut pkts {
        p.tx_if = 3;
    }
    run_vector(&mut w, &mut picks, &pkts);
    let t0 = agent.start_time();
    agent.poll(t0, &mut NoCounters);
    agent.flush_all(t0);
    let mut got = Vec::new();
    recv_all(&sock, &mut got);
    assert_eq!(got.len(), 1);
    let d = decode_datagram(&got[0]).unwrap();
    assert_eq!(
        d.header.agent_address,
        Address::V6("2001:db8::10".parse().unwrap())
    );
    assert_eq!(d.header.sub_agent_id, 2);
    assert_eq!(d.samples.len(), 5);
    for s in d.samples.iter() {
        let Sample::Flow(f) = s else { panic!() };
        assert_eq!(f.source_id, DataSource::ifindex(3));
        assert_eq!(f.output, Interface::Index(3));
    }
}

/// The router's answer to `mask_lengths` is what extended_router carries.
#[test]
fn the_router_fills_in_the_route_masks() {
    struct Masks;
    impl CounterSource for Masks {
        fn poll_counters(&mut self, _: &mut Vec<InterfaceCounters>) {}
        fn mask_lengths(&mut self, rec: &SampleRecord) -> Option<(u8, u8)> {
            assert_eq!(rec.dst_mask_len, 24, "the worker's record comes first");
            Some((16, 8))
        }
    }
    let (sock, addr) = collector();
    let mut agent = Agent::new(config(&[&addr], &[(1, 1, Directions::Rx)])).unwrap();
    let mut w = agent.add_worker(0).unwrap();
    run_vector(&mut w, &mut Picks::new(), &mpls_packets(4));
    let t0 = agent.start_time();
    agent.poll(t0, &mut Masks);
    agent.flush_all(t0);
    let mut got = Vec::new();
    recv_all(&sock, &mut got);
    let flows: Vec<_> = got
        .iter()
        .flat_map(|b| flows(&decode_datagram(b).unwrap()))
        .collect();
    assert_eq!(flows.len(), 4);
    for f in flows {
        let masks = f.records.iter().find_map(|r| match r {
            FlowRecord::ExtendedRouter(e) => Some((e.src_mask_len, e.dst_mask_len)),
            _ => None,
        });
        assert_eq!(masks, Some((16, 8)));
    }
}
