//! The control side of the router: the [`RouterState`] (every rule of the
//! router's state, DPDK-free, in `crates/router-state`) wired to the workers: the
//! interface table it publishes, the workers' handles (counters, events, punts,
//! injections), the sessions the punt policers use, traces. It runs on the
//! control thread; workers never wait for it and it never stops them.
//!
//! A [`RouterControl`] is a [`RouterState`] (through `Deref`) plus what only a
//! router with workers has.

use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use crossbeam_queue::ArrayQueue;

pub use router_state::{Pw, RouteSource, RouterError, RouterState};

use super::core::{Core, CoreConfig, Event, Tables};
use super::iface::IfTable;
use super::sessions::Sessions;
use super::stats::{TraceRecord, WorkerStats};
use super::worker::{InjectQueue, PuntQueue, WorkerWake};

/// Depth of each worker's event queue (neighbours learned from ARP).
const EVENT_QUEUE: usize = 1024;

/// The control thread's view of one worker.
#[derive(Debug, Clone)]
pub struct WorkerHandle {
    /// Its counters.
    pub stats: Arc<WorkerStats>,
    /// Neighbours it learned.
    pub events: Arc<ArrayQueue<Event>>,
    /// Packets it punted.
    pub punts: Arc<PuntQueue>,
    /// Packets the control thread gives it to send (ARP probes).
    pub inject: Arc<InjectQueue>,
    /// Wakes it from an idle sleep after pushing to `inject`.
    pub wake: Arc<WorkerWake>,
}

/// Builds the workers' interface table from what the state publishes.
struct IfPublisher(Arc<ArcSwap<IfTable>>);

impl router_state::Publisher for IfPublisher {
    fn interfaces(&self, view: router_state::InterfaceView<'_>) {
        let mut t = IfTable::new(view.interfaces.values().cloned(), view.router_id);
        t.punt_to_host = view.punt_to_host;
        t.set_pws(view.pws.to_vec());
        self.0.store(Arc::new(t));
    }
}

/// The router's control side: its state and its workers.
pub struct RouterControl {
    state: RouterState,
    ifaces: Arc<ArcSwap<IfTable>>,
    workers: Vec<WorkerHandle>,
    /// The control namespace's sessions, for the workers' punt policers.
    sessions: Arc<ArcSwap<Sessions>>,
}

impl std::fmt::Debug for RouterControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterControl")
            .field("state", &self.state)
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

impl Default for RouterControl {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for RouterControl {
    type Target = RouterState;
    fn deref(&self) -> &RouterState {
        &self.state
    }
}

impl std::ops::DerefMut for RouterControl {
    fn deref_mut(&mut self) -> &mut RouterState {
        &mut self.state
    }
}

impl RouterControl {
    /// An empty router: table 0, no interfaces, no routes, no labels.
    pub fn new() -> RouterControl {
        Self::with_label_slots(mpls::DEFAULT_SLOTS)
    }

    /// An empty router whose label table holds `slots` action slots (see
    /// [`mpls::LabelTable::with_capacity`]): past them a label is refused.
    pub fn with_label_slots(slots: usize) -> RouterControl {
        let ifaces = Arc::new(ArcSwap::from_pointee(IfTable::default()));
        RouterControl {
            state: RouterState::new(Box::new(IfPublisher(ifaces.clone())), slots),
            ifaces,
            workers: Vec::new(),
            sessions: Arc::new(ArcSwap::from_pointee(Sessions::default())),
        }
    }

    /// A forwarding core for a new worker, with its own table readers, counters and
    /// queues. Call once per worker before starting it.
    pub fn new_core(&mut self, cfg: CoreConfig, tsc_hz: u64) -> (Core, Arc<PuntQueue>) {
        let stats = Arc::new(WorkerStats::default());
        let events = Arc::new(ArrayQueue::new(EVENT_QUEUE));
        let punts = Arc::new(PuntQueue::new());
        let tables = Tables {
            fib: self.state.fib().reader(),
            labels: self.state.labels().reader(),
            ifaces: self.ifaces.clone(),
        };
        let core = Core::new(tables, stats.clone(), events.clone(), cfg, tsc_hz);
        self.workers.push(WorkerHandle {
            stats,
            events,
            punts: punts.clone(),
            inject: Arc::new(InjectQueue::new()),
            wake: Arc::new(WorkerWake::default()),
        });
        (core, punts)
    }

    /// The workers' handles.
    pub fn workers(&self) -> &[WorkerHandle] {
        &self.workers
    }

    /// The sessions snapshot the workers police with
    /// ([`super::RouterWorker::with_sessions`]).
    pub fn sessions(&self) -> Arc<ArcSwap<Sessions>> {
        self.sessions.clone()
    }

    /// Publishes a new sessions snapshot.
    pub fn set_sessions(&self, s: Sessions) {
        self.sessions.store(Arc::new(s));
    }

    /// The workers' counters.
    pub fn worker_stats(&self) -> Vec<Arc<WorkerStats>> {
        self.workers.iter().map(|w| w.stats.clone()).collect()
    }

    /// The current interface table.
    pub fn ifaces(&self) -> Arc<IfTable> {
        self.ifaces.load_full()
    }

    /// Runs `f` with publication held back: the FIB and the interface table
    /// changes it makes reach the workers together, when it returns (one
    /// publication for a whole netlink batch).
    pub fn batch<T>(&mut self, f: impl FnOnce(&mut RouterControl) -> T) -> T {
        let held = self.state.hold_publication();
        let r = f(self);
        self.state.release_publication(held);
        r
    }

    /// Traces the next `n` packets of every worker (a budget per worker).
    pub fn trace_add(&self, n: u32) {
        for w in &self.workers {
            let b = &w.stats.trace_budget;
            b.store(
                b.load(std::sync::atomic::Ordering::Relaxed)
                    .saturating_add(n),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// Trace records collected so far, per worker (worker index, record); they stay
    /// until [`RouterControl::trace_clear`].
    pub fn trace_records(&self) -> Vec<(usize, TraceRecord)> {
        let mut v = Vec::new();
        for (k, w) in self.workers.iter().enumerate() {
            let mut mine = Vec::new();
            while let Some(r) = w.stats.traces.pop() {
                mine.push(r);
            }
            for r in &mine {
                let _ = w.stats.traces.push(r.clone());
            }
            v.extend(mine.into_iter().map(|r| (k, r)));
        }
        v.sort_by_key(|(_, r)| r.tsc);
        v
    }

    /// Stops tracing and forgets the records.
    pub fn trace_clear(&self) {
        for w in &self.workers {
            w.stats
                .trace_budget
                .store(0, std::sync::atomic::Ordering::Relaxed);
            while w.stats.traces.pop().is_some() {}
        }
    }

    /// Handles what the workers reported (neighbours learned from ARP, IPv6 next
    /// hops packets wait for). Returns the number of events handled.
    pub fn poll(&mut self) -> usize {
        let now = Instant::now();
        let mut n = 0;
        for w in 0..self.workers.len() {
            while let Some(ev) = self.workers[w].events.pop() {
                n += 1;
                match ev {
                    Event::Neighbor { ifindex, ip, mac } => {
                        self.state.heard_arp(ifindex, ip, mac, now);
                    }
                    Event::Resolve6 { adj } => self.state.wants_nd(adj),
                    Event::Neighbor6 { ifindex, ip, mac } => {
                        self.state.heard_nd(ifindex, ip, mac, now);
                    }
                }
            }
        }
        n
    }
}
