//! The worker side: skip statistics (deterministic seeds), exact sample pools,
//! per-interface and per-direction sampling over mixed vectors, configuration
//! changes, and the ring (a full ring never blocks, drops are counted and carried
//! by the next sample).

mod common;

use std::net::Ipv4Addr;
use std::sync::Arc;

use common::*;
use sflow::*;

fn table_with(ifaces: &[(u32, u32, Directions)]) -> Arc<SamplingTable> {
    let t = Arc::new(SamplingTable::new());
    for &(i, rate, directions) in ifaces {
        t.set(i, Some(Sampling { rate, directions })).unwrap();
    }
    t
}

fn sampler(t: &Arc<SamplingTable>, cap: usize, seed: u64) -> (WorkerSampler, SampleConsumer) {
    let (mut s, c) = channel(0, t.clone(), cap, seed).unwrap();
    s.refresh();
    (s, c)
}

/// Bounds for the number of samples over `m` packets at 1:`n` with uniform skips
/// on [1, 2n-1]: the count has variance about m (n^2 - 1) / (3 n^3); allow six
/// standard deviations.
fn bounds(m: u64, n: u64) -> (u64, u64) {
    let (m, n) = (m as f64, n as f64);
    let mean = m / n;
    let var = m * (n * n - 1.0) / (3.0 * n * n * n);
    let sd = var.sqrt().max(1.0);
    (
        (mean - 6.0 * sd).floor() as u64,
        (mean + 6.0 * sd).ceil() as u64,
    )
}

#[test]
fn one_in_ten_over_100k_packets() {
    let t = table_with(&[(1, 10, Directions::Rx)]);
    for seed in [1, 2, 3] {
        let (mut s, _c) = sampler(&t, 16, seed);
        let mut picks = Picks::new();
        let mut taken = 0u64;
        let mut seen = 0u64;
        for v in 0..(100_000 / BURST) + 1 {
            let n = if v == 100_000 / BURST {
                100_000 % BURST
            } else {
                BURST
            };
            s.select_run(Direction::Rx, 1, 0, n, &mut picks);
            taken += picks.len() as u64;
            picks.clear();
            seen += n as u64;
        }
        assert_eq!(seen, 100_000);
        let (lo, hi) = bounds(100_000, 10);
        assert!(
            (lo..=hi).contains(&taken),
            "seed {seed}: {taken} samples, want {lo}..={hi}"
        );
        assert_eq!(s.sample_pool(1, Direction::Rx), 100_000);
        assert_eq!(s.counters().sampled(), taken);
        assert_eq!(s.counters().dropped(), 0);
    }
}

#[test]
fn pools_in_records_are_exact() {
    // Rate 7, both directions on ifIndex 3, one packet per vector in each direction
    // plus vectors of odd sizes: the pool in each record counts rx + tx packets seen
    // through the sampled one.
    let t = table_with(&[(3, 7, Directions::Both)]);
    let (mut s, mut c) = sampler(&t, 100_000, 42);
    let mut picks = Picks::new();
    let mut rx_seen = 0u64;
    let mut tx_seen = 0u64;
    let f = frame(
        &[],
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        20,
    );
    let pkt = TestPacket {
        frame: f,
        rx_if: 3,
        tx_if: 3,
        next_hop: None,
        in_labels: vec![],
        out_labels: vec![],
    };
    for v in 0..5000usize {
        let n = 1 + v % 37;
        s.select_run(Direction::Rx, 3, 0, n, &mut picks);
        for p in picks.as_slice() {
            assert_eq!(p.direction, Direction::Rx);
            s.submit(p, &pkt.info());
            let r = c.pop().unwrap();
            assert_eq!(r.sample_pool, rx_seen + u64::from(p.index) + 1 + tx_seen);
        }
        picks.clear();
        rx_seen += n as u64;
        let m = 1 + v % 23;
        s.select_burst(Direction::Tx, m, |_| 3, &mut picks);
        for p in picks.as_slice() {
            assert_eq!(p.direction, Direction::Tx);
            s.submit(p, &pkt.info());
            let r = c.pop().unwrap();
            assert_eq!(r.sample_pool, tx_seen + u64::from(p.index) + 1 + rx_seen);
            assert_eq!(r.sampling_rate, 7);
            assert_eq!(r.source, 3);
            assert_eq!(r.direction, Direction::Tx);
        }
        picks.clear();
        tx_seen += m as u64;
    }
    assert_eq!(s.sample_pool(3, Direction::Rx), rx_seen);
    assert_eq!(s.sample_pool(3, Direction::Tx), tx_seen);
}

#[test]
fn burst_over_mixed_interfaces_is_per_interface() {
    // Output interfaces 1..=4 at rates 10, 100, off, 1; ifIndex 2000 (beyond the
    // table) and 0 are never sampled.
    let t = table_with(&[
        (1, 10, Directions::Tx),
        (2, 100, Directions::Tx),
        (4, 1, Directions::Tx),
        (3, 5, Directions::Rx), // rx only: its tx packets are not candidates
    ]);
    let (mut s, _c) = sampler(&t, 16, 7);
    let mut picks = Picks::new();
    let mut rng = 0x1234_5678u64;
    let mut per_if = [0u64; 5];
    let mut seen = [0u64; 5];
    let mut keys = [0u32; BURST];
    for _ in 0..2000 {
        for k in keys.iter_mut() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            *k = match rng % 10 {
                0..=3 => 1,
                4..=6 => 2,
                7 => 3,
                8 => {
                    if rng & 1024 == 0 {
                        2000
                    } else {
                        0
                    }
                }
                _ => 4,
            };
        }
        s.select_burst(Direction::Tx, BURST, |i| keys[i], &mut picks);
        let mut last = [None::<u32>; 5];
        for p in picks.as_slice() {
            let i = p.ifindex as usize;
            assert!(matches!(i, 1 | 2 | 4), "picked ifIndex {i}");
            assert_eq!(
                keys[p.index as usize], p.ifindex,
                "pick is a packet of its interface"
            );
            // Picks of one interface come in packet order.
            assert!(last[i].is_none_or(|l| l < p.index));
            last[i] = Some(p.index);
            per_if[i] += 1;
        }
        for &k in &keys {
            if (k as usize) < 5 {
                seen[k as usize] += 1;
            }
        }
        picks.clear();
    }
    for (i, rate) in [(1usize, 10u64), (2, 100)] {
        let (lo, hi) = bounds(seen[i], rate);
        assert!(
            (lo..=hi).contains(&per_if[i]),
            "if {i}: {} of {}",
            per_if[i],
            seen[i]
        );
        assert_eq!(s.sample_pool(i as u32, Direction::Tx), seen[i]);
    }
    // Rate 1 samples every packet.
    assert_eq!(per_if[4], seen[4]);
    assert_eq!(s.sample_pool(3, Direction::Tx), 0);
}

/// `may_pick` is never wrong when it says no (a pipeline then notes nothing for
/// the vector), and says no for most vectors at a low rate.
#[test]
fn may_pick_is_never_wrong_when_it_says_no() {
    let t = table_with(&[
        (1, 600, Directions::Rx),
        (2, 40, Directions::Tx),
        (3, 5000, Directions::Tx),
    ]);
    let (mut s, _c) = sampler(&t, 16, 9);
    let mut picks = Picks::new();
    let mut rng = 0x1234_5678u32;
    let (mut vectors, mut no) = (0u32, [0u32; 2]);
    for v in 0..4000 {
        // Vector sizes 1..=BURST; rx over ports 1 and 2 (not sampled on rx, now
        // and then), tx over 2, 3 and an interface that is not sampled.
        rng = rng.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let n = (rng >> 8) as usize % BURST + 1;
        let rx_key = move |i: usize| if (i + v) % 97 == 0 { 2 } else { 1 };
        let tx_key = move |i: usize| [2u32, 3, 3, 7][(i * 7 + v) % 4];
        for (d, dir) in Direction::ALL.iter().enumerate() {
            let may = s.may_pick(*dir, n);
            match dir {
                Direction::Rx => s.select_burst(*dir, n, rx_key, &mut picks),
                Direction::Tx => s.select_burst(*dir, n, tx_key, &mut picks),
            }
            assert!(may || picks.is_empty(), "vector {v}, {dir:?}");
            no[d] += u32::from(!may);
            picks.clear();
        }
        vectors += 1;
    }
    // (rx at 1:600 on the port with nearly every packet: about 2 vectors in 3
    // cannot pick; tx is dominated by 1:40 on port 2)
    assert!(no[0] > vectors / 3, "{no:?} of {vectors}");
    assert!(no[1] > 0, "{no:?} of {vectors}");
    // Off: nothing can pick.
    let off = table_with(&[]);
    let (s, _c) = sampler(&off, 16, 1);
    assert!(!s.may_pick(Direction::Rx, BURST) && !s.may_pick(Direction::Tx, BURST));
}

#[test]
fn burst_and_run_pick_the_same_packets() {
    // On a vector of one interface, select_burst and select_run draw the same skips
    // from the same seed, so they must pick exactly the same packets.
    let t = table_with(&[(5, 13, Directions::Rx)]);
    let (mut a, _ca) = sampler(&t, 16, 99);
    let (mut b, _cb) = sampler(&t, 16, 99);
    let mut pa = Picks::new();
    let mut pb = Picks::new();
    for v in 0..3000 {
        let n = [1, 3, 4, 5, 64, 255, 256][v % 7];
        a.select_run(Direction::Rx, 5, 0, n, &mut pa);
        b.select_burst(Direction::Rx, n, |_| 5, &mut pb);
        assert_eq!(pa.as_slice(), pb.as_slice(), "vector {v}");
        pa.clear();
        pb.clear();
    }
}

#[test]
fn mean_skip_matches_large_rates() {
    // No cap on N: rates far above a 15-bit generator's range keep their mean.
    for (rate, packets) in [(100_000u32, 5_000_000_000u64), (u32::MAX, 1u64 << 42)] {
        let t = table_with(&[(1, rate, Directions::Rx)]);
        let (mut s, _c) = sampler(&t, 16, 5);
        let mut picks = Picks::new();
        let mut taken = 0u64;
        let run = 1usize << 20;
        let mut seen = 0u64;
        while seen < packets {
            s.select_run(Direction::Rx, 1, 0, run, &mut picks);
            taken += picks.len() as u64;
            picks.clear();
            seen += run as u64;
        }
        let (lo, hi) = bounds(seen, u64::from(rate));
        assert!(
            (lo..=hi).contains(&taken),
            "rate {rate}: {taken}, want {lo}..={hi}"
        );
    }
}

#[test]
fn off_interfaces_and_directions_pick_nothing() {
    let t = table_with(&[(1, 1, Directions::Rx)]);
    let (mut s, _c) = sampler(&t, 16, 1);
    let mut picks = Picks::new();
    assert!(s.is_on(Direction::Rx));
    assert!(!s.is_on(Direction::Tx));
    s.select_run(Direction::Tx, 1, 0, 256, &mut picks);
    s.select_burst(Direction::Tx, 256, |_| 1, &mut picks);
    s.select_run(Direction::Rx, 2, 0, 256, &mut picks);
    s.select_run(Direction::Rx, 0, 0, 256, &mut picks);
    s.select_run(Direction::Rx, u32::MAX, 0, 256, &mut picks);
    s.select_burst(Direction::Rx, 256, |_| 2, &mut picks);
    assert!(picks.is_empty());
    // Rate 1 on the configured one: every packet.
    s.select_run(Direction::Rx, 1, 10, 5, &mut picks);
    let idx: Vec<u32> = picks.as_slice().iter().map(|p| p.index).collect();
    assert_eq!(idx, [10, 11, 12, 13, 14]);
}

#[test]
fn refresh_applies_changes_and_keeps_pools() {
    let t = table_with(&[(1, 10, Directions::Rx)]);
    let (mut s, mut c) = sampler(&t, 4096, 3);
    let mut picks = Picks::new();
    for _ in 0..100 {
        s.select_run(Direction::Rx, 1, 0, 256, &mut picks);
    }
    picks.clear();
    assert_eq!(s.sample_pool(1, Direction::Rx), 25_600);

    // Rate change: the pool carries on, the new rate shows in the picks.
    t.set(
        1,
        Some(Sampling {
            rate: 2,
            directions: Directions::Rx,
        }),
    )
    .unwrap();
    s.refresh();
    s.select_run(Direction::Rx, 1, 0, 256, &mut picks);
    assert!(picks.len() > 64);
    assert!(picks.as_slice().iter().all(|p| p.ifindex == 1));
    picks.clear();
    assert_eq!(s.sample_pool(1, Direction::Rx), 25_856);

    // Off: nothing picked, the pool stays.
    t.set(1, None).unwrap();
    s.refresh();
    assert!(!s.is_on(Direction::Rx));
    s.select_run(Direction::Rx, 1, 0, 256, &mut picks);
    s.select_burst(Direction::Rx, 256, |_| 1, &mut picks);
    assert!(picks.is_empty());
    assert_eq!(s.sample_pool(1, Direction::Rx), 25_856);

    // Header bytes: picked up by refresh.
    t.set(
        1,
        Some(Sampling {
            rate: 1,
            directions: Directions::Rx,
        }),
    )
    .unwrap();
    t.set_header_bytes(64).unwrap();
    s.refresh();
    let f = frame(
        &[],
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        200,
    );
    let pkt = TestPacket {
        frame: f.clone(),
        rx_if: 1,
        tx_if: 2,
        next_hop: None,
        in_labels: vec![],
        out_labels: vec![],
    };
    s.select_run(Direction::Rx, 1, 0, 1, &mut picks);
    assert!(s.submit(&picks.as_slice()[0], &pkt.info()));
    let r = c.pop().unwrap();
    assert_eq!(r.header(), &f[..64]);
    assert_eq!(r.frame_len, f.len() as u32);
    assert_eq!(r.sample_pool, 25_857);
}

#[test]
fn bad_settings_change_nothing() {
    let t = table_with(&[(1, 10, Directions::Rx)]);
    assert!(matches!(
        t.set(
            1,
            Some(Sampling {
                rate: 0,
                directions: Directions::Rx
            })
        ),
        Err(ConfigError::ZeroRate { ifindex: 1 })
    ));
    assert!(matches!(
        t.set(
            0,
            Some(Sampling {
                rate: 5,
                directions: Directions::Rx
            })
        ),
        Err(ConfigError::IfIndex { ifindex: 0, .. })
    ));
    assert!(matches!(
        t.set(MAX_IFINDEX + 1, None),
        Err(ConfigError::IfIndex { .. })
    ));
    assert!(matches!(
        t.set_header_bytes(63),
        Err(ConfigError::HeaderBytes(63))
    ));
    assert!(matches!(
        t.set_header_bytes(257),
        Err(ConfigError::HeaderBytes(257))
    ));
    assert_eq!(
        t.get(1),
        Some(Sampling {
            rate: 10,
            directions: Directions::Rx
        })
    );
    assert_eq!(t.header_bytes(), DEFAULT_HEADER_BYTES);
    assert_eq!(
        t.enabled(),
        vec![(
            1,
            Sampling {
                rate: 10,
                directions: Directions::Rx
            }
        )]
    );
    assert!(channel(0, t, 0, 0).is_err());
}

#[test]
fn full_ring_drops_without_blocking_and_next_sample_reports_it() {
    let t = table_with(&[(1, 1, Directions::Rx)]);
    let (mut s, mut c) = sampler(&t, 4, 1);
    let mut picks = Picks::new();
    let labels = [lse(100, 0, true, 64)];
    let f = frame(
        &labels,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 1, 1),
        50,
    );
    let pkts: Vec<TestPacket> = (0..100)
        .map(|_| TestPacket {
            frame: f.clone(),
            rx_if: 1,
            tx_if: 2,
            next_hop: Some(Ipv4Addr::new(192, 168, 1, 1).into()),
            in_labels: labels.to_vec(),
            out_labels: vec![lse(200, 0, true, 63)],
        })
        .collect();
    assert!(s.begin_vector());
    let (taken, queued) = run_vector(&mut s, &mut picks, &pkts);
    assert_eq!((taken, queued), (100, 4));
    assert_eq!(s.counters().sampled(), 100);
    assert_eq!(s.counters().dropped(), 96);
    assert_eq!(s.drops(1), 96);
    // A vector that begins with the ring full: its picks are counted as dropped
    // as they are selected, none is handed out.
    assert!(!s.begin_vector());
    s.select_run(Direction::Rx, 1, 0, 3, &mut picks);
    assert!(picks.is_empty());
    assert_eq!(s.counters().sampled(), 103);
    assert_eq!((s.counters().dropped(), s.drops(1)), (99, 99));
    // The queued ones carry the drops seen before them: none.
    for _ in 0..4 {
        assert_eq!(c.pop().unwrap().drops, 0);
        // (the agent's index is reread: the room it made shows)
        assert!(s.begin_vector());
    }
    assert!(c.pop().is_none());
    // The ring has room again: the next sample reports the 99 lost.
    let (taken, queued) = run_vector(&mut s, &mut picks, &pkts[..1]);
    assert_eq!((taken, queued), (1, 1));
    let r = c.pop().unwrap();
    assert_eq!(r.drops, 99);
    assert_eq!(r.sample_pool, 104);
    assert_eq!(r.in_labels.as_slice(), &labels);
    assert_eq!(r.out_labels.as_slice(), &[lse(200, 0, true, 63)]);
    assert_eq!(r.next_hop, Some(Ipv4Addr::new(192, 168, 1, 1).into()));
    assert_eq!(r.header(), &f[..]);
}

#[test]
fn workers_run_in_parallel_with_a_draining_agent_thread() {
    // Two workers push at 1:1 into small rings while a consumer thread drains:
    // every sample is either received or counted as dropped, none twice.
    let t = table_with(&[(1, 1, Directions::Rx)]);
    let mut handles = Vec::new();
    let mut consumers = Vec::new();
    for w in 0..2u32 {
        let (mut s, c) = channel(w, t.clone(), 64, u64::from(w)).unwrap();
        consumers.push(c);
        handles.push(std::thread::spawn(move || {
            let mut picks = Picks::new();
            let f = frame(
                &[],
                Ipv4Addr::new(10, 0, 0, 1),
                Ipv4Addr::new(10, 0, 0, 2),
                20,
            );
            let pkt = TestPacket {
                frame: f,
                rx_if: 1,
                tx_if: 2,
                next_hop: None,
                in_labels: vec![],
                out_labels: vec![],
            };
            s.refresh();
            for _ in 0..200 {
                s.select_run(Direction::Rx, 1, 0, 256, &mut picks);
                for p in picks.as_slice() {
                    s.submit(p, &pkt.info());
                }
                picks.clear();
            }
            s
        }));
    }
    let mut got = [0u64; 2];
    let mut last_pool = [0u64; 2];
    let mut done = false;
    while !done {
        done = handles.iter().all(|h| h.is_finished());
        for (i, c) in consumers.iter_mut().enumerate() {
            while let Some(r) = c.pop() {
                assert_eq!(r.worker, i as u32);
                // In order, whole: the pool only grows, the header is intact.
                assert!(r.sample_pool > last_pool[i]);
                last_pool[i] = r.sample_pool;
                assert_eq!(r.header().len(), 62);
                got[i] += 1;
            }
        }
    }
    for (i, h) in handles.into_iter().enumerate() {
        let s = h.join().unwrap();
        while consumers[i].pop().is_some() {
            got[i] += 1;
        }
        assert_eq!(s.counters().sampled(), 200 * 256);
        assert_eq!(got[i] + s.counters().dropped(), 200 * 256);
        assert_eq!(s.sample_pool(1, Direction::Rx), 200 * 256);
    }
}

#[test]
fn deep_label_stacks_keep_the_top_entries() {
    let stack: Vec<u32> = (0..12).map(|i| lse(100 + i, 0, i == 11, 64)).collect();
    let w = LabelWords::from_slice(&stack);
    assert_eq!(w.len(), MAX_RECORD_LABELS);
    assert_eq!(w.as_slice(), &stack[..MAX_RECORD_LABELS]);
}

#[test]
fn ends_move_to_their_threads() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<WorkerSampler>();
    send::<SampleConsumer>();
    send::<Agent>();
    send::<Picks>();
    sync::<SamplingTable>();
    sync::<WorkerCounters>();
}

#[test]
fn huge_bursts_are_counted_in_chunks() {
    // Longer than one counting chunk (65536): the 16-bit bank counters must not wrap.
    let t = table_with(&[(1, 1000, Directions::Tx), (2, 1000, Directions::Tx)]);
    let (mut s, _c) = sampler(&t, 16, 11);
    let mut picks = Picks::new();
    let n = 300_001;
    s.select_burst(
        Direction::Tx,
        n,
        |i| if i % 3 == 0 { 1 } else { 2 },
        &mut picks,
    );
    assert_eq!(s.sample_pool(1, Direction::Tx), 100_001);
    assert_eq!(s.sample_pool(2, Direction::Tx), 200_000);
    let ones = picks.as_slice().iter().filter(|p| p.ifindex == 1).count() as u64;
    let twos = picks.len() as u64 - ones;
    let (lo, hi) = bounds(100_001, 1000);
    assert!((lo..=hi).contains(&ones), "{ones}");
    let (lo, hi) = bounds(200_000, 1000);
    assert!((lo..=hi).contains(&twos), "{twos}");
    assert!(
        picks
            .as_slice()
            .iter()
            .all(|p| (p.index % 3 == 0) == (p.ifindex == 1))
    );
}

#[test]
fn a_full_pick_list_counts_drops() {
    // Rate 1 on both directions of two interfaces: 4 x 256 picks for a list of 512.
    let t = table_with(&[(1, 1, Directions::Both), (2, 1, Directions::Both)]);
    let (mut s, _c) = sampler(&t, 16, 1);
    let mut picks = Picks::new();
    s.select_run(Direction::Rx, 1, 0, BURST, &mut picks);
    s.select_run(Direction::Rx, 2, 0, BURST, &mut picks);
    s.select_burst(Direction::Tx, BURST, |i| 1 + (i % 2) as u32, &mut picks);
    s.select_run(Direction::Tx, 2, 0, BURST, &mut picks);
    assert_eq!(picks.len(), PICKS_CAPACITY);
    assert_eq!(s.counters().sampled(), 4 * BURST as u64);
    assert_eq!(s.counters().dropped(), 2 * BURST as u64);
    assert_eq!(s.drops(1) + s.drops(2), 2 * BURST as u64);
}
