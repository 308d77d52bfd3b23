//! The punt path: a thread of its own that moves the workers' punts to the twins
//! and the twins' frames to the workers, so that nothing the control thread
//! does (a dump of a full table, a zebra walk, a reload, a large `show`) delays
//! a routing protocol's packet.
//!
//! It sleeps in `poll` on the twins and on the workers' [`PuntSignal`], which a
//! worker raises after queueing punts only when this thread said it sleeps; a
//! bounded timeout covers a wakeup lost in between. Its counters are atomics the
//! control thread reads for `show linux`.

use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

use tun_rs::SyncDevice;

use dataplane::counters::Counter;
use dataplane::dpdk::Mempool;
use dataplane::router::{InjectQueue, PuntQueue, PuntReason, PuntSignal, WorkerWake};

use super::TwinCounters;

/// Frames moved per twin and per worker queue before the next look around.
const BUDGET: usize = 256;

/// The longest sleep (a lost wakeup costs at most this), ms.
const SLEEP_MS: u16 = 10;

/// The longest the thread works without a break, and the break, when it runs
/// in the FIFO class: then it runs ahead of the control thread and the routing
/// daemons, so a flood (of injects above all: nothing polices what the control
/// namespace sends) may take two thirds of its CPU, never all of it. An
/// ordinary thread needs no break: the scheduler shares the CPU.
const BUSY_MAX: Duration = Duration::from_millis(2);
const REST: Duration = Duration::from_millis(1);

/// A steady stream: work found again within this of the last work. Each
/// frame of a flood would otherwise wake the thread on its own (it preempts
/// the sender on a shared CPU, takes one frame and sleeps again: two context
/// switches per frame), so then it waits [`GATHER`] for frames to gather
/// before it looks again, as NAPI polls. A lone frame (a hello, a probe)
/// still wakes it at once; only frames that follow others within [`STREAM`]
/// may wait, at most [`GATHER`].
const STREAM: Duration = Duration::from_micros(200);
const GATHER: Duration = Duration::from_micros(50);

/// Punt/inject counters of one twin: the punt thread writes them, the
/// control thread reads them.
#[derive(Debug, Default)]
pub struct TwinStats {
    punt_pkts: Counter,
    punt_bytes: Counter,
    punt_errors: Counter,
    inject_pkts: Counter,
    inject_bytes: Counter,
    inject_drops: Counter,
}

impl TwinStats {
    /// The counters now.
    pub fn get(&self) -> TwinCounters {
        TwinCounters {
            punt_pkts: self.punt_pkts.get(),
            punt_bytes: self.punt_bytes.get(),
            punt_errors: self.punt_errors.get(),
            inject_pkts: self.inject_pkts.get(),
            inject_bytes: self.inject_bytes.get(),
            inject_drops: self.inject_drops.get(),
        }
    }
}

/// The path's own counters (written by the punt thread only).
#[derive(Debug, Default)]
pub struct PathStats {
    /// Punts taken from the workers, by [`PuntReason`].
    pub punted: [Counter; PuntReason::COUNT],
    /// Punts for an interface without a twin (freed).
    pub no_twin: Counter,
    /// Times the thread woke from `poll`.
    pub wakeups: Counter,
    /// Breaks it took after working [`BUSY_MAX`] without one (in the FIFO
    /// class only).
    pub rests: Counter,
    /// Waits of [`GATHER`] for a steady stream's frames to gather.
    pub gathers: Counter,
    /// How the thread is scheduled ("fifo 1", or why it is not).
    pub scheduling: std::sync::OnceLock<String>,
}

/// One twin as the path sees it.
pub struct PathTwin {
    /// The TAP (shared with the control thread's [`super::Twin`]).
    pub dev: Arc<SyncDevice>,
    /// DPDK port of the interface.
    pub port: u16,
    /// VLAN of a sub-interface.
    pub vlan: Option<u16>,
    /// Its counters.
    pub stats: Arc<TwinStats>,
}

/// A running punt path; stops and joins on drop.
pub struct PuntPath {
    stop: Arc<AtomicBool>,
    signal: Arc<PuntSignal>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PuntPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PuntPath").finish_non_exhaustive()
    }
}

impl PuntPath {
    /// Starts the thread over `twins`, the workers' (punt, inject, wake) queues and
    /// `pool` (for injected frames), woken through `signal`; in the real-time
    /// FIFO class at `sched.priority` if given (so that no ordinary thread on
    /// its CPU, the control thread's bulk work included, delays a punt), on
    /// `sched.cpus`;
    /// the peers the twins send BFD to go to `bfd_seen`.
    pub fn start(
        twins: Vec<PathTwin>,
        queues: Vec<(Arc<PuntQueue>, Arc<InjectQueue>, Arc<WorkerWake>)>,
        pool: Arc<Mempool>,
        signal: Arc<PuntSignal>,
        stats: Arc<PathStats>,
        sched: Scheduling,
        bfd_seen: Arc<ArrayQueue<Ipv4Addr>>,
    ) -> io::Result<PuntPath> {
        let Scheduling { priority, cpus } = sched;
        let stop = Arc::new(AtomicBool::new(false));
        let mut run = Run {
            by_port: twins
                .iter()
                .enumerate()
                .map(|(k, t)| ((t.port, t.vlan), k))
                .collect(),
            twins,
            queues,
            pool,
            signal: signal.clone(),
            stats,
            stop: stop.clone(),
            frame: vec![0; 1 << 16],
            priority,
            cpus,
            bfd_seen,
        };
        let thread = std::thread::Builder::new()
            .name("punt".into())
            .spawn(move || run.run())?;
        Ok(PuntPath {
            stop,
            signal,
            thread: Some(thread),
        })
    }
}

impl Drop for PuntPath {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.signal.notify_always();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Run {
    twins: Vec<PathTwin>,
    /// (port, vlan) -> index in `twins`.
    by_port: BTreeMap<(u16, Option<u16>), usize>,
    queues: Vec<(Arc<PuntQueue>, Arc<InjectQueue>, Arc<WorkerWake>)>,
    pool: Arc<Mempool>,
    signal: Arc<PuntSignal>,
    stats: Arc<PathStats>,
    stop: Arc<AtomicBool>,
    frame: Vec<u8>,
    /// Real-time FIFO priority to run at, if any.
    priority: Option<i32>,
    /// CPUs it may run on.
    cpus: Vec<usize>,
    /// Peers the twins sent BFD to.
    bfd_seen: Arc<ArrayQueue<Ipv4Addr>>,
}

/// How the punt thread is scheduled.
#[derive(Debug, Clone, Default)]
pub struct Scheduling {
    /// Real-time FIFO priority, if any.
    pub priority: Option<i32>,
    /// CPUs it may run on.
    pub cpus: Vec<usize>,
}

/// The destination of an IPv4 BFD control packet a twin sends.
fn bfd_peer(frame: &[u8]) -> Option<Ipv4Addr> {
    let l3 = match frame.get(12..14)? {
        [0x81, 0x00] => 18,
        _ => 14,
    };
    if frame.get(l3 - 2..l3)? != [0x08, 0x00] {
        return None;
    }
    let ip = frame.get(l3..l3 + 20)?;
    let hl = usize::from(ip[0] & 0x0f) * 4;
    let dport = frame.get(l3 + hl + 2..l3 + hl + 4)?;
    (ip[9] == 17 && matches!(u16::from_be_bytes([dport[0], dport[1]]), 3784 | 4784))
        .then(|| Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]))
}

impl Run {
    fn run(&mut self) {
        let mut fifo = false;
        let mut sched = match self.priority {
            Some(p) => match super::sched::fifo_current_thread(p) {
                Ok(()) => {
                    fifo = true;
                    format!("fifo {p}")
                }
                Err(e) => format!("other (fifo {p} refused: {e})"),
            },
            None => "other".to_string(),
        };
        match super::sched::set_cpus(&self.cpus) {
            Ok(()) => sched += &format!(" on cpus {:?}", self.cpus),
            Err(e) => sched += &format!(" (cpus {:?} refused: {e})", self.cpus),
        }
        let _ = self.stats.scheduling.set(sched);
        let mut busy_since: Option<Instant> = None;
        let mut last_work: Option<Instant> = None;
        while !self.stop.load(Ordering::Relaxed) {
            if self.punt() + self.inject() > 0 {
                let now = Instant::now();
                let stream = last_work.is_some_and(|t| now - t < STREAM);
                last_work = Some(now);
                if fifo && *busy_since.get_or_insert(now) + BUSY_MAX <= now {
                    self.stats.rests.inc();
                    std::thread::sleep(REST);
                    busy_since = None;
                } else if stream {
                    self.stats.gathers.inc();
                    std::thread::sleep(GATHER);
                    busy_since = None;
                }
                continue;
            }
            busy_since = None;
            self.signal.sleep();
            // (a punt queued before the worker saw us asleep)
            if self.queues.iter().any(|(p, _, _)| !p.is_empty()) {
                self.signal.awake();
                continue;
            }
            let mut fds: Vec<nix::poll::PollFd<'_>> = self
                .twins
                .iter()
                .map(|t| nix::poll::PollFd::new(t.dev.as_fd(), nix::poll::PollFlags::POLLIN))
                .collect();
            fds.push(nix::poll::PollFd::new(
                self.signal.fd(),
                nix::poll::PollFlags::POLLIN,
            ));
            let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(SLEEP_MS));
            drop(fds);
            self.signal.awake();
            self.stats.wakeups.inc();
        }
    }

    /// Workers' punts to the twins; returns how many were taken.
    fn punt(&mut self) -> usize {
        let mut moved = 0;
        for (q, _, _) in &self.queues {
            for _ in 0..BUDGET {
                let Some((reason, m)) = q.pop() else {
                    break;
                };
                moved += 1;
                self.stats.punted[reason as usize].inc();
                let data = m.data();
                let tagged = data.len() >= 18 && data[12..14] == [0x81, 0x00];
                let vlan = tagged.then(|| u16::from_be_bytes([data[14], data[15]]) & 0x0fff);
                let Some(&k) = self.by_port.get(&(m.port(), vlan)) else {
                    self.stats.no_twin.inc();
                    continue;
                };
                let t = &self.twins[k];
                let res = if tagged {
                    // The twin is the sub-interface: the frame goes up untagged.
                    let n = data.len() - 4;
                    self.frame[..12].copy_from_slice(&data[..12]);
                    self.frame[12..n].copy_from_slice(&data[16..]);
                    t.dev.send(&self.frame[..n])
                } else {
                    t.dev.send(data)
                };
                match res {
                    Ok(n) => {
                        t.stats.punt_pkts.inc();
                        t.stats.punt_bytes.add(n as u64);
                    }
                    Err(_) => t.stats.punt_errors.inc(),
                }
            }
        }
        moved
    }

    /// The twins' frames to the workers; returns how many were read.
    fn inject(&mut self) -> usize {
        let n_queues = self.queues.len();
        if n_queues == 0 {
            return 0;
        }
        let mut moved = 0;
        for (k, t) in self.twins.iter().enumerate() {
            // One worker per twin keeps each twin's frames in order.
            let (_, q, wake) = &self.queues[k % n_queues];
            let before = moved;
            for _ in 0..BUDGET {
                let n = match t.dev.recv(&mut self.frame[4..]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        t.stats.inject_drops.inc();
                        break;
                    }
                };
                moved += 1;
                if n < 14 {
                    t.stats.inject_drops.inc();
                    continue;
                }
                let frame = match t.vlan {
                    Some(v) => {
                        // Make room for the 802.1Q tag after the MACs.
                        self.frame.copy_within(4..16, 0);
                        self.frame[12..14].copy_from_slice(&[0x81, 0x00]);
                        self.frame[14..16].copy_from_slice(&v.to_be_bytes());
                        &self.frame[..n + 4]
                    }
                    None => &self.frame[4..4 + n],
                };
                if let Some(peer) = bfd_peer(frame) {
                    // (full: the control thread is behind; it hears again)
                    let _ = self.bfd_seen.push(peer);
                }
                let len = frame.len();
                let sent = self.pool.alloc_with(frame).is_some_and(|mut m| {
                    m.set_port(t.port);
                    q.push((t.port, m)).is_ok()
                });
                if sent {
                    t.stats.inject_pkts.inc();
                    t.stats.inject_bytes.add(len as u64);
                } else {
                    t.stats.inject_drops.inc();
                }
            }
            if moved > before {
                // A worker in its idle sleep sends them now, not when it wakes.
                wake.wake();
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfd_destinations_are_read_from_what_a_twin_sends() {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 9] = 17;
        f[14 + 16..14 + 20].copy_from_slice(&[10, 0, 0, 2]);
        f[34 + 2..34 + 4].copy_from_slice(&3784u16.to_be_bytes());
        assert_eq!(bfd_peer(&f), Some(Ipv4Addr::new(10, 0, 0, 2)));
        f[34 + 2..34 + 4].copy_from_slice(&53u16.to_be_bytes());
        assert_eq!(bfd_peer(&f), None);
        // Truncated, or not IPv4: nothing, no panic.
        assert_eq!(bfd_peer(&f[..30]), None);
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(bfd_peer(&f), None);
    }
}
