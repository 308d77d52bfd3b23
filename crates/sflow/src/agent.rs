//! The agent: the control thread's side. It owns the consumer ends of the workers'
//! rings, turns samples into sFlow v5 datagrams, polls interface counters and sends
//! everything to the collectors over UDP.
//!
//! Plain `std`: nothing blocks (the sockets are non-blocking) and every call does a
//! bounded amount of work, so it runs as well from a tokio task as from a thread:
//! call [`Agent::poll`] every few milliseconds (VPP's plugin drains its FIFOs every
//! 1 ms) and at the latest at [`Agent::next_deadline`].
//!
//! Each worker is one sub-agent: its datagrams carry its id, their own sequence
//! numbers and only its samples, and each of its data sources (ifIndexes) has its
//! own flow-sample sequence number, pool and drops. Counter samples come from the
//! dataplane's port counters (the caller's [`CounterSource`]) and travel in the
//! datagrams of one sub-agent ([`AgentConfig::counters_sub_agent`]), so each
//! interface's counters are reported once.
//!
//! The agent takes at most [`AgentConfig::max_samples_per_second`] flow samples
//! from the rings (a token bucket of one second's worth). Beyond it the samples
//! wait in the rings, and a full ring makes the worker drop and count what it
//! picks: in overload the workers count their picks (and draw the next skip)
//! instead of writing sample slots this thread reads back from the other core,
//! and the collectors still learn of every loss from the drops field.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{
    AgentConfig, ConfigError, MAX_IFINDEX, Sampling, datagram_header_len, resolve_collector,
    validate_agent_address, validate_datagram_size, validate_header_bytes,
    validate_polling_interval,
};
use crate::proto::{
    CounterRecord, CountersSample, DataSource, DatagramHeader, EthernetCounters, IfCounters,
};
use crate::record::SampleRecord;
use crate::sampler::{SampleConsumer, SamplingTable, WorkerCounters, WorkerSampler, channel};

/// Samples taken from one ring before the next ring's turn (VPP's main thread
/// takes one per worker per round; a few dozen keeps the rounds cheap).
const ROUND: usize = 64;

/// One interface's counters, as the dataplane reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterfaceCounters {
    /// Generic counters (their `if_index` names the interface).
    pub generic: IfCounters,
    /// Ethernet counters, if the port has them.
    pub ethernet: Option<EthernetCounters>,
}

/// What the agent asks of the router, on the agent's thread: counters (once
/// per polling interval) and the route masks of each flow sample.
pub trait CounterSource {
    /// Appends the counters of every interface to report to `out` (which the agent
    /// clears and reuses).
    fn poll_counters(&mut self, out: &mut Vec<InterfaceCounters>);

    /// extended_router's masks for a flow sample before it is encoded: the
    /// lengths of the routes to its source and destination (`None`: keep the
    /// record's). Workers do not know them (a lookup answers with a result, not
    /// a prefix): the control plane looks them up here.
    fn mask_lengths(&mut self, _rec: &SampleRecord) -> Option<(u8, u8)> {
        None
    }
}

impl<F: FnMut(&mut Vec<InterfaceCounters>)> CounterSource for F {
    fn poll_counters(&mut self, out: &mut Vec<InterfaceCounters>) {
        self(out)
    }
}

/// A counter source with no interfaces.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCounters;

impl CounterSource for NoCounters {
    fn poll_counters(&mut self, _out: &mut Vec<InterfaceCounters>) {}
}

/// One worker's line of `show sflow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkerStats {
    /// Worker id (= sub-agent id).
    pub worker: u32,
    /// Packets picked for sampling.
    pub sampled: u64,
    /// Samples lost in the worker (ring full).
    pub dropped: u64,
    /// Samples sent in datagrams.
    pub exported: u64,
    /// Samples waiting in the ring.
    pub queued: u64,
}

impl WorkerStats {
    fn read(worker: u32, c: &WorkerCounters, queued: usize) -> WorkerStats {
        WorkerStats {
            worker,
            sampled: c.sampled(),
            dropped: c.dropped(),
            exported: c.exported(),
            queued: queued as u64,
        }
    }
}

/// One (worker, interface) data source as last reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceStats {
    /// Worker (sub-agent).
    pub worker: u32,
    /// ifIndex.
    pub ifindex: u32,
    /// Rate of the last sample.
    pub sampling_rate: u32,
    /// Flow samples sent.
    pub flow_samples: u64,
    /// Sample pool of the last sample.
    pub sample_pool: u64,
    /// Drops reported with the last sample.
    pub drops: u64,
}

/// Agent totals and the per-worker lines (`show sflow`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentStats {
    /// Datagrams built and handed to the sockets.
    pub datagrams: u64,
    /// Their bytes (UDP payload).
    pub bytes: u64,
    /// `send_to` calls that failed (per collector).
    pub send_errors: u64,
    /// Flow samples encoded.
    pub flow_samples: u64,
    /// Counter samples encoded.
    pub counter_samples: u64,
    /// Samples that could not be encoded (an ifIndex out of range).
    pub encode_errors: u64,
    /// Samples drained while no collector was configured.
    pub unsent_samples: u64,
    /// Per worker.
    pub workers: Vec<WorkerStats>,
}

/// What one [`Agent::poll`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PollReport {
    /// Flow samples taken from the rings.
    pub samples: usize,
    /// Counter samples encoded.
    pub counter_samples: usize,
    /// Datagrams sent.
    pub datagrams: usize,
    /// The drain budget ran out: samples may be waiting, poll again soon.
    pub more: bool,
}

/// Per data source state of a sub-agent.
#[derive(Debug, Clone, Copy, Default)]
struct SourceSeq {
    flow_seq: u32,
    counter_seq: u32,
    flow_samples: u64,
    rate: u32,
    pool: u64,
    drops: u64,
}

/// One sub-agent: a worker's samples (and maybe the counters), its datagram in
/// progress and its sequence numbers.
#[derive(Debug)]
struct SubAgent {
    id: u32,
    worker: Option<SampleConsumer>,
    /// Sequence number of the last datagram sent.
    seq: u32,
    /// The datagram in progress; `buf.len()` is the maximum datagram size and the
    /// header's bytes are reserved in front.
    buf: Vec<u8>,
    len: usize,
    n_samples: u32,
    n_flow: u64,
    since: Option<Instant>,
    sources: Vec<SourceSeq>,
}

impl SubAgent {
    fn new(id: u32, max_bytes: usize, header_len: usize) -> SubAgent {
        SubAgent {
            id,
            worker: None,
            seq: 0,
            buf: vec![0; max_bytes],
            len: header_len,
            n_samples: 0,
            n_flow: 0,
            since: None,
            sources: vec![SourceSeq::default(); MAX_IFINDEX as usize + 1],
        }
    }
}

/// The sockets and the collectors.
#[derive(Debug, Default)]
struct Sender {
    collectors: Vec<SocketAddr>,
    sock4: Option<UdpSocket>,
    sock6: Option<UdpSocket>,
    datagrams: u64,
    bytes: u64,
    send_errors: u64,
}

fn open_socket(v6: bool) -> Result<UdpSocket, ConfigError> {
    let bind: SocketAddr = if v6 {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(bind)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

impl Sender {
    /// Opens the sockets `collectors` need that are not open yet, without changing
    /// anything (so a failure leaves the agent as it was).
    fn sockets_for(
        &self,
        collectors: &[SocketAddr],
    ) -> Result<(Option<UdpSocket>, Option<UdpSocket>), ConfigError> {
        let need4 = self.sock4.is_none() && collectors.iter().any(SocketAddr::is_ipv4);
        let need6 = self.sock6.is_none() && collectors.iter().any(SocketAddr::is_ipv6);
        let s4 = if need4 {
            Some(open_socket(false)?)
        } else {
            None
        };
        let s6 = if need6 {
            Some(open_socket(true)?)
        } else {
            None
        };
        Ok((s4, s6))
    }

    fn install(
        &mut self,
        collectors: Vec<SocketAddr>,
        socks: (Option<UdpSocket>, Option<UdpSocket>),
    ) {
        if socks.0.is_some() {
            self.sock4 = socks.0;
        }
        if socks.1.is_some() {
            self.sock6 = socks.1;
        }
        self.collectors = collectors;
    }

    /// Sends to every collector; true if at least one send succeeded.
    fn send(&mut self, dgram: &[u8]) -> bool {
        let mut ok = false;
        for c in &self.collectors {
            let sock = if c.is_ipv4() {
                &self.sock4
            } else {
                &self.sock6
            };
            match sock.as_ref().map(|s| s.send_to(dgram, c)) {
                Some(Ok(_)) => ok = true,
                _ => self.send_errors += 1,
            }
        }
        self.datagrams += 1;
        self.bytes += dgram.len() as u64;
        ok
    }
}

fn uptime_ms(start: Instant, now: Instant) -> u32 {
    now.saturating_duration_since(start).as_millis() as u32
}

/// Sends `sub`'s datagram in progress, if it has samples.
fn flush(
    sub: &mut SubAgent,
    tx: &mut Sender,
    agent: IpAddr,
    start: Instant,
    now: Instant,
    unsent: &mut u64,
) -> bool {
    if sub.n_samples == 0 {
        return false;
    }
    let hdr = DatagramHeader {
        agent_address: agent.into(),
        sub_agent_id: sub.id,
        sequence_number: sub.seq.wrapping_add(1),
        uptime_ms: uptime_ms(start, now),
    };
    let hl = hdr.buffer_len();
    let len = sub.len.min(sub.buf.len());
    let written = sub
        .buf
        .get_mut(..hl)
        .map(|b| hdr.emit(sub.n_samples, b).is_ok());
    let sent = written == Some(true) && tx.send(&sub.buf[..len]);
    sub.seq = sub.seq.wrapping_add(1);
    match (&sub.worker, sent) {
        (Some(w), true) => w.counters().add_exported(sub.n_flow),
        _ => *unsent += sub.n_flow,
    }
    sub.len = hl;
    sub.n_samples = 0;
    sub.n_flow = 0;
    sub.since = None;
    true
}

/// The sFlow agent. See the module documentation.
#[derive(Debug)]
pub struct Agent {
    cfg: AgentConfig,
    table: Arc<SamplingTable>,
    tx: Sender,
    start: Instant,
    subs: Vec<SubAgent>,
    next_poll: Option<Instant>,
    counters_buf: Vec<InterfaceCounters>,
    seed: u64,
    rr: usize,
    /// Flow samples the export limit lets through now, and when it was refilled.
    tokens: f64,
    refilled: Option<Instant>,
    flow_samples: u64,
    counter_samples: u64,
    encode_errors: u64,
    unsent: u64,
}

impl Agent {
    /// An agent with `cfg` (validated, collectors resolved, sockets opened), no
    /// workers yet. Uptime counts from now.
    pub fn new(cfg: AgentConfig) -> Result<Agent, ConfigError> {
        let collectors = cfg.validate()?;
        let mut tx = Sender::default();
        let socks = tx.sockets_for(&collectors)?;
        tx.install(collectors, socks);
        let table = Arc::new(SamplingTable::new());
        table.set_header_bytes(cfg.header_bytes)?;
        for (&ifindex, &s) in &cfg.interfaces {
            table.set(ifindex, Some(s))?;
        }
        let seed = cfg.seed.unwrap_or_else(rand::random);
        Ok(Agent {
            cfg,
            table,
            tx,
            start: Instant::now(),
            subs: Vec::new(),
            next_poll: None,
            counters_buf: Vec::new(),
            seed,
            rr: 0,
            tokens: 0.0,
            refilled: None,
            flow_samples: 0,
            counter_samples: 0,
            encode_errors: 0,
            unsent: 0,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &AgentConfig {
        &self.cfg
    }

    /// The resolved collectors.
    pub fn collectors(&self) -> &[SocketAddr] {
        &self.tx.collectors
    }

    /// The sampling table the workers read.
    pub fn table(&self) -> &Arc<SamplingTable> {
        &self.table
    }

    /// When the agent started (uptime 0).
    pub fn start_time(&self) -> Instant {
        self.start
    }

    fn header_len(&self) -> usize {
        datagram_header_len(self.cfg.agent_address)
    }

    fn sub_index(&mut self, id: u32) -> usize {
        if let Some(i) = self.subs.iter().position(|s| s.id == id) {
            return i;
        }
        let hl = self.header_len();
        self.subs
            .push(SubAgent::new(id, self.cfg.max_datagram_bytes, hl));
        self.subs.len() - 1
    }

    /// Creates worker `worker`'s sampler (to move to the worker's thread) with a
    /// ring of [`AgentConfig::ring_capacity`] samples, and attaches its consumer end.
    pub fn add_worker(&mut self, worker: u32) -> Result<WorkerSampler, ConfigError> {
        self.check_new_worker(worker)?;
        let (sampler, consumer) = channel(
            worker,
            self.table.clone(),
            self.cfg.ring_capacity,
            self.seed,
        )?;
        self.attach(consumer)?;
        Ok(sampler)
    }

    fn check_new_worker(&self, worker: u32) -> Result<(), ConfigError> {
        if self
            .subs
            .iter()
            .any(|s| s.id == worker && s.worker.is_some())
        {
            return Err(ConfigError::DuplicateWorker(worker));
        }
        Ok(())
    }

    /// Attaches the consumer end of a ring made with [`channel`] on this agent's
    /// [`table`](Self::table).
    pub fn attach(&mut self, consumer: SampleConsumer) -> Result<(), ConfigError> {
        let id = consumer.worker();
        self.check_new_worker(id)?;
        if !Arc::ptr_eq(consumer.table(), &self.table) {
            return Err(ConfigError::ForeignTable(id));
        }
        let i = self.sub_index(id);
        self.subs[i].worker = Some(consumer);
        Ok(())
    }

    /// Detaches a worker (its thread has stopped): what is left in its ring is sent,
    /// then the consumer end is returned.
    pub fn detach(&mut self, worker: u32) -> Result<SampleConsumer, ConfigError> {
        let i = self
            .subs
            .iter()
            .position(|s| s.id == worker && s.worker.is_some())
            .ok_or(ConfigError::NoSuchWorker(worker))?;
        let now = Instant::now();
        while let Some(rec) = self.subs[i].worker.as_mut().and_then(SampleConsumer::pop) {
            self.encode_flow(i, &rec, now);
        }
        self.flush_sub(i, now);
        self.subs[i]
            .worker
            .take()
            .ok_or(ConfigError::NoSuchWorker(worker))
    }

    /// Turns sampling of `ifindex` on, changes it, or turns it off (`None`)
    /// (`sflow enable PORT rate N direction D` / `sflow disable PORT`).
    pub fn set_sampling(
        &mut self,
        ifindex: u32,
        sampling: Option<Sampling>,
    ) -> Result<(), ConfigError> {
        self.table.set(ifindex, sampling)?;
        match sampling {
            Some(s) => self.cfg.interfaces.insert(ifindex, s),
            None => self.cfg.interfaces.remove(&ifindex),
        };
        Ok(())
    }

    /// `sflow header-bytes N`.
    pub fn set_header_bytes(&mut self, n: u16) -> Result<(), ConfigError> {
        validate_header_bytes(n)?;
        validate_datagram_size(self.cfg.max_datagram_bytes, self.cfg.agent_address, n)?;
        self.table.set_header_bytes(n)?;
        self.cfg.header_bytes = n;
        Ok(())
    }

    /// `sflow max-samples N`: most flow samples exported per second over all
    /// workers; 0 = no limit.
    pub fn set_max_samples_per_second(&mut self, n: u32) {
        self.cfg.max_samples_per_second = n;
        self.tokens = self.tokens.min(f64::from(n));
    }

    /// `sflow polling SECS` (zero turns counter samples off).
    pub fn set_polling_interval(&mut self, d: Duration) -> Result<(), ConfigError> {
        validate_polling_interval(d)?;
        let old = self.cfg.polling_interval;
        self.cfg.polling_interval = d;
        // Keep the phase: the next poll is one new interval after the last one.
        if let Some(next) = self.next_poll {
            self.next_poll = Some(next.checked_sub(old).unwrap_or(next) + d);
        }
        Ok(())
    }

    /// `sflow collector add IP[:PORT]`: resolves it (now, once) and adds it;
    /// returns the address. Adding one already present changes nothing.
    pub fn add_collector(&mut self, spec: &str) -> Result<SocketAddr, ConfigError> {
        let addr = resolve_collector(spec)?;
        if self.tx.collectors.contains(&addr) {
            return Ok(addr);
        }
        let mut list = self.tx.collectors.clone();
        list.push(addr);
        let socks = self.tx.sockets_for(&list)?;
        self.tx.install(list, socks);
        self.cfg.collectors.push(spec.to_string());
        Ok(addr)
    }

    /// `sflow collector del IP[:PORT]`.
    pub fn remove_collector(&mut self, spec: &str) -> Result<SocketAddr, ConfigError> {
        let addr = resolve_collector(spec)?;
        let Some(i) = self.tx.collectors.iter().position(|&c| c == addr) else {
            return Err(ConfigError::NoSuchCollector(addr));
        };
        self.tx.collectors.remove(i);
        self.cfg
            .collectors
            .retain(|c| resolve_collector(c).map_or(true, |a| a != addr));
        Ok(addr)
    }

    /// Changes the agent address (flushes what is pending under the old one).
    pub fn set_agent_address(&mut self, ip: IpAddr) -> Result<(), ConfigError> {
        validate_agent_address(ip)?;
        validate_datagram_size(self.cfg.max_datagram_bytes, ip, self.cfg.header_bytes)?;
        self.flush_all(Instant::now());
        self.cfg.agent_address = ip;
        let hl = self.header_len();
        for s in &mut self.subs {
            s.len = hl;
        }
        Ok(())
    }

    /// Changes the largest datagram (flushes what is pending).
    pub fn set_max_datagram_bytes(&mut self, bytes: usize) -> Result<(), ConfigError> {
        validate_datagram_size(bytes, self.cfg.agent_address, self.cfg.header_bytes)?;
        self.flush_all(Instant::now());
        self.cfg.max_datagram_bytes = bytes;
        for s in &mut self.subs {
            s.buf = vec![0; bytes];
        }
        Ok(())
    }

    /// Replaces the whole configuration (a config file reload): validated and
    /// resolved first; on error nothing changes. The ring capacity applies to
    /// workers added afterwards.
    pub fn reconfigure(&mut self, cfg: AgentConfig) -> Result<(), ConfigError> {
        let collectors = cfg.validate()?;
        let socks = self.tx.sockets_for(&collectors)?;
        // Valid: apply. Pending datagrams go out under the old settings first.
        self.flush_all(Instant::now());
        self.tx.install(collectors, socks);
        for (&ifindex, &s) in &cfg.interfaces {
            self.table.set(ifindex, Some(s))?;
        }
        for &ifindex in self.cfg.interfaces.keys() {
            if !cfg.interfaces.contains_key(&ifindex) {
                self.table.set(ifindex, None)?;
            }
        }
        self.table.set_header_bytes(cfg.header_bytes)?;
        let hl = datagram_header_len(cfg.agent_address);
        for s in &mut self.subs {
            s.len = hl;
            if s.buf.len() != cfg.max_datagram_bytes {
                s.buf = vec![0; cfg.max_datagram_bytes];
            }
        }
        if cfg.polling_interval != self.cfg.polling_interval {
            self.next_poll = None;
        }
        if let Some(seed) = cfg.seed {
            self.seed = seed;
        }
        self.cfg = cfg;
        Ok(())
    }

    /// Drains the rings (at most the drain budget of samples), polls the counters
    /// when the interval is due, and sends full datagrams and those that have
    /// waited the flush delay. Never blocks.
    pub fn poll(&mut self, now: Instant, counters: &mut dyn CounterSource) -> PollReport {
        let before = self.tx.datagrams;
        let mut report = PollReport::default();
        self.drain(now, counters, &mut report);
        let interval = self.cfg.polling_interval;
        if !interval.is_zero() {
            let due = *self.next_poll.get_or_insert(now);
            if now >= due {
                report.counter_samples = self.poll_counters(now, counters);
                let next = due + interval;
                self.next_poll = Some(if next <= now { now + interval } else { next });
            }
        }
        for i in 0..self.subs.len() {
            if let Some(t) = self.subs[i].since {
                if now.saturating_duration_since(t) >= self.cfg.flush_delay {
                    self.flush_sub(i, now);
                }
            }
        }
        report.datagrams = (self.tx.datagrams - before) as usize;
        report
    }

    /// When `poll` has work next without new samples: the next counter poll or
    /// the flush of a partly filled datagram.
    pub fn next_deadline(&self) -> Option<Instant> {
        let flush = self
            .subs
            .iter()
            .filter_map(|s| s.since.map(|t| t + self.cfg.flush_delay))
            .min();
        let poll = if self.cfg.polling_interval.is_zero() {
            None
        } else {
            Some(self.next_poll.unwrap_or(self.start))
        };
        match (flush, poll) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Sends every partly filled datagram now.
    pub fn flush_all(&mut self, now: Instant) {
        for i in 0..self.subs.len() {
            self.flush_sub(i, now);
        }
    }

    fn flush_sub(&mut self, i: usize, now: Instant) {
        let Agent {
            subs,
            tx,
            cfg,
            start,
            unsent,
            ..
        } = self;
        if let Some(sub) = subs.get_mut(i) {
            flush(sub, tx, cfg.agent_address, *start, now, unsent);
        }
    }

    fn drain(&mut self, now: Instant, router: &mut dyn CounterSource, report: &mut PollReport) {
        let n = self.subs.len();
        if n == 0 {
            return;
        }
        let cap = self.cfg.max_samples_per_second;
        let mut budget = self.cfg.drain_budget;
        if cap > 0 {
            // The bucket holds one second's worth; it starts full.
            let full = f64::from(cap);
            let t = match self.refilled {
                Some(at) => now.saturating_duration_since(at).as_secs_f64(),
                None => 1.0,
            };
            self.tokens = (self.tokens + t * full).min(full);
            self.refilled = Some(now);
            budget = budget.min(self.tokens as usize);
        }
        let allowed = budget;
        loop {
            let mut any = false;
            for j in 0..n {
                let i = (self.rr + j) % n;
                let mut k = 0;
                while k < ROUND && budget > 0 {
                    let Some(mut rec) = self.subs[i].worker.as_mut().and_then(SampleConsumer::pop)
                    else {
                        break;
                    };
                    if let Some((src, dst)) = router.mask_lengths(&rec) {
                        (rec.src_mask_len, rec.dst_mask_len) = (src, dst);
                    }
                    self.encode_flow(i, &rec, now);
                    k += 1;
                    budget -= 1;
                    report.samples += 1;
                    any = true;
                }
            }
            if !any || budget == 0 {
                break;
            }
        }
        if cap > 0 {
            self.tokens -= (allowed - budget) as f64;
        }
        // (more only when the drain budget ran out, not the export limit)
        report.more = budget == 0 && allowed == self.cfg.drain_budget;
        self.rr = (self.rr + 1) % n;
    }

    fn encode_flow(&mut self, i: usize, rec: &SampleRecord, now: Instant) {
        if self.tx.collectors.is_empty() {
            self.unsent += 1;
            return;
        }
        let k = rec.source as usize;
        if k == 0 || k > MAX_IFINDEX as usize {
            self.encode_errors += 1;
            return;
        }
        let Agent {
            subs,
            tx,
            cfg,
            start,
            unsent,
            ..
        } = self;
        let Some(sub) = subs.get_mut(i) else {
            return;
        };
        let seq = sub.sources[k].flow_seq.wrapping_add(1);
        let res = rec.with_flow_sample(seq, |fs| {
            if sub.len + fs.buffer_len() > sub.buf.len() {
                flush(sub, tx, cfg.agent_address, *start, now, unsent);
            }
            fs.emit(sub.buf.get_mut(sub.len..).unwrap_or_default())
        });
        match res {
            Ok(n) => {
                sub.len += n;
                sub.n_samples += 1;
                sub.n_flow += 1;
                sub.since.get_or_insert(now);
                let s = &mut sub.sources[k];
                s.flow_seq = seq;
                s.flow_samples += 1;
                s.rate = rec.sampling_rate;
                s.pool = rec.sample_pool;
                s.drops = rec.drops;
                self.flow_samples += 1;
            }
            Err(_) => self.encode_errors += 1,
        }
    }

    fn poll_counters(&mut self, now: Instant, src: &mut dyn CounterSource) -> usize {
        if self.tx.collectors.is_empty() {
            return 0;
        }
        let mut list = std::mem::take(&mut self.counters_buf);
        list.clear();
        src.poll_counters(&mut list);
        let i = self.sub_index(self.cfg.counters_sub_agent);
        let mut n = 0;
        for c in &list {
            if self.encode_counters(i, c, now) {
                n += 1;
            }
        }
        self.counters_buf = list;
        n
    }

    fn encode_counters(&mut self, i: usize, c: &InterfaceCounters, now: Instant) -> bool {
        let k = c.generic.if_index as usize;
        if k == 0 || k > MAX_IFINDEX as usize {
            self.encode_errors += 1;
            return false;
        }
        let Agent {
            subs,
            tx,
            cfg,
            start,
            unsent,
            ..
        } = self;
        let Some(sub) = subs.get_mut(i) else {
            return false;
        };
        let seq = sub.sources[k].counter_seq.wrapping_add(1);
        let records = [
            CounterRecord::Generic(c.generic),
            CounterRecord::Ethernet(c.ethernet.unwrap_or_default()),
        ];
        let n = if c.ethernet.is_some() { 2 } else { 1 };
        //= sFlow v5 §5 "counters_sample": sequence_number incremented with each
        //= counter sample generated by this source_id.
        let cs = CountersSample {
            sequence_number: seq,
            source_id: DataSource::ifindex(c.generic.if_index),
            records: Cow::Borrowed(&records[..n]),
            expanded: false,
        };
        if sub.len + cs.buffer_len() > sub.buf.len() {
            flush(sub, tx, cfg.agent_address, *start, now, unsent);
        }
        match cs.emit(sub.buf.get_mut(sub.len..).unwrap_or_default()) {
            Ok(len) => {
                sub.len += len;
                sub.n_samples += 1;
                sub.since.get_or_insert(now);
                sub.sources[k].counter_seq = seq;
                self.counter_samples += 1;
                true
            }
            Err(_) => {
                self.encode_errors += 1;
                false
            }
        }
    }

    /// Totals and per-worker counters (`show sflow`).
    pub fn stats(&self) -> AgentStats {
        AgentStats {
            datagrams: self.tx.datagrams,
            bytes: self.tx.bytes,
            send_errors: self.tx.send_errors,
            flow_samples: self.flow_samples,
            counter_samples: self.counter_samples,
            encode_errors: self.encode_errors,
            unsent_samples: self.unsent,
            workers: self
                .subs
                .iter()
                .filter_map(|s| {
                    s.worker
                        .as_ref()
                        .map(|w| WorkerStats::read(s.id, w.counters(), w.len()))
                })
                .collect(),
        }
    }

    /// Every (worker, interface) data source that has sent flow samples.
    pub fn sources(&self) -> Vec<SourceStats> {
        let mut out = Vec::new();
        for s in &self.subs {
            for (k, src) in s.sources.iter().enumerate() {
                if src.flow_samples > 0 {
                    out.push(SourceStats {
                        worker: s.id,
                        ifindex: k as u32,
                        sampling_rate: src.rate,
                        flow_samples: src.flow_samples,
                        sample_pool: src.pool,
                        drops: src.drops,
                    });
                }
            }
        }
        out
    }
}
