//! L2 cross-connect: every frame received on a port leaves on its peer port unchanged
//! (VPP's `l2 xconnect`). The first forwarding mode, and the I/O baseline the routed
//! pipeline is measured against.
//!
//! A worker owns a set of rx queues and one tx queue on every port. Each loop it
//! takes up to [`BURST`] packets in total from its queues (starting at a rotating
//! queue so none starves), sends each queue's packets to the peer port, frees and
//! counts what the device refused, and backs off with growing sleeps when its queues
//! stay empty, so several routers can share two cores.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::counters::Counter;
use crate::dpdk::{BURST, Burst, tsc};

/// Packets asked of a queue per rx call. Smaller calls keep the mbufs of one call in
/// L1 and in the mempool cache; 256-packet calls measured 0.6x of testpmd on the
/// pcap -> null harness, 64-packet calls about 0.95x (scripts/bench-io.py).
const RX_CHUNK: usize = 64;

/// One rx queue a worker polls, and where its packets go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxAssignment {
    /// Port to receive from.
    pub port: u16,
    /// Queue on it.
    pub queue: u16,
    /// Peer port the packets leave on.
    pub peer: u16,
    /// The worker's tx queue on the peer port.
    pub tx_queue: u16,
}

/// Counters of one rx queue as seen by its worker. Byte counts come from the
/// device's own statistics (`Port::stats`), so the worker never reads packet headers.
#[derive(Debug, Default)]
pub struct QueueCounters {
    /// Packets received.
    pub rx_pkts: Counter,
    /// Packets the peer port accepted.
    pub tx_pkts: Counter,
    /// Packets the peer port refused (freed).
    pub tx_drops: Counter,
}

/// A worker's counters, readable by the control thread while it runs.
#[derive(Debug, Default)]
pub struct WorkerCounters {
    /// Per assignment, in the order of [`XconnectWorker::assignments`].
    pub queues: Vec<QueueCounters>,
    /// Loops run.
    pub loops: Counter,
    /// Loops that received at least one packet.
    pub busy_loops: Counter,
    /// TSC cycles spent in loops that received packets (testpmd's
    /// `--record-core-cycles` idea: cycles/packet excludes idle polling).
    pub busy_cycles: Counter,
    /// Sleeps taken while idle.
    pub idle_sleeps: Counter,
}

impl WorkerCounters {
    /// Sum of received packets over all queues.
    pub fn rx_pkts(&self) -> u64 {
        self.queues.iter().map(|q| q.rx_pkts.get()).sum()
    }
    /// Sum of sent packets over all queues.
    pub fn tx_pkts(&self) -> u64 {
        self.queues.iter().map(|q| q.tx_pkts.get()).sum()
    }
    /// Sum of tx drops over all queues.
    pub fn tx_drops(&self) -> u64 {
        self.queues.iter().map(|q| q.tx_drops.get()).sum()
    }
}

/// How a worker polls when there is nothing to do.
#[derive(Debug, Clone, Copy)]
pub struct IdlePolicy {
    /// Empty loops before the first sleep (pure polling below it).
    pub spin_loops: u32,
    /// Longest sleep; sleeps double from 1 µs up to it. 0 disables sleeping
    /// (a dedicated core, lowest latency).
    pub max_sleep_us: u32,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy {
            spin_loops: 256,
            max_sleep_us: 250,
        }
    }
}

/// A cross-connect worker. Build it, then call [`XconnectWorker::run`] on its lcore.
#[derive(Debug)]
pub struct XconnectWorker {
    assignments: Vec<RxAssignment>,
    counters: Arc<WorkerCounters>,
    stop: Arc<AtomicBool>,
    idle: IdlePolicy,
}

impl XconnectWorker {
    /// A worker for the given queues; `stop` ends its loop when set.
    pub fn new(assignments: Vec<RxAssignment>, stop: Arc<AtomicBool>, idle: IdlePolicy) -> Self {
        let counters = Arc::new(WorkerCounters {
            queues: assignments
                .iter()
                .map(|_| QueueCounters::default())
                .collect(),
            ..Default::default()
        });
        XconnectWorker {
            assignments,
            counters,
            stop,
            idle,
        }
    }

    /// The queues this worker polls.
    pub fn assignments(&self) -> &[RxAssignment] {
        &self.assignments
    }

    /// The worker's counters (share with the control thread before `run`).
    pub fn counters(&self) -> Arc<WorkerCounters> {
        self.counters.clone()
    }

    /// One poll of every queue: returns the packets received.
    #[inline]
    pub fn poll_once(&mut self, start: usize, burst: &mut Burst) -> usize {
        let n = self.assignments.len();
        let mut budget = BURST;
        let mut total = 0;
        for k in 0..n {
            if budget == 0 {
                break;
            }
            let i = (start + k) % n;
            let a = self.assignments[i];
            let got = burst.rx_burst(a.port, a.queue, budget.min(RX_CHUNK));
            if got == 0 {
                continue;
            }
            budget -= got;
            total += got;
            let c = &self.counters.queues[i];
            c.rx_pkts.add(got as u64);
            let sent = burst.tx_burst(a.peer, a.tx_queue);
            c.tx_pkts.add(sent as u64);
            if !burst.is_empty() {
                c.tx_drops.add(burst.len() as u64);
                burst.clear();
            }
        }
        total
    }

    /// Polls until the stop flag is set.
    pub fn run(&mut self) {
        let mut burst = Burst::new();
        let mut empty_loops = 0u32;
        let mut sleep_us = 1u32;
        let mut start = 0usize;
        let (mut loops, mut busy_loops, mut busy_cycles, mut sleeps) = (0u64, 0u64, 0u64, 0u64);
        if self.idle.max_sleep_us > 0 {
            crate::dpdk::precise_sleeps();
        }
        while !self.stop.load(Ordering::Relaxed) {
            let t0 = tsc();
            let got = self.poll_once(start, &mut burst);
            loops += 1;
            start = start.wrapping_add(1);
            if got > 0 {
                busy_loops += 1;
                busy_cycles += tsc() - t0;
                empty_loops = 0;
                sleep_us = 1;
            } else {
                empty_loops += 1;
                if self.idle.max_sleep_us > 0 && empty_loops >= self.idle.spin_loops {
                    std::thread::sleep(Duration::from_micros(u64::from(sleep_us)));
                    sleeps += 1;
                    sleep_us = (sleep_us * 2).min(self.idle.max_sleep_us);
                }
            }
            // Publish loop counters every 64 loops (and below, at the end).
            if loops % 64 == 0 {
                self.publish(&mut loops, &mut busy_loops, &mut busy_cycles, &mut sleeps);
            }
        }
        self.publish(&mut loops, &mut busy_loops, &mut busy_cycles, &mut sleeps);
    }

    fn publish(&self, loops: &mut u64, busy: &mut u64, cycles: &mut u64, sleeps: &mut u64) {
        let c = &self.counters;
        c.loops.add(std::mem::take(loops));
        c.busy_loops.add(std::mem::take(busy));
        c.busy_cycles.add(std::mem::take(cycles));
        c.idle_sleeps.add(std::mem::take(sleeps));
    }
}

/// Why ports cannot be cross-connected as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    /// Paired in order, an odd number of ports leaves one out.
    #[error(
        "xconnect needs an even number of ports, got {0}: add a port or list the pairs explicitly"
    )]
    OddPorts(usize),
    /// A pair names a port index past the last port.
    #[error("xconnect pair ({0}, {1}) names a port that does not exist")]
    NoSuchPort(usize, usize),
    /// A pair of one port with itself.
    #[error("xconnect pair ({0}, {1}) connects a port to itself")]
    SelfPair(usize, usize),
    /// A port in two pairs.
    #[error("port {0} is in more than one xconnect pair")]
    Twice(usize),
    /// A port in no pair.
    #[error("port {0} is in no xconnect pair")]
    Unpaired(usize),
}

/// Pairs ports for cross-connect. `pairs` lists explicit pairs of port indices; when
/// it is empty, ports are paired in order (0-1, 2-3, ...). Every port must be in
/// exactly one pair.
pub fn pair_ports(n_ports: usize, pairs: &[(usize, usize)]) -> Result<Vec<usize>, PairError> {
    let mut peer = vec![usize::MAX; n_ports];
    if pairs.is_empty() {
        if n_ports % 2 != 0 {
            return Err(PairError::OddPorts(n_ports));
        }
        for i in (0..n_ports).step_by(2) {
            peer[i] = i + 1;
            peer[i + 1] = i;
        }
        return Ok(peer);
    }
    for &(a, b) in pairs {
        if a >= n_ports || b >= n_ports {
            return Err(PairError::NoSuchPort(a, b));
        }
        if a == b {
            return Err(PairError::SelfPair(a, b));
        }
        for p in [a, b] {
            if peer[p] != usize::MAX {
                return Err(PairError::Twice(p));
            }
        }
        peer[a] = b;
        peer[b] = a;
    }
    if let Some(p) = peer.iter().position(|&x| x == usize::MAX) {
        return Err(PairError::Unpaired(p));
    }
    Ok(peer)
}

#[cfg(test)]
mod tests {
    use super::{PairError, pair_ports};

    #[test]
    fn pairs_in_order() {
        assert_eq!(pair_ports(4, &[]).unwrap(), vec![1, 0, 3, 2]);
    }

    #[test]
    fn odd_count_is_an_error() {
        assert_eq!(pair_ports(3, &[]), Err(PairError::OddPorts(3)));
        assert!(
            pair_ports(3, &[])
                .unwrap_err()
                .to_string()
                .contains("even number")
        );
    }

    #[test]
    fn explicit_pairs() {
        assert_eq!(pair_ports(4, &[(0, 3), (1, 2)]).unwrap(), vec![3, 2, 1, 0]);
        assert!(
            pair_ports(4, &[(0, 3)])
                .unwrap_err()
                .to_string()
                .contains("no xconnect pair")
        );
        assert_eq!(
            pair_ports(4, &[(0, 3), (3, 1), (2, 1)]),
            Err(PairError::Twice(3))
        );
        assert_eq!(pair_ports(2, &[(0, 0)]), Err(PairError::SelfPair(0, 0)));
        assert_eq!(pair_ports(2, &[(0, 5)]), Err(PairError::NoSuchPort(0, 5)));
    }
}
