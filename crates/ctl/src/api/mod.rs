//! What the control thread answers: every `dpctl` command, run against the router
//! (or the cross-connect), with results as JSON.
//!
//! Each request is checked completely (names, existence, duplicates, what depends on
//! what) before the first change, so a refused request leaves the router as it was.
//! Counters are written by the workers only; `clear counters` records a baseline
//! here, and every `show` subtracts it.
//!
//! This module owns [`RouterApi`] (its state, the counter baselines, the
//! [`Service`] the server drives) and the dispatch table (`Domain`); each
//! domain's commands and `show`s are in its own module: `routes`, `labels`,
//! `interfaces`, `vrfs`, `pw`, `neighbors`, `linux` (the Linux control plane
//! and FPM), `sflow`, `system` (show run/errors/version, traces, counters,
//! reload); `scrape` writes `/metrics`; `xconnect` is the L2 cross-connect's
//! API.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use ::sflow::{Agent, AgentConfig, Sampling};
use dataplane::dpdk::{Mempool, PortStats};
use dataplane::router::{
    DropReason, InjectQueue, Interface, MAX_IFACES, PuntClass, PuntReason, RouteSource,
    RouterControl, Stage, WorkerStats,
};
use dataplane::xconnect::{RxAssignment, WorkerCounters};
use fib::{IpPrefix, RouteKind, TableId, Via};

use crate::cli::{self, Command, RouteFilter};
use crate::config::Config;
use crate::decode;
use crate::error::{ApiError, ReloadError};
use crate::linux::LinuxPlane;
use crate::linux::nl::NlSocket;
use crate::metrics::Scrape;
use crate::routing::{self, PortInfo, Routing};
use crate::server::Service;
use crate::sflow_agent;
use crate::spec::{self, check_table, eos_word, ifindex};

pub use crate::ports::{DpdkPorts, NoPorts, PortSource};
pub use xconnect::{XconnectApi, XconnectPort};

mod interfaces;
mod labels;
mod linux;
mod neighbors;
mod pw;
mod routes;
mod scrape;
mod sflow;
mod system;
mod vrfs;
mod xconnect;

/// Facts about the daemon for `show version` and `reload`.
#[derive(Debug, Clone)]
pub struct DaemonInfo {
    /// The configuration file (reload re-reads it).
    pub config_path: Option<PathBuf>,
    /// The configuration running now.
    pub config: Config,
    /// The control socket.
    pub socket: PathBuf,
    /// Worker lcore ids, by worker index.
    pub lcores: Vec<u32>,
    /// TSC frequency.
    pub tsc_hz: u64,
    /// When the daemon started forwarding.
    pub started: Instant,
    /// Where Prometheus scrapes (`[metrics] listen`, the port as bound).
    pub metrics: Option<std::net::SocketAddr>,
}

impl DaemonInfo {
    fn version(&self, mode: &str) -> Value {
        json!({
            "name": "dataplaned",
            "version": env!("CARGO_PKG_VERSION"),
            "pid": std::process::id(),
            "mode": mode,
            "config": self.config_path.as_ref().map(|p| p.display().to_string()),
            "socket": self.socket.display().to_string(),
            "workers": self.lcores.len(),
            "uptime_s": self.started.elapsed().as_secs_f64(),
            "metrics": self.metrics.map(|a| format!("http://{a}/metrics")),
        })
    }

    /// The metrics every mode has: build info, start time, uptime.
    fn metrics(&self, m: &mut Scrape, mode: &str) {
        m.info(
            "build",
            "The daemon's version and forwarding mode.",
            &[("version", env!("CARGO_PKG_VERSION")), ("mode", mode)],
        );
        m.gauge("workers", "Worker lcores.", &[], self.lcores.len() as f64);
        m.gauge(
            "uptime_seconds",
            "Seconds since the daemon started forwarding.",
            &[],
            self.started.elapsed().as_secs_f64(),
        );
    }

    /// Re-reads the file and refuses it when a section that needs a restart changed.
    fn reread(&self) -> Result<(Config, Routing), ReloadError> {
        let path = self.config_path.as_ref().ok_or(ReloadError::NoFile)?;
        let shown = path.display().to_string();
        let (new, plan) = Config::load_planned(path).map_err(ReloadError::File)?;
        let restart = self.config.restart_sections(&new);
        if !restart.is_empty() {
            return Err(ReloadError::Restart {
                sections: restart.join(", "),
                path: shown,
            });
        }
        Ok((new, plan.routing))
    }
}

fn mac_str(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A stage row of `show run`.
fn stage_json(name: &str, state: &str, calls: u64, vectors: u64, cycles: u64) -> Value {
    json!({
        "name": name,
        "state": state,
        "calls": calls,
        "vectors": vectors,
        "suspends": 0,
        "cycles": cycles,
        "clocks_per_packet": ratio(cycles, vectors),
        "vectors_per_call": ratio(vectors, calls),
    })
}

// ---------------------------------------------------------------- router counters

/// Interface counters in a snapshot: rx pkts, rx bytes, tx pkts, tx bytes, drops.
type IfSnap = [u64; 5];

/// Every counter of one router worker at one moment.
#[derive(Debug, Clone)]
struct WorkerSnap {
    stages: [[u64; 3]; Stage::COUNT],
    drops: [u64; DropReason::COUNT],
    mpls_drops: [u64; mpls::DropReason::COUNT],
    punts: [u64; PuntReason::COUNT],
    ifaces: Vec<IfSnap>,
    /// Punts the policer dropped, per interface and [`PuntClass`].
    policed: Vec<[u64; PuntClass::COUNT]>,
    loops: u64,
    busy_loops: u64,
    busy_cycles: u64,
    idle_sleeps: u64,
    rx_wakes: u64,
    echo_replies: u64,
    icmp_errors: u64,
    arp_replies: u64,
    arp_requests: u64,
    held: u64,
    arp_consumed: u64,
    nd_replies: u64,
    nd_requests: u64,
    nd_consumed: u64,
    hold_released: u64,
}

impl WorkerSnap {
    fn take(s: &WorkerStats) -> WorkerSnap {
        WorkerSnap {
            stages: std::array::from_fn(|i| {
                let c = &s.stages[i];
                [c.calls.get(), c.pkts.get(), c.cycles.get()]
            }),
            drops: std::array::from_fn(|i| s.drops[i].get()),
            mpls_drops: std::array::from_fn(|i| s.mpls_drops[i].get()),
            punts: std::array::from_fn(|i| s.punts[i].get()),
            ifaces: s
                .ifaces
                .iter()
                .map(|c| {
                    [
                        c.rx_pkts.get(),
                        c.rx_bytes.get(),
                        c.tx_pkts.get(),
                        c.tx_bytes.get(),
                        c.drops.get(),
                    ]
                })
                .collect(),
            policed: s
                .ifaces
                .iter()
                .map(|c| std::array::from_fn(|k| c.punt_policed[k].get()))
                .collect(),
            loops: s.loops.get(),
            busy_loops: s.busy_loops.get(),
            busy_cycles: s.busy_cycles.get(),
            idle_sleeps: s.idle_sleeps.get(),
            rx_wakes: s.rx_wakes.get(),
            echo_replies: s.echo_replies.get(),
            icmp_errors: s.icmp_errors.get(),
            arp_replies: s.arp_replies.get(),
            arp_requests: s.arp_requests.get(),
            held: s.held.get(),
            arp_consumed: s.arp_consumed.get(),
            nd_replies: s.nd_replies.get(),
            nd_requests: s.nd_requests.get(),
            nd_consumed: s.nd_consumed.get(),
            hold_released: s.hold_released.get(),
        }
    }

    /// What was counted since `base`.
    fn since(&self, base: &WorkerSnap) -> WorkerSnap {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        WorkerSnap {
            stages: std::array::from_fn(|i| {
                std::array::from_fn(|k| d(self.stages[i][k], base.stages[i][k]))
            }),
            drops: std::array::from_fn(|i| d(self.drops[i], base.drops[i])),
            mpls_drops: std::array::from_fn(|i| d(self.mpls_drops[i], base.mpls_drops[i])),
            punts: std::array::from_fn(|i| d(self.punts[i], base.punts[i])),
            ifaces: self
                .ifaces
                .iter()
                .zip(&base.ifaces)
                .map(|(a, b)| std::array::from_fn(|k| d(a[k], b[k])))
                .collect(),
            policed: self
                .policed
                .iter()
                .zip(&base.policed)
                .map(|(a, b)| std::array::from_fn(|k| d(a[k], b[k])))
                .collect(),
            loops: d(self.loops, base.loops),
            busy_loops: d(self.busy_loops, base.busy_loops),
            busy_cycles: d(self.busy_cycles, base.busy_cycles),
            idle_sleeps: d(self.idle_sleeps, base.idle_sleeps),
            rx_wakes: d(self.rx_wakes, base.rx_wakes),
            echo_replies: d(self.echo_replies, base.echo_replies),
            icmp_errors: d(self.icmp_errors, base.icmp_errors),
            arp_replies: d(self.arp_replies, base.arp_replies),
            arp_requests: d(self.arp_requests, base.arp_requests),
            held: d(self.held, base.held),
            arp_consumed: d(self.arp_consumed, base.arp_consumed),
            nd_replies: d(self.nd_replies, base.nd_replies),
            nd_requests: d(self.nd_requests, base.nd_requests),
            nd_consumed: d(self.nd_consumed, base.nd_consumed),
            hold_released: d(self.hold_released, base.hold_released),
        }
    }

    fn total_drops(&self) -> u64 {
        self.drops.iter().chain(&self.mpls_drops).sum()
    }
}

fn port_diff(a: PortStats, b: PortStats) -> PortStats {
    PortStats {
        rx_pkts: a.rx_pkts.saturating_sub(b.rx_pkts),
        tx_pkts: a.tx_pkts.saturating_sub(b.tx_pkts),
        rx_bytes: a.rx_bytes.saturating_sub(b.rx_bytes),
        tx_bytes: a.tx_bytes.saturating_sub(b.tx_bytes),
        rx_missed: a.rx_missed.saturating_sub(b.rx_missed),
        rx_errors: a.rx_errors.saturating_sub(b.rx_errors),
        tx_errors: a.tx_errors.saturating_sub(b.tx_errors),
        rx_nombuf: a.rx_nombuf.saturating_sub(b.rx_nombuf),
    }
}

/// The counters `clear counters` recorded.
#[derive(Debug, Clone)]
struct RouterBaseline {
    workers: Vec<WorkerSnap>,
    /// By DPDK port id.
    ports: Vec<(u16, PortStats)>,
    at: Instant,
}

// ---------------------------------------------------------------- router

/// The router's API: the control thread's state besides the router itself.
pub struct RouterApi<'a> {
    ctl: &'a mut RouterControl,
    ports: &'a dyn PortSource,
    port_infos: Vec<PortInfo>,
    info: DaemonInfo,
    /// The routing sections as last applied from the file (reload diffs against it).
    routing: Routing,
    baseline: RouterBaseline,
    /// The sFlow agent (router mode with workers that sample).
    sflow: Option<Agent>,
    /// The `[sflow]` section as last applied from the file (reload diffs against it).
    sflow_file: Option<AgentConfig>,
    /// Where ARP probes of neighbour aging come from and go (router with workers).
    probes: Option<ProbeSink<'a>>,
    /// When neighbours were last aged.
    aged_at: Instant,
    /// The Linux control plane (`[linux]`): twins, punt/inject, netlink learner.
    linux: Option<LinuxPlane>,
    /// Where injected frames get their mbufs.
    pool: Option<&'a Mempool>,
    /// Link changes in the daemon's namespace (an af_packet or af_xdp port's
    /// interface losing carrier): with Linux, the twins' carrier follows at once.
    link_watch: Option<NlSocket>,
}

/// The mbuf pool and worker queue that carry the control thread's ARP probes.
struct ProbeSink<'a> {
    pool: &'a Mempool,
    inject: Arc<InjectQueue>,
    /// Probes that found no mbuf or a full queue.
    lost: u64,
}

impl std::fmt::Debug for RouterApi<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterApi").finish_non_exhaustive()
    }
}

impl<'a> RouterApi<'a> {
    /// The API over a router that was configured from `routing`.
    pub fn new(
        ctl: &'a mut RouterControl,
        ports: &'a dyn PortSource,
        port_infos: Vec<PortInfo>,
        routing: Routing,
        info: DaemonInfo,
    ) -> RouterApi<'a> {
        let mut api = RouterApi {
            ctl,
            ports,
            port_infos,
            info,
            routing,
            baseline: RouterBaseline {
                workers: Vec::new(),
                ports: Vec::new(),
                at: Instant::now(),
            },
            sflow: None,
            sflow_file: None,
            probes: None,
            aged_at: Instant::now(),
            linux: None,
            pool: None,
            link_watch: None,
        };
        api.baseline = api.zero_baseline();
        api
    }

    /// Runs with the Linux control plane `plane`: punts go to its twins, the twins'
    /// frames are injected (mbufs from the pool of [`RouterApi::with_probes`]),
    /// netlink is followed, and Linux holds the twinned interfaces' addresses,
    /// MTU and admin state.
    pub fn with_linux(mut self, plane: LinuxPlane) -> Self {
        self.linux = Some(plane);
        // Without it carrier still follows, on the 20 ms tick.
        self.link_watch = NlSocket::link_events().ok();
        self
    }

    /// Sends the ARP probes of neighbour aging through `inject` (a worker's queue),
    /// in mbufs from `pool`. Without it neighbours are still aged, unprobed: a
    /// learned neighbour is forgotten when its reachable time and probe slots pass.
    pub fn with_probes(mut self, pool: &'a Mempool, inject: Arc<InjectQueue>) -> Self {
        self.pool = Some(pool);
        self.probes = Some(ProbeSink {
            pool,
            inject,
            lost: 0,
        });
        self
    }

    fn zero_baseline(&self) -> RouterBaseline {
        let stats = self.ctl.worker_stats();
        let zero = WorkerSnap::take(&WorkerStats::default());
        RouterBaseline {
            workers: vec![zero; stats.len()],
            ports: Vec::new(),
            at: self.info.started,
        }
    }

    fn snaps(&self) -> Vec<WorkerSnap> {
        self.ctl
            .worker_stats()
            .iter()
            .zip(&self.baseline.workers)
            .map(|(s, b)| WorkerSnap::take(s).since(b))
            .collect()
    }

    fn port_counters(&self, id: u16) -> Option<(bool, PortStats)> {
        let (up, now) = self.ports.port_state(id)?;
        let base = self
            .baseline
            .ports
            .iter()
            .find(|(p, _)| *p == id)
            .map_or(PortStats::default(), |b| b.1);
        Some((up, port_diff(now, base)))
    }

    /// Runs one parsed command.
    pub fn run(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match Domain::of(&cmd) {
            Domain::Routes => self.run_routes(cmd),
            Domain::Labels => self.run_labels(cmd),
            Domain::Interfaces => self.run_interfaces(cmd),
            Domain::Vrfs => self.run_vrfs(cmd),
            Domain::Pw => self.run_pw(cmd),
            Domain::Neighbors => self.run_neighbors(cmd),
            Domain::Linux => self.run_linux(cmd),
            Domain::System => self.run_system(cmd),
            Domain::Sflow => self.sflow_cmd(cmd),
        }
    }

    fn iface_name(&self, ix: u32) -> String {
        self.ctl
            .ifaces()
            .get(ix)
            .map_or_else(|| format!("if{ix}"), |i| i.name.clone())
    }
}

impl Service for RouterApi<'_> {
    fn tick(&mut self) {
        self.ctl.poll();
        self.age_neighbors();
        self.sflow_poll();
        // Without a Linux control plane punted packets have no consumer: they are
        // counted by reason (in the workers) and freed here.
        if self.linux.is_none() {
            for h in self.ctl.workers() {
                while h.punts.pop().is_some() {}
            }
        }
    }

    fn io(&mut self) -> bool {
        let Some(l) = &mut self.linux else {
            return false;
        };
        if let Some(w) = &mut self.link_watch {
            w.drain();
        }
        // Carrier first: a twin knows of a cut link as soon as its port does.
        let ports = self.ports;
        l.sync_carrier(|id| ports.link_up(id));
        let left = l.pump(self.ctl);
        for (port, up) in l.take_admin_changes() {
            let res = self.ports.set_link(port, up);
            l.admin_done(res);
        }
        left
    }

    fn wants_io(&self) -> bool {
        self.linux.is_some()
    }

    fn io_fds(&self) -> Vec<(BorrowedFd<'_>, u64)> {
        let mut v = self
            .linux
            .as_ref()
            .map_or_else(Vec::new, LinuxPlane::io_fds);
        if let Some(w) = &self.link_watch {
            v.push((w.fd(), u64::MAX));
        }
        v
    }

    fn handle(&mut self, args: &[String]) -> Result<Value, ApiError> {
        let ctl = &*self.ctl;
        // An unknown VRF is not found; the other errors of the words are syntax.
        let args = cli::vrf_words(args, |n| ctl.vrf_table(n).ok_or_else(|| ctl.unknown_vrf(n)))
            .map_err(|e| match e {
                cli::VrfWordsError::Syntax(e) => ApiError::Syntax(e),
                cli::VrfWordsError::Name(e) => ApiError::NotFound(e),
            })?;
        let cmd = cli::parse(&args)?;
        self.run(cmd)
    }

    fn metrics(&self, m: &mut Scrape) {
        self.scrape(m);
    }
}

/// Which module runs a command: the dispatch table of [`RouterApi::run`]. The
/// match is exhaustive, so a new command must be given a domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Domain {
    Routes,
    Labels,
    Interfaces,
    Vrfs,
    Pw,
    Neighbors,
    Linux,
    System,
    Sflow,
}

impl Domain {
    fn of(c: &Command) -> Domain {
        match c {
            Command::RouteAdd { .. } | Command::RouteDel { .. } | Command::RouteShow { .. } => {
                Domain::Routes
            }
            Command::LabelAdd { .. } | Command::LabelDel { .. } | Command::LabelShow { .. } => {
                Domain::Labels
            }
            Command::Address { .. }
            | Command::Mtu { .. }
            | Command::SetUp { .. }
            | Command::SubAdd { .. }
            | Command::SubDel { .. }
            | Command::InterfaceTable { .. }
            | Command::ShowInterfaces { .. }
            | Command::ShowAddresses => Domain::Interfaces,
            Command::TableAdd(_)
            | Command::TableDel(_)
            | Command::VrfAdd { .. }
            | Command::VrfDel(_)
            | Command::ShowVrf => Domain::Vrfs,
            Command::PwAdd { .. } | Command::PwDel(_) | Command::ShowPw => Domain::Pw,
            Command::NeighborAdd { .. } | Command::NeighborDel { .. } | Command::NeighborShow => {
                Domain::Neighbors
            }
            Command::RouterId(_) | Command::LinuxResync | Command::ShowFpm | Command::ShowLinux => {
                Domain::Linux
            }
            Command::ShowRun
            | Command::ShowErrors
            | Command::ShowTrace
            | Command::ShowVersion
            | Command::TraceAdd(_)
            | Command::TraceClear
            | Command::ClearCounters
            | Command::Reload => Domain::System,
            Command::SflowEnable { .. }
            | Command::SflowDisable { .. }
            | Command::SflowCollector { .. }
            | Command::SflowPolling(_)
            | Command::SflowHeaderBytes(_)
            | Command::SflowMaxSamples(_)
            | Command::ShowSflow => Domain::Sflow,
        }
    }
}

/// The error of a domain handed a command of another (a dispatch bug, not input).
fn misrouted(c: &Command) -> ApiError {
    ApiError::Internal(format!(
        "internal error: {} sent to the wrong handler",
        command_name(c)
    ))
}

fn command_name(c: &Command) -> &'static str {
    match c {
        Command::RouteAdd { .. } | Command::RouteDel { .. } | Command::RouteShow { .. } => "route",
        Command::LabelAdd { .. } | Command::LabelDel { .. } | Command::LabelShow { .. } => "label",
        Command::Address { .. }
        | Command::Mtu { .. }
        | Command::SetUp { .. }
        | Command::SubAdd { .. }
        | Command::SubDel { .. }
        | Command::InterfaceTable { .. }
        | Command::ShowAddresses => "interface",
        Command::TableAdd(_) | Command::TableDel(_) => "table",
        Command::VrfAdd { .. } | Command::VrfDel(_) | Command::ShowVrf => "vrf",
        Command::PwAdd { .. } | Command::PwDel(_) | Command::ShowPw => "pw",
        Command::NeighborAdd { .. } | Command::NeighborDel { .. } | Command::NeighborShow => {
            "neighbor"
        }
        Command::ShowTrace | Command::TraceAdd(_) | Command::TraceClear => "trace",
        Command::SflowEnable { .. }
        | Command::SflowDisable { .. }
        | Command::SflowCollector { .. }
        | Command::SflowPolling(_)
        | Command::SflowHeaderBytes(_)
        | Command::SflowMaxSamples(_)
        | Command::ShowSflow => "sflow",
        _ => "this command",
    }
}
