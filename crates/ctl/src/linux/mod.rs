//! The Linux control plane: TAP twins of the router's interfaces in the namespace
//! where BIRD/FRR run, the punt path between them and the workers, and the
//! netlink learner that turns that namespace's links, addresses, neighbours and
//! routes into the router's.
//!
//! The control thread owns the learner, FPM and the twins' state. Workers hand
//! punted packets over their lock-free punt queues to the [`punt`] thread, which
//! writes each to the twin of the interface it arrived on (VLAN tag removed for
//! a sub-interface) and reads what the kernel sends on the twins into the
//! workers' inject queues (tag added). The twins outlive the daemon through
//! their [`keeper`].
//!
//! ARP is split so that a peer gets one answer per request: the dataplane answers
//! requests for the router's addresses itself and never punts them; replies
//! addressed to the router are punted, so the kernel's own requests (sent through
//! the twins) get their answers and the kernel's neighbour table fills. The
//! kernel's neighbours then come back through the learner as neighbours of the
//! dataplane; the dataplane's own ARP learning goes on beside them (a kernel
//! neighbour is never aged by the dataplane, a learned one is).

pub mod change;
pub mod decode;
pub mod diag;
pub mod ethtool;
pub mod fpm;
pub mod heap;
pub mod keeper;
pub mod learner;
pub mod netns;
pub mod nl;
pub mod punt;
pub mod sched;

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

use serde::Deserialize;
use serde_json::{Value, json};
use tun_rs::{DeviceBuilder, Layer, SyncDevice};

use dataplane::dpdk::Mempool;
use std::sync::Arc;

use dataplane::router::{PuntRates, PuntReason, PuntSignal, RouteSource, RouterControl, Sessions};

use self::learner::Learner;
use self::netns::Netns;
use self::nl::NlSocket;
use self::punt::{PathStats, PathTwin, PuntPath, TwinStats};

/// `[linux]`: run with a Linux control plane.
///
/// ```toml
/// [linux]
/// netns = "dataplane"            # created if missing
/// interfaces = ["port0", "port1"]  # default: every interface
/// names = { port0 = "eth0" }     # twin names (default: the interface's)
/// punt_control_pps = 20000       # per worker
/// punt_other_pps = 2000
/// netlink_rcvbuf = 67108864
/// tables = { 254 = 0 }           # Linux table -> FIB table (main is 0)
/// keep_twins = true              # twins outlive the daemon (see [`keeper`])
/// punt_priority = 1              # SCHED_FIFO priority of the punt thread (0: none)
/// punt_cpus = [0]                # where it runs (default: CPUs without a worker)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinuxSection {
    /// Network namespace of the routing daemons (default `dataplane`).
    #[serde(default = "default_netns")]
    pub netns: String,
    /// Interfaces that get a twin (default: all of them).
    #[serde(default)]
    pub interfaces: Option<Vec<String>>,
    /// Twin names by interface name (default: the interface's own name).
    #[serde(default)]
    pub names: BTreeMap<String, String>,
    /// Punt policer, routing protocols/ARP/ND, packets/s per worker.
    #[serde(default = "default_control_pps")]
    pub punt_control_pps: u32,
    /// Punt policer, everything else, packets/s per worker.
    #[serde(default = "default_other_pps")]
    pub punt_other_pps: u32,
    /// Receive buffer of the netlink event socket, bytes.
    #[serde(default = "default_rcvbuf")]
    pub netlink_rcvbuf: usize,
    /// Linux table number (as a string key) to FIB table. Unlisted tables map to
    /// the FIB table of the same number (main, 254, to 0) when it exists.
    #[serde(default)]
    pub tables: BTreeMap<String, u32>,
    /// The twins, their addresses and the kernel's routes through them outlive
    /// the daemon (held by a [`keeper`] process), so that a restart leaves the
    /// control namespace and its routing daemons undisturbed.
    #[serde(default = "default_true")]
    pub keep_twins: bool,
    /// Real-time (SCHED_FIFO) priority of the punt thread, 1-99; 0 runs it as
    /// an ordinary thread. Like the kernel's softirq for a plain Linux router,
    /// it then runs ahead of the control thread's bulk work and of the routing
    /// daemons; the punt policers bound what it can be made to do.
    #[serde(default = "default_punt_priority")]
    pub punt_priority: i32,
    /// CPUs the punt thread may run on (default: those without a worker; see
    /// [`sched::punt_cpus`]). A worker's CPU needs `punt_priority = 0`.
    #[serde(default)]
    pub punt_cpus: Option<Vec<usize>>,
}

fn default_punt_priority() -> i32 {
    1
}

fn default_true() -> bool {
    true
}

fn default_netns() -> String {
    "dataplane".into()
}
fn default_control_pps() -> u32 {
    PuntRates::default().control_pps
}
fn default_other_pps() -> u32 {
    PuntRates::default().other_pps
}
fn default_rcvbuf() -> usize {
    64 << 20
}

impl LinuxSection {
    /// The policer rates.
    pub fn punt_rates(&self) -> PuntRates {
        PuntRates {
            control_pps: self.punt_control_pps,
            other_pps: self.punt_other_pps,
        }
    }

    /// The table map, checked.
    pub fn table_map(&self) -> Result<BTreeMap<u32, u32>, LinuxError> {
        let mut m = BTreeMap::new();
        for (k, &v) in &self.tables {
            let t: u32 = k.parse().map_err(|_| {
                LinuxError::Config(format!("tables: {k:?} is not a Linux table number"))
            })?;
            m.insert(t, v);
        }
        Ok(m)
    }

    /// Checks `punt_cpus` against the workers' CPUs: a real-time punt thread
    /// beside a worker can hold that CPU while it waits for the worker
    /// ([`sched::punt_cpus`]).
    pub fn check_cpus(&self, worker_cpus: &[usize]) -> Result<(), LinuxError> {
        let beside = self
            .punt_cpus
            .iter()
            .flatten()
            .find(|c| worker_cpus.contains(c));
        match beside {
            Some(c) if self.punt_priority > 0 => Err(LinuxError::Config(format!(
                "punt_cpus: CPU {c} has a worker: it needs punt_priority = 0 (a real-time \
                 thread beside a worker can hold that CPU while it waits for the worker)"
            ))),
            _ => Ok(()),
        }
    }

    /// Checks what can be checked without the router: names and numbers.
    pub fn check(&self) -> Result<(), LinuxError> {
        self.table_map()?;
        if !(0..=99).contains(&self.punt_priority) {
            return Err(LinuxError::Config(
                "punt_priority must be 0 (none) to 99".into(),
            ));
        }
        if self.punt_cpus.as_ref().is_some_and(|c| c.is_empty()) {
            return Err(LinuxError::Config(
                "punt_cpus must name at least one CPU (leave it out for the workers' CPUs)".into(),
            ));
        }
        if self.punt_control_pps == 0 || self.punt_other_pps == 0 {
            return Err(LinuxError::Config(
                "punt_control_pps and punt_other_pps must be at least 1".into(),
            ));
        }
        for n in self.names.values() {
            if n.is_empty() || n.len() > 15 || n.contains(['/', ' ', ':']) {
                return Err(LinuxError::Config(format!(
                    "names: {n:?} is not a Linux interface name (1-15 characters, no '/', ' ' or ':')"
                )));
            }
        }
        Ok(())
    }
}

/// Why the Linux control plane cannot start (each names the `[linux]` key or
/// the Linux object concerned).
#[derive(Debug, thiserror::Error)]
pub enum LinuxError {
    /// A value of the section is out of range or malformed.
    #[error("[linux] {0}")]
    Config(String),
    /// The section names an interface the router does not have.
    #[error("[linux] {key}: no interface {name}")]
    UnknownInterface {
        /// `interfaces` or `names`.
        key: &'static str,
        /// The name.
        name: String,
    },
    /// The namespace, a TAP device or a netlink socket could not be made.
    #[error("[linux] netns {netns}: {source}")]
    Namespace {
        /// The namespace.
        netns: String,
        /// Why.
        source: io::Error,
    },
    /// Linux refused an interface address the file gives a twin.
    #[error("[linux] {twin} address {addr}/{len}: {source}")]
    Address {
        /// The twin.
        twin: String,
        /// The address.
        addr: std::net::IpAddr,
        /// Its prefix length.
        len: u8,
        /// Why.
        source: io::Error,
    },
}

/// Punt/inject counters of one twin.
#[derive(Debug, Default, Clone, Copy)]
pub struct TwinCounters {
    /// Frames written to the TAP.
    pub punt_pkts: u64,
    /// Bytes written to the TAP.
    pub punt_bytes: u64,
    /// Frames the TAP refused (its queue was full, the link was down).
    pub punt_errors: u64,
    /// Frames read from the TAP and queued to a worker.
    pub inject_pkts: u64,
    /// Their bytes.
    pub inject_bytes: u64,
    /// Frames read but lost (no mbuf, inject queue full, too short).
    pub inject_drops: u64,
}

/// The Linux twin of one router interface.
pub struct Twin {
    /// Router ifindex.
    pub ifindex: u32,
    /// Router interface name.
    pub iface: String,
    /// The TAP's name.
    pub name: String,
    /// The TAP's ifindex in the namespace.
    pub kernel_ifindex: u32,
    /// DPDK port and VLAN of the interface.
    pub port: u16,
    /// VLAN of a sub-interface.
    pub vlan: Option<u16>,
    /// Counters (the punt path's).
    pub counters: Arc<TwinStats>,
    /// The carrier as last set (it follows the port's link).
    pub carrier: bool,
    /// The admin state last given to the port (a port twin's follows it).
    pub admin: bool,
    /// The TAP existed (a kept twin of an earlier daemon) and was attached to.
    pub reattached: bool,
    carrier_synced: bool,
    dev: Arc<SyncDevice>,
}

impl std::fmt::Debug for Twin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Twin")
            .field("name", &self.name)
            .field("ifindex", &self.ifindex)
            .field("kernel_ifindex", &self.kernel_ifindex)
            .field("fd", &self.dev.as_raw_fd())
            .finish()
    }
}

/// Frames a twin queues towards the punt path.
const TAP_QUEUE_LEN: u32 = 4096;

/// The control thread's own counters of the Linux side.
#[derive(Debug, Default, Clone)]
pub struct PumpCounters {
    /// IPv6 next hops the kernel was asked to resolve.
    pub resolve6: u64,
    /// Of those, requests the kernel refused.
    pub resolve6_errors: u64,
    /// Ports set up or down after their twin, refusals, the last one.
    pub port_admin: u64,
    /// Refused port admin changes.
    pub port_admin_errors: u64,
    /// The last refusal.
    pub last_port_admin_error: Option<String>,
}

/// The control plane's Linux side: namespace, twins, netlink learner.
pub struct LinuxPlane {
    netns: Netns,
    created_netns: bool,
    section: LinuxSection,
    twins: Vec<Twin>,
    learner: Learner,
    /// zebra's FPM connection (`[fpm]`).
    fpm: Option<fpm::FpmServer>,
    counters: PumpCounters,
    /// Wakes the punt path (workers raise it).
    signal: Arc<PuntSignal>,
    /// The punt path's counters.
    path_stats: Arc<PathStats>,
    /// The punt path, once the workers exist.
    path: Option<PuntPath>,
    /// Ports whose twin went up or down since the last call (see
    /// [`LinuxPlane::take_admin_changes`]).
    admin_changes: Vec<(u16, bool)>,
    /// Who keeps the twins beyond this process.
    keeper: String,
    /// The namespace's sessions, for the workers' punt policers.
    sessions: SessionWatch,
}

/// How often the namespace's sockets are read again.
const SESSIONS_EVERY: Duration = Duration::from_secs(1);
/// How long a BFD peer the twins stopped sending to stays known.
const BFD_PEER_AGE: Duration = Duration::from_secs(30);

/// The namespace's sessions as last read: sock_diag's TCP sockets and the
/// peers the twins send BFD to (from the punt thread).
struct SessionWatch {
    diag: Option<diag::SockDiag>,
    bfd_seen: Arc<ArrayQueue<Ipv4Addr>>,
    bfd_peers: HashMap<Ipv4Addr, Instant>,
    at: Option<Instant>,
    last: Option<(diag::TcpSockets, Vec<Ipv4Addr>)>,
    publications: u64,
    last_error: Option<String>,
}

impl SessionWatch {
    /// Reads the sockets again when due, and publishes what changed.
    fn poll(&mut self, ctl: &RouterControl) {
        let now = Instant::now();
        while let Some(p) = self.bfd_seen.pop() {
            self.bfd_peers.insert(p, now);
        }
        if self
            .at
            .is_some_and(|t| now.duration_since(t) < SESSIONS_EVERY)
        {
            return;
        }
        self.at = Some(now);
        self.bfd_peers
            .retain(|_, t| now.duration_since(*t) < BFD_PEER_AGE);
        let Some(d) = &mut self.diag else {
            return;
        };
        let tcp = match d.tcp() {
            Ok(t) => t,
            Err(e) => {
                self.last_error = Some(format!("sock_diag: {e}"));
                return;
            }
        };
        let mut peers: Vec<Ipv4Addr> = self.bfd_peers.keys().copied().collect();
        peers.sort_unstable();
        let snap = (tcp, peers);
        if self.last.as_ref() != Some(&snap) {
            ctl.set_sessions(Sessions::new(
                snap.0.listen.iter().copied(),
                snap.0.conns.iter().copied(),
                snap.1.iter().copied(),
            ));
            self.publications += 1;
            self.last = Some(snap);
        }
    }

    fn show(&self) -> Value {
        let (tcp, peers) = self.last.clone().unwrap_or_default();
        json!({
            "sock_diag": self.diag.is_some(),
            "tcp_listen": tcp.listen,
            "tcp_connections": tcp.conns.len(),
            "bfd_peers": peers.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            "publications": self.publications,
            "last_error": self.last_error,
        })
    }
}

impl std::fmt::Debug for LinuxPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPlane")
            .field("netns", &self.netns.name())
            .field("twins", &self.twins)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for LinuxPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "netns {}{}, twins",
            self.netns.name(),
            if self.created_netns { " (created)" } else { "" }
        )?;
        for t in &self.twins {
            write!(
                f,
                " {}={}(ifindex {}{})",
                t.iface,
                t.name,
                t.kernel_ifindex,
                if t.reattached { ", kept" } else { "" }
            )?;
        }
        write!(f, ", twins kept by {}", self.keeper)?;
        let s = self.learner.stats();
        write!(
            f,
            ", {} netlink messages learned in {} batch(es)",
            s.messages, s.batches
        )
    }
}

impl LinuxPlane {
    /// Opens (or creates) the namespace, makes a twin of each interface the
    /// section names, gives the twins the interfaces' addresses (Linux holds them
    /// from now on), opens the netlink sockets and learns the namespace's state.
    ///
    /// A twin that exists already (kept by the [`keeper`] of an earlier daemon)
    /// is attached to as it is: its admin state, MTU, addresses and routes are
    /// Linux's. With `keeper_exe` (the daemon's executable) and `keep_twins`, the
    /// twins are then handed to the namespace's keeper so that they outlive
    /// this process.
    pub fn start(
        section: &LinuxSection,
        fpm: Option<&fpm::FpmSection>,
        ctl: &mut RouterControl,
        keeper_exe: Option<&std::path::Path>,
    ) -> Result<LinuxPlane, LinuxError> {
        section.check()?;
        let ns_err = |source| LinuxError::Namespace {
            netns: section.netns.clone(),
            source,
        };
        let (netns, created_netns) = Netns::open_or_create(&section.netns).map_err(ns_err)?;
        let wanted = wanted_interfaces(section, ctl)?;
        let made = netns
            .run(|| open_in_netns(section, fpm, &wanted))
            .map_err(ns_err)?;
        let (devs, events, mut dump, listener, diag) = made.map_err(ns_err)?;
        let mut twins = Vec::new();
        for (i, (dev, kernel_ifindex, reattached)) in wanted.iter().zip(devs) {
            twins.push(Twin {
                ifindex: i.ifindex,
                iface: i.name.clone(),
                name: section.names.get(&i.name).unwrap_or(&i.name).clone(),
                kernel_ifindex,
                port: i.port,
                vlan: i.vlan,
                counters: Arc::default(),
                carrier: true,
                admin: i.up,
                reattached,
                carrier_synced: false,
                dev: Arc::new(dev),
            });
        }
        // Linux holds the interfaces' addresses from now on: the file's go to the
        // twins and come back through the learner.
        for (t, i) in twins.iter().zip(&wanted) {
            for (a, l) in i.all_addrs() {
                dump.add_address(t.kernel_ifindex, a, l)
                    .map_err(|source| LinuxError::Address {
                        twin: t.name.clone(),
                        addr: a,
                        len: l,
                        source,
                    })?;
            }
        }
        let map: std::collections::HashMap<u32, u32> = twins
            .iter()
            .map(|t| (t.kernel_ifindex, t.ifindex))
            .collect();
        let fpm = match (fpm, listener) {
            (Some(f), Some(l)) => Some(
                fpm::FpmServer::new(f.clone(), l, map.clone(), section.table_map()?)
                    .map_err(ns_err)?,
            ),
            _ => None,
        };
        let mut learner = Learner::new(events, dump, map, section.table_map()?);
        let mut fpm = fpm;
        if let Some(f) = &mut fpm {
            f.share_vrf_devices(learner.vrf_devices());
        }
        learner.resync(ctl, "start");
        // The file's addresses are the twins' now: the kernel's copies hold them.
        for (ix, a, l) in ctl.addresses_of(RouteSource::Config) {
            if twins.iter().any(|t| t.ifindex == ix) {
                let _ = ctl.del_address_from(RouteSource::Config, ix, a, l);
            }
        }
        ctl.set_punt_to_host(true);
        let keeper = hand_to_keeper(section, &twins, keeper_exe);
        Ok(LinuxPlane {
            netns,
            created_netns,
            section: section.clone(),
            twins,
            learner,
            fpm,
            counters: PumpCounters::default(),
            signal: Arc::new(PuntSignal::new().map_err(ns_err)?),
            path_stats: Arc::default(),
            path: None,
            admin_changes: Vec::new(),
            keeper,
            sessions: SessionWatch {
                diag,
                bfd_seen: Arc::new(ArrayQueue::new(256)),
                bfd_peers: HashMap::new(),
                at: None,
                last: None,
                publications: 0,
                last_error: None,
            },
        })
    }

    /// The section it runs with.
    pub fn section(&self) -> &LinuxSection {
        &self.section
    }

    /// The twin of router interface `ifindex`.
    pub fn twin_of(&self, ifindex: u32) -> Option<&Twin> {
        self.twins.iter().find(|t| t.ifindex == ifindex)
    }

    /// What the workers raise after queueing punts
    /// ([`dataplane::router::RouterWorker::with_punt_signal`]).
    pub fn punt_signal(&self) -> Arc<PuntSignal> {
        self.signal.clone()
    }

    /// Starts the punt path (its own thread) over the workers `ctl` has,
    /// injecting in mbufs of `pool`, on `punt_cpus` or else the CPUs without
    /// a worker (`worker_cpus`, [`sched::punt_cpus`]).
    pub fn start_punt_path(
        &mut self,
        ctl: &RouterControl,
        pool: Arc<Mempool>,
        worker_cpus: &[usize],
    ) -> io::Result<()> {
        let online = sched::online_cpus();
        let cpus = match &self.section.punt_cpus {
            Some(want) => {
                if let Some(c) = want.iter().find(|c| !online.contains(c)) {
                    return Err(io::Error::other(format!(
                        "[linux] punt_cpus: CPU {c} is not online (online: {online:?})"
                    )));
                }
                want.clone()
            }
            None => sched::punt_cpus(&online, worker_cpus),
        };
        // (a worker's CPU, allowed by `check_cpus` only with no priority, or
        // no CPU without a worker: the punt thread shares theirs, as an
        // ordinary thread)
        let beside_worker = cpus.iter().any(|c| worker_cpus.contains(c));
        let priority = (self.section.punt_priority > 0 && !beside_worker)
            .then_some(self.section.punt_priority);
        let twins = self
            .twins
            .iter()
            .map(|t| PathTwin {
                dev: t.dev.clone(),
                port: t.port,
                vlan: t.vlan,
                stats: t.counters.clone(),
            })
            .collect();
        let queues = ctl
            .workers()
            .iter()
            .map(|h| (h.punts.clone(), h.inject.clone(), h.wake.clone()))
            .collect();
        self.path = Some(PuntPath::start(
            twins,
            queues,
            pool,
            self.signal.clone(),
            self.path_stats.clone(),
            punt::Scheduling { priority, cpus },
            self.sessions.bfd_seen.clone(),
        )?);
        Ok(())
    }

    /// Applies what netlink and FPM said, and what the twins' admin states and
    /// the workers' unresolved IPv6 next hops ask for. Returns whether input is
    /// left (a read budget ran out).
    pub fn pump(&mut self, ctl: &mut RouterControl) -> bool {
        let mut left = self.learner.poll(ctl);
        self.sessions.poll(ctl);
        // `ip link set TWIN down|up` of a port's own twin takes the port down
        // or up, so the neighbour sees the link go as with a plain Linux box.
        for t in &mut self.twins {
            let up = ctl.iface(t.ifindex).map_or(t.admin, |i| i.up);
            if t.vlan.is_none() && up != t.admin {
                t.admin = up;
                let state = if up { "up" } else { "down" };
                tracing::info!(
                    "{}: twin {} set {state}: the port goes {state}",
                    t.iface,
                    t.name
                );
                self.admin_changes.push((t.port, up));
            }
        }
        // IPv6 next hops packets wait for: the kernel resolves them through the
        // twin (its solicitation goes out as an inject, the answer comes back as
        // a punt, the neighbour over netlink).
        for (ifindex, ip) in ctl.take_unresolved6() {
            let Some(t) = self.twins.iter().find(|t| t.ifindex == ifindex) else {
                continue;
            };
            self.counters.resolve6 += 1;
            let kif = t.kernel_ifindex;
            if self.learner.resolve_neighbor(kif, ip.into()).is_err() {
                self.counters.resolve6_errors += 1;
            }
        }
        if let Some(f) = &mut self.fpm {
            left |= f.poll(ctl);
            // With `kernel_routes = false`, FPM alone brings routes while zebra is
            // there; when it is gone for good the kernel's come back.
            if !f.section().kernel_routes
                && self.learner.set_route_import(ctl, !f.active())
                && !f.active()
            {
                self.learner.resync(ctl, "FPM gone: kernel routes back");
            }
        }
        left
    }

    /// The sockets [`LinuxPlane::pump`] reads: netlink events, the FPM
    /// listener and connection (see [`crate::server::Service::io_fds`]).
    pub fn io_fds(&self) -> Vec<(BorrowedFd<'_>, u64)> {
        let mut v = vec![(self.learner.fd(), 0)];
        if let Some(f) = &self.fpm {
            v.extend(f.fds());
        }
        v
    }

    /// `show fpm`.
    pub fn show_fpm(&self, ctl: &RouterControl) -> Option<Value> {
        self.fpm.as_ref().map(|f| f.show(ctl))
    }

    /// The ports to set up or down since the last call: (port, up).
    pub fn take_admin_changes(&mut self) -> Vec<(u16, bool)> {
        std::mem::take(&mut self.admin_changes)
    }

    /// Counts a port admin change done (or refused, with why).
    pub fn admin_done(&mut self, res: Result<(), crate::ports::LinkError>) {
        match res {
            Ok(()) => self.counters.port_admin += 1,
            Err(e) => {
                self.counters.port_admin_errors += 1;
                tracing::warn!("linux: a twin's admin state did not reach its port: {e}");
                self.counters.last_port_admin_error = Some(e.to_string());
            }
        }
    }

    /// Gives each twin its port's link as carrier (`link_up(port)`; unknown
    /// ports count as up).
    pub fn sync_carrier(&mut self, link_up: impl Fn(u16) -> Option<bool>) {
        for t in &mut self.twins {
            let up = link_up(t.port).unwrap_or(true);
            // (a kept twin's carrier is whatever its last daemon left)
            if (up != t.carrier || !t.carrier_synced)
                && self.learner.set_carrier(t.kernel_ifindex, up).is_ok()
            {
                if up != t.carrier {
                    let state = if up { "up" } else { "down" };
                    tracing::info!("{}: link {state}: twin {} carrier {state}", t.iface, t.name);
                }
                t.carrier = up;
                t.carrier_synced = true;
            }
        }
    }

    /// Dumps the namespace and applies it with mark-and-sweep (`dpctl linux
    /// resync`).
    pub fn resync(&mut self, ctl: &mut RouterControl, reason: &str) {
        self.learner.resync(ctl, reason);
    }

    /// The Linux side's counters for a Prometheus scrape: twins, the punt
    /// path, the netlink learner and FPM.
    pub fn metrics(&self, m: &mut crate::metrics::Scrape) {
        for t in &self.twins {
            let c = t.counters.get();
            let l = [("interface", t.iface.as_str())];
            m.gauge(
                "twin_carrier",
                "Carrier of the interface's TAP twin (1 up).",
                &l,
                f64::from(u8::from(t.carrier)),
            );
            m.counter(
                "twin_punt_packets",
                "Frames written to the twin.",
                &l,
                c.punt_pkts,
            );
            m.counter(
                "twin_punt_bytes",
                "Bytes written to the twin.",
                &l,
                c.punt_bytes,
            );
            m.counter(
                "twin_punt_errors",
                "Frames the twin refused.",
                &l,
                c.punt_errors,
            );
            m.counter(
                "twin_inject_packets",
                "Frames read from the twin and sent.",
                &l,
                c.inject_pkts,
            );
            m.counter(
                "twin_inject_bytes",
                "Bytes read from the twin and sent.",
                &l,
                c.inject_bytes,
            );
            m.counter(
                "twin_inject_drops",
                "Frames read from the twin and lost.",
                &l,
                c.inject_drops,
            );
        }
        let path = &self.path_stats;
        m.counter(
            "punt_path_no_twin",
            "Punts for an interface without a twin.",
            &[],
            path.no_twin.get(),
        );
        m.counter(
            "punt_path_wakeups",
            "Wake-ups of the punt path thread.",
            &[],
            path.wakeups.get(),
        );
        m.counter(
            "punt_path_rests",
            "Breaks the real-time punt path thread took after 2 ms of work without one (a flood takes two thirds of its CPU at most).",
            &[],
            path.rests.get(),
        );
        m.counter(
            "punt_path_gathers",
            "Waits of 50 us the punt path thread took for a steady stream's frames to gather.",
            &[],
            path.gathers.get(),
        );
        m.counter(
            "port_admin_changes",
            "Ports set up or down after their twin.",
            &[],
            self.counters.port_admin,
        );
        m.counter(
            "port_admin_errors",
            "Port admin changes refused.",
            &[],
            self.counters.port_admin_errors,
        );
        self.learner.metrics("netlink", m);
        m.gauge(
            "netlink_rcvbuf_bytes",
            "Receive buffer of the netlink event socket.",
            &[],
            self.learner.rcvbuf() as f64,
        );
        if let Some(f) = &self.fpm {
            f.metrics(m);
        }
    }

    /// `show linux`.
    pub fn show(&self, ctl: &RouterControl) -> Value {
        let stats = ctl.worker_stats();
        // The punt policer's drops of a twin's interface, by class.
        let policed_by_class = |ix: u32| -> serde_json::Map<String, Value> {
            dataplane::router::PuntClass::ALL
                .iter()
                .map(|&c| {
                    let n: u64 = stats
                        .iter()
                        .filter_map(|s| s.ifaces.get(ix as usize))
                        .map(|i| i.punt_policed[c as usize].get())
                        .sum();
                    (c.name().to_string(), json!(n))
                })
                .collect()
        };
        let twins: Vec<Value> = self
            .twins
            .iter()
            .map(|t| {
                let c = t.counters.get();
                json!({
                    "interface": t.iface,
                    "ifindex": t.ifindex,
                    "twin": t.name,
                    "kernel_ifindex": t.kernel_ifindex,
                    "carrier": t.carrier,
                    "policed": policed_by_class(t.ifindex),
                    "admin": t.admin,
                    "reattached": t.reattached,
                    "punt_pkts": c.punt_pkts,
                    "punt_bytes": c.punt_bytes,
                    "punt_errors": c.punt_errors,
                    "inject_pkts": c.inject_pkts,
                    "inject_bytes": c.inject_bytes,
                    "inject_drops": c.inject_drops,
                })
            })
            .collect();
        let mut punted = serde_json::Map::new();
        let path = &self.path_stats;
        for r in PuntReason::ALL {
            punted.insert(r.name().into(), json!(path.punted[r as usize].get()));
        }
        let stats = ctl.worker_stats();
        let policed = |d: dataplane::router::DropReason| -> u64 {
            stats.iter().map(|s| s.drops[d as usize].get()).sum()
        };
        json!({
            "netns": self.netns.name(),
            "netns_created": self.created_netns,
            "keep_twins": self.keeper,
            "twins": twins,
            "punted": punted,
            "punt_no_twin": path.no_twin.get(),
            "punt_wakeups": path.wakeups.get(),
            "punt_rests": path.rests.get(),
            "punt_gathers": path.gathers.get(),
            "punt_scheduling": path.scheduling.get(),
            "worker_wakes": ctl.workers().iter().map(|h| h.wake.wakes()).sum::<u64>(),
            "sessions": self.sessions.show(),
            "resolve6": self.counters.resolve6,
            "resolve6_errors": self.counters.resolve6_errors,
            "port_admin": self.counters.port_admin,
            "port_admin_errors": self.counters.port_admin_errors,
            "last_port_admin_error": self.counters.last_port_admin_error,
            "policer": {
                "control_pps": self.section.punt_control_pps,
                "other_pps": self.section.punt_other_pps,
                "policed_control": policed(dataplane::router::DropReason::PuntPolicedControl),
                "policed_other": policed(dataplane::router::DropReason::PuntPolicedOther),
            },
            "netlink": self.learner.show(),
            "kernel_routes": ctl.route_count_of(dataplane::router::RouteSource::Kernel),
        })
    }
}

/// The interfaces that get twins: the section's list, or all of them; every
/// name the section uses must be an interface.
fn wanted_interfaces(
    section: &LinuxSection,
    ctl: &RouterControl,
) -> Result<Vec<dataplane::router::Interface>, LinuxError> {
    let ifaces = ctl.ifaces();
    let wanted: Vec<_> = match &section.interfaces {
        Some(names) => {
            let mut v = Vec::new();
            for n in names {
                let i = ctl
                    .iface_by_name(n)
                    .map_err(|_| LinuxError::UnknownInterface {
                        key: "interfaces",
                        name: n.clone(),
                    })?;
                v.push(i.clone());
            }
            v
        }
        None => ifaces.iter().cloned().collect(),
    };
    for n in section.names.keys() {
        if ctl.iface_by_name(n).is_err() {
            return Err(LinuxError::UnknownInterface {
                key: "names",
                name: n.clone(),
            });
        }
    }
    Ok(wanted)
}

/// What the namespace opens for a control plane: the twins (device, kernel
/// ifindex, whether it existed), the event and dump sockets, FPM's listener and
/// sock_diag.
type Made = (
    Vec<(SyncDevice, u32, bool)>,
    NlSocket,
    NlSocket,
    Option<std::net::TcpListener>,
    Option<diag::SockDiag>,
);

/// Opens, inside the namespace, what [`Made`] holds.
fn open_in_netns(
    section: &LinuxSection,
    fpm: Option<&fpm::FpmSection>,
    wanted: &[dataplane::router::Interface],
) -> io::Result<Made> {
    let rcvbuf = section.netlink_rcvbuf;
    let mut devs = Vec::new();
    for i in wanted {
        let name = section.names.get(&i.name).unwrap_or(&i.name);
        // Multi-queue, so that a keeper can hold a queue of its own.
        let b = DeviceBuilder::new()
            .name(name)
            .layer(Layer::L2)
            .multi_queue(true)
            .mac_addr(i.mac);
        let exists = keeper::interface_exists(name);
        let dev = if exists {
            b.build_sync().map_err(|e| {
                io::Error::other(format!(
                    "{name} exists and is not a twin to attach to ({e}); \
                 delete it or name the twin otherwise ([linux] names)"
                ))
            })?
        } else {
            b.mtu(i.mtu)
                .tx_queue_len(TAP_QUEUE_LEN)
                .enable(i.up)
                .build_sync()
                .map_err(|e| io::Error::other(format!("TAP {name}: {e}")))?
        };
        dev.set_nonblocking(true)?;
        let ix = dev.if_index()?;
        devs.push((dev, ix, exists));
    }
    let events = NlSocket::open(true, rcvbuf)?;
    let dump = NlSocket::open(false, 0)?;
    let listener = match fpm {
        Some(f) => Some(
            std::net::TcpListener::bind((f.address.as_str(), f.port))
                .map_err(|e| io::Error::other(format!("FPM {}:{}: {e}", f.address, f.port)))?,
        ),
        None => None,
    };
    // (without sock_diag the policer knows no sessions)
    let diag = diag::SockDiag::open().ok();
    Ok((devs, events, dump, listener, diag))
}

/// Hands the twins to the namespace's keeper (when asked to keep them) and says
/// who holds them.
fn hand_to_keeper(
    section: &LinuxSection,
    twins: &[Twin],
    keeper_exe: Option<&std::path::Path>,
) -> String {
    match keeper_exe {
        Some(exe) if section.keep_twins => {
            let names: Vec<String> = twins.iter().map(|t| t.name.clone()).collect();
            match keeper::netns_ino(&section.netns)
                .and_then(|ino| keeper::hold(&section.netns, ino, &names, exe))
            {
                Ok(keeper::Held::Asked) => "running keeper".to_string(),
                Ok(keeper::Held::Started(pid)) => format!("keeper pid {pid}"),
                Err(e) => {
                    tracing::warn!("linux: the twins end with this process: {e}");
                    format!("none ({e})")
                }
            }
        }
        _ => "none".to_string(),
    }
}
