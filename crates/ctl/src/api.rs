//! What the control thread answers: every `dpctl` command, run against the router
//! (or the cross-connect), with results as JSON.
//!
//! Each request is checked completely (names, existence, duplicates, what depends on
//! what) before the first change, so a refused request leaves the router as it was.
//! Counters are written by the workers only; `clear counters` records a baseline
//! here, and every `show` subtracts it.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use dataplane::dpdk::{Mempool, PortStats};
use dataplane::router::{
    DropReason, InjectQueue, Interface, MAX_IFACES, PuntClass, PuntReason, RouteSource,
    RouterControl, Stage, WorkerStats,
};
use dataplane::xconnect::{RxAssignment, WorkerCounters};
use fib::{Ipv4Prefix, RouteKind, TableId, Via};
use sflow::{Agent, AgentConfig, Sampling};

use crate::cli::{self, Command, RouteFilter};
use crate::config::Config;
use crate::decode;
use crate::linux::LinuxPlane;
use crate::linux::nl::NlSocket;
use crate::metrics::Scrape;
use crate::routing::{self, PortInfo, Routing};
use crate::server::Service;
use crate::sflow_agent;
use crate::spec::{self, check_table, eos_word, ifindex};

pub use crate::ports::{DpdkPorts, NoPorts, PortSource};

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
    fn reread(&self) -> Result<(Config, Routing), String> {
        let path = self
            .config_path
            .as_ref()
            .ok_or("this dataplaned was started without a configuration file to reload")?;
        let shown = path.display().to_string();
        let new = Config::load(path).map_err(|e| format!("reload: {e}; nothing was applied"))?;
        let plan = new
            .plan(&shown)
            .map_err(|e| format!("reload: {e}; nothing was applied"))?;
        let restart = self.config.restart_sections(&new);
        if !restart.is_empty() {
            return Err(format!(
                "reload: {} changed in {shown}: restart dataplaned to apply that; nothing was applied (the routing sections neither)",
                restart.join(", ")
            ));
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

    /// Refuses a change Linux owns: `interface` has a twin.
    fn linux_owns(&self, interface: &str, what: &str) -> Result<(), String> {
        let Some(l) = &self.linux else {
            return Ok(());
        };
        let Some(t) = ifindex(self.ctl, interface)
            .ok()
            .and_then(|ix| l.twin_of(ix))
        else {
            return Ok(());
        };
        Err(format!(
            "{interface} has a Linux twin ({} in netns {}): Linux holds its {what}; change it there, e.g. `ip -n {} {}`",
            t.name,
            l.section().netns,
            l.section().netns,
            match what {
                "addresses" => format!("addr add ADDRESS/LEN dev {}", t.name),
                "mtu" => format!("link set {} mtu MTU", t.name),
                _ => format!("link set {} up|down", t.name),
            }
        ))
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

    /// Ages learned neighbours (four times a second) and sends the probes due.
    fn age_neighbors(&mut self) {
        let now = Instant::now();
        if now.duration_since(self.aged_at) < Duration::from_millis(250) {
            return;
        }
        self.aged_at = now;
        // The file was checked when loaded; a bad value cannot reach here.
        let Ok(aging) = routing::neighbor_aging(&self.routing) else {
            return;
        };
        for p in self.ctl.age_neighbors(now, &aging) {
            let Some(sink) = self.probes.as_mut() else {
                continue;
            };
            let sent = sink.pool.alloc_with(&p.frame).is_some_and(|mut m| {
                m.set_port(p.port);
                sink.inject.push((p.port, m)).is_ok()
            });
            if !sent {
                sink.lost += 1;
            }
        }
    }

    /// Serves `sflow ...` and `show sflow` with `agent`, which was configured from
    /// the file's `[sflow]` section as `file` (reload diffs against it), and polls it
    /// on every tick.
    pub fn with_sflow(mut self, agent: Agent, file: AgentConfig) -> RouterApi<'a> {
        self.sflow = Some(agent);
        self.sflow_file = Some(file);
        self
    }

    fn sflow_cmd(&mut self, cmd: Command) -> Result<Value, String> {
        if cmd == Command::ShowSflow {
            let Some(agent) = &self.sflow else {
                return Ok(json!({ "enabled": false }));
            };
            let mut v = sflow_agent::show(agent, &|ix| self.iface_name(ix));
            v["enabled"] = json!(true);
            return Ok(v);
        }
        let ifindex_of = |ctl: &RouterControl, name: &str| {
            ctl.iface_by_name(name)
                .map(|i| i.ifindex)
                .map_err(|e| e.to_string())
        };
        let ctl = &*self.ctl;
        let agent = self
            .sflow
            .as_mut()
            .ok_or("sflow: this dataplaned has no sFlow agent (router mode only)")?;
        let message = match cmd {
            Command::SflowEnable {
                interface,
                rate,
                direction,
            } => {
                let ix = ifindex_of(ctl, &interface)?;
                let s = Sampling {
                    rate,
                    directions: direction,
                };
                agent
                    .set_sampling(ix, Some(s))
                    .map_err(|e| format!("sflow enable {interface}: {e}"))?;
                format!(
                    "sflow: {interface} (ifindex {ix}) sampled 1:{rate} {}",
                    direction.name()
                )
            }
            Command::SflowDisable { interface } => {
                let ix = ifindex_of(ctl, &interface)?;
                if !agent.config().interfaces.contains_key(&ix) {
                    return Err(format!("sflow disable {interface}: not sampled"));
                }
                agent
                    .set_sampling(ix, None)
                    .map_err(|e| format!("sflow disable {interface}: {e}"))?;
                format!("sflow: {interface} no longer sampled")
            }
            Command::SflowCollector { add: true, spec } => {
                let a = agent
                    .add_collector(&spec)
                    .map_err(|e| format!("sflow collector add: {e}"))?;
                format!("sflow: collector {a} added")
            }
            Command::SflowCollector { add: false, spec } => {
                let a = agent
                    .remove_collector(&spec)
                    .map_err(|e| format!("sflow collector del: {e}"))?;
                format!("sflow: collector {a} removed")
            }
            Command::SflowPolling(secs) => {
                agent
                    .set_polling_interval(Duration::from_secs(secs))
                    .map_err(|e| format!("sflow polling: {e}"))?;
                format!("sflow: counters polled every {secs} s")
            }
            Command::SflowHeaderBytes(n) => {
                agent
                    .set_header_bytes(n)
                    .map_err(|e| format!("sflow header-bytes: {e}"))?;
                format!("sflow: {n} header bytes per sample")
            }
            Command::SflowMaxSamples(0) => {
                agent.set_max_samples_per_second(0);
                "sflow: no limit on samples exported".to_string()
            }
            Command::SflowMaxSamples(n) => {
                agent.set_max_samples_per_second(n);
                format!("sflow: at most {n} samples exported per second")
            }
            _ => return Err("not an sflow command".to_string()),
        };
        Ok(json!({ "message": message }))
    }

    /// Drains the workers' sample rings, sends datagrams, polls counters when due.
    fn sflow_poll(&mut self) {
        let Some(agent) = &mut self.sflow else {
            return;
        };
        let ctl = &*self.ctl;
        let ifaces = ctl.ifaces();
        let stats = ctl.worker_stats();
        let mut src = sflow_agent::RouterSource {
            ctl,
            ifaces: &ifaces,
            stats: &stats,
            ports: self.ports,
        };
        // A bounded number of rounds per tick: the rest waits for the next tick
        // (the rings absorb it, or drop and count).
        for _ in 0..8 {
            if !agent.poll(Instant::now(), &mut src).more {
                break;
            }
        }
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
    pub fn run(&mut self, cmd: Command) -> Result<Value, String> {
        match cmd {
            Command::RouteAdd {
                table,
                prefix,
                target,
                replace,
            } => {
                check_table(self.ctl, table)?;
                if let Some(owner) = self.address_route(table, prefix) {
                    return Err(format!(
                        "{prefix} in table {table} is the route of {owner}; change the address instead (interface address del|add)"
                    ));
                }
                // Routes learned from a routing daemon do not count: a configured
                // route takes precedence over them and reveals them when it goes.
                let learned = self
                    .ctl
                    .route_source(table, prefix)
                    .is_some_and(RouteSource::is_learned);
                if !replace && !learned {
                    if let Some(k) = self.ctl.route_kind(table, prefix) {
                        return Err(format!(
                            "route {prefix} exists in table {table} ({}); use `route replace` to change it, or `route del` first",
                            self.kind_text(k)
                        ));
                    }
                }
                let kind = spec::resolve_route(self.ctl, &target)
                    .map_err(|e| format!("route {prefix}: {e}"))?;
                self.ctl
                    .route_add_from(RouteSource::Dpctl, table, prefix, kind)
                    .map_err(|e| format!("route {prefix}: {e}"))?;
                // One configured route per prefix: this one replaces the file's.
                if self
                    .ctl
                    .route_of(RouteSource::Config, table, prefix)
                    .is_some()
                {
                    let _ = self.ctl.route_del_from(RouteSource::Config, table, prefix);
                }
                Ok(Value::Null)
            }
            Command::RouteDel { table, prefix } => {
                check_table(self.ctl, table)?;
                if self.ctl.route_kind(table, prefix).is_none() {
                    return Err(format!(
                        "no route {prefix} in table {table} (dpctl route show table {table} lists them)"
                    ));
                }
                if let Some(owner) = self.address_route(table, prefix) {
                    return Err(format!(
                        "{prefix} in table {table} is the route of {owner}; remove the address instead (interface address del)"
                    ));
                }
                let mut gone = false;
                for src in RouteSource::ALL.into_iter().filter(|s| !s.is_learned()) {
                    if self.ctl.route_of(src, table, prefix).is_some() {
                        self.ctl
                            .route_del_from(src, table, prefix)
                            .map_err(|e| format!("route {prefix}: {e}"))?;
                        gone = true;
                    }
                }
                if !gone {
                    return Err(match self.ctl.route_source(table, prefix) {
                        Some(src) => format!(
                            "route {prefix} in table {table} is learned ({}); withdraw it where it comes from (e.g. ip route del in the control-plane namespace)",
                            src.name()
                        ),
                        None => format!(
                            "route {prefix} in table {table} is a neighbour's host route; it goes with the neighbour (neighbor del)"
                        ),
                    });
                }
                Ok(Value::Null)
            }
            Command::RouteShow { table, filter } => self.route_show(table, filter),
            Command::LabelAdd {
                label,
                eos,
                spec: s,
                replace,
            } => {
                // Entries learned from a routing daemon do not count: dpctl's
                // takes precedence over them.
                let learned = self
                    .ctl
                    .label_source(label, eos)
                    .is_some_and(RouteSource::is_learned);
                if !replace && !learned && self.ctl.labels().get(label, eos).is_some() {
                    return Err(format!(
                        "label {label} {} exists; use `label replace` to change it, or `label del` first",
                        eos_word(eos)
                    ));
                }
                spec::install_label(self.ctl, RouteSource::Dpctl, label, eos, &s)
                    .map_err(|e| format!("label {label} {}: {e}", eos_word(eos)))?;
                Ok(Value::Null)
            }
            Command::LabelDel { label, eos, paths } => {
                if self.ctl.labels().get(label, eos).is_none() {
                    let other = self.ctl.labels().get(label, !eos).is_some();
                    return Err(format!(
                        "no label {label} {} ({}dpctl label show lists them)",
                        eos_word(eos),
                        if other {
                            let a = if eos { "a non-eos" } else { "an eos" };
                            format!("label {label} has only {a} entry; ")
                        } else {
                            String::new()
                        }
                    ));
                }
                let owner = self
                    .ctl
                    .label_source(label, eos)
                    .unwrap_or(RouteSource::Config);
                if owner.is_learned() {
                    return Err(format!(
                        "label {label} {} is learned ({}): withdraw it where it comes from",
                        eos_word(eos),
                        owner.name()
                    ));
                }
                if paths.is_empty() {
                    self.ctl
                        .label_del_from(owner, label, eos)
                        .map_err(|e| e.to_string())?;
                    return Ok(Value::Null);
                }
                // Remove only the named paths; all must exist before anything changes.
                let Some(mpls::LabelAction::Forward {
                    paths: current,
                    ttl_mode,
                }) = self.ctl.labels().get(label, eos).cloned()
                else {
                    return Err(format!(
                        "label {label} {} has no paths to delete; delete the entry with `label del {label} {}`",
                        eos_word(eos),
                        eos_word(eos)
                    ));
                };
                // out-labels [3] and [] both mean "pop" (PHP)
                let norm = |l: &[u32]| if l == [3] { Vec::new() } else { l.to_vec() };
                let mut remaining = current;
                for v in &paths {
                    let (Some(g), Some(n)) = (v.gateway, v.interface.as_deref()) else {
                        return Err("a label path is via GATEWAY INTERFACE".into());
                    };
                    let ix = spec::ifindex(self.ctl, n)?;
                    let adj = self.ctl.fib().adjacency_id(ix, std::net::IpAddr::V4(g));
                    let pos = adj.and_then(|a| {
                        remaining
                            .iter()
                            .position(|h| h.adj == a && norm(&h.out_labels) == norm(&v.out_labels))
                    });
                    match pos {
                        Some(p) => {
                            remaining.remove(p);
                        }
                        None => {
                            return Err(format!(
                                "label {label} {} has no path via {g} {n} out-labels {:?} (dpctl label show {label})",
                                eos_word(eos),
                                v.out_labels
                            ));
                        }
                    }
                }
                if remaining.is_empty() {
                    self.ctl
                        .label_del_from(owner, label, eos)
                        .map_err(|e| e.to_string())?;
                } else {
                    self.ctl
                        .label_add_from(
                            owner,
                            label,
                            eos,
                            mpls::LabelAction::Forward {
                                paths: remaining,
                                ttl_mode,
                            },
                        )
                        .map_err(|e| e.to_string())?;
                }
                Ok(Value::Null)
            }
            Command::LabelShow { label } => Ok(self.label_show(label)),
            Command::Address {
                add,
                interface,
                addr,
                len,
            } => {
                self.linux_owns(&interface, "addresses")?;
                self.address(add, &interface, addr, len)
            }
            Command::Mtu { interface, mtu } => {
                self.linux_owns(&interface, "mtu")?;
                let ix = ifindex(self.ctl, &interface)?;
                self.ctl.set_mtu(ix, mtu).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::SetUp { interface, up } => {
                self.linux_owns(&interface, "admin state")?;
                let ix = ifindex(self.ctl, &interface)?;
                self.ctl.set_up(ix, up).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::SubAdd { parent, vlan } => self.sub_add(&parent, vlan),
            Command::SubDel { interface } => {
                self.linux_owns(&interface, "sub-interface")?;
                self.sub_del(&interface)
            }
            Command::InterfaceTable { interface, table } => {
                let ix = ifindex(self.ctl, &interface)?;
                self.ctl.set_table(ix, table).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::TableAdd(t) => {
                self.ctl.table_add(t).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::TableDel(t) => {
                self.ctl.table_del(t).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::VrfAdd { name, table } => {
                self.ctl.vrf_add(&name, table).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::VrfDel(name) => {
                self.ctl.vrf_del(&name).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::ShowVrf => Ok(self.vrf_show()),
            Command::PwAdd {
                name,
                interface,
                neighbor,
                in_label,
                out_label,
                control_word,
            } => {
                let pw = dataplane::router::Pw {
                    ac: ifindex(self.ctl, &interface)?,
                    remote: neighbor,
                    in_label,
                    out_label,
                    cw: control_word,
                };
                self.ctl
                    .pw_add(RouteSource::Dpctl, &name, pw)
                    .map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::PwDel(name) => {
                self.ctl.pw_del(&name).map_err(|e| e.to_string())?;
                Ok(Value::Null)
            }
            Command::ShowPw => Ok(self.pw_show()),
            Command::RouterId(id) => {
                self.ctl.set_router_id_from(RouteSource::Dpctl, id);
                Ok(Value::Null)
            }
            Command::LinuxResync => {
                let Some(l) = &mut self.linux else {
                    return Err("no Linux control plane ([linux] is not configured)".into());
                };
                let t0 = Instant::now();
                l.resync(self.ctl, "dpctl linux resync");
                Ok(json!({ "message": format!(
                    "resynced in {:.1} ms ({} entries swept)",
                    t0.elapsed().as_secs_f64() * 1e3,
                    l.show(self.ctl)["netlink"]["last_resync"]["swept"]
                ) }))
            }
            Command::ShowFpm => Ok(
                match self.linux.as_ref().and_then(|l| l.show_fpm(self.ctl)) {
                    Some(mut v) => {
                        v["enabled"] = json!(true);
                        v
                    }
                    None => json!({ "enabled": false }),
                },
            ),
            Command::ShowLinux => Ok(match &self.linux {
                Some(l) => {
                    let mut v = l.show(self.ctl);
                    v["enabled"] = json!(true);
                    v
                }
                None => json!({ "enabled": false }),
            }),
            Command::NeighborAdd { interface, ip, mac } => {
                let ix = ifindex(self.ctl, &interface)?;
                let Some(mac) = mac else {
                    if self.ctl.neighbors().contains_key(&(ix, ip)) {
                        return Ok(
                            json!({ "message": format!("{ip} on {interface} is resolved already") }),
                        );
                    }
                    // An incomplete entry: the workers ARP for it when traffic needs it.
                    self.ctl
                        .adjacency(ix, ip)
                        .map_err(|e| format!("neighbor {ip} on {interface}: {e}"))?;
                    return Ok(json!({
                        "message": format!("{ip} on {interface}: incomplete, resolved by ARP when traffic uses it")
                    }));
                };
                self.ctl
                    .set_neighbor(ix, ip, mac)
                    .map_err(|e| format!("neighbor {ip} on {interface}: {e}"))?;
                Ok(Value::Null)
            }
            Command::NeighborDel { interface, ip, mac } => {
                let ix = ifindex(self.ctl, &interface)?;
                let Some(have) = self.ctl.neighbors().get(&(ix, ip)).copied() else {
                    let on: Vec<String> = self
                        .ctl
                        .neighbors()
                        .keys()
                        .filter(|k| k.0 == ix)
                        .map(|k| k.1.to_string())
                        .collect();
                    return Err(format!(
                        "no neighbor {ip} on {interface} (neighbors on {interface}: {})",
                        if on.is_empty() {
                            "none".into()
                        } else {
                            on.join(", ")
                        }
                    ));
                };
                if let Some(m) = mac {
                    if m != have {
                        return Err(format!(
                            "neighbor {ip} on {interface} has MAC {}, not {}",
                            mac_str(have),
                            mac_str(m)
                        ));
                    }
                }
                // A configured entry goes and reveals what the host stack or
                // ARP knows; otherwise the neighbour is forgotten.
                if !self.ctl.del_static_neighbor(ix, ip) {
                    self.ctl
                        .del_neighbor(ix, ip)
                        .map_err(|e| format!("neighbor {ip} on {interface}: {e}"))?;
                }
                Ok(Value::Null)
            }
            Command::NeighborShow => {
                let ift = self.ctl.ifaces();
                let name = |ix: u32| ift.get(ix).map_or("?", |i| i.name.as_str()).to_string();
                let mut v: Vec<Value> = self
                    .ctl
                    .neighbors()
                    .iter()
                    .map(|(&(ix, ip), &mac)| {
                        json!({
                            "interface": name(ix),
                            "address": ip.to_string(),
                            "mac": mac_str(mac),
                            "source": if self.ctl.is_static_neighbor(ix, ip) {
                                "static"
                            } else if self.ctl.is_kernel_neighbor(ix, ip) {
                                "kernel"
                            } else {
                                "arp"
                            },
                        })
                    })
                    .collect();
                // IPv6 next hops of IPv4 routes (RFC 5549), from the kernel.
                v.extend(self.ctl.neighbors6().iter().map(|(&(ix, ip), &mac)| {
                    json!({
                        "interface": name(ix),
                        "address": ip.to_string(),
                        "mac": mac_str(mac),
                        "source": "kernel",
                    })
                }));
                let (probes, forgotten) = self.ctl.aging_counts();
                let lost = self.probes.as_ref().map_or(0, |p| p.lost);
                Ok(json!({
                    "neighbors": v,
                    "aging": {
                        "probes_sent": probes,
                        "probes_lost": lost,
                        "forgotten": forgotten,
                    },
                }))
            }
            Command::ShowInterfaces { name } => self.show_interfaces(name.as_deref()),
            Command::ShowAddresses => {
                let v: Vec<Value> = self
                    .ctl
                    .ifaces()
                    .iter()
                    .map(|i| {
                        json!({
                            "name": i.name,
                            "up": i.up,
                            "table": i.table,
                            "addresses": i.addrs.iter().map(|(a, l)| format!("{a}/{l}")).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                Ok(json!({ "interfaces": v }))
            }
            Command::ShowRun => Ok(self.show_run()),
            Command::ShowErrors => Ok(self.show_errors()),
            Command::ShowTrace => Ok(self.show_trace()),
            Command::ShowVersion => {
                let mut v = self.info.version("router");
                v["router_id"] = json!(self.ctl.router_id().map(|a| a.to_string()));
                v["router_id_source"] = json!(self.ctl.router_id_source().map(|s| s.name()));
                Ok(v)
            }
            Command::TraceAdd(n) => {
                if self.ctl.workers().is_empty() {
                    return Err("no workers to trace".into());
                }
                self.ctl.trace_add(n);
                Ok(json!({
                    "message": format!("tracing the next {n} packets of each of {} worker(s); dpctl show trace", self.ctl.workers().len())
                }))
            }
            Command::TraceClear => {
                self.ctl.trace_clear();
                Ok(Value::Null)
            }
            Command::ClearCounters => {
                let stats = self.ctl.worker_stats();
                let ports = self
                    .port_infos
                    .iter()
                    .filter_map(|p| Some((p.id, self.ports.port_state(p.id)?.1)))
                    .collect();
                self.baseline = RouterBaseline {
                    workers: stats.iter().map(|s| WorkerSnap::take(s)).collect(),
                    ports,
                    at: Instant::now(),
                };
                Ok(Value::Null)
            }
            Command::Reload => {
                let r = self.reload();
                // A file with a full table leaves its parse's buffers (hundreds
                // of MB) free in the C heap: give them back.
                crate::linux::heap::trim();
                r
            }
            c @ (Command::SflowEnable { .. }
            | Command::SflowDisable { .. }
            | Command::SflowCollector { .. }
            | Command::SflowPolling(_)
            | Command::SflowHeaderBytes(_)
            | Command::SflowMaxSamples(_)
            | Command::ShowSflow) => self.sflow_cmd(c),
        }
    }

    /// Re-reads the configuration file and applies its routing sections as a diff.
    pub fn reload(&mut self) -> Result<Value, String> {
        let (new, routing) = self.info.reread()?;
        // [sflow] is checked before anything is applied (interface names too, as far
        // as the interfaces exist now or are named by the new file).
        let router_id = new
            .router
            .router_id
            .as_deref()
            .and_then(|r| r.parse::<Ipv4Addr>().ok());
        let known = |n: &str| {
            let now = self.ctl.iface_by_name(n).ok().map(|i| i.ifindex);
            let named = new.interfaces.iter().any(|i| i.name == n);
            now.or(named.then_some(1))
        };
        if self.sflow.is_some() {
            sflow_agent::agent_config(new.sflow.as_ref(), &known, router_id)
                .map_err(|e| format!("reload: {e}; nothing was applied"))?;
        }
        // (refusals made before the reload borrows the router)
        let twinned: HashMap<String, String> = self
            .ctl
            .ifaces()
            .iter()
            .filter_map(|i| {
                let why = self.linux_owns(&i.name, "addresses").err()?;
                Some((i.name.clone(), why))
            })
            .collect();
        let owns = |name: &str| twinned.get(name).cloned();
        let sum = routing::reload(&self.routing, &routing, &self.port_infos, self.ctl, &owns)
            .map_err(|e| format!("reload: {e}"))?;
        self.routing = routing;
        let mut message = format!("reload: {sum}");
        if let (Some(agent), Some(old)) = (&mut self.sflow, &self.sflow_file) {
            let ctl = &*self.ctl;
            let names = |n: &str| ctl.iface_by_name(n).ok().map(|i| i.ifindex);
            let cfg = sflow_agent::agent_config(new.sflow.as_ref(), &names, router_id)
                .map_err(|e| format!("reload: routing applied, [sflow] not: {e}"))?;
            let done = sflow_agent::apply_diff(agent, old, &cfg);
            if !done.is_empty() {
                message.push_str(&format!("; sflow: {}", done.join(", ")));
            }
            self.sflow_file = Some(cfg);
        }
        self.info.config = new;
        Ok(json!({ "message": message, "changes": sum }))
    }

    /// If `prefix` is the local or connected route of an interface address, which.
    fn address_route(&self, table: TableId, prefix: Ipv4Prefix) -> Option<String> {
        for i in self.ctl.ifaces().iter().filter(|i| i.table == table) {
            for &(a, l) in &i.addrs {
                let host = Ipv4Prefix::new(a, 32).ok();
                let net = Ipv4Prefix::new_truncated(a, l).ok();
                if host == Some(prefix) || (l < 32 && net == Some(prefix)) {
                    return Some(format!("address {a}/{l} on {}", i.name));
                }
            }
        }
        None
    }

    fn iface_name(&self, ix: u32) -> String {
        self.ctl
            .ifaces()
            .get(ix)
            .map_or_else(|| format!("if{ix}"), |i| i.name.clone())
    }

    fn kind_text(&self, k: &RouteKind) -> String {
        match k {
            RouteKind::Paths(ps) => ps
                .iter()
                .map(|p| {
                    let mut s = String::from("via");
                    match p.via {
                        Via::Gateway(g) => s += &format!(" {g}"),
                        Via::Gateway6(g) => s += &format!(" {g}"),
                        Via::Attached => {}
                    }
                    if let Some(ix) = p.ifindex {
                        s += &format!(" {}", self.iface_name(ix));
                    }
                    if let Some(t) = p.via_table {
                        s += &format!(" next-hop-table {t}");
                    }
                    if !p.labels.is_empty() {
                        s += " out-labels";
                        for l in &p.labels {
                            s += &format!(" {l}");
                        }
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join(" "),
            RouteKind::Blackhole => "blackhole".into(),
            RouteKind::Unreachable => "unreachable".into(),
            RouteKind::Prohibit => "prohibit".into(),
            RouteKind::Local => "local".into(),
            RouteKind::Connected { ifindex } => format!("connected {}", self.iface_name(*ifindex)),
        }
    }

    fn route_json(&self, table: TableId, prefix: Ipv4Prefix, k: &RouteKind) -> Value {
        let mut v = json!({ "table": table, "prefix": prefix.to_string() });
        let kind = match k {
            RouteKind::Paths(ps) => {
                v["paths"] = ps
                    .iter()
                    .map(|p| {
                        json!({
                            "gateway": match p.via {
                                Via::Gateway(g) => Some(g.to_string()),
                                Via::Gateway6(g) => Some(g.to_string()),
                                Via::Attached => None,
                            },
                            "interface": p.ifindex.map(|ix| self.iface_name(ix)),
                            "next_hop_table": p.via_table,
                            "out_labels": p.labels,
                            "weight": p.weight,
                        })
                    })
                    .collect();
                "paths"
            }
            RouteKind::Blackhole => "blackhole",
            RouteKind::Unreachable => "unreachable",
            RouteKind::Prohibit => "prohibit",
            RouteKind::Local => "local",
            RouteKind::Connected { ifindex } => {
                v["interface"] = json!(self.iface_name(*ifindex));
                "connected"
            }
        };
        v["kind"] = json!(kind);
        v["source"] = json!(match self.ctl.route_source(table, prefix) {
            Some(src) => src.name(),
            None if self.address_route(table, prefix).is_some() => "interface",
            None => "neighbor",
        });
        v
    }

    /// `show vrf`: every table with its VRF name, interfaces and route count.
    fn pw_show(&self) -> Value {
        let mut reader = self.ctl.fib().reader();
        let view = reader.read();
        let ws = self.ctl.workers();
        let rows: Vec<Value> = self
            .ctl
            .pws()
            .map(|(name, k, source, p)| {
                let sum = |f: fn(&dataplane::router::PwCounters) -> u64| -> u64 {
                    ws.iter()
                        .filter_map(|w| w.stats.pws.get(k as usize))
                        .map(f)
                        .sum()
                };
                // Up: the circuit is, and the remote PE has a forwarding route.
                let leg = view.leg(view.lookup(0, u32::from(p.remote)), k);
                let routed = leg.action() == fib::Action::Forward;
                let mut labels = [0u32; 8];
                let n = leg.labels_into(&mut labels);
                let ac = self.ctl.iface(p.ac).ok();
                json!({
                    "name": name,
                    "interface": ac.map(|i| i.name.clone()),
                    "neighbor": p.remote.to_string(),
                    "in_label": p.in_label,
                    "out_label": p.out_label,
                    "control_word": p.cw,
                    "source": source.name(),
                    "up": routed && ac.is_some_and(|i| i.up),
                    "transport_labels": if routed { json!(labels[..n]) } else { Value::Null },
                    "encap_pkts": sum(|c| c.encap_pkts.get()),
                    "encap_bytes": sum(|c| c.encap_bytes.get()),
                    "decap_pkts": sum(|c| c.decap_pkts.get()),
                    "decap_bytes": sum(|c| c.decap_bytes.get()),
                    "drops": sum(|c| c.drops.get()),
                })
            })
            .collect();
        json!({ "pws": rows })
    }

    fn vrf_show(&self) -> Value {
        let mut tables: Vec<TableId> = self.ctl.fib().tables().collect();
        tables.sort_unstable();
        let ift = self.ctl.ifaces();
        let rows: Vec<Value> = tables
            .iter()
            .map(|&t| {
                let ifaces: Vec<&str> = ift
                    .iter()
                    .filter(|i| i.table == t)
                    .map(|i| i.name.as_str())
                    .collect();
                json!({
                    "vrf": self.ctl.table_vrf(t),
                    "table": t,
                    "interfaces": ifaces,
                    "routes": self.ctl.fib().route_count(t),
                })
            })
            .collect();
        json!({ "vrfs": rows })
    }

    fn route_show(
        &self,
        table: Option<TableId>,
        filter: Option<RouteFilter>,
    ) -> Result<Value, String> {
        if let Some(t) = table {
            check_table(self.ctl, t)?;
        }
        let in_table = |t: TableId| table.is_none_or(|x| x == t);
        let mut rows = Vec::new();
        match filter {
            None => {
                for (t, p, k) in self.ctl.routes().filter(|r| in_table(r.0)) {
                    rows.push(self.route_json(t, p, k));
                }
            }
            Some(RouteFilter::Prefix(pf)) => {
                for (t, p, k) in self.ctl.routes().filter(|r| in_table(r.0) && r.1 == pf) {
                    rows.push(self.route_json(t, p, k));
                }
            }
            Some(RouteFilter::Address(a)) => {
                // The longest match per table: the route that forwards `a`.
                let mut best: Vec<(TableId, Ipv4Prefix, &RouteKind)> = Vec::new();
                for (t, p, k) in self
                    .ctl
                    .routes()
                    .filter(|r| in_table(r.0) && r.1.contains(u32::from(a)))
                {
                    match best.iter_mut().find(|b| b.0 == t) {
                        Some(b) if b.1.prefix_len() < p.prefix_len() => *b = (t, p, k),
                        Some(_) => {}
                        None => best.push((t, p, k)),
                    }
                }
                for (t, p, k) in best {
                    rows.push(self.route_json(t, p, k));
                }
            }
        }
        let mut tables: Vec<TableId> = self.ctl.fib().tables().filter(|t| in_table(*t)).collect();
        tables.sort_unstable();
        let counts: Vec<Value> = tables
            .iter()
            .map(|&t| {
                json!({
                    "table": t,
                    "vrf": self.ctl.table_vrf(t),
                    "routes": self.ctl.fib().route_count(t),
                })
            })
            .collect();
        Ok(json!({ "tables": counts, "routes": rows }))
    }

    fn label_show(&self, only: Option<u32>) -> Value {
        let mut reader = self.ctl.fib().reader();
        let view = reader.read();
        let rows: Vec<Value> = self
            .ctl
            .labels()
            .iter()
            .filter(|(l, _, _)| only.is_none_or(|x| x == *l))
            .map(|(label, eos, a)| {
                let mut v = json!({
                    "label": label,
                    "eos": eos,
                    "source": self.ctl.label_source(label, eos).map_or("config", |s| s.name()),
                });
                let ttl = |m: &mpls::TtlMode| match m {
                    mpls::TtlMode::Uniform => "uniform",
                    mpls::TtlMode::Pipe { .. } => "pipe",
                };
                match a {
                    mpls::LabelAction::Forward { paths, ttl_mode } => {
                        v["action"] = json!("forward");
                        v["ttl_mode"] = json!(ttl(ttl_mode));
                        v["paths"] = paths
                            .iter()
                            .map(|h| {
                                let adj = view.adjacency(h.adj);
                                json!({
                                    "gateway": adj.and_then(|a| a.neighbor).map(|g| g.to_string()),
                                    "interface": adj.map(|a| self.iface_name(a.ifindex)),
                                    "out_labels": h.out_labels,
                                    "neighbor_mac": adj.filter(|a| a.complete).map(|a| mac_str(a.dst_mac)),
                                    "op": match h.out_labels.as_slice() {
                                        [] | [3] => "php",
                                        [0] | [2] => "explicit-null",
                                        _ => "swap",
                                    },
                                })
                            })
                            .collect();
                    }
                    mpls::LabelAction::Ip4Lookup { table, ttl_mode } => {
                        v["action"] = json!("ip4-lookup");
                        // null: the receiving interface's table
                        v["table"] = json!((*table != mpls::RX_TABLE).then_some(table));
                        v["ttl_mode"] = json!(ttl(ttl_mode));
                    }
                    mpls::LabelAction::Pop { ttl_mode } => {
                        v["action"] = json!("pop");
                        v["ttl_mode"] = json!(ttl(ttl_mode));
                    }
                    mpls::LabelAction::Drop => v["action"] = json!("drop"),
                    mpls::LabelAction::Punt => v["action"] = json!("punt"),
                    mpls::LabelAction::Xconnect { pw } => {
                        v["action"] = json!("pseudowire");
                        v["pw"] = json!(self.ctl.pws().find(|p| p.1 == *pw).map(|p| p.0));
                    }
                }
                v
            })
            .collect();
        json!({ "labels": rows })
    }

    fn address(&mut self, add: bool, name: &str, addr: Ipv4Addr, len: u8) -> Result<Value, String> {
        let ix = ifindex(self.ctl, name)?;
        let ift = self.ctl.ifaces();
        let Some(i) = ift.get(ix) else {
            return Err(format!("unknown interface {name:?}"));
        };
        let list = |i: &Interface| {
            if i.addrs.is_empty() {
                "none".to_string()
            } else {
                i.addrs
                    .iter()
                    .map(|(a, l)| format!("{a}/{l}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        if !add {
            let mut gone = false;
            for src in RouteSource::ALL.into_iter().filter(|s| !s.is_learned()) {
                if self.ctl.address_of(src, ix, addr) == Some(len) {
                    self.ctl
                        .del_address_from(src, ix, addr, len)
                        .map_err(|e| e.to_string())?;
                    gone = true;
                }
            }
            if !gone {
                return Err(format!(
                    "{addr}/{len} is not an address of {name} (its addresses: {})",
                    list(i)
                ));
            }
            return Ok(Value::Null);
        }
        if let Some(o) = ift.iter().find(|o| {
            o.table == i.table
                && o.has_addr(addr)
                && (o.ifindex != ix || o.addrs.contains(&(addr, len)))
        }) {
            return Err(format!("{addr} is already an address of {}", o.name));
        }
        if !i.has_addr(addr) {
            let host = Ipv4Prefix::new(addr, 32).map_err(|e| e.to_string())?;
            let net = Ipv4Prefix::new_truncated(addr, len).map_err(|e| e.to_string())?;
            for p in [Some(host), (len < 32).then_some(net)]
                .into_iter()
                .flatten()
            {
                if let Some(k) = self.ctl.route_kind(i.table, p) {
                    return Err(format!(
                        "route {p} exists in table {} ({}); an address needs that prefix for itself: delete the route first",
                        i.table,
                        self.kind_text(k)
                    ));
                }
            }
        }
        self.ctl
            .add_address_from(RouteSource::Dpctl, ix, addr, len)
            .map_err(|e| e.to_string())?;
        Ok(Value::Null)
    }

    fn sub_add(&mut self, parent: &str, vlan: u16) -> Result<Value, String> {
        let pix = ifindex(self.ctl, parent)?;
        let ift = self.ctl.ifaces();
        let Some(p) = ift.get(pix) else {
            return Err(format!("unknown interface {parent:?}"));
        };
        if p.vlan.is_some() {
            let ports: Vec<&str> = self.port_infos.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "{parent} is a sub-interface; sub-interfaces go on a port ({})",
                ports.join(", ")
            ));
        }
        let name = format!("{parent}.{vlan}");
        if ift.iter().any(|i| i.name == name) {
            return Err(format!("interface {name} exists"));
        }
        if let Some(o) = ift
            .iter()
            .find(|i| i.port == p.port && i.vlan == Some(vlan))
        {
            return Err(format!(
                "VLAN {vlan} of {parent} is interface {} already",
                o.name
            ));
        }
        let first = self.port_infos.len() as u32 + 1;
        let ix = (first..MAX_IFACES as u32)
            .find(|&k| ift.get(k).is_none())
            .ok_or_else(|| format!("too many interfaces (at most {})", MAX_IFACES - 1))?;
        let iface = Interface {
            ifindex: ix,
            name: name.clone(),
            port: p.port,
            vlan: Some(vlan),
            mac: p.mac,
            mtu: p.mtu,
            up: true,
            table: p.table,
            addrs: Vec::new(),
        };
        self.ctl
            .add_interface(iface)
            .map_err(|e| format!("{name}: {e}"))?;
        // A reused ifIndex starts from zero in `show interfaces`.
        for (s, b) in self
            .ctl
            .worker_stats()
            .iter()
            .zip(&mut self.baseline.workers)
        {
            if let (Some(c), Some(slot)) =
                (s.ifaces.get(ix as usize), b.ifaces.get_mut(ix as usize))
            {
                *slot = [
                    c.rx_pkts.get(),
                    c.rx_bytes.get(),
                    c.tx_pkts.get(),
                    c.tx_bytes.get(),
                    c.drops.get(),
                ];
            }
        }
        Ok(
            json!({ "message": format!("created {name} (ifindex {ix})"), "name": name, "ifindex": ix }),
        )
    }

    fn sub_del(&mut self, name: &str) -> Result<Value, String> {
        let ix = ifindex(self.ctl, name)?;
        let ift = self.ctl.ifaces();
        let Some(i) = ift.get(ix).cloned() else {
            return Err(format!("unknown interface {name:?}"));
        };
        if i.vlan.is_none() {
            return Err(format!(
                "{name} is a port's interface; only sub-interfaces can be deleted"
            ));
        }
        let own: Vec<Ipv4Prefix> = i
            .addrs
            .iter()
            .filter_map(|&(a, l)| Ipv4Prefix::new_truncated(a, l).ok())
            .collect();
        let mut users = Vec::new();
        for (t, p, k) in self.ctl.routes() {
            let uses = match k {
                RouteKind::Paths(ps) => ps.iter().any(|x| x.ifindex == Some(ix)),
                RouteKind::Connected { ifindex } => *ifindex == ix && !own.contains(&p),
                _ => false,
            };
            if uses {
                users.push(format!("route {p} (table {t})"));
            }
        }
        {
            let mut reader = self.ctl.fib().reader();
            let view = reader.read();
            for (l, eos, a) in self.ctl.labels().iter() {
                if let mpls::LabelAction::Forward { paths, .. } = a {
                    if paths
                        .iter()
                        .any(|h| view.adjacency(h.adj).is_some_and(|x| x.ifindex == ix))
                    {
                        users.push(format!("label {l} {}", eos_word(eos)));
                    }
                }
            }
        }
        if !users.is_empty() {
            let n = users.len();
            users.truncate(5);
            return Err(format!(
                "{name} is in use by {}{}; delete those first",
                users.join(", "),
                if n > 5 {
                    format!(" and {} more", n - 5)
                } else {
                    String::new()
                }
            ));
        }
        let nbrs: Vec<(Ipv4Addr, [u8; 6], bool)> = self
            .ctl
            .neighbors()
            .iter()
            .filter(|(k, _)| k.0 == ix)
            .map(|(k, m)| (k.1, *m, self.ctl.is_static_neighbor(ix, k.1)))
            .collect();
        if let Err(e) = self.ctl.del_interface(ix) {
            // Put back what went before the refusal (the addresses are back).
            for (ip, mac, configured) in nbrs {
                let _ = if configured {
                    self.ctl.set_neighbor(ix, ip, mac)
                } else {
                    self.ctl.learn_neighbor(ix, ip, mac)
                };
            }
            return Err(format!(
                "{name}: {e} (routes still resolve through it; delete them first)"
            ));
        }
        Ok(Value::Null)
    }

    fn show_interfaces(&self, only: Option<&str>) -> Result<Value, String> {
        if let Some(n) = only {
            ifindex(self.ctl, n)?;
        }
        let snaps = self.snaps();
        let ift = self.ctl.ifaces();
        let rows: Vec<Value> = ift
            .iter()
            .filter(|i| only.is_none_or(|n| n == i.name))
            .map(|i| {
                let ix = i.ifindex as usize;
                let sum = |k: usize| -> u64 {
                    snaps.iter().filter_map(|s| s.ifaces.get(ix)).map(|c| c[k]).sum()
                };
                let port = self.port_counters(i.port);
                let mut counters = json!({
                    "rx_packets": sum(0),
                    "rx_bytes": sum(1),
                    "tx_packets": sum(2),
                    "tx_bytes": sum(3),
                    "drops": sum(4),
                });
                if let (None, Some((_, ps))) = (i.vlan, port) {
                    counters["rx_missed"] = json!(ps.rx_missed);
                    counters["rx_errors"] = json!(ps.rx_errors);
                    counters["tx_errors"] = json!(ps.tx_errors);
                    counters["rx_no_mbuf"] = json!(ps.rx_nombuf);
                }
                json!({
                    "name": i.name,
                    "ifindex": i.ifindex,
                    "port": i.port,
                    "vlan": i.vlan,
                    "mac": mac_str(i.mac),
                    "mtu": i.mtu,
                    "up": i.up,
                    "link": port.map(|p| p.0),
                    "table": i.table,
                    "addresses": i.addrs.iter().map(|(a, l)| format!("{a}/{l}")).collect::<Vec<_>>(),
                    "counters": counters,
                })
            })
            .collect();
        Ok(json!({ "interfaces": rows }))
    }

    fn show_run(&self) -> Value {
        let secs = self.baseline.at.elapsed().as_secs_f64();
        let workers: Vec<Value> = self
            .snaps()
            .iter()
            .enumerate()
            .map(|(w, s)| {
                let stages: Vec<Value> = Stage::ALL
                    .iter()
                    .filter(|st| s.stages[**st as usize][0] > 0)
                    .map(|st| {
                        let [calls, pkts, cycles] = s.stages[*st as usize];
                        let state = if *st == Stage::Rx {
                            "polling"
                        } else {
                            "active"
                        };
                        stage_json(st.name(), state, calls, pkts, cycles)
                    })
                    .collect();
                let rx = s.stages[Stage::Rx as usize][1];
                let tx: u64 = s.ifaces.iter().map(|c| c[2]).sum();
                let punts: u64 = s.punts.iter().sum();
                json!({
                    "worker": w,
                    "lcore": self.info.lcores.get(w),
                    "loops": s.loops,
                    "busy_loops": s.busy_loops,
                    "busy_cycles": s.busy_cycles,
                    "idle_sleeps": s.idle_sleeps,
                    "rx_wakes": s.rx_wakes,
                    "echo_replies": s.echo_replies,
                    "icmp_errors": s.icmp_errors,
                    "arp_replies": s.arp_replies,
                    "arp_requests": s.arp_requests,
                    "arp_consumed": s.arp_consumed,
                    "held": s.held,
                    "hold_released": s.hold_released,
                    "rates": {
                        "in": per_sec(rx, secs),
                        "out": per_sec(tx, secs),
                        "drop": per_sec(s.total_drops(), secs),
                        "punt": per_sec(punts, secs),
                    },
                    "stages": stages,
                })
            })
            .collect();
        json!({ "time_s": secs, "tsc_hz": self.info.tsc_hz, "workers": workers })
    }

    fn show_errors(&self) -> Value {
        let snaps = self.snaps();
        let mut rows = Vec::new();
        let mut push = |name: &str, kind: &str, n: u64| {
            if n > 0 {
                rows.push(json!({ "count": n, "reason": name, "type": kind }));
            }
        };
        for r in DropReason::ALL {
            push(
                r.name(),
                "drop",
                snaps.iter().map(|s| s.drops[r as usize]).sum(),
            );
        }
        for (k, r) in mpls::DropReason::ALL.iter().enumerate() {
            push(
                r.name(),
                "drop",
                snaps.iter().map(|s| s.mpls_drops[k]).sum(),
            );
        }
        for r in PuntReason::ALL {
            push(
                r.name(),
                "punt",
                snaps.iter().map(|s| s.punts[r as usize]).sum(),
            );
        }
        // The policer's drops by receiving interface and class.
        let ift = self.ctl.ifaces();
        let ifs = snaps.first().map_or(0, |s| s.policed.len());
        for ix in 0..ifs {
            for c in PuntClass::ALL {
                let n: u64 = snaps.iter().map(|s| s.policed[ix][c as usize]).sum();
                if n > 0 {
                    let name = ift.get(ix as u32).map_or("?", |i| i.name.as_str());
                    rows.push(json!({
                        "count": n,
                        "reason": format!("punt_policed_{} {name}", c.name()),
                        "type": "policed",
                        "interface": name,
                        "class": c.name(),
                    }));
                }
            }
        }
        json!({ "errors": rows })
    }

    fn show_trace(&self) -> Value {
        let ift = self.ctl.ifaces();
        let recs: Vec<Value> = self
            .ctl
            .trace_records()
            .iter()
            .map(|(w, r)| {
                let n_in = usize::from(r.len_in).min(r.head_in.len());
                let n_out = usize::from(r.len_out).min(r.head_out.len());
                json!({
                    "worker": w,
                    "tsc": r.tsc,
                    "rx_port": r.rx_port,
                    "rx_interface": ift.get(r.rx_if).map(|i| i.name.clone()),
                    "stages": r.stages,
                    "decision": r.decision,
                    "len_in": r.len_in,
                    "head_in": decode::hex(&r.head_in[..n_in]),
                    "summary_in": decode::frame(&r.head_in[..n_in]),
                    "len_out": r.len_out,
                    "head_out": decode::hex(&r.head_out[..n_out]),
                    "summary_out": (r.len_out > 0).then(|| decode::frame(&r.head_out[..n_out])),
                })
            })
            .collect();
        json!({ "packets": recs })
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

    fn handle(&mut self, args: &[String]) -> Result<Value, String> {
        let ctl = &*self.ctl;
        let args = cli::vrf_words(args, |n| ctl.vrf_table(n).ok_or_else(|| ctl.unknown_vrf(n)))?;
        let cmd = cli::parse(&args).map_err(|e| e.to_string())?;
        self.run(cmd)
    }

    fn metrics(&self, m: &mut Scrape) {
        self.info.metrics(m, "router");
        // The raw counters: `clear counters` never resets a Prometheus counter.
        let snaps: Vec<WorkerSnap> = self
            .ctl
            .worker_stats()
            .iter()
            .map(|s| WorkerSnap::take(s))
            .collect();
        let ift = self.ctl.ifaces();
        for i in ift.iter() {
            let ix = i.ifindex as usize;
            let sum = |k: usize| -> u64 {
                snaps
                    .iter()
                    .filter_map(|s| s.ifaces.get(ix))
                    .map(|c| c[k])
                    .sum()
            };
            let l = [("interface", i.name.as_str())];
            interface_metrics(m, &l, [sum(0), sum(1), sum(2), sum(3), sum(4)]);
            m.gauge(
                "interface_up",
                "Administrative state (1 up).",
                &l,
                f64::from(u8::from(i.up)),
            );
            m.gauge("interface_mtu", "IPv4 MTU in bytes.", &l, f64::from(i.mtu));
            m.gauge(
                "interface_addresses",
                "IPv4 addresses.",
                &l,
                i.addrs.len() as f64,
            );
            if i.vlan.is_none() {
                if let Some((link, ps)) = self.ports.port_state(i.port) {
                    port_metrics(m, &l, link, &ps);
                }
            }
            for c in PuntClass::ALL {
                let n: u64 = snaps
                    .iter()
                    .filter_map(|s| s.policed.get(ix))
                    .map(|p| p[c as usize])
                    .sum();
                m.counter(
                    "punt_policed",
                    "Punts the policer dropped, by receiving interface and class.",
                    &[("interface", i.name.as_str()), ("class", c.name())],
                    n,
                );
            }
        }
        for (w, s) in snaps.iter().enumerate() {
            let ws = w.to_string();
            worker_metrics(
                m,
                &ws,
                [
                    s.loops,
                    s.busy_loops,
                    s.busy_cycles,
                    s.idle_sleeps,
                    s.rx_wakes,
                ],
            );
            for st in Stage::ALL {
                let [calls, pkts, cycles] = s.stages[st as usize];
                let l = [("worker", ws.as_str()), ("node", st.name())];
                m.counter("node_calls", "Calls of a node (show run).", &l, calls);
                m.counter(
                    "node_vectors",
                    "Packets through a node (show run).",
                    &l,
                    pkts,
                );
                m.counter(
                    "node_clocks",
                    "TSC cycles spent in a node (show run).",
                    &l,
                    cycles,
                );
            }
        }
        let total = |f: &dyn Fn(&WorkerSnap) -> u64| -> u64 { snaps.iter().map(f).sum() };
        for r in DropReason::ALL {
            let n = total(&|s| s.drops[r as usize]);
            m.counter(
                "drops",
                "Packets dropped, by reason (show errors).",
                &[("reason", r.name())],
                n,
            );
        }
        for (k, r) in mpls::DropReason::ALL.iter().enumerate() {
            let n = total(&|s| s.mpls_drops[k]);
            m.counter(
                "drops",
                "Packets dropped, by reason (show errors).",
                &[("reason", r.name())],
                n,
            );
        }
        for r in PuntReason::ALL {
            let n = total(&|s| s.punts[r as usize]);
            m.counter(
                "punts",
                "Packets punted to the host, by reason.",
                &[("reason", r.name())],
                n,
            );
        }
        let scalars = [
            (
                "icmp_echo_replies",
                "ICMP echo replies sent by the router.",
                total(&|s| s.echo_replies),
            ),
            (
                "icmp_errors",
                "ICMP errors sent by the router.",
                total(&|s| s.icmp_errors),
            ),
            (
                "arp_replies",
                "ARP replies sent.",
                total(&|s| s.arp_replies),
            ),
            (
                "arp_requests",
                "ARP requests sent.",
                total(&|s| s.arp_requests),
            ),
            (
                "arp_consumed",
                "ARP packets taken by the workers.",
                total(&|s| s.arp_consumed),
            ),
            (
                "held_packets",
                "Packets held waiting for ARP.",
                total(&|s| s.held),
            ),
            (
                "held_released",
                "Held packets sent once resolved.",
                total(&|s| s.hold_released),
            ),
        ];
        for (name, help, n) in scalars {
            m.counter(name, help, &[], n);
        }
        // Tables: sizes per source are kept by the RIB (no walk).
        for src in RouteSource::ALL {
            m.gauge(
                "routes",
                "Route candidates, by source (the RIB).",
                &[("source", src.name())],
                self.ctl.route_count_of(src) as f64,
            );
        }
        let fib = self.ctl.fib();
        for t in fib.tables() {
            let ts = t.to_string();
            m.gauge(
                "fib_routes",
                "Routes installed in a FIB table.",
                &[("table", ts.as_str())],
                fib.route_count(t) as f64,
            );
        }
        m.gauge(
            "labels",
            "MPLS label entries installed.",
            &[],
            self.ctl.labels().len() as f64,
        );
        let mut by_source = [0u64; 3];
        for &(ix, ip) in self.ctl.neighbors().keys() {
            let k = if self.ctl.is_static_neighbor(ix, ip) {
                0
            } else if self.ctl.is_kernel_neighbor(ix, ip) {
                1
            } else {
                2
            };
            by_source[k] += 1;
        }
        by_source[1] += self.ctl.neighbors6().len() as u64;
        for (k, name) in ["static", "kernel", "arp"].iter().enumerate() {
            m.gauge(
                "neighbors",
                "Resolved neighbours, by source.",
                &[("source", name)],
                by_source[k] as f64,
            );
        }
        let (probes, forgotten) = self.ctl.aging_counts();
        m.counter(
            "neighbor_probes",
            "ARP probes of neighbour aging sent.",
            &[],
            probes,
        );
        m.counter(
            "neighbor_forgotten",
            "Neighbours forgotten after unanswered probes.",
            &[],
            forgotten,
        );
        if let Some(agent) = &self.sflow {
            sflow_agent::metrics(agent, m);
        }
        if let Some(l) = &self.linux {
            l.metrics(m);
        }
    }
}

/// An interface's traffic counters for a scrape: rx packets, rx bytes, tx
/// packets, tx bytes, drops.
fn interface_metrics(m: &mut Scrape, l: &[(&'static str, &str)], c: [u64; 5]) {
    let names = [
        ("interface_rx_packets", "Packets received."),
        ("interface_rx_bytes", "Bytes received."),
        ("interface_tx_packets", "Packets sent."),
        ("interface_tx_bytes", "Bytes sent."),
        ("interface_drops", "Packets received and dropped."),
    ];
    for ((name, help), v) in names.into_iter().zip(c) {
        m.counter(name, help, l, v);
    }
}

/// A DPDK port's link and error counters for a scrape.
fn port_metrics(m: &mut Scrape, l: &[(&'static str, &str)], link: bool, s: &PortStats) {
    m.gauge(
        "interface_link",
        "Carrier of the port (1 up).",
        l,
        f64::from(u8::from(link)),
    );
    let counters = [
        (
            "port_rx_missed",
            "Packets the NIC dropped for want of room (imissed).",
            s.rx_missed,
        ),
        (
            "port_rx_errors",
            "Erroneous packets received (ierrors).",
            s.rx_errors,
        ),
        (
            "port_tx_errors",
            "Packets the NIC failed to send (oerrors).",
            s.tx_errors,
        ),
        (
            "port_rx_no_mbuf",
            "Receive failures for want of a buffer (rx_nombuf).",
            s.rx_nombuf,
        ),
    ];
    for (name, help, v) in counters {
        m.counter(name, help, l, v);
    }
}

/// A worker's loop counters for a scrape: loops, busy loops, busy cycles, sleeps,
/// sleeps a frame ended.
fn worker_metrics(m: &mut Scrape, worker: &str, c: [u64; 5]) {
    let names = [
        ("worker_loops", "Poll loops."),
        ("worker_busy_loops", "Poll loops that received packets."),
        ("worker_busy_clocks", "TSC cycles of busy loops."),
        ("worker_idle_sleeps", "Sleeps while idle."),
        (
            "worker_rx_wakes",
            "Idle sleeps ended by a port's frame (af_packet ports' sockets).",
        ),
    ];
    for ((name, help), v) in names.into_iter().zip(c) {
        m.counter(name, help, &[("worker", worker)], v);
    }
}

// ---------------------------------------------------------------- cross-connect

/// One port of the cross-connect as `show interfaces` needs it.
#[derive(Debug, Clone)]
pub struct XconnectPort {
    /// Name.
    pub name: String,
    /// DPDK port id.
    pub id: u16,
    /// Driver.
    pub driver: String,
    /// MAC.
    pub mac: [u8; 6],
    /// Name of the peer port.
    pub peer: String,
}

#[derive(Debug, Clone)]
struct XcSnap {
    /// Per queue assignment: rx, tx, tx drops.
    queues: Vec<[u64; 3]>,
    loops: u64,
    busy_loops: u64,
    busy_cycles: u64,
    idle_sleeps: u64,
}

impl XcSnap {
    fn take(c: &WorkerCounters) -> XcSnap {
        XcSnap {
            queues: c
                .queues
                .iter()
                .map(|q| [q.rx_pkts.get(), q.tx_pkts.get(), q.tx_drops.get()])
                .collect(),
            loops: c.loops.get(),
            busy_loops: c.busy_loops.get(),
            busy_cycles: c.busy_cycles.get(),
            idle_sleeps: c.idle_sleeps.get(),
        }
    }

    fn since(&self, b: &XcSnap) -> XcSnap {
        XcSnap {
            queues: self
                .queues
                .iter()
                .zip(&b.queues)
                .map(|(a, b)| std::array::from_fn(|k| a[k].saturating_sub(b[k])))
                .collect(),
            loops: self.loops.saturating_sub(b.loops),
            busy_loops: self.busy_loops.saturating_sub(b.busy_loops),
            busy_cycles: self.busy_cycles.saturating_sub(b.busy_cycles),
            idle_sleeps: self.idle_sleeps.saturating_sub(b.idle_sleeps),
        }
    }
}

/// The cross-connect's API: interfaces, run and errors, counters.
pub struct XconnectApi<'a> {
    ports: &'a dyn PortSource,
    port_list: Vec<XconnectPort>,
    counters: Vec<Arc<WorkerCounters>>,
    queues: Vec<Vec<RxAssignment>>,
    info: DaemonInfo,
    base_workers: Vec<XcSnap>,
    base_ports: Vec<PortStats>,
    base_at: Instant,
}

impl std::fmt::Debug for XconnectApi<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XconnectApi").finish_non_exhaustive()
    }
}

impl<'a> XconnectApi<'a> {
    /// The API over running cross-connect workers.
    pub fn new(
        ports: &'a dyn PortSource,
        port_list: Vec<XconnectPort>,
        counters: Vec<Arc<WorkerCounters>>,
        queues: Vec<Vec<RxAssignment>>,
        info: DaemonInfo,
    ) -> XconnectApi<'a> {
        let base_workers = counters
            .iter()
            .map(|c| XcSnap {
                queues: vec![[0; 3]; c.queues.len()],
                loops: 0,
                busy_loops: 0,
                busy_cycles: 0,
                idle_sleeps: 0,
            })
            .collect();
        let n = port_list.len();
        let base_at = info.started;
        XconnectApi {
            ports,
            port_list,
            counters,
            queues,
            info,
            base_workers,
            base_ports: vec![PortStats::default(); n],
            base_at,
        }
    }

    fn snaps(&self) -> Vec<XcSnap> {
        self.counters
            .iter()
            .zip(&self.base_workers)
            .map(|(c, b)| XcSnap::take(c).since(b))
            .collect()
    }

    /// Runs one parsed command.
    pub fn run(&mut self, cmd: Command) -> Result<Value, String> {
        let snaps = self.snaps();
        match cmd {
            Command::ShowInterfaces { name } => {
                if let Some(n) = &name {
                    if !self.port_list.iter().any(|p| &p.name == n) {
                        let names: Vec<&str> =
                            self.port_list.iter().map(|p| p.name.as_str()).collect();
                        return Err(format!(
                            "unknown interface {n:?} (interfaces: {})",
                            names.join(", ")
                        ));
                    }
                }
                let rows: Vec<Value> = self
                    .port_list
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| name.as_ref().is_none_or(|n| *n == p.name))
                    .map(|(k, p)| {
                        let (link, now) = self.ports.port_state(p.id).unwrap_or_default();
                        let s = port_diff(now, self.base_ports[k]);
                        // Drops are counted where the frame was received, against the
                        // port it could not leave on.
                        let drops: u64 = self
                            .queues
                            .iter()
                            .zip(&snaps)
                            .flat_map(|(qs, sn)| qs.iter().zip(&sn.queues))
                            .filter(|(a, _)| a.peer == p.id)
                            .map(|(_, c)| c[2])
                            .sum();
                        json!({
                            "name": p.name,
                            "ifindex": k + 1,
                            "port": p.id,
                            "driver": p.driver,
                            "mac": mac_str(p.mac),
                            "up": true,
                            "link": link,
                            "peer": p.peer,
                            "counters": {
                                "rx_packets": s.rx_pkts,
                                "rx_bytes": s.rx_bytes,
                                "tx_packets": s.tx_pkts,
                                "tx_bytes": s.tx_bytes,
                                "drops": drops,
                                "rx_missed": s.rx_missed,
                                "rx_errors": s.rx_errors,
                                "tx_errors": s.tx_errors,
                                "rx_no_mbuf": s.rx_nombuf,
                            },
                        })
                    })
                    .collect();
                Ok(json!({ "interfaces": rows }))
            }
            Command::ShowRun => {
                let secs = self.base_at.elapsed().as_secs_f64();
                let workers: Vec<Value> = snaps
                    .iter()
                    .enumerate()
                    .map(|(w, s)| {
                        let rx: u64 = s.queues.iter().map(|q| q[0]).sum();
                        let tx: u64 = s.queues.iter().map(|q| q[1]).sum();
                        let drops: u64 = s.queues.iter().map(|q| q[2]).sum();
                        let stages = if s.busy_loops > 0 {
                            vec![stage_json(
                                "l2-xconnect",
                                "polling",
                                s.busy_loops,
                                rx,
                                s.busy_cycles,
                            )]
                        } else {
                            Vec::new()
                        };
                        json!({
                            "worker": w,
                            "lcore": self.info.lcores.get(w),
                            "loops": s.loops,
                            "busy_loops": s.busy_loops,
                            "busy_cycles": s.busy_cycles,
                            "idle_sleeps": s.idle_sleeps,
                            "rates": {
                                "in": per_sec(rx, secs),
                                "out": per_sec(tx, secs),
                                "drop": per_sec(drops, secs),
                                "punt": 0.0,
                            },
                            "stages": stages,
                        })
                    })
                    .collect();
                Ok(json!({ "time_s": secs, "tsc_hz": self.info.tsc_hz, "workers": workers }))
            }
            Command::ShowErrors => {
                let drops: u64 = snaps.iter().flat_map(|s| &s.queues).map(|q| q[2]).sum();
                let rows: Vec<Value> = if drops > 0 {
                    vec![json!({ "count": drops, "reason": "tx_full", "type": "drop" })]
                } else {
                    Vec::new()
                };
                Ok(json!({ "errors": rows }))
            }
            Command::ShowVersion => Ok(self.info.version("xconnect")),
            Command::ClearCounters => {
                self.base_workers = self.counters.iter().map(|c| XcSnap::take(c)).collect();
                self.base_ports = self
                    .port_list
                    .iter()
                    .map(|p| self.ports.port_state(p.id).unwrap_or_default().1)
                    .collect();
                self.base_at = Instant::now();
                Ok(Value::Null)
            }
            Command::Reload => {
                let (new, _) = self.info.reread()?;
                self.info.config = new;
                Ok(
                    json!({ "message": "reload: no changes (a cross-connect has no routing sections)" }),
                )
            }
            other => Err(format!(
                "{} needs [forwarding] mode = \"router\"; this dataplaned is an L2 cross-connect (it serves show interfaces|run|errors|version, clear counters, reload)",
                command_name(&other)
            )),
        }
    }
}

impl Service for XconnectApi<'_> {
    fn metrics(&self, m: &mut Scrape) {
        self.info.metrics(m, "xconnect");
        let raw: Vec<XcSnap> = self.counters.iter().map(|c| XcSnap::take(c)).collect();
        for p in &self.port_list {
            let l = [("interface", p.name.as_str())];
            let (link, s) = self.ports.port_state(p.id).unwrap_or_default();
            // Drops are counted against the port a frame could not leave on.
            let drops: u64 = self
                .queues
                .iter()
                .zip(&raw)
                .flat_map(|(qs, sn)| qs.iter().zip(&sn.queues))
                .filter(|(a, _)| a.peer == p.id)
                .map(|(_, c)| c[2])
                .sum();
            interface_metrics(m, &l, [s.rx_pkts, s.rx_bytes, s.tx_pkts, s.tx_bytes, drops]);
            port_metrics(m, &l, link, &s);
        }
        for (w, s) in raw.iter().enumerate() {
            let ws = w.to_string();
            worker_metrics(
                m,
                &ws,
                // (cross-connect workers sleep on a timer only)
                [s.loops, s.busy_loops, s.busy_cycles, s.idle_sleeps, 0],
            );
        }
    }

    fn handle(&mut self, args: &[String]) -> Result<Value, String> {
        let cmd = cli::parse(args).map_err(|e| e.to_string())?;
        self.run(cmd)
    }
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
