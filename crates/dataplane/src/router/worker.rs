//! The DPDK side of a routing worker: poll the owned rx queues into one vector,
//! run the [`Core`] over it, transmit per port, hand punts to the control thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::dpdk::{BURST, Burst, Mbuf, Mempool, tsc};
use crate::xconnect::IdlePolicy;

use super::core::{Bucket, Core, Out, SflowHook};
use super::reasons::{DropReason, PuntClass, PuntReason};
use super::sessions::Sessions;
use super::stats::{MAX_IFACES, Stage, WorkerStats};

/// Packets asked of one queue per rx call (see `xconnect`): the vector still fills
/// up to [`BURST`] across calls and queues.
const RX_CHUNK: usize = 64;

/// Entries of a [`Queue`].
const QUEUE_SLOTS: usize = 1024;

/// A bounded queue between threads whose `pop` never waits for a producer: an
/// entry a producer has claimed but not yet written reads as absent. (A queue
/// whose consumer waits for it, as crossbeam's `ArrayQueue` does, keeps a
/// worker spinning for the rest of a scheduler slice when the punt thread that
/// shares its CPU is preempted in the middle of a push, and the other way round.)
///
/// Vyukov's bounded queue: each slot's sequence number says whose turn it is
/// (`pos`: a producer's at position `pos`; `pos + 1`: the consumer's). The value
/// sits behind a mutex only to stay in safe code: the sequence protocol gives one
/// thread at a time the slot, so the lock is never contended.
pub struct Queue<T> {
    slots: Box<[Slot<T>]>,
    head: crossbeam_utils::CachePadded<AtomicUsize>,
    tail: crossbeam_utils::CachePadded<AtomicUsize>,
    /// Entries pushed minus entries popped (briefly negative: a pop may count
    /// before the push that made it possible does). Counted after a push
    /// completes, not when its slot is claimed (`tail`): a consumer about to
    /// sleep asks `is_empty` and must not stay awake for a push whose producer
    /// was preempted before writing (its producer wakes the consumer after).
    len: AtomicIsize,
}

struct Slot<T> {
    seq: AtomicUsize,
    val: std::sync::Mutex<Option<T>>,
}

impl<T> Queue<T> {
    /// An empty queue of [`QUEUE_SLOTS`] entries.
    pub fn new() -> Self {
        Self {
            slots: (0..QUEUE_SLOTS)
                .map(|i| Slot {
                    seq: AtomicUsize::new(i),
                    val: std::sync::Mutex::new(None),
                })
                .collect(),
            head: Default::default(),
            tail: Default::default(),
            len: AtomicIsize::new(0),
        }
    }

    /// Adds `v`, or hands it back when the queue is full.
    pub fn push(&self, v: T) -> Result<(), T> {
        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos % QUEUE_SLOTS];
            let seq = slot.seq.load(Ordering::Acquire);
            match (seq as isize).wrapping_sub(pos as isize) {
                0 => match self.tail.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        *slot.val.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
                        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
                        self.len.fetch_add(1, Ordering::SeqCst);
                        return Ok(());
                    }
                    Err(now) => pos = now,
                },
                // The slot still holds an entry of the previous lap: full.
                d if d < 0 => return Err(v),
                _ => pos = self.tail.load(Ordering::Relaxed),
            }
        }
    }

    /// The oldest entry whose push has completed, if any; never waits.
    pub fn pop(&self) -> Option<T> {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos % QUEUE_SLOTS];
            let seq = slot.seq.load(Ordering::Acquire);
            match (seq as isize).wrapping_sub(pos.wrapping_add(1) as isize) {
                0 => match self.head.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let v = slot.val.lock().unwrap_or_else(|e| e.into_inner()).take();
                        slot.seq
                            .store(pos.wrapping_add(QUEUE_SLOTS), Ordering::Release);
                        self.len.fetch_sub(1, Ordering::SeqCst);
                        return v;
                    }
                    Err(now) => pos = now,
                },
                // Empty, or its producer has not finished writing it.
                d if d < 0 => return None,
                _ => pos = self.head.load(Ordering::Relaxed),
            }
        }
    }

    /// Completed pushes not yet popped.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::SeqCst).max(0) as usize
    }

    /// True when every completed push has been popped.
    pub fn is_empty(&self) -> bool {
        self.len.load(Ordering::SeqCst) <= 0
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("len", &self.len.load(Ordering::Relaxed))
            .finish()
    }
}

/// Punted packets on their way to the control thread.
pub type PuntQueue = Queue<(PuntReason, Mbuf)>;

/// Packets the control thread sends through a worker: (DPDK port, frame).
pub type InjectQueue = Queue<(u16, Mbuf)>;

/// A thread's "I am going to sleep" flag, and the one who wakes it: the
/// sleeper sets it before it looks for work a last time, a producer clears it
/// after publishing work and wakes the thread only if it did the clearing, so
/// a thread that polls costs its producers a load and no more.
#[derive(Debug, Default)]
struct Drowsy(AtomicBool);

impl Drowsy {
    /// The thread is about to sleep: it looks for work once more after this.
    fn sleep(&self) {
        self.0.store(true, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// The thread is awake again.
    fn awake(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    /// After publishing work: whether the caller must wake the thread.
    #[inline]
    fn take(&self) -> bool {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::SeqCst)
    }
}

/// A nonblocking datagram socket pair a sleeping thread polls: a producer
/// rings it with one byte, the thread drains it when awake.
#[derive(Debug)]
struct Doorbell {
    tx: std::os::unix::net::UnixDatagram,
    rx: std::os::unix::net::UnixDatagram,
}

impl Doorbell {
    fn new() -> std::io::Result<Doorbell> {
        let (tx, rx) = std::os::unix::net::UnixDatagram::pair()?;
        tx.set_nonblocking(true)?;
        rx.set_nonblocking(true)?;
        Ok(Doorbell { tx, rx })
    }

    /// (a full socket already holds a wakeup)
    #[inline]
    fn ring(&self) {
        let _ = self.tx.send(&[1]);
    }

    /// Takes every pending ring.
    fn drain(&self) {
        let mut b = [0u8; 16];
        while self.rx.recv(&mut b).is_ok() {}
    }

    /// What the sleeper polls.
    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.rx.as_fd()
    }
}

/// Wakes the thread that takes the punt queues when it sleeps: a worker that
/// queued punts in a vector sends one byte on a datagram socket the thread
/// polls, and only when the thread said it was going to sleep, so a busy punt
/// path costs the workers no system call.
#[derive(Debug)]
pub struct PuntSignal {
    sleeping: Drowsy,
    bell: Doorbell,
}

impl PuntSignal {
    /// A signal (a nonblocking socket pair).
    pub fn new() -> std::io::Result<PuntSignal> {
        Ok(PuntSignal {
            sleeping: Drowsy::default(),
            bell: Doorbell::new()?,
        })
    }

    /// Wakes the punt thread if it sleeps (workers, after queueing punts).
    #[inline]
    pub fn notify(&self) {
        if self.sleeping.take() {
            self.bell.ring();
        }
    }

    /// Wakes the punt thread whether it sleeps or not (to stop it).
    pub fn notify_always(&self) {
        self.bell.ring();
    }

    /// The punt thread is about to sleep: look at the queues once more after
    /// this, then poll [`PuntSignal::fd`].
    pub fn sleep(&self) {
        self.sleeping.sleep();
    }

    /// The punt thread is awake: clears the signal.
    pub fn awake(&self) {
        self.sleeping.awake();
        self.bell.drain();
    }

    /// What the punt thread polls.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.bell.fd()
    }
}

/// What wakes a worker from its idle sleep when the punt thread or the
/// control thread gives it frames to inject: a worker that sleeps says so
/// first, and only then does a producer unpark it (no cost while it polls).
/// A worker whose ports have descriptors to poll (af_packet) sleeps in `ppoll`
/// on them and on a [`Doorbell`] the producer then rings.
#[derive(Debug, Default)]
pub struct WorkerWake {
    sleeping: Drowsy,
    thread: std::sync::OnceLock<std::thread::Thread>,
    /// Rung with the unpark once a worker sleeps in `ppoll`.
    bell: std::sync::OnceLock<Doorbell>,
    /// Times a producer woke the worker.
    wakes: crate::counters::Counter,
}

impl WorkerWake {
    /// Sleeps the calling worker up to `d`, unless `work()` (checked after it
    /// said it sleeps) finds something to do: in `ppoll` on `fds` when there
    /// are any (their first entry is [`WorkerWake::poll_fd`]'s), else parked.
    /// Returns whether one of the other descriptors (a port's) ended it.
    fn sleep(&self, d: Duration, fds: &mut [libc::pollfd], work: impl Fn() -> bool) -> bool {
        if self.thread.get().is_none() {
            let _ = self.thread.set(std::thread::current());
        }
        self.sleeping.sleep();
        let mut rx = false;
        if !work() {
            if fds.is_empty() {
                std::thread::park_timeout(d);
            } else {
                for f in fds.iter_mut() {
                    f.revents = 0;
                }
                let n = crate::dpdk::ppoll(fds, d).unwrap_or(0);
                if n > 0 {
                    if let Some(b) = self.bell.get().filter(|_| fds[0].revents != 0) {
                        b.drain();
                    }
                    rx = fds[1..].iter().any(|f| f.revents != 0);
                }
            }
        }
        self.sleeping.awake();
        rx
    }

    /// The descriptor a worker sleeping in `ppoll` watches for a producer's
    /// wakeup (created on first use; `None` if the socket pair cannot be).
    fn poll_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        if self.bell.get().is_none() {
            let _ = self.bell.set(Doorbell::new().ok()?);
        }
        self.bell.get().map(|b| b.fd().as_raw_fd())
    }

    /// Wakes the worker if it sleeps (after pushing to its inject queue).
    #[inline]
    pub fn wake(&self) {
        if self.sleeping.take() {
            self.wakes.inc();
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
            if let Some(b) = self.bell.get() {
                b.ring();
            }
        }
    }

    /// Times a producer woke the worker.
    pub fn wakes(&self) -> u64 {
        self.wakes.get()
    }
}

/// Punts a worker lets through per second, per class (see
/// [`PuntClass`]; every class but `Other` is control): routing protocols, ARP and ND have a budget of
/// their own, so a flood of other traffic to the router cannot starve them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PuntRates {
    /// Control class, packets per second.
    pub control_pps: u32,
    /// Everything else, packets per second.
    pub other_pps: u32,
}

impl Default for PuntRates {
    fn default() -> Self {
        PuntRates {
            control_pps: 20_000,
            other_pps: 2_000,
        }
    }
}

/// The per-worker punt policer, token buckets in TSC ticks holding a tenth of
/// a second of their rate: one per [`PuntClass`] for the worker (`control_pps`
/// each, a tenth of it for bare SYNs, `other_pps` for the rest), and one per
/// receiving interface and class with a quarter of that (half for `other`), so
/// no single interface can spend a class's budget.
#[derive(Debug, Clone)]
struct PuntPolicer {
    class: [Bucket; PuntClass::COUNT],
    per_if: Box<[[Bucket; PuntClass::COUNT]]>,
}

impl PuntPolicer {
    fn new(r: PuntRates, hz: u64) -> PuntPolicer {
        let bucket = |rate: u32| Bucket::new(rate, (rate / 10).max(16), hz);
        let rate = |c: PuntClass| match c {
            PuntClass::Syn => r.control_pps / 10,
            PuntClass::Other => r.other_pps,
            _ => r.control_pps,
        };
        let share = |c: PuntClass| match c {
            PuntClass::Other => rate(c) / 2,
            _ => rate(c) / 4,
        };
        PuntPolicer {
            class: PuntClass::ALL.map(|c| bucket(rate(c))),
            per_if: vec![PuntClass::ALL.map(|c| bucket(share(c))); MAX_IFACES].into_boxed_slice(),
        }
    }

    /// Whether a punt of `class` from interface `rx_if` may go at `now`.
    fn take(&mut self, rx_if: u16, class: PuntClass, now: u64) -> bool {
        let c = class as usize;
        self.per_if
            .get_mut(usize::from(rx_if))
            .is_some_and(|b| b[c].take(now))
            && self.class[c].take(now)
    }
}

/// A routing worker bound to its queues.
pub struct RouterWorker {
    policer: PuntPolicer,
    core: Core,
    rx: Vec<(u16, u16)>,
    tx_queue: u16,
    ports: usize,
    punts: Arc<PuntQueue>,
    stop: Arc<AtomicBool>,
    idle: IdlePolicy,
    sflow: Option<SflowHook>,
    /// Packets the control thread gives this worker to send.
    inject: Option<Arc<InjectQueue>>,
    /// Wakes whoever takes the punts.
    punt_signal: Option<Arc<PuntSignal>>,
    /// Ends its idle sleeps when frames are given to inject.
    wake: Option<Arc<WorkerWake>>,
    /// Its ports' descriptors that a frame makes readable (af_packet): it
    /// sleeps in `ppoll` on them.
    rx_wait: Vec<std::os::fd::RawFd>,
    /// The control namespace's sessions, for the policer.
    sessions: Option<Arc<ArcSwap<Sessions>>>,
    /// The core's counters, kept here so the loop never touches the Arc's refcount.
    stats: Arc<WorkerStats>,
    /// Buffers for the packets the core held while their next hop resolved.
    pool: Option<Arc<Mempool>>,
}

impl std::fmt::Debug for RouterWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterWorker")
            .field("rx", &self.rx)
            .field("tx_queue", &self.tx_queue)
            .finish()
    }
}

impl RouterWorker {
    /// A worker polling `rx` (port, queue) pairs, sending on queue `tx_queue` of each
    /// of `ports` ports (ids 0..ports).
    pub fn new(
        core: Core,
        rx: Vec<(u16, u16)>,
        tx_queue: u16,
        ports: usize,
        punts: Arc<PuntQueue>,
        stop: Arc<AtomicBool>,
        idle: IdlePolicy,
    ) -> RouterWorker {
        let stats = core.stats().clone();
        RouterWorker {
            policer: PuntPolicer::new(PuntRates::default(), crate::dpdk::tsc_hz()),
            stats,
            core,
            rx,
            tx_queue,
            ports,
            punts,
            stop,
            idle,
            sflow: None,
            inject: None,
            punt_signal: None,
            wake: None,
            rx_wait: Vec::new(),
            sessions: None,
            pool: None,
        }
    }

    /// Sleeps in `ppoll` on `fds` (its af_packet ports' sockets, from
    /// [`crate::dpdk::Port::rx_wait_fds`]) when idle, so that the next frame
    /// ends the sleep; needs [`RouterWorker::with_wake`]. The descriptors
    /// must outlive the worker's loop (the ports are closed after it).
    pub fn with_rx_wait(mut self, fds: Vec<std::os::fd::RawFd>) -> RouterWorker {
        self.rx_wait = fds;
        self
    }

    /// Wakes the punt thread through `s` after queueing punts.
    pub fn with_punt_signal(mut self, s: Arc<PuntSignal>) -> RouterWorker {
        self.punt_signal = Some(s);
        self
    }

    /// Sends what the control thread puts in `q` (ARP probes), a few packets per
    /// loop, on this worker's tx queues.
    pub fn with_inject(mut self, q: Arc<InjectQueue>) -> RouterWorker {
        self.inject = Some(q);
        self
    }

    /// Polices routing-protocol punts knowing the control namespace's
    /// sessions (its own class for them; TCP nobody listens for is `other`).
    pub fn with_sessions(mut self, s: Arc<ArcSwap<Sessions>>) -> RouterWorker {
        self.sessions = Some(s);
        self
    }

    /// Idle sleeps end early when a producer of the inject queue calls
    /// [`WorkerWake::wake`].
    pub fn with_wake(mut self, w: Arc<WorkerWake>) -> RouterWorker {
        self.wake = Some(w);
        self
    }

    /// Sends the packets the core held for an unresolved next hop (see
    /// [`Core::release`]) in buffers from `pool`; without one they wait out the
    /// hold time and are dropped.
    pub fn with_pool(mut self, pool: Arc<Mempool>) -> RouterWorker {
        self.pool = Some(pool);
        self
    }

    /// Polices punts at `rates` (default [`PuntRates::default`]).
    pub fn with_punt_rates(mut self, rates: PuntRates) -> RouterWorker {
        self.policer = PuntPolicer::new(rates, crate::dpdk::tsc_hz());
        self
    }

    /// Samples with `hook` (sFlow) after every forwarding decision.
    pub fn with_sflow(mut self, hook: SflowHook) -> RouterWorker {
        self.sflow = Some(hook);
        self
    }

    /// One loop: receive up to a vector, forward it. Returns the packets received.
    pub fn poll_once(
        &mut self,
        start: usize,
        rx: &mut Burst,
        tx: &mut [Burst],
        out: &mut [Out; BURST],
    ) -> usize {
        if let Some(q) = &self.inject {
            if !q.is_empty() {
                inject(q, tx, self.ports, self.tx_queue, &self.stats);
            }
        }
        if self.core.holding() > 0 {
            self.release_held(tx, out);
        }
        let t0 = tsc();
        let nq = self.rx.len();
        for k in 0..nq {
            if rx.room() == 0 {
                break;
            }
            let (port, queue) = self.rx[(start + k) % nq];
            let before = rx.len();
            // Chunks of RX_CHUNK until the vector is full or the queue runs dry.
            while rx.room() > 0 {
                let want = rx.room().min(RX_CHUNK);
                if rx.rx_burst(port, queue, want) < want {
                    break;
                }
            }
            // The core finds the receiving interface by the mbuf's port, and not
            // every PMD fills it in (net_ring leaves what the allocator put there:
            // RTE_MBUF_PORT_INVALID after a reset). A PMD sets it on all packets or
            // on none, so the first one tells.
            let got = &mut rx.as_mut_slice()[before..];
            if got.first().is_some_and(|m| m.port() != port) {
                for m in got {
                    m.set_port(port);
                }
            }
        }
        let n = rx.len();
        if n == 0 {
            return 0;
        }
        let stats = &self.stats;
        let t1 = tsc();
        let c = &stats.stages[Stage::Rx as usize];
        c.calls.inc();
        c.pkts.add(n as u64);
        c.cycles.add(t1.wrapping_sub(t0));

        match &mut self.sflow {
            Some(h) => h.process(&mut self.core, rx.as_mut_slice(), &mut out[..n]),
            None => self.core.process(rx.as_mut_slice(), &mut out[..n]),
        }

        let t2 = tsc();
        let ports = self.ports;
        let tx_queue = self.tx_queue;
        // The common case: the whole vector leaves on one port. Send the rx vector
        // as it is, without sorting packets into per-port bursts.
        if let Out::Tx(port) = out[0] {
            // (no early exit: the comparisons run branch-free, the common case
            // reads the whole vector anyway)
            let same = out[1..n]
                .iter()
                .fold(true, |same, &o| same & (o == Out::Tx(port)));
            if usize::from(port) < ports && same {
                flush(
                    rx,
                    port,
                    tx_queue,
                    &stats.drops[DropReason::TxFull as usize],
                );
                return tx_done(stats, n, t0, t2);
            }
        }
        self.dispatch(rx, tx, &out[..n], t2);
        tx_done(&self.stats, n, t0, t2)
    }

    /// Sends each packet of `b` where `out` says (per-port bursts, the punt
    /// queue through the policer, or freed), `t2` being the policer's clock.
    fn dispatch(&mut self, b: &mut Burst, tx: &mut [Burst], out: &[Out], t2: u64) {
        let stats = &self.stats;
        let ports = self.ports;
        let tx_queue = self.tx_queue;
        let punts = &self.punts;
        let policer = &mut self.policer;
        let sessions = self.sessions.as_deref();
        // Loaded at the vector's first routing punt, if it has one.
        let mut snapshot = None;
        let mut punted = false;
        b.drain_each(|i, m| match out[i] {
            Out::Tx(port) if usize::from(port) < ports => {
                let t = &mut tx[usize::from(port)];
                if t.room() == 0 {
                    flush(t, port, tx_queue, &stats.drops[DropReason::TxFull as usize]);
                }
                let _ = t.push(m);
            }
            Out::Punt(r, rx_if) => {
                let mut class = PuntClass::of(r, m.data());
                if let (PuntReason::Routing, Some(s)) = (r, sessions) {
                    class = snapshot
                        .get_or_insert_with(|| s.load())
                        .classify(m.data(), class);
                }
                if !policer.take(rx_if, class, t2) {
                    // (by the class that was policed, as the interface counts it:
                    // TCP to a port nobody listens on is `other` whatever its
                    // reason)
                    let policed = if class == PuntClass::Other {
                        DropReason::PuntPolicedOther
                    } else {
                        DropReason::PuntPolicedControl
                    };
                    stats.drops[policed as usize].inc();
                    if let Some(i) = stats.ifaces.get(usize::from(rx_if)) {
                        i.punt_policed[class as usize].inc();
                    }
                } else if punts.push((r, m)).is_err() {
                    stats.drops[DropReason::PuntQueueFull as usize].inc();
                } else {
                    punted = true;
                }
            }
            Out::Tx(_) => {
                stats.drops[DropReason::NoTxPort as usize].inc();
                drop(m);
            }
            // (counted where it was dropped)
            Out::Drop => drop(m),
        });
        if let (true, Some(s)) = (punted, &self.punt_signal) {
            s.notify();
        }
        for (port, t) in tx.iter_mut().enumerate() {
            if !t.is_empty() {
                flush(
                    t,
                    port as u16,
                    tx_queue,
                    &stats.drops[DropReason::TxFull as usize],
                );
            }
        }
    }

    /// Sends what the core held and may now go (see [`Core::release`]).
    #[cold]
    #[inline(never)]
    fn release_held(&mut self, tx: &mut [Burst], out: &mut [Out; BURST]) {
        let ready = self.core.held_ready();
        let Some(pool) = self.pool.as_ref().filter(|_| ready > 0) else {
            return;
        };
        let mut b = Burst::new();
        for _ in 0..ready.min(BURST) {
            let Some(m) = pool.alloc() else {
                break;
            };
            let _ = b.push(m);
        }
        let got = b.len();
        let n = self.core.release(b.as_mut_slice(), &mut out[..got]);
        // (buffers beyond what was released go back to the pool)
        while b.len() > n {
            drop(b.pop());
        }
        self.dispatch(&mut b, tx, &out[..n], tsc());
    }

    /// Polls until the stop flag is set.
    pub fn run(&mut self) {
        let mut rx = Burst::new();
        let mut tx: Vec<Burst> = (0..self.ports).map(|_| Burst::new()).collect();
        let mut out = [Out::Drop; BURST];
        let mut empty = 0u32;
        let mut sleep_us = 1u32;
        let mut start = 0usize;
        let stats = self.stats.clone();
        if self.idle.max_sleep_us > 0 {
            crate::dpdk::precise_sleeps();
        }
        // [the wake socket, the ports' sockets...], or none: parked sleeps.
        let mut pfds: Vec<libc::pollfd> = match self.wake.as_ref().and_then(|w| w.poll_fd()) {
            Some(w) if !self.rx_wait.is_empty() => std::iter::once(w)
                .chain(self.rx_wait.iter().copied())
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
            _ => Vec::new(),
        };
        while !self.stop.load(Ordering::Relaxed) {
            let got = self.poll_once(start, &mut rx, &mut tx, &mut out);
            stats.loops.inc();
            start = start.wrapping_add(1);
            // Frames waiting to be injected are work too: no sleeping on them.
            if got > 0 || self.inject.as_ref().is_some_and(|q| !q.is_empty()) {
                empty = 0;
                sleep_us = 1;
            } else {
                empty += 1;
                if self.idle.max_sleep_us > 0 && empty >= self.idle.spin_loops {
                    let d = Duration::from_micros(u64::from(sleep_us));
                    match &self.wake {
                        Some(w) => {
                            let q = self.inject.as_deref();
                            if w.sleep(d, &mut pfds, || q.is_some_and(|q| !q.is_empty())) {
                                stats.rx_wakes.inc();
                            }
                        }
                        None => std::thread::sleep(d),
                    }
                    stats.idle_sleeps.inc();
                    sleep_us = (sleep_us * 2).min(self.idle.max_sleep_us);
                }
            }
        }
    }
}

/// Sends up to [`INJECT_PER_LOOP`] packets of the control thread's queue, one tx
/// burst per port (the bursts are empty when a loop starts).
#[cold]
fn inject(q: &InjectQueue, tx: &mut [Burst], ports: usize, queue: u16, stats: &WorkerStats) {
    for _ in 0..INJECT_PER_LOOP {
        let Some((port, m)) = q.pop() else {
            break;
        };
        let Some(b) = tx
            .get_mut(usize::from(port))
            .filter(|_| usize::from(port) < ports)
        else {
            stats.drops[DropReason::NoTxPort as usize].inc();
            continue;
        };
        if b.push(m).is_err() {
            stats.drops[DropReason::TxFull as usize].inc();
            continue;
        }
        stats.injected.inc();
    }
    for (port, b) in tx.iter_mut().enumerate() {
        if !b.is_empty() {
            flush(
                b,
                port as u16,
                queue,
                &stats.drops[DropReason::TxFull as usize],
            );
        }
    }
}

/// Packets of the inject queue sent per loop at most.
const INJECT_PER_LOOP: usize = 64;

/// Counts the tx stage (started at `t2`) and the busy loop (started at `t0`) of a
/// vector of `n` packets; returns `n`.
#[inline(always)]
fn tx_done(stats: &WorkerStats, n: usize, t0: u64, t2: u64) -> usize {
    let t3 = tsc();
    let c = &stats.stages[Stage::Tx as usize];
    c.calls.inc();
    c.pkts.add(n as u64);
    c.cycles.add(t3.wrapping_sub(t2));
    stats.busy_loops.inc();
    stats.busy_cycles.add(t3.wrapping_sub(t0));
    n
}

#[inline(always)]
fn flush(b: &mut Burst, port: u16, queue: u16, refused: &crate::counters::Counter) {
    b.tx_burst(port, queue);
    if !b.is_empty() {
        refused.add(b.len() as u64);
        b.clear();
    }
}

#[cfg(test)]
mod queue_tests {
    use super::*;

    #[test]
    fn a_queue_holds_its_slots_refuses_more_and_pops_in_order() {
        let q: Queue<u32> = Queue::new();
        assert!(q.is_empty());
        for i in 0..QUEUE_SLOTS as u32 {
            assert!(q.push(i).is_ok(), "{i}");
        }
        assert_eq!(q.push(7), Err(7));
        assert_eq!(q.len(), QUEUE_SLOTS);
        for i in 0..QUEUE_SLOTS as u32 {
            assert_eq!(q.pop(), Some(i));
        }
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
        for round in 0..3 * QUEUE_SLOTS as u32 {
            assert!(q.push(round).is_ok());
            assert_eq!(q.pop(), Some(round));
        }
    }

    #[test]
    fn two_producers_and_a_consumer_lose_nothing_and_keep_each_producers_order() {
        const EACH: u32 = 100_000;
        let q: Arc<Queue<(u32, u32)>> = Arc::new(Queue::new());
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        let mut v = (p, i);
                        while let Err(back) = q.push(v) {
                            v = back;
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u32; 2];
        while next != [EACH; 2] {
            match q.pop() {
                Some((p, i)) => {
                    assert_eq!(i, next[p as usize], "producer {p}");
                    next[p as usize] += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        for t in producers {
            t.join().unwrap();
        }
        assert!(q.is_empty() && q.pop().is_none());
    }
}
